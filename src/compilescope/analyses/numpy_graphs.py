"""NumPy code Dynamo traced into graphs: the lines whose NumPy calls became graph nodes, and np.random among them.

Dynamo runs NumPy code on tensors through torch._numpy and puts each call in the graph as a wrapper it names
`wrapped_<name>` (torch/_dynamo/utils.py: numpy_to_tensor_wrapper for functions, numpy_method_wrapper for ndarray
methods, numpy_operator_wrapper for operators), which the graph dump shows as `torch__dynamo_utils_wrapped_sin(a)`.
np.random's functions go the same way into torch._numpy.random, which draws from torch's generator while
torch._dynamo.config.use_numpy_random_stream is False (its default): np.random.seed does not govern those numbers.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..lazy_regex import lazy_compile
from ..model.ids import compilation_key
from ..model.records import dataclass
from ..model.trace import Trace
from .fx_sites import FX_SOURCE_COMMENT, GRAPH_ARTIFACT
from .user_locations import UserLocation

# `wrapped_sin: "f32[5][1]cpu" = torch__dynamo_utils_wrapped_sin(a)`; a second call of one name is `..._add_1(`.
_WRAPPED_CALL = lazy_compile(r"=\s*torch__dynamo_utils_wrapped_(?P<name>\w{1,200}?)(?:_\d{1,6})?\(")
# The same wrapper as an FX target (`torch__dynamo_utils_wrapped_add_1`: FX numbers a second wrapper of one name).
_WRAPPED_TARGET = lazy_compile(r"torch__dynamo_utils_wrapped_(?P<name>\w{1,200}?)(?:_\d{1,6})?")
# torch._numpy.random's functions (its __all__ in torch 2.13), which replace np.random's in a graph.
NUMPY_RANDOM = frozenset(("seed", "random_sample", "sample", "random", "rand", "randn", "normal", "choice", "randint",
                          "shuffle", "uniform"))
RANDOM_NOTE = ("Dynamo traced np.random into the graph with torch's generator, not NumPy's "
               "(torch._dynamo.config.use_numpy_random_stream is False by default): np.random.seed does not set these "
               "numbers, and the compiled code draws other numbers than the same code run eagerly. To keep NumPy's "
               "numbers, set torch._dynamo.config.use_numpy_random_stream = True (the call then breaks the graph and "
               "runs in NumPy); or draw with torch (torch.rand) and seed with torch.manual_seed.")


def numpy_target(target: str) -> str | None:
    """An FX target that is NumPy code Dynamo traced, in the user's words: `torch__dynamo_utils_wrapped_rand` is
    "np.random.rand (NumPy, in the graph through torch._numpy)", `torch__dynamo_utils_wrapped_add_1` "NumPy add (...)"
    (a function, method or operator: the wrapper's name alone does not say which); None for any other target."""
    m = _WRAPPED_TARGET.fullmatch(target)
    if m is None:
        return None
    name = m["name"]
    return f"{f'np.random.{name}' if name in NUMPY_RANDOM else f'NumPy {name}'} (NumPy, in the graph through torch._numpy)"


@dataclass
class NumpyLine:
    """A line of code whose NumPy calls Dynamo traced into graphs."""

    location: UserLocation
    calls: list[str] = field(default_factory=list)  # NumPy functions, methods and operators, as Dynamo names them
    compile_ids: list[str] = field(default_factory=list)

    @property
    def random(self) -> list[str]:
        """Its np.random calls ("rand"): drawn from torch's generator in the graph."""
        return [c for c in self.calls if c in NUMPY_RANDOM]

    def to_json(self) -> dict[str, Any]:
        return {"location": self.location.to_json(), "calls": self.calls, "compile_ids": self.compile_ids,
                "random": self.random}


@dataclass
class NumpyInGraphs:
    """The lines whose NumPy code is in a graph, in the order the log first shows them."""

    lines: list[NumpyLine] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.lines)

    @property
    def random_lines(self) -> list[NumpyLine]:
        return [line for line in self.lines if line.random]

    @property
    def random_note(self) -> str | None:
        return RANDOM_NOTE if self.random_lines else None

    def to_json(self) -> dict[str, Any]:
        return {"lines": [line.to_json() for line in self.lines], "random_note": self.random_note}


def numpy_in_graphs(trace: Trace) -> NumpyInGraphs:
    by_line: dict[tuple[str, int], NumpyLine] = {}
    for entry in trace.sorted_compiles():
        graph = next((a for a in entry.artifacts if a.name == GRAPH_ARTIFACT and a.payload is not None), None)
        if graph is None or entry.compile_id is None:
            continue
        text = trace.payload_text(graph.payload)
        if "torch__dynamo_utils_wrapped_" not in text:
            continue
        key = compilation_key(entry.compile_id)
        site: UserLocation | None = None
        for raw in text.splitlines():
            m = FX_SOURCE_COMMENT.match(raw)  # `# File: /path/x.py:48 in np_features, code: feats = np.sin(a) + ...`
            if m is not None:
                site = UserLocation(m["file"], int(m["line"]), m["function"].strip(), (m["code"] or "").strip() or None)
                continue
            call = _WRAPPED_CALL.search(raw)
            if call is None or site is None:
                continue
            line = by_line.setdefault(site.key, NumpyLine(site))
            if call["name"] not in line.calls:
                line.calls.append(call["name"])
            if key not in line.compile_ids:
                line.compile_ids.append(key)
    return NumpyInGraphs(list(by_line.values()))

"""Freezing (torch._inductor.config.freezing): what it did to a compile's graph, from the graphs torch logged.

With freezing on, Inductor folds the parameters into the graph as constants: the AOT graph still takes them as
inputs (`arg2_1: "f32[128, 512]..."  # ParamAOTInput(target='L__self___fc1_weight')`), the post-grad graph takes only
the user's inputs and reads each as `self._frozen_paramN`. Its passes then lay some weights out ahead of time for
the CPU libraries (mkldnn_fusion.py): a linear's weight packed for MKL (`_mkl_reorder_linear_weight`, logged with a
made-up size, 1459233x1) and called as `torch.ops.mkl._mkl_linear`, a convolution's reordered for oneDNN
(`_reorder_convolution_weight`). What it costs: the FX graph cache refuses a frozen graph ("Cannot cache a graph with
freezing enabled"), so every process compiles it from scratch; and the weights are constants of the compiled code.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..lazy_regex import lazy_compile
from ..model.records import dataclass
from ..model.trace import Trace
from .fx_sites import AOT_FORWARD, POST_GRAD, FxNodeSite, fx_node_sites
from .user_locations import UserLocation

# `_mkl_reorder_linear_weight_2: "f32[1459233, 1][1, 0]cpu" = self._frozen_param14`
_CONSTANT = lazy_compile(r"^\s+(?P<name>[A-Za-z_]\w*)(?:\s*:\s*\"[^\"]*\")?\s*=\s*self\.(?P<param>_frozen_param\d+)\s*$")
# `def forward(self, arg8_1: "f32[32, 3, 8, 8][192, 64, 8, 1]cpu"):` (one line), or the signature over lines (the AOT
# graph's, an input a line with its `# ParamAOTInput(...)`) up to the line of its `):`
_SIGNATURE, _SIGNATURE_END = "def forward(", "):"
_ARG = lazy_compile(r"\b(?P<name>[A-Za-z_]\w*)\s*:\s*\"")
_PARAM_INPUT = lazy_compile(r"ParamAOTInput\(target='(?P<target>[^']+)'\)")
# The weights freezing's passes lay out for a CPU library, by the node name torch gives the constant (a `_N` suffix
# numbers several): what was done to it, as the finding says it.
PACKINGS = {
    "_mkl_reorder_linear_weight": "linear weight packed for MKL",
    "_reorder_linear_weight": "linear weight reordered for oneDNN",
    "_reorder_convolution_weight": "convolution weight reordered for oneDNN",
    "_reorder_convolution_transpose_weight": "transposed convolution weight reordered for oneDNN",
}
_NUMBERED = lazy_compile(r"_\d+$")
_WORD = lazy_compile(r"\w+")  # (a constant is taken where a call's arguments hold its name as a whole word)
_OP_CALL = lazy_compile(r"\s*torch\.ops\.(?P<op>[\w.]+?)(?:\.default)?\(")


@dataclass
class PackedWeight:
    """A weight freezing laid out for a CPU library, and the user's line whose op takes it."""

    constant: str  # the node torch named it (`_mkl_reorder_linear_weight_2`)
    how: str  # PACKINGS' words
    op: str | None  # the op taking it, as the graph calls it (`mkl._mkl_linear`)
    site: UserLocation | None

    def to_json(self) -> dict[str, Any]:
        return {"constant": self.constant, "how": self.how, "op": self.op,
                "site": self.site.to_json() if self.site else None}


@dataclass
class FrozenCompile:
    """One compile whose graph freezing changed."""

    compile_id: str
    inputs: list[str]  # what the post-grad graph still takes (`arg8_1`)
    folded: int  # graph inputs that became constants: the AOT graph's inputs the post-grad graph no longer takes
    parameters: list[str]  # of those, the parameters the AOT graph names (`L__self___fc1_weight`), where it does
    constants: int  # `self._frozen_paramN` the post-grad graph reads
    packed: list[PackedWeight] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "inputs": self.inputs, "folded": self.folded,
                "parameters": self.parameters, "constants": self.constants,
                "packed": [p.to_json() for p in self.packed]}


@dataclass
class Freezing:
    """The compiles freezing folded parameters of, in the order they ran."""

    compiles: list[FrozenCompile] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.compiles)

    def to_json(self) -> dict[str, Any]:
        return {"compiles": [c.to_json() for c in self.compiles]}


def freezing(trace: Trace) -> Freezing:
    result = Freezing()
    for entry in trace.sorted_compiles():
        post_grad = next((a for name in POST_GRAD for a in entry.artifacts if a.name == name), None)
        if post_grad is None or entry.compile_id is None:
            continue
        text = trace.payload_text(post_grad.payload)
        if "self._frozen_param" not in text:  # (most graphs: not frozen, and no line to match)
            continue
        constants = {m["name"]: m["param"] for line in text.splitlines() if (m := _CONSTANT.match(line))}
        if not constants:
            continue
        inputs = _inputs(text)
        aot = next((a for name in AOT_FORWARD for a in entry.artifacts if a.name == name), None)
        aot_text = trace.payload_text(aot.payload) if aot is not None else ""
        aot_inputs = _inputs(aot_text)
        gone = [name for name in aot_inputs if name not in inputs]
        parameters = [m["target"] for line in _signature(aot_text).splitlines()
                      if (m := _PARAM_INPUT.search(line)) and (a := _ARG.search(line)) and a["name"] in gone]
        result.compiles.append(FrozenCompile(entry.key, inputs, len(gone), parameters, len(set(constants.values())),
                                             _packed(text, constants)))
    return result


def _signature(graph_text: str) -> str:
    """What the first `def forward(` takes, up to its `):` ('' where none closes it): found, not matched by a pattern
    (one trying each `def forward(` to the end of a graph that never closes one took quadratic time)."""
    start = graph_text.find(_SIGNATURE)
    if start < 0:
        return ""
    start += len(_SIGNATURE)
    end = graph_text.find(_SIGNATURE_END, start)
    return graph_text[start:end] if end >= 0 else ""


def _inputs(graph_text: str) -> list[str]:
    """The names a graph dump's forward takes, in order (self left out)."""
    return [m["name"] for m in _ARG.finditer(_signature(graph_text))]


def _packed(graph_text: str, constants: dict[str, str]) -> list[PackedWeight]:
    """The constants named as a CPU library's layout, each with the op that first takes it and the `# File:` line
    above: one pass over the graph's calls, each word of a call looked up among those constants."""
    packed = {name: how for name in constants if (how := PACKINGS.get(_NUMBERED.sub("", name))) is not None}
    if not packed:
        return []
    site_of: dict[str, FxNodeSite] = {node: site for site in fx_node_sites(graph_text) for node in site.nodes}
    taken: dict[str, tuple[str | None, UserLocation | None]] = {}  # constant -> the op first taking it, its line
    for line in graph_text.splitlines():
        node, eq, call = line.partition(" = ")
        if not eq:
            continue
        words = [w for w in _WORD.findall(call.split(";", 1)[0]) if w in packed and w not in taken]
        if not words:
            continue
        called = _OP_CALL.match(call)
        where = site_of.get(node.strip().split(":", 1)[0])
        site = UserLocation(where.path, where.line, where.function, where.code) if where is not None else None
        for word in words:
            taken[word] = (called["op"] if called else None, site)
    return [PackedWeight(name, how, *taken.get(name, (None, None))) for name, how in packed.items()]

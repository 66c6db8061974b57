"""The user's own Triton kernels in compiled code: a ``@triton.jit`` function launched inside a compiled function
(raw, or through ``torch.library.triton_op``/``wrap_triton``), which Dynamo traces as a
``triton_kernel_wrapper_mutation`` node and Inductor emits, as written, beside the kernels it generates.

Inductor's output code names such a kernel apart from its own (torch/_inductor/codegen/wrapper.py,
``define_user_defined_triton_kernel``)::

    # Original path: /path/prog.py:20
    scaled_add_kernel_0 = async_compile.triton('scaled_add_kernel', '''
    ...
    @triton_heuristics.user_autotune(
        configs=[...], inductor_meta={...}, triton_meta={'signature': {'x_ptr': '*fp32', 'n': 'i32', ...}, ...},
        filename=__file__,
        custom_kernel=True,
    )

``Original path`` is the line its definition starts at (``inspect.getsourcelines``: its first decorator, not its
``def``, which the user knows it by); the body quotes the ``def`` line (Triton keeps the source from it on), so where the
file on this machine holds that line after those decorators, the kernel is said at its ``def``. Each call
``scaled_add_kernel_0.run(buf1, arg1_1, buf0, 4096, 0.5, 4, 1, 1, ...)`` passes the scalar arguments as this compile
has them: ``4096`` where the compile specialised the size, ``s77`` where it is symbolic (a dynamic recompile). The
``triton_kernel_info`` artifact (torch/_inductor/async_compile.py) logs, per kernel name, its compile time and
whether it autotuned (``only 1 config``). Where it was launched from is the ``# File:`` comment FX writes above the
``triton_kernel_wrapper_*`` node of the post-grad graph that torch's node mappings tie to the call (the stack traces
torch logs for the call also list the lines of the nodes fused before it, which are not the launch).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import field
from typing import Any

import orjson

from ..lazy_regex import lazy_compile
from ..model.records import NamedTuple, dataclass
from ..model.source_files import NO_FILES, SourceFiles
from ..model.trace import Compile, Trace
from .fx_sites import FX_NODE, FX_SOURCE_COMMENT, GRAPH_ARTIFACT, NODE_MAPPINGS, POST_GRAD
from .user_locations import UserLocation

OUTPUT_CODE = "inductor_output_code"
KERNEL_INFO = "triton_kernel_info"
CUSTOM_KERNEL = "custom_kernel=True"  # what marks a user's kernel in the output code (its heuristics' argument)

# A kernel's definition in the output code: "# Original path: <file>:<line>" (not always), the opener line, the body,
# and the line that closes it. Found by string search, the openers line by line and one find of the closer per opener:
# the code is the log's, and a pattern spanning the body backtracked over every opener left unclosed (quadratic).
_OPENER_MARK = " = async_compile.triton('"
_OPENER = lazy_compile(r"(?P<var>\w+) = async_compile\.triton\('(?P<name>\w+)', '''")
_CLOSER = "\n''', "
_ORIGINAL_PATH = lazy_compile(r"# Original path: (?P<file>.*):(?P<line>\d{1,9})")
_DEBUG_HANDLE = lazy_compile(r"# \[Provenance debug handles\] (?P<var>\w+):(?P<handle>\d+)")
_RUN = lazy_compile(r"^[ \t]*(?P<var>\w+)\.run\((?P<args>.*)\)[ \t\r]*$", re.M)
_SIGNATURE = lazy_compile(r"'signature': \{(?P<items>[^}]*)\}")
_SIGNATURE_ITEM = lazy_compile(r"'(?P<arg>\w+)': '(?P<type>[^']*)'")
_NUMBER = lazy_compile(r"^-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan|True|False|None)$")
_SIZE_SYMBOL = lazy_compile(r"\b[suq]\d+\b")  # s77, u0: the shape environment's symbols
_OPS_CALL = lazy_compile(r"torch\.ops\.[\w.]+(?=\()")


# The file as the user's program holds it: a kernel's def line is read from it, where ingest read it (files: a regular
# file of at most _MAX_SOURCE_BYTES only).
_MAX_SOURCE_BYTES = 8 * 1024 * 1024
_DECORATED_LINES = 200  # a def further from its first decorator than this is not looked for


def def_line(path: str, decorator_line: int, def_text: str, files: SourceFiles = NO_FILES) -> int | None:
    """The line of the kernel's ``def`` in the file on this machine (files: as ingest read them), where it holds the
    run's kernel: a decorator at decorator_line (torch's ``Original path``), then, after decorators only, def_text (the
    body's ``def`` line). None where the file is not here, is no regular file or too big, or differs from the run."""
    if not path.endswith(".py") or decorator_line <= 0:
        return None
    lines = files.lines(path, _MAX_SOURCE_BYTES) or ()
    if decorator_line > len(lines) or not lines[decorator_line - 1].lstrip().startswith("@"):
        return None
    for number in range(decorator_line + 1, min(len(lines), decorator_line + _DECORATED_LINES) + 1):
        text = lines[number - 1].strip()
        if text == def_text:
            return number
        if re.match(r"(?:async\s+)?def\s|class\s", text):
            return None  # another definition first: the file is not the run's
    return None


class KernelDefinition(NamedTuple):
    """A user kernel the output code defines (definitions), with its calls there. (Not saved: no dataclass.)"""

    var: str  # Inductor's variable for it: "scaled_add_kernel_0"
    name: str  # the @triton.jit function's: "scaled_add_kernel"
    file: str | None  # torch's "Original path" (None where the code does not say)
    line: int | None  # its line there: the kernel's first decorator
    body: str  # the code between the opener and the closer: its heuristics, then its source from the def on
    calls: list[str]  # by debug handle, as the node mappings name them: "scaled_add_kernel_0:2"
    first_call: str | None  # the arguments of its first ``.run(...)``: "buf1, arg1_1, buf0, 4096, 0.5, ..."


def definitions(code: str) -> list[KernelDefinition]:
    """The user kernels (CUSTOM_KERNEL) the output code defines, in its order, each with its calls: one pass over the
    code for the definitions and one for the calls, however many kernels it holds."""
    found: list[tuple[str, str, str | None, int | None, str]] = []
    at = 0
    while (hit := code.find(_OPENER_MARK, at)) != -1:
        start = code.rfind("\n", 0, hit) + 1
        end = code.find("\n", hit)
        if end == -1:
            break  # the last line: no body follows it
        opener = _OPENER.fullmatch(code, start, end) if start >= at else None
        if opener is None:  # an opener is a whole line (not the one that closed the last kernel): on to the next line
            at = end + 1
            continue
        close = code.find(_CLOSER, end)
        if close == -1:
            break  # unclosed: so is every opener after it
        body = code[end + 1:close + 1]
        if CUSTOM_KERNEL in body:
            above = code[code.rfind("\n", 0, start - 1) + 1:start - 1] if start else ""
            path = _ORIGINAL_PATH.fullmatch(above)
            found.append((opener["var"], opener["name"], path["file"] if path else None,
                          int(path["line"]) if path else None, body))
        at = close + len(_CLOSER)
    if not found:
        return []
    calls: dict[str, list[str]] = {var: [] for var, *_ in found}
    first_call: dict[str, str] = {}
    for m in _DEBUG_HANDLE.finditer(code):
        if m["var"] in calls:
            calls[m["var"]].append(f"{m['var']}:{m['handle']}")
    for m in _RUN.finditer(code):
        if m["var"] in calls:
            first_call.setdefault(m["var"], m["args"])
    return [KernelDefinition(*defined, list(calls[defined[0]]), first_call.get(defined[0])) for defined in found]


def definition(d: KernelDefinition, files: SourceFiles = NO_FILES) -> tuple[UserLocation | None, int | None]:
    """Where a kernel the output code defines (definitions) is defined, as the user sees it: its def line, with the
    line's text, where the file on this machine agrees with the run (def_line); else torch's line, its first
    decorator. And torch's line (None where the code does not say)."""
    if not d.file or d.line is None:
        return None, None
    said = re.search(rf"^[ \t]*(?:async\s+)?def\s+{re.escape(d.name)}\s*\(.*$", d.body, re.M)
    found = def_line(d.file, d.line, said[0].strip(), files) if said else None
    if found is None or said is None:
        return UserLocation(d.file, d.line), d.line
    return UserLocation(d.file, found, d.name, said[0].strip()), d.line


def definition_text(location: UserLocation | None, decorator_line: int | None) -> str:
    """"prog.py:21" (its def), or "prog.py:20 (its decorator line)" where only torch's line is known."""
    if location is None:
        return ""
    return location.short + (" (its decorator line)" if location.line == decorator_line else "")


@dataclass
class ScalarArgument:
    """A scalar argument of the kernel (not a pointer, not a constexpr) as one call passes it."""

    name: str  # the kernel's parameter: "n"
    value: str  # as the output code passes it: "4096", "s77", "0.5"
    symbolic: bool  # a size symbol of the compile (dynamic), not a number baked into the code

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "symbolic": self.symbolic}


@dataclass
class UserKernel:
    """One user Triton kernel as one compile id's code defines and calls it."""

    compile_id: str  # "[0/1]"
    name: str  # the @triton.jit function's name: "scaled_add_kernel"
    code_name: str  # Inductor's variable for it in the output code: "scaled_add_kernel_0"
    defined_at: UserLocation | None  # its def line where the source is here and agrees (definition); else decorator_line
    decorator_line: int | None = None  # torch's "Original path" line: its first decorator (inspect.getsourcelines)
    launched_at: list[UserLocation] = field(default_factory=list)  # the lines whose launch traced it into the graph
    calls: list[str] = field(default_factory=list)  # its calls as torch's node mappings name them: "scaled_add_kernel_0:2"
    arguments: list[ScalarArgument] = field(default_factory=list)  # its first call's scalar arguments
    compile_s: float | None = None  # Triton's compile of it (triton_kernel_info); None: not logged
    autotune: str | None = None  # triton_kernel_info's autotune_cache_state: "only 1 config", "miss", "hit"
    configs: int | None = None  # the configs it benchmarked (autotuned), where it had several
    # How its launch entered the Dynamo graph, as the graph calls it at launched_at: traced as it is
    # ("torch.ops.higher_order.triton_kernel_wrapper_mutation") or a custom op's call ("torch.ops.mylib.scaled_add.default")
    launch_call: str | None = None
    source_md5: str | None = None  # of its code as compiled, from its def on: the same kernel in two runs or not

    @property
    def defined_text(self) -> str:
        """"prog.py:21", its def; "prog.py:20 (its decorator line)" where the source is not known."""
        return definition_text(self.defined_at, self.decorator_line)

    @property
    def symbolic(self) -> list[ScalarArgument]:
        return [a for a in self.arguments if a.symbolic]

    @property
    def specialized(self) -> list[ScalarArgument]:
        """Integer arguments compiled in as numbers: a size this compile took as static."""
        return [a for a in self.arguments if not a.symbolic and re.fullmatch(r"-?\d+", a.value)]

    @property
    def autotuned(self) -> bool:
        return self.autotune is not None and self.autotune != "only 1 config"

    @property
    def arguments_text(self) -> str:
        """"n = 4096 (compiled in), alpha = 0.5": a size compiled in as a number holds for that size only."""
        return ", ".join(f"{a.name} = {a.value}" + (" (symbolic)" if a.symbolic else " (compiled in)" if a in self.specialized
                                                    else "") for a in self.arguments)

    @property
    def tuning_text(self) -> str:
        """How Triton compiled it: "1 config, not autotuned", "autotuned: 4 configs benchmarked"."""
        if self.autotune is None:
            return ""
        if not self.autotuned:
            return "1 config, not autotuned"
        return (f"autotuned: {self.configs} configs benchmarked" if self.configs else "autotuned") + (
            f" (autotune cache {self.autotune})" if self.autotune in ("hit", "miss") else "")

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "name": self.name, "code_name": self.code_name,
                "defined_at": self.defined_at.to_json() if self.defined_at else None, "decorator_line": self.decorator_line,
                "launched_at": [u.to_json() for u in self.launched_at], "calls": self.calls,
                "arguments": [a.to_json() for a in self.arguments], "compile_s": self.compile_s,
                "autotune": self.autotune, "configs": self.configs, "launch_call": self.launch_call,
                "source_md5": self.source_md5}


def launch_words(call: str | None) -> str:
    """How a kernel's launch entered the graph (UserKernel.launch_call) in words: "traced into the graph as
    triton_kernel_wrapper_mutation", "through the custom op mylib::scaled_add"; "" where the log does not say."""
    if not call:
        return ""
    if call.startswith("torch.ops.higher_order."):
        return f"traced into the graph as {call.rpartition('.')[2]}"
    parts = call.split(".")  # torch.ops.<namespace>.<op>.<overload>
    return f"through the custom op {parts[2]}::{parts[3]}" if len(parts) >= 4 else f"through {call}"


@dataclass
class UserKernels:
    """The user's own Triton kernels launched inside compiled functions (raw, or through triton_op or wrap_triton)."""

    kernels: list[UserKernel] = field(default_factory=list)  # in compile order, then the code's

    def __bool__(self) -> bool:
        return bool(self.kernels)

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys(k.name for k in self.kernels))

    def of(self, compile_id: str) -> list[UserKernel]:
        return [k for k in self.kernels if k.compile_id == compile_id]

    @property
    def notes(self) -> list[str]:
        """Per kernel compiled more than once: how often, in which compile ids (a compile whose code defines it twice
        said so), and which compiles took a size as symbolic."""
        out = []
        for name in self.names:
            compiled = [k for k in self.kernels if k.name == name]
            if len(compiled) < 2:
                continue
            ids: dict[str, list[str]] = {}  # compile id -> its code's variables for the kernel
            for k in compiled:
                ids.setdefault(k.compile_id, []).append(k.code_name)
            fixed = list(dict.fromkeys(k.compile_id for k in compiled if k.specialized and not k.symbolic))
            dynamic = [k for k in compiled if k.symbolic]
            fixed_at = next(k for k in compiled if k.specialized and not k.symbolic) if fixed else None
            text = f"{name} was compiled {len(compiled)} times"
            if len(ids) == len(compiled):
                text += ", once in each compile id"
            elif len(ids) == 1:
                ((compile_id, names),) = ids.items()
                text += f", all in compile id {compile_id} (as {', '.join(names)})"
            else:
                text += f" in {len(ids)} compile ids, " + ", ".join(
                    f"{_times(len(names))} in {compile_id} (as {', '.join(names)})"
                    for compile_id, names in ids.items() if len(names) > 1)
            if fixed_at is not None and dynamic:
                text += (f": {', '.join(fixed)} with "
                         f"{', '.join(f'{a.name} = {a.value}' for a in fixed_at.specialized)} compiled in, "
                         f"{', '.join(dict.fromkeys(k.compile_id for k in dynamic))} with "
                         f"{', '.join(a.name for a in dynamic[0].symbolic)} symbolic (any size runs it without compiling again)")
            out.append(text + ".")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"kernels": [k.to_json() for k in self.kernels]}


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def _split_arguments(text: str) -> list[str]:
    """A call's arguments, split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _scalar_arguments(body: str, call: str) -> list[ScalarArgument]:
    signature = _SIGNATURE.search(body)
    if signature is None:
        return []
    params = [(m["arg"], m["type"]) for m in _SIGNATURE_ITEM.finditer(signature["items"]) if m["type"] != "constexpr"]
    passed = [a for a in _split_arguments(call) if "=" not in a.split("(")[0]]  # (stream=stream0 is no parameter)
    return [ScalarArgument(name, value, not _NUMBER.match(value) and bool(_SIZE_SYMBOL.search(value)))
            for (name, kind), value in zip(params, passed) if not kind.startswith("*")]


def _artifact_text(trace: Trace, entry: Compile, prefixes: tuple[str, ...]) -> list[str]:
    return [trace.payload_text(a.payload) for a in entry.artifacts
            if a.payload is not None and a.name.startswith(prefixes)]


def _json_objects(trace: Trace, entry: Compile, prefix: str) -> list[dict]:
    """The compile's artifacts of that name that hold a JSON object (one that does not is torch's or a cut log's)."""
    found = []
    for text in _artifact_text(trace, entry, (prefix,)):
        try:
            loaded = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue
        if isinstance(loaded, dict):
            found.append(loaded)
    return found


class LaunchSites:
    """Where the user launched each call of their kernels: the user lines FX's `# File:` comments give the post-grad
    graph's triton_kernel_wrapper_* nodes that torch's node mappings tie to the call (the user's launch, or their
    call of the triton_op that launches it). Read once per graph and mappings, for all the kernels' calls."""

    def __init__(self, node_mappings: dict, post_lines: list[str]) -> None:
        self._wrappers: dict[str, set[str]] = {}  # call -> its triton_kernel_wrapper_* nodes
        for key in ("pyCodeToPost", "cppCodeToPost"):
            found = node_mappings.get(key)
            for call, nodes in found.items() if isinstance(found, dict) else ():
                if isinstance(nodes, (list, tuple)):
                    self._wrappers.setdefault(call, set()).update(
                        n for n in nodes if isinstance(n, str) and n.startswith("triton_kernel_wrapper"))
        self._sources: dict[str, list[tuple[int, UserLocation]]] = {}  # wrapper node -> (its line, its source)
        if not any(self._wrappers.values()):
            return
        source = None
        for number, line in enumerate(post_lines):
            m = FX_SOURCE_COMMENT.match(line)
            if m:
                source = UserLocation(m["file"], int(m["line"]), m["function"].strip(), (m["code"] or "").strip() or None)
                continue
            node = FX_NODE.match(line) if "triton_kernel_wrapper" in line else None
            if node and source is not None:
                self._sources.setdefault(node["name"], []).append((number, source))

    def of(self, calls: list[str]) -> list[UserLocation]:
        """The launch sites of these calls, in the graph's order."""
        wrappers = {n for c in calls for n in self._wrappers.get(c, ())}
        sites: dict[tuple[str, int], UserLocation] = {}
        for _, source in sorted((at for n in wrappers for at in self._sources.get(n, ())), key=lambda at: at[0]):
            sites.setdefault(source.key, source)
        return list(sites.values())


def _graph_calls(graph: str) -> dict[tuple[str, int], list[tuple[int, str]]]:
    """A Dynamo graph's calls of torch.ops other than ATen's and prims', per user line (FX's `# File:` comment above
    them): (file, line) -> (the graph line, the call's target), in the graph's order."""
    found: dict[tuple[str, int], list[tuple[int, str]]] = {}
    here = None
    for number, line in enumerate(graph.split("\n")):
        m = FX_SOURCE_COMMENT.match(line)
        if m:
            here = (m["file"], int(m["line"]))
            continue
        node = FX_NODE.match(line) if here is not None and "torch.ops." in line else None
        call = _OPS_CALL.match(node["expr"]) if node else None
        if call and here is not None and not call[0].startswith(("torch.ops.aten.", "torch.ops.prims.")):
            found.setdefault(here, []).append((number, call[0]))
    return found


def launch_call(graph_calls: dict[tuple[str, int], list[tuple[int, str]]], sites: list[UserLocation]) -> str | None:
    """The call a Dynamo graph (_graph_calls) makes at a kernel's launch sites: its triton_kernel_wrapper_* node where
    Dynamo traced the launch, else a custom op's (not ATen's)."""
    found = [target for _, target in sorted(c for key in dict.fromkeys(u.key for u in sites)
                                            for c in graph_calls.get(key, ()))]
    return next((c for c in found if ".triton_kernel_wrapper" in c), found[0] if found else None)


def _defined_kernels(trace: Trace, entry: Compile) -> list[list[KernelDefinition]]:
    """The user kernels each output code of the compile defines, of those that define any."""
    # (only output code that marks a user kernel is decoded: most logs have none, and a payload can be 100 MB)
    return [kernels for a in entry.artifacts
            if a.payload is not None and a.name.startswith(OUTPUT_CODE)
            and trace.payload_contains(a.payload, CUSTOM_KERNEL.encode())
            and (kernels := definitions(trace.payload_text(a.payload)))]


def files_wanted(trace: Trace) -> list[str]:
    """The files user_kernels looks for its kernels' def lines in (def_line): for ingest to read."""
    return list(dict.fromkeys(d.file for entry in trace.compiles.values() if entry.compile_id is not None
                              for code in _defined_kernels(trace, entry) for d in code
                              if d.file and d.file.endswith(".py") and d.line is not None and d.line > 0))


def user_kernels(trace: Trace, files: SourceFiles = NO_FILES) -> UserKernels:
    """files: as ingest read them, with files_wanted (a kernel's def line is looked for there)."""
    found = UserKernels()
    for entry in trace.compiles.values():
        if entry.compile_id is None:
            continue
        codes = _defined_kernels(trace, entry)
        if not codes:
            continue
        info: dict[str, Any] = {}
        for loaded in _json_objects(trace, entry, KERNEL_INFO):
            info.update(loaded)
        # read once per compile, for all its kernels: the launch sites of each mapping and post-grad graph, the calls
        # of its last Dynamo graph
        mappings = _json_objects(trace, entry, NODE_MAPPINGS)
        sites = [LaunchSites(m, text.split("\n")) for text in _artifact_text(trace, entry, POST_GRAD) for m in mappings]
        graphs = _artifact_text(trace, entry, (GRAPH_ARTIFACT,))
        graph_calls = _graph_calls(graphs[-1]) if graphs else {}
        for defined in (d for code in codes for d in code):
            details = info.get(defined.name)
            details = details if isinstance(details, dict) else {}
            compile_us = details.get("compile_time_us")
            configs = details.get("num_configs")
            defined_at, decorator_line = definition(defined, files)
            launched_at = next((at for s in sites if (at := s.of(defined.calls))), [])
            source = re.search(rf"^[ \t]*(?:async\s+)?def\s+{re.escape(defined.name)}\s*\(", defined.body, re.M)
            found.kernels.append(UserKernel(
                compile_id=str(entry.compile_id), name=defined.name, code_name=defined.var,
                defined_at=defined_at, decorator_line=decorator_line,
                launched_at=launched_at, calls=list(defined.calls),
                arguments=_scalar_arguments(defined.body, defined.first_call) if defined.first_call is not None else [],
                compile_s=compile_us / 1e6 if isinstance(compile_us, (int, float)) else None,
                autotune=details.get("autotune_cache_state") if isinstance(details.get("autotune_cache_state"), str) else None,
                configs=configs if isinstance(configs, int) else None,
                launch_call=launch_call(graph_calls, launched_at) if launched_at else None,
                source_md5=hashlib.md5(defined.body[source.start():].strip().encode()).hexdigest() if source else None))
    return found


__all__ = ["ScalarArgument", "UserKernel", "UserKernels", "user_kernels"]

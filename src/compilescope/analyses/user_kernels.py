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

import functools
import hashlib
import os
import re
from dataclasses import field
from typing import Any, Iterator

import orjson

from ..model.records import dataclass
from ..model.trace import Compile, Trace
from .fx_sites import GRAPH_ARTIFACT
from .userloc import UserLocation

OUTPUT_CODE = "inductor_output_code"
KERNEL_INFO = "triton_kernel_info"
NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
POST_GRAD = ("after_post_grad_graph", "inductor_post_grad_graph")

_DEFINITION = re.compile(r"^(?:# Original path: (?P<file>[^\n]*):(?P<line>\d{1,9})\n)?"
                         r"(?P<var>\w+) = async_compile\.triton\('(?P<name>\w+)', '''\n(?P<body>.*?)^''', ",
                         re.M | re.S)
_SIGNATURE = re.compile(r"'signature': \{(?P<items>[^}]*)\}")
_SIGNATURE_ITEM = re.compile(r"'(?P<arg>\w+)': '(?P<type>[^']*)'")
_CUSTOM = "custom_kernel=True"
_NUMBER = re.compile(r"^-?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan|True|False|None)$")
_SIZE_SYMBOL = re.compile(r"\b[suq]\d+\b")  # s77, u0: the shape environment's symbols
_SOURCE_COMMENT = re.compile(r"^\s*# File: (?P<file>.*):(?P<line>\d{1,9}) in (?P<function>[^,\n]*)(?:, code: (?P<code>.*))?")
_NODE = re.compile(r"^\s*(?P<name>\w+)(?:: [^=]*)? = ")


# The file as the user's program holds it: a kernel's def line is read from it (kept per path, size and time).
_MAX_SOURCE_BYTES = 8 * 1024 * 1024
_DECORATED_LINES = 200  # a def further from its first decorator than this is not looked for


@functools.lru_cache(maxsize=64)
def _file_lines(path: str, size: int, mtime: float) -> tuple[str, ...]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return tuple(f.read().splitlines())


def def_line(path: str, decorator_line: int, def_text: str) -> int | None:
    """The line of the kernel's ``def`` in the file on this machine, where it holds the run's kernel: a decorator at
    decorator_line (torch's ``Original path``), then, after decorators only, def_text (the body's ``def`` line). None
    where the file is not here or differs from the run."""
    if not path.endswith(".py") or decorator_line <= 0:
        return None
    try:
        stat = os.stat(path)
        if not os.path.isfile(path) or stat.st_size > _MAX_SOURCE_BYTES:
            return None
        lines = _file_lines(path, stat.st_size, stat.st_mtime)
    except OSError:
        return None
    if decorator_line > len(lines) or not lines[decorator_line - 1].lstrip().startswith("@"):
        return None
    for number in range(decorator_line + 1, min(len(lines), decorator_line + _DECORATED_LINES) + 1):
        text = lines[number - 1].strip()
        if text == def_text:
            return number
        if re.match(r"(?:async\s+)?def\s|class\s", text):
            return None  # another definition first: the file is not the run's
    return None


def definition(m: re.Match[str]) -> tuple[UserLocation | None, int | None]:
    """Where a kernel the output code defines (definitions) is defined, as the user sees it: its def line, with the
    line's text, where the file on this machine agrees with the run (def_line); else torch's line, its first
    decorator. And torch's line (None where the code does not say)."""
    if not m["file"]:
        return None, None
    decorator = int(m["line"])
    said = re.search(rf"^[ \t]*(?:async\s+)?def\s+{re.escape(m['name'])}\s*\(.*$", m["body"], re.M)
    found = def_line(m["file"], decorator, said[0].strip()) if said else None
    if found is None:
        return UserLocation(m["file"], decorator), decorator
    return UserLocation(m["file"], found, m["name"], said[0].strip() if said else None), decorator


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
    def entered_text(self) -> str:
        """How its launch entered the graph: "traced into the graph as triton_kernel_wrapper_mutation", "through the
        custom op mylib::scaled_add"; "" where the log does not say."""
        return launch_words(self.launch_call)

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
    """A launch_call in words (UserKernel.entered_text)."""
    if not call:
        return ""
    if call.startswith("torch.ops.higher_order."):
        return f"traced into the graph as {call.rpartition('.')[2]}"
    parts = call.split(".")  # torch.ops.<namespace>.<op>.<overload>
    return f"through the custom op {parts[2]}::{parts[3]}" if len(parts) >= 4 else f"through {call}"


@dataclass
class UserKernels:
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
        """Per kernel compiled more than once: how often, and which compiles took a size as symbolic."""
        out = []
        for name in self.names:
            compiled = [k for k in self.kernels if k.name == name]
            if len(compiled) < 2:
                continue
            fixed = [k for k in compiled if k.specialized and not k.symbolic]
            dynamic = [k for k in compiled if k.symbolic]
            text = f"{name} was compiled {len(compiled)} times, once in each compile id"
            if fixed and dynamic:
                text += (f": {', '.join(k.compile_id for k in fixed)} with "
                         f"{', '.join(f'{a.name} = {a.value}' for a in fixed[0].specialized)} compiled in, "
                         f"{', '.join(k.compile_id for k in dynamic)} with {', '.join(a.name for a in dynamic[0].symbolic)} "
                         "symbolic (any size runs it without compiling again)")
            out.append(text + ".")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"kernels": [k.to_json() for k in self.kernels]}


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


def _launch_sites(trace: Trace, entry: Compile, calls: list[str]) -> list[UserLocation]:
    """The user lines of the triton_kernel_wrapper nodes torch's node mappings tie to these calls."""
    mappings = _json_objects(trace, entry, NODE_MAPPINGS)
    for text in _artifact_text(trace, entry, POST_GRAD):
        for m in mappings:
            sites = launch_sites(m, text.split("\n"), calls)
            if sites:
                return sites
    return []


def launch_sites(node_mappings: dict, post_lines: list[str], calls: list[str]) -> list[UserLocation]:
    """The user lines FX's `# File:` comments give the post-grad graph's triton_kernel_wrapper_* nodes that the node
    mappings tie to these calls: where the user launched the kernel (or called the triton_op that launches it)."""
    wrappers: set[str] = set()
    for key in ("pyCodeToPost", "cppCodeToPost"):
        found = node_mappings.get(key)
        if isinstance(found, dict):
            wrappers.update(n for c in calls for n in found.get(c) or () if isinstance(n, str)
                            and n.startswith("triton_kernel_wrapper"))
    sites: list[UserLocation] = []
    if not wrappers:
        return sites
    source = None
    for line in post_lines:
        m = _SOURCE_COMMENT.match(line)
        if m:
            source = UserLocation(m["file"], int(m["line"]), m["function"].strip(), (m["code"] or "").strip() or None)
            continue
        node = _NODE.match(line)
        if node and node["name"] in wrappers and source is not None and source.key not in {s.key for s in sites}:
            sites.append(source)
    return sites


_GRAPH_CALL = re.compile(r"^\s*\w+(?:: [^=\n]*)? = (?P<target>torch\.ops\.[\w.]+)\(")


def launch_call(graph: str, sites: list[UserLocation]) -> str | None:
    """The call a Dynamo graph makes at a kernel's launch sites (FX's `# File:` comment above it): its
    triton_kernel_wrapper_* node where Dynamo traced the launch, else a custom op's (not ATen's)."""
    keys = {u.key for u in sites}
    here = False
    found: list[str] = []
    for line in graph.split("\n"):
        m = _SOURCE_COMMENT.match(line)
        if m:
            here = (m["file"], int(m["line"])) in keys
            continue
        call = _GRAPH_CALL.match(line) if here else None
        if call and not call["target"].startswith(("torch.ops.aten.", "torch.ops.prims.")):
            found.append(call["target"])
    return next((c for c in found if ".triton_kernel_wrapper" in c), found[0] if found else None)


def definitions(code: str) -> Iterator[re.Match[str]]:
    """The user kernels the output code defines: groups var, name, file and line (None where not said), body."""
    return (m for m in _DEFINITION.finditer(code) if _CUSTOM in m["body"])


def debug_handle_calls(code: str, var: str) -> list[str]:
    """The calls of a kernel by debug handle, as the node mappings name them: ["scaled_add_kernel_0:2"]."""
    return [f"{var}:{h}" for h in re.findall(rf"# \[Provenance debug handles\] {re.escape(var)}:(\d+)", code)]


def user_kernels(trace: Trace) -> UserKernels:
    found = UserKernels()
    for entry in trace.compiles.values():
        if entry.compile_id is None:
            continue
        info: dict[str, Any] = {}
        for loaded in _json_objects(trace, entry, KERNEL_INFO):
            info.update(loaded)
        for code in _artifact_text(trace, entry, (OUTPUT_CODE,)):
            for m in definitions(code):
                var = m["var"]
                call = re.search(rf"^\s*{re.escape(var)}\.run\((?P<args>.*)\)\s*$", code, re.M)
                calls = debug_handle_calls(code, var)
                details = info.get(m["name"])
                details = details if isinstance(details, dict) else {}
                compile_us = details.get("compile_time_us")
                configs = details.get("num_configs")
                defined_at, decorator_line = definition(m)
                launched_at = _launch_sites(trace, entry, calls)
                graphs = _artifact_text(trace, entry, (GRAPH_ARTIFACT,))
                source = re.search(rf"^[ \t]*(?:async\s+)?def\s+{re.escape(m['name'])}\s*\(", m["body"], re.M)
                found.kernels.append(UserKernel(
                    compile_id=str(entry.compile_id), name=m["name"], code_name=var,
                    defined_at=defined_at, decorator_line=decorator_line,
                    launched_at=launched_at, calls=calls,
                    arguments=_scalar_arguments(m["body"], call["args"]) if call else [],
                    compile_s=compile_us / 1e6 if isinstance(compile_us, (int, float)) else None,
                    autotune=details.get("autotune_cache_state") if isinstance(details.get("autotune_cache_state"), str) else None,
                    configs=configs if isinstance(configs, int) else None,
                    launch_call=launch_call(graphs[-1], launched_at) if graphs and launched_at else None,
                    source_md5=hashlib.md5(m["body"][source.start():].strip().encode()).hexdigest() if source else None))
    return found


def short_place(location: UserLocation) -> str:
    return f"{os.path.basename(location.filename)}:{location.line}"


__all__ = ["ScalarArgument", "UserKernel", "UserKernels", "user_kernels"]

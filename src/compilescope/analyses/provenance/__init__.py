"""Inductor provenance: from a generated kernel back to graph nodes and the user's source line.

With ``INDUCTOR_PROVENANCE=1`` torch logs, per Inductor graph, the artifact
``inductor_provenance_tracking_node_mappings`` (node and kernel *names*: pre-grad
node -> post-grad nodes, kernel -> post-grad nodes, and back) and
``inductor_provenance_tracking_kernel_stack_traces`` (kernel -> user stack traces).
Here the names become *line numbers* in the three texts a reader looks at: the
graph Inductor received (pre-grad), the post-grad graph, and the generated code
(Python wrapper for JIT, C++ wrapper for AOTInductor).

The line numbers are those tlparse 0.4.3 computes with ``--inductor-provenance``
(``convert_node_mappings_to_line_numbers``), so the two tools can be diffed, with
two corrections where tlparse is wrong (see ``_debug_handle_split`` and
``code_lines``). On top of that:

- a compile id that ran Inductor twice (forward and backward of a training step)
  gets one section per graph instead of tlparse's mix of the last artifacts;
- a kernel the node mappings do not cover (torch 2.13 logs only ``{"version": 2.0}``
  for the backward) is mapped to post-grad nodes through the user source line its
  stack trace names, marked as *inferred*;
- a kernel a graph's stack traces list but its code does not call (torch 2.11 keeps
  the kernels of earlier graphs in a backward's list) is set apart as another graph's,
  and named as the graph whose code calls it where the log tells (``called_by``).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import re
from dataclasses import field
from typing import Any, Callable, Iterable, Mapping

import orjson

from ...lazy_regex import lazy_compile
from ...model.ids import CompileId
from ...model.payloads import PayloadRef, json_object
from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import JSON, Artifact, Compile, Trace
from ...model.records import dataclass
from ..cached_lines import RunLines, run_lines
from ..line_map import packed
from ..fx_sites import FX_SOURCE_COMMENT, NODE_MAPPINGS, POST_GRAD
from ..user_kernels import CUSTOM_KERNEL, LaunchSites, definition_text
from ..user_kernels import definition as user_definition
from ..user_kernels import definitions as user_definitions
from ..userloc import UserLocation, is_python_library_file, is_toolchain_file

LineMap = dict[int, list[int]]  # line number -> line numbers (1-based), as built
KeptLineMap = Mapping[int, list[int]]  # as the results keep it (packed: analyses/line_map.py)
MAP_KEYS = ("preToPost", "postToPre", "pyCodeToPost", "postToPyCode", "cppCodeToPost", "postToCppCode")

KERNEL_STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
# Which artifacts fill the panels, in tlparse's order of preference (the post-grad graph's: fx_sites.POST_GRAD).
PRE_GRAD = ("before_pre_grad_graph", "inductor_pre_grad_graph")
PY_CODE = "inductor_output_code"
CPP_CODE = "inductor_aot_wrapper_code"


# --- texts as lines -------------------------------------------------------------------------------


def text_lines(text: str) -> list[str]:
    """Lines as tlparse (Rust ``str::lines``) sees them: split on \\n, one trailing \\r dropped."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    if "\r" not in text:  # (nearly always: no line to trim)
        return parts
    return [p[:-1] if p.endswith("\r") else p for p in parts]


def code_lines(text: str) -> list[str]:
    """The generated code as its panel shows it: without the empty lines it starts with.

    tlparse numbers C++ lines after dropping them, and Python lines from the
    ``# AOT ID:`` line torch writes first; both agree with this numbering whenever
    that line is the first one (always, in torch's output). Without it tlparse's
    Python line numbers are one too high (a tlparse bug, pinned by a test).
    """
    return _without_leading_empty(text_lines(text))


def _without_leading_empty(lines: list[str]) -> list[str]:
    start = 0
    while start < len(lines) and lines[start] == "":
        start += 1
    return lines[start:] if start else lines


# --- names -> line numbers (tlparse's rules) -----------------------------------------------------


def node_name(line: str) -> str | None:
    """The FX node a graph line defines: the text before '=' and then before ':' (stripped; None for a comment)."""
    name = _name_part(line)
    return name if name and name[0] != "#" else None


def _name_part(line: str) -> str:
    # (Cut before stripping, as the same text results: the whitespace around the line holds no '=' or ':'.)
    return line.partition("=")[0].partition(":")[0].strip()


def node_lines(lines: list[str]) -> dict[str, int]:
    # A name defined twice: the last line wins, as in tlparse. (One comprehension, not node_name per line:
    # a graph has thousands of lines.)
    return {name: i for i, name in enumerate(map(_name_part, lines), 1) if name and name[0] != "#"}


def _debug_handle_split(kernel: str) -> str:
    """``kernel:N`` -> ``kernel``. The handle is the last ':' part; kernel names may hold colons.

    tlparse cuts Python kernel names at the *first* colon (C++ ones at the last):
    wrong for a name like ``ns::kernel:3`` (pinned by a test)."""
    return kernel.rsplit(":", 1)[0] if ":" in kernel else kernel


def _python_start(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if "(args)" in line and "def" in line and "call" in line:  # (the rarest first)
            return i
    return 0


def _cpp_start(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if "::run_impl(" in line:
            return i
    return 0


def _not_starting(line: str, prefix: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(prefix)


def kernel_lines(lines: list[str], kernels: Iterable[str], language: str) -> dict[str, list[int]]:
    """Where each kernel (``name`` or ``name:handle``) is called in the generated code.

    Only the wrapper's run function counts (``def call(args)`` / ``::run_impl(``; the
    whole text if absent). A name with a debug handle is found in the comment torch
    writes above its call, and maps to the next line naming the kernel; otherwise (or
    if that comment is missing) every line naming the kernel counts. "Naming" is
    substring containment, as tlparse does it.

    Every name is found in one Aho-Corasick pass over the code, so the work is linear in
    the size of the code, not kernels x lines (a large model has hundreds of each).
    """
    python = language == "python"
    start = _python_start(lines) if python else _cpp_start(lines)
    kernels = list(dict.fromkeys(kernels))
    # Names that hold a line end (or none at all) cannot be indexed per line: an odd
    # or hostile log; they keep the plain scan.
    plain = [k for k in kernels if _indexable(_debug_handle_split(k)) and _indexable(k)]
    where = _occurrences(lines, start, {w for k in plain for w in (k, _debug_handle_split(k))})
    result: dict[str, list[int]] = {}
    for kernel in kernels:
        found = _kernel_call_lines(lines, start, kernel, python, where)
        if found:
            result[kernel] = found
    return result


def _indexable(name: str) -> bool:
    return bool(name) and "\n" not in name and "\r" not in name


def _occurrences(lines: list[str], start: int, names: set[str]) -> dict[str, list[int]]:
    """name -> sorted 0-based indexes of the lines (from ``start``) that contain it."""
    if not names:
        return {}
    import ahocorasick  # here: only a log with provenance needs it (start-up)

    automaton = ahocorasick.Automaton()
    for name in names:
        automaton.add_word(name, name)
    automaton.make_automaton()
    searched = lines[start:]
    text = "\n".join(searched)
    line_starts = list(itertools.accumulate((len(line) + 1 for line in searched), initial=0))
    found: dict[str, list[int]] = {}
    for end, name in automaton.iter(text):
        index = start + bisect.bisect_right(line_starts, end) - 1
        rows = found.setdefault(name, [])
        if not rows or rows[-1] != index:
            rows.append(index)
    return found


def _kernel_call_lines(lines: list[str], start: int, kernel: str, python: bool,
                       where: dict[str, list[int]]) -> list[int]:
    pure = _debug_handle_split(kernel)
    indexed = _indexable(kernel) and _indexable(pure)

    def containing(name: str) -> list[int]:
        if indexed:
            return where.get(name, [])
        return [i for i in range(start, len(lines)) if name in lines[i]]

    if ":" in kernel:
        pure_rows = containing(pure)
        for i in containing(kernel):
            if not python and not (_not_starting(lines[i], "def") and _not_starting(lines[i], "static inline void")):
                continue
            later = pure_rows[bisect.bisect_right(pure_rows, i):]
            nxt = next((j for j in later if python or "_xnumel = " not in lines[j]), None)
            if nxt is not None:
                return [nxt + 1]
            if python:
                break  # tlparse stops at the first comment naming a Python kernel
    return [i + 1 for i in containing(pure)]


def _names_to_lines(mapping: dict, source: dict[str, int], target: dict[str, int]) -> LineMap:
    result: LineMap = {}
    for name in sorted(mapping):  # tlparse reads the JSON into a sorted map; later names win a shared line
        line = source.get(name)
        if line is None:  # (nothing to map: its targets are not looked up)
            continue
        targets = [target[t] for t in _names(mapping[name]) if t in target]
        if targets:
            result[line] = targets
    return result


def _kernels_to_post(mapping: dict, kernels: dict[str, list[int]], post: dict[str, int]) -> LineMap:
    result: LineMap = {}
    if not kernels:  # (the code of the other language, usually: nothing can map)
        return result
    for kernel in sorted(mapping):
        targets = [post[n] for n in _names(mapping[kernel]) if n in post]
        if targets:
            for line in kernels.get(kernel, ()):
                result[line] = targets
    return result


def _post_to_kernels(mapping: dict, post: dict[str, int], kernels: dict[str, list[int]]) -> LineMap:
    result: LineMap = {}
    if not kernels:  # as in _kernels_to_post
        return result
    for node in sorted(mapping):
        if node not in post:  # (nothing to map: its kernels are not looked up)
            continue
        targets = [line for k in _names(mapping[node]) for line in kernels.get(k, ())]
        if targets:
            result[post[node]] = targets
    return result


def _names(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def line_mappings(node_mappings: dict, pre: list[str], post: list[str], py_code: list[str], cpp_code: list[str]) -> dict[str, LineMap]:
    """The six line maps of tlparse's ``lineMappings`` from node mappings and the panel texts."""
    kernels = sorted(_dict(node_mappings.get("cppCodeToPost")))
    return _line_maps(node_mappings, node_lines(pre), node_lines(post),
                      kernel_lines(py_code, kernels, "python"), kernel_lines(cpp_code, kernels, "cpp"))


def _line_maps(node_mappings: dict, pre_nodes: dict[str, int], post_nodes: dict[str, int],
               py_kernels: dict[str, list[int]], cpp_kernels: dict[str, list[int]]) -> dict[str, LineMap]:
    """line_mappings from the texts' node lines and kernel lines (each text indexed once by the caller).

    The kernel lines may hold more kernels than ``cppCodeToPost``: only those count, as in tlparse."""
    code_to_post = _dict(node_mappings.get("cppCodeToPost"))  # named "cpp" but holds every kernel
    post_to_code = _dict(node_mappings.get("postToCppCode"))
    py_kernels, cpp_kernels = _only(py_kernels, code_to_post), _only(cpp_kernels, code_to_post)
    return {
        "preToPost": _names_to_lines(_dict(node_mappings.get("preToPost")), pre_nodes, post_nodes),
        "postToPre": _names_to_lines(_dict(node_mappings.get("postToPre")), post_nodes, pre_nodes),
        "pyCodeToPost": _kernels_to_post(code_to_post, py_kernels, post_nodes),
        "postToPyCode": _post_to_kernels(post_to_code, post_nodes, py_kernels),
        "cppCodeToPost": _kernels_to_post(code_to_post, cpp_kernels, post_nodes),
        "postToCppCode": _post_to_kernels(post_to_code, post_nodes, cpp_kernels),
    }


def _only(kernels: dict[str, list[int]], names: dict) -> dict[str, list[int]]:
    return {k: v for k, v in kernels.items() if k in names}


# --- kernel stack traces -------------------------------------------------------------------------


@dataclass(slots=True)
class UserLine:
    """One frame of a kernel's user stack: where in the user's program the kernel came from."""

    file: str
    line: int
    function: str | None
    code: str | None

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def file_name(self) -> str:
        """The file's name, without its directory: what a line is named by where the full path would not fit."""
        return os.path.basename(self.file)

    @property
    def short(self) -> str:
        """`file.py:23`, as the other pages name a line (UserLocation.short); the full path goes in its title."""
        return f"{self.file_name}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "code": self.code}


# A tensor subclass's __torch_function__ / __torch_dispatch__ runs for each op of its tensors: the op's own line is the
# one that called into it (UnitTensor's `out = super().__torch_function__(...)` is every op's, `x * 2 + 1` this one's).
_SUBCLASS_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})


@functools.lru_cache(maxsize=4096)  # (a log names few files, in every frame of every kernel's stacks)
def is_users_file(file: str) -> bool:
    """Not torch's or Triton's, Python's library's, nor code torch generated (`<eval_with_key>.5`)."""
    return not file.startswith("<") and not is_toolchain_file(file) and not is_python_library_file(file)


def reaching_user_line(frames: list[UserLine]) -> UserLine | None:
    """The user's line that reached a stack's innermost frame (outermost first): that frame where it is the user's;
    else the innermost user frame outside a tensor subclass's hook (through a `__torch_function__` subclass every
    node's FX `# File:` comment is torch's _tensor.py:1530, and the hook's line is every op's), else the hook's."""
    if frames and is_users_file(frames[-1].file):
        return frames[-1]
    users = [f for f in frames if is_users_file(f.file)]
    outside = [f for f in users if f.function not in _SUBCLASS_HOOKS]
    return (outside or users or [None])[-1]


def user_lines_at(stacks: Iterable[list[UserLine]], file: str, line: int) -> list[UserLine]:
    """The user's lines that reached torch's file:line (an FX `# File:` comment naming torch's code), by the logged
    stacks whose innermost frame it is; none where no stack ends there."""
    found: dict[tuple[str, int], UserLine] = {}
    for frames in stacks:
        if frames and frames[-1].line == line and frames[-1].file == file:
            user = reaching_user_line(frames)
            if user is not None:
                found.setdefault((user.file, user.line), user)
    return list(found.values())


@dataclass(slots=True)
class KernelTrace:
    """The logged stack traces of one kernel (one call site when it has a debug handle)."""

    name: str  # as logged, e.g. "triton_poi_fused_mul_1:2"
    kernel: str  # without the debug handle
    debug_handle: str | None  # "2": one per call site of the kernel
    traces: list[str]  # the stack traces as logged, readable (\\n turned into newlines)
    frames: list[list[UserLine]]  # each trace's frames, outermost first

    @property
    def anchor(self) -> str:
        return kernel_anchor(self.name)

    @property
    def user_lines(self) -> list[UserLine]:
        """The innermost frame of each stack (the line that produced the kernel), without repeats."""
        seen, result = set(), []
        for frames in self.frames:
            if frames and (frames[-1].file, frames[-1].line) not in seen:
                seen.add((frames[-1].file, frames[-1].line))
                result.append(frames[-1])
        return result

    @property
    def placed_lines(self) -> list[UserLine]:
        """The user's line each stack reached the kernel from (reaching_user_line), without repeats: where a source
        page places the kernel."""
        seen, result = set(), []
        for frames in self.frames:
            user = reaching_user_line(frames)
            if user is not None and (user.file, user.line) not in seen:
                seen.add((user.file, user.line))
                result.append(user)
        return result

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kernel": self.kernel, "debug_handle": self.debug_handle,
                "user_lines": [u.to_json() for u in self.user_lines]}


def kernel_anchor(name: str) -> str:
    return "kernel-" + _NOT_IN_ANCHOR.sub("-", name)


_NOT_IN_ANCHOR = lazy_compile(r"[^A-Za-z0-9_.-]")  # (compiled once: re.sub looks the pattern up per call)


# A kernel stack trace's frame: userloc.TRACEBACK_FRAME's line, but the function may be absent (`File "x.py", line 1`,
# a format the provenance artifacts were logged in), so not that pattern
_FRAME = lazy_compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d{1,9}+)(?:, in (?P<function>.+))?\s*$')
_MARKER = lazy_compile(r"^\s*[\^~]+\s*$")  # the ^^^^ under the code


def parse_stack_trace(text: str) -> list[UserLine]:
    frames: list[UserLine] = []
    for line in text.split("\n"):
        m = _FRAME.match(line)
        if m:
            frames.append(UserLine(m["file"], int(m["line"]), m["function"], None))
        elif frames and frames[-1].code is None and line.strip() and not _MARKER.match(line):
            frames[-1].code = line.strip()
    return frames


def _call_order(name: str) -> tuple:
    """Kernels by debug handle (the order of their calls), then by name."""
    handle = name.rpartition(":")[2]
    return (0, int(handle), name) if ":" in name and handle.isascii() and handle.isdigit() else (1, 0, name)


def kernel_traces(text: str, parsed: dict[str, list[UserLine]] | None = None,
                  texts: dict[str, str] | None = None) -> list[KernelTrace]:
    """``inductor_provenance_tracking_kernel_stack_traces``: kernel -> list of stack trace strings.

    parsed: stack trace text -> its frames, shared by the calls for one log (a backward graph's kernels carry
    its forward's stacks: GPT-2 logs 168 stacks, 47 of them distinct). texts: each distinct stack trace text,
    kernel name and debug handle, one object for the calls for one log (the results keep every compile's
    kernels: its recompiles and backward graphs repeat them)."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(data, dict):
        return []
    result = []
    if parsed is None:
        parsed = {}  # kernels of one graph share most stacks: parse each text once
    if texts is None:
        texts = {}
    for name in sorted(data, key=_call_order):
        value = data[name]
        raw = value if isinstance(value, list) else [value]
        # Some torch versions log the newlines escaped (a literal backslash-n).
        traces = [_as_text(t).replace("\\n", "\n").rstrip("\n") for t in raw]
        # Each distinct text kept once (as its frames are): the result holds every kernel's traces.
        traces = [texts.setdefault(t, t) for t in traces]
        kernel, _, handle = name.rpartition(":") if ":" in name else (name, "", "")
        frames = [parsed[t] if t in parsed else parsed.setdefault(t, parse_stack_trace(t)) for t in traces]
        result.append(KernelTrace(name, texts.setdefault(kernel, kernel), texts.setdefault(handle, handle) or None,
                                  traces, frames))
    return result


def on_run_lines(kernels: list[KernelTrace], run: RunLines | None) -> list[KernelTrace]:
    """The kernels with their stacks' frames on this run's lines, where a cache hit logged the cached stacks (of the
    run that compiled them: cached_lines.py). The stack texts stay as logged; the parsed frames of a text are shared
    by every compile, so a moved stack gets new frames."""
    if run is None:
        return kernels
    placed: dict[int, list[UserLine]] = {}  # id of a shared frames list -> its frames on this run's lines

    def moved(frames: list[UserLine]) -> list[UserLine]:
        if id(frames) not in placed:
            lines = [run.line(f.file, f.line, f.function, f.code) for f in frames]
            placed[id(frames)] = frames if lines == [f.line for f in frames] else [
                UserLine(f.file, line, f.function, f.code) for f, line in zip(frames, lines)]
        return placed[id(frames)]

    return [KernelTrace(k.name, k.kernel, k.debug_handle, k.traces, [moved(f) for f in k.frames]) for k in kernels]


def _as_text(value: object) -> str:
    """A stack trace entry as text; a non-string (odd or hostile log) is shown as its JSON, or repr if too deep."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return repr(value)[:10_000]


# --- inferred mappings ---------------------------------------------------------------------------

_NO_SOURCE = lazy_compile(r"^\s*# No stacktrace found")
_OP = lazy_compile(r"=\s*torch\.ops\.\w+\.(\w+)\.")
_KERNEL_OPS = lazy_compile(r"(?:^|_)fused_(?P<ops>.+?)(?:_\d+)?$")


def _post_node_sources(lines: list[str], run: RunLines | None = None
                        ) -> list[tuple[int, str, str | None, tuple[str, int] | None]]:
    """(line, node, op, user file:line) for each node of a post-grad graph, from FX's '# File:' comments; run: this
    run's lines, where the graph came from a cache hit (the kernels' stacks are placed on them too)."""
    result = []
    source: tuple[str, int] | None = None
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#"):  # only comments can name a source (and comments define no node)
            m = FX_SOURCE_COMMENT.match(line)
            if m:
                source = (m["file"], int(m["line"]))
                if run is not None:
                    code = (m["code"] or "").strip() or None
                    source = (m["file"], run.line(m["file"], int(m["line"]), m["function"].strip(), code))
            elif _NO_SOURCE.match(line):
                source = None
            continue
        name = _name_part(line)  # (node_name: a line that is no comment has no name that starts with '#')
        if not name or " " in name or "(" in name:  # not a node: class/def/return lines
            continue
        op = _OP.search(line)
        result.append((i + 1, name, op.group(1) if op else None, source))
    return result


def _kernel_ops(kernel: str) -> str:
    """The op names a kernel is named after: ``cpp_fused_relu_threshold_backward_0`` -> ``relu_threshold_backward``."""
    base = kernel.rsplit(".", 1)[-1]  # extern_kernels.mm -> mm
    m = _KERNEL_OPS.search(base)
    return m["ops"] if m else base


def _names_op(ops: str, op: str | None) -> bool:
    """Whether ``op`` is one of the ``_``-separated runs of ``ops`` (``relu`` in ``relu_threshold_backward``)."""
    return bool(op) and f"_{op}_" in f"_{ops}_"


def infer_kernel_nodes(kernels: list[KernelTrace], post: list[str], run: RunLines | None = None) -> dict[str, list[int]]:
    """Post-grad node lines for kernels the node mappings leave out, through their user source line.

    Candidates are the nodes FX attributes to a line of the kernel's stack; of those,
    the nodes whose op the kernel is named after, else the candidates no other kernel
    is named after, else all candidates.
    """
    by_place: dict[tuple[str, int], list[tuple[int, str, str | None]]] = {}
    for line, name, op, src in _post_node_sources(post, run):  # indexed once: not kernels x nodes
        if src is not None:
            by_place.setdefault(src, []).append((line, name, op))
    # Kernels share stacks (every kernel of one line, each debug handle of one kernel): candidates are worked
    # out once per distinct set of stack lines, and the ops filter once per kernel name and set.
    Candidate = tuple[int, str, str | None]
    places_of: dict[str, frozenset[tuple[str, int]]] = {}
    by_places: dict[frozenset[tuple[str, int]], list[Candidate]] = {}
    places_by_stacks: dict[tuple[int, ...], frozenset[tuple[str, int]]] = {}  # ids of k.frames' lists: alive here
    for k in kernels:
        stacks = tuple(map(id, k.frames))  # (kernel_traces shares one frames list per distinct stack text)
        places = places_by_stacks.get(stacks)
        if places is None:
            places = places_by_stacks[stacks] = frozenset((f.file, f.line) for frames in k.frames for f in frames)
        places_of[k.name] = places
        if places not in by_places:
            by_places[places] = sorted(c for place in places for c in by_place.get(place, ()))
    named: dict[str, list[Candidate]] = {}
    by_ops: dict[tuple[str, frozenset[tuple[str, int]]], list[Candidate]] = {}
    for k in kernels:
        key = (_kernel_ops(k.kernel), places_of[k.name])
        if key not in by_ops:
            by_ops[key] = [c for c in by_places[key[1]] if _names_op(key[0], c[2])]
        named[k.name] = by_ops[key]
    claimed = {c[0] for cs in named.values() for c in cs}
    unclaimed: dict[frozenset[tuple[str, int]], list[Candidate]] = {}
    result = {}
    for k in kernels:
        places = places_of[k.name]
        chosen = named[k.name]
        if not chosen:
            if places not in unclaimed:
                unclaimed[places] = [c for c in by_places[places] if c[0] not in claimed]
            chosen = unclaimed[places] or by_places[places]
        if chosen:
            result[k.name] = [c[0] for c in chosen]
    return result


# --- what a kernel computes -----------------------------------------------------------------------

_NODE_OP = lazy_compile(r"=\s*torch\.ops\.(?P<op>\w+\.\w+)\.")


@dataclass(slots=True)
class KernelWork:
    """What one generated kernel call computes: the ops of the post-grad nodes torch maps to it, less the nodes that
    another call of the graph computes (a custom op or extern kernel, called on its own). torch names a fused kernel
    after the nodes it was made for, which can take in such a node whose input it computes: featurize's
    cpp_fused_bucketize_tanh_0 computes tanh, and mylib::bucketize is its own call, torch.ops.mylib.bucketize.default."""

    call: str  # as the node mappings name it: "cpp_fused_bucketize_tanh_0:1"
    ops: list[str]  # the ops it computes, "namespace.op": ["aten.tanh"]
    # The ops its name lists that other calls compute: op ("mylib.bucketize") -> those calls
    elsewhere: dict[str, list[str]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # the user lines of what it computes: "custom_ops.py:82"

    @property
    def kernel(self) -> str:
        """The kernel's name, without the debug handle."""
        return _without_handle(self.call)

    @property
    def note(self) -> str | None:
        """What it computes, where its name says more (None: the name says what it computes)."""
        if not self.elsewhere:
            return None
        apart = "; ".join(f"{op.partition('.')[2]}, in its name, is computed by its own call {' and '.join(calls)}"
                          for op, calls in self.elsewhere.items())
        return (f"computes {', '.join(op.partition('.')[2] for op in self.ops)} only; {apart} (torch names a fused "
                "kernel after all the nodes it was made for)")

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call, "kernel": self.kernel, "ops": self.ops, "elsewhere": self.elsewhere,
                "lines": self.lines, "note": self.note}


def _without_handle(call: str) -> str:
    return call.rpartition(":")[0] if ":" in call else call


def kernel_work(node_mappings: dict, post: list[str], stacks: Mapping[str, list[list[UserLine]]] | None = None,
                noted_only: bool = False) -> list[KernelWork]:
    """What each generated kernel call of a graph computes, from torch's node mappings (code call -> post-grad nodes)
    and the post-grad graph's lines (each node's op); calls in the mappings' order. A generated kernel's name has
    no dot; `extern_kernels.mm`, `torch.ops.mylib.bucketize.default` are calls of existing kernels. stacks: each
    call's logged stacks (kernel_traces' frames), which place a node FX comments with torch's file on the user's line
    that reached it (user_lines_at). noted_only: only the calls with a note (KernelWork.note), without their lines."""
    calls = {**_dict(node_mappings.get("pyCodeToPost")), **_dict(node_mappings.get("cppCodeToPost"))}
    elsewhere: dict[str, list[str]] = {}  # post node -> the existing kernels' calls computing it
    for call, nodes in calls.items():
        if "." in _without_handle(call):
            for node in _names(nodes):
                elsewhere.setdefault(node, []).append(call)
    if noted_only and not elsewhere:
        return []  # (a note names a node another call computes)
    ops = {}
    for line in post:
        name, m = node_name(line), _NODE_OP.search(line)
        if name and m:
            ops[name] = m["op"]
    sources = {name: src for _, name, _, src in _post_node_sources(post) if src} if not noted_only else {}

    def lines_of(call: str, node: str) -> list[str]:
        file, line = sources[node]
        placed = user_lines_at((stacks or {}).get(call, ()), file, line) if not is_users_file(file) else []
        return [u.short for u in placed] or [f"{os.path.basename(file)}:{line}"]
    found = []
    for call, nodes in calls.items():
        kernel = _without_handle(call)
        if "." in kernel:
            continue
        own = [ops[n] for n in _names(nodes) if n in ops and n not in elsewhere]
        named = _kernel_ops(kernel)
        apart: dict[str, list[str]] = {}
        for n in _names(nodes):
            if n in elsewhere and n in ops and _names_op(named, ops[n].partition(".")[2]):
                apart.setdefault(ops[n], []).extend(c for c in elsewhere[n] if c not in apart.get(ops[n], []))
        if noted_only and not (apart and own):
            continue
        lines = [at for n in _names(nodes) if n in sources and n not in elsewhere for at in lines_of(call, n)]
        found.append(KernelWork(call, list(dict.fromkeys(own)), apart if own else {}, list(dict.fromkeys(lines))))
    return found


def user_kernel_notes(code: str, node_mappings: dict, post: list[str], kernels: list[KernelTrace],
                      files: SourceFiles = NO_FILES) -> dict[str, str]:
    """Each call of a user's own Triton kernel (user_kernels.definitions) -> what to tell of it: that it is theirs,
    not one Inductor generated, where it is defined and launched, and which lines torch's stack traces tie to it that
    are not its launch (torch 2.11 ties the call to the nodes of the kernel fused before it: relu and mul of line 44,
    for scaled_add_kernel_0 launched at line 34)."""
    if CUSTOM_KERNEL not in code:
        return {}
    notes = {}
    traced = {k.name: k for k in kernels}
    sites = LaunchSites(node_mappings, post)
    for defined in user_definitions(code):
        defined_at, decorator_line = user_definition(defined, files)
        for call in defined.calls:
            launched = sites.of([call])
            note = f"your own Triton kernel {defined.name}"
            if defined_at is not None:
                note += f", defined at {definition_text(defined_at, decorator_line)}"
            if launched:
                note += f", launched at {', '.join(u.short for u in launched)}"
            note += ": Inductor compiled it as you wrote it (it generated none of it)"
            listed = traced.get(call)
            others = [u.short for u in listed.user_lines if (u.file, u.line) not in {x.key for x in launched}] if listed and launched else []
            if others:
                note += (f"; {', '.join(others)} below {'is' if len(others) == 1 else 'are'} torch's mapping of the ops fused "
                         "before it, not where it came from")
            notes[call] = note
    return notes


def placed_apart_from_user_kernels(code: str, node_mappings: dict, post: list[str],
                                   kernels: list[KernelTrace]) -> tuple[list[KernelTrace], dict[str, str]]:
    """The kernels placed by their own stacks where torch ties a call to a user Triton kernel's launch and to the ops
    fused before it, both: torch 2.11 maps Inductor's triton_poi_fused_mul_relu_0:1 and the user's scaled_add_kernel_0:2
    each to triton_kernel_wrapper_mutation, mul_1 and relu, so each lists the stacks of the launch (line 34) and of
    relu and mul (line 44). A generated kernel keeps the stacks other than the launches (what it computes: its name's
    ops); the user's kernel keeps its launches only (user_kernel_notes tells the rest). Where none would remain, a
    kernel keeps its stacks. And each generated kernel so moved -> what to tell of it."""
    if CUSTOM_KERNEL not in code:
        return kernels, {}
    calls = {**_dict(node_mappings.get("pyCodeToPost")), **_dict(node_mappings.get("cppCodeToPost"))}
    launches: dict[str, list[UserLocation]] = {}  # user kernel call -> where it was launched
    names: dict[str, str] = {}  # user kernel call -> the @triton.jit function's name
    sites = LaunchSites(node_mappings, post)
    for defined in user_definitions(code):
        for call in defined.calls:
            launches[call], names[call] = sites.of([call]), defined.name
    wrappers = {node: call for call in launches for node in _names(calls.get(call)) if node.startswith("triton_kernel_wrapper")}
    placed, notes = [], {}
    for k in kernels:
        if k.name in launches:
            keep = {u.key for u in launches[k.name]}
            apart = []
        else:
            apart = list(dict.fromkeys(wrappers[n] for n in _names(calls.get(k.name)) if n in wrappers))
            keep = set()
        drop = {u.key for call in apart for u in launches[call]}

        def stays(frames: list[UserLine]) -> bool:
            user = reaching_user_line(frames)
            key = (user.file, user.line) if user is not None else None
            return key in keep if keep else key not in drop
        frames = [f for f in k.frames if stays(f)] if keep or drop else k.frames
        if not frames or len(frames) == len(k.frames):
            placed.append(k)
            continue
        placed.append(KernelTrace(k.name, k.kernel, k.debug_handle, k.traces, frames))
        if apart:
            moved = [u.short for u in KernelTrace(k.name, k.kernel, k.debug_handle, k.traces, k.frames).placed_lines
                     if (u.file, u.line) in drop]
            own = ", ".join(u.short for u in placed[-1].placed_lines)
            notes[k.name] = (f"made for the ops of {own}; torch's stack traces also tie it to {', '.join(moved)}, the "
                             f"launch of your own Triton kernel {', '.join(dict.fromkeys(names[c] for c in apart))} "
                             f"({', '.join(apart)}), not where it came from")
    return placed, notes


# --- per compile id ------------------------------------------------------------------------------


@dataclass(slots=True)
class Panel:
    """One of the three texts: which artifact, and how many leading lines the panel drops."""

    title: str
    artifact_number: int | None = None
    payload: PayloadRef | None = None
    skip: int = 0


@dataclass
class GraphRef:
    """One section of a compile id's provenance: the graph whose code calls a kernel."""

    compile_id: CompileId | None
    dir_name: str
    section: int  # its index in that compile id's sections
    title: str
    graph: str | None  # "forward", "backward", "inference" (ProvenanceSection.graph)
    label: str  # ProvenanceSection.label: `[1/0] backward`


@dataclass
class ProvenanceSection:
    """One Inductor graph: its three panels and the line maps between them."""

    title: str
    language: str  # of the generated code: "python" (JIT) | "cpp" (AOTInductor wrapper)
    pre: Panel
    post: Panel
    code: Panel
    mappings: dict[str, KeptLineMap]  # the six maps, as tlparse computes them
    inferred_code_to_post: KeptLineMap = field(default_factory=dict)
    inferred_post_to_code: KeptLineMap = field(default_factory=dict)
    code_kernels: dict[int, list[str]] = field(default_factory=dict)  # code line -> kernels called there
    kernels: list[KernelTrace] = field(default_factory=list)
    kernel_traces_artifact: int | None = None  # the kernel page's artifact
    graph: str | None = None  # "forward", "backward" or "inference": what the code's AOT ID says it is
    # Kernels the stack traces list with a debug handle that no debug-handle comment of the code names: torch 2.11
    # does not clear its provenance between graphs, so a backward's stack traces (and node mappings) also
    # list the kernels of the graphs compiled before it (its forward, another frame's backward), each with the handle
    # of the code that calls it. In an AOTInductor wrapper's section: also those its code names nowhere.
    other_graphs: list[str] = field(default_factory=list)
    # What the page calls the graph (graph_labels): `[1/0] backward`, not torch's AOT ID (`1_backward`, the title).
    label: str = ""
    number: int | None = None  # the label's number, where the compile id has several graphs of this kind
    # Of other_graphs, those whose graph the log tells (place_other_graphs): kernel name -> the graph calling it.
    called_by: dict[str, GraphRef] = field(default_factory=dict)
    # The kernel calls whose name says more than they compute (a KernelWork with a note), in the graph's order.
    noted_work: list[KernelWork] = field(default_factory=list)
    # The calls of the user's own Triton kernels (user_kernels.py), which Inductor emits as written: call -> the note
    # that says so, with where the kernel is defined and launched (user_kernel_notes)
    user_kernel_notes: dict[str, str] = field(default_factory=dict)
    # The generated kernels' calls whose stacks of a user kernel's launch were set apart (placed_apart_from_user_kernels):
    # call -> the note that says which lines it was made for, and which launch torch tied it to
    apart_notes: dict[str, str] = field(default_factory=dict)

    @property
    def kernel_notes(self) -> dict[str, str]:
        """What a kernel call computes where its name says more (KernelWork.note), that it is the user's own kernel, or
        that torch tied it to a user kernel's launch: call ("cpp_fused_bucketize_tanh_0:1") -> the note."""
        return {**{w.call: note for w in self.noted_work if (note := w.note)}, **self.apart_notes,
                **self.user_kernel_notes}

    @property
    def noted_calls(self) -> list[tuple[KernelWork, int | None]]:
        """Each of noted_work with the first line of the generated code that calls it (None: no line calls it)."""
        return [(work, next((n for n, names in sorted(self.code_kernels.items()) if work.call in names), None))
                for work in self.noted_work]

    @property
    def own_kernels(self) -> list[KernelTrace]:
        """The kernels of this graph: those listed less other_graphs (another graph's code calls them)."""
        if not self.other_graphs:
            return self.kernels
        others = set(self.other_graphs)
        return [k for k in self.kernels if k.name not in others]

    @property
    def code_to_post(self) -> KeptLineMap:
        return self.mappings["pyCodeToPost" if self.language == "python" else "cppCodeToPost"]

    @property
    def post_to_code(self) -> KeptLineMap:
        return self.mappings["postToPyCode" if self.language == "python" else "postToCppCode"]

    def mapped_lines(self) -> dict[str, set[int]]:
        """The lines each panel shows in bold: those the mappings cover."""
        m = self.mappings
        return {
            "pre": set(m["preToPost"]),
            "post": set(m["postToPre"]) | set(self.post_to_code) | set(self.inferred_post_to_code),
            "code": set(self.code_to_post) | set(self.inferred_code_to_post),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "language": self.language,
            "artifacts": {p: getattr(self, p).artifact_number for p in ("pre", "post", "code")},
            **{k: _json_map(v) for k, v in self.mappings.items()},
            "inferredCodeToPost": _json_map(self.inferred_code_to_post),
            "inferredPostToCode": _json_map(self.inferred_post_to_code),
            "codeKernels": {str(k): v for k, v in sorted(self.code_kernels.items())},
            "kernels": [k.to_json() for k in self.kernels],
            "graph": self.graph,
            "label": self.label,
            "otherGraphs": self.other_graphs,
            "calledBy": {name: ref.label for name, ref in self.called_by.items()},
            "kernelNotes": self.kernel_notes,
        }


def _json_map(m: KeptLineMap) -> dict[str, list[int]]:
    return {str(k): v for k, v in sorted(m.items())}


@dataclass
class CompileProvenance:
    """Provenance of one compile id: its line mappings and the sections of its provenance page."""

    compile_id: CompileId | None
    dir_name: str
    line_mappings: dict[str, KeptLineMap]  # what tlparse 0.4.3 -i computes for this compile id
    sections: list[ProvenanceSection]

    def to_json(self) -> dict[str, Any]:
        return {**self.line_mappings_json(), "sections": [s.to_json() for s in self.sections]}

    def line_mappings_json(self) -> dict[str, Any]:
        """to_json without its sections (a report writes those one at a time)."""
        return {k: _json_map(v) for k, v in self.line_mappings.items()}


@dataclass
class Provenance:
    """Provenance of every compile id, and the kernels of each stack traces artifact."""

    compiles: dict[CompileId | None, CompileProvenance] = field(default_factory=dict)
    kernels: dict[int, list[KernelTrace]] = field(default_factory=dict)  # stack traces artifact number -> kernels

    def to_json(self) -> dict[str, Any]:
        return {c.dir_name: c.to_json() for c in self.compiles.values()}


def _named(artifacts: list[tuple[str, Artifact]], prefix: str) -> list[Artifact]:
    # tlparse matches output file names by prefix ("inductor_output_code_<hash>.html" too).
    return [a for filename, a in artifacts if filename.startswith(prefix)]


def _first_kind(artifacts: list[tuple[str, Artifact]], prefixes: tuple[str, ...]) -> list[Artifact]:
    for prefix in prefixes:
        found = _named(artifacts, prefix)
        if found:
            return found
    return []


def _code_title(lines: list[str], fallback: str) -> str:
    for line in lines[:3]:
        m = re.match(r"#\s*AOT ID:\s*\[?'?([^'\]]*)", line)
        if m and m.group(1):
            return m.group(1)
    return fallback


GRAPH_KINDS = ("forward", "backward", "inference")


def graph_kind(title: str) -> str | None:
    """forward / backward / inference from an AOT ID (`0_forward`, `3_backward`): torch names the graph it compiled
    (the output code's first line); None for another title."""
    kind = title.rpartition("_")[2]
    return kind if kind in GRAPH_KINDS and kind != title else None


# The comment torch writes above a kernel call when provenance is on: `# [Provenance debug handles] triton_x_0:3` in
# Python, `// ...` in the AOTInductor C++ wrapper. One kernel call a comment.
_DEBUG_HANDLE_MARK = "[Provenance debug handles]"
_DEBUG_HANDLE_COMMENT = lazy_compile(r"^\s*(?:#|//)\s*\[Provenance debug handles\]\s*(\S+)\s*$")


def graph_labels(compile_id: CompileId | None, titles: list[str]) -> list[tuple[str, int | None]]:
    """What a compile id's provenance sections are called, from their AOT IDs (titles): the compile id and the graph's
    kind, `[1/0] backward`, as a reader knows them (torch's `1_backward` numbers the graphs AOTAutograd compiled in the
    whole run). Where the compile id has several graphs of a kind (DDPOptimizer compiles each submodule on its own:
    `0_forward`, `1_forward`, `2_forward`, then their backwards), each is numbered by its AOT graph's place among the
    compile id's, so that a forward and its backward share it (`[0/0] forward 3`, `[0/0] backward 3`). A title that
    names no kind (`AOTInductor`) follows the compile id as it is. Each label comes with its number (None: none)."""
    cid = str(compile_id) if compile_id is not None else "(no compile id)"
    kinds = [graph_kind(t) for t in titles]
    several = {k for k in kinds if k is not None and kinds.count(k) > 1}
    places: dict[str, int] = {}  # an AOT graph's number (`2` of `2_backward`) -> its place, from 1, in log order
    for title, kind in zip(titles, kinds):
        if kind in several:
            places.setdefault(title.rpartition("_")[0], len(places) + 1)
    labels: list[tuple[str, int | None]] = []
    for title, kind in zip(titles, kinds):
        if kind is None:
            labels.append((f"{cid} {title}", None))
        elif kind in several:
            number = places[title.rpartition("_")[0]]
            labels.append((f"{cid} {kind} {number}", number))
        else:
            labels.append((f"{cid} {kind}", None))
    return labels


def debug_handle_names(lines: list[str]) -> set[str]:
    """The kernels (`name:handle`) the code's debug-handle comments name: the kernel calls this code makes."""
    return {m[1] for line in lines if _DEBUG_HANDLE_MARK in line for m in [_DEBUG_HANDLE_COMMENT.match(line)] if m}


def _panel(a: Artifact | None, what: str, skip: int = 0) -> Panel:
    if a is None:
        return Panel(f"{what} (not in the log)")
    return Panel(a.name, a.number, a.payload, skip)


def compile_provenance(trace: Trace, entry: Compile, parsed: dict[int, list[KernelTrace]] | None = None,
                       run: RunLines | None = None, files: SourceFiles = NO_FILES) -> CompileProvenance | None:
    """parsed: the kernel_traces of stack traces artifacts already parsed (by artifact number), placed on this run's
    lines; run: this run's lines (run_lines), where the compile hit a cache; files: the user's files as ingest read
    them (user_kernels.files_wanted: a user kernel's def line is read there)."""
    arts = [(a.filename, a) for a in entry.artifacts if a.payload is not None]  # file names made once, not per kind
    mappings = [a for a in _named(arts, NODE_MAPPINGS) if a.display == JSON]
    if not mappings:
        return None
    pres = _first_kind(arts, PRE_GRAD)
    posts = _first_kind(arts, POST_GRAD)
    py_codes, cpp_codes = _named(arts, PY_CODE), _named(arts, CPP_CODE)
    traces = [a for a in _named(arts, KERNEL_STACK_TRACES) if a.display == JSON]
    codes = cpp_codes or py_codes
    pre = pres[-1] if pres else None

    def last(xs: list[Artifact]) -> Artifact | None:
        return xs[-1] if xs else None

    def text(a: Artifact | None) -> str:  # payloads are read here, one at a time, not kept
        return trace.payload_text(a.payload) if a is not None else ""

    def lines_of(a: Artifact | None) -> tuple[list[str], int]:
        """The code's lines as its panel numbers them, and how many empty lines it drops."""
        all_lines = text_lines(text(a))
        lines = _without_leading_empty(all_lines)
        return lines, len(all_lines) - len(lines)

    # One section per Inductor graph when the artifacts pair up (forward, backward, ...);
    # otherwise one section of the last of each, which is what tlparse shows.
    n = len(mappings)
    if n > 1 and len(posts) == n and len(codes) == n:
        groups = [(mappings[i], posts[i], codes[i], traces[i] if len(traces) == n else last(traces)) for i in range(n)]
    else:
        groups = [(mappings[-1], last(posts), last(codes), last(traces))]

    pre_lines = text_lines(text(pre))
    pre_nodes = node_lines(pre_lines)  # the same pre-grad graph for every section
    sections = []
    for i, (mapping_a, post_a, code_a, traces_a) in enumerate(groups):
        node_mappings = json_object(text(mapping_a))
        post_lines = text_lines(text(post_a))
        code_text = text(code_a)
        lines, skip = lines_of(code_a)
        language = "cpp" if code_a is not None and code_a in cpp_codes else "python"
        if traces_a is None:
            kernels = []
        elif parsed is not None and traces_a.number in parsed:
            kernels = parsed[traces_a.number]
        else:
            kernels = on_run_lines(kernel_traces(text(traces_a)), run)
        # Every kernel this section links is found in the code in one pass (kernel_lines), used for the maps
        # and for the links: the code is indexed once.
        mapped = _dict(node_mappings.get("cppCodeToPost"))
        where = kernel_lines(lines, sorted(set(mapped) | {k.name for k in kernels}), language)
        handles = debug_handle_names(lines)
        other_graphs = [k.name for k in kernels if handles and k.debug_handle is not None and k.name not in handles]
        if language == "cpp" and code_a is not None:
            # An AOTInductor package's stack traces are logged outside any compile id, as its wrapper is: any other
            # kernel stack traces logged there land in its section too. A kernel its wrapper names nowhere (neither
            # defines nor calls) is no kernel of it: peer inductor_provenance_extended_log's list names five (vllm's
            # layernorm.py, rope.py) beside a wrapper of three other Triton kernels and an mm.
            listed = set(other_graphs)
            other_graphs += [k.name for k in kernels if k.name not in where and k.name not in listed]
        if len(groups) == 1:
            # tlparse computes both code maps, each from the last artifact of its kind (one of them is this code).
            other = py_codes if language == "cpp" else cpp_codes
            other_lines = lines_of(last(other))[0]
            other_where = kernel_lines(other_lines, sorted(mapped), "python" if language == "cpp" else "cpp")
            py_where, cpp_where = (other_where, where) if language == "cpp" else (where, other_where)
        else:
            py_where, cpp_where = (where, {}) if language == "python" else ({}, where)
        title = _code_title(lines, "AOTInductor" if language == "cpp" else f"graph {i + 1}")
        section = ProvenanceSection(
            title=title,
            language=language,
            pre=_panel(pre, "pre-grad graph"),
            post=_panel(post_a, "post-grad graph"),
            code=_panel(code_a, "generated code", skip),
            mappings=_line_maps(node_mappings, pre_nodes, node_lines(post_lines), py_where, cpp_where),
            kernels=kernels,
            kernel_traces_artifact=traces_a.number if traces_a is not None else None,
            graph=graph_kind(title),
            other_graphs=other_graphs,
            noted_work=kernel_work(node_mappings, post_lines, noted_only=True),
            user_kernel_notes=user_kernel_notes(code_text, node_mappings, post_lines, kernels, files),
        )
        section.kernels, section.apart_notes = placed_apart_from_user_kernels(code_text, node_mappings, post_lines, kernels)
        # Another graph's kernel is named in this code only by its base name (`extern_kernels.mm`, at another call):
        # it links nowhere here and infers no nodes. (The maps above keep tlparse's rule.)
        skipped = set(other_graphs)
        _add_kernel_links(section, set(mapped), {k: v for k, v in where.items() if k not in skipped} if skipped else where,
                          post_lines, run)
        sections.append(section)
    for section, (label, number) in zip(sections, graph_labels(entry.compile_id, [s.title for s in sections])):
        section.label, section.number = label, number
    if len(groups) == 1 or not (py_codes and cpp_codes):
        # The last section was computed from the last artifact of each kind: what tlparse shows.
        top = sections[-1].mappings
    else:
        top = line_mappings(json_object(text(mappings[-1])), pre_lines, text_lines(text(last(posts))),
                            lines_of(last(py_codes))[0], lines_of(last(cpp_codes))[0])
    # Complete: the maps are packed, as the results keep them until the pages are written (~4 KB, not ~19 KB a
    # compile). A map that is both a section's and the compile id's (one section) stays one object.
    kept: dict[int, KeptLineMap] = {}
    for section in sections:
        section.mappings = {k: _packed_once(v, kept) for k, v in section.mappings.items()}
        section.inferred_code_to_post = _packed_once(section.inferred_code_to_post, kept)
        section.inferred_post_to_code = _packed_once(section.inferred_post_to_code, kept)
    top = {k: _packed_once(v, kept) for k, v in top.items()}
    return CompileProvenance(entry.compile_id, entry.dir_name, top, sections)


def _packed_once(line_map: KeptLineMap, kept: dict[int, KeptLineMap]) -> KeptLineMap:
    found = kept.get(id(line_map))  # (ids of maps alive in the caller)
    if found is None:
        found = kept[id(line_map)] = packed(line_map)
    return found


def _add_kernel_links(section: ProvenanceSection, mapped: set[str], where: dict[str, list[int]], post: list[str],
                      run: RunLines | None = None) -> None:
    """Which kernels each code line calls, and inferred maps for kernels the node mappings miss.

    where: kernel_lines of the section's code, for the mapped kernels and those with stack traces."""
    for name in sorted(where):
        for line in where[name]:
            section.code_kernels.setdefault(line, []).append(name)
    unmapped = [k for k in section.kernels if k.name not in mapped and k.name in where]
    code_to_post: LineMap = {}
    post_to_code: LineMap = {}
    for name, post_lines in infer_kernel_nodes(unmapped, post, run).items():
        for line in where[name]:
            if line not in section.code_to_post:
                code_to_post.setdefault(line, []).extend(post_lines)
        for p in post_lines:
            if p not in section.post_to_code:
                post_to_code.setdefault(p, []).extend(where[name])
    section.inferred_code_to_post, section.inferred_post_to_code = code_to_post, post_to_code


def analyze_provenance(trace: Trace, files: SourceFiles = NO_FILES) -> Provenance:
    """files: the user's files as ingest read them (user_kernels.files_wanted)."""
    result = Provenance()
    parsed: dict[str, list[UserLine]] = {}
    texts: dict[str, str] = {}
    for entry in trace.compiles.values():
        run = run_lines(trace, entry)
        for a in entry.artifacts:
            if a.readable and a.filename.startswith(KERNEL_STACK_TRACES):
                result.kernels[a.number] = on_run_lines(kernel_traces(trace.payload_text(a.payload), parsed, texts), run)
        found = compile_provenance(trace, entry, result.kernels, run, files)  # each stack traces artifact parsed once
        if found is not None:
            result.compiles[entry.compile_id] = found
    place_other_graphs(result)
    return result


def place_other_graphs(provenance: Provenance) -> None:
    """Each section's other_graphs kernel, to the graph whose code calls it (ProvenanceSection.called_by): the last
    section whose stack traces were logged before this one's and list the same call (name and debug handle) as their
    own, with the same stack traces. torch 2.11 adds each graph's kernels to the list it has not cleared, so the
    leftovers are those of the graphs logged just before (in train_break_recompile, [0/0_1]'s backward holds [1/0]'s
    backward's, [0/1_1]'s backward its forward's); a handle restarts when the list is cleared, so the name alone could
    be an older graph's call."""
    order = sorted([(s.kernel_traces_artifact, cp, i, s) for cp in provenance.compiles.values()
                    for i, s in enumerate(cp.sections) if s.kernel_traces_artifact is not None and s.kernels],
                   key=lambda found: found[0])
    own: dict[tuple[str, tuple[str, ...]], GraphRef] = {}  # (kernel call, its stack traces) -> the last graph calling it
    for _, cp, i, s in order:
        others = set(s.other_graphs)
        for k in s.kernels:
            ref = own.get((k.name, tuple(k.traces))) if k.name in others else None
            if ref is not None:
                s.called_by[k.name] = ref
        ref = GraphRef(cp.compile_id, cp.dir_name, i, s.title, s.graph, s.label)
        for k in s.kernels:
            if k.name not in others:
                own[(k.name, tuple(k.traces))] = ref


def panel_lines(trace: Trace, panel: Panel, transform: Callable[[str], str] | None = None) -> list[str]:
    """The lines a panel shows, numbered from 1 as the mappings number them. transform: applied to the whole text
    before it is cut into lines; it must leave line ends as they are (a page's HTML escape: the lines come out each
    escaped, from one escape and one split)."""
    text = trace.payload_text(panel.payload)
    return text_lines(transform(text) if transform is not None else text)[panel.skip:]

"""The panels' texts as numbered lines, and tlparse's six line maps between them: node and kernel names -> line numbers."""

from __future__ import annotations

import bisect
import itertools
from typing import Any, Callable, Iterable

from ...lazy_regex import lazy_compile
from ...model.trace import Trace
from . import Panel, without_handle

LineMap = dict[int, list[int]]  # line number -> line numbers (1-based), as built
MAP_KEYS = ("preToPost", "postToPre", "pyCodeToPost", "postToPyCode", "cppCodeToPost", "postToCppCode")


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
    return without_leading_empty(text_lines(text))


def without_leading_empty(lines: list[str]) -> list[str]:
    start = 0
    while start < len(lines) and lines[start] == "":
        start += 1
    return lines[start:] if start else lines


def panel_lines(trace: Trace, panel: Panel, transform: Callable[[str], str] | None = None) -> list[str]:
    """The lines a panel shows, numbered from 1 as the mappings number them. transform: applied to the whole text
    before it is cut into lines; it must leave line ends as they are (a page's HTML escape: the lines come out each
    escaped, from one escape and one split)."""
    text = trace.payload_text(panel.payload)
    return text_lines(transform(text) if transform is not None else text)[panel.skip:]


# --- names -> line numbers (tlparse's rules) -----------------------------------------------------


def node_name(line: str) -> str | None:
    """The FX node a graph line defines: the text before '=' and then before ':' (stripped; None for a comment)."""
    name = name_part(line)
    return name if name and name[0] != "#" else None


def name_part(line: str) -> str:
    # (Cut before stripping, as the same text results: the whitespace around the line holds no '=' or ':'.)
    return line.partition("=")[0].partition(":")[0].strip()


def node_lines(lines: list[str]) -> dict[str, int]:
    # A name defined twice: the last line wins, as in tlparse. (One comprehension, not node_name per line:
    # a graph has thousands of lines.)
    return {name: i for i, name in enumerate(map(name_part, lines), 1) if name and name[0] != "#"}


# A node line's op: `aten.add` of `add = torch.ops.aten.add.Tensor(...)`.
_NODE_OP = lazy_compile(r"=\s*torch\.ops\.(?P<op>\w+\.\w+)\.")


class GraphLines:
    """A graph's lines, each cut once for all its readers: a post-grad graph of thousands of lines is read by
    node_lines, kernel_work and post_node_sources, which each cut every line again when handed a list."""

    __slots__ = ("lines", "names", "_ops")

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        # Each line's node name (node_name), None where it defines none: comments (and so names starting '#').
        self.names: list[str | None] = [name if name and name[0] != "#" else None for name in map(name_part, lines)]
        self._ops: list[str | None] | None = None

    def node_lines(self) -> dict[str, int]:
        """node_lines(self.lines)."""
        return {name: i for i, name in enumerate(self.names, 1) if name is not None}

    def ops(self) -> list[str | None]:
        """Each node line's op (`aten.add`), None where none: searched once, when first asked for (a graph whose
        calls need no ops, most of them, searches none)."""
        if self._ops is None:
            search = _NODE_OP.search
            self._ops = [m["op"] if name is not None and (m := search(line)) else None
                         for line, name in zip(self.lines, self.names)]
        return self._ops


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
    plain = [k for k in kernels if _indexable(without_handle(k)) and _indexable(k)]
    where = _occurrences(lines, start, {w for k in plain for w in (k, without_handle(k))})
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
    pure = without_handle(kernel)
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
        targets = [target[t] for t in names_in(mapping[name]) if t in target]
        if targets:
            result[line] = targets
    return result


def _kernels_to_post(mapping: dict, kernels: dict[str, list[int]], post: dict[str, int]) -> LineMap:
    result: LineMap = {}
    if not kernels:  # (the code of the other language, usually: nothing can map)
        return result
    for kernel in sorted(mapping):
        targets = [post[n] for n in names_in(mapping[kernel]) if n in post]
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
        targets = [line for k in names_in(mapping[node]) for line in kernels.get(k, ())]
        if targets:
            result[post[node]] = targets
    return result


def names_in(value: Any) -> list[str]:
    """The names a node mapping lists (its strings; none where it is no list: an odd log)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def dict_or_empty(value: Any) -> dict:
    """A node mapping's object, or an empty one where the log holds something else."""
    return value if isinstance(value, dict) else {}


def line_mappings(node_mappings: dict, pre: list[str], post: list[str], py_code: list[str], cpp_code: list[str]) -> dict[str, LineMap]:
    """The six line maps of tlparse's ``lineMappings`` from node mappings and the panel texts."""
    kernels = sorted(dict_or_empty(node_mappings.get("cppCodeToPost")))
    return line_maps(node_mappings, node_lines(pre), node_lines(post),
                      kernel_lines(py_code, kernels, "python"), kernel_lines(cpp_code, kernels, "cpp"))


def line_maps(node_mappings: dict, pre_nodes: dict[str, int], post_nodes: dict[str, int],
              py_kernels: dict[str, list[int]], cpp_kernels: dict[str, list[int]]) -> dict[str, LineMap]:
    """line_mappings from the texts' node lines and kernel lines (each text indexed once by the caller).

    The kernel lines may hold more kernels than ``cppCodeToPost``: only those count, as in tlparse."""
    code_to_post = dict_or_empty(node_mappings.get("cppCodeToPost"))  # named "cpp" but holds every kernel
    post_to_code = dict_or_empty(node_mappings.get("postToCppCode"))
    py_kernels, cpp_kernels = _only(py_kernels, code_to_post), _only(cpp_kernels, code_to_post)
    return {
        "preToPost": _names_to_lines(dict_or_empty(node_mappings.get("preToPost")), pre_nodes, post_nodes),
        "postToPre": _names_to_lines(dict_or_empty(node_mappings.get("postToPre")), post_nodes, pre_nodes),
        "pyCodeToPost": _kernels_to_post(code_to_post, py_kernels, post_nodes),
        "postToPyCode": _post_to_kernels(post_to_code, post_nodes, py_kernels),
        "cppCodeToPost": _kernels_to_post(code_to_post, cpp_kernels, post_nodes),
        "postToCppCode": _post_to_kernels(post_to_code, post_nodes, cpp_kernels),
    }


def _only(kernels: dict[str, list[int]], names: dict) -> dict[str, list[int]]:
    return {k: v for k, v in kernels.items() if k in names}

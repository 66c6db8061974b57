"""The code Dynamo runs instead of each compiled frame, per compile id, from what the log holds.

In order of preference: compilescope's own `compilescope_transformed_code` artifact (decompiled where the
code object was, by `run` / `capture()`), else torch's `<co_name>_MODIFIED_BYTECODE` disassembly (resume
functions only), decompiled here from its text.
"""

from __future__ import annotations

from typing import Any

from ..lazy_regex import lazy_compile
from ..decompile.recorded import HEADER, TRANSFORMED
from ..model.trace import Artifact, Compile, Trace
from ..model.records import dataclass
from .compiled_frames import compiled_frame
from .sources import SourceFile, Sources, line_anchor

MODIFIED_SUFFIX = "_MODIFIED_BYTECODE"
GUARDS = ("dynamo_cpp_guards_str", "dynamo_guards")
GRAPH = "dynamo_output_graph"
_COMPILED_FN = lazy_compile(r"\b__compiled_fn_\w+")


@dataclass
class TransformedCode:
    """The code torch ran instead of one compiled function (decompiled, or a disassembly)."""

    compile_id: str
    dir_name: str
    function: str
    source: str  # Python, or an annotated disassembly (all comments)
    decompiled: bool
    origin: str  # "recorded" (compilescope's hook) | "torch_bytecode" (decompiled from torch's dis text)
    note: str
    frame: tuple[str, int, str] | None  # (file, first line, co_name) of the code compiled: its first line tells it
    # from another function of the same name in the file
    graph_artifact: Artifact | None  # the compile id's dynamo_output_graph, which __compiled_fn_* runs
    guards_artifact: Artifact | None  # the guards that let it run
    compiled_fns: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "function": self.function, "decompiled": self.decompiled,
                "origin": self.origin, "note": self.note, "source": self.source,
                "frame": {"filename": self.frame[0], "line": self.frame[1]} if self.frame else None,
                "compiled_fns": self.compiled_fns}


def _first(entry: Compile, names: tuple[str, ...]) -> Artifact | None:
    return next((a for a in entry.artifacts if a.name in names), None)


def _transformed(trace: Trace, entry: Compile) -> tuple[str, str, bool, str, str] | None:
    """(function, source, decompiled, origin, note)"""
    for a in entry.artifacts:
        if a.name == TRANSFORMED:
            text = trace.payload_text(a.payload)
            first, _, body = text.partition("\n")
            if first.startswith(HEADER):
                name, _, what = first[len(HEADER):].partition(" (")
                ok = what.startswith("decompiled")
                return name, body, ok, "recorded", what.rstrip(")") if what else "recorded by compilescope"
            return "?", text, False, "recorded", "recorded by compilescope"
    for a in entry.artifacts:
        if a.name.endswith(MODIFIED_SUFFIX):
            from ..decompile.distext import decompile_dis  # here: most logs have no such artifact (start-up time)

            name = a.name[: -len(MODIFIED_SUFFIX)]
            result = decompile_dis(trace.payload_text(a.payload), name)
            if result is None:
                return name, trace.payload_text(a.payload), False, "torch_bytecode", "torch's disassembly, in a format not read"
            return (name, result.source, result.ok, "torch_bytecode",
                    "decompiled from torch's logged disassembly; the argument order is not in the log, so the "
                    "arguments are keyword-only" if result.ok else f"not decompiled: {result.problem}")
    return None


def transformed_code(trace: Trace) -> dict[str, TransformedCode]:
    """Compile directory name -> its transformed code."""
    found: dict[str, TransformedCode] = {}
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        got = _transformed(trace, entry)
        if got is None:
            continue
        name, source, ok, origin, note = got
        frame = compiled_frame(entry)
        graph = _first(entry, (GRAPH,))
        guards = _first(entry, GUARDS)
        found[entry.dir_name] = TransformedCode(
            str(entry.compile_id), entry.dir_name, name, source, ok, origin, note, frame,
            graph, guards,
            sorted(set(_COMPILED_FN.findall(source))))
    return found


@dataclass
class OriginalLines:
    """One row of the function's original lines beside its transformed code: a line, or the unquoted lines
    (text None) from first to last that land on one gap of its source page."""

    first: int
    last: int
    anchor: str  # the row's anchor on the source page
    text: str | None  # None: not quoted in the log


def original_lines(code: TransformedCode, sources: Sources) -> tuple[list[OriginalLines], SourceFile | None]:
    """The function's lines from its first (or resume) line, while they belong to it, and its source file (None, and
    no lines, where it has no page). Unquoted lines that land on one gap of the source page are one row: a log of a
    few bytes can put line 99,999 in the function."""
    if code.frame is None:
        return [], None
    f = sources.file(code.frame[0])
    if f is None:
        return [], None
    rows: list[OriginalLines] = []
    for first, last, text in f.function_lines(code.frame[1], code.frame[2]):
        anchor = f.anchor(first) or line_anchor(first)
        if text is None and rows and rows[-1].text is None and rows[-1].anchor == anchor:
            rows[-1].last = last
        else:
            rows.append(OriginalLines(first, last, anchor, text))
    return rows, f

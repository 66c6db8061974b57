"""What other analyses found, marked on the user's lines it is at: compile failures and crashes (add_failures), the
user's own Triton kernels (add_user_kernels), and what ran eagerly, all of it, because of a graph break elsewhere (a
function Dynamo skipped, a higher-order op's call: add_ran_eagerly, on the pages once they are made). The other
analyses' findings note_sources marks itself."""

from __future__ import annotations

from typing import Any, Callable

from ...model.ids import compilation_key
from ...model.trace import Trace
from ..crash import Crashes
from ..errors import CompileErrors, metrics_number
from ..graph_breaks import GraphBreaks
from ..user_kernels import UserKernels
from . import LineNotes, Sources
from .file_text import Quotes


def failed_compilations(trace: Trace) -> set[str]:
    """The compilations (compilation_key) whose compilation_metrics tell a failure (fail_type): Dynamo started on
    their frame, and nothing of it was compiled."""
    return {compilation_key(entry.compile_id) for entry in trace.metrics_compiles(sort=False)
            if entry.compile_id is not None and entry.metrics is not None and entry.metrics.get("fail_type")}


def add_failures(trace: Trace, errors: CompileErrors | None, crashed: Crashes | None,
                  at: Callable[[str, int], LineNotes | None], quotes: Quotes) -> None:
    """Each compile failure and crash on its user line, placed as errors.py and crash.py place them (not again here)."""
    # The attempt whose metrics tell a failure, by their artifact's number: its page shows the failure message.
    dirs = {metrics_number(entry): entry.dir_name for entry in trace.metrics_compiles() if entry.compile_id is not None}
    for error in errors.errors if errors is not None else ():
        loc = error.location
        n = at(loc.filename, loc.line) if loc is not None else None
        if loc is None or n is None:
            continue
        quotes.add(loc.filename, loc.line, loc.code)
        n.failures.append({"compile_id": error.compile_id, "dir": dirs.get(error.metrics_number),
                           "stage": error.stage_label, "exception": error.exception, "message": error.message,
                           "kind": error.location_kind, "fell_back": error.fell_back})
    for crash in crashed.crashes if crashed is not None else ():
        user = crash.user_frame
        n = at(user.filename, user.line) if user is not None else None
        if user is None or n is None:
            continue
        for frame in crash.frames:  # (an uncaught exception's traceback quotes its lines; faulthandler's does not)
            quotes.add(frame.filename, frame.line, frame.code)
        where = crash.where
        n.crashes.append({"error": crash.error, "exception": crash.exception, "thread": crash.thread,
                          # Where Python was, when not on this line (a native crash in a library it called)
                          "where": where.to_json() if where is not None and where is not user else None,
                          "during": crash.during, "compile_id": crash.compile_id})


def add_user_kernels(found: UserKernels, at: Callable[[str, int], LineNotes | None], quotes: Quotes) -> None:
    """Each of the user's own Triton kernels on its def line (its first decorator where only torch's line is known)
    and on the lines whose launch the graphs traced, with the compiles whose code holds it."""
    marks: dict[tuple[str, int, str, str], dict[str, Any]] = {}
    for k in found.kernels:
        places = [(k.defined_at, "decorated" if k.defined_at.line == k.decorator_line else "defined")] if k.defined_at else []
        places += [(u, "launched") for u in k.launched_at]
        for place, role in places:
            mark = marks.get((place.filename, place.line, k.name, role))
            if mark is None:
                n = at(place.filename, place.line)
                if n is None:
                    continue
                quotes.add(place.filename, place.line, place.code, place.function if role == "defined" else None)
                mark = marks[(place.filename, place.line, k.name, role)] = {
                    "kernel": k.name, "role": role, "compile_ids": [], "code_name": k.code_name,
                    "defined_at": k.defined_text if role == "launched" else None}
                n.user_kernels.append(mark)
            if k.compile_id not in mark["compile_ids"]:
                mark["compile_ids"].append(k.compile_id)


def add_ran_eagerly(result: Sources, breaks: GraphBreaks, errors: CompileErrors | None) -> None:
    """Marks what ran eagerly, all of it, though no break is on its lines: each line of a function Dynamo skipped
    after a break it could not resume from (the function's lines as its file shows them, its def line on), and each
    line that called a higher-order op whose function holds a break. The break's own line says the break."""
    skipped: dict[tuple[str, int, str | None], tuple[list[str], str]] = {}  # frame -> (compile ids, what it was)
    for brk in breaks.breaks:
        if brk.skipped_frame is not None and brk.skipped_text is not None:
            ids, _ = skipped.setdefault(brk.skipped_frame.key + (brk.skipped_frame.function,), ([], brk.skipped_text))
            ids.extend(c for c in brk.skipped_in if c not in ids)  # (not its other compiles: they skipped others)
    for err in errors.errors if errors is not None else ():
        if err.skipped_frame is not None and err.skipped_text is not None:
            ids, _ = skipped.setdefault(err.skipped_frame.key + (err.skipped_frame.function,), ([], err.skipped_text))
            if err.compile_id not in ids:
                ids.append(err.compile_id)
    for (path, first, function), (ids, text) in skipped.items():
        f = result.file(path)
        if f is None:
            continue
        for n, _, line_text in f.function_lines(first, function):
            if line_text is None or not line_text.strip():  # (a gap of a rebuilt file, or a blank line)
                continue
            note = {"kind": "skipped_frame", "function": function, "compile_ids": ids, "text": text}
            lines = f.note_at(n).ran_eagerly
            if note not in lines:
                lines.append(note)
    for brk in breaks.breaks:
        if brk.higher_order_op is None or brk.uncompiled_text is None:
            continue
        for call in brk.op_calls:
            f = result.file(call.filename)
            if f is None or not 0 < call.line <= f.line_count:
                continue
            note = {"kind": "higher_order_op", "op": brk.higher_order_op, "compile_ids": brk.compile_ids,
                    "text": brk.uncompiled_text}
            lines = f.note_at(call.line).ran_eagerly
            if note not in lines:
                lines.append(note)

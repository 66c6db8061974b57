"""What other analyses found, marked on the user's lines it is at: compile failures and crashes (add_failures), the
user's own Triton kernels (add_user_kernels), activation checkpointing's calls and recomputed ops (add_checkpointing),
max-autotune's searches (add_autotuning), compiled results that differ from eager's (add_numerics), custom ops that
write into arguments they do not declare, or whose stores torch found (add_op_mutations), AOTInductor packages
(add_aoti), and what ran eagerly, all of it, because of a graph break elsewhere (a function Dynamo skipped, a
higher-order op's call: add_ran_eagerly, on the pages once they are made). The other analyses' findings note_sources
marks through the steps of its other modules."""

from __future__ import annotations

from typing import Any

from ...model.ids import compilation_key
from ...model.trace import Trace
from ...wording import format_seconds
from ..activation_checkpoint import ActivationCheckpointing
from ..aoti import Aoti
from ..autotuning import Autotuning
from ..crash import Crashes
from ..compile_errors import CompileErrors, metrics_number
from ..graph_breaks import GraphBreaks
from ..numerics import Numerics
from ..op_mutations import OpMutations
from ..user_kernels import UserKernels
from . import NoteAt, Sources
from .file_text import Quotes


def failed_compilations(trace: Trace) -> set[str]:
    """The compilations (compilation_key) whose compilation_metrics tell a failure (fail_type): Dynamo started on
    their frame, and nothing of it was compiled."""
    return {compilation_key(entry.compile_id) for entry in trace.metrics_compiles(sort=False)
            if entry.compile_id is not None and entry.metrics is not None and entry.metrics.get("fail_type")}


def add_failures(trace: Trace, errors: CompileErrors | None, crashed: Crashes | None,
                  at: NoteAt, quotes: Quotes) -> None:
    """Each compile failure and crash on its user line, placed as compile_errors.py and crash.py place them (not again here)."""
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


def add_user_kernels(found: UserKernels, at: NoteAt, quotes: Quotes) -> None:
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


def add_checkpointing(checkpointing: ActivationCheckpointing, at: NoteAt, quotes: Quotes) -> None:
    """Where a graph captured activation checkpointing's calls ("calls": how many a line made), and where its backward
    recomputes ops of a line ("recomputed_ops": how many)."""
    for ckpt in checkpointing.compiles:
        for ckpt_site, what in [(c, "calls") for c in ckpt.calls] + [(r, "recomputed_ops") for r in ckpt.recomputed]:
            n = at(ckpt_site.path, ckpt_site.line)
            if n is not None:
                quotes.add(ckpt_site.path, ckpt_site.line, ckpt_site.code)
                n.checkpoint.append({"compile_id": ckpt.compile_id, what: ckpt_site.count})


def add_autotuning(autotuned: Autotuning, at: NoteAt, quotes: Quotes) -> None:
    """max-autotune's searches, each on the line of the op it was for, in the order they ran."""
    for search in autotuned.searches:
        n = at(search.site.filename, search.site.line) if search.site else None
        if n is not None and search.site is not None:
            quotes.add(search.site.filename, search.site.line, search.site.code)
            n.autotune.append({"compile_id": search.compile_id, "op": search.op, "shape": search.shape,
                               "best_kernel": search.best_kernel, "best_time": search.best_time_text,
                               "seconds": round(search.seconds, 6), "took": format_seconds(search.seconds),
                               "compile_notes": search.compile_notes})


def add_numerics(differ: Numerics, at: NoteAt, quotes: Quotes) -> None:
    """The lines whose compiled results differ from eager's (random ops, precision), and why."""
    for kind, lines in (("random", differ.random), ("precision", differ.precision)):
        for differing in lines:
            where = differing.location
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.numerics.append({"kind": kind, "compile_ids": differing.compile_ids, "ops": differing.ops,
                                   "why": differing.why})


def add_op_mutations(mutations: OpMutations, at: NoteAt, quotes: Quotes) -> None:
    """The custom ops writing into arguments they do not declare, marked (as numerics, each with its badge: what the
    line does) where they write, where compiled code calls them and where a read moved past them; and those whose
    store torch found (functionalized: advice), where they write and where they are called."""
    for op in mutations.ops:
        args = " and ".join(op.arguments)
        # (each with its badge: what the line does, not only that results differ)
        marks = [(w, op.compile_ids, op.write_note, f"writes {args}, undeclared") for w in op.writes]
        marks += [(c.location, [c.compile_id], op.call_note(c),
                   "call left out" if c.dropped else f"{op.op} writes {args}") for c in op.calls]
        marks += [(m.location, [c.compile_id], op.read_note(c, m), f"reads {args} after {op.op}")
                  for c in op.calls for m in c.moved_reads]
        for where, compile_ids, why, badge in marks:
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.numerics.append({"kind": "mutation", "compile_ids": compile_ids, "ops": [op.op], "why": why,
                                   "badge": badge})
    for op in mutations.functionalized:  # (torch found the store: advice, told in the INFO tone)
        stores = [(w, op.compile_ids, op.write_note, "store found by torch") for w in op.writes]
        stores += [(c.location, [c.compile_id], op.call_note(c), "store found by torch") for c in op.calls]
        for where, compile_ids, why, badge in stores:
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.found_stores.append({"op": op.op, "compile_ids": compile_ids, "why": why, "badge": badge})


def add_aoti(aoti: Aoti | None, at: NoteAt, quotes: Quotes) -> None:
    """Each AOTInductor package on the user's line that compiled it: what it accepts and holds, and its code's
    outputs."""
    for package in aoti.packages if aoti is not None else ():
        n = at(package.call.filename, package.call.line) if package.call is not None else None
        if package.call is not None and n is not None:
            quotes.add(package.call.filename, package.call.line, package.call.code)
            n.aoti.append({"accepts": package.accepts, "checks_need_env": package.checks_need_env,
                           "holds": package.contents.text if package.contents else None,
                           "wrapper_artifact": package.wrapper_artifact, "kernel_artifact": package.kernel_artifact})


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

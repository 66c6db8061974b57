"""Graphs compiled again without a frame's guard failing: compiled autograd's backward graphs ([!0], [!1], ..., one
per cache miss), and functions compiled from scratch after torch._dynamo.reset(), with the compile ids the reader
numbered on (after a reset, or as another process's)."""

from __future__ import annotations

from dataclasses import replace

from ...model.trace import Compile, Trace
from . import BackwardGraph, CompiledAfresh, RenumberedAfterReset, RenumberedOtherProcess
from .reasons import reasons_payload

BACKWARD_ARTIFACT = "compiled_autograd_compile_reasons"
# What "[!1]" is, said where a backward graph's label first appears: compile ids carry compiled_autograd_id as "!N/".
BACKWARD_LABEL_HELP = "compiled autograd numbers its backward graphs [!0], [!1], …; its compile ids start with !"


def compiled_afresh(trace: Trace) -> list[CompiledAfresh]:
    """The functions of the log compiled from scratch in several frames after torch._dynamo.reset(), where the
    reader numbered frames on (ingest/resets.py): one code object, several first compiles. Within one process: two
    processes' logs one after another (`cat a.log b.log`) compile a function once each, and no reset ran."""
    by_code: dict[tuple, dict[int | None, Compile]] = {}  # (process, code) -> frame id -> its first compile
    for cid, entry in trace.compiles.items():
        metrics = entry.metrics or {}
        if (cid is None or cid.compiled_autograd_id is not None or cid.frame_compile_id != 0
                or not metrics.get("co_name") or metrics.get("fail_type")):
            continue
        code = (entry.process_start, metrics.get("co_filename"), metrics.get("co_firstlineno"), metrics.get("co_name"))
        # (a restarted attempt is the same compile: one per frame id, in log order; a dict, as a log of 30,000
        # frames of one function made this quadratic)
        by_code.setdefault(code, {}).setdefault(cid.frame_id, entry)
    found = []
    for (_, filename, first_line, name), frames in by_code.items():
        entries = list(frames.values())
        if len(entries) > 1 and any(e.renumbered_by_reset for e in entries):
            found.append(CompiledAfresh(name, filename, first_line, [e.compile_id.compilation for e in entries],
                                        [f"[{e.logged_frame_id if e.logged_frame_id is not None else e.compile_id.frame_id}"
                                         f"/{e.compile_id.frame_compile_id}]" for e in entries],
                                        [e.compile_id.compilation for e in entries if e.renumbered_by_reset]))
    return found


def renumbered_after_reset(trace: Trace) -> list[RenumberedAfterReset]:
    """Every compile id of the log the reader numbered on after a reset, in log order."""
    return [RenumberedAfterReset(str(cid), str(replace(cid, frame_id=entry.logged_frame_id)))
            for cid, entry in trace.compiles.items() if cid is not None and entry.renumbered_by_reset]


def renumbered_other_process(trace: Trace) -> list[RenumberedOtherProcess]:
    """Every compile id of the log the reader numbered on as another process's, and not after a reset in it."""
    return [RenumberedOtherProcess(str(cid), str(replace(cid, frame_id=entry.logged_frame_id)), entry.process_pid)
            for cid, entry in trace.compiles.items()
            if cid is not None and entry.process_start is not None and not entry.renumbered_by_reset]


def backward_graphs(trace: Trace) -> list[BackwardGraph]:
    """Compiled autograd's graphs, [!0], [!1], ..., with the compiles of each and why its cache missed."""
    graphs: dict[int, BackwardGraph] = {}
    for cid in sorted((c for c in trace.compiles if c is not None and c.compiled_autograd_id is not None),
                      key=lambda c: c.sort_key()):
        graph = graphs.setdefault(cid.compiled_autograd_id, BackwardGraph(cid.compiled_autograd_id, []))
        graph.compile_ids.append(str(cid))
        for artifact in trace.compiles[cid].artifacts:
            if artifact.name == BACKWARD_ARTIFACT:
                graph.reason = _backward_reason(graph.id, reasons_payload(trace.payload_text(artifact.payload)))
    return list(graphs.values())


def _backward_reason(graph_id: int, reasons: list[str]) -> str | None:
    """This graph's reason among its cache's ("!1: Cache miss due to ...", one per capture so far)."""
    prefix = f"!{graph_id}: "
    mine = next((r for r in reversed(reasons) if r.startswith(prefix)), reasons[-1] if reasons else None)
    return mine[len(prefix):] if mine and mine.startswith(prefix) else mine

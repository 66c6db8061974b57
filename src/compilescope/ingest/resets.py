"""Compile ids after torch._dynamo.reset(): torch counts frames from 0 again, so one log names two compilations
"[0/0]" (a program that resets in a loop compiles a function as [0/0] each time). Reading them as one merges
different functions' metrics, guards and times; the frames after each reset are numbered on from the highest
frame seen, and each such compile keeps the frame id torch logged (Compile.logged_frame_id).

A log can also hold several processes' logs one after another (`cat a.log b.log`, two runs of a program): each
process counts its frames from 0, and no reset ran. Each process (its glog pid) is numbered on from the highest frame
seen when it first logs a compile, and its resets are told apart within it alone.
"""

from __future__ import annotations

from ..model.ids import CompileId
from .envelope import Envelope

# A chromium "dynamo" begin event: the first record of a compile (before its dynamo_start), as torch writes it.
_DYNAMO_BEGIN = (b'"name": "dynamo",', b'"ph": "B"')


def _logged_at(env: Envelope) -> tuple:
    """When the record was logged, as its glog prefix says (month, day, time, micros): comparable within a log."""
    glog = env.glog
    return (glog.month, glog.day, glog.time, glog.micros) if glog is not None else ()


def _starts_compile(env: Envelope) -> bool:
    if env.kind == "dynamo_start":
        return True
    buffer = env.payload_buffer
    if env.kind != "chromium_event" or buffer is None:
        return False
    head = buffer.getvalue()[:200]
    return all(part in head for part in _DYNAMO_BEGIN)


class _ProcessNumbering:
    """One process's numbering: what its frame ids are offset by since its last reset."""

    __slots__ = ("start", "offset", "finished", "placed")

    def __init__(self, start: int) -> None:
        self.start = start  # the offset of its first frames: 0 for the log's first process
        self.offset = start  # added to the frame ids torch logs since its last reset
        # (frame, frame compile) with compilation_metrics -> when that record was logged
        self.finished: dict[tuple[int, int | None], tuple] = {}
        self.placed: dict[CompileId, CompileId] = {}


class FrameRenumbering:
    """Per log: the compile id each envelope belongs to, with the frames after each reset, and those of each process
    after the log's first, numbered on."""

    __slots__ = ("top", "resets", "new_processes", "start", "_processes")

    def __init__(self) -> None:
        self.top = -1  # the highest frame id placed so far
        self.resets: list[int] = []  # the log line of each reset's first compile record
        self.new_processes: list[int] = []  # the log line of the first compile record of each process after the first
        self.start = 0  # the last placed envelope's process's start (_ProcessNumbering.start)
        self._processes: dict[int | None, _ProcessNumbering] = {}  # by glog pid

    def place(self, env: Envelope) -> CompileId | None:
        cid = env.compile_id
        if cid is None or cid.frame_id is None or cid.compiled_autograd_id is not None:
            return cid
        pid = env.glog.pid if env.glog is not None else None
        process = self._processes.get(pid)
        if process is None:
            process = self._processes[pid] = _ProcessNumbering(self.top + 1 if self._processes else 0)
            if process.start:
                self.new_processes.append(env.lineno)
        self.start = process.start
        frame = (cid.frame_id, cid.frame_compile_id)
        # A compilation that already finished starts again (attempt 0: not Dynamo's restart after a graph break),
        # after it finished: only a reset makes torch reuse its id. A start logged before that finish is the same
        # records logged twice (a copied block of the log), not a new compilation. Within one process: another
        # process's clock and ids say nothing of this one's.
        if (not cid.attempt and frame in process.finished and _starts_compile(env)
                and _logged_at(env) >= process.finished[frame]):
            process.offset = self.top + 1
            process.finished = {}
            process.placed = {}
            self.resets.append(env.lineno)
        if env.kind == "compilation_metrics":
            process.finished[frame] = _logged_at(env)
        if process.offset:
            placed = process.placed.get(cid)
            if placed is None:
                placed = process.placed[cid] = CompileId(None, cid.frame_id + process.offset, cid.frame_compile_id,
                                                         cid.attempt)
            cid = placed
        if cid.frame_id > self.top:  # type: ignore[operator]
            self.top = cid.frame_id  # type: ignore[assignment]
        return cid


def relabel(text: object, env: Envelope) -> object:
    """A compile id written inside a record ("0/1": chromium args, compilation_metrics) as placed, where its frame was
    renumbered; anything else as it is."""
    placed, logged = env.compile_id, env.obj.get("frame_id")
    if placed is None or placed.frame_id == logged or not isinstance(text, str):
        return text
    prefix = f"{logged}/"
    return f"{placed.frame_id}/{text[len(prefix):]}" if text.startswith(prefix) else text

"""The log's compiles indexed once (compile_index: CompileIndex, made of _Piece, a class no other module may import), and
what the calls before a recompile ran compiled of the frame it made Dynamo skip (ran_before), which the graph-breaks
section and the errors read from it. Made only where a break or a failure made Dynamo skip a frame, which imports it
there (most logs skip none: its import is not every report's start-up).
"""

from __future__ import annotations

import bisect

from ...model.ids import compilation_key
from ...model.records import dataclass
from ...model.trace import Compile, Trace
from . import DISPATCH, RanBefore
from .resume_names import resume_of


@dataclass
class _Piece:
    """A compile that succeeded, as ran_before counts it."""

    key: str  # "[5/0]"
    frame_id: int
    frame_compile_id: int | None
    started: int  # the log line it started at
    ops: int  # its graph's ops (0: none, or not logged)


@dataclass
class CompileIndex:
    """The log's compiles, indexed once for what is asked of each failed compile and each break (ran_before,
    dispatch_compiled_alone): scanning every compile for each of them took time in the square of the compiles (a log of
    4000 skipped recompiles: 7 minutes)."""

    # Successful compiles by (compiled autograd id, file, frame id), in compile id order.
    frames: dict[tuple[int | None, str, int], list[_Piece]]
    # Successful compiles of Dynamo's resume functions by (compiled autograd id, file, the function resumed), by frame
    # id, each with the line of the break it resumes after.
    resumes: dict[tuple[int | None, str, str], list[tuple[_Piece, int]]]
    # The first lines of the functions of each (file, name) compiled as frames, ascending: several classes of a file
    # may each have a `forward`.
    definitions: dict[tuple[str, str], list[int]]
    # Each compile's start line, ascending, and the largest frame id among the compiles started up to it: no compile
    # of a frame above that id started before the next start.
    starts: list[int]
    frames_by_then: list[int]
    # The compiles of each __torch_dispatch__ frame, by frame id, in compile id order.
    dispatch: dict[int, list[Compile]]

    def definition(self, filename: str, function: str, line: int) -> int | None:
        """The first line of the function named `function` in filename that line is in: the last one compiled that
        starts at it or above (None: none compiled)."""
        firsts = self.definitions.get((filename, function), [])
        i = bisect.bisect_right(firsts, line)
        return firsts[i - 1] if i else None

    def last_frame_before(self, line: int) -> int:
        """The largest frame id a compile started before the log's line had (-1: none)."""
        i = bisect.bisect_left(self.starts, line)
        return self.frames_by_then[i - 1] if i else -1


def compile_index(trace: Trace) -> CompileIndex:
    """trace's CompileIndex."""
    frames: dict[tuple[int | None, str, int], list[_Piece]] = {}
    resumes: dict[tuple[int | None, str, str], list[tuple[_Piece, int]]] = {}
    definitions: dict[tuple[str, str], set[int]] = {}
    dispatch: dict[int, list[Compile]] = {}
    started: list[tuple[int, int]] = []
    for entry in trace.sorted_compiles():
        cid, m = entry.compile_id, entry.metrics or {}
        if cid is None or cid.frame_id is None:
            continue
        started.append((entry.first_lineno, cid.frame_id))
        name = m.get("co_name") or (entry.stack[-1].name if entry.stack else None)
        if name == DISPATCH:
            dispatch.setdefault(cid.frame_id, []).append(entry)
        if not m.get("co_name"):
            continue
        name, filename = str(m["co_name"]), str(m.get("co_filename"))
        resumed = resume_of(name)
        first = m.get("co_firstlineno")
        if resumed is None and isinstance(first, int):
            definitions.setdefault((filename, name), set()).add(first)
        if m.get("fail_type"):
            continue
        ops = m.get("graph_op_count")
        piece = _Piece(compilation_key(cid), cid.frame_id, cid.frame_compile_id, entry.first_lineno,
                       ops if isinstance(ops, int) else 0)
        frames.setdefault((cid.compiled_autograd_id, filename, cid.frame_id), []).append(piece)
        if resumed is not None:
            resumes.setdefault((cid.compiled_autograd_id, filename, resumed[0]), []).append((piece, resumed[1]))
    started.sort()
    frames_by_then, largest = [], -1
    for _, frame_id in started:
        largest = max(largest, frame_id)
        frames_by_then.append(largest)
    return CompileIndex(frames=frames, resumes=resumes, definitions={k: sorted(v) for k, v in definitions.items()},
                        starts=[line for line, _ in started], frames_by_then=frames_by_then, dispatch=dispatch)


def ran_before(index: CompileIndex, failed: Compile) -> RanBefore | None:
    """What the calls before `failed` ran compiled of the frame it failed to compile, where Dynamo then skipped that
    frame (a recompile that met a break it could not resume from); None where no earlier compile of the frame
    succeeded (then no call ran it compiled). index: the log's (compile_index)."""
    cid, metrics = failed.compile_id, failed.metrics or {}
    if cid is None or cid.frame_id is None or not cid.frame_compile_id or not metrics.get("co_name"):
        return None
    name, filename = str(metrics["co_name"]), str(metrics.get("co_filename"))
    pieces = [p for p in index.frames.get((cid.compiled_autograd_id, filename, cid.frame_id), [])
              if p.frame_compile_id is not None and p.frame_compile_id < cid.frame_compile_id]
    if not pieces:
        return None
    compiles = [p.key for p in pieces]
    resumed = resume_of(name)
    first = metrics.get("co_firstlineno")
    function, from_line, defined_at = (
        (resumed[0], resumed[1], index.definition(filename, resumed[0], resumed[1])) if resumed
        else (name, 0, first if isinstance(first, int) else None))
    # The resume functions after the frame's later breaks: entered only from the frame's code. Only those this frame's
    # breaks made: Dynamo made each while compiling the frame or one of them, so each is a frame first compiled after
    # it (a larger frame id), of the same function (the one named so that starts last at or above its break's line),
    # and, to have run before, started before the failed compile.
    after = index.resumes.get((cid.compiled_autograd_id, filename, function), [])

    def frame_id(resume: tuple[_Piece, int]) -> int:
        return resume[0].frame_id

    # (by bisection on the pieces themselves: a list of their ids, made for each failure, cost the file's resumes)
    lo = bisect.bisect_right(after, cid.frame_id, key=frame_id)
    hi = bisect.bisect_right(after, index.last_frame_before(failed.first_lineno), key=frame_id)
    pieces += [p for p, line in after[lo:hi] if line >= from_line and p.started < failed.first_lineno
               and index.definition(filename, function, line) == defined_at]
    pieces.sort(key=lambda p: (p.frame_id, p.frame_compile_id or 0))
    by_key = {p.key: p.ops for p in pieces}
    return RanBefore(compiles=list(dict.fromkeys(compiles)), pieces=list(by_key), ops=sum(by_key.values()))

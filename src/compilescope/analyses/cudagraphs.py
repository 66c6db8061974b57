"""CUDA graphs (mode="reduce-overhead"): which compiles ran as graphs, how often each was recorded, and why
Inductor skipped them where it did.

- `cudagraph_skip_reason` in a compile's compilation_metrics: Inductor's reason for running the compiled code
  without CUDA graphs (a CPU tensor, dynamic shapes, ...), when it decided while compiling;
- CUDA graph trees' chromium events (Trace.cudagraph_events): `cudagraphify.get_container` when a graph is set up
  for a new input shape at its first call, `CUDAGraphNode.record` for each recording. A graph set up and never
  recorded ran without CUDA graphs: Inductor decides some skips at that first call (mutated inputs, say) and then
  says why on stderr only, and a backward left pending, or a single call, leaves nothing to record either;
- `compilescope_cudagraph_skip` artifacts, written by `run` and `capture()` (bytecode_capture.py) from that stderr
  warning: the reason of a skip decided at the first run, given to the graph set up, and never recorded, nearest to it.
  Where the log says those recorders were on (`compilescope_recorders`: the skips and torch's warnings), a graph set up
  and never recorded with no skip and no backward left pending was not skipped: it ran once. CUDA graph trees run a
  graph's first call as a warm-up and record it at the second (a prefill run once per prompt length). Without the
  recorders the log cannot tell that from a skip.

The compilation_metrics_runtime records' `runtime_cudagraphify_time_us` are not counted: torch writes one for a
set-up as for a recording, so they cannot tell a graph recorded from one skipped.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

import orjson

from ..model.ids import CompileId
from ..model.records import dataclass
from ..decompile.recorded import CUDAGRAPH_SKIP
from ..model.trace import CUDAGRAPH_RECORD, CUDAGRAPH_SETUP, Trace
from .compile_time import event_compile_id, finite_number
from .torch_warnings import PENDING_BACKWARD, TorchWarning, TorchWarnings, recorded_kinds, torch_warnings
from .user_locations import UserLocation, is_framework_file, last_code_frame, traceback_frames


NEVER_RECORDED = "never recorded (set up at its first call; the log does not say why)"
BACKWARD_PENDING = "a backward was still pending"
# Why a graph never recorded ran without CUDA graphs, where torch warned of a backward left pending (recorded by run
# or capture(), or read from the stderr saved beside the log): the one wording of the summary, diff, check and ranks
NEVER_RECORDED_PENDING = f"never recorded: torch warned that {BACKWARD_PENDING}"


@dataclass
class CudaGraphCompile:
    """One compile that CUDA graphs ran, or skipped."""

    compile_id: str
    name: str | None  # the function compiled (co_name)
    skip_reason: str | None  # why Inductor ran it without CUDA graphs (None: it did not say it skipped)
    recordings_ms: list[float] = field(default_factory=list)  # each recording of its graph, in the order they ran
    # The user line torch names in the reason ("Found from: File ..."), else the innermost line of a library's code there
    skip_location: UserLocation | None = None
    setups: int = 0  # graphs set up at a first call, one per input shape (0: the log has no such events)
    skipped_at_first_run: bool = False  # the skip reason is the warning torch printed at the graph's first run
    # Set up and never recorded, and not skipped (the run recorded torch's skips and warnings: none for it): it ran
    # once, the warm-up call that CUDA graph trees run before recording a graph at its second
    ran_once: bool = False
    # Never recorded, and torch warned that a backward was still pending: why (CudaGraphs.never_recorded_warning)
    backward_pending: bool = False

    @property
    def never_recorded(self) -> bool:
        """Set up for CUDA graphs at its first call, yet never recorded, and the log does not say why (ran once, or
        skipped with the reason on stderr only)."""
        return bool(self.setups) and not self.recordings_ms and not self.skip_reason and not self.ran_once

    @property
    def set_up_per_shape(self) -> str | None:
        """"set up 2 times, once per input shape": a graph never recorded, set up for more than one shape. Each set-up
        is a graph of its own (one per input size, even of a dynamic compile), each recorded once it can be."""
        if self.setups < 2 or self.recordings_ms:  # (recorded: its recordings count the shapes)
            return None
        return f"set up {_times(self.setups)}, once per input shape"

    @property
    def without_graphs_because(self) -> str | None:
        """Why it ran without CUDA graphs, in a line (None: it ran with them)."""
        if self.skip_summary or not self.never_recorded:
            return self.skip_summary
        return NEVER_RECORDED_PENDING if self.backward_pending else NEVER_RECORDED

    @property
    def skip_summary(self) -> str | None:
        """The reason's first line, without torch's "Found from :" (the lines after it say where)."""
        if not self.skip_reason:
            return None
        first = self.skip_reason.strip().splitlines()[0].rstrip()
        return first.removesuffix("Found from :").removesuffix("Found from:").rstrip(" .") or first

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "name": self.name, "skip_reason": self.skip_reason,
                "skip_location": self.skip_location.to_json() if self.skip_location else None,
                "skipped_at_first_run": self.skipped_at_first_run, "setups": self.setups,
                "recordings_ms": [round(ms, 3) for ms in self.recordings_ms], "never_recorded": self.never_recorded,
                "ran_once": self.ran_once, "set_up_per_shape": self.set_up_per_shape,
                "backward_pending": self.backward_pending}


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


@dataclass
class CudaGraphs:
    """The compiles CUDA graphs recorded or skipped, in compile order (none: the log used no CUDA graphs)."""

    compiles: list[CudaGraphCompile] = field(default_factory=list)
    # What torch printed that explains the graphs never recorded ("... pending, uninvoked backwards"), when the run
    # recorded its warnings or its stderr was saved beside the log (analyses/torch_warnings.py)
    never_recorded_warning: str | None = None

    def __bool__(self) -> bool:
        return bool(self.compiles)

    @property
    def skipped(self) -> list[CudaGraphCompile]:
        return [c for c in self.compiles if c.skip_reason]

    @property
    def recorded_again(self) -> list[CudaGraphCompile]:
        """Compiles whose graph was recorded more than once (new input shapes)."""
        return [c for c in self.compiles if len(c.recordings_ms) > 1]

    @property
    def never_recorded(self) -> list[CudaGraphCompile]:
        return [c for c in self.compiles if c.never_recorded]

    @property
    def ran_once(self) -> list[CudaGraphCompile]:
        return [c for c in self.compiles if c.ran_once]

    @property
    def without_graphs(self) -> list[CudaGraphCompile]:
        """Compiles that ran without CUDA graphs: skipped by Inductor, or never recorded."""
        return [c for c in self.compiles if c.without_graphs_because]

    def to_json(self) -> dict[str, Any]:
        return {"compiles": [c.to_json() for c in self.compiles], "never_recorded_warning": self.never_recorded_warning}


def cudagraphs(trace: Trace, printed: TorchWarnings | None = None) -> CudaGraphs:
    """printed: the log's torch_warnings(trace), where the caller has it already (read here otherwise)."""
    by_frame: dict[tuple, str] = {}  # (compiled autograd id, frame, frame compile) -> the compile's last attempt
    for entry in trace.sorted_compiles():
        if entry.compile_id is not None:
            c = entry.compile_id
            by_frame[(c.compiled_autograd_id, c.frame_id, c.frame_compile_id)] = entry.key
    setups, recordings = _graph_events(trace.cudagraph_events, by_frame)
    at_first_run, unplaced = _first_run_skips(trace, setups, recordings)
    result = CudaGraphs()
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        metrics = entry.metrics or {}
        skip = metrics.get("cudagraph_skip_reason")
        skip = skip if isinstance(skip, str) and skip else None
        key = entry.key
        first_run = skip is None and key in at_first_run
        skip = skip or at_first_run.get(key)
        if skip or key in setups or key in recordings:
            name = metrics.get("co_name")
            users = [f for f in traceback_frames(skip) if not is_framework_file(f.filename)] if skip else []
            # No line of the user's: the innermost of a library's (transformers' cache, `self.cumulative_length.add_`)
            where = users[-1] if users else last_code_frame(skip, _FOUND_FROM) if skip else None
            result.compiles.append(CudaGraphCompile(key, name if isinstance(name, str) else None, skip,
                                                    recordings.get(key, []), where, len(setups.get(key, [])),
                                                    first_run))
    unexplained = result.never_recorded
    if not unexplained:
        return result
    printed = printed if printed is not None else torch_warnings(trace)
    pending = _backward_left_pending(printed)
    if pending is not None:  # stderr names no compile: the graphs it kept from recording are these
        result.never_recorded_warning = pending.headline
        for graphed in unexplained:
            graphed.backward_pending = True
    # (a recorded skip given to no graph may be one of these: then none is known to have run once)
    elif not unplaced and {"cudagraph_skips", "warnings"} <= recorded_kinds(trace):
        for graphed in unexplained:
            graphed.ran_once = True
    return result


def _backward_left_pending(printed: TorchWarnings) -> TorchWarning | None:
    """torch's warning that a graph could not replay while a backward was pending (a graph then never records)."""
    return next((w for w in printed.warnings if w.name == PENDING_BACKWARD), None)


_FOUND_FROM = ("Found from :", "Found from:")
_SAME_MOMENT_US = 1e6  # a first-run skip is logged while its graph is set up: at most this far from the set-up


def _first_run_skips(trace: Trace, setups: dict[str, list[tuple[float, float]]],
                     recordings: dict[str, list[float]]) -> tuple[dict[str, str], int]:
    """compile -> the skip warning compilescope's recorder wrote at its graph's first run (run, capture()), and how
    many such warnings were given to no graph.

    The warning carries no compile id: it goes to the graph set up, and never recorded, nearest to it in time."""
    unrecorded = {key: spans for key, spans in setups.items() if key not in recordings}
    found: dict[str, str] = {}
    unplaced = 0
    for entry in trace.compiles.values():
        if entry.compile_id is not None:  # logged while compiling: the compile's metrics hold that reason
            continue
        for a in entry.artifacts:
            if a.name != CUDAGRAPH_SKIP:
                continue
            try:
                record = orjson.loads(trace.payload_text(a.payload))
            except ValueError:
                unplaced += 1
                continue
            message = record.get("message") if isinstance(record, dict) else None
            when = finite_number(record.get("time")) if isinstance(record, dict) else None
            if not isinstance(message, str) or when is None:
                unplaced += 1
                continue
            distance = {key: min(max(start - when * 1e6, when * 1e6 - end, 0.0) for start, end in spans)
                        for key, spans in unrecorded.items() if key not in found}
            nearest = min(distance, key=distance.__getitem__, default=None)
            if nearest is not None and distance[nearest] <= _SAME_MOMENT_US:
                found[nearest] = message
            else:
                unplaced += 1
    return found, unplaced


def _graph_events(events: list[dict], by_frame: dict[tuple, str]) -> tuple[dict[str, list[tuple[float, float]]],
                                                                           dict[str, list[float]]]:
    """Per compile: each graph's set-up (its start and end, in µs), and the milliseconds of each recording."""
    setups: dict[str, list[tuple[float, float]]] = {}
    recordings: dict[str, list[float]] = {}
    begun: dict[tuple, float] = {}
    for event in events:
        ph, name, ts = event.get("ph"), event.get("name"), finite_number(event.get("ts"))
        args = event.get("args")
        text = event_compile_id(args.get("compile_id")) if isinstance(args, dict) else None
        cid = CompileId.parse(text) if text else None
        key = by_frame.get((cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)) if cid else None
        if key is None or ts is None or name not in (CUDAGRAPH_SETUP, CUDAGRAPH_RECORD):
            continue
        track = (name, key, event.get("pid"), event.get("tid"))
        if ph == "X" or ph == "B":
            duration = max(0.0, finite_number(event.get("dur")) or 0.0) if ph == "X" else 0.0
            if name == CUDAGRAPH_SETUP:  # counted at its start (a crash may leave it unended)
                setups.setdefault(key, []).append((ts, ts + duration))
            elif ph == "X":
                recordings.setdefault(key, []).append(duration / 1000)
            if ph == "B":
                begun[track] = ts
        elif ph == "E":
            start = begun.pop(track, None)
            if start is None:
                continue
            if name == CUDAGRAPH_SETUP:
                spans = setups[key]
                spans[-1] = (spans[-1][0], ts)
            else:
                recordings.setdefault(key, []).append(max(0.0, ts - start) / 1000)
    return setups, recordings

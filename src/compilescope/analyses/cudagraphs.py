"""CUDA graphs (mode="reduce-overhead"): which compiles ran as graphs, how often each was recorded, and why
Inductor skipped them where it did.

- `cudagraph_skip_reason` in a compile's compilation_metrics: Inductor's reason for running the compiled code
  without CUDA graphs (a CPU tensor, dynamic shapes, ...), when it decided while compiling;
- CUDA graph trees' chromium events (Trace.cudagraph_events): `cudagraphify.get_container` when a graph is set up
  for a new input shape at its first call, `CUDAGraphNode.record` for each recording. A graph set up and never
  recorded ran without CUDA graphs: Inductor decides some skips at that first call (mutated inputs, say) and then
  says why on stderr only, and a backward left pending, or a single call, leaves nothing to record either.

The compilation_metrics_runtime records' `runtime_cudagraphify_time_us` are not counted: torch writes one for a
set-up as for a recording, so they cannot tell a graph recorded from one skipped.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..model.ids import CompileId
from ..model.records import dataclass
from ..model.trace import CUDAGRAPH_RECORD, CUDAGRAPH_SETUP, Trace
from .compile_time import event_compile_id, finite_number
from .userloc import UserLocation, is_framework_file, traceback_frames


NEVER_RECORDED = "never recorded (set up at its first call; the log does not say why)"


@dataclass
class CudaGraphCompile:
    """One compile that CUDA graphs ran, or skipped."""

    compile_id: str
    name: str | None  # the function compiled (co_name)
    skip_reason: str | None  # why Inductor ran it without CUDA graphs (None: it did not say it skipped)
    recordings_ms: list[float] = field(default_factory=list)  # each recording of its graph, in the order they ran
    skip_location: UserLocation | None = None  # the user line torch names in the reason ("Found from: File ...")
    setups: int = 0  # graphs set up at a first call, one per input shape (0: the log has no such events)

    @property
    def never_recorded(self) -> bool:
        """Set up for CUDA graphs at its first call, yet never recorded, and torch's log does not say why."""
        return bool(self.setups) and not self.recordings_ms and not self.skip_reason

    @property
    def without_graphs_because(self) -> str | None:
        """Why it ran without CUDA graphs, in a line (None: it ran with them)."""
        return self.skip_summary or (NEVER_RECORDED if self.never_recorded else None)

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
                "setups": self.setups, "recordings_ms": [round(ms, 3) for ms in self.recordings_ms],
                "never_recorded": self.never_recorded}


@dataclass
class CudaGraphs:
    """The compiles CUDA graphs recorded or skipped, in compile order (none: the log used no CUDA graphs)."""

    compiles: list[CudaGraphCompile] = field(default_factory=list)

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
    def without_graphs(self) -> list[CudaGraphCompile]:
        """Compiles that ran without CUDA graphs: skipped by Inductor, or never recorded."""
        return [c for c in self.compiles if c.without_graphs_because]

    def to_json(self) -> dict[str, Any]:
        return {"compiles": [c.to_json() for c in self.compiles]}


def cudagraphs(trace: Trace) -> CudaGraphs:
    by_frame: dict[tuple, str] = {}  # (compiled autograd id, frame, frame compile) -> the compile's last attempt
    for entry in trace.sorted_compiles():
        if entry.compile_id is not None:
            c = entry.compile_id
            by_frame[(c.compiled_autograd_id, c.frame_id, c.frame_compile_id)] = entry.key
    setups, recordings = _graph_events(trace.cudagraph_events, by_frame)
    result = CudaGraphs()
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        metrics = entry.metrics or {}
        skip = metrics.get("cudagraph_skip_reason")
        skip = skip if isinstance(skip, str) and skip else None
        key = entry.key
        if skip or key in setups or key in recordings:
            name = metrics.get("co_name")
            users = [f for f in traceback_frames(skip) if not is_framework_file(f.filename)] if skip else []
            result.compiles.append(CudaGraphCompile(key, name if isinstance(name, str) else None, skip,
                                                    recordings.get(key, []), users[-1] if users else None,
                                                    setups.get(key, 0)))
    return result


def _graph_events(events: list[dict], by_frame: dict[tuple, str]) -> tuple[dict[str, int], dict[str, list[float]]]:
    """Per compile: graphs set up, and the milliseconds of each recording (a begin and its end, on one thread)."""
    setups: dict[str, int] = {}
    recordings: dict[str, list[float]] = {}
    begun: dict[tuple, float] = {}
    for event in events:
        ph, name, ts = event.get("ph"), event.get("name"), finite_number(event.get("ts"))
        args = event.get("args")
        text = event_compile_id(args.get("compile_id")) if isinstance(args, dict) else None
        cid = CompileId.parse(text) if text else None
        key = by_frame.get((cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)) if cid else None
        if key is None or ts is None:
            continue
        if name == CUDAGRAPH_SETUP and ph in ("B", "X"):
            setups[key] = setups.get(key, 0) + 1
        elif name == CUDAGRAPH_RECORD and ph == "X":
            recordings.setdefault(key, []).append(max(0.0, finite_number(event.get("dur")) or 0.0) / 1000)
        elif name == CUDAGRAPH_RECORD and ph == "B":
            begun[(key, event.get("pid"), event.get("tid"))] = ts
        elif name == CUDAGRAPH_RECORD and ph == "E":
            start = begun.pop((key, event.get("pid"), event.get("tid")), None)
            if start is not None:
                recordings.setdefault(key, []).append(max(0.0, ts - start) / 1000)
    return setups, recordings

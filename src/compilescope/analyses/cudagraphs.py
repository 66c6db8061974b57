"""CUDA graphs (mode="reduce-overhead"): which compiles ran as graphs, how often each was recorded, and why
Inductor skipped them where it did.

From torch's compilation metrics: `cudagraph_skip_reason` in a compile's compilation_metrics (Inductor's reason
for running the compiled code without CUDA graphs: mutated inputs, a CPU tensor, dynamic shapes, ...), and
`runtime_cudagraphify_time_us` in its compilation_metrics_runtime records, one per recording of the graph (the
first call, then each new input shape: every recording costs time and GPU memory).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..model.records import dataclass
from ..model.trace import Trace
from .userloc import UserLocation, is_framework_file, traceback_frames


@dataclass
class CudaGraphCompile:
    """One compile that CUDA graphs ran, or skipped."""

    compile_id: str
    name: str | None  # the function compiled (co_name)
    skip_reason: str | None  # why Inductor ran it without CUDA graphs (None: it did not say it skipped)
    recordings_ms: list[float] = field(default_factory=list)  # each recording of its graph, in the order they ran
    skip_location: UserLocation | None = None  # the user line torch names in the reason ("Found from: File ...")

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
                "recordings_ms": [round(ms, 3) for ms in self.recordings_ms]}


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

    def to_json(self) -> dict[str, Any]:
        return {"compiles": [c.to_json() for c in self.compiles]}


def cudagraphs(trace: Trace) -> CudaGraphs:
    result = CudaGraphs()
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        metrics = entry.metrics or {}
        skip = metrics.get("cudagraph_skip_reason")
        recordings = [us / 1000 for us in (m.get("runtime_cudagraphify_time_us") for m in entry.runtime_metrics)
                      if isinstance(us, (int, float)) and not isinstance(us, bool) and us >= 0]
        skip = skip if isinstance(skip, str) and skip else None
        if skip or recordings:
            name = metrics.get("co_name")
            users = [f for f in traceback_frames(skip) if not is_framework_file(f.filename)] if skip else []
            result.compiles.append(CudaGraphCompile(entry.key, name if isinstance(name, str) else None, skip,
                                                    recordings, users[-1] if users else None))
    return result

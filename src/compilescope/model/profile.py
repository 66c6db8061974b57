"""A torch.profiler Chrome trace, read: its timed events and what could not be read.

Only the complete (``"ph": "X"``) events carry time; the reader keeps those, with
the few fields the runtime analysis joins on (correlation and External id link a
GPU kernel to the CPU call that launched it). Serialisable, like the Trace.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..wording import plural
from .records import dataclass

# Categories (lower case) of events that run on a GPU: torch.profiler / Kineto names, and older Kineto's.
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "memcpy", "memset"})
# Operators (aten::mm, ...): "operator" in older Kineto.
OP_CATEGORIES = frozenset({"cpu_op", "operator"})
# Categories that are the profiler's own bookkeeping, not the program's time.
PROFILER_CATEGORIES = frozenset({"trace", "overhead"})


@dataclass(slots=True)
class ProfileEvent:
    name: str
    cat: str  # lower case
    ts: float  # microseconds
    dur: float  # microseconds, >= 0
    pid: int | str
    tid: int | str
    correlation: int | None = None  # CUDA correlation id: a kernel and the runtime call that launched it
    device: int | None = None

    @property
    def end(self) -> float:
        return self.ts + self.dur

    @property
    def on_gpu(self) -> bool:
        return self.cat in GPU_CATEGORIES

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "cat": self.cat, "ts": self.ts, "dur": self.dur, "pid": self.pid, "tid": self.tid,
                "correlation": self.correlation, "device": self.device}


# How a profile's notes begin where reading stopped before the file's end (Profile.notes, stopped_note)
STOPPED_NOTE = "read stopped early: "


def stopped_note(notes: list[str]) -> str | None:
    """The note saying where and why reading stopped (a truncated or corrupt file), or None."""
    return next((n for n in notes if n.startswith(STOPPED_NOTE)), None)


@dataclass
class Profile:
    source: str
    events: list[ProfileEvent] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # why -> how many events were not read
    stopped: str | None = None  # why reading ended before the end of the file (truncated, corrupt, too big)
    devices: list[str] = field(default_factory=list)  # GPU names from deviceProperties
    # Each GPU's compute capability ("9.0"), from deviceProperties' computeMajor/Minor: what its tensor cores can do
    # (TF32 from 8.0, Ampere, on). Empty where the profile does not say.
    capabilities: list[str] = field(default_factory=list)
    part_of: str | None = None  # a run cut out of this profile (eager or compiled): its time is its ranges' time
    wall_us: float | None = None  # a run cut out of a profile: the wall time of its ranges, launches and waits included

    def skip(self, why: str, n: int = 1) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + n

    @property
    def notes(self) -> list[str]:
        """What the report says about what was not read."""
        out = [f"{n:,} {plural(n, 'event')} skipped: {why}" for why, n in sorted(self.skipped.items())]
        if self.stopped:
            out.insert(0, f"{STOPPED_NOTE}{self.stopped}; {len(self.events):,} events read up to there")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "events": len(self.events), "skipped": dict(self.skipped),
                "stopped": self.stopped, "devices": list(self.devices),
                "capabilities": list(self.capabilities), "wall_us": self.wall_us}

"""What `diff` compares of a run's profile (runtime_facts), and of one it could not read."""

from __future__ import annotations

import os
from typing import Any

from ...model.profile import stopped_note
from . import GPU_IDLE, Runtime


def unreadable_profile_facts(path: str, why: str) -> dict[str, Any]:
    """runtime_facts for a profile that could not be read at all (not a Chrome trace, no event, cut before the first):
    the run has a profile, and why none of it can be compared."""
    return {"profile": os.path.basename(path), "unusable": why}


def runtime_facts(runtime: Runtime | None) -> dict[str, Any] | None:
    """What `diff` compares of a run's profile: its first profile joined to the log ({profile, not_joined} where none
    was, with unusable where it was read in part; None: no profile read). `unusable`: why its times are not the
    run's (read in part: the note the report shows), else None. Per compile id, its graphs' calls and kernel time (a compile's forward and backward
    are one: each step calls both), and the GPU time of the run per call where one graph ran: a profile of 20 calls
    and one of 5 compare per call. A profile holding an eager and a compiled run (split_runs) gives its compiled
    part's time and idle."""
    if not runtime:
        return None
    p = next((p for p in runtime.profiles if p.matched), None)
    if p is None:  # read, but of another run or of no compiled graph: nothing of it to compare
        other = runtime.profiles[0]
        facts = {"profile": other.source.rsplit("/", 1)[-1], "not_joined": other.not_joined or "not joined to the log"}
        if other.stopped:  # (a cut file's part may hold no compiled graph: the cut is why)
            facts["unusable"] = stopped_note(other.notes) or f"read stopped early: {other.stopped}"
        return facts
    part = next((i for i in p.idle_by_part if i.part == "compiled"), None)
    graphs: dict[str, dict[str, Any]] = {}
    for g in p.graphs:
        if not g.in_graph:
            continue
        cid = str(g.compile_id) if g.compile_id else str(g.key or g.region)
        row = graphs.setdefault(cid, {"compile_id": cid, "calls": 0, "kernels_us": 0.0})
        row["calls"] = max(row["calls"], g.calls)  # (forward and backward: one call of each per step)
        row["kernels_us"] = round(row["kernels_us"] + g.kernels_us, 3)
    run_us = part.run_us if part is not None else p.run_us
    idle_us = part.idle_us if part is not None else sum(k.total_us for k in p.kernels if k.name == GPU_IDLE)
    # Its eager part: the same model run eagerly in the same profile, what the compiled part is measured against (the
    # comparison's speed-up) and, in both runs of a diff, the same code timed twice: whether the machine changed.
    eager = next((i for i in p.idle_by_part if i.part == "eager"), None)
    speedup = runtime.comparison.speedup if eager is not None and runtime.comparison is not None else None
    # A profile read in part (truncated, corrupt) times a part of the run: its time per call is no run's to compare.
    unusable = (stopped_note(p.notes) or f"read stopped early: {p.stopped}") if p.stopped else None
    return {"profile": p.source.rsplit("/", 1)[-1], "timeline": p.timeline, "part": "compiled" if part else None,
            "unusable": unusable,
            "run_us": round(run_us, 3), "idle_us": round(idle_us, 3), "graph_launches": p.graph_launches,
            "slow_us": round(p.slow_us, 3), "graphs": sorted(graphs.values(), key=lambda g: -g["kernels_us"]),
            "eager": {"run_us": round(eager.run_us, 3), "idle_us": round(eager.idle_us, 3),
                      "kernels_us": round(eager.run_us - eager.idle_us, 3)} if eager is not None else None,
            "speedup": round(speedup, 6) if speedup else None}

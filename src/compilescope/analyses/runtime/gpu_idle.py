"""Why the GPU waited: its idle time by what the CPU ran meanwhile (idle_by_cpu), and a profile part's idle
time (part_idle)."""

from __future__ import annotations

from typing import Any

from ...model.profile import OP_CATEGORIES, Profile, ProfileEvent
from . import (AUTOGRAD_NODE, COMPILED_REGION, DYNAMO_LOOKUP, GRAPH_LAUNCH, GRAPH_RANGE, IDLE_IN_GRAPH, IDLE_IN_NO_OP,
               IDLE_IN_OP, IDLE_IN_REGION, IdleCause, PartIdle, ProfileRuntime)
from .intervals import Covered, less, union


def idle_by_cpu(gaps: list[tuple[float, float]], threads: dict[tuple, list[ProfileEvent]]) -> list[IdleCause]:
    """The GPU's idle gaps by what the CPU ran meanwhile, on any thread (the autograd engine runs the backward on its
    own): first a compiled graph's call range, then the compiled region around it, then the outermost op range, by
    name (the backward's wrapper is the autograd node CompiledFunctionBackward); the rest, no op recorded."""
    graph_calls, regions, outermost = [], [], []
    for evs in threads.values():
        end = float("-inf")
        for e in sorted((e for e in evs if e.cat in OP_CATEGORIES), key=lambda e: (e.ts, -e.dur)):
            if GRAPH_RANGE.match(e.name):
                graph_calls.append((e.ts, e.end))
            elif COMPILED_REGION.match(e.name) or e.name == DYNAMO_LOOKUP:
                regions.append((e.ts, e.end))
            if e.ts >= end:
                outermost.append(e)
                end = e.end
    out = []
    left = gaps
    for kind, what, taken in ((IDLE_IN_GRAPH, "compiled graph calls", graph_calls),
                              (IDLE_IN_REGION, "Dynamo around the graph calls (its guards, the compiled region)", regions)):
        rest = less(left, taken)
        us = union(left) - union(rest)
        if us > 0:
            out.append(IdleCause(kind, what, us))
        left = rest
    by_op: dict[str, float] = {}
    longest: dict[str, float] = {}
    idle = Covered(left)
    for e in outermost:
        if GRAPH_RANGE.match(e.name) or COMPILED_REGION.match(e.name) or e.name == DYNAMO_LOOKUP:
            continue
        us = idle.within(e.ts, e.end)
        if us > 0:
            name = AUTOGRAD_NODE.sub("", e.name)
            by_op[name] = by_op.get(name, 0.0) + us
            longest[name] = max(longest.get(name, 0.0), us)
    # (two threads' ops at once count for each: cut from what is left once, as a union)
    rest = less(left, [(e.ts, e.end) for e in outermost])
    in_ops = union(left) - union(rest)
    scale = in_ops / sum(by_op.values()) if by_op else 0.0
    out += [IdleCause(IDLE_IN_OP, name, us * scale, longest[name] * scale) for name, us in by_op.items()]
    if rest:
        out.append(IdleCause(IDLE_IN_NO_OP, "no op recorded on the CPU (Python between calls, waiting)", union(rest)))
    return sorted(out, key=lambda c: -c.us)


def part_idle(name: str, part: Profile, run: ProfileRuntime) -> PartIdle:
    """A part's GPU idle time: per GPU, its kernels' span less the time one of them ran (as gpu_rows counts it); and
    its time in compiled graphs, of its time (run: the part's own rows, which count no idle) with that idle added."""
    by_device: dict[Any, list[tuple[float, float]]] = {}
    for e in part.events:
        if e.on_gpu and e.cat != "gpu_user_annotation":
            by_device.setdefault(e.pid, []).append((e.ts, e.end))
    span = sum(max(end for _, end in ran) - min(start for start, _ in ran) for ran in by_device.values())
    idle = span - sum(union(ran) for ran in by_device.values())
    launches = sum(1 for e in part.events if e.name == GRAPH_LAUNCH and e.cat == "cuda_runtime")
    idle = max(0.0, idle)
    graphs_us = sum(g.total_us for g in run.graphs if g.in_graph)
    return PartIdle(name, idle, span, launches, run.run_us + idle, graphs_us)

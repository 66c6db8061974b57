"""Eager against compiled: two profiles' runs (or one profile's two parts, split_runs) side by side, op by op."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from ...model.profile import OP_CATEGORIES, Profile
from . import (COMPILE, COMPILING, EAGER, FRAMEWORK, GRAPH_RANGE, IDLE, OTHER, WRAPPER, Comparison, OpComparison,
               ProfileRuntime)
from .timeline import threads_of


def _op_totals(p: ProfileRuntime) -> dict[str, tuple[int, float]]:
    totals: dict[str, tuple[int, float]] = {}
    for r in p.kernels:
        if r.kind in (IDLE, COMPILE, FRAMEWORK, OTHER, WRAPPER):
            continue
        calls, us = totals.get(r.name, (0, 0.0))
        totals[r.name] = (calls + r.calls, us + r.total_us)
    return totals


def _busy_us(p: ProfileRuntime) -> float:
    """The time something of the run was running (BUSY_DEFINITION): the total less idle time and compiling."""
    return sum(r.total_us for r in p.kernels if r.kind != IDLE and r.name != COMPILING)


def _eager_op_around(eager: ProfileRuntime, e_ops: dict[str, tuple[int, float]],
                     c_ops: dict[str, tuple[int, float]]) -> dict[str, str]:
    """A compiled run's op that eager ran only inside another op -> that op: a graph's extern aten::addmm is eager's
    aten::linear (its transpose a view in the graph), so the two are one row, not an addmm that only compiled ran.
    Only one to one: an eager op around two such ops, or one of two eager ops around it, joins nothing."""
    around: dict[str, set[str]] = {}
    for r in eager.kernels:
        if r.kind == EAGER and r.name not in c_ops:
            for inner in r.inner_ops:
                if inner in c_ops and inner not in e_ops:
                    around.setdefault(inner, set()).add(r.name)
    joined = {inner: next(iter(outer)) for inner, outer in around.items() if len(outer) == 1}
    taken = [outer for outer in joined.values()]
    return {inner: outer for inner, outer in joined.items() if taken.count(outer) == 1}


def compare(eager: ProfileRuntime, compiled: ProfileRuntime) -> Comparison:
    """Side by side, op by op (the tutorial's two profile tables joined by name), and the speedup.

    Each side is its busy time (BUSY_DEFINITION), so two profiles compare as the two runs
    cut out of one profile do. The eager run has no graph ranges, so a graph's speedup can
    be told only when the compiled run has one graph: the eager run's operators (on a GPU,
    their kernels) over the graph's time, the work the graph replaced against the graph.
    """
    e_ops, c_ops = _op_totals(eager), _op_totals(compiled)
    inside = _eager_op_around(eager, e_ops, c_ops)
    e_ops = {n: v for n, v in e_ops.items() if n not in inside.values()}
    names = sorted(set(e_ops) | set(c_ops), key=lambda n: -(e_ops.get(n, (0, 0.0))[1] + c_ops.get(n, (0, 0.0))[1]))
    library = {r.name: r.library for p in (eager, compiled) for r in p.kernels if r.library}
    ops = [OpComparison(n, *e_ops.get(n, (0, 0.0)), *c_ops.get(n, (0, 0.0)), library=library.get(n)) if n not in inside
           else OpComparison(n, *_op_totals(eager)[inside[n]], *c_ops[n], eager_op=inside[n], library=library.get(n))
           for n in names]
    eager_ops = sum(r.total_us for r in eager.kernels if r.kind == EAGER)
    in_graphs = [g for g in compiled.graphs if g.in_graph]
    graphs = [(str(g.compile_id) if g.compile_id else str(g.key or g.region), g.total_us,
               (eager_ops / g.total_us if len(in_graphs) == 1 and g.total_us else None)) for g in in_graphs]
    slow = compiled.slow_calls if compiled.timeline == "cpu" else []
    return Comparison(eager.source, compiled.source, _busy_us(eager), _busy_us(compiled), ops, graphs,
                      eager.wall_us, compiled.wall_us, eager.timeline, compiled.compiles,
                      sum(s.over_median_us for s in slow), sum(len(s.slow) for s in slow))


def split_runs(profile: Profile) -> tuple[Profile, Profile] | None:
    """One profile holding an eager and a compiled run: its parts, or None.

    The runs are told apart by the outermost ``record_function`` ranges (``user_annotation``,
    e.g. ``with record_function("eager")`` / ``("compiled")``, or ProfilerStep#N): a range
    with a compiled graph inside is compiled, one with operators and no graph is eager. A
    CPU event belongs to the range it runs in; a GPU kernel to the range of its launch.
    """
    threads = threads_of(profile.events)
    windows: dict[bool, list[tuple[Any, float, float]]] = {True: [], False: []}
    for (pid, tid), evs in threads.items():
        # Prefix counts over events sorted by start: what lies inside a range is found by bisection.
        starts = [e.ts for e in evs]
        graphs, ops = [0], [0]
        for e in evs:
            graphs.append(graphs[-1] + bool(GRAPH_RANGE.match(e.name)))
            ops.append(ops[-1] + (e.cat in OP_CATEGORIES))
        end = float("-inf")
        for i, e in enumerate(evs):
            if e.cat != "user_annotation" or GRAPH_RANGE.match(e.name) or e.ts < end:
                continue
            end = e.end
            j = bisect_left(starts, e.end, i + 1)
            if graphs[j] - graphs[i + 1]:
                windows[True].append(((pid, tid), e.ts, e.end))
            elif ops[j] - ops[i + 1]:
                windows[False].append(((pid, tid), e.ts, e.end))
    if not windows[True] or not windows[False]:
        return None
    parts = []
    for compiled in (False, True):
        part = Profile(f"{profile.source} ({'compiled' if compiled else 'eager'} part)", devices=profile.devices,
                       capabilities=profile.capabilities,
                       part_of=profile.source, wall_us=sum(end - start for _, start, end in windows[compiled]))
        launches: set[int] = set()
        spans: dict[Any, list[tuple[float, float]]] = {}
        for thread, start, end in windows[compiled]:
            spans.setdefault(thread, []).append((start, end))
        firsts = {thread: [w[0] for w in ws] for thread, ws in spans.items()}
        for e in profile.events:
            ws = spans.get((e.pid, e.tid))
            if e.on_gpu or ws is None:
                continue
            k = bisect_right(firsts[(e.pid, e.tid)], e.ts) - 1  # the windows do not overlap: the last one starting before
            if k >= 0 and e.ts < ws[k][1]:
                part.events.append(e)
                if e.correlation is not None:
                    launches.add(e.correlation)
        part.events.extend(e for e in profile.events if e.on_gpu and e.correlation in launches)
        parts.append(part)
    return parts[0], parts[1]

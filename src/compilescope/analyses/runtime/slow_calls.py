"""Slow calls: the calls a steady state does not pay (a first call's warm-up, a stall), found by one rule (_slow)
on a CPU timeline's kernels (slow_calls) and on a GPU timeline's graph calls, eager ops and compiled regions
(gpu_slow_calls)."""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right

from ...model.ids import CompileId
from ...model.profile import OP_CATEGORIES, ProfileEvent
from . import (AUTOGRAD_NODE, COMPILED_REGION, DYNAMO_LOOKUP, EPS, EXTERN, GRAPH_CALL, GRAPH_RANGE, IDLE_IN_OP,
               IDLE_IN_REGION, INDUCTOR, KernelRow, SlowCall, SlowCalls)
from .intervals import merged
from .timeline import Rows


# A call far longer than its kernel's median call: SLOW_CALL_FACTOR times it, and SLOW_CALL_MIN_US longer (a few µs of
# jitter on a tiny kernel is no finding). The median needs SLOW_CALL_MIN_CALLS calls to stand for the steady state.
SLOW_CALL_FACTOR = 10.0
SLOW_CALL_MIN_US = 1000.0
SLOW_CALL_MIN_CALLS = 3


def _slow(times: list[float]) -> tuple[float, list[int]]:
    """The one rule for a call a steady state does not pay (a first call's warm-up, a stall): its name's calls' median,
    and the places (0: the first) of the calls SLOW_CALL_FACTOR times it and SLOW_CALL_MIN_US longer; none for a name
    called fewer than SLOW_CALL_MIN_CALLS times."""
    if len(times) < SLOW_CALL_MIN_CALLS:
        return 0.0, []
    median = statistics.median(times)
    return median, [i for i, us in enumerate(times) if us >= SLOW_CALL_FACTOR * median and us - median >= SLOW_CALL_MIN_US]


def slow_calls(rows: Rows) -> list[SlowCalls]:
    """The compiled graphs' kernels some of whose calls took far longer than their median call (SlowCalls)."""
    compiled_at: dict[CompileId, float] = {}  # a compile in the profile: when it ended
    for _, end, text in rows.compile_spans:
        cid = rows.index.compile_id(text) if text else None
        if cid is not None:
            compiled_at[cid] = max(end, compiled_at.get(cid, end))
    groups: dict[tuple, list[tuple[KernelRow, float, float, bool]]] = {}
    for row, calls in rows.timed.values():
        if row.kind not in (INDUCTOR, EXTERN):  # (an op the graph's output code does not call became its wrapper's)
            continue
        # A kernel at its lines: a recompile for another size runs the same one in a graph of its own.
        key = ((row.kind, row.name, tuple((u.file, u.line) for u in row.user_lines)) if row.user_lines
               else (row.kind, row.name, row.graph, row.region))
        first = min(start for start, _ in calls)
        groups.setdefault(key, []).extend((row, start, us, start == first) for start, us in calls)
    found = []
    for group in groups.values():
        group.sort(key=lambda c: c[1])
        median, places = _slow([us for _, _, us, _ in group])
        slow = [SlowCall(row.compile_id, n + 1, us, first,
                         first and row.compile_id in compiled_at and compiled_at[row.compile_id] <= start + EPS)
                for n, (row, start, us, first) in ((n, group[n]) for n in places)]
        if slow:
            kernel = group[0][0]
            found.append(SlowCalls(kernel.name, kernel.kind, kernel.user_lines, len(group), median, slow))
    return sorted(found, key=lambda f: -f.over_median_us)


# A slow call on a GPU timeline, for _count_once: (its start, its pieces of the GPU timeline, the call)
_Timed = tuple[float, list[tuple[float, float]], SlowCall]


def gpu_slow_calls(rows: Rows, threads: dict[tuple, list[ProfileEvent]]) -> list[SlowCalls]:
    """A GPU timeline's slow calls, graph calls' and eager ops' (most time over the median first), each piece of the
    GPU timeline counted once (_count_once)."""
    timed: list[_Timed] = []
    found = _slow_graph_calls(rows, timed) + _slow_op_calls(rows, threads, timed)
    _count_once(timed)
    return sorted(found, key=lambda f: -f.over_median_us)


def _count_once(timed: list[_Timed]) -> None:
    """Each slow call's time that an earlier one (by start) already covers: two threads that call a graph (or run an
    op) for the first time at once keep the one GPU waiting once, and each call's time on the GPU timeline is that
    same wait. Summed per call, capture_profile with its main thread's events recorded again under another thread
    counted 155% of the run as warm-up, and a steady state under zero."""
    # What the earlier calls hold, merged (disjoint, in order): each piece bisects into it and joins the spans it
    # meets, where merging the whole list again per call took 14 s for 4000 slow calls.
    starts: list[float] = []
    ends: list[float] = []
    for _, pieces, call in sorted(timed, key=lambda t: t[0]):
        overlap = 0.0
        for a, b in merged(pieces):  # (its own pieces as one union: two GPUs' spans may overlap)
            i, j = bisect_left(ends, a), bisect_right(starts, b)  # the spans it meets or touches: i..j-1
            for s, e in zip(starts[i:j], ends[i:j]):
                overlap += max(0.0, min(b, e) - max(a, s))
            if i < j:
                a, b = min(a, starts[i]), max(b, ends[j - 1])
            starts[i:j], ends[i:j] = [a], [b]
        call.overlap_us = overlap


def _graph_call_names(rows: Rows) -> dict[tuple[float, float], str]:
    """Each graph call's range (start, end) -> the call in the user's terms: `backward graph call 2 of 5 of [0/0]
    (forward)` (its compiled function's name, where the log has it)."""
    groups: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    for key, start, end, backward in rows.graph_calls:
        groups.setdefault((key, backward), []).append((start, end))
    names: dict[tuple[float, float], str] = {}
    for (key, backward), calls in groups.items():
        cid = rows.index.graph_cid.get(key)
        function = rows.index.function(cid)
        graph = f"{cid or 'graph ' + key[:8]}" + (f" ({function})" if function else "")
        for n, call in enumerate(sorted(calls), 1):  # (two threads' calls at the same instants: the first's number)
            names.setdefault(call, f"{'backward' if backward else 'forward'} graph call {n} of {len(calls)} of {graph}")
    return names


def _slow_graph_calls(rows: Rows, timed: list[_Timed]) -> list[SlowCalls]:
    """On a GPU timeline, the compiled graphs' calls that took far longer than their graph's median call.

    A GPU kernel's calls take the same time, first call or not (none of the H200 profiles has one 3x its median):
    what a first call's warm-up (loading its kernels, cuBLAS's handle, CUDA graphs' recording) costs is GPU idle while
    the CPU is busy. So a call's time is its graph range's wall time on the GPU timeline: inside a GPU's span (first
    kernel to last), less the compile ranges in it (compiling's own row already holds those). capture_profile's
    first forward call spent 134 ms so, against a median call of 1.09 ms."""
    groups: dict[tuple[str, bool], list[tuple[float, float, float]]] = {}
    for key, start, end, backward in sorted(rows.graph_calls, key=lambda c: c[1]):
        groups.setdefault((key, backward), []).append((start, end, _gpu_time(rows, start, end)))
    compiled_at: dict[CompileId, float] = {}  # a compile in the profile: when it started
    for start, _, text in rows.compile_spans:
        cid = rows.index.compile_id(text) if text else None
        if cid is not None:
            compiled_at[cid] = min(start, compiled_at.get(cid, start))
    found = []
    for (key, backward), calls in groups.items():
        median, places = _slow([us for _, _, us in calls])
        cid = rows.index.graph_cid.get(key)
        # The first call after its compile in this profile: the compile ran before it or inside it (autotuning).
        compiled_before = cid is not None and cid in compiled_at and compiled_at[cid] <= calls[0][1]
        slow = []
        for n in places:
            start, end, us = calls[n]
            slow.append(SlowCall(cid, n + 1, us, n == 0, n == 0 and compiled_before))
            timed.append((start, _gpu_pieces(rows, start, end), slow[-1]))
        if slow:
            name = f"{cid or 'graph ' + key[:8]}'s {'backward' if backward else 'forward'} graph call"
            found.append(SlowCalls(name, GRAPH_CALL, [], len(calls), median, slow))
    return found


def _gpu_pieces(rows: Rows, start: float, end: float,
                judged: list[tuple[float, float]] | None = None) -> list[tuple[float, float]]:
    """A call's pieces of the GPU timeline: its range inside each GPU's span (first kernel to last), less the compile
    ranges in it (compiling's own row holds those) and the calls inside it judged on their own (`judged`)."""
    out: list[tuple[float, float]] = []
    for first, last in rows.gpu_spans:
        a, b = max(start, first), min(end, last)
        if b <= a:
            continue
        cut = merged(rows.compiling_in(a, b) + [(max(s, a), min(e, b)) for s, e in judged or [] if e > a and s < b])
        at = a
        for s, e in cut:
            if s > at:
                out.append((at, s))
            at = max(at, e)
        if at < b:
            out.append((at, b))
    return out


def _gpu_time(rows: Rows, start: float, end: float, judged: list[tuple[float, float]] | None = None) -> float:
    """A call's time on the GPU timeline (_gpu_pieces): per GPU, so two GPUs' spans count each."""
    return sum(b - a for a, b in _gpu_pieces(rows, start, end, judged))


def _slow_op_calls(rows: Rows, threads: dict[tuple, list[ProfileEvent]], timed: list[_Timed]) -> list[SlowCalls]:
    """On a GPU timeline, the eager ops' and compiled regions' calls a steady state does not pay, by the graph calls'
    rule (_slow): each outermost op range of a thread by its name (an autograd node by its node's: the backward's
    wrapper CompiledFunctionBackward, AccumulateGrad), its calls in the order they ran, a call's time as a graph
    call's (_gpu_time) less the graph calls inside it, which _slow_graph_calls judges. An eager op's first call
    loads its kernels too: capture_profile's first aten::sum kept the GPU waiting 27 ms, its first backward 31 ms
    outside the backward graph's call, its first accumulation into .grad (AccumulateGrad's 13th call, step 2's
    first) 11 ms; the graph calls' warm-up alone left those in the steady state. Each slow one is said in the user's
    terms (SlowCall.during, first_on_thread, first_op)."""
    graph_ranges = sorted((start, end) for _, start, end, _ in rows.graph_calls)
    starts = [s for s, _ in graph_ranges]
    latest_end: list[float] = []  # the latest end of the ranges up to each: how far back one may still reach into an op
    for _, t in graph_ranges:
        latest_end.append(max(t, latest_end[-1]) if latest_end else t)
    # (kind, name) -> each call: start, end, time, the graph calls inside it, its thread, the ops inside it (name, start)
    groups: dict[tuple[str, str], list[tuple[float, float, float, list[tuple[float, float]], tuple,
                                             list[tuple[str, float]]]]] = {}
    around: set[tuple[str, str]] = set()  # names with graph calls inside: said as outside them
    first_run: dict[str, float] = {}  # an op name -> when it first started, on any thread
    for thread, evs in threads.items():
        for e, inner in _outermost_ops(evs):
            for op, ts in [(e.name, e.ts), *inner]:
                first_run[op] = min(ts, first_run.get(op, ts))
            if GRAPH_RANGE.match(e.name):
                continue  # a graph call with no range around it: _slow_graph_calls judges it
            region = bool(COMPILED_REGION.match(e.name) or e.name == DYNAMO_LOOKUP)
            key = (IDLE_IN_REGION if region else IDLE_IN_OP, AUTOGRAD_NODE.sub("", e.name))
            inside = _ranges_in(graph_ranges, starts, latest_end, e.ts, e.end)
            if inside:
                around.add(key)
            groups.setdefault(key, []).append((e.ts, e.end, _gpu_time(rows, e.ts, e.end, inside), inside, thread, inner))
    graph_names = _graph_call_names(rows) if groups else {}
    found = []
    for (kind, name), calls in groups.items():
        calls.sort(key=lambda c: c[0])
        median, places = _slow([us for _, _, us, _, _, _ in calls])
        if not places:
            continue
        slow = []
        for n in places:
            start, end, us, inside, thread, inner = calls[n]
            earlier = calls[:n]
            ran_before = {op for c in earlier for op, _ in c[5]}
            new = next(((op, ts) for op, ts in inner if op not in ran_before), None)
            # the graph call it holds, else the last one to start before it (on any thread: the autograd engine's)
            during: str | None
            if inside:
                during = f"around {graph_names[min(inside)]}"
            else:
                j = bisect_right(starts, start) - 1
                during = f"after {graph_names[graph_ranges[j]]}" if j >= 0 else None
            call = SlowCall(None, n + 1, us, False, False, during=during,
                            first_on_thread=all(c[4] != thread for c in earlier), first_op=new[0] if new else None,
                            first_op_in_profile=new is not None and first_run[new[0]] == new[1])
            slow.append(call)
            timed.append((start, _gpu_pieces(rows, start, end, inside), call))
        said = f"{name} (outside its graph calls)" if (kind, name) in around else name
        found.append(SlowCalls(said, kind, [], len(calls), median, slow))
    return found


def _outermost_ops(evs: list[ProfileEvent]) -> list[tuple[ProfileEvent, list[tuple[str, float]]]]:
    """A thread's outermost op ranges in the order they ran, each with the ops that started inside it (name, start):
    what that call ran. A graph call's range is one too where nothing is around it, so its ops are its own, not the
    op's before it."""
    out: list[tuple[ProfileEvent, list[tuple[str, float]]]] = []
    end = float("-inf")
    for e in sorted((e for e in evs if e.cat in OP_CATEGORIES), key=lambda e: (e.ts, -e.dur)):
        if e.ts < end:
            out[-1][1].append((e.name, e.ts))
            continue
        end = e.end
        out.append((e, []))
    return out


def _ranges_in(ranges: list[tuple[float, float]], starts: list[float], latest_end: list[float], start: float,
               end: float) -> list[tuple[float, float]]:
    """The ranges (sorted, with their starts and running latest end) that overlap start..end: found by bisection, as
    every op of a long profile asks."""
    j = bisect_left(starts, start)
    out = [r for r in ranges[j:bisect_left(starts, end, j)] if r[1] > start]
    i = j - 1
    while i >= 0 and latest_end[i] > start:  # (ranges starting before it and reaching into it: few)
        if ranges[i][1] > start:
            out.append(ranges[i])
        i -= 1
    return out

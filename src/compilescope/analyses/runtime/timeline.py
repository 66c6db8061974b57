"""A profile's threads, each event nested in its context (the graph call, compiled region, kernel and op around it),
and the rows of the two timelines built from them (cpu_rows, gpu_rows): the working state of profile_runtime, no
part of its result but the KernelRows it adds up."""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any, Iterable

from ...model.profile import OP_CATEGORIES, PROFILER_CATEGORIES, Profile, ProfileEvent
from ...model.records import dataclass
from . import (COMPILE, COMPILED_REGION, COMPILING, EAGER, EPS, EXTERN, FRAMEWORK, GPU_IDLE, GRAPH_LAUNCH, GRAPH_RANGE, IDLE,
               IN_GRAPH, INDUCTOR, INDUCTOR_KERNEL, OTHER, UNTRACED, WRAPPER, KernelRow)
from .intervals import Covered, gaps_in, less, overlap, union
from .log_index import CallSite, LogIndex


# torch 2.13 names a C++ kernel's profiler range after its graph too: graph_0_cpp_fused_...
_GRAPH_PREFIX = re.compile(r"^graph_\d+_(?=cpp_)")


def kernel_name(event_name: str) -> str | None:
    """The Inductor kernel an event name is (as the output code names it), or None."""
    name = _GRAPH_PREFIX.sub("", event_name, count=1)
    return name if INDUCTOR_KERNEL.match(name) else None


_LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver", "runtime")  # "runtime": older Kineto


@dataclass(slots=True)
class _Context:
    graph: str | None
    region: str | None
    kernel: str | None
    op: str | None
    compiling: bool = False  # inside torch.compile's own work (a dynamo_timed range)
    # In one call of a graph (its graph range): op -> its calls there, one dict shared by the call's events (the
    # whole call's counts once its thread is nested), and which of them the op is (1 for the first).
    run_calls: dict[str, int] | None = None
    nth: int = 0


_COMPILE_RANGE = re.compile(r" \(dynamo_timed\)$|_data: |^(?:dynamo|entire_frame_compile)$")
# The annotation torch puts inside each compile range: "dynamo_data: compile_id=0/2", "entire_frame_compile_data:
# fn_name=_compile.compile_inner, compile_id=0/2".
_COMPILE_RANGE_ID = re.compile(r"_data: (?:.*, )?compile_id=(?P<cid>[^,\s]+)")


def _compile_spans(evs: list[ProfileEvent], parents: list[int | None],
                   contexts: list[_Context]) -> list[tuple[float, float, str | None]]:
    """Each outermost compile range on a thread: (start, end, the compile id its ranges name)."""
    spans: list[tuple[float, float, str | None]] = []
    for i, (e, ctx) in enumerate(zip(evs, contexts)):
        if not ctx.compiling:
            continue
        parent = parents[i]
        if parent is None or not contexts[parent].compiling:
            spans.append((e.ts, e.end, None))
        elif spans and spans[-1][2] is None and (m := _COMPILE_RANGE_ID.search(e.name)):
            spans[-1] = (spans[-1][0], spans[-1][1], m["cid"])  # (events come sorted by start: it is inside the last)
    return spans


# The autograd engine's ranges ("autograd::engine::evaluate_function: CompiledFunctionBackward", the AccumulateGrad
# node) hold ops, they are none: a backward GEMM is aten::mm's, a gradient's accumulation aten::add_'s.
_AUTOGRAD_RANGES = ("autograd::", "torch::autograd::")


def _is_op(e: ProfileEvent) -> bool:
    return e.cat in OP_CATEGORIES and "::" in e.name and not e.name.startswith(_AUTOGRAD_RANGES)


def threads_of(events: Iterable[ProfileEvent]) -> dict[tuple, list[ProfileEvent]]:
    threads: dict[tuple, list[ProfileEvent]] = {}
    for e in events:
        if not e.on_gpu and e.cat not in PROFILER_CATEGORIES:
            threads.setdefault((e.pid, e.tid), []).append(e)
    for evs in threads.values():
        evs.sort(key=lambda e: (e.ts, -e.dur))
    return threads


def _nest(events: list[ProfileEvent]) -> tuple[list[int | None], list[_Context]]:
    """Parents (time nesting, events sorted by start) and each event's context (graph, region, kernel, op)."""
    parents: list[int | None] = []
    contexts: list[_Context] = []
    stack: list[int] = []
    for i, e in enumerate(events):
        while stack and events[stack[-1]].end <= e.ts + EPS:
            stack.pop()
        parent = stack[-1] if stack else None
        up = contexts[parent] if parent is not None else _Context(None, None, None, None)
        g, r = GRAPH_RANGE.match(e.name), COMPILED_REGION.match(e.name)
        kernel = up.kernel or kernel_name(e.name)
        # In a graph's call, the op is one its output code called (extern_kernels.mm: aten::mm), not one around it.
        op = None if g else up.op or (e.name if _is_op(e) and not kernel else None)
        run_calls, nth = ({}, 0) if g else (up.run_calls, up.nth)
        if op and not up.op and run_calls is not None:  # an op's call (not one inside it): the graph's n-th of it
            nth = run_calls[op] = run_calls.get(op, 0) + 1
        contexts.append(_Context(g["key"] if g else up.graph, r["cid"] if r else up.region, kernel, op,
                                 up.compiling or bool(_COMPILE_RANGE.search(e.name)), run_calls, nth))
        parents.append(parent)
        stack.append(i)
    return parents, contexts


class Rows:
    def __init__(self, index: LogIndex):
        self.index = index
        self.rows: dict[tuple, KernelRow] = {}
        self._regions: dict[tuple, str | None] = {}  # the region each row outside a graph took its compile id from
        # An extern row's op calls in its graph's code (LogIndex.call_sites), and its time by call (None: a call not
        # told apart, whose time goes to all the row's lines).
        self._sites: dict[tuple, list[CallSite]] = {}
        self._site_us: dict[tuple, dict[int | None, float]] = {}
        self.compile_spans: list[tuple[float, float, str | None]] = []  # _compile_spans of every thread
        # A kernel row's calls on a CPU timeline: (start, time) of each, for SlowCalls. By id: a row is unhashable.
        self.timed: dict[int, tuple[KernelRow, list[tuple[float, float]]]] = {}
        # A GPU timeline's graph calls, (graph key, start, end, in a backward), its compile ranges and each GPU's span
        # (first kernel start, last kernel end): for _slow_graph_calls.
        self.graph_calls: list[tuple[str, float, float, bool]] = []
        self.compiling: list[tuple[float, float]] = []
        self._compiling_covered: Covered | None = None  # (compiling, asked per call by _gpu_time)
        self.gpu_spans: list[tuple[float, float]] = []
        self.idle_gaps: list[tuple[float, float]] = []  # each GPU's idle, compiling left out: for idle_by_cpu
        # An eager op row's time inside each compiled region (by id, as timed): a backend other than Inductor runs a
        # region's graph as ATen ops, which are that region's graph, not time outside compiled code (by graph).
        self.region_us: dict[int, dict[str, float]] = {}
        self.region_calls: dict[int, dict[str, int]] = {}  # and its calls there (the same keys)

    def compiling_in(self, start: float, end: float) -> list[tuple[float, float]]:
        """The compile ranges between start and end, cut to them."""
        if self._compiling_covered is None:
            self._compiling_covered = Covered(self.compiling)
        return self._compiling_covered.pieces(start, end)

    def time_call(self, row: KernelRow, start: float, us: float) -> None:
        self.timed.setdefault(id(row), (row, []))[1].append((start, us))

    def add(self, kind: str, name: str, ctx: _Context, us: float, calls: int, op: str | None = None,
            replayed: bool = False) -> KernelRow:
        graph = ctx.graph if kind in IN_GRAPH else None
        if kind == EXTERN and op and self.index.calls_op(self.index.graph_code.get(graph or ""), op) is False:
            # In the graph's call but not of its output code: CUDA graph trees' copy of the inputs (_foreach_copy_),
            # an AOT wrapper's op. The graph's wrapper, then, with the op named.
            kind = WRAPPER
        # No graph range (older torch, a CPU profile without them): the same kernel in two compiled regions is two
        # graphs' kernel, kept apart by the region.
        region = ctx.region if kind in IN_GRAPH and graph is None else None
        key = (kind, name, graph, region, op, replayed)
        row = self.rows.get(key)
        if row is not None and kind not in IN_GRAPH and self._regions.get(key) != ctx.region:
            row.compile_id = None  # framework or eager time in several compiled regions: no one compile's
        if row is None:
            cid = self.index.graph_cid.get(graph) if graph else None
            # A compile inside a compiled region is another frame's (a resume function's, compiled when the region's
            # code first calls it): the region's compile id is its only inside a graph's call (autotuning).
            if cid is None and ctx.region is not None and kind != IDLE and (kind != COMPILE or ctx.graph):
                cid = self.index.compile_id(ctx.region)
            self._regions[key] = ctx.region
            row = self.rows[key] = KernelRow(name, kind, graph, cid, op, region=region, replayed=replayed)
            code = self.index.graph_code.get(graph) if graph else None
            if kind == INDUCTOR:
                home = self.index.home(name, cid, code=code)
            elif kind == EXTERN and op:
                home = self.index.home(op, cid, extern=True, code=code)
            else:
                home = None
            if home is not None:
                row.compile_id = row.compile_id or home.compile_id
                row.user_lines = home.user_lines
                row.code_artifact, row.code_line = home.code_artifact, home.code_line
                row.stacks_artifact, row.stacks_name = home.stacks_artifact, home.stacks_name
                sites = self.index.call_sites(code, op) if kind == EXTERN and op else None
                if sites:
                    self._sites[key] = sites
        row.total_us += us
        row.calls += calls
        if kind == EAGER and ctx.region is not None and not ctx.compiling:
            spent_in = self.region_us.setdefault(id(row), {})
            spent_in[ctx.region] = spent_in.get(ctx.region, 0.0) + us
            called_in = self.region_calls.setdefault(id(row), {})
            called_in[ctx.region] = called_in.get(ctx.region, 0) + calls
        sites = self._sites.get(key)
        if sites is not None:
            # The n-th call of the op in a call of the graph is the code's n-th call of it, when the graph's call
            # made as many as its code has: else (a call cut by the profile's end, a replay) it is not told apart.
            made = ctx.run_calls.get(op) if ctx.run_calls is not None and ctx.op == op and op else None
            site = ctx.nth - 1 if made == len(sites) and ctx.nth else None
            spent = self._site_us.setdefault(key, {})
            spent[site] = spent.get(site, 0.0) + us
        return row

    def split_by_line(self) -> None:
        """Each row's time on each of its user lines (KernelRow.line_us): an extern call's on its call's lines, the
        rest of a row's spread evenly over all of them. A row keeps the lines its time went to."""
        for key, row in self.rows.items():
            if not row.user_lines:
                continue
            spent = self._site_us.get(key)
            if not spent or set(spent) == {None}:
                row.line_us = [row.total_us / len(row.user_lines)] * len(row.user_lines)
                continue
            sites = self._sites[key]
            # (a call's lines are among its op's in that graph, row.user_lines: the lines keep that order)
            where = {(u.file, u.line): u for u in row.user_lines}
            on = dict.fromkeys(where, 0.0)
            for site, us in spent.items():
                lines = sites[site].user_lines if site is not None and sites[site].user_lines else row.user_lines
                for u in lines:
                    place = (u.file, u.line)
                    where.setdefault(place, u)
                    on[place] = on.get(place, 0.0) + us / len(lines)
            kept = [place for place, us in on.items() if us > 0] or list(on)
            row.user_lines, row.line_us = [where[place] for place in kept], [on[place] for place in kept]
            calls = [site for site, us in spent.items() if us > 0]
            if len(calls) == 1 and calls[0] is not None:  # one call's time: its stack traces, not its op's first call's
                row.stacks_name = sites[calls[0]].name


def cpu_rows(threads: dict[tuple, list[ProfileEvent]], rows: Rows, part: bool = False) -> tuple[float, int]:
    total, n_threads = 0.0, 0
    for evs in threads.values():
        if not any(e.cat in OP_CATEGORIES for e in evs):
            continue
        n_threads += 1
        parents, contexts = _nest(evs)
        rows.compile_spans.extend(_compile_spans(evs, parents, contexts))
        children: dict[int, list[tuple[float, float]]] = {}
        top: list[tuple[float, float]] = []
        ends: list[float] = []  # each event's end, cut at its parent's (a child never outlasts it here)
        for i, e in enumerate(evs):
            p = parents[i]
            ends.append(e.end if p is None else min(e.end, ends[p]))
            if p is None:
                top.append((e.ts, e.end))
            else:
                children.setdefault(p, []).append((e.ts, ends[i]))
        # A run cut out of a profile is the time of its ranges; gaps between them belong to the other run.
        span = union(top) if part else max(e.end for e in evs) - min(e.ts for e in evs)
        total += span
        rows.add(IDLE, UNTRACED, _Context(None, None, None, None), span - union(top), 0)
        for i, e in enumerate(evs):
            length = e.dur if ends[i] == e.end else ends[i] - e.ts  # dur as recorded: ts + dur loses digits
            own = max(0.0, length - union(children.get(i, [])))
            ctx = contexts[i]
            if ctx.compiling:  # a first call's compile, or its autotuning inside the graph's call
                parent = parents[i]
                outermost = parent is None or not contexts[parent].compiling
                rows.add(COMPILE, COMPILING, ctx, own, 1 if outermost else 0)
            elif ctx.kernel:
                call = not _inside_kernel(parents, contexts, i)
                row = rows.add(INDUCTOR, ctx.kernel, ctx, own, 1 if call else 0)
                if call:  # the call's whole time: what ran inside it is the kernel's too
                    rows.time_call(row, e.ts, length)
            elif ctx.op and ctx.graph:
                call = e.name == ctx.op and not _inside_op(parents, contexts, i)
                row = rows.add(EXTERN, ctx.op, ctx, own, 1 if call else 0, op=ctx.op)
                if call:
                    rows.time_call(row, e.ts, length)
            elif ctx.op:
                row = rows.add(EAGER, ctx.op, ctx, own, 1 if e.name == ctx.op and not _inside_op(parents, contexts, i) else 0)
                p = parents[i]
                if (p is not None and e.name != ctx.op and _is_op(e) and e.name not in row.inner_ops
                        and evs[p].name == ctx.op and not _inside_op(parents, contexts, p)):
                    row.inner_ops.append(e.name)  # an op the outermost one called
            elif ctx.graph:
                rows.add(WRAPPER, "graph wrapper code", ctx, own, 0)
            elif e.cat in OP_CATEGORIES:  # torch's own ranges: guards, AOT wrappers, the autograd engine
                rows.add(FRAMEWORK, e.name, ctx, own, 1)
            else:  # a user_annotation (record_function), a Python function, a CUDA runtime call: none is torch's
                rows.add(OTHER, e.name, ctx, own, 1)
    return total, n_threads


def _inside_kernel(parents: list[int | None], contexts: list[_Context], i: int) -> bool:
    p = parents[i]
    return p is not None and contexts[p].kernel is not None


def _inside_op(parents: list[int | None], contexts: list[_Context], i: int) -> bool:
    p = parents[i]
    return p is not None and contexts[p].op is not None


def gpu_rows(profile: Profile, threads: dict[tuple, list[ProfileEvent]], rows: Rows) -> tuple[float, int]:
    launches: dict[int, tuple[_Context, bool]] = {}  # correlation -> the launch's context, whether a replay
    compiling: list[tuple[float, float]] = []  # the CPU's compile ranges: the GPU waits while a first call compiles
    for evs in threads.values():
        parents, contexts = _nest(evs)
        rows.compile_spans.extend(_compile_spans(evs, parents, contexts))
        for i, (e, ctx) in enumerate(zip(evs, contexts)):
            if e.correlation is not None and e.cat in _LAUNCH_CATEGORIES:
                launches[e.correlation] = (ctx, e.name == GRAPH_LAUNCH)
            parent = parents[i]
            if (g := GRAPH_RANGE.match(e.name)) and not ctx.compiling:
                rows.graph_calls.append((g["key"], e.ts, e.end, _in_backward(evs, parents, i)))
            if ctx.compiling and (parent is None or not contexts[parent].compiling):
                compiling.append((e.ts, e.end))
    devices: dict[Any, list[ProfileEvent]] = {}
    annotations: dict[Any, list[ProfileEvent]] = {}
    for e in profile.events:
        if e.cat == "gpu_user_annotation":
            annotations.setdefault(e.pid, []).append(e)
        elif e.on_gpu:
            devices.setdefault(e.pid, []).append(e)
    total = 0.0
    for device, evs in devices.items():
        ranges = sorted((a for a in annotations.get(device, []) if GRAPH_RANGE.match(a.name)), key=lambda a: a.ts)
        starts = [a.ts for a in ranges]
        busy = 0.0
        for e in evs:
            launched = launches.get(e.correlation) if e.correlation is not None else None
            if launched is not None:
                ctx, replayed = launched
            else:  # no CPU launch recorded: the GPU-side graph range around it, if any
                j = bisect_right(starts, e.ts) - 1
                around = GRAPH_RANGE.match(ranges[j].name) if j >= 0 and ranges[j].end >= e.end - EPS else None
                graph = around["key"] if around else None
                ctx, replayed = _Context(graph, None, None, None), False
            if ctx.compiling:  # autotuning's benchmark runs, launched while the first call compiled
                rows.add(COMPILE, COMPILING, ctx, e.dur, 0)
            elif kernel_name(e.name):
                rows.add(INDUCTOR, kernel_name(e.name) or e.name, ctx, e.dur, 1, replayed=replayed)
            elif ctx.graph:
                # A replay launches the recorded kernels with no op around them; a graph whose output code calls one
                # extern op only (extern_kernels.mm) tells whose they are, else the row says it cannot.
                op = ctx.op or (rows.index.only_extern_op(rows.index.graph_code.get(ctx.graph)) if replayed else None)
                rows.add(EXTERN, e.name, ctx, e.dur, 1, op=op, replayed=replayed)
            else:
                rows.add(EAGER, e.name, ctx, e.dur, 1, op=ctx.op)
            busy += e.dur
        first, last = min(e.ts for e in evs), max(e.end for e in evs)
        rows.gpu_spans.append((first, last))
        # A run cut out of a profile: its kernels only (the gaps hold the other run's kernels).
        ran = [(e.ts, e.end) for e in evs]
        idle = 0.0 if profile.part_of else (last - first) - union(ran)
        # The GPU idles while a first call compiles (and waits for g++, Triton, autotuning): that is compiling.
        waiting = 0.0
        if idle and compiling:
            window = [(max(s, first), min(e, last)) for s, e in compiling if e > first and s < last]
            waiting = min(idle, union(window) - overlap(window, ran))
        rows.add(COMPILE, COMPILING, _Context(None, None, None, None), waiting, 0)
        rows.add(IDLE, GPU_IDLE, _Context(None, None, None, None), idle - waiting, 0)
        if idle and not profile.part_of:
            rows.idle_gaps.extend(less(gaps_in(ran), compiling))
        total += busy + idle
    rows.compiling = compiling
    return total, len(devices)


def _in_backward(evs: list[ProfileEvent], parents: list[int | None], i: int) -> bool:
    """A graph call the autograd engine made (inside its CompiledFunctionBackward range): the backward graph."""
    p = parents[i]
    while p is not None:
        if "Backward" in evs[p].name:
            return True
        p = parents[p]
    return False

"""The analysis itself: each profile joined to the log (profile_runtime: its rows, graphs and user lines, their
shares, whether it is this log's run at all), and analyze_runtime, which runs it over every profile and compares
an eager run with a compiled one."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from ...model.ids import CompileId
from ...model.profile import Profile, ProfileEvent
from ...model.trace import Trace
from ...wording import count
from ..provenance import Provenance
from . import (COMPILED_REGION, COMPILING, EAGER, EPS, REGION_OP, EXTERN, GPU_IDLE, GRAPH_LAUNCH, GRAPH_RANGE, IDLE, IN_GRAPH,
               INDUCTOR, UNTRACED, GraphRow, KernelRow, LineRow, ProfileCompile, ProfileRuntime, Runtime)
from .comparison import compare, split_runs
from .gpu_idle import idle_by_cpu, part_idle
from .log_index import LogIndex
from .slow_calls import gpu_slow_calls, slow_calls
from .timeline import Rows, cpu_rows, gpu_rows, threads_of


_IDLE_LABELS = {GPU_IDLE: "GPU idle", UNTRACED: "no profiler event"}  # by graph: idle is no graph


def profile_runtime(trace: Trace, provenance: Provenance, profile: Profile, index: LogIndex | None = None) -> ProfileRuntime:
    index = index or LogIndex(trace, provenance)
    rows = Rows(index)
    threads = threads_of(profile.events)
    on_gpu = any(e.on_gpu and e.cat != "gpu_user_annotation" for e in profile.events)
    if on_gpu:
        total, devices = gpu_rows(profile, threads, rows)
    else:
        total, devices = cpu_rows(threads, rows, part=profile.part_of is not None)
    rows.split_by_line()
    kernels = sorted((r for r in rows.rows.values() if r.total_us > 0 or r.calls), key=lambda r: -r.total_us)
    graph_calls = _graph_calls(threads)
    graphs: dict[tuple[str | None, str | None], GraphRow] = {}
    # Compiled regions with no graph range in a call of them (graph_calls' (None, region)): a backend other than
    # Inductor (eager, aot_eager, the user's) runs their graph as the ATen ops inside them, that region's graph.
    bare_regions = {region for graph, region in graph_calls if graph is None and region is not None}
    kernels = _split_region_ops(kernels, rows, bare_regions)
    for r in kernels:
        r.share = r.total_us / total if total else 0.0
    for r in kernels:
        # idle: (None, IDLE), a row apart from the eager ops and compiling (None, None)
        key = (r.graph, r.region) if r.kind in IN_GRAPH else (None, IDLE) if r.kind == IDLE else (None, None)
        in_graph = r.kind in IN_GRAPH
        parts = [(key, r.total_us, in_graph)]
        if r.kind in (EAGER, REGION_OP):
            in_regions = {region: us for region, us in rows.region_us.get(id(r), {}).items() if region in bare_regions}
            parts = [((None, region), us, True) for region, us in in_regions.items()] + [
                (key, r.total_us - sum(in_regions.values()), False)]
        for part_key, us, part_in_graph in parts:
            if us <= 0 and len(parts) > 1:  # (an eager op that ran only inside compiled regions)
                continue
            g = graphs.get(part_key)
            if g is None:
                g = graphs[part_key] = GraphRow(
                    part_key[0], (r.compile_id if in_graph else index.compile_id(part_key[1]) if part_in_graph
                                  else None),
                    graph_calls.get(part_key, 0) if part_in_graph else 0, region=part_key[1] if part_in_graph else None,
                    idle=r.kind == IDLE, idle_label=_IDLE_LABELS.get(r.name) if r.kind == IDLE else None)
            g.compile_id = g.compile_id or (r.compile_id if in_graph else None)
            g.total_us += us
            if r.kind in (INDUCTOR, EXTERN):
                g.kernels_us += us
    for g in graphs.values():
        g.share = g.total_us / total if total else 0.0
    notes = list(profile.notes)
    not_joined = _not_joined(kernels, index, on_gpu)
    matched = not_joined is None
    if not_joined is not None:
        notes.insert(0, not_joined)  # first, as summary-schema.md promises
    else:
        notes.extend(_unknown_kernels(kernels, index))
    if not matched:
        # A profile of another run names its compiled regions "0/0", "1/0" as this log does, and its kernels as any
        # program's: that is no reason to charge them to this log's compiles and lines.
        for r in kernels:
            r.compile_id, r.user_lines, r.line_us, r.code_artifact, r.code_line = None, [], [], None, None
            r.stacks_artifact = r.stacks_name = None
        for g in graphs.values():
            g.compile_id = None
    lines: dict[tuple[str, int], LineRow] = {}
    for r in kernels:
        for u, us in zip(r.user_lines, r.line_us):
            row = lines.get((u.file, u.line))
            if row is None:
                row = lines[(u.file, u.line)] = LineRow(u.file, u.line, u.function, u.code)
            row.total_us += us
            if r.name not in row.kernels:
                row.kernels.append(r.name)
    for row in lines.values():
        row.share = row.total_us / total if total else 0.0
    result = ProfileRuntime(
        source=profile.source, timeline="gpu" if on_gpu else "cpu", total_us=total, devices=devices, kernels=kernels,
        graphs=sorted(graphs.values(), key=lambda g: (not g.in_graph, -g.total_us)),
        lines=sorted(lines.values(), key=lambda r: -r.total_us), notes=notes, matched=matched,
        graph_launches=sum(1 for e in profile.events if e.name == GRAPH_LAUNCH and e.cat == "cuda_runtime"),
        wall_us=profile.wall_us, capabilities=list(profile.capabilities), other_run=not matched and any(r.kind in IN_GRAPH for r in kernels),
        stopped=profile.stopped, not_joined=not_joined, no_lines=None if lines else _no_lines(kernels),
        compiles=_compiles(rows.compile_spans, index) if matched else [], backward=index.backward,
        # (a run cut out of a profile counts its kernels only on a GPU: no idle for a slow graph call to cost it)
        slow_calls=([] if not matched else slow_calls(rows) if not on_gpu
                    else gpu_slow_calls(rows, threads)
                    if profile.part_of is None else []),
        idle_by_cpu=idle_by_cpu(rows.idle_gaps, threads) if rows.idle_gaps else [],
    )
    _run_shares(result)
    return result


def _split_region_ops(kernels: list[KernelRow], rows: Rows, bare_regions: set[str]) -> list[KernelRow]:
    """An eager op's time inside compiled regions with no graph range is that region's graph's (REGION_OP), the rest
    eager: an op all of whose time was inside changes kind, one that ran both inside and outside (aten::gelu in the
    region's graph and in the user's code after it) becomes two rows, as where the run time went differs. The new
    row takes over the region time (rows.region_us), so by graph counts each part once."""
    out: list[KernelRow] = []
    for r in kernels:
        spent_in = {region: us for region, us in rows.region_us.get(id(r), {}).items() if region in bare_regions}
        inside = sum(spent_in.values())
        if r.kind != EAGER or not spent_in or inside <= EPS:
            out.append(r)
            continue
        if inside >= r.total_us - EPS:
            r.kind = REGION_OP
            out.append(r)
            continue
        called_in = rows.region_calls.get(id(r), {})
        calls_inside = sum(n for region, n in called_in.items() if region in spent_in)
        region_op = dataclasses.replace(r, kind=REGION_OP, calls=calls_inside, total_us=inside,
                                        inner_ops=list(r.inner_ops), user_lines=list(r.user_lines),
                                        line_us=list(r.line_us))
        r.calls -= calls_inside
        r.total_us -= inside
        rows.region_us[id(region_op)] = spent_in
        rows.region_us[id(r)] = {region: us for region, us in rows.region_us[id(r)].items() if region not in spent_in}
        out += [region_op, r]
    return sorted(out, key=lambda r: -r.total_us)


def _compiles(spans: list[tuple[float, float, str | None]], index: LogIndex) -> list[ProfileCompile]:
    """The compiles a profile covers, by the compile id torch's ranges name: a recompile (frame_compile_id > 0) is
    no first call's work, and warming up before profiling leaves it in."""
    out: list[ProfileCompile] = []
    for start, end, text in sorted(spans):
        cid = index.compile_id(text) if text else None
        out.append(ProfileCompile(cid, end - start, bool(cid and cid.frame_compile_id)))
    return out


def _graph_calls(threads: dict[tuple, list[ProfileEvent]]) -> dict[tuple[str | None, str | None], int]:
    """(graph key, None) -> its calls; (None, region) -> the calls of that compiled region with no graph range in them."""
    calls: dict[tuple[str | None, str | None], int] = {}
    for evs in threads.values():
        regions: list[tuple[float, str, list[bool]]] = []  # open ones: (end, region, [a graph range inside])
        bare: list[tuple[str, list[bool]]] = []
        for e in evs:
            while regions and regions[-1][0] <= e.ts + EPS:
                regions.pop()
            m, r = GRAPH_RANGE.match(e.name), COMPILED_REGION.match(e.name)
            if m:
                calls[(m["key"], None)] = calls.get((m["key"], None), 0) + 1
                if regions:
                    regions[-1][2][0] = True
            elif r:
                regions.append((e.end, r["cid"], [False]))
                bare.append((r["cid"], regions[-1][2]))
        for region, graph_inside in bare:
            if not graph_inside[0]:
                calls[(None, region)] = calls.get((None, region), 0) + 1
    return calls


def _run_shares(p: ProfileRuntime) -> None:
    """When the profile covers a compile, each row's part of the rest: the run a user wants to speed up."""
    compiling, run = p.compiling_us, p.run_us
    if not compiling or run <= 0:
        return
    for k in p.kernels:
        k.run_share = None if k.name == COMPILING else k.total_us / run
    for g in p.graphs:
        g.run_share = (g.total_us - (0.0 if g.in_graph or g.idle else compiling)) / run
    for line in p.lines:
        line.run_share = line.total_us / run


def _no_lines(kernels: list[KernelRow]) -> str:
    """Why no kernel of a profile has user lines. A kernel joined to a stack traces artifact found its record: torch
    logged the provenance (a list per kernel) and gave these kernels empty lists, so running with provenance on again
    would change nothing."""
    if not any(r.kind in IN_GRAPH for r in kernels):
        if any(r.kind == REGION_OP for r in kernels):
            return ("A backend other than Inductor ran this profile's compiled graphs as ATen ops, which have no user "
                    "lines in the log: no kernel of it has user lines.")
        return "No compiled graph ran in this profile: no kernel of it has user lines."
    if any(r.stacks_artifact is not None for r in kernels):
        return ("torch logged Inductor provenance for this profile's kernels with no stack trace (empty lists in "
                "inductor_provenance_tracking_kernel_stack_traces): no kernel has user lines.")
    return ("No kernel of this profile has user lines in the log (provenance: run with INDUCTOR_PROVENANCE=1, "
            "or capture()).")


def _not_joined(kernels: list[KernelRow], index: LogIndex, on_gpu: bool) -> str | None:
    """Why the profile is not of this log's run, or None when it is: most of its compiled graphs (their cache keys)
    or most of its Inductor kernel names are in the log. One name is no evidence: triton_per_fused_native_layer_norm_0
    is the name of any program's first layer norm."""
    inductor = {r.name for r in kernels if r.kind == INDUCTOR}
    graphs = {r.graph for r in kernels if r.graph}
    known = {n for n in inductor if index.knows_kernel(n)}
    known_graphs = {g for g in graphs if g in index.graph_cid}
    if (inductor or graphs) and 2 * len(known_graphs) <= len(graphs) and 2 * len(known) <= len(inductor):
        found = [f"{len(known)} of its {count(len(inductor), 'Inductor kernel name')}"] if inductor else []
        found += [f"{len(known_graphs)} of its {count(len(graphs), 'compiled graph')}"] if graphs else []
        return (f"this profile is from another run: this log has {' and '.join(found)}; its time is not joined to "
                "this log's graphs and lines")
    if not inductor and not graphs:
        # torch names each call of a compiled frame (its "Torch-Compiled Region: 0/0"), whatever the backend
        ran = sorted({index.by_text[m["cid"]] for r in kernels if (m := COMPILED_REGION.match(r.name))
                      and m["cid"] in index.by_text}, key=CompileId.sort_key)
        if ran and not any(a.name.startswith("inductor_output_code")
                           for entry in index.trace.compiles.values() for a in entry.artifacts):
            return (f"compiled graphs ran in this profile ({', '.join(map(str, ran))}), but this log holds no Inductor "
                    "code of them: a backend other than Inductor (backend=\"eager\", \"aot_eager\", your own) runs their "
                    "ops as ATen ops, counted here as ATen ops in a compiled region")
        why = "no compiled graph ran in this profile (an eager run, or torch.compile was not used while profiling)"
        # A GPU profile names Triton kernels whatever the config; a CPU one names C++ kernels only when asked to.
        return why if on_gpu else why + ("; on CPU, Inductor kernels are named only with "
                                         "torch._inductor.config.cpp.enable_kernel_profile=True")
    return None


def _unknown_kernels(kernels: list[KernelRow], index: LogIndex) -> list[str]:
    """A note on the Inductor kernels of a matched profile that the log does not name."""
    unknown = sorted(n for n in {r.name for r in kernels if r.kind == INDUCTOR} if not index.knows_kernel(n))
    return [f"{count(len(unknown), 'Inductor kernel name')} not in this log: {', '.join(unknown[:5])}"] if unknown else []


def analyze_runtime(trace: Trace, provenance: Provenance, profiles: Sequence[Profile]) -> Runtime:
    if not profiles:
        return Runtime()
    index = LogIndex(trace, provenance)
    result = Runtime([profile_runtime(trace, provenance, p, index) for p in profiles])
    eager = [p for p in result.profiles if not p.compiled]
    compiled = [p for p in result.profiles if p.compiled and p.matched]
    if eager and compiled:
        result.comparison = compare(eager[0], compiled[0])
        side = eager[0]
        if side.not_joined is not None and side.notes and side.notes[0] == side.not_joined:
            # Its compiled counterpart is here: no compiled graph ran in it because it is the eager run, not for want
            # of enable_kernel_profile.
            side.not_joined = side.notes[0] = (f"the eager run, compared below with {compiled[0].source.rsplit('/', 1)[-1]}: "
                                               "no compiled graph ran in it")
    else:
        for profile, whole in zip(profiles, result.profiles):
            parts = split_runs(profile)
            if parts is not None:
                runs = [profile_runtime(trace, provenance, p, index) for p in parts]
                result.comparison = compare(*runs)
                whole.idle_by_part = [part_idle(name, part, run)
                                      for name, part, run in zip(("eager", "compiled"), parts, runs)]
                break
    return result

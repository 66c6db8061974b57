"""The Insights lines of the run time: one per profile (runtime_finding), eager against compiled
(comparison_finding), and float32 matmuls that TF32 would shorten (tf32_unused, matmul_time)."""

from __future__ import annotations

import re

from ...wording import count, format_us
from . import EXTERN, GPU_IDLE, INDUCTOR, Comparison, ProfileRuntime


# Slow calls costing this much of the run distort its shares: the finding says so (the runtime page lists every one).
SLOW_WORTH_SAYING = 0.05
# A GPU idle for half the run or more waits on the CPU: worth a line of "what to fix first".
IDLE_WORTH_SAYING = 0.5
# Why it waits: CUDA graphs already replay (what is left is the CPU's own time), or kernels launched one by one
_IDLE_UNDER_GRAPHS = "with CUDA graphs on: the CPU keeps it waiting (Python, synchronisation, data loading)"
_IDLE_LAUNCH_BOUND = "launch-bound (small kernels, Python between them), where CUDA graphs (mode=\"reduce-overhead\") help"


def comparison_finding(c: Comparison) -> tuple[str, str] | None:
    """The Insights line for eager against compiled, (title, detail): what a user profiling both runs asked."""
    if not c.speedup:  # None, or 0: eager did no work (an empty or cut eager profile), nothing to compare
        return None
    work = "the GPU work" if c.timeline == "gpu" else "the profiled work"
    faster = c.speedup >= 1
    title = (f"compiled ran {work} {(c.speedup if faster else 1 / c.speedup):.2f}x {'faster' if faster else 'slower'} "
             f"than eager: {format_us(c.compiled_us)} vs {format_us(c.eager_us)}")
    detail = (f"each side: {c.busy_definition}; eager {c.eager.rsplit('/', 1)[-1]}, "
              f"compiled {c.compiled.rsplit('/', 1)[-1]}")
    steady = c.steady_speedup
    if steady is not None and c.compiled_slow_us >= SLOW_WORTH_SAYING * c.compiled_us:
        # Measured fairly, a first call's warm-up (a recompile's first run) is no part of either side's steady state
        title += (f"; with its {count(c.compiled_slow_calls, 'slow call')} at their kernels' median "
                  f"({format_us(c.compiled_slow_us)} over it, {c.compiled_slow_us / c.compiled_us:.0%} of its time), "
                  f"{steady if steady >= 1 else 1 / steady:.2f}x {'faster' if steady >= 1 else 'slower'}")
    if faster and c.compiling_us and c.compiled_us + c.compiling_us > c.eager_us:
        # Faster at its work, yet as profiled the compiled run was the slower: say so first, with what it compiled (the profile's compile
        # ranges name their compile ids) and whether a warm-up would have left that out.
        again = c.recompiles
        n = len(c.compiled_compiles)
        what = (count(n, "recompile") if again == n else count(n, "compile")
                + (f", {again} of them {'a recompile' if again == 1 else 'recompiles'}" if again else ""))
        ids = ", ".join(str(k.compile_id) for k in c.compiled_compiles[:4] if k.compile_id)
        title += (f"; but its profile also holds {format_us(c.compiling_us)} of compiling ({what}"
                  f"{': ' + ids if ids else ''}), so as profiled it was slower")
    if c.wall_speedup is not None and c.eager_wall_us and c.compiled_wall_us:
        detail += (f"; wall time of the runs' ranges (launches and waits included): {format_us(c.compiled_wall_us)} "
                   f"vs {format_us(c.eager_wall_us)}, {c.wall_speedup:.2f}x")
    return title, detail


# The ATen ops whose GPU kernels are matrix multiplies (cuBLAS, CUTLASS), as the profile names the op that launched a
# kernel; and Inductor's GEMM templates (max-autotune's triton_tem_fused_mm_0, triton_tem_fused_addmm_1), op-less.
MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
                        "aten::addbmm", "aten::mv", "aten::addmv", "aten::dot", "aten::_addmm_activation"})
_GEMM_TEMPLATE = re.compile(r"^triton_tem_\w*mm")


def matmul_time(p: ProfileRuntime) -> tuple[float, float, list[str]]:
    """The GPU time of the profile's matrix-multiply kernels: (µs, share of the run, the ops that launched them, most
    time first). What TF32 would speed up where torch warned that float32 matmuls run without it."""
    by_op: dict[str, float] = {}
    share = 0.0
    for k in p.kernels:
        op = k.op if k.op in MATMUL_OPS else "Inductor GEMM template" if _GEMM_TEMPLATE.match(k.name) else None
        if op is not None:
            by_op[op] = by_op.get(op, 0.0) + k.total_us
            share += k.reported_share
    return sum(by_op.values()), share, sorted(by_op, key=lambda op: -by_op[op])


# A float32 GEMM share of the GPU time below this is not worth a warning of its own (TF32 would save a part of it).
FLOAT32_GEMM_WORTH_SAYING = 0.2
TF32_FROM = 8  # TF32 tensor cores: compute capability 8.0 (Ampere) and newer


def float32_gemms(p: ProfileRuntime) -> tuple[float, float, list[str]]:
    """The GPU time of the library GEMMs that multiplied in float32 (cuBLAS's f32f32 xmma kernels, CUTLASS's float32
    ones, split-K included; KernelRow.library): (µs, share of the run, what they are, most time first). TF32 kernels
    and Inductor's own GEMM templates (whose names say no type) are not counted."""
    by_kind: dict[str, float] = {}
    share = 0.0
    for k in p.kernels:
        library = k.library
        if library and "float32 GEMM" in library:
            kind = library.split(",")[0]
            by_kind[kind] = by_kind.get(kind, 0.0) + k.total_us
            share += k.reported_share
    return sum(by_kind.values()), share, sorted(by_kind, key=lambda kind: -by_kind[kind])


def tf32_unused(p: ProfileRuntime) -> str | None:
    """"in profile.json cuBLAS float32 GEMM kernels took 95% of the GPU time (33 ms) on a GPU of compute capability
    9.0, which has TF32 tensor cores (...); ": the profile alone shows float32 matmuls that TF32 would
    shorten, where torch's warning (printed on stderr, never in the log) was not recorded. None: its float32 GEMMs
    take under FLOAT32_GEMM_WORTH_SAYING of its time, or its GPUs are older than Ampere or unknown."""
    if p.timeline != "gpu" or not p.capabilities or any(int(c.split(".")[0]) < TF32_FROM for c in p.capabilities):
        return None
    us, share, kinds = float32_gemms(p)
    if share < FLOAT32_GEMM_WORTH_SAYING:
        return None
    return (f"in {p.source.rsplit('/', 1)[-1]} {' and '.join(kinds)} kernels took {share:.0%} of the GPU time "
            f"({format_us(us)}) on a GPU of compute capability {', '.join(sorted(set(p.capabilities)))}, which has "
            f"TF32 tensor cores (from {TF32_FROM}.0, Ampere, on); ")


def runtime_finding(p: ProfileRuntime) -> tuple[str, str]:
    """The Insights line for one profile: (title, detail). Shares are of the run when the profile covers a compile."""
    source = p.source.rsplit("/", 1)[-1]
    if not p.matched and not p.compiled:  # an eager run: nothing of it is this log's to join, and nothing went wrong
        title = f"profile {source}: {format_us(p.total_us)} of {p.timeline.upper()} time{p.part_read}, no compiled graph ran"
        return title, p.not_joined or ""
    if not p.matched:
        return f"profile {source}: not joined to this log", p.not_joined or ""

    in_graphs = sum(g.reported_share for g in p.graphs if g.in_graph)
    top = next((k for k in p.kernels if k.kind in (INDUCTOR, EXTERN)), None)
    compiling = p.compiling_us / p.total_us if p.total_us else 0.0
    title = f"profile {source}: {format_us(p.total_us)} of {p.timeline.upper()} time{p.part_read}"
    if compiling >= 0.1:
        title += f", {compiling:.0%} of it compiling"
    detail = f"{in_graphs:.0%} of the run in compiled graphs" if p.run_share_known else f"{in_graphs:.0%} in compiled graphs"
    compiled_part = next((i for i in p.idle_by_part if i.part == "compiled"), None)
    if compiled_part is not None:  # over the whole, the eager run's time would count against the compiled one
        detail = f"{compiled_part.graphs_share:.0%} of the compiled part in compiled graphs (the eager part left out)"
    if p.stopped:  # a share of a part may be nothing like the whole's
        detail = f"read stopped early ({p.stopped}): every number is of the events before that; " + detail
    idle = next((k for k in p.kernels if k.name == GPU_IDLE), None)
    if idle is not None and idle.reported_share >= IDLE_WORTH_SAYING and p.idle_by_part:
        # Eager and compiled calls in one profile: one idle share would give the compiled part's cause to both.
        parts = "; ".join(f"{i.share:.0%} of the {i.part} part ({format_us(i.idle_us)}), "
                          + (_IDLE_UNDER_GRAPHS if i.graph_launches else _IDLE_LAUNCH_BOUND) for i in p.idle_by_part)
        detail += f"; the GPU is idle {idle.reported_share:.0%} of the profile (the gap between its parts included): {parts}"
    elif idle is not None and idle.reported_share >= IDLE_WORTH_SAYING:
        if p.run_share_known:  # on the H200, most of it was first calls loading cuBLAS and attention kernels
            detail += (f"; the GPU is idle {idle.reported_share:.0%} of the run, first calls included (they load kernels and "
                       "libraries)")
        elif p.graph_launches:  # CUDA graphs already replay: what is left is the CPU's own time
            detail += f"; the GPU is idle {idle.reported_share:.0%} of the run, {_IDLE_UNDER_GRAPHS}"
        elif (outside := p.idle_outside_graph_calls) >= 0.5:
            # Most of the wait is no graph's launches: CUDA graphs would not take it away
            detail += (f"; the GPU is idle {idle.reported_share:.0%} of the run, {outside:.0%} of that outside the "
                       "compiled graph calls")
        else:
            detail += f"; the GPU is idle {idle.reported_share:.0%} of the run: {_IDLE_LAUNCH_BOUND}"
        if p.idle_said:  # what kept it waiting: an eager op's stall is no launch overhead, nor a graph's warm-up
            detail += f" ({p.idle_said})"
    if top is not None:
        via = f" via {top.op}" if top.op and top.op != top.name else ""
        lines = f" ({', '.join(u.short for u in top.user_lines[:2])})" if top.user_lines else ""
        # a library's kernel by what it is (its name is the runtime table's and --json's)
        kernel = top.library or (top.name if len(top.name) <= 60 else top.name[:57] + "...")
        if compiled_part is not None:  # a compiled kernel ran in the compiled part: its share of that, as the detail's
            share = f"{compiled_part.share_of(top.total_us):.0%} of the compiled part"
        else:
            share = f"{top.reported_share:.0%}"
        detail += f"; top kernel {kernel}{via}: {share}{lines}"
    if p.slow_us and p.run_us and p.slow_us / p.run_us >= SLOW_WORTH_SAYING:
        detail += f"; {p.slow_said}"
    if compiling >= 0.1:
        again = [c for c in p.compiles if c.recompile]
        if again:  # a new size, a branch taken the first time: warming up did not, and will not, leave these out
            ids = ", ".join(str(c.compile_id) for c in again[:4]) + (", ..." if len(again) > 4 else "")
            detail += (f"; {count(len(again), 'recompile')} in it ({ids}: {format_us(sum(c.us for c in again))}), "
                       "which a warm-up step does not leave out: stop them (see Recompiles)")
        if len(again) < len(p.compiles) or not p.compiles:
            detail += f"; profile after a first step{' (forward and backward)' if p.backward else ''} to leave the compile out"
    return title, detail

"""Findings of CUDA graphs: compiles that ran without them (skipped, or set up and never recorded), graphs run
once (a warm-up only), graphs recorded again for another input shape."""

from __future__ import annotations

from ..cudagraphs import BACKWARD_PENDING, CudaGraphCompile, CudaGraphs
from ..graph_breaks.resume_names import function_label
from ..torch_warnings import PENDING_BACKWARD, TorchWarnings
from . import INFO, WARNING, Finding


def cudagraph_skips(cg: CudaGraphs) -> list[Finding]:
    """A compile run without CUDA graphs is a warning: the speed-up reduce-overhead asked for is lost. One per
    reason and line."""
    out = []
    by_reason: dict[tuple, list[CudaGraphCompile]] = {}
    for c in cg.skipped:
        by_reason.setdefault((c.skip_summary, c.skip_location.short if c.skip_location else None), []).append(c)
    for (reason, where), compiles in by_reason.items():
        which = ", ".join(_compile_named(c.compile_id, c.name) for c in compiles[:3])
        more = f" and {len(compiles) - 3} more" if len(compiles) > 3 else ""
        out.append(Finding(WARNING, "cudagraphs", f"CUDA graphs skipped for {which}{more}",
                           f"{reason}" + (f" at {where}" if where else "")))
    return out


def cudagraphs_never_recorded(cg: CudaGraphs, printed: TorchWarnings) -> list[Finding]:
    """Set up and never recorded, and the log cannot say why: a skip (reduce-overhead's speed-up lost), or a single
    call (a warm-up)."""
    compiles = cg.never_recorded
    if not compiles:
        return []
    which = ", ".join(_compile_named(c.compile_id, c.name) for c in compiles[:3])
    more = f" and {len(compiles) - 3} more" if len(compiles) > 3 else ""
    shapes = _per_shape(compiles)
    pending = [w for w in printed.warnings if w.name == PENDING_BACKWARD]
    if pending:  # recorded by run or capture(): torch said why, on stderr
        where = f" at {pending[0].location.short}" if pending[0].location else ""
        return [Finding(WARNING, "cudagraphs", f"CUDA graphs never recorded for {which}{more}",
                        f"torch warned{where} that {BACKWARD_PENDING}: {pending[0].advice}{shapes}")]
    # Without compilescope's recorders the log cannot tell a graph skipped at its first call from one called once.
    return [Finding(WARNING, "cudagraphs", f"no CUDA graph was recorded for {which}{more}",
                    "set up at its first call, and torch logged no skip reason: a graph run only once is warmed up, "
                    "never recorded (CUDA graph trees record at the second call), and a skip decided at the first call "
                    "is said on the program's stderr only: \"skipping cudagraphs due to ...\" (a mutated input, say), "
                    "or \"pending, uninvoked backwards\" (call backward, or run under torch.no_grad()). compilescope "
                    f"run records them in the log{shapes}")]


def _per_shape(compiles: list[CudaGraphCompile]) -> str:
    """"; [0/1] was set up twice, once per input shape: ...": what a graph set up for several shapes will cost once
    it records, and what to do about it. A dynamic compile does not help: CUDA graph trees key a graph on the sizes."""
    several = [c for c in compiles if c.set_up_per_shape]
    if not several:
        return ""
    which = "; ".join(f"{c.compile_id} was {c.set_up_per_shape}" for c in several[:3])
    return (f". {which}: CUDA graph trees keep a graph per input size, even of a dynamic compile, so once recorded each "
            "new size costs a recording and its GPU memory; pad the inputs to a few fixed sizes")


def _compile_named(compile_id: str, code_name: str | None) -> str:
    """"[1/0] (f (after its graph break at line 23))": a compile id and its function as the report names it."""
    return f"{compile_id} ({function_label(code_name)})" if code_name else compile_id


def cudagraphs_run_once(cg: CudaGraphs) -> list[Finding]:
    """Set up, run once and never recorded, the run's recorders rule out a skip: nothing was lost but a warm-up."""
    compiles = cg.ran_once
    if not compiles:
        return []
    which = ", ".join(_compile_named(c.compile_id, c.name) for c in compiles[:3])
    more = f" and {len(compiles) - 3} more" if len(compiles) > 3 else ""
    return [Finding(INFO, "cudagraphs", f"{which}{more} ran once: warmed up, never recorded as a CUDA graph",
                    "CUDA graph trees run a graph's first call as a warm-up and record it at the second; the run "
                    "recorded torch's CUDA graph skips and warnings, none for it, so it was not skipped: it was not "
                    "called again (a prefill, say, runs once per prompt length)")]


def cudagraph_recordings(cg: CudaGraphs) -> list[Finding]:
    """A graph recorded again, for another input shape, is worth knowing: each recording costs time and GPU memory."""
    return [Finding(INFO, "cudagraphs", f"CUDA graph of {_compile_named(c.compile_id, c.name)} recorded "
                    f"{len(c.recordings_ms)} times",
                    "one graph is recorded per distinct input shape, even for a dynamic compile, each costing time "
                    "and GPU memory: pad inputs to a few sizes")
            for c in cg.recorded_again]

"""Insights: what to fix first. Runs every insight analysis and ranks the findings.

`insights(trace)` is the entry point; `Insights.to_json()` is the document of
`compilescope summary --json` (schema: docs/summary-schema.md; bump SCHEMA_VERSION
when a key changes meaning or goes away; adding keys keeps the version).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.trace import Trace
from .caches import Caches, caches
from .compile_time import PHASE_LABELS, CompileTimes, compile_times, format_seconds
from .dynamic_shapes import DynamicShapes, dynamic_shapes
from .errors import CompileErrors, compile_errors
from .graph_breaks import GraphBreaks, graph_breaks
from .sources import add_eager_lines, graph_break_sites
from .recompiles import CHANGE_LABELS, Recompiles, recompiles

SCHEMA_VERSION = 1

ERROR, WARNING, INFO = "error", "warning", "info"


@dataclass
class Finding:
    severity: str  # "error" | "warning" | "info"
    section: str  # "errors" | "recompiles" | "graph_breaks" | "compile_time" | "caches" | "dynamic_shapes"
    title: str
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "section": self.section, "title": self.title, "detail": self.detail}


@dataclass
class Insights:
    source: str
    n_compiles: int
    graph_breaks: GraphBreaks
    recompiles: Recompiles
    compile_time: CompileTimes
    caches: Caches
    errors: CompileErrors
    dynamic_shapes: DynamicShapes
    findings: list[Finding] = field(default_factory=list)  # most urgent first

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "source": self.source,
            "compiles": self.n_compiles,
            "findings": [f.to_json() for f in self.findings],
            "errors": self.errors.to_json(),
            "recompiles": self.recompiles.to_json(),
            "graph_breaks": self.graph_breaks.to_json(),
            "compile_time": self.compile_time.to_json(),
            "caches": self.caches.to_json(),
            "dynamic_shapes": self.dynamic_shapes.to_json(),
        }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def findings(ins: Insights) -> list[Finding]:
    """Ranked: compiles that failed or stopped compiling first, then what costs graphs, then time."""
    out: list[Finding] = []
    for frame in ins.recompiles.frames:
        if frame.hit_limit:
            guard = frame.steps[-1].guard if frame.steps else None
            out.append(Finding(ERROR, "recompiles", f"{frame.name or 'a function'} hit the recompile limit and runs uncompiled",
                               f"{' → '.join(frame.chain)}; failing guard: {guard.guard if guard else '?'}"))
    for err in ins.errors.errors:
        if err.stage == "recompile_limit":
            continue  # reported above, with its guard
        where = f" at {err.location.short}" if err.location else ""
        out.append(Finding(ERROR, "errors", f"{err.compile_id} failed in {err.stage_label}{where}",
                           f"{err.exception}: {err.message}"))
    if ins.graph_breaks:
        gb = ins.graph_breaks
        lines = ", ".join(b.location.short if b.location else b.reason for b in gb.breaks[:3])
        out.append(Finding(WARNING, "graph_breaks", f"{_plural(len(gb.breaks), 'distinct graph break')} "
                                                   f"({_plural(gb.total, 'event')})", lines))
    for frame in ins.recompiles.frames:
        if not frame.hit_limit:
            changes = ", ".join(CHANGE_LABELS[c] for c in frame.changes)
            out.append(Finding(WARNING, "recompiles", f"{frame.name or 'a function'} recompiled {_plural(frame.recompiles, 'time')}",
                               f"changed: {changes}" if changes else ""))
    ct = ins.compile_time
    if ct and ct.phases:
        top = ct.phases[0]
        out.append(Finding(INFO, "compile_time", f"compiling took {format_seconds(ct.total_s)}",
                           f"{top.label}: {top.share:.0%}; slowest {ct.compiles[0].compile_id} "
                           f"({format_seconds(ct.compiles[0].total_s)})"))
    if ins.caches.graphs_missing:
        out.append(Finding(INFO, "caches", f"served from cache: {', '.join(ins.caches.graphs_missing)}",
                           "AOTAutograd/Inductor graphs of these compiles are not in the log; "
                           "run with a fresh TORCHINDUCTOR_CACHE_DIR to see them"))
    if ins.dynamic_shapes.specializations:
        n = len(ins.dynamic_shapes.specializations)
        out.append(Finding(INFO, "dynamic_shapes", f"{_plural(n, 'dynamic size')} specialized to a constant",
                           ", ".join(f"{s.symbol}={s.value}" for s in ins.dynamic_shapes.specializations[:3])))
    return out


def insights(trace: Trace) -> Insights:
    ins = Insights(
        source=trace.source,
        n_compiles=sum(1 for cid in trace.compiles if cid is not None),
        graph_breaks=graph_breaks(trace),
        recompiles=recompiles(trace),
        compile_time=compile_times(trace),
        caches=caches(trace),
        errors=compile_errors(trace),
        dynamic_shapes=dynamic_shapes(trace),
    )
    add_eager_lines(ins.graph_breaks, graph_break_sites(trace))
    ins.findings = findings(ins)
    return ins


__all__ = ["Insights", "Finding", "insights", "SCHEMA_VERSION", "PHASE_LABELS"]

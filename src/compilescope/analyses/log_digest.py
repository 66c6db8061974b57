"""A few lines about one log, for a page that lists many reports (compilescope LOG LOG ...)."""

from __future__ import annotations

from dataclasses import asdict, field
from typing import Any

from .results import Results
from .status import OK, STATUSES, failed_compiles
from ..model.records import dataclass

TOP_FINDINGS = 3


@dataclass
class LogDigest:
    source: str
    compiles: int  # compile ids
    statuses: dict[str, int]  # compile ids per status (ok, break, empty, error, missing)
    failures: int  # compile ids that failed (analyses.status.failed_compiles, as a rank's summary counts them)
    restarts: int  # restarts (graph breaks) on the failures and restarts page
    graph_breaks: int  # distinct graph breaks
    recompiles: int
    skipped_lines: int  # records not read as events (see the report's parse statistics)
    export_issues: int | None = None  # draft-export issues; None: the log holds no torch.export run
    findings: list[dict[str, str]] = field(default_factory=list)  # the most urgent first: severity, title
    error: str | None = None  # the log could not be read at all
    # The log was read (every figure above stands), but its own report could not be written: where, why and what to
    # do, in a line (log_job.write_failure), as a rank's RankSummary.report_not_written.
    report_not_written: str | None = None
    # Of statuses' "ok", the compile ids that compiled and made no graph at all (empty_graphs.no_graph): their status
    # is tlparse's, but nothing of them runs compiled, and the report's cards count them apart ("1 compiled, with no
    # graph"): the page shows them in a column of their own, not as compiled.
    no_graph: int = 0

    @property
    def compiled_statuses(self) -> dict[str, int]:
        """statuses as the page's columns count them: "ok" without the compile ids that made no graph (no_graph)."""
        return {**self.statuses, OK: self.statuses.get(OK, 0) - self.no_graph}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "LogDigest":
        return cls(**data)


def digest_log(results: Results) -> LogDigest:
    trace = results.trace
    assert trace is not None  # analyze() keeps the trace it read
    statuses = results.status_counts
    ins = results.insights
    return LogDigest(
        source=trace.source,
        compiles=sum(statuses.values()),
        statuses=statuses,
        failures=failed_compiles(results.statuses),
        restarts=sum(1 for row in results.failures if row.is_restart),
        graph_breaks=len(ins.graph_breaks.breaks) if ins else 0,
        recompiles=ins.recompiles.total if ins else 0,
        skipped_lines=sum(n for outcome, n in trace.stats.outcomes.items() if outcome != "ok"),
        export_issues=len(results.export.issues) if results.export.detected else None,
        findings=_findings(results),
        no_graph=len(ins.empty_graphs.no_graph) if ins else 0,
    )


def _findings(results: Results) -> list[dict[str, str]]:
    found = [{"severity": f.severity, "title": f.title} for f in (results.insights.findings if results.insights else [])]
    export = results.export
    if export.detected and not export.issues:  # (issues are among the insights' findings, first)
        title = "draft export succeeded" if export.success else "draft export: no exported program logged"
        found.insert(0, {"severity": "info", "title": title})
    return found[:TOP_FINDINGS]


def unreadable_log(source: str, error: str) -> LogDigest:
    return LogDigest(source, 0, {s: 0 for s in STATUSES}, 0, 0, 0, 0, 0, error=error)

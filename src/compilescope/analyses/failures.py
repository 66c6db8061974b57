"""Failed compiles and restarts (graph breaks), one row each: failures_and_restarts.html."""

from __future__ import annotations


from ..model.ids import CompileId
from ..model.trace import Trace
from .errors import CompileErrors, CompilerDiagnostic
from ..model.records import dataclass


@dataclass
class FailureRow:
    """One failure or restart of a compilation: a row of the report's failures and restarts table."""

    compile_id: CompileId | None
    kind: str  # the failure type, or "RestartAnalysis" for a restart
    reason: str
    source: str | None  # "file:line" of the user frame, for failures
    metrics_number: int | None  # the compilation_metrics artifact to link to
    message: str | None = None  # the reason's first line, for failures
    diagnostics: tuple[CompilerDiagnostic, ...] = ()  # a C++ compile's `error:` lines

    @property
    def is_restart(self) -> bool:
        return self.kind == "RestartAnalysis"

    def to_json(self) -> dict:
        return {
            "compile_id": str(self.compile_id) if self.compile_id else None,
            "type": self.kind,
            "reason": self.reason,
            "source": self.source,
        }


def failures_and_restarts(trace: Trace, errors: CompileErrors | None = None) -> list[FailureRow]:
    """One row per failure and restart; `errors` (analyses.errors) supply the user frame when torch logged none."""
    by_key = {e.compile_id: e for e in errors.errors} if errors is not None else {}
    rows: list[FailureRow] = []
    for entry in trace.compiles.values():
        metrics = entry.metrics
        if not metrics:
            continue
        number = next((a.number for a in entry.artifacts if a.kind == "compilation_metrics"), None)
        if metrics.get("fail_type"):
            filename = metrics.get("fail_user_frame_filename")
            lineno = metrics.get("fail_user_frame_lineno")
            source = f"{filename}:{lineno}" if filename else None
            error = by_key.get(entry.key)
            if source is None and error is not None and error.location is not None:
                source = f"{error.location.filename}:{error.location.line}"
            rows.append(FailureRow(entry.compile_id, str(metrics["fail_type"]), str(metrics.get("fail_reason") or ""), source,
                                   number, error.message if error else None, tuple(error.diagnostics) if error else ()))
        for reason in metrics.get("restart_reasons") or []:
            rows.append(FailureRow(entry.compile_id, "RestartAnalysis", str(reason), None, number))
    return rows

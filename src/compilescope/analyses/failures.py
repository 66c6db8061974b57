"""Failed compiles and restarts (graph breaks), one row each: failures_and_restarts.html."""

from __future__ import annotations


from ..model.ids import CompileId, compilation_key
from ..model.trace import Trace
from .errors import CompileErrors, CompilerDiagnostic, metrics_number
from .graph_breaks import GraphBreaks
from ..model.records import dataclass


@dataclass
class FailureRow:
    """One failure or restart of a compilation: a row of the report's failures and restarts table."""

    compile_id: CompileId | None
    kind: str  # the failure type, or "RestartAnalysis" for a restart
    reason: str
    source: str | None  # "file:line" where the compile failed, for failures, when the log says where
    metrics_number: int | None  # the compilation_metrics artifact to link to
    message: str | None = None  # the reason's first line, for failures
    diagnostics: tuple[CompilerDiagnostic, ...] = ()  # a C++ compile's `error:` lines
    # A restart whose reason torch did not work out (UNKNOWN_RESTART): the graph break it logged for the
    # compilation, `reason at file:line`, when there is one.
    graph_break: str | None = None
    # A failure the log gives no location for: the frame being compiled, "file:line" of its def (context only: the
    # failure may be anywhere in it, or in torch).
    compiled_frame: str | None = None

    @property
    def is_restart(self) -> bool:
        return self.kind == "RestartAnalysis"

    def to_json(self) -> dict:
        return {
            "compile_id": str(self.compile_id) if self.compile_id else None,
            "type": self.kind,
            "reason": self.reason,
            "source": self.source,
            "compiled_frame": self.compiled_frame,
        }


# torch's restart reason when its analysis of the restart found none (it still logged the graph break itself).
UNKNOWN_RESTART = "Unknown fail_and_restart_analysis"


def failures_and_restarts(trace: Trace, errors: CompileErrors | None = None,
                          breaks: GraphBreaks | None = None) -> list[FailureRow]:
    """One row per failure and restart; `errors` (analyses.errors) supply the user frame when torch logged none,
    `breaks` (analyses.graph_breaks) the graph break of a restart whose reason torch did not work out."""
    # (a compile id's error, and each of those outside one by its metrics record: several strict torch.export calls)
    by_key = {(e.compile_id, e.metrics_number): e for e in errors.errors} if errors is not None else {}
    break_of: dict[str, str] = {}  # compilation ("[1/0]") -> its first graph break, as `reason at file:line`
    for b in breaks.breaks if breaks is not None else []:
        for key in b.compile_ids:
            break_of.setdefault(key, b.reason + (f" at {b.location.short}" if b.location else ""))
    rows: list[FailureRow] = []
    for entry in trace.metrics_compiles(sort=False):
        metrics = entry.metrics
        if not metrics:
            continue
        number = metrics_number(entry)
        if metrics.get("fail_type"):
            filename = metrics.get("fail_user_frame_filename")
            lineno = metrics.get("fail_user_frame_lineno")
            source = f"{filename}:{lineno}" if filename else None
            error = by_key.get((entry.key, number))
            frame = None
            if source is None and error is not None and error.location is not None:
                where = f"{error.location.filename}:{error.location.line}"
                if error.location_kind == "compiled frame":  # no failure location: only what was being compiled
                    frame = where
                else:  # the user frame the logged traceback ends in
                    source = where
            rows.append(FailureRow(entry.compile_id, str(metrics["fail_type"]), str(metrics.get("fail_reason") or ""), source,
                                   number, error.message if error else None, tuple(error.diagnostics) if error else (),
                                   compiled_frame=frame))
        for reason in metrics.get("restart_reasons") or []:
            known = None if str(reason) != UNKNOWN_RESTART else break_of.get(compilation_key(entry.compile_id))
            rows.append(FailureRow(entry.compile_id, "RestartAnalysis", str(reason), None, number, graph_break=known))
    return rows

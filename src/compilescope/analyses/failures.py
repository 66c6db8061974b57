"""Failed compiles and restarts (graph breaks), one row each: failures_and_restarts.html."""

from __future__ import annotations

from typing import Any, Mapping

from ..model.ids import CompileId, compilation_key
from ..model.trace import Trace
from .compile_errors import CompileErrors, CompilerDiagnostic, metrics_number
from .graph_breaks import GraphBreaks
from .graph_breaks.reason_text import internal_restart
from ..wording import format_seconds
from ..model.records import dataclass


LONG_REASON_CHARS, LONG_REASON_LINES = 2000, 31  # a failure reason longer than either is folded


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
    # A restart of Dynamo's own (graph_breaks.internal_restart), no graph break: what it was and what it cost.
    explanation: str | None = None
    # A restart at a call of a torch.compiler.disable'd function (the compilation's graph break is one: GraphBreak.
    # disabled): the program asked for it to run eagerly, so the restart is what was asked, not one to fix.
    disabled_call: bool = False

    @property
    def is_restart(self) -> bool:
        return self.kind == "RestartAnalysis"

    @property
    def line_count(self) -> int:
        return self.reason.count("\n") + 1

    @property
    def long(self) -> bool:
        """A reason too long to show whole in the table (a compiler's output quoted): its first line is shown, the
        rest folded."""
        return len(self.reason) > LONG_REASON_CHARS or self.line_count > LONG_REASON_LINES

    @property
    def noted(self) -> bool:
        """Whether the table's Note column says something of it."""
        return bool(self.explanation or self.disabled_call or self.graph_break)

    def to_json(self) -> dict:
        return {
            "compile_id": str(self.compile_id) if self.compile_id else None,
            "type": self.kind,
            "reason": self.reason,
            "source": self.source,
            "compiled_frame": self.compiled_frame,
            "explanation": self.explanation,
            "disabled_call": self.disabled_call,
        }


# torch's restart reason when its analysis of the restart found none (it still logged the graph break itself).
UNKNOWN_RESTART = "Unknown fail_and_restart_analysis"

# What each of Dynamo's own restarts is (torch/_dynamo/exc.py; the float's is raised by
# torch/fx/passes/_tensorify_python_scalars.py when a float symbol cannot become a tensor).
RESTART_NOTES = {
    "TensorifyScalar": ("No graph break: Dynamo had made a Python float dynamic (a symbol zf…; dynamic=True does so "
                        "for floats such as a module's scale or eps), an operation needed it as a constant, so Dynamo "
                        "specialized it and traced the frame again from its start{lost}. To trace once, keep floats "
                        "static: torch._dynamo.config.specialize_float = True."),
    "Unspecialize": "No graph break: Dynamo traced the frame again from its start, with a value left unspecialized{lost}.",
    "CompileCollective": "No graph break: Dynamo traced the frame again from its start, so that every rank compiles "
                         "alike{lost}.",
}


def restart_note(reason: str, metrics: Mapping[str, Any]) -> str | None:
    """What a restart of Dynamo's own was and the tracing it threw away (dynamo_time_before_restart_s); None for any
    other restart (a graph break's)."""
    m = internal_restart(reason)
    if m is None:
        return None
    before = metrics.get("dynamo_time_before_restart_s")
    lost = (f": the {format_seconds(before)} it had traced were lost"
            if isinstance(before, (int, float)) and not isinstance(before, bool) and before > 0 else "")
    return RESTART_NOTES[m["kind"]].format(lost=lost)


def failures_and_restarts(trace: Trace, errors: CompileErrors | None = None,
                          breaks: GraphBreaks | None = None) -> list[FailureRow]:
    """One row per failure and restart; `errors` (analyses.compile_errors) supply the user frame when torch logged none,
    `breaks` (analyses.graph_breaks) the graph break of a restart whose reason torch did not work out."""
    # (a compile id's error, and each of those outside one by its metrics record: several strict torch.export calls)
    by_key = {(e.compile_id, e.metrics_number): e for e in errors.errors} if errors is not None else {}
    break_of: dict[str, str] = {}  # compilation ("[1/0]") -> its first graph break, as `reason at file:line`
    disabled_at: dict[str, str] = {}  # compilation -> the reason of its break at a disabled call
    for b in breaks.breaks if breaks is not None else []:
        for key in b.compile_ids:
            break_of.setdefault(key, b.reason + (f" at {b.location.short}" if b.location else ""))
            if b.disabled:
                disabled_at.setdefault(key, b.reason)
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
            key = compilation_key(entry.compile_id)
            known = None if str(reason) != UNKNOWN_RESTART else break_of.get(key)
            # (the restart reason is the break's text, its first line the break's reason)
            disabled = key in disabled_at and str(reason).startswith(disabled_at[key])
            rows.append(FailureRow(entry.compile_id, "RestartAnalysis", str(reason), None, number, graph_break=known,
                                   explanation=restart_note(str(reason), metrics), disabled_call=disabled))
    return rows

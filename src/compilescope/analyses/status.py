"""The outcome of one compilation, from its metrics."""

from __future__ import annotations

from ..model.trace import Compile

OK = "ok"
BREAK = "break"  # succeeded, but restarted (e.g. a graph break)
EMPTY = "empty"  # succeeded with an empty graph
ERROR = "error"
MISSING = "missing"  # no compilation_metrics: still running, crashed, or log cut

STATUSES = (OK, BREAK, EMPTY, ERROR, MISSING)
STATUS_LABELS = {
    OK: "Success",
    BREAK: "Success with restart (e.g., graph break)",
    EMPTY: "Empty graph",
    ERROR: "Error",
    MISSING: "Metrics were missing",
}


def compile_status(entry: Compile) -> str:
    metrics = entry.metrics
    if metrics is None:
        return MISSING
    if metrics.get("fail_type"):
        return ERROR
    if metrics.get("graph_op_count") == 0:
        return EMPTY
    if metrics.get("restart_reasons"):
        return BREAK
    return OK

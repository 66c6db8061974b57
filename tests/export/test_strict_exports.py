"""Several strict torch.export calls in one program (tests/data/torch213/README.md, export_strict_several): each
logs its compilation_metrics with no compile id, and each failure is told."""

from __future__ import annotations

from functools import lru_cache

import orjson

from compilescope.analyses import Results, analyze, saved_classes
from compilescope.ingest.reader import read_trace
from compilescope.model.codec import decode, encode
from compilescope.model.trace import Compile

from ..conftest import torch213

LOG = "export_strict_several.log.gz"
PROGRAM = "export_strict_several.py"


@lru_cache(maxsize=None)
def results() -> Results:
    with read_trace(str(torch213(LOG))) as trace:
        return analyze(trace)


def test_each_id_less_compilation_metrics_is_kept_in_log_order():
    # Three compilation_metrics, each "compile_id": null with a Python stack through main's torch.export.export at
    # lines 37 (Gate), 42 (Scale), 47 (Take): fail_type "Unsupported" (Data-dependent branching), null, "UserError".
    trace = results().trace
    outside = trace.compiles[None]
    records = [*outside.earlier_metrics, outside]
    assert [r.metrics.get("fail_type") for r in records] == ["Unsupported", None, "UserError"]
    calls = [next(f.line for f in r.metrics_stack if f.name == "main") for r in records]
    assert calls == [37, 42, 47]
    # Each is its own compilation_metrics artifact; all three stay on the entry outside any compile id (tlparse's
    # -_-_-_- directory), in log order.
    metrics_artifacts = [a for a in outside.artifacts if a.kind == "compilation_metrics"]
    assert len(metrics_artifacts) == 3
    assert [r.artifacts for r in outside.earlier_metrics] == [[a] for a in metrics_artifacts[:2]]
    assert [c is outside or c in outside.earlier_metrics for c in trace.metrics_compiles()].count(True) == 3


def test_both_strict_export_failures_are_told_each_at_its_line_and_call():
    # Gate's `if x.sum() > 0:` (line 16) and Take's `if n > x.shape[0]:` (line 29), from the calls at lines 37 and 47.
    errors = results().insights.errors.errors
    assert [(e.compile_id, e.exception, e.location.line, e.export_call.line) for e in errors] == [
        ("[-/-]", "Unsupported", 16, 37), ("[-/-]", "UserError", 29, 47)]
    assert errors[0].message == "Data-dependent branching"
    assert len({e.metrics_number for e in errors}) == 2
    rows = [(str(r.compile_id), r.kind) for r in results().failures]
    assert rows == [("None", "Unsupported"), ("None", "UserError")]
    assert [f.title for f in results().insights.findings if f.severity == "error"] == [
        f"[-/-] failed in strict torch.export (Dynamo) at {PROGRAM}:16",
        f"[-/-] failed in strict torch.export (Dynamo) at {PROGRAM}:29"]


def test_the_earlier_records_survive_a_save_and_load():
    outside = results().trace.compiles[None]
    back = decode(orjson.loads(orjson.dumps(encode(outside))), saved_classes())
    assert [c.metrics.get("fail_type") for c in back.earlier_metrics] == ["Unsupported", None]
    assert [c.metrics.get("fail_type") for c in Compile.from_json(outside.to_json()).earlier_metrics] == [
        "Unsupported", None]

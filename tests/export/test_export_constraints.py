"""A torch.export user's failed exports (tests/data/torch213/README.md, export_constraints): where the log places
their guards, and how a strict export that Dynamo could not trace is worded."""

from __future__ import annotations

from functools import lru_cache

from compilescope.analyses.compile_errors import DYNAMO, EXPORT_STEPS, EXPORT_STRICT_LABEL, NEXT_STEPS
from compilescope.analyses.export import export_report
from compilescope.analyses.insights import Insights
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import torch213
from .test_draft_export_stops import TITLE as STOPS

PROGRAM = "export_constraints.py"


@lru_cache(maxsize=None)
def insights_of(log: str) -> Insights:
    with read_trace(str(torch213(log))) as trace:
        return insights(trace)


def test_non_strict_export_guards_are_placed_on_the_model_line_that_added_them():
    # Non-strict export runs forward in Python: both guard_added_fast events log "user_stack": [] and a Python stack
    # through export_constraints.py:52 (the export call), torch's tracer, then forward at line 30 (the 32-row position
    # table: "s27 <= 32") and line 31 (reshape(2, -1): "Eq(s52, 2)"), then torch's ops.
    guards = insights_of("export_constraints.log.gz").dynamic_shapes.guards
    placed = {g.expr: (g.location.filename.rsplit("/", 1)[-1], g.location.line, g.location.function)
              for g in guards if g.location is not None}
    assert placed == {"s27 <= 32": (PROGRAM, 30, "forward"), "Eq(s52, 2)": (PROGRAM, 31, "forward")}
    assert all(g.torch_location is None for g in guards)


def test_torch_compile_guards_with_no_user_line_stay_unplaced():
    # torch.compile traces bytecode: dynamic_shapes.log's guards with an empty user stack (AOTAutograd's) have no user
    # frame below torch's in their Python stack, so the traced frame adds no place to them.
    ds = insights_of("dynamic_shapes.log").dynamic_shapes
    assert ds.unplaced_guards is not None and ds.unplaced_guards.count > 0


def test_strict_export_failure_is_worded_as_an_export_with_export_steps():
    # The one compilation_metrics has "compile_id": null, fail_type UserError ("Could not guard on data-dependent
    # expression u0 > u1"), and a stack from export_topk's torch.export.export(TopK(), ..., strict=strict) at line 63
    # into torch/export/__init__.py; the reason's traceback ends at line 40, `elif n > keep.shape[0]:`.
    [error] = insights_of("export_constraints.log.gz").errors.errors
    assert (error.compile_id, error.stage, error.exception) == ("[-/-]", DYNAMO, "UserError")
    assert error.message.startswith("Consider annotating your code using torch._check*()")
    assert (error.location.filename.rsplit("/", 1)[-1], error.location.line) == (PROGRAM, 40)
    assert (error.export_call.filename.rsplit("/", 1)[-1], error.export_call.line) == (PROGRAM, 63)
    assert error.export_call.function == "export_topk"
    assert error.stage_label == EXPORT_STRICT_LABEL
    assert error.next_steps == EXPORT_STEPS
    assert not any("backend=" in step or "compiled function" in step for step in error.next_steps)
    assert error.to_json()["export_call"]["line"] == 63


def test_the_fixed_export_fails_nothing():
    # EXPORT_VARIANT=fixed: its compilation_metrics (strict export of TopK with torch._check) has fail_type null.
    assert not insights_of("export_constraints_fixed.log.gz").errors


def test_torch_compile_failures_keep_their_compile_wording():
    # compile_error_raises.log: a torch.compile'd function whose compile fails (compile id 0/0, a dynamo_start stack,
    # no stack on its compilation_metrics): no export call, the stage's own label and steps.
    for error in insights_of("compile_error_raises.log").errors.errors:
        assert error.export_call is None
        assert error.stage_label != EXPORT_STRICT_LABEL
        assert error.next_steps != EXPORT_STEPS
    dynamo = [e for e in insights_of("caught_fullgraph.log.gz").errors.errors if e.stage == DYNAMO]
    assert dynamo and all(e.export_call is None and e.next_steps[-1] == NEXT_STEPS[DYNAMO][-1] for e in dynamo)


def test_the_dims_the_model_contradicts_are_named_with_their_line_and_fix():
    # create_symbol s27 vr [2, 128] (L['tokens'].size()[1], Dim("seq", min=2, max=128)) and s52 vr [2, int_oo]
    # (L['tokens'].size()[0], Dim("batch")), from the export call at line 52; guard_added_fast "s27 <= 32" (line 30's
    # 32-row table) and symbolic_shape_specialization s52 = 2 (line 31's reshape(2, -1)). torch's error, printed but
    # not logged: "Constraints violated (batch, seq)! ... Suggested fixes: seq = Dim('seq', max=32), batch = 2".
    with read_trace(str(torch213("export_constraints.log.gz"))) as trace:
        conflicts = export_report(trace).dim_conflicts
    seq, batch = conflicts
    assert (seq.source, seq.symbol, seq.declared, seq.declared_by_user) == ("L['tokens'].size()[1]", "s27", "[2, 128]", True)
    assert (seq.guard, seq.allowed, seq.value) == ("s27 <= 32", "[2, 32]", None)
    assert (seq.location.line, seq.location.function) == (30, "forward")
    assert (batch.source, batch.symbol, batch.declared, batch.declared_by_user) == (
        "L['tokens'].size()[0]", "s52", "[2, int_oo]", False)
    assert (batch.guard, batch.value, batch.location.line) == (None, "2", 31)
    assert {c.export_call.line for c in conflicts} == {52}
    assert seq.input_text == "tokens.size()[1]" and "[2, 32]" in seq.fix
    [finding] = [f for f in insights_of("export_constraints.log.gz").findings if f.title.startswith("torch.export at")]
    assert (finding.severity, finding.section) == ("error", "dynamic_shapes")
    assert "export_constraints.py:52" in finding.title and "2 dynamic dims" in finding.title
    assert "needs s27 <= 32" in finding.detail and "fixes it to 2" in finding.detail
    assert "Constraints violated" in finding.detail


def test_dims_the_code_agrees_with_are_no_conflict():
    # _fixed: s27 vr [2, 32] and no guard on it, batch static (no s52); export.log: Dim("batch", min=2, max=64),
    # s77 vr [2, 64], no guard narrowing it; export_draft.log: unbacked symbols only (no create_symbol).
    for log in ("export_constraints_fixed.log.gz", "export.log", "export_draft.log"):
        with read_trace(str(torch213(log))) as trace:
            assert export_report(trace).dim_conflicts == [], log
    assert not any(f.title.startswith("torch.export at") for f in insights_of("export_constraints_fixed.log.gz").findings)


def test_under_dtrace_export_issues_name_the_model_line_and_torch_export():
    # export_constraints_dtrace: guard_on_data_dependent_error "u0 > u1" twice, with no user stack, only a Python
    # stack: strict export's (log line 806) runs <module>:73 -> export_topk:63 -> torch/export/__init__.py `export`
    # -> Dynamo (no model frame: Dynamo traces bytecode); non-strict's (line 895) goes on to forward at line 40.
    with read_trace(str(torch213("export_constraints_dtrace.log.gz"))) as trace:
        issues = export_report(trace).issues
    raised = [i for i in issues if i.kind == "guard_on_data_dependent_error"]
    assert [(i.lineno, i.expr, i.where) for i in raised] == [
        (806, "u0 > u1", None), (895, "u0 > u1", f"{PROGRAM}:40 in forward")]
    assert [(i.exporter, i.export_call.line, i.export_call.function) for i in raised] == [
        ("export", 63, "export_topk"), ("export", 63, "export_topk")]
    assert raised[1].to_json()["traced_at"]["line"] == 40
    # guard_added logs its user stack (forward at lines 30 and 31): placed by it, as before.
    assert [(i.expr, i.where) for i in issues if i.kind == "guard_added"] == [
        ("s27 <= 32", f"{PROGRAM}:30 in forward"), ("Eq(s52, 2)", f"{PROGRAM}:31 in forward")]
    [finding] = [f for f in insights_of("export_constraints_dtrace.log.gz").findings if f.section == "export"]
    assert finding.title == "torch.export found 4 issues: it could not soundly produce a graph"


def test_draft_exports_own_issues_are_still_draft_exports():
    # export_draft.log: draft_export's trace (its CaptureStructuredTrace) logs no Python stack through torch.export.
    with read_trace(str(torch213("export_draft.log"))) as trace:
        [issue] = export_report(trace).issues
    assert (issue.exporter, issue.export_call, issue.traced_at) == (None, None, None)
    [finding, stops] = [f for f in insights_of("export_draft.log").findings if f.section == "export"]
    assert stops.title == STOPS  # (a log draft_export wrote: test_draft_export_stops.py)
    assert finding.title.startswith("draft export found 1 issue")

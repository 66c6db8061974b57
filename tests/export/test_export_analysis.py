"""analyses/export.py on synthetic logs: provenance trees, detection, robustness, escaping."""

from compilescope.analyses.analyze import analyze
from compilescope.analyses import export as export_analysis
from compilescope.ingest.reader import read_trace

from ..conftest import run_cli
from ..tracelog import cid, envelope
from .helpers import data_dependent, draft_export_log, expression, guard, issue_rows, unbacked


def export_of(log):
    with read_trace(str(log)) as trace:
        return analyze(trace).export


def tree(issue):
    return [(n.depth, n.result, n.repeated) for n in issue.provenance]


def test_provenance_follows_argument_ids_down_to_unbacked_symbols(tmp_path):
    report = export_of(draft_export_log(tmp_path / "t.log", [
        unbacked(1, "u0"), unbacked(2, "u1"),
        expression(3, "u0 + u1", "add", ["u0", "u1"], [1, 2]),
        expression(4, "2*u0 + u1", "add", ["u0 + u1", "u0"], [3, 1]),  # u0 twice: a DAG
        expression(5, "Eq(2*u0 + u1, 4)", "eq", ["2*u0 + u1", "4"], [4, 999]),  # 999: no record
        data_dependent("Eq(2*u0 + u1, 4)", "False", 5),
    ]))
    [issue] = report.issues
    assert tree(issue) == [(0, "Eq(2*u0 + u1, 4)", False), (1, "2*u0 + u1", False), (2, "u0 + u1", False),
                           (3, "u0", False), (3, "u1", False), (2, "u0", True)]
    assert issue.provenance[0].unresolved_arguments == 1
    assert issue.provenance[3].vr == "[-int_oo, int_oo]" and issue.provenance[3].method is None
    assert issue.symbol_to_sources == [("s0", "L['x'].size()[0]")]
    assert issue.locals == [("n", "u0")]  # a null value is left out, as tlparse does


def test_reused_node_ids_resolve_to_the_record_before_the_reference(tmp_path):
    # Node ids are Python object ids: torch can log the same id for a later, different expression.
    report = export_of(draft_export_log(tmp_path / "t.log", [
        unbacked(1, "u0"),
        expression(7, "u0 + 1", "add", ["u0", "1"], [1]),
        guard("Eq(u0 + 1, 2)", "eval", 7),
        expression(7, "u0 * 3", "mul", ["u0", "3"], [1]),
        guard("Eq(u0 * 3, 6)", "eval", 7),
    ]))
    assert [tree(i)[0][1] for i in report.issues] == ["u0 + 1", "u0 * 3"]


def test_cycles_and_huge_trees_terminate(tmp_path, monkeypatch):
    monkeypatch.setattr(export_analysis, "MAX_TREE_NODES", 50)
    events = [expression(1, "a", "f", ["b"], [2]), expression(2, "b", "g", ["a"], [1])]  # a cycle
    events += [expression(100 + i, f"e{i}", "add", [], [100 + i + 1]) for i in range(5000)]  # very deep
    events += [guard("a", "eval", 1), guard("e0", "eval", 100)]
    cycle, deep = export_of(draft_export_log(tmp_path / "t.log", events)).issues
    assert tree(cycle) == [(0, "a", False), (1, "b", False), (2, "a", True)]
    assert len(deep.provenance) == 50 and deep.provenance_truncated


def test_guards_that_are_not_issues_and_odd_metadata(tmp_path):
    report = export_of(draft_export_log(tmp_path / "t.log", [
        guard("u0 >= 0", "runtime_assert"), guard("Ne(u0, 1)", "eval [guard suppressed]"), guard("Eq(s0, 2)", None),
        {"missing_fake_kernel": "not a dict"},
        {"propagate_real_tensors_provenance": {"expr": ["odd"], "expr_node_id": True, "frame_locals": [1]}},
        {"guard_added": {"prefix": "eval"}},
    ], program=None))
    assert [(g.prefix, g.failure_type) for g in report.other_guards] == [
        ("runtime_assert", "Guard Added"), ("eval [guard suppressed]", "Guard Added"), (None, "Guard Added")]
    assert [i.failure_type for i in report.issues] == ["Missing Fake Kernel", "Data Dependent Error", "Guard Evaluated"]
    assert report.issues[1].expr == '[odd]' and report.issues[1].provenance == []
    assert report.detected and not report.success and report.exported_programs == []


def test_torch_compile_guard_added_under_dtrace_is_not_an_export(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(envelope({"str": ["/p.py", 0]}) + envelope({"dynamo_start": {"stack": []}, **cid(0)})
                   + envelope({**guard("Eq(s0, 3)", "eval"), **cid(0)}))
    report = export_of(log)
    assert not report.detected and len(report.issues) == 1
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    assert "Compilation report" in (tmp_path / "out" / "index.html").read_text()


def test_everything_from_the_log_is_escaped(tmp_path):
    evil = "<script>alert(1)</script>"
    log = draft_export_log(tmp_path / "t.log", [
        expression(5, evil, evil, [evil], []),
        data_dependent(evil, evil, 5, locals_={evil: evil}),
        {"mismatched_fake_kernel": {"op": evil, "reason": evil}},
    ], program=evil)
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    index = (tmp_path / "out" / "index.html").read_text()
    assert "<script>alert" not in index and "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    assert [r[0] for r in issue_rows(index)] == ["Data Dependent Error", "Mismatched Fake Kernel"]


def test_success_when_draft_export_found_nothing(tmp_path):
    log = draft_export_log(tmp_path / "t.log", [])
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    index = (tmp_path / "out" / "index.html").read_text()
    assert "Congratulations! No issues are found during export" in index and "class G" in index


def test_an_empty_line_inside_a_payload_does_not_end_it(tmp_path):
    # tlparse's export.log: the exported program's empty lines lost their TAB; tlparse drops them and reads on.
    log = draft_export_log(tmp_path / "t.log", [], program="ExportedProgram:\n    first\n\tsecond")
    text = log.read_text().replace("\tExportedProgram:\n\t    first\n", "\tExportedProgram:\n\n\t    first\n\n")
    log.write_text(text)
    with read_trace(str(log)) as trace:
        [program] = analyze(trace).export.exported_programs
        assert trace.payload_text(program.payload) == "ExportedProgram:\n    first\n\tsecond"
        assert trace.stats.outcomes.get("orphan_payload", 0) == 0

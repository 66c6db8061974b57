"""The export report on real torch 2.13 CPU logs (tests/data/torch213/README.md says what is in them)."""

import subprocess

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.ingest.reader import read_trace

from ..conftest import run_cli, tlparse_binary, torch213
from ..htmltable import table_rows
from .helpers import issue_rows


def write(log, out, *flags):
    assert run_cli(log, "-o", out, "--no-browser", "--overwrite", *flags) == 0
    return (out / "index.html").read_text()


def test_draft_export_lists_the_data_dependent_branch(tmp_path):
    with read_trace(str(torch213("export_draft.log"))) as trace:
        report = analyze(trace).export
    assert report.detected
    [issue] = report.issues
    assert (issue.failure_type, issue.kind, issue.expr, issue.result) == (
        "Data Dependent Error", "propagate_real_tensors_provenance", "u0 > 2", "True")
    assert issue.compile_id is None  # draft_export logs no compile ids
    assert (issue.user_stack[-1].name, issue.user_stack[-1].line) == ("forward", 22)
    assert issue.user_stack[-1].filename.endswith("export_draft.py")
    assert issue.framework_stack
    assert issue.loc.startswith("if n > 2:")
    assert issue.locals == [("n", "[u0]")]  # 2.13 logs a local as the list of its values
    # The provenance tree: u0 > 2, computed from u0, the unbacked symbol .item() made.
    assert [(n.depth, n.result, n.method, n.kind) for n in issue.provenance] == [
        (0, "u0 > 2", "gt", "expression_created"), (1, "u0", None, "create_unbacked_symbol")]
    assert report.other_guards == []
    assert [s["symbol"] for s in report.symbols] == ["u0", "u1"]  # .item() and nonzero()
    assert [a.kind for a in report.exported_programs] == ["exported_program"]


@pytest.mark.parametrize("flags", [(), ("-e",)])
def test_draft_export_page_is_the_index_and_shows_the_program(flags, tmp_path):
    index = write(torch213("export_draft.log"), tmp_path / "out", *flags)
    assert "<h1>Draft Export Report</h1>" in index
    assert ("you asked for" in index) == bool(flags)
    assert ("This log holds torch.export events" in index) == (not flags)
    assert issue_rows(index)[0][0] == "Data Dependent Error"
    assert "<code>u0 &gt; 2</code>" in index  # escaped
    # The exported program, inline and as its file.
    assert "ExportedProgram:" in index and "torch.ops.aten.nonzero.default" in index
    # (0 with -e too: tlparse 0.4.3 cannot read the issue's torch 2.13 locals, so it takes no number: ExportIssue.tlparse_reads)
    assert 'href="-_-_-_-/exported_program_0.txt"' in index
    program = (tmp_path / "out" / "-_-_-_-" / "exported_program_0.txt").read_text()
    assert program.startswith("ExportedProgram:") and "Range constraints" in program
    # The torch.compile view is still there, linked.
    assert 'href="compile_report.html"' in index
    assert "Parse statistics" in (tmp_path / "out" / "compile_report.html").read_text()


def test_tlparse_misses_the_draft_export_issue_of_torch_2_13(tmp_path):
    # Intended difference: tlparse 0.4.3 cannot read 2.13's list-valued frame locals, drops the event
    # and congratulates; we list the issue (test above).
    subprocess.run([tlparse_binary(), str(torch213("export_draft.log")), "--export", "-o", str(tmp_path / "tl"),
                    "--no-browser"], check=True, capture_output=True, timeout=300)
    theirs = (tmp_path / "tl" / "index.html").read_text()
    assert "Congratulations" in theirs and table_rows(theirs) == []


def test_plain_torch_trace_export_without_flag_is_the_compilation_report(tmp_path):
    # No torch.export event in a plain TORCH_TRACE run (2.13 logs them only under TORCH_DTRACE).
    with read_trace(str(torch213("export.log"))) as trace:
        report = analyze(trace).export
    assert not report.detected and report.issues == [] and report.exported_programs == []
    index = write(torch213("export.log"), tmp_path / "out")
    assert "Compilation report" in index and "dynamo_output_graph_1.txt" in index
    assert not (tmp_path / "out" / "compile_report.html").exists()


def test_plain_torch_trace_export_with_flag_is_useful_not_empty(tmp_path):
    index = write(torch213("export.log"), tmp_path / "out", "--export")
    assert "<h1>Draft Export Report</h1>" in index
    assert issue_rows(index) == []
    assert "Congratulations" not in index  # nothing says draft export ran
    assert 'id="no-dtrace"' in index and "TORCH_DTRACE" in index
    # What the log has: the strict export's dynamo graph, the metrics, the dynamic dim export made.
    assert 'href="-_0_0_0/dynamo_output_graph_1.txt"' in index
    assert 'href="-_-_-_-/compilation_metrics_3.html"' in index
    symbols = [r for r in table_rows(index) if r and r[0] in ("s77", "s6")]
    assert [(r[0], r[2], r[3]) for r in symbols] == [("s77", "[2, 64]", "L['x'].size()[0]"),
                                                     ("s6", "[2, 64]", "L['flat_args'][0].size()[0]")]
    for url in ("-_0_0_0/dynamo_output_graph_1.txt", "-_-_-_-/compilation_metrics_3.html", "compile_report.html"):
        assert (tmp_path / "out" / url).is_file()


@pytest.mark.parametrize("name", ["dynamic_shapes.log", "graph_breaks.log"])
def test_torch_compile_logs_keep_their_index(name, tmp_path):
    # guard_added_fast / create_symbol are torch.compile's too: not a reason to open on the export page.
    index = write(torch213(name), tmp_path / "out")
    assert "Compilation report" in index and "Draft Export Report" not in index

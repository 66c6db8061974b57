"""A triton_op whose Triton kernel stores into its input under mutates_args=() (tests/data/cuda_torch211
programs/triton_op_mutation.py, recorded on an H200 with torch 2.11.0+cu130), and its twin declaring {"x"}. Both
printed compiled results equal to eager's: AOTAutograd decomposes a triton_op into its kernel's launch and finds the
kernel's stores itself (`tensors_to_clone`), so the undeclared write is advice, not a result that differs. Expected
values are read from the raw logs, the programs and what they printed (the .output.txt beside each log)."""

from __future__ import annotations

import gzip
import html
import json
import re
from pathlib import Path

from compilescope.analyses.insights import INFO
from compilescope.analyses.op_mutations import NOT_READABLE, UnreadSource
from compilescope.cli import main
from compilescope.ingest.reader import read_trace

from ..analysis_files import insights_here, op_mutations_here
from ..conftest import CUDA211_LOGS, cuda211, cuda211_moved, line_holding, report
from ..tracelog import raw_records
from .test_summary_cli import _documented_keys, _paths

LOG = "triton_op_mutation.log.gz"
FIXED = "triton_op_mutation_fixed.log.gz"
PROGRAMS = Path(__file__).parents[1] / "data" / "cuda_torch211" / "programs"
PROGRAM = PROGRAMS / "triton_op_mutation.py"
TITLE = ("mylib::scale_tr's Triton kernel writes into x, which its mutates_args=() does not declare; torch.compile "
         "found the write itself")


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _payloads(log: str, kind: str) -> dict[int, str]:
    """frame id -> the payload of its `kind` record, read without compilescope."""
    return {e["frame_id"]: p for e, p in raw_records(cuda211(log)) if kind in e}


def test_both_runs_printed_eager_results():
    for log in (LOG, FIXED):
        printed = (CUDA211_LOGS / log.replace(".log.gz", ".output.txt")).read_text()
        assert "shift_then_scale: eager 7860.0718 compiled 7860.0718 max abs diff 0; x afterwards differs by 0" in printed
        assert "scale_unused: eager 4069.4556 compiled 4069.4556 max abs diff 0; x afterwards differs by 0" in printed


def test_the_logs_show_aotautograd_launching_the_kernel_with_x_ptr_cloned():
    """Dynamo's graphs call the op under the calling lines; AOTAutograd's call the kernel's wrapper there instead,
    x_ptr (given arg0_1, the input x) among tensors_to_clone, and copy its result back into arg0_1: in both runs,
    declared or not. [1/0]'s call is unused in Dynamo's graph, yet its launch stays."""
    for log in (LOG, FIXED):
        dynamo, aot = _payloads(log, "dynamo_output_graph"), _payloads(log, "aot_inference_graph")
        for frame, call in ((0, "scaled = scale_tr(x, 2.0)"), (1, "    scale_tr(x, 2.0)")):
            site = f"triton_op_mutation{'_fixed' if log == FIXED else ''}.py:{_line(call)} in "
            assert "torch.ops.mylib.scale_tr.default(l_x_, 2.0)" in dynamo[frame]
            assert "mylib" not in aot[frame]
            under = aot[frame].split(site)[1].split("\n\n")[0]  # (the nodes under that `# File:` line)
            assert "torch.ops.higher_order.triton_kernel_wrapper_functional(" in under
            assert "kwargs = {'x_ptr': arg0_1, 'out_ptr': empty" in under
            assert "tensors_to_clone = ['x_ptr', 'out_ptr']" in under
            assert "torch.ops.aten.copy_.default(arg0_1, getitem)" in aot[frame]
        assert "scale_tr_default = None" in dynamo[1]  # (its result unused)


def test_the_undeclared_write_is_advice_not_a_differing_result(tmp_path):
    found = op_mutations_here(read_trace(cuda211_moved(LOG, tmp_path)))
    assert found.ops == [] and not found and found.dropped == [] and found.unread == []
    (op,) = found.functionalized
    assert (op.op, op.arguments, op.declared, op.form, op.cloned) == ("mylib::scale_tr", ["x"], "()", "triton_op",
                                                                      ["x_ptr"])
    assert [w.line for w in op.writes] == [_line("wrap_triton(scale_kernel)[")]
    assert [(c.compile_id, c.location.line, c.dropped) for c in op.calls] == [
        ("[0/0]", _line("scaled = scale_tr(x, 2.0)"), False), ("[1/0]", _line("    scale_tr(x, 2.0)"), False)]
    assert op.title == TITLE
    assert "differ from eager's" in op.why and "does not make compiled results differ" in op.why
    assert op.advice == 'declare mutates_args={"x"}, or have the kernel store into a new tensor the op returns'
    (tmp_path / "again").mkdir()
    findings = insights_here(read_trace(cuda211_moved(LOG, tmp_path / "again"))).findings
    told = [f for f in findings if "mylib::scale_tr" in f.title]
    assert [(f.severity, f.section, f.title) for f in told] == [(INFO, "user_kernels", TITLE)]
    assert not any(f.section == "numerics" for f in findings)


def test_summary_json_html_and_check_claim_no_differing_result(tmp_path, capsys):
    log = cuda211_moved(LOG, tmp_path)
    assert main(["summary", str(log)]) == 0
    said = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "Results that differ from eager" not in said and "WARN" not in said
    assert f"INFO {TITLE}" in said and "with x_ptr in tensors_to_clone" in said
    assert main(["summary", "--json", str(log)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["custom_op_mutations"]["ops"] == []
    assert [(op["op"], op["cloned"]) for op in doc["custom_op_mutations"]["functionalized"]] == [
        ("mylib::scale_tr", ["x_ptr"])]
    assert [f["severity"] for f in doc["findings"] if "mylib" in f["title"]] == ["info"]
    assert sorted(set(_paths(doc)) - _documented_keys()) == []
    report(log, tmp_path / "report")
    page = html.unescape((tmp_path / "report" / "index.html").read_text())
    assert "Results that differ from eager" not in page
    assert 'href="#insights-user_kernels"' in page and 'id="insights-user_kernels"' in page
    assert f"{TITLE}: AOTAutograd's graphs of [0/0], [1/0] launch the kernel" in page
    capsys.readouterr()
    # A CI gate fails on what computed wrong; this computed eager's results
    assert main(["check", str(log), "--no-custom-op-mutations"]) == 0


def test_the_fixed_log_says_nothing_of_it(tmp_path, capsys):
    log = cuda211_moved(FIXED, tmp_path)
    found = op_mutations_here(read_trace(log))
    assert (found.ops, found.functionalized, found.dropped, found.unread) == ([], [], [], [])
    assert main(["summary", str(log)]) == 0
    said = capsys.readouterr().out
    assert "mutates_args" not in said and "Results that differ from eager" not in said


def test_where_the_log_shows_no_store_found_the_write_is_still_a_warning(tmp_path):
    """The same log with x_ptr taken out of tensors_to_clone (as where torch did not find the store): the source's
    write stays today's warning under the results that differ."""
    moved = cuda211_moved(LOG, tmp_path)
    text = gzip.open(moved, "rt").read()
    assert text.count("tensors_to_clone = ['x_ptr', 'out_ptr']") == 16
    with gzip.open(moved, "wt") as f:
        f.write(text.replace("tensors_to_clone = ['x_ptr', 'out_ptr']", "tensors_to_clone = ['out_ptr']"))
    found = op_mutations_here(read_trace(moved))
    assert found.functionalized == []
    (op,) = found.ops
    assert (op.op, op.cloned, [c.dropped for c in op.calls]) == ("mylib::scale_tr", [], [False, False])
    assert op.title == ("mylib::scale_tr writes into x from its Triton kernel, which its mutates_args=() does not "
                        "declare")


def test_without_the_source_the_unused_call_is_not_called_dropped(tmp_path):
    """No program at the moved path: the op is not checked, and [1/0]'s unused call, whose launch AOTAutograd's graph
    holds under its line, is not told as left out."""
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    found = op_mutations_here(read_trace(cuda211_moved(LOG, tmp_path, programs=empty)))
    assert found.unread == [UnreadSource("mylib::scale_tr", f"{empty.as_posix()}/triton_op_mutation.py", NOT_READABLE)]
    assert found.dropped == [] and found.ops == [] and found.functionalized == []


def _mixed(tmp_path: Path) -> Path:
    """The log with x_ptr taken out of tensors_to_clone in [1/0]'s records only (frame 1: its AOT graph and the
    artifacts quoting it), [0/0]'s left as recorded: no real log has a triton_op whose calls torch handled in one
    compile and not in another, so the recorded one is edited so, minimally."""
    moved = cuda211_moved(LOG, tmp_path)
    lines = gzip.open(moved, "rt").read().split("\n")
    frame, edited = None, 0
    for i, line in enumerate(lines):
        if not line.startswith("\t") and '"frame_id": ' in line:
            frame = int(line.split('"frame_id": ', 1)[1].split(",", 1)[0].split("}", 1)[0])
        if frame == 1 and "tensors_to_clone = ['x_ptr', 'out_ptr']" in line:
            lines[i] = line.replace("tensors_to_clone = ['x_ptr', 'out_ptr']", "tensors_to_clone = ['out_ptr']")
            edited += 1
    assert edited == 8  # (of the 16: the other 8 are [0/0]'s)
    with gzip.open(moved, "wt") as f:
        f.write("\n".join(lines))
    return moved


def test_an_op_torch_handled_at_some_calls_only_is_the_undeclared_write_once(tmp_path, capsys):
    """[0/0]'s launch lists x_ptr in tensors_to_clone, [1/0]'s does not: the op is one statement, the undeclared
    write (what [1/0] may lose), saying torch found the store in 1 of its 2 calls; not also functionalized. The page,
    the summary, --json and check all say so."""
    log = _mixed(tmp_path)
    found = op_mutations_here(read_trace(log))
    assert found.functionalized == []
    (op,) = found.ops
    assert [(c.compile_id, c.location.line, c.store_found) for c in op.calls] == [
        ("[0/0]", _line("scaled = scale_tr(x, 2.0)"), True), ("[1/0]", _line("    scale_tr(x, 2.0)"), False)]
    assert (op.cloned, op.store_found_calls) == ([], 1)
    assert op.title == ("mylib::scale_tr writes into x from its Triton kernel, which its mutates_args=() does not "
                        "declare; torch.compile found the write in 1 of its 2 calls only")
    assert op.why.startswith("AOTAutograd found the kernel's store into x itself in 1 of the 2 calls ([0/0]: ")
    assert "the graphs of [1/0] show no such store" in op.why
    assert main(["summary", "--json", str(log)]) == 0
    doc = json.loads(capsys.readouterr().out)["custom_op_mutations"]
    assert doc["functionalized"] == []
    assert [(op["op"], [c["store_found"] for c in op["calls"]]) for op in doc["ops"]] == [
        ("mylib::scale_tr", [True, False])]
    assert main(["summary", str(log)]) == 0
    said = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "Results that differ from eager (1 custom op)" in said
    assert "(torch found the store here: tensors_to_clone)" in said
    assert "torch.compile found the write itself" not in said  # (the functionalized title: not told too)
    report(log, tmp_path / "report")
    page = html.unescape((tmp_path / "report" / "index.html").read_text())
    # (under the results that differ, [0/0]'s call marked; not the functionalized op's INFO title too)
    assert op.title in page and TITLE not in page
    assert "torch found the store here (tensors_to_clone)" in page
    capsys.readouterr()
    assert main(["check", str(log), "--no-custom-op-mutations"]) == 1


def test_the_source_page_marks_the_calls_and_the_launch_of_the_op_torch_handled(tmp_path):
    """torch found the store at both calls (the launch under each calling line lists x_ptr in tensors_to_clone, as
    test_the_logs_show_aotautograd_launching_the_kernel_with_x_ptr_cloned reads): each calling line and the
    launch that writes say so, in the user kernels' tone; none says the results differ from eager's."""
    log = cuda211_moved(LOG, tmp_path)
    calls = [_line("scaled = scale_tr(x, 2.0)"), _line("    scale_tr(x, 2.0)")]
    launch = _line("wrap_triton(scale_kernel)[")
    report(log, tmp_path / "report")
    (page,) = (tmp_path / "report" / "sources").glob("triton_op_mutation.py_*.html")
    text = page.read_text()
    for line in (*calls, launch):
        row = text.split(f'id="L{line}"', 1)[1].split('class="src-line', 1)[0]
        assert "store found by torch" in row and "b-kernel" in row and "b-numerics" not in row
        assert "differs from eager" not in row
    def said(line: int) -> str:  # (the line's row as read: its tags taken out, the compile ids links)
        return html.unescape(re.sub(r"<[^>]+>", "", text.split(f'id="L{line}"', 1)[1].split('class="src-line', 1)[0]))

    called = said(calls[1])
    assert ("mylib::scale_tr in [1/0]: this line calls mylib::scale_tr: AOTAutograd's graph launches its kernel here "
            "with the pointer of x in tensors_to_clone, so torch found the store at this call and keeps it") in called
    wrote = said(launch)
    assert "writes into x, which mylib::scale_tr's mutates_args does not declare: AOTAutograd's graphs of [0/0], " \
           "[1/0] launch the kernel as triton_kernel_wrapper_functional with x_ptr in tensors_to_clone" in wrote

"""The warnings torch prints on stderr only, on real logs.

- tests/data/torch213/logs/torch_warnings.log.gz: programs/torch_warnings.py started as `compilescope run` starts
  programs, so the recorder wrote each warning into the log (Inductor's complex-operator UserWarning, Dynamo's
  recompile-limit WARNING record, torch.cond's constant-predicate UserWarning, Dynamo's lru_cache UserWarning);
- ../shared gpu-torch211/autotune_cudagraphs: a plain TORCH_TRACE log from an H100, with the run's stderr saved
  beside it as output.txt (TF32 not enabled, a backward pending under CUDA graphs, two autotuning choices that
  failed).
"""

from __future__ import annotations

import json
import shutil

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.torch_warnings import AUTOTUNE_CANDIDATE_FAILED, PENDING_BACKWARD, RECOMPILE_LIMIT
from compilescope.ingest.reader import read_trace
from compilescope.ingest.stderr import read_stderr_warnings, stderr_beside

from ..conftest import cuda211, run_cli, shared, torch213
from ..gpu_variants import with_payload_changed

RUN_DIR = "gpu-torch211/autotune_cudagraphs"


def _insights(log):
    with read_trace(str(log)) as trace:
        return insights(trace)


def test_recorded_warnings_say_what_where_and_in_which_compile():
    tw = _insights(torch213("torch_warnings.log.gz")).warnings
    got = [(w.kind, w.source, w.compile_ids, w.location.short if w.location else None,
            w.location.function if w.location else None, w.name, w.count) for w in tw.warnings]
    assert got == [
        ("UserWarning", "torch/_inductor/lowering.py:2633", ["[0/0]"], "torch_warnings.py:49", "<module>",
         "complex operators run as eager kernels", 1),
        # The line is the one in torch's own "User stack trace:", not the call that led to the compile.
        ("WARNING", "torch/_dynamo/convert_frame.py:1994", ["[1/2]"], "torch_warnings.py:30", "shift", RECOMPILE_LIMIT, 1),
        # Dynamo was tracing pick's line when torch.cond warned.
        ("UserWarning", "torch/_dynamo/variables/higher_order_ops.py:2408", ["[2/0]"], "torch_warnings.py:35", "pick",
         "torch.cond kept one branch only", 1),
        ("UserWarning", "torch/_dynamo/variables/functions.py:2590", ["[3/0]"], "torch_warnings.py:45", "scaled",
         "an lru_cache function is traced through its cache", 1),
    ]
    assert tw.warnings[1].logger == "torch._dynamo.convert_frame"
    assert tw.warnings[1].headline == "torch._dynamo hit config.recompile_limit (2)"
    assert "User stack trace:" in tw.warnings[1].more
    assert tw.stderr is None and tw.unreadable == 0 and tw.printed == 4


def test_known_warnings_are_findings_and_the_recompile_limit_is_not_said_twice():
    found = _insights(torch213("torch_warnings.log.gz")).findings
    warned = [(f.severity, f.title) for f in found if f.section == "warnings"]
    # Most urgent first: torch printed the torch.cond note before the lru_cache warning, yet a note (info) comes
    # after every warning.
    assert warned == [("warning", "complex operators run as eager kernels"),
                      ("warning", "an lru_cache function is traced through its cache"), ("info", "torch.cond kept one branch only")]
    severities = [f.severity for f in found]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
    assert next(f for f in found if f.section == "warnings").detail.startswith("torch_warnings.py:49: Inductor generates no code")
    # The recompile limit is the log's own finding (from its compilation metrics), once.
    assert [f.title for f in found if "recompile limit" in f.title] == ["shift hit the recompile limit and runs uncompiled"]


def test_a_plain_log_without_saved_stderr_has_no_warnings():
    for log in (torch213("recompiles.log"), cuda211("cudagraph_skips.log.gz")):
        ins = _insights(log)
        assert not ins.warnings and ins.warnings.stderr is None and ins.cudagraphs.never_recorded_warning is None
        assert not [f for f in ins.findings if f.section == "warnings"]


def test_the_saved_stderr_beside_a_plain_log_is_read():
    run = shared(RUN_DIR)
    log = next(run.glob("dedicated_log_torch_trace*.log"))
    assert stderr_beside(str(log)) == str(run / "output.txt")
    ins = _insights(log)
    tw = ins.warnings
    assert tw.stderr == str(run / "output.txt")
    got = [(w.kind, w.source, w.compile_ids, w.name) for w in tw.warnings]
    assert got == [
        ("ERROR", "torch/_inductor/select_algorithm.py:3541", ["[0/0]"], AUTOTUNE_CANDIDATE_FAILED),
        ("UserWarning", "torch/_inductor/select_algorithm.py:3686", [], None),
        ("ERROR", "torch/_inductor/select_algorithm.py:3541", ["[0/0]"], AUTOTUNE_CANDIDATE_FAILED),
        ("UserWarning", "torch/_inductor/compile_fx.py:322", [], "float32 matmuls run without TF32 tensor cores"),
        # stderr names no compile; [0/1] is the graph set up and never recorded (no recording in the log), the one
        # the CUDA graphs section gives the warning to: the same attribution in both places.
        ("UserWarning", "torch/_inductor/cudagraph_trees.py:2582", ["[0/1]"], PENDING_BACKWARD),
    ]
    # An ERROR record is every line of it: torch's message, then the traceback of the choice that failed.
    first = tw.warnings[0]
    assert first.headline.startswith("Exception No valid triton configs. OutOfMemoryError: out of resource: triton_mm")
    assert first.more.startswith("Traceback (most recent call last):") and first.more.endswith("Reducing block sizes or `num_stages` may help.")
    # The graph set up and never recorded gets torch's reason; the warning is not a second finding.
    never = next(f for f in ins.findings if f.title == "CUDA graphs never recorded for [0/1] (forward)")
    assert never.detail.startswith("torch warned that a backward was still pending: ")
    assert "cudagraph_mark_step_begin()" in never.detail
    assert ins.cudagraphs.never_recorded_warning.startswith("Unable to hit fast path of CUDAGraphs because of pending")
    # The compile's own page says it too.
    with read_trace(str(log)) as trace:
        from compilescope.analyses.analyze import analyze

        with analyze(trace) as results:
            assert results.compiles["[0/1]"].cudagraphs_warning == ins.cudagraphs.never_recorded_warning
            assert results.compiles["[0/0]"].cudagraphs_warning is None
    # The candidates that failed are the autotuning finding's ("2 candidates failed"), said once.
    assert [f.title for f in ins.findings if f.section == "warnings"] == [
        "float32 matmuls run without TF32 tensor cores", "torch printed 1 other warning"]
    assert "2 candidates failed (OutOfMemoryError ×2)" in next(f.detail for f in ins.findings if f.section == "autotuning")


def test_the_warnings_table_gives_the_pending_backward_to_the_compile_the_cuda_graphs_table_does(tmp_path):
    out = tmp_path / "out"
    assert run_cli(shared(RUN_DIR), "-o", out, "--no-browser") == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    graphs = page[page.index('id="insights-cudagraphs"'):page.index('id="insights-warnings"')]
    warnings = page[page.index('id="insights-warnings"'):]
    warnings = warnings[:warnings.index("</table>")]
    pending_row = next(row for row in warnings.split("<tr>") if "pending, uninvoked backwards" in row)
    graphs_row = next(row for row in graphs.split("<tr>") if "pending, uninvoked backwards" in row)
    cid = '<a class="mono" href="#[0/1]"'
    assert pending_row.startswith("<td>" + cid) and graphs_row.startswith("<td>" + cid)


def test_a_saved_stderr_without_warnings_is_still_named_as_the_record():
    # flex_sdpa_model's output.txt holds no warning: the run was recorded all the same, and from that file.
    run = shared("gpu-torch211/flex_sdpa_model")
    tw = _insights(next(run.glob("dedicated_log_torch_trace*.log"))).warnings
    assert (tw.recorded, tw.stderr, tw.warnings) == (True, str(run / "output.txt"), [])


def test_a_stderr_beside_several_logs_is_nobody_s(tmp_path):
    run = shared(RUN_DIR)
    log = next(run.glob("dedicated_log_torch_trace*.log"))
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(log, alone / log.name)
    assert stderr_beside(str(alone / log.name)) is None  # no stderr saved
    shutil.copy(run / "output.txt", alone / "output.txt")
    assert stderr_beside(str(alone / log.name)) == str(alone / "output.txt")
    shutil.copy(torch213("recompiles.log"), alone / "dedicated_log_torch_trace_other.log")
    assert stderr_beside(str(alone / log.name)) is None
    assert not _insights(alone / log.name).warnings


def test_a_log_record_of_several_lines_is_one_warning_with_the_user_line_torch_printed():
    """cudagraph_skips.output.txt: torch's CUDA graph skip, four lines behind one prefix, tagged [__cudagraphs]."""
    records = read_stderr_warnings(str(cuda211("cudagraph_skips.output.txt")))
    [skip] = [r for r in records if "skipping cudagraphs" in r["message"]]
    assert skip["level"] == "WARNING" and skip["source"] == "torch/_inductor/cudagraph_utils.py:207"
    assert skip["message"].splitlines()[0] == "skipping cudagraphs due to mutated inputs (1 instances). Found from : "
    assert 'cudagraph_skips.py", line 17, in accumulate' in skip["message"]
    assert skip["compile_id"] is None  # torch printed none: it decided at the first run


def test_stderr_is_untrusted_text(tmp_path):
    noise = tmp_path / "output.txt"
    noise.write_bytes(b"\xff\xfe not text\n" + b"W1122 18:24:54.570000 1 torch/x.py:1] " + b"A" * 50_000 + b"\n"
                      + b"/x/torch/y.py:notaline: UserWarning: no\n" + b"<script>/torch/z.py:3: UserWarning: <b>\n"
                      + b"C:\\env\\Lib\\site-packages\\torch\\w.py:4: FutureWarning: on Windows\n"
                      + b"W1122 18:24:54.570000 1 torch/v.py:5] [!0/1/0] [__graph_breaks] compiled autograd's\n")
    records = read_stderr_warnings(str(noise))
    assert [(r["source"], len(r["message"])) for r in records] == [
        ("torch/x.py:1", 10_000 - 38), ("torch/z.py:3", 3), ("torch/w.py:4", 10), ("torch/v.py:5", len("compiled autograd's"))]
    assert [r["compile_id"] for r in records] == [None, None, None, "[!0/1/0]"]


def test_the_report_and_the_json_show_them(tmp_path, capsys):
    log = torch213("torch_warnings.log.gz")
    assert run_cli("summary", log, "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [w["name"] for w in doc["warnings"]["warnings"]] == [
        "complex operators run as eager kernels", RECOMPILE_LIMIT, "torch.cond kept one branch only",
        "an lru_cache function is traced through its cache"]
    assert doc["warnings"]["warnings"][2]["location"]["line"] == 35
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert '<h3 id="insights-warnings">Warnings torch printed (4)</h3>' in page
    assert "Recorded by\n<code>compilescope run</code>" in page
    assert "<pre>Pred is a Python constant." in page


def test_diff_says_which_warnings_are_gone(capsys):
    """torch_warnings_fixed.log.gz: the same program with a real view for mag and a tensor predicate for pick."""
    a, b = torch213("torch_warnings.log.gz"), torch213("torch_warnings_fixed.log.gz")
    assert [w.name for w in _insights(b).warnings.warnings] == [
        RECOMPILE_LIMIT, "an lru_cache function is traced through its cache"]
    assert run_cli("diff", a, b, "--json") == 1
    [doc] = json.loads(capsys.readouterr().out)["ranks"]
    got = [(c["kind"], c["title"], c["frame"].rsplit("/", 1)[-1]) for c in doc["changes"] if c["section"] == "warnings"]
    assert got == [("removed", "torch no longer warns: complex operators run as eager kernels", "torch_warnings.py:23 mag"),
                   ("removed", "torch no longer warns: torch.cond kept one branch only", "torch_warnings.py:33 pick")]
    assert run_cli("diff", b, a, "--json") == 1
    [doc] = json.loads(capsys.readouterr().out)["ranks"]
    assert [(c["kind"], c["title"]) for c in doc["changes"] if c["section"] == "warnings"] == [
        ("added", "torch now warns: complex operators run as eager kernels"),
        ("added", "torch now warns: torch.cond kept one branch only")]


def test_diff_compares_warnings_only_when_both_runs_recorded_them(capsys):
    """recompiles.log is a plain log: torch may have warned there, and nobody recorded it."""
    assert run_cli("diff", torch213("recompiles.log"), torch213("torch_warnings.log.gz"), "--json") == 1
    [doc] = json.loads(capsys.readouterr().out)["ranks"]
    assert not [c for c in doc["changes"] if c["section"] == "warnings"]
    assert any(n.startswith("the warnings torch printed are compared only when both runs recorded them") for n in doc["notes"])
    # transformed_code.log has the transformed code of compilescope's hook, from before its warning recorder existed
    # (as the H200 recordings of tests/data/cuda_torch211, whose stderr shows the TF32 warning the log lacks): no
    # compilescope_recorders record says the recorder was on, so nothing is said of what torch printed there.
    assert run_cli("diff", torch213("transformed_code.log"), torch213("torch_warnings.log.gz"), "--json") == 1
    [doc] = json.loads(capsys.readouterr().out)["ranks"]
    assert not [c for c in doc["changes"] if c["section"] == "warnings"]
    assert _insights(torch213("transformed_code.log")).warnings.recorded is False
    # Rank 0 of multi_rank_warnings ran with the recorder on (its compilescope_recorders record says so) and torch
    # warned nothing there: against it, each warning of torch_warnings.log.gz is new.
    rank0 = torch213("x").parents[1] / "multi_rank_warnings" / "dedicated_log_torch_trace_rank_0.log"
    assert (_insights(rank0).warnings.recorded, _insights(rank0).warnings.warnings) == (True, [])
    assert run_cli("diff", rank0, torch213("torch_warnings.log.gz"), "--json") == 1
    [doc] = json.loads(capsys.readouterr().out)["ranks"]
    assert len([c for c in doc["changes"] if c["section"] == "warnings" and c["kind"] == "added"]) == 4


def test_a_recorded_warning_that_cannot_be_read_is_counted_and_the_rest_kept(tmp_path):
    log = with_payload_changed(torch213("torch_warnings.log.gz"), tmp_path / "dedicated_log_torch_trace_x.log",
                               lambda line: line.startswith('\t{"message": "Pred is a Python constant.'),
                               lambda p: p.replace('{"message": "Pred', '{"message": 5, "was": "Pred', 1))
    tw = _insights(log).warnings
    assert tw.unreadable == 1 and len(tw.warnings) == 3
    assert run_cli("summary", log) == 0


def test_what_torch_printed_is_escaped_in_the_report(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = next(shared(RUN_DIR).glob("dedicated_log_torch_trace*.log"))
    shutil.copy(log, run / log.name)
    (run / "output.txt").write_text("/x/torch/a.py:1: UserWarning: <script>alert(1)</script>\n"
                                    "W1122 18:24:54.570000 1 torch/b.py:2] [0/0] <img src=x onerror=alert(2)>\n")
    assert run_cli(run, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(2)&gt;" in page


def test_a_log_of_compilescope_from_before_its_warning_recorder_is_not_called_warning_free(tmp_path, capsys):
    """tests/data/cuda_torch211/logs/cudagraph_skips.log.gz was recorded by `compilescope run` (its transformed code is
    in it) before the warning recorder existed; torch printed a TF32 warning and a CUDA graph skip on stderr
    (cudagraph_skips.output.txt). The log alone cannot say what torch printed; with its stderr beside it, that says."""
    log = cuda211("cudagraph_skips.log.gz")
    assert run_cli("check", log, "--no-warnings") == 1
    assert "the run did not record the warnings torch printed" in capsys.readouterr().out
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(log, run / log.name)
    shutil.copy(cuda211("cudagraph_skips.output.txt"), run / "output.txt")
    tw = _insights(run / log.name).warnings
    assert (tw.recorded, tw.stderr) == (True, str(run / "output.txt"))
    printed = (run / "output.txt").read_text()
    assert "TensorFloat32 tensor cores" in printed and "skipping cudagraphs due to mutated inputs" in printed
    assert "float32 matmuls run without TF32 tensor cores" in [w.name for w in tw.warnings]
    assert run_cli("check", run / log.name, "--no-warnings") == 1


def test_summary_names_the_saved_stderr_by_its_file_name(capsys):
    # gpt2_train's TF32 warning is in its output.txt (torch's compile_fx.py:322 UserWarning), beside the plain log: the
    # directory is the log's, which the summary's first line names already, so the file's name is all it adds.
    run = shared("gpu-torch211/gpt2_train")
    assert "compile_fx.py:322: UserWarning: TensorFloat32" in (run / "output.txt").read_text()
    assert run_cli("summary", run) == 0
    out = capsys.readouterr().out
    assert "read from the run's saved stderr beside the log: output.txt\n" in out
    assert str(run) not in out


def test_a_long_warning_in_a_finding_is_cut_between_words():
    # cpu_autotune's run warned "TypedStorage is deprecated. It will be removed ... if you are using ..." (its first
    # line 300 characters and more), python_features' "... or a third-party C/C++ Python extension ...": the finding
    # cut them at 157 characters whatever stood there ("if you are usi...", "a third-par..."). Cut between words,
    # what it shows is the message's own words, and it says it goes on.
    for log, word in (("cpu_autotune.log.gz", "TypedStorage is deprecated."),
                      ("python_features.log.gz", "Dynamo does not know how to trace the builtin")):
        ins = _insights(torch213(log))
        [finding] = [f for f in ins.findings if f.title.startswith("torch printed") and "other warning" in f.title]
        shown = finding.detail.removesuffix(" …")
        assert finding.detail.endswith(" …") and len(finding.detail) <= 160 and shown.startswith(word)
        headlines = {w.headline for w in ins.warnings.printed_warnings if w.headline.startswith(shown)}
        assert headlines and all(len(h) > 160 and h[len(shown)] == " " for h in headlines)

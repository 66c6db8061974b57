"""A user's NumPy kernels as torch.library custom ops (tests/data/torch213 programs/custom_ops.py): that a custom op
lacking a fake kernel or an autograd formula is told as what to add to that op, at the line that calls it, and that a
NumPy function Dynamo cannot trace is told how to keep it out of the way (a custom op). Expected values are read from
the raw log and the program, not from our output."""

from __future__ import annotations

import json
import re
from pathlib import Path

from compilescope.analyses.compile_errors import NEXT_STEPS, RETRY_AOT_EAGER, compile_errors
from compilescope.analyses.fx_sites import op_call_site
from compilescope.analyses.graph_breaks.analysis import graph_breaks
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, torch213
from ..tracelog import raw_records

LOG = "custom_ops.log.gz"
FIXED = "custom_ops_fixed.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "custom_ops.py"


def _program_line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _metrics(log: str) -> dict[str, dict]:
    """compilation_metrics by compile id, read without compilescope."""
    return {e["compilation_metrics"]["compile_id"]: e["compilation_metrics"] for e, _ in raw_records(torch213(log))
            if "compilation_metrics" in e}


def _errors(log: str = LOG) -> dict:
    return {e.compile_id: e for e in compile_errors(read_trace(torch213(log))).errors}


def test_a_custom_op_without_fake_kernel_is_told_to_register_one_not_to_rewrite_the_code():
    call_line = _program_line("return softclip(proj(x), 3.0) * 2")
    raw = _metrics(LOG)["0/0"]
    assert raw["fail_type"] == "TorchRuntimeError"
    assert "There was no fake impl registered for <CustomOpDef(mylib::softclip)>" in raw["fail_reason"]
    # torch names its own frame (CustomOpDef.__call__ in torch/_library/custom_ops.py) as the user's; the dynamo_error
    # traceback's "from user code" names the line that called the op.
    assert raw["fail_user_frame_filename"].endswith("torch/_library/custom_ops.py")
    (traceback,) = [p for e, p in raw_records(torch213(LOG))
                    if e.get("artifact", {}).get("name") == "dynamo_error" and e.get("frame_id") == 0]
    assert f'custom_ops.py", line {call_line}, in clip_scores' in traceback.split("from user code:")[1]
    # The fixed program registers a fake kernel (and runs softclip under no_grad): nothing fails there.
    assert all(m["fail_type"] is None for m in _metrics(FIXED).values())

    error = _errors()["[0/0]"]
    assert (error.location.line, error.location_kind) == (call_line, "failure")
    first = error.next_steps[0]
    assert first.startswith(f"mylib::softclip is your custom op (called at custom_ops.py:{call_line}) and has no fake")
    assert "@softclip.register_fake" in first and "torch.empty_like(x)" in first
    # Not Dynamo's generic advice to rewrite the construct or confirm with backend="eager": the op is the user's own.
    assert NEXT_STEPS["dynamo"][0] not in error.next_steps
    assert not any('backend="eager"' in step for step in error.next_steps)
    assert not _errors(FIXED)


def test_a_custom_op_without_autograd_formula_fails_at_the_line_that_calls_it():
    call_line = _program_line("return gelu_np(proj(x)).pow(2).mean()")
    raw = _metrics(LOG)["1/0"]
    assert raw["fail_type"] == "BackendCompilerFailed"
    assert "Trying to backward through mylib.gelu_np.default but no autograd formula was registered" in raw["fail_reason"]
    assert raw["fail_user_frame_lineno"] is None  # torch names no line: the failure is in AOTAutograd's trace
    # The Dynamo graph of [1/0] holds the op's node under the comment of the line that called it.
    (graph,) = [p for e, p in raw_records(torch213(LOG)) if "dynamo_output_graph" in e and e.get("frame_id") == 1]
    comment = re.search(r"# File: (.+):(\d+) in train_step, code: (.+)\n.*\n\s*gelu_np_default: \"[^\"]*\" = "
                        r"torch\.ops\.mylib\.gelu_np\.default\(linear\)", graph)
    assert comment is not None and int(comment[2]) == call_line

    error = _errors()["[1/0]"]
    assert error.stage == "aot_autograd"
    assert (error.location.line, error.location.function, error.location_kind) == (call_line, "train_step", "failure")
    assert error.location.code == "return gelu_np(proj(x)).pow(2).mean()"
    assert error.next_steps[0].startswith(f"mylib::gelu_np is your custom op, called at custom_ops.py:{call_line}")
    assert "gelu_np.register_autograd(backward, setup_context=setup_context)" in error.next_steps[0]
    assert "torch.no_grad()" in error.next_steps[1]
    assert RETRY_AOT_EAGER not in error.next_steps


def test_op_call_site_is_none_for_an_op_the_graph_does_not_call():
    (graph,) = [p for e, p in raw_records(torch213(LOG)) if "dynamo_output_graph" in e and e.get("frame_id") == 1]
    assert op_call_site(graph, "mylib.softclip.default") is None
    assert op_call_site(graph, "mylib.gelu_np") is None  # torch's name has the overload: ".default"
    site = op_call_site(graph, "mylib.gelu_np.default")
    assert site is not None and site.nodes[-1] == "gelu_np_default"


def test_a_numpy_function_dynamo_cannot_trace_is_told_to_become_a_custom_op():
    interp_line = _program_line("np.interp(")
    reasons = [p for e, p in raw_records(torch213(LOG)) if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason"]
    assert len(reasons) == 2  # featurize inlining bucketize_eager, then bucketize_eager as a frame of its own
    assert all(f"custom_ops.py:{interp_line}" in p.splitlines()[0] and "numpy function <function interp at" in p
               for p in reasons)
    assert not [e for e, _ in raw_records(torch213(FIXED)) if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason"]

    (brk,) = graph_breaks(read_trace(torch213(LOG))).breaks
    assert (brk.location.line, brk.location.function, brk.count) == (interp_line, "bucketize_eager", 2)
    assert "which has no np.interp" in brk.note
    assert 'torch.library.custom_op("mylib::bucketize_eager", mutates_args=())' in brk.note
    assert brk.to_json()["note"] == brk.note
    assert not graph_breaks(read_trace(torch213(FIXED))).breaks


def test_check_and_diff_say_what_the_failed_compile_lacks_not_just_torchs_announcement(capsys):
    from ..conftest import run_cli

    # torch's first line of each fail_reason only announces the error; the op and what it lacks come after it.
    raw = _metrics(LOG)
    assert raw["0/0"]["fail_reason"].splitlines()[0] == "RuntimeError when making fake tensor call"
    assert raw["1/0"]["fail_reason"].splitlines()[0] == "backend='inductor' raised:"
    assert raw["1/0"]["fail_reason"].splitlines()[1].startswith("RuntimeError: Trying to backward through mylib.gelu_np")

    gelu_line = _program_line("return gelu_np(proj(x)).pow(2).mean()")
    def_line = _program_line("def train_step(x):") - 1  # the frame's co_firstlineno: its @torch.compile line
    assert run_cli("check", "--no-failures", torch213(LOG)) == 1
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("no-failures:")]
    assert ("TorchRuntimeError: RuntimeError when making fake tensor call: There was no fake impl registered for "
            "<CustomOpDef(mylib::softclip)>") in line
    assert run_cli("diff", torch213(LOG), torch213(FIXED)) in (0, 1)
    out = " ".join(capsys.readouterr().out.split())
    assert (f"failure gone: [1/0] train_step (custom_ops.py:{def_line}) at custom_ops.py:{gelu_line}: BackendCompilerFailed: "
            "backend='inductor' raised: RuntimeError: Trying to backward through mylib.gelu_np.default but no autograd "
            "formula was registered.") in out


def test_torchs_hint_that_eager_may_fail_too_is_set_aside_beside_a_missing_fake_kernel():
    # torch's fail_reason for [0/0] ends with its generic hint for any fake-tensor failure; softclip's real kernel
    # (the program's NumPy body) runs eagerly, and only tracing lacks the fake kernel: the hint contradicts the finding.
    hint_line = [ln.strip() for ln in _metrics(LOG)["0/0"]["fail_reason"].splitlines() if ln.strip().startswith("Hint:")]
    assert len(hint_line) == 1 and "may result in an error when running in eager" in hint_line[0]

    error = _errors()["[0/0]"]
    assert error.hints == [hint_line[0][len("Hint:"):].strip()]  # kept as torch's text
    assert error.hints_set_aside == error.hints and error.advice_hints == []
    assert error.to_json()["hints"] == error.hints and error.to_json()["advice_hints"] == []
    assert "Hint: Your code may result in an error when running in eager" in error.detail  # the full message keeps it
    assert error.next_steps[1].startswith("Eagerly the op runs as it is")


def test_anomaly_modes_report_of_the_backward_error_is_said_with_the_failure_not_as_another_warning():
    from compilescope.analyses.insights.analysis import insights
    from compilescope.analyses.torch_warnings import torch_warnings

    # The one warning compilescope recorded: printed in [1/0] while AOTAutograd traced the joint graph (between the
    # aot_trace_joint_graph begin and end events), by anomaly mode, naming the forward call at line 77.
    records = [(e, p) for e, p in raw_records(torch213(LOG)) if e.get("artifact", {}).get("name") == "compilescope_warning"]
    assert len(records) == 1 and (records[0][0]["frame_id"], records[0][0]["frame_compile_id"]) == (1, 0)
    message = json.loads(records[0][1])["message"]
    assert message.startswith("Error detected in GeneratedBackwardFor_mylib_gelu_np_defaultBackward. Traceback of "
                              "forward call that caused the error:")
    gelu_line = _program_line("return gelu_np(proj(x)).pow(2).mean()")
    assert f'custom_ops.py", line {gelu_line}, in train_step' in message

    trace = read_trace(torch213(LOG))
    (warning,) = torch_warnings(trace).warnings
    assert warning.failure == "[1/0]" and warning.compile_ids == ["[1/0]"]
    error = _errors()["[1/0]"]
    assert error.torch_printed == [
        "Error detected in GeneratedBackwardFor_mylib_gelu_np_defaultBackward (anomaly mode, on while AOTAutograd "
        f"traces the backward); the forward call: custom_ops.py:{gelu_line} (`return gelu_np(proj(x)).pow(2).mean()`)"]
    assert not _errors()["[0/0]"].torch_printed  # [0/0] recorded no warning
    findings = insights(trace).findings
    assert not [f for f in findings if f.section == "warnings"]  # not "torch printed 1 other warning"


def test_a_fused_kernel_named_after_the_custom_op_it_feeds_is_said_to_compute_only_its_own_ops():
    from compilescope.analyses.provenance.analysis import analyze_provenance
    from compilescope.analyses.provenance.kernel_notes import kernel_work
    from compilescope.analyses.provenance.line_mappings import GraphLines, text_lines

    records = [(e, p) for e, p in raw_records(torch213(FIXED)) if e.get("frame_id") == 2]
    (mappings,) = [json.loads(p) for e, p in records
                   if e.get("artifact", {}).get("name") == "inductor_provenance_tracking_node_mappings"]
    (code,) = [p for e, p in records if "inductor_output_code" in e]
    (post,) = [p for e, p in records if e.get("artifact", {}).get("name") == "inductor_post_grad_graph"]
    # torch maps the fused kernel to both post-grad nodes, and the custom op's node to a call of its own ...
    assert sorted(mappings["cppCodeToPost"]["cpp_fused_bucketize_tanh_0:1"]) == ["bucketize", "tanh"]
    assert mappings["cppCodeToPost"]["torch.ops.mylib.bucketize.default:2"] == ["bucketize"]
    assert "bucketize: \"f32[4, 16][16, 1]cpu\" = torch.ops.mylib.bucketize.default(tanh)" in post
    # ... and the kernel's C++ computes one op, tanh; the wrapper calls mylib::bucketize after it, on its output.
    kernel_body = code.split("cpp_fused_bucketize_tanh_0 = async_compile", 1)[1].split("''')", 1)[0]
    assert re.findall(r"tmp\d+\.(\w+)\(\)", kernel_body) == ["tanh"]
    assert re.search(r"cpp_fused_bucketize_tanh_0\(arg0_1, buf0\)\n.*\n.*\n\s*buf1 = torch\.ops\.mylib\.bucketize\.default\(buf0\)",
                     code)

    work = {w.call: w for w in kernel_work(mappings, GraphLines(text_lines(post)))}
    assert work["cpp_fused_bucketize_tanh_0:1"].ops == ["aten.tanh"]
    assert work["cpp_fused_bucketize_tanh_0:1"].elsewhere == {"mylib.bucketize": ["torch.ops.mylib.bucketize.default:2"]}
    assert work["cpp_fused_mul_1:3"].ops == ["aten.mul"] and work["cpp_fused_mul_1:3"].note is None
    assert "torch.ops.mylib.bucketize.default:2" not in work  # not a generated kernel

    (section,) = [cp for cid, cp in analyze_provenance(read_trace(torch213(FIXED))).compiles.items()
                  if str(cid) == "[2/0]"][0].sections
    assert list(section.kernel_notes) == ["cpp_fused_bucketize_tanh_0:1"]
    # the kernel's name without the debug handle is the model's (KernelWork.kernel): the page shows it as it is
    assert [(w.call, w.kernel) for w in section.noted_work] == [
        ("cpp_fused_bucketize_tanh_0:1", "cpp_fused_bucketize_tanh_0")]
    assert section.kernel_notes["cpp_fused_bucketize_tanh_0:1"].startswith(
        "computes tanh only; bucketize, in its name, is computed by its own call torch.ops.mylib.bucketize.default:2")
    # As written, featurize's graph stops at the break: its one kernel is named for what it computes.
    (as_written,) = [cp for cid, cp in analyze_provenance(read_trace(torch213(LOG))).compiles.items()
                     if str(cid) == "[2/0_1]"]
    assert [k.name for s in as_written.sections for k in s.kernels] == ["cpp_fused_tanh_0:1"]
    assert not any(s.kernel_notes for s in as_written.sections)


def test_diff_names_the_kernels_featurize_gained_by_what_they_compute_and_where_a_computed_them():
    from compilescope.analyses.analyze import analyze
    from compilescope.analyses.run_facts import RunFacts
    from compilescope.analyses.run_facts.analysis import run_facts
    from compilescope.analyses.diff.analysis import diff_runs

    def kernels(log: str, frame: int) -> dict[str, list[str]]:
        """Generated kernel -> its post-grad nodes, for each compile of a frame, read from torch's node mappings."""
        return {k.rpartition(":")[0]: v for e, p in raw_records(torch213(log)) if e.get("frame_id") == frame
                and e.get("artifact", {}).get("name") == "inductor_provenance_tracking_node_mappings"
                for k, v in json.loads(p)["cppCodeToPost"].items() if "." not in k.rpartition(":")[0]}

    # As written, featurize's graph (frame 2) stops at the break and makes one kernel, for tanh; mul (line 83) is in
    # the graph of the rest of featurize after the break (frame 5). Fixed, featurize is one graph with both.
    assert kernels(LOG, 2) == {"cpp_fused_tanh_0": ["tanh"]}
    assert kernels(LOG, 5) == {"cpp_fused_mul_0": ["mul"]}
    assert {k: sorted(v) for k, v in kernels(FIXED, 2).items()} == {"cpp_fused_bucketize_tanh_0": ["bucketize", "tanh"],
                                                                    "cpp_fused_mul_1": ["mul"]}
    mul_line = _program_line("return codes * x")
    call_line = _program_line("codes = bucketize(x.tanh())")

    def facts(log: str) -> RunFacts:
        with read_trace(str(torch213(log))) as trace:
            return RunFacts.from_json(run_facts(analyze(trace)).to_json())  # as saved facts are read back

    (change,) = [c for c in diff_runs(facts(LOG), facts(FIXED)).changes if "generated kernels" in c.title]
    assert change.title.startswith("featurize (custom_ops.py:80): generated kernels 1 → 2: + cpp_fused_mul_1 "
                                   f"(mul at custom_ops.py:{mul_line}, which A computed in featurize after its graph "
                                   f"break (custom_ops.py:{call_line}))")
    assert (f"cpp_fused_tanh_0 → cpp_fused_bucketize_tanh_0, both tanh at custom_ops.py:{call_line} (B's graph calls "
            "mylib.bucketize whole, as its own call torch.ops.mylib.bucketize.default:2") in change.title
    assert [k["kernel"] for k in change.detail["kernels_added"]] == ["cpp_fused_mul_1"]
    assert change.detail["kernels_removed"] == []
    assert [(r["a"]["kernel"], r["b"]["kernel"]) for r in change.detail["kernels_renamed"]] == [
        ("cpp_fused_tanh_0", "cpp_fused_bucketize_tanh_0")]


def test_diff_names_a_resumed_frame_once_and_says_anomaly_modes_report_with_the_failure_it_belongs_to(capsys):
    from ..conftest import run_cli

    # A's frames 4 and 5 are Dynamo's resume functions, each starting at the line of its break (co_firstlineno).
    metrics = _metrics(LOG)
    call_line = _program_line("codes = bucketize(x.tanh())")
    interp_line = _program_line("np.interp(")
    assert [(metrics[c]["co_name"], metrics[c]["co_firstlineno"]) for c in ("4/0", "5/0")] == [
        (f"torch_dynamo_resume_in_bucketize_eager_at_{interp_line}", interp_line),
        (f"torch_dynamo_resume_in_featurize_at_{call_line}", call_line)]
    # Anomaly mode's report, recorded in [1/0] only, is the backward error of [1/0]'s failure; the fixed run fails
    # nowhere and records no warning.
    warned = [(e["frame_id"], e["frame_compile_id"], json.loads(p)["message"].split(". ", 1)[0])
              for log in (LOG, FIXED) for e, p in raw_records(torch213(log))
              if e.get("artifact", {}).get("name") == "compilescope_warning"]
    assert warned == [(1, 0, "Error detected in GeneratedBackwardFor_mylib_gelu_np_defaultBackward")]
    assert metrics["1/0"]["fail_type"] == "BackendCompilerFailed"
    assert not any(m.get("fail_type") for m in _metrics(FIXED).values())

    assert run_cli("diff", torch213(LOG), torch213(FIXED), "--json") in (0, 1)
    (run,) = json.loads(capsys.readouterr().out)["ranks"]
    changes = run["changes"]
    titles = [c["title"] for c in changes]
    # one label, one pair of brackets: the function after its break, where the resumed code starts
    assert f"featurize after its graph break (custom_ops.py:{call_line}) compiled only in A (1 compile)" in titles
    assert f"bucketize_eager after its graph break (custom_ops.py:{interp_line}) compiled only in A (1 compile)" in titles
    assert not [t for t in titles if "after its graph break at line" in t]
    # the report of [1/0]'s failure is said with it, once, not as a warning of its own
    assert not [c for c in changes if c["section"] == "warnings"]
    (gone,) = [c for c in changes if c["section"] == "failures" and c["title"].startswith("failure gone: [1/0]")]
    assert gone["title"].endswith("(torch also printed it, under anomaly mode: Error detected in "
                                  "GeneratedBackwardFor_mylib_gelu_np_defaultBackward)")
    assert [w["failure"] for w in gone["detail"]["torch_printed"]] == ["[1/0]"]
    assert sum("GeneratedBackwardFor" in t for t in titles) == 1


def test_the_provenance_page_says_what_the_fused_kernel_named_after_the_custom_op_computes(tmp_path):
    """The note the kernels and source pages show, above the three panels too, linking to the kernel's call."""
    import html

    from ..conftest import report

    records = [(e, p) for e, p in raw_records(torch213(FIXED)) if e.get("frame_id") == 2]
    (mappings,) = [json.loads(p) for e, p in records
                   if e.get("artifact", {}).get("name") == "inductor_provenance_tracking_node_mappings"]
    (code,) = [p for e, p in records if "inductor_output_code" in e]
    # torch maps the kernel to tanh and bucketize, and bucketize to the custom op's own call (as the test above reads)
    assert sorted(mappings["cppCodeToPost"]["cpp_fused_bucketize_tanh_0:1"]) == ["bucketize", "tanh"]
    assert mappings["cppCodeToPost"]["torch.ops.mylib.bucketize.default:2"] == ["bucketize"]
    # the generated code's one call of the kernel, the line the note links to
    (call_line,) = [n for n, line in enumerate(code.splitlines(), 1)
                    if line.strip().startswith("cpp_fused_bucketize_tanh_0(")]

    out = tmp_path / "out"
    report(torch213(FIXED), out)
    page = (out / "provenance" / "-_2_0_0.html").read_text()
    notes = re.findall(r'<ul class="prov-notes">(.*?)</ul>', page)
    assert len(notes) == 1
    (item,) = re.findall(r"<li>(.*?)</li>", notes[0])
    assert item.startswith(f'<a href="#s0-code-L{call_line}" class="mono" title="its call in the generated code">'
                           "cpp_fused_bucketize_tanh_0</a> ")
    text = html.unescape(re.sub(r"<[^>]+>", "", item))
    assert text.startswith("cpp_fused_bucketize_tanh_0 computes tanh only; bucketize, in its name, is computed by its "
                           "own call torch.ops.mylib.bucketize.default:2")
    # the line it links to is the call, and the kernel's link there carries the note in its title
    (row,) = re.findall(rf'<div class="pl[^"]*" id="s0-code-L{call_line}".*?</div>', page)
    assert "cpp_fused_bucketize_tanh_0(arg0_1, buf0)" in row and "computes tanh only" in row
    # As written, featurize's graph [2/0_1] has no kernel named for more than it computes: no note.
    report(torch213(LOG), tmp_path / "a")
    written = (tmp_path / "a" / "provenance" / "-_2_0_1.html").read_text()
    assert "cpp_fused_tanh_0" in written and 'class="prov-notes"' not in written

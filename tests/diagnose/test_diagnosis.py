"""The diagnosis analysis and its page, without torch: real torch 2.13 logs and synthetic stage runs."""

from __future__ import annotations

import gzip
import io
import json
import re

import pytest
from rich.console import Console

from compilescope.analyses.diagnosis import (
    ACCURACY_RUN, AOT_EAGER, BACKEND, EAGER, NO_COMPILE, MinifyResult, RunFacts, StageOutcome, REPRO_INPUTS, MinifyPlan,
    repro_save_dir,
)
from compilescope.analyses.diagnosis.reproduce import (
    hand_commands, minify_plan, relocated_repro, repro_graph, steps_after_minify,
)
from compilescope.analyses.diagnosis.seeds import program_seed
from compilescope.analyses.diagnosis.stage_outcome import accuracy_failure, numeric_mismatch, raised_where, stage_outcome
from compilescope.analyses.diagnosis.verdict import decide
from compilescope.diagnose import DiagnoseResult
from compilescope.ingest.reader import read_trace
from compilescope.render.diagnosis import diagnosis_json, diagnosis_page, print_verdict

from ..conftest import TORCH214_LOGS, cuda211, torch213

ARGV = ["python3", "train.py", "--lr", "3"]

AFTER_DYNAMO_REPRO = '''
import torch
from torch.nn import *
class Repro(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, add):
        relu = torch.relu(add);  add = None
        return (relu,)

mod = Repro()
if __name__ == '__main__':
    from torch._dynamo.repro.after_dynamo import run_repro
    run_repro(mod, load_args, accuracy=False, command='run',
        save_dir='/tmp/x/checkpoints', autocast=False, backend='relu_compile_error_TESTING_ONLY')
'''
AFTER_AOT_REPRO = '''
class Repro(torch.nn.Module):
    def forward(self, arg0_1, arg1_1):
        add = torch.ops.aten.add.Tensor(arg0_1, arg1_1);  arg0_1 = arg1_1 = None
        relu = torch.ops.aten.relu.default(add);  add = None
        return (relu,)
'''


def facts(returncode: int = 0, output: str = "", timed_out: bool = False, env: dict | None = None) -> RunFacts:
    return RunFacts(argv=ARGV, env=env or {}, returncode=returncode, seconds=1.0, timed_out=timed_out, output_tail=output)


def passed(spec, compiles: int = 1, inductor: bool = False) -> StageOutcome:
    return StageOutcome(spec, facts(env=dict(spec.env)), compiles=compiles, used_inductor=inductor, traced=True)


def from_log(spec, log: str, returncode: int, logs=torch213) -> StageOutcome:
    with read_trace(logs(log)) as trace:
        return stage_outcome(spec, facts(returncode, env=dict(spec.env)), trace)


def test_repro_graph_counts_nodes_like_torch():
    graph = repro_graph(AFTER_DYNAMO_REPRO)
    assert (graph.inputs, graph.ops, graph.nodes) == (["add"], ["torch.relu"], 3)
    graph = repro_graph(AFTER_AOT_REPRO)
    assert graph.ops == ["torch.ops.aten.add.Tensor", "torch.ops.aten.relu.default"] and graph.nodes == 5
    assert repro_graph("not python (") is None and repro_graph("x = 1") is None
    assert repro_save_dir(AFTER_DYNAMO_REPRO) == "/tmp/x/checkpoints"


def _after_aot_repro(save_dir: str, check_str: str | None) -> str:
    """The end of a repro.py as torch 2.13's after_aot.save_graph_repro writes it (its f-string, verbatim)."""
    accuracy, command, tracing_mode = False, "run", "real"
    return ("import os\nimport torch\nif __name__ == '__main__':\n    from torch._dynamo.repro.after_aot import run_repro\n"
            f"    with torch.no_grad():\n"
            f"        run_repro(mod, load_args, accuracy={accuracy!r}, command={command!r}, "
            f"save_dir={save_dir!r}, tracing_mode={tracing_mode!r}, check_str={check_str!r})\n"
            f"        # To run it separately, do \n"
            f"        # mod, args = run_repro(mod, load_args, accuracy={accuracy!r}, command='get_args', "
            f"save_dir={save_dir!r}, tracing_mode={tracing_mode!r}, check_str={check_str!r})\n"
            f"        # mod(*args)")


@pytest.mark.parametrize("kept", [True, False])
def test_the_repro_is_relocated_at_run_repros_save_dir_only(kept):
    """torch writes check_str={check_str!r} on save_dir's line: an error text holding `save_dir='...'` was rewritten
    too (the script no longer parsed, or check_str silently changed), and a path holding `'` (repr quotes it with `"`)
    was not matched, leaving the removed directory. Only the call's save_dir, and the commented-out call's, change."""
    said = REPRO_INPUTS if kept else "None"
    check_str = "boom: save_dir='x' (é)"
    repro = _after_aot_repro("/tmp/work/checkpoints", check_str)
    moved = relocated_repro(repro, kept, "/tmp/work")
    compile(moved, "repro.py", "exec")
    assert moved == repro.replace("save_dir='/tmp/work/checkpoints'", f"save_dir={said}")
    assert moved.count(f"save_dir={said}") == 2 and f"check_str={check_str!r}" in moved
    quoted = _after_aot_repro("/tmp/wo'rk/checkpoints", None)
    assert repro_save_dir(quoted) == "/tmp/wo'rk/checkpoints"
    moved = relocated_repro(quoted, kept, "/tmp/wo'rk")
    assert "wo'rk" not in moved and moved.count(f"save_dir={said}") == 2


def test_accuracy_failure_lines():
    out = "W1121 after_aot.py:390] Accuracy failed for the AOT Autograd graph model__0_inference_0\nmore"
    assert accuracy_failure(out) == "Accuracy failed for the AOT Autograd graph model__0_inference_0"
    assert accuracy_failure("torch._dynamo.debug_utils.AccuracyError: Bad accuracy detected") == "AccuracyError: Bad accuracy detected"
    assert accuracy_failure("all good") is None


def test_cpp_compile_error_in_the_backend_stage_real_log():
    # compile_error_fallback.log: Inductor's C++ compile failed, suppress_errors let the program exit 0.
    backend = from_log(BACKEND, "compile_error_fallback.log", 0)
    assert backend.status == "failed" and backend.used_inductor and backend.backend_name == "inductor"
    verdict = decide([passed(EAGER), passed(AOT_EAGER), backend])
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("compile_error", "backend", "kernel_compile")
    # (the CppCompileError names the kernels' compiler: C++)
    assert verdict.error.inner_exception == "CppCompileError" and verdict.stage_label == "C++ compile"
    # The stage in the sentence as a noun, and the minify step names the program the stages ran (ARGV), not a
    # placeholder script, after diagnose's own --minify.
    assert verdict.headline == ('Compilation fails only with your backend (inductor), while backend="eager" and '
                                '"aot_eager" work: the failure is in the C++ compile of Inductor\'s kernels.')
    [minify] = [step for step in verdict.next_steps if step.startswith("Minify")]
    assert minify == ('Minify: compilescope diagnose --minify does it for you; by hand: TORCHDYNAMO_REPRO_AFTER="aot" '
                      'python3 train.py --lr 3, then run the minifier_launcher.py it writes.')
    assert minify_plan(verdict, [passed(EAGER), passed(AOT_EAGER), backend]) == MinifyPlan("aot", BACKEND, level=2)
    # Once --minify has run torch's minifier, the step that says to run it goes (the minify result follows).
    ran = MinifyResult(after="aot", level=2, run=facts(1), launcher_run=facts(0))
    steps = steps_after_minify(verdict, ran)
    assert steps == [step for step in verdict.next_steps if step != minify] and len(steps) == len(verdict.next_steps) - 1
    skipped = MinifyResult(after="-", level=0, note="nothing to minify")
    assert steps_after_minify(verdict, skipped) == verdict.next_steps == steps_after_minify(verdict, None)


def test_a_failed_compile_the_program_caught_does_not_fail_its_run_real_log():
    """compile_error_raises.log (the program as written, exit 1): the program catches its fullgraph=True graph break
    [0/0] (Dynamo) and goes on to compile [1/0], whose backend error kills it."""
    backend = from_log(BACKEND, "compile_error_raises.log", 1)
    assert backend.status == "failed"
    assert [(e.compile_id, e.exception) for e in backend.errors] == [("[1/0]", "BackendCompilerFailed")]
    assert [(e.compile_id, e.exception) for e in backend.caught] == [("[0/0]", "Unsupported")]
    # Had it exited 0, nothing that raised would have stopped it: no failure, both noted.
    survived = from_log(BACKEND, "compile_error_raises.log", 0)
    assert survived.status == "passed" and [e.compile_id for e in survived.caught] == ["[0/0]", "[1/0]"]
    # With the backend forced to "eager" / "aot_eager", [1/0] compiles: those stages pass with [0/0] caught
    # (test_diagnose_torch.py runs the program).
    eager, aot = (StageOutcome(spec, facts(env=dict(spec.env)), caught=backend.caught[:1], compiles=2, traced=True)
                  for spec in (EAGER, AOT_EAGER))
    verdict = decide([eager, aot, backend])
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("compile_error", "backend", "user_backend")
    assert verdict.error.backend == "relu_compile_error_TESTING_ONLY" and verdict.location.line == 22  # g_relu
    assert verdict.headline.endswith('"aot_eager" work: the failure is in the backend compiler.')  # not Inductor
    assert not any("your_script" in step for step in verdict.next_steps)
    assert 'backend="eager" should run' not in " ".join(verdict.next_steps)  # diagnose ran it: it passed
    assert verdict.next_steps[0].startswith('backend="aot_eager" runs the program (its stage passed)')
    assert "With backend=\"eager\", 1 compile failed without stopping the program (Unsupported" in verdict.next_steps[-1]
    assert "compile_error_raises.py:18" in verdict.next_steps[-1]
    doc = backend.to_json()
    assert [e["compile_id"] for e in doc["errors"]] == ["[1/0]"] and [e["compile_id"] for e in doc["caught"]] == ["[0/0]"]


def test_a_failed_compile_that_ends_the_run_is_its_failure_real_log():
    """The same log, but the run exits 1 right after [0/0] (the fullgraph error uncaught): Dynamo's error there."""
    whole = from_log(EAGER, "compile_error_raises.log", 1)
    eager = StageOutcome(EAGER, whole.facts, errors=whole.caught, compiles=1, traced=True)
    skipped = [StageOutcome(AOT_EAGER, skipped_reason="earlier"), StageOutcome(BACKEND, skipped_reason="earlier")]
    verdict = decide([eager, *skipped])
    assert (verdict.failing_stage, verdict.stage) == ("eager", "dynamo")
    assert verdict.location.filename.endswith("compile_error_raises.py") and verdict.location.line == 18
    assert any("fullgraph=True" in step for step in verdict.next_steps)
    assert not any('backend="eager"' in step for step in verdict.next_steps)  # the stage that just failed
    assert isinstance(minify_plan(verdict, [eager, *skipped]), str)  # no minifier for Dynamo's own errors


def test_a_failure_in_the_code_after_a_graph_break_names_it_as_the_rest_of_f_real_log():
    """resume_backend_error.log (exit 1): f breaks the graph at line 17; the rest of f, compiled as
    torch_dynamo_resume_in_f_at_17 ([1/0], as its compilation_metrics name it), holds torch.relu, which the test
    backend refuses. The log names no failing line, so the verdict's place is the frame being compiled; the terminal's
    Where and the page's User frame name it as the summary does (they printed torch's name), the page with torch's
    name in its title, and diagnosis.json keeps torch's name."""
    text = gzip.open(torch213("resume_backend_error.log.gz"), "rt").read()
    assert re.findall(r'"compile_id": "(\d+/\d+)", "frame_key": "\d+", "co_name": "(\w+)"[^}]*"fail_type": "(\w+)"', text) \
        == [("1/0", "torch_dynamo_resume_in_f_at_17", "BackendCompilerFailed")]
    backend = from_log(BACKEND, "resume_backend_error.log.gz", 1)
    stages = [passed(EAGER), passed(AOT_EAGER), backend]
    result = DiagnoseResult(argv=ARGV, cwd="/w", outcomes=stages, verdict=decide(stages))
    location = result.verdict.location
    assert (location.filename.endswith("resume_backend_error.py"), location.line, location.function,
            result.verdict.location_kind) == (True, 17, "torch_dynamo_resume_in_f_at_17", "compiled frame")
    console = Console(file=io.StringIO(), width=300)
    print_verdict(result, console)
    [where] = [line.strip("│| ") for line in console.file.getvalue().splitlines() if "Where:" in line]
    assert where.endswith("resume_backend_error.py:17 in f (after its graph break at line 17) (compiled frame)")
    commands = hand_commands(result.argv, result.runs, result.verdict, None, "/o/minify")
    page = diagnosis_page(result, commands, "/o")
    cell = page[page.index('id="verdict-location">'):]
    assert (':17 in <span title="Dynamo&#39;s resume function torch_dynamo_resume_in_f_at_17">'
            "f (after its graph break at line 17)</span>") in cell[:cell.index("</td>")]
    assert json.loads(diagnosis_json(result, commands))["verdict"]["location"]["function"] == "torch_dynamo_resume_in_f_at_17"


def test_a_run_that_exits_0_past_failed_compiles_passes_real_log():
    """torch 2.14 under compiled autograd fails to compile three of inspect's functions (README, differs/); they run
    eagerly, the exception is handled, the program ends well: every stage passes, and the verdict says what failed."""
    log = lambda name: TORCH214_LOGS.parent / "differs" / name  # noqa: E731
    backend = from_log(BACKEND, "compiled_autograd.log.gz", 0, logs=log)
    assert backend.status == "passed" and backend.errors == []
    assert [e.compile_id for e in backend.caught] == ["[1/0]", "[3/0]", "[5/0]"]
    verdict = decide([passed(EAGER), passed(AOT_EAGER), backend])
    assert verdict.ok
    assert verdict.next_steps[-2].startswith("With your backend, 3 compiles failed without stopping the program")


def test_torch_export_s_failures_are_not_ok_and_not_the_stages_real_log():
    """export_constraints.py (README) exits 0 past its failing exports: strict export's Dynamo trace fails at forward's
    line 40 (its compilation_metrics, compile_id null: fail_type UserError, "Could not guard on data-dependent
    expression u0 > u1"), and non-strict export's dims contradict the code (guards s27 <= 32 at line 30 and
    Eq(s52, 2) at line 31). The log has no dynamo_start: no torch.compile ran, so the forced backends change nothing
    and each stage logs the same. check fails this log (no-failures); diagnose said "OK, every stage compiles"."""
    runs = [from_log(spec, "export_constraints.log.gz", 0) for spec in (EAGER, AOT_EAGER, BACKEND)]
    backend = runs[-1]
    assert [(e.compile_id, e.exception) for e in backend.export_errors] == [("[-/-]", "UserError")]
    assert backend.errors == [] and backend.caught == [] and backend.export_failed
    verdict = decide(runs)
    assert not verdict.ok and verdict.outcome == "export_error" and verdict.stage == "export"
    assert verdict.headline.startswith("torch.export fails: 1 strict export failed (the first at "
                                       "export_constraints.py:40: UserError). diagnose's stages test torch.compile")
    assert "u0 > u1" in verdict.message and verdict.location.line == 40
    draft, strict, dims = verdict.next_steps[:3]
    assert draft.startswith("torch.export.draft_export(") and "strict=False" in strict
    assert dims.startswith("torch's suggested dynamic_shapes fix (torch.export at export_constraints.py:52): "
                           "tokens.size()[1] given [2, 128], but the code at export_constraints.py:30 needs s27 <= 32")
    assert "tokens.size()[0] made dynamic, but the code at export_constraints.py:31 fixes it to 2" in dims
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    print_verdict(DiagnoseResult(argv=ARGV, cwd="/w", outcomes=runs, verdict=verdict), console)
    assert "Diagnosis: OK" not in console.export_text()


def test_torch_export_s_issues_fail_and_exports_that_succeed_pass_real_log():
    # Under TORCH_DTRACE the same program's export logs 4 issues (check's no-export-issues fails it): not OK either. The
    # fixed program's exports all succeed (check passes its log): OK.
    dtrace = decide([from_log(spec, "export_constraints_dtrace.log.gz", 0) for spec in (EAGER, AOT_EAGER, BACKEND)])
    assert dtrace.outcome == "export_error"
    assert "; torch.export found 4 issues (the first: Guard Evaluated at export_constraints.py:30 in forward)." in (
        dtrace.headline)
    fixed = [from_log(spec, "export_constraints_fixed.log.gz", 0) for spec in (EAGER, AOT_EAGER, BACKEND)]
    assert not any(o.export_failed for o in fixed) and decide(fixed).ok


def test_failures_torch_fell_back_from_still_fail_the_run_real_log():
    """suppress_errors: torch swallowed the error and ran the frame eagerly, so the run exits 0, but it failed to
    compile, which is what diagnose is for (the program did not catch anything)."""
    backend = from_log(BACKEND, "compile_error_fallback.log", 0)
    assert backend.status == "failed" and backend.errors[0].fell_back and backend.caught == []


def test_aot_eager_failure_is_aotautograd():
    aot = from_log(AOT_EAGER, "compile_error_lowering.log", 1)  # any failed compile: the stage decides
    verdict = decide([passed(EAGER), aot, StageOutcome(BACKEND, skipped_reason="earlier")])
    assert (verdict.failing_stage, verdict.stage) == ("aot_eager", "aot_autograd")
    assert verdict.next_steps[0].startswith('backend="eager" runs the program (its stage passed)')
    assert not any('backend="aot_eager" should run' in step for step in verdict.next_steps)  # it just failed
    assert minify_plan(verdict, []) == MinifyPlan("dynamo", AOT_EAGER, level=2)


# The end of what a torch 2.13 run printed when Inductor's C++ relu raised (model: fc2(relu(fc1(x))), compiled as
# [0/0]; inject_relu_bug_TESTING_ONLY = "runtime_error"), torch's frames between them left out.
RUNTIME_TRACEBACK = """Traceback (most recent call last):
  File "/w/model.py", line 23, in <module>
    got = torch.compile(model)(x)
          ^^^^^^^^^^^^^^^^^^^^^^^
  File "/v/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1789, in _call_impl
    return forward_call(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/w/model.py", line 15, in forward
    def forward(self, x):
  File "/v/lib/python3.11/site-packages/torch/_inductor/output_code.py", line 763, in __call__
    return self.current_callable(inputs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/tmp/torchinductor_root/gt/cgtzks5eszmyycbbcktekpbasdirrvfupk6of3pc2h6nwnnz3vlt.py", line 87, in call
    cpp_fused_relu_0(buf1)
RuntimeError: unhandled error
"""


def test_a_run_time_failure_names_the_users_frame_and_the_output_code_line():
    output_code = {"cgtzks5eszmyycbbcktekpbasdirrvfupk6of3pc2h6nwnnz3vlt": ("[0/0]", 14, 0)}
    user, (line, frame) = raised_where("W1126 some warning\n" + RUNTIME_TRACEBACK, output_code)
    assert (user.filename, user.line, user.function) == ("/w/model.py", 15, "forward")  # innermost user frame
    assert (line.compile_id, line.artifact, line.line, frame.code) == ("[0/0]", 14, 87, "cpp_fused_relu_0(buf1)")
    runtime = StageOutcome(BACKEND, facts(1, RUNTIME_TRACEBACK), compiles=1, traced=True, raised_at=user,
                           raised_in=(line, frame))
    verdict = decide([passed(EAGER), passed(AOT_EAGER), runtime])
    assert (verdict.location, verdict.location_kind) == (user, "where it raised")
    assert verdict.next_steps[0] == ("It raised in the call of [0/0]'s output code, at line 87 (cpp_fused_relu_0(buf1)): "
                                     "the code torch generated raised there (the output code is in that run's trace "
                                     "report).")
    # Not in the log's output code (another run's cache file): the generated file is not taken for the user's.
    user, generated = raised_where(RUNTIME_TRACEBACK, {})
    assert generated is None and (user.filename, user.line) == ("/w/model.py", 15)
    assert raised_where("no traceback here", output_code) == (None, None)


def test_failures_without_a_failed_compile():
    runtime = StageOutcome(BACKEND, facts(1, "Traceback ...\nRuntimeError: ReluRuntimeError"), compiles=1, traced=True)
    verdict = decide([passed(EAGER), passed(AOT_EAGER), runtime])
    assert (verdict.outcome, verdict.stage, verdict.message) == ("runtime_error", "compiled_runtime", "RuntimeError: ReluRuntimeError")
    # Inductor's code that raises when it runs empties its inputs first: each minifier try needs a process of its own.
    runtime.used_inductor = True
    assert minify_plan(verdict, [passed(EAGER), passed(AOT_EAGER), runtime]) == MinifyPlan("aot", BACKEND, 2, True)
    [minify] = [step for step in verdict.next_steps if step.startswith("Minify")]
    assert "compilescope diagnose --minify does it for you" in minify and "--no-isolate" in minify

    eager = StageOutcome(EAGER, facts(1, "ValueError: bad data"), compiles=1, traced=True)
    disabled = StageOutcome(NO_COMPILE, facts(1, "ValueError: bad data"), traced=True)
    verdict = decide([eager, StageOutcome(AOT_EAGER), StageOutcome(BACKEND), disabled])
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("program_error", "no_compile", "program")

    slow = StageOutcome(EAGER, facts(143, timed_out=True), traced=True)
    assert decide([slow, StageOutcome(AOT_EAGER), StageOutcome(BACKEND)]).outcome == "timeout"
    nothing = [passed(EAGER, 0), passed(AOT_EAGER, 0), passed(BACKEND, 0)]
    assert decide(nothing).outcome == "nothing_compiled"


def test_accuracy_verdict_and_ok():
    stages = [passed(EAGER), passed(AOT_EAGER), passed(BACKEND, inductor=True)]
    stages[2].backend_name = "inductor"
    bad = StageOutcome(ACCURACY_RUN, facts(1), compiles=1, traced=True, accuracy_failure="Accuracy failed for the AOT Autograd graph g")
    verdict = decide(stages, bad)
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("accuracy", "accuracy", "inductor")
    assert not verdict.ok and "inductor" in verdict.headline
    # Minified with torch's level-4 check rerun (untraced: the launcher copies the run's TORCH_TRACE into repro.py).
    assert minify_plan(verdict, stages) == MinifyPlan("aot", BACKEND, level=4)
    good = StageOutcome(ACCURACY_RUN, facts(0), compiles=1, traced=True)
    assert decide(stages, good).ok and "match eager" in decide(stages, good).headline
    assert decide(stages, good).next_steps == []
    # Without --accuracy, "ok" says what it did not check: a program with wrong numbers runs all the same.
    unchecked = decide(stages)
    assert unchecked.ok and unchecked.headline == "Every stage compiles and runs."
    assert unchecked.next_steps == [
        "Compiled results were not compared with eager: if the program's numbers differ from eager, compilescope "
        "diagnose --accuracy runs torch's check (TORCHDYNAMO_REPRO_LEVEL=4), which compares each compiled graph's "
        "outputs with eager and names the graph that differs."]


def test_wrong_results_the_program_found_itself():
    # What torch.testing.assert_close printed when the H200's broken Triton relu ran (tests/data/cuda_torch211).
    output = ("AssertionError: Tensor-likes are not close!\n\nMismatched elements: 2123 / 4096 (51.8%)\n"
              "Greatest absolute difference: 12.391 at index (42, 47) (up to 1e-05 allowed)\n"
              "Greatest relative difference: 1549.687255859375 at index (42, 47) (up to 1.3e-06 allowed)\n")
    assert numeric_mismatch(output) == "Greatest absolute difference: 12.391 at index (42, 47) (up to 1e-05 allowed)"
    assert numeric_mismatch("RuntimeError: CUDA error") is None
    wrong = StageOutcome(BACKEND, facts(1, output), compiles=1, traced=True, used_inductor=True,
                         backend_name="inductor", mismatch=numeric_mismatch(output))
    verdict = decide([passed(EAGER), passed(AOT_EAGER), wrong])
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("accuracy", "backend", "inductor")
    assert verdict.message.startswith("Greatest absolute difference")
    assert "compilescope diagnose --accuracy" in verdict.next_steps[1]
    # --accuracy ran torch's check, and it found no graph that differs: not "run --accuracy" again, nor a minifier.
    passed_check = StageOutcome(ACCURACY_RUN, facts(0), compiles=1, traced=True)
    verdict = decide([passed(EAGER), passed(AOT_EAGER), wrong], passed_check)
    assert (verdict.outcome, verdict.failing_stage) == ("accuracy", "backend")
    assert verdict.next_steps[1].startswith("torch's accuracy check ran and found no compiled graph whose outputs "
                                            "differ from eager beyond its tolerance")
    assert isinstance(minify_plan(verdict, [passed(EAGER), passed(AOT_EAGER), wrong]), str)
    # A run that only crashed is still a crash.
    crashed = StageOutcome(BACKEND, facts(1, "RuntimeError: CUDA error"), compiles=1, traced=True)
    assert decide([passed(EAGER), passed(AOT_EAGER), crashed]).outcome == "runtime_error"


def _crash_text(log) -> str:
    """The faulthandler text `compilescope run` appended to log, read from the raw log."""
    lines = gzip.open(log, "rt").read().split("\n")
    start = next(i for i, line in enumerate(lines) if '"name": "compilescope_crash"' in line) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("\t")), len(lines))
    return "\n".join(line[1:] for line in lines[start:end])


def test_a_crash_only_in_the_backend_stage_is_the_backends_generated_code_real_log():
    """kernel_abort.log.gz: Inductor's C++ kernel aborted while [0/0]'s compiled code ran (README); with "eager" and
    "aot_eager" the program runs. The crash, placed by the stage's log, is the verdict, not a run-time error."""
    text = _crash_text(torch213("kernel_abort.log.gz"))
    with read_trace(torch213("kernel_abort.log.gz")) as trace:
        backend = stage_outcome(BACKEND, RunFacts(ARGV, {}, 134, 1.0, signal="SIGABRT", crash_texts=[text],
                                                  output_tail="terminate called after throwing an instance of 'int'"),
                                trace)
    assert backend.status == "failed" and backend.used_inductor
    assert (backend.crash.error, backend.crash.compile_id) == ("Aborted", "[0/0]")
    verdict = decide([passed(EAGER), passed(AOT_EAGER), backend])
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("crash", "backend", "inductor")
    assert verdict.headline == ("The program crashes in native code (Aborted, while running [0/0]'s compiled code) only "
                                "with your backend (inductor), while backend=\"eager\" and \"aot_eager\" run it: "
                                "the crash is in the code Inductor generated.")
    assert verdict.crash is backend.crash and verdict.message == backend.crash.said
    assert verdict.location.filename.endswith("kernel_abort.py") and verdict.location_kind == "crash"
    # Python was in the output code's call: that line launched the kernel (the main thread's innermost frame).
    where = next(line for line in text.split("\nThread 0x")[2].splitlines() if line.strip().startswith("File"))
    assert f'", line {backend.crash.where.line} in call' in where
    assert any(step.startswith(f"Python was in the call of [0/0]'s output code ({backend.crash.where.short})")
               for step in verdict.next_steps)
    assert 'backend="aot_eager" runs the program (its stage passed)' in " ".join(verdict.next_steps)
    assert "TORCHDYNAMO_REPRO_LEVEL=3" in verdict.next_steps[-1]
    # A crash leaves no time to write a launcher after it: level 3 writes one before the graph runs, and the minifier
    # tries each graph in a process of its own (in its own process, the crash would kill it).
    assert minify_plan(verdict, [passed(EAGER), passed(AOT_EAGER), backend]) == MinifyPlan("aot", BACKEND, 3, True)
    doc = verdict.to_json()
    assert doc["crash"]["compile_id"] == "[0/0]" and doc["outcome"] == "crash"
    page = diagnosis_page(DiagnoseResult(argv=ARGV, cwd="/w", outcomes=[passed(EAGER), passed(AOT_EAGER), backend],
                                         verdict=verdict), [], "/o")
    assert "crashed: Aborted" in page  # its row in the stages table


def test_a_crash_in_the_static_triton_launcher_says_how_to_get_a_python_error_real_log():
    """hf_gpt2_static_cache.log.gz (H100, torch 2.11): the SIGSEGV's innermost frame is Inductor's
    static_triton_launcher.py. Its next steps name the switch that made the same program raise a TypeError instead
    on an H200 (hf_gpt2_static_cache_no_static_launcher.output.txt)."""
    log = cuda211("hf_gpt2_static_cache.log.gz")
    text = _crash_text(log)
    with read_trace(str(log)) as trace:
        backend = stage_outcome(BACKEND, RunFacts(ARGV, {}, -11, 1.0, signal="SIGSEGV", crash_texts=[text]), trace)
    verdict = decide([passed(EAGER), passed(AOT_EAGER), backend])
    assert verdict.outcome == "crash" and verdict.crash.in_static_launcher
    [step] = [s for s in verdict.next_steps if "STATIC_CUDA_LAUNCHER" in s]
    assert step.startswith("It crashed in Inductor's static launcher of Triton kernels") and "=0" in step
    # kernel_abort's C++ kernel crash (no Triton) gets no such step
    with read_trace(torch213("kernel_abort.log.gz")) as trace:
        other = stage_outcome(BACKEND, RunFacts(ARGV, {}, 134, 1.0, signal="SIGABRT",
                                                crash_texts=[_crash_text(torch213("kernel_abort.log.gz"))]), trace)
    assert not any("STATIC_CUDA_LAUNCHER" in s for s in decide([passed(EAGER), passed(AOT_EAGER), other]).next_steps)


def test_a_crash_exit_0_or_no_stack_is_still_a_crash():
    """A process of the run crashed while the program exited 0 (a torchrun worker, say): the stage fails. A process
    killed by SIGSEGV before faulthandler was on (no text) is a crash with no stack, said so."""
    text = "Fatal Python error: Segmentation fault\n\nCurrent thread 0x01 (most recent call first):\n" \
           '  File "/w/train.py", line 7 in step\n'
    survived = stage_outcome(AOT_EAGER, RunFacts(ARGV, {}, 0, 1.0, crash_texts=[text]), None)
    assert survived.status == "failed" and survived.crash.where.short == "train.py:7"
    verdict = decide([passed(EAGER), survived, StageOutcome(BACKEND, skipped_reason="earlier")])
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("crash", "aot_eager", "aot_autograd")

    unrecorded = stage_outcome(EAGER, RunFacts(ARGV, {}, 139, 1.0, signal="SIGSEGV"), None)
    assert unrecorded.crash.error == "Segmentation fault" and not unrecorded.crash.recorded
    disabled = StageOutcome(NO_COMPILE, facts(0), traced=True)
    verdict = decide([unrecorded, StageOutcome(AOT_EAGER), StageOutcome(BACKEND), disabled])
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("crash", "eager", "dynamo")
    assert verdict.next_steps[0].startswith("No stack was recorded: the process was killed by SIGSEGV")
    # Killed by a signal that is no crash (SIGKILL: out of memory, say): an ordinary failure.
    killed = stage_outcome(EAGER, RunFacts(ARGV, {}, 137, 1.0, signal="SIGKILL"), None)
    assert killed.crash is None and killed.status == "failed"


def test_hand_commands_are_exact_shell_lines():
    stages = [passed(EAGER), passed(AOT_EAGER), StageOutcome(BACKEND, facts(1)), ]
    minify = MinifyResult(after="aot", level=2, run=facts(1, env={"TORCHDYNAMO_REPRO_AFTER": "aot", "TORCHDYNAMO_REPRO_LEVEL": "2"}),
                          repro="...")
    lines = [c.line for c in hand_commands(["python3", "my train.py"], stages, decide(stages), minify, "/o u t/minify")]
    assert lines[0] == "TORCH_BISECT_BACKEND=eager python3 'my train.py'"
    assert lines[1] == "TORCH_BISECT_BACKEND=aot_eager python3 'my train.py'"
    assert lines[2] == "python3 'my train.py'"
    assert lines[3] == "TORCHDYNAMO_REPRO_AFTER=aot TORCHDYNAMO_REPRO_LEVEL=2 python3 'my train.py'"
    assert lines[-1] == "python '/o u t/minify/repro.py'"  # (its own run_repro call finds the checkpoints beside it)


def test_page_escapes_what_the_program_printed():
    hostile = "<script>alert(1)</script>"
    backend = StageOutcome(BACKEND, facts(1, f"RuntimeError: {hostile}"), compiles=1, traced=True)
    stages = [passed(EAGER), passed(AOT_EAGER), backend]
    stages[0].report = "eager/index.html"
    minify = MinifyResult(after="aot", level=2, repro=AFTER_AOT_REPRO + f"# {hostile}\n", graph=repro_graph(AFTER_AOT_REPRO))
    result = DiagnoseResult(argv=[*ARGV, hostile], cwd="/w", outcomes=stages, verdict=decide(stages), minify=minify)
    commands = hand_commands(result.argv, result.runs, result.verdict, minify, "/o/minify")
    page = diagnosis_page(result, commands, "/o")
    assert hostile not in page and "&lt;script&gt;" in page
    assert "Content-Security-Policy" in page and 'href="eager/index.html"' in page
    assert 'id="repro-size"><strong>5 nodes</strong>' in page and '<code class="language-python">' in page
    assert "# &lt;script&gt;alert(1)&lt;/script&gt;\n</code>" in page  # the repro's last line, escaped as written
    assert b'"stage": "compiled_runtime"' in diagnosis_json(result, commands)


@pytest.mark.parametrize("argv", [["--minify"], ["--accuracy", "-o", "x", "--", "python", "t.py"]])
def test_cli_parses_like_run(argv):
    from compilescope.cli import _parser
    from compilescope.cli.diagnose import DiagnoseCommand

    command = DiagnoseCommand()
    parser = _parser(command)
    if argv == ["--minify"]:
        with pytest.raises(SystemExit):
            command.parse_args(parser, argv)  # no program
        return
    args = command.parse_args(parser, argv)
    assert args.accuracy and args.out == "x" and args.program == ["python", "t.py"] and args.is_command


def test_a_python_without_torch_is_named_not_called_a_program_error():
    """A wrapper (a shell script) ran a python without torch: the verdict says so, not "not a compile problem"."""
    no_torch = "Traceback (most recent call last):\n  File \"train.py\", line 1\nModuleNotFoundError: No module named 'torch'"
    eager = StageOutcome(EAGER, facts(1, no_torch), traced=False)
    disabled = StageOutcome(NO_COMPILE, facts(1, no_torch), traced=False)
    verdict = decide([eager, StageOutcome(AOT_EAGER), StageOutcome(BACKEND), disabled])
    assert verdict.outcome == "no_torch"
    assert "not the Python compilescope runs in" in verdict.headline
    assert "not a compile problem" not in verdict.headline
    assert any("compilescope diagnose script.py" in step for step in verdict.next_steps)


def test_ok_page_mentions_the_graph_breaks_and_recompiles_it_saw():
    backend = from_log(BACKEND, "graph_breaks.log", 0)
    assert (backend.graph_breaks, backend.recompiles) == (3, 0)
    assert from_log(BACKEND, "dynamic_shapes.log", 0).recompiles == 2
    backend.recompiles = 2
    stages = [passed(EAGER), passed(AOT_EAGER), backend]
    verdict = decide(stages)
    assert verdict.ok
    step, unchecked = verdict.next_steps
    assert step.startswith("The run as written had 3 distinct graph breaks and 2 recompiles: they cost speed")
    assert unchecked.startswith("Compiled results were not compared with eager")
    result = DiagnoseResult(argv=ARGV, cwd="/w", outcomes=stages, verdict=verdict)
    page = diagnosis_page(result, hand_commands(ARGV, stages, verdict, None, None), "/o")
    assert "3 distinct graph breaks and 2 recompiles" in page
    assert "<th class=\"num\">Graph breaks</th><th class=\"num\">Recompiles</th>" in page
    assert json.loads(diagnosis_json(result, []))["stages"][2]["graph_breaks"] == 3

    clean = [passed(EAGER), passed(AOT_EAGER), passed(BACKEND)]
    assert [step[:20] for step in decide(clean).next_steps] == ["Compiled results wer"]  # only what it did not check


def test_a_frame_that_hit_the_recompile_limit_is_not_ok_real_log():
    """train_step_pitfalls.py appends to a global list train_step reads the length of: every call fails that guard,
    and with recompile_limit = 2 its third compile, [0/2], fails (fail_type Unsupported, "Dynamo recompile limit
    exceeded", co_name null: its frame is [0/0]'s, train_step at line 31). Every stage runs the program to the end, so
    none fails, but the frame ran eagerly from then on: the review found diagnose saying "OK: Every stage compiles and
    runs" of a log that `check --no-failures` rejects."""
    stages = [from_log(spec, "train_step_pitfalls.log.gz", 0) for spec in (EAGER, AOT_EAGER, BACKEND)]
    backend = stages[2]
    assert backend.status == "passed" and backend.errors == [] and backend.caught == []
    assert [(e.compile_id, e.exception, e.message) for e in backend.limited] == [
        ("[0/2]", "Unsupported", "Dynamo recompile limit exceeded")]
    verdict = decide(stages)
    assert (verdict.outcome, verdict.ok, verdict.failing_stage, verdict.stage) == ("fell_back", False, None, "recompile_limit")
    assert verdict.headline == ("Every stage runs, but not all compiled: with your backend, train_step "
                                "(train_step_pitfalls.py:31) hit the recompile limit at [0/2] and ran eagerly after that "
                                "(as it did in the other stages too).")
    assert verdict.next_steps[0].startswith("Why it recompiled until then, and how to avoid it: the Recompiles section "
                                            "of the trace report of the run with your backend (backend/index.html), "
                                            "or compilescope summary on its log.")
    assert isinstance(minify_plan(verdict, stages), str)  # no graph to shrink
    # Only the run as written hit it: the headline names it alone.
    verdict = decide([passed(EAGER), passed(AOT_EAGER), backend])
    assert verdict.headline.endswith("hit the recompile limit at [0/2] and ran eagerly after that.")
    # Only Dynamo's run hit it (recompiles.log: h, def at line 28, hits it at [1/4]): that run is named.
    eager = from_log(EAGER, "recompiles.log", 0)
    verdict = decide([eager, passed(AOT_EAGER), passed(BACKEND)])
    assert verdict.headline == ('Every stage runs, but not all compiled: with backend="eager", h (recompiles.py:28) hit '
                                "the recompile limit at [1/4] and ran eagerly after that.")
    # The terminal panel and the JSON say so, not OK.
    console = Console(width=120, color_system=None, record=True, file=io.StringIO())
    result = DiagnoseResult(argv=ARGV, cwd="/w", outcomes=stages, verdict=decide(stages))
    print_verdict(result, console)
    text = console.export_text()
    assert "Diagnosis: OK" not in text and "Diagnosis: RAN, PARTLY EAGER" in text
    doc = json.loads(diagnosis_json(result, []))
    assert doc["verdict"]["outcome"] == "fell_back"
    assert [e["compile_id"] for e in doc["stages"][2]["recompile_limit"]] == ["[0/2]"]


def test_page_and_terminal_show_the_printed_numbers_side_by_side_escaped():
    hostile = "<script>alert(1)</script>"
    stages = [passed(EAGER), passed(AOT_EAGER), passed(BACKEND, inductor=True)]
    for stage, value in zip(stages, ("0", "0", "4.1")):
        stage.printed = [f"{hostile} loss {value}"]
    verdict = decide(stages)
    # (0 to 4.1 is more than rounding, though nothing in these graphs explains it)
    assert verdict.outcome == "differs" and verdict.printed is not None and verdict.printed.stage == "backend"
    result = DiagnoseResult(argv=ARGV, cwd="/w", outcomes=stages, verdict=verdict)
    page = diagnosis_page(result, [], "/o")
    assert hostile not in page and 'id="printed-change" data-stage="backend"' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; loss 4.1</td>" in page
    # nothing is said of a seed where no program file was read; what the file showed, escaped, where one was
    assert "the lines that differ; same program):</p>" in page and "same seed" not in page
    for source, said in (("import torch\ntorch.manual_seed(0)\n", "same seed: torch.manual_seed at line 2"),
                         ("print(1)", "no seed set in &lt;b onclick=x&gt;.py")):
        verdict.printed.alike = program_seed("<b onclick=x>.py", source).alike
        page = diagnosis_page(DiagnoseResult(argv=ARGV, cwd="/w", outcomes=stages, verdict=verdict), [], "/o")
        assert f"; same program, {said}):</p>" in page and "<b onclick" not in page
    console = Console(file=io.StringIO(), width=200)
    print_verdict(result, console)
    assert f"{hostile} loss 0 | {hostile} loss 4.1" in console.file.getvalue()


def test_program_seed_skips_a_fifo_the_command_names_and_reads_a_regular_file(tmp_path):
    """diagnose reads the file the user's command names for its seed: a named pipe there (or a device) would block an
    open() forever, so it is not opened (no seed); a regular file of the same name gives its first seeding call. Run in
    a process of its own with a timeout, so that a read that blocks fails the test instead of hanging the suite."""
    import os
    import subprocess
    import sys

    code = ("import sys; from compilescope.diagnose import _program_seed; from compilescope.runner import Program;"
            "seed = _program_seed(Program(['python', 'train.py'], True), sys.argv[1]);"
            "print(None if seed is None else (seed.file, seed.call, seed.line))")
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "train.py")
    regular = tmp_path / "regular"
    regular.mkdir()
    (regular / "train.py").write_text("import torch\n\ntorch.manual_seed(0)\n")  # its seed: line 3
    said = {folder.name: subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                                        timeout=30, check=True).stdout.strip()
            for folder in (fifo, regular)}
    assert said == {"fifo": "None", "regular": "('train.py', 'torch.manual_seed', 3)"}

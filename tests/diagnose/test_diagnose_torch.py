"""`compilescope diagnose` on real failing programs (torch 2.13 CPU): the stage, the error, the minimal repro.

Slow (each stage is a fresh Python importing torch): one test per scenario, minify only where the issue asks.
"""

from __future__ import annotations

import html
import re
import signal
import subprocess
import sys
import time

import pytest

from ..conftest import TORCH213_LOGS, TORCH213_PROGRAMS
from ..tracelog import raw_records
from .conftest import PROGRAMS, diagnose, statuses

pytestmark = pytest.mark.torch


def test_backend_compile_error_minified_to_one_relu(tmp_path):
    proc, doc, out = diagnose(tmp_path, "backend_error.py", "--minify", own_tmpdir=True)
    assert proc.returncode == 1
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "failed"}
    verdict = doc["verdict"]
    assert (verdict["outcome"], verdict["failing_stage"], verdict["stage"]) == ("compile_error", "backend", "user_backend")
    assert verdict["error"]["exception"] == "BackendCompilerFailed"
    assert verdict["error"]["backend"] == "relu_compile_error_TESTING_ONLY"
    assert "ReluCompileError" in verdict["message"]
    assert verdict["location"]["filename"].endswith("backend_error.py") and verdict["location"]["line"] == 5  # def f
    # torch's after-Dynamo minifier: one relu left, as torch.relu (the Dynamo graph).
    minify = doc["minify"]
    assert minify["after"] == "dynamo" and minify["has_repro"]
    assert minify["graph"] == {"inputs": ["add"], "ops": ["torch.relu"], "nodes": 3}
    assert "torch.relu(add)" in (out / "minify" / "repro.py").read_text()
    assert (out / "minify" / "minifier_launcher.py").exists() and list((out / "minify" / "checkpoints" / "storages").iterdir())
    # One trace report per stage, linked from the Diagnosis page with the commands to do it by hand.
    page = (out / "index.html").read_text()
    for stage in ("eager", "aot_eager", "backend"):
        assert (out / stage / "index.html").exists() and f'href="{stage}/index.html"' in page
    assert "TORCH_BISECT_BACKEND=eager" in page and "TORCHDYNAMO_REPRO_AFTER=dynamo" in page
    assert 'data-stage="user_backend"' in page and "Backend compiler" in page
    assert "Minimal repro: 3 nodes (torch.relu)" in proc.stderr
    # progress as it goes, in words: "[1/3]" read as a torch compile id
    assert 'stage 1 of 3, backend="eager"' in proc.stderr and "minify, step 2 of 2" in proc.stderr


def test_a_compile_error_the_program_catches_is_not_the_failing_stage(tmp_path):
    """compile_error_raises.py catches its fullgraph=True graph break, then dies of its backend's error. Forced to
    "eager" and "aot_eager" it exits 0: those stages pass (the caught error noted), and the backend is the culprit."""
    proc, doc, out = diagnose(tmp_path, TORCH213_LOGS.parent / "programs" / "compile_error_raises.py")
    assert proc.returncode == 1
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "failed"}
    for stage in doc["stages"][:2]:
        assert stage["returncode"] == 0 and stage["errors"] == []
        assert [(e["exception"], e["location"]["line"]) for e in stage["caught"]] == [("Unsupported", 18)]
    backend = doc["stages"][2]
    assert backend["returncode"] == 1 and [e["exception"] for e in backend["errors"]] == ["BackendCompilerFailed"]
    verdict = doc["verdict"]
    assert (verdict["outcome"], verdict["failing_stage"], verdict["stage"]) == ("compile_error", "backend", "user_backend")
    assert verdict["error"]["backend"] == "relu_compile_error_TESTING_ONLY"
    assert verdict["location"]["filename"].endswith("compile_error_raises.py") and verdict["location"]["line"] == 22
    assert not any("should run" in step for step in verdict["next_steps"])  # the stages diagnose has run
    assert "With backend=\"eager\", 1 compile failed without stopping the program" in verdict["next_steps"][-1]
    assert "passed in" in proc.stderr and "1 failed compile the program caught: Unsupported" in proc.stderr
    assert "1 failed compile the program caught (Unsupported)" in (out / "index.html").read_text()


def test_inductor_cpp_compile_error_minified_to_one_relu(tmp_path):
    proc, doc, out = diagnose(tmp_path, "cpp_error.py", "--minify")
    assert proc.returncode == 1
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "failed"}
    verdict = doc["verdict"]
    assert (verdict["outcome"], verdict["failing_stage"], verdict["stage"]) == ("compile_error", "backend", "kernel_compile")
    assert verdict["error"]["inner_exception"] == "CppCompileError"
    assert any("error:" in line for line in verdict["error"]["compiler_errors"])
    # torch's after-AOT minifier: one aten relu left.
    minify = doc["minify"]
    assert minify["after"] == "aot" and minify["graph"]["ops"] == ["torch.ops.aten.relu.default"]
    assert minify["graph"]["nodes"] == 3
    assert [s["used_inductor"] for s in doc["stages"]] == [False, False, True]
    # The repro's code comes out with each line whole (diagnose's output is not a terminal: 80 columns), to be copied:
    # its run_repro(..., save_dir='…') lines are longer than that.
    repro = (out / "minify" / "repro.py").read_text()
    code = repro[repro.index("class Repro"):].splitlines()[:40]
    assert max(len(line) for line in code) > 80
    printed = {line.rstrip() for line in proc.stderr.splitlines()}  # (a trailing space may go)
    assert [line for line in code if line.rstrip() not in printed] == []
    # torch wrote save_dir='<diagnose's work directory>/…/checkpoints', removed when diagnose was done: the report's
    # repro.py loads the report's copy of the inputs, beside it (a path relative to repro.py, not the report's when
    # written: the report may be moved), and the terminal says where it is and how to run it.
    checkpoints = out / "minify" / "checkpoints"
    assert repro.count("save_dir=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'checkpoints')") == 2
    assert str(out) not in repro
    # (and the variables it set to paths there, TORCH_COMPILE_DEBUG_DIR and the run's TORCHINDUCTOR_CACHE_DIR, are
    # left commented out: running it would make them again)
    left = [line for line in repro.splitlines() if "/compilescope_diagnose_" in line]
    assert left and all(line.startswith("# os.environ[") for line in left), left
    assert doc["minify"]["inputs"] == str(checkpoints) and list((checkpoints / "storages").iterdir())
    assert f"Minimal repro (3 nodes) written to {out}/minify/repro.py; run: python {out}/minify/repro.py" in printed
    # It runs on its own (torch's run_repro, the default command "run"), from a report moved elsewhere: the C++
    # compile error again, on the inputs minified with (torch warns "could not load ..., generating random data
    # instead" for a storage it cannot find, "no save_dir specified" for none).
    moved = tmp_path / "moved" / "report"
    moved.parent.mkdir()
    out.rename(moved)
    ran = subprocess.run([sys.executable, str(moved / "minify" / "repro.py")], cwd=tmp_path / "cwd", capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode != 0 and "CppCompileError" in ran.stderr, ran.stderr[-3000:]
    assert "could not load" not in ran.stderr and "no save_dir specified" not in ran.stderr


def test_a_crash_in_inductors_kernel_minified_to_one_relu(tmp_path):
    """kernel_abort.py (the torch 2.13 fixture's program): Inductor's C++ relu throws inside its OpenMP region and the
    process aborts. torch's minifier still shrinks it: the launcher is written before the graph runs (level 3) and
    each try runs in a process of its own, where the abort is a failure, not the minifier's death."""
    program = TORCH213_PROGRAMS / "kernel_abort.py"
    proc, doc, out = diagnose(tmp_path, str(program), "--minify")
    assert proc.returncode == 1
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "failed"}
    assert (doc["verdict"]["outcome"], doc["verdict"]["stage"]) == ("crash", "inductor")
    minify = doc["minify"]
    assert (minify["after"], minify["level"], minify["isolated"]) == ("aot", 3, True)
    # f is relu(x + 1) and the injected bug is in relu's kernel: the add goes, relu stays.
    assert minify["graph"]["ops"] == ["torch.ops.aten.relu.default"], minify
    assert "inject_relu_bug_TESTING_ONLY = 'runtime_error'" in (out / "minify" / "repro.py").read_text()
    assert "minify, step 2 of 2: running minifier_launcher.py (each try in a process of its own: minify)" in proc.stderr
    page = (out / "index.html").read_text()
    assert "<code>TORCHDYNAMO_REPRO_LEVEL=3</code>; each try in a process of its own" in page
    assert "minifier_launcher.py minify</" in page  # by hand too: no --no-isolate


def test_a_kernel_that_raises_when_it_runs_is_minified_each_try_in_its_own_process(tmp_path):
    """runtime_error.py: Inductor's C++ relu raises RuntimeError when it runs. Inductor's generated call() empties its
    argument list before the kernel raises, so torch's minifier run in-process (--no-isolate) has no inputs left for
    its next try (torch 2.13: "AssertionError: len(ph_nodes)=1 != len(self.inps)=0", and no repro.py); each try in a
    process of its own shrinks it."""
    proc, doc, out = diagnose(tmp_path, "runtime_error.py", "--minify")
    assert proc.returncode == 1
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "failed"}
    verdict = doc["verdict"]
    assert (verdict["outcome"], verdict["stage"], verdict["message"]) == (
        "runtime_error", "compiled_runtime", "RuntimeError: unhandled error")
    # Where: f's frame (its def: the frame Dynamo compiled), and the line of [0/0]'s output code that called the
    # kernel (add and relu fused into one C++ kernel).
    assert (verdict["location"]["line"], verdict["location"]["function"]) == (8, "f")
    assert verdict["location"]["filename"].endswith("runtime_error.py")
    raised_in = doc["stages"][2]["raised_in"]
    assert raised_in["compile_id"] == "[0/0]" and raised_in["code"].startswith("cpp_fused_add_relu_0(")
    assert verdict["next_steps"][0].startswith("It raised in the call of [0/0]'s output code, at line ")
    minify = doc["minify"]
    assert (minify["after"], minify["level"], minify["isolated"]) == ("aot", 2, True)
    # f is relu(x + 1), the bug in relu's kernel: the add goes, relu stays.
    assert minify["graph"]["ops"] == ["torch.ops.aten.relu.default"], minify
    assert "minify, step 2 of 2: running minifier_launcher.py (each try in a process of its own: minify)" in proc.stderr
    assert not any(step.startswith("Minify") for step in verdict["next_steps"])  # it has just minified


def test_wrong_results_the_program_checks_itself_are_wrong_results_not_a_crash(tmp_path):
    """The same relu bug, in a program that compares its result with eager: the backend stage fails with
    assert_close's mismatch, and --accuracy runs torch's check anyway to name the graph."""
    proc, doc, out = diagnose(tmp_path, "wrong_result.py", "--accuracy")
    assert proc.returncode == 1
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "failed", "accuracy": "failed"}
    backend = doc["stages"][2]
    assert backend["mismatch"].startswith("Greatest absolute difference: ") and not backend["errors"]
    verdict = doc["verdict"]
    assert (verdict["outcome"], verdict["failing_stage"], verdict["stage"]) == ("accuracy", "accuracy", "inductor")
    assert verdict["headline"] == ("Wrong results: the program's own check of them fails with inductor alone (backend="
                                   "\"eager\" and \"aot_eager\" pass it): its compiled code computes results that "
                                   "differ from eager.")
    assert verdict["message"].startswith("Accuracy failed for the AOT Autograd graph")
    assert verdict["location"]["filename"].endswith("wrong_result.py")
    page = html.unescape((out / "index.html").read_text())
    assert f"the program's check: <span class=\"mono\">{backend['mismatch']}</span>" in page


def test_inductor_accuracy_bug_found_by_the_accuracy_check(tmp_path):
    proc, doc, out = diagnose(tmp_path, "accuracy.py", "--accuracy", "--minify")
    assert proc.returncode == 1
    # (its unseeded torch.randn prints other numbers in each stage: eager's control run tells they change run to run)
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "passed", "eager_control": "passed",
                             "accuracy": "failed"}
    # The minifier's launcher comes from an untraced rerun: the traced accuracy run's would have the repro set
    # TORCH_TRACE to diagnose's temporary directory, gone when it is run.
    minify = doc["minify"]
    assert (minify["after"], minify["level"]) == ("aot", 4)
    assert minify["graph"]["ops"] == ["torch.ops.aten.relu.default"], minify
    repro = (out / "minify" / "repro.py").read_text()
    assert "inject_relu_bug_TESTING_ONLY = 'accuracy'" in repro and "TORCH_TRACE" not in repro
    assert "minify, step 1 of 2: rerunning with your backend and TORCHDYNAMO_REPRO_AFTER=\"aot\" TORCHDYNAMO_REPRO_LEVEL=4" in proc.stderr
    assert not any(step.startswith("Minify") for step in doc["verdict"]["next_steps"])  # it has just minified
    verdict = doc["verdict"]
    assert (verdict["outcome"], verdict["failing_stage"], verdict["stage"]) == ("accuracy", "accuracy", "inductor")
    assert "Accuracy failed" in verdict["message"]
    assert verdict["location"]["filename"].endswith("accuracy.py")
    accuracy = doc["stages"][-1]
    assert accuracy["env"] == {"TORCHDYNAMO_REPRO_AFTER": "aot", "TORCHDYNAMO_REPRO_LEVEL": "4"}
    assert (out / "accuracy" / "index.html").exists()
    assert "not checked" in doc["stages"][1]["accuracy_note"]  # aot_eager: torch 2.13 cannot check it
    # The graph torch's check failed, in the user's terms: its run's output names it (model__<AOT ID>_<n>) with its
    # RMSE; its trace (the report's raw.log) holds the output code whose first line is that AOT ID, with the one C++
    # kernel it defines and calls; f's `return torch.relu(x + 1)` made it.
    printed = (out / "outputs" / "accuracy.txt").read_text()
    name, aot_id = re.search(r"Accuracy failed for the AOT Autograd graph (\w+?__(\d+_inference)_\d+)", printed).groups()
    res, ref = re.search(r"RMSE \(res-fp64\): ([\d.]+), \(ref-fp64\): ([\d.]+)", printed).groups()
    (code,) = [payload.splitlines() for env, payload in raw_records(out / "accuracy" / "raw.log")
               if "inductor_output_code" in env and payload.startswith(f"# AOT ID: ['{aot_id}']")]
    ((start, kernel),) = [(n, m[1]) for n, line in enumerate(code, 1)
                          if (m := re.match(r"(cpp_\w+) = async_compile\.cpp_pybinding\(", line))]
    end = next(n for n in range(start + 1, len(code) + 1) if code[n - 1] == "''')")
    (call,) = [n for n, line in enumerate(code, 1) if line.strip().startswith(f"{kernel}(")]
    relu = next(n for n, line in enumerate((PROGRAMS / "accuracy.py").read_text().splitlines(), 1) if "torch.relu" in line)
    wrong = accuracy["wrong_graph"]
    assert (wrong["name"], wrong["rmse"]["res"], wrong["rmse"]["ref"]) == (name, res, ref)
    assert [(k["kernel"], k["line"], k["source"]) for k in wrong["kernels"]] == [(kernel, call, [start, end])]
    assert [(u["line"], u["code"]) for u in wrong["kernels"][0]["user_lines"]] == [(relu, "return torch.relu(x + 1)")]
    assert (verdict["location"]["line"], verdict["location_kind"]) == (relu, "the wrong graph's kernels")
    # (the hook is said on a line of its own, not as a step: the terminal's first three steps keep the workaround)
    assert verdict["testing_hooks"].startswith("This compile's Inductor config sets cpp.inject_relu_bug_TESTING_ONLY")
    panel = " ".join(" ".join(line.strip("|│ ") for line in proc.stderr.splitlines()).split())  # (wrapped at 80)
    assert "Hook: This compile's Inductor config sets cpp.inject_relu_bug_TESTING_ONLY" in panel
    assert verdict["next_steps"][0].startswith(f"The wrong values come from {name}, the graph [0/0] inference made from "
                                               f"accuracy.py:{relu} `return torch.relu(x + 1)`: Inductor compiled it "
                                               f"into {kernel} (its source at lines {start}-{end} of the output code, "
                                               f"called at line {call}).")
    assert f"is at RMSE {res} from a float64 run, eager's at {ref}" in verdict["next_steps"][1]
    assert verdict["next_steps"][2] == 'backend="aot_eager" gives eager results here: use it as a workaround.'
    assert "-> backend=\"aot_eager\" gives eager results here: use it as a workaround." in panel


def test_a_program_that_segfaults_uncompiled_too_is_the_programs_crash(tmp_path):
    """crash_after_compile.py reads address 0 after its compiled function ran: the stage with Dynamo alone crashes,
    and so does the program with torch.compile disabled. Before, the verdict's error was the last line it printed."""
    proc, doc, out = diagnose(tmp_path, "crash_after_compile.py")
    assert proc.returncode == 1
    assert statuses(doc) == {"eager": "failed", "aot_eager": "skipped", "backend": "skipped", "no_compile": "failed"}
    eager, disabled = doc["stages"][0], doc["stages"][3]
    assert eager["returncode"] == disabled["returncode"] == 128 + signal.SIGSEGV
    line = next(i for i, t in enumerate((PROGRAMS / "crash_after_compile.py").read_text().splitlines(), 1)
                if t == "ctypes.string_at(0)")
    for stage in (eager, disabled):
        crash = stage["crash"]
        assert (crash["error"], crash["where"]["function"], crash["compile_id"]) == ("Segmentation fault", "string_at",
                                                                                      None)
        assert crash["user_frame"]["filename"].endswith("crash_after_compile.py") and crash["user_frame"]["line"] == line
    verdict = doc["verdict"]
    assert (verdict["outcome"], verdict["failing_stage"], verdict["stage"]) == ("crash", "no_compile", "program")
    assert verdict["headline"] == ("The program crashes in native code (Segmentation fault) even with torch.compile "
                                   "disabled: not a compile problem.")
    assert verdict["location"]["line"] == line and verdict["crash"]["error"] == "Segmentation fault"
    # The stack is in the report of Dynamo's run: the run with torch.compile disabled wrote no log.
    assert disabled["report"] is None and 'id="insights-crash"' in (out / "eager" / "index.html").read_text()
    assert verdict["next_steps"][1].startswith('The trace report of the run with backend="eager" has the stack')
    assert "Diagnosis: CRASHED" in proc.stderr and "CRASHED in" in proc.stderr


def test_a_crash_while_dynamo_traces_is_dynamos(tmp_path):
    """crash_while_compiling.py: a custom op's fake implementation segfaults, and torch calls it only to trace the op.
    Dynamo alone crashes, while compiling; with torch.compile disabled the program runs."""
    proc, doc, out = diagnose(tmp_path, "crash_while_compiling.py")
    assert proc.returncode == 1
    assert statuses(doc) == {"eager": "failed", "aot_eager": "skipped", "backend": "skipped", "no_compile": "passed"}
    crash = doc["stages"][0]["crash"]
    assert crash["compiling"] and crash["compile_id"] is None and crash["during"] == "while compiling"
    assert any(f["filename"].endswith("torch/_dynamo/convert_frame.py") for f in crash["frames"])
    fake = next(i for i, t in enumerate((PROGRAMS / "crash_while_compiling.py").read_text().splitlines(), 1)
                if "ctypes.string_at(0)" in t)
    assert (crash["user_frame"]["line"], crash["user_frame"]["function"]) == (fake, "_")
    verdict = doc["verdict"]
    assert (verdict["outcome"], verdict["failing_stage"], verdict["stage"]) == ("crash", "eager", "dynamo")
    assert verdict["headline"].startswith("The program crashes in native code (Segmentation fault, while compiling) "
                                          "with Dynamo alone (backend=\"eager\")")
    page = (out / "index.html").read_text()
    assert 'href="eager/index.html#insights-crash"' in page


def test_program_that_compiles_fine(tmp_path):
    """fine.py prints relu(torch.randn(4) + 1), unseeded: each run prints other numbers, whatever the stage. The stages
    differ, so diagnose runs eager's stage again as a control; its one printed line differs there too and is not
    compared (diagnose said "RUNS, DIFFERS FROM EAGER ... AOTAutograd changes them", exit 1)."""
    proc, doc, out = diagnose(tmp_path, "fine.py", "--accuracy")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "passed", "eager_control": "passed",
                             "accuracy": "passed"}
    assert doc["stages"][3]["env"] == {"TORCH_BISECT_BACKEND": "eager"}
    assert (out / "eager_control" / "index.html").exists() and (out / "outputs" / "eager_control.txt").exists()
    assert doc["verdict"]["outcome"] == "ok" and doc["verdict"]["stage"] is None
    assert doc["verdict"]["run_to_run"] == 1 and doc["verdict"]["printed"] is None
    assert "1 printed line changes from run to run under eager too: not compared" in proc.stderr
    assert "match eager" in doc["verdict"]["headline"]
    assert doc["minify"] is None
    assert "Diagnosis: OK" in proc.stderr


def test_a_frame_that_hits_the_recompile_limit_is_not_ok(tmp_path):
    """train_step_pitfalls.py: train_step's third compile hits recompile_limit = 2 (its README row) and runs eagerly
    after that; every stage runs the program to its end. diagnose said "OK: Every stage compiles and runs"."""
    proc, doc, _ = diagnose(tmp_path, TORCH213_PROGRAMS / "train_step_pitfalls.py")
    assert proc.returncode == 1, proc.stderr[-3000:]  # as `check --no-failures` on its log
    assert statuses(doc) == {"eager": "passed", "aot_eager": "passed", "backend": "passed"}
    assert (doc["verdict"]["outcome"], doc["verdict"]["error"]["compile_id"]) == ("fell_back", "[0/2]")
    assert "Diagnosis: OK" not in proc.stderr and "hit the recompile limit at [0/2]" in proc.stderr
    assert "stage 3 of 3, your backend" in proc.stderr and "[1/3]" not in proc.stderr


def test_a_program_that_compiles_nothing_is_said_so_after_one_stage(tmp_path):
    proc, doc, _ = diagnose(tmp_path, "compiles_nothing.py")
    assert proc.returncode == 1, proc.stderr[-3000:]  # nothing was diagnosed (README)
    assert statuses(doc) == {"eager": "passed", "aot_eager": "skipped", "backend": "skipped"}
    assert doc["verdict"]["outcome"] == "nothing_compiled"
    assert "Diagnosis: NOTHING COMPILED" in proc.stderr


def test_sigterm_stops_the_program_and_the_diagnosis(tmp_path):
    # A scheduler stopping the job: the running stage's program is stopped, and no later stage starts.
    started, finished = tmp_path / "started", tmp_path / "finished"
    proc = subprocess.Popen([sys.executable, "-m", "compilescope", "diagnose", "--no-browser", "-o", str(tmp_path / "out"),
                             "--", sys.executable, str(PROGRAMS / "waits.py"), str(started), str(finished)],
                            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    while not started.exists() and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "terminated (SIGTERM)" in err and "stage 1 of 3" in err and "stage 2 of 3" not in err  # the first stage only
    assert not finished.exists()

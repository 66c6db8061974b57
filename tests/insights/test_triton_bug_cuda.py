"""`compilescope diagnose` on an H100 (torch 2.11) on tests/data/cuda_torch211 programs/triton_bug.py: torch's
triton.inject_relu_bug_TESTING_ONLY breaks the Triton kernel Inductor generates for relu ("compile_error": a kernel that
does not parse; "accuracy": one that computes x + 1). The fixtures are what diagnose wrote (logs/triton_bug_diagnose,
README). Expected values are read from the raw log, not from our output."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from rich.console import Console

from compilescope.analyses.diagnosis import ACCURACY_RUN, AOT_EAGER, BACKEND, EAGER, MinifyResult, RunFacts
from compilescope.analyses.diagnosis.reproduce import repro_graph
from compilescope.analyses.diagnosis.stage_outcome import stage_outcome
from compilescope.analyses.diagnosis.verdict import decide
from compilescope.analyses.compile_errors import compile_errors
from compilescope.diagnose import DiagnoseResult
from compilescope.ingest.reader import read_trace
from compilescope.render.diagnosis import diagnosis_json, diagnosis_page, print_verdict

from ..conftest import cuda211
from ..tracelog import raw_records

FIXTURES = Path(__file__).parents[1] / "data" / "cuda_torch211" / "logs" / "triton_bug_diagnose"
COMPILE_ERROR = "triton_bug_diagnose/compile_error/backend.log.gz"
ARGV = ["python3", "triton_bug.py"]


def _failed_kernel_line() -> tuple[str, int, int, str]:
    """From the raw log alone: the kernel whose source failed to import, its line torch named, that line's number in
    the output code and its text. The SyntaxError names the kernel file's line; the dynamo_error traceback names the
    output code's line that loads the kernel (async_compile.triton(name, '''<source>''')), whose source starts after
    the ''' of that line."""
    records = raw_records(cuda211(COMPILE_ERROR))
    (reason,) = [env["compilation_metrics"]["fail_reason"] for env, _ in records if "compilation_metrics" in env]
    kernel_line = int(re.search(r"SyntaxError: invalid syntax \(\w+\.py, line (\d+)\)", reason)[1])
    ((code_file, code),) = [(env["inductor_output_code"]["filename"], payload) for env, payload in records
                            if "inductor_output_code" in env]
    (traceback,) = [payload for env, payload in records if env.get("artifact", {}).get("name") == "dynamo_error"]
    (call_line,) = [int(n) for n in re.findall(rf'File "{re.escape(code_file)}", line (\d+)', traceback)]
    call = code.splitlines()[call_line - 1]
    kernel = re.match(r"(\w+) = async_compile\.triton\('\1', '''$", call)[1]
    source = code.split(call + "\n", 1)[1].split("'''", 1)[0]
    text = ("\n" + source).splitlines()[kernel_line - 1]  # (line 1 is the rest of the call's line: empty)
    return kernel, kernel_line, call_line + kernel_line - 1, text


def test_the_triton_kernel_that_does_not_parse_is_named_with_its_line_in_the_output_code():
    """The raw log: Inductor failed to import a kernel file (SyntaxError at its line 39); that is line 39 of
    triton_per_fused_add_mul_relu_sum_0's source in the output code, `tmp6 = compile error!` (the injected relu), at
    the output code's line 91. The error says so in those terms, not "Failed to import /tmp/torchinductor_root/…",
    and names the testing hook the compile's Inductor config sets."""
    kernel, kernel_line, code_line, text = _failed_kernel_line()
    assert (kernel, kernel_line, code_line, text.strip()) == ("triton_per_fused_add_mul_relu_sum_0", 39, 91,
                                                              "tmp6 = compile error!")
    with read_trace(cuda211(COMPILE_ERROR)) as trace:
        (error,) = compile_errors(trace).errors
    assert (error.stage, error.stage_label, error.exception, error.inner_exception) == (
        "kernel_compile", "Triton compile", "InductorError", "SyntaxError")
    assert error.message == (f"Inductor generated a Triton kernel ({kernel}) that does not compile: invalid syntax at "
                             f"line {code_line} of the output code")
    (diag,) = error.diagnostics
    assert (diag.line, diag.code_line, diag.kernel, diag.source, diag.message) == (
        kernel_line, code_line, kernel, text, "SyntaxError: invalid syntax")
    assert error.compiler_errors == [f"SyntaxError: invalid syntax at line {code_line} of the output code (Triton "
                                     f"kernel {kernel}, its line {kernel_line})\n{code_line} | {text.strip()}"]
    assert error.next_steps[0].startswith("This compile's Inductor config sets "
                                          "triton.inject_relu_bug_TESTING_ONLY = 'compile_error'")
    assert "RuntimeError: Failed to import" in error.detail  # torch's words stay in the detail


def _compile_error_result() -> DiagnoseResult:
    def facts(returncode: int) -> RunFacts:
        return RunFacts(argv=ARGV, env={}, returncode=returncode, seconds=1.0)

    def output(key: str) -> str:
        return (FIXTURES / "compile_error" / f"{key}.txt").read_text()

    with read_trace(cuda211(COMPILE_ERROR)) as trace:
        backend = stage_outcome(BACKEND, facts(1), trace, output(BACKEND.key))
    stages = [*(stage_outcome(spec, facts(0), None, output(spec.key)) for spec in (EAGER, AOT_EAGER)), backend]
    repro = (FIXTURES / "compile_error" / "repro.py").read_text()
    minify = MinifyResult(after="aot", level=2, repro=repro, graph=repro_graph(repro))
    return DiagnoseResult(argv=ARGV, cwd="/w", outcomes=stages, verdict=decide(stages), minify=minify)


def test_diagnose_says_the_cause_on_the_terminal_the_page_and_in_the_json():
    """What diagnose printed on the H100 (run.txt) said `InductorError (RuntimeError): RuntimeError: Failed to import
    /tmp/torchinductor_root/c2/….py`; the cause, read from the same log, is the kernel's SyntaxError at the output
    code's line 91 (above): the verdict names the Triton compile, the line and its text, once each."""
    kernel, _, code_line, text = _failed_kernel_line()
    printed = (FIXTURES / "compile_error" / "run.txt").read_text()
    assert "Error:  InductorError (RuntimeError): RuntimeError: Failed to import" in printed
    assert printed.count("      passed in") == 2
    result = _compile_error_result()
    verdict = result.verdict
    assert (verdict.outcome, verdict.failing_stage, verdict.stage, verdict.stage_label) == (
        "compile_error", "backend", "kernel_compile", "Triton compile")
    assert verdict.headline.endswith("the failure is in the Triton compile of Inductor's kernels.")

    console = Console(file=io.StringIO(), width=80)
    print_verdict(result, console)
    shown = [line.strip("|│ ") for line in console.file.getvalue().splitlines()]
    assert "Stage:  Triton compile" in shown
    assert "Error:  InductorError (SyntaxError): Inductor generated a Triton kernel" in shown
    assert "RuntimeError" not in console.file.getvalue() and "torchinductor_root" not in console.file.getvalue()
    assert f"{code_line} | {text.strip()}" in shown
    # The compile's config sets the hook (the raw log's inductor_config): said on a line of its own, the workaround
    # (aot_eager passed: eager.txt, aot_eager.txt) among the steps the terminal shows
    (config,) = [env["compilation_metrics"]["inductor_config"] for env, _ in raw_records(cuda211(COMPILE_ERROR))
                 if "compilation_metrics" in env]
    assert json.loads(config)["triton.inject_relu_bug_TESTING_ONLY"] == "compile_error"
    joined = " ".join(" ".join(shown).split())
    assert ("Hook: This compile's Inductor config sets triton.inject_relu_bug_TESTING_ONLY = 'compile_error'"
            in joined)
    assert 'backend="aot_eager" works around it.' in joined
    assert not any(step.startswith("This compile's") for step in verdict.next_steps)

    page = diagnosis_page(result, [], "/o")
    assert 'id="verdict-stage">Triton compile<' in page
    assert f"{code_line} | {text.strip()}" in page and f"Triton kernel {kernel}, its line 39" in page
    assert "InductorError (SyntaxError)</span>" in page
    doc = json.loads(diagnosis_json(result, []))
    (diag,) = doc["verdict"]["error"]["diagnostics"]
    assert (diag["kernel"], diag["code_line"], diag["source"]) == (kernel, code_line, text)


def test_the_minimal_repro_is_printed_unwrapped_at_80_columns():
    """run.txt (80 columns, not a terminal) broke repro.py's `save_dir='…'` line in the middle of its string; each line
    of code must come out whole, to be copied."""
    printed = (FIXTURES / "compile_error" / "run.txt").read_text()
    repro = (FIXTURES / "compile_error" / "repro.py").read_text()
    long = [line for line in repro.splitlines() if "save_dir=" in line]
    assert len(long) == 2 and all(len(line) > 80 for line in long)
    assert not any(line in printed.splitlines() for line in long)  # as it was
    console = Console(file=io.StringIO(), width=80)
    print_verdict(_compile_error_result(), console)
    out = console.file.getvalue().splitlines()
    assert all(line in out for line in long)
    code = repro[repro.index("class Repro"):].rstrip().splitlines()
    assert out[-len(code):] == code  # the code from class Repro on, as the file has it


def test_the_accuracy_runs_verdict_is_inductors_wrong_results():
    """TRITON_BUG=accuracy: the backend's kernel computes `tmp6 = tmp5 + 1` where relu was (its output code in the raw
    log); the program's assert_close fails (greatest absolute difference 53.15…, backend.txt) while eager and
    aot_eager print ok; torch's accuracy checker says the AOT graph model__0_inference_0 fails (accuracy.txt)."""
    log = "triton_bug_diagnose/accuracy/backend.log.gz"
    (code,) = [payload for env, payload in raw_records(cuda211(log)) if "inductor_output_code" in env]
    assert "tmp6 = tmp5 + 1" in code and "maximum" not in code
    outputs = FIXTURES / "accuracy"

    def stage(spec, returncode: int, trace=None):
        facts = RunFacts(argv=ARGV, env={}, returncode=returncode, seconds=1.0)
        return stage_outcome(spec, facts, trace, (outputs / f"{spec.key}.txt").read_text())

    with read_trace(cuda211(log)) as trace:
        backend = stage(BACKEND, 1, trace)
    assert backend.errors == [] and backend.mismatch.startswith("Greatest absolute difference: 53.15398025512695")
    accuracy = stage(ACCURACY_RUN, 1)
    assert accuracy.accuracy_failure == "Accuracy failed for the AOT Autograd graph model__0_inference_0"
    verdict = decide([stage(EAGER, 0), stage(AOT_EAGER, 0), backend], accuracy)
    assert (verdict.outcome, verdict.failing_stage, verdict.stage) == ("accuracy", "accuracy", "inductor")
    assert verdict.message == accuracy.accuracy_failure


def test_the_accuracy_notes_do_not_name_a_torch_the_run_did_not_use():
    """The H100 run used torch 2.11 (README); its page said aot_eager was "not checked: torch 2.13's after-Dynamo
    accuracy check … cannot call …", naming a torch it did not run."""
    from compilescope.diagnose import AOT_ACCURACY_NOTE, EAGER_ACCURACY_NOTE

    printed = (FIXTURES / "accuracy" / "accuracy.txt").read_text()
    assert "/torch/_dynamo/repro/after_aot.py" in printed  # (the run this note sits beside)
    for note in (AOT_ACCURACY_NOTE, EAGER_ACCURACY_NOTE):
        assert not re.search(r"torch \d+\.\d+", note), note



ACCURACY_LOG = "triton_bug_diagnose/accuracy/backend.log.gz"


def _accuracy_result() -> DiagnoseResult:
    """The accuracy run's stages as diagnose made them on the H100: each stage's printed output (the fixtures), the
    backend's log, its exit status and its time (run.txt), the accuracy notes diagnose gives each stage."""
    from compilescope.diagnose import AOT_ACCURACY_NOTE, EAGER_ACCURACY_NOTE

    printed = (FIXTURES / "accuracy" / "run.txt").read_text()
    seconds = [float(s) for s in re.findall(r"(?:passed|FAILED) in ([\d.]+)s", printed)]

    def stage(spec, returncode: int, took: float, env: dict[str, str], trace=None):
        facts = RunFacts(argv=ARGV, env=env, returncode=returncode, seconds=took)
        return stage_outcome(spec, facts, trace, (FIXTURES / "accuracy" / f"{spec.key}.txt").read_text())

    with read_trace(cuda211(ACCURACY_LOG)) as trace:
        backend = stage(BACKEND, 1, seconds[2], {}, trace)
    stages = [stage(EAGER, 0, seconds[0], dict(EAGER.env)), stage(AOT_EAGER, 0, seconds[1], dict(AOT_EAGER.env)), backend]
    accuracy = stage(ACCURACY_RUN, 1, seconds[3], {"TORCHDYNAMO_REPRO_AFTER": "aot", "TORCHDYNAMO_REPRO_LEVEL": "4"})
    stages[0].accuracy_note, stages[1].accuracy_note = EAGER_ACCURACY_NOTE, AOT_ACCURACY_NOTE
    accuracy.accuracy_note = f"differs from eager ({accuracy.accuracy_failure})"
    return DiagnoseResult(argv=ARGV, cwd="/w", outcomes=stages, verdict=decide(stages, accuracy), accuracy=accuracy)


def test_the_stage_times_do_not_wrap_on_the_diagnosis_page(tmp_path):
    """The H100 accuracy run's page (its Chromium screenshot, 1200 px) broke its Time cells: "11.5" on one line, "s"
    on the next, the Accuracy column's notes taking the width. Each number stays on one line with its unit, at that
    width, a laptop's and a phone's (headless Chromium)."""
    from ..browser import LAPTOP, PHONE, browser_page

    page_file = tmp_path / "index.html"
    page_file.write_text(diagnosis_page(_accuracy_result(), [], str(tmp_path)))
    with browser_page() as page:
        for width in (1200, LAPTOP, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(page_file.as_uri())
            cells = page.evaluate("""() => [...document.querySelectorAll('#stages tbody tr')].map(row => {
                const cell = row.children[3], range = document.createRange();
                range.selectNodeContents(cell);
                return [cell.textContent.trim(), new Set([...range.getClientRects()].map(r => Math.round(r.top))).size];
            })""")
            assert len(cells) == 4 and all(re.fullmatch(r"\d+\.\d s", text) for text, _ in cells), cells
            assert [lines for _, lines in cells] == [1] * 4, (width, cells)


def test_the_minimal_repro_is_coloured_by_prism_as_every_page_of_code_is(tmp_path):
    """The Diagnosis page coloured its repro with Pygments on the server, every other page of code with Prism in the
    browser: the H100 run's repro.py is coloured by the same Prism, under the same CSP, offline. Its first statement
    is `import os`, so the first keyword Prism marks is `import`, and the string torch wrote for TRITON_BUG,
    'compile_error', is a string token."""
    from ..browser import browser_page

    repro = (FIXTURES / "compile_error" / "repro.py").read_text()
    assert repro.lstrip().startswith("import os\n") and "os.environ['TRITON_BUG'] = 'compile_error'" in repro
    page_file = tmp_path / "index.html"
    page_file.write_text(diagnosis_page(_compile_error_result(), [], str(tmp_path)))
    with browser_page() as page:
        page.goto(page_file.as_uri())
        shown = page.evaluate("""() => { const code = document.querySelector('.repro code');
            return [code.textContent, [...code.querySelectorAll('.token.keyword')].map(t => t.textContent),
                    [...code.querySelectorAll('.token.string')].map(t => t.textContent)]; }""")
        assert page.console_errors == [] and page.external_requests == []
    text, keywords, strings = shown
    assert text == repro  # (every character of it, as written)
    assert keywords[0] == "import" and "'compile_error'" in strings


def test_the_minimal_repro_loads_its_inputs_from_the_report_not_from_a_removed_directory(tmp_path):
    """The H100 run printed repro.py with `save_dir='/tmp/compilescope_diagnose__17o527u/…/minifier/checkpoints'`,
    diagnose's work directory, removed when it was done (the minifier's repro.py, as torch wrote it), and did not say
    where repro.py was. The report's repro.py, its page and the terminal name the report's copy of the inputs (or
    None, torch's random inputs, where none was kept), repro.py by a path relative to itself (a report moved after
    it was written must still find them), and the terminal says where repro.py is and how to run it."""
    from compilescope.cli.diagnose import DiagnoseCommand
    from compilescope.output import OutputDir

    torch_wrote = (FIXTURES / "compile_error" / "repro.py").read_text()
    (checkpoints,) = set(re.findall(r"save_dir='([^']*)'", torch_wrote))
    # diagnose's work directory (TORCH_COMPILE_DEBUG_DIR is its debug/<run>, the README's record.sh says)
    work = re.search(r"os\.environ\['TORCH_COMPILE_DEBUG_DIR'\] = '(/tmp/compilescope_diagnose_\w+)/debug/", torch_wrote)[1]
    assert checkpoints.startswith(work + "/") and checkpoints.endswith("/minifier/checkpoints")
    settings = [line for line in torch_wrote.splitlines() if line.startswith("os.environ[") and work in line]
    assert len(settings) == 3  # TORCH_COMPILE_DEBUG_DIR, TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR
    out = tmp_path / "report"
    for kept in (False, True):
        result = _compile_error_result()
        result.minify_files = {"repro.py": str(FIXTURES / "compile_error" / "repro.py")}
        if kept:  # (the bytes do not matter here: the copy is what repro.py is pointed at)
            result.minify_files["checkpoints/storages/a9e03c872b75800028450c47dfc7fdd617bc0787"] = str(
                FIXTURES / "compile_error" / "repro.py")
        DiagnoseCommand()._write(result, OutputDir(str(out), overwrite=True), work)
        written = (out / "minify" / "repro.py").read_text()
        inputs = str(out / "minify" / "checkpoints") if kept else None
        # (the inputs beside repro.py, wherever the report is moved: not the report's path when written)
        said = "os.path.join(os.path.dirname(os.path.abspath(__file__)), 'checkpoints')" if kept else "None"
        assert checkpoints not in written and written.count(f"save_dir={said}") == 2 and str(out) not in written
        assert "\nimport os\n" in torch_wrote  # (torch's own import: the path needs it, nothing is added)
        expected = torch_wrote.replace(f"save_dir={checkpoints!r}", f"save_dir={said}")
        for line in settings:  # (running it would make them again)
            expected = expected.replace(line, f"# {line}  # (diagnose's work directory, removed)")
        assert written == expected
        page = (out / "index.html").read_text()
        assert checkpoints not in page and checkpoints not in (out / "diagnosis.json").read_text()
        assert json.loads((out / "diagnosis.json").read_text())["minify"]["inputs"] == inputs
        console = Console(file=io.StringIO(), width=80)
        print_verdict(result, console)
        printed = console.file.getvalue()
        repro = out / "minify" / "repro.py"
        said = (f"Minimal repro (3 nodes) written to {repro}" + ("" if kept else " (its inputs were not kept: torch "
                "makes random ones)") + f"; run: python {repro}")
        assert said in printed.splitlines() and checkpoints not in printed


def test_the_accuracy_verdict_names_the_wrong_graph_its_kernels_and_the_users_line():
    """accuracy.txt: torch's check failed the AOT graph model__0_inference_0 with "RMSE (res-fp64): 11.07395,
    (ref-fp64): 0.00000 and shape=torch.Size([64, 64]) … multiplier: 2.000000, tol: 0.001000". The accuracy run's own log
    is not kept (README); the backend stage's log holds the same compile of the same program: its one output code
    starts "# AOT ID: ['0_inference']" (torch names a graph model__<AOT ID>_<n>), calls extern_kernels.mm (matmul) and
    the Triton kernel triton_per_fused_add_mul_relu_sum_0 (relu, mul, sum_1, add) whose source it holds, both made
    from triton_bug.py:18 (the kernel stack traces). The verdict says so in those terms, not torch's words alone, and
    names no kernel as the wrong one: torch's check compares the graph's outputs. The compile's Inductor config sets
    triton.inject_relu_bug_TESTING_ONLY = 'accuracy'."""
    printed = (FIXTURES / "accuracy" / "accuracy.txt").read_text()
    rmse = re.search(r"RMSE \(res-fp64\): ([\d.]+), \(ref-fp64\): ([\d.]+) and shape=torch\.Size\(\[(\d+), (\d+)\]\)",
                     printed).groups()
    assert rmse == ("11.07395", "0.00000", "64", "64")
    records = raw_records(cuda211(ACCURACY_LOG))
    (code,) = [payload.splitlines() for env, payload in records if "inductor_output_code" in env]
    assert code[0] == "# AOT ID: ['0_inference']"
    kernel = "triton_per_fused_add_mul_relu_sum_0"
    start = code.index(f"{kernel} = async_compile.triton('{kernel}', '''") + 1
    end = next(n for n in range(start, len(code) + 1) if code[n - 1].startswith("''', device_str="))
    mm = next(n for n, line in enumerate(code, 1) if line.strip().startswith("extern_kernels.mm("))
    run = next(n for n, line in enumerate(code, 1) if line.strip().startswith(f"{kernel}.run("))
    assert [next(line.strip() for line in reversed(code[:n - 1]) if "Source Nodes" in line) for n in (mm, run)] == [
        "# Topologically Sorted Source Nodes: [matmul], Original ATen: [aten.mm]",
        "# Topologically Sorted Source Nodes: [relu, mul, sum_1, add], Original ATen: [aten.relu, aten.mul, aten.sum, "
        "aten.add]"]
    program = (Path(__file__).parents[1] / "data" / "cuda_torch211" / "programs" / "triton_bug.py").read_text()
    relu_line = next(n for n, line in enumerate(program.splitlines(), 1) if "torch.relu(" in line)
    (stacks,) = [json.loads(payload) for env, payload in records
                 if env.get("artifact", {}).get("name") == "inductor_provenance_tracking_kernel_stack_traces"]
    assert {f"line {relu_line}, in block" in trace for traces in stacks.values() for trace in traces} == {True}

    result = _accuracy_result()
    with read_trace(cuda211(ACCURACY_LOG)) as trace:  # (the accuracy run's graph, as the backend's log has it)
        accuracy = stage_outcome(ACCURACY_RUN, result.accuracy.facts, trace, printed)
    wrong = accuracy.wrong_graph
    assert (wrong.name, wrong.compile_id, wrong.label) == ("model__0_inference_0", "[0/0]", "[0/0] inference")
    assert [(k.kernel, k.line, k.source, k.nodes) for k in wrong.kernels] == [
        ("extern_kernels.mm", mm, None, ["matmul"]), (kernel, run, (start, end), ["relu", "mul", "sum_1", "add"])]
    verdict = decide(result.outcomes, accuracy)
    assert verdict.message == "Accuracy failed for the AOT Autograd graph model__0_inference_0"  # torch's words stay
    assert (verdict.location.filename.endswith("triton_bug.py"), verdict.location.line, verdict.location.code) == (
        True, relu_line, "return torch.relu(x @ w) * 2 + x.sum(1, keepdim=True)")
    # (the hook is said on a line of its own: as the first step, it pushed the workaround out of the terminal's three)
    assert verdict.testing_hooks.startswith("This compile's Inductor config sets "
                                            "triton.inject_relu_bug_TESTING_ONLY = 'accuracy'")
    where, numbers, workaround = verdict.next_steps[:3]
    assert workaround == 'backend="aot_eager" gives eager results here: use it as a workaround.'
    assert where.startswith(f"The wrong values come from model__0_inference_0, the graph [0/0] inference made from "
                            f"triton_bug.py:{relu_line} `return torch.relu(x @ w) * 2 + x.sum(1, keepdim=True)`: "
                            f"Inductor compiled it into extern_kernels.mm (matmul; called at line {mm} of the output "
                            f"code) and {kernel} (relu, mul, sum_1, add; its source at lines {start}-{end} of the output "
                            f"code, called at line {run}).")
    assert "it does not say which kernel computes wrong values" in where
    assert numbers == (f"torch's numbers: the compiled output ([{rmse[2]}, {rmse[3]}] float32) is at RMSE {rmse[0]} from "
                       f"a float64 run, eager's at {rmse[1]} (multiplier 2, tol 0.001).")

    result.accuracy, result.verdict = accuracy, verdict
    console = Console(file=io.StringIO(), width=80)
    print_verdict(result, console)
    shown = " ".join(line.strip("|│ ") for line in console.file.getvalue().splitlines())
    assert f"triton_bug.py:{relu_line} in block (the wrong graph's kernels)" in " ".join(shown.split())
    assert f"at RMSE {rmse[0]} from a float64 run" in " ".join(shown.split())
    assert "Hook: This compile's Inductor config sets triton.inject_relu_bug_TESTING_ONLY" in " ".join(shown.split())
    assert 'backend="aot_eager" gives eager results here: use it as a workaround.' in " ".join(shown.split())
    page = diagnosis_page(result, [], "/o")
    assert f"its source at lines {start}-{end} of the output code" in page
    assert "Testing hook</th><td id=\"verdict-testing-hooks\">This compile&#39;s Inductor config sets" in page
    doc = json.loads(diagnosis_json(result, []))
    assert doc["stages"][-1]["wrong_graph"]["kernels"][1]["source"] == [start, end]

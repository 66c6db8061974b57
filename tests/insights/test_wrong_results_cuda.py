"""The CUDA twin of test_wrong_results (tests/data/cuda_torch211 programs/wrong_results_cuda.py, recorded on an H200 with
torch 2.11): bf16 normalisation fused into one Triton kernel, dropout drawn by Triton's philox. The program printed a
max-abs-diff of 5.1 (train) and 2.05 (eval) as written, 5.77e-05 and 5.2e-05 fixed (the .output.txt files). Expected
values are read from the raw logs and the program, not from our output."""

from __future__ import annotations

import json
import re
from pathlib import Path

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.insights import INFO, WARNING
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.numerics import numerics
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, line_holding, report, run_cli
from ..tracelog import raw_records

LOG = "wrong_results_cuda_as_written.log.gz"
FIXED = "wrong_results_cuda_fixed.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "cuda_torch211" / "programs" / "wrong_results_cuda.py"
_SITE = re.compile(r"# File: .*/wrong_results_cuda\.py:(\d+) in forward")
_NODE = re.compile(r'^\s+(\w+): "(\w+)\[.*= torch\.ops\.\w+\.(\w+)\.')


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _artifacts(log: str, name: str) -> dict[str, str]:
    """compile id -> the payload of its record of that kind (inductor_output_code) or artifact of that name
    (inductor_post_grad_graph), read without compilescope."""
    return {f"[{env['frame_id']}/{env['frame_compile_id']}]": payload for env, payload in raw_records(cuda211(log))
            if name in env or env.get("artifact", {}).get("name") == name}


def _post_grad(log: str) -> dict[str, list[tuple[int, str, str]]]:
    """compile id -> (program line, dtype, op) of each node of its inductor_post_grad_graph."""
    found: dict[str, list[tuple[int, str, str]]] = {}
    for cid, payload in _artifacts(log, "inductor_post_grad_graph").items():
        line = 0
        for raw in payload.splitlines():
            if (site := _SITE.search(raw)) is not None:
                line = int(site[1])
            elif (node := _NODE.match(raw)) is not None:
                found.setdefault(cid, []).append((line, node[2], node[3]))
    return found


def _triton_kernels(log: str) -> dict[str, str]:
    """compile id -> the Triton kernel source(s) of its inductor_output_code."""
    return {cid: "\n".join(re.findall(r"@triton\.jit\n(def .*?)'''", code, re.S))
            for cid, code in _artifacts(log, "inductor_output_code").items()}


def test_the_bf16_cast_and_the_normalisation_are_fused_in_float32_on_triton():
    """The cast line is named too: the Triton kernel never rounds x to bf16. In the raw log both compiles' post-grad
    graphs cast x to bf16 at `h = x.to(DTYPE)` and compute the mean, variance and normalisation in bf16; the one Triton
    kernel of [0/1] takes the float32 input (`*fp32`) and holds no bfloat16 at all: `tmp0.to(tl.float32)`, not a
    round trip through bf16. emulate_precision_casts (off here) is what keeps eager's rounding."""
    cast, mean, var, norm = (_line(t) for t in ("h = x.to(DTYPE)", "mean = h.mean(", "var = (h * h)", "y = (h - mean)"))
    graphs = _post_grad(LOG)
    for cid in ("[0/0]", "[0/1]"):
        assert [(dtype, op) for line, dtype, op in graphs[cid] if line == cast] == [("bf16", "convert_element_type")]
        assert {line for line, dtype, op in graphs[cid] if dtype == "bf16" and op != "convert_element_type"} == {
            mean, var, norm}
    kernels = _triton_kernels(LOG)
    assert "'in_ptr0': '*fp32'" in _artifacts(LOG, "inductor_output_code")["[0/1]"]
    assert "tmp1 = tmp0.to(tl.float32)" in kernels["[0/1]"] and "bfloat16" not in kernels["[0/1]"]
    assert not [n for nodes in _post_grad(FIXED).values() for n in nodes if n[1] == "bf16"]
    assert [json.loads(env["compilation_metrics"]["inductor_config"])["emulate_precision_casts"]
            for env, _ in raw_records(cuda211(LOG)) if "compilation_metrics" in env] == [False, False]

    with read_trace(cuda211(LOG)) as trace:
        num = numerics(trace)
    assert [(p.location.line, p.compile_ids, p.dtype) for p in num.precision] == [
        (line, ["[0/0]", "[0/1]"], "bfloat16") for line in (cast, mean, var, norm)]
    assert (num.precision[0].location.code, num.precision[0].ops) == ("h = x.to(DTYPE)", ["convert_element_type"])
    (finding,) = [f for f in insights(read_trace(cuda211(LOG))).findings if f.section == "numerics" and f.severity == INFO]
    assert finding.title == f"bfloat16 ops fused in float32 at wrong_results_cuda.py:{cast}, {mean}, {var}, {norm}"
    assert "torch._inductor.config.emulate_precision_casts = True" in finding.detail
    with read_trace(cuda211(FIXED)) as trace:
        assert not numerics(trace)


def test_dropouts_philox_draw_in_triton_is_named_with_fallback_random():
    """The raw log: [0/0] (training) replaces dropout with prims.inductor_random under the dropout line, seeded by one
    aten.randint on the GPU and drawn by tl.rand (philox) in the fused Triton kernel; [0/1] (model.eval()) draws
    nothing. The fixed run sets fallback_random (its config dumps) and has no inductor_random."""
    drop = _line("return self.drop(y.float())")
    graphs = _post_grad(LOG)
    assert [(cid, line) for cid, nodes in graphs.items() for line, _, op in nodes if op == "inductor_random"] == [
        ("[0/0]", drop)]
    code = _artifacts(LOG, "inductor_output_code")["[0/0]"]
    assert "aten.randint.low_out(" in code and "tl.rand(" in _triton_kernels(LOG)["[0/0]"]
    assert [json.loads(env["compilation_metrics"]["inductor_config"])["fallback_random"]
            for env, _ in raw_records(cuda211(FIXED)) if "compilation_metrics" in env] == [True, True]
    assert not [op for nodes in _post_grad(FIXED).values() for _, _, op in nodes if op.startswith("inductor_rand")]

    with read_trace(cuda211(LOG)) as trace:
        (line,) = numerics(trace).random
    assert (line.location.line, line.compile_ids, line.ops) == (drop, ["[0/0]"], ["inductor_random"])
    (finding,) = [f for f in insights(read_trace(cuda211(LOG))).findings if f.severity == WARNING]
    assert finding.title == f"random numbers drawn by Inductor, not eager, at wrong_results_cuda.py:{drop}"
    assert "torch._inductor.config.fallback_random = True" in finding.detail
    with read_trace(cuda211(FIXED)) as trace:
        assert numerics(trace).fallback_random == ["[0/0]", "[0/1]"]


def test_check_and_diff_show_the_fix(capsys):
    """check --no-inductor-random fails the run as written (inductor_random at the dropout line, read above) and
    passes the fixed one; diff as written → fixed says the setting changed and the lines no longer differ."""
    drop, cast, mean, var, norm = (_line(t) for t in ("return self.drop(", "h = x.to(", "mean = h.mean(",
                                                      "var = (h * h)", "y = (h - mean)"))
    assert run_cli("check", cuda211(LOG), "--no-inductor-random") == 1
    assert capsys.readouterr().out.strip().endswith(f"wrong_results_cuda.py:{drop} (return self.drop(y.float()))")
    assert run_cli("check", cuda211(FIXED), "--no-inductor-random") == 0

    def facts(log: str):
        with read_trace(cuda211(log)) as trace:
            return run_facts(analyze(trace))

    found = diff_runs(facts(LOG), facts(FIXED))
    changes = [c for c in found.changes if c.section == "numerics"]
    assert [(c.kind, [n["line"] for n in c.a]) for c in changes] == [("removed", [drop]),
                                                                     ("removed", [cast, mean, var, norm])]
    assert any("fallback_random" in c.title and "false → true" in c.title for c in found.changes)


def test_the_source_page_marks_each_line_that_differs_from_eager(tmp_path):
    """The program's source page, where the user reads their lines: the lines named above (the cast, the mean, the
    variance, the normalisation in bf16 in both compiles; dropout's inductor_random in [0/0]) each say why they give
    other numbers and which setting changes it; no other line does."""
    cast, mean, var, norm, drop = (_line(t) for t in ("h = x.to(DTYPE)", "mean = h.mean(", "var = (h * h)",
                                                      "y = (h - mean)", "return self.drop("))
    with read_trace(cuda211(LOG)) as trace:
        results = analyze(trace)
    (source,) = [f for f in results.sources.files if f.path.endswith("wrong_results_cuda.py")]
    marked = {line: [(d["kind"], d["compile_ids"]) for d in n.numerics] for line, n in source.notes.items()
              if n.numerics}
    assert marked == {**{line: [("precision", ["[0/0]", "[0/1]"])] for line in (cast, mean, var, norm)},
                      drop: [("random", ["[0/0]"])]}
    assert "fallback_random = True" in source.notes[drop].numerics[0]["why"]
    assert "emulate_precision_casts = True" in source.notes[cast].numerics[0]["why"]

    report(cuda211(LOG), tmp_path / "out")
    (page,) = (tmp_path / "out" / "sources").glob("wrong_results_cuda.py_*.html")
    # each line's row, from its id to the next line's
    rows = {int(chunk.split('"', 1)[0]): chunk for chunk in page.read_text().split(' id="L')[1:]}
    assert {line for line, row in rows.items() if 'class="b b-numerics"' in row} == {cast, mean, var, norm, drop}
    assert "Inductor&#39;s generator, not eager&#39;s" in rows[drop] and "<code>inductor_random</code>" in rows[drop]
    assert "<code>convert_element_type</code>" in rows[cast]
    report(cuda211(FIXED), tmp_path / "fixed")
    assert 'class="b b-numerics"' not in next((tmp_path / "fixed" / "sources").glob("*.html")).read_text()


def test_fix_first_puts_the_numbers_before_the_expected_recompile():
    """The user asks why the numbers differ: the bf16 finding comes before the recompile for model.eval() (raw
    recompile_reasons: dropout's training flag, one compile per mode, expected), which only costs compile time. In the
    run's printout "Fix first" shows three findings; the bf16 one was third, after the recompile."""
    (reasons,) = _artifacts(LOG, "recompile_reasons").values()
    assert "self._modules['drop'].training == True" in reasons
    drop, cast, mean, var, norm = (_line(t) for t in ("return self.drop(", "h = x.to(", "mean = h.mean(",
                                                      "var = (h * h)", "y = (h - mean)"))
    titles = [f.title for f in insights(read_trace(cuda211(LOG))).findings]
    assert titles[:3] == [f"random numbers drawn by Inductor, not eager, at wrong_results_cuda.py:{drop}",
                          f"bfloat16 ops fused in float32 at wrong_results_cuda.py:{cast}, {mean}, {var}, {norm}",
                          "forward recompiled once, as expected"]


# What `compilescope diagnose` captured of each stage's run of wrong_results_cuda.py on the H200 (its outputs/<stage>.txt,
# copied as they were; record.sh's diagnose_wrong_results_cuda scenarios): eager, aot_eager, the backend, eager's
# control run, and for the fixed variant the --accuracy run.
CUDA_STAGE_OUTPUTS = Path(__file__).parents[1] / "data" / "cuda_torch211" / "logs" / "wrong_results_cuda_diagnose"


def _cuda_verdict(log: str, variant: str):
    from compilescope.analyses.diagnosis import ACCURACY_RUN, AOT_EAGER, BACKEND, EAGER, EAGER_CONTROL, RunFacts
    from compilescope.analyses.diagnosis.stage_outcome import stage_outcome
    from compilescope.analyses.diagnosis.verdict import decide

    def output(key: str) -> str:
        return (CUDA_STAGE_OUTPUTS / variant / f"{key}.txt").read_text()

    facts = RunFacts(argv=["python", "wrong_results_cuda.py"], env={}, returncode=0, seconds=1.0)
    with read_trace(cuda211(log)) as trace:
        backend = stage_outcome(BACKEND, facts, trace, output(BACKEND.key))
    stages = [stage_outcome(spec, facts, None, output(spec.key)) for spec in (EAGER, AOT_EAGER)]
    control = stage_outcome(EAGER_CONTROL, facts, None, output(EAGER_CONTROL.key))
    accuracy = (stage_outcome(ACCURACY_RUN, facts, None, output(ACCURACY_RUN.key))
                if (CUDA_STAGE_OUTPUTS / variant / "accuracy.txt").exists() else None)
    return decide([*stages, backend], accuracy, [control])


def test_diagnose_on_the_gpu_reads_the_printed_numbers_as_on_the_cpu():
    """On the H200 the stages printed what the program prints on the CPU, in Triton's numbers: eager and aot_eager 0,
    Inductor 5.1 and 2.05 for the as-written program (dropout drawn by Inductor's philox and bf16 fused in float32) and
    5.77e-05 / 5.2e-05 for the fixed one (float32 rounding, its accuracy run passed). The control run printed eager's
    numbers again, so every line is compared. As written: differs (the graphs explain it); fixed: rounding, exit 0."""
    printed = {variant: {key: (CUDA_STAGE_OUTPUTS / variant / f"{key}.txt").read_text().split()
                         for key in ("eager", "aot_eager", "backend", "eager_control")} for variant in ("as_written", "fixed")}
    for variant in printed.values():
        assert variant["eager"] == variant["aot_eager"] == variant["eager_control"]
        assert variant["eager"] != variant["backend"]
    as_written = _cuda_verdict(LOG, "as_written")
    assert as_written.outcome == "differs" and not as_written.passes
    assert as_written.printed.total == 2 and as_written.run_to_run == 0
    fixed = _cuda_verdict(FIXED, "fixed")
    assert fixed.outcome == "rounding" and fixed.passes
    assert [after for _, after in fixed.printed.lines] == ["train: max abs diff 5.77e-05", "eval: max abs diff 5.2e-05"]

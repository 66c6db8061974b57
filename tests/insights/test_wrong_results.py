"""A user whose compiled model gives other numbers than eager (tests/data/torch213 programs/wrong_results.py): that the
report names the line whose random numbers Inductor draws itself, and the bf16 lines it fuses in float32, and says what
to do; the fixed variant (fallback_random = True, float32) has neither. Expected values are read from the raw log and
the program, not from our output."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.diagnosis import (
    ACCURACY, ACCURACY_RUN, AOT_EAGER, BACKEND, EAGER, EAGER_CONTROL, EAGER_CONTROL_AGAIN, RunFacts,
)
from compilescope.analyses.diagnosis.printed_numbers import another_control, printed_change, printed_lines, run_to_run
from compilescope.analyses.diagnosis.reproduce import minify_plan
from compilescope.analyses.diagnosis.seeds import imported_calls, module_seed, program_seed
from compilescope.analyses.diagnosis.stage_outcome import stage_outcome
from compilescope.analyses.diagnosis.verdict import decide
from compilescope.analyses.insights import INFO, WARNING
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.numerics import numerics
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, report, torch213
from ..tracelog import graph_nodes, raw_records

LOG = "wrong_results.log.gz"
FIXED = "wrong_results_fixed.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "wrong_results.py"
_SITE = re.compile(r"# File: .*/wrong_results\.py:(\d+) in forward")
_NODE = re.compile(r'^\s+\w+: "(\w+)\[.*= torch\.ops\.\w+\.(\w+)\.')


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _post_grad(log: str) -> dict[str, list[tuple[int | str, ...]]]:
    """compile id -> (program line, dtype, op) of each node of its inductor_post_grad_graph, read without compilescope."""
    return graph_nodes(raw_records(torch213(log)), "inductor_post_grad_graph", _SITE, _NODE)


def _config(log: str, key: str) -> list[bool]:
    """The setting in each compilation_metrics' inductor_config dump."""
    return [json.loads(env["compilation_metrics"]["inductor_config"])[key] for env, _ in raw_records(torch213(log))
            if "compilation_metrics" in env]


def test_the_dropout_line_is_named_as_drawn_by_inductors_generator():
    drop = _line("return self.drop(y.float())")
    graphs = _post_grad(LOG)
    # The raw log: fallback_random off, and only the training compile [0/0] holds prims.inductor_random, under the
    # dropout line; [0/1] (model.eval()) has no random op. The fixed run: fallback_random on, no inductor_random.
    assert _config(LOG, "fallback_random") == [False, False] and _config(FIXED, "fallback_random") == [True, True]
    assert [(cid, line) for cid, nodes in graphs.items() for line, _, op in nodes if op == "inductor_random"] == [
        ("[0/0]", drop)]
    assert not [op for nodes in _post_grad(FIXED).values() for _, _, op in nodes if op.startswith("inductor_rand")]

    with read_trace(torch213(LOG)) as trace:
        num = numerics(trace)
    (line,) = num.random
    assert (line.location.line, line.location.code, line.compile_ids, line.ops) == (
        drop, "return self.drop(y.float())", ["[0/0]"], ["inductor_random"])
    with read_trace(torch213(FIXED)) as trace:
        fixed = numerics(trace)
    assert not fixed.random and fixed.fallback_random == ["[0/0]", "[0/1]"]

    ins = insights(read_trace(torch213(LOG)))
    (finding,) = [f for f in ins.findings if f.section == "numerics" and f.severity == WARNING]
    assert finding.title == f"random numbers drawn by Inductor, not eager, at wrong_results.py:{drop}"
    assert "torch._inductor.config.fallback_random = True" in finding.detail and "model.eval()" in finding.detail
    assert not [f for f in insights(read_trace(torch213(FIXED))).findings if f.section == "numerics"]


def test_bf16_lines_fused_in_float32_are_named_with_what_to_do():
    cast, mean, var, norm = (_line(t) for t in ("h = x.to(DTYPE)", "mean = h.mean(", "var = (h * h)", "y = (h - mean)"))
    graphs = _post_grad(LOG)
    # The raw log: both compiles compute in bf16 at the mean, variance and normalisation lines, from the cast line's
    # bf16 (which the C++ kernel converts and then does not use: it computes from the float); the fixed run computes
    # nothing in bf16. emulate_precision_casts is off in every compile.
    for cid in ("[0/0]", "[0/1]"):
        bf16 = {line for line, dtype, op in graphs[cid] if dtype == "bf16" and op != "convert_element_type"}
        assert bf16 == {mean, var, norm}
        assert [(dtype, op) for line, dtype, op in graphs[cid] if line == cast] == [("bf16", "convert_element_type")]
    assert not [n for nodes in _post_grad(FIXED).values() for n in nodes if n[1] == "bf16"]
    assert _config(LOG, "emulate_precision_casts") == [False, False]

    with read_trace(torch213(LOG)) as trace:
        num = numerics(trace)
    assert [(p.location.line, p.compile_ids, p.dtype) for p in num.precision] == [
        (line, ["[0/0]", "[0/1]"], "bfloat16") for line in (cast, mean, var, norm)]
    assert num.precision[0].ops == ["convert_element_type"]  # the rounding of x to bf16, dropped
    assert num.precision[2].ops == ["mul", "mean", "sub"]  # E[h*h] - E[h]**2, each in bf16
    (finding,) = [f for f in insights(read_trace(torch213(LOG))).findings if f.section == "numerics" and f.severity == INFO]
    assert finding.title == f"bfloat16 ops fused in float32 at wrong_results.py:{cast}, {mean}, {var}, {norm}"
    assert "torch._inductor.config.emulate_precision_casts = True" in finding.detail
    # The log holds no values, so it cannot tell which of eager and compiled is nearer float32 (in this program eager
    # is the further off): the advice says both differ from a float32 run and claims neither is nearer.
    assert "Both round differently from a float32 run, and the log does not show which is nearer it" in finding.detail
    assert "Neither is" not in finding.detail
    with read_trace(torch213(FIXED)) as trace:
        assert not numerics(trace)


def test_the_report_shows_the_lines_escaped(tmp_path):
    report(torch213(LOG), tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text()
    section = page[page.index('id="insights-numerics"'):]
    section = section[:section.index("</table>")]
    assert "random: Inductor&#39;s generator" in section and "<code>inductor_random</code>" in section
    assert "var = (h * h).mean(-1, keepdim=True) - mean * mean" in section
    report(torch213(FIXED), tmp_path / "fixed")
    assert 'id="insights-numerics"' not in (tmp_path / "fixed" / "index.html").read_text()


def _stages(log: str):
    facts = RunFacts(argv=["python", "wrong_results.py"], env={}, returncode=0, seconds=1.0, timed_out=False,
                     output_tail="")
    with read_trace(torch213(log)) as trace:
        backend = stage_outcome(BACKEND, facts, trace)
    stages = [stage_outcome(spec, facts, None) for spec in (EAGER, AOT_EAGER)]
    for stage in stages:
        stage.compiles = 2
    return [*stages, backend], stage_outcome(ACCURACY_RUN, facts, None)


def test_diagnose_does_not_call_inductors_random_numbers_a_match_with_eager():
    stages, accuracy = _stages(LOG)
    verdict = decide(stages, accuracy)
    drop = _line("return self.drop(y.float())")
    # torch's accuracy check passed on this program (eager, compiled and float64 each draw their own numbers)
    assert (verdict.outcome, verdict.stage, verdict.ok) == ("differs", ACCURACY, False)
    assert (verdict.location.line, verdict.location_kind) == (drop, "random op")
    assert "torch's accuracy check passed, but it cannot see this" in verdict.headline
    assert "fallback_random = True" in verdict.next_steps[0]
    assert "emulate_precision_casts" in verdict.next_steps[1]
    fixed = decide(*_stages(FIXED))
    assert fixed.ok and "match eager" in fixed.headline
    assert not any("emulate_precision_casts" in step for step in fixed.next_steps)


def test_the_random_numbers_headline_is_of_inductors_generator_not_of_the_programs_seed():
    """The headline said "the same seed gives other numbers than eager", of a program that may set no seed: what is
    true of any program is that Inductor's generator does not reproduce eager's stream, and the setting that does (the
    advice the next step gives too)."""
    stages, accuracy = _stages(LOG)
    for seed in (None, program_seed("never_seeds.py", "print(1)"), _seed()):
        verdict = decide(stages, accuracy, seed=seed)
        assert verdict.outcome == "differs"
        assert "the same seed gives" not in verdict.headline
        assert ("draws its own random numbers at wrong_results.py:{} (return self.drop(y.float())): Inductor's random "
                "numbers differ from eager's for the same seed (torch.compile does not reproduce eager's random "
                "stream unless torch._inductor.config.fallback_random = True).".format(
                    _line("return self.drop(y.float())"))) in verdict.headline
        assert "torch._inductor.config.fallback_random = True" in verdict.next_steps[0]


def test_a_cache_hits_post_grad_graph_is_placed_on_this_runs_lines():
    """wrong_results_cache_hit.log (diagnose's backend stage of this program, its FX graph cache filled by a version
    whose docstring was one line shorter): torch logs the cached post-grad graphs, whose `# File:` lines are the older
    file's; Dynamo's graphs of the same compiles have this run's."""
    log = "wrong_results_cache_hit.log.gz"
    records = raw_records(torch213(log))
    assert sum("fx_graph_cache_hit" in json.dumps(env) for env, _ in records) == 2

    def sites(kind: str) -> set[tuple[int, str]]:
        return {(int(m[1]), m[2]) for env, payload in records
                if kind in env or env.get("artifact", {}).get("name") == kind
                for m in re.finditer(r"# File: .*/prog\.py:(\d+) in forward, code: (.*)", payload)}

    cached, dynamo = sites("inductor_post_grad_graph"), sites("dynamo_output_graph")
    drop = "return self.drop(y.float())"
    assert (35, drop) in cached and (36, drop) in dynamo and (36, drop) not in cached
    assert {(line + 1, code) for line, code in cached} == dynamo  # every line one below

    with read_trace(torch213(log)) as trace:
        num = numerics(trace)
    assert [(line.location.line, line.location.code) for line in num.random] == [(36, drop)]
    assert sorted((line.location.line, line.location.code) for line in num.precision) == sorted(
        (line, code) for line, code in dynamo if line in (32, 33, 34, 35))


def _facts(log: str):
    with read_trace(torch213(log)) as trace:
        return run_facts(analyze(trace))


def test_diff_against_the_fixed_run_says_which_lines_now_match_eager():
    """The fixed run (fallback_random = True, float32; the same lines, as the program is one file) has no
    inductor_random and no bf16 node (the tests above read both from the raw logs): diff says the random line and the
    bf16 lines are gone, and nothing of the reverse direction."""
    drop, cast, mean, var, norm = (_line(t) for t in ("return self.drop(", "h = x.to(", "mean = h.mean(", "var = (h * h)",
                                                      "y = (h - mean)"))
    changes = [c for c in diff_runs(_facts(LOG), _facts(FIXED)).changes if c.section == "numerics"]
    assert [(c.kind, [n["line"] for n in c.a]) for c in changes] == [("removed", [drop]),
                                                                     ("removed", [cast, mean, var, norm])]
    assert changes[0].title == (f"compiled code no longer draws its own random numbers at wrong_results.py:{drop} "
                                "(return self.drop(y.float()))")
    assert "no longer fuses bfloat16 ops in float32" in changes[1].title
    back = [c for c in diff_runs(_facts(FIXED), _facts(LOG)).changes if c.section == "numerics"]
    assert [c.kind for c in back] == ["added", "added"] and "now draws its own random numbers" in back[0].title


def test_check_gates_inductors_random_numbers(capsys):
    """A CI gate for a run whose compiled results must match eager's under one seed: the wrong run draws dropout's
    mask with Inductor's generator (the raw post-grad graph's inductor_random, read above), the fixed one does not."""
    from ..conftest import run_cli

    drop = _line("return self.drop(y.float())")
    assert run_cli("check", torch213(LOG), "--no-inductor-random") == 1
    assert capsys.readouterr().out.strip() == (
        "no-inductor-random: 1 line drawing Inductor's random numbers, none allowed "
        "(torch._inductor.config.fallback_random = True draws eager's): "
        f"wrong_results.py:{drop} (return self.drop(y.float()))")
    assert run_cli("check", torch213(FIXED), "--no-inductor-random") == 0


def test_check_baseline_fails_on_a_line_that_newly_draws_inductors_random_numbers(capsys):
    """The fixed run (fallback_random = True: no inductor_random in its post-grad graphs, read above) as the baseline
    and the wrong run (inductor_random under the dropout line) as the run: a regression. The reverse removes the line:
    no regression. bf16 fused in float32 (the wrong run's lines 32-35) is not counted: it rounds less than eager."""
    from ..conftest import run_cli

    drop = _line("return self.drop(y.float())")
    assert run_cli("check", "--json", torch213(LOG), "--baseline", torch213(FIXED)) == 1
    rules = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    rule = rules["baseline-inductor-random"]
    assert (rule["passed"], rule["message"]) == (False, (
        "baseline-inductor-random: compiled code now draws its own random numbers (Inductor's generator, not eager's) "
        f"at wrong_results.py:{drop} (return self.drop(y.float()))"))
    assert [r for r, found in rules.items() if not found["passed"]] == ["baseline-inductor-random"]
    assert run_cli("check", "--json", torch213(FIXED), "--baseline", torch213(LOG)) == 0
    rules = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert (rules["baseline-inductor-random"]["passed"], rules["baseline-inductor-random"]["message"]) == (
        True, "no regression")
    changes = [c for c in diff_runs(_facts(FIXED), _facts(LOG)).changes if c.section == "numerics"]
    assert [c.direction for c in changes] == ["worse", None]  # the random line; the bf16 lines are neither


def test_the_recompile_for_model_eval_is_advised_as_a_mode_switch_not_a_bool_to_remove():
    """model.eval() (the program's line 50) recompiles forward: torch's recompile_reasons for [0/1] name dropout's
    training flag. That is a mode, switched on purpose: one compile per mode is expected, and the generic bool advice
    (take one path: a mask, torch.where) does not fit it."""
    from compilescope.analyses.recompiles.analysis import recompiles

    (reasons,) = [payload for env, payload in raw_records(torch213(LOG))
                  if env.get("artifact", {}).get("name") == "recompile_reasons"]
    assert "0/0: self._modules['drop'].training == True" in reasons
    with read_trace(torch213(LOG)) as trace:
        (frame,) = recompiles(trace).frames
    assert [s.expected for s in frame.steps] == ["training"]
    (advice,) = frame.advice
    assert advice.startswith("self.drop.training is a module's mode (.train() or .eval(); read at "
                             f"wrong_results.py:{_line('return self.drop(y.float())')}: return self.drop(y.float()))")
    assert "expected" in advice and "always apply a mask" not in advice and "torch.where" not in advice


def test_a_cache_hits_kernels_are_placed_on_this_runs_lines(tmp_path):
    """wrong_results_cache_hit.log: the kernel stack traces torch logs on an FX graph cache hit are the cached ones,
    naming the older file's lines 31-35 (the fused kernel of [0/0] includes dropout's ops, logged at 35); Dynamo's graph
    of the same compile names this run's 32-36. The kernels and the source page's notes go on this run's lines: the
    dropout line 36 holds both compiles' fused kernels, `def forward` (31, the older file's `h = x.to(DTYPE)`) none.
    The compile page says the cached line comments are of an older file."""
    log = "wrong_results_cache_hit.log.gz"
    records = raw_records(torch213(log))
    by_compile = {(f"[0/{env['frame_compile_id']}]", int(m[1]), m[2]) for env, payload in records
                  if env.get("artifact", {}).get("name") == "inductor_provenance_tracking_kernel_stack_traces"
                  for traces in json.loads(payload).values() for trace in traces
                  for m in re.finditer(r'prog\.py", line (\d+), in forward\n +(.+)\n', trace)}
    logged = {(line, code) for cid, line, code in by_compile if cid == "[0/0]"}
    dynamo = {(int(m[1]), m[2]) for env, payload in records if "dynamo_output_graph" in env
              for m in re.finditer(r"# File: .*/prog\.py:(\d+) in forward, code: (.*)", payload)}
    drop = "return self.drop(y.float())"
    assert (35, drop) in logged and (31, "h = x.to(DTYPE)") in logged and (36, drop) not in logged
    assert {(line + 1, code) for line, code in logged} <= dynamo  # every line one below

    with read_trace(torch213(log)) as trace:
        results = analyze(trace)
    (section,) = next(cp for c, cp in results.provenance.compiles.items() if str(c) == "[0/0]").sections
    placed = {(u.line, u.code) for k in section.kernels for u in k.user_lines}
    assert placed == {(line + 1, code) for line, code in logged}
    (source,) = [f for f in results.sources.files if f.path.endswith("prog.py")]
    kernels = {line: sorted({k["compile_id"] for k in n.kernels}) for line, n in source.notes.items() if n.kernels}
    expected: dict[int, list[str]] = {}
    for cid, line, _ in sorted(by_compile):
        ids = expected.setdefault(line + 1, [])
        if cid not in ids:
            ids.append(cid)
    assert kernels == expected and 31 not in kernels and kernels[36] == ["[0/0]", "[0/1]"]

    moved = [(line, cached) for path, cached, line in results.compiles["[0/0]"].moved_lines]
    assert moved == [(line + 1, line) for line in range(31, 36)]
    report(torch213(log), tmp_path / "out")
    page = (tmp_path / "out" / "-_0_0_0" / "index.html").read_text()
    assert ("are of an older version of prog.py (its lines 31, 32, 33, 34, 35 are this run&#39;s 32, 33, 34, 35, 36)"
            in page)
    # a compile that hit no cache names this run's lines: no such note
    report(torch213(LOG), tmp_path / "fresh")
    assert 'id="moved-lines"' not in (tmp_path / "fresh" / "-_0_0_0" / "index.html").read_text()


def test_a_cache_hits_provenance_and_kernel_pages_say_their_lines_are_the_cached_runs(tmp_path):
    """wrong_results_cache_hit.log: the provenance page's post-grad panel shows the cached graph as logged (its
    `# File:` comments name the older file's 31-35, Dynamo's graph 32-36) and the kernel stack traces page the cached
    stacks: both say so, with the lines they are this run's, as the compile page does. A fresh compile's say nothing."""
    import html

    log = "wrong_results_cache_hit.log.gz"
    records = raw_records(torch213(log))
    (post,) = [payload for env, payload in records
               if "inductor_post_grad_graph" in env and env.get("frame_compile_id") == 0]
    cached = {(int(m[1]), m[2]) for m in re.finditer(r"# File: .*/prog\.py:(\d+) in forward, code: (.*)", post)}
    dynamo = {(int(m[1]), m[2]) for env, payload in records if "dynamo_output_graph" in env and env["frame_compile_id"] == 0
              for m in re.finditer(r"# File: .*/prog\.py:(\d+) in forward, code: (.*)", payload)}
    assert {line for line, _ in cached} == set(range(31, 36)) and {(n + 1, code) for n, code in cached} <= dynamo
    note = ("are of an older version of prog.py (its lines 31, 32, 33, 34, 35 are this run's 32, 33, 34, 35, 36), as the "
            "run that filled the cache had it")
    out = tmp_path / "out"
    report(torch213(log), out)
    provenance = html.unescape((out / "provenance" / "-_0_0_0.html").read_text())
    assert note in provenance and "prog.py:35 in forward, code: return self.drop(y.float())" in provenance
    (kernels,) = (out / "-_0_0_0").glob("inductor_provenance_tracking_kernel_stack_traces_*_readable.html")
    assert note in html.unescape(kernels.read_text())
    report(torch213(LOG), tmp_path / "fresh")
    assert "older version" not in (tmp_path / "fresh" / "provenance" / "-_0_0_0.html").read_text()


# What `compilescope diagnose` captured of each stage's run of the program (its outputs/<stage>.txt), copied as they
# were: same program (which seeds), the backend forced per stage (torch 2.13 CPU).
STAGE_OUTPUTS = Path(__file__).parents[1] / "data" / "torch213" / "logs" / "wrong_results_diagnose"


def _diagnosed(log: str, variant: str, accuracy: str | None = None, returncode: int = 0):
    """The stages of diagnose's run of the program (variant "as_written" or "fixed"): the backend read from the
    recorded log, each stage's output from what that run printed."""
    outputs = {spec.key: (STAGE_OUTPUTS / variant / f"{spec.key}.txt").read_text() for spec in (EAGER, AOT_EAGER, BACKEND)}
    facts = RunFacts(argv=["python", "wrong_results.py"], env={}, returncode=0, seconds=1.0)
    with read_trace(torch213(log)) as trace:
        backend = stage_outcome(BACKEND, facts, trace, outputs[BACKEND.key])
    stages = [stage_outcome(spec, facts, None, outputs[spec.key]) for spec in (EAGER, AOT_EAGER)]
    for stage in stages:
        stage.compiles = 2
    checked = None
    if accuracy is not None:
        checked = stage_outcome(ACCURACY_RUN, RunFacts(argv=facts.argv, env={}, returncode=returncode, seconds=1.0),
                                None, accuracy)
    return [*stages, backend], checked


def test_diagnose_says_which_stage_first_changes_the_printed_numbers():
    """The program prints its own comparison with eager and exits 0: backend="eager" and "aot_eager" print 0 (the
    captured graphs run eager's ops), Inductor 5.8 and 1.81. diagnose names Inductor and shows the lines side by side."""
    stages, _ = _diagnosed(LOG, "as_written")
    verdict = decide(stages)
    assert verdict.outcome == "differs" and verdict.stage == ACCURACY  # (the random op explains it: named first)
    change = verdict.printed
    assert (change.stage, change.before) == (BACKEND.key, AOT_EAGER.key)
    assert change.lines == [("train: max abs diff 0", "train: max abs diff 5.8"),
                            ("eval: max abs diff 0", "eval: max abs diff 1.81")] and change.total == 2
    assert "printed other numbers with your backend than with backend=\"aot_eager\" (2 lines, below)" in verdict.headline
    assert verdict.to_json()["printed"]["lines"][0] == {"before": "train: max abs diff 0",
                                                        "after": "train: max abs diff 5.8"}
    # Stages that print the same numbers change nothing; times and torch's log lines are not the program's numbers.
    for stage in stages:
        stage.printed = printed_lines("train: max abs diff 0\nstep took 3.2 s\nW1127 10:29:22.123 4 torch warns")
    stages[2].printed = printed_lines("train: max abs diff 0\nstep took 9.9 s\nW1127 10:31:02.456 4 torch warns")
    assert printed_change(stages) is None


def test_the_fixed_run_s_float32_difference_is_rounding_and_passes():
    """WRONG_VARIANT=fixed: float32 and fallback_random = True, so the log holds no inductor_random and no bf16 node
    (read from the raw log above); yet Inductor prints 4.39e-05 and 4.24e-05 where backend="aot_eager" prints 0.
    Nothing the user can fix: float32 rounding, its own verdict, which diagnose exits 0 with (a CI gating on diagnose
    failed this correct program). assert_close's float32 default (atol 1e-5) is tighter than the program's numbers, so
    the advice does not call them within tolerance."""
    stages, _ = _diagnosed(FIXED, "fixed")
    assert not stages[2].numerics  # nothing in the graphs explains other numbers
    verdict = decide(stages, seed=_seed())
    assert (verdict.outcome, verdict.stage, verdict.failing_stage) == ("rounding", "inductor", None)
    assert verdict.passes and not verdict.ok
    seeded = line_holding(PROGRAM, "torch.manual_seed(0)")  # (its first seeding call)
    assert verdict.headline == ('Every stage compiles and runs; the program prints other numbers with your backend '
                                '(inductor) than with backend="aot_eager" (same program, same seed: torch.manual_seed at '
                                f'line {seeded}; 2 lines, below), and nothing in its compiled graphs explains them but '
                                "float32 rounding.")
    assert [after for _, after in verdict.printed.lines] == ["train: max abs diff 4.39e-05", "eval: max abs diff 4.24e-05"]
    assert verdict.next_steps[0].startswith("Nothing in the graphs your backend compiled draws its own random numbers")
    assert "(rtol 1.3e-6, atol 1e-5) can be tighter than that" in verdict.next_steps[0]
    assert verdict.next_steps[1].startswith("compilescope diagnose --accuracy compares each compiled graph")
    assert not any("workaround" in step for step in verdict.next_steps)  # nothing to work around
    assert isinstance(minify_plan(verdict, stages), str)


def test_with_accuracy_torchs_check_decides_whether_the_fixed_run_s_change_is_rounding():
    # Its run passed (no failure line, exit 0): rounding, said to be checked.
    stages, accuracy = _diagnosed(FIXED, "fixed", accuracy="")
    verdict = decide(stages, accuracy)
    assert (verdict.outcome, verdict.passes) == ("rounding", True)
    assert verdict.headline.endswith(", and torch's accuracy check passed: float32 rounding, not a wrong graph.")
    assert verdict.next_steps[1].startswith("torch's accuracy check passed: each compiled graph's")
    # It failed on a graph (the line torch's after_aot.py logs): wrong results, not rounding.
    stages, accuracy = _diagnosed(FIXED, "fixed", accuracy="W1121 after_aot.py:390] Accuracy failed for the AOT "
                                  "Autograd graph model__0_forward_1\n", returncode=1)
    verdict = decide(stages, accuracy)
    assert (verdict.outcome, verdict.failing_stage, verdict.passes) == ("accuracy", "accuracy", False)
    # Its run failed without naming a graph: the change is unexplained, "differs".
    stages, accuracy = _diagnosed(FIXED, "fixed", accuracy="RuntimeError: out of memory\n", returncode=1)
    verdict = decide(stages, accuracy)
    assert (verdict.outcome, verdict.stage, verdict.passes) == ("differs", "inductor", False)
    assert verdict.headline.endswith("2 lines, below): Inductor changes them.")
    assert verdict.next_steps[1].startswith("torch's accuracy check did not pass")


def test_as_written_the_printed_change_stays_differs_where_the_graphs_explain_it():
    """The as-written run's graphs hold inductor_random (dropout) and bf16 fused in float32 (read from the raw log
    above): they explain its 5.8 and 1.81, which no accuracy check passing makes rounding."""
    for accuracy in (None, ""):
        stages, checked = _diagnosed(LOG, "as_written", accuracy=accuracy)
        verdict = decide(stages, checked)
        assert (verdict.outcome, verdict.passes) == ("differs", False)
        assert not any("Nothing in the graphs" in step for step in verdict.next_steps)
    # bf16 fused alone (no random op) explains it too: still "differs", with the precision advice
    stages, _ = _diagnosed(LOG, "as_written")
    stages[2].numerics.random = []
    verdict = decide(stages)
    assert (verdict.outcome, verdict.stage, verdict.passes) == ("differs", "inductor", False)
    assert "emulate_precision_casts" in verdict.next_steps[0]


def _seed():
    """What wrong_results.py's own file shows of seeding, as diagnose reads it."""
    return program_seed("wrong_results.py", PROGRAM.read_text())


def _printed(*outputs: str, inductor: bool = True):
    """The stages eager, aot_eager and the backend (Inductor's, its graphs explaining nothing), each having printed
    one of outputs: the review's minimal cases, as decide() reads them."""
    facts = RunFacts(argv=["python", "prog.py"], env={}, returncode=0, seconds=1.0)
    stages = [stage_outcome(spec, facts, None, output) for spec, output in zip((EAGER, AOT_EAGER, BACKEND), outputs)]
    for stage in stages:
        stage.compiles = 1
    stages[2].used_inductor = inductor
    return stages


def test_numbers_with_a_unit_or_of_the_process_are_no_results():
    """The review's timed.py prints `first call {dt:.4f} s` and a result: diagnose said "DIFFERS FROM EAGER ...
    AOTAutograd changes them" and exited 1 for a correct program. What each stage printed, as its run printed it."""
    stages = _printed("first call 0.2973 s\nresult sum 4.7909", "first call 0.8065 s\nresult sum 4.7909",
                      "first call 20.5305 s\nresult sum 4.7909")
    assert [s.printed for s in stages] == [["result sum 4.7909"]] * 3
    verdict = decide(stages)
    assert (verdict.outcome, verdict.passes, verdict.printed) == ("ok", True, None)
    # A time, size, rate or ratio, a pid, a clock, a date: never a result, wherever it is on the line
    for measured in ("0.29 s", "12ms", "3 us", "3 µs", "40 ns", "2 min", "1534 MB", "3.1 GiB", "512 KiB", "812 tok/s",
                     "45.2 it/s", "88 samples/s", "1.8 x", "pid 4242", "pid=4242", "10:29:22.123", "00:01",
                     "2024-11-27"):
        assert printed_lines(f"step: {measured}") == [], measured
        if measured != "3 us":  # ("us" is one of the words that leave the line out whole)
            assert printed_lines(f"loss 0.25 ({measured})") == [f"loss 0.25 ({measured})"], measured
    # Lines naming a time, speed or memory: their numbers need no unit
    for named in ("step time: 3.2", "took 3.2", "latency (ms) 12.5", "step_time_ms=3.2", "peak memory 1534",
                  "tokens_per_sec 812", "throughput 812"):
        assert printed_lines(f"loss 0.25, {named}") == [], named
    # the review's other lines, two runs of them: the loss and the step's number are results, and the same
    first = "first call 0.512 s\npeak memory 1534 MB\n120.5 tokens/s\nloss 0.25\npid 4242\nstep 3 done in 12.1 s"
    second = "first call 0.874 s\npeak memory 1602 MB\n98.1 tokens/s\nloss 0.25\npid 4250\nstep 3 done in 11.9 s"
    assert printed_lines(first) == ["loss 0.25", "step 3 done in 12.1 s"]
    assert decide(_printed(first, second, first)).outcome == "ok"
    # A number beside its unit changes nothing; the result beside it still does; "min" before a number is a minimum.
    stages = _printed("loss 0.25 in 0.29 s", "loss 0.25 in 0.81 s", "loss 0.25 in 20.5 s")
    assert decide(stages).outcome == "ok"
    stages = _printed("loss 0.25 in 0.29 s", "loss 0.25 in 0.81 s", "loss 0.5 in 20.5 s")
    assert decide(stages).printed.lines == [("loss 0.25 in 0.81 s", "loss 0.5 in 20.5 s")]
    stages = _printed("max 3.2 min 0.1", "max 3.2 min 0.1", "max 3.2 min 7.5")
    assert decide(stages).printed.lines == [("max 3.2 min 0.1", "max 3.2 min 7.5")]


def test_rounding_is_a_small_change_and_never_nan():
    """rounding needs every changed number within float32 rounding of the stage before (1e-3 of it, or 1e-3 near 0).
    The fixed variant's graphs (read from its raw log above: nothing explains other numbers) with the as-written run's
    printed 5.8 and 1.81 where aot_eager printed 0: no rounding, and diagnose exits 1."""
    stages, _ = _diagnosed(FIXED, "fixed")
    stages[2].printed = printed_lines((STAGE_OUTPUTS / "as_written" / "backend.txt").read_text())
    verdict = decide(stages)
    assert (verdict.outcome, verdict.stage, verdict.passes) == ("differs", "inductor", False)
    assert (verdict.printed.total, verdict.printed.beyond_rounding) == (2, 2)
    assert verdict.next_steps[0].startswith("2 of the 2 lines below changed by more than float32 rounding would")
    assert verdict.next_steps[1].startswith("compilescope diagnose --accuracy compares each compiled graph")
    # torch's check passing on every graph, and nothing in them explaining other numbers: rounding accumulated over
    # steps (a loss drifting), which must not fail a correct training loop
    stages, accuracy = _diagnosed(FIXED, "fixed", accuracy="")
    stages[2].printed = printed_lines((STAGE_OUTPUTS / "as_written" / "backend.txt").read_text())
    verdict = decide(stages, accuracy)
    assert (verdict.outcome, verdict.stage, verdict.passes) == ("rounding", "inductor", True)
    assert verdict.headline.endswith("2 of them further than one step's float32 rounding, but rounding accumulates "
                                     "over steps and torch's accuracy check passed: not a wrong graph.")
    assert verdict.next_steps[0].startswith("Rounding accumulates over steps")
    # ... but no rounding makes a loss nan or inf, checked or not
    stages, accuracy = _diagnosed(FIXED, "fixed", accuracy="")
    stages[2].printed = printed_lines("train: max abs diff nan\neval: max abs diff 4.24e-05")
    verdict = decide(stages, accuracy)
    assert (verdict.outcome, verdict.passes, verdict.printed.nonfinite) == ("differs", False, 1)
    assert verdict.next_steps[1].startswith("torch's accuracy check passed: each compiled graph's outputs")
    # The review's cases: a difference printed as 0.0, then 5.8; a loss gone nan or inf
    for before, after in (("max abs diff vs eager: 0.0", "max abs diff vs eager: 5.8"),
                          ("step 1 loss 0.6931\nstep 2 loss 0.5120", "step 1 loss nan\nstep 2 loss nan"),
                          ("loss 0.6931", "loss -inf"), ("loss inf", "loss -inf"), ("loss 1.0", "loss 1.002"),
                          ("max abs diff 0", "max abs diff 0.0011")):
        verdict = decide(_printed(before, before, after))
        assert (verdict.outcome, verdict.passes, verdict.printed.beyond_rounding > 0) == ("differs", False, True), after
    # Within rounding: 1e-3 of the number, 1e-3 near 0; nan printed again is the same number
    for before, after in (("loss 1.0", "loss 1.0009"), ("loss -250.0", "loss -250.2"), ("max abs diff 0", "max abs diff 0.0009")):
        verdict = decide(_printed(before, before, after))
        assert (verdict.outcome, verdict.passes, verdict.printed.beyond_rounding) == ("rounding", True, 0), after
    assert decide(_printed("loss nan", "loss nan", "loss NaN")).outcome == "ok"

def test_aotautograds_rounding_is_rounding_too():
    """AOTAutograd's decompositions round in another order than eager's ops: the same tolerance as the backend's."""
    verdict = decide(_printed("loss 1.0", "loss 1.0009", "loss 1.0009"))
    assert (verdict.outcome, verdict.stage, verdict.passes, verdict.printed.stage) == ("rounding", "aot_autograd", True, "aot_eager")
    assert verdict.headline.endswith("each within float32 rounding: AOTAutograd's decompositions round differently.")
    assert verdict.next_steps[0].startswith("AOTAutograd decomposes ops into ATen primitives")
    # further than rounding: AOTAutograd changes them, and no accuracy check (it cannot call AOTAutograd's graphs) helps
    for accuracy in (None, ""):
        stages = _printed("loss 1.0", "loss 1.5", "loss 1.5")
        checked = None if accuracy is None else stage_outcome(ACCURACY_RUN, stages[0].facts, None, accuracy)
        verdict = decide(stages, checked)
        assert (verdict.outcome, verdict.stage, verdict.passes) == ("differs", "aot_autograd", False)
        assert verdict.headline.endswith("AOTAutograd changes them.")
    # AOTAutograd's rounding does not hide a backend that moves the numbers further: the backend is named
    verdict = decide(_printed("loss 1.0", "loss 1.0009", "loss 4.0"))
    assert (verdict.outcome, verdict.stage, verdict.printed.stage) == ("differs", "inductor", "backend")
    # nor Inductor's own random numbers (the as-written graphs), printed or not
    stages, _ = _diagnosed(LOG, "as_written")
    stages[1].printed = stages[2].printed = printed_lines("train: max abs diff 0.0001")
    verdict = decide(stages)
    assert (verdict.outcome, verdict.stage, verdict.printed) == ("differs", ACCURACY, None)


def _control(output: str, returncode: int = 0, timed_out: bool = False):
    """Eager's stage run once more, as diagnose runs it where the stages printed other numbers."""
    facts = RunFacts(argv=["python", "prog.py"], env={"TORCH_BISECT_BACKEND": "eager"}, returncode=returncode,
                     seconds=1.0, timed_out=timed_out)
    return stage_outcome(EAGER_CONTROL, facts, None, output)


# What tests/diagnose/programs/fine.py prints, relu(torch.randn(4) + 1) unseeded, in the layout torch prints a tensor:
# each run draws other numbers, whatever the stage
UNSEEDED = ("tensor([0.0000, 1.4422, 2.1037, 0.6130])", "tensor([1.0528, 0.0000, 0.3316, 1.9720])",
            "tensor([0.2214, 0.8740, 0.0000, 0.0000])", "tensor([2.3161, 0.4015, 1.0092, 0.0000])")


def test_lines_that_change_under_eager_too_are_not_compared():
    """fine.py: every stage printed other numbers, and diagnose said "DIFFERS FROM EAGER ... AOTAutograd changes them",
    exit 1. Its control run prints others again: the line changes from run to run, and is not compared."""
    stages = _printed(*UNSEEDED[:3])
    assert decide(stages).outcome == "differs"  # (no control run: every line compared, as before)
    verdict = decide(stages, None, [_control(UNSEEDED[3])])
    assert (verdict.outcome, verdict.passes, verdict.printed, verdict.run_to_run) == ("ok", True, None, 1)
    assert verdict.next_steps[0].startswith('1 printed line changes from run to run under eager too: not compared '
                                            '(backend="eager", again printed other numbers in them')
    assert verdict.to_json()["run_to_run"] == 1
    # Only those lines: the loss the program prints after them is compared, and its change named
    stages = _printed(*(f"{line}\nloss {loss}" for line, loss in zip(UNSEEDED, ("0.25", "0.25", "0.75"))))
    verdict = decide(stages, None, [_control(f"{UNSEEDED[3]}\nloss 0.25")])
    assert (verdict.outcome, verdict.stage, verdict.run_to_run) == ("differs", "inductor", 1)
    assert (verdict.printed.lines, verdict.printed.total) == ([("loss 0.25", "loss 0.75")], 1)
    assert verdict.next_steps[0].startswith("1 printed line changes from run to run")
    # The n-th line of a kind is the one dropped: a loop's first loss changing run to run leaves its second compared
    loop = ("loss 0.9\nloss 0.25", "loss 0.7\nloss 0.25", "loss 0.8\nloss 0.75")
    verdict = decide(_printed(*loop), None, [_control("loss 0.6\nloss 0.25")])
    assert verdict.printed.lines == [("loss 0.25", "loss 0.75")] and verdict.run_to_run == 1
    # A control that prints eager's numbers again: nothing is left out, and the change stands, said to rest on one
    # control run (no seed is known: diagnose makes a second one then, see below)
    verdict = decide(_printed("loss 0.25", "loss 0.25", "loss 0.75"), None, [_control("loss 0.25")])
    assert (verdict.outcome, verdict.run_to_run) == ("differs", 0)
    assert verdict.next_steps[0].startswith('The lines compared rest on one control run (backend="eager", again): a '
                                            "line that changes from run to run")


def test_without_a_control_run_printed_numbers_alone_are_not_differs():
    """The control run failed or ran out of time: whether a line changes from run to run is not known, so a change of
    printed numbers alone does not fail the program; a change the graphs explain (Inductor's random numbers) does."""
    for control in (_control("", returncode=1), _control("", timed_out=True)):
        status = "failed" if not control.facts.timed_out else "timed out"
        for stages in (_printed(*UNSEEDED[:3]), _printed("loss 0.25", "loss 0.25", "loss 0.75", inductor=False)):
            verdict = decide(stages, None, [control])
            assert (verdict.outcome, verdict.passes, verdict.run_to_run) == ("ok", True, None)
            assert f"but the control run (backend=\"eager\", again) {status}, so whether they change from run to run " \
                   "is not known: not judged." in verdict.headline
            assert verdict.printed is not None and verdict.next_steps[0].startswith(f"The control run (backend=\"eager\", "
                                                                                   f"again) {status}")
        stages, _ = _diagnosed(LOG, "as_written")
        assert decide(stages, None, [control]).outcome == "differs"  # (its dropout draws Inductor's own random numbers)


@pytest.mark.parametrize("variant, log, outcome", [("fixed", FIXED, "rounding"), ("as_written", LOG, "differs")])
def test_the_recorded_stages_keep_their_verdicts_with_a_control_run(variant, log, outcome):
    """wrong_results.py seeds before each comparison and prints compiled against eager in one run: backend="eager"
    prints 0 each time it runs, so its control run prints eager's lines again and nothing is left out."""
    stages, _ = _diagnosed(log, variant)
    control = _control((STAGE_OUTPUTS / variant / "eager.txt").read_text())
    verdict = decide(stages, None, [control], _seed())
    assert (verdict.outcome, verdict.run_to_run, verdict.printed.total) == (outcome, 0, 2)
    # It seeds (torch.manual_seed, read from the program), and its eager runs printed alike: no third run is needed,
    # and the verdict says what it rests on
    assert not another_control(_seed(), run_to_run(stages[0], [control]))
    assert verdict.next_steps[0] == ('The control run (backend="eager", again) printed the same numbers as eager\'s, '
                                     f"and wrong_results.py seeds (torch.manual_seed at line {_seed().line}): the "
                                     "lines compared do not change from run to run.")


@pytest.mark.parametrize("variant, log, status, mark", [("fixed", FIXED, 0, "Diagnosis: OK, FLOAT32 ROUNDING"),
                                                         ("as_written", LOG, 1, "Diagnosis: RUNS, DIFFERS FROM EAGER")])
def test_diagnose_exits_0_on_rounding_and_1_where_the_graphs_explain_the_change(monkeypatch, tmp_path, capsys, variant,
                                                                                 log, status, mark):
    """The exit status a CI reads, the verdict the stages above give (the runs themselves stubbed out: they need torch)."""
    import compilescope.cli.diagnose as cli
    from compilescope.diagnose import DiagnoseResult
    from ..conftest import run_cli

    stages, _ = _diagnosed(log, variant)
    result = DiagnoseResult(argv=["python", "wrong_results.py"], cwd=str(tmp_path), outcomes=stages,
                            verdict=decide(stages))
    monkeypatch.setattr(cli, "diagnose", lambda *args: result)
    assert run_cli("diagnose", "--no-browser", "-o", tmp_path / "out", "--", "true") == status
    assert mark in capsys.readouterr().err
    doc = json.loads((tmp_path / "out" / "diagnosis.json").read_text())
    assert doc["verdict"]["outcome"] == ("rounding" if status == 0 else "differs")
    page = (tmp_path / "out" / "index.html").read_text()
    assert ('<div class="verdict ok"' in page) == (status == 0)


def test_the_model_eval_recompile_is_said_to_be_expected_in_diagnose():
    """[0/1] recompiled forward for model.eval() (recompile_reasons "0/0: self._modules['drop'].training == True"):
    one compile per mode, nothing to avoid; diagnose said '1 recompile: they cost speed ... how to avoid them'."""
    stages, _ = _diagnosed(LOG, "as_written")
    assert stages[2].expected_recompiles == {"[0/1]": "training"}
    (step,) = [s for s in decide(stages).next_steps if "recompile" in s]
    assert step.startswith("The run as written had 1 recompile ([0/1]), expected: a module's mode no compiled version "
                           "had (.eval() or .train(): one compile per mode). Nothing to avoid")
    assert "how to avoid" not in step


def test_the_random_advice_says_later_random_draws_differ_too():
    """Inductor's seeds come from torch's generator through one inductor_seeds (aten.randint.low_out) per call of
    [0/0], which its post-grad graph holds; eager's bernoulli draws others, so the generator moves on differently."""
    (graph,) = [payload for env, payload in raw_records(torch213(LOG))
                if env.get("artifact", {}).get("name") == "inductor_post_grad_graph" and env["frame_compile_id"] == 0]
    assert "torch.ops.prims.inductor_seeds.default" in graph
    with read_trace(torch213(LOG)) as trace:
        note = numerics(trace).random_note
    assert "inductor_seeds" in note and "the random numbers the program draws after it" in note
    with read_trace(torch213(FIXED)) as trace:
        assert numerics(trace).random_note is None


# What `compilescope diagnose` captured of each stage's run of three more programs (tests/data/torch213/programs/<name>.py,
# its outputs/<stage>.txt copied as written; torch 2.13 CPU): see the README's diagnose_printed row.
PRINTED = Path(__file__).parents[1] / "data" / "torch213" / "logs" / "diagnose_printed"


def _recorded(name: str):
    """Those stages as decide() reads them (the backend Inductor, its graphs explaining nothing: none of these
    programs draws a random number in its compiled function, and all compute float32), eager's control run where
    diagnose made one, and the program's seed as diagnose reads it from the file."""
    outputs = {path.stem: path.read_text() for path in (PRINTED / name).glob("*.txt")}
    stages = _printed(outputs["eager"], outputs["aot_eager"], outputs["backend"])
    control = _control(outputs["eager_control"]) if "eager_control" in outputs else None
    program = PROGRAM.parent / f"{name}.py"
    return stages, control, program_seed(f"{name}.py", program.read_text()), outputs


def test_a_line_eager_printed_alike_twice_by_chance_gets_a_second_control_run():
    """unseeded_coin.py prints sum(relu(arange(4) + 1)) = 10, right in every stage, and a coin flip (torch.rand() > 0.5,
    never seeded, outside the compiled function). In diagnose's run eager and its control run both printed coin 0,
    aot_eager 1, Inductor 0: one control run could not tell the coin from a change, and the verdict was "AOTAutograd
    changes them" (exit 1), said of the "same seed" in a program that sets none."""
    stages, control, seed, outputs = _recorded("unseeded_coin")
    assert (seed.call, seed.line) == (None, None)
    assert [stage.printed for stage in stages] == [["sum 10.0", "coin 0"], ["sum 10.0", "coin 1"], ["sum 10.0", "coin 0"]]
    unstable = run_to_run(stages[0], [control])
    assert unstable == set()  # eager printed the coin alike twice
    # One control run: the change stands, said to rest on that run, the headline true of the program's seed
    verdict = decide(stages, None, [control], seed)
    assert (verdict.outcome, verdict.stage, verdict.printed.lines) == ("differs", "aot_autograd", [("coin 0", "coin 1")])
    assert "(same program, no seed set in unseeded_coin.py; 1 line, below)" in verdict.headline
    assert "same seed" not in verdict.headline
    assert verdict.next_steps[0].startswith('The lines compared rest on one control run (backend="eager", again): a '
                                            "line that changes from run to run (an unseeded random draw) can print "
                                            "alike in eager's two runs by chance")
    # so diagnose runs eager a third time: a program that sets no seed, a changed line left
    assert another_control(seed, unstable)
    # The coin's other side in that run (as aot_eager's run of the program printed it: the coin is drawn outside the
    # compiled graph) shows the line changes from run to run: not compared, and the right sum leaves nothing changed
    again = stage_outcome(EAGER_CONTROL_AGAIN, control.facts, None, outputs["aot_eager"])
    verdict = decide(stages, None, [control, again], seed)
    assert (verdict.outcome, verdict.passes, verdict.printed, verdict.run_to_run) == ("ok", True, None, 1)
    assert verdict.next_steps[0].startswith("1 printed line changes from run to run under eager too: not compared "
                                            "(eager's control runs printed other numbers in them")
    # Eager printing coin 0 a third time: the verdict still names the change, now resting on three runs of eager
    again = stage_outcome(EAGER_CONTROL_AGAIN, control.facts, None, outputs["eager"])
    verdict = decide(stages, None, [control, again], seed)
    assert (verdict.outcome, verdict.run_to_run) == ("differs", 0)
    assert verdict.next_steps[0].startswith("The lines compared printed the same numbers in each of eager's 3 runs "
                                            "(its stage and two control runs): taken for the program's results")
    # The second control failing leaves the first's evidence, said so; the first failing leaves none (not judged)
    failed = _control("", returncode=1)
    verdict = decide(stages, None, [control, failed], seed)
    assert verdict.outcome == "differs" and verdict.next_steps[0].startswith(
        'The lines compared rest on one control run (backend="eager", again; the second failed)')
    assert not another_control(seed, run_to_run(stages[0], [failed]))


def test_a_seeded_program_or_one_whose_eager_runs_differ_decides_the_second_control_run():
    """The cost: no control run where the stages print the same numbers; one where a seeded program's eager runs print
    the same numbers (wrong_results.py's case); a second only where a changed line may be chance."""
    seeded = _seed()
    assert another_control(seeded, set()) is False
    assert another_control(seeded, {("coin #", 0)}) is True  # a seed, yet some line changed from run to run
    assert another_control(None, set()) is True  # the program's file could not be read
    assert another_control(program_seed("p.py", "print(1)"), set()) is True
    assert another_control(None, None) is False  # the control run failed: nothing is judged on printed numbers


def test_the_seed_is_read_from_the_programs_file():
    """wrong_results.py calls torch.manual_seed(0) first (its docstring speaks of "the same seed" without a call);
    unseeded_coin.py never seeds; a comment, a string, or torch.initial_seed() (which reads the seed), is no seeding
    call; a file that is no Python tells nothing."""
    seed = _seed()
    assert (seed.file, seed.call, seed.line) == ("wrong_results.py", "torch.manual_seed",
                                                 line_holding(PROGRAM, "torch.manual_seed(0)"))
    assert seed.alike == f"same program, same seed: torch.manual_seed at line {seed.line}"
    assert program_seed("unseeded_coin.py", (PROGRAM.parent / "unseeded_coin.py").read_text()).call is None
    for source, call in (("x = 1\n# torch.manual_seed(0)\nprint(torch.initial_seed())\n", None),
                         ('"""Never seeds (its input is torch.arange)."""\nprint("seed(1)")', None),
                         ("import random\nrandom.seed(3)\n", "random.seed"), ("np.random.seed (0)", "np.random.seed"),
                         ("set_seed(42)", "set_seed"), ("L.seed_everything(7, workers=True)", "L.seed_everything"),
                         ("torch.cuda.manual_seed_all(1)", "torch.cuda.manual_seed_all")):
        assert program_seed("p.py", source).call == call, source
    assert program_seed("/w/train.py", "print(1)").alike == "same program, no seed set in train.py"
    assert program_seed("run.py", "#!/bin/sh\nexec python train.py") is None


def test_a_call_that_sets_no_known_seed_is_no_same_seed():
    """random.seed() and torch.seed() seed from the OS or the clock, np.random.SeedSequence(1) seeds no generator:
    each was "same program, same seed". A seed given by keyword or **kwargs still counts; a source too deep or long
    for Python's parser is no Python diagnose can read (it was an internal error after every run)."""
    for source in ("import random\nrandom.seed()\n", "random.seed(None)", "torch.seed()", "torch.cuda.seed()",
                   "torch.cuda.seed_all()", "rng = np.random.SeedSequence(1)", "L.seed_everything(workers=True)",
                   "print(torch.initial_seed())"):
        assert program_seed("p.py", source).alike == "same program, no seed set in p.py", source
    assert program_seed("p.py", "random.seed()\nx = 1\ntorch.manual_seed(0)").line == 3
    for source, call in (("set_seed(seed=42)", "set_seed"), ("random.seed(a=3)", "random.seed"),
                         ("set_seed(**config)", "set_seed")):
        assert program_seed("p.py", source).call == call, source
    for source in ("x = " + "-" * 100000 + "1", "x = " + "(" * 1000 + ")" * 1000):
        assert program_seed("p.py", source) is None


def test_a_program_that_never_seeds_is_not_said_to_share_a_seed():
    """unseeded_wrong.py sums relu(arange(4) + 1) = 1 + 2 + 3 + 4 = 10 with Inductor's CPU relu broken on purpose
    ("accuracy": x + 1 in place of relu, so (x + 1) + 1 = 2 + 3 + 4 + 5 = 14); it never seeds, and its control run
    printed eager's 10 again. The headline said "same program, same seed"."""
    stages, control, seed, _ = _recorded("unseeded_wrong")
    assert [stage.printed for stage in stages] == [["sum 10.0"], ["sum 10.0"], ["sum 14.0"]]
    assert another_control(seed, run_to_run(stages[0], [control]))  # (its input is not random, but nothing says so)
    verdict = decide(stages, None, [control], seed)
    assert (verdict.outcome, verdict.stage) == ("differs", "inductor")
    assert ('than with backend="aot_eager" (same program, no seed set in unseeded_wrong.py; 1 line, below): Inductor '
            "changes them.") in verdict.headline
    assert verdict.to_json()["printed"]["alike"] == "same program, no seed set in unseeded_wrong.py"
    assert decide(stages).printed.alike == "same program"  # (no file read: nothing said of a seed)


def test_a_percentage_is_a_result_unless_its_line_tells_progress():
    """percent_metric.py (seeded) prints a finished bar "[==========>] 100%" and "accuracy" as a percentage: the share
    of 1000 normal draws whose relu(x + 1) exceeds 1 (x > 0: about 50%, eager printed 49.4%), with Inductor's CPU relu
    broken on purpose (x + 1 in place of relu: x + 2 > 1, x > -1, about 84.1%; it printed 84.2%). Every percentage
    was left out as a ratio, and diagnose said OK."""
    stages, _, seed, _ = _recorded("percent_metric")
    assert [stage.printed for stage in stages] == [["accuracy 49.4%"], ["accuracy 49.4%"], ["accuracy 84.2%"]]
    verdict = decide(stages, seed=seed)
    assert (verdict.outcome, verdict.stage, verdict.passes) == ("differs", "inductor", False)
    assert verdict.printed.lines == [("accuracy 49.4%", "accuracy 84.2%")]
    # metrics are compared, within rounding as any number
    for before, after, outcome in (("accuracy 97.3%", "accuracy 12.0%", "differs"), ("loss share 12%", "loss share 40%",
                                   "differs"), ("top-1: 76.1 %", "top-1: 76.2 %", "differs"),
                                   ("acc=97.30%", "acc=97.31%", "rounding")):
        assert decide(_printed(before, before, after)).outcome == outcome, after
    # a progress line's percentage is not (its other numbers still are)
    for before, after in (("[=====>    ] 45%", "[======>   ] 62%"), ("45%|####5     | 45/100", "62%|######2   | 45/100"),
                          ("45% done", "62% done"), ("epoch 3: 45% complete, loss 0.25", "epoch 3: 62% complete, loss 0.25"),
                          ("GPU util 87%", "GPU util 91%"), ("CPU usage 45%", "CPU usage 12%"),
                          ("eta 45%", "eta 12%"), ("2.5% faster", "7.1% faster")):
        assert decide(_printed(before, before, after)).outcome == "ok", after
    verdict = decide(_printed("epoch 3: 45% done, loss 0.25", "epoch 3: 45% done, loss 0.25", "epoch 3: 62% done, loss 0.5"))
    assert verdict.printed.lines == [("epoch 3: 45% done, loss 0.25", "epoch 3: 62% done, loss 0.5")]


def test_a_percentage_beside_progress_words_or_brackets_is_still_a_result():
    """A markdown table's "% |", a "[*]" bullet and a "done" earlier on the line made every percentage of the line
    progress: percent_metric.py's "accuracy 84.2%" printed so was never compared. A bar needs bar characters right
    after tqdm's "%|" or 3 inside "[...]"; a progress word masks only the percentage it qualifies."""
    output = "| inductor | 84.2% |\n[*] accuracy: 49.4%\nEpoch 3 done: val acc 91.2%\naccuracy: 49.4%"
    assert printed_lines(output) == output.splitlines()
    for before, after in (("| inductor | 49.4% |", "| inductor | 84.2% |"), ("[*] accuracy: 49.4%", "[*] accuracy: 84.2%"),
                          ("Epoch 3 done: val acc 91.2%", "Epoch 3 done: val acc 12.0%"),
                          ("45% done, accuracy 49.4%", "62% done, accuracy 84.2%"),
                          ("validation done, acc 91.2%", "validation done, acc 12.0%")):
        assert decide(_printed(before, before, after)).outcome == "differs", after
    # tqdm's empty and full bars, and the words' percentage whatever side the word is on, are still progress
    for before, after in (("  0%|          | 0/100", " 10%|#         | 0/100"),
                          ("100%|██████████| 10/10", " 90%|█████████ | 10/10"), ("[>         ] 5%", "[=>        ] 12%"),
                          (" 45%|####5     | 45/100", " 45%|####6     | 45/100"),  # (an ascii bar's partial digit)
                          ("progress: 45%, accuracy 49.4%", "progress: 62%, accuracy 49.4%"),
                          ("overhead of 3%", "overhead of 9%")):
        assert decide(_printed(before, before, after)).outcome == "ok", after


def _stubbed_diagnose(monkeypatch, work: Path, argv: list[str], outputs: dict[str, str]):
    """The stages diagnose ran for the program of argv (each run stubbed: it printed outputs[its key]), and its
    result."""
    from compilescope.diagnose import DiagnoseOptions, Diagnoser
    from compilescope.runner import Program

    ran = []

    def stage(self, spec, which, **kwargs):
        ran.append(spec.key)
        facts = RunFacts(argv=argv, env=dict(spec.env), returncode=0, seconds=1.0)
        outcome = stage_outcome(spec, facts, None, outputs[spec.key])
        outcome.compiles = 1
        return outcome

    monkeypatch.setattr(Diagnoser, "_stage", stage)
    result = Diagnoser(Program(argv, True), str(work), DiagnoseOptions(), lambda _: None).run()
    return ran, result


def test_diagnose_runs_eager_a_third_time_only_where_a_change_may_be_chance(monkeypatch, tmp_path):
    """The runs diagnose makes (each stage's run stubbed with what the recorded run printed): wrong_results.py seeds
    and its control run prints eager's numbers again, one control run; unseeded_coin.py sets no seed, a second, whose
    coin (as aot_eager's run printed it) is then left out."""
    def diagnosed(program: Path, outputs: dict[str, str]):
        return _stubbed_diagnose(monkeypatch, tmp_path, ["python", str(program)], outputs)

    seeded = {spec.key: (STAGE_OUTPUTS / "fixed" / f"{spec.key}.txt").read_text() for spec in (EAGER, AOT_EAGER, BACKEND)}
    seeded[EAGER_CONTROL.key] = seeded[EAGER.key]
    ran, result = diagnosed(PROGRAM, seeded)
    assert ran == ["eager", "aot_eager", "backend", "eager_control"]
    assert (result.seed.call, result.verdict.run_to_run) == ("torch.manual_seed", 0)
    assert [run.spec.key for run in result.runs] == ran
    _, _, _, coin = _recorded("unseeded_coin")
    coin[EAGER_CONTROL_AGAIN.key] = coin["aot_eager"]
    ran, result = diagnosed(PROGRAM.parent / "unseeded_coin.py", coin)
    assert ran == ["eager", "aot_eager", "backend", "eager_control", "eager_control_2"]
    assert (result.seed.call, result.verdict.outcome, result.verdict.run_to_run) == (None, "ok", 1)
    # The same stages but every line printed alike: no control run at all (the common case costs nothing)
    same = {key: seeded[EAGER.key] for key in seeded}
    ran, result = diagnosed(PROGRAM, same)
    assert ran == ["eager", "aot_eager", "backend"] and result.controls == []


def test_a_seed_set_in_a_local_module_the_program_imports_is_found_there(monkeypatch, tmp_path):
    """wrong_results.py with its torch.manual_seed calls moved into a helper of a module beside it (`from helpers
    import reset`; `reset(0)`, a name without "seed"): the program seeds as before, so its change costs one control
    run as the recorded run's did, and the seed is said to be in helpers.py. Followed two imports deep (helpers.py
    importing rng.py that seeds); a third is not read, nor an installed package."""
    seed_line = line_holding(PROGRAM, "torch.manual_seed(0)")
    text = PROGRAM.read_text()
    assert text.count("torch.manual_seed(") == 3
    lines = text.replace("torch.manual_seed(", "reset(").splitlines()
    lines.insert(seed_line - 1, "from helpers import reset")  # (above the first call)
    (tmp_path / "wrong_results.py").write_text("\n".join(lines) + "\n")
    helper = "import torch\n\n\ndef reset(value):\n    torch.manual_seed(value)\n"
    (tmp_path / "helpers.py").write_text(helper)
    seeded = {spec.key: (STAGE_OUTPUTS / "fixed" / f"{spec.key}.txt").read_text() for spec in (EAGER, AOT_EAGER, BACKEND)}
    seeded[EAGER_CONTROL.key] = seeded[EAGER.key]
    seeded[EAGER_CONTROL_AGAIN.key] = seeded[EAGER.key]
    work = tmp_path / "work"
    argv = ["python", str(tmp_path / "wrong_results.py")]
    ran, result = _stubbed_diagnose(monkeypatch, work, argv, seeded)
    assert ran == ["eager", "aot_eager", "backend", "eager_control"]
    assert (result.seed.call, result.seed.line, result.seed.module) == ("torch.manual_seed", 5, "helpers.py")
    assert result.seed.alike == "same program, same seed: torch.manual_seed at line 5 of helpers.py"
    # Two imports deep: helpers.py imports rng.py, which seeds at its import
    (tmp_path / "helpers.py").write_text("import rng\n\n\ndef reset(value):\n    rng.reset(value)\n")
    (tmp_path / "rng.py").write_text("import random\n\nrandom.seed(3)\n")
    ran, result = _stubbed_diagnose(monkeypatch, work, argv, seeded)
    assert (ran[-1], result.seed.call, result.seed.where) == ("eager_control", "random.seed", "line 3 of rng.py")
    # Three deep, or not there: no seed known, a second control run as for any unseeded program
    for where in ("import deeper\n", "import os\n"):
        (tmp_path / "rng.py").write_text(where)
        (tmp_path / "deeper.py").write_text("import random\nrandom.seed(3)\n")
        ran, result = _stubbed_diagnose(monkeypatch, work, argv, seeded)
        assert (ran[-1], result.seed.call) == ("eager_control_2", None), where
    # A module that only defines a seeding function the program never calls does not seed it: the program imports
    # and calls helpers.unrelated, helpers.reset seeds; no seed known, a second control run
    (tmp_path / "helpers.py").write_text("import torch\n\n\ndef reset(value):\n    torch.manual_seed(value)\n\n\n"
                                         "def unrelated(value):\n    return value\n")
    (tmp_path / "wrong_results.py").write_text("\n".join(lines).replace("reset", "unrelated") + "\n")
    ran, result = _stubbed_diagnose(monkeypatch, work, argv, seeded)
    assert (ran[-1], result.seed.call) == ("eager_control_2", None)
    # A name the program calls is the module's only through the import that binds it. The program imports helpers
    # (whose reset seeds) but calls a reset of its own, or rng.reset of a module rng whose reset seeds nothing: no
    # seed known, a second control run. Through helpers' own name it does seed (`import helpers as h`, `h.reset(0)`).
    (tmp_path / "helpers.py").write_text(helper)
    (tmp_path / "rng.py").write_text("def reset(value):\n    return value\n")
    own = "import helpers\n\n\ndef reset(value):\n    return value\n\n"
    for imports, call in ((own, "reset("), ("import helpers\nimport rng\n", "rng.reset("),
                          ("import helpers as h\n", "h.reset(")):
        program = "\n".join(lines).replace("reset(", call).replace("from helpers import reset\n", imports)
        (tmp_path / "wrong_results.py").write_text(program + "\n")
        ran, result = _stubbed_diagnose(monkeypatch, work, argv, seeded)
        seeded_by = ("eager_control", "torch.manual_seed", "helpers.py") if call == "h.reset(" else (
            "eager_control_2", None, None)
        assert (ran[-1], result.seed.call, result.seed.module) == seeded_by, imports


def test_a_modules_seeding_calls_that_run_are_those_of_its_import_and_of_the_functions_called():
    """module_seed: a call at module level (in an `if` too) runs on import; one in a function only where the importer
    calls that function's name; not in a method, a lambda, or a function nobody calls."""
    source = ("import random\nimport torch\n\n\ndef reset(value):\n    torch.manual_seed(value)\n\n\n"
              "class Seeder:\n    def seed(self):\n        random.seed(1)\n\n\nlater = lambda: random.seed(2)\n")
    assert module_seed("h.py", source, frozenset()).call is None
    assert module_seed("h.py", source, imported_calls("from h import reset\nreset(0)\n").named[(0, "h")]).line == 6
    assert imported_calls("import h\nh.reset(0)\n").named == {(0, "h"): {"reset"}}
    assert (module_seed("h.py", source + "if True:\n    random.seed(3)\n", frozenset()).line,
            module_seed("h.py", source + "if True:\n    random.seed(3)\n", frozenset()).call) == (16, "random.seed")


def test_the_functions_a_program_calls_of_a_module_are_those_its_imports_bind():
    """imported_calls: a call is of a module's function only through the name an import binds to it: a bare name
    imported from the module (aliased too), an attribute of a name bound to the module (`import a.b` binds a; `from
    pkg import utils` may bind a submodule); not a function of the program's own, nor another module's. A bare call
    the program binds nowhere may be of a module it imports with `*` (whether the module defines it, its file says)."""
    program = ("import utils as u\nimport other\nimport pkg.rng\nfrom pkg import helpers\nfrom .seeding import reset as r\n"
               "from star import *\n\n\ndef seed_everything(value):\n    return value\n\n\n"
               "seed_everything(0)\nother.seed_everything(1)\nu.configure(2)\npkg.rng.seed_all(3)\nhelpers.reset(4)\n"
               "r(5)\nanything(6)\nsetup(7)\n")
    assert imported_calls(program) == (
        {(0, "utils"): {"configure"}, (0, "other"): {"seed_everything"}, (0, "pkg.rng"): {"seed_all"},
         (0, "pkg.helpers"): {"reset"}, (1, "seeding"): {"reset"}},
        {(0, "star"): {"anything", "setup"}},  # (seed_everything is the program's own)
    )
    assert imported_calls("import pkg\npkg.utils.reset(0)\n") == ({}, {})  # (pkg.utils is no module it imports)
    assert imported_calls("not python(") == ({}, {})


def test_a_module_the_program_imports_is_looked_for_where_python_looks(monkeypatch, tmp_path):
    """Python finds a script's absolute imports in the script's folder (sys.path[0]), and those of `python -m
    app.prog` in the working folder: a helpers.py a folder above the script is not the module it imports (Python
    would raise ModuleNotFoundError), nor is one beside a module run with -m."""
    lines = PROGRAM.read_text().replace("torch.manual_seed(", "reset(").splitlines()
    lines.insert(line_holding(PROGRAM, "torch.manual_seed(0)") - 1, "from helpers import reset")
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "wrong_results.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "helpers.py").write_text("import torch\n\n\ndef reset(value):\n    torch.manual_seed(value)\n")
    seeded = {spec.key: (STAGE_OUTPUTS / "fixed" / f"{spec.key}.txt").read_text() for spec in (EAGER, AOT_EAGER, BACKEND)}
    seeded[EAGER_CONTROL.key] = seeded[EAGER_CONTROL_AGAIN.key] = seeded[EAGER.key]
    work = tmp_path / "work"
    monkeypatch.chdir(tmp_path)
    script = [sys.executable, str(app / "wrong_results.py")]
    module = [sys.executable, "-m", "app.wrong_results"]
    ran, result = _stubbed_diagnose(monkeypatch, work, script, seeded)
    assert (ran[-1], result.seed.call) == ("eager_control_2", None)  # (as for an unseeded program)
    ran, result = _stubbed_diagnose(monkeypatch, work, module, seeded)
    assert (ran[-1], result.seed.call, result.seed.where) == ("eager_control", "torch.manual_seed",
                                                              "line 5 of ../helpers.py")
    (tmp_path / "helpers.py").rename(app / "helpers.py")
    ran, result = _stubbed_diagnose(monkeypatch, work, script, seeded)
    assert (ran[-1], result.seed.call, result.seed.where) == ("eager_control", "torch.manual_seed",
                                                              "line 5 of helpers.py")
    ran, result = _stubbed_diagnose(monkeypatch, work, module, seeded)
    assert (ran[-1], result.seed.call) == ("eager_control_2", None)


def test_a_module_run_with_python_path_finds_its_imports_on_that_path(monkeypatch, tmp_path):
    """`PYTHONPATH=../lib python -m app.wrong_results` from another folder: Python finds app, and the program's
    `from app import helpers` (and a top-level `import seeding`), in lib, the PYTHONPATH entry, after the working
    folder; a relative `from . import helpers` in app, though app is not below the working folder. Each seeds as the
    recorded run did (one control run), at line 5 of the module it imports."""
    lines = PROGRAM.read_text().replace("torch.manual_seed(", "helpers.reset(").splitlines()
    seed_line = line_holding(PROGRAM, "torch.manual_seed(0)")
    app = tmp_path / "lib" / "app"
    app.mkdir(parents=True)
    (app / "__init__.py").write_text("")
    helper = "import torch\n\n\ndef reset(value):\n    torch.manual_seed(value)\n"
    (app / "helpers.py").write_text(helper)
    (tmp_path / "lib" / "seeding.py").write_text(helper)
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.chdir(run)
    monkeypatch.setenv("PYTHONPATH", os.path.join(os.pardir, "lib"))
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))  # (as a Python started with that PYTHONPATH has it)
    seeded = {spec.key: (STAGE_OUTPUTS / "fixed" / f"{spec.key}.txt").read_text() for spec in (EAGER, AOT_EAGER, BACKEND)}
    seeded[EAGER_CONTROL.key] = seeded[EAGER_CONTROL_AGAIN.key] = seeded[EAGER.key]
    for imports, module in (("from app import helpers", "helpers.py"), ("from . import helpers", "helpers.py"),
                            ("import seeding as helpers", "../seeding.py")):
        (app / "wrong_results.py").write_text("\n".join([*lines[:seed_line - 1], imports, *lines[seed_line - 1:]]) + "\n")
        ran, result = _stubbed_diagnose(monkeypatch, tmp_path / "work", [sys.executable, "-m", "app.wrong_results"],
                                         seeded)
        assert (result.seed.file, result.seed.call, result.seed.where) == (
            str(app / "wrong_results.py"), "torch.manual_seed", f"line 5 of {module}"), imports
        assert ran[-1] == "eager_control", imports


def test_the_seed_of_a_program_run_as_a_module_is_read_from_its_file(monkeypatch, tmp_path):
    """`diagnose -m models.wrong_results` (wrong_results.py in a package of the working directory) read no file, so
    its change cost a second control run as an unseeded program's does; its file is found as `python -m` finds it, and
    its package is not imported to find it (its __init__ here fails if it is). A package's __main__.py is its file;
    a word after the module naming a .py file is the program's argument, not its file."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "__init__.py").write_text('raise SystemExit("models imported")\n')
    (models / "wrong_results.py").write_text(PROGRAM.read_text())
    (models / "__main__.py").write_text("import numpy as np\nnp.random.seed(7)\n")
    monkeypatch.chdir(tmp_path)
    seeded = {spec.key: (STAGE_OUTPUTS / "fixed" / f"{spec.key}.txt").read_text() for spec in (EAGER, AOT_EAGER, BACKEND)}
    seeded[EAGER_CONTROL.key] = seeded[EAGER.key]
    work = tmp_path / "work"
    seed_line = line_holding(PROGRAM, "torch.manual_seed(0)")
    for argv, seed in ((["-m", "models.wrong_results", "--data", "x.py"], ("models/wrong_results.py",
                        "torch.manual_seed", seed_line)),
                       (["-u", "-m", "models"], ("models/__main__.py", "np.random.seed", 2))):
        ran, result = _stubbed_diagnose(monkeypatch, work, [sys.executable, *argv], seeded)
        assert ran == ["eager", "aot_eager", "backend", "eager_control"], argv
        assert (result.seed.file, result.seed.call, result.seed.line) == seed
    seeded[EAGER_CONTROL_AGAIN.key] = seeded[EAGER.key]
    ran, result = _stubbed_diagnose(monkeypatch, work, [sys.executable, "-m", "no_such_module"], seeded)
    assert result.seed is None and len(ran) == 5  # not found: nothing known of a seed, a second control run
    assert "models" not in sys.modules

"""compilescope check: 0 on a clean run, 1 with one line per violated rule, JUnit XML with a test case per rule."""

from __future__ import annotations

import gzip
import json
import math
import re

import pytest

from ..conftest import TORCH213_LOGS, cuda211, peer, run_cli, skip_or_fail, torch213, torch214
from ..gpu_variants import RESIDUAL_SKIP, log_text, with_cudagraph_skip
from .helpers import copy_fleet, cut_inside, log, rank_dir

from compilescope.wording import format_seconds, format_seconds_change


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_clean_run_passes_every_rule(capsys):
    # The two runs of one program took 30.3s and 44.1s to compile on a shared machine (another generation of
    # these fixtures: 16.2s and 37.6s): within the noise `diff` allows by default, which the gate says.
    rc = run_cli("check", log("base"), "--max-graph-breaks", "0", "--max-recompiles", "1", "--no-failures",
                 "--max-compile-seconds", "600", "--baseline", log("base_again"))
    out = capsys.readouterr().out
    assert rc == 0, out
    assert lines(out)[1:] == ["compilescope check: 9 rules passed (max-graph-breaks, max-recompiles, no-failures, "
                              "max-compile-seconds, baseline-graph-breaks, baseline-recompiles, "
                              "baseline-compile-time, baseline-failures, baseline-cudagraphs)"]
    assert lines(out)[0].startswith("baseline-compile-time passed: compile time 30.25 s → 44.13 s: ")


def test_without_rules_failures_are_checked(capsys):
    # and the line that passes says so: which rule it checked, not only how many
    assert run_cli("check", log("base")) == 0
    assert capsys.readouterr().out.splitlines() == ["compilescope check: 1 rule passed (no-failures)"]


@pytest.mark.parametrize("name, where, expr, assumed", [
    # The one propagate_real_tensors_provenance record of each log: torch 2.14's export_draft.log (forward's
    # `if n > 2:`, line 25 under 2.14) and the peer's export.log (tlparse's test_draft_export.py).
    ("export_draft", "export_draft.py:25 in forward", "u0 > 2", "True"),
    ("peer_export", "test_draft_export.py:279 in forward", "Eq((((-u0)//3)) + 5, 0)", "False"),
])
def test_a_draft_export_issue_fails_the_gate_as_a_failed_compile_does(name, where, expr, assumed, capsys):
    from ..conftest import peer

    path = torch214("export_draft.log") if name == "export_draft" else peer("export.log")
    raw = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    [record] = [json.loads(line.split("] ", 1)[1]) for line in raw.splitlines()
                if line.startswith("V") and '{"propagate_real_tensors_provenance"' in line]
    payload = record["propagate_real_tensors_provenance"]
    assert (payload["expr"], str(payload["result"])) == (expr, assumed)
    line = int(where.split(":")[1].split()[0])
    assert payload["user_stack"][-1]["line"] == line
    # With no rule given (as --no-failures is then), and with --no-export-issues.
    for flags in ([], ["--no-export-issues"]):
        assert run_cli("check", path, *flags) == 1
        out = capsys.readouterr().out
        assert lines(out)[-1] == (f"no-export-issues: 1 draft export issue, none allowed: Data Dependent Error at {where}: "
                                  f"export could not tell whether {expr} always holds: it assumed {assumed}, and the "
                                  "graph asserts it")
    # Rules given without it leave it out, as they leave out --no-failures.
    assert run_cli("check", path, "--max-graph-breaks", "0") == 0
    capsys.readouterr()


def test_a_log_without_an_export_has_no_export_rule_unless_asked(capsys):
    # torch 2.14's export.log was recorded under TORCH_TRACE, where torch 2.13/2.14 write none of export's records
    # (tests/data/torch213/programs/export.py): no export to check, so the default is --no-failures alone.
    assert run_cli("check", "--json", torch214("export.log")) == 0
    assert [r["rule"] for r in json.loads(capsys.readouterr().out)["rules"]] == ["no-failures"]
    assert run_cli("check", "--json", "--no-export-issues", torch214("graph_breaks.log")) == 0
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert (rule["rule"], rule["passed"], rule["message"]) == ("no-export-issues", True,
                                                               "0 draft export issues (no export in the log)")


def test_a_draft_export_issue_the_baseline_lacks_fails_the_baseline_gate(capsys):
    """--baseline checks no absolute rule, so no-export-issues was off and the issue passed: 'check export_draft.log
    --baseline export.log' exited 0. torch 2.14's export_draft.log holds one propagate_real_tensors_provenance record
    (forward's `if n > 2:` at line 25, u0 > 2 assumed True: the test above); its export.log no export record at all."""
    draft, plain = torch214("export_draft.log"), torch214("export.log")
    issue = ("Data Dependent Error at export_draft.py:25 in forward: export could not tell whether u0 > 2 always "
             "holds: it assumed True, and the graph asserts it")
    assert run_cli("check", "--json", draft, "--baseline", plain) == 1
    [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if not r["passed"]]
    assert (rule["rule"], rule["message"], rule["details"]) == (
        "baseline-export-issues", f"baseline-export-issues: {issue}", [issue])
    # The same issue in the baseline is no regression, nor is one the run no longer has.
    for run, base in ((draft, draft), (plain, draft)):
        assert run_cli("check", "--json", run, "--baseline", base) == 0
        [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if r["rule"] == "baseline-export-issues"]
        assert (rule["passed"], rule["message"]) == (True, "no regression")
    # Where neither side holds a torch.export, the rule is not among the baseline's.
    assert run_cli("check", "--json", plain, "--baseline", torch214("graph_breaks.log")) == 0
    assert [r["rule"] for r in json.loads(capsys.readouterr().out)["rules"]] == [
        "baseline-graph-breaks", "baseline-recompiles", "baseline-compile-time", "baseline-failures",
        "baseline-cudagraphs"]


@pytest.mark.parametrize("flags, message", [
    # Each names what broke it, so a CI log says where to look: diff_pair.py's break variant calls
    # torch._dynamo.graph_break() at line 33, in f (def at line 30); f and the resume function after the break each
    # recompile once, for the second batch size.
    (["--max-graph-breaks", "0"], "max-graph-breaks: 1 distinct graph break, at most 0 allowed: Call to "
                                  "`torch._dynamo.graph_break()` at diff_pair.py:33"),
    (["--max-recompiles", "1"], "max-recompiles: 2 recompiles, at most 1 allowed: f (diff_pair.py:30) recompiled once, "
                                "and 1 more function"),
])
def test_each_absolute_rule_fails_with_its_message(flags, message, capsys):
    assert run_cli("check", log("break"), *flags) == 1
    assert lines(capsys.readouterr().out) == [message]


def test_compile_time_rule_names_the_slowest_compile_and_a_cold_cache(capsys):
    # diff_break.log's compilation_metrics: [0/0] (f) took longest; every fx_graph_cache lookup it logged missed.
    raw = log_text(log("break"))
    metrics = {m[1]: (m[2], float(m[3])) for m in re.finditer(
        r'"compilation_metrics": \{"compile_id": "([\d/]+)".*"co_name": "(\w+)".*"entire_frame_compile_time_s": ([\d.]+)', raw)}
    assert len(metrics) == 4 and max(metrics.values(), key=lambda m: m[1]) == metrics["0/0"] and metrics["0/0"][0] == "f"
    assert "fx_graph_cache_miss" in raw and not re.search(r"fx_graph_cache_(hit|bypass)", raw)
    assert run_cli("check", log("break"), "--max-compile-seconds", "1") == 1
    [line] = lines(capsys.readouterr().out)
    assert line.startswith("max-compile-seconds: compile time 45.32 s, at most 1.00 s allowed: the slowest compile, "
                           "[0/0] f, took ")
    assert line.endswith("; every FX graph cache lookup missed: a cold cache")


def test_no_failures_rule(capsys, tmp_path):
    # compile_error_fallback.log: [0/0] of f (co_firstlineno 18) fails with fail_type InductorError, fail_reason
    # "CppCompileError: C++ compile error", no fail_user_frame: named as the other rules name theirs, where it failed.
    failing = log("base").parent / "compile_error_fallback.log"
    assert run_cli("check", failing, "--no-failures") == 1
    [line] = lines(capsys.readouterr().out)
    assert line == ("no-failures: 1 failed compile, none allowed: [0/0] f (compile_error_fallback.py:18): InductorError: "
                    "CppCompileError: C++ compile error")


def test_a_failed_compile_of_a_frame_not_the_users_is_named_by_the_users_call(capsys):
    # module_backend_error: [0/0] compiles torch's wrap_inline `inner` (external_utils.py, co_firstlineno 67) around
    # the compiled nn.Linear and fails (BackendCompilerFailed); it never recompiles. Its dynamo_start stack's frame of
    # the program is line 20, `compiled(torch.randn(2, 4))`.
    raw = log_text(torch213("module_backend_error.log.gz"))
    [index] = re.findall(r'\{"str": \["[^"]*/programs/module_backend_error\.py", (\d+)\]\}', raw)
    [start] = [json.loads(line.split("] ", 1)[1])["dynamo_start"]["stack"] for line in raw.splitlines()
               if '"dynamo_start"' in line]
    assert [f["line"] for f in start if f["filename"] == int(index)] == [20] and start[-1]["line"] == 67
    assert run_cli("check", torch213("module_backend_error.log.gz"), "--no-failures") == 1
    [line] = lines(capsys.readouterr().out)
    assert line.startswith("no-failures: 1 failed compile, none allowed: [0/0] inner (external_utils.py:67, called at "
                           "module_backend_error.py:20): BackendCompilerFailed: ")


def test_baseline_failures_names_the_compile_that_failed(capsys, tmp_path):
    """diff_fail.log.gz's one compilation_metrics: compile_id 0/0, co_name f, co_firstlineno 30, fail_type
    InductorError, fail_reason starting "CppCompileError: C++ compile error"; diff_base.log.gz's compiles did not fail.
    The rule said "new failure in f (diff_pair.py:30)", not which compile: it names it as --no-failures does, in the
    terminal, --json and --junit."""
    raw = gzip.open(log("fail"), "rt", encoding="utf-8").read()
    metrics = [json.loads(line[line.index("{"):])["compilation_metrics"]
               for line in raw.splitlines() if '{"compilation_metrics": ' in line]
    assert [(m["compile_id"], m["co_name"], m["co_firstlineno"], m["fail_type"], m["fail_reason"].splitlines()[0])
            for m in metrics] == [("0/0", "f", 30, "InductorError", "CppCompileError: C++ compile error")]
    base = gzip.open(log("base"), "rt", encoding="utf-8").read()
    assert '"fail_type": "' not in base
    named = "[0/0] f (diff_pair.py:30): InductorError: CppCompileError: C++ compile error"
    junit = tmp_path / "check.xml"
    assert run_cli("check", log("fail"), "--baseline", log("base"), "--json", "--junit", junit) == 1
    [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if r["rule"] == "baseline-failures"]
    assert rule["details"] == [f"new failure: {named}"]
    assert rule["message"].startswith(f"baseline-failures: new failure: {named}; why, and what to try: ")
    assert f"new failure: {named}" in junit.read_text()
    # diff's change carries them: the compile ids that failed so, and the function.
    assert run_cli("diff", "--json", log("base"), log("fail")) == 1
    (compared,) = json.loads(capsys.readouterr().out)["ranks"]
    (change,) = [c for c in compared["changes"] if c["section"] == "failures"]
    assert change["detail"] == {"compile_ids": ["[0/0]"], "function": "f (diff_pair.py:30)"}


def test_no_failures_names_the_compile_that_hit_the_recompile_limit(capsys, tmp_path):
    """train_step_pitfalls.log: [0/2]'s compilation_metrics has fail_type Unsupported, fail_reason "Dynamo recompile
    limit exceeded ...", co_name null and no fail_user_frame: its frame is [0/0]'s and [0/1]'s, train_step at line 31.
    The gate said only "1 failed compile", not which, nor why; --json and --junit say it too."""
    failing = torch213("train_step_pitfalls.log.gz")
    named = "[0/2] train_step (train_step_pitfalls.py:31): Unsupported: Dynamo recompile limit exceeded"
    assert run_cli("check", failing, "--no-failures") == 1
    assert lines(capsys.readouterr().out) == [f"no-failures: 1 failed compile, none allowed: {named}"]
    junit = tmp_path / "check.xml"
    assert run_cli("check", failing, "--no-failures", "--json", "--junit", junit) == 1
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert (rule["message"], rule["details"]) == (f"no-failures: 1 failed compile, none allowed: {named}", [named])
    assert named in junit.read_text()
    # compile_error_raises.log's [0/0] logs where it failed (fail_user_frame line 18, in f_fullgraph, def at line 16)
    # and a second failed compile, counted as the other rules count theirs.
    assert run_cli("check", log("base").parent / "compile_error_raises.log", "--no-failures") == 1
    assert lines(capsys.readouterr().out) == [
        "no-failures: 2 failed compiles, none allowed: [0/0] f_fullgraph (compile_error_raises.py:16) at "
        "compile_error_raises.py:18: Unsupported: Failed to trace builtin operator, and 1 more failed compile"]


def test_baseline_regressions(capsys, tmp_path):
    # A new graph break and more recompiles than the baseline.
    assert run_cli("check", log("break"), "--baseline", log("base")) == 1
    assert lines(capsys.readouterr().out) == [
        "baseline-graph-breaks: new graph break: Call to `torch._dynamo.graph_break()` at diff_pair.py:33",
        # the second recompile is the new break's resume function's: the break's rule names the cause
        # (named as the rest of f: the log's torch_dynamo_resume_in_f_at_33, the code after diff_pair.py's line 33)
        "baseline-recompiles: 1 → 2 recompiles (1 of them of f after its graph break at line 33, compiled only in "
        "this run: the graph break is new)",
        # 44.13 s → 45.32 s: noise, said in passing
        "baseline-compile-time passed: compile time 44.13 s → 45.32 s: the slower took 1.02x the faster, under the 3x "
        "that counts as a change (--time-ratio), so no regression",
    ]
    # Compile time up by the threshold or more: test_compile_time_fails_the_gate_where_diff_calls_it_a_change.
    # A compile that fails where the baseline's did not.
    assert run_cli("check", log("fail"), "--baseline", log("base")) == 1
    # (diff_fail.log.gz's compile of f failed: fail_type InductorError, a CppCompileError; diff_base's did not) Its
    # message points at what explains a failure: the summary of the log, or diagnose on the program.
    assert lines(capsys.readouterr().out) == [
        "baseline-failures: new failure: [0/0] f (diff_pair.py:30): InductorError: CppCompileError: C++ compile error; why, "
        f"and what to try: compilescope summary {log('fail').resolve()} (or compilescope diagnose on the program: the "
        "stage that fails)"]
    # A compile that CUDA graphs skip where the baseline's ran as graphs (the real reduce-overhead run on an H200,
    # whose residual [0/0] was recorded, and a copy whose [0/0] mutated an input); the other way round is no regression.
    gpu = cuda211("cudagraph_skips.log.gz")
    skipped = with_cudagraph_skip(gpu, tmp_path / "dedicated_log_torch_trace_skip.log", "0/0", RESIDUAL_SKIP)
    assert run_cli("check", skipped, "--baseline", gpu) == 1
    assert lines(capsys.readouterr().out) == [
        "baseline-cudagraphs: CUDA graphs skipped in B: skipping cudagraphs due to mutated inputs (1 instances)"]
    assert run_cli("check", gpu, "--baseline", skipped) == 0
    capsys.readouterr()
    # Without a baseline: --no-cudagraph-skips. The real run's accumulate [1/0] was never recorded (it mutates its
    # input; torch said so on stderr only); the copy adds [0/0].
    assert run_cli("check", gpu, "--no-cudagraph-skips") == 1
    assert lines(capsys.readouterr().out) == ["no-cudagraph-skips: 1 compile run without CUDA graphs, none allowed"]
    assert run_cli("check", skipped, "--no-cudagraph-skips") == 1
    assert lines(capsys.readouterr().out) == ["no-cudagraph-skips: 2 compiles run without CUDA graphs, none allowed"]
    # Fewer recompiles and a faster compile are no regression.
    assert run_cli("check", log("dynamic"), "--baseline", log("base")) == 0
    assert run_cli("check", log("warm"), "--baseline", log("cold"), "--time-margin", "0.1") == 0


def dynamo_seconds(path) -> float:
    """A run's compile time read from its raw log: the span of each `dynamo` chromium event (torch's outermost event of
    one compile, begun and ended once per compile), summed."""
    begins, ends = [], []
    payload: list[str] | None = None  # the payload lines of the chromium event being read
    for line in log_text(path).split("\n") + [""]:
        if payload is not None and line.startswith("\t"):
            payload.append(line[1:])
            continue
        if payload:
            event = json.loads("\n".join(payload))
            if event["name"] == "dynamo":
                (begins if event["ph"] == "B" else ends).append(event["ts"])
        payload = [] if '"chromium_event"' in line else None
    assert begins and len(begins) == len(ends)
    return sum(end - begin for begin, end in zip(begins, ends)) / 1e6


def ratio_text(slow: float, fast: float) -> str:
    return f"{math.floor(slow / fast * 100) / 100:.2f}x"  # rounded down, never a ratio not reached


def rule_of(name: str, doc: dict) -> dict:
    [rule] = [r for r in doc["rules"] if r["rule"] == name]
    return rule


def compile_time_changes(a, b, *flags: str, capsys) -> tuple[list[dict], list[str]]:
    """`diff A B --json`'s compile-time changes and notes."""
    assert run_cli("diff", a, b, *flags, "--json") in (0, 1)
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    return [c for c in rank["changes"] if c["section"] == "compile_time"], rank["notes"]


@pytest.mark.parametrize("baseline, run", [
    # Two runs of programs/diff_pair.py (its README: 44.1 s and 30.3 s to compile, machine noise).
    ("base_again", "base"),
    # The pair the gate failed on while `diff` called it noise: diff_fail (its one compile fails: 22.5 s) as the
    # baseline of diff_base (44.1 s, 1.96x).
    ("fail", "base"),
])
def test_check_and_diff_agree_that_compile_time_within_the_noise_is_no_regression(baseline, run, capsys):
    before, after = dynamo_seconds(log(baseline)), dynamo_seconds(log(run))
    assert after - before >= 1 and after / before < 3  # more compile time, by more than 1s and less than 3x
    why = (f"compile time {format_seconds(before)} → {format_seconds(after)}: the slower took "
           f"{ratio_text(after, before)} the faster, under the 3x that counts as a change (--time-ratio)")
    changes, notes = compile_time_changes(log(baseline), log(run), capsys=capsys)
    assert changes == [] and why in notes
    # The gate: the same threshold, the same sentence, and it says so rather than passing silently.
    rc = run_cli("check", log(run), "--baseline", log(baseline))
    out = lines(capsys.readouterr().out)
    assert f"baseline-compile-time passed: {why}, so no regression" in out
    assert not any(line.startswith("baseline-compile-time:") for line in out)
    assert run_cli("check", log(run), "--baseline", log(baseline), "--json") == rc
    rule = rule_of("baseline-compile-time", json.loads(capsys.readouterr().out))
    assert rule["passed"] and rule["message"] == f"{why}, so no regression"
    # What else the pair changed still fails: diff_fail compiled f once (its compile failed, the frame ran eagerly),
    # diff_base recompiled it for batch 6.
    assert rc == (0 if baseline == "base_again" else 1)


def test_compile_time_fails_the_gate_where_diff_calls_it_a_change(capsys):
    # programs/cache_cold_warm.py: the warm run found its graph in the FX graph cache, the cold run compiled it. The
    # cold run against the warm one as its baseline took over 3x as long, and more than 1s longer.
    warm, cold = dynamo_seconds(log("warm")), dynamo_seconds(log("cold"))
    assert cold / warm >= 3 and cold - warm >= 1
    changes, _ = compile_time_changes(log("warm"), log("cold"), capsys=capsys)
    assert [(c["a"], c["b"]) for c in changes] == [(pytest.approx(warm), pytest.approx(cold))]
    # Why, as `diff` says it: the warm run's lookups (one FX graph, one AOTAutograd) hit, the cold run's missed.
    warm_log = log_text(log("warm"))
    hits = len(re.findall(r'"name": "(fx_graph|aotautograd)_cache_hit"', warm_log))
    assert not re.search(r'"name": "(fx_graph|aotautograd)_cache_hit"', log_text(log("cold")))
    saved_s = sum(float(ms) for ms in re.findall(r'"aotautograd_cache_hit".*\n\t.*"time_saved_ms": ([\d.]+)', warm_log)) / 1000
    assert run_cli("check", log("cold"), "--baseline", log("warm")) == 1
    assert lines(capsys.readouterr().out) == [
        f"baseline-compile-time: compile time {format_seconds(warm)} → {format_seconds(cold)} "
        f"({format_seconds_change(cold - warm)}): the slower took {ratio_text(cold, warm)} the faster, at least the 3x "
        "and 1s that count as a change (--time-ratio, --time-threshold); why: the baseline's cache lookups hit where "
        f"the run's missed ({hits} hits in the baseline, 0 in the run): the baseline reused graphs that the run "
        f"compiled anew; torch logged {format_seconds(saved_s)} of compiling saved by the baseline's hits"]
    # Faster is no regression, and nothing is said of it.
    assert run_cli("check", log("warm"), "--baseline", log("cold")) == 0
    assert lines(capsys.readouterr().out) == ["compilescope check: 5 rules passed (baseline-graph-breaks, "
                                              "baseline-recompiles, baseline-compile-time, baseline-failures, "
                                              "baseline-cudagraphs)"]


def test_the_threshold_options_are_diffs_and_override_the_default(capsys):
    # The two runs of diff_pair.py: 1.45x and about 14s apart, noise by default (above).
    base, again = dynamo_seconds(log("base")), dynamo_seconds(log("base_again"))
    assert 1.4 <= base / again < 1.5 and 1 <= base - again < 14
    failed = [f"baseline-compile-time: compile time {format_seconds(again)} → {format_seconds(base)} "
              f"({format_seconds_change(base - again)}): the slower took {ratio_text(base, again)} the faster, at least "
              "the 1.4x and 1s that count as a change (--time-ratio, --time-threshold)"]
    assert run_cli("check", log("base"), "--baseline", log("base_again"), "--time-ratio", "1.4") == 1
    assert lines(capsys.readouterr().out) == failed
    changes, _ = compile_time_changes(log("base_again"), log("base"), "--time-ratio", "1.4", capsys=capsys)
    assert len(changes) == 1  # diff, given the same option, calls it a change too
    # The older spelling: --time-margin F is --time-ratio 1+F.
    assert run_cli("check", log("base"), "--baseline", log("base_again"), "--time-margin", "0.4") == 1
    assert lines(capsys.readouterr().out) == failed
    # Seconds too: under 14s apart is noise, whatever the ratio (--time-min-seconds is its older spelling).
    for seconds in ("--time-threshold", "--time-min-seconds"):
        assert run_cli("check", log("base"), "--baseline", log("base_again"), "--time-ratio", "1.4", seconds, "14") == 0
        assert lines(capsys.readouterr().out)[0] == (
            f"baseline-compile-time passed: compile time {format_seconds(again)} → {format_seconds(base)}: less than "
            "the 14s apart that counts as a change (--time-threshold), so no regression")
    # Both spellings of one option at once: refused, rather than one silently winning.
    with pytest.raises(SystemExit) as refused:  # (argparse's usage error)
        run_cli("check", log("base"), "--baseline", log("base_again"), "--time-margin", "0.4", "--time-ratio", "2")
    assert refused.value.code == 2
    assert "argument --time-ratio: not allowed with argument --time-margin" in capsys.readouterr().err


def test_warning_rules(capsys):
    # The real runs of programs/torch_warnings.py, recorded by `compilescope run`: the fixed variant no longer runs a
    # complex op or a one-branch torch.cond, and still hits the recompile limit and traces an lru_cache function.
    warned, fixed = torch213("torch_warnings.log.gz"), torch213("torch_warnings_fixed.log.gz")
    assert run_cli("check", fixed, "--no-warnings", "--json") == 1
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    # (the message names the first, so a CI log says which: the fixed run still hits the recompile limit)
    assert rule["message"] == ("no-warnings: torch printed 2 warnings, none allowed: a function hit the recompile limit "
                               "(torch/_dynamo/convert_frame.py:1994), and 1 more warning")
    assert rule["details"] == [
        "a function hit the recompile limit (torch/_dynamo/convert_frame.py:1994)",
        "an lru_cache function is traced through its cache (torch/_dynamo/variables/functions.py:2590)"]
    assert run_cli("check", warned, "--baseline", fixed, "--no-new-warnings", "--json") == 1
    rules = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert [name for name, r in rules.items() if not r["passed"]] == ["baseline-warnings"]
    assert rules["baseline-warnings"]["details"] == ["torch now warns: complex operators run as eager kernels",
                                                     "torch now warns: torch.cond kept one branch only"]
    # A warning the run no longer prints is no regression; without --no-new-warnings, new warnings fail nothing.
    assert run_cli("check", fixed, "--baseline", warned, "--no-new-warnings") == 0
    assert run_cli("check", warned, "--baseline", fixed) == 0
    capsys.readouterr()
    # A plain TORCH_TRACE log cannot say what torch printed on stderr: a warning rule asked of it fails and says how
    # to record the warnings, rather than passing unchecked.
    assert run_cli("check", log("base"), "--no-warnings") == 1
    assert lines(capsys.readouterr().out) == [
        "no-warnings: the run did not record the warnings torch printed (record them with this compilescope's `run` "
        "or capture(), or save its stderr as output.txt beside its log)"]
    assert run_cli("check", warned, "--baseline", log("base"), "--no-new-warnings") == 1
    assert lines(capsys.readouterr().out)[-1].startswith("baseline-warnings: the baseline did not record the warnings")
    assert run_cli("check", warned, "--no-new-warnings") == 2
    assert "--no-new-warnings compares with a baseline" in capsys.readouterr().err
    # Two real gloo ranks, of which only rank 1 kept one branch of a torch.cond: the rule names that rank.
    assert run_cli("check", TORCH213_LOGS.parent / "multi_rank_warnings", "--no-warnings") == 1
    assert lines(capsys.readouterr().out) == ["no-warnings: rank 1: torch printed 1 warning, none allowed: torch.cond "
                                              "kept one branch only (torch/_dynamo/variables/higher_order_ops.py:2408)"]


def test_new_warnings_across_torch_versions(capsys):
    # programs/torch_warnings.py recorded with torch 2.13 and 2.14: the same four warnings, each raised from another
    # line of the same torch file (lowering.py:2633 → :2774, ...), and one that only the 2.14 build prints (its README:
    # a CUDA build on a machine without CUDA). Only that one is new.
    assert run_cli("check", torch214("torch_warnings.log"), "--baseline", torch213("torch_warnings.log.gz"),
                   "--no-new-warnings", "--json") == 1
    rules = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert [name for name, r in rules.items() if not r["passed"]] == ["baseline-warnings"]
    assert rules["baseline-warnings"]["details"] == [
        "torch now warns: No CUDA runtime is found, using CUDA_HOME='/usr/local' (printed by torch 2.14.1+cu130 from "
        "torch/utils/cpp_extension.py, not by 2.13.0+cpu: the torch version alone may explain it)"]


def test_what_dynamo_did_in_pythons_library_is_not_counted(capsys):
    # The same program under torch 2.14 (tests/data/torch214/README.md, differs/): torch has Dynamo compile inspect's
    # functions, which fail, recompile and break; the report says nothing in the user's code is to change there, and
    # the gate agrees, saying what it left out. Against the torch 2.13 run, nothing regressed in the user's code.
    run = TORCH213_LOGS.parent.parent / "torch214" / "differs" / "compiled_autograd.log.gz"
    assert run_cli("check", run, "--max-graph-breaks", "1", "--max-recompiles", "2", "--no-failures", "--baseline",
                   torch213("compiled_autograd.log.gz"), "--time-margin", "2", "--json") == 0
    messages = {r["rule"]: r["message"] for r in json.loads(capsys.readouterr().out)["rules"]}
    assert messages["max-graph-breaks"] == "1 distinct graph break (2 more in Python's own library, not counted)"
    assert messages["max-recompiles"] == "2 recompiles (4 more in Python's own library, not counted)"
    assert messages["no-failures"] == "0 failed compiles (3 more in Python's own library, not counted)"
    assert {messages[r] for r in ("baseline-graph-breaks", "baseline-recompiles", "baseline-failures")} == {"no regression"}
    # A rule that fails says what it left out too, so its count can be told from the summary's.
    assert run_cli("check", run, "--max-recompiles", "1") == 1
    assert lines(capsys.readouterr().out) == [
        "max-recompiles: 2 recompiles (4 more in Python's own library, not counted), at most 1 allowed: train_step "
        "(compiled_autograd.py:25) recompiled once, and 1 more function"]
    # `diff` still shows all of it: it says what changed, not what to fix.
    assert run_cli("diff", torch213("compiled_autograd.log.gz"), run) == 1
    # each in the frame of Python's library that failed (inspect.py's getattr_static and two helpers of it), with
    # the compile that failed (their compilation_metrics: 1/0 getattr_static, 3/0 _static_getmro, 5/0 _check_instance),
    # named by the program's line their dynamo_start stacks pass last, 27 (loss.backward(), where compiled autograd
    # ran into them); each break's text says "Skipping the function and falling back to eager": Dynamo gave up the
    # frame being compiled, which ran eagerly
    failed = re.findall(r"new failure: \[(\d+/\d+)\]: Dynamo\s+skipped\s+(\w+)\s+\(inspect\.py:\d+,\s+called\s+at\s+"
                        r"compiled_autograd\.py:27\)\s+and\s+ran\s+it\s+eagerly:[^:]*at\s+inspect\.py:\d+:\s+Observed\s+"
                        r"exception", capsys.readouterr().out)
    assert sorted(failed) == [("1/0", "getattr_static"), ("3/0", "_static_getmro"), ("5/0", "_check_instance")]


def test_junit_has_one_test_case_per_rule(tmp_path, capsys):
    try:
        from junitparser import Failure, JUnitXml
    except ImportError:
        skip_or_fail("junitparser not installed (pip install -e '.[test]')")
    junit = tmp_path / "check.xml"
    rc = run_cli("check", log("break"), "--max-graph-breaks", "0", "--max-recompiles", "5", "--no-failures",
                 "--max-compile-seconds", "600", "--baseline", log("base"), "--junit", junit)
    assert rc == 1
    capsys.readouterr()
    xml = JUnitXml.fromfile(str(junit))
    cases = {case.name: case for suite in xml for case in suite}
    assert sorted(cases) == sorted(["max-graph-breaks", "max-recompiles", "no-failures", "max-compile-seconds",
                                    "baseline-graph-breaks", "baseline-recompiles", "baseline-compile-time",
                                    "baseline-failures", "baseline-cudagraphs"])
    failed = {name for name, case in cases.items() if any(isinstance(r, Failure) for r in case.result)}
    assert failed == {"max-graph-breaks", "baseline-graph-breaks", "baseline-recompiles"}
    [failure] = cases["max-graph-breaks"].result
    assert failure.message == ("max-graph-breaks: 1 distinct graph break, at most 0 allowed: Call to "
                               "`torch._dynamo.graph_break()` at diff_pair.py:33")
    assert "Call to `torch._dynamo.graph_break()` at diff_pair.py:33" in failure.text


def test_json_and_bad_input(capsys, tmp_path):
    assert run_cli("check", log("break"), "--max-graph-breaks", "3", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["passed"] is True and [r["rule"] for r in doc["rules"]] == ["max-graph-breaks"]
    assert run_cli("check", tmp_path / "missing.log") == 2
    assert run_cli("check", log("base"), "--max-recompiles", "-1") == 2


def test_json_is_the_document_of_check_schema_md(capsys):
    # Every key the document has is described there, with its version, and nothing described is missing.
    import re

    from ..conftest import REPO

    schema = (REPO / "docs" / "check-schema.md").read_text()
    block = schema[schema.index("```jsonc"):schema.index("```", schema.index("```jsonc") + 3)]
    top = re.findall(r'^\s*"(\w+)":', block, re.M)
    rule_keys = re.findall(r"^\| `(\w+)` \|", schema[schema.index("### Rule"):], re.M)
    assert run_cli("check", log("break"), "--max-graph-breaks", "0", "--baseline", log("base"), "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == top and doc["schema_version"] == 1 and "Schema version 1." in schema
    assert doc["passed"] is False and doc["baseline"].endswith("diff_base.log.gz")
    assert all(list(r) == rule_keys for r in doc["rules"])
    # In the order the schema lists the rules.
    order = re.findall(r"`([a-z-]+)`", schema[schema.index("in this order:"):schema.index("| key |", schema.index("### Rule"))])
    names = [r["rule"] for r in doc["rules"]]
    assert names == sorted(names, key=order.index)


@pytest.mark.parametrize("flags, error", [
    (["--time-margin", "0.1"], "--time-margin compares with a baseline: give --baseline LOG"),
    (["--time-min-seconds", "0"], "--time-min-seconds compares with a baseline: give --baseline LOG"),
    (["--no-new-warnings"], "--no-new-warnings compares with a baseline: give --baseline LOG"),
    (["--time-ratio", "2"], "--time-ratio compares with a baseline: give --baseline LOG"),
    (["--time-threshold", "5"], "--time-threshold compares with a baseline: give --baseline LOG"),
    (["--baseline", log("base"), "--time-ratio", "0.5"], "--time-ratio must be 1 or more"),
    (["--max-compile-seconds", "-1"], "--max-compile-seconds must be 0 or more"),
    (["--baseline", log("base"), "--time-margin", "-0.5"], "--time-margin must be 0 or more"),
    (["--baseline", log("base"), "--time-min-seconds", "nan"], "--time-min-seconds must be 0 or more"),
])
def test_an_option_that_would_do_nothing_or_means_nothing_is_a_usage_error(flags, error, capsys):
    """A baseline-only option without --baseline was silently ignored: the gate passed without the check asked of it."""
    assert run_cli("check", log("base"), *flags) == 2
    captured = capsys.readouterr()
    assert captured.err == f"compilescope: error: {error}\n" and captured.out == ""


def test_diff_and_check_work_without_torch(tmp_path):
    """torch made unimportable in the child: neither command needs it."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None\n"
            "from compilescope.cli import main\n"
            "a, b, out = sys.argv[1:4]\n"
            "assert main(['diff', a, b, '--json']) == 1\n"
            "assert main(['diff', a, b, '-o', out, '--no-browser']) == 1\n"
            "assert main(['check', b, '--max-graph-breaks', '0', '--baseline', a]) == 1\n"
            "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    proc = subprocess.run([sys.executable, "-c", code, str(log("base")), str(log("break")), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_multi_rank_run_names_the_rank(tmp_path, capsys):
    rank_dir(tmp_path / "run", ("base", "break"))
    rank_dir(tmp_path / "baseline", ("base", "base"))
    assert run_cli("check", tmp_path / "run", "--max-graph-breaks", "0", "--baseline", tmp_path / "baseline") == 1
    assert lines(capsys.readouterr().out) == [
        "max-graph-breaks: rank 1: 1 distinct graph break, at most 0 allowed: Call to `torch._dynamo.graph_break()` at "
        "diff_pair.py:33",
        "baseline-graph-breaks: rank 1: new graph break: Call to `torch._dynamo.graph_break()` at diff_pair.py:33",
        "baseline-recompiles: rank 1: 1 → 2 recompiles (1 of them of f after its graph break at line 33, compiled "
        "only in this run: the graph break is new)",
        # (rank 0 is the same log on both sides: nothing to say of its compile time)
        "baseline-compile-time passed: rank 1: compile time 44.13 s → 45.32 s: the slower took 1.02x the faster, under "
        "the 3x that counts as a change (--time-ratio), so no regression",
    ]


def test_a_single_log_is_checked_against_the_lowest_rank_of_a_baseline_directory(tmp_path, capsys):
    # As `diff` pairs them. The gate passed this before, having compared nothing.
    rank_dir(tmp_path / "baseline", ("base", "base"))
    assert run_cli("check", log("break"), "--baseline", tmp_path / "baseline") == 1
    assert lines(capsys.readouterr().out)[0].startswith(
        "baseline-graph-breaks: rank 0: new graph break: Call to `torch._dynamo.graph_break()` at diff_pair.py:33")
    assert run_cli("diff", tmp_path / "baseline", log("break")) == 1
    assert "Call to `torch._dynamo.graph_break()`" in capsys.readouterr().out


def test_ranks_with_nothing_to_compare_fail_the_baseline_rule(tmp_path, capsys):
    rank_dir(tmp_path / "baseline", ("base", "base"))
    (tmp_path / "run").mkdir()
    for rank in (2, 3):
        (tmp_path / "run" / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_bytes(gzip.decompress(log("base").read_bytes()))
    assert run_cli("check", tmp_path / "run", "--baseline", tmp_path / "baseline") == 1
    assert lines(capsys.readouterr().out) == ["baseline: no rank of the run (2, 3) is a rank of the baseline (0, 1)"]


def test_every_rank_of_a_run_is_checked_against_a_baseline_of_one_log(tmp_path, capsys):
    # Rank 1 has a new graph break. A single baseline log stood for rank 0 only, and rank 1 passed unseen.
    rank_dir(tmp_path / "run", ("base", "break"))
    assert run_cli("check", tmp_path / "run", "--baseline", log("base")) == 1
    out = lines(capsys.readouterr().out)
    assert out[0].startswith("baseline-graph-breaks: rank 1: new graph break: Call to `torch._dynamo.graph_break()`")
    assert not any(line.startswith(("baseline:", "baseline-graph-breaks: rank 0")) for line in out)


def test_ranks_of_the_run_the_baseline_lacks_fail_the_baseline_rule(tmp_path, capsys):
    rank_dir(tmp_path / "baseline", ("base", "base"))
    rank_dir(tmp_path / "run", ("base", "base", "break"))  # rank 2: a new graph break, and no baseline rank 2
    assert run_cli("check", tmp_path / "run", "--baseline", tmp_path / "baseline") == 1
    assert lines(capsys.readouterr().out) == [
        "baseline: 1 rank of the run (2) not compared: the baseline has ranks 0, 1 (a baseline of one log is "
        "compared with every rank)"]


def test_a_log_not_read_in_full_fails_the_gate_and_the_diff_says_so(tmp_path, capsys):
    # A real log cut off mid-file, as a killed run leaves it: the check saw only part of the run, so it cannot pass it.
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(log("break").read_bytes()[:5000])
    assert run_cli("check", cut) == 1
    captured = capsys.readouterr()
    (line,) = lines(captured.out)
    assert line.startswith("whole-log: the log was not read in full (") and "the log cannot be read after line " in line
    assert captured.err.startswith("compilescope: warning: cut.log.gz: ") and "cannot be read after line" in captured.err
    assert run_cli("check", log("base"), "--baseline", cut) == 1
    assert lines(capsys.readouterr().out)[-1].startswith("whole-log: the baseline's log was not read in full")
    # diff: the warning on stderr, a note under the changes, and the same note in the JSON.
    assert run_cli("diff", cut, log("break")) in (0, 1)
    captured = capsys.readouterr()
    assert "The diff shows what was read." in captured.err
    assert "A's log was not read in full (1 payload not matching its md5; the log cannot be read after line" in " ".join(
        captured.out.split())
    assert run_cli("diff", cut, log("break"), "--json") in (0, 1)
    (note,) = [n for n in json.loads(capsys.readouterr().out)["ranks"][0]["notes"] if "not read in full" in n]
    assert note.startswith("A's log")
    # A whole log passes, and a payload not matching its md5 (still read) is warned about without failing.
    assert run_cli("check", log("base")) == 0
    assert "whole-log" not in capsys.readouterr().out


def test_a_rank_that_cannot_be_read_fails_the_gate_and_the_others_are_checked(tmp_path, capsys):
    rank_dir(tmp_path / "run", ("base", "break", "base"))
    (tmp_path / "run" / "dedicated_log_torch_trace_rank_2_x.log").write_bytes(b"")
    assert run_cli("check", tmp_path / "run", "--max-graph-breaks", "0") == 1
    assert lines(capsys.readouterr().out) == [
        "max-graph-breaks: rank 1: 1 distinct graph break, at most 0 allowed: Call to `torch._dynamo.graph_break()` at "
        "diff_pair.py:33",
        "whole-log: rank 2: the log could not be read (the log is empty)",
    ]
    # Nothing else wrong: the unreadable rank alone fails it, in the JSON too.
    rank_dir(tmp_path / "baseline", ("base", "base", "base"))
    (tmp_path / "baseline" / "dedicated_log_torch_trace_rank_1_x.log").write_bytes(bytes(range(256)) * 16)
    assert run_cli("check", tmp_path / "baseline", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    (rule,) = [r for r in doc["rules"] if not r["passed"]]
    assert rule["rule"] == "whole-log" and rule["details"][0].startswith("rank 1: the log could not be read: not a TORCH_TRACE")
    assert run_cli("check", tmp_path / "run", "--baseline", tmp_path / "baseline") == 1
    assert lines(capsys.readouterr().out)[-1] == (
        "whole-log: rank 2: the log could not be read (the log is empty) (and 1 more log)")


def test_a_regression_a_cut_baseline_may_explain_says_so(tmp_path, capsys):
    # The real DDP job against its own copy whose rank 1 is a .gz cut short before its recompile [0/1] began (its last
    # batch of 20 failed the size guard): with the cut copy as baseline, rank 1's recompile is "new"; the gate fails
    # (whole-log too) and says the regression may be only the cut.
    run = copy_fleet(cuda211("ddp_uneven_batch"), tmp_path / "run")
    baseline = copy_fleet(cuda211("ddp_uneven_batch"), tmp_path / "baseline")
    cut = next(baseline.glob("dedicated_log_torch_trace_rank_1_*.log.gz"))
    log_lines = log_text(cut).split("\n")
    first = next(i for i, line in enumerate(log_lines) if '"frame_id": 0, "frame_compile_id": 1,' in line)
    cut.write_bytes(gzip.compress(cut_inside(log_lines, first // 2, first).encode())[:-8])
    assert run_cli("check", run, "--baseline", baseline) == 1
    out = capsys.readouterr().out.splitlines()
    # (inner, external_utils.py:67: DDP's frame, which rank 1 recompiled for its smaller last batch, named as the
    # report names it: by the module torch's `inner` runs, the Sequential its guard tree types `source=L['fn']`, and
    # by the program's line 27 that called it: step(x), on its dynamo_start stack)
    # (its guard: tensor 'args[0]' size mismatch at index 0. expected 32, actual 20, in rank 1's log)
    assert ("baseline-recompiles: rank 1: 0 → 1 recompiles; most in Sequential's forward (external_utils.py:67, called at "
            "ddp_uneven_batch.py:27): 0 → 1, 1 of them "
            "failing tensor 'args[0]' size mismatch at index 0. expected 32, actual 20 (tensor size) (may be only "
            "what the baseline's log lacks)") in out
    assert out[-1].startswith("whole-log: rank 1: the baseline's log was not read in full (")
    # The whole run against the whole baseline: no regression, and nothing said of a cut.
    assert run_cli("check", run, "--baseline", cuda211("ddp_uneven_batch")) == 0
    assert "did not read" not in capsys.readouterr().out


def test_a_run_killed_while_compiling_fails_whole_log_and_its_changes_are_hedged(tmp_path, capsys):
    # recompiles.log cut after its line 1000, on a whole line, as a job killed while compiling leaves its log: every
    # line is read, and [0/3] has started and has no metrics.
    lines = torch213("recompiles.log").read_text().splitlines(keepends=True)
    killed = tmp_path / "killed.log"
    killed.write_text("".join(lines[:1000]))
    assert not lines[1000].startswith("\t")  # (the next line starts a record: no payload is cut)
    assert run_cli("summary", "--json", killed) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unread"]["skipped_records"] == 0 and doc["unfinished"][0]["compile_id"] == "[0/3]"
    assert run_cli("check", killed, "--json") == 1
    [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if not r["passed"]]
    assert rule["rule"] == "whole-log" and rule["message"].startswith("whole-log: the log ends during [0/3]'s ")
    # Against it as the baseline, what the killed run did not live to log is no regression of the whole one.
    assert run_cli("check", torch213("recompiles.log"), "--baseline", killed, "--json") == 1
    rules = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert rules["whole-log"]["message"].startswith("whole-log: the baseline's log ends during [0/3]'s ")
    assert rules["baseline-recompiles"]["message"] == (
        "baseline-recompiles: 3 → 7 recompiles (4 of them of h, compiled only in this run) (may be only what the "
        "baseline's log lacks)")
    # And diff marks what it may explain, as for a cut log.
    assert run_cli("diff", torch213("recompiles.log"), killed, "--json") == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    assert rank["notes"][0].startswith("B's log ends during [0/3]'s ")
    marked = [c["title"] for c in rank["changes"] if c["unread_side"] == "B"]
    assert "h (recompiles.py:28) compiled only in A (5 compiles)" in marked


def test_a_failed_rule_names_what_broke_it_on_a_real_gpu_run(capsys):
    # train_break_recompile.py (cuda_torch211/README.md): `print` in forward (def at line 20) breaks the graph at line
    # 22; batch 32 → 48 recompiles forward and the resume function after the break once each. dynamic_batch.py: step
    # (def at line 12) recompiles twice, for the batch size and then for `factor`.
    run = cuda211("train_break_recompile.log.gz")
    program = (cuda211("../programs/train_break_recompile.py")).read_text().splitlines()
    assert program[19].strip() == "def forward(self, x):" and program[21].strip().startswith("print(")
    assert run_cli("check", run, "--max-graph-breaks", "0", "--max-recompiles", "0") == 1
    assert lines(capsys.readouterr().out) == [
        "max-graph-breaks: 1 distinct graph break, at most 0 allowed: Failed to trace builtin operator at "
        "train_break_recompile.py:22",
        "max-recompiles: 2 recompiles, at most 0 allowed: forward (train_break_recompile.py:20) recompiled once, and 1 "
        "more function",
    ]
    assert run_cli("check", cuda211("dynamic_batch.log.gz"), "--max-recompiles", "0") == 1
    assert lines(capsys.readouterr().out) == [
        "max-recompiles: 2 recompiles, at most 0 allowed: step (dynamic_batch.py:12) recompiled 2 times"]


def test_more_recompiles_name_the_guard_that_failed_most(capsys):
    """The CUDA optimizer with a float lr (the run) against a tensor lr (the baseline): step recompiled 5 times where
    the baseline compiled it once. The log's recompile reasons: once `self.param_groups[0]['lr'] == 0.0033…`, then four
    times `___as_tensor(self.param_groups[0]['lr']).item() == ` a new value (0.0047, 0.006, 0.0073, 0.0087: the LR
    scheduler's next steps). The message names that guard and what it checks, on its one line."""
    assert run_cli("check", cuda211("compiled_optimizer.log.gz"), "--baseline",
                   cuda211("compiled_optimizer_tensor_lr.log.gz")) == 1
    [message] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("baseline-recompiles")]
    assert message == (
        "baseline-recompiles: 0 → 5 recompiles; most in step (adam.py:214, called at compiled_optimizer.py:24): 0 → 5, "
        "4 of them failing "
        "___as_tensor(self.param_groups[0]['lr']).item() == one of 0.004666666666666667, 0.006000000000000001, "
        "0.007333333333333335, 0.00866666666666667 (optimizer hyperparameter)")


def test_ranks_that_compiled_differently_fail_the_rank_divergence_gate(capsys):
    # multi_rank_ddp (programs/ddp_uneven_batch.py): rank 1's last batch has 5 rows, so only rank 1's log holds
    # [0/1] (attempts 0 and 1) with recompile_reason "0/0: tensor 'args[0]' size mismatch at index 0. expected 8,
    # actual 5"; rank 0's log has no frame_compile_id 1 at all.
    ddp = TORCH213_LOGS.parent / "multi_rank_ddp"
    assert run_cli("check", ddp, "--no-rank-divergence", "--json") == 1
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert (rule["rule"], rule["passed"]) == ("no-rank-divergence", False)
    assert rule["message"] == ("no-rank-divergence: ranks compiled different sets of compile ids: [0/1] compiled only "
                               "on rank 1 (restarted as [0/1_1]): tensor 'args[0]' size mismatch at index 0. expected "
                               "8, actual 5")
    # The same program on an H100 (batch 32, rank 1's last 20): the terminal prints the one line.
    assert run_cli("check", cuda211("ddp_uneven_batch"), "--no-rank-divergence") == 1
    assert lines(capsys.readouterr().out) == [
        "no-rank-divergence: ranks compiled different sets of compile ids: [0/1] compiled only on rank 1: tensor "
        "'args[0]' size mismatch at index 0. expected 32, actual 20"]
    # multi_rank_no_graph: rank 0's only function (passthrough) holds no tensor op, so its [0/0] made no graph where
    # rank 1's compiled one: the same compile id, ended differently.
    assert run_cli("check", TORCH213_LOGS.parent / "multi_rank_no_graph", "--no-rank-divergence") == 1
    assert lines(capsys.readouterr().out)[0].startswith(
        "no-rank-divergence: the same compile ended differently on different ranks: [0/0]: rank 0: compiled with no "
        "graph at all")
    # multi_rank_warnings: the ranks compiled alike and only rank 1's torch warned; a warning changes nothing the
    # ranks run together, so the gate passes (--no-warnings is the rule for it).
    assert run_cli("check", TORCH213_LOGS.parent / "multi_rank_warnings", "--no-rank-divergence", "--json") == 0
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert rule["passed"] and rule["message"] == "ranks 0, 1 compiled alike"
    # One log has no ranks to differ: the rule passes and says why, rather than being a usage error in a CI script
    # that checks single runs and jobs alike.
    assert run_cli("check", log("base"), "--no-rank-divergence", "--json") == 0
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert rule["passed"] and rule["message"] == "a single log: no ranks to compare"


def test_rank_divergence_gate_names_every_rank_group_of_a_peer_job(capsys):
    # peer-tlparse's multi_rank_logs: ranks 1 and 3 recompile [0/1].. as their input grows (rank 1 up to [0/14]),
    # ranks 0 and 2 fail [0/0]; both divergences are in the details, the first in the message.
    assert run_cli("check", peer("multi_rank_logs"), "--no-rank-divergence", "--json") == 1
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert rule["message"] == ("no-rank-divergence: ranks compiled different sets of compile ids: [0/1] compiled only "
                               "on ranks 1, 3: tensor 'x' size mismatch at index 0. expected 2, actual 3 (and 1 more "
                               "divergence)")
    assert "The same compile ended differently on different ranks: [0/0]: ranks 0, 2: failed; ranks 1, 3: succeeded" \
        in rule["details"]


def test_diff_and_check_name_torchs_module_wrapper_by_the_module_as_recompiles_does(capsys):
    # multi_rank_ddp (torch.compile(DDP(mlp)), gloo, CPU): every compilation_metrics of frame 0 names torch's wrapper
    # (co_name `inner`, external_utils.py, co_firstlineno 67); rank 1's guard tree types `source=L['fn']` as
    # torch.nn.parallel.distributed.DistributedDataParallel, and its dynamo_start stacks start at
    # ddp_uneven_batch.py:30 (`loss = nn.functional.mse_loss(compiled(x), y)`). Rank 1 alone recompiles ([0/1]:
    # "tensor 'args[0]' size mismatch at index 0. expected 8, actual 5"). The recompiles section calls the frame
    # "DistributedDataParallel's forward": diff and check call it so too, not torch's `inner`.
    rank_0, rank_1 = (TORCH213_LOGS.parent / "multi_rank_ddp" / f"dedicated_log_torch_trace_rank_{r}.log.gz"
                      for r in (0, 1))
    frame = "DistributedDataParallel's forward (external_utils.py:67, called at ddp_uneven_batch.py:30)"
    assert run_cli("summary", rank_1) == 0
    assert "DistributedDataParallel's forward  (external_utils.py:67, called at\nddp_uneven_batch.py:30)" \
        in capsys.readouterr().out
    assert run_cli("diff", rank_0, rank_1) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"~ {frame}: 1 → 2 compiles (0 → 1 recompiles)" in out and "inner" not in out
    assert run_cli("check", rank_1, "--max-recompiles", "0") == 1
    assert lines(capsys.readouterr().out) == [f"max-recompiles: 1 recompile, at most 0 allowed: {frame} recompiled once"]
    assert run_cli("check", rank_1, "--baseline", rank_0) == 1
    out = capsys.readouterr().out
    assert f"baseline-recompiles: 0 → 1 recompiles; most in {frame}: 0 → 1," in out and " inner " not in out


def test_a_users_subclass_of_a_torch_module_is_named_alike_in_recompiles_diff_and_check(capsys):
    # compiled_linear (torch.compile(Projection(8, 4)), Projection a user's nn.Linear subclass keeping nn.Linear's
    # forward): every compilation_metrics names torch's wrapper (co_name `inner`, external_utils.py, co_firstlineno
    # 67), each dynamo_start stack ends `serve:34` → ... → `_wrapped_call_impl` (nn/modules/module.py) → `inner`, and
    # each guard tree types `source=L['fn']` as `__main__.Projection`, a class outside torch.nn. [0/1] recompiled for
    # batch 6 ("0/0: tensor 'args[0]' size mismatch at index 0. expected 4, actual 6"); _fixed, the batch marked
    # dynamic, compiled [0/0] only. The user's class names the frame everywhere, not torch's `inner`.
    from ..tracelog import raw_records

    records = raw_records(torch213("compiled_linear.log.gz"))
    metrics = [e["compilation_metrics"] for e, _ in records if "compilation_metrics" in e]
    assert [(m["co_name"], m["co_filename"].endswith("torch/_dynamo/external_utils.py"), m["co_firstlineno"])
            for m in metrics] == [("inner", True, 67)] * 2
    assert metrics[1]["recompile_reason"] == "0/0: tensor 'args[0]' size mismatch at index 0. expected 4, actual 6"
    starts = [e["dynamo_start"]["stack"] for e, _ in records if "dynamo_start" in e]
    assert [[(f["name"], f["line"]) for f in s[-4:]] for s in starts] == [
        [("serve", 34), ("__call__", 511), ("_wrapped_call_impl", 1778), ("inner", 67)]] * 2
    trees = [p for e, p in records if "dynamo_cpp_guards_str" in e]
    assert len(trees) == 2 and all("source=L['fn'], " in t and "type=<class '__main__.Projection'>" in t
                                   for t in trees)
    fixed = [e["compilation_metrics"] for e, _ in raw_records(torch213("compiled_linear_fixed.log.gz"))
             if "compilation_metrics" in e]
    assert [(m["co_name"], m["recompile_reason"]) for m in fixed] == [("inner", None)]

    log, fixed_log = torch213("compiled_linear.log.gz"), torch213("compiled_linear_fixed.log.gz")
    frame = "Projection's forward (external_utils.py:67, called at compiled_linear.py:34)"
    assert run_cli("summary", log) == 0
    out = capsys.readouterr().out
    assert "Projection's forward  (external_utils.py:67, called at compiled_linear.py:34)" in out
    assert "inner" not in out
    assert run_cli("diff", log, fixed_log) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"~ {frame}: 2 → 1 compiles (1 → 0 recompiles)" in out and "inner" not in out
    assert run_cli("check", log, "--max-recompiles", "0") == 1
    assert lines(capsys.readouterr().out) == [f"max-recompiles: 1 recompile, at most 0 allowed: {frame} recompiled once"]
    assert run_cli("check", log, "--baseline", fixed_log) == 1
    out = capsys.readouterr().out
    assert f"baseline-recompiles: 0 → 1 recompiles; most in {frame}: 0 → 1," in out and " inner " not in out

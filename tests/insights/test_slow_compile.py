"""A slow compile, cold then warm (tests/data/torch213 programs/slow_compile.py): what its recompiles cost, and that
`diff` says the warm cache made the difference. Expected values are read from the raw logs here, not from our output."""

from __future__ import annotations

import gzip
import json

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.analyses.time_threshold import TimeThreshold
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.wording import format_seconds

from ..conftest import cuda211, run_cli, torch213
from ..tracelog import raw_records



def _raw(name: str) -> list[tuple[dict, str]]:
    """The log's envelopes with their payloads, read without compilescope."""
    return raw_records(torch213(f"{name}.log.gz"))


def _artifacts(name: str, artifact: str) -> list[tuple[dict, str]]:
    return [(e, p) for e, p in _raw(name) if e.get("artifact", {}).get("name") == artifact]


def _events(name: str) -> list[dict]:
    return [json.loads(p) for e, p in _raw(name) if "chromium_event" in e]


def _within(name: str, compile_id: str, event_names: set[str], outside: frozenset[str] = frozenset()) -> float:
    """Seconds inside any of these events (nested ones counted once), and in none of those outside, during
    compile_id's `dynamo` event. (These logs hold one thread: one track of events.)"""
    events = _events(name)
    (start,) = [e["ts"] for e in events if e["name"] == "dynamo" and e["ph"] == "B" and e["args"]["compile_id"] == compile_id]
    (end,) = [e["ts"] for e in events if e["name"] == "dynamo" and e["ph"] == "E" and e["args"]["compile_id"] == compile_id]
    depth, excluded, last, inside = 0, 0, start, 0.0
    for e in events:
        if not start <= e["ts"] <= end or e["ph"] not in ("B", "E"):
            continue
        if depth and not excluded:
            inside += (e["ts"] - last) / 1e6
        last = e["ts"]
        step = 1 if e["ph"] == "B" else -1
        if e["name"] in event_names:
            depth += step
        elif e["name"] in outside:
            excluded += step
    return inside


def _metrics(name: str) -> dict[str, dict]:
    return {f"[{e['frame_id']}/{e['frame_compile_id']}]": e["compilation_metrics"]
            for e, _ in _raw(name) if "compilation_metrics" in e}


def _insights(name: str):
    with read_trace(str(torch213(f"{name}.log.gz"))) as trace:
        return insights(trace)


def _facts(name: str):
    with read_trace(str(torch213(f"{name}.log.gz"))) as trace:
        return run_facts(analyze(trace))


def test_recompile_findings_say_what_the_recompiles_cost():
    # `shift(x, n)` (dynamic=False) called with n = 0..3: each recompile_reasons artifact is one recompile of frame 1.
    recompiled = sorted(f"[{e['frame_id']}/{e['frame_compile_id']}]"
                        for e, _ in _artifacts("slow_compile_cold", "recompile_reasons"))
    assert recompiled == ["[1/1]", "[1/2]", "[1/3]"]
    metrics = {f"[{e['frame_id']}/{e['frame_compile_id']}]": e["compilation_metrics"]
               for e, _ in _raw("slow_compile_cold") if "compilation_metrics" in e}
    logged = sum(metrics[cid]["entire_frame_compile_time_s"] for cid in recompiled)

    ins = _insights("slow_compile_cold")
    ct = ins.compile_time
    cost = ct.seconds_of(recompiled)
    # The compiles' chromium events, which the analysis reads, span their compilation_metrics' time and a little more.
    assert logged <= cost <= logged * 1.02
    # [1/0] is the first compile of shift, not a recompile; [0/0] the model: neither is counted.
    assert cost < ct.seconds_of(["[1/0]", "[1/1]", "[1/2]", "[1/3]"]) < ct.total_s - ct.seconds_of(["[0/0]"]) + 1e-9
    share = f"({cost / ct.total_s:.0%})"

    (warn,) = [f for f in ins.findings if f.section == "recompiles"]
    assert warn.title == "shift recompiled 3 times"
    assert warn.detail == (f"changed: Python constant; its recompiles took {format_seconds(cost)} of the "
                           f"{format_seconds(ct.total_s)} compiling {share}")
    (took,) = [f for f in ins.findings if f.section == "compile_time"]
    assert took.detail.endswith(f"; recompiles: {format_seconds(cost)} {share}")


def test_no_recompile_cost_without_recompiles():
    # cache_cold.log compiles once ([0/0]): nothing recompiled, so nothing to cost.
    with read_trace(str(torch213("cache_cold.log"))) as trace:
        ins = insights(trace)
    (took,) = [f for f in ins.findings if f.section == "compile_time"]
    assert "recompiles" not in took.detail


def test_diff_says_the_warm_cache_made_the_difference():
    # Every lookup of the cold run missed, every lookup of the warm run (same TORCHINDUCTOR_CACHE_DIR) hit.
    hits = [e for name in ("fx_graph_cache_hit", "aotautograd_cache_hit")
            for e, _ in _artifacts("slow_compile_warm", name)]
    misses = [e for name in ("fx_graph_cache_miss", "aotautograd_cache_miss")
              for e, _ in _artifacts("slow_compile_cold", name)]
    assert len(hits) == len(misses) == 10  # 5 compiles, 2 caches each
    assert not _artifacts("slow_compile_cold", "fx_graph_cache_hit") and not _artifacts("slow_compile_warm", "fx_graph_cache_miss")
    saved_s = sum(json.loads(p)["time_saved_ms"] for _, p in _artifacts("slow_compile_warm", "aotautograd_cache_hit")) / 1000

    cold, warm = _facts("slow_compile_cold"), _facts("slow_compile_warm")
    (change,) = [c for c in diff_runs(cold, warm).changes if c.section == "compile_time"]
    assert change.detail["cause"] == (f"B's cache lookups hit where A's missed (10 hits in B, 0 in A): B reused graphs "
                                      f"that A compiled anew; torch logged {format_seconds(saved_s)} of compiling saved "
                                      "by B's hits")
    (change,) = [c for c in diff_runs(warm, cold).changes if c.section == "compile_time"]
    assert change.detail["cause"].startswith("A's cache lookups hit where B's missed (10 hits in A, 0 in B)")


def test_diff_names_no_cache_cause_between_two_cold_runs():
    # The same program twice, each with a fresh cache dir: the caches missed in both, so they explain no difference.
    cold, cold_again = _facts("diff_base"), _facts("diff_base_again")
    assert cold.cache_saved_s == cold_again.cache_saved_s == 0
    (change,) = [c for c in diff_runs(cold, cold_again, TimeThreshold(seconds=0, ratio=1)).changes
                 if c.section == "compile_time"]
    assert change.detail["cause"] is None


def test_check_names_the_slowest_compile_and_a_cold_cache(capsys, tmp_path):
    # compilation_metrics: [0/0] (co_name forward, the model) is the slowest compile of the cold run by far; most of
    # it is spent in compile_file (g++ on the generated C++).
    metrics = _metrics("slow_compile_cold")
    slowest = max(metrics, key=lambda cid: metrics[cid]["entire_frame_compile_time_s"])
    assert slowest == "[0/0]" and metrics[slowest]["co_name"] == "forward"
    compiling = _within("slow_compile_cold", "0/0", {"compile_file"})
    assert compiling > metrics[slowest]["entire_frame_compile_time_s"] / 2
    # Every FX graph cache lookup missed (and no other outcome was logged).
    assert len(_artifacts("slow_compile_cold", "fx_graph_cache_miss")) == 5
    assert not _artifacts("slow_compile_cold", "fx_graph_cache_hit") + _artifacts("slow_compile_cold", "fx_graph_cache_bypass")

    facts = _facts("slow_compile_cold")
    named = facts.slowest_compile
    assert named["compile_id"] == slowest and named["function"] == "forward"
    assert metrics[slowest]["entire_frame_compile_time_s"] <= named["seconds"] <= facts.compile_time_s
    assert named["phase"] == "kernel_compile" and compiling <= named["phase_s"] <= named["seconds"]
    why = (f"the slowest compile, [0/0] forward, took {format_seconds(named['seconds'])}, "
           f"{format_seconds(named['phase_s'])} of it in {named['phase_label']}; every FX graph cache lookup missed: "
           "a cold cache")
    log = torch213("slow_compile_cold.log.gz")
    limit = f"at most {format_seconds(1)} allowed"
    assert run_cli("check", log, "--max-compile-seconds", "1") == 1
    assert capsys.readouterr().out.strip() == (f"max-compile-seconds: compile time {format_seconds(facts.compile_time_s)}, "
                                               f"{limit}: {why}")
    junit = tmp_path / "check.xml"
    assert run_cli("check", log, "--max-compile-seconds", "1", "--json", "--junit", junit) == 1
    (rule,) = json.loads(capsys.readouterr().out)["rules"]
    assert rule["details"] == [why] and rule["message"].endswith(why)
    assert why in junit.read_text()


def test_check_says_no_cold_cache_where_the_lookups_hit(capsys):
    # The warm run: every FX graph lookup hit; its slowest compile is still [0/0].
    assert not _artifacts("slow_compile_warm", "fx_graph_cache_miss")
    assert run_cli("check", torch213("slow_compile_warm.log.gz"), "--max-compile-seconds", "0.1") == 1
    out = capsys.readouterr().out
    assert ": the slowest compile, [0/0] forward, took " in out and "cold cache" not in out


def test_check_against_a_warm_baseline_says_the_cache_made_the_difference(capsys):
    # The cold run gated on the warm one: slower beyond the noise, and the warm run's hits are why (as in diff, test
    # above), in the gate's words for the two runs.
    saved_s = sum(json.loads(p)["time_saved_ms"] for _, p in _artifacts("slow_compile_warm", "aotautograd_cache_hit")) / 1000
    hits = sum(len(_artifacts("slow_compile_warm", f"{c}_hit")) for c in ("fx_graph_cache", "aotautograd_cache"))
    assert run_cli("check", torch213("slow_compile_cold.log.gz"), "--baseline", torch213("slow_compile_warm.log.gz")) == 1
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert line.startswith("baseline-compile-time: compile time ")
    assert line.endswith(f"; why: the baseline's cache lookups hit where the run's missed ({hits} hits in the baseline, "
                         f"0 in the run): the baseline reused graphs that the run compiled anew; torch logged "
                         f"{format_seconds(saved_s)} of compiling saved by the baseline's hits")


_LOAD, _COMPILERS = {"PyCodeCache.load_by_key_path"}, frozenset({"compile_file", "async_compile.wait"})


def test_loading_cached_kernels_is_a_phase_of_its_own():
    # Warm: every lookup hit, and [0/0] spends most of its time in PyCodeCache.load_by_key_path (importing the cached
    # module and its kernels), of which only a small part runs a compiler (one compile_file, one async_compile.wait,
    # both nested in it): that part is compiling; the rest is loading, not "C++/Triton compile".
    assert not _artifacts("slow_compile_warm", "fx_graph_cache_miss")
    loading = _within("slow_compile_warm", "0/0", _LOAD, outside=_COMPILERS)
    compiling = _within("slow_compile_warm", "0/0", set(_COMPILERS))
    assert _within("slow_compile_warm", "0/0", _LOAD | _COMPILERS) == pytest.approx(loading + compiling, abs=1e-6)
    total = _metrics("slow_compile_warm")["[0/0]"]["entire_frame_compile_time_s"]
    assert loading > total / 2 > compiling

    (model,) = [c for c in _insights("slow_compile_warm").compile_time.compiles if c.compile_id == "[0/0]"]
    assert model.top_phase == "kernel_load"
    assert model.phases["kernel_load"] == pytest.approx(loading, abs=1e-6)
    assert model.phases["kernel_compile"] == pytest.approx(compiling, abs=1e-6)


@pytest.mark.parametrize("name", ["slow_compile_cold", "slow_compile_warm"])
def test_loading_is_the_time_in_load_by_key_path_that_no_compiler_ran(name):
    # Each compile of both runs: cold, load_by_key_path runs the compilers of the kernels it imports (compile_file in
    # async_compile.wait), and [0/0] compiles kernels outside it too (compile_file under Scheduler.codegen).
    # Cold [0/0]'s events do not nest: a compile_file begun before async_compile.wait ends 1.7 ms before it (a pool
    # worker's, logged on the one track), and the analysis closes the wait with it, so the 1.7 ms left in
    # load_by_key_path are charged to loading. Out of 2.39 s in load_by_key_path: 2 ms either way.
    times = {c.compile_id: c for c in _insights(name).compile_time.compiles}
    for cid in ("[0/0]", "[1/0]", "[1/1]", "[1/2]", "[1/3]"):
        loading = _within(name, cid[1:-1], _LOAD, outside=_COMPILERS)
        assert times[cid].phases["kernel_load"] == pytest.approx(loading, abs=2e-3), cid
    cold = {c.compile_id: c for c in _insights("slow_compile_cold").compile_time.compiles}
    assert cold["[0/0]"].top_phase == "kernel_compile"


def _kernel_kinds(path) -> set[str]:
    """The kernels the log's output code defines, by compiler, read from the raw log."""
    text = gzip.decompress(path.read_bytes()).decode()
    return {kind for kind, said in (("cpp", "= async_compile.cpp_pybinding("), ("triton", "= async_compile.triton("))
            if said in text}


@pytest.mark.parametrize("log, kinds, label", [
    # CPU-only (GPU none): Inductor generates C++ kernels that g++ compiles, and no Triton.
    (torch213("slow_compile_cold.log.gz"), {"cpp"}, "C++ compile"),
    (torch213("slow_compile_warm.log.gz"), {"cpp"}, "C++ compile"),
    # H100, GPT-2 generating: Triton kernels only.
    (cuda211("hf_gpt2_generate.log.gz"), {"triton"}, "Triton compile"),
    # A CUDA run whose graph holds a CPU op too (cpp_fused_0 beside the Triton kernels): both compilers ran.
    (cuda211("cudagraph_skips.log.gz"), {"cpp", "triton"}, "C++/Triton compile"),
])
def test_the_kernel_compile_is_named_by_the_compilers_the_log_shows(log, kinds, label):
    assert _kernel_kinds(log) == kinds
    with read_trace(str(log)) as trace:
        times = insights(trace).compile_time
    assert times.labels["kernel_compile"] == label
    (phase,) = [p for p in times.phases if p.phase == "kernel_compile"]
    assert phase.label == label


def test_the_report_draws_the_phases_with_the_logs_labels(tmp_path):
    # The warm run (C++ kernels only, most of [0/0] loading them): the chart's legend and the page say the analysis's
    # labels, not the fixed ones.
    from compilescope.render.charts import CompileTimeChart

    with read_trace(str(torch213("slow_compile_warm.log.gz"))) as trace:
        legend = dict(CompileTimeChart.from_results(insights(trace).compile_time).legend)
    assert legend["kernel_compile"] == "C++ compile" and legend["kernel_load"] == "Loading compiled kernels"
    assert run_cli(torch213("slow_compile_warm.log.gz"), "-o", tmp_path / "report", "--no-browser") == 0
    page = (tmp_path / "report" / "index.html").read_text()
    assert "C++ compile" in page and "Loading compiled kernels" in page and "C++/Triton" not in page


def _benchmark_seconds(log) -> float:
    """Seconds inside Inductor's benchmark events (nested ones counted once), read from the raw chromium events:
    max-autotune's `<op>_template_precompiling`/`_autotuning`, `benchmark_fused_nodes`, `benchmark_codegened_module`,
    `CachingAutotuner.*` (a kernel's launch configs, at compile time or at its first run). One thread: one track."""
    text = gzip.decompress(log.read_bytes()).decode() if log.suffix == ".gz" else log.read_text()
    events, payload = [], None
    for line in text.splitlines():
        if payload is not None and line.startswith("\t"):
            payload.append(line[1:])
            continue
        if payload:
            events.append(json.loads("\n".join(payload)))
        payload = [] if '{"chromium_event"' in line else None
    benchmarks = ("benchmark_fused_nodes", "benchmark_codegened_module")
    depth, start, total = 0, 0.0, 0.0
    for e in events:
        name = e["name"]
        if not (name in benchmarks or name.startswith("CachingAutotuner.")
                or name.endswith(("_template_precompiling", "_template_autotuning"))) or e["ph"] not in ("B", "E"):
            continue
        if e["ph"] == "B":
            depth, start = depth + 1, start if depth else e["ts"]
        else:
            depth -= 1
            total += 0 if depth else (e["ts"] - start) / 1e6
    return total


@pytest.mark.parametrize("log", [
    # H100, max-autotune: two addmm searches (SingleProcess AUTOTUNE: 0.4517 s + 2.0327 s precompiling, 0.2916 s +
    # 2.0375 s), fusions benchmarked both ways (2.84 s and 5.06 s in benchmark_codegened_module), kernels' configs
    # (coordinate descent of triton_poi_fused_gelu_1: 1.11 s at its first run): 15.7 s of a 31 s compile, most of it
    # charged to "Inductor lowering & codegen" (which read 65%) and the coordinate descent to "Triton compile".
    "shared:gpu-torch211/autotune_cudagraphs",
    # H200, GPT-2 generating in the default mode: kernels' launch configs benchmarked at their first run only.
    "hf_gpt2_generate.log.gz",
])
def test_autotuning_is_a_compile_time_phase_of_its_own_not_codegen_or_triton_compile(log):
    from ..gpu_variants import max_autotune_log

    path = max_autotune_log() if log.startswith("shared:") else cuda211(log)
    benchmarked = _benchmark_seconds(path)
    assert benchmarked > 0
    with read_trace(str(path)) as trace:
        found = insights(trace)
    phases = {p.phase: p for p in found.compile_time.phases}
    assert phases["autotune"].label == "Autotuning"
    assert phases["autotune"].seconds == pytest.approx(benchmarked, abs=1e-3)
    # the same seconds as the Autotuning section's, which the report shows beside the phases
    assert found.autotuning.total_s == pytest.approx(benchmarked, abs=1e-3)
    assert found.compile_time.total_s > benchmarked

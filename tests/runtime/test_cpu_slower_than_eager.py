"""A compiled model slower than eager on CPU (torch 2.13, tests/data/torch213/programs/cpu_slower_than_eager.py):
the user warmed up two batch sizes, then profiled five steps eagerly and five compiled, and a third batch size and a
branch taken for the first time recompiled inside the compiled profile.

Expected values come from the raw profiles (json) and the raw log (its compile ids), not from the code under test.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

import compilescope
from compilescope.analyses.analyze import analyze
from compilescope.analyses.runtime.findings import comparison_finding, runtime_finding
from compilescope.ingest.profile import read_profile
from compilescope.wording import format_us

from ..conftest import report, run_cli, torch213
from ..htmltable import table_rows
from .test_runtime import _raw_events, _runtime

NAME = "cpu_slower_than_eager"
LOG, EAGER, COMPILED = (torch213(f"{NAME}{suffix}") for suffix in
                        (".log.gz", ".eager.profile.json.gz", ".compiled.profile.json.gz"))
COMPILE_ID_RANGE = re.compile(r"^dynamo_data: compile_id=(\d+)/(\d+)$")


def _compiles_in(profile: Path) -> list[tuple[str, float, bool]]:
    """(compile id, its `dynamo` range's duration, recompile) of each compile torch's ranges name, in order."""
    raw = sorted(_raw_events(profile), key=lambda e: e["ts"])
    ranges = [e for e in raw if e["name"] == "dynamo"]
    out = []
    for e in raw:
        m = COMPILE_ID_RANGE.match(e["name"])
        if m:
            around = next(r for r in ranges if r["ts"] <= e["ts"] <= r["ts"] + r["dur"])
            out.append((f"[{m[1]}/{m[2]}]", around["dur"], m[2] != "0"))
    return out


def _log_compile_ids() -> set[str]:
    with gzip.open(LOG, "rt") as f:
        return {f"[{a}/{b}]" for a, b in re.findall(r'"frame_id": (\d+), "frame_compile_id": (\d+)', f.read())}


def test_each_compile_in_the_profile_is_named_timed_and_told_a_recompile():
    expected = _compiles_in(COMPILED)
    # The raw profile: a new batch size recompiled forward ([0/2]) and the resume functions after its graph break
    # ([1/1], [3/1]), all after the warm-up, all of them compile ids of the log.
    assert sorted(c for c, _, _ in expected) == ["[0/2]", "[1/1]", "[3/1]"]
    assert {c for c, _, _ in expected} <= _log_compile_ids()
    runtime = _runtime(LOG, COMPILED, EAGER)
    compiled, eager = runtime.profiles
    assert [(str(c.compile_id), c.recompile) for c in compiled.compiles] == [(c, r) for c, _, r in expected]
    for got, (_, us, _) in zip(compiled.compiles, expected):
        assert got.us == pytest.approx(us)
    assert sum(c.us for c in compiled.compiles) == pytest.approx(compiled.compiling_us, rel=1e-3)
    assert eager.compiles == [] and eager.compiling_us == 0


def test_the_findings_say_the_compiled_run_was_slower_as_profiled_and_that_warming_up_does_not_help():
    expected = _compiles_in(COMPILED)
    raw_eager, raw_compiled = _raw_events(EAGER), _raw_events(COMPILED)
    span = {name: max(e["ts"] + e["dur"] for e in raw) - min(e["ts"] for e in raw)
            for name, raw in (("eager", raw_eager), ("compiled", raw_compiled))}
    assert span["compiled"] > 10 * span["eager"]  # as recorded: seconds of compiling against a sub-second eager run
    runtime = _runtime(LOG, COMPILED, EAGER)
    c = runtime.comparison
    assert c is not None and c.speedup and c.speedup > 1  # without the compiling, the fused kernel wins
    title, _ = comparison_finding(c)
    assert "so as profiled it was slower" in title
    assert f"{len(expected)} recompiles: {', '.join(cid for cid, _, _ in expected)}" in title
    _, detail = runtime_finding(runtime.profiles[0])
    assert "which a warm-up step does not leave out" in detail
    assert "profile after a first step" not in detail  # every compile here is a recompile: a warm-up ran before


def test_a_first_compile_in_the_profile_keeps_the_warm_up_advice(tmp_path):
    """The same profile with its first compile renamed [0/0] (a first call's compile): warming up does leave that
    one out, so the advice is given for it, and the recompiles are still named."""
    with gzip.open(COMPILED, "rt") as f:
        data = json.load(f)
    first = _compiles_in(COMPILED)[0][0].strip("[]")
    for e in data["traceEvents"]:
        if isinstance(e.get("name"), str) and e["name"].endswith(f"compile_id={first}"):
            e["name"] = e["name"][: -len(first)] + "0/0"
    derived = tmp_path / "first_compile.json"
    derived.write_text(json.dumps(data))
    p = _runtime(LOG, derived).profiles[0]
    assert [str(c.compile_id) for c in p.compiles][0] == "[0/0]" and not p.compiles[0].recompile
    _, detail = runtime_finding(p)
    assert "2 recompiles in it" in detail and "profile after a first step to leave the compile out" in detail
    # An inference run (torch.no_grad(), every graph an aot_inference_graph, no backward compiled): the step to warm up
    # has no backward, which the advice said it had.
    with gzip.open(LOG, "rt") as f:
        log = f.read()
    assert '"aot_inference_graph"' in log and '"aot_backward_graph"' not in log and "bwd_compilation_metrics" not in log
    assert "backward" not in detail


def test_the_runtime_page_and_summary_json_list_the_compiles(tmp_path, capsys):
    expected = _compiles_in(COMPILED)
    report(LOG, tmp_path / "report", "--profile", str(COMPILED), "--profile", str(EAGER))
    page = (tmp_path / "report" / "runtime.html").read_text()
    listed = re.search(r"<p>Compiled in this profile: (.*?)</p>", page)
    assert listed is not None
    assert re.findall(r'<span class="mono">(\[\d+/\d+\])</span>', listed[1]) == [cid for cid, _, _ in expected]
    assert listed[1].count("(recompile)") == len(expected) and "A warm-up step before profiling does not" in listed[1]
    assert "Left out of the compiled side" in page
    with compilescope.load(LOG) as trace:
        results = analyze(trace, [read_profile(str(COMPILED)), read_profile(str(EAGER))])
        data = results.runtime.to_json()
    assert [c["compile_id"] for c in data["profiles"][0]["compiles"]] == [cid for cid, _, _ in expected]
    assert [c["compile_id"] for c in data["comparison"]["compiled_compiles"]] == [cid for cid, _, _ in expected]


def test_the_eager_side_of_a_comparison_is_said_to_be_the_eager_run():
    """Given with a compiled profile of the same log, the eager profile's note names it the eager run, not a profile
    that may lack enable_kernel_profile (the compiled one names its cpp_fused_* kernels: the config was on)."""
    raw = _raw_events(EAGER)
    assert not any(e["name"].startswith(("## Call CompiledFxGraph", "Torch-Compiled Region")) for e in raw)
    assert any(re.match(r"graph_\d+_cpp_fused_", e["name"]) for e in _raw_events(COMPILED))
    eager = _runtime(LOG, COMPILED, EAGER).profiles[1]
    assert eager.not_joined == eager.notes[0]
    assert eager.not_joined.startswith(f"the eager run, compared below with {COMPILED.name}")
    assert "enable_kernel_profile" not in eager.not_joined
    alone = _runtime(LOG, EAGER).profiles[0]  # no compiled profile to compare with: the hint stays
    assert "enable_kernel_profile" in (alone.not_joined or "")


def test_a_resume_functions_compile_inside_a_compiled_region_is_not_that_regions(tmp_path):
    """The profile's first step, cut after it: [0/0]'s compiled code called the resume function after its graph
    break, and Dynamo compiled it ([3/1]) inside the range of the region `Torch-Compiled Region: 0/0`. That time is
    [3/1]'s compile, not [0/0]'s."""
    with gzip.open(COMPILED, "rt") as f:
        data = json.load(f)
    timed = sorted((e for e in data["traceEvents"] if e.get("ph") == "X"), key=lambda e: e["ts"])
    first_compile = next(e for e in timed if COMPILE_ID_RANGE.match(e["name"]))
    region = next(e for e in timed if e["name"].startswith("Torch-Compiled Region: ")
                  and e["ts"] <= first_compile["ts"] <= e["ts"] + e["dur"])
    assert region["name"] == "Torch-Compiled Region: 0/0" and first_compile["name"].endswith("compile_id=3/1")
    end = region["ts"] + region["dur"]
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("ph") != "X" or e["ts"] + e["dur"] <= end]
    cut = tmp_path / "first_step.json"
    cut.write_text(json.dumps(data))
    p = _runtime(LOG, cut).profiles[0]
    compiling = [k for k in p.kernels if k.kind == "compile"]
    assert len(compiling) == 1 and compiling[0].compile_id is None  # was [0/0], the region it ran in
    assert [str(c.compile_id) for c in p.compiles] == ["[3/1]"]


def _inside(e: dict, around: dict) -> bool:
    return around is not e and around["ts"] <= e["ts"] and e["ts"] + e["dur"] <= around["ts"] + around["dur"]


def test_the_graphs_addmm_is_compared_with_the_eager_linear_that_ran_it():
    """Eager runs nn.Linear as aten::linear (aten::t, then aten::addmm inside it); the compiled graph calls
    extern_kernels.addmm (the transpose is a view). Op by op, the two are one row, not an addmm only compiled ran
    and a linear only eager ran."""
    eager_raw, compiled_raw = _raw_events(EAGER), _raw_events(COMPILED)
    linears = [e for e in eager_raw if e["name"] == "aten::linear"]
    eager_addmm = [e for e in eager_raw if e["name"] == "aten::addmm"]
    assert linears and all(any(_inside(a, lin) for lin in linears) for a in eager_addmm)
    graphs = [e for e in compiled_raw if e["name"].startswith("## Call CompiledFxGraph ")]
    compiled_addmm = [e for e in compiled_raw if e["name"] == "aten::addmm" and any(_inside(e, g) for g in graphs)
                      and not any(_inside(e, o) for o in compiled_raw if o["name"] == "aten::addmm")]
    assert not any(e["name"] == "aten::linear" and any(_inside(e, g) for g in graphs) for e in compiled_raw)
    c = _runtime(LOG, COMPILED, EAGER).comparison
    rows = {o.name: o for o in c.ops}
    assert "aten::linear" not in rows
    addmm = rows["aten::addmm"]
    assert addmm.eager_op == "aten::linear"
    assert (addmm.eager_calls, addmm.compiled_calls) == (len(linears), len(compiled_addmm))
    assert addmm.eager_us == pytest.approx(sum(e["dur"] for e in linears), abs=0.01)  # (own times: ts + dur digits)
    assert addmm.compiled_us == pytest.approx(sum(e["dur"] for e in compiled_addmm), abs=0.01)


def test_a_graph_called_once_is_said_to_be_called_once(capsys):
    """The compiled profile's graph ranges (`## Call CompiledFxGraph <key> ##`): five graphs ran once ([0/1], [0/2],
    [1/1], [3/0], [3/1]: a batch size or a branch met once in the five steps). The terminal's "by graph" line said
    "(1 calls)" of each."""
    calls: dict[str, int] = {}
    for e in _raw_events(COMPILED):
        if e["name"].startswith("## Call CompiledFxGraph "):
            calls[e["name"]] = calls.get(e["name"], 0) + 1
    once, twice = (sum(1 for n in calls.values() if n == k) for k in (1, 2))
    assert (once, twice) == (5, 1)
    assert run_cli("summary", LOG, "--profile", COMPILED) == 0
    out = capsys.readouterr().out
    by_graph = " ".join(out[out.index("by graph"):].split("\n...")[0].split())  # rich wraps it at the terminal's width
    assert "calls)" in by_graph and "(1 calls)" not in by_graph
    assert (by_graph.count("(1 call)"), by_graph.count("(2 calls)")) == (once, twice)


def test_the_slower_as_profiled_clause_needs_compiling_that_outweighs_a_gain():
    """The real comparison, changed one fact at a time: without the compiles in its profile, or with the compiled
    side already the slower at its work, there is no 'but ... so as profiled it was slower' (it was said of a profile
    holding 0 µs of compiling, 0 recompiles)."""
    import dataclasses

    c = _runtime(LOG, COMPILED, EAGER).comparison
    assert c is not None and c.compiled_compiles
    no_compiles = dataclasses.replace(c, compiled_compiles=[])
    assert "as profiled" not in comparison_finding(no_compiles)[0]
    already_slower = dataclasses.replace(c, eager_us=c.compiled_us / 2)
    title, _ = comparison_finding(already_slower)
    assert "2.00x slower than eager" in title and "as profiled" not in title


def _run_calls(raw: list[dict], name: str) -> list[dict]:
    """The calls of an op or kernel in compiled graphs' calls, outside compiling: the outermost event of that name
    inside a `## Call CompiledFxGraph` range and in no `dynamo` range (a compile's own calls, on fake tensors)."""
    graphs = [e for e in raw if e["name"].startswith("## Call CompiledFxGraph ")]
    compiling = [e for e in raw if e["name"] == "dynamo"]
    same = [e for e in raw if e["name"] == name]
    return sorted((e for e in same if any(_inside(e, g) for g in graphs) and not any(_inside(e, c) for c in compiling)
                   and not any(_inside(e, o) for o in same)), key=lambda e: e["ts"])


def _median(values: list[float]) -> float:
    values, half = sorted(values), len(values) // 2
    return values[half] if len(values) % 2 else (values[half - 1] + values[half]) / 2


def test_the_linears_slow_first_calls_in_two_graphs_are_told_apart_from_its_steady_state():
    """The Linear at line 23 ran in [0/0] (batch 8, three calls), [0/1] (24) and [0/2] (40) as extern_kernels.addmm:
    in the raw profile, [0/1]'s call (its first in the profile) and [0/2]'s (its first ever, right after [0/2]
    compiled in the profile) took milliseconds, [0/0]'s under a tenth of one. Those two calls are a fifth of the
    run: where the time goes must say they are no steady state."""
    from compilescope.analyses.runtime.slow_calls import SLOW_CALL_FACTOR, SLOW_CALL_MIN_US
    raw = _raw_events(COMPILED)
    calls = _run_calls(raw, "aten::addmm")
    regions = [e for e in raw if e["name"].startswith("Torch-Compiled Region: ")]

    def region(e: dict) -> str:  # the innermost compiled region around it names its graph's compile id
        around = min((r for r in regions if _inside(e, r)), key=lambda r: r["dur"])
        return "[" + around["name"].rpartition(" ")[2] + "]"

    assert [region(e) for e in calls] == ["[0/0]", "[0/1]", "[0/0]", "[0/2]", "[0/0]"]
    median = _median([e["dur"] for e in calls])
    slow = [(n, e) for n, e in enumerate(calls, 1)
            if e["dur"] >= SLOW_CALL_FACTOR * median and e["dur"] - median >= SLOW_CALL_MIN_US]
    assert [(n, region(e)) for n, e in slow] == [(2, "[0/1]"), (4, "[0/2]")]
    compiled_0_2 = next(e for e in raw if e["name"] == "dynamo_data: compile_id=0/2")
    assert compiled_0_2["ts"] + compiled_0_2["dur"] < slow[1][1]["ts"]

    p = _runtime(LOG, COMPILED, EAGER).profiles[0]
    assert len(p.slow_calls) == 1
    found = p.slow_calls[0]
    assert (found.name, found.kind, [u.short for u in found.user_lines]) == ("aten::addmm", "extern",
                                                                             [f"{NAME}.py:23"])
    assert found.calls == len(calls) and found.median_us == pytest.approx(median, abs=0.01)
    assert [(s.nth, str(s.compile_id), s.first_in_graph, s.after_compile) for s in found.slow] == [
        (2, "[0/1]", True, False), (4, "[0/2]", True, True)]
    assert [s.us for s in found.slow] == pytest.approx([e["dur"] for _, e in slow], abs=0.01)
    over = sum(e["dur"] - median for _, e in slow)
    assert p.slow_us == pytest.approx(over, abs=0.05)
    assert over / p.run_us > 0.1  # as recorded: the two calls distort the run's shares
    _, detail = runtime_finding(p)
    assert "2 calls far longer than their kernel's median call" in detail
    assert "the first after [0/2] compiled in this profile" in detail and "[0/1]'s first in the profile" in detail
    assert f"in a steady state it would take {format_us(p.run_us - over)}, not {format_us(p.run_us)}" in detail


def test_a_kernel_that_varies_less_than_tenfold_and_eager_ops_are_not_slow_calls():
    """The fused kernel's five calls vary (another process on the core), under ten times its median: no finding. The
    eager run's aten::mul stands for the head's (batch, 16) products and smooth's (512, 1024) ones alike: ten times its
    median says nothing of a call, so eager ops are not judged."""
    raw = _raw_events(COMPILED)
    fused = _run_calls(raw, "graph_2_cpp_fused_add_cos_exp_gt_mul_neg_sin_sum_where_0")
    assert len(fused) == 5 and max(e["dur"] for e in fused) < 10 * _median([e["dur"] for e in fused])
    muls = [e["dur"] for e in _raw_events(EAGER) if e["name"] == "aten::mul"]
    assert max(muls) > 100 * _median(muls)
    compiled, eager = _runtime(LOG, COMPILED, EAGER).profiles
    assert all(s.name != "cpp_fused_add_cos_exp_gt_mul_neg_sin_sum_where_0" for s in compiled.slow_calls)
    assert eager.slow_calls == [] and eager.slow_said == ""


def test_the_slow_calls_are_on_the_runtime_page_in_summary_and_in_json(tmp_path, capsys):
    report(LOG, tmp_path / "report", "--profile", str(COMPILED), "--profile", str(EAGER))
    page = (tmp_path / "report" / "runtime.html").read_text()
    slow = re.findall(r'<p class="rt-slow">Slow calls: (.*?)</p>', page)
    assert len(slow) == 1 and "aten::addmm (cpu_slower_than_eager.py:23): 2 of its 5 calls" in slow[0]
    capsys.readouterr()
    assert run_cli("summary", LOG, "--profile", COMPILED, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    compiled = data["runtime"]["profiles"][0]
    assert [(s["compile_id"], s["nth"]) for c in compiled["slow_calls"] for s in c["slow"]] == [("[0/1]", 2), ("[0/2]", 4)]
    assert compiled["slow_us"] == pytest.approx(sum(c["over_median_us"] for c in compiled["slow_calls"]), abs=0.01)
    assert run_cli("summary", LOG, "--profile", COMPILED) == 0
    assert "slow calls: 2 calls far longer" in capsys.readouterr().out


def test_the_chart_of_a_profile_that_compiled_gives_each_kind_its_part_of_the_run(tmp_path):
    """The compiled profile is 99% compiling: the kinds' shares of the total said the fused kernel's Inductor time was
    0.9%, and only the kernel rows said what it was of the run. The kinds table has the run's column too."""
    raw = [e for e in _raw_events(COMPILED) if e.get("cat") != "Trace"]  # (the profiler's own span)
    span = max(e["ts"] + e["dur"] for e in raw) - min(e["ts"] for e in raw)
    compiling = [e for e in raw if e["name"] == "dynamo"]  # the outermost compile ranges: nothing compiles outside
    assert not any(_inside(c, o) for c in compiling for o in compiling)
    run = span - sum(e["dur"] for e in compiling)
    kernels = [e for e in raw if re.match(r"graph_\d+_cpp_", e["name"]) and not any(_inside(e, c) for c in compiling)]
    inductor = sum(e["dur"] for e in kernels) / run
    assert inductor > 0.5  # as recorded: the fused kernel is most of the run
    report(LOG, tmp_path / "report", "--profile", str(COMPILED))
    page = (tmp_path / "report" / "runtime.html").read_text()
    kinds = page[page.index('<table class="rt-kinds">'):]
    kinds = kinds[:kinds.index("</table>")]
    assert "<th>of the run</th>" in kinds
    row = re.search(r"Inductor kernel</td><td>[^<]*</td><td>([\d.]+)%</td><td>([\d.]+)%</td>", kinds)
    assert row is not None and float(row[2]) == pytest.approx(inductor * 100, abs=0.051)
    assert re.search(r"compiling \(torch.compile(?:'|&#39;)s own work\)</td><td>[^<]*</td><td>[\d.]+%</td><td>–</td>", kinds)


def test_the_speedup_is_also_said_with_the_compiled_sides_slow_calls_at_their_median():
    """The compiled side's busy time holds the Linear's two slow first calls ([0/1]'s and [0/2]'s aten::addmm, the
    raw profile's milliseconds against a median under 0.1 ms): a fifth of it, which the eager side (warmed up at those
    sizes) never paid. The finding gives the speedup with those calls at their median too, as a steady state runs."""
    from compilescope.analyses.runtime.slow_calls import SLOW_CALL_FACTOR, SLOW_CALL_MIN_US
    calls = [e["dur"] for e in _run_calls(_raw_events(COMPILED), "aten::addmm")]
    median = _median(calls)
    slow = [us for us in calls if us >= SLOW_CALL_FACTOR * median and us - median >= SLOW_CALL_MIN_US]
    over = sum(us - median for us in slow)
    assert len(slow) == 2
    c = _runtime(LOG, COMPILED, EAGER).comparison
    assert c is not None and c.timeline == "cpu"
    assert c.compiled_slow_calls == 2 and c.compiled_slow_us == pytest.approx(over, abs=0.05)
    assert c.steady_speedup == pytest.approx(c.eager_us / (c.compiled_us - over), rel=1e-6)
    assert c.steady_speedup > c.speedup  # the slow calls made compiled look slower than it runs
    title, _ = comparison_finding(c)
    assert (f"; with its 2 slow calls at their kernels' median ({format_us(over)} over it, "
            f"{over / c.compiled_us:.0%} of its time), {c.steady_speedup:.2f}x faster; but its profile also holds") in title
    assert c.to_json()["steady_speedup"] == c.steady_speedup


def test_a_profile_of_compiled_regions_without_inductor_says_they_ran():
    """profile_eager_backend.py compiles with backend="aot_eager" and profiles 3 calls: torch's "Torch-Compiled
    Region: 0/0" ran 3 times, and the log holds no Inductor code. The note said no compiled graph ran (an eager run)
    and pointed at enable_kernel_profile, which names Inductor's kernels, of which there are none."""
    log = torch213("profile_eager_backend.log.gz")
    profile = torch213("profile_eager_backend.compiled.profile.json.gz")
    regions = [e for e in _raw_events(profile) if e["name"] == "Torch-Compiled Region: 0/0"]
    assert len(regions) == 3
    assert "inductor_output_code" not in gzip.decompress(log.read_bytes()).decode()
    runtime = _runtime(log, profile).profiles[0]
    assert runtime.not_joined == runtime.notes[0]
    assert runtime.not_joined.startswith("compiled graphs ran in this profile ([0/0]), but this log holds no "
                                         "Inductor code of them: ")
    assert "enable_kernel_profile" not in runtime.not_joined and "eager run" not in runtime.not_joined


def test_the_ops_a_compiled_region_ran_without_inductor_are_its_graphs_time():
    """profile_eager_backend (backend="aot_eager"): the ATen ops inside each 'Torch-Compiled Region: 0/0' are the
    region's graph, run by its backend. "by graph" said "no compiled graph 97.6%": those ops counted as eager ops outside
    any graph. They are [0/0]'s graph's time, its 3 calls; the op rows are ATen ops in a compiled region (as the note
    says)."""
    log = torch213("profile_eager_backend.log.gz")
    profile = torch213("profile_eager_backend.compiled.profile.json.gz")
    raw = _raw_events(profile)
    regions = [e for e in raw if e["name"] == "Torch-Compiled Region: 0/0"]
    ops = [e for e in raw if e["name"].startswith("aten::") and any(_inside(e, r) for r in regions)]
    outermost = [e for e in ops if not any(_inside(e, o) for o in ops)]
    in_regions_us = sum(e["dur"] for e in outermost)
    runtime = _runtime(log, profile).profiles[0]
    graph = next(g for g in runtime.graphs if g.region == "0/0")
    # (no compile id: with no Inductor code to join, the log cannot say the profile is of this run: not_joined)
    assert graph.calls == 3 and graph.outside_label is None
    assert graph.total_us == pytest.approx(in_regions_us, rel=0.01)
    outside = next(g for g in runtime.graphs if g.outside_label == "no compiled graph")
    assert graph.share > 0.85 and outside.share < 0.1
    assert any(r.name == "aten::gelu" and r.kind == "region_op" for r in runtime.kernels)


def test_the_ops_a_compiled_region_ran_without_inductor_are_not_called_eager(tmp_path, capsys):
    """profile_eager_backend (backend="aot_eager"): the Runtime page said "eager op (no compiled graph) 90.4%" by
    kind, put the same 90.4% in "Torch-Compiled Region: 0/0" by graph, and "No compiled graph ran in this profile"
    by user source line, under a note saying compiled graphs ran ([0/0]). The ops inside the regions are a kind of
    their own, and the lines say why they have none."""
    log = torch213("profile_eager_backend.log.gz")
    profile = torch213("profile_eager_backend.compiled.profile.json.gz")
    runtime = _runtime(log, profile).profiles[0]
    kinds = {label: share for _, label, _, share in runtime.by_kind}
    assert kinds["ATen op in a compiled region (backend without Inductor)"] == pytest.approx(0.904, abs=0.002)
    assert "eager op (no compiled graph)" not in kinds
    assert runtime.no_lines is not None and "No compiled graph ran" not in runtime.no_lines
    assert runtime.no_lines.startswith("A backend other than Inductor ran this profile's compiled graphs as ATen ops")
    assert run_cli(log, "--profile", profile, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "runtime.html").read_text()
    assert "ATen op in a compiled region (backend without Inductor)" in page
    assert "eager op (no compiled graph)" not in page and "No compiled graph ran in this profile" not in page


def test_an_op_partly_inside_compiled_regions_is_split_between_region_and_eager():
    """profile_eager_backend_mixed (backend="aot_eager", PROFILE_VARIANT=mixed): aten::gelu ran 3 times in
    "Torch-Compiled Region: 0/0" (the region's graph) and 3 times after it, in the user's eager code. The op was one
    "eager op (no compiled graph)" row of 6 calls, so by kind said the region's graph ran less than by graph did. Now
    its calls inside are the region's (region_op), those outside eager, and by kind's region_op equals the graph."""
    log = torch213("profile_eager_backend_mixed.log.gz")
    profile = torch213("profile_eager_backend_mixed.compiled.profile.json.gz")
    raw = _raw_events(profile)
    regions = [e for e in raw if e["name"] == "Torch-Compiled Region: 0/0"]
    gelus = [e for e in raw if e["name"] == "aten::gelu"]
    inside = [e for e in gelus if any(_inside(e, r) for r in regions)]
    assert len(regions) == 3 and len(gelus) == 6 and len(inside) == 3
    runtime = _runtime(log, profile).profiles[0]
    gelu = {r.kind: r for r in runtime.kernels if r.name == "aten::gelu"}
    assert set(gelu) == {"region_op", "eager"}
    assert gelu["region_op"].calls == 3 and gelu["eager"].calls == 3
    assert gelu["region_op"].total_us == pytest.approx(sum(e["dur"] for e in inside), rel=0.01)
    graph = next(g for g in runtime.graphs if g.region == "0/0")
    kinds = {kind: us for kind, _, us, _ in runtime.by_kind}
    assert kinds["region_op"] == pytest.approx(graph.total_us)
    assert sum(r.share for r in runtime.kernels) == pytest.approx(1.0, abs=1e-4)


def test_a_rows_kind_is_said_in_words_alike_in_the_terminal_the_report_and_json(tmp_path, capsys):
    """profile_eager_backend (backend="aot_eager"): summary's kernel rows said "aten::gelu (region_op)", the kind's
    raw name, where the report's kernel table said it in words. The analysis hands all three the row's kind_label;
    --json keeps the raw kind beside it."""
    log = torch213("profile_eager_backend.log.gz")
    profile = torch213("profile_eager_backend.compiled.profile.json.gz")
    assert run_cli("summary", log, "--profile", profile) == 0
    out = capsys.readouterr().out
    assert "(region_op" not in out and "aten::gelu (ATen op in a compiled region)" in out
    assert run_cli(log, "--profile", profile, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "runtime.html").read_text()
    kernels = page.split('class="rt-kernels"')[1].split("</table>")[0]
    gelu = next(r for r in table_rows(f"<table>{kernels}</table>") if "aten::gelu" in r)
    assert "ATen op in a compiled region" in gelu
    capsys.readouterr()
    assert run_cli("summary", log, "--profile", profile, "--json") == 0
    rows = json.loads(capsys.readouterr().out)["runtime"]["profiles"][0]["kernels"]
    gelu_json = next(r for r in rows if r["name"] == "aten::gelu")
    assert (gelu_json["kind"], gelu_json["kind_label"]) == ("region_op", "ATen op in a compiled region")

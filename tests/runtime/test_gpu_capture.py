"""A GPU profile recorded by capture(profile=True) around a model's first calls (tests/data/cuda_torch211, an H200):
the profile holds the compile and the first run's autotuning, and the runtime analysis keeps them apart from the run.

Expected values come from the files themselves: the kernels' call sites in the log's output code, read with a regex,
and the profile's events, read with json.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import statistics

import pytest

import compilescope
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.analyses.runtime import AUTOGRAD_NODE, COMPILING, GPU_IDLE
from compilescope.analyses.runtime.findings import comparison_finding, runtime_finding
from compilescope.analyses.runtime.log_index import LogIndex
from compilescope.analyses.runtime.slow_calls import _outermost_ops
from compilescope.analyses.runtime.timeline import threads_of
from compilescope.ingest.profile import read_profile
from compilescope.wording import format_us

from ..conftest import cuda211, report, run_cli
from ..htmltable import table_rows
from ..provenance.helpers import RawGraph, raw_graphs
from .intervals import union_length
from .test_runtime import _runtime


def _call_sites() -> dict[str, int]:
    """How many times the output code (forward and backward) launches each Triton kernel."""
    with gzip.open(cuda211("capture_profile.log.gz"), "rt", encoding="utf-8") as f:
        text = f.read()
    sites: dict[str, int] = {}
    for name in re.findall(r"\b(triton_\w+)\.run\(", text):
        sites[name] = sites.get(name, 0) + 1
    return sites


def test_kernels_count_the_five_steps_not_the_autotuning_of_the_first():
    p = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    assert p.timeline == "gpu" and p.matched
    rows = [k for k in p.kernels if k.kind == "inductor"]
    sites = _call_sites()
    assert len(rows) == len(sites) == 13
    # Each launch site ran once per step; the first step's autotuning benchmarked the same kernels many more times.
    assert {k.name: k.calls for k in rows} == {name: 5 * n for name, n in sites.items()}
    with gzip.open(cuda211("capture_profile.profile.json.gz"), "rt") as f:
        launched = sum(1 for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel" and e["name"] in sites)
    assert launched > 5 * sum(sites.values())  # the benchmark runs are in the profile, as "compiling"
    assert all(str(k.compile_id) == "[0/0]" and k.user_lines for k in rows)


def test_the_gpu_waiting_for_the_compile_is_compiling_not_idle():
    p = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    share = {k.name: k.share for k in p.kernels if k.kind in ("compile", "idle")}
    # The block compiled the forward, then the backward at the first backward(): seconds, against a few ms of run.
    assert share[COMPILING] > 0.9
    assert share[GPU_IDLE] < 0.1
    assert sum(k.share for k in p.kernels) == pytest.approx(1.0)


def test_shares_of_the_run_leave_the_compile_out_and_say_the_gpu_waits(tmp_path, capsys):
    log, profile = cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")
    p = _runtime(log, profile).profiles[0]
    assert p.compiling_us + p.run_us == pytest.approx(p.total_us) and 0 < p.run_us < p.compiling_us
    rows = [k for k in p.kernels if k.name != COMPILING]
    assert sum(k.run_share for k in rows) == pytest.approx(1.0)
    assert all(k.run_share == pytest.approx(k.total_us / p.run_us) for k in rows)
    assert sum(g.run_share for g in p.graphs) == pytest.approx(1.0)
    idle = next(k for k in rows if k.name == GPU_IDLE)
    title, detail = runtime_finding(p)
    assert title == f"profile capture_profile.profile.json.gz: 5.68 s of GPU time, {p.compiling_us / p.total_us:.0%} of it compiling"
    # Most of that idle time is the first calls' loading (cuBLAS's first addmm: 113 ms): no launch-bound advice.
    assert f"the GPU is idle {idle.run_share:.0%} of the run, first calls included" in detail
    assert "reduce-overhead" not in detail
    # The block's forward and backward compiled (the log's aot_backward_graph, bwd_compilation_metrics): a warm-up step
    # is both, which an inference run's advice does not say.
    with gzip.open(log, "rt") as f:
        text = f.read()
    assert '"aot_backward_graph"' in text and '"bwd_compilation_metrics"' in text
    assert "profile after a first step (forward and backward) to leave the compile out" in detail
    # The terminal's table keeps kernel names readable on 80 columns; the page has a column of the run.
    assert run_cli("summary", log, "--profile", profile) == 0
    out = capsys.readouterr().out
    assert "compiling (Dynamo, AOTAutograd, Inductor)" in out and max(len(line) for line in out.splitlines()) <= 80
    report(log, tmp_path / "out", "--profile", profile)
    page = (tmp_path / "out" / "runtime.html").read_text()
    assert "<th>of the run</th>" in page and "compiling, " in page
    rows = table_rows(page)
    header = next(r for r in rows if r[:3] == ["share", "of the run", "time"])
    kernel_rows = [r for r in rows if len(r) > 4 and r[4].startswith(("triton_", "compiling ("))]
    assert kernel_rows and all(len(r) == len(header) for r in kernel_rows)
    by_name = {r[4]: r for r in kernel_rows}
    assert by_name["compiling (Dynamo, AOTAutograd, Inductor)"][1] == "–"
    assert all(r[1].endswith("%") for name, r in by_name.items() if name.startswith("triton_"))


def test_cuda_graph_replays_compared_with_eager_by_wall_time_too():
    """programs/profile_cudagraphs.py on an H200: reduce-overhead and eager, warmed up, then 5 calls each in
    record_function ranges. CUDA graphs save launches, which kernel time does not see and the ranges' wall time does."""
    profile = cuda211("profile_cudagraphs.profile.json.gz")
    runtime = _runtime(cuda211("profile_cudagraphs.log.gz"), profile)
    with gzip.open(profile, "rt") as f:
        events = json.load(f)["traceEvents"]
    ranges = {e["name"]: e["dur"] for e in events if e.get("cat") == "user_annotation"}
    c = runtime.comparison
    assert (c.eager_wall_us, c.compiled_wall_us) == (pytest.approx(ranges["eager"]), pytest.approx(ranges["compiled"]))
    assert c.wall_speedup == pytest.approx(ranges["eager"] / ranges["compiled"]) and c.wall_speedup > 2
    assert 0.9 < c.speedup < 1.2  # the same GEMMs either way: kernel time barely moves
    [p] = runtime.profiles
    assert p.graph_launches == 5 == sum(1 for e in events if e.get("name") == "cudaGraphLaunch")
    triton = [k for k in p.kernels if k.kind == "inductor"]
    assert triton and all(k.calls == 5 and str(k.compile_id) == "[0/0]" and k.user_lines for k in triton)
    # The GPU's idle time is the whole profile's, eager and compiled calls (and the gap between them) together: the
    # finding gives each part its own share and cause, the eager part's launches, the compiled part's CPU. Each part's
    # kernels are those its CPU range launched (by correlation id), on the one stream; its idle time is their span less
    # their time.
    launched_in = {e["args"]["correlation"]: r["name"] for e in events for r in events
                   if e.get("cat") in ("cuda_runtime", "cuda_driver") and r.get("cat") == "user_annotation"
                   and r["ts"] <= e["ts"] < r["ts"] + r["dur"]}
    idle_of = {}
    for part in ("eager", "compiled"):
        ran = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                     if e.get("cat") == "kernel" and launched_in.get(e["args"]["correlation"]) == part)
        busy = sum(end - start for start, end in ran)  # (one stream: no kernel overlaps another)
        idle_of[part] = (ran[-1][1] - ran[0][0] - busy, ran[-1][1] - ran[0][0])
    assert [(i.part, i.idle_us, i.span_us, i.graph_launches) for i in p.idle_by_part] == [
        ("eager", pytest.approx(idle_of["eager"][0]), pytest.approx(idle_of["eager"][1]), 0),
        ("compiled", pytest.approx(idle_of["compiled"][0]), pytest.approx(idle_of["compiled"][1]), 5)]
    eager, compiled = (f"{idle / span:.0%} ({format_us(idle)})" for idle, span in idle_of.values())
    assert (eager, compiled) == ("88% (1.4 ms)", "84% (937 µs)")
    _, detail = runtime_finding(p)
    assert (f"{eager[:3]} of the eager part {eager[4:]}, launch-bound (small kernels, Python between them), where CUDA "
            f"graphs (mode=\"reduce-overhead\") help; {compiled[:3]} of the compiled part {compiled[4:]}, with CUDA graphs "
            "on: the CPU keeps it "
            "waiting") in detail
    assert "of the run, with CUDA graphs on" not in detail  # no share of the whole given the compiled part's cause


def test_the_share_in_compiled_graphs_is_of_the_compiled_part_when_one_profile_holds_both_runs(tmp_path):
    """profile_cudagraphs.py's one profile holds its eager calls, then its compiled ones (record_function ranges): the
    share in compiled graphs is of the compiled part's GPU time (its kernels' span: kernels and the idle between them,
    as the whole's total counts it), not of the whole, where the eager run's 1.6 ms would count against it."""
    profile = cuda211("profile_cudagraphs.profile.json.gz")
    with gzip.open(profile, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    [compiled] = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == "compiled"]
    calls = [e for e in events if e["name"].startswith("## Call CompiledFxGraph ")]
    assert len(calls) == 5 and all(compiled["ts"] <= c["ts"] < compiled["ts"] + compiled["dur"] for c in calls)

    def launched_in(ranges: list[dict]) -> set[int]:
        return {e["args"]["correlation"] for e in events for r in ranges
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and (e["pid"], e["tid"]) == (r["pid"], r["tid"])
                and r["ts"] <= e["ts"] < r["ts"] + r["dur"]}

    kernels = [e for e in events if e.get("cat") == "kernel"]
    in_part = [e for e in kernels if e["args"]["correlation"] in launched_in([compiled])]
    in_graphs = sum(e["dur"] for e in kernels if e["args"]["correlation"] in launched_in(calls))
    part_span = max(e["ts"] + e["dur"] for e in in_part) - min(e["ts"] for e in in_part)  # one GPU, one stream
    whole_span = max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)
    assert f"{in_graphs / part_span:.0%}" == "16%" and f"{in_graphs / whole_span:.0%}" == "5%"
    [p] = _runtime(cuda211("profile_cudagraphs.log.gz"), profile).profiles
    assert p.compiling_us == 0  # warmed up before profiling
    _, detail = runtime_finding(p)
    assert detail.startswith("16% of the compiled part in compiled graphs (the eager part left out); ")
    assert "5% in compiled graphs" not in detail
    part = p.idle_by_part[1]  # (µs as floats: the reader's sums differ from these in the third decimal)
    assert (part.part, part.graphs_us, part.run_us) == ("compiled", pytest.approx(in_graphs, abs=0.01),
                                                        pytest.approx(part_span, abs=0.01))

    # The top compiled kernel is a share of that part too, as the detail speaks of it: the compiled part's largest
    # kernel (by name; the eager part ran one of the same name, which the whole's share would not tell apart) over the
    # part's span, 4%, where over the whole profile it read 1% with nothing to say of what.
    by_name: dict[str, float] = {}
    for e in in_part:
        by_name[e["name"]] = by_name.get(e["name"], 0.0) + e["dur"]
    top = max(by_name, key=by_name.__getitem__)
    assert top.startswith("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_") and "split_k" not in top
    assert f"{by_name[top] / part_span:.0%}" == "4%" and f"{by_name[top] / whole_span:.0%}" == "1%"
    assert detail.endswith("; top kernel cuBLAS float32 GEMM via aten::mm: 4% of the compiled part (profile_cudagraphs.py:21)")
    # The runtime views' rows stay shares of the whole profile: their header says so, and what each part took.
    [eager] = [e for e in events if e.get("cat") == "user_annotation" and e["name"] == "eager"]
    in_eager = [e for e in kernels if e["args"]["correlation"] in launched_in([eager])]
    assert len(in_eager) + len(in_part) == len(kernels)  # every kernel launched in one part or the other
    eager_span = max(e["ts"] + e["dur"] for e in in_eager) - min(e["ts"] for e in in_eager)
    said = (f"It holds an eager and a compiled run: the eager part {format_us(eager_span)}, the compiled part "
            f"{format_us(part_span)} (16% of it in compiled graphs), {format_us(whole_span - eager_span - part_span)} "
            "outside both. The shares here are of the whole profile, both parts.")
    assert said.startswith("It holds an eager and a compiled run: the eager part 1.6 ms, the compiled part 1.1 ms ")
    assert p.parts_said == said
    report(cuda211("profile_cudagraphs.log.gz"), tmp_path / "out", "--profile", profile)
    header = (tmp_path / "out" / "runtime.html").read_text().split("<h3>Chart</h3>")[0]
    assert said in header and "Every row below is a part of it" in header


def test_a_small_model_without_cuda_graphs_is_launch_bound():
    """programs/profile_launch_bound.py on an H200: the MLP of profile_cudagraphs.py in the default mode, warmed up,
    20 calls profiled: microsecond kernels, and a GPU that mostly waits for their launches."""
    profile = cuda211("profile_launch_bound.profile.json.gz")
    [p] = _runtime(cuda211("profile_launch_bound.log.gz"), profile).profiles
    with gzip.open(profile, "rt") as f:
        kernels = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    first, last = min(e["ts"] for e in kernels), max(e["ts"] + e["dur"] for e in kernels)
    idle = next(k for k in p.kernels if k.name == GPU_IDLE)
    assert (p.compiling_us, p.graph_launches, idle.run_share) == (0, 0, None)  # steady state: nothing compiled
    assert idle.total_us == pytest.approx(last - first - sum(e["dur"] for e in kernels), rel=1e-3)  # one stream
    assert idle.share > 0.5
    _, detail = runtime_finding(p)
    assert f"the GPU is idle {idle.share:.0%} of the run: launch-bound" in detail and "reduce-overhead" in detail
    assert all(k.calls == 20 for k in p.kernels if k.kind == "inductor")


def _cut_by_range(profile, out_dir) -> dict[str, object]:
    """The profile's record_function ranges as profiles of their own: each range's CPU events and the GPU events
    they launched (by correlation id), as if each run had been profiled alone. Returns range name -> path."""
    with gzip.open(profile, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    paths = {}
    for r in (e for e in events if e.get("cat") == "user_annotation"):
        cpu = [e for e in events if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")
               and (e["pid"], e["tid"]) == (r["pid"], r["tid"]) and r["ts"] <= e["ts"] <= r["ts"] + r["dur"]]
        launched = {e["args"]["correlation"] for e in cpu if "correlation" in e.get("args", {})}
        gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and e.get("args", {}).get("correlation") in launched]
        paths[r["name"]] = out_dir / f"{r['name']}.json"
        paths[r["name"]].write_text(json.dumps({"traceEvents": cpu + gpu}))
    return paths


def test_two_profiles_compare_kernel_time_with_kernel_time(tmp_path):
    """The eager and compiled runs of profile_cudagraphs.py as two profiles: each has GPU idle of its own (ms of
    launches and waits against 0.2 ms of kernels), which must not enter the speedup: the same two runs cut out of the
    one profile compare kernel time with kernel time, and so must the two profiles, total and graph alike."""
    profile = cuda211("profile_cudagraphs.profile.json.gz")
    cut = _cut_by_range(profile, tmp_path)
    kernel_us = {}
    for name in ("eager", "compiled"):
        with open(cut[name]) as f:
            kernel_us[name] = sum(e["dur"] for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
    assert kernel_us["eager"] and kernel_us["compiled"]
    runtime = _runtime(cuda211("profile_cudagraphs.log.gz"), cut["eager"], cut["compiled"])
    c = runtime.comparison
    eager, compiled = runtime.profiles
    assert eager.total_us > 5 * kernel_us["eager"]  # its own GPU idle: the reason a total over a total misleads
    assert (c.eager_us, c.compiled_us) == (pytest.approx(kernel_us["eager"]), pytest.approx(kernel_us["compiled"]))
    [(cid, graph_us, graph_speedup)] = c.graphs
    assert cid == "[0/0]" and graph_speedup == pytest.approx(kernel_us["eager"] / graph_us)
    assert graph_speedup < 1.5 and c.speedup < 1.5  # the same GEMMs either way
    one = _runtime(cuda211("profile_cudagraphs.log.gz"), profile).comparison
    assert c.speedup == pytest.approx(one.speedup) and graph_speedup == pytest.approx(one.graphs[0][2])
    assert c.busy_definition.startswith("kernel time")


def _around_launches(events: list[dict]) -> dict[int, list[dict]]:
    """Each CUDA launch's correlation id -> the CPU events around it on its thread, outermost first."""
    by_thread: dict[tuple, list[dict]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver"):
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    around: dict[int, list[dict]] = {}
    for evs in by_thread.values():
        stack: list[dict] = []
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if e["cat"] in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
                around[e["args"]["correlation"]] = list(stack)
            stack.append(e)
    return around


def test_extern_kernels_are_the_ops_their_graph_called_with_that_graphs_lines():
    """A backward GEMM runs inside autograd's evaluate_function range, inside the graph's call, inside aten::mm: it is
    aten::mm's, the op the backward's output code called. And the forward's lines are the forward's: its output code
    calls extern_kernels.mm once, for the MLP's last Linear (source nodes input_1..3 of self.mlp, line 32)."""
    log, profile = cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")
    with gzip.open(profile, "rt") as f:
        events = json.load(f)["traceEvents"]
    around = _around_launches(events)
    expected_op: dict[str, set[str]] = {}  # kernel name -> the ops directly inside its graph's range
    backward_keys, forward_keys = set(), set()
    for e in events:
        chain = around.get(e.get("args", {}).get("correlation")) if e.get("cat") == "kernel" else None
        graph = next((i for i, c in enumerate(chain or []) if c["name"].startswith("## Call CompiledFxGraph")), None)
        if graph is None or any(c["name"].endswith(" (dynamo_timed)") for c in chain):  # the first call's autotuning
            continue
        key = chain[graph]["name"].split()[3]
        (backward_keys if any(c["name"] == "CompiledFunctionBackward" for c in chain[:graph]) else forward_keys).add(key)
        if not e["name"].startswith("triton_") and graph + 1 < len(chain):
            expected_op.setdefault(e["name"], set()).add(chain[graph + 1]["name"])
    assert len(backward_keys) == len(forward_keys) == 1 and expected_op
    p = _runtime(log, profile).profiles[0]
    extern = [k for k in p.kernels if k.kind == "extern"]
    assert {k.name for k in extern} == set(expected_op)
    for k in extern:
        assert k.op in expected_op[k.name] and k.op.startswith("aten::") and k.user_lines, k.name
    assert not [k.op for k in p.kernels if k.op and "autograd::" in k.op]  # nor eager ones: AccumulateGrad's is aten::add_
    with gzip.open(log, "rt") as f:
        text = f.read()
    # the output code's one mm from the MLP's nodes (its other GEMMs are addmm, and the backward names its nodes apart)
    assert len(re.findall(r"\[input_1, input_2, input_3, \], Original ATen: \[[^]]*aten\.addmm\]\n\t *# \[Provenance debug "
                          r"handles\] extern_kernels\.mm:\d+\n\t *extern_kernels\.mm\(", text)) == 1
    program = (cuda211("..") / "programs" / "capture_profile.py").read_text().splitlines()
    mlp_line = next(i + 1 for i, line in enumerate(program) if "self.mlp(self.ln2(x))" in line)
    forward_mm = [k for k in extern if k.graph in forward_keys and k.op == "aten::mm"]
    assert forward_mm and all([u.line for u in k.user_lines] == [mlp_line] for k in forward_mm)
    backward_mm = [k for k in extern if k.graph in backward_keys and k.op == "aten::mm"]
    assert len({u.line for k in backward_mm for u in k.user_lines}) > 1  # the backward's GEMMs, of several Linears
    # Every kernel of a graph has lines now: the by-line table holds the graphs' whole kernel time.
    in_graphs = sum(g.kernels_us for g in p.graphs if g.key)
    assert sum(r.total_us for r in p.lines) == pytest.approx(in_graphs)


def test_cuda_graph_replays_say_what_they_ran(tmp_path, capsys):
    """profile_cudagraphs.py's compiled calls: each a copy of the input into the CUDA graph's static buffer
    (aten::_foreach_copy_, CUDA graph trees' own, not in the output code) and one cudaGraphLaunch, which runs the
    recorded Triton kernels and GEMMs with no op around them. The forward's output code calls one extern op only,
    extern_kernels.mm: the replayed GEMMs are its, and line 21's (the model's one line)."""
    log, profile = cuda211("profile_cudagraphs.log.gz"), cuda211("profile_cudagraphs.profile.json.gz")
    with gzip.open(profile, "rt") as f:
        events = json.load(f)["traceEvents"]
    with gzip.open(log, "rt") as f:
        text = f.read()
    code_lines = [line for line in text.splitlines() if line.startswith("\t") and not line.lstrip().startswith("#")]
    assert {m for line in code_lines for m in re.findall(r"\bextern_kernels\.(\w+)\(", line)} == {"mm"}
    assert "_foreach_copy_" not in text
    replays = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    replayed = {e["name"] for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in replays}
    around = _around_launches(events)
    copies = {e["name"] for e in events if e.get("cat") == "kernel"
              and any(c["name"] == "aten::_foreach_copy_" for c in around.get(e["args"].get("correlation"), []))}
    assert replayed and len(copies) == 1 and not copies & replayed
    program = (cuda211("..") / "programs" / "profile_cudagraphs.py").read_text().splitlines()
    model_line = next(i + 1 for i, line in enumerate(program) if "return x + self.down(" in line)
    p = _runtime(log, profile).profiles[0]
    compiled = [k for k in p.kernels if k.graph]
    assert {k.name for k in compiled if k.replayed} == replayed
    for k in compiled:
        if k.name in copies:
            assert k.kind == "wrapper" and k.op == "aten::_foreach_copy_" and not k.user_lines
        else:
            assert k.replayed and k.kind in ("inductor", "extern") and [u.line for u in k.user_lines] == [model_line]
            assert k.kind == "inductor" or k.op == "aten::mm"
    (graph,) = [g for g in p.graphs if g.key]
    (line,) = p.lines
    assert line.total_us == pytest.approx(graph.kernels_us) and graph.kernels_us < graph.total_us  # all but the copy
    assert run_cli("summary", log, "--profile", profile) == 0
    assert "5 CUDA graph replays (cudaGraphLaunch)" in capsys.readouterr().out
    report(log, tmp_path / "out", "--profile", profile)
    page = (tmp_path / "out" / "runtime.html").read_text()
    copy_row = next(r for r in page.split("<tr") if "multi_tensor_apply_kernel" in r)
    assert "rt-provenance" not in copy_row and "graph wrapper" in copy_row
    assert "5 CUDA graph replays" in page


def test_the_terminal_comparison_keeps_each_kernel_to_a_few_lines(capsys):
    """profile_cudagraphs' eager and compiled runs: cuBLAS and templated ATen kernel names of 100 to 300 characters.
    The op column was 20 characters wide and folded each name over up to ~40 lines."""
    log, profile = cuda211("profile_cudagraphs.log.gz"), cuda211("profile_cudagraphs.profile.json.gz")
    with gzip.open(profile, "rt") as f:
        longest = max(len(e["name"]) for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
    assert longest > 200
    assert run_cli("summary", log, "--profile", profile) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(out) if "op / kernel" in line)
    table = out[header + 2:]
    table = table[: next((i for i, line in enumerate(table) if not line.strip()), len(table))]
    rows = [line for line in table if line[:20].strip()]  # a row starts with its times; a name's next lines do not
    assert len(rows) == len(_runtime(log, profile).comparison.ops[:10])
    assert len(table) <= 3 * len(rows) and max(len(line) for line in out) <= 80
    assert any("tilesize64x64x8" in line for line in table)  # what tells the GEMMs apart stays


def test_eager_against_compiled_is_the_finding_and_the_eager_profile_no_failure(tmp_path, capsys):
    """The two runs of profile_cudagraphs.py as two profiles: the answer the user asked for (the speedup) is the first
    runtime finding, ahead of the compile time, and the eager profile, which ran no compiled graph by design, is not
    reported as a profile that failed to join, nor given the hint for CPU profiles."""
    cut = _cut_by_range(cuda211("profile_cudagraphs.profile.json.gz"), tmp_path)
    kernel_us = {}
    for name in ("eager", "compiled"):
        with open(cut[name]) as f:
            kernel_us[name] = sum(e["dur"] for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel")
    assert run_cli("summary", cuda211("profile_cudagraphs.log.gz"), "--profile", cut["eager"],
                   "--profile", cut["compiled"]) == 0
    out = capsys.readouterr().out
    fix_first = " ".join(out[:out.index("Compile time")].split())
    ratio = kernel_us["eager"] / kernel_us["compiled"]
    assert ratio > 1  # the compiled run's kernels took less time than the eager run's, in the profile's own events
    said = (f"compiled ran the GPU work {ratio:.2f}x faster than eager: {format_us(kernel_us['compiled'])} vs "
            f"{format_us(kernel_us['eager'])}")
    assert said in fix_first and fix_first.index(said) < fix_first.index("compiling took")
    assert "not joined" not in out and "enable_kernel_profile" not in out
    # The same eager run with its GPU events left out is a CPU profile: there the hint is the one that helps.
    with open(cut["eager"]) as f:
        events = json.load(f)["traceEvents"]
    cpu_only = tmp_path / "eager_cpu.json"
    cpu_only.write_text(json.dumps({"traceEvents": [e for e in events if e.get("cat") not in ("kernel", "gpu_memcpy",
                                                                                               "gpu_memset")]}))
    gpu, cpu = _runtime(cuda211("profile_cudagraphs.log.gz"), cut["eager"], cpu_only).profiles
    assert (gpu.timeline, cpu.timeline) == ("gpu", "cpu")
    assert "enable_kernel_profile" not in gpu.not_joined and "enable_kernel_profile" in cpu.not_joined


def _with_kernel_stacks(log, out, edit) -> object:
    """The log with its inductor_provenance_tracking_kernel_stack_traces payload replaced by edit(payload), its md5
    made again (None: the record left out)."""
    with gzip.open(log, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    kept, i = [], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if "inductor_provenance_tracking_kernel_stack_traces" not in line:
            kept.append(line)
            continue
        payload = []
        while i < len(lines) and lines[i].startswith("\t"):
            payload.append(lines[i][1:])
            i += 1
        edited = edit(json.loads("\n".join(payload)))
        if edited is not None:
            text = json.dumps(edited)
            digest = hashlib.md5(text.encode()).hexdigest()
            kept += [re.sub(r'"has_payload": "\w+"', f'"has_payload": "{digest}"', line), "\t" + text]
    out.write_text("\n".join(kept), encoding="utf-8")
    return out


def test_kernels_torch_logged_no_stack_for_are_told_from_provenance_not_logged(tmp_path):
    """A capture(profile=True) run can log the kernel stack traces record with an empty list for each kernel: the
    page must say torch logged no stack for them, not advise turning on the provenance that was on."""
    log, profile = cuda211("profile_cudagraphs.log.gz"), cuda211("profile_cudagraphs.profile.json.gz")
    assert _runtime(log, profile).profiles[0].lines  # as recorded: the kernels have their lines
    empty = _with_kernel_stacks(log, tmp_path / "empty_stacks.log", lambda stacks: {k: [] for k in stacks})
    missing = _with_kernel_stacks(log, tmp_path / "no_stacks.log", lambda stacks: None)
    empty_p, missing_p = (_runtime(p, profile).profiles[0] for p in (empty, missing))
    assert empty_p.matched and missing_p.matched and not empty_p.lines and not missing_p.lines
    assert "empty lists" in empty_p.no_lines and "INDUCTOR_PROVENANCE" not in empty_p.no_lines
    assert "INDUCTOR_PROVENANCE=1" in missing_p.no_lines
    report(empty, tmp_path / "out", "--profile", profile)
    page = (tmp_path / "out" / "runtime.html").read_text()
    assert "empty lists" in page and "INDUCTOR_PROVENANCE" not in page


def test_an_eager_profile_with_no_busy_time_is_no_comparison_and_no_crash(tmp_path, capsys):
    # The eager run's kernels all at 0 µs (a profile cut or emptied of its work): the speedup is 0, and the finding
    # divided by it, ending the summary with a traceback.
    cut = _cut_by_range(cuda211("profile_cudagraphs.profile.json.gz"), tmp_path)
    with open(cut["eager"]) as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            e["dur"] = 0
    idle = tmp_path / "eager_idle.json"
    idle.write_text(json.dumps(doc))
    assert run_cli("summary", cuda211("profile_cudagraphs.log.gz"), "--profile", idle, "--profile", cut["compiled"]) == 0
    assert "faster than eager" not in capsys.readouterr().out


def test_a_hugging_face_model_eager_against_compiled_with_its_lines_in_site_packages():
    """programs/hf_gpt2_profile.py on an H200: transformers' GPT-2 eager and compiled, warmed up, then 10 calls each in
    record_function ranges. The model's code is transformers' (site-packages): the compiled kernels' lines are there."""
    log, profile = cuda211("hf_gpt2_profile.log.gz"), cuda211("hf_gpt2_profile.profile.json.gz")
    runtime = _runtime(log, profile)
    with gzip.open(profile, "rt") as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    ranges = {e["name"]: e for e in events if e.get("cat") == "gpu_user_annotation"}

    def kernel_us(name):
        r = ranges[name]
        return sum(k["dur"] for k in kernels if r["ts"] <= k["ts"] < r["ts"] + r["dur"])

    c = runtime.comparison
    assert (c.eager_us, c.compiled_us) == (pytest.approx(kernel_us("eager")), pytest.approx(kernel_us("compiled")))
    assert 1.3 < c.speedup < 1.5  # (3.41 ms against 2.43 ms)
    walls = {e["name"]: e["dur"] for e in events if e.get("cat") == "user_annotation"}
    assert c.wall_speedup == pytest.approx(walls["eager"] / walls["compiled"])
    [p] = runtime.profiles
    compiled = [k for k in p.kernels if k.compile_id is not None]
    assert compiled and all(str(k.compile_id) == "[0/0]" for k in compiled)
    files = {line.file.rsplit("/", 1)[-1] for k in compiled for line in k.user_lines}
    assert "modeling_gpt2.py" in files and "sdpa_attention.py" in files, files


def _gpt2_mm_calls(events: list[dict]) -> list[list[float]]:
    """Each compiled graph call's aten::mm calls, in order: the GPU time of each call's kernels. A call is an aten::mm
    directly inside the graph's range that launched a kernel."""
    around = _around_launches(events)
    calls: dict[tuple, dict[tuple, float]] = {}  # graph range -> mm call -> its kernels' time
    for e in events:
        chain = around.get(e.get("args", {}).get("correlation")) if e.get("cat") == "kernel" else None
        graph = next((i for i, c in enumerate(chain or []) if c["name"].startswith("## Call CompiledFxGraph")), None)
        if graph is not None and graph + 1 < len(chain) and chain[graph + 1]["name"] == "aten::mm":
            run, mm = chain[graph], chain[graph + 1]
            per_call = calls.setdefault((run["tid"], run["ts"]), {})
            per_call[(mm["ts"], mm["dur"])] = per_call.get((mm["ts"], mm["dur"]), 0.0) + e["dur"]
    return [[us for _, us in sorted(per_call.items())] for _, per_call in sorted(calls.items())]


def _gpt2_mm_sites() -> tuple[list[int], int, int]:
    """The output code's extern_kernels.mm calls (their debug handles, in the code's order), and the place of
    lm_head's call among them and its line in modeling_gpt2.py, from the log's kernel stack traces."""
    with gzip.open(cuda211("hf_gpt2_profile.log.gz"), "rt") as f:
        text = f.read()
    handles = [int(h) for h in re.findall(r"# \[Provenance debug handles\] extern_kernels\.mm:(\d+)\n\t *extern_kernels"
                                          r"\.mm\(", text)]
    artifact = text.index('"name": "inductor_provenance_tracking_kernel_stack_traces"')
    stacks = json.loads(text[artifact:].split("\n", 2)[1].lstrip("\t"))
    lm_head = [h for h in handles if "self.lm_head(" in stacks[f"extern_kernels.mm:{h}"][-1].rstrip().rsplit("\n", 1)[-1]]
    assert len(lm_head) == 1
    line = int(re.findall(r'modeling_gpt2\.py", line (\d+)', stacks[f"extern_kernels.mm:{lm_head[0]}"][-1])[-1])
    return handles, handles.index(lm_head[0]), line


def test_each_call_of_an_extern_op_in_a_graph_goes_to_its_own_line():
    """GPT-2's graph calls extern_kernels.mm 13 times: 12 for the blocks' Linears (pytorch_utils.py) and lm_head's
    last. Each graph call in the profile makes 13 aten::mm calls, in the code's order: the 13th's kernels are lm_head's
    line's, not half of all 13 calls' time (as when the calls were pooled over their lines)."""
    handles, lm_head, line = _gpt2_mm_sites()
    assert len(handles) == 13 and handles == sorted(handles)  # the handles number the calls in the code's order
    with gzip.open(cuda211("hf_gpt2_profile.profile.json.gz"), "rt") as f:
        events = json.load(f)["traceEvents"]
    runs = _gpt2_mm_calls(events)
    assert len(runs) == 10 and all(len(calls) == len(handles) for calls in runs)
    p = _runtime(cuda211("hf_gpt2_profile.log.gz"), cuda211("hf_gpt2_profile.profile.json.gz")).profiles[0]
    [row] = [r for r in p.lines if r.file.endswith("/modeling_gpt2.py") and r.line == line]
    assert row.total_us == pytest.approx(sum(calls[lm_head] for calls in runs))
    all_mm = sum(sum(calls) for calls in runs)
    assert row.total_us < all_mm / 5  # one call of 13, the largest GEMM (pooled, it had half)
    # Nothing lost or counted twice: every compiled kernel has lines, and the lines hold the kernels' time.
    in_graphs = sum(g.kernels_us for g in p.graphs if g.key)
    assert sum(r.total_us for r in p.lines) == pytest.approx(in_graphs)
    mm_rows = [k for k in p.kernels if k.op == "aten::mm"]
    assert sum(us for k in mm_rows for u, us in zip(k.user_lines, k.line_us) if u.line == line) == pytest.approx(row.total_us)
    # --json says each kernel's time on each of its lines: lm_head's line holds that call's time alone.
    json_lines = [u for k in mm_rows for u in k.to_json()["user_lines"]]
    assert sum(u["us"] for u in json_lines if u["line"] == line) == pytest.approx(row.total_us, abs=0.01)
    assert all(sum(u["us"] for u in k.to_json()["user_lines"]) == pytest.approx(k.total_us, abs=0.01) for k in p.kernels
               if k.user_lines)


def test_a_graph_call_missing_an_extern_call_is_not_told_apart(tmp_path):
    """A graph call whose aten::mm calls the profile does not hold all of (here one taken out) cannot say which call is
    which: its calls' time goes to all the op's lines, as before; the other graph calls' are each call's own."""
    handles, lm_head, line = _gpt2_mm_sites()
    with gzip.open(cuda211("hf_gpt2_profile.profile.json.gz"), "rt") as f:
        doc = json.load(f)
    runs = _gpt2_mm_calls(doc["traceEvents"])
    first = min((e for e in doc["traceEvents"] if e.get("name", "").startswith("## Call CompiledFxGraph")),
                key=lambda e: e["ts"])
    mm = min((e for e in doc["traceEvents"] if e.get("name") == "aten::mm" and e["tid"] == first["tid"]
              and first["ts"] <= e["ts"] < first["ts"] + first["dur"]), key=lambda e: e["ts"])
    doc["traceEvents"].remove(mm)
    cut = tmp_path / "one_mm_less.json"
    cut.write_text(json.dumps(doc))
    p = _runtime(cuda211("hf_gpt2_profile.log.gz"), cut).profiles[0]
    [row] = [r for r in p.lines if r.file.endswith("/modeling_gpt2.py") and r.line == line]
    # the first call's 12 mm calls left, half each to the two lines of the graph's mm calls; the others', lm_head's own
    assert row.total_us == pytest.approx(sum(runs[0][1:]) / 2 + sum(calls[lm_head] for calls in runs[1:]))


def test_the_lines_table_names_a_librarys_file_briefly(tmp_path):
    # transformers' GPT-2: every compiled kernel's line is in site-packages, whose full paths squeezed the table's
    # line column to a few characters a row at 1280 px. The cell names the file; its title, the path.
    log, profile = cuda211("hf_gpt2_profile.log.gz"), cuda211("hf_gpt2_profile.profile.json.gz")
    assert run_cli(log, "--profile", profile, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "runtime.html").read_text()
    table = page[page.index('<table class="rt-lines">'):]
    table = table[:table.index("</table>")]
    cells = re.findall(r'<td class="mono" title="([^"]*)">(.*?)</td>', table, re.S)
    assert cells and any(title.endswith("/transformers/models/gpt2/modeling_gpt2.py") for title, _ in cells)
    for title, shown in cells:
        assert "site-packages" not in shown and re.sub(r"<[^>]+>", "", shown).startswith(title.rsplit("/", 1)[-1] + ":")


def test_a_backwards_list_of_another_graphs_kernels_lends_it_no_lines_nor_calls():
    """torch 2.11 keeps earlier graphs' kernels in a backward's stack traces: [0/0_1]'s backward (0_backward) lists
    [1/0]'s backward's extern_kernels.mm:2 and :3 (line 23) and triton_per_fused_mul_sum_0:1 before its own calls,
    but its code calls mm only at handles 5 and 7 (line 21). A profile's aten::mm in that graph's call is one of
    those two: read as the backward's own, the leftovers made four call sites (so no call was told apart) and put
    line 23 among its lines; and the mul_sum kernel, [1/0]'s only, had two compile ids to choose from, so a profile
    without graph ranges gave it none. (No profile recorded so far has such a list: this is the index itself.)"""
    log = cuda211("train_break_recompile.log.gz")
    raw = raw_graphs(log)
    backward = raw["0_backward"]
    mm_calls = [c for c in backward.calls if c.startswith("extern_kernels.mm:")]
    assert mm_calls == ["extern_kernels.mm:5", "extern_kernels.mm:7"]
    assert {"extern_kernels.mm:2", "extern_kernels.mm:3"} <= set(backward.stacks) - set(backward.calls)
    lines = {c: [RawGraph.line(t) for t in backward.stacks[c]] for c in mm_calls}
    assert lines == {"extern_kernels.mm:5": [21], "extern_kernels.mm:7": [21]}
    callers = [g for g in raw.values() if any(c.startswith("triton_per_fused_mul_sum_0:") for c in g.calls)]
    assert [(g.aot_id, g.compile_id) for g in callers] == [("1_backward", "[1/0]")]
    with compilescope.load(log) as trace:
        provenance = analyze_provenance(trace)
        index = LogIndex(trace, provenance)
        [(cid, section)] = [(c.compile_id, s) for c in provenance.compiles.values() for s in c.sections
                            if s.title == "0_backward"]
        code = section.code.artifact_number
        sites = index.call_sites(code, "aten::mm")
        assert sites is not None and [f"extern_kernels.mm:{c.handle}" for c in sites] == mm_calls
        assert [[u.line for u in c.user_lines] for c in sites] == [lines[c] for c in mm_calls]
        home = index.home("aten::mm", cid, extern=True, code=code)
        assert home is not None and [u.line for u in home.user_lines] == [21]
        home = index.home("triton_per_fused_mul_sum_0", None)
        assert home is not None and str(home.compile_id) == "[1/0]" and [u.line for u in home.user_lines] == [23]


def test_the_comparison_names_a_library_kernel_as_the_headline_does(tmp_path, capsys):
    """profile_cudagraphs on an H200: the MLP's Linears are cuBLAS sgemms on both sides, the raw names
    `sm80_xmma_gemm_f32f32_f32f32_f32_..._cublas` (float32 in and computed in float32: the program leaves TF32 off),
    two of them split-K (`execute_split_k_kernel`). The eager-vs-compiled table showed those names where the profile's
    headline and kernel table say what they are; the name stays in its title and in --json."""
    log, profile = cuda211("profile_cudagraphs.log.gz"), cuda211("profile_cudagraphs.profile.json.gz")
    with gzip.open(profile, "rt") as f:
        names = {e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"}
    gemms = {n for n in names if n.startswith("sm80_xmma_gemm_f32f32_f32f32_f32_") and n.endswith("_cublas")}
    split = {n for n in gemms if "_split_k_" in n}
    assert len(gemms) == 4 and len(split) == 2
    assert run_cli("summary", log, "--json", "--profile", profile) == 0
    ops = {o["name"]: o for o in json.loads(capsys.readouterr().out)["runtime"]["comparison"]["ops"]}
    assert gemms <= set(ops)
    assert {n: ops[n]["library"] for n in gemms} == {
        n: "cuBLAS float32 GEMM, split-K" if n in split else "cuBLAS float32 GEMM" for n in gemms}
    assert not any(o["library"] for n, o in ops.items() if n.startswith("triton_"))
    assert run_cli("summary", log, "--profile", profile) == 0
    compared = capsys.readouterr().out.split("op / kernel", 1)[1]
    assert compared.count("cuBLAS float32 GEMM") >= 4  # each of the four rows, a split-K one said so
    assert "tilesize32x32x8" in compared and "tilesize64x64x8" in compared  # what tells two of them apart
    report(log, tmp_path / "out", "--profile", profile)
    page = (tmp_path / "out" / "runtime.html").read_text()
    table = page[page.index('<table id="rt-compare">'):]
    table = table[:table.index("</table>")]
    for n in gemms:
        label = "cuBLAS float32 GEMM, split-K" if n in split else "cuBLAS float32 GEMM"
        assert f'<span class="rt-library" title="{n}">{label}</span>' in table
    assert not [r for r in table_rows(table) if r and r[0].startswith("sm80_xmma")]


def _capture_profile_raw() -> tuple[list[dict], float, float, list[tuple[float, float]]]:
    """capture_profile's raw complete events, the span of its GPU work (kernels, copies, sets) and torch.compile's own
    ranges in it: "... (dynamo_timed)", "<step>_data: compile_id=0/0", "dynamo", "entire_frame_compile"."""
    with gzip.open(cuda211("capture_profile.profile.json.gz"), "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    gpu = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    compiling = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] in ("cpu_op", "user_annotation")
                 and (e["name"].endswith(" (dynamo_timed)") or "_data: " in e["name"]
                      or e["name"] in ("dynamo", "entire_frame_compile"))]
    return events, min(s for s, _ in gpu), max(e for _, e in gpu), compiling


def test_a_gpu_profiles_first_graph_calls_are_slow_calls_for_the_gpu_idle_they_cost():
    """capture_profile: 5 steps, compiled inside the profile. Each graph's first call (forward, and backward inside
    the autograd engine's CompiledFunctionBackward range) is its compile's first run: outside the compile ranges in it
    the GPU still waits ~134 ms (forward) and ~36 ms (backward), against ~1 ms for a steady call. No kernel's own calls
    differ so (the GPU runs a kernel as fast the first time): the slow calls of a GPU profile are its graph calls."""
    events, first, last, compiling = _capture_profile_raw()
    backward = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] == "cpu_op"
                and e["name"].startswith("autograd::engine::evaluate_function: CompiledFunctionBackward")]
    calls: dict[bool, list[float]] = {False: [], True: []}
    for e in sorted((e for e in events if e["cat"] == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph")),
                    key=lambda e: e["ts"]):
        a, b = max(e["ts"], first), min(e["ts"] + e["dur"], last)
        inside = [(max(s, a), min(t, b)) for s, t in compiling if t > a and s < b]
        calls[any(s <= e["ts"] < t for s, t in backward)].append(b - a - union_length(inside))
    assert [len(c) for c in calls.values()] == [5, 5]
    p = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    found = {s.name: s for s in p.slow_calls if s.kind == "graph call"}
    assert set(found) == {"[0/0]'s forward graph call", "[0/0]'s backward graph call"}
    for backward, name in ((False, "[0/0]'s forward graph call"), (True, "[0/0]'s backward graph call")):
        s = found[name]
        assert s.kind == "graph call" and s.calls == 5
        assert s.median_us == pytest.approx(sorted(calls[backward])[2], abs=0.01)
        [slow] = s.slow
        assert (slow.nth, slow.first_in_graph, slow.after_compile) == (1, True, True)
        assert slow.us == pytest.approx(calls[backward][0], abs=0.01) and slow.us > 30_000  # tens of ms, not ~1 ms
    _, detail = runtime_finding(p)
    assert "far longer than their median calls (a first call's warm-up: loading its kernels" in detail


def test_a_gpu_profiles_steady_state_leaves_out_every_first_calls_warm_up_eager_ops_included():
    """capture_profile again: the steady state said 99 ms, the run less the two graph calls' warm-up. Yet the eager
    ops' first calls are warm-up too, each keeping the GPU waiting while its kernels load: the first aten::sum (the
    program's `.sum()`), the first backward outside its graph's call (CompiledFunctionBackward), the first
    accumulation into .grad (AccumulateGrad's 13th call: the first 12, one per parameter, assign it in step 1), and
    the compiled region's first call outside its graph call. One rule for all: per name, in call order, a call's time
    on the GPU timeline (its range inside the kernels' span, less compiling and the graph calls inside it), a call
    10 times its name's median and 1 ms more is warm-up, and what it took over the median is left out. Worked out
    here from the raw events, for each name the program makes."""
    events, first, last, compiling = _capture_profile_raw()
    graph_calls = [(e["ts"], e["ts"] + e["dur"]) for e in events
                   if e["cat"] == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph")]

    def gpu_time(start: float, end: float) -> float:  # (the graph calls inside it are judged on their own)
        a, b = max(start, first), min(end, last)
        left_out = compiling + [(s, t) for s, t in graph_calls if s < end and t > start]
        return b - a - union_length([(max(s, a), min(t, b)) for s, t in left_out if t > a and s < b]) if b > a else 0.0

    ops = [e for e in events if e["cat"] == "cpu_op"]
    over: dict[str, tuple[int, float]] = {}  # name -> (which call, its time over the median)
    for name, said in (("Torch-Compiled Region: 0/0", "Torch-Compiled Region: 0/0"),
                       ("aten::sum", "aten::sum"),
                       ("autograd::engine::evaluate_function: CompiledFunctionBackward", "CompiledFunctionBackward"),
                       ("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", "AccumulateGrad")):
        # each call the program made itself: in no other op of its thread (aten::sum also runs inside the graphs)
        ranges = sorted((e["ts"], e["ts"] + e["dur"]) for e in ops if e["name"] == name and not any(
            o is not e and o["tid"] == e["tid"] and o["ts"] <= e["ts"] and e["ts"] + e["dur"] <= o["ts"] + o["dur"]
            and o["dur"] > e["dur"] for o in ops))
        times = [gpu_time(s, t) for s, t in ranges]
        median = statistics.median(times)
        [(nth, us)] = [(n, t) for n, t in enumerate(times, 1) if t >= 10 * median and t - median >= 1000]
        over[said] = (nth, us - median)
    assert {name: nth for name, (nth, _) in over.items()} == {
        "Torch-Compiled Region: 0/0": 1, "aten::sum": 1, "CompiledFunctionBackward": 1, "AccumulateGrad": 13}
    assert over["aten::sum"][1] > 20_000 and over["CompiledFunctionBackward"][1] > 20_000

    p = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    found = {s.name.replace(" (outside its graph calls)", ""): s for s in p.slow_calls if s.kind != "graph call"}
    assert set(found) == set(over)
    for name, (nth, us) in over.items():
        [slow] = found[name].slow
        assert slow.nth == nth and found[name].over_median_us == pytest.approx(us, abs=0.05)
    graphs = sum(s.over_median_us for s in p.slow_calls if s.kind == "graph call")  # (the test above derives them)
    steady = p.run_us - graphs - sum(us for _, us in over.values())
    assert p.slow_us == pytest.approx(graphs + sum(us for _, us in over.values()))
    _, detail = runtime_finding(p)
    assert f"in a steady state it would take {format_us(steady)}, not {format_us(p.run_us)} (every graph call, " in detail
    assert f"AccumulateGrad {format_us(over['AccumulateGrad'][1])}" in detail


def test_a_warmed_up_gpu_profile_has_no_slow_calls_though_its_first_call_waited_on_the_profiler():
    """profile_launch_bound: warmed up, 20 calls. The first graph range lasts 2.5 ms against ~150 µs (the profiler's
    start inside it), but its first kernel starts 2.2 ms into it: that wait is before the GPU timeline begins, so it
    costs the run nothing and is no slow call; no kernel's call is 10x its median either."""
    with gzip.open(cuda211("profile_launch_bound.profile.json.gz"), "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    calls = sorted((e for e in events if e["cat"] == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph")),
                   key=lambda e: e["ts"])
    first_kernel = min(e["ts"] for e in events if e["cat"] == "kernel")
    assert calls[0]["dur"] > 10 * sorted(e["dur"] for e in calls)[10] and first_kernel - calls[0]["ts"] > 2000
    p = _runtime(cuda211("profile_launch_bound.log.gz"), cuda211("profile_launch_bound.profile.json.gz")).profiles[0]
    assert p.slow_calls == [] and p.slow_said == ""


def test_a_gpu_comparison_counts_no_slow_calls_in_its_kernel_time():
    """On a GPU, a slow call is a graph call whose cost is GPU idle, which the comparison's kernel time leaves out
    already: hf_gpt2_profile's and profile_cudagraphs' comparisons have no steady-state speedup of their own, and a
    run cut out of a profile (its kernels only, no idle) is not judged for slow graph calls."""
    for name in ("hf_gpt2_profile", "profile_cudagraphs"):
        runtime = _runtime(cuda211(f"{name}.log.gz"), cuda211(f"{name}.profile.json.gz"))
        c = runtime.comparison
        assert c is not None and c.timeline == "gpu"
        assert (c.compiled_slow_us, c.compiled_slow_calls, c.steady_speedup) == (0.0, 0, None)
        assert "slow call" not in comparison_finding(c)[0]


def _inside(outer: dict, e: dict) -> bool:
    return e["tid"] == outer["tid"] and outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"]


def test_two_threads_warming_up_at_once_keep_the_gpu_waiting_once(tmp_path, capsys):
    """capture_profile with its main thread's ranges (cpu_op, user_annotation) recorded again under another thread id,
    every other event as recorded: two threads calling the compiled block at the same instants. The GPU timeline is
    the same one, and so is what a steady state leaves out: the wait behind each first call happens once, whichever
    threads waited on it. Summed per call, the warm-up came to 155% of the run and the steady state under zero."""
    with gzip.open(cuda211("capture_profile.profile.json.gz"), "rt") as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    graph_calls = sorted((e for e in events if e["cat"] == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph")),
                         key=lambda e: e["ts"])
    main = graph_calls[0]["tid"]  # the thread of the first forward call (the backward's are the autograd engine's)
    forward = [e for e in graph_calls if e["tid"] == main]
    assert len(forward) == 5 and len({e["tid"] for e in events}) > 1
    again = max(e["tid"] for e in events if isinstance(e.get("tid"), int)) + 1
    doc["traceEvents"] += [dict(e, tid=again) for e in events if e["tid"] == main and e["cat"] in ("cpu_op", "user_annotation")]
    twice = tmp_path / "two_threads.json"
    twice.write_text(json.dumps(doc))

    # (the recorded profile's slow calls are worked out from its raw events in the test above)
    one = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    two = _runtime(cuda211("capture_profile.log.gz"), twice).profiles[0]
    assert two.run_us == pytest.approx(one.run_us) and one.slow_us > 0.5 * one.run_us
    assert two.slow_us == pytest.approx(one.slow_us, abs=0.01)
    assert 0 < two.run_us - two.slow_us < two.run_us
    calls = {s.name: s for s in two.slow_calls}["[0/0]'s forward graph call"]
    assert calls.calls == 2 * len(forward)
    first, second = calls.slow  # each thread's first call, at the same instants: the second's time is all the first's
    assert (first.nth, second.nth) == (1, 2) and second.us == pytest.approx(first.us)
    assert first.overlap_us == 0 and second.overlap_us == pytest.approx(second.us)
    _, detail = runtime_finding(two)
    assert f"in a steady state it would take {format_us(one.run_us - one.slow_us)}, not {format_us(one.run_us)}" in detail
    assert f"(call 2 of {2 * len(forward)}; {format_us(second.us)} of it at the same time as another thread's slow call, " \
           "counted once)" in detail
    assert run_cli("summary", "--json", cuda211("capture_profile.log.gz"), "--profile", twice) == 0
    [p] = json.loads(capsys.readouterr().out)["runtime"]["profiles"]
    assert p["slow_us"] == pytest.approx(one.slow_us, abs=0.01)
    assert [s["overlap_us"] > 0 for c in p["slow_calls"] if c["kind"] == "graph call" for s in c["slow"]] == [
        False, True, False]  # forward's two first calls, then the backward's one (the autograd thread: not copied)


def test_an_eager_warm_up_call_is_said_in_the_users_terms(tmp_path, capsys):
    """capture_profile: AccumulateGrad's slow call was said as "(call 13)". The raw events say what it is: the
    autograd engine ran 60 AccumulateGrad nodes (12 parameters, 5 steps); the first 12 (step 1) assign .grad
    (aten::detach), the 13th is the first to add into it, running the profile's first aten::add_, after the second of
    the 5 backward graph calls (those inside CompiledFunctionBackward's ranges) of [0/0], the log's `forward`. Said
    so in the finding, in summary and on the runtime page, and given in --json."""
    events, _, _, _ = _capture_profile_raw()
    ops = [e for e in events if e["cat"] == "cpu_op"]
    accumulate = sorted((e for e in ops if e["name"] == "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"),
                        key=lambda e: e["ts"])
    adds = sorted((e for e in ops if e["name"] == "aten::add_"), key=lambda e: e["ts"])
    nth = next(n for n, a in enumerate(accumulate, 1) if any(_inside(a, e) for e in adds))
    assert (len(accumulate), nth) == (60, 13) and _inside(accumulate[nth - 1], adds[0])
    backward_ranges = [e for e in ops if e["name"].startswith("autograd::engine::evaluate_function: CompiledFunctionBackward")]
    graph_calls = sorted((e for e in ops if e["name"].startswith("## Call CompiledFxGraph")), key=lambda e: e["ts"])
    backward_calls = [g for g in graph_calls if any(_inside(b, g) for b in backward_ranges)]
    last_before = [g for g in graph_calls if g["ts"] < accumulate[nth - 1]["ts"]][-1]
    assert len(backward_calls) == 5 and backward_calls.index(last_before) == 1
    with gzip.open(cuda211("capture_profile.log.gz"), "rt") as f:
        [function] = set(re.findall(r'"co_name": "(\w+)"', f.read()))
    assert function == "forward"
    step = backward_calls.index(last_before) + 1
    said = (f"(call {nth} of {len(accumulate)}, after backward graph call {step} of {len(backward_calls)} of [0/0] "
            f"({function}): the first of its calls to run aten::add_, the profile's first, whose kernels loaded while "
            "the GPU waited)")

    p = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    slow = {s.name: s for s in p.slow_calls}
    [call] = slow["AccumulateGrad"].slow
    assert (call.nth, call.first_on_thread, call.first_op, call.first_op_in_profile) == (13, False, "aten::add_", True)
    # The backward's first call holds backward graph call 1: its first, the kernels outside the graph loading.
    [first] = slow["CompiledFunctionBackward (outside its graph calls)"].slow
    assert first.during == "around backward graph call 1 of 5 of [0/0] (forward)" and first.first_on_thread
    _, detail = runtime_finding(p)
    assert f"AccumulateGrad {format_us(slow['AccumulateGrad'].over_median_us)} {said}" in detail
    assert "(call 1 of 5, around backward graph call 1 of 5 of [0/0] (forward): its first call, its kernels " in detail

    assert run_cli("summary", cuda211("capture_profile.log.gz"), "--profile", cuda211("capture_profile.profile.json.gz")) == 0
    assert said in " ".join(capsys.readouterr().out.split())  # (the terminal wraps the line)
    report(cuda211("capture_profile.log.gz"), tmp_path / "out", "--profile", cuda211("capture_profile.profile.json.gz"))
    page = (tmp_path / "out" / "runtime.html").read_text()
    paragraph = page.split('<p class="rt-slow">')[1].split("</p>")[0]
    assert said.replace("'", "&#39;") in paragraph
    capsys.readouterr()  # (what report printed)
    assert run_cli("summary", "--json", cuda211("capture_profile.log.gz"), "--profile",
                   cuda211("capture_profile.profile.json.gz")) == 0
    [doc] = json.loads(capsys.readouterr().out)["runtime"]["profiles"]
    [slow_json] = [s for c in doc["slow_calls"] if c["name"] == "AccumulateGrad" for s in c["slow"]]
    assert {k: slow_json[k] for k in ("nth", "during", "first_on_thread", "first_op", "first_op_in_profile")} == {
        "nth": 13, "during": "after backward graph call 2 of 5 of [0/0] (forward)", "first_on_thread": False,
        "first_op": "aten::add_", "first_op_in_profile": True}


def test_a_graph_call_with_no_range_around_it_holds_its_own_ops(tmp_path):
    """capture_profile with the autograd engine's CompiledFunctionBackward ranges left out, as a profile of a graph
    called with nothing around it: each backward graph call is then outermost on its thread, and the ops it ran were
    credited to the op before it (the first call's compile: 1099 more ops; then the aten::contiguous the wrapper ran
    first), as that call's own. Each outermost op holds exactly the ops that start inside its range in the raw events."""
    with gzip.open(cuda211("capture_profile.profile.json.gz"), "rt") as f:
        doc = json.load(f)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not (e.get("ph") == "X" and e.get("cat") == "cpu_op"
                                                                 and "CompiledFunctionBackward" in e["name"])]
    path = tmp_path / "no_backward_wrapper.json"
    path.write_text(json.dumps(doc))
    ops = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "operator")]
    backward_calls = [e for e in ops if e["name"].startswith("## Call CompiledFxGraph")
                      and not any(o["tid"] == e["tid"] and o["ts"] < e["ts"] < o["ts"] + o["dur"] for o in ops)]
    assert len(backward_calls) == 5  # one per step, each outermost now

    by_thread = threads_of(read_profile(str(path)).events)
    checked, before = 0, []
    for call in backward_calls:
        outermost = _outermost_ops(by_thread[call["pid"], call["tid"]])
        names = [e.name for e, _ in outermost]
        at = next(i for i, (e, _) in enumerate(outermost) if e.ts == call["ts"] and e.name == call["name"])
        for e, inner in outermost[at - 1:at + 1]:  # the graph call and the op before it
            own, *inside = sorted((o for o in ops if o["tid"] == call["tid"] and e.ts <= o["ts"] < e.end),
                                  key=lambda o: (o["ts"], -o["dur"]))
            assert (own["name"], own["ts"]) == (e.name, e.ts)
            assert [op for op, _ in inner] == [o["name"] for o in inside], e.name
            checked += 1
        before.append(AUTOGRAD_NODE.sub("", names[at - 1]))
    # the first call's compile before it, then the contiguous() of the gradient CompiledFunctionBackward held
    assert before == ["entire_backward_compile"] + ["aten::contiguous"] * 4
    assert checked == 10

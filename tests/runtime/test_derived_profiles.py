"""Profiles derived from the real H200 ones (tests/data/cuda_torch211): their events kept as recorded, their graph
keys, regions and kernel names renamed to another log's, or some events dropped, to give the join a case the
recorded programs do not have (a graph-break restart, a kernel name in two regions, a profile of another program).

Expected values come from the logs' own files (the program's lines, the output code), not from the code under test.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

import compilescope

from ..conftest import cuda211
from .test_runtime import _runtime

LAUNCH_BOUND = "profile_launch_bound"  # the MLP in the default mode: 20 calls of one graph, [0/0], region "0/0"
LAUNCH_BOUND_KEY = "f3jgecjfsri2sqxviukdvegusoinx4hah7oeibwvspudbomsio7e"


def _events(name: str) -> list[dict]:
    with gzip.open(cuda211(f"{name}.profile.json.gz"), "rt") as f:
        return json.load(f)["traceEvents"]


def _graph_key(event: dict) -> str | None:
    name = event.get("name", "")
    return name.split()[3] if name.startswith("## Call CompiledFxGraph ") else None


def _write(events: list[dict], path: Path) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _renamed(events: list[dict], names: dict[str, str]) -> list[dict]:
    """The events with each name (a kernel's, a region's) or graph key in names replaced."""
    out = []
    for e in events:
        e = dict(e)
        name = e.get("name", "")
        key = _graph_key(e)
        if key in names:
            e["name"] = f"## Call CompiledFxGraph {names[key]} ##"
        elif name in names:
            e["name"] = names[name]
        out.append(e)
    return out


def _output_code_artifacts(log: Path) -> dict[str, list[int]]:
    """Compile id -> its output code artifacts' numbers."""
    with compilescope.load(log) as trace:
        return {str(cid): [a.number for a in entry.artifacts if a.name.startswith("inductor_output_code")]
                for cid, entry in trace.compiles.items()}


# train_break_recompile.py breaks its forward at line 22: frame 0's graph is line 21, compiled by the restarted
# attempt [0/0_1] ([0/0] stopped at the break and compiled nothing); the fx graph key of its forward, from its
# fx_graph_cache_miss artifact:
BREAK_LOG = "train_break_recompile.log.gz"
BREAK_FORWARD_KEY = "ftvx3k3bgtaabw5grdako2vkzazy7rqux4zfv5mlyegtmhymlnmz"
BREAK_FORWARD_KERNELS = {"triton_per_fused_native_layer_norm_0": "triton_per_fused_native_layer_norm_0",
                         "triton_poi_fused_addmm_gelu_1": "triton_poi_fused_gelu_1",
                         "triton_poi_fused_add_addmm_2": "triton_poi_fused_gelu_1"}


def test_after_a_graph_break_restart_kernels_belong_to_the_attempt_that_compiled_them(tmp_path):
    log = cuda211(BREAK_LOG)
    code = _output_code_artifacts(log)
    assert code["[0/0]"] == [] and len(code["[0/0_1]"]) == 2  # forward and backward
    events = _renamed(_events(LAUNCH_BOUND), {LAUNCH_BOUND_KEY: BREAK_FORWARD_KEY, **BREAK_FORWARD_KERNELS})
    with_key = _write(events, tmp_path / "keyed.json")
    # Without graph ranges the only name left is the region's, "Torch-Compiled Region: 0/0": no attempt in it.
    region_only = _write([e for e in events if _graph_key(e) is None], tmp_path / "region.json")
    for profile in (with_key, region_only):
        p = _runtime(log, profile).profiles[0]
        rows = [k for k in p.kernels if k.kind == "inductor"]
        assert {k.name for k in rows} == set(BREAK_FORWARD_KERNELS.values()), profile.name
        for k in rows:
            assert str(k.compile_id) == "[0/0_1]", (profile.name, k.name)
            assert [u.line for u in k.user_lines] == [21] and k.code_artifact == code["[0/0_1]"][0]


def test_one_kernel_name_in_two_compiled_regions_without_graph_ranges_is_two_rows(tmp_path):
    """The launch-bound profile's 20 calls, its graph ranges dropped (as a profile without them has none), alternately
    in train_break_recompile's regions 1/0 and 1/1, whose graphs ([1/0], and [1/1] recompiled with a dynamic batch)
    both define triton_poi_fused_add_addmm_mul_0."""
    from .test_gpu_capture import _around_launches

    recorded = _events(LAUNCH_BOUND)
    regions = sorted((e for e in recorded if e.get("name") == "Torch-Compiled Region: 0/0"),
                     key=lambda e: e["ts"])
    assert len(regions) == 20
    renamed = {id(e): f"Torch-Compiled Region: {('1/0', '1/1')[i % 2]}" for i, e in enumerate(regions)}
    kernels = {"triton_per_fused_native_layer_norm_0", "triton_poi_fused_addmm_gelu_1", "triton_poi_fused_add_addmm_2"}
    events = []
    for e in recorded:
        if _graph_key(e) is not None:
            continue
        e = dict(e, name=renamed.get(id(e), e.get("name")))
        if e["name"] in kernels:
            e["name"] = "triton_poi_fused_add_addmm_mul_0"
        events.append(e)
    around = _around_launches(events)
    expected: dict[str, list[float]] = {"1/0": [], "1/1": []}
    for e in events:
        if e.get("cat") == "kernel" and e["name"] == "triton_poi_fused_add_addmm_mul_0":
            region = next(c["name"] for c in around[e["args"]["correlation"]] if c["name"].startswith("Torch-Compiled"))
            expected[region.split()[-1]].append(e["dur"])
    assert len(expected["1/0"]) == len(expected["1/1"]) == 30  # 3 kernels a call, 10 calls each
    p = _runtime(cuda211(BREAK_LOG), _write(events, tmp_path / "regions.json")).profiles[0]
    rows = {str(k.compile_id): k for k in p.kernels if k.kind == "inductor"}
    assert set(rows) == {"[1/0]", "[1/1]"}
    for region, durs in expected.items():
        row = rows[f"[{region}]"]
        assert row.calls == len(durs) and row.total_us == pytest.approx(sum(durs)) and row.region == region
    graphs = {g.region: g for g in p.graphs}
    assert graphs["1/0"].calls == graphs["1/1"].calls == 10
    assert graphs["1/0"].kernels_us == pytest.approx(sum(expected["1/0"]))
    assert graphs[None].kernels_us == 0  # none of the Inductor time is "in no compiled graph"


def test_each_kind_of_time_is_named_for_what_it_is(tmp_path):
    """Compile time is no framework overhead; a user's record_function range and cudaDeviceSynchronize are no torch
    framework. profile_cudagraphs' profile with its GPU events dropped (a CPU timeline: every CPU event's own time
    gets a row), and capture_profile's, which covers the compile."""
    events = [e for e in _events("profile_cudagraphs")
              if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")]
    assert any(e.get("name") == "cudaDeviceSynchronize" for e in events)
    p = _runtime(cuda211("profile_cudagraphs.log.gz"), _write(events, tmp_path / "cpu.json")).profiles[0]
    assert p.timeline == "cpu"
    kinds = {k.name: k.kind for k in p.kernels}
    user_ranges = {e["name"] for e in events if e.get("cat") == "user_annotation"}
    assert user_ranges == {"eager", "compiled"}
    assert all(kinds[name] == "other" for name in user_ranges) and kinds["cudaDeviceSynchronize"] == "other"
    assert kinds["TorchDynamo Cache Lookup"] == "framework"  # Dynamo's guard check: torch's own
    labels = dict((kind, label) for kind, label, _, _ in p.by_kind)
    assert "record_function" in labels["other"] and "Dynamo" in labels["framework"]
    q = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    compiling = [k for k in q.kernels if k.name.startswith("compiling")]
    assert len(compiling) == 1 and compiling[0].kind == "compile"
    labels = dict((kind, (label, share)) for kind, label, _, share in q.by_kind)
    assert labels["compile"][1] > 0.9 and "framework" not in labels["compile"][0]


def _covered(gaps: list[tuple[float, float]], ranges: list[tuple[float, float]]) -> list[float]:
    """Per range, how much of the gaps it covers (the ranges do not overlap one another)."""
    return [sum(max(0.0, min(b, e) - max(a, s)) for a, b in gaps) for s, e in ranges]


def _steady_cut(tmp_path: Path) -> tuple[Path, list[dict], list[tuple[float, float]]]:
    """capture_profile from its second forward graph call on (its 4 steady steps, as compilescope advises profiling):
    the cut profile, its timed events, and the GPU's idle gaps between its kernels (no compile in it)."""
    events = _events("capture_profile")
    timed = [e for e in events if e.get("ph") == "X"]
    calls = sorted((e for e in timed if e.get("cat") == "cpu_op" and e["name"].startswith("## Call CompiledFxGraph")),
                   key=lambda e: e["ts"])
    kept = [e for e in timed if e["ts"] >= calls[2]["ts"]]  # calls alternate forward, backward
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in kept if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"))
    gaps, end = [], gpu[0][1]
    for s, e in gpu[1:]:
        if s > end:
            gaps.append((end, s))
        end = max(end, e)
    return _write([e for e in events if e.get("ph") != "X"] + kept, tmp_path / "steady.json"), kept, gaps


def test_the_steady_steps_gpu_idle_is_said_by_what_the_cpu_ran(tmp_path):
    """capture_profile cut to its 4 steady steps (from the second forward graph call on, as compilescope advises
    profiling): 27 ms of GPU span, 6.8 ms a step, of which the kernels take 1.3 ms (graph calls and the few eager
    ops: no optimizer in the program, no memcpy, 4 memsets). The rest is the GPU idle, and the raw events say where
    the CPU was meanwhile: 12 ms in autograd's AccumulateGrad, 11 ms of it one call (the first step that adds into
    .grad: step 1 assigned it), and 7.7 ms inside the graph calls. The finding said 'the GPU is idle 95%: launch-bound
    ... where CUDA graphs help', which CUDA graphs would not mend: most of it is outside the graph calls."""
    from compilescope.wording import format_us

    cut, kept, gaps = _steady_cut(tmp_path)
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in kept if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert not [e for e in kept if e["cat"] == "gpu_memcpy"]
    assert not [e for e in kept if "optim" in e["name"].lower()]
    span = max(e for _, e in gpu) - gpu[0][0]
    assert span / 4 == pytest.approx(6756, abs=1)
    accumulate = _covered(gaps, [(e["ts"], e["ts"] + e["dur"]) for e in kept if e["cat"] == "cpu_op"
                                 and e["name"] == "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"])
    in_graphs = _covered(gaps, [(e["ts"], e["ts"] + e["dur"]) for e in kept if e["cat"] == "cpu_op"
                                and e["name"].startswith("## Call CompiledFxGraph")])
    assert sum(accumulate) > 0.4 * sum(b - a for a, b in gaps) and max(accumulate) > 0.9 * sum(accumulate)

    p = _runtime(cuda211("capture_profile.log.gz"), cut).profiles[0]
    causes = {c.what: c for c in p.idle_by_cpu}
    assert causes["AccumulateGrad"].us == pytest.approx(sum(accumulate), rel=1e-6)
    assert causes["AccumulateGrad"].longest_us == pytest.approx(max(accumulate), rel=1e-6)
    assert causes["compiled graph calls"].us == pytest.approx(sum(in_graphs), rel=1e-6)
    idle = sum(k.total_us for k in p.kernels if k.kind == "idle")
    assert sum(c.us for c in p.idle_by_cpu) == pytest.approx(idle) == pytest.approx(sum(b - a for a, b in gaps))
    from compilescope.analyses.runtime.findings import runtime_finding

    _, detail = runtime_finding(p)
    assert f"AccumulateGrad {format_us(sum(accumulate))} ({format_us(max(accumulate))} of it in one call)" in detail
    assert f"compiled graph calls {format_us(sum(in_graphs))}" in detail
    assert "of that outside the compiled graph calls" in detail and "launch-bound" not in detail


def _union_of(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def test_the_runtime_page_and_table_show_the_idle_by_what_the_cpu_ran(tmp_path, capsys):
    """The same 4 steady steps: the idle split was in --json and the finding only. The runtime page and the terminal's
    runtime section give it as rows: AccumulateGrad 12.1 ms, 11.4 ms of it one call (the first accumulation, step 2),
    7.7 ms inside the graph calls, 2.7 ms in no op, 1.4 ms in CompiledFunctionBackward outside its graph call. Each is
    worked out here from the raw events: the gaps between kernels that each range covers (the range's own graph calls
    left out), and what no op range on any thread covers."""
    from compilescope.wording import format_us

    from ..conftest import report, run_cli
    from ..htmltable import table_rows

    cut, kept, gaps = _steady_cut(tmp_path)
    ops = [e for e in kept if e["cat"] in ("cpu_op", "user_annotation")]
    ranges = {name: [(e["ts"], e["ts"] + e["dur"]) for e in ops if e["name"] == name]
              for name in ("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                           "autograd::engine::evaluate_function: CompiledFunctionBackward")}
    accumulate = _covered(gaps, ranges["autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"])
    graph_calls = [(e["ts"], e["ts"] + e["dur"]) for e in ops if e["name"].startswith("## Call CompiledFxGraph")]
    in_graphs = sum(_covered(gaps, graph_calls))
    backward = sum(_covered(gaps, ranges["autograd::engine::evaluate_function: CompiledFunctionBackward"]))
    backward -= sum(_covered(gaps, [c for c in graph_calls if any(
        s <= c[0] < e for s, e in ranges["autograd::engine::evaluate_function: CompiledFunctionBackward"])]))
    idle = sum(b - a for a, b in gaps)
    no_op = idle - sum(_covered(gaps, _union_of([(e["ts"], e["ts"] + e["dur"]) for e in ops])))
    assert (round(sum(accumulate) / 1000, 1), round(max(accumulate) / 1000, 1), round(in_graphs / 1000, 1),
            round(no_op / 1000, 1), round(backward / 1000, 1)) == (12.1, 11.4, 7.7, 2.7, 1.4)

    report(cuda211("capture_profile.log.gz"), tmp_path / "out", "--profile", cut)
    page = (tmp_path / "out" / "runtime.html").read_text()
    idle_table = page.split('<table class="rt-idle">')[1].split("</table>")[0]
    rows = {r[3]: r for r in table_rows(f"<table>{idle_table}</table>")[1:]}
    expected = {"AccumulateGrad (eager op)": (sum(accumulate), max(accumulate)),
                "compiled graph calls": (in_graphs, None),
                "no op recorded on the CPU (Python between calls, waiting)": (no_op, None),
                "CompiledFunctionBackward (eager op)": (backward, None)}
    for what, (us, one) in expected.items():
        assert rows[what][:3] == [f"{us / idle:.1%}", format_us(us), format_us(one) if one else ""], what
    assert list(rows)[0] == "AccumulateGrad (eager op)"  # most first

    assert run_cli("summary", cuda211("capture_profile.log.gz"), "--profile", cut) == 0
    out = capsys.readouterr().out.split("GPU idle by what the CPU ran meanwhile")[1]
    assert re.search(rf"{sum(accumulate) / idle:.1%}\s+{format_us(sum(accumulate))}\s+{format_us(max(accumulate))}\s+"
                     r"AccumulateGrad \(eager op\)", out)
    assert re.search(rf"{in_graphs / idle:.1%}\s+{format_us(in_graphs)}\s+compiled graph calls", out)

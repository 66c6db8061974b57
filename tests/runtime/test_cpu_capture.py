"""capture(profile=True) on CPU with torch 2.13: a profile recorded here, beside its log, joined back.

Each cpp_fused_* kernel's time must be the sum of its own profile events, and its user
lines must be lines of the model's forward below.
"""

from __future__ import annotations

import gzip
import inspect
import json
import os
import re

import pytest

import compilescope



pytestmark = pytest.mark.torch


def _model():
    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(32, 32)

        def forward(self, x):
            y = torch.relu(self.fc(x))
            z = (y * 2 + 1).sum(-1)
            return z.softmax(-1)

    return Block


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    import torch

    torch._dynamo.reset()
    block = _model()
    tmp = tmp_path_factory.mktemp("profiled")
    model = torch.compile(block())
    x = torch.randn(16, 32)
    with torch.no_grad(), compilescope.capture(out=tmp / "report", trace_dir=tmp / "traces", fresh_cache=True,
                                               profile=True) as cap:
        for _ in range(3):
            model(x)
    # The eager run of the same model, profiled as the tutorial does: the other side of the comparison.
    from torch.profiler import ProfilerActivity, profile

    eager = block()
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            eager(x)
    prof.export_chrome_trace(str(tmp / "eager.json"))
    # Both runs in one profile, told apart by record_function ranges.
    from torch.profiler import record_function

    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with record_function("eager step"):
                eager(x)
            with record_function("compiled step"):
                model(x)
    prof.export_chrome_trace(str(tmp / "both.json"))
    lines, start = inspect.getsourcelines(block.forward)
    return cap, tmp, range(start, start + len(lines))


def test_each_cpp_kernel_time_and_user_lines_match_the_profile(captured):
    cap, tmp, forward_lines = captured
    assert cap.profile and os.path.dirname(cap.profile) == os.path.dirname(cap.log)  # stored beside the log
    with gzip.open(cap.profile, "rt") as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    per_kernel: dict[str, list[float]] = {}
    for e in raw:  # (enable_kernel_profile names a C++ kernel's range graph_<n>_<the output code's name>)
        if m := re.fullmatch(r"(?:graph_\d+_)?(cpp_fused_\w+)", e["name"]):
            per_kernel.setdefault(m.group(1), []).append(e["dur"])
    assert per_kernel, "enable_kernel_profile names the C++ kernels in the profile"
    from compilescope.analyses.provenance.analysis import analyze_provenance
    from compilescope.analyses.runtime.analysis import analyze_runtime
    from compilescope.ingest.profile import read_profile

    with cap.load() as trace:
        p = analyze_runtime(trace, analyze_provenance(trace), [read_profile(cap.profile)]).profiles[0]
    rows = {k.name: k for k in p.kernels if k.kind == "inductor"}
    assert set(rows) == set(per_kernel)
    for name, durs in per_kernel.items():
        row = rows[name]
        assert row.total_us == pytest.approx(sum(durs)) and row.calls == len(durs)
        assert str(row.compile_id) == "[0/0]" and row.user_lines
        assert all(u.file == __file__ and u.line in forward_lines for u in row.user_lines)
    assert p.timeline == "cpu" and sum(k.share for k in p.kernels) == pytest.approx(1.0, abs=1e-6)
    # the CPU total is the wall span of the thread that ran the model
    by_thread: dict = {}
    for e in raw:
        if e.get("cat") in ("cpu_op", "user_annotation"):
            by_thread.setdefault(e["tid"], []).append(e)
    span = sum(max(e["ts"] + e["dur"] for e in evs) - min(e["ts"] for e in evs) for evs in by_thread.values())
    assert p.total_us == pytest.approx(span, rel=1e-3)
    extern = [k for k in p.kernels if k.kind == "extern"]
    assert any(k.name == "aten::addmm" and str(k.compile_id) == "[0/0]" and k.user_lines for k in extern)


def test_report_of_a_profiled_capture_has_the_runtime_page(captured):
    cap, tmp, _ = captured
    index = cap.report(overwrite=True)
    page = tmp / "report" / "runtime.html"
    assert page.exists() and "runtime.html" in open(index).read()
    html = page.read_text()
    assert "cpp_fused_" in html and "addmm" in html and "Eager vs compiled" not in html
    cap.report(overwrite=True, profiles=[tmp / "eager.json", cap.profile])  # two profiles: side by side
    html = page.read_text()
    assert "Eager vs compiled" in html and "speedup" in html and "aten::linear" in html


def test_eager_and_compiled_profiles_side_by_side(captured, capsys):
    cap, tmp, _ = captured
    from compilescope.cli import main

    assert main(["summary", cap.log, "--json", "--profile", str(tmp / "eager.json"), "--profile", cap.profile]) == 0
    doc = json.loads(capsys.readouterr().out)["runtime"]
    eager, compiled = doc["profiles"]
    assert not eager["matched"] and "no compiled graph" in eager["notes"][0]
    c = doc["comparison"]
    assert c["eager"].endswith("eager.json") and c["compiled"] == cap.profile
    # the captured block compiled the model: its compile time is left out of the compiled side
    compiling = sum(k["total_us"] for k in compiled["kernels"] if k["name"].startswith("compiling"))
    assert compiling > 0.5 * compiled["total_us"]
    # each side is its time in profiler events: the time in none (before the first op, between calls) is left out
    untraced = {side: sum(k["total_us"] for k in doc["kernels"] if k["kind"] == "idle")
                for side, doc in (("eager", eager), ("compiled", compiled))}
    # (the JSON rounds each figure: sums of rounded figures agree to a few hundredths of a µs, not to 1e-6)
    assert c["eager_us"] == pytest.approx(eager["total_us"] - untraced["eager"], abs=0.05)
    assert c["compiled_us"] == pytest.approx(compiled["total_us"] - compiling - untraced["compiled"], abs=0.05)
    assert c["speedup"] == pytest.approx(c["eager_us"] / c["compiled_us"], rel=1e-3)
    ops = {o["name"]: o for o in c["ops"]}
    # the eager side, op by op: eager's aten::linear ran the addmm the graph calls (extern_kernels.addmm): one row
    assert "aten::linear" not in ops and ops["aten::addmm"]["eager_op"] == "aten::linear"
    assert ops["aten::addmm"]["eager_calls"] == 3 and ops["aten::addmm"]["compiled_calls"] == 3
    assert any(n.startswith("cpp_fused_") and o["compiled_calls"] and not o["eager_calls"] for n, o in ops.items())
    (graph,) = c["graphs"]
    assert graph["compile_id"] == "[0/0]" and graph["speedup"] > 0


def test_one_profile_with_both_runs_is_compared(captured):
    cap, tmp, _ = captured
    from compilescope.analyses.provenance.analysis import analyze_provenance
    from compilescope.analyses.runtime.analysis import analyze_runtime
    from compilescope.ingest.profile import read_profile

    with cap.load() as trace:
        runtime = analyze_runtime(trace, analyze_provenance(trace), [read_profile(str(tmp / "both.json"))])
    with open(tmp / "both.json") as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = {name: sum(e["dur"] for e in raw if e["name"] == name) for name in ("eager step", "compiled step")}
    c = runtime.comparison
    assert c is not None and c.eager.endswith("(eager part)") and c.compiled.endswith("(compiled part)")
    assert c.eager_us == pytest.approx(steps["eager step"], rel=0.01)
    assert c.compiled_us == pytest.approx(steps["compiled step"], rel=0.01)
    ops = {o.name: o for o in c.ops}
    assert "aten::linear" not in ops and ops["aten::addmm"].eager_op == "aten::linear"
    assert ops["aten::addmm"].eager_calls == 2 and ops["aten::addmm"].compiled_calls == 2
    assert any(n.startswith("cpp_fused_") and o.compiled_calls == 2 and not o.eager_calls for n, o in ops.items())

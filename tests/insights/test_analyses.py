"""The exact insights on real torch 2.13 logs (facts checked in tests/data/torch213/README.md)."""

from __future__ import annotations

import gzip
import os
import re
from collections import Counter

import pytest

from compilescope.analyses.caches import CacheEvent, Caches, CompileCache
from compilescope.analyses.compile_time import PHASES, CompileTimes, Segment, TimelineRow
from compilescope.analyses.graph_breaks.reason_text import parse_reason
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.model.ids import NO_COMPILE_ID
from compilescope.analyses.recompiles.reasons import classify_change, parse_reason as parse_guard, reasons_payload
from compilescope.render.charts import ChartOptions, CompileTimeChart

from .helpers import insights_of
from ..conftest import REPO, cuda211, peer, run_cli, torch213, torch214


def _short(loc):
    return f"{os.path.basename(loc.filename)}:{loc.line}" if loc else None


# ---- graph breaks ----------------------------------------------------------------------------------------------

def test_graph_breaks_three_distinct_with_user_lines():
    gb = insights_of("graph_breaks").graph_breaks
    assert gb.source == "dynamo_graph_break_reason"
    assert gb.total == 4
    assert len(gb.breaks) == 3
    got = [(b.reason, _short(b.location), b.location.function, b.count, b.compile_ids) for b in gb.breaks]
    assert got == [
        ("Failed to trace builtin operator", "graph_breaks.py:18", "log_step", 2, ["[1/0]", "[3/0]"]),
        ("Data-dependent branching", "graph_breaks.py:23", "f", 1, ["[0/0]"]),
        ("Unsupported Tensor.item() call with capture_scalar_outputs=False", "graph_breaks.py:28", "f", 1, ["[2/0]"]),
    ]
    codes = [b.location.code for b in gb.breaks]
    assert codes == ["print(msg)", "if y.sum() > 0:  # graph break 1: data-dependent branch",
                     "s = y.sum().item()  # graph break 3: .item()"]


def test_graph_break_explanations_and_hints_as_torch_wrote_them():
    by_reason = {b.reason: b for b in insights_of("graph_breaks").graph_breaks.breaks}
    item = by_reason["Unsupported Tensor.item() call with capture_scalar_outputs=False"]
    assert item.explanation == "Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False."
    assert item.hints == ["Set `torch._dynamo.config.capture_scalar_outputs = True` or `export "
                          "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph."]
    assert item.docs_url == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html"
    assert item.context == "Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):"
    branch = by_reason["Data-dependent branching"]
    assert branch.context is None
    assert branch.hints[-1] == "Use `torch.cond` to express dynamic control flow."
    assert "Detected data-dependent branching" in branch.explanation
    assert "User code traceback" not in branch.text


def test_no_graph_breaks_where_there_are_none():
    for name in ("training", "recompiles", "compile_error_raises", "cache_cold"):
        assert not insights_of(name).graph_breaks, name


def test_graph_breaks_from_restart_reasons_when_no_artifact():
    parsed = parse_reason("Failed to trace builtin operator\n  Explanation: no print\n  Hint: avoid print\n")
    assert (parsed["reason"], parsed["explanation"], parsed["hints"]) == ("Failed to trace builtin operator", "no print",
                                                                         ["avoid print"])


# ---- recompiles ------------------------------------------------------------------------------------------------

def test_recompile_chain_and_failing_guards():
    rc = insights_of("recompiles").recompiles
    assert rc.total == 7
    assert [(f.name, f.hit_limit) for f in rc.frames] == [("h", True), ("g", False)]  # the limit comes first
    h, g = rc.frames
    assert g.chain == ["[0/0]", "[0/1]", "[0/2]", "[0/3]"]
    assert [(s.compile_id, s.guard.compile_id, s.guard.change, s.guard.guard) for s in g.steps] == [
        ("[0/1]", "[0/0]", "size", "tensor 'x' size mismatch at index 0. expected 4, actual 8"),
        ("[0/2]", "[0/1]", "dtype", "tensor 'x' dtype mismatch. expected Float, actual Double"),
        ("[0/3]", "[0/2]", "requires_grad", "tensor 'x' requires_grad mismatch. expected requires_grad=0"),
    ]
    assert g.changes == ["size", "dtype", "requires_grad"]
    # Every cache entry tried is kept, newest first, as torch lists them.
    assert [fg.compile_id for fg in g.steps[2].failed_guards] == ["[0/2]", "[0/1]", "[0/0]"]


def test_recompile_limit_frame_flagged_with_constant_guards():
    h = insights_of("recompiles").recompiles.frames[0]
    assert (h.name, h.hit_limit, h.limit) == ("h", True, 4)
    assert h.chain == ["[1/0]", "[1/1]", "[1/2]", "[1/3]", "[1/4]"]
    assert [(s.compile_id, s.guard.guard, s.guard.change, s.failed) for s in h.steps] == [
        ("[1/1]", "n == 1", "constant", False), ("[1/2]", "n == 2", "constant", False),
        ("[1/3]", "n == 3", "constant", False), ("[1/4]", "n == 4", "constant", True),
    ]
    loc = h.steps[0].guard.location
    assert (loc.filename.endswith("tests/data/torch213/programs/recompiles.py"), loc.line, loc.function, loc.code) == (
        True, 29, "h", "return x + n")
    assert "recompile limit (4)" in h.advice[0]
    top = insights_of("recompiles").findings[0]
    assert (top.severity, top.section) == ("error", "recompiles")
    assert "h hit the recompile limit" in top.title


def test_recompile_on_shape_guard_with_unclipped_location():
    f = insights_of("dynamic_shapes").recompiles.frames[0]
    assert f.chain == ["[0/0]", "[0/1]", "[0/2]"]
    step = f.steps[1]
    assert (step.guard.guard, step.guard.change, step.guard.compile_id) == ("x.size()[0] != 5", "shape_guard", "[0/1]")
    # torch clips the path at the front ("ork/main/..."); the full one is in the log's string table.
    assert step.guard.location.filename.endswith("/tests/data/torch213/programs/dynamic_shapes.py")
    assert step.guard.location.filename.startswith("/")
    assert step.guard.location.line == 25


@pytest.mark.parametrize("text, change", [
    ("tensor 'x' stride mismatch at index 0. expected 1, actual 2", "stride"),
    ("GLOBAL_STATE changed: grad_mode ", "global_state"),
    ("___check_obj_id(L['self'], 140)", "object_identity"),
    ("len(L['xs']) == 3", "length"),
    ("len(kwargs) == 6", "keyword_arguments"),
    ("not ___dict_contains('return_dict', kwargs)", "keyword_arguments"),
    ("len(L['kwargs']) == 2", "keyword_arguments"),
    ("len(L['kwargs_list']) == 2", "length"),
    ("L['mode'] == 'train'", "constant"),
    ("something else entirely", "other"),
])
def test_what_changed(text, change):
    assert classify_change(text) == change


def test_single_reason_payload_is_bare_text():
    assert reasons_payload("0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8") == [
        "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8"]
    assert reasons_payload('["0/1: a", "0/0: b"]') == ["0/1: a", "0/0: b"]
    assert parse_guard("0/3: n == 4").compile_id == "[0/3]"


# ---- errors ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("log, expected", [
    ("compile_error_fallback", [("[0/0]", "kernel_compile", "InductorError", "CppCompileError", True)]),
    ("compile_error_lowering", [("[0/0]", "inductor_lowering", "InductorError", "LoweringException", True)]),
    ("compile_error_raises", [("[0/0]", "dynamo", "Unsupported", None, False),
                              ("[1/0]", "user_backend", "BackendCompilerFailed", "ReluCompileError", False)]),
    ("recompiles", [("[1/4]", "recompile_limit", "Unsupported", None, False)]),
])
def test_failing_stage(log, expected):
    errors = insights_of(log).errors.errors
    assert [(e.compile_id, e.stage, e.exception, e.inner_exception, e.fell_back) for e in errors] == expected


def test_error_locations_and_next_steps():
    cpp = insights_of("compile_error_fallback").errors.errors[0]
    assert (cpp.location_kind, _short(cpp.location), cpp.location.function) == ("compiled frame",
                                                                               "compile_error_fallback.py:18", "f")
    assert cpp.compiler_errors and "error: ‘compile’ was not declared in this scope" in cpp.compiler_errors[0]
    assert "auto tmp1 = compile error!;" in cpp.compiler_errors[0]
    assert any('backend="aot_eager"' in s for s in cpp.next_steps)
    assert any('TORCHDYNAMO_REPRO_AFTER="aot"' in s for s in cpp.next_steps)
    assert len(cpp.detail) < 2100  # the 100 KB g++ output is cut

    low = insights_of("compile_error_lowering").errors.errors[0]
    assert (low.location_kind, _short(low.location), low.location.code) == (
        "failure", "compile_error_lowering.py:34", "return boom(y) + 1  # lowering fails here")
    assert low.message.startswith("LoweringException: NotImplementedError: compilescope_test::boom")
    assert any('TORCHDYNAMO_REPRO_AFTER="aot"' in s and "minifier_launcher.py" in s for s in low.next_steps)

    full, backend = insights_of("compile_error_raises").errors.errors
    assert (_short(full.location), full.location.code) == ("compile_error_raises.py:18",
                                                           'print("graph break under fullgraph=True")')
    assert full.next_steps[0].startswith("fullgraph=True makes every graph break an error")
    assert backend.backend == "relu_compile_error_TESTING_ONLY"
    assert backend.message == "backend='relu_compile_error_TESTING_ONLY' raised: ReluCompileError:"
    assert any('TORCHDYNAMO_REPRO_AFTER="dynamo"' in s for s in backend.next_steps)


def test_no_errors_in_successful_logs():
    for name in ("graph_breaks", "training", "dynamic_shapes", "cache_cold", "cache_warm"):
        assert not insights_of(name).errors, name


# ---- caches ----------------------------------------------------------------------------------------------------

def test_cache_cold_then_warm():
    cold, warm = insights_of("cache_cold").caches, insights_of("cache_warm").caches
    assert cold.overall == "cold"
    assert cold.counts == {"fx_graph_cache": {"miss": 1}, "aotautograd_cache": {"miss": 1}}
    assert [(c.compile_id, c.outcome("fx_graph_cache"), c.outcome("aotautograd_cache")) for c in cold.compiles] == [
        ("[0/0]", "miss", "miss")]
    assert cold.graphs_missing == []
    assert warm.overall == "warm"
    assert warm.counts == {"fx_graph_cache": {"hit": 1}, "aotautograd_cache": {"hit": 1}}
    assert warm.graphs_missing == ["[0/0]"]
    assert warm.time_saved_ms == 8021.0
    assert any(f.section == "caches" for f in insights_of("cache_warm").findings)


def test_cache_outcome_of_failed_compile_and_none():
    fallback = insights_of("compile_error_fallback").caches
    assert [(c.outcome("fx_graph_cache"), c.outcome("aotautograd_cache")) for c in fallback.compiles] == [(None, "miss")]
    assert insights_of("graph_breaks").caches.overall == "none"


# ---- compile time ----------------------------------------------------------------------------------------------

def test_compile_time_per_phase_matches_metrics():
    ct = insights_of("cache_cold").compile_time
    (only,) = ct.compiles
    assert only.compile_id == "[0/0]" and only.name == "f" and only.source == "chromium_events"
    # The chromium events of the compile span its compilation_metrics time (8.265 s) plus bookkeeping.
    assert 8.265 <= only.total_s <= 8.3
    assert only.top_phase == "kernel_compile"
    assert ct.phases[0].phase == "kernel_compile" and ct.phases[0].share > 0.7
    assert abs(sum(p.share for p in ct.phases) - 1) < 1e-9
    assert set(only.phases) == {p for p, _ in PHASES}


def test_compile_time_slowest_first_and_timeline_rows():
    ct = insights_of("graph_breaks").compile_time
    totals = [c.total_s for c in ct.compiles]
    assert totals == sorted(totals, reverse=True)
    assert sorted(c.compile_id for c in ct.compiles) == ["[0/0]", "[1/0]", "[2/0]", "[3/0]", "[4/0]"]
    assert [r.label for r in ct.timeline] == ["[0/0]", "[1/0]", "[2/0]", "[3/0]", "[4/0]"]  # in the order they ran
    chart = CompileTimeChart.from_results(ct)  # the geometry is the renderer's
    assert [r.label for r in chart.timeline] == [r.label for r in ct.timeline] and chart.rows_omitted == 0
    for row in chart.timeline:
        assert row.segments and all(0 <= s.x_pct <= 100.001 and s.w_pct > 0 for s in row.segments)
    assert max(r.w_pct for r in chart.timeline) == 100
    assert chart.ticks[0].label == "0" and all(0 <= t.x_pct <= 100 for t in chart.ticks)
    assert [b.phase for b in chart.phases] == [p.phase for p in ct.phases] and chart.phases[0].bar_pct == 100


def test_the_chart_draws_the_slowest_rows_and_the_analysis_keeps_all():
    rows = [TimelineRow(f"[{i}/0]", f"[{i}/0]", float(i), 1.0 + i % 7, [Segment("dynamo", 0.0, 1.0 + i % 7)])
            for i in range(70)]
    times = CompileTimes(1.0, [], [], rows)
    chart = CompileTimeChart.from_results(times, ChartOptions(timeline_rows=60))
    assert len(chart.timeline) == 60 and chart.rows_omitted == 10
    assert min(r.duration_s for r in chart.timeline) >= max(r.duration_s for r in rows if r.label not in
                                                             {c.label for c in chart.timeline})
    assert [r.label for r in chart.timeline] == sorted((r.label for r in chart.timeline), key=lambda x: int(x[1:-3]))
    assert len(times.to_json()["timeline"]) == 70  # summary --json keeps every row


def test_files_compiled_outside_any_compile_are_no_compile_id(capsys):
    """torch logs the compile_file events of its C++/Triton compiles with compile_id "None" (str(None)): that time
    is outside any compile ([-/-]), never a compile id "[None]" named as the slowest (tlparse's simple.log)."""
    with read_trace(str(peer("simple.log"))) as trace:
        ins = insights(trace)
    ct = ins.compile_time
    # (named by its events: the three compile_file events with compile_id "None")
    assert [(c.compile_id, c.name) for c in ct.compiles] == [(NO_COMPILE_ID, "outside any compile (compile_file ×3)"),
                                                             ("[0/0]", "forward")]
    assert ct.compile_ids == 1 and ct.slowest is ct.compiles[1]
    [finding] = [f for f in ins.findings if f.section == "compile_time"]
    assert finding.detail.endswith("slowest [0/0] (1.66 s)")
    assert run_cli("summary", peer("simple.log")) == 0
    out = capsys.readouterr().out
    assert "Compile time (3.55 s)" in out and "[None]" not in out


def test_time_in_compile_file_is_named_a_cpp_or_cuda_compile_not_triton(capsys):
    """simple.log's output code defines Triton kernels only, yet its three compile_file events (compile_id "None")
    are torch running a system compiler on a C++/CUDA source file (cpp_builder's run_compile_cmd, or CUDACodeCache),
    not Triton: the row outside any compile is mostly that, and the phase, which holds [0/0]'s async_compile.wait
    (Triton) too, names both."""
    with read_trace(str(peer("simple.log"))) as trace:
        ct = insights(trace).compile_time
    assert ct.labels["kernel_compile"] == "C++/Triton compile"
    outside, forward = ct.compiles
    assert outside.top_phase == "kernel_compile" and outside.phase_label("kernel_compile", ct.labels) == "C++/CUDA compile"
    assert forward.kernel_compile_label is None  # (its kernel compile is async_compile.wait: Triton's)
    assert run_cli("summary", peer("simple.log")) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "C++/CUDA compile (1.89 s)" in out and "Triton compile (1.89 s)" not in out


def test_compile_time_backward_row():
    ct = insights_of("training").compile_time
    assert [r.label for r in ct.timeline] == ["[0/0]", "[0/0] backward"]
    assert ct.compiles[0].top_phase == "aot"


_HASHING = ("inductor_codecache_torch_key", "CacheBase.get_system.triton_key")


def _timed_events(log) -> list[tuple[str, str, float]]:
    """The log's chromium events as (ph, name, ts), read from the raw text: each payload follows its envelope."""
    text = gzip.open(log, "rt").read() if log.suffix == ".gz" else log.read_text()
    found = re.findall(r'\{"chromium_event": .*?\n\t\{\n\t"name": "([^"]+)",\n\t"ts": ([\d.]+),.*?\n\t"ph": "(\w)"',
                       text, re.S)
    return [(ph, name, float(ts)) for name, ts, ph in found]


@pytest.mark.parametrize("logs, name, parent, hashing_s", [
    # 2.13 CPU: torch hashed in 0.124 s, Triton (absent) in 0.1 ms, both directly in backend_compile.
    (torch213, "cache_cold.log", "backend_compile", 0.12433),
    # 2.14 CUDA: 0.326 s for torch, 0.510 s importing and hashing Triton, in backend_compile.
    (torch214, "cache_cold.log", "backend_compile", 0.83645),
    # tlparse's log (an older torch): torch hashed inside inductor_compile, 0.256 s.
    (peer, "cache_hit_miss.log", "inductor_compile", 0.25587),
])
def test_hashing_torch_and_triton_for_cache_keys_is_the_backends_time_not_a_cache_lookup(logs, name, parent, hashing_s):
    # Hashing the installed torch (inductor_codecache_torch_key) and Triton (CacheBase.get_system.triton_key) keys the
    # caches and looks nothing up: both are the backend's, one phase wherever torch calls them. These logs time no
    # cache lookup (no other CacheBase./FxGraphCache./AOTAutogradCache. event), so nothing is "Cache lookup & load"
    # (torch_key was, 124 ms of cache_cold's, while triton_key was the backend's).
    log = logs(name)  # (here, not at collection: peer() skips without ../shared)
    open_events: list[str] = []
    began: dict[str, float] = {}
    took = 0.0
    for ph, name, ts in _timed_events(log):
        if name in _HASHING and ph == "B":
            assert open_events[-1] == parent
            began[name] = ts
        elif name in _HASHING and ph == "E":
            took += (ts - began.pop(name)) / 1e6
        else:
            assert ph != "B" or not name.startswith(("CacheBase.", "FxGraphCache.", "AOTAutogradCache."))
        if ph == "B":
            open_events.append(name)
        elif ph == "E":
            open_events.remove(name)
    assert took == pytest.approx(hashing_s, abs=1e-5)
    with read_trace(str(log)) as trace:
        ct = insights(trace).compile_time
    phases = {p.phase: p.seconds for p in ct.phases}
    assert "cache" not in phases
    assert phases["backend"] >= took


def test_a_torch_source_checkouts_frames_are_not_the_users(capsys):
    """tlparse's export.log comes from a PyTorch checkout (.../pytorch/torch/_logging/...): a guard is placed at
    the test's line that added it, not at torch's logging call; the unbacked symbol has no value to show."""
    with read_trace(str(peer("export.log"))) as trace:
        ds = insights(trace).dynamic_shapes
    assert [(_short(g.location), g.location.code) for g in ds.guards[:3]] == [
        ("test_draft_export.py:276", "torch._check_is_size(a)"), ("test_draft_export.py:277", "torch._check(a < z.shape[0])"),
        ("test_draft_export.py:279", "return z[:a]")]
    [u0] = ds.symbols
    assert (u0.symbol, u0.unbacked, u0.value, u0.source, _short(u0.location)) == ("u0", True, None, None, "test_draft_export.py:269")
    assert run_cli("summary", peer("export.log")) == 0
    out = capsys.readouterr().out
    assert "u0 in [-/-] (any value)" in out  # torch's range [-int_oo, int_oo], as the raw log writes it
    assert u0.range == "[-int_oo, int_oo]"
    assert "u0 = None" not in out and "from ?" not in out and "_internal.py" not in out


# ---- dynamic shapes --------------------------------------------------------------------------------------------

def test_dynamic_shapes_symbols_specializations_guards():
    ds = insights_of("dynamic_shapes").dynamic_shapes
    assert [(s.compile_id, s.symbol, s.value, s.range, s.source) for s in ds.symbols] == [
        ("[0/1]", "s77", "3", "[2, int_oo]", "L['x'].size()[0]"),
        ("[0/2]", "s77", "5", "[2, int_oo]", "L['x'].size()[0]"),
        ("[1/0]", "s77", "6", "[2, int_oo]", "L['x'].size()[0]"),
    ]
    assert [(s.compile_id, s.symbol, s.value, s.reason, _short(s.location)) for s in ds.specializations] == [
        ("[0/2]", "s77", "5", "range_refined_to_singleton", "dynamic_shapes.py:25")]
    assert [(g.compile_id, g.expr) for g in ds.guards] == [
        ("[0/1]", "Ne(s77, 5)"), ("[0/2]", "Eq(s77, 5)"), ("[1/0]", "Eq(Mod(s77, 2), 0)"), ("[1/0]", "Ne((s77//2), 1)"),
        ("[1/0]", "8*((s77//2)) <= 4*s77"), ("[1/0]", "Ne((s77//2), 1)"), ("[1/0]", "((s77//2)) >= 2"),
    ]
    # The last two were added outside user code (empty user_stack in the log): no location, not a torch frame.
    assert [_short(g.location) for g in ds.guards] == ["dynamic_shapes.py:25"] * 2 + ["dynamic_shapes.py:31"] * 3 + [None] * 2


def test_dynamic_shapes_grouped_by_size_and_by_line():
    """The program (programs/dynamic_shapes.py): f's x is made dynamic by its recompiles at n=3 and n=5, g's by
    mark_dynamic (n=6): two sizes, though torch names both L['x'].size()[0] and both s77. `if x.shape[0] == 5`
    guards in both of f's compiles (Ne at n=3; Eq at n=5, where it also specialized the size to 5) and g's
    `reshape(-1, 2)` adds the divisibility guard. Each guard is in one group."""
    program = (torch213("x").parents[1] / "programs" / "dynamic_shapes.py").read_text().splitlines()
    branch = 1 + next(i for i, line in enumerate(program) if "if x.shape[0] == 5" in line)
    reshape = 1 + next(i for i, line in enumerate(program) if ".reshape(-1, 2).sum(1)" in line)
    ds = insights_of("dynamic_shapes").dynamic_shapes
    assert [(z.source, z.compile_ids, [s.value for s in z.symbols], z.location.line) for z in ds.sizes] == [
        ("L['x'].size()[0]", ["[0/1]", "[0/2]"], ["3", "5"], branch), ("L['x'].size()[0]", ["[1/0]"], ["6"], reshape)]
    [spec] = ds.specialized
    assert (spec.values_text, spec.sources, spec.location.line) == ("s77 = 5 in [0/2]", ["L['x'].size()[0]"], branch)
    assert spec.recompiles == []  # n=5 was f's last call
    lines = {g.location.line: g for g in ds.guard_lines}
    assert list(lines) == [branch, reshape]
    assert [(c.expr, c.compile_ids) for c in lines[branch].conditions] == [("Ne(s77, 5)", ["[0/1]"]),
                                                                           ("Eq(s77, 5)", ["[0/2]"])]
    assert "Eq(Mod(s77, 2), 0)" in [c.expr for c in lines[reshape].conditions]
    assert sum(g.count for g in ds.guard_lines) + ds.unplaced_guards.count == len(ds.guards)


def test_a_specialization_a_recompile_followed_comes_first_and_names_it():
    """hf_gpt2_generate (transformers' generate()): the prefill compile [0/2] specialized the prompt's length
    (input_ids' dimension 1) to 8, and the first decode step, one token long, failed that guard: [0/3] recompiled.
    The attention mask's specialization in [0/3] is not what [0/4] recompiled for (the KV cache grew). The guards torch
    logged with an empty user stack (no user code was running) are the one group with no line."""
    with read_trace(str(cuda211("hf_gpt2_generate.log.gz"))) as trace:
        ins = insights(trace)
        no_user_code = [g["expr"] for e in trace.sorted_compiles() for g in e.guards_added if not g.get("user_stack")]
    ds = ins.dynamic_shapes
    [step] = [s for f in ins.recompiles.frames for s in f.steps if s.compile_id == "[0/3]"]
    assert "size mismatch at index 1. expected 8, actual 1" in step.guard.guard
    assert [(s.values_text, s.sources, s.recompiles) for s in ds.specialized] == [
        ("s27 = 8 in [0/2]", ["L['kwargs']['input_ids'].size()[1]"], ["[0/3]"]),
        ("s16 = 9 in [0/3]", ["L['kwargs']['attention_mask'].size()[1]"], [])]
    assert [s["recompile"] for s in ins.to_json()["dynamic_shapes"]["specializations"]] == ["[0/3]", None]
    assert len(no_user_code) > len(ds.guards) / 2
    assert [c.expr for c in ds.unplaced_guards.conditions] == no_user_code
    assert all(g.location is not None for g in ds.guard_lines)


# ---- findings --------------------------------------------------------------------------------------------------

def test_findings_rank_errors_before_warnings():
    order = {"error": 0, "warning": 1, "info": 2}
    for name in ("recompiles", "compile_error_raises", "graph_breaks"):
        ranks = [order[f.severity] for f in insights_of(name).findings]
        assert ranks == sorted(ranks), name
    assert [f.severity for f in insights_of("compile_error_raises").findings][:2] == ["error", "error"]


def test_a_graph_break_torch_wrapped_is_named_by_the_reason_after_the_wrapper():
    # torch 2.14: "Failed to handle graph break gracefully. ... Graph break encountered:", then the reason.
    parsed = parse_reason("Graph break in user code at /x/inspect.py:1772\n"
                          "Graph Break Reason: Failed to handle graph break gracefully. Skipping the function and "
                          "falling back to eager. Graph break encountered:\n\nObserved exception\n"
                          "  Explanation: Dynamo found no exception handler.\n  Hint: check eager.\n")
    assert parsed["reason"] == "Observed exception"
    assert parsed["context"].startswith("Failed to handle graph break gracefully.")
    assert parsed["explanation"] == "Dynamo found no exception handler."
    assert parsed["hints"] == ["check eager."]


def test_a_compile_served_by_the_aotautograd_cache_names_what_its_log_lacks():
    # torch213 cache_warm.log: [0/0] hit both caches; cache_cold.log is the same program compiled anew.
    def names(log):
        with read_trace(str(torch213(log))) as trace:
            [entry] = [e for c, e in trace.compiles.items() if c is not None]
            return {a.name for a in entry.artifacts}, insights(trace)

    warm, ins = names("cache_warm.log")
    cold, _ = names("cache_cold.log")
    lookups = ("fx_graph_cache_", "aotautograd_cache_", "inductor_output_code", "torch._functorch.config")  # (no graph)
    assert {n for n in cold - warm if not n.startswith(lookups)} == {
        "before_joint_graph", "after_joint_graph", "before_pre_grad_graph", "after_pre_grad_graph",
        "before_post_grad_graph"}
    assert {"aot_inference_graph", "inductor_post_grad_graph"} <= warm
    [served] = [f for f in ins.findings if f.title == "served from cache: [0/0]"]
    # One compile served: said of it alone ("this compile's", never "their"), in plain words for the five graphs above.
    assert served.detail.startswith("the graph Inductor received and its graphs before its post-grad passes are not in "
                                    "this log (this compile's forward or inference graph, post-grad graph and output "
                                    "code are)")


def test_a_models_dynamic_sizes_are_placed_in_its_library_code():
    # tests/data/cuda_torch211/logs/hf_gpt2_generate.log.gz: transformers' GPT-2, installed in a venv that itself lies
    # in a folder named torch (/opt/torch/.venv/lib/python3.12/site-packages/transformers/...). Its symbols' and
    # specializations' user stacks hold transformers' frames only: each is placed at the innermost one, as logged;
    # but a symbol of an argument of transformers' compiled frame itself (L['kwargs']['input_ids'].size()[1]) is placed
    # at the program's call that passed it in, the innermost frame of its Python stack in the program (lines 20, 22).
    import gzip
    import json

    from ..conftest import cuda211

    log = cuda211("hf_gpt2_generate.log.gz")
    logged = {}
    calls = []  # (symbol, source, the line of main() the Python stack passes through), in log order
    with gzip.open(log, "rt", encoding="utf-8") as f:
        for line in f:
            for kind in ("create_symbol", "symbolic_shape_specialization"):
                if f'{{"{kind}"' in line:
                    record = json.loads(line.split("] ", 1)[1])[kind]
                    last = record["user_stack"][-1]
                    logged[(kind, record["symbol"])] = (last["line"], last["name"])
                    if kind == "create_symbol":
                        calls.append((record["symbol"], record["source"],
                                      next(fr["line"] for fr in record["stack"] if fr["name"] == "main")))
    with read_trace(str(log)) as trace:
        ds = insights(trace).dynamic_shapes
    assert ds.symbols and ds.specializations
    assert [(s.symbol, s.source) for s in ds.symbols] == [c[:2] for c in calls]
    passed = [(s.symbol, s.source, s.location.line) for s in ds.symbols if s.passed_in]
    assert passed == [c for c in calls if c[1] in ("L['kwargs']['input_ids'].size()[1]",
                                                   "L['kwargs']['attention_mask'].size()[1]")]
    assert [line for *_, line in passed] == [20, 22, 22, 22]  # model(input_ids=ids), then model.generate(...)
    for s in ds.symbols:
        if s.passed_in:
            assert s.location.filename.endswith("hf_gpt2_generate.py") and s.location.function == "main"
            continue
        assert (s.location.line, s.location.function) == logged[("create_symbol", s.symbol)], s
        assert "site-packages/transformers/" in s.location.filename
    assert [(s.symbol, s.location.short) for s in ds.specializations] == [
        ("s27", "modeling_gpt2.py:577"), ("s16", "masking_utils.py:252")]


def test_torch_is_told_apart_by_where_it_is_installed():
    from compilescope.analyses.user_locations import is_framework_file, is_torch_file

    venv = "/opt/torch/.venv/lib/python3.12/site-packages/"
    assert is_torch_file(venv + "torch/_dynamo/eval_frame.py") and not is_torch_file(venv + "transformers/utils/generic.py")
    assert is_framework_file(venv + "transformers/utils/generic.py")  # (a library's code: not the user's either)
    assert is_torch_file("/data/users/x/pytorch/torch/_logging/_internal.py")  # a source checkout (peer export.log)
    assert is_torch_file("/data/users/x/pytorch/torch/__init__.py") and is_torch_file("torch/nn/modules/linear.py")
    for users in ("/home/me/torch/proj/train.py", "/work/torch-experiments/torch/model.py"):
        assert not is_torch_file(users) and not is_framework_file(users), users


def test_every_value_range_in_the_real_logs_reads_as_words_or_as_torch_wrote_it():
    """The ranges torch writes in create_symbol ("vr") across the fixtures: open ends (int_oo for ints, oo for floats)
    in words, a closed range ([2, 64]: mark_dynamic's min and max) as written."""
    import glob

    from compilescope.analyses.dynamic_shapes import range_text  # (here: the one test of it)

    found: set[str] = set()
    for name in glob.glob(str(REPO / "tests" / "data" / "*" / "logs" / "*.log*")):
        with (gzip.open(name, "rt") if name.endswith(".gz") else open(name)) as f:
            found.update(re.findall(r'"vr": "([^"]*)"', f.read()))
    assert {"[2, int_oo]", "[-int_oo, int_oo]", "[-oo, oo]", "[2, 64]"} <= found
    words = {"[2, int_oo]": "any value ≥ 2", "[-int_oo, int_oo]": "any value", "[-oo, oo]": "any value",
             "[2, 64]": "[2, 64]", "[-int_oo, 5]": "any value ≤ 5"}
    for vr in found | set(words):
        assert range_text(vr) == words.get(vr, vr), vr


def test_fx_graph_cache_lookups_are_named_forward_and_backward_where_the_log_says():
    # torch 2.14's provenance.log trains a Linear+ReLU: [0/0] logs aot_forward_graph and aot_backward_graph, and two
    # fx_graph_cache_miss artifacts whose keys list "fx_kwargs[is_backward]: False", then "... True".
    text = gzip.open(torch214("provenance.log"), "rt").read()
    misses = re.findall(r'"fx_graph_cache_miss", "encoding": "json"}.*\n\t(.*)', text)
    assert [re.findall(r"fx_kwargs\[is_backward\]: (\w+)", m) for m in misses] == [["False"], ["True"]]
    assert '{"aot_forward_graph"' in text and '{"aot_backward_graph"' in text
    with read_trace(str(torch214("provenance.log"))) as trace:
        [compiled] = insights(trace).caches.compiles
    assert compiled.outcome("fx_graph_cache") == "forward miss, backward miss"
    assert [e.graph for e in compiled.events] == [None, "forward", "backward"]  # (the AOTAutograd lookup first)
    # The peer's cache_hit_miss.log: three inference graphs logged as [1/0] (is_backward False each), one in each run
    # between the program's resets (ours [1/0], [3/0], [5/0]): a forward alone, so naming it would tell nothing apart.
    with read_trace(str(peer("cache_hit_miss.log"))) as trace:
        flex = [c for c in insights(trace).caches.compiles if any(e.cache == "fx_graph_cache" for e in c.events)]
    assert [(c.compile_id, [e.graph for e in c.events if e.cache == "fx_graph_cache"]) for c in flex] == [
        ("[1/0]", ["forward"]), ("[3/0]", ["forward"]), ("[5/0]", ["forward"])]
    assert [c.outcome("fx_graph_cache") for c in flex] == ["miss", "hit", "miss"]


@pytest.mark.parametrize("log", ["compile_error_fallback.log", "compile_error_lowering.log"])
def test_a_cache_lookup_torch_never_logged_is_not_called_a_miss(log):
    # Both compiles fail in Inductor (a dynamo_error): the log has [0/0]'s aotautograd_cache_miss and no
    # fx_graph_cache_* artifact, which torch writes once Inductor has compiled the graph.
    text = gzip.open(torch214(log), "rt").read()
    assert re.findall(r'\{"artifact": \{"name": "(\w+_cache_\w+)"', text) == ["aotautograd_cache_miss"]
    assert '{"artifact": {"name": "dynamo_error"' in text
    with read_trace(str(torch214(log))) as trace:
        found = insights(trace).caches
    assert [(c.outcome("fx_graph_cache"), c.outcome("aotautograd_cache")) for c in found.compiles] == [(None, "miss")]
    assert found.fx_unlogged == ["[0/0]"]
    # The compile failed (its compilation_metrics' fail_type): it compiled nothing, anew or not.
    assert re.findall(r'"compilation_metrics": \{"compile_id": "0/0".*?"fail_type": "(\w+)"', text) == ["InductorError"]
    assert found.failed == ["[0/0]"]
    assert found.overall_text == ("every cache lookup torch logged missed (a first run, or an empty cache), and torch "
                                  "compiled nothing: [0/0] failed; [0/0] logged no FX graph cache lookup (torch logs "
                                  "one once Inductor has compiled the graph)")
    assert "every cache lookup missed" not in found.overall_text and "anew" not in found.overall_text
    # A compile that logged both lookups keeps the plain verdict.
    with read_trace(str(torch214("cache_cold.log"))) as trace:
        cold = insights(trace).caches
    assert cold.fx_unlogged == [] and cold.failed == []
    assert cold.overall_text == "every cache lookup missed, so torch compiled everything anew (a first run, or an empty cache)"


def test_a_restarted_attempt_without_an_fx_graph_lookup_is_named_as_an_attempt():
    """compiled_optimizer.log (CUDA, torch 2.11): [2/1]'s attempt 0 logs an aotautograd_cache_miss, then Dynamo restarts
    it (no compilation_metrics of its own) and attempt 1 logs both lookups. The note said "[2/1] logged no FX graph
    cache lookup (torch logs one once Inductor has compiled the graph)", as of a compile that failed in Inductor: the
    id reads as the compilation, whose attempt 1 did look it up."""
    text = gzip.open(cuda211("compiled_optimizer.log.gz"), "rt").read()
    lookups = re.findall(r'\{"artifact": \{"name": "(\w+_cache_\w+)", "encoding": "json"\}, "frame_id": 2, '
                         r'"frame_compile_id": 1, "attempt": (\d)', text)
    assert lookups == [("aotautograd_cache_miss", "0"), ("aotautograd_cache_miss", "1"), ("fx_graph_cache_miss", "1")]
    # [2/1]'s one compilation_metrics is attempt 1's, with the restart's reason (TensorifyScalarRestartAnalysis).
    [metrics] = [line for line in text.splitlines() if '"compilation_metrics": {"compile_id": "2/1",' in line]
    assert '"frame_id": 2, "frame_compile_id": 1, "attempt": 1' in metrics and "TensorifyScalarRestartAnalysis" in metrics
    with read_trace(str(cuda211("compiled_optimizer.log.gz"))) as trace:
        found = insights(trace).caches
    assert found.fx_unlogged == ["[2/1]"] and found.fx_unlogged_restarted == {"[2/1]": "[2/1_1]"}
    assert found.overall_text.endswith(
        "; [2/1]'s first attempt, which Dynamo restarted, missed the AOTAutograd cache, but nothing it compiled was kept (no graph "
        "compiled anew: [2/1]'s second attempt compiled the frame again), and logged no FX graph cache lookup: Dynamo restarted it "
        "before Inductor had compiled its graph")
    assert "torch logs one once Inductor has compiled the graph" not in found.overall_text


def test_a_restarted_attempts_miss_is_not_counted_as_compiled_anew():
    """compiled_optimizer.log (CUDA, torch 2.11): of its 7 aotautograd_cache_miss records, one is [2/1]'s attempt 0,
    which Dynamo restarted (attempt 1 looked the cache up again and compiled the frame): that miss compiled nothing
    that was kept. The verdict counts the lookups of the compiles that were kept, and names the attempt apart. (No
    log here has a restarted attempt that logged an FX graph cache miss: torch logs it once Inductor has compiled.)"""
    text = gzip.open(cuda211("compiled_optimizer.log.gz"), "rt").read()
    lookups = re.findall(r'\{"artifact": \{"name": "(\w+_cache_\w+)", "encoding": "json"\}, "frame_id": (\d+), '
                         r'"frame_compile_id": (\d+), "attempt": (\d)', text)
    restarted = {(f, c) for _, f, c, attempt in lookups if attempt != "0"}  # compilations with an attempt 1
    assert restarted == {("2", "1")}
    by_attempt = Counter((name, (f, c) in restarted and attempt == "0") for name, f, c, attempt in lookups)
    assert by_attempt == {("aotautograd_cache_miss", False): 6, ("aotautograd_cache_miss", True): 1,
                          ("fx_graph_cache_miss", False): 6}
    with read_trace(str(cuda211("compiled_optimizer.log.gz"))) as trace:
        found = insights(trace).caches
    assert found.counts == {"aotautograd_cache": {"miss": 7}, "fx_graph_cache": {"miss": 6}}  # as torch logged them
    assert found.restarted_misses == {"[2/1]": "[2/1_1]"}
    assert found.kept_counts == {"aotautograd_cache": {"miss": 6}, "fx_graph_cache": {"miss": 6}}
    assert found.overall == "cold"
    assert "[2/1]'s first attempt, which Dynamo restarted, missed the AOTAutograd cache, but nothing it compiled was kept (no graph " \
           "compiled anew: [2/1]'s second attempt compiled the frame again)" in found.overall_text
    assert found.to_json()["restarted_misses"] == {"[2/1]": "[2/1_1]"}


def test_compiles_that_failed_among_others_are_said_apart_from_those_compiled_anew():
    # No log here has a failed compile beside one that compiled (compile_error_* and diff_fail have one compile
    # each): the verdict's wording for that, over the analysis' own fields.
    miss, hit = CacheEvent("fx_graph_cache", "miss"), CacheEvent("fx_graph_cache", "hit")
    cold = Caches(compiles=[CompileCache("[0/0]", [miss]), CompileCache("[0/1]", [miss])],
                  counts={"fx_graph_cache": {"miss": 2}}, failed=["[0/1]"])
    assert cold.overall_text == ("every cache lookup missed, so torch compiled everything anew but [0/1], which failed "
                                 "(a first run, or an empty cache)")
    mixed = Caches(compiles=[CompileCache("[0/0]", [hit]), CompileCache("[0/1]", [miss])],
                   counts={"fx_graph_cache": {"hit": 1, "miss": 1}}, failed=["[0/1]"])
    assert mixed.overall_text == ("some cache lookups hit (torch reused an earlier run's output), others missed "
                                  "(compiled anew, but [0/1] failed)")

def _fail_types(text: str) -> dict[str, str | None]:
    """compile id -> the fail_type of its compilation_metrics records (the last one), as the raw log has them."""
    found: dict[str, str | None] = {}
    for cid, fail in re.findall(r'"compilation_metrics": \{"compile_id": "([^"]+)".*?"fail_type": (null|"[^"]*")', text):
        found[f"[{cid}]"] = None if fail == "null" else fail.strip('"')
    return found


def test_the_compiles_whose_code_the_index_links_are_the_failed_and_the_crashed():
    import compilescope

    # compile_error_raises: both compiles failed (fail_type Unsupported for 0/0, BackendCompilerFailed for 1/0).
    log = torch213("compile_error_raises.log")
    fails = _fail_types(log.read_text())
    with compilescope.analyze(log) as results:
        assert sorted(str(e.compile_id) for e in results.code_linked_compiles) == sorted(c for c, f in fails.items() if f)
        assert results.crash_records == set()
    assert sorted(c for c, f in fails.items() if f) == ["[0/0]", "[1/0]"]
    # native_crash: [0/0] compiled (fail_type null) and its generated code was running when the process died
    # (native_crash.py: the custom op reads address 0 on the second call); run appended one compilescope_crash record.
    log = torch213("native_crash.log.gz")
    with gzip.open(log, "rt", encoding="utf-8") as f:
        text = f.read()
    assert _fail_types(text) == {"[0/0]": None} and text.count('"compilescope_crash"') == 1
    with compilescope.analyze(log) as results:
        assert [str(e.compile_id) for e in results.code_linked_compiles] == ["[0/0]"]
        outside = results.trace.compiles[None]
        records = {a.number for a in outside.artifacts if a.name.startswith("compilescope_crash")}
        assert len(records) == 1 and results.crash_records == records


def test_a_recompiled_frame_is_named_by_its_file_and_first_line():
    # recompiles.py: g and h recompiled; their compilation_metrics name co_filename .../recompiles.py and
    # co_firstlineno 24 and 28 (the program's `def g` and `def h`).
    text = torch213("recompiles.log").read_text()
    first = dict(re.findall(r'"co_name": "(\w+)", "co_filename": "[^"]*/recompiles\.py", "co_firstlineno": (\d+)', text))
    assert first == {"g": "24", "h": "28"}
    frames = insights_of("recompiles").recompiles.frames
    assert {fr.name: fr.short for fr in frames} == {name: f"recompiles.py:{line}" for name, line in first.items()}


def test_a_cache_that_served_every_kept_compile_is_warm_though_a_restarted_attempt_missed():
    # No log here has a restarted attempt's miss beside hits: the verdict over the analysis' own fields.
    miss, hit = CacheEvent("aotautograd_cache", "miss"), CacheEvent("aotautograd_cache", "hit")
    served = Caches(compiles=[CompileCache("[0/0]", [miss], label="[0/0] first try, restarted"),
                              CompileCache("[0/0_1]", [hit], label="[0/0]")],
                    counts={"aotautograd_cache": {"miss": 1, "hit": 1}}, restarted_misses={"[0/0]": "[0/0_1]"})
    assert served.overall == "warm"
    assert served.overall_text == (
        "every cache lookup hit, so torch reused what an earlier run had compiled; [0/0]'s first attempt, which Dynamo restarted, missed "
        "the AOTAutograd cache, but nothing it compiled was kept (no graph compiled anew: [0/0]'s second attempt compiled the frame "
        "again)")


def test_a_cache_row_given_no_label_is_named_by_its_compilation():
    """CompileCache.label defaulted to "": a row built without one (or read from a save without one) rendered as an
    empty link, `<a href="#[0/0]"></a>`, in the caches table and as nothing in the terminal's. It is named by its
    compilation instead, as the rows labelled by the analysis are."""
    from compilescope.model.codec import decode, encode, classes_of

    rows = [CompileCache("[0/0]", []), CompileCache("[1/0_1]", [CacheEvent("fx_graph_cache", "hit")]),
            CompileCache("[2/0]", [], label="[2/0] first try, restarted")]
    assert [c.label for c in rows] == ["[0/0]", "[1/0]", "[2/0] first try, restarted"]
    saved = encode(rows[1])
    saved["label"] = ""
    assert decode(saved, classes_of(["compilescope.analyses.caches"])).label == "[1/0]"
    assert Caches(compiles=rows).label_of() == {"[0/0]": "[0/0]", "[1/0_1]": "[1/0]", "[2/0]": "[2/0] first try, restarted"}

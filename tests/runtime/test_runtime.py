"""Runtime: a torch.profiler trace joined to kernels, graphs and user lines (issue 18).

The GPU pair is real (torch 2.11 on an H100, ../shared); the CPU pairs are recorded
here with torch 2.13 by capture(profile=True). Expected values come from the
profile's own events, read here with json, not from the code under test.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest

import compilescope
from compilescope.analyses.analyze import analyze
from compilescope.analyses.results import Results
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.analyses.runtime.analysis import analyze_runtime
from compilescope.ingest.profile import read_profile

from ..conftest import REPO, cuda211, report, run_cli, skip_or_fail, torch213

GPU_PAIR = REPO.parent / "shared" / "traces" / "gpu-torch211" / "profile_compiled"


def _gpu_pair() -> tuple[Path, Path]:
    if not GPU_PAIR.is_dir():
        skip_or_fail("../shared/traces/gpu-torch211 not available")
    return next(GPU_PAIR.glob("*.log")), GPU_PAIR / "profile_compiled.json"


def _runtime(log: Path, *profiles: Path):
    with compilescope.load(log) as trace:
        return analyze_runtime(trace, analyze_provenance(trace), [read_profile(str(p)) for p in profiles])


def _raw_events(profile: Path) -> list[dict]:
    opener = gzip.open if profile.suffix == ".gz" else open
    with opener(profile, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def test_gpu_pair_every_triton_kernel_to_its_compile_id_and_user_lines():
    log, profile = _gpu_pair()
    p = _runtime(log, profile).profiles[0]
    raw = _raw_events(profile)
    gpu = [e for e in raw if e.get("cat") == "kernel"]
    triton = {e["name"] for e in gpu if e["name"].startswith("triton_")}
    rows = {k.name: k for k in p.kernels}
    assert triton and p.timeline == "gpu" and p.matched and not p.notes
    for name in triton:
        row = rows[name]
        assert row.kind == "inductor" and str(row.compile_id) == "[0/0]"
        assert [u.location for u in row.user_lines] and all(u.file.endswith("profile_compiled.py") for u in row.user_lines)
        assert row.total_us == pytest.approx(sum(e["dur"] for e in gpu if e["name"] == name))
        assert row.calls == sum(1 for e in gpu if e["name"] == name)
        assert row.code_artifact is not None and row.code_line  # links to its definition in the output code
    gemms = [e for e in gpu if "gemm" in e["name"]]
    gemm_rows = [k for k in p.kernels if "gemm" in k.name]
    assert gemms and gemm_rows
    for row in gemm_rows:  # cuBLAS: through aten::mm to the graph that called it
        assert row.kind == "extern" and row.op == "aten::mm" and str(row.compile_id) == "[0/0]"
        assert row.graph == "fvdhvecy3z722inizg4ceqpxirxc7glohmsfx5dbtx6zotk3eqe2"
    assert sum(r.total_us for r in gemm_rows) == pytest.approx(sum(e["dur"] for e in gemms))
    # The total: the GPU's wall span (one stream, kernels do not overlap); the shares add up to it.
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    assert p.total_us == pytest.approx(span, rel=1e-6)
    assert sum(k.share for k in p.kernels) == pytest.approx(1.0, abs=0.005)
    assert sum(g.share for g in p.graphs) == pytest.approx(1.0, abs=0.005)
    (graph,) = [g for g in p.graphs if g.key is not None]
    assert str(graph.compile_id) == "[0/0]" and graph.calls == 3


def test_gpu_pair_idle_time_is_no_graph(capsys):
    """profile_compiled.json: three calls of the compiled model, every kernel launched by [0/0]'s graph. The time
    outside it is the GPU's idle time between kernels only, which "by graph" called "no compiled graph"."""
    log, profile = _gpu_pair()
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in _raw_events(profile) if e.get("cat") == "kernel")
    span = gpu[-1][1] - gpu[0][0]
    idle = span - sum(end - start for start, end in gpu)  # one stream: no kernel overlaps another
    p = _runtime(log, profile).profiles[0]
    graph, waiting = p.graphs
    assert (str(graph.compile_id), graph.outside_label) == ("[0/0]", None)
    assert (waiting.idle, waiting.outside_label, waiting.total_us) == (True, "GPU idle", pytest.approx(idle))
    assert graph.total_us + waiting.total_us == pytest.approx(span)
    assert run_cli("summary", log, "--profile", profile) == 0
    out = capsys.readouterr().out
    assert f"by graph: [0/0] {1 - idle / span:.1%} (3 calls), GPU idle {idle / span:.1%}\n" in out
    assert "no compiled graph" not in out.split("by graph")[1]


def test_gpu_pair_summary_json_runtime_section(capsys):
    log, profile = _gpu_pair()
    assert run_cli("summary", log, "--json", "--profile", profile) == 0
    doc = json.loads(capsys.readouterr().out)
    (p,) = doc["runtime"]["profiles"]
    assert {"name", "compile_id", "calls", "total_us", "share", "user_lines"} <= set(p["kernels"][0])
    assert {"file", "line", "total_us", "share"} <= set(p["user_lines"][0])
    assert sum(k["share"] for k in p["kernels"]) == pytest.approx(1.0, abs=0.005)
    assert any(f["section"] == "runtime" for f in doc["findings"])
    assert run_cli("summary", log, "--json") == 0
    assert json.loads(capsys.readouterr().out)["runtime"] is None


def test_profile_from_another_run_gives_one_clear_line():
    _, profile = _gpu_pair()
    p = _runtime(torch213("inductor_provenance.log") if torch213("inductor_provenance.log").exists()
                 else next(torch213("").glob("*.log")), profile).profiles[0]
    assert not p.matched and "from another run" in p.notes[0]


def test_a_profile_from_another_run_is_not_charged_to_this_logs_compiles():
    # graph_breaks.log has a [0/0] too, and the profile's compiled region is named "0/0": a name, not the same graph.
    _, profile = _gpu_pair()
    p = _runtime(torch213("graph_breaks.log"), profile).profiles[0]
    assert not p.matched
    assert any(r.kind == "inductor" for r in p.kernels) and any(g.key for g in p.graphs)
    assert [r.name for r in p.kernels if r.compile_id is not None] == []
    assert [g.key for g in p.graphs if g.compile_id is not None] == []


def test_a_profile_of_another_program_sharing_one_kernel_name_is_not_joined(tmp_path, capsys):
    """profile_compiled.json against capture_profile's log (another program, another machine): its first layer norm
    has the same generic name, nothing else of it is in the log."""
    _, profile = _gpu_pair()
    log = cuda211("capture_profile.log.gz")
    with gzip.open(log, "rt") as f:
        text = f.read()
    raw = _raw_events(profile)
    triton = {e["name"] for e in raw if e.get("cat") == "kernel" and e["name"].startswith("triton_")}
    keys = {e["name"].split()[3] for e in raw if e["name"].startswith("## Call CompiledFxGraph ")}
    assert len([n for n in triton if n in text]) == 1 and len(triton) == 5 and keys and not any(k in text for k in keys)
    p = _runtime(log, profile).profiles[0]
    assert not p.matched and p.other_run and p.notes[0].startswith("this profile is from another run")
    assert all(k.compile_id is None and not k.user_lines for k in p.kernels) and not p.lines
    # The one line is the reason it is not joined, wherever that note is among the others.
    from compilescope.analyses.runtime import Runtime
    from compilescope.analyses.runtime.findings import runtime_finding
    from compilescope.render.terminal_runtime import runtime_renderables

    reason = p.notes[0]
    p.notes.insert(0, "read stopped early (a note of its own)")
    assert p.not_joined == reason and runtime_finding(p)[1] == reason
    line = str(runtime_renderables(Runtime([p]))[0])
    assert reason in line and "read stopped" not in line
    assert run_cli("summary", log, "--profile", profile) == 0
    out = capsys.readouterr().out
    runtime = out[out.index("Runtime ·"):]
    assert "another run" in runtime and "triton_" not in runtime and "share" not in runtime  # one line, no table
    report(log, tmp_path / "out", "--profile", profile)
    page = (tmp_path / "out" / "runtime.html").read_text()
    assert "another run" in page and "<table" not in page


def test_truncated_and_corrupt_profiles_are_read_as_far_as_they_go(tmp_path):
    log, profile = _gpu_pair()
    data = profile.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    read = read_profile(str(cut))
    assert read.stopped and 0 < len(read.events) < len(read_profile(str(profile)).events)
    assert "read stopped early" in read.notes[0]
    p = _runtime(log, cut).profiles[0]
    assert p.notes[0].startswith("read stopped early") and sum(k.share for k in p.kernels) == pytest.approx(1.0)
    gz = tmp_path / "cut.json.gz"
    gz.write_bytes(gzip.compress(data)[:-2000])
    assert read_profile(str(gz)).stopped and read_profile(str(gz)).events
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": 3}, {"ph": "X", "name": "a", "ts": 1, "dur": -1}, 7,'
                   ' {"ph": "X", "name": "ok", "cat": "cpu_op", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}')
    read = read_profile(str(bad))
    assert [e.name for e in read.events] == ["ok"] and sum(read.skipped.values()) == 3


def test_a_cut_profile_is_not_decoded_whole_a_second_time(tmp_path, monkeypatch):
    """orjson refuses a cut file at its end; the lenient whole-file decode (up to 1 GB) cannot get further, so only
    the event-by-event reader reads it. A file valid but for NaN is still read whole, by the lenient decode."""
    import compilescope.ingest.profile as ingest_profile

    whole_decodes = []

    class Counting(json.JSONDecoder):
        def decode(self, s, *args, **kwargs):
            whole_decodes.append(len(s))
            return super().decode(s, *args, **kwargs)

    monkeypatch.setattr(ingest_profile, "_LENIENT", Counting(parse_int=ingest_profile._bounded_int))
    _, profile = _gpu_pair()
    data = profile.read_bytes()
    n_events = len(_raw_events(profile))
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    read = read_profile(str(cut))
    assert read.stopped and 0 < len(read.events) < n_events and whole_decodes == []
    doc = json.loads(data)
    timed = next(e for e in doc["traceEvents"] if e.get("ph") == "X")
    timed.setdefault("args", {})["nan"] = float("nan")
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(doc))  # NaN, as torch's json.dump writes it
    read = read_profile(str(nan))
    assert read.stopped is None and len(read.events) == n_events and len(whole_decodes) == 1
    nan_cut = tmp_path / "nan_cut.json"
    nan_cut.write_bytes(nan.read_bytes()[: len(data) // 2])
    read = read_profile(str(nan_cut))
    assert read.stopped and 0 < len(read.events) < n_events and len(whole_decodes) == 1


def test_a_truncated_profile_says_its_numbers_are_of_the_part_read(tmp_path):
    """profile_compiled.json's first half, gzipped and cut: its GPU time is a part of the whole's, and the
    headline (the Insights line, the terminal's and the page's) says so, not only a note below it."""
    from compilescope.analyses.runtime.findings import runtime_finding

    log, profile = _gpu_pair()
    data = profile.read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(data[: len(data) // 2]))
    whole = _runtime(log, profile).profiles[0]
    p = _runtime(log, cut).profiles[0]
    assert p.stopped and p.timeline == "gpu" and p.total_us < whole.total_us
    title, detail = runtime_finding(p)
    assert title.endswith("of GPU time in the part read") and detail.startswith("read stopped early (")
    assert "part read" not in runtime_finding(whole)[0]
    report(log, tmp_path / "out", "--profile", cut)
    page = (tmp_path / "out" / "runtime.html").read_text()
    assert "of GPU time in the part read</h2>" in page


def test_not_a_profile_is_one_error_line(tmp_path, capsys):
    log, _ = _gpu_pair()
    other = tmp_path / "x.json"
    other.write_text('{"a": 1}')
    assert run_cli("summary", log, "--profile", other) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a torch.profiler Chrome trace" in err[0]
    assert run_cli("summary", log, "--profile", tmp_path / "missing.json") != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("compilescope: error: cannot read profile")


def test_a_profile_with_no_timed_events_is_one_error_line(tmp_path, capsys):
    """A profile of nothing (the real launch-bound profile's metadata and the profiler's own span, its events
    dropped; or no events at all) is said in one line: a report would explain 0 µs as an eager run of 0 threads."""
    log, _ = _gpu_pair()
    with gzip.open(cuda211("profile_launch_bound.profile.json.gz"), "rt") as f:
        doc = json.load(f)
    kept = [e for e in doc["traceEvents"] if e.get("ph") != "X" or e.get("cat") in ("Trace", "overhead")]
    assert kept and len(kept) < len(doc["traceEvents"])
    metadata_only = tmp_path / "metadata.json"
    metadata_only.write_text(json.dumps(dict(doc, traceEvents=kept)))
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    for profile in (metadata_only, empty):
        assert run_cli("summary", log, "--profile", profile) == 2
        captured = capsys.readouterr()
        err = captured.err.strip().splitlines()
        assert len(err) == 1 and "no timed events" in err[0] and str(profile.name) in err[0]
        assert "Runtime" not in captured.out


def test_hostile_names_are_escaped_and_work_is_bounded(tmp_path):
    log, _ = _gpu_pair()
    hostile = tmp_path / "hostile.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": "<script>alert(1)</script>", "ts": i, "dur": 0.5, "pid": 1, "tid": 1}
              for i in range(50)]
    events.append({"ph": "X", "cat": "user_annotation", "name": "## Call CompiledFxGraph <img src=x> ##", "ts": 100,
                   "dur": 5, "pid": 1, "tid": 1})
    hostile.write_text(json.dumps({"traceEvents": events}))
    assert len(read_profile(str(hostile), max_events=10).events) == 10
    assert "more than 10" in read_profile(str(hostile), max_events=10).stopped
    out = tmp_path / "out"
    report(log, out, "--profile", hostile)
    html = (out / "runtime.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html


def test_profile_with_several_logs_is_one_error_line(tmp_path, capsys):
    log, profile = _gpu_pair()
    assert run_cli(log, log, "--profile", profile, "-o", tmp_path / "o", "--no-browser") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["compilescope: error: --profile goes with one log (the log of the process that was profiled)"]


def test_results_with_a_profile_round_trip_exactly():
    """The runtime analysis is part of the one saved value (--save / --load keep it)."""
    log, profile = _gpu_pair()
    with compilescope.load(log) as trace:
        results = analyze(trace, [read_profile(str(profile))])
        assert results.runtime.profiles and results.insights is not None and results.insights.runtime
        saved = orjson.dumps(results.to_json())
        with Results.from_json(orjson.loads(saved)) as loaded:
            assert loaded.runtime == results.runtime
            assert loaded == results


def test_a_kernels_user_lines_by_file_and_the_share_of_the_rows_left_out():
    """The SDPA kernel of hf_gpt2_profile came from lines of four files (the attention call, GPT-2's attention and
    the mask it built): the summary names each file once, its lines in the order met, and only of the lines it
    shows. The rows add up to the total, so what a table of n rows leaves out is the rest of it."""
    p = _runtime(cuda211("hf_gpt2_profile.log.gz"), cuda211("hf_gpt2_profile.profile.json.gz")).profiles[0]
    row = next(k for k in p.kernels if k.name.startswith("fmha_cutlassF") and len({u.file for u in k.user_lines}) > 2)
    grouped = row.lines_by_file()
    names = [name for name, _ in grouped]
    assert len(names) == len(set(names)) == len({u.file for u in row.user_lines}) > 2
    assert sorted((name, n) for name, lines in grouped for n in lines) == sorted(
        (u.file.rsplit("/", 1)[-1], u.line) for u in row.user_lines)
    assert names[0] == row.user_lines[0].file.rsplit("/", 1)[-1] == "sdpa_attention.py"
    assert sum(len(lines) for _, lines in row.lines_by_file(first=4)) == 4
    assert p.share_after(0) == pytest.approx(1.0) and p.share_after(len(p.kernels)) == 0
    assert p.share_after(10) == pytest.approx(1.0 - sum(k.share for k in p.kernels[:10])) and p.share_after(10) > 0


def test_the_tf32_warning_says_what_share_of_the_profiled_gpu_time_its_matmuls_took():
    """profile_compiled: four Linear blocks in float32 on an H100, TF32 off (torch warned, output.txt beside the log).
    The profile's kernels launched by aten::mm (the raw events' "External id" joins a kernel to its cpu_op) are the
    cuBLAS sgemms `sm80_xmma_gemm_f32f32_f32f32_f32_...`: most of the GPU time, the time TF32 would shorten. The
    warning said only that TF32 was off, and the profile's line only its top kernel."""
    log, profile = _gpu_pair()
    raw = _raw_events(profile)
    op_of = {e["args"]["External id"]: e["name"] for e in raw if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})}
    gpu = [e for e in raw if e.get("cat") == "kernel"]
    matmul_us = sum(e["dur"] for e in gpu if op_of.get(e["args"].get("External id")) == "aten::mm")
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    assert matmul_us / span > 0.9  # 32.6 ms of 34.4 ms
    share = f"{matmul_us / span:.0%}"
    with compilescope.load(log) as trace:
        found = insights(trace, analyze_runtime(trace, analyze_provenance(trace), [read_profile(str(profile))]))
    (tf32,) = [f for f in found.findings if f.title == "float32 matmuls run without TF32 tensor cores"]
    assert tf32.severity == "warning"
    assert tf32.detail.startswith(f"in profile_compiled.json the matmuls' kernels took {share} of the GPU time (")
    assert "aten::mm); torch.set_float32_matmul_precision('high')" in tf32.detail
    # Without the profile: the warning's advice alone
    with compilescope.load(log) as trace:
        (plain,) = [f for f in insights(trace).findings if f.title == tf32.title]
    assert plain.detail.startswith("torch.set_float32_matmul_precision('high')")


def test_the_profile_alone_says_float32_matmuls_run_without_tf32(tmp_path):
    """profile_compiled's log without the output.txt beside it (torch's TF32 warning goes to stderr only, which a user
    seldom keeps): its profile says enough by itself. The raw profile's deviceProperties say an H100 (computeMajor 9:
    TF32 tensor cores from 8, Ampere, on) and 95% of its GPU time is cuBLAS's f32f32 xmma GEMMs (float32 in, float32
    math); without the output.txt, compilescope said nothing of TF32."""
    log, profile = _gpu_pair()
    with open(profile) as f:
        doc = json.load(f)
    assert [d["computeMajor"] for d in doc["deviceProperties"]] == [9]
    gpu = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    f32_us = sum(e["dur"] for e in gpu if e["name"].startswith("sm80_xmma_gemm_f32f32_f32f32_") and "cublas" in e["name"])
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    assert f32_us / span > 0.9
    alone = tmp_path / log.name
    alone.write_bytes(log.read_bytes())
    with compilescope.load(alone) as trace:
        found = insights(trace, analyze_runtime(trace, analyze_provenance(trace), [read_profile(str(profile))]))
    (tf32,) = [f for f in found.findings if f.title.startswith("float32 matmuls run without TF32")]
    assert tf32.severity == "warning"
    assert tf32.detail.startswith(f"in profile_compiled.json cuBLAS float32 GEMM kernels took {f32_us / span:.0%} of "
                                  "the GPU time (") and "compute capability 9.0" in tf32.detail
    assert "torch.set_float32_matmul_precision('high')" in tf32.detail
    # With the warning recorded: one finding, the warning's (as before)
    with compilescope.load(log) as trace:
        both = insights(trace, analyze_runtime(trace, analyze_provenance(trace), [read_profile(str(profile))]))
    assert [f.detail[:40] for f in both.findings if f.title.startswith("float32 matmuls run without TF32")] == [
        "in profile_compiled.json the matmuls' ke"]


def test_no_tf32_advice_where_the_profile_gemms_already_use_it():
    """hf_gpt2_profile.py sets torch.set_float32_matmul_precision("high"): its profile's cuBLAS and CUTLASS GEMMs are
    the tf32 ones (no f32f32 xmma kernel), so nothing to advise; profile_launch_bound's float32 GEMMs (no TF32) take
    11% of its GPU time (the rest is idle and Triton), too little to be worth a warning."""
    raw = _raw_events(cuda211("hf_gpt2_profile.profile.json.gz"))
    assert not [e for e in raw if e.get("cat") == "kernel" and "xmma_gemm_f32f32_f32f32" in e["name"]]
    assert any(e.get("cat") == "kernel" and "tf32" in e["name"] for e in raw)
    raw = _raw_events(cuda211("profile_launch_bound.profile.json.gz"))
    gpu = [e for e in raw if e.get("cat") == "kernel"]
    f32_us = sum(e["dur"] for e in gpu if "xmma_gemm_f32f32_f32f32" in e["name"])
    assert 0 < f32_us / (max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)) < 0.2
    for name in ("hf_gpt2_profile", "profile_launch_bound"):
        log, profile = cuda211(f"{name}.log.gz"), cuda211(f"{name}.profile.json.gz")
        with compilescope.load(log) as trace:
            found = insights(trace, analyze_runtime(trace, analyze_provenance(trace), [read_profile(str(profile))]))
        assert not [f for f in found.findings if "TF32" in f.title], name


def test_a_library_kernel_is_named_by_what_it_is_and_keeps_its_name(capsys):
    """profile_compiled.json's top kernel, 95% of its GPU time, is cuBLAS's
    'sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_..._cublas' (float32 in and computed in float32: profile_compiled.py does
    not turn TF32 on): the headline said that name, cut, and not what it is."""
    log, profile = _gpu_pair()
    gpu = [e for e in _raw_events(profile) if e.get("cat") == "kernel"]
    by_name: dict[str, float] = {}
    for e in gpu:
        by_name[e["name"]] = by_name.get(e["name"], 0.0) + e["dur"]
    top = max(by_name, key=by_name.__getitem__)
    assert top.startswith("sm80_xmma_gemm_f32f32_f32f32_f32_") and top.endswith("_cublas")
    assert "set_float32_matmul_precision" not in (profile.parent / "script.py").read_text()
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    assert run_cli("summary", log, "--json", "--profile", profile) == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["runtime"]["profiles"][0]["kernels"][0]
    assert (first["name"], first["library"], first["op"]) == (top, "cuBLAS float32 GEMM", "aten::mm")
    [headline] = [f for f in doc["findings"] if f["title"].startswith("profile profile_compiled.json")]
    assert f"top kernel cuBLAS float32 GEMM via aten::mm: {by_name[top] / span:.0%} (profile_compiled.py:12)" in headline["detail"]
    assert all(not k["library"] for k in doc["runtime"]["profiles"][0]["kernels"] if k["kind"] == "inductor")


def test_library_kernels_of_the_real_profiles_by_what_they_are():
    """Every kernel name of the real H100/H200 profiles that a library launched, by what it is; the hf_gpt2 program
    turns TF32 on (torch.set_float32_matmul_precision("high")), and its GEMMs are the TF32 ones."""
    from compilescope.analyses.kernel_names import library_kernel

    names: dict[str, set[str]] = {}
    for name in ("hf_gpt2_profile", "profile_cudagraphs", "capture_profile"):
        for e in _raw_events(cuda211(f"{name}.profile.json.gz")):
            if e.get("cat") == "kernel" and not e["name"].startswith("triton_"):
                names.setdefault(name, set()).add(e["name"])
    assert 'set_float32_matmul_precision("high")' in (REPO / "tests/data/cuda_torch211/programs/hf_gpt2_profile.py").read_text()
    said = {(program, library_kernel(n)) for program, found in names.items() for n in found if library_kernel(n)}
    assert said == {
        ("hf_gpt2_profile", "cuBLAS TF32 GEMM"), ("hf_gpt2_profile", "CUTLASS TF32 GEMM on tensor cores"),
        ("hf_gpt2_profile", "cuBLAS split-K reduction (sums a split GEMM's parts)"),
        ("hf_gpt2_profile", "memory-efficient attention (SDPA), forward"),
        ("profile_cudagraphs", "cuBLAS float32 GEMM"), ("profile_cudagraphs", "cuBLAS float32 GEMM, split-K"),
        ("profile_cudagraphs", "CUTLASS float32 GEMM"),
        ("profile_cudagraphs", "cuBLAS split-K reduction (sums a split GEMM's parts)"),
        ("capture_profile", "cuBLAS float32 GEMM"), ("capture_profile", "cuBLAS float32 GEMM, split-K"),
        ("capture_profile", "CUTLASS float32 GEMM"),
        ("capture_profile", "cuBLAS split-K reduction (sums a split GEMM's parts)"),
        ("capture_profile", "memory-efficient attention (SDPA), forward"),
        ("capture_profile", "memory-efficient attention (SDPA), backward")}
    # ATen's own kernels (at::native), copies and memsets are named by their op or themselves: no library's
    assert not [n for found in names.values() for n in found if "at::native" in n and library_kernel(n)]


@pytest.mark.parametrize("name,said", [
    # a float32-accumulating tensor-core GEMM whose name gives 16-bit inputs is no TF32 one (bf16/fp16 autocast runs)
    ("cutlass_80_tensorop_s16816gemm_bf16_128x256_32x3_nn_align8", "CUTLASS bfloat16 GEMM on tensor cores"),
    ("cutlass_75_tensorop_s1688gemm_f16_256x128_32x2_nt_align8", "CUTLASS float16 GEMM on tensor cores"),
    ("cutlass_80_tensorop_h16816gemm_256x128_32x3_nn_align8", "CUTLASS float16 GEMM on tensor cores"),
    # the 1688 float32 shape is TF32 from sm80 on (the real hf_gpt2 profile's), not before: Turing has no TF32
    ("cutlass_80_tensorop_s1688gemm_128x128_16x3_tn_align4", "CUTLASS TF32 GEMM on tensor cores"),
    ("cutlass_75_tensorop_s1688gemm_128x128_32x2_tn_align4", "CUTLASS GEMM on tensor cores"),
])
def test_cutlass_gemms_are_typed_by_their_inputs_not_their_accumulator(name, said):
    from compilescope.analyses.kernel_names import library_kernel

    assert library_kernel(name) == said


def test_the_gpu_idle_table_has_no_empty_one_call_column(tmp_path, capsys):
    """The H100 profile_compiled's GPU idle splits into Dynamo around the calls and no op, neither mostly one call's:
    the summary's table had a 'one call' column, and the page an 'of it in one call' one, empty on every row."""
    log, profile = _gpu_pair()
    p = _runtime(log, profile).profiles[0]
    assert p.idle_rows and all(c.one_call_us is None for c, _ in p.idle_rows)
    assert not p.idle_one_call_shown
    assert run_cli("summary", log, "--profile", profile) == 0
    out = capsys.readouterr().out
    [header] = [line for line in out.splitlines() if "the CPU was in" in line]
    assert header.split() == ["share", "time", "the", "CPU", "was", "in"]
    report(log, tmp_path / "out", "--profile", profile)
    page = (tmp_path / "out" / "runtime.html").read_text()
    assert "of it in one call" not in page and "<th>the CPU was in</th>" in page

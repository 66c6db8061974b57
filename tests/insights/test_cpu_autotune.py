"""CPU inference with mode="max-autotune" and freezing (torch 2.13, programs/cpu_autotune.py): where the compile time
went (g++ compiling each C++ GEMM candidate inside its search), and which of the user's layers each search was for."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from compilescope.analyses.autotuning import autotuning
from compilescope.analyses.compile_time import compile_times
from compilescope.analyses.freezing import freezing
from compilescope.analyses.sources.analysis import analyze_sources
from compilescope.ingest.reader import read_trace

from ..conftest import report, run_cli, torch213
from ..tracelog import raw_records

LOG, DEFAULT = "cpu_autotune.log.gz", "cpu_autotune_default.log.gz"
# The program's three linears (cpu_autotune.py): fc1 = Linear(512, 128) on line 32, fc2 = Linear(128, 64) on 33,
# head = Linear(64, 10) on 34; a batch of 32. Freezing packs each weight for MKL (1459233x1, as torch logs the packed
# buffer); the search's third input is the weight as the layer holds it (out x in).
LAYERS = [("32x512, 1459233x1, 128x512", "cpu_autotune.py:32", "h = torch.relu(self.fc1(h))"),
          ("32x128, 1459233x1, 64x128", "cpu_autotune.py:33", "h = torch.relu(self.fc2(h))"),
          ("32x64, 1459233x1, 10x64", "cpu_autotune.py:34", "return self.head(h)")]


def _raw_searches(log) -> tuple[list[tuple[str, float, float]], float]:
    """Each max-autotune search of the raw log: its shape, its seconds (B to E) and the seconds of the compile_file
    events (g++ runs) begun and ended inside it; and the seconds of the precompile steps before them. Read with json
    alone."""
    events = [json.loads(payload) for envelope, payload in raw_records(log) if "chromium_event" in envelope]
    searches, open_search, inside, begun, precompiling, precompiled = [], None, 0.0, None, None, 0.0
    for e in events:
        if e["name"].endswith("_template_precompiling"):
            if e["ph"] == "B":
                precompiling = e
            else:
                precompiled += (e["ts"] - precompiling["ts"]) / 1e6
        elif e["name"].endswith("_template_autotuning"):
            if e["ph"] == "B":
                open_search, inside = e, 0.0
            else:
                searches.append((e["args"]["autotune_shape"], (e["ts"] - open_search["ts"]) / 1e6, inside))
                open_search = None
        elif e["name"] == "compile_file" and open_search is not None:
            if e["ph"] == "B":
                begun = e
            else:
                inside += (e["ts"] - begun["ts"]) / 1e6
    return searches, precompiled


def test_each_search_is_placed_on_the_users_layer():
    """The searches name their op and sizes only (packed_linear 32x512, 1459233x1, 128x512); the post-grad graph's
    call taking inputs of those sizes sits under the `# File:` comment of the layer's line."""
    raw, _ = _raw_searches(torch213(LOG))
    assert [shape for shape, _, _ in raw] == [shape for shape, _, _ in LAYERS]
    with read_trace(str(torch213(LOG))) as trace:
        searches = autotuning(trace).searches
    assert [(s.op, s.shape, s.site.short, s.site.function, s.site.code) for s in searches] == [
        ("packed_linear", shape, line, "forward", code) for shape, line, code in LAYERS]
    with read_trace(str(torch213(DEFAULT))) as trace:
        assert not autotuning(trace)  # the default mode benchmarks nothing


def test_the_candidates_compiled_inside_a_search_are_autotuning_time():
    """Each C++ candidate is compiled by g++ (compile_file) as it is first benchmarked, inside its search: that time
    is the search's (not C++ compile of the model), and said as the part of it spent compiling. Before, the phase
    table charged it to C++ compile and showed autotuning as the few percent left over."""
    raw, precompiled = _raw_searches(torch213(LOG))
    with read_trace(str(torch213(LOG))) as trace:
        at = autotuning(trace)
        [timed] = compile_times(trace).compiles
    assert [s.candidate_compile_seconds for s in at.searches] == pytest.approx([c for _, _, c in raw], abs=1e-6)
    assert all(0 < compiled < seconds for _, seconds, compiled in raw)  # g++ ran inside each search
    assert [s.compile_notes[0] for s in at.searches] == [f"{s.candidate_compile_seconds:.2f} s of it compiling"
                                                         for s in at.searches]
    searched = sum(seconds for _, seconds, _ in raw) + precompiled
    assert at.total_s == pytest.approx(searched, abs=1e-6)
    assert timed.phases["autotune"] == pytest.approx(searched, abs=1e-3)


def test_summary_and_report_name_the_layer_of_each_search(tmp_path, capsys):
    assert run_cli("summary", torch213(LOG)) == 0
    out = capsys.readouterr().out
    table = out[out.index("\nAutotuning ("):out.index("\nWarnings torch printed")]
    for _, line, code in LAYERS:
        assert f"{line} in forward:" in table and code.split()[-1] in table
    report(torch213(LOG), tmp_path / "r")
    html = (tmp_path / "r" / "index.html").read_text()
    searches = html[html.index('<table class="autotune-searches">'):]
    searches = searches[:searches.index("</table>")]
    for _, line, code in LAYERS:
        assert f">{line}</" in searches and f"<code>{code}</code>" in searches


def test_diff_against_the_default_mode_names_each_layer_searched_and_its_winner(capsys):
    assert run_cli("diff", "--json", torch213(DEFAULT), torch213(LOG)) == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    added = [c for c in rank["changes"] if (c["section"], c["kind"]) == ("autotuning", "added")]
    with read_trace(str(torch213(LOG))) as trace:
        winners = [s.best_kernel for s in autotuning(trace).searches]
    assert len(added) == len(LAYERS) == len(winners)
    for change, (shape, line, code), winner in zip(added, LAYERS, winners):
        assert change["title"].startswith(f"max-autotune search for {line} `{code}`, packed_linear {shape} ")
        assert f"only in B, won by {winner} (" in change["title"]


def test_the_source_page_says_on_each_layers_line_what_max_autotune_searched_and_chose(tmp_path):
    """Each search is a note on the line of its layer (sources.json's `autotune`), with a badge of the compile time
    it took; the conv's line (30) had no search (Inductor runs it as an mkldnn call, no template)."""
    with read_trace(str(torch213(LOG))) as trace:
        searches = autotuning(trace).searches
        (f,) = [f for f in analyze_sources(trace).files if f.path.endswith("cpu_autotune.py")]
    placed = {n: [(a["op"], a["shape"], a["best_kernel"]) for a in notes.autotune]
              for n, notes in f.notes.items() if notes.autotune}
    assert placed == {int(line.rsplit(":", 1)[1]): [("packed_linear", shape, s.best_kernel)]
                      for (shape, line, _), s in zip(LAYERS, searches)}
    assert [f.notes[n].autotune_text for n in (32, 33, 34)] == [f"{s.seconds:.2f} s" for s in searches]
    report(torch213(LOG), tmp_path / "r")
    [page] = (tmp_path / "r" / "sources").glob("cpu_autotune.py_*.html")
    text = page.read_text()
    assert text.count('class="b b-autotune"') == 3
    assert ('<li class="n-autotune">max-autotune in <a' in text
            and f'<code>packed_linear</code> 32x512, 1459233x1, 128x512: chose <code>{searches[0].best_kernel}</code>'
            in text)


def _raw_artifacts(log) -> dict[str, str]:
    """Each payload of the raw log whose envelope names it (an artifact, or a graph such as aot_inference_graph), by
    that name: the text torch logged, read without compilescope."""
    found: dict[str, str] = {}
    for envelope, payload in raw_records(log):
        key = next(iter(envelope), None)
        found[envelope["artifact"]["name"] if key == "artifact" else key] = payload
    return found


def test_freezing_is_said_with_what_it_did_and_what_it_costs(capsys):
    """torch._inductor.config.freezing: the AOT graph takes the 8 parameters (ParamAOTInput) and the input, the
    post-grad graph the input alone; each linear's weight is packed for MKL (`_mkl_reorder_linear_weight`, under the
    layer's `# File:` line, taken by mkl._mkl_linear), the conv's reordered for oneDNN. Neither cache stores the
    graph: the AOTAutograd cache refuses a frozen one, the FX graph cache its oneDNN constants."""
    raw = _raw_artifacts(torch213(LOG))
    aot, post_grad = raw["aot_inference_graph"], raw["inductor_post_grad_graph"]
    params = re.findall(r"ParamAOTInput\(target='([^']+)'\)", aot)
    start = post_grad.index("def forward(")
    signature = post_grad[start:post_grad.index("):", start)]
    inputs = re.findall(r"(\w+): \"", signature)
    packed_lines = [int(m) for m in re.findall(r":(\d+) in forward, code: [^\n]*\n\s*\w+: [^\n]*= torch\.ops\.mkl\._mkl_linear\(",
                                               post_grad)]
    reasons = {name: json.loads(raw[name])["cache_bypass_reason"]
               for name in ("aotautograd_cache_bypass", "fx_graph_cache_bypass")}
    assert (len(params), inputs, packed_lines) == (8, ["arg8_1"], [32, 33, 34])
    with read_trace(str(torch213(LOG))) as trace:
        [frozen] = freezing(trace).compiles
    assert (frozen.compile_id, frozen.inputs, frozen.folded, frozen.parameters) == ("[0/0]", inputs, 8, params)
    linears = [(w.op, w.site.line) for w in frozen.packed if w.how == "linear weight packed for MKL"]
    assert linears == [("mkl._mkl_linear", line) for line in packed_lines]
    assert [w.site.line for w in frozen.packed if w.constant == "_reorder_convolution_weight"] == [30]  # conv, line 30
    metrics = json.loads(next(line for line in gzip.open(torch213(LOG), "rt") if '"compilation_metrics"' in line)
                         .split("] ", 1)[1])["compilation_metrics"]
    assert run_cli("summary", "--json", torch213(LOG)) == 0
    doc = json.loads(capsys.readouterr().out)
    [finding] = [f for f in doc["findings"] if f["title"].startswith("freezing")]
    assert finding["title"] == "freezing folded 8 parameters into constants of [0/0]"
    assert finding["section"] == "caches"
    detail = finding["detail"]
    assert "the compiled graph takes only arg8_1" in detail
    assert "3 linear weights packed for MKL (mkl._mkl_linear at cpu_autotune.py:32, cpu_autotune.py:33, cpu_autotune.py:34)" in detail
    assert (f'no cache stores it (AOTAutograd cache: "{reasons["aotautograd_cache_bypass"]}"; FX graph cache: '
            f'"{reasons["fx_graph_cache_bypass"]}"): every process compiles it from scratch '
            f'({metrics["entire_frame_compile_time_s"]:.1f}') in detail
    assert "a weight changed after compiling is not seen until it is compiled again" in detail
    notes = {r["reason"]: r["note"] for r in doc["caches"]["bypass_reasons"]}
    assert "freezing" in notes[reasons["aotautograd_cache_bypass"]]
    assert "oneDNN" in notes[reasons["fx_graph_cache_bypass"]]


def test_a_cpu_search_names_its_candidates_kinds_not_zero_triton(tmp_path, capsys):
    """autotune_choices_stats: 2 choices, 0 Triton, a C++ template winner (cpp_...): '(0 Triton)' said nothing."""
    raw = _raw_searches(torch213(LOG))[0]
    stats = []
    with gzip.open(torch213(LOG), "rt", encoding="utf-8") as f:
        stats = [json.loads(json.loads("{" + line.strip().rstrip(",") + "}")["autotune_choices_stats"])
                 for line in f if '"autotune_choices_stats"' in line]
    assert len(stats) == len(raw) and all(s["num_triton_choices"] == 0 and s["best_kernel"].startswith("cpp_")
                                          for s in stats)
    assert run_cli("summary", torch213(LOG)) == 0
    out = capsys.readouterr().out
    table = out[out.index("\nAutotuning ("):out.index("\nWarnings torch printed")]
    assert "0 Triton" not in table and " ".join(table.split()).count(
        "of 2 candidates (C++ GEMM templates and extern ATen/MKL kernels, no Triton)") == len(stats)
    report(torch213(LOG), tmp_path / "r")
    html = (tmp_path / "r" / "index.html").read_text()
    assert html.count("(C++ GEMM templates and extern ATen/MKL kernels, no Triton)") == len(stats)
    assert "0 Triton" not in html


# A value's device at the end of its type in a graph dump (`"f32[32, 512][512, 1]cpu"`)
RAW_DEVICE = re.compile(r'"[a-z]+\d*\[[^"\]]*\]\[[^"\]]*\]([a-z]+)(?::\d+)?"')


def test_a_cpu_search_an_extern_kernel_won_is_still_said_a_cpu_search(tmp_path):
    """The CPU wording was chosen only where a C++ template (cpp_...) won: a search MKL's extern kernel won said
    '0 Triton' again. The search's records name no device; its compile's post-grad graph types every value on the
    CPU, so a copy of the log whose winners are the extern kernel is still said to have had no Triton candidate."""
    graph = _raw_artifacts(torch213(LOG))["inductor_post_grad_graph"]
    assert set(RAW_DEVICE.findall(graph)) == {"cpu"}
    data = gzip.decompress(torch213(LOG).read_bytes()).decode()
    assert data.count("cpp_CppMicroGemmFP32Vec_") == 3
    extern = tmp_path / "extern_won.log"
    extern.write_text(data.replace("cpp_CppMicroGemmFP32Vec_", "_mkl_linear_"))  # (not a C++ template's name)
    for log, winner in ((torch213(LOG), "cpp_CppMicroGemmFP32Vec_"), (extern, "_mkl_linear_")):
        with read_trace(str(log)) as trace:
            searches = autotuning(trace).searches
        assert [(s.best_kernel, s.device, s.triton_choices) for s in searches] == [
            (f"{winner}{i}", "cpu", 0) for i in range(3)]
        assert {s.candidate_kinds for s in searches} == {"C++ GEMM templates and extern ATen/MKL kernels, no Triton"}


def test_diff_says_where_max_autotunes_extra_compile_time_went(capsys):
    """64 s against 129 s is under diff's 3x: the note says which phases grew, autotuning's searches and the g++
    compiles inside them first."""
    raw, _ = _raw_searches(torch213(LOG))
    with read_trace(str(torch213(DEFAULT))) as trace:
        before = compile_times(trace).compiles[0].phases
    with read_trace(str(torch213(LOG))) as trace:
        after = compile_times(trace).compiles[0].phases
    compiling = sum(c for _, _, c in raw)
    assert run_cli("diff", "--json", torch213(DEFAULT), torch213(LOG)) == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    [note] = [n for n in rank["notes"] if n.startswith("compile time ")]
    grew = sorted(((after[p] - before.get(p, 0.0), p) for p in after), reverse=True)[:2]
    assert [p for _, p in grew] == ["autotune", "kernel_compile"]
    assert (f"went mostly to Autotuning (0 µs → {after['autotune']:.2f} s, {len(raw)} more max-autotune searches, "
            f"{compiling:.2f} s of it compiling candidates) and C++ compile ({before['kernel_compile']:.2f} s → "
            f"{after['kernel_compile']:.2f} s)") in note


def test_check_gates_autotuning_time_naming_the_slowest_search(capsys):
    raw, precompiled = _raw_searches(torch213(LOG))
    total = sum(s for _, s, _ in raw) + precompiled
    slowest_shape, slowest, compiled = max(raw, key=lambda s: s[1])
    line = next(line for shape, line, _ in LAYERS if shape == slowest_shape)
    assert run_cli("check", torch213(LOG), "--max-autotune-seconds", int(total) + 1) == 0
    capsys.readouterr()
    assert run_cli("check", torch213(LOG), "--max-autotune-seconds", 30) == 1
    out = capsys.readouterr().out
    assert out.strip() == (f"max-autotune-seconds: autotuning {total:.2f} s, at most 30.00 s allowed: {line} "
                           f"packed_linear {slowest_shape} took {slowest:.2f} s, {compiled:.2f} s of it compiling "
                           f"candidates, and {len(raw) - 1} more searches")
    assert run_cli("check", torch213(DEFAULT), "--max-autotune-seconds", 0) == 0  # the default mode searches nothing

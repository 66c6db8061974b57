"""What a run ran on (torch, Python, CUDA, Triton, the GPU), as its log says, on real logs:

- tests/data/cuda_torch211/logs/train_break_recompile.log.gz and train_break_recompile_h100.log.gz: the same program
  recorded by `compilescope run` on an H200 and, later, on an H100 (torch 2.11, Python 3.12.3, CUDA 13.0, Triton 3.6.0:
  compilation_metrics and each fx_graph_runnable's "# GPU Hardware Info:" say so);
- tests/data/torch213/logs/provenance.log: torch 2.13 on the CPU ("# torch.cuda.is_available()==False, no GPU info
  collected");
- ../shared peer-tlparse/inputs/autotune_with_compile_id.log: tlparse's own test log, from a machine of 8 GPUs
  ("# NVIDIA PG509-210 : 8"), whose metrics name no torch version: its fx_graph_runnable's header does
  ("# torch version: 2.8.0a0+git87f8139");
- ../shared peer-tlparse/inputs/simple.log: an older log (torch 2.6 nightly) with no versions in its metrics and no
  torch_version record; its fx_graph_runnable says "# torch version: 2.6.0a0+giteece9ec", "# torch cuda version: 12.2"
  and "# NVIDIA H100 : 8", and nothing in it names the Python;
- ../shared gpu-torch211/autotune_cudagraphs/: script.py sets max_autotune_gemm_backends = "TRITON,ATEN", then
  compiles with mode="max-autotune-no-cudagraphs" ([0/0]: its runnable sets max_autotune = True,
  max_autotune_gemm_backends = 'TRITON,ATEN', coordinate_descent_tuning = True) and mode="reduce-overhead" ([0/1]: its
  two runnables set triton.cudagraphs = True beside the backends, and write max_autotune = False,
  coordinate_descent_tuning = False, deterministic = False, benchmark_kernel = False, triton.store_cubin = False: the
  defaults torch restored); compilation_metrics' inductor_config says max_autotune false for both;
- ../shared peer-tlparse/inputs/autotune_with_compile_id.log: its one runnable sets max_autotune,
  coordinate_descent_tuning and triton.cudagraphs True: what mode="max-autotune" sets;
- ../shared peer-tlparse/inputs/multi_rank_runtime/: 7 ranks whose runnables say "# torch version: 2.9.0a0+git2249284"
  on ranks 0-4 and "2.9.0a0+gitd1950d4" on ranks 5 and 6 (grep -c on each rank log).
"""

from __future__ import annotations

import json

from compilescope.analyses.environment import environment
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, run_cli, shared, torch213
from ..gpu_variants import max_autotune_log, with_payload_changed

H200 = cuda211("train_break_recompile.log.gz")
H100 = cuda211("train_break_recompile_h100.log.gz")


def _environment(log):
    with read_trace(str(log)) as trace:
        return environment(trace)


def test_a_gpu_run_names_its_versions_and_its_gpu():
    assert _environment(H200).facts() == [("torch", "2.11.0+cu130"), ("Python", "3.12.3"), ("CUDA", "13.0"),
                                          ("Triton", "3.6.0"), ("GPU", "NVIDIA H200")]
    assert _environment(H100).gpus == {"NVIDIA H100 80GB HBM3": 1}


def test_a_cpu_run_says_it_had_no_gpu_and_a_peer_log_its_eight():
    cpu = _environment(torch213("provenance.log"))
    assert cpu.facts() == [("torch", "2.13.0+cpu"), ("Python", "3.11.7"), ("GPU", "none")]
    assert (cpu.cuda, cpu.triton, cpu.gpus) == (None, None, {})
    peer = _environment(shared("peer-tlparse/inputs/autotune_with_compile_id.log"))
    # (its metrics name no torch and it has no torch_version record: the runnable's header does)
    assert peer.facts() == [("torch", "2.8.0a0+git87f8139"), ("Python", "3.10.15"), ("CUDA", "12.0"),
                            ("Triton", "3.3.0"), ("GPU", "8 × NVIDIA PG509-210")]


def test_an_older_log_names_its_torch_build_from_the_runnable_header(capsys):
    # The first thing oncall asks of a reporter's log: which torch. simple.log says it only in the runnable's header.
    older = _environment(shared("peer-tlparse/inputs/simple.log"))
    assert older.facts() == [("torch", "2.6.0a0+giteece9ec"), ("CUDA", "12.2"), ("GPU", "8 × NVIDIA H100")]
    assert run_cli("summary", shared("peer-tlparse/inputs/simple.log")) == 0
    assert capsys.readouterr().out.splitlines()[1] == "torch 2.6.0a0+giteece9ec · CUDA 12.2 · GPU 8 × NVIDIA H100"


def test_ranks_on_two_torch_builds_differ_first(capsys):
    assert run_cli("summary", "--json", shared("peer-tlparse/inputs/multi_rank_runtime"), "-j", "1") == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["analysis"]["divergences"][0]
    assert (first["kind"], first["title"]) == ("environment", "Ranks ran different versions or GPUs")
    assert [(g["ranks"], g["what"]) for g in first["groups"]] == [
        ([0, 1, 2, 3, 4], "torch 2.9.0a0+git2249284"), ([5, 6], "torch 2.9.0a0+gitd1950d4")]


def test_summary_report_and_json_say_it(tmp_path, capsys):
    assert run_cli("summary", H200) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "torch 2.11.0+cu130 · Python 3.12.3 · CUDA 13.0 · Triton 3.6.0 · GPU NVIDIA H200"
    assert run_cli("summary", "--json", torch213("provenance.log")) == 0
    assert json.loads(capsys.readouterr().out)["environment"] == {
        "torch": "2.13.0+cpu", "python": "3.11.7", "cuda": None, "triton": None, "gpus": {},
        # (both its runnables set trace.provenance_tracking_level = 1; the second's other lines are defaults torch
        # restored: deterministic = False, comprehensive_padding = True, inplace_buffers = True, store_cubin = False)
        "compile_settings": [{"settings": [{"setting": "trace.provenance_tracking_level", "value": "1"}],
                              "compile_ids": ["[0/0]"], "mode": None}],
        "testing_only": []}
    assert run_cli(H200, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert ('<p class="muted" id="environment">torch <span class="mono">2.11.0+cu130</span> · Python '
            '<span class="mono">3.12.3</span> · CUDA <span class="mono">13.0</span> · Triton <span class="mono">3.6.0'
            '</span> · GPU <span class="mono">NVIDIA H200</span></p>') in page


def test_a_gpu_name_from_the_log_is_escaped(tmp_path, capsys):
    # The real H100 max-autotune log with its first fx_graph_runnable's GPU renamed (md5 recomputed): a log is
    # untrusted input, and the name reaches the page.
    log = with_payload_changed(max_autotune_log(), tmp_path / "named.log", lambda line: "# GPU Hardware Info" in line,
                               lambda p: p.replace("# NVIDIA H100 80GB HBM3 : 1", "# <img src=x onerror=alert(1)> : 2", 1))
    assert _environment(log).gpu == "2 × <img src=x onerror=alert(1)>"
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert "GPU <span class=\"mono\">2 × &lt;img src=x onerror=alert(1)&gt;</span>" in page
    assert "<img src=x" not in page


def test_diff_names_the_gpu_that_changed(capsys):
    # The same program on an H200, then on an H100: same frames, same breaks, same recompiles.
    assert run_cli("diff", H200, H100, "--json") == 1
    [doc] = json.loads(capsys.readouterr().out)["ranks"]
    assert doc["a"]["ran_on"]["GPU"] == "NVIDIA H200" and doc["b"]["ran_on"]["GPU"] == "NVIDIA H100 80GB HBM3"
    environment_changes = [c["title"] for c in doc["changes"] if c["section"] == "environment"]
    assert environment_changes == ["GPU: NVIDIA H200 → NVIDIA H100 80GB HBM3"]
    assert not [c for c in doc["changes"] if c["section"] in ("frames", "graph_breaks", "recompiles", "failures")]
    # A CPU run against the H200 one: the Python and the GPU changed too, each said once.
    assert run_cli("diff", torch213("provenance.log"), H200, "--json") == 1
    [doc] = json.loads(capsys.readouterr().out)["ranks"]
    titles = [c["title"] for c in doc["changes"] if c["section"] == "environment"]
    assert titles[0].startswith("torch: 2.13.0+cpu → 2.11.0+cu130 (the ")  # (and how many config values may be defaults)
    assert titles[1:3] == ["Python: 3.11.7 → 3.12.3", "GPU: none → NVIDIA H200"]
    assert run_cli("diff", torch213("provenance.log"), H200) == 1
    out = capsys.readouterr().out
    assert "Versions, GPU & config\n" in out and "  ~ GPU: none → NVIDIA H200\n" in out


AUTOTUNE_CUDAGRAPHS = "gpu-torch211/autotune_cudagraphs/dedicated_log_torch_trace__3sg__9v.log"


def test_each_compile_names_the_inductor_settings_it_ran_with_and_the_mode_they_match(tmp_path, capsys):
    settings = _environment(shared(AUTOTUNE_CUDAGRAPHS)).compile_settings
    assert [(c.compile_ids, c.settings, c.mode) for c in settings] == [
        (["[0/0]"], [("max_autotune", "True"), ("max_autotune_gemm_backends", "'TRITON,ATEN'"),
                     ("coordinate_descent_tuning", "True")], "max-autotune-no-cudagraphs"),
        (["[0/1]"], [("max_autotune_gemm_backends", "'TRITON,ATEN'"), ("triton.cudagraphs", "True")],
         "reduce-overhead")]
    (peer_settings,) = _environment(shared("peer-tlparse/inputs/autotune_with_compile_id.log")).compile_settings
    assert peer_settings.mode == "max-autotune"
    # A CPU log whose runnables set nothing but defaults torch restored names none (cache_cold.log: no config lines)
    assert _environment(torch213("cache_cold.log")).compile_settings == []

    assert run_cli("summary", shared(AUTOTUNE_CUDAGRAPHS)) == 0
    out = " ".join(capsys.readouterr().out.split())  # (rich wraps the line)
    assert ("Inductor config of [0/0]: max_autotune = True, max_autotune_gemm_backends = 'TRITON,ATEN', "
            'coordinate_descent_tuning = True (matches mode="max-autotune-no-cudagraphs")') in out
    assert ("Inductor config of [0/1]: max_autotune_gemm_backends = 'TRITON,ATEN', triton.cudagraphs = True "
            '(matches mode="reduce-overhead")') in out
    assert run_cli("summary", "--json", shared(AUTOTUNE_CUDAGRAPHS)) == 0
    assert json.loads(capsys.readouterr().out)["environment"]["compile_settings"][1] == {
        "settings": [{"setting": "max_autotune_gemm_backends", "value": "'TRITON,ATEN'"},
                     {"setting": "triton.cudagraphs", "value": "True"}],
        "compile_ids": ["[0/1]"], "mode": "reduce-overhead"}
    assert run_cli(shared(AUTOTUNE_CUDAGRAPHS), "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert ('Inductor config of [0/1]: <span class="mono">max_autotune_gemm_backends = &#39;TRITON,ATEN&#39;, '
            'triton.cudagraphs = True</span> (matches <span class="mono">mode="reduce-overhead"</span>)') in page

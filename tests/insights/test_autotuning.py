"""Autotuning, on real CUDA logs (torch 2.11, H100): max-autotune's GEMM searches and the kernels benchmarked."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from compilescope.analyses.autotuning import autotuning_of
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.model.trace import COMPILE_EVENT_NAMES

from ..conftest import cuda211, run_cli, shared
from ..tracelog import raw_records


def _insights(directory: str):
    log = next(shared(f"gpu-torch211/{directory}/output.txt").parent.glob("dedicated_log_torch_trace*.log"))
    with read_trace(str(log)) as trace:
        return insights(trace)


def test_max_autotune_searches_their_winners_and_the_candidates_that_failed():
    at = _insights("autotune_cudagraphs").autotuning
    assert [(s.compile_id, s.op, s.shape, s.choices, s.triton_choices, s.best_kernel) for s in at.searches] == [
        ("[0/0]", "addmm", "256x2048, 256x512, 512x2048", 21, 19, "triton_mm_17"),
        ("[0/0]", "addmm", "256x512, 256x2048, 2048x512", 21, 19, "triton_mm_38")]
    first = at.searches[0]
    assert first.best_time_ms == pytest.approx(0.02256, abs=1e-5) and "BLOCK_K=64" in first.best_config
    assert first.seconds == pytest.approx(0.450, abs=0.001) and first.precompile_seconds == pytest.approx(2.032, abs=0.001)
    # The one candidate that needs more shared memory than an H100 has (262144 > 232448 bytes), in each search.
    assert [[(f.exception, f.required_memory, f.hardware_limit, "Hardware limit:232448" in f.message,
              "BLOCK_K=128" in f.choice) for f in s.failed] for s in at.searches] == [
        [("OutOfMemoryError", 262144, 232448, True, True)]] * 2


def test_a_gpu_search_without_triton_candidates_says_so_not_that_it_ran_on_the_cpu(tmp_path):
    """A search is the CPU's where its compile's post-grad graph is all on the CPU: autotune_cudagraphs' [0/0] types
    every value on cuda:0, so its searches are the GPU's, and one whose records said 0 Triton candidates and an
    extern ATen winner (a copy of the log so changed) says "0 Triton", not C++ GEMM templates."""
    log = next(shared("gpu-torch211/autotune_cudagraphs/output.txt").parent.glob("dedicated_log_torch_trace*.log"))
    records = raw_records(log)
    graph = next(p for e, p in records if e.get("artifact", {}).get("name") == "inductor_post_grad_graph"
                 and (e["frame_id"], e["frame_compile_id"]) == (0, 0))
    assert set(re.findall(r'"[a-z]+\d*\[[^"\]]*\]\[[^"\]]*\]([a-z]+)(?::\d+)?"', graph)) == {"cuda"}
    text = log.read_text()
    assert text.count('\\"num_triton_choices\\": 19, \\"best_kernel\\": \\"triton_mm_') == 2
    changed = tmp_path / "no_triton.log"
    changed.write_text(text.replace('\\"num_triton_choices\\": 19, \\"best_kernel\\": \\"triton_mm_',
                                    '\\"num_triton_choices\\": 0, \\"best_kernel\\": \\"addmm_'))
    for path, kinds in ((log, "19 Triton"), (changed, "0 Triton")):
        with read_trace(str(path)) as trace:
            searches = insights(trace).autotuning.searches
        assert [(s.device, s.candidate_kinds) for s in searches] == [("cuda", kinds)] * 2


def test_kernels_benchmarked_while_compiling_and_at_their_first_run():
    at = _insights("autotune_cudagraphs").autotuning
    assert len(at.kernels) == 8 and [k.seconds for k in at.kernels] == sorted((k.seconds for k in at.kernels), reverse=True)
    slowest = at.kernels[0]
    assert (slowest.compile_id, slowest.kernel, slowest.how, slowest.during_compile) == (
        "[0/0]", "triton_poi_fused_gelu_1", "coordinate descent", False)
    # Candidate fusions are benchmarked inside the compile, before Inductor names them.
    assert {(k.kernel, k.during_compile) for k in at.kernels if k.kernel is None} == {(None, True)}
    # Each second counted once: the kernels benchmarked while compiling run inside the fusion benchmarks.
    outermost = (sum(s.seconds + s.precompile_seconds for s in at.searches) + at.fusion_benchmark_s
                 + sum(k.seconds for k in at.kernels if not k.during_compile))
    assert at.total_s == pytest.approx(outermost) and at.total_s == pytest.approx(15.658, abs=0.001)


def test_the_finding_names_the_searches_and_what_failed(capsys):
    ins = _insights("autotune_cudagraphs")
    [finding] = [f for f in ins.findings if f.section == "autotuning"]
    assert (finding.title, finding.detail) == (
        "autotuning took 15.66 s",
        "2 max-autotune searches (addmm ×2); 8 kernels benchmarked; 2 candidates failed (OutOfMemoryError ×2)")
    assert run_cli("summary", shared("gpu-torch211/autotune_cudagraphs")) == 0
    out = capsys.readouterr().out
    # best_time 0.02256 and 0.020768 ms in the log: said as the report says them (one formatter), not "23 µs".
    assert "Autotuning (15.66 s)" in out and "best triton_mm_17 (22.6 µs) of 21 candidates" in out
    assert "best triton_mm_38 (20.8 µs) of 21 candidates" in out


def test_kernels_benchmarked_at_first_run_only_are_no_finding():
    """GPT-2 training: 23 kernels' configs benchmarked at their first run, 0.58 s in all: listed, not a finding."""
    ins = _insights("gpt2_train")
    at = ins.autotuning
    assert not at.searches and len(at.kernels) == 23 and not any(k.during_compile for k in at.kernels)
    assert at.total_s == pytest.approx(sum(k.seconds for k in at.kernels)) and at.total_s < 1
    assert "autotuning" not in {f.section for f in ins.findings}
    assert {k.backward for k in at.kernels} == {True, False}


def test_a_cut_or_odd_log_never_stops_the_analysis():
    """Ends without begins, begins never ended, stats that are not JSON: what can be read is, the rest ignored."""
    events = [
        {"ph": "E", "name": "mm_template_autotuning", "ts": 5.0, "pid": 0, "tid": 0, "args": {}},
        {"ph": "B", "name": "mm_template_autotuning", "ts": 1e6, "pid": 0, "tid": 0, "args": {"compile_id": "1/0"}},
        {"ph": "B", "name": "CachingAutotuner.benchmark_all_configs", "ts": 1.5e6, "pid": 0, "tid": 0, "args": {}},
        {"ph": "E", "name": "mm_template_autotuning", "ts": 3e6, "pid": 0, "tid": 0,
         "args": {"autotune_choices_stats": "{not json", "autotune_shape": 7}},
        {"ph": "B", "name": "benchmark_fused_nodes", "ts": float("nan"), "pid": 0, "tid": 0},
        "not an event",
    ]
    at = autotuning_of(events)
    [search] = at.searches
    assert (search.compile_id, search.op, search.choices, search.shape, search.seconds) == ("[1/0]", "mm", None, None, 2.0)
    assert at.total_s == 2.0 and not at.kernels


def test_the_report_has_the_section_its_finding_links_to(tmp_path):
    out = tmp_path / "report"
    assert run_cli(shared("gpu-torch211/autotune_cudagraphs"), "-o", out, "--no-browser") == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.count('href="#insights-autotuning"') == 1 and page.count('id="insights-autotuning"') == 1
    section = page[page.index('id="insights-autotuning"'):page.index('id="insights-caches"')]
    assert "<code>triton_mm_17</code> (22.6 µs)" in section and "21 (19 Triton)" in section
    assert "needs 262,144 bytes of shared memory, the GPU has 232,448" in section
    assert "<code>triton_poi_fused_gelu_1</code>" in section
    assert "Fusions benchmarked both ways, to decide whether to fuse: 9.65 s." in section  # 9.651 s in the log


@pytest.mark.parametrize("directory", ["autotune_cudagraphs", "gpt2_train", "flex_sdpa_model"])
def test_the_events_kept_when_reading_give_what_every_event_gives(directory):
    """The reader keeps the benchmarks' events and the compiles' (without their args) apart: a few dozen of a log's
    hundreds, so the analysis decodes nothing again. Over those alone it finds what it finds over every event."""
    log = next(shared(f"gpu-torch211/{directory}/output.txt").parent.glob("dedicated_log_torch_trace*.log"))
    with read_trace(str(log)) as trace:
        kept = trace.benchmark_events
        assert 0 < len(kept) < len(trace.chromium_events) / 3
        assert all("args" not in e for e in kept if e["name"] in COMPILE_EVENT_NAMES)
        assert autotuning_of(kept) == autotuning_of(trace.chromium_events)


def _kernel_tunings(log) -> dict[str, int]:
    """How many kernels began each kind of tuning (the chromium events' "B" of CachingAutotuner.*), from the raw log."""
    begun: dict[str, int] = {}
    payload: list[str] | None = None  # the lines of a chromium event's payload
    with (gzip.open if log.suffix == ".gz" else open)(log, "rt", encoding="utf-8") as f:
        for line in [*f, "end\n"]:
            if line.startswith("\t"):
                if payload is not None:
                    payload.append(line[1:])
                continue
            if payload:
                event = json.loads("".join(payload))
                if event.get("ph") == "B" and event["name"].startswith("CachingAutotuner."):
                    begun[event["name"]] = begun.get(event["name"], 0) + 1
            payload = [] if '{"chromium_event": ' in line else None
    return begun


def _kernel_table(out: str) -> list[str]:
    """The summary's lines of the kernels-benchmarked table: its header to the line before the next section."""
    lines = out[out.index("\nAutotuning ("):].splitlines()[2:]
    start = next(i for i, line in enumerate(lines) if line.startswith("compile id   kernel"))
    return lines[start:start + next(i for i, line in enumerate(lines[start:]) if not line.strip())]


def test_how_the_kernels_were_tuned_is_said_once_where_it_is_the_same_for_all(capsys):
    # dynamic_batch (CUDA): each of its 6 kernels had its configs benchmarked at its first run, none tuned by
    # coordinate descent; "configs benchmarked" was once repeated under every row.
    log = cuda211("dynamic_batch.log.gz")
    assert _kernel_tunings(log) == {"CachingAutotuner.benchmark_all_configs": 6}
    assert run_cli("summary", log) == 0
    table = _kernel_table(capsys.readouterr().out)
    assert table[0].split() == ["compile", "id", "kernel:", "configs", "benchmarked", "when", "took"]
    assert sum(line.startswith("[0/") for line in table) == 6 == len(table) - 2  # a row a kernel, one line each
    assert "configs benchmarked" not in "\n".join(table[1:])


def test_how_each_kernel_was_tuned_is_said_where_they_differ(capsys):
    # autotune_cudagraphs (mode="max-autotune"): 3 kernels tuned by coordinate descent, 5 with their configs
    # benchmarked: each row says which.
    log = next(shared("gpu-torch211/autotune_cudagraphs/output.txt").parent.glob("dedicated_log_torch_trace*.log"))
    assert _kernel_tunings(log) == {"CachingAutotuner.coordinate_descent_tuning": 3,
                                    "CachingAutotuner.benchmark_all_configs": 5}
    assert run_cli("summary", log) == 0
    table = _kernel_table(capsys.readouterr().out)
    assert table[0].split()[:6] == ["compile", "id", "kernel", "benchmarked,", "and", "how"]
    hows = [line.strip() for line in table[2:] if line.startswith(" ")]  # (the lines under a row)
    assert (hows.count("coordinate descent"), hows.count("configs benchmarked"), len(hows)) == (3, 5, 8)


def _kernels_header(page: str) -> str:
    """The header row of the report's kernels-benchmarked table."""
    table = page[page.index('<table class="autotune-kernels">'):]
    return table[table.index("<thead>"):table.index("</thead>")]


def test_the_report_and_the_summary_read_one_decision_of_how_the_kernels_were_tuned(tmp_path):
    # The raw logs' CachingAutotuner.* events (counted above): dynamic_batch's 6 kernels all had their configs
    # benchmarked; autotune_cudagraphs mixes 3 coordinate descents with 5. The analysis decides; the page's table
    # says it in its header, or has a "how" column, as the summary does.
    alike = cuda211("dynamic_batch.log.gz")
    mixed = next(shared("gpu-torch211/autotune_cudagraphs/output.txt").parent.glob("dedicated_log_torch_trace*.log"))
    assert insights(read_trace(alike)).autotuning.kernels_tuned_alike == "configs benchmarked"
    assert insights(read_trace(mixed)).autotuning.kernels_tuned_alike is None
    for log, name in ((alike, "alike"), (mixed, "mixed")):
        assert run_cli(log, "-o", tmp_path / name, "--no-browser") == 0
    page = (tmp_path / "alike" / "index.html").read_text(encoding="utf-8")
    assert "<th>kernel: configs benchmarked</th>" in _kernels_header(page) and "<th>how</th>" not in _kernels_header(page)
    section = page[page.index('<table class="autotune-kernels">'):]
    assert "<td>configs benchmarked</td>" not in section[:section.index("</table>")]
    page = (tmp_path / "mixed" / "index.html").read_text(encoding="utf-8")
    assert "<th>how</th>" in _kernels_header(page)
    section = page[page.index('<table class="autotune-kernels">'):]
    rows = section[:section.index("</table>")]
    assert (rows.count("<td>coordinate descent</td>"), rows.count("<td>configs benchmarked</td>")) == (3, 5)


def test_a_row_of_a_restarted_compilation_links_the_attempt_that_compiled_it(tmp_path):
    # gpt2_train: Dynamo restarted [1/1] at a graph break and compiled it in [1/1_1] (the log's one
    # compilation_metrics of frame 1 compile 1 is at attempt 1); its chromium events (compile time, autotuning) name
    # "1/1" only. [3/1] compiled at its first attempt: no other attempt to link.
    out = tmp_path / "report"
    assert run_cli(shared("gpu-torch211/gpt2_train"), "-o", out, "--no-browser") == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="[1/1_1]"' in page and 'id="[3/1_1]"' not in page
    slowest = page[page.index("<h4>Slowest compilations</h4>"):page.index('id="insights-autotuning"')]
    tuning = page[page.index('id="insights-autotuning"'):page.index('id="insights-caches"')]
    for table in (slowest, tuning):
        links = re.findall(r'<a class="mono" href="#(\[[^"]*)"[^>]*>(\[[^<]*)</a>', table)
        assert ("[1/1_1]", "[1/1]") in links and ("[3/1]", "[3/1]") in links
        assert not [href for href, label in links if label == "[1/1]" and href != "[1/1_1]"]

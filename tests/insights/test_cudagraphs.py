"""CUDA graphs on real GPU logs: a graph is recorded when torch logs CUDAGraphNode.record, not when it is set up.

tests/data/cuda_torch211/logs/cudagraph_skips.log.gz: compilescope run of programs/cudagraph_skips.py on an H200;
what the program printed is beside it (cudagraph_skips.output.txt): torch's reason for the one skip is only there.
"""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.cudagraphs import cudagraphs
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, run_cli, shared
from ..gpu_variants import with_cudagraph_skip


def _graphs(log):
    with read_trace(str(log)) as trace:
        return cudagraphs(trace), insights(trace).findings


def test_set_up_and_recorded_once_or_never():
    cg, findings = _graphs(cuda211("cudagraph_skips.log.gz"))
    got = [(c.compile_id, c.name, c.setups, len(c.recordings_ms), c.never_recorded, c.skip_reason) for c in cg.compiles]
    assert got == [("[0/0]", "residual", 1, 1, False, None), ("[1/0]", "accumulate", 1, 0, True, None),
                   ("[2/0]", "with_cpu_scalar", 1, 1, False, None)]
    # The never-recorded one is the one torch said (on stderr only) it skipped.
    printed = cuda211("cudagraph_skips.output.txt").read_text()
    assert re.search(r"skipping cudagraphs due to mutated inputs.*\n.*line 17, in accumulate", printed)
    # This older run recorded neither torch's skips nor its warnings (no compilescope_recorders in the log): a skip and
    # a single call log the same, a set-up and no recording, so the finding says both, and where the reason would be.
    assert "compilescope_recorders" not in gzip.open(cuda211("cudagraph_skips.log.gz"), "rt").read()
    [finding] = [f for f in findings if f.section == "cudagraphs"]
    assert (finding.severity, finding.title) == ("warning", "no CUDA graph was recorded for [1/0] (accumulate)")
    assert "torch logged no skip reason: a graph run only once is warmed up, never recorded" in finding.detail
    assert '"skipping cudagraphs due to ..."' in finding.detail and not cg.ran_once


def test_two_shapes_set_up_with_a_backward_pending_are_never_recorded():
    # script.py there: a training-mode MLP under reduce-overhead, called with two shapes and no backward;
    # output.txt has "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards".
    cg, findings = _graphs(next(shared("gpu-torch211/autotune_cudagraphs").glob("*.log")))
    assert [(c.compile_id, c.setups, c.recordings_ms, c.never_recorded) for c in cg.compiles] == [("[0/1]", 2, [], True)]
    assert "pending, uninvoked backwards" in shared("gpu-torch211/autotune_cudagraphs/output.txt").read_text()
    assert any(f.title == "CUDA graphs never recorded for [0/1] (forward)" for f in findings) and not cg.ran_once


def test_a_graph_set_up_once_per_shape_says_so_and_what_to_do(tmp_path, capsys):
    """script.py calls the reduce-overhead MLP with 128 rows, then 64 ("new shape: re-record"): [0/1], dynamic already
    (s77), logs a `cudagraphify.get_container` begin/end pair per shape and no recording. "never" alone hid that each
    shape is a graph of its own, which padding the inputs avoids."""
    log = next(shared("gpu-torch211/autotune_cudagraphs").glob("*.log"))
    chromium = [json.loads(p.replace("\n\t", "\n")) for p in re.findall(r'"chromium_event": \{\}.*\n((?:\t.*\n)+)', log.read_text())]
    setups = [(e["ph"], e["args"]["compile_id"]) for e in chromium if e["name"] == "cudagraphify.get_container"]
    assert setups == [("B", "0/1"), ("E", "0/1")] * 2
    assert not [e for e in chromium if e["name"] == "CUDAGraphNode.record"]
    cg, findings = _graphs(log)
    [c] = cg.compiles
    assert c.set_up_per_shape == "set up twice, once per input shape"
    [finding] = [f for f in findings if f.section == "cudagraphs"]
    assert "[0/1] was set up twice, once per input shape" in finding.detail
    assert "pad the inputs to a few fixed sizes" in finding.detail
    assert run_cli("summary", log) == 0
    table = capsys.readouterr().out.split("CUDA graphs (1 compile id)")[1].split("Warnings torch printed")[0]
    assert [line.split()[:4] for line in table.splitlines() if "set up" in line or "input shape" in line] == [
        ["[0/1]", "forward", "never", "(set"], ["once", "per", "input", "shape)"]]
    # one set-up, one recording: no such note
    assert [c.set_up_per_shape for c in _graphs(cuda211("cudagraph_skips.log.gz"))[0].compiles] == [None] * 3


def test_a_skip_reason_in_the_metrics_is_a_skip_not_a_graph_never_recorded(tmp_path):
    log = next(shared("gpu-torch211/autotune_cudagraphs").glob("*.log"))
    cg, findings = _graphs(with_cudagraph_skip(log, tmp_path / "dedicated_log_torch_trace_skip.log"))
    [c] = cg.compiles
    assert (c.setups, c.never_recorded, c.skip_summary) == (2, False, "skipping cudagraphs due to mutated inputs (1 instances)")
    assert [f.title for f in findings if f.section == "cudagraphs"] == ["CUDA graphs skipped for [0/1] (forward)"]


def test_a_skip_torch_decided_at_the_first_run_is_read_from_compilescope_s_recorder():
    """The same program under today's compilescope run: its hook wrote torch's stderr warning into the trace, so the
    graph set up and never recorded gets its reason and line."""
    cg, findings = _graphs(cuda211("cudagraph_first_run_skip.log.gz"))
    got = [(c.compile_id, c.name, c.setups, len(c.recordings_ms), c.never_recorded, c.skipped_at_first_run)
           for c in cg.compiles]
    assert got == [("[0/0]", "residual", 1, 1, False, False), ("[1/0]", "accumulate", 1, 0, False, True),
                   ("[2/0]", "with_cpu_scalar", 1, 1, False, False)]
    accumulate = cg.compiles[1]
    assert accumulate.skip_summary == "skipping cudagraphs due to mutated inputs (1 instances)"
    assert (accumulate.skip_location.line, accumulate.skip_location.function) == (17, "accumulate")
    assert accumulate.skip_summary in cuda211("cudagraph_first_run_skip.output.txt").read_text()
    assert [f.title for f in findings if f.section == "cudagraphs"] == ["CUDA graphs skipped for [1/0] (accumulate)"]


def test_the_static_cache_skip_names_the_mutation_in_the_library(capsys):
    """The CUDA graph skip of [0/1] names no line of the user's: the innermost line of the library's is where the
    input was mutated (transformers' cache, as the raw warning's last frame says), and the terminal says that line,
    not torch's whole stack."""
    text = gzip.open(cuda211("hf_gpt2_static_cache.log.gz"), "rt").read()
    record = next(line for line in text.split("\n") if line.startswith("\t{") and "skipping cudagraphs" in line)
    message = json.loads(record[1:])["message"]
    last = re.findall(r'File "([^"]+)", line (\d+), in (\w+)\n\s+(.+)', message)[-1]
    [skip] = [c for c in _static_cache_insights(cuda211("hf_gpt2_static_cache.log.gz")).cudagraphs.compiles if c.skip_reason]
    assert (skip.skip_location.filename, skip.skip_location.line, skip.skip_location.function) == (
        last[0], int(last[1]), last[2])
    assert skip.skip_location.code == last[3].strip() == "self.cumulative_length.add_(kv_length)"
    assert run_cli("summary", cuda211("hf_gpt2_static_cache.log.gz")) == 0
    out = capsys.readouterr().out
    section = out[out.index("\nCUDA graphs"):out.index("\nWarnings torch printed")]
    assert "Found from" not in section and "cache_utils.py:478 in update" in section


def _static_cache_insights(log):
    with read_trace(str(log)) as trace:
        return insights(trace)


def _records(log) -> list[tuple[str, str, str]]:
    """(the record's kind, or its artifact's or chromium event's name; its compile id; its payload) of each record of
    the raw log, in order."""
    out, lines = [], gzip.open(log, "rt").read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("\t") or "] {" not in line:
            continue
        envelope = json.loads(line[line.index("] {") + 2:])
        kind = next(iter(envelope))
        end = next((j for j in range(i + 1, len(lines)) if not lines[j].startswith("\t")), len(lines))
        payload = "\n".join(p[1:] for p in lines[i + 1:end])
        cid = f"[{envelope.get('frame_id', '-')}/{envelope.get('frame_compile_id', '-')}]"
        if kind == "chromium_event":  # (its compile id is in its args)
            event = json.loads(payload)
            kind, cid = event["name"], f"[{(event.get('args') or {}).get('compile_id')}]"
        out.append((envelope[kind]["name"] if kind == "artifact" else kind, cid, payload))
    return out


def test_a_prefill_run_once_is_told_from_a_skip_by_the_run_s_recorders(tmp_path, capsys):
    """hf_gpt2_static_cache (cuda_torch211/README.md): generate()'s prefill [0/0] ran once, then the decode step [0/1],
    whose first call torch skipped (mutated inputs), and the process crashed. Neither graph was ever recorded. The run
    recorded torch's CUDA graph skips and warnings (compilescope_recorders): the one skip recorded is [0/1]'s, and no
    backward was left pending, so [0/0] was not skipped: it was warmed up at its only call. It was said as 'never
    recorded', a warning, as a skip is."""
    log = cuda211("hf_gpt2_static_cache.log.gz")
    records = _records(log)
    [recorders] = [json.loads(p)["records"] for name, _, p in records if name == "compilescope_recorders"]
    assert {"cudagraph_skips", "warnings"} <= set(recorders)
    [skip] = [p for name, _, p in records if name == "compilescope_cudagraph_skip"]
    assert "mutated inputs" in skip
    assert [cid for name, cid, _ in records if name == "cudagraphify.get_container"] == ["[0/0]"] * 2 + ["[0/1]"] * 2
    assert not [r for r in records if r[0] == "CUDAGraphNode.record"]
    assert not [p for name, _, p in records if name == "compilescope_warning" and "backward" in p]
    cg, findings = _graphs(log)
    assert [(c.compile_id, c.ran_once, c.never_recorded, c.skipped_at_first_run) for c in cg.compiles] == [
        ("[0/0]", True, False, False), ("[0/1]", False, False, True)]
    [ran_once] = [f for f in findings if f.title.startswith("[0/0]") and f.section == "cudagraphs"]
    assert (ran_once.severity, ran_once.section, ran_once.title) == (
        "info", "cudagraphs", "[0/0] (wrapper) ran once: warmed up, never recorded as a CUDA graph")
    assert not [f for f in findings if "never recorded for" in f.title or "no CUDA graph was recorded" in f.title]
    assert run_cli("summary", log) == 0
    out = capsys.readouterr().out
    section = out[out.index("\nCUDA graphs"):out.index("\nWarnings torch printed")]
    assert "not skipped: it ran once, a warm-up" in section
    assert run_cli(log, "-o", tmp_path / "report", "--no-browser") == 0
    page = (tmp_path / "report" / "index.html").read_text()
    table = page[page.index('id="insights-cudagraphs"'):]
    assert "not skipped: it ran once, a warm-up" in table[:table.index("</table>")]
    # The same program under capture(), which turns the same recorders on: the same conclusion.
    [capture_log] = cuda211("capture_crash").glob("*.log.gz")
    assert [(c.compile_id, c.ran_once) for c in _graphs(capture_log)[0].compiles] == [("[0/0]", True), ("[0/1]", False)]


def test_without_the_skip_recorder_a_graph_run_once_cannot_be_told_from_a_skip(tmp_path):
    """The same log as a run whose compilescope recorded torch's warnings but not its CUDA graph skips would write it
    (one fact changed): no skip recorded is no longer none printed, so [0/0] is never recorded for a reason unknown.
    So too where the one skip recorded falls at no graph's set-up (its time moved 100 s earlier): it may be [0/0]'s."""
    from ..gpu_variants import with_payload_changed

    plain = tmp_path / "static_cache.log"
    plain.write_text(gzip.open(cuda211("hf_gpt2_static_cache.log.gz"), "rt").read(), encoding="utf-8")
    log = with_payload_changed(plain, tmp_path / "dedicated_log_torch_trace_no_skip_recorder.log",
                               lambda line: '"records": [' in line, lambda p: p.replace(', "cudagraph_skips"', ""))
    cg, findings = _graphs(log)
    assert [(c.compile_id, c.ran_once, c.never_recorded) for c in cg.compiles] == [("[0/0]", False, True), ("[0/1]", False, False)]
    assert "no CUDA graph was recorded for [0/0] (wrapper)" in [f.title for f in findings]
    elsewhere = with_payload_changed(plain, tmp_path / "dedicated_log_torch_trace_skip_elsewhere.log",
                                     lambda line: "skipping cudagraphs" in line,
                                     lambda p: p.replace('"time": 1795700427.97', '"time": 1795700327.97'))
    cg, findings = _graphs(elsewhere)
    assert [(c.compile_id, c.ran_once, c.never_recorded) for c in cg.compiles] == [("[0/0]", False, True), ("[0/1]", False, True)]
    assert "no CUDA graph was recorded for [0/0] (wrapper), [0/1] (wrapper)" in [f.title for f in findings]


def test_a_cuda_graph_finding_names_a_resume_function_as_the_report_does():
    # No real log has a CUDA graph finding on the code after a graph break: the findings' wording, over the analysis'
    # own fields, names it as the summary's other sections do, not by torch's torch_dynamo_resume_in_f_at_23.
    from types import SimpleNamespace

    from compilescope.analyses.insights.cudagraphs import cudagraphs_run_once

    [finding] = cudagraphs_run_once(SimpleNamespace(ran_once=[SimpleNamespace(compile_id="[1/0]",
                                                                             name="torch_dynamo_resume_in_f_at_23")]))
    assert finding.title.startswith("[1/0] (f (after its graph break at line 23)) ran once")

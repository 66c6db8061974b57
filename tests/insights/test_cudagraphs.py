"""CUDA graphs on real GPU logs: a graph is recorded when torch logs CUDAGraphNode.record, not when it is set up.

tests/data/cuda_torch211/logs/cudagraph_skips.log.gz: compilescope run of programs/cudagraph_skips.py on an H200;
what the program printed is beside it (cudagraph_skips.output.txt): torch's reason for the one skip is only there.
"""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.cudagraphs import cudagraphs
from compilescope.analyses.insights import insights
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
    assert [f.title for f in findings if f.section == "cudagraphs"] == [
        "CUDA graphs never recorded for [1/0] (accumulate)"]
    assert [f.severity for f in findings if f.section == "cudagraphs"] == ["warning"]


def test_two_shapes_set_up_with_a_backward_pending_are_never_recorded():
    # script.py there: a training-mode MLP under reduce-overhead, called with two shapes and no backward;
    # output.txt has "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards".
    cg, findings = _graphs(next(shared("gpu-torch211/autotune_cudagraphs").glob("*.log")))
    assert [(c.compile_id, c.setups, c.recordings_ms, c.never_recorded) for c in cg.compiles] == [("[0/1]", 2, [], True)]
    assert "pending, uninvoked backwards" in shared("gpu-torch211/autotune_cudagraphs/output.txt").read_text()
    assert any(f.title == "CUDA graphs never recorded for [0/1] (forward)" for f in findings)


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

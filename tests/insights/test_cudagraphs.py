"""CUDA graphs, on the real H100 log of mode="reduce-overhead": recordings, and a compile Inductor skipped."""

from __future__ import annotations

import pytest

from compilescope.analyses.insights import insights
from compilescope.ingest.reader import read_trace

from ..conftest import run_cli
from ..gpu_variants import max_autotune_log, with_cudagraph_skip


def test_a_graph_recorded_for_each_input_shape():
    """[0/1] ran under reduce-overhead for inputs of 128 then 64 rows: two recordings (4.5 ms, then 0.3 ms)."""
    with read_trace(str(max_autotune_log())) as trace:
        ins = insights(trace)
    [c] = ins.cudagraphs.compiles
    assert (c.compile_id, c.name, c.skip_reason) == ("[0/1]", "forward", None)
    assert c.recordings_ms == pytest.approx([4.464, 0.334])
    [finding] = [f for f in ins.findings if f.section == "cudagraphs"]
    assert (finding.severity, finding.title) == ("info", "CUDA graph of [0/1] (forward) recorded 2 times")


def test_a_skipped_compile_is_a_warning_with_torchs_reason(tmp_path, capsys):
    """The same log, [0/1]'s metrics saying why Inductor skipped CUDA graphs: a warning ranked with the others, the
    reason in the summary and on the report's page."""
    log = with_cudagraph_skip(max_autotune_log(), tmp_path / "dedicated_log_torch_trace_skip.log")
    with read_trace(str(log)) as trace:
        ins = insights(trace)
    [c] = ins.cudagraphs.skipped
    assert c.skip_reason.startswith("skipping cudagraphs due to mutated inputs (1 instances)")
    sections = [(f.severity, f.section) for f in ins.findings]
    assert sections.index(("warning", "cudagraphs")) < sections.index(("info", "compile_time"))
    [warning] = [f for f in ins.findings if f.severity == "warning" and f.section == "cudagraphs"]
    assert (warning.title, warning.detail) == (
        "CUDA graphs skipped for [0/1] (forward)",
        "skipping cudagraphs due to mutated inputs (1 instances) at autotune_cudagraphs.py:13")
    assert (c.skip_location.line, c.skip_location.function) == (13, "forward")
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    section = page[page.index('id="insights-cudagraphs"'):page.index('id="insights-caches"')]
    assert "skipping cudagraphs due to mutated inputs" in section and "2×: 4.5 ms, 0.3 ms" in section
    assert page.count('href="#insights-cudagraphs"') == 2  # the warning and the recordings

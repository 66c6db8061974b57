"""A compile the log ends in (the program was killed while compiling): the summary says so first, not only the time."""

from __future__ import annotations

import json

from compilescope.analyses.insights import insights
from compilescope.ingest.reader import read_trace

from ..conftest import TORCH213_LOGS, run_cli


def _cut_inside_first_compile(tmp_path, name: str) -> str:
    """The real log up to half-way through its first compile, as a run killed there leaves it (whole lines)."""
    lines = (TORCH213_LOGS / name).read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if '"dynamo_start"' in line)
    metrics = next(i for i, line in enumerate(lines) if '"compilation_metrics"' in line)
    cut = tmp_path / name
    cut.write_text("".join(lines[:(start + metrics) // 2]))
    return str(cut)


def test_a_compile_the_log_ends_in_is_the_first_finding(tmp_path, capsys):
    log = _cut_inside_first_compile(tmp_path, "provenance.log")
    with read_trace(log) as trace:
        ins = insights(trace)
        metrics = {str(c): entry.metrics for c, entry in trace.compiles.items() if c is not None}
    (cid, phase), = ins.unfinished
    assert cid == "[0/0]" and phase in ins.compile_time.labels
    assert metrics[cid] is None  # the compile is in the log, without the metrics torch logs at its end
    first = ins.findings[0]
    assert (first.severity, first.title) == ("error", "[0/0] never finished compiling")
    assert first.detail.startswith(f"the log ends during [0/0]'s {ins.compile_time.labels[phase]}: ")

    assert run_cli("summary", log) == 0
    assert "[0/0] never finished compiling" in capsys.readouterr().out
    assert run_cli("summary", "--json", log) == 0
    assert json.loads(capsys.readouterr().out)["unfinished"] == [{"compile_id": "[0/0]", "phase": phase}]


def test_whole_logs_have_no_unfinished_compile():
    # Every compile of a complete log ends, even a failed one and one outside any frame.
    for name in ("provenance.log", "compile_error_lowering.log", "graph_breaks.log", "training.log"):
        with read_trace(str(TORCH213_LOGS / name)) as trace:
            assert insights(trace).unfinished == [], name

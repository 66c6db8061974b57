"""A compile the log ends in (the program was killed while compiling): the summary says so first, not only the time."""

from __future__ import annotations

import json

from compilescope.analyses.insights.analysis import insights
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


def _chromium_cuts(lines: list[str]) -> list[tuple[int, dict]]:
    """Each chromium event of a text log, read without compilescope, with the line just after its payload: where a
    log cut right after that event ends."""
    heads = [i for i, line in enumerate(lines) if not line.startswith("\t")] + [len(lines)]
    return [(end, json.loads("".join(line[1:] for line in lines[head + 1:end])))
            for head, end in zip(heads, heads[1:]) if '"chromium_event"' in lines[head]]


def test_the_phase_a_cut_log_ends_in_is_the_innermost_event_still_open(tmp_path, capsys):
    # provenance.log's [0/0] runs its C++ compiles (compile_file) inside Scheduler.codegen. Cut right after the last of
    # them ended, Scheduler.codegen is still open: Inductor lowering & codegen, not the compile_file that ended last.
    # Cut right after one began, that compile_file is open: C++/Triton compile, not Scheduler.codegen before it.
    lines = (TORCH213_LOGS / "provenance.log").read_text().splitlines(keepends=True)
    events = _chromium_cuts(lines)
    closes = next(k for k, (_, e) in enumerate(events) if (e["ph"], e["name"]) == ("E", "Scheduler.codegen"))
    last_end = events[closes - 1]
    first_begin = next((end, e) for end, e in events if (e["ph"], e["name"]) == ("B", "compile_file"))
    assert last_end[1]["name"] == "compile_file" and last_end[1]["ph"] == "E"
    for (cut_at, _), innermost, phase in ((last_end, "Scheduler.codegen", "inductor_codegen"),
                                          (first_begin, "compile_file", "kernel_compile")):
        still_open: list[str] = []
        for end, e in events:
            if end > cut_at:
                break
            if e["ph"] == "B":
                still_open.append(e["name"])
            elif e["ph"] == "E":
                still_open.remove(e["name"])
        assert still_open[0] == "dynamo" and still_open[-1] == innermost
        cut = tmp_path / f"provenance_{cut_at}.log"
        cut.write_text("".join(lines[:cut_at]))
        with read_trace(str(cut)) as trace:
            ins = insights(trace)
        assert ins.unfinished == [("[0/0]", phase)]
        # (compile_file, torch's system compiler run: cut before the output code is logged, no kernel says which)
        label = {"inductor_codegen": "Inductor lowering & codegen", "kernel_compile": "C++/CUDA compile"}[phase]
        (finding,) = [f for f in ins.findings if "never finished" in f.title]
        assert finding.detail.startswith(f"the log ends during [0/0]'s {label}: ")
        assert run_cli("summary", "--json", str(cut)) == 0
        assert json.loads(capsys.readouterr().out)["unfinished"] == [{"compile_id": "[0/0]", "phase": phase}]


def test_a_compile_the_log_ends_in_is_named_by_its_frame(tmp_path, capsys):
    """training.log cut inside its only compile: torch logs the function's name (co_name) in the metrics at the end of
    a compile, which the cut left out, but its dynamo_start's stack ends in the frame compiled, forward at
    training.py:23 (the stack trie says so): the compile-time table names it, not an empty cell."""
    log = _cut_inside_first_compile(tmp_path, "training.log")
    assert run_cli("summary", "--json", log) == 0
    [row] = json.loads(capsys.readouterr().out)["compile_time"]["compiles"]
    assert (row["compile_id"], row["name"], row["unfinished"]) == ("[0/0]", "forward", True)
    assert run_cli("summary", log) == 0
    out = capsys.readouterr().out
    assert any(line.split()[:2] == ["[0/0]", "forward"] for line in out.splitlines())
    # The finding says once that [0/0] is the compile still running, not "(210 ms so far ([0/0] still compiling ...))"
    assert "slowest [0/0] (210 ms so far, still compiling when the log ended)" in " ".join(
        line.strip("│ ") for line in out.splitlines())

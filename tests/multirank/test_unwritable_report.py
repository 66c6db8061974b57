"""A rank whose own report (rank_<N>/ under the output) cannot be written was read: it says so, with where, why and
what to do, never "not read"; its figures stay in the rank table, and the other ranks' reports are whole.

Inputs: the peer directory multi_rank_logs (four real ranks). Rank 3's report directory is taken, once the output
directory is made and before the ranks run, by a regular file: no directory can be made there, even by root."""

from __future__ import annotations

import json
import re
from pathlib import Path


from compilescope.cli import multirank

from ..conftest import run_cli
from .conftest import Landing, peer_dir


def _compile_ids(log: Path) -> list[str]:
    """The compile ids of a raw log's records, "[frame/compile]" (every attempt of these logs is 0), in order."""
    ids = set()
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            envelope = re.search(r"\] (\{.*\})\s*$", line) if not line.startswith("\t") else None
            record = json.loads(envelope.group(1)) if envelope else {}
            if "frame_compile_id" in record:
                assert record.get("attempt", 0) == 0
                ids.add((record["frame_id"], record["frame_compile_id"]))
    return [f"[{frame}/{compile}]" for frame, compile in sorted(ids)]


def _chromium_records(log: Path) -> int:
    with open(log, encoding="utf-8", errors="replace") as f:
        return sum(1 for line in f if not line.startswith("\t") and '{"chromium_event": ' in line)


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_rank_whose_report_cannot_be_written_was_read_and_says_so(tmp_path, monkeypatch, capsys):
    src = peer_dir("multi_rank_logs")
    logs = {r: src / f"dedicated_log_torch_trace_rank_{r}.log" for r in range(4)}
    assert run_cli(src, "--all-ranks-html", "-o", tmp_path / "whole", "--no-browser", "-j", "2") == 0
    capsys.readouterr()

    out = tmp_path / "out"
    run_rank_jobs = multirank.run_rank_jobs

    def taken_then_run(jobs, *args, **kwargs):
        (out / "rank_3").write_text("not a directory")  # the output directory is there by now: rank 3's place is taken
        return run_rank_jobs(jobs, *args, **kwargs)

    monkeypatch.setattr(multirank, "run_rank_jobs", taken_then_run)
    assert run_cli(src, "--all-ranks-html", "-o", out, "--no-browser", "-j", "2") == 1  # (two worker processes)
    err = capsys.readouterr().err
    said = (f"read, but its report could not be written to {out}/rank_3: {out}/rank_3 exists and is not a directory; "
            "its figures are in the rank table only: make its directory writable, and run again with --overwrite")
    assert f"compilescope: rank 3: {said}\n" in err
    assert "not read" not in err and "could not be reported" not in err
    assert err.endswith("compilescope: 1 rank whose report could not be written (see above)\n")

    report = Landing(out)
    three = report.ranks[3]
    # Read in full: its figures are the log's, it is compared with the other ranks, and its events are merged.
    assert three["error"] is None and three["report_not_written"] == said and three["not_written"] is None
    assert three["compile_ids"] == _compile_ids(logs[3]) == [f"[0/{n}]" for n in range(7)]
    assert 3 not in report.analysis["failed_ranks"]
    assert [r["report_not_written"] for r in report.summary["ranks"][:3]] == [None] * 3
    assert f"rank 3: {said}" in report.summary["notes"]
    events = report.json("chromium_events.json")
    assert {e["pid"] for e in events} == {0, 1, 2, 3}
    assert len(events) == sum(_chromium_records(log) for log in logs.values())
    # Nothing of rank 3's report was written (the file stands as it was); the other ranks' reports are whole: each
    # file as a run with nothing in the way writes it.
    assert (out / "rank_3").read_text() == "not a directory"
    for rank in range(3):
        written = _files(out / f"rank_{rank}")
        assert "index.html" in written and written == _files(tmp_path / "whole" / f"rank_{rank}")
    # The landing page names rank 3, links nothing of it, marks its row (why in its title), and lists the note.
    assert 'href="rank_3/' not in report.html and 'href="rank_2/index.html">Rank 2</a>' in report.html
    row = next(line for line in report.html.splitlines() if line.startswith("<td>Rank 3 "))
    assert f'<span class="status-error" title="{said}">report not written</span>' in row
    assert f"<li>rank 3: {said}</li>" in report.html
    # The terminal's rank table, of the same document: rank 3's row has its figures, marked, and the note under it.
    text = report.rank_table_text(src)
    assert re.search(r"^3 report lost +7 ", text, re.M)
    assert "not read" not in text and "note: rank 3: read, but its report could not be written" in text

"""A rank whose spooled chromium events cannot be written (a full disk, a spool directory that is not one) was read
and reported: it is said so, with where, why and what to do, never "not read".

Inputs: the peer directory multi_rank_logs (four real ranks; each logs chromium events). The spool is pointed (the
scratch directory the coordinator makes for it) at a real failure the system gives even to root: a rank's spool file
that is /dev/full (ENOSPC when written), or a spool directory under a regular file (ENOTDIR)."""

from __future__ import annotations

import json
import os
import re
import types
from pathlib import Path

import pytest

from compilescope.cli import multirank

from ..conftest import run_cli
from .conftest import Landing, peer_dir


def _chromium_records(log: Path) -> int:
    """The chromium_event records of a raw log (each an envelope line naming it)."""
    with open(log, encoding="utf-8", errors="replace") as f:
        return sum(1 for line in f if not line.startswith("\t") and '{"chromium_event": ' in line)


def _report_with_spool(src: Path, out: Path, spool: Path, monkeypatch, jobs: str) -> int:
    monkeypatch.setattr(multirank, "tempfile", types.SimpleNamespace(mkdtemp=lambda prefix: str(spool)))
    return run_cli(src, "--all-ranks-html", "-o", out, "--no-browser", "-j", jobs)


def test_a_rank_whose_spool_is_full_was_read_and_says_so(tmp_path, monkeypatch, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    src = peer_dir("multi_rank_logs")
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "rank_3.jsonl").symlink_to("/dev/full")  # rank 3's spool file: every write ends with ENOSPC
    assert _report_with_spool(src, tmp_path / "out", spool, monkeypatch, "2") == 1  # (two worker processes)
    err = capsys.readouterr().err
    said = (f"read, but its chromium events could not be written to {spool}/rank_3.jsonl: No space left on device; "
            "chromium_events.json lacks them: free space where it is")
    assert f"compilescope: rank 3: {said}" in err
    assert "not read" not in err and "could not be reported" not in err
    assert "compilescope: 1 rank whose chromium events could not be written: chromium_events.json lacks them" in err

    report = Landing(tmp_path / "out")
    logs = {r: src / f"dedicated_log_torch_trace_rank_{r}.log" for r in range(4)}
    three = report.ranks[3]
    # Read in full: its figures stand (its chromium events counted as its log holds them), and its report is there.
    assert three["error"] is None and three["not_written"].startswith(said)
    assert three["chromium_events"] == _chromium_records(logs[3]) > 0
    assert (tmp_path / "out" / "rank_3" / "index.html").is_file()
    assert 3 not in report.analysis["failed_ranks"]
    assert [r["not_written"] for r in report.summary["ranks"][:3]] == [None] * 3
    assert f"rank 3: {three['not_written']}" in report.summary["notes"]
    # The merged timeline holds the other ranks' events, each as its log holds them, and none of rank 3's.
    events = report.json("chromium_events.json")
    assert {e["pid"] for e in events} == {0, 1, 2}
    assert len(events) == sum(_chromium_records(logs[r]) for r in range(3))
    # The landing page marks rank 3's row (and says why in its title), and lists the note.
    row = next(line for line in report.html.splitlines() if 'href="rank_3/index.html">Rank 3</a>' in line)
    assert "events not written" in row and f'title="{said}' in row
    assert f"<li>rank 3: {said}" in report.html
    # The terminal's rank table, of the same document: rank 3's row has its figures, marked, and the note under it.
    text = report.rank_table_text(src)
    assert re.search(rf"^3 events lost +{len(three['compile_ids'])} ", text, re.M)
    assert "not read" not in text and "note: rank 3: read, but its chromium events could not be written" in text


def test_a_spool_directory_that_cannot_be_made_leaves_every_rank_read(tmp_path, monkeypatch, capsys):
    src = peer_dir("multi_rank_logs")
    (tmp_path / "file").write_text("a regular file")
    spool = tmp_path / "file" / "spool"  # under a regular file: no directory can be made there (ENOTDIR)
    assert _report_with_spool(src, tmp_path / "out", spool, monkeypatch, "1") == 1
    err = capsys.readouterr().err
    assert "not read" not in err
    report = Landing(tmp_path / "out")
    assert sorted(report.ranks) == [0, 1, 2, 3] and report.analysis["failed_ranks"] == []
    for rank, summary in report.ranks.items():
        said = (f"read, but its chromium events could not be written to {spool}/rank_{rank}.jsonl: Not a directory; "
                "chromium_events.json lacks them: make its directory writable")
        assert summary["not_written"].startswith(said) and f"compilescope: rank {rank}: {said}" in err
        assert (tmp_path / "out" / f"rank_{rank}" / "index.html").is_file()
    assert "compilescope: 4 ranks whose chromium events could not be written" in err
    assert not (tmp_path / "out" / "chromium_events.json").exists()  # no rank's events to merge
    assert json.loads((tmp_path / "out" / "multi_rank_summary.json").read_text())["ranks"][0]["error"] is None

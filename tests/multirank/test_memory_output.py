"""A multi-rank report written to memory://, a filesystem that lives in this process alone (fsspec's memory
filesystem: each worker process would have an empty one of its own)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from ..conftest import run_cli
from .conftest import Landing
from .test_executors import TORCH213_RANKS, _distributed, tree


@pytest.fixture
def memory_url():
    """A fresh memory:// directory, removed afterwards (the memory filesystem is one store for the whole process)."""
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    root = f"/compilescope-test-{uuid.uuid4().hex}"
    yield f"memory://{root}"
    if fs.exists(root):
        fs.rm(root, recursive=True)


def _copy_out(url: str, dest: Path) -> Path:
    import fsspec

    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory://")
    for path in fs.find(root):
        target = dest / path[len(root) + 1:]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fs.cat_file(path))
    return dest


def test_memory_report_with_several_jobs_is_written_in_this_process(memory_url, tmp_path):
    """-j 2 would write each rank's report (and spool its chromium events) in a worker's own memory filesystem,
    lost when the worker ends; the merge then failed. The ranks are reported here instead, and the ending says so."""
    out = f"{memory_url}/report"
    assert run_cli(TORCH213_RANKS, "--all-ranks-html", "-o", out, "--no-browser", "-j", "2") == 0
    written = Landing(_copy_out(out, tmp_path / "memory"))
    # From the raw logs: rank 0 compiled frame 0 once ("0/0"), rank 1 recompiled it ("0/0", "0/1").
    assert written.ranks[0]["compile_ids"] == ["[0/0]"]
    assert written.ranks[1]["compile_ids"] == ["[0/0]", "[0/1]"]
    assert {e["pid"] for e in written.json("chromium_events.json")} == {0, 1}
    assert (written.out / "rank_1" / "raw.log").read_bytes() == (TORCH213_RANKS / "dedicated_log_torch_trace_rank_1.log").read_bytes()
    assert not (written.out / ".compilescope-spool").exists()
    # The same report as written to a local directory by one process.
    assert run_cli(TORCH213_RANKS, "--all-ranks-html", "-o", tmp_path / "local", "--no-browser", "-j", "1") == 0
    assert tree(written.out) == tree(tmp_path / "local")


def test_memory_report_says_how_many_processes_wrote_it(memory_url, capsys):
    """The ending names the processes that did the work: one, whatever -j asked for."""
    out = f"{memory_url}/report"
    assert run_cli(TORCH213_RANKS, "--all-ranks-html", "-o", out, "--no-browser", "-j", "2") == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("Wrote ") and f" for 2 ranks to {out} in " in last and last.endswith("s (1 job)")


def test_memory_report_with_dask_is_one_line_error(memory_url, capsys):
    """dask's workers are always other processes: refused before anything is written."""
    _distributed()
    out = f"{memory_url}/report"
    assert run_cli(TORCH213_RANKS, "--all-ranks-html", "-o", out, "--no-browser", "--executor", "dask", "-j", "2") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{out} lives in this process's memory" in err and "--executor local" in err
    import fsspec

    assert not fsspec.filesystem("memory").exists(memory_url.removeprefix("memory://"))


def test_missing_spooled_events_are_named_as_what_they_are(tmp_path, capsys, monkeypatch):
    """A rank's spooled chromium events that cannot be read back are named in the error; it blamed the merged
    chromium_events.json being written ("cannot write …: no such file")."""
    import os

    from compilescope.cli import multirank

    report_log = multirank.report_log

    def report_then_lose_events(job):  # (-j 1: the ranks run in this process, so the patch reaches them)
        done = report_log(job)
        if job.rank == 1:
            os.unlink(job.events)  # as a worker out of the coordinator's reach would have left it
        return done

    monkeypatch.setattr(multirank, "report_log", report_then_lose_events)
    assert run_cli(TORCH213_RANKS, "--all-ranks-html", "-o", tmp_path / "out", "--no-browser", "-j", "1") == 2
    err = capsys.readouterr().err
    assert "cannot read a rank's spooled chromium events" in err and "rank_1.jsonl" in err
    assert "cannot write" not in err

"""`compilescope run --all-ranks-html -- torchrun ...`: a real 2-rank CPU job (gloo, localhost)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from ..conftest import run_cli, skip_or_fail
from .conftest import Landing

pytestmark = pytest.mark.torch

PROGRAM = Path(__file__).parent / "programs" / "two_ranks_gloo.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_two_ranks(tmp_path, monkeypatch, program: Path, *options: str) -> int:
    """`compilescope run OPTIONS -- torchrun` of program on 2 local ranks, its logs in tmp_path/traces and its report
    in tmp_path/out; what torch makes in the temp dir (torchrun's torchelastic_* logs, inductor's cache) in
    tmp_path/tmp, which pytest removes: in /tmp it would stay after every run."""
    # The torchrun of the environment running the tests (it comes with torch), never PATH's.
    torchrun = Path(sys.executable).parent / "torchrun"
    if not torchrun.exists():
        skip_or_fail(f"{torchrun} missing (it comes with torch==2.13.0)")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # (this process's tempfile chose its directory already)
    return run_cli("run", *options, "--no-browser", "--trace-dir", tmp_path / "traces", "-o", tmp_path / "out",
                   "--", torchrun, "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port",
                   str(_free_port()), program)


def test_two_rank_gloo_job_gets_a_landing_page_and_rank_reports(tmp_path, monkeypatch, capsys):
    assert _run_two_ranks(tmp_path, monkeypatch, PROGRAM, "--all-ranks-html") == 0
    # Once the job has ended, the terminal says what differs between its ranks (rank 1 compiles a second graph:
    # two_ranks_gloo.py), the command that says it rank by rank, then where the report is.
    lines = capsys.readouterr().out.splitlines()
    assert lines[-4:-1] == ["Between ranks:", "  WARN  Ranks compiled different sets of compile ids",
                            f"  rank by rank: compilescope summary {tmp_path / 'traces'}"], lines
    report = Landing(tmp_path / "out")
    assert sorted(report.ranks) == [0, 1]
    for rank in (0, 1):
        assert (tmp_path / "out" / f"rank_{rank}" / "index.html").exists()
        assert report.ranks[rank]["logged_rank"] is None  # file name and records agree
    assert report.ranks[0]["compile_ids"] == ["[0/0]"]
    assert report.ranks[1]["compile_ids"] == ["[0/0]", "[0/1]"]
    assert report.groups("compile_ids") == [[0], [1]]
    assert "[0/1] compiled only on rank 1" in report.html
    assert {e["pid"] for e in report.json("chromium_events.json")} == {0, 1}
    # torchrun's elastic agent made its log directory in the temp dir it was given, not in /tmp.
    made = sorted(p.name for p in (tmp_path / "tmp").iterdir())
    assert any(name.startswith("torchelastic_") for name in made), made


def test_fresh_cache_gives_each_rank_a_cache_of_its_own(tmp_path, monkeypatch):
    # Sharing one fresh cache, a rank loads the graphs another rank compiled (the real DDP job on the H100:
    # tests/data/cuda_torch211/logs/ddp_uneven_batch/, rank 1 hit 3 of rank 0's), and its log lacks their graphs.
    assert _run_two_ranks(tmp_path, monkeypatch, Path(__file__).parent / "programs" / "rank_caches.py",
                          "--fresh-cache") == 0
    caches = {f"rank {rank}": (tmp_path / f"rank_{rank}_cache.txt").read_text() for rank in (0, 1)}
    assert Path(caches["rank 0"]).name == "rank_0" and Path(caches["rank 1"]).name == "rank_1"
    assert Path(caches["rank 0"]).parent == Path(caches["rank 1"]).parent  # the one fresh cache, removed after
    assert not Path(caches["rank 0"]).parent.exists()
    # Each rank compiled its graph itself: a cache miss in each rank's log, no hit.
    report = Landing(tmp_path / "out")
    for rank in (0, 1):
        assert report.ranks[rank]["cache_hits"] == 0 and report.ranks[rank]["cache_misses"] >= 1, report.ranks[rank]

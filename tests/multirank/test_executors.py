"""--executor dask on a real dask.distributed LocalCluster (2 worker processes): the same report as --executor local.

Inputs: the peer multi-rank directories and the torch 2.13 2-rank fixture (tests/data/torch213/multi_rank).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..conftest import REPO, run_cli, skip_or_fail
from .conftest import Landing, peer_dir

TORCH213_RANKS = REPO / "tests" / "data" / "torch213" / "multi_rank"
PEER_MULTI_RANK = ["multi_rank_logs", "multi_rank_messy_input", "multi_rank_schedule", "multi_rank_runtime"]


def _distributed():
    try:
        import distributed
    except ImportError:
        skip_or_fail("dask.distributed not installed (the test extra installs it)")
    return distributed


@pytest.fixture(scope="module")
def dask_cluster():
    """One real LocalCluster of 2 worker processes for the module (a cluster takes a second or two to start)."""
    distributed = _distributed()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0") as cluster:
        yield cluster.scheduler_address


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_same_report(local: Path, dask: Path) -> None:
    """Every file, byte for byte. (No file of a multi-rank report holds the wall time of this run, so nothing is masked.)"""
    ours, theirs = tree(local), tree(dask)
    assert sorted(ours) == sorted(theirs)
    different = [name for name in ours if ours[name] != theirs[name]]
    assert different == []


def _report(src: Path, out: Path, *flags: str) -> Landing:
    rc = run_cli(src, "--all-ranks-html", "-o", out, "--no-browser", "--overwrite", *flags)
    assert rc == 0
    return Landing(out)


@pytest.mark.parametrize("name", PEER_MULTI_RANK)
def test_dask_cluster_writes_the_local_executors_report(name, dask_cluster, tmp_path):
    src = peer_dir(name)
    local = _report(src, tmp_path / "local", "-j", "2")
    dask = _report(src, tmp_path / "dask", "--executor", "dask", "--scheduler", dask_cluster)
    assert_same_report(local.out, dask.out)
    assert len(dask.ranks) == len(os.listdir(src)) - sum(1 for n in local.summary["notes"] if n.endswith("ignored"))
    assert not (dask.out / ".compilescope-spool").exists()  # the workers' chromium-event spool is cleaned up


def test_dask_local_cluster_on_torch213_two_rank_job(tmp_path, capsys):
    """Without --scheduler, compilescope starts (and stops) a LocalCluster of -j workers itself."""
    _distributed()
    local = _report(TORCH213_RANKS, tmp_path / "local", "-j", "1")
    dask = _report(TORCH213_RANKS, tmp_path / "dask", "--executor", "dask", "-j", "2")
    assert "dask: a local cluster of 2 workers" in capsys.readouterr().out
    assert_same_report(local.out, dask.out)
    # What the fixture is: rank 1 recompiled once more than rank 0, and the landing page says so.
    assert dask.ranks[0]["compile_ids"] == ["[0/0]"]
    assert dask.ranks[1]["compile_ids"] == ["[0/0]", "[0/1]"]
    assert dask.groups("compile_ids") == [[0], [1]]
    assert {e["pid"] for e in dask.json("chromium_events.json")} == {0, 1}


def test_unreadable_rank_is_one_row_on_dask(dask_cluster, tmp_path):
    src = peer_dir("multi_rank_logs")
    logs = tmp_path / "in"
    logs.mkdir()
    for rank in (0, 2):
        (logs / f"dedicated_log_torch_trace_rank_{rank}.log").write_bytes((src / f"dedicated_log_torch_trace_rank_{rank}.log").read_bytes())
    (logs / "dedicated_log_torch_trace_rank_1.log").write_bytes(b"\x00\xffnot a trace\n" * 50)
    report = _report(logs, tmp_path / "out", "--executor", "dask", "--scheduler", dask_cluster)
    assert sorted(report.ranks) == [0, 1, 2]
    assert "not a TORCH_TRACE log" in report.ranks[1]["error"]
    assert report.ranks[0]["error"] is None and (report.out / "rank_0" / "index.html").exists()


def test_unknown_scheduler_is_one_line_error(tmp_path, capsys):
    _distributed()
    rc = run_cli(TORCH213_RANKS, "--all-ranks-html", "-o", tmp_path / "out", "--no-browser", "--executor", "dask",
                 "--scheduler", "tcp://127.0.0.1:9")
    assert rc != 0
    err = capsys.readouterr().err
    assert "cannot reach the dask scheduler at tcp://127.0.0.1:9" in err and "Traceback" not in err


def test_scheduler_without_dask_executor_is_refused(tmp_path, capsys, monkeypatch):
    """Refused whether or not the log has several ranks (one log never reaches an executor), and by run too."""
    monkeypatch.chdir(tmp_path)  # where the program would write, had it run
    script = tmp_path / "train.py"
    script.write_text("open('ran', 'w').close()\n")
    flags = ["-o", tmp_path / "out", "--no-browser", "--scheduler", "tcp://127.0.0.1:9"]
    for argv in ([TORCH213_RANKS, "--all-ranks-html", *flags], [TORCH213_RANKS / "dedicated_log_torch_trace_rank_0.log", *flags],
                 [TORCH213_RANKS, "--executor", "local", *flags], ["run", "--trace-dir", tmp_path / "trace", *flags, script]):
        assert run_cli(*argv) == 2
        assert capsys.readouterr().err == "compilescope: error: --scheduler names a dask scheduler: give --executor dask\n"
    assert not (tmp_path / "out").exists() and not (tmp_path / "ran").exists() and not (tmp_path / "trace").exists()


# -- a worker that dies --------------------------------------------------------------------


def die_on_job_two(job: tuple[str, int]) -> dict:
    """A job function whose worker process dies (as if killed for memory) on job 2; every attempt is logged."""
    attempts, n = job
    with open(attempts, "a") as f:
        f.write(f"{n}\n")
    if n == 2:
        os._exit(1)
    return {"job": n}


def _lost(job: tuple[str, int], why: str) -> dict:
    return {"job": job[1], "lost": why}


@pytest.mark.parametrize("kind", ["local", "dask"])
def test_dying_worker_is_retried_once_then_reported(kind, tmp_path):
    from compilescope.cli.executors import WORKER_DIED, make_executor

    if kind == "dask":
        _distributed()
    attempts = tmp_path / "attempts"
    jobs = [(str(attempts), n) for n in range(6)]
    results = list(make_executor(kind, 2).map_ranks(die_on_job_two, jobs, lambda j: j[1], _lost))
    by_job = {r["job"]: r for r in results}
    assert sorted(by_job) == list(range(6)) and len(results) == 6  # every job answered once
    assert by_job[2] == {"job": 2, "lost": WORKER_DIED}
    assert [by_job[n] for n in (0, 1, 3, 4, 5)] == [{"job": n} for n in (0, 1, 3, 4, 5)]
    tries = attempts.read_text().split()
    assert tries.count("2") == 2  # the first attempt and one retry


def test_dask_executor_without_the_extra_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # as if compilescope[dask] was not installed
    rc = run_cli(TORCH213_RANKS, "--all-ranks-html", "-o", tmp_path / "out", "--no-browser", "--executor", "dask")
    assert rc != 0
    assert "pip install 'compilescope[dask]'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()

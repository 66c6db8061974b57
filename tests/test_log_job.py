"""One per-log worker (log_job.report_log) serves batch, multi-rank and any other executor: plain, picklable values."""

from __future__ import annotations

import argparse
import pickle

from compilescope.cli import _parser, load_command
from compilescope.cli.report_args import report_options
from compilescope.log_job import LogDone, LogJob, report_log

from .conftest import torch213


def test_a_job_and_its_result_cross_a_process_boundary(tmp_path):
    job = LogJob(str(torch213("graph_breaks.log")), str(tmp_path / "out"), name="graph_breaks")
    assert pickle.loads(pickle.dumps(job)) == job
    done = pickle.loads(pickle.dumps(report_log(job)))
    assert isinstance(done, LogDone) and done.name == "graph_breaks"
    assert done.digest is not None and done.summary is None
    assert done.digest.error is None and done.digest.graph_breaks == 3
    assert done.files == sum(1 for p in (tmp_path / "out").rglob("*") if p.is_file())


def test_the_same_worker_summarises_a_rank(tmp_path):
    done = report_log(LogJob(str(torch213("graph_breaks.log")), None, rank=3))
    assert done.digest is None and done.summary is not None
    assert done.summary.rank == 3 and done.summary.compile_ids and done.files == 0
    assert not (tmp_path / "out").exists()


def test_an_unreadable_log_is_a_result_not_an_exception(tmp_path):
    missing = str(tmp_path / "nope.log")
    assert "nope.log" in (report_log(LogJob(missing, None)).digest.error or "")
    assert report_log(LogJob(str(tmp_path), None, rank=0)).summary.error  # a directory is not a log
    assert report_log(LogJob(missing, None, rank=0)).summary.empty  # a rank that wrote nothing compiled nothing


def _namespace(argv: list[str]) -> argparse.Namespace:
    command = load_command("report")
    return _parser(command).parse_args(argv)


def test_every_report_flag_reaches_the_options():
    """One place builds ReportOptions from the flags (the multi-rank path used to drop -e)."""
    options = report_options(_namespace(["x", "-p", "-e", "-v", "--custom-header-html", "<b>h</b>"]))
    assert (options.plain_text, options.export, options.verbose, options.custom_header_html) == (True, True, True, "<b>h</b>")


def test_all_ranks_reports_keep_export(monkeypatch, tmp_path):
    from compilescope.cli import multirank

    seen = {}

    def fake_report_all_ranks(directory, out, overwrite, options, *rest):
        seen["options"] = options
        raise SystemExit(0)

    monkeypatch.setattr(multirank, "report_all_ranks", fake_report_all_ranks)
    try:
        multirank.run_all_ranks(_namespace([str(tmp_path), "--all-ranks-html", "-e", "-o", str(tmp_path / "o")]))
    except SystemExit:
        pass
    assert seen["options"].export is True

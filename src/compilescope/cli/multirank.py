"""Multi-rank reports: every rank's report under rank_<N>/, built in parallel, and a landing page.

Each rank is one job for a worker process: it reads the rank's log, writes the
rank's report into rank_<N>/ (through an OutputDir confined to that directory),
spools the rank's chromium events to a temporary file, and returns only the
rank's summary. The parent never holds a trace: memory stays bounded by one
trace per worker however many ranks the job had, and the landing page is
computed from the summaries alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..analyses.divergence import MultiRankAnalysis, analyze_ranks, multirank_json
from ..analyses.rank_summary import RankSummary
from ..errors import CompilescopeError
from ..ingest.rank_logs import RankLogs, find_rank_logs, rank_logs_of
from ..output import OutputDir
from ..render.multirank import CHROMIUM_EVENTS, LandingInfo, landing_files, merged_chromium_events
from ..render.options import ReportOptions
from ..worker import LogDone, LogJob, report_log
from .browser import open_browser
from .report_args import report_options
from .workers import default_jobs, file_size, run_jobs



# A rank's job and result are the per-log worker's (worker.py); these names say which kind they are here.
RankJob = LogJob
RankDone = LogDone


def run_rank_jobs(jobs: list[LogJob], workers: int, on_done: Callable[[LogDone], None] | None = None) -> list[LogDone]:
    """Run every rank job (each with its rank), `workers` at a time (1: in this process). Results by rank."""
    results = run_jobs(report_log, jobs, workers, lambda j: file_size(j.path), on_done)
    return sorted(results, key=lambda r: _summary(r).rank)


def _summary(done: LogDone) -> RankSummary:
    assert done.summary is not None  # a job with a rank always has one
    return done.summary


@dataclass
class MultiRankReport:
    out: str
    files: int
    summaries: list[RankSummary]
    analysis: MultiRankAnalysis
    done: list[RankDone]
    notes: list[str]
    seconds: float

    @property
    def strict_problem_count(self) -> int:
        return sum(d.problem_count for d in self.done)

    @property
    def crashed(self) -> list[RankDone]:
        return [d for d in self.done if d.crashed]


def report_all_ranks(
    directory: str,
    out: str,
    overwrite: bool = False,
    options: ReportOptions = ReportOptions(),
    jobs: int | None = None,
    strict: bool = False,
    strict_compile_id: bool = False,
    on_done: Callable[[RankDone], None] | None = None,
    logs: list[str] | None = None,
) -> MultiRankReport:
    """Write rank_<N>/ for every rank log in directory (or only those of `logs`, files in it),
    the merged chromium events and the landing page."""
    started = time.perf_counter()
    found = _rank_logs(directory, logs)
    output = OutputDir(out, overwrite, keep=[directory])
    spool = tempfile.mkdtemp(prefix="compilescope-ranks-")
    try:
        rank_jobs = [
            LogJob(
                log.path, os.path.join(output.path, f"rank_{log.rank}"), options, strict, strict_compile_id,
                rank=log.rank, events=os.path.join(spool, f"rank_{log.rank}.jsonl"),
            )
            for log in found.logs
        ]
        done = run_rank_jobs(rank_jobs, jobs or default_jobs(), on_done)
        fragments = [job.events for job in sorted(rank_jobs, key=lambda j: j.rank or 0) if job.events and os.path.exists(job.events)]
        if fragments:
            output.write(CHROMIUM_EVENTS, merged_chromium_events(fragments))
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    summaries = [_summary(d) for d in done]
    analysis = analyze_ranks(summaries)
    notes = found.notes() + _rank_notes(summaries)
    info = LandingInfo(os.path.abspath(directory), notes, bool(fragments), options.custom_header_html, jobs or default_jobs())
    for relpath, content in landing_files(summaries, analysis, info):
        output.write(relpath, content)
    files = output.files + sum(d.files for d in done)
    return MultiRankReport(output.path, files, summaries, analysis, done, notes, time.perf_counter() - started)


def summarize_directory(directory: str, jobs: int | None = None) -> dict[str, Any]:
    """Every rank's summary and the cross-rank findings of a directory of rank logs, JSON-able; writes nothing.

    For `compilescope summary --json DIR`.
    """
    found = _rank_logs(directory)
    done = run_rank_jobs([LogJob(log.path, None, rank=log.rank) for log in found.logs], jobs or default_jobs())
    summaries = [_summary(d) for d in done]
    doc = multirank_json(summaries, analyze_ranks(summaries))
    doc["notes"] = found.notes() + _rank_notes(summaries)
    return doc


def _rank_logs(directory: str, logs: list[str] | None = None) -> RankLogs:
    if logs is not None:
        found = rank_logs_of(logs)
    elif not os.path.isdir(directory):
        raise CompilescopeError(f"{directory}: --all-ranks-html needs a directory of rank logs (dedicated_log_torch_trace_rank_<N>_*.log)")
    else:
        found = find_rank_logs(directory)
    if not found.logs:
        raise CompilescopeError(f"{directory}: no rank logs in this directory (expected dedicated_log_torch_trace_rank_<N>_*.log)")
    return found


def _rank_notes(summaries: list[RankSummary]) -> list[str]:
    notes = []
    for s in summaries:
        if s.error:
            notes.append(f"rank {s.rank}: not read: {s.error}")
        elif s.empty:
            notes.append(f"rank {s.rank}: {os.path.basename(s.source)} is empty: the rank logged nothing (no report)")
        elif s.logged_rank is not None:
            notes.append(
                f"rank {s.rank}: {os.path.basename(s.source)} is named for rank {s.rank} but its records carry rank "
                f"{s.logged_rank}; shown as rank {s.rank}"
            )
    return notes


def run_all_ranks(args: argparse.Namespace, directory: str | None = None, out: str | None = None, logs: list[str] | None = None) -> int:
    """`compilescope DIR --all-ranks-html` (and `compilescope DIR` when DIR holds several ranks; `compilescope run`
    passes the logs its program wrote, in directory)."""
    if getattr(args, "latest", False):
        raise CompilescopeError("--latest reads one log; it cannot be combined with a report of all ranks (--all-ranks-html)")
    directory = directory or args.path
    options = report_options(args)
    jobs = getattr(args, "jobs", None) or default_jobs()

    def progress(d: RankDone) -> None:
        if args.verbose or _summary(d).error:
            what = f"not read: {_summary(d).error}" if _summary(d).error else f"{d.files} files"
            print(f"compilescope: rank {_summary(d).rank}: {what}", file=sys.stderr)

    result = report_all_ranks(
        directory, out or args.out, args.overwrite, options, jobs, args.strict, args.strict_compile_id, progress, logs
    )
    for note in result.notes:
        print(f"compilescope: {note}", file=sys.stderr)
    for d in result.done:
        for line in d.problems:
            print(f"rank {_summary(d).rank}: {line}", file=sys.stderr)
        if d.problem_count > len(d.problems):
            print(f"rank {_summary(d).rank}: … and {d.problem_count - len(d.problems)} more", file=sys.stderr)
    ranks = len(result.summaries)
    findings = len(result.analysis.divergences)
    print(
        f"Wrote {result.files} files for {ranks} rank(s) to {result.out} in {result.seconds:.1f}s ({jobs} job(s)); "
        f"{findings} divergence(s) between ranks"
    )
    if result.crashed:
        print(f"compilescope: {len(result.crashed)} rank(s) could not be reported (see the landing page)", file=sys.stderr)
        return 1
    if result.strict_problem_count:
        print(f"compilescope: {result.strict_problem_count} problem(s) in the rank logs (strict mode)", file=sys.stderr)
        return 1
    if not args.no_browser:
        open_browser(os.path.join(result.out, "index.html"))
    return 0

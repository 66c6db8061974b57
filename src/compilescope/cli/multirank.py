"""Multi-rank reports: every rank's report under rank_<N>/, built in parallel, and a landing page.

Each rank is one job for a worker (log_job.report_log), run by an executor (executors.py: local
processes, or a dask.distributed cluster): it reads the rank's log where it lies (a local path or a
URL), writes the rank's report into rank_<N>/ of the output location, spools the rank's chromium
events, and returns only the rank's summary. The coordinator never holds a trace: a worker's memory is
bounded by one trace, the coordinator's grows by one summary per rank, and the landing page is computed
from the summaries alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import IO, Callable, Iterator

from ..analyses.divergence import MultiRankResults, multirank_results
from ..analyses.rank_summary import RankSummary
from .. import location
from ..invisible import one_line
from ..errors import CompilescopeError
from ..ingest.rank_logs import RankLogs, find_rank_logs, rank_logs_of
from ..output import OutputDir, remove_tree, report_destination, trace_directory
from ..render.multirank import CHROMIUM_EVENTS, LandingOptions, LandingRenderer
from ..render.notices import ranks_report_lines
from ..render.options import ReportOptions
from ..wording import count, possessive
from ..log_job import LogDone, LogJob, job_size, lost_log, report_log
from .browser import open_browser
from .report_args import report_options
from .executors import LocalExecutor, RankExecutor, make_executor
from .progress import RankProgress
from .workers import default_jobs



# A rank's job and result are the per-log worker's (log_job.py); these names say which kind they are here.
RankJob = LogJob
RankDone = LogDone


def run_rank_jobs(jobs: list[LogJob], executor: RankExecutor | int, on_done: Callable[[LogDone], None] | None = None) -> list[LogDone]:
    """Run every rank job (each with its rank) on the executor (a number: that many local processes; 1: in this
    process). Results by rank. Only the workers' small results are kept: the coordinator's memory grows with the
    number of ranks by one summary each."""
    if isinstance(executor, int):
        executor = LocalExecutor(executor)
    done = []
    for result in executor.map_ranks(report_log, jobs, job_size, lost_log):
        done.append(result)
        if on_done:
            on_done(result)
    return sorted(done, key=lambda r: _summary(r).rank)


def _summary(done: LogDone) -> RankSummary:
    assert done.summary is not None  # a job with a rank always has one
    return done.summary


@dataclass
class MultiRankReport:
    out: str
    files: int
    results: MultiRankResults
    done: list[RankDone]
    seconds: float
    executor: RankExecutor  # the one that ran the ranks (memory://: this process alone, whatever -j asked for)

    @property
    def strict_problem_count(self) -> int:
        return sum(d.problem_count for d in self.done)

    @property
    def crashed(self) -> list[RankDone]:
        return [d for d in self.done if d.crashed]

    @property
    def report_not_written(self) -> list[RankDone]:
        """Ranks read whose own report could not be written (RankSummary.report_not_written)."""
        return [d for d in self.done if _summary(d).report_not_written]

    @property
    def not_written(self) -> list[RankDone]:
        """Ranks read and reported whose chromium events could not be spooled (RankSummary.not_written)."""
        return [d for d in self.done if _summary(d).not_written]


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
    executor: RankExecutor | None = None,
    on_total: Callable[[int], None] | None = None,
) -> MultiRankReport:
    """Write rank_<N>/ for every rank log in directory (or only those of `logs`, files in it),
    the merged chromium events and the landing page. directory and out may be URLs (s3://, gs://, ...)."""
    started = time.perf_counter()
    executor = _reaching(executor or LocalExecutor(jobs or default_jobs()), directory, out)
    found = _rank_logs(directory, logs)
    if on_total:
        on_total(len(found.logs))
    with _landing_output(out, overwrite, directory) as (output, out_location):
        # Workers spool each rank's chromium events where the coordinator can read them back: a local scratch
        # directory when both run here, else beside the report (the one place every worker can reach).
        shared_spool = executor.name != "local" or location.is_url(out_location)
        spool = location.join(out_location, SPOOL_DIR) if shared_spool else tempfile.mkdtemp(prefix="compilescope-ranks-")
        try:
            rank_jobs = [
                LogJob(
                    log.path, location.join(out_location, f"rank_{log.rank}"), options, strict, strict_compile_id,
                    rank=log.rank, events=location.join(spool, f"rank_{log.rank}.jsonl"), size=log.size,
                )
                for log in found.logs
            ]
            done = run_rank_jobs(rank_jobs, executor, on_done)
            with_events = {_summary(d).rank for d in done if d.events}
            fragments = [job.events for job in sorted(rank_jobs, key=lambda j: j.rank or 0) if job.events and job.rank in with_events]
            if fragments:
                output.write(CHROMIUM_EVENTS, _merged_chromium_events(fragments))
        finally:
            remove_tree(spool)
        results = multirank_results(location.absolute(directory), [_summary(d) for d in done], found.notes())
        landing = LandingOptions(bool(fragments), options.custom_header_html, executor.workers)
        for relpath, content in LandingRenderer.from_results(results, landing).render():
            output.write(relpath, content)
    files = output.files + sum(d.files for d in done)
    return MultiRankReport(out_location, files, results, done, time.perf_counter() - started, executor)


def _reaching(executor: RankExecutor, *locations: str) -> RankExecutor:
    """An executor whose workers can reach every location. memory:// lives in this process alone: a worker process
    would read an empty one and write the rank's report where no other process sees it, so the ranks then run
    here, one after another. A dask cluster's workers are always other processes: refused, in one line."""
    held = next((p for p in locations if location.process_local(p)), None)
    if held is None or (executor.name == "local" and executor.workers == 1):
        return executor
    if executor.name == "local":
        return LocalExecutor(1)
    raise CompilescopeError(f"{held} lives in this process's memory, which {possessive(executor.name)} workers (other processes) "
                            "cannot reach; use --executor local, or a location every worker can reach (a directory, s3://, ...)")


def _merged_chromium_events(fragments: list[str]) -> Iterator[bytes]:
    """One JSON array from the ranks' spooled events (one event per line, pid already = rank), streamed."""
    yield b"["
    first = True
    for path in fragments:
        with _read_spooled(path) as f:
            for line in f:
                line = line.rstrip(b"\n")
                if line:
                    yield (b"" if first else b",\n") + line
                    first = False
    yield b"]"


def _read_spooled(path: str) -> IO[bytes]:
    """A rank's spooled chromium events; one that cannot be read is named as what it is (it was blamed on the
    merged file being written)."""
    try:
        return location.open_read(path)
    except OSError as exc:
        raise CompilescopeError(f"cannot read a rank's spooled chromium events {path}: {exc.strerror or exc}") from None


SPOOL_DIR = ".compilescope-spool"  # inside the output directory while the ranks run; removed before the end


@contextmanager
def _landing_output(out: str, overwrite: bool, directory: str) -> Iterator[tuple[OutputDir, str]]:
    """(where the coordinator writes its files, where the report is). For a URL, the landing files are
    written to a local scratch directory and uploaded at the end; the ranks' reports go straight there."""
    with report_destination(out, overwrite, keep=[trace_directory(directory)]) as local:
        if not location.is_url(out):
            output = OutputDir(out, overwrite, keep=[trace_directory(directory)])
            yield output, output.path
        else:
            yield OutputDir(local, False), out.rstrip("/")


def summarize_ranks(directory: str, jobs: int | None = None, executor: RankExecutor | None = None) -> MultiRankResults:
    """Every rank's summary and the cross-rank findings of a directory of rank logs; writes nothing."""
    found = _rank_logs(directory)
    rank_jobs = [LogJob(log.path, None, rank=log.rank, size=log.size) for log in found.logs]
    done = run_rank_jobs(rank_jobs, _reaching(executor or LocalExecutor(jobs or default_jobs()), directory))
    return multirank_results(location.absolute(directory), [_summary(d) for d in done], found.notes())



def _rank_logs(directory: str, logs: list[str] | None = None) -> RankLogs:
    if logs is not None:
        found = rank_logs_of(logs)
    elif not location.is_dir(directory):
        raise CompilescopeError(f"{directory}: --all-ranks-html needs a directory of rank logs (dedicated_log_torch_trace_rank_<N>_*.log)")
    else:
        found = find_rank_logs(directory)
    if not found.logs:
        raise CompilescopeError(f"{directory}: no rank logs in this directory (expected dedicated_log_torch_trace_rank_<N>_*.log)")
    return found


def run_all_ranks(args: argparse.Namespace, directory: str | None = None, out: str | None = None,
                  logs: list[str] | None = None, typed: str | None = None) -> int:
    """`compilescope DIR --all-ranks-html` (and `compilescope DIR` when DIR holds several ranks; `compilescope run`
    passes the logs its program wrote, in directory, and typed: that directory as the user named it, or would type
    it here, which the command it prints names)."""
    if getattr(args, "latest", False):
        raise CompilescopeError("--latest reads one log; it cannot be combined with a report of all ranks (--all-ranks-html)")
    directory = directory or args.path
    # Each report links back to the page listing them.
    options = replace(report_options(args), up_url="../index.html", up_label="all ranks")
    jobs = getattr(args, "jobs", None) or default_jobs()
    executor = make_executor(getattr(args, "executor", "local"), jobs, getattr(args, "scheduler", None))
    bar = RankProgress()

    def progress(d: RankDone) -> None:
        bar.advance()
        # An unreadable rank is said once, with the notes at the end.
        if args.verbose and not _summary(d).error:
            bar.print(f"compilescope: rank {_summary(d).rank}: {d.files} files")

    try:
        result = report_all_ranks(
            directory, out or args.out, args.overwrite, options, jobs, args.strict, args.strict_compile_id, progress, logs,
            executor, bar.start,
        )
    finally:
        bar.close()
    for note in result.results.notes:
        print(f"compilescope: {one_line(note)}", file=sys.stderr)
    for d in result.done:
        for line in d.problems:
            print(f"rank {_summary(d).rank}: {line}", file=sys.stderr)
        if d.problem_count > len(d.problems):
            print(f"rank {_summary(d).rank}: … and {d.problem_count - len(d.problems)} more", file=sys.stderr)
    # What the landing page leads with (ranks that crashed, then what differs between the ranks), as a report of one
    # log says its findings, then what was written where.
    index = None if location.is_url(result.out) else os.path.join(result.out, "index.html")  # (no page here to open)
    ran = result.executor
    print("\n".join(ranks_report_lines(result.results, typed or directory, result.files, result.out, index, result.seconds,
                                        ran.name, ran.workers, getattr(ran, "scheduler", None))))
    if result.crashed:
        print(f"compilescope: {count(len(result.crashed), 'rank')} could not be reported (see the landing page)", file=sys.stderr)
        return 1
    if result.report_not_written:
        # The notes above say which rank, where and why: its figures are on the landing page, its own report is not.
        print(f"compilescope: {count(len(result.report_not_written), 'rank')} whose report could not be written "
              "(see above)", file=sys.stderr)
        return 1
    if result.not_written:
        # The notes above say which rank, where and why: the report is whole but for the merged timeline.
        print(f"compilescope: {count(len(result.not_written), 'rank')} whose chromium events could not be written: "
              f"{CHROMIUM_EVENTS} lacks them (see above)", file=sys.stderr)
        return 1
    if result.strict_problem_count:
        print(f"compilescope: {count(result.strict_problem_count, 'problem')} in the rank logs (strict mode)", file=sys.stderr)
        return 1
    if not args.no_browser and not location.is_url(result.out):
        open_browser(os.path.join(result.out, "index.html"))
    return 0

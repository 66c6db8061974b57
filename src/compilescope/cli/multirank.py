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
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import orjson

from ..analyses import analyze
from ..analyses.divergence import MultiRankAnalysis, analyze_ranks, collectives_parity, multirank_json
from ..analyses.rank_summary import RankSummary, empty_rank, failed_rank, summarize_rank
from .. import location
from ..errors import CompilescopeError
from ..ingest.rank_logs import RankLogs, find_rank_logs, rank_logs_of
from ..ingest.reader import ReadOptions, read_trace
from ..render.multirank import CHROMIUM_EVENTS, PARITY_JSON, LandingInfo, landing_files, merged_chromium_events, rank_parity_json
from ..render.options import ReportOptions
from .output import OutputDir
from .executors import LocalExecutor, RankExecutor, make_executor
from .progress import RankProgress
from .workers import default_jobs, peak_rss_mb



@dataclass(frozen=True)
class RankJob:
    rank: int
    path: str
    out: str | None  # the rank's report directory; None: summarise only
    events: str | None  # where to spool the rank's chromium events (pid = rank); None: not wanted
    options: ReportOptions = ReportOptions()
    strict: bool = False
    strict_compile_id: bool = False
    size: int = -1  # bytes, from the directory listing (-1: not listed; asked of the file)


@dataclass
class RankDone:
    summary: RankSummary
    files: int = 0
    events: int = 0
    problems: list[str] = field(default_factory=list)  # strict-mode problems, "line N: category: message"
    problem_count: int = 0
    crashed: bool = False  # an unexpected error, not an unreadable log
    cpu_s: float = 0.0  # CPU time the rank took in its worker
    worker_peak_mb: float = 0.0  # peak memory of the worker process so far (bounded: one trace at a time)


def process_rank(job: RankJob) -> dict[str, Any]:
    """Worker: one rank, start to end. Returns a small dict (pickled back to the parent)."""
    started = time.process_time()
    done = _process_rank(job)
    done["cpu_s"] = time.process_time() - started
    done["worker_peak_mb"] = peak_rss_mb()
    return done


def _process_rank(job: RankJob) -> dict[str, Any]:
    from .report import problems_for_parent, strict_problems, write_report  # here, so that report.py may import this module

    if _job_size(job) == 0:
        # A rank that logged nothing is a finding (it compiled nothing), not an error.
        return {"summary": empty_rank(job.rank, location.absolute(job.path)).to_json()}
    try:
        trace = read_trace(job.path, ReadOptions())
    except CompilescopeError as exc:
        return {"summary": failed_rank(job.rank, location.absolute(job.path), str(exc)).to_json()}
    except Exception as exc:  # noqa: BLE001 - e.g. a remote read failing midway: this rank's row, not the whole job
        return _lost_rank(job, f"{type(exc).__name__}: {exc}")
    try:
        with trace:
            results = analyze(trace)
            summary = summarize_rank(trace, results, job.rank)
            done: dict[str, Any] = {"summary": summary.to_json(), "files": 0, "events": 0}
            if job.out is not None:
                with _written_at(job.out) as local_out:
                    output = write_report(trace, local_out, False, job.options)
                    output.write(PARITY_JSON, rank_parity_json(collectives_parity([summary])))
                done["files"] = output.files
            if job.events is not None and len(trace.chromium_events):
                done["events"] = _spool_events(trace.chromium_events, job.rank, job.events)
            done.update(problems_for_parent(strict_problems(trace, job.strict, job.strict_compile_id)))
            return done
    except CompilescopeError as exc:
        return {"summary": failed_rank(job.rank, trace.source, str(exc)).to_json()}
    except Exception as exc:  # noqa: BLE001 - one broken rank must not lose the other ranks' reports
        return {"summary": failed_rank(job.rank, trace.source, f"{type(exc).__name__}: {exc}").to_json(), "crashed": True}


def _job_size(job: RankJob) -> int:
    return job.size if job.size >= 0 else location.size(job.path)


def _lost_rank(job: RankJob, why: str) -> dict[str, Any]:
    """The row of a rank whose worker died: an executor's stand-in for process_rank's result."""
    return {"summary": failed_rank(job.rank, location.absolute(job.path), why).to_json(), "crashed": True}


@contextmanager
def _written_at(out: str) -> Iterator[str]:
    """A local directory to write a report into: `out` itself, or (out is a URL) a scratch directory
    uploaded to `out` afterwards and removed; disk use is one rank's report."""
    if not location.is_url(out):
        yield out
        return
    scratch = tempfile.mkdtemp(prefix="compilescope-rank-")
    try:
        yield os.path.join(scratch, "report")
        location.upload_dir(os.path.join(scratch, "report"), out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _spool_events(events, rank: int, path: str) -> int:
    """The rank's chromium events, one JSON object per line, each with pid = rank (one process per rank in Perfetto)."""
    n = 0
    with location.open_write(path) as f:
        for event in events:
            if isinstance(event, dict):
                event["pid"] = rank
            f.write(orjson.dumps(event) + b"\n")
            n += 1
    return n


def _done(raw: dict[str, Any]) -> RankDone:
    return RankDone(
        summary=RankSummary.from_json(raw["summary"]),
        files=raw.get("files", 0),
        events=raw.get("events", 0),
        problems=raw.get("problems", []),
        problem_count=raw.get("problem_count", 0),
        crashed=raw.get("crashed", False),
        cpu_s=raw.get("cpu_s", 0.0),
        worker_peak_mb=raw.get("worker_peak_mb", 0.0),
    )


def run_rank_jobs(jobs: list[RankJob], executor: RankExecutor | int, on_done: Callable[[RankDone], None] | None = None) -> list[RankDone]:
    """Run every rank job on the executor (a number: that many local processes; 1: in this process). Results by rank.

    Only the summaries are kept here: the coordinator's memory grows with the number of ranks by a summary each."""
    if isinstance(executor, int):
        executor = LocalExecutor(executor)
    done = []
    for raw in executor.map_ranks(process_rank, jobs, _job_size, _lost_rank):
        d = _done(raw)
        done.append(d)
        if on_done:
            on_done(d)
    return sorted(done, key=lambda r: r.summary.rank)


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
    executor: RankExecutor | None = None,
    on_total: Callable[[int], None] | None = None,
) -> MultiRankReport:
    """Write rank_<N>/ for every rank log in directory (or only those of `logs`, files in it),
    the merged chromium events and the landing page. directory and out may be URLs (s3://, gs://, ...)."""
    started = time.perf_counter()
    executor = executor or LocalExecutor(jobs or default_jobs())
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
                RankJob(
                    log.rank, log.path, location.join(out_location, f"rank_{log.rank}"), location.join(spool, f"rank_{log.rank}.jsonl"),
                    options, strict, strict_compile_id, log.size,
                )
                for log in found.logs
            ]
            done = run_rank_jobs(rank_jobs, executor, on_done)
            with_events = {d.summary.rank for d in done if d.events}
            fragments = [job.events for job in sorted(rank_jobs, key=lambda j: j.rank) if job.events and job.rank in with_events]
            if fragments:
                output.write(CHROMIUM_EVENTS, merged_chromium_events(fragments, location.open_read))
        finally:
            location.remove_tree(spool)
        summaries = [d.summary for d in done]
        analysis = analyze_ranks(summaries)
        notes = found.notes() + _rank_notes(summaries)
        info = LandingInfo(location.absolute(directory), notes, bool(fragments), options.custom_header_html, executor.workers)
        for relpath, content in landing_files(summaries, analysis, info):
            output.write(relpath, content)
    files = output.files + sum(d.files for d in done)
    return MultiRankReport(out_location, files, summaries, analysis, done, notes, time.perf_counter() - started)


SPOOL_DIR = ".compilescope-spool"  # inside the output directory while the ranks run; removed before the end


@contextmanager
def _landing_output(out: str, overwrite: bool, directory: str) -> Iterator[tuple[OutputDir, str]]:
    """(where the coordinator writes its files, where the report is). For a URL, the landing files are
    written to a local scratch directory and uploaded at the end; the ranks' reports go straight there."""
    if not location.is_url(out):
        output = OutputDir(out, overwrite, keep=[] if location.is_url(directory) else [directory])
        yield output, output.path
        return
    location.prepare_remote_output(out, overwrite)
    scratch = tempfile.mkdtemp(prefix="compilescope-landing-")
    try:
        output = OutputDir(os.path.join(scratch, "report"), False)
        yield output, out.rstrip("/")
        location.upload_dir(output.path, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def summarize_directory(directory: str, jobs: int | None = None, executor: RankExecutor | None = None) -> dict[str, Any]:
    """Every rank's summary and the cross-rank findings of a directory of rank logs, JSON-able; writes nothing.

    For `compilescope summary --json DIR`.
    """
    found = _rank_logs(directory)
    rank_jobs = [RankJob(log.rank, log.path, None, None, size=log.size) for log in found.logs]
    done = run_rank_jobs(rank_jobs, executor or LocalExecutor(jobs or default_jobs()))
    summaries = [d.summary for d in done]
    doc = multirank_json(summaries, analyze_ranks(summaries))
    doc["notes"] = found.notes() + _rank_notes(summaries)
    return doc


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
    from .report import _open_browser

    if getattr(args, "latest", False):
        raise CompilescopeError("--latest reads one log; it cannot be combined with a report of all ranks (--all-ranks-html)")
    directory = directory or args.path
    options = ReportOptions(plain_text=args.plain_text, custom_header_html=args.custom_header_html, verbose=args.verbose)
    jobs = getattr(args, "jobs", None) or default_jobs()
    executor = make_executor(getattr(args, "executor", "local"), jobs, getattr(args, "scheduler", None))
    bar = RankProgress()

    def progress(d: RankDone) -> None:
        bar.advance()
        if args.verbose or d.summary.error:
            what = f"not read: {d.summary.error}" if d.summary.error else f"{d.files} files"
            bar.print(f"compilescope: rank {d.summary.rank}: {what}")

    try:
        result = report_all_ranks(
            directory, out or args.out, args.overwrite, options, jobs, args.strict, args.strict_compile_id, progress, logs,
            executor, bar.start,
        )
    finally:
        bar.close()
    for note in result.notes:
        print(f"compilescope: {note}", file=sys.stderr)
    for d in result.done:
        for line in d.problems:
            print(f"rank {d.summary.rank}: {line}", file=sys.stderr)
        if d.problem_count > len(d.problems):
            print(f"rank {d.summary.rank}: … and {d.problem_count - len(d.problems)} more", file=sys.stderr)
    ranks = len(result.summaries)
    findings = len(result.analysis.divergences)
    print(
        f"Wrote {result.files} files for {ranks} rank(s) to {result.out} in {result.seconds:.1f}s "
        f"({_executor_words(executor)}); "
        f"{findings} divergence(s) between ranks"
    )
    if result.crashed:
        print(f"compilescope: {len(result.crashed)} rank(s) could not be reported (see the landing page)", file=sys.stderr)
        return 1
    if result.strict_problem_count:
        print(f"compilescope: {result.strict_problem_count} problem(s) in the rank logs (strict mode)", file=sys.stderr)
        return 1
    if not args.no_browser and not location.is_url(result.out):
        _open_browser(os.path.join(result.out, "index.html"))
    return 0


def _executor_words(executor: RankExecutor) -> str:
    if executor.name == "local":
        return f"{executor.workers} job(s)"
    where = getattr(executor, "scheduler", None) or f"a local cluster of {executor.workers} worker(s)"
    return f"{executor.name}: {where}"

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
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from ..analyses import analyze
from ..analyses.divergence import MultiRankAnalysis, analyze_ranks, collectives_parity, multirank_json
from ..analyses.rank_summary import RankSummary, empty_rank, failed_rank, summarize_rank
from ..errors import CompilescopeError
from ..ingest.rank_logs import RankLogs, find_rank_logs, rank_logs_of
from ..ingest.reader import ReadOptions, read_trace
from ..render.multirank import CHROMIUM_EVENTS, PARITY_JSON, LandingInfo, landing_files, merged_chromium_events, rank_parity_json
from ..render.options import ReportOptions
from .output import OutputDir
from .workers import default_jobs, file_size, peak_rss_mb, run_jobs



@dataclass(frozen=True)
class RankJob:
    rank: int
    path: str
    out: str | None  # the rank's report directory; None: summarise only
    events: str | None  # where to spool the rank's chromium events (pid = rank); None: not wanted
    options: ReportOptions = ReportOptions()
    strict: bool = False
    strict_compile_id: bool = False


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

    if file_size(job.path) == 0:
        # A rank that logged nothing is a finding (it compiled nothing), not an error.
        return {"summary": empty_rank(job.rank, os.path.abspath(job.path)).to_json()}
    try:
        trace = read_trace(job.path, ReadOptions())
    except CompilescopeError as exc:
        return {"summary": failed_rank(job.rank, os.path.abspath(job.path), str(exc)).to_json()}
    try:
        with trace:
            results = analyze(trace)
            summary = summarize_rank(trace, results, job.rank)
            done: dict[str, Any] = {"summary": summary.to_json(), "files": 0, "events": 0}
            if job.out is not None:
                output = write_report(trace, job.out, False, job.options)
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


def _spool_events(events, rank: int, path: str) -> int:
    """The rank's chromium events, one JSON object per line, each with pid = rank (one process per rank in Perfetto)."""
    n = 0
    with open(path, "wb") as f:
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


def run_rank_jobs(jobs: list[RankJob], workers: int, on_done: Callable[[RankDone], None] | None = None) -> list[RankDone]:
    """Run every rank job, `workers` at a time (1: in this process). Results by rank."""
    results = run_jobs(process_rank, jobs, workers, lambda j: file_size(j.path),
                       (lambda raw: on_done(_done(raw))) if on_done else None)
    return sorted((_done(raw) for raw in results), key=lambda r: r.summary.rank)


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
            RankJob(
                log.rank, log.path, os.path.join(output.path, f"rank_{log.rank}"), os.path.join(spool, f"rank_{log.rank}.jsonl"),
                options, strict, strict_compile_id,
            )
            for log in found.logs
        ]
        done = run_rank_jobs(rank_jobs, jobs or default_jobs(), on_done)
        fragments = [job.events for job in sorted(rank_jobs, key=lambda j: j.rank) if job.events and os.path.exists(job.events)]
        if fragments:
            output.write(CHROMIUM_EVENTS, merged_chromium_events(fragments))
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    summaries = [d.summary for d in done]
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
    done = run_rank_jobs([RankJob(log.rank, log.path, None, None) for log in found.logs], jobs or default_jobs())
    summaries = [d.summary for d in done]
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
    from .report import _open_browser

    if getattr(args, "latest", False):
        raise CompilescopeError("--latest reads one log; it cannot be combined with a report of all ranks (--all-ranks-html)")
    directory = directory or args.path
    options = ReportOptions(plain_text=args.plain_text, custom_header_html=args.custom_header_html, verbose=args.verbose,
                            up_url="../index.html", up_label="all ranks")
    jobs = getattr(args, "jobs", None) or default_jobs()

    def progress(d: RankDone) -> None:
        if args.verbose or d.summary.error:
            what = f"not read: {d.summary.error}" if d.summary.error else f"{d.files} files"
            print(f"compilescope: rank {d.summary.rank}: {what}", file=sys.stderr)

    result = report_all_ranks(
        directory, out or args.out, args.overwrite, options, jobs, args.strict, args.strict_compile_id, progress, logs
    )
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
        _open_browser(os.path.join(result.out, "index.html"))
    return 0

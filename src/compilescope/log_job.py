"""One log, start to end, as a job: read it, analyse it, write its report, send back a small summary.

The per-log worker of a batch of logs (cli/batch.py), of every rank of a
multi-rank job (cli/multirank.py) and of any other executor of the per-log map:
`report_log` is a plain module-level function; its job (LogJob) and its result
(LogDone) are small picklable values, so any process pool or cluster can run it.
The parent never holds a trace. A single report does not come here: it writes
through report_writer.py, as the worker does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING


from . import location
from .analyses.analyze import analyze
from .errors import CompilescopeError
from .ingest.reader import ReadOptions, read_trace
from .output import spool_events, written_at
from .render.options import ReportOptions
from .report_writer import strict_problems, write_report

if TYPE_CHECKING:
    from .analyses.log_digest import LogDigest
    from .analyses.rank_summary import RankSummary

MAX_PROBLEMS_SHOWN = 20  # strict-mode problem lines a worker sends back per log


@dataclass(frozen=True)
class LogJob:
    """What a worker needs to know about one log: small and picklable."""

    path: str
    out: str | None  # the log's report directory; None: summarise only
    options: ReportOptions = ReportOptions()
    strict: bool = False
    strict_compile_id: bool = False
    name: str = ""  # a batch's name for the log (its directory under the batch's output)
    rank: int | None = None  # a rank of a multi-rank job: summarised as a RankSummary (else a LogDigest)
    events: str | None = None  # where to spool the log's chromium events (pid = rank); None: not wanted
    size: int = -1  # bytes, from the directory listing (-1: not listed; asked of the file)


@dataclass
class LogDone:
    """What a worker sends back about one log: small and picklable (a few KB however big the log)."""

    name: str
    digest: LogDigest | None = None  # for a log of a batch
    summary: RankSummary | None = None  # for a rank
    files: int = 0  # report files written; 0: no report (the log could not be read, or none was asked for)
    events: int = 0  # chromium events spooled
    problems: list[str] = field(default_factory=list)  # strict-mode problems, "line N: category: message" (the first ones)
    problem_count: int = 0
    crashed: bool = False  # an unexpected error, not an unreadable log
    cpu_s: float = 0.0  # CPU time the log took in its worker
    worker_peak_mb: float = 0.0  # peak memory of the worker process so far (bounded: one trace at a time)


def report_log(job: LogJob) -> LogDone:
    """Worker: one log, start to end. Never raises for a bad log: the error is in the result's digest or summary."""
    started = time.process_time()
    done = _report_log(job)
    done.cpu_s = time.process_time() - started
    done.worker_peak_mb = peak_rss_mb()
    return done


def _report_log(job: LogJob) -> LogDone:
    # Batches and ranks only (imported here: a single report's start-up does not pay for them).
    from .analyses.divergence import collectives_parity
    from .analyses.log_digest import digest_log
    from .analyses.rank_summary import empty_rank, summarize_rank
    from .render.multirank import CHROMIUM_EVENTS, PARITY_JSON, rank_parity_json

    if job.rank is not None and job_size(job) == 0:
        # A rank that logged nothing is a finding (it compiled nothing), not an error.
        return LogDone(job.name, summary=empty_rank(job.rank, location.absolute(job.path)))
    try:
        trace = read_trace(job.path, ReadOptions())
    except CompilescopeError as exc:
        return _failed(job, location.absolute(job.path), str(exc))
    except Exception as exc:  # noqa: BLE001 - e.g. a remote read failing midway: this log's row, not the whole job
        return lost_log(job, f"{type(exc).__name__}: {exc}")
    try:
        with trace:
            results = analyze(trace)
            done = LogDone(job.name)
            if job.rank is None:
                done.digest = digest_log(results)
            else:
                done.summary = summarize_rank(results, job.rank)
            if job.out is not None:
                try:
                    with written_at(job.out) as local_out:
                        # job.out lies in the fresh directory of this run: what is there already was left by an
                        # attempt whose worker died (the executor runs the job again), so it is replaced.
                        output = write_report(trace, local_out, True, job.options, results)
                        if done.summary is not None:
                            output.write(PARITY_JSON, rank_parity_json(collectives_parity([done.summary])))
                    done.files = output.files
                except (CompilescopeError, OSError) as exc:  # the log was read: a report not written is not that
                    if done.summary is not None:
                        done.summary.report_not_written = write_failure(
                            "its report", job.out, exc, lacking="its figures are in the rank table only")
                    elif done.digest is not None:
                        done.digest.report_not_written = write_failure(
                            "its report", job.out, exc, lacking="its figures are in the table of logs only")
            if job.events is not None and len(trace.chromium_events):
                try:
                    done.events = spool_events(trace.chromium_events, job.rank, job.events)
                except Exception as exc:  # noqa: BLE001 - the rank was read: a spool that cannot be written is not that
                    if done.summary is None:
                        raise
                    done.summary.not_written = write_failure(
                        "its chromium events", job.events, exc, lacking=f"{CHROMIUM_EVENTS} lacks them", scratch=True)
            problems = strict_problems(trace, job.strict, job.strict_compile_id)
            done.problem_count = len(problems)
            done.problems = [str(p) for p in problems[:MAX_PROBLEMS_SHOWN]]
            return done
    except CompilescopeError as exc:
        return _failed(job, trace.source, str(exc))
    except Exception as exc:  # noqa: BLE001 - one broken log must not lose the other logs' reports
        done = _failed(job, trace.source, f"{type(exc).__name__}: {exc}")
        done.crashed = True
        return done


def lost_log(job: LogJob, why: str) -> LogDone:
    """The result of a log whose worker failed or died: an executor's stand-in for report_log's."""
    done = _failed(job, location.absolute(job.path), why)
    done.crashed = True
    return done


def job_size(job: LogJob) -> int:
    return job.size if job.size >= 0 else file_size(job.path)


def _failed(job: LogJob, source: str, error: str) -> LogDone:
    if job.rank is None:
        from .analyses.log_digest import unreadable_log

        return LogDone(job.name, digest=unreadable_log(source, error))
    from .analyses.rank_summary import failed_rank

    return LogDone(job.name, summary=failed_rank(job.rank, source, error))


def write_failure(what: str, path: str, exc: BaseException, lacking: str = "", scratch: bool = False) -> str:
    """Something a rank that was read could not write (its report, its spooled chromium events), in one line: where,
    why, what lacks it and what to do (RankSummary.report_not_written, .not_written). scratch: path lies in a
    scratch directory of this run's own, which TMPDIR moves."""
    import errno
    import tempfile

    cause = _os_error(exc)
    if isinstance(exc, CompilescopeError):
        why = str(exc)  # it names the file or directory that failed, under path
    elif cause is not None and cause.strerror:
        why = cause.strerror
    else:
        why = f"{type(exc).__name__}: {exc}"
    full = cause is not None and cause.errno in (errno.ENOSPC, errno.EDQUOT)
    fix = "free space where it is" if full else "make its directory writable"
    if scratch and not location.is_url(path) and path.startswith(tempfile.gettempdir().rstrip("/") + "/"):
        fix += " (or set TMPDIR to another directory)"
    lacks = f"; {lacking}" if lacking else ""
    # The rest of the report is there by then: writing it to the same place again needs --overwrite.
    return f"read, but {what} could not be written to {path}: {why}{lacks}: {fix}, and run again with --overwrite"


def _os_error(exc: BaseException) -> OSError | None:
    """The system's error behind exc: itself, or the one it was raised from (a CompilescopeError raised `from None`
    still holds it as its context)."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:  # (a chain can loop back on itself)
        if isinstance(link, OSError):
            return link
        chain.append(link)
        link = link.__cause__ or link.__context__
    return None


def file_size(path: str) -> int:
    """Bytes (a local path or a URL); 0 when the file cannot be found."""
    return location.size(path)


def peak_rss_mb() -> float:
    """Peak memory of this process so far."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return 0.0
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KB on Linux

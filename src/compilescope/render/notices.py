"""Short notices for the terminal, as plain text: kept apart from terminal.py so that writing a report never
imports rich (about 0.1 s of a small log's start-up)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Sequence

from ..analyses.insights import Insights
from ..analyses.unread import Unread
from ..invisible import one_line
from ..wording import count

if TYPE_CHECKING:  # (a report of one log does not import the ranks' analyses: start-up time)
    from ..analyses.divergence import MultiRankResults

SEVERITY_LABELS = {"error": "ERROR", "warning": "WARN", "info": "INFO"}  # as the summary's panel and the page say them
MAX_FINDINGS = 3  # the report's findings printed under it; `compilescope summary` has them all


def unread_line(u: Unread, source: str, covers: str, side: str = "") -> str | None:
    """One line for stderr when part of the log was not read: how much, and why. None when all of it was.
    side: which of the runs compared it is ("A: rank 3"), when there are two."""
    if not u:
        return None
    where = f"{side} ({source.rsplit('/', 1)[-1]})" if side else source.rsplit('/', 1)[-1]
    return f"compilescope: warning: {where}: {u.describe()}. The {covers} shows what was read."


NOTHING_TO_FIX = "Nothing to fix: no errors, graph breaks or recompiles in this log."


def findings_lines(ins: Insights, log: str | None, profiles: Sequence[str] = ()) -> list[str]:
    """What to fix first, under a report written: the titles of the report's first findings, and the command
    that says what to do about each (log None: a saved analysis whose log is not here, which the report alone
    explains). Without it, a report written where no browser opens said only how many files it wrote, even of a
    program that crashed. profiles: the --profile files the report read, given to that command too (without
    them its summary lacks the runtime findings printed here)."""
    if not ins.findings:
        return [NOTHING_TO_FIX]
    words = [log, *(word for path in profiles for word in ("--profile", path))] if log is not None else []
    hint = (f"compilescope summary {one_line(shlex.join(words))}" if log is not None
            else "the report's Insights (its log is not here for compilescope summary)")
    return lead_lines("Fix first:", [(f.severity, f.title) for f in ins.findings], f"what to do about each: {hint}")


def report_lines(ins: Insights | None, log: str | None, files: int, where: str, index: str | None,
                 profiles: Sequence[str] = ()) -> list[str]:
    """How every command that writes the report of one log ends (compilescope LOG, report --load, run): what to fix
    first (findings_lines), then wrote_line. run printed a rich panel of its own instead, and no file count."""
    lines = findings_lines(ins, log, profiles) if ins is not None else []
    return [*lines, wrote_line(files, where, index)]


def logs_report_lines(logs: list[tuple[str, list[tuple[str, str]], str | None]], files: int, where: str, index: str | None,
                      seconds: float, jobs: int) -> list[str]:
    """How the reports of several logs end (compilescope LOG LOG ...), as one log's does: each log's first finding
    (logs_findings_lines), then wrote_line, with how many logs, how long and how many processes (jobs: -j)."""
    shared = f"in {seconds:.1f}s ({processes_words('local', jobs, len(logs))})"
    return [*logs_findings_lines(logs), wrote_line(files, where, index, count(len(logs), "log"), shared)]


def ranks_report_lines(results: MultiRankResults, directory: str, files: int, where: str, index: str | None,
                       seconds: float, executor: str, workers: int, scheduler: str | None = None) -> list[str]:
    """How the report of several ranks ends, as one log's does: what the landing page leads with
    (ranks_findings_lines), then wrote_line, with how many ranks, how long, and where they were read (executor:
    local or dask; workers: -j). Its last line also counted the divergences, which the lines above it say."""
    ranks = len(results.summaries)
    shared = f"in {seconds:.1f}s ({processes_words(executor, workers, ranks, scheduler)})"
    return [*ranks_findings_lines(results, directory), wrote_line(files, where, index, count(ranks, "rank"), shared)]


def wrote_line(files: int, where: str, index: str | None, of: str = "", shared: str = "") -> str:
    """The last line of every report's ending: how many files it wrote where, and the page to open (index None:
    the report went behind a URL, with no page here to open). Several reports: of what (of: "2 logs") and how the
    work was shared (shared: "in 0.4s (2 jobs)")."""
    several = f" for {of}" if of else ""
    took = f" {shared}" if shared else ""
    opened = f"; open {index}" if index is not None else ""
    return f"Wrote {count(files, 'file')}{several} to {where}{took}{opened}"


def processes_words(executor: str, workers: int, reports: int, scheduler: str | None = None) -> str:
    """Who wrote several reports: local processes (one per report at most, whatever -j asked for), or a dask
    cluster (the scheduler given, else a local one of -j workers)."""
    if executor == "local":
        return count(max(1, min(workers, reports)), "job")
    where = scheduler or f"a local cluster of {count(workers, 'worker')}"
    return f"{executor}: {where}"


def lead_lines(heading: str, findings: list[tuple[str, str]], hint: str) -> list[str]:
    """heading, the first MAX_FINDINGS of findings ((severity, title), most urgent first) labelled as the summary
    labels them, and the hint, after how many more there are. findings: one at least."""
    shown = findings[:MAX_FINDINGS]
    width = max(len(SEVERITY_LABELS[severity]) for severity, _ in shown)
    lines = [heading] + [f"  {SEVERITY_LABELS[severity]:<{width}}  {one_line(title)}" for severity, title in shown]
    more = len(findings) - MAX_FINDINGS
    lines.append(f"  {f'… {more} more; ' if more > 0 else ''}{hint}")
    return lines


def logs_findings_lines(logs: list[tuple[str, list[tuple[str, str]], str | None]]) -> list[str]:
    """Under the reports of several logs: a line per log (name, its findings most urgent first, and what to say in
    their place where it has no report: not read, its report not written; None: it has one) with its most urgent
    finding as the summary labels it, and the command that says what to do."""
    width = max(len(one_line(name)) for name, _, _ in logs)
    label = max((len(SEVERITY_LABELS[found[0][0]]) for _, found, _ in logs if found), default=0)
    lines = ["Fix first, in each log:"]
    for name, found, instead in logs:
        if instead is not None:
            said = instead
        elif found:
            said = f"{SEVERITY_LABELS[found[0][0]]:<{label}}  {one_line(found[0][1])}"
        else:
            said = "nothing to fix"
        lines.append(f"  {one_line(name):<{width}}  {said}")
    lines.append("  what to do about each: compilescope summary LOG")
    return lines


def ranks_findings_lines(results: MultiRankResults, directory: str) -> list[str]:
    """Under the report of several ranks, what its landing page leads with: the ranks that crashed, then what
    differs between the ranks, and the command that says it rank by rank."""
    found = [("error", ending) for ending in results.crash_endings]
    found += [("warning", results.analysis.ran_eagerly)] if results.analysis.ran_eagerly else []
    found += [("warning", d.title) for d in results.analysis.divergences]
    if not found:
        # Not "none crashed": a log records a crash (native, or an uncaught exception) only where run or capture()
        # watched for one; a log of a plain TORCH_TRACE run that just ends says nothing of why.
        return ["All ranks agree: no rank's log records a crash, and nothing compared differs between them."]
    return lead_lines("Between ranks:", found, f"rank by rank: compilescope summary {one_line(shlex.quote(directory))}")

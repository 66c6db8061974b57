"""Short notices for the terminal, as plain text: kept apart from terminal.py so that writing a report never
imports rich (about 0.1 s of a small log's start-up)."""

from __future__ import annotations

import shlex

from ..analyses.insights import Insights
from ..analyses.unread import Unread
from ..invisible import one_line

SEVERITY_LABELS = {"error": "ERROR", "warning": "WARN", "info": "INFO"}  # as the summary's panel and the page say them
MAX_FINDINGS = 3  # the report's findings printed under it; `compilescope summary` has them all


def unread_line(u: Unread, source: str, covers: str, side: str = "") -> str | None:
    """One line for stderr when part of the log was not read: how much, and why. None when all of it was.
    side: which of the runs compared it is ("A: rank 3"), when there are two."""
    if not u:
        return None
    where = f"{side} ({source.rsplit('/', 1)[-1]})" if side else source.rsplit('/', 1)[-1]
    return f"compilescope: warning: {where}: {u.describe()}. The {covers} shows what was read."


def findings_lines(ins: Insights, log: str) -> list[str]:
    """What to fix first, under a report written: the titles of the report's first findings, and the command
    that says what to do about each. Without it, a report written where no browser opens said only how many
    files it wrote, even of a program that crashed."""
    if not ins.findings:
        return ["Nothing to fix: no errors, graph breaks or recompiles in this log."]
    width = max(len(SEVERITY_LABELS[f.severity]) for f in ins.findings[:MAX_FINDINGS])
    lines = ["Fix first:"] + [f"  {SEVERITY_LABELS[f.severity]:<{width}}  {one_line(f.title)}"
                              for f in ins.findings[:MAX_FINDINGS]]
    more = len(ins.findings) - MAX_FINDINGS
    lines.append(f"  {f'… {more} more; ' if more > 0 else ''}what to do about each: compilescope summary {shlex.quote(log)}")
    return lines

"""One-line notices for stderr, as plain text: kept apart from terminal.py so that writing a report never
imports rich (about 0.1 s of a small log's start-up)."""

from __future__ import annotations

from ..analyses.unread import Unread


def unread_line(u: Unread, source: str, covers: str, side: str = "") -> str | None:
    """One line for stderr when part of the log was not read: how much, and why. None when all of it was.
    side: which of the runs compared it is ("A: rank 3"), when there are two."""
    if not u:
        return None
    where = f"{side} ({source.rsplit('/', 1)[-1]})" if side else source.rsplit('/', 1)[-1]
    return f"compilescope: warning: {where}: {u.describe()}. The {covers} shows what was read."

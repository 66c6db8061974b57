"""One-line notices for stderr, as plain text: kept apart from terminal.py so that writing a report never
imports rich (about 0.1 s of a small log's start-up)."""

from __future__ import annotations

from ..analyses.unread import Unread


def unread_line(u: Unread, source: str, covers: str) -> str | None:
    """One line for stderr when part of the log was not read: how much, and why. None when all of it was."""
    if not u:
        return None
    return f"compilescope: warning: {source.rsplit('/', 1)[-1]}: {u.describe()}. The {covers} shows what was read."

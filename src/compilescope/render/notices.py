"""One-line notices for stderr, as plain text: kept apart from terminal.py so that writing a report never
imports rich (about 0.1 s of a small log's start-up)."""

from __future__ import annotations

from ..analyses.unread import SKIPPED, Unread
from ..wording import count


def unread_line(u: Unread, source: str, covers: str) -> str | None:
    """One line for stderr when part of the log was not read: how much, and why. None when all of it was."""
    if not u:
        return None
    parts = []
    if u.skipped:
        why = ", ".join(f"{n} {SKIPPED[outcome]}" for outcome, n in u.reasons.items())
        parts.append(f"{count(u.skipped, 'record')} skipped ({why})")
    if u.damaged_payloads:
        parts.append(f"{count(u.damaged_payloads, 'payload')} not matching {'its' if u.damaged_payloads == 1 else 'their'} md5")
    if u.stop_reason:
        parts.append(u.stop_reason)
    return f"compilescope: warning: {source.rsplit('/', 1)[-1]}: {'; '.join(parts)}. The {covers} shows what was read."

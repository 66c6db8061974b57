"""What of a log was not read: records skipped (and why), and whether the file could be read to its end.

A truncated or partly corrupt log still gives a report; this says how much it is missing, for the one line
the terminal prints and for `summary --json` (docs/summary-schema.md, "unread").
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..model.stats import IngestStats
from ..model.records import dataclass
from ..wording import count

# Outcomes of a record that was not read as an event, in the words the terminal line uses.
SKIPPED = {
    "bad_json": "broken JSON",
    "bad_prefix": "not a TORCH_TRACE line",
    "orphan_payload": "payload lines without their record",
    "handler_error": "could not be interpreted",
}


@dataclass
class Unread:
    """What of the log was not read: records skipped and why, damaged payloads, where reading stopped."""

    skipped: int = 0  # records not read
    reasons: dict[str, int] = field(default_factory=dict)  # outcome (a key of SKIPPED) -> records, most first
    damaged_payloads: int = 0  # records read, but their payload does not match its md5
    stopped_at_line: int | None = None  # the file could not be read past this line (e.g. a cut .gz)
    stop_reason: str | None = None

    def __bool__(self) -> bool:
        return bool(self.skipped or self.damaged_payloads or self.stopped_at_line is not None)

    @property
    def records_lost(self) -> bool:
        """Records of the log not read at all: skipped, or past where reading stopped. (A payload not matching its
        md5 was still read: what it says is in the run's facts.)"""
        return bool(self.skipped or self.stopped_at_line is not None)

    def describe(self) -> str:
        """What was not read, in a few words: "3 records skipped (3 broken JSON); cannot be read after line 637"."""
        parts = []
        if self.skipped:
            why = ", ".join(f"{n} {SKIPPED[outcome]}" for outcome, n in self.reasons.items())
            parts.append(f"{count(self.skipped, 'record')} skipped ({why})")
        if self.damaged_payloads:
            parts.append(f"{count(self.damaged_payloads, 'payload')} not matching "
                         f"{'its' if self.damaged_payloads == 1 else 'their'} md5")
        if self.stop_reason:
            parts.append(self.stop_reason)
        return "; ".join(parts)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Unread:
        return cls(doc["skipped_records"], dict(doc["reasons"]), doc["damaged_payloads"], doc["stopped_at_line"],
                   doc["stop_reason"])

    def to_json(self) -> dict[str, Any]:
        return {
            "skipped_records": self.skipped,
            "reasons": dict(self.reasons),
            "damaged_payloads": self.damaged_payloads,
            "stopped_at_line": self.stopped_at_line,
            "stop_reason": self.stop_reason,
        }


def unread(stats: IngestStats) -> Unread:
    counts = {outcome: stats.outcomes.get(outcome, 0) for outcome in SKIPPED}
    reasons = dict(sorted(((k, n) for k, n in counts.items() if n), key=lambda kv: -kv[1]))
    result = Unread(skipped=sum(reasons.values()), reasons=reasons, damaged_payloads=stats.outcomes.get("md5_mismatch", 0))
    stop = stats.stopped
    if stop is not None:
        result.stopped_at_line, result.stop_reason = stop.lineno, stop.message
    return result

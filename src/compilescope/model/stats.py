"""IngestStats: every record of a log is counted exactly once, and every problem is listed."""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Any

from ..invisible import escape
from ..lazy_regex import lazy_compile
from ..wording import count
from .records import dataclass

# Outcome categories of a record; each record lands in exactly one.
OUTCOMES = (
    "ok",  # decoded and handled
    "md5_mismatch",  # handled, but its payload does not match has_payload
    "unknown_kind",  # decoded, kind not known: kept and listed
    "other_rank",  # belongs to another rank than the one being read
    "bad_prefix",  # no glog prefix: not an envelope at all
    "bad_json",  # prefix fine, JSON broken
    "orphan_payload",  # payload lines with no envelope before them
    "handler_error",  # a handler raised on this record (a bug, or very odd data)
)

# Problems that --strict turns into a failure: every line not read exactly as logged.
STRICT_FAILURES = frozenset({
    "md5_mismatch", "bad_prefix", "bad_json", "orphan_payload", "handler_error",
    "invalid_utf8",  # bytes replaced by U+FFFD (record read anyway)
    "control_chars",  # raw control characters in the envelope JSON (record read anyway)
    "bad_compile_id",  # a compile id part that is no counter ("../..", 1.5, true): read anyway, as unknown
    "read_error",  # the file could not be read to its end (e.g. a truncated .gz)
})

MAX_LISTED_PROBLEMS = 10_000
MAX_MESSAGE = 500  # characters of a problem message (they quote the log)

# Control characters are shown escaped: a message may reach a terminal (-v, --strict).
_CONTROL = lazy_compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(slots=True)
class Problem:
    """A problem found while reading the log, at one line."""

    lineno: int
    category: str
    message: str

    def __str__(self) -> str:
        """How the CLI prints it: `line N: category: message`."""
        return f"line {self.lineno}: {self.category}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"lineno": self.lineno, "category": self.category, "message": self.message}


@dataclass
class IngestStats:
    """Counts of what reading the log found (records by outcome, event kinds) and the problems listed."""

    outcomes: Counter = field(default_factory=Counter)
    unknown_kinds: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    stopped: Problem | None = None  # where reading stopped before the file's end (also in problems); see stop()
    problems_dropped: int = 0  # problems beyond MAX_LISTED_PROBLEMS (still counted)
    strict_dropped: int = 0  # of which --strict failures
    _last_dropped: int = 0
    warnings: int = 0

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())

    @property
    def parse_problems(self) -> int:
        """Records not read as logged, and a read that stopped before the file's end (a truncated .gz: not a record,
        so no outcome counts it, yet the log was not read whole)."""
        return sum(n for outcome, n in self.outcomes.items() if outcome != "ok") + (self.stopped is not None)

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] += 1

    def problem(self, lineno: int, category: str, message: str) -> None:
        self._listed(lineno, category, message)

    def stop(self, lineno: int, message: str) -> None:
        """Reading stopped at lineno, before the file's end (a truncated .gz, a log cut inside a payload): a
        "read_error" problem, listed past MAX_LISTED_PROBLEMS too, as it says the log was not read to its end."""
        self.stopped = self._listed(lineno, "read_error", message, always=True)

    def _listed(self, lineno: int, category: str, message: str, always: bool = False) -> Problem | None:
        if category in ("warning", "invalid_utf8", "control_chars", "bad_compile_id"):  # the record was read anyway
            self.warnings += 1
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "\u2026"
        message = _CONTROL.sub(lambda m: escape(m.group(), "python"), message)
        if len(self.problems) < MAX_LISTED_PROBLEMS or always:
            listed = Problem(lineno, category, message)
            self.problems.append(listed)
            return listed
        self.problems_dropped += 1
        if category in STRICT_FAILURES:
            self.strict_dropped += 1
            self._last_dropped = lineno
        return None

    def strict_failures(self) -> list[Problem]:
        listed = [p for p in self.problems if p.category in STRICT_FAILURES]
        if self.strict_dropped:  # past the listing limit, but --strict must still fail on them
            listed.append(Problem(self._last_dropped, "more",
                                  f"{count(self.strict_dropped, 'more problem')} up to this line, not listed"))
        return listed

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "outcomes": {k: self.outcomes.get(k, 0) for k in OUTCOMES},
            "kinds": dict(self.kinds),
            "unknown_kinds": dict(self.unknown_kinds),
            "warnings": self.warnings,
            "problems": [p.to_json() for p in self.problems],
            "stopped": self.stopped.to_json() if self.stopped is not None else None,
            "problems_dropped": self.problems_dropped,
            "strict_dropped": self.strict_dropped,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IngestStats:
        stats = cls(
            outcomes=Counter(data["outcomes"]),
            unknown_kinds=Counter(data["unknown_kinds"]),
            kinds=Counter(data.get("kinds", {})),
            warnings=data.get("warnings", 0),
            problems_dropped=data.get("problems_dropped", 0),
            strict_dropped=data.get("strict_dropped", 0),
        )
        stats.problems = [Problem(**p) for p in data["problems"]]
        stats.stopped = Problem(**data["stopped"]) if data.get("stopped") else None
        return stats

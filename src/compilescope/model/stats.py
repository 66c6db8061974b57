"""IngestStats: every record of a log is counted exactly once, and every problem is listed."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

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

# Problems that --strict turns into a failure.
STRICT_FAILURES = frozenset({"md5_mismatch", "bad_prefix", "bad_json", "orphan_payload", "handler_error"})

MAX_LISTED_PROBLEMS = 10_000


@dataclass(slots=True)
class Problem:
    lineno: int
    category: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"lineno": self.lineno, "category": self.category, "message": self.message}


@dataclass
class IngestStats:
    outcomes: Counter = field(default_factory=Counter)
    unknown_kinds: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    problems_dropped: int = 0  # problems beyond MAX_LISTED_PROBLEMS (still counted)
    warnings: int = 0

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] += 1

    def problem(self, lineno: int, category: str, message: str) -> None:
        if category == "warning":
            self.warnings += 1
        if len(self.problems) < MAX_LISTED_PROBLEMS:
            self.problems.append(Problem(lineno, category, message))
        else:
            self.problems_dropped += 1

    def strict_failures(self) -> list[Problem]:
        return [p for p in self.problems if p.category in STRICT_FAILURES]

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "outcomes": {k: self.outcomes.get(k, 0) for k in OUTCOMES},
            "kinds": dict(self.kinds),
            "unknown_kinds": dict(self.unknown_kinds),
            "warnings": self.warnings,
            "problems": [p.to_json() for p in self.problems],
            "problems_dropped": self.problems_dropped,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IngestStats:
        stats = cls(
            outcomes=Counter(data["outcomes"]),
            unknown_kinds=Counter(data["unknown_kinds"]),
            kinds=Counter(data.get("kinds", {})),
            warnings=data.get("warnings", 0),
            problems_dropped=data.get("problems_dropped", 0),
        )
        stats.problems = [Problem(**p) for p in data["problems"]]
        return stats

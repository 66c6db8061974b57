"""The run hub's list of runs (`compilescope serve`): runs.html."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .env import ENV


@dataclass(frozen=True)
class RunRow:
    name: str  # the run's name in the hub's directory
    mtime: float  # its newest log's modification time
    live: bool  # its log changed moments ago: still being written
    figures: dict[str, Any] | None  # analyses.run_facts.analysis.run_headline; None: the run could not be read
    error: str | None = None  # why not


def runs_page(rows: list[RunRow], source_name: str, base: str) -> str:
    """The list, newest first as given; base: the hub's URL prefix (it carries the token)."""
    shown = [{"run": row, "figures": row.figures, "error": row.error,
              "when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.mtime))} for row in rows]
    return ENV.get_template("runs.html").render(root=base, source_name=source_name, rank=None, nav_failures=False,
                                                rows=shown, base=base)

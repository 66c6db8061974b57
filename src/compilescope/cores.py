"""How many cores this process may use (its CPU affinity where the system says, else every core)."""

from __future__ import annotations

import os


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)

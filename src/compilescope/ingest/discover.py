"""From the PATH a user gives to the log file(s) to read."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from typing import Callable

from .. import location
from ..errors import CompilescopeError

RANK_IN_NAME = re.compile(r"rank_(\d+)")
LOG_SUFFIXES = (".log", ".log.gz", ".txt", ".txt.gz", ".gz")


@dataclass(frozen=True)
class Discovered:
    logs: list[str]  # newest last
    chosen: str  # the log to read for a single-rank report
    note: str | None = None  # what the user should know about the choice


def rank_of(path: str) -> int | None:
    m = RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def _is_log(path: str) -> bool:
    return _is_log_named(os.path.basename(path), lambda: os.path.getsize(path))


def _is_log_named(name: str, size: Callable[[], int]) -> bool:
    if name.startswith("dedicated_log_torch_trace"):
        return True
    return name.endswith(LOG_SUFFIXES) and size() > 0


def find_logs(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise CompilescopeError(f"cannot read directory {directory}: {exc.strerror}") from None
    paths = [os.path.join(directory, n) for n in names]
    logs = [p for p in paths if os.path.isfile(p) and _is_log(p)]
    return sorted(logs, key=lambda p: (os.path.getmtime(p), p))


def discover(path: str, latest: bool = False) -> Discovered:
    if location.is_url(path):
        return _discover_url(path, latest)
    if not os.path.exists(path):
        raise CompilescopeError(f"{path}: no such file or directory")
    if os.path.isdir(path):
        return _newest(path, find_logs(path), latest)
    if not os.access(path, os.R_OK):
        raise CompilescopeError(f"{path}: permission denied")
    mode = os.stat(path).st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero would be read forever
        raise CompilescopeError(f"{path}: a device, not a log file")
    return Discovered([path], path)


def _newest(directory: str, logs: list[str], latest: bool) -> Discovered:
    """The newest of a directory's logs (oldest first in logs), and a note when there were several."""
    if not logs:
        raise CompilescopeError(f"{directory}: no TORCH_TRACE logs in this directory (expected files like dedicated_log_torch_trace_*.log)")
    chosen = logs[-1]
    note = None
    if len(logs) > 1:
        how = "--latest" if latest else "the newest of them"
        note = f"{len(logs)} logs in {directory}; reading {location.basename(chosen)} ({how})"
    return Discovered(logs, chosen, note)


def _discover_url(url: str, latest: bool) -> Discovered:
    """A log behind a URL (s3://, gs://, ...), or the newest log of a directory there; listed, never downloaded."""
    if not location.is_dir(url):
        if not location.exists(url):
            raise CompilescopeError(f"{url}: no such file or directory")
        return Discovered([url], url)
    entries = [e for e in location.list_files(url) if _is_log_named(location.basename(e.path), lambda e=e: e.size)]
    return _newest(url, [e.path for e in sorted(entries, key=lambda e: (e.mtime, e.path))], latest)

"""From the PATH a user gives to the log file(s) to read."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from ..errors import CompilescopeError

RANK_IN_NAME = re.compile(r"rank_(\d{1,9})(?!\d)")
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
    name = os.path.basename(path)
    if name.startswith("dedicated_log_torch_trace"):
        return True
    return name.endswith(LOG_SUFFIXES) and os.path.getsize(path) > 0


def find_logs(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise CompilescopeError(f"cannot read directory {directory}: {exc.strerror}") from None
    paths = [os.path.join(directory, n) for n in names]
    logs = [p for p in paths if os.path.isfile(p) and _is_log(p)]
    return sorted(logs, key=lambda p: (os.path.getmtime(p), p))


def discover(path: str, latest: bool = False) -> Discovered:
    if not os.path.exists(path):
        raise CompilescopeError(f"{path}: no such file or directory")
    if os.path.isdir(path):
        logs = find_logs(path)
        if not logs:
            raise CompilescopeError(f"{path}: no TORCH_TRACE logs in this directory (expected files like dedicated_log_torch_trace_*.log)")
        chosen = logs[-1]
        note = None
        if len(logs) > 1:
            how = "--latest" if latest else "the newest of them"
            note = f"{len(logs)} logs in {path}; reading {os.path.basename(chosen)} ({how})"
        return Discovered(logs, chosen, note)
    if not os.access(path, os.R_OK):
        raise CompilescopeError(f"{path}: permission denied")
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):  # a FIFO would block forever, /dev/zero would be read forever
        raise CompilescopeError(f"{path}: not a regular file (a {_kind_of(mode)}), not a log file")
    return Discovered([path], path)


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device")):
        if test(mode):
            return name
    return "special file"

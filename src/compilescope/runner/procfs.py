"""What Linux's /proc says of a process, shared by the run and its trace directory: whether it is alive, and
whether it (or a child of it) holds a log or crash file open. Without /proc each falls back as its docstring says."""

from __future__ import annotations

import os
from contextlib import suppress


def writes_log(pid: int, log: str) -> bool:
    """Whether the process pid holds log open, as torch holds its trace log until it exits (Linux's /proc). Without
    /proc, whether it is alive (all that can be known); where its descriptors cannot be read (another user's
    process, or none), no."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return os.path.isdir("/proc/self/fd") is False and process_alive(pid)
    target = os.path.realpath(log)
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
        except OSError:
            continue  # (a descriptor closed while read)
    return False


def holds_crash_file(pid: int, path: str) -> bool:
    """Whether the process pid, alive, still writes its crash file at path (bytecode_capture.record_crashes): it holds
    it open (faulthandler keeps the file until the process exits), or a `tee` it started for a capture() block does
    (a child of pid: its tee appends to the file). As writes_log: without /proc, whether it is alive."""
    if writes_log(pid, path):
        return True
    return os.path.isdir("/proc/self/fd") and any(writes_log(child, path) for child in _children(pid))


def _children(pid: int) -> list[int]:
    """The processes whose parent is pid, from every /proc/N/stat (the kernel may not list a task's children); only
    asked of a crash file whose process is alive and does not hold it itself, which is rare."""
    found = []
    with suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                if int(stat[stat.rindex(b")") + 2:].split()[1]) == pid:
                    found.append(int(name))
            except (OSError, ValueError, IndexError):
                continue  # (a process gone while read)
    return found


def process_alive(pid: int) -> bool:
    """Whether a process pid exists (one of another user's too: signalling it is refused, not unknown)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError):
        return False
    return True

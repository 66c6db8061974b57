"""From the PATH a user gives to the log file(s) to read."""

from __future__ import annotations

import functools
import os
import stat
from typing import Callable

from .. import location
from ..errors import CompilescopeError
from ..lazy_regex import lazy_compile
from ..wording import count
from .crash_files import crash_files, ending
from .lines import GLOG_PREFIX
from ..model.records import dataclass

# The one reading of a rank from a file name: torch's dedicated_log_torch_trace_rank_<N>_<random>.log
# (gzipped copies keep the name). A name without it has no rank (the reader then reads every envelope).
RANK_LOG = lazy_compile(r"^dedicated_log_torch_trace_rank_(\d{1,9})(?!\d)(?:_[^/]*)?\.(?:log|txt)(?:\.gz)?$")
_RANK_LOG_START = "dedicated_log_torch_trace_rank_"  # (a name without it: no pattern compiled to tell)
TORCH_LOG_NAME = "dedicated_log_torch_trace"  # how torch names each process's TORCH_TRACE log
LOG_SUFFIXES = (".log", ".log.gz", ".txt", ".txt.gz", ".gz")
SNIFF_BYTES = 4096  # enough for the first line of a log (a glog prefix and the start of an envelope)


@dataclass
class Discovered:
    """The logs found in a directory, the one a single-rank report reads, and a note on the choice."""

    logs: list[str]  # newest last
    chosen: str  # the log to read for a single-rank report
    note: str | None = None  # what the user should know about the choice


def rank_of(path: str) -> int | None:
    """The rank in a log's file name (RANK_LOG), None when the name carries none."""
    name = os.path.basename(path)
    m = RANK_LOG.match(name) if name.startswith(_RANK_LOG_START) else None
    return int(m.group(1)) if m else None


def _is_log(path: str) -> bool:
    """torch's name for a log, or a log's suffix and a log's first line (a newer readme.txt is not a log)."""
    name = os.path.basename(path)
    if name.startswith(TORCH_LOG_NAME):
        return True
    return name.endswith(LOG_SUFFIXES) and os.path.getsize(path) > 0 and _starts_like_a_trace(path)


def _starts_like_a_trace(path: str) -> bool:
    """Whether the first non-blank line of the file (decompressed) is a glog prefix and an envelope, as every
    TORCH_TRACE line is. The prefix alone is not enough: a run's captured stderr (TORCH_LOGS, torch's warnings)
    has the same prefix before plain text, and it is often the newest file beside the log."""
    try:
        with location.open_regular_file(path) as f:  # (listed as a file, a FIFO by now: open() would block)
            head = f.read(SNIFF_BYTES)
            if head[:3] == b"\x1f\x8b\x08":
                import gzip  # here: most logs are plain text
                import zlib

                f.seek(0)
                try:
                    head = gzip.GzipFile(fileobj=f).read(SNIFF_BYTES)
                except (OSError, EOFError, zlib.error):
                    return False
    except OSError:
        return False
    first = next((line for line in head.splitlines() if line.strip()), b"")
    prefix = GLOG_PREFIX.match(first)
    return prefix is not None and first[prefix.end():prefix.end() + 1] == b"{"


def is_trace_log(path: str) -> bool:
    """A TORCH_TRACE log (by torch's name for one, or a log's suffix and first line), or a directory holding one."""
    if os.path.isdir(path):
        return bool(find_logs(path))
    return os.path.isfile(path) and _is_log(path)


def _is_log_named(name: str, size: Callable[[], int]) -> bool:
    """A log's name (for a URL's listing, where reading each file's first line would cost a download)."""
    if name.startswith(TORCH_LOG_NAME):
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
        logs = find_logs(path)
        if not logs:
            return _newest_run_folder(path, latest)
        return _newest(path, logs, latest)
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


def _newest(directory: str, logs: list[str], latest: bool) -> Discovered:
    """The newest of a directory's logs (oldest first in logs), and a note when there were several."""
    if not logs:
        raise CompilescopeError(f"{directory}: no TORCH_TRACE logs in this directory (expected files like "
                                f"dedicated_log_torch_trace_*.log){_crashed_before_logging(directory)}")
    chosen = logs[-1]
    note = None
    if len(logs) > 1:
        how = "--latest" if latest else "the newest of them"
        note = f"{len(logs)} logs in {directory}; reading {location.basename(chosen)} ({how})"
    return Discovered(logs, chosen, note)


def _crashed_before_logging(directory: str) -> str:
    """"; but ..." where a process left a crash in directory (capture() records one there) without a log: it died in
    native code before torch logged anything, and that is what the directory holds."""
    try:
        crashed = [c for c in crash_files(directory) if c.text]
    except OSError:
        return ""
    if not crashed:
        return ""
    end = ending(crashed[0].text)
    said = end.headline if end.exception else end.first_line
    how = "stopped with an uncaught exception" if end.exception else "died in native code"
    others = f" (and {count(len(crashed) - 1, 'other')})" if len(crashed) > 1 else ""
    return (f"; but a process {how} before torch logged anything: {os.path.basename(crashed[0].path)}"
            f"{others} says {said!r}")


def _newest_run_folder(directory: str, latest: bool) -> Discovered:
    """A directory without logs of its own whose folders hold them, as `run` leaves compilescope_traces/<time>/:
    with --latest, the newest log of the folder written last; without, an error naming that folder."""
    try:
        folders = [f for f in (os.path.join(directory, n) for n in os.listdir(directory)) if os.path.isdir(f)]
    except OSError as exc:
        raise CompilescopeError(f"cannot read directory {directory}: {exc.strerror}") from None
    runs = sorted((os.path.getmtime(logs[-1]), folder, logs) for folder in folders if (logs := find_logs(folder)))
    if not runs:
        return _newest(directory, [], latest)  # the error for a directory without logs
    _, newest, logs = runs[-1]
    if not latest:
        raise CompilescopeError(f"{directory}: no TORCH_TRACE logs in this directory itself, but {len(runs)} of its "
                                f"folders hold some (the newest: {newest}); give that folder, or --latest to read "
                                f"its newest log")
    found = _newest(newest, logs, latest)
    found.note = (f"reading {location.basename(found.chosen)} from {newest}, the newest of {len(runs)} folders "
                  f"with logs in {directory} (--latest)")
    ranks = sorted({r for r in map(rank_of, logs) if r is not None})
    if len(ranks) > 1:  # a distributed run's folder: one rank's log is not the run
        found.note += (f"; that folder holds the logs of ranks {', '.join(map(str, ranks))}: give it, without "
                       f"--latest, for every rank")
    return found


def _discover_url(url: str, latest: bool) -> Discovered:
    """A log behind a URL (s3://, gs://, ...), or the newest log of a directory there; listed, never downloaded."""
    if not location.is_dir(url):
        if not location.exists(url):
            raise CompilescopeError(f"{url}: no such file or directory")
        return Discovered([url], url)
    entries = [e for e in location.list_files(url) if _is_log_named(location.basename(e.path), functools.partial(int, e.size))]
    # Unread, a run's captured stderr (output.txt) looks like a log by its name; where torch's own names are
    # there, they are the logs.
    torch_named = [e for e in entries if location.basename(e.path).startswith(TORCH_LOG_NAME)]
    return _newest(url, [e.path for e in sorted(torch_named or entries, key=lambda e: (e.mtime, e.path))], latest)


_STRING_NUMBER = lazy_compile(rb'\{"str": \["(?:[^"\\]|\\.)*", (\d+)\]')


def _first_record(log: str) -> tuple[int, tuple[str, ...], int | None] | None:
    """(pid, time, first string number) of a log: which process wrote it (its first record's glog prefix), when it
    began, and the number of the first `str` record in its head (None where none is there)."""
    try:
        with location.open_regular_file(log) as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return None
    if head[:3] == b"\x1f\x8b\x08":
        return None  # (a log being run's own: torch writes them plain)
    for line in head.splitlines():
        m = GLOG_PREFIX.match(line)
        if m:
            number = _STRING_NUMBER.search(head)
            return (int(m[6]), (m[2].decode(), m[3].decode(), m[4].decode(), m[5].decode()),
                    int(number[1]) if number else None)
    return None


def _first_string_number(log: str) -> int | None:
    """The number of the first `str` record anywhere in log (None: it has none, or it cannot be read): for a log
    sharing a pid with another, whose head held none."""
    carry = b""
    try:
        with location.open_regular_file(log) as f:
            while chunk := f.read(1 << 20):
                block = carry + chunk
                number = _STRING_NUMBER.search(block)
                if number:
                    return int(number[1])
                carry = block[-4096:]  # (a record cut between two chunks is found in the next)
    except OSError:
        return 0  # (unreadable: not joined)
    return None


def process_parts(logs: list[str]) -> list[list[str]]:
    """The logs one process wrote, in the order it wrote them (by their first records' times), for each process that
    wrote several: torch.export.draft_export logs to a file of its own for as long as it runs (its
    CaptureStructuredTrace replaces the process's log handler and does not put it back), and the process's string
    table goes on there (its first `str` is numbered after the main log's last), so that part cannot be read alone.
    Logs with a rank in their name are left out (a distributed run's ranks are processes of their own), and so is a
    later log whose string table starts at 0: a process of its own that had the same pid (another container's, a
    reused pid), whose log joining would mix into another's and remove. A later log with no `str` record at all (a
    second draft_export's, whose stacks name only files already interned) is a part."""
    by_pid: dict[int, list[tuple[tuple[str, ...], str, int | None]]] = {}
    for log in logs:
        if rank_of(log) is not None:
            continue
        record = _first_record(log)
        if record is not None:
            by_pid.setdefault(record[0], []).append((record[1], log, record[2]))
    joined = []
    for parts in by_pid.values():
        first, *later = sorted(parts, key=lambda part: part[:2])
        continued = [log for _, log, number in later
                     if (number if number is not None else _first_string_number(log)) != 0]  # (0: a table of its own)
        if continued:
            joined.append([first[1], *continued])
    return joined


def holds_several_ranks(path: str | list[str]) -> bool:
    """A directory (or list of files) with logs of two or more ranks: then compilescope reports them all."""
    if isinstance(path, list):
        names = [os.path.basename(p) for p in path]
    elif location.is_url(path):
        try:
            names = [location.basename(e.path) for e in location.list_files(path)]
        except CompilescopeError:
            return False
    elif os.path.isdir(path):
        try:
            names = os.listdir(path)
        except OSError:
            return False
    else:
        return False
    ranks = {rank_of(n) for n in names} - {None}
    return len(ranks) > 1

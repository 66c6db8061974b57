"""The trace directory of a run and which of its files are the run's: made or prepared (new_trace_dir,
prepare_trace_dir), marked going and ended for serve (marked_going, mark_ended, run_has_ended), the logs and crash
files new in it told apart from other processes' while the program runs (LogOwners), and once it has ended a
process's parts joined (join_process_logs) and each crash appended to its process's log (attach_crash_reports)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from ..errors import CompilescopeError
from ..ingest.crash_files import (crash_file_pid, crash_files, crash_headline, crash_record, ending, ending_said, first_pid,
                                  log_of)
from ..ingest.discover import TORCH_LOG_NAME, process_parts
from .procfs import holds_crash_file, process_alive, writes_log

DEFAULT_TRACE_ROOT = "compilescope_traces"
# Written into the trace directory by `compilescope run` (cli/run.py), wherever -o puts the report, for serve
# (cli/serve.py), which reads a run as over when its newest log is one RUN_ENDED names and no RUN_GOING file is
# there. RUN_ENDED: each ended run appends the logs it wrote, one name (relative to the directory) a line, because a
# --trace-dir is kept and may hold an earlier run's marker, or a run going on beside (run_has_ended). RUN_GOING<pid>:
# there while that run's program runs (one per run). Neither is a log's name.
RUN_ENDED = "compilescope-run-ended"
RUN_GOING = "compilescope-run-going-"


@dataclass(frozen=True)
class HeldCrashFile:
    """An empty crash file kept because processes of the run still hold it open (attach_crash_reports)."""

    path: str
    pids: list[int]  # the processes seen holding it; where they cannot be seen, the one it is named for, alive


@dataclass
class CrashReport:
    """A process of the run that crashed in native code, with the stack faulthandler wrote (record_crashes), or that an
    uncaught Python exception ended (its record in the same file)."""

    pid: int
    text: str  # as faulthandler wrote it: "Fatal Python error: Segmentation fault", then each thread's stack
    log: str | None  # the log it was appended to; None: that process wrote no log

    @property
    def headline(self) -> str:
        """"Segmentation fault", or "AssertionError: ..." for an uncaught exception."""
        return crash_headline(self.text)

    @property
    def exception(self) -> bool:
        """An uncaught Python exception ended it (Python printed its traceback already), not a crash in native code."""
        return ending(self.text).exception

    @property
    def ending(self) -> str:
        """After "process N": "stopped with ...", "lost thread X to ..." (the process went on), "crashed: ..."."""
        end = ending(self.text)
        return ending_said(end.headline, end.exception, end.raised.thread if end.raised is not None else None)

    @property
    def stack(self) -> str:
        """faulthandler's text of a crash in native code (without any exception a thread raised before it)."""
        return ending(self.text).faulthandler


def new_trace_dir(root: str = DEFAULT_TRACE_ROOT) -> str:
    """A new, empty directory root/<timestamp>[-n], created atomically."""
    base = os.path.join(root, time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(root, exist_ok=True)
    path, n = base, 1
    while True:
        try:
            os.mkdir(path)
            return os.path.abspath(path)
        except FileExistsError:
            n += 1
            path = f"{base}-{n}"


def as_typed_here(path: str) -> str:
    """path as a user here would type it: relative to the current directory when it is under it, else absolute
    (the commands run prints, for a directory run made itself: nobody typed it)."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


@contextmanager
def marked_going(trace_dir: str) -> Iterator[None]:
    """RUN_GOING<pid> in trace_dir while the block runs (the program): serve reads the directory's runs as going on,
    whatever an earlier run's RUN_ENDED says. Left behind only if this process is killed (SIGKILL): its pid is then
    no process's, so run_has_ended passes over it and the next run here removes it (prepare_trace_dir)."""
    path = os.path.join(trace_dir, f"{RUN_GOING}{os.getpid()}")
    try:
        with open(path, "x", encoding="utf-8"):
            made = True
    except OSError:
        made = False  # (only serve's live/ended mark depends on it)
    try:
        yield
    finally:
        if made:
            with suppress(OSError):
                os.remove(path)


def mark_ended(trace_dir: str, logs: list[str]) -> None:
    """Add the logs this run wrote to trace_dir's RUN_ENDED, once its program has ended (appended: an earlier run's
    names stay true of its logs, and a run beside this one may end later)."""
    if not logs:
        return  # (no run to list in serve: a directory run made for it, left empty, is removed)
    names = "".join(f"{os.path.relpath(p, trace_dir)}\n" for p in logs)
    with suppress(OSError), open(os.path.join(trace_dir, RUN_ENDED), "a", encoding="utf-8") as f:
        f.write(names)  # (only serve's live/ended mark depends on it: the report is still written)


def run_has_ended(directory: str, newest_log: str) -> bool:
    """`compilescope run` said the program that wrote newest_log (directory's newest) has ended, and no run is going
    on in directory (one that has written no log yet would otherwise look over: its directory's newest log is an
    earlier run's)."""
    marker = os.path.join(directory, RUN_ENDED)
    try:
        if any(_going_file_alive(name) for name in os.listdir(directory)):
            return False
        if os.path.islink(marker) or not os.path.isfile(marker):
            return False
        with open(marker, encoding="utf-8", errors="replace") as f:
            named = {line.rstrip("\n") for line in f}
    except OSError:
        return False
    return os.path.relpath(newest_log, directory) in named


def _going_file_alive(name: str) -> bool:
    """name is a RUN_GOING file whose run may still be going: its pid is a live process (a run killed by SIGKILL
    leaves its file behind, which would read the directory as going on for ever)."""
    if not name.startswith(RUN_GOING):
        return False
    pid = name[len(RUN_GOING):]
    return not (pid.isascii() and pid.isdigit()) or process_alive(int(pid))


def prepare_trace_dir(path: str) -> str:
    """The user's --trace-dir: created if needed; logs already in it are not this run's. A RUN_GOING file of a run
    whose process is gone (killed) is removed."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise CompilescopeError(f"--trace-dir {path} exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise CompilescopeError(f"cannot create --trace-dir {path}: {exc.strerror}") from None
    with suppress(OSError):
        for name in os.listdir(path):
            if name.startswith(RUN_GOING) and not _going_file_alive(name):
                _remove(os.path.join(path, name))
    return os.path.abspath(path)


def held_at_start(trace_dir: str, names: list[str]) -> set[str]:
    """Of the crash files names, there before the run, those a live process may hold open (_held_open; where a
    process's descriptors are refused, one whose named process is alive)."""
    if not names:
        return set()
    holders, all_seen = _held_open([os.path.join(trace_dir, name) for name in names])
    held = {os.path.basename(path) for path in holders}
    if not all_seen:
        held |= {name for name in names if process_alive(crash_file_pid(name) or 0)}
    return held


def file_stats(directory: str, names: list[str]) -> dict[str, tuple[int, int, int]]:
    """Each of names in directory that is there: its (inode, size, mtime), which a rewrite changes."""
    stats = {}
    for name in names:
        with suppress(OSError):
            stat = os.stat(os.path.join(directory, name))
            stats[name] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    return stats


class LogOwners:
    """Which of the logs new in the trace directory the program wrote: another process may write to the same
    directory meanwhile (a `TORCH_TRACE=dir python other.py`, another `compilescope run --trace-dir dir`), and its log
    is no log of this run (RUN_ENDED would say it ended while it is still written; the report could be of it).
    The same for the crash files new there (bytecode_capture.record_crashes), by the pid in their names: another
    run's, or a capture() block's in another process, are theirs to take (an empty one removed here while its process
    lives would lose its crash: faulthandler writes on into the file unlinked).

    A log is the program's when the pid of its first record (torch's glog prefix) is the program's or one of its
    descendants' (its workers under torchrun, multiprocessing's). Descendants are known only while they run (Linux's
    /proc: their parents), so the directory is looked at while the program runs (look); a log not told apart so (its
    first record written after the last look, or its process gone by then, or no /proc) is the program's unless
    its pid is another process's that is still running and holds it open (writes_log). A pid alone proves nothing
    where the log was copied in: a live process may have the pid the log was recorded with."""

    def __init__(self, trace_dir: str, before: Collection[str], program: subprocess.Popen,
                 crash_files_before: dict[str, tuple[int, int, int]] | None = None) -> None:
        self.trace_dir, self.before, self.program = trace_dir, before, program
        self.told: dict[str, bool] = {}  # a log's name: whether the program or a descendant wrote it
        # Crash files there before the run that no live process held then, with their (inode, size, mtime): one
        # written again is the run's only where a look saw its process under the program (told), or it is the
        # program's own (rewritten): a pid gone at the end proves nothing (an earlier run's, another namespace's)
        self.crash_files_before = dict(crash_files_before or {})
        # Read once per log, not every look: a log's name -> (its inode, the pid of its first record), once it has
        # one (a file that takes the name later, another inode, is read again); a log with none yet -> its (inode,
        # size, mtime) when its head was read (read again only once it has changed, grown or rewritten: a log idle
        # for minutes is not read ten times a second). For the looks only: an inode may be reused at once, so ours()
        # reads a log's first record again.
        self.pids: dict[str, tuple[int, int]] = {}
        self.heads_read: dict[str, tuple[int, int, int]] = {}
        # Crash files whose pid is a live process, not the program's nor holding the file, placed by nobody while
        # the program runs (a file copied in, or left by a process gone whose pid was taken): asked once, not every
        # look (holds_crash_file reads every /proc/N/stat); crash_file_ours asks again once the program has ended.
        self.passed_over: set[str] = set()
        # The pids a look saw as the program or under it (of a log's first record, of a crash file's name): evidence
        # that an empty crash file is the run's, to remove (crash_file_removable)
        self.descendants: set[int] = {program.pid}

    def look(self) -> None:
        try:
            new = [n for n in os.listdir(self.trace_dir)
                   if n not in self.before and n not in self.told and n not in self.passed_over]
        except OSError:
            return
        told = {}
        held_open: Callable[[int, str], bool]
        for name in new:
            path = os.path.join(self.trace_dir, name)
            if name.startswith(TORCH_LOG_NAME):
                pid, held_open = self._first_pid(name, path), writes_log
            else:
                pid, held_open = crash_file_pid(name), holds_crash_file
                if pid is None:
                    continue  # (neither a log nor a crash file: RUN_GOING, RUN_ENDED, the user's)
            mine = None if pid is None else self._descends(pid)
            if mine is False and pid is not None and not held_open(pid, path):
                mine = None  # (a process that only shares the pid: a file copied in, or left by a process gone)
                if not name.startswith(TORCH_LOG_NAME):
                    self.passed_over.add(name)
            if mine is not None:
                told[name] = mine
            if mine and pid is not None:
                self.descendants.add(pid)
        for name, stat in self.crash_files_before.items():
            pid = crash_file_pid(name)
            if name in self.told or name in self.passed_over or pid is None \
                    or file_stats(self.trace_dir, [name]).get(name, stat) == stat:
                continue
            if self._descends(pid):
                told[name] = True
                self.descendants.add(pid)
            else:  # (its writer is no process under the program, or gone: that does not change; asked once)
                self.passed_over.add(name)
        # (a process the program left when it ended has a parent no more: what was told of it then is not kept)
        ended = self.program.poll() is not None
        self.told.update({name: mine for name, mine in told.items() if mine or not ended})

    def _first_pid(self, name: str, path: str) -> int | None:
        """first_pid of the log, its head read only when not yet read as it is now (inode, size, mtime: a first record
        written by a rewrite of the same size is read too), its first record's pid kept while the inode is the
        same (once there, it never changes in that file)."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        cached = self.pids.get(name)
        if cached is not None and cached[0] == stat.st_ino:
            return cached[1]
        seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if self.heads_read.get(name) == seen:
            return None
        pid = first_pid(path)
        if pid is None:
            self.heads_read[name] = seen
        else:
            self.pids[name] = (stat.st_ino, pid)
            self.heads_read.pop(name, None)
        return pid

    def _descends(self, pid: int) -> bool | None:
        """Whether the process pid is the program or runs under it; None where that is not known (it has ended,
        or there is no /proc)."""
        seen = 0
        while pid != self.program.pid:
            if pid <= 1 or seen > 256:
                return False
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                return False if seen else None  # (an ancestor gone between two reads: the chain is cut)
            pid = int(stat[stat.rindex(b")") + 2:].split()[1])  # (after the command's name, which may hold ") ")
            seen += 1
        return True

    def ours(self, logs: list[str]) -> list[str]:
        """Of logs (new in the trace directory, the program ended), the program's. A log not told apart while it ran
        has its first record read again here, once, not taken from the looks' cache: the file under that name may be
        another by now with the same inode and size (ext4 gives a new file the inode of one just removed), or the same
        file written again."""
        kept = []
        for log in logs:
            mine = self.told.get(os.path.basename(log))
            if mine is None:
                pid = first_pid(log)
                mine = pid is None or pid == self.program.pid or not (process_alive(pid) and writes_log(pid, log))
            if mine:
                kept.append(log)
        return kept

    def rewritten(self) -> set[str]:
        """The crash files there before the run that a process of the run wrote again (crash_files_before), the
        program ended."""
        changed = {name for name, stat in self.crash_files_before.items()
                   if file_stats(self.trace_dir, [name]).get(name, stat) != stat}
        return {name for name in changed if self.told.get(name) or crash_file_pid(name) == self.program.pid}

    def crash_file_removable(self, name: str, pid: int) -> bool:
        """Whether an empty crash file of the run (crash_file_ours), held by no process seen, may be removed: only
        with evidence that its process was the program's (its pid seen under the program): a pid that is no process
        here may be one of another pid namespace sharing the directory (a container), its crash still to come."""
        return bool(self.told.get(name)) or pid in self.descendants

    def crash_file_ours(self, name: str, pid: int) -> bool:
        """Whether the crash file name (new in the trace directory, the program ended) is of the program's processes:
        told so while it ran, else unless pid is another process's that still writes it (holds_crash_file)."""
        mine = self.told.get(name)
        if mine is None:
            path = os.path.join(self.trace_dir, name)
            mine = pid == self.program.pid or not (process_alive(pid) and holds_crash_file(pid, path))
        return mine


def join_process_logs(logs: list[str]) -> list[tuple[str, list[str]]]:
    """The logs one process wrote in parts (discover.process_parts: draft_export's own log) joined into its first, in
    the order written, each later part removed once its bytes are there: the one log torch would have written, whose
    string table the later parts need. Only logs this run wrote. (the first part, the parts appended) for each."""
    joined = []
    for first, *later in process_parts(logs):
        appended = []
        for part in later:
            try:
                with open(part, "rb") as src:
                    data = src.read()
                _append(first, data)
            except OSError:
                break  # (the parts after it stay as they are: their order matters)
            _remove(part)
            appended.append(part)
        if appended:
            joined.append((first, appended))
    return joined


def attach_crash_reports(trace_dir: str, logs: list[str], before: Collection[str] = (),
                         pid: int | None = None, mine: Callable[[str, int], bool] | None = None,
                         held: list[HeldCrashFile] | None = None,
                         removable: Callable[[str, int], bool] | None = None) -> list[CrashReport]:
    """Each crash faulthandler wrote in trace_dir (bytecode_capture.record_crashes), appended to the log of the process
    that crashed (ingest/crash_files.py: the newest of logs with its pid) as an artifact its reader takes like any
    other, so that the log alone tells it; the empty files of the processes that did not crash are removed, except
    those a live process still holds open (a daemon the program started, a worker it forked that inherited the file):
    faulthandler would write its crash into the file unlinked, lost. Only files this run made or wrote again (not in
    before: run_program leaves out of it a file rewritten meanwhile; an empty leftover of an earlier run is left
    alone, as its process cannot be known gone where the directory is shared with another pid namespace, a
    container); pid: only that process's file; mine: only the files it says are this run's
    processes' (given the name and its pid: LogOwners.crash_file_ours), not those of a run beside it. held: the
    empty files kept because a process holds them open are added to it. removable: where given, an empty file held by
    no process seen is removed only if it says so (given the name and its pid: LogOwners.crash_file_removable)."""
    found, empty = [], []
    for crash in crash_files(trace_dir, set(before), pid, mine):
        if not crash.text:
            empty.append(crash)
            continue
        log = log_of(crash, logs)
        if log is not None:
            try:
                # (the writer's name every crash record has carried, recorded logs' too: not this file's)
                _append(log, crash_record(crash.pid, crash.text, crash.written, "compilescope/runner.py"))
                _remove(crash.path)
            except OSError:
                log = None
        found.append(CrashReport(crash.pid, crash.text, log))
    holders, all_seen = _held_open([crash.path for crash in empty]) if empty else ({}, True)
    for crash in empty:
        # Where a holder may be unseen (no /proc, or a process's descriptors refused: another user's), the process
        # the file is named for, alive, is taken to hold it: removed, its crash to come would be lost
        pids = holders.get(crash.path) or ([crash.pid] if not all_seen and process_alive(crash.pid) else [])
        if pids:
            if held is not None:
                held.append(HeldCrashFile(crash.path, pids))
        elif removable is None or removable(os.path.basename(crash.path), crash.pid):
            _remove(crash.path)
    return found


def _held_open(paths: list[str]) -> tuple[dict[str, list[int]], bool]:
    """Of paths, those some process holds open for writing (_open_for_writing), with the pids of those processes, from
    one pass over every /proc/N/fd; and whether every process's descriptors were seen (no /proc, or another user's
    process refused: not). At the run's start (crash files there before it) and at its end: the holder may be any
    process (a worker forked from the one the file is named for, in a session of its own), not only that process and
    its children."""
    if not os.path.isdir("/proc/self/fd"):
        return {}, False
    targets = {os.path.realpath(path): path for path in paths}
    held: dict[str, list[int]] = {}
    all_seen = True
    with suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                fds = os.listdir(f"/proc/{name}/fd")
            except PermissionError:
                all_seen = False  # (another user's process)
                continue
            except OSError:
                continue  # (one gone)
            for fd in fds:
                try:
                    path = targets.get(os.readlink(f"/proc/{name}/fd/{fd}"))
                except OSError:
                    continue
                if path is not None and _open_for_writing(name, fd) and int(name) not in held.setdefault(path, []):
                    held[path].append(int(name))
    return held, all_seen


def _open_for_writing(pid: str, fd: str) -> bool:
    """Whether descriptor fd of process pid may write (/proc/N/fdinfo's octal flags: O_RDONLY is 0 in the access mode
    bits): a reader of a crash file (a user's `tail -f`) is no process that may crash into it. Where fdinfo cannot be
    read, yes (kept, as a holder unseen is)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as f:
            for line in f:
                if line.startswith(b"flags:"):
                    return int(line.split()[1], 8) & 3 != 0  # (O_ACCMODE: O_WRONLY 1, O_RDWR 2)
    except (OSError, ValueError, IndexError):
        pass
    return True


def _append(log: str, record: bytes) -> None:
    """record at the end of log; a log the crash cut in the middle of a record ends that line first (the reader skips
    what it cannot read)."""
    with open(log, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        cut = False
        if size:
            f.seek(size - 1)
            cut = f.read(1) != b"\n"
        f.seek(0, os.SEEK_END)
        f.write((b"\n" if cut else b"") + record)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass

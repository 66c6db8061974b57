"""The stacks Python's faulthandler wrote to a trace directory when a process died in native code, and the
`compilescope_crash` record that carries one in a log. The same file holds an uncaught Python exception that ended the
process (bytecode_capture._record_exceptions; uncaught_exceptions reads it).

bytecode_capture.record_crashes turns faulthandler on, writing to `compilescope_crash_<pid>.txt` beside the process's
log. Under `compilescope run` the parent appends that file to the log of the process with that pid once the program
has ended (runner.attach_crash_reports); a process that traced itself (`capture()`) has nobody to do that, so the
reader takes a file still there from beside the log (crash_beside) as the log's crash, though not as a record of the
log (the log's records, its raw.jsonl and compile_directory.json, stay what the log holds). Both match a file to its
log here, and both take the text through crash_text: a log read with its crash file beside it and one the crash was
appended to say the same crash.

A crash file is untrusted input: only a regular file is read (not a FIFO, not through a symlink: a trace directory
from elsewhere could point one at a file of the reader's), at most CRASH_TEXT_LIMIT bytes of it (a bigger one is cut
there, with a line saying so: its first lines tell the crash), decoded with replacement.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import zlib
from typing import Callable

from ..decompile.recorded import CRASH, CRASH_FILE_PREFIX, EXCEPTION_HEADER
from ..lazy_regex import lazy_compile
from ..location import open_regular_file, read_local_bytes
from ..model.records import dataclass
from .lines import GLOG_PREFIX

CRASH_TEXT_LIMIT = 1 << 20  # faulthandler writes a few KB (100 frames a thread at most)
CRASH_FILE = lazy_compile(re.escape(CRASH_FILE_PREFIX) + r"(\d{1,10})\.txt")  # (for a name with the prefix)
HEAD_BYTES = 1 << 16  # of a log, read for the pid of its first record


@dataclass
class CrashFile:
    """One crash file faulthandler wrote (or made empty, if its process did not crash)."""

    path: str
    pid: int
    text: str  # as faulthandler wrote it, its first CRASH_TEXT_LIMIT bytes and cut_note's line where it holds more; ""
    # when nothing was written
    written: float  # when (its mtime: when the process crashed)


def crash_file_name(pid: int) -> str:
    return f"{CRASH_FILE_PREFIX}{pid}.txt"


def crash_file_pid(name: str) -> int | None:
    """The pid a crash file's name says (the process faulthandler writes it for); None for another name."""
    if not name.startswith(CRASH_FILE_PREFIX):  # (first: no pattern compiled for a log's name)
        return None
    m = CRASH_FILE.fullmatch(name)
    return int(m[1]) if m is not None else None


def read_crash_file(path: str) -> CrashFile | None:
    """The crash file at path; None when it is no crash file's name, not a regular file, or cannot be read."""
    read = read_local_bytes(path, CRASH_TEXT_LIMIT, cut=True, follow_links=False)
    if read.data is None:  # (first: most logs' directories have no crash file, and then no pattern is compiled)
        return None
    m = CRASH_FILE.fullmatch(os.path.basename(path))
    if m is None:
        return None
    text = read.data.decode("utf-8", "replace") if read.data.strip() else ""
    if text and read.size > len(read.data):
        # Cut rather than refused: the crash's first lines (the error, the crashing thread's stack) are what tells it
        text = text.rstrip("\n") + "\n" + cut_note(len(read.data), read.size) + "\n"
    return CrashFile(path, int(m[1]), text, read.mtime)


def cut_note(kept: int, size: int) -> str:
    """The line ending a crash file's text where it was cut (said wherever the text goes: a report, the record that
    `run` appends to the log)."""
    return f"[compilescope: cut at {kept:,} bytes of {size:,}]"


def crash_files(directory: str, skip: frozenset[str] | set[str] = frozenset(), pid: int | None = None,
                mine: Callable[[str, int], bool] | None = None) -> list[CrashFile]:
    """Every crash file of directory (by name, names in skip left out), empty ones included; pid: only that
    process's; mine: only those it says yes to (given the file's name and its pid), asked before the file is read."""
    found = []
    for name in [crash_file_name(pid)] if pid is not None else sorted(os.listdir(directory)):
        named = None if name in skip else crash_file_pid(name)
        if named is None or (mine is not None and not mine(name, named)):
            continue
        crash = read_crash_file(os.path.join(directory, name))
        if crash is not None:
            found.append(crash)
    return found


def first_pid(log: str) -> int | None:
    """The pid of the process that wrote log (plain or gzip), from the glog prefix of its first record."""
    try:
        with open_regular_file(log) as f:  # (a FIFO put in a log's place would block open())
            head = f.read(HEAD_BYTES)
            if head[:3] == b"\x1f\x8b\x08":
                import gzip  # here: most logs are plain text (start-up time, as in reader.open_log)

                f.seek(0)
                head = gzip.GzipFile(fileobj=f).read(HEAD_BYTES)
    except (OSError, ValueError, EOFError, zlib.error):
        return None
    for line in head.splitlines():
        m = GLOG_PREFIX.match(line)
        if m:
            return int(m[6])
    return None


def log_of(crash: CrashFile, logs: list[str]) -> str | None:
    """The log of the process that wrote crash: of logs (oldest first), the newest whose first record has its pid. A
    process that traced twice into one directory (two capture() blocks) crashed in the later, and so did the later of
    two processes given one pid (a container's first process has the same pid each run)."""
    return next((log for log in reversed(logs) if first_pid(log) == crash.pid), None)


def crash_beside(log: str, pid: int | None, logs_in: Callable[[str], list[str]]) -> CrashFile | None:
    """The crash of the process that wrote log (pid: its first record's) that nobody appended to it: the crash file of
    that pid in the log's directory, when it holds a crash and log is the newest log there of that pid. logs_in: a
    directory's logs, oldest first (discover.find_logs, which reads this module's names to say a directory without
    logs holds a crash)."""
    if pid is None:
        return None
    directory = os.path.dirname(os.path.abspath(log))
    crash = read_crash_file(os.path.join(directory, crash_file_name(pid)))  # (one open: most directories have none)
    if crash is None or not crash.text:
        return None
    try:
        logs = logs_in(directory)
    except Exception:  # noqa: BLE001 - a directory that cannot be listed cannot say whose the crash is
        return None
    mine = log_of(crash, logs)
    return crash if mine is not None and os.path.samefile(mine, log) else None


def crash_text(text: str) -> str:
    """faulthandler's text as a record's payload carries it (and as the reader gives it back): lines ended by "\n"
    alone (a line's "\r" is dropped by the reader where it ends a line: the md5 is of lines without it), no last
    line end."""
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")


def crash_record(pid: int, text: str, written: float, writer: str) -> bytes:
    """The lines of one `compilescope_crash` artifact carrying text, as torch's trace_structured writes a string
    artifact (a glog prefix of that pid at the time written, the envelope with the payload's md5, the payload's lines
    each after a TAB). writer: the file named in the prefix (who wrote the record, not torch's logging call)."""
    payload = crash_text(text)
    envelope = {"artifact": {"name": CRASH, "encoding": "string"},
                "has_payload": hashlib.md5(payload.encode("utf-8")).hexdigest()}
    when = datetime.datetime.fromtimestamp(written)
    lines = [f"V{when:%m%d %H:%M:%S.%f} {pid} {writer}:0] {json.dumps(envelope)}"]
    lines += [f"\t{line}" for line in payload.split("\n")]
    return ("\n".join(lines) + "\n").encode("utf-8")


@dataclass
class UncaughtException:
    """One uncaught exception as bytecode_capture.exception_text wrote it (recorded.EXCEPTION_HEADER's line)."""

    type: str  # "AssertionError", "torch._dynamo.exc.BackendCompilerFailed"
    message: str
    thread: str | None  # None: the main thread
    frames: list[tuple[str, int, str]]  # innermost first: (file, line, function)
    omitted: int  # frames left out between the innermost and the outermost
    # Lines of the traceback written after the record's line (0: not said, a file of an older compilescope): its
    # exact end, whatever the message or its notes hold.
    traceback_lines: int = 0


MAX_MESSAGE = 4000  # as bytecode_capture keeps: a longer one is not its writing
MAX_FRAMES = 100
MAX_FIELD = 4096  # characters of a file name or function kept


def uncaught_exceptions(text: str) -> list[UncaughtException]:
    """The exceptions a crash file's text records, in the order written; [] for faulthandler's text. Untrusted: a
    field of the wrong type drops its record, and every string is bounded."""
    found = []
    for line in text.splitlines():
        if not line.startswith(EXCEPTION_HEADER):
            continue
        try:
            record = json.loads(line[len(EXCEPTION_HEADER):])
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            continue
        thread, message, omitted = record.get("thread"), record.get("message"), record.get("omitted")
        frames = [(f[0][:MAX_FIELD], f[1], f[2][:MAX_FIELD]) for f in (record.get("frames") or [])[:MAX_FRAMES]
                  if isinstance(f, list) and len(f) == 3 and isinstance(f[0], str) and type(f[1]) is int
                  and isinstance(f[2], str)] if isinstance(record.get("frames"), list) else []
        printed = record.get("lines")
        found.append(UncaughtException(record["type"][:200], message[:MAX_MESSAGE] if isinstance(message, str) else "",
                                       thread[:200] if isinstance(thread, str) else None, frames,
                                       omitted if type(omitted) is int and omitted > 0 else 0,
                                       printed if type(printed) is int and printed > 0 else 0))
    return found


def _ending_exception(text: str) -> UncaughtException | None:
    """Of the exceptions text records, the one that ended the process: the main thread's (the last), else the last
    thread's."""
    found = uncaught_exceptions(text)
    return next((e for e in reversed(found) if e.thread is None), found[-1] if found else None)


FAULTHANDLER_HEADER = "Fatal Python error: "  # faulthandler's first line, when a fatal signal killed the process


@dataclass
class Ending:
    """How the process of a crash file ended (ending): of an uncaught Python exception, or in native code."""

    exception: bool  # an uncaught Python exception ended it; else native code crashed
    raised: UncaughtException | None = None  # that exception (None: native code, or its record unreadable)
    faulthandler: str = ""  # native code: faulthandler's text, from its first line (after any exception before it)

    @property
    def first_line(self) -> str:
        """faulthandler's first line as it wrote it ("Fatal Python error: Segmentation fault"); "" for an exception."""
        return next((line.strip() for line in self.faulthandler.splitlines() if line.strip()), "")

    @property
    def headline(self) -> str:
        """Its first word: "Segmentation fault" (faulthandler's first line), or the exception that ended the process."""
        if self.exception:
            return exception_said(self.raised) if self.raised is not None else "an uncaught exception"
        return self.first_line.removeprefix(FAULTHANDLER_HEADER) or "a crash"


def ending(text: str) -> Ending:
    """How the process whose crash file's text this is ended: the one place that tells an exception from a native
    crash. A thread's exception can be recorded and the process go on, then crash in native code: faulthandler's text
    then follows the exception's record, and the crash is what ended the process. Only a block of its own after the
    record is faulthandler's: a line of the exception's message ("Fatal Python error: ..." in a message, printed in
    its traceback) is no crash."""
    lines = text.splitlines(keepends=True)
    last = max((i for i, line in enumerate(lines) if line.startswith(EXCEPTION_HEADER)), default=None)
    if last is None:
        return Ending(False, faulthandler=text)
    after = _record_end(lines, last)
    fatal = next((i for i in range(after, len(lines)) if lines[i].startswith(FAULTHANDLER_HEADER)), None)
    if fatal is not None:
        return Ending(False, faulthandler="".join(lines[fatal:]))
    return Ending(True, _ending_exception(text))


def _record_end(lines: list[str], header: int) -> int:
    """The first line after the exception record whose header line is lines[header]: bytecode_capture.exception_text
    writes the header, then Python's traceback, which ends with the exception's own lines, `{type}: {message}` from
    the line's start (the traceback's code lines are indented), then a line end. The last such lines are its end (its
    traceback can hold a chained exception with the same words first; faulthandler writes no line of that form).
    Where the record's message is not found there (cut, or a record not of that writer), the line after the header.
    A record that says how many lines its traceback has (every one written since) ends there: a note added to the
    exception (printed after its own line) may read as anything."""
    recorded = uncaught_exceptions(lines[header])
    if recorded and recorded[0].traceback_lines:
        return min(len(lines), header + 1 + recorded[0].traceback_lines)
    if not recorded or len(recorded[0].message) >= MAX_MESSAGE:  # (a message cut: its end is not known)
        return header + 1
    exc = recorded[0]
    # Python prints the class as module.qualname, without the module for builtins (recorded so) and __main__.
    names = "|".join(re.escape(name) for name in dict.fromkeys((exc.type, exc.type.removeprefix("__main__."))))
    message = exc.message.rstrip()  # (the traceback is written rstripped: a message's last line end is not there)
    said = rf"(?:{names}): {re.escape(message)}" if message else rf"(?:{names})"
    rest = "".join(lines[header + 1:])
    end = None
    for end in re.finditer(rf"^{said}[ \t]*$", rest, re.M):
        pass
    if end is None:
        return header + 1
    return header + 1 + rest.count("\n", 0, end.end()) + 1


def exception_said(exc: UncaughtException) -> str:
    """"AssertionError: the message's first line" (bounded), its class without its module: the exception in one line.
    A first line that ends in ":" goes on with the next (torch's "backend='x' raised:" then the backend's error)."""
    lines = [line.strip() for line in exc.message.splitlines() if line.strip()]
    first = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else (lines[0] if lines else "")
    name = exc.type.rsplit(".", 1)[-1]
    return f"{name}: {first[:300]}" if first else name


def ending_said(said: str, exception: bool, thread: str | None) -> str:
    """How a process ended, after "the program", "rank 1" or "process 123", said being the crash in one line:
    "crashed: ...", "stopped with ...", or "lost thread X to ..." (a thread's exception: the process went on)."""
    if not exception:
        return f"crashed: {said}"
    return f"stopped with {said}" if thread is None else f"lost thread {thread} to {said}"


def crash_headline(text: str) -> str:
    """A crash file's first word on it (Ending.headline)."""
    return ending(text).headline

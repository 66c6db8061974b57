"""The warnings torch printed in a program's saved stderr: the same records `run` writes into the log.

A run directory that holds its log and the program's stderr (`output.txt`, as in the shared GPU traces, or
`stderr.txt`) has what torch said on stderr only: "TensorFloat32 tensor cores ... not enabled", "pending,
uninvoked backwards", an autotuning choice that failed. Two shapes of line are read; everything else (the program's
own output) is passed over:

- torch's log records: `W1122 18:24:54.570000 1571 torch/_inductor/select_algorithm.py:3541] [0/0] message`
  (W and E only), with the compile id when torch printed one; the lines of one record share the prefix;
- Python warnings raised in torch's files: `/.../torch/_inductor/compile_fx.py:322: UserWarning: message`
  (the first line: the lines after it are the code that warned, or the program's output).

The file is untrusted input: lines are cut at MAX_LINE characters and at most MAX_RECORDS records are kept.
"""

from __future__ import annotations

import io
import os
from typing import Any, Iterator, TextIO

from ..location import is_url, open_regular_file
from ..lazy_regex import lazy_compile
from .discover import TORCH_LOG_NAME, find_logs

STDERR_NAMES = ("output.txt", "stderr.txt", "stderr.log")
MAX_LINE = 10_000
MAX_RECORDS = 5_000
MAX_RECORD_LINES = 200  # lines of one log record kept (an ERROR's traceback)

_GLOG = lazy_compile(r"(?P<level>[WE])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ (?P<path>torch/[^:\s\]]+):(?P<line>\d{1,9})\] ?(?P<rest>.*)")
_COMPILE_ID = lazy_compile(r"\[(?P<cid>!?[\d-]+(?:/[\d-]+){1,2}(?:_\d+)?)\] ?")  # [0/1], [0/1_1], [!0/1/0]
_ARTIFACT_TAG = lazy_compile(r"\[__\w+\] ?")  # an artifact logger's name: [__cudagraphs]
# A path without ":" but for a drive letter, so that a long line cannot make the match backtrack.
_PY_WARNING = lazy_compile(r"(?P<path>(?:[A-Za-z]:)?[^:\n]+):(?P<line>\d{1,9}): (?P<category>[A-Z]\w{0,80}Warning): (?P<message>.*)")
_LEVELS = {"W": "WARNING", "E": "ERROR"}


def stderr_beside(log_path: str) -> str | None:
    """The saved stderr of the run that wrote this log: a file named as in STDERR_NAMES in the log's directory,
    when that directory holds no other log (with several, it is not known whose stderr it is)."""
    if is_url(log_path):
        return None
    directory = os.path.dirname(os.path.abspath(log_path))
    candidates = [os.path.join(directory, name) for name in STDERR_NAMES]
    found = [p for p in candidates if os.path.isfile(p) and not os.path.samefile(p, log_path)]
    if not found:
        return None
    try:
        # A rank directory holds thousands of logs, each read by its own job: tell by their names first, without
        # a stat of every file per job.
        if sum(1 for name in os.listdir(directory) if name.startswith(TORCH_LOG_NAME)) > 1:
            return None
        logs = [p for p in find_logs(directory) if p not in found]
    except Exception:  # noqa: BLE001 - an unreadable directory has no stderr to read
        return None
    if len(logs) != 1 or not os.path.samefile(logs[0], log_path):
        return None
    return found[0]


def read_stderr_warnings(path: str) -> list[dict[str, Any]]:
    """The warning records of a saved stderr, in the form of `compilescope_warning` payloads plus "compile_id"
    (the text torch printed, "[0/0]", or None)."""
    records: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    prefix = ""
    # (a path found beside a log: a FIFO put there would block open(), a line without end be held whole)
    with io.TextIOWrapper(open_regular_file(path), encoding="utf-8", errors="replace") as stream:
        for line in _lines_cut(stream, MAX_LINE):
            glog = _GLOG.match(line)
            if glog:
                head = line[:glog.start("rest")]
                rest = glog["rest"]
                cid = _COMPILE_ID.match(rest)
                if cid:
                    rest = rest[cid.end():]
                tag = _ARTIFACT_TAG.match(rest)
                if tag:
                    rest = rest[tag.end():]
                if current is not None and head == prefix:  # the same record's next line
                    if len(current["lines"]) < MAX_RECORD_LINES:
                        current["lines"].append(rest)
                    continue
                if len(records) >= MAX_RECORDS:
                    break
                prefix = head
                current = {"lines": [rest], "level": _LEVELS[glog["level"]], "logger": None,
                           "source": f"{glog['path']}:{glog['line']}", "compile_id": f"[{cid['cid']}]" if cid else None,
                           "traced": [], "stack": []}
                records.append(current)
                continue
            current = None
            warning = _PY_WARNING.match(line)
            torch_at = warning["path"].replace("\\", "/").rfind("/torch/") if warning else -1
            if warning and torch_at >= 0:
                if len(records) >= MAX_RECORDS:
                    break
                source = warning["path"].replace("\\", "/")[torch_at + 1:]
                records.append({"lines": [warning["message"]], "category": warning["category"],
                                "source": f"{source}:{warning['line']}", "compile_id": None, "traced": [], "stack": []})
    for record in records:
        record["message"] = "\n".join(record.pop("lines")).rstrip()
    return records


def _lines_cut(stream: TextIO, limit: int) -> Iterator[str]:
    """stream's lines without their newlines, each cut at limit characters: the rest of a longer line is read past a
    piece at a time, never held whole."""
    while piece := stream.readline(limit):
        rest = piece
        while not rest.endswith("\n") and (rest := stream.readline(limit)):
            pass
        yield piece.removesuffix("\n")

"""Split a TORCH_TRACE log into raw records: one glog envelope line plus its payload.

The format (torch/_logging/_internal.py): a glog prefix, one JSON object, then
optional payload lines that each start with a TAB. The md5 in ``has_payload``
covers the payload lines without their TAB, joined by newlines.

This module works on bytes and never raises for bad content: a line that is
neither an envelope nor a payload becomes a record with ``problem`` set, so the
caller can account for every line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import BinaryIO, Iterator

# V1206 15:18:15.925000 1500233 torch/_dynamo/utils.py:1288] {...}
GLOG_PREFIX = re.compile(
    rb"([VIWEC])(\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d{6}) +(\d+) +(.+?):(\d+)\] "
)


@dataclass(slots=True)
class GlogPrefix:
    level: str
    month: int
    day: int
    time: str  # HH:MM:SS
    micros: int
    pid: int
    pathname: str
    lineno: int


@dataclass(slots=True)
class RawRecord:
    """One envelope line and the payload lines that follow it."""

    lineno: int  # 1-based line number of the envelope line
    glog: GlogPrefix | None
    body: bytes  # the JSON text after the prefix (or the whole bad line)
    payload_lines: list[bytes] | None = None
    payload_first_lineno: int = 0
    problem: str | None = None  # "bad_prefix" | "orphan_payload"

    def payload_bytes(self) -> bytes | None:
        if self.payload_lines is None:
            return None
        return b"\n".join(self.payload_lines)


def _parse_prefix(line: bytes) -> tuple[GlogPrefix, bytes] | None:
    m = GLOG_PREFIX.match(line)
    if m is None:
        return None
    level, month, day, hms, micros, pid, pathname, lineno = m.groups()
    prefix = GlogPrefix(
        level.decode(),
        int(month),
        int(day),
        hms.decode(),
        int(micros),
        int(pid),
        pathname.decode("utf-8", "replace"),
        int(lineno),
    )
    return prefix, line[m.end():]


def read_raw_records(stream: BinaryIO) -> Iterator[RawRecord]:
    """Yield records in file order; memory holds one record at a time."""
    current: RawRecord | None = None
    orphan: RawRecord | None = None
    lineno = 0
    for line in stream:
        lineno += 1
        if line.endswith(b"\n"):
            line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
        if line[:1] == b"\t":
            if current is not None:
                if current.payload_lines is None:
                    current.payload_lines = []
                    current.payload_first_lineno = lineno
                current.payload_lines.append(line[1:])
            else:
                # Payload lines with no envelope before them: keep them together
                # as one record so the report can show what was skipped.
                if orphan is None:
                    orphan = RawRecord(lineno, None, b"", [], lineno, "orphan_payload")
                orphan.payload_lines.append(line[1:])
            continue
        if orphan is not None:
            yield orphan
            orphan = None
        if current is not None:
            yield current
            current = None
        if not line.strip():
            continue  # blank lines carry nothing (e.g. a trailing newline)
        parsed = _parse_prefix(line)
        if parsed is None:
            yield RawRecord(lineno, None, line, problem="bad_prefix")
            continue
        current = RawRecord(lineno, parsed[0], parsed[1])
    if orphan is not None:
        yield orphan
    if current is not None:
        yield current

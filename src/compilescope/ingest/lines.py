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
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from ..model.payloads import PayloadBudget, PayloadBuffer

CHUNK = 1 << 20  # a line is read in pieces of at most this many bytes
PREFIX_PROBE = 4096  # a line whose first bytes are not a glog prefix is not read further
MAX_ENVELOPE_LINE = 32 << 20  # longer envelope lines are reported, not read (real ones: < 1 MB)

# V1206 15:18:15.925000 1500233 torch/_dynamo/utils.py:1288] {...}
# Possessive quantifiers and bounded digit runs: matching is linear in the line whatever it holds
# (a run of spaces after the pid made the old pattern quadratic), and int() never sees more digits
# than a pid or line number can have.
GLOG_PREFIX = re.compile(
    rb"([VIWEC])(\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d{6}) ++(\d{1,19}+) ++([^ ].*?):(\d{1,19}+)\] "
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
    body: bytes  # the JSON text after the prefix (or the start of a bad line)
    payload: PayloadBuffer | None = None  # payload lines (TAB removed), as read
    payload_first_lineno: int = 0
    problem: str | None = None  # "bad_prefix" | "orphan_payload" | "bad_json" (line too long) | "read_error"
    detail: str | None = None  # what is wrong, for a problem record
    budget: PayloadBudget | None = None  # how many payload bytes the log may still keep (None: all)

    @property
    def payload_lines(self) -> int:
        return self.payload.lines if self.payload is not None else 0

    def payload_bytes(self) -> bytes | None:
        return self.payload.getvalue() if self.payload is not None else None

    def add_payload_line(self, lineno: int, data: bytes) -> None:
        if self.payload is None:
            self.payload = PayloadBuffer(self.budget)
            self.payload_first_lineno = lineno
        self.payload.new_line(data)


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


def read_raw_records(stream: BinaryIO, budget: PayloadBudget | None = None) -> Iterator[RawRecord]:
    """Yield records in file order.

    Lines are read in pieces of at most CHUNK bytes, so memory stays bounded
    whatever the log holds: payload pieces go to the record's PayloadBuffer
    (which spills to disk), and an envelope line longer than MAX_ENVELOPE_LINE
    is cut and reported instead of being read whole.
    """
    readline = stream.readline
    current: RawRecord | None = None  # the record payload lines attach to
    lineno = 0
    at_start = True  # the next piece starts a line
    in_payload = False  # the line being read is a payload line
    parts: list[bytes] = []  # pieces of the envelope line being read
    keep = False  # the line being read starts like an envelope
    size = 0  # its length in bytes
    carry = b""  # a "\r" held back in case the next piece is its "\n"
    error: str | None = None
    pending: bytes | None = None  # a piece the payload fast path read but did not take
    try:
        first = readline(CHUNK)
    except (OSError, EOFError, zlib.error) as exc:
        error = f"the log cannot be read after line 0: {exc}"
        pending = b""  # ends the loop below as at the end of the file
    else:
        # A UTF-8 byte order mark (an editor's) is not part of the first record.
        pending = first[3:] if first.startswith(b"\xef\xbb\xbf") else first
    while True:
        try:
            if pending is not None:
                piece, pending = pending, None
            else:
                piece = readline(CHUNK) if error is None else b""
        except (OSError, EOFError, zlib.error) as exc:
            # A truncated or corrupt .gz, an I/O error: keep what was read, say where it stopped.
            error = f"the log cannot be read after line {lineno}: {exc}"
            piece = b""
        if carry:
            if not piece:
                # The file ends in a lone "\r" (cut between "\r" and "\n", or CR-only line ends):
                # it ends the line. Fed back as a piece, it would be held back again forever.
                piece = b"\n"
            elif piece[:1] != b"\n":
                piece = carry + piece
            carry = b""
        if not piece:
            if at_start:
                break
            data, ends = b"", True  # end of file ends an unterminated line
        elif piece[-1:] == b"\n":
            data, ends = (piece[:-2] if piece[-2:-1] == b"\r" else piece[:-1]), True
        else:
            if piece[-1:] == b"\r":
                piece, carry = piece[:-1], b"\r"
            data, ends = piece, False

        if at_start:
            lineno += 1
            if ends and not data:
                # An empty line is dropped and does not end a payload (as in tlparse): editors strip the
                # lone TAB of an empty payload line (tlparse's own export.log has such lines).
                continue
            in_payload = data[:1] == b"\t"
            if in_payload:
                if current is None:
                    # Payload lines with no envelope before them: keep them together
                    # as one record so the report can show what was skipped.
                    current = RawRecord(lineno, None, b"", problem="orphan_payload", budget=budget)
                if current.payload is not None:
                    current.payload.new_line(data[1:])
                else:
                    current.add_payload_line(lineno, data[1:])
                if ends and not carry:
                    # Fast path: most of a log is whole payload lines ("\t...\n"); take them in a
                    # tight loop and hand them over in batches. Anything else goes back to the loop above.
                    batch: list[bytes] = []
                    try:
                        while True:
                            piece = readline(CHUNK)
                            if piece[:1] != b"\t" or piece[-1:] != b"\n" or piece[-2:-1] == b"\r":
                                pending = piece
                                break
                            lineno += 1
                            batch.append(piece[1:-1])
                            if len(batch) == 4096:
                                current.payload.add_lines(batch)  # type: ignore[union-attr]
                                batch = []
                    except (OSError, EOFError, zlib.error) as exc:
                        error = f"the log cannot be read after line {lineno}: {exc}"
                        pending = b""  # ends the loop above as at the end of the file
                    if batch:
                        current.payload.add_lines(batch)  # type: ignore[union-attr]
            else:
                if current is not None:
                    yield current
                    current = None
                parts, size = [data], len(data)
                # Only an envelope line is read whole; of any other line the start is enough.
                keep = GLOG_PREFIX.match(data) is not None
        elif in_payload:
            assert current is not None
            current.payload.extend(data)  # type: ignore[union-attr]
        else:
            if size < MAX_ENVELOPE_LINE and (keep or size < PREFIX_PROBE):
                parts.append(data[: MAX_ENVELOPE_LINE - size])
                if not keep:  # the prefix may only now be complete (tiny pieces)
                    keep = GLOG_PREFIX.match(b"".join(parts)) is not None
            size += len(data)
        at_start = ends
        if not ends or in_payload:
            continue

        line = parts[0] if len(parts) == 1 else b"".join(parts)
        parts = []
        if not line.strip():
            continue  # blank lines carry nothing (e.g. a trailing newline)
        parsed = _parse_prefix(line)
        if parsed is None:
            # Payload lines after a line that is not an envelope belong to it: skipped with it.
            current = RawRecord(lineno, None, line[:200], problem="bad_prefix", budget=budget)
        elif size > MAX_ENVELOPE_LINE:
            current = RawRecord(lineno, parsed[0], b"", problem="bad_json", budget=budget,
                                detail=f"envelope line of {size} bytes is longer than {MAX_ENVELOPE_LINE} bytes; skipped")
        else:
            current = RawRecord(lineno, parsed[0], parsed[1], budget=budget)
    if current is not None:
        yield current
    if error is not None:
        yield RawRecord(lineno, None, b"", problem="read_error", detail=error)

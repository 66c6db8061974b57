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
from typing import BinaryIO, Callable, Iterator

from ..model.payloads import PayloadBudget, PayloadBuffer
from ..model.records import dataclass

CHUNK = 1 << 18  # the log is read in blocks of this many bytes; a longer line, in pieces (256 KB: as fast as 1 MB, less held)
PREFIX_PROBE = 4096  # a line whose first bytes are not a glog prefix is not read further
MAX_ENVELOPE_LINE = 32 << 20  # longer envelope lines are reported, not read (real ones: < 1 MB)

# V1206 15:18:15.925000 1500233 torch/_dynamo/utils.py:1288] {...}
# Each run is followed by what it cannot hold (digits by a space or "]", spaces by a digit or a non-space) and digit
# runs are bounded: matching is linear in the line whatever it holds (a run of spaces after the pid made an older
# pattern quadratic), and int() never sees more digits than a pid or line number can have. (No possessive
# quantifiers: Python 3.10 has none.)
GLOG_PREFIX = re.compile(
    rb"([VIWEC])(\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d{6}) +(\d{1,19}) +([^ ].*?):(\d{1,19})\] "
)


_GLOG_FIELDS = ("level", "month", "day", "time", "micros", "pid", "pathname", "lineno")


class GlogPrefix:
    """The glog prefix of a log line: level, date, time, pid, and the file and line that logged it.

    Made from the prefix's regex match and parsed when a field is first read: most records' prefixes are never
    read (a chromium event's, half the records of a real log), and parsing one is eight conversions. Compares,
    and reads back, as the dataclass of those eight fields it stands for.
    """

    __slots__ = ("_match", "_fields")

    def __init__(self, match: re.Match[bytes]) -> None:
        self._match: re.Match[bytes] | None = match  # (dropped once parsed: it holds the block it was found in)
        self._fields: tuple | None = None

    def fields(self) -> tuple[str, int, int, str, int, int, str, int]:
        """(level, month, day, time, micros, pid, pathname, lineno)"""
        fields = self._fields
        if fields is None:
            fields = self._fields = _parse_prefix(self._match)  # type: ignore[arg-type]
            self._match = None
        return fields

    level = property(lambda self: self.fields()[0])
    month = property(lambda self: self.fields()[1])
    day = property(lambda self: self.fields()[2])
    time = property(lambda self: self.fields()[3])  # HH:MM:SS
    micros = property(lambda self: self.fields()[4])

    @property
    def pid(self) -> int:
        """The pid alone, read without parsing the prefix where it is not yet parsed: resets.place asks each compile
        record's, chromium events' too, whose other fields nothing reads."""
        match = self._match
        return int(match[6]) if match is not None else self.fields()[5]

    pathname = property(lambda self: self.fields()[6])
    lineno = property(lambda self: self.fields()[7])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.fields() == other.fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "GlogPrefix(%s)" % ", ".join(f"{k}={v!r}" for k, v in zip(_GLOG_FIELDS, self.fields()))


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
    payload_last_lineno: int = 0  # (more than first + lines - 1 where blank lines inside it were dropped)
    unended: bool = False  # its payload's last line has no newline: the file ends inside it

    @property
    def payload_lines(self) -> int:
        return self.payload.lines if self.payload is not None else 0

    def payload_bytes(self) -> bytes | None:
        return self.payload.getvalue() if self.payload is not None else None

    def add_payload_run(self, lineno: int, data: bytes, lines: int) -> None:
        """Payload lines (TAB removed, joined by newlines) starting at line lineno."""
        if self.payload is None:
            self.payload = PayloadBuffer(self.budget)
            self.payload_first_lineno = lineno
        self.payload.add_run(data, lines)
        self.payload_last_lineno = lineno + lines - 1


_LEVELS = {level.encode(): level for level in "VIWEC"}  # (what GLOG_PREFIX's first group matches)
_PATHNAMES: dict[bytes, str] = {}  # the few files that log, each decoded once (and kept as one object)


def _parse_prefix(m: re.Match[bytes]) -> tuple[str, int, int, str, int, int, str, int]:
    level, month, day, hms, micros, pid, pathname, lineno = m.groups()
    path = _PATHNAMES.get(pathname)
    if path is None:
        if len(_PATHNAMES) > 4096:  # (a log of made-up prefixes)
            _PATHNAMES.clear()
        path = _PATHNAMES[pathname] = pathname.decode("utf-8", "replace")
    return (_LEVELS[level], int(month), int(day), hms.decode(), int(micros), int(pid), path, int(lineno))


def _prefix(m: re.Match[bytes]) -> GlogPrefix:
    """The prefix, parsed now (m is of a line read in pieces: not to be held)."""
    glog = GlogPrefix(m)
    glog.fields()
    return glog


class ReadLimit(OSError):
    """Reading stops at a limit (not at damage): what was read before it, a cut last line included, is kept."""


_READ_ERRORS = (OSError, EOFError, zlib.error)
_SPACE = frozenset(b" \t\n\r\x0b\x0c")  # what bytes.strip() removes
# The end of a run of payload lines: a newline not followed by a TAB (or the end of the block).
_RUN_END = re.compile(rb"\n(?!\t)")


def count_byte(data: bytes, byte: bytes) -> int:
    """data.count(byte), ~3x faster where the byte is sparse (lines of text, brackets of JSON): bytes.count
    looks at every byte in a plain loop, replace finds each with memchr, so deleting them and comparing
    lengths costs less."""
    return len(data) - len(data.replace(byte, b""))


def _read_block(read: Callable[[int], bytes], size: int) -> tuple[bytes, BaseException | None]:
    """Up to size bytes, and the error that stopped reading (the bytes read before it are kept).

    read is read1 where the stream has it: a gzip stream then hands over every byte it decompressed
    before a truncated or corrupt member, as reading line by line did.
    """
    pieces: list[bytes] = []
    got = 0
    while got < size:
        try:
            piece = read(size - got)
        except _READ_ERRORS as exc:
            return b"".join(pieces), exc
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
    return (pieces[0] if len(pieces) == 1 else b"".join(pieces)), None


def read_raw_records(stream: BinaryIO, budget: PayloadBudget | None = None) -> Iterator[RawRecord]:
    """Yield records in file order.

    The log is read in blocks of CHUNK bytes. Runs of payload lines are found with one regex search
    per run and handed to the record's PayloadBuffer (which spills to disk) in one piece, so no
    Python code runs per payload line. A line longer than a block is taken in pieces, so memory
    stays bounded whatever the log holds: an envelope line longer than MAX_ENVELOPE_LINE is cut and
    reported instead of being read whole.

    Lines are as in the log with "\\n" ends; a "\\r" before a "\\n" (or at the end of the file) is
    not part of the line. Empty lines are dropped and do not end a payload (as in tlparse): editors
    strip the lone TAB of an empty payload line (tlparse's own export.log has such lines).
    """
    read = getattr(stream, "read1", None) or stream.read
    probe = max(CHUNK, PREFIX_PROBE)  # how much of a line is matched against the glog prefix
    current: RawRecord | None = None  # the record payload lines attach to
    lineno = 0
    carry = b""  # the start of a line whose end is not read yet
    long_line: str | None = None  # a line read in pieces: "payload" | "other"
    parts: list[bytes] = []  # the start of a long "other" line (up to MAX_ENVELOPE_LINE)
    kept = 0  # bytes in parts
    size = 0  # length of the long "other" line so far
    envelope_like: bool | None = None  # whether it starts with a glog prefix (None: not known yet)
    error: BaseException | None = None
    first = True

    def line_record(line: bytes, length: int) -> RawRecord | None:
        """The record a whole non-payload line starts (None: a blank line, which ends the payload before it)."""
        if not line or (line[0] in _SPACE and not line.strip()):  # (strip copies: asked only where it may be blank)
            return None
        m = GLOG_PREFIX.match(line, 0, probe)
        if m is None:
            # Payload lines after a line that is not an envelope belong to it: skipped with it.
            return RawRecord(lineno, None, line[:200], problem="bad_prefix", budget=budget)
        glog = _prefix(m)
        if length > MAX_ENVELOPE_LINE:
            return RawRecord(lineno, glog, b"", problem="bad_json", budget=budget,
                             detail=f"envelope line of {length} bytes is longer than {MAX_ENVELOPE_LINE} bytes; skipped")
        return RawRecord(lineno, glog, line[m.end():], budget=budget)

    def add_to_other(piece: bytes) -> None:
        nonlocal kept, size, envelope_like, parts
        size += len(piece)
        if envelope_like is False or kept >= MAX_ENVELOPE_LINE:
            return
        piece = piece[: MAX_ENVELOPE_LINE - kept]
        parts.append(piece)
        kept += len(piece)
        if envelope_like is None and kept >= probe:
            head = b"".join(parts)
            envelope_like = GLOG_PREFIX.match(head, 0, probe) is not None
            # Of a line that is no envelope the start is enough (it is quoted, not read).
            parts = [head if envelope_like else head[:probe]]

    while True:
        block, error = _read_block(read, CHUNK)
        if first:
            first = False
            # A UTF-8 byte order mark (an editor's) is not part of the first record.
            if block.startswith(b"\xef\xbb\xbf"):
                block = block[3:]
        if not block:
            break
        pos = 0
        head = b""  # the line the last block cut, made whole (where it ends in this block)
        if carry and long_line is None and (nl := block.find(b"\n")) >= 0:
            # Read on its own: joining the carry to the whole block copied every byte of the log once more.
            head, data, pos = carry + block[:nl + 1], block, nl + 1
        else:
            data = carry + block if carry else block
        block = b""  # (not held twice)
        if long_line is not None:
            nl = data.find(b"\n")
            if nl < 0:
                # Still inside the long line; a final "\r" waits: it may be the start of its "\r\n".
                cut = len(data) - 1 if data[-1:] == b"\r" else len(data)
                carry = data[cut:]
                piece = data[:cut]
                if long_line == "payload":
                    current.payload.extend(piece)  # type: ignore[union-attr]
                else:
                    add_to_other(piece)
                continue
            piece = data[: nl - 1] if data[nl - 1:nl] == b"\r" else data[:nl]
            pos = nl + 1
            if long_line == "payload":
                current.payload.extend(piece)  # type: ignore[union-attr]
            else:
                add_to_other(piece)
                current = line_record(b"".join(parts), size)
            long_line = None
        for data, pos in ((head, 0), (data, pos)) if head else ((data, pos),):
            end = data.rfind(b"\n") + 1  # the whole lines of this block end here
            while pos < end:
                c = data[pos]
                if c == 9:  # TAB: a run of payload lines
                    run_end = _RUN_END.search(data, pos, end).start()  # type: ignore[union-attr]
                    if current is None:
                        # Payload lines with no envelope before them: kept together as one record,
                        # so the report can show what was skipped.
                        current = RawRecord(lineno + 1, None, b"", problem="orphan_payload", budget=budget)
                    run = data[pos + 1:run_end]
                    n = count_byte(run, b"\n") + 1
                    if b"\r" in run:
                        lines = [line[:-1] if line[-1:] == b"\r" else line for line in run.split(b"\n\t")]
                        current.add_payload_run(lineno + 1, b"\n".join(lines), n)
                    elif n == 1:
                        current.add_payload_run(lineno + 1, run, 1)
                    else:
                        # Deleting every TAB is 3x faster than replacing "\n\t", and right when the only TABs
                        # are the lines' own n - 1 (usual: code is indented with spaces, JSON escapes them).
                        stripped = run.replace(b"\t", b"")
                        if len(stripped) != len(run) - n + 1:
                            stripped = run.replace(b"\n\t", b"\n")
                        current.add_payload_run(lineno + 1, stripped, n)
                    lineno += n
                    pos = run_end + 1
                elif c == 10:  # an empty line
                    lineno += 1
                    pos += 1
                else:
                    nl = data.index(b"\n", pos)
                    line_end = nl - 1 if data[nl - 1] == 13 else nl
                    start = pos
                    pos = nl + 1
                    lineno += 1
                    if line_end == start:
                        continue  # "\r\n": an empty line
                    if current is not None:
                        yield current
                    # An envelope (nearly every such line) is matched where it lies and only its JSON is copied out;
                    # anything else goes through line_record, as a line of its own.
                    m = GLOG_PREFIX.match(data, start, min(line_end, start + probe))
                    if m is not None and line_end - start <= MAX_ENVELOPE_LINE:
                        current = RawRecord(lineno, GlogPrefix(m), data[m.end():line_end], None, 0, None, None, budget)
                    else:
                        line = data[start:line_end]
                        current = line_record(line, len(line))
        carry = data[end:] if pos <= end else b""
        if len(carry) >= CHUNK and len(carry) > 1:
            # A line longer than a block: taken in pieces from here on.
            cut = len(carry) - 1 if carry[-1:] == b"\r" else len(carry)
            piece, carry = carry[:cut], carry[cut:]
            lineno += 1
            if piece[:1] == b"\t":
                long_line = "payload"
                if current is None:
                    current = RawRecord(lineno, None, b"", problem="orphan_payload", budget=budget)
                current.add_payload_run(lineno, piece[1:], 1)
            else:
                long_line = "other"
                if current is not None:
                    yield current
                    current = None
                parts, kept, size, envelope_like = [], 0, 0, None
                add_to_other(piece)
        if error is not None:
            break

    if error is None or isinstance(error, ReadLimit):
        # The end of the file (or of what may be read) ends the last line; so does a lone "\r" there.
        last = carry[:-1] if carry[-1:] == b"\r" else carry
        if long_line == "payload":
            current.payload.extend(last)  # type: ignore[union-attr]
            current.unended = True  # type: ignore[union-attr]
        elif long_line == "other":
            add_to_other(last)
            current = line_record(b"".join(parts), size)
        elif last:
            lineno += 1
            if last[:1] == b"\t":
                if current is None:
                    current = RawRecord(lineno, None, b"", problem="orphan_payload", budget=budget)
                current.add_payload_run(lineno, last[1:], 1)
                current.unended = True
            else:
                if current is not None:
                    yield current
                current = line_record(last, len(last))
    elif long_line == "other":
        # A truncated or corrupt .gz, an I/O error: what was read of a line in pieces ends there;
        # the start of a line not yet taken is lost with the block the error cut.
        current = line_record(b"".join(parts), size)
    if current is not None:
        yield current
    if error is not None:
        where = f"after line {lineno}" if lineno else "from its start"
        yield RawRecord(lineno, None, b"", problem="read_error", detail=f"the log cannot be read {where}: {error}")

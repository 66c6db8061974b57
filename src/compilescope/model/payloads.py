"""PayloadStore: payload text spilled to a temporary file, so memory does not grow with the log."""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import tempfile
import weakref
from typing import IO, Callable, Iterator

import orjson
from .records import dataclass

CHUNK = 1 << 20  # bytes read or written at a time when copying a payload
SPILL_AT = 8 << 20  # a payload being read moves from memory to a temporary file past this size


def json_object(value: object) -> dict:
    """A JSON object logged as text (a payload, or a string in an event's args) or already read; {} where it is not
    one (the log is untrusted: a damaged or other-shaped payload reads as nothing)."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        return {}
    try:
        value = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _read_at(file: IO[bytes], offset: int, size: int) -> bytes:
    """size bytes of file from offset, leaving its position alone where the system allows.

    A report may be written by two processes (output.py forks): they share these spool files, and with
    them one file position, so a seek then read in one could read what the other's seek pointed at.
    """
    if _pread is None:  # (Windows: no fork there, so one process)
        file.seek(offset)
        return file.read(size)
    return _pread(file.fileno(), size, offset)


_pread = getattr(os, "pread", None)


PAYLOAD_KEY = "_payload_key"  # in a spooled raw.jsonl line: the payload_key when it is not has_payload


def payload_key(md5: str, genuine: bool, lineno: int) -> str:
    """The name a payload is kept under in payloads/: its md5 when the md5 is the payload's own,
    else the claimed md5 and the envelope's line, so a forged md5 never names (and overwrites)
    another record's payload."""
    return md5 if genuine else f"{md5}-L{lineno}"


@dataclass(slots=True)
class PayloadRef:
    """Where one payload is in the payload spool: offset, length in bytes, number of lines."""

    offset: int
    length: int  # bytes (UTF-8)
    lines: int  # number of lines, for display without reading

    def to_json(self) -> list[int]:
        return [self.offset, self.length, self.lines]


class PayloadStore:
    """Append-only spool of UTF-8 payloads; read back by reference."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="compilescope-payloads-")
        # A Results or Trace never closed (a notebook's) closes its spool when collected, without a ResourceWarning
        # (the file is unlinked already: nothing stays on disk).
        weakref.finalize(self, self._file.close)
        self._end = 0
        self._unflushed = False  # written since the last flush: a positioned read sees only flushed bytes
        # The file's position may not be its end (a read that is not positioned moved it): put seeks first.
        # Not seeking otherwise saves a flush and an lseek per payload (a buffered file's seek does both).
        self._moved = False

    def put(self, payload: str | PayloadBuffer) -> PayloadRef:
        """Store a payload (text, or a buffer as read from the log: copied in chunks)."""
        self._unflushed = True
        if self._moved:
            self._file.seek(self._end)
            self._moved = False
        if isinstance(payload, PayloadBuffer):
            length = 0
            for data in payload.utf8_chunks():
                self._file.write(data)
                length += len(data)
            lines = payload.lines if payload.size else 0
            if payload.cut_bytes:  # what is kept: the lines that fit, and the note
                self._file.seek(self._end)
                lines = sum(data.count(b"\n") for data in iter(lambda: self._file.read(CHUNK), b"")) + 1
                self._moved = True
            ref = PayloadRef(self._end, length, lines)
        else:
            data = payload.encode("utf-8", "surrogatepass")
            self._file.write(data)
            ref = PayloadRef(self._end, len(data), payload.count("\n") + 1 if payload else 0)
        self._end += ref.length
        return ref

    def get(self, ref: PayloadRef) -> str:
        return self._read(ref.offset, ref.length).decode("utf-8", "replace")

    def _read(self, offset: int, size: int) -> bytes:
        if self._unflushed:
            self._file.flush()
            self._unflushed = False
        if _pread is None:
            self._moved = True
        return _read_at(self._file, offset, size)

    def chunks(self, ref: PayloadRef | None, size: int = CHUNK) -> Iterator[bytes]:
        """A payload's UTF-8 bytes in chunks (for writing a huge payload without holding it)."""
        if ref is None:
            return
        done = 0
        while done < ref.length:
            data = self._read(ref.offset + done, min(size, ref.length - done))
            if not data:
                return
            done += len(data)
            yield data

    def iter_lines(self, ref: PayloadRef | None) -> Iterator[str]:
        """A payload's lines, without their newline, read in chunks."""
        rest = b""
        for data in self.chunks(ref):
            parts = (rest + data).split(b"\n")
            rest = parts.pop()
            for part in parts:
                yield part.decode("utf-8", "replace")
        if ref is not None and ref.length:
            yield rest.decode("utf-8", "replace")

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed

    @property
    def size(self) -> int:
        return self._end

    # A saved Trace (model/codec.py) keeps the store's bytes, so every PayloadRef still points where it did.
    def codec_state(self) -> bytes:
        return b"".join(self.chunks(PayloadRef(0, self._end, 0)))

    @classmethod
    def from_codec_state(cls, data: bytes) -> PayloadStore:
        store = cls()
        store._file.write(data)
        store._end = len(data)
        store._unflushed = True
        return store

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PayloadStore) and self.codec_state() == other.codec_state()

    __hash__ = None  # type: ignore[assignment]


class PayloadBudget:
    """How many payload bytes a log may still keep: a compressed log's payloads are kept up to a
    multiple of its size on disk, so a small .gz cannot become GBs of report (real logs compress
    5 to 15 times). Past it, each payload keeps what fit, and says so where it is shown."""

    __slots__ = ("limit", "remaining")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.remaining = limit


class PayloadBuffer:
    """One payload as it is read from the log: its lines (TAB removed) joined by newlines.

    Held in memory while small (as the pieces the reader handed over: most payloads are one piece,
    kept without a copy) and moved to a temporary file past SPILL_AT bytes, so a huge payload never
    sits in memory whole. Bytes are kept as logged; md5 and UTF-8 checks read them back in chunks.
    With a budget, bytes past it are not kept (cut_bytes counts them; the md5 is still of the whole
    payload).
    """

    __slots__ = ("_parts", "_held", "_file", "size", "lines", "_valid", "_budget", "cut_bytes", "_md5")

    def __init__(self, budget: PayloadBudget | None = None) -> None:
        self._parts: list[bytes] = []
        self._held = 0  # bytes in _parts
        self._file = None
        self.size = 0  # bytes as logged (kept or not)
        self.lines = 0
        self._valid: bool | None = None  # valid UTF-8, once checked
        self._budget = budget
        self.cut_bytes = 0
        self._md5 = hashlib.md5(usedforsecurity=False) if budget is not None else None

    def add_run(self, data: bytes, lines: int) -> None:
        """Whole lines (joined by newlines, as the reader finds them in a block) after those so far."""
        if self.lines:
            self._append(b"\n")
        elif not self.size and self._budget is None and len(data) <= SPILL_AT:
            # The first run of a payload with no budget (a plain log): what _append does, without the call. Most
            # payloads are one run.
            self.size = self._held = len(data)
            self._parts.append(data)
            self.lines = lines
            return
        self._append(data)
        self.lines += lines

    def extend(self, data: bytes) -> None:
        """More of the current line (a long line arrives in pieces)."""
        self._append(data)

    def _append(self, data: bytes) -> None:
        self.size += len(data)
        if self._budget is not None:
            self._md5.update(data)  # type: ignore[union-attr]
            if self.cut_bytes or len(data) > self._budget.remaining:
                keep = 0 if self.cut_bytes else self._budget.remaining
                self.cut_bytes += len(data) - keep
                data = data[:keep]
            self._budget.remaining -= len(data)
        if self._file is not None:
            self._file.write(data)
            return
        self._parts.append(data)
        self._held += len(data)
        if self._held > SPILL_AT:
            self._spill()

    def _spill(self) -> None:
        spill = tempfile.TemporaryFile(prefix="compilescope-payload-")
        spill.writelines(self._parts)
        self._file = spill  # type: ignore[assignment]  # (slots: declared as None in __init__)
        self._parts = []
        self._held = 0

    def _whole(self) -> bytes:
        """The payload held in memory, as one bytes object (joined once)."""
        if len(self._parts) != 1:
            self._parts = [b"".join(self._parts)]
        return self._parts[0]

    def chunks(self) -> Iterator[bytes]:
        if self._file is None:
            yield self._whole()
            return
        self._file.flush()
        self._file.seek(0)
        while data := self._file.read(CHUNK):
            yield data
        self._file.seek(0, 2)

    def getvalue(self) -> bytes:
        return self._whole() if self._file is None else b"".join(self.chunks())

    def md5(self) -> str:
        if self._md5 is not None:
            return self._md5.hexdigest()
        parts = self._parts
        if self._file is None and len(parts) == 1:  # (most payloads: one piece, hashed in one call)
            return hashlib.md5(parts[0], usedforsecurity=False).hexdigest()
        digest = hashlib.md5(usedforsecurity=False)
        for data in self._parts if self._file is None else self.chunks():
            digest.update(data)
        return digest.hexdigest()

    def invalid_utf8_at(self) -> int | None:
        """Offset of the first byte that is not valid UTF-8, or None."""
        if self._file is None:
            data = self._parts[0] if len(self._parts) == 1 else self._whole()
            if not data.isascii():  # (most payloads are ASCII: checked without decoding)
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self._valid = False
                    return exc.start
            self._valid = True
            return None
        decoder = codecs.getincrementaldecoder("utf-8")()
        offset = 0  # bytes fed to the decoder so far
        for data in self.chunks():
            try:
                decoder.decode(data)
            except UnicodeDecodeError as exc:
                # exc.object is the decoder's pending bytes followed by data.
                self._valid = False
                return offset + len(data) - len(exc.object) + exc.start
            offset += len(data)
        try:
            decoder.decode(b"", True)
        except UnicodeDecodeError as exc:
            self._valid = False
            return offset - len(exc.object) + exc.start
        self._valid = True
        return None

    def utf8_chunks(self) -> Iterator[bytes]:
        """The payload as valid UTF-8 (invalid bytes replaced by U+FFFD), in chunks; a cut one ends with cut_note()."""
        if self._valid is None:
            self.invalid_utf8_at()
        if self._valid:
            yield from self.chunks()
        else:
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            for data in self.chunks():
                yield decoder.decode(data).encode("utf-8")
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail.encode("utf-8")
        if self.cut_bytes:
            yield self.cut_note().encode()

    def cut_note(self) -> str:
        """The line that ends a cut payload wherever it is shown."""
        kept = self.size - self.cut_bytes
        limit = self._budget.limit if self._budget is not None else 0
        return (f"\n[compilescope: payload cut here: {kept:,} of its {self.size:,} bytes kept (a compressed log keeps "
                f"{limit:,} bytes of payloads, a multiple of its size on disk); the whole payload is in the log]")

    @property
    def is_text_as_logged(self) -> bool:
        """Checked valid UTF-8 and not cut: its bytes are its text() (e.g. orjson reads them without a decode)."""
        return bool(self._valid) and not self.cut_bytes

    def text(self) -> str:
        text = self.getvalue().decode("utf-8", "replace")
        return text + self.cut_note() if self.cut_bytes else text

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._parts = []
        self._held = 0


class Spool:
    """An append-only temporary byte stream, read back in chunks (e.g. raw.jsonl)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="compilescope-spool-")
        weakref.finalize(self, self._file.close)  # (as PayloadStore's: quiet when never closed)
        # write(data): the file's own, bound once (readers call it per record: no call of ours in between)
        self.write: Callable[[bytes], object] = self._file.write

    def chunks(self, size: int = 1 << 20) -> Iterator[bytes]:
        self._file.flush()
        offset = 0
        while chunk := _read_at(self._file, offset, size):  # (positioned: see _read_at)
            yield chunk
            offset += len(chunk)

    def lines(self, size: int = 1 << 18) -> Iterator[bytes]:
        """Each line with its newline (the last may have none), as iterating the file gives them."""
        pending: list[bytes] = []  # the start of a line that goes on in the next chunk
        for chunk in self.chunks(size):
            first = chunk.find(b"\n") + 1
            if not first:
                pending.append(chunk)
                continue
            pending.append(chunk[:first])
            yield b"".join(pending)
            last = chunk.rfind(b"\n") + 1
            if last > first:
                yield from io.BytesIO(chunk[first:last])
            pending = [chunk[last:]]
        tail = b"".join(pending)
        if tail:
            yield tail

    def close(self) -> None:
        self._file.close()

    def codec_state(self) -> bytes:
        return b"".join(self.chunks())

    @classmethod
    def from_codec_state(cls, data: bytes) -> Spool:
        spool = cls()
        spool.write(data)
        return spool

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spool) and self.codec_state() == other.codec_state()

    __hash__ = None  # type: ignore[assignment]


class JsonLines:
    """JSON objects spooled one per line (e.g. chromium events): counted, iterable, never all in memory."""

    def __init__(self) -> None:
        self._spool = Spool()
        self._count = 0
        self._write = self._spool.write

    def append(self, obj: object) -> None:
        self._write(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))  # (no copy to add the newline)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        for line in self._spool.lines():
            yield orjson.loads(line)

    def json_array(self, size: int = 1 << 18) -> Iterator[bytes]:
        """The objects as one JSON array (the lines joined by ",\\n"), in chunks of about `size` bytes: made from
        the spool's bytes a chunk at a time, not a line at a time (chromium_events.json of a 450 MB log is
        540,000 lines, each one a Python step here and in the writer)."""
        yield b"["
        previous = None
        for chunk in self._spool.chunks(size):
            if previous is not None:
                yield previous.replace(b"\n", b",\n")
            previous = chunk
        if previous is not None:
            yield (previous[:-1] if previous.endswith(b"\n") else previous).replace(b"\n", b",\n")
        yield b"]"

    def close(self) -> None:
        self._spool.close()

    def codec_state(self) -> bytes:
        return self._spool.codec_state()

    @classmethod
    def from_codec_state(cls, data: bytes) -> JsonLines:
        lines = cls()
        lines._spool.write(data)
        lines._count = data.count(b"\n")
        return lines

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonLines) and self.codec_state() == other.codec_state()

    __hash__ = None  # type: ignore[assignment]

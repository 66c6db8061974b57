"""PayloadStore: payload text spilled to a temporary file, so memory does not grow with the log."""

from __future__ import annotations

import tempfile

import orjson
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PayloadRef:
    offset: int
    length: int  # bytes (UTF-8)
    lines: int  # number of lines, for display without reading

    def to_json(self) -> list[int]:
        return [self.offset, self.length, self.lines]


class PayloadStore:
    """Append-only spool of UTF-8 payloads; read back by reference."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="compilescope-payloads-")
        self._end = 0

    def put(self, text: str) -> PayloadRef:
        data = text.encode("utf-8", "surrogatepass")
        self._file.seek(self._end)
        self._file.write(data)
        ref = PayloadRef(self._end, len(data), text.count("\n") + 1 if text else 0)
        self._end += len(data)
        return ref

    def get(self, ref: PayloadRef) -> str:
        self._file.seek(ref.offset)
        return self._file.read(ref.length).decode("utf-8", "replace")

    def close(self) -> None:
        self._file.close()

    @property
    def size(self) -> int:
        return self._end


class Spool:
    """An append-only temporary byte stream, read back in chunks (e.g. raw.jsonl)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="compilescope-spool-")

    def write(self, data: bytes) -> None:
        self._file.write(data)

    def chunks(self, size: int = 1 << 20):
        self._file.flush()
        self._file.seek(0)
        while chunk := self._file.read(size):
            yield chunk
        self._file.seek(0, 2)

    def lines(self):
        self._file.flush()
        self._file.seek(0)
        for line in self._file:
            yield line
        self._file.seek(0, 2)

    def close(self) -> None:
        self._file.close()


class JsonLines:
    """JSON objects spooled one per line (e.g. chromium events): counted, iterable, never all in memory."""

    def __init__(self) -> None:
        self._spool = Spool()
        self._count = 0

    def append(self, obj: object) -> None:
        self._spool.write(orjson.dumps(obj) + b"\n")
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self):
        for line in self._spool.lines():
            yield orjson.loads(line)

    def json_array(self):
        """The objects as one JSON array, in chunks."""
        yield b"["
        first = True
        for line in self._spool.lines():
            yield (b"" if first else b",\n") + line.rstrip(b"\n")
            first = False
        yield b"]"

    def close(self) -> None:
        self._spool.close()

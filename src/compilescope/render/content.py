"""What a renderer gives for one file of a report, and how a file's content waits until it is written."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, TypeVar, Union

Content = Union[str, bytes, Iterable[bytes]]

PIECE = 1 << 20  # characters encoded at a time: a big page is never held as text and bytes at once


def later(make: Callable[[], "str | bytes"]) -> Iterator[bytes]:
    """make()'s content, worked out only when the file is written (this generator's first step).

    A report written by several processes (output.py) walks every file in each of them and skips the files
    another process writes: what a skipped file would contain must cost nothing.
    """
    content = make()
    if isinstance(content, bytes):
        yield content
        return
    for start in range(0, len(content), PIECE):
        yield content[start:start + PIECE].encode("utf-8", "replace")


AnyStr = TypeVar("AnyStr", str, bytes)


def chunked(pieces: Iterable[AnyStr], size: int, empty: AnyStr) -> Iterator[AnyStr]:
    """pieces joined into chunks of about `size` bytes or characters (each as soon as it is that long): handed on
    a few at a time, never a small piece at a time, nor all at once. empty: b"" for bytes, "" for text."""
    run: list[AnyStr] = []
    n = 0
    for piece in pieces:
        run.append(piece)
        n += len(piece)
        if n >= size:
            yield empty.join(run)
            run, n = [], 0
    if run:
        yield empty.join(run)

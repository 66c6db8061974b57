"""A progress bar on stderr while a big log is read: only on a terminal, only when it takes a moment."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..invisible import one_line, safe_terminal_text

SHOW_ABOVE_BYTES = 32 << 20  # smaller logs are read in well under a second


@contextmanager
def read_progress(path: str, stream=None) -> Iterator[Callable[[int], None] | None]:
    """Yields a ReadOptions.progress callback, or None when no bar should be shown."""
    stream = stream or getattr(sys.stderr, "unguarded", sys.stderr)  # the bar moves the cursor: see terminal_guard
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    gzipped = path.endswith(".gz")
    if not stream.isatty() or os.environ.get("CI") or (size < SHOW_ABOVE_BYTES and not gzipped) or size < (4 << 20):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    # The file's name, as a directory's listing gave it: never markup, and on one line (the bar writes past the guard).
    columns = [TextColumn("reading {task.description}", markup=False), BarColumn(), DownloadColumn()]
    if not gzipped:
        columns.append(TimeRemainingColumn())
    with Progress(*columns, console=Console(file=stream), transient=True) as bar:
        # A .gz log's decompressed size is unknown up front: show bytes read, no total.
        task = bar.add_task(one_line(os.path.basename(path)), total=None if gzipped else size)
        yield lambda done: bar.update(task, completed=done)


class RankProgress:
    """Ranks done out of ranks total, on stderr while a multi-rank report runs: a bar on a terminal;
    elsewhere (a CI log, a file) a line at every tenth of the ranks, once there are enough ranks to wait for."""

    LINES_ABOVE = 20  # fewer ranks take seconds: no progress lines in a log

    def __init__(self, stream=None, tty: bool | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() and not os.environ.get("CI") if tty is None else tty
        self.total = 0
        self.done = 0
        self._bar: Any = None  # a rich Progress, imported only when a terminal shows it
        self._task: Any = None
        self._next_line = 0

    def start(self, total: int) -> None:
        self.total = total
        self._next_line = max(1, total // 10)
        if self.tty and total > 1:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            # The bar moves the cursor: past the stream's guard, which would show its codes as \u001b[2K.
            console = Console(file=getattr(self.stream, "unguarded", self.stream), force_terminal=True)
            self._bar = Progress(TextColumn("ranks"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task("ranks", total=total)

    def advance(self) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif not self.tty and self.total >= self.LINES_ABOVE and (self.done >= self._next_line or self.done == self.total):
            print(f"compilescope: {self.done}/{self.total} ranks done", file=self.stream, flush=True)
            self._next_line = self.done + max(1, self.total // 10)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def print(self, line: str) -> None:
        """A line above the bar (printed straight to the stream when there is none)."""
        if self._bar is not None:  # (past the guard, as the bar is: escaped here)
            self._bar.console.print(safe_terminal_text(line), markup=False, highlight=False)
        else:
            print(line, file=self.stream)

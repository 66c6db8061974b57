"""A progress bar on stderr while a big log is read: only on a terminal, only when it takes a moment."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

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

    columns = [TextColumn("reading {task.description}"), BarColumn(), DownloadColumn()]
    if not gzipped:
        columns.append(TimeRemainingColumn())
    with Progress(*columns, console=Console(file=stream), transient=True) as bar:
        # A .gz log's decompressed size is unknown up front: show bytes read, no total.
        task = bar.add_task(os.path.basename(path), total=None if gzipped else size)
        yield lambda done: bar.update(task, completed=done)

"""What may be at a path a log names, or a file beside a log, on the machine that reads it: each test of a reader of
such paths sets up the same folder (local_files) and expects the one regular file of bounded size read and every other
refused, never waited on or read without end."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def local_files(folder: Path, original: Path, too_big: int, suffix: str = ".py") -> None:
    """In folder, each name ending in suffix: copy, a copy of original; fifo, a FIFO (its open waits for a writer,
    forever); folder, a directory; zero, a symlink to /dev/zero (never ends); huge, too_big bytes of NUL (sparse:
    nothing is written). gone is left absent."""
    shutil.copy(original, folder / f"copy{suffix}")
    os.mkfifo(folder / f"fifo{suffix}")
    (folder / f"folder{suffix}").mkdir()
    (folder / f"zero{suffix}").symlink_to("/dev/zero")
    with open(folder / f"huge{suffix}", "wb") as f:
        f.truncate(too_big)

"""What may be at a path a log names, on the machine that reads it: each test of a reader of such paths sets up the
same folder (local_files) and expects the one regular file of bounded size read and every other refused, never waited
on or read without end."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

def local_files(folder: Path, program: Path, too_big: int) -> None:
    """In folder: copy.py, a copy of program; fifo.py, a FIFO (its open waits for a writer, forever); folder.py, a
    directory; zero.py, a symlink to /dev/zero (never ends); huge.py, too_big bytes (sparse: nothing is written)."""
    shutil.copy(program, folder / "copy.py")
    os.mkfifo(folder / "fifo.py")
    (folder / "folder.py").mkdir()
    (folder / "zero.py").symlink_to("/dev/zero")
    with open(folder / "huge.py", "wb") as f:
        f.truncate(too_big)

"""The user's source files a log names, as read on this machine (ingest/source_files.py reads them): the program's
files, the kernels' and custom ops' files, the modules those import. Analyses look them up here and never read the
disk, so what they say depends on this object, not on when or where they run. Not saved: a saved Results keeps what
the analyses said of the files, not the files.
"""

from __future__ import annotations

from ..location import NOT_A_FILE, NOT_HERE, TOO_BIG
from .records import NamedTuple

MAX_READ_BYTES = 8 << 20  # the most any analysis reads of one file (user_kernels'); the others bound lower (lines)
MAX_SOURCE_BYTES = 4 << 20  # a user's source file bigger than this is not read as lines: source pages, state_lines, custom ops


class SourceText(NamedTuple):
    """One file, read once: its lines, or None and why not (location's NOT_HERE, NOT_A_FILE, TOO_BIG or the OS's
    reason)."""

    lines: tuple[str, ...] | None
    refused: str = ""
    size: int = 0  # its size in bytes when read (an analysis with a lower bound than MAX_READ_BYTES refuses more)


class SourceFiles:
    """path (as the log writes it) -> SourceText, for each path asked for; a path never asked for reads as not here."""

    def __init__(self, read: dict[str, SourceText] | None = None) -> None:
        self.read: dict[str, SourceText] = dict(read or {})

    def __contains__(self, path: object) -> bool:
        return path in self.read

    def __len__(self) -> int:
        return len(self.read)

    def text(self, path: str, max_bytes: int = MAX_READ_BYTES) -> SourceText:
        """The file's lines where it holds at most max_bytes, else None and why not (as read_local_lines says)."""
        found = self.read.get(path)
        if found is None:
            return SourceText(None, NOT_HERE)
        if found.lines is not None and found.size > max_bytes:
            return SourceText(None, TOO_BIG, found.size)
        return found

    def lines(self, path: str, max_bytes: int = MAX_READ_BYTES) -> tuple[str, ...] | None:
        return self.text(path, max_bytes).lines

    def is_regular_file(self, path: str) -> bool:
        """Whether the path named a regular file when read (os.path.isfile's answer): read, too big, or unreadable."""
        found = self.read.get(path)
        return found is not None and found.refused not in (NOT_HERE, NOT_A_FILE)


NO_FILES = SourceFiles()  # what an analysis given no files sees: none is on this machine

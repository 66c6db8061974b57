"""The text the terminal renderers hand to rich, already as the terminal will show it.

rich measures a control character (ESC, BEL, a C1 CSI, a bidi override) as 0 columns. Escaped only once rich
had laid out the lines (an ESC written as \\u001b, 6 columns), a log's control character pushed the border of
its panel or the cells of its table row out of line. TerminalText escapes its strings before rich measures them,
by the terminal's one rule (invisible.safe_terminal_text), so the columns rich counts are the ones printed.

A TerminalText is never read as rich markup or emoji codes either: a function named `[link=http://…]x[/link]`
in a table cell given as a str became a terminal hyperlink. Every string a renderer takes from a log goes to
rich as a TerminalText, a table's cells included.
"""

from __future__ import annotations

import re
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.text import Text

from ..invisible import safe_terminal_text


class TerminalText(Text):
    """rich Text whose strings, given or appended, have every control, bidi and zero-width character written as
    its visible escape. (A Text appended is taken as it is: append its strings, or a TerminalText.)"""

    def __init__(self, text: str = "", style: str | Style = "", **kwargs: Any) -> None:
        super().__init__(safe_terminal_text(text), style, **kwargs)

    def append(self, text: str | Text, style: str | Style | None = None) -> TerminalText:
        super().append(safe_terminal_text(text) if isinstance(text, str) else text, style)
        return self


ELLIPSIS = "…"
_PATH_PARTS = re.compile(r"[^/]*/|[^/]+")  # each directory with its "/", then the file's name


def shorten_middle(name: str, width: int) -> str:
    """name in at most width columns: its middle cut out for "…" where it is longer (its start and its end, a log's
    rank and random suffix, say which it is)."""
    if cell_len(name) <= width:
        return name
    head = tail = ""
    for char in name:  # (by columns: a wide character takes two)
        if cell_len(head + char) > (width - 1) // 2:
            break
        head += char
    for char in reversed(name):
        if cell_len(head + ELLIPSIS + char + tail) > width:
            break
        tail = char + tail
    return head + ELLIPSIS + tail


def fold_path(path: str, width: int) -> list[str]:
    """path as lines of at most width columns, broken only after a "/": never inside a directory's or a file's name.
    A name longer than a whole line has one of its own, its middle cut out (shorten_middle)."""
    lines: list[str] = []
    line = ""
    for part in _PATH_PARTS.findall(path):
        if line and cell_len(line + part) > width:
            lines.append(line)
            line = ""
        line += part
        if cell_len(line) > width:  # a name longer than the line, alone on it
            lines.append(shorten_middle(line, width))
            line = ""
    if line or not lines:
        lines.append(line)
    return lines


class FoldedPath:
    """prefix, then a path folded at its "/"s under the path's own start (fold_path): rich breaks a word too long for
    the line anywhere, and a log's name ("…h40da74u.lo" / "g") was split in the middle."""

    def __init__(self, prefix: Text, path: str, style: str | Style = "") -> None:
        self.prefix = prefix
        self.path = safe_terminal_text(path)  # escaped first, so that the columns counted are the ones printed
        self.style = style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        indent = cell_len(self.prefix.plain)
        for i, line in enumerate(fold_path(self.path, max(options.max_width - indent, 1))):
            text = self.prefix.copy() if i == 0 else Text(" " * indent)
            text.append(line, self.style)
            text.no_wrap = True
            yield text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(cell_len(self.prefix.plain) + 1, cell_len(self.prefix.plain) + cell_len(self.path))

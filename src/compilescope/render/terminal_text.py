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
from collections.abc import Iterable
from typing import Any, cast

from rich._pick import pick_bool
from rich.cells import cell_len, chop_cells
from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from ..invisible import safe_terminal_text
from .code_spans import CODE_SPAN


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


MAX_WIDTH = 100  # the widest line the summary lays out (TerminalOptions.max_width): wider terminals get this
_HELD_SPACE = "\ue000"  # a private-use character: one cell wide and no whitespace, so rich does not break there


class CopyableText(TerminalText):
    """Text the user may copy code from (advice, a hint, a note): its `code` spans are never broken. rich breaks a
    line at any space and folds a word longer than the line anywhere, and the call printed as
    "…mark_dynamic(encoder_…_with_pa" / "dding_mask_applied, 0)" pasted as broken code. Here a line breaks only at a
    space outside the spans, and a span longer than the line has a line of its own, whole, past the line's end: the
    terminal shows the rest on its next row and copies the line as one. A span wider than MAX_WIDTH is folded as
    prose (code_spans.CODE_SPAN says where a span is: a log's stray backtick opens none). Prose wraps as any Text's (a word longer than
    the line folded). Inside a Tree or a Padding, rich crops a line to the width: wrap them in Uncropped.
    Where a container asks for an overflow of its own (a table's column), it breaks outside the spans too, but a span
    wider than the cell is folded as prose: a line past the cell would push its border out.

    Hand it to rich inside a container (a Tree, a Group, a table's cell), never straight to console.print(): print
    joins the Text objects it is given into one plain Text, and this one then wraps as any Text, its code broken. (It
    stays a Text for the renderers' append and style.)"""

    def _held(self, widest: int = MAX_WIDTH) -> Text:
        held = self.copy()
        if _HELD_SPACE not in self.plain:  # (a log's own U+E000 would come back a space: the spans are not held)
            plain = self.plain
            for start, end in _held_spans(plain, widest):
                plain = plain[:start] + plain[start:end].replace(" ", _HELD_SPACE) + plain[end:]
            held.plain = plain
        return held

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        width = options.max_width
        # A container that asks for an overflow of its own (a table's column) draws a border or a next cell after the
        # line: there a span is held whole only up to the cell's width, a wider one folded as prose.
        widest = min(width, MAX_WIDTH) if self.overflow or options.overflow else MAX_WIDTH
        lines = []
        for line in self._held(widest).split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(self.tab_size or console.tab_size or 8)
            if pick_bool(self.no_wrap, options.no_wrap, False):
                parts = [line]
            else:
                parts = list(line.divide(_breaks(line.plain, width, widest)))
                for part in parts:
                    part.rstrip_end(width)
            for part in parts:  # (each line, wrapped or not, with its code's spaces back)
                part.plain = part.plain.replace(_HELD_SPACE, " ")
                lines.append(part)
        yield from Text("\n").join(lines).render(console, end=self.end)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Text.__rich_measure__(self._held(), console, options)


def _held_spans(line: str, widest: int) -> list[tuple[int, int]]:
    """Where line's code spans are (render/code_spans.py) that are kept whole: those no wider than widest (MAX_WIDTH,
    or a table cell's width). A longer one (a whole expression of a user's, 470 columns) would be a line past every
    terminal's width: folded as prose."""
    return [span.span() for span in CODE_SPAN.finditer(line) if cell_len(span.group()) <= widest]


_WORD = re.compile(r"\s*\S+\s*")  # a word and the spaces after it (as rich's wrap reads words)


def _breaks(line: str, width: int, widest: int) -> list[int]:
    """Where line breaks to fit width, as rich's divide_line (rich/_wrap.py) breaks it, but a word that holds a code
    span (its spaces held: one word) is never folded: too long for a line, it has one of its own."""
    code = _held_spans(line, widest)
    breaks: list[int] = []
    offset = 0
    for word in _WORD.finditer(line):
        start, end = word.span()
        length = cell_len(word.group().rstrip())
        if width - offset >= length:
            offset += cell_len(word.group())
        elif length > width and not any(s < end and start < e for s, e in code):  # prose: folded, as rich does
            chunks = chop_cells(word.group(), width)
            for chunk in chunks[:-1]:
                if start:
                    breaks.append(start)
                start += len(chunk)
            if start:
                breaks.append(start)
            offset = cell_len(chunks[-1])
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word.group())
        else:  # a code span longer than the line, at its start: whole
            offset = cell_len(word.group())
    return breaks


class _UncroppedLines:
    """The console a container renders its lines with, but a line longer than the width is kept whole: rich's
    render_lines crops each line of a tree's node or a padded block to the width, cutting the code a CopyableText let
    run past it. Everything else is the console's own."""

    def __init__(self, console: Console):
        self._console = console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console, name)

    def render_lines(self, renderable: RenderableType, options: ConsoleOptions | None = None, *,
                     style: Style | None = None, pad: bool = True, new_lines: bool = False) -> list[list[Segment]]:
        options = options or self._console.options
        if options.height is not None:  # (a block of a set height is cut to it anyway)
            return self._console.render_lines(renderable, options, style=style, pad=pad, new_lines=new_lines)
        rendered = self._console.render(renderable, options)
        if style:
            rendered = Segment.apply_style(rendered, style)
        lines = []
        for line in Segment.split_lines(rendered):
            if pad:  # only a shorter line is changed: padded to the width
                line = Segment.adjust_line_length(line, max(options.max_width, Segment.get_line_length(line)),
                                                  style=style)
            lines.append([*line, Segment.line()] if new_lines else line)
        return lines


class Uncropped:
    """A Tree or a Padding whose lines are not cropped to the width (_UncroppedLines): a CopyableText's code longer
    than the line prints whole. (The console's print must not crop either: print(..., crop=False).)"""

    def __init__(self, renderable: ConsoleRenderable):
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.renderable.__rich_console__(cast(Console, _UncroppedLines(console)), options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)

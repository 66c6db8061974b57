"""The rich Console every command prints through: as wide as the terminal, and never wider than the summary's
tables are laid out for (wider terminals still get lines this long); and the only source of colour on the
terminal (cli/terminal_guard.py).

The renderers escape what they take from a log before rich lays it out (render/terminal_text.py), so tables and
panels line up. The Console escapes what they print once more, as rich has laid it out: a string a renderer
forgot is written escaped (its line a little wider) rather than as a control sequence. It does so through rich's
public render hooks, not the method that writes the segments, which rich's legacy Windows console never calls.
Off a terminal (a pipe, a file) it also ends each line at its last character: rich pads the lines of a table's cells
to the column's width, and a copy of `summary | less` or of a file took the spaces along.
"""

from __future__ import annotations

import sys
from typing import Iterable, Iterator

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.segment import Segment

from ..invisible import safe_terminal_text
from ..render.terminal import TerminalOptions

MAX_WIDTH = TerminalOptions().max_width


class _Escaped:
    """A renderable as rich lays it out, every control character left in its text written as an escape, and
    no hyperlink: compilescope makes none on the terminal, so a link could only be a log's markup.
    trim: each line's trailing spaces dropped (_trimmed)."""

    def __init__(self, renderable: ConsoleRenderable, trim: bool = False):
        self.renderable = renderable
        self.trim = trim

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        segments = console.render(self.renderable, options)
        for segment in _trimmed(segments) if self.trim else segments:
            text, style, control = segment
            if control:  # rich's own cursor moves (a live display's): codes, not text
                yield segment
                continue
            shown = safe_terminal_text(text)
            if style is not None and style.link:
                style = style.update_link(None)
            yield segment if shown is text and style is segment.style else Segment(shown, style)


def _trimmed(segments: Iterable[Segment]) -> Iterator[Segment]:
    """segments with the spaces that end each line left out. Only for a console that writes no style: a space there
    shows nothing. (The lines are never cut, as rich's render_lines would cut a soft-wrapped one to the width.)"""
    line: list[Segment] = []
    for segment in segments:
        text, style, control = segment
        if control or "\n" not in text:
            line.append(segment)
            continue
        *ended, rest = text.split("\n")
        for part in ended:
            if part:
                line.append(Segment(part, style))
            while line and not line[-1].control and not line[-1].text.rstrip(" "):
                line.pop()
            if line and not line[-1].control:
                last = line.pop()
                line.append(Segment(last.text.rstrip(" "), last.style))
            yield from line
            yield Segment("\n", style)
            line = []
        if rest:
            line.append(Segment(rest, style))
    yield from line  # (a line print() ends without a newline: more may follow on it)


class EscapeEverything(RenderHook):
    """Wraps each renderable a print() is given in _Escaped (the hook sees them all, whatever the output path).
    trim: each line ends at its last character (a console off a terminal)."""

    def __init__(self, trim: bool = False):
        self.trim = trim

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Escaped(r, self.trim) for r in renderables]


def default_console(stderr: bool = False, **kwargs) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    # It writes past the stream's guard, which would escape rich's colours too. A string printed is never markup
    # or an emoji code: a log's `[link=…]` is text.
    kwargs.setdefault("file", getattr(stream, "unguarded", stream))
    console = Console(stderr=stderr, width=min(Console(stderr=stderr).width, MAX_WIDTH), markup=False, emoji=False,
                      **kwargs)
    # Off a terminal no style is written, so a line's trailing spaces are only padding.
    console.push_render_hook(EscapeEverything(trim=not console.is_terminal))
    return console


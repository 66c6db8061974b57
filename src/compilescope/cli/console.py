"""The rich Console every command prints through: as wide as the terminal, and never wider than the summary's
tables are laid out for (wider terminals still get lines this long); and the only source of colour on the
terminal (cli/terminal_guard.py).

The renderers escape what they take from a log before rich lays it out (render/terminal_text.py), so tables and
panels line up. The Console escapes what they print once more, as rich has laid it out: a string a renderer
forgot is written escaped (its line a little wider) rather than as a control sequence. It does so through rich's
public render hooks, not the method that writes the segments, which rich's legacy Windows console never calls.
"""

from __future__ import annotations

import sys

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.segment import Segment

from ..invisible import safe_terminal_text
from ..render.terminal import TerminalOptions

MAX_WIDTH = TerminalOptions().max_width


class _Escaped:
    """A renderable as rich lays it out, every control character left in its text written as an escape, and
    no hyperlink: compilescope makes none on the terminal, so a link could only be a log's markup."""

    def __init__(self, renderable: ConsoleRenderable):
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.renderable, options):
            text, style, control = segment
            if control:  # rich's own cursor moves (a live display's): codes, not text
                yield segment
                continue
            shown = safe_terminal_text(text)
            if style is not None and style.link:
                style = style.update_link(None)
            yield segment if shown is text and style is segment.style else Segment(shown, style)


class EscapeEverything(RenderHook):
    """Wraps each renderable a print() is given in _Escaped (the hook sees them all, whatever the output path)."""

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Escaped(r) for r in renderables]


def default_console(stderr: bool = False, **kwargs) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    # It writes past the stream's guard, which would escape rich's colours too. A string printed is never markup
    # or an emoji code: a log's `[link=…]` is text.
    kwargs.setdefault("file", getattr(stream, "unguarded", stream))
    console = Console(stderr=stderr, width=min(Console(stderr=stderr).width, MAX_WIDTH), markup=False, emoji=False,
                      **kwargs)
    console.push_render_hook(EscapeEverything())
    return console


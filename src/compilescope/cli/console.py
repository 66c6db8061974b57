"""The rich Console every command prints through: as wide as the terminal, and never wider than the summary's
tables are laid out for (wider terminals still get lines this long); and the only source of colour on the
terminal (cli/terminal_guard.py)."""

from __future__ import annotations

import sys
from typing import Iterable

from rich.console import Console
from rich.segment import Segment

from ..render.terminal import TerminalOptions
from .terminal_guard import safe_terminal_text

MAX_WIDTH = TerminalOptions().max_width


class GuardedConsole(Console):
    """A Console whose text, log strings included, is written with every control character escaped before its
    styles add their colour; it writes past the stream's guard, which would escape the colour too."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # (rich's hook from segments to the text written: its cursor controls, Segment.control, kept as they are)
        return super()._render_buffer(
            Segment(safe_terminal_text(text), style, control) if control is None else Segment(text, style, control)
            for text, style, control in buffer)


def default_console(stderr: bool = False, **kwargs) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    kwargs.setdefault("file", getattr(stream, "unguarded", stream))
    return GuardedConsole(stderr=stderr, width=min(Console(stderr=stderr).width, MAX_WIDTH), **kwargs)

"""The rich Console every command prints through: as wide as the terminal, and never wider than the summary's
tables are laid out for (wider terminals still get lines this long)."""

from __future__ import annotations

from rich.console import Console

from ..render.terminal import TerminalOptions

MAX_WIDTH = TerminalOptions().max_width


def default_console(stderr: bool = False, **kwargs) -> Console:
    return Console(stderr=stderr, width=min(Console(stderr=stderr).width, MAX_WIDTH), **kwargs)

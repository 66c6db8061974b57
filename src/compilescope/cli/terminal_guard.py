"""Nothing read from a log reaches the terminal as a control sequence.

Log strings (function names, reasons, file names of ranks) are printed by plain print()
and by rich. Rather than trusting every call site, the CLI's stdout and stderr are wrapped:
every C0/C1 control character (ESC, BEL, CSI, OSC 52 clipboard writes, OSC 8 links, title
and screen-clear sequences, colours), DEL, and the bidi and zero-width characters that make
text read differently from what it is, are written as visible escapes (\\u001b, \\u202e).
Colour comes only from rich's own styles: the Console (cli/console.py) escapes the text of
each segment it renders the same way, then writes past the wrapper, so a log's SGR (SGR 8
hides text) never passes as colour. The progress bar, which moves the cursor, writes to the
unguarded stream and shows only the user's own path.
"""

from __future__ import annotations

import re
import sys

from ..invisible import INVISIBLE_CLASS, escape
from ..lazy_regex import lazy_compile

_PARTS = lazy_compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{INVISIBLE_CLASS}]")


def _visible(m: re.Match) -> str:
    # \u001b, not \x1b: the same escape JSON uses, so `summary --json` output stays valid JSON.
    return escape(m.group(0))


def safe_terminal_text(text: str) -> str:
    """text with every control and invisible-direction character shown as an escape."""
    if text.isascii() and (text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()):
        return text  # (printable ASCII, newlines and tabs: nothing to escape, and no pattern to compile)
    return _PARTS.sub(_visible, text)


class GuardedStream:
    """A text stream that writes safe_terminal_text() of everything given to it."""

    def __init__(self, stream):
        self.unguarded = stream

    def write(self, text: str) -> int:
        self.unguarded.write(safe_terminal_text(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):  # isatty, fileno, flush, encoding, buffer ...
        return getattr(self.unguarded, name)


def guard_terminal() -> None:
    if not isinstance(sys.stdout, GuardedStream):
        sys.stdout = GuardedStream(sys.stdout)
    if not isinstance(sys.stderr, GuardedStream):
        sys.stderr = GuardedStream(sys.stderr)

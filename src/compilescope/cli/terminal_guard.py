"""Nothing read from a log reaches the terminal as a control sequence.

Log strings (function names, reasons, file names of ranks) are printed by plain print()
and by rich. Rather than trusting every call site, the CLI's stdout and stderr are wrapped:
every C0/C1 control character (ESC, BEL, CSI, OSC 52 clipboard writes, OSC 8 links, title
and screen-clear sequences, colours), DEL, and the bidi and zero-width characters that make
text read differently from what it is, are written as visible escapes (\\u001b, \\u202e):
invisible.safe_terminal_text. Colour comes only from rich's own styles: the renderers escape
log text the same way before rich lays it out (render/terminal_text.py), and the Console
(cli/console.py) escapes whatever text is left once more, then writes past the wrapper, so a
log's SGR (SGR 8 hides text) never passes as colour. The progress bar, which moves the
cursor, writes to the unguarded stream and shows only the user's own path.
"""

from __future__ import annotations

import sys

from ..invisible import safe_terminal_text


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

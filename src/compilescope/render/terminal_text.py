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

from typing import Any

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

"""Characters that make text read differently from what it is: bidi controls (Trojan Source) and
zero-width characters. Names from a log are shown with these as visible escapes (\\u202e), in the
terminal (cli/terminal_guard.py) and in HTML pages (render/html/env.py), never verbatim."""

from __future__ import annotations

import re

INVISIBLE_CLASS = r"\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]")


def escape(char: str) -> str:
    """One character as \\uXXXX (the escape JSON uses, so JSON text stays valid JSON)."""
    return f"\\u{ord(char):04x}"


def show_invisible(text: str) -> str:
    """text with every bidi control and zero-width character written as \\uXXXX."""
    if text.isascii() or _INVISIBLE.search(text) is None:  # nearly every value: no copy, no callback
        return text
    return _INVISIBLE.sub(lambda m: escape(m.group(0)), text)

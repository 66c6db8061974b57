"""Characters that make text read differently from what it is: bidi controls (Trojan Source) and
zero-width characters. Names from a log are shown with these as visible escapes (\\u202e), in the
terminal (safe_terminal_text) and in HTML pages (render/html/env.py), never verbatim. A line printed on the
terminal that holds a file's name is one_line()'s. escape() is the one way a character is written as an escape:
these, and control characters (the terminal, the problems listed while reading, JUnit XML)."""

from __future__ import annotations

import re
from typing import Literal

from .lazy_regex import lazy_compile

INVISIBLE_CLASS = r"\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]")
# Line ends and TABs too: safe_terminal_text lets them pass, as the lines of what is printed need them.
_NOT_IN_ONE_LINE = lazy_compile(f"[\\x00-\\x1f\\x7f-\\x9f{INVISIBLE_CLASS}]")
_NOT_ON_A_TERMINAL = lazy_compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{INVISIBLE_CLASS}]")


def escape(char: str, style: Literal["json", "python"] = "json") -> str:
    """One character as a visible escape: "json" writes \\uXXXX (so JSON text stays valid JSON), "python" writes
    \\xNN below U+0100 and \\uXXXX above, as Python's repr does (problems and XML text, read by people)."""
    code = ord(char)
    if style == "python" and code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def show_invisible(text: str) -> str:
    """text with every bidi control and zero-width character written as \\uXXXX."""
    if text.isascii() or _INVISIBLE.search(text) is None:  # nearly every value: no copy, no callback
        return text
    return _INVISIBLE.sub(lambda m: escape(m.group(0)), text)


def one_line(text: str) -> str:
    """text as one line for the terminal: every control character (newlines and TABs included), bidi control and
    zero-width character as \\uXXXX. (A file name may hold a newline: printed, it made a note two lines, the second
    looking like another.)"""
    if text.isprintable() and text.isascii():
        return text
    return _NOT_IN_ONE_LINE.sub(lambda m: escape(m.group(0)), text)


def _visible(m: re.Match) -> str:
    # \u001b, not \x1b: the same escape JSON uses, so `summary --json` output stays valid JSON.
    return escape(m.group(0))


def safe_terminal_text(text: str) -> str:
    """text with every control and invisible-direction character shown as an escape (ESC, BEL, CSI, OSC 52
    clipboard writes, OSC 8 links, titles, DEL, bidi and zero-width characters); line ends and TABs pass, as the
    lines of what is printed need them. Escaping twice changes nothing (an escape is printable ASCII)."""
    if text.isascii() and (text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()):
        return text  # (printable ASCII, newlines and tabs: nothing to escape, and no pattern to compile)
    return _NOT_ON_A_TERMINAL.sub(_visible, text)

"""Characters that make text read differently from what it is: bidi controls (Trojan Source) and
zero-width characters. Names from a log are shown with these as visible escapes (\\u202e), in the
terminal (safe_terminal_text) and in HTML pages (shown_in_html), never verbatim. A line printed on the
terminal that holds a file's name is one_line()'s. escape() is the one way a character is written as an escape:
these, and control characters (the terminal, the problems listed while reading, JUnit XML). An HTML page shows
C0 controls as the Unicode Control Pictures instead (CONTROL_PICTURES)."""

from __future__ import annotations

import re
from typing import Literal

from .lazy_regex import lazy_compile

INVISIBLE_CLASS = r"\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
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


# In HTML, the C0 controls but TAB, LF and CR, and DEL: each is a parse error there, and a browser shows U+FFFD or
# nothing where the log held it (markupsafe escapes only &<>'"). A page shows each as its Unicode Control Picture
# (NUL as U+2400 ␀ ... US as U+241F ␟, DEL as U+2421 ␡): one visible character, as wide as the one it stands for.
_HTML_CONTROLS = "\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f"
CONTROL_PICTURES = {**{c: 0x2400 + c for c in range(0x20) if c not in (0x09, 0x0a, 0x0d)}, 0x7f: 0x2421}
# (lazy: the terminal's commands never write HTML)
_HTML_CONTROL = lazy_compile(f"[{_HTML_CONTROLS}]")
# Non-ASCII text: C1 controls (parse errors too, and without pictures) are written as \\u0085, as invisible
# characters are.
_NOT_SHOWN_IN_HTML = lazy_compile(f"[{_HTML_CONTROLS}\\x80-\\x9f{INVISIBLE_CLASS}]")


def shown_in_html(text: str) -> str:
    """text as an HTML page shows it (HTML-escaped or not: neither way touches the other's characters): C0 controls
    (but TAB, LF, CR) and DEL as their control pictures; C1 controls, bidi controls and zero-width characters as
    \\uXXXX. The same text (not a copy) when it holds none: the usual case, decided by searches in C."""
    if len(text) < LONG_TEXT and text.isprintable():  # (a name, a number: one C call; none of them is printable)
        return text
    if text.isascii():
        if not _has_html_control(text):
            return text
        return _HTML_CONTROL.sub(_shown_in_html, text)  # (str.translate: 10x the time on a page of code)
    if _printable_lines(text) or _NOT_SHOWN_IN_HTML.search(text) is None:  # (a block with '×' or '…')
        return text
    return _NOT_SHOWN_IN_HTML.sub(_shown_in_html, text)


_CONTROL_CHARS = tuple(map(chr, CONTROL_PICTURES))
LONG_TEXT = 1024  # an ASCII text this long is searched a character at a time (a page of code, a panel of rows)


def _has_html_control(text: str) -> bool:
    """Whether an ASCII text holds a character CONTROL_PICTURES maps. A long text is searched for each in turn: one
    memchr over it each, together about 6x faster than the pattern, which looks at every character in a loop (a
    12 MB log's pages hold 10 M characters); a short one by the pattern (one call, not 29)."""
    if len(text) < LONG_TEXT:
        return _HTML_CONTROL.search(text) is not None
    return any(char in text for char in _CONTROL_CHARS)


def _shown_in_html(m: re.Match) -> str:
    code = ord(m.group(0))
    return chr(CONTROL_PICTURES[code]) if code in CONTROL_PICTURES else escape(m.group(0))


def one_line(text: str) -> str:
    """text as one line for the terminal: every control character (newlines and TABs included), bidi control and
    zero-width character as \\uXXXX. (A file name may hold a newline: printed, it made a note two lines, the second
    looking like another.)"""
    if text.isprintable():
        return text
    return _NOT_IN_ONE_LINE.sub(lambda m: escape(m.group(0)), text)


def _visible(m: re.Match) -> str:
    # \u001b, not \x1b: the same escape JSON uses, so `summary --json` output stays valid JSON.
    return escape(m.group(0))


def safe_terminal_text(text: str) -> str:
    """text with every control and invisible-direction character shown as an escape (ESC, BEL, CSI, OSC 52
    clipboard writes, OSC 8 links, titles, DEL, bidi and zero-width characters); line ends and TABs pass, as the
    lines of what is printed need them. Escaping twice changes nothing (an escape is printable ASCII)."""
    if _printable_lines(text):
        return text  # (nothing to escape, and no pattern to compile)
    return _NOT_ON_A_TERMINAL.sub(_visible, text)


def _printable_lines(text: str) -> bool:
    """Whether text is printable, newlines and tabs aside (a page's block of HTML, what is printed): then it holds
    none of the characters escaped here."""
    return text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()

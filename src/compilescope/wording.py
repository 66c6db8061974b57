"""Counts in words: "1 compilation", "2 compilations", never "1 compilation(s)".

One helper for every page and terminal line (Jinja filter `count` too).
"""

from __future__ import annotations

# Words whose plural is not word + "s".
_IRREGULAR = {"process": "processes", "was": "were", "this": "these", "is": "are", "has": "have"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """word or its plural, for n things."""
    if n == 1:
        return word
    return many or _IRREGULAR.get(word) or f"{word}s"


def count(n: int, word: str, many: str | None = None) -> str:
    """'1 record', '3 records' (many: the plural when it is not word + 's')."""
    return f"{n} {plural(n, word, many)}"

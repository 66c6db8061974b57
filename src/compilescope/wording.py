"""Counts and durations in words: "1 compilation", "2 compilations", never "1 compilation(s)"; "813 ms".

One helper for every page and terminal line (Jinja filters `count` and `seconds` too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

# Words whose plural is not word + "s".
_IRREGULAR = {"process": "processes", "was": "were", "this": "these", "is": "are", "has": "have",
              "miss": "misses", "bypass": "bypasses"}  # (cache outcomes)


def plural(n: int, word: str, many: str | None = None) -> str:
    """word or its plural, for n things."""
    if n == 1:
        return word
    return many or _IRREGULAR.get(word) or f"{word}s"


def count(n: int, word: str, many: str | None = None) -> str:
    """'1 record', '3 records' (many: the plural when it is not word + 's')."""
    return f"{n} {plural(n, word, many)}"


def times(n: int) -> str:
    """'once', '2 times': how often something happened ("recompiled once", never "recompiled 1 time")."""
    return "once" if n == 1 else count(n, "time")


def and_list(items: list[str]) -> str:
    """'x', 'x and y', 'x, y and z'."""
    return " and ".join(items) if len(items) < 3 else f"{', '.join(items[:-1])} and {items[-1]}"


LISTED = 8  # items a list from the log names before "and K more" (a log may hold thousands: a page says each once)

T = TypeVar("T")


@dataclass(frozen=True)
class Listed(Generic[T]):
    """A list as a page or line names it: its first items, and how many it leaves out (an analysis decides both, a
    renderer says them). Never saved: made from a saved result when it is shown (a plain dataclass outside the
    analyses, which the saved classes never include; not a generic NamedTuple, which Python 3.10 cannot make)."""

    items: list[T]
    more: int  # the items left out, after `items`


def cut(items: list[T], shown: int = LISTED) -> Listed[T]:
    """The first `shown` items and how many more (a list from an untrusted log, said where each of its items is said
    too, would otherwise grow with it)."""
    return Listed(items[:shown], max(len(items) - shown, 0))


def said(listed: Listed[str], sep: str = ", ") -> str:
    """'[0/0], [1/0]'; where items were left out, the first ones and how many more: '[0/0], ..., [7/0] and 1992 more'."""
    return f"{sep.join(listed.items)} and {listed.more} more" if listed.more else sep.join(listed.items)


def first_listed(items: list[str], sep: str = ", ", shown: int = LISTED) -> str:
    """said(cut(items, shown), sep): for an analysis that words a list in one."""
    return said(cut(items, shown), sep)


def cut_at_word(text: str, limit: int) -> str:
    """The text whole where it fits in limit characters, else the words of it that fit with " …" after them: a
    message cut inside a word ("if you are usi...") reads as another word. A first word longer than the limit is
    cut inside it ("…" after), and so is a long word whose last space before the limit is far from it (before 75%
    of it): "Could not load /home/…<200 characters>.so" cut at its space said "Could not load …", the path dropped."""
    if len(text) <= limit:
        return text
    end = text.rfind(" ", 0, limit - 1)  # (at most limit - 2: room for " …")
    at_word = end >= limit * 3 // 4 and text[:end].strip()
    return text[:end].rstrip() + " …" if at_word else text[:limit - 1] + "…"


_ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def ordinal(n: int) -> str:
    """The n-th (from 1) in words: "first" .. "tenth", then "11th", "21st", "22nd", "23rd", "111th" (11, 12 and 13
    take "th" in every hundred)."""
    if 1 <= n <= len(_ORDINAL_WORDS):
        return _ORDINAL_WORDS[n - 1]
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def possessive(name: str) -> str:
    """A name's possessive, for a name the log gives (a tensor, a function): "x's", but "tokens'" ("tokens's" is no
    English)."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def format_seconds(seconds: float) -> str:
    """A duration in the unit that reads best: "8.27 s", "813 ms", "4.2 ms", "35 µs" (pages and terminal alike)."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.001:
        return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def format_kernel_time(seconds: float) -> str:
    """A kernel's benchmarked run time, one decimal more than format_seconds gives under 1 ms: "22.6 µs" (autotuning
    chose between candidates a few µs apart), as pages and terminal alike say it."""
    return f"{seconds * 1e6:.1f} µs" if seconds < 0.001 else format_seconds(seconds)


def format_seconds_change(delta: float) -> str:
    """A difference of durations, signed, worded as format_seconds words a duration: "+1.20 s", "-370 ms"."""
    return ("-" if delta < 0 else "+") + format_seconds(abs(delta))


def format_us(us: float) -> str:
    """A duration given in µs (a profile's unit), worded as format_seconds words it."""
    return format_seconds(us / 1e6)

"""Regular expressions compiled on first use, for patterns a report may never need.

Compiling a pattern costs about half a million instructions, and a module's patterns were compiled when it was
imported: a plain report of a small log paid for the provenance, graph-break and compiler-diagnostic patterns of
logs it is not. lazy_compile() returns a stand-in that compiles the pattern the first time one of its
attributes is used; from then on its methods are the compiled pattern's own (bound, in its __dict__), so a call
costs what it did. Use it for module-level patterns that only some logs need; it is no re.Pattern for
isinstance() or re.sub(pattern, ...) (call the pattern's methods).
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

_ATTRIBUTES = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer",
               "pattern", "flags", "groups", "groupindex")


class _LazyPattern:
    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # (only until the first use: then every attribute is found directly)
        compiled: re.Pattern = re.compile(*self._source)
        for attribute in _ATTRIBUTES:
            self.__dict__[attribute] = getattr(compiled, attribute)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source[0]!r}, {self._source[1]})"


def lazy_compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """re.compile(pattern, flags), compiled when first used."""
    return cast("re.Pattern[AnyStr]", _LazyPattern(pattern, flags))

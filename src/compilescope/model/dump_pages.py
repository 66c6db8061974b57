"""One page per dumped source file, even when two names have the same safe file name.

A page is named after the dumped name made safe (dump_file_name: tlparse's name
with unsafe characters as "_", since a log is untrusted), so "a/b.py" and "a_b.py"
would share a_b.py.html and the last one written would win. Each distinct name gets
its own page: dump_file_name when no other name maps to it (so layouts still match
tlparse's), else a short hash of the name is added. The choice depends only on the
set of names, so every link to a page (artifact links, stack frames, the index) and
the page itself agree.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Iterable

from .trace import DUMP, Compile, dump_file_name

HTML = ".html"


def dump_page_names(names: Iterable[str]) -> dict[str, str]:
    """Dumped source name -> its page's file name (under dump_file/), distinct for distinct names."""
    by_page: dict[str, list[str]] = defaultdict(list)
    for name in sorted(set(names)):
        by_page[dump_file_name(name)].append(name)
    taken = set(by_page)  # a hashed name must not land on another name's page either
    pages: dict[str, str] = {}
    for page, group in by_page.items():
        # The name that already is its own file name (nothing was replaced) keeps tlparse's page.
        keeper = group[0] if len(group) == 1 else next((n for n in group if n + HTML == page), None)
        for name in group:
            if name == keeper:
                pages[name] = page
            else:
                pages[name] = _hashed(page, name, taken)
                taken.add(pages[name])
    return pages


def _hashed(page: str, name: str, taken: set[str]) -> str:
    stem = page[: -len(HTML)]
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()
    for n in range(8, len(digest) + 1, 4):
        candidate = f"{stem}_{digest[:n]}{HTML}"
        if candidate not in taken:
            return candidate
    raise AssertionError(f"no free page name for {name!r}")  # two names with the same SHA-1


def settle_dump_pages(compiles: Iterable[Compile], names: Iterable[str]) -> dict[str, str]:
    """When the log is read: every dumped source's page, also set on its artifacts (whose links use it)."""
    pages = dump_page_names(names)
    for entry in compiles:
        for artifact in entry.artifacts:
            if artifact.display == DUMP:
                artifact.page = pages.get(artifact.name)
    return pages

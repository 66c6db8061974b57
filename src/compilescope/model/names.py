"""Safe file names for things a log names (artifact names, kernel names, dumped files).

A trace log is untrusted input: a name may hold "/", "..", an absolute path, a
Windows device name, HTML, or be thousands of characters long. Every name that
becomes part of an output path goes through safe_stem().
"""

from __future__ import annotations

import functools
import hashlib
import re

from ..lazy_regex import lazy_compile

_UNSAFE = lazy_compile(r"[^A-Za-z0-9._+\-]")
_DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
MAX_STEM = 120


def safe_stem(name: str) -> str:
    """A file-name stem that is the name itself when it is already safe."""
    # A report asks for the same few names over and over (each artifact's URL, in every page and file that
    # links to it: ~1,700 calls for ~40 names on a real log); a long name is worked out each time.
    return _short_stem(name) if len(name) <= CACHED_NAME else _stem(name)


CACHED_NAME = 256  # names up to this long are remembered (at most STEMS_KEPT of them)
STEMS_KEPT = 1024


def _stem(name: str) -> str:
    stem = _UNSAFE.sub("_", name)
    stem = re.sub(r"\.{2,}", "_", stem).lstrip(".") or "_"
    if stem.split(".")[0].upper() in _DEVICES:
        stem = "_" + stem
    if len(stem) > MAX_STEM or stem != name and len(name) > MAX_STEM:
        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        stem = f"{stem[:MAX_STEM - 11]}_{digest}"
    return stem


_short_stem = functools.lru_cache(maxsize=STEMS_KEPT)(_stem)

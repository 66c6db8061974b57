"""A saved analysis (`compilescope LOG --save FILE`) read back: a JSON document, gzip-compressed or not.

A saved file is untrusted input like a log: it is parsed as JSON only (no pickle),
and analyses.results.Results.from_json builds nothing but the model's and analyses' classes.
"""

from __future__ import annotations

import re
import zlib

import orjson

from ..errors import CompilescopeError
from .reader import EXPANSION_FACTOR, EXPANSION_FLOOR, compressed_size, open_log


def read_saved(path: str) -> dict:
    try:
        compressed = compressed_size(path)
        # A .gz is bounded as a .gz log is (a saved analysis compresses about 6 times): 510 KB expanded to 1.6 GB.
        # JSON cannot be read in part, so past the bound the file is refused.
        limit = None if compressed is None else max(EXPANSION_FLOOR, EXPANSION_FACTOR * compressed)
        with open_log(path) as stream:
            data = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(data) > limit:
            raise CompilescopeError(f"{path}: not read: it expands past {limit:,} bytes, the most compilescope reads "
                                    f"of a compressed saved analysis ({EXPANSION_FACTOR} times its size on disk, and "
                                    f"at least {EXPANSION_FLOOR:,} bytes)")
    except FileNotFoundError:
        raise CompilescopeError(f"{path}: no such file") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise CompilescopeError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CompilescopeError(f"{path}: not a saved compilescope analysis (not JSON: {exc})") from None
    if not isinstance(doc, dict):
        raise CompilescopeError(f"{path}: not a saved compilescope analysis")
    return doc


# How a saved analysis starts: {"format": "compilescope.results", ... (to_json()'s first key, however it was dumped).
_SAVED_START = re.compile(rb'\s*\{\s*"format"\s*:\s*"compilescope\.results"')


def is_saved_analysis(path: str) -> bool:
    """The file is an analysis saved by --save or from Results.to_json() (plain or .gz), by its first bytes."""
    try:
        with open_log(path) as stream:
            head = stream.read(256)
    except (OSError, EOFError, zlib.error, CompilescopeError):
        return False
    return _SAVED_START.match(head) is not None

"""A saved analysis (`compilescope LOG --save FILE`) read back: a JSON document, gzip-compressed or not.

A saved file is untrusted input like a log: it is parsed as JSON only (no pickle),
and analyses.Results.from_json builds nothing but the model's and analyses' classes.
"""

from __future__ import annotations

import zlib

import orjson

from ..errors import CompilescopeError
from .reader import open_log


def read_saved(path: str) -> dict:
    try:
        with open_log(path) as stream:
            data = stream.read()
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

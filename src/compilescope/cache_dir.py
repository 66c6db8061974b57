"""Where the command line keeps what it compiled between runs (Jinja's template bytecode, the records' __init__
templates), and which files there it trusts: a cache entry is code that runs, so only files this user owns and
nobody else may write are read. The API keeps nothing (it writes nothing it was not asked to)."""

from __future__ import annotations

import os
import stat
from typing import IO, Callable

CACHE_ENV = "COMPILESCOPE_TEMPLATE_CACHE"  # "0": no cache; a directory: the cache's parent
# The command line keeps compiled templates: it sets this to what turns the cache on (cli/template_cache, the only code
# that writes it), which render/html/env.py calls once its environment exists, so a command that writes no HTML
# (summary, check) imports no Jinja. The API leaves it None.
template_cache_hook: Callable[[], object] | None = None


def cache_base() -> str | None:
    """The directory the caches go in: $COMPILESCOPE_TEMPLATE_CACHE, else $XDG_CACHE_HOME/compilescope or
    ~/.cache/compilescope; None when turned off (COMPILESCOPE_TEMPLATE_CACHE=0)."""
    setting = os.environ.get(CACHE_ENV, "")
    if setting == "0":
        return None
    return setting or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "compilescope")


def owned(st: os.stat_result) -> bool:
    """This user's, and nobody else may write it."""
    return (not hasattr(os, "getuid") or st.st_uid == os.getuid()) and not st.st_mode & 0o022


def open_owned(path: str) -> IO[bytes] | None:
    """path opened for reading if it is a plain file this user owns that nobody else may write, else None.
    The file checked is the file read: opened first (never through a link), then checked."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    f = os.fdopen(fd, "rb")
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and owned(st):
        return f
    f.close()
    return None

"""Jinja's compiled templates kept between runs by the command line (enable_template_cache), under
cache_dir.cache_base(), and the only code that writes them. Imported only by a command that writes HTML (the HTML
environment turns the cache on through cache_dir.template_cache_hook), so summary and check import no Jinja."""

from __future__ import annotations

import marshal
import os
import pickle
import stat
import types

from jinja2 import FileSystemBytecodeCache
from jinja2.bccache import bc_magic

from ..cache_dir import cache_base, open_owned, owned
from ..render.html.env import ENV, TEMPLATE_CACHE_ENV, template_cache_key


class OwnedBytecodeCache(FileSystemBytecodeCache):
    """Loads only files this user owns and nobody else may write (a cache entry is code that runs).
    Keeping an entry is best effort: a write that fails (a full disk, a quota) never fails a report."""

    def dump_bytecode(self, bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass

    def load_bytecode(self, bucket) -> None:
        """Jinja's Bucket.load_bytecode, with the code unmarshalled from the file's bytes: marshal.load(file) reads
        a few bytes at a time through Python calls, ~3x the time (the 22 templates: 4.1 ms, 1.4 ms from bytes).

        Nothing in the file is unpickled: the head must be the very bytes Jinja's write_bytecode puts there (its
        magic, then pickle.dumps(checksum, 2)), so a damaged or planted entry runs no pickle opcode; what follows
        must unmarshal to a code object. Anything else is compiled again, never an error."""
        f = open_owned(self._get_cache_filename(bucket))
        if f is None:
            return
        with f:
            data = f.read()
        head = bc_magic + pickle.dumps(bucket.checksum, 2)
        bucket.code = None
        if data.startswith(head):
            try:
                code = marshal.loads(memoryview(data)[len(head):])
            except Exception:  # noqa: BLE001 - any bytes marshal cannot read: the entry is compiled again
                code = None
            if isinstance(code, types.CodeType):
                bucket.code = code
        if bucket.code is None:  # (as Jinja's: stale or unreadable, compiled again)
            bucket.reset()


def enable_template_cache(base: str | None = None) -> str | None:
    """Keep compiled templates between runs (compiling them is most of a small report's time): the CLI's choice.

    The directory is keyed by template_cache_key(). Off when COMPILESCOPE_TEMPLATE_CACHE=0, and when the
    directory is not this user's alone. Returns the directory used, or None.
    """
    if os.environ.get(TEMPLATE_CACHE_ENV, "") == "0":
        return None
    base = base or cache_base()
    if base is None:
        return None
    directory = os.path.join(base, f"templates-{template_cache_key()}")
    try:
        os.makedirs(base, exist_ok=True)
        try:
            os.mkdir(directory, mode=0o700)
        except FileExistsError:
            pass
        else:  # a new key (templates or compilescope changed): the old keys' caches will not be read again
            prune_template_caches(base, keep=directory)
        if not owned(os.stat(directory)) or not os.access(directory, os.W_OK):
            return None
    except OSError:
        return None
    ENV.bytecode_cache = OwnedBytecodeCache(directory)
    return directory


STALE_TEMPLATE_CACHE_S = 24 * 3600  # a sibling template cache not written for this long is removed


def prune_template_caches(base: str, keep: str) -> None:
    """Remove the other templates-* directories under base that this user owns and nobody wrote for a day
    (links are never followed; what cannot be removed stays: pruning never fails a report)."""
    import shutil  # here: only a new cache key prunes (start-up time)
    import time

    stale = time.time() - STALE_TEMPLATE_CACHE_S
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith("templates-") or entry.path == keep:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if (stat.S_ISDIR(st.st_mode) and st.st_mtime < stale
                    and (not hasattr(os, "getuid") or st.st_uid == os.getuid())):
                shutil.rmtree(entry.path)
        except OSError:
            continue

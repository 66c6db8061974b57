"""The records' compiled __init__ templates the command line keeps between runs (keep_record_templates), under
cache_dir.cache_base(), and the only code that writes them; Jinja's compiled templates are template_cache.py's. The
model only hands over the compiled code; the API keeps nothing (it writes nothing it was not asked to)."""

from __future__ import annotations

import contextlib
import os


def keep_record_templates(path: str) -> None:
    """Write the records' templates this process has to path, for the next run, when it compiled one the file lacked
    (written whole under another name, then renamed: a run never reads half a file). Best effort: a write that
    fails (a full disk, a quota) never fails a report."""
    from ..model import records

    data = records.templates_to_keep()
    if data is None:
        return
    partial = f"{path}.{os.getpid()}.partial"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(partial, path)
        records.templates_kept()
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)

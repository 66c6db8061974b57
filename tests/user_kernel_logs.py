"""Logs made from the real user_triton_kernel_raw.log.gz (cuda_torch211/README.md) with its output code changed: the
user kernel's definition and call copied under other names, or text put into it. Each payload gets its md5 again (the
log's all agree with theirs), so the log reads as torch would have written it."""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

from .conftest import cuda211, cuda211_moved

LOG = "user_triton_kernel_raw.log.gz"
_MD5 = re.compile(r'"has_payload": "[0-9a-f]{32}"')


def raw_text() -> str:
    return gzip.open(cuda211(LOG), "rt").read()


def rewritten(out: Path, change: Callable[[str], str], moved: bool = True) -> Path:
    """The log with each payload passed through change; moved: its programs' paths made this checkout's first."""
    source = cuda211_moved(LOG, out) if moved else cuda211(LOG)
    lines = gzip.open(source, "rt").read().split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        head, j = lines[i], i + 1
        while j < len(lines) and lines[j].startswith("\t"):
            j += 1
        if j > i + 1:
            payload = "\n".join(line[1:] for line in lines[i + 1:j])
            new = change(payload)
            head = _MD5.sub(f'"has_payload": "{hashlib.md5(new.encode()).hexdigest()}"', head)
            kept += [head, *(f"\t{line}" for line in new.split("\n"))]
        else:
            kept.append(head)
        i = j
    log = out / f"changed_{LOG.removesuffix('.gz')}"
    log.write_text("\n".join(kept))
    return log


# In the first compile's output code: the kernel's definition, from torch's "# Original path" line to the line that
# closes it, and its call, from its debug handle comment to its .run
_DEFINITION = re.compile(r"# Original path: [^\n]*\nscaled_add_kernel_0 = async_compile\.triton\(.*?\n''', [^\n]*\n", re.S)
_CALL = re.compile(r"[ \t]*# \[Provenance debug handles\] scaled_add_kernel_0:2\n(?:[^\n]*\n)*?[ \t]*scaled_add_kernel_0\.run\([^\n]*\n")


def with_copies(out: Path, copies: int) -> Path:
    """The log whose first compile's code also defines and calls scaled_add_kernel_1 .. _<copies>, each the user's
    kernel copied under Inductor's next variable name, called by debug handle 100 + i (which torch's node mappings do
    not name: no launch site is known for them)."""
    done = []

    def change(payload: str) -> str:
        definition, call = _DEFINITION.search(payload), _CALL.search(payload)
        if done or definition is None or call is None:
            return payload
        done.append(True)
        defs = "".join(definition[0].replace("scaled_add_kernel_0", f"scaled_add_kernel_{i}") for i in range(1, copies + 1))
        calls = "".join(call[0].replace("scaled_add_kernel_0:2", f"scaled_add_kernel_{i}:{100 + i}")
                        .replace("scaled_add_kernel_0", f"scaled_add_kernel_{i}") for i in range(1, copies + 1))
        return (payload[:definition.end()] + defs + payload[definition.end():call.end()] + calls + payload[call.end():])
    log = rewritten(out, change)
    assert done == [True]
    return log

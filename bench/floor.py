"""The floor: the least any reader of a TORCH_TRACE log can do, on the same input.

Reads the log, decodes every envelope (the JSON after each glog prefix) with orjson, and
writes the same bytes to OUT/raw.log. A report needs at least this much work, so ours/floor
says how far compilescope is from the cost of simply reading and writing its input.

    python bench/floor.py LOG OUT
"""

from __future__ import annotations

import os
import sys

import orjson


def floor(log: str, out: str) -> int:
    """Return the number of envelopes decoded."""
    os.makedirs(out, exist_ok=True)
    decoded = 0
    with open(log, "rb") as src, open(os.path.join(out, "raw.log"), "wb") as dst:
        for line in src:
            dst.write(line)
            if line[:1] == b"\t":  # a payload line: kept as bytes, as a report keeps it
                continue
            brace = line.find(b"] {")
            if brace >= 0:
                try:
                    orjson.loads(line[brace + 2:])
                    decoded += 1
                except orjson.JSONDecodeError:
                    pass
    return decoded


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    floor(sys.argv[1], sys.argv[2])

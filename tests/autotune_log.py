"""A real max-autotune log changed in one fact, for comparing runs and ranks (the log itself is in ../shared)."""

from __future__ import annotations

import hashlib


def with_other_winner(log, out):
    """The real max-autotune log, with its first addmm search won by another candidate (kernel, config and time),
    payload md5 recomputed: as another GPU, torch version or rank of the same job might choose."""
    lines = log.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if "triton_mm_17" in line and "autotune_choices_stats" in line)
    head = max(i for i in range(start) if not lines[i].startswith("\t"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("\t"))
    payload = "\n".join(line[1:] for line in lines[head + 1:end])
    changed = payload.replace("triton_mm_17", "triton_mm_4").replace("BLOCK_K=64, BLOCK_M=128", "BLOCK_K=32, BLOCK_M=64")
    old_md5, new_md5 = (hashlib.md5(p.encode()).hexdigest() for p in (payload, changed))
    assert changed != payload and old_md5 in lines[head]
    lines[head:end] = [lines[head].replace(old_md5, new_md5), *(f"\t{p}" for p in changed.split("\n"))]
    out.write_text("\n".join(lines), encoding="utf-8")
    return out

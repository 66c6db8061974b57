"""The real H100 max-autotune and reduce-overhead log (../shared) changed in one fact, as another run, GPU, torch
version or rank might log it: for comparing runs and ranks."""

from __future__ import annotations

import gzip
import hashlib

from .conftest import shared


def max_autotune_log():
    """The real H100 log of max-autotune, then reduce-overhead (gpu-torch211/autotune_cudagraphs/script.py)."""
    return next(shared("gpu-torch211/autotune_cudagraphs/output.txt").parent.glob("dedicated_log_torch_trace*.log"))


def with_payload_changed(log, out, holds, change):
    """The log with the payload that has a line for which holds(line) is true changed by change(payload), its md5
    recomputed: one fact changed, as another run, or a damaged or hostile log, could carry it."""
    lines = log_text(log).split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("\t") and holds(line))
    head = max(i for i in range(start) if not lines[i].startswith("\t"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("\t")), len(lines))
    payload = "\n".join(line[1:] for line in lines[head + 1:end])
    changed = change(payload)
    old_md5, new_md5 = (hashlib.md5(p.encode()).hexdigest() for p in (payload, changed))
    assert changed != payload and old_md5 in lines[head]
    lines[head:end] = [lines[head].replace(old_md5, new_md5), *(f"\t{p}" for p in changed.split("\n"))]
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


def with_other_winner(log, out):
    """The real max-autotune log, with its first addmm search won by another candidate (kernel, config and time),
    payload md5 recomputed: as another GPU, torch version or rank of the same job might choose."""
    return with_payload_changed(
        log, out, lambda line: "triton_mm_17" in line and "autotune_choices_stats" in line,
        lambda p: p.replace("triton_mm_17", "triton_mm_4").replace("BLOCK_K=64, BLOCK_M=128", "BLOCK_K=32, BLOCK_M=64"))


# What torch writes when a graph mutates an input (torch/_inductor/cudagraph_utils.py), JSON-escaped.
CUDAGRAPH_SKIP = ("skipping cudagraphs due to mutated inputs (1 instances). Found from : \\n   File "
                  "\\\"/home/user/work/scenarios/autotune_cudagraphs.py\\\", line 13, in forward")
# The same, for residual (line 13) of tests/data/cuda_torch211/programs/cudagraph_skips.py.
RESIDUAL_SKIP = ("skipping cudagraphs due to mutated inputs (1 instances). Found from : \\n   File "
                 "\\\"/work/main/tests/data/cuda_torch211/programs/cudagraph_skips.py\\\", line 13, in residual")


def log_text(log) -> str:
    """A log's text, gzipped or not."""
    if str(log).endswith(".gz"):
        with gzip.open(log, "rt", encoding="utf-8") as f:
            return f.read()
    return log.read_text(encoding="utf-8")


def with_cudagraph_skip(log, out, compile_id="0/1", reason=CUDAGRAPH_SKIP):
    """The log with a compile's metrics saying why Inductor ran it without CUDA graphs (its events are left: torch
    logs no set-up or recording of a graph it skips while compiling, and the reason is what counts)."""
    lines = log_text(log).split("\n")
    [i] = [n for n, line in enumerate(lines) if f'{{"compilation_metrics": {{"compile_id": "{compile_id}"' in line]
    assert '"cudagraph_skip_reason": null' in lines[i]
    lines[i] = lines[i].replace('"cudagraph_skip_reason": null', f'"cudagraph_skip_reason": "{reason}"')
    out.write_text("\n".join(lines), encoding="utf-8")
    return out

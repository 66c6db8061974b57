#!/usr/bin/env python3
"""Record multi_rank/: the TORCH_TRACE logs of a real 2-rank torch 2.13 job (gloo on CPU, under torchrun).

    .venv/bin/python tests/data/torch213/make_multi_rank.py
    .venv/bin/python tests/data/torch213/make_multi_rank.py --warnings   # multi_rank_warnings/

The program is tests/multirank/programs/two_ranks_gloo.py: rank 1 compiles one graph more than rank 0.
With --warnings: tests/multirank/programs/two_ranks_warnings.py, started by `compilescope run` (this Python's), so
each rank records the warnings its torch prints; only rank 1's does.
Requirements: torch==2.13.0 (CPU). Takes a few seconds. The logs are real, so not reproducible byte for
byte (timestamps, pids, paths of this machine).
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE.parent.parent / "multirank" / "programs"


def main() -> None:
    warnings = "--warnings" in sys.argv[1:]
    program = PROGRAMS / ("two_ranks_warnings.py" if warnings else "two_ranks_gloo.py")
    out = HERE / ("multi_rank_warnings" if warnings else "multi_rank")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as trace_dir:
        env = {k: v for k, v in os.environ.items() if k not in ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG")}
        env["TORCH_TRACE"] = trace_dir
        job = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
               "--master-port", str(port), str(program)]
        if warnings:
            job = [sys.executable, "-m", "compilescope", "run", "--trace-dir", trace_dir, "--no-browser",
                   "-o", str(Path(trace_dir) / "report"), "--", *job]
        subprocess.run(job, env=env, check=True)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        for log in sorted(Path(trace_dir).glob("dedicated_log_torch_trace_rank_*.log")):
            rank = log.name.split("_rank_")[1].split("_")[0]
            shutil.copyfile(log, out / f"dedicated_log_torch_trace_rank_{rank}.log")
            print(f"{log.name} -> {out.name}/: {log.stat().st_size} bytes")


if __name__ == "__main__":
    main()

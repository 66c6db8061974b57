#!/usr/bin/env python3
"""Record multi_rank/: the TORCH_TRACE logs of a real 2-rank torch 2.13 job (gloo on CPU, under torchrun).

    .venv/bin/python tests/data/torch213/make_multi_rank.py

The program is tests/multirank/programs/two_ranks_gloo.py: rank 1 compiles one graph more than rank 0.
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
PROGRAM = HERE.parent.parent / "multirank" / "programs" / "two_ranks_gloo.py"
OUT = HERE / "multi_rank"


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as trace_dir:
        env = {k: v for k, v in os.environ.items() if k not in ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG")}
        env["TORCH_TRACE"] = trace_dir
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                        "--master-port", str(port), str(PROGRAM)], env=env, check=True)
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir()
        for log in sorted(Path(trace_dir).glob("dedicated_log_torch_trace_rank_*.log")):
            rank = log.name.split("_rank_")[1].split("_")[0]
            shutil.copyfile(log, OUT / f"dedicated_log_torch_trace_rank_{rank}.log")
            print(f"{log.name} -> {OUT.name}/: {log.stat().st_size} bytes")


if __name__ == "__main__":
    main()

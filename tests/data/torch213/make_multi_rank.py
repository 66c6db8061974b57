#!/usr/bin/env python3
"""Record multi_rank/: the TORCH_TRACE logs of a real 2-rank torch 2.13 job (gloo on CPU, under torchrun).

    .venv/bin/python tests/data/torch213/make_multi_rank.py
    .venv/bin/python tests/data/torch213/make_multi_rank.py --warnings   # multi_rank_warnings/
    .venv/bin/python tests/data/torch213/make_multi_rank.py --crash      # multi_rank_crash/ (gzipped)
    .venv/bin/python tests/data/torch213/make_multi_rank.py --ddp        # multi_rank_ddp/ (gzipped)
    .venv/bin/python tests/data/torch213/make_multi_rank.py --no-graph   # multi_rank_no_graph/
    .venv/bin/python tests/data/torch213/make_multi_rank.py --fsdp       # multi_rank_fsdp/ (gzipped)
    .venv/bin/python tests/data/torch213/make_multi_rank.py --fsdp-fixed # multi_rank_fsdp_fixed/ (gzipped)

The program is tests/multirank/programs/two_ranks_gloo.py: rank 1 compiles one graph more than rank 0.
With --warnings: tests/multirank/programs/two_ranks_warnings.py, started by `compilescope run` (this Python's), so
each rank records the warnings its torch prints; only rank 1's does.
With --crash: tests/multirank/programs/two_ranks_crash.py, started by `compilescope run --fresh-cache` (each rank
compiles with Inductor into a cache of its own): rank 1 segfaults in [0/0]'s generated code at its second step, and
run appends faulthandler's stack to rank 1's log (the process of that pid); rank 0, waiting at the all_reduce, fails
("Connection closed by peer") and its log just ends. The job exits non-zero; that is expected.
With --ddp: tests/multirank/programs/ddp_uneven_batch.py, started by `compilescope run`: torch.compile of a DDP model,
rank 1's last batch shorter, so only rank 1 recompiles DDP's forward (and, as each compile of it, restarts it at a graph
break: [0/1] then [0/1_1]).
With --no-graph: tests/multirank/programs/two_ranks_no_graph.py: rank 0 compiles only a function with no tensor
operation (no graph: graph_op_count null), rank 1 one with an operation.
With --fsdp: tests/multirank/programs/fsdp2_blocks.py, started by `compilescope run --fresh-cache`: torch.compile of a
model whose blocks FSDP2's fully_shard sharded (Dynamo breaks the graph in FSDP's hooks); --fsdp-fixed: the same
program with FSDP_VARIANT=fixed (each block compiled, then sharded).
Requirements: torch==2.13.0 (CPU). Takes a few seconds. The logs are real, so not reproducible byte for
byte (timestamps, pids, paths of this machine).
"""
import gzip
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
    warnings, crash, ddp = ("--warnings" in sys.argv[1:], "--crash" in sys.argv[1:], "--ddp" in sys.argv[1:])
    no_graph = "--no-graph" in sys.argv[1:]
    fsdp_fixed = "--fsdp-fixed" in sys.argv[1:]
    fsdp = fsdp_fixed or "--fsdp" in sys.argv[1:]
    program = PROGRAMS / ("fsdp2_blocks.py" if fsdp else "two_ranks_crash.py" if crash else "two_ranks_warnings.py" if warnings else
                          "ddp_uneven_batch.py" if ddp else "two_ranks_no_graph.py" if no_graph else "two_ranks_gloo.py")
    out = HERE / ("multi_rank_fsdp_fixed" if fsdp_fixed else "multi_rank_fsdp" if fsdp else
                  "multi_rank_crash" if crash else "multi_rank_warnings" if warnings else "multi_rank_ddp" if ddp else
                  "multi_rank_no_graph" if no_graph else "multi_rank")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as trace_dir:
        env = {k: v for k, v in os.environ.items() if k not in ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG")}
        env["TORCH_TRACE"] = trace_dir
        if fsdp_fixed:
            env["FSDP_VARIANT"] = "fixed"
        job = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
               "--master-port", str(port), str(program)]
        if warnings or crash or ddp or fsdp:
            job = [sys.executable, "-m", "compilescope", "run", "--trace-dir", trace_dir, "--no-browser",
                   *(["--fresh-cache"] if crash or fsdp else []), "-o", str(Path(trace_dir) / "report"), "--", *job]
        subprocess.run(job, env=env, check=not crash)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        for log in sorted(Path(trace_dir).glob("dedicated_log_torch_trace_rank_*.log")):
            rank = log.name.split("_rank_")[1].split("_")[0]
            if crash or ddp or fsdp:  # (Inductor's logs, DDP's long stacks: gzipped)
                with open(log, "rb") as src, gzip.GzipFile(out / f"dedicated_log_torch_trace_rank_{rank}.log.gz", "wb",
                                                           compresslevel=9, mtime=0) as dst:
                    shutil.copyfileobj(src, dst)
            else:
                shutil.copyfile(log, out / f"dedicated_log_torch_trace_rank_{rank}.log")
            print(f"{log.name} -> {out.name}/: {log.stat().st_size} bytes")


if __name__ == "__main__":
    main()

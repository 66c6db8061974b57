"""Fleet scale: a 1,000-rank directory through --executor local and --executor dask, on 2 workers.

Builds 1,000 rank logs from the real 3-rank job ../shared/traces/peer-tlparse/inputs/multi_rank_schedule
(each copy renamed to rank i, its envelopes' "rank" rewritten to i: see multirank_scaling.build_ranks),
and a 100-rank directory of links to the first 100. Each (ranks, executor) pair runs once, in a fresh
process that writes the whole multi-rank report (report_all_ranks, what `compilescope DIR --all-ranks-html
-j 2 --executor E` runs) and prints its wall time and the coordinator's peak RSS (ru_maxrss of that
process: the parent of the workers; with dask it also hosts the LocalCluster's scheduler), next to the
bytes of the per-rank summaries it keeps. Workers are separate processes and are not counted.

    python bench/multirank_fleet.py                   # 100 and 1000 ranks, local and dask
    python bench/multirank_fleet.py --ranks 100 300   # other sizes

What it shows: from 100 to 1,000 ranks the coordinator grows by about the summaries (and, with dask, the
scheduler's bookkeeping per task), not by the 10x bigger input, since no trace ever reaches it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOB = HERE.parent.parent / "shared" / "traces" / "peer-tlparse" / "inputs" / "multi_rank_schedule"


def one_run(logs: str, out: str, executor: str, workers: int) -> dict:
    """In this (fresh) process: one report; what the parent prints."""
    import orjson

    from compilescope.cli.executors import make_executor
    from compilescope.cli.multirank import report_all_ranks

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    report = report_all_ranks(logs, out, executor=make_executor(executor, workers))
    wall = time.perf_counter() - start
    assert not report.crashed and not any(s.error for s in report.summaries)
    return {
        "ranks": len(report.summaries),
        "wall_s": wall,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "start_mb": before,
        "summaries_mb": len(orjson.dumps([s.to_json() for s in report.summaries])) / 1e6,
        "files": report.files,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--executors", nargs="+", default=["local", "dask"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--one", nargs=3, metavar=("LOGS", "OUT", "EXECUTOR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(*args.one, args.workers)))
        return 0

    sys.path.insert(0, str(HERE))
    from multirank_scaling import build_ranks

    with tempfile.TemporaryDirectory(prefix="compilescope-bench-fleet-") as tmp:
        full = Path(tmp) / f"ranks_{max(args.ranks)}"
        size = build_ranks(full, max(args.ranks), JOB)
        dirs = {}
        for n in args.ranks:
            d = Path(tmp) / f"ranks_{n}"
            if d != full:
                d.mkdir()
                for i in range(n):
                    name = f"dedicated_log_torch_trace_rank_{i}.log"
                    os.symlink(full / name, d / name)
            dirs[n] = d
        print(f"{max(args.ranks)} rank logs from {JOB.name}, {size / 1e6:.0f} MB; {args.workers} workers; "
              f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}")
        print(f"{'ranks':>6} {'executor':>8} {'input MB':>9} {'wall s':>7} {'ranks/s':>7} {'coord. start MB':>15} "
              f"{'coord. peak MB':>14} {'summaries MB':>12} {'files':>7}")
        for n in args.ranks:
            for executor in args.executors:
                out = Path(tmp) / "out"
                run = subprocess.run([sys.executable, __file__, "--workers", str(args.workers), "--one", str(dirs[n]), str(out), executor],
                                     capture_output=True, text=True)
                if run.returncode:
                    sys.exit(run.stderr)
                r = json.loads(run.stdout.strip().splitlines()[-1])
                input_mb = size * n / max(args.ranks) / 1e6
                print(f"{n:>6} {executor:>8} {input_mb:>9.0f} {r['wall_s']:>7.1f} {n / r['wall_s']:>7.1f} {r['start_mb']:>15.0f} "
                      f"{r['peak_mb']:>14.0f} {r['summaries_mb']:>12.2f} {r['files']:>7}", flush=True)
                subprocess.run(["rm", "-rf", str(out)], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

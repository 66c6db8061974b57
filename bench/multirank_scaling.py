"""How the multi-rank report scales with -j: parse + render of a many-rank directory.

Builds a directory of N rank logs (copies of the real 7-rank job in
../shared/traces/peer-tlparse/inputs/multi_rank_runtime, renamed to
dedicated_log_torch_trace_rank_<i>.log with the envelopes' "rank" rewritten to i,
so each is a genuine rank-i log), then writes the multi-rank report with -j J for
every J (report_all_ranks, what `compilescope DIR --all-ranks-html -j J` runs) and
prints the wall time, the speed-up over the first J, the CPU time the workers spent,
and the peak memory of the parent and of the largest worker (which does not grow
with the number of ranks: each worker holds one trace at a time).

    python bench/multirank_scaling.py                 # 32 ranks, -j 1 and -j 2
    python bench/multirank_scaling.py --ranks 64 --jobs 1 2 4 --runs 3

On a machine busy with other work the parallel runs gain less: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from compilescope.cli.multirank import report_all_ranks

HERE = Path(__file__).resolve().parent
PEER_JOB = HERE.parent.parent / "shared" / "traces" / "peer-tlparse" / "inputs" / "multi_rank_runtime"
_RANK = re.compile(rb'"rank": \d+')


def build_ranks(dest: Path, n: int, job: Path = PEER_JOB) -> int:
    """dest/ with n rank logs made from the real job's; returns their total size in bytes."""
    sources = sorted(job.glob("dedicated_log_torch_trace_rank_*.log"))
    if not sources:
        sys.exit(f"no rank logs in {job} (../shared missing?)")
    dest.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(n):
        data = sources[i % len(sources)].read_bytes()
        # Envelope lines only (payload lines start with a tab; md5s cover payloads, so they stay valid).
        lines = [line if line.startswith(b"\t") else _RANK.sub(b'"rank": %d' % i, line) for line in data.split(b"\n")]
        out = b"\n".join(lines)
        (dest / f"dedicated_log_torch_trace_rank_{i}.log").write_bytes(out)
        total += len(out)
    return total


def run_once(logs: Path, out: Path, jobs: int) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds in the workers, peak RSS in MB of the largest worker) of one report."""
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    report = report_all_ranks(str(logs), str(out), jobs=jobs)
    wall = time.perf_counter() - start
    assert len(report.summaries) == len(list(logs.iterdir())) and not report.crashed
    return wall, sum(d.cpu_s for d in report.done), max(d.worker_peak_mb for d in report.done)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=32)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=1, help="runs per -j (the median is shown)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="compilescope-bench-ranks-") as tmp:
        logs, out = Path(tmp) / "logs", Path(tmp) / "out"
        size = build_ranks(logs, args.ranks)
        print(f"{args.ranks} rank logs, {size / 1e6:.1f} MB in total; {os.cpu_count()} core(s); "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"{'jobs':>4}  {'wall (s)':>9}  {'speed-up':>8}  {'ranks/s':>7}  {'worker cpu (s)':>14}  {'worker peak (MB)':>16}")
        base = None
        for jobs in args.jobs:
            walls, cpus, peaks = zip(*(run_once(logs, out, jobs) for _ in range(args.runs)))
            wall = statistics.median(walls)
            base = base or wall
            print(f"{jobs:>4}  {wall:>9.2f}  {base / wall:>7.2f}x  {args.ranks / wall:>7.1f}  "
                  f"{statistics.median(cpus):>14.2f}  {max(peaks):>16.0f}")
        parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        files = sum(len(f) for _, _, f in os.walk(out))
        print(f"parent peak RSS {parent:.0f} MB (includes -j 1, which runs the ranks in this process); "
              f"last report: {files} files (rank_0 .. rank_{args.ranks - 1}, index.html)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

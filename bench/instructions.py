"""Instructions per MB: how a report's work grows with the log, without the noise of timing.

bench/run.py times each tool, and on this shared 2-core VM a 9 MB log's seconds per MB move 20-40% between
runs (the start-up subtracted from it, system time with the page cache). This counts the instructions each
run executes (valgrind's cachegrind, the same count on every run) for the same real and real-shaped logs, and
prints instructions per MB past start-up (less the count on the one small log): flat means the work per MB of
log is the same from 5 MB up. compilescope runs with -j 1 here (one process: the forked writer of its default
walks the page list again, a cost of the machine's cores, not of the log).

    python bench/instructions.py                      # GPT-2, the torch 2.13 medium log, 10x and 100x
    python bench/instructions.py --sizes 10 100 500   # and the 500x log (about 15 minutes)
    python bench/instructions.py --tlparse            # tlparse's counts too (about 3x as long)

Needs valgrind. Counts are not times: an instruction of orjson and one of the interpreter's loop differ in
cost, so compare growth within a tool, and times (bench/run.py) between tools.
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_big_log import build  # noqa: E402
from run import COMPILED_OPTIMIZER, GPU, HF_GPT2, SMALL_LOG, tlparse_binary  # noqa: E402


def instructions(cmd: list[str]) -> int:
    """Instructions cmd executes (all of them: the interpreter's start-up included), on its second run: the
    first fills the caches any user's second run finds (compilescope's compiled templates and records)."""
    out = cmd[cmd.index("-o") + 1]  # removed before each run: replacing a report is not the work measured
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *cmd],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):  # 1: a strict/problem exit still produced a report
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-500:]}")
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if not found:
        raise SystemExit(f"no instruction count from valgrind for {' '.join(cmd)}")
    return int(found.group(1).replace(",", ""))


def tool_commands(log: Path, out: Path, with_tlparse: bool) -> dict[str, list[str]]:
    flags = ["--no-browser", "--overwrite"]
    cmds = {"ours": [sys.executable, "-m", "compilescope", str(log), "-o", str(out / "cs"), *flags, "-j", "1"]}
    if with_tlparse:
        cmds["tlparse"] = [tlparse_binary(), str(log), "-o", str(out / "tl"), *flags]
    return cmds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 100],
                        help="generated logs: this many copies of a real 0.9 MB CUDA log (default 10 100)")
    parser.add_argument("--tlparse", action="store_true", help="count tlparse's instructions too")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind not found (apt-get install valgrind)")
    if not GPU.is_dir():
        raise SystemExit(f"{GPU} not found (../shared beside the repository)")
    import compilescope  # byte-compiled first, as run.py does: a wheel install has its .pyc

    compileall.compile_dir(os.path.dirname(compilescope.__file__), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="compilescope-instructions-"))
    tools = ["ours", *(["tlparse"] if args.tlparse else [])]
    try:
        counts: list[tuple[str, float, dict[str, int]]] = []

        def count(name: str, log: Path) -> None:
            mb = log.stat().st_size / 1e6
            counts.append((name, mb, {tool: instructions(cmd) for tool, cmd in
                                      tool_commands(log, work, args.tlparse).items()}))
            print(f"{name:<28} {mb:>7.1f} MB  " + "  ".join(f"{t} {counts[-1][2][t] / 1e6:>9,.0f} M" for t in tools),
                  flush=True)

        print("instructions (millions) of one run each, valgrind cachegrind; compilescope with -j 1\n")
        count("small log (start-up)", SMALL_LOG)
        medium = work / "torch213_medium.log"
        medium.write_bytes(gzip.decompress((HERE / "data" / "torch213_medium.log.gz").read_bytes()))
        count("torch213_medium (real, CPU)", medium)
        count("gpt2_train (real, CUDA)", next((GPU / "gpt2_train").glob("*.log")))
        hf = work / "hf_gpt2_generate.log"
        hf.write_bytes(gzip.decompress(HF_GPT2.read_bytes()))
        count("hf_gpt2_generate (real, CUDA)", hf)
        optimizer = work / "compiled_optimizer.log"
        optimizer.write_bytes(gzip.decompress(COMPILED_OPTIMIZER.read_bytes()))
        count("compiled_optimizer (real, CUDA)", optimizer)
        unit = next((GPU / "profile_compiled").glob("*.log"))
        for times in args.sizes:
            big = work / f"gen_{times}x.log"
            build(str(big), [str(unit)], times=times)
            count(f"generated {times}x", big)
            big.unlink()

        start = counts[0][2]
        print("\nper MB past start-up (millions of instructions; less each tool's count on the small log):")
        per_mb: dict[str, list[float]] = {t: [] for t in tools}
        for name, mb, c in counts[1:]:
            for t in tools:
                per_mb[t].append((c[t] - start[t]) / mb / 1e6)
            print(f"  {name:<28} " + "  ".join(f"{t} {(c[t] - start[t]) / mb / 1e6:>6.1f}" for t in tools))
        for t in tools:
            print(f"  {t}: largest / smallest {max(per_mb[t]) / min(per_mb[t]):.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

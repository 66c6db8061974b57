"""Benchmark compilescope against tlparse 0.4.3 and against the floor, in one run, on real logs.

For each input the three commands run as alternating triples, each starting one later (ours, tlparse, floor;
tlparse, floor, ours; ...): this machine is shared and noisy, so only figures from the same run are compared. Each
row gives the median wall time, the median CPU time (user + system of the child and of every process it waited for)
and the peak RSS of each, and the ratios ours/tlparse and ours/floor; "user" is the ratio of user time alone (the
system time of writing hundreds of MB swings 3x between identical runs on this VM, with its page cache). The floor
(bench/floor.py) reads the log, decodes every envelope and writes the same bytes. compilescope writes a log of 4 MB
of payload or more with as many processes as cores (its default -j): its CPU is all of them together, its MB the
largest one's peak (as the kernel reports a process tree's; the forked writer shares most of its pages with the
first), its wall the whole command's.

    python bench/run.py                        # everything (needs ../shared and tlparse beside this python)
    python bench/run.py --runs 3 --sizes 10 100  # generated logs of 10x and 100x only
    python bench/run.py --out /dev/shm           # outputs in memory: the disk's file system left out of system time

Inputs, all real or real-shaped:
- gpt2_train: the real 12 MB CUDA log in ../shared/traces/gpu-torch211 (GPT-2 training, a recompile, provenance);
- hf_gpt2_generate: a real 9.7 MB CUDA log of transformers' GPT-2, recorded by `compilescope run` (tests/data/cuda_torch211);
- compiled_optimizer: a real 9.3 MB CUDA log of PyTorch's compiled-optimizer recipe (Adam's step compiled six times,
  Triton foreach kernels), recorded by `compilescope run` (tests/data/cuda_torch211);
- torch213_medium: a real 5.9 MB torch 2.13 CPU log (bench/data, see its README);
- the peer suite (../shared/traces/peer-tlparse/inputs), read by compilescope in one run;
- generated Nx logs: N copies of the real CUDA log profile_compiled (provenance, large output code; ids shifted by
  make_big_log.py), so each has the same mix of records as a real log;
- one small real log (about 100 KB) and `--version`: start-up.

Growth (flat seconds per MB = linear) is printed three ways: per MB as measured; 'past start-up', less the small
log's seconds; and 'beyond 1x', the seconds each MB past the 1x log (profile_compiled itself) costs. The two
references run alternately with each size's runs, with a spread (largest / smallest) for each.
Then the CPU ratio past start-up: on each log of 5 MB or more, each tool's CPU seconds less its own on the small log.
Last, what a process costs before it reads a log (python; with orjson and Jinja2; with all a report imports), beside
each log's targets: how much of each the interpreter and the libraries leave.
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO.parent / "shared" / "traces"
PEER = SHARED / "peer-tlparse" / "inputs"
GPU = SHARED / "gpu-torch211"
SMALL_LOG = REPO / "tests" / "data" / "torch213" / "logs" / "compile_error_lowering.log"
# A real 9.7 MB CUDA log recorded by `compilescope run` (transformers' GPT-2, five compiles: tests/data/cuda_torch211)
HF_GPT2 = REPO / "tests" / "data" / "cuda_torch211" / "logs" / "hf_gpt2_generate.log.gz"
# A real 9.3 MB CUDA log recorded by `compilescope run` (the compiled-optimizer recipe, a float lr recompiling Adam.step)
COMPILED_OPTIMIZER = REPO / "tests" / "data" / "cuda_torch211" / "logs" / "compiled_optimizer.log.gz"
sys.path.insert(0, str(HERE))
from make_big_log import build  # noqa: E402


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mb: float
    user: float  # of cpu: the process's own work; the rest is the kernel's (system time)


def measure(cmd: list[str]) -> Run:
    """One run of cmd, through bench/rusage_of.py: spawned from here, its peak RSS would start at this process's."""
    done = subprocess.run([sys.executable, "-S", str(HERE / "rusage_of.py"), *cmd], capture_output=True, text=True, check=True)
    wall, user, system, rss_kb, code = done.stdout.split()
    if int(code) not in (0, 1):  # 1: a strict/problem exit still produced a report
        raise SystemExit(f"{' '.join(cmd)} exited {code}")
    return Run(float(wall), float(user) + float(system), int(rss_kb) / 1024, float(user))


def rss_floor() -> float:
    """The peak RSS (MB) that every measured command is counted from: the measuring process's own."""
    return measure(["true"]).rss_mb


def tlparse_binary() -> str:
    """The tlparse beside this interpreter (not a pyenv shim, which adds ~60 ms a run), else on PATH."""
    beside = Path(sys.executable).parent / "tlparse"
    return str(beside) if beside.exists() else (shutil.which("tlparse") or "tlparse")


def filesystem(path: Path) -> str:
    """The type of the file system that holds path (Linux's /proc/mounts; '?' elsewhere)."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "?"
    real = os.path.realpath(path)
    held = [(point, kind) for point, kind in mounts if real == point or real.startswith(point.rstrip("/") + "/")]
    return max(held, key=lambda m: len(m[0]))[1] if held else "?"


def disk_note(work: Path, largest_mb: float, runs: int) -> str:
    """The free space where the runs write, or exit if it is too little. Every run's outputs stay until the
    input's runs are over (see paired), and ext4 allocates slowly when nearly full: with the disk 98% full, the
    500x log took us 12.2-14.2 s of CPU, against 7.4-9.5 s once space was freed (the difference nearly all system
    time). With --out /dev/shm, all of it is held in memory."""
    usage = shutil.disk_usage(work)
    # the log; in every run our report (~2.4x the log), tlparse's (~2x) and the floor's copy (1x); room to spare
    needed = largest_mb * 1e6 * (1 + 5.5 * runs) + (1 << 30)
    if usage.free < needed:
        raise SystemExit(f"only {usage.free / 1e9:.1f} GB free in {work.parent}: a {largest_mb:.0f} MB log needs about "
                         f"{needed / 1e9:.1f} GB (free some space, or pass smaller --sizes)")
    return (f"outputs on {filesystem(work)} with {usage.free / 1e9:.0f} GB free "
            f"({usage.used / (usage.used + usage.free):.0%} full, as df counts)")


def commands(paths: list[Path], out: Path, one_run: bool) -> dict[str, list[list[str]]]:
    # (--overwrite: harmless, as paired() gives every run a directory of its own)
    flags = ["--no-browser", "--overwrite"]
    ours = [[sys.executable, "-m", "compilescope", *map(str, paths), "-o", str(out / "cs"), *flags]] if one_run else \
        [[sys.executable, "-m", "compilescope", str(p), "-o", str(out / "cs"), *flags] for p in paths]
    return {
        "ours": ours,
        "tlparse": [[tlparse_binary(), str(p), "-o", str(out / "tl"), *flags] for p in paths],
        "floor": [[sys.executable, str(HERE / "floor.py"), str(p), str(out / "floor")] for p in paths],
    }


def output_at(cmd: list[str]) -> int | None:
    """Where cmd names the directory it writes (after -o, or the floor's last argument); None for a command that
    writes nothing (--version, python -c ...), whose last argument must never be taken for a directory to remove."""
    if "-o" in cmd:
        return cmd.index("-o") + 1
    return len(cmd) - 1 if len(cmd) > 1 and cmd[1] == str(HERE / "floor.py") else None


def output_of(cmd: list[str]) -> str | None:
    at = output_at(cmd)
    return None if at is None else cmd[at]


def writing_apart(cmd: list[str], suffix: str) -> list[str]:
    """cmd with its output directory made its own (suffix appended)."""
    at = output_at(cmd)
    return cmd if at is None else [*cmd[:at], f"{cmd[at]}-{suffix}", *cmd[at + 1:]]


# No run writes where another's output was deleted less than a minute before. This VM's ext4 has no journal, and
# ext4 without one passes over every inode freed in the last 60 s when it makes a file: on the 100x log, six of our
# runs in a row, each after deleting the one before, took 0.5, 1.2, 1.9, 2.1, 2.1 and 2.4 s of system time, and six
# writing new directories 0.26-0.36 s. So each run writes a directory of its own; an input's outputs are deleted
# when all its runs are over, and the next input's runs wait until that deletion is RECENTLY_FREED_S old.
RECENTLY_FREED_S = 61
_last_deletion = [-math.inf]  # time.monotonic() of the last deletion of outputs


def in_turn(cmds: dict[str, list[list[str]]], run: int) -> list[tuple[str, list[list[str]]]]:
    """The commands in run's order: each run starts one later in the list (ours, tlparse, floor; tlparse, floor,
    ours; ...). With ours always first, a cost that falls on the first of a round fell on ours alone: on the 500x
    log, whichever of two builds ran first in each pair took ~7% more CPU, with the order either way round."""
    items = list(cmds.items())
    start = run % len(items) if items else 0
    return items[start:] + items[:start]


def paired(cmds: dict[str, list[list[str]]], runs: int) -> dict[str, Run]:
    """Median wall and CPU, max RSS, per tool; the tools alternate within every run. Waits first until the last
    outputs deleted are RECENTLY_FREED_S old, and deletes this call's outputs once all its runs are over."""
    time.sleep(max(0.0, _last_deletion[0] + RECENTLY_FREED_S - time.monotonic()))
    samples: dict[str, list[Run]] = {tool: [] for tool in cmds}
    outputs: list[str] = []
    for run in range(runs):
        for tool, tool_cmds in in_turn(cmds, run):
            parts = []
            for n, c in enumerate(tool_cmds):
                c = writing_apart(c, f"{run}-{n}")
                if (output := output_of(c)) is not None:
                    outputs.append(output)
                # Every run starts with nothing left to write back: hundreds of MB still dirty from the run
                # before made the next writer's system time swing 0.6 -> 2.5 s on the 100x log (same code).
                os.sync()
                parts.append(measure(c))
            samples[tool].append(Run(sum(p.wall for p in parts), sum(p.cpu for p in parts), max(p.rss_mb for p in parts),
                                    sum(p.user for p in parts)))
    for output in outputs:
        shutil.rmtree(output, ignore_errors=True)
    if outputs:
        _last_deletion[0] = time.monotonic()
    return {tool: Run(statistics.median(r.wall for r in rs), statistics.median(r.cpu for r in rs), max(r.rss_mb for r in rs),
                     statistics.median(r.user for r in rs))
            for tool, rs in samples.items()}


HEADER = (f"{'input':<32} {'MB':>7} | {'ours cpu':>8} {'tl cpu':>7} {'ratio':>6} {'user':>5} | {'ours MB':>7} {'tl MB':>6} {'ratio':>6} | "
          f"{'ours wall':>9} {'floor':>6} {'ratio':>6}")


def per_mb(r: dict[str, Run], tool: str, figure: str, mb: float, ref: str = "", ref_mb: float = 0.0) -> float:
    """tool's CPU or user seconds per MB on a log of mb MB; with ref, per MB beyond the reference log (ref_mb MB,
    the small log's size taken as 0: its seconds are a fixed cost), less the reference's seconds."""
    if mb <= ref_mb:  # (the 1x log beyond itself)
        return math.nan
    less = getattr(r[f"{tool}@{ref}"], figure) if ref else 0.0
    return (getattr(r[tool], figure) - less) / (mb - ref_mb)


def with_references(cmds: dict[str, list[list[str]]], work: Path, refs: list[tuple[str, Path]]) -> dict[str, list[list[str]]]:
    """cmds and, under the keys tool@name, each tool's commands on each reference log (name, path): they run
    alternately with cmds, so a fixed cost subtracted is one measured in the same minutes, not one taken later
    on a host that may be faster or slower by then."""
    runs = dict(cmds)
    for ref, path in refs:
        runs.update({f"{tool}@{ref}": ref_cmds for tool, ref_cmds in commands([path], work, False).items()})
    return runs


def startup_less_ratio(r: dict[str, Run]) -> float:
    """ours/tlparse in CPU seconds, each less its own seconds on the small log (the start-up)."""
    return (r["ours"].cpu - r["ours@small"].cpu) / (r["tlparse"].cpu - r["tlparse@small"].cpu)


PLATFORM = [("python", "python -c pass", "pass"),
            ("libraries", "+ orjson and Jinja2, the libraries a report needs", "import orjson, jinja2"),
            ("imports", "+ all that compilescope imports for a report",
             "from compilescope.cli import load_command_quickly; load_command_quickly('report')")]


def platform_commands() -> dict[str, list[list[str]]]:
    return {key: [[sys.executable, "-c", code]] for key, _, code in PLATFORM}


def platform_block(r: dict[str, Run], measured: list[tuple[str, dict[str, Run]]]) -> str:
    """What a Python process costs before it reads a log, beside each target (half tlparse's CPU and peak RSS):
    the part of a target that no code of ours can reach below."""
    lines = ["\nbefore a log is read (CPU, peak RSS; runs alternating with the small log's):"]
    lines += [f"  {title:<50} {r[key].cpu * 1e3:>4.0f} ms {r[key].rss_mb:>5.1f} MB" for key, title, _ in PLATFORM]
    imports, libraries = r["imports"], r["libraries"]
    lines.append("the targets on each log of 5 MB or more (half tlparse's CPU seconds and peak MB), beside what the imports take:\n"
                 f"  {'log':<18} | {'CPU target':>10} {'imports':>7} {'left':>5} {'ours past imports':>17} | "
                 f"{'MB target':>9} {'libraries':>9} {'ours imported':>13} {'ours':>5}")
    for name, m in measured:
        cpu, rss = m["tlparse"].cpu / 2, m["tlparse"].rss_mb / 2
        lines.append(f"  {name:<18} | {cpu:>10.2f} {imports.cpu:>7.2f} {cpu - imports.cpu:>5.2f} {m['ours'].cpu - imports.cpu:>17.2f} | "
                     f"{rss:>9.1f} {libraries.rss_mb:>9.1f} {imports.rss_mb:>13.1f} {m['ours'].rss_mb:>5.1f}")
    return "\n".join(lines)


def spread(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return max(values) / min(values) if values and min(values) > 0 else math.inf


def row(name: str, size_mb: float, r: dict[str, Run]) -> str:
    o, t, f = r["ours"], r["tlparse"], r["floor"]
    return (f"{name:<32} {size_mb:>7.1f} | {o.cpu:>8.2f} {t.cpu:>7.2f} {o.cpu / t.cpu:>6.2f} {o.user / t.user:>5.2f} | "
            f"{o.rss_mb:>7.0f} {t.rss_mb:>6.0f} {o.rss_mb / t.rss_mb:>6.2f} | {o.wall:>9.2f} {f.wall:>6.2f} {o.wall / f.wall:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 500],
                        help="generated logs: this many copies of a real 0.9 MB CUDA log (default 10 100 500)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where the logs and outputs go (default: the system's temporary directory); e.g. "
                             "/dev/shm, a file system in memory, to measure the tools without the disk's file system")
    args = parser.parse_args()
    if not Path(tlparse_binary()).exists():
        raise SystemExit("tlparse is not installed beside this python: pip install tlparse==0.4.3")
    if not GPU.is_dir() or not PEER.is_dir():
        raise SystemExit(f"{SHARED} not found (../shared beside the repository)")

    # Byte-compile compilescope as a wheel install would (an editable install has no .pyc with
    # PYTHONDONTWRITEBYTECODE=1, and compiling costs ~40 ms a run).
    import compilescope

    compileall.compile_dir(os.path.dirname(compilescope.__file__), quiet=1)
    unit = next((GPU / "profile_compiled").glob("*.log"))  # the generated logs' unit: itself the 1x log
    unit_mb = unit.stat().st_size / 1e6
    work = Path(tempfile.mkdtemp(prefix="compilescope-bench-", dir=args.out))
    try:
        disk = disk_note(work, max(args.sizes, default=0) * unit_mb, args.runs)
        print(f"compilescope vs tlparse 0.4.3 vs the floor: median of {args.runs} alternating runs, "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, {disk}")
        print("cpu = user + system seconds, all processes (user: the ratio of user seconds alone, as system time swings with\n"
              "this machine's page cache); MB = peak RSS of the largest process, counted from the measuring process's own\n"
              f"{rss_floor():.1f} MB (bench/rusage_of.py: a figure at it means at most that); wall ratio is ours / floor\n")
        print(HEADER)

        measured = []  # (name, the runs): every log of 5 MB or more, for the CPU ratio past start-up at the end
        gpt2 = next((GPU / "gpt2_train").glob("*.log"))
        medium = work / "torch213_medium.log"
        medium.write_bytes(gzip.decompress((HERE / "data" / "torch213_medium.log.gz").read_bytes()))
        hf = work / "hf_gpt2_generate.log"
        hf.write_bytes(gzip.decompress(HF_GPT2.read_bytes()))
        optimizer = work / "compiled_optimizer.log"
        optimizer.write_bytes(gzip.decompress(COMPILED_OPTIMIZER.read_bytes()))
        for name, log in (("gpt2_train (real, CUDA)", gpt2), ("hf_gpt2_generate (real, CUDA)", hf),
                          ("compiled_optimizer (real, CUDA)", optimizer), ("torch213_medium (real, CPU)", medium)):
            r = paired(with_references(commands([log], work, False), work, [("small", SMALL_LOG)]), args.runs)
            print(row(name, log.stat().st_size / 1e6, r))
            measured.append((name.split()[0], r))

        suite = sorted(p for p in PEER.iterdir() if p.is_file())
        size = sum(p.stat().st_size for p in suite) / 1e6
        print(row(f"peer suite ({len(suite)} logs, one run)", size, paired(commands(suite, work, True), args.runs)))

        growth = []
        for times in args.sizes:
            big = work / f"gen_{times}x.log"
            build(str(big), [str(unit)], times=times)
            mb = big.stat().st_size / 1e6
            # the references for the growth figures: the small log (start-up) and the 1x log
            r = paired(with_references(commands([big], work, False), work, [("small", SMALL_LOG), ("1x", unit)]),
                       args.runs)
            print(row(f"generated {times}x", mb, r))
            growth.append((times, mb, r))
            if mb >= 5:
                measured.append((f"{times}x", r))
            big.unlink()

        # the small log, and what a process costs before it reads anything, alternately
        small = paired({**commands([SMALL_LOG], work, False), **platform_commands()}, args.runs * 5)
        print("\ngrowth: CPU seconds per MB, user seconds alone in brackets; flat = linear. Each tool's figures on the\n"
              "references below are from runs alternating with each size's.")
        blocks = [("", "", 0.0),
                  ("small", "past start-up: less the small log's seconds (start-up, most of a 9 MB log's)", 0.0),
                  ("1x", f"beyond 1x: less the seconds on the 1x log ({unit_mb:.1f} MB, the same records), per MB more: "
                         "the cost of one more MB", unit_mb)]
        for ref, title, ref_mb in blocks:
            if title:
                print(f"  {title}")
            for times, mb, r in growth:
                print(f"  {times:>4}x {mb:>7.1f} MB   " + "   ".join(
                    f"{tool} {per_mb(r, tool, 'cpu', mb, ref, ref_mb):.4f} ({per_mb(r, tool, 'user', mb, ref, ref_mb):.4f})"
                    for tool in ("ours", "tlparse", "floor")))
            if ref and sum(mb > ref_mb for _, mb, _ in growth) > 1:
                print("    spread (largest / smallest of the sizes' figures; within 15% = 1.15 or less):  " + "   ".join(
                    f"{tool} cpu {spread([per_mb(r, tool, 'cpu', mb, ref, ref_mb) for _, mb, r in growth]):.2f} "
                    f"user {spread([per_mb(r, tool, 'user', mb, ref, ref_mb) for _, mb, r in growth]):.2f}"
                    for tool in ("ours", "tlparse")))

        print("\nCPU ratio past start-up: ours/tlparse on each log of 5 MB or more, each tool's CPU seconds less its own on\n"
              "the small log (runs alternating with the log's):\n  " + "   ".join(
                  f"{name} {startup_less_ratio(r):.2f}" for name, r in measured))

        version = paired({"ours": [[sys.executable, "-m", "compilescope", "--version"]],
                          "tlparse": [[tlparse_binary(), "--version"]],
                          "floor": [[sys.executable, "-c", "pass"]]}, args.runs * 5)
        print(f"\nstart-up: one {SMALL_LOG.stat().st_size / 1e3:.0f} KB log: ours {small['ours'].wall * 1e3:.0f} ms wall, "
              f"{small['ours'].cpu * 1e3:.0f} ms CPU (tlparse {small['tlparse'].wall * 1e3:.0f} ms, floor "
              f"{small['floor'].wall * 1e3:.0f} ms); --version: ours {version['ours'].wall * 1e3:.0f} ms "
              f"(python -c pass {version['floor'].wall * 1e3:.0f} ms)")
        print(platform_block(small, measured))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

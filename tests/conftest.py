"""Shared fixtures: where the real logs are, and a helper to run the CLI in-process."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# The suite runs with an empty $HOME of its own (results must not depend on what an earlier run left in the real
# one) and must leave it empty: pytest_sessionfinish checks. The CLI's template cache is off here; its own tests
# turn it on in a directory they own.
os.environ.pop("XDG_CACHE_HOME", None)
os.environ["COMPILESCOPE_TEMPLATE_CACHE"] = "0"

from compilescope.cli import main  # noqa: E402 - (importing compilescope reads no $HOME: test_home.py)

REPO = Path(__file__).resolve().parents[1]
PEER = REPO.parent / "shared" / "traces" / "peer-tlparse"
PEER_INPUTS = PEER / "inputs"
GPU_TRACES = REPO.parent / "shared" / "traces" / "gpu-torch211"
TORCH213_LOGS = REPO / "tests" / "data" / "torch213" / "logs"
TORCH213_PROGRAMS = REPO / "tests" / "data" / "torch213" / "programs"
CUDA211_LOGS = REPO / "tests" / "data" / "cuda_torch211" / "logs"  # recorded by compilescope's run/capture on a GPU

# Single-rank peer logs (the multi-rank directories are another issue).
# Without ../shared the tests over these logs are still collected (from the names below) and each one skips
# locally and FAILS in CI (peer() -> skip_or_fail): they never vanish silently.
KNOWN_PEER_SINGLE_LOGS = [
    "artifacts.log", "autotune_with_compile_id.log", "cache_hit_miss.log", "chromium_events.log", "comp_failure.log",
    "comp_metrics.log", "export.log", "export_guard_added.log", "inductor_provenance_aot_cuda_log.txt",
    "inductor_provenance_aot_debug_handle_log.txt", "inductor_provenance_aot_log.txt", "inductor_provenance_aot_log_old.txt",
    "inductor_provenance_extended_log.txt", "inductor_provenance_jit_cuda_log.txt",
    "inductor_provenance_jit_debug_handle_log.txt", "inductor_provenance_jit_log.txt", "links.log", "simple.log",
    "simple_corrupted_json.log",
]
PEER_SINGLE_LOGS = (sorted(p.name for p in PEER_INPUTS.glob("*") if p.is_file()) if PEER_INPUTS.is_dir()
                    else KNOWN_PEER_SINGLE_LOGS)
TORCH213 = sorted(p.name for p in TORCH213_LOGS.glob("*.log"))
TORCH214_LOGS = REPO / "tests" / "data" / "torch214" / "logs"  # the same programs, recorded with torch 2.14 (gzipped)
TORCH214 = sorted(p.name.removesuffix(".gz") for p in TORCH214_LOGS.glob("*.log.gz"))
# Every log of ../shared, relative to ../shared/traces: peer logs, the logs in peer rank directories, the GPU logs.
SHARED_LOGS = sorted(
    [f"peer-tlparse/inputs/{name}" for name in PEER_SINGLE_LOGS]
    + [str(p.relative_to(PEER.parent)) for p in PEER_INPUTS.glob("*/*") if p.is_file() and "torch_trace" in p.name]
    + [str(p.relative_to(PEER.parent)) for p in GPU_TRACES.glob("*/dedicated_log_torch_trace*.log")]
)


BENCH = Path(__file__).resolve().parent.parent / "bench"


def bench_module(name: str):
    """bench/<name>.py as a module (the benchmark's scripts are not a package; run.py imports make_big_log beside it)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # (a dataclass looks its module up there)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def line_holding(program: Path, text: str) -> int:
    """The one line of a fixture's program that holds text: where a test's expected line comes from, so that it follows
    the program when it is edited and recorded again."""
    (line,) = [n for n, src in enumerate(program.read_text().splitlines(), 1) if text in src]
    return line


def payloads_by_compile(log: Path, name: str) -> dict[str, str]:
    """compile id ("[0/1]") -> payload of each event named name (an envelope's first key, or an artifact's name), read
    from the log's own text with no compilescope code: what a test expects comes from here."""
    opened = gzip.open(log, "rt") if log.suffix == ".gz" else open(log)
    with opened as f:
        text = f.read()
    return {f"[{m[1]}/{m[2]}]": m[3] for m in re.finditer(
        r'^V[^\n]*\] \{"(?:artifact": \{"name": ")?' + name + r'"[^\n]*"frame_id": (\d+), "frame_compile_id": (\d+)'
        r'[^\n]*\n((?:\t[^\n]*\n)*)', text, re.M)}


def shared(relpath: str) -> Path:
    """A file of ../shared/traces; skips locally, fails in CI, when ../shared is missing."""
    path = PEER.parent / relpath
    if not path.exists():
        skip_or_fail(f"{relpath} not available (../shared missing)")
    return path


def shared_dirs_present() -> None:
    """Called by tests that run on ../shared: locally they skip without it, in CI they fail (never vanish silently)."""
    for directory in (PEER_INPUTS, GPU_TRACES):
        if not directory.is_dir():
            skip_or_fail(f"{directory} not available (../shared missing): its tests cannot run")


def skip_or_fail(reason: str) -> None:
    """Skip locally when a tool is missing; in CI (CI=true) a missing tool is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must install it: see scripts/test.sh)")
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _needs_torch(request):
    """Tests marked @pytest.mark.torch need torch 2.13.0 (they compile for real)."""
    if request.node.get_closest_marker("torch") is None:
        return
    if importlib.util.find_spec("torch") is None:
        skip_or_fail("torch==2.13.0 not installed (pip install torch==2.13.0)")
    import torch

    if not torch.__version__.startswith("2.13.0"):
        skip_or_fail(f"these tests expect torch 2.13.0, found {torch.__version__}")


def peer(name: str) -> Path:
    path = PEER_INPUTS / name
    if not path.exists():
        skip_or_fail(f"peer log {name} not available (../shared missing)")
    return path


def torch213(name: str) -> Path:
    return TORCH213_LOGS / name


def torch214(name: str) -> Path:
    """A torch 2.14 log, by the name of its torch 2.13 twin ("graph_breaks.log")."""
    return TORCH214_LOGS / f"{name}.gz"


def cuda211(name: str) -> Path:
    return CUDA211_LOGS / name



def moved_log(log: Path, out: Path, programs: Path | None = None) -> Path:
    """A copy of a recorded log (tests/data/<set>/logs/) in out, its programs' recorded paths made programs' (the
    set's programs/ in this checkout by default): what reads a program from disk reads it wherever the repository
    lies, not only where the log was recorded; a folder holding none, as a machine without the program. The logs
    were recorded in several checkouts (/work/main/, /tmp/sNN/wt-*/: the set's README.md); each is moved."""
    import gzip
    import re

    text = (gzip.open(log, "rt") if log.suffix == ".gz" else open(log)).read()
    recorded = f"tests/data/{log.parents[1].name}/programs/"
    # Each checkout it was recorded in, as a quoted path names it (a path inside a string may follow `\n`).
    roots = set(re.findall(r"(?<![\w.~-])(/[\w.~/-]*?/)" + re.escape(recorded), text))
    assert roots, f"{log} names no program of {recorded}"
    # (torch's shorten_filename clips a path at the front in guard comments, "ork/main/tests/...": moved as well)
    recorded_at = re.compile("|".join(re.escape(f"{root}{recorded}") + "|" + r"\b\w*" + re.escape(f"{root}{recorded}"[2:])
                                      for root in sorted(roots, key=len, reverse=True)))
    here = f"{(programs or log.parents[1] / 'programs').as_posix()}/"
    moved = out / log.name
    with gzip.open(moved, "wt") if log.suffix == ".gz" else open(moved, "w") as f:
        f.write(recorded_at.sub(lambda _: here, text))
    return moved


def cuda211_moved(name: str, out: Path, programs: Path | None = None) -> Path:
    """moved_log of a cuda_torch211 log."""
    return moved_log(cuda211(name), out, programs)


def torch213_moved(name: str, out: Path, programs: Path | None = None) -> Path:
    """moved_log of a torch213 log: for a test of what a page shows of a program's whole text (the log quotes some
    lines of it), which must not depend on the checkout the log was recorded in being on this machine."""
    return moved_log(torch213(name), out, programs)


def run_cli(*args: str) -> int:
    return main([str(a) for a in args])


def report(log: Path, out: Path, *flags: str) -> dict:
    """Write a report and return its compile_directory.json."""
    rc = run_cli(log, "-o", out, "--no-browser", "--overwrite", *flags)
    assert rc == 0, f"compilescope failed on {log}"
    return json.loads((out / "compile_directory.json").read_text())


def record_calls(monkeypatch, module, name: str, label) -> list:
    """Wrap module.name so each call appends label(*args) to the list returned (e.g. to check that a page is built
    while it is written, not before)."""
    calls: list = []
    wrapped = getattr(module, name)

    def recording(*args):
        calls.append(label(*args))
        return wrapped(*args)

    monkeypatch.setattr(module, name, recording)
    return calls


def tlparse_binary() -> str:
    # The test extra installs tlparse beside the interpreter running the tests; PATH's may be another version.
    beside = Path(sys.executable).parent / "tlparse"
    if not beside.exists():
        skip_or_fail(f"{beside} missing (pip install tlparse==0.4.3)")
    return str(beside)


TEST_HOME = ""  # made by pytest_configure


def pytest_configure(config):
    """The suite's $HOME is made here, in each pytest process (the controller and every xdist worker), not when this
    module is imported: a process the suite starts that imports it (a spawned pool or dask worker unpickling a test's
    function) ends with os._exit, which runs no atexit, so a $HOME it made was left in /tmp. Such a process keeps
    the $HOME of the process that started it."""
    global TEST_HOME
    TEST_HOME = tempfile.mkdtemp(prefix="compilescope-home-")
    os.environ["HOME"] = TEST_HOME


def pytest_unconfigure(config):
    # (also after a session that never reached pytest_sessionfinish)
    if TEST_HOME:
        shutil.rmtree(TEST_HOME, ignore_errors=True)


def pytest_sessionfinish(session, exitstatus):
    left = sorted(str(p.relative_to(TEST_HOME)) for p in Path(TEST_HOME).rglob("*"))
    if left:
        print(f"\nthe tests wrote into $HOME ({TEST_HOME}): {left[:10]}", file=sys.stderr)
        session.exitstatus = 1

"""Run one of the demo's example programs (demo/programs/) traced, in a process of its own.

Each program runs as a script (`python <program>.py`) with TORCH_TRACE, INDUCTOR_PROVENANCE
and an empty Inductor cache, as `compilescope run --fresh-cache` runs any program. A process
per program means no report sees another program's compilations, and no stack in it starts
with compilescope's own frames. scripts/make_demo_traces.py records the bundled traces with
this same function, so the bundled and the live demo show the same programs.

Needs torch in this interpreter (the child runs with it).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from importlib import resources

from ..runner import Program, choose_log, run_program

# The caller's own torch logging settings would change what the trace holds.
SCRUBBED_ENV = ("TORCH_LOGS", "TORCH_LOGS_OUT", "TORCH_DTRACE", "TORCH_COMPILE_DEBUG", "TORCHINDUCTOR_FORCE_DISABLE_CACHES",
                "TORCHDYNAMO_VERBOSE", "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS", "TORCHDYNAMO_DISABLE")
TIMEOUT_S = 600


@dataclass
class LiveRun:
    name: str
    log: str | None  # the trace it wrote (None: it compiled nothing)
    error: str | None  # what the program raised, in one line (its report is still written)
    seconds: float


def program_path(name: str) -> str:
    """The example's file (the package is installed as files: a wheel or an editable checkout)."""
    return str(resources.files(__package__).joinpath("programs").joinpath(f"{name}.py"))


def run_example(name: str, work_dir: str) -> LiveRun:
    """Run the example `name` in work_dir: its trace in work_dir/trace/, its output in work_dir/output.out
    (the terminal stays short; the report shows what matters)."""
    trace_dir = os.path.join(work_dir, "trace")
    os.makedirs(trace_dir, exist_ok=True)
    output = os.path.join(work_dir, "output.out")
    start = time.monotonic()
    result = run_program(
        Program([sys.executable, program_path(name)], True), trace_dir, fresh_cache=True, timeout=TIMEOUT_S,
        extra_env=dict.fromkeys(SCRUBBED_ENV), cwd=work_dir, output=output,
    )
    error = None
    if result.timed_out:
        error = f"stopped after {TIMEOUT_S} s"
    elif result.returncode != 0:
        error = _last_line(output) or f"exit status {result.returncode}"
    log = choose_log(result.logs)[0] if result.logs else None
    return LiveRun(name, log, error, time.monotonic() - start)


def _last_line(path: str) -> str | None:
    """The exception a failing program printed last (`ValueError: ...`)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return None
    return lines[-1][:300] if lines else None

"""Helpers for the capture tests: torch-marked tests need torch==2.13.0 (skipped locally without it, failed in CI)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path


from ..conftest import REPO
from ..htmltable import table_rows

FIXTURE_PROGRAMS = REPO / "tests" / "data" / "torch213" / "programs"
OUR_PROGRAMS = Path(__file__).resolve().parent / "programs"
CHILD_TIMEOUT_S = 240  # compilescope run --timeout: the traced program is stopped after this
SCRUB = ("TORCH_TRACE", "TORCH_DTRACE", "TORCH_LOGS", "TORCH_COMPILE_DEBUG", "TORCHINDUCTOR_CACHE_DIR", "INDUCTOR_PROVENANCE")




def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    env.update(extra)
    return env


def compilescope(*args, cwd: Path, env: dict[str, str] | None = None, timeout: float = CHILD_TIMEOUT_S + 60) -> subprocess.CompletedProcess:
    """`python -m compilescope ARGS` as a user runs it, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "compilescope", *map(str, args)],
        cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=timeout,
    )


def compile_ids(report: Path) -> list[str]:
    return list(json.loads((report / "compile_directory.json").read_text()))


def statuses(report: Path) -> dict[str, str]:
    index = (report / "index.html").read_text()
    return dict(re.findall(r'<a class="cid"[^>]*>([^<]+)</a> <span class="status status-(\w+)"', index))


def failure_rows(report: Path) -> list[list[str]]:
    """(compile id, type, reason, source) of every row of failures_and_restarts.html."""
    return table_rows((report / "failures_and_restarts.html").read_text())[1:]

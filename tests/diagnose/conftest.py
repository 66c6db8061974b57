"""Helpers for the diagnose tests: the torch-marked ones need torch==2.13.0 (skipped locally without it, failed in CI)."""

from __future__ import annotations

import sys
import json
from pathlib import Path


from ..capture.conftest import clean_env, compilescope

PROGRAMS = Path(__file__).resolve().parent / "programs"
RUN_TIMEOUT_S = 240  # diagnose --timeout: any one child run is stopped after this




def diagnose(tmp_path: Path, program: str, *flags: str, own_tmpdir: bool = False):
    """`compilescope diagnose FLAGS -o OUT -- PYTHON PROGRAM` (PYTHON: the tests' own interpreter, never PATH's) from an empty working directory: (process, diagnosis.json).

    own_tmpdir: run with TMPDIR in tmp_path and check that none of our temporary directories is left there
    (torch's own cache may stay: it is torch's)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "out"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = compilescope(
        "diagnose", *flags, "--no-browser", "--timeout", RUN_TIMEOUT_S, "-o", out, "--", sys.executable, PROGRAMS / program,
        cwd=cwd, timeout=6 * RUN_TIMEOUT_S, env=clean_env(TMPDIR=str(tmp)) if own_tmpdir else None,
    )
    assert (out / "diagnosis.json").exists(), proc.stderr[-4000:]
    assert list(cwd.iterdir()) == [], "diagnose wrote into the working directory"
    assert [p.name for p in tmp.iterdir() if p.name.startswith("compilescope")] == [], "temporary directories left behind"
    return proc, json.loads((out / "diagnosis.json").read_text()), out


def statuses(doc: dict) -> dict[str, str]:
    return {s["stage"]: s["status"] for s in doc["stages"]}

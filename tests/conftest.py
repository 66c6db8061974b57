"""Shared fixtures: where the real logs are, and a helper to run the CLI in-process."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from compilescope.cli import main

REPO = Path(__file__).resolve().parents[1]
PEER = REPO.parent / "shared" / "traces" / "peer-tlparse"
PEER_INPUTS = PEER / "inputs"
TORCH213_LOGS = REPO / "tests" / "data" / "torch213" / "logs"

# Single-rank peer logs (the multi-rank directories are another issue).
PEER_SINGLE_LOGS = sorted(p.name for p in PEER_INPUTS.glob("*") if p.is_file()) if PEER_INPUTS.is_dir() else []
TORCH213 = sorted(p.name for p in TORCH213_LOGS.glob("*.log"))


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


def run_cli(*args: str) -> int:
    return main([str(a) for a in args])


def report(log: Path, out: Path, *flags: str) -> dict:
    """Write a report and return its compile_directory.json."""
    rc = run_cli(log, "-o", out, "--no-browser", "--overwrite", *flags)
    assert rc == 0, f"compilescope failed on {log}"
    return json.loads((out / "compile_directory.json").read_text())


def tlparse_binary() -> str:
    # The test extra installs tlparse beside the interpreter running the tests; PATH's may be another version.
    beside = Path(sys.executable).parent / "tlparse"
    if not beside.exists():
        skip_or_fail(f"{beside} missing (pip install tlparse==0.4.3)")
    return str(beside)

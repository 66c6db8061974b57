"""`compilescope demo` runs its example programs live and gets the compile ids of the bundled traces."""

from __future__ import annotations

import pytest

from ..conftest import run_cli
from .conftest import compile_ids, compilescope

pytestmark = pytest.mark.torch


def test_live_demo_matches_bundled_traces(tmp_path):
    from compilescope.demo import SCENARIOS

    proc = compilescope("demo", "-o", tmp_path / "live", "--no-browser", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "under compilescope.capture()" in proc.stdout
    assert run_cli("demo", "--bundled", "-o", tmp_path / "bundled", "--no-browser") == 0
    assert "ran just now" in (tmp_path / "live" / "index.html").read_text()
    for name, _ in SCENARIOS:
        assert compile_ids(tmp_path / "live" / name) == compile_ids(tmp_path / "bundled" / name), name
    assert "inductor_output_code" in (tmp_path / "live" / "training" / "index.html").read_text()

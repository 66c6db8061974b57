"""`compilescope demo` runs its example programs live, each alone in its process, and gets the bundled traces' picture."""

from __future__ import annotations

import pytest

from ..conftest import run_cli
from ..pages.test_demo_and_back_links import assert_recorded_from_its_program
from .conftest import compile_ids, compilescope, failure_rows

pytestmark = pytest.mark.torch


def test_live_demo_matches_bundled_traces(tmp_path):
    from compilescope.demo import SCENARIOS

    proc = compilescope("demo", "-o", tmp_path / "live", "--no-browser", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "each traced in its own process" in proc.stdout
    assert run_cli("demo", "--bundled", "-o", tmp_path / "bundled", "--no-browser") == 0
    assert "ran just now" in (tmp_path / "live" / "index.html").read_text()
    for name, _ in SCENARIOS:
        live, bundled = tmp_path / "live" / name, tmp_path / "bundled" / name
        assert compile_ids(live) == compile_ids(bundled), name
        # No report counts another program's graph breaks or failures.
        assert [r[:2] for r in failure_rows(live)] == [r[:2] for r in failure_rows(bundled)], name
        assert_recorded_from_its_program(name, live / "raw.log")
        assert 'id="up-link"' in (live / "index.html").read_text()
    # What torch printed on stderr, recorded by the run: each where the user's code led to it.
    from compilescope.analyses.torch_warnings import ITEM_BREAK, RECOMPILE_LIMIT, WONT_CONVERT, torch_warnings
    from compilescope.ingest.reader import read_trace

    printed = {}
    for name, _ in SCENARIOS:
        with read_trace(str(tmp_path / "live" / name / "raw.log")) as trace:
            printed[name] = [(w.name, w.location.short if w.location else None) for w in torch_warnings(trace).warnings]
    assert printed["graph_breaks"] == [(ITEM_BREAK, "graph_breaks.py:17")]
    assert printed["recompiles"] == [(RECOMPILE_LIMIT, "recompiles.py:11")]
    assert printed["compile_error_fallback"] == [(WONT_CONVERT, "compile_error_fallback.py:6")]
    training = (tmp_path / "live" / "training")
    assert "inductor_output_code" in (training / "-_0_0_0" / "index.html").read_text()
    assert (training / "provenance").is_dir()

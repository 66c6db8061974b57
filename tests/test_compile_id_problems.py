"""--strict-compile-id and the Problems list: records torch writes outside a compilation on purpose are not problems."""

from __future__ import annotations

import json

import pytest

from compilescope.decompile.recorded import CUDAGRAPH_SKIP
from compilescope.ingest.reader import read_trace

from .conftest import TORCH213, cuda211, run_cli, torch213
from .tracelog import cid, envelope


@pytest.mark.parametrize("name", TORCH213)
def test_strict_compile_id_passes_every_real_torch213_log(name, tmp_path, capsys):
    rc = run_cli(torch213(name), "-o", tmp_path / "out", "--no-browser", "--strict-compile-id")
    assert rc == 0, capsys.readouterr().err
    with read_trace(str(torch213(name))) as trace:
        assert [p for p in trace.stats.problems if p.category == "missing_compile_id"] == []


def test_strict_compile_id_passes_compilescopes_own_cudagraph_skip(tmp_path, capsys):
    # run and capture() write the skip when the graph first runs, outside any compilation: no compile id is due.
    log = cuda211("cudagraph_first_run_skip.log.gz")
    with read_trace(str(log)) as trace:
        skips = [a for entry in trace.compiles.values() for a in entry.artifacts if a.name == CUDAGRAPH_SKIP]
        assert skips and all(a.compile_id is None for a in skips)
        assert [p for p in trace.stats.problems if p.category == "missing_compile_id"] == []
    rc = run_cli(log, "-o", tmp_path / "out", "--no-browser", "--strict-compile-id")
    assert rc == 0, capsys.readouterr().err


def test_torch_version_is_not_listed_under_problems(tmp_path):
    run_cli(torch213("graph_breaks.log"), "-o", tmp_path / "out", "--no-browser")
    index = (tmp_path / "out" / "index.html").read_text()
    assert 'id="problems"' not in index  # torch_version (line 13) was the only entry
    assert "torch_version" not in index.split('id="parse-stats"')[-1]


def test_a_compilation_record_without_id_still_fails_strict_compile_id(tmp_path, capsys):
    log = tmp_path / "t.log"
    log.write_text(
        envelope({"artifact": {"name": "torch_version", "encoding": "json"}}, json.dumps({"pytorch_version": "2.13.0"}))
        + envelope({"dynamo_start": {"stack": []}, **cid(0)})
        + envelope({"dynamo_output_graph": {"sizes": {}}}, "graph()")  # no compile id: torch never writes this
    )
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser", "--strict-compile-id") == 1
    err = capsys.readouterr().err
    assert "line 4: missing_compile_id: dynamo_output_graph envelope has no compile id" in err
    assert "torch_version" not in err and "1 problem in" in err

"""An empty graph (a restart before any op: graph_op_count 0) is "empty", never "ok" (tests/data/torch213/logs/empty_graph.log)."""

from __future__ import annotations

import json
import re

from compilescope.analyses.analyze import analyze
from compilescope.analyses.log_digest import digest_log
from compilescope.analyses.status import EMPTY, compile_status
from compilescope.ingest.reader import read_trace
from compilescope.model.ids import compile_id_key

from .conftest import run_cli, torch213

def _dir_name(key: str) -> str:
    """tlparse's directory of a compile id: [0/0_1] -> -_0_0_1, [2/0] -> -_2_0_0."""
    frame, rest = key.strip("[]").split("/")
    compile_id, _, attempt = rest.partition("_")
    return f"-_{frame}_{compile_id}_{attempt or 0}"


EXPECTED = {"[0/0]": "restarted", "[0/0_1]": "empty", "[1/0]": "ok", "[2/0]": "restarted", "[2/0_1]": "empty", "[3/0]": "ok",
            "[4/0]": "ok"}


def test_statuses_of_empty_graphs():
    with read_trace(str(torch213("empty_graph.log"))) as trace:
        results = analyze(trace)
        statuses = {compile_id_key(cid): s for cid, s in results.statuses.items() if cid is not None}
        assert statuses == EXPECTED
        assert digest_log(results).statuses == {"ok": 3, "break": 0, "restarted": 2, "empty": 2, "error": 0,
                                                  "missing": 0}
        # graph_op_count 0 is empty; None (no graph at all, [4/0]) is not
        by_key = {c.key: c for c in trace.compiles.values()}
        assert by_key["[0/0_1]"].metrics["graph_op_count"] == 0 and compile_status(by_key["[0/0_1]"]) == EMPTY
        assert by_key["[4/0]"].metrics["graph_op_count"] is None


def test_the_report_shows_empty_graphs(tmp_path, capsys):
    assert run_cli(torch213("empty_graph.log"), "-o", tmp_path / "out", "--no-browser") == 0
    out = tmp_path / "out"
    for key, status in EXPECTED.items():
        page = out / _dir_name(key) / "index.html"
        assert re.findall(r'class="status status-(\w+)"', page.read_text()) == [status], key
    capsys.readouterr()
    assert run_cli("summary", "--json", torch213("empty_graph.log")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["compiles"] == 7

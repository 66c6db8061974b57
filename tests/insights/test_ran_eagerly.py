"""A log whose every graph is empty says the model ran eagerly, and its cards do not count a compile with no graph as
compiled code. torch.compile(DistributedDataParallel(mlp)) on torch 2.13 (tests/data/torch213/multi_rank_ddp/, one rank
at a time) breaks in DDP's forward: each compilation logs graph_op_count 0, and the resume function [3/0] null (no
graph at all). Each expected value is read from the raw log (_metrics), not from compilescope's output."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from compilescope.analyses.empty_graphs import made_no_graph
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, cuda211, run_cli, torch213, torch214

DDP = REPO / "tests" / "data" / "torch213" / "multi_rank_ddp"
RANK_1 = DDP / "dedicated_log_torch_trace_rank_1.log.gz"
TITLE = "every graph Dynamo made is empty: your model ran eagerly"


def _metrics(log: Path) -> dict[str, dict]:
    """compile id -> its compilation_metrics, as torch wrote them."""
    with gzip.open(log, "rt", encoding="utf-8") if log.suffix == ".gz" else open(log, encoding="utf-8") as f:
        found = [json.loads(line[line.index('{"compilation_metrics"'):])["compilation_metrics"]
                 for line in f if '{"compilation_metrics": ' in line]
    return {m["compile_id"]: m for m in found}


def _breaks(log: Path) -> set[str]:
    """The file:line of each "Graph break in user code at ..." of the log's graph break artifacts."""
    with gzip.open(log, "rt", encoding="utf-8") as f:
        return {m[1].rsplit("/", 1)[-1] for m in re.finditer(r"Graph break in user code at (\S+)", f.read())}


def test_the_raw_log_holds_no_operator():
    metrics = _metrics(RANK_1)
    assert {cid: m["graph_op_count"] for cid, m in metrics.items()} == {
        "0/0": 0, "1/0": 0, "2/0": 0, "3/0": None, "0/1": 0}
    # [3/0] (the rest of contextlib's __init__ after its break) compiled: code installed, no failure, and no graph.
    assert metrics["3/0"]["has_guarded_code"] is True and metrics["3/0"]["fail_type"] is None
    assert _breaks(RANK_1) == {"distributed.py:1757", "contextlib.py:105"}


@pytest.mark.parametrize("rank", [0, 1])
def test_fix_first_says_the_model_ran_eagerly_and_where_it_broke(rank, capsys):
    assert run_cli("summary", "--json", DDP / f"dedicated_log_torch_trace_rank_{rank}.log.gz") == 0
    doc = json.loads(capsys.readouterr().out)
    first = doc["findings"][0]
    assert (first["severity"], first["title"]) == ("warning", TITLE)
    # Where Dynamo stopped: both breaks of the log, DDP's _pre_forward and contextlib's __init__.
    assert first["detail"].startswith("Dynamo broke the graph before any operation at distributed.py:1757 in "
                                      "_pre_forward (Unsupported method call), contextlib.py:105 in __init__")
    compilations = 4 if rank == 0 else 5  # compilation_metrics records: 0/0 1/0 2/0 3/0, and rank 1's 0/1
    assert f"none of its {compilations} compilations holds an operator" in first["detail"]
    assert doc["empty_graphs"]["no_graph"] == ["[3/0]"] and doc["empty_graphs"]["ran_eagerly"] is True


def test_the_cards_do_not_count_a_compile_with_no_graph_as_compiled(tmp_path, capsys):
    assert run_cli(RANK_1, "-o", tmp_path / "out", "--no-browser") == 0
    capsys.readouterr()
    cards = dict((words, int(n)) for n, words in re.findall(
        r'<div class="n[^"]*">(\d+)</div><div class="l">([^<]+)</div>', (tmp_path / "out" / "index.html").read_text()))
    # 5 compilations, each restarted once but [3/0]: 4 restarted attempts, 4 graphs of 0 ops, [3/0] with no graph.
    assert cards["compiled, with no graph"] == 1 and cards["empty graph"] == 4 and cards["restarted attempts"] == 4
    assert "compiled" not in cards


def test_a_log_with_graphs_is_not_said_to_have_run_eagerly(tmp_path, capsys):
    # empty_graph.log: passthrough ([4/0]) made no graph, but the resume functions [1/0] and [3/0] hold one op each.
    log = torch213("empty_graph.log")
    counts = {cid: m["graph_op_count"] for cid, m in _metrics(log).items()}
    assert (counts["1/0"], counts["3/0"], counts["4/0"]) == (1, 1, None)
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    out = capsys.readouterr().out
    assert "ran eagerly" not in out
    page = (tmp_path / "out" / "index.html").read_text()
    assert '<div class="n status-ok">2</div><div class="l">compiled</div>' in page
    assert '<div class="n status-empty">1</div><div class="l">compiled, with no graph</div>' in page


@pytest.mark.parametrize("log", [
    torch213("empty_graph.log"), torch213("compiled_optimizer.log.gz"), torch213("compiled_autograd.log.gz"),
    torch214("empty_graph.log"), cuda211("compiled_optimizer.log.gz"),
    REPO / "tests" / "data" / "torch214" / "differs" / "compiled_autograd.log.gz"])
def test_logs_with_empty_graphs_and_operators_gain_no_finding(log):
    # The real logs that hold a graph_op_count of 0 or null beside graphs with operators.
    assert any(m["graph_op_count"] for m in _metrics(log).values())
    with read_trace(str(log)) as trace:
        found = insights(trace)
    assert not found.empty_graphs.ran_eagerly and TITLE not in [f.title for f in found.findings]


def test_a_log_without_graph_op_count_counts_nothing_as_empty():
    # torch logged graph_op_count null for [4/0]; a torch that does not log the key says nothing of the graph.
    passthrough = _metrics(torch213("empty_graph.log"))["4/0"]
    assert made_no_graph(passthrough)
    assert not made_no_graph({k: v for k, v in passthrough.items() if k != "graph_op_count"})

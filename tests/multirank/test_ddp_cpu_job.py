"""A real 2-rank torch.compile(DistributedDataParallel(mlp)) job on CPU (gloo, torch 2.13), recorded by
`compilescope run -- torchrun`: tests/data/torch213/multi_rank_ddp/, from tests/multirank/programs/ddp_uneven_batch.py
(make_multi_rank.py --ddp). Rank 1's last batch is 5 rows, not 8, so rank 1 alone recompiles DDP's forward; Dynamo
restarts each of its compilations at a graph break in DDP's forward, so the recompile is [0/1] and its restart [0/1_1].
What each test expects was read in the raw logs (zcat | grep), as _ids and _reasons below read them.
"""

from __future__ import annotations

import gzip
import json
import re
from html import unescape
from pathlib import Path

import pytest

from ..conftest import REPO
from .conftest import Landing, write_landing

JOB = REPO / "tests" / "data" / "torch213" / "multi_rank_ddp"
GLOO = REPO / "tests" / "data" / "torch213" / "multi_rank"  # two_ranks_gloo.py: step(x) compiles (x * 2).sum()
RANK_LOGS = {rank: JOB / f"dedicated_log_torch_trace_rank_{rank}.log.gz" for rank in (0, 1)}
_CONTEXT = re.compile(r'"frame_id": (\d+), "frame_compile_id": (\d+), "attempt": (\d+)')


def _ids(log: Path) -> set[str]:
    """Every compile id the log's records carry, as the report writes them ([0/1_1]: attempt 1)."""
    with gzip.open(log, "rt", encoding="utf-8") as f:
        found = {m.groups() for line in f if (m := _CONTEXT.search(line))}
    return {f"[{frame}/{compile}{f'_{attempt}' if attempt != '0' else ''}]" for frame, compile, attempt in found}


def _reasons(log: Path) -> list[tuple[str, str]]:
    """(the compile id, each payload line) of the log's recompile_reasons artifacts, as torch wrote them."""
    reasons, context = [], None
    with gzip.open(log, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.startswith("\t"):
                context = _CONTEXT.search(line) if '"name": "recompile_reasons"' in line else None
            elif context:
                reasons.append((context.groups(), line.strip()))
    return reasons


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Landing:
    return write_landing(JOB, tmp_path_factory.mktemp("ddp_cpu") / "out")


def test_the_logs_hold_one_recompile_on_rank_1_and_its_restart():
    only_rank_1 = _ids(RANK_LOGS[1]) - _ids(RANK_LOGS[0])
    assert only_rank_1 == {"[0/1]", "[0/1_1]"} and not _ids(RANK_LOGS[0]) - _ids(RANK_LOGS[1])
    assert _reasons(RANK_LOGS[0]) == []
    # torch logs the reason on the recompilation, attempt 0: [0/1]
    assert _reasons(RANK_LOGS[1]) == [(("0", "1", "0"), "0/0: tensor 'args[0]' size mismatch at index 0. expected 8, "
                                                          "actual 5")]


def test_the_recompile_is_one_line_with_its_restart_and_its_reason(fleet):
    reason = "tensor 'args[0]' size mismatch at index 0. expected 8, actual 5"
    # Keyed by the recompilation, as torch logged it: not by the restart that finished it ([0/1_1]).
    assert (fleet.ranks[0]["recompile_reasons"], fleet.ranks[1]["recompile_reasons"]) == ({}, {"[0/1]": reason})
    divergence = fleet.divergence("compile_ids")
    # Not "[0/1] compiled only on rank 1" and "[0/1_1] compiled only on rank 1: ...": one recompile, said once.
    assert divergence["details"] == [f"[0/1] compiled only on rank 1 (restarted as [0/1_1]): {reason}"]
    assert divergence["explained_by"] == 1
    assert f"[0/1] compiled only on rank 1 (restarted as [0/1_1]): {reason}" in unescape(fleet.html)


def test_the_groups_count_compilations_with_their_restarts_apart(fleet):
    # Every compilation restarts at DDP's break but the resume function [3/0]: 7 and 9 compile ids are 4 and 5
    # compilations, counted by their ids without the attempt.
    ids = {rank: _ids(RANK_LOGS[rank]) for rank in (0, 1)}
    compilations = {rank: {cid.split("_")[0].rstrip("]") + "]" for cid in found} for rank, found in ids.items()}
    assert {rank: (len(compilations[rank]), len(ids[rank])) for rank in (0, 1)} == {0: (4, 7), 1: (5, 9)}
    groups = {tuple(g["ranks"]): g["what"] for g in fleet.divergence("compile_ids")["groups"]}
    assert groups == {(0,): "4 compilations (7 attempts: 3 restarted)", (1,): "5 compilations (9 attempts: 4 restarted)"}
    assert "7 compile ids" not in unescape(fleet.html)


def test_summary_json_of_the_directory_says_the_same(capsys):
    from ..conftest import run_cli

    assert run_cli("summary", "--json", JOB) == 0
    data = json.loads(capsys.readouterr().out)
    [divergence] = data["analysis"]["divergences"]
    assert divergence["kind"] == "compile_ids" and len(divergence["details"]) == 1
    assert divergence["details"][0].startswith("[0/1] compiled only on rank 1 (restarted as [0/1_1]): ")


def test_ranks_that_agree_are_not_said_to_have_not_crashed(tmp_path, capsys):
    # multi_rank/'s rank 0 log twice, as ranks 0 and 1: nothing differs. A log records only a native crash that run
    # or capture() caught; a rank that died of a Python exception outside a compilation left a log that just ends. So
    # the report's ending says what the logs record, not that no rank crashed.
    from ..conftest import run_cli

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in (0, 1):
        (ranks / f"dedicated_log_torch_trace_rank_{rank}.log").write_bytes((GLOO / "dedicated_log_torch_trace_rank_0.log")
                                                                           .read_bytes())
    assert run_cli(ranks, "-o", tmp_path / "out", "--no-browser") == 0
    out = capsys.readouterr().out
    assert "All ranks agree: no rank's log records a crash, and nothing compared differs between them." in out
    assert "none crashed" not in out


def _op_counts(log: Path) -> list:
    """graph_op_count of each compilation_metrics record of the log, as torch wrote it (null: no graph)."""
    with gzip.open(log, "rt", encoding="utf-8") if log.suffix == ".gz" else open(log, encoding="utf-8") as f:
        return [json.loads(line[line.index("{"):])["compilation_metrics"]["graph_op_count"]
                for line in f if '{"compilation_metrics": ' in line]


def test_no_rank_compiled_an_operator(fleet, capsys):
    # torch 2.13 breaks the graph in DDP's forward: every compile of either rank logged 0 operators, or no graph.
    assert {rank: sorted(map(str, _op_counts(RANK_LOGS[rank]))) for rank in (0, 1)} == {
        0: ["0", "0", "0", "None"], 1: ["0", "0", "0", "0", "None"]}
    assert (fleet.ranks[0]["graph_ops"], fleet.ranks[1]["graph_ops"]) == (0, 0)
    said = "No rank compiled an operator: every graph Dynamo made is empty, so the program ran eagerly"
    assert fleet.analysis["eager_ranks"] == [0, 1] and fleet.analysis["ran_eagerly"] == said
    assert f'<div class="warning-box" id="ran-eagerly">\n<h2>{said}</h2>' in fleet.html
    from ..conftest import run_cli

    assert run_cli("summary", JOB) == 0
    assert "No rank compiled an operator" in " ".join(capsys.readouterr().out.split())


def test_only_the_rank_that_compiled_nothing_is_named(tmp_path, capsys):
    # Rank 0: this job's rank 0 (no operator); rank 1: multi_rank/'s rank 1, whose step(x) compiled (x * 2).sum().
    gloo_rank_1 = GLOO / "dedicated_log_torch_trace_rank_1.log"
    assert [n for n in _op_counts(gloo_rank_1) if n] and all(n in (0, None) for n in _op_counts(RANK_LOGS[0]))
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (ranks / "dedicated_log_torch_trace_rank_0.log.gz").write_bytes(RANK_LOGS[0].read_bytes())
    (ranks / "dedicated_log_torch_trace_rank_1.log").write_bytes(gloo_rank_1.read_bytes())
    assert run_cli_json(ranks, capsys)["analysis"]["ran_eagerly"] == (
        "Rank 0 compiled no operator: every graph Dynamo made there is empty, so rank 0 ran eagerly")


def run_cli_json(directory: Path, capsys) -> dict:
    from ..conftest import run_cli

    assert run_cli("summary", "--json", directory) == 0
    return json.loads(capsys.readouterr().out)


def test_a_rank_that_made_no_graph_at_all_ran_eagerly(capsys):
    # multi_rank_no_graph/ (two_ranks_no_graph.py): rank 0 compiled only passthrough(x), no tensor operation, so Dynamo
    # made no graph (graph_op_count null, code installed, no failure); rank 1 compiled double(x), one operation. No
    # graph_op_count of rank 0 is 0: its eagerness is the single-log analysis's (empty_graphs.ran_eagerly), not a sum.
    job = REPO / "tests" / "data" / "torch213" / "multi_rank_no_graph"
    logs = {rank: job / f"dedicated_log_torch_trace_rank_{rank}.log" for rank in (0, 1)}
    assert (_op_counts(logs[0]), _op_counts(logs[1])) == ([None], [1])
    doc = run_cli_json(job, capsys)
    assert [(r["rank"], r["ran_eagerly"], r["graph_ops"]) for r in doc["ranks"]] == [(0, True, 0), (1, False, 1)]
    assert doc["analysis"]["eager_ranks"] == [0] and doc["analysis"]["ran_eagerly"] == (
        "Rank 0 compiled no operator: every graph Dynamo made there is empty, so rank 0 ran eagerly")
    from ..conftest import run_cli

    assert run_cli("summary", "--json", logs[0]) == 0  # the rank's own report says the same
    assert json.loads(capsys.readouterr().out)["empty_graphs"] == {"empty": [], "no_graph": ["[0/0]"], "ran_eagerly": True}


def _no_graph_ids(log: Path) -> list[str]:
    """The compile ids whose compilation_metrics say Dynamo installed code and made no graph (graph_op_count null,
    has_guarded_code true, no fail_type), read from the raw log."""
    with gzip.open(log, "rt", encoding="utf-8") if log.suffix == ".gz" else open(log, encoding="utf-8") as f:
        metrics = [json.loads(line[line.index("{"):])["compilation_metrics"]
                   for line in f if '{"compilation_metrics": ' in line]
    return [f"[{m['compile_id']}]" for m in metrics
            if m["graph_op_count"] is None and m["has_guarded_code"] is True and not m["fail_type"]]


def test_a_compile_that_made_no_graph_on_one_rank_is_no_compile_that_succeeded(tmp_path):
    # multi_rank_no_graph/: [0/0] is passthrough(x) on rank 0, no graph at all, and double(x), one operation, on rank 1;
    # both are status "ok" (tlparse's), yet only rank 1 runs compiled code: the ranks do not agree, and the rank table
    # counts rank 0's compile apart, as its own report does.
    job = REPO / "tests" / "data" / "torch213" / "multi_rank_no_graph"
    logs = {rank: job / f"dedicated_log_torch_trace_rank_{rank}.log" for rank in (0, 1)}
    assert (_no_graph_ids(logs[0]), _no_graph_ids(logs[1])) == (["[0/0]"], [])
    out = write_landing(job, tmp_path / "out")
    assert (out.ranks[0]["no_graph"], out.ranks[1]["no_graph"]) == (["[0/0]"], [])
    divergence = out.divergence("statuses")
    assert divergence is not None and divergence["details"] == [
        "[0/0]: rank 0: compiled with no graph at all (nothing of it runs compiled); rank 1: succeeded"]
    cells = re.findall(r'<td class="num" title="([^"]*)">(.*?)</td>', out.html)
    assert [(unescape(title), unescape(re.sub(r"<[^>]+>", "", shown))) for title, shown in cells
            if "compiled" in title] == [
        ("1 compiled, with no graph", "1 (1 with no graph)"), ("1 compiled", "1")]


def test_ddp_resume_function_with_no_graph_is_counted_apart_on_both_ranks(fleet):
    # Both ranks' [3/0] (the rest of DDP's __init__ after its graph break) logged graph_op_count null, code installed.
    assert _no_graph_ids(RANK_LOGS[0]) == _no_graph_ids(RANK_LOGS[1]) == ["[3/0]"]
    assert fleet.ranks[0]["no_graph"] == fleet.ranks[1]["no_graph"] == ["[3/0]"]
    assert fleet.divergence("statuses") is None  # alike on both: not a divergence

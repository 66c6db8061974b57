"""runtime_estimations.json and chromium_trace_with_runtime.json: Inductor's per-op estimates of every rank and
graph, and their Perfetto trace, as tlparse 0.4.3 writes them beside a multi-rank report."""

from __future__ import annotations

import json
import math
import subprocess
from collections import defaultdict

import pytest

from ..conftest import tlparse_binary
from .conftest import peer_dir, write_landing
from compilescope.analyses.divergence import MultiRankResults, analyze_ranks
from compilescope.analyses.rank_summary import RankSummary
from compilescope.analyses.runtime_estimates import graph_tid, runtime_estimations, runtime_trace
from compilescope.render.multirank import LandingInfo, landing_files

ESTIMATES = "runtime_estimations.json"
TRACE = "chromium_trace_with_runtime.json"
WITH_ESTIMATES = ["multi_rank_runtime", "collectives_parity", "graph_exec_order_tests"]


def _in_tlparse_order_free_form(estimations: list[dict], trace: list[dict]) -> tuple:
    """Both documents without the orders tlparse leaves undefined: a rank's graphs come in the order its
    directory is listed (fs::read_dir), and a rank's threads, with their sort_index, in FxHashMap order."""
    graphs = sorted(estimations, key=lambda g: (g["rank"], g["graph"]))
    ops = sorted((e for e in trace if e["ph"] == "X"), key=lambda e: (e["pid"], e["tid"], e["ts"]))
    processes = [e for e in trace if e["name"].startswith("process_")]
    threads = sorted((e["pid"], e["tid"], e["name"], e["args"].get("name")) for e in trace if e["name"].startswith("thread_"))
    return graphs, ops, processes, threads, [e["ph"] for e in trace]


def _thread_indexes(trace: list[dict]) -> dict[int, list[int]]:
    indexes = defaultdict(list)
    for e in trace:
        if e["name"] == "thread_sort_index":
            indexes[e["pid"]].append(e["args"]["sort_index"])
    return dict(indexes)


@pytest.mark.oracle
@pytest.mark.parametrize("name", WITH_ESTIMATES)
def test_runtime_files_equal_tlparse(landing, tmp_path, name):
    report = landing(name)
    subprocess.run([tlparse_binary(), str(peer_dir(name)), "--all-ranks-html", "-o", str(tmp_path / "tl"),
                    "--no-browser", "--overwrite"], check=True, capture_output=True)
    theirs = [json.loads((tmp_path / "tl" / f).read_text()) for f in (ESTIMATES, TRACE)]
    ours = [report.json(f) for f in (ESTIMATES, TRACE)]
    assert _in_tlparse_order_free_form(*ours) == _in_tlparse_order_free_form(*theirs)
    # Where tlparse's order is the hash map's, each rank's threads are still numbered 0..n-1, as ours are.
    assert _thread_indexes(ours[1]) == {pid: list(range(len(ix))) for pid, ix in _thread_indexes(theirs[1]).items()}
    # tlparse's landing page links the trace; so does ours.
    assert "chromium_trace_with_runtime.json" in (tmp_path / "tl" / "index.html").read_text()


def test_runtime_estimations_per_rank_and_graph(landing):
    report = landing("multi_rank_runtime")
    estimations = report.json(ESTIMATES)
    graphs = defaultdict(list)
    for g in estimations:
        graphs[g["rank"]].append(g["graph"])
    # Ranks ascending, each rank's graphs in compile order; rank 4 logged no estimate for [0/0] (its 3 records),
    # ranks 5 and 6 compiled [0/0] and [0/1] only (EXPECTATIONS: a distinct group).
    every = ["-_0_0_0", "-_0_1_0", "-_0_2_0", "-_0_3_0"]
    assert graphs == {0: every, 1: every, 2: every, 3: every, 4: every[1:], 5: every[:2], 6: every[:2]}
    # The estimates are the ones the runtime analysis sums per graph (a separate reading of the same records).
    for g in estimations:
        summary = report.ranks[g["rank"]]
        compile_id = "[0/" + g["graph"].split("_")[2] + "]"
        assert math.isclose(sum(op["estimated_runtime_ns"] for op in g["ops"]), summary["runtimes_ns"][compile_id])
    assert all(isinstance(op["estimated_runtime_ns"], float) and op["name"] for g in estimations for op in g["ops"])


def test_runtime_trace_lays_each_graphs_ops_end_to_end(landing):
    report = landing("multi_rank_runtime")
    estimations, trace = report.json(ESTIMATES), report.json(TRACE)
    ops = [e for e in trace if e["ph"] == "X"]
    assert len(ops) == sum(len(g["ops"]) for g in estimations)
    by_thread = defaultdict(list)
    for e in ops:
        by_thread[(e["pid"], e["args"]["graph"])].append(e)
    for g in estimations:
        events = by_thread[(g["rank"], g["graph"])]
        assert [e["name"] for e in events] == [op["name"] for op in g["ops"]]
        assert len({e["tid"] for e in events}) == 1
        ts = 0
        for e, op in zip(events, g["ops"]):
            # Microseconds rounded up, at least 1 (a wait_tensor estimated at 0 ns still shows).
            assert e["dur"] == max(1, math.ceil(op["estimated_runtime_ns"] / 1000))
            assert e["ts"] == ts and e["args"]["runtime_ns"] == int(op["estimated_runtime_ns"])
            ts += e["dur"]
    # One process per rank, named for it; one thread per graph, named for it, numbered in compile order.
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in trace if e["name"] in ("process_name", "thread_name")}
    assert [names[(r, None)] for r in range(7)] == [f"Rank {r}" for r in range(7)]
    threads = [(e["pid"], names[(e["pid"], e["tid"])], e["args"]["sort_index"]) for e in trace if e["name"] == "thread_sort_index"]
    assert [t for t in threads if t[0] == 4] == [(4, "graph -_0_1_0", 0), (4, "graph -_0_2_0", 1), (4, "graph -_0_3_0", 2)]


def test_landing_page_links_the_runtime_files(landing):
    report = landing("collectives_parity")
    for f in (ESTIMATES, TRACE):
        assert (report.out / f).is_file()
        assert f'<a href="{f}">' in report.html
    assert 'id="runtime-trace"' in report.html


def test_no_runtime_files_without_estimates(landing):
    report = landing("multi_rank_logs")
    assert not (report.out / ESTIMATES).exists() and not (report.out / TRACE).exists()
    assert TRACE not in report.html and ESTIMATES not in report.html


def test_the_files_and_their_links_follow_the_analysis():
    """The renderer writes what analyze_ranks found, and works out nothing of its own that could disagree."""
    summaries = [RankSummary(rank=0, source="rank_0.log", op_runtimes=[["-_0_0_0", [["mm", 2500.0]]]]),
                 RankSummary(rank=1, source="rank_1.log")]
    analysis = analyze_ranks(summaries)
    assert [(g["rank"], g["graph"]) for g in analysis.runtime_estimations] == [(0, "-_0_0_0")]
    assert "runtime_estimations" not in analysis.to_json()  # ranks[].op_runtimes holds them already
    files = dict(landing_files(MultiRankResults("logs", summaries, analysis), LandingInfo("logs")))
    assert json.loads(files[ESTIMATES]) == analysis.runtime_estimations and TRACE in files
    assert f'<a href="{TRACE}">' in str(files["index.html"])
    analysis.runtime_estimations = []
    files = dict(landing_files(MultiRankResults("logs", summaries, analysis), LandingInfo("logs")))
    assert ESTIMATES not in files and TRACE not in files and TRACE not in str(files["index.html"])


def test_graph_with_an_op_lacking_a_name_is_left_out(tmp_path):
    """tlparse stops the whole report on such an op; here only that graph is missing from the files."""
    src = peer_dir("collectives_parity") / "dedicated_log_torch_trace_rank_0.log"
    lines = src.read_text().splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines)
                  if '"inductor_runtime_and_tensor_meta"' in line and '"frame_compile_id": 1,' in line)
    name = next(i for i in range(header, len(lines)) if lines[i].lstrip("\t").startswith('"name": '))
    lines[name] = lines[name].split('"name": ')[0] + '"name": null,\n'
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / src.name).write_text("".join(lines))
    report = write_landing(tmp_path / "in", tmp_path / "out")
    assert [g["graph"] for g in report.json(ESTIMATES)] == ["-_0_0_0", "-_0_2_0", "-_0_3_0"]
    assert {e["args"]["graph"] for e in report.json(TRACE) if e["ph"] == "X"} == {"-_0_0_0", "-_0_2_0", "-_0_3_0"}
    # The sums the ranks are compared by cover the same graphs as the files (they kept this one, read apart).
    assert sorted(report.ranks[0]["runtimes_ns"]) == ["[0/0]", "[0/2]", "[0/3]"]


def test_graph_tid_is_tlparses():
    # The thread ids tlparse 0.4.3 gives rank 0's graphs of collectives_parity (its FxHasher over (rank, dir)).
    assert graph_tid(0, "-_0_0_0") == 2757132989
    assert graph_tid(0, "-_0_1_0") == 3096134113
    assert graph_tid(1, "-_0_3_0") == 2209893374  # multi_rank_runtime, rank 1
    assert graph_tid(0, "-_0_0_0") != graph_tid(1, "-_0_0_0")


def test_two_graphs_of_one_directory_share_its_thread_one_after_the_other():
    summary = RankSummary(rank=3, source="rank_3.log", op_runtimes=[
        ["-_0_0_0", [["fwd_mm", 2500.0], ["fwd_relu", 10.0]]],
        ["-_0_0_0", [["bwd_mm", 4000.0]]],
        ["-_1_0_0", [["other", 0.0]]],
    ])
    estimations = runtime_estimations([summary])
    assert [(g["rank"], g["graph"], len(g["ops"])) for g in estimations] == [(3, "-_0_0_0", 2), (3, "-_0_0_0", 1), (3, "-_1_0_0", 1)]
    trace = runtime_trace(estimations)
    ops = [(e["name"], e["tid"], e["ts"], e["dur"]) for e in trace if e["ph"] == "X"]
    tid, other = graph_tid(3, "-_0_0_0"), graph_tid(3, "-_1_0_0")
    assert ops == [("fwd_mm", tid, 0, 3), ("fwd_relu", tid, 3, 1), ("bwd_mm", tid, 4, 4), ("other", other, 0, 1)]
    assert [e["args"]["name"] for e in trace if e["name"] == "thread_name"] == ["graph -_0_0_0", "graph -_1_0_0"]

"""analyses.divergence and analyses.rank_summary on hand-made summaries (pure functions, no files)."""

from __future__ import annotations

import json

from compilescope.analyses.divergence import analyze_ranks, rank_list, rank_notes
from compilescope.analyses.rank_summary import (
    GraphCollectives, RankCrash, RankSummary, collective_kind, tensor_meta_fingerprint,
)
from compilescope.invisible import one_line


def summary(rank: int, **kw) -> RankSummary:
    return RankSummary(rank=rank, source=f"/logs/dedicated_log_torch_trace_rank_{rank}.log", **kw)


def test_rank_list_shortens_runs():
    assert rank_list([0, 2]) == "0, 2"
    assert rank_list([5, 6]) == "5, 6"
    assert rank_list([3, 0, 1, 2, 7, 9, 10, 11]) == "0-3, 7, 9-11"
    assert rank_list(range(1024)) == "0-1023"


def test_summary_round_trips_through_json():
    s = summary(3, compile_ids=["[0/0]"], cache_sequence=[["[0/0]", "fx_graph_cache_miss", "miss"]],
                collective_schedules=[["[0/0]", "-_0_0_0", ["a", "b"]]], runtimes_ns={"[0/0]": 1.5},
                collectives=[GraphCollectives("[0/0]", "-_0_0_0", {"all_reduce": 1}, {"all_reduce": 1}, 0)],
                execution_order=["[0/0]"],
                crashes=[RankCrash("Aborted", "Aborted in x.py:3 (call)", "[0/0]", "while running [0/0]'s compiled code",
                                   {"filename": "/x.py", "line": 3, "function": "call", "code": None})])
    assert RankSummary.from_json(json.loads(json.dumps(s.to_json()))) == s


def test_ranks_that_all_crashed_alike_agree_but_are_still_said_to_have_crashed():
    segv = RankCrash("Segmentation fault", "Segmentation fault in a.py:1 (f)")
    alike = [summary(r, compile_ids=["[0/0]"], crashes=[segv]) for r in range(3)]
    a = analyze_ranks(alike)
    assert a.divergences == [] and a.crashed_ranks == [0, 1, 2]
    elsewhere = alike[:2] + [summary(2, compile_ids=["[0/0]"], crashes=[RankCrash("Aborted", "Aborted in b.py:2 (g)")])]
    [d] = analyze_ranks(elsewhere).divergences
    assert d.kind == "crashes" and [(g.ranks, g.what) for g in d.groups] == [
        ([0, 1], "Segmentation fault in a.py:1 (f)"), ([2], "Aborted in b.py:2 (g)")]


def test_ranks_that_raised_stopped_and_a_death_in_native_code_among_them_makes_them_crashed():
    raised = RankCrash("AssertionError: expected 2", "AssertionError: expected 2 raised at a.py:1 in f", exception=True)
    segv = RankCrash("Segmentation fault", "Segmentation fault in a.py:1 (f)")
    a = analyze_ranks([summary(0, compile_ids=["[0/0]"], crashes=[raised]), summary(1, compile_ids=["[0/0]"])])
    assert (a.crashed, a.crash_words) == ("Rank 0 stopped", {0: "stopped"})
    a = analyze_ranks([summary(0, compile_ids=["[0/0]"], crashes=[raised]), summary(1, compile_ids=["[0/0]"], crashes=[segv])])
    assert (a.crashed, a.crash_words) == ("Ranks 0, 1 crashed", {0: "stopped", 1: "crashed"})
    assert analyze_ranks([summary(0), summary(1)]).crashed is None
    # Words for the page: the json says it as ranks[].crashes[].exception.
    assert "crashed" not in a.to_json() and "crash_words" not in a.to_json()


def test_collective_kind_normalises_like_tlparse():
    assert collective_kind("torch.ops._c10d_functional.all_reduce_.default") == "all_reduce"
    assert collective_kind("all_gather_into_tensor") == "all_gather"
    assert collective_kind("reduce_scatter_tensor") == "reduce_scatter"
    assert collective_kind("reduce") == "reduce"
    assert collective_kind("wait_tensor") is None


def test_tensor_meta_fingerprint_ignores_runtime_estimates():
    ops = [{"name": "mm", "estimated_runtime_ns": 1.0, "outputs": [{"shape": [2, 2], "dtype": "float16"}]}]
    slower = [{**ops[0], "estimated_runtime_ns": 9.0}]
    other_shape = [{**ops[0], "outputs": [{"shape": [4, 2], "dtype": "float16"}]}]
    assert tensor_meta_fingerprint(ops) == tensor_meta_fingerprint(slower) != tensor_meta_fingerprint(other_shape)


def test_groups_largest_first_and_no_divergence_when_all_agree():
    same = [summary(r, compile_ids=["[0/0]", "[1/0]"]) for r in range(4)]
    assert analyze_ranks(same).divergences == []
    odd = same[:3] + [summary(3, compile_ids=["[0/0]"])]
    (d,) = analyze_ranks(odd).divergences
    assert d.kind == "compile_ids"
    assert [g.ranks for g in d.groups] == [[0, 1, 2], [3]]
    assert d.details == ["[1/0] compiled only on ranks 0-2"]


def test_failed_ranks_are_listed_not_compared():
    a = analyze_ranks([summary(0, compile_ids=["[0/0]"]), summary(1, error="cannot read"), summary(2, compile_ids=["[0/0]"])])
    assert a.failed_ranks == [1] and a.divergences == []
    assert a.ranks == [0, 1, 2]


def test_runtime_fastest_slowest_and_mismatched_counts():
    a = analyze_ranks([summary(0, runtimes_ns={"[0/0]": 2e6, "[0/1]": 1e6}), summary(1, runtimes_ns={"[0/0]": 3.5e6, "[0/1]": 1e6})])
    g0, g1 = a.runtime.graphs
    assert (g0.graph, g0.fastest_rank, g0.slowest_rank, g0.delta_ms) == ("[0/0]", 0, 1, 1.5)
    assert (g1.fastest_rank, g1.slowest_rank, g1.delta_ms) == (0, 0, 0.0)  # a tie: the lowest rank
    b = analyze_ranks([summary(0, runtimes_ns={"[0/0]": 1.0}), summary(1, runtimes_ns={"[0/0]": 1.0, "[0/1]": 1.0})])
    assert b.runtime.available is False and b.runtime.graphs == []
    assert analyze_ranks([summary(0), summary(1)]).runtime is None


def test_execution_order_flags_schedule_and_cache_mismatches():
    """tlparse's own unit case: step 0 runs graphs with different collectives, step 1 graphs with different cache outcomes."""
    r0 = summary(0, execution_order=["[0/0]", "[0/1]", "[0/2]"],
                 collective_schedules=[["[0/0]", "-_0_0_0", ["all_reduce"]], ["[0/1]", "-_0_1_0", ["all_gather"]]],
                 cache_sequence=[["[0/0]", "fx_graph_cache_hit", "hit"], ["[0/1]", "fx_graph_cache_miss", "miss"]])
    r1 = summary(1, execution_order=["[0/1]", "[0/0]", "[0/2]"],
                 collective_schedules=[["[0/0]", "-_0_0_0", ["all_reduce"]], ["[0/1]", "-_0_1_0", ["broadcast"]]],
                 cache_sequence=[["[0/0]", "fx_graph_cache_hit", "hit"], ["[0/1]", "fx_graph_cache_hit", "hit"]])
    order = analyze_ranks([r0, r1]).exec_order
    assert order.order_differs
    step0, step1 = order.rows  # step 2 (both ran [0/2]) is fine, so not listed
    assert step0.by_rank == {0: "[0/0]", 1: "[0/1]"} and step0.schedule_mismatch and not step0.cache_mismatch
    assert step1.by_rank == {0: "[0/1]", 1: "[0/0]"} and step1.cache_mismatch
    assert order.schedule_mismatch_ranks == [0, 1] and order.cache_mismatch_ranks == [0, 1]
    assert analyze_ranks([r0]).exec_order is None  # one rank: nothing to compare


def test_collectives_parity_offset_and_missing_waits():
    s = summary(0, collectives=[
        GraphCollectives("[0/0]", "-_0_0_0", {"all_reduce": 1}, {"all_reduce": 1}, 1),  # fine
        GraphCollectives("[0/1]", "-_0_1_0", {"all_reduce": 1, "all_gather": 1}, {"all_reduce": 1}, 0),
    ])
    parity = analyze_ranks([s]).parity
    assert parity.graphs_checked == 2
    (row,) = parity.rows
    assert (row.graph, row.offset, row.missing_waits) == ("[0/1]", 1, 1)


def test_compile_time_skew():
    a = analyze_ranks([summary(r, compile_ids=["[0/0]"], compile_time_s=t) for r, t in ((0, 1.0), (1, 4.0), (2, 2.0))])
    ct = a.compile_time
    assert (ct.fastest_rank, ct.slowest_rank, ct.skew_s, ct.median_s, ct.left_out) == (0, 1, 3.0, 2.0, [])


def test_analysis_is_json():
    a = analyze_ranks([summary(0, compile_ids=["[0/0]"], execution_order=["[0/0]"]), summary(1, execution_order=["[0/1]"])])
    doc = json.loads(json.dumps(a.to_json()))
    assert doc["divergences"][0]["title"].startswith("Ranks compiled different")
    assert doc["exec_order"]["rows"][0]["by_rank"] == {"0": "[0/0]", "1": "[0/1]"}


def test_rank_notes_name_files_as_they_are_and_the_terminal_shows_them_on_one_line():
    # The notes go to the landing page and multi_rank_summary.json too: a terminal's escapes are the terminal's.
    ranks = [summary(0, compile_ids=["[0/0]"]), RankSummary(rank=3, source="/logs/rank_3_\nnote: fine.log", empty=True)]
    notes = rank_notes(ranks, analyze_ranks(ranks))
    assert notes == ["ranks 1-2: no log (the logs go up to rank 3): a rank that never started, or a log not copied here",
                     "rank 3: rank_3_\nnote: fine.log is empty: the rank logged nothing (no report; left out of how "
                     "the ranks differ)"]
    assert one_line(notes[1]).startswith("rank 3: rank_3_\\u000anote: fine.log is empty")
    assert one_line(notes[0]) == notes[0]


def test_a_restart_only_some_ranks_made_is_not_given_the_compilations_reason():
    # [0/1] recompiled on both ranks for the same guard; rank 1 alone restarted it ([0/1_1]): that restart is what
    # differs, and the guard that recompiled [0/1] everywhere does not say why.
    reason = {"[0/1]": "tensor 'x' size mismatch at index 0. expected 8, actual 5"}
    a = analyze_ranks([summary(0, compile_ids=["[0/0]", "[0/1]"], recompile_reasons=reason),
                       summary(1, compile_ids=["[0/0]", "[0/1]", "[0/1_1]"], recompile_reasons=reason)])
    [d] = a.divergences
    assert d.details == ["[0/1_1] compiled only on rank 1"] and d.explained_by is None

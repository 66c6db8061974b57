"""Every multi-rank fact of ../shared/traces/peer-tlparse/EXPECTATIONS.md, on the real directories."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

import pytest

from ..conftest import PEER_INPUTS, tlparse_binary
from .conftest import copy_ranks, peer_dir, write_landing


def _pids(events: list[dict]) -> Counter:
    return Counter(e.get("pid") for e in events)


# -- multi_rank_logs -------------------------------------------------------------------


def test_multi_rank_logs_every_rank_reported_and_linked(landing):
    report = landing("multi_rank_logs")
    assert sorted(report.ranks) == [0, 1, 2, 3]
    for rank in range(4):
        assert (report.out / f"rank_{rank}" / "index.html").exists()
        assert f'<a href="rank_{rank}/index.html">' in report.html
    # The landing page links only files that exist (tlparse links collectives_parity.json from pages without one).
    assert 'href="collectives_parity.json"' not in report.html


def test_multi_rank_logs_compile_id_divergence_names_groups(landing):
    report = landing("multi_rank_logs")
    # Ranks 0 and 2 compiled only [0/0]; ranks 1 and 3 compiled different, larger sets.
    assert report.groups("compile_ids") == [[0, 2], [1], [3]]
    assert report.ranks[0]["compile_ids"] == report.ranks[2]["compile_ids"] == ["[0/0]"]
    assert len(report.ranks[1]["compile_ids"]) == 15 and len(report.ranks[3]["compile_ids"]) == 7
    details = report.divergence("compile_ids")["details"]
    # Each with the guard whose failure recompiled it, as those ranks' recompile_reasons give it (the newest cache
    # entry's first): ranks 1 and 3 logged the same for [0/1].
    assert "[0/1] compiled only on ranks 1, 3: tensor 'x' size mismatch at index 0. expected 2, actual 3" in details
    assert "[0/10] compiled only on rank 1: tensor 'x' size mismatch at index 0. expected 11, actual 12" in details
    assert "Ranks compiled different sets of compile ids" in report.html
    assert "Ranks 0, 2" in report.html
    # Cache hit/miss patterns differ too: same grouping as tlparse (1 | 3 | 0, 2).
    assert sorted(report.groups("cache")) == [[0, 2], [1], [3]]


def test_multi_rank_logs_merged_chromium_events_pid_is_rank(landing):
    """EXPECTATIONS says the merged events come from ranks 0, 2 and 3 only, "rank 1 has none". In the shipped
    directory rank 1's log has 544 chromium_event records, and tlparse 0.4.3 itself merges them with pid 1:
    that statement holds only after tlparse's test_all_ranks_chromium_events_sparse has replaced rank 1 by an
    empty file (its tests mutate their inputs). That scenario is tested below; here, every rank's events, pid = rank."""
    report = landing("multi_rank_logs")
    merged = report.json("chromium_events.json")
    per_rank = {r: len(report.json(f"rank_{r}/chromium_events.json")) for r in range(4)}
    assert per_rank == {0: 6, 1: 544, 2: 6, 3: 179}
    assert _pids(merged) == Counter(per_rank)
    assert {r: s["chromium_events"] for r, s in report.ranks.items()} == per_rank


@pytest.mark.oracle
def test_multi_rank_logs_merged_events_match_tlparse(landing, tmp_path):
    report = landing("multi_rank_logs")
    subprocess.run([tlparse_binary(), str(peer_dir("multi_rank_logs")), "--all-ranks-html", "-o", str(tmp_path / "tl"),
                    "--no-browser", "--overwrite"], check=True, capture_output=True)
    theirs = json.loads((tmp_path / "tl" / "chromium_events.json").read_text())
    assert _pids(report.json("chromium_events.json")) == _pids(theirs)


def test_sparse_ranks_merged_pids_are_0_2_3(tmp_path):
    """tlparse's sparse scenario: ranks 0 and 2 have chromium events, rank 1 an empty log, rank 3 its own."""
    src = peer_dir("multi_rank_logs")
    logs = copy_ranks(PEER_INPUTS, tmp_path / "in", {
        "dedicated_log_torch_trace_rank_0.log": "chromium_events.log",
        "dedicated_log_torch_trace_rank_2.log": "chromium_events.log",
        "dedicated_log_torch_trace_rank_1.log": "",
    })
    copy_ranks(src, logs, {"dedicated_log_torch_trace_rank_3.log": "dedicated_log_torch_trace_rank_3.log"})
    report = write_landing(logs, tmp_path / "out")
    merged = report.json("chromium_events.json")
    assert set(_pids(merged)) == {0, 2, 3}
    for rank in (0, 2, 3):
        assert _pids(merged)[rank] == len(report.json(f"rank_{rank}/chromium_events.json")) > 0
    # The empty rank is a rank that logged nothing: listed and said so, but in no group of ranks that agree or
    # differ, where "Rank 1 (0 compile ids)" or "Ranks 1, 2 (no cache lookups)" would read as something it did.
    assert report.ranks[1]["empty"] and report.ranks[1]["compile_ids"] == []
    groups = {kind: report.groups(kind) for kind in ("compile_ids", "cache")}
    assert groups["compile_ids"] and all(1 not in g for kind in groups for g in groups[kind])
    assert sorted(r for g in groups["compile_ids"] for r in g) == [0, 2, 3]
    assert "left out of how the ranks differ" in report.html
    assert "rank 1: dedicated_log_torch_trace_rank_1.log is empty" in report.html


# -- multi_rank_messy_input -------------------------------------------------------------


def test_messy_input_only_rank_logs_count_and_the_rest_is_noted(landing):
    report = landing("multi_rank_messy_input")
    assert sorted(report.ranks) == [0, 1]
    assert sorted(p.name for p in report.out.iterdir() if p.name.startswith("rank_")) == ["rank_0", "rank_1"]
    html = report.html
    for name in ("another.log", "some_other_file.txt"):
        assert f"{name}: not a rank log" in html
        assert any(n.startswith(f"{name}: not a rank log") and n.endswith("ignored") for n in report.summary["notes"])
    assert "Distributed job: 2 ranks" in html
    # Two copies of the same log: nothing diverges.
    assert report.analysis["divergences"] == []
    assert "All ranks agree" in html


# -- multi_rank_schedule -----------------------------------------------------------------


def test_schedule_divergence_groups_0_2_vs_1(landing):
    report = landing("multi_rank_schedule")
    assert report.groups("collectives") == [[0, 2], [1]]
    assert "Ranks scheduled different collective operation sequences" in report.html
    assert "Ranks 0, 2" in report.html and "Rank 1 " in report.html and "Ranks: 1" not in report.html
    schedules = report.json("collective_schedules.json")
    ops = {s["rank"]: s["ops"] for s in schedules if s["graph"] == "-_0_0_0"}
    assert ops[0] == ops[2] and ops[0] != ops[1]
    assert len(ops[0]) == 6 and len(ops[1]) == 4
    assert "graph [0/0]: ranks 0, 2: 6 ops; rank 1: 4 ops" in report.divergence("collectives")["details"]


def test_schedule_identical_ranks_do_not_diverge(tmp_path):
    src = peer_dir("multi_rank_schedule")
    logs = copy_ranks(src, tmp_path / "in", {
        "dedicated_log_torch_trace_rank_0.log": "dedicated_log_torch_trace_rank_0_6u3fubwl.log",
        "dedicated_log_torch_trace_rank_2.log": "dedicated_log_torch_trace_rank_2.log",
    })
    report = write_landing(logs, tmp_path / "out")
    assert report.divergence("collectives") is None
    assert "Warning:</strong> Ranks scheduled different collective" not in report.html


# -- multi_rank_runtime ------------------------------------------------------------------


def test_runtime_not_available_when_graph_counts_differ(landing):
    report = landing("multi_rank_runtime")
    runtime = report.analysis["runtime"]
    assert runtime["available"] is False
    assert sorted(g["ranks"] for g in runtime["graph_counts"]) == [[0, 1, 2, 3], [4], [5, 6]]
    assert "Runtime analysis not available" in report.html and "ms delta" not in report.html


def test_runtime_delta_shown_per_graph(tmp_path):
    src = peer_dir("multi_rank_runtime")
    logs = copy_ranks(src, tmp_path / "in", {f"dedicated_log_torch_trace_rank_{r}.log": f"dedicated_log_torch_trace_rank_{r}.log" for r in range(4)})
    report = write_landing(logs, tmp_path / "out")
    runtime = report.analysis["runtime"]
    assert runtime["available"] is True
    by_graph = {g["graph"]: g for g in runtime["graphs"]}
    assert sorted(by_graph) == ["[0/0]", "[0/1]", "[0/2]", "[0/3]"]
    g = by_graph["[0/0]"]
    assert (g["fastest_rank"], g["fastest_ms"], g["slowest_rank"], g["slowest_ms"], g["delta_ms"]) == (0, 13.806, 3, 15.877, 2.071)
    assert "Graph runtime analysis" in report.html and "ms delta" in report.html
    assert "Runtime analysis not available" not in report.html
    assert "2.071 ms delta" in report.html


def test_tensor_meta_groups_5_6_distinct(landing):
    report = landing("multi_rank_runtime")
    groups = report.groups("tensor_meta")
    assert [5, 6] in groups
    # Runtime estimates are not tensor metadata: ranks 0-3 compiled identical graphs (tlparse, which
    # fingerprints the estimates too, puts every one of ranks 0-4 in its own group).
    assert [0, 1, 2, 3] in groups and [4] in groups
    assert "Ranks 5, 6" in report.html
    assert "Ranks exhibit divergent inductor tensor metadata" in report.html


def test_runtime_logs_with_md5_mismatches_are_still_read(landing):
    report = landing("multi_rank_runtime")
    for rank in range(4):
        summary = report.ranks[rank]
        assert summary["parse_problems"] == 4  # the md5 mismatches: read anyway
        assert len(summary["runtimes_ns"]) == 4 and len(summary["tensor_meta"]) == 4
    # Ranks 5 and 6 are named for ranks 5 and 6 but log rank 1: shown under their file's rank, with a note.
    assert report.ranks[5]["logged_rank"] == 1
    assert "named for rank 5 but its records carry rank 1" in report.html


# -- collectives_parity --------------------------------------------------------------------


def test_collectives_parity_missing_waits_3_and_1(landing):
    report = landing("collectives_parity")
    rows = {(r["rank"], r["dir_name"]): r for r in report.analysis["parity"]["rows"]}
    assert set(rows) == {(0, "-_0_1_0"), (0, "-_0_0_0")}
    assert (rows[0, "-_0_1_0"]["graph"], rows[0, "-_0_1_0"]["offset"], rows[0, "-_0_1_0"]["missing_waits"]) == ("[0/1]", 0, 3)
    assert (rows[0, "-_0_0_0"]["graph"], rows[0, "-_0_0_0"]["offset"], rows[0, "-_0_0_0"]["missing_waits"]) == ("[0/0]", 0, 1)
    assert report.analysis["parity"]["graphs_checked"] == 4
    assert 'id="parity-table"' in report.html
    per_rank = report.json("rank_0/collectives_parity.json")
    assert {(g["graph"], g["compile_id"], g["offset"], g["missing_waits"]) for g in per_rank["graphs"]} == {
        ("-_0_1_0", "[0/1]", 0, 3), ("-_0_0_0", "[0/0]", 0, 1)
    }


def _tlparse_all_ranks(name, out):
    subprocess.run([tlparse_binary(), str(peer_dir(name)), "--all-ranks-html", "-o", str(out), "--no-browser", "--overwrite"],
                   check=True, capture_output=True)


def _to_string_pretty(value) -> bytes:
    """serde_json's to_string_pretty of value, as tlparse writes its JSON files (for values without floats)."""
    return json.dumps(value, indent=2, ensure_ascii=False).encode()


def _in_our_order(theirs: list[dict], ours: list[dict], key) -> list[dict]:
    """tlparse's entries in our order: tlparse lists a rank's graphs in the order its output directory reads
    (parsers.rs, fs::read_dir: on ext4 a hash order, not the same from one file system to another); ours by compile id."""
    by_key = {key(e): e for e in theirs}
    ordered = [by_key.pop(key(e)) for e in ours]
    assert not by_key, f"only tlparse's: {list(by_key)}"
    return ordered


@pytest.mark.oracle
def test_collectives_parity_json_is_tlparse_s_bytes(landing, tmp_path):
    report = landing("collectives_parity")
    _tlparse_all_ranks("collectives_parity", tmp_path / "tl")
    ours = (report.out / "rank_0" / "collectives_parity.json").read_bytes()
    theirs = json.loads((tmp_path / "tl" / "rank_0" / "collectives_parity.json").read_text())
    theirs["graphs"] = _in_our_order(theirs["graphs"], json.loads(ours)["graphs"], lambda g: g["graph"])
    assert ours == _to_string_pretty(theirs)


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["collectives_parity", "multi_rank_schedule", "multi_rank_runtime"])
def test_collective_schedules_json_is_tlparse_s_bytes(landing, name, tmp_path):
    # Nothing reads the file back: the pages take the schedules from the ranks' summaries, with their compile ids.
    report = landing(name)
    _tlparse_all_ranks(name, tmp_path / "tl")
    ours = (report.out / "collective_schedules.json").read_bytes()
    theirs = json.loads((tmp_path / "tl" / "collective_schedules.json").read_text())
    assert ours == _to_string_pretty(_in_our_order(theirs, json.loads(ours), lambda e: (e["rank"], e["graph"])))


# -- graph_exec_order_tests ---------------------------------------------------------------


def test_execution_order_differs_with_consistent_caches(landing):
    report = landing("graph_exec_order_tests")
    order = report.analysis["exec_order"]
    assert order["ranks"] == [0, 1]
    assert order["order_differs"] is True
    assert order["cache_mismatch_ranks"] == []
    # The graphs run at the same step schedule different collectives ([0/1] differs between the ranks).
    assert order["schedule_mismatch_ranks"] == [0, 1]
    assert report.ranks[0]["execution_order"][:2] == ["[0/1]", "[0/0]"]
    assert report.ranks[1]["execution_order"][:2] == ["[0/0]", "[0/1]"]
    assert "Graph execution order differs across ranks" in report.html
    assert "Cache hit/miss sequence: Consistent across ranks" in report.html
    assert "Warning:</strong> Cache hit/miss mismatch across ranks" not in report.html
    assert report.divergence("cache") is None


def test_execution_order_unavailable_without_graph_execution(landing):
    # inductor_graph_execution ({"graph": ...}) is not an execution order: ranks 5, 6 of multi_rank_runtime log only that.
    report = landing("multi_rank_runtime")
    assert report.analysis["exec_order"] is None
    assert "Execution-order analysis unavailable" in report.html


def test_multi_rank_runtime_ranks_failing_one_identity_guard_are_one_group(landing):
    """multi_rank_runtime: [0/2] recompiled on ranks 0-4 because `fn` was another function than [0/0]'s, guard
    ___check_obj_id(fn, <id>) where the id is that function's address in each process (rank 0's log gives one
    address, ranks 1-4's another). The same guard failed on each: one reason for the five ranks, the address said as
    what it is, not a reason per address."""
    reasons = {}
    for rank in range(5):
        [log] = (PEER_INPUTS / "multi_rank_runtime").glob(f"*_rank_{rank}.log")
        reasons[rank] = {line.split('"recompile_reason": "0/0: ')[1].split(")")[0] + ")"
                         for line in log.read_text().splitlines() if '"recompile_reason": "0/0: ___check_obj_id(fn' in line}
    assert len({r for found in reasons.values() for r in found}) == 2 and all(len(r) == 1 for r in reasons.values())
    details = landing("multi_rank_runtime").divergence("compile_ids")["details"]
    assert "[0/2] compiled only on ranks 0-4: ___check_obj_id(fn, <its id in that process>)" in details
    assert not [d for d in details if "rank 0: ___check_obj_id" in d]

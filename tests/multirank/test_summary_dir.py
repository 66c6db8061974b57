"""`compilescope summary DIR` on a directory of several ranks' logs: every rank, and what differs between them.

Figures are those EXPECTATIONS.md states for tlparse's own multi-rank test directories
(multi_rank_logs: ranks 0-3 compiled different sets of compile ids; multi_rank_runtime:
7 ranks, 5 and 6 a distinct group, md5 mismatches still read).
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import re
import shutil

from rich.console import Console

from compilescope.cli.multirank import summarize_ranks
from compilescope.render.terminal import RankSummariesRenderer

from ..gpu_variants import RESIDUAL_SKIP, log_text, max_autotune_log, with_cudagraph_skip, with_other_winner
from ..conftest import cuda211, run_cli, torch213
from ..insights.test_summary_cli import _documented_keys, _paths
from .conftest import copy_ranks, peer_dir

RANK = "dedicated_log_torch_trace_rank_{}.log"


def summary_json(capsys, *args) -> dict:
    assert run_cli("summary", "--json", *map(str, args)) == 0
    return json.loads(capsys.readouterr().out)


def terminal(directory, width: int = 100) -> str:
    console = Console(width=width, color_system=None, record=True, file=io.StringIO())
    console.print(RankSummariesRenderer.from_results(summarize_ranks(str(directory), 1)).render())
    out = console.file.getvalue()
    assert "\x1b[" not in out
    assert max(len(line) for line in out.splitlines()) <= width
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


def test_the_rank_table_keeps_every_column_at_80_columns(tmp_path):
    # 80 is the width of piped output and CI logs: the last column (parse problems) was cut to "pars" and blank.
    cut = tmp_path / "cut"
    shutil.copytree(peer_dir("multi_rank_logs"), cut)
    rank_1 = next(cut.glob("*rank_1*"))
    rank_1.write_bytes(rank_1.read_bytes()[:1_800_000])
    text = terminal(cut, width=80)
    assert re.search(r"^rank\s+ids\s+breaks\s+failures\s+recompiles\s+hit/miss\s+time\s+problems$", text, re.M)
    assert row(text, "0", "1", "0", "1", "0", "0/0", "163 ms", "0")
    assert re.search(r"^1\s.*\s2 cut$", text, re.M)  # the cut rank's mark, whole


def row(text: str, *cells: str) -> bool:
    """A table row with exactly these cells (any spacing)."""
    return re.search(r"^" + r"\s+".join(map(re.escape, cells)) + r"$", text, re.M) is not None


# -- --json ---------------------------------------------------------------------------------------------


def test_json_multi_rank_logs_every_rank_and_the_compile_id_divergence(capsys):
    directory = peer_dir("multi_rank_logs")
    doc = summary_json(capsys, directory, "-j", "1")
    assert list(doc) == ["schema_version", "source", "ranks", "analysis", "notes"]
    assert doc["schema_version"] == 2 and doc["source"] == str(directory)
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert list(ranks) == [0, 1, 2, 3]
    assert {r: len(s["compile_ids"]) for r, s in ranks.items()} == {0: 1, 1: 15, 2: 1, 3: 7}
    assert all(s["error"] is None and not s["empty"] for s in ranks.values())
    assert (ranks[1]["recompiles"], ranks[1]["cache_hits"], ranks[1]["cache_misses"]) == (14, 20, 10)
    assert ranks[0]["failures"] == ranks[2]["failures"] == 1
    divergences = {d["kind"]: d for d in doc["analysis"]["divergences"]}
    assert [g["ranks"] for g in divergences["compile_ids"]["groups"]] == [[0, 2], [1], [3]]
    assert divergences["compile_ids"]["title"] == "Ranks compiled different sets of compile ids"
    assert divergences["compile_ids"]["details"][0].startswith("[0/1] compiled only on ranks 1, 3: ")
    assert divergences["compile_ids"]["explained_by"] == 1
    assert doc["analysis"]["failed_ranks"] == [] and doc["notes"] == []


def test_json_multi_rank_runtime_seven_ranks_5_and_6_apart(capsys):
    doc = summary_json(capsys, peer_dir("multi_rank_runtime"), "-j", "2")  # worker processes too
    assert [r["rank"] for r in doc["ranks"]] == list(range(7))
    # md5 mismatches are parse problems, yet every rank is read.
    assert all(r["error"] is None for r in doc["ranks"])
    assert [r["parse_problems"] for r in doc["ranks"]] == [4, 4, 4, 4, 3, 0, 0]
    assert [len(r["compile_ids"]) for r in doc["ranks"]] == [4, 4, 4, 4, 4, 2, 2]
    divergences = {d["kind"]: [g["ranks"] for g in d["groups"]] for d in doc["analysis"]["divergences"]}
    assert set(divergences) == {"environment", "compile_ids", "cache", "collectives", "tensor_meta"}
    # (ranks 5 and 6 ran another torch build: their fx_graph_runnable headers say 2.9.0a0+gitd1950d4, not +git2249284)
    assert divergences["environment"] == divergences["compile_ids"] == [[0, 1, 2, 3, 4], [5, 6]]
    assert [5, 6] in divergences["tensor_meta"]
    # The logs of ranks 5 and 6 carry rank 1 in their records: said so.
    assert [r["logged_rank"] for r in doc["ranks"]][5:] == [1, 1]
    assert any("rank 5:" in n and "carry rank 1" in n for n in doc["notes"])


def test_every_multi_rank_key_is_documented(capsys):
    documented = _documented_keys()
    data_keyed = ("statuses", "recompile_reasons", "compile_times_s", "graph_collectives", "runtimes_ns", "tensor_meta", "scheduled", "in_code", "by_rank")
    paths = set()
    for name in ("multi_rank_logs", "multi_rank_runtime", "graph_exec_order_tests"):
        paths |= set(_paths(summary_json(capsys, peer_dir(name), "-j", "1")))
    # Keys under objects keyed by data (compile ids, graphs, collective kinds, ranks) are documented as such.
    paths = {p for p in paths if not any(f".{k}." in p for k in data_keyed)}
    assert {"analysis.exec_order.rows[].by_rank", "analysis.runtime.graphs[].delta_ms"} <= paths
    missing = sorted(paths - documented)
    assert missing == [], f"document these keys in docs/summary-schema.md: {missing}"


# -- the terminal ---------------------------------------------------------------------------------------


def test_terminal_one_row_per_rank_then_divergences():
    text = terminal(peer_dir("multi_rank_logs"))
    assert text.startswith("compilescope summary · multi_rank_logs · 4 ranks")
    assert row(text, "rank", "compile ids", "graph breaks", "failures", "recompiles", "cache hit/miss", "compile time",
               "parse problems")
    # Compile times as `summary` of each rank's log alone states them (a failed compile took time too):
    # test_rank_compile_time.py compares every rank of every directory.
    assert row(text, "0", "1", "0", "1", "0", "0/0", "163 ms", "0")
    assert row(text, "1", "15", "0", "0", "14", "20/10", "4.59 s", "0")
    assert row(text, "3", "7", "0", "0", "6", "14/0", "10.53 s", "0")
    assert "Between ranks (3 divergences)" in text
    # Ranks 0 and 2 failed the compile that ranks 1 and 3 compiled (row: 1 failure each).
    assert "DIFFERS  The same compile ended differently on different ranks" in text
    assert "├── ranks 0, 2: [0/0] failed\n├── ranks 1, 3: [0/0] succeeded" in text
    assert "DIFFERS  Ranks compiled different sets of compile ids" in text
    # Their logs' compile ids: [0/0]; [0/0]-[0/14]; [0/0]-[0/6], none restarted (attempt 0 each).
    assert "├── ranks 0, 2: 1 compilation\n├── rank 1: 15 compilations\n├── rank 3: 7 compilations" in text
    assert "DIFFERS  Ranks had different cache hit/miss sequences" in text
    assert "… 11 more in --json" in text  # 14 compile ids differ; 3 are shown
    assert "agree" not in text


def test_terminal_runtime_ranks_shortened_and_misnamed_logs_noted():
    text = terminal(peer_dir("multi_rank_runtime"))
    assert "7 ranks" in text.splitlines()[0]
    assert "ranks 0-4: 4 compilations" in text and "ranks 5, 6: 2 compilations" in text
    assert "DIFFERS  Ranks compiled graphs with different tensor metadata (shapes, strides, dtypes)" in text
    assert "note: rank 5: dedicated_log_torch_trace_rank_5.log is named for rank 5 but its records carry rank" in text


def test_terminal_execution_order(capsys):
    text = terminal(peer_dir("graph_exec_order_tests"))
    assert "DIFFERS  Ranks executed graphs in a different order (ranks 0, 1)" in text


def test_identical_ranks_agree(tmp_path, capsys):
    src = peer_dir("multi_rank_logs")
    directory = copy_ranks(src, tmp_path / "same", {
        "dedicated_log_torch_trace_rank_0_a.log": RANK.format(0),
        "dedicated_log_torch_trace_rank_1_a.log": RANK.format(0),
    })
    text = terminal(directory)
    assert "Between ranks (0 divergences)" in text
    assert "The ranks agree: ranks 0, 1 compiled the same compile ids" in text
    assert summary_json(capsys, directory, "-j", "1")["analysis"]["divergences"] == []


def test_unreadable_and_empty_ranks_say_so(tmp_path, capsys):
    directory = copy_ranks(peer_dir("multi_rank_logs"), tmp_path / "broken", {
        "dedicated_log_torch_trace_rank_0_a.log": RANK.format(0),
        "dedicated_log_torch_trace_rank_1_a.log": RANK.format(2),
        "dedicated_log_torch_trace_rank_2_a.log": "",  # the rank logged nothing
    })
    (directory / "dedicated_log_torch_trace_rank_3_a.log.gz").write_bytes(b"not gzip at all")
    text = terminal(directory)
    assert row(text, "2", "empty log", *["-"] * 6)
    assert row(text, "3", "not read", *["-"] * 6)
    assert "rank 3 could not be read: left out of the comparison." in text
    assert "note: rank 2: dedicated_log_torch_trace_rank_2_a.log is empty" in text
    assert "note: rank 3: not read:" in text
    doc = summary_json(capsys, directory, "-j", "1")
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert ranks[2]["empty"] and ranks[2]["error"] is None
    assert ranks[3]["error"] and "not a TORCH_TRACE log" in ranks[3]["error"]
    assert doc["analysis"]["failed_ranks"] == [3]


# -- the CLI: several ranks by default, one log with --latest -------------------------------------------


def test_cli_terminal_summarises_every_rank(capsys):
    assert run_cli("summary", peer_dir("multi_rank_logs"), "-j", "1") == 0
    out = capsys.readouterr().out
    assert "compilescope summary · multi_rank_logs · 4 ranks" in out
    assert "Ranks compiled different sets of compile ids" in out
    assert all(len(line) <= 100 for line in out.splitlines())


def test_latest_reads_one_log_as_before(tmp_path, capsys):
    directory = copy_ranks(peer_dir("multi_rank_logs"), tmp_path / "ranks", {
        "dedicated_log_torch_trace_rank_0_a.log": RANK.format(0),
        "dedicated_log_torch_trace_rank_1_a.log": RANK.format(1),
    })
    newest = directory / "dedicated_log_torch_trace_rank_1_a.log"
    older = directory / "dedicated_log_torch_trace_rank_0_a.log"
    os.utime(older, (1_000_000, 1_000_000))
    doc = summary_json(capsys, directory, "--latest")
    assert "ranks" not in doc
    assert list(doc)[:3] == ["schema_version", "source", "compiles"]
    assert doc["source"].endswith(newest.name) and doc["compiles"] == 15
    assert run_cli("summary", directory, "--latest") == 0
    captured = capsys.readouterr()
    assert f"compilescope summary · {newest.name} · 15 compile ids" in captured.out
    assert "ranks" not in captured.out.splitlines()[0]
    assert "(--latest)" in captured.err


def test_one_rank_file_stays_one_log(capsys):
    doc = summary_json(capsys, peer_dir("multi_rank_logs") / RANK.format(3))
    assert "ranks" not in doc and doc["compiles"] == 7


def test_directory_of_one_rank_stays_one_log(tmp_path, capsys):
    directory = tmp_path / "one"
    directory.mkdir()
    shutil.copyfile(peer_dir("multi_rank_logs") / RANK.format(1), directory / "dedicated_log_torch_trace_rank_1_a.log")
    assert "ranks" not in summary_json(capsys, directory)


def _three_ranks(tmp_path, variant, log=None):
    """Ranks 0 and 2: a real GPU log (the max-autotune one unless another is given); rank 1: variant(log)
    (tests/gpu_variants.py)."""
    log = log or max_autotune_log()
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in (0, 2):
        (ranks / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_text(log_text(log), encoding="utf-8")
    variant(log, ranks / "dedicated_log_torch_trace_rank_1_x.log")
    return ranks


def test_ranks_whose_max_autotune_chose_different_kernels(tmp_path, capsys):
    """Three ranks of the real H100 max-autotune run, rank 1's first addmm search won by another candidate: one
    divergence, naming the search and the config keys that tell the winners apart."""
    doc = summary_json(capsys, _three_ranks(tmp_path, with_other_winner), "-j", "1")
    assert doc["ranks"][0]["autotune_winners"][0][:3] == ["[0/0]", "addmm", "256x2048, 256x512, 512x2048"]
    [divergence] = doc["analysis"]["divergences"]
    assert divergence["kind"] == "autotune"
    assert [(g["ranks"], g["what"]) for g in divergence["groups"]] == [
        ([0, 2], "[0/0] addmm 256x2048, 256x512, 512x2048: BLOCK_K=64, BLOCK_M=128"),
        ([1], "[0/0] addmm 256x2048, 256x512, 512x2048: BLOCK_K=32, BLOCK_M=64")]
    assert divergence["details"] == ["[0/0] addmm 256x2048, 256x512, 512x2048 (torch.float16, torch.float16, torch.float16): "
                                     "ranks 0, 2: BLOCK_K=64, BLOCK_M=128; rank 1: BLOCK_K=32, BLOCK_M=64"]


def test_ranks_that_ran_a_compile_without_cuda_graphs(tmp_path, capsys):
    """Three ranks of the real H200 reduce-overhead run (residual [0/0] recorded, accumulate [1/0] never), rank 1's
    [0/0] skipped by CUDA graphs (an input mutated): rank 1 is slower at every step, and one divergence says so."""
    skip = functools.partial(with_cudagraph_skip, compile_id="0/0", reason=RESIDUAL_SKIP)
    doc = summary_json(capsys, _three_ranks(tmp_path, skip, cuda211("cudagraph_skips.log.gz")), "-j", "1")
    never = ["[1/0]", "never recorded (set up at its first call; the log does not say why)"]
    assert [r["cudagraph_skips"] for r in doc["ranks"]] == [
        [never], [["[0/0]", "skipping cudagraphs due to mutated inputs (1 instances)"], never], [never]]
    [divergence] = doc["analysis"]["divergences"]
    assert divergence["kind"] == "cudagraphs"
    assert [(g["ranks"], g["what"]) for g in divergence["groups"]] == [
        ([0, 2], f"[1/0] skipped: {never[1]}"),
        ([1], f"[0/0] skipped: skipping cudagraphs due to mutated inputs (1 instances); [1/0] skipped: {never[1]}")]
    assert divergence["details"] == ["[0/0] run without CUDA graphs only on rank 1"]



def test_ranks_on_which_torch_printed_other_warnings(capsys):
    """tests/data/torch213/multi_rank_warnings: a real 2-rank gloo job started by `compilescope run -- torchrun`
    (programs/two_ranks_warnings.py); rank 1 gave torch.cond a Python bool, and only its torch warned."""
    runs = torch213("x").parents[1] / "multi_rank_warnings"
    doc = summary_json(capsys, runs, "-j", "1")
    assert [r["warnings"] for r in doc["ranks"]] == [[], ["torch.cond kept one branch only"]]
    [divergence] = doc["analysis"]["divergences"]
    assert divergence["kind"] == "warnings"
    assert [(g["ranks"], g["what"]) for g in divergence["groups"]] == [
        ([0], "no warning"), ([1], "torch.cond kept one branch only")]
    assert divergence["details"] == ["only on rank 1: torch.cond kept one branch only"]
    assert "DIFFERS  torch printed different warnings on different ranks" in terminal(runs)


def test_ranks_whose_logs_do_not_record_warnings_are_not_compared(capsys):
    """The plain 2-rank job (make_multi_rank.py without --warnings): its logs cannot say what torch printed."""
    doc = summary_json(capsys, torch213("x").parents[1] / "multi_rank", "-j", "1")
    assert [r["warnings"] for r in doc["ranks"]] == [None, None]
    assert "warnings" not in [d["kind"] for d in doc["analysis"]["divergences"]]


def test_a_restarted_attempts_cache_miss_is_counted_apart_as_in_the_ranks_report(tmp_path, capsys):
    """compiled_optimizer.log (an H100) on two ranks: [2/1]'s attempt 0 missed the AOTAutograd cache, then Dynamo
    restarted it (TensorifyScalarRestartAnalysis) and attempt 1 ([2/1_1]) looked the graph up again. Its report counts
    that miss apart (caches.restarted_misses): the rank table and the cross-rank cache sequence do too, not 13 misses."""
    log = cuda211("compiled_optimizer.log.gz")
    envelope = re.compile(r'\{"artifact": \{"name": "(\w+_cache_(hit|miss|bypass))".*?"frame_id": (\d+), '
                          r'"frame_compile_id": (\d+), "attempt": (\d+)')
    lookups = [(f"[{m[3]}/{m[4]}{'_' + m[5] if m[5] != '0' else ''}]", m[1], m[2])
               for m in map(envelope.search, gzip.open(log, "rt")) if m]
    assert len(lookups) == 13 and {state for *_, state in lookups} == {"miss"}
    # The attempts a later attempt of the same compile id followed: Dynamo restarted them.
    restarted = {cid for cid, *_ in lookups if any(other.startswith(cid[:-1] + "_") for other, *_ in lookups)}
    assert restarted == {"[2/1]"} and ("[2/1]", "aotautograd_cache_miss", "miss") in lookups
    kept = [list(lookup) for lookup in lookups if lookup[0] not in restarted]
    directory = tmp_path / "ranks"
    directory.mkdir()
    for rank in (0, 1):
        shutil.copyfile(log, directory / f"dedicated_log_torch_trace_rank_{rank}.log.gz")
    doc = summary_json(capsys, directory, "-j", "1")
    assert [(r["cache_hits"], r["cache_misses"], r["cache_sequence"]) for r in doc["ranks"]] == [(0, 12, kept)] * 2
    assert doc["analysis"]["divergences"] == []
    assert summary_json(capsys, log)["caches"]["restarted_misses"] == {"[2/1]": "[2/1_1]"}
    assert re.search(r"^\s*0\s.*\s0/12\s", terminal(directory), re.M)

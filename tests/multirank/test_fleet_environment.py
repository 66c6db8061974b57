"""Ranks that ran on different GPUs or versions, on the real 2-rank DDP job of the H100
(tests/data/cuda_torch211/logs/ddp_uneven_batch/), with rank 1's log changed in one fact, as a job whose nodes were not
all alike would log it: its first fx_graph_runnable names an A100 (payload md5 recomputed)."""

from __future__ import annotations

import gzip
import json

from ..conftest import cuda211, run_cli
from ..gpu_variants import with_payload_changed

H100_LINE, A100_LINE = "# NVIDIA H100 80GB HBM3 : 1", "# NVIDIA A100-SXM4-80GB : 1"


def _fleet(tmp_path, change_rank_1=True):
    fleet = tmp_path / "fleet"
    fleet.mkdir(parents=True)
    for log in cuda211("ddp_uneven_batch").glob("*.log.gz"):
        (fleet / log.name[:-3]).write_bytes(gzip.decompress(log.read_bytes()))
    if change_rank_1:
        [rank1] = fleet.glob("*rank_1_*.log")
        changed = with_payload_changed(rank1, tmp_path / "rank1.log", lambda line: H100_LINE in line,
                                       lambda p: p.replace(H100_LINE, A100_LINE, 1))
        changed.replace(rank1)
    return fleet


def test_a_rank_on_another_gpu_is_the_first_divergence(tmp_path, capsys):
    assert run_cli("summary", "--json", _fleet(tmp_path), "-j", "1") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["ran_on"]["GPU"] for r in doc["ranks"]] == ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"]
    assert doc["ranks"][1]["ran_on"]["torch"] == doc["ranks"][0]["ran_on"]["torch"] == "2.11.0+cu130"
    first = doc["analysis"]["divergences"][0]
    assert (first["kind"], first["title"]) == ("environment", "Ranks ran different versions or GPUs")
    assert [(g["ranks"], g["what"]) for g in first["groups"]] == [
        ([0], "GPU NVIDIA H100 80GB HBM3"), ([1], "GPU NVIDIA A100-SXM4-80GB")]
    # The terminal says it first, before what it may have caused.
    assert run_cli("summary", _fleet(tmp_path / "again"), "-j", "1") == 0
    out = capsys.readouterr().out
    assert out.index("DIFFERS  Ranks ran different versions or GPUs") < out.index("DIFFERS  Ranks compiled different")
    assert "└── rank 1: GPU NVIDIA A100-SXM4-80GB\n" in out


def test_alike_ranks_do_not_differ(tmp_path, capsys):
    assert run_cli("summary", "--json", _fleet(tmp_path, change_rank_1=False), "-j", "1") == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["ran_on"]["GPU"] for r in doc["ranks"]} == {"NVIDIA H100 80GB HBM3"}
    assert "environment" not in [d["kind"] for d in doc["analysis"]["divergences"]]


def test_two_real_runs_on_two_gpus_as_ranks(tmp_path, capsys):
    # The same program recorded on an H200 and on an H100 (tests/data/cuda_torch211/logs/train_break_recompile*.log.gz),
    # as the ranks of a job whose nodes differ. Each recompiles twice: [0/1] of forward (a restarted attempt [0/1_1]
    # after it, no recompile of its own) and [1/1] of its resume function.
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for rank, name in enumerate(("train_break_recompile.log.gz", "train_break_recompile_h100.log.gz")):
        (fleet / f"dedicated_log_torch_trace_rank_{rank}.log").write_bytes(gzip.decompress(cuda211(name).read_bytes()))
    assert run_cli("summary", "--json", fleet / "dedicated_log_torch_trace_rank_0.log") == 0
    own = json.loads(capsys.readouterr().out)["recompiles"]
    assert own["total"] == 2 and sorted(f["chain"][-1] for f in own["frames"]) == ["[0/1_1]", "[1/1]"]
    assert run_cli("summary", "--json", fleet, "-j", "1") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["recompiles"] for r in doc["ranks"]] == [2, 2]
    [environment] = [d for d in doc["analysis"]["divergences"] if d["kind"] == "environment"]
    assert [(g["ranks"], g["what"]) for g in environment["groups"]] == [
        ([0], "GPU NVIDIA H200"), ([1], "GPU NVIDIA H100 80GB HBM3")]

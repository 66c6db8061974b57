"""A real 2-rank DistributedDataParallel job on an H100 (torch 2.11), recorded by `compilescope run -- torchrun`.

tests/data/cuda_torch211/logs/ddp_uneven_batch/, from programs/ddp_uneven_batch.py there: DDP (buckets of 1 MB) around
`torch.compile(model)`, so DDPOptimizer splits each compilation into submod_0..submod_2; rank 1's last batch is 20,
not 32, so rank 1 alone compiles [0/1]. What each test expects was read in the raw logs (zcat | grep).
"""

from __future__ import annotations

import gzip
import re
from html import unescape

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.analyses.divergence import RankInDetail
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.cli.multirank import summarize_ranks
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, run_cli
from ..htmltable import table_rows
from .conftest import Landing, write_landing

JOB = cuda211("ddp_uneven_batch")
RANK_LOGS = {0: JOB / "dedicated_log_torch_trace_rank_0_csazzvkb.log.gz",
             1: JOB / "dedicated_log_torch_trace_rank_1_pgu40ul3.log.gz"}
SUBMODULES = ["submod_0", "submod_1", "submod_2"]  # one optimize_ddp_split_child record each, per compilation


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Landing:
    return write_landing(JOB, tmp_path_factory.mktemp("ddp") / "out")


def _row(page: str, name: str) -> str:
    """The text of the compile summary's row headed `name` (a row with no header continues the one above)."""
    return next((" ".join(cells[1:]) for cells in table_rows(page) if cells[0] == name), "")


def _recompile_reasons(log) -> list[str]:
    """The payload lines of the log's recompile_reasons artifacts, as torch wrote them ("0/0: tensor 'args[0]' ...")."""
    reasons, in_reasons = [], False
    with gzip.open(log, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.startswith("\t"):
                in_reasons = '"name": "recompile_reasons"' in line
            elif in_reasons:
                reasons.append(line.strip())
    return reasons


# Rank 1's one recompile reason: the guard of [0/0] that its batch of 20 failed (rank 0 logged none).
[RANK_1_REASON] = [reason.split(": ", 1)[1] for reason in _recompile_reasons(RANK_LOGS[1])]


def test_rank_1_alone_recompiles_for_its_smaller_last_batch(fleet):
    assert sorted(fleet.ranks) == [0, 1]
    assert fleet.ranks[0]["compile_ids"] == ["[0/0]"]
    assert fleet.ranks[1]["compile_ids"] == ["[0/0]", "[0/1]"]
    assert _recompile_reasons(RANK_LOGS[0]) == []
    assert RANK_1_REASON == "tensor 'args[0]' size mismatch at index 0. expected 32, actual 20"
    assert (fleet.ranks[0]["recompile_reasons"], fleet.ranks[1]["recompile_reasons"]) == ({}, {"[0/1]": RANK_1_REASON})
    # The divergence says why rank 1 has [0/1], and that rank 1's log says it in full.
    divergence = fleet.divergence("compile_ids")
    assert divergence["details"] == [f"[0/1] compiled only on rank 1: {RANK_1_REASON}"]
    assert divergence["explained_by"] == 1
    assert f"[0/1] compiled only on rank 1: {RANK_1_REASON}" in unescape(fleet.html)
    # torch's own words for the failed guard, as rank 1's recompile_reason logs it, and where the tensor came from:
    # [0/0] first used it in torch's Linear.forward (its TENSOR_MATCH guard on L['args'][0]) inside DDP's `inner`,
    # torch's frame too, so the user's line that called that frame, as [0/1]'s dynamo_start stack ends (the program's
    # line 27, named by its file: the recording machine's path is in its title)
    page = (fleet.out / "rank_1" / "-_0_1_0" / "index.html").read_text()
    assert _row(page, "recompiled because") == (
        "tensor size changed: tensor 'args[0]' size mismatch at index 0. expected 32, actual 20 (guard of [0/0]) "
        "args[0] passed in by the call at ddp_uneven_batch.py:27 in main"
        "loss = step(x).pow(2).mean()")
    assert "recompiled because" not in (fleet.out / "rank_0" / "-_0_0_0" / "index.html").read_text()


def test_the_ranks_cache_lookups_differ(fleet):
    # Rank 0: 3 AOTAutograd bypasses, 6 FX graph misses (3 forward, 3 backward). Rank 1 shares the fresh cache and
    # hits 3 of rank 0's FX graphs in [0/0], then misses all 6 of [0/1].
    groups = {tuple(g["ranks"]): g["what"] for g in fleet.divergence("cache")["groups"]}
    assert groups[(0,)].startswith("3 bypasses, 6 misses: ")
    assert groups[(1,)].startswith("6 bypasses, 9 misses, 3 hits: ")
    assert "(3 bypasses, 6 misses: " in fleet.html


@pytest.mark.parametrize("rank, compile_id", [(0, "[0/0]"), (1, "[0/0]"), (1, "[0/1]")])
def test_each_compile_says_ddp_optimizer_split_it_into_three_subgraphs(rank, compile_id):
    with read_trace(str(RANK_LOGS[rank])) as trace, analyze(trace) as results:
        [split] = results.compiles[compile_id].ddp_splits
        entry = next(e for e in trace.compiles.values() if e.key == compile_id)
        kinds = {a.number: (a.kind, a.name) for a in entry.artifacts}
        assert results.compiles[compile_id].to_json()["ddp_splits"] == [{"count": 3, "subgraphs": SUBMODULES}]
    assert [name for name, _ in split.subgraphs] == SUBMODULES
    assert [kinds[number] for _, number in split.subgraphs] == [
        ("optimize_ddp_split_child", f"optimize_ddp_split_child_{name}") for name in SUBMODULES]
    assert kinds[split.graph] == ("optimize_ddp_split_graph", "optimize_ddp_split_graph")


def test_the_compile_pages_explain_the_split_and_link_its_graphs(fleet):
    for rank, directory in ((0, "-_0_0_0"), (1, "-_0_0_0"), (1, "-_0_1_0")):
        folder = fleet.out / f"rank_{rank}" / directory
        page = (folder / "index.html").read_text()
        row = _row(page, "DDP split")
        assert row.startswith("DDPOptimizer split this graph at DistributedDataParallel's gradient buckets into "
                              "3 subgraphs (submod_0, submod_1, submod_2; the split graph), each compiled on its own "
                              "by AOTAutograd and Inductor"), row
        assert "bucket_cap_mb sets where the splits fall" in row and "optimize_ddp = False compiles one graph" in row
        cell = re.search(r'<td class="ddp-split">(.*?)</td>', page, re.S).group(1)
        links = dict((unescape(text), href) for href, text in re.findall(r'<a [^>]*href="([^"]+)">([^<]+)</a>', cell))
        assert list(links) == [*SUBMODULES, "the split graph"]
        split_graph = (folder / links.pop("the split graph")).read_text()
        for name, href in links.items():  # each submodule's graph, as the split graph holds it
            assert href.startswith(f"../{directory}/optimize_ddp_split_child_{name}_")
            assert (folder / href).read_text().startswith("class GraphModule(torch.nn.Module)")
            assert f"class {name}(torch.nn.Module)" in split_graph


def test_a_compile_without_ddp_has_no_split():
    with read_trace(str(cuda211("train_break_recompile.log.gz"))) as trace, analyze(trace) as results:
        assert results.compiles and all(s.ddp_splits == [] for s in results.compiles.values())


@pytest.mark.parametrize("rank, kernels", [(0, 8), (1, 15)])
def test_the_kernels_lines_are_ddps_forward_not_the_program(rank, kernels):
    """The frame Dynamo compiled is torch's `inner` (the compiled nn.Sequential, run by DDP), so the stack torch
    logged for every kernel ends in DDP's forward (torch/nn/parallel/distributed.py:1699), never in the program:
    where the program called it (line 27) is on the compile page, as the frame's caller."""
    with read_trace(str(RANK_LOGS[rank])) as trace:
        prov = analyze_provenance(trace)
        with analyze(trace) as results:
            called_from = results.compiles["[0/0]"].called_from
    triton = [k for c in prov.compiles.values() for s in c.sections for k in s.kernels if k.kernel.startswith("triton_")]
    assert len(triton) == kernels
    for k in triton:
        lines = {(f.file.rsplit("/", 1)[-1], f.line) for frames in k.frames for f in frames}
        assert lines == {("distributed.py", 1699)}, (k.name, lines)
    assert (called_from.filename.rsplit("/", 1)[-1], called_from.line) == ("ddp_uneven_batch.py", 27)


def test_the_terminal_says_why_rank_1_alone_compiled_and_names_its_log_as_typed(capsys, monkeypatch):
    # `summary DIR` typed as a relative path: the command it ends with names rank 1's log under that path, as the
    # user would type it (the results hold absolute paths).
    monkeypatch.chdir(JOB.parent)
    monkeypatch.setenv("COLUMNS", "100")
    assert run_cli("summary", JOB.name) == 0
    out = capsys.readouterr().out
    assert f"[0/1] compiled only on rank 1: {RANK_1_REASON}" in " ".join(out.split())
    assert out.rstrip().splitlines()[-2:] == ["Rank 1 in detail (why it compiled what other ranks did not):",
                                              f"compilescope summary {JOB.name}/{RANK_LOGS[1].name}"]


def test_the_rank_to_read_in_detail_is_the_analysis_s_and_its_log_is_named_under_the_directory_as_typed():
    # Rank 1 alone compiled [0/1] (its last batch of 20): its log says why. Named under the directory as typed
    # (relative, or with a trailing slash), and as read where nothing was typed.
    results = summarize_ranks(str(JOB), 1)
    assert results.rank_in_detail(None) == RankInDetail(1, str(RANK_LOGS[1]))
    assert results.rank_in_detail(JOB.name).log == f"{JOB.name}/{RANK_LOGS[1].name}"
    assert results.rank_in_detail(f"./{JOB.name}/").log == f"./{JOB.name}/{RANK_LOGS[1].name}"

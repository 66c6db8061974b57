"""A compile id only some ranks compiled is said to risk a hang only where its graphs call a collective: a rank that
runs one waits for ranks that never will. Where they call none, the report says why that cannot hang. What each test
expects is read from the raw logs (_graphs: each compile id's dynamo_output_graph, as torch wrote it)."""

from __future__ import annotations

import gzip
import json
import re
from html import unescape
from pathlib import Path

from ..conftest import REPO, run_cli
from .conftest import peer_dir, write_landing

TORCH213 = REPO / "tests" / "data" / "torch213"
HANG = "This may lead to hangs or timeouts during distributed execution"
_CONTEXT = re.compile(r'"frame_id": (\d+), "frame_compile_id": (\d+), "attempt": (\d+)')


def _graphs(log: Path) -> dict[str, str]:
    """compile id ("[0/1]", "[0/1_1]") -> its dynamo_output_graph payload."""
    graphs: dict[str, str] = {}
    key = None
    with gzip.open(log, "rt", encoding="utf-8") if log.suffix == ".gz" else open(log, encoding="utf-8") as f:
        for line in f:
            if line.startswith("\t"):
                if key is not None:
                    graphs[key] = graphs.get(key, "") + line
                continue
            m = _CONTEXT.search(line) if '{"dynamo_output_graph"' in line else None
            key = f"[{m[1]}/{m[2]}{'_' + m[3] if m[3] != '0' else ''}]" if m else None
    return graphs


def _compile_ids(directory: Path, capsys) -> dict:
    assert run_cli("summary", "--json", directory) == 0
    doc = json.loads(capsys.readouterr().out)
    return next(d for d in doc["analysis"]["divergences"] if d["kind"] == "compile_ids")


def test_ddp_graphs_that_differ_hold_no_operator(tmp_path, capsys):
    # torch.compile(DDP(mlp)): rank 1 alone compiled [0/1] and its restart [0/1_1]; neither rank logged a graph at all
    # (every graph empty: compilation_metrics graph_op_count 0, test_ddp_cpu_job.py), so no collective either.
    job = TORCH213 / "multi_rank_ddp"
    assert [_graphs(job / f"dedicated_log_torch_trace_rank_{rank}.log.gz") for rank in (0, 1)] == [{}, {}]
    divergence = _compile_ids(job, capsys)
    assert divergence["consequence"] == ("No hang from this: the compile ids that differ compiled no operator "
                                         "(restarted attempts, empty graphs), so no collective of theirs keeps another "
                                         "rank waiting.")
    html = unescape(write_landing(job, tmp_path / "out").html)
    assert HANG not in html and divergence["consequence"] in html


def test_graphs_that_differ_without_a_collective_cannot_hang(capsys):
    # two_ranks_gloo.py: rank 1 alone recompiles step(x), (x * 2).sum(); dist.all_reduce is outside the compiled code.
    graphs = _graphs(TORCH213 / "multi_rank" / "dedicated_log_torch_trace_rank_1.log")
    assert "[0/1]" in graphs and "c10d" not in graphs["[0/1]"] and "sum" in graphs["[0/1]"]
    divergence = _compile_ids(TORCH213 / "multi_rank", capsys)
    assert divergence["consequence"].startswith("No hang from this: the graphs that differ call no collective")


def test_graphs_that_differ_with_collectives_may_hang(capsys):
    # multi_rank_runtime: ranks 0-4 compiled [0/2] and [0/3], ranks 5 and 6 did not; their graphs call c10d collectives.
    directory = peer_dir("multi_rank_runtime")
    graphs = _graphs(directory / "dedicated_log_torch_trace_rank_0.log")
    kinds = {cid: sorted(set(re.findall(r"_c10d_functional\.(all_reduce|all_gather|reduce_scatter)", graphs[cid])))
             for cid in ("[0/2]", "[0/3]")}
    assert kinds == {"[0/2]": ["all_gather", "all_reduce", "reduce_scatter"],
                     "[0/3]": ["all_gather", "all_reduce", "reduce_scatter"]}
    assert "[0/2]" not in _graphs(directory / "dedicated_log_torch_trace_rank_5.log")
    divergence = _compile_ids(directory, capsys)
    assert divergence["consequence"] == (f"{HANG}: [0/2], [0/3] call collectives (all_gather, all_reduce, "
                                         "reduce_scatter) that only some ranks compiled, and a rank that runs one "
                                         "waits for the ranks that never will.")

"""What the provenance page calls each graph: the compile id and the graph's kind (`[0/0_1] backward`), not torch's AOT
ID (`0_backward`, which numbers the graphs AOTAutograd compiled in the whole run); the AOT ID stays in the tooltip.

Expected values come from the raw logs (helpers.raw_graphs): each output code's `# AOT ID:` line and its record's
compile id."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from ..conftest import cuda211, report, run_cli
from .helpers import raw_graphs

DDP = "ddp_uneven_batch"

_TAB = re.compile(r'<button type="button" role="tab" data-section="\d+" aria-selected="(?:true|false)"'
                  r'''(?: title="torch's name for it \(AOT ID\): ([^"]*)")?>([^<]*)</button>''')
_HEADER = re.compile(r'''<p class="prov-meta"><strong class="prov-graph"(?: title="torch's name for it \(AOT ID\): ([^"]*)")?>'''
                     r"([^<]*)</strong>")


def _pages(out: Path) -> dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]], str]]:
    """compile id (the page's h1) -> its tabs and section headers, each (AOT ID in the tooltip, text), and the page."""
    found = {}
    for page in (out / "provenance").glob("*.html"):
        text = page.read_text()
        cid = unescape(re.search(r'<h1>Provenance <a [^>]*class="mono">([^<]*)</a>', text)[1])
        found[cid] = ([(unescape(a), unescape(t)) for a, t in _TAB.findall(text)],
                      [(unescape(a), unescape(t)) for a, t in _HEADER.findall(text)], text)
    return found


def _by_compile(log: Path) -> dict[str, list[str]]:
    """compile id -> the AOT IDs of its output codes, in log order (the raw log's)."""
    found: dict[str, list[str]] = {}
    for aot_id, graph in raw_graphs(log).items():
        found.setdefault(graph.compile_id, []).append(aot_id)
    return found


def test_a_compile_ids_forward_and_backward_are_named_by_the_compile_id_and_kind(tmp_path):
    """train_break_recompile: each compile id compiled one forward and one backward ([0/0_1]: 0_forward, 0_backward;
    [1/0]: 1_forward, 1_backward, ...); the tabs said `0_forward`, and [1/0]'s `1_forward` read as if it were frame 1's."""
    log = cuda211("train_break_recompile.log.gz")
    raw = _by_compile(log)
    assert raw["[0/0_1]"] == ["0_forward", "0_backward"] and raw["[1/0]"] == ["1_forward", "1_backward"]
    out = tmp_path / "out"
    report(log, out)
    pages = _pages(out)
    assert set(pages) == set(raw)
    for cid, aot_ids in raw.items():
        tabs, headers, _ = pages[cid]
        expected = [(a, f"{cid} {a.split('_', 1)[1]}") for a in aot_ids]
        assert tabs == headers == expected, cid
    assert pages["[0/0_1]"][0] == [("0_forward", "[0/0_1] forward"), ("0_backward", "[0/0_1] backward")]
    assert 'id="prov-several"' not in pages["[1/0]"][2]


def test_ddps_several_graphs_of_a_kind_are_numbered_a_forward_as_its_backward(tmp_path):
    """ddp_uneven_batch: DDPOptimizer split each compile into submod_0..2, each compiled on its own: rank 0's [0/0]
    logs 0_forward, 1_forward, 2_forward, then the backwards in reverse; rank 1's [0/1] (a recompile served partly
    from rank 0's FX graphs) logs each forward with its backward. Six tabs reading `[0/0] forward` thrice could not be
    told apart: each is numbered by its AOT graph's place in the compile, so forward 3 and backward 3 are 2_*."""
    logs = sorted(cuda211(DDP).glob("*.log.gz"))
    raw = [_by_compile(log) for log in logs]
    assert raw[0] == {"[0/0]": ["0_forward", "1_forward", "2_forward", "2_backward", "1_backward", "0_backward"]}
    assert raw[1]["[0/1]"] == ["3_forward", "3_backward", "4_forward", "4_backward", "5_forward", "5_backward"]
    out = tmp_path / "out"
    assert run_cli(str(cuda211(DDP)), "-o", str(out), "--no-browser") == 0
    for rank, by_compile in enumerate(raw):
        pages = _pages(out / f"rank_{rank}")
        assert set(pages) == set(by_compile)
        for cid, aot_ids in by_compile.items():
            numbers = list(dict.fromkeys(a.split("_", 1)[0] for a in aot_ids))  # AOT graphs, as first logged
            expected = [(a, f"{cid} {a.split('_', 1)[1]} {numbers.index(a.split('_', 1)[0]) + 1}") for a in aot_ids]
            tabs, headers, text = pages[cid]
            assert tabs == headers == expected, (rank, cid)
            assert len({label for _, label in tabs}) == len(tabs)
            assert f"{cid} compiled several graphs of a kind" in unescape(text)
    tabs = _pages(out / "rank_0")["[0/0]"][0]
    assert [label for _, label in tabs] == ["[0/0] forward 1", "[0/0] forward 2", "[0/0] forward 3",
                                            "[0/0] backward 3", "[0/0] backward 2", "[0/0] backward 1"]

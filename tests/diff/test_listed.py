"""What a diff's views list of a compile-time change's compiles is the analysis's to decide, and each view says how
many it left out: the page listed 5 and the terminal 3 of the 10 the analysis kept, and the JSON those 10, all
silently.

The compiles are counted from each log's own frames: the pairs below compile different programs, so no frame
matches and every compile of either side is one row.
"""

from __future__ import annotations

import io
import json
import re

from rich.console import Console

from compilescope.analyses.diff.analysis import diff_report
from compilescope.render.diff import print_diff
from compilescope.wording import count

from ..conftest import run_cli, torch213
from .helpers import facts, log

PAGE, TERMINAL = 5, 3  # what the page and the terminal listed, silently


def _compiles(*names: str) -> int:
    """Every compile of those runs, none matched with another's (asserted)."""
    a, b = (facts(n) for n in names)
    assert not set(a.frames) & set(b.frames)
    return sum(len(f.compile_ids) for run in (a, b) for f in run.frames.values())


def test_the_terminal_lists_the_first_compiles_and_says_how_many_more():
    """diff_break against cache_cold: 4 compiles and 1 make 5 rows, beyond the 3 the terminal lists."""
    report = diff_report("a", "b", {None: facts("break")}, {None: facts("cold")})
    [(_, d)] = report.ranks
    [change] = [c for c in d.changes if c.section == "compile_time"]
    rows = change.detail["compiles"]
    assert len(rows) == _compiles("break", "cold") == 5
    console = Console(width=200, color_system=None, record=True, file=io.StringIO())
    print_diff(report, console)
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    listed = [line for line in lines if re.match(r" {6}\[[^]]+\]: ", line)]
    assert [line.strip() for line in listed] == [r["text"] for r in rows[:TERMINAL]]
    assert lines[lines.index(listed[-1]) + 1:][:1] == [f"      … and {count(len(rows) - TERMINAL, 'more compile')}"]


def test_the_page_and_the_json_list_the_first_compiles_and_say_how_many_more(tmp_path, capsys):
    """many_graphs (12 compiles) against cache_cold (1), every compile-time difference a change: 13 compiles, beyond
    the 10 the JSON keeps and the 5 the page lists."""
    out = tmp_path / "d"
    assert run_cli("diff", log("cold"), torch213("many_graphs.log.gz"), "-o", out, "--no-browser",
                   "--time-threshold", "0", "--time-ratio", "1") == 1
    capsys.readouterr()
    doc = json.loads((out / "diff.json").read_text())
    [change] = [c for c in doc["ranks"][0]["changes"] if c["section"] == "compile_time"]
    kept, left = change["detail"]["compiles"], change["detail"]["compiles_more"]
    assert len(kept) == 10 and len(kept) + left == 1 + 12
    page = (out / "index.html").read_text()
    [(listed, after)] = re.findall(r'<ul class="diff-detail">\n((?:<li>\[[^<]*</li>)+)</ul>(.*?)</div>', page, re.S)
    assert re.findall(r"<li>([^<]*)</li>", listed) == [r["text"] for r in kept[:PAGE]]
    assert re.sub(r"<[^>]+>", "", after).strip() == f"… and {count(len(kept) + left - PAGE, 'more compile')}"


def test_a_side_of_unreadable_ranks_says_the_first_and_how_many_more(tmp_path, capsys):
    """Five empty rank logs (ranks that wrote nothing): the one-line error named three of them, silently."""
    ranks = tmp_path / "b"
    ranks.mkdir()
    for rank in range(5):
        (ranks / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_bytes(b"")
    assert run_cli("diff", log("base"), ranks) == 2
    err = capsys.readouterr().err
    assert err == (f"compilescope: error: {ranks}: no rank log could be read (rank 0: the log is empty; rank 1: the log "
                   "is empty; rank 2: the log is empty and 2 more)\n")

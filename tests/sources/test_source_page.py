"""The source page says what happened to a line in the user's terms, and its links land where they say.

Expected lines come from the programs that made the logs (tests/data/torch213/programs, the cuda_torch211 and
gpu-torch211 scripts); expected link targets are found on the pages linked to, not taken from the link.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from ..conftest import REPO, cuda211, report, skip_or_fail, torch213

GPT2 = REPO.parent / "shared" / "traces" / "gpu-torch211" / "gpt2_train"


def source_page(log: Path, out: Path, name: str) -> str:
    report(log, out)
    (page,) = (out / "sources").glob(f"{name}_*.html")
    return page.read_text()


def row(text: str, n: int) -> str:
    """Line n's row, to the end of its notes."""
    return re.search(rf'<div class="src-line[^"]*" id="L{n}".*?</ul></div>', text, re.S)[0]


def plain(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def ids(text: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', text))


@pytest.mark.parametrize("where", ["provenance", "gpt2_train"])
def test_a_kernel_links_to_its_call_on_the_provenance_page(where, tmp_path):
    """Each kernel a line made links to the row of the provenance page's generated code that calls it: the row's
    id exists there, and its text names the kernel (the call torch's wrapper makes)."""
    if where == "provenance":
        out, name = tmp_path / "out", "provenance.py"
        text = source_page(torch213("provenance.log"), out, name)
    else:
        if not GPT2.is_dir():
            skip_or_fail("../shared/traces/gpu-torch211 not available")
        out, name = tmp_path / "out", "modeling_gpt2.py"
        text = source_page(next(GPT2.glob("*.log")), out, name)
    links = re.findall(r'<li class="n-kernel">kernel <a class="mono" href="\.\./([^"#]+)(?:#([^"]*))?">([^<]+)</a>', text)
    assert links
    pages: dict[str, str] = {}
    landed = 0
    for url, fragment, kernel in links:
        if not fragment:
            continue
        target = pages.get(url) or pages.setdefault(url, (out / url).read_text())
        m = re.search(rf'<div class="pl[^"]*" id="{re.escape(fragment)}"[^>]*>(.*?)</div>', target)
        assert m, (url, fragment)
        # the kernel's name without its debug handle (":1") is what the wrapper calls on that line
        assert html.unescape(kernel).rsplit(":", 1)[0] in plain(m[1]), (fragment, kernel)
        landed += 1
    # a kernel without a call line in the generated code keeps the page's top: few of them
    assert landed >= 0.9 * len(links)
    if where == "provenance":
        assert landed == len(links)


def test_graph_breaks_of_the_file_are_listed_by_line_with_links_to_the_lines_that_ran_eagerly(tmp_path):
    """graph_breaks.py breaks at lines 23 (branch), 18 (the print in log_step) and 28 (.item()); the print ran eagerly
    at its calls, lines 27 and 30: the list reads by line, and each line it names is a link to that line's row."""
    text = source_page(torch213("graph_breaks.log"), tmp_path / "out", "graph_breaks.py")
    listed = re.search(r'<ul id="src-breaks">(.*?)</ul>', text, re.S)[1]
    items = re.findall(r"<li>(.*?)</li>", listed, re.S)
    assert [int(re.match(r'<a href="#L(\d+)">', i)[1]) for i in items] == [18, 23, 28]
    (printed,) = [i for i in items if "Failed to trace builtin operator" in i]
    eager = re.findall(r'<a href="#(L\d+)">graph_breaks\.py:(\d+)</a>', printed)
    assert sorted(int(n) for _, n in eager) == [18, 27, 30]
    page_ids = ids(text)
    assert all(anchor == f"L{n}" and anchor in page_ids for anchor, n in eager)


def test_a_line_whose_guard_failed_says_it_recompiled(tmp_path):
    """train_break_recompile.py's forward recompiled as [0/1] for batch 48: line 21's size guard of [0/0] failed.
    The badge says so in those words, and keeps the failed guard in its tooltip and the line's notes."""
    text = source_page(cuda211("train_break_recompile.log.gz"), tmp_path / "out", "train_break_recompile.py")
    line = row(text, 21)
    (badge,) = re.findall(r'<span class="b b-guard" title="([^"]*)">([^<]*)</span>', line)
    assert html.unescape(badge[1]) == "recompiled [0/1]"
    assert "size mismatch at index 0. expected 32, actual 48" in html.unescape(badge[0])
    assert "failed guard" not in plain(line)
    notes = plain(re.search(r'<li class="n-guard">.*?</li>', line)[0])
    assert notes.startswith("recompiled as [0/1]") and "expected 32, actual 48" in notes


def test_dimension_marking_guards_fold_into_one_entry(tmp_path):
    """graph_breaks.py line 29 (z = y * s) made [3/0] install a tensor check of y, its ___stack0 value, and five
    checks that no dimension of y was marked dynamic: those five are one entry, their list one click away."""
    line = row(source_page(torch213("graph_breaks.log"), tmp_path / "out", "graph_breaks.py"), 29)
    installed = re.search(r'<li class="n-installed">.*</li>', line, re.S)[0]
    assert plain(installed).startswith("2 guards of [3/0] come from this line (and 5 dimension-marking checks)")
    # the guards themselves at the top of the list; the marking checks only under their entry
    top = re.sub(r'<li class="n-marking">.*?</details></li>', "", installed, flags=re.S)
    assert "DIMENSION_DYNAMIC_MARKING_GUARD:" not in top
    assert "TENSOR_MATCH" in top and "EQUALS_MATCH" in top
    (folded,) = re.findall(r'<li class="n-marking">.*?</details></li>', installed, re.S)
    assert plain(folded).count("DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['y']") == 5

"""Every relative link of a report lands on a file of the report, on real logs whose compiles include one without a
compile id (torch.export's records, Inductor's files written outside any compile)."""

from __future__ import annotations

import re

import pytest

from ..conftest import peer, report, torch213

_HREF = re.compile(r'href="([^"#:?]+)(?:#[^"]*)?"')


@pytest.mark.parametrize("log", [torch213("export.log"), torch213("graph_breaks.log"), peer("export_guard_added.log"),
                                 peer("simple.log")], ids=lambda p: p.name)
def test_every_relative_link_lands_on_a_file(log, tmp_path):
    out = tmp_path / "out"
    report(log, out)
    pages = list(out.rglob("*.html"))
    assert len(pages) > 3
    broken = [(str(page.relative_to(out)), href) for page in pages for href in _HREF.findall(page.read_text())
              if not (page.parent / href).exists()]
    assert broken == []


def test_a_line_links_title_says_where_it_goes(tmp_path):
    """A link to a line of code says in its title the file, then what the page it opens shows of the line: its source
    page, what torch.compile did to it; a file torch dumped (compiled autograd's `<eval_with_key>.5`, in the log's
    dump_file records), its source as dumped. The second said only the path."""
    import gzip
    from html import unescape

    log = torch213("compiled_autograd.log.gz")
    dumped = set(re.findall(r'"dump_file": \{"name": "([^"]+)"', gzip.open(log, "rt").read()))
    assert dumped == {"<eval_with_key>.5", "<eval_with_key>.16"}
    out = tmp_path / "out"
    report(log, out)
    titles = {(href.split("/", 1)[0], unescape(title)) for page in out.rglob("*.html") for href, title in re.findall(
        r'<a [^>]*href="(?:\.\./)?((?:dump_file|sources)/[^"#]+)#L?\w*" title="([^"]*)"', page.read_text())}
    assert {t for d, t in titles if d == "dump_file"} == {
        f"{name}: this line of its source as torch dumped it into the log" for name in dumped}
    program = "/work/main/tests/data/torch213/programs/compiled_autograd.py"
    assert {t for d, t in titles if d == "sources"} == {f"{program}: what torch.compile did to this line"}

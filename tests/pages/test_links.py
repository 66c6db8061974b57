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

"""Every relative link of a report lands on a file of the report, on real logs whose compiles include one without a
compile id (torch.export's records, Inductor's files written outside any compile)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import unquote

import pytest

from ..conftest import peer, report, torch213

_HREF = re.compile(r'href="([^"]*)"')
_ID = re.compile(r'\bid="([^"]*)"')


def _links(page: Path) -> list[tuple[str, str]]:
    """(path, fragment) of each relative link of a page (a path "" is the page itself)."""
    found = []
    for href in _HREF.findall(page.read_text()):
        href = unescape(href)
        if re.match(r"^[a-z]+:|//", href):
            continue  # another site, a data: or javascript: URL
        path, _, fragment = href.partition("#")
        found.append((unquote(path.partition("?")[0]), fragment))
    return found


@pytest.mark.parametrize("log", [torch213("export.log"), torch213("graph_breaks.log"), peer("export_guard_added.log"),
                                 peer("simple.log"), peer("inductor_provenance_aot_log.txt")], ids=lambda p: p.name)
def test_every_relative_link_lands_on_a_file_and_its_fragment_on_an_element(log, tmp_path):
    # peer inductor_provenance_aot_log.txt's index linked #insights-dynamic_shapes, which no element had.
    out = tmp_path / "out"
    report(log, out)
    pages = list(out.rglob("*.html"))
    assert len(pages) > 3
    ids: dict[Path, set[str]] = {}
    broken = []
    for page in pages:
        for path, fragment in _links(page):
            target = (page.parent / path).resolve() if path else page.resolve()
            if not target.exists():
                broken.append((str(page.relative_to(out)), path))
            elif fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(_ID.findall(target.read_text()))
                if unescape(fragment) not in ids[target]:
                    broken.append((str(page.relative_to(out)), f"{path}#{fragment}"))
    assert broken == []


@pytest.mark.parametrize("origin,name,flags", [
    ("peer", "inductor_provenance_jit_log.txt", ()), ("peer", "inductor_provenance_jit_log.txt", ("-i",)),
    ("peer", "comp_metrics.log", ("-i",)), ("peer", "export.log", ("-i",)), ("peer", "export.log", ("--export",)),
    ("peer", "inductor_provenance_aot_log.txt", ("-i",)), ("torch213", "cache_warm.log", ("-i",)),
    ("torch213", "graph_breaks.log", ()), ("torch213", "export_draft.log", ("--export",))])
def test_every_page_written_is_reached_by_links_from_the_index(origin, name, flags, tmp_path):
    # With -i, tlparse's index links every provenance_tracking page; ours wrote a page for every compile directory
    # (an empty one where there is nothing to map) but linked only those that map something. Under --export the
    # guard pages (symbolic_guard_information_N.html) are linked from the export index's rows, as tlparse's are.
    log = peer(name) if origin == "peer" else torch213(name)
    out = tmp_path / "out"
    report(log, out, *flags)
    reached = set()
    work = [(out / "index.html").resolve()]
    while work:
        page = work.pop()
        if page in reached:
            continue
        reached.add(page)
        work += [target for path, _ in _links(page) if path and (target := (page.parent / path).resolve()).suffix == ".html"
                 and target.exists()]
    unreached = sorted(str(p.relative_to(out)) for p in out.resolve().rglob("*.html") if p not in reached)
    assert unreached == []


def test_a_line_links_title_says_where_it_goes(tmp_path):
    """A link to a line of code says in its title the file, then what the page it opens shows of the line: its source
    page, what torch.compile did to it; a file torch dumped (compiled autograd's `<eval_with_key>.5`, in the log's
    dump_file records), its source as dumped. The second said only the path."""
    import gzip

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

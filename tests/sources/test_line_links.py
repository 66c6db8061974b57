"""Every link to a line of a source page lands on an element of that page, from every page of a whole report.

A page rebuilt from the log shows only the lines the log quotes; the others are folded into gap rows. Links
still point at such lines (a function's lines on its transformed-code page, a failure the log names without a
graph), so each must land on the gap that holds it, or on the line itself.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

import pytest

from ..conftest import GPU_TRACES, report, run_cli, skip_or_fail, torch213

_HREF = re.compile(r'href="([^"]*)"')
_ID = re.compile(r'\bid="([^"]*)"')
# A gap row: one element, named by its first line, then the lines it says it stands for.
_GAP = re.compile(r'<div class="src-gap" id="L(\d+)">⋯ lines? (\d+)(?:–(\d+))?: not quoted in the log')
# A link whose text is the line it stands for (the transformed-code page's line numbers).
_NUMBERED = re.compile(r'<a class="ln" href="([^"]*)">(\d+)</a>')
_ROW_TEXT = re.compile(r'<div class="src-line[^"]*" id="L(\d+)"[^>]*><a class="ln"[^>]*>\d+</a><a class="lt"[^>]*>(.*?)</a>')


def line_links(root: Path) -> list[tuple[Path, Path, int]]:
    """(linking page, source page, line) of every `#L<n>` link into sources/ on every page under root."""
    found = []
    for page in sorted(root.rglob("*.html")):
        for href in _HREF.findall(page.read_text(encoding="utf-8")):
            path, _, fragment = html.unescape(href).partition("#")
            target = (page.parent / path).resolve() if path else page.resolve()
            if target.parent.name == "sources" and re.fullmatch(r"L\d+", fragment):
                found.append((page, target, int(fragment[1:])))
    return found


def kind(root: Path, page: Path) -> str:
    """What a linking page is: index, sources, transformed_code, or an artifact page (provenance)."""
    rel = page.relative_to(root)
    if rel.parent.name == "sources":
        return "sources"
    return rel.stem if rel.name in ("index.html", "transformed_code.html") else "artifact"


def assert_every_line_link_lands(root: Path) -> Counter:
    """Every `#L<n>` link into sources/ hits an id of its page; a line in a gap hits the gap that names it.
    Returns how many links each kind of page made, and how many landed in a gap."""
    ids: dict[Path, set[str]] = {}
    gaps: dict[Path, dict[int, tuple[int, int]]] = {}
    made = Counter()
    for page, target, line in line_links(root):
        if target not in ids:
            text = target.read_text(encoding="utf-8")
            ids[target] = set(_ID.findall(text))
            gaps[target] = {}
            for anchor, first, last in _GAP.findall(text):
                assert anchor == first, (target.name, anchor, first)
                gaps[target][int(first)] = (int(first), int(last or first))
        assert f"L{line}" in ids[target], (str(page.relative_to(root)), target.name, line)
        made[kind(root, page)] += 1
        if line in gaps[target]:
            made["in a gap"] += 1
    # A numbered link to a line in a gap lands on the gap that names that line.
    for page in sorted(root.rglob("transformed_code.html")):
        for href, number in _NUMBERED.findall(page.read_text(encoding="utf-8")):
            path, _, fragment = html.unescape(href).partition("#")
            target = (page.parent / path).resolve()
            line, landed = int(number), int(fragment[1:])
            if landed in gaps.get(target, {}):
                first, last = gaps[target][landed]
                assert first <= line <= last, (target.name, line, first, last)
            else:
                assert landed == line, (target.name, line, landed)
    return made


@pytest.mark.parametrize("name, kinds", [
    ("empty_graph.log", {"transformed_code", "sources", "index"}),
    ("source_view.log", {"transformed_code", "sources", "index"}),
    ("graph_breaks.log", {"transformed_code", "sources", "index"}),
    ("provenance.log", {"sources", "artifact"}),
])
def test_every_source_line_link_lands(name, kinds, tmp_path):
    out = tmp_path / "out"
    report(torch213(name), out)
    made = assert_every_line_link_lands(out)
    assert kinds <= set(made), made


def test_diff_report_line_links_land(tmp_path):
    out = tmp_path / "diff"
    logs = Path(torch213("diff_base.log.gz"))
    # (exit status 1: the runs differ, a graph break was added)
    assert run_cli("diff", logs, logs.with_name("diff_break.log.gz"), "-o", out, "--overwrite", "--no-browser") == 1
    made = assert_every_line_link_lands(out)
    assert made["transformed_code"] > 0, made


def test_failure_link_lands_on_the_failing_line(tmp_path):
    """flex_sdpa_model's fullgraph function fails in Dynamo on a line no graph captured: its link on the index
    lands on that line, shown with its code, though the other notes of the file end before it."""
    folder = GPU_TRACES / "flex_sdpa_model"
    if not folder.is_dir():
        skip_or_fail("../shared/traces/gpu-torch211 not available")
    script = (folder / "script.py").read_text().splitlines()
    (failing,) = [n for n, text in enumerate(script, 1) if "random.choice(" in text]
    out = tmp_path / "out"
    report(next(folder.glob("*.log")), out)
    assert_every_line_link_lands(out)
    links = [(target, line) for page, target, line in line_links(out) if page.name == "index.html"]
    (target,) = {t for t, line in links if line == failing}
    rows = dict(_ROW_TEXT.findall(target.read_text(encoding="utf-8")))
    assert html.unescape(rows[str(failing)]).strip() == script[failing - 1].strip()

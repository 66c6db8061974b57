"""The Insights section in headless Chromium: charts are drawn (non-empty SVG), offline, without errors."""

from __future__ import annotations

import pytest

from ..browser import browser_page
from ..conftest import report, torch213

pytestmark = pytest.mark.browser


def _drawn_rects(page, selector: str) -> list[float]:
    """Widths in pixels of the coloured bars in a chart (the grey track excluded)."""
    return page.eval_on_selector_all(
        f"{selector} svg rect:not(.track)", "els => els.map(e => e.getBoundingClientRect().width)")


@pytest.mark.parametrize("log, rows", [("cache_cold.log", ["[0/0]"]),
                                       ("graph_breaks.log", ["[0/0]", "[1/0]", "[2/0]", "[3/0]", "[4/0]"])])
def test_charts_render_offline(tmp_path, log, rows):
    out = tmp_path / "out"
    report(torch213(log), out)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        assert page.locator("#insights h2").inner_text() == "Insights"
        timeline = _drawn_rects(page, "#timeline-chart")
        breakdown = _drawn_rects(page, "#breakdown-chart")
        assert timeline and max(timeline) > 100, timeline  # the longest compile spans most of the width
        assert breakdown and max(breakdown) > 100, breakdown
        labels = page.eval_on_selector_all("#timeline-chart td.lbl a", "els => els.map(e => e.textContent)")
        assert labels == rows
        # Every bar has a tooltip saying phase and time.
        assert page.locator("#timeline-chart rect:not(.track) title").count() == len(timeline)
        assert page.console_errors == []
        assert page.external_requests == []


def test_findings_link_to_their_section(tmp_path):
    out = tmp_path / "out"
    report(torch213("recompiles.log"), out)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        first = page.locator("#insights-findings li").first
        assert "ERROR" in first.inner_text() and "recompile limit" in first.inner_text()
        first.locator("a").click()
        assert page.url.endswith("#insights-recompiles")
        assert page.locator(".recompile-frame").first.locator(".limit").is_visible()
        assert page.locator(".recompile-frame").nth(1).locator("tbody tr").count() == 3
        assert page.console_errors == []
        assert page.external_requests == []

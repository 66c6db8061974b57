"""The landing page in a real browser: no console errors, no network, rank links work."""

from __future__ import annotations

import pytest

from ..browser import browser_page

pytestmark = pytest.mark.browser


def test_landing_page_renders_offline_and_links_ranks(landing):
    report = landing("multi_rank_schedule")
    with browser_page() as page:
        page.goto((report.out / "index.html").as_uri())
        assert page.locator("#divergence h3").count() == 1
        assert page.locator("svg.skew rect.bar").count() == 3
        page.click("#rank-table >> text=Rank 2")
        assert page.url.endswith("rank_2/index.html")
        assert page.locator("h1").first.inner_text() == "Compilation report"
        assert page.console_errors == [] and page.external_requests == []

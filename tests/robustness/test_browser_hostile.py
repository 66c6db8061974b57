"""The report of a hostile log, opened in headless Chromium: no script from the log runs, nothing is fetched.

The log (corpus.hostile_log) puts <script>, <img onerror>, </script><!-- and
javascript: URLs in payloads, artifact names, stack frames (file names through the
`str` table, frame names, `loc`), metrics (fail_reason, restart_reasons, co_name),
link urls, guards and dump_file names. Each would set window.__pwned if it ran.
"""

from __future__ import annotations

import pytest

from ..browser import browser_page
from ..conftest import run_cli
from .corpus import hostile_log

pytestmark = pytest.mark.browser

# Clicks every link that stays on the page or has a scheme other than http(s): a javascript:
# href that slipped through would run here. Links to other report files are visited by goto.
CLICK_SUSPECT_LINKS = """() => {
  let n = 0;
  for (const a of document.querySelectorAll("a")) {
    const href = (a.getAttribute("href") || "").trim();
    if (/^https?:/i.test(href)) continue;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href === "" || href.startsWith("#")) { a.click(); n++; }
  }
  for (const el of document.querySelectorAll("span[title], summary, td, pre, code")) {
    el.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
  }
  return n;
}"""


def test_hostile_log_report_runs_no_script_and_fetches_nothing(tmp_path):
    log = hostile_log(tmp_path)
    out = tmp_path / "out"
    assert run_cli(log, "-o", out, "--no-browser") == 0
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 10

    with browser_page() as page:
        dialogs: list[str] = []
        requests: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: requests.append(r.url))
        clicked = 0
        for path in pages:
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            assert page.evaluate("typeof window.__pwned") == "undefined", f"script ran on {path}"
            clicked += page.evaluate(CLICK_SUSPECT_LINKS)
            page.wait_for_timeout(10)
            assert page.evaluate("typeof window.__pwned") == "undefined", f"script ran on {path} after clicks"
            hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
            assert not [h for h in hrefs if h.strip().lower().startswith(("javascript:", "data:", "vbscript:"))], path
        # The page really is the hostile one: its strings are there, as text.
        page.goto((out / "index.html").as_uri())
        assert "window.__pwned" in page.inner_text("body")
        page.goto((out / "-_0_0_0" / "index.html").as_uri())
        assert "javascript:window.__pwned='link'" in page.inner_text("body")
        assert page.locator("a[href='https://example.com/?q=<script>']").count() == 1
        # report.js still runs (allowed by its hash): the filter box works.
        page.goto((out / "index.html").as_uri())
        page.fill("input[data-filter=problems]", "no such problem text")
        assert page.eval_on_selector_all("#problems tbody tr", "rs => rs.every(r => r.style.display === 'none')")

        assert dialogs == []
        assert page.external_requests == []
        assert all(url.startswith(out.as_uri()) for url in requests), [u for u in requests if not u.startswith(out.as_uri())]
        assert page.console_errors == [], page.console_errors  # also: no CSP violation was reported
        assert clicked > 0

"""The report in a real browser: it opens offline, without errors, and its links lead somewhere."""

import pytest

from .browser import browser_page
from .conftest import peer, report, shared, torch213

pytestmark = pytest.mark.browser


def test_click_through_index_compile_artifact(tmp_path):
    out = tmp_path / "out"
    report(peer("simple.log"), out)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        assert page.title().startswith("compilescope")
        page.click("a.cid >> text=[0/0]")
        page.wait_for_load_state()
        assert page.url.endswith("-_0_0_0/index.html")
        assert "Compile [0/0]" in page.inner_text("h1")
        page.click("text=/inductor_output_code_.*html/")
        page.wait_for_load_state()
        assert "inductor_output_code" in page.url
        # Line anchors, and code coloured in the browser by the bundled Prism.
        assert page.locator("td.ln a#L1").count() == 1
        page.wait_for_selector("code.language-python .token.keyword")
        assert page.locator("code .token").count() > 10
        page.go_back()
        page.click("text=/compilation_metrics_.*html/")
        page.wait_for_load_state()
        assert "Compilation metrics" in page.inner_text("h1")
        assert page.console_errors == []
        assert page.external_requests == []


def test_failures_page_and_stack_links(tmp_path):
    out = tmp_path / "out"
    report(torch213("graph_breaks.log"), out)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        page.click("header >> text=failures & restarts")
        page.wait_for_load_state()
        rows = page.locator("#failures tbody tr")
        assert rows.count() >= 3
        first = rows.nth(0).locator("a")
        first.click()
        page.wait_for_load_state()
        assert "compilation_metrics" in page.url
        assert page.console_errors == []
        assert page.external_requests == []


def test_no_page_of_a_real_gpu_report_runs_off_the_side(tmp_path):
    """GPT-2 on an H100: kernel names of 100+ characters and site-packages paths wrap, at a laptop's width, so no
    page scrolls sideways (its kernels pages pushed the user's code off the page). Each page also loads cleanly."""
    out = tmp_path / "out"
    report(shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"), out)
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 50
    wide = []
    with browser_page() as page:
        page.set_viewport_size({"width": 1300, "height": 900})
        for html in pages:
            page.goto(html.as_uri())
            if page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth + 2"):
                wide.append(str(html.relative_to(out)))
        assert wide == [] and not page.console_errors and not page.external_requests


"""The Runtime page in Chromium: its links lead to pages that exist and show the kernel; no console errors."""

from __future__ import annotations

import pytest

from ..browser import browser_page
from .test_runtime import _gpu_pair
from ..conftest import cuda211, report

pytestmark = pytest.mark.browser


def test_runtime_page_links_work(tmp_path):
    log, profile = _gpu_pair()
    out = tmp_path / "out"
    report(log, out, "--profile", profile)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        page.click("#insights-runtime a[href='runtime.html']")
        page.wait_for_load_state()
        assert page.url.endswith("runtime.html") and "GPU time" in page.inner_text("h2")
        # Long kernel names wrap: no table runs off the page (the source-line table's kernel list did).
        page.set_viewport_size({"width": 1300, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        for href in set(hrefs):  # every link leads to a file of the report
            assert href.startswith("file:") and (out / href.split(out.name + "/", 1)[1].split("#")[0]).exists(), href
        link = page.locator("a.rt-code", has_text="triton_poi_fused_addmm_gelu_view_1")
        anchor = link.get_attribute("href").split("#")[1]
        link.click()
        page.wait_for_load_state()
        assert page.url.endswith(f"#{anchor}") and page.locator(f"#{anchor}").count() == 1
        assert "triton_poi_fused_addmm_gelu_view_1 = async_compile" in page.inner_text("code")
        page.go_back()
        stacks = page.locator("tr", has=page.locator("a.rt-code", has_text="triton_poi_fused_addmm_gelu_view_1")).locator("a.rt-stacks")
        target = stacks.get_attribute("href").split("#")[1]
        stacks.click()
        page.wait_for_load_state()
        assert page.locator(f"#{target}").count() == 1 and "profile_compiled.py" in page.inner_text(f"#{target}")
        # The row it lands on is marked: a kernel's stacks are one row of several, some of the same name.
        assert page.locator(f"#{target}").evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
        page.go_back()
        page.locator("a.rt-provenance").first.click()
        page.wait_for_load_state()
        assert "provenance/" in page.url
        assert not page.console_errors and not page.external_requests


def _h200_runtime_pages(tmp_path):
    """(name, page) of the Runtime page of each H200 profile's report, open at 1300 pixels: the compile-covering
    capture and the eager/compiled pair."""
    for name in ("capture_profile", "profile_cudagraphs"):
        out = tmp_path / name
        report(cuda211(f"{name}.log.gz"), out, "--profile", cuda211(f"{name}.profile.json.gz"))
        with browser_page() as page:
            page.set_viewport_size({"width": 1300, "height": 900})
            page.goto((out / "runtime.html").as_uri())
            yield name, page


def test_runtime_pages_of_the_h200_profiles_fit_the_page(tmp_path):
    """The compile-covering capture (a column of the run) and the eager/compiled pair (the comparison's op names,
    cuBLAS kernels of 150 characters) both fit 1300 pixels, with no console error."""
    for name, page in _h200_runtime_pages(tmp_path):
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"), name
        assert not page.console_errors and not page.external_requests


# A cell of the Runtime page's tables that holds a time alone ("33 ms", "199 µs").
_SPLIT_TIMES = """() => [...document.querySelectorAll('td')].filter(td => /^\\d[\\d.,]*\\s(s|ms|µs|ns)$/.test(td.innerText.trim()))
  .filter(td => { const r = document.createRange(); r.selectNodeContents(td);
                   return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size > 1; })
  .map(td => td.innerText)"""


def test_a_time_keeps_its_unit_on_its_line(tmp_path):
    """The tables' time columns are narrow beside a kernel's name: "33 ms" wrapped to "33" above "ms" (every time of
    profile_cudagraphs' table of kernels at 1300 pixels), a number whose unit is on the next line."""
    for name, page in _h200_runtime_pages(tmp_path):
        assert page.evaluate(_SPLIT_TIMES) == [], name

"""The annotated source page in headless Chromium: from a graph-break row to its line; a line's graphs and kernels."""

from __future__ import annotations

import re

import pytest

from ..browser import browser_page
from ..conftest import report, torch213

pytestmark = pytest.mark.browser


def open_source_page(page, out, name: str) -> None:
    """From the report's index to the annotated page of source file `name`."""
    page.goto((out / "index.html").as_uri())
    page.locator("#source-files a", has_text=name).click()
    page.wait_for_load_state()


def test_graph_break_row_lands_on_the_line(tmp_path):
    out = tmp_path / "out"
    report(torch213("source_view.log"), out)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        row = page.locator("table.graph-breaks tr", has_text="Data-dependent branching")
        row.locator("a.src-link").click()
        page.wait_for_load_state()
        assert page.url.endswith("#L22") and "/sources/source_view.py_" in page.url
        line = page.locator("#L22")
        assert "if y.sum() > 0:" in line.locator(".lt").inner_text()
        assert "s-break" in (line.get_attribute("class") or "")
        notes = line.locator(".notes")
        assert notes.is_visible()  # the target line opens its details
        assert "Data-dependent branching" in notes.inner_text()
        assert "torch_dynamo_resume_in_f_at_22" in notes.inner_text()
        # the line is on screen
        box = line.bounding_box()
        assert box is not None and 0 <= box["y"] < page.viewport_size["height"]
        assert not page.console_errors and not page.external_requests


def test_click_source_line_shows_graphs_and_kernels(tmp_path):
    out = tmp_path / "out"
    report(torch213("provenance.log"), out)
    with browser_page() as page:
        open_source_page(page, out, "provenance.py")
        notes = page.locator("#L24 .notes")
        assert not notes.is_visible()
        page.click("#L24 .lt")
        assert notes.is_visible()
        text = notes.inner_text()
        assert "captured in graph [0/0]" in text
        # provenance.log's output codes: AOT ID 0_forward calls extern_kernels.addmm:1 and the relu kernel, 0_backward
        # the threshold backward, mm and sum kernels; each one's stack trace is line 24
        assert "forward kernels of [0/0]: extern_kernels.addmm:1, cpp_fused_relu_threshold_backward_0:2" in text
        assert "backward kernels of [0/0]: cpp_fused_threshold_backward_0:1, extern_kernels.mm:2, cpp_fused_sum_1:3" in text
        # the graph link goes to the compile id's page, the kernel link to its provenance page
        link = page.locator("#L24 .notes li.n-kernel a", has_text="cpp_fused_sum_1:3")
        link.click()
        page.wait_for_load_state()
        assert "/provenance/" in page.url
        # the backward section opens on the generated code's line that calls the kernel, on screen
        target = page.locator("#" + page.url.rsplit("#", 1)[1])
        assert target.is_visible() and "cpp_fused_sum_1" in target.inner_text()
        assert not page.console_errors and not page.external_requests


def test_unquoted_line_of_a_compiled_function_lands_on_its_line(tmp_path):
    """source_view.py is rebuilt from the log, which never quotes `def f(x, n=2):` (line 20): the transformed-code
    page lists it as unquoted, and following it lands on that line of the source page (a gap row when the line has
    no notes of its own), outlined and on screen."""
    out = tmp_path / "out"
    report(torch213("transformed_code.log"), out)  # a run of source_view.py
    with browser_page() as page:
        for transformed in sorted(out.glob("*/transformed_code.html")):
            page.goto(transformed.as_uri())
            unquoted = page.locator("#tc-original > div", has_text="not quoted in the log")
            if unquoted.count():
                break
        else:
            raise AssertionError("no transformed-code page lists a line the log does not quote")
        line = int(unquoted.first.locator("a.ln").inner_text())
        unquoted.first.locator("a.ln").click()
        page.wait_for_load_state()
        assert "/sources/source_view.py_" in page.url
        landed = page.locator(page.url.rpartition("#")[2].join(("#", "")))
        assert landed.count() == 1 and "not quoted in the log" in landed.inner_text()
        if "src-gap" in (landed.get_attribute("class") or ""):  # one row for the gap: it names the line's range
            first, last = re.search(r"lines? (\d+)(?:–(\d+))?:", landed.inner_text()).groups()
            assert int(first) <= line <= int(last or first)
        else:
            assert page.url.endswith(f"#L{line}")
        assert landed.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"  # it says where the link landed
        box = landed.bounding_box()
        assert box is not None and 0 <= box["y"] < page.viewport_size["height"]
        assert not page.console_errors and not page.external_requests


def test_foreign_log_says_it_is_rebuilt(tmp_path):
    from ..sources.test_sources import GPU
    from ..conftest import skip_or_fail

    folder = GPU / "autotune_cudagraphs"
    if not folder.is_dir():
        skip_or_fail("../shared/traces/gpu-torch211 not available")
    out = tmp_path / "out"
    report(next(folder.glob("*.log")), out)
    with browser_page() as page:
        open_source_page(page, out, "autotune_cudagraphs.py")
        assert "Rebuilt from the lines the log quotes" in page.inner_text("#src-origin")
        assert page.locator(".src-gap").count() >= 1
        assert "self.l2(torch.nn.functional.gelu(self.l1(x))) + x" in page.inner_text("#L13")
        page.screenshot(path=str(tmp_path / "shot.png"), full_page=True)


def test_tab_moves_one_line_at_a_time_and_enter_opens_it(tmp_path):
    # Each line is one tab stop, its number (the text's link is for the mouse): blank lines were invisible stops.
    out = tmp_path / "out"
    report(torch213("graph_breaks.log"), out)
    with browser_page() as page:
        open_source_page(page, out, "graph_breaks.py")
        lines = page.locator("div.src-line").count()
        stops = page.evaluate("""() => [...document.querySelectorAll('main a[href], main summary')]
            .filter(e => e.tabIndex >= 0 && e.closest('div.src-line') && !e.closest('.notes')).length""")
        assert stops == lines
        page.locator("#L18 a.ln").focus()
        page.keyboard.press("Enter")
        assert page.url.endswith("#L18") and page.locator("#L18 .notes").is_visible()
        assert not page.console_errors


def test_on_a_phone_a_lines_notes_stay_on_screen(tmp_path):
    """At 390 px a line's opened notes wrap within the screen: they sat in the line, as wide as the file's longest
    line, and were cut off at the code box's right edge (reading them meant scrolling the code sideways)."""
    out = tmp_path / "out"
    report(torch213("source_view.log"), out)
    with browser_page() as page:
        page.set_viewport_size({"width": 390, "height": 800})
        page.goto((out / "index.html").as_uri())
        page.locator("table.graph-breaks tr", has_text="Data-dependent branching").locator("a.src-link").click()
        page.wait_for_load_state()
        notes = page.locator("#L22 .notes")
        assert notes.is_visible() and "Data-dependent branching" in notes.inner_text()
        box = notes.bounding_box()
        src = page.locator("#src").bounding_box()
        assert box is not None and src is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= min(390, src["x"] + src["width"]) + 1, (box, src)
        assert not page.console_errors and not page.external_requests

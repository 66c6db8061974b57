"""The provenance page in headless Chromium: clicking a post-grad node highlights where it came from and what it became."""

from __future__ import annotations

import json

import pytest

from ..browser import PHONE, browser_page
from ..conftest import cuda211, peer, report, torch213

pytestmark = pytest.mark.browser


def _classes(page, selector: str) -> str:
    return page.locator(selector).get_attribute("class") or ""


def test_click_post_grad_node_highlights_pre_grad_and_code(tmp_path):
    out = tmp_path / "out"
    report(peer("inductor_provenance_jit_debug_handle_log.txt"), out)
    maps = json.loads((out / "provenance" / "-_0_0_0.json").read_text())
    post = 18  # mm_default: from pre-grad `y = torch.addmm(...)`, computed by extern_kernels.mm:5
    (pre,) = maps["postToPre"][str(post)]
    (code,) = maps["postToPyCode"][str(post)]
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        page.click("a.provenance-link")
        page.wait_for_load_state()
        assert page.url.endswith("provenance/-_0_0_0.html")
        assert "mm_default" in page.inner_text(f"#s0-post-L{post}")
        assert "m" in _classes(page, f"#s0-post-L{post}").split()  # mapped lines are bold
        page.click(f"#s0-post-L{post} .ln")
        assert "sel" in _classes(page, f"#s0-post-L{post}").split()
        assert "rel" in _classes(page, f"#s0-pre-L{pre}").split()
        assert "rel" in _classes(page, f"#s0-code-L{code}").split()
        assert "extern_kernels.mm(" in page.inner_text(f"#s0-code-L{code}")
        assert page.locator(".pl.rel").count() == 2
        # Scrolled into view inside its panel.
        assert page.evaluate(f"""() => {{
            const body = document.querySelector('#s0 [data-panel=code] .prov-body'), r = document.getElementById('s0-code-L{code}').getBoundingClientRect(), b = body.getBoundingClientRect();
            return body.scrollTop > 0 && r.top >= b.top && r.bottom <= b.bottom; }}""")
        # Hovering another line previews it; leaving the panel restores the clicked selection.
        page.hover("#s0-pre-L11 .ln")
        assert "sel" in _classes(page, "#s0-pre-L11").split() and "rel" not in _classes(page, f"#s0-pre-L{pre}")
        page.mouse.move(1, 1)
        assert "sel" in _classes(page, f"#s0-post-L{post}").split()
        # Keyboard: the next mapped line of the focused panel.
        page.keyboard.press("j")
        nxt = min(int(n) for n in maps["postToPre"] if int(n) > post)
        assert "sel" in _classes(page, f"#s0-post-L{nxt}").split()
        page.keyboard.press("Escape")
        assert page.locator(".pl.sel, .pl.rel").count() == 0
        assert page.console_errors == []
        assert page.external_requests == []


def test_backward_tab_and_kernel_page_links(tmp_path):
    out = tmp_path / "out"
    report(torch213("provenance.log"), out)
    with browser_page() as page:
        page.goto((out / "-_0_0_0" / "index.html").as_uri())
        page.click("a.provenance-link")
        page.wait_for_load_state()
        assert page.locator("#s1").is_hidden()
        page.click(".prov-tabs button >> text=[0/0] backward")  # (0_backward, in its tooltip)
        assert page.locator("#s1").is_visible() and page.locator("#s0").is_hidden()
        page.click("#s1-post-L8 .ln")  # sum_1: inferred from the user line for cpp_fused_sum_1
        assert "inf" in _classes(page, "#s1-code-L123").split()
        # The code panel links a kernel call to the user source lines it came from ...
        page.click("#s1-code-L123 a.kl")
        page.wait_for_load_state()
        assert page.url.endswith("_readable.html#kernel-cpp_fused_sum_1-3")
        row = page.locator("#kernel-cpp_fused_sum_1-3")
        assert "provenance.py:24" in row.inner_text() and "return torch.relu(self.lin(x))" in row.inner_text()
        # ... and back to its call site, selected.
        row.locator("text=call site 1").click()
        page.wait_for_load_state()
        assert page.locator("#s1").is_visible()
        assert "sel" in _classes(page, "#s1-code-L123").split()
        assert page.console_errors == []
        assert page.external_requests == []


def test_on_a_phone_the_panels_stack_and_a_kernel_link_shows_its_call(tmp_path):
    """train_break_recompile (an H200 run): line 21 of the user's source lists the forward kernels of [0/0_1]; its
    `triton_per_fused_native_layer_norm_0:1` links to the call in the generated code (the raw log's output code of
    [0/0_1] calls `triton_per_fused_native_layer_norm_0.run(...)` under the comment `[Provenance debug handles]
    triton_per_fused_native_layer_norm_0:1`). At a phone's width the three panels stood side by side, 120 px each:
    a dozen characters of each line showed. They stack, each the page's width, and the link scrolls the page to the
    selected call."""
    out = tmp_path / "out"
    report(cuda211("train_break_recompile.log.gz"), out)
    [source] = (out / "sources").glob("train_break_recompile.py_*.html")
    with browser_page() as page:
        page.set_viewport_size({"width": PHONE, "height": 844})
        page.goto(source.as_uri() + "#L21")
        page.click("#L21 .notes a >> text=triton_per_fused_native_layer_norm_0:1 >> nth=0")
        page.wait_for_load_state()
        assert "/provenance/-_0_0_1.html#s0-code-L" in page.url
        panels = page.evaluate("""() => Array.from(document.querySelectorAll('#s0 .prov-panel')).map(p =>
            p.getBoundingClientRect().width)""")
        selected = page.locator("#s0 .pl.sel")
        text, box = selected.inner_text(), selected.bounding_box()
        wide = page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth")
        assert page.console_errors == [] and page.external_requests == []
    assert len(panels) == 3 and min(panels) > 0.9 * (PHONE - 24)  # the page's width, less main's padding
    assert "triton_per_fused_native_layer_norm_0.run(" in text
    assert 0 <= box["y"] and box["y"] + box["height"] <= 844 and box["x"] >= 0
    assert not wide


def test_a_kernel_note_above_the_panels_selects_the_kernels_call(tmp_path):
    """custom_ops_fixed's [2/0]: the note on cpp_fused_bucketize_tanh_0 (named after mylib::bucketize, which its
    own call computes) links to the kernel's call in the generated code, on the same page: following it selects
    that line (the page read its fragment only when it loaded)."""
    out = tmp_path / "out"
    report(torch213("custom_ops_fixed.log.gz"), out)
    maps = json.loads((out / "provenance" / "-_2_0_0.json").read_text())
    (section,) = maps["sections"]
    (line,) = [int(n) for n, names in section["codeKernels"].items() if "cpp_fused_bucketize_tanh_0:1" in names]
    with browser_page() as page:
        page.goto((out / "provenance" / "-_2_0_0.html").as_uri())
        assert page.locator(".pl.sel").count() == 0
        page.click(".prov-notes a >> text=cpp_fused_bucketize_tanh_0")
        assert page.url.endswith(f"#s0-code-L{line}")
        assert "sel" in _classes(page, f"#s0-code-L{line}").split()
        assert "cpp_fused_bucketize_tanh_0(" in page.inner_text(f"#s0-code-L{line}")
        assert page.console_errors == [] and page.external_requests == []

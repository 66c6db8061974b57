"""A compile's page cuts a metric value too long for a summary to its head, its size and a link to the compilation
metrics page, which keeps every value whole (the full record); a long value the report shows whole on other pages
(inductor_provenance: the kernels' stack traces) is cut on both, with links to those pages."""

from __future__ import annotations

import json
import os
import re

import pytest
from markupsafe import escape

from compilescope.analyses.provenance import kernel_anchor
from compilescope.analyses.metric_values import LONG_METRIC, long_metric, pretty_json
from compilescope.ingest.reader import read_trace

from ..browser import browser_page
from ..conftest import report, shared
from ..tracelog import cid, envelope

GPT2 = "gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """The GPT-2 CUDA report, and each compile's metrics as the log has them."""
    log = shared(GPT2)
    out = tmp_path_factory.mktemp("gpt2")
    directory = report(log, out)
    with read_trace(str(log)) as trace:
        metrics = {entry.dir_name: entry.metrics for entry in trace.compiles.values() if entry.metrics}
    return out, directory, metrics


def _row(html: str, key: str) -> str:
    found = re.search(rf'<tr><th class="mono">{key}</th><td>(.*?)</td></tr>', html, re.S)
    assert found, key
    return found.group(1)


def _shown(value) -> str:
    """A metric's value as a page shows it whole (escaped)."""
    return str(escape(pretty_json(value) if isinstance(value, (list, dict)) else value))


def test_the_compile_page_shows_the_head_of_a_long_value_and_links_to_the_whole(gpt2):
    out, directory, metrics = gpt2
    for compile_dir, metrics_page in (("-_1_1_1", "compilation_metrics_106.html"), ("-_1_0_1", "compilation_metrics_24.html")):
        page = (out / compile_dir / "index.html").read_text()
        full = (out / compile_dir / metrics_page).read_text()
        # 903 and 263 KB before, 834 and 198 KB of them one value (inductor_provenance: its own test below).
        assert len(page) < 40_000, (compile_dir, len(page))
        assert len(full) > 50_000  # the other long values are whole there (inductor_config, 22 KB)
        for key in ("inductor_config", "graph_node_shapes", "dynamo_config"):
            value = metrics[compile_dir][key]
            text = pretty_json(value) if isinstance(value, list) else value
            assert len(text) > LONG_METRIC, key
            row = _row(page, key)
            assert _shown(value) not in page, key
            assert str(escape(text[:200])) in row, key  # its head
            cut = re.search(r'<div class="muted metric-cut">([^<]*)<a href="([^"]+)">', row)
            assert cut, key
            assert f"{len(text):,} characters" in cut.group(1), key
            assert cut.group(2) == f"../{compile_dir}/{metrics_page}", key
            # The link's page is the compilation metrics page, and it shows the value whole.
            assert _row(full, key) == (f"<pre>{_shown(value)}</pre>" if isinstance(value, list) else _shown(value))
            assert full.count('class="muted metric-cut"') == 1  # inductor_provenance's alone
        # Values of a screen or less stay whole on the summary: which kernels took long to compile; and the stack,
        # every frame (as file:line, tests/pages/test_compile_page.py).
        value = metrics[compile_dir].get("triton_kernel_compile_times_us")
        if value:
            assert _shown(value) in _row(page, "triton_kernel_compile_times_us")
        stack = metrics[compile_dir]["stack_trace"]
        assert len(stack) > 1 and _row(page, "stack_trace").count("<li>") == len(stack)
    # The file names tlparse writes are unchanged.
    assert "compilation_metrics_106.html" in json.dumps(directory)


# The metrics pages whose inductor_provenance the report shows whole elsewhere: (compile dir, page, the artifacts of the
# kernels' stack traces logged with the record, in its order). [1/0_1]'s backward graph was compiled at its first run,
# after the compile's record: its kernels are in the backward record's value, not the compile's.
PROVENANCE_RECORDS = (("-_1_1_1", "compilation_metrics_106.html", (93, 102)),
                      ("-_1_0_1", "compilation_metrics_24.html", (20,)),
                      ("-_1_0_1", "bwd_compilation_metrics_70.html", (67,)))


def _links(html: str) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', html)


def test_the_kernels_stack_traces_are_cut_on_every_page_with_links_to_the_pages_that_show_them(gpt2):
    # tlparse's pages: 40 KB and 3 KB. These were 910 KB and 501 KB, 792 KB and 430 KB of them inductor_provenance
    # (pretty-printed JSON of JSON texts, escaped twice), which the provenance and kernel stack trace pages show.
    out, _, _ = gpt2
    with read_trace(str(shared(GPT2))) as trace:
        records = {(entry.dir_name, a.number): a.data for entry in trace.compiles.values() for a in entry.artifacts}
    for compile_dir, name, holders in PROVENANCE_RECORDS:
        number = int(name.rsplit("_", 1)[1][: -len(".html")])
        value = records[compile_dir, number]["inductor_provenance"]
        assert len(value) == len(holders)
        pages = [out / compile_dir / name] + ([out / compile_dir / "index.html"] if "bwd" not in name else [])
        for page in pages:
            html = page.read_text()
            assert len(html) < (100_000 if page.name == name else 40_000), (page, len(html))
            row = _row(html, "inductor_provenance")
            assert _shown(value) not in html and str(escape(pretty_json(value)[:200])) in row
            assert f"{count(len(value))} ({len(pretty_json(value)):,} characters as JSON)" in row
            readable = [f"../{compile_dir}/inductor_provenance_tracking_kernel_stack_traces_{n}_readable.html"
                        for n in holders]
            assert _links(row) == readable + [f"../provenance/{compile_dir}.html"], page
            # Each kernel of the value has its stack traces on the page it links to.
            for text, url in zip(value, readable):
                shown = (page.parent / url).read_text()
                assert all(f'id="{kernel_anchor(k)}"' in shown for k in json.loads(text)), url
            # Every link of the page resolves.
            for url in _links(html):
                if not url.startswith(("http://", "https://", "#")):
                    assert os.path.isfile(page.parent / url.split("#")[0]), (page, url)
    # The compile's other long values stay whole on its metrics page, the one place that shows them.
    assert len(records["-_1_1_1", 106]["inductor_config"]) > 20_000
    assert _shown(records["-_1_1_1", 106]["inductor_config"]) in (out / "-_1_1_1" / "compilation_metrics_106.html").read_text()


def count(entries: int) -> str:
    return f"{entries} entr{'y' if entries == 1 else 'ies'}"


def test_which_real_values_are_long(gpt2):
    _, _, metrics = gpt2
    compile_metrics = metrics["-_1_1_1"]
    assert long_metric(compile_metrics["triton_kernel_compile_times_us"]) is None  # 2 KB: shown whole
    assert long_metric(compile_metrics["stack_trace"]) is None
    assert long_metric(compile_metrics["frame_key"]) is None
    provenance = long_metric(compile_metrics["inductor_provenance"])
    assert provenance is not None and provenance.items == len(compile_metrics["inductor_provenance"])
    assert pretty_json(compile_metrics["inductor_provenance"]).startswith(provenance.head)
    shapes = long_metric(compile_metrics["graph_node_shapes"])
    assert shapes is not None and compile_metrics["graph_node_shapes"].startswith(shapes.head) and shapes.items is None


def test_a_long_value_is_escaped_on_both_pages(tmp_path):
    hostile = "<script>alert(1)</script>&\"'" * 400  # 11 KB of untrusted text
    metrics = {**cid(0), "co_name": "f", "inductor_config": hostile, "inductor_provenance": [hostile, hostile]}
    log = tmp_path / "hostile.log"
    log.write_text(envelope({"compilation_metrics": metrics, **cid(0)}))
    out = tmp_path / "out"
    report(log, out)
    page = (out / "-_0_0_0" / "index.html").read_text()
    (full_page,) = (out / "-_0_0_0").glob("compilation_metrics_*.html")
    full = full_page.read_text()
    for html in (page, full):
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#34;&#39;" in html
    assert page.count('class="muted metric-cut"') == 2
    assert str(escape(hostile)) in full and str(escape(hostile)) not in page


@pytest.mark.browser
def test_the_long_values_read_as_a_short_page_in_a_browser(gpt2):
    out, _, _ = gpt2
    with browser_page() as page:
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto((out / "-_1_1_1" / "index.html").as_uri())
        for group in page.locator("details.metrics-group").all():
            group.evaluate("d => d.open = true")
        height = page.evaluate("document.documentElement.scrollHeight")
        assert height < 8000, height  # every group open
        row = page.locator("tr:has(th:text-is('inductor_provenance'))")
        box = row.bounding_box()
        assert box is not None and box["height"] < 400, box
        row.locator("a").first.click()
        page.wait_for_load_state()
        assert page.url.endswith("-_1_1_1/inductor_provenance_tracking_kernel_stack_traces_93_readable.html")
        assert "triton_poi_fused_add_arange_0" in page.locator("body").text_content()
        assert page.console_errors == [] and page.external_requests == []

"""The tables built row by row in Python (kernel pages, metrics tables) escape what the log says and show
invisible characters as \\uXXXX, like every template value."""

from __future__ import annotations

import json
from collections import OrderedDict, UserDict
from collections.abc import Iterable, Mapping

from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup, escape

from compilescope.analyses.metric_values import is_structured
from compilescope.render.html.rows import block_escaped, escaped_by_hand, html_text

from ..conftest import report
from ..provenance.helpers import provenance_log, python_code
from ..tracelog import cid, envelope

EVIL = "</td><script>alert(1)</script>"
BIDI = "ev\u202eil\u200b"


def _pages(out):
    return {p: p.read_text(encoding="utf-8") for p in out.rglob("*.html")}


def test_kernel_rows_escape_names_frames_and_stacks(tmp_path):
    kernel = f"cpp_fused_relu_0{BIDI}"
    stack = f'  File "/home/me/{EVIL}{BIDI}.py", line 7, in f{EVIL}\n    y = x.relu()  # {EVIL}\n'
    log = tmp_path / "evil.log"
    log.write_text(provenance_log(python_code("cpp_fused_relu_0"), "cpp_fused_relu_0",
                                  traces={f"{kernel}:1": [stack], f"{EVIL}:2": [stack]}), encoding="utf-8")
    out = tmp_path / "out"
    report(log, out)
    (page,) = out.glob("-_0_0_0/*_readable.html")
    html = page.read_text(encoding="utf-8")
    assert "<script>alert" not in html and "</td><script>" not in html
    assert "&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\u202e" not in html and "\u200b" not in html
    assert "cpp_fused_relu_0ev\\u202eil\\u200b" in html
    assert html.count("<tr id=") == 2  # one row per kernel


def test_metric_rows_escape_keys_and_values(tmp_path):
    metrics = {"co_name": "f", "co_filename": "/home/me/x.py", "co_firstlineno": 1, "cache_size": 0,
               f"key{EVIL}": f"value{EVIL}{BIDI}", "nested": {"a": [EVIL]}, "flag": True}
    log = tmp_path / "metrics.log"
    log.write_text(envelope({"compilation_metrics": metrics, **cid(0)}), encoding="utf-8")
    out = tmp_path / "out"
    report(log, out)
    pages = _pages(out)
    (metrics_page,) = [t for p, t in pages.items() if p.name.startswith("compilation_metrics")]
    for text in pages.values():
        assert "<script>alert" not in text and "\u202e" not in text
    assert '<tr><th class="mono">key&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;</th>' in metrics_page
    assert "value&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;ev\\u202eil\\u200b</td>" in metrics_page
    assert f"<pre>{{\n  &#34;a&#34;: [\n    &#34;{json.dumps(EVIL)[1:-1].replace('<', '&lt;').replace('>', '&gt;')}" \
           f"&#34;\n  ]\n}}</pre>" in metrics_page
    assert '<tr><th class="mono">flag</th><td>True</td></tr>' in metrics_page


def test_provenance_panels_and_source_pages_show_invisible_characters(tmp_path):
    """Panels and source pages are written in ASCII and non-ASCII parts: every part is still shown escaped."""
    code = python_code("cpp_fused_relu_0").replace("import torch", f"import torch  # {BIDI} {EVIL}")
    stack = f'  File "/home/me/prog{BIDI}.py", line 7, in forward\n    y = x.relu()  # {BIDI}\n'
    log = tmp_path / "bidi.log"
    log.write_text(provenance_log(code, "cpp_fused_relu_0", traces={"cpp_fused_relu_0:1": [stack]}), encoding="utf-8")
    out = tmp_path / "out"
    report(log, out)
    pages = _pages(out)
    (panel_page,) = [t for p, t in pages.items() if p.parent.name == "provenance"]
    assert "import torch  # ev\\u202eil\\u200b &lt;/td&gt;" in panel_page and "\u2197</a>" in panel_page
    sources = [t for p, t in pages.items() if "prog" in p.name]
    assert sources and "ev\\u202eil\\u200b" in sources[0]
    for page, text in pages.items():
        assert "\u202e" not in text and "\u200b" not in text and "<script>alert" not in text, page


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet=st.sampled_from("ab&<>\"' \u202e\u200b"), max_size=400), st.text(max_size=300),
                 st.integers(), st.floats(), st.booleans(), st.none()))
def test_the_short_text_escape_is_markupsafes(value):
    # rows.html_text escapes short strs and numbers by hand (a Markup per value was a hot path): it must give
    # markupsafe's text
    assert html_text(value) == str(escape(value))
    assert html_text(Markup("<b>kept</b>")) == "<b>kept</b>"
    if type(value) is str:  # (where markupsafe has no C escape, short values are escaped by hand)
        assert escaped_by_hand(value) == str(escape(value))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet=st.sampled_from("ab&<>\"'\n\r \x00\x1b\x7f\u202e\u200b"), max_size=2000),
                 st.text(alphabet=st.characters(max_codepoint=127), max_size=2000), st.text(max_size=300)))
def test_the_block_escape_is_markupsafes(text):
    # rows.block_escaped escapes ASCII text as bytes (a page of code: markupsafe's loop was a panel's main cost).
    # Control characters pass as they are, as markupsafe's: finalize shows them (test_control_pictures.py)
    assert block_escaped(text) == str(escape(text))


def test_a_structured_metric_is_any_mapping_or_non_text_iterable():
    # is_structured answers a plain type without the abstract-class checks: the same answer as they give
    class Name(str):
        pass

    for value in ({}, {"a": 1}, [], [1], (1,), OrderedDict(), UserDict(), frozenset(), range(2), "[]", Name("x"), 1, 1.5,
                  True, None, b"x"):
        expected = isinstance(value, Mapping) or (not isinstance(value, str) and isinstance(value, Iterable))
        assert is_structured(value) is expected, value
    assert is_structured({}) and is_structured([]) and not is_structured("x") and not is_structured(3)

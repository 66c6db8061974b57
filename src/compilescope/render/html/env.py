"""The Jinja environment of every HTML page, and the assets pages inline.

Building it writes nothing: a bytecode cache (compiled templates kept between
runs) is turned on only by the CLI (cli/template_cache.enable_template_cache).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from ... import __version__
from ... import cache_dir
from ...cache_dir import CACHE_ENV
from ...analyses.insights import SECTIONS as INSIGHTS_SECTIONS
from ...analyses.metric_values import pretty_json
from ...analyses.status import STATUS_HELP, STATUS_LABELS, STATUSES, TLPARSE_STATUS_LABELS
from ...model.ids import NO_COMPILE_ID, compile_id_key, compile_id_words
from ...model.trace import Frame
from ...invisible import LONG_TEXT, shown_in_html
from ...wording import count, format_seconds, format_seconds_change, plural, possessive
from ..code_spans import CODE_SPAN
from ..options import safe_link_url
from .rows import frame_function_html, function_name_html

OUTCOME_LABELS = {
    "ok": "ok",
    "md5_mismatch": "payload md5 mismatch (read anyway)",
    "unknown_kind": "unknown event kind (kept)",
    "other_rank": "another rank's envelope (skipped)",
    "bad_prefix": "not a trace line (skipped)",
    "bad_json": "broken JSON (skipped)",
    "orphan_payload": "payload without envelope (skipped)",
    "handler_error": "could not be interpreted (skipped)",
}

_HERE = os.path.dirname(os.path.abspath(__file__))


@functools.cache
def _asset(name: str) -> Markup:
    """An asset inlined into pages (read once per process: every page includes some)."""
    with open(os.path.join(_HERE, "assets", *name.split("/")), encoding="utf-8") as f:
        return Markup(f.read())


@functools.cache
def script_hash(name: str) -> str:
    """CSP source for the one script a page runs: nothing else (no injected script, handler or javascript: URL) can."""
    digest = hashlib.sha256(str(_asset(name)).encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def page_script_src() -> Markup:
    return Markup(script_hash("report.js"))


def prism_script_src() -> Markup:
    """CSP source of a page that shows code: report.js and Prism, which colours it in the browser (every page that
    colours code, with prism.css and a <code class="language-…">)."""
    return Markup(f"{script_hash('report.js')} {script_hash('vendor/prism/prism.js')}")


def custom_header(html: str) -> dict[str, Markup]:
    """Template variables for a page that shows --custom-header-html (every landing page: index, export index,
    batch and multi-rank pages). The header is the user's own, trusted HTML and may carry inline script: such a
    page allows it. Pages of the log's content never show it and stay locked to their own scripts. Its ordinary slips
    are mended (balanced_html): a `<!--` left open hid the whole page, a `</main>` closed the page's."""
    if not html:
        return {"custom_header_html": Markup("")}
    from compilescope.render.html.header import balanced_html  # (html.parser compiles 20 patterns: only with a header)

    return {"custom_header_html": Markup(balanced_html(html)), "script_src": Markup("'unsafe-inline'")}


# How pages are built from templates. Part of the template cache's key: a change here is never served stale.
ENV_SETTINGS: dict[str, Any] = {"autoescape": True, "autoescape_strings": True, "trim_blocks": False, "lstrip_blocks": False,
                                "finalize": "visible_text"}  # compiled in: bytecode from before it must not load
TEMPLATE_CACHE_ENV = CACHE_ENV


def template_cache_key() -> str:
    """Digest of everything a compiled template depends on: Jinja's version, the settings and every template's
    file (its size and modification time: a changed template starts a new key, and so prunes the old caches;
    Jinja itself checks each entry against its template's source before using it, so none is served stale)."""
    import jinja2

    digest = hashlib.sha256(f"{jinja2.__version__}|{__version__}|{sorted(ENV_SETTINGS.items())}".encode())
    root = os.path.join(_HERE, "templates")
    for name in sorted(ENV.list_templates(extensions=["html"])):
        st = os.stat(os.path.join(root, *name.split("/")))
        digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def _visible_text(value: Any) -> Any:
    """Every value a template writes, as shown_in_html shows it: the one place the text of a log (untrusted) reaches
    a page, whatever built it (a template value, or the Markup rows and code a renderer made). C0 controls as their
    control pictures (a NUL as \u2400), bidi controls and zero-width characters (in a function, file or kernel name
    from the log) as \\u202e, never verbatim. In a JSON data island the escape means the same character, so the
    data is unchanged (JSON writes C0 controls as escapes already; a DEL there would be shown as \u2421)."""
    # (isprintable first: a name or a number, nearly every value, is decided by one C call, without a Python frame)
    if isinstance(value, str) and not (len(value) < LONG_TEXT and value.isprintable()):
        shown = shown_in_html(value)  # (the same str, no copy, for nearly every other value)
        if shown is not value:
            return Markup(shown) if isinstance(value, Markup) else shown
    return value


def code_spans(text: Any) -> Markup:
    """Advice as HTML, its `code` spans as <code>: the text is escaped first (it quotes the log, which is untrusted),
    so only the <code> elements made here are markup. An unpaired backtick stays as it is. Markup in (HTML a renderer
    built) is returned unchanged: a backtick there may sit in an attribute."""
    if text is None:
        return Markup("")
    if isinstance(text, Markup):
        return text
    text = str(text)
    html, at = [], 0
    for span in CODE_SPAN.finditer(text):  # (found in the text as written: escaped, a quote before a span is "&#34;")
        html += [escape(text[at:span.start()]), Markup("<code>%s</code>") % span.group(1)]
        at = span.end()
    html.append(escape(text[at:]))
    return Markup("").join(html)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(os.path.join(_HERE, "templates")),
        autoescape=select_autoescape(default=ENV_SETTINGS["autoescape"], default_for_string=ENV_SETTINGS["autoescape_strings"]),
        trim_blocks=ENV_SETTINGS["trim_blocks"],
        lstrip_blocks=ENV_SETTINGS["lstrip_blocks"],
        finalize=_visible_text,
        # Templates are files of the installed package, not edited while a report is written: without this,
        # every get_template (one per page, hundreds per report) stats its file to see whether it changed.
        auto_reload=False,
    )
    env.globals.update(
        include_asset=_asset,
        status_labels=STATUS_LABELS,
        status_help=STATUS_HELP,
        tlparse_status_labels=TLPARSE_STATUS_LABELS,
        statuses_order=STATUSES,
        insights_sections=INSIGHTS_SECTIONS,  # the Insights' sections in the order the page shows them
        outcome_labels=OUTCOME_LABELS,
        version=__version__,
        pretty=pretty_json,
        cid_key=compile_id_key,
        cid_words=compile_id_words,  # {{ cid_words("[0/1_1]") }}: "frame 0 (...), compile 1 (...), attempt 1 (...)"
        no_compile_id=NO_COMPILE_ID,
        link_href=safe_link_url,
        function_name=function_name_html,  # "f (after its graph break at line 23)" for torch_dynamo_resume_in_f_at_23
        frame_function=frame_function_html,  # {{ frame_function(f.function, "muted") }}: a stack frame's "in f"
        script_src=page_script_src(),
    )
    env.filters["frame"] = lambda d: d if isinstance(d, Frame) else Frame.from_json(d)
    env.filters["count"] = count  # {{ n|count("guard") }}: "1 guard", "2 guards"
    env.filters["plural"] = plural  # {{ n|plural("issue") }}: "issue" for 1, else "issues" (a card's label)
    env.filters["possessive"] = possessive  # {{ name|possessive }}: "A's", "tokens'" (a name the log or the run gives)
    env.filters["seconds"] = format_seconds  # {{ 0.0123|seconds }}: "12 ms", as the terminal says it
    env.filters["seconds_change"] = format_seconds_change  # {{ -0.37|seconds_change }}: "-370 ms"
    env.filters["code_spans"] = code_spans  # {{ note|code_spans }}: escaped, "`x = 1`" shown as <code>x = 1</code>
    return env


ENV = _environment()
if cache_dir.template_cache_hook is not None:  # (the command line asked before its command imported this)
    cache_dir.template_cache_hook()


def preload_templates() -> None:
    """Load every template now: worker processes forked afterwards share them instead of each loading its own."""
    for name in ENV.list_templates(extensions=["html"]):
        ENV.get_template(name)

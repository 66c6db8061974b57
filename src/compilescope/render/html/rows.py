"""Table rows built in one Python pass, for the tables that have thousands of rows.

A template loop costs a macro or block call, an escape and a finalize per value; these
format the same HTML with one f-string per row. They only format: the values come from
the model and the analyses. Every value is HTML-escaped here; the rows are Markup that a
template writes with ``{{ rows }}``, whose finalize shows control characters as their pictures and
invisible characters as \\uXXXX in the whole text at once (the same result as per value: escaping never touches
them).
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, Iterable, Iterator, Mapping

from markupsafe import Markup, escape

from ...analyses.graph_breaks.resume_names import function_label, function_title, resume_title
from ...analyses.metric_values import LongMetric, MetricElsewhere, MetricTraceback, is_structured, pretty_json
from ...model.trace import LINK, Artifact, Frame
from ...wording import and_list, count
from ..content import chunked
from ..options import LineLink, ReportOptions, artifact_file_name, artifact_url, safe_link_url

def escaped_by_hand(s: str) -> str:
    """markupsafe's escape of a str (the same five characters, the same entities), where its C escape is missing."""
    if "&" in s or "<" in s or ">" in s or '"' in s or "'" in s:
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;").replace("'", "&#39;")
    return s


# markupsafe's own C escape of a str (one call; the str itself when it holds none of the five characters), else
# the same by hand (markupsafe without its C extension, or before 3.0, which has no _escape_inner)
short_escaped: Callable[[str], str]
try:
    from markupsafe import _speedups
    short_escaped = _speedups._escape_inner
except (ImportError, AttributeError):
    short_escaped = escaped_by_hand


SHORT_TEXT = 256  # html_text escapes a str shorter than this itself


def html_text(value: Any) -> str:
    """A value HTML-escaped, as a template writes ``{{ value }}`` (control and invisible characters: see above).

    A short plain str is escaped by markupsafe's inner escape (its C loop, one call), without making a Markup and
    turning it back into a str: pages escape thousands of short values, most with nothing to escape (five `in` tests
    each cost more than the one scan). Longer text (a metric's pretty JSON) is block_escaped's. A number (a metric's value: about a
    thousand a log) is its str(), which holds none of the five characters, as markupsafe would write it. Anything
    else goes through markupsafe: Markup, objects with __html__."""
    if type(value) is str:
        if len(value) < SHORT_TEXT:
            return short_escaped(value)
        return _escaped_text(value) if len(value) <= KEPT_TEXT else block_escaped(value)
    if type(value) in _NUMBERS:
        return str(value)
    return str(escape(value))


_NUMBERS = (int, float, bool)  # (exact types: a subclass may write itself otherwise)


def code_text(text: str) -> str:
    """Source or code as a page shows it: a form feed (a page break in a Python file, `^L`; whitespace to Python and
    to C) as a space, where every other value shows it as its control picture ␌ (shown_in_html)."""
    return text.replace("\x0c", " ") if "\x0c" in text else text


def block_escaped(text: str) -> str:
    """A block of text (a page of code, a metric's pretty JSON) HTML-escaped exactly as markupsafe.escape escapes it:
    the same five characters, the same entities. ASCII text is escaped as bytes, where each replace scans for its
    byte with memchr: several times faster than markupsafe's C loop, which looks at every character (1.3 MB of
    generated code: 0.6 ms, not 3 ms). Other text goes through markupsafe."""
    if not text.isascii():
        return str(escape(text))
    return (text.encode("ascii").replace(b"&", b"&amp;").replace(b"<", b"&lt;").replace(b">", b"&gt;").replace(b'"', b"&#34;").replace(b"'", b"&#39;")
            .decode("ascii"))


# A long value that comes back is escaped once: each compile id's metrics carry the same configs (inductor_config,
# ~21-25 KB), shown on its page and on its metrics pages: 92-95% of the long text escaped on the medium and 10x logs.
KEPT_TEXT = 32 << 10  # longest text remembered (characters)
TEXTS_KEPT = 16  # (at most ~1 MB, text and escaped)


@functools.lru_cache(maxsize=TEXTS_KEPT)
def _escaped_text(text: str) -> str:
    return block_escaped(text)


# Rows reach a template in parts of about this many characters, never as one string: a page of a compile id
# with thousands of outputs, or a panel of a big graph, is written (render/html/__init__.py: _Page.stream) as
# its parts come, so no page is held whole however big the log.
PART_SIZE = 1 << 16


def ascii_parts(rows: Iterable[str], size: int = PART_SIZE) -> Iterator[Markup]:
    """Rows of HTML joined into parts of about `size` characters that keep ASCII and non-ASCII rows apart, for a
    template to write with ``{% for part in parts %}{{ part }}{% endfor %}``: finalize then looks for invisible
    characters only in the non-ASCII rows (a page of code is mostly ASCII; scanning all of it was a fifth of its time),
    and in an ASCII part for control characters alone (a smaller pattern, searched faster).

    A part is tested as a whole first (one isascii on the joined text, not one per row): only a part with a
    non-ASCII row is taken apart."""
    run: list[str] = []
    n = 0
    for row in rows:
        if row.isascii():
            run.append(row)
            n += len(row)
            if n >= size:
                yield Markup("".join(run))
                run, n = [], 0
            continue
        if run:
            yield Markup("".join(run))
            run, n = [], 0
        yield Markup(row)
    if run:
        yield Markup("".join(run))


def grouped(rows: Iterable[str], size: int = PART_SIZE) -> Iterator[Markup]:
    """Rows of HTML joined into parts of about `size` characters, as a template reaches them."""
    return map(Markup, joined(rows, size))


def joined(pieces: Iterable[str], size: int) -> Iterator[str]:
    """pieces joined into strings of about `size` characters (each as soon as it is that long)."""
    return chunked(pieces, size, "")


def metric_rows_html(rows: Iterable[tuple[str, Any]], long: Mapping[str, LongMetric] | None = None,
                     full_url: str | None = None, stacks: Mapping[str, list[Frame]] | None = None, root: str = "",
                     frame_link: Callable[[Frame], LineLink | None] = lambda frame: None,
                     tracebacks: Mapping[str, list[MetricTraceback]] | None = None,
                     elsewhere: Mapping[str, MetricElsewhere] | None = None,
                     elsewhere_links: Callable[[MetricElsewhere], list[tuple[str, str]]] = lambda found: []) -> Markup:
    """A metrics table's rows: a compile id logs about a hundred metrics.

    With `long` and `full_url` (a compile's page), a value in `long` is shown as its head, its size and a link to
    full_url, the page that shows every value whole. A value in `stacks` is shown as its frames, as stack_list_html
    shows a stack (root, frame_link: as there); one in `tracebacks` as traceback_html shows it. One in `elsewhere` is
    shown as its head, its size and links to the pages that show it whole: elsewhere_links, (url, label) each."""
    out = []
    for key, value in rows:
        cut = long.get(key) if long and full_url else None
        frames = stacks.get(key) if stacks else None
        parsed = tracebacks.get(key) if tracebacks else None
        home = elsewhere.get(key) if elsewhere else None
        shown: str
        if home is not None:
            shown = _elsewhere_metric_html(home, is_structured(value), elsewhere_links(home))
        elif frames is not None:
            shown = stack_list_html(frames, root, frame_link)
        elif parsed is not None:
            shown = "".join(traceback_html(t, root, frame_link, full_url) for t in parsed)
        elif cut is not None and full_url is not None:
            shown = _cut_metric_html(cut, is_structured(value), full_url)
        elif is_structured(value):
            shown = f"<pre>{html_text(pretty_json(value))}</pre>"
        elif value is None:
            shown = '<span class="muted">\u2013</span>'
        else:
            shown = html_text(value)
        out.append(f'<tr><th class="mono">{html_text(key)}</th><td>{shown}</td></tr>')
    return Markup("".join(out))


def _cut_metric_html(cut: LongMetric, structured: bool, full_url: str) -> str:
    return (f'{_cut_head_html(cut, structured)}<div class="muted metric-cut">{_cut_size(cut)}, the first '
            f'{len(cut.head):,} characters shown: the whole value is on <a href="{html_text(full_url)}">the '
            f"compilation metrics page</a>.</div>")


def _elsewhere_metric_html(found: MetricElsewhere, structured: bool, links: list[tuple[str, str]]) -> str:
    pages = and_list([f'<a href="{html_text(url)}">{html_text(label)}</a>' for url, label in links])
    return (f'{_cut_head_html(found.cut, structured)}<div class="muted metric-cut">{_cut_size(found.cut)}, the first '
            f"{len(found.cut.head):,} characters shown: torch logged the same as the compile's "
            f"{html_text(found.name)}, shown whole on {pages}.</div>")


def _cut_head_html(cut: LongMetric, structured: bool) -> str:
    return f"<pre>{html_text(cut.head)}\n\u2026</pre>" if structured else f"{html_text(cut.head)}\u2026"


def _cut_size(cut: LongMetric) -> str:
    return (f"{count(cut.items, 'entry', 'entries')} ({cut.chars:,} characters as JSON)" if cut.items is not None
            else f"{cut.chars:,} characters")


def artifact_link_html(a: Artifact, root: str, options: ReportOptions) -> Markup:
    """An output's link (a ``link`` event's url only if http(s): shown as text otherwise), with its cache badge."""
    if a.display == LINK:
        href = safe_link_url(a.url)
        link = (f'<a href="{html_text(href)}" rel="noopener noreferrer">{html_text(a.name)}</a>' if href else
                f'<span class="mono" title="not an http(s) link: shown, not linked">{html_text(a.name)}: '
                f"{html_text(a.url)}</span>")
    else:
        link = f'<a href="{html_text(root)}{html_text(artifact_url(a, options))}">{html_text(artifact_file_name(a, options))}</a>'
    if a.cache:
        link += f' <span class="badge {html_text(a.cache)}">cache {html_text(a.cache)}</span>'
    return Markup(link)


def artifact_items_html(artifacts: Iterable[Artifact], roles: Mapping[int, str], root: str,
                        options: ReportOptions) -> Iterator[Markup]:
    """A compile id's outputs as list items, with the code's role and number, in parts (a compile id can have
    thousands): ``{% for part in artifact_items(...) %}{{ part }}{% endfor %}``."""
    return grouped(_artifact_items(artifacts, roles, root, options))


def _artifact_items(artifacts: Iterable[Artifact], roles: Mapping[int, str], root: str,
                    options: ReportOptions) -> Iterator[str]:
    for a in artifacts:
        badge = f' <span class="badge role">{html_text(roles[a.number])}</span>' if a.number in roles else ""
        yield f'<li>{artifact_link_html(a, root, options)}{badge} <span class="num">({a.file_number})</span></li>'


def function_name_html(code_name: str, css_class: str | None = None) -> Markup:
    """A compiled function's name as every page names it (templates: the global function_name): Dynamo's resume
    function torch_dynamo_resume_in_f_at_23 is "f (after its graph break at line 23)", torch's name in its title (a
    stack frame keeps torch's name: frame_html). css_class: the span's class, the span there even without a title."""
    title = function_title(code_name)
    label = html_text(function_label(code_name))
    attrs = f' class="{css_class}"' if css_class else ""
    if title:
        return Markup(f'<span{attrs} title="{html_text(title)}">{label}</span>')
    return Markup(f"<span{attrs}>{label}</span>" if attrs else label)


def frame_function_html(function: str, css_class: str) -> Markup:
    """The function a stack frame is in, as every stack writes it (templates: the global frame_function): "in f".
    Dynamo's resume function keeps its own name (the stack says it, as a traceback does), and says in its title what
    it is."""
    resumed = resume_title(function)
    title = f' title="{html_text(resumed)}"' if resumed else ""
    return Markup(f'<span class="{css_class}"{title}>in {html_text(function)}</span>')


def frame_html(frame: Frame, root: str, frame_link: Callable[[Frame], LineLink | None]) -> str:
    """One stack frame as pages show it: its place (linked to the page that shows its line, where the report has one:
    options.line_link), its function and its source line."""
    link = frame_link(frame)
    # `file.py:23`, the path in its title, as other pages name a line (UserLocation.short): full paths took a
    # phone's width each, and told apart nothing the file name does not.
    where = f"{html_text(os.path.basename(frame.filename) or frame.filename)}:{html_text(frame.line)}"
    html = (f'<a href="{html_text(root)}{html_text(link.url)}" title="{html_text(link.title)}">{where}</a>' if link
            else f'<span title="{html_text(frame.filename)}">{where}</span>')
    html += f' {frame_function_html(frame.name, "fn")}'
    if frame.loc:
        html += f"<br><code>&nbsp;&nbsp;&nbsp;&nbsp;{html_text(frame.loc)}</code>"
    return html


def stack_list_html(frames: Iterable[Frame], root: str, frame_link: Callable[[Frame], LineLink | None]) -> Markup:
    """A stack's frames as the list compile and metrics pages show (one pass: a page can show hundreds of frames,
    and a template macro per frame cost ~10 us each)."""
    items = "".join(f"<li>{frame_html(frame, root, frame_link)}</li>" for frame in frames)
    return Markup(f'<div class="stack-trie"><ul>{items}</ul></div>')


# The lines of an exception's message a traceback shows: Dynamo's (its Explanation and Hints) take about 10, Inductor's
# lowering error 49 (it quotes the IR); a compiler's error quoting its output takes thousands.
MESSAGE_LINES_SHOWN = 60


def traceback_html(traceback: MetricTraceback, root: str, frame_link: Callable[[Frame], LineLink | None],
                   full_url: str | None = None) -> str:
    """A Python traceback (a failed compile's exception_stack_trace) as Python reads: each exception's frames as a
    stack (most recent call last), then the exception's message, a chain's exceptions in order with Python's
    sentence between them. Its text as logged (thousands of lines where the message quotes a compiler's output) is
    folded below, or, with full_url (a compile's page, which cuts long values), on that page."""
    parts: list[str] = []
    for raised in traceback.chain:
        if raised.frames:
            parts.append(stack_list_html(raised.frames, root, frame_link))
        # Its whole message: Dynamo's says what happened and what to do in lines after the first (Explanation:,
        # Hint:); a compiler's quoting its output (a C++ compile error's 1,097 lines) is cut, the rest as logged.
        message = raised.message_lines
        shown = "\n".join([f"<code>{html_text(raised.exception_line)}</code>", *map(html_text, message[1:MESSAGE_LINES_SHOWN])])
        cut = len(message) - MESSAGE_LINES_SHOWN
        more = (f'<div class="muted">and {count(cut, "more line")} of its message, in the text as logged</div>'
                if cut > 0 else "")
        parts.append(f'<div class="tb-exception"><pre class="tb-message">{shown}</pre>{more}</div>')
        if raised.then:
            parts.append(f'<p class="muted tb-then">{html_text(raised.then)}</p>')
    lines = count(traceback.line_count, "line")
    if full_url:
        whole = (f'<div class="muted metric-cut">The traceback as logged ({lines}) is on '
                 f'<a href="{html_text(full_url)}">the compilation metrics page</a>.</div>')
    else:
        whole = f'<details class="tb-text"><summary>as logged ({lines})</summary><pre>{html_text(traceback.text)}</pre></details>'
    return f'<div class="metric-traceback">{"".join(parts)}{whole}</div>'

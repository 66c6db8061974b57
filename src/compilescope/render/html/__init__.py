"""The HTML report: index, one page per compile id, artifact pages, failures.

Renderers return content; only the CLI writes. ``render_html`` yields
``(relative_path, content)`` pairs one at a time, so a huge report is never
held in memory at once.
"""

from __future__ import annotations

import codecs
import operator
import os
from typing import Any, Iterable, Iterator

import orjson
from markupsafe import Markup

from ...analyses.results import Results
from ...analyses.compile_summary import RUNTIME_METRICS, RuntimeRecordsOwner
from ...analyses.metric_values import MetricElsewhere
from ...analyses.stack_trie import StackTrieNode
from ...model.stats import OUTCOMES
from ...model.ids import compile_id_key
from ...model.payloads import PayloadRef
from ...model.trace import CODE, DUMP, GUARDS, JSON, LINK, METRICS, TEXT, Artifact, Compile, Frame, Trace
from ..charts import CompileTimeChart
from ...lazy_regex import lazy_compile
from ..content import chunked, later
from ..options import LineLink, ReportOptions, artifact_file_name, artifact_url, dump_file_url, line_link, readable_url
from .env import ENV, custom_header, page_script_src, preload_templates, prism_script_src

__all__ = ["ENV", "preload_templates", "render_demo_index", "render_html"]
from .export import COMPILE_INDEX, guard_pages, render_export_index, wants_export_index
from .provenance import kernels_page, provenance_files, provenance_url
from .rows import artifact_items_html, artifact_link_html, block_escaped, code_text, frame_html, metric_rows_html, stack_list_html
from .runtime import runtime_files
from .sources import source_files
from .transformed import transformed_files, transformed_url

Output = tuple[str, "str | bytes | Iterable[bytes]"]

_PRISM_LANGUAGES = {"python": "python", "cpp": "cpp"}

# Payloads above these sizes are streamed to their files, never held as one string:
HIGHLIGHT_LIMIT = 2 << 20  # code bigger than this is shown without colours (highlighting it would stall the browser)
PRETTY_LIMIT = 16 << 20  # JSON bigger than this is written as logged, not parsed and re-indented


# A streamed page reaches the writer in chunks of about this many characters: few enough that the writer pays
# nothing per chunk, small enough that a page is never held whole.
STREAM_CHUNK = 1 << 20


def _encoded(chunks: Iterable[str], size: int = STREAM_CHUNK) -> Iterator[bytes]:
    """Template output (many small strings) as UTF-8 chunks of about `size` bytes.

    Each string is encoded on its own, then the bytes joined: an ASCII string encodes as one copy, while text
    joined first takes the widest character of any piece (a template's "·" or "↗"), and a page of code would be
    widened, then encoded a character at a time (the same bytes either way: a piece ends between code points)."""
    return chunked(map(_UTF8, chunks), size, b"")


_UTF8 = operator.methodcaller("encode", "utf-8", "replace")


_PRISM_SCRIPT_SRC = prism_script_src()


def trie_tokens(root: StackTrieNode) -> list[tuple[str, StackTrieNode | None]]:
    """Flatten the trie into list tokens without recursion (stacks can be very deep).

    A chain of single children stays one flat list; where stacks diverge each
    branch gets its own nested list.
    """
    tokens: list[tuple[str, StackTrieNode | None]] = []
    # Work stack of (node, position); "pending" actions interleave via sentinels.
    work: list[Any] = [("children", root)]
    while work:
        action, node = work.pop()
        if action == "emit":
            tokens.append(node)
            continue
        many = len(node.children) > 1
        todo: list[Any] = []
        for child in node.children:
            todo.append(("emit", ("item", child)))
            if many and child.children:
                todo.append(("emit", ("open", None)))
                todo.append(("children", child))
                todo.append(("emit", ("close", None)))
            else:
                todo.append(("emit", ("end", None)))
                if not many and child.children:
                    todo.append(("children", child))
        work.extend(reversed(todo))
    return tokens


class Page:
    """Per-report context shared by every template (public: the page modules beside this one take it)."""

    def __init__(self, trace: Trace, results: Results, options: ReportOptions):
        self.trace = trace
        self.results = results
        self.options = options
        provenance_dirs = results.provenance.paged_dirs(trace, options.inductor_provenance)
        self.common: dict[str, Any] = {
            "source": trace.source,
            "source_name": os.path.basename(trace.source),
            "rank": trace.rank,
            "artifact_url": lambda a: artifact_url(a, options),
            "provenance_url": lambda c: provenance_url(c.dir_name) if c.dir_name in provenance_dirs else None,
            "up_url": options.up_url,
            "up_label": options.up_label,
            "line_link": self.line_link,
            "source_files": results.sources.files,
            "transformed_url": lambda c: transformed_url(c.dir_name) if c.dir_name in results.transformed else None,
            "metric_rows": lambda rows, long=None, full_url=None, stacks=None, root="", tracebacks=None, elsewhere=None,
            c=None: metric_rows_html(rows, long, full_url, stacks, root, self.frame_link, tracebacks, elsewhere,
                                     lambda found: self.elsewhere_links(found, c, root)),
            "artifact_items": lambda artifacts, roles, root: artifact_items_html(artifacts, roles or {}, root, options),
            "artifact_link": lambda a, root: artifact_link_html(a, root, options),
            "stack_list_html": lambda frames, root: stack_list_html(frames, root, self.frame_link),  # macros.html
            "frame_html": lambda frame, root: Markup(frame_html(frame, root, self.frame_link)),  # macros.html
            "summary_html": self.summary_html,
        }
        self.memo: dict[str, Any] = {}  # what several pages need, worked out once (render/html/provenance.py)
        self.code_urls_of: dict[int, dict[int, str]] = {}  # id(compile) -> _code_urls: once per compile, not per page
        # Runtime metrics records filed under a restarted attempt, by id() of that attempt and of the one that compiled
        owners = results.runtime_records_owners
        self.records_filed_under = {id(o.filed_under): o for o in owners}
        self.records_compiled_in = {id(o.compiled): o for o in owners}

    def elsewhere_links(self, found: MetricElsewhere, c: Compile | None, root: str) -> list[tuple[str, str]]:
        """(url, label) of the pages that show a metric's value whole (MetricElsewhere): its artifacts' readable
        pages (their files where they have none), then the compile's provenance page."""
        if c is None:
            return []
        by_number = {a.number: a for a in c.artifacts}
        links = []
        for number in found.artifacts:
            a = by_number[number]
            url = readable_url(a, self.options) or artifact_url(a, self.options)
            links.append((root + url, url.rsplit("/", 1)[-1]))
        if c.compile_id in self.results.provenance.compiles:
            links.append((root + provenance_url(c.dir_name), "the provenance page"))
        return links

    def summary_html(self, s: Any, c: Compile, code_urls: dict[int, str], root: str) -> Markup:
        """The compile summary (partials/compile_summary.html) of a compile's page, which its compilation metrics
        page leads with too: made once for both (the last one made is kept)."""
        kept = self.memo.get("summary")
        if kept is not None and kept[0] is s and kept[1] == root:
            return kept[2]
        # The template's module holds only the macros, made from what every page shares: once per root, not per
        # compile (making it, with the macros it imports, was ~40 us a page)
        modules = self.memo.setdefault("summary_modules", {})
        module = modules.get(root)
        if module is None:
            module = modules[root] = ENV.get_template("partials/compile_summary.html").make_module({**self.common, "root": root})
        named = {n for split in s.ddp_splits for n in (split.graph, *(number for _, number in split.subgraphs))}
        split_urls = {a.number: artifact_url(a, self.options) for a in c.artifacts if a.number in named} if named else {}
        html = Markup(module.compile_summary(s, c, code_urls, split_urls))  # type: ignore[attr-defined]
        self.memo["summary"] = (s, root, html)
        return html

    def line_link(self, filename: str | None, line: int | None = None) -> LineLink | None:
        """Where every page links a line of code: its source page, else its dumped source (options.line_link)."""
        return line_link(filename, line, self.results.sources, self.trace)

    def frame_link(self, frame: Frame) -> LineLink | None:
        return self.line_link(frame.filename, frame.line)

    def render(self, template: str, root: str, **context: Any) -> str:
        return ENV.get_template(template).render(**self.common, root=root, **context)

    def render_bytes(self, template: str, root: str, **context: Any) -> bytes:
        """render()'s page as UTF-8 (encoded a piece at a time: see _encoded)."""
        return b"".join(self.stream(template, root, **context))

    def stream(self, template: str, root: str, **context: Any) -> Iterator[bytes]:
        """Like render(), in chunks, generated as they are written: for pages that grow with a payload or
        with the log (the index, a compile id's page, provenance), so none is held whole."""
        return _encoded(ENV.get_template(template).generate(**self.common, root=root, **context), STREAM_CHUNK)


def render_html(trace: Trace, results: Results, options: ReportOptions) -> Iterator[Output]:
    page = Page(trace, results, options)
    if wants_export_index(page):  # --export, or a log with torch.export events
        yield "index.html", render_export_index(page)
        yield COMPILE_INDEX, _index(page)
    else:
        yield "index.html", _index(page)
    if options.export:
        yield from guard_pages(page)
    yield "failures_and_restarts.html", later(lambda: _failures(page))
    for entry in trace.compiles.values():
        root = "../"
        if entry.compile_id is not None:
            yield f"{entry.dir_name}/index.html", page.stream(
                "compile.html", root, c=entry, status=results.statuses[entry.compile_id],
                s=results.compiles.get(entry.key), code_urls=_code_urls(page, entry),
                metrics_url=_metrics_url(entry, root, options),
                records_filed_here=page.records_filed_under.get(id(entry)),
                records_filed_elsewhere=page.records_compiled_in.get(id(entry)),
                export_traces=results.export.shared.get(entry.key),
            )
        for artifact in entry.artifacts:
            content = _artifact(page, entry, artifact)  # lazy: only the process that writes it renders it (output.py)
            if content is not None:
                yield artifact_url(artifact, options), content
            if artifact.readable:
                yield readable_url(artifact, options), kernels_page(page, entry, artifact)
    for name, ref in trace.dump_files.items():
        yield dump_file_url(name, trace.dump_pages), _code_page(page, "../", None, name, "dumped source", ref, "python")
    yield from provenance_files(page)
    yield from runtime_files(page)
    yield from source_files(page)
    yield from transformed_files(page)


def _index(page: Page) -> Iterator[bytes]:
    trace, results = page.trace, page.results
    outside = trace.compiles.get(None)
    stats = trace.stats
    problems = [p for p in stats.problems]
    return page.stream(
        "index.html",
        "",
        compiles=trace.sorted_compiles(),
        summaries=results.compiles,
        code_urls={n: url for entry in results.code_linked_compiles for n, url in _code_urls(page, entry).items()},
        statuses=results.statuses,
        status_count_words=results.status_count_words,
        n_compiles=trace.n_compile_ids,
        n_artifacts=trace.next_number,
        failures=results.failures,
        failed_compiles=results.failed_compiles,
        disabled_restarts=results.disabled_restarts,
        insights=results.insights,
        compile_time_chart=CompileTimeChart.from_results(results.insights.compile_time) if results.insights else None,
        runtime=results.runtime,
        trie_tokens=trie_tokens(results.stack_trie),
        outside_stacks=[(group, trie_tokens(group.trie)) for group in results.outside_stacks],
        outside=outside,  # (not no_compile_id: that global is the string that anchors the list)
        # (an AOTInductor package's wrapper and kernels are outputs outside any compile id: named as what they are)
        outside_roles=results.insights.aoti.code_roles() if results.insights else {},
        # The page of each crash's record in the log (run appended it, outside any compilation).
        record_urls={a.number: artifact_url(a, page.options) for a in (outside.artifacts if outside else [])
                     if a.number in results.crash_records},
        dump_files=[(name, dump_file_url(name, trace.dump_pages)) for name in trace.dump_files],
        n_chromium=len(trace.chromium_events),
        unclaimed=len(trace.unclaimed_payloads),
        stats=stats,
        outcomes=[(o, stats.outcomes.get(o, 0)) for o in OUTCOMES],
        problems=problems,
        n_problems=stats.parse_problems,
        **custom_header(page.options.custom_header_html),
    )


def _metrics_url(entry: Compile, root: str, options: ReportOptions) -> str | None:
    """The compilation metrics page whose values the compile's page shows (the full record of its long values):
    the compile's last one, as entry.metrics is (ingest/handlers/metrics.py)."""
    if entry.metrics is None:
        return None
    found = next((a for a in reversed(entry.artifacts) if a.kind == "compilation_metrics"), None)
    return root + artifact_url(found, options) if found is not None else None


def _code_urls(page: Page, entry: Compile | None) -> dict[int, str]:
    """Output code artifact number -> its page (compiler errors link to the failing line there)."""
    if entry is None:
        return {}
    found = page.code_urls_of.get(id(entry))
    if found is None:  # every metrics page of a compile asks: a compile of thousands of artifacts is scanned once
        found = page.code_urls_of[id(entry)] = {a.number: artifact_url(a, page.options)
                                                for a in entry.artifacts if a.display == CODE}
    return found


def _failures(page: Page) -> bytes:
    rows = []
    for row in page.results.failures:
        entry = page.trace.compiles.get(row.compile_id)
        url = None
        if entry is not None and row.metrics_number is not None:
            metrics = next(a for a in entry.artifacts if a.number == row.metrics_number)
            url = artifact_url(metrics, page.options)
        rows.append({"row": row, "key": compile_id_key(row.compile_id), "url": url,
                     "page": f"{entry.dir_name}/index.html" if entry is not None and entry.compile_id is not None else None,
                     "code_urls": _code_urls(page, entry)})
    return page.render_bytes("failures.html", "", rows=rows, noted=page.results.failures_noted)


_METRICS_TITLES = {
    "compilation_metrics": "Compilation metrics",
    "bwd_compilation_metrics": "Backward compilation metrics",
    "aot_autograd_backward_compilation_metrics": "AOTAutograd backward compilation metrics",
    "compilation_metrics_runtime": "Runtime compilation metrics",
    "bwd_compilation_metrics_runtime": "Runtime compilation metrics",  # its heading says backward (RuntimeRecord)
}


def _artifact(page: Page, entry: Compile, artifact: Artifact) -> Iterable[bytes] | None:
    """An artifact's page, as a generator: nothing is read or rendered until it is written."""
    trace = page.trace
    if artifact.display in (LINK, DUMP):
        return None  # links have no page; dumped sources are written once, below
    if artifact.display == TEXT:
        return trace.payload_chunks(artifact.payload)
    if artifact.display == JSON:
        if artifact.payload is not None and artifact.payload.length > PRETTY_LIMIT:
            return trace.payload_chunks(artifact.payload)
        return later(lambda: _pretty_json(trace.payload_text(artifact.payload)))
    if artifact.display == CODE:
        if page.options.plain_text:
            return trace.payload_chunks(artifact.payload)
        subtitle = (artifact.data or {}).get("filename") if isinstance(artifact.data, dict) else None
        summary = page.results.compiles.get(entry.key)
        role = summary.code_roles.get(artifact.number) if summary is not None else None
        title = f"{artifact.name} ({role})" if role else artifact.name
        return _code_page(page, "../", entry, title, subtitle, artifact.payload, artifact.language or "python")
    if artifact.display == METRICS:
        return later(lambda: _metrics_page(page, entry, artifact))
    if artifact.display == GUARDS:
        # The C++ guard tree beside it: some torch versions log this list empty while the tree holds the guards.
        tree = next((a for a in entry.artifacts if a.kind == "dynamo_cpp_guards_str"), None)
        return later(lambda: page.render_bytes("guards.html", "../", c=entry, guards=artifact.data or [],
                                               guard_tree=artifact_file_name(tree, page.options) if tree else None))
    raise ValueError(f"unknown artifact display {artifact.display!r}")


# A JSON string (kept whole) or an exponent's "e+" outside strings.
_STRING_OR_EXPONENT_PLUS = lazy_compile(rb'("[^"\\]*(?:\\.[^"\\]*)*")|e\+')


def _pretty_json(text: str) -> bytes | str:
    """The payload as tlparse writes it (serde_json's to_string_pretty of a Value, whose maps sort their keys)."""
    try:
        out = orjson.dumps(orjson.loads(text), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    except (orjson.JSONDecodeError, TypeError):
        return text  # keep what the log had, even if it is not JSON (or too deeply nested)
    if _has_exponent_plus(out):  # rare: orjson writes 1e+100 where serde_json writes 1e100
        out = _STRING_OR_EXPONENT_PLUS.sub(lambda m: m[1] or b"e", out)
    return out


def _has_exponent_plus(out: bytes) -> bool:
    """Whether "e+" is in out, looked for by its "+" (rare in JSON; a one-byte find is a memchr): searching for "e+"
    itself cost 10M instructions on gpt2_train's 2.5 MB of JSON artifacts, nearly all of which hold none."""
    i = out.find(b"+")
    while i != -1:
        if i and out[i - 1] == 0x65:  # "e"
            return True
        i = out.find(b"+", i + 1)
    return False


def _metrics_page(page: Page, entry: Compile, artifact: Artifact) -> bytes:
    compiled = page.results.compiles.get(entry.key)
    summary = compiled if artifact.kind == "compilation_metrics" else None
    return page.render_bytes(
        "metrics.html", "../", c=entry, metrics=artifact.data or {}, s=summary, code_urls=_code_urls(page, entry),
        title=_METRICS_TITLES.get(artifact.kind, artifact.kind),
        groups=summary.metrics if summary is not None else page.results.metric_pages[artifact.number],
        runtime=compiled.runtime_records.get(artifact.number) if compiled is not None else None,
        owner=_records_owner(page, entry, artifact),
    )


def _records_owner(page: Page, entry: Compile, artifact: Artifact) -> RuntimeRecordsOwner | None:
    """The attempt a runtime metrics record filed under a restarted attempt belongs to (None: it is its entry's)."""
    owner = page.records_filed_under.get(id(entry))
    return owner if owner is not None and artifact.kind in RUNTIME_METRICS else None


def _code_page(page: Page, root: str, entry: Compile | None, title: str, subtitle: str | None,
               ref: PayloadRef | None, language: str) -> Iterator[bytes]:
    """Source with line anchors; Prism colours it in the browser, so writing it costs only escaping.

    Code past HIGHLIGHT_LIMIT is left plain: highlighting it would stall the browser.
    """
    lines = ref.lines if ref is not None else 0
    highlighted = ref is not None and ref.length <= HIGHLIGHT_LIMIT
    note = None if highlighted or ref is None else f"{ref.length:,} bytes: shown without syntax highlighting"
    return page.stream(
        "code.html", root, c=entry, title=title, subtitle=subtitle, note=note,
        language=_PRISM_LANGUAGES.get(language, "python") if highlighted else None,
        script_src=_PRISM_SCRIPT_SRC if highlighted else page_script_src(),
        gutter=_gutter(page, lines),
        code=_escaped_code(page.trace, ref) if ref else (),
    )


GUTTER_BATCH = 4096  # line anchors made at a time
GUTTER_KEPT = 16  # batches of anchors kept for the next page (65,536 lines, ~2.3 MB): every code page starts at line 1


def _gutter(page: Page, lines: int, size: int = GUTTER_BATCH) -> Iterator[Markup]:
    """Line-number anchors (#L12), a batch at a time: a huge payload has millions of lines.

    Every code page's gutter is a prefix of the same text: its first batches are made once per report, and a
    page shorter than a batch takes the head of one (cut before its first anchor past the page's last line)."""
    kept: list[Markup] = page.memo.setdefault("gutter", [])
    for index, start in enumerate(range(1, lines + 1, size)):
        stop = min(start + size, lines + 1)
        if index < len(kept):
            batch = kept[index]
        else:
            batch = _gutter_batch(start, start + size)
            if index == len(kept) and index < GUTTER_KEPT:
                kept.append(batch)
        yield batch if stop == start + size else Markup(batch[:batch.index(f'\n<a id="L{stop}"')])


def _gutter_batch(start: int, stop: int) -> Markup:
    return Markup(("\n" if start > 1 else "") + "\n".join(f'<a id="L{n}" href="#L{n}">{n}</a>' for n in range(start, stop)))


def _escaped_code(trace: Trace, ref: PayloadRef) -> Iterator[Markup]:
    """A payload's text, HTML-escaped a chunk as read at a time (escaping a block at once, by block_escaped, is much
    faster than a line at a time; the text is the same as its lines joined by newlines). The decoder keeps a character cut
    between two chunks for the next."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for data in trace.payload_chunks(ref):
        text = decoder.decode(data)
        if text:
            yield Markup(block_escaped(code_text(text)))
    text = decoder.decode(b"", True)
    if text:
        yield Markup(block_escaped(code_text(text)))


def render_demo_index(examples: list[dict], torch_version: str, live: bool = False) -> str:
    return ENV.get_template("demo_index.html").render(
        root="", source_name="demo", rank=None, examples=examples, torch_version=torch_version, nav_failures=False, live=live
    )

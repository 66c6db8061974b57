"""Provenance pages: three linked panels per compile id, and the kernel -> user source page.

Only formats what analyses.provenance computed; the line maps go to the page as a
JSON island and, unchanged, to ``provenance/<compile-dir>.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

import orjson
from markupsafe import Markup

from ...invisible import one_line
from ...analyses.provenance import CompileProvenance, KernelTrace, ProvenanceSection, UserLine, kernel_anchor
from ...model.trace import Artifact, Compile
from ..options import artifact_url, readable_url
from ...wording import count
from .env import script_hash
from .rows import ascii_parts, block_escaped, code_text, grouped, html_text

if TYPE_CHECKING:
    from . import Page

PANELS = (("pre", "Pre-grad graph", "the graph Inductor received"),
          ("post", "Post-grad graph", "after Inductor's graph passes"),
          ("code", "Generated code", ""))


def provenance_url(compile_dir: str) -> str:
    return f"provenance/{compile_dir}.html"


def panel_line_id(section: int, panel: str, line: int) -> str:
    """The id of a line of a provenance page's panel; as a URL's fragment, the page opens its section and selects it."""
    return f"s{section}-{panel}-L{line}"


def json_island(value: Any) -> Markup:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' can end the element. DEL, C1 controls,
    bidi and zero-width characters are written as JSON's \\u escapes (one_line's, the same characters to JSON.parse):
    the page's finalize (shown_in_html) then finds none to show as a picture, which would change the data (DEL as
    \u2421)."""
    text = one_line(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode())
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def provenance_files(page: Page) -> Iterator[tuple[str, str | bytes | Iterator[bytes]]]:
    for found in page.results.provenance.compiles.values():
        entry = page.trace.compiles[found.compile_id]
        base = provenance_url(found.dir_name)[: -len(".html")]
        yield f"{base}.html", _provenance_page(page, entry, found)
        yield f"{base}.json", _provenance_json(found)
    if page.options.inductor_provenance:  # (-i) tlparse's page for every compile directory, saying so where empty
        # (Provenance.paged_dirs: the pages linking provenance link these)
        for entry in page.results.provenance.unmapped(page.trace):
            yield provenance_url(entry.dir_name), page.render("provenance_empty.html", "../", c=entry)


def _provenance_json(found: CompileProvenance) -> Iterator[bytes]:
    """``orjson.dumps(found.to_json(), option=OPT_INDENT_2)``, a section at a time (the file grows with the
    compile id's graphs: never held whole, nor its JSON form as Python objects)."""
    head = orjson.dumps(found.line_mappings_json(), option=orjson.OPT_INDENT_2)
    yield (head[:-2] + b',\n  "sections": ' if head != b"{}" else b'{\n  "sections": ')
    if not found.sections:
        yield b"[]\n}"
        return
    separator = b"[\n    "
    for s in found.sections:
        yield separator + orjson.dumps(s.to_json(), option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
        separator = b",\n    "
    yield b"\n  ]\n}"


def _moved_note(page: Page, entry: Compile) -> str | None:
    """Where a cache hit's cached graphs and stacks name the lines of an older version of the file (the run that
    filled the cache), what the compile page says of it (CompileSummary.moved_note): these pages show them as logged."""
    summary = page.results.compiles.get(entry.key) if page.results.compiles else None
    return summary.moved_note if summary is not None else None


def _artifacts(entry: Compile) -> dict[int, Artifact]:
    return {a.number: a for a in entry.artifacts}


def _kernel_page_url(page: Page, entry: Compile, section: ProvenanceSection) -> str | None:
    a = _artifacts(entry).get(section.kernel_traces_artifact) if section.kernel_traces_artifact is not None else None
    return readable_url(a, page.options) if a is not None and a.readable else None


def _provenance_page(page: Page, entry: Compile, found: CompileProvenance) -> Iterator[bytes]:
    """The page in parts, a panel at a time: a compile id's page grows with its graphs and code (tens of MB
    for a big model), and is never held whole, as text or as bytes."""
    return page.stream(
        "provenance.html", "../", c=entry, tabs=[_graph_name(section) for section in found.sections],
        moved_note=_moved_note(page, entry),
        several=any(s.number is not None for s in found.sections),
        sections=_sections(page, entry, found), data=_json_island_parts(_section_data(s) for s in found.sections),
        script_src=Markup(f"{script_hash('report.js')} {script_hash('provenance.js')}"),
        json_name=provenance_url(found.dir_name).rsplit("/", 1)[-1][: -len(".html")] + ".json",
    )


def _sections(page: Page, entry: Compile, found: CompileProvenance) -> Iterator[dict[str, Any]]:
    """Each section as the template reaches it."""
    artifacts = _artifacts(entry)
    for si, section in enumerate(found.sections):
        kernel_url = _kernel_page_url(page, entry, section)
        yield {**_graph_name(section), "panels": _panels(page, artifacts, si, section, kernel_url),
               "kernel_url": ("../" + kernel_url) if kernel_url else None, "n_kernels": len(section.own_kernels),
               "n_other": len(section.other_graphs), "aot": section.language == "cpp",
               "inferred": bool(section.inferred_code_to_post),
               "kernel_notes": _kernel_notes(si, section)}


def _kernel_notes(si: int, s: ProvenanceSection) -> list[dict[str, Any]]:
    """What a kernel computes where its name says more (ProvenanceSection.noted_work), as the kernels and source
    pages say it: each kernel with the anchor of the first line of the generated code that calls it."""
    notes = []
    for work, line in s.noted_calls:
        notes.append({"kernel": work.kernel, "note": work.note,
                      "anchor": panel_line_id(si, "code", line) if line is not None else None})
    return notes


def _graph_name(s: ProvenanceSection) -> dict[str, Any]:
    """A section's name (its label) and its tooltip: torch's AOT ID, which the generated code's first line says."""
    return {"label": s.label, "aot_id": s.title if s.graph is not None else None}


def _panels(page: Page, artifacts: dict[int, Artifact], si: int, s: ProvenanceSection,
            kernel_url: str | None) -> Iterator[dict[str, Any]]:
    """A section's panels, each one's lines built only when the template writes it."""
    # (here: the line maps' module is for a log with provenance, not every report's start-up)
    from ...analyses.provenance.line_mappings import panel_lines

    mapped = s.mapped_lines()
    traced = {k.name for k in s.kernels}
    for key, title, what in PANELS:
        panel = getattr(s, key)
        a = artifacts.get(panel.artifact_number) if panel.artifact_number is not None else None
        yield {
            "key": key, "title": title, "what": what if key != "code" else ("C++ wrapper (AOTInductor)" if s.language == "cpp" else "Python wrapper"),
            "name": panel.title, "url": ("../" + artifact_url(a, page.options)) if a is not None else None,
            "missing": panel.artifact_number is None,
            "lines_html": _panel_lines_html(f"s{si}-{key}", panel_lines(page.trace, panel, _escaped_code), mapped[key],
                                            s.code_kernels if key == "code" else {}, kernel_url, traced,
                                            s.kernel_notes),
        }


def _escaped_code(text: str) -> str:
    """A panel's graph or code HTML-escaped, shown as the code pages show it (code_text: a form feed as a space, not
    ␌); line ends kept, as panel_lines needs."""
    return block_escaped(code_text(text))


def _section_data(s: ProvenanceSection) -> dict[str, Any]:
    return {
        "preToPost": _as_dict(s.mappings["preToPost"]), "postToPre": _as_dict(s.mappings["postToPre"]),
        "codeToPost": _as_dict(s.code_to_post), "postToCode": _as_dict(s.post_to_code),
        "inferredCodeToPost": _as_dict(s.inferred_code_to_post), "inferredPostToCode": _as_dict(s.inferred_post_to_code),
    }


def _as_dict(line_map: Mapping[int, list[int]]) -> dict[int, list[int]]:
    """A line map as orjson writes it (the results keep them packed: analyses/line_map.py)."""
    return line_map if isinstance(line_map, dict) else dict(line_map.items())


def _json_island_parts(values: Iterable[Any]) -> Iterator[Markup]:
    """json_island of the list of values, an item at a time (the same text: orjson writes a list with
    bare commas)."""
    separator = Markup("[")
    for value in values:
        yield separator
        yield json_island(value)
        separator = Markup(",")
    yield Markup("]") if separator == "," else Markup("[]")


def _panel_lines_html(prefix: str, escaped: list[str], mapped: set[int] | frozenset[int],
                      code_kernels: dict[int, Any], kernel_url: str | None, traced: set[str],
                      notes: Mapping[str, str] | None = None) -> Iterator[Markup]:
    """One panel's lines (escaped: HTML-escaped, a panel at a time by panel_lines) as HTML, built here rather than
    in a template loop: a panel can hold tens of thousands of lines, and per-line template calls were most of a
    provenance page's time. Names and URLs are escaped one by one. In parts: see _rows_apart. notes: what a kernel
    computes where its name says more, in its link's title."""
    notes = notes or {}
    links: dict[int, str] = {}  # only a few lines call kernels: their links are made apart from the line loop
    if kernel_url:
        for n, names in code_kernels.items():
            html = "".join(f'<a class="kl" href="{html_text(f"../{kernel_url}#{kernel_anchor(name)}")}" '
                           f'title="the user source lines {html_text(name)} came from'
                           f'{html_text("; " + notes[name]) if name in notes else ""}">{html_text(name)} \u2197</a>'
                           for name in names if name in traced)
            if html:
                links[n] = html
    plain, bold = f'<div class="pl" id="{prefix}-L', f'<div class="pl m" id="{prefix}-L'
    # Each line's number made text once, not formatted three times a row: the row's f-string then only copies str.
    numbers = list(map(str, range(1, len(escaped) + 1)))
    heads = [bold if n in mapped else plain for n in range(1, len(escaped) + 1)]
    rows = [f'{head}{n}" data-n="{n}"><span class="ln">{n}</span><span class="lt">{text}</span></div>'
            for head, n, text in zip(heads, numbers, escaped)]
    linked = sorted(n for n in links if 0 < n <= len(rows))
    for n in linked:
        rows[n - 1] = f"{rows[n - 1][:-len('</div>')]}{links[n]}</div>"
    return _rows_apart(rows, linked)


PANEL_ROWS = 1024  # rows of a panel joined into one part


def _rows_apart(rows: list[str], apart: list[int]) -> Iterator[Markup]:
    """rows in parts of PANEL_ROWS, each row numbered in apart (from 1, in order: a line's kernel links, never ASCII)
    a part of its own, so finalize looks for invisible characters in those rows alone (for control characters in
    all). A part of the other rows is ASCII nearly always (one isascii for the part, not one per row); one that is
    not is taken apart by ascii_parts."""
    start = 0
    for n in [*apart, len(rows) + 1]:
        for first in range(start, n - 1, PANEL_ROWS):
            part = "".join(rows[first:min(first + PANEL_ROWS, n - 1)])
            if part.isascii():
                yield Markup(part)
            else:
                yield from ascii_parts(rows[first:min(first + PANEL_ROWS, n - 1)])
        if n <= len(rows):
            yield Markup(rows[n - 1])
        start = n


def kernels_page(page: Page, entry: Compile, artifact: Artifact) -> Iterator[bytes]:
    """The readable page of ``inductor_provenance_tracking_kernel_stack_traces``, in parts."""
    kernels = page.results.provenance.kernels.get(artifact.number, [])
    calls = _kernel_calls(page, entry).get(artifact.number, {})
    others = _other_graphs(page, entry, artifact.number)
    found = page.results.provenance.compiles.get(entry.compile_id)
    section = next((s for s in found.sections if s.kernel_traces_artifact == artifact.number), None) if found else None
    notes = section.kernel_notes if section is not None else {}
    return page.stream("kernels.html", "../", c=entry, n_kernels=len(kernels), n_other=len(others),
                       aot=section is not None and section.language == "cpp", moved_note=_moved_note(page, entry),
                       rows_html=_kernel_rows_html(page, kernels, calls, others, notes))


def _other_graphs(page: Page, entry: Compile, artifact: int) -> dict[str, str]:
    """The kernels the section of this stack traces artifact lists for another graph (ProvenanceSection.other_graphs):
    name -> the note its row shows, as HTML, linking to its row on the page of the graph whose code calls it."""
    found = page.results.provenance.compiles.get(entry.compile_id)
    section = next((s for s in found.sections if s.kernel_traces_artifact == artifact), None) if found else None
    if section is None:
        return {}
    notes = {}
    for name in section.other_graphs:
        ref = section.called_by.get(name)
        if ref is None:
            notes[name] = "not called by this graph's code"
            continue
        caller = page.results.provenance.compiles.get(ref.compile_id)
        caller_entry = page.trace.compiles.get(ref.compile_id)
        url = (_kernel_page_url(page, caller_entry, caller.sections[ref.section])
               if caller is not None and caller_entry is not None and ref.section < len(caller.sections) else None)
        label = html_text(ref.label)
        if url:
            label = f'<a href="../{html_text(url)}#{html_text(kernel_anchor(name))}">{label}</a>'
        notes[name] = f"listed by torch for this graph, but called by another graph's code: {label}"
    return notes


def _kernel_calls(page: Page, entry: Compile) -> dict[int, dict[str, list[str]]]:
    """Stack traces artifact -> kernel -> where it is called, when a provenance page shows this compile id.

    Worked out once per compile id, not once per kernel page (a compile id may have hundreds of each). Only the
    last compile id's is kept: its kernel pages are written together, and keeping every compile id's (URLs for
    each kernel call) grew the writing processes by ~3 KB a compile."""
    cache = page.memo.get("kernel_calls")
    if cache is not None and entry.compile_id in cache:
        return cache[entry.compile_id]
    cache = page.memo["kernel_calls"] = {}
    result: dict[int, dict[str, list[str]]] = {}
    found = page.results.provenance.compiles.get(entry.compile_id)
    if found is not None:
        url = f"../{provenance_url(found.dir_name)}"
        for i, s in enumerate(found.sections):
            if s.kernel_traces_artifact is None:
                continue
            calls = result.setdefault(s.kernel_traces_artifact, {})
            for line, names in sorted(s.code_kernels.items()):
                for name in names:
                    calls.setdefault(name, []).append(f"{url}#{panel_line_id(i, 'code', line)}")
    cache[entry.compile_id] = result
    return result


def _kernel_rows_html(page: Page, kernels: list[KernelTrace], calls: dict[str, list[str]],
                      others: dict[str, str] | None = None, notes: dict[str, str] | None = None) -> Iterator[Markup]:
    """The kernel table's rows, built here rather than in a template loop (thousands of rows, each with several
    stacks), in parts. Kernels share most user lines and stack traces: each is escaped once per page.
    others: the rows of another graph's kernels (_other_graphs), each with its note. notes: what a kernel computes,
    where its name says more (ProvenanceSection.kernel_notes)."""
    return grouped(_kernel_rows(page, kernels, calls, others or {}, notes or {}))


def _kernel_rows(page: Page, kernels: list[KernelTrace], calls: dict[str, list[str]],
                 others: dict[str, str], notes: dict[str, str]) -> Iterator[str]:
    seen: dict[Any, str] = {}
    for k in kernels:
        links = "".join(f'<br><a href="{html_text(url)}" title="where it is called, in the provenance view">call site {n}</a>'
                        for n, url in enumerate(calls.get(k.name, ()), 1))
        if k.name in notes:
            links += f'<div class="kernel-note">{html_text(notes[k.name])}</div>'
        other = others.get(k.name)
        row_class = ""
        if other is not None:  # greyed, and said why: its time and lines are another graph's
            links += f'<div class="other-graph-note">{other}</div>'
            row_class = ' class="other-graph"'
        handle = html_text(k.debug_handle) if k.debug_handle is not None else "\u2013"
        user = "".join([seen.get((u.file, u.line, u.function, u.code)) or _user_line_kept(seen, page, u)
                        for u in k.user_lines]) or '<span class="muted">no stack trace</span>'
        stacks = ""
        if k.traces:
            stacks = (f"<details><summary>{html_text(count(len(k.traces), 'stack'))}</summary>"
                      + "".join([seen.get(t) or _stack_kept(seen, t) for t in k.traces]) + "</details>")
        yield (f'<tr id="{html_text(k.anchor)}"{row_class}>\n<td class="mono">{html_text(k.kernel)}{links}</td>\n'
               f'<td class="mono">{handle}</td>\n<td>{user}</td>\n<td>{stacks}</td></tr>\n')


# A page's user lines and stack traces as HTML, each made once (never ""): by the user line's key, or the trace's text.
def _user_line_kept(seen: dict[Any, str], page: Page, u: UserLine) -> str:
    html = seen[(u.file, u.line, u.function, u.code)] = _user_line_html(page, u)
    return html


def _stack_kept(seen: dict[Any, str], trace: str) -> str:
    html = seen[trace] = f"<pre>{html_text(code_text(trace))}</pre>"  # (a traceback quotes code: a form feed as a space)
    return html


def _user_line_html(page: Page, u: UserLine) -> str:
    link = page.line_link(u.file, u.line)
    short = html_text(u.short)
    html = (f'<div class="mono"><a href="../{html_text(link.url)}" title="{html_text(link.title)}">{short}</a>'
            if link else f'<div class="mono"><span title="{html_text(u.file)}">{short}</span>')
    if u.function:
        html += f' <span class="fn">in {html_text(u.function)}</span>'
    html += "</div>\n"
    if u.code:
        html += f"<pre>    {html_text(code_text(u.code))}</pre>"  # (a form feed as the code pages show it)
    return html

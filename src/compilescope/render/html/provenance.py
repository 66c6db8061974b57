"""Provenance pages: three linked panels per compile id, and the kernel -> user source page.

Only formats what analyses.provenance computed; the line maps go to the page as a
JSON island and, unchanged, to ``provenance/<compile-dir>.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

import orjson
from markupsafe import Markup, escape

from ...analyses.provenance import CompileProvenance, ProvenanceSection, kernel_anchor, panel_lines
from ...model.trace import Artifact, Compile
from ..options import artifact_url, readable_url
from .env import _script_hash

if TYPE_CHECKING:
    from . import _Page

PANELS = (("pre", "Pre-grad graph", "the graph Inductor received"),
          ("post", "Post-grad graph", "after Inductor's graph passes"),
          ("code", "Generated code", ""))


def provenance_url(compile_dir: str) -> str:
    return f"provenance/{compile_dir}.html"


def json_island(value: Any) -> Markup:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' can end the element."""
    text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def provenance_files(page: _Page) -> Iterator[tuple[str, str | bytes]]:
    for found in page.results.provenance.compiles.values():
        entry = page.trace.compiles[found.compile_id]
        base = provenance_url(found.dir_name)[: -len(".html")]
        yield f"{base}.html", _provenance_page(page, entry, found)
        yield f"{base}.json", orjson.dumps(found.to_json(), option=orjson.OPT_INDENT_2)


def _artifacts(entry: Compile) -> dict[int, Artifact]:
    return {a.number: a for a in entry.artifacts}


def _kernel_page_url(page: _Page, entry: Compile, section: ProvenanceSection) -> str | None:
    a = _artifacts(entry).get(section.kernel_traces_artifact) if section.kernel_traces_artifact is not None else None
    return readable_url(a, page.options) if a is not None and a.readable else None


def _provenance_page(page: _Page, entry: Compile, found: CompileProvenance) -> str:
    artifacts = _artifacts(entry)
    sections = []
    for si, s in enumerate(found.sections):
        mapped = s.mapped_lines()
        kernel_url = _kernel_page_url(page, entry, s)
        traced = {k.name for k in s.kernels}
        panels = []
        for key, title, what in PANELS:
            panel = getattr(s, key)
            a = artifacts.get(panel.artifact_number) if panel.artifact_number is not None else None
            panels.append({
                "key": key, "title": title, "what": what if key != "code" else ("C++ wrapper (AOTInductor)" if s.language == "cpp" else "Python wrapper"),
                "name": panel.title, "url": ("../" + artifact_url(a, page.options)) if a is not None else None,
                "lines_html": _panel_lines_html(f"s{si}-{key}", panel_lines(page.trace, panel), mapped[key],
                                                s.code_kernels if key == "code" else {}, kernel_url, traced),
            })
        sections.append({"title": s.title, "panels": panels, "kernel_url": ("../" + kernel_url) if kernel_url else None,
                         "n_kernels": len(s.kernels), "inferred": bool(s.inferred_code_to_post)})
    data = [{
        "preToPost": s.mappings["preToPost"], "postToPre": s.mappings["postToPre"],
        "codeToPost": s.code_to_post, "postToCode": s.post_to_code,
        "inferredCodeToPost": s.inferred_code_to_post, "inferredPostToCode": s.inferred_post_to_code,
    } for s in found.sections]

    return page.render(
        "provenance.html", "../", c=entry, sections=sections, data=json_island(data),
        script_src=Markup(f"{_script_hash('report.js')} {_script_hash('provenance.js')}"),
        json_name=provenance_url(found.dir_name).rsplit("/", 1)[-1][: -len(".html")] + ".json",
    )


def _panel_lines_html(prefix: str, texts: Iterable[str], mapped: set[int] | frozenset[int],
                      code_kernels: dict[int, Any], kernel_url: str | None, traced: set[str]) -> Markup:
    """One panel's lines as HTML, built here rather than in a template loop: a panel can hold
    tens of thousands of lines, and per-line template calls were most of a provenance page's time.
    Text is escaped a panel at a time; names and URLs one by one."""
    texts = list(texts)
    escaped = str(escape("\n".join(texts))).split("\n") if texts else []
    out = []
    for n, text in enumerate(escaped, 1):
        links = ""
        for name in code_kernels.get(n, ()):
            if kernel_url and name in traced:
                url = escape(f"../{kernel_url}#{kernel_anchor(name)}")
                links += (f'<a class="kl" href="{url}" title="the user source lines {escape(name)} came from">'
                          f"{escape(name)} \u2197</a>")
        cls = "pl m" if n in mapped else "pl"
        out.append(f'<div class="{cls}" id="{prefix}-L{n}" data-n="{n}"><span class="ln">{n}</span>'
                   f'<span class="lt">{text}</span>{links}</div>')
    return Markup("".join(out))


def kernels_page(page: _Page, entry: Compile, artifact: Artifact) -> str:
    """The readable page of ``inductor_provenance_tracking_kernel_stack_traces``."""
    kernels = page.results.provenance.kernels.get(artifact.number, [])
    # Where each kernel is called, when a provenance page shows this compile id.
    calls: dict[str, list[str]] = {}
    found = page.results.provenance.compiles.get(entry.compile_id)
    if found is not None:
        for i, s in enumerate(found.sections):
            if s.kernel_traces_artifact != artifact.number:
                continue
            for line, names in sorted(s.code_kernels.items()):
                for name in names:
                    calls.setdefault(name, []).append(f"../{provenance_url(found.dir_name)}#s{i}-code-L{line}")
    rows = [{"k": k, "calls": calls.get(k.name, [])} for k in kernels]
    return page.render("kernels.html", "../", c=entry, kernels=rows, frame_link=page.frame_url)

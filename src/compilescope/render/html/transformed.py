"""The transformed-code page of a compile id: the code Dynamo runs instead of the function, next to its source."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from markupsafe import Markup, escape

from ...lazy_regex import lazy_compile
from ...analyses.transformed import TransformedCode, original_lines
from ..content import later
from ..options import artifact_url

if TYPE_CHECKING:
    from . import Page

_COMPILED_FN = lazy_compile(r"__compiled_fn_\w+")


def transformed_url(dir_name: str) -> str:
    return f"{dir_name}/transformed_code.html"


def transformed_files(page: Page) -> Iterator[tuple[str, Iterator[bytes]]]:
    for dir_name, code in page.results.transformed.items():
        yield transformed_url(dir_name), later(lambda code=code: _page(page, code))  # type: ignore[misc]


def _unquoted(first: int, last: int) -> Markup:
    lines = "" if first == last else f" (lines {first}–{last})"
    return Markup(f"<span class=muted>⋯ not quoted in the log{lines}</span>")


def _linked_source(page: Page, code: TransformedCode) -> Markup:
    graph = "../" + artifact_url(code.graph_artifact, page.options) if code.graph_artifact is not None else None
    text = str(escape(code.source))
    if graph:
        text = _COMPILED_FN.sub(lambda m: f'<a href="{escape(graph)}" title="the graph this calls">{m.group(0)}</a>', text)
    return Markup(text)


def _page(page: Page, code: TransformedCode) -> bytes:
    rows, source = original_lines(code, page.results.sources)
    source_page = source.page if source is not None else None
    original = Markup("".join(
        f'<div><a class="ln" href="../{escape(source_page)}#{row.anchor}">{row.first}</a> '
        f'{escape(row.text) if row.text is not None else _unquoted(row.first, row.last)}</div>'
        for row in rows)) if source_page else None
    artifact = code.guards_artifact
    guards = ({"url": "../" + artifact_url(artifact, page.options),
               "text": page.trace.payload_text(artifact.payload) if code.guards_inline else None,
               "lines": artifact.payload.lines if artifact.payload is not None else 0}
              if artifact is not None else None)
    return page.render_bytes("transformed.html", "../", t=code, code_html=_linked_source(page, code), original=original,
                       source_page=source_page, guards=guards)

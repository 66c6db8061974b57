"""The "Draft Export Report" page (tlparse's ``--export`` index), from analyses.export.ExportReport."""

from __future__ import annotations

from typing import Any, Iterator

from .env import custom_header

# Where the torch.compile index goes when the export page takes index.html.
COMPILE_INDEX = "compile_report.html"
INLINE_PROGRAM_CHARS = 200_000  # longer exported programs are shown cut, with a link to the whole file


def wants_export_index(page: Any) -> bool:
    """--export asked for it, or the log holds torch.export events."""
    return bool(page.options.export or page.results.export.detected)


def render_export_index(page: Any) -> str:
    trace, results = page.trace, page.results
    report = results.export
    programs = []
    for artifact in report.exported_programs:
        text = trace.payload_text(artifact.payload)
        programs.append((artifact, text[:INLINE_PROGRAM_CHARS], len(text) > INLINE_PROGRAM_CHARS))
    stats = trace.stats
    return page.render(
        "export.html",
        "",
        export=report,
        asked=page.options.export,
        guard_page_urls=report.guard_page_urls(page.options.export),
        programs=programs,
        compiles=trace.sorted_compiles(),
        n_compiles=trace.n_compile_ids,
        statuses=results.statuses,
        compile_index=COMPILE_INDEX,
        stats=stats,
        outcomes=[(o, n) for o, n in stats.outcomes.items() if n],
        n_problems=stats.parse_problems,
        **custom_header(page.options.custom_header_html),
    )


def guard_pages(page: Any) -> Iterator[tuple[str, str]]:
    """Under --export, tlparse's page for each guard it shows (analyses.export ExportReport.guard_pages): the issue's
    details, as the export index shows them."""
    listed_as = {id(issue): n for n, issue in enumerate(page.results.export.issues, 1)}  # (its number on the index)
    for issue, path in page.results.export.guard_pages:
        yield path, page.render("symbolic_guard.html", "../", issue=issue, index=listed_as[id(issue)])

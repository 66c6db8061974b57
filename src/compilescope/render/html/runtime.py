"""The Runtime page: where the profiled time went, by kernel, graph and user line.

Only formats what analyses.runtime computed; here the rows get their links (the
output code that defines a kernel, the compile's provenance page, the source view).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from ...analyses.provenance import kernel_anchor
from ...wording import format_us
from ..options import artifact_url, readable_url
from .provenance import provenance_url

if TYPE_CHECKING:
    from ...analyses.runtime import KernelRow
    from . import Page

RUNTIME_PAGE = "runtime.html"


def _code_url(page: Page, row: KernelRow) -> str | None:
    entry = page.trace.compiles.get(row.compile_id)
    if entry is None or row.code_artifact is None:
        return None
    for a in entry.artifacts:
        if a.number == row.code_artifact:
            return artifact_url(a, page.options) + (f"#L{row.code_line}" if row.code_line else "")
    return None


def _stacks_url(page: Page, row: KernelRow) -> str | None:
    """The kernel's entry on the page of its user stack traces (provenance)."""
    entry = page.trace.compiles.get(row.compile_id)
    if entry is None or row.stacks_artifact is None or row.stacks_name is None:
        return None
    for a in entry.artifacts:
        if a.number == row.stacks_artifact and a.readable:
            return f"{readable_url(a, page.options)}#{kernel_anchor(row.stacks_name)}"
    return None


def _compile_url(page: Page, row_compile_id) -> str | None:
    entry = page.trace.compiles.get(row_compile_id)
    return f"{entry.dir_name}/index.html" if entry is not None and row_compile_id is not None else None


def _provenance_url(page: Page, compile_id) -> str | None:
    found = page.results.provenance.compiles.get(compile_id)
    return provenance_url(found.dir_name) if found is not None and compile_id is not None else None


def runtime_files(page: Page) -> Iterator[tuple[str, str]]:
    runtime = page.results.runtime
    if not runtime:
        return
    from ...analyses.runtime import EXTERN, INDUCTOR  # here: a report without a profile does not import it

    profiles = []
    for p in runtime.profiles:
        kernels = [{
            "row": k, "kind": k.kind_label, "code_url": _code_url(page, k), "stacks_url": _stacks_url(page, k),
            "compile_url": _compile_url(page, k.compile_id),
            # a wrapper's kernel (an input copy) is no kernel of the output code that provenance maps
            "provenance_url": _provenance_url(page, k.compile_id) if k.kind in (INDUCTOR, EXTERN) else None,
            "lines": [(u, page.line_link(u.file, u.line)) for u in k.user_lines],
        } for k in p.kernels]
        graphs = [{"row": g, "compile_url": _compile_url(page, g.compile_id),
                   "provenance_url": _provenance_url(page, g.compile_id)} for g in p.graphs]
        lines = [{"row": r, "link": page.line_link(r.file, r.line)} for r in p.lines]
        profiles.append({"p": p, "kernels": kernels, "graphs": graphs, "lines": lines})
    yield RUNTIME_PAGE, page.render("runtime.html", "", profiles=profiles, comparison=runtime.comparison, us=_us_unbroken)


def _us_unbroken(us: float) -> str:
    """format_us's time with a no-break space before its unit: in a narrow column "33 ms" wrapped to "33" above
    "ms"."""
    return format_us(us).replace(" ", "\u00a0")

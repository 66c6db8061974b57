"""A provenance page grows with its compile id's graphs and code (16 MB for a log of 100 copies of a real run):
it is written as it is built, a panel at a time, never held as one string (issue 19: peak memory)."""

from __future__ import annotations

import orjson

from compilescope.analyses.analyze import analyze
from compilescope.analyses.provenance import line_mappings
from compilescope.ingest.reader import read_trace
from compilescope.render import html
from compilescope.render.options import ReportOptions
from compilescope.render.report import report_files

from ..conftest import record_calls, torch213


def test_the_provenance_page_is_built_while_it_is_written(monkeypatch):
    built = record_calls(monkeypatch, line_mappings, "panel_lines", lambda trace, panel, *_: panel.title)
    monkeypatch.setattr(html, "STREAM_CHUNK", 4096)
    with read_trace(str(torch213("provenance.log"))) as trace:
        results = analyze(trace)
        files = dict(report_files(trace, results, ReportOptions()))
        found = results.provenance.compiles[next(c for c in results.provenance.compiles)]
        page = files[f"provenance/{found.dir_name}.html"]
        assert not isinstance(page, (str, bytes))
        n_panels = 3 * len(found.sections)
        assert n_panels == 6 and built == []  # nothing of it is built before it is written
        sizes, progress = [], []  # each chunk's size, and how many panels were built when it came out
        for chunk in page:
            sizes.append(len(chunk))
            progress.append(len(built))
        assert len(built) == n_panels
        # Chunks come out between panels: the page is never built whole first.
        assert progress[0] < n_panels and len(set(progress)) > 2, progress
        total = sum(sizes)
        assert len(sizes) > 4 and max(sizes) < total / 4, sizes
        # The JSON beside it is written a section at a time, as the same bytes as the whole document.
        json_file = files[f"provenance/{found.dir_name}.json"]
        assert not isinstance(json_file, (str, bytes))
        assert b"".join(json_file) == orjson.dumps(found.to_json(), option=orjson.OPT_INDENT_2)


def test_pages_that_grow_with_the_log_are_streamed():
    """The index, a compile id's page, the kernels page and the source pages: generated as they are written."""
    with read_trace(str(torch213("provenance.log"))) as trace:
        results = analyze(trace)
        files = dict(report_files(trace, results, ReportOptions()))
        entry = trace.compiles[next(c for c in trace.compiles if c is not None)]
        readable = [name for name in files if name.endswith("_readable.html")]
        sources = [name for name in files if name.startswith("sources/")]
        assert readable and sources  # the kernels page, the user's source files
        for name in ["index.html", f"{entry.dir_name}/index.html", *readable, *sources]:
            assert not isinstance(files[name], (str, bytes)), name
            text = b"".join(files[name]).decode()
            assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>"), name

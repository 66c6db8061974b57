"""The Python API: ``compilescope.load(path)``, ``compilescope.analyze(path)``, ``compilescope.report(path, out=...)``.

(``compilescope.capture()`` is in capture.py.) Neither needs torch.
"""

from __future__ import annotations

import os
from typing import Union

from .analyses import Results
from .errors import OutputExistsError
from .analyses import analyze as analyze_trace
from .ingest.discover import discover
from .ingest.reader import read_trace
from .model.trace import Trace
from .render.options import ReportOptions

PathLike = Union[str, "os.PathLike[str]"]


def load(path: PathLike) -> Trace:
    """Read a TORCH_TRACE log (a file, a .gz, or a directory: its newest log) into the trace model.

    The Trace keeps its payloads in a temporary spool: close it when done, or use
    ``with compilescope.load(path) as trace: ...``.
    """
    found = discover(os.fspath(path))
    return read_trace(found.chosen)


def analyze(source: PathLike | Trace) -> Results:
    """Every analysis of a log (a path, as load() takes it, or a Trace): the value every report is made from.

    ``results.to_json()`` is its exact saved form (``Results.from_json`` reads it back). The Results keeps the
    trace: close it when done, or use ``with compilescope.analyze(path) as results: ...``.
    """
    return analyze_trace(source if isinstance(source, Trace) else load(source))


def report(
    source: PathLike | Trace,
    out: PathLike = "tl_out",
    *,
    overwrite: bool = False,
    plain_text: bool = False,
    custom_header_html: str = "",
    profiles: "list[PathLike] | tuple[PathLike, ...]" = (),
) -> str:
    """Write the HTML report of a log (or of a Trace from load()) to out; returns the path of its index.html.

    Like the command line, it refuses to replace an existing, non-empty out unless overwrite=True.
    profiles: torch.profiler Chrome traces of the same run (``--profile``): adds the Runtime page.
    """
    from .analyses import analyze
    from .ingest.profile import read_profile
    from .report_writer import write_report  # writes through OutputDir, confined to out

    options = ReportOptions(plain_text=plain_text, custom_header_html=custom_header_html)
    read = [read_profile(os.fspath(p)) for p in profiles]
    try:
        if isinstance(source, Trace):
            output = write_report(source, os.fspath(out), overwrite, options, analyze(source, read) if read else None)
        else:
            with load(source) as trace:
                output = write_report(trace, os.fspath(out), overwrite, options, analyze(trace, read) if read else None)
    except OutputExistsError as exc:
        raise exc.for_python() from None
    return os.path.join(output.path, "index.html")

"""The Python API: ``compilescope.load(path)``, ``compilescope.analyze(path)``, ``compilescope.report(path, out=...)``.

(``compilescope.capture()`` is in capture.py.) Neither needs torch.
"""

from __future__ import annotations

import os
from typing import Iterable, Union

from .analyses.results import Results
from .errors import CompilescopeError, OutputExistsError
from .analyses.analyze import analyze as analyze_trace
from .ingest.discover import discover
from . import location
from .ingest.reader import read_trace
from .location import local_output
from .model.trace import Trace
from .render.options import ReportOptions

PathLike = Union[str, "os.PathLike[str]"]
Profiles = Union[PathLike, "Iterable[PathLike]", None]


def load(path: PathLike) -> Trace:
    """Read a TORCH_TRACE log (a file, a .gz, or a directory: its newest log) into the trace model.

    The Trace keeps its payloads in a temporary spool: close it when done, or use
    ``with compilescope.load(path) as trace: ...``.
    """
    found = discover(_path(path, "a log"))
    return read_trace(found.chosen)


def analyze(source: PathLike | Trace, profiles: Profiles = ()) -> Results:
    """Every analysis of a log (a path, as load() takes it, or a Trace): the value every report is made from.

    ``results.to_json()`` is its exact saved form (``Results.from_json`` reads it back). The Results keeps the
    trace: close it when done, or use ``with compilescope.analyze(path) as results: ...``.
    profiles: torch.profiler Chrome traces of the same run (``--profile``): adds ``results.runtime``.
    """
    read = _read_profiles(profiles)
    if isinstance(source, Trace):
        return analyze_trace(_open(source), read)
    return analyze_trace(load(source), read)


def report(
    source: PathLike | Trace | Results,
    out: PathLike = "tl_out",
    *,
    overwrite: bool = False,
    plain_text: bool = False,
    custom_header_html: str = "",
    profiles: Profiles = (),
) -> str:
    """Write the HTML report to out; returns the path of its index.html (out a URL: the URL of its index.html).

    source: a log (a path, as load() takes it), a Trace from load(), the Results of analyze() (reported as they
    are, not analysed again), or an analysis saved with ``compilescope LOG --save`` (as ``report --load``).
    out: a directory, or a URL that fsspec knows (s3://, memory://, ...), written by the command line's rules.
    Like the command line, it refuses to replace an existing, non-empty out unless overwrite=True, and never one that
    holds the log (or the saved analysis) being reported.
    profiles: torch.profiler Chrome traces of the same run (``--profile``): adds the Runtime page.
    """
    from .output import REPORT_PAGE, report_destination, saved_analysis_input
    from .report_writer import write_report, write_saved_report  # write through OutputDir, confined to out

    options = ReportOptions(plain_text=plain_text, custom_header_html=custom_header_html)
    read = _read_profiles(profiles)
    out = local_output(_path(out, "out"))  # (a file:// URL: the local path it names)
    try:
        if isinstance(source, Results):
            if read:
                raise CompilescopeError("profiles go with a log or a Trace: the Results were analysed already "
                                        "(give the profiles to analyze())")
            if source.trace is None:
                raise CompilescopeError("these Results hold no trace: nothing to report")
            trace = _open(source.trace)
            with report_destination(out, overwrite, keep=[trace.source]) as local_out:
                output = write_report(trace, local_out, overwrite, options, source)
        elif isinstance(source, Trace):
            with report_destination(out, overwrite, keep=[_open(source).source]) as local_out:
                output = write_report(source, local_out, overwrite, options, analyze_trace(source, read) if read else None)
        else:
            path = _path(source, "source")
            if _is_saved_analysis(path):
                if read:
                    raise CompilescopeError(f"{path} is a saved analysis: profiles go with a log")
                with report_destination(out, overwrite, keep=[saved_analysis_input(path)]) as local_out:
                    output, _, _ = write_saved_report(path, local_out, overwrite, options)  # (the no-log note: the CLI's)
            else:
                with load(path) as trace, report_destination(out, overwrite, keep=[trace.source]) as local_out:
                    output = write_report(trace, local_out, overwrite, options, analyze_trace(trace, read) if read else None)
    except OutputExistsError as exc:
        raise exc.for_python() from None
    return location.join(out, REPORT_PAGE) if location.is_url(out) else os.path.join(output.path, REPORT_PAGE)


def _is_saved_analysis(path: str) -> bool:
    """A file `--save` wrote (or json.dump of to_json()): JSON whose first key says so."""
    from .ingest.saved import is_saved_analysis

    return os.path.isfile(path) and is_saved_analysis(path)


def _path(value: object, what: str) -> str:
    try:
        return os.fspath(value)  # type: ignore[call-overload]
    except TypeError:
        raise CompilescopeError(f"{what}: a path expected (str or os.PathLike), not {type(value).__name__}") from None


def _open(trace: Trace) -> Trace:
    if trace.closed:
        raise CompilescopeError(f"the Trace of {trace.source} is closed (its payloads are gone): load the log again")
    return trace


def _read_profiles(profiles: Profiles) -> list:
    """The profiles, read: one path, or several (a str is one path, not its characters); None: none."""
    if profiles is None:
        profiles = ()
    if isinstance(profiles, (str, bytes, os.PathLike)):
        profiles = [profiles]
    paths = [_path(p, "profiles") for p in profiles]
    if not paths:
        return []
    from .ingest.profile import read_profile

    return [read_profile(p) for p in paths]

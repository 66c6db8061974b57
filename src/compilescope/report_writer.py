"""One log's report: write every file of it, and save or load its analysis (--save / --load).

A single report (cli/report.py), the API and the per-log worker of batches and
ranks (worker.py) all write through here. Writing goes through OutputDir
(output.py), confined to the report's directory.
"""

from __future__ import annotations

import itertools
from typing import Iterable, Iterator

import orjson

from .analyses import Results, analyze
from .errors import CompilescopeError
from .ingest.reader import is_gzip, open_stored_log
from .model.codec import CodecError, decode, encode
from .model.trace import Trace
from .output import OutputDir
from .render.html import preload_templates
from .render.options import ReportOptions
from .render.report import Content, report_files


def write_report(trace: Trace, out: str, overwrite: bool, options: ReportOptions, results: Results | None = None,
                 log: Iterable[bytes] | None = None, processes: int = 1) -> OutputDir:
    """Every file of the log's report, into out (a fresh directory unless overwrite).

    log: the log's bytes for raw.log (default: read from trace.source; a loaded analysis brings its own).
    processes: how many processes write it (OutputDir.write_all; the same files either way). More than one
    only from a command-line process: it forks.
    """
    results = results or analyze(trace)
    output = OutputDir(out, overwrite, keep=[trace.source])
    if processes > 1:
        preload_templates()  # loaded once, before the fork, and shared
    output.write_all(report_outputs(trace, results, options, log), processes)
    return output


def saved_analysis(results: Results, log: Iterable[bytes] | None = None) -> bytes:
    """`--save FILE`: the exact saved form of results, and the log's bytes as stored (for raw.log or
    raw.log.gz), as JSON."""
    doc = results.to_json()
    if log is not None:
        doc["log"] = encode(b"".join(log))
    return orjson.dumps(doc)


def load_analysis(doc: dict) -> tuple[Results, bytes | None]:
    """A saved analysis (ingest.saved.read_saved) as Results, and the log's bytes when they were saved."""
    try:
        results = Results.from_json(doc)
        log = decode(doc["log"], {}) if "log" in doc else None
    except CodecError as exc:
        raise CompilescopeError(f"not a loadable compilescope analysis: {exc}") from None
    if results.trace is None or (log is not None and not isinstance(log, bytes)):
        raise CompilescopeError("not a loadable compilescope analysis: it holds no trace")
    return results, log


def report_outputs(trace: Trace, results: Results, options: ReportOptions,
                   log: Iterable[bytes] | None = None) -> Iterator[tuple[str, Content]]:
    """Every file of a report directory, the log itself last: for callers that write several reports
    into one OutputDir (the demo)."""
    yield from report_files(trace, results, options)
    yield raw_log(stored_log_chunks(trace.source) if log is None else iter(log))


RAW_LOG = "raw.log"  # tlparse's name for the copy of a plain log
RAW_LOG_GZ = "raw.log.gz"  # a compressed log's copy, kept compressed


def raw_log(chunks: Iterator[bytes]) -> tuple[str, Iterator[bytes]]:
    """The log's copy and its name: a gzip log is copied as stored (raw.log.gz), never expanded, so the
    report stays a small multiple of the input's size on disk; a plain log is raw.log, as in tlparse."""
    first = next(chunks, b"")
    return (RAW_LOG_GZ if is_gzip(first) else RAW_LOG), itertools.chain([first], chunks)


def stored_log_chunks(path: str) -> Iterator[bytes]:
    """The log's bytes as stored (a .gz stays compressed), so the report directory is self-contained.

    As much as can be read (an I/O error ends the copy; the reader already listed it as a problem).
    """
    try:
        stream, _ = open_stored_log(path)
        with stream:
            while chunk := stream.read(1 << 20):
                yield chunk
    except (OSError, CompilescopeError):
        return


def strict_problems(trace: Trace, strict: bool, strict_compile_id: bool) -> list:
    problems = trace.stats.strict_failures() if strict else []
    if strict_compile_id:
        problems += [p for p in trace.stats.problems if p.category == "missing_compile_id"]
    return sorted(problems, key=lambda p: p.lineno)

"""One log's report: write every file of it, and save or load its analysis (--save / --load).

A single report (cli/report.py), the API and the per-log worker of batches and
ranks (worker.py) all write through here. Writing goes through OutputDir
(output.py), confined to the report's directory.
"""

from __future__ import annotations

import itertools
import os
import stat
from typing import Iterable, Iterator

import orjson

from . import location
from .analyses import Results, analyze
from .errors import CompilescopeError
from .ingest.reader import is_gzip, open_stored_log
from .model.codec import CodecError, decode, encode
from .model.trace import Trace
from .output import FileCopy, OutputDir
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
    if log is None and not trace.read_from_source:  # loaded from a saved analysis: trace.source is only a name
        log = [b""]
    yield stored_log_copy(trace.source) if log is None else raw_log(iter(log))


RAW_LOG = "raw.log"  # tlparse's name for the copy of a plain log
RAW_LOG_GZ = "raw.log.gz"  # a compressed log's copy, kept compressed


def raw_log(chunks: Iterator[bytes]) -> tuple[str, Iterator[bytes]]:
    """The log's copy and its name: a gzip log is copied as stored (raw.log.gz), never expanded, so the
    report stays a small multiple of the input's size on disk; a plain log is raw.log, as in tlparse."""
    first = next(chunks, b"")
    return (RAW_LOG_GZ if is_gzip(first) else RAW_LOG), itertools.chain([first], chunks)


def stored_log_copy(path: str) -> tuple[str, LogCopy]:
    """The log's copy (raw.log, or raw.log.gz as stored), as raw_log names it."""
    try:
        stream, gzipped = open_stored_log(path)
        stream.close()
    except (OSError, CompilescopeError):
        gzipped = False  # (the copy will be empty: the reader has said why)
    return (RAW_LOG_GZ if gzipped else RAW_LOG), LogCopy(path)


class LogCopy(FileCopy):
    """The log's bytes as stored, copied by the kernel (copy_file_range) where it is a local file: a 450 MB
    log's copy then costs no Python time (read and written through Python: ~0.1 s of CPU per 90 MB)."""

    def __init__(self, path: str):
        self.path = path

    def copy_into(self, fd: int) -> int:
        if location.is_url(self.path) or not hasattr(os, "copy_file_range"):
            return 0
        try:
            source = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return 0
        done = 0
        try:
            if stat.S_ISREG(os.fstat(source).st_mode):
                while copied := os.copy_file_range(source, fd, 1 << 30):
                    done += copied
        except OSError:
            pass  # (a file system that cannot, or a read error: rest() goes on from here, as reading would)
        finally:
            os.close(source)
        return done

    def rest(self, done: int) -> Iterator[bytes]:
        return stored_log_chunks(self.path, done)


def stored_log_chunks(path: str, start: int = 0) -> Iterator[bytes]:
    """The log's bytes as stored (a .gz stays compressed), so the report directory is self-contained.

    As much as can be read (an I/O error ends the copy; the reader already listed it as a problem).
    """
    try:
        stream, _ = open_stored_log(path)
        with stream:
            stream.seek(start)
            while chunk := stream.read(1 << 20):
                yield chunk
    except (OSError, CompilescopeError):
        return


def strict_problems(trace: Trace, strict: bool, strict_compile_id: bool) -> list:
    problems = trace.stats.strict_failures() if strict else []
    if strict_compile_id:
        problems += [p for p in trace.stats.problems if p.category == "missing_compile_id"]
    return sorted(problems, key=lambda p: p.lineno)

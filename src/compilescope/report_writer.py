"""One log's report: write every file of it, and save or load its analysis (--save / --load).

A single report (cli/report.py), the API and the per-log worker of batches and
ranks (log_job.py) all write through here. Writing goes through OutputDir
(output.py), confined to the report's directory.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from typing import Iterable, Iterator

import orjson

from . import location
from .analyses.analyze import analyze
from .analyses.results import Results
from .errors import CompilescopeError
from .ingest.reader import is_gzip, open_stored_log
from .model.trace import Trace
from .output import FileCopy, Keep, OutputDir, saved_analysis_input
from .render.html import preload_templates
from .render.options import ReportOptions
from .render.report import Content, report_files


def write_report(trace: Trace, out: str, overwrite: bool, options: ReportOptions, results: Results | None = None,
                 log: Iterable[bytes] | None = None, processes: int = 1, keep: Keep = ()) -> OutputDir:
    """Every file of the log's report, into out (a local directory: a fresh one unless overwrite; for a URL, see
    output.report_destination).

    log: the log's bytes for raw.log (default: read from trace.source; a loaded analysis brings its own).
    processes: how many processes write it (OutputDir.write_all; the same files either way). More than one
    only from a command-line process: it forks.
    keep: what --overwrite must never delete besides the log (a saved analysis being loaded).
    """
    results = results or analyze(trace)
    output = OutputDir(out, overwrite, keep=[trace.source, *keep])
    if processes > 1:
        preload_templates()  # loaded once, before the fork, and shared
    output.write_all(report_outputs(trace, results, options, log), processes)
    return output


def saved_analysis(results: Results, log: Iterable[bytes] | None = None) -> bytes:
    """`--save FILE`: the exact saved form of results, and the log's bytes as stored (for raw.log or
    raw.log.gz), as JSON."""
    from .model.codec import encode  # here: a plain report saves nothing (start-up time)

    doc = results.to_json()
    if log is not None:
        doc["log"] = encode(b"".join(log))
    return orjson.dumps(doc)


def load_analysis(doc: dict) -> tuple[Results, bytes | None]:
    """A saved analysis (ingest.saved.read_saved) as Results, and the log's bytes when they were saved."""
    from .model.codec import CodecError, decode

    try:
        results = Results.from_json(doc)
        log = decode(doc["log"], {}) if "log" in doc else None
    except CodecError as exc:
        raise CompilescopeError(f"not a loadable compilescope analysis: {exc}") from None
    if results.trace is None or (log is not None and not isinstance(log, bytes)):
        raise CompilescopeError("not a loadable compilescope analysis: it holds no trace")
    return results, log


def write_saved_report(path: str, out: str, overwrite: bool, options: ReportOptions) -> tuple[OutputDir, str | None, Results]:
    """`report --load FILE` and report() of a saved file: the same report as from the log, and, where the file holds
    no copy of the log, a note saying raw.log is empty and how to have it (the caller says it, or not); and the
    results loaded (closed: their insights are what the caller may still read)."""
    from .ingest.saved import read_saved

    try:
        results, log = load_analysis(read_saved(path))
    except CompilescopeError as exc:
        message = str(exc)
        raise type(exc)(message if message.startswith(f"{path}:") else f"{path}: {message}") from None  # which file
    with results:
        assert results.trace is not None
        made_out = not os.path.lexists(out)
        try:
            # No copy of the log: raw.log is empty, never the file at the path the trace names (report_outputs would
            # also leave it empty, for a trace not read here: both, as a saved file is untrusted).
            output = write_report(results.trace, out, overwrite, options, results, [log or b""],
                                  keep=[saved_analysis_input(path)])
        except LookupError as exc:
            # Each field was of its type (load_analysis), yet one names what another lacks (a compile with no status):
            # a file edited by hand. No half report is left where there was nothing (one made in an existing
            # directory stays: whose?).
            if made_out:
                import shutil

                shutil.rmtree(out, ignore_errors=True)
            raise CompilescopeError(f"{path}: the saved analysis does not hold together ({type(exc).__name__}: "
                                    f"{exc}); was it edited? Save it again from its log") from None
        note = None if log is not None else _without_log(path, results.trace.source)
    return output, note, results


def _without_log(saved: str, source: str) -> str:
    """What raw.log holds when the saved analysis has no copy of the log (Results.to_json() saves none: --save adds
    it): nothing. A saved file is untrusted: the log's path in it could name any file this user can read, which
    the report would then publish as its raw.log."""
    return (f"compilescope: warning: {saved} holds no copy of its log (saved with to_json(), not --save): the "
            f"report's raw.log is empty; a saved file's paths are not read (for the log's copy, give the log, "
            f"{source}, as compilescope {source} -o OUT, or save it with --save)")


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
    """The log's bytes as stored, copied by the kernel (copy_file_range, or sendfile across file systems) where it is
    a local file: a 450 MB log's copy then costs no Python time (read and written through Python: ~0.1 s of CPU per
    90 MB)."""

    def __init__(self, path: str):
        self.path = path

    def copy_into(self, fd: int) -> int:
        if location.is_url(self.path) or not hasattr(os, "copy_file_range"):
            return 0
        try:
            source = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return 0
        try:
            return _kernel_copy(source, fd) if stat.S_ISREG(os.fstat(source).st_mode) else 0
        except OSError:
            return 0
        finally:
            os.close(source)

    def rest(self, done: int) -> Iterator[bytes]:
        return stored_log_chunks(self.path, done)


def _kernel_copy(source: int, fd: int) -> int:
    """Copy source into fd in the kernel as far as it goes; the number of bytes copied (rest() goes on from there,
    after a read error, as reading would, or where the kernel copies neither way)."""
    done = 0
    try:
        while copied := os.copy_file_range(source, fd, 1 << 30):
            done += copied
        return done
    except OSError:
        pass
    # copy_file_range copies within one kind of file system only (EXDEV: a log on disk, its report on tmpfs, as
    # bench/run.py and /tmp often have it); sendfile copies between any two files on Linux (not macOS: OSError).
    if hasattr(os, "sendfile"):
        with contextlib.suppress(OSError):
            while sent := os.sendfile(fd, source, done, 1 << 30):
                done += sent
    return done


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

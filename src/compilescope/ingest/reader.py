"""read_trace(): stream one log through the handlers into a Trace."""

from __future__ import annotations

import os
from typing import Any, BinaryIO, Callable

import orjson

from .. import location
from ..decompile.recorded import CRASH, CUDAGRAPH_SKIP
from ..errors import CompilescopeError
from ..model.builder import TraceBuilder
from ..model.payloads import PAYLOAD_KEY, PayloadBudget, payload_key
from ..model import trace as trace_model
from ..model.trace import RawSpans, Trace
from ..wording import count
from .envelope import EnvelopeError, decode_envelope
from .resets import FrameRenumbering
from .handlers import HANDLERS, KNOWN_KINDS, handler_for
from .crash_files import crash_beside, crash_text
from .discover import find_logs, rank_of
from .lines import RawRecord, ReadLimit, read_raw_records
from ..model.records import dataclass

# Kinds whose envelopes always belong to a compilation; with --strict-compile-id
# one of these without a compile id is a problem.
COMPILE_SCOPED_KINDS = frozenset(
    KNOWN_KINDS - {"str", "chromium_event", "dump_file", "link", "describe_storage", "describe_tensor", "describe_source"}
)
# Records torch writes outside any compilation by design, so no compile id is expected on them:
# torch_version (every process, at start-up), torch.export's own events, and whatever torch.export
# logs while it traces (its records carry no Dynamo compile id, even strict export's guards and metrics).
# compilescope's own CUDA graph skip, written when the graph first runs (after its compile), is one too, and so is
# its crash, written after the process died.
_OUTSIDE_ARTIFACTS = frozenset({"torch_version", CUDAGRAPH_SKIP, CRASH})
_EXPORT_KINDS = frozenset({"exported_program", "propagate_real_tensors_provenance", "guard_on_data_dependent_error",
                           "missing_fake_kernel", "mismatched_fake_kernel"})
_EXPORT_FILES = ("torch/export/", "torch/_export/", "torch/_dynamo/functional_export.py")
# Kinds left out of raw.jsonl (tlparse does the same): the string table is written once, up front.
RAW_EXCLUDED = frozenset({"str", "chromium_event"})
_RAW_DROPPED = frozenset({"artifact_number", "timestamp", "payload_filename", PAYLOAD_KEY})


@dataclass
class ReadOptions:
    """How a log is read: which rank to keep, and what to call with the bytes read so far."""

    rank: int | None = None  # keep only this rank's envelopes (None: the file name's rank, else the first seen)
    progress: Callable[[int], None] | None = None  # called with bytes read so far


def _written_outside_compilation(env, b) -> bool:
    """A record torch writes outside a compilation on purpose: its missing compile id is no problem."""
    metadata = env.metadata if isinstance(env.metadata, dict) else {}
    if env.kind == "artifact" and metadata.get("name") in _OUTSIDE_ARTIFACTS:
        return True
    if env.kind in _EXPORT_KINDS:
        return True
    stack = env.obj.get("stack") or metadata.get("stack")
    if any(marker in f.filename.replace("\\", "/") for f in b.frames(stack) for marker in _EXPORT_FILES):
        b.export_seen = True
    # Once torch.export runs in this process, its records without a stack (expression_created) are its too.
    return b.export_seen


def open_log(path: str) -> BinaryIO:
    """Open a plain or gzip-compressed log for binary reading (a local path, or a URL fsspec knows).

    A local log is opened only if it is a regular file: the open does not block (a FIFO would wait
    forever for a writer), and what was opened is checked, so a file swapped after discovery is refused too.
    """
    f, gzipped = open_stored_log(path)
    if gzipped:
        import gzip  # here, not at the top: most logs are plain text, and start-up time matters for small logs

        f.close()
        if location.is_url(path):
            return location.open_read(path, gzipped=True)  # type: ignore[return-value]
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return f


# A compressed log keeps payloads up to this many times its size on disk (real logs compress 5 to 15
# times), and at least PAYLOAD_FLOOR bytes: a small .gz that expands to GBs is kept cut, with a note.
# Envelopes are never cut (that would lose the record): the whole log is read up to EXPANSION_FACTOR
# times its size on disk (at least EXPANSION_FLOOR), then reading stops there, as at a read error.
PAYLOAD_FACTOR = 32
PAYLOAD_FLOOR = 16 << 20
EXPANSION_FACTOR = 64
EXPANSION_FLOOR = 64 << 20


def compressed_size(path: str) -> int | None:
    """The size on disk of a gzip log; None for a plain one (its content is no bigger than the file)."""
    stream, gzipped = open_stored_log(path)
    stream.close()
    return location.size(path) if gzipped else None


class _ExpansionCap:
    """Reads a decompressed stream up to limit bytes, then fails as a broken stream does (ReadLimit:
    the reader lists where it stopped and keeps everything before, the line it cut included)."""

    def __init__(self, stream: Any, limit: int):
        self._read = getattr(stream, "read1", None) or stream.read
        self._left = limit
        self._limit = limit

    def read1(self, size: int) -> bytes:
        if self._left <= 0:
            raise ReadLimit(f"the compressed log expands past {self._limit:,} bytes, the most one report reads of it")
        data = self._read(min(size, self._left))
        self._left -= len(data)
        return data


def open_stored_log(path: str) -> tuple[BinaryIO, bool]:
    """The log's bytes as stored (not decompressed), and whether they are gzip (see open_log)."""
    if location.is_url(path):
        f = location.open_read(path)
    else:
        try:
            fd, _ = location.open_regular(path)
        except location.NotARegularFile:
            raise CompilescopeError(f"{path}: not a regular file, not a log file") from None
        f = os.fdopen(fd, "rb")
    gzipped = is_gzip(f.read(3))
    f.seek(0)
    return f, gzipped


def is_gzip(head: bytes) -> bool:
    """gzip magic and its only method (deflate): not a text log's first bytes."""
    return head[:3] == b"\x1f\x8b\x08"


class _CountingReader:
    """Wraps a stream to report progress every few MB without a per-line callback."""

    def __init__(self, stream: BinaryIO | _ExpansionCap, progress: Callable[[int], None]):
        self._read = getattr(stream, "read1", None) or stream.read  # type: ignore[union-attr]
        self._progress = progress
        self._done = 0
        self._next = 0

    def read1(self, size: int) -> bytes:
        data = self._read(size)
        self._done += len(data)
        if self._done >= self._next:
            self._progress(self._done)
            self._next = self._done + (4 << 20)
        return data


def read_trace(path: str, options: ReadOptions | None = None) -> Trace:
    """Read one log. Raises CompilescopeError (one line for the user) when the file
    cannot be opened or holds no trace record at all; anything less is a problem
    listed in trace.stats, next to everything that could be read."""
    options = options or ReadOptions()
    rank = options.rank if options.rank is not None else rank_of(path)
    trace = _read(path, rank, options)
    if rank is not None and options.rank is None and trace.stats.outcomes["other_rank"] and not trace.rank_seen:
        # The file name said one rank but the log holds only others (e.g. a renamed
        # file): read it as the rank it actually holds.
        trace.close()
        trace = _read(path, None, options)
    if not _usable(trace):
        trace.close()
        raise CompilescopeError(_unusable_message(path, trace))
    _read_stderr_beside(trace, path)
    _read_crash_beside(trace, path)
    return trace


def _read_stderr_beside(trace: Trace, path: str) -> None:
    """The warnings of the run's saved stderr, when it sits beside the log (ingest/stderr.py)."""
    from .stderr import read_stderr_warnings, stderr_beside  # here: most logs have none, and pay one listdir

    stderr = stderr_beside(path)
    if stderr is None:
        return
    try:
        trace.stderr_warnings = read_stderr_warnings(stderr)
    except OSError:
        return
    trace.stderr_path = stderr


def _read(path: str, rank: int | None, options: ReadOptions) -> Trace:
    builder = TraceBuilder(location.absolute(path), rank)
    try:
        compressed = compressed_size(path)
        stream = open_log(path)
    except OSError as exc:
        builder.build().close()
        raise CompilescopeError(f"{path}: cannot read: {exc.strerror or exc}") from None
    budget = None
    with stream:
        lines: BinaryIO | _CountingReader | _ExpansionCap = stream
        if compressed is not None:
            budget = PayloadBudget(max(PAYLOAD_FLOOR, PAYLOAD_FACTOR * compressed))
            lines = _ExpansionCap(stream, max(EXPANSION_FLOOR, EXPANSION_FACTOR * compressed))
        lines = _CountingReader(lines, options.progress) if options.progress else lines
        last_damaged: RawRecord | None = None  # the last record read, if its payload does not match its md5
        renumbering = FrameRenumbering()
        for record in read_raw_records(lines, budget):
            try:
                damaged = _ingest(record, builder, renumbering)
            finally:
                if record.payload is not None:
                    record.payload.close()
            if damaged:
                last_damaged = record
            elif record.problem is None:
                last_damaged = None
    _note_cut_last_payload(builder, last_damaged)
    return builder.build()


def _read_crash_beside(trace: Trace, path: str) -> None:
    """The crash its process left beside the log that nobody appended (a process that traced itself with capture()
    and died in native code; ingest/crash_files.py): the log's crash, but no record of the log, so the log's records
    (raw.jsonl, compile_directory.json, the outputs logged without a compile id, the counts read) stay what the log
    holds. Not where the log already holds a crash: `run` appended it (a process dies once)."""
    if location.is_url(path) or any(a.name == CRASH for entry in trace.compiles.values() for a in entry.artifacts):
        return
    crash = crash_beside(path, trace.pid, find_logs)
    if crash is not None:
        trace.crash_file, trace.crash_text = crash.path, crash_text(crash.text)


def _note_cut_last_payload(b: TraceBuilder, last: RawRecord | None) -> None:
    """A log whose last record's payload does not match its md5 was cut inside that payload: torch writes each
    record whole, so a log cut short must not read as read to its end (and pass `check`'s whole-log rule).

    Sure where the file ends inside a payload line (torch ends every line). Where it ends at a line's end, only if
    that payload is the log's one not matching its md5, and no blank line was dropped inside it: a log edited by
    hand (tlparse's own test logs) breaks md5s, and an editor that strips trailing whitespace leaves a payload's
    empty lines blank, neither of which cuts anything.
    """
    if last is None or b.stats.stopped is not None:
        return
    first, end = last.payload_first_lineno, last.payload_last_lineno
    if not last.unended and (b.stats.outcomes["md5_mismatch"] > 1 or end - first + 1 != last.payload_lines):
        return
    where = f"in the middle of line {end}" if last.unended else f"at line {end}"
    b.stats.stop(end, f"the log ends {where}, inside the payload of the record at line "
                      f"{last.lineno}, which does not match its md5: it was cut there")


def _usable(trace: Trace) -> bool:
    """At least one line of the file was a trace record (an envelope that could be decoded)."""
    outcomes = trace.stats.outcomes
    return any(outcomes[o] for o in ("ok", "md5_mismatch", "unknown_kind", "other_rank", "handler_error"))


def _unusable_message(path: str, trace: Trace) -> str:
    stats = trace.stats
    if stats.stopped is not None and not stats.total:
        return f"{path}: {stats.stopped.message}"
    if not stats.total:
        return f"{path}: the log is empty"
    first = stats.problems[0] if stats.problems else None
    # What is wrong, never the line itself: a file that is no log at all (a symlink to a key file)
    # must not have its first line quoted on the landing page, the batch index or in JSON.
    why = f" (line {first.lineno}: {first.category.replace('_', ' ')})" if first else ""
    return f"{path}: not a TORCH_TRACE log: none of its {count(stats.total, 'record')} could be read{why}"


def _ingest(record: RawRecord, b: TraceBuilder, renumbering: FrameRenumbering) -> bool:
    """Read one record into b; True when it is counted as a payload not matching its md5 (see _note_cut_last_payload)."""
    stats = b.stats
    if record.problem is not None:
        if record.problem == "read_error":  # not a record: where reading stopped
            stats.stop(record.lineno, record.detail or "read error")
            return False
        stats.count(record.problem)
        n = record.payload_lines
        if record.problem == "bad_prefix":
            snippet = record.body[:80].decode("utf-8", "replace")
            with_payload = f" (and its {count(n, 'payload line')})" if n else ""
            stats.problem(record.lineno, "bad_prefix", f"not a TORCH_TRACE line{with_payload}: {snippet!r}")
        elif record.problem == "orphan_payload":
            stats.problem(record.lineno, "orphan_payload", f"{count(n, 'payload line')} with no envelope before them")
        else:
            stats.problem(record.lineno, record.problem, record.detail or record.problem)
        return False

    try:
        env = decode_envelope(record, KNOWN_KINDS)
    except EnvelopeError as exc:
        stats.count(exc.reason)
        stats.problem(record.lineno, exc.reason, exc.detail)
        return False
    for category, message in env.warnings:
        stats.problem(env.lineno, category, message)
    if env.payload_buffer is not None and env.payload_buffer.cut_bytes:
        kept = env.payload_buffer.size - env.payload_buffer.cut_bytes
        stats.problem(env.lineno, "warning", f"{env.kind} payload of {env.payload_buffer.size:,} bytes kept cut at "
                                             f"{kept:,}: the compressed log expands past what its report keeps")

    if b.pid is None:
        b.pid = env.glog.pid
    if env.rank is not None:
        if b.rank is None:
            b.rank = env.rank
        if env.rank == b.rank:
            b.rank_seen = True
        else:
            stats.count("other_rank")
            stats.problem(env.lineno, "other_rank", f"envelope of rank {env.rank} in a log of rank {b.rank}; skipped")
            return False

    kind = env.kind
    obj = env.obj
    stats.kinds[kind] += 1
    if env.compile_id is not None:
        logged = env.compile_id
        env.compile_id = renumbering.place(env)
        if env.compile_id is not logged:
            entry = b.compile(env.compile_id, env.lineno)
            entry.logged_frame_id = logged.frame_id
            if renumbering.start:  # (a process after the log's first: its numbering is no reset's)
                entry.process_pid, entry.process_start = env.glog.pid, renumbering.start
    if kind != "str":
        # Every event registers its compile id (tlparse lists ids even with no outputs,
        # and NO_COMPILE_ID for events outside any compilation).
        b.compile(env.compile_id, env.lineno)
        stack = obj.get("stack")
        if stack is not None or obj.get("subgraph_name"):  # (most records have neither: no call)
            b.note_context(env.compile_id, env.lineno, stack, env.subgraph_name)
    handler = HANDLERS.get(kind) or handler_for(kind)  # (the table first, inline: no call for nearly every record)
    md5 = obj.get("has_payload")
    key = (md5 if env.md5_ok else payload_key(md5, False, env.lineno)) if isinstance(md5, str) else None
    if handler is None:
        stats.unknown_kinds[env.kind] += 1
        if env.md5_ok:
            stats.count("unknown_kind")
        else:  # kept, but a damaged (or forged) payload is a damaged payload whatever its kind
            stats.count("md5_mismatch")
            stats.problem(env.lineno, "md5_mismatch", f"{env.kind} (a kind this version does not know): "
                                                      "payload does not match its md5 (kept anyway)")
        b.keep_unknown(env.lineno, env.kind, env.compile_id, env.metadata, env.payload_buffer, key)
        _write_raw(b, env, None, key)
        return record.payload is not None and not env.md5_ok

    if env.compile_id is None and env.kind in COMPILE_SCOPED_KINDS and not _written_outside_compilation(env, b):
        stats.problem(env.lineno, "missing_compile_id", f"{env.kind} envelope has no compile id")
    last_before = b.last_artifact
    try:
        claimed = handler(env, b)
    except Exception as exc:  # noqa: BLE001 - any handler failure is accounted, never fatal
        if not env.md5_ok:  # the payload is corrupt: that is the problem to report
            stats.count("md5_mismatch")
            stats.problem(env.lineno, "md5_mismatch", f"{env.kind} payload does not match its md5 and cannot be read ({exc}); skipped")
        else:
            stats.count("handler_error")
            stats.problem(env.lineno, "handler_error", f"{env.kind}: {type(exc).__name__}: {exc}")
        return record.payload is not None and not env.md5_ok

    if env.md5_ok:
        stats.outcomes["ok"] += 1
    else:
        stats.count("md5_mismatch")
        stats.problem(env.lineno, "md5_mismatch", f"{env.kind} payload does not match its md5 (read anyway)")

    last_after = b.last_artifact
    new_artifact = last_after if last_after is not last_before else None
    if new_artifact is not None and key is not None:
        new_artifact.md5 = key
    if env.payload_buffer is not None and not claimed:
        b.keep_unclaimed(key if key is not None else str(env.obj.get("has_payload", "")), env.payload_buffer)
    if kind not in RAW_EXCLUDED:
        _write_raw(b, env, new_artifact, key)
    return record.payload is not None and not env.md5_ok


def _write_raw(b: TraceBuilder, env, artifact, key: str | None) -> None:
    """One raw.jsonl line: the envelope plus where it came from.

    The timestamp is written last and without its year; the year is known only
    at the end of the log, so the renderer prefixes it.
    """
    obj = env.obj
    # The fields written below or by the renderer are never taken from the log (a log rarely has any).
    doc = dict(obj) if _RAW_DROPPED.isdisjoint(obj) else {k: v for k, v in obj.items() if k not in _RAW_DROPPED}
    if key is not None and key != doc.get("has_payload"):
        doc[PAYLOAD_KEY] = key  # the renderer names the payload's file by it (and drops it)
    _, month, day, time, micros, pid, pathname, lineno = env.glog.fields()
    doc["lineno"] = lineno
    doc["pathname"] = pathname
    doc["pid"] = pid
    doc["log_lineno"] = env.lineno
    if artifact is not None:
        doc["artifact_number"] = artifact.number
    line = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)  # (never {}: it has lineno, pathname, pid, log_lineno)
    line = b'%s,"timestamp":"%02d-%02dT%s.%06dZ"}\n' % (line[:-1], month, day, time.encode(), micros)
    if len(line) >= trace_model.LONG_RAW_LINE:
        b.raw_spans.append(_top_level_spans(doc, env.kind, line))
    b.raw.write(line)


def _top_level_spans(doc: dict, kind: str, line: bytes) -> RawSpans | None:
    """Where each top-level value of a raw.jsonl line is (its key, first and end byte), so that the renderer
    need not parse a long line whole (orjson takes ~13x a line as scratch to read it): each value but the
    record's metadata is serialized again to measure it (they are small), the metadata fills the rest."""
    sizes: dict[str, int] = {}
    for k, v in doc.items():
        if k != kind:
            sizes[k] = len(orjson.dumps(v, option=orjson.OPT_SORT_KEYS))
    timestamp = line.rindex(b',"timestamp":') + 1
    if kind in doc:
        # "{", the pairs with a comma between each, then ',"timestamp"': the metadata is what the others leave.
        others = sum(len(orjson.dumps(k)) + 1 + n for k, n in sizes.items())
        sizes[kind] = (timestamp - 2) - others - (len(orjson.dumps(kind)) + 1) - len(sizes)
    spans = []
    at = 1  # after "{"
    for k in sorted(sizes):  # (orjson's order: code points)
        start = at + len(orjson.dumps(k)) + 1
        spans.append((k, start, start + sizes[k]))
        at = start + sizes[k] + 1  # the comma
    if at != timestamp:
        return None
    spans.append(("timestamp", timestamp + len(b'"timestamp":'), len(line) - 2))
    for k, start, end in spans:  # (checked: each value sits after its key and colon, before a comma or the end)
        key = orjson.dumps(k) + b":"
        if line[start - len(key):start] != key or line[end] not in (0x2C, 0x7D):
            return None
    return tuple(spans)

"""Machine-readable outputs, in tlparse's schema: compile_directory.json, raw.jsonl, chromium_events.json."""

from __future__ import annotations

from typing import Iterator

import orjson

from ..model import trace as trace_model
from ..model.trace import CODE, LINK, TEXT, JSON, Artifact, Compile, RawSpans, Trace
from ..model.payloads import PAYLOAD_KEY
from .content import chunked
from .options import ReportOptions, artifact_file_name, artifact_file_number, artifact_url, kept_by_md5, payload_file, readable_url


DIRECTORY_CHUNK = 256 << 10  # bytes of compile_directory.json handed to the writer at a time
DIRECTORY_BATCH = 256  # artifacts made into dicts and written by one orjson call
_JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
_ARTIFACT_INDENT = b"\n    "  # an artifact list sits at depth 2: {key: {"artifacts": [{...}]}}
_LIST_END = b"\n]".replace(b"\n", _ARTIFACT_INDENT)


def compile_directory_json(trace: Trace, options: ReportOptions) -> Iterator[bytes]:
    """compile_directory.json in tlparse's format, in chunks: the bytes orjson writes for the whole
    document (OPT_INDENT_2 | OPT_SORT_KEYS), built DIRECTORY_BATCH artifacts at a time, never as one dict of
    every artifact of the log (it grows with the log)."""
    entries: dict[str, Compile] = {}
    for entry in trace.sorted_compiles():
        entries[entry.key] = entry  # two compiles named alike (both NO_COMPILE_ID): the later one's artifacts, as a dict keeps
    if not entries:
        yield b"{}"
        return
    parts: list[bytes] = [b"{"]
    size = 0
    for n, key in enumerate(sorted(entries)):  # (code point order: orjson's sort of str keys)
        artifacts = entries[key].artifacts
        parts.append(b'%s\n  %s: {\n    "artifacts": %s' % (b"," if n else b"", orjson.dumps(key), b"[" if artifacts else b"[]"))
        for first in range(0, len(artifacts), DIRECTORY_BATCH):
            batch = [_directory_artifact(a, options) for a in artifacts[first:first + DIRECTORY_BATCH]]
            # "[\n  {...},\n  {...}\n]" indented to its depth, without its brackets: the list's items.
            items = orjson.dumps(batch, option=_JSON_OPTIONS).replace(b"\n", _ARTIFACT_INDENT)[1:-len(_LIST_END)]
            parts.append(b"," + items if first else items)
            size += len(items)
            if size >= DIRECTORY_CHUNK:
                yield b"".join(parts)
                parts, size = [], 0
        parts.append(b"\n    ]\n  }" if artifacts else b"\n  }")
    parts.append(b"\n}")
    yield b"".join(parts)


def _directory_artifact(a: Artifact, options: ReportOptions) -> dict:
    number = artifact_file_number(a, options)
    return {
        "name": a.name.rsplit("/", 1)[-1] if a.display == LINK else artifact_file_name(a, options),
        # tlparse records the number of the last file it wrote for an
        # entry: the readable companion page is numbered after the JSON. (An exported program's, under --export, is
        # the one in its name, tlparse's: tlparse writes no entry for it.)
        "number": number + 1 if a.readable else number,
        "suffix": a.suffix,
        "url": artifact_url(a, options),
        "readable_url": readable_url(a, options),
    }


def payload_url(trace: Trace, options: ReportOptions, md5: str) -> str:
    return payload_file(md5)


RAW_JSONL_CHUNK = 256 << 10  # bytes of raw.jsonl handed to the writer at a time
_READ_KEYS = frozenset({"has_payload", PAYLOAD_KEY, "artifact_number", "timestamp"})  # what raw_jsonl reads


def _spanned_line(line: bytes, spans: RawSpans) -> dict:
    """orjson.loads(line), with each top-level value raw_jsonl does not read kept as its JSON text (written
    back verbatim by orjson.Fragment: the same bytes), from where the reader found them (Trace.raw_spans):
    orjson takes ~13x a line as scratch to read it and ~11x to write it (a real 0.84 MB compilation_metrics
    line: 10.9 and 9.1 MB)."""
    return {k: orjson.loads(line[start:end]) if k in _READ_KEYS else orjson.Fragment(line[start:end])
            for k, start, end in spans}


def raw_jsonl(trace: Trace, options: ReportOptions) -> Iterator[bytes]:
    """The string table, then one line per envelope (str and chromium_event excluded), RAW_JSONL_CHUNK bytes at
    a time.

    Fixed against tlparse: the year is the log's own (not today's), the process
    id is under "pid" (tlparse calls it "thread"), and pathname has no leading space.
    """
    return chunked(_raw_jsonl_lines(trace, options), RAW_JSONL_CHUNK, b"")


def _raw_jsonl_lines(trace: Trace, options: ReportOptions) -> Iterator[bytes]:
    urls = {}
    for entry in trace.compiles.values():
        for a in entry.artifacts:
            # The file that holds the payload as logged: with -p, output code's .txt too (tlparse's pointer).
            # (a payload tlparse keeps by its md5 is pointed at there: kept_by_md5)
            if not kept_by_md5(a, options) and (a.display in (TEXT, JSON) or (a.display == CODE and options.plain_text)):
                urls[a.number] = artifact_url(a, options)
    table = [trace.string_table.get(i) for i in range(max(trace.string_table, default=-1) + 1)]
    yield orjson.dumps({"string_table": table}) + b"\n"
    year = f"{trace.year:04d}-" if trace.year else "0000-"
    long_line, spans = trace_model.LONG_RAW_LINE, iter(trace.raw_spans)
    for line in trace.raw.lines():
        # Parsed, not searched as bytes: the log's own metadata may hold keys named like ours.
        found = next(spans, None) if len(line) >= long_line else None
        doc = orjson.loads(line) if found is None else _spanned_line(line, found)
        doc["timestamp"] = year + str(doc.get("timestamp", ""))
        md5 = doc.get("has_payload")
        md5 = doc.pop(PAYLOAD_KEY, None) or (md5 if isinstance(md5, str) and md5 else None)
        if "artifact_number" in doc:
            number = doc["artifact_number"]
            url = urls.get(number) if isinstance(number, int) else None
            if url is None and md5:
                url = payload_url(trace, options, md5)
            if url is None:  # no file holds it (metrics, links): tlparse writes no payload_filename, not a null one
                del doc["artifact_number"]
            else:  # payload_filename takes artifact_number's place (tlparse's key order)
                doc = {("payload_filename" if k == "artifact_number" else k): (url if k == "artifact_number" else v)
                       for k, v in doc.items()}
        elif md5:
            doc["payload_filename"] = payload_url(trace, options, md5)
        yield orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)


def chromium_events(trace: Trace) -> Iterator[bytes]:
    return trace.chromium_events.json_array()

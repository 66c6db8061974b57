"""Every file of a report directory, in the order they are written."""

from __future__ import annotations

from typing import Iterator

import orjson

from ..analyses import Results
from ..model.trace import CODE, DUMP, GUARDS, Trace
from .html import render_html
from .json import chromium_events, compile_directory, raw_jsonl
from .options import ReportOptions, payload_file

__all__ = ["payload_file", "report_files"]

Content = "str | bytes | Iterable[bytes]"


def report_files(trace: Trace, results: Results, options: ReportOptions) -> Iterator[tuple[str, Content]]:
    yield from render_html(trace, results, options)
    # Sorted keys, as tlparse writes it (so the two files can be diffed byte for byte).
    yield "compile_directory.json", orjson.dumps(compile_directory(trace, options), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    yield "chromium_events.json", chromium_events(trace)
    yield "raw.jsonl", raw_jsonl(trace, options)
    # Payloads not written verbatim as an artifact are kept by md5 (raw.jsonl points at them).
    for md5, ref in trace.unclaimed_payloads:
        yield payload_file(md5), trace.payload_chunks(ref)
    for entry in trace.compiles.values():
        for a in entry.artifacts:
            if a.display in (CODE, GUARDS, DUMP) and a.md5 and a.payload is not None:
                yield payload_file(a.md5), trace.payload_chunks(a.payload)
    for event in trace.unknown_events:
        if event.md5 and event.payload is not None:
            yield payload_file(event.md5), trace.payload_chunks(event.payload)

"""Machine-readable outputs, in tlparse's schema: compile_directory.json, raw.jsonl, chromium_events.json."""

from __future__ import annotations

from typing import Iterator

import orjson

from ..model.trace import LINK, TEXT, JSON, Trace
from .options import ReportOptions, artifact_url, readable_url

_TIMESTAMP_KEY = b'"timestamp":"'


def compile_directory(trace: Trace, options: ReportOptions) -> dict:
    directory: dict[str, dict] = {}
    for entry in trace.sorted_compiles():
        directory[entry.key] = {
            "artifacts": [
                {
                    "name": a.name.rsplit("/", 1)[-1] if a.display == LINK else a.filename,
                    # tlparse records the number of the last file it wrote for an
                    # entry: the readable companion page is numbered after the JSON.
                    "number": a.number + 1 if a.readable else a.number,
                    "suffix": a.suffix,
                    "url": artifact_url(a, options),
                    "readable_url": readable_url(a, options),
                }
                for a in entry.artifacts
            ]
        }
    return directory


def payload_url(trace: Trace, options: ReportOptions, md5: str) -> str:
    from .report import payload_file

    return payload_file(md5)


def raw_jsonl(trace: Trace, options: ReportOptions) -> Iterator[bytes]:
    """The string table, then one line per envelope (str and chromium_event excluded).

    Fixed against tlparse: the year is the log's own (not today's), the process
    id is under "pid" (tlparse calls it "thread"), and pathname has no leading space.
    """
    urls = {}
    for entry in trace.compiles.values():
        for a in entry.artifacts:
            if a.display in (TEXT, JSON):
                urls[a.number] = artifact_url(a, options)
    table = [trace.string_table.get(i) for i in range(max(trace.string_table, default=-1) + 1)]
    yield orjson.dumps({"string_table": table}) + b"\n"
    year = f"{trace.year:04d}-".encode() if trace.year else b"0000-"
    for line in trace.raw.lines():
        cut = line.rfind(_TIMESTAMP_KEY) + len(_TIMESTAMP_KEY)
        line = line[:cut] + year + line[cut:]
        number_at = line.find(b'"artifact_number":')
        if number_at >= 0:
            end = line.index(b",", number_at)
            number = int(line[number_at + 18 : end])
            url = urls.get(number)
            md5 = _has_payload(line)
            if url is None and md5:
                url = payload_url(trace, options, md5)
            line = line[:number_at] + b'"payload_filename":' + orjson.dumps(url) + line[end:]
        elif md5 := _has_payload(line):
            line = line[:-2] + b',"payload_filename":' + orjson.dumps(payload_url(trace, options, md5)) + b"}\n"
        yield line


def _has_payload(line: bytes) -> str | None:
    at = line.find(b'"has_payload":"')
    if at < 0:
        return None
    start = at + 15
    return line[start : line.index(b'"', start)].decode()


def chromium_events(trace: Trace) -> Iterator[bytes]:
    return trace.chromium_events.json_array()

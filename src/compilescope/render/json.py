"""Machine-readable outputs, in tlparse's schema: compile_directory.json, raw.jsonl, chromium_events.json."""

from __future__ import annotations

from typing import Iterator

import orjson

from ..model.trace import LINK, TEXT, JSON, Trace
from ..model.payloads import PAYLOAD_KEY
from .options import ReportOptions, artifact_url, payload_file, readable_url


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
    year = f"{trace.year:04d}-" if trace.year else "0000-"
    for line in trace.raw.lines():
        # Parsed, not searched as bytes: the log's own metadata may hold keys named like ours.
        doc = orjson.loads(line)
        doc["timestamp"] = year + str(doc.get("timestamp", ""))
        md5 = doc.get("has_payload")
        md5 = doc.pop(PAYLOAD_KEY, None) or (md5 if isinstance(md5, str) and md5 else None)
        if "artifact_number" in doc:
            number = doc["artifact_number"]
            url = urls.get(number) if isinstance(number, int) else None
            if url is None and md5:
                url = payload_url(trace, options, md5)
            # payload_filename takes artifact_number's place (tlparse's key order).
            doc = {("payload_filename" if k == "artifact_number" else k): (url if k == "artifact_number" else v)
                   for k, v in doc.items()}
        elif md5:
            doc["payload_filename"] = payload_url(trace, options, md5)
        yield orjson.dumps(doc) + b"\n"


def chromium_events(trace: Trace) -> Iterator[bytes]:
    return trace.chromium_events.json_array()

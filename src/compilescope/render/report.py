"""Every file of a report directory, in the order they are written."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

import orjson

from ..analyses.results import Results
from ..model.trace import CODE, DUMP, GUARDS, Trace
from .content import Content, later
from .html import render_html
from .json import chromium_events, compile_directory_json, raw_jsonl
from .options import ReportOptions, kept_by_md5, payload_file

__all__ = ["Content", "ReportRenderer", "payload_file", "report_files"]


class ReportRenderer:
    """Every file of a report directory, in the order they are written (render/contract.py)."""

    def __init__(self, trace: Trace, results: Results, options: ReportOptions):
        self.trace, self.results, self.options = trace, results, options

    @classmethod
    def from_results(cls, results: Results, options: ReportOptions = ReportOptions()) -> ReportRenderer:
        if results.trace is None:
            raise ValueError("a report needs the trace its results were computed from")
        return cls(results.trace, results, options)

    def render(self) -> Iterator[tuple[str, Content]]:
        return _files(self.trace, self.results, self.options)


def report_files(trace: Trace, results: Results, options: ReportOptions) -> Iterator[tuple[str, Content]]:
    return ReportRenderer(trace, results, options).render()


def _files(trace: Trace, results: Results, options: ReportOptions) -> Iterator[tuple[str, Content]]:
    if options.export:  # every page and file that names an exported program's file names it as tlparse does
        options = replace(options, export_program_numbers=tuple(results.export.numbered_as_tlparse.programs.items()))
    yield from render_html(trace, results, options)
    # Sorted keys, as tlparse writes it (so the two files can be diffed byte for byte); streamed: it grows with the log.
    # (a generator: worked out only by the process that writes it, output.py)
    yield "compile_directory.json", compile_directory_json(trace, options)
    yield "chromium_events.json", chromium_events(trace)
    yield "sources.json", later(lambda: orjson.dumps(results.sources.to_json(), option=orjson.OPT_INDENT_2))
    yield "raw.jsonl", raw_jsonl(trace, options)
    # Payloads not written verbatim as an artifact are kept by md5 (raw.jsonl points at them), each once: a payload
    # logged again (the same code compiled twice) has the same name and the same bytes.
    kept: set[str] = set()
    for md5, ref in trace.unclaimed_payloads:
        if md5 not in kept:
            kept.add(md5)
            yield payload_file(md5), trace.payload_chunks(ref)
    # (With -p, output code is written verbatim as its .txt, which raw.jsonl points at: no copy.)
    by_md5 = (GUARDS, DUMP) if options.plain_text else (CODE, GUARDS, DUMP)
    for entry in trace.compiles.values():
        for a in entry.artifacts:
            if (a.display in by_md5 or kept_by_md5(a, options)) and a.md5 and a.payload is not None and a.md5 not in kept:
                kept.add(a.md5)
                yield payload_file(a.md5), trace.payload_chunks(a.payload)
    for event in trace.unknown_events:
        if event.md5 and event.payload is not None and event.md5 not in kept:
            kept.add(event.md5)
            yield payload_file(event.md5), trace.payload_chunks(event.payload)

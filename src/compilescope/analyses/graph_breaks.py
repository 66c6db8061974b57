"""Distinct graph breaks: deduplicated by reason and user location, most frequent first.

torch >= 2.6 logs every break as an `artifact` named `dynamo_graph_break_reason`
(reason, explanation, hints, user traceback). Older logs only have the
`restart_reasons` of `compilation_metrics`; those are used when no artifact exists.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import field
from typing import Any

from ..lazy_regex import lazy_compile
from ..model.ids import NO_COMPILE_ID, CompileId
from ..model.trace import Trace
from .userloc import (UserLocation, inline_frame, is_framework_file, last_code_frame, last_user_frame, section,
                      traceback_frames)
from ..model.records import dataclass

ARTIFACT = "dynamo_graph_break_reason"
_HEADER = lazy_compile(r"^Graph break in user code at (?P<file>.+):(?P<line>\d{1,9}+)\s*$", re.M)
_CONTEXT = "Encountered graph break when attempting to trace"
# "Encountered graph break that we cannot resume from. ... Graph break encountered:" (torch 2.11) and "Failed to
# handle graph break gracefully. ... Graph break encountered:" (2.14) end their line before the reason.
_WRAPPED = "Graph break encountered:"
_DOCS = lazy_compile(r"please visit: (\S+)")
_SECTION_STARTS = ("Hint:", "Developer debug context:", "For more details")


@dataclass
class GraphBreak:
    """One distinct graph break (by reason and user location), with the compilations that hit it."""

    reason: str  # the graph break type as torch names it, e.g. "Data-dependent branching"
    location: UserLocation | None  # innermost user frame
    count: int = 0  # compilations that hit it
    compile_ids: list[str] = field(default_factory=list)
    context: str | None = None  # "Encountered graph break when attempting to trace CALL: ..."
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    docs_url: str | None = None
    text: str = ""  # the reason as torch wrote it (without the tracebacks)
    eager_lines: list[UserLocation] = field(default_factory=list)  # ran eagerly because of it (analyses.sources)
    resume_functions: list[str] = field(default_factory=list)  # took over after it (analyses.sources)

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "location": self.location.to_json() if self.location else None,
            "count": self.count,
            "compile_ids": self.compile_ids,
            "context": self.context,
            "explanation": self.explanation,
            "hints": self.hints,
            "docs_url": self.docs_url,
            "text": self.text,
            "eager_lines": [{"filename": e.filename, "line": e.line, "code": e.code} for e in self.eager_lines],
            "resume_functions": self.resume_functions,
        }


@dataclass
class GraphBreaks:
    """The distinct graph breaks of the log, and where they were read from."""

    breaks: list[GraphBreak] = field(default_factory=list)
    total: int = 0  # graph break events, before deduplication
    source: str | None = None  # "dynamo_graph_break_reason" | "restart_reasons" | None (no breaks)

    def __bool__(self) -> bool:
        return bool(self.breaks)

    def to_json(self) -> dict[str, Any]:
        return {"distinct": len(self.breaks), "total": self.total, "source": self.source,
                "breaks": [b.to_json() for b in self.breaks]}


def parse_reason(text: str) -> dict[str, Any]:
    """Split torch's reason text into reason, context, explanation, hints, docs url."""
    body = text
    if "Graph Break Reason:" in body:
        body = body.split("Graph Break Reason:", 1)[1]
    body = body.split("User code traceback:", 1)[0].split("\nTraceback (most recent call last):", 1)[0].strip()
    lines = body.splitlines()
    context = None
    rest = lines
    # torch's wrappers name the situation on the first line and the graph break's own reason on the next one.
    if lines and (lines[0].strip().startswith(_CONTEXT) or lines[0].rstrip().endswith(_WRAPPED)):
        context = lines[0].strip()
        rest = lines[1:]
    reason = next((line.strip() for line in rest if line.strip()), context or "")
    explanation: list[str] = []
    hints: list[str] = []
    in_explanation = False
    for line in rest:
        stripped = line.strip()
        if stripped.startswith("Explanation:"):
            in_explanation = True
            explanation.append(stripped[len("Explanation:"):].strip())
        elif stripped.startswith(_SECTION_STARTS):
            in_explanation = False
            if stripped.startswith("Hint:"):
                hints.append(stripped[len("Hint:"):].strip())
        elif in_explanation:
            explanation.append(line.rstrip())
    docs = _DOCS.search(body)
    import textwrap  # here, not at the top: only logs with graph breaks need it (start-up time)

    # Continuation lines keep torch's indentation relative to the first line only.
    explanation_text = "\n".join(explanation[:1] + [textwrap.dedent("\n".join(explanation[1:]))]).strip()
    return {
        "reason": reason,
        "context": context,
        "explanation": explanation_text or None,
        "hints": hints,
        "docs_url": docs.group(1) if docs else None,
        "text": body,
    }


def _artifact_location(text: str) -> UserLocation | None:
    frame = last_user_frame(text, ("User code traceback:",)) or last_code_frame(text, ("User code traceback:",))
    header = _HEADER.search(text)
    if header is None:
        return frame
    filename, line = header["file"], int(header["line"])
    if frame is not None and frame.key == (filename, line):
        return frame
    # The break is where the header says; the traceback's frame there gives its function and code (a break in a
    # library the user runs, transformers' loss_function, under the user's line that called the model).
    body = section(text, "User code traceback:")
    there = [f for f in traceback_frames(body) if f.key == (filename, line)] if body else []
    return there[-1] if there else UserLocation(filename, line, None, None)


def compilation_key(compile_id: CompileId | None) -> str:
    """`[1/0]` for `[1/0_1]`: attempts of one compilation count once."""
    return str(dataclasses.replace(compile_id, attempt=0)) if compile_id else NO_COMPILE_ID


def graph_breaks(trace: Trace) -> GraphBreaks:
    events: list[tuple[str, dict[str, Any], UserLocation | None]] = []  # (compile id, parsed, location)
    for entry in trace.compiles.values():
        for artifact in entry.artifacts:
            if artifact.name == ARTIFACT:
                text = trace.payload_text(artifact.payload)
                events.append((compilation_key(entry.compile_id), parse_reason(text), _artifact_location(text)))
    source = ARTIFACT if events else None
    if not events:
        for entry in trace.compiles.values():
            for reason in (entry.metrics or {}).get("restart_reasons") or []:
                text = str(reason)
                if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" and text[0] not in text[1:-1]:
                    text = text[1:-1]  # older torch logged the reason's repr: 'skip function graph_break in ...'
                location = inline_frame(text)
                if location is None:
                    frames = [f for f in traceback_frames(text) if not is_framework_file(f.filename)]
                    location = frames[-1] if frames else None
                events.append((compilation_key(entry.compile_id), parse_reason(text), location))
        source = "restart_reasons" if events else None

    by_key: dict[tuple, GraphBreak] = {}
    for compile_key, parsed, location in events:
        key = (parsed["reason"], location.key if location else None)
        found = by_key.get(key)
        if found is None:
            found = by_key[key] = GraphBreak(
                reason=parsed["reason"], location=location, context=parsed["context"],
                explanation=parsed["explanation"], hints=parsed["hints"], docs_url=parsed["docs_url"], text=parsed["text"],
            )
        # A restarted attempt may log the same break again: count compilations, not log lines.
        if compile_key not in found.compile_ids:
            found.compile_ids.append(compile_key)
            found.count += 1
    ordered = sorted(by_key.values(), key=lambda b: -b.count)  # stable: first seen first among equals
    return GraphBreaks(breaks=ordered, total=len(events), source=source)

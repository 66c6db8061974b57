"""From a raw record to an Envelope: JSON decoded, context split from the event kind."""

from __future__ import annotations

import json
from dataclasses import field
from typing import Any

import orjson

from ..lazy_regex import lazy_compile
from ..model.ids import CompileId
from ..model.payloads import PayloadBuffer
from .lines import GlogPrefix, RawRecord, count_byte
from ..model.records import dataclass

# Keys torch adds to every envelope as context; every other key names the event kind.
CONTEXT_KEYS = frozenset(
    {
        "rank",
        "frame_id",
        "frame_compile_id",
        "attempt",
        "compiled_autograd_id",
        "has_payload",
        "stack",
        "subgraph_name",
    }
)


class EnvelopeError(Exception):
    """A record that cannot become an envelope; ``reason`` is a stats category."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(slots=True)
class Envelope:
    """One decoded envelope line of the log: its kind, metadata, compile id, rank and payload."""

    lineno: int
    glog: GlogPrefix
    kind: str  # "" when the envelope names no kind
    metadata: Any  # the value under the kind key
    obj: dict[str, Any]  # the whole decoded object (for raw.jsonl)
    compile_id: CompileId | None
    rank: int | None
    payload_buffer: PayloadBuffer | None = None  # the payload as logged (may be huge: spilled to disk)
    md5_ok: bool = True
    other_kinds: list[str] = field(default_factory=list)
    # (category, message): "invalid_utf8", "control_chars", "bad_compile_id" (read anyway; --strict fails on them)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    _payload_text: str | None = None

    @property
    def payload(self) -> str | None:
        """The payload as text (invalid UTF-8 replaced); read whole, so for handlers that parse it."""
        if self.payload_buffer is None:
            return None
        if self._payload_text is None:
            self._payload_text = self.payload_buffer.text()
        return self._payload_text

    @property
    def stored_payload(self) -> PayloadBuffer | str:
        """What a handler passes to the builder to keep the payload ("" when there is none)."""
        return self.payload_buffer if self.payload_buffer is not None else ""

    @property
    def subgraph_name(self) -> str | None:
        value = self.obj.get("subgraph_name")
        return value if isinstance(value, str) else None


def _decode_text(data: bytes, what: str, warnings: list[tuple[str, str]]) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        warnings.append(("invalid_utf8", f"invalid UTF-8 in {what} at byte {exc.start}; replaced"))
        return data.decode("utf-8", "replace")


_CONTROL = lazy_compile(r"[\x00-\x08\x0a-\x1f]")  # not TAB: valid between tokens


def _escape_controls(text: str) -> str:
    """Raw control characters (NUL, ...) are not allowed in JSON strings; escape them so the rest can be read."""
    return _CONTROL.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def _lenient_loads(text: str, warnings: list[tuple[str, str]]) -> Any:
    """What strict JSON refuses but the line still says: raw control characters (a NUL
    byte) inside strings, and NaN/Infinity (Python's json.dumps writes them). None if
    the text still cannot be read."""
    escaped = _escape_controls(text)
    try:
        obj = json.loads(escaped)
        orjson.dumps(obj)  # e.g. a lone surrogate escape: not text that can be written out
    except (ValueError, RecursionError, orjson.JSONEncodeError):
        return None
    if escaped != text:
        warnings.append(("control_chars", "control characters (e.g. NUL) inside the envelope JSON; read anyway"))
    return obj


def _writable(obj: Any) -> bool:
    try:
        orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return False
    return True


def decode_envelope(record: RawRecord, known_kinds: frozenset[str]) -> Envelope:
    """Decode one well-prefixed record; raise EnvelopeError for bad JSON."""
    warnings: list[tuple[str, str]] = []
    try:
        obj = orjson.loads(record.body)
    except orjson.JSONDecodeError:
        # Retry with replacement characters: one bad byte must not lose the record.
        text = _decode_text(record.body, "envelope", warnings)
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            obj = _lenient_loads(text, warnings)
            if obj is None:
                raise EnvelopeError("bad_json", f"envelope is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise EnvelopeError("bad_json", f"envelope is JSON {type(obj).__name__}, not an object")
    body = record.body
    if len(body) > 200 and count_byte(body, b"[") + count_byte(body, b"{") > 200 and not _writable(obj):
        # orjson reads 1024 levels of nesting but writes only 255: such an envelope could
        # be read but never written to raw.jsonl or shown.
        raise EnvelopeError("bad_json", "envelope JSON is nested too deeply")

    named = obj.keys() - CONTEXT_KEYS  # (a set: in C, where the list below is a loop in Python)
    if len(named) == 1:  # (nearly every envelope)
        kind, other = named.pop(), []
    else:
        kinds = [k for k in obj if k not in CONTEXT_KEYS]  # in the log's order: the first known kind wins
        known = [k for k in kinds if k in known_kinds]
        kind = known[0] if known else (kinds[0] if kinds else "")
        other = [k for k in kinds if k != kind]

    rank = obj.get("rank")
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool)):
        rank = None
    compile_id = CompileId.from_context(obj, warnings)
    # (Positional: one per record, and the fields' order is Envelope's.)
    env = Envelope(record.lineno, record.glog, kind, obj.get(kind) if kind else None, obj,  # type: ignore[arg-type]
                   compile_id, rank, None, True, other, warnings)

    buffer = record.payload
    expected = obj.get("has_payload")
    if buffer is not None or expected is not None:
        if buffer is None:
            buffer = PayloadBuffer()  # announced but missing (e.g. the log was cut): empty
        if isinstance(expected, str):
            env.md5_ok = buffer.md5() == expected
        bad = buffer.invalid_utf8_at()
        if bad is not None:
            warnings.append(("invalid_utf8", f"invalid UTF-8 in payload at byte {bad}; replaced"))
        env.payload_buffer = buffer
    return env

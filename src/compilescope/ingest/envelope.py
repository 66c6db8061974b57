"""From a raw record to an Envelope: JSON decoded, context split from the event kind."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..model.ids import CompileId
from .lines import GlogPrefix, RawRecord

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
    lineno: int
    glog: GlogPrefix
    kind: str  # "" when the envelope names no kind
    metadata: Any  # the value under the kind key
    obj: dict[str, Any]  # the whole decoded object (for raw.jsonl)
    compile_id: CompileId | None
    rank: int | None
    payload: str | None = None
    md5_ok: bool = True
    other_kinds: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def subgraph_name(self) -> str | None:
        value = self.obj.get("subgraph_name")
        return value if isinstance(value, str) else None


def _decode_text(data: bytes, what: str, warnings: list[str]) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        warnings.append(f"invalid UTF-8 in {what} at byte {exc.start}; replaced")
        return data.decode("utf-8", "replace")


def decode_envelope(record: RawRecord, known_kinds: frozenset[str]) -> Envelope:
    """Decode one well-prefixed record; raise EnvelopeError for bad JSON."""
    warnings: list[str] = []
    try:
        obj = orjson.loads(record.body)
    except orjson.JSONDecodeError:
        # Retry with replacement characters: one bad byte must not lose the record.
        try:
            obj = orjson.loads(_decode_text(record.body, "envelope", warnings))
        except orjson.JSONDecodeError as exc:
            raise EnvelopeError("bad_json", f"envelope is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise EnvelopeError("bad_json", f"envelope is JSON {type(obj).__name__}, not an object")

    kinds = [k for k in obj if k not in CONTEXT_KEYS]
    known = [k for k in kinds if k in known_kinds]
    kind = known[0] if known else (kinds[0] if kinds else "")
    other = [k for k in kinds if k != kind]

    rank = obj.get("rank")
    env = Envelope(
        lineno=record.lineno,
        glog=record.glog,  # type: ignore[arg-type]
        kind=kind,
        metadata=obj.get(kind) if kind else None,
        obj=obj,
        compile_id=CompileId.from_context(obj),
        rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
        other_kinds=other,
        warnings=warnings,
    )

    raw_payload = record.payload_bytes()
    expected = obj.get("has_payload")
    if raw_payload is not None or expected is not None:
        data = raw_payload if raw_payload is not None else b""
        if isinstance(expected, str):
            env.md5_ok = hashlib.md5(data, usedforsecurity=False).hexdigest() == expected
        env.payload = _decode_text(data, "payload", warnings)
    return env

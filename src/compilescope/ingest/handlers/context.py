"""Kinds that set up state other envelopes refer to: interned strings, frame stacks, fake tensors."""

from __future__ import annotations

from ...model.builder import TraceBuilder
from ..envelope import Envelope
from .registry import handles

MAX_STRING_GAP = 100_000  # indices may skip (lines lost) but not by more than this


@handles("str")
def intern_string(env: Envelope, b: TraceBuilder) -> bool:
    # {"str": ["/path/to/file.py", 3]}
    value = env.metadata
    if isinstance(value, list) and len(value) == 2 and isinstance(value[1], int) and not isinstance(value[1], bool):
        # torch numbers strings 0, 1, 2, ...: a far larger index is corruption, and the
        # string table (a list in raw.jsonl) must not become billions of nulls.
        if 0 <= value[1] <= len(b.string_table) + MAX_STRING_GAP:
            b.intern(value[1], str(value[0]))
            return False
        raise ValueError(f"str entry index {value[1]} out of range")
    raise ValueError(f"malformed str entry: {value!r}"[:200])


@handles("dynamo_start")
def dynamo_start(env: Envelope, b: TraceBuilder) -> bool:
    stack = env.metadata.get("stack") if isinstance(env.metadata, dict) else None
    b.compile(env.compile_id, env.lineno).stack = b.frames(stack)
    return False


@handles("describe_storage", "describe_tensor", "describe_source")
def fake_tensor_description(env: Envelope, b: TraceBuilder) -> bool:
    # Meta-tensor descriptions: in raw.jsonl only; nothing to show per compile yet.
    b.compile(env.compile_id, env.lineno)
    return False

"""Kinds that set up state other envelopes refer to: interned strings, frame stacks, fake tensors."""

from __future__ import annotations

from ...lazy_regex import lazy_compile
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


_CLASS = lazy_compile(r"^<class '(?P<name>[\w.]{1,300})'>$")


@handles("describe_storage", "describe_tensor", "describe_source")
def fake_tensor_description(env: Envelope, b: TraceBuilder) -> bool:
    # Meta-tensor descriptions: in raw.jsonl; of a traceable tensor subclass, its class and the metadata its
    # __tensor_flatten__ returned (ctx), which Dynamo guards on, kept per compile with the source describe_source
    # names it by (it follows the description: the same describer_id and id).
    entry = b.compile(env.compile_id, env.lineno)
    meta = env.metadata if isinstance(env.metadata, dict) else {}
    if env.kind == "describe_tensor" and meta.get("is_traceable_wrapper_subclass") is True:
        cls = _CLASS.match(str(meta.get("type") or ""))
        attrs = meta.get("attrs")
        entry.subclass_tensors.append({
            "describer_id": meta.get("describer_id"), "id": meta.get("id"), "source": None,
            "type": cls["name"] if cls else None, "ctx": str(meta["ctx"])[:2000] if meta.get("ctx") is not None else None,
            "attrs": [str(a) for a in attrs][:100] if isinstance(attrs, dict) else []})
    elif env.kind == "describe_source":
        for described in reversed(entry.subclass_tensors):
            if (described["source"] is None and described["describer_id"] == meta.get("describer_id")
                    and described["id"] == meta.get("id")):
                described["source"] = str(meta.get("source") or "")[:1000] or None
                break
    return False

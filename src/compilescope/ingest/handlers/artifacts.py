"""Named artifacts (`artifact`), dumped source files (`dump_file`) and links (`link`)."""

from __future__ import annotations

import orjson

from ...model.builder import TraceBuilder
from ...model.trace import DUMP, JSON, LINK, TEXT
from ..envelope import Envelope
from .registry import handles

CACHE_BADGES = {"hit": "\u2705", "miss": "\u274c", "bypass": "\u2753"}


# Artifacts that also get a page for people, not only the JSON (kernel -> user stack traces).
READABLE_ARTIFACTS = frozenset({"inductor_provenance_tracking_kernel_stack_traces"})


def cache_outcome(name: str) -> str | None:
    """fx_graph_cache_hit -> "hit", aotautograd_cache_bypass -> "bypass", others None."""
    for outcome in ("hit", "miss", "bypass"):
        if name.endswith(f"cache_{outcome}"):
            return outcome
    return None


@handles("artifact")
def artifact(env: Envelope, b: TraceBuilder) -> bool:
    meta = env.metadata if isinstance(env.metadata, dict) else {}
    name = str(meta.get("name", "artifact"))
    is_json = meta.get("encoding") == "json"
    cache = cache_outcome(name)
    readable = None
    if name in READABLE_ARTIFACTS:
        readable = _is_json(env.payload)
    b.add_artifact(
        env.compile_id, env.lineno, kind=env.kind, name=name, ext="json" if is_json else "txt",
        display=JSON if is_json else TEXT, payload=env.stored_payload,
        cache=cache, suffix=CACHE_BADGES.get(cache, "") if cache else "", readable=readable,
    )
    if readable:
        b.reserve_number()
    return True


def _is_json(text: str | None) -> bool:
    try:
        orjson.loads(text or "")
    except orjson.JSONDecodeError:
        return False
    return True


@handles("dump_file")
def dump_file(env: Envelope, b: TraceBuilder) -> bool:
    # A user source file torch dumped so that stack frames can link into it.
    name = env.metadata.get("name") if isinstance(env.metadata, dict) else None
    if not isinstance(name, str) or env.payload_buffer is None:
        raise ValueError("dump_file without a name or payload")
    artifact = b.add_artifact(env.compile_id, env.lineno, kind=env.kind, name=name, ext="html", display=DUMP,
                              payload=env.payload_buffer)
    b.dump_files[name] = artifact.payload
    return True


@handles("link")
def link(env: Envelope, b: TraceBuilder) -> bool:
    meta = env.metadata if isinstance(env.metadata, dict) else {}
    b.add_artifact(
        env.compile_id, env.lineno, kind=env.kind, name=str(meta.get("name", "link")), ext="", display=LINK,
        url=str(meta.get("url", "")),
    )
    return False

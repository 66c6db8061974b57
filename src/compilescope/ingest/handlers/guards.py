"""Guards and symbolic shapes: what Dynamo assumed, and what it made dynamic."""

from __future__ import annotations

import orjson

from ...model.builder import TraceBuilder
from ...model.trace import GUARDS, ExportEvent
from ..envelope import Envelope
from ..tlparse_types import TLPARSE_GUARD_KINDS, tlparse_reads_guard
from .registry import handles


@handles("dynamo_guards")
def dynamo_guards(env: Envelope, b: TraceBuilder) -> bool:
    guards = orjson.loads(env.payload) if env.payload else []
    if not isinstance(guards, list):
        raise ValueError("dynamo_guards payload is not a list")
    rows = []
    for guard in guards:
        if isinstance(guard, dict):
            rows.append(
                {
                    "code": str(guard.get("code", "")),
                    "stack": b.frames_json(guard.get("stack")) if guard.get("stack") else None,
                    "user_stack": b.frames_json(guard.get("user_stack")) if guard.get("user_stack") else None,
                }
            )
    b.compile(env.compile_id, env.lineno).guards = rows
    b.add_artifact(env.compile_id, env.lineno, kind=env.kind, name=env.kind, ext="html", display=GUARDS, data=rows)
    return False


def _with_stacks(env: Envelope, b: TraceBuilder) -> dict:
    """The metadata with interned stacks resolved to frames."""
    meta = dict(env.metadata) if isinstance(env.metadata, dict) else {"value": env.metadata}
    for key in ("stack", "user_stack", "framework_stack"):
        if key in meta:  # a stack that is not a list of frames becomes empty (it stays in raw.jsonl)
            meta[key] = b.frames_json(meta[key])
    meta["lineno"] = env.lineno
    return meta


@handles("symbolic_shape_specialization")
def specialization(env: Envelope, b: TraceBuilder) -> bool:
    b.compile(env.compile_id, env.lineno).specializations.append(_with_stacks(env, b))
    return False


@handles("guard_added", "guard_added_fast")
def guard_added(env: Envelope, b: TraceBuilder) -> bool:
    entry = _with_stacks(env, b)
    if env.kind == "guard_added":  # dtrace only: the guards torch.export evaluated (analyses/export.py)
        _keep_export_event(env, b, entry)
    entry["kind"] = env.kind
    b.compile(env.compile_id, env.lineno).guards_added.append(entry)
    return False


@handles("create_symbol", "create_unbacked_symbol")
def create_symbol(env: Envelope, b: TraceBuilder) -> bool:
    entry = _with_stacks(env, b)
    if env.kind == "create_unbacked_symbol":  # a leaf of export's expression provenance trees
        _keep_export_event(env, b, entry)
    entry["kind"] = env.kind
    b.compile(env.compile_id, env.lineno).symbols.append(entry)
    return False


@handles(
    "expression_created",
    "propagate_real_tensors",
    "propagate_real_tensors_provenance",
    "guard_on_data_dependent_error",
    "missing_fake_kernel",
    "mismatched_fake_kernel",
)
def export_diagnostic(env: Envelope, b: TraceBuilder) -> bool:
    # Draft-export diagnostics; analyses/export.py turns them into the export report's issues.
    b.compile(env.compile_id, env.lineno)
    _keep_export_event(env, b, _with_stacks(env, b))
    return False


def _keep_export_event(env: Envelope, b: TraceBuilder, meta: dict) -> None:
    metadata = {k: v for k, v in meta.items() if k != "lineno"}
    context = env.obj.get("stack")
    context_stack = b.frames(context) if isinstance(context, list) else None
    # Read before its stacks are resolved: tlparse drops a record whose stack is not of its frames' types.
    reads = tlparse_reads_guard(env.metadata) if env.kind in TLPARSE_GUARD_KINDS else True
    b.export_events.append(ExportEvent(env.lineno, env.kind, env.compile_id, metadata, context_stack, reads))

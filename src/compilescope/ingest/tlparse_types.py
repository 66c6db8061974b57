"""What tlparse 0.4.3 can read of a record, by its Rust types: a record with any field of another type it drops whole
("Failed to parse metadata JSON"). Read from the record as logged, before its stacks are resolved."""

from __future__ import annotations

from typing import Any

# The records tlparse reads as SymbolicShapePropagateRealTensorMetadata (types.rs Envelope).
TLPARSE_GUARD_KINDS = ("guard_added", "propagate_real_tensors_provenance")

# tlparse 0.4.3's types for a guard's record (types.rs: SymbolicShapePropagateRealTensorMetadata, FrameSummary,
# FrameLocals), as serde reads them: ("opt", T) is missing, null or a T; a struct's other fields are ignored.
_STR = ("str",)
_FRAME_SUMMARY = ("struct", {"filename": ("int", 0, 2**32 - 1), "line": ("int", -(2**31), 2**31 - 1), "name": _STR,
                             "loc": ("opt", _STR), "uninterned_filename": ("opt", _STR)})
_STACK_SUMMARY = ("opt", ("list", _FRAME_SUMMARY))
_NAMED_TEXTS = ("opt", ("map", ("opt", _STR)))
_GUARD_RECORD = ("struct", {
    # expr is an Option, yet tlparse panics on an evaluated guard without one (guard.expr.clone().unwrap()); ours
    # reads such a record as its types allow and numbers it, rather than copy the crash.
    "expr": ("opt", _STR), "result": ("opt", _STR), "user_stack": _STACK_SUMMARY, "stack": _STACK_SUMMARY,
    "expr_node_id": ("opt", ("int", 0, 2**64 - 1)), "symbol_to_sources": ("opt", ("map", _STR)),
    "frame_locals": ("opt", ("struct", {"locals": _NAMED_TEXTS, "symbols": _NAMED_TEXTS})), "prefix": ("opt", _STR)})


def _fits(value: Any, schema: tuple[Any, ...]) -> bool:
    """Whether serde reads value as the type schema describes (an int must be a JSON integer in range, not a float
    or a bool)."""
    kind = schema[0]
    if kind == "opt":
        return value is None or _fits(value, schema[1])
    if kind == "str":
        return type(value) is str
    if kind == "int":
        return type(value) is int and schema[1] <= value <= schema[2]
    if kind == "list":
        return type(value) is list and all(_fits(v, schema[1]) for v in value)
    if kind == "map":
        return type(value) is dict and all(_fits(v, schema[1]) for v in value.values())
    # A struct: a missing field reads as None, so only an Option may be missing.
    return type(value) is dict and all(_fits(value[name], field) if name in value else field[0] == "opt"
                                       for name, field in schema[1].items())


def tlparse_reads_guard(m: Any) -> bool:
    """Whether tlparse 0.4.3 reads a guard's record (guard_added, propagate_real_tensors_provenance) as logged; one it
    cannot read it drops, and gives no number."""
    return _fits(m, _GUARD_RECORD)

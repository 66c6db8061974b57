"""Dynamic shapes: symbols created, specializations and guards added, each with its user location.

From `create_symbol` / `create_unbacked_symbol`, `symbolic_shape_specialization` and
`guard_added_fast` / `guard_added` (the last two ask the same question: which user line
made a size concrete or added a condition on it).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..model.trace import Trace
from .userloc import UserLocation, last_code_stack_frame, last_user_stack_frame
from ..model.records import dataclass


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _location(entry: dict) -> UserLocation | None:
    # An empty user stack means no user code was running (e.g. AOTAutograd). A stack of a library's code only (a
    # transformers model, in site-packages) gives that library's line: the one that made the size dynamic.
    stack = entry.get("user_stack") if "user_stack" in entry else entry.get("stack")
    return last_user_stack_frame(stack) or last_code_stack_frame(stack)


@dataclass
class SymbolCreated:
    """A symbol (backed or unbacked) that a compile created for a dynamic size."""

    compile_id: str
    symbol: str
    value: str | None  # the example value it was created from
    range: str | None  # value range, e.g. "[2, int_oo]"
    source: str | None  # e.g. "L['x'].size()[0]"
    unbacked: bool
    location: UserLocation | None

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "symbol": self.symbol, "value": self.value, "range": self.range,
                "source": self.source, "unbacked": self.unbacked,
                "location": self.location.to_json() if self.location else None}


@dataclass
class Specialization:
    """A symbol that a compile specialized to one value, and why."""

    compile_id: str
    symbol: str
    value: str | None
    sources: list[str]
    reason: str | None
    location: UserLocation | None

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "symbol": self.symbol, "value": self.value, "sources": self.sources,
                "reason": self.reason, "location": self.location.to_json() if self.location else None}


@dataclass
class GuardAdded:
    """A guard on symbols that a compile added."""

    compile_id: str
    expr: str
    location: UserLocation | None

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "expr": self.expr,
                "location": self.location.to_json() if self.location else None}


@dataclass
class DynamicShapes:
    """The dynamic-shape events of the log: symbols created, specializations and guards added."""

    symbols: list[SymbolCreated] = field(default_factory=list)
    specializations: list[Specialization] = field(default_factory=list)
    guards: list[GuardAdded] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.symbols or self.specializations or self.guards)

    def to_json(self) -> dict[str, Any]:
        return {"symbols": [s.to_json() for s in self.symbols],
                "specializations": [s.to_json() for s in self.specializations],
                "guards": [g.to_json() for g in self.guards]}


def dynamic_shapes(trace: Trace) -> DynamicShapes:
    result = DynamicShapes()
    for entry in trace.sorted_compiles():
        key = entry.key
        for sym in entry.symbols:
            result.symbols.append(SymbolCreated(
                key, str(sym.get("symbol", "?")), _text(sym.get("val")), _text(sym.get("vr")), _text(sym.get("source")),
                sym.get("kind") == "create_unbacked_symbol", _location(sym)))
        for spec in entry.specializations:
            sources = spec.get("sources")
            result.specializations.append(Specialization(
                key, str(spec.get("symbol", "?")), _text(spec.get("value")),
                [str(s) for s in sources] if isinstance(sources, list) else [], _text(spec.get("reason")), _location(spec)))
        for guard in entry.guards_added:
            result.guards.append(GuardAdded(key, str(guard.get("expr", "?")), _location(guard)))
    return result

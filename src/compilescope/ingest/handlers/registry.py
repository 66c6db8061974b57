"""The handler registry: each handler module registers its kinds here (handlers/__init__.py imports them all)."""

from __future__ import annotations

from typing import Callable

from ...model.builder import TraceBuilder
from ..envelope import Envelope

Handler = Callable[[Envelope, TraceBuilder], bool]

HANDLERS: dict[str, Handler] = {}
# Kinds whose name carries a variable part (e.g. "aot_saved_tensors_hooks_pack <name>").
PREFIX_HANDLERS: dict[str, Handler] = {}


def handles(*kinds: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for kind in kinds:
            if kind in HANDLERS:
                raise RuntimeError(f"two handlers for {kind!r}")
            HANDLERS[kind] = fn
        return fn

    return register


def handles_prefix(prefix: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        PREFIX_HANDLERS[prefix] = fn
        return fn

    return register

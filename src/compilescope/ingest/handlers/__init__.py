"""One handler per event kind.

A handler reads one Envelope and records what it means through the TraceBuilder.
It returns True when it kept the envelope's payload in the model (so the payload
is not "unclaimed"). Handlers never render and never write files.
"""

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


def handler_for(kind: str) -> Handler | None:
    handler = HANDLERS.get(kind)
    if handler is None:
        handler = next((h for prefix, h in PREFIX_HANDLERS.items() if kind.startswith(prefix)), None)
    return handler


# Importing the modules fills HANDLERS.
from . import artifacts, context, graphs, guards, metrics  # noqa: E402,F401

KNOWN_KINDS = frozenset(HANDLERS)


def is_known(kind: str) -> bool:
    return kind in KNOWN_KINDS or any(kind.startswith(p) for p in PREFIX_HANDLERS)

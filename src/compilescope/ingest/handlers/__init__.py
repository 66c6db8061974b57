"""One handler per event kind.

A handler reads one Envelope and records what it means through the TraceBuilder.
It returns True when it kept the envelope's payload in the model (so the payload
is not "unclaimed"). Handlers never render and never write files.
"""

from __future__ import annotations

from .registry import HANDLERS, PREFIX_HANDLERS, Handler, handles, handles_prefix

__all__ = ["HANDLERS", "KNOWN_KINDS", "PREFIX_HANDLERS", "Handler", "handler_for", "handles", "handles_prefix", "is_known"]


def handler_for(kind: str) -> Handler | None:
    handler = HANDLERS.get(kind)
    if handler is None:
        handler = next((h for prefix, h in PREFIX_HANDLERS.items() if kind.startswith(prefix)), None)
    return handler


# Importing the modules fills HANDLERS.
from . import artifacts, context, graphs, guards, metrics  # noqa: E402,F401,I001

KNOWN_KINDS = frozenset(HANDLERS)


def is_known(kind: str) -> bool:
    return kind in KNOWN_KINDS or any(kind.startswith(p) for p in PREFIX_HANDLERS)

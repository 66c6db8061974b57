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


def handles(*kinds: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for kind in kinds:
            if kind in HANDLERS:
                raise RuntimeError(f"two handlers for {kind!r}")
            HANDLERS[kind] = fn
        return fn

    return register


# Importing the modules fills HANDLERS.
from . import artifacts, context, graphs, guards, metrics  # noqa: E402,F401

KNOWN_KINDS = frozenset(HANDLERS)

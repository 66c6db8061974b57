"""Insights of the torch 2.13 fixture logs, computed once per test session."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from compilescope.analyses.insights import Insights
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.installed_guards import GUARDS_ARTIFACT, GuardTrees
from compilescope.ingest.reader import read_trace
from compilescope.model.trace import Trace

from ..conftest import torch213

# The logs the insights tests and snapshots cover (tests/data/torch213/README.md says what each holds).
LOGS = (
    "graph_breaks", "recompiles", "dynamic_shapes", "training", "compile_error_fallback", "compile_error_lowering",
    "compile_error_raises", "cache_cold", "cache_warm",
)


@lru_cache(maxsize=None)
def insights_of(name: str) -> Insights:
    with read_trace(str(torch213(f"{name}.log"))) as trace:
        return insights(trace)


class TreeReads:
    """A log's trace with its guard trees parsed first, as analyze parses them for the report (the recompiles and
    the source pages read them), and the reads of those trees' text that follow: an analysis handed `trees` should
    read none of them again."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.trees = GuardTrees(trace)
        self.payloads = [a.payload for e in trace.compiles.values() for a in e.artifacts
                         if a.name == GUARDS_ARTIFACT and a.payload is not None]
        for payload in self.payloads:
            self.trees.of(payload)
        self.guards = {(p.offset, p.length) for p in self.payloads}
        self._reads: list[tuple[int, int]] = []
        payload_text = trace.payload_text

        def counted(payload, *args, **kwargs):
            self._reads.append((payload.offset, payload.length))
            return payload_text(payload, *args, **kwargs)

        trace.payload_text = counted  # type: ignore[method-assign]

    @property
    def read(self) -> list[tuple[int, int]]:
        """The guard trees' payloads whose text was read since (offset, length), in order, with repeats."""
        return [r for r in self._reads if r in self.guards]


@contextmanager
def tree_reads(log: Path) -> Iterator[TreeReads]:
    with read_trace(str(log)) as trace:
        yield TreeReads(trace)

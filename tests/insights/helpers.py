"""Insights of the torch 2.13 fixture logs, computed once per test session."""

from __future__ import annotations

from functools import lru_cache

from compilescope.analyses.insights import Insights
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

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

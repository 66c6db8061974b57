"""Bundled example traces: real torch 2.13 (CPU) logs of small programs, gzip-compressed.

They come from tests/data/torch213/make_traces.py (the programs are beside it);
regenerate both together.
"""

from __future__ import annotations

from importlib import resources

# (scenario, what it shows), in the order the demo index lists them.
SCENARIOS = [
    ("graph_breaks", "Three distinct graph breaks: a data-dependent branch, print(), and .item()"),
    ("recompiles", "Recompiles from shape, dtype and requires_grad changes, up to the recompile limit"),
    ("dynamic_shapes", "Automatic dynamic shapes: symbols created, guards added, mark_dynamic"),
    ("training", "A training step: forward and backward graphs, optimizer step"),
    ("compile_error_fallback", "An Inductor C++ compile error that falls back to eager"),
]


def bundled_trace(scenario: str):
    """A Traversable for the scenario's .log.gz (use with resources.as_file)."""
    return resources.files(__package__).joinpath("traces", f"{scenario}.log.gz")

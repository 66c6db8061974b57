"""The demo: small example programs (programs/, run live by live.py) and bundled traces of them.

The bundled traces are real torch 2.13 (CPU) logs of these very programs, gzip-compressed,
shown when torch is not installed (or with --bundled). scripts/make_demo_traces.py records
them with live.run_example, the function the live demo runs: after changing a program,
rerun it.
"""

from __future__ import annotations

from importlib import resources

# (scenario, what it shows), in the order the demo index lists them.
SCENARIOS = [
    ("graph_breaks", "Three distinct graph breaks: a data-dependent branch, print(), and .item()"),
    ("recompiles", "Recompiles from shape, dtype and requires_grad changes, up to the recompile limit"),
    ("dynamic_shapes", "Automatic dynamic shapes: symbols created, guards added, mark_dynamic"),
    ("training", "A training step compiled by Inductor: forward and backward kernels, provenance, caches"),
    ("compile_error_fallback", "An Inductor C++ compile error that falls back to eager"),
]


def bundled_trace(scenario: str):
    """A Traversable for the scenario's .log.gz (use with resources.as_file)."""
    return resources.files(__package__).joinpath("traces").joinpath(f"{scenario}.log.gz")  # one name per call: Python 3.10

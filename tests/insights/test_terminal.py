"""Snapshots of `compilescope summary` (the rich terminal summary) on the torch 2.13 logs.

Regenerate after an intended change, then review the diff:

    COMPILESCOPE_UPDATE_SNAPSHOTS=1 python3 -m pytest -q tests/insights/test_terminal.py
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from compilescope.render.terminal import print_summary

from .helpers import LOGS, insights_of

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("COMPILESCOPE_UPDATE_SNAPSHOTS") == "1"


def render(name: str) -> str:
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    print_summary(insights_of(name), console)
    # Trailing spaces are padding, not content (and editors strip them from the snapshot files).
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


@pytest.mark.parametrize("name", LOGS)
def test_summary_snapshot(name):
    text = render(name)
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: run with COMPILESCOPE_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", LOGS)
def test_summary_fits_100_columns_without_colour(name):
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    print_summary(insights_of(name), console)
    out = console.file.getvalue()
    assert "\x1b[" not in out  # no escape codes without a colour system
    assert max(len(line) for line in out.splitlines()) <= 100


def test_summary_says_what_matters_in_words():
    # Meaning never rides on colour alone: severities, the limit flag and arrows are text.
    text = render("recompiles")
    assert "ERROR  h hit the recompile limit and runs uncompiled" in text
    assert "[RECOMPILE LIMIT HIT]" in text
    assert "[0/0] → [0/1] → [0/2] → [0/3]" in text
    assert "failed guard of [0/1]: tensor 'x' dtype mismatch. expected Float, actual Double" in text
    text = render("graph_breaks")
    assert "Graph breaks (3 distinct, 4 in total)" in text
    text = render("compile_error_lowering")
    assert "[0/0]  Inductor lowering  ·  InductorError" in text

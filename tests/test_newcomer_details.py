"""Small things a newcomer sees: counts in words, one term for compile ids, no NumPy warning, a clean git status."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from compilescope.wording import count

from .conftest import REPO, run_cli, torch213

SOURCES = REPO / "src" / "compilescope"


def test_count_is_grammatical():
    assert (count(1, "compile id"), count(0, "compile id"), count(8, "compile id")) == (
        "1 compile id", "0 compile ids", "8 compile ids")
    assert count(2, "process") == "2 processes"


def test_no_text_says_item_s():
    """ "1 problem(s)" reads like a form; every count goes through wording.count (Jinja: |count)."""
    pattern = re.compile(r"[a-z]\(s\)(?=[ .,:;<])(?! for )")  # words, not code like int(s) or str(s) for s
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
             for path in sorted([*SOURCES.rglob("*.py"), *SOURCES.rglob("*.html")])
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if pattern.search(line.replace("http(s)", "")) and not line.lstrip().startswith(("#", '"""'))
             and path.name != "wording.py"]
    assert found == []


def test_one_term_for_compile_ids(tmp_path, capsys):
    run_cli(torch213("graph_breaks.log"), "-o", tmp_path / "out", "--no-browser")
    index = (tmp_path / "out" / "index.html").read_text()
    assert '<div class="n">8</div><div class="l">compile ids</div>' in index
    assert "compilations</div>" not in index
    assert run_cli("summary", torch213("graph_breaks.log")) == 0
    out = capsys.readouterr().out
    assert "· 8 compile ids" in out and "Compile time (261 ms)" in out
    assert not re.search(r"\d compiles?\b(?! id)", out)


def test_one_failure_row_says_1_row(tmp_path):
    run_cli(torch213("recompiles.log"), "-o", tmp_path / "out", "--no-browser")
    page = (tmp_path / "out" / "failures_and_restarts.html").read_text()
    assert " 1 row." in page and "row(s)" not in page


def test_the_torch_extra_brings_numpy():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "torch==2.13.0" in extras["torch"] and "numpy" in extras["torch"]


@pytest.mark.torch
def test_importing_torch_prints_no_numpy_warning():
    proc = subprocess.run([sys.executable, "-c", "import torch; torch.ones(2).sum()"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "NumPy" not in proc.stderr, proc.stderr


def test_demo_and_diagnose_outputs_are_ignored_by_git():
    ignored = (REPO / ".gitignore").read_text().split()
    assert "compilescope_demo/" in ignored and "compilescope_diagnose/" in ignored and "compilescope_traces/" in ignored

"""compilescope runs on the oldest Python pyproject.toml admits (3.10), though CI has a newer one.

mypy checks the standard library's API against that version (pyproject's [tool.mypy] python_version), but not
two things Python 3.10 refuses at run time that newer ones accept: a regular expression's possessive quantifiers or
atomic groups (3.11: `\\d{1,9}+` is "multiple repeat" on 3.10, raised when the pattern is compiled, lazily for
most), and a generic NamedTuple (3.11). Both once made every report fail on 3.10. This reads the source for them.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from pathlib import Path

import pytest

from .conftest import REPO

SRC = REPO / "src" / "compilescope"

if sys.version_info >= (3, 11):
    import re._constants as sre_constants
    import re._parser as sre_parser
else:  # pragma: no cover - 3.10 has neither feature, and parses them as errors
    sre_constants = sre_parser = None

NEWER = ("POSSESSIVE_REPEAT", "ATOMIC_GROUP")


def _ops(parsed):
    """Every opcode of a parsed pattern, nested ones too."""
    for op, av in parsed:
        yield str(op)
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            yield from _ops(av[2])
        elif name == "SUBPATTERN":
            yield from _ops(av[3])
        elif name == "ATOMIC_GROUP":
            yield from _ops(av)
        elif name == "BRANCH":
            for branch in av[1]:
                yield from _ops(branch)
        elif name in ("ASSERT", "ASSERT_NOT"):
            yield from _ops(av[1])
        elif name == "GROUPREF_EXISTS":
            yield from _ops(av[1])
            if av[2]:
                yield from _ops(av[2])


def _newer_regex_features(text: str) -> set[str]:
    # Prose naming C++ or g++ parses as a possessive "+": it is no pattern.
    text = text.replace("C++", "C").replace("g++", "g")
    try:
        with warnings.catch_warnings():  # ("possible nested set": prose with brackets)
            warnings.simplefilter("ignore")
            parsed = sre_parser.parse(text)
    except (re.error, OverflowError, RecursionError):  # not a pattern (most strings)
        return set()
    return set(_ops(parsed)) & set(NEWER)


def _constants(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and len(node.value) > 2:
            value = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            yield node.lineno, value


def test_pyproject_admits_python_3_10():
    """The version this file guards: if the floor moves, these checks move with it."""
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^requires-python = ">=3\.10"$', pyproject, re.M)
    assert re.search(r'^python_version = "3\.10"$', pyproject, re.M)


@pytest.mark.skipif(sre_parser is None, reason="on 3.10 itself, compiling each pattern shows it")
def test_no_pattern_uses_a_regex_feature_newer_than_python_3_10():
    found = [f"{path.relative_to(REPO)}:{line}: {sorted(features)}"
             for path in sorted(SRC.rglob("*.py")) for line, text in _constants(path)
             if (features := _newer_regex_features(text))]
    assert not found, "Python 3.10 cannot compile these (possessive quantifiers, atomic groups are 3.11):\n" + "\n".join(found)


def test_the_check_finds_what_python_3_10_refuses():
    """The scan is not blind: the patterns 3.10 refused, as they were written."""
    assert _newer_regex_features(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d{1,9}+), in (?P<func>.+)$') == {
        "POSSESSIVE_REPEAT"}
    assert _newer_regex_features(r"(?>a|ab)c") == {"ATOMIC_GROUP"}
    assert _newer_regex_features("a C++ compile, then g++") == set()
    assert _newer_regex_features(r"\d{1,9} in") == set()


def test_no_generic_named_tuple():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).split("[")[0].rsplit(".", 1)[-1] for b in node.bases}
                if {"NamedTuple", "Generic"} <= bases:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: class {node.name}")
    assert not found, "a generic NamedTuple is Python 3.11's (TypeError on 3.10):\n" + "\n".join(found)

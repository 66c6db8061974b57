"""The tests start no program found on PATH: CI's `python3` has no torch, and PATH's tlparse or torchrun may be
another version (or absent). Child programs run with sys.executable or the venv's bin/ (tests/conftest.py)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Calls that start a program: subprocess's, and the helpers that pass their words on to one.
STARTERS = {"run", "Popen", "check_call", "check_output", "call", "compilescope", "run_cli", "diagnose"}
PATH_TOOLS = {"python", "python3", "torchrun", "tlparse", "compilescope", "pip"}
ALLOWED_WHICH = {"chromium"}  # a system package (apt), not a Python tool; tests/browser.py falls back to /usr/bin


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


ON_PURPOSE = "# PATH on purpose"  # a test of what happens with a given PATH (it sets PATH itself)


def path_tools_started(source: str) -> list[str]:
    found = []
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or ON_PURPOSE in lines[node.lineno - 1]:
            continue
        name = _name(node.func)
        if name == "which":
            words = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if not set(words) <= ALLOWED_WHICH:
                found.append(f"line {node.lineno}: shutil.which({', '.join(map(repr, words))})")
        elif name in STARTERS:
            for words in [node.args, *(a.elts for a in node.args if isinstance(a, (ast.List, ast.Tuple)))]:
                values = [w.value if isinstance(w, ast.Constant) else None for w in words]
                for before, word in zip([None, *values], values):
                    if word in PATH_TOOLS and before != "-m":  # `python -m compilescope` names a module
                        found.append(f"line {node.lineno}: {name}(... {word!r} ...)")
    return found


def test_the_checker_finds_a_bare_python3_and_a_which():
    assert path_tools_started('compilescope("run", "--", "python3", "x.py", cwd=p)') == ["line 1: compilescope(... 'python3' ...)"]
    assert path_tools_started('t = shutil.which("torchrun")') == ["line 1: shutil.which('torchrun')"]
    assert path_tools_started('compilescope("run", "--", sys.executable, "x.py", cwd=p)') == []


def test_no_test_starts_a_tool_from_path():
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in sorted(TESTS.rglob("*.py"))
        if "data" not in path.relative_to(TESTS).parts and path.name != "test_no_path_tools.py"
        if (found := path_tools_started(path.read_text()))
    }
    assert offenders == {}

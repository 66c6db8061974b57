"""The decompiler without torch: plain functions in Dynamo's subset round-trip; anything else is a disassembly."""

from __future__ import annotations

import ast

from compilescope.decompile import decompile

from . import subset_check


def test_subset_round_trip_on_this_python(capsys):
    assert subset_check.main() == 0, capsys.readouterr().out


def _loop(xs):
    total = 0
    for x in xs:
        total += x
    return total


def _try(x):
    try:
        return 1 / x
    except ZeroDivisionError:
        return None


def test_outside_the_subset_is_all_comments():
    for fn, why in ((_loop, "GET_ITER"), (_try, "exception table")):
        d = decompile(fn.__code__)
        assert not d.ok and why in d.problem
        assert ast.parse(d.source).body == []  # nothing that could run
        assert sum(line.startswith("# >>") for line in d.source.splitlines()) <= 1
        assert f"could not decompile {fn.__name__}" in d.source.splitlines()[0]


def test_statements_carry_their_source_lines():
    d = decompile(subset_check.branches.__code__)
    first = subset_check.branches.__code__.co_firstlineno
    assert d.ok and f"# line {first + 1}" in d.source and f"# line {first + 6}" in d.source


def test_simplify_moves_a_temporary_only_where_nothing_runs_in_between():
    from compilescope.decompile.simplify import simplify

    def body(*lines):
        return "def f(a, c, k, g, h):\n" + "".join(f"    {line}\n" for line in lines)

    # the next statement reads it first: moved
    assert simplify(body("_cs_t0 = a.b", "x = _cs_t0", "return x")) == body("x = a.b", "return x")
    # an assignment evaluates its value before its target
    assert simplify(body("_cs_t0 = g()", "c[k] = _cs_t0", "return c")) == body("c[k] = g()", "return c")
    # a call that runs before the read: kept (g() might change a.b)
    kept = body("_cs_t0 = a.b", "x = g(h(), _cs_t0)", "return x")
    assert simplify(kept) == kept
    # read twice, or not by the next statement: kept
    twice = body("_cs_t0 = g()", "x = _cs_t0", "return _cs_t0")
    assert simplify(twice) == twice
    later = body("_cs_t0 = g()", "y = h()", "return _cs_t0")
    assert simplify(later) == later


def test_simplify_parses_only_the_lines_that_assign_a_temporary_and_the_statements_after_them(monkeypatch):
    """Other lines cannot be a temporary's assignment (they do not hold its name): not parsed, each pass."""
    from compilescope.decompile import simplify as module

    parsed: list[str] = []
    parse_line = module._parse_line
    monkeypatch.setattr(module, "_parse_line", lambda text: parsed.append(text.strip()) or parse_line(text))
    source = "def f(a, g):\n    y = a + 1\n    _cs_t0 = a.b\n    x = g(_cs_t0)\n    z = y * x\n    return z\n"
    assert module.simplify(source) == "def f(a, g):\n    y = a + 1\n    x = g(a.b)\n    z = y * x\n    return z\n"
    # the first pass: the temporary's line and the statement after it, which reads it (once as a candidate itself);
    # the second pass finds no temporary left
    assert parsed == ["x = g(_cs_t0)", "_cs_t0 = a.b", "x = g(_cs_t0)"]

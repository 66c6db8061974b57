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

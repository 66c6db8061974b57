"""The dis text of a *_MODIFIED_BYTECODE artifact comes from a log: untrusted, read in linear time, never raising."""

from __future__ import annotations

import dis
import io
import time

from compilescope.decompile.distext import parse_dis


def _listing() -> str:
    def f(x, y):
        z = x + y
        if z > 0:
            return z * 2
        return z

    buf = io.StringIO()
    dis.dis(f, file=buf)
    return buf.getvalue()


def test_a_real_listing_still_parses():
    instrs = parse_dis(_listing())
    assert instrs and {"BINARY_OP", "RETURN_VALUE"} <= {i.opname for i in instrs}


def test_forged_numbers_and_spaces_are_refused_quickly():
    forged = [
        "  5 >>   10 LOAD_FAST  " + "1" * 6000,  # int() of more than 4,300 digits raises ValueError
        "  1 " + " " * 50_000 + "2 X",  # overlapping runs of spaces: quadratic in the old pattern
        "1 " * 25_000,
    ]
    for line in forged:
        started = time.perf_counter()
        parse_dis(_listing() + line + "\n")  # returns (no ValueError), whatever it makes of the line
        assert time.perf_counter() - started < 2.0, line[:40]

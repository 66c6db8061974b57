"""The dis text of a *_MODIFIED_BYTECODE artifact comes from a log: untrusted, read in linear time, never raising."""

from __future__ import annotations

import dis
import io
import subprocess
import sys

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
    # Each forged line cost the old parser minutes or a ValueError. The child's time limit fails a hang (no time is
    # asserted); what is asserted is that the real listing before the forged line is read as it is alone.
    code = (
        "import dis, io\n"
        "from compilescope.decompile.distext import parse_dis\n"
        "def f(x, y):\n"
        "    z = x + y\n"
        "    if z > 0:\n"
        "        return z * 2\n"
        "    return z\n"
        "buf = io.StringIO()\n"
        "dis.dis(f, file=buf)\n"
        "listing = buf.getvalue()\n"
        "alone = [(i.opname, i.offset) for i in parse_dis(listing)]\n"
        "forged = ['  5 >>   10 LOAD_FAST  ' + '1' * 6000,\n"  # int() of more than 4,300 digits raises ValueError
        "          '  1 ' + ' ' * 50_000 + '2 X',\n"  # overlapping runs of spaces: quadratic in the old pattern
        "          '1 ' * 25_000]\n"
        "for line in forged:\n"
        "    read = [(i.opname, i.offset) for i in parse_dis(listing + line + '\\n')]\n"
        "    assert alone and read[:len(alone)] == alone, (line[:40], read[:5])\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-2000:]

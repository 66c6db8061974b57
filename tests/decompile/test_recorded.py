"""The transformed code recorded into the TORCH_TRACE log: by `run`'s child hook (fixture) and by capture()."""

from __future__ import annotations

import ast
import subprocess

import pytest

from compilescope.decompile.recorded import HEADER, TRANSFORMED
from compilescope.ingest.reader import read_trace

from ..conftest import tlparse_binary, torch213


def _transformed(log) -> dict[str, str]:
    found = {}
    with read_trace(str(log)) as trace:
        for entry in trace.compiles.values():
            for a in entry.artifacts:
                if a.name == TRANSFORMED:
                    found[str(entry.compile_id)] = trace.payload_text(a.payload)
    return found


def test_fixture_has_the_transformed_code_of_every_frame():
    found = _transformed(torch213("transformed_code.log"))
    assert sorted(found) == ["[0/0]", "[1/0_1]", "[2/0_1]", "[3/0]"]  # the attempt that succeeded
    for text in found.values():
        first, _, source = text.partition("\n")
        assert first.startswith(HEADER) and "decompiled from Python 3.11 bytecode" in first
        tree = ast.parse(source)
        assert isinstance(tree.body[0], ast.FunctionDef)
    assert found["[0/0]"].splitlines()[1] == "def f(x, n):"
    assert "__resume_at_" in found["[0/0]"] and "if " in found["[0/0]"]


def test_tlparse_still_reads_the_log(tmp_path):
    out = tmp_path / "tl"
    proc = subprocess.run([tlparse_binary(), str(torch213("transformed_code.log")), "-o", str(out), "--no-browser"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert list((out / "-_0_0_0").glob("compilescope_transformed_code_*.txt"))


@pytest.mark.torch
def test_capture_records_transformed_code(tmp_path):
    import torch

    import compilescope

    def g(x):
        y = x.cos()
        print("break")
        return y + 1

    torch._dynamo.reset()
    with compilescope.capture(trace_dir=tmp_path / "trace", out=tmp_path / "report") as cap:
        torch.compile(g, backend="eager")(torch.ones(3))
    found = _transformed(cap.log)
    assert len(found) == 2
    assert any(t.splitlines()[1] == "def g(x):" for t in found.values())
    torch._dynamo.reset()

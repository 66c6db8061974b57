"""`compilescope run -o OUT`: a bad OUT fails before the program runs; a report that fails after it names the trace."""

from __future__ import annotations

import shlex
import sys

import pytest

from ..conftest import torch213
from .conftest import OUR_PROGRAMS, compilescope

pytestmark = pytest.mark.torch  # `run` of a .py script needs torch importable here (it does not compile)
PROGRAM = OUR_PROGRAMS / "writes_a_log.py"


def test_existing_output_dir_fails_before_the_program_runs(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_text("an earlier report")
    ran = tmp_path / "ran"
    proc = compilescope("run", "--no-browser", "-o", out, PROGRAM, torch213("graph_breaks.log"), ran, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"compilescope: error: {out} already exists; pass --overwrite to replace it"
    assert not ran.exists()  # the program never ran
    assert not (tmp_path / "compilescope_traces").exists()
    assert (out / "index.html").read_text() == "an earlier report"


def test_output_under_a_file_fails_before_the_program_runs(tmp_path):
    (tmp_path / "afile").write_text("x")
    ran = tmp_path / "ran"
    proc = compilescope("run", "--no-browser", "-o", tmp_path / "afile" / "report", PROGRAM,
                        torch213("graph_breaks.log"), ran, cwd=tmp_path)
    assert proc.returncode == 2 and "Not a directory" in proc.stderr
    assert not ran.exists()


@pytest.mark.parametrize("out, traces", [("traces", "traces"), ("outer", "outer/traces")])
def test_output_that_would_hold_the_trace_directory_fails_before_the_program_runs(out, traces, tmp_path):
    # -o the trace directory (or one above it): the report could never replace it, and the run was wasted.
    ran = tmp_path / "ran"
    proc = compilescope("run", "--no-browser", "--trace-dir", traces, "-o", out, PROGRAM,
                        torch213("graph_breaks.log"), ran, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"compilescope: error: -o {out} would hold the trace directory {traces}")
    assert not ran.exists() and not (tmp_path / traces).exists()


def test_report_that_cannot_be_written_after_the_run_names_the_kept_trace(tmp_path):
    out, ran, traces = tmp_path / "out", tmp_path / "it ran", tmp_path / "my traces"  # (the commands quote them)
    proc = compilescope("run", "--no-browser", "--trace-dir", traces, "-o", out, PROGRAM,
                        torch213("graph_breaks.log"), ran, out, cwd=tmp_path)  # the program fills OUT meanwhile
    assert ran.exists()
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    program = shlex.join([sys.executable, str(PROGRAM), str(torch213("graph_breaks.log")), str(ran), str(out)])
    assert lines[0] == f"compilescope: running {program} with TORCH_TRACE={traces}"
    assert lines[-2] == (f"compilescope: the trace is kept in {traces}; write its report with: "
                         f"compilescope '{traces}' -o DIR")
    assert lines[-1] == (f"compilescope: error: refusing to replace {out}: it does not hold a compilescope report; "
                         "choose another output directory")
    assert (traces / "dedicated_log_torch_trace_test.log").exists()

"""`compilescope run --profile P -- prog`: the profile the program writes is read once it has ended."""

from __future__ import annotations

import sys

import pytest

from ..capture.conftest import compilescope
from .test_runtime import _gpu_pair

pytestmark = pytest.mark.torch

# Stands in for a profiled program: it "writes" its log and its profile (copies of the real GPU pair).
PROGRAM = """
import os, shutil, sys
shutil.copy(sys.argv[1], os.path.join(os.environ["TORCH_TRACE"], "dedicated_log_torch_trace_x.log"))
shutil.copy(sys.argv[2], "profile.json")
"""


def test_run_reads_the_profile_the_program_wrote(tmp_path):
    log, profile = _gpu_pair()
    (tmp_path / "prog.py").write_text(PROGRAM)
    done = compilescope("run", "--no-browser", "-o", tmp_path / "report", "--profile", "profile.json", "--",
                        sys.executable, "prog.py", log, profile, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "report" / "runtime.html").read_text()
    assert "triton_poi_fused_addmm_gelu_view_1" in html and "34\u00a0ms of GPU time" in html  # 34.45 ms, worded as every
    # duration (a no-break space before its unit: the page keeps a time on one line)


def test_run_writes_the_report_when_the_program_wrote_no_profile(tmp_path):
    # The program traced but did not write profile.json (it failed before, or the path was mistyped): run still
    # writes the report, without a Runtime page, says why, and exits with the program's status.
    log, _ = _gpu_pair()
    (tmp_path / "prog.py").write_text(PROGRAM.replace('shutil.copy(sys.argv[2], "profile.json")', ""))
    done = compilescope("run", "--no-browser", "-o", tmp_path / "report", "--profile", "profile.json", "--",
                        sys.executable, "prog.py", log, "unused", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "index.html").exists() and not (tmp_path / "report" / "runtime.html").exists()
    assert ("compilescope: warning: cannot read profile profile.json: No such file or directory: the report has no "
            "runtime from it") in done.stderr

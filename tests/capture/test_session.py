"""capture() in a long-lived process (a notebook's kernel, a test session) that calls it again and again: after each
block the process is as before it (sys.excepthook, threading.excepthook, the file faulthandler writes to, nothing of
the block kept alive), each run's trace directory holds what its block did only, and a hook the user installed between
blocks is chained, not lost. The session: programs/capture_session.py (its docstring lists the steps)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

from compilescope.analyses.crash import parse_crash
from compilescope.ingest.crash_files import read_crash_file

from .conftest import CHILD_TIMEOUT_S, OUR_PROGRAMS, clean_env, compilescope

pytestmark = pytest.mark.torch

PROGRAM = OUR_PROGRAMS / "capture_session.py"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    base = tmp_path_factory.mktemp("session")
    proc = subprocess.run([sys.executable, str(PROGRAM), str(base)], cwd=base, env=clean_env(), capture_output=True,
                          text=True, timeout=CHILD_TIMEOUT_S)
    said = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc, {fact.get("step", 0): fact for fact in said}, base


def _compiled_frames(directory) -> list[str]:
    """The function each dynamo_start of the directory's log names (its stack's last frame), from the raw log."""
    [log] = [p for p in directory.iterdir() if p.name.endswith(".log")]
    starts = [json.loads(line.split("] ", 1)[1])["dynamo_start"] for line in log.read_text().splitlines()
              if '{"dynamo_start": ' in line]
    return [start["stack"][-1]["name"] for start in starts]


def test_after_each_block_the_excepthooks_are_the_ones_before_it(session):
    """A block chains sys.excepthook and threading.excepthook to record an uncaught exception in its crash file; once
    it has ended they were left installed (once a process), passing every exception on."""
    proc, said, _ = session
    assert said[1]["hooks"] == {"sys": "original", "threading": "original"}, proc.stderr[-2000:]
    # A block an exception left: sys.excepthook stays chained (recording that exception only, should it end the
    # process) until the next block ends; threading's is restored.
    assert said[2]["hooks"] == said[3]["hooks"] == {"sys": "another", "threading": "original"}
    assert said[4]["hooks"] == {"sys": "original", "threading": "original"}


def test_the_exception_a_block_let_out_is_not_kept_alive(session):
    """The exception that left block 2 was caught (the shell printed it): nothing of compilescope holds it, its
    traceback, or the frames' locals (a 4 MB tensor here; a model's activations in a notebook)."""
    _, said, _ = session
    assert said[2]["activations_freed"] is True


def test_each_run_holds_its_block_only(session):
    """The thread's exception and the compile after the blocks are in neither run; no crash file is left: no block
    was running when the thread died, and the ValueError never reached sys.excepthook."""
    _, said, base = session
    assert said[3]["files"] == {"run1": [p.name for p in (base / "run1").iterdir()],
                                "run2": [p.name for p in (base / "run2").iterdir()]}
    assert [re.fullmatch(r"dedicated_log_torch_trace_\w+\.log", name) is not None
            for run in ("run1", "run2") for name in said[3]["files"][run]] == [True, True]
    assert _compiled_frames(base / "run1") == ["first"]
    assert _compiled_frames(base / "run2") == ["second"]


def test_an_excepthook_installed_between_blocks_is_chained_and_the_ending_recorded(session):
    """The user replaced sys.excepthook after the first blocks (rich.traceback.install() does): run4's uncaught
    RuntimeError is recorded beside its log and still handed to the user's hook, which prints it. It went on through
    the program's `finally:`, where run5's block began and ended: the ending is still run4's."""
    proc, said, base = session
    assert proc.returncode == 1
    assert proc.stderr.rstrip().endswith("user's hook: RuntimeError: out of memory at step 7")
    crash_file = base / "run4" / f"compilescope_crash_{said[0]['pid']}.txt"
    assert [p.name for p in (base / "run4").iterdir()] == [crash_file.name]
    assert list((base / "run3").iterdir()) == list((base / "run5").iterdir()) == []  # (nothing traced or crashed)
    crash = parse_crash(read_crash_file(str(crash_file)).text)
    assert crash.exception and crash.error == "RuntimeError: out of memory at step 7"
    assert (crash.where.filename, crash.where.function) == (str(PROGRAM), "<module>")
    raised = PROGRAM.read_text().splitlines().index('        raise RuntimeError("out of memory at step 7")') + 1
    assert crash.where.line == raised


USERS_TESTS = '''
import ctypes

import torch

import compilescope


def test_traced(tmp_path):
    with compilescope.capture(trace_dir=tmp_path / "traces"):
        torch.compile(lambda x: x.sin() + 1, backend="eager")(torch.ones(3))


def test_crashes_later():
    ctypes.string_at(0)  # reads address 0: SIGSEGV
'''


def test_under_pytest_a_later_crash_still_has_its_stack_where_pytest_shows_it(tmp_path):
    """pytest turns faulthandler on, writing to a copy of the terminal's stderr (its faulthandler plugin); a test
    that used capture() handed it back to sys.stderr's descriptor, pytest's capture of the test's output, which is lost
    when the process dies: a crash in a later test printed nothing at all."""
    (tmp_path / "test_users.py").write_text(USERS_TESTS)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_users.py"],
                          cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert proc.returncode == -11, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stderr.startswith("Fatal Python error: Segmentation fault"), proc.stderr[-2000:]
    tests = tmp_path / "test_users.py"
    crashed_at = USERS_TESTS.splitlines().index("    ctypes.string_at(0)  # reads address 0: SIGSEGV") + 1
    assert f'File "{tests}", line {crashed_at} in test_crashes_later' in proc.stderr


def test_under_run_a_crash_after_a_capture_block_is_still_run_s(tmp_path):
    """`compilescope run` of a program that uses capture(): run's child has faulthandler writing to run's crash file;
    the block handed it back to stderr, so a crash after the block was no longer recorded, and run could not say
    where the program died."""
    program = tmp_path / "notebook_export.py"
    program.write_text(textwrap.dedent(f"""
        import ctypes
        import torch
        import compilescope

        torch.compile(lambda x: x.cos() * 2, backend="eager")(torch.ones(3))  # in run's log
        with compilescope.capture(trace_dir={str(tmp_path / "block")!r}):
            torch.compile(lambda x: x.sin() + 1, backend="eager")(torch.ones(3))
        ctypes.string_at(0)
    """))
    proc = compilescope("run", "--no-browser", "--trace-dir", tmp_path / "t", "-o", tmp_path / "r", program,
                        cwd=tmp_path, env=clean_env())
    assert proc.returncode == 139, proc.stderr[-2000:]
    assert re.search(r"process \d+ crashed \(Segmentation fault\); its stack \(added to .*\.log\):\n"
                     r"Fatal Python error: Segmentation fault", proc.stderr), proc.stderr[-2000:]
    crashed_at = program.read_text().splitlines().index("ctypes.string_at(0)") + 1
    assert f'File "{program}", line {crashed_at} in <module>' in proc.stderr
    # the block's own directory: its log, no crash file (nothing crashed inside it)
    assert [p.name.startswith("dedicated_log_torch_trace_") for p in (tmp_path / "block").iterdir()] == [True]

"""`compilescope run` on real programs: the report of what they compiled, and their exit status."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from ..conftest import run_cli, torch213
from .conftest import (
    CHILD_TIMEOUT_S, FIXTURE_PROGRAMS, OUR_PROGRAMS, clean_env, compile_ids, compilescope, failure_rows, statuses,
)

pytestmark = pytest.mark.torch
RUN = ("run", "--no-browser", "--timeout", CHILD_TIMEOUT_S)


def test_graph_breaks_script_default_dirs(tmp_path):
    proc = compilescope(*RUN, FIXTURE_PROGRAMS / "graph_breaks.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "after branch" in proc.stdout  # the program's own output went through
    [report] = tmp_path.glob("compilescope_traces/*/report")  # default: ./compilescope_traces/<timestamp>/report
    # Once the program has ended, as a report of its log ends: what to fix first (graph_breaks.py's three breaks, the
    # program's docstring), the command that says what to do, then where the report is. The log is named as the user
    # would type it in the directory they ran from (it named its absolute path): the trace directory run made there.
    [log] = report.parent.glob("*.log")
    named = f"compilescope_traces/{report.parent.name}/{log.name}"
    ending = proc.stdout.splitlines()[-6:]
    assert ending[:4] == ["Fix first:", "  WARN  graph break at graph_breaks.py:18 in log_step (2 compilations)",
                          "  WARN  graph break at graph_breaks.py:23 in f (1 compilation)",
                          "  WARN  graph break at graph_breaks.py:28 in f (1 compilation)"]
    assert ending[4].endswith(f" what to do about each: compilescope summary {named}") and tmp_path / named == log
    assert ending[5].startswith("Wrote ") and ending[5].endswith(f" files to {report}; open {report / 'index.html'}")
    assert compile_ids(report) == ["[-/-]", "[0/0]", "[1/0]", "[1/0_1]", "[2/0]", "[2/0_1]", "[3/0]", "[3/0_1]", "[4/0]"]
    assert statuses(report) == {
        "[0/0]": "ok", "[1/0]": "restarted", "[1/0_1]": "break", "[2/0]": "restarted",
        "[2/0_1]": "break", "[3/0]": "restarted", "[3/0_1]": "break", "[4/0]": "ok",
    }
    rows = failure_rows(report)
    assert [(r[0], r[1]) for r in rows] == [("[1/0_1]", "RestartAnalysis"), ("[2/0_1]", "RestartAnalysis"), ("[3/0_1]", "RestartAnalysis")]
    assert "builtin operator" in rows[0][2] and "Tensor.item()" in rows[1][2] and "builtin operator" in rows[2][2]


def test_recompiles_command_form_and_own_trace_dir(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    old = traces / "dedicated_log_torch_trace_old.log"  # an earlier run's log: not this run's
    shutil.copy(torch213("graph_breaks.log"), old)
    proc = compilescope(
        *RUN, "--trace-dir", traces, "-o", tmp_path / "report", "--", sys.executable, FIXTURE_PROGRAMS / "recompiles.py",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = tmp_path / "report"
    assert compile_ids(report) == ["[-/-]", "[0/0]", "[0/1]", "[0/2]", "[0/3]", "[1/0]", "[1/1]", "[1/2]", "[1/3]", "[1/4]"]
    assert statuses(report) == {**{cid: "ok" for cid in compile_ids(report)[1:-1]}, "[1/4]": "error"}
    [row] = failure_rows(report)
    assert row[:2] == ["[1/4]", "Unsupported"] and "recompile limit" in row[2]
    assert old.exists() and len(list(traces.glob("*.log"))) == 2


def test_compile_error_raises_fresh_cache_exit_status(tmp_path):
    proc = compilescope(*RUN, "--fresh-cache", "-o", tmp_path / "report", FIXTURE_PROGRAMS / "compile_error_raises.py", cwd=tmp_path)
    assert proc.returncode == 1  # the program's uncaught BackendCompilerFailed
    assert "the program exited with status 1" in proc.stderr
    report = tmp_path / "report"
    assert compile_ids(report) == ["[-/-]", "[0/0]", "[1/0]"]
    assert statuses(report) == {"[0/0]": "error", "[1/0]": "error"}
    rows = failure_rows(report)
    assert [(r[0], r[1]) for r in rows] == [("[0/0]", "Unsupported"), ("[1/0]", "BackendCompilerFailed")]
    assert "compile_error_raises.py:" in rows[0][3]  # the user frame that failed
    assert "relu_compile_error_TESTING_ONLY" in rows[1][2]
    # Both compiles failed (the bytecode hook never ran): the log still says which recorders were on, from the first
    # compile's start, so no warning recorded is none printed.
    [log] = (tmp_path / "compilescope_traces").glob("*/*.log")
    text = log.read_text()
    assert text.count('"name": "compilescope_recorders"') == 1 and "compilescope_transformed_code" not in text
    assert run_cli("check", log, "--no-warnings") == 0


def test_module_form_passes_arguments_and_exit_status(tmp_path):
    env = clean_env(PYTHONPATH=os.pathsep.join([str(OUR_PROGRAMS), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = compilescope(*RUN, "--trace-dir", tmp_path / "t", "-o", tmp_path / "report", "-m", "exit_code", "3", "--flag", cwd=tmp_path, env=env)
    assert proc.returncode == 3
    assert "args: ['3', '--flag']" in proc.stdout
    # One clean compile: nothing to fix, only how long it took.
    assert [line.split()[:3] for line in proc.stdout.splitlines()[-4:-2]] == [["Fix", "first:"], ["INFO", "compiling", "took"]]
    assert compile_ids(tmp_path / "report") == ["[-/-]", "[0/0]"]
    assert statuses(tmp_path / "report") == {"[0/0]": "ok"}


def test_a_cuda_graph_skip_warned_at_run_time_is_recorded_in_the_log(tmp_path):
    """torch prints a skip it decides at a graph's first run on stderr only: run's hook writes it into the trace."""
    proc = compilescope(*RUN, "--trace-dir", tmp_path / "t", "-o", tmp_path / "r", OUR_PROGRAMS / "cudagraph_skip_warning.py",
                        cwd=tmp_path)
    assert proc.returncode == 0 and "warned" in proc.stdout, proc.stderr[-3000:]
    assert "skipping cudagraphs due to mutated inputs" in proc.stderr  # torch's own warning still reaches the user
    [log] = (tmp_path / "t").glob("*.log")
    lines = log.read_text().split("\n")
    [i] = [n for n, line in enumerate(lines) if '"name": "compilescope_cudagraph_skip"' in line]
    record = json.loads(lines[i + 1][1:])
    assert record["message"].startswith("skipping cudagraphs due to mutated inputs (1 instances). Found from")
    assert abs(record["time"] - log.stat().st_mtime) < 60
    # The log says which recorders were on, once: no warning recorded then means none printed.
    [i] = [n for n, line in enumerate(lines) if '"name": "compilescope_recorders"' in line]
    assert json.loads(lines[i + 1][1:]) == {"records": ["transformed_code", "warnings", "cudagraph_skips", "crashes"]}


def _signals_as_a_shell_leaves_them() -> None:
    """In the child before it runs compilescope: SIGINT handled as in a command typed at a shell. Tests started in the
    background by a script (`pytest ... &`) ignore SIGINT, and an ignored signal stays ignored through exec: Python
    then leaves it ignored, as is right for a background job, and a SIGINT sent to compilescope would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_compilescope_alone_stops_the_program_and_the_report_is_written(signum, tmp_path):
    # A scheduler or a script signals compilescope's pid, not a terminal's process group: the program must not be
    # left running, and what it traced is still reported (SIGTERM used to end compilescope at once, silently).
    finished, out = tmp_path / "finished", tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "compilescope", "run", "--no-browser", "-o", str(out),
                             str(OUR_PROGRAMS / "writes_a_log_then_waits.py"), str(torch213("graph_breaks.log")),
                             str(finished)], cwd=tmp_path, env=clean_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_signals_as_a_shell_leaves_them)
    assert proc.stdout.readline().strip() == "traced"  # the program runs, with its log written
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err
    assert (out / "index.html").exists() and not finished.exists()


# Runs compilescope with the signal delivered as soon as the program has written its log, before run_program waits
# for the program (subprocess.Popen wrapped): the window between starting the program and handling the signal.
_SIGNAL_ONCE_STARTED = """
import os, signal, subprocess, sys
signum, pid_file, copied = int(sys.argv[1]), sys.argv[2], sys.argv[3]
real_popen = subprocess.Popen

def popen_then_signal(*args, **kwargs):
    proc = real_popen(*args, **kwargs)
    log = os.path.join(kwargs["env"]["TORCH_TRACE"], "dedicated_log_torch_trace_test.log")
    while proc.poll() is None and not (os.path.exists(log) and os.path.getsize(log) == os.path.getsize(copied)):
        pass  # (the program copies it first thing)
    with open(pid_file, "w") as f:
        f.write(str(proc.pid))
    signal.raise_signal(signum)
    return proc

subprocess.Popen = popen_then_signal
from compilescope.cli import main
sys.exit(main(sys.argv[4:]))
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_as_the_program_starts_stops_it_and_the_report_is_written(signum, tmp_path):
    # SIGTERM used to end compilescope at once there (its handler was set later, in _wait), SIGINT raised
    # KeyboardInterrupt out of run_program: either way the program was left running and no report written.
    finished, out, pid_file = tmp_path / "finished", tmp_path / "out", tmp_path / "pid"
    log = torch213("graph_breaks.log")
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_ONCE_STARTED, str(int(signum)), str(pid_file), str(log),
                           "run", "--no-browser", "-o", str(out), str(OUR_PROGRAMS / "writes_a_log_then_waits.py"),
                           str(log), str(finished)], cwd=tmp_path, env=clean_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, preexec_fn=_signals_as_a_shell_leaves_them)
    program = int(pid_file.read_text())
    try:
        os.kill(program, 0)
    except ProcessLookupError:
        stopped = True
    else:  # (still sleeping: end it here, not 60 s from now)
        stopped = False
        os.kill(program, signal.SIGKILL)
    assert stopped, proc.stderr
    assert proc.returncode == 128 + signum, proc.stderr
    assert (out / "index.html").exists() and not finished.exists()


class _ScriptedProgram:
    """A stand-in for the program's Popen whose wait() delivers the next signal of a script to compilescope, as a
    signal reaching it right then would; it ignores SIGTERM (each wait with a timeout expires), so only kill ends it."""

    def __init__(self, signals: list[int]) -> None:
        self.script, self.sent, self.killed, self.returncode = list(signals), [], False, None

    def wait(self, timeout=None):
        if self.script:
            signal.raise_signal(self.script.pop(0))
        if self.killed:
            self.returncode = -signal.SIGKILL
            return self.returncode
        raise subprocess.TimeoutExpired("program", timeout or 0)

    def poll(self):
        return self.returncode

    def send_signal(self, signum):
        self.sent.append(signum)

    def kill(self):
        self.killed = True


@pytest.fixture
def python_sigint():
    """SIGINT raising KeyboardInterrupt, as in a command typed at a shell (a test run in the background ignores it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_sigterm_while_a_second_ctrl_c_stops_the_program_still_kills_it(python_sigint, monkeypatch):
    """The second SIGINT stops the program (SIGTERM, a grace, then kill): a SIGTERM during the grace raised _Terminated
    out of the handler, and the program that ignores SIGTERM was left running. Now it is noted, and the program
    killed."""
    from compilescope.runner import process

    monkeypatch.setattr(process, "_terminal_delivered_it", lambda: False)
    program = _ScriptedProgram([signal.SIGINT, signal.SIGINT, signal.SIGTERM])
    result = process.RunResult(returncode=0, trace_dir="")
    with process._SignalsWhileRunning() as signals, pytest.raises(KeyboardInterrupt):
        process._wait(program, None, result, signals)  # type: ignore[arg-type]
    assert program.sent == [signal.SIGINT, signal.SIGTERM] and program.killed
    assert result.interrupted and result.terminated


def test_a_signal_after_the_wait_and_before_the_handlers_are_restored_is_reported(tmp_path, monkeypatch):
    """A SIGTERM after _wait stopped raising signals (the program ended) and before run_program restores the handlers
    was noted and never read: the report did not say compilescope was terminated."""
    from compilescope.runner import process

    class Ended:
        returncode = 0
        pid = -1  # (no process's: run_program's LogOwners takes the program's pid as the run's)

        def wait(self, timeout=None):
            return 0

    real_wait = process._wait

    def wait_then_signal(*args):
        real_wait(*args)
        signal.raise_signal(signal.SIGTERM)

    monkeypatch.setattr(process.subprocess, "Popen", lambda *a, **k: Ended())
    monkeypatch.setattr(process, "_wait", wait_then_signal)
    result = process.run_program(process.Program(["program"], False), str(tmp_path))
    assert result.terminated and not result.interrupted


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="signals can be held only where pthread_sigmask is")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_as_wait_stops_raising_them_is_noted_not_raised(signum, python_sigint):
    """The program has ended, and _wait switches its handlers from raising signals to noting them: one that came in
    the bytecodes before the switch raised out of _wait (_Terminated, KeyboardInterrupt), and no report was written.
    Now they are held around the switch, and noted after it. The signal is sent as `raising` is set to False (the
    switch), before it is set."""
    from compilescope.runner import process

    class Ended:
        returncode = 0

        def wait(self, timeout=None):
            return 0

    class SignalledAtTheSwitch(process._SignalsWhileRunning):
        def __setattr__(self, name, value):
            if name == "raising" and value is False and getattr(self, "raising", False):
                signal.raise_signal(signum)
            super().__setattr__(name, value)

    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    result = process.RunResult(returncode=0, trace_dir="")
    with SignalledAtTheSwitch() as signals:
        process._wait(Ended(), None, result, signals)  # type: ignore[arg-type]
    assert (result.terminated, result.interrupted) == (signum == signal.SIGTERM, signum == signal.SIGINT)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == mask  # nothing left held


def test_a_ctrl_c_as_the_program_fails_to_start_is_not_dropped(python_sigint, tmp_path, monkeypatch):
    """Popen failing after a SIGINT was noted (handlers are set before it): the signal was dropped with the
    handlers; now delivered to the handler restored."""
    from compilescope.runner import process

    def interrupted_then_failed(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(process.subprocess, "Popen", interrupted_then_failed)
    with pytest.raises(KeyboardInterrupt):
        process.run_program(process.Program(["no-such-program"], False), str(tmp_path))

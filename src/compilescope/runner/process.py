"""The program and its run: what to execute (Program, program, check_interpreter), running it with tracing on to its
end (run_program: RunResult), SIGINT and SIGTERM while it runs (_SignalsWhileRunning, _wait), and which of its logs
to report (choose_log).

The child inherits stdin, stdout and stderr, so its output streams live (and interactive programs keep working)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import CompilescopeError
from ..ingest.crash_files import crash_file_pid
from ..ingest.discover import find_logs, is_trace_log, rank_of
from .command import child_env, run_argv
from .trace_dir import (CrashReport, HeldCrashFile, LogOwners, attach_crash_reports, file_stats, held_at_start,
                        join_process_logs)

TERMINATE_GRACE_S = 10.0
LOOK_EVERY_S = 0.1  # how often the trace directory is looked at for new logs while the program runs (LogOwners)


@dataclass(frozen=True)
class Program:
    argv: list[str]  # the command line to execute
    this_python: bool  # runs with the interpreter compilescope runs in (so torch must be importable here)

    def __str__(self) -> str:
        return shlex.join(self.argv)  # as a shell would take it: what is printed can be pasted


@dataclass
class RunResult:
    returncode: int  # the child's exit status; 128+N if signal N killed it (as a shell reports it)
    trace_dir: str
    logs: list[str] = field(default_factory=list)  # logs this run wrote, oldest first
    timed_out: bool = False
    interrupted: bool = False  # Ctrl-C (SIGINT) while it ran
    terminated: bool = False  # compilescope was sent SIGTERM while it ran: the program was stopped
    crashes: list[CrashReport] = field(default_factory=list)  # processes that crashed, or an exception ended
    # Logs one process wrote in parts, joined into its first (join_process_logs): (that log, the parts appended)
    joined: list[tuple[str, list[str]]] = field(default_factory=list)
    # Empty crash files of the run's processes kept in the trace directory because a process still holds one open (a
    # daemon the program started, a worker it forked): that process is still running and may still crash into it
    held_crash_files: list[HeldCrashFile] = field(default_factory=list)

    @property
    def signal_name(self) -> str | None:
        """"SIGSEGV" when a signal killed the program (its status 128+N), else None."""
        if 128 < self.returncode < 128 + 65:
            try:
                return signal.Signals(self.returncode - 128).name
            except ValueError:
                return None
        return None


def program(words: list[str], module: str | None = None, is_command: bool = False) -> Program:
    """What to execute for `run -m module args`, `run -- command args` or `run script.py args`."""
    if module is not None:
        return Program([sys.executable, "-m", module, *words], True)
    if not words:
        raise CompilescopeError("no program to run: give a script (compilescope run train.py), -m module, or -- command")
    first = words[0]
    if not is_command:
        # `compilescope diagnose trace.log`: Python would run the log as a script and fail on its first line, which
        # diagnose would blame on the program ("fails even with torch.compile disabled").
        if not first.endswith(".py") and not os.path.isfile(os.path.join(first, "__main__.py")) and is_trace_log(first):
            what = "a directory of TORCH_TRACE logs" if os.path.isdir(first) else "a TORCH_TRACE log"
            raise CompilescopeError(f"{first} is {what}, not a program to run: read it with compilescope "
                                    f"summary {shlex.quote(first)} (or compilescope {shlex.quote(first)} for its "
                                    "report); run a program as script.py, -m module, or -- command")
        if first.endswith(".py") and not os.path.isfile(first):
            raise CompilescopeError(f"{first}: no such file")
        # A Python script runs with this interpreter; an executable file (a shell script, torchrun) as itself.
        if first.endswith(".py") or (os.path.isfile(first) and not os.access(first, os.X_OK)):
            return Program([sys.executable, *words], True)
        if os.path.isfile(first):
            return Program([os.path.abspath(first) if os.sep not in first else first, *words[1:]], False)
    resolved = shutil.which(first)
    if resolved is None:
        raise CompilescopeError(f"{first}: no such file or command")
    # A venv's python is a symlink to its base interpreter: the same binary, another environment. Same directory too.
    same_python = _same_file(resolved, sys.executable) and _same_file(
        os.path.dirname(os.path.abspath(resolved)), os.path.dirname(os.path.abspath(sys.executable)))
    return Program(words, same_python)


PYTHON_NAME = re.compile(r"python(\d+(\.\d+)*)?(\.exe)?$")
_HAS_TORCH = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
PROBE_TIMEOUT_S = 60


def check_interpreter(prog: Program, command: list[str]) -> None:
    """`-- python script.py` with a python that is not ours: it must import torch, or nothing gets traced.

    The usual cause is a virtual environment that is not activated: `python` on PATH is the system's.
    command: compilescope's own words before the program (`compilescope run -o out`): the error suggests them
    again, with the program for compilescope's Python.
    """
    if prog.this_python or not PYTHON_NAME.match(os.path.basename(prog.argv[0])):
        return
    interpreter = shutil.which(prog.argv[0]) or prog.argv[0]
    try:
        probe = subprocess.run([interpreter, "-c", _HAS_TORCH], capture_output=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return  # the run itself will say what is wrong
    if probe.returncode == 1:
        suggested = shlex.join([*command, *this_python_program(prog.argv[1:])])
        raise CompilescopeError(
            f"{prog.argv[0]} ({interpreter}) cannot import torch: it is not the Python compilescope runs in "
            f"({sys.executable}); let compilescope's Python run the program: {suggested} "
            f"(or activate the environment compilescope is installed in)"
        )


def this_python_program(python_args: list[str]) -> list[str]:
    """The program words by which `compilescope run` (or diagnose) runs `python PYTHON_ARGS` with its own Python:
    a script or `-m module` as they are (run takes them so); anything else (-c CODE, an interpreter flag, no
    script) after `--`, naming compilescope's Python, since run has no -c nor interpreter flags of its own."""
    first = python_args[0] if python_args else ""
    if (first == "-m" and len(python_args) > 1) or (first.endswith(".py") and not first.startswith("-")):
        return python_args
    return ["--", sys.executable, *python_args]


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def run_program(prog: Program, trace_dir: str, fresh_cache: bool = False, timeout: float | None = None,
                extra_env: dict[str, str | None] | None = None, cwd: str | None = None,
                output: str | None = None, cache_dir: str | None = None) -> RunResult:
    """Run prog to completion (or timeout) with tracing on; return its exit status and the logs it wrote.

    output: a file that receives the child's stdout and stderr instead of the terminal.
    cache_dir: an empty Inductor cache the caller owns and removes (fresh_cache: a temporary one, removed here).
    """
    before = set(os.listdir(trace_dir))
    # A crash file already there is another run's, or a leftover, unless it is written again meanwhile: a process of
    # this run given the pid it is named for (a container's pids repeat every run) has faulthandler rewrite it, in place.
    # An empty one that no process seen holds is not removed here as a leftover: a process in another pid namespace
    # sharing the directory (another container) is not in this /proc and may hold it, its crash still to come.
    crash_files_before = file_stats(trace_dir, [name for name in before if crash_file_pid(name) is not None])
    # One a live process holds open now is that process's (an earlier run's daemon, another run's worker): whatever
    # it writes there during the run is no crash of this run's
    crash_files_before = {name: stat for name, stat in crash_files_before.items()
                          if name not in held_at_start(trace_dir, list(crash_files_before))}
    owned_cache = tempfile.mkdtemp(prefix="compilescope_inductor_cache_") if fresh_cache and cache_dir is None else None
    cache_dir = cache_dir or owned_cache
    result = RunResult(returncode=0, trace_dir=trace_dir)
    sink = open(output, "wb") if output is not None else None  # noqa: SIM115 - closed below
    try:
        env = child_env(trace_dir, cache_dir, extra=extra_env)
        argv = run_argv(prog.argv, env, [name for name in extra_env or {} if name != "PYTHONPATH"], cache_dir is not None)
        # Handled from before the program starts: a signal as it starts is not lost (_SignalsWhileRunning).
        with _SignalsWhileRunning() as signals:
            try:
                proc = subprocess.Popen(
                    argv, env=env, cwd=cwd,
                    stdout=sink, stderr=subprocess.STDOUT if sink else None,
                )
            except OSError as exc:
                raise CompilescopeError(f"cannot run {prog.argv[0]}: {exc.strerror or exc}") from None
            owners = LogOwners(trace_dir, before, proc, crash_files_before)
            _wait(proc, timeout, result, signals, owners.look)
        # (one that came after _wait stopped raising them and before the handlers were restored: the report says it)
        _note_late(result, signals.stop_raising())
    finally:
        if sink is not None:
            sink.close()
        if owned_cache is not None:
            shutil.rmtree(owned_cache, ignore_errors=True)
    rc = proc.returncode
    result.returncode = 128 - rc if rc < 0 else rc
    result.logs = owners.ours([p for p in find_logs(trace_dir) if os.path.basename(p) not in before])
    result.joined = join_process_logs(result.logs)
    result.logs = [p for p in result.logs if os.path.exists(p)]
    result.crashes = attach_crash_reports(trace_dir, result.logs, before - owners.rewritten(), mine=owners.crash_file_ours,
                                          held=result.held_crash_files, removable=owners.crash_file_removable)
    return result


class _Terminated(Exception):
    """SIGTERM reached compilescope while the program ran (a job scheduler, `kill`, a CI runner stopping a step)."""


class _SignalsWhileRunning:
    """SIGTERM and SIGINT to compilescope from before the program starts until it has ended.

    SIGTERM would end compilescope at once and leave the program running, its report unwritten: it raises _Terminated
    instead (the program is stopped, then the report written). Both are only noted until the program has started
    (Popen interrupted half-way would lose the child) and after it ended, and raised once _wait waits for it
    (raise_pending). SIGINT is handled only where Python's own handler is set: where it was inherited ignored (a
    background job, nohup) it stays ignored. Signal handlers can only be set from the main thread: elsewhere nothing
    is handled here.

    Where the platform has pthread_sigmask (POSIX), _wait holds them (block) except while it waits for the program:
    one that comes as the program ends, in the bytecodes before _wait stops raising them, waits in the kernel and is
    delivered (unblock) to the handler once it only notes them. Elsewhere block and unblock do nothing. The hold is
    best effort: a thread's mask is its own, and SIGINT/SIGTERM are sent to the process, so where another thread has
    not blocked them (a pool of the process this runs in) the kernel may deliver one there, and Python runs the
    handler in this thread at its next bytecode, inside the hold.
    """

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.raising = False
        self.previous: dict[int, object] = {}
        self.held: set[int] = set()  # what block() holds: those handled here that were not blocked already

    def __enter__(self) -> _SignalsWhileRunning:
        if threading.current_thread() is threading.main_thread():
            self.previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._handle)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                self.previous[signal.SIGINT] = signal.signal(signal.SIGINT, self._handle)
            if _CAN_HOLD_SIGNALS:
                self.held = set(self.previous) - signal.pthread_sigmask(signal.SIG_BLOCK, ())  # (the mask, unchanged)
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        self.raising = False
        for signum, previous in self.previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)  # type: ignore[arg-type]
        if exc_type is not None:
            # Noted and never raised (the program could not start: Popen failed): delivered now to the handlers
            # restored, as it would have been without these
            late, self.pending = self.pending, []
            for signum in late:
                signal.raise_signal(signum)

    def _handle(self, signum: int, frame: object) -> None:
        if not self.raising:
            self.pending.append(signum)
            return
        # One at a time: another while this one is handled is noted (raise_pending raises it). A second one raised
        # before _wait holds them again would leave them unheld where _wait handles the first.
        self.raising = False
        self._raise(signum)

    @staticmethod
    def _raise(signum: int) -> None:
        if signum == signal.SIGTERM:
            raise _Terminated
        raise KeyboardInterrupt

    def raise_pending(self) -> None:
        """From now on a signal raises; one that came before raises now."""
        self.raising = True
        if self.pending:
            self._raise(self.pending.pop(0))

    def stop_raising(self) -> list[int]:
        """The program has ended: a signal from now on is only noted. Those noted since, returned."""
        self.raising = False
        late, self.pending = self.pending, []
        return late

    def block(self) -> None:
        """Hold the signals handled here in the kernel (where the platform can): unblock() delivers them."""
        if self.held:
            signal.pthread_sigmask(signal.SIG_BLOCK, self.held)

    def unblock(self) -> None:
        """Deliver the signals held, to the handler as it is now (raising or noting), and no longer hold them."""
        if self.held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, self.held)  # (those held are handled before it returns)


_CAN_HOLD_SIGNALS = hasattr(signal, "pthread_sigmask")  # (not on Windows)


def _terminal_delivered_it() -> bool:
    """Whether a SIGINT came from the terminal's Ctrl-C, which reaches the program too: compilescope is in the
    terminal's foreground process group. Else (no terminal, `kill -INT`) only compilescope got it."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, AttributeError, ValueError):
        return False


def _wait_looking(proc: subprocess.Popen, timeout: float | None, look: Callable[[], None]) -> None:
    """proc.wait(timeout), calling look every LOOK_EVERY_S while the program runs."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            proc.wait(LOOK_EVERY_S if remaining is None else min(remaining, LOOK_EVERY_S))
            return
        except subprocess.TimeoutExpired:
            if remaining is not None and remaining <= LOOK_EVERY_S:
                raise
        look()


def _wait(proc: subprocess.Popen, timeout: float | None, result: RunResult, signals: _SignalsWhileRunning,
          look: Callable[[], None] = lambda: None) -> None:
    deadline = None if timeout is None else time.monotonic() + timeout
    # SIGINT and SIGTERM are held except while waiting for the program: unheld, one that came as the wait ended (the
    # program ended, or its time was up) raised before the except clauses below or the finally's switch to noting
    # could take it, out of _wait: no report
    signals.block()
    try:
        while True:
            try:
                signals.raise_pending()
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                signals.unblock()  # (one held since raises here, handled below)
                try:
                    _wait_looking(proc, remaining, look)
                finally:
                    signals.block()  # (one before it raises inside this try: handled below)
                return
            except subprocess.TimeoutExpired:
                result.timed_out = True
                signals.raising = False  # (one while it is stopped is noted, below)
                _stop(proc)
                return
            except _Terminated:
                result.terminated = True
                signals.raising = False
                print("compilescope: terminated; stopping the program, then writing the report of what it traced",
                      file=sys.stderr)
                _stop(proc)
                return
            except KeyboardInterrupt:
                # Ctrl-C at the terminal reached the child too (same process group): let it finish, then report
                # what it traced. A SIGINT sent to compilescope alone is passed on. A second one stops it.
                # (Only noted while handled: one raised here would leave the handler, and the program running, mid-way;
                # the loop's raise_pending raises it inside the try)
                signals.raising = False
                if result.interrupted:
                    _stop(proc)
                    raise
                result.interrupted = True
                if not _terminal_delivered_it() and proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
                print("compilescope: interrupted; waiting for the program to stop (Ctrl-C again to kill it)",
                      file=sys.stderr)
    finally:
        # One that came as the program ended: there is nothing left to stop; the report says it. Held until noting.
        signals.raising = False
        signals.unblock()
        _note_late(result, signals.stop_raising())


def _note_late(result: RunResult, signums: list[int]) -> None:
    for late in signums:
        if late == signal.SIGTERM:
            result.terminated = True
        else:
            result.interrupted = True


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(TERMINATE_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def choose_log(logs: list[str]) -> tuple[str, str | None]:
    """The log to report (one rank for now) and, when there were several, a note saying which."""
    if not logs:
        raise ValueError("no logs")
    if len(logs) == 1:
        return logs[0], None
    ranked = sorted((rank_of(p), p) for p in logs if rank_of(p) is not None)
    if ranked:
        rank, chosen = ranked[0]
        ranks = ", ".join(str(r) for r, _ in ranked)
        return chosen, f"{len(logs)} logs (ranks {ranks}); reporting rank {rank} only: {chosen}"
    chosen = max(logs, key=lambda p: (os.path.getsize(p), p))
    return chosen, f"{len(logs)} logs (several processes traced); reporting the largest only: {chosen}"

"""Run a program as a child process with TORCH_TRACE set, and find the logs it wrote.

The child inherits stdin, stdout and stderr, so its output streams live (and
interactive programs keep working). Nothing here writes a report.
"""

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
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from .errors import CompilescopeError
from .ingest.crash_files import (crash_file_pid, crash_files, crash_headline, crash_record, ending, ending_said, first_pid,
                                  log_of)
from .ingest.discover import TORCH_LOG_NAME, find_logs, is_trace_log, process_parts, rank_of

DEFAULT_TRACE_ROOT = "compilescope_traces"
# Written into the trace directory by `compilescope run` (cli/run.py), wherever -o puts the report, for serve
# (cli/serve.py), which reads a run as over when its newest log is one RUN_ENDED names and no RUN_GOING file is
# there. RUN_ENDED: each ended run appends the logs it wrote, one name (relative to the directory) a line, because a
# --trace-dir is kept and may hold an earlier run's marker, or a run going on beside (run_has_ended). RUN_GOING<pid>:
# there while that run's program runs (one per run). Neither is a log's name.
RUN_ENDED = "compilescope-run-ended"
RUN_GOING = "compilescope-run-going-"
TERMINATE_GRACE_S = 10.0


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


@dataclass(frozen=True)
class HeldCrashFile:
    """An empty crash file kept because processes of the run still hold it open (attach_crash_reports)."""

    path: str
    pids: list[int]  # the processes seen holding it; where they cannot be seen, the one it is named for, alive


@dataclass
class CrashReport:
    """A process of the run that crashed in native code, with the stack faulthandler wrote (record_crashes), or that an
    uncaught Python exception ended (its record in the same file)."""

    pid: int
    text: str  # as faulthandler wrote it: "Fatal Python error: Segmentation fault", then each thread's stack
    log: str | None  # the log it was appended to; None: that process wrote no log

    @property
    def headline(self) -> str:
        """"Segmentation fault", or "AssertionError: ..." for an uncaught exception."""
        return crash_headline(self.text)

    @property
    def exception(self) -> bool:
        """An uncaught Python exception ended it (Python printed its traceback already), not a crash in native code."""
        return ending(self.text).exception

    @property
    def ending(self) -> str:
        """After "process N": "stopped with ...", "lost thread X to ..." (the process went on), "crashed: ..."."""
        end = ending(self.text)
        return ending_said(end.headline, end.exception, end.raised.thread if end.raised is not None else None)

    @property
    def stack(self) -> str:
        """faulthandler's text of a crash in native code (without any exception a thread raised before it)."""
        return ending(self.text).faulthandler


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


def new_trace_dir(root: str = DEFAULT_TRACE_ROOT) -> str:
    """A new, empty directory root/<timestamp>[-n], created atomically."""
    base = os.path.join(root, time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(root, exist_ok=True)
    path, n = base, 1
    while True:
        try:
            os.mkdir(path)
            return os.path.abspath(path)
        except FileExistsError:
            n += 1
            path = f"{base}-{n}"


def as_typed_here(path: str) -> str:
    """path as a user here would type it: relative to the current directory when it is under it, else absolute
    (the commands run prints, for a directory run made itself: nobody typed it)."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


@contextmanager
def marked_going(trace_dir: str) -> Iterator[None]:
    """RUN_GOING<pid> in trace_dir while the block runs (the program): serve reads the directory's runs as going on,
    whatever an earlier run's RUN_ENDED says. Left behind only if this process is killed (SIGKILL): its pid is then
    no process's, so run_has_ended passes over it and the next run here removes it (prepare_trace_dir)."""
    path = os.path.join(trace_dir, f"{RUN_GOING}{os.getpid()}")
    try:
        with open(path, "x", encoding="utf-8"):
            made = True
    except OSError:
        made = False  # (only serve's live/ended mark depends on it)
    try:
        yield
    finally:
        if made:
            with suppress(OSError):
                os.remove(path)


def mark_ended(trace_dir: str, logs: list[str]) -> None:
    """Add the logs this run wrote to trace_dir's RUN_ENDED, once its program has ended (appended: an earlier run's
    names stay true of its logs, and a run beside this one may end later)."""
    if not logs:
        return  # (no run to list in serve: a directory run made for it, left empty, is removed)
    names = "".join(f"{os.path.relpath(p, trace_dir)}\n" for p in logs)
    with suppress(OSError), open(os.path.join(trace_dir, RUN_ENDED), "a", encoding="utf-8") as f:
        f.write(names)  # (only serve's live/ended mark depends on it: the report is still written)


def run_has_ended(directory: str, newest_log: str) -> bool:
    """`compilescope run` said the program that wrote newest_log (directory's newest) has ended, and no run is going
    on in directory (one that has written no log yet would otherwise look over: its directory's newest log is an
    earlier run's)."""
    marker = os.path.join(directory, RUN_ENDED)
    try:
        if any(_going_file_alive(name) for name in os.listdir(directory)):
            return False
        if os.path.islink(marker) or not os.path.isfile(marker):
            return False
        with open(marker, encoding="utf-8", errors="replace") as f:
            named = {line.rstrip("\n") for line in f}
    except OSError:
        return False
    return os.path.relpath(newest_log, directory) in named


def _going_file_alive(name: str) -> bool:
    """name is a RUN_GOING file whose run may still be going: its pid is a live process (a run killed by SIGKILL
    leaves its file behind, which would read the directory as going on for ever)."""
    if not name.startswith(RUN_GOING):
        return False
    pid = name[len(RUN_GOING):]
    return not (pid.isascii() and pid.isdigit()) or process_alive(int(pid))


def writes_log(pid: int, log: str) -> bool:
    """Whether the process pid holds log open, as torch holds its trace log until it exits (Linux's /proc). Without
    /proc, whether it is alive (all that can be known); where its descriptors cannot be read (another user's
    process, or none), no."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return os.path.isdir("/proc/self/fd") is False and process_alive(pid)
    target = os.path.realpath(log)
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
        except OSError:
            continue  # (a descriptor closed while read)
    return False


def holds_crash_file(pid: int, path: str) -> bool:
    """Whether the process pid, alive, still writes its crash file at path (bytecode_capture.record_crashes): it holds
    it open (faulthandler keeps the file until the process exits), or a `tee` it started for a capture() block does
    (a child of pid: its tee appends to the file). As writes_log: without /proc, whether it is alive."""
    if writes_log(pid, path):
        return True
    return os.path.isdir("/proc/self/fd") and any(writes_log(child, path) for child in _children(pid))


def _children(pid: int) -> list[int]:
    """The processes whose parent is pid, from every /proc/N/stat (the kernel may not list a task's children); only
    asked of a crash file whose process is alive and does not hold it itself, which is rare."""
    found = []
    with suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                if int(stat[stat.rindex(b")") + 2:].split()[1]) == pid:
                    found.append(int(name))
            except (OSError, ValueError, IndexError):
                continue  # (a process gone while read)
    return found


def process_alive(pid: int) -> bool:
    """Whether a process pid exists (one of another user's too: signalling it is refused, not unknown)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, OverflowError):
        return False
    return True


def prepare_trace_dir(path: str) -> str:
    """The user's --trace-dir: created if needed; logs already in it are not this run's. A RUN_GOING file of a run
    whose process is gone (killed) is removed."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise CompilescopeError(f"--trace-dir {path} exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise CompilescopeError(f"cannot create --trace-dir {path}: {exc.strerror}") from None
    with suppress(OSError):
        for name in os.listdir(path):
            if name.startswith(RUN_GOING) and not _going_file_alive(name):
                _remove(os.path.join(path, name))
    return os.path.abspath(path)


PER_RANK_CACHE_ENV = "COMPILESCOPE_PER_RANK_CACHE"  # (read by _child/sitecustomize.py, which imports nothing of ours)
# The folder whose sitecustomize.py installs the bytecode hook in the child: first on its PYTHONPATH.
CHILD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child")
# What the child's environment must say for the run to be traced as compilescope reads it (an `env` before the
# command that sets or unsets one is refused: check_env_prefix); PYTHONPATH and the cache are merged in instead.
TRACING_VARIABLES = ("TORCH_TRACE", "TORCH_DTRACE", "INDUCTOR_PROVENANCE", "COMPILESCOPE_BYTECODE_HOOK")
_CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", PER_RANK_CACHE_ENV)


def child_env(trace_dir: str, cache_dir: str | None = None, base: dict[str, str] | None = None,
              extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """extra: variables to set on top (None removes one), e.g. diagnose's forced backend; its PYTHONPATH comes after
    CHILD_DIR, as the inherited one does."""
    env = dict(os.environ if base is None else base)
    extra = dict(extra or {})
    if "PYTHONPATH" in extra:
        pythonpath = extra.pop("PYTHONPATH")
        env.pop("PYTHONPATH", None)
        env.update({} if pythonpath is None else {"PYTHONPATH": pythonpath})
    env["TORCH_TRACE"] = trace_dir
    if env.get("TORCH_DTRACE"):  # it would win over TORCH_TRACE: keep it, but write here too
        env["TORCH_DTRACE"] = trace_dir
    env["INDUCTOR_PROVENANCE"] = "1"
    # The child records the code Dynamo runs instead of each frame (bytecode_capture.py, via _child/sitecustomize.py).
    env["PYTHONPATH"] = _after_child_dir(env.get("PYTHONPATH"))
    env["COMPILESCOPE_BYTECODE_HOOK"] = "1"
    if cache_dir is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
        # Each rank of a distributed job gets its own part of it (_child/sitecustomize.py): sharing one, rank 1
        # loads rank 0's graphs, and its log lacks their intermediate graphs and provenance.
        env[PER_RANK_CACHE_ENV] = cache_dir
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _after_child_dir(pythonpath: str | None) -> str:
    return os.pathsep.join([CHILD_DIR, *([pythonpath] if pythonpath else [])])


@dataclass(frozen=True)
class EnvWords:
    """One `env [OPTION]... [NAME=VALUE]...` before the command it runs (env_prefix)."""

    options: list[str]  # its words from `env` to the first NAME=VALUE (`--` included)
    assignments: list[str]  # its NAME=VALUE words
    clears: bool  # -i, -, --ignore-environment: the command starts from an empty environment
    unsets: list[tuple[str, str]]  # (the name its -u, --unset removes, the words as written: "-u X", "--unset=X")
    chdir: str | None = None  # -C, --chdir DIR: the command runs in DIR


# env's options that change nothing the run needs: they say what env does, on stderr
_ENV_HARMLESS = ("-v", "--debug")
# How env prints the environment when it runs no command (each line ended by NUL): with a command GNU env refuses it
# ("cannot specify --null (-0) with command", status 125), so nothing would run
_ENV_PRINTS_ONLY = ("-0", "--null")
# Shells whose `-c STRING` is read for an env in it, where STRING is one simple command (shell_command)
_SHELLS = ("sh", "bash")
# Option letters of the shell's `-c STRING`, joined to its c (`sh -ec`, `bash -lc`) or apart (`bash -l -c`): none changes
# how the string is split nor which command it runs. e: exit on error; u: unset variables an error; x, v: print what
# runs, on stderr; f: no globs (a string with a glob character is not read anyway); l (bash's --login too): a login
# shell, which reads the profile first: what it exports could move the log or drop the bytecode hook's folder, so the
# string of a login shell starts by exporting the tracing variables again (_exported_for_tracing). Not these: i
# (interactive: aliases, rc files), k (NAME=VALUE anywhere is an assignment), n (runs nothing), s, o, +options and the
# rest: the string is run as written, unread.
_SHELL_LETTERS = frozenset("euxvfl")
# What shlex does not split as the shell does (expansions, substitutions, escapes in double quotes, globs, comments, a
# line end between two commands): a string holding one anywhere, quoted or not, is run as written, unread
_SHELL_UNREAD = frozenset("$`\\*?[{~#\n")
_SHELL_BLANKS = " \t"  # (shlex's default adds \r and \n: the shell keeps a \r in the word; \n is _SHELL_UNREAD)


def _env_words(argv: list[str]) -> tuple[list[EnvWords], list[str]] | str:
    """env_prefix's `env`s and command, or the first option of an env it cannot follow ("-S", "-0", "-iu")."""
    found = []
    while argv and os.path.basename(argv[0]) == "env":
        i, clears, unsets, chdir = 1, False, [], None
        while i < len(argv):
            word = argv[i]
            if word in ("-i", "-", "--ignore-environment"):
                clears = True
            elif word in _ENV_HARMLESS:
                pass
            elif word in ("-u", "--unset", "-C", "--chdir") and i + 1 < len(argv):
                i += 1
                if word in ("-u", "--unset"):
                    unsets.append((argv[i], f"{word} {argv[i]}"))
                else:
                    chdir = argv[i]
            elif word.startswith(("--unset=", "-u")) and word not in ("-u", "--unset="):
                unsets.append((word.partition("=")[2] if word.startswith("--") else word[2:], word))
            elif word.startswith(("--chdir=", "-C")) and word not in ("-C", "--chdir="):
                chdir = word.partition("=")[2] if word.startswith("--") else word[2:]
            elif word == "--":
                i += 1
                break
            elif word.startswith("-"):
                return word
            else:
                break
            i += 1
        end = i
        while end < len(argv) and "=" in argv[end]:
            end += 1
        found.append(EnvWords(argv[:i], argv[i:end], clears, unsets, chdir))
        argv = argv[end:]
    return found, argv


def _shell_string_at(argv: list[str]) -> tuple[int, bool] | None:
    """Where argv, a shell's `-c STRING` (`sh -c`, `sh -c -- STRING`, `bash -lc`, `bash -l -c`: _SHELL_LETTERS), has
    its STRING, and whether the shell is a login shell (it reads the profile before the string)."""
    if len(argv) < 3 or os.path.basename(argv[0]) not in _SHELLS:
        return None
    letters, login, at = "", False, 1
    while at < len(argv) and argv[at][:1] in ("-", "+"):
        word = argv[at]
        at += 1
        if word == "--":
            break
        if word == "--login" and os.path.basename(argv[0]) == "bash":
            login = True
        elif word.startswith(("--", "+")) or word == "-":
            return None  # (another long option, an option turned off, `-` as the end of options: not read)
        else:
            letters += word[1:]
    if letters.count("c") != 1 or not set(letters.replace("c", "")) <= _SHELL_LETTERS or at >= len(argv):
        return None
    return at, login or "l" in letters


def unreached_login_shell(argv: list[str]) -> bool:
    """Whether argv (after any `env`) runs a login or interactive shell (`bash -l s.sh`, `bash -o pipefail -lc`,
    `bash -lic`) whose string the run does not start by exporting the tracing variables again (_kept_for_tracing
    reaches `-lc STRING` alone): the profile it reads may move the log unseen."""
    found = env_prefix(argv)
    command = argv if found is None else found[1]
    if not command or os.path.basename(command[0]) not in _SHELLS:
        return False
    shell = _shell_string_at(command)
    if shell is not None and shell[1]:
        return False  # (its string is rewritten)
    at = 1
    while at < len(command) and command[at][:1] in ("-", "+") and command[at] not in ("-", "--"):
        word = command[at]
        at += 1
        if word == "--login":
            return True
        if word.startswith("--"):
            continue  # (bash's other long options: --rcfile FILE is rare, its FILE read as the script)
        if word[0] == "-" and ("l" in word or "i" in word):
            return True
        if word[-1] in "oO":  # (-o NAME, -O NAME, +o NAME: the next word is the option's name)
            at += 1
    return False


def shell_command(argv: list[str]) -> list[str] | None:
    """The words of the one simple command that `sh -c STRING` (or bash's, _shell_string_at) runs, as the shell splits
    them; None where argv is no such shell, or STRING holds more than one simple command (an operator: ; && | ( ), a
    redirection) or anything shlex does not read as the shell does (_SHELL_UNREAD): such a command is run as written,
    unread."""
    found = _shell_string_at(argv)
    if found is None or any(c in _SHELL_UNREAD for c in argv[found[0]]):
        return None
    lexer = shlex.shlex(argv[found[0]], posix=True, punctuation_chars=True)
    lexer.whitespace = _SHELL_BLANKS
    lexer.whitespace_split = True  # (words split at blanks and at operators only, as the shell does)
    try:
        words = list(lexer)
    except ValueError:  # (a quote not closed: the shell refuses it too)
        return None
    if not words or any(word and not word.strip(lexer.punctuation_chars) for word in words):
        return None  # (an operator, or a quoted word made of their characters alone: not told apart here)
    return words


def _all_env_words(argv: list[str]) -> list[EnvWords] | str:
    """Every `env` of argv (_env_words): those before its command and, where that command is a simple `sh -c`
    (shell_command), those of the command the shell runs, in turn; or the first option of one not understood here."""
    found: list[EnvWords] = []
    while True:
        words = _env_words(argv)
        if isinstance(words, str):
            return words
        found += words[0]
        inner = shell_command(words[1])
        if inner is None:
            return found
        argv = inner[_exec_words(inner):]


def _exec_words(words: list[str]) -> int:
    """How many of a shell command's words are a plain `exec` before the command it runs in the shell's stead (1 or
    0; `exec -a NAME`, bash's, and the like are not read)."""
    return 1 if len(words) > 1 and words[0] == "exec" and not words[1].startswith("-") else 0


def env_prefix(argv: list[str]) -> tuple[list[EnvWords], list[str]] | None:
    """The `env [-i] [-u NAME] [-C DIR] [-v] [NAME=VALUE]... COMMAND...` before the command argv runs, one for each env
    (`env A=b env -i ...`), and that command; ([], argv) where it is no env; None where an option of env is not
    understood here (-S, -0, a signal's, letters joined: check_env_prefix refuses the command)."""
    found = _env_words(argv)
    return None if isinstance(found, str) else found


def check_env_prefix(argv: list[str], names: Collection[str] = TRACING_VARIABLES, chdir: bool = True) -> None:
    """A CompilescopeError where an `env` before the program (env_prefix) sets or unsets one of names, variables
    compilescope sets for the run (TRACING_VARIABLES: torch would write no trace, or one elsewhere, or without what
    compilescope records), before anything runs. Refused, not overridden: the command asks for it in so many words.
    (Its -i is no such thing: the variables are given again after it, run_argv.) Refused too: an option of env not
    understood here (what it does to the environment is not known), and -C where chdir is False (diagnose, which reads
    and runs the program from folders of its own). The env of a simple `sh -c` command is checked too (shell_command)."""
    found = _all_env_words(argv)
    if isinstance(found, str) and (found in _ENV_PRINTS_ONLY or _joined_null(found)):
        raise CompilescopeError(f"the program's `env {found}` only says how env prints the environment, and env refuses "
                                "it before a command (it would run nothing); remove it from the command")
    if isinstance(found, str):
        raise CompilescopeError(f"the program's `env {found}` is an option of env compilescope cannot follow (it keeps "
                                "what tracing needs through env's -i, -u, -v, -C and NAME=VALUE only); remove it from "
                                "the command")
    for words in found:
        if words.chdir is not None and not chdir:
            raise CompilescopeError(f"the program's `env` runs it in {words.chdir} (-C), which diagnose cannot follow "
                                    "(it reads the program's file from the folder it is run in, and runs its accuracy "
                                    "and minifier stages from folders of its own, which -C would leave): run diagnose "
                                    "from that folder instead, without -C")
        for name, word, unsets in [*((name, word, True) for name, word in words.unsets),
                                   *((word.partition("=")[0], word, False) for word in words.assignments)]:
            if name in names:
                hint = " (--trace-dir says where the logs go)" if name in ("TORCH_TRACE", "TORCH_DTRACE") else ""
                raise CompilescopeError(f"the program's `env {word}` {'unsets' if unsets else 'sets'} "
                                        f"{name}, which compilescope sets itself to trace the program; remove it from "
                                        f"the command{hint}")


def _joined_null(word: str) -> bool:
    """word is env's short options joined (`-0v`, `-i0`) with -0 among them, before any that takes the rest as its
    value (-u, -C, -S, -a)."""
    if not word.startswith("-") or word.startswith("--"):
        return False
    for letter in word[1:]:
        if letter == "0":
            return True
        if letter in "uCSa":
            return False
    return False


def run_argv(argv: list[str], env: dict[str, str], names: Collection[str] = (), fresh_cache: bool = False) -> list[str]:
    """argv as the child runs it, with compilescope's variables (env: child_env's) kept where an `env` before the
    command would drop them: its PYTHONPATH=VALUE keeps CHILD_DIR first (the bytecode hook loads); its -i, or -u of
    PYTHONPATH or of the cache, has them given again after its options (a user who clears the environment clears it
    for the program, not for the tracer); its cache setting gives way to compilescope's (fresh_cache: env names one).
    names: the others compilescope sets, which the command may not touch (check_env_prefix). The env of a simple
    `sh -c` command is kept so too, in the shell's string (shell_command). argv itself where it has no env."""
    check_env_prefix(argv, [*TRACING_VARIABLES, *names])
    return _kept_for_tracing(argv, env, names, fresh_cache)


def _kept_for_tracing(argv: list[str], env: dict[str, str], names: Collection[str], fresh_cache: bool) -> list[str]:
    """run_argv of a command check_env_prefix accepted; a simple `sh -c` command's string (shell_command) rewritten
    in turn, where its env changes; a login shell's string (`bash -lc`), read or not, starts by exporting the tracing
    variables again."""
    found = env_prefix(argv)
    if not found:
        return argv
    command = found[1]
    shell = _shell_string_at(command)
    if shell is not None:
        at, login = shell
        string = command[at]
        inner = shell_command(command)
        if inner is not None:
            run = _exec_words(inner)
            kept_inner = inner[:run] + _kept_for_tracing(inner[run:], env, names, fresh_cache)
            string = string if kept_inner == inner else shlex.join(kept_inner)
        if login:
            string = _exported_for_tracing(env, names, fresh_cache) + string
        command = [*command[:at], string, *command[at + 1:]]
    if not found[0]:
        return command
    ours = {**_set_for_tracing(env, names, fresh_cache), "PYTHONPATH": CHILD_DIR}
    caches = _CACHE_VARIABLES if fresh_cache else ()
    kept = []
    for words in found[0]:
        assigned = {word.partition("=")[0] for word in words.assignments}  # (its own PYTHONPATH=, cache: kept below)
        again = {name: value for name, value in ours.items()
                 if (words.clears or name in {unset for unset, _ in words.unsets}) and name not in assigned}
        assignments = [f"{name}={value}" for name, value in again.items()]
        for word in words.assignments:
            name, _, value = word.partition("=")
            if name == "PYTHONPATH":
                word = f"PYTHONPATH={_after_child_dir(value)}"
            elif name in caches:
                word = f"{name}={env[name]}"
            assignments.append(word)
        kept += [*words.options, *assignments]
    return [*kept, *command]


def _set_for_tracing(env: dict[str, str], names: Collection[str], fresh_cache: bool) -> dict[str, str]:
    """The variables of env (child_env's) compilescope sets for tracing, but PYTHONPATH: the cache's where it is the
    run's own (fresh_cache; else the user's, inherited, is none of compilescope's); names: the others it sets."""
    caches = _CACHE_VARIABLES if fresh_cache else ()
    return {name: env[name] for name in (*TRACING_VARIABLES, *caches, *names) if name in env}


def _exported_for_tracing(env: dict[str, str], names: Collection[str], fresh_cache: bool) -> str:
    """The start of a login shell's string: the tracing variables exported again after its profile (which may have
    exported its own TORCH_TRACE or PYTHONPATH), CHILD_DIR first on the PYTHONPATH the profile left. A TORCH_DTRACE
    the profile exports is unset where the run has none (torch's TORCH_DTRACE wins over TORCH_TRACE: the log would go
    there); where the run has one, it is exported again as the run's."""
    words = [shlex.quote(f"{name}={value}") for name, value in _set_for_tracing(env, names, fresh_cache).items()]
    unset = "" if "TORCH_DTRACE" in env else "unset TORCH_DTRACE; "  # (POSIX: sh, dash and bash alike)
    return f'{unset}export {" ".join(words)} PYTHONPATH={shlex.quote(CHILD_DIR)}${{PYTHONPATH:+:"$PYTHONPATH"}}; '


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
    crash_files_before = _stats(trace_dir, [name for name in before if crash_file_pid(name) is not None])
    # One a live process holds open now is that process's (an earlier run's daemon, another run's worker): whatever
    # it writes there during the run is no crash of this run's
    crash_files_before = {name: stat for name, stat in crash_files_before.items()
                          if name not in _held_at_start(trace_dir, list(crash_files_before))}
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
            owners = _LogOwners(trace_dir, before, proc, crash_files_before)
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


def _held_at_start(trace_dir: str, names: list[str]) -> set[str]:
    """Of the crash files names, there before the run, those a live process may hold open (_held_open; where a
    process's descriptors are refused, one whose named process is alive)."""
    if not names:
        return set()
    holders, all_seen = _held_open([os.path.join(trace_dir, name) for name in names])
    held = {os.path.basename(path) for path in holders}
    if not all_seen:
        held |= {name for name in names if process_alive(crash_file_pid(name) or 0)}
    return held


def _stats(directory: str, names: list[str]) -> dict[str, tuple[int, int, int]]:
    """Each of names in directory that is there: its (inode, size, mtime), which a rewrite changes."""
    stats = {}
    for name in names:
        with suppress(OSError):
            stat = os.stat(os.path.join(directory, name))
            stats[name] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    return stats


LOOK_EVERY_S = 0.1  # how often the trace directory is looked at for new logs while the program runs (_LogOwners)


class _LogOwners:
    """Which of the logs new in the trace directory the program wrote: another process may write to the same
    directory meanwhile (a `TORCH_TRACE=dir python other.py`, another `compilescope run --trace-dir dir`), and its log
    is no log of this run (RUN_ENDED would say it ended while it is still written; the report could be of it).
    The same for the crash files new there (bytecode_capture.record_crashes), by the pid in their names: another
    run's, or a capture() block's in another process, are theirs to take (an empty one removed here while its process
    lives would lose its crash: faulthandler writes on into the file unlinked).

    A log is the program's when the pid of its first record (torch's glog prefix) is the program's or one of its
    descendants' (its workers under torchrun, multiprocessing's). Descendants are known only while they run (Linux's
    /proc: their parents), so the directory is looked at while the program runs (look); a log not told apart so (its
    first record written after the last look, or its process gone by then, or no /proc) is the program's unless
    its pid is another process's that is still running and holds it open (writes_log). A pid alone proves nothing
    where the log was copied in: a live process may have the pid the log was recorded with."""

    def __init__(self, trace_dir: str, before: Collection[str], program: subprocess.Popen,
                 crash_files_before: dict[str, tuple[int, int, int]] | None = None) -> None:
        self.trace_dir, self.before, self.program = trace_dir, before, program
        self.told: dict[str, bool] = {}  # a log's name: whether the program or a descendant wrote it
        # Crash files there before the run that no live process held then, with their (inode, size, mtime): one
        # written again is the run's only where a look saw its process under the program (told), or it is the
        # program's own (rewritten): a pid gone at the end proves nothing (an earlier run's, another namespace's)
        self.crash_files_before = dict(crash_files_before or {})
        # Read once per log, not every look: a log's name -> (its inode, the pid of its first record), once it has
        # one (a file that takes the name later, another inode, is read again); a log with none yet -> its (inode,
        # size, mtime) when its head was read (read again only once it has changed, grown or rewritten: a log idle
        # for minutes is not read ten times a second). For the looks only: an inode may be reused at once, so ours()
        # reads a log's first record again.
        self.pids: dict[str, tuple[int, int]] = {}
        self.heads_read: dict[str, tuple[int, int, int]] = {}
        # Crash files whose pid is a live process, not the program's nor holding the file, placed by nobody while
        # the program runs (a file copied in, or left by a process gone whose pid was taken): asked once, not every
        # look (holds_crash_file reads every /proc/N/stat); crash_file_ours asks again once the program has ended.
        self.passed_over: set[str] = set()
        # The pids a look saw as the program or under it (of a log's first record, of a crash file's name): evidence
        # that an empty crash file is the run's, to remove (crash_file_removable)
        self.descendants: set[int] = {program.pid}

    def look(self) -> None:
        try:
            new = [n for n in os.listdir(self.trace_dir)
                   if n not in self.before and n not in self.told and n not in self.passed_over]
        except OSError:
            return
        told = {}
        held_open: Callable[[int, str], bool]
        for name in new:
            path = os.path.join(self.trace_dir, name)
            if name.startswith(TORCH_LOG_NAME):
                pid, held_open = self._first_pid(name, path), writes_log
            else:
                pid, held_open = crash_file_pid(name), holds_crash_file
                if pid is None:
                    continue  # (neither a log nor a crash file: RUN_GOING, RUN_ENDED, the user's)
            mine = None if pid is None else self._descends(pid)
            if mine is False and pid is not None and not held_open(pid, path):
                mine = None  # (a process that only shares the pid: a file copied in, or left by a process gone)
                if not name.startswith(TORCH_LOG_NAME):
                    self.passed_over.add(name)
            if mine is not None:
                told[name] = mine
            if mine and pid is not None:
                self.descendants.add(pid)
        for name, stat in self.crash_files_before.items():
            pid = crash_file_pid(name)
            if name in self.told or name in self.passed_over or pid is None \
                    or _stats(self.trace_dir, [name]).get(name, stat) == stat:
                continue
            if self._descends(pid):
                told[name] = True
                self.descendants.add(pid)
            else:  # (its writer is no process under the program, or gone: that does not change; asked once)
                self.passed_over.add(name)
        # (a process the program left when it ended has a parent no more: what was told of it then is not kept)
        ended = self.program.poll() is not None
        self.told.update({name: mine for name, mine in told.items() if mine or not ended})

    def _first_pid(self, name: str, path: str) -> int | None:
        """first_pid of the log, its head read only when not yet read as it is now (inode, size, mtime: a first record
        written by a rewrite of the same size is read too), its first record's pid kept while the inode is the
        same (once there, it never changes in that file)."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        cached = self.pids.get(name)
        if cached is not None and cached[0] == stat.st_ino:
            return cached[1]
        seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if self.heads_read.get(name) == seen:
            return None
        pid = first_pid(path)
        if pid is None:
            self.heads_read[name] = seen
        else:
            self.pids[name] = (stat.st_ino, pid)
            self.heads_read.pop(name, None)
        return pid

    def _descends(self, pid: int) -> bool | None:
        """Whether the process pid is the program or runs under it; None where that is not known (it has ended,
        or there is no /proc)."""
        seen = 0
        while pid != self.program.pid:
            if pid <= 1 or seen > 256:
                return False
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                return False if seen else None  # (an ancestor gone between two reads: the chain is cut)
            pid = int(stat[stat.rindex(b")") + 2:].split()[1])  # (after the command's name, which may hold ") ")
            seen += 1
        return True

    def ours(self, logs: list[str]) -> list[str]:
        """Of logs (new in the trace directory, the program ended), the program's. A log not told apart while it ran
        has its first record read again here, once, not taken from the looks' cache: the file under that name may be
        another by now with the same inode and size (ext4 gives a new file the inode of one just removed), or the same
        file written again."""
        kept = []
        for log in logs:
            mine = self.told.get(os.path.basename(log))
            if mine is None:
                pid = first_pid(log)
                mine = pid is None or pid == self.program.pid or not (process_alive(pid) and writes_log(pid, log))
            if mine:
                kept.append(log)
        return kept

    def rewritten(self) -> set[str]:
        """The crash files there before the run that a process of the run wrote again (crash_files_before), the
        program ended."""
        changed = {name for name, stat in self.crash_files_before.items()
                   if _stats(self.trace_dir, [name]).get(name, stat) != stat}
        return {name for name in changed if self.told.get(name) or crash_file_pid(name) == self.program.pid}

    def crash_file_removable(self, name: str, pid: int) -> bool:
        """Whether an empty crash file of the run (crash_file_ours), held by no process seen, may be removed: only
        with evidence that its process was the program's (its pid seen under the program): a pid that is no process
        here may be one of another pid namespace sharing the directory (a container), its crash still to come."""
        return bool(self.told.get(name)) or pid in self.descendants

    def crash_file_ours(self, name: str, pid: int) -> bool:
        """Whether the crash file name (new in the trace directory, the program ended) is of the program's processes:
        told so while it ran, else unless pid is another process's that still writes it (holds_crash_file)."""
        mine = self.told.get(name)
        if mine is None:
            path = os.path.join(self.trace_dir, name)
            mine = pid == self.program.pid or not (process_alive(pid) and holds_crash_file(pid, path))
        return mine


def join_process_logs(logs: list[str]) -> list[tuple[str, list[str]]]:
    """The logs one process wrote in parts (discover.process_parts: draft_export's own log) joined into its first, in
    the order written, each later part removed once its bytes are there: the one log torch would have written, whose
    string table the later parts need. Only logs this run wrote. (the first part, the parts appended) for each."""
    joined = []
    for first, *later in process_parts(logs):
        appended = []
        for part in later:
            try:
                with open(part, "rb") as src:
                    data = src.read()
                _append(first, data)
            except OSError:
                break  # (the parts after it stay as they are: their order matters)
            _remove(part)
            appended.append(part)
        if appended:
            joined.append((first, appended))
    return joined


def attach_crash_reports(trace_dir: str, logs: list[str], before: Collection[str] = (),
                         pid: int | None = None, mine: Callable[[str, int], bool] | None = None,
                         held: list[HeldCrashFile] | None = None,
                         removable: Callable[[str, int], bool] | None = None) -> list[CrashReport]:
    """Each crash faulthandler wrote in trace_dir (bytecode_capture.record_crashes), appended to the log of the process
    that crashed (ingest/crash_files.py: the newest of logs with its pid) as an artifact its reader takes like any
    other, so that the log alone tells it; the empty files of the processes that did not crash are removed, except
    those a live process still holds open (a daemon the program started, a worker it forked that inherited the file):
    faulthandler would write its crash into the file unlinked, lost. Only files this run made or wrote again (not in
    before: run_program leaves out of it a file rewritten meanwhile; an empty leftover of an earlier run is left
    alone, as its process cannot be known gone where the directory is shared with another pid namespace, a
    container); pid: only that process's file; mine: only the files it says are this run's
    processes' (given the name and its pid: _LogOwners.crash_file_ours), not those of a run beside it. held: the
    empty files kept because a process holds them open are added to it. removable: where given, an empty file held by
    no process seen is removed only if it says so (given the name and its pid: _LogOwners.crash_file_removable)."""
    found, empty = [], []
    for crash in crash_files(trace_dir, set(before), pid, mine):
        if not crash.text:
            empty.append(crash)
            continue
        log = log_of(crash, logs)
        if log is not None:
            try:
                _append(log, crash_record(crash.pid, crash.text, crash.written, "compilescope/runner.py"))
                _remove(crash.path)
            except OSError:
                log = None
        found.append(CrashReport(crash.pid, crash.text, log))
    holders, all_seen = _held_open([crash.path for crash in empty]) if empty else ({}, True)
    for crash in empty:
        # Where a holder may be unseen (no /proc, or a process's descriptors refused: another user's), the process
        # the file is named for, alive, is taken to hold it: removed, its crash to come would be lost
        pids = holders.get(crash.path) or ([crash.pid] if not all_seen and process_alive(crash.pid) else [])
        if pids:
            if held is not None:
                held.append(HeldCrashFile(crash.path, pids))
        elif removable is None or removable(os.path.basename(crash.path), crash.pid):
            _remove(crash.path)
    return found


def _held_open(paths: list[str]) -> tuple[dict[str, list[int]], bool]:
    """Of paths, those some process holds open for writing (_open_for_writing), with the pids of those processes, from
    one pass over every /proc/N/fd; and whether every process's descriptors were seen (no /proc, or another user's
    process refused: not). At the run's start (crash files there before it) and at its end: the holder may be any
    process (a worker forked from the one the file is named for, in a session of its own), not only that process and
    its children."""
    if not os.path.isdir("/proc/self/fd"):
        return {}, False
    targets = {os.path.realpath(path): path for path in paths}
    held: dict[str, list[int]] = {}
    all_seen = True
    with suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                fds = os.listdir(f"/proc/{name}/fd")
            except PermissionError:
                all_seen = False  # (another user's process)
                continue
            except OSError:
                continue  # (one gone)
            for fd in fds:
                try:
                    path = targets.get(os.readlink(f"/proc/{name}/fd/{fd}"))
                except OSError:
                    continue
                if path is not None and _open_for_writing(name, fd) and int(name) not in held.setdefault(path, []):
                    held[path].append(int(name))
    return held, all_seen


def _open_for_writing(pid: str, fd: str) -> bool:
    """Whether descriptor fd of process pid may write (/proc/N/fdinfo's octal flags: O_RDONLY is 0 in the access mode
    bits): a reader of a crash file (a user's `tail -f`) is no process that may crash into it. Where fdinfo cannot be
    read, yes (kept, as a holder unseen is)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as f:
            for line in f:
                if line.startswith(b"flags:"):
                    return int(line.split()[1], 8) & 3 != 0  # (O_ACCMODE: O_WRONLY 1, O_RDWR 2)
    except (OSError, ValueError, IndexError):
        pass
    return True


def _append(log: str, record: bytes) -> None:
    """record at the end of log; a log the crash cut in the middle of a record ends that line first (the reader skips
    what it cannot read)."""
    with open(log, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        cut = False
        if size:
            f.seek(size - 1)
            cut = f.read(1) != b"\n"
        f.seek(0, os.SEEK_END)
        f.write((b"\n" if cut else b"") + record)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


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

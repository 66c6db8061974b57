"""Run a program as a child process with TORCH_TRACE set, and find the logs it wrote (`compilescope run`, diagnose's
stages, the demo). Nothing here writes a report. Its modules, by concern:
  process.py    the program and its run: Program, program(), check_interpreter, run_program and its RunResult, the
                signals while it runs, choose_log
  command.py    the child's environment (child_env) and the user's command line read for what would change it: env
                words, `sh -c`/login-shell strings, check_env_prefix, run_argv, unreached_login_shell
  trace_dir.py  the trace directory and which of its logs and crash files are the run's: prepare_trace_dir, the
                going/ended markers serve reads, LogOwners, join_process_logs, attach_crash_reports
  procfs.py     what /proc says of a process, shared by them: process_alive, writes_log, holds_crash_file
The names callers use are importable from here.
"""

from .command import CHILD_DIR, PER_RANK_CACHE_ENV, TRACING_VARIABLES, EnvWords, UnreachedShell, check_env_prefix, child_env, env_prefix, run_argv, shell_command, unreached_login_shell
from .process import PYTHON_NAME, Program, RunResult, check_interpreter, choose_log, program, run_program, this_python_program
from .procfs import holds_crash_file, process_alive, writes_log
from .trace_dir import (DEFAULT_TRACE_ROOT, RUN_ENDED, RUN_GOING, CrashReport, HeldCrashFile, LogOwners, as_typed_here, attach_crash_reports,
                        join_process_logs, mark_ended, marked_going, new_trace_dir, prepare_trace_dir, run_has_ended)

__all__ = [
    "CHILD_DIR", "DEFAULT_TRACE_ROOT", "PER_RANK_CACHE_ENV", "PYTHON_NAME", "RUN_ENDED", "RUN_GOING", "TRACING_VARIABLES",
    "CrashReport", "EnvWords", "HeldCrashFile", "LogOwners", "Program", "RunResult", "UnreachedShell", "as_typed_here", "attach_crash_reports",
    "check_env_prefix", "check_interpreter", "child_env", "choose_log", "env_prefix", "holds_crash_file", "join_process_logs",
    "mark_ended", "marked_going", "new_trace_dir", "prepare_trace_dir", "process_alive", "program", "run_argv",
    "run_has_ended", "run_program", "shell_command", "this_python_program", "unreached_login_shell", "writes_log",
]

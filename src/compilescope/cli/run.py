"""`compilescope run [options] script.py args... | -m module args... | -- command args...`

Runs the program with TORCH_TRACE set (and INDUCTOR_PROVENANCE=1), streams its
output, then writes the report of what it compiled and exits with the program's
exit status.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from .._torch import require_torch
from ..analyses.unread import unread
from ..errors import CompilescopeError
from ..ingest.discover import holds_several_ranks
from ..ingest.reader import read_trace
from ..render.notices import report_lines, unread_line
from ..runner import (DEFAULT_TRACE_ROOT, HeldCrashFile, UnreachedShell, as_typed_here, check_env_prefix, check_interpreter, choose_log, new_trace_dir, prepare_trace_dir,
                      mark_ended, marked_going, program, run_program, unreached_login_shell)
from ..wording import count
from .. import location
from ..output import Kept, check_output_dir, program_file, report_destination, shown_output, trace_directory
from .usage import require_more_than
from ..analyses.analyze import analyze
from .browser import open_browser
from .profiles import read_profiles
from .report import (add_report_arguments, check_report_arguments, report_options, report_processes, stats_line,
                     strict_problems, write_report)


def split_program(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], str | None, list[str], bool]:
    """(compilescope's options, -m module or None, the program's words, whether `--` introduced them).

    Everything from the first word that is not one of our options (or its value)
    belongs to the program, so `compilescope run train.py --lr 3` passes --lr to train.py.
    """
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[:i], None, argv[i + 1 :], True
        if word == "-m" or (word.startswith("-m") and not word.startswith("--")):
            module = word[2:] or (argv[i + 1] if i + 1 < len(argv) else None)
            if not module:
                parser.error("-m needs a module name")
            rest = argv[i + 1 :] if word[2:] else argv[i + 2 :]
            return argv[:i], module, rest, False
        if word.startswith("-") and word != "-":
            takes_value = word in getattr(parser, "value_options", ()) and "=" not in word
            i += 2 if takes_value else 1
            continue
        return argv[:i], None, argv[i:], False
    return argv, None, [], False


def warn_options_after_program(parser: argparse.ArgumentParser, options: list[str], module: str | None, words: list[str],
                               is_command: bool) -> None:
    """`run train.py --no-browser`: the flag goes to train.py, as documented; say so, in case it was meant for us,
    with the command line that gives it to us (each option moved with its value, the program's words kept in order).

    Only our long options are named (short ones like -o or -v are common in scripts); never after `--`,
    which says plainly that the rest is the program's.
    """
    if is_command:
        return
    program = ["-m", module] if module is not None else words[:1]
    program_args = words if module is not None else words[1:]
    # The parser's own options, not every --word of its help: the usage's examples (`-- torchrun --nproc-per-node 2`)
    # and the help's prose name the program's options too.
    long_options = {name for name in getattr(parser, "options", ()) if name.startswith("--")}
    ours, moved, kept = [], [], []
    i = 0
    while i < len(program_args):
        word = program_args[i]
        name = word.split("=", 1)[0]
        if not (word.startswith("--") and name in long_options):
            kept.append(word)
            i += 1
            continue
        ours.append(word)
        takes_value = name in getattr(parser, "value_options", ()) and "=" not in word
        moved.extend(program_args[i:i + 2] if takes_value else [word])
        i += 2 if takes_value else 1
    if ours:
        suggested = shlex.join([*parser.prog.split(), *options, *moved, *program, *kept])
        print(f"compilescope: warning: {' '.join(ours)} after {' '.join(program)} {'goes' if len(ours) == 1 else 'go'} "
              f"to the program, not to compilescope; put compilescope's options first: {suggested}", file=sys.stderr)


def parse_program_args(parser: argparse.ArgumentParser, argv: list[str], command: str) -> argparse.Namespace:
    """compilescope's options, then the program to run (args.module, args.program, args.is_command): the
    arguments of every command that runs a program (run, diagnose); command names it in the error.
    args.command_words: the command line up to the program (`compilescope run -o out`), as given: the start of a
    command line suggested back to the user."""
    options, module, words, is_command = split_program(parser, argv)
    warn_options_after_program(parser, options, module, words, is_command)
    args = parser.parse_args(options)
    args.module, args.program, args.is_command = module, words, is_command
    args.command_words = [*parser.prog.split(), *options]
    if module is None and not words:
        parser.error(f"no program to run: give a script ({command} train.py), -m module, or -- command")
    return args


class RunCommand:
    """Run a Python program with TORCH_TRACE set, then write the report of what it compiled."""

    name = "run"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.usage = (
            "compilescope run [options] script.py [args ...]\n"
            "       compilescope run [options] -m module [args ...]\n"
            "       compilescope run [options] -- command [args ...]   (e.g. -- torchrun --nproc-per-node 2 train.py)"
        )
        parser.allow_abbrev = False  # an abbreviation could swallow the program's own flags
        add_report_arguments(parser, out_help="report directory (default: <trace dir>/report)", reads_a_path=False)
        parser.set_defaults(out=None)
        parser.add_argument(
            "--trace-dir", metavar="DIR",
            help=f"where the program's TORCH_TRACE logs go (default: a new ./{DEFAULT_TRACE_ROOT}/<timestamp>/)",
        )
        parser.add_argument(
            "--fresh-cache", action="store_true",
            help="compile with an empty, temporary Inductor cache, one per rank under torchrun (a warm cache skips graphs "
                 "and provenance)",
        )
        parser.add_argument("--timeout", type=float, metavar="SECONDS", help="stop the program after SECONDS (its report is still written)")

    def parse_args(self, parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
        return parse_program_args(parser, argv, "compilescope run")

    def run(self, args: argparse.Namespace) -> int:
        check_report_arguments(args)
        require_more_than("--timeout", args.timeout, 0)
        prog = program(args.program, args.module, args.is_command)
        if prog.this_python:
            require_torch("compilescope run")
        check_interpreter(prog, args.command_words)
        check_env_prefix(prog.argv)
        # --overwrite never removes the program, nor the trace directory.
        keep: list[str | Kept] = [program_file(w) for w in args.program if os.path.exists(w)]
        keep += [trace_directory(args.trace_dir)] if args.trace_dir else []
        if args.out:
            # Fail before the run, not after it.
            check_output_dir(args.out, args.overwrite, keep)
            if args.trace_dir and location.place(args.out).holds(location.place(args.trace_dir)):
                raise CompilescopeError(f"-o {args.out} would hold the trace directory {args.trace_dir}, which the "
                                        "report cannot replace; choose another output directory (the default is "
                                        "<trace dir>/report)")
        trace_dir = prepare_trace_dir(args.trace_dir) if args.trace_dir else new_trace_dir()
        # The trace directory in the commands printed: as typed, else (run made it) as the user would type it here.
        named_dir = args.trace_dir or as_typed_here(trace_dir)
        print(f"compilescope: running {prog} with TORCH_TRACE={trace_dir}", file=sys.stderr, flush=True)
        with marked_going(trace_dir):
            result = run_program(prog, trace_dir, fresh_cache=args.fresh_cache, timeout=args.timeout)
            # (said before the going mark goes: serve reads the run as over from then on)
            mark_ended(trace_dir, result.logs)
        rc = result.returncode
        if result.timed_out:
            print(f"compilescope: the program ran longer than --timeout {args.timeout:g}s and was stopped", file=sys.stderr)
        elif rc:
            how = f"was killed by {result.signal_name} (status {rc})" if result.signal_name else f"exited with status {rc}"
            print(f"compilescope: the program {how}; writing the report of what it traced", file=sys.stderr)
        for crash in result.crashes:
            where = f"added to {crash.log}" if crash.log else "its process wrote no log"
            if crash.exception:  # (Python printed its traceback on stderr already)
                print(f"compilescope: process {crash.pid} {crash.ending} (recorded, {where})",
                      file=sys.stderr)
                continue
            # faulthandler wrote to the trace directory, not to stderr: what Python would have printed, printed here
            print(f"compilescope: process {crash.pid} crashed ({crash.headline}); its stack ({where}):\n"
                  f"{crash.stack.rstrip()}", file=sys.stderr)
        if result.held_crash_files:
            print(_still_running(result.held_crash_files, named_dir), file=sys.stderr)

        if not result.logs:
            # A login shell whose string compilescope cannot start (a script, `bash -lic`) reads a profile that may
            # have exported TORCH_TRACE elsewhere: said, with the forms compilescope follows
            unreached = unreached_login_shell(prog.argv)
            shell = "" if unreached is None else _unreached_shell_hint(unreached)
            print(
                f"compilescope: the program wrote no TORCH_TRACE log to {named_dir} "
                f"(it compiled nothing, or torch was never imported){shell}; no report written",
                file=sys.stderr,
            )
            if not args.trace_dir and not os.listdir(trace_dir):
                os.rmdir(trace_dir)  # the directory this run made for its trace, left empty: not a run to keep
            return rc
        out = args.out or os.path.join(trace_dir, "report")
        if args.all_ranks_html or holds_several_ranks(result.logs):
            # A distributed program (e.g. under torchrun): one report for all its ranks.
            from .multirank import run_all_ranks

            try:
                status = run_all_ranks(args, directory=trace_dir, out=out, logs=result.logs, typed=named_dir)
            except CompilescopeError as exc:
                _report_not_written(named_dir)
                raise _with_program_status(exc, rc) from None
            return rc or status
        for first, parts in result.joined:
            print(f"compilescope: {', '.join(os.path.basename(p) for p in parts)} joined to {os.path.basename(first)}: "
                  f"written by its process too (torch.export.draft_export logs to a file of its own)", file=sys.stderr)
        chosen, note = choose_log(result.logs)
        named_log = os.path.join(named_dir, os.path.relpath(chosen, trace_dir))
        if note:
            print(f"compilescope: {note}", file=sys.stderr)
        options = report_options(args)
        try:
            with read_trace(chosen) as trace, report_destination(out, args.overwrite, [*keep, chosen]) as local_out:
                profiles, profiles_read = _program_profiles(args.profile)
                results = analyze(trace, profiles)
                output = write_report(trace, local_out, args.overwrite, options, results,
                                      processes=report_processes(args.jobs, trace))
                if args.verbose:
                    print(stats_line(trace), file=sys.stderr)
                    for p in trace.stats.problems:
                        print(f"  {p}", file=sys.stderr)
                problems = strict_problems(trace, args.strict, args.strict_compile_id)
                # (-v listed the log's problems above: --strict lists only the others)
                problems_left = [p for p in problems if not args.verbose or str(p) not in {str(q) for q in trace.stats.problems}]
                unread_warning = unread_line(unread(trace.stats), chosen, "report")
        except CompilescopeError as exc:
            _report_not_written(named_dir)
            raise _with_program_status(exc, rc) from None
        except Exception:
            _report_not_written(named_dir)
            raise  # a bug: main() prints it in one line
        where, index = shown_output(out, output.path)
        # The program has ended (its status and any crash's stack said above): the report's ending, as every command
        # that writes one ends.
        print("\n".join(report_lines(results.insights, named_log, output.files, where, index, profiles_read)))
        if unread_warning and not args.verbose:
            print(unread_warning, file=sys.stderr)
        for p in problems_left:
            print(p, file=sys.stderr)
        if problems:
            print(f"compilescope: {count(len(problems), 'problem')} in {named_log} (strict mode)", file=sys.stderr)
            return rc or 1
        if not args.no_browser and index is not None and not (result.interrupted or result.terminated):
            open_browser(index)
        return rc


def _still_running(held: list[HeldCrashFile], trace_dir: str) -> str:
    """The line saying that processes the program started run on, holding their (empty) crash files, kept for them."""
    pids = list(dict.fromkeys(pid for crash_file in held for pid in crash_file.pids))
    names = ", ".join(os.path.basename(crash_file.path) for crash_file in held)
    several = len(pids) > 1
    said = ", ".join(map(str, pids[:-1])) + f" and {pids[-1]}" if several else str(pids[0])  # (5 and 6; 5, 6 and 7)
    return (f"compilescope: process{'es' if several else ''} {said}, started by the program, "
            f"{'are' if several else 'is'} still running; if {'one' if several else 'it'} crashes, "
            f"`compilescope {shlex.quote(trace_dir)}` will show it (file{'s' if len(held) > 1 else ''} {names})")


def _unreached_shell_hint(shell: UnreachedShell) -> str:
    """What the no-log line adds for a login shell the run cannot reach: its profile may have moved the log, and the
    forms of that shell the run follows (its `-lc` string, rewritten where it is sh, bash or dash; else bash's), the
    user's other options kept, set inside the string."""
    follow = shell.name if shell.rewritten else "bash"
    options = ", ".join(f"`{option}`" for option in shell.other_options)
    kept = f" (with {options} set inside COMMAND instead)" if options else ""
    return (f"; the program is a login or interactive shell, and its profile may have moved the log (TORCH_TRACE, "
            f"TORCH_DTRACE, PYTHONPATH): run it as `{follow} -lc \"COMMAND\"`, which compilescope follows{kept}, or "
            f"without -l/-i (`{shell.name} -c`, `{shell.name} script.sh`)")


def _program_profiles(paths: list[str]) -> tuple[list, list[str]]:
    """Each --profile, read once the program has ended (it writes them), and the paths of those read: one it did
    not write, or that cannot be read, is a warning, and the report is written without it (run always writes the
    report)."""
    profiles, read = [], []
    for path in paths:
        try:
            profiles.extend(read_profiles([path]))
        except CompilescopeError as exc:
            print(f"compilescope: warning: {exc}: the report has no runtime from it", file=sys.stderr)
        else:
            read.append(path)
    return profiles, read


def _report_not_written(trace_dir: str) -> None:
    """The run is over and its report failed: say where its trace is, so nothing is lost (main prints why).
    DIR is for the user to choose: -o, or where the program wrote meanwhile, may be why the report failed."""
    print(f"compilescope: the trace is kept in {trace_dir}; write its report with: compilescope {shlex.quote(trace_dir)} "
          "-o DIR", file=sys.stderr)


def _with_program_status(exc: CompilescopeError, rc: int) -> CompilescopeError:
    """The report failed after the program ran: main prints the error; the exit status is the program's if it failed."""
    return CompilescopeError(str(exc), exit_code=rc or exc.exit_code)

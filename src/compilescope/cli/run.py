"""`compilescope run [options] script.py args... | -m module args... | -- command args...`

Runs the program with TORCH_TRACE set (and INDUCTOR_PROVENANCE=1), streams its
output, then writes the report of what it compiled and exits with the program's
exit status.
"""

from __future__ import annotations

import argparse
import os
import sys

from .._torch import require_torch
from ..errors import CompilescopeError
from ..ingest.rank_logs import holds_several_ranks
from ..ingest.reader import read_trace
from ..runner import DEFAULT_TRACE_ROOT, choose_log, new_trace_dir, prepare_trace_dir, program, run_program
from .report import _open_browser, _stats_line, add_report_arguments, report_options, strict_problems, write_report


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
            action = parser._option_string_actions.get(word)  # noqa: SLF001 - argparse has no public lookup
            takes_value = action is not None and action.nargs != 0 and "=" not in word
            i += 2 if takes_value else 1
            continue
        return argv[:i], None, argv[i:], False
    return argv, None, [], False


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
        add_report_arguments(parser)
        out = parser._option_string_actions["--out"]  # noqa: SLF001
        out.default, out.help = None, "report directory (default: <trace dir>/report)"
        parser.add_argument(
            "--trace-dir", metavar="DIR",
            help=f"where the program's TORCH_TRACE logs go (default: a new ./{DEFAULT_TRACE_ROOT}/<timestamp>/)",
        )
        parser.add_argument(
            "--fresh-cache", action="store_true",
            help="compile with an empty, temporary Inductor cache (a warm cache skips graphs and provenance)",
        )
        parser.add_argument("--timeout", type=float, metavar="SECONDS", help="stop the program after SECONDS (its report is still written)")

    def parse_args(self, parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
        options, module, words, is_command = split_program(parser, argv)
        args = parser.parse_args(options)
        args.module, args.program, args.is_command = module, words, is_command
        if module is None and not words:
            parser.error("no program to run: give a script (compilescope run train.py), -m module, or -- command")
        return args

    def run(self, args: argparse.Namespace) -> int:
        prog = program(args.program, args.module, args.is_command)
        if prog.this_python:
            require_torch("compilescope run")
        trace_dir = prepare_trace_dir(args.trace_dir) if args.trace_dir else new_trace_dir()
        print(f"compilescope: running {prog} with TORCH_TRACE={trace_dir}", file=sys.stderr, flush=True)
        result = run_program(prog, trace_dir, fresh_cache=args.fresh_cache, timeout=args.timeout)
        rc = result.returncode
        if result.timed_out:
            print(f"compilescope: the program ran longer than --timeout {args.timeout:g}s and was stopped", file=sys.stderr)
        elif rc:
            print(f"compilescope: the program exited with status {rc}; writing the report of what it traced", file=sys.stderr)

        if not result.logs:
            print(
                f"compilescope: the program wrote no TORCH_TRACE log to {trace_dir} "
                "(it compiled nothing, or torch was never imported); no report written",
                file=sys.stderr,
            )
            return rc
        out = args.out or os.path.join(trace_dir, "report")
        if args.all_ranks_html or holds_several_ranks(result.logs):
            # A distributed program (e.g. under torchrun): one report for all its ranks.
            from .multirank import run_all_ranks

            try:
                status = run_all_ranks(args, directory=trace_dir, out=out, logs=result.logs)
            except CompilescopeError as exc:
                print(f"compilescope: error: {exc}", file=sys.stderr)
                return rc or exc.exit_code
            return rc or status
        chosen, note = choose_log(result.logs)
        if note:
            print(f"compilescope: {note}", file=sys.stderr)
        options = report_options(args)
        try:
            with read_trace(chosen) as trace:
                output = write_report(trace, out, args.overwrite, options)
                if args.verbose:
                    print(_stats_line(trace), file=sys.stderr)
                    for p in trace.stats.problems:
                        print(f"  {p}", file=sys.stderr)
                problems = strict_problems(trace, args.strict, args.strict_compile_id)
        except CompilescopeError as exc:
            print(f"compilescope: error: {exc}", file=sys.stderr)
            return rc or exc.exit_code
        index = os.path.join(output.path, "index.html")
        print(f"Wrote the report to {output.path}; open {index}")
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print(f"compilescope: {len(problems)} problem(s) in {chosen} (strict mode)", file=sys.stderr)
            return rc or 1
        if not args.no_browser and not result.interrupted:
            _open_browser(index)
        return rc

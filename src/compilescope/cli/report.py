"""`compilescope PATH`: read a TORCH_TRACE log and write the HTML report (tlparse's flags)."""

from __future__ import annotations

import argparse
import os
import sys

from ..analyses import analyze
from ..ingest.discover import discover
from ..ingest.rank_logs import holds_several_ranks
from ..ingest.reader import ReadOptions, read_trace
from ..model.trace import Trace
from ..worker import strict_problems, write_report
from .browser import open_browser
from .progress import read_progress
from .report_args import add_report_arguments, report_options

# The names other commands (run, diagnose) take from here.
__all__ = ["ReportCommand", "add_report_arguments", "open_browser", "report_options", "strict_problems", "write_report"]
_open_browser = open_browser


class ReportCommand:
    """Read a TORCH_TRACE log (file, .gz, or directory) and write an HTML report."""

    name = "report"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "path", nargs="+",
            help="a TORCH_TRACE log file, a .gz log, or a directory of logs; several: a report for each, "
            "under OUT/<name>/, and a page listing them",
        )
        add_report_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        if len(args.path) > 1:
            from .batch import run_batch  # here (as multirank below): a single report does not pay for them

            return run_batch(args, args.path)
        args.path = args.path[0]
        if args.all_ranks_html or (not args.latest and not args.export and holds_several_ranks(args.path)):
            from .multirank import run_all_ranks

            return run_all_ranks(args)
        found = discover(args.path, latest=args.latest)
        if found.note:
            print(f"compilescope: {found.note}", file=sys.stderr)
        options = report_options(args)
        with read_progress(found.chosen) as progress:
            trace = read_trace(found.chosen, ReadOptions(progress=progress))
        with trace:
            output = write_report(trace, args.out, args.overwrite, options, analyze(trace))
            stats = trace.stats
            if args.verbose:
                print(_stats_line(trace), file=sys.stderr)
                for p in stats.problems:
                    print(f"  {p}", file=sys.stderr)
            problems = strict_problems(trace, args.strict, args.strict_compile_id)
        index = os.path.join(output.path, "index.html")
        print(f"Wrote {output.files} files to {output.path}")
        if problems:
            for p in problems:
                print(p, file=sys.stderr)
            print(f"compilescope: {len(problems)} problem(s) in {found.chosen} (strict mode)", file=sys.stderr)
            return 1
        if not args.no_browser:
            open_browser(index)
        return 0


def _stats_line(trace: Trace) -> str:
    outcomes = ", ".join(f"{k}={v}" for k, v in trace.stats.outcomes.items() if v)
    return f"{trace.source}: {trace.stats.total} records ({outcomes})"



"""`compilescope PATH`: read a TORCH_TRACE log and write the HTML report (tlparse's flags)."""

from __future__ import annotations

import argparse
import os
import sys

from .. import location
from ..analyses.analyze import analyze
from ..analyses.results import Results
from ..cores import default_jobs
from ..analyses.unread import unread
from ..errors import CompilescopeError
from ..ingest.discover import discover, holds_several_ranks
from ..ingest.reader import ReadOptions, read_trace
from ..model.trace import Trace
from ..output import report_destination, saved_analysis_input, shown_output, write_file
from ..render.notices import report_lines, unread_line
from ..wording import count
from ..report_writer import saved_analysis, stored_log_chunks, strict_problems, write_report, write_saved_report
from .browser import open_browser
from .progress import read_progress
from .report_args import add_report_arguments, check_report_arguments, report_options

# The names other commands (run, diagnose) take from here.
__all__ = ["ReportCommand", "add_report_arguments", "check_report_arguments", "report_options", "stats_line", "strict_problems",
           "write_report"]


class ReportCommand:
    """Read a TORCH_TRACE log (file, .gz, or directory) and write an HTML report."""

    name = "report"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "path", nargs="*",
            help="a TORCH_TRACE log file, a .gz log, or a directory of logs; several: a report for each, "
            "under OUT/<name>/, and a page listing them",
        )
        add_report_arguments(parser)
        parser.add_argument("--save", metavar="FILE", help="also save the analysis (the model of the log and every "
                            "analysis of it) to FILE (.gz: compressed), to re-render it later with --load")
        parser.add_argument("--load", metavar="FILE", help="write the report of an analysis saved with --save "
                            "(no log needed)")

    def run(self, args: argparse.Namespace) -> int:
        check_report_arguments(args)
        if args.load:
            if args.path or args.save:
                raise CompilescopeError("--load reads a saved analysis instead of a log: give no log and no --save")
            return _report_saved(args)
        if not args.path:
            raise CompilescopeError("give a TORCH_TRACE log (a file, a .gz or a directory), or --load FILE")
        if args.save and (len(args.path) > 1 or args.all_ranks_html):
            raise CompilescopeError("--save saves the analysis of one log; give one log")
        if len(args.path) > 1 and args.profile:
            raise CompilescopeError("--profile goes with one log (the log of the process that was profiled)")
        if len(args.path) > 1:
            from .batch import run_batch  # here (as multirank below): a single report does not pay for them

            return run_batch(args, args.path)
        args.path = args.path[0]
        several = args.all_ranks_html or (not args.latest and not args.export and holds_several_ranks(args.path))
        if args.profile and several:
            raise CompilescopeError("--profile goes with one log (the log of the process that was profiled)")
        if several:
            if args.save:
                raise CompilescopeError(f"{args.path} holds several ranks' logs; --save saves the analysis of one log "
                                        "(give one rank's log, or --latest)")
            from .multirank import run_all_ranks

            return run_all_ranks(args)
        found = discover(args.path, latest=args.latest)
        if found.note:
            print(f"compilescope: {found.note}", file=sys.stderr)
        options = report_options(args)
        with read_progress(found.chosen) as progress:
            trace = read_trace(found.chosen, ReadOptions(progress=progress))
        with trace, report_destination(args.out, args.overwrite, keep=[found.chosen]) as local_out:
            results = analyze(trace, _profiles(args.profile))
            output = write_report(trace, local_out, args.overwrite, options, results,
                                  processes=report_processes(args.jobs, trace))
            if args.save:
                _save(results, args.save, args.overwrite)
            stats = trace.stats
            if args.verbose:
                print(stats_line(trace), file=sys.stderr)
                for p in stats.problems:
                    print(f"  {p}", file=sys.stderr)
            problems = strict_problems(trace, args.strict, args.strict_compile_id)
            unread_warning = unread_line(unread(stats), found.chosen, "report")
        where, index = shown_output(args.out, output.path)
        print("\n".join(report_lines(results.insights, found.chosen, output.files, where, index, args.profile)))
        if unread_warning and not args.verbose:  # -v has listed every problem already
            print(unread_warning, file=sys.stderr)
        if problems:
            listed = {str(p) for p in stats.problems} if args.verbose else set()  # (-v listed them above)
            for p in problems:
                if str(p) not in listed:
                    print(p, file=sys.stderr)
            print(f"compilescope: {count(len(problems), 'problem')} in {found.chosen} (strict mode)", file=sys.stderr)
            return 1
        if not args.no_browser and index is not None:
            open_browser(index)
        return 0


# A log's report is written by several processes (OutputDir.write_all) from this many bytes of payload up. Each
# process copies, on write, nearly every page the whole write touches, whatever its share (reference counts, and new
# objects placed in the free chunks the analysis leaves in the heap, ~14 MB on GPT-2): 4-8% more CPU. Two processes
# save 4-7% of the wall time of the real logs of 4.7-6.4 MiB on an idle machine and none on a busy one, and 10-14%
# from 13 MiB up (the commit that set 8 MiB has the runs).
PARALLEL_FROM = 8 << 20
MAX_PROCESSES = 4  # past this, the processes mostly wait on each other and on the disk


def report_processes(jobs: int | None, trace: Trace) -> int:
    """How many processes write this log's report: -j, or the cores, for a big enough log."""
    if trace.store.size < PARALLEL_FROM:
        return 1
    return max(1, min(jobs or default_jobs(), MAX_PROCESSES))


def _profiles(paths: list[str]) -> list:
    """The --profile files, read (the profile reader is imported only then: start-up time)."""
    if not paths:
        return []
    from .profiles import read_profiles

    return read_profiles(paths)


def _save(results: Results, path: str, overwrite: bool) -> None:
    """--save FILE: a local path, or a URL that fsspec knows (file:// and dir:: over a local path: that path)."""
    assert results.trace is not None
    path = location.local_output(path)
    data = saved_analysis(results, stored_log_chunks(results.trace.source))
    if path.endswith(".gz"):
        import gzip

        data = gzip.compress(data, compresslevel=6, mtime=0)
    write_file(path, data, overwrite)
    print(f"Saved the analysis to {location.absolute(path)}")


def _report_saved(args: argparse.Namespace) -> int:
    """`compilescope report --load FILE`: the same report as from the log, from a saved analysis."""
    # The saved file is the input here: --overwrite never deletes it (the log it names may be gone).
    with report_destination(args.out, args.overwrite, keep=[saved_analysis_input(args.load)]) as local_out:
        output, log_note, results = write_saved_report(args.load, local_out, args.overwrite, report_options(args))
    where, index = shown_output(args.out, output.path)
    assert results.trace is not None
    # As for a log, with the log the analysis was saved from where it is still here to summarise (the saved path is
    # untrusted: only a file that is there is named, and findings_lines shows it on one line).
    log = results.trace.source if os.path.isfile(results.trace.source) else None
    print("\n".join(report_lines(results.insights, log, output.files, where, index)))
    if log_note:
        print(log_note, file=sys.stderr)
    if not args.no_browser and index is not None:
        open_browser(index)
    return 0


def stats_line(trace: Trace) -> str:
    outcomes = ", ".join(f"{k}={v}" for k, v in trace.stats.outcomes.items() if v)
    return f"{trace.source}: {trace.stats.total} records ({outcomes})"



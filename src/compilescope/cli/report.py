"""`compilescope PATH`: read a TORCH_TRACE log and write the HTML report (tlparse's flags)."""

from __future__ import annotations

import argparse
import os
import sys
import zlib

from ..analyses import Results, analyze
from ..ingest.discover import discover
from ..ingest.rank_logs import holds_several_ranks
from ..ingest.reader import ReadOptions, open_log, read_trace
from ..model.trace import Trace
from ..render.options import ReportOptions
from ..render.report import report_files
from .output import OutputDir
from .progress import read_progress


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """tlparse's flags, with the same meaning."""
    parser.add_argument("-o", "--out", default="tl_out", help="output directory (default: tl_out)")
    parser.add_argument("--overwrite", action="store_true", help="replace the output directory if it exists")
    parser.add_argument("--latest", action="store_true", help="with a directory: read its newest log")
    parser.add_argument("--no-browser", action="store_true", help="do not open the report in a browser")
    parser.add_argument("--strict", action="store_true", help="exit non-zero if any line could not be read correctly")
    parser.add_argument(
        "--strict-compile-id", action="store_true", help="exit non-zero if a compilation event has no compile id"
    )
    parser.add_argument("-p", "--plain-text", action="store_true", help="write generated code as plain text, not HTML")
    parser.add_argument("--custom-header-html", default="", help="HTML to put at the top of the index page")
    parser.add_argument("-v", "--verbose", action="store_true", help="print parse statistics and every problem")
    parser.add_argument(
        "-i", "--inductor-provenance", action="store_true",
        help="accepted for tlparse compatibility: provenance is shown whenever the log has it",
    )
    parser.add_argument(
        "-e", "--export", action="store_true",
        help="open the report on the Draft Export Report (automatic when the log holds torch.export events)",
    )
    parser.add_argument(
        "--all-ranks-html", action="store_true",
        help="with a directory of rank logs: a report per rank (rank_<N>/) and a landing page of what differs between ranks "
        "(the default when the directory holds several ranks)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N", help="ranks (or logs) read in parallel (default: the number of cores)")
    parser.add_argument(
        "--executor", choices=("local", "dask"), default="local",
        help="where the ranks of a multi-rank report are read: local processes (default), or a dask.distributed "
        "cluster (needs compilescope[dask])",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", default=None,
        help="with --executor dask: the scheduler of a running cluster (tcp://host:8786); default: a local cluster of -j workers",
    )


def write_report(trace: Trace, out: str, overwrite: bool, options: ReportOptions, results: Results | None = None) -> OutputDir:
    results = results or analyze(trace)
    output = OutputDir(out, overwrite, keep=[trace.source])
    with output.background_writes():
        for relpath, content in report_files(trace, results, options):
            output.write(relpath, content)
        output.write("raw.log", _log_chunks(trace.source))
    return output


def _log_chunks(path: str):
    """A copy of the log itself (decompressed), so the report directory is self-contained.

    As much as can be read: a truncated .gz is copied up to where it breaks (the
    reader already listed that as a problem).
    """
    try:
        with open_log(path) as stream:
            while chunk := stream.read(1 << 20):
                yield chunk
    except (OSError, EOFError, zlib.error):
        return


def strict_problems(trace: Trace, strict: bool, strict_compile_id: bool) -> list:
    problems = trace.stats.strict_failures() if strict else []
    if strict_compile_id:
        problems += [p for p in trace.stats.problems if p.category == "missing_compile_id"]
    return sorted(problems, key=lambda p: p.lineno)


MAX_PROBLEMS_SHOWN = 20  # strict-mode problem lines a worker sends back per log


def problems_for_parent(problems: list) -> dict:
    """What a worker (one log or rank) sends back of its strict-mode problems: the count and the first lines."""
    return {"problem_count": len(problems), "problems": [str(p) for p in problems[:MAX_PROBLEMS_SHOWN]]}


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
            from .batch import run_batch

            return run_batch(args, args.path)
        args.path = args.path[0]
        if args.all_ranks_html or (not args.latest and not args.export and holds_several_ranks(args.path)):
            from .multirank import run_all_ranks  # imported here: multirank imports this module

            return run_all_ranks(args)
        found = discover(args.path, latest=args.latest)
        if found.note:
            print(f"compilescope: {found.note}", file=sys.stderr)
        options = ReportOptions(plain_text=args.plain_text, custom_header_html=args.custom_header_html, verbose=args.verbose,
                                export=args.export)
        with read_progress(found.chosen) as progress:
            trace = read_trace(found.chosen, ReadOptions(progress=progress))
        with trace:
            output = write_report(trace, args.out, args.overwrite, options)
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
            _open_browser(index)
        return 0


def _stats_line(trace: Trace) -> str:
    outcomes = ", ".join(f"{k}={v}" for k, v in trace.stats.outcomes.items() if v)
    return f"{trace.source}: {trace.stats.total} records ({outcomes})"


def _open_browser(index: str) -> None:
    if os.environ.get("CI"):
        return
    import webbrowser  # here: it pulls in subprocess, shlex, ... which a --no-browser run never needs

    try:
        webbrowser.get()
    except webbrowser.Error:
        return  # no browser here (a server, a container): the printed path is enough
    webbrowser.open("file://" + index)

"""`compilescope summary PATH`: what to fix first, in the terminal; `--json` for scripts (docs/summary-schema.md).

A directory with the logs of several ranks is summarised rank by rank, with what
differs between them (unless --latest asks for its newest log only).
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

import orjson
from rich.console import Console

from ..analyses.analyze import analyze
from ..analyses.insights import SCHEMA_VERSION
from ..errors import CompilescopeError
from ..ingest.discover import discover, holds_several_ranks
from ..ingest.reader import read_trace
from ..render.notices import unread_line
from ..render.terminal import RankSummariesRenderer, SummaryRenderer, TerminalOptions
from .console import default_console
from .usage import require_at_least


class SummaryCommand:
    """Summarize a TORCH_TRACE log: errors, recompiles, graph breaks, compile time, caches, dynamic shapes."""

    name = "summary"

    def __init__(self, console_factory: Callable[[], Console] = default_console) -> None:
        self.console_factory = console_factory

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path", help="a TORCH_TRACE log file, a .gz log, or a directory of logs")
        parser.add_argument("--json", action="store_true", help="print the summary as JSON (docs/summary-schema.md)")
        parser.add_argument(
            "--latest", action="store_true",
            help="with a directory: read its newest log only (by default a directory of several ranks' logs is "
            "summarised rank by rank)",
        )
        parser.add_argument("--profile", action="append", default=[], metavar="PROFILE.json",
                            help="a torch.profiler Chrome trace of the same run: adds where the run time goes")
        parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                            help="with several ranks: ranks read in parallel (default: the number of cores)")

    def run(self, args: argparse.Namespace) -> int:
        require_at_least("-j/--jobs", args.jobs, 1)
        if not args.latest and holds_several_ranks(args.path):
            if args.profile:
                raise CompilescopeError("--profile goes with one log (the log of the process that was profiled)")
            return self._run_ranks(args)
        found = discover(args.path, latest=args.latest)
        if found.note:
            print(f"compilescope: {found.note}", file=sys.stderr)
        profiles: list = []
        if args.profile:
            from .profiles import read_profiles  # here: the profile reader is for --profile only

            profiles = read_profiles(args.profile)
        with read_trace(found.chosen) as trace:
            results = analyze(trace, profiles)
        assert results.insights is not None  # analyze() always computes them
        if line := unread_line(results.insights.unread, found.chosen, "summary"):
            print(line, file=sys.stderr)
        if args.json:
            sys.stdout.write(orjson.dumps(results.insights.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            # crop=False: code longer than the line prints whole, for the terminal to show on its next row
            # (render/terminal_text.py, CopyableText); every other line fits the width already
            self.console_factory().print(SummaryRenderer.from_results(results).render(), crop=False)
        return 0

    def _run_ranks(self, args: argparse.Namespace) -> int:
        # here: the ranks' reader (worker processes, the landing page's HTML: jinja2) is for a directory of ranks only
        from .multirank import summarize_ranks

        results = summarize_ranks(args.path, args.jobs)
        if args.json:
            # schema_version and source first, as in the one-log form; "ranks" tells the two forms apart.
            doc = {"schema_version": SCHEMA_VERSION, "source": results.source, **results.to_json()}
            sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            self.console_factory().print(RankSummariesRenderer.from_results(results, TerminalOptions(typed_path=args.path)).render(),
                                         crop=False)  # (as one log's: code longer than the line, whole)
        return 0

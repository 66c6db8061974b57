"""`compilescope summary PATH`: what to fix first, in the terminal; `--json` for scripts (docs/summary-schema.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Callable

import orjson
from rich.console import Console

from ..analyses.insights import insights
from ..ingest.discover import discover
from ..ingest.reader import read_trace
from ..render.terminal import print_summary

MAX_WIDTH = 100


def default_console() -> Console:
    width = Console().width
    return Console(width=min(width, MAX_WIDTH))


class SummaryCommand:
    """Summarize a TORCH_TRACE log: errors, recompiles, graph breaks, compile time, caches, dynamic shapes."""

    name = "summary"

    def __init__(self, console_factory: Callable[[], Console] = default_console) -> None:
        self.console_factory = console_factory

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path", help="a TORCH_TRACE log file, a .gz log, or a directory of logs")
        parser.add_argument("--json", action="store_true", help="print the summary as JSON (docs/summary-schema.md)")
        parser.add_argument("--latest", action="store_true", help="with a directory: read its newest log")

    def run(self, args: argparse.Namespace) -> int:
        found = discover(args.path, latest=args.latest)
        if found.note:
            print(f"compilescope: {found.note}", file=sys.stderr)
        with read_trace(found.chosen) as trace:
            result = insights(trace)
        if args.json:
            sys.stdout.write(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            print_summary(result, self.console_factory())
        return 0

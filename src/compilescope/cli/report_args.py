"""tlparse's report flags, and the one place that turns them into ReportOptions."""

from __future__ import annotations

import argparse

from ..render.options import ReportOptions


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


def report_options(args: argparse.Namespace) -> ReportOptions:
    """The renderers' options from the report flags (every command that writes a report reads them here)."""
    return ReportOptions(
        plain_text=getattr(args, "plain_text", False),
        custom_header_html=getattr(args, "custom_header_html", ""),
        verbose=getattr(args, "verbose", False),
        export=getattr(args, "export", False),
    )

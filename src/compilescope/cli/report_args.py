"""tlparse's report flags, and the one place that turns them into ReportOptions."""

from __future__ import annotations

import argparse

from ..location import local_output
from ..render.options import ReportOptions
from .usage import require_at_least, require_with


def add_report_arguments(
    parser: argparse.ArgumentParser, out_help: str = "output directory (default: tl_out)", reads_a_path: bool = True
) -> None:
    """tlparse's flags, with the same meaning.

    reads_a_path: False for `run`, which reports the logs its program wrote (--latest would mean nothing).
    """
    parser.add_argument("-o", "--out", default="tl_out", type=local_output, help=out_help)
    parser.add_argument("--overwrite", action="store_true", help="replace the output directory if it exists")
    if reads_a_path:
        parser.add_argument("--latest", action="store_true", help="with a directory: read its newest log")
    parser.add_argument("--no-browser", action="store_true", help="do not open the report in a browser")
    parser.add_argument("--strict", action="store_true", help="exit non-zero if any line could not be read correctly")
    parser.add_argument(
        "--strict-compile-id", action="store_true", help="exit non-zero if a compilation event has no compile id"
    )
    parser.add_argument("-p", "--plain-text", action="store_true", help="write generated code as plain text, not HTML")
    parser.add_argument("--custom-header-html", default="", metavar="HTML", help="HTML to put at the top of the index page")
    parser.add_argument("-v", "--verbose", action="store_true", help="print parse statistics and every problem")
    parser.add_argument(
        "-i", "--inductor-provenance", action="store_true",
        help=("provenance is shown whenever the log has it; with -i, as with tlparse, every compile id has a "
              "provenance page, one saying there is nothing to map where the log has none"),
    )
    parser.add_argument(
        "-e", "--export", action="store_true",
        help="open the report on the Draft Export Report (automatic when the log holds torch.export events)",
    )
    parser.add_argument(
        "--all-ranks-html", action="store_true",
        help=("with a directory of rank logs: a report per rank (rank_<N>/) and a landing page of what differs between ranks "
              "(the default when the directory holds several ranks)") if reads_a_path else
        ("a report per rank (rank_<N>/) and a landing page of what differs between ranks (the default when the program "
         "wrote several ranks' logs, as torchrun's processes do once they call init_process_group)"),
    )
    parser.add_argument(
        "--profile", action="append", default=[], metavar="PROFILE.json",
        help="a torch.profiler Chrome trace (.json or .json.gz) of the same run: adds the Runtime page "
        "(where the run time goes, by kernel, graph and source line); give it twice to compare eager with compiled",
    )
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N", help="processes that read ranks (or logs) in parallel, or that write one big log's report (default: the number of cores)")
    parser.add_argument(
        "--executor", choices=("local", "dask"), default="local",
        help="where the ranks of a multi-rank report are read: local processes (default), or a dask.distributed "
        "cluster (needs compilescope[dask])",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", default=None,
        help="with --executor dask: the scheduler of a running cluster (tcp://host:8786); default: a local cluster of -j workers",
    )


def check_report_arguments(args: argparse.Namespace) -> None:
    """The report flags' usage errors (every command that takes them calls this before it reads or runs anything)."""
    require_at_least("-j/--jobs", args.jobs, 1)
    require_with("--scheduler", args.scheduler is not None, "--executor dask", args.executor == "dask",
                 "names a dask scheduler")


def report_options(args: argparse.Namespace) -> ReportOptions:
    """The renderers' options from the report flags (every command that writes a report reads them here)."""
    return ReportOptions(
        plain_text=getattr(args, "plain_text", False),
        custom_header_html=getattr(args, "custom_header_html", ""),
        verbose=getattr(args, "verbose", False),
        export=getattr(args, "export", False),
        inductor_provenance=getattr(args, "inductor_provenance", False),
    )

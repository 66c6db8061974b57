"""`compilescope diff A B`: what changed between two runs (terminal, --json, or -o OUT for an HTML page).

A and B are logs, directories of logs (the newest is read), or directories of
rank logs (compared rank by rank). With -o, OUT holds the diff page (index.html)
and the report of each side (a/, b/), which the diff page links into.
Exit status, as diff(1): 0 no change, 1 changes, 2 bad input (a rank of a directory that cannot be read is
trouble too: the others are compared and printed, and the exit status is 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

import orjson

from ..analyses.analyze import analyze
from ..analyses.run_facts import RunFacts
from ..analyses.run_facts.analysis import run_facts
from ..analyses.time_threshold import TimeThreshold
from .. import location
from ..errors import CompilescopeError
from ..ingest.discover import discover, holds_several_ranks
from ..ingest.rank_logs import find_rank_logs
from ..ingest.reader import read_trace
from ..render.notices import unread_line
from ..render.options import ReportOptions
from ..wording import first_listed
from ..output import OutputDir, report_destination, shown_output
from .usage import require_at_least

if TYPE_CHECKING:
    from ..analyses.diff import DiffReport
    from ..analyses.rank_summary import RankSummary

UNREAD_RANKS_SAID = 3  # the unreadable ranks of a side none of whose logs was read an error names, then how many more


def side_logs(path: str) -> tuple[list[tuple[int | None, str]], list[str]]:
    """(rank, log) of one side: each rank of a multi-rank directory, else the one log (a directory's newest); and
    the notes on the directory's other files (what a landing page of the side says it ignored)."""
    if holds_several_ranks(path):
        found_ranks = find_rank_logs(path)
        return [(log.rank, log.path) for log in found_ranks.logs], found_ranks.notes()
    found = discover(path)
    if found.note:
        print(f"compilescope: {found.note}", file=sys.stderr)
    return [(None, found.chosen)], []


def read_side(path: str, report_dir: str | None = None, overwrite: bool = False,
              covers: str = "diff", side: str = "", not_read: dict[int, str] | None = None,
              summaries: list[RankSummary] | None = None, profile: str | None = None,
              profile_beside_log: bool = False, profile_gated: bool = False,
              profile_option: str = "--profile") -> dict[int | None, RunFacts]:
    """The facts of every rank of one side; with report_dir, each rank's report is written there too. A log not read
    in full gets a warning on stderr, saying what `covers` (the diff, the check) is missing; side ("A", "B",
    "baseline") names the side in it. With not_read, a rank whose log cannot be read at all (empty, not a log) is put
    there (rank -> why) and the other ranks are read; without it, or when no rank can be read, that is an error.
    With summaries, each rank's summary (what the ranks' divergence analysis reads) is put there, as a multi-rank
    report's landing page is made of them. profile: a torch.profiler trace of a one-log side's run; with
    profile_beside_log and none given, the one beside its log (ingest/profile.py profile_beside), if any.
    profile_gated: the side is read for check's run-time gate, which refuses a profile that cannot be read, given or
    found beside the log, on one line saying why (no_run_time), not with the reader's error. Not gated, a profile
    given that cannot be read is refused on the same one line, after the option that gave it (profile_option:
    "--profile-a"): the run time asked for cannot be compared."""
    from ..analyses.rank_summary import empty_rank, failed_rank, summarize_rank

    facts: dict[int | None, RunFacts] = {}
    logs, ignored = side_logs(path)
    if profile is not None and len(logs) > 1:  # (a profile is joined to one log: not dropped without a word)
        raise CompilescopeError(f"{path} holds {len(logs)} rank logs, and the profile given for it, "
                                f"{os.path.basename(profile)}, is read with one log: give one rank's log with it")
    # Several ranks with a report: report_dir is the side's multi-rank report, each rank's under rank_<N>/ and a
    # landing page over them (made from the ranks' summaries, as `report` makes it), which the diff page links to.
    landing = OutputDir(report_dir, overwrite) if report_dir is not None and len(logs) > 1 else None
    # (a summary costs a pass over the rank's results: made only where the landing page or the caller reads it)
    summarize = landing is not None or summaries is not None
    summaries = summaries if summaries is not None else []
    for rank, log in logs:
        try:
            trace = read_trace(log)
        except CompilescopeError as exc:
            if not_read is None or rank is None:
                raise
            not_read[rank] = str(exc).removeprefix(f"{log}: ")  # the rank names the file
            if summarize:
                # (size() says 0 for a file it cannot see either: such a file is a failed rank, not an empty one)
                empty = not location.is_url(log) and os.access(log, os.R_OK) and location.size(log) == 0
                summaries.append(empty_rank(rank, location.absolute(log)) if empty
                                 else failed_rank(rank, location.absolute(log), not_read[rank]))
            continue
        profiles, unreadable = _side_profiles(log, profile, profile_beside_log) if len(logs) == 1 else ([], None)
        with trace:
            if unreadable is not None and profile and not profile_gated:
                raise CompilescopeError(f"{profile_option}: {side} has a profile, {os.path.basename(profile)}, that "
                                        f"cannot be used: {unreadable[1]}")
            results = analyze(trace, profiles)  # once: the facts, the warning and the report are all made from it
            facts[rank] = run_facts(results)
            if unreadable is not None:  # a run-time gate then says why, not that no profile was there
                from ..analyses.runtime.diff_facts import unreadable_profile_facts  # here: as the profile reader

                facts[rank].runtime = unreadable_profile_facts(*unreadable)
            assert results.insights is not None  # analyze() always computes them
            if warning := unread_line(results.insights.unread, log, covers, f"{side}: rank {rank}" if side and rank is not None else side):
                print(warning, file=sys.stderr)
            if report_dir is not None:
                from ..report_writer import write_report  # here: it imports the HTML renderer (jinja2), only for -o

                out = report_dir if len(logs) == 1 else os.path.join(report_dir, f"rank_{rank}")
                write_report(trace, out, overwrite, ReportOptions(), results)
            if summarize and rank is not None:
                summaries.append(summarize_rank(results, rank))
    if not facts:
        raise CompilescopeError(f"{path}: no rank log could be read (" + first_listed(
            [f"rank {r}: {why}" for r, why in sorted((not_read or {}).items())], "; ", UNREAD_RANKS_SAID) + ")")
    if landing is not None:
        from ..analyses.divergence import multirank_results  # here: needed only for a report of several ranks
        from ..render.multirank import LandingRenderer

        ranks = multirank_results(location.absolute(path), summaries, ignored)
        for relpath, content in LandingRenderer.from_results(ranks).render():
            landing.write(relpath, content)
    return facts


def _side_profiles(log: str, given: str | None, beside: bool) -> tuple[list, tuple[str, str] | None]:
    """The profile of a side's one log, read: the one given, else (beside) the one beside the log; [] for none. One
    given that cannot be read is (path, why it could not be read), which the caller refuses saying why; one found
    beside the log that cannot be read (empty, cut, no events) is a warning, and the side is compared without run
    time: nobody asked for it, and the logs still compare. With the profiles, such a one's (path, why it could not be
    read), else None."""
    from ..ingest.profile import profile_beside  # here: the profile reader is for runs with one
    from .profiles import read_profiles

    if given:
        try:
            return read_profiles([given]), None
        except CompilescopeError as exc:
            return [], (given, _unreadable_why(exc, given))
    path = profile_beside(log) if beside else None
    if path is None:
        return [], None
    try:
        profiles = read_profiles([path])
    except CompilescopeError as exc:
        why = _unreadable_why(exc, path)
        print(f"compilescope: warning: the profile beside {os.path.basename(log)} is not read, its run time not "
              f"compared ({why})", file=sys.stderr)
        return [], (path, why)
    print(f"compilescope: run time from the profile beside {os.path.basename(log)}: {os.path.basename(path)}",
          file=sys.stderr)
    return profiles, None


def _unreadable_why(exc: CompilescopeError, path: str) -> str:
    """Why the profile reader could not read path, without the path (the refusal names the file)."""
    return str(exc).removeprefix(f"{path}: ").removeprefix(f"cannot read profile {path}: ")


def add_threshold_arguments(parser: argparse.ArgumentParser, condition: str = "") -> tuple[Any, Any]:
    """--time-threshold and --time-ratio, as `diff` and `check` both take them (check: condition "with --baseline: ").
    Each is in a group of its own that check adds its older spelling to: the two groups, seconds then ratio.
    Default None, so that a command can tell an option given from one left out; time_threshold() fills them in."""
    seconds, ratio = parser.add_mutually_exclusive_group(), parser.add_mutually_exclusive_group()
    seconds.add_argument("--time-threshold", type=float, metavar="S",
                         help=f"{condition}compile-time differences under S seconds are noise (default "
                              f"{TimeThreshold.seconds:g}; 0: any non-zero difference counts)")
    ratio.add_argument("--time-ratio", type=float, metavar="R",
                       help=f"{condition}... and so are those where the slower side took under R times the faster "
                            f"(default {TimeThreshold.ratio:g}: two runs of one program on a busy machine can differ "
                            "by 2x; on a quiet one, 1.5 shows smaller changes)")
    return seconds, ratio


def time_threshold(args: argparse.Namespace) -> TimeThreshold:
    """The noise threshold of the flags (TimeThreshold's defaults where not given); a negative time, or a ratio under 1
    (the slower side is never under 1x the faster), is a usage error rather than a threshold that means the same as 0
    or 1."""
    require_at_least("--time-threshold", args.time_threshold, 0)
    require_at_least("--time-ratio", args.time_ratio, 1)
    return TimeThreshold(TimeThreshold.seconds if args.time_threshold is None else args.time_threshold,
                         TimeThreshold.ratio if args.time_ratio is None else args.time_ratio)


class DiffCommand:
    """Compare two runs: frames, graph breaks, recompiles, graphs, compile time, caches, failures, dynamic shapes.
    Exit status, as diff(1): 0 when nothing changed, 1 when something did, 2 on bad input."""

    name = "diff"

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("a", help="the first run (the baseline): a log, a directory, or a directory of rank logs")
        parser.add_argument("b", help="the second run")
        parser.add_argument("-o", "--out", type=location.local_output, help="write the HTML diff page and both reports to this directory")
        parser.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
        parser.add_argument("--json", action="store_true", help="print the diff as JSON (docs/diff-schema.md)")
        parser.add_argument("--no-browser", action="store_true", help="with -o: do not open the page")
        parser.add_argument("--profile-a", metavar="PROFILE.json",
                            help="a torch.profiler trace of A's run (default: the one beside A's log, "
                                 "<name>.profile.json[.gz] or capture()'s profile.json.gz): adds the run time per graph (a side of one "
                                 "log: refused for a directory of rank logs)")
        parser.add_argument("--profile-b", metavar="PROFILE.json", help="the same for B")
        parser.add_argument("--no-profiles", action="store_true", help="compare no run time, even with profiles beside the logs")
        add_threshold_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        threshold = time_threshold(args)
        output = index = None
        if args.out is None:
            report = _compare(args, threshold, None)
        else:
            keep = [args.a, args.b]
            with report_destination(args.out, args.overwrite, keep) as local_out:  # (a URL: uploaded at the end)
                output = OutputDir(local_out, args.overwrite, keep)
                report = _compare(args, threshold, output)
            where, index = shown_output(args.out, output.path)
        if args.json:
            sys.stdout.write(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            from ..render.diff import print_diff
            from .console import default_console

            print_diff(report, default_console(), (args.a, args.b))
            if output is not None:
                print(f"Wrote the diff to {location.join(where, 'index.html')}")
        if index is not None and not args.no_browser:
            from .browser import open_browser

            open_browser(index)
        if report.not_read_a or report.not_read_b:
            return 2
        return 1 if report.changed else 0


def _compare(args: argparse.Namespace, threshold: TimeThreshold, output: OutputDir | None) -> DiffReport:
    """The diff of the two sides; with output, each side's report (a/, b/) and the diff page written there."""
    # (here: `check` reads its sides with read_side, and one without --baseline compares nothing)
    from ..analyses.diff.analysis import diff_report

    sides: list[dict[int | None, RunFacts]] = []
    not_read: list[dict[int, str]] = []  # each side's ranks that could not be read
    for name, path in (("a", args.a), ("b", args.b)):
        not_read.append({})
        sides.append(read_side(path, os.path.join(output.path, name) if output else None, True, side=name.upper(),
                               not_read=not_read[-1], profile=getattr(args, f"profile_{name}"),
                               profile_beside_log=not args.no_profiles, profile_option=f"--profile-{name}"))
    # Each side by its absolute name: a URL is its own (os.path.abspath made memory://x/a.log ./memory:/x/a.log).
    report = diff_report(location.absolute(args.a), location.absolute(args.b), sides[0], sides[1], threshold,
                         not_read[0], not_read[1])
    if output is not None:
        from ..render.html.diff import diff_page

        output.write("index.html", diff_page(report, "a/", "b/", typed=(args.a, args.b)))
        output.write("diff.json", orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2))
    return report


__all__ = ["DiffCommand", "read_side", "side_logs", "add_threshold_arguments", "time_threshold"]

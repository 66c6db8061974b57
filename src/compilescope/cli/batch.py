"""`compilescope LOG LOG ...`: a report per log under OUT/<name>/, built in parallel, and a page listing them.

Each log is one job for a worker process (forked with every module already
imported), so a batch of small logs pays Python's start-up once, not per log.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
import time

from ..analyses.log_digest import LogDigest
from ..errors import CompilescopeError
from ..ingest.discover import discover, holds_several_ranks
from ..model.names import safe_stem
from ..output import OutputDir, report_destination, shown_output
from ..render.html import preload_templates
from ..render.html.batch import batch_files
from ..render.notices import logs_report_lines
from ..log_job import LogDone, LogJob, report_log
from .browser import open_browser
from .report_args import report_options
from .workers import default_jobs, file_size, run_jobs
from ..wording import count

_LOG_SUFFIXES = (".gz", ".log", ".txt", ".jsonl")


def report_name(path: str, taken: set[str]) -> str:
    """A directory name for a log's report: its file name without log suffixes, made safe and unique."""
    name = os.path.basename(os.path.normpath(path))
    # Cut the suffix itself: splitext leaves a name that is all suffix (".log") as it is, which looped forever.
    while suffix := next((s for s in _LOG_SUFFIXES if name.endswith(s)), None):
        name = name[: -len(suffix)]
    base = safe_stem(name or "log")
    name, n = base, 1
    while name.lower() in taken or name.lower() in ("index.html", "reports.json"):
        n += 1
        name = f"{base}_{n}"
    taken.add(name.lower())
    return name


def run_batch(args: argparse.Namespace, paths: list[str]) -> int:
    if args.all_ranks_html:
        raise CompilescopeError("--all-ranks-html reads one directory of rank logs; give it on its own")
    started = time.perf_counter()
    chosen = []
    for path in paths:
        found = discover(path, latest=args.latest)
        if os.path.isdir(path) and holds_several_ranks(path):
            raise CompilescopeError(f"{path} holds several ranks' logs; report it on its own (compilescope {shlex.quote(path)})")
        if found.note:
            print(f"compilescope: {found.note}", file=sys.stderr)
        chosen.append(found.chosen)
    # (s3://, gs://, ...: written in a scratch directory, then uploaded)
    with report_destination(args.out, args.overwrite, keep=chosen) as local_out:
        output = OutputDir(local_out, args.overwrite, keep=chosen)
        # Each report links back to the page listing them.
        options = dataclasses.replace(report_options(args), up_url="../index.html", up_label="all reports")
        taken: set[str] = set()
        names = [report_name(p, taken) for p in chosen]
        jobs = [LogJob(p, os.path.join(output.path, name), options, args.strict, args.strict_compile_id, name=name)
                for name, p in zip(names, chosen)]
        workers = args.jobs or default_jobs()
        if workers > 1 and len(jobs) > 1:
            preload_templates()
        done: dict[str, LogDone] = {d.name: d for d in run_jobs(report_log, jobs, workers, lambda j: file_size(j.path))}

        rows: list[tuple[str, LogDigest, str | None]] = []
        problem_count = crashed = not_written = 0
        files = 0
        for job in jobs:  # in the order given
            result = done[job.name]
            digest = result.digest
            assert digest is not None  # a job without a rank always has one
            rows.append((job.name, digest, f"{job.name}/index.html" if result.files else None))
            files += result.files
            if digest.error:
                print(f"compilescope: {job.name}: not read: {digest.error}", file=sys.stderr)  # the error names the file
            elif digest.report_not_written:
                print(f"compilescope: {job.name}: {digest.report_not_written}", file=sys.stderr)
                not_written += 1
            for line in result.problems:
                print(f"{job.name}: {line}", file=sys.stderr)
            problem_count += result.problem_count
            crashed += result.crashed
        for relpath, content in batch_files(rows, args.custom_header_html):
            output.write(relpath, content)
    # What the page listing the reports leads each log with (its most urgent finding), as one report says its own,
    # then what was written where (behind a URL: no page here to open).
    where, index = shown_output(args.out, output.path)
    findings = [(name, [(f["severity"], f["title"]) for f in digest.findings], _instead(digest)) for name, digest, _ in rows]
    print("\n".join(logs_report_lines(findings, files + output.files, where, index, time.perf_counter() - started, workers)))
    if crashed:
        print(f"compilescope: {count(crashed, 'log')} could not be reported (see the index page)", file=sys.stderr)
        return 1
    if not_written:
        # The lines above say which log, where and why: its figures are on the page listing the logs, its report is not.
        print(f"compilescope: {count(not_written, 'log')} whose report could not be written (see above)", file=sys.stderr)
        return 1
    if problem_count:
        print(f"compilescope: {count(problem_count, 'problem')} in the logs (strict mode)", file=sys.stderr)
        return 1
    if index is not None and not args.no_browser:
        open_browser(index)
    return 0


def _instead(digest: LogDigest) -> str | None:
    """What the terminal says of a log in place of its most urgent finding: why it has no report; None: it has one."""
    if digest.error:
        return "not read (the index page says why)"
    if digest.report_not_written:
        return "read, but its report was not written (see above)"
    return None

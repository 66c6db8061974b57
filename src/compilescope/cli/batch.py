"""`compilescope LOG LOG ...`: a report per log under OUT/<name>/, built in parallel, and a page listing them.

Each log is one job for a worker process (forked with every module already
imported), so a batch of small logs pays Python's start-up once, not per log.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from ..analyses import analyze
from ..analyses.log_digest import LogDigest, digest_log, unreadable_log
from ..errors import CompilescopeError
from ..ingest.discover import discover
from ..ingest.rank_logs import holds_several_ranks
from ..ingest.reader import ReadOptions, read_trace
from ..model.names import safe_stem
from ..render.html import preload_templates
from ..render.html.batch import batch_files
from ..render.options import ReportOptions
from .output import OutputDir
from .workers import default_jobs, file_size, run_jobs

_LOG_SUFFIXES = (".gz", ".log", ".txt", ".jsonl")


@dataclass(frozen=True)
class LogJob:
    name: str  # its directory in the output
    path: str
    out: str
    options: ReportOptions
    strict: bool = False
    strict_compile_id: bool = False


def report_name(path: str, taken: set[str]) -> str:
    """A directory name for a log's report: its file name without log suffixes, made safe and unique."""
    name = os.path.basename(os.path.normpath(path))
    while name.endswith(_LOG_SUFFIXES):
        name = os.path.splitext(name)[0]
    base = safe_stem(name or "log")
    name, n = base, 1
    while name.lower() in taken or name.lower() in ("index.html", "reports.json"):
        n += 1
        name = f"{base}_{n}"
    taken.add(name.lower())
    return name


def process_log(job: LogJob) -> dict[str, Any]:
    """Worker: one log, start to end. Returns a small dict (pickled back to the parent)."""
    from .report import problems_for_parent, strict_problems, write_report  # here: report.py imports this module

    try:
        trace = read_trace(job.path, ReadOptions())
    except CompilescopeError as exc:
        return {"name": job.name, "digest": unreadable_log(os.path.abspath(job.path), str(exc)).to_json()}
    try:
        with trace:
            results = analyze(trace)
            output = write_report(trace, job.out, False, job.options, results)
            return {
                "name": job.name, "digest": digest_log(trace, results).to_json(), "files": output.files,
                **problems_for_parent(strict_problems(trace, job.strict, job.strict_compile_id)),
            }
    except CompilescopeError as exc:
        return {"name": job.name, "digest": unreadable_log(trace.source, str(exc)).to_json()}
    except Exception as exc:  # noqa: BLE001 - one broken log must not lose the other logs' reports
        return {"name": job.name, "digest": unreadable_log(trace.source, f"{type(exc).__name__}: {exc}").to_json(),
                "crashed": True}


def run_batch(args: argparse.Namespace, paths: list[str]) -> int:
    from .report import _open_browser

    if args.all_ranks_html:
        raise CompilescopeError("--all-ranks-html reads one directory of rank logs; give it on its own")
    started = time.perf_counter()
    chosen = []
    for path in paths:
        found = discover(path, latest=args.latest)
        if os.path.isdir(path) and holds_several_ranks(path):
            raise CompilescopeError(f"{path} holds several ranks' logs; report it on its own (compilescope {path})")
        if found.note:
            print(f"compilescope: {found.note}", file=sys.stderr)
        chosen.append(found.chosen)
    output = OutputDir(args.out, args.overwrite, keep=chosen)
    options = ReportOptions(plain_text=args.plain_text, custom_header_html=args.custom_header_html, verbose=args.verbose,
                            export=args.export, up_url="../index.html", up_label="all reports")
    taken: set[str] = set()
    names = [report_name(p, taken) for p in chosen]
    jobs = [LogJob(name, p, os.path.join(output.path, name), options, args.strict, args.strict_compile_id)
            for name, p in zip(names, chosen)]
    workers = args.jobs or default_jobs()
    if workers > 1 and len(jobs) > 1:
        preload_templates()
    done = {raw["name"]: raw for raw in run_jobs(process_log, jobs, workers, lambda j: file_size(j.path))}

    rows: list[tuple[str, LogDigest, str | None]] = []
    problem_count = crashed = 0
    files = 0
    for job in jobs:  # in the order given
        raw = done[job.name]
        digest = LogDigest.from_json(raw["digest"])
        rows.append((job.name, digest, f"{job.name}/index.html" if "files" in raw else None))
        files += raw.get("files", 0)
        if digest.error:
            print(f"compilescope: {job.name}: not read: {digest.error}", file=sys.stderr)  # the error names the file
        for line in raw.get("problems", []):
            print(f"{job.name}: {line}", file=sys.stderr)
        problem_count += raw.get("problem_count", 0)
        crashed += bool(raw.get("crashed"))
    for relpath, content in batch_files(rows, args.custom_header_html):
        output.write(relpath, content)
    print(f"Wrote {files + output.files} files for {len(jobs)} logs to {output.path} "
          f"in {time.perf_counter() - started:.1f}s ({min(workers, len(jobs))} job(s))")
    if crashed:
        print(f"compilescope: {crashed} log(s) could not be reported (see the index page)", file=sys.stderr)
        return 1
    if problem_count:
        print(f"compilescope: {problem_count} problem(s) in the logs (strict mode)", file=sys.stderr)
        return 1
    if not args.no_browser:
        _open_browser(os.path.join(output.path, "index.html"))
    return 0


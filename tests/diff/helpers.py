"""The real pairs of tests/data/torch213 (programs/diff_pair.py, cache_cold_warm.py) and their facts, read once; real
fleets copied, and logs cut as a killed run leaves them."""

from __future__ import annotations

import functools
import gzip

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts import RunFacts
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.ingest.reader import read_trace

from ..conftest import TORCH213_LOGS

LOGS = {
    "base": "diff_base.log.gz",
    "base_again": "diff_base_again.log.gz",
    "break": "diff_break.log.gz",
    "dynamic": "diff_dynamic.log.gz",
    "config": "diff_config.log.gz",
    "fail": "diff_fail.log.gz",
    "cold": "cache_cold.log",
    "warm": "cache_warm.log",
}


def copy_fleet(fleet, directory):
    """A copy of a real fleet's rank logs, to change one of them."""
    directory.mkdir()
    for path in fleet.iterdir():
        (directory / path.name).write_bytes(path.read_bytes())
    return directory


def cut_inside(lines: list[str], first: int, end: int) -> str:
    """The log's text cut in the middle of a payload line halfway between lines first and end, as a killed run leaves
    it (torch writes each line whole, so a log that ends inside one was cut there)."""
    mid = next(i for i in range((first + end) // 2, end) if lines[i].startswith("\t"))
    return "\n".join(lines[:mid]) + "\n" + lines[mid][: len(lines[mid]) // 2]


def log(name: str):
    return TORCH213_LOGS / LOGS[name]


def rank_dir(directory, names) -> None:
    """A directory of rank logs: the named logs as ranks 0, 1, ... (decompressed, as torch writes them)."""
    directory.mkdir()
    for rank, name in enumerate(names):
        data = log(name).read_bytes()
        (directory / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_bytes(
            gzip.decompress(data) if str(log(name)).endswith(".gz") else data)


@functools.cache
def facts(name: str) -> RunFacts:
    with read_trace(str(log(name))) as trace:
        return run_facts(analyze(trace))


def diff(a: str, b: str):
    return diff_runs(facts(a), facts(b))

"""The real pairs of tests/data/torch213 (programs/diff_pair.py, cache_cold_warm.py) and their facts, read once."""

from __future__ import annotations

import functools
import gzip

from compilescope.analyses.diff import RunFacts, diff_runs, run_facts
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
        return run_facts(trace)


def diff(a: str, b: str):
    return diff_runs(facts(a), facts(b))

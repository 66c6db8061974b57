"""Which files of a directory are the per-rank logs of one distributed job.

torch names them dedicated_log_torch_trace_rank_<N>_<random>.log (gzipped copies
keep the name). Everything else in the directory is ignored, and said so, rather
than read as a rank (tlparse silently skips such files; a stray log without a rank
in its name cannot be told apart from a rank's).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..errors import CompilescopeError

RANK_LOG = re.compile(r"^dedicated_log_torch_trace_rank_(\d{1,9})(?!\d)(?:_[^/]*)?\.(?:log|txt)(?:\.gz)?$")


@dataclass(frozen=True)
class RankLog:
    rank: int
    path: str


@dataclass
class RankLogs:
    logs: list[RankLog]  # one per rank, by rank
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (file name, why)

    @property
    def ranks(self) -> list[int]:
        return [log.rank for log in self.logs]

    def notes(self) -> list[str]:
        return [f"{name}: {why}; ignored" for name, why in self.ignored]


def rank_of_name(name: str) -> int | None:
    m = RANK_LOG.match(name)
    return int(m.group(1)) if m else None


def find_rank_logs(directory: str) -> RankLogs:
    """The rank logs of a directory (every other file is ignored, with a note)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise CompilescopeError(f"cannot read directory {directory}: {exc.strerror}") from None
    return rank_logs_of([p for p in (os.path.join(directory, n) for n in names) if os.path.isfile(p)])


def rank_logs_of(paths: list[str]) -> RankLogs:
    """The given files as one log per rank: the newest when a rank has several; files without a rank are ignored."""
    by_rank: dict[int, list[str]] = {}
    ignored: list[tuple[str, str]] = []
    for path in paths:
        name = os.path.basename(path)
        rank = rank_of_name(name)
        if rank is None:
            ignored.append((name, "not a rank log (expected dedicated_log_torch_trace_rank_<N>_*.log)"))
            continue
        by_rank.setdefault(rank, []).append(path)
    logs = []
    for rank in sorted(by_rank):
        paths_of_rank = sorted(by_rank[rank], key=lambda p: (os.path.getmtime(p), p))
        newest = paths_of_rank[-1]
        logs.append(RankLog(rank, newest))
        for older in paths_of_rank[:-1]:
            ignored.append((os.path.basename(older), f"another log of rank {rank}; the newest, {os.path.basename(newest)}, is read"))
    return RankLogs(logs, ignored)


def holds_several_ranks(path: str | list[str]) -> bool:
    """A directory (or list of files) with logs of two or more ranks: then compilescope reports them all."""
    if isinstance(path, list):
        names = [os.path.basename(p) for p in path]
    elif os.path.isdir(path):
        try:
            names = os.listdir(path)
        except OSError:
            return False
    else:
        return False
    ranks = {rank_of_name(n) for n in names} - {None}
    return len(ranks) > 1

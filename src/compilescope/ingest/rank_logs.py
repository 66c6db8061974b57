"""Which files of a directory are the per-rank logs of one distributed job.

torch names them dedicated_log_torch_trace_rank_<N>_<random>.log (gzipped copies
keep the name). Everything else in the directory is ignored, and said so, rather
than read as a rank (tlparse silently skips such files; a stray log without a rank
in its name cannot be told apart from a rank's).
"""

from __future__ import annotations

import os
from dataclasses import field

from .. import location
from .discover import rank_of
from ..model.records import dataclass


@dataclass(frozen=True)
class RankLog:
    """One rank's log: its rank, where it is, and its size when listed."""

    rank: int
    path: str  # a local path or a URL
    size: int = -1  # bytes, from the listing (-1: not listed)


@dataclass
class RankLogs:
    """The rank logs of a directory, one per rank, and the files ignored (with why)."""

    logs: list[RankLog]  # one per rank, by rank
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (file name, why)

    @property
    def ranks(self) -> list[int]:
        return [log.rank for log in self.logs]

    def notes(self) -> list[str]:
        return [f"{name}: {why}; ignored" for name, why in self.ignored]



def find_rank_logs(directory: str) -> RankLogs:
    """The rank logs of a directory, local or a URL (every other file is ignored, with a note)."""
    return _rank_logs_of_entries(location.list_files(directory))


def rank_logs_of(paths: list[str]) -> RankLogs:
    """The given files as one log per rank: the newest when a rank has several; files without a rank are ignored."""
    return _rank_logs_of_entries([location.Entry(p, location.size(p), _mtime(p)) for p in paths])


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


def _rank_logs_of_entries(entries: list[location.Entry]) -> RankLogs:
    by_rank: dict[int, list[location.Entry]] = {}
    ignored: list[tuple[str, str]] = []
    for entry in entries:
        name = location.basename(entry.path)
        rank = rank_of(name)
        if rank is None:
            ignored.append((name, "not a rank log (expected dedicated_log_torch_trace_rank_<N>_*.log)"))
            continue
        by_rank.setdefault(rank, []).append(entry)
    logs = []
    for rank in sorted(by_rank):
        of_rank = sorted(by_rank[rank], key=lambda e: (e.mtime, e.path))
        newest = of_rank[-1]
        logs.append(RankLog(rank, newest.path, newest.size))
        for older in of_rank[:-1]:
            ignored.append((location.basename(older.path),
                            f"another log of rank {rank}; the newest, {location.basename(newest.path)}, is read"))
    return RankLogs(logs, ignored)


"""Inductor's per-op runtime estimates of every rank and graph, as tlparse 0.4.3 writes them beside a multi-rank
report: runtime_estimations.json, and chromium_trace_with_runtime.json, a Perfetto trace of them (one process per
rank, one thread per graph, each graph's ops laid end to end by their estimated durations).

Same documents as tlparse's (keys, their order, the values and thread ids), with two orders made definite where
tlparse leaves them to the file system and a hash map: a rank's graphs come in compile order, and so do the
threads of a rank (thread_sort_index). A compile directory holding two estimated graphs (tlparse keeps one of them,
whichever it lists first) has both: the second one's ops follow the first one's on the directory's thread.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from .rank_summary import RankSummary

_U64_MAX = 2**64 - 1
_FX_SEED = 0x517CC1B727220A95  # the fxhash crate's 64-bit multiplier


def runtime_estimations(summaries: Iterable[RankSummary]) -> list[dict[str, Any]]:
    """runtime_estimations.json: [{rank, graph (the compile directory), ops: [{name, estimated_runtime_ns}]}],
    ranks ascending, graphs in compile order. Empty when no rank logged an estimate."""
    return [
        {"rank": s.rank, "graph": graph, "ops": [{"name": name, "estimated_runtime_ns": ns} for name, ns in ops]}
        for s in sorted(summaries, key=lambda s: s.rank)
        for graph, ops in s.op_runtimes
    ]


def runtime_trace(estimations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """chromium_trace_with_runtime.json from runtime_estimations(): an "X" event per op (µs, at least 1, rounded
    up), then each rank's process name and sort index, then each graph's thread name and sort index.
    Keys in sorted order within each event, as tlparse's serde_json maps write them."""
    events: list[dict[str, Any]] = []
    threads: dict[int, dict[int, str]] = {}  # rank -> tid -> graph, in order of appearance
    ends: dict[tuple[int, int], int] = {}  # (rank, tid) -> where that thread's next op starts, µs
    for estimated in estimations:
        rank, graph = estimated["rank"], estimated["graph"]
        tid = graph_tid(rank, graph)
        threads.setdefault(rank, {}).setdefault(tid, graph)
        ts = ends.get((rank, tid), 0)
        for op in estimated["ops"]:
            ns = op["estimated_runtime_ns"]
            dur = _u64(max(math.ceil(ns / 1000.0), 1))
            events.append({
                "args": {"graph": graph, "rank": rank, "runtime_ns": _u64(int(ns))},
                "cat": "runtime", "dur": dur, "name": op["name"], "ph": "X", "pid": rank, "tid": tid, "ts": ts,
            })
            ts += dur
        ends[(rank, tid)] = ts
    for rank in sorted(threads):
        events.append({"args": {"name": f"Rank {rank}"}, "name": "process_name", "ph": "M", "pid": rank})
        events.append({"args": {"sort_index": rank}, "name": "process_sort_index", "ph": "M", "pid": rank})
    for rank in sorted(threads):
        for index, (tid, graph) in enumerate(threads[rank].items()):
            events.append({"args": {"name": f"graph {graph}"}, "name": "thread_name", "ph": "M", "pid": rank, "tid": tid})
            events.append({"args": {"sort_index": index}, "name": "thread_sort_index", "ph": "M", "pid": rank, "tid": tid})
    return events


def graph_tid(rank: int, graph: str) -> int:
    """tlparse's thread id for a graph: the low 32 bits of fxhash's FxHasher over (rank as u32, graph as str), so
    a trace from either tool puts a graph on the same thread."""
    h = _fx_word(0, rank & 0xFFFFFFFF)
    data = graph.encode()
    while len(data) >= 8:
        h, data = _fx_word(h, int.from_bytes(data[:8], "little")), data[8:]
    if len(data) >= 4:
        h, data = _fx_word(h, int.from_bytes(data[:4], "little")), data[4:]
    for byte in data:
        h = _fx_word(h, byte)
    h = _fx_word(h, 0xFF)  # Rust's Hash for str ends with a 0xff byte
    return h & 0xFFFFFFFF


def _fx_word(h: int, word: int) -> int:
    return ((((h << 5) | (h >> 59)) & _U64_MAX) ^ word) * _FX_SEED & _U64_MAX


def _u64(n: int) -> int:
    """Rust's `as u64` on a float: negative to 0, too big to the largest u64."""
    return min(max(n, 0), _U64_MAX)

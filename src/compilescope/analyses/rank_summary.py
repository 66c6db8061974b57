"""RankSummary: the little that the multi-rank landing page needs to know about one rank's log.

A worker process reads one rank's log, writes that rank's report and returns only
this summary (JSON-able, a few KB), so a job with thousands of ranks never holds
more than one trace per worker in memory. Everything cross-rank (analyses/divergence.py)
is computed from summaries alone.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import asdict, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import orjson

from ..ingest.crash_files import ending_said
from ..model.ids import compilation_key, compile_id_key
from ..model.trace import Compile, Trace
from .autotuning import autotuning
from .caches import caches
from .compile_time import compile_times
from .crash import Crash, crashes
from .cudagraphs import cudagraphs
from .environment import environment
from .empty_graphs import empty_graphs, made_no_graph
from .status import BREAK, ERROR, RESTARTED, counts_text, failed_compiles
from .torch_warnings import torch_warnings
from .graph_breaks.analysis import graph_breaks
from .recompiles.analysis import recompiles
from .unread import unread
from ..model.records import dataclass

if TYPE_CHECKING:
    from .results import Results

COLLECTIVE_SCHEDULE = "inductor_collective_schedule"
RUNTIME_AND_TENSOR_META = "inductor_runtime_and_tensor_meta"
GRAPH_EXECUTION = "graph_execution"
OUTPUT_CODE = "inductor_output_code"
# The graphs a compile logs, as text, whose calls are the ops it runs (a collective in one is a call of
# torch.ops._c10d_functional).
GRAPHS_WITH_OPS = ("dynamo_output_graph", "optimize_ddp_split_graph", "compiled_autograd_graph", "aot_forward_graph",
                   "aot_backward_graph", "aot_inference_graph", "aot_joint_graph")
CACHE_STATES = ("hit", "miss", "bypass")

# c10d functional calls in Inductor's output code: torch.ops._c10d_functional.<op>.default(
_C10D_CALL = re.compile(r"torch\s*\.\s*ops\s*\.\s*_?c10d_functional\s*\.\s*([A-Za-z0-9_]+)\s*\.\s*default\s*\(")
# Comments (Python and C++): a call in a comment is not executed.
# An unclosed `/*` runs to the end (as in C): searching for its `*/` from every `/*` is quadratic.
_COMMENT = re.compile(r"#[^\n]*|//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_COLLECTIVE_KINDS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all")


def collective_kind(op: str) -> str | None:
    """The collective an op name performs ("all_reduce" for torch.ops._c10d_functional.all_reduce_.default),
    None for anything else (wait_tensor included). Same normalisation as tlparse, so counts agree."""
    op = op.rstrip("_")
    for kind in _COLLECTIVE_KINDS:
        if kind in op:
            return kind
    if "reduce" in op:
        return "reduce"
    return None


@dataclass
class GraphCollectives:
    """One compiled graph's collectives: as Inductor scheduled them, and as its output code calls them."""

    graph: str  # graph key (the compile id; "[0/0] #2" for a second graph of the same id)
    dir_name: str  # the compile id's report directory (tlparse names graphs by it)
    scheduled: dict[str, int]  # collective kind -> count in inductor_collective_schedule
    in_code: dict[str, int]  # collective kind -> calls in inductor_output_code
    waits: int  # wait_tensor calls in the output code


@dataclass
class RankCrash:
    """The rank's process died in native code or of an uncaught exception: its crash as the rank's report gives it
    (analyses/crash.py), less the stack (which is in the rank's report)."""

    error: str  # as faulthandler named it: "Segmentation fault"
    said: str  # the crash in one line, for people (Crash.said)
    compile_id: str | None = None  # the compilation whose generated code was running
    during: str = ""  # "while running [0/0]'s compiled code", "while compiling", or ""
    where: dict[str, Any] | None = None  # the innermost frame (a location, as in the one-log form)
    user_frame: dict[str, Any] | None = None  # the innermost frame of the user's code
    # An uncaught Python exception ended it (error: "AssertionError: ..."); thread: its thread, when not the main one
    exception: bool = False
    thread: str | None = None

    @property
    def ending(self) -> str:
        """After "rank N": "crashed: ...", "stopped with ..." (as Crash.ending)."""
        return ending_said(self.said, self.exception, self.thread)

    @property
    def word(self) -> str:
        """"stopped" for an uncaught exception, which ended the process as Python ends it, "crashed" for a death in
        native code: the rank's mark in the rank tables."""
        return "stopped" if self.exception else "crashed"

    @classmethod
    def of(cls, crash: Crash) -> RankCrash:
        return cls(crash.error, crash.said, crash.compile_id, crash.during,
                   crash.where.to_json() if crash.where else None,
                   crash.user_frame.to_json() if crash.user_frame else None, crash.exception, crash.thread)


@dataclass
class RankSummary:
    rank: int  # from the file name (rank_<N>): the rank's report is rank_<N>/
    source: str  # the log's path
    logged_rank: int | None = None  # the rank the log's envelopes carry, when it differs or the name has none
    error: str | None = None  # the log could not be read at all (then everything else is empty)
    empty: bool = False  # the log is empty: the rank logged nothing (it still counts, as a rank that compiled nothing)
    compile_ids: list[str] = field(default_factory=list)  # compile ids, report order, NO_COMPILE_ID excluded
    statuses: dict[str, str] = field(default_factory=dict)  # compile id -> status (analyses.status)
    # Cache outcomes in the order torch logged them: [compile id, cache artifact, "hit"|"miss"|"bypass"]; as the rank's
    # caches count them (Caches.kept_counts), without an attempt Dynamo restarted after a miss (Caches.left_out).
    cache_sequence: list[list[str]] = field(default_factory=list)
    # Collective ops Inductor scheduled, per graph in compile-id order: [graph, dir name, [op, ...]].
    collective_schedules: list[list[Any]] = field(default_factory=list)
    # graph -> the sum of its ops' estimates in op_runtimes: the same graphs, keyed by graph (what the ranks are
    # compared by) where op_runtimes names the report directory; the JSON schema has both (docs/summary-schema.md).
    runtimes_ns: dict[str, float] = field(default_factory=dict)
    # Inductor's estimate of each op, per graph in compile order: [dir name, [[op name, ns], ...]]
    # (analyses/runtime_estimates.py); a graph with no ops, or an op without a name or a number, is left out.
    op_runtimes: list[list[Any]] = field(default_factory=list)
    tensor_meta: dict[str, str] = field(default_factory=dict)  # graph -> fingerprint of op outputs' shapes/strides/dtypes
    execution_order: list[str] | None = None  # compile ids as executed (graph_execution), None when not logged
    collectives: list[GraphCollectives] = field(default_factory=list)
    # What each max-autotune search chose, in the order they ran: [compile id, op, shapes, dtypes, winner's config]
    autotune_winners: list[list[str]] = field(default_factory=list)
    # Compiles Inductor ran without CUDA graphs: [compile id, the reason's first line]
    cudagraph_skips: list[list[str]] = field(default_factory=list)
    # What torch printed on stderr, each distinct warning in a line (analyses/torch_warnings.py); None: the rank's
    # log does not record it (a plain log)
    warnings: list[str] | None = None
    # The rank's compile time as its own report states it (analyses/compile_time.py), so the rank table, `check`
    # and `summary LOG` give one figure: entire_frame_compile_time_s leaves out a failed compile and work outside the
    # frame (a backward compiled at its first call, autotuning benchmarks).
    compile_time_s: float = 0.0
    compile_times_s: dict[str, float] = field(default_factory=dict)  # compile id (no attempt) -> its compile time
    # Every compile of the rank is torch.export's (its report's ExportReport.only): its compile time is export time.
    export_only: bool = False
    # Compile ids (attempts) that succeeded after a restart: not graph breaks, see graph_breaks. No page shows it;
    # kept because the JSON schema documents it (ranks[].breaks, docs/summary-schema.md).
    breaks: int = 0
    # Graph breaks as the rank's own report counts them (analyses/graph_breaks/): distinct by reason and line, and
    # every break event. What the rank table shows: a restarted attempt and its retry are one break, not two.
    graph_breaks: int = 0
    graph_breaks_total: int = 0
    failures: int = 0  # compiles that failed
    # Nothing of the rank's program ran compiled (each graph empty, or no graph), whatever the number of compile ids says:
    # torch.compile(DistributedDataParallel(model)) on torch 2.13 breaks in DDP's forward and the model runs eagerly.
    # The rank's own report's answer (analyses/empty_graphs.py), so its report and the landing page agree.
    ran_eagerly: bool = False
    # Operators in the rank's Dynamo graphs that compiled (graph_op_count summed, empty_graphs.graph_ops); None where no
    # compile logged a count; 0 where ran_eagerly.
    graph_ops: int | None = None
    # compile id -> the collectives its graphs call (Dynamo's, AOTAutograd's, compiled autograd's, DDPOptimizer's graph,
    # Inductor's collective schedule), sorted; only compile ids with one. Whether a compile id only some ranks compiled
    # can keep the others waiting (analyses/divergence.py).
    graph_collectives: dict[str, list[str]] = field(default_factory=dict)
    # Compile ids whose ops the log shows: a graph logged, or no_operator. Of the others (a compile that never
    # finished) nothing is known.
    ops_known: list[str] = field(default_factory=list)
    # Compile ids that compiled no operator: graph_op_count 0, no graph at all, a restarted attempt, a failed compile.
    no_operator: list[str] = field(default_factory=list)
    # Of the compile ids whose status is "ok", those that made no graph at all (empty_graphs.no_graph, as the rank's
    # report counts them apart): nothing of them runs compiled. Empty in summaries saved before it was kept.
    no_graph: list[str] = field(default_factory=list)
    ran_on: dict[str, str] = field(default_factory=dict)  # the versions and the GPU its log names (analyses/environment.py)
    recompiles: int = 0  # recompiles as the rank's report counts them (a restarted attempt is not another)
    # Each recompilation -> the guard whose failure caused it, as torch wrote it (its recompiles analysis: the newest
    # cache entry's): why a compile id that only some ranks have was compiled there.
    recompile_reasons: dict[str, str] = field(default_factory=dict)
    # Of recompile_reasons, those that name a value Dynamo passed on past a graph break (a resume function's ___stack0),
    # in the user's words, as the rank's recompiles view says them (FailedGuard.described): what the views show.
    recompile_reasons_described: dict[str, str] = field(default_factory=dict)
    cache_hits: int = 0
    cache_misses: int = 0
    chromium_events: int = 0
    parse_problems: int = 0  # records not read cleanly (md5 mismatches included), and a read that stopped early
    # The rank's process died in native code (a segfault): the crash `compilescope run` recorded in its log, which
    # ends there (or capture() beside it). Empty for a plain log, which cannot say.
    crashes: list[RankCrash] = field(default_factory=list)
    # What of the log was not read (records skipped, the file cut off), in words; None when it was read to its end.
    # Its figures, and every comparison with the other ranks, then cover only what was read.
    unread: str | None = None
    # The rank was read and reported, but what it sends to be merged across ranks (its chromium events, spooled to a
    # file) could not be written: a full disk, a spool directory gone or not writable. What happened and what to do, in
    # one line; its figures stand, and only the merged timeline lacks it.
    not_written: str | None = None
    # The rank was read, but its own report (rank_<N>/) could not be written: a full disk, a directory not writable.
    # What happened and what to do, in one line; its figures stand, and only its report (which nothing links) lacks.
    report_not_written: str | None = None

    @property
    def n_compiles(self) -> int:
        return len(self.compile_ids)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def outcomes(self) -> str:
        """"1 compiled, with no graph": how the rank's compiles ended, in its report's words (status.counts_text)."""
        return counts_text(Counter(self.statuses.values()), len(self.no_graph))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RankSummary:
        data = dict(data)
        data["collectives"] = [GraphCollectives(**g) for g in data.get("collectives", [])]
        data["crashes"] = [RankCrash(**c) for c in data.get("crashes", [])]
        return cls(**data)


def failed_rank(rank: int, source: str, error: str) -> RankSummary:
    return RankSummary(rank=rank, source=source, error=error)


def empty_rank(rank: int, source: str) -> RankSummary:
    return RankSummary(rank=rank, source=source, empty=True)


def summarize_rank(results: Results, rank: int | None = None) -> RankSummary:
    """The summary of one rank's results. rank: the rank the file is named for (default: the log's own)."""
    trace = results.trace
    assert trace is not None  # analyze() keeps the trace it read
    logged = trace.rank
    summary = RankSummary(
        rank=rank if rank is not None else (logged if logged is not None else 0),
        source=trace.source,
        logged_rank=logged if (rank is None or logged != rank) else None,
    )
    statuses = {str(cid): s for cid, s in results.statuses.items() if cid is not None}
    summary.statuses = statuses
    summary.compile_ids = [str(c.compile_id) for c in trace.sorted_compiles() if c.compile_id is not None]
    summary.breaks = sum(1 for s in statuses.values() if s == BREAK)
    found_breaks = results.insights.graph_breaks if results.insights is not None else graph_breaks(trace)
    summary.graph_breaks, summary.graph_breaks_total = len(found_breaks.breaks), found_breaks.total
    summary.failures = failed_compiles(statuses)
    empty = results.insights.empty_graphs if results.insights is not None else empty_graphs(trace)
    summary.ran_eagerly, summary.graph_ops = empty.ran_eagerly, empty.graph_ops
    summary.no_graph = list(empty.no_graph)
    # As the rank's own report counts them (analyses/recompiles/analysis.py): a restarted attempt of a recompile ([0/1_1] after
    # [0/1]) is no second recompile.
    found_recompiles = results.insights.recompiles if results.insights is not None else recompiles(trace)
    summary.recompiles = found_recompiles.with_backward
    # Keyed by the recompilation, not by its attempt that finished ([0/1], not [0/1_1] where Dynamo restarted it at a
    # graph break): torch logs the reason on [0/1], and a rank's restarts are no other recompile.
    summary.recompile_reasons = {compilation_key(step.compile_id): step.guard.guard for frame in found_recompiles.frames
                                 for step in frame.steps if step.guard is not None}
    summary.recompile_reasons_described = {compilation_key(step.compile_id): step.guard.described
                                           for frame in found_recompiles.frames for step in frame.steps
                                           if step.guard is not None and step.guard.described}
    summary.chromium_events = len(trace.chromium_events)
    summary.parse_problems = trace.stats.parse_problems
    not_read = unread(trace.stats)
    # A payload not matching its md5 was still read (counted above); records skipped or a read cut short were not.
    if not_read.skipped or not_read.stopped_at_line is not None:
        summary.unread = replace(not_read, damaged_payloads=0).describe()

    # An attempt Dynamo restarted that missed kept nothing it compiled, and the attempt that compiled the frame looked
    # the graph up again: its lookups are counted apart (Caches.restarted_misses), here as in the rank's report, so
    # no miss is counted twice and a rank that restarted does not differ from the others by it.
    left_out = (results.insights.caches if results.insights is not None else caches(trace)).left_out
    cache_events = []  # (artifact number, compile id, name, state)
    for entry in trace.sorted_compiles():
        key = compile_id_key(entry.compile_id)
        _summarize_compile(trace, entry, key, summary)
        for a in entry.artifacts:
            if a.cache in CACHE_STATES and key not in left_out:
                cache_events.append((a.number, key, a.name, a.cache))
            if a.name == GRAPH_EXECUTION:
                order = _execution_order(trace.payload_text(a.payload))
                if order is not None:
                    summary.execution_order = order  # the last one logged wins: it covers the most steps
    cache_events.sort()
    summary.cache_sequence = [[key, name, state] for _, key, name, state in cache_events]
    summary.cache_hits = sum(1 for *_, state in cache_events if state == "hit")
    summary.cache_misses = sum(1 for *_, state in cache_events if state == "miss")
    timed = results.insights.compile_time if results.insights is not None else compile_times(trace)
    summary.compile_time_s = round(timed.total_s, 6)
    summary.export_only = results.export.only
    by_id: dict[str, float] = {}
    for c in timed.compiles:  # (an export-only log's strict export calls are rows of their own, each NO_COMPILE_ID)
        by_id[c.compile_id] = by_id.get(c.compile_id, 0.0) + c.total_s
    summary.compile_times_s = {cid: round(seconds, 6) for cid, seconds in by_id.items()}
    graphed = results.insights.cudagraphs if results.insights is not None else cudagraphs(trace)
    summary.cudagraph_skips = [[c.compile_id, c.without_graphs_because or ""] for c in graphed.without_graphs]
    printed = results.insights.warnings if results.insights is not None else torch_warnings(trace)
    summary.warnings = [w.label for w in printed.warnings] if printed.recorded else None
    ran_on = results.insights.environment if results.insights is not None else environment(trace)
    summary.ran_on = dict(ran_on.facts())
    died = results.insights.crashes if results.insights is not None else crashes(trace)
    summary.crashes = [RankCrash.of(c) for c in died.crashes]
    tuned = results.insights.autotuning if results.insights is not None else autotuning(trace)
    summary.autotune_winners = [[s.compile_id, s.op, s.shape or "", s.dtypes or "", s.best_config or s.best_kernel or ""]
                                for s in tuned.searches]
    return summary


def _graph_key(key: str, seen: Counter, kind: str) -> str:
    """Graph names per compile id: a compile id can compile several graphs (forward and backward)."""
    seen[(kind, key)] += 1
    n = seen[(kind, key)]
    return key if n == 1 else f"{key} #{n}"


def _summarize_compile(trace: Trace, entry: Compile, key: str, summary: RankSummary) -> None:
    seen: Counter = Counter()
    schedules: list[list[str]] = []
    # Output code is only searched for collectives when the compile logged a schedule to compare with.
    scheduled = any(a.name == COLLECTIVE_SCHEDULE for a in entry.artifacts)
    in_code: Counter = Counter()
    waits = 0
    has_code = False
    has_graph = False
    kinds: set[str] = set()  # the collectives its graphs and schedules call
    for a in entry.artifacts:
        if a.name in GRAPHS_WITH_OPS and a.payload is not None:
            # Line by line: a graph's text can be as big as its output code.
            kinds.update(k for op in _graph_calls(trace.payload_lines(a.payload)) if (k := collective_kind(op)))
            has_graph = True
        elif a.name == COLLECTIVE_SCHEDULE:
            ops = _json(trace.payload_text(a.payload))
            if isinstance(ops, list):
                ops = [str(op) for op in ops]
                schedules.append(ops)
                if ops:
                    summary.collective_schedules.append([_graph_key(key, seen, "schedule"), entry.dir_name, ops])
        elif a.name == RUNTIME_AND_TENSOR_META:
            data = _json(trace.payload_text(a.payload))
            ops = data.get("ops") if isinstance(data, dict) else None
            if isinstance(ops, list):
                graph = _graph_key(key, seen, "runtime")
                estimates = _op_estimates(ops)
                if estimates:
                    summary.op_runtimes.append([entry.dir_name, estimates])
                    summary.runtimes_ns[graph] = float(sum(ns for _, ns in estimates))
                fingerprint = tensor_meta_fingerprint(ops)
                if fingerprint is None:  # this record is bad, not the rank: counted, and not compared
                    summary.parse_problems += 1
                else:
                    summary.tensor_meta[graph] = fingerprint
        elif scheduled and a.name.startswith(OUTPUT_CODE) and a.payload is not None:
            # One payload in memory at a time: output code can be tens of MB per graph.
            waits += _count_code_collectives(trace.payload_text(a.payload), in_code)
            has_code = True
    if schedules and has_code:
        summary.collectives.append(_collectives(key, entry.dir_name, schedules, in_code, waits))
    kinds.update(k for ops in schedules for k in map(collective_kind, ops) if k)
    if kinds:
        summary.graph_collectives[key] = sorted(kinds)
    ops = (entry.metrics or {}).get("graph_op_count")
    if (ops == 0 and type(ops) is int) or made_no_graph(entry.metrics) or summary.statuses.get(key) in (RESTARTED, ERROR):
        summary.no_operator.append(key)
        summary.ops_known.append(key)
    elif has_graph or schedules:
        summary.ops_known.append(key)


def _op_estimates(ops: list) -> list[list[Any]] | None:
    """[[op name, estimated ns], ...], or None when an op lacks either: tlparse reads the whole graph or nothing
    (and stops the whole report on such an op; one bad graph is left out here)."""
    estimates: list[list[Any]] = []
    for op in ops:
        name = op.get("name") if isinstance(op, dict) else None
        ns = op.get("estimated_runtime_ns") if isinstance(op, dict) else None
        if not isinstance(name, str) or not isinstance(ns, (int, float)) or isinstance(ns, bool):
            return None
        estimates.append([name, float(ns)])  # tlparse reads the estimate as f64 and writes it back as one (5000.0)
    return estimates


def tensor_meta_fingerprint(ops: list) -> str | None:
    """Fingerprint of what each op produces (names, shapes, strides, dtypes), without runtime estimates.

    tlparse fingerprints the whole payload, runtime estimates included, so ranks that
    compiled identical graphs on slightly different hardware look divergent; this does not.
    None when the ops cannot be written back (orjson reads 1,024 levels of nesting, writes 254).
    """
    meta = [
        {k: v for k, v in op.items() if "runtime" not in k} if isinstance(op, dict) else op
        for op in ops
    ]
    try:
        canonical = orjson.dumps(meta, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError, or (with OPT_NON_STR_KEYS) a plain TypeError: too deep
        return None
    return hashlib.sha1(canonical).hexdigest()[:12]


def _graph_calls(lines: Iterable[str]) -> Iterator[str]:
    """The c10d functional ops a graph's text calls (_C10D_CALL), line by line: a printed graph writes each call on one
    line. Comments are left out as _COMMENT leaves them out of a whole text, a /* */ comment over several lines too."""
    in_block = False
    for line in lines:
        if in_block:
            end = line.find("*/")
            if end < 0:
                continue
            line, in_block = line[end + 2:], False
        code, start = [], 0
        for comment in _COMMENT.finditer(line):
            code.append(line[start:comment.start()])
            start = comment.end()
            text = comment.group()
            # Unclosed: "/*" then no "*/" after it ("/*/" is unclosed, as in C).
            in_block = text.startswith("/*") and not (len(text) >= 4 and text.endswith("*/"))
        code.append(line[start:])
        yield from _C10D_CALL.findall("".join(code))


def _count_code_collectives(text: str, in_code: Counter) -> int:
    """Add the collective calls of one output-code payload to in_code; return its wait_tensor calls."""
    waits = 0
    for op in _C10D_CALL.findall(_COMMENT.sub("", text)):
        if op == "wait_tensor":
            waits += 1
        elif kind := collective_kind(op):
            in_code[kind] += 1
    return waits


def _collectives(key: str, dir_name: str, schedules: list[list[str]], in_code: Counter, waits: int) -> GraphCollectives:
    scheduled: Counter = Counter()
    for ops in schedules:
        scheduled.update(k for k in map(collective_kind, ops) if k)
    return GraphCollectives(key, dir_name, dict(scheduled), dict(in_code), waits)


def _execution_order(text: str) -> list[str] | None:
    """Compile ids in graph_execution's order ({"graph_execution_order": ["0/1", {"compile_id": "0/0"}, ...]})."""
    data = _json(text)
    order = data.get("graph_execution_order") if isinstance(data, dict) else None
    if not isinstance(order, list):
        return None
    out = []
    for item in order:
        if isinstance(item, dict):
            item = item.get("compile_id")
        if isinstance(item, str):
            out.append(item if item.startswith("[") else f"[{item}]")
    return out


def _json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None

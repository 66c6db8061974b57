"""Cross-rank analysis: where the ranks of one distributed job compiled differently.

Pure functions of RankSummary lists (never of traces or rendered files), so the
landing page of a job with thousands of ranks costs only their summaries.
When ranks differ, each finding names the groups of ranks that agree, largest
group first, so the odd ranks out stand out.
"""

from __future__ import annotations

import os
import posixpath
import statistics
from collections import defaultdict
from dataclasses import asdict, field
from typing import Any, Callable, Hashable, Iterable, Mapping

from ..lazy_regex import lazy_compile
from ..model.ids import CompileId, compilation_key
from .autotuning import config_items
from .rank_summary import RankCrash, RankSummary, collective_kind
from .runtime_estimates import runtime_estimations, runtime_trace
from .status import BREAK, EMPTY, ERROR, MISSING, OK, RESTARTED
from ..model.records import dataclass
from ..wording import Listed, count, cut, first_listed

COMPILE_IDS = "compile_ids"
STATUSES = "statuses"
CACHE = "cache"
COLLECTIVES = "collectives"
TENSOR_META = "tensor_meta"
AUTOTUNE = "autotune"
CUDAGRAPHS = "cudagraphs"
WARNINGS = "warnings"
ENVIRONMENT = "environment"
CRASHES = "crashes"
DIVERGENCE_TITLES = {
    CRASHES: "Ranks crashed in native code, not all of them alike",
    ENVIRONMENT: "Ranks ran different versions or GPUs",
    COMPILE_IDS: "Ranks compiled different sets of compile ids",
    STATUSES: "The same compile ended differently on different ranks",
    CACHE: "Ranks had different cache hit/miss sequences",
    COLLECTIVES: "Ranks scheduled different collective operation sequences",
    TENSOR_META: "Ranks compiled graphs with different tensor metadata (shapes, strides, dtypes)",
    AUTOTUNE: "Ranks' max-autotune chose different kernels for the same op",
    CUDAGRAPHS: "Ranks ran different compiles without CUDA graphs",
    WARNINGS: "torch printed different warnings on different ranks",
}
MAX_DETAILS = 20  # per finding: the rest is summarised as "and N more"
# A compile-time skew is a straggler from 1 s and a quarter of the fastest rank's time on: below either, the ranks
# compiled about as long (the same compiles on cores they share differ by a few percent).
SKEW_NOTABLE_S = 1.0
SKEW_NOTABLE_RATIO = 1.25


def rank_list(ranks: Iterable[int]) -> str:
    """"0-4, 7, 9": runs of three or more consecutive ranks are shortened (thousands of ranks stay readable)."""
    ranks = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ranks[i]}-{ranks[j]}")
        else:
            parts.extend(str(r) for r in ranks[i : j + 1])
        i = j + 1
    return ", ".join(parts)


@dataclass
class RankGroup:
    ranks: list[int]
    what: str  # what these ranks share, for people

    @property
    def label(self) -> str:
        return rank_list(self.ranks)

    @property
    def noun(self) -> str:
        return "rank" if len(self.ranks) == 1 else "ranks"


@dataclass
class Divergence:
    kind: str  # a key of DIVERGENCE_TITLES
    groups: list[RankGroup]  # largest first
    details: list[str] = field(default_factory=list)  # e.g. which compile ids only some ranks have
    # The rank whose own log says why, in full (its summary): for compile ids some ranks only have, the first rank that
    # recompiled for one of them. None where no one rank does.
    explained_by: int | None = None
    # What it means for the job, where the logs say: for compile ids, whether the graphs that differ call collectives
    # (a rank that runs one waits for ranks that never will: a hang) or not (no wait inside them); None where unknown.
    consequence: str | None = None

    @property
    def title(self) -> str:
        return DIVERGENCE_TITLES[self.kind]


@dataclass
class GraphRuntimeDelta:
    graph: str
    fastest_rank: int
    fastest_ms: float
    slowest_rank: int
    slowest_ms: float
    delta_ms: float
    ranks: int  # ranks that compiled this graph


@dataclass
class RuntimeAnalysis:
    available: bool  # False when ranks compiled different numbers of graphs
    graphs: list[GraphRuntimeDelta]
    graph_counts: list[RankGroup]  # ranks grouped by how many graphs have runtime estimates


@dataclass
class ExecOrderRow:
    index: int
    by_rank: dict[int, str]  # rank -> compile id executed at this position
    schedule_mismatch: bool  # the graphs run here schedule different collectives
    cache_mismatch: bool  # the graphs run here had different cache outcomes

    @property
    def order_differs(self) -> bool:
        return len(set(self.by_rank.values())) > 1

    def groups(self) -> list[RankGroup]:
        return _group(self.by_rank, lambda cid: cid, lambda cid: cid)


EXEC_ORDER_ROWS = 200  # the steps of the execution order a page lists (ExecOrderAnalysis.rows_listed)


@dataclass
class ExecOrderAnalysis:
    ranks: list[int]  # ranks that logged graph_execution
    order_differs: bool
    schedule_mismatch_ranks: list[int]
    cache_mismatch_ranks: list[int]
    rows: list[ExecOrderRow]  # positions where ranks ran different graphs or the graphs disagree

    @property
    def rows_listed(self) -> Listed[ExecOrderRow]:
        """The steps a page's table lists, and how many more (multi_rank_summary.json has them all)."""
        return cut(self.rows, EXEC_ORDER_ROWS)


@dataclass
class ParityRow:
    rank: int
    graph: str
    dir_name: str
    offset: int  # sum over collective kinds of |scheduled - in output code|
    missing_waits: int  # collectives in the output code without a wait_tensor
    scheduled: dict[str, int]
    in_code: dict[str, int]
    waits: int


@dataclass
class CollectivesParity:
    graphs_checked: int  # graphs with both a collective schedule and output code
    rows: list[ParityRow]  # graphs where the code and the schedule disagree


@dataclass
class CompileTimeSkew:
    ranks: list[int]
    seconds: list[float]  # compile time of each rank, same order
    fastest_rank: int | None = None
    slowest_rank: int | None = None
    median_s: float = 0.0
    skew_s: float = 0.0  # slowest - fastest
    # Ranks that compiled nothing (an empty log): charted at 0, but not the fastest, nor in the median or the skew,
    # where they would stand for a rank that compiled quickly.
    left_out: list[int] = field(default_factory=list)
    # Every rank that logged anything exported and compiled nothing (RankSummary.export_only): its time is export time.
    export_only: bool = False
    # The slowest rank compiled long enough past the fastest to keep it waiting at a collective (SKEW_NOTABLE_S and
    # SKEW_NOTABLE_RATIO): a straggler, which the page marks. Ranks of one job sharing a machine's cores differ a
    # little anyway (rank 0 59.75 s, rank 1 59.03 s in multi_rank_fsdp/): that is no straggler.
    notable: bool = False

    @property
    def straggler_text(self) -> str:
        """What the skew means for the job, after the fastest and slowest ranks are named."""
        if self.notable:
            return "A rank that compiles much longer than the others keeps them waiting at the next collective."
        return (f"The ranks compiled about as long (apart by under {SKEW_NOTABLE_S:g} s or under "
                f"{SKEW_NOTABLE_RATIO - 1:.0%} of the fastest rank's time): no straggler.")

    @property
    def heading(self) -> str:
        """What the ranks' time is: "Export time" where each rank only ran torch.export, else "Compile time"."""
        return "Export time" if self.export_only else "Compile time"


@dataclass
class MultiRankAnalysis:
    ranks: list[int]  # every rank, including those whose log could not be read
    failed_ranks: list[int]
    divergences: list[Divergence]
    partial_ranks: list[int]  # ranks whose log was read in part (records skipped, cut off): compared as far as read
    missing_ranks: list[list[int]]  # [first, last] of each gap in the rank numbers 0..highest: no log of those ranks
    runtime: RuntimeAnalysis | None  # None: no rank logged runtime estimates
    tensor_meta_ranks: list[int]  # ranks with tensor metadata
    tensor_meta_graphs: list[tuple[str, list[RankGroup]]]  # graphs whose metadata differs across ranks
    exec_order: ExecOrderAnalysis | None  # None: fewer than two ranks logged graph_execution
    parity: CollectivesParity
    compile_time: CompileTimeSkew
    # Ranks whose process died in native code (their log records the crash): listed whether or not the other ranks
    # crashed alike, which the divergence `crashes` says.
    crashed_ranks: list[int] = field(default_factory=list)
    # crashed_ranks as a heading ("Rank 1 crashed"; "stopped" where every crash was an uncaught exception), None where
    # none; and the word of each crashed rank, its first crash's ("crashed", "stopped"). Words for the page: not in
    # to_json, where ranks[].crashes already says them.
    crashed: str | None = None
    crash_words: dict[int, str] = field(default_factory=dict)
    # Ranks that compiled and whose graphs hold no operator, or that made no graph (RankSummary.ran_eagerly): their
    # program ran eagerly, which neither their compile ids nor any divergence says.
    eager_ranks: list[int] = field(default_factory=list)
    ran_eagerly: str | None = None  # eager_ranks in a sentence, for people; None where there are none
    # runtime_estimations.json's content (the ranks' op_runtimes, rank by rank): the page links the files made of
    # it exactly when it is not empty. Not in to_json, where ranks[].op_runtimes already holds it.
    runtime_estimations: list[dict[str, Any]] = field(default_factory=list)
    # Ranks read whose own report (rank_<N>/) could not be written (RankSummary.report_not_written): the landing page
    # names them and links nothing of theirs. Not in to_json, where ranks[].report_not_written already says it.
    unreported_ranks: list[int] = field(default_factory=list)
    # Where the compiled graphs call collectives (RankSummary.graph_collectives, merged over the ranks): compile id ->
    # the collectives its graphs call on some rank; and that in a sentence, for people: also where no graph calls any,
    # so that every collective of the job ran outside torch.compile (None where no rank compiled anything).
    graph_collectives: dict[str, list[str]] = field(default_factory=dict)
    collectives_in_graphs: str | None = None

    def divergence(self, kind: str) -> Divergence | None:
        return next((d for d in self.divergences if d.kind == kind), None)

    @property
    def runtime_trace(self) -> list[dict[str, Any]]:
        """chromium_trace_with_runtime.json: runtime_estimations as a Perfetto trace (empty where they are)."""
        return runtime_trace(self.runtime_estimations) if self.runtime_estimations else []

    @property
    def read_ranks(self) -> list[int]:
        """The ranks whose log was read (in full or in part): those compared."""
        failed = set(self.failed_ranks)
        return [r for r in self.ranks if r not in failed]

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        del doc["runtime_estimations"]
        del doc["unreported_ranks"]
        del doc["crashed"]
        del doc["crash_words"]
        for d, div in zip(doc["divergences"], self.divergences):
            d["title"] = div.title
        if doc["exec_order"]:
            for row in doc["exec_order"]["rows"]:
                row["by_rank"] = {str(r): cid for r, cid in row["by_rank"].items()}
        doc["tensor_meta_graphs"] = [{"graph": g, "groups": groups} for g, groups in doc["tensor_meta_graphs"]]
        return doc


def analyze_ranks(summaries: list[RankSummary]) -> MultiRankAnalysis:
    summaries = sorted(summaries, key=lambda s: s.rank)
    ok = [s for s in summaries if s.ok]
    # A rank that logged nothing is a note of its own (rank_notes): in the groups it would stand as a rank that
    # agrees with others ("Ranks 0, 3: no cache lookups"), when nothing of it was seen to agree or differ.
    logged = [s for s in ok if not s.empty]
    divergences = [
        d
        for d in (
            # First: a rank that died is why the job failed, and others may be only that it stopped early (compile
            # ids it never reached, a compile it never finished).
            _crash_divergence(logged),
            _environment_divergence(logged),  # (then: often the cause of the others)
            _compile_id_divergence(logged),
            _status_divergence(logged),
            _cache_divergence(logged),
            _collective_divergence(logged),
            _tensor_meta_divergence(logged),
            _autotune_divergence(logged),
            _cudagraph_divergence(logged),
            _warning_divergence(logged),
        )
        if d is not None
    ]
    meta_ranks, meta_graphs = _tensor_meta_graphs(logged)
    eager = [s.rank for s in logged if s.ran_eagerly]
    in_graphs = _graph_collectives(logged)
    return MultiRankAnalysis(
        ranks=[s.rank for s in summaries],
        failed_ranks=[s.rank for s in summaries if not s.ok],
        divergences=divergences,
        partial_ranks=[s.rank for s in ok if s.unread],
        missing_ranks=missing_ranks([s.rank for s in summaries]),
        runtime=_runtime(ok),
        tensor_meta_ranks=meta_ranks,
        tensor_meta_graphs=meta_graphs,
        exec_order=_exec_order(ok),
        parity=collectives_parity(ok),
        compile_time=_compile_time(ok),
        runtime_estimations=runtime_estimations(summaries),
        crashed_ranks=[s.rank for s in logged if s.crashes],
        crashed=_crashed(logged),
        crash_words={s.rank: s.crashes[0].word for s in logged if s.crashes},
        eager_ranks=eager,
        ran_eagerly=_ran_eagerly(eager, logged),
        unreported_ranks=[s.rank for s in summaries if s.report_not_written],
        graph_collectives=in_graphs,
        collectives_in_graphs=_collectives_in_graphs(in_graphs, logged),
    )


def _graph_collectives(logged: list[RankSummary]) -> dict[str, list[str]]:
    """Compile id -> the collectives its graphs call on any rank, in compile-id order."""
    calls: dict[str, set[str]] = {}
    for s in logged:
        for cid, kinds in s.graph_collectives.items():
            calls.setdefault(cid, set()).update(kinds)
    return {cid: sorted(calls[cid]) for cid in sorted(calls, key=_graph_sort_key)}


def _collectives_in_graphs(in_graphs: dict[str, list[str]], logged: list[RankSummary]) -> str | None:
    """Where the job's compiled graphs call collectives, or that none does: then the collectives the ranks ran (DDP's
    all-reduce, FSDP's all-gathers and reduce-scatters, the program's own torch.distributed calls) ran eagerly, outside
    every graph, and no compile placed them. None where no rank compiled anything."""
    if not any(s.compile_ids for s in logged):
        return None
    if not in_graphs:
        # Said of every compilation only where the logs show the ops of each (not one that never finished).
        if any(set(s.compile_ids) - set(s.ops_known) for s in logged):
            return "No graph these logs hold calls a collective (some compilations logged no graph)."
        return ("No compiled graph of any rank calls a collective: the job's collectives (such as FSDP's all-gathers "
                "and reduce-scatters, DDP's all-reduces, your own torch.distributed calls) all ran eagerly, outside "
                "torch.compile's graphs, so no compilation placed or reordered them.")
    listed = "; ".join(f"{cid}: {', '.join(kinds)}" for cid, kinds in list(in_graphs.items())[:MAX_DETAILS])
    more = f" and {len(in_graphs) - MAX_DETAILS} more" if len(in_graphs) > MAX_DETAILS else ""
    return f"Compiled graphs call collectives: {listed}{more}."


def _crashed(logged: list[RankSummary]) -> str | None:
    """"Rank 1 crashed", "Ranks 0, 1 stopped": the ranks that crashed, "crashed" where any of their crashes was in
    native code; None where none did."""
    crashes = [c for s in logged for c in s.crashes]
    if not crashes:
        return None
    ranks = [s.rank for s in logged if s.crashes]
    word = "crashed" if any(not c.exception for c in crashes) else "stopped"
    return f"{'Rank' if len(ranks) == 1 else 'Ranks'} {rank_list(ranks)} {word}"


def _ran_eagerly(eager: list[int], logged: list[RankSummary]) -> str | None:
    """"No rank compiled an operator: ..." where every rank that logged something compiled no operator, else which
    ranks did not; None where none."""
    if not eager:
        return None
    if len(eager) == len(logged):
        return "No rank compiled an operator: every graph Dynamo made is empty, so the program ran eagerly"
    who = f"{'Rank' if len(eager) == 1 else 'Ranks'} {rank_list(eager)}"
    return f"{who} compiled no operator: every graph Dynamo made there is empty, so {who.lower()} ran eagerly"


@dataclass
class MultiRankResults:
    """What the analyses found about the ranks of one job: every rank's summary and what differs between them."""

    source: str  # the directory of rank logs
    summaries: list[RankSummary]
    analysis: MultiRankAnalysis
    notes: list[str] = field(default_factory=list)  # files ignored, ranks unread, ...

    def to_json(self) -> dict[str, Any]:
        return {**multirank_json(self.summaries, self.analysis), "notes": list(self.notes)}

    @property
    def by_rank(self) -> list[RankSummary]:
        """The ranks' summaries in rank order (as to_json lists them)."""
        return sorted(self.summaries, key=lambda s: s.rank)

    @property
    def collective_schedules(self) -> list[dict[str, Any]]:
        """collective_schedules.json: each graph's collectives in the order it calls them, rank by rank, then in
        compile id order (tlparse's order is its output directory's, as the file system reads it). Its entries are
        tlparse's (CollectiveSchedule: rank, graph, ops), no more: the pages take the compile ids from the summaries."""
        return [{"rank": s.rank, "graph": dir_name, "ops": ops}
                for s in self.by_rank for _, dir_name, ops in s.collective_schedules]

    @property
    def crashes(self) -> list[tuple[int, RankCrash]]:
        """Every crash (native, or an uncaught exception) the ranks recorded, as (rank, crash), in rank order."""
        return [(s.rank, crash) for s in self.by_rank for crash in s.crashes]

    @property
    def crash_endings(self) -> list[str]:
        """Each way ranks ended, with the ranks that ended so: "both ranks stopped with AssertionError: ... raised at
        ...", "rank 1 crashed: Segmentation fault ..."; in the order of the first rank of each."""
        ranks: dict[str, list[int]] = {}
        for rank, crash in self.crashes:
            ranks.setdefault(crash.ending, []).append(rank)
        everyone = len(self.summaries)
        said = []
        for ending, which in ranks.items():
            if len(which) == everyone == 2:
                who = "both ranks"
            elif len(which) == everyone > 2:
                who = f"all {everyone} ranks"
            else:
                who = f"{'rank' if len(which) == 1 else 'ranks'} {rank_list(which)}"
            said.append(f"{who} {ending}")
        return said

    def rank_in_detail(self, typed_path: str | None = None) -> RankInDetail | None:
        """The rank whose own log explains a divergence (its recompile of a compile id other ranks lack), and that log
        as the user would type it: under the directory as they typed it (typed_path), else as read. None where no
        rank's log explains one."""
        explained = next((d.explained_by for d in self.analysis.divergences if d.explained_by is not None), None)
        summary = next((s for s in self.summaries if s.rank == explained), None)
        if summary is None:
            return None
        return RankInDetail(summary.rank, log_as_typed(summary.source, self.source, typed_path))


@dataclass
class RankInDetail:
    """The one rank worth reading on its own, to see why the ranks differ."""

    rank: int
    log: str  # its log as the user would type it


def log_as_typed(log: str, directory: str, typed_path: str | None) -> str:
    """log, a file under directory, named under directory as the user typed it (typed_path): results hold the paths
    as read (absolute). log as it is where typed_path is None or log is not under directory."""
    prefix = directory.rstrip("/") + "/"
    if typed_path is None or not log.startswith(prefix):
        return log
    return posixpath.join(typed_path, log[len(prefix):])


def multirank_results(source: str, summaries: list[RankSummary], found_notes: list[str]) -> MultiRankResults:
    """The ranks' results: what differs between them, and the notes on the files found (found_notes) followed by
    rank_notes()."""
    analysis = analyze_ranks(summaries)
    return MultiRankResults(source, summaries, analysis, found_notes + rank_notes(summaries, analysis))


def rank_notes(summaries: list[RankSummary], analysis: MultiRankAnalysis) -> list[str]:
    """What the reader of the ranks' results should know: ranks with no log, and ranks unread, empty, read in part,
    carrying another rank in their records, or read but with their report or chromium events not written. File names as they are: a terminal shows them on one line
    (invisible.one_line), an HTML page escapes them."""
    notes = []
    if analysis.missing_ranks:
        gaps = [first if first == last else f"{first}-{last}" for first, last in analysis.missing_ranks]
        absent = sum(last - first + 1 for first, last in analysis.missing_ranks)
        notes.append(f"{'rank' if absent == 1 else 'ranks'} {', '.join(map(str, gaps))}: no log (the logs go up to rank "
                     f"{max(analysis.ranks)}): a rank that never started, or a log not copied here")
    for s in summaries:
        if s.error:
            notes.append(f"rank {s.rank}: not read: {s.error}")
        elif s.empty:
            notes.append(f"rank {s.rank}: {os.path.basename(s.source)} is empty: the rank logged nothing (no report; "
                         "left out of how the ranks differ)")
        elif s.unread:
            notes.append(f"rank {s.rank}: {os.path.basename(s.source)} was not read in full: {s.unread}; its figures, "
                         "and how it compares with the other ranks, cover only what was read")
        elif s.logged_rank is not None:
            notes.append(
                f"rank {s.rank}: {os.path.basename(s.source)} is named for rank {s.rank} but its records carry rank "
                f"{s.logged_rank}; shown as rank {s.rank}"
            )
        if s.report_not_written:  # read, and compared: only its own report is missing
            notes.append(f"rank {s.rank}: {s.report_not_written}")
        if s.not_written:  # read (whatever was said above): what it sends to be merged was not stored
            notes.append(f"rank {s.rank}: {s.not_written}")
    return notes


def multirank_json(summaries: list[RankSummary], analysis: MultiRankAnalysis) -> dict[str, Any]:
    """Per-rank summaries and the cross-rank findings, JSON-able (for `summary --json` and the report)."""
    return {
        "ranks": [s.to_json() for s in sorted(summaries, key=lambda s: s.rank)],
        "analysis": analysis.to_json(),
    }


# -- grouping ----------------------------------------------------------------------


def _group(values: dict[int, Any], key: Callable[[Any], Hashable], describe: Callable[[Any], str]) -> list[RankGroup]:
    """Ranks grouped by key(value), largest group first (then by lowest rank)."""
    by_key: dict[Hashable, list[int]] = defaultdict(list)
    sample: dict[Hashable, Any] = {}
    for rank in sorted(values):
        k = key(values[rank])
        by_key[k].append(rank)
        sample.setdefault(k, values[rank])
    groups = [RankGroup(ranks, describe(sample[k])) for k, ranks in by_key.items()]
    return sorted(groups, key=lambda g: (-len(g.ranks), g.ranks[0]))


def _capped(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_DETAILS:
        return lines
    return lines[:MAX_DETAILS] + [f"… and {len(lines) - MAX_DETAILS} more"]



# -- divergences -------------------------------------------------------------------


def _only_on(by_rank: Mapping[int, Iterable[str]]) -> dict[str, list[int]]:
    """Each item that some ranks have and others not -> the ranks that have it, in rank order."""
    everywhere = set.intersection(*(set(items) for items in by_rank.values()))
    where: dict[str, list[int]] = defaultdict(list)
    for rank, items in sorted(by_rank.items()):
        for item in set(items) - everywhere:
            where[item].append(rank)
    return where


def _keys_with_several_values(by_rank: Mapping[int, Mapping[Any, Hashable]]) -> list[Any]:
    """The keys that map to more than one value across the ranks (each rank read once: asking every rank about
    every key of every rank was ranks² × keys lookups, 200M for 1,000 ranks of 200 compile ids)."""
    values: defaultdict[Any, set[Hashable]] = defaultdict(set)
    for per_rank in by_rank.values():
        for key, value in per_rank.items():
            values[key].add(value)
    return [key for key, seen in values.items() if len(seen) > 1]


# An object's id in an identity guard (`___check_obj_id(fn, 139645370122560)`): its address in that process, which
# every rank has its own of, so the same guard failing on each rank read as a reason per rank.
_OBJECT_ID = lazy_compile(r"(___check_obj_id\([^,()\n]{1,500}, )\d{1,30}\)")


def _without_object_ids(reason: str | None) -> str | None:
    """A recompile reason with each object id of its identity guards said as what it is: alike on every rank that
    failed the same guard ("___check_obj_id(fn, <its id in that process>)")."""
    return _OBJECT_ID.sub(r"\1<its id in that process>)", reason) if reason else reason


def _compile_id_divergence(ok: list[RankSummary]) -> Divergence | None:
    """Compile ids that some ranks compiled and others not, each with why, where those ranks logged it: the guard
    whose failure recompiled it ("[0/1] compiled only on rank 1: tensor 'args[0]' size mismatch at index 0. expected
    32, actual 20": that rank's batch differed); by the groups of those ranks where they failed different guards.
    A compilation's restarts on the same ranks are said with it ("[0/1] compiled only on rank 1 (restarted as
    [0/1_1])"): a line of their own read as another graph those ranks compiled, and the reason, which the ranks key by
    the compilation, went to neither line or the other."""
    sets = {s.rank: frozenset(s.compile_ids) for s in ok}
    groups = _group(sets, lambda ids: ids, _compilations_text)
    if len(groups) < 2:
        return None
    # (in the user's words where torch's names a value Dynamo passed on past a graph break)
    reasons = {s.rank: {**s.recompile_reasons, **s.recompile_reasons_described} for s in ok}
    # (compilation, the ranks that alone have it) -> its compile ids there, the compilation's own first where they have it
    alike: dict[tuple[str, tuple[int, ...]], list[str]] = defaultdict(list)
    for cid, ranks in sorted(_only_on(sets).items(), key=lambda kv: _graph_sort_key(kv[0])):
        alike[(compilation_key(cid), tuple(ranks))].append(cid)
    details = []
    explained_by = None
    for (compilation, sharing), cids in alike.items():
        ranks, first, restarts = list(sharing), cids[0], cids[1:]
        # Only a restart on these ranks (the compilation is everywhere): its reason is not why they differ.
        why = _group({rank: _without_object_ids(reasons[rank].get(compilation)) if first == compilation else None
                      for rank in ranks}, lambda reason: reason, lambda reason: reason or "")
        said = [g for g in why if g.what]
        if said and explained_by is None:
            explained_by = said[0].ranks[0]
        because = (f": {why[0].what}" if len(why) == 1 else
                   ": " + "; ".join(f"{g.noun} {g.label}: {g.what or 'no recompile reason logged'}" for g in why)) if said else ""
        restarted = f" (restarted as {', '.join(restarts)})" if restarts else ""
        details.append(f"{first} compiled only on {'rank' if len(ranks) == 1 else 'ranks'} {rank_list(ranks)}{restarted}"
                       f"{because}")
    return Divergence(COMPILE_IDS, groups, _capped(details), explained_by, _compile_ids_consequence(ok, _only_on(sets)))


def _compile_ids_consequence(ok: list[RankSummary], only_on: Mapping[str, list[int]]) -> str | None:
    """Whether the compile ids only some ranks have can hang the job: only where their graphs call a collective (those
    ranks wait in it for ranks that never call it). Without one they are harmless to the others, and said so; where a
    rank logged no graph for one (a compile that never finished), nothing is said."""
    by_rank = {s.rank: s for s in ok}
    calls: dict[str, set[str]] = defaultdict(set)
    for cid, ranks in only_on.items():
        for rank in ranks:
            calls[cid].update(by_rank[rank].graph_collectives.get(cid, []))
    with_collectives = sorted((cid for cid, kinds in calls.items() if kinds), key=_graph_sort_key)
    if with_collectives:
        kinds = sorted(set().union(*(calls[cid] for cid in with_collectives)))
        return (f"This may lead to hangs or timeouts during distributed execution: {_listed(with_collectives)} "
                f"{'calls' if len(with_collectives) == 1 else 'call'} collectives ({', '.join(kinds)}) that only some "
                "ranks compiled, and a rank that runs one waits for the ranks that never will.")
    if not only_on or any(cid not in by_rank[rank].ops_known for cid, ranks in only_on.items() for rank in ranks):
        return None
    if all(cid in by_rank[rank].no_operator for cid, ranks in only_on.items() for rank in ranks):
        return ("No hang from this: the compile ids that differ compiled no operator (restarted attempts, empty "
                "graphs), so no collective of theirs keeps another rank waiting.")
    return ("No hang from this: the graphs that differ call no collective, so no rank waits for another inside them; "
            "the ranks that compiled them only spent longer compiling.")


def _listed(items: list[str]) -> str:
    return first_listed(items, shown=4)


def _compilations_text(ids: Iterable[str]) -> str:
    """"4 compilations (7 attempts: 3 restarted)": a rank's compile ids as compilations, its restarted attempts apart.
    Counted as compile ids, a job whose every compilation restarts at a graph break (torch.compile(DDP(model))) read
    "7 compile ids" against "9" for 4 compilations against 5."""
    attempts = list(ids)
    compilations = len({compilation_key(cid) for cid in attempts})
    restarted = len(attempts) - compilations  # each compilation's earlier attempts: Dynamo restarted them
    return count(compilations, "compilation") + (f" ({len(attempts)} attempts: {restarted} restarted)" if restarted else "")


def _status_divergence(ok: list[RankSummary]) -> Divergence | None:
    """A compile id that succeeded on some ranks and failed, or never finished (its metrics missing: the rank crashed,
    hung, or its log was cut off), on others; or that compiled a graph on some and no graph at all on others (its
    status "ok" everywhere, as tlparse's: the rank's report counts it apart, and nothing of it runs compiled there).
    Compile ids on some ranks only are a compile-id divergence."""
    statuses = {s.rank: {cid: _NO_GRAPH if cid in s.no_graph else status for cid, status in s.statuses.items()}
                for s in ok}
    split = sorted(_keys_with_several_values(statuses), key=_graph_sort_key)
    if not split:
        return None
    details = []
    for cid in split:
        ended = _group({rank: st[cid] for rank, st in statuses.items() if cid in st}, lambda v: v, _ended)
        details.append(f"{cid}: " + "; ".join(f"{g.noun} {g.label}: {g.what}" for g in ended))
    # Ranks that compiled none of these are not grouped: that is the compile-id divergence.
    groups = _group({rank: v for rank, st in statuses.items() if any(v := tuple(st.get(cid) for cid in split))},
                    lambda v: v, lambda v: ", ".join(f"{cid} {_ended(status)}" for cid, status in zip(split, v) if status))
    return Divergence(STATUSES, groups, _capped(details))


# A compile id of status "ok" that made no graph at all (RankSummary.no_graph): not a status of its own (tlparse's).
_NO_GRAPH = "no graph"
_ENDED = {OK: "succeeded", BREAK: "succeeded after a restart (e.g. at a graph break)",
          RESTARTED: "was restarted (e.g. at a graph break)", EMPTY: "compiled an empty graph", ERROR: "failed",
          MISSING: "never finished (no compilation metrics)",
          _NO_GRAPH: "compiled with no graph at all (nothing of it runs compiled)"}


def _ended(status: str) -> str:
    return _ENDED.get(status, status)


def missing_ranks(ranks: Iterable[int]) -> list[list[int]]:
    """[first, last] of each run of rank numbers from 0 to the highest that has no log (ranges: one log named rank
    1000000 must not make a list of a million)."""
    gaps, expected = [], 0
    for rank in sorted(set(ranks)):
        if rank > expected:
            gaps.append([expected, rank - 1])
        expected = rank + 1
    return gaps


def _cache_divergence(ok: list[RankSummary]) -> Divergence | None:
    seqs = {s.rank: tuple((name, state) for _, name, state in s.cache_sequence) for s in ok}
    if not any(seqs.values()):
        return None

    def describe(seq: tuple) -> str:
        if not seq:
            return "no cache lookups"
        counts: defaultdict[str, int] = defaultdict(int)
        for _, state in seq:
            counts[state] += 1
        shown = ", ".join(f"{name.replace('_cache', '').replace('_' + state, '')} {state}" for name, state in seq[:6])
        more = ", …" if len(seq) > 6 else ""
        totals = ", ".join(count(n, state) for state, n in counts.items())
        return f"{totals}: {shown}{more}"

    groups = _group(seqs, lambda seq: seq, describe)
    return Divergence(CACHE, groups) if len(groups) > 1 else None


def _short_op(op: str) -> str:
    """torch.ops._c10d_functional.all_reduce_.default -> all_reduce_"""
    for prefix in ("torch.ops._c10d_functional.", "torch.ops.c10d_functional.", "_c10d_functional."):
        if op.startswith(prefix):
            op = op[len(prefix) :]
    return op.removesuffix(".default")


def _collective_divergence(ok: list[RankSummary]) -> Divergence | None:
    if not any(s.collective_schedules for s in ok):
        return None
    seqs = {s.rank: tuple(op for _, _, ops in s.collective_schedules for op in ops) for s in ok}

    def describe(seq: tuple) -> str:
        shown = ", ".join(_short_op(op) for op in seq[:12]) + (", …" if len(seq) > 12 else "")
        return f"{count(len(seq), 'op')}: {shown}" if seq else "no collectives"

    groups = _group(seqs, lambda seq: seq, describe)
    if len(groups) < 2:
        return None
    # Where the sequences first part ways, graph by graph (what to look at first).
    per_graph = {s.rank: {g: tuple(ops) for g, _, ops in s.collective_schedules} for s in ok}
    graphs = sorted({g for m in per_graph.values() for g in m}, key=_graph_sort_key)
    details = []
    for graph in graphs:
        values = {rank: m.get(graph) for rank, m in per_graph.items()}
        gs = _group(values, lambda ops: ops, lambda ops: count(len(ops), "op") if ops is not None else "no schedule logged")
        if len(gs) > 1:
            details.append(f"graph {graph}: " + "; ".join(f"{g.noun} {g.label}: {g.what}" for g in gs))
    return Divergence(COLLECTIVES, groups, _capped(details))


def _autotune_divergence(ok: list[RankSummary]) -> Divergence | None:
    """The same search (compile id, op, shapes, dtypes) won by different configs on different ranks: each rank
    benchmarks for itself, and a close race can go either way. The ranks then run different kernels (their speed,
    and the order of a reduction's sums, can differ). A search on some ranks only is a compile-id divergence."""
    winners = {s.rank: {tuple(w[:4]): w[4] for w in s.autotune_winners} for s in ok}
    split = sorted(_keys_with_several_values(winners), key=lambda k: (_graph_sort_key(k[0]), k[1:]))
    if not split:
        return None
    details = []
    shown: dict[tuple, dict[str, str]] = {}  # search -> config -> what of it tells it from the others
    for key in split:
        configs = {rank: w[key] for rank, w in winners.items() if key in w}
        shown[key] = _telling_apart(set(configs.values()))
        chosen = _group(configs, lambda config: config, lambda config: shown[key][config])
        cid, op, shape, dtypes = key
        details.append(f"{cid} {op} {shape} ({dtypes}): " + "; ".join(f"{g.noun} {g.label}: {g.what}" for g in chosen))
    picks = {rank: tuple(w.get(key) for key in split) for rank, w in winners.items()}
    groups = _group(picks, lambda p: p, lambda p: "; ".join(
        f"{key[0]} {key[1]} {key[2]}: {shown[key][config]}" for key, config in zip(split, p) if config is not None))
    return Divergence(AUTOTUNE, groups, _capped(details))


def _cudagraph_divergence(ok: list[RankSummary]) -> Divergence | None:
    """Some ranks ran a compile without CUDA graphs that others ran as graphs (reduce-overhead): those ranks are
    slower at every step, and the others wait for them at each collective."""
    skips = {s.rank: {cid: reason for cid, reason in s.cudagraph_skips} for s in ok}
    groups = _group(skips, lambda skipped: tuple(sorted(skipped.items())), lambda skipped: "; ".join(
        f"{cid} skipped: {reason}" for cid, reason in sorted(skipped.items(), key=lambda kv: _graph_sort_key(kv[0])))
        or "no compile skipped")
    if len(groups) < 2:
        return None
    where = _only_on(skips)
    details = [f"{cid} run without CUDA graphs only on {'rank' if len(ranks) == 1 else 'ranks'} {rank_list(ranks)}"
               for cid, ranks in sorted(where.items(), key=lambda kv: _graph_sort_key(kv[0]))]
    return Divergence(CUDAGRAPHS, groups, _capped(details))


def _crash_divergence(ok: list[RankSummary]) -> Divergence | None:
    """Some ranks died in native code (a segfault, an abort) or of an exception and others did not, or died elsewhere:
    the others then
    wait for the dead rank at their next collective, until a timeout or torchrun stops them."""
    said = {s.rank: tuple(c.said for c in s.crashes) for s in ok}
    if not any(said.values()):
        return None
    groups = _group(said, lambda crashes: crashes, lambda crashes: "; ".join(crashes) or "no crash recorded")
    return Divergence(CRASHES, groups) if len(groups) > 1 else None


def _environment_divergence(ok: list[RankSummary]) -> Divergence | None:
    """Ranks whose logs name different versions (torch, Python, CUDA, Triton) or GPUs: a node replaced by another kind,
    or an image updated on some nodes. What one log does not say (no Inductor compile names the GPU) is no difference."""
    values: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for s in ok:
        for what, value in s.ran_on.items():
            values[what][value].append(s.rank)
    differing = [what for what, seen in values.items() if len(seen) > 1]
    if not differing:
        return None
    shown = {s.rank: tuple((what, s.ran_on.get(what)) for what in differing) for s in ok}
    groups = _group(shown, lambda facts: facts, lambda facts: " · ".join(
        f"{what} {value}" if value else f"{what} not in the log" for what, value in facts))
    # (one thing differing, the groups say it all; several, each is said apart)
    details = [] if len(differing) == 1 else [f"{what}: " + "; ".join(f"{value} on {'rank' if len(ranks) == 1 else 'ranks'} {rank_list(ranks)}"
                                      for value, ranks in sorted(values[what].items(), key=lambda kv: -len(kv[1])))
               for what in differing]
    return Divergence(ENVIRONMENT, groups, _capped(details))


def _warning_divergence(ok: list[RankSummary]) -> Divergence | None:
    """torch warned on some ranks only (of the ranks that recorded what it printed): those ranks took another path
    (a Python bool on one rank, a complex tensor on another), often the cause of the other divergences."""
    printed = {s.rank: set(s.warnings) for s in ok if s.warnings is not None}
    groups = _group(printed, lambda said: tuple(sorted(said)), lambda said: "; ".join(sorted(said)) or "no warning")
    if len(groups) < 2:
        return None
    where = _only_on(printed)
    details = [f"only on {'rank' if len(ranks) == 1 else 'ranks'} {rank_list(ranks)}: {label}"
               for label, ranks in sorted(where.items(), key=lambda kv: (kv[1], kv[0]))]
    return Divergence(WARNINGS, groups, _capped(details))


def _telling_apart(configs: set[str]) -> dict[str, str]:
    """Each config as the keys whose values differ between them (`BLOCK_K=64, BLOCK_M=128`), or whole when a
    config is not written as `KEY=value, ...`."""
    items = {c: i for c in configs if (i := config_items(c)) is not None}
    if len(items) < len(configs):
        return {c: c or "?" for c in configs}
    keys = dict.fromkeys(k for i in items.values() for k in i)
    differing = [k for k in keys if len({i.get(k) for i in items.values()}) > 1]
    return {c: ", ".join(f"{k}={i.get(k, '-')}" for k in differing) for c, i in items.items()}


def _tensor_meta_divergence(ok: list[RankSummary]) -> Divergence | None:
    metas = {s.rank: s.tensor_meta for s in ok if s.tensor_meta}
    groups = _group(
        metas, lambda m: tuple(sorted(m.items())), lambda m: f"{count(len(m), 'graph')} with tensor metadata"
    )
    if len(groups) < 2:
        return None
    _, graphs = _tensor_meta_graphs(ok)
    details = [f"graph {g}: " + "; ".join(f"{grp.noun} {grp.label}: {grp.what}" for grp in gs) for g, gs in graphs]
    return Divergence(TENSOR_META, groups, _capped(details))


def _tensor_meta_graphs(ok: list[RankSummary]) -> tuple[list[int], list[tuple[str, list[RankGroup]]]]:
    metas = {s.rank: s.tensor_meta for s in ok if s.tensor_meta}
    graphs = sorted({g for m in metas.values() for g in m}, key=_graph_sort_key)
    fingerprints: dict[str, str] = {}  # fingerprint -> short name, so people can tell variants apart
    out = []
    for graph in graphs:
        values = {rank: m.get(graph) for rank, m in metas.items()}

        def describe(fp: str | None) -> str:
            if fp is None:
                return "no metadata logged"
            return f"variant {fingerprints.setdefault(fp, chr(ord('A') + len(fingerprints) % 26))} ({fp})"

        gs = _group(values, lambda fp: fp, describe)
        if len(gs) > 1:
            out.append((graph, gs))
    return sorted(metas), out


# -- runtime estimates ---------------------------------------------------------------


def _graph_sort_key(graph: str) -> tuple:
    base, _, n = graph.partition(" #")
    cid = CompileId.parse(base)
    return (cid.sort_key() if cid else (), int(n) if n.isascii() and n.isdigit() and len(n) < 19 else 1, graph)


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def _runtime(ok: list[RankSummary]) -> RuntimeAnalysis | None:
    ranks = {s.rank: s.runtimes_ns for s in ok if s.runtimes_ns}
    if not ranks:
        return None
    counts = _group(ranks, len, lambda m: count(len(m), "graph"))
    if len(counts) > 1:
        # Graph i of one rank is not graph i of another: comparing them would mislead.
        return RuntimeAnalysis(False, [], counts)
    graphs = sorted({g for m in ranks.values() for g in m}, key=_graph_sort_key)
    deltas = []
    for graph in graphs:
        values = [(m[graph], rank) for rank, m in sorted(ranks.items()) if graph in m]
        fast_ns, fast_rank = min(values)
        slow_ns, slow_rank = max(values, key=lambda v: (v[0], -v[1]))
        deltas.append(GraphRuntimeDelta(graph, fast_rank, _ms(fast_ns), slow_rank, _ms(slow_ns), _ms(slow_ns - fast_ns), len(values)))
    return RuntimeAnalysis(True, deltas, counts)


# -- graph execution order -------------------------------------------------------------


def _cache_status(summary: RankSummary) -> dict[str, str]:
    """Compile id -> its cache outcome; a miss outweighs a hit, a hit a bypass (tlparse's rule)."""
    priority = {"miss": 3, "hit": 2, "bypass": 1}
    status: dict[str, str] = {}
    for cid, _, state in summary.cache_sequence:
        if priority.get(state, 0) > priority.get(status.get(cid, ""), 0):
            status[cid] = state
    return status


def _exec_order(ok: list[RankSummary]) -> ExecOrderAnalysis | None:
    orders = {s.rank: s.execution_order for s in ok if s.execution_order is not None}
    if len(orders) < 2:
        return None
    by_rank = {s.rank: s for s in ok}
    schedules: dict[int, dict[str, int]] = {}
    schedule_ids: dict[tuple, int] = {}
    caches: dict[int, dict[str, str]] = {}
    for rank in orders:
        sched: dict[str, list[str]] = defaultdict(list)
        for graph, _, ops in by_rank[rank].collective_schedules:
            sched[graph.partition(" #")[0]].extend(ops)
        # Each distinct schedule becomes a small number once: comparing numbers at every position is
        # linear, hashing every rank's whole schedule at every position is not.
        schedules[rank] = {cid: schedule_ids.setdefault(tuple(ops), len(schedule_ids)) for cid, ops in sched.items()}
        caches[rank] = _cache_status(by_rank[rank])

    rows = []
    sched_ranks: set[int] = set()
    cache_ranks: set[int] = set()
    order_differs = False
    for index in range(max(len(o) for o in orders.values())):
        here = {rank: order[index] for rank, order in sorted(orders.items()) if index < len(order)}
        scheds = [schedules[r][cid] for r, cid in here.items() if cid in schedules[r]]
        states = [caches[r][cid] for r, cid in here.items() if caches[r].get(cid)]
        row = ExecOrderRow(index, here, len(set(scheds)) > 1, len(set(states)) > 1)
        if row.schedule_mismatch:
            sched_ranks.update(here)
        if row.cache_mismatch:
            cache_ranks.update(here)
        if row.order_differs or row.schedule_mismatch or row.cache_mismatch:
            order_differs |= row.order_differs
            rows.append(row)
    return ExecOrderAnalysis(sorted(orders), order_differs, sorted(sched_ranks), sorted(cache_ranks), rows)


# -- collectives parity -----------------------------------------------------------------


def collectives_parity(summaries: Iterable[RankSummary]) -> CollectivesParity:
    """Graphs whose output code calls other collectives than Inductor scheduled, or fewer wait_tensor calls
    than collectives (an unwaited collective is a likely hang or a race)."""
    rows = []
    checked = 0
    for s in summaries:
        for g in s.collectives:
            checked += 1
            kinds = set(g.scheduled) | set(g.in_code)
            offset = sum(abs(g.scheduled.get(k, 0) - g.in_code.get(k, 0)) for k in kinds)
            missing = max(0, sum(g.in_code.values()) - g.waits)
            if offset or missing:
                rows.append(ParityRow(s.rank, g.graph, g.dir_name, offset, missing, g.scheduled, g.in_code, g.waits))
    return CollectivesParity(checked, rows)


# -- compile time ------------------------------------------------------------------------


def _compile_time(ok: list[RankSummary]) -> CompileTimeSkew:
    skew = CompileTimeSkew([s.rank for s in ok], [s.compile_time_s for s in ok])
    compiled = [s for s in ok if s.compile_ids]
    skew.left_out = [s.rank for s in ok if not s.compile_ids]
    logged = [s for s in ok if not s.empty]
    skew.export_only = bool(logged) and all(s.export_only for s in logged)
    if compiled:
        fastest = min(compiled, key=lambda s: (s.compile_time_s, s.rank))
        slowest = max(compiled, key=lambda s: (s.compile_time_s, -s.rank))
        skew.fastest_rank, skew.slowest_rank = fastest.rank, slowest.rank
        skew.median_s = round(statistics.median(s.compile_time_s for s in compiled), 6)
        skew.skew_s = round(slowest.compile_time_s - fastest.compile_time_s, 6)
        skew.notable = (skew.skew_s >= SKEW_NOTABLE_S
                        and slowest.compile_time_s >= SKEW_NOTABLE_RATIO * fastest.compile_time_s)
    return skew


__all__ = [
    "MultiRankAnalysis",
    "analyze_ranks",
    "collective_kind",
    "collectives_parity",
    "missing_ranks",
    "multirank_json",
    "rank_list",
]

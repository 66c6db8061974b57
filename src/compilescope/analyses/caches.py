"""FX graph cache and AOTAutograd cache: hit, miss or bypass per compile id, with bypass reasons.

Torch logs one artifact per lookup (`fx_graph_cache_hit`, `aotautograd_cache_bypass`, ...)
whose JSON payload has `cache_bypass_reason` for bypasses and `time_saved_ms` for
AOTAutograd hits. A hit means torch skipped AOTAutograd/Inductor for that graph, so
their intermediate graphs are not in the log.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable


from ..lazy_regex import lazy_compile
from ..model.ids import NO_COMPILE_ID, compilation_key
from ..model.payloads import json_object
from ..model.trace import Compile, Trace
from ..model.records import dataclass
from ..wording import and_list
from .status import (ERROR, RESTARTED, attempt_words, compile_status, compile_statuses, compiled_attempts,
                     restarted_attempt_label, restarted_attempt_words)

if TYPE_CHECKING:
    from .aoti import Aoti
    from .compile_time import CompileTimes

CACHES = {"fx_graph_cache": "FX graph cache", "aotautograd_cache": "AOTAutograd cache"}
_OVERALL_TEXTS = {  # {lookup}: "cache lookup", or "cache lookup torch logged" where some lookup was never logged
    "warm": "every {lookup} hit, so torch reused what an earlier run had compiled",
    # {missed}: "every {lookup} missed", or, where some were bypassed, "no {lookup} hit (N missed, N bypassed ...)"
    "cold": "{missed}, so torch compiled everything anew (a first run, or an empty cache)",
    # {reused}: whose output the hits reused: an earlier run's, or this run's own (a compile's graph compiled again)
    "mixed": "some cache lookups hit ({reused}), others missed (compiled anew)",
    # Where compiles failed, what torch "compiled anew" is said of those that did not: a failed compile compiled nothing.
    "cold_some_failed": "{missed}, so torch compiled everything anew but {failed}, which failed (a first "
                        "run, or an empty cache)",
    "cold_all_failed": "{missed} (a first run, or an empty cache), and torch compiled nothing: {failed} "
                       "failed",
    "mixed_some_failed": "some cache lookups hit ({reused}), others missed (compiled anew, but {failed} failed)",
    "bypassed": "every {lookup} was bypassed, as torch could not cache these graphs",
    "none": "no cache lookup logged",
}
# Said of a hit on what a compile before torch._dynamo.reset() wrote to the cache.
RESET_KEEPS_CACHES = (", compiled before torch._dynamo.reset(), which throws compiled functions away, not what the "
                      "caches hold")
# Said of a hit on what another process of the log (several processes' logs one after another) wrote to the cache:
# not this run's own output. Worded as the compile pages word that process (compile_summary.OTHER_PROCESS_NOTE).
OTHER_PROCESS = "another process in the same log"
# What freezing (torch._inductor.config.freezing) does to the caches, which torch's reasons do not say: the AOTAutograd
# cache refuses any graph compiled with it (autograd_cache.py), and the FX graph cache one holding a oneDNN tensor
# (codecache.py's CacheabilityValidator), as freezing's weights laid out for the CPU libraries can be.
FREEZING_BYPASSES = {
    "Cannot cache a graph with freezing enabled":
        "the AOTAutograd cache stores no graph compiled with torch._inductor.config.freezing on (the parameters are "
        "constants of it): a later process cannot load it from there",
    "mkldnn tensors unpickleable":
        "a constant of the graph is a oneDNN (mkldnn) tensor, which the FX graph cache cannot save: freezing lays "
        "weights out so for the CPU libraries; a later process cannot load the graph from there",
}
_NAME = re.compile(r"^(?P<cache>fx_graph_cache|aotautograd_cache)_(?P<outcome>hit|miss|bypass)$")
# One component of an FX graph cache key, as its lookup's payload lists them: "[hash] fx_kwargs[is_backward]: True"
_IS_BACKWARD = lazy_compile(r"^\[\w+\] fx_kwargs\[is_backward\]: (True|False)$")


@dataclass
class CacheEvent:
    """One lookup in one cache (FX graph or AOTAutograd) and its outcome."""

    cache: str  # "fx_graph_cache" | "aotautograd_cache"
    outcome: str  # "hit" | "miss" | "bypass"
    bypass_reason: str | None = None
    time_saved_ms: float | None = None
    # "forward" | "backward": the graph an FX graph cache lookup was for, from its key's component
    # "fx_kwargs[is_backward]: True" (an inference graph is a forward); None where torch did not log it
    graph: str | None = None
    # A hit on a key that a miss earlier in this log wrote (its compile id): the hit reused this run's own output (a
    # recompile that made the same graph), not an earlier run's, and that compile's graphs are in this log.
    reused_from: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"cache": self.cache, "outcome": self.outcome, "bypass_reason": self.bypass_reason,
                "time_saved_ms": self.time_saved_ms, "graph": self.graph, "reused_from": self.reused_from}


@dataclass
class CompileCache:
    """The cache lookups of one compile id."""

    compile_id: str
    events: list[CacheEvent]
    # The numbers (Caches.reason_numbers) of its bypass reasons, each once, in the order they ran: what its row shows.
    reason_numbers: list[int] = field(default_factory=list)
    # What its row shows for it, by compilation as the recompile steps say it: "[1/0]" for gpt2_train's [1/0_1], the
    # attempt that compiled [1/0] after Dynamo restarted it; an attempt Dynamo restarted (status RESTARTED, whatever
    # its lookups did) apart, "[0/0] first try, restarted"; an AOTInductor package's build by its name
    # (name_aoti_cache_rows). The bypass reasons name it so too. Each row links its own attempt. Never empty: a row
    # given none (or read from a save without one) is named by its compilation (__post_init__), never by empty text.
    label: str = ""
    # Whether label is an AOTInductor package's name (Aoti.compile_name), not a compile id: shown as a name is.
    names_package: bool = False

    def __post_init__(self) -> None:
        if not self.label:
            self.label = compilation_key(self.compile_id) or NO_COMPILE_ID

    def outcome(self, cache: str) -> str | None:
        """hit/miss/bypass of one cache; several lookups are joined: "miss, hit", each named by its graph where the
        log tells a forward from a backward: "forward miss, backward hit" (torch 2.14's provenance.log)."""
        events = [e for e in self.events if e.cache == cache]
        named = {e.graph for e in events} == {"forward", "backward"}
        outcomes = [f"{e.graph} {e.outcome}" if named else e.outcome for e in events]
        return ", ".join(outcomes) if outcomes else None

    @property
    def bypass_reasons(self) -> list[str]:
        """Why each bypassed lookup bypassed its cache, in the order they ran (a lookup that logged none: left out)."""
        return [e.bypass_reason for e in self.events if e.bypass_reason]

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "label": self.label, "fx_graph_cache": self.outcome("fx_graph_cache"),
                "aotautograd_cache": self.outcome("aotautograd_cache"), "events": [e.to_json() for e in self.events]}


@dataclass
class Caches:
    """Cache lookups of the whole log: per compile, counted by cache and outcome, with bypass reasons."""

    compiles: list[CompileCache] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # cache -> outcome -> n
    time_saved_ms: float = 0.0
    bypass_reasons: list[tuple[str, int]] = field(default_factory=list)  # (reason, n), most frequent first
    graphs_missing: list[str] = field(default_factory=list)  # compile ids whose graphs a hit left out of the log
    # Of those, the ones whose FX graph lookups only partly hit (a graph DDPOptimizer split, some of its subgraphs
    # compiled by another rank sharing the cache): compile id -> "3 of 6 graphs"
    partly_served: dict[str, str] = field(default_factory=dict)
    # Compile ids with an AOTAutograd cache lookup and no FX graph cache lookup logged: torch logs the FX graph
    # cache's outcome once Inductor has compiled the graph (compile_fx.py), so a compile that failed in Inductor
    # (compile_error_fallback, compile_error_lowering) logged none. Not a miss: nothing is known of it.
    fx_unlogged: list[str] = field(default_factory=list)
    # Of those, the attempts Dynamo restarted (compiled_optimizer.log's [2/1], attempt 0, looked up its AOTAutograd
    # cache, then restarted before Inductor compiled anything) -> the attempt that compiled the frame ([2/1_1]): their
    # FX graph lookup is missing because the attempt was given up, not because its compile failed.
    fx_unlogged_restarted: dict[str, str] = field(default_factory=dict)
    # Every attempt Dynamo restarted that missed a cache -> the attempt that compiled the frame ([2/1] -> [2/1_1]):
    # what it compiled after its miss was thrown away with the attempt, so its miss is no graph "compiled anew", and
    # overall leaves its lookups out (the attempt that compiled the frame looked them up again).
    restarted_misses: dict[str, str] = field(default_factory=dict)
    # Compile ids whose every hit reused what an earlier compile of this log had compiled (a recompile that made the
    # same graph: train_step_pitfalls.log's [0/1] reused [0/0]'s) -> those compiles: not in graphs_missing, as an empty
    # cache would not show more (the graphs are in this log, under those compiles).
    reused_in_run: dict[str, list[str]] = field(default_factory=dict)
    # Of those, the compile ids whose hits reused what another process of the log had compiled (`cat cache_cold.log
    # cache_warm.log`: the second process's [1/0] reused the first's [0/0]) -> those compiles: another process's
    # output, not this run's own.
    reused_other_process: dict[str, list[str]] = field(default_factory=dict)
    # Of those, the compile ids whose hits reused what was compiled before a torch._dynamo.reset() that ran before them
    # (cache_hit_miss.log's [3/0] reused [1/0]'s): reset() throws compiled functions away, not what the caches hold.
    reused_across_reset: list[str] = field(default_factory=list)
    # Compile ids with a cache lookup whose compile failed (compile_error_fallback, compile_error_lowering): their
    # lookups missed, and yet nothing was compiled.
    failed: list[str] = field(default_factory=list)
    # Each bypass reason -> its number in bypass_reasons (from 1): a table row names its reasons by it, and each
    # reason's text is given once, with its count (cache_hit_miss.log: 3 lookups, one reason).
    reason_numbers: dict[str, int] = field(default_factory=dict)
    # Each bypass reason -> the rows (their CompileCache.label) with a lookup that bypassed for it, in the order they
    # ran: named as the table names them.
    compiles_by_reason: dict[str, list[str]] = field(default_factory=dict)

    def label_of(self) -> dict[str, str]:
        """Each row's compile id -> its label (CompileCache.label), for prose that names rows as the table does."""
        return {c.compile_id: c.label for c in self.compiles}

    def reason_number(self, reason: str) -> int:
        """A bypass reason's number in bypass_reasons (from 1)."""
        return self.reason_numbers[reason]

    def bypass_note(self, reason: str) -> str | None:
        """What a bypass reason means where torch's words do not say it (user_function_target, freezing's)."""
        return FREEZING_BYPASSES.get(reason) or user_function_target(reason)

    def reason_compiles(self, reason: str) -> list[str]:
        """The rows (as the table labels them) with a lookup that bypassed for this reason, in the order they ran."""
        return self.compiles_by_reason.get(reason, [])

    @property
    def overall_text(self) -> str:
        """What overall means, for people ("cold" is jargon), true to what was logged: a lookup never logged is not
        a miss, and a compile that failed compiled nothing."""
        overall = self.overall
        if self.failed and overall in ("cold", "mixed"):
            all_failed = overall == "cold" and len(self.failed) == len(self.compiles)
            overall += "_all_failed" if all_failed else "_some_failed"
        # (each compile named as its row is: the table's labels, not the attempts' ids)
        labels = self.label_of()

        def named(cid: str) -> str:
            return labels.get(cid) or compilation_key(cid)

        lookup = "cache lookup torch logged" if self.fx_unlogged else "cache lookup"
        text = _OVERALL_TEXTS[overall].format(lookup=lookup, failed=and_list([named(cid) for cid in self.failed]),
                                              missed=self._missed(lookup), reused=self._reused(named))
        others = [named(cid) for cid in self.fx_unlogged if cid not in self.fx_unlogged_restarted]
        if others:
            text += (f"; {and_list(others)} logged no FX graph cache lookup (torch logs one once Inductor has compiled "
                     "the graph)")
        # The caches each restarted attempt missed, found in one pass (not a scan of every compile per attempt: a log
        # of thousands of restarts was quadratic)
        missed_caches: dict[str, dict[str, None]] = {}
        for looked_up in self.compiles:
            if looked_up.compile_id in self.restarted_misses:
                caches_of = missed_caches.setdefault(looked_up.compile_id, {})
                caches_of.update(dict.fromkeys(e.cache for e in looked_up.events if e.outcome == "miss"))
        for attempt in dict.fromkeys([*self.restarted_misses, *self.fx_unlogged_restarted]):
            # (each attempt by its number, as Dynamic shapes says them: "[2/1]'s first attempt" restarted, "[2/1]'s
            # second attempt" compiled the frame; the rows' labels would say "[2/1]" of both)
            compiled = self.restarted_misses.get(attempt) or self.fx_unlogged_restarted[attempt]
            text += f"; {restarted_attempt_words(attempt)}"
            if attempt in self.restarted_misses:
                missed = and_list([CACHES[c] for c in missed_caches.get(attempt, {})])
                text += (f", missed the {missed}, but nothing it compiled was kept (no graph compiled anew: "
                         f"{attempt_words(compiled)} compiled the frame again)")
                if attempt in self.fx_unlogged_restarted:
                    text += ", and"
            if attempt in self.fx_unlogged_restarted:
                text += (" logged no FX graph cache lookup: Dynamo restarted it before Inductor had compiled its graph"
                         + ("" if attempt in self.restarted_misses else
                            f" ({attempt_words(compiled)} compiled the frame again)"))
        return text

    def _missed(self, lookup: str) -> str:
        """No lookup hit: "every cache lookup missed", or with lookups bypassed (a graph torch cannot cache), how many
        of each, as "every lookup missed" would not be true."""
        counts = self.kept_counts
        missed = sum(n.get("miss", 0) for n in counts.values())
        bypassed = sum(n.get("bypass", 0) for n in counts.values())
        if not bypassed:
            return f"every {lookup} missed"
        one = bypassed == 1
        return (f"no {lookup} hit ({missed} missed; {bypassed} {'was' if one else 'were'} bypassed, as torch could not "
                f"cache {'that graph' if one else 'those graphs'})")

    def _reused(self, named: Callable[[str], str]) -> str:
        """Whose output the hits reused: an earlier run's (from the cache dir), this run's own, or another process's
        of the same log."""
        in_run = sum(1 for c in self.compiles for e in c.events if e.outcome == "hit" and e.reused_from)
        other = sum(1 for c in self.compiles for e in c.events
                    if e.outcome == "hit" and e.reused_from in self.reused_other_process.get(c.compile_id, ()))
        hits = sum(n.get("hit", 0) for n in self.counts.values())
        across_reset = set(self.reused_across_reset)
        # (where every such hit reused another process's output, the words before the list say so once)
        own = "; ".join(f"{named(cid)} reused {and_list([named(s) for s in sources])}'s"
                        + self._whose(cid, sources, across_reset, other < in_run, named)
                        for cid, sources in self.reused_in_run.items())
        whose = (f"what {OTHER_PROCESS} had compiled" if other == in_run else
                 f"what this run, or {OTHER_PROCESS}, had compiled already" if other else
                 "what this run had compiled already")
        if in_run == 0:
            return "torch reused an earlier run's output"
        if in_run == hits:
            return f"torch reused {whose}: {own}" if own else f"torch reused {whose}"
        return f"torch reused an earlier run's output, and {whose}" + (f": {own}" if own else "")

    def _whose(self, cid: str, sources: list[str], across_reset: set[str], name_process: bool,
               named: Callable[[str], str]) -> str:
        """Who compiled what a compile's hits reused, where not this run after no reset: before a reset, or (where
        name_process) another process of the log."""
        if cid in across_reset:
            return RESET_KEEPS_CACHES
        others = self.reused_other_process.get(cid)
        if not others or not name_process:
            return ""
        if others == sources:
            return f", compiled by {OTHER_PROCESS}"
        owners = and_list([f"{named(source)}'s" for source in others])
        return f" ({owners} compiled by {OTHER_PROCESS})"

    @property
    def what_is_missing(self) -> str:
        """Which graphs of the served compiles the log lacks, said for one compile or many: an AOTAutograd cache hit
        skips Inductor's passes up to its post-grad ones (torch logs the cached forward or inference graph, post-grad
        graph, output code and provenance, not before_pre_grad_graph, after_pre_grad_graph, before/after_joint_graph
        and before_post_grad_graph: torch 2.14's cache_warm.log against cache_cold.log); an FX graph cache hit alone
        (AOTAutograd ran, or was bypassed) only Inductor's graph before its post-grad passes (torch 2.13's
        cache_warm.log, and rank 1 of the H100 DDP job)."""
        served = set(self.graphs_missing)  # (a set: a list's membership test per compile was quadratic)
        aot = any(e.cache == "aotautograd_cache" and e.outcome == "hit"
                  for c in self.compiles if c.compile_id in served for e in c.events)
        whose = "this compile's" if len(self.graphs_missing) == 1 else "each compile's"
        if aot:
            return ("the graph Inductor received and its graphs before its post-grad passes are not in this log "
                    f"({whose} forward or inference graph, post-grad graph and output code are)")
        return ("Inductor's graphs before its post-grad passes are not in this log for the graphs it loaded (their "
                "AOTAutograd graphs and output code are)")

    @property
    def served_labels(self) -> list[str]:
        """The compilations a cache served, each with how much of it where that was only part: "[0/0] (3 of 6 graphs)".
        Said by compilation as the other findings say them ("[0/0]" for Dynamo's restarted attempt [0/0_1]: only the
        attempt that compiled is served); graphs_missing keeps the attempts."""
        labels: dict[str, str] = {}
        for cid in self.graphs_missing:
            shown = compilation_key(cid)
            labels.setdefault(shown, f"{shown} ({self.partly_served[cid]})" if cid in self.partly_served else shown)
        return list(labels.values())

    def hits(self) -> dict[str, int]:
        """Cache label -> number of hits (for the "served from cache" note)."""
        return {CACHES[c]: n["hit"] for c, n in self.counts.items() if n.get("hit")}

    def __bool__(self) -> bool:
        return bool(self.compiles)

    @property
    def left_out(self) -> set[str]:
        """The compile ids whose lookups kept_counts leaves out: the attempts Dynamo restarted that missed
        (restarted_misses), unless every lookup was theirs (then none). The rank summary counts by it too."""
        if all(c.compile_id in self.restarted_misses for c in self.compiles):
            return set()
        return set(self.restarted_misses)

    @property
    def kept_counts(self) -> dict[str, dict[str, int]]:
        """counts without the lookups of the attempts Dynamo restarted that missed (left_out): those of the
        compiles whose work was kept. All of counts where every lookup was a restarted attempt's."""
        left_out = self.left_out
        if not left_out:
            return self.counts
        kept: dict[str, Counter[str]] = {}
        for compiled in self.compiles:
            if compiled.compile_id not in left_out:
                for e in compiled.events:
                    kept.setdefault(e.cache, Counter())[e.outcome] += 1
        return {cache: dict(n) for cache, n in kept.items()}

    @property
    def overall(self) -> str:
        """"warm" (all hits), "cold" (all misses), "mixed", "bypassed" or "none" (no cache lookups logged): of the
        lookups whose compile was kept (kept_counts)."""
        outcomes: Counter[str] = Counter()
        for per_cache in self.kept_counts.values():
            outcomes.update(per_cache)
        if not outcomes:
            return "none"
        if set(outcomes) == {"hit"}:
            return "warm"
        if "hit" not in outcomes and "miss" in outcomes:  # misses, some bypassed: nothing reused either
            return "cold"
        if set(outcomes) == {"bypass"}:
            return "bypassed"
        return "mixed"

    def to_json(self) -> dict[str, Any]:
        return {
            "overall": self.overall,
            "counts": self.counts,
            "time_saved_ms": round(self.time_saved_ms, 3),
            "bypass_reasons": [{"reason": r, "count": n, "note": self.bypass_note(r)} for r, n in self.bypass_reasons],
            "graphs_missing": self.graphs_missing,
            "partly_served": self.partly_served,
            "fx_unlogged": self.fx_unlogged,
            "fx_unlogged_restarted": self.fx_unlogged_restarted,
            "restarted_misses": self.restarted_misses,
            "reused_in_run": self.reused_in_run,
            "reused_across_reset": self.reused_across_reset,
            "reused_other_process": self.reused_other_process,
            "failed": self.failed,
            "compiles": [c.to_json() for c in self.compiles],
        }


def _graph(payload: dict) -> str | None:
    """"forward" or "backward": the graph an FX graph cache lookup was for, where its key's components say."""
    components = payload.get("components")
    for component in components if isinstance(components, list) else []:
        if isinstance(component, str) and (m := _IS_BACKWARD.match(component)):
            return "backward" if m[1] == "True" else "forward"
    return None


def _before_reset(source: Compile, entry: Compile) -> bool:
    """Whether source was compiled before a torch._dynamo.reset() that ran before entry. The reader numbers the frames
    after a reset on from the highest before it, keeping the id torch logged (Compile.logged_frame_id): entry's logged
    frame 0 is the first frame since its reset, and every lower frame came before that reset. Not where source is of
    another process (several processes' logs one after another): no reset ran between them."""
    if (entry.compile_id is None or source.compile_id is None or entry.logged_frame_id is None
            or not entry.renumbered_by_reset or source.process_start != entry.process_start):
        return False
    frame, earlier = entry.compile_id.frame_id, source.compile_id.frame_id
    return frame is not None and earlier is not None and earlier < frame - entry.logged_frame_id


def _other_process(source: Compile, entry: Compile) -> bool:
    """Whether source is of another process than entry (several processes' logs one after another: ingest/resets.py
    records each later process's pid and where its numbering starts)."""
    return (source.process_pid, source.process_start) != (entry.process_pid, entry.process_start)


def caches(trace: Trace) -> Caches:
    result = Caches()
    statuses = {str(cid): status for cid, status in compile_statuses(trace).items() if cid is not None}
    compiled_as = compiled_attempts(trace)
    counts: dict[str, Counter] = {c: Counter() for c in CACHES}
    reasons: Counter = Counter()
    lookups = [(entry, artifact, m, json_object(trace.payload_text(artifact.payload)))
               for entry in trace.sorted_compiles() for artifact in entry.artifacts
               if (m := _NAME.match(artifact.name))]
    # The first miss of each key, in log order: torch compiled that graph then, and wrote it to the cache.
    written: dict[tuple[str, str], tuple[int, str]] = {}
    for entry, artifact, m, payload in sorted(lookups, key=lambda found: found[1].lineno):
        key = payload.get("key")
        if m["outcome"] == "miss" and isinstance(key, str):
            written.setdefault((m["cache"], key), (artifact.lineno, entry.key))
    by_key = {entry.key: entry for entry in trace.sorted_compiles()}
    by_compile: dict[str, list[tuple[Any, re.Match, dict]]] = {}
    for entry, artifact, m, payload in lookups:
        by_compile.setdefault(entry.key, []).append((artifact, m, payload))
    for entry in trace.sorted_compiles():
        events = []
        reused: list[str] = []
        for artifact, m, payload in by_compile.get(entry.key, []):
            reason = payload.get("cache_bypass_reason")
            # (torch formats it over lines: "target flex_attention. \n Function module: ...": one line of words, so
            # that a table cell holds it and equal reasons count as one)
            reason = " ".join(str(reason).split()) if reason is not None else None
            saved = payload.get("time_saved_ms")
            event = CacheEvent(m["cache"], m["outcome"], str(reason) if reason is not None else None,
                               float(saved) if isinstance(saved, (int, float)) and not isinstance(saved, bool) else None,
                               _graph(payload) if m["cache"] == "fx_graph_cache" else None)
            key = payload.get("key")
            source = written.get((m["cache"], key)) if isinstance(key, str) else None
            if event.outcome == "hit" and source is not None and source[0] < artifact.lineno and source[1] != entry.key:
                event.reused_from = source[1]
                reused.append(source[1])
            events.append(event)
            counts[event.cache][event.outcome] += 1
            if event.outcome == "bypass":
                reasons[event.bypass_reason or "(no reason logged)"] += 1
            if event.time_saved_ms:
                result.time_saved_ms += event.time_saved_ms
        if events:
            label = restarted_attempt_label(entry.key) if statuses.get(entry.key) == RESTARTED else compilation_key(entry.key)
            result.compiles.append(CompileCache(entry.key, events, label=label))
            looked_up = {e.cache for e in events}
            if "aotautograd_cache" in looked_up and "fx_graph_cache" not in looked_up:
                result.fx_unlogged.append(entry.key)
                if statuses.get(entry.key) == RESTARTED and entry.key in compiled_as:
                    result.fx_unlogged_restarted[entry.key] = compiled_as[entry.key]
            if (statuses.get(entry.key) == RESTARTED and entry.key in compiled_as
                    and any(e.outcome == "miss" for e in events)):
                result.restarted_misses[entry.key] = compiled_as[entry.key]
            if compile_status(entry) == ERROR:
                result.failed.append(entry.key)
            if any(e.outcome == "hit" for e in events) and all(e.reused_from for e in events if e.outcome == "hit"):
                result.reused_in_run[entry.key] = list(dict.fromkeys(reused))
                if others := [source for source in result.reused_in_run[entry.key]
                              if _other_process(by_key[source], entry)]:
                    result.reused_other_process[entry.key] = others
                if all(_before_reset(by_key[source], entry) for source in reused):
                    result.reused_across_reset.append(entry.key)
            elif any(e.outcome == "hit" for e in events):
                result.graphs_missing.append(entry.key)
                graphs = [e.outcome for e in events if e.cache == "fx_graph_cache"]
                if "hit" in graphs and graphs.count("hit") < len(graphs):
                    result.partly_served[entry.key] = f"{graphs.count('hit')} of {len(graphs)} graphs"
    result.counts = {cache: dict(c) for cache, c in counts.items() if c}
    result.bypass_reasons = reasons.most_common()
    # Numbered and grouped once here, not per reason or per row where they are shown: a log of thousands of distinct
    # reasons (a local function's address in each) would otherwise cost reasons x compiles.
    result.reason_numbers = {reason: i for i, (reason, _) in enumerate(result.bypass_reasons, 1)}
    for compiled in result.compiles:
        shown = list(dict.fromkeys(compiled.bypass_reasons))
        compiled.reason_numbers = [result.reason_numbers[reason] for reason in shown]
        for reason in shown:
            result.compiles_by_reason.setdefault(reason, []).append(compiled.label)
    return result


def name_aoti_cache_rows(found: Caches, aoti: Aoti) -> None:
    """The rows of an AOTInductor package's build (no compile id: tlparse's [-/-]) labelled as every table names it
    (Aoti.compile_name: "AOTInductor package of aoti_deploy.py:41"), in the table and the bypass reasons."""
    name = aoti.compile_name(NO_COMPILE_ID)
    if name == NO_COMPILE_ID:
        return
    for row in found.compiles:
        if row.compile_id == NO_COMPILE_ID:
            row.label, row.names_package = name, True
    for reason, rows in found.compiles_by_reason.items():
        found.compiles_by_reason[reason] = [name if label == NO_COMPILE_ID else label for label in rows]


# AOTAutograd's cache keys a graph by its targets and gives up on a call_function target it cannot key
# (torch/_functorch/_aot_autograd/autograd_cache.py): "Unsupported call_function target <function scale_shift at
# 0x7f...>. Function module: __main__, Function name: scale_shift". A plain Python function there (not a torch op) is
# one the program put in the graph itself: torch.compiler.allow_in_graph (stance_deploy's scale_shift).
_FUNCTION_TARGET = lazy_compile(r"^Unsupported call_function target <function (?P<name>[^\s>]{1,300}) at 0x[0-9a-fA-F]{1,32}>\."
                              r"\s{0,20}Function module: (?P<module>[^,\s]{1,300})")


def user_function_target(reason: str) -> str | None:
    """What an AOTAutograd cache bypass at a plain Python function means; None for any other reason (a torch op's)."""
    m = _FUNCTION_TARGET.match(reason)
    if m is None or m["module"] == "torch" or m["module"].startswith("torch."):
        return None
    return (f"{m['name']} (module {m['module']}) is a plain Python function, not a torch op: one the program put in "
            "the graph itself (torch.compiler.allow_in_graph), which AOTAutograd's cache cannot key, so every graph "
            "that calls it bypasses that cache (the FX graph cache is still looked up). Without allow_in_graph, Dynamo "
            "traces into it and the graph holds its torch ops instead")


# C++ kernels compiled again under graphs the FX graph cache served, worth saying from this many seconds: a warm
# run with the same cache directory compiles a few (slow_compile_warm: one file, 0.24 s), one without it all of them.
KERNELS_AGAIN_WORTH_SAYING_S = 1.0
_ATTEMPT = lazy_compile(r"_\d{1,9}(?=\]$)")


@dataclass
class KernelsAgain:
    """Compiles the FX graph cache served that still compiled their kernels, and the seconds that took."""

    compile_ids: list[str] = field(default_factory=list)  # as compile times name them, in the log's order of hits
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"compile_ids": self.compile_ids, "seconds": self.seconds}


def kernels_compiled_again(ct: CompileTimes, found: Caches) -> KernelsAgain:
    """A hit gives Inductor's generated code; the compiled kernels are looked up in the run's own Inductor cache
    directory and compiled again where it lacks them (a warm start from torch.compiler.load_cache_artifacts into an
    empty one: stance_deploy_warm). The kernel compile phase of the compiles whose FX graph lookup hit."""
    # Each served compilation -> its place in the log's order of hits (a map: a list's membership test and index per
    # compile time were quadratic in a log of thousands of hits)
    served = {cid: i for i, cid in enumerate(dict.fromkeys(_ATTEMPT.sub("", c.compile_id) for c in found.compiles
                                                           if c.outcome("fx_graph_cache") == "hit"))}
    again = sorted((c for c in ct.compiles if _ATTEMPT.sub("", c.compile_id) in served and c.phases.get("kernel_compile")),
                   key=lambda c: served[_ATTEMPT.sub("", c.compile_id)])
    return KernelsAgain([c.compile_id for c in again], sum(c.phases["kernel_compile"] for c in again))

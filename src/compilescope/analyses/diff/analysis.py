"""Two runs compared: diff_runs takes two RunFacts section by section (SECTIONS) into a RunDiff, says which changes a
log read in part (or ended early) may explain, and compares frames, graph breaks, compile time, CUDA graph skips,
caches, failures and dynamic shapes itself; the other sections' changes come from the modules beside it. diff_report
pairs the ranks of two jobs and diffs each pair."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from ...wording import count, format_seconds, format_seconds_change, possessive
from ..caches import CACHES
from ..compile_time import PHASE_LABELS
from ..cudagraphs import NEVER_RECORDED
from ..dynamic_shapes import number_key, numbers_text, placement_text, read_placement
from ..status import MISSING, counts_text
from ..unread import Unread
from ..user_locations import UserLocation
from ..run_facts import RunFacts, short_path
from ..run_facts.words import break_at, crash_line, failed_compiles, place_text
from ..time_threshold import TimeThreshold
from . import COMPILES_KEPT, Change, DiffReport, RunDiff, SECTIONS, SideTotals
from .compiled_code import (aoti_changes, checkpointing_changes, cudagraph_use_changes, export_dim_changes,
                            numerics_changes, user_kernel_changes)
from .crash_and_warnings import crash_changes, warning_changes
from .environment import config_changes, moved_onto, relocated_files, say_library_changes, step_changes, torch_changed
from .frames import (afresh_text, avoidable_text, diff_graphs, frame_detail, frames_label, graphs_in_all, guard_words,
                     late_hook_changes, multiset_diff, recompiles_in_all, still_failing)
from .timing import autotuning_changes, cache_cause, compile_row_text, runtime_changes, served_yet_compiled, torch_cause, where_time_went


# Said after a break torch's own code makes on purpose (GraphBreak.by_torch: the optimizer's graph_break() in
# _use_grad): it comes and goes with what of torch's code is compiled, and no line of the program makes it.
BY_TORCH_GONE = (" (PyTorch's own break, made on purpose: B compiled none of the code that reaches it; not a break of "
                 "your code)")
BY_TORCH_NEW = " (PyTorch's own break, made on purpose: nothing in your code to change)"


def _break_key(b: dict) -> tuple:
    return (b["reason"], b["file"], b["line"])


def diff_runs(a: RunFacts, b: RunFacts, threshold: TimeThreshold = TimeThreshold(),
              sides: tuple[str, str] = ("A", "B")) -> RunDiff:
    """sides: what the compile time's cause calls the runs (`check` says "the baseline" and "the run")."""
    moved = relocated_files(a, b)
    if moved:
        b = moved_onto(b, moved)
    result = RunDiff(a, b, threshold)
    changes = result.changes
    if moved:
        named = "; ".join(f"{path} as {other}" for path, other in list(moved.items())[:2])
        more = f" and {count(len(moved) - 2, 'more file')}" if len(moved) > 2 else ""
        result.notes.append(f"{sides[1]} ran its files from another directory: matched by name ({named}{more})")
    changes.extend(crash_changes(a, b))

    # Environment: the versions and the GPU (where both logs say), then config keys whose values differ.
    config = config_changes(a, b) if a.config and b.config else []
    if torch_changed(a, b):
        # A log holds every option's value, set or not: across two torch versions, an option whose value differs
        # may be one whose default changed, which the user did not touch. Said once, where the versions are.
        values = [c.detail["renamed"]["b"] if "renamed" in c.detail else c.title.split(":")[0].removeprefix("config ")
                  for c in config if c.a is not None and c.b is not None and c.a != c.b]
        hedge = ("" if not values else " (the config value below that differs may be one of the versions' own defaults, "
                 "unless the program sets it)" if len(values) == 1 else f" (the {len(values)} config values below that differ may be the "
                 "versions' own defaults, unless the program sets them)")
        changes.append(Change(
            "environment", "changed", f"torch: {a.torch_version} → {b.torch_version}{hedge}", None,
            a.torch_version, b.torch_version, {"config_defaults_may_differ": values} if values else {}))
    for what in ("Python", "CUDA", "Triton", "GPU"):
        va, vb = a.ran_on.get(what), b.ran_on.get(what)
        if va and vb and va != vb:
            changes.append(Change("environment", "changed", f"{what}: {va} → {vb}", None, va, vb))
    if torch_changed(a, b):
        changes.extend(step_changes(a, b))
    changes.extend(config)

    # Frames.
    only_a = [k for k in a.frames if k not in b.frames]
    only_b = [k for k in b.frames if k not in a.frames]
    result.matched_frames = [k for k in a.frames if k in b.frames]
    for k in only_a:
        f = a.frames[k]
        changes.append(Change("frames", "removed", f"{f.label} compiled only in A ({count(len(f.compile_ids), 'compile')})",
                              k, len(f.compile_ids), None, frame_detail(a, f)))
    for k in only_b:
        f = b.frames[k]
        changes.append(Change("frames", "added", f"{f.label} compiled only in B ({count(len(f.compile_ids), 'compile')})",
                              k, None, len(f.compile_ids), frame_detail(b, f)))

    changes.extend(recompiles_in_all(a, b, only_a, only_b))
    if not result.matched_frames:
        changes.extend(graphs_in_all(a, b, only_a, only_b))

    # Per matched frame: compiles, recompiles, new guard failures, statuses, graphs.
    for k in result.matched_frames:
        fa, fb = a.frames[k], b.frames[k]
        label = frames_label(fa, fb)
        if len(fa.compile_ids) != len(fb.compile_ids):
            gone, new = multiset_diff(fa.guard_failures, fb.guard_failures)
            # The run with fewer compiles whose last one failed: a failure torch suppressed (suppress_errors, a
            # graph break it cannot resume from) makes Dynamo run the code uncompiled from then on, so the guards
            # the other run recompiled for were never checked there: not a fix of what made them fail.
            fewer, side = (fb, "B") if len(fb.compile_ids) < len(fa.compile_ids) else (fa, "A")
            stopped = fewer.compile_ids[-1] if fewer.statuses and fewer.statuses[-1] == "error" else None
            said = (f": {possessive(side)} last compile of {fewer.function_words}, {stopped}, failed, and {side} compiled it no "
                    "more" if stopped else "")
            # (compiles that are no recompile: torch._dynamo.reset() made the program compile the function from scratch)
            said += "".join(f"; {afresh_text(side_, f)}" for side_, f in (("A", fa), ("B", fb)) if f.afresh)
            changes.append(Change(
                "recompiles", "changed",
                f"{label}: {len(fa.compile_ids)} → {len(fb.compile_ids)} compiles ({fa.recompiles} → {fb.recompiles} "
                f"recompiles{avoidable_text(fa, fb)}){said}",
                k, len(fa.compile_ids), len(fb.compile_ids),
                {"recompiles_a": fa.recompiles, "recompiles_b": fb.recompiles,
                 "avoidable_a": fa.avoidable_recompile_ids, "avoidable_b": fb.avoidable_recompile_ids,
                 **({"afresh_a": fa.afresh, "afresh_b": fb.afresh, "afresh_cached_a": fa.afresh_cached,
                     "afresh_cached_b": fb.afresh_cached} if fa.afresh or fb.afresh else {}),
                 "new_guard_failures": new, "gone_guard_failures": gone, **guard_words(fa, fb, new + gone),
                 **still_failing(fa, fb, gone, new),
                 **({"stopped_after_failure": {"side": side, "compile_id": stopped}} if stopped else {})}))
        else:
            gone, new = multiset_diff(fa.guard_failures, fb.guard_failures)
            if new or gone:
                avoidable = avoidable_text(fa, fb)
                changes.append(Change("recompiles", "changed", f"{label}: recompiles for another guard"
                                      + (f" ({avoidable[2:]})" if avoidable else ""), k,
                                      fa.guard_failures, fb.guard_failures,
                                      {"new_guard_failures": new, "gone_guard_failures": gone,
                                       "avoidable_a": fa.avoidable_recompile_ids,
                                       "avoidable_b": fb.avoidable_recompile_ids,
                                       **guard_words(fa, fb, new + gone), **still_failing(fa, fb, gone, new)}))
        sa, sb = Counter(fa.statuses), Counter(fb.statuses)
        if (sa, len(fa.no_graph)) != (sb, len(fb.no_graph)) and len(fa.compile_ids) == len(fb.compile_ids):
            changes.append(Change("recompiles", "changed", f"{label}: outcomes: {fa.outcomes} → {fb.outcomes}", k,
                                  dict(sa), dict(sb),
                                  {"no_graph_a": fa.no_graph, "no_graph_b": fb.no_graph}
                                  if fa.no_graph or fb.no_graph else {}))
        changes.extend(diff_graphs(label, k, fa, fb, (a, b)))
    changes.extend(late_hook_changes(a, b))

    # Graph breaks: added, removed, moved (same reason in the same function, another line).
    ka = {_break_key(x): x for x in a.graph_breaks}
    kb = {_break_key(x): x for x in b.graph_breaks}
    removed = [ka[k] for k in ka if k not in kb]
    added = [kb[k] for k in kb if k not in ka]
    for r in list(removed):
        match = next((x for x in added if x["reason"] == r["reason"] and x["file"] == r["file"]
                      and (x["function"] == r["function"] or (x["code"] and x["code"] == r["code"]))), None)
        if match is not None:
            removed.remove(r)
            added.remove(match)
            changes.append(Change("graph_breaks", "moved",
                                  f"graph break moved: {r['reason']} ({short_path(r['file'])}:{r['line']} → {match['line']})",
                                  match.get("frame") or r.get("frame"), r, match))
    # torch's own breaks (by_torch) come after the program's, and say so: one gone is no fix of the program's.
    for x in sorted(removed, key=lambda x: bool(x.get("by_torch"))):
        changes.append(Change("graph_breaks", "removed",
                              f"graph break gone: {x['reason']} {break_at(x)}{BY_TORCH_GONE if x.get('by_torch') else ''}",
                              x.get("frame"), x, None))
    for x in sorted(added, key=lambda x: bool(x.get("by_torch"))):
        changes.append(Change("graph_breaks", "added",
                              f"new graph break: {x['reason']} {break_at(x)}{BY_TORCH_NEW if x.get('by_torch') else ''}",
                              x.get("frame"), None, x))
    for bk in (k for k in ka if k in kb):  # (in A's order: a set's changed with the interpreter's string hashes)
        if ka[bk]["count"] != kb[bk]["count"]:
            changes.append(Change("graph_breaks", "changed", f"graph break {bk[0]} {break_at(kb[bk])}: hit "
                                  f"{ka[bk]['count']} → {kb[bk]['count']} times", kb[bk].get("frame") or ka[bk].get("frame"),
                                  ka[bk], kb[bk]))  # (each side's break with its count, as docs/diff-schema.md says:
                                                    # where it is and its code, which the page shows under it)

    # Caches: outcomes per cache, of the frames compiled in both runs (a frame compiled in one run only
    # brings its own lookups; they are listed with it, not as a change of cache behaviour).
    def cache_totals(facts: RunFacts) -> dict[str, dict[str, int]]:
        total: dict[str, Counter] = {}
        for k in result.matched_frames:
            for cache, outcomes in facts.frames[k].caches.items():
                total.setdefault(cache, Counter()).update(outcomes)
        return {c: dict(n) for c, n in total.items()}

    totals_a, totals_b = cache_totals(a), cache_totals(b)

    # Compile time: total, per phase, and which compiles account for it (only beyond the noise threshold).
    upgraded = torch_changed(a, b)
    if threshold.significant(a.compile_time_s, b.compile_time_s):
        phases = []
        for phase in sorted(set(a.phases) | set(b.phases), key=list(PHASE_LABELS).index):
            pa, pb = a.phases.get(phase, 0.0), b.phases.get(phase, 0.0)
            if threshold.significant(pa, pb):
                # One label for both runs: each run's, where they agree (a CPU run against a GPU run: the default)
                label_a, label_b = (run.phase_labels.get(phase, PHASE_LABELS[phase]) for run in (a, b))
                phases.append({"phase": phase, "label": label_a if label_a == label_b else PHASE_LABELS[phase],
                               "a_s": pa, "b_s": pb, "delta_s": round(pb - pa, 6)})
        compiles: list[dict[str, Any]] = []
        for k in set(a.frames) | set(b.frames):
            frame_a, frame_b = a.frames.get(k), b.frames.get(k)  # None: the frame compiled in one run only
            n = max(len(frame_a.compile_s) if frame_a else 0, len(frame_b.compile_s) if frame_b else 0)
            for i in range(n):
                ta = frame_a.compile_s[i] if frame_a and i < len(frame_a.compile_s) else 0.0
                tb = frame_b.compile_s[i] if frame_b and i < len(frame_b.compile_s) else 0.0
                cid_a = frame_a.compile_ids[i] if frame_a and i < len(frame_a.compile_ids) else None
                cid_b = frame_b.compile_ids[i] if frame_b and i < len(frame_b.compile_ids) else None
                compiles.append({"frame": k, "compile_a": cid_a, "compile_b": cid_b, "a_s": ta, "b_s": tb,
                                 "delta_s": round(tb - ta, 6)})
        compiles.sort(key=lambda c: -abs(c["delta_s"]))
        failed_by_side = ({f["compile_id"] for f in a.failures}, {f["compile_id"] for f in b.failures})
        for row in compiles[:COMPILES_KEPT]:  # (the words the terminal and the page say of each, and --json has)
            row["text"] = compile_row_text(row, failed_by_side, sides)
        changes.append(Change("compile_time", "changed",
                              f"compile time {format_seconds(a.compile_time_s)} → {format_seconds(b.compile_time_s)} "
                              f"({format_seconds_change(b.compile_time_s - a.compile_time_s)})", None, a.compile_time_s, b.compile_time_s,
                              {"phases": phases, "compiles": compiles[:COMPILES_KEPT],
                               "compiles_more": max(len(compiles) - COMPILES_KEPT, 0),
                               "cause": cache_cause(a, b, totals_a, totals_b, sides) or (
                                   torch_cause(a, b, phases, sides) if upgraded else None)}))
    elif a.compile_time_s != b.compile_time_s:
        # A run the caches served and that took as long says why: what served it, and what it compiled all the same
        served = served_yet_compiled(a, b, totals_a, totals_b, sides)
        went = where_time_went(a, b, sides)
        result.notes.append(threshold.not_a_change("compile time", a.compile_time_s, b.compile_time_s)
                            + (f"; {served}" if served else "") + (f"; {went}" if went else ""))

    changes.extend(autotuning_changes(a, b, threshold, result))

    # CUDA graphs: compiles run without them in one run only (of the frames compiled in both), by reason.
    # A graph never recorded is one fact, whether or not that run's stderr said why (a backward left pending): the
    # runs compare on it, and each says its own reason.
    def skip_key(x: dict[str, Any]) -> tuple[str, str]:
        return x["frame"], NEVER_RECORDED if x.get("never_recorded") else x["reason"]

    reason_a = {skip_key(x): x["reason"] for x in a.cudagraph_skips}
    reason_b = {skip_key(x): x["reason"] for x in b.cudagraph_skips}
    gone_keys, new_keys = multiset_diff([skip_key(x) for x in a.cudagraph_skips if x["frame"] in result.matched_frames],
                                        [skip_key(x) for x in b.cudagraph_skips if x["frame"] in result.matched_frames])
    gone = [(key[0], reason_a[key]) for key in gone_keys]
    new = [(key[0], reason_b[key]) for key in new_keys]
    for frame_key_, reason in new:
        before = next((g for g in gone if g[0] == frame_key_), None)
        if before is not None:  # without CUDA graphs in both runs, for another reason
            gone.remove(before)
            changes.append(Change("cudagraphs", "changed", f"CUDA graphs still not used, now: {reason}", frame_key_,
                                  {"frame": frame_key_, "reason": before[1]}, {"frame": frame_key_, "reason": reason}))
            continue
        changes.append(Change("cudagraphs", "added", f"CUDA graphs skipped in B: {reason}", frame_key_, None,
                              {"frame": frame_key_, "reason": reason}))
    for frame_key_, reason in gone:
        changes.append(Change("cudagraphs", "removed", f"CUDA graphs no longer skipped: {reason}", frame_key_,
                              {"frame": frame_key_, "reason": reason}, None))
    changes.extend(cudagraph_use_changes(a, b, result))

    # Caches: outcomes per cache, of the frames compiled in both runs (totals_a, totals_b, above).
    for cache in sorted(set(totals_a) | set(totals_b)):
        ca, cb = totals_a.get(cache, {}), totals_b.get(cache, {})
        if ca != cb:
            fmt = lambda c: ", ".join(count(n, o) for o, n in sorted(c.items())) or "no lookups"  # noqa: E731
            changes.append(Change("caches", "changed", f"{CACHES.get(cache, cache)}: {fmt(ca)} → {fmt(cb)}", None, ca, cb))

    # Failures.
    key_f = lambda x: (x["frame"], x["type"], x["reason"])  # noqa: E731
    fa_keys, fb_keys = {key_f(x): x for x in a.failures}, {key_f(x): x for x in b.failures}
    # Which compiles failed so (one key: the same error in the same frame, at each of its compiles): the title names
    # them as check's rules do ("new failure: [0/0] f (diff_pair.py:30): ...").
    def failed_ids(fk: tuple, facts: RunFacts) -> list[str]:
        return [y["compile_id"] for y in facts.failures if key_f(y) == fk and y.get("compile_id")]
    for fk, x in fa_keys.items():
        if fk not in fb_keys:
            gone_ids = failed_ids(fk, a)
            changes.append(Change("failures", "removed", f"failure gone: {failed_compiles(a, x, gone_ids)}",
                                  x.get("frame"), x, None, {"compile_ids": gone_ids}))
    for fk, x in fb_keys.items():
        if fk not in fa_keys:
            failed = failed_ids(fk, b)
            frame = b.frames.get(x["frame"]) if x.get("frame") else None
            changes.append(Change("failures", "added", f"new failure: {failed_compiles(b, x, failed)}",
                                  x.get("frame"), None, x,
                                  {"compile_ids": failed, "function": frame.label if frame is not None else None}))
    # (after the failures: a warning that reports a failure gone or new is said with it)
    changes.extend(warning_changes(a, b, result, changes))

    # Dynamic shapes: symbols by source, specializations by sources and value.
    def matched(x: dict) -> bool:  # decisions inside a frame compiled in one run only belong to that frame's line
        return x.get("frame") is None or x["frame"] in result.matched_frames

    # A symbol is keyed by its source and line, and by whether the frame's first compile made it
    # (mark_dynamic, dynamic=True) or a recompile did (automatic dynamic, after a size changed).
    # (an unbacked symbol AOTAutograd made again is the one Dynamo made: dynamic_shapes.SymbolCreated.retrace_of)
    sym_a = [(sym["source"], sym["file"], sym["line"], sym.get("first_compile")) for sym in a.symbols
             if matched(sym) and not sym.get("retrace_of")]
    sym_b = [(sym["source"], sym["file"], sym["line"], sym.get("first_compile")) for sym in b.symbols
             if matched(sym) and not sym.get("retrace_of")]
    torch_lines = {(s["source"], s["file"], s["line"]): s.get("torch_line") for s in [*a.symbols, *b.symbols]}
    placed = lambda s: place_text(s[1], s[2], torch_lines.get(s[:3]))  # noqa: E731
    # A name Dynamo made (a resume function's L['___stack0']) is said as the user's code has it; it is keyed by the name
    # still (the facts of an older run lack the words), and its words by the name and the line that used it: another
    # resume function's ___stack0 is another value.
    in_words: dict[tuple, str] = {(s["source"], s["file"], s["line"]): s["source_text"]
                                  for s in [*a.symbols, *b.symbols] if s.get("source_text")}
    in_words.update(((src, x["file"], x["line"]), text) for x in [*a.specializations, *b.specializations]
                    for src, text in (x.get("described_sources") or {}).items())

    # An unbacked symbol has no source (a value the program read from a tensor: .item(), .tolist()): it is said by its
    # name, which the symbols of one line share in each run, and keyed by its line.
    unbacked_names: dict[tuple, str] = {}
    for s in [*a.symbols, *b.symbols]:
        if s["source"] is None and s.get("symbol"):
            unbacked_names.setdefault((s["file"], s["line"]), s["symbol"])

    def words(source: str | None, file: str | None, line: int | None) -> str:
        if source is None:
            name = unbacked_names.get((file, line))
            return f"a data-dependent value ({name}, unbacked)" if name else "a data-dependent value (unbacked)"
        return in_words.get((source, file, line), source)

    def with_words(fact: dict[str, Any], source: str, file: str | None, line: int | None) -> dict[str, Any]:
        said = in_words.get((source, file, line))
        return {**fact, "source_text": said} if said else fact

    gone, new = multiset_diff(sym_a, sym_b)
    when = lambda first: "from the first compile" if first else "after a recompile"  # noqa: E731
    for s in list(gone):
        other = next((x for x in new if x[:3] == s[:3]), None)
        if other is not None:
            gone.remove(s)
            new.remove(other)
            changes.append(Change("dynamic_shapes", "changed", f"{words(*s[:3])} dynamic {when(other[3])} (was {when(s[3])}; "
                                  f"{placed(s)})", None, with_words({"source": s[0], "first_compile": s[3]}, *s[:3]),
                                  with_words({"source": s[0], "first_compile": other[3]}, *s[:3])))
    # (one change per symbol, with how many: each recompile of a frame makes its symbols again)
    # (the lines do not say which compile made it: one line for a symbol made by the first compile and again by a recompile)
    for s, n in Counter(x[:3] for x in gone).items():
        changes.append(Change("dynamic_shapes", "removed", f"dynamic symbol for {words(*s[:3])} removed ({placed(s)})"
                              + (f" (×{n})" if n > 1 else ""), None,
                              with_words({"source": s[0], "file": s[1], "line": s[2]}, *s[:3]), None))
    for s, n in Counter(x[:3] for x in new).items():
        changes.append(Change("dynamic_shapes", "added", f"new dynamic symbol for {words(*s[:3])} ({placed(s)})"
                              + (f" (×{n})" if n > 1 else ""), None, None,
                              with_words({"source": s[0], "file": s[1], "line": s[2]}, *s[:3])))
    changes.extend(_unbacked_in_unmatched_frames(a, b, matched))

    def spec_placed(x: dict[str, Any]) -> str:
        """Where a specialization is, as the report places it (dynamic_shapes.read_placement): "at prog.py:3"; where
        torch logged no line for it, what was read and where."""
        location = UserLocation(x["file"], x["line"], x.get("function")) if x["file"] else None
        torch_location = UserLocation(**x["torch_location"]) if x.get("torch_location") else None
        return placement_text(read_placement(x.get("read_text"), location, torch_location)) or "location not in the log"

    places = {side: {(tuple(x["sources"]), x["file"], x["line"]): spec_placed(x) for x in facts.specializations}
              for side, facts in (("removed", a), ("added", b))}
    spec_a = [(tuple(s["sources"]), s["value"], s["file"], s["line"]) for s in a.specializations if matched(s)]
    spec_b = [(tuple(s["sources"]), s["value"], s["file"], s["line"]) for s in b.specializations if matched(s)]
    gone, new = multiset_diff(spec_a, spec_b)
    # (one change per source and place, with every value: a compiled optimizer step specialized its learning rate
    # at each of five values, which one fix, a tensor lr, undoes)
    for specs, kind, verb in ((gone, "removed", "no longer specialized"), (new, "added", "now specialized")):
        by_place: dict[tuple, list[str]] = {}
        for sources, value, file, line in specs:
            by_place.setdefault((sources, file, line), []).append(value)
        for (sources, file, line), values in by_place.items():
            shown = _values_text(values)
            spec = {"sources": list(sources), "value": values[0], "values": values, "file": file, "line": line}
            changes.append(Change("dynamic_shapes", kind, f"{verb}: {', '.join(words(src, file, line) for src in sources)} = {shown} ({places[kind][(sources, file, line)]})",
                                  None, spec if kind == "removed" else None, spec if kind == "added" else None))
    changes.extend(export_dim_changes(a.export_dims, b.export_dims))
    changes.extend(aoti_changes(a.aoti_packages, b.aoti_packages))
    changes.extend(user_kernel_changes(a.user_kernels, b.user_kernels))
    changes.extend(checkpointing_changes(a, b))
    changes.extend(numerics_changes(a, b))
    changes.extend(runtime_changes(a, b, result, sides))
    # In the order of SECTIONS, as `sections` lists them and the terminal and page show them (stable: in each
    # section, the order found).
    say_library_changes(a, b, result)
    changes.sort(key=lambda c: SECTIONS.index(c.section))
    # A log read only in part (cut off, corrupt lines): what it lacks may look like a change, so the diff says so,
    # first, and marks each change where that side has less (a frame, compiles, a break past a cut).
    # A log that ends while a compile ran (a killed job's, whole to its last line), or at a crash, lacks what came
    # after in the same way.
    for side, facts, other in (("A", a, b), ("B", b, a)):
        if not facts.unread and not facts.ends_during and facts.crash is None:
            continue
        not_read = Unread.from_json(facts.unread) if facts.unread else None
        marked = 0
        if (not_read is not None and not_read.records_lost) or facts.ends_during or facts.crash is not None:
            for change in changes:
                if change.unread_side is None and _may_be_unread(change, side, facts, other):
                    change.unread_side = side
                    marked += 1
        said = f"; the {count(marked, 'change')} it may explain {'says' if marked == 1 else 'say'} so" if marked else ""
        if not_read is not None:
            result.partial.append(f"{possessive(side)} log was not read in full ({not_read.describe()}): the diff compares what "
                                  f"was read, so what {side} logged past that is missing and may show below as a change "
                                  "(fewer compiles, a guard no longer failing)" + said)
            said = ""
        if facts.crash is not None:  # (a crash while compiling also ends during a compile: the crash says why)
            ends = f"{facts.ends_during}, " if facts.ends_during else ""
            result.partial.append(f"{possessive(side)} log ends {ends}where the program crashed ({crash_line(facts.crash)}): "
                                  "what it would have done after is not in the log and may show below as a change"
                                  + said)
        elif facts.ends_during:
            result.partial.append(f"{possessive(side)} log ends {facts.ends_during} (the program was stopped, crashed or was "
                                  "killed while compiling): what it did after is not in the log and may show below as "
                                  "a change" + said)
    return result


def _values_text(values: list[str]) -> str:
    """The values a source was specialized to, each once: "0.25 (×3)" where three compiles specialized it to one value
    (a layer's constant, read again by each recompile), "2 values: 0.1 (×2), 0.2"; not "3 values: 0.25, 0.25, 0.25"."""
    # (by the value, not the form shown: "0.250000000000000" and "0.25" are one, 0.001 and 0.0009999999753 two)
    seen = Counter(number_key(v) for v in values)
    first = {number_key(v): v for v in reversed(values)}
    texts = numbers_text(first.values())
    shown = [texts[first[key]] + (f" (×{seen[key]})" if seen[key] > 1 else "") for key in seen]
    return shown[0] if len(shown) == 1 else f"{len(shown)} values: {', '.join(shown)}"


def _may_be_unread(change: Change, side: str, facts: RunFacts, other: RunFacts) -> bool:
    """Whether what side's log did not read may explain change: that side has less of what it names, or it is a frame
    of that side only whose first line is unknown (its compile's metrics were not read) while the other side compiled
    a frame of that file and function: one frame, seen as two.

    A graph, and the code made of it, of a compile that ended (its metrics read) was logged before the cut, whole:
    its nodes and kernels are what the run made. Only a compile that had not ended, or one the cut left out (fewer
    graphs), may lack them."""
    frame = facts.frames.get(change.frame or "")
    if change.section == "frames":
        return _side_with_less(change) == side or (frame is not None and frame.first_line is None and any(
            f.filename == frame.filename and f.function == frame.function for f in other.frames.values()))
    if _side_with_less(change) != side:
        return False
    if change.section == "graphs" and frame is not None:
        ended = [status != MISSING for status in frame.statuses]
        if "graph" in change.detail:  # one graph's nodes: that compile's
            compile_id = change.detail[f"compile_{side.lower()}"]
            return compile_id not in frame.compile_ids or not ended[frame.compile_ids.index(compile_id)]
        if isinstance(change.a, dict):  # the frame's kernels, all its graphs'
            other_frame = other.frames.get(change.frame or "")
            return not all(ended) or (other_frame is not None and len(frame.graphs) < len(other_frame.graphs))
    return True


def _side_with_less(change: Change) -> str | None:
    """"A" or "B": the side that has less of what a change names (a frame, break or failure it lacks, fewer compiles,
    graphs, kernels, cache lookups or seconds), else None (another value, a move, the environment: none a cut
    makes)."""
    if change.section == "environment" or change.kind == "moved":
        return None
    a, b = change.a, change.b
    if change.section == "recompiles" and isinstance(a, dict) and isinstance(b, dict):
        # Outcomes: a compile whose metrics lay past a cut ends "without metrics"; the side with fewer ends has less.
        a, b = ({status: n for status, n in x.items() if status != MISSING} for x in (a, b))
    if change.section == "graph_breaks" and change.kind == "changed":  # (a break hit fewer times has less)
        a, b = a["count"], b["count"]
    if a == b:
        return None
    if a is None or b is None:
        return "A" if a is None else "B"
    if _at_most(a, b):
        return "A"
    if _at_most(b, a):
        return "B"
    return None


def _unbacked_in_unmatched_frames(a: RunFacts, b: RunFacts, matched: Callable[[dict], bool]) -> list[Change]:
    """The data-dependent values (unbacked symbols: .item(), a boolean mask's count) that one run traced into its graph
    in functions the other did not compile: a rewrite (torch.cond, capture_scalar_outputs) makes one function of a
    function and the resume functions its graph breaks made, so no frame matches and the frames' symbols are not
    compared; each by its line, where the other run made none at that line."""
    def unbacked(facts: RunFacts) -> list[dict]:
        return [s for s in facts.symbols if s["source"] is None and s.get("unbacked") and not s.get("retrace_of")
                and s.get("symbol") and not matched(s)]

    found = []
    for side, here, there, kind in (("B", b, a, "added"), ("A", a, b, "removed")):
        lines_there = {(s["file"], s["line"]) for s in there.symbols if s["source"] is None and s.get("unbacked")}
        shown: dict[tuple[Any, Any], dict] = {}
        for s in unbacked(here):
            if (s["file"], s["line"]) not in lines_there:
                shown.setdefault((s["file"], s["line"]), s)
        if not shown:
            continue
        said = ", ".join(f"{s['symbol']} {place_text(s['file'], s['line'], s.get('torch_line'))}" for s in shown.values())
        title = (f"data-dependent values traced into the graph only in {side}, not breaking it: {count(len(shown), 'unbacked symbol')}, "
                 f"{said} (in functions compiled only in {side})")
        values = [{"symbol": s["symbol"], "file": s["file"], "line": s["line"]} for s in shown.values()]
        found.append(Change("dynamic_shapes", kind, title, None, values if kind == "removed" else None,
                            values if kind == "added" else None))
    return found


def _at_most(x: Any, y: Any) -> bool:
    """x is no more than y: a number, counts by name ({"hit": 3}), or a list as a multiset (failing guards)."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if number(x) and number(y):
        return x <= y
    if isinstance(x, dict) and isinstance(y, dict) and all(map(number, [*x.values(), *y.values()])):
        return all(n <= y.get(k, 0) for k, n in x.items())
    if isinstance(x, list) and isinstance(y, list) and all(isinstance(v, str) for v in [*x, *y]):
        return not Counter(x) - Counter(y)
    return False


def side_totals(facts: dict[int | None, RunFacts]) -> SideTotals:
    statuses: Counter[str] = Counter()
    for f in facts.values():
        statuses.update(f.compile_statuses or Counter(s for frame in f.frames.values() for s in frame.statuses))
    no_graph = sum(f.no_graph_compiles if f.compile_statuses else sum(len(frame.no_graph) for frame in f.frames.values())
                   for f in facts.values())
    return SideTotals(
        len(facts), len({key for f in facts.values() for key in f.frames}),
        sum(len(frame.compile_ids) for f in facts.values() for frame in f.frames.values()),
        round(sum(f.compile_time_s for f in facts.values()), 6),
        sorted({f.torch_version for f in facts.values() if f.torch_version}),
        sum(statuses.values()), counts_text(statuses, no_graph))


def diff_report(source_a: str, source_b: str, facts_a: dict[int | None, RunFacts], facts_b: dict[int | None, RunFacts],
                threshold: TimeThreshold = TimeThreshold(), not_read_a: dict[int, str] | None = None,
                not_read_b: dict[int, str] | None = None) -> DiffReport:
    """Ranks matched by number; a single log on either side is compared with rank 0 (or the only rank) of the other.
    not_read_a/b: ranks of that side whose log could not be read (rank -> why)."""
    pairs = paired_ranks(facts_a, facts_b)
    not_read_a, not_read_b = dict(not_read_a or {}), dict(not_read_b or {})
    unpaired = {r for r, _, _ in pairs} | set(not_read_a) | set(not_read_b)  # an unread rank is not "only in" a side
    return DiffReport(source_a, source_b, [(r, diff_runs(fa, fb, threshold)) for r, fa, fb in pairs],
                      side_totals(facts_a), side_totals(facts_b),
                      sorted(r for r in facts_a if r is not None and r not in unpaired),
                      sorted(r for r in facts_b if r is not None and r not in unpaired), not_read_a, not_read_b)


def paired_ranks(facts_a: dict[int | None, RunFacts],
                 facts_b: dict[int | None, RunFacts]) -> list[tuple[int | None, RunFacts, RunFacts]]:
    """The ranks of two runs to compare, as (rank, a's facts, b's facts), by rank number. A single log on either side
    stands for the lowest rank of the other; two single logs are one pair (rank None unless both name one rank)."""
    if len(facts_a) == 1 and len(facts_b) == 1:
        (ra, fa), (rb, fb) = next(iter(facts_a.items())), next(iter(facts_b.items()))
        return [(ra if ra == rb else None, fa, fb)]
    if list(facts_a) == [None]:
        facts_a = {min(facts_b, key=lambda r: r or 0): facts_a[None]}
    elif list(facts_b) == [None]:
        facts_b = {min(facts_a, key=lambda r: r or 0): facts_b[None]}
    return [(r, facts_a[r], facts_b[r]) for r in sorted((r for r in facts_a if r in facts_b), key=lambda r: r or 0)]

"""Time: why compile time changed (warm caches, a torch upgrade, autotuning), max-autotune's searches and winners,
and the run time of two runs' profiles (kernel time per call, GPU idle share, against each profile's eager part)."""

from __future__ import annotations

import math
from typing import Any

from ...wording import and_list, count, first_listed, format_kernel_time, format_seconds, format_seconds_change, format_us, possessive
from ..autotuning import config_items
from ..caches import CACHES
from ..compile_time import PHASE_LABELS
from ..run_facts import RunFacts
from ..time_threshold import TimeThreshold
from . import Change, RunDiff


# Two profiles of one program differ by a few percent from run to run: a graph's kernel time per call, or the GPU time
# per call, is a change from this ratio on; the GPU's idle share from this many points.
RUNTIME_RATIO = 1.2
RUNTIME_IDLE_POINTS = 0.10
ONE_PROFILE_GRAPHS = 4  # the graphs that ran in one profile only a note names, then how many more
# Each profile's compiled part against its own eager part (the same code, timed beside it on the same machine): a
# speed-up that moved less than this while the compiled kernels per call moved RUNTIME_RATIO or more says the eager
# code changed as much, so the machine (or its load) did, not the compile.
SPEEDUP_HELD = 1.1


def compile_row_text(row: dict[str, Any], failed: tuple[set[str], set[str]], sides: tuple[str, str]) -> str:
    """A compile-time row in words ({compile_a, compile_b, a_s, b_s, delta_s}; failed: each run's failed compile ids):
    "[0/1]: 3.12 s → 1.18 s (-1.94 s)"; where one run has no such compile of the frame (the other compiled it more
    times), "[0/4]: compiled only in A, 4.46 s", or "tried only in A, and failed" where it failed there."""
    cid_a, cid_b = row["compile_a"], row["compile_b"]
    if cid_a and cid_b:
        ids = cid_a if cid_a == cid_b else f"{cid_a} in {sides[0]}, {cid_b} in {sides[1]}"
        return (f"{ids}: {format_seconds(row['a_s'])} → {format_seconds(row['b_s'])} "
                f"({format_seconds_change(row['delta_s'])})")
    cid, side, failed_there, took = ((cid_a, sides[0], failed[0], row["a_s"]) if cid_a
                                     else (cid_b, sides[1], failed[1], row["b_s"]))
    done = "tried only in {}, and failed" if cid in failed_there else "compiled only in {}"
    return f"{cid}: {done.format(side)}, {format_seconds(took)}"


def runtime_per_call(ra: dict[str, Any], rb: dict[str, Any]) -> tuple[list[dict[str, Any]], tuple[float, float] | None]:
    """Two runs' profile facts (RunFacts.runtime, both joined) per call: each compile id in both, its kernel time per
    call ({compile_id, a_us, a_calls, b_us, b_calls}); and where each ran one compile id, the GPU (or CPU) time of the
    run per call of it, kernels and the idle between them (a call of the one graph is a step of the run). What `diff`
    says and `check --max-run-time-ratio` gates."""
    ga, gb = {g["compile_id"]: g for g in ra["graphs"]}, {g["compile_id"]: g for g in rb["graphs"]}
    rows: list[dict[str, Any]] = []
    for cid in [c for c in ga if c in gb]:
        x, y = ga[cid], gb[cid]
        if x["calls"] and y["calls"]:
            rows.append({"compile_id": cid, "a_us": round(x["kernels_us"] / x["calls"], 3), "a_calls": x["calls"],
                         "b_us": round(y["kernels_us"] / y["calls"], 3), "b_calls": y["calls"]})
    per_call = None
    if len(ga) == len(gb) == 1 and rows:
        per_call = (ra["run_us"] / rows[0]["a_calls"], rb["run_us"] / rows[0]["b_calls"])
    return rows, per_call


def timelines_differ(ra: dict[str, Any], rb: dict[str, Any], sides: tuple[str, str] = ("the baseline", "the run")) -> str | None:
    """Two runs' profile facts (RunFacts.runtime) whose timelines differ, in words ("a GPU profile, x.json, and
    the baseline a CPU one, y.json: ..."), said after the second side's name; None when both are CPU or both GPU. A
    CPU timeline times the CPU's ops, a GPU one the GPU's kernels: neither time stands for the other."""
    if ra["timeline"] == rb["timeline"]:
        return None
    return (f"a {rb['timeline'].upper()} profile, {rb['profile']}, and {sides[0]} a {ra['timeline'].upper()} one, "
            f"{ra['profile']}: a CPU profile times the CPU's ops, a GPU one the GPU's kernels, and neither stands for "
            "the other")


def runtime_changes(a: RunFacts, b: RunFacts, result: RunDiff, sides: tuple[str, str]) -> list[Change]:
    """What changed in run time between the two runs' profiles: per compile id in both, its kernel time per call
    (profiles of 20 calls and of 5 compare so); where each ran one compile id, the GPU time per call (kernels and the
    idle between them); and the GPU's idle share. A side without a profile: a note, nothing compared."""
    ra, rb = a.runtime, b.runtime
    if ra is None and rb is None:
        return []
    if ra is None or rb is None:
        result.notes.append(f"run time not compared: only {sides[0] if ra else sides[1]} was read with a profile "
                            "(a profile beside each log, or --profile-a/--profile-b)")
        return []
    for side, r in zip(sides, (ra, rb)):
        if r.get("unusable"):  # (read in part, or not at all: its times are not the run's)
            result.notes.append(f"run time not compared: {possessive(side)} profile {r['profile']} cannot be used "
                                f"({r['unusable']})")
            return []
        if "not_joined" in r:
            result.notes.append(f"run time not compared: {possessive(side)} profile {r['profile']} is not joined to its "
                                f"log ({r['not_joined']})")
            return []
    if (differ := timelines_differ(ra, rb, sides)) is not None:
        result.notes.append(f"run time not compared: {sides[1]} has {differ}")
        return []
    ga, gb = {g["compile_id"]: g for g in ra["graphs"]}, {g["compile_id"]: g for g in rb["graphs"]}
    rows, per_call = runtime_per_call(ra, rb)
    said = [f"{r['compile_id']} kernels {format_us(r['a_us'])} → {format_us(r['b_us'])} per call" for r in rows]
    changed = any(_ratio(r["a_us"], r["b_us"]) >= RUNTIME_RATIO for r in rows)
    if per_call is not None:
        said.insert(0, f"{ra['timeline'].upper()} time {format_us(per_call[0])} → {format_us(per_call[1])} per call")
        changed = changed or _ratio(*per_call) >= RUNTIME_RATIO
    idle = None
    if ra["timeline"] == rb["timeline"] == "gpu" and ra["run_us"] and rb["run_us"]:
        idle = (ra["idle_us"] / ra["run_us"], rb["idle_us"] / rb["run_us"])
        said.append(f"GPU idle {idle[0]:.0%} → {idle[1]:.0%}")
        changed = changed or abs(idle[1] - idle[0]) >= RUNTIME_IDLE_POINTS
    # A profile holding an eager run too (facts saved before have no "eager"): its kernels and idle, the same code in
    # both runs, and what each run's compiled part took against its own eager part.
    ea, eb = ra.get("eager"), rb.get("eager")
    if ea and eb:
        said.append(f"eager part {format_us(ea['kernels_us'])} → {format_us(eb['kernels_us'])} of kernels, GPU idle "
                    f"{_share(ea['idle_us'], ea['run_us']):.0%} → {_share(eb['idle_us'], eb['run_us']):.0%}")
        if ra.get("speedup") and rb.get("speedup"):
            said.append(f"the compiled part's speed-up over its profile's eager part (kernel time) {ra['speedup']:.2f}x → "
                        f"{rb['speedup']:.2f}x")
            machine = _machine_changed(rows, ra["speedup"], rb["speedup"])
            if machine is not None:
                said.append(machine)
    elif (ea or eb) and (ra if ea else rb).get("speedup"):
        side, r = (sides[0], ra) if ea else (sides[1], rb)
        faster = f"{r['speedup']:.2f}x faster" if r["speedup"] >= 1 else f"{1 / r['speedup']:.2f}x slower"
        said.append(f"{possessive(side)} profile also holds an eager run: its compiled part ran {faster} (kernel time)")
    only = [c for c in ga if c not in gb] + [c for c in gb if c not in ga]
    if only:
        said.append(f"ran in one profile only: {first_listed(only, shown=ONE_PROFILE_GRAPHS)}")
    text = "; ".join(said) or "no compiled graph in either profile"
    if not changed:
        result.notes.append(f"run time (profiles {ra['profile']} → {rb['profile']}): {text}; not a change (under "
                            f"{RUNTIME_RATIO:g}x, and the idle share within {RUNTIME_IDLE_POINTS:.0%})")
        return []
    detail = {"profile_a": ra["profile"], "profile_b": rb["profile"], "graphs": rows,
              "per_call_us": list(per_call) if per_call else None, "idle_share": list(idle) if idle else None,
              "eager_kernels_us": [ea["kernels_us"], eb["kernels_us"]] if ea and eb else None,
              "speedup": [ra.get("speedup"), rb.get("speedup")] if ra.get("speedup") or rb.get("speedup") else None,
              "machine_changed": bool(ea and eb and ra.get("speedup") and rb.get("speedup")
                                      and _machine_changed(rows, ra["speedup"], rb["speedup"]))}
    return [Change("runtime", "changed", f"run time: {text}", None, ra["run_us"], rb["run_us"], detail)]


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _machine_changed(rows: list[dict[str, Any]], speedup_a: float, speedup_b: float) -> str | None:
    """Where the compiled kernels per call changed (RUNTIME_RATIO) and each profile's speed-up over its own eager part
    held (SPEEDUP_HELD), the eager code changed as much: what that says; None otherwise."""
    moved = [r for r in rows if _ratio(r["a_us"], r["b_us"]) >= RUNTIME_RATIO]
    if not moved or _ratio(speedup_a, speedup_b) >= SPEEDUP_HELD:
        return None
    r = moved[0]
    how = "slower" if r["b_us"] > r["a_us"] else "faster"
    return (f"the eager parts {'slowed down' if how == 'slower' else 'sped up'} as much as the compiled ones "
            f"({r['compile_id']}'s kernels "
            f"{_ratio(r['a_us'], r['b_us']):.2f}x {how} per call, the speed-up over eager held): the machine or its "
            "load changed, not the compile")


def _ratio(x: float, y: float) -> float:
    """The slower of two times over the faster (inf when one is 0 and the other is not)."""
    lo, hi = sorted((x, y))
    return 1.0 if hi == 0 else math.inf if lo == 0 else hi / lo


def torch_cause(a: RunFacts, b: RunFacts, phases: list[dict[str, Any]], sides: tuple[str, str]) -> str:
    """Why compile time changed, where the runs ran two torch versions: torch's own work may be part of it."""
    grew = max(phases, key=lambda p: abs(p["delta_s"]), default=None)
    most = (f"; the most in {grew['label']} ({format_seconds(grew['a_s'])} → {format_seconds(grew['b_s'])})"
            if grew else "")
    return (f"{sides[0]} ran torch {a.torch_version} and {sides[1]} {b.torch_version}, whose compiles do other work "
            f"(passes, defaults){most}: part of it may be the upgrade, not the program; compare runs of one torch to "
            "measure the program's change alone")


def where_time_went(a: RunFacts, b: RunFacts, sides: tuple[str, str] = ("A", "B")) -> str | None:
    """"B's extra 64.51 s went mostly to Autotuning (0 µs → 44.38 s, 3 more max-autotune searches, 43.05 s of it
    compiling candidates) and C++ compile (46.80 s → 71.61 s)": the phases that grew with the slower run, the most
    first (two at most), said where the difference is no change by the threshold: cpu_autotune's max-autotune took 2x
    the default mode, and a note that said no more hid 44 s of searches. None unless autotuning is one of them: a
    search is work one run chose to do, where phases that merely moved with the machine's load are noise, not a cause."""
    slower, faster, name = (b, a, sides[1]) if b.compile_time_s > a.compile_time_s else (a, b, sides[0])
    grew = sorted(((slower.phases.get(p, 0.0) - faster.phases.get(p, 0.0), p) for p in slower.phases), reverse=True)
    grew = [(delta, p) for delta, p in grew if delta >= 1.0][:2]
    if "autotune" not in (p for _, p in grew):
        return None
    said = []
    for _, phase in grew:
        label = slower.phase_labels.get(phase) or PHASE_LABELS.get(phase, phase)
        text = f"{label} ({format_seconds(faster.phases.get(phase, 0.0))} → {format_seconds(slower.phases[phase])}"
        if phase == "autotune":
            compiling = sum(s.get("candidate_compile_s") or 0.0 for s in slower.autotune_searches)
            searches = len(slower.autotune_searches) - len(faster.autotune_searches)
            text += f", {searches} more max-autotune {'search' if searches == 1 else 'searches'}" if searches > 0 else ""
            text += f", {format_seconds(compiling)} of it compiling candidates" if compiling else ""
        said.append(text + ")")
    extra = format_seconds(abs(b.compile_time_s - a.compile_time_s))
    return f"{name}'s extra {extra} went mostly to " + " and ".join(said)


def served_yet_compiled(a: RunFacts, b: RunFacts, totals_a: dict[str, dict[str, int]],
                         totals_b: dict[str, dict[str, int]], sides: tuple[str, str] = ("A", "B")) -> str | None:
    """"B's caches served what A compiled anew (FX graph cache: 4 hits where A's 4 missed; ...), yet B compiled its
    C++ kernels again: ...": the side whose lookups (of the frames both compiled) hit where the other's missed, each
    cache that served it, and the kernels the FX graph cache's hits still compiled (caches.kernels_compiled_again).
    None where neither side hit more often."""
    for (run, totals, name), (other_run, other_totals, other) in (((a, totals_a, sides[0]), (b, totals_b, sides[1])),
                                                                  ((b, totals_b, sides[1]), (a, totals_a, sides[0]))):
        hits = {c: totals.get(c, {}).get("hit", 0) for c in CACHES}
        gained = [f"{CACHES[c]}: {count(n, 'hit')} where {possessive(other)} {other_totals[c]['miss']} missed"
                  for c, n in hits.items() if n > other_totals.get(c, {}).get("hit", 0)
                  and other_totals.get(c, {}).get("miss")]
        if not gained:
            continue
        said = f"{possessive(name)} caches served what {other} compiled anew ({'; '.join(gained)})"
        again = run.kernels_again
        if again:
            label = run.phase_labels.get("kernel_compile", PHASE_LABELS["kernel_compile"])
            said += (f", yet {name} compiled its kernels again: {and_list(again['compile_ids'])} hit the FX graph cache "
                     f"and {label} still took {format_seconds(again['seconds'])} of its "
                     f"{format_seconds(run.compile_time_s)} ({other}: {format_seconds(other_run.phases.get('kernel_compile', 0.0))}; a hit gives Inductor's generated code; the compiled "
                     f"kernels come from {possessive(name)} Inductor cache directory, which did not hold them, as "
                     "after torch.compiler.load_cache_artifacts into an empty one)")
        return said
    return None


def cache_cause(a: RunFacts, b: RunFacts, totals_a: dict[str, dict[str, int]],
                 totals_b: dict[str, dict[str, int]], sides: tuple[str, str] = ("A", "B")) -> str | None:
    """Why compile time changed, where the caches say so: the faster run's lookups (of the frames both compiled) hit
    where the slower run's missed, so it reused compiled graphs the slower compiled anew (a warm cache against a cold
    one), with what torch logged those hits saved. None where the faster run hit no more often."""
    a_faster = a.compile_time_s < b.compile_time_s
    faster, slower = sides if a_faster else sides[::-1]
    fast = a if a_faster else b
    fast_totals, slow_totals = (totals_a, totals_b) if a_faster else (totals_b, totals_a)
    hits_fast = sum(outcomes.get("hit", 0) for outcomes in fast_totals.values())
    hits_slow = sum(outcomes.get("hit", 0) for outcomes in slow_totals.values())
    misses_slow = sum(outcomes.get("miss", 0) for outcomes in slow_totals.values())
    if hits_fast <= hits_slow or not misses_slow:
        return None
    saved = f"; torch logged {format_seconds(fast.cache_saved_s)} of compiling saved by {possessive(faster)} hits" if fast.cache_saved_s else ""
    return (f"{possessive(faster)} cache lookups hit where {possessive(slower)} missed ({count(hits_fast, 'hit')} in {faster}, "
            f"{hits_slow} in {slower}): {faster} reused graphs that {slower} compiled anew{saved}")


def _won_by(search: dict) -> str:
    """What a search chose, for a search one run has alone: ", won by _mkl_linear (49.8 µs)"."""
    if not search.get("best_kernel"):
        return ""
    time_ms = search.get("best_time_ms")
    return f", won by {search['best_kernel']}" + (f" ({format_kernel_time(time_ms / 1000)})" if time_ms is not None else "")


def autotuning_changes(a: RunFacts, b: RunFacts, threshold: TimeThreshold, result: RunDiff) -> list[Change]:
    """max-autotune's winners that changed (the same op, shapes and dtypes in the same frame), searches run in one run
    only (of the frames compiled in both: a frame of one run brings its own), and the time spent benchmarking."""
    out: list[Change] = []
    matched = set(result.matched_frames)

    def searches(facts: RunFacts) -> dict[tuple, list[dict]]:
        by_key: dict[tuple, list[dict]] = {}
        for search in facts.autotune_searches:
            if search["frame"] is None or search["frame"] in matched:
                by_key.setdefault((search["frame"], search["op"], search["shape"], search["dtypes"]), []).append(search)
        return by_key

    in_a, in_b = searches(a), searches(b)
    for key in list(dict.fromkeys([*in_a, *in_b])):
        frame, op, shape, dtypes = key
        runs_a, runs_b = in_a.get(key, []), in_b.get(key, [])
        # The user's line first, where the graph placed the op (a saved facts file of an older version has none)
        site = next((s.get("site") for s in [*runs_a, *runs_b] if s.get("site")), None)
        code = next((s.get("site_code") for s in [*runs_a, *runs_b] if s.get("site_code")), None)
        what = (f"{site}" + (f" `{code}`" if code else "") + ", " if site else "") + f"{op} {shape or ''}".rstrip() + (
            f" ({dtypes})" if dtypes else "")
        for sa, sb in zip(runs_a, runs_b):
            # A Triton winner's name ends with its place among the candidates (triton_mm_17): the config says which
            # template it is; the name without that number tells a Triton winner from ATen's.
            if sa["best_config"] != sb["best_config"] or (sa["best_kernel"] or "").rstrip("0123456789") != (
                    sb["best_kernel"] or "").rstrip("0123456789"):
                out.append(Change("autotuning", "changed", f"max-autotune chose another kernel for {what}: "
                                  f"{_winners(sa, sb)}", frame, sa, sb))
        for sa in runs_a[len(runs_b):]:
            out.append(Change("autotuning", "removed", f"max-autotune search for {what} only in A{_won_by(sa)}", frame, sa,
                              None))
        for sb in runs_b[len(runs_a):]:
            out.append(Change("autotuning", "added", f"max-autotune search for {what} only in B{_won_by(sb)}", frame, None,
                              sb))
    if threshold.significant(a.autotune_s, b.autotune_s):
        out.append(Change("autotuning", "changed", f"autotuning {format_seconds(a.autotune_s)} → {format_seconds(b.autotune_s)} "
                          f"({format_seconds_change(b.autotune_s - a.autotune_s)})", None, a.autotune_s, b.autotune_s))
    elif a.autotune_s != b.autotune_s:
        result.notes.append(threshold.not_a_change("autotuning", a.autotune_s, b.autotune_s))
    return out


def _winners(a: dict, b: dict) -> str:
    """`triton_mm_17 → triton_mm_4 (BLOCK_K 64 → 32, BLOCK_M 128 → 64; 22.6 µs → 31.0 µs)`: the configs' keys that
    differ (torch writes a config as `KEY=value, ...`), else both configs whole; the run times worded as summary and
    report word them (format_kernel_time), the change's a and b keep best_time_ms as torch logged it."""
    config_a, config_b = config_items(a["best_config"]), config_items(b["best_config"])
    if config_a is not None and config_b is not None:
        details = [f"{k} {config_a.get(k, '-')} → {config_b.get(k, '-')}"
                   for k in dict.fromkeys([*config_a, *config_b]) if config_a.get(k) != config_b.get(k)]
    else:
        details = [f"{a['best_config'] or '?'} → {b['best_config'] or '?'}"]
    times = ""
    if a["best_time_ms"] is not None and b["best_time_ms"] is not None:
        times = f"; {format_kernel_time(a['best_time_ms'] / 1000)} → {format_kernel_time(b['best_time_ms'] / 1000)}"
    return f"{a['best_kernel'] or '?'} → {b['best_kernel'] or '?'} ({', '.join(details)}{times})"

"""What the compiled code holds or does, compared section by section: CUDA graphs used or not, activation
checkpointing, results that differ from eager (random numbers, precision, undeclared writes), the user's own Triton
kernels, the dims torch.export was given that the code narrowed, and what AOTInductor packages accept."""

from __future__ import annotations

import os
from typing import Any

from ...wording import count
from ..user_kernels import launch_words
from ..run_facts import RunFacts, short_path
from . import Change, RunDiff
from .frames import frames_label


def cudagraph_use_changes(a: RunFacts, b: RunFacts, result: RunDiff) -> list[Change]:
    """A frame (compiled in both runs) that one run ran as CUDA graphs, and the other ran with none at all: no graph
    recorded, none skipped, none even set up (CUDA graph trees set one up at the first call whenever they are on), as
    when mode="reduce-overhead" is dropped. A skip only compares runs that both used CUDA graphs; this is the loss (or
    gain) of them, run without in B only as a skip is ("added")."""
    def recorded(facts: RunFacts) -> dict[str, int]:
        recordings: dict[str, int] = {}
        for x in facts.cudagraph_recorded:
            if x["frame"] in result.matched_frames:
                recordings[x["frame"]] = recordings.get(x["frame"], 0) + x["recordings"]
        return recordings

    def used(facts: RunFacts) -> set[str]:
        return set(recorded(facts)) | {x["frame"] for x in facts.cudagraph_skips} | set(facts.cudagraph_set_up)

    changes = []
    used_a, used_b = used(a), used(b)
    for frame_key_, n in sorted(recorded(a).items()):
        if frame_key_ not in used_b:
            changes.append(Change("cudagraphs", "added", f"CUDA graphs no longer used: A recorded {count(n, 'graph')},"
                                  " B never set one up (not compiled with mode=\"reduce-overhead\"?)", frame_key_,
                                  {"frame": frame_key_, "recordings": n}, {"frame": frame_key_, "recordings": 0}))
    for frame_key_, n in sorted(recorded(b).items()):
        if frame_key_ not in used_a:
            changes.append(Change("cudagraphs", "removed", f"CUDA graphs now used: B recorded {count(n, 'graph')}, "
                                  "A never set one up", frame_key_,
                                  {"frame": frame_key_, "recordings": 0}, {"frame": frame_key_, "recordings": n}))
    return changes


def _frame_checkpointing(facts: RunFacts) -> dict[str, tuple[dict[str, int], int | None]]:
    """Per frame: the checkpoint calls its compiles captured, by line ("checkpoint_autocast.py:52" -> 2), and the ops
    their backward graphs recompute (None: a compile with checkpoint calls logged no backward graph)."""
    found: dict[str, tuple[dict[str, int], int | None]] = {}
    for one in facts.checkpointing or []:
        sites, recomputed = found.get(one["frame"], ({}, 0))
        for call in one["calls"]:
            site = f"{short_path(call['file'])}:{call['line']}"
            sites[site] = sites.get(site, 0) + call["count"]
        recomputed = None if recomputed is None or one["recomputed_ops"] is None else recomputed + one["recomputed_ops"]
        found[one["frame"]] = (sites, recomputed)
    return found


def _calls_text(sites: dict[str, int]) -> str:
    """"2 at checkpoint_autocast.py:52", "3 at m.py:40 ×2, m.py:47", "0"."""
    n = sum(sites.values())
    if len(sites) < 2:
        return f"{n} at {next(iter(sites))}" if sites else "0"
    return f"{n} at " + ", ".join(f"{site} ×{calls}" if calls > 1 else site for site, calls in sites.items())


def checkpointing_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """What torch.compile captured of activation checkpointing, per frame: the checkpoint calls (a graph break in the
    checkpointed function makes Dynamo run the call uncompiled, or give up the frame), and the ops the backward
    recomputes. Compared only where both facts kept it."""
    if a.checkpointing is None or b.checkpointing is None:
        return []
    per_a, per_b = _frame_checkpointing(a), _frame_checkpointing(b)
    changes: list[Change] = []
    for key in [k for k in per_a if k in a.frames] + [k for k in per_b if k not in per_a and k in b.frames]:
        frame = frames_label(a.frames[key], b.frames[key]) if key in a.frames and key in b.frames else (
            a.frames.get(key) or b.frames[key]).label
        sites_a, ops_a = per_a.get(key, ({}, 0))
        sites_b, ops_b = per_b.get(key, ({}, 0))
        if sites_a != sites_b:
            calls_a, calls_b = sum(sites_a.values()), sum(sites_b.values())
            kind = "removed" if not calls_b else "added" if not calls_a else "changed"
            changes.append(Change("checkpointing", kind, f"{frame}: checkpoint calls captured: {_calls_text(sites_a)} → "
                                  f"{_calls_text(sites_b)}", key, calls_a, calls_b, {"calls_a": sites_a, "calls_b": sites_b}))
        if ops_a != ops_b:
            words = ["not logged (no backward graph)" if n is None else str(n) if n else "none" for n in (ops_a, ops_b)]
            kind = "removed" if ops_b == 0 else "added" if ops_a == 0 else "changed"
            changes.append(Change("checkpointing", kind, f"{frame}: ops the backward recomputes: {words[0]} → {words[1]}",
                                  key, ops_a, ops_b))
    return changes


def numerics_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """Lines whose compiled results differ from eager's in one run only: random numbers Inductor draws itself, bf16/fp16
    fused in float32. Matched by file name, function and code, not line: a fix above them moves the lines."""
    if a.numerics is None or b.numerics is None:
        return []

    def by_key(facts: RunFacts) -> dict[tuple, dict[str, Any]]:
        return {(n["kind"], os.path.basename(n["file"]), n["function"], n["code"] or n["line"]): n for n in facts.numerics or []}

    ka, kb = by_key(a), by_key(b)
    out: list[Change] = []
    for kind, now, gone in (("random", "now draws its own random numbers (Inductor's generator, not eager's)",
                             "no longer draws its own random numbers"),
                            ("precision", "now fuses {dtype} ops in float32", "no longer fuses {dtype} ops in float32"),
                            ("mutation", "now calls {ops}, whose write into its argument torch does not know of (its "
                                         "mutates_args does not name it)",
                             "no longer takes {ops} for functional while it writes into its argument")):
        for change, keys, side in (("added", kb.keys() - ka.keys(), kb), ("removed", ka.keys() - kb.keys(), ka)):
            found = [side[k] for k in side if k in keys and k[0] == kind]  # (in the side's order)
            if not found:
                continue
            dtype = "/".join(dict.fromkeys(n["dtype"] or "" for n in found))
            where = "; ".join(f"{os.path.basename(n['file'])}:{n['line']}" + (f" ({n['code']})" if n["code"] else "")
                              for n in found)
            ops = ", ".join(dict.fromkeys(n.get("op") or "" for n in found))
            what = (now if change == "added" else gone).format(dtype=dtype, ops=ops)
            out.append(Change("numerics", change, f"compiled code {what} at {where}", found[0]["frame"],
                              found if change == "removed" else None, found if change == "added" else None))
    return out


def export_dim_changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Change]:
    """The dims a torch.export call was given that the model's code narrowed (a guard: torch raises "Constraints
    violated") or fixed to one value, gone or new: torch.export's words for what a specialization and a guard are to
    a torch.compile user."""
    def key(d: dict[str, Any]) -> tuple:
        return d["call"], d["input"], d["guard"], d["value"]

    def said(d: dict[str, Any], now: str) -> str:
        call = f"torch.export at {d['call']}" if d["call"] else "torch.export"
        at = f" at {d['at']}" if d["at"] else ""
        if d["value"] is not None:
            return f"{call}: {d['input']} {now} fixed to {d['value']} by the code{at}"
        return f"{call}: {d['input']} (given {d['declared']}) {now} narrowed by the code ({d['guard']}{at})"

    keys_a, keys_b = {key(d): d for d in a}, {key(d): d for d in b}
    out = [Change("dynamic_shapes", "removed", said(d, "no longer"), None, d, None)
           for k, d in keys_a.items() if k not in keys_b]
    out += [Change("dynamic_shapes", "added", said(d, "now"), None, None, d) for k, d in keys_b.items() if k not in keys_a]
    return out


def aoti_changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Change]:
    """What each AOTInductor package accepts, where it changed (a Dim added: a batch of 4 only, then 2..64), and the
    packages one run compiled and the other did not; paired by the user's call, else in log order."""
    def keyed(packages: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
        return {p["call"] if p["call"] is not None else i: p for i, p in enumerate(packages)}

    def name(p: dict[str, Any]) -> str:
        return f"the AOTInductor package of {p['call']}" if p["call"] else "an AOTInductor package"

    ka, kb = keyed(a), keyed(b)
    out = [Change("dynamic_shapes", "changed", f"{name(pa)} accepts {pa['accepts']} → {kb[k]['accepts']}", None,
                  pa["accepts"], kb[k]["accepts"])
           for k, pa in ka.items() if k in kb and pa["accepts"] != kb[k]["accepts"]]
    out += [Change("dynamic_shapes", "removed", f"{name(p)} (accepts {p['accepts']}) is no longer compiled", None,
                   p["accepts"], None) for k, p in ka.items() if k not in kb]
    out += [Change("dynamic_shapes", "added", f"{name(p)} (accepts {p['accepts']}) is new", None, None, p["accepts"])
            for k, p in kb.items() if k not in ka]
    return out


def user_kernel_changes(a: list[dict[str, Any]] | None, b: list[dict[str, Any]] | None) -> list[Change]:
    """The user's own Triton kernels, by name: one the compiled code of one run holds and the other's not; one whose
    launch entered the graphs otherwise (launched raw, then through a triton_op), said with what stayed the same (its
    code, the compiles holding it, the sizes each took symbolic), which the graph nodes that changed do not tell. Where
    one log does not say how the launch enters the graph, no change of it is said: only other lines, if they differ."""
    if a is None or b is None:
        return []

    def by_name(kernels: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for k in kernels:
            found.setdefault(k["name"], []).append(k)
        return found

    def compiles(ks: list[dict[str, Any]]) -> str:
        """"[0/0], [0/1] (n symbolic in [0/1])"; a compile id whose code defines the kernel twice, once: "[0/0] (2 times)"."""
        per_id: dict[str, list[dict[str, Any]]] = {}
        for k in ks:
            per_id.setdefault(k["compile_id"], []).append(k)
        symbolic = [f"{', '.join(names)} symbolic in {compile_id}" for compile_id, same in per_id.items()
                    if (names := list(dict.fromkeys(s for k in same for s in k["symbolic"])))]
        return (", ".join(compile_id + (f" ({len(same)} times)" if len(same) > 1 else "") for compile_id, same in per_id.items())
                + (f" ({'; '.join(symbolic)})" if symbolic else ""))

    def how(ks: list[dict[str, Any]]) -> str:
        return " or ".join(dict.fromkeys(w for k in ks if (w := launch_words(k.get("launch_call")))))

    def launched_at(ks: list[dict[str, Any]]) -> str:
        """"called at x.py:41, x.py:46": the lines alone, without how the launch enters the graph."""
        at = ", ".join(dict.fromkeys(u for k in ks for u in k["launched_at"]))
        called = "called" if how(ks).startswith("through the custom op") else "launched"  # (the op's call, not a launch)
        return f"{called} at {at}" if at else ""

    def launch(ks: list[dict[str, Any]]) -> str:
        return ", ".join(filter(None, [launched_at(ks), how(ks)]))

    ka, kb = by_name(a), by_name(b)
    out = []
    for name, ks in ka.items():
        if name not in kb:
            out.append(Change("graphs", "removed", f"your Triton kernel {name} is no longer in the compiled code "
                              f"(A: {compiles(ks)})", ks[0]["frame"], ks, None))
    for name, ks in kb.items():
        if name not in ka:
            out.append(Change("graphs", "added", f"your Triton kernel {name} is new in the compiled code "
                              f"(B: {compiles(ks)})", ks[0]["frame"], None, ks))
    def lines(ks: list[dict[str, Any]]) -> list[str]:
        return list(dict.fromkeys(u for k in ks for u in k["launched_at"]))

    for name, ks in ka.items():
        other = kb.get(name)
        if other is None or launch(ks) == launch(other):
            continue
        # (one log does not say how the launch enters the graph: from the same lines, nothing is known to differ)
        if bool(how(ks)) != bool(how(other)) and lines(ks) == lines(other):
            continue
        codes = ({k.get("source_md5") for k in ks}, {k.get("source_md5") for k in other})
        same_code = None not in codes[0] | codes[1] and codes[0] == codes[1] and len(codes[0]) == 1
        same = [what for what, kept in (("its code", same_code), (f"compiled in {compiles(ks)}",
                                                                  compiles(ks) == compiles(other))) if kept]
        changed = [] if same_code or None in codes[0] | codes[1] else ["its code changed"]
        changed += [] if compiles(ks) == compiles(other) else [f"compiled in {compiles(ks)} → {compiles(other)}"]
        if how(ks) and how(ks) == how(other):  # (the same way in, from other lines: the program's file renamed or edited)
            title = (f"your Triton kernel {name}: {launch(ks)} → {launched_at(other)}: "
                     f"the same way into the graph, from other lines")
        elif not how(ks) and not how(other):  # (the log says of neither run how the launch enters the graph)
            title = f"your Triton kernel {name}: {launch(ks)} → {launch(other)}: from other lines"
        elif not how(ks) or not how(other):  # (one log does not say: not a change of the way in)
            title = (f"your Triton kernel {name}: {launch(ks)} → {launch(other)}: from other lines ("
                     f"{'A' if not how(ks) else 'B'}'s log does not say how its launch enters the graph)")
        else:
            title = f"your Triton kernel {name}: how its launch enters the graph changed: {launch(ks)} → {launch(other)}"
        if same:
            title += f"; the kernel is the same in both: {', '.join(same)}"
        if changed:
            title += f"; {'; '.join(changed)}"
        out.append(Change("graphs", "changed", title, ks[0]["frame"], ks, other,
                          {"same_code": same_code, "same_compiles": compiles(ks) == compiles(other)}))
    return out

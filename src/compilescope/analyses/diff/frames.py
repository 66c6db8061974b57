"""The frames (compiled functions) of two runs: those both compiled, by their compiles and recompiles, failing guards,
graphs (FX nodes) and kernels (what each computes); those compiled in one run only; and the recompiles and graphs of
all frames where no function matches (a rewrite, regional compilation). multiset_diff: the matching they share."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...wording import and_list, count, possessive, times
from ..user_locations import is_python_library_file
from ..run_facts import FrameFacts, RunFacts
from . import Change


def frames_label(a: FrameFacts, b: FrameFacts, sides: tuple[str, str] = ("A", "B")) -> str:
    """A frame both runs compiled, as a change's title names it: "wrapped_func (deprecation.py:121, called at
    hf_llama.py:32, 39 in A; hf_llama.py:32, 37 in B)" where the user's code called it from other lines in each
    (the fixed program calls generate() from another line): a's label alone would place B's calls at A's lines.
    a.label where both agree, or one run's facts do not say (saved before they kept it)."""
    if a.called_at == b.called_at or not a.called_at or not b.called_at:
        return a.label_called(a.called_at or b.called_at)
    return a.label_called(f"{a.called_at} in {sides[0]}; {b.called_at} in {sides[1]}")


def afresh_text(side: str, frame: FrameFacts) -> str:
    """What a run compiled again after torch._dynamo.reset(): from scratch, unless a cache served it (reset() throws
    compiled functions away, not what the caches hold: tlparse's cache_hit_miss.log, whose [3/0] loaded [1/0]'s)."""
    n, cached = len(frame.afresh), frame.afresh_cached
    if not cached:
        return f"{side} compiled it from scratch again {times(n)}, after torch._dynamo.reset()"
    served = ("served from the cache" if len(cached) == n == 1 else "each served from the cache" if len(cached) == n
              else f"{and_list(cached)} served from the cache, the others from scratch")
    return (f"{side} compiled it again {times(n)} after torch._dynamo.reset(), {served} (reset() throws compiled "
            "functions away, not what the caches hold)")


def still_failing(fa: FrameFacts, fb: FrameFacts, gone: list[str], new: list[str]) -> dict[str, Any]:
    """Of the guards first at fewer recompiles in B (gone) or more (new), those the other run's recompiles list as
    failing too: guard -> [how many recompiles list it in A, in B] (Change.guard_lines)."""
    found = {g: [fa.failed_anywhere.get(g, 0), fb.failed_anywhere.get(g, 0)] for g in dict.fromkeys(gone + new)
             if (fb if g in gone else fa).failed_anywhere.get(g)}
    return {"still_failing": found} if found else {}


def avoidable_text(fa: FrameFacts, fb: FrameFacts) -> str:
    """"; avoidable 4 → 0": where either run has a recompile the recompiles analysis calls expected or cannot tell
    (else all are avoidable, as the recompile counts say), and the avoidable counts differ."""
    if not (fa.expected_recompile_ids or fb.expected_recompile_ids or fa.unknown_recompile_ids
            or fb.unknown_recompile_ids):
        return ""
    na, nb = len(fa.avoidable_recompile_ids), len(fb.avoidable_recompile_ids)
    return f"; avoidable {na} → {nb}" if na != nb else ""


def guard_words(fa: FrameFacts, fb: FrameFacts, guards: list[str]) -> dict[str, Any]:
    """A change's guard_words: of guards (a change's, as torch wrote them), those either run says in words."""
    words = {g: fa.guard_words.get(g) or fb.guard_words[g] for g in dict.fromkeys(guards)
             if g in fa.guard_words or g in fb.guard_words}
    return {"guard_words": words} if words else {}


def multiset_diff(a: list, b: list) -> tuple[list, list]:
    ca, cb = Counter(a), Counter(b)
    return list((ca - cb).elements()), list((cb - ca).elements())


def _node_key(node: list) -> tuple:
    return (node[0], node[1], node[2])


def _diff_nodes(nodes_a: list[list], nodes_b: list[list]) -> dict[str, list] | None:
    """Nodes added, removed or retargeted between two graphs, matched by (op, target, user line)."""
    removed, added = multiset_diff([_node_key(n) for n in nodes_a], [_node_key(n) for n in nodes_b])
    # Same op at the same user line with another target: retargeted, not one removed and one added.
    retargeted = []
    for r in list(removed):
        match = next((x for x in added if x[0] == r[0] and x[2] == r[2] and x[2] is not None), None)
        if match is not None:
            removed.remove(r)
            added.remove(match)
            retargeted.append({"op": r[0], "from": r[1], "to": match[1], "line": r[2]})
    if not (added or removed or retargeted):
        return None
    code_of = {_node_key(n): n[3] for n in nodes_a + nodes_b}
    grid_of = {_node_key(n): n[4] for n in nodes_a + nodes_b if len(n) > 4 and n[4]}
    as_dict = lambda n: {"op": n[0], "target": n[1], "line": n[2], "code": code_of.get(n),  # noqa: E731
                         "grid_of": grid_of.get(n)}
    return {"added": [as_dict(n) for n in added], "removed": [as_dict(n) for n in removed], "retargeted": retargeted}


def diff_graphs(label: str, key: str, fa: FrameFacts, fb: FrameFacts,
                 runs: tuple[RunFacts, RunFacts] | None = None) -> list[Change]:
    """Graph i of the frame in A against graph i in B; graphs beyond the shorter side are counted. runs: (A, B), where
    a kernel of one side only is looked for in the other run's frames."""
    out: list[Change] = []
    for i in range(min(len(fa.graphs), len(fb.graphs))):
        nodes = _diff_nodes(fa.graphs[i].nodes, fb.graphs[i].nodes)
        if nodes is not None:
            # "1 FX node added", "3 FX nodes added, 1 removed": the noun on the first count, in its number
            parts = [f"{count(len(v), 'FX node') if not j else len(v)} {w}"
                     for j, (w, v) in enumerate((w, v) for w, v in nodes.items() if v)]
            cids = (fa.compile_ids[i] if i < len(fa.compile_ids) else "?", fb.compile_ids[i] if i < len(fb.compile_ids) else "?")
            out.append(Change("graphs", "changed", f"{label}: graph {cids[0]} → {cids[1]}: {', '.join(parts)}", key,
                              len(fa.graphs[i].nodes), len(fb.graphs[i].nodes),
                              {"graph": i, "compile_a": cids[0], "compile_b": cids[1], **nodes}))
    if len(fa.graphs) != len(fb.graphs):
        out.append(Change("graphs", "changed", f"{label}: {len(fa.graphs)} → {len(fb.graphs)} graphs", key,
                          len(fa.graphs), len(fb.graphs)))

    def kernel_total(f: FrameFacts, attr: str) -> dict[str, int] | None:
        known = [getattr(g, attr) for g in f.graphs if getattr(g, attr) is not None]
        if not known or len(known) != len(f.graphs):
            return None  # some graph's output code is not in the log (served from cache): unknown, not zero
        total: Counter = Counter()
        for k in known:
            total.update(k)
        return dict(total)

    for attr, what in (("kernels", "generated kernels"), ("extern_kernels", "extern kernel calls")):
        ka, kb = kernel_total(fa, attr), kernel_total(fb, attr)
        if ka is not None and kb is not None and ka != kb:
            said, detail = _kernels_changed(fa, fb, runs) if attr == "kernels" else ("", {})
            out.append(Change("graphs", "changed", f"{label}: {what} {sum(ka.values())} → {sum(kb.values())}{said}",
                              key, ka, kb, detail))
    return out


def _work_of(f: FrameFacts) -> list[dict[str, Any]] | None:
    """The frame's kernels with what each computes, all its graphs'; None: some graph has no provenance."""
    if not f.graphs or any(g.kernel_work is None for g in f.graphs):
        return None
    return [w for g in f.graphs for w in g.kernel_work or ()]


def _computes(w: dict[str, Any]) -> str:
    """"tanh at custom_ops.py:82": what a kernel computes, by its ops' names and user lines."""
    ops = ", ".join(op.partition(".")[2] or op for op in w["ops"]) or "nothing torch maps"
    return f"{ops}{' at ' + ', '.join(w['lines']) if w['lines'] else ''}"


def _kernels_changed(fa: FrameFacts, fb: FrameFacts,
                     runs: tuple[RunFacts, RunFacts] | None) -> tuple[str, dict[str, Any]]:
    """The kernels that differ, each by what it computes (torch's provenance): kernels computing the same ops at the
    same lines are one kernel renamed (torch names a fused kernel after the nodes it was made for, an op called on its
    own among them); a kernel of one side only is said with the frame of the other run that computed the same, where
    one did (the rest of a function after a graph break, compiled as its own graph). ("", {}): no provenance."""
    wa, wb = _work_of(fa), _work_of(fb)
    if wa is None or wb is None:
        return "", {}
    key = lambda w: (tuple(w["ops"]), tuple(w["lines"]))  # noqa: E731
    only_a, only_b = multiset_diff([key(w) for w in wa], [key(w) for w in wb])
    names_a, names_b = Counter(w["kernel"] for w in wa), Counter(w["kernel"] for w in wb)
    renamed = [(x, y) for x, y in zip(wa, wb) if key(x) == key(y) and x["kernel"] != y["kernel"]
               and names_b[x["kernel"]] == 0 and names_a[y["kernel"]] == 0]
    parts: list[str] = []
    detail: dict[str, Any] = {"kernels_added": [], "kernels_removed": [], "kernels_renamed": []}
    keys = {"A": Counter(key(w) for w in wa), "B": Counter(key(w) for w in wb)}
    for side, only, work, other in (("B", only_b, wb, 0), ("A", only_a, wa, 1)):
        other_side = "A" if other == 0 else "B"
        # (a kernel is said once, with its counts: multiset_diff gives it once per extra copy, whether the other side
        # computes it too or not at all)
        for k in dict.fromkeys(only):
            w = next(x for x in work if key(x) == k)
            # (a kernel this frame makes in both runs, in more of one side's graphs (a recompile the other run did
            # not need): not computed elsewhere, so the other run's frame that has it is not named as if it were)
            elsewhere = (_computed_in(runs[other], k, besides=fa.key) if runs is not None and not keys[other_side][k]
                         else None)
            where = (f", which {other_side} computed in {elsewhere}" if elsewhere else "") + (
                f"; {side} compiled it {times(keys[side][k])}, {other_side} {times(keys[other_side][k])}"
                if keys[other_side][k] else f"; {side} compiled it {times(keys[side][k])}" if keys[side][k] > 1 else "")
            parts.append(f"{'+' if side == 'B' else '-'} {w['kernel']} ({_computes(w)}{where})")
            compiled = {"A": keys["A"][k], "B": keys["B"][k]}
            detail["kernels_added" if side == "B" else "kernels_removed"].append(
                {**w, "other_run_frame": elsewhere, "compiled": compiled})
    for x, y in renamed:
        apart = "; ".join(f"{'B' if op in y['elsewhere'] else 'A'}'s graph calls {op} whole, as its own call "
                          f"{', '.join(calls)}, and torch names the fused kernel after it too"
                          for op, calls in {**x["elsewhere"], **y["elsewhere"]}.items())
        parts.append(f"{x['kernel']} → {y['kernel']}, both {_computes(y)}{' (' + apart + ')' if apart else ''}")
        detail["kernels_renamed"].append({"a": x, "b": y})
    return (f": {'; '.join(parts)}" if parts else ""), detail


def _computed_in(run: RunFacts, k: tuple[tuple[str, ...], tuple[str, ...]], besides: str) -> str | None:
    """The label of the run's frame, other than the frame keyed besides (the one compared), with a kernel computing
    these ops at these lines."""
    for f in run.frames.values():
        if f.key != besides and any((tuple(w["ops"]), tuple(w["lines"])) == k for w in _work_of(f) or ()):
            return f.label
    return None


def frame_detail(facts: RunFacts, f: FrameFacts) -> dict[str, Any]:
    """What a frame compiled in one run only brings with it."""
    return {"compile_ids": f.compile_ids, "recompiles": f.recompiles, "caches": f.caches,
            "graph_nodes": [len(g.nodes) for g in f.graphs],
            "symbols": [s["source"] for s in facts.symbols if s.get("frame") == f.key],
            "compile_s": round(sum(f.compile_s), 6)}


def late_hook_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """A hook registered after compiling (RunFacts.late_hooks) in one run and not the other, by its frame and module:
    the hook the calls of one run's earlier compile skipped, which a recompile count says nothing of (the fixed program
    registers it first and recompiles as often). Nothing where a side's facts did not keep them."""
    if a.late_hooks is None or b.late_hooks is None:
        return []

    def said(side: str, hook: dict[str, Any]) -> str:
        return (f"{hook['module']}: {hook['hooks']} registered after {hook['function']} was compiled in {side} "
                f"only: calls {possessive(side)} {hook['served_by']} served after it ran without it (found by "
                f"{hook['found_by']}'s guards)")
    ka = {(h["frame"], h["module"]): h for h in a.late_hooks}
    kb = {(h["frame"], h["module"]): h for h in b.late_hooks}
    return ([Change("recompiles", "removed", said("A", h), h["frame"], h, None, {"late_hook": True})
             for k, h in ka.items() if k not in kb]
            + [Change("recompiles", "added", said("B", h), h["frame"], None, h, {"late_hook": True})
               for k, h in kb.items() if k not in ka])


def recompiles_in_all(a: RunFacts, b: RunFacts, only_a: list[str], only_b: list[str]) -> list[Change]:
    """The recompiles of both runs, each whole, where a function compiled in one run only recompiled: per frame, the
    matched frames' changes say theirs, and a rewrite that renames or merges functions (data_dependent's Gate.forward,
    three resume functions, made one GateRewritten.forward) has none matched. [] where none did, or the totals agree.
    The program's functions only, as check counts them: not those of Python's library that torch compiles (one torch
    version's compiled autograd compiles inspect.py's), which the frames' changes mark."""
    def own(run: RunFacts, key: str) -> bool:
        filename = run.frames[key].filename
        return not (filename and is_python_library_file(filename))

    total_a, total_b = (sum(f.recompiles for k, f in run.frames.items() if own(run, k)) for run in (a, b))
    unmatched = [(side, run.frames[k]) for side, run, keys in (("A", a, only_a), ("B", b, only_b)) for k in keys
                 if run.frames[k].recompiles and own(run, k)]
    if total_a == total_b or not unmatched:
        return []
    ones = "; ".join(f"{f.label} recompiled {times(f.recompiles)} (compiled in {side} only)" for side, f in unmatched)
    if total_b == 0:
        title = f"recompiles gone: {total_a} in A, none in B ({ones})"
    elif total_a == 0:
        title = f"new recompiles: none in A, {total_b} in B ({ones})"
    else:
        title = f"recompiles in all: {total_a} → {total_b} ({ones})"
    return [Change("recompiles", "changed", title, None, total_a, total_b,
                   {"unmatched": [{"side": side, "frame": f.key, "recompiles": f.recompiles} for side, f in unmatched]})]


def graphs_in_all(a: RunFacts, b: RunFacts, only_a: list[str], only_b: list[str]) -> list[Change]:
    """What both runs compiled, each whole (graphs, their ops, generated kernels), where no function was compiled in
    both (the caller asks only then): per frame, the matched frames' changes say theirs, and a model compiled whole
    against its blocks compiled one by one (regional compilation) has none matched, though what it saved is the point.
    [] where the totals agree. Kernels only where every graph's output code was logged (not served from cache)."""
    if not (only_a or only_b):
        return []

    def totals(run: RunFacts) -> tuple[int, int, int | None]:
        graphs = [g for f in run.frames.values() for g in f.graphs]
        # (graph_nodes reads an indexing `chunk[0]` as a get_attr: an operator.getitem node, which torch's
        # graph_op_count counts; a subgraph's `self.wrap_body_0` is the get_attr it does not)
        ops = sum(1 for g in graphs for n in g.nodes if n[0] not in ("placeholder", "output")
                  and not (n[0] == "get_attr" and str(n[1]).startswith("self.")))
        known = [g.kernels for g in graphs if g.kernels is not None]
        kernels = sum(sum(k.values()) for k in known) if len(known) == len(graphs) else None
        return len(graphs), ops, kernels

    (graphs_a, ops_a, kernels_a), (graphs_b, ops_b, kernels_b) = totals(a), totals(b)
    parts = [f"{x} → {y} {what}" for x, y, what in ((graphs_a, graphs_b, "graphs"), (ops_a, ops_b, "graph ops"),
                                                  (kernels_a, kernels_b, "generated kernels"))
             if x is not None and y is not None]
    if (graphs_a, ops_a, kernels_a) == (graphs_b, ops_b, kernels_b):
        return []
    return [Change("graphs", "changed", f"graphs in all: {', '.join(parts)} (no function was compiled in both runs)",
                   None, {"graphs": graphs_a, "ops": ops_a, "kernels": kernels_a},
                   {"graphs": graphs_b, "ops": ops_b, "kernels": kernels_b})]

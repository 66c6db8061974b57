"""Findings of graph breaks and recompiles: breaks grouped by user line (one cause each), a model whose every graph is
empty, breaks in DDP's forward, in torch's own code or at torch.compiler.disable's calls; what made frames recompile,
hooks registered after a compile, compiled autograd's backward captured again, compiles again after
torch._dynamo.reset()."""

from __future__ import annotations

import os
from typing import Any

from ...lazy_regex import lazy_compile
from ...model.ids import CompileId, compilation_key
from ...wording import and_list, count, format_seconds, times
from ..caches import Caches
from ..compile_time import CompileTimes
from ..graph_breaks import GraphBreak
from ..graph_breaks.wording import DDP_ADVICE
from ..recompiles import BACKWARD_REASONS_HINT, FrameRecompiles, Recompiles
from ..recompiles.backward_and_resets import BACKWARD_LABEL_HELP
from . import INFO, WARNING, Finding, Insights, shown_names
from .compile_time_and_caches import so_far_note


# `tensor 'x'` / `tensor 'kwargs['input_ids']'`: the name differs between frames that recompile for one cause.
TENSOR_NAME = lazy_compile(r"^tensor '.*?' (?=\w+ mismatch)")


# Graph-break causes listed one by one; the rest are summed up in one finding, but never a single one: each cause is a
# fix of its own, and "1 more graph break cause" in its place took as much room and hid what it was (the 4th of
# python_features.py's: `random.random()`, the one that also recompiled).
GRAPH_BREAK_FINDINGS = 3


def _first_sentence(text: str) -> str:
    head, dot, rest = text.partition(". ")
    return head + dot.strip() if rest else text


def recompile_cause(frame: FrameRecompiles) -> tuple:
    """What made a frame recompile, without the frame's own names: frames with the same cause share one finding."""
    return tuple((s.guard.change, TENSOR_NAME.sub("tensor ", s.guard.guard)) if s.guard else None for s in frame.steps)


def compiled_alone(frame: FrameRecompiles, breaks: list[GraphBreak]) -> str:
    """Of a frame Dynamo compiled only because a graph break made it skip the frame that called it (a tensor
    subclass's __torch_dispatch__, each op of the skipped forward): that break, the one to fix; "" for any other."""
    chain = {compilation_key(CompileId.parse(cid)) for cid in frame.chain}
    for b in breaks:
        if b.skipped_frame is None or not b.skipped_in:
            continue
        if any(chain <= set(c.compile_ids) for c in b.compiled_callees):
            at = f" at its graph break at {b.location.short}" if b.location else ""
            return (f"compiled on its own because Dynamo skipped {b.skipped_frame.function or 'the function'} "
                    f"({', '.join(b.skipped_in)}){at}: fix that first")
    return ""


def _graph_break_causes(breaks: list[GraphBreak]) -> list[list[GraphBreak]]:
    """Breaks grouped by user line: one line (a logger.warning_once, say) can give several reasons; it is one cause."""
    causes: dict[Any, list[GraphBreak]] = {}
    for b in breaks:
        causes.setdefault(b.location.key if b.location else ("reason", b.reason), []).append(b)
    return sorted(causes.values(), key=lambda group: -sum(b.count for b in group))  # stable: first seen first


def graph_break_findings(breaks: list[GraphBreak]) -> list[Finding]:
    causes = _graph_break_causes(breaks)
    shown = len(causes) if len(causes) == GRAPH_BREAK_FINDINGS + 1 else GRAPH_BREAK_FINDINGS
    out: list[Finding] = []
    for group in causes[:shown]:
        first = group[0]
        compiles = list(dict.fromkeys(cid for b in group for cid in b.compile_ids))
        where = f" at {first.location.short}" if first.location else ""
        function = f" in {first.location.function}" if first.location and first.location.function else ""
        detail = first.reason
        if len(group) > 1:
            detail += "; the same line also gives: " + "; ".join(_first_sentence(b.reason) for b in group[1:])
        if first.transform is not None and first.torch_location is None:
            detail += f"; inside {first.transform.label}, whose whole call ran eagerly"
        elif first.caused_by:
            detail += f"; in torch.func's own code, because of the graph break at {', '.join(first.caused_by)}"
        if first.callees_text:
            detail += f"; what the call ran was compiled on its own: {first.callees_text}"
        if first.builtin_fix:
            detail += f": {first.builtin_fix}"
        amp = next((b.amp_function for b in group if b.amp_function), None)
        if amp:
            detail += (f"; Dynamo never traces torch.amp ({amp}): keep the scaler's calls out of the compiled "
                       "function, compile the model instead")
        out.append(Finding(WARNING, "graph_breaks", f"graph break{where}{function} ({count(len(compiles), 'compilation')})",
                           detail))
    rest = causes[shown:]
    if rest:
        lines = [g[0].location.short if g[0].location else g[0].reason for g in rest]
        out.append(Finding(WARNING, "graph_breaks", f"{count(len(rest), 'more graph break cause')}", shown_names(lines)))
    return out


def ran_eagerly(ins: Insights) -> list[Finding]:
    """Every graph Dynamo made is empty: the compile ids, restarts and graph breaks below read as compiled code, and
    none is. Where Dynamo stopped (its graph breaks) is why; without a break, it found no tensor operation."""
    found = ins.empty_graphs
    if not found.ran_eagerly:
        return []
    n = len(found.empty) + len(found.no_graph)
    held = "its one compilation holds no operator" if n == 1 else f"none of its {n} compilations holds an operator"
    def first_hit(b: GraphBreak) -> tuple:  # the program's first break first: where its first compilation stopped
        ids = [CompileId.parse(c) for c in b.compile_ids]
        return min((c.sort_key() for c in ids if c is not None), default=(float("inf"),))

    breaks = [f"{b.location.short}{f' in {b.location.function}' if b.location.function else ''} ({b.reason})"
              if b.location else b.reason for b in sorted(ins.graph_breaks.breaks, key=first_hit)]
    where = (f"Dynamo broke the graph before any operation at {shown_names(breaks)}" if breaks
             else "Dynamo found no tensor operation to put in a graph")
    return [Finding(WARNING, "graph_breaks", "every graph Dynamo made is empty: your model ran eagerly",
                    f"{where}; {held}, so nothing of the program ran compiled")]


def breaks_in_ddp(breaks: list[GraphBreak]) -> list[Finding]:
    """torch.compile(DistributedDataParallel(model)) breaking in DDP's own code (its logger; contextlib, for the
    _inside_ddp_forward torch skips): one finding with the known way to compile under DDP, not torch's hints, which
    ask to remove a call from DDP's file, nor "nothing in your code to change"."""
    ours = [b for b in breaks if b.in_ddp_forward]
    if not ours:
        return []
    where = shown_names([f"{b.location.short}{f' in {b.location.function}' if b.location.function else ''}"
                    if b.location else b.reason for b in ours])
    compiles = list(dict.fromkeys(cid for b in ours for cid in b.compile_ids))
    return [Finding(WARNING, "graph_breaks", f"Dynamo breaks the graph in DistributedDataParallel's forward "
                                             f"({count(len(compiles), 'compilation')})",
                    f"at {where}, DDP's code, not yours: {DDP_ADVICE}")]


def breaks_by_torch(breaks: list[GraphBreak]) -> list[Finding]:
    """torch._dynamo.graph_break() in torch's own files (the optimizer's _use_grad): one finding, not a warning."""
    ours = [b for b in breaks if b.by_torch]
    if not ours:
        return []
    where = shown_names([f"{b.location.short} ({b.location.function})" if b.location and b.location.function
                    else b.location.short if b.location else "?" for b in ours])
    compiles = list(dict.fromkeys(cid for b in ours for cid in b.compile_ids))
    return [Finding(INFO, "graph_breaks", f"PyTorch breaks the graph on purpose at {where}",
                    f"torch._dynamo.graph_break() in torch's own code ({count(len(compiles), 'compilation')}): "
                    "nothing in your code to change")]


def disabled_calls(breaks: list[GraphBreak]) -> list[Finding]:
    """Calls of functions the user wrapped with torch.compiler.disable: eager on purpose, so one finding, not warnings."""
    asked = [b for b in breaks if b.disabled]
    if not asked:
        return []
    where = shown_names([f"{b.disabled_function or '?'} ({b.location.short})" if b.location
                    else b.disabled_function or "?" for b in asked])
    reasons = list(dict.fromkeys(f"{b.disabled_function or '?'}: \"{b.disabled_reason}\"" for b in asked
                                 if b.disabled_reason))
    compiles = list(dict.fromkeys(cid for b in asked for cid in b.compile_ids))
    return [Finding(INFO, "graph_breaks", f"ran eagerly as you asked (torch.compiler.disable): {where}",
                    f"each call splits its graph ({count(len(compiles), 'compilation')} broke there)"
                    + (f"; reason given: {'; '.join(reasons)}" if reasons else "")
                    + "; nothing to fix, unless they should be compiled")]


def hooks_registered_late(rec: Recompiles) -> list[Finding]:
    """A hook registered after its module's function was compiled, found where a later recompile's guard tree counts
    it and the earlier one's none: torch does not recompile for it, so a call the earlier compile served ran without
    the hook, silently. A warning even where the recompile that found it was expected (an eval() beside it)."""
    out: list[Finding] = []
    for frame, step, change in rec.late_hooks:
        served = step.guard.compile_id if step.guard is not None else None
        out.append(Finding(
            WARNING, "recompiles",
            f"{change.name}: {change.hooks_now} registered after {frame.display_name} was compiled; calls served by "
            f"{served} run without it",
            f"{served} guards {'no' if change.before == '0' else change.before} hooks of {change.name}, "
            f"{step.compile_id} {change.after} ({step.compile_id} compiled for another change): torch does not "
            f"recompile for a hook registered later, so each call {served} served after it was registered ran "
            "without it (how many the log does not say). Register hooks before the first compiled call, or "
            "call torch._dynamo.reset() after registering one. Only a recompile for something else shows such a "
            "hook: one registered with no recompile after it leaves nothing in the log."))
    return out


def backward_recaptures(rec: Recompiles) -> list[Finding]:
    """Compiled autograd traced and compiled the backward again: why its cache missed, where torch logged it."""
    if not rec.backward_recaptures:
        return []
    again = rec.backward_graphs[1:]
    said = [g for g in again if g.reason]
    if said:
        detail = (f"{said[0].label}: {said[0].reason}" + (f" (and {len(said) - 1} more)" if len(said) > 1 else "")
                  + f" ({BACKWARD_LABEL_HELP})")
    else:
        detail = (f"its cache missed, so the backward was captured and compiled again as {shown_names([g.label for g in again])} "
                  f"({BACKWARD_LABEL_HELP}); to see why, run with {BACKWARD_REASONS_HINT}")
    return [Finding(WARNING, "recompiles", f"compiled autograd captured {count(len(rec.backward_graphs), 'backward graph')}",
                    detail)]


def compiled_afresh(rec: Recompiles, ct: CompileTimes, ca: Caches) -> list[Finding]:
    """A function compiled again after torch._dynamo.reset(): no guard failed, the program threw its compiled code
    away. A warning: in a loop, every iteration pays the first compile again. From scratch unless a cache served a
    compile after the reset (reset() keeps what the caches hold): cache_hit_miss.log's fn, whose [3/0] loaded the graph
    its [1/0] had compiled."""
    out = []
    # (a set: a list's membership test per compile again was quadratic in the number of resets)
    served_from_cache = set(ca.reused_in_run).union(ca.graphs_missing)
    for fn in rec.afresh:
        seconds = ct.seconds_of(fn.again)
        cost = (f"; compiling it again took {format_seconds(seconds)}{so_far_note(ct, fn.again)} of the {format_seconds(ct.total_s)} compiling"
                if seconds > 0 and ct.total_s else "")
        where = f" ({os.path.basename(fn.filename)}:{fn.first_line})" if fn.filename else ""
        logged = f" (torch logged each as {shown_names(list(dict.fromkeys(fn.logged_as)))})" if fn.logged_as else ""
        served = [cid for cid in fn.again if cid in served_from_cache]
        how = "as at first"
        if served:
            sources = [s for cid in served for s in ca.reused_in_run.get(cid, [])]
            filled = f" {and_list(list(dict.fromkeys(sources)))} had filled" if len(sources) == len(served) else ""
            how = (f"again, though {and_list(served)} {'was' if len(served) == 1 else 'were'} served from the "
                   f"cache{filled} (reset() throws compiled functions away, not what the caches hold)")
        # (the compiles after a reset come last: where the function was compiled before any reset, its first is not)
        after = len(fn.after_reset)
        which = ("each" if after == len(fn.compile_ids) else "the last" if after == 1 else f"the last {after}")
        out.append(Finding(WARNING, "recompiles", f"{fn.name or 'a function'}{where} compiled "
                           f"{'' if served else 'from scratch '}{times(len(fn.compile_ids))}, {which} after "
                           "torch._dynamo.reset()",
                           f"{shown_names(fn.compile_ids)}{logged}: reset() drops every compiled function, so the next "
                           f"call compiles it {how}{cost}; call reset() once, outside the loop, or not at all"))
    return out

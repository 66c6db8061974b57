"""Findings of what compiling cost: the recompiles' share of the compile time, a time the log ends during, blocks of
one shape compiled once each (regional compilation compiles one), max-autotune's searches, kernels compiled again
after an FX graph cache hit, and what freezing changed (and the caches it loses)."""

from __future__ import annotations

from collections import Counter

from ...model.ids import compilation_key
from ...wording import and_list, count, format_seconds, times
from ..autotuning import Autotuning
from ..caches import CACHES, KERNELS_AGAIN_WORTH_SAYING_S, Caches, kernels_compiled_again
from ..compile_time import STILL_COMPILING, CompileTimes
from ..compiled_frames import as_the_users_model, names_self
from ..freezing import Freezing
from ..recompiles import FrameRecompiles
from ..repeated_blocks import RepeatedBlocks
from . import INFO, WARNING, Finding, shown_names


def kernels_compiled_again_finding(ct: CompileTimes, found: Caches) -> Finding | None:
    """Compiles the FX graph cache served that still compiled their kernels (caches.kernels_compiled_again)."""
    again = kernels_compiled_again(ct, found)
    seconds = again.seconds
    if seconds < KERNELS_AGAIN_WORTH_SAYING_S or not ct.total_s:
        return None
    label = ct.labels.get("kernel_compile", "kernel compile")
    ids = shown_names(again.compile_ids)
    return Finding(WARNING, "caches", f"served from cache, yet {label} took {format_seconds(seconds)} "
                   f"({seconds / ct.total_s:.0%} of compiling)",
                   f"{ids} hit the FX graph cache but compiled their kernels again: a hit gives Inductor's generated "
                   "code, and the compiled kernels come from this run's Inductor cache directory "
                   "(TORCHINDUCTOR_CACHE_DIR), which did not hold them, as after torch.compiler.load_cache_artifacts "
                   "into an empty one; keep that directory from run to run to skip the compile")


def frozen(found: Freezing, ca: Caches, ct: CompileTimes) -> Finding:
    """What freezing did to the graphs (parameters folded into constants, weights packed for a CPU library), and what
    it costs: the FX graph cache refuses a frozen graph, and the weights are constants of the compiled code. The
    config only says freezing was on; the graphs say what it changed."""
    folded = sum(c.folded for c in found.compiles)
    ids = [c.compile_id for c in found.compiles]
    # (parameters, where the AOT graph names each input that went as one: ParamAOTInput)
    every_parameter = folded and folded == sum(len(c.parameters) for c in found.compiles)
    title = (f"freezing folded {count(folded, 'parameter' if every_parameter else 'graph input')} into constants of "
             if folded else "freezing made the parameters constants of ") + shown_names(ids)
    said: list[str] = []
    if len(found.compiles) == 1 and found.compiles[0].inputs:
        said.append("the compiled graph takes only " + and_list(found.compiles[0].inputs))
    packed: dict[tuple[str, str | None], list[str]] = {}
    for compiled in found.compiles:
        for weight in compiled.packed:
            packed.setdefault((weight.how, weight.op), []).append(weight.site.short if weight.site else "?")
    for (how, op), sites in packed.items():
        plural = how.replace(" weight ", " weights ", 1) if len(sites) > 1 else how
        said.append(f"{len(sites)} {plural} ({f'{op} at ' if op else ''}{', '.join(sites)})")
    # Where every lookup of these compiles bypassed its cache (2.13: the AOTAutograd cache refuses a frozen graph, the
    # FX graph cache its oneDNN constants), nothing of them is stored for the next process
    looked_up = [e for c in ca.compiles if c.compile_id in ids for e in c.events]
    if looked_up and all(e.outcome == "bypass" for e in looked_up):
        why = "; ".join(f"{CACHES[cache]}: \"{reason}\"" for cache, reason in dict.fromkeys(
            (e.cache, e.bypass_reason) for e in sorted(looked_up, key=lambda e: e.cache)) if reason)
        seconds = ct.seconds_of(ids) if ct else 0.0
        said.append(f"no cache stores it ({why}): every process compiles it from scratch"
                    + (f" ({format_seconds(seconds)} here)" if seconds else ""))
    said.append("the weights are constants of the compiled code: a weight changed after compiling is not seen "
                "until it is compiled again")
    return Finding(INFO, "caches", title, "; ".join(said))


def recompile_cost(ct: CompileTimes, frames: list[FrameRecompiles], short: bool = False) -> str:
    """"its recompiles took 3.93 s of the 26.27 s compiling (15%)" ("recompiles: 3.93 s (15%)", short): the time
    compiling again cost, what passing the value differently would save of a slow compile ("" where the log has no
    time for them)."""
    steps = [s.compile_id for f in frames for s in f.steps]
    seconds = ct.seconds_of(steps)
    if not steps or seconds <= 0 or not ct.total_s:
        return ""
    share = f"{seconds / ct.total_s:.0%}"
    if short:
        return f"recompiles: {format_seconds(seconds)} ({share})"
    whose = "its recompiles" if len(frames) == 1 else "the recompiles"
    return f"{whose} took {format_seconds(seconds)}{so_far_note(ct, steps)} of the {format_seconds(ct.total_s)} compiling ({share})"


def so_far_note(ct: CompileTimes, compile_ids: list[str]) -> str:
    """" so far ([1/1] still compiling when the log ended)": what a time of these compiles that says "took" leaves
    out, where the log ends during one of them ("" where every one finished)."""
    wanted = {compilation_key(cid) for cid in compile_ids}
    open_ids = [c.compile_id for c in ct.compiles if c.unfinished and c.compile_id in wanted]
    return f" so far ({shown_names(open_ids)} {STILL_COMPILING})" if open_ids else ""


def repeated_blocks(group: list[RepeatedBlocks], ct: CompileTimes) -> Finding:
    """A model of identical blocks compiled whole: its graph holds a copy of the block's code per block, which each
    stage of the compile traces and lowers again. Compiling the block (regional compilation) compiles that code once: the other
    blocks pass its guards (their parameters are inputs of its graph) and reuse it."""
    first = group[0]
    ids = [r.compile_id for r in group]
    seconds = ct.seconds_of(ids)
    cls = first.class_name or "the block"
    took = f": {shown_names(ids)} took {format_seconds(seconds)}" if seconds > 0 else ""
    compiled = [c for c in ct.compiles if c.compile_id in ids]
    wrapped = any(c.called_from is not None for c in compiled)
    model_local = next((c.model_local for c in compiled if c.model_local is not None), None)
    # (`self` stays in the title and the blocks: the model's forward names them so; a wrapper's local is no one's)
    named = (first.container if names_self(first.container)
             else as_the_users_model(first.container, wrapped, model_local))
    blocks = named + first.blocks.removeprefix(first.container)
    loop = f"for block in {as_the_users_model(first.container, wrapped, model_local)}"
    return Finding(INFO, "compile_time", f"{shown_names(ids)} compiled {cls}'s code {times(len(first.indices))}, once per "
                   f"block of {named}",
                   f"{'its graph holds' if len(ids) == 1 else 'each of their graphs holds'} {blocks}, each the same code with {first.parameters} parameters or buffers "
                   f"of the same shapes, which Dynamo, AOTAutograd and Inductor traced and lowered each{took}; compile the block instead of the "
                   f"model (regional compilation): `{loop}: block.compile()` in place of torch.compile(model): "
                   f"{cls}.forward is compiled once and every block reuses it (their parameters are inputs of its graph)")


# Below this, benchmarking kernels at their first run is not worth a line of "what to fix first" (a few
# hundredths of a second per kernel); a max-autotune search always is.
AUTOTUNING_WORTH_SAYING_S = 1.0


def autotuning_detail(at: Autotuning) -> str:
    parts = []
    if at.searches:
        ops = Counter(s.op for s in at.searches)
        parts.append(f"{count(len(at.searches), 'max-autotune search', 'max-autotune searches')} ("
                     + ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in ops.items()) + ")")
    if at.kernels:
        parts.append(f"{count(len(at.kernels), 'kernel')} benchmarked")
    if at.failed:
        kinds = Counter(f.exception for s in at.searches for f in s.failed)
        parts.append(f"{count(at.failed, 'candidate')} failed ("
                     + ", ".join(f"{kind} ×{n}" if n > 1 else kind for kind, n in kinds.most_common()) + ")")
    return "; ".join(parts)

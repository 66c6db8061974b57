"""What other analyses add to the recompiles: the specialization that made a guard fail (dynamic shapes), when each
recompile happened and what it cost (compile time), a recompile limit's next steps (errors), and the lines that
switched a module's mode or parameters' requires_grad (state_lines). Each adds to the recompiled frames alone: a log
that recompiled nothing needs none of it (nor the advice it rewrites), and its callers import it only for one that did."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...lazy_regex import lazy_compile
from ...model.ids import compilation_key
from ..compile_time import CompileTimes
from ..dynamic_shapes import Specialization, SymbolCreated
from ..compile_errors import CompileErrors, RECOMPILE_LIMIT
from ..user_locations import FRAME_SOURCE, user_source_name
from . import FailedGuard, FrameRecompiles, Recompiles, SIZE_GUARD
from .advice import (ITEM_IN_GRAPH, NUMBER_MADE_DYNAMIC, NUMBER_SPECIALIZED_AGAIN, SPECIALIZED_ADVICE, mode_advice,
                     parameter_guards, requires_grad_advice)
from .reasons import FLAG

if TYPE_CHECKING:
    from ..state_lines import StateLine

# A guard on a number: `___as_tensor(X).item() == 0.0046…` (a float Dynamo made a symbol) or `X == 2`.
_VALUE_GUARD = lazy_compile(r"^(?:___as_tensor\((?P<tensor>.{1,500})\)\.item\(\)|(?P<name>[\w.\[\]'\"]{1,500})) == "
                            r"(?P<value>-?\d{1,30}(?:\.\d{1,30})?(?:e-?\d{1,3})?)$")


def _same_number(a: str | None, b: str) -> bool:
    """sympy's "0.00466666666666667" and Python's "0.004666666666666667" are one value (sympy keeps 15 digits)."""
    try:
        return math.isclose(float(a or ""), float(b), rel_tol=1e-12)
    except ValueError:
        return False


def _value_specialization(guard: FailedGuard, specializations: list[Specialization]) -> Specialization | None:
    """The specialization, in the compile the guard guarded, of the number a value guard compares
    (`___as_tensor(self.param_groups[0]['lr']).item() == 0.004666666666666667`: the float lr that compile made a symbol
    and then fixed): what a guard torch could not name the source of ("unknown source ..., please file a bug") came
    from."""
    m = _VALUE_GUARD.match(guard.guard)
    if m is None:
        return None
    read = m["tensor"] or m["name"]
    return next((spec for spec in specializations
                 if spec.compile_id == guard.compile_id and _same_number(spec.value, m["value"])
                 and any(FRAME_SOURCE.sub(r"\1", src) == read for src in spec.sources)), None)


def link_specializations(found: Recompiles, specializations: list[Specialization]) -> None:
    """Ties each size guard that failed to the specialization of that size in the compile it guarded (a size torch
    made static because a line fixed it, as transformers' GPT-2 did in generate()), and says so in the advice; and each
    value guard to the specialization of that number (a compiled optimizer's lr), which says where it was read."""
    for frame in found.frames:
        sizes = False
        for step in frame.steps:
            guard = step.guard
            if guard is None:
                continue
            m = SIZE_GUARD.match(guard.guard) if guard.change == "size" else None
            if m is not None:
                source = f"{m['tensor']}.size()[{m['dim']}]"
                step.specialized = next((spec for spec in specializations
                                         if spec.compile_id == guard.compile_id and spec.value == m["size"]
                                         and any(FRAME_SOURCE.sub(r"\1", src) == source for src in spec.sources)), None)
                sizes = sizes or step.specialized is not None
            elif guard.change != "size":
                step.specialized = _value_specialization(guard, specializations)
            if step.specialized is not None and step.specialized.recompile is None:
                step.specialized.recompile = step.compile_id
        # (the advice is on sizes: a number's guard, the optimizer's lr, has its own)
        if sizes and SPECIALIZED_ADVICE not in frame.advice:
            frame.advice.insert(0, SPECIALIZED_ADVICE)
        _number_specialized_again(frame)


def link_guarded_values(found: Recompiles, symbols: list[SymbolCreated]) -> None:
    """Gives the symbol a recompile made for a number whose value guard failed (`self.param_groups[0]['lr'] == 0.001`:
    a learning rate made dynamic at 0.0009999999753259891) the guard's value, so that its value is shown apart from
    it: both rounded to six digits read 0.001, a recompile for no change."""
    for frame in found.frames:
        for step in frame.steps:
            m = _VALUE_GUARD.match(step.guard.guard) if step.guard is not None and step.guard.change != "size" else None
            if m is None:
                continue
            read, compiled = m["tensor"] or m["name"], compilation_key(step.compile_id)
            for symbol in symbols:
                if (symbol.guarded_value is None and symbol.source and compilation_key(symbol.compile_id) == compiled
                        and FRAME_SOURCE.sub(r"\1", symbol.source) == read):
                    symbol.guarded_value = m["value"]


def _number_specialized_again(frame: FrameRecompiles) -> None:
    """Where a number torch made dynamic (a Python int past a graph break, say) was specialized again by a line of
    that compile, the advice that automatic dynamic took care of it is wrong: say which line fixed it instead."""
    again = [st for st in frame.steps if st.guard is not None and st.guard.change == "constant"
             and st.specialized is not None and st.specialized.location is not None]
    if not again:
        return
    spec = again[0].specialized
    assert spec is not None and spec.location is not None
    names = ", ".join(dict.fromkeys(st.dynamic_of for st in frame.steps
                                    if st.guard is not None and st.guard.change == "constant" and st.dynamic_symbol))
    where = spec.location.short + (f" (`{spec.location.code}`)" if spec.location.code else "")
    advice = NUMBER_SPECIALIZED_AGAIN.format(names=names or "the number", compile_id=compilation_key(spec.compile_id), where=where,
                                             item=ITEM_IN_GRAPH if ".item()" in names else "")
    made = NUMBER_MADE_DYNAMIC.split("{names}", 1)[0]
    frame.advice = [advice if a.startswith(made) and "(automatic dynamic)" in a else a for a in frame.advice]
    if advice not in frame.advice:
        frame.advice.insert(0, advice)


def link_times(found: Recompiles, times: CompileTimes) -> None:
    """Says when each recompile happened and what it cost, from the compile-time timeline: its start (from the log's
    first record), how long after the frame's compile before it ended, and its compile time."""
    spans: dict[str, tuple[float, float]] = {}
    for row in times.timeline:
        if row.compile_id is None:
            continue
        key = compilation_key(row.compile_id)
        start, end = spans.get(key, (row.start_s, row.start_s + row.duration_s))
        spans[key] = (min(start, row.start_s), max(end, row.start_s + row.duration_s))
    cost = {c.compile_id: c.total_s for c in times.compiles}
    unfinished = {c.compile_id for c in times.compiles if c.unfinished}
    for frame in found.frames:
        ids = [compilation_key(cid) for cid in frame.chain]
        for step in frame.steps:
            key = compilation_key(step.compile_id)
            span = spans.get(key)
            if span is None:
                continue
            step.started_s = span[0]
            step.cost_s = cost.get(key)
            step.unfinished = key in unfinished
            before = ids[:ids.index(key)] if key in ids else []
            ended = [spans[k][1] for k in before if k in spans]
            if before and ended:
                step.previous = frame.chain[len(before) - 1]
                step.quiet_s = max(span[0] - max(ended), 0.0)


def limit_steps(frame: FrameRecompiles) -> list[str]:
    """What to do about a frame that hit the recompile limit, as the Errors section says it: the guard that kept
    failing, then the frame's own advice (the Recompiles section's, word for word)."""
    guarded = [s for s in frame.steps if s.guard is not None]
    if not guarded:
        return list(frame.advice)
    step, guards = guarded[-1], [s.guard for s in guarded]
    last = step.guard
    assert last is not None
    subjects = {s.dynamic_of for s in frame.steps}
    where = f", at {last.location.short}" if last.location is not None else ""
    code = f" ({last.location.code.strip()})" if last.location is not None and last.location.code else ""
    # (whose guard, by the chain: the id torch's reason starts with counts frames from 0 again after a reset)
    at = frame.chain.index(step.compile_id) if step.compile_id in frame.chain else 0
    of = f" ({frame.compilations[at - 1]}'s)" if at > 0 else ""  # (by compilation, as the steps read)
    if len(subjects) == 1 and "" not in subjects and len(guards) == len(frame.steps) > 1:
        said = (f"Each of its {len(frame.steps)} recompiles failed a guard on `{subjects.pop()}`, the last "
                f"`{last.shown}`{of}{where}{code}.")
    else:
        said = f"The guard that failed last: `{last.shown}`{of}{where}{code}."
    return [said, *frame.advice]


def name_failing_guards(errors: CompileErrors, rec: Recompiles) -> None:
    """A recompile limit's next steps, from the recompiles analysis where it has the frame: the guard that kept
    failing and what to do about it, as the Recompiles section says it, instead of the general steps."""
    by_compile = {cid: frame for frame in rec.frames if frame.hit_limit for cid in frame.chain}
    for err in errors.errors:
        frame = by_compile.get(err.compile_id) if err.stage == RECOMPILE_LIMIT else None
        if frame is not None and frame.steps:
            err.next_steps = limit_steps(frame)


def link_switch_lines(found: Recompiles, changed_state: list[StateLine]) -> None:
    """The mode and requires_grad advice of each frame (advice.mode_advice, advice.requires_grad_advice, named by the
    guards that failed) where the lines found for its recompiles (state_lines: each the only line for its changes)
    switched more modules, or set more parameters, than those guards name: with those and the lines, as the line does
    it (a loop over model.modules() switching 70 Dropouts, where torch's reason names the first; a loop over
    model.backbone.parameters() freezing its weight, where torch's names its bias)."""
    # (recompile, kind) -> the lines found alone for its changes, with their place: grouped once, looked up per frame
    alone: dict[tuple[str, str], list[tuple[int, StateLine]]] = {}
    for place, marked in enumerate(changed_state):
        if marked.alone:
            alone.setdefault((marked.recompile, marked.kind), []).append((place, marked))
    for frame in found.frames:
        steps = list(dict.fromkeys(compilation_key(s.compile_id) for s in frame.steps))
        modes = [s.guard for s in frame.steps if s.guard is not None and s.guard.change == "flag"
                 and (m := re.match(FLAG, s.guard.guard)) and m["name"].endswith(".training")]
        params = parameter_guards(frame.steps)
        # (kind -> what its guards name, as StateLine.changed says it, and its advice given the lines' changes)
        advising: dict[str, tuple[set[str], Callable[..., str]]] = {
            "training": ({user_source_name(m["name"]) for g in modes if (m := re.match(FLAG, g.guard))},
                         lambda *lines: mode_advice(modes, *lines)),
            "requires_grad": ({f"{user_source_name(t)}.requires_grad" for t in params},
                              lambda *lines: requires_grad_advice(params, *lines))}
        for kind, (guarded, advised) in advising.items():
            if not guarded:
                continue
            lines = [s for _, s in sorted((p for step in steps for p in alone.get((step, kind), ())),
                                          key=lambda placed: placed[0])]
            if not lines:
                continue
            named = advised()
            if named not in frame.advice or not any(set(s.changed) - guarded or s.left_out for s in lines):
                continue
            # (the line's code a `code` span: backticks kept out, as the page's advice takes a span's text)
            made_at = list(dict.fromkeys(f"{os.path.basename(s.path)}:{s.line} (`{s.code.replace('`', '')}`)"
                                         for s in lines))
            advice = advised([n for s in lines for n in s.changed], max(s.left_out for s in lines), made_at)
            frame.advice = [advice if a == named else a for a in frame.advice]

"""Containers whose length a failed guard checks (`len(G['history']) == 2`): the global or closure variable the
compiled code changes itself (torch's dynamo_side_effects), how its length went over the frame's compiles, and the
advice for it."""

from __future__ import annotations

import re

from ...model.trace import Compile, Trace
from ..user_locations import UserLocation, closure_owner, is_torch_file, traceback_frames
from . import FailedGuard, LengthHistory, PinnedByTrees, RecompileStep
from .advice import ADVICE

# A length guard's container, in either form of Dynamo's LENGTH_CHECK: "len(G['history']) == 2", "not G['history']".
_LENGTH_SUBJECT = r"^\s*(?:len\((?P<len>.+)\)\s*==\s*\d+|not (?P<not>.+?))\s*$"
_GLOBAL_NAME = r"^G\[['\"](?P<name>[^'\"]+)['\"]\]$"
SIDE_EFFECTS_ARTIFACT = "dynamo_side_effects"  # what the compiled code changes that outlives it, with the line that does
_MUTATION = r"Mutating object of type (?P<type>\w+) \(source name: (?P<source>[^)\n]+)\)(?P<stack>(?:\n[ \t]+.*|\n)*)"
GLOBAL_MUTATED_ADVICE = (
    "The compiled code changes the global {type} {name} itself ({where}, a change torch logged), and Dynamo guards on "
    "its length, {history}. {fix}")
KEEP_OUT = "Keep that bookkeeping out of the compiled function (in the code that calls it)."
# A length that changed and then stayed (a dict's first key, set once): what it cost is paid, and the way to spare it.
SETTLED_LENGTH_FIX = ("To spare even that, give it its {what} before the first compiled call, or keep that bookkeeping "
                      "out of the compiled function (in the code that calls it).")
# A variable of a function's closure (`seen` of `counter`'s), which the compiled code appends to: no argument to pad,
# but state the compiled function reads and grows, so each new length compiles again.
CLOSURE_MUTATED_ADVICE = (
    "The compiled code changes the {type} `{name}` itself, a variable of {owner}'s closure ({where}, a change torch "
    "logged), and Dynamo guards on its length, {history}. It is not an argument to pad: don't grow state the compiled "
    "function reads. Keep that bookkeeping in the code that calls the function, and where the function needs the "
    "count, pass it in as a tensor.")
CLOSURE_LENGTH_ADVICE = ("`{name}`, a variable of {owner}'s closure, changes length between calls, and Dynamo guards "
                         "on its length: keep it the same while the function runs compiled, or pass what the function "
                         "needs of it in as a tensor.")
GLOBAL_LENGTH_ADVICE = ("The global {name} changes length between calls, and Dynamo guards on its length: keep it "
                        "the same while the function runs compiled, or hold its contents in a tensor.")


def mutations(trace: Trace, entries: list[Compile]) -> dict[str, tuple[str, UserLocation | None]]:
    """Source ("G['history']") -> its type and the line that changes it, for each object the compiled code of these
    compiles changes (torch's dynamo_side_effects artifact: "Mutating object of type list (source name: ...)" and the
    stack of the change, innermost last)."""
    found: dict[str, tuple[str, UserLocation | None]] = {}
    for entry in entries:
        for artifact in entry.artifacts:
            if artifact.name != SIDE_EFFECTS_ARTIFACT:
                continue
            for m in re.finditer(_MUTATION, trace.payload_text(artifact.payload)):
                frames = [f for f in traceback_frames(m["stack"]) if not is_torch_file(f.filename)]
                found.setdefault(m["source"].strip(), (m["type"], frames[-1] if frames else None))
    return found


def length_failures(steps: list[tuple[RecompileStep, Compile]]) -> dict[str, set[str]]:
    """The recompiles at which a length guard of each container failed: source ("G['history']") -> compile ids."""
    failed_at: dict[str, set[str]] = {}
    for st, _ in steps:
        for g in st.failed_guards:
            if source := _length_subject(g.guard):
                failed_at.setdefault(source, set()).add(st.compile_id)
    return failed_at


def length_history(source: str, failed_at: set[str], entries: list[Compile], trees: PinnedByTrees,
                   last_step: str | None) -> LengthHistory | None:
    """source ("G['history']")'s lengths over the frame's compiles (entries), with the recompiles at which its length
    guard failed (failed_at, length_failures'); None where nothing says it changed. last_step: the frame's last
    recompile."""
    changed: list[str] = []
    lengths: list[int | None] = []
    stayed = 0
    for entry in entries:
        cid = str(entry.compile_id)
        pinned = trees.lengths(cid)
        length = pinned.get(source) if pinned is not None else None
        if length is None and cid not in failed_at:
            continue
        if length is not None and lengths and lengths[-1] == length:
            stayed += 1
            continue
        if lengths or cid in failed_at:
            changed.append(cid)
        lengths.append(length)
        stayed = 0
    if not changed:
        return None
    return LengthHistory(changed, lengths, stayed, last_step)


def _length_subject(guard: str) -> str:
    """The container a length guard checks ("G['history']" of `len(G['history']) == 2`, `not G['history']`); "" for
    another guard."""
    m = re.match(_LENGTH_SUBJECT, guard)
    return (m["len"] or m["not"]).strip() if m else ""


def _mutated_at(loc: UserLocation | None) -> str:
    """Where the compiled code changed a container: "python_features.py:59: seen.append(t.shape[0])"."""
    return f"{loc.short}: {loc.code}" if loc and loc.code else (loc.short if loc else "where it runs")


def length_advice(guards: list[FailedGuard], mutations: dict[str, tuple[str, UserLocation | None]],
                  history=lambda source: None, recompiles: int = 0) -> list[str]:
    """The advice for containers whose length changed: a global one the compiled code changes itself (a list it
    appends to) is the user's bookkeeping, not an argument to pad, said with how its length went (history: source ->
    LengthHistory | None, of recompiles recompiles); any other, the general advice."""
    advice: list[str] = []
    for guard in guards:
        source = _length_subject(guard.guard)
        named = re.match(_GLOBAL_NAME, source)
        closure = guard.closures.get(source)
        if closure is not None:
            owner = closure_owner(source) or "a function"
            if source in mutations:
                kind, loc = mutations[source]
                went = history(source)
                text = CLOSURE_MUTATED_ADVICE.format(
                    type=kind, name=closure, owner=owner, where=_mutated_at(loc),
                    history="and each new length compiles again" if went is None else went.words(recompiles))
            else:
                text = CLOSURE_LENGTH_ADVICE.format(name=closure, owner=owner)
        elif named is None:
            text = ADVICE["length"]
        elif source in mutations:
            kind, loc = mutations[source]
            where = _mutated_at(loc)
            went: LengthHistory | None = history(source)
            if went is None:
                said, fix = "and each new length compiles again", KEEP_OUT
            else:
                said = went.words(recompiles)
                fix = (SETTLED_LENGTH_FIX.format(what="keys" if kind == "dict" else "final length") if went.stayed
                       else KEEP_OUT)
            text = GLOBAL_MUTATED_ADVICE.format(type=kind, name=named["name"], where=where, history=said, fix=fix)
        else:
            text = GLOBAL_LENGTH_ADVICE.format(name=named["name"])
        if text not in advice:
            advice.append(text)
    return advice

"""What else changed between the compile whose guard failed and the recompile, from their guard trees (a module's
mode, a parameter's requires_grad, a hook registered after compiling, a global state such as grad mode), and
whether each recompile was expected (a setting no compiled version had) or avoidable."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from ...model.trace import Compile
from ...wording import and_list
from ..compiled_frames import CompiledFrames, UsersNames
from ..user_locations import FRAME_SOURCE, UserLocation, last_user_stack_frame, user_source_name
from . import PASSED_ARGUMENTS, PinnedByTrees, RecompileStep, StateChange, compilation_label

# What each part of a failed GLOBAL_STATE guard ("GLOBAL_STATE changed: grad_mode ") is, in the API that sets it
# (torch/csrc/dynamo/guards.cpp, GlobalStateGuard::reason).
GLOBAL_STATES = {
    "grad_mode": "grad mode (torch.no_grad(), torch.inference_mode(), torch.enable_grad())",
    "torch_function": "torch function mode",
    "deterministic_algorithms": "torch.use_deterministic_algorithms()",
    "allow_tf32": "the TF32 setting (torch.backends.cudnn.allow_tf32)",
    "allow_tf32_cublas": "the TF32 matmul setting (torch.backends.cuda.matmul.allow_tf32)",
    "allow_fp16_reduce": "the reduced-precision fp16 reduction setting",
    "allow_bf16_reduce": "the reduced-precision bf16 reduction setting",
    "num_threads": "torch.set_num_threads()",
    "default_dtype": "torch.set_default_dtype()",
}
_GLOBAL_STATE_PARTS = r"GLOBAL_STATE changed:(?P<parts>[\w ]*)"
STATE_ADVICE = ("Calls run under a different {states}{where}: Dynamo guards on it and compiles once for each. Call the "
                "compiled function under one setting everywhere (the same torch.inference_mode() or torch.no_grad() "
                "around every call), or keep the odd call out of the compiled function.")
# Where every recompile for the state came with a setting no compiled version had (RecompileStep.expected: eval() for a
# validation call under torch.no_grad()), the call under the other state is on purpose: advising one setting everywhere
# would remove the validation. What it costs instead.
STATE_EXPECTED_ADVICE = ("Calls run under a different {states}{where}: Dynamo guards on it and compiles once for each. "
                         "Expected here, as the same calls switched {why}: it costs one compile for the new setting, "
                         "which later calls under it reuse, so there is nothing to remove.")
# Where some of a state's recompiles were expected and others not (module_state: [0/3] the validation's eval(), [0/4]
# back to train() with [0/2]'s settings, [0/2] failing on a list's length), each said as what it is: one setting
# everywhere would remove the validation, and does not fix a recompile that another guard made.
STATE_MIXED_ADVICE = "Calls run under a different {states}{where}: Dynamo guards on it and compiles once for each. {each}"
STATE_EXPECTED_PART = ("{ids} {is_} expected, as {its} call switched {why}: one compile for the new setting, which "
                       "later calls under it reuse, so there is nothing to remove.")
STATE_SAME_SETTINGS_PART = ("{id} is avoidable: {same} had its settings (modules' modes, parameters' requires_grad) and "
                            "failed on {guard}: that guard made it recompile, not the state, so its fix is that guard's.")
STATE_AVOIDABLE_PART = ("{ids} {is_} avoidable: call the compiled function under one setting everywhere (the same "
                        "torch.inference_mode() or torch.no_grad() around every call), or keep the odd call out of the "
                        "compiled function.")
STATE_UNKNOWN_PART = "{ids}: expected or avoidable, the log cannot tell ({unknown} has no guard tree to compare settings with)."
# What a call switched, where a state recompile was expected (a key of EXPECTED), for STATE_EXPECTED_ADVICE.
EXPECTED_SWITCH = {"training": "a module's mode (.eval() or .train())",
                   "requires_grad": "a parameter's requires_grad (a layer frozen or unfrozen)"}


def changed_states(guard: str) -> list[str]:
    """The global states a failed GLOBAL_STATE guard names, for people: ["grad mode (torch.no_grad(), ...)"]."""
    m = re.search(_GLOBAL_STATE_PARTS, guard)
    return [GLOBAL_STATES.get(part, part) for part in (m["parts"].split() if m else [])]


def user_caller(stack: list | None) -> UserLocation | None:
    """The user's line that called the compiled frame: Dynamo's stack ends with the frame it compiles, not a call."""
    return last_user_stack_frame(stack[:-1]) if stack else None


# One line of the user's calls the function with a tensor that needs no grad, then with one that does: `x = block(x)`
# in a loop over modules gives the first the data and the next the first one's output, computed with its parameters.
SAME_CALL_REQUIRES_GRAD_ADVICE = (
    "{function} was compiled as {compiles} for calls from the same line, {where}{code}: {tensors} did not require "
    "grad, then did{chained}. Dynamo compiles once for each requires_grad setting, and each compile serves every later "
    "call with its setting: expected, not a training/inference split, and mark_dynamic or dynamic=True does not apply "
    "(requires_grad is not a size). Only making the input require grad ({first}.requires_grad_()) would spare a "
    "compile, at the cost of computing its gradient in every backward: rarely worth it.")
CHAINED_CALL = (": the line passes each call what the call before returned, so the first gets your input, which "
                "needs no grad, and the next ones an output computed with parameters that require grad")
# `x = block(x)`: a call given back what it returned (the assigned name is among its arguments).
_CHAINED_CALL = r"^\s*(?P<name>\w+)\s*=\s*[\w.\[\]]+\((?:[^()]*,\s*)?(?P=name)\s*[,)]"
HOOK_ADVICE = ("A hook was registered on {modules} after the function was compiled: Dynamo had not guarded on "
               "hooks there, so a compiled call runs without the hook until another change recompiles the function "
               "(here {compile_ids}). Register hooks before the first compiled call (or call torch._dynamo.reset() "
               "after registering one).")


def state_changes(old: dict[str, str], new: dict[str, str]) -> list[StateChange]:
    """The values the guard tree before fixed (its pinned_state, old) that the tree after fixes differently (a value
    only one of them fixes, a number made dynamic, is no change of state)."""
    return [StateChange(k, old[k], v) for k, v in new.items() if k in old and old[k] != v]


def _named_by(change: StateChange, guards: str) -> bool:
    """The failing guards' text already names what changed (`n == 1`, `tensor 'x' requires_grad mismatch`, the
    `self._modules['backbone']._parameters['bias']` of a parameter's): not something else that changed."""
    of = change.of.removesuffix(".requires_grad")  # (a length: its container, in `len(x) == 2` or `not x`)
    names = {of, user_source_name(of), FRAME_SOURCE.sub(r"\1", of)}  # (torch's reasons write a global's G['x'])
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?![\w(\[.])", guards) for name in names)


def _in_users_words(change: StateChange, names: UsersNames, entry: Compile) -> StateChange:
    """change with its object named as the user wrote it where the frame is a wrapper (UsersNames.of:
    `cache.layers[0].is_initialized`, not transformers' `kwargs['cache']...`)."""
    own = change.own_name
    if change.kind == "length" and own in PASSED_ARGUMENTS and names.in_wrapper(entry.compile_id):
        return replace(change, users_name=PASSED_ARGUMENTS[own])  # (kwargs: length 0 → 6 is how many were passed)
    said = names.of(entry.compile_id, own)
    return replace(change, users_name=said) if said != own else change


def link_state_changes(steps: list[tuple[RecompileStep, Compile]], trees: PinnedByTrees,
                       names: UsersNames) -> list[tuple[str, StateChange]]:
    """Sets each step's also_changed from the guard trees of the compile whose guard failed and of the recompile.
    Returns the hooks found registered after compiling: (the recompile that first ran them, the change)."""
    hooked: list[tuple[str, StateChange]] = []
    for step, entry in steps:
        guard = step.guard
        before = trees.state(guard.compile_id) if guard is not None and guard.compile_id is not None else None
        after = trees.state(step.compile_id) if before is not None else None
        if before is None or after is None:
            continue
        named = " ".join(g.guard for g in step.failed_guards)
        step.also_changed = [_in_users_words(replace(c, closures=trees.closures) if "cell_contents" in c.source else c,
                                             names, entry)
                             for c in state_changes(before, after) if not _named_by(c, named)]
        hooked.extend((step.compile_id, c) for c in step.also_changed
                      if c.kind == "hook" and int(c.after) > int(c.before))  # (kind "hook": both are counts)
    return hooked


def mark_expected(steps: list[tuple[RecompileStep, Compile]], trees: PinnedByTrees) -> None:
    """Sets each step's expected where every cached compile torch tried (one failed guard each) had other settings of
    EXPECTED than the recompile: it would have compiled whatever else changed. One with the same settings failed for
    something else, which made the recompile avoidable. Where the log has no guard tree of a compile torch tried
    (older torch logs none) and none is known to have had the same settings, it cannot tell: unknown_settings,
    neither expected nor avoidable."""
    for step, _ in steps:
        tried = [g for g in step.failed_guards if g.compile_id]
        why: list[set[str]] = []  # per compile tried, the settings it had otherwise
        unknown: str | None = None  # the first compile compared whose settings no tree says
        after = trees.settings(step.compile_id)
        if after is None and step.failed:
            # (a recompile that failed, at the recompile limit, installed no tree: it compiled nothing, so no setting
            # explains it; counted avoidable, as a failed compile is to fix)
            after = {}
        for guard in tried:
            if guard.change == "requires_grad" and guard.tensor and "._parameters[" in guard.tensor:
                why.append({"requires_grad"})
                continue
            before = trees.settings(guard.compile_id or "")
            if before is None or after is None:
                unknown = unknown or (guard.compile_id if before is None else step.compile_id)
                continue
            differ = {"training" if k.endswith(".training") else "requires_grad"
                      for k, v in after.items() if k in before and before[k] != v}
            if not differ:
                step.same_settings = guard if why or unknown else None
                break
            why.append(differ)
        else:
            if unknown:
                step.unknown_settings = unknown
            elif tried:
                # the setting every compile tried had otherwise, else the one most of them had
                common = set.intersection(*why)
                step.expected = min(common) if common else Counter(k for w in why for k in w).most_common(1)[0][0]


def place_state_guards(steps: list[tuple[RecompileStep, Compile]], by_id: dict[str, Compile],
                        compiled_frames: CompiledFrames) -> list[str]:
    """Places each failed global-state guard (grad mode) at the user's line that called under the new state, and
    returns the advice naming the state and the calls that differ in it: once per state, for all its recompiles (a
    validation call under torch.no_grad() recompiles going in and again coming back: one fix)."""
    # states -> the user's line -> (it, the compile ids called from it: recompiles, then the compiles they missed)
    calls: dict[tuple[str, ...], dict[tuple, tuple[UserLocation, list[str], list[str]]]] = {}
    recompiled: dict[tuple[str, ...], list[RecompileStep]] = {}  # states -> its recompiles (their .expected)
    for step, entry in steps:
        guard = step.guard
        if guard is None or guard.change != "global_state":
            continue
        recompiled.setdefault(tuple(changed_states(guard.guard)), []).append(step)
        here = user_caller(compiled_frames.stack(entry.compile_id))
        guarded = by_id.get(guard.compile_id or "")
        there = user_caller(compiled_frames.stack(guarded.compile_id)) if guarded is not None else None
        if guard.location is None and here is not None:
            guard.location, guard.location_kind = here, "state_call"
        lines = calls.setdefault(tuple(changed_states(guard.guard)), {})
        if here is not None:
            lines.setdefault(here.key, (here, [], []))[1].append(step.compile_id)
        if there is not None and guard.compile_id:
            lines.setdefault(there.key, (there, [], []))[2].append(guard.compile_id)
    advice: list[str] = []
    order = list(by_id)  # the frame's compile ids, in compile order
    for states, lines in calls.items():
        # One line only: the calls do not differ where the log can tell, so only the recompiles are named.
        named = [(loc, sorted(set(recompiled + (missed if len(lines) > 1 else [])), key=order.index))
                 for loc, recompiled, missed in lines.values()]
        said = [f"{and_list([compilation_label(cid) or cid for cid in ids])} {'from' if i else ('was' if len(ids) == 1 else 'were') + ' called from'} {loc.short}"
                + (f" ({loc.code})" if loc.code else "") for i, (loc, ids) in enumerate(c for c in named if c[1])]
        where = f": {', '.join(said)}" if said else ""
        named_states = " and ".join(states) if states else "global state"
        state_steps = recompiled.get(states, [])
        expected = [st for st in state_steps if st.expected in EXPECTED_SWITCH]
        if expected and len(expected) == len(state_steps):
            switched = and_list([EXPECTED_SWITCH[w] for w in dict.fromkeys(st.expected for st in expected if st.expected)])
            advice.append(STATE_EXPECTED_ADVICE.format(states=named_states, where=where, why=switched))
        elif expected:
            advice.append(STATE_MIXED_ADVICE.format(states=named_states, where=where,
                                                            each=_state_steps_said(state_steps)))
        else:
            advice.append(STATE_ADVICE.format(states=named_states, where=where))
    return advice


def _state_steps_said(steps: list[RecompileStep]) -> str:
    """Of a state's recompiles, some expected and some not: which are expected (and what their calls switched), and
    of the others, each that an older compile with its settings made (RecompileStep.same_settings: its guard, not
    the state, is what to fix), those the log cannot tell, and the rest, avoidable by one setting everywhere."""
    def ids_said(group: list[RecompileStep]) -> tuple[str, str]:
        return and_list([st.compilation for st in group]), "is" if len(group) == 1 else "are"

    parts = []
    expected = [st for st in steps if st.expected in EXPECTED_SWITCH]
    ids, is_ = ids_said(expected)
    switched = and_list([EXPECTED_SWITCH[w] for w in dict.fromkeys(st.expected for st in expected if st.expected)])
    parts.append(STATE_EXPECTED_PART.format(ids=ids, is_=is_, its="its" if len(expected) == 1 else "their",
                                            why=switched))
    rest = [st for st in steps if st not in expected]
    parts += [STATE_SAME_SETTINGS_PART.format(id=st.compilation, same=st.same_settings.compilation,
                                              guard=st.same_settings.shown)
              for st in rest if st.same_settings is not None]
    if unknown := [st for st in rest if st.same_settings is None and st.unknown_settings]:
        parts.append(STATE_UNKNOWN_PART.format(ids=ids_said(unknown)[0],
                                               unknown=and_list(list(dict.fromkeys(st.unknown_settings or ""
                                                                                   for st in unknown)))))
    if avoidable := [st for st in rest if st.same_settings is None and not st.unknown_settings]:
        ids, is_ = ids_said(avoidable)
        parts.append(STATE_AVOIDABLE_PART.format(ids=ids, is_=is_))
    return " ".join(parts)


def same_call_requires_grad(steps: list[tuple[RecompileStep, Compile]], by_id: dict[str, Compile],
                             compiled_frames: CompiledFrames, function: str) -> str | None:
    """Where every requires_grad recompile is of a tensor argument the same user's line passed without grad to each
    compile torch tried and with grad now (`x = block(x)`: the first block gets the data, the next its output): marks
    them expected and returns the advice saying so. None, and nothing marked, where any is not (another line called
    it, grad went the other way, a parameter's requires_grad changed): the general advice holds there."""
    ours = [(step, entry) for step, entry in steps if step.guard is not None and step.guard.change == "requires_grad"]
    here: UserLocation | None = None
    for step, entry in ours:
        caller = user_caller(compiled_frames.stack(entry.compile_id))
        for guard in step.failed_guards:
            guarded = by_id.get(guard.compile_id or "")
            there = user_caller(compiled_frames.stack(guarded.compile_id)) if guarded is not None else None
            if (guard.change != "requires_grad" or not guard.tensor or "._parameters[" in guard.tensor
                    or not guard.guard.endswith("expected requires_grad=0") or caller is None or there is None
                    or there.key != caller.key or (here is not None and here.key != caller.key)):
                return None
        here = caller
    if not ours or here is None:
        return None
    for step, _ in ours:
        step.expected = "input_requires_grad"
        # The cause is the call that passed the tensor now requiring grad, not where the function first uses it
        # (its TENSOR_MATCH guard's line): every call is from `here`, so that call is here.
        for guard in step.failed_guards:
            guard.location, guard.location_kind = here, "call"
    ids = list(dict.fromkeys(cid for step, _ in ours for cid in [*(g.compile_id for g in step.failed_guards),
                                                                   step.compile_id] if cid))
    tensors = list(dict.fromkeys(user_source_name(g.tensor) for step, _ in ours for g in step.failed_guards if g.tensor))
    chained = here.code is not None and re.match(_CHAINED_CALL, here.code) is not None
    return SAME_CALL_REQUIRES_GRAD_ADVICE.format(
        compiles=and_list([compilation_label(cid) or cid for cid in ids]), function=function, where=here.short, code=f" (`{here.code.strip()}`)" if here.code else "",
        tensors=and_list([f"`{t}`" for t in tensors]), chained=CHAINED_CALL if chained else "", count=len(ids),
        first=tensors[0])

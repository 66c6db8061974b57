"""Each recompiled frame explained (explain_frames, for recompiles(trace) in analysis.py): one RecompileStep per
recompile with the guards that failed, placed and explained by the package's other modules, and the frame's advice.
A module of its own, imported only for a log that recompiled, with the modules it calls: most logs recompile nothing."""

from __future__ import annotations

import re
from collections import Counter

from ...model.trace import Compile, Trace
from ...wording import and_list, count
from ..compiled_frames import CompiledFrames, UsersNames, frame_trees, wrapped_by_passing_on
from ..graph_breaks.resume_names import function_label, resume_of
from ..installed_guards import GuardTrees
from ..stack_values import StackValues
from ..user_locations import UserLocation, code_origin
from . import CompileTexts, FrameRecompiles, LengthHistory, PinnedByTrees, RecompileStep, compilation_label
from .advice import (ADVICE, ATTRIBUTE_ADVICE, NUMBER_MADE_DYNAMIC, compiled_static, flag_advice, number_dynamic_failed,
                     numpy_dtype_advice, parameter_guards, requires_grad_advice, resumed_parameter_size_advice,
                     resumed_size_advice, size_advice)
from .lengths import length_advice, length_failures, length_history, mutations
from ..passed_on import PassedOn
from .placement import known_files, place_argument_guards, place_failed_checks, place_size_one_guards
from .reasons import ARTIFACT, parse_reason, reasons_payload
from .settings import (HOOK_ADVICE, link_state_changes, mark_expected,
                       place_state_guards, same_call_requires_grad)
from .subclasses import dispatch_compiled_alone, subclass_guards

_LIMIT_VALUE = r"currently set to (\d{1,9})"


def _attempts(trace: Trace) -> dict[str, list[tuple[int, Compile]]]:
    """Each compilation ("[1/1]") -> its attempts (attempt number, compile) in the log's order: made once per log, as
    every restarted attempt looks up its earlier ones (a log of thousands of restarts)."""
    attempts: dict[str, list[tuple[int, Compile]]] = {}
    for cid, entry in trace.compiles.items():
        if cid is not None:
            attempts.setdefault(cid.compilation, []).append((cid.attempt or 0, entry))
    return attempts


def _step(trace: Trace, entry: Compile, attempts_of: dict[str, list[tuple[int, Compile]]]) -> RecompileStep:
    """attempts_of: _attempts(trace)."""
    reasons: list[str] = []
    # Dynamo logs the reasons once, with attempt 0; a restart ([1/1_1], after a graph break) logs none of its own and
    # names them in its compilation_metrics: one the log ends during has only its first attempt's record.
    attempt_number = entry.compile_id.attempt or 0
    attempts = [e for number, e in attempts_of.get(entry.compile_id.compilation, []) if number < attempt_number]
    for attempt in [*attempts, entry]:
        for artifact in attempt.artifacts:
            if artifact.name == ARTIFACT:
                reasons = reasons_payload(trace.payload_text(artifact.payload))
    primary = (entry.metrics or {}).get("recompile_reason")
    if not reasons and primary:
        reasons = [str(primary)]
    cid = entry.compile_id
    offset = cid.frame_id - entry.logged_frame_id if entry.logged_frame_id is not None and cid.frame_id is not None else 0
    return RecompileStep(str(cid), [parse_reason(r, offset) for r in reasons],
                         failed=bool((entry.metrics or {}).get("fail_type")))


def _code_key(entries: list[Compile]) -> tuple:
    """(co_name, co_filename, co_firstlineno) of a frame's code, as its compiles' metrics name it."""
    metrics = next((e.metrics for e in entries if (e.metrics or {}).get("co_name")), None) or {}
    return (metrics.get("co_name"), metrics.get("co_filename"), metrics.get("co_firstlineno"))


def _parameters_of(frames: dict[tuple, list[Compile]], resumed: tuple[str, int], filename: object,
                   guard_trees: GuardTrees) -> set[str]:
    """The parameters of the function a resume function resumes (resumed: resume_of's (f, line)) that its own frame's
    guards check as tensors (`L['x']`, a TENSOR_MATCH): the locals of a frame as it starts are its arguments, so these
    are tensors the user passed f. Empty where f was not compiled as a frame of its own (a function inlined)."""
    function, line = resumed
    names: set[str] = set()
    for entries in frames.values():
        co_name, co_filename, first_line = _code_key(entries)
        if co_name != function or co_filename != filename or not isinstance(first_line, int) or first_line > line:
            continue
        for tree in frame_trees(guard_trees, entries):
            names.update(source[3:-2] for source, _ in (t.tensor for t in tree.lines if t.tensor is not None)
                         if source.startswith("L['") and source.endswith("']") and source[3:-2].isidentifier())
    return names


def explain_frames(trace: Trace, frames: dict[tuple, list[Compile]],
                   recompiled: list[tuple[int, list[Compile], Compile | None]],
                   stack_values: StackValues | None = None, guard_trees: GuardTrees | None = None) -> list[FrameRecompiles]:
    """Each recompiled frame's FrameRecompiles, in frames' order. frames: each frame's compiles (analysis._frames);
    recompiled: those compiled again or that hit the recompile limit, as (frame id, its compiles, the compile that
    hit the limit). stack_values, guard_trees: as recompiles() takes them."""
    guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)
    known = known_files(trace)
    compiled_frames = CompiledFrames(trace)
    stack_values = stack_values if stack_values is not None else StackValues(trace)
    users_names = UsersNames(trace, guard_trees, compiled_frames)
    passed_on = PassedOn(trace, compiled_frames, guard_trees, users_names)
    result: list[FrameRecompiles] = []
    attempts_of = _attempts(trace)
    # (frames whose code has the same name, file and first line: each named apart by its first compile id)
    same_code = Counter(_code_key(entries) for entries in frames.values())
    for frame_id, entries, limit_entry in recompiled:
        steps: list[tuple[RecompileStep, Compile]] = []
        for i, e in enumerate(entries):
            if (e.compile_id.frame_compile_id or 0) == 0:
                continue
            step = _step(trace, e, attempts_of)
            # After failed compiles only, nothing was cached, so nothing was compiled again: a program that caught
            # a fullgraph=True error and compiled the function anew. No guard failed, and torch gives no reason.
            if not step.failed_guards and all((p.metrics or {}).get("fail_type") for p in entries[:i]):
                continue
            steps.append((step, e))
        if not steps and limit_entry is None:
            continue
        named = next((e for e in entries if (e.metrics or {}).get("co_name")), None)
        metrics = named.metrics if named else {}
        name = metrics.get("co_name")
        if name is None:
            frame = next((e.stack[-1] for e in entries if e.stack), None)
            name = frame.name if frame else None
        filename = metrics.get("co_filename")
        first_line = metrics.get("co_firstlineno")
        code = UserLocation(str(filename), first_line, name) if filename and isinstance(first_line, int) else None
        # torch names a cached compilation without its attempt ("0/0"); the chain shows the attempt that was cached
        # ("[0/0_1]", after a restart), so a guard names the compile id the chain shows.
        shown = {e.compile_id.compilation: str(e.compile_id) for e in entries}
        for step, _ in steps:
            for guard in step.failed_guards:
                if guard.compile_id is not None:
                    guard.compile_id = shown.get(guard.compile_id, guard.compile_id)
        texts = CompileTexts(trace, entries, guard_trees)
        trees = PinnedByTrees(texts)
        sized_advice, sizes = place_failed_checks(steps, texts, code, known, compiled_frames, stack_values,
                                                  users_names, passed_on)
        hooked = link_state_changes(steps, trees, users_names)
        mark_expected(steps, trees)
        by_id = {str(e.compile_id): e for e in entries}
        place_size_one_guards(steps, by_id)
        place_argument_guards(steps, code, compiled_frames)
        state_advice = place_state_guards(steps, by_id, compiled_frames)
        same_call_advice = same_call_requires_grad(steps, by_id, compiled_frames, function_label(name) or "a function")
        subclass_advice = subclass_guards(steps, texts, by_id)
        limit = None
        if limit_entry is not None:
            m = re.search(_LIMIT_VALUE, str(limit_entry.metrics.get("fail_reason")))
            limit = int(m.group(1)) if m else None
        counts = Counter(s.guard.change for s, _ in steps if s.guard)
        changes = [c for c, _ in counts.most_common()]
        advice: list[str] = []
        failed_lengths = length_failures(steps)
        histories: dict[str, LengthHistory | None] = {}  # source -> its length_history, made once

        def history(source: str) -> LengthHistory | None:
            if source not in histories:
                histories[source] = length_history(source, failed_lengths.get(source, set()), entries, trees,
                                                   steps[-1][0].compile_id if steps else None)
            return histories[source]

        for c in changes:
            numbers = [st for st, _ in steps if st.guard is not None and st.guard.change == "constant"]
            if c == "constant" and all(st.dynamic_symbol for st in numbers):
                # automatic dynamic took care of it, the number a symbol from then on; unless that compile failed
                names = ", ".join(dict.fromkeys(st.dynamic_of for st in numbers))
                failed = next((st for st in numbers if st.failed), None)
                if failed is not None:
                    advice.append(number_dynamic_failed(names, failed, by_id.get(failed.compile_id), name))
                    continue
                advice.append(NUMBER_MADE_DYNAMIC.format(names=names, recompiles=count(len(numbers), "recompile")))
                continue
            if c in subclass_advice:
                advice.extend(subclass_advice[c])
                if c == "subclass_metadata" or all(st.guard.subclass for st, _ in steps
                                                   if st.guard is not None and st.guard.change == c):
                    continue
            attributes = list(dict.fromkeys(st.dynamic_of for st in numbers if st.attribute and not st.dynamic_symbol))
            if c == "constant" and attributes:
                advice.append(ATTRIBUTE_ADVICE.format(names=and_list([f"`{a}`" for a in attributes])))
                if all(st.attribute and not st.dynamic_symbol for st in numbers):
                    continue
            if c == "length":
                advice.extend(length_advice([st.guard for st, _ in steps if st.guard and st.guard.change == c],
                                            mutations(trace, entries), history, len(steps)))
                continue
            if c == "flag":
                advice.extend(flag_advice([st.guard for st, _ in steps if st.guard and st.guard.change == c]))
                continue
            if c == "global_state" and state_advice:
                advice.extend(state_advice)
                continue
            if c == "requires_grad" and (params := parameter_guards([st for st, _ in steps])):
                advice.append(requires_grad_advice(params))
                continue
            if c == "requires_grad" and same_call_advice:
                advice.append(same_call_advice)
                continue
            if c == "dtype" and (numpy := numpy_dtype_advice(
                    [g for st, _ in steps for g in st.failed_guards if g.change == "dtype"])):
                advice.append(numpy)
                continue
            if c == "dtype":
                from .models import other_model_advice  # (imported by a dtype recompile only: every report's start-up)

                if models := other_model_advice(steps, texts, compiled_frames, by_id):
                    advice.append(models)
                    continue
            if c != "size":
                advice.append(ADVICE[c])
                continue
            advice.extend(sized_advice)
            # (a resume function's arguments are the locals Dynamo passes on: none the user could mark dynamic, but
            # for the resumed function's own parameters, the tensors the user passed it)
            if sizes and (resumed := resume_of(name)) is not None:
                passed = _parameters_of(frames, resumed, filename, guard_trees)
                if own := [s for s in sizes if s[0] in passed]:
                    advice.append(resumed_parameter_size_advice(own, resumed, compiled_static(entries)))
                if local := [s for s in sizes if s[0] not in passed]:
                    advice.append(resumed_size_advice(local, resumed, compiled_static(entries)))
            elif sizes or not sized_advice:
                advice.append(size_advice(sizes, compiled_static(entries)))
        if hooked:
            advice.insert(0, HOOK_ADVICE.format(modules=and_list(list(dict.fromkeys(c.name for _, c in hooked))),
                                                compile_ids=", ".join(dict.fromkeys(compilation_label(cid) or cid
                                                                                    for cid, _ in hooked))))
        if limit_entry is not None:
            advice.insert(0, f"This function hit the recompile limit{f' ({limit})' if limit else ''} and now runs "
                             "without compiling: fix the failing guard above; raising "
                             "torch._dynamo.config.recompile_limit only postpones it.")
        if name == "__torch_dispatch__" and (alone := dispatch_compiled_alone(trace, entries, compiled_frames)):
            advice.insert(0, alone)
        module = users_names.module_class(entries[0].compile_id)
        # (a wrapper of a function, not a module: named by the user's function it passes its arguments on to)
        passed_to = (wrapped_by_passing_on(entries, guard_trees) if module is None and filename and code_origin(str(filename))
                     else None)
        runs = passed_to.function if passed_to is not None else None
        called_from: list[UserLocation] = []
        if filename and code_origin(str(filename)) is not None:
            for e in entries:
                # (Dynamo logs the stack when an attempt starts: a restarted one, [0/1_1], has none; its [0/1] has.)
                loc = compiled_frames.called_from(e.compile_id)
                if loc is not None and all(loc.key != seen.key for seen in called_from):
                    called_from.append(loc)
        result.append(FrameRecompiles(
            frame_id=frame_id, name=name, filename=filename, first_line=first_line,
            chain=[str(e.compile_id) for e in entries], steps=[s for s, _ in steps], hit_limit=limit_entry is not None,
            limit=limit, changes=changes, advice=advice, called_from=called_from,
            module=module, runs=runs,
            named_apart=(entries[0].compile_id.compilation if _code_key(entries)[0] is not None
                         and same_code[_code_key(entries)] > 1 else None),
        ))
    return result

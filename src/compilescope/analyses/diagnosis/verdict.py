"""decide(): the verdict of a diagnosis from its stages' outcomes. The first stage that fails names the culprit:
a compile error (its stage from analyses/compile_errors.py), a crash in native code, a run-time error of the compiled code,
wrong results the program's own check or torch's accuracy check found, a failed torch.export; where every stage runs,
a frame that hit the recompile limit, or the numbers the stages printed (number_verdicts.py)."""

from __future__ import annotations

from collections.abc import Sequence

from ...wording import count, possessive
from ..crash import STATIC_LAUNCHER_ADVICE
from ..compile_errors import (
    AOT, DYNAMO, INDUCTOR, NARROWING_STEPS, RECOMPILE_LIMIT, TESTING_HOOKS_LEAD, USER_BACKEND, YOUR_SCRIPT,
    testing_hooks_step,
)
from ..export import DimConflict
from ..graph_breaks.resume_names import function_label
from ..user_locations import UserLocation
from . import (
    ACCURACY, ACCURACY_RUN, AOT_EAGER, BACKEND, EAGER, EXPORT, FAILED, FELL_BACK, NO_COMPILE, PASSED, PROGRAM, RUNTIME,
    STAGES, TIMED_OUT, ProgramSeed, RunFacts, StageOutcome, Verdict,
)
from .notes import caught_seen, costs_seen, precision_seen, stage_noun
from .number_verdicts import control_seen, differs_from_eager, prints_other_numbers
from .printed_numbers import printed_change, run_to_run
from .reproduce import shell_line

def limit_hits(run: StageOutcome) -> str:
    """"train_step (train_step_pitfalls.py:31) hit the recompile limit at [0/2]": the first frame of a run that hit the
    recompile limit, named as the summary names it, and how many more did."""
    first = run.limited[0]
    frame = "a frame"
    if first.location is not None:
        frame = f"{function_label(first.location.function) or 'a frame'} ({first.location.short})"
    others = len({(e.location.key if e.location else e.compile_id) for e in run.limited}) - 1
    more = f" (and {count(others, 'more frame')} at theirs)" if others > 0 else ""
    return f"{frame} hit the recompile limit at {first.compile_id}{more}"


def _fell_back(outcomes: list[StageOutcome], checked: str) -> Verdict:
    """Every stage ran, but a frame hit the recompile limit in one: torch ran it eagerly from then on. Not a failure
    of the run, yet not all was compiled: `check --no-failures` fails such a log, so the verdict is not "ok"."""
    ran = [o for o in outcomes if o.spec in STAGES and o.facts is not None]
    hit = [o for o in ran if o.limited]
    run = next((o for o in hit if o.spec.key == BACKEND.key), hit[0])  # the run as written, where it hit the limit
    first = run.limited[0]
    others = [o.spec.title for o in hit if o is not run]
    also = (" (as it did in the other stages too)" if len(hit) == len(ran) > 1
            else f" (as it did with {' and '.join(others)})" if others else "")
    steps = [f"Why it recompiled until then, and how to avoid it: the Recompiles section of the trace report of the "
             f"run with {run.spec.title} ({run.spec.key}/index.html), or compilescope summary on its log.",
             *first.next_steps]
    costs = costs_seen(next((o for o in outcomes if o.spec.key == BACKEND.key), None))
    return Verdict(
        FELL_BACK, f"Every stage runs{checked}, but not all compiled: with {run.spec.title}, {limit_hits(run)} and ran "
        f"eagerly after that{also}.", None, RECOMPILE_LIMIT, first, message=first.message, location=first.location,
        location_kind=first.location_kind, next_steps=steps + costs + caught_seen(outcomes))


def _last_line(text: str) -> str | None:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else None


# What a narrowing step (rerun with "eager" / "aot_eager") becomes once diagnose has run that stage; None: nothing
# to add (the failure is Dynamo's, which every stage runs).
_STAGE_WORKAROUND = {
    EAGER.key: None,
    AOT_EAGER.key: "backend=\"eager\" runs the program (its stage passed): use it as a workaround, the captured graphs "
                   "then run uncompiled.",
    BACKEND.key: "backend=\"aot_eager\" runs the program (its stage passed): use it as a workaround.",
}


def _steps_after_stages(key: str, steps: list[str], facts: RunFacts | None) -> list[str]:
    """An error's next steps, less those that rerun a stage diagnose has run: in their place, what that showed. A
    minify step names the program diagnose ran, and diagnose's own --minify first."""
    narrowing = [i for i, step in enumerate(steps) if step in NARROWING_STEPS]
    kept = [_minify_step(step, facts) for step in steps if step not in NARROWING_STEPS]
    workaround = _STAGE_WORKAROUND.get(key)
    if narrowing and workaround:
        kept.insert(narrowing[0], workaround)
    return kept


def _minify_step(step: str, facts: RunFacts | None) -> str:
    if YOUR_SCRIPT not in step or facts is None:
        return step
    by_hand = step.removeprefix("Minify: ").replace(YOUR_SCRIPT, shell_line(facts.argv))
    return f"Minify: compilescope diagnose --minify does it for you; by hand: {by_hand}"


_NO_TORCH = "ModuleNotFoundError: No module named 'torch'"


def decide(outcomes: list[StageOutcome], accuracy: StageOutcome | None = None,
           controls: Sequence[StageOutcome] = (), seed: ProgramSeed | None = None) -> Verdict:
    """controls: eager's stage run once more (EAGER_CONTROL), where the stages printed other numbers, and a third time
    (EAGER_CONTROL_AGAIN) where another_control says; seed: what the program's file shows of seeding, None where
    diagnose could not read it."""
    by_key = {o.spec.key: o for o in outcomes}
    failed = next((o for o in outcomes if o.spec in STAGES and o.status in (FAILED, TIMED_OUT)), None)
    ran = [o for o in outcomes if o.spec in STAGES and o.facts is not None]
    # torch.export's failures, and nothing of torch.compile's failed: the stages (forced backends) cannot narrow them.
    exported = next((o for o in ran if o.spec.key == BACKEND.key and o.export_failed),
                    next((o for o in ran if o.export_failed), None))
    if exported is not None and not any(o.errors or o.crash is not None or o.status == TIMED_OUT for o in ran):
        return _export_failed(exported, outcomes)
    if failed is None:
        if not any(o.compiles for o in outcomes):
            return Verdict("nothing_compiled", "Nothing was compiled: the program never reached torch.compile "
                           "(or torch was not imported), so there is nothing to diagnose.",
                           next_steps=["Check that the program calls a torch.compile'd function or module."])
        if accuracy is not None and accuracy.status == TIMED_OUT:
            return Verdict("timeout", "Every stage compiles and runs, but the accuracy check ran out of time.",
                           ACCURACY_RUN.key, ACCURACY, next_steps=["Rerun with a larger --timeout."])
        if accuracy is not None and accuracy.accuracy_failure:
            return _wrong_results(by_key.get(BACKEND.key), accuracy, "every stage compiles, but {names} compiled code "
                                  "computes results that differ from eager.")
        checked = " and its compiled results match eager" if accuracy is not None and accuracy.status == PASSED else ""
        if any(o.limited for o in outcomes):
            return _fell_back(outcomes, checked)
        # Running is not computing the right numbers: without the check, nothing here compared them with eager.
        unchecked = [] if accuracy is not None else [
            "Compiled results were not compared with eager: if the program's numbers differ from eager, "
            "compilescope diagnose --accuracy runs torch's check (TORCHDYNAMO_REPRO_LEVEL=4), which compares each "
            "compiled graph's outputs with eager and names the graph that differs."]
        backend = by_key.get(BACKEND.key)
        unstable = run_to_run(by_key[EAGER.key], controls) if EAGER.key in by_key else None
        change = printed_change(outcomes, unstable, seed)
        verdict = None
        if change is None or change.stage == BACKEND.key or not change.beyond_rounding:
            # (Inductor's random numbers are named whatever AOTAutograd's rounding printed)
            verdict = differs_from_eager(backend, accuracy, change if change and change.stage == BACKEND.key else None)
        if verdict is None and change is not None:
            verdict = prints_other_numbers(change, outcomes, accuracy, controls)
        if verdict is None:
            verdict = Verdict("ok", f"Every stage compiles and runs{checked}.", next_steps=precision_seen(backend)
                              + costs_seen(backend) + caught_seen(outcomes) + unchecked)
        verdict.next_steps = control_seen(controls, unstable, change, seed) + verdict.next_steps
        verdict.run_to_run = len(unstable) if unstable is not None else None
        return verdict

    key = failed.spec.key
    if failed.status == TIMED_OUT:
        return Verdict("timeout", f"The run with {failed.spec.title} did not finish in time.", key,
                       next_steps=["Rerun with a larger --timeout, or look at its partial report: a long compile "
                                   "shows up in its compile-time insights."])
    if failed.crash is not None:  # the process died: whatever else went wrong, that is what stopped it
        return _crashed(failed, by_key.get(NO_COMPILE.key), outcomes)
    if failed.errors:
        error = failed.errors[0]
        stage = error.stage
        if key == AOT_EAGER.key and stage != DYNAMO:
            stage = AOT  # aot_eager is Dynamo + AOTAutograd + a no-op compiler: it can only be AOTAutograd
        where = {EAGER.key: "with Dynamo alone (backend=\"eager\")",
                 AOT_EAGER.key: "with AOTAutograd (backend=\"aot_eager\"), while backend=\"eager\" works",
                 BACKEND.key: f"only with your backend{f' ({failed.backend_name})' if failed.backend_name else ''}, "
                              "while backend=\"eager\" and \"aot_eager\" work"}[key]
        hooks = next((step for step in error.next_steps if step.startswith(TESTING_HOOKS_LEAD)), None)
        return Verdict(
            "compile_error", f"Compilation fails {where}: the failure is in {stage_noun(stage, failed, error)}.", key, stage,
            error,
            message=error.message, location=error.location, location_kind=error.location_kind,
            next_steps=_steps_after_stages(key, [s for s in error.next_steps if s != hooks], failed.facts)
            + caught_seen(outcomes),
            testing_hooks=hooks,
        )
    if key == BACKEND.key and failed.mismatch:  # the program checked its results: wrong with this backend only
        return _wrong_results(failed, accuracy, "the program's own check of them fails with {name} alone "
                              "(backend=\"eager\" and \"aot_eager\" pass it): its compiled code computes results that "
                              "differ from eager.")
    # It failed, but no compile failed: the compiled code (or the program) raised when it ran.
    message = _last_line(failed.facts.output_tail) if failed.facts else None
    if key == EAGER.key and failed.facts and _NO_TORCH in failed.facts.output_tail and not failed.compiles:
        return Verdict(
            "no_torch", "The program's Python cannot import torch: it is not the Python compilescope runs in, "
            "so nothing was compiled.", key, message=_NO_TORCH,
            next_steps=["Let compilescope's own Python run the script: compilescope diagnose script.py (no python).",
                        "Or activate the environment where torch is installed, and run compilescope from there."])
    if key == EAGER.key:
        disabled = by_key.get(NO_COMPILE.key)
        if disabled is not None and disabled.status != PASSED:
            return Verdict("program_error", "The program fails even with torch.compile disabled: not a compile problem.",
                           NO_COMPILE.key, PROGRAM, message=_last_line(disabled.facts.output_tail) if disabled.facts else None,
                           next_steps=["Fix the program's own error first (TORCHDYNAMO_DISABLE=1 runs it uncompiled)."])
    raised = []
    if failed.raised_in is not None:
        line, frame = failed.raised_in
        at = f", at line {line.line}" if line.line is not None else ""
        raised = [f"It raised in the call of {line.compile_id}'s output code{at}" + (f" ({frame.code})" if frame.code
                  else "") + ": the code torch generated raised there (the output code is in that run's trace report)."]
    return Verdict(
        "runtime_error", f"Everything compiles, but the code compiled with {failed.spec.title} fails when it runs.",
        key, RUNTIME, message=message, location=failed.raised_at,
        location_kind="where it raised" if failed.raised_at else None,
        next_steps=[*raised, "Read the program's output below for the exception.",
                    "Minify: compilescope diagnose --minify does it for you; by hand: TORCHDYNAMO_REPRO_AFTER=\"aot\" "
                    "(Inductor) or \"dynamo\" (other backends) also catches run-time failures of the compiled graph; "
                    "run the minifier_launcher.py it writes with `minify` alone, each try in a process of its own (with "
                    "--no-isolate, Inductor's failing code empties the inputs before the next try).", *caught_seen(outcomes)],
    )


# What helps a torch.export that fails, whatever the backend: diagnose's stages cannot tell these apart.
EXPORT_DRAFT_STEP = ("torch.export.draft_export(...) with the same arguments lists every issue at once, each at its "
                     "line, and still produces a program: its report says what export had to assume.")
EXPORT_NONSTRICT_STEP = ("Strict export (strict=True) traces with Dynamo: strict=False (the default) runs forward in "
                         "Python, which avoids what Dynamo cannot trace, not data-dependent guards (torch._check(...) "
                         "tells export what holds).")


def _export_failed(run: StageOutcome, outcomes: list[StageOutcome]) -> Verdict:
    """torch.export failed in the run (check fails its log), and no torch.compile failure besides: diagnose's stages
    force torch.compile's backend, which torch.export does not use, so each stage ran the same exports. Not "OK": what
    helps is export's own (draft_export, strict=False, the dynamic_shapes fix torch suggests)."""
    said = []
    if run.export_errors:
        first = run.export_errors[0]
        where = f" at {first.location.short}" if first.location else ""
        said.append(f"{count(len(run.export_errors), 'strict export')} failed (the first{where}: {first.exception})")
    if run.export_issues:
        first_issue = run.export_issues[0]
        exporter = "torch.export" if any(i.exporter == "export" for i in run.export_issues) else "draft export"
        said.append(f"{exporter} found {count(len(run.export_issues), 'issue')} (the first: {first_issue.failure_type}"
                    f"{f' at {first_issue.where}' if first_issue.where else ''})")
    steps = []
    if run.export_errors:
        steps += [EXPORT_DRAFT_STEP, EXPORT_NONSTRICT_STEP]
    elif not any(i.exporter != "export" for i in run.export_issues):  # (draft_export's own issues: it ran)
        steps.append(EXPORT_DRAFT_STEP)
    calls: dict[str, list[DimConflict]] = {}
    for dim in run.export_dims:
        calls.setdefault(f" (torch.export at {dim.export_call.short})" if dim.export_call else "", []).append(dim)
    steps += [f"torch's suggested dynamic_shapes fix{call}: {'; '.join(d.text for d in dims)}."
              for call, dims in calls.items()]
    steps.append(f"Each failure, with its stacks: the trace report of the run with {run.spec.title} "
                 f"({run.spec.key}/index.html), or compilescope summary on its log; compilescope check fails that log.")
    error = run.export_errors[0] if run.export_errors else None
    issue = run.export_issues[0] if run.export_issues else None
    return Verdict(
        "export_error", f"torch.export fails: {'; '.join(said)}. diagnose's stages test torch.compile: they force its "
        "backend (\"eager\", \"aot_eager\"), which torch.export does not use, so each stage ran the same exports.",
        run.spec.key, EXPORT, error,
        message=error.message if error else issue.headline if issue else None,
        location=error.location if error else None, location_kind=error.location_kind if error else None,
        next_steps=steps + caught_seen(outcomes))


def _where_the_stack_is(run: StageOutcome) -> str:
    if run.crash is not None and run.crash.recorded:
        return (f"The trace report of the run with {run.spec.title} has the stack Python's faulthandler wrote at the "
                "crash (its Crash section; torch logs nothing of a crash in native code).")
    return (f"No stack was recorded: the process was killed by {run.facts.signal if run.facts else 'a signal'} before "
            "faulthandler was on (compilescope turns it on when torch._dynamo is imported).")


def _crashed(failed: StageOutcome, disabled: StageOutcome | None, outcomes: list[StageOutcome]) -> Verdict:
    """A stage's process died in native code. The stages before it ran the program, so the layer this stage adds
    brings the crash in; Dynamo alone crashing is Dynamo's, unless the program crashes with torch.compile disabled."""
    key, crash = failed.spec.key, failed.crash
    assert crash is not None
    if key == EAGER.key and disabled is not None and disabled.crash is not None:
        own = disabled.crash
        return Verdict(
            "crash", f"The program crashes in native code ({own.error}) even with torch.compile disabled: not a "
            "compile problem.", NO_COMPILE.key, PROGRAM, message=own.said, location=own.user_frame,
            location_kind="crash", crash=own,
            # (the run with torch.compile disabled writes no log, hence no report: the stack is in Dynamo's run's)
            next_steps=["Fix the program's own crash first (TORCHDYNAMO_DISABLE=1 runs it uncompiled).",
                        _where_the_stack_is(failed if crash.recorded else disabled)])
    if key == EAGER.key and disabled is not None and disabled.status != PASSED:
        return Verdict("program_error", "The program fails even with torch.compile disabled: not a compile problem.",
                       NO_COMPILE.key, PROGRAM, message=_last_line(disabled.facts.output_tail) if disabled.facts else None,
                       next_steps=["Fix the program's own error first (TORCHDYNAMO_DISABLE=1 runs it uncompiled).",
                                   f"With backend=\"eager\" it crashed in native code: {crash.said}."])
    stage = {EAGER.key: DYNAMO, AOT_EAGER.key: AOT}.get(key) or (INDUCTOR if failed.used_inductor else USER_BACKEND)
    name = f" ({failed.backend_name})" if key == BACKEND.key and failed.backend_name else ""
    where = {EAGER.key: "with Dynamo alone (backend=\"eager\"), while the program runs with torch.compile disabled",
             AOT_EAGER.key: "with AOTAutograd (backend=\"aot_eager\"), while backend=\"eager\" runs it",
             BACKEND.key: f"only with your backend{name}, while backend=\"eager\" and \"aot_eager\" run it"}[key]
    during = f", {crash.during}" if crash.during else ""
    steps = [_where_the_stack_is(failed)]
    if crash.compile_id is not None and crash.where is not None and crash.where.function == "call":
        steps.append(f"Python was in the call of {crash.compile_id}'s output code ({crash.where.short}): that line "
                     "launched the kernel that crashed (the output code is in that report).")
    if crash.in_static_launcher:
        steps.append(STATIC_LAUNCHER_ADVICE[0].upper() + STATIC_LAUNCHER_ADVICE[1:] + ".")
    workaround = _STAGE_WORKAROUND.get(key) or ("With torch.compile disabled the program runs: a crash with Dynamo "
                                                "alone is torch's to fix (report it with the stack); until then, leave "
                                                "the function that crashes uncompiled (torch.compiler.disable).")
    steps.append(workaround)
    if key != EAGER.key:
        after = "aot" if stage == INDUCTOR and not crash.compiling else "dynamo"
        steps.append(f"Minify the graph that crashes: compilescope diagnose --minify, or by hand: TORCHDYNAMO_REPRO_AFTER="
                     f"\"{after}\" TORCHDYNAMO_REPRO_LEVEL=3 writes minifier_launcher.py before each compiled graph runs "
                     "(a crash leaves no time after), and `python minifier_launcher.py minify` (isolated, its default) "
                     "runs each try in a process of its own, so that a crash is a failure it can shrink.")
    culprit = stage_noun(stage, failed)
    if stage in (INDUCTOR, USER_BACKEND) and not crash.compiling:  # it crashed running what the backend wrote
        culprit = f"the code {culprit} generated"
    return Verdict(
        "crash", f"The program crashes in native code ({crash.error}{during}) {where}: the crash is in {culprit}.",
        key, stage, message=crash.said, location=crash.user_frame, location_kind="crash", crash=crash,
        next_steps=steps + caught_seen(outcomes))


def _wrong_results(backend: StageOutcome | None, accuracy: StageOutcome | None, how: str) -> Verdict:
    # how: the rest of the headline, naming the backend as {name} ({names}: its possessive)
    """Results that differ from eager: found by torch's accuracy check (accuracy), else by the program (backend)."""
    inductor = backend is not None and backend.used_inductor
    name = (backend.backend_name if backend else None) or "your backend"
    checked = accuracy is not None and accuracy.accuracy_failure
    find = ("Minify the wrong graph: compilescope diagnose --accuracy --minify (or TORCHDYNAMO_REPRO_AFTER="
            f"\"{'aot' if inductor else 'dynamo'}\" TORCHDYNAMO_REPRO_LEVEL=4 by hand, then run minifier_launcher.py).")
    if not checked:  # the accuracy check did not run, or did not catch it: it compares each graph's outputs only
        find = ("Find the graph that computes them: compilescope diagnose --accuracy (torch compares each compiled "
                "graph with eager), with --minify for a minimal repro.")
    if accuracy is not None and accuracy.status == PASSED:  # it ran (its stage row says so) and every graph matched
        find = ("torch's accuracy check ran and found no compiled graph whose outputs differ from eager beyond its "
                "tolerance (torch._dynamo.config.repro_tolerance, 1e-3 by default): the program's own check is "
                "stricter, or the difference builds up across graphs; compare intermediate values with eager's.")
    wrong = accuracy.wrong_graph if checked and accuracy else None
    # The user's line the wrong graph's kernels were made from, where they were made from one (else diagnose names
    # the frame the graph was compiled from)
    made = wrong.user_lines if wrong is not None else []
    location = UserLocation(made[0].file, made[0].line, made[0].function, made[0].code) if len(made) == 1 else None
    return Verdict(
        "accuracy", "Wrong results: " + how.format(name=name, names=possessive(name)),
        ACCURACY_RUN.key if checked else BACKEND.key, INDUCTOR if inductor else USER_BACKEND,
        message=(accuracy.accuracy_failure if checked and accuracy else backend.mismatch if backend else None),
        location=location, location_kind="the wrong graph's kernels" if location else None,
        next_steps=[*(wrong.said() if wrong else []), 'backend="aot_eager" gives eager results here: use it as a '
                    "workaround.", find],
        testing_hooks=testing_hooks_step(wrong.hooks) if wrong is not None and wrong.hooks else None,
    )

"""The verdicts where every stage compiles and runs, but the numbers differ from eager's: the compiled graphs draw
Inductor's own random numbers (differs_from_eager), or a stage prints other numbers than the one before it
(prints_other_numbers: float32 rounding, AOTAutograd's decompositions, a custom op's undeclared write, or a change
nothing explains); and what eager's control runs showed of the lines that change from run to run (control_seen)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ...wording import count
from ..compile_errors import AOT, INDUCTOR, USER_BACKEND
from . import ACCURACY, BACKEND, DIFFERS, PASSED, ROUNDING, SKIPPED, PrintedChange, ProgramSeed, StageOutcome, Verdict
from .notes import caught_seen, costs_seen, precision_seen, stage_noun, where_lines
from .printed_numbers import ROUNDING_ATOL, ROUNDING_RTOL, LineKey

# Of Inductor's generator, not of the program (which may set no seed): true of every program whose graphs draw so
INDUCTOR_RANDOM_SAID = ("Inductor's random numbers differ from eager's for the same seed (torch.compile does not "
                        "reproduce eager's random stream unless torch._inductor.config.fallback_random = True).")


def differs_from_eager(run: StageOutcome | None, accuracy: StageOutcome | None,
                        change: PrintedChange | None = None) -> Verdict | None:
    """Every stage ran, but the compiled graphs draw random numbers with Inductor's generator: the program's numbers
    cannot match eager's, and torch's accuracy check cannot see it (eager, compiled and its float64 run each draw
    their own numbers, and it passes outputs no further from the float64 run than eager's)."""
    if run is None or not run.numerics.random:
        return None
    lines = run.numerics.random
    compiles = ", ".join(dict.fromkeys(cid for line in lines for cid in line.compile_ids))
    checked = (" torch's accuracy check passed, but it cannot see this: eager, the compiled code and its float64 "
               "run each draw their own random numbers.") if accuracy is not None and accuracy.status == PASSED else ""
    first = lines[0].location
    printed = (f" The program printed other numbers with {run.spec.title} than with {change.before_title} "
               f"({count(change.total, 'line')}, below).") if change is not None else ""
    return Verdict(DIFFERS, f"Every stage compiles and runs, but with Inductor the compiled code ({compiles}) draws "
                   f"its own random numbers at {where_lines(lines)}: {INDUCTOR_RANDOM_SAID}{printed}{checked}", None, ACCURACY, location=first, location_kind="random op",
                   next_steps=[run.numerics.random_note or ""] + precision_seen(run) + costs_seen(run), printed=change)


# Where the compiled graphs hold nothing that explains other numbers: what is left is float32 rounding (wrong_results.py's
# fixed variant: float32, eager's random ops, and it prints 4.39e-05 where backend="aot_eager" prints 0; its own
# torch.testing.assert_close with the float32 default fails at "up to 1e-05 allowed").
FLOAT32_NOTE = ("Nothing in the graphs {title} compiled draws its own random numbers or fuses bf16/fp16 math: float32 "
                "results still differ from eager's by rounding, as Inductor fuses float32 ops into kernels that need "
                "not round in eager's order (most where values cancel). torch.testing.assert_close's float32 default "
                "(rtol 1.3e-6, atol 1e-5) can be tighter than that: compare with eager at a looser tolerance, or "
                "each with a float64 run.")
FLOAT32_CHECKED = ("torch's accuracy check passed: each compiled graph's outputs are no further from a float64 run "
                   "than eager's (torch._dynamo.config.repro_tolerance), so the change is rounding, not a wrong graph.")
FLOAT32_NOT_PASSED = ("torch's accuracy check did not pass (its run failed without naming a graph: see its output), so "
                      "this change cannot be told from a wrong graph.")
FLOAT32_BEYOND = ("{lines} changed by more than float32 rounding would (more than " f"{ROUNDING_RTOL:g} of the number, or "
                  f"{ROUNDING_ATOL:g} near 0; nan or inf against a number): not rounding, though nothing in the graphs "
                  "{title} compiled draws its own random numbers or fuses bf16/fp16 math.")
FLOAT32_BEYOND_CHECKED = ("torch's accuracy check passed: each compiled graph's outputs, for the inputs it ran them with, are "
                          "no further from a float64 run than eager's; yet no rounding makes a number nan or inf. Compare "
                          "with eager step by step to see where it starts.")
# torch's check passed and nothing in the graphs explains other numbers, but a number moved beyond one step's rounding:
# a training loop's loss drifts so, each step's rounding feeding the next (not a wrong graph: the check compared each)
FLOAT32_DRIFT = ("Rounding accumulates over steps: each step starts from the last one's rounded values, so a loss or "
                 "weight printed after many steps can move further than 1e-3, while torch's accuracy check passed: "
                 "each compiled graph's outputs are no further from a float64 run than eager's "
                 "(torch._dynamo.config.repro_tolerance). Compare with eager step by step to see it grow, not jump.")
AOT_ROUNDING_NOTE = ("AOTAutograd decomposes ops into ATen primitives (and traces the backward itself), which need not "
                     "round in eager's order: each printed number moved no further than float32 rounding moves it "
                     f"({ROUNDING_RTOL:g} of the number, or {ROUNDING_ATOL:g} near 0). torch's accuracy check does not "
                     "compare AOTAutograd's graphs (torch 2.13 cannot call them from its after-Dynamo check).")


def run_to_run_said(lines: int) -> str:
    """"3 printed lines change from run to run under eager too: not compared" (the progress line and the verdict's)."""
    return f"{count(lines, 'printed line')} {'changes' if lines == 1 else 'change'} from run to run under eager too: not compared"


def control_seen(controls: Sequence[StageOutcome], unstable: set[LineKey] | None, change: PrintedChange | None,
                  seed: ProgramSeed | None) -> list[str]:
    """What the control runs showed: which printed lines change from run to run, left out of the comparison, and what
    a change left standing rests on (a line that changes from run to run can print alike twice by chance)."""
    if not controls:
        return []
    first = controls[0]
    if unstable is None:
        return [f"The control run ({first.spec.title}) {first.status}: the printed lines that change from run to "
                "run could not be told, so no printed number is judged a change."]
    passed = [control for control in controls if control.status == PASSED]
    which = passed[0].spec.title if len(passed) == 1 else "eager's control runs"
    said = []
    if unstable:
        said.append(f"{run_to_run_said(len(unstable))} ({which} printed other numbers in them: an unseeded random "
                    "draw, a clock, an order that varies).")
    if change is None:
        return said
    if len(passed) > 1:
        said.append(f"The lines compared printed the same numbers in each of eager's {len(passed) + 1} runs (its "
                    "stage and two control runs): taken for the program's results (a line that changes from run to "
                    "run seldom prints alike three times).")
    elif seed is not None and seed.call is not None and not unstable:
        said.append(f"The control run ({first.spec.title}) printed the same numbers as eager's, and "
                    f"{os.path.basename(seed.file)} seeds ({seed.call} at {seed.where}): the lines compared do not "
                    "change from run to run.")
    else:
        again = f"; the second {controls[1].status}" if len(controls) > 1 else ""
        said.append(f"The lines compared rest on one control run ({first.spec.title}{again}): a line that changes from "
                    "run to run (an unseeded random draw) can print alike in eager's two runs by chance, and would be "
                    "taken for a change.")
    return said


FLOAT32_UNCHECKED = ("compilescope diagnose --accuracy compares each compiled graph with eager and with a float64 run: "
                     "a graph no further from the float64 run than eager's is rounding, not a wrong graph.")


def prints_other_numbers(change: PrintedChange, outcomes: list[StageOutcome], accuracy: StageOutcome | None,
                          controls: Sequence[StageOutcome] = ()) -> Verdict:
    """Every stage ran, and one prints other numbers than the stage before it: the part of torch.compile that stage
    adds changes them (AOTAutograd, or the backend's code). Where it is Inductor and its graphs hold nothing that
    explains other numbers (numerics finds no random op of its own, no low precision fused), the change is float32
    rounding ("rounding", which diagnose exits 0 with) where each number moved no further than rounding moves it,
    unless torch's accuracy check ran and did not pass; or where torch's check passed and no number became nan or inf
    (rounding accumulated over steps). AOTAutograd's change within rounding is rounding too. Where the control run
    could not be made, no change of printed numbers alone is "differs": it may be run to run."""
    run = next(o for o in outcomes if o.spec.key == change.stage)
    backend = change.stage == BACKEND.key
    stage = (INDUCTOR if run.used_inductor else USER_BACKEND) if backend else AOT
    name = f" ({run.backend_name})" if backend and run.backend_name else ""
    after = costs_seen(next((o for o in outcomes if o.spec.key == BACKEND.key), None)) + caught_seen(outcomes)
    printed = (f"the program prints other numbers with {change.title}{name} than with {change.before_title} "
               f"({change.alike}; {count(change.total, 'line')}, below)")
    checked = accuracy is not None and accuracy.status == PASSED
    if run.op_mutations:  # (before rounding: a write torch does not know of explains any change, small or not)
        ops = run.op_mutations.ops
        first = ops[0]
        said = "; ".join(f"{op.op} writes into {' and '.join(op.arguments)} at "
                         f"{', '.join(f'{w.short} ({w.code})' if w.code else w.short for w in op.writes)}, which its "
                         "mutates_args does not declare" for op in ops)
        return Verdict(DIFFERS, f"Every stage compiles and runs, but {printed}: {stage_noun(stage, run)} changes them, "
                       f"as {said}.", None, stage, location=first.writes[0] if first.writes else first.defined_at,
                       location_kind="custom op write",
                       next_steps=[f"{op.title}: {op.why}. Fix: {op.advice}." for op in ops] + after, printed=change)
    if backend and run.used_inductor and not run.numerics and not change.beyond_rounding:
        # (torch's check failing on a graph is judged before this: "accuracy", wrong results; its run failing
        # otherwise leaves the change unexplained: "differs")
        if accuracy is None or accuracy.status == SKIPPED or checked:
            said = (", and torch's accuracy check passed: float32 rounding, not a wrong graph." if checked else
                    ", and nothing in its compiled graphs explains them but float32 rounding.")
            return Verdict(ROUNDING, f"Every stage compiles and runs; {printed}{said}", None, stage,
                           next_steps=[FLOAT32_NOTE.format(title=run.spec.title),
                                       FLOAT32_CHECKED if checked else FLOAT32_UNCHECKED] + after, printed=change)
    if backend and run.used_inductor and not run.numerics and checked and not change.nonfinite:
        return Verdict(ROUNDING, f"Every stage compiles and runs; {printed}, {change.beyond_rounding} of them further "
                       "than one step's float32 rounding, but rounding accumulates over steps and torch's accuracy "
                       "check passed: not a wrong graph.", None, stage,
                       next_steps=[FLOAT32_DRIFT, FLOAT32_NOTE.format(title=run.spec.title)] + after, printed=change)
    if not backend and not change.beyond_rounding:
        return Verdict(ROUNDING, f"Every stage compiles and runs; {printed}, each within float32 rounding: "
                       "AOTAutograd's decompositions round differently.", None, stage,
                       next_steps=[AOT_ROUNDING_NOTE] + after, printed=change)
    if controls and not any(c.status == PASSED for c in controls) and not (backend and run.numerics):
        control = controls[0]
        return Verdict("ok", f"Every stage compiles and runs; {printed}, but the control run ({control.spec.title}) "
                       f"{control.status}, so whether they change from run to run is not known: not judged.",
                       next_steps=after, printed=change)
    steps = precision_seen(run) if backend else []
    if backend and run.used_inductor and not run.numerics:
        # numbers beyond rounding, or torch's accuracy check ran and its run failed: neither is rounding
        steps.append(FLOAT32_BEYOND.format(lines=f"{change.beyond_rounding} of the {count(change.total, 'line')} below",
                                           title=run.spec.title) if change.beyond_rounding
                     else FLOAT32_NOTE.format(title=run.spec.title))
        steps.append(FLOAT32_BEYOND_CHECKED if checked else
                     FLOAT32_UNCHECKED if accuracy is None or accuracy.status == SKIPPED else FLOAT32_NOT_PASSED)
    steps.append(f"{change.before_title} gives the numbers from before the change: use it as a workaround.")
    return Verdict(DIFFERS, f"Every stage compiles and runs, but {printed}: {stage_noun(stage, run)} changes them.",
                   None, stage, next_steps=steps + after, printed=change)

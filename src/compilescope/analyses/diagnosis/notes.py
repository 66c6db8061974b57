"""What every verdict's wording shares: the stage as a headline names it (stage_noun), and the notes a verdict
adds to its next steps whatever it is: bf16/fp16 ops Inductor fused, graph breaks and recompiles of the run as
written (they cost speed), compiles that failed in a run the program went on with."""

from __future__ import annotations

from ...wording import count
from ..compile_errors import AOT, DYNAMO, INDUCTOR, KERNEL_COMPILE, LOWERING, RECOMPILE_LIMIT, USER_BACKEND, CompileError
from ..recompiles import EXPECTED
from . import StageOutcome

# The stage as the verdict's headline names it, in a sentence: "…work: the failure is in the backend compiler."
STAGE_NOUNS = {
    DYNAMO: "Dynamo's graph capture",
    RECOMPILE_LIMIT: "Dynamo's recompile limit",
    AOT: "AOTAutograd",
    LOWERING: "Inductor's lowering",
    INDUCTOR: "Inductor",
    KERNEL_COMPILE: "the C++/Triton compile of Inductor's kernels",
    USER_BACKEND: "the backend compiler",
}


def stage_noun(stage: str, outcome: StageOutcome, error: CompileError | None = None) -> str:
    """STAGE_NOUNS' name of a stage, Inductor named where it was the backend compiler that failed, and the kernels'
    compiler where the error says which (C++ or Triton)."""
    if stage == KERNEL_COMPILE and error is not None and error.stage == KERNEL_COMPILE:
        return f"the {error.stage_label} of Inductor's kernels"
    return STAGE_NOUNS[stage] + (" (Inductor)" if stage == USER_BACKEND and outcome.used_inductor else "")


def where_lines(lines: list) -> str:
    return "; ".join(f"{line.location.short} ({line.location.code})" if line.location.code else line.location.short
                     for line in lines)


def precision_seen(run: StageOutcome | None) -> list[str]:
    """bf16/fp16 ops Inductor fuses: the program's numbers differ from eager's by rounding, which is no bug."""
    if run is None or not run.numerics.precision:
        return []
    return [f"At {where_lines(run.numerics.precision)}: {run.numerics.precision_note}"]


def costs_seen(run: StageOutcome | None) -> list[str]:
    """Nothing failed, but the run as written may still break graphs or recompile: they cost speed, say so."""
    if run is None or not (run.graph_breaks or run.recompiles):
        return []
    expected = list(run.expected_recompiles)
    if not run.graph_breaks and len(expected) == run.recompiles:  # (model.eval(): one compile per mode)
        why = "; ".join(dict.fromkeys(EXPECTED[kind] for kind in run.expected_recompiles.values()))
        return [f"The run as written had {count(run.recompiles, 'recompile')} ({', '.join(expected)}), expected: "
                f"{why}. Nothing to avoid; its trace report (backend/index.html) says what changed."]
    avoidable = run.recompiles - len(expected)
    recompiled = (f"{count(run.recompiles, 'recompile')} ({len(expected)} expected: {', '.join(expected)})" if expected
                  else count(run.recompiles, "recompile"))
    seen = " and ".join(part for part in (count(run.graph_breaks, "distinct graph break") if run.graph_breaks else "",
                                          recompiled if run.recompiles else "") if part)
    which = "them" if not expected else ("the graph breaks" if not avoidable else "the others")
    return [f"The run as written had {seen}: they cost speed, not correctness. Its trace report "
            f"(backend/index.html) or compilescope summary on its log says where and how to avoid {which}."]


def caught_seen(outcomes: list[StageOutcome]) -> list[str]:
    """A compile that failed in a run the program went on with: not the failure, but worth knowing about."""
    run = next((o for o in outcomes if o.caught), None)
    if run is None:
        return []
    first = run.caught[0]
    where = f" at {first.location.short}" if first.location else ""
    return [f"With {run.spec.title}, {count(len(run.caught), 'compile')} failed without stopping the program "
            f"({first.exception}: {first.message}{where}, compile id {first.compile_id}): its exception reached the "
            "program, which caught it and went on. That run's trace report has the error."]

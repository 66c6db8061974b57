"""`compilescope diagnose`: from the stage runs (and their traces) to a verdict.

The stages follow the PyTorch troubleshooting guide: the program runs with its
torch.compile backend forced to "eager" (Dynamo only), then "aot_eager" (Dynamo +
AOTAutograd), then as written (Inductor unless it chose another backend). The first
stage that fails names the culprit; within a stage, the failing compile's stage comes
from analyses/compile_errors.py (one classifier for the whole project). A compile whose exception
the program caught, going on to exit 0 or to compile more, fails no stage: the
program runs past it as written. A process that dies in native code (a segfault, an abort: the
stack `compilescope run` records with faulthandler) fails its stage whatever its exit status, and the
verdict is that crash: the first stage that crashes names the layer that brings it in (Dynamo,
AOTAutograd, the backend's generated code), unless the program crashes with torch.compile disabled too.

Pure: the orchestration (diagnose.py) gathers the facts, this package judges them. This module holds its
vocabulary (the stages, statuses and verdict outcomes) and every class it saves (a saved result names a class by
module, so they stay here); the functions are in its modules, each importing from this one:

  stage_outcome.py    one stage's run, from its facts, output and trace: failed and caught compiles, where it
                      raised, the graph torch's accuracy check failed (wrong_graph)
  printed_numbers.py  the numbers each run printed, compared across stages and with eager's control runs
  seeds.py            what the program's files show of seeding (program_seed, module_seed)
  verdict.py          decide(): the verdict from the stages' outcomes, and the verdicts of a failure (a compile
                      error, a crash, an export, wrong results, the recompile limit)
  number_verdicts.py  the verdicts where every stage runs but prints other numbers: rounding, Inductor's random
                      numbers, a custom op's undeclared write, and what the control runs showed
  notes.py            what every verdict's wording shares: the stage named in a sentence, and the notes a verdict
                      adds (graph breaks and recompiles, compiles the program caught, bf16/fp16 fused)
  reproduce.py        reproducing it outside diagnose: torch's minifier (minify_plan, its repro scripts) and the
                      commands to type by hand
"""

from __future__ import annotations

import ast
import os
from dataclasses import field
from typing import Any

from ...model.records import dataclass
from ..crash import Crash, GeneratedLine
from ..compile_errors import STAGE_LABELS, CompileError
from ..export import DimConflict, ExportIssue
from ..numerics import Numerics
from ..op_mutations import OpMutations
from ..provenance import UserLine
from ..user_locations import UserLocation

# Stage keys beyond compile_errors.py's: a failure with no failed compile in the trace.
RUNTIME = "compiled_runtime"  # the compiled code raised (or crashed) when it ran
PROGRAM = "program"  # the program fails with torch.compile disabled too
ACCURACY = "accuracy"  # compiled results differ from eager
EXPORT = "export"  # torch.export failed: no stage's backend is in it
DIAGNOSIS_LABELS = {
    **STAGE_LABELS,
    EXPORT: "torch.export (which the stages' backends do not change)",
    RUNTIME: "Compiled code, at run time",
    PROGRAM: "The program itself (fails without torch.compile)",
    ACCURACY: "Accuracy (compiled results differ from eager)",
}


# Environment of each stage run. TORCH_BISECT_BACKEND is read by torch.compile itself
# (torch/__init__.py, for torch._inductor.compiler_bisector) and replaces the backend of
# every torch.compile call, before torch's repro wrappers are applied.
FORCE_BACKEND_ENV = "TORCH_BISECT_BACKEND"
REPRO_ENV = ("TORCHDYNAMO_REPRO_AFTER", "TORCHDYNAMO_REPRO_LEVEL")
DEBUG_DIR_ENV = "TORCH_COMPILE_DEBUG_DIR"


@dataclass(frozen=True)
class StageSpec:
    key: str  # also the report's subdirectory
    title: str
    covers: str
    env: tuple[tuple[str, str], ...] = ()  # what the run sets, besides tracing

    @property
    def backend(self) -> str | None:
        return dict(self.env).get(FORCE_BACKEND_ENV)


EAGER = StageSpec("eager", 'backend="eager"', "Dynamo only: graphs captured, then run by PyTorch eagerly",
                  ((FORCE_BACKEND_ENV, "eager"),))
AOT_EAGER = StageSpec("aot_eager", 'backend="aot_eager"', "Dynamo + AOTAutograd: no code generation",
                      ((FORCE_BACKEND_ENV, "aot_eager"),))
BACKEND = StageSpec("backend", "your backend", "the program as written (Inductor unless it chose another backend)")
NO_COMPILE = StageSpec("no_compile", "torch.compile disabled", "TORCHDYNAMO_DISABLE=1: nothing is compiled",
                       (("TORCHDYNAMO_DISABLE", "1"),))
ACCURACY_RUN = StageSpec("accuracy", "accuracy check", "your backend with torch's accuracy checker (TORCHDYNAMO_REPRO_LEVEL=4)")
# The control run: eager's stage once more, run only where the stages printed other numbers. The lines whose numbers
# differ between its two runs change from run to run (an unseeded torch.randn, a clock): they are not compared.
EAGER_CONTROL = StageSpec("eager_control", 'backend="eager", again',
                          "a control run: which printed numbers change from run to run under Dynamo alone",
                          ((FORCE_BACKEND_ENV, "eager"),))
# A line that changes from run to run can print alike in two runs by chance (a coin flip printed 0 or 1): a second
# control run, made only where a changed line is left that may be such a line (another_control).
EAGER_CONTROL_AGAIN = StageSpec("eager_control_2", 'backend="eager", a third time',
                                "a second control run: a changed line eager printed alike twice may still be chance",
                                ((FORCE_BACKEND_ENV, "eager"),))
STAGES = (EAGER, AOT_EAGER, BACKEND)

PASSED, FAILED, TIMED_OUT, SKIPPED = "passed", "failed", "timed out", "skipped"


@dataclass
class RunFacts:
    """What the orchestration saw of one child run (nothing from the trace)."""

    argv: list[str]
    env: dict[str, str]  # the variables diagnose set (shown in the commands to reproduce)
    returncode: int
    seconds: float
    timed_out: bool = False
    output_tail: str = ""  # the last lines of its stdout+stderr
    cwd: str | None = None  # when not the user's working directory
    signal: str | None = None  # the signal that killed it ("SIGSEGV"); None when it exited
    # faulthandler's text of each process of the run that crashed in native code (runner.attach_crash_reports), the
    # process whose log the stage reads first
    crash_texts: list[str] = field(default_factory=list)


@dataclass
class KernelCall:
    """One kernel call of the output code of the graph torch's accuracy check failed."""

    kernel: str  # as called: "triton_per_fused_add_mul_relu_sum_0", "extern_kernels.mm"
    line: int  # the output code's line that calls it
    source: tuple[int, int] | None  # the output code's lines of its source (a kernel Inductor generated), first, last
    nodes: list[str]  # the graph's nodes it computes, as the comment above the call names them
    user_lines: list[UserLine]  # the user's lines it was made from (provenance's stack traces)

    def said(self) -> str:
        where = (f"its source at lines {self.source[0]}-{self.source[1]} of the output code, called at line {self.line}"
                 if self.source else f"called at line {self.line} of the output code")
        return f"{self.kernel} ({', '.join(self.nodes) + '; ' if self.nodes else ''}{where})"

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "line": self.line, "source": list(self.source) if self.source else None,
                "nodes": self.nodes, "user_lines": [u.to_json() for u in self.user_lines]}


@dataclass
class WrongGraph:
    """What torch's accuracy check said of the graph whose outputs differ: its name, its numbers (the first output that
    failed), and from the run's trace the compile that made it and the kernels its output code calls."""

    name: str | None  # torch's: "model__0_inference_0"
    rmse: dict[str, str] | None = None  # res, ref, shape, dtype, multiplier, tol: as torch printed them
    compile_id: str | None = None
    label: str | None = None  # "[0/0] inference", as the provenance page names the graph
    code_file: str | None = None  # the output code's artifact
    kernels: list[KernelCall] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)  # the compile's *_TESTING_ONLY settings (compile_errors.testing_hooks)

    @property
    def user_lines(self) -> list[UserLine]:
        """The user's lines the graph's kernels were made from, each once."""
        seen: dict[tuple[str, int], UserLine] = {}
        for kernel in self.kernels:
            for line in kernel.user_lines:
                seen.setdefault((line.file, line.line), line)
        return list(seen.values())

    def said(self) -> list[str]:
        """The next steps that say it: where the wrong values come from, torch's numbers (a testing hook the compile
        set is the verdict's testing_hooks)."""
        said = []
        if self.label is not None:
            lines = self.user_lines
            made = (" made from " + ", ".join(f"{u.short} `{u.code}`" if u.code else u.short for u in lines)
                    if lines else "")
            kernels = " and ".join(k.said() for k in self.kernels) or "kernels the log does not name"
            said.append(f"The wrong values come from {self.name or 'a graph'}, the graph {self.label}{made}: Inductor "
                        f"compiled it into {kernels}. torch's check compares the graph's outputs, not each kernel's: it "
                        "does not say which kernel computes wrong values. The output code is in the accuracy run's "
                        "trace report.")
        if self.rmse is not None:
            r = self.rmse
            said.append(f"torch's numbers: the compiled output ([{r['shape']}] {r['dtype']}) is at RMSE {r['res']} from a "
                        f"float64 run, eager's at {r['ref']} (multiplier {_number(r['multiplier'])}, tol "
                        f"{_number(r['tol'])}).")
        return said

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "rmse": self.rmse, "compile_id": self.compile_id, "label": self.label,
                "code_file": self.code_file, "kernels": [k.to_json() for k in self.kernels]}


def _number(text: str) -> str:
    """torch's "2.000000" as "2"."""
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


@dataclass
class StageOutcome:
    spec: StageSpec
    facts: RunFacts | None = None  # None: not run
    errors: list[CompileError] = field(default_factory=list)  # failed compiles (the recompile limit is not a failure)
    # Failed compiles the run went past: their exception reached the program, which caught it (a fullgraph=True
    # try/except) and went on. Not failures of the run: the same program runs as written.
    caught: list[CompileError] = field(default_factory=list)
    # Compiles that hit the recompile limit: not failures of the run (it goes on), but their frame runs eagerly from
    # then on, so the stage passes without everything it was asked to compile being compiled.
    limited: list[CompileError] = field(default_factory=list)
    compiles: int = 0  # compile ids in its trace
    graph_breaks: int = 0  # distinct graph breaks in its trace
    recompiles: int = 0  # recompiles in its trace
    used_inductor: bool = False
    backend_name: str | None = None  # as torch named it in an error, when it did
    traced: bool = False
    skipped_reason: str | None = None
    report: str | None = None  # its report's index, relative to the diagnosis page
    accuracy_failure: str | None = None  # torch's line saying the accuracy check failed
    accuracy_note: str | None = None  # why the accuracy was not (or could not be) checked here
    mismatch: str | None = None  # a failed run's own check of its results: values that differ (assert_close's line)
    crash: Crash | None = None  # a process of the run died in native code (the first, if several did)
    # A failed run's last Python traceback: its innermost frame of the user's code, and the line of a compilation's
    # output code it went through (the compiled code raised there)
    raised_at: UserLocation | None = None
    raised_in: tuple[GeneratedLine, UserLocation] | None = None
    # torch.export's failures in its trace (analyses/export.py): strict export's failed Dynamo traces (kept out of
    # errors and caught: no torch.compile backend is in them), the issues export or draft_export logged, and the dims a
    # non-strict export was given that the model's code contradicts
    export_errors: list[CompileError] = field(default_factory=list)
    export_issues: list[ExportIssue] = field(default_factory=list)
    export_dims: list[DimConflict] = field(default_factory=list)
    # Lines whose compiled code cannot give eager's numbers (Inductor's random numbers, low precision fused in
    # float32), from its trace: what torch's accuracy check cannot tell from a bug
    numerics: Numerics = field(default_factory=Numerics)
    # Custom ops its compiled code calls whose source writes into an argument their mutates_args does not name
    op_mutations: OpMutations = field(default_factory=OpMutations)
    # Its recompiles the program caused on purpose: compile id -> why (a key of recompiles.EXPECTED: "training" for
    # model.eval(), a layer frozen), as the Recompiles section tells them
    expected_recompiles: dict[str, str] = field(default_factory=dict)
    # The lines its output printed with numbers in them (printed_lines): compared across stages (same program)
    printed: list[str] = field(default_factory=list)
    # torch's accuracy check failed a graph in this run: which, its kernels, torch's numbers (wrong_graph)
    wrong_graph: WrongGraph | None = None

    @property
    def export_failed(self) -> bool:
        """torch.export failed as `check` fails its log: a failed compile (strict export's) or an export issue."""
        return bool(self.export_errors or self.export_issues)

    @property
    def status(self) -> str:
        if self.facts is None:
            return SKIPPED
        if self.facts.timed_out:
            return TIMED_OUT
        # (a crash fails the run even when it exits 0: one of its processes died, a torchrun worker say)
        if self.facts.returncode != 0 or self.errors or self.accuracy_failure or self.crash is not None:
            return FAILED
        return PASSED

    def to_json(self) -> dict[str, Any]:
        f = self.facts
        return {
            "stage": self.spec.key, "title": self.spec.title, "status": self.status,
            "returncode": f.returncode if f else None, "seconds": round(f.seconds, 2) if f else None,
            "timed_out": f.timed_out if f else False, "env": f.env if f else {},
            "compiles": self.compiles, "graph_breaks": self.graph_breaks, "recompiles": self.recompiles,
            "used_inductor": self.used_inductor, "backend": self.backend_name,
            "errors": [e.to_json() for e in self.errors], "caught": [e.to_json() for e in self.caught],
            "recompile_limit": [e.to_json() for e in self.limited],
            "skipped_reason": self.skipped_reason,
            "report": self.report, "accuracy_failure": self.accuracy_failure, "accuracy_note": self.accuracy_note,
            "mismatch": self.mismatch, "crash": self.crash.to_json() if self.crash else None,
            "raised_at": self.raised_at.to_json() if self.raised_at else None,
            "raised_in": {**self.raised_in[0].to_json(), "code": self.raised_in[1].code} if self.raised_in else None,
            "export_errors": [e.to_json() for e in self.export_errors],
            "export_issues": [i.to_json() for i in self.export_issues],
            "export_dims": [d.to_json() for d in self.export_dims],
            "numerics": self.numerics.to_json(), "op_mutations": self.op_mutations.to_json(),
            "expected_recompiles": self.expected_recompiles,
            "wrong_graph": self.wrong_graph.to_json() if self.wrong_graph else None,
        }


SAME_PROGRAM = "same program"  # what the stages' runs shared where diagnose could not read the program's file


@dataclass
class PrintedChange:
    """The first stage whose run printed other numbers than the stage before it (same program): the lines that
    differ, the earlier stage's beside the later one's."""

    stage: str  # the StageSpec key of the stage that changed them
    title: str
    before: str  # the stage before it, whose lines it is compared with
    before_title: str
    lines: list[tuple[str, str]] = field(default_factory=list)  # (the earlier stage's line, this stage's), the first few
    total: int = 0  # how many lines differ
    beyond_rounding: int = 0  # how many of them differ by more than float32 rounding (rounding_only), nan/inf included
    nonfinite: int = 0  # how many of them print nan or inf where the stage before printed another number
    # What the compared runs shared, as the headline and the page say it (ProgramSeed.alike): "same program, same seed:
    # torch.manual_seed at line 39" only where the program's file seeds
    alike: str = SAME_PROGRAM

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "title": self.title, "before": self.before, "before_title": self.before_title,
                "lines": [{"before": a, "after": b} for a, b in self.lines], "total": self.total,
                "beyond_rounding": self.beyond_rounding, "nonfinite": self.nonfinite, "alike": self.alike}


@dataclass
class ProgramSeed:
    """What the program's own file shows of seeding (program_seed): its first seeding call, or None where it has none."""

    file: str  # the program's file, as its command names it
    call: str | None = None  # "torch.manual_seed"
    line: int | None = None
    # The local module the call is in, where not the program's file: its path from the program's folder ("utils.py")
    module: str | None = None

    @property
    def where(self) -> str:
        """Where the call is: "line 5", or "line 5 of utils.py" in a module the program imports."""
        return f"line {self.line}" + (f" of {self.module}" if self.module else "")

    @property
    def alike(self) -> str:
        """What the stages' runs of this program shared, as a printed change's headline says it."""
        if self.call is None:
            return f"same program, no seed set in {os.path.basename(self.file)}"
        return f"same program, same seed: {self.call} at {self.where}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "call": self.call, "line": self.line, "module": self.module}


# -- the minimized repro ----------------------------------------------------------------


@dataclass
class ReproGraph:
    """The graph of a repro.py torch's minifier wrote: `class Repro(torch.nn.Module)` and its forward()."""

    inputs: list[str]
    ops: list[str]  # the call target of each op, e.g. "torch.relu", "torch.ops.aten.relu.default"

    @property
    def nodes(self) -> int:
        """FX nodes, as torch counts them (placeholders, ops, the output)."""
        return len(self.inputs) + len(self.ops) + 1

    def to_json(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "ops": self.ops, "nodes": self.nodes}


def save_dirs(source: str) -> list[ast.expr]:
    """The save_dir= values of the run_repro(...) calls torch writes into a repro script, in source order; [] where it
    does not parse. (Found as nodes, not as text: torch writes check_str={check_str!r} on the same line, and an error
    text may hold `save_dir='...'` itself.)"""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    values = [k.value for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        isinstance(node.func, ast.Name) and node.func.id == "run_repro"
        or isinstance(node.func, ast.Attribute) and node.func.attr == "run_repro")
              for k in node.keywords if k.arg == "save_dir"]
    return sorted(values, key=lambda v: (v.lineno, v.col_offset))


def repro_save_dir(source: str) -> str | None:
    """Where the repro loads its saved inputs from (torch writes it into the run_repro(...) call)."""
    return next((v.value for v in save_dirs(source) if isinstance(v, ast.Constant) and isinstance(v.value, str)), None)


# Where a report's repro script loads its inputs from: the checkpoints beside it, wherever the report is moved
REPRO_INPUTS = "os.path.join(os.path.dirname(os.path.abspath(__file__)), 'checkpoints')"


@dataclass
class MinifyResult:
    after: str  # TORCHDYNAMO_REPRO_AFTER: "dynamo" | "aot"
    level: int  # TORCHDYNAMO_REPRO_LEVEL of the run that wrote the launcher
    isolated: bool = False  # the minifier ran each try in a process of its own (a crash), not in its own process
    run: RunFacts | None = None  # the program, rerun to write minifier_launcher.py
    launcher_run: RunFacts | None = None
    launcher: str | None = None  # its text
    repro: str | None = None  # repro.py's text
    graph: ReproGraph | None = None
    note: str | None = None  # why there is no repro
    files: dict[str, str] = field(default_factory=dict)  # name in the report -> description
    # Where the report keeps repro.py (its save_dir made the report's minify/checkpoints: relocated_repro); None where
    # it was not written
    repro_path: str | None = None

    @property
    def inputs(self) -> str | None:
        """The directory repro.py loads its saved inputs from (the report's, beside it: relocated_repro); None: torch
        makes random ones."""
        if self.repro is None:
            return None
        if self.repro_path is not None and f"save_dir={REPRO_INPUTS}" in self.repro:
            return os.path.join(os.path.dirname(self.repro_path), "checkpoints")
        return repro_save_dir(self.repro)

    def to_json(self) -> dict[str, Any]:
        return {
            "after": self.after, "level": self.level, "isolated": self.isolated, "has_launcher": self.launcher is not None,
            "has_repro": self.repro is not None, "graph": self.graph.to_json() if self.graph else None,
            "note": self.note, "files": self.files, "repro_path": self.repro_path,
            "inputs": self.inputs,
            "seconds": round(sum(r.seconds for r in (self.run, self.launcher_run) if r), 2),
        }


@dataclass(frozen=True)
class MinifyPlan:
    """How to make torch's minifier_launcher.py for a failure, and how to run it."""
    after: str  # TORCHDYNAMO_REPRO_AFTER: "dynamo" | "aot"
    stage: StageSpec  # the stage to rerun with it
    level: int = 2  # TORCHDYNAMO_REPRO_LEVEL: 2 writes the launcher when a graph fails, 3 before each graph runs
    isolate: bool = False  # the minifier tries each graph in a process of its own: a crash must not kill it


# -- the verdict ------------------------------------------------------------------------


@dataclass
class Command:
    title: str
    line: str  # a shell command line

    def to_json(self) -> dict[str, str]:
        return {"title": self.title, "command": self.line}


@dataclass
class Verdict:
    outcome: str  # "ok" | "rounding" | "fell_back" | "differs" | "compile_error" | "runtime_error" | "crash" | "accuracy"
    #               | "program_error" | "no_torch" | "timeout" | "nothing_compiled"
    headline: str
    failing_stage: str | None = None  # the StageSpec key of the first run that failed
    stage: str | None = None  # a key of DIAGNOSIS_LABELS
    error: CompileError | None = None
    message: str | None = None
    location: UserLocation | None = None
    location_kind: str | None = None
    next_steps: list[str] = field(default_factory=list)
    crash: Crash | None = None  # outcome "crash": the process died in native code, there
    printed: PrintedChange | None = None  # the stages' runs printed other numbers, first with this stage
    # How many printed lines changed between eager's run and its control runs (EAGER_CONTROL, EAGER_CONTROL_AGAIN),
    # left out of the comparison; None: no control run (the stages printed the same numbers) or none passed
    run_to_run: int | None = None
    # The *_TESTING_ONLY settings the failing compile's Inductor config sets, said (testing_hooks_step): shown on a
    # line of their own, not as a next step, where the terminal's first three steps would push the workaround out
    testing_hooks: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def passes(self) -> bool:
        """diagnose exits 0: every stage ran, and any printed change is float32 rounding ("rounding"), which the user
        cannot and need not fix: a CI gating on diagnose must not fail a correct program for it."""
        return self.outcome in PASSING

    @property
    def stage_label(self) -> str | None:
        if self.error is not None and self.error.stage == self.stage:
            return self.error.stage_label  # (names the kernels' compiler where the error says which)
        return DIAGNOSIS_LABELS.get(self.stage) if self.stage else None

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome, "headline": self.headline, "failing_stage": self.failing_stage,
            "stage": self.stage, "stage_label": self.stage_label, "message": self.message,
            "error": self.error.to_json() if self.error else None,
            "location": self.location.to_json() if self.location else None, "location_kind": self.location_kind,
            "next_steps": self.next_steps, "crash": self.crash.to_json() if self.crash else None,
            "printed": self.printed.to_json() if self.printed else None, "run_to_run": self.run_to_run,
            "testing_hooks": self.testing_hooks,
        }


FELL_BACK = "fell_back"
DIFFERS = "differs"  # every stage ran, and the compiled code cannot give eager's numbers (Inductor's random numbers)
# Every stage ran, the backend's run printed other numbers, each within float32 rounding of the stage before
# (rounding_only), and nothing in its graphs explains them (no Inductor random, no low precision fused): float32
# rounding, unless torch's accuracy check ran and did not pass
ROUNDING = "rounding"
PASSING = ("ok", ROUNDING)  # the verdicts diagnose exits 0 with


@dataclass
class DiagnoseResult:
    """Everything one `compilescope diagnose` run found (diagnose.py runs the stages; renderers show it)."""

    argv: list[str]
    cwd: str
    outcomes: list[StageOutcome]
    verdict: Verdict
    accuracy: StageOutcome | None = None
    # eager's stage run once more (EAGER_CONTROL), only where the stages printed other numbers, and a third time
    # (EAGER_CONTROL_AGAIN) only where another_control says
    controls: list[StageOutcome] = field(default_factory=list)
    seed: ProgramSeed | None = None  # what the program's file shows of seeding; None: diagnose could not read it
    minify: MinifyResult | None = None
    logs: dict[str, str] = field(default_factory=dict)  # stage key -> its TORCH_TRACE log (in the work directory)
    outputs: dict[str, str] = field(default_factory=dict)  # stage key -> its captured output file
    minify_files: dict[str, str] = field(default_factory=dict)  # name in the report's minify/ -> file in the work dir

    @property
    def runs(self) -> list[StageOutcome]:
        return self.outcomes + self.controls + ([self.accuracy] if self.accuracy is not None else [])

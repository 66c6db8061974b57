"""`compilescope diagnose`: from the stage runs (and their traces) to a verdict.

The stages follow the PyTorch troubleshooting guide: the program runs with its
torch.compile backend forced to "eager" (Dynamo only), then "aot_eager" (Dynamo +
AOTAutograd), then as written (Inductor unless it chose another backend). The first
stage that fails names the culprit; within a stage, the failing compile's stage comes
from analyses/errors.py (one classifier for the whole project). A compile whose exception
the program caught, going on to exit 0 or to compile more, fails no stage: the
program runs past it as written. A process that dies in native code (a segfault, an abort: the
stack `compilescope run` records with faulthandler) fails its stage whatever its exit status, and the
verdict is that crash: the first stage that crashes names the layer that brings it in (Dynamo,
AOTAutograd, the backend's generated code), unless the program crashes with torch.compile disabled too.

Pure: the orchestration (diagnose.py) gathers the facts, this module judges them.
"""

from __future__ import annotations

import ast
import math
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Trace
from ...wording import count, possessive
from ..crash import (
    STATIC_LAUNCHER_ADVICE, Crash, GeneratedLine, generated_line, output_code_files, parse_crash, unrecorded_crash,
)
from ..errors import (
    AOT, DYNAMO, INDUCTOR, KERNEL_COMPILE, LOWERING, NARROWING_STEPS, RECOMPILE_LIMIT, STAGE_LABELS, USER_BACKEND,
    TESTING_HOOKS_LEAD, YOUR_SCRIPT, CompileError, compile_errors, testing_hooks, testing_hooks_step,
)
from ..export import DimConflict, ExportIssue, export_report
from ..graph_breaks import function_label, graph_breaks
from ..numerics import Numerics, numerics
from ..op_mutations import OpMutations
from ..op_mutations.analysis import op_mutations
from ..provenance import UserLine, analyze_provenance
from ..recompiles import EXPECTED
from ..recompiles.frames import recompiles
from ..recompiles.links import name_failing_guards
from ..userloc import UserLocation, is_framework_file, last_user_stack_frame, traceback_frames
from ...model.records import dataclass

# Stage keys beyond errors.py's: a failure with no failed compile in the trace.
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


def _stage_noun(stage: str, outcome: StageOutcome, error: CompileError | None = None) -> str:
    """STAGE_NOUNS' name of a stage, Inductor named where it was the backend compiler that failed, and the kernels'
    compiler where the error says which (C++ or Triton)."""
    if stage == KERNEL_COMPILE and error is not None and error.stage == KERNEL_COMPILE:
        return f"the {error.stage_label} of Inductor's kernels"
    return STAGE_NOUNS[stage] + (" (Inductor)" if stage == USER_BACKEND and outcome.used_inductor else "")


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


# torch's accuracy check (torch/_dynamo/utils.py same()), for each output that fails it: its RMSE against a float64 run,
# the compiled graph's (res) and eager's (ref); it fails where res > multiplier * ref + tol / 10
_RMSE = re.compile(r"RMSE \(res-fp64\): (?P<res>[-+\w.]+), \(ref-fp64\): (?P<ref>[-+\w.]+) and shape=torch\.Size\(\[(?P<shape>"
                   r"[^\]]*)\]\)\. res\.dtype: torch\.(?P<dtype>\w+), multiplier: (?P<multiplier>[\d.]+), tol: (?P<tol>[\d.]+)")
# AOTAutograd's name of the graph the check failed (get_aot_graph_name: model name, AOT ID, how many graphs it had
# compiled before): "model__0_inference_0" is the graph whose output code starts "# AOT ID: ['0_inference']"
_AOT_GRAPH = re.compile(r"Accuracy failed for the AOT Autograd graph (?P<name>\S*?__(?P<aot_id>\d+_[a-z]+)_\d+)\b")
_SOURCE_NODES = re.compile(r"#\s*Topologically Sorted Source Nodes: \[(?P<nodes>[^\]]*)\]")


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
    hooks: list[str] = field(default_factory=list)  # the compile's *_TESTING_ONLY settings (errors.testing_hooks)

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


def _kernel_source(code: list[str], kernel: str) -> tuple[int, int] | None:
    """The lines of a kernel's source in the output code: `name = async_compile.triton('name', '''` to the ''' that
    ends it."""
    start = re.compile(rf"^{re.escape(kernel)} = async_compile\.\w+\(")
    for i, text in enumerate(code):
        if start.match(text):
            end = next((j for j in range(i + 1, len(code)) if code[j].lstrip().startswith("'''")), None)
            return (i + 1, end + 1) if end is not None else None
    return None


def wrong_graph(trace: Trace | None, output: str, files: SourceFiles = NO_FILES) -> WrongGraph | None:
    """The graph torch's accuracy check failed (its run's output), found in the run's trace by its AOT ID. files: the
    user's files as ingest read them (user_files.insight_files: the provenance reads its user kernels' there)."""
    named = _AOT_GRAPH.search(output)
    rmse = _RMSE.search(output)
    if named is None and rmse is None:
        return None
    found = WrongGraph(named["name"] if named else None, rmse.groupdict() if rmse else None)
    if named is None or trace is None:
        return found
    for compiled in analyze_provenance(trace, files).compiles.values():
        for section in compiled.sections:
            if section.title != named["aot_id"] or section.code.payload is None:
                continue
            code = trace.payload_text(section.code.payload).splitlines()
            skip = section.code.skip  # (the panel's line numbers: the code less its leading empty lines)
            kernels = {k.name: k for k in section.own_kernels}
            found.compile_id = str(compiled.compile_id) if compiled.compile_id is not None else None
            found.label = section.label
            found.code_file = section.code.title
            entry = next((e for e in trace.compiles.values() if e.compile_id == compiled.compile_id), None)
            found.hooks = testing_hooks(entry.metrics or {}) if entry is not None else []
            for line, names in sorted(section.code_kernels.items()):
                for name in names:
                    if name not in kernels:
                        continue
                    call = line + skip
                    above = next((m for text in reversed(code[max(0, call - 5):call - 1])
                                  if (m := _SOURCE_NODES.search(text))), None)
                    kernel = kernels[name].kernel
                    found.kernels.append(KernelCall(kernel, call, _kernel_source(code, kernel),
                                                    [n.strip() for n in above["nodes"].split(",")] if above else [],
                                                    kernels[name].user_lines))
            return found
    return found


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


_ACCURACY_LINES = re.compile(r"Accuracy failed for [^\n]*|AccuracyError: [^\n]*|Bad accuracy detected[^\n]*")


def accuracy_failure(output: str) -> str | None:
    """torch's own line saying its level-4 accuracy check failed, if the run's output has one."""
    match = _ACCURACY_LINES.search(output)
    return match.group(0).strip() if match else None


# How torch.testing.assert_close (and numpy's assert_allclose) say that values differ: the program checked its results.
_MISMATCH_LINES = re.compile(r"Greatest (?:relative|absolute) difference: [^\n]*|(?:Tensor-likes|Scalars) are not "
                             r"(?:close|equal)![^\n]*|Not equal to tolerance[^\n]*")


def numeric_mismatch(output: str) -> str | None:
    """The line of a failed run saying its results differ from what it expected (the most telling one)."""
    found = [m.group(0).strip() for m in _MISMATCH_LINES.finditer(output)]
    return next((line for line in found if line.startswith("Greatest")), found[0] if found else None)


# What the stages' runs printed is compared as the numbers in it: which numbers are the program's results, and how far
# one may move and still be float32 rounding, is decided here and nowhere else (README, diagnose --help say the same).
_DIGITS = r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# A number as a program prints it ("4.1", "-3e-05", "0", "nan", "-inf": a result gone wrong is a number too), not part
# of a word or a path ("x1", "v2.13", "0x7f", "info").
_NUMBER = re.compile(rf"(?:{_DIGITS}|(?<![\w.])[-+]?(?:nan|inf(?:inity)?))(?![\w.])", re.IGNORECASE)
# Numbers that change from run to run whatever the stage, so never a result: a number with a unit of time, size, rate or
# ratio ("0.2973 s", "12ms", "1534 MB", "3.1 GiB", "812 tok/s", "45.2 it/s", a speed-up "1.8 x"), a process id
# ("pid 4242"), a clock ("10:29:22.123", tqdm's "00:01") or a date. "min" followed by a number is a minimum ("max 3.2
# min 0.1"), not minutes.
_UNIT = (r"(?:[kmgtp]i?b|b|bytes?|[µu]s|ns|ms|s|secs?|seconds?|hrs?|hours?|min(?:s|utes?)?(?![ \t]*[-+]?\.?\d)|"
         r"[a-z]*/s(?:ec)?|per[ \t]+(?:second|sec|s)|x|×|fps|[kmg]?hz|[kmgtp]?flop/?s)")
_MEASURED = re.compile(rf"{_DIGITS}[ \t]{{0,2}}{_UNIT}(?![\w/])|\bpid\b\W{{0,3}}\d+"
                       r"|(?<![\w.:])\d{1,2}(?::\d\d){1,2}(?:[.,]\d+)?(?![\w:])|\b\d{4}-\d\d-\d\d\b", re.IGNORECASE)
# A percentage is a result ("accuracy 97.3%", "loss share 12%", "top-1: 76.1%": a metric the compiled code can get
# wrong), except one that tells progress or the use of a resource, which follows the clock, not the results: every
# percentage of a line with a bar ("[=====>    ] 45%": at least 3 bar characters, so "[*] accuracy: 49.4%" is no bar;
# tqdm's "45%|####   |", the bar right after "%|"; a block character █▏▎▍▌▋▊▉), and a percentage next to one of the
# words done, complete(d), progress, eta, remaining, finished, processed, loading/loaded, downloading/downloaded,
# util(ization), usage, occupancy, busy, idle, faster, slower, speed-up, overhead ("45% done", "GPU util 87%",
# "progress: 45%", "overhead of 3%"), not the line's other percentages ("Epoch 3 done: val acc 91.2%" is a result). A
# progress percentage missed here is printed alike by each stage at the same point, or changes between eager's runs
# too (the control runs), so it is never taken for the compiled code's change; a metric taken for progress would hide
# one, hence the default.
_PERCENT = re.compile(rf"{_DIGITS}[ \t]{{0,2}}%")
_PROGRESS_BAR = re.compile(r"%\|(?=[^|\n]{3,}\|)[#█]*[1-9▏▎▍▌▋▊▉]?[ ]*\||\[(?=[.\- ]*[=#>*])[=#>*.\- ]{3,}\]|[█▏▎▍▌▋▊▉]")
_PROGRESS_WORD = (r"(?<![^\W_])(?:done|complete[d]?|progress|eta|remaining|finished|processed|loading|loaded|"
                  r"downloading|downloaded|util(?:i[sz]ation)?|usage|occupancy|busy|idle|faster|slower|speed-?up|"
                  r"overhead)(?![^\W_])")
# the percentage a word qualifies: right before it, or right after it (and a ":", "=", "of", "at", "by", "is")
_PROGRESS_PERCENT = re.compile(rf"(?P<word>{_PROGRESS_WORD}[ \t]*(?:[:=]|(?:of|at|by|is)(?![^\W_]))?[ \t]*)"
                               rf"{_DIGITS}[ \t]{{0,2}}%|{_DIGITS}[ \t]{{0,2}}%(?=[ \t]*{_PROGRESS_WORD})",
                               re.IGNORECASE)
# Lines left out whole: torch's own log lines (their prefix holds a time and a thread id), and lines that name a time,
# speed or memory in words, whose numbers need not carry a unit ("step time: 3.2", "took", "latency", "peak memory
# 1534", "step_time_ms=3.2": a name's parts between underscores count as words).
_MEASURED_LINE = re.compile(r"^\[?(?:rank\d+\]:?\[?)?[IWEDC]\d{4} \d\d:\d\d|(?<![^\W_])(?:time|timing|took|elapsed|"
                            r"duration|latency|throughput|speed|seconds?|secs?|ms|us|per[ _]sec(?:ond)?|memory|"
                            r"mem)(?![^\W_])", re.IGNORECASE)
# How far a printed number may move between stages and still be float32 rounding: 1e-3 of its size, or 1e-3 near 0,
# where rounding is as large as the terms that cancelled, not proportional to the result (wrong_results.py's fixed
# variant prints "max abs diff 4.39e-05" where aot_eager prints 0: rounding; as written, its dropout's own random
# numbers print 5.8 and 1.81). nan or inf against any other number is never rounding.
ROUNDING_RTOL = 1e-3
ROUNDING_ATOL = 1e-3
PRINTED_LINES_KEPT = 200
PRINTED_CHANGES_SHOWN = 10


def _unmeasured(line: str) -> str:
    """The line with each measured number (_MEASURED, progress percentages) written "~"."""
    line = _MEASURED.sub("~", line)
    if _PROGRESS_BAR.search(line):
        # (the bar itself too: tqdm's ascii bar ends in a digit, "45%|####5   |", that is no result)
        line = _PROGRESS_BAR.sub(lambda m: "%|~|" if m[0].startswith("%|") else m[0], line)
        return _PERCENT.sub("~", line)
    return _PROGRESS_PERCENT.sub(lambda m: (m["word"] or "") + "~", line)


def _results(line: str) -> list[str]:
    """The numbers of a printed line that are the program's results (measured ones left out)."""
    return _NUMBER.findall(_unmeasured(line))


def _kind(line: str) -> str:
    """The line less its numbers: "loss #", "step # took ~". Lines of one kind in two runs are compared."""
    return _NUMBER.sub("#", _unmeasured(line))


def _same(before: float, after: float) -> bool:
    return before == after or (math.isnan(before) and math.isnan(after))


def rounding_only(before: str, after: str) -> bool:
    """Whether the numbers of two lines of one kind are equal but for float32 rounding (ROUNDING_RTOL, ROUNDING_ATOL)."""
    for a, b in zip(map(float, _results(before)), map(float, _results(after))):
        if _same(a, b):
            continue
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        if abs(a - b) > max(ROUNDING_RTOL * max(abs(a), abs(b)), ROUNDING_ATOL):
            return False
    return True


def printed_lines(output: str) -> list[str]:
    """The lines of a run's output that print results ("train: max abs diff 4.1"), less torch's log lines and numbers
    that change from run to run anyway (_MEASURED, _MEASURED_LINE, progress percentages): what the stages'
    runs of one program should share."""
    kept = []
    for line in output.splitlines():
        line = line.strip()
        if line and len(line) < 500 and not _MEASURED_LINE.search(line) and _results(line):
            kept.append(line)
            if len(kept) == PRINTED_LINES_KEPT:
                break
    return kept


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


# A printed line, as two runs' lines are paired: its kind (_kind) and which of that kind it is (0: the first printed)
LineKey = tuple[str, int]


def _changed_lines(before: list[str], after: list[str]) -> list[tuple[LineKey, str, str]]:
    """Lines printed by both runs that read alike but for their numbers, and whose numbers differ, in order: the
    n-th line of a kind ("loss #" in a loop) in one run against the n-th of that kind in the other."""
    theirs: dict[str, list[str]] = {}
    for line in before:
        theirs.setdefault(_kind(line), []).append(line)
    seen: dict[str, int] = {}
    changed = []
    for line in after:
        kind = _kind(line)
        n = seen[kind] = seen.get(kind, -1) + 1
        earlier = theirs.get(kind, [])
        if n < len(earlier) and not all(_same(float(a), float(b)) for a, b in zip(_results(earlier[n]), _results(line))):
            changed.append(((kind, n), earlier[n], line))
    return changed


def run_to_run(eager: StageOutcome, controls: Sequence[StageOutcome]) -> set[LineKey] | None:
    """The printed lines whose numbers differ between eager's run and any of its control runs that passed
    (EAGER_CONTROL, EAGER_CONTROL_AGAIN): they change from run to run whatever the stage. None where there is no
    control to tell: none run, or none passed."""
    passed = [control for control in controls if control.status == PASSED]
    if not passed:
        return None
    return {key for control in passed for key, _, _ in _changed_lines(eager.printed, control.printed)}


# A call that seeds a random generator, in the program's own file: torch.manual_seed(0), torch.cuda.manual_seed_all,
# random.seed, np.random.seed, transformers' set_seed, lightning's seed_everything: any call whose name holds "seed"
# and that is given a seed, but torch.initial_seed() (which reads it) and np.random.SeedSequence (which seeds nothing
# itself). A call given none, or None, seeds from the clock or the OS (random.seed(), torch.seed(),
# torch.cuda.seed_all(), seed_everything(workers=True)): no same seed for each run. Read from the file's syntax tree, so comments, strings and docstrings
# ("the same seed (...)") are no calls. The file diagnose runs is read (the first word of its command that names
# a .py file), and, where it holds no such call, the local modules it imports and those they import (beside it, as
# op_mutations.calling_files.imported_files finds them: `from utils import setup` whose setup() calls torch.manual_seed): a seed set
# in an installed package under a name without "seed" is not seen, and a seeding call the program never reaches is
# taken for one. Evidence enough to word what the runs shared, and to decide whether a second control run is worth
# its cost (another_control); what is compared rests on the control runs.
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


_NOT_SEEDING = {"initial_seed", "SeedSequence"}
_SEED_KEYWORDS = {"seed", "a"}  # set_seed(seed=42), random.seed(a=3)


def _given_a_seed(call: ast.Call) -> bool:
    """Whether a seeding call is given a seed: its first argument, or a seed keyword, not None (a **kwargs may hold
    one: taken as given)."""
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in _SEED_KEYWORDS or k.arg is None),
                                                None)
    return given is not None and not (isinstance(given, ast.Constant) and given.value is None)


def _seeding_call(node: ast.AST) -> tuple[int, int, str] | None:
    """(line, column, the called name) of a call that sets a known seed (the rule above); None for any other node."""
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        last = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        if "seed" in last.lower() and last not in _NOT_SEEDING and _given_a_seed(node):
            return node.lineno, node.col_offset, ast.unparse(node.func)
    return None


def program_seed(file: str, source: str) -> ProgramSeed | None:
    """The first call in a program's source that sets a known seed (the rule above); None where the source is no Python
    diagnose can read (a file nested or long beyond what Python's parser holds included)."""
    try:
        tree = ast.parse(source)
        calls = [call for node in ast.walk(tree) if (call := _seeding_call(node)) is not None]
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _first_seed(file, calls)


def _first_seed(file: str, calls: list[tuple[int, int, str]]) -> ProgramSeed:
    """The seed of the first of these seeding calls (line, column, name) in file; an unseeded file's where none."""
    if not calls:
        return ProgramSeed(file)
    line, _, name = min(calls)
    return ProgramSeed(file, name, line)


def called_names(source: str) -> frozenset[str]:
    """The names a source calls (`reset` of `reset(0)` and of `helpers.reset(0)`): the functions of a module it
    imports that run; empty where it is no Python."""
    try:
        return frozenset(node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                         for node in ast.walk(ast.parse(source))
                         if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()


def module_seed(file: str, source: str, called: frozenset[str]) -> ProgramSeed | None:
    """The first seeding call of an imported module that runs: at its module level (run by the import; a function's
    or lambda's body there does not run), or in one of its top-level functions whose name the importer calls
    (called_names). A module that only defines a seeding function nobody calls does not seed the program. None where
    the source is no Python diagnose can read."""
    def running(node: ast.AST) -> list[tuple[int, int, str]]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return []
        found = [call] if (call := _seeding_call(node)) is not None else []
        return found + [c for child in ast.iter_child_nodes(node) for c in running(child)]

    try:
        calls: list[tuple[int, int, str]] = []
        for statement in ast.parse(source).body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name in called:
                calls += [call for node in ast.walk(statement) if (call := _seeding_call(node)) is not None]
            else:
                calls += running(statement)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _first_seed(file, calls)


def another_control(seed: ProgramSeed | None, unstable: set[LineKey] | None) -> bool:
    """Whether a changed line left after the first control run may still change from run to run, printed alike by
    eager twice by chance (a coin flip printed 0 or 1, a random number rounded to one digit): where the program's file
    sets no seed (or diagnose could not read it), or where some line did change between eager's two runs (the program
    is not deterministic, seed or not). A seeded program whose eager runs printed the same numbers needs no third run:
    the common case of a change (wrong_results.py's) costs one control run, as before."""
    if unstable is None:  # (the control run failed: printed numbers alone are not judged, another run tells nothing)
        return False
    return seed is None or seed.call is None or bool(unstable)


def _nonfinite(before: str, after: str) -> bool:
    return any(not _same(a, b) and not (math.isfinite(a) and math.isfinite(b))
               for a, b in zip(map(float, _results(before)), map(float, _results(after))))


def printed_change(outcomes: list[StageOutcome], unstable: set[LineKey] | None = None,
                   seed: ProgramSeed | None = None) -> PrintedChange | None:
    """The first stage that prints other numbers than the one before it, where each ran and exited 0: the program
    printing its own comparison with eager (or its losses) shows which part of torch.compile changes them. A stage
    whose change is beyond rounding is named before an earlier one whose change is only rounding (AOTAutograd's
    decompositions round too). unstable: the lines that change from run to run under eager too, not compared."""
    ran = [o for o in outcomes if o.spec in STAGES and o.status == PASSED]
    changes = []
    for before, after in zip(ran, ran[1:]):
        changed = [(a, b) for key, a, b in _changed_lines(before.printed, after.printed) if key not in (unstable or ())]
        if changed:
            beyond = [pair for pair in changed if not rounding_only(*pair)]
            # the lines beyond rounding first: they are what the verdict stands on
            shown = (beyond + [pair for pair in changed if pair not in beyond])[:PRINTED_CHANGES_SHOWN]
            changes.append(PrintedChange(after.spec.key, after.spec.title, before.spec.key, before.spec.title, shown,
                                         len(changed), len(beyond), sum(_nonfinite(*pair) for pair in changed),
                                         seed.alike if seed is not None else SAME_PROGRAM))
    return next((c for c in changes if c.beyond_rounding), changes[0] if changes else None)


def _used_inductor(trace: Trace) -> bool:
    for entry in trace.compiles.values():
        if (entry.metrics or {}).get("inductor_compile_time_s") is not None:
            return True
        if any(a.name.startswith("inductor_") for a in entry.artifacts):
            return True
    return False


def _caught(trace: Trace, facts: RunFacts, errors: list[CompileError]) -> set[str]:
    """The compile ids of the failures the program went past: torch raised (it did not fall back to eager), and the
    run then exited 0 or compiled something else (a later compile starts lower in the log)."""
    starts = {entry.key: entry.first_lineno for cid, entry in trace.compiles.items() if cid is not None}
    last_start = max(starts.values(), default=0)
    exited_ok = facts.returncode == 0 and not facts.timed_out
    return {e.compile_id for e in errors
            if not e.fell_back and (exited_ok or starts.get(e.compile_id, last_start) < last_start)}


_TRACEBACK = "Traceback (most recent call last):"
# Inductor's code cache names a module by its key, in a folder of the key's 2nd and 3rd characters: .../gt/cgtzk….py
_CACHED_MODULE = re.compile(r"[/\\](?P<two>[a-z0-9]{2})[/\\][a-z](?P=two)[a-z0-9]{40,60}\.py$")


def raised_where(output: str, output_code: dict[str, tuple[str, int, int]]
                 ) -> tuple[UserLocation | None, tuple[GeneratedLine, UserLocation] | None]:
    """Where the last Python traceback in a run's output raised: its innermost frame of the user's code (neither
    torch's nor Python's, nor a compilation's output code), and the innermost output code line it went through."""
    start = output.rfind(_TRACEBACK)
    if start < 0:
        return None, None
    frames = [(f, generated_line(f, output_code)) for f in traceback_frames(output[start:])]
    user = next((f for f, g in reversed(frames)
                 if g is None and not is_framework_file(f.filename) and not _CACHED_MODULE.search(f.filename)), None)
    generated = next(((g, f) for f, g in reversed(frames) if g is not None), None)
    return user, generated


def stage_outcome(spec: StageSpec, facts: RunFacts, trace: Trace | None, output: str = "",
                  files: SourceFiles = NO_FILES) -> StageOutcome:
    """files: the user's files as ingest read them (user_files.insight_files: op_mutations' and the provenance's)."""
    outcome = StageOutcome(spec, facts, traced=trace is not None)
    if trace is not None:
        errors, recompiled = compile_errors(trace), recompiles(trace)
        name_failing_guards(errors, recompiled)  # (a recompile limit's steps name its guard, as the report's do)
        found = errors.errors
        outcome.export_errors = [e for e in found if e.export_call is not None]
        failed = [e for e in found if e.stage != RECOMPILE_LIMIT and e.export_call is None]
        exported = export_report(trace)
        outcome.export_issues = exported.issues if exported.detected else []
        outcome.export_dims = exported.dim_conflicts
        caught = _caught(trace, facts, failed)
        outcome.errors = [e for e in failed if e.compile_id not in caught]
        outcome.caught = [e for e in failed if e.compile_id in caught]
        outcome.limited = [e for e in found if e.stage == RECOMPILE_LIMIT]
        outcome.compiles = trace.n_compile_ids
        outcome.graph_breaks = len(graph_breaks(trace).breaks)
        outcome.recompiles = recompiled.total
        outcome.expected_recompiles = {s.compile_id: s.expected for f in recompiled.frames for s in f.steps if s.expected}
        outcome.used_inductor = _used_inductor(trace)
        outcome.numerics = numerics(trace)
        outcome.op_mutations = op_mutations(trace, files)
        outcome.backend_name = next((e.backend for e in found if e.backend), None)
        if outcome.backend_name is None and outcome.used_inductor:
            outcome.backend_name = "inductor"
    outcome.backend_name = spec.backend or outcome.backend_name
    outcome.accuracy_failure = accuracy_failure(output)
    if outcome.accuracy_failure:
        outcome.wrong_graph = wrong_graph(trace, output, files)
    outcome.printed = printed_lines(output)
    if facts.returncode != 0 and not facts.timed_out:
        outcome.mismatch = numeric_mismatch(output)
        outcome.raised_at, outcome.raised_in = raised_where(output, output_code_files(trace) if trace is not None else {})
    if facts.crash_texts:  # placed by the output code of the log read, which names whose compiled code ran
        outcome.crash = parse_crash(facts.crash_texts[0], output_code_files(trace) if trace is not None else None)
    elif not facts.timed_out:
        outcome.crash = unrecorded_crash(facts.signal)
    return outcome


def compiled_frame(trace: Trace) -> UserLocation | None:
    """The user's frame of the first compile: where an accuracy failure's graph came from."""
    for entry in trace.sorted_compiles():
        location = last_user_stack_frame(entry.stack)
        if location is not None:
            return location
    return None


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


def repro_graph(source: str) -> ReproGraph | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Repro":
            forward = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
            if forward is None:
                return None
            inputs = [a.arg for a in forward.args.args[1:]]
            ops = [ast.unparse(stmt.value.func) for stmt in forward.body
                   if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)]
            return ReproGraph(inputs, ops)
    return None


def _save_dirs(source: str) -> list[ast.expr]:
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
    return next((v.value for v in _save_dirs(source) if isinstance(v, ast.Constant) and isinstance(v.value, str)), None)


def _line_starts(source: str) -> list[int]:
    starts = [0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return starts


def _save_dir_spans(source: str, in_comments: bool = True) -> list[tuple[int, int]]:
    """(start, end) in source of each run_repro(...) call's save_dir value: the code's, and (in_comments) those of the
    calls torch writes commented out (`# mod, args = run_repro(..., save_dir='...', ...)`, for the user to run), each
    found by parsing the comment's text."""
    import io  # here: only diagnose's repro scripts need them (start-up time)
    import tokenize

    lines, starts = source.split("\n"), _line_starts(source)

    def offset(lineno: int, col: int) -> int:  # (ast's columns count UTF-8 bytes)
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode(errors="replace"))

    spans = [(offset(v.lineno, v.col_offset), offset(v.end_lineno, v.end_col_offset)) for v in _save_dirs(source)
             if v.end_lineno is not None and v.end_col_offset is not None]
    try:
        comments = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                    if t.type == tokenize.COMMENT and "run_repro(" in t.string] if in_comments else []
    except (tokenize.TokenError, SyntaxError, ValueError):
        comments = []
    for comment in comments:
        code = comment.string.lstrip("#").lstrip()
        at = starts[comment.start[0] - 1] + comment.start[1] + len(comment.string) - len(code)
        spans += [(at + start, at + end) for start, end in _save_dir_spans(code, in_comments=False)]
    return sorted(spans)


# Where a report's repro script loads its inputs from: the checkpoints beside it, wherever the report is moved
REPRO_INPUTS = "os.path.join(os.path.dirname(os.path.abspath(__file__)), 'checkpoints')"


def relocated_repro(source: str, kept: bool, removed: str | None = None) -> str:
    """A repro script torch wrote (repro.py, minifier_launcher.py) loading its saved inputs from save_dir: torch wrote
    the directory of the run that made it, which diagnose removes when it is done. kept: the report keeps the inputs
    in checkpoints/ beside the script, which it then loads them from (REPRO_INPUTS: a path relative to the script, not
    to where it is run, nor the report's path when written, so that a moved or copied report still finds them); else
    torch's InputReader makes random ones (save_dir=None), as it does for a storage it cannot find. removed: that
    directory; the environment variables the script sets to a path in it (TORCH_COMPILE_DEBUG_DIR,
    TORCHINDUCTOR_CACHE_DIR: the run's) are left commented out, so that running it does not make them again."""
    said, pieces, at = REPRO_INPUTS if kept else "None", [], 0
    for start, end in _save_dir_spans(source):
        pieces += [source[at:start], said]
        at = end
    text = "".join(pieces) + source[at:]
    if kept and text != source and not re.search(r"^import os$", text, re.MULTILINE):
        text = "import os\n" + text  # (torch's scripts import it; REPRO_INPUTS needs it)
    if removed:
        setting = re.compile(rf"^os\.environ\[(['\"])\w+\1\] = (['\"]){re.escape(removed)}[^\n]*$", re.MULTILINE)
        text = setting.sub(lambda m: f"# {m[0]}  # (diagnose's work directory, removed)", text)
    return text


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


def minify_plan(verdict: Verdict, outcomes: list[StageOutcome]) -> MinifyPlan | str:
    """How to minify the failure, or why torch's minifier does not apply."""
    if verdict.outcome == FELL_BACK:
        return ("no graph failed: a frame hit the recompile limit, where Dynamo stops compiling it again; there is no "
                "graph for torch's minifier to shrink")
    if verdict.failing_stage is None:
        return "nothing failed: there is nothing to minify"
    if verdict.outcome == "accuracy" and verdict.failing_stage != ACCURACY_RUN.key:
        return ("torch's accuracy check compared each compiled graph's outputs with eager and found none that differ "
                "(the program's own check did): its minifier shrinks a graph the check fails, so there is none to "
                "shrink; the program's check and its inputs are the repro")
    if verdict.failing_stage == EAGER.key:
        return ("the failure happens in Dynamo itself, before any graph exists: torch's minifier starts from a "
                "captured graph, so the user frame and the message are the repro")
    if verdict.failing_stage == NO_COMPILE.key:
        return "the program fails without torch.compile: nothing to minify"
    backend = next((o for o in outcomes if o.spec.key == BACKEND.key), None)
    inductor = verdict.stage in (INDUCTOR, LOWERING, KERNEL_COMPILE) or (backend is not None and backend.used_inductor)
    stage = AOT_EAGER if verdict.failing_stage == AOT_EAGER.key else BACKEND
    if verdict.crash is not None:
        # A crash leaves no time to write a launcher after it: level 3 writes one before each graph runs (after
        # AOTAutograd) or compiles (after Dynamo: a crash while compiling), and the minifier tries each smaller
        # graph in a process of its own, where a crash is a failure it can shrink.
        after = "aot" if inductor and stage is BACKEND and not verdict.crash.compiling else "dynamo"
        return MinifyPlan(after, stage, level=3, isolate=True)
    after = "aot" if inductor and stage is BACKEND else "dynamo"
    if verdict.outcome == "accuracy":
        # Level 4 runs torch's accuracy check and writes the launcher for the graph it fails, as the accuracy run
        # did; rerun untraced all the same: the launcher (and the repro.py copied from it) would set TORCH_TRACE.
        return MinifyPlan(after, BACKEND, level=4)
    # A graph that raises when it runs: Inductor's generated call() empties its argument list (args.clear()) before
    # the kernel raises, so in one process the minifier's next try has no inputs left (torch 2.13 stops with
    # "len(ph_nodes)=5 != len(self.inps)=0"); in a process of its own each try gets them afresh.
    return MinifyPlan(after, stage, isolate=verdict.outcome == "runtime_error")


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
    costs = _costs_seen(next((o for o in outcomes if o.spec.key == BACKEND.key), None))
    return Verdict(
        FELL_BACK, f"Every stage runs{checked}, but not all compiled: with {run.spec.title}, {limit_hits(run)} and ran "
        f"eagerly after that{also}.", None, RECOMPILE_LIMIT, first, message=first.message, location=first.location,
        location_kind=first.location_kind, next_steps=steps + costs + _caught_seen(outcomes))


def _last_line(text: str) -> str | None:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else None


def _where_lines(lines: list) -> str:
    return "; ".join(f"{line.location.short} ({line.location.code})" if line.location.code else line.location.short
                     for line in lines)


# Of Inductor's generator, not of the program (which may set no seed): true of every program whose graphs draw so
INDUCTOR_RANDOM_SAID = ("Inductor's random numbers differ from eager's for the same seed (torch.compile does not "
                        "reproduce eager's random stream unless torch._inductor.config.fallback_random = True).")


def _differs_from_eager(run: StageOutcome | None, accuracy: StageOutcome | None,
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
                   f"its own random numbers at {_where_lines(lines)}: {INDUCTOR_RANDOM_SAID}{printed}{checked}", None, ACCURACY, location=first, location_kind="random op",
                   next_steps=[run.numerics.random_note or ""] + _precision_seen(run) + _costs_seen(run), printed=change)


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


def _control_seen(controls: Sequence[StageOutcome], unstable: set[LineKey] | None, change: PrintedChange | None,
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


def _prints_other_numbers(change: PrintedChange, outcomes: list[StageOutcome], accuracy: StageOutcome | None,
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
    after = _costs_seen(next((o for o in outcomes if o.spec.key == BACKEND.key), None)) + _caught_seen(outcomes)
    printed = (f"the program prints other numbers with {change.title}{name} than with {change.before_title} "
               f"({change.alike}; {count(change.total, 'line')}, below)")
    checked = accuracy is not None and accuracy.status == PASSED
    if run.op_mutations:  # (before rounding: a write torch does not know of explains any change, small or not)
        ops = run.op_mutations.ops
        first = ops[0]
        said = "; ".join(f"{op.op} writes into {' and '.join(op.arguments)} at "
                         f"{', '.join(f'{w.short} ({w.code})' if w.code else w.short for w in op.writes)}, which its "
                         "mutates_args does not declare" for op in ops)
        return Verdict(DIFFERS, f"Every stage compiles and runs, but {printed}: {_stage_noun(stage, run)} changes them, "
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
    steps = _precision_seen(run) if backend else []
    if backend and run.used_inductor and not run.numerics:
        # numbers beyond rounding, or torch's accuracy check ran and its run failed: neither is rounding
        steps.append(FLOAT32_BEYOND.format(lines=f"{change.beyond_rounding} of the {count(change.total, 'line')} below",
                                           title=run.spec.title) if change.beyond_rounding
                     else FLOAT32_NOTE.format(title=run.spec.title))
        steps.append(FLOAT32_BEYOND_CHECKED if checked else
                     FLOAT32_UNCHECKED if accuracy is None or accuracy.status == SKIPPED else FLOAT32_NOT_PASSED)
    steps.append(f"{change.before_title} gives the numbers from before the change: use it as a workaround.")
    return Verdict(DIFFERS, f"Every stage compiles and runs, but {printed}: {_stage_noun(stage, run)} changes them.",
                   None, stage, next_steps=steps + after, printed=change)


def _precision_seen(run: StageOutcome | None) -> list[str]:
    """bf16/fp16 ops Inductor fuses: the program's numbers differ from eager's by rounding, which is no bug."""
    if run is None or not run.numerics.precision:
        return []
    return [f"At {_where_lines(run.numerics.precision)}: {run.numerics.precision_note}"]


def _costs_seen(run: StageOutcome | None) -> list[str]:
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


def _caught_seen(outcomes: list[StageOutcome]) -> list[str]:
    """A compile that failed in a run the program went on with: not the failure, but worth knowing about."""
    run = next((o for o in outcomes if o.caught), None)
    if run is None:
        return []
    first = run.caught[0]
    where = f" at {first.location.short}" if first.location else ""
    return [f"With {run.spec.title}, {count(len(run.caught), 'compile')} failed without stopping the program "
            f"({first.exception}: {first.message}{where}, compile id {first.compile_id}): its exception reached the "
            "program, which caught it and went on. That run's trace report has the error."]


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
            verdict = _differs_from_eager(backend, accuracy, change if change and change.stage == BACKEND.key else None)
        if verdict is None and change is not None:
            verdict = _prints_other_numbers(change, outcomes, accuracy, controls)
        if verdict is None:
            verdict = Verdict("ok", f"Every stage compiles and runs{checked}.", next_steps=_precision_seen(backend)
                              + _costs_seen(backend) + _caught_seen(outcomes) + unchecked)
        verdict.next_steps = _control_seen(controls, unstable, change, seed) + verdict.next_steps
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
            "compile_error", f"Compilation fails {where}: the failure is in {_stage_noun(stage, failed, error)}.", key, stage,
            error,
            message=error.message, location=error.location, location_kind=error.location_kind,
            next_steps=_steps_after_stages(key, [s for s in error.next_steps if s != hooks], failed.facts)
            + _caught_seen(outcomes),
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
                    "--no-isolate, Inductor's failing code empties the inputs before the next try).", *_caught_seen(outcomes)],
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
        next_steps=steps + _caught_seen(outcomes))


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
    culprit = _stage_noun(stage, failed)
    if stage in (INDUCTOR, USER_BACKEND) and not crash.compiling:  # it crashed running what the backend wrote
        culprit = f"the code {culprit} generated"
    return Verdict(
        "crash", f"The program crashes in native code ({crash.error}{during}) {where}: the crash is in {culprit}.",
        key, stage, message=crash.said, location=crash.user_frame, location_kind="crash", crash=crash,
        next_steps=steps + _caught_seen(outcomes))


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


def steps_after_minify(verdict: Verdict, minify: MinifyResult | None) -> list[str]:
    """The verdict's next steps once --minify has run torch's minifier: less the step that says to minify (the
    minify result follows them, and the commands to do it by hand list the same runs)."""
    if minify is None or (minify.run is None and minify.launcher_run is None):
        return verdict.next_steps
    return [step for step in verdict.next_steps if not step.startswith("Minify")]


# -- commands to reproduce by hand ----------------------------------------------------------


def shell_line(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> str:
    words = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()] + [shlex.quote(w) for w in argv]
    line = " ".join(words)
    return f"(cd {shlex.quote(cwd)} && {line})" if cwd else line


def hand_commands(argv: list[str], outcomes: list[StageOutcome], verdict: Verdict,
                  minify: MinifyResult | None, minify_dir: str | None) -> list[Command]:
    """The commands a person would type to see the same thing without compilescope."""
    commands = []
    for o in outcomes:
        if o.facts is None:
            continue
        env = dict(o.spec.env)
        note = {EAGER.key: ' (or write torch.compile(..., backend="eager"))',
                AOT_EAGER.key: ' (or write torch.compile(..., backend="aot_eager"))'}.get(o.spec.key, "")
        if o.spec.key == ACCURACY_RUN.key:
            env = {k: v for k, v in o.facts.env.items() if k in REPRO_ENV}
        commands.append(Command(f"Run with {o.spec.title}{note}: {o.status}", shell_line(argv, env)))
    if minify is not None:
        env = {k: v for k, v in (minify.run.env if minify.run else {}).items() if k in REPRO_ENV or k == FORCE_BACKEND_ENV}
        if minify.run is not None:
            commands.append(Command("Write the minifier launcher (torch prints where: ./torch_compile_debug/run_*/minifier/)",
                                    shell_line(argv, env)))
        commands.append(Command("Run it: it shrinks the graph while the failure persists and writes ./repro.py",
                                "python torch_compile_debug/run_*/minifier/minifier_launcher.py minify"
                                + ("" if minify.isolated else " --no-isolate")))
        if minify.repro is not None and minify_dir:
            # (no arguments: the script's own run_repro call loads the inputs from the checkpoints beside it, so the
            # line holds however the report is moved; a --save-dir given here would name where it was written)
            commands.append(Command("Run the minimal repro saved here (with the inputs it was minified with)",
                                    shell_line(["python", f"{minify_dir}/repro.py"])))
    return commands


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

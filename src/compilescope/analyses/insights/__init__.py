"""Insights: what to fix first. Runs every insight analysis and ranks the findings.

`insights(trace)` is the entry point; `Insights.to_json()` is the document of
`compilescope summary --json` (schema: docs/summary-schema.md; bump SCHEMA_VERSION
when a key changes meaning or goes away; adding keys keeps the version).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ...lazy_regex import lazy_compile
from ...model.ids import NO_COMPILE_ID, CompileId, compilation_key
from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Trace
from ..aoti import CHECK_ENV, BUILD_EVENT, HEADER_EVENT, Aoti, AotiPackage, aoti
from ..autotuning import Autotuning, autotuning
from ..caches import CACHES, KERNELS_AGAIN_WORTH_SAYING_S, Caches, caches, kernels_compiled_again
from ..freezing import Freezing, freezing
from ..cudagraphs import BACKWARD_PENDING, CudaGraphCompile, CudaGraphs, cudagraphs
from ..crash import AOTI_LOADER, STATIC_LAUNCHER_ADVICE, Crash, Crashes, crashes
from ..compile_time import (PHASE_LABELS, STILL_COMPILING, CompileTimes, as_export_time, compile_times, ends_during,
                           name_aoti_rows, unfinished_compiles)
from ..activation_checkpoint import ActivationCheckpointing, activation_checkpointing
from ..empty_graphs import EmptyGraphs, empty_graphs
from ..repeated_blocks import Regional, RepeatedBlocks, regional
from ..dynamic_shapes import (FLOAT_SYMBOL, DynamicShapes, Specialization, dynamic_shapes, number_text,
                             value_name)
from ..environment import Environment, TorchTestSetting, environment
from ..errors import CompileError, CompileErrors, compile_errors
from ..export import ExportReport, export_report
from ..graph_breaks import DDP_ADVICE, FSDP2_ADVICE, GraphBreak, GraphBreaks, function_label, skipped_cause, skipped_title
from ..graph_breaks.analysis import graph_breaks
from ..recompiles import BACKWARD_REASONS_HINT, CHANGE_LABELS, FrameRecompiles, Recompiles
from ..recompiles.backward_and_resets import BACKWARD_LABEL_HELP
from ..recompiles.analysis import recompiles
from ..recompiles.links import link_specializations, link_times, name_failing_guards
from ..numpy_graphs import NumpyInGraphs, numpy_in_graphs
from ..numerics import RANDOM_ADVICE, Numerics, numerics
from ..op_mutations import OpMutations, UndeclaredMutation
from ..op_mutations.analysis import op_mutations
from ..torch_warnings import KNOWN as KNOWN_WARNINGS
from ..torch_warnings import (AUTOTUNE_CANDIDATE_FAILED, COND_ONE_BRANCH, ITEM_BREAK, NO_TF32, PENDING_BACKWARD,
                             RECOMPILE_LIMIT, WONT_CONVERT, TorchWarnings, torch_warnings)
from ..status import compiled_attempts
from ..unread import Unread, unread
from ..user_kernels import UserKernels, user_kernels
from ...wording import and_list, count, format_seconds, format_us, times
from ..sources import add_eager_lines, graph_break_sites
from ..stack_values import StackValues
from ..userloc import UserLocation, is_python_library_file
from ...model.records import dataclass

if TYPE_CHECKING:
    from ..runtime import Runtime

SCHEMA_VERSION = 2

ERROR, WARNING, INFO = "error", "warning", "info"

# The sections of the summary and of the page's Insights, in the order they show them (crash and errors, then results
# that differ from eager, then what costs graphs, then time): findings of one severity follow it, so "Fix first" reads
# in the order the sections below it explain them. "export" (draft export's issues) has its details on the report's
# export page, not a section here. "testing_only" first: a run with a setting of torch's tests on fails or computes
# wrong on purpose, which explains the rest (its crash, its failed compiles). "numerics" before the costs: numbers
# other than eager's are what a user asks about first, and a recompile for model.eval() (expected) is only a cost.
SECTIONS = ("testing_only", "crash", "errors", "export", "numerics", "recompiles", "graph_breaks", "numpy",
            "compile_time", "autotuning", "user_kernels", "cudagraphs", "raised", "warnings", "caches", "dynamic_shapes",
            "runtime")


@dataclass
class Finding:
    """One thing the report tells first, with its severity and the section that explains it."""

    severity: str  # "error" | "warning" | "info"
    section: str  # one of SECTIONS: the one that explains it
    title: str
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "section": self.section, "title": self.title, "detail": self.detail}


@dataclass
class Insights:
    """The per-topic analyses of the log (errors, graph breaks, recompiles, times, caches, shapes) and the findings from them."""

    source: str
    n_compiles: int
    graph_breaks: GraphBreaks
    recompiles: Recompiles
    compile_time: CompileTimes
    caches: Caches
    errors: CompileErrors
    dynamic_shapes: DynamicShapes
    findings: list[Finding] = field(default_factory=list)  # most urgent first
    unread: Unread = field(default_factory=Unread)  # what of the log was not read (a cut or corrupt log)
    runtime: Runtime | None = None  # None unless profiles were given
    autotuning: Autotuning = field(default_factory=Autotuning)
    cudagraphs: CudaGraphs = field(default_factory=CudaGraphs)
    warnings: TorchWarnings = field(default_factory=TorchWarnings)  # printed to stderr; recorded by run and capture()
    # Compile ids whose compile never finished: an event still open where the log ends, and no metrics (the program
    # was stopped or crashed while compiling, or the log was cut). (compile id, the phase it was in)
    unfinished: list[tuple[str, str | None]] = field(default_factory=list)
    environment: Environment = field(default_factory=Environment)  # the versions and the GPU the run had
    crashes: Crashes = field(default_factory=Crashes)  # the process died in native code or of an uncaught exception
    # "[1/1]" -> "[1/1_1]": where a row named by a compilation (its compile time, its autotuning) links, the attempt
    # that compiled it, not the restarted one (status.compiled_attempts).
    compiled_attempts: dict[str, str] = field(default_factory=dict)
    # Compilations whose graph holds no operator; ran_eagerly where that is every one that compiled.
    empty_graphs: EmptyGraphs = field(default_factory=EmptyGraphs)
    # The user's torch.export calls, where every compile in the log is torch.export's (ExportReport.only): what the
    # log holds is counted in exports, not compile ids. None: not an export-only log.
    export_calls: int | None = None
    # The compilations that captured torch.utils.checkpoint calls, and what their backward graphs recompute
    checkpointing: ActivationCheckpointing = field(default_factory=ActivationCheckpointing)
    # Blocks of one shape a compile's graph holds a copy of each of: regional compilation would compile one
    regional: Regional = field(default_factory=Regional)
    # The lines whose NumPy code Dynamo traced into graphs (np.random's drawn from torch's generator)
    numpy: NumpyInGraphs = field(default_factory=NumpyInGraphs)
    # The AOTInductor packages the log compiled (aoti_compile_and_package), and the inputs each accepts
    aoti: Aoti = field(default_factory=Aoti)
    # The lines whose compiled results differ from eager's: Inductor's random numbers, bf16/fp16 fused in float32
    numerics: Numerics = field(default_factory=Numerics)
    # The compiles torch._inductor.config.freezing folded parameters of into constants, and the weights it packed
    freezing: Freezing = field(default_factory=Freezing)
    # The user's own Triton kernels in the compiled code (not Inductor's): where each is defined and launched, per compile
    user_kernels: UserKernels = field(default_factory=UserKernels)
    # Custom ops called in compiled code whose body writes into an argument mutates_args does not name (their source)
    op_mutations: OpMutations = field(default_factory=OpMutations)

    @property
    def counted(self) -> str:
        """What the log holds, as a report's heading counts it: "1 compile id", "2 torch.export calls"."""
        if self.export_calls is not None:
            return count(self.export_calls, "torch.export call")
        if self.aoti.compiled and not self.n_compiles:  # (AOTInductor compiles outside any compile id)
            return count(len(self.aoti.packages) or len(self.aoti.calls), "AOTInductor compile")
        return count(self.n_compiles, "compile id")

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "source": self.source,
            "compiles": self.n_compiles,
            "export_calls": self.export_calls,
            "environment": self.environment.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "errors": self.errors.to_json(),
            "recompiles": self.recompiles.to_json(),
            "graph_breaks": self.graph_breaks.to_json(),
            "compile_time": self.compile_time.to_json(),
            "caches": self.caches.to_json(),
            "dynamic_shapes": self.dynamic_shapes.to_json(),
            "autotuning": self.autotuning.to_json(),
            "cudagraphs": self.cudagraphs.to_json(),
            "warnings": self.warnings.to_json(),
            "unread": self.unread.to_json(),
            "unfinished": [{"compile_id": cid, "phase": phase} for cid, phase in self.unfinished],
            "crashes": self.crashes.to_json(),
            "empty_graphs": self.empty_graphs.to_json(),
            "activation_checkpointing": self.checkpointing.to_json(),
            "repeated_blocks": self.regional.to_json(),
            "numpy": self.numpy.to_json(),
            "aoti": self.aoti.to_json(),
            "numerics": self.numerics.to_json(),
            "freezing": self.freezing.to_json(),
            "user_kernels": self.user_kernels.to_json(),
            "custom_op_mutations": self.op_mutations.to_json(),
            "runtime": self.runtime.to_json() if self.runtime else None,
        }



# `tensor 'x'` / `tensor 'kwargs['input_ids']'`: the name differs between frames that recompile for one cause.
_TENSOR_NAME = lazy_compile(r"^tensor '.*?' (?=\w+ mismatch)")
# Graph-break causes listed one by one; the rest are summed up in one finding, but never a single one: each cause is a
# fix of its own, and "1 more graph break cause" in its place took as much room and hid what it was (the 4th of
# python_features.py's: `random.random()`, the one that also recompiled).
GRAPH_BREAK_FINDINGS = 3


def _aoti_inputs(package: AotiPackage) -> Finding:
    """What an AOTInductor package accepts, and that it checks it only where asked: an input of another shape runs
    the kernels compiled for the shapes it was given, with no error. A warning where every size is fixed (the export
    had no Dim): the package serves one shape per input. Its detail says first what it holds (AotiContents)."""
    where = f" of {package.call.short}" if package.call else ""
    one_shape = package.one_shape
    parts = []
    if one_shape:
        parts.append("only these sizes: the export was given no Dim (torch.export.export's dynamic_shapes), so every "
                     "size is that of its example inputs; a size that varies, a batch say, needs one")
    if package.checks_need_env:
        parts.append(f"it checks its inputs only when {CHECK_ENV}=1 is set where it runs: without it an input of "
                     "another shape, dtype or device runs unchecked, with no error (its kernels use the compiled "
                     "sizes: wrong results); set it wherever the package is tested")
    said = "; ".join(parts)
    # (what it holds first: the package this is about)
    detail = ". ".join(d for d in (f"It holds {package.contents.text}" if package.contents else "",
                                   said[:1].upper() + said[1:]) if d)
    return Finding(WARNING if one_shape and package.checks_need_env else INFO, "dynamic_shapes",
                   f"the AOTInductor package{where} accepts {package.accepts or 'no input'}", detail)


def _header_precompile(found: Aoti, ct: CompileTimes) -> str:
    """Of the kernel compile phase, the compiler runs that prepare AOTInductor's runtime headers (aoti_precompile_header):
    the part of the C++ compile that is not the package's own wrapper and kernels. "" where the log times none."""
    header = found.header if found else None
    phase = next((p for p in ct.phases if p.phase == "kernel_compile"), None)
    if header is None or not header.compiles or phase is None:
        return ""
    return (f"; of the {phase.label}'s {format_seconds(phase.seconds)}, {format_seconds(header.compile_s)} "
            f"({count(header.compiles, 'compiler run')}) prepared AOTInductor's runtime headers "
            f"({HEADER_EVENT}, {format_seconds(header.seconds)} in all), not the package's own code")


def _package_build(found: Aoti) -> str:
    """Where the package build's time went: the compiler runs torch times in it, and the rest, which it times under no
    step of its own (the AOTInductor package build phase). "" where the log times no build, or nothing untimed."""
    build = found.build if found else None
    if build is None or build.untimed_s < 0.5 * build.seconds:
        return ""  # (the CPU twin's: 0.17 s of 16.3 s outside its compiler runs; nothing to explain)
    return (f"; building the package ({BUILD_EVENT}) took {format_seconds(build.seconds)}: "
            f"{count(build.compiles, 'compiler run')} {format_seconds(build.compile_s)}, the other "
            f"{format_seconds(build.untimed_s)} between them in steps torch times under no event of its own")


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:4])
    return shown + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _first_sentence(text: str) -> str:
    head, dot, rest = text.partition(". ")
    return head + dot.strip() if rest else text


def _recompile_cause(frame: FrameRecompiles) -> tuple:
    """What made a frame recompile, without the frame's own names: frames with the same cause share one finding."""
    return tuple((s.guard.change, _TENSOR_NAME.sub("tensor ", s.guard.guard)) if s.guard else None for s in frame.steps)


def _compiled_alone(frame: FrameRecompiles, breaks: list[GraphBreak]) -> str:
    """Of a frame Dynamo compiled only because a graph break made it skip the frame that called it (a tensor
    subclass's __torch_dispatch__, each op of the skipped forward): that break, the one to fix; "" for any other."""
    chain = {compilation_key(CompileId.parse(cid)) for cid in frame.chain}
    for b in breaks:
        if b.skipped_frame is None or not b.skipped_in:
            continue
        if any(chain <= set(c.compile_ids) for c in b.compiled_callees):
            at = f" at its graph break at {b.location.short}" if b.location else ""
            return (f"compiled on its own because Dynamo skipped {b.skipped_frame.function or 'the function'} "
                    f"({', '.join(b.skipped_in)}){at}: fix that first")
    return ""


def _graph_break_causes(breaks: list[GraphBreak]) -> list[list[GraphBreak]]:
    """Breaks grouped by user line: one line (a logger.warning_once, say) can give several reasons; it is one cause."""
    causes: dict[Any, list[GraphBreak]] = {}
    for b in breaks:
        causes.setdefault(b.location.key if b.location else ("reason", b.reason), []).append(b)
    return sorted(causes.values(), key=lambda group: -sum(b.count for b in group))  # stable: first seen first


def _graph_break_findings(breaks: list[GraphBreak]) -> list[Finding]:
    causes = _graph_break_causes(breaks)
    shown = len(causes) if len(causes) == GRAPH_BREAK_FINDINGS + 1 else GRAPH_BREAK_FINDINGS
    out: list[Finding] = []
    for group in causes[:shown]:
        first = group[0]
        compiles = list(dict.fromkeys(cid for b in group for cid in b.compile_ids))
        where = f" at {first.location.short}" if first.location else ""
        function = f" in {first.location.function}" if first.location and first.location.function else ""
        detail = first.reason
        if len(group) > 1:
            detail += "; the same line also gives: " + "; ".join(_first_sentence(b.reason) for b in group[1:])
        if first.transform is not None and first.torch_location is None:
            detail += f"; inside {first.transform.label}, whose whole call ran eagerly"
        elif first.caused_by:
            detail += f"; in torch.func's own code, because of the graph break at {', '.join(first.caused_by)}"
        if first.callees_text:
            detail += f"; what the call ran was compiled on its own: {first.callees_text}"
        if first.builtin_fix:
            detail += f": {first.builtin_fix}"
        amp = next((b.amp_function for b in group if b.amp_function), None)
        if amp:
            detail += (f"; Dynamo never traces torch.amp ({amp}): keep the scaler's calls out of the compiled "
                       "function, compile the model instead")
        out.append(Finding(WARNING, "graph_breaks", f"graph break{where}{function} ({count(len(compiles), 'compilation')})",
                           detail))
    rest = causes[shown:]
    if rest:
        lines = [g[0].location.short if g[0].location else g[0].reason for g in rest]
        out.append(Finding(WARNING, "graph_breaks", f"{count(len(rest), 'more graph break cause')}", _names(lines)))
    return out


def _numpy_random_findings(numpy: NumpyInGraphs) -> list[Finding]:
    """np.random in a graph: the compiled code draws other numbers than NumPy would, and nothing in the log says so."""
    lines = numpy.random_lines
    if not lines:
        return []
    where = ", ".join(line.location.short for line in lines)
    compiles = list(dict.fromkeys(cid for line in lines for cid in line.compile_ids))
    return [Finding(WARNING, "numpy", f"np.random drawn from torch's generator at {where}",
                    f"{', '.join(compiles)}: np.random.seed does not set these numbers; "
                    "torch._dynamo.config.use_numpy_random_stream = True keeps NumPy's (the call breaks the graph)")]


def _lines(lines: list) -> str:
    """"prog.py:31, 32, 35": the lines of one file after its name once."""
    by_file: dict[str, list[str]] = {}
    for line in lines:
        by_file.setdefault(os.path.basename(line.location.filename), []).append(str(line.location.line))
    return "; ".join(f"{name}:{', '.join(numbers)}" for name, numbers in by_file.items())


def _numerics_findings(num: Numerics) -> list[Finding]:
    """Compiled results that cannot match eager's: Inductor's random numbers, low precision fused in float32."""
    out = []
    if num.random:
        compiles = list(dict.fromkeys(cid for line in num.random for cid in line.compile_ids))
        code = "; ".join(f"{line.location.short}: {line.location.code}" for line in num.random if line.location.code)
        out.append(Finding(WARNING, "numerics", f"random numbers drawn by Inductor, not eager, at {_lines(num.random)}",
                           f"{', '.join(compiles)}{f' ({code})' if code else ''}: {RANDOM_ADVICE}"))
    if num.precision:
        compiles = list(dict.fromkeys(cid for line in num.precision for cid in line.compile_ids))
        dtypes = "/".join(dict.fromkeys(line.dtype or "" for line in num.precision))
        out.append(Finding(INFO, "numerics", f"{dtypes} ops fused in float32 at {_lines(num.precision)}",
                           f"{', '.join(compiles)}: {num.precision_note}"))
    return out


def _op_mutation_finding(op: UndeclaredMutation) -> Finding:
    """A custom op that writes into an argument it declares only read: where it writes, where compiled code calls it
    (a call left out lost its write for sure), what to declare. A triton_op whose write AOTAutograd found itself
    (OpMutations.functionalized) computed eager's results: advice only, told with the user's kernels."""
    writes = "; ".join(f"{w.short}: {w.code}" if w.code else w.short for w in op.writes)
    by_compile: dict[str, list[str]] = {}
    for call in op.calls:
        by_compile.setdefault(call.compile_id, []).append(
            f"{call.location.short}{f' ({call.location.code})' if call.location.code else ''}")
    called = "; ".join(f"{cid} at {', '.join(places)}" for cid, places in by_compile.items())
    return Finding(INFO if op.cloned else WARNING, "user_kernels" if op.cloned else "numerics", op.title,
                   f"{writes}; called in {called}: {op.why}. {'Advice' if op.cloned else 'Fix'}"
                   f"{'' if op.stale else f' ({op.defined_at.short})'}: {op.advice}")


def _merged(found: list[Finding]) -> list[Finding]:
    """Identical rows (the same resume function in two frames, say) once, with how many they were."""
    counts: dict[tuple, int] = {}
    for f in found:
        counts[(f.severity, f.section, f.title, f.detail)] = counts.get((f.severity, f.section, f.title, f.detail), 0) + 1
    out = []
    for key, n in counts.items():
        severity, section, title, detail = key
        out.append(Finding(severity, section, title + (f" (×{n})" if n > 1 else ""), detail))
    return out


@dataclass
class _PythonLibrary:
    """What Dynamo did in Python's own library (torch called it from compiled code): the user cannot change it, so it
    is one finding, apart from the user's. Each keyed by id() of the analyses' item."""

    errors: dict[int, CompileError]
    frames: dict[int, FrameRecompiles]
    breaks: dict[int, GraphBreak]

    @classmethod
    def of(cls, ins: Insights) -> _PythonLibrary:
        def inside(loc: UserLocation | None) -> bool:
            return loc is not None and is_python_library_file(loc.filename)

        return cls({id(e): e for e in ins.errors.errors if inside(e.location)},
                   {id(f): f for f in ins.recompiles.frames if f.filename and is_python_library_file(f.filename)},
                   {id(b): b for b in ins.graph_breaks.breaks if inside(b.location) and not b.in_ddp_forward})

    def findings(self) -> list[Finding]:
        if not (self.errors or self.frames or self.breaks):
            return []
        files = sorted({os.path.basename(loc.filename) for loc in
                        [e.location for e in self.errors.values()] + [b.location for b in self.breaks.values()] if loc}
                       | {os.path.basename(f.filename or "") for f in self.frames.values()})
        what = []
        if self.errors:
            what.append(f"{_names([e.compile_id for e in self.errors.values()])} failed and run eagerly")
        if self.frames:
            what.append(f"{count(sum(f.recompiles for f in self.frames.values()), 'recompile')} "
                        f"({_names([f.name or '?' for f in self.frames.values()])})")
        if self.breaks:
            what.append(count(sum(b.count for b in self.breaks.values()), "graph break"))
        return [Finding(INFO, "errors" if self.errors else "recompiles" if self.frames else "graph_breaks",
                        f"Dynamo compiled code of Python's own library ({', '.join(files)})",
                        f"{'; '.join(what)}. torch called it from compiled code; nothing in your code to change.")]


def _ran_eagerly(ins: Insights) -> list[Finding]:
    """Every graph Dynamo made is empty: the compile ids, restarts and graph breaks below read as compiled code, and
    none is. Where Dynamo stopped (its graph breaks) is why; without a break, it found no tensor operation."""
    found = ins.empty_graphs
    if not found.ran_eagerly:
        return []
    n = len(found.empty) + len(found.no_graph)
    held = "its one compilation holds no operator" if n == 1 else f"none of its {n} compilations holds an operator"
    def first_hit(b: GraphBreak) -> tuple:  # the program's first break first: where its first compilation stopped
        ids = [CompileId.parse(c) for c in b.compile_ids]
        return min((c.sort_key() for c in ids if c is not None), default=(float("inf"),))

    breaks = [f"{b.location.short}{f' in {b.location.function}' if b.location.function else ''} ({b.reason})"
              if b.location else b.reason for b in sorted(ins.graph_breaks.breaks, key=first_hit)]
    where = (f"Dynamo broke the graph before any operation at {_names(breaks)}" if breaks
             else "Dynamo found no tensor operation to put in a graph")
    return [Finding(WARNING, "graph_breaks", "every graph Dynamo made is empty: your model ran eagerly",
                    f"{where}; {held}, so nothing of the program ran compiled")]


def _breaks_in_ddp(breaks: list[GraphBreak]) -> list[Finding]:
    """torch.compile(DistributedDataParallel(model)) breaking in DDP's own code (its logger; contextlib, for the
    _inside_ddp_forward torch skips): one finding with the known way to compile under DDP, not torch's hints, which
    ask to remove a call from DDP's file, nor "nothing in your code to change"."""
    ours = [b for b in breaks if b.in_ddp_forward]
    if not ours:
        return []
    where = _names([f"{b.location.short}{f' in {b.location.function}' if b.location.function else ''}"
                    if b.location else b.reason for b in ours])
    compiles = list(dict.fromkeys(cid for b in ours for cid in b.compile_ids))
    return [Finding(WARNING, "graph_breaks", f"Dynamo breaks the graph in DistributedDataParallel's forward "
                                             f"({count(len(compiles), 'compilation')})",
                    f"at {where}, DDP's code, not yours: {DDP_ADVICE}")]


def _testing_only(setting: TorchTestSetting) -> Finding:
    """A setting of torch's own tests was on: the first thing to know of the run, as what follows (a failed compile,
    a crash, wrong results) may be only what it did on purpose."""
    return Finding(ERROR, "testing_only", f"{setting.what}: {setting.assignment}",
                   (f"{setting.with_it}: {_names(setting.compile_ids)}; " if setting.compile_ids else "")
                   + f"torch's _TESTING_ONLY {setting.kind}s make compiles fail, kernels crash or compute wrong "
                   f"results on purpose, so what this log shows may be only that: {setting.undo}")


def _package_calls(found: Aoti) -> list[str]:
    """The user's lines that compiled the log's AOTInductor packages: "aoti_deploy_cuda.py:40"."""
    return sorted({p.call.short for p in found.packages if p.call is not None})


def _aoti_load_advice(crash: Crash, found: Aoti, compiled: bool) -> str:
    """What a crash in torch's loader of an AOTInductor package means and what to do: the package compiled (where the
    log holds its code and the compile's end), loading it crashed in torch's native code, not the user's model."""
    calls = _package_calls(found)
    where = crash.where
    loader = f"{where.function} at {where.short}" if where is not None and where.function else AOTI_LOADER
    done = (f"{' and '.join(calls)} compiled its package (torch logged its generated code and the compile's end), "
            "then loading it crashed" if calls and compiled else "loading the package crashed")
    return (f"; {done} inside torch's loader ({loader}, which loads the package's compiled library), not in your "
            "model's code. Try loading the .pt2 alone in a fresh process (python -X faulthandler -c \"import torch; "
            "torch._inductor.aoti_load_package('PATH')\"), and a newer torch; a bug report to PyTorch wants the .pt2 "
            "package, this stack, the lines that compiled and loaded it, and the output of "
            "python -m torch.utils.collect_env (torch, CUDA, driver and GPU)")


def _crash_finding(crash: Crash, found: Aoti | None = None, compiled: bool = False) -> Finding:
    said = crash.circumstances
    if crash.exception:
        return Finding(ERROR, "crash", f"the program {'stopped with' if crash.thread is None else 'lost a thread to'} "
                       f"{crash.headline}", ", ".join(said) + ("; " if said else "")
                       + "torch logged nothing of it: the uncaught exception was recorded by compilescope"
                       + (f" in {crash.file} beside the log" if crash.file else " run"))
    # A package built, then torch's loader crashed: the title says so, as "the program crashed in _package.py" read as
    # the user's program failing, and a CI user skimming it missed that the build they gate had succeeded.
    built = _package_calls(found) if crash.loading_aoti_package and found is not None and compiled else []
    title = (f"loading the AOTInductor package built at {' and '.join(built)} crashed in torch's loader: {crash.headline}"
             if built else f"the program crashed: {crash.headline}")
    return Finding(ERROR, "crash", title, ", ".join(said) + ("; " if said else "")
                   + "torch logged nothing of it: the stack is Python's faulthandler's, recorded by compilescope"
                   + (f" in {crash.file} beside the log" if crash.file else " run")
                   + (f"; {STATIC_LAUNCHER_ADVICE}" if crash.in_static_launcher else "")
                   + (_aoti_load_advice(crash, found, compiled) if crash.loading_aoti_package and found is not None else ""))


def _breaks_by_torch(breaks: list[GraphBreak]) -> list[Finding]:
    """torch._dynamo.graph_break() in torch's own files (the optimizer's _use_grad): one finding, not a warning."""
    ours = [b for b in breaks if b.by_torch]
    if not ours:
        return []
    where = _names([f"{b.location.short} ({b.location.function})" if b.location and b.location.function
                    else b.location.short if b.location else "?" for b in ours])
    compiles = list(dict.fromkeys(cid for b in ours for cid in b.compile_ids))
    return [Finding(INFO, "graph_breaks", f"PyTorch breaks the graph on purpose at {where}",
                    f"torch._dynamo.graph_break() in torch's own code ({count(len(compiles), 'compilation')}): "
                    "nothing in your code to change")]


def _disabled_calls(breaks: list[GraphBreak]) -> list[Finding]:
    """Calls of functions the user wrapped with torch.compiler.disable: eager on purpose, so one finding, not warnings."""
    asked = [b for b in breaks if b.disabled]
    if not asked:
        return []
    where = _names([f"{b.disabled_function or '?'} ({b.location.short})" if b.location
                    else b.disabled_function or "?" for b in asked])
    reasons = list(dict.fromkeys(f"{b.disabled_function or '?'}: \"{b.disabled_reason}\"" for b in asked
                                 if b.disabled_reason))
    compiles = list(dict.fromkeys(cid for b in asked for cid in b.compile_ids))
    return [Finding(INFO, "graph_breaks", f"ran eagerly as you asked (torch.compiler.disable): {where}",
                    f"each call splits its graph ({count(len(compiles), 'compilation')} broke there)"
                    + (f"; reason given: {'; '.join(reasons)}" if reasons else "")
                    + "; nothing to fix, unless they should be compiled")]


def _kernels_compiled_again(ct: CompileTimes, found: Caches) -> Finding | None:
    """Compiles the FX graph cache served that still compiled their kernels (caches.kernels_compiled_again)."""
    again = kernels_compiled_again(ct, found)
    seconds = again.seconds
    if seconds < KERNELS_AGAIN_WORTH_SAYING_S or not ct.total_s:
        return None
    label = ct.labels.get("kernel_compile", "kernel compile")
    ids = _names(again.compile_ids)
    return Finding(WARNING, "caches", f"served from cache, yet {label} took {format_seconds(seconds)} "
                   f"({seconds / ct.total_s:.0%} of compiling)",
                   f"{ids} hit the FX graph cache but compiled their kernels again: a hit gives Inductor's generated "
                   "code, and the compiled kernels come from this run's Inductor cache directory "
                   "(TORCHINDUCTOR_CACHE_DIR), which did not hold them, as after torch.compiler.load_cache_artifacts "
                   "into an empty one; keep that directory from run to run to skip the compile")


def _frozen(found: Freezing, ca: Caches, ct: CompileTimes) -> Finding:
    """What freezing did to the graphs (parameters folded into constants, weights packed for a CPU library), and what
    it costs: the FX graph cache refuses a frozen graph, and the weights are constants of the compiled code. The
    config only says freezing was on; the graphs say what it changed."""
    folded = sum(c.folded for c in found.compiles)
    ids = [c.compile_id for c in found.compiles]
    # (parameters, where the AOT graph names each input that went as one: ParamAOTInput)
    every_parameter = folded and folded == sum(len(c.parameters) for c in found.compiles)
    title = (f"freezing folded {count(folded, 'parameter' if every_parameter else 'graph input')} into constants of "
             if folded else "freezing made the parameters constants of ") + _names(ids)
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


def _specializations(specs: list[Specialization], export: ExportReport,
                     dynamic_compiles: list[str] | None = None) -> Finding | None:
    """Counted once per compilation (a restarted attempt logs its specializations again), each symbol's values once:
    a float a compiled optimizer step specialized at every learning rate is one symbol with many values. A size
    torch.export was given as dynamic and the code fixed is told by _export_dims (a dim the code contradicts): not
    again here. Floats of compiles with dynamic=True's config (dynamic_compiles) are said to be its: it made them
    symbols, which a static compile never does until one changes."""
    told = {(c.symbol, c.value) for c in export.dim_conflicts if c.value is not None}
    specs = [s for s in specs if not (s.compile_id == NO_COMPILE_ID and (s.symbol, s.value) in told)]
    if not specs:
        return None
    distinct = list(dict.fromkeys((s.compile_id.partition("_")[0].rstrip("]"), s.symbol, number_text(s.value))
                                  for s in specs))
    kinds = {s.kind for s in specs}
    kind = kinds.pop() if len(kinds) == 1 else "value"
    values: dict[str, list[str]] = {}
    for _, symbol, value in distinct:
        seen = values.setdefault(symbol, [])
        if value not in seen:
            seen.append(value)
    detail = "; ".join(f"{symbol}={', '.join(vals[:3])}{f' and {len(vals) - 3} more' if len(vals) > 3 else ''}"
                       for symbol, vals in list(values.items())[:3])
    compiles = {cid for cid, _, _ in distinct}
    where = "in torch.export" if export.only else count(len(compiles), 'compilation')
    made = set(dynamic_compiles or ())
    floats = [s for s in specs if s.compile_id in made and FLOAT_SYMBOL.fullmatch(s.symbol)]
    if floats:
        symbols = list(dict.fromkeys(s.symbol for s in floats))
        names = list(dict.fromkeys(n for s in floats for src in s.sources[:1] if (n := value_name(src))))
        detail += (f"; {_names(symbols)} {'is a float' if len(symbols) == 1 else 'are floats'}"
                   + (f" ({', '.join(names)})" if names else "")
                   + " that dynamic=True made dynamic (its compiles' config has assume_static_by_default off), and "
                   "the code needed as a number: torch._dynamo.config.specialize_float = True keeps floats static")
    return Finding(INFO, "dynamic_shapes", f"{count(len(values), 'dynamic ' + kind)} specialized to a constant "
                                           f"({where})", detail)


def _hooks_registered_late(rec: Recompiles) -> list[Finding]:
    """A hook registered after its module's function was compiled, found where a later recompile's guard tree counts
    it and the earlier one's none: torch does not recompile for it, so a call the earlier compile served ran without
    the hook, silently. A warning even where the recompile that found it was expected (an eval() beside it)."""
    out: list[Finding] = []
    for frame, step, change in rec.late_hooks:
        served = step.guard.compile_id if step.guard is not None else None
        out.append(Finding(
            WARNING, "recompiles",
            f"{change.name}: {change.hooks_now} registered after {frame.display_name} was compiled; calls served by "
            f"{served} run without it",
            f"{served} guards {'no' if change.before == '0' else change.before} hooks of {change.name}, "
            f"{step.compile_id} {change.after} ({step.compile_id} compiled for another change): torch does not "
            f"recompile for a hook registered later, so each call {served} served after it was registered ran "
            "without it (how many the log does not say). Register hooks before the first compiled call, or "
            "call torch._dynamo.reset() after registering one. Only a recompile for something else shows such a "
            "hook: one registered with no recompile after it leaves nothing in the log."))
    return out


def _backward_recaptures(rec: Recompiles) -> list[Finding]:
    """Compiled autograd traced and compiled the backward again: why its cache missed, where torch logged it."""
    if not rec.backward_recaptures:
        return []
    again = rec.backward_graphs[1:]
    said = [g for g in again if g.reason]
    if said:
        detail = (f"{said[0].label}: {said[0].reason}" + (f" (and {len(said) - 1} more)" if len(said) > 1 else "")
                  + f" ({BACKWARD_LABEL_HELP})")
    else:
        detail = (f"its cache missed, so the backward was captured and compiled again as {_names([g.label for g in again])} "
                  f"({BACKWARD_LABEL_HELP}); to see why, run with {BACKWARD_REASONS_HINT}")
    return [Finding(WARNING, "recompiles", f"compiled autograd captured {count(len(rec.backward_graphs), 'backward graph')}",
                    detail)]


def _export_issues(export: ExportReport) -> list[Finding]:
    """Draft export's issues: its program holds only under what export assumed. The export page has each one's stacks."""
    if not export.detected or not export.issues:  # (torch.compile logs guard_added too, under TORCH_DTRACE)
        return []
    first = export.issues[0]
    where = f" at {first.where}" if first.where else ""
    more = f" (and {count(len(export.issues) - 1, 'more issue')})" if len(export.issues) > 1 else ""
    # Under TORCH_DTRACE torch.export.export logs these too, and raises on them: not draft export's report then.
    exporter = "torch.export" if any(i.exporter == "export" for i in export.issues) else "draft export"
    return [Finding(ERROR, "export", f"{exporter} found {count(len(export.issues), 'issue')}: it could not soundly "
                    "produce a graph", f"{first.failure_type}{where}: {first.headline}{more}")]


def _draft_export_stopped(export: ExportReport) -> list[Finding]:
    """A log draft_export's own trace handler wrote: torch 2.13's draft_export removes the process's trace handler
    and never puts it back, so what the program did after it (another compile, another export) is in no log."""
    if not export.draft_log:
        return []
    return [Finding(WARNING, "export", "the trace likely stops at this draft_export: nothing the program did after it "
                    "was logged",
                    "this log holds only what draft_export's own trace handler keeps (no torch_version, no "
                    "compile events); while it runs, draft_export removes the process's trace handler, and torch 2.13 "
                    "does not put it back (CaptureStructuredTrace.__exit__), so a later torch.compile or export of "
                    "the same process is in no log: call draft_export last, or in a process of its own")]


def _export_dims(export: ExportReport) -> list[Finding]:
    """Dims a non-strict torch.export was given that the model's code contradicts, one finding per export call: a
    narrowed range fails ("Constraints violated"); a size fixed to one value fails a named Dim or Dim.DYNAMIC."""
    calls: dict[tuple | None, list] = {}
    for conflict in export.dim_conflicts:
        calls.setdefault(conflict.export_call.key if conflict.export_call else None, []).append(conflict)
    out = []
    for conflicts in calls.values():
        call = conflicts[0].export_call
        narrowed = any(c.guard is not None for c in conflicts)
        consequence = ("torch.export raises \"Constraints violated\"" if narrowed else
                       "a named Dim or Dim.DYNAMIC fails (\"specialized it to be a constant\"), Dim.AUTO does not")
        out.append(Finding(ERROR if narrowed else WARNING, "dynamic_shapes",
                           f"torch.export{f' at {call.short}' if call else ''}: the model's code contradicts "
                           f"{count(len(conflicts), 'dynamic dim')} it was given",
                           "; ".join(c.text for c in conflicts) + f" ({consequence})"))
    return out


def findings(ins: Insights, export: ExportReport | None = None) -> list[Finding]:
    """Ranked: compiles that failed or stopped compiling first, then what costs graphs, then time.

    One finding per cause: frames that recompile for the same change, compiles that fail with the
    same error at the same line, and graph-break reasons from one user line are grouped.
    """
    library = _PythonLibrary.of(ins)
    out: list[Finding] = [_testing_only(t) for t in ins.environment.testing_only]
    # (every compile the log began ended: an AOTInductor package that crashed in loading was built)
    compiled = ins.compile_time is not None and ins.compile_time.all_ended
    # the program died: before all but a test switch
    out.extend(_crash_finding(c, ins.aoti, compiled) for c in ins.crashes.crashes)
    exported = export or ExportReport()
    out.extend(_export_issues(exported))
    out.extend(_export_dims(exported))
    out.extend(_draft_export_stopped(exported))
    for frame in ins.recompiles.frames:
        if frame.hit_limit and id(frame) not in library.frames:
            last = frame.steps[-1] if frame.steps else None
            guard = last.guard if last else None
            # (late in a run is when a service meets it: after its warm-up, on a request unlike the others)
            when = f"; hit {last.when_text.split(';')[0]}" if last and last.when_text else ""
            out.append(Finding(ERROR, "recompiles", f"{frame.name or 'a function'} hit the recompile limit and runs uncompiled",
                               f"{' → '.join(frame.chain)}; failing guard: {guard.shown if guard else '?'}{when}"))
    errors: dict[tuple, list] = {}
    for err in ins.errors.errors:
        if err.stage == "recompile_limit" or id(err) in library.errors:
            continue  # reported above, with its guard (or below, with Python's library)
        errors.setdefault((err.stage, err.exception, err.message, err.location.key if err.location else None), []).append(err)
    for group in errors.values():
        err = group[0]
        # A location torch logged is where it failed; without one, the compiled frame is only where the function
        # starts (its def line), so it is named as that and not as the place of the failure.
        where = ("" if err.location is None else f" at {err.location.short}" if err.location_kind != "compiled frame"
                 else f" while compiling {err.location.function or 'a frame'} (defined at {err.location.short}; no "
                      "failure location logged)")
        ids = err.compile_id if len(group) == 1 else _names([e.compile_id for e in group])
        if err.skipped_frame is not None:  # no exception: the function ran, all of it uncompiled
            told = (f"in FSDP2's hooks, which torch never compiles: {FSDP2_ADVICE}" if err.in_fsdp_hook
                    else err.message)
            before = err.skipped_before
            # A recompile's: only calls from it on run the frame eagerly, and lose what earlier ones ran compiled. Where
            # that held no op (the lines after a break each broke again), nothing compiled is lost: not an error.
            out.append(Finding(ERROR if before is None or before.ops else WARNING, "errors",
                               f"{ids}: {skipped_title(err.skipped_frame, before=before)}",
                               f"{before.ran + '; ' if before is not None else ''}"
                               f"{skipped_cause(err.in_loop, err.in_with)}{where}: {told}"))
            continue
        out.append(Finding(ERROR, "errors", f"{ids} failed in {err.stage_label}{where}", f"{err.exception}: {err.message}"))
    if ins.unfinished:
        named = [ins.aoti.said(c) for c, _ in ins.unfinished]  # (an AOTInductor build: its package's name)
        ids = named[0] if len(named) == 1 else _names(named)
        during = ends_during(ins.unfinished, ins.compile_time.labels, ins.aoti)
        out.append(Finding(ERROR, "compile_time", f"{ids} never finished compiling",
                           f"the log ends {during}: the program was stopped, crashed or was killed while compiling, "
                           "or the log was cut"))
    out.extend(_ran_eagerly(ins))
    out.extend(_breaks_in_ddp(ins.graph_breaks.breaks))
    # A break after which Dynamo skipped its frame is the errors finding above, which names the break's line: said
    # once, as the consequence the user feels (the Graph breaks section keeps the break itself).
    skipped_ids = {e.compile_id for e in ins.errors.errors if e.skipped_frame is not None}
    out.extend(_graph_break_findings([b for b in ins.graph_breaks.breaks
                                      if id(b) not in library.breaks and not b.by_torch and not b.in_ddp_forward
                                      and not (b.skipped_frame is not None and set(b.compile_ids) <= skipped_ids)
                                      and not b.disabled]))
    out.extend(_numpy_random_findings(ins.numpy))
    out.extend(_aoti_inputs(package) for package in ins.aoti.packages)
    out.extend(_op_mutation_finding(op) for op in (*ins.op_mutations.ops, *ins.op_mutations.functionalized))
    out.extend(_numerics_findings(ins.numerics))
    ct = ins.compile_time
    causes: dict[tuple, list[FrameRecompiles]] = {}
    for frame in ins.recompiles.frames:
        if not frame.hit_limit and id(frame) not in library.frames:
            causes.setdefault(_recompile_cause(frame), []).append(frame)
    for group in causes.values():
        frame = group[0]
        changes = ", ".join(CHANGE_LABELS[c] for c in frame.changes)
        if len(group) == 1:
            called = f" (called at {frame.called_at})" if frame.called_from else ""
            caches = f"; a size of transformers' KV cache ({', '.join(frame.kv_caches)}) among them" if frame.kv_caches else ""
            how_often = times(frame.recompiles)
            cost = _recompile_cost(ct, [frame])
            alone = _compiled_alone(frame, ins.graph_breaks.breaks)
            if alone:
                cost = f"{alone}; {cost}" if cost else alone
            if frame.settled:  # each recompile made what changed dynamic: a cost, not a fault
                failed = [s.guard.shown for s in frame.steps if s.guard]
                # A size marked dynamic that recompiled all the same: the mark met torch's 0/1 specialization.
                marked = [f"{s.dynamic_of} was marked dynamic at size {s.guard.marked_size}, which torch keeps static "
                          "(its 0/1 specialization)" for s in frame.steps if s.guard and s.guard.marked_size]
                out.append(Finding(INFO, "recompiles", f"{frame.display_name}{called} recompiled {how_often}, then ran "
                                   f"with {and_list(frame.made_dynamic)} dynamic",
                                   "; ".join(filter(None, (*marked, f"failed guard{'s' if len(failed) > 1 else ''}: "
                                                           f"{'; '.join(failed)}" if failed else "", cost)))))
                continue
            # Every recompile expected (one compile per setting: eval(), an input's requires_grad): a cost, not a fault.
            expected = frame.steps and all(s.expected is not None for s in frame.steps)
            out.append(Finding(INFO if expected else WARNING, "recompiles",
                               f"{frame.display_name}{called} recompiled {how_often}{', as expected' if expected else ''}",
                               "; ".join(filter(None, (f"changed: {changes}{caches}" if changes else "", cost)))))
            continue
        guards = "; ".join(dict.fromkeys(_TENSOR_NAME.sub("tensor ", s.guard.shown) for s in frame.steps if s.guard))
        names = [f.display_name for f in group]
        if len(set(names)) < len(names):  # two `forward`s: say which
            names = [f"{f.display_name} ({os.path.basename(f.filename or '?')}:{f.first_line})" for f in group]
        cost = _recompile_cost(ct, group)
        out.append(Finding(WARNING, "recompiles",
                           f"{len(group)} functions recompiled for one cause ({changes or 'no reason logged'})",
                           f"{_names(names)}{': ' + guards if guards else ''}{'; ' + cost if cost else ''}"))
    out.extend(_hooks_registered_late(ins.recompiles))
    out.extend(_backward_recaptures(ins.recompiles))
    out.extend(_compiled_afresh(ins.recompiles, ct, ins.caches))
    out.extend(library.findings())
    out.extend(_breaks_by_torch(ins.graph_breaks.breaks))
    out.extend(_disabled_calls([b for b in ins.graph_breaks.breaks if id(b) not in library.breaks]))
    out.extend(_cudagraph_skips(ins.cudagraphs))  # with the warnings, before the time
    out.extend(_cudagraphs_never_recorded(ins.cudagraphs, ins.warnings))
    out.extend(_cudagraphs_run_once(ins.cudagraphs))
    said = {name for name, found in ((PENDING_BACKWARD, ins.cudagraphs.never_recorded),
                                     (AUTOTUNE_CANDIDATE_FAILED, ins.autotuning.failed),
                                     (WONT_CONVERT, ins.errors.errors), (ITEM_BREAK, ins.graph_breaks)) if found}
    out.extend(_torch_warnings(ins.warnings, said_above=said, runtime=ins.runtime))
    compared = ins.runtime.comparison if ins.runtime else None
    asked = None  # the finding a user asked for by giving both profiles: first of its severity, whatever its section
    if compared is not None:
        from ..runtime.findings import comparison_finding  # here: only a log given with a profile pays for the runtime analysis

        finding = comparison_finding(compared)
        if finding is not None:
            asked = Finding(INFO, "runtime", *finding)
            out.append(asked)
    if ct and ct.phases:
        top = ct.phases[0]
        slowest = ct.slowest
        recompiled = [f for f in ins.recompiles.frames if id(f) not in library.frames]
        cost = _recompile_cost(ct, recompiled, short=True)
        # (an export-only log's compile time is strict export's Dynamo trace: the user ran no torch.compile; unless
        # the exported program was compiled with AOTInductor, whose compile_fx_aot is that time)
        doing = ("compiling with AOTInductor" if ins.aoti.compiled else "exporting" if exported.only else "compiling")
        # (a compile the log ends during counts the time it had run: the total is what compiling took so far)
        so_far = " so far" if any(c.unfinished for c in ct.compiles) else ""
        out.append(Finding(INFO, "compile_time", f"{doing} took {format_seconds(ct.total_s)}{so_far}",
                           f"{top.label}: {top.share:.0%}" + (
                               f"; slowest {slowest.compile_id} ({format_seconds(slowest.total_s)}"
                               f"{_so_far(ct, [slowest.compile_id])})" if slowest else "")
                           + (f"; {cost}" if cost else "") + _header_precompile(ins.aoti, ct)
                           + _package_build(ins.aoti)))
    out.extend(_repeated_blocks(group, ct) for group in ins.regional.by_blocks())
    out.extend(_cudagraph_recordings(ins.cudagraphs))
    at = ins.autotuning
    if at.searches or at.total_s >= AUTOTUNING_WORTH_SAYING_S:
        out.append(Finding(INFO, "autotuning", f"autotuning took {format_seconds(at.total_s)}", _autotuning_detail(at)))
    if (again := _kernels_compiled_again(ct, ins.caches)) is not None:
        out.append(again)
    if ins.freezing:
        out.append(_frozen(ins.freezing, ins.caches, ct))
    if ins.caches.graphs_missing:
        out.append(Finding(INFO, "caches", f"served from cache: {', '.join(ins.caches.served_labels)}",
                           f"{ins.caches.what_is_missing}; run again with an empty cache to see them "
                           "(compilescope run --fresh-cache, or TORCHINDUCTOR_CACHE_DIR=$(mktemp -d))"))
    if ins.dynamic_shapes.specializations and (specialized := _specializations(
            ins.dynamic_shapes.specializations, exported, ins.dynamic_shapes.dynamic_compiles)) is not None:
        out.append(specialized)
    if ins.runtime:
        from ..runtime.findings import runtime_finding  # here: only a log given with a profile pays for the runtime analysis

        for profile in ins.runtime.profiles:
            if compared is not None and profile.source == compared.eager and not profile.compiled:
                continue  # the eager side: the comparison above says what it holds
            out.append(Finding(INFO, "runtime", *runtime_finding(profile)))
    # Most urgent first: by severity (a torch.cond note, say, is info: it goes after every warning, though torch
    # printed it first), then in the sections' order, then in the order above. It ranked within one severity in the
    # order above only, so a warning about graph breaks came before one about recompiles the summary shows first.
    # Eager against compiled, where both were profiled, is the answer the user asked for: ahead of the compile time.
    return sorted(_merged(out), key=lambda f: (_URGENCY[f.severity], asked is None or f.title != asked.title,
                                               SECTIONS.index(f.section)))


_URGENCY = {ERROR: 0, WARNING: 1, INFO: 2}


def _recompile_cost(ct: CompileTimes, frames: list[FrameRecompiles], short: bool = False) -> str:
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
    return f"{whose} took {format_seconds(seconds)}{_so_far(ct, steps)} of the {format_seconds(ct.total_s)} compiling ({share})"


def _so_far(ct: CompileTimes, compile_ids: list[str]) -> str:
    """" so far ([1/1] still compiling when the log ended)": what a time of these compiles that says "took" leaves
    out, where the log ends during one of them ("" where every one finished)."""
    wanted = {compilation_key(cid) for cid in compile_ids}
    open_ids = [c.compile_id for c in ct.compiles if c.unfinished and c.compile_id in wanted]
    return f" so far ({_names(open_ids)} {STILL_COMPILING})" if open_ids else ""


def _repeated_blocks(group: list[RepeatedBlocks], ct: CompileTimes) -> Finding:
    """A model of identical blocks compiled whole: its graph holds a copy of the block's code per block, which each
    stage of the compile traces and lowers again. Compiling the block (regional compilation) compiles that code once: the other
    blocks pass its guards (their parameters are inputs of its graph) and reuse it."""
    first = group[0]
    ids = [r.compile_id for r in group]
    seconds = ct.seconds_of(ids)
    cls = first.class_name or "the block"
    took = f": {_names(ids)} took {format_seconds(seconds)}" if seconds > 0 else ""
    container = first.container.removeprefix("self.")
    loop = f"for block in model.{container}" if container != first.container else f"for block in {container}"
    return Finding(INFO, "compile_time", f"{_names(ids)} compiled {cls}'s code {times(len(first.indices))}, once per "
                   f"block of {first.container}",
                   f"{'its graph holds' if len(ids) == 1 else 'each of their graphs holds'} {first.blocks}, each the same code with {first.parameters} parameters or buffers "
                   f"of the same shapes, which Dynamo, AOTAutograd and Inductor traced and lowered each{took}; compile the block instead of the "
                   f"model (regional compilation): `{loop}: block.compile()` in place of torch.compile(model): "
                   f"{cls}.forward is compiled once and every block reuses it (their parameters are inputs of its graph)")


def _compiled_afresh(rec: Recompiles, ct: CompileTimes, ca: Caches) -> list[Finding]:
    """A function compiled again after torch._dynamo.reset(): no guard failed, the program threw its compiled code
    away. A warning: in a loop, every iteration pays the first compile again. From scratch unless a cache served a
    compile after the reset (reset() keeps what the caches hold): cache_hit_miss.log's fn, whose [3/0] loaded the graph
    its [1/0] had compiled."""
    out = []
    # (a set: a list's membership test per compile again was quadratic in the number of resets)
    served_from_cache = set(ca.reused_in_run).union(ca.graphs_missing)
    for fn in rec.afresh:
        seconds = ct.seconds_of(fn.again)
        cost = (f"; compiling it again took {format_seconds(seconds)}{_so_far(ct, fn.again)} of the {format_seconds(ct.total_s)} compiling"
                if seconds > 0 and ct.total_s else "")
        where = f" ({os.path.basename(fn.filename)}:{fn.first_line})" if fn.filename else ""
        logged = f" (torch logged each as {_names(list(dict.fromkeys(fn.logged_as)))})" if fn.logged_as else ""
        served = [cid for cid in fn.again if cid in served_from_cache]
        how = "as at first"
        if served:
            sources = [s for cid in served for s in ca.reused_in_run.get(cid, [])]
            filled = f" {and_list(list(dict.fromkeys(sources)))} had filled" if len(sources) == len(served) else ""
            how = (f"again, though {and_list(served)} {'was' if len(served) == 1 else 'were'} served from the "
                   f"cache{filled} (reset() throws compiled functions away, not what the caches hold)")
        # (the compiles after a reset come last: where the function was compiled before any reset, its first is not)
        after = len(fn.after_reset)
        which = ("each" if after == len(fn.compile_ids) else "the last" if after == 1 else f"the last {after}")
        out.append(Finding(WARNING, "recompiles", f"{fn.name or 'a function'}{where} compiled "
                           f"{'' if served else 'from scratch '}{times(len(fn.compile_ids))}, {which} after "
                           "torch._dynamo.reset()",
                           f"{_names(fn.compile_ids)}{logged}: reset() drops every compiled function, so the next "
                           f"call compiles it {how}{cost}; call reset() once, outside the loop, or not at all"))
    return out


def _cudagraph_skips(cg: CudaGraphs) -> list[Finding]:
    """A compile run without CUDA graphs is a warning: the speed-up reduce-overhead asked for is lost. One per
    reason and line."""
    out = []
    by_reason: dict[tuple, list[CudaGraphCompile]] = {}
    for c in cg.skipped:
        by_reason.setdefault((c.skip_summary, c.skip_location.short if c.skip_location else None), []).append(c)
    for (reason, where), compiles in by_reason.items():
        which = ", ".join(_compile_named(c.compile_id, c.name) for c in compiles[:3])
        more = f" and {len(compiles) - 3} more" if len(compiles) > 3 else ""
        out.append(Finding(WARNING, "cudagraphs", f"CUDA graphs skipped for {which}{more}",
                           f"{reason}" + (f" at {where}" if where else "")))
    return out


def _cudagraphs_never_recorded(cg: CudaGraphs, printed: TorchWarnings) -> list[Finding]:
    """Set up and never recorded, and the log cannot say why: a skip (reduce-overhead's speed-up lost), or a single
    call (a warm-up)."""
    compiles = cg.never_recorded
    if not compiles:
        return []
    which = ", ".join(_compile_named(c.compile_id, c.name) for c in compiles[:3])
    more = f" and {len(compiles) - 3} more" if len(compiles) > 3 else ""
    shapes = _per_shape(compiles)
    pending = [w for w in printed.warnings if w.name == PENDING_BACKWARD]
    if pending:  # recorded by run or capture(): torch said why, on stderr
        where = f" at {pending[0].location.short}" if pending[0].location else ""
        return [Finding(WARNING, "cudagraphs", f"CUDA graphs never recorded for {which}{more}",
                        f"torch warned{where} that {BACKWARD_PENDING}: {pending[0].advice}{shapes}")]
    # Without compilescope's recorders the log cannot tell a graph skipped at its first call from one called once.
    return [Finding(WARNING, "cudagraphs", f"no CUDA graph was recorded for {which}{more}",
                    "set up at its first call, and torch logged no skip reason: a graph run only once is warmed up, "
                    "never recorded (CUDA graph trees record at the second call), and a skip decided at the first call "
                    "is said on the program's stderr only: \"skipping cudagraphs due to ...\" (a mutated input, say), "
                    "or \"pending, uninvoked backwards\" (call backward, or run under torch.no_grad()). compilescope "
                    f"run records them in the log{shapes}")]


def _per_shape(compiles: list[CudaGraphCompile]) -> str:
    """"; [0/1] was set up twice, once per input shape: ...": what a graph set up for several shapes will cost once
    it records, and what to do about it. A dynamic compile does not help: CUDA graph trees key a graph on the sizes."""
    several = [c for c in compiles if c.set_up_per_shape]
    if not several:
        return ""
    which = "; ".join(f"{c.compile_id} was {c.set_up_per_shape}" for c in several[:3])
    return (f". {which}: CUDA graph trees keep a graph per input size, even of a dynamic compile, so once recorded each "
            "new size costs a recording and its GPU memory; pad the inputs to a few fixed sizes")


def _compile_named(compile_id: str, code_name: str | None) -> str:
    """"[1/0] (f (after its graph break at line 23))": a compile id and its function as the report names it."""
    return f"{compile_id} ({function_label(code_name)})" if code_name else compile_id


def _cudagraphs_run_once(cg: CudaGraphs) -> list[Finding]:
    """Set up, run once and never recorded, the run's recorders rule out a skip: nothing was lost but a warm-up."""
    compiles = cg.ran_once
    if not compiles:
        return []
    which = ", ".join(_compile_named(c.compile_id, c.name) for c in compiles[:3])
    more = f" and {len(compiles) - 3} more" if len(compiles) > 3 else ""
    return [Finding(INFO, "cudagraphs", f"{which}{more} ran once: warmed up, never recorded as a CUDA graph",
                    "CUDA graph trees run a graph's first call as a warm-up and record it at the second; the run "
                    "recorded torch's CUDA graph skips and warnings, none for it, so it was not skipped: it was not "
                    "called again (a prefill, say, runs once per prompt length)")]


def _torch_warnings(printed: TorchWarnings, said_above: set[str], runtime: Runtime | None = None) -> list[Finding]:
    """A known warning is a finding of its own (but the recompile limit, found from the log itself, and what another
    finding says already); the others are counted in one. runtime: the profiles given with the log, which say what
    a warning costs where they can (the matmuls' share of the GPU time, for float32 matmuls without TF32)."""
    out = []
    others = []
    for w in printed.warnings:
        if w.name == RECOMPILE_LIMIT or w.name in said_above or w.failure:
            continue  # (a failure's own report is said with its error)
        if w.name is None:
            others.append(w)
            continue
        where = f"{w.location.short}: " if w.location else ""
        severity = INFO if w.name == COND_ONE_BRANCH else WARNING
        cost = _matmul_cost(runtime) if w.name == NO_TF32 and runtime else ""
        # (an error torch raised and the program caught is said where such errors are, not as a warning printed)
        out.append(Finding(severity, "raised" if w.raised else "warnings", w.name, f"{where}{cost}{w.advice}"))
    if runtime and not any(w.name == NO_TF32 for w in printed.warnings):
        # torch warns on stderr only, which a user may not have kept: the profile shows the float32 GEMMs by itself
        from ..runtime.findings import tf32_unused  # here: only a log given with a profile pays for the runtime analysis

        shown = next((c for p in runtime.profiles if (c := tf32_unused(p))), None)
        if shown:
            advice = next(advice for _, name, advice in KNOWN_WARNINGS if name == NO_TF32)
            out.append(Finding(WARNING, "warnings", NO_TF32, shown + advice))
    if others:
        first = others[0].headline
        out.append(Finding(INFO, "warnings", f"torch printed {count(len(others), 'other warning')}",
                           first if len(first) <= 160 else first[:157] + "..."))
    return out


def _matmul_cost(runtime: Runtime) -> str:
    """"in profile.json the matmuls' kernels took 95% of the GPU time (33 ms, aten::mm); ": what TF32 would speed up,
    from the profile of the compiled run (the first profile where none is), where its matmuls took any time."""
    from ..runtime.findings import matmul_time  # here: only a log given with a profile pays for the runtime analysis

    profile = next((p for p in runtime.profiles if p.compiled), runtime.profiles[0] if runtime.profiles else None)
    if profile is None:
        return ""
    us, share, ops = matmul_time(profile)
    if not us:
        return ""
    return (f"in {profile.source.rsplit('/', 1)[-1]} the matmuls' kernels took {share:.0%} of the GPU time "
            f"({format_us(us)}, {', '.join(ops)}); ")


def _cudagraph_recordings(cg: CudaGraphs) -> list[Finding]:
    """A graph recorded again, for another input shape, is worth knowing: each recording costs time and GPU memory."""
    return [Finding(INFO, "cudagraphs", f"CUDA graph of {_compile_named(c.compile_id, c.name)} recorded "
                    f"{len(c.recordings_ms)} times",
                    "one graph is recorded per distinct input shape, even for a dynamic compile, each costing time "
                    "and GPU memory: pad inputs to a few sizes")
            for c in cg.recorded_again]


# Below this, benchmarking kernels at their first run is not worth a line of "what to fix first" (a few
# hundredths of a second per kernel); a max-autotune search always is.
AUTOTUNING_WORTH_SAYING_S = 1.0


def _autotuning_detail(at: Autotuning) -> str:
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


def insights(trace: Trace, runtime: Runtime | None = None, export: ExportReport | None = None,
             files: SourceFiles = NO_FILES) -> Insights:
    """export: the log's export_report(trace), where the caller has it already (computed here otherwise). files: the
    user's files as ingest read them (user_kernels' and op_mutations' files_wanted, then op_mutations.calling_files.modules_wanted):
    the kernels' def lines and the custom ops' definitions are read there."""
    printed = torch_warnings(trace)  # (the CUDA graphs analysis reads them too)
    stack_values = StackValues(trace)  # (recompiles and dynamic shapes both name ___stack sources)
    ins = Insights(
        source=trace.source,
        n_compiles=trace.n_compile_ids,
        graph_breaks=graph_breaks(trace),
        recompiles=recompiles(trace, stack_values),
        compile_time=compile_times(trace),
        caches=caches(trace),
        errors=compile_errors(trace),
        dynamic_shapes=dynamic_shapes(trace, stack_values),
        autotuning=autotuning(trace),
        cudagraphs=cudagraphs(trace, printed),
        warnings=printed,
        unread=unread(trace.stats),
        runtime=runtime,
        environment=environment(trace),
        crashes=crashes(trace),
        compiled_attempts=compiled_attempts(trace),
        empty_graphs=empty_graphs(trace),
        checkpointing=activation_checkpointing(trace),
        regional=regional(trace),
        numpy=numpy_in_graphs(trace),
        aoti=aoti(trace),
        numerics=numerics(trace),
        freezing=freezing(trace),
        user_kernels=user_kernels(trace, files),
        op_mutations=op_mutations(trace, files),
    )
    add_eager_lines(ins.graph_breaks, graph_break_sites(trace))
    link_specializations(ins.recompiles, ins.dynamic_shapes.specializations)
    link_times(ins.recompiles, ins.compile_time)
    name_failing_guards(ins.errors, ins.recompiles)
    ins.unfinished = unfinished_compiles(trace, ins.compile_time)
    name_aoti_rows(ins.compile_time, ins.aoti)
    pending = next((w for w in ins.warnings.warnings if w.name == PENDING_BACKWARD), None)
    if pending is not None and ins.cudagraphs.never_recorded:  # (cudagraphs gave them its reason)
        if not pending.compile_ids:  # read from stderr, which names no compile: the graphs it kept from recording
            pending.compile_ids = [c.compile_id for c in ins.cudagraphs.never_recorded]
    exported = export if export is not None else export_report(trace)
    ins.findings = findings(ins, exported)
    if exported.only and not ins.aoti.compiled:  # (an AOTInductor compile's time is no export's, finished or not)
        ins.export_calls = len(exported.calls)
        as_export_time(ins.compile_time, trace)
    return ins


__all__ = ["Insights", "Finding", "insights", "SCHEMA_VERSION", "PHASE_LABELS"]

"""Insights: what to fix first. Runs every insight analysis and ranks the findings.

`insights(trace)` (analysis.py) is the entry point; `Insights.to_json()` is the document of
`compilescope summary --json` (schema: docs/summary-schema.md; bump SCHEMA_VERSION
when a key changes meaning or goes away; adding keys keeps the version).

This module holds what the analysis finds, the classes its results are saved as (a saved result names a class by its
module: model/codec.type_name): Insights, the per-topic analyses of one log, and Finding, one thing to fix; the
severities and the sections findings are ranked by (SECTIONS); and what Dynamo did in Python's own library
(_PythonLibrary, built by python_library), with the short list of names every finding uses (shown_names). It imports
none of its modules, which import it:
  analysis.py                     insights(trace), the analysis: every per-topic analysis of the log, linked
                                  together, then ranked into findings
  ranking.py                      findings(): one finding per cause, most urgent first (by severity, then in the
                                  order of SECTIONS); failed compiles, recompiles and compile time are worded there
  graph_breaks_and_recompiles.py  graph breaks grouped by user line, a model that ran eagerly, breaks in DDP's forward
                                  or torch's own code, torch.compiler.disable; what made frames recompile, hooks
                                  registered late, compiled autograd's backward captured again, torch._dynamo.reset()
  compile_time_and_caches.py      what compiling cost: recompiles' share, compiles the log ends during, blocks of one
                                  shape compiled whole (regional compilation), max-autotune, kernels compiled again
                                  after a cache hit, freezing
  cudagraphs.py                   CUDA graphs skipped, never recorded, run once, recorded again
  crash_and_warnings.py           a setting of torch's tests on, a crash (an AOTInductor package's loader's too),
                                  the warnings torch printed
  export_and_aoti.py              draft export's issues, dims torch.export was given that the code contradicts, an
                                  AOTInductor package's inputs and build time, dynamic values specialized to constants
  wrong_results.py                results that differ from eager's: np.random in graphs, Inductor's random numbers,
                                  low precision fused in float32, custom ops writing an argument they do not declare
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ..activation_checkpoint import ActivationCheckpointing
from ..aoti import Aoti
from ..autotuning import Autotuning
from ..caches import Caches
from ..compile_time import CompileTimes
from ..crash import Crashes
from ..cudagraphs import CudaGraphs
from ..dynamic_shapes import DynamicShapes
from ..empty_graphs import EmptyGraphs
from ..environment import Environment
from ..compile_errors import CompileError, CompileErrors
from ..freezing import Freezing
from ..graph_breaks import GraphBreak, GraphBreaks
from ..numerics import Numerics
from ..numpy_graphs import NumpyInGraphs
from ..op_mutations import OpMutations
from ..recompiles import FrameRecompiles, Recompiles
from ..repeated_blocks import Regional
from ..torch_warnings import TorchWarnings
from ..unread import Unread
from ..user_kernels import UserKernels
from ..user_locations import UserLocation, is_python_library_file
from ...wording import count
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

    def finding_url(self, finding: Finding) -> str | None:
        """Where the index links a finding: the section that explains it; draft export's issues are on the export page
        (index.html whenever the log has them). None where that section is not shown: an AOTInductor package's inputs
        (a dynamic_shapes finding, which says them itself) in a log with no dynamic shapes linked a heading no page had."""
        if finding.section == "export":
            return "index.html#issues"
        if finding.section == "dynamic_shapes" and not self.dynamic_shapes:
            return None
        return f"#insights-{finding.section}"

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


def shown_names(names: list[str]) -> str:
    """"[0/1], [0/2], [0/3], [0/4] and 2 more": at most four names, then how many the finding leaves out."""
    shown = ", ".join(names[:4])
    return shown + (f" and {len(names) - 4} more" if len(names) > 4 else "")


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
            what.append(f"{shown_names([e.compile_id for e in self.errors.values()])} failed and run eagerly")
        if self.frames:
            what.append(f"{count(sum(f.recompiles for f in self.frames.values()), 'recompile')} "
                        f"({shown_names([f.name or '?' for f in self.frames.values()])})")
        if self.breaks:
            what.append(count(sum(b.count for b in self.breaks.values()), "graph break"))
        return [Finding(INFO, "errors" if self.errors else "recompiles" if self.frames else "graph_breaks",
                        f"Dynamo compiled code of Python's own library ({', '.join(files)})",
                        f"{'; '.join(what)}. torch called it from compiled code; nothing in your code to change.")]


def python_library(ins: Insights) -> _PythonLibrary:
    """What Dynamo did in Python's own library, of this log's insights (findings() reads it; the class is private)."""
    return _PythonLibrary.of(ins)

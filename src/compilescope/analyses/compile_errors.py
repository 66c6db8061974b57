"""Failed compilations: the stage that failed and what to do next.

The stage comes from the exception torch recorded (`fail_type`, `fail_reason`) and,
when that is not enough, from the torch modules in the `dynamo_error` traceback.
The next steps follow the PyTorch troubleshooting guide: narrow the failure down
with backend="eager" / "aot_eager", then minify with TORCHDYNAMO_REPRO_AFTER.
"""

from __future__ import annotations

import re
from dataclasses import field
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from ..decompile.recorded import WARNING
from ..lazy_regex import lazy_compile
from ..model.trace import Compile, Trace
from .compiled_frames import compile_traceback, compiled_location
from .fx_sites import GRAPH_ARTIFACT, op_call_site
from .graph_breaks import CompiledCallee, RanBefore
from .graph_breaks.wording import fsdp_note, skipped_name, skipped_text
from .graph_breaks.reason_text import ARTIFACT as BREAK_ARTIFACT
from .graph_breaks.reason_text import FSDP2_FILE, IN_LOOP, skipped_frame, skipped_with
from .graph_breaks.reason_text import parse_reason as parse_break_reason
from .graph_breaks.subclasses import dispatch_compiled_alone, untraced_subclass
from .installed_guards import GuardTrees
from .torch_warnings import backward_error, forward_call
from .user_locations import (UserLocation, is_framework_file, is_python_library_file, is_torch_file, last_user_frame,
                             last_user_stack_frame, traceback_frames)
from .user_locations import export_call as find_export_call
from ..model.records import dataclass
from ..wording import count

if TYPE_CHECKING:
    from .graph_breaks.compile_index import CompileIndex

DYNAMO = "dynamo"
AOT = "aot_autograd"
LOWERING = "inductor_lowering"
INDUCTOR = "inductor"
KERNEL_COMPILE = "kernel_compile"
USER_BACKEND = "user_backend"
RECOMPILE_LIMIT = "recompile_limit"

STAGE_LABELS = {
    DYNAMO: "Dynamo (graph capture)",
    RECOMPILE_LIMIT: "Dynamo (recompile limit)",
    AOT: "AOTAutograd",
    LOWERING: "Inductor lowering",
    INDUCTOR: "Inductor",
    KERNEL_COMPILE: "C++/Triton compile",
    USER_BACKEND: "Backend compiler",
}

# The steps that narrow a failure down by rerunning the program with backend="eager" or "aot_eager".
CONFIRM_DYNAMO = "Confirm with backend=\"eager\" (Dynamo only): the same error there means Dynamo is the cause."
RETRY_AOT_EAGER = "Retry with backend=\"aot_eager\": if it fails too, the error is in AOTAutograd tracing."
LOWERING_WORKAROUND = "The error is in Inductor lowering: backend=\"aot_eager\" should run (use it as a workaround)."
INDUCTOR_WORKAROUND = "The error is in Inductor: backend=\"aot_eager\" should run (use it as a workaround)."
# (the failing backend is the user's own, or a third party's: rerunning with Dynamo's "eager", which compiles nothing,
# separates that backend's error from Dynamo's)
CONFIRM_USER_BACKEND = ("The error is in the backend compiler, not in Dynamo: rerun with backend=\"eager\"; if that "
                        "runs, the backend is the cause.")
# The program in a minify step, as a log names it (it does not say what ran); diagnose, which ran it, names it.
YOUR_SCRIPT = "python your_script.py"
# `compilescope diagnose` runs those stages itself: its verdict says what they showed instead.
NARROWING_STEPS = frozenset({CONFIRM_DYNAMO, RETRY_AOT_EAGER, LOWERING_WORKAROUND, INDUCTOR_WORKAROUND, CONFIRM_USER_BACKEND})

REPORT_LOWERING = "Report it to PyTorch with the minified repro."
# A lowering that raised in code not torch's (compile_error_lowering's compilescope_test.boom.default, whose lowering
# the program registered with register_lowering): the traceback's frame that Inductor's lowering called is outside
# torch. The op's namespace tells nothing: torch's own lowerings cover mkldnn, onednn, quantized_decomposed, symm_mem.
CUSTOM_LOWERING_STEP = ("The lowering that failed for {op} is not torch's: {where}, registered with "
                        "torch._inductor.lowering.register_lowering, raised it; fix it there, or register none, and "
                        "Inductor calls the op's own kernel instead. Not a bug to report to PyTorch.")
# LoweringException's text names the node's target: `target: compilescope_test.boom.default`.
_LOWERING_TARGET = lazy_compile(r"\btarget: (?P<op>\w{1,200}\.\w{1,200}\.\w{1,200})")


def custom_lowering(reason: str, traceback: str) -> tuple[str, UserLocation] | None:
    """The op a lowering failed for (from LoweringException's `target:`) and the lowering's own frame, where Inductor
    called a function outside torch that raised (a lowering the program or a library registered); None where the
    lowering that failed is torch's."""
    m = _LOWERING_TARGET.search(reason)
    if m is None:
        return None
    frames = traceback_frames(reason + "\n" + traceback)
    called = next((frame for caller, frame in zip(frames, frames[1:])
                   if is_torch_file(caller.filename) and "_inductor" in caller.filename.replace("\\", "/")
                   and not is_torch_file(frame.filename) and not frame.filename.startswith("<")), None)
    return (m["op"], called) if called is not None else None


NEXT_STEPS = {
    DYNAMO: [
        "Dynamo could not trace this code: the message says which construct; rewrite it or move it out of the "
        "compiled function.",
        CONFIRM_DYNAMO,
        "For the internal stack: TORCHDYNAMO_VERBOSE=1, or TORCH_LOGS=\"+dynamo\".",
    ],
    RECOMPILE_LIMIT: [
        "Find the guard that keeps failing (Recompiles) and make the inputs stable or dynamic.",
        "Raising torch._dynamo.config.recompile_limit only postpones the problem.",
    ],
    AOT: [
        RETRY_AOT_EAGER,
        f"Minify: TORCHDYNAMO_REPRO_AFTER=\"dynamo\" {YOUR_SCRIPT} writes a minimal repro.",
    ],
    LOWERING: [
        LOWERING_WORKAROUND,
        f"Minify: TORCHDYNAMO_REPRO_AFTER=\"aot\" {YOUR_SCRIPT}, then run the minifier_launcher.py it writes.",
        REPORT_LOWERING,
    ],
    INDUCTOR: [
        INDUCTOR_WORKAROUND,
        f"Minify: TORCHDYNAMO_REPRO_AFTER=\"aot\" {YOUR_SCRIPT}, then run the minifier_launcher.py it writes.",
    ],
    KERNEL_COMPILE: [
        "A generated kernel did not compile: read the compiler errors above and the generated code "
        "(inductor_output_code) at the failing line; a missing header or compiler means a toolchain problem.",
        "Otherwise it is an Inductor codegen bug: backend=\"aot_eager\" works around it.",
        f"Minify: TORCHDYNAMO_REPRO_AFTER=\"aot\" {YOUR_SCRIPT}, then run the minifier_launcher.py it writes.",
    ],
    USER_BACKEND: [
        CONFIRM_USER_BACKEND,
        f"Minify: TORCHDYNAMO_REPRO_AFTER=\"dynamo\" {YOUR_SCRIPT} writes repro.py to "
        "torch._dynamo.config.base_dir.",
    ],
}
# A strict torch.export that Dynamo could not trace: not a compile to move code out of, nor to rerun with a backend.
EXPORT_STRICT_LABEL = "strict torch.export (Dynamo)"
EXPORT_STEPS = [
    "torch.export traced the model with Dynamo (strict=True) and stopped here: the message says what, with torch's "
    "fix (torch._check(...) for a data-dependent value; a dynamic_shapes change for a Dim).",
    "torch.export.draft_export(...) with the same arguments lists every such issue at once, each at its line.",
    "Non-strict export (strict=False, the default) runs forward in Python: it avoids what Dynamo cannot trace, "
    "not data-dependent guards.",
    NEXT_STEPS[DYNAMO][-1],
]
FULLGRAPH_STEP = ("fullgraph=True makes every graph break an error: fix the break (see its hints) or drop "
                  "fullgraph=True to let Dynamo split the graph.")
FALLBACK_NOTE = "torch fell back to eager for this frame (suppress_errors): the program ran, uncompiled."
LIBRARY_STEP = ("This is Python's own library, which torch called from compiled code: Dynamo could not compile the "
                "function, and it runs eagerly. Nothing in your code to change; if it recurs and costs time, report it "
                "to PyTorch with this log.")

# GuardOnDataDependentSymNode, as Dynamo words it (a UserError under torch.compile; strict export's too).
_DATA_DEPENDENT_GUARD = lazy_compile(r"Could not guard on data-dependent expression (?P<expr>.+?) \(unhinted")
_UNBACKED = lazy_compile(r"\bu\d+\b")
_ASSIGNED = lazy_compile(r"^(?P<name>[A-Za-z_]\w*)\s*=[^=]")
# Dynamo's TorchRuntimeError says only "RuntimeError when making fake tensor call"; the error torch's op raised is in
# its explanation: `got RuntimeError("When merging two branches' output in torch.cond, ...")`.
_FAKE_CALL = "when making fake tensor call"
_FAKE_CALL_ERROR = lazy_compile(r"got (?P<type>\w+)\((?P<quote>[\"'])(?P<message>.+?)(?P=quote)\)")
COND_BRANCHES_STEP = ("torch.cond's two branches must return the same structure: as many tensors, each with the same "
                      "number of dimensions, dtype and device, in both branches (the message says which differs). "
                      "Make them agree (reshape, cast or pad one), or compute both and pick with torch.where.")
# A torch.library custom op without the kernels tracing needs, as torch 2.13 words it (torch/_library/custom_ops.py,
# torch/_library/autograd.py): the op is the user's, so what to add is known, not a construct to rewrite.
_NO_FAKE_KERNEL = lazy_compile(r"no fake impl registered for <CustomOpDef\((?P<op>[\w.:]+)\)>")
# torch's hint under every fake-tensor failure (torch/_dynamo/utils.py): that eager may fail the same way. A custom op
# with no fake kernel runs eagerly as it is, so beside that finding the hint misleads.
_EAGER_MAY_FAIL = lazy_compile(r"may result in an error when running in eager")
_NO_AUTOGRAD_FORMULA = lazy_compile(r"Trying to backward through (?P<op>[\w.]+) but no autograd formula was registered")
_BACKEND = lazy_compile(r"backend='(?P<name>[^']*)' raised")
_INNER = lazy_compile(r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Failed|Unsupported))\b:?")
_COMPILER_ERROR = lazy_compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<message>.*)$")
_QUOTED_SOURCE = lazy_compile(r"^\s*(?P<line>\d+) \| (?P<code>.*)$")  # g++/clang quote the failing line: `   15 |   code`
_CARET = lazy_compile(r"^\s*\| [\s~^]*\^[\s~^]*$")
OUTPUT_CODE = "inductor_output_code"
# Inductor's generated Python that Python could not parse (compile_tasks.py's "Failed to import <file>" with the
# SyntaxError under it): the output code itself, or the source of a Triton kernel it loads with async_compile.triton.
_FAILED_IMPORT = lazy_compile(r"Failed to import (?P<path>\S+\.py)\s*\n(?P<type>SyntaxError|IndentationError|TabError): "
                              r"(?P<message>[^\n]*) \((?P<file>[^()\n]+), line (?P<line>\d+)\)")
_TRITON_KERNEL_CALL = lazy_compile(r"^\w+ = async_compile\.triton\('(?P<kernel>\w+)', '''$")
SYNTAX_STEP = ("Inductor wrote code that Python cannot parse (the line above, in the output code): a bug in Inductor's "
               "code generation, not in your code; backend=\"aot_eager\" works around it.")
MAX_DIAGNOSTICS = 20
_DYNAMO_TYPES = {"Unsupported", "UserError", "TorchRuntimeError", "InternalTorchDynamoError", "UncapturedHigherOrderOpError",
                 "SkipFrame", "ObservedException", "ArgsMismatchError", "UnspecializeRestartAnalysis"}
_MODULE_STAGES = (
    ("/_inductor/codecache.py", KERNEL_COMPILE), ("/_inductor/cpp_builder.py", KERNEL_COMPILE),
    ("/_inductor/async_compile.py", KERNEL_COMPILE), ("/_inductor/runtime/triton", KERNEL_COMPILE),
    ("/_inductor/lowering.py", LOWERING), ("/_inductor/graph.py", LOWERING), ("/_inductor/ir.py", LOWERING),
    ("/_inductor/", INDUCTOR), ("/_functorch/", AOT),
)


@dataclass
class CompilerDiagnostic:
    """One `error:` line of a C++ compiler, with the source line it quotes and where that line is in the output code;
    or the SyntaxError of generated Python (a Triton kernel's source) that torch could not import (column 0)."""

    file: str  # as the compiler named it (a temporary .cpp; the generated .py torch failed to import)
    line: int  # in that file
    column: int  # 0: not given (a SyntaxError as torch words it names no column)
    message: str  # after "error: "; for Python, the exception and its text ("SyntaxError: invalid syntax")
    source: str | None = None  # the line the compiler quoted; for Python, that line as the output code holds it
    caret: str | None = None  # its `^~~~` marker line
    code_artifact: int | None = None  # number of the inductor_output_code artifact holding that line
    code_line: int | None = None  # its line there
    kernel: str | None = None  # the Triton kernel whose source (a string in the output code) holds the line

    @property
    def text(self) -> str:
        if self.column == 0 and self.code_line is not None:
            # The generated file is a temporary the user never sees: the line is named in the output code they can read.
            within = f" (Triton kernel {self.kernel}, its line {self.line})" if self.kernel else ""
            return f"{self.message} at line {self.code_line} of the output code{within}"
        if self.column == 0:
            return f"{self.file.rsplit('/', 1)[-1]}:{self.line}: {self.message}"
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}:{self.column}: error: {self.message}"

    @property
    def quoted_line(self) -> int:
        """The line number its quoted source is shown with: the output code's for Python, the compiler's for C++."""
        return self.code_line if self.column == 0 and self.code_line is not None else self.line

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column, "message": self.message,
                "source": self.source, "code_artifact": self.code_artifact, "code_line": self.code_line, "kernel": self.kernel}


@dataclass
class CompileError:
    """One compile id's failure: stage, exception, message, user location and what to try next."""

    compile_id: str
    stage: str  # a key of STAGE_LABELS
    exception: str  # fail_type, e.g. "InductorError"
    inner_exception: str | None  # what it wraps, e.g. "CppCompileError", "LoweringException"
    message: str  # the first line of the reason
    detail: str  # the reason, cut to a readable length
    location: UserLocation | None
    location_kind: str | None  # "failure" (where it failed) | "compiled frame" (the frame being compiled)
    backend: str | None = None
    compiler_errors: list[str] = field(default_factory=list)  # `file:line:col: error: ...` lines of a C++ compile
    diagnostics: list[CompilerDiagnostic] = field(default_factory=list)  # the same, parsed and linked to the output code
    fell_back: bool = False  # suppress_errors: the frame ran eagerly
    # Dynamo gave the frame up after a graph break it could not resume from (_SKIPPING): the function it ran eagerly,
    # all of it, with no exception and without fullgraph; in_loop: because the break is inside a for/while loop
    skipped_frame: UserLocation | None = None
    in_loop: bool = False
    in_with: UserLocation | None = None  # or because it is inside this `with` block (graph_breaks.reason_text.skipped_with)
    # The failed compile was a recompile of a frame that ran compiled before: what those calls ran (ran_before); only
    # the calls from this one on run it eagerly
    skipped_before: RanBefore | None = None
    # The graph break that failed it is in FSDP2's hooks (torch names their file as the failing frame): not the
    # user's line to remove.
    in_fsdp_hook: bool = False

    @property
    def skipped_text(self) -> str | None:
        """What Dynamo skipped, as graph_breaks.wording.skipped_text says it; None for any other failure."""
        return skipped_text(self.skipped_frame, self.in_loop, self.in_with, before=self.skipped_before)

    export_call: UserLocation | None = None  # the user's torch.export call, where strict export's trace failed
    next_steps: list[str] = field(default_factory=list)
    # torch's own account of an unsupported construct (a graph break raised under fullgraph=True, or a strict
    # export's): its Explanation, Hints ("Avoid calling the function `Random.choice`") and the graph-break site's page.
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    # Of those hints, the ones the finding's advice contradicts (torch's generic "Your code may result in an error
    # when running in eager" beside a custom op that only lacks a fake kernel): kept as torch's text, not advice.
    hints_set_aside: list[str] = field(default_factory=list)
    docs_url: str | None = None
    # What torch printed of this failure on stderr only (recorded by compilescope): anomaly mode's report of the
    # backward function that raised, with the forward call that made it.
    torch_printed: list[str] = field(default_factory=list)
    # The number of the compilation_metrics artifact that told it: failures outside a compile id (several strict
    # torch.export calls) share compile_id NO_COMPILE_ID; this tells them apart.
    metrics_number: int | None = None

    @property
    def shown_inner(self) -> str | None:
        """The wrapped exception, as every page and the terminal show it beside the outer one ("InductorError
        (SyntaxError)"), unless the message starts by naming it already: "InductorError (RuntimeError): RuntimeError:
        Failed to import …" said it twice."""
        if self.inner_exception is None or self.message.startswith(f"{self.inner_exception}:"):
            return None
        return self.inner_exception

    @property
    def advice_hints(self) -> list[str]:
        """torch's hints that the finding's advice does not contradict: what the report shows as hints."""
        return [h for h in self.hints if h not in self.hints_set_aside]

    @property
    def stage_label(self) -> str:
        """STAGE_LABELS', the kernel compile named by its compiler where the error says which ("C++ compile" for a
        CppCompileError or g++'s error lines; "Triton compile" for Triton's): as the compile-time phase is named."""
        if self.stage == KERNEL_COMPILE:
            if any(d.kernel for d in self.diagnostics):
                return "Triton compile"
            if self.inner_exception == "CppCompileError" or self.compiler_errors:
                return "C++ compile"
            if re.search(r"Triton", self.inner_exception or ""):
                return "Triton compile"
        if self.stage == DYNAMO and self.export_call is not None:
            return EXPORT_STRICT_LABEL
        return STAGE_LABELS[self.stage]

    def to_json(self) -> dict[str, Any]:
        return {
            "compile_id": self.compile_id, "stage": self.stage, "stage_label": self.stage_label,
            "exception": self.exception, "inner_exception": self.inner_exception, "message": self.message,
            "detail": self.detail, "location": self.location.to_json() if self.location else None,
            "location_kind": self.location_kind, "backend": self.backend, "compiler_errors": self.compiler_errors,
            "diagnostics": [d.to_json() for d in self.diagnostics], "fell_back": self.fell_back,
            "export_call": self.export_call.to_json() if self.export_call else None, "next_steps": self.next_steps,
            "skipped_frame": self.skipped_frame.to_json() if self.skipped_frame else None, "in_loop": self.in_loop,
            "in_with": self.in_with.to_json() if self.in_with else None, "in_fsdp_hook": self.in_fsdp_hook,
            "skipped_before": self.skipped_before.to_json() if self.skipped_before else None,
            "skipped_text": self.skipped_text,
            "explanation": self.explanation, "hints": self.hints, "hints_set_aside": self.hints_set_aside,
            "advice_hints": self.advice_hints, "docs_url": self.docs_url, "torch_printed": self.torch_printed,
        }


@dataclass
class CompileErrors:
    """The compile failures of the log."""

    errors: list[CompileError] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def to_json(self) -> dict[str, Any]:
        return {"count": len(self.errors), "errors": [e.to_json() for e in self.errors]}


DETAIL_CHARS = 2000


def metrics_number(entry: Compile) -> int | None:
    """The number of the compilation_metrics artifact its metrics are (the last: outside a compile id, the earlier
    ones are Compile.earlier_metrics); None: it logged none."""
    return next((a.number for a in reversed(entry.artifacts) if a.kind == "compilation_metrics"), None)


def _stage(fail_type: str, reason: str, inner: str | None, backend: str | None, traceback: str) -> str:
    if re.search(r"recompile.?limit|cache_size_limit", reason, re.I):
        return RECOMPILE_LIMIT
    if inner in ("CppCompileError",) or "C++ compile error" in reason or re.search(r"Triton|CompilationError", inner or ""):
        return KERNEL_COMPILE
    if inner == "LoweringException" or "LoweringException" in reason:
        return LOWERING
    if fail_type == "BackendCompilerFailed" and backend and backend not in ("inductor", "aot_eager", "aot_eager_decomp_partition"):
        return USER_BACKEND
    if fail_type == "InductorError" or fail_type == "BackendCompilerFailed":
        frames = re.findall(r'File "([^"]+)", line \d+', traceback)
        for filename in reversed(frames):  # the innermost torch module that raised
            for part, stage in _MODULE_STAGES:
                if part in filename:
                    return stage
        return INDUCTOR if fail_type == "InductorError" or backend == "inductor" else AOT
    return DYNAMO


def _message(lines: list[str], fail_type: str) -> str:
    """The first line of the reason; "backend='x' raised:" is joined with the exception it announces."""
    texts = [ln.strip() for ln in lines if ln.strip()]
    if not texts:
        return fail_type
    if texts[0].endswith("raised:") and len(texts) > 1:
        return f"{texts[0]} {texts[1]}"
    return texts[0]


def _fake_call_error(reason: str) -> str | None:
    """The error torch's op raised where Dynamo says only "RuntimeError when making fake tensor call" (a torch.cond
    whose branches disagree); None: not such an error."""
    if _FAKE_CALL not in reason.split("\n", 1)[0]:
        return None
    m = _FAKE_CALL_ERROR.search(reason)
    return " ".join(m["message"].split()) if m else None


def data_dependent_steps(entry: Compile, reason: str, location: UserLocation | None) -> list[str]:
    """What to do about "Could not guard on data-dependent expression u0 > 0": the line that asked, where each unbacked
    symbol of the expression came from (its create_unbacked_symbol's user line), and the torch._check to add, in the
    user's variable where the line made it by assignment (`n = x.sum().item()` makes `torch._check(n > 0)`)."""
    m = _DATA_DEPENDENT_GUARD.search(reason)
    if m is None:
        return []
    expr = m["expr"].strip()
    made: dict[str, UserLocation] = {}
    for sym in entry.symbols:
        name = str(sym.get("symbol"))
        if sym.get("kind") == "create_unbacked_symbol" and name not in made:
            where = last_user_stack_frame(sym.get("user_stack"))
            if where is not None:
                made[name] = where
    origins, check = [], expr
    for name in dict.fromkeys(_UNBACKED.findall(expr)):
        where = made.get(name)
        if where is None:
            continue
        origins.append(f"{name} is the value read from a tensor at {where.short}" + (f" (`{where.code}`)" if where.code else ""))
        assigned = _ASSIGNED.match(where.code or "")
        if assigned:
            check = re.sub(rf"\b{name}\b", assigned["name"], check)
    at = f" at {location.short}" + (f" (`{location.code}`)" if location and location.code else "") if location else ""
    said = f"; {'; '.join(origins)}" if origins else ""
    return [
        f"torch could not tell while compiling whether {expr} holds{at}: the value is data-dependent (unbacked: "
        f"known only when the code runs){said}.",
        f"If it holds for every input, say so before that line: torch._check({check}); torch compiles as if it holds "
        "and checks it at run time.",
        "If it can go either way, one graph cannot hold both paths: write the branch as torch.cond, compute without "
        "it (a loop count as arithmetic), or drop fullgraph=True, and Dynamo breaks the graph there and runs that "
        "line in Python.",
    ]


def _op_label(op: str) -> tuple[str, str]:
    """("mylib::gelu_np", "gelu_np") of torch's "mylib.gelu_np.default" or "mylib::gelu_np": the op as defined, and
    the name torch.library.custom_op gives its Python object."""
    namespace, _, rest = op.replace("::", ".").partition(".")
    name = rest.split(".", 1)[0] or namespace
    return f"{namespace}::{name}", name


def custom_op_steps(trace: Trace, entry: Compile, reason: str,
                    location: UserLocation | None) -> tuple[list[str], UserLocation | None]:
    """What to add to a custom op that lacks a kernel tracing needs (a fake kernel, an autograd formula), and the
    user's line that calls it where the log says (the Dynamo graph's node of the op); ([], None): no such failure."""
    m = _NO_FAKE_KERNEL.search(reason)
    if m is not None:
        op, name = _op_label(m["op"])
        at = f" (called at {location.short})" if location is not None else ""
        return [
            f"{op} is your custom op{at} and has no fake kernel: torch.compile runs every op on fake tensors (shapes "
            "and dtypes, no data) while it traces, so it needs a function that makes the op's outputs without "
            f"computing them. Add one after the op's definition: @{name}.register_fake on a function of the same "
            "arguments that returns torch.empty_like(x) (or torch.empty(...) of the output's shape and dtype).",
            "Eagerly the op runs as it is: only tracing needs the fake kernel. torch.library.opcheck(op, args) "
            "checks the fake kernel against the real one once you have added it.",
        ], None
    m = _NO_AUTOGRAD_FORMULA.search(reason)
    if m is None:
        return [], None
    op, name = _op_label(m["op"])
    graph = next((a for a in entry.artifacts if a.name == GRAPH_ARTIFACT and a.payload is not None), None)
    site = op_call_site(trace.payload_text(graph.payload), m["op"]) if graph is not None else None
    call = UserLocation(site.path, site.line, site.function, site.code) if site is not None else None
    at = f" at {call.short}" + (f" (`{call.code}`)" if call.code else "") if call is not None else ""
    return [
        f"{op} is your custom op, called{at} with an input that requires grad, and has no autograd formula: "
        "AOTAutograd traces the backward of the graph while it compiles, so the compile fails before anything calls "
        f"backward. Add one: {name}.register_autograd(backward, setup_context=setup_context), where setup_context "
        "saves what backward needs (ctx.save_for_backward) and backward returns a gradient for each input.",
        "If you only need the forward (inference), call the compiled function under torch.no_grad() or "
        "torch.inference_mode(): then nothing is traced for backward, and no formula is needed.",
    ], call


def compiler_diagnostics(lines: list[str]) -> list[CompilerDiagnostic]:
    """The compiler's `file:line:col: error:` lines (not its warnings), each with the source line it quotes."""
    found: list[CompilerDiagnostic] = []
    for i, line in enumerate(lines):
        m = _COMPILER_ERROR.match(line.strip())
        if m is None:
            continue
        diag = CompilerDiagnostic(m["file"], int(m["line"]), int(m["col"]), m["message"].strip())
        quoted = _QUOTED_SOURCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if quoted is not None and int(quoted["line"]) == diag.line:
            diag.source = quoted["code"].rstrip()
            if i + 2 < len(lines) and _CARET.match(lines[i + 2]):
                diag.caret = lines[i + 2].split("|", 1)[1].rstrip()
        found.append(diag)
        if len(found) == MAX_DIAGNOSTICS:
            break
    return found


def _link_to_output_code(trace: Trace, entry: Compile, diagnostics: list[CompilerDiagnostic]) -> None:
    """Find each quoted source line in the compile's output code (the C++ sits in a string there, shifted by the
    lines torch adds before it), the occurrence nearest to the compiler's line number."""
    wanted = [d for d in diagnostics if d.source and d.source.strip()]
    if not wanted:
        return
    for artifact in entry.artifacts:
        if artifact.kind != OUTPUT_CODE:
            continue
        code = trace.payload_text(artifact.payload).splitlines()
        for diag in wanted:
            if diag.code_artifact is not None or diag.source is None:
                continue
            target = diag.source.strip()
            hits = [n for n, text in enumerate(code, 1) if text.strip() == target]
            if hits:
                diag.code_artifact = artifact.number
                diag.code_line = min(hits, key=lambda n: abs(n - diag.line))


TESTING_HOOKS_LEAD = "This compile's Inductor config sets "


def testing_hooks_step(hooks: list[str]) -> str:
    """The next step that names them (testing_hooks), first: what follows may be only what they do on purpose."""
    return (f"{TESTING_HOOKS_LEAD}{', '.join(hooks)}: torch's {'hook' if len(hooks) == 1 else 'hooks'} "
            f"for its own tests, which breaks generated code on purpose. Unset {'it' if len(hooks) == 1 else 'them'}.")


def testing_hooks(metrics: Mapping[str, Any]) -> list[str]:
    """The `*_TESTING_ONLY` options set in the compile's Inductor config (inject_relu_bug_TESTING_ONLY...), each as
    `name = value`; none where none is set or the config was not logged."""
    try:
        config = orjson.loads(str(metrics.get("inductor_config") or "{}"))
    except orjson.JSONDecodeError:
        return []
    return [f"{k} = {v!r}" for k, v in config.items() if k.endswith("_TESTING_ONLY") and v] if isinstance(config, dict) else []


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def generated_syntax_error(trace: Trace, entry: Compile, reason: str, traceback: str) -> CompilerDiagnostic | None:
    """The SyntaxError of Inductor's generated code that torch failed to import, with the line as the compile's output
    code holds it: the output code's own line, or one in a Triton kernel's source, which starts after the ''' of its
    async_compile.triton call (the traceback's frame in the output code). None: not such a failure."""
    m = _FAILED_IMPORT.search(reason)
    if m is None:
        return None
    diag = CompilerDiagnostic(m["path"], int(m["line"]), 0, f"{m['type']}: {m['message']}")
    frames = traceback_frames(traceback)
    for artifact in entry.artifacts:
        if artifact.kind != OUTPUT_CODE or artifact.payload is None:
            continue
        stem = artifact.name[len(OUTPUT_CODE) + 1:]
        code = trace.payload_text(artifact.payload).splitlines()
        at = None
        if stem == _stem(m["path"]):
            at = diag.line
        else:
            for frame in reversed(frames):  # (the innermost call in the output code)
                call = (_TRITON_KERNEL_CALL.match(code[frame.line - 1])
                        if _stem(frame.filename) == stem and 0 < frame.line <= len(code) else None)
                if call is not None:
                    # the kernel's line 1 is the rest of the call's line, after its '''
                    diag.kernel, at = call["kernel"], frame.line + diag.line - 1
                    break
        if at is not None and 0 < at <= len(code):
            diag.source, diag.code_artifact, diag.code_line = code[at - 1].rstrip(), artifact.number, at
            break
    return diag


def compile_errors(trace: Trace, guard_trees: GuardTrees | None = None) -> CompileErrors:
    """guard_trees: the log's guard trees, where the caller reads them too (made here otherwise): a failure naming an
    untraced object asks which classes they type as tensor classes."""
    guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)
    result = CompileErrors()
    index: CompileIndex | None = None  # (made where a failure made Dynamo skip a frame)
    for entry in trace.metrics_compiles():
        metrics = entry.metrics or {}
        fail_type = metrics.get("fail_type")
        if not fail_type:
            continue
        fail_type = str(fail_type)
        reason = str(metrics.get("fail_reason") or "")
        traceback = compile_traceback(trace, entry)
        backend_match = _BACKEND.search(reason) or _BACKEND.search(traceback)
        backend = backend_match["name"] if backend_match else None
        body = reason.split("raised:", 1)[1].lstrip() if backend_match and "raised:" in reason else reason
        inner_match = _INNER.match(body.strip())
        inner = inner_match["name"] if inner_match and inner_match["name"] != fail_type else None
        stage = _stage(fail_type, reason, inner, backend, traceback)

        location, kind = None, None
        if metrics.get("fail_user_frame_filename") and isinstance(metrics.get("fail_user_frame_lineno"), int):
            location = UserLocation(str(metrics["fail_user_frame_filename"]), metrics["fail_user_frame_lineno"])
            found = last_user_frame(reason + "\n" + traceback)
            if found is not None and found.key == location.key:
                location = found
            elif is_torch_file(location.filename):
                # The frame Dynamo compiled is torch's own (the wrapper of a compiled nonstrict_trace function), so
                # torch names its line; the user's code that failed inside it is in the traceback only.
                called = [f for f in traceback_frames(reason + "\n" + traceback) if not is_framework_file(f.filename)]
                location = called[-1] if called else location
            kind = "failure"
        if location is None:
            location = last_user_frame(reason) or last_user_frame(traceback)
            kind = "failure" if location else None
        if location is None:
            # A compile that failed before dynamo_start (e.g. the recompile limit): its frame's other compiles have the stack.
            stack = entry.stack or next((e.stack for cid, e in trace.compiles.items() if e.stack and cid is not None
                                         and entry.compile_id is not None and cid.frame_id == entry.compile_id.frame_id
                                         and cid.compiled_autograd_id == entry.compile_id.compiled_autograd_id), None)
            location = last_user_stack_frame(stack)
            if location is None and metrics.get("co_filename") and isinstance(metrics.get("co_firstlineno"), int):
                location = UserLocation(str(metrics["co_filename"]), metrics["co_firstlineno"], metrics.get("co_name"))
            kind = "compiled frame" if location else None

        lines = reason.splitlines()
        diagnostics = compiler_diagnostics(lines)
        _link_to_output_code(trace, entry, diagnostics)
        message = _message(lines, fail_type)
        syntax = generated_syntax_error(trace, entry, reason, traceback) if not diagnostics else None
        if syntax is not None:
            # torch's message names a temporary file it failed to import: say what failed, in the user's terms
            diagnostics, inner = [syntax], syntax.message.split(":", 1)[0]
            stage = KERNEL_COMPILE if syntax.kernel else stage
            what = f"a Triton kernel ({syntax.kernel})" if syntax.kernel else "Python code"
            at = f" at line {syntax.code_line} of the output code" if syntax.code_line is not None else ""
            message = f"Inductor generated {what} that does not compile: {syntax.message.split(': ', 1)[1]}{at}"
        compiler_errors = [(d.text if d.column == 0 else f"{d.file}:{d.line}:{d.column}: error: {d.message}")
                           + (f"\n{d.quoted_line} | {d.source.strip() if d.column == 0 else d.source}" if d.source is not None else "")
                           for d in diagnostics[:5]]
        steps = list(NEXT_STEPS[stage])
        if syntax is not None:
            steps = [SYNTAX_STEP, NEXT_STEPS[KERNEL_COMPILE][-1]]
        if stage == LOWERING and (custom := custom_lowering(reason, traceback)) is not None:
            where = f"{custom[1].short} in {custom[1].function}" if custom[1].function else custom[1].short
            steps = [CUSTOM_LOWERING_STEP.format(op=custom[0], where=where) if step == REPORT_LOWERING else step
                     for step in steps]
        if stage in (INDUCTOR, KERNEL_COMPILE, LOWERING) and (hooks := testing_hooks(metrics)):
            steps.insert(0, testing_hooks_step(hooks))
        export_call = find_export_call(entry.metrics_stack)
        skipped = skipped_frame(reason) if stage == DYNAMO else None
        in_loop = skipped is not None and IN_LOOP in reason
        in_with = None
        if stage == DYNAMO and skipped is None:
            # The failure's text may not say that Dynamo skipped the frame where the graph break it logged does (a
            # break inside a `with` block): then the frame skipped is the one this compile compiled.
            for artifact in entry.artifacts:
                if artifact.name == BREAK_ARTIFACT and artifact.payload is not None:
                    told_break = trace.payload_text(artifact.payload)
                    skipped = skipped_frame(told_break, compiled_location(entry))
                    if skipped is not None:
                        in_with = skipped_with(told_break)
                        break
        in_fsdp_hook = stage == DYNAMO and bool(FSDP2_FILE.search(str(metrics.get("fail_user_frame_filename") or "")))
        before = None
        if skipped is not None:
            # (here: the index is for a log whose failure made Dynamo skip a frame, which most logs have not)
            from .graph_breaks.compile_index import compile_index, ran_before

            if index is None:
                index = compile_index(trace)
            before = ran_before(index, entry)
        if stage == DYNAMO and export_call is not None:
            steps = list(EXPORT_STEPS)
        elif stage == DYNAMO and location is not None and is_python_library_file(location.filename):
            steps = [LIBRARY_STEP, NEXT_STEPS[DYNAMO][-1]]  # not the user's code: only the internal stack helps
        elif skipped is not None:
            steps = [_skipped_step(skipped, in_loop, location, in_fsdp_hook, in_with, before), NEXT_STEPS[DYNAMO][-1]]
            alone = dispatch_compiled_alone(index, [entry], reason) if index is not None else []
            steps[1:1] = [_dispatch_step(skipped, callee) for callee in alone]
        elif fail_type == "Unsupported" and stage == DYNAMO and "Explanation:" in reason:
            steps.insert(0, FULLGRAPH_STEP)  # graph-break errors only raise under fullgraph=True
        elif stage == DYNAMO and (guarded := data_dependent_steps(entry, reason, location)):
            steps = [*guarded, NEXT_STEPS[DYNAMO][-1]]  # Dynamo traced it: the value is what it cannot know
        if stage == DYNAMO and (subclass := untraced_subclass(guard_trees, reason)) is not None:
            steps.insert(0, subclass)  # (what the object it could not trace lacks is known: say it first)
        op_steps, op_call = custom_op_steps(trace, entry, reason, location if kind == "failure" else None)
        # Only the fake kernel is missing: eagerly the op runs, so torch's hint that eager may fail is set aside.
        eager_runs = bool(op_steps) and _NO_FAKE_KERNEL.search(reason) is not None
        if op_steps:
            steps = op_steps  # torch's generic narrowing steps do not apply: what the op lacks is known
            if op_call is not None and kind != "failure":
                location, kind = op_call, "failure"
        raised = _fake_call_error(reason)
        if raised is not None:
            message = f"{message}: {raised}"
            if "torch.cond" in raised:  # the user's torch.cond, not code Dynamo cannot trace
                steps = [COND_BRANCHES_STEP, NEXT_STEPS[DYNAMO][-1]]
        fell_back = bool(metrics.get("config_suppress_errors"))
        if fell_back:
            steps.append(FALLBACK_NOTE)
        # The reason's Explanation/Hint lines, as a graph break's (FULLGRAPH_STEP sends the reader to them).
        told = parse_break_reason(reason) if stage == DYNAMO and "Explanation:" in reason else None
        detail = reason if len(reason) <= DETAIL_CHARS else reason[:DETAIL_CHARS] + f"\n… ({len(reason) - DETAIL_CHARS} more characters)"
        result.errors.append(CompileError(
            compile_id=entry.key, stage=stage, exception=fail_type, inner_exception=inner,
            message=message, detail=detail, location=location,
            location_kind=kind, backend=backend, compiler_errors=compiler_errors, diagnostics=diagnostics, fell_back=fell_back,
            export_call=export_call, next_steps=steps, metrics_number=metrics_number(entry),
            skipped_frame=skipped, in_loop=in_loop, in_with=in_with, in_fsdp_hook=in_fsdp_hook, skipped_before=before,
            # (torch's hints for a break in FSDP's hooks ask to avoid FSDP's own call of disable: next_steps says)
            explanation=told["explanation"] if told else None,
            hints=told["hints"] if told and not in_fsdp_hook else [],
            hints_set_aside=[h for h in told["hints"] if _EAGER_MAY_FAIL.search(h)] if told and eager_runs else [],
            docs_url=told["docs_url"] if told else None, torch_printed=_backward_errors(trace, entry),
        ))
    return result


def _backward_errors(trace: Trace, entry: Compile) -> list[str]:
    """What anomaly mode printed of the compile's failure, recorded in its compile id: the backward function that
    raised, and the forward call that made it (AOTAutograd traces the backward under detect_anomaly)."""
    said = []
    for a in entry.artifacts:
        if a.name != WARNING or a.payload is None:
            continue
        try:
            record = orjson.loads(trace.payload_text(a.payload))
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        node = backward_error(message) if isinstance(message, str) else None
        if node is None or not isinstance(message, str):
            continue
        call = forward_call(message)
        at = f"; the forward call: {call.short}" + (f" (`{call.code}`)" if call.code else "") if call else ""
        text = f"Error detected in {node} (anomaly mode, on while AOTAutograd traces the backward){at}"
        if text not in said:
            said.append(text)
    return said


def _dispatch_step(skipped: UserLocation, callee: CompiledCallee) -> str:
    """What skipping the frame compiled instead: a wrapper subclass's __torch_dispatch__, each op the eager frame ran
    on the subclass (the frame's compile time goes there, and its recompiles are that frame's)."""
    function = skipped.function or "the function"
    return (f"Running {function} eagerly, each op on the tensor subclass called {callee.function}, which Dynamo "
            f"compiled on its own: {', '.join(callee.compile_ids)} ({callee.location.short}). Once {function} "
            "compiles, its graph takes those ops and these compiles go.")


def _skipped_step(skipped: UserLocation, in_loop: bool, location: UserLocation | None, in_fsdp_hook: bool = False,
                  in_with: UserLocation | None = None, before: RanBefore | None = None) -> str:
    """What to do about a frame Dynamo skipped: the break is the cause, and no fullgraph is involved. before: a
    recompile's, of a frame earlier calls ran compiled (ran_before)."""
    where = f" at {location.short}" if location is not None else ""
    why = ("Dynamo cannot resume after a graph break inside a for/while loop" if in_loop
           else "Dynamo could not resume after this graph break")
    if in_with is not None and not in_loop:
        code = f" `{in_with.code}`" if in_with.code else ""
        return (f"Dynamo cannot resume after a graph break inside the{code} block ({in_with.short}), so it skipped "
                f"{skipped_name(skipped)} and ran all of it eagerly, on every call: nothing of it was "
                f"compiled, and no error reached your program. Move the{code} block out of the compiled function (to "
                f"the code that calls it), or remove the break{where} from the code it runs.")
    skipped_it = (f"{why}, so it skipped {skipped_name(skipped)} and ran all of it eagerly: nothing of it "
                  "was compiled, and no error reached your program.")
    if before is not None:  # earlier calls ran it compiled: what this and every later call loses is theirs, no more
        lost = "nothing compiled was lost" if not before.ops else f"these calls run those {count(before.ops, 'op')} eagerly"
        skipped_it = (f"{why}, so from this recompile's call on it ran {skipped_name(skipped)} eagerly, on every later "
                      f"call too (torch marks its code skipped), and no error reached your program. "
                      f"{before.ran[0].upper()}{before.ran[1:]}: {lost}.")
    if in_fsdp_hook:  # the break is FSDP's, at the user's call of a sharded module: that call is no break to remove
        return f"{skipped_it} {fsdp_note(location)}"
    return (f"{skipped_it} Remove the break{where} (see its hints), or move it out "
            f"of {'the loop (or compile what the loop calls on its own)' if in_loop else 'the compiled function'}.")

"""Distinct graph breaks: deduplicated by reason and user location, most frequent first.

torch >= 2.6 logs every break as an `artifact` named `dynamo_graph_break_reason`
(reason, explanation, hints, user traceback). Older logs only have the
`restart_reasons` of `compilation_metrics`; those are used when no artifact exists.

This module holds what the analysis finds, the classes its results are saved as (a saved result names a class by its
module: model/codec.type_name): GraphBreak with what it says in place of torch's hints, GraphBreaks, TransformCall,
CompiledCallee, CompiledSplit, and RanBefore with the CompileIndex it is read from (compile_index and ran_before, which
make _Piece, a class no other module may import); the wording their methods use (a skipped frame's: skipped_text;
FSDP2's: fsdp_note); and the names every part of compilescope reads a resume function by (resume_of, function_label).
It imports none of its modules, which import it:
  analysis.py         graph_breaks(trace), the analysis: each compile's breaks read, deduplicated by reason and line,
                      and what one break says of the others (a break in torch.func's own code, GradScaler's calls,
                      `.backward()`)
  reason_text.py      torch's text of one break: its reason, explanation and hints (parse_reason), where it is,
                      whether it is in DDP's forward, FSDP2's hooks or a torch.func transform, the frame Dynamo
                      skipped after it (and the `with` block it is in); Dynamo's own restarts, which are no break
  subclasses.py       tensor subclasses Dynamo could not trace: the classes a guard types as tensors, what to do, the
                      __torch_dispatch__ frames compiled on their own after a skip
  compiled_around.py  what Dynamo compiled around the breaks: the frames a break's call ran, the line a higher-order
                      op's call resumed at, what the breaks split the compiled code into
"""

from __future__ import annotations

import bisect
import re
from dataclasses import field
from typing import Any

from ...lazy_regex import lazy_compile
from ...wording import and_list, count, first_listed
from ...model.ids import compilation_key
from ...model.trace import Compile, Trace
from ..userloc import UserLocation, is_torch_file
from ...model.records import dataclass

# The reason torch gives for a call of torch._dynamo.graph_break(): in torch's own files it is a break torch makes on
# purpose (torch/optim/optimizer.py's _use_grad, so that AOTAutograd sees the optimizer step as inference).
EXPLICIT_BREAK = "Call to `torch._dynamo.graph_break()`"
BY_TORCH_NOTE = "PyTorch's own code breaks the graph here on purpose: nothing in your code to change."
# A function of torch/amp/ that Dynamo met, GradScaler's scale, unscale_, step or update: its skip list holds the whole
# directory, so Dynamo never traces GradScaler, and each of its calls in a compiled function splits the graph. The
# fix is the docs' recipe, the scaler's calls outside the compiled code; torch's hint to force tracing with
# dont_skip_tracing goes against that, and is set aside. The file is read from "filename:", which both forms carry:
# torch 2.13 "skip reason: file matches MOD_SKIPLIST (/…/torch/amp)", torch 2.11 "skip reason: skipped according
# trace_rules.lookup MOD_SKIPLIST", which names no directory.
_AMP_SKIPPED = lazy_compile(r"qualname: (?P<qualname>[\w.]{1,300}), name: [^\n,]{0,300}, filename: `[^`\n]{0,4000}"
                            r"[/\\]torch[/\\]amp[/\\][^`\n/\\]{1,300}`, skip reason: [^\n]{0,4000}?MOD_SKIPLIST")
_FORCE_TRACING_HINT = "dont_skip_tracing"
# `loss.backward()` in a compiled function: Dynamo does not trace it unless torch._dynamo.config.trace_autograd_ops is
# set, and torch's hint names it "torch._dynamo.trace_autograd_ops", an attribute that sets nothing. The call runs
# eagerly, yet it runs the backward AOTAutograd compiled for the graphs before it (bwd_compilation_metrics): the
# backward is compiled all the same, which is what the user asks.
BACKWARD_BREAK = "Unsupported Tensor.backward() call"
BACKWARD_GRAPH = "aot_backward_graph"
# A call of a function the user wrapped with torch.compiler.disable (or torch._dynamo.disable): Dynamo runs it eagerly,
# as asked, and breaks the graph around it. torch's hint is to remove the decorator, which undoes what was asked for.
DISABLED_BREAKS = ("Skip calling `torch.compiler.disable()`d function",  # called from a compiled frame (GB0098)
                   "Skip inlining `torch.compiler.disable()`d function")  # inlined into one (GB0099)
# Its explanation names the function and the reason given to disable(): "Skip calling function `<function check_finite
# at 0x7f3a...>` since it was wrapped with `torch.compiler.disable` (reason: validation runs eagerly in production)";
# "(reason: None)" when none was given.
_DISABLED = lazy_compile(r"Skip (?:calling|inlining) function `?<(?:function|bound method) (?P<name>[^\s>]{1,300})"
                         r"[^\n]{0,300}? since it was wrapped with `torch\.compiler\.disable` "
                         r"\(reason: (?P<reason>.{0,1000})\)\s*$", re.S)
# torch.compile(DistributedDataParallel(model)): Dynamo stops in DDP's own forward (torch/nn/parallel/distributed.py:
# its logger, and _inside_ddp_forward, which torch marks skipped), not in the user's code. What to do is the known way
# to compile a model under DDP, not torch's hints (which ask to remove a call from DDP's file).
DDP_ADVICE = ("compile the model DDP wraps, DDP(torch.compile(model)), instead of DDP itself; or compile through DDP with "
              "compiled DDP: torch._dynamo.config.optimize_ddp = \"python_reducer\" with compiled autograd")
DDP_NOTE = f"Dynamo broke the graph in DistributedDataParallel's forward, not in your code: {DDP_ADVICE}."
# FSDP2 (fully_shard) wraps its module hooks in torch._dynamo.disable (torch/distributed/fsdp/_fully_shard/
# _fsdp_common.py: _dynamo_disable, reason "skipping FSDP hooks"): a compiled function that calls a sharded module
# breaks the graph at that module's pre-forward hook, which runs eagerly with its all-gather (and its backward hooks
# with their reduce-scatters). torch's hint then is to avoid calling `disable`, a call in FSDP's file.
FSDP2_ADVICE = ("compile each module you shard on its own, before sharding it, instead of the model that calls it: "
                "torch.compile(submodule) first, then fully_shard() of the compiled module (as torchtitan does), so "
                "that FSDP's hooks run eagerly between compiled graphs")
# The name Dynamo gives the code after a graph break (torch/_dynamo/resume_execution.py, since torch 2.1):
# torch_dynamo_resume_in_<co_name>_at_<line>. The co_name is any function's, <lambda> and <genexpr> too; the line is
# the last `_at_<digits>` (a function may be named f_at_3). Bounded: the name comes from an untrusted log. (Older
# torch's `__resume_at_<offset>_<n>` is the global a compiled frame calls the resume function by, not its name.)
_RESUME_NAME = lazy_compile(r"torch_dynamo_resume_in_(.{1,1000}?)_at_(\d{1,9})")


def skipped_name(skipped: UserLocation, called_at: str = "") -> str:
    """"forward (checkpoint_autocast.py:46)"; of Dynamo's resume function, "the rest of train_step from
    amp_train_step.py:45" (the code after the break there). called_at: the user's line that called a frame not of
    their code ("getattr_static (inspect.py:1808, called at compiled_autograd.py:27)")."""
    resumed = resume_of(skipped.function)
    if resumed:
        return f"the rest of {resumed[0]} from {skipped.short}"
    return f"{skipped.function} ({skipped.short}{f', called at {called_at}' if called_at else ''})"


@dataclass
class RanBefore:
    """What the calls before a recompile ran compiled of a frame that recompile then made Dynamo skip: each later call
    runs the frame eagerly (torch marks its code skipped), so what it loses is what those pieces compiled, and no more.
    """

    compiles: list[str]  # the frame's earlier compiles that succeeded ("[5/0]")
    # Those, and the compiles of the resume functions after them in the same function (its later graph breaks' rest):
    # the eager frame runs their lines itself, so later calls enter none of them.
    pieces: list[str]
    ops: int  # the ops their graphs held (0: they compiled nothing, every op of those lines ran eagerly already)

    @property
    def losing(self) -> str:
        """"losing no compiled op" | "losing 18 compiled ops": what running the frame eagerly costs later calls."""
        return "losing no compiled op" if not self.ops else f"losing {count(self.ops, 'compiled op')}"

    @property
    def ran(self) -> str:
        """"calls before ran [5/0], [6/0] and [10/0] compiled, which held no op"."""
        held = "no op" if not self.ops else count(self.ops, "op")
        return f"calls before ran {and_list(self.pieces)} compiled, which held {held}"

    def to_json(self) -> dict[str, Any]:
        return {"compiles": self.compiles, "pieces": self.pieces, "ops": self.ops}


@dataclass
class _Piece:
    """A compile that succeeded, as ran_before counts it."""

    key: str  # "[5/0]"
    frame_id: int
    frame_compile_id: int | None
    started: int  # the log line it started at
    ops: int  # its graph's ops (0: none, or not logged)


@dataclass
class CompileIndex:
    """The log's compiles, indexed once for what is asked of each failed compile and each break (ran_before,
    dispatch_compiled_alone): scanning every compile for each of them took time in the square of the compiles (a log of
    4000 skipped recompiles: 7 minutes)."""

    # Successful compiles by (compiled autograd id, file, frame id), in compile id order.
    frames: dict[tuple[int | None, str, int], list[_Piece]]
    # Successful compiles of Dynamo's resume functions by (compiled autograd id, file, the function resumed), by frame
    # id, each with the line of the break it resumes after.
    resumes: dict[tuple[int | None, str, str], list[tuple[_Piece, int]]]
    # The first lines of the functions of each (file, name) compiled as frames, ascending: several classes of a file
    # may each have a `forward`.
    definitions: dict[tuple[str, str], list[int]]
    # Each compile's start line, ascending, and the largest frame id among the compiles started up to it: no compile
    # of a frame above that id started before the next start.
    starts: list[int]
    frames_by_then: list[int]
    # The compiles of each __torch_dispatch__ frame, by frame id, in compile id order.
    dispatch: dict[int, list[Compile]]

    def definition(self, filename: str, function: str, line: int) -> int | None:
        """The first line of the function named `function` in filename that line is in: the last one compiled that
        starts at it or above (None: none compiled)."""
        firsts = self.definitions.get((filename, function), [])
        i = bisect.bisect_right(firsts, line)
        return firsts[i - 1] if i else None

    def last_frame_before(self, line: int) -> int:
        """The largest frame id a compile started before the log's line had (-1: none)."""
        i = bisect.bisect_left(self.starts, line)
        return self.frames_by_then[i - 1] if i else -1


DISPATCH = "__torch_dispatch__"


def compile_index(trace: Trace) -> CompileIndex:
    """trace's CompileIndex."""
    frames: dict[tuple[int | None, str, int], list[_Piece]] = {}
    resumes: dict[tuple[int | None, str, str], list[tuple[_Piece, int]]] = {}
    definitions: dict[tuple[str, str], set[int]] = {}
    dispatch: dict[int, list[Compile]] = {}
    started: list[tuple[int, int]] = []
    for entry in trace.sorted_compiles():
        cid, m = entry.compile_id, entry.metrics or {}
        if cid is None or cid.frame_id is None:
            continue
        started.append((entry.first_lineno, cid.frame_id))
        name = m.get("co_name") or (entry.stack[-1].name if entry.stack else None)
        if name == DISPATCH:
            dispatch.setdefault(cid.frame_id, []).append(entry)
        if not m.get("co_name"):
            continue
        name, filename = str(m["co_name"]), str(m.get("co_filename"))
        resumed = resume_of(name)
        first = m.get("co_firstlineno")
        if resumed is None and isinstance(first, int):
            definitions.setdefault((filename, name), set()).add(first)
        if m.get("fail_type"):
            continue
        ops = m.get("graph_op_count")
        piece = _Piece(compilation_key(cid), cid.frame_id, cid.frame_compile_id, entry.first_lineno,
                       ops if isinstance(ops, int) else 0)
        frames.setdefault((cid.compiled_autograd_id, filename, cid.frame_id), []).append(piece)
        if resumed is not None:
            resumes.setdefault((cid.compiled_autograd_id, filename, resumed[0]), []).append((piece, resumed[1]))
    started.sort()
    frames_by_then, largest = [], -1
    for _, frame_id in started:
        largest = max(largest, frame_id)
        frames_by_then.append(largest)
    return CompileIndex(frames=frames, resumes=resumes, definitions={k: sorted(v) for k, v in definitions.items()},
                        starts=[line for line, _ in started], frames_by_then=frames_by_then, dispatch=dispatch)


def ran_before(index: CompileIndex, failed: Compile) -> RanBefore | None:
    """What the calls before `failed` ran compiled of the frame it failed to compile, where Dynamo then skipped that
    frame (a recompile that met a break it could not resume from); None where no earlier compile of the frame
    succeeded (then no call ran it compiled). index: the log's (compile_index)."""
    cid, metrics = failed.compile_id, failed.metrics or {}
    if cid is None or cid.frame_id is None or not cid.frame_compile_id or not metrics.get("co_name"):
        return None
    name, filename = str(metrics["co_name"]), str(metrics.get("co_filename"))
    pieces = [p for p in index.frames.get((cid.compiled_autograd_id, filename, cid.frame_id), [])
              if p.frame_compile_id is not None and p.frame_compile_id < cid.frame_compile_id]
    if not pieces:
        return None
    compiles = [p.key for p in pieces]
    resumed = resume_of(name)
    first = metrics.get("co_firstlineno")
    function, from_line, defined_at = (
        (resumed[0], resumed[1], index.definition(filename, resumed[0], resumed[1])) if resumed
        else (name, 0, first if isinstance(first, int) else None))
    # The resume functions after the frame's later breaks: entered only from the frame's code. Only those this frame's
    # breaks made: Dynamo made each while compiling the frame or one of them, so each is a frame first compiled after
    # it (a larger frame id), of the same function (the one named so that starts last at or above its break's line),
    # and, to have run before, started before the failed compile.
    after = index.resumes.get((cid.compiled_autograd_id, filename, function), [])

    def frame_id(resume: tuple[_Piece, int]) -> int:
        return resume[0].frame_id

    # (by bisection on the pieces themselves: a list of their ids, made for each failure, cost the file's resumes)
    lo = bisect.bisect_right(after, cid.frame_id, key=frame_id)
    hi = bisect.bisect_right(after, index.last_frame_before(failed.first_lineno), key=frame_id)
    pieces += [p for p, line in after[lo:hi] if line >= from_line and p.started < failed.first_lineno
               and index.definition(filename, function, line) == defined_at]
    pieces.sort(key=lambda p: (p.frame_id, p.frame_compile_id or 0))
    by_key = {p.key: p.ops for p in pieces}
    return RanBefore(compiles=list(dict.fromkeys(compiles)), pieces=list(by_key), ops=sum(by_key.values()))


def skipped_title(skipped: UserLocation, called_at: str = "", before: RanBefore | None = None) -> str:
    """"Dynamo skipped forward (checkpoint_autocast.py:46) and ran it eagerly": what a skipped frame is called
    everywhere (the errors finding, the graph-breaks section, check and diff). before: the frame ran compiled on
    earlier calls, and only the calls from this recompile on ran it eagerly: said so, with what they lose."""
    if before is not None:
        return f"from this recompile's call on, Dynamo ran {skipped_name(skipped, called_at)} eagerly, {before.losing}"
    return f"Dynamo skipped {skipped_name(skipped, called_at)} and ran it eagerly"


def skipped_cause(in_loop: bool, in_with: UserLocation | None = None) -> str:
    """Why Dynamo skipped the frame, after skipped_title."""
    if in_loop:
        return "a graph break inside one of its loops"
    if in_with is not None:
        # (worded so that where the break is reads on after it: "... came inside it at timer.py:41: <reason>")
        block = f"`{in_with.code}`" if in_with.code else "the `with` block"
        return f"Dynamo cannot resume inside a `with` block, and a graph break came inside {block} ({in_with.short})"
    return "a graph break Dynamo could not resume from"


def skipped_text(skipped: UserLocation | None, in_loop: bool, in_with: UserLocation | None = None,
                 called_at: str = "", before: RanBefore | None = None) -> str | None:
    """skipped_title and skipped_cause as one sentence ("Dynamo skipped forward (checkpoint_autocast.py:46) and ran it
    eagerly: a graph break inside one of its loops"); None where no frame was skipped. called_at: the user's line
    that called a frame not of their code; before: what calls before ran compiled (ran_before)."""
    if skipped is None:
        return None
    ran = f" ({before.ran})" if before is not None else ""
    return f"{skipped_title(skipped, called_at, before)}{ran}: {skipped_cause(in_loop, in_with)}"


def resume_of(code_name: str | None) -> tuple[str, int] | None:
    """(f, 22) for Dynamo's resume function torch_dynamo_resume_in_f_at_22: the rest of f after its graph break at
    line 22; None for any other code. Every part of compilescope reads a resume function's name through this."""
    m = _RESUME_NAME.fullmatch(code_name or "")
    return (m[1], int(m[2])) if m else None


def function_label(code_name: str | None) -> str:
    """A compiled function's name as the report shows it: Dynamo's resume function torch_dynamo_resume_in_f_at_22 is
    "f (after its graph break at line 22)", any other its own name ("" for none)."""
    resumed = resume_of(code_name)
    return f"{resumed[0]} (after its graph break at line {resumed[1]})" if resumed else code_name or ""


def function_title(code_name: str | None) -> str | None:
    """What stands behind a function_label that is not the function's own name: "Dynamo's resume function
    torch_dynamo_resume_in_f_at_22" (a page's title, where the label is shown); None for any other function."""
    return f"Dynamo's resume function {code_name}" if resume_of(code_name) else None


def resume_title(code_name: str | None) -> str | None:
    """What a resume function is, where its own name is shown (a stack frame): "Dynamo's resume function: the rest of
    f after its graph break at line 22"; None for any other function."""
    resumed = resume_of(code_name)
    return f"Dynamo's resume function: the rest of {resumed[0]} after its graph break at line {resumed[1]}" if resumed else None


# Dynamo's break on a NumPy function torch._numpy does not implement; its explanation names the function: "Can't find
# numpy numpy function <function interp at 0x7f...> in torch._numpy." (torch 2.13)
UNSUPPORTED_NUMPY = "attempted to trace numpy function unsupported by PyTorch"
# A logging.Logger method called in compiled code (torch/_dynamo/variables/misc.py, LoggingLoggerVariable). torch's
# only hint, ignore_logging_functions, makes the call a no-op: the message is silently never logged while the function
# runs compiled. reorderable_logging_functions (print, warnings.warn run after the graph) is not read for a Logger's
# methods in torch 2.13: with log.info in it, the break stays (checked by hand).
UNSUPPORTED_LOGGER = "logging.Logger method not supported for non-export cases"
_LOGGER_METHOD = lazy_compile(r"Developer debug context: method: <[^\n]{0,1000}?>\.(?P<method>\w{1,100}), args:")
# A C builtin Dynamo cannot trace (torch/_dynamo/variables/functions.py, SkipFunctionVariable): its debug context names
# it, `module: time, qualname: perf_counter, skip reason: cannot determine source file for time ...`. The random
# module's functions are methods of its hidden Random instance: `module: <unknown module>, qualname: Random.random`.
SKIPPED_FUNCTION = "Attempted to call function marked as skipped"
_SKIPPED_BUILTIN = lazy_compile(r"Developer debug context: module: (?P<module>[^,\n]{1,200}), qualname: "
                                r"(?P<qualname>[\w.]{1,200}), skip reason: cannot determine source file")
_NUMPY_FUNCTION = lazy_compile(r"numpy function <function (?P<name>[\w.]{1,200}) at ")
# torch's hint that asks the user to report the break to PyTorch: nothing to change in their code.
_REPORT_HINT = lazy_compile(r"Please (?:report|file) an issue to PyTorch")


@dataclass
class TransformCall:
    """The user's line that called a torch.func transform inside which a graph break happened."""

    call: UserLocation  # the user's frame that called into torch/_functorch/
    name: str | None  # "jacrev", as that line's code calls it; None where its code names none

    @property
    def label(self) -> str:
        """"jacrev at func_numpy.py:42" ("a torch.func transform at ..." where the line names none)."""
        return f"{self.name or 'a torch.func transform'} at {self.call.short}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "call": self.call.to_json()}


@dataclass
class GraphBreak:
    """One distinct graph break (by reason and user location), with the compilations that hit it."""

    reason: str  # the graph break type as torch names it, e.g. "Data-dependent branching"
    location: UserLocation | None  # innermost user frame
    count: int = 0  # compilations that hit it
    compile_ids: list[str] = field(default_factory=list)
    context: str | None = None  # "Encountered graph break when attempting to trace CALL: ..."
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    docs_url: str | None = None
    text: str = ""  # the reason as torch wrote it (without the tracebacks)
    eager_lines: list[UserLocation] = field(default_factory=list)  # ran eagerly because of it (sources.break_sites)
    resume_functions: list[str] = field(default_factory=list)  # took over after it (sources.break_sites)
    # The call Dynamo did not trace still ran the functions it calls, and Dynamo compiled those as frames of their
    # own (an LR scheduler's wrapper of opt.step, in a file Dynamo skips, then Adam.step compiled as [2/0]).
    compiled_callees: list[CompiledCallee] = field(default_factory=list)
    # Its stack passes through torch/nn/parallel/distributed.py: DDP's forward, compiled with torch.compile(DDP(model)).
    in_ddp_forward: bool = False
    # It is in FSDP2's hooks (FSDP2_FILE): fsdp_call is the user's line that called the sharded module (`x = block(x)`)
    # where the traceback names one.
    in_fsdp_hook: bool = False
    fsdp_call: UserLocation | None = None
    # Dynamo could not resume after it and ran this function eagerly, all of it (skipped_frame); in_loop: because the
    # break is inside one of its loops. Then more than eager_lines ran eagerly: the whole function.
    skipped_frame: UserLocation | None = None
    in_loop: bool = False
    in_with: UserLocation | None = None  # the `with` line the break is inside, where that is why Dynamo skipped it
    # The compiles in which Dynamo skipped skipped_frame: a break met in two compiled frames (a helper each inlines, or
    # compiles as its own frame) made each skip its own frame, said in each compile's error.
    skipped_in: list[str] = field(default_factory=list)
    # The compile that skipped the frame was a recompile: what calls before it ran compiled (only later calls ran
    # the frame eagerly)
    skipped_before: RanBefore | None = None
    # The break is inside the function a higher-order op calls ("torch.utils.checkpoint.checkpoint"): that call ran
    # uncompiled, all of it. op_calls: the user's lines that called it, where the log says (the line Dynamo resumed
    # the frame at after the break), in compile order.
    higher_order_op: str | None = None
    op_calls: list[UserLocation] = field(default_factory=list)
    # The break names an object Dynamo could not trace as an op's argument, a tensor subclass of the user's without
    # __tensor_flatten__ (untraced_subclass): what to do, for people.
    subclass_advice: str | None = None
    # Another GradScaler break, earlier in the list, says what every one of them means ("prog.py:41"): this one's
    # amp_note says only what it ran and where that is said, not the same paragraph again.
    amp_said_at: str | None = None
    # Of the first GradScaler break: the program's lines that call the scaler in compiled code, in line order
    # (`scaler.unscale_(opt)` among them where it clips): what its amp_note asks to move out, in the program's words.
    amp_calls: list[str] = field(default_factory=list)
    # Of a break at `.backward()` (BACKWARD_BREAK): the compiles ("[0/0]") AOTAutograd made a backward graph for
    # (aot_backward_graph, or its compile's bwd_compilation_metrics), and compiled autograd's graphs ("[!0]"): what of
    # the backward ran compiled.
    backward_compiled: list[str] = field(default_factory=list)
    backward_by_compiled_autograd: list[str] = field(default_factory=list)

    @property
    def skipped_text(self) -> str | None:
        """What Dynamo skipped after this break, as the errors finding says it, and in which compiles where not in all
        of them; None where it went on after it."""
        said = skipped_text(self.skipped_frame, self.in_loop, self.in_with, before=self.skipped_before)
        others = [c for c in self.compile_ids if c not in self.skipped_in]
        if said is None or not others:
            return said
        return f"{said} (in {', '.join(self.skipped_in)}; not in {', '.join(others)})"

    @property
    def uncompiled_text(self) -> str | None:
        """What ran uncompiled because the break is inside a higher-order op's function, and why; None for others."""
        if self.higher_order_op is None:
            return None
        lines = list(dict.fromkeys(c.short for c in self.op_calls))
        calls = (f"each {self.higher_order_op} call at {', '.join(lines)}" if len(lines) > 1
                 else f"the {self.higher_order_op} call" + (f" at {lines[0]}" if lines else ""))
        return (f"ran uncompiled: {calls}, all of it. Dynamo captures a higher-order op's call whole or not at all, "
                "and this break is inside the function it calls, so the call ran eagerly and nothing under it was "
                "compiled")

    @property
    def disabled(self) -> bool:
        """The call of a function wrapped with torch.compiler.disable: it runs eagerly on purpose, not a break to fix."""
        return self.reason in DISABLED_BREAKS

    @property
    def disabled_function(self) -> str | None:
        """The disabled function's name, "check_finite" (None: not a disabled call, or the log does not say)."""
        m = _DISABLED.search(self.explanation or "") if self.disabled else None
        return m["name"] if m else None

    @property
    def disabled_reason(self) -> str | None:
        """The reason given to disable(reason=...), as torch logged it (None: none given)."""
        m = _DISABLED.search(self.explanation or "") if self.disabled else None
        return m["reason"].strip() if m and m["reason"].strip() not in ("", "None") else None
    # Inside a torch.func transform the user's line called (its traceback enters torch/_functorch/ from there).
    transform: TransformCall | None = None
    # Where torch placed a break in torch.func's own code (eager_transforms.py:470), when location is the user's line
    # that called the transform.
    torch_location: UserLocation | None = None
    # Of a break in torch.func's own code: the breaks in the user's code inside the same transform call, which made it
    # run eagerly (their locations' short names).
    caused_by: list[str] = field(default_factory=list)

    @property
    def shown_at(self) -> UserLocation | None:
        """Where the views place the break: for one in FSDP2's hooks, the user's call of the sharded module
        (`x = block(x)`), the line to change; torch's line there is the same in every program (torch_line says it).
        Else where torch placed it."""
        return self.fsdp_call if self.in_fsdp_hook and self.fsdp_call is not None else self.location

    @property
    def torch_line(self) -> str | None:
        """"in FSDP2's hooks (torch's _fsdp_common.py:30 in wrapper)": where in torch a break placed at the user's
        call is; None where it is placed where torch placed it."""
        loc = self.location
        if self.shown_at is loc or loc is None:
            return None
        return f"in FSDP2's hooks (torch's {loc.short}{f' in {loc.function}' if loc.function else ''})"

    @property
    def by_torch(self) -> bool:
        """torch's own code breaks its graph here on purpose: nothing in the user's code to change."""
        return (self.reason == EXPLICIT_BREAK and self.location is not None
                and is_torch_file(self.location.filename))

    @property
    def note(self) -> str | None:
        """What the report says in place of torch's hints, which ask to remove a call in torch's own file (or, in
        torch.func's own code, to compile a closure torch made, not the user)."""
        if self.disabled:
            return self.disabled_note
        if self.by_torch:
            return BY_TORCH_NOTE
        if self.in_ddp_forward:
            return DDP_NOTE
        if self.in_fsdp_hook:
            return fsdp_note(self.fsdp_call)
        if self.transform is not None and self.torch_location is not None and self.caused_by:
            return (f"In torch.func's own code ({self.torch_location.short}"
                    f"{f' in {self.torch_location.function}' if self.torch_location.function else ''}), compiled as a "
                    f"frame of its own because {self.transform.label} ran eagerly after the graph break inside it at "
                    f"{', '.join(self.caused_by)}: remove that one and this one goes too.")
        if self.reason == BACKWARD_BREAK:
            return self.backward_note
        if self.reason == UNSUPPORTED_NUMPY:
            return self.numpy_note
        if self.reason == UNSUPPORTED_LOGGER:
            return self.logger_note
        return self.builtin_note

    @property
    def note_kind(self) -> str | None:
        """What the note is: "nothing_to_change" (torch's own break, or a call disabled on purpose: said aside),
        "advice" (what the break did and what to do about it, in place of torch's hints: the backward's, GradScaler's,
        a NumPy function's...); None without a note."""
        if self.note is None:
            return None
        return "nothing_to_change" if self.disabled or self.by_torch else "advice"

    @property
    def untraced_builtin(self) -> tuple[str, str] | None:
        """("random", "random.random()"), ("time", "time.perf_counter()") or ("warnings", "warnings.warn()"): the call
        of Python's random, time or warnings module that Dynamo could not trace here (C code, "marked as skipped");
        None for any other break."""
        m = _SKIPPED_BUILTIN.search(self.text or "") if self.reason == SKIPPED_FUNCTION else None
        if m is None:
            return None
        module, qualname = m["module"].strip(), m["qualname"]
        if module == "time":
            return "time", f"time.{qualname}()"
        if module == "_warnings" and qualname == "warn":  # (warnings.warn is _warnings.warn, C code)
            return "warnings", "warnings.warn()"
        if module == "random" or (module == "<unknown module>" and qualname.startswith("Random.")):
            return "random", f"random.{qualname.rpartition('.')[2]}()"
        return None

    @property
    def builtin_fix(self) -> str | None:
        """The short fix for a random or time call Dynamo cannot trace (the findings' detail)."""
        called = self.untraced_builtin
        if called is None:
            return None
        if called[0] == "time":
            return f"{called[1]} cannot be traced: read the clock in the code that calls the compiled function"
        if called[0] == "warnings":
            return ("warnings.warn() cannot be traced: warn in the code that calls the compiled function, or add "
                    "warnings.warn to torch._dynamo.config.reorderable_logging_functions (then called after the graph)")
        return (f"{called[1]} cannot be traced: draw it in the code that calls the compiled function and pass it in "
                "as a tensor argument")

    @property
    def builtin_note(self) -> str | None:
        """What to do about a random or time call Dynamo cannot trace, in place of torch's hints (to file an issue, to
        wrap a C extension in a custom op): these are not missing features but values that differ on every call."""
        called = self.untraced_builtin
        if called is None:
            return None
        kind, call = called
        ran = ("the call ran eagerly, splitting the graph there" if self.skipped_frame is None
               else f"here that made Dynamo skip all of {self.skipped_frame.function or 'the function'} (below)")
        if kind == "warnings":
            return self.warnings_note(ran)
        said = f"Dynamo cannot trace {call} (C code in Python's {kind} module): {ran}. "
        if kind == "time":
            return said + ("A clock read inside the compiled function cannot time the compiled code anyway: read it in "
                           "the code that calls the function, around the call (after torch.cuda.synchronize() on a "
                           "GPU), and pass the value in as an argument if the function needs it.")
        return said + ("Draw it in the code that calls the compiled function and pass it in as a tensor argument "
                       f"(torch.tensor({call})): a Python float passed in is guarded on its value, so a new value "
                       "compiles again (once, before automatic dynamic makes it a symbol), where a tensor's value is "
                       "not guarded. Or draw it with torch "
                       "(torch.rand(())), if torch's generator may replace Python's.")

    def warnings_note(self, ran: str) -> str:
        """What a warnings.warn call does to the graph and the two ways to keep one graph (torch 2.13: the call is
        Python's C builtin _warnings.warn, which Dynamo skips; a function in config.reorderable_logging_functions is
        recorded and called after the graph instead, where its arguments are tensors, constants or formatted
        strings: variables/misc.py DebuggingVariable, output_graph.py's debug_locals)."""
        function = self.location.function if self.location is not None and self.location.function else None
        rest = (f"the rest of {function} after it is compiled as a function of its own" if function
                else "the code after it is compiled as a function of its own")
        return (f"Dynamo cannot trace warnings.warn (C code: Python's _warnings.warn): {ran}. The warning is still "
                f"issued, but {rest}, and the graph stays split on every call for a message Python shows once per "
                "line by default. To keep one graph, warn in the code that calls the compiled function, or run "
                "`torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)` before the first call: "
                "Dynamo then records the call and makes it after the graph (its arguments must be constants, tensors "
                "or formatted strings, else it breaks again), and Python names the compiled function's first line as "
                "the warning's, not this one.")

    @property
    def logger_note(self) -> str:
        """What to do about a Logger call that breaks the graph, in place of torch's hint (ignore_logging_functions),
        which would silence the message without saying so."""
        m = _LOGGER_METHOD.search(self.text or "")
        method = f"logging.Logger.{m['method']}" if m else "the logging method"
        call = f"`{self.location.code}`" if self.location is not None and self.location.code else "the call"
        return (f"torch's hint, adding {method} to torch._dynamo.config.ignore_logging_functions, removes the break by "
                f"making {call} a no-op in compiled code: its message is never logged while the function runs compiled. "
                "reorderable_logging_functions (which runs print and warnings.warn after the graph) does not apply to a "
                "Logger's methods. To keep the message, log in the code that calls the compiled function; add it to "
                "ignore_logging_functions only to drop it.")

    @property
    def numpy_note(self) -> str:
        """What to do about a NumPy function Dynamo cannot trace, in place of torch's only hint (to report it): the
        user's function that calls it made a custom op, so the graph calls it whole instead of breaking."""
        m = _NUMPY_FUNCTION.search(self.explanation or self.text)
        called = f"np.{m['name']}" if m else "this NumPy function"
        function = self.location.function if self.location is not None and self.location.function else None
        op = function if function and function.isidentifier() else "my_function"
        return (f"Dynamo traces NumPy code through torch's own version of NumPy (torch._numpy), which has no {called}: "
                f"that call ran eagerly, between the graph of {function or 'the function'} before it and the one after "
                "it. To compile around it, make "
                f"{function or 'the function that calls it'} a custom op: torch.library.custom_op(\"mylib::{op}\", "
                "mutates_args=()) on it (Tensor type hints on its arguments and result), with a fake kernel "
                "(register_fake returning torch.empty_like of the output): the graph then calls it as one op, with no "
                f"break. Or write it with torch ops instead of {called}.")

    @property
    def transform_note(self) -> str | None:
        """What a break inside a torch.func transform does to the transform's call, said beside torch's hints."""
        if self.transform is None or self.torch_location is not None:
            return None
        call = self.transform.call
        code = f" (`{call.code}`)" if call.code else ""
        return (f"Inside {self.transform.label}{code}: Dynamo gave up the transform's whole call, which ran eagerly "
                f"(the functions it calls compiled one by one, torch.func's own too); without this break the "
                f"transform is captured in the graph of {call.function or 'the function that calls it'}.")

    @property
    def disabled_note(self) -> str:
        """What a disabled call is: eager on purpose, what it costs, and the one reason to change it."""
        name = self.disabled_function or "the function"
        why = f" (reason given: \"{self.disabled_reason}\")" if self.disabled_reason else ""
        return (f"{name} is wrapped with torch.compiler.disable{why}: it runs eagerly on purpose, and the graph is split "
                "around each call (the code after it compiles as a function of its own). Nothing to fix; remove the "
                "decorator only if it should be compiled.")

    @property
    def backward_note(self) -> str:
        """Whether the backward was compiled although `.backward()` broke the graph, and torch's setting by its name."""
        compiled = []
        if self.backward_compiled:
            compiled.append(f"the backward AOTAutograd made for {', '.join(self.backward_compiled)}")
        if self.backward_by_compiled_autograd:
            compiled.append(f"compiled autograd's backward graphs ({', '.join(self.backward_by_compiled_autograd)})")
        ran = (f"it ran {' and '.join(compiled)}: the backward is compiled all the same, and stays compiled with "
               ".backward() called outside the compiled function, where training loops usually call it" if compiled else
               "the log records no compiled backward")
        return (f".backward() ran eagerly, as Dynamo does not trace it; {ran}. The setting that makes Dynamo trace it "
                "is torch._dynamo.config.trace_autograd_ops = True (torch's hint writes torch._dynamo.trace_autograd_ops,"
                " which sets nothing).")

    @property
    def amp_function(self) -> str | None:
        """"GradScaler.scale": the function of torch/amp/ that Dynamo's skip list kept it from tracing; None for any
        other break."""
        text = self.text or ""
        if "MOD_SKIPLIST" not in text:  # (every match names it: most breaks are not skips, and compile no pattern)
            return None
        m = _AMP_SKIPPED.search(text)
        return m["qualname"] if m else None

    @property
    def amp_note(self) -> str | None:
        """What a GradScaler call in compiled code does and what to do, said beside torch's hints (None for others)."""
        called = self.amp_function
        if called is None:
            return None
        if self.amp_said_at is not None:
            return (f"Dynamo never traces torch.amp (GradScaler): {called} ran eagerly and split the graph, as the "
                    f"GradScaler call at {self.amp_said_at} did: what to do is said there.")
        function = self.location.function if self.location is not None and self.location.function else None
        calls = self.amp_calls or ["scaler.scale(loss).backward()", "scaler.step(opt)", "scaler.update()"]
        # unscale_ is there for what runs between it and step (clipping the unscaled gradients): it moves with them.
        between = (", in this order and with what runs between them (the clipping after unscale_)"
                   if any(".unscale_(" in c for c in calls) else "")
        return (f"Dynamo never traces torch.amp (GradScaler): its directory is on Dynamo's skip list, so {called} ran "
                "eagerly and split the graph, as every GradScaler call in compiled code does. Keep the scaler's calls "
                f"out of {function or 'the compiled function'}: compile the model (torch.compile(model)) or its "
                f"forward, and call {and_list(calls)} in the code that calls it{between}. torch's hint to apply "
                "torch._dynamo.dont_skip_tracing is set aside: it forces tracing into code torch keeps out of Dynamo "
                "on purpose.")

    @property
    def hints_set_aside(self) -> list[str]:
        """torch's hints that the report's advice contradicts (amp_note's: dont_skip_tracing on GradScaler): kept as
        torch's text, not shown as advice."""
        return [h for h in self.hints if _FORCE_TRACING_HINT in h] if self.amp_function else []

    @property
    def advice_hints(self) -> list[str]:
        """torch's hints less those set aside: what the report shows as hints."""
        return [h for h in self.hints if h not in self.hints_set_aside]

    @property
    def user_hints(self) -> list[str]:
        """torch's hints that say what to do in the user's code, in torch's order: not its "Please report an issue to
        PyTorch", which it adds to breaks it sees as a gap of its own, nor those set aside. The fix is not always the
        first (a data-dependent branch's `torch.cond` is its third): a brief view shows these, not just one."""
        return [h for h in self.advice_hints if not _REPORT_HINT.match(h)]

    @property
    def callees_text(self) -> str | None:
        """"[2/0], [2/1] step (adam.py:214)": what the call ran that Dynamo compiled on its own."""
        return "; ".join(c.label for c in self.compiled_callees) or None

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "location": self.location.to_json() if self.location else None,
            "count": self.count,
            "compile_ids": self.compile_ids,
            "context": self.context,
            "explanation": self.explanation,
            "hints": self.hints,
            "docs_url": self.docs_url,
            "text": self.text,
            "eager_lines": [{"filename": e.filename, "line": e.line, "code": e.code} for e in self.eager_lines],
            "resume_functions": self.resume_functions,
            "by_torch": self.by_torch,
            "disabled": self.disabled,
            "disabled_function": self.disabled_function,
            "disabled_reason": self.disabled_reason,
            "in_ddp_forward": self.in_ddp_forward,
            "in_fsdp_hook": self.in_fsdp_hook, "fsdp_call": self.fsdp_call.to_json() if self.fsdp_call else None,
            "compiled_callees": [c.to_json() for c in self.compiled_callees],
            "skipped_frame": self.skipped_frame.to_json() if self.skipped_frame else None, "in_loop": self.in_loop,
            "in_with": self.in_with.to_json() if self.in_with else None, "skipped_in": self.skipped_in,
            "skipped_before": self.skipped_before.to_json() if self.skipped_before else None,
            "skipped_text": self.skipped_text,
            "higher_order_op": self.higher_order_op, "op_calls": [c.to_json() for c in self.op_calls],
            "subclass_advice": self.subclass_advice,
            "transform": self.transform.to_json() if self.transform else None,
            "torch_location": self.torch_location.to_json() if self.torch_location else None,
            "caused_by": self.caused_by,
            "transform_note": self.transform_note,
            "amp_function": self.amp_function, "amp_note": self.amp_note, "amp_said_at": self.amp_said_at,
            "amp_calls": self.amp_calls,
            "backward_compiled": self.backward_compiled,
            "backward_by_compiled_autograd": self.backward_by_compiled_autograd,
            "hints_set_aside": self.hints_set_aside, "advice_hints": self.advice_hints,
            "note": self.note, "note_kind": self.note_kind,
        }


@dataclass
class CompiledCallee:
    """A function the break's call ran, compiled by Dynamo as a frame of its own."""

    function: str
    location: UserLocation  # where it starts (co_filename, co_firstlineno)
    compile_ids: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """"[2/0], [2/1] step (adam.py:214)", for people."""
        return f"{', '.join(self.compile_ids)} {self.function} ({self.location.short})"

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "location": self.location.to_json(), "compile_ids": self.compile_ids}


@dataclass
class CompiledSplit:
    """What the breaks split the compiled code into: the compiles, and which of their graphs hold ops
    (compilation_metrics' graph_op_count of each compile that did not fail)."""

    compiles: int
    with_ops: list[tuple[str, str, int]] = field(default_factory=list)  # (compile id, function, graph_op_count)
    empty: int = 0  # graph_op_count 0
    no_graph: int = 0  # graph_op_count null: no graph made (empty_graphs.made_no_graph, or no code installed either)

    @property
    def text(self) -> str:
        """"9 compiles; only 2 hold ops: [0/0] train_step: 6 ops, [4/0] step: 4 ops; 5 made an empty graph and 2 no
        graph"."""
        each = [f"{cid} {function_label(function)}: {count(ops, 'op')}" for cid, function, ops in self.with_ops]
        held = first_listed(each, shown=SPLIT_NAMED)
        rest = " and ".join(part for part in (f"{self.empty} made an empty graph" if self.empty else "",
                                              f"{self.no_graph} no graph" if self.no_graph else "") if part)
        return f"{count(self.compiles, 'compile')}; only {len(self.with_ops)} hold ops: {held}; {rest}"

    def to_json(self) -> dict[str, Any]:
        return {"compiles": self.compiles, "with_ops": [{"compile_id": c, "function": f, "ops": n}
                                                        for c, f, n in self.with_ops],
                "empty": self.empty, "no_graph": self.no_graph, "text": self.text}


SPLIT_NAMED = 4  # compiles with ops named in CompiledSplit.text; the rest counted


@dataclass
class GraphBreaks:
    """The distinct graph breaks of the log, and where they were read from."""

    breaks: list[GraphBreak] = field(default_factory=list)
    total: int = 0  # graph break events, before deduplication
    source: str | None = None  # "dynamo_graph_break_reason" | "restart_reasons" | None (no breaks)
    # Where there are breaks: the frames compiled, of which only some hold ops (the rest are the breaks' cost alone).
    split: CompiledSplit | None = None

    def __bool__(self) -> bool:
        return bool(self.breaks)

    @property
    def disabled(self) -> int:
        """Distinct breaks at calls of torch.compiler.disable'd functions: asked for, which check does not count."""
        return sum(1 for b in self.breaks if b.disabled)

    def to_json(self) -> dict[str, Any]:
        return {"distinct": len(self.breaks), "total": self.total, "source": self.source, "disabled": self.disabled,
                "split": self.split.to_json() if self.split else None, "breaks": [b.to_json() for b in self.breaks]}


def fsdp_note(call: UserLocation | None) -> str:
    """What a break in FSDP2's hooks is and what to do, in place of torch's hints (which ask to avoid FSDP's call of
    torch._dynamo.disable)."""
    where = f" at {call.short}" + (f" (`{call.code}`)" if call.code else "") if call is not None else ""
    return (f"FSDP2's hooks broke the graph, not your code: the call of a fully_shard-ed module{where} runs FSDP's "
            "pre-forward hook, which torch never compiles (torch._dynamo.disable, \"skipping FSDP hooks\"); the hook's "
            f"all-gather, and the reduce-scatter of its backward, run eagerly, outside every graph. To do: {FSDP2_ADVICE}.")

"""Distinct graph breaks: deduplicated by reason and user location, most frequent first.

torch >= 2.6 logs every break as an `artifact` named `dynamo_graph_break_reason`
(reason, explanation, hints, user traceback). Older logs only have the
`restart_reasons` of `compilation_metrics`; those are used when no artifact exists.

This module holds what the analysis finds, the classes its results are saved as (a saved result names a class by its
module: model/codec.type_name): GraphBreak, GraphBreaks, TransformCall, CompiledCallee, CompiledSplit and RanBefore,
with their fields, their JSON and their short labels. It imports only wording.py (GraphBreak inherits its wording) and
resume_names.py, which import nothing of it but for annotations; its other modules import it:
  analysis.py         graph_breaks(trace), the analysis: each compile's breaks read, deduplicated by reason and line,
                      and what one break says of the others (a break in torch.func's own code, GradScaler's calls,
                      `.backward()`)
  reason_text.py      torch's text of one break: its reason, explanation and hints (parse_reason), where it is,
                      whether it is in DDP's forward, FSDP2's hooks or a torch.func transform, the frame Dynamo
                      skipped after it (and the `with` block it is in); Dynamo's own restarts, which are no break
  subclasses.py       tensor subclasses Dynamo could not trace: what to do (told by the classes the guard trees type as
                      tensors, GuardTrees.tensor_classes), the __torch_dispatch__ frames compiled on their own after a skip
  wording.py          what the report says of a break for people (BreakWording, which GraphBreak inherits): what it
                      says in place of torch's hints or beside them (note), which of those hints it shows, what ran
                      uncompiled or was skipped after it; a skipped frame's wording (skipped_text) and FSDP2's
                      (fsdp_note); torch's reasons it tells breaks by (EXPLICIT_BREAK, BACKWARD_BREAK, ...)
  resume_names.py     the names every part of compilescope reads a resume function by (resume_of, function_label)
  compile_index.py    the log's compiles indexed once (compile_index), and what the calls before a recompile ran
                      compiled of the frame it made Dynamo skip (ran_before): imported where a frame was skipped
  compiled_around.py  what Dynamo compiled around the breaks: the frames a break's call ran, the line a higher-order
                      op's call resumed at, what the breaks split the compiled code into
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ...wording import and_list, count, first_listed
from ..user_locations import UserLocation
from ...model.records import dataclass
from .resume_names import function_label
from .wording import BreakWording


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
class GraphBreak(BreakWording):
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
    # Inside a torch.func transform the user's line called (its traceback enters torch/_functorch/ from there).
    transform: TransformCall | None = None
    # Where torch placed a break in torch.func's own code (eager_transforms.py:470), when location is the user's line
    # that called the transform.
    torch_location: UserLocation | None = None
    # Of a break in torch.func's own code: the breaks in the user's code inside the same transform call, which made it
    # run eagerly (their locations' short names).
    caused_by: list[str] = field(default_factory=list)

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


# (the name a tensor subclass's dispatch is called by: read by subclasses and compile_index alike)
DISPATCH = "__torch_dispatch__"


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

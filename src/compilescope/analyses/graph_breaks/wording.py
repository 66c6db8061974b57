"""GraphBreak's wording for people, in BreakWording, which GraphBreak inherits (the package keeps the saved class, its
fields and their JSON): what the report says of a break in place of torch's hints or beside them (note and note_kind:
a call disabled on purpose, torch's own break, DDP's forward, FSDP2's hooks, torch.func's code, `.backward()`,
GradScaler, a NumPy function, a Logger call, a random, time or warnings call), which of torch's hints it shows
(advice_hints, user_hints), what ran uncompiled or was skipped after it (uncompiled_text, skipped_text), where it is
shown (shown_at, torch_line); and torch's reasons it tells breaks by (EXPLICIT_BREAK, BACKWARD_BREAK, ...). Also a
skipped frame's wording (skipped_name, skipped_title, skipped_cause, skipped_text) and FSDP2's (fsdp_note), which the
errors and the insights say alike.

The package imports it: it imports the package's classes for annotations only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...lazy_regex import lazy_compile
from ...wording import and_list
from ..user_locations import UserLocation, is_torch_file
from .resume_names import resume_of

if TYPE_CHECKING:
    from . import CompiledCallee, RanBefore, TransformCall

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


def skipped_name(skipped: UserLocation, called_at: str = "") -> str:
    """"forward (checkpoint_autocast.py:46)"; of Dynamo's resume function, "the rest of train_step from
    amp_train_step.py:45" (the code after the break there). called_at: the user's line that called a frame not of
    their code ("getattr_static (inspect.py:1808, called at compiled_autograd.py:27)")."""
    resumed = resume_of(skipped.function)
    if resumed:
        return f"the rest of {resumed[0]} from {skipped.short}"
    return f"{skipped.function} ({skipped.short}{f', called at {called_at}' if called_at else ''})"


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


def in_fsdp_hooks(placed: UserLocation) -> str:
    """"in FSDP2's hooks (torch's _fsdp_common.py:30 in wrapper)": a break torch placed in FSDP2's code, as the
    insights and the source page say it beside the user's call of the sharded module."""
    return f"in FSDP2's hooks (torch's {placed.short}{f' in {placed.function}' if placed.function else ''})"


def fsdp_note(call: UserLocation | None) -> str:
    """What a break in FSDP2's hooks is and what to do, in place of torch's hints (which ask to avoid FSDP's call of
    torch._dynamo.disable)."""
    where = f" at {call.short}" + (f" (`{call.code}`)" if call.code else "") if call is not None else ""
    return (f"FSDP2's hooks broke the graph, not your code: the call of a fully_shard-ed module{where} runs FSDP's "
            "pre-forward hook, which torch never compiles (torch._dynamo.disable, \"skipping FSDP hooks\"); the hook's "
            f"all-gather, and the reduce-scatter of its backward, run eagerly, outside every graph. To do: {FSDP2_ADVICE}.")


class BreakWording:
    """What a GraphBreak says for people, read from its fields: GraphBreak inherits it."""

    if TYPE_CHECKING:  # GraphBreak's fields it reads, declared there (mypy checks that the two agree)
        reason: str
        location: UserLocation | None
        compile_ids: list[str]
        explanation: str | None
        hints: list[str]
        text: str
        compiled_callees: list[CompiledCallee]
        in_ddp_forward: bool
        in_fsdp_hook: bool
        fsdp_call: UserLocation | None
        skipped_frame: UserLocation | None
        in_loop: bool
        in_with: UserLocation | None
        skipped_in: list[str]
        skipped_before: RanBefore | None
        higher_order_op: str | None
        op_calls: list[UserLocation]
        amp_said_at: str | None
        amp_calls: list[str]
        backward_compiled: list[str]
        backward_by_compiled_autograd: list[str]
        transform: TransformCall | None
        torch_location: UserLocation | None
        caused_by: list[str]

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
        return in_fsdp_hooks(loc)

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

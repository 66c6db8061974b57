"""torch's text of one graph break, read: its reason, explanation, hints and docs (parse_reason); where it is
(artifact_location); whether it is in DistributedDataParallel's forward (through_ddp), FSDP2's hooks (fsdp_hook_call)
or a torch.func transform the user called (transform_call); the frame Dynamo skipped after it (skipped_frame,
skipped_with). And Dynamo's own restarts, logged where a break's reason would be (internal_restart).
"""

from __future__ import annotations

import re
from typing import Any

from ...lazy_regex import lazy_compile
from ..user_locations import (UserLocation, is_framework_file, is_python_library_file, last_code_frame, last_user_frame,
                              section, traceback_frames)
from . import TransformCall

ARTIFACT = "dynamo_graph_break_reason"
BREAK_HEADER = lazy_compile(r"^Graph break in user code at (?P<file>.+):(?P<line>\d{1,9})\s*$", re.M)
_CONTEXT = "Encountered graph break when attempting to trace"
# "Encountered graph break that we cannot resume from. ... Graph break encountered:" (torch 2.11) and "Failed to
# handle graph break gracefully. ... Graph break encountered:" (2.14) end their line before the reason.
_WRAPPED = "Graph break encountered:"
_DOCS = lazy_compile(r"please visit: (\S+)")
_SECTION_STARTS = ("Hint:", "Developer debug context:", "For more details")
# A break inside the function a higher-order op calls (torch 2.13 adds the line under the reason): "Higher Order
# Operator: torch.utils.checkpoint.checkpoint". Dynamo captures such a call whole or not at all: the whole call ran
# eagerly (checkpoint is torch._disable_dynamo, so nothing under it was compiled either).
_HIGHER_ORDER_OP = lazy_compile(r"^[ \t]*Higher Order Operator: (?P<op>\S{1,300})[ \t]*$", re.M)
# DistributedDataParallel's file, and Dynamo's: a break in DDP's own forward (through_ddp) is not the user's
# (wording.py's DDP_NOTE says what to do).
DDP_FILE = lazy_compile(r"(^|[/\\])torch[/\\]nn[/\\]parallel[/\\]distributed\.py$")
_DYNAMO_FILE = lazy_compile(r"(^|[/\\])torch[/\\]_dynamo[/\\]")
# FSDP2's files (fully_shard): a break in its hooks (fsdp_hook_call) is not the user's (wording.py's fsdp_note says
# what to do).
FSDP2_FILE = lazy_compile(r"(^|[/\\])torch[/\\]distributed[/\\]fsdp[/\\]_fully_shard[/\\]")
# torch.func's transforms (vmap, grad, jacrev, ...) are torch/_functorch/'s code. Dynamo inlines a transform the user's
# compiled code calls; a graph break inside it (in the function it transforms, or in the transform's own code) makes
# Dynamo give the transform's whole call up: it runs eagerly, and the functions it calls are compiled frame by frame.
FUNCTORCH_FILE = lazy_compile(r"(^|[/\\])torch[/\\]_functorch[/\\]")
# The transform as the user's line calls it (`jacrev(energy)(x)`, `torch.func.vmap(...)`): its first such call.
_TRANSFORM_CALL = lazy_compile(r"(?<![\w.])(?:torch\.func\.|func\.|functorch\.)?"
                               r"(vmap|grad_and_value|grad|jacrev|jacfwd|hessian|vjp|jvp|linearize)\s*\(")
# A restart torch gave no reason for is logged as the exception's type (convert_frame: `e.restart_reason or
# str(type(e))`). These are Dynamo's own restarts, no graph break: it traces the same frame again, whole
# (TensorifyScalarRestartAnalysis: a Python float it had made dynamic must be specialized after all).
_INTERNAL_RESTART = lazy_compile(
    r"^<class '(?:torch\._dynamo\.exc\.)?(?P<kind>TensorifyScalar|Unspecialize|CompileCollective)RestartAnalysis'>$")


def internal_restart(reason: str) -> re.Match[str] | None:
    """The match of a restart reason that is one of Dynamo's own restarts (its group "kind"), else None."""
    if "RestartAnalysis'>" not in reason:  # (a graph break's reason, nearly every one: no pattern compiled)
        return None
    return _INTERNAL_RESTART.match(reason)


# Dynamo could not go on after a graph break ("Failed to handle graph break gracefully. Skipping the function and
# falling back to eager"; torch/_dynamo/symbolic_convert.py): no exception reached the program, fullgraph or not; the
# frame it names in "frame skipped: forward (/path/x.py line 43)" ran eagerly, all of it. The break's own text and the
# failed compile's reason both say so: the graph-breaks section, the errors, check and diff word it alike.
_SKIPPED_FRAME = lazy_compile(r"frame skipped: (?P<function>\S{1,1000}) \((?P<file>.{1,4000}?) line (?P<line>\d{1,9})\)")
_SKIPPING = ("Skipping the function and falling back to eager", "Skipping the frame and falling back to eager")
IN_LOOP = "graph break in loop"  # the second graph break torch 2.13 names when the first is inside a for/while loop
# A break inside a `with` block whose context manager Dynamo cannot rebuild after a break (a user's
# @contextlib.contextmanager): torch 2.13 names no frame then ("Skipping the function and falling back to eager" only),
# but attributes the context manager's exit to the `with` line ("WithExitFunctionVariable() originated from:").
_WITH_ORIGIN = lazy_compile(r'WithExitFunctionVariable\(\) originated from:\n[ \t]*File "(?P<file>[^"\n]{1,4000})", '
                            r"line (?P<line>\d{1,9})[^\n]{0,1000}\n(?P<code>[^\n]{0,1000})")


def skipped_frame(text: str, compiled: UserLocation | None = None) -> UserLocation | None:
    """The function Dynamo gave up after a graph break and ran eagerly, where torch's text says it did; else, where the
    text says only that it skipped one, compiled (the frame the break's compile compiled)."""
    if not any(words in text for words in _SKIPPING):
        return None
    m = _SKIPPED_FRAME.search(text)
    return UserLocation(m["file"], int(m["line"]), m["function"]) if m else compiled


def skipped_with(text: str) -> UserLocation | None:
    """The `with` line a break Dynamo could not resume from is inside (`with timer(times):`), where torch's text
    names one; None for any other break."""
    if not any(words in text for words in _SKIPPING):
        return None
    m = _WITH_ORIGIN.search(text)
    return UserLocation(m["file"], int(m["line"]), code=m["code"].strip()) if m else None


def parse_reason(text: str) -> dict[str, Any]:
    """Split torch's reason text into reason, context, explanation, hints, docs url."""
    body = text
    if "Graph Break Reason:" in body:
        body = body.split("Graph Break Reason:", 1)[1]
    body = body.split("User code traceback:", 1)[0].split("\nTraceback (most recent call last):", 1)[0].strip()
    lines = body.splitlines()
    context = None
    rest = lines
    # torch's wrappers name the situation on the first line and the graph break's own reason on the next one.
    if lines and (lines[0].strip().startswith(_CONTEXT) or lines[0].rstrip().endswith(_WRAPPED)):
        context = lines[0].strip()
        rest = lines[1:]
    reason = next((line.strip() for line in rest if line.strip()), context or "")
    explanation: list[str] = []
    hints: list[str] = []
    in_explanation = False
    for line in rest:
        stripped = line.strip()
        if stripped.startswith("Explanation:"):
            in_explanation = True
            explanation.append(stripped[len("Explanation:"):].strip())
        elif stripped.startswith(_SECTION_STARTS):
            in_explanation = False
            if stripped.startswith("Hint:"):
                hints.append(stripped[len("Hint:"):].strip())
        elif in_explanation:
            explanation.append(line.rstrip())
    docs = _DOCS.search(body)
    higher_order = _HIGHER_ORDER_OP.search(body)
    import textwrap  # here, not at the top: only logs with graph breaks need it (start-up time)

    # Continuation lines keep torch's indentation relative to the first line only.
    explanation_text = "\n".join(explanation[:1] + [textwrap.dedent("\n".join(explanation[1:]))]).strip()
    return {
        "reason": reason,
        "context": context,
        "explanation": explanation_text or None,
        "hints": hints,
        "docs_url": docs.group(1) if docs else None,
        "text": body,
        "higher_order_op": higher_order["op"] if higher_order else None,
    }


def artifact_location(text: str) -> UserLocation | None:
    frame = last_user_frame(text, ("User code traceback:",)) or last_code_frame(text, ("User code traceback:",))
    header = BREAK_HEADER.search(text)
    if header is None:
        return frame
    filename, line = header["file"], int(header["line"])
    if frame is not None and frame.key == (filename, line):
        return frame
    # The break is where the header says; the traceback's frame there gives its function and code (a break in a
    # library the user runs, transformers' loss_function, under the user's line that called the model).
    body = section(text, "User code traceback:")
    there = [f for f in traceback_frames(body) if f.key == (filename, line)] if body else []
    return there[-1] if there else UserLocation(filename, line, None, None)


def through_ddp(text: str, location: UserLocation | None) -> bool:
    """The break is in DistributedDataParallel's own code: at a line of its file, or in what that line called of
    Python's library (contextlib, for the skipped _inside_ddp_forward) and of Dynamo's polyfills. A break in the user's
    model, under DDP's forward, is the user's."""
    frames = traceback_frames(section(text, "User code traceback:") or text)
    if location is not None and (not frames or frames[-1].key != location.key):
        frames.append(location)
    for frame in reversed(frames):  # innermost first
        if DDP_FILE.search(frame.filename):
            return True
        if not (is_python_library_file(frame.filename) or _DYNAMO_FILE.search(frame.filename)):
            return False
    return False


def fsdp_hook_call(text: str, location: UserLocation | None) -> tuple[bool, UserLocation | None]:
    """Whether the break is in FSDP2's hooks (at a line of torch/distributed/fsdp/_fully_shard/, or in what that line
    called of Dynamo's and Python's library: the torch._dynamo.disable it calls), and the user's frame that called the
    sharded module (the innermost frame outside torch before FSDP's; None where the traceback names none)."""
    frames = traceback_frames(section(text, "User code traceback:") or text)
    if location is not None and (not frames or frames[-1].key != location.key):
        frames.append(location)
    for i in range(len(frames) - 1, -1, -1):  # innermost first
        if FSDP2_FILE.search(frames[i].filename):
            caller = next((f for f in reversed(frames[:i]) if not is_framework_file(f.filename)), None)
            return True, caller
        if not (is_python_library_file(frames[i].filename) or _DYNAMO_FILE.search(frames[i].filename)):
            return False, None
    return False, None


def transform_call(text: str) -> TransformCall | None:
    """The torch.func transform the break is inside: the outermost user frame of its traceback that calls into
    torch/_functorch/ (jacobian's `return jacrev(energy)(x)`), and the transform its code names; None outside one."""
    frames = traceback_frames(section(text, "User code traceback:") or "")
    for caller, callee in zip(frames, frames[1:]):
        if FUNCTORCH_FILE.search(callee.filename) and not is_framework_file(caller.filename):
            named = _TRANSFORM_CALL.search(caller.code or "")
            return TransformCall(caller, named[1] if named else None)
    return None

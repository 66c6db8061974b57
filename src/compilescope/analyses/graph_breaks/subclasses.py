"""Tensor subclasses Dynamo could not trace: the classes a guard tree types as tensor classes (tensor_classes), what
to do where a break or failure names an object of one (untraced_subclass), and the __torch_dispatch__ frames Dynamo
compiled on their own because it skipped the frame that called them (dispatch_compiled_alone).
"""

from __future__ import annotations

import weakref

from ...lazy_regex import lazy_compile
from ...model.ids import compilation_key
from ...model.trace import Compile, Trace
from ..compiled_frames import compiled_location
from ..user_locations import last_user_stack_frame
from . import CompiledCallee
from .compile_index import DISPATCH, CompileIndex

# Dynamo met an object it cannot put in the graph as an argument of an op (`x @ self.weight`): torch's debug context
# names its variable, `UserDefinedObjectVariable(ScaledTensor)`. A tensor subclass Dynamo cannot trace reads so.
UNTRACED_OBJECT = lazy_compile(r"UserDefinedObjectVariable\((?P<cls>[A-Za-z_]\w{0,200})\)")
# A guard tree names a class object it checks with its type: a torch.Tensor subclass's is torch._C._TensorMeta.
_TENSOR_CLASS = "type=<class 'torch._C._TensorMeta'>"
_GLOBAL_GUARDED = lazy_compile(r"GuardManager: source=G\['(?P<cls>[^'\n]{1,300})'\], ")
SUBCLASS_STEP = (
    "{cls} reached the op as a plain Python object (Dynamo's UserDefinedObjectVariable), not a tensor{proof}. Dynamo "
    "traces a wrapper subclass (one with __torch_dispatch__) only when it implements __tensor_flatten__ (the "
    "attribute names of its inner tensors, and its other state as metadata) and __tensor_unflatten__ (rebuilding it "
    "from them): add both to {cls}, and AOTAutograd compiles with its inner tensors. Else keep {cls} out of the "
    "compiled function.")
# Each trace's tensor_classes, kept while the trace lives: asked per break and per failed compile (graph breaks and
# errors alike), the guard trees are read once (read per question, 2,000 compiles' breaks took 31 s).
_TENSOR_CLASSES: dict[int, frozenset[str]] = {}


def tensor_classes(trace: Trace) -> frozenset[str]:
    """The globals (G['ScaledTensor']) some guard tree of the log types as a tensor class (torch._C._TensorMeta): the
    torch.Tensor subclasses a compile guarded on. Read from the trees on the first question about the trace."""
    known = _TENSOR_CLASSES.get(id(trace))
    if known is None:
        known = frozenset(m["cls"] for entry in trace.compiles.values() for a in entry.artifacts
                          if a.name == "dynamo_cpp_guards_str" and a.payload is not None
                          for line in trace.payload_text(a.payload).splitlines() if _TENSOR_CLASS in line
                          for m in _GLOBAL_GUARDED.finditer(line))
        _TENSOR_CLASSES[id(trace)] = known
        weakref.finalize(trace, _TENSOR_CLASSES.pop, id(trace), None)  # (its id may be another trace's after)
    return known


def untraced_subclass(trace: Trace, text: str) -> str | None:
    """What to do where a graph break or failure names an object of a class Dynamo could not trace as an argument
    (`UserDefinedObjectVariable(ScaledTensor)`): a tensor subclass without __tensor_flatten__, said so where a guard
    tree of the log types the class as a tensor class; None where the text names no such object."""
    m = UNTRACED_OBJECT.search(text) if "to proxy" in text else None
    if m is None:
        return None
    cls = m["cls"]
    proof = ("; it is a torch.Tensor subclass (a guard of this log checks it as a tensor class)"
             if cls in tensor_classes(trace) else ", if it is a torch.Tensor subclass of yours")
    return SUBCLASS_STEP.format(cls=cls, proof=proof)


def dispatch_compiled_alone(index: CompileIndex, skipped: list[Compile], text: str = "") -> list[CompiledCallee]:
    """The __torch_dispatch__ frames Dynamo compiled on their own because it skipped the frames `skipped` compiled
    (a graph break it could not resume from): the skipped frame ran eagerly, so each op on a wrapper subclass reached
    its __torch_dispatch__, which Dynamo compiled as a frame (tensor_subclasses.py: forward skipped at [1/0], then
    ScaledTensor.__torch_dispatch__ as [2/0] and [2/1]). Their stacks do not pass through the break's line (the eager
    frame is not on Dynamo's stack): they are known by the user's line that called both, [1/0] and [2/0] from main's
    `compiled(...)`; every compile of such a frame is listed. text: the break's, whose UserDefinedObjectVariable names
    the subclass. index: the log's (compile_index)."""
    callers = {loc.key for e in skipped if (loc := last_user_stack_frame(e.stack[:-1] if e.stack else None))}
    if not callers:
        return []
    m = UNTRACED_OBJECT.search(text)
    found = []
    for entries in index.dispatch.values():
        if not any((loc := last_user_stack_frame(e.stack[:-1] if e.stack else None)) is not None
                   and loc.key in callers for e in entries):
            continue
        start = compiled_location(next((e for e in entries if e.metrics), entries[0]))
        if start is None:
            continue
        callee = CompiledCallee(f"{m['cls']}.{DISPATCH}" if m else DISPATCH, start)
        callee.compile_ids = list(dict.fromkeys(compilation_key(e.compile_id) for e in entries if e.compile_id))
        found.append(callee)
    return found

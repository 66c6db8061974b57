"""Tensor subclasses Dynamo could not trace: what to do where a break or failure names an object of one
(untraced_subclass; the classes the guard trees type as tensor classes are GuardTrees.tensor_classes), and the
__torch_dispatch__ frames Dynamo compiled on their own because it skipped the frame that called them
(dispatch_compiled_alone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy_regex import lazy_compile
from ...model.ids import compilation_key
from ...model.trace import Compile
from ..compiled_frames import compiled_location
from ..installed_guards import GuardTrees
from ..user_locations import last_user_stack_frame
from . import DISPATCH, CompiledCallee

if TYPE_CHECKING:
    from .compile_index import CompileIndex

# Dynamo met an object it cannot put in the graph as an argument of an op (`x @ self.weight`): torch's debug context
# names its variable, `UserDefinedObjectVariable(ScaledTensor)`. A tensor subclass Dynamo cannot trace reads so.
UNTRACED_OBJECT = lazy_compile(r"UserDefinedObjectVariable\((?P<cls>[A-Za-z_]\w{0,200})\)")
SUBCLASS_STEP = (
    "{cls} reached the op as a plain Python object (Dynamo's UserDefinedObjectVariable), not a tensor{proof}. Dynamo "
    "traces a wrapper subclass (one with __torch_dispatch__) only when it implements __tensor_flatten__ (the "
    "attribute names of its inner tensors, and its other state as metadata) and __tensor_unflatten__ (rebuilding it "
    "from them): add both to {cls}, and AOTAutograd compiles with its inner tensors. Else keep {cls} out of the "
    "compiled function.")


def untraced_subclass(guard_trees: GuardTrees, text: str) -> str | None:
    """What to do where a graph break or failure names an object of a class Dynamo could not trace as an argument
    (`UserDefinedObjectVariable(ScaledTensor)`): a tensor subclass without __tensor_flatten__, said so where a guard
    tree of the log types the class as a tensor class (guard_trees: the log's); None where the text names no such
    object."""
    m = UNTRACED_OBJECT.search(text) if "to proxy" in text else None
    if m is None:
        return None
    cls = m["cls"]
    proof = ("; it is a torch.Tensor subclass (a guard of this log checks it as a tensor class)"
             if cls in guard_trees.tensor_classes() else ", if it is a torch.Tensor subclass of yours")
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

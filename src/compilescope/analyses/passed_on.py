"""Which of the user's tensors a compiled frame's argument is: the argument their call passed (`t`, where `cm(x, t)`
calls `forward(self, x, target)`), or one a library function compiled around it passed on to a frame compiled apart
(forward's `return loss3(out, target)`: loss3's target is the user's t; its pred is forward's `out`, made by the
library). Read from the log: the call's text on the stack, the frames' argument order in their guard trees, and the
library's call of the frame in the traceback of the graph break that compiled it apart."""

from __future__ import annotations

from typing import NamedTuple

from ..lazy_regex import lazy_compile
from ..model.ids import CompileId
from ..model.payloads import PayloadRef
from ..model.trace import Compile, Trace
from .compiled_frames import CompiledFrames
from .graph_breaks.reason_text import ARTIFACT as GRAPH_BREAK_ARTIFACT
from .installed_guards import (GUARDS_ARTIFACT, GuardTree, GuardTrees, tree_aliases, tree_argument_slot, tree_mentions,
                               tree_reads_local)
from .user_locations import (CallArgument, UserLocation, call_argument, called_bound, called_inside_compiled_code,
                             section, traceback_frames)

_DEPTH = 8  # library functions that pass a tensor on, one into the next, followed at most


# A frame's argument as the user's words name a source of it: its own name (`target`, `target.size()[0]`), or a keyword
# its **kwargs took (`kwargs['input_ids'].size()[1]`: the call's input_ids=); an item of *args is none (its place in
# the call is not the tuple's).
_ARGUMENT = lazy_compile(r"^(?:kwargs\[['\"](?P<key>\w{1,200})['\"]\]|(?P<name>[A-Za-z_]\w{0,200}))(?P<rest>(?:\..*)?)$")


def argument_of(source: str) -> tuple[str, str] | None:
    """The frame's argument a source (in the user's words: user_source_name's) is, and what of it: ("target",
    ".size()[0]"), ("input_ids", ".size()[1]") of kwargs['input_ids'].size()[1]; None where it is none of them."""
    m = _ARGUMENT.match(source)
    if m is None or (m["name"] == "kwargs"):
        return None
    return m["key"] or m["name"], m["rest"]


class Passed(NamedTuple):
    """Where a frame's argument came from: the user's call's argument (argument, None where its text does not show
    it), through the library functions that passed it on, outermost first (("forward",) for loss3's target); or
    made_by: the library function whose own value it is (forward, for loss2's pred: its local `out`), made_at: its
    line that passed the value on (forward's `return loss2(target, out)`). (A NamedTuple: a placement's working, never
    saved.)"""

    argument: CallArgument | None
    through: tuple[str, ...] = ()
    made_by: str | None = None
    made_at: UserLocation | None = None

    def as_argument(self, function: str | None, local: str) -> str:
        """The frame's argument `local` in words, as recompiles' advice and the dynamic shapes section both say it:
        "forward's target", "loss3's target, which forward passes on"; a frame named by its model (function:
        "GPT2LMHeadModel's forward") "input_ids of GPT2LMHeadModel's forward", not a possessive of a possessive."""
        on = f", which {' and '.join(self.through)} passes on" if self.through else ""
        if function is not None and "'s " in function:
            return f"{local} of {function}{on}"
        return f"{function or 'the function'}'s {local}{on}"

    def users_name(self, local: str) -> str | None:
        """The name the user's call passed the argument by, where it settles one that is not the frame's own
        (`t`, for forward's target); None: the frame's own name is the user's, or the call passed an expression."""
        name = self.argument.name if self.argument is not None else None
        return None if name is None or (name == local and not self.through) else name


def unsettled_name(function: str | None, local: str) -> str | None:
    """A library frame's argument the user's call passed, where the log does not settle which of the call's tensors
    it is, in words that cannot read as another tensor of the user's: "forward's x", never torch's bare x. The log
    holds the call's line only, not the lines before it, which may bind x to another tensor (`x = torch.ones(2, 4)`,
    then `cm(*pair)`: forward's x is pair's t), so a line that names no x settles nothing either. None where torch's
    name is no variable's (a wrapper's args[0]): it stays."""
    return Passed(None).as_argument(function, local) if local.isidentifier() else None


class PassedOn:
    """Each frame's arguments traced back to the user's call; the log's graph break tracebacks and guard trees read
    once for a report's recompiles, when a frame first asks."""

    def __init__(self, trace: Trace, compiled_frames: CompiledFrames, guard_trees: GuardTrees) -> None:
        self._trace = trace
        self._compiled_frames = compiled_frames
        self._guard_trees = guard_trees
        # a frame's (compiled autograd id, frame id) -> the first of its guard trees (its arguments' order is its code's)
        self._guards: dict[tuple, PayloadRef] | None = None
        self._breaks: list[tuple[Compile, list[UserLocation]]] | None = None

    def _read(self) -> tuple[dict[tuple, PayloadRef], list[tuple[Compile, list[UserLocation]]]]:
        if self._guards is None or self._breaks is None:
            self._guards, self._breaks = {}, []
            for cid, entry in self._trace.compiles.items():
                if cid is None:
                    continue
                for artifact in entry.artifacts:
                    if artifact.payload is None:
                        continue
                    if artifact.name == GUARDS_ARTIFACT and _frame(cid) not in self._guards:
                        self._guards[_frame(cid)] = artifact.payload
                    elif artifact.name == GRAPH_BREAK_ARTIFACT:
                        body = section(self._trace.payload_text(artifact.payload) or "", "User code traceback:")
                        if body:
                            self._breaks.append((entry, traceback_frames(body)))
        return self._guards, self._breaks

    def _tree(self, cid: CompileId) -> GuardTree | None:
        payload = self._read()[0].get(_frame(cid))
        return self._guard_trees.of(payload) if payload is not None else None

    def of(self, cid: CompileId | None, function: UserLocation | None, local: str, depth: int = 0) -> Passed | None:
        """Where the argument `local` of the compilation's frame came from (function: the frame's code); None where
        the log does not show it, or where the local is a container its tree reads items of (loss_star(*args)'s args,
        a tuple: its place in the call is its first item's, which is no tensor the call passed as args). Recompiles'
        failed checks and dynamic shapes' symbols, one rule."""
        # (a resume function's arguments are the locals it carries across a graph break: placed elsewhere)
        if cid is None or function is None or depth > _DEPTH or (function.function or "").startswith(
                "torch_dynamo_resume_in_"):
            return None
        breaks = self._read()[1]
        tree = self._tree(cid)
        if tree is None or _container(tree, local):
            return None
        stack = self._compiled_frames.stack(cid)
        if not called_inside_compiled_code(stack):
            bound = called_bound(stack)
            caller = self._compiled_frames.called_from(cid)
            if bound is None or caller is None:
                return None
            found = call_argument(caller.code, local, tree_argument_slot(tree, local), bound=bound)
            return Passed(found) if found is not None else None
        # Called by the library's code that ran compiled: its line that called the frame is in the traceback of the
        # graph break that left the frame to run apart (forward's `return loss3(out, target)`). Only the breaks of
        # frames the same line of the user's called count: two library functions may call this one, passing their
        # arguments in different orders (forward's loss3(out, target), another's loss3(target, out)).
        user_line = self._compiled_frames.called_from(cid)
        libraries = {(broken.compile_id, frames[i - 1].key, frames[i - 1].code): (broken, frames[i - 1])
                     for broken, frames in breaks for i in range(1, len(frames))
                     if frames[i].filename == function.filename and frames[i].function == function.function
                     and frames[i - 1].code and broken.compile_id is not None and user_line is not None
                     and _same_line(self._compiled_frames.called_from(broken.compile_id), user_line)}
        if len({(key, code) for _, key, code in libraries}) != 1:
            return None
        broken, line = next(iter(libraries.values()))
        found = call_argument(line.code, local, tree_argument_slot(tree, local), function.function)
        if found is None:
            return None
        outer_tree = self._tree(broken.compile_id) if broken.compile_id is not None else None
        if outer_tree is None:
            return None
        outer_local = _outer_local(outer_tree, found)
        if outer_local is None:
            # (a name the library's tree names nowhere: its own value, made in it; anything else, not settled)
            return Passed(None, made_by=line.function, made_at=line) if _made_by(outer_tree, found) else None
        outer = self.of(broken.compile_id, line, outer_local, depth + 1)
        return Passed(outer.argument, (line.function or "?", *outer.through), outer.made_by, outer.made_at) if outer \
            else None


# What a library's call passes on of its own arguments: a name (`target`) or a keyword its **kwargs took
# (`kwargs["input_ids"]`).
_PASSED_ON = lazy_compile(r"^\s*(?:(?P<name>[A-Za-z_]\w{0,200})|kwargs\[\s*(?P<q>['\"])(?P<key>\w{1,200})(?P=q)\s*\])\s*$")


def _outer_local(tree: GuardTree, passed: CallArgument) -> str | None:
    """The library function's argument its call passed on (its tree: the function's): the local a name is, or one
    it aliases (`cm(t, t)`: target, which the tree checks only as `L['x'] is L['target']`, is x), or the keyword of
    its **kwargs (`kwargs["input_ids"]`: input_ids); None where it is none, or not settled."""
    m = _PASSED_ON.match(passed.text)
    if m is None:
        return None
    if m["key"] is not None:
        return m["key"] if tree_reads_local(tree, "kwargs") and not tree_reads_local(tree, m["key"]) else None
    name = m["name"]
    if tree_reads_local(tree, name):
        return name
    aliases = {other for other in tree_aliases(tree, name) if tree_reads_local(tree, other)}
    return next(iter(aliases)) if len(aliases) == 1 else None


def _container(tree: GuardTree, local: str) -> bool:
    """Whether the tree reads the frame's local as a container: fixes its length (`len(L['args']) == 2`, a *args
    tuple) or checks a tensor among its items (`L['args'][0]`)."""
    source = f"L['{local}']"
    return any(any(container == source for container, _ in line.lengths)
               or (line.tensor is not None and line.tensor[0].startswith(source + "[")) for line in tree.lines)


def _made_by(tree: GuardTree, passed: CallArgument) -> bool:
    """Whether the library's call passed a value of its own (forward's `out`): a name its tree, which reads the
    function's arguments (its local 0 at least), names nowhere, neither as a local nor as a global."""
    return passed.name is not None and any(line.argument is not None for line in tree.lines) \
        and not tree_mentions(tree, passed.name)


def _same_line(one: UserLocation | None, other: UserLocation) -> bool:
    return one is not None and one.key == other.key


def _frame(cid: CompileId) -> tuple:
    return cid.compiled_autograd_id, cid.frame_id

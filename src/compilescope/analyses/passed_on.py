"""Which of the user's tensors a compiled frame's argument is: the argument their call passed (`t`, where `cm(x, t)`
calls `forward(self, x, target)`), or one a library function compiled around it passed on to a frame compiled apart
(forward's `return loss3(out, target)`: loss3's target is the user's t; its pred is forward's `out`, made by the
library). Read from the log: the call's text on the stack, the frames' argument order in their guard trees, and the
library's call of the frame in the traceback of the graph break that compiled it apart."""

from __future__ import annotations

import ast

from ..lazy_regex import lazy_compile
from ..model.ids import CompileId
from ..model.payloads import PayloadRef
from ..model.records import NamedTuple
from ..model.trace import Compile, Trace
from ..wording import possessive
from .compiled_frames import CompiledFrames, UsersNames, module_label
from .graph_breaks.reason_text import ARTIFACT as GRAPH_BREAK_ARTIFACT
from .installed_guards import (GUARDS_ARTIFACT, GuardTree, GuardTrees, object_type, tree_aliases, tree_argument_slot,
                               tree_locals, tree_mentions, tree_reads_local)
from .user_locations import (CallArgument, UserLocation, call_argument, called_bound, called_inside_compiled_code,
                             called_through_torch, calls_in, code_origin, code_owner, section, traceback_frames)

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


# An item of a frame's local, as the user's words name a source of it (`args[0]`, `args[1].size()[0]`): the local, the
# item, what of it.
_ITEM = lazy_compile(r"^(?P<local>[A-Za-z_]\w{0,200})(?P<item>(?:\[[^\[\]]{1,200}\]){1,8})(?P<rest>(?:\..*)?)$")


def item_name(function: str | None, source: str) -> tuple[ArgumentName, str] | None:
    """An item of a frame's local its failed check or symbol reads (source, in the user's words: `args[0]`), which
    argument_of is not, qualified by the frame as unsettled_name qualifies a local ("loss_star's args[0]"): an item
    of loss_star's *args is no tensor of the user's, though an argparse user has an `args` of their own; and what of
    it (".size()[0]"). None where source is no item of a local, or the frame is a wrapper named by its model
    (function: "LlamaForCausalLM's forward"): its args are the *args it passes on, and the model's forward has none
    of that name, so "args[1] of LlamaForCausalLM's forward" would name nothing the user can find."""
    m = _ITEM.match(source)
    if m is None or argument_of(source) is not None or (function is not None and "'s " in function):
        return None
    return ArgumentName(Passed(None).as_argument(function, f"{m['local']}{m['item']}")), m["rest"]


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
    # The frame as the report names the wrapper that ran it, passing the user's call on whole ("GPT2LMHeadModel's
    # forward", for the forward transformers' wrapper calls with **kwargs); None: as the frame's own heading names it.
    run_by: str | None = None
    # Where the chain reaches a library frame whose argument the user's call passed but the log does not place at the
    # call (its line is cut): that argument, qualified by its frame ("forward's target"), the one name of the tensor
    # there and here; None otherwise.
    unplaced: str | None = None

    def as_argument(self, function: str | None, local: str) -> str:
        """The frame's argument `local` in words, as recompiles' advice and the dynamic shapes section both say it:
        "forward's target", "loss3's target, which forward passes on"; a frame named by its model (function:
        "GPT2LMHeadModel's forward") "input_ids of GPT2LMHeadModel's forward", not a possessive of a possessive."""
        function = self.run_by or function
        on = f", which {' and '.join(self.through)} passes on" if self.through else ""
        if function is not None and "'s " in function:
            return f"{local} of {function}{on}"
        return f"{function or 'the function'}'s {local}{on}"

    def users_name(self, local: str) -> str | None:
        """The name the user's call passed the argument by, where it settles one that is not the frame's own
        (`t`, for forward's target); None: the frame's own name is the user's, or the call passed an expression."""
        name = self.argument.name if self.argument is not None else None
        return None if name is None or (name == local and not self.through) else name


# The longest name of a tensor a label says whole (ArgumentName.short).
_LABEL_LENGTH = 60


class ArgumentName(NamedTuple):
    """A frame's argument the user's call passed, as every place of one report names it (recompiles' steps and advice,
    the dynamic shapes section; terminal, HTML and JSON alike), decided once (argument_name): name, the user's tensor
    (`ids`; an expression their call passed, in backticks: `torch.randn(n, 4)`) or, where the log does not settle
    which of theirs it is, torch's name qualified by the frame ("forward's x"); of: the frame's argument beside a
    name of the user's ("input_ids of GPT2LMHeadModel's forward"), None where name is torch's own. (A NamedTuple: a
    placement's working, never saved.)"""

    name: str
    of: str | None = None
    # name is torch's, qualified by the outermost library frame that passed the argument on ("forward's target", of:
    # "loss2's target, which forward passes on"), not the user's
    qualified: bool = False

    @property
    def users(self) -> bool:
        """Whether name is the user's (a name or an expression of their call), not torch's qualified."""
        return self.of is not None and not self.qualified

    @property
    def expression(self) -> bool:
        return self.name.startswith("`")

    @property
    def short(self) -> str:
        """name as labels say it (the step's check, its dimension, the Dynamic shapes size): an expression longer
        than _LABEL_LENGTH cut in the middle with "…" (a call's 471-character argument wrapped to 7 terminal lines,
        twice a step); the advice keeps name whole, the code the user copies. A name is never cut: the advice says
        it whole, and one tensor would be spelled two ways."""
        if not self.expression or len(self.name) - 2 <= _LABEL_LENGTH:
            return self.name
        inner = self.name[1:-1]
        keep = (_LABEL_LENGTH - 1) // 2
        return f"`{inner[:keep]}…{inner[-keep:]}`"

    def said(self, rest: str = "") -> str:
        """The argument, or what of it (rest: ".size()[1]"), with its qualifier: "ids.size()[1] (input_ids of
        GPT2LMHeadModel's forward)", "forward's x.size()[0]"; an expression's backticks kept only where it stands
        alone, and one that is no name, attribute, item or call's result in parentheses before rest
        ("(-t).size()[0]", never "-t.size()[0]", which reads as minus t's size); a name in words whose tensor is not
        its last word in parentheses too ("(target of Net3's forward).size()[0]", never "target of Net3's
        forward.size()[0]", which reads as the size of Net3's forward); short."""
        name = self.short
        if rest and self.expression:
            name = name[1:-1] if _takes_a_suffix(self.name[1:-1]) else f"({name[1:-1]})"
        elif rest and not self.users and " of " in name:
            name = f"({name})"
        return f"{name}{rest} ({self.of})" if self.of is not None else f"{name}{rest}"

    def dimension(self, dim: str) -> str:
        """A dimension of it, as a recompile step says what it made dynamic (its failed check's line, just above,
        qualifies the name): "ids' dimension 1"; "dimension 0 of forward's x", of `batch["x"]`, where a possessive
        would read as another tensor's."""
        if self.users and not self.expression:
            return f"{possessive(self.short)} dimension {dim}"
        return f"dimension {dim} of {self.short}"


def _takes_a_suffix(code: str) -> bool:
    """Whether an expression reads as one value with `.size()[0]` after it: a name, an attribute, an item or a call
    (`t`, `obj.t`, `batch["x"]`, `torch.randn(n, 4)`), not an operation (`-t`, `a * 1.0`), whose operand would take
    it. Code that does not parse (cut, or too deep) takes parentheses, the safe way."""
    try:
        node = ast.parse(code, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))


def argument_name(passed: Passed | None, function: str | None, local: str) -> ArgumentName | None:
    """The one name of the argument `local` of a library's frame, placed at the user's call that passed it in (a
    frame the report names function: "forward", "GPT2LMHeadModel's forward"), for every place that says it: where
    passed (PassedOn.of) settles the user's tensor, theirs (`t`, qualified "forward's target"); where it settles an
    expression, its text; where it settles nothing, torch's name qualified by the frame (unsettled_name). None where
    torch's name stays as it is: the user's own (the call passed `x` as x), a value the library made (passed.made_by),
    or no variable's (args[0])."""
    if passed is not None and passed.made_by is not None:
        return None
    if passed is not None and passed.argument is None and passed.unplaced is not None:
        # (passed on from a library frame whose own argument is not placed: named as that one is, the chain beside)
        return ArgumentName(passed.unplaced, passed.as_argument(function, local), qualified=True)
    if passed is None or passed.argument is None:
        unsettled = unsettled_name(function, local)
        return ArgumentName(unsettled) if unsettled is not None else None
    users = passed.users_name(local)
    if users is not None:
        return ArgumentName(users, passed.as_argument(function, local))
    if passed.argument.name is not None:
        return None
    return ArgumentName(f"`{passed.argument.text}`", passed.as_argument(function, local))


def unreached_name(function: str | None, code: UserLocation | None, caller: UserLocation | None,
                   local: str) -> ArgumentName | None:
    """The argument `local` of a library's function the user compiled themselves (torch.compile(Net3.forward); code:
    the frame's), whose stack holds no line of theirs (caller: None): the local (target) is no name in scope at their
    call, so it is qualified by the frame as unsettled_name qualifies ("forward's target") and advised in words, not
    as mark_dynamic(target, 0). None for the user's own code, or a frame their line called."""
    if caller is not None or code is None or code_origin(code.filename) is None:
        return None
    unsettled = unsettled_name(function, local)
    return ArgumentName(unsettled) if unsettled is not None else None


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

    def __init__(self, trace: Trace, compiled_frames: CompiledFrames, guard_trees: GuardTrees,
                 names: UsersNames | None = None) -> None:
        self._trace = trace
        self._compiled_frames = compiled_frames
        self._guard_trees = guard_trees
        # (the report's names of wrapper frames, the caller's: made here only where it has none)
        self._names = names if names is not None else UsersNames(trace, guard_trees, compiled_frames)
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

    def qualifier(self, cid: CompileId | None, function: str | None) -> str | None:
        """The frame's name as its arguments' words qualify them (function: the report's name for it), except where it
        would read as the user's own function whose line called the frame: the user's compiled Mine.forward calls
        `self.model(target, a)` into Net3's forward, whose "forward's target" reads as the user's target (it is
        their a). There, by the class of the module it runs where its guard tree types self ("Net3's forward"), else
        by the package its file is in ("mylib's forward"), else by its file ("__init__.py's forward"): never the
        bare name, which "the function's target" said. The user's own frames stay as they are (their line is their
        code), and their trees unread: only a clash reads one."""
        caller = self._compiled_frames.library_caller(cid) if cid is not None and function is not None else None
        if cid is None or caller is None or caller.function != function:
            return function
        payload = self._read()[0].get(_frame(cid))
        cls = object_type(self._trace.payload_text(payload), "L['self']") if payload is not None else None
        if cls:
            return module_label(cls.rsplit(".", 1)[-1])
        # (library_caller found the frame's code, a library's file)
        filename = getattr(self._compiled_frames.compiled(cid), "filename", "") or ""
        owner = code_owner(filename) or possessive(filename.replace("\\", "/").rsplit("/", 1)[-1] or "library")
        return f"{owner} {function}"

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
            # (a keyword is bound by its name, whatever passed the module or self: torch's machinery alone between
            # the line and the frame passes it on as the line passed it)
            by_keyword = _in_kwargs(tree, local)
            if caller is None or (bound is None and not (by_keyword and called_through_torch(stack))):
                return None
            found = call_argument(caller.code, local, tree_argument_slot(tree, local), bound=bool(bound),
                                  by_keyword=by_keyword)
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
        outer_tree = self._tree(broken.compile_id) if broken.compile_id is not None else None
        spread = _spread_keyword(line.code, local, outer_tree) if found is None and outer_tree is not None else None
        if outer_tree is None or (found is None and spread is None) or broken.compile_id is None:
            return None
        if spread is not None:
            # (a wrapper's `func(self, *args, **kwargs)`: the keyword its call took, passed on as it came; the frame
            # is the function the wrapper runs where the report names the wrapper by it: GPT2LMHeadModel's forward)
            outer = self.of(broken.compile_id, line, spread, depth + 1)
            wrapper = self._names.function(broken.compile_id, line.function)
            if outer is None or wrapper is None:
                return None
            if wrapper.endswith(f"'s {function.function}") and _runs_decorated(line.code, outer_tree):
                return outer._replace(run_by=outer.run_by or wrapper)
            return Passed(outer.argument, (wrapper, *outer.through), outer.made_by, outer.made_at,
                          unplaced=outer.unplaced)
        assert found is not None
        outer_local = _outer_local(outer_tree, found)
        if outer_local is None:
            # (a name the library's tree names nowhere: its own value, made in it; anything else, not settled)
            return Passed(None, made_by=line.function, made_at=line) if _made_by(outer_tree, found) else None
        outer = self.of(broken.compile_id, line, outer_local, depth + 1)
        if outer is None:
            # (the library function's own argument, passed on, its call's line not settling which tensor: named as
            # that function's argument is, "forward's target", so the tensor has one name in both frames)
            named = self._names.function(broken.compile_id, line.function)
            heading = self.qualifier(broken.compile_id, named)
            if heading is None:
                return None  # (named by no function the user's line reads as theirs: this frame keeps its own name)
            unplaced = unsettled_name(heading, outer_local)
            through = heading if heading != named else line.function or "?"  # ("which Net3's forward passes on")
            return Passed(None, (through,), unplaced=unplaced) if unplaced is not None else None
        return Passed(outer.argument, (line.function or "?", *outer.through), outer.made_by, outer.made_at,
                      unplaced=outer.unplaced)


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


def _spread_keyword(code: str | None, local: str, tree: GuardTree) -> str | None:
    """The keyword a library's line passes on to the frame it calls as the frame's argument `local`, where that line
    is one call spreading the library function's own **kwargs (`func(self, *args, **kwargs)`) and its tree (tree)
    checks the keyword's tensor in them (`L['kwargs']['input_ids']`): local, the keyword it came by; None otherwise.
    (A keyword the call took is bound by name: *args cannot pass it too.)"""
    calls = calls_in(code) if code is not None else None
    if not calls or len(calls) != 1:
        return None
    splats = [kw.value for kw in calls[0].keywords if kw.arg is None]
    if len(splats) != 1 or not isinstance(splats[0], ast.Name) or any(kw.arg == local for kw in calls[0].keywords):
        return None
    source = f"L['{splats[0].id}']['{local}']"
    return local if any(line.tensor is not None and line.tensor[0] == source for line in tree.lines) else None


def _runs_decorated(code: str | None, tree: GuardTree) -> bool:
    """Whether a wrapper's line is its call of the function it decorates, `func(self, ...)`: func the local its tree
    types as the decorated function (L['func'], as compiled_frames reads the wrapper), self its first argument. Only
    then is the frame it calls the one the report names the wrapper by; a wrapper may call another's forward with the
    same **kwargs (`target(**kwargs)`, target = self.inner.forward)."""
    calls = calls_in(code) if code is not None else None
    if not calls or len(calls) != 1:
        return False
    func, args = calls[0].func, calls[0].args
    return (isinstance(func, ast.Name) and f"L['{func.id}']" == _DECORATED and _DECORATED in tree_locals(tree)
            and bool(args) and isinstance(args[0], ast.Name) and args[0].id == "self")


# The wrapper's local that holds the function it decorates, as its guard tree types it.
_DECORATED = "L['func']"


def _in_kwargs(tree: GuardTree, local: str) -> bool:
    """Whether the frame took `local` by keyword into its **kwargs: its tree checks a tensor at L['kwargs']['local']
    and reads no local of that name."""
    if tree_reads_local(tree, local):
        return False
    source = f"L['kwargs']['{local}']"
    attribute = source + "."
    # (a loop, not a generator: asked of every frame, over a tree of a thousand lines)
    for line in tree.lines:
        tensor = line.tensor
        if tensor is not None and (tensor[0] == source or tensor[0].startswith(attribute)):
            return True
    return False


def _container(tree: GuardTree, local: str) -> bool:
    """Whether the tree reads the frame's local as a container: fixes its length (`len(L['args']) == 2`, a *args
    tuple) or checks a tensor among its items (`L['args'][0]`)."""
    source = f"L['{local}']"
    item = source + "["
    # (a loop, not nested generators: asked of every frame, over a tree of a thousand lines, few fixing a length)
    for line in tree.lines:
        if line.tensor is not None and line.tensor[0].startswith(item):
            return True
        for container, _ in line.lengths:
            if container == source:
                return True
    return False


def _made_by(tree: GuardTree, passed: CallArgument) -> bool:
    """Whether the library's call passed a value of its own (forward's `out`): a name its tree, which reads the
    function's arguments (its local 0 at least), names nowhere, neither as a local nor as a global."""
    return passed.name is not None and any(line.argument is not None for line in tree.lines) \
        and not tree_mentions(tree, passed.name)


def _same_line(one: UserLocation | None, other: UserLocation) -> bool:
    return one is not None and one.key == other.key


def _frame(cid: CompileId) -> tuple:
    return cid.compiled_autograd_id, cid.frame_id

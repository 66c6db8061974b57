"""The frame each compilation compiled, and the stack of calls that led to it, read once from the log.

Both the recompile chains (the user's lines a library's frame was called from) and each compile's page (the frame
compiled, and where from) ask it; a module of its own, as compile_summary imports recompiles.
"""

from __future__ import annotations

import builtins
import io
import keyword
import tokenize
from collections.abc import Iterator

from ..lazy_regex import lazy_compile
from ..model.ids import CompileId
from ..model.records import NamedTuple
from ..model.trace import Compile, Trace
from .installed_guards import GUARDS_ARTIFACT, GuardSite, GuardTree, GuardTrees, tree_holds_module, tree_locals
from .user_locations import (UserLocation, code_origin, is_clipped_torch_file, is_framework_file, is_torch_file, last_user_stack_frame,
                             traceback_frames, user_source_name)


# The code a compiled frame was, as `dis` text: compilescope's hook records every frame's; torch logs a resume
# function's as `<co_name>_ORIGINAL_BYTECODE`.
ORIGINAL_BYTECODE_SUFFIX = "_ORIGINAL_BYTECODE"


def compiled_frame(entry: Compile) -> tuple[str, int, str] | None:
    """(file, first line, co_name) of the code a compile compiled: the last frame of its stack, or its metrics'."""
    if entry.stack:
        frame = entry.stack[-1]
        return frame.filename, frame.line, frame.name
    m = entry.metrics or {}
    if m.get("co_filename") and m.get("co_firstlineno") is not None:
        return str(m["co_filename"]), int(m["co_firstlineno"]), str(m.get("co_name") or "?")
    return None


def compiled_location(entry: Compile | None) -> UserLocation | None:
    """compiled_frame as a location: the function a compile compiled, at its first line."""
    frame = compiled_frame(entry) if entry is not None else None
    return UserLocation(frame[0], frame[1], frame[2]) if frame is not None else None


def compile_traceback(trace: Trace, entry: Compile) -> str:
    """The traceback a failed compile logged: its dynamo_error artifact, else its metrics' exception_stack_trace."""
    for artifact in entry.artifacts:
        if artifact.name == "dynamo_error":
            return trace.payload_text(artifact.payload)
    stack = (entry.metrics or {}).get("exception_stack_trace")
    return "\n".join(str(s) for s in stack) if isinstance(stack, list) else ""


def wrapped_function(trace: Trace, entry: Compile) -> UserLocation | None:
    """The user's function a compile's frame runs where that frame is torch's own wrapper of it: torch 2.14 compiles
    a nonstrict_trace function as external_utils.py's `inner`, which calls it, and names the user's function only in
    the failure's traceback (the first frame of the user's code there: what torch's frames called). None where the
    frame is the user's or another of torch's, or the log names no user frame under it (a compile that did not fail).
    Only the frame torch's decorator called is taken (decorators.py's `wrapped`, then the user's function): any
    other user frame in the traceback is code the compile ran into (a backend of the user's that raised), not what
    the wrapper wraps."""
    metrics = entry.metrics or {}
    filename = metrics.get("co_filename") or (entry.stack[-1].filename if entry.stack else None)
    name = metrics.get("co_name") or (entry.stack[-1].name if entry.stack else None)
    if not _is_wrap_inline(filename, name):
        return None
    text = compile_traceback(trace, entry) + "\n" + str(metrics.get("fail_reason") or "")
    frames = traceback_frames(text)
    for caller, called in zip(frames, frames[1:]):
        if (caller.function == "wrapped" and caller.filename.replace("\\", "/").endswith("_dynamo/decorators.py")
                and not is_framework_file(called.filename)):
            return called
    return None


# wrap_inline wraps a module whose forward Dynamo would not start a frame in (torch's own): torch.nn's, or a user's
# subclass keeping one (`__main__.Projection`, an nn.Linear), its local `fn` typed so by the guard tree (`GuardManager:
# source=L['fn'], ..., type=<class 'torch.nn....Sequential'>`); a function it wraps (torch.compile of a builtin,
# `type=<class 'function'>`, or a functools.partial) has no module to name.
_MODULE_CALL = ("_wrapped_call_impl", "_call_impl")  # nn.Module.__call__'s frames, in nn/modules/module.py


def _called_as_module(entries: list[Compile]) -> bool:
    """Whether a frame (torch's `inner`, a library's decorator) was called by nn.Module's __call__ (its dynamo_start
    stack's frame above it, torch's eval_frame wrapper passed over):
    torch.compile of a module (OptimizedModule) calls it so; a wrapped function is called by the compiled function."""
    for entry in entries:
        if entry.stack and len(entry.stack) >= 2:
            # (torch's wrapper of the compiled callable may sit between: gpt2_train's [_call_impl, compile_wrapper,
            # wrapper], transformers' decorator compiled as the model's forward)
            callers = [f for f in entry.stack[:-1] if not (is_torch_file(f.filename) and f.filename.replace(
                "\\", "/").endswith("_dynamo/eval_frame.py"))]
            caller = callers[-1] if callers else None
            return (caller is not None and caller.name in _MODULE_CALL and is_torch_file(caller.filename)
                    and caller.filename.replace("\\", "/").endswith("nn/modules/module.py"))
    return False


def _is_wrap_inline(filename: object, name: object) -> bool:
    """The frame is external_utils.py's `inner`: torch's wrap_inline, an extra frame around what it calls."""
    return (isinstance(filename, str) and is_torch_file(filename) and name == "inner"
            and filename.replace("\\", "/").endswith("_dynamo/external_utils.py"))


class WrappedModule(NamedTuple):
    """The module a wrapper frame runs the forward of, and the wrapper's local holding it (the user's model)."""

    cls: str  # its class's name: "LlamaForCausalLM"
    local: str  # the wrapper's local, as user_source_name writes it: "fn", "args[0]", "self"


# A library's decorator around a module's forward (transformers' deprecation.py `wrapped_func(*args, **kwargs)`,
# generic.py's `wrapper(self, *args, **kwargs)`): the function it wraps, a local `func` its guard tree guards, and the
# module it passes as self, first of its arguments, a module as the tree guards its submodules or parameters (a
# decorator around a function, torch.no_grad's, passes a tensor; torch's optimizer `wrapper` an optimizer).
_DECORATED_LOCALS = {"L['args'][0]": "args[0]", "L['self']": "self"}


def frame_trees(guard_trees: GuardTrees, entries: list[Compile]) -> Iterator[GuardTree]:
    """The parsed guard tree of each of entries that logged one, in order."""
    for entry in entries:
        payload = next((a.payload for a in entry.artifacts if a.name == GUARDS_ARTIFACT and a.payload is not None), None)
        if payload is not None:
            yield guard_trees.of(payload)


def _decorated_module(guard_trees: GuardTrees, entries: list[Compile], filename: object) -> WrappedModule | None:
    """The module whose forward a library's decorator frame runs (hf_llama's LlamaForCausalLM, compiled as
    transformers' wrapped_func): that frame is named by it, as torch's wrap_inline is. None for another frame."""
    if not isinstance(filename, str) or code_origin(filename) != "library code":
        return None
    for tree in frame_trees(guard_trees, entries):
        typed = tree_locals(tree)
        if "L['func']" not in typed:
            return None
        source = next((s for s in typed if s in _DECORATED_LOCALS), None)
        # (a self nn.Module's __call__ called the frame with is the module it called: gpt2_train's wrapper, whose tree
        # guards no submodule of self, the model's forward compiled apart)
        if source is None or not (tree_holds_module(tree, source)
                                  or (source == "L['self']" and _called_as_module(entries))):
            return None
        return WrappedModule(typed[source].rpartition(".")[2], _DECORATED_LOCALS[source])
    return None


def self_is_module(guard_trees: GuardTrees, entries: list[Compile]) -> bool:
    """Whether the frame's `self` is a module, as the first of entries' guard trees guards a submodule or parameter of
    it (a library's model's forward; an optimizer's step is no module's)."""
    return next((tree_holds_module(tree, "L['self']") for tree in frame_trees(guard_trees, entries)), False)


def wrapper_module(trace: Trace, entries: list[Compile], guard_trees: GuardTrees | None = None) -> WrappedModule | None:
    """The module a frame runs where that frame is a wrapper of it: torch.compile of a module whose forward is
    torch.nn's (Sequential; DDP, or a model DDP wraps and calls; a user's subclass that keeps its forward) compiles
    wrap_inline's `inner`, which calls the module, and the guard tree of a compilation of it (entries: the frame's)
    types its local `fn` as the module's class; a library's decorator around a model's forward passes it on
    (_decorated_module). None where the frame is another, or no guard tree of it is logged. The user's module is what
    its recompiles and compile times belong to, not torch's `inner`, and the user's model, not the wrapper's local.
    guard_trees: the log's, parsed once for the report (made here otherwise)."""
    named = next((e for e in entries if (e.metrics or {}).get("co_name") or e.stack), None)
    if named is None:
        return None
    guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)
    metrics = named.metrics or {}
    filename = metrics.get("co_filename") or (named.stack[-1].filename if named.stack else None)
    name = metrics.get("co_name") or (named.stack[-1].name if named.stack else None)
    if not _is_wrap_inline(filename, name):
        return _decorated_module(guard_trees, entries, filename)
    for tree in frame_trees(guard_trees, entries):
        path, _, cls = tree_locals(tree).get("L['fn']", "").rpartition(".")
        if path:
            # (a class outside torch.nn is a module only where nn.Module's __call__ called the frame)
            return WrappedModule(cls, "fn") if path.startswith("torch.nn.") or _called_as_module(entries) else None
    return None


def wrapped_module(trace: Trace, entries: list[Compile], guard_trees: GuardTrees | None = None) -> str | None:
    """The class of the module a frame runs where that frame is a wrapper of it ("Sequential",
    "DistributedDataParallel", a user's "Projection" subclassing nn.Linear, transformers' "LlamaForCausalLM"):
    wrapper_module's class."""
    found = wrapper_module(trace, entries, guard_trees)
    return found.cls if found is not None else None


def module_label(module: str) -> str:
    """How a frame that runs a module (wrapped_module) is named: "Sequential's forward"."""
    return f"{module}'s forward"


def frame_function(trace: Trace, entry: Compile) -> tuple[str | None, str | None, int | None]:
    """(file, function, first line) of the frame a compile compiled, as the report names it: the user's function
    where the frame is torch's wrapper of it (its first line unknown: the log names the line that failed), else the
    compiled code (compilation_metrics), else the top of its stack."""
    wrapped = wrapped_function(trace, entry)
    if wrapped is not None:
        return wrapped.filename, wrapped.function, None
    metrics = entry.metrics or {}
    if metrics.get("co_filename") or metrics.get("co_name"):
        first = metrics.get("co_firstlineno")
        return metrics.get("co_filename"), metrics.get("co_name"), first if isinstance(first, int) else None
    if entry.stack:
        top = entry.stack[-1]
        return top.filename, top.name, None
    return None, None, None


class CompiledFrames:
    """The frame each compilation compiled, and the stack that led to it, alike for all its attempts: dynamo_start
    logs the stack at attempt 0 only, compilation_metrics the code (co_name, co_filename, co_firstlineno) at the last."""

    def __init__(self, trace: Trace) -> None:
        self._stacks: dict[tuple, list] = {}  # by compilation
        self._frame_stacks: dict[tuple, list] = {}  # by frame (one code object): for a compile logged without one
        self._code: dict[tuple, UserLocation] = {}  # by compilation
        for entry in trace.compiles.values():
            cid = entry.compile_id
            if cid is None:
                continue
            if entry.stack:
                self._stacks.setdefault(self._compilation(cid), entry.stack)
                self._frame_stacks.setdefault(self._frame(cid), entry.stack)
            metrics = entry.metrics or {}
            if metrics.get("co_filename") and isinstance(metrics.get("co_firstlineno"), int):
                self._code.setdefault(self._compilation(cid), UserLocation(
                    str(metrics["co_filename"]), metrics["co_firstlineno"], str(metrics.get("co_name") or "") or None))

    @staticmethod
    def _compilation(cid: CompileId) -> tuple:
        return cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id

    @staticmethod
    def _frame(cid: CompileId) -> tuple:
        return cid.compiled_autograd_id, cid.frame_id

    def stack(self, cid: CompileId) -> list | None:
        """The stack Dynamo logged on starting this compilation (none for one that never started: the recompile
        limit): another compilation of the frame may have been called from elsewhere, so none is borrowed."""
        return self._stacks.get(self._compilation(cid))

    def called_from(self, cid: CompileId) -> UserLocation | None:
        """The innermost line of the user's code on this compilation's stack: what led to a frame not their own."""
        return last_user_stack_frame(self.stack(cid))

    def library_caller(self, cid: CompileId) -> UserLocation | None:
        """The user's line that called this compilation's frame where that frame is not their code (a library's,
        torch's wrapper, Python's): what they know it by. None for the user's own function."""
        compiled = self.compiled(cid)
        return self.called_from(cid) if compiled is not None and code_origin(compiled.filename) else None

    def compiled(self, cid: CompileId) -> UserLocation | None:
        """The code object the compilation compiled, else the top of its stack, else of its frame's other ones."""
        found = self._code.get(self._compilation(cid))
        if found is not None:
            return found
        stack = self.stack(cid) or (self._frame_stacks.get(self._frame(cid)) if cid.frame_id is not None else None)
        if not stack:
            return None
        top = UserLocation.from_frame(stack[-1])
        return UserLocation(top.filename, top.line, top.function)  # (the frame as compiled, not its line's text)


# The root of a source that is the module whose forward the compiled frame runs: its `self`, or, where that frame is
# a wrapper and not the user's code (CompileTime.called_from), the wrapper's local its guard tree types as that module
# (CompileTime.model_local): torch's wrap_inline's `fn` (torch.compile of a module whose forward is torch.nn's, a
# Sequential) or a decorator's `args[0]` (transformers' wrapped_func(*args) around the model's forward). The user
# knows that module as the model they compiled, never by the wrapper's local. A wrapper's other `args[0]` (a tensor
# torch.no_grad's decorator passes on, an optimizer torch's `wrapper` steps) is no model: its name stays.
_SELF = lazy_compile(r"^self(?=$|[.\[])")
# A keyword argument a wrapper frame passes on (`wrapper(self, *args, **kwargs)`, `inner(*args, **kwargs)`): the
# wrapper's `kwargs` is its own local; the keyword is the one the call wrote (generate()'s `input_ids=`).
_KEYWORD = lazy_compile(r"^kwargs\['(\w+)'\](?=$|[.\[])")


def as_the_users_model(source: str, wrapped: bool, model_local: str | None = None, keep_self: bool = False) -> str:
    """"model.blocks" of "self.blocks"; where the frame is a wrapper's (wrapped), "model.model.layers" of
    "args[0].model.layers" and "model" of "fn" where that local is the module it runs (model_local), and "input_ids"
    of "kwargs['input_ids']" (the keyword passed on); the source as it is otherwise (a function's own local: the
    user's name). keep_self: `self` stays (where the text names what
    the model's forward reads, as its code does)."""
    if keep_self and _SELF.match(source):
        return source
    if not wrapped:
        return _SELF.sub("model", source, count=1)
    if model_local is not None and source.startswith(model_local) and source[len(model_local):][:1] in ("", ".", "["):
        return "model" + source[len(model_local):]
    return _KEYWORD.sub(r"\1", source, count=1)


def names_self(source: str) -> bool:
    """The source is the frame's `self` or reached through it (`self.blocks`)."""
    return _SELF.match(source) is not None


# A wrapper's positional argument as the user's words name it (`args[0]`, `args[0].size()[0]`).
_POSITIONAL = lazy_compile(r"^args\[\d{1,6}\](?=$|[.\[])")
# A wrapper's call that passes its arguments on as they came (wrap_inline's `return fn(*args, **kwargs)`,
# torch.no_grad's decorate_context `return func(*args, **kwargs)`): the callee's parameters take them in order.
_PASSES_ON = lazy_compile(r"^(?:return )?\w{1,200}\(\*args, \*\*kwargs\)$")


def _passed_on_to(entry: Compile) -> Iterator[UserLocation]:
    """The functions a compile's user stacks (a symbol's, a guard's) show its wrapper frame passing its arguments on
    to: in each, the first frame outside torch where every frame before it is torch's, each passing its arguments on
    (_PASSES_ON)."""
    for record in (*entry.symbols, *entry.guards_added):
        stack = record.get("user_stack")
        if not isinstance(stack, list) or len(stack) < 2:
            continue
        for i, loc in enumerate(UserLocation.from_frame(f) for f in stack):
            if not is_torch_file(loc.filename):
                if i > 0:
                    yield loc
                break
            if not _PASSES_ON.match(loc.code or ""):
                break


def _argument_sites(tree: GuardTree) -> Iterator[tuple[str, GuardSite]]:
    """Each TENSOR_MATCH of a tree on a wrapper's positional argument itself (`args[0]`), with its site: the argument's
    first use, in the function it was passed on to."""
    for line in tree.lines:
        site, tensor = line.site, line.tensor
        if site is None or tensor is None or not site.path:
            continue
        argument = user_source_name(tensor[0])
        if _POSITIONAL.fullmatch(argument) is not None:
            yield argument, site


def _site_in(site: GuardSite, function: UserLocation) -> bool:
    """The guard's site is in function (torch clips the site's path at the front)."""
    return (site.function == function.function
            and function.filename.replace("\\", "/").endswith(site.path.replace("\\", "/")))


def wrapped_by_passing_on(entries: list[Compile], guard_trees: GuardTrees) -> UserLocation | None:
    """The function a wrapper frame passes its own arguments on to, unchanged (_passed_on_to): nograd_wrapped's scale,
    under wrap_inline's `inner` and torch.no_grad's decorate_context. Named only where every compilation of the frame
    proves that one function, by its own user stacks or its guard tree's TENSOR_MATCH sites on the arguments: one
    code object of torch's wraps every function a decorator wraps (two_wrapped's scale and shift, both
    torch.no_grad's), so Dynamo gives them one frame, and a compilation that shows nothing may run another. None where
    some compilation shows no function, or two show two (torch's `inner` given another `fn` per compile)."""
    shown: dict[tuple, list[UserLocation]] = {}  # by compilation (attempts together): the functions its stacks show
    trees: dict[tuple, list[GuardTree]] = {}  # by compilation: its guard trees
    for entry in entries:
        cid = entry.compile_id
        key = (cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id) if cid is not None else ("?",)
        shown.setdefault(key, []).extend(_passed_on_to(entry))
        trees.setdefault(key, []).extend(frame_trees(guard_trees, [entry]))
    found = {(loc.filename, loc.function): loc for locs in shown.values() for loc in locs}
    if len(found) != 1:
        return None
    [wrapped] = found.values()
    for key, locs in shown.items():
        sites = [site for tree in trees[key] for _, site in _argument_sites(tree)]
        if any(not _site_in(site, wrapped) for site in sites) or not (locs or sites):
            return None
    return wrapped


def _names_read(code: str) -> set[str | None]:
    """The names a line's text reads as they are (not an attribute, `.shape`, nor a function it calls, nor Python's
    keywords and builtins): {"x"} of `if x.shape[0] == 5:`; None for a name it subscripts (`ys[1]`: an item of it, not
    it). Tokens, not a parse: the line may be a statement's
    first line only."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code.strip()).readline)
                  if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT,
                                    tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError):
        return set()
    found = set()
    for i, t in enumerate(tokens):
        after = tokens[i + 1].string if i + 1 < len(tokens) else ""
        before = tokens[i - 1].string if i > 0 else ""
        if (t.type == tokenize.NAME and not keyword.iskeyword(t.string) and before != "." and after != "("
                and not hasattr(builtins, t.string)):
            found.add(None if after == "[" else t.string)
    return found


def passed_arguments(entries: list[Compile], guard_trees: GuardTrees) -> dict[str, str]:
    """A wrapper frame's positional arguments by the name the function it passes them on to gives them
    (wrapped_by_passing_on): {"args[0]": "x"}. Each from its guard tree's TENSOR_MATCH line on the argument itself,
    whose comment is its first use, in that function: a line that reads one name only read the argument by it
    (`if x.shape[0] == 5:`). {} where a tree says otherwise (the argument first used in another function: another
    function's argument, or passed on again), or two compiles name one argument differently: the log then cannot
    tell."""
    wrapped = wrapped_by_passing_on(entries, guard_trees)
    trees = list(frame_trees(guard_trees, entries))
    one = _sites_function(entries, trees) if wrapped is None else None
    if wrapped is None and one is None:
        return {}
    found: dict[str, str] = {}
    for tree in trees:
        named: dict[int, str | None] = {}  # args[i]'s index -> the one name its first use reads it by
        for argument, site in _argument_sites(tree):
            if (wrapped is not None and not _site_in(site, wrapped)) or (
                    wrapped is None and (site.path, site.function) != one):
                return {}
            names = _names_read(site.code)
            if len(names) > 1:
                return {}
            # (`return ys[1] - 3`: an item of *ys, no name of the argument's; None)
            named.setdefault(int(argument[5:-1]), next(iter(names)) if names and None not in names else None)
        for index, name in named.items():
            # A parameter reassigned (`def shift(y, s): y = s`) reads args[1] by the name y: args[i] is named only
            # where each of args[0..i] has its first use, by a name of its own, in the tree.
            before = [named.get(i) for i in range(index + 1)]
            if name is None or None in before or len(set(before)) != len(before):
                continue
            if found.setdefault(f"args[{index}]", name) != name:
                return {}
    return found


def _sites_function(entries: list[Compile], trees: list[GuardTree]) -> tuple[str, str] | None:
    """The one function, not torch's, every argument site of the compiles' guard trees is in ((path, function)), where
    no user stack of theirs shows a function the wrapper passes on to (two_wrapped's [0/3], shift compiled with
    dynamic=False: no symbol, no stack; its tree's TENSOR_MATCH on args[0] sits at `return y - 3 ... in shift`, the
    tensor's first use, the same proof passed_arguments reads where stacks name the function); None otherwise."""
    if any(True for entry in entries for _ in _passed_on_to(entry)):
        return None
    found = {(site.path, site.function) for tree in trees for _, site in _argument_sites(tree)}
    if len(found) != 1:
        return None
    [one] = found
    return None if is_clipped_torch_file(one[0]) else one


class UsersNames:
    """A compiled frame's sources in the user's words where that frame is a wrapper, not their code (transformers'
    wrapped_func, torch's wrap_inline `inner`): the model the wrapper's local holds and a keyword the wrapper passes on
    (as_the_users_model, with `self` kept: what the model's forward reads); the source as it is for the user's own
    frames. One answer for the recompiles, the sizes table and the findings, each frame's module read once."""

    def __init__(self, trace: Trace, guard_trees: GuardTrees | None = None,
                 frames: CompiledFrames | None = None) -> None:
        self._trace = trace
        self._guard_trees = guard_trees
        self._frames = frames if frames is not None else CompiledFrames(trace)
        self._entries: dict[tuple, list[Compile]] | None = None  # frame -> its compiles, made at the first wrapper
        self._modules: dict[tuple, WrappedModule | None] = {}  # frame -> the module it runs (wrapper_module)
        # frame, or (frame, frame_compile_id) where the frame's compilations name none in common -> its positional
        # arguments the user's names
        self._arguments: dict[tuple, dict[str, str]] = {}

    def _module(self, cid: CompileId) -> WrappedModule | None:
        frame = (cid.compiled_autograd_id, cid.frame_id)
        if frame not in self._modules:
            if self._guard_trees is None:
                self._guard_trees = GuardTrees(self._trace)
            self._modules[frame] = wrapper_module(self._trace, self._frame_entries(frame), self._guard_trees)
        return self._modules[frame]

    def module_class(self, cid: CompileId) -> str | None:
        """The class of the module the compile's frame runs where that frame is a wrapper of it (wrapped_module), read
        from all the frame's compiles: a restarted attempt ([0/0_1]) logs no stack of the call that made it."""
        module = self._module(cid)
        return module.cls if module is not None else None

    def model_local(self, cid: CompileId) -> str | None:
        """The wrapper's local that holds the module it runs ("fn", "args[0]"); None where there is none."""
        module = self._module(cid)
        return module.local if module is not None else None

    def function(self, cid: CompileId, compiled: str | None) -> str | None:
        """The compile's function as the report names it (compiled: its code's name): where its frame is a wrapper,
        by the module it runs ("LlamaForCausalLM's forward") or the user's function it passes its arguments on to
        ("scale"), as compile_times names its rows."""
        if self._frames.library_caller(cid) is None:
            return compiled
        module = self._module(cid)
        if module is not None:
            return module_label(module.cls)
        if self._guard_trees is None:
            self._guard_trees = GuardTrees(self._trace)
        passed_to = wrapped_by_passing_on(self._frame_entries((cid.compiled_autograd_id, cid.frame_id)),
                                          self._guard_trees)
        return passed_to.function if passed_to is not None else compiled

    def _frame_entries(self, frame: tuple) -> list[Compile]:
        if self._entries is None:
            self._entries = {}
            for e in self._trace.compiles.values():
                if e.compile_id is not None:
                    self._entries.setdefault((e.compile_id.compiled_autograd_id, e.compile_id.frame_id), []).append(e)
        return self._entries.get(frame, [])

    def arguments(self, cid: CompileId) -> dict[str, str]:
        """The wrapper's positional arguments the function it passes them to names, where the log shows it
        (passed_arguments): {"args[0]": "x"}; {} otherwise. Where the frame's compilations run several functions
        (two_wrapped's torch.no_grad `inner`, scale's then shift's), each compilation that proves its own function is
        named by it: the frame's heading stays the wrapper's."""
        frame = (cid.compiled_autograd_id, cid.frame_id)
        if frame not in self._arguments:
            if self._guard_trees is None:
                self._guard_trees = GuardTrees(self._trace)
            self._arguments[frame] = passed_arguments(self._frame_entries(frame), self._guard_trees)
        if self._arguments[frame]:
            return self._arguments[frame]
        compilation = (*frame, cid.frame_compile_id)
        if compilation not in self._arguments:
            entries = [e for e in self._frame_entries(frame) if e.compile_id is not None
                       and e.compile_id.frame_compile_id == cid.frame_compile_id]
            assert self._guard_trees is not None
            self._arguments[compilation] = passed_arguments(entries, self._guard_trees)
        return self._arguments[compilation]

    def in_wrapper(self, cid: CompileId | None) -> bool:
        """The compile's frame is not the user's code but a library's that the user's line called (a wrapper)."""
        return cid is not None and self._frames.library_caller(cid) is not None

    def of(self, cid: CompileId | None, source: str) -> str:
        """source (in the user's words already: user_source_name's) as the user names it where the compile's frame
        is not their code: `model.model.layers` of `args[0].model.layers`, `input_ids` of `kwargs['input_ids']`, `x`
        of `args[0]` where the function the wrapper passes it to names it so (arguments)."""
        if cid is None or self._frames.library_caller(cid) is None:
            return source
        local = self.model_local(cid)
        if local is None:
            root = _POSITIONAL.match(source)
            name = self.arguments(cid).get(root[0]) if root is not None else None
            if root is not None and name is not None:
                return name + source[root.end():]
        return as_the_users_model(source, True, local, keep_self=True)

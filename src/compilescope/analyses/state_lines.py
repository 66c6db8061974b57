"""The lines of a program that may have made a state change that a recompile's guard trees show
(recompiles.StateChange): a hook registered on a module after its function was compiled (`register_forward_hook`),
a module's mode switched (`.eval()`, `.train()`, `m.training = False`), a parameter's requires_grad set
(`requires_grad_(False)`, `p.requires_grad = False`).

torch logs neither line: the guard that failed names the call that ran next (`compiled(x)`), and the change is read
from two guard trees (`L['self']._modules['block']._forward_hooks`: none, then 1). The file is searched for the calls
that make such a change (its syntax tree: comments and strings are no calls) on a receiver that can be the module:
`model.block.register_forward_hook(...)` for self.block's forward hooks (any name for `self`: the caller's own name
for the model is not in the log); `model.eval()` or `model.block.eval()` for self.block.norm's training going False
(eval() and train() set a module's children too), `self.model.eval()` where the file compiles a `model`, and
`model.block.norm.training = False` (an assignment sets that module's only), or either on the variable of a loop over
`model.modules()` or `model.block.children()`; `p.requires_grad = False` in a loop over `model.fc.parameters()` for
self.fc.weight's requires_grad; a loop over the variable of a loop holding it (`for m in model.modules(): for p in
m.parameters():`) reaches what the modules that loop yields reach, and a loop over a name the file binds once to a
list or tuple (`frozen = [model.backbone, model.neck]; for m in frozen:`) what that literal names. A mode or requires_grad the first failed guard names
itself (`self._modules['drop'].training == True`) is a change too. Text order is not run order (a registration inside an `if`, a
loop), so every match is a candidate, but for one that ran before its module was first compiled (earlier in the same
function, no loop around both); of several, the recompile's dynamo_start stack keeps those before its call in a
function it passed through (_on_stack). One alone is the line, several are each said to be one of them.
"""

from __future__ import annotations

import ast
import os
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import field

from ..lazy_regex import lazy_compile
from ..model.ids import compilation_key
from ..model.records import dataclass
from ..model.source_files import MAX_SOURCE_BYTES, NO_FILES, SourceFiles
from ..model.trace import Frame
from .recompiles import FrameRecompiles, RecompileStep, Recompiles, StateChange

MAX_SOURCE_NODES = 500_000  # ast nodes walked in one file
MAX_STEP_CHANGES = 64  # changes of one recompile step looked for (an eval() on a model of M modules changes M): _looked_for
# changes beyond those matched against the lines marked for them (_add_unsearched); the rest are counted, not matched
MAX_UNSEARCHED = 1024
# The method that adds a hook of each kind, as guard trees name the module's hook dict
HOOK_METHODS = {"_forward_hooks": ("register_forward_hook",),
                "_forward_pre_hooks": ("register_forward_pre_hook",),
                "_backward_hooks": ("register_full_backward_hook", "register_backward_hook"),
                "_backward_pre_hooks": ("register_full_backward_pre_hook",)}


@dataclass
class FileIndex:
    """What change_lines looks at in one parsed file, gathered in one walk of it: every change is matched against
    these short lists, not against a walk of the whole file of its own (steps x changes x files walks)."""

    compiled: frozenset[str]  # _compiled_names
    assigns: list[ast.Assign]  # those of an attribute to True or False (`m.training = False`)
    calls: list[ast.Call]  # `receiver.method(...)`
    # each loop over a module's parameters, modules or children (_loop_over), with the nodes in its body that set a
    # requires_grad or a training flag (`for m in model.modules(): m.training = False`)
    loops: list[tuple[ast.For, list[ast.AST]]]
    # (the ids of those nodes that set the loop's variable: what it is, the loop tells, not any name as the model)
    on_loop_variables: frozenset[int]
    # the id of each such loop whose module is the variable of a loop holding it -> that loop (`for m in
    # model.modules(): for p in m.parameters():`): m is what the outer loop yields, not any name as the model
    outer_loops: Mapping[int, ast.For]
    # the id of each loop over a name bound once to a list or tuple literal -> that literal (_named_iterables: `for m
    # in frozen:` after `frozen = [model.backbone, model.neck]` yields those two, not any module)
    named_iterables: Mapping[int, ast.expr]
    compiles: list[tuple[int, str]]  # _compile_sites
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef]  # (for the layout)
    # where the file's functions, loops and compiles are, and the answers of _before_compile so far: a cache, not
    # compared (FileLayout)
    layout: FileLayout = field(compare=False, repr=False)


def file_index(tree: ast.Module) -> FileIndex:
    """The file's FileIndex, bounded as one walk of MAX_SOURCE_NODES (a loop's body is in it, walked again once)."""
    assigns: list[ast.Assign] = []
    calls: list[ast.Call] = []
    loops: list[tuple[ast.For, list[ast.AST]]] = []
    on_loop_variables: set[int] = set()
    outer_loops: dict[int, ast.For] = {}
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    every_loop: list[ast.For | ast.AsyncFor | ast.While] = []
    bound: Counter[str] = Counter()  # (each name's bindings and changes in place: _binds)
    literals: dict[str, tuple[int, ast.expr]] = {}  # (a name -> the line and the list or tuple literal assigned to it)
    walked = 0
    for node in ast.walk(tree):
        walked += 1
        if walked > MAX_SOURCE_NODES:
            break
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, bool):
            assigns.append(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            calls.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            every_loop.append(node)
        bound.update(_binds(node))
        if (literal := _literal_bound(node)) is not None:
            literals[literal[0]] = literal[1:]
    compiles = _compile_sites(tree)
    layout = FileLayout(tree, functions, every_loop, compiles)
    named = _named_iterables([n for n in every_loop if isinstance(n, ast.For)], bound, literals, layout)
    # (ast.walk goes outer loops first, and every_loop keeps its order)
    for node in (n for n in every_loop if isinstance(n, ast.For)):
        if walked > MAX_SOURCE_NODES:
            break
        if (over := _loop_over(node, named)) is None:
            continue
        setting = []
        for inner in (n for statement in node.body for n in ast.walk(statement)):
            walked += 1
            receivers = [r for kind in ("training", "requires_grad") for to in (True, False)
                         if (r := _sets_state(inner, kind, to)) is not None]
            if receivers:
                setting.append(inner)
            if any(isinstance(r, ast.Name) and r.id == over[0] for r in receivers):
                on_loop_variables.add(id(inner))
            # (outer loops come first: of several holding it that bind the name, the innermost is kept)
            if (isinstance(inner, ast.For) and (inner_over := _loop_over(inner, named)) is not None
                    and isinstance(inner_over[2], ast.Name) and inner_over[2].id == over[0]):
                outer_loops[id(inner)] = node
        loops.append((node, setting))
    return FileIndex(_compiled_names(tree), assigns, calls, loops, frozenset(on_loop_variables), outer_loops, named,
                     compiles, functions, layout)


# The methods of a list that change it in place: a list a program changes so is not the literal it was bound to.
LIST_CHANGES = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "__setitem__", "__delitem__",
                          "__iadd__"})


def _binds(node: ast.AST) -> Iterator[str]:
    """The names the node binds, deletes or changes in place (`x = ...`, `for x in`, `def x`, `import x`, an argument
    x, `global x`, `x.append(...)`, `x[0] = ...`): a name the file binds once, to a literal, is that literal."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        yield node.id
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, ast.alias):
        yield node.asname or node.name.split(".", 1)[0]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in LIST_CHANGES:
        yield node.value.id
    elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
          and not isinstance(node.ctx, ast.Load)):
        yield node.value.id


def _literal_bound(node: ast.AST) -> tuple[str, int, ast.expr] | None:
    """(the name, the line, the literal) of `frozen = [model.backbone, model.neck]`, `quiet = model.a, model.b` (a
    list or tuple literal assigned to one name alone); None for any other node."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target = node.target
    else:
        return None
    if not (isinstance(target, ast.Name) and isinstance(node.value, (ast.Tuple, ast.List))):
        return None
    return target.id, node.lineno, node.value


def _named_iterables(loops: list[ast.For], bound: Counter[str], literals: Mapping[str, tuple[int, ast.expr]],
                     layout: FileLayout) -> dict[int, ast.expr]:
    """The id of each loop over a name (`for m in frozen:`) that the file binds once, to a list or tuple literal, in
    the loop's function or at its top level -> that literal: what the loop yields, where the code says it. (A name
    bound more than once, changed in place, or bound to anything else: the loop is over what the file cannot tell.)"""
    named: dict[int, ast.expr] = {}
    for loop in loops:
        if not isinstance(loop.iter, ast.Name) or bound[loop.iter.id] != 1:
            continue
        line, literal = literals.get(loop.iter.id, (0, None))
        if literal is not None and layout.scope(line) in (layout.scope(loop.lineno), layout.tree):
            named[id(loop)] = literal
    return named


def change_lines(tree: ast.Module, change: StateChange, index: FileIndex | None = None) -> list[int]:
    """The lines of the parsed file holding a call or an assignment that may have made the change, in order: for a
    hook added (its count grew), the call registering one on that module; for a module's training flag, the call that
    sets it to the value after (`.eval()` / `.train(False)`, or `.train()` / `.train(True)`) on that module or a
    module holding it, or `m.training = False` on that module (an assignment sets no child's); for a parameter's
    requires_grad, `requires_grad_(False)` on it or a module holding it, `p.requires_grad = False` on it; either kind
    also on the variable of a loop over a module's parameters(), modules() or children() that can yield it or a module
    holding it, or over a tuple or list naming it (_loop_reaches). [] for any other change, or a module the file cannot name (not the compiled frame's
    self, nor a global). index: the file's file_index, where several changes are matched in it."""
    module = _module_of(change)
    if module is None:
        return []
    base, path = module
    to = change.after == "True"
    try:
        index = index if index is not None else file_index(tree)
        compiled = index.compiled
        found: list[tuple[int, ast.expr]] = []  # (line, the receiver that can be the module)
        if change.kind != "hook":
            for node in index.assigns:
                if _is_bool(node.value, to) and id(node) not in index.on_loop_variables:
                    found.extend((node.lineno, t.value) for t in node.targets if isinstance(t, ast.Attribute)
                                 and t.attr == change.kind and _names(t.value, base, path, True, compiled))
        for loop, setting in index.loops if change.kind != "hook" else ():
            variable = _loop_over(loop, index.named_iterables) or ("",)
            for inner in setting:
                receiver = _sets_state(inner, change.kind, to)
                if not (isinstance(receiver, ast.Name) and receiver.id == variable[0]):
                    continue
                reached = _loop_reaches(loop, index, _sets_itself(inner), change.kind, base, path, compiled)
                if reached is not None:
                    found.append((getattr(inner, "lineno", loop.lineno), reached))
        hooks = change.source.rsplit(".", 1)[-1]
        for call in index.calls:
            assert isinstance(call.func, ast.Attribute)
            method, receiver = call.func.attr, call.func.value
            if id(call) in index.on_loop_variables:  # (matched with its loop above)
                continue
            if change.kind == "hook":
                if method in HOOK_METHODS.get(hooks, ()) and _names(receiver, base, path, True, compiled):
                    found.append((call.lineno, receiver))
            elif (change.kind == "training" and _sets_training(call, method, to)
                  and _names(receiver, base, path, False, compiled)):
                found.append((call.lineno, receiver))
            elif (change.kind == "requires_grad" and _sets_requires_grad(call, to) is not None
                  and _names(receiver, base, path, False, compiled, root_compiled=True)):
                found.append((call.lineno, receiver))
        # (a line that runs once before the module is compiled made the state every compile of it starts from)
        return sorted({line for line, receiver in found if not _before_compile(line, receiver, index.layout)})
    except RecursionError:
        return []


def _compile_sites(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, the compiled module's text) of each `torch.compile(model, ...)` and `model.compile()` in the file."""
    sites: list[tuple[int, str]] = []
    for walked, node in enumerate(ast.walk(tree)):
        if walked > MAX_SOURCE_NODES:
            break
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile"):
            continue
        torch_compile = isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
        compiled = (node.args[0] if node.args else None) if torch_compile else node.func.value
        if compiled is not None and (text := _text(compiled)):
            sites.append((node.lineno, text))
    return sites


class Nesting:
    """Nodes whose line spans nest or are apart (a file's functions, or its loops: Python starts a statement holding
    others on a line of its own), sorted by first line, each with the nearest one holding it: the ones holding a line
    are found by a bisection and that short chain (Python indents at most 100 levels), not by a walk of them all."""

    def __init__(self, nodes: Sequence[ast.stmt]) -> None:
        self.nodes = sorted(nodes, key=lambda n: n.lineno)
        self.starts = [n.lineno for n in self.nodes]
        self.holder: list[int] = []  # (the index of the nearest node holding each, -1 for none)
        open_spans: list[int] = []
        for at, node in enumerate(self.nodes):
            while open_spans and _last_line(self.nodes[open_spans[-1]]) < node.lineno:
                open_spans.pop()
            self.holder.append(open_spans[-1] if open_spans else -1)
            open_spans.append(at)

    def holding(self, line: int) -> Iterator[ast.stmt]:
        """The nodes holding the line, innermost first. (One holding it holds the last node starting at or before it,
        or is that node.)"""
        at = bisect_right(self.starts, line) - 1
        while at >= 0:
            node = self.nodes[at]
            if line <= _last_line(node):
                yield node
            at = self.holder[at]


def _last_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


class FileLayout:
    """Where a file's functions, loops and compiles are, for _before_compile and _on_stack: which function holds a
    line, whether a loop of it holds two lines, where it first compiles a module; and _before_compile's answers so far,
    each (line, receiver) answered once for all of a step's changes. (A walk of the function for every line found for
    every change was changes x the function's size x its lines: a function of 250 loops over modules() and one step's
    64 changes walked 56M nodes.) Of the index's walk, as its other lists."""

    def __init__(self, tree: ast.Module, functions: list[ast.FunctionDef | ast.AsyncFunctionDef],
                 loops: list[ast.For | ast.AsyncFor | ast.While], compiles: list[tuple[int, str]]) -> None:
        self.tree = tree
        self.functions = Nesting(functions)
        self.loops = Nesting(loops)
        self.compiles = compiles
        self.scopes: dict[int, ast.AST] = {}  # line -> scope(line)
        self.first_compiles: dict[tuple[str, int], int] | None = None  # (compiled text, id of its scope) -> first line
        self.before_compile: dict[tuple[int, int], bool] = {}  # (line, id of the receiver) -> _before_compile

    def scope(self, line: int) -> ast.AST:
        """The innermost function holding the line; the module where none does."""
        if line not in self.scopes:
            self.scopes[line] = next(self.functions.holding(line), self.tree)
        return self.scopes[line]

    def in_one_loop(self, scope: ast.AST, first: int, last: int) -> bool:
        """A loop of the scope holds both lines (first <= last, both in the scope): the later may have run before the
        earlier, on an earlier pass. (A loop starting in the scope, before the scope's line, is in it.)"""
        opens = scope.lineno if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else 0
        for loop in self.loops.holding(first):  # (innermost first: each starts earlier, and ends later)
            if loop.lineno < opens:
                return False
            if last <= _last_line(loop):
                return True
        return False

    def first_compile(self, text: str, scope: ast.AST) -> int | None:
        """The first line in the scope compiling the module the text names or one holding it (its text, then the end
        or `.`, `[`)."""
        if self.first_compiles is None:
            self.first_compiles = {}
            for at, compiled in self.compiles:
                key = (compiled, id(self.scope(at)))
                self.first_compiles[key] = min(at, self.first_compiles.get(key, at))
        cuts = [i for i, c in enumerate(text) if c in ".["] + [len(text)]
        return min((first for cut in cuts if (first := self.first_compiles.get((text[:cut], id(scope)))) is not None),
                   default=None)


def _before_compile(line: int, receiver: ast.expr, layout: FileLayout) -> bool:
    """The line comes before the first `torch.compile` of its receiver's module (the module itself or one holding it)
    in the same function, with no loop around both: it ran before any compile there, and its change is in every
    compile's guards (a hook registered there is counted by the first compile's)."""
    key = (line, id(receiver))  # (a node of the file's tree, as the layout is)
    if key not in layout.before_compile:
        scope = layout.scope(line)
        first = layout.first_compile(_text(receiver), scope)
        layout.before_compile[key] = first is not None and first > line and not layout.in_one_loop(scope, line, first)
    return layout.before_compile[key]


def _module_of(change: StateChange) -> tuple[str | None, str] | None:
    """The module (or parameter) whose state changed, as (its base name, the path after it): ("self" stands for any
    name) → (None, ".block.norm"); a global `model.block` → ("model", ".block"); a parameter's requires_grad →
    (None, ".backbone.weight"). None where it is neither: a hook count that went down (a hook removed), a tensor's
    requires_grad that is no module's parameter, another kind of change."""
    if change.kind == "hook":
        if not (change.before.isdigit() and change.after.isdigit() and int(change.after) > int(change.before)):
            return None
        name = change.name
    elif change.kind in ("training", "requires_grad") and change.after in ("True", "False"):
        if change.kind == "requires_grad" and "._parameters[" not in change.source:
            return None
        name = change.name.removesuffix("." + change.kind)
    else:
        return None
    if change.source.startswith("L['self']"):
        return (None, name.removeprefix("self")) if name == "self" or name.startswith(("self.", "self[")) else None
    if change.source.startswith("G['"):
        head = name.split(".", 1)[0].split("[", 1)[0]
        return (head, name[len(head):]) if head.isidentifier() else None
    return None


def _compiled_names(tree: ast.Module) -> frozenset[str]:
    """The last names of what the file compiles (`torch.compile(model)`, `self.model.compile()`) and of what it keeps
    a compiled module in (`self.compiled = torch.compile(...)`): `model`, `compiled`. A chain the file switches
    (`self.model.eval()`) is the compiled module where it ends in one of them; `self.head.eval()` is not said to be."""
    names: set[str] = set()
    for walked, node in enumerate(ast.walk(tree)):
        if walked > MAX_SOURCE_NODES:
            break
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            call, targets = node.value, node.targets
        elif isinstance(node, ast.Call):
            call = node
        else:
            continue
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "compile"):
            continue
        if isinstance(call.func.value, ast.Name) and call.func.value.id == "torch":
            compiled = call.args[:1]  # torch.compile(model, ...)
        else:
            compiled = [call.func.value]  # model.compile(): nn.Module's, in place
        names.update(_last_name(e) for e in [*compiled, *targets] if _last_name(e))
    return frozenset(names)


def _last_name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _text(node: ast.expr) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError):
        return ""


def _names(receiver: ast.expr, base: str | None, path: str, exact: bool, compiled: frozenset[str],
           root_compiled: bool = False) -> bool:
    """Whether the receiver can be the module (exact) or one holding it: its text is a base name then the module's
    path, or (not exact) a leading part of it that ends at a name. base None: any name, a chain of names where the
    path is not empty (`trainer.model.block`), or for the module itself a chain ending in a name the file compiles
    (`self.model`: _compiled_names); root_compiled: the module itself only as a name the file compiles (`x` of
    `x.requires_grad_()` is a tensor as often as a model)."""
    text = _text(receiver)
    if not text:
        return False
    cuts = [len(path)] if exact else [i for i in range(len(path) + 1) if i == len(path) or path[i] in ".["]
    for cut in cuts:
        part = path[:cut]
        if not text.endswith(part):
            continue
        head = text[:len(text) - len(part)]
        if base is not None:
            if head == base:
                return True
            continue
        chain = all(p.isidentifier() for p in head.split("."))
        if part:
            if chain:
                return True
        elif chain and (head.rsplit(".", 1)[-1] in compiled or (head.isidentifier() and not root_compiled)):
            return True
    return False


def _is_bool(node: ast.expr, value: bool) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _sets_training(call: ast.Call, method: str, to: bool) -> bool:
    """`m.eval()`, `m.train(False)` set training False; `m.train()`, `m.train(True)` True."""
    if method == "eval":
        return not to and not call.args and not call.keywords
    if method != "train":
        return False
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if given is None:
        return to and not call.args and not call.keywords
    return _is_bool(given, to)


def _sets_requires_grad(node: ast.AST, to: bool) -> ast.expr | None:
    """The receiver of `x.requires_grad_(to)` (`requires_grad_()`: True) or `x.requires_grad = to`; None for any other
    node."""
    if isinstance(node, ast.Assign) and _is_bool(node.value, to):
        return next((t.value for t in node.targets if isinstance(t, ast.Attribute) and t.attr == "requires_grad"), None)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_"):
        return None
    given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
    return node.func.value if (to if given is None else _is_bool(given, to)) else None


# What the variable of a loop over a module's method yields: its parameters (recursing), itself and every module
# under it, or its direct children; `named_*` yields (name, value) pairs.
LOOP_METHODS = {"parameters": "parameters", "named_parameters": "parameters", "modules": "modules",
                "named_modules": "modules", "children": "children", "named_children": "children"}


def _loop_over(loop: ast.For, named: Mapping[int, ast.expr] | None = None) -> tuple[str, str, ast.expr] | None:
    """(the variable, what it yields: LOOP_METHODS' value, the module it is called on) of `for p in m.parameters():`,
    `for m in model.modules():`, `for name, m in self.named_children():`; (the variable, "elements", the tuple) of
    `for p in (model.fc.weight, model.fc.bias):` (a list too, or a name bound to one: named, FileIndex.named_iterables);
    None for any other loop."""
    call = (named or {}).get(id(loop), loop.iter)
    if isinstance(call, (ast.Tuple, ast.List)):
        return (loop.target.id, "elements", call) if isinstance(loop.target, ast.Name) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and not call.args and not call.keywords
            and call.func.attr in LOOP_METHODS):
        return None
    target = loop.target
    if call.func.attr.startswith("named_"):
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return None
        target = target.elts[1]
    return (target.id, LOOP_METHODS[call.func.attr], call.func.value) if isinstance(target, ast.Name) else None


def _parent(path: str) -> str | None:
    """The module holding the one at path (`.drops` of `.drops[3]`, `.backbone` of `.backbone.weight`, "" of
    `.head`); None for the root ("")."""
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut >= 0 else None


def _loop_reaches(loop: ast.For, index: FileIndex, itself: bool, kind: str, base: str | None,
                  path: str, compiled: frozenset[str]) -> ast.expr | None:
    """What a setting on the variable of the loop (over a module's parameters, modules or children, or over the
    elements of a tuple: _loop_over) can make a change of kind at path through (a module's, or for requires_grad a
    parameter's): the module it loops over, or the tuple's element that names it; None where it cannot. itself: a
    setting of the variable only (`m.training = False`, `p.requires_grad = False`), else of the module and all under
    it (`m.eval()`, `m.requires_grad_(False)`). Where the loop's module is the variable of a loop holding it
    (index.outer_loops: `for m in model.modules(): for p in m.parameters():`), what that variable must be is asked of
    the outer loop in turn, and what is returned is the outer loop's module: m is a module of model, not any name; a
    loop over a name bound to a literal is over that literal's elements (index.named_iterables)."""
    target, exact, parameter = path, itself, kind == "requires_grad"
    of_parameters = False  # (a loop over parameters() on the way: the outermost module a name the file compiles)
    while (over := _loop_over(loop, index.named_iterables)) is not None:
        _, yields, holder = over
        if yields == "elements":  # (an element is matched as a receiver of the setting itself would be)
            return next((e for e in holder.elts if _names(e, base, target, exact, compiled,
                                                           root_compiled=kind == "requires_grad")), None) \
                if isinstance(holder, (ast.Tuple, ast.List)) else None
        needed = _holder_needs(yields, target, exact, parameter)
        if needed is None:
            return None
        target, exact, parameter = *needed, False
        of_parameters = of_parameters or yields == "parameters"
        if id(loop) not in index.outer_loops:
            return holder if _names(holder, base, target, exact, compiled, root_compiled=of_parameters) else None
        loop = index.outer_loops[id(loop)]
    return None


def _holder_needs(yields: str, target: str, exact: bool, parameter: bool) -> tuple[str, bool] | None:
    """What the module a loop's variable comes from must be, where the variable must be the module or parameter at
    target (exact) or one holding it (parameter: target is a parameter's path): (its path, whether exactly that one
    rather than one holding it); None where no module can be. parameters() yields every parameter under its module,
    so a module holding the parameter's; modules() its module and every module under it, so a module holding target
    (a module is no parameter, so not the parameter exactly); children() the modules right under its module, so
    target's parent exactly for the variable exactly target, else a module holding that parent."""
    if yields == "parameters":
        module = _parent(target) if parameter else None
        return (module, False) if module is not None else None
    if parameter and exact:  # (a module's setting of itself, `m.requires_grad = False`, sets no parameter's)
        return None
    module = _parent(target) if parameter else target
    if module is None:
        return None
    if yields == "modules":
        return module, False
    parent = _parent(module)  # (children(): a module right under the loop's)
    return (parent, exact and not parameter) if parent is not None else None


def _sets_state(node: ast.AST, kind: str, to: bool) -> ast.expr | None:
    """The receiver of a node that sets a training flag (`m.training = to`, `m.eval()`, `m.train(to)`) or a
    requires_grad (_sets_requires_grad) to the value to; None for any other node."""
    if kind == "requires_grad":
        return _sets_requires_grad(node, to)
    if isinstance(node, ast.Assign) and _is_bool(node.value, to):
        return next((t.value for t in node.targets if isinstance(t, ast.Attribute) and t.attr == "training"), None)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _sets_training(node, node.func.attr, to):
        return node.func.value
    return None


def _sets_itself(node: ast.AST) -> bool:
    """An assignment (`m.training = False`) sets its receiver's flag only; a call (`m.eval()`, `requires_grad_()`)
    those of the modules and parameters under it too."""
    return isinstance(node, ast.Assign)


@dataclass
class StateLine:
    """A line that may have made a state change a recompile shows, and what the source page says of it."""

    path: str
    line: int
    code: str
    recompile: str  # the compile whose guard tree shows the change: "[0/1]"
    kind: str  # "hook" or "training" (StateChange.kind)
    text: str  # what the page says: "registers a hook on self.block after forward was compiled ..."
    # the modules or parameters whose state the line may have set, in the guards' words ("self.drops[0].training"):
    # every one matched (the hook's first), and how many more of its kind the step changed, matched to no line
    # (_add_unsearched's bound)
    changed: list[str] = field(default_factory=list)
    left_out: int = 0
    alone: bool = False  # the only line found for each of those changes (the mark says "switches", not "may")


def _frame_paths(frame: FrameRecompiles) -> list[str]:
    """The files a frame's changes are searched in: the compiled frame's, then those of the failed guards and calls."""
    quoted = [g.location for s in frame.steps for g in s.failed_guards if g.location is not None]
    return [p for p in dict.fromkeys([frame.filename or "", *(q.filename for q in quoted),
                                      *(c.filename for c in frame.called_from)]) if p]


def files_wanted(found: Recompiles) -> list[str]:
    """The files state_lines searches (_parsed reads only an absolute path to a .py file): for ingest to read."""
    return list(dict.fromkeys(p for frame in found.frames for p in _frame_paths(frame)
                              if os.path.isabs(p) and p.endswith(".py")))


def state_lines(found: Recompiles, stacks: Mapping[str, list[Frame]] | None = None,
                files: SourceFiles = NO_FILES) -> list[StateLine]:
    """The lines that may have registered a hook late or switched a module's mode, for each such change a recompile's
    guard trees show (change_lines), searched in the compiled frame's file and the files of the calls whose guards
    failed, where the file is on this machine (files: as ingest read them, with files_wanted) and agrees with every
    line the log quotes of it there. stacks: each compile's dynamo_start stack, by compilation key ("[0/1]"): of
    several lines, those before the recompile's call in a function it passed through (_on_stack)."""
    out: list[StateLine] = []
    parsed_files: dict[str, tuple[ast.Module, list[str]] | None] = {}
    indexes: dict[str, FileIndex] = {}  # (each file's, gathered once for all its changes)

    def indexed(path: str, tree: ast.Module) -> FileIndex:
        if path not in indexes:
            indexes[path] = file_index(tree)
        return indexes[path]

    # (every frame's quoted lines of a file, not the first frame's: the file must agree with all of them)
    quoted_in: dict[str, list[tuple[int, str | None]]] = {}
    for frame in found.frames:
        for q in (*(g.location for s in frame.steps for g in s.failed_guards if g.location is not None),
                  *frame.called_from):
            if q.code:
                quoted_in.setdefault(q.filename, []).append((q.line, q.code))
    for frame in found.frames:
        paths = _frame_paths(frame)
        for path in paths:
            if path not in parsed_files:
                parsed_files[path] = _parsed(path, quoted_in.get(path, []), files)
        for step in frame.steps:
            guard = step.guard
            if guard is None:
                continue
            # (path, line, kind) -> the changes the line may have made, each with its count of candidate lines: one mark
            # a line, for several modules switched by one eval() or parameters frozen by one loop
            made: dict[tuple[str, int, str], list[tuple[StateChange, int]]] = {}
            codes: dict[tuple[str, int], str] = {}
            changes = _changes(step)
            looked_for = _looked_for(changes)
            for change in looked_for:
                where = [(path, line, lines) for path in paths if (parsed := parsed_files[path]) is not None
                         for tree, lines in (parsed,)
                         for line in change_lines(tree, change, indexed(path, tree))]
                where = _on_stack(where, (stacks or {}).get(compilation_key(step.compile_id)), parsed_files, indexes)
                for path, line, lines in where:
                    made.setdefault((path, line, change.kind), []).append((change, len(where)))
                    codes[path, line] = lines[line - 1].strip()
            searched = {id(c) for c in looked_for}
            left_out = _add_unsearched(made, [c for c in changes if id(c) not in searched], parsed_files, indexed)
            for (path, line, kind), made_there in made.items():
                out.append(StateLine(path, line, codes[path, line], compilation_key(step.compile_id), kind,
                                     _said(frame, step, guard.compile_id, made_there, left_out.get(kind, 0)),
                                     [c.name for c, _ in made_there], left_out.get(kind, 0),
                                     max(n for _, n in made_there) == 1))
    return out


def _add_unsearched(made: dict[tuple[str, int, str], list[tuple[StateChange, int]]], unsearched: list[StateChange],
                    parsed_files: Mapping[str, tuple[ast.Module, list[str]] | None],
                    indexed: Callable[[str, ast.Module], FileIndex]) -> dict[str, int]:
    """Adds to each marked line's changes (made: (path, line, kind) -> changes) those of the step's changes beyond the
    ones looked for (_looked_for's cap) that the line itself can have made, with 0 candidate lines (not searched for
    elsewhere): an eval() of a model's 70 modules is said to switch 70, not the 62 looked for beside a frozen
    parameter. Matched against the settings on the marked lines only, and at most MAX_UNSEARCHED of the kinds marked:
    the rest (a model of thousands of modules switched) are counted, by kind, and the counts returned."""
    marked: dict[str, set[int]] = {}
    for path, line, kind in made:
        if kind != "hook":  # (a hook's mark tells of the first)
            marked.setdefault(path, set()).add(line)
    kinds = {kind for _, _, kind in made if kind != "hook"}
    wanted = [c for c in unsearched if c.kind in kinds and _module_of(c) is not None]
    left_out: dict[str, int] = {}
    for change in wanted[MAX_UNSEARCHED:]:
        left_out[change.kind] = left_out.get(change.kind, 0) + 1
    unsearched = wanted[:MAX_UNSEARCHED]
    for path, lines in marked.items():
        parsed = parsed_files.get(path)
        if parsed is None:
            continue
        tree = parsed[0]
        index = indexed(path, tree)
        on_lines = FileIndex(index.compiled, [n for n in index.assigns if n.lineno in lines],
                             [n for n in index.calls if n.lineno in lines],
                             [(loop, kept) for loop, setting in index.loops
                              if (kept := [n for n in setting if getattr(n, "lineno", loop.lineno) in lines])],
                             index.on_loop_variables, index.outer_loops, index.named_iterables, index.compiles,
                             index.functions, index.layout)
        for change in unsearched:
            if change.kind == "hook":
                continue
            for line in change_lines(tree, change, on_lines):
                if (path, line, change.kind) in made:
                    made[path, line, change.kind].append((change, 0))
    return left_out


def _on_stack(where: list[tuple[str, int, list[str]]], stack: list[Frame] | None,
              files: Mapping[str, tuple[ast.Module, list[str]] | None],
              indexes: Mapping[str, FileIndex]) -> list[tuple[str, int, list[str]]]:
    """Of several lines, those in a function the recompile's stack passes through, before the line it called on from
    (validate()'s `self.model.eval()` for a recompile called from validate() two lines on; not main()'s switch after
    its call to validate()), with those after it in a loop around it (run on an earlier pass); all of them where no
    line is before a call."""
    if not stack or len(where) < 2:
        return where
    before: set[tuple[str, int]] = set()
    looped: set[tuple[str, int]] = set()
    for path, line, _ in where:
        if files.get(path) is None or path not in indexes:
            continue
        layout = indexes[path].layout
        scope = layout.scope(line)
        name = scope.name if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else "<module>"
        for frame in stack:
            if frame.filename != path or frame.name != name or layout.scope(frame.line) is not scope:
                continue
            if line < frame.line:
                before.add((path, line))
            elif layout.in_one_loop(scope, frame.line, line):
                looped.add((path, line))
            break
    return [w for w in where if w[:2] in before or w[:2] in looped] if before else where


# A failed guard on a mode (`self._modules['drop'].training == True`, the value the guarded compile had) and one on a
# parameter's requires_grad (`tensor 'self._modules['fc']._parameters['bias']' requires_grad mismatch. expected
# requires_grad=0`): the change torch names itself, so also_changed leaves it out.
_TRAINING_GUARD = lazy_compile(r"((?:self|G\['\w+'\])\S*)\.training == (True|False)")
_REQUIRES_GRAD_EXPECTED = lazy_compile(r"expected requires_grad=([01])\b")


def _changes(step: RecompileStep) -> list[StateChange]:
    """The changes of state the step shows since the compile whose guard failed first (also_changed's): the one that
    guard names first, then its also_changed. (An older compile's failed guard names a change made before the compile
    after it: not this recompile's.)"""
    changes = {c.source: c for c in step.also_changed}
    named: list[StateChange] = []
    for guard in step.failed_guards[:1]:
        if (trained := _TRAINING_GUARD.fullmatch(guard.guard.strip())) is not None:
            source, was = f"{trained[1]}.training", trained[2]
        elif (guard.change == "requires_grad" and guard.tensor and "._parameters[" in guard.tensor
              and (expected := _REQUIRES_GRAD_EXPECTED.search(guard.guard)) is not None):
            source, was = f"{guard.tensor}.requires_grad", str(expected[1] == "1")
        else:
            continue
        source = "L['self']" + source[4:] if source.startswith("self") else source  # (as guard trees write it)
        named.append(changes.pop(source, StateChange(source, was, str(was != "True"))))
    return [*named, *changes.values()]


def _looked_for(changes: list[StateChange]) -> list[StateChange]:
    """Of a step's changes (_changes: the one its failed guard names first), those change_lines can find a line for,
    at most MAX_STEP_CHANGES: the named one, then each kind's first (hook, training, requires_grad), then each kind's
    second, and so on. The guard trees give no order in time (all changed between two compiles: none is nearer the
    recompile), so the cap keeps what most likely has a line of its own: the change torch's reason names, which the
    user reads, and every kind of change, where an eval() or a loop over a big model's modules makes hundreds of one
    kind, mostly from one line, which would leave a hook or a parameter frozen beside it unmarked."""
    ranked: list[tuple[int, int, StateChange]] = []
    of_kind: dict[str, int] = {}
    for at, change in enumerate(c for c in changes if _module_of(c) is not None):
        ranked.append((of_kind.get(change.kind, 0), at, change))
        of_kind[change.kind] = of_kind.get(change.kind, 0) + 1
    return [change for _, _, change in sorted(ranked, key=lambda r: r[:2])[:MAX_STEP_CHANGES]]


MAX_NAMED = 4  # parameters or modules a mark names, then "and N more"


def _said(frame: FrameRecompiles, step: RecompileStep, served: str | None,
          changes: list[tuple[StateChange, int]], left_out: int = 0) -> str:
    """What the page says of a line, for the changes it may have made (each with its count of candidate lines, 0 for
    one not searched for elsewhere: _add_unsearched): a hook by the first, a mode or a requires_grad by every module or
    parameter, as one line may switch or freeze several (`model.eval()`, a loop over modules, `a.requires_grad_(False);
    b.requires_grad_(False)`). left_out: the step's changes of the line's kind matched to no line (_add_unsearched's
    bound), counted."""
    change = changes[0][0]
    # (the most candidates any of its changes has: "sets" only where the line is the one for every change)
    candidates = max(n for _, n in changes)
    compiled = compilation_key(served) if served else "the compile before"
    recompile = compilation_key(step.compile_id)
    function = frame.display_name
    if change.kind == "hook":
        verb = "registers" if candidates == 1 else f"is one of {candidates} lines that may register"
        before = "none" if change.before == "0" else change.before
        return (f"{verb} a hook on {change.name} after {function} was compiled ({compiled}'s guards count {before} "
                f"of its hooks, {recompile}'s {change.hooks_now}): torch does not recompile for a hook, so the calls "
                f"{compiled} served after it was registered ran without it ({recompile} compiled for another change)")
    by_value: dict[tuple[str, str], list[str]] = {}
    for c, _ in changes:
        by_value.setdefault((c.before, c.after), []).append(c.name.removesuffix(f".{change.kind}"))
    if change.kind == "requires_grad":
        verb = "sets" if candidates == 1 else f"is one of {candidates} lines that may set"
        settings = f"{function} was compiled again as {recompile} for that setting (one compile per setting, expected)"
        if len(changes) == 1:
            parameter = change.name.removesuffix(".requires_grad")
            return (f"{verb} {parameter}'s requires_grad ({change.name} {change.before} → {change.after}: a layer "
                    f"{'unfrozen' if change.after == 'True' else 'frozen'}): {settings}"
                    f"{_left_out(left_out, 'requires_grad')}")
        set_to = " and of ".join(
            f"{_listed(names, 'parameters')} ({before} → {after}{' each' if len(names) > 1 else ''}: "
            f"a layer {'unfrozen' if after == 'True' else 'frozen'})" for (before, after), names in by_value.items())
        return f"{verb} the requires_grad of {set_to}: {settings}{_left_out(left_out, 'requires_grad')}"
    verb = "switches" if candidates == 1 else f"is one of {candidates} lines that may switch"
    modes = f"{function} was compiled again as {recompile} in that mode (one compile per mode, expected)"
    if len(changes) == 1:
        module = change.name.removesuffix(".training")
        mode = "training" if change.after == "True" else "eval"
        return (f"{verb} {module} to {mode} mode ({change.name} {change.before} → {change.after}): {modes}"
                f"{_left_out(left_out, 'training')}")
    switched = " and ".join(
        f"{_listed(names, 'modules')} to {'training' if after == 'True' else 'eval'} mode (training {before} → "
        f"{after}{' each' if len(names) > 1 else ''})" for (before, after), names in by_value.items())
    return f"{verb} {switched}: {modes}{_left_out(left_out, 'training')}"


def _left_out(count: int, kind: str) -> str:
    """What a mark says of the step's changes of its kind beyond those matched to a line (_add_unsearched)."""
    if not count:
        return ""
    what = "modules' modes" if kind == "training" else "parameters' requires_grad"
    return f"; {count} more {what} changed in that step were not matched to a line"


def _listed(names: list[str], noun: str) -> str:
    """`a`, `a and b`, `a, b and c`, `a, b, c, d and 5 more parameters` (at most MAX_NAMED names; noun: what they
    are)."""
    if len(names) > MAX_NAMED:
        return f"{', '.join(names[:MAX_NAMED])} and {len(names) - MAX_NAMED} more {noun}"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _parsed(path: str, quoted: list[tuple[int, str | None]], files: SourceFiles) -> tuple[ast.Module, list[str]] | None:
    """The file's syntax tree and lines, where it is a Python file on this machine that agrees with the lines the log
    quotes of it (else a changed file's lines would be marked); None otherwise."""
    if not (os.path.isabs(path) and path.endswith(".py")):
        return None
    lines = files.lines(path, MAX_SOURCE_BYTES)
    if lines is None or any(line > len(lines) or lines[line - 1].strip() != code for line, code in quoted):
        return None
    try:
        return ast.parse("\n".join(lines)), list(lines)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

"""The guards a compilation installed, as torch prints their tree (`dynamo_cpp_guards_str`): what a guard line says.

Each guard line ends with the line of code that made it (`+- KIND: check  # code  # path:N in fn`); a GuardManager
line names the object it guards and that object's type (`+- GuardManager: source=L['x'], accessed_by=...,
type=<class 'torch.Tensor'>`). The source pages place every installed guard on its line; the recompiles ask where
the compile whose guard failed used a tensor, and what object held it. GuardTrees parses each tree once a report,
for all of them: the sites of its guards (GuardSite), what it pins (pinned_state, pinned_lengths, tree_closures), the
tensors it checks and the KV caches it guards (tree_tensor, tree_subclass, tree_caches).
"""

from __future__ import annotations

import re

from ..lazy_regex import lazy_compile
from ..model.payloads import PayloadRef
from ..model.records import NamedTuple
from ..model.trace import Trace
from .user_locations import ArgumentSlot, closure_variable

GUARDS_ARTIFACT = "dynamo_cpp_guards_str"
# A guard with the user line that made it: `+- KIND: check  # code  # path:N in fn`, and torch's hint after it where
# it gave one: `... in fn (HINT: type float)` (a TYPE_MATCH or ID_MATCH on an object; a hint may hold parentheses).
# A shape guard ends in torch's own note instead, `... in fn (_dynamo/variables/tensor.py:2606 in evaluate_expr)`,
# or, for a size's range from 0/1 specialization, FIRST_USE_NOTE: its line is the size's first use.
GUARD_LINE = lazy_compile(r"\+- (?P<guard>[A-Z_]+: .*?)\s+# (?P<code>.*?)\s+# (?P<file>\S+?):(?P<line>\d+) in (?P<func>\S+)"
                          r"(?:\s+\(HINT: (?P<hint>.*)\)|\s+\((?P<note>.*)\))?\s*$")
# torch's note on a guard that its line did not make (symbolic_shapes.py, create_symbol): the line only used the size
# first, and the guard (`2 <= L['x'].size()[0]`) comes from specializing sizes 0 and 1.
FIRST_USE_NOTE = "user code shown is first use of this value"
_TYPE = lazy_compile(r", type=<class '(?P<type>[\w.]{1,300})'>")
# A transformers KV cache (`type=<class 'transformers.cache_utils.DynamicCache'>`): a failed check of a tensor it holds
# names it (the recompiles' advice on caches that grow).
CACHE_MODULE = "transformers.cache_utils."
_MANAGER = lazy_compile(r"GuardManager: source=(?P<source>[LG]\[.{1,1000}?), accessed_by=")
# A file's full path, as a code object a guard names shows it (`<code object f at 0x.., file "/…/torch/nn/…", line 34>`):
# torch clips the paths of the guards' own comments at the front.
_CODE_FILE = lazy_compile(r'<code object [^<>\n]{0,300}?, file "([^"\n]{1,1000})", line \d{1,9}>')
# A tensor's dimensions marked dynamic when the compile saw it (a DIMENSION_DYNAMIC_MARKING_GUARD):
# `(getattr(L['x'], '_dynamo_dynamic_indices', set()).issubset({0, 1}))`.
_MARKED_DIMS = lazy_compile(r"\(getattr\((?P<source>[LG]\[.{1,1000}?), '(?P<attr>_dynamo_(?:weak_)?dynamic_indices)', "
                            r"set\(\)\)\.issubset\(\{(?P<dims>[^}\n]{0,1000})\}\)")
# A numbered block of a ModuleList or Sequential, with its class: `source=L['self']._modules['blocks']._modules['0'],
# ... type=<class '__main__.Block'>` (the ValueManager line of a _modules dict's entry, which names no accessed_by).
_NUMBERED_MODULE = lazy_compile(r"source=(?P<source>L\[[^\s,]*?\._modules\['\d+'\]), [^\n]*?type=<class '(?P<cls>[^']+)'>")


def _line_at(text: str, at: int) -> str:
    """The whole line of text that holds position at."""
    start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
    return text[start:] if end < 0 else text[start:end]


def guard_site(line: str) -> tuple[str, int, str, str] | None:
    """(path, line, function, code) of the code that made a guard line, when the line names it (the path as torch
    clipped it at the front)."""
    site = guard_site_of(line)
    return None if site is None else (site.path, site.line, site.function, site.code)


def object_type(text: str, source: str) -> str | None:
    """The type of the object at source (`transformers.cache_utils.DynamicCache`), as its GuardManager line names it."""
    at = text.find(f"GuardManager: source={source}, ")
    if at < 0:
        return None
    m = _TYPE.search(_line_at(text, at))
    return m["type"] if m else None


def guarded_source(text: str, check: str) -> str | None:
    """The object a leaf guard checks, as the GuardManager it hangs under names it: `L['self']._parameters['weight']`
    for `___check_metadata_1397…_c1/0` (a LAMBDA_GUARD, whose check names no object); None where the tree lacks it."""
    at = text.find(f": {check}")
    if at < 0:
        return None
    line = _line_at(text, at)
    depth = line.find("+-")
    start = text.rfind("\n", 0, at)
    while start > 0 and depth > 0:
        end, start = start, text.rfind("\n", 0, start)
        above = text[start + 1:end]
        if 0 <= above.find("+-") < depth:
            m = _MANAGER.search(above)
            return m["source"] if m else None
    return None


# A guard tree names a class object it checks with its type: a torch.Tensor subclass's is torch._C._TensorMeta
# (`GuardManager: source=G['ScaledTensor'], accessed_by=..., type=<class 'torch._C._TensorMeta'>`).
_TENSOR_META = "type=<class 'torch._C._TensorMeta'>"
_GLOBAL_GUARDED = lazy_compile(r"GuardManager: source=G\['(?P<cls>[^'\n]{1,300})'\], ")
PLAIN_TENSOR_CLASSES = ("Tensor", "Parameter", "Buffer", "FakeTensor")


def enclosing_sources(source: str) -> list[str]:
    """The objects a source reaches through, outermost first: `L['kw']['cache'].layers[0].keys` -> `L['kw']`,
    `L['kw']['cache']`, `L['kw']['cache'].layers`, `L['kw']['cache'].layers[0]` (a cut inside a quoted key names
    nothing in the tree, and is not found there)."""
    return [source[:i] for i in range(1, len(source)) if source[i] in "[." and source[i - 1] != "["]


# A guard that pins one value of an object: `EQUALS_MATCH: L['self'].scale == 0.5  # code ...`, `TRUE_MATCH:
# L['self']._modules['dropout'].training == True` (the check ends where torch's comment on it starts, or the line does).
_PINNED = lazy_compile(r"\+- (?:EQUALS_MATCH|TRUE_MATCH|FALSE_MATCH): (?P<source>[LG]\[\S*?) == (?P<value>.+?)(?:\s+#|\s*$)")
# A tensor's check, with whether it requires grad: `TENSOR_MATCH: check_tensor(L['self']._modules['backbone']
# ._parameters['weight'], Parameter, DispatchKeySet(...), torch.float32, device=None, requires_grad=False, size=...`.
# (and its class, after the source: `Parameter`, a tensor subclass's own `UnitTensor`)
# The source runs to the class and DispatchKeySet, for a source holding ", " itself (`L['d'][(1, 2)]`, `L['c']['a, b']`).
_REQUIRES_GRAD = lazy_compile(r"\+- TENSOR_MATCH: check_tensor\((?P<source>[LG]\[.{1,1000}?), "
                              r"(?:(?P<cls>[\w.]{1,300})|[^,\s]{1,300}), DispatchKeySet\(.*?requires_grad=(?P<value>True|False)")
# The hooks of a module Dynamo traced through (a DictGuardManager of its _forward_hooks ...), and each hook in it.
_HOOKS = lazy_compile(r"DictGuardManager: source=(?P<module>[LG]\[\S*?)\._(?P<kind>(?:forward|backward)(?:_pre)?_hooks), ")
_HOOK = lazy_compile(r"ValueManager: GuardManager: source=(?P<hooks>[LG]\[\S*?_hooks)\[")
_MODULE = lazy_compile(r"GuardManager: source=(?P<source>[LG]\[\S*?), accessed_by=")
# A submodule, whatever its class (the user's own Block as much as torch's Linear): an entry of a module's _modules.
_SUBMODULE = lazy_compile(r"\._modules\[[^\]]+\]$")
# A module's hooks dict pinned by a value guard (`EQUALS_MATCH: L['self']._forward_hooks == ...`): not a count.
_HOOKS_DICT = lazy_compile(r"\._(?:forward|backward)(?:_pre)?_hooks$")


# A container's length check (Dynamo's LENGTH_CHECK of a list or tuple, DICT_LENGTH of a dict): `len(G['x']) == 3`,
# and `not G['x']` where it was empty.
_LENGTH = lazy_compile(r"(?m)\+- (?:LENGTH_CHECK|DICT_LENGTH): (?:len\((?P<source>[LG]\[\S*?)\) == (?P<n>\d{1,9})|not "
                       r"(?P<empty>[LG]\[\S*?))(?:\s+#|\s*$)")


# An inlined function's code object, as Dynamo guards it where the code calling it reached it (`ID_MATCH:
# ___check_obj_id(G['sample_loss'].__code__, 1403...)`): the function's name is the source's last part.
CODE_GUARD = lazy_compile(r"^ID_MATCH: ___check_obj_id\((?:[^,\n]{0,500}?)(?:\['(?P<key>\w{1,200})'\]|\.(?P<attr>\w{1,200}))"
                          r"\.__code__, ")


class GuardSite(NamedTuple):
    """A guard with the user line that made it (GUARD_LINE), the path as torch clipped it at the front."""

    guard: str
    path: str
    line: int
    code: str
    hint: str | None  # torch's hint on what the guard checks: "type float"
    function: str
    inlined: str | None  # the function whose code it guards (CODE_GUARD), where it guards one
    first_use: bool  # torch notes the line as the first use of a size (FIRST_USE_NOTE), not what made the guard


class TreeLine(NamedTuple):
    """What one line of a guard tree says, for each of its readers (a line says at most one of pins, hooks, hook and
    module: pinned_state reads them in that order)."""

    site: GuardSite | None = None
    pins: tuple[str, str] | None = None  # (what, value) a value guard or a tensor's requires_grad fixes
    hooks: str | None = None  # a module's hooks dict of a kind, guarded: `L['m']._forward_hooks`
    hook: str | None = None  # the hooks dict one of whose hooks the line guards
    module: str | None = None  # a module the tree guards
    lengths: tuple[tuple[str, int], ...] = ()  # each container's length the line fixes (0: `not G['x']`)
    closure: tuple[str, str] | None = None  # (cell, variable) torch's hint names (closure_variable)
    tensor_class: str | None = None  # a global the line types as a tensor class (`ScaledTensor`: _TENSOR_META)
    tensor: tuple[str, str | None] | None = None  # (source, class) a TENSOR_MATCH checks (_REQUIRES_GRAD reads both)
    cache: tuple[str, str] | None = None  # (source, class) of a transformers KV cache a GuardManager line guards
    block: tuple[str, str] | None = None  # (source, class) of a numbered module a line guards (_NUMBERED_MODULE)
    local: tuple[str, str] | None = None  # (source, full class) of a wrapper's local a GuardManager line types (WRAPPER_LOCALS)
    # (name, index among the frame's locals) of the local a GuardManager line reads: `FrameLocalsGuardAccessor(key=
    # 'target', framelocals_idx=2)`. One the tree reads on entering the frame is an argument (the rest are unbound).
    argument: tuple[str, int] | None = None
    # (one, other) of two locals the frame was passed as the same object: `LAMBDA_GUARD: L['x'] is L['target']`, the
    # guard torch installs where `cm(t, t)` passes t twice (the tree reads only x then: target is no argument it reads)
    alias: tuple[str, str] | None = None


def _cache_class(line: str) -> str | None:
    """The class of the transformers KV cache a GuardManager line guards (`DynamicCache`); None for any other type.
    (Of the objects' types only a cache's is read from every tree: a type kept for each GuardManager line cost each
    report more than a failed check's tree read again for it.)"""
    typed = line.rfind(", type=<class '")  # (the type is near the line's end)
    if typed < 0 or not line.startswith(CACHE_MODULE, typed + len(", type=<class '")):
        return None
    m = _TYPE.match(line, typed)
    return m["type"][len(CACHE_MODULE):] if m else None


# The locals of a frame that wraps another's code (torch's wrap_inline `fn`, a decorator's `func` and what it passes
# first, `args[0]` or `self`): their types tell what the wrapper runs (compiled_frames.wrapper_module). Typed on these
# lines only: a type kept for every GuardManager line cost hf_llama's report ~20M instructions.
WRAPPER_LOCALS = ("L['fn']", "L['func']", "L['self']", "L['args'][0]")
_WRAPPER_LOCAL_NAMES = tuple(name.removeprefix("L['") + ", " for name in WRAPPER_LOCALS)  # ("fn'], ", ...)
_WRAPPER_LOCAL = lazy_compile(r"GuardManager: source=(?P<source>L\['(?:fn|func|self)'\]|L\['args'\]\[0\]), "
                              r"[^\n]{0,300}?type=<class '(?P<cls>[\w.]{1,300})'>")


def _wrapper_local(line: str, at: int) -> tuple[str, str] | None:
    """(source, class) as _WRAPPER_LOCAL.search(line, at - len("GuardManager: ")) reads them, `at` where the line's
    `source=L['` is: read with str methods where the line is as torch writes it (`GuardManager: source=L['self'],
    accessed_by=..., type=<class '__main__.Tiny'>`), because most logs have a `self` and compiling the pattern cost
    a small log's report 0.1% of its instructions. Any other line (a class that is no dotted name, `<locals>`) goes
    through the pattern."""
    start = at - len("GuardManager: ")
    source_at = at + len("source=")
    end = line.find(", ", source_at)
    if start >= 0 and end >= 0 and line.startswith("GuardManager: ", start) and line[source_at:end] in WRAPPER_LOCALS:
        type_at = line.find("type=<class '", end + 2)
        cls_at = type_at + len("type=<class '")
        cls_end = line.find("'", cls_at)
        cls = line[cls_at:cls_end]
        # (the pattern's lazy [^\n]{0,300}? takes the first type=<class ' it can; its [\w.]{1,300} all of the name)
        if 0 <= type_at - (end + 2) <= 300 and "\n" not in line[end:type_at] and 0 < len(cls) <= 300 \
                and line.startswith("'>", cls_end) and cls.isascii() and cls.replace(".", "a").replace("_", "a").isalnum():
            return line[source_at:end], cls
    m = _WRAPPER_LOCAL.search(line, max(start, 0))
    return None if m is None else (m["source"], m["cls"])


def _names_a_numbered_module(line: str) -> bool:
    """Whether a `._modules['` of the line is followed by a digit, as _NUMBERED_MODULE needs: a line of a named
    submodule (`._modules['lin']`) is ruled out without compiling the pattern (a small log's report compiled it for
    none)."""
    at = line.find(_MODULE_KEY)
    while at >= 0:
        at += _MODULE_KEY_LENGTH
        if line[at:at + 1].isdecimal():
            return True
        at = line.find(_MODULE_KEY, at)
    return False


_MODULE_KEY = "._modules['"
_MODULE_KEY_LENGTH = len(_MODULE_KEY)


def _read_line(line: str) -> TreeLine | None:
    """What a guard tree's line says; None for a line that says none of it (most of a tree)."""
    site = guard_site_of(line)
    pins = hooks = hook = module = tensor = cache = local = argument = None
    # Each pattern is tried only on a line holding the text it needs (`TENSOR_MATCH: `, `GuardManager: source=`):
    # five searches per line were most of the time of reading a tree.
    if "_MATCH: " in line and (("EQUALS_MATCH: " in line or "TRUE_MATCH: " in line or "FALSE_MATCH: " in line)
                               and (m := _PINNED.search(line)) is not None):
        # (a module's hooks are counted from their own guards only: a value pinned of its hooks dict says no count,
        # and read as one it was taken for a number)
        pins = None if _HOOKS_DICT.search(m["source"]) else (m["source"], m["value"])
    elif "TENSOR_MATCH: " in line and (m := _REQUIRES_GRAD.search(line)) is not None:
        pins = (f"{m['source']}.requires_grad", m["value"])
        tensor = (m["source"], m["cls"])
    elif "GuardManager: source=" in line:
        if "DictGuardManager: source=" in line and (m := _HOOKS.search(line)) is not None:
            hooks = f"{m['module']}._{m['kind']}"
        elif "ValueManager: GuardManager: source=" in line and (m := _HOOK.search(line)) is not None:
            hook = m["hooks"]
        elif (m := _MODULE.search(line)) is not None and ("type=<class 'torch.nn.modules." in line
                                                          or _SUBMODULE.search(m["source"])):
            # (a class of the user's own is a module too: a hook registered on `model.block` after compiling was
            # missed where Block was not one of torch's)
            module = m["source"]
        elif (cls := _cache_class(line)) is not None and (m := _MANAGER.search(line)) is not None:
            cache = (m["source"], cls)  # (_MANAGER: a cache's source may hold spaces, `L['c']['a, b']`)
        at = line.find("source=L['")
        if at >= 0 and line.startswith(_WRAPPER_LOCAL_NAMES, at + len("source=L['")):
            local = _wrapper_local(line, at)
        argument = _frame_local(line)
    tensor_class = (m["cls"] if _TENSOR_META in line and (m := _GLOBAL_GUARDED.search(line)) is not None else None)
    lengths = (tuple((m["source"] or m["empty"], int(m["n"]) if m["n"] else 0) for m in _LENGTH.finditer(line))
               if "LENGTH_CHECK: " in line or "DICT_LENGTH: " in line else ())
    closure = closure_variable(line)
    # (any line of a numbered module, whatever else it says: the hooks' and modules' patterns need an accessed_by)
    block = ((m["source"], m["cls"]) if "._modules['" in line and "type=<class '" in line
             and _names_a_numbered_module(line) and (m := _NUMBERED_MODULE.search(line)) is not None else None)
    alias = _alias(line) if _ALIAS in line else None
    if site is None and pins is None and hooks is None and hook is None and module is None and not lengths \
            and closure is None and tensor_class is None and tensor is None and cache is None and block is None \
            and local is None and argument is None and alias is None:
        return None
    return TreeLine(site, pins, hooks, hook, module, lengths, closure, tensor_class, tensor, cache, block, local,
                    argument, alias)


_ALIAS = "LAMBDA_GUARD: L['"
_ALIAS_IS = "'] is L['"


def _alias(line: str) -> tuple[str, str] | None:
    """(one, other) of `LAMBDA_GUARD: L['x'] is L['target']` (string searches, as _frame_local's)."""
    at = line.find(_ALIAS) + len(_ALIAS)
    middle = line.find(_ALIAS_IS, at, at + 300)
    end = line.find("']", middle + len(_ALIAS_IS), middle + 300) if middle >= 0 else -1
    one, other = line[at:middle], line[middle + len(_ALIAS_IS):end]
    return (one, other) if end >= 0 and one.isidentifier() and other.isidentifier() else None


_FRAME_LOCAL = "FrameLocalsGuardAccessor(key='"
_FRAME_LOCAL_INDEX = "', framelocals_idx="


def _frame_local(line: str) -> tuple[str, int] | None:
    """(name, index) of the frame's local a GuardManager line reads through FrameLocalsGuardAccessor (string
    searches: most lines of a tree read none)."""
    at = line.find(_FRAME_LOCAL)
    if at < 0:
        return None
    at += len(_FRAME_LOCAL)
    end = line.find(_FRAME_LOCAL_INDEX, at, at + 300)
    close = line.find(")", end, end + 30) if end >= 0 else -1
    name, digits = line[at:end], line[end + len(_FRAME_LOCAL_INDEX):close]
    return (name, int(digits)) if close >= 0 and name.isidentifier() and digits.isdecimal() else None


def tree_argument_slot(tree: GuardTree, name: str) -> ArgumentSlot | None:
    """Where the frame's argument `name` is among its locals, by the frame's own order (its locals' indices); whether
    a `self` comes first is not known (after_self None) where the tree reads no local 0. None where it reads no
    local name."""
    indices = dict(line.argument for line in tree.lines if line.argument is not None)
    first = next((local for local, index in indices.items() if index == 0), None)
    if name not in indices:
        return None
    checked = {line.tensor[0] for line in tree.lines if line.tensor is not None}
    tensors = tuple((local, index) for local, index in indices.items() if f"L['{local}']" in checked)
    return ArgumentSlot(indices[name], first == "self" if first is not None else None, tensors)


def tree_reads_local(tree: GuardTree, name: str) -> bool:
    """Whether the tree reads the frame's local name on entering it: one of the frame's arguments."""
    for line in tree.lines:  # (a loop, not a generator: asked of every frame's arguments)
        if line.argument is not None and line.argument[0] == name:
            return True
    return False


def tree_aliases(tree: GuardTree, name: str) -> set[str]:
    """The frame's other locals the tree checks are the same object as its local name (`cm(t, t)` into
    forward(self, x, target): {"x"} for target, whose own guards torch leaves out, x's covering both)."""
    return {other for line in tree.lines if line.alias is not None and name in line.alias
            for other in line.alias if other != name}


def tree_mentions(tree: GuardTree, name: str) -> bool:
    """Whether any line of the tree names the frame's local or global name (`L['target']`, `G['target']`): an
    argument, an alias of one, a global; a tree that names it nowhere never read it on entering the frame."""
    local, global_ = f"L['{name}']", f"G['{name}']"
    return any((line.argument is not None and line.argument[0] == name) or (line.alias is not None and name in line.alias)
               or (line.site is not None and (local in line.site.guard or global_ in line.site.guard))
               or (line.tensor is not None and line.tensor[0].startswith((local, global_)))
               or (line.module is not None and line.module.startswith((local, global_))) for line in tree.lines)


class GuardTree(NamedTuple):
    """A compile's guard tree as its readers need it: the lines that say something (TreeLine), in the tree's order.
    (NamedTuples, not dataclasses: a report's working, never saved.)"""

    lines: tuple[TreeLine, ...]


class GuardTrees:
    """The log's guard trees (dynamo_cpp_guards_str), each parsed the first time an analysis asks for it and kept for
    the report's other readers (the recompiles' pinned state, the source pages' installed guards): each read its trees
    itself, with its own patterns, twice over for a recompiled frame's. Recompiles install mostly the same guards
    again: each distinct line is parsed once for all the trees."""

    def __init__(self, trace: Trace) -> None:
        self._trace = trace
        self._trees: dict[tuple[int, int], GuardTree] = {}  # (payload offset, length) -> its tree
        self._lines: dict[str, TreeLine | None] = {}  # a line's text -> what it says
        self._tensor_classes: frozenset[str] | None = None  # (tensor_classes, once asked)

    def of(self, payload: PayloadRef) -> GuardTree:
        key = (payload.offset, payload.length)
        tree = self._trees.get(key)
        if tree is None:
            tree = self._trees[key] = read_tree(self._trace.payload_text(payload), self._lines)
        return tree

    def tensor_classes(self) -> frozenset[str]:
        """The globals (G['ScaledTensor']) some guard tree of the log types as a tensor class (torch._C._TensorMeta):
        the torch.Tensor subclasses a compile guarded on. Gathered on the first question, kept for the others: each
        graph break and failed compile naming an untraced object asks (read per question, 2,000 compiles' breaks took
        31 s)."""
        if self._tensor_classes is None:
            self._tensor_classes = frozenset(
                line.tensor_class for entry in self._trace.compiles.values() for a in entry.artifacts
                if a.name == GUARDS_ARTIFACT and a.payload is not None
                for line in self.of(a.payload).lines if line.tensor_class is not None)
        return self._tensor_classes


def read_tree(text: str, known: dict[str, TreeLine | None] | None = None) -> GuardTree:
    """A guard tree's text as GuardTree. known: what each line read before says, by its text (added to here)."""
    known = known if known is not None else {}
    read = []
    for raw in text.splitlines():
        said = known[raw] if raw in known else known.setdefault(raw, _read_line(raw))
        if said is not None:
            read.append(said)
    return GuardTree(tuple(read))


def tree_tensor(tree: GuardTree, source: str) -> TreeLine | None:
    """The TENSOR_MATCH line of the tensor at source (`L['x']`), when the tree has one."""
    return next((line for line in tree.lines if line.tensor is not None and line.tensor[0] == source), None)


def tree_subclass(tree: GuardTree, source: str) -> str | None:
    """The class of the tensor at source where it is a subclass of torch.Tensor (`UnitTensor`), as its TENSOR_MATCH
    names it; None for a plain tensor or parameter, or where the tree checks no tensor there."""
    line = tree_tensor(tree, source)
    cls = line.tensor[1] if line is not None and line.tensor is not None else None
    return cls if cls is not None and cls not in PLAIN_TENSOR_CLASSES else None


def tree_caches(tree: GuardTree) -> dict[str, str]:
    """The transformers KV caches the tree guards, by source: `L['kwargs']['cache']` -> "DynamicCache"."""
    found: dict[str, str] = {}
    for line in tree.lines:
        if line.cache is not None:
            found.setdefault(*line.cache)
    return found


def tree_locals(tree: GuardTree) -> dict[str, str]:
    """The class of each wrapper's local the tree types (WRAPPER_LOCALS), by source: `L['fn']` ->
    "torch.nn.modules.container.Sequential" (the first line of each)."""
    found: dict[str, str] = {}
    for line in tree.lines:
        if line.local is not None:
            found.setdefault(*line.local)
    return found


def tree_holds_module(tree: GuardTree, source: str) -> bool:
    """Whether the tree guards what is at source as a module: a submodule of it (`source._modules['model']`) or a
    parameter (`source._parameters['weight']`)."""
    modules, parameters = f"{source}._modules[", f"{source}._parameters["
    return any((line.module is not None and line.module.startswith(modules))
               or (line.tensor is not None and line.tensor[0].startswith(parameters)) for line in tree.lines)


def tree_blocks(tree: GuardTree) -> list[tuple[str, str]]:
    """Each numbered module the tree guards, with its class, in the tree's order: (`L['self']._modules['blocks']
    ._modules['0']`, "__main__.Block") (the repeated blocks name a graph's blocks by it)."""
    return [line.block for line in tree.lines if line.block is not None]


# The two below are read from the guards' sites, each time asked (a failed check rarely asks): torch names the user
# line that made an ID_MATCH of a code object and a guard marking dimensions dynamic. Parsed for every line of every
# tree, they cost a report more (~2.5M instructions, hf_llama) than the reads of a tree's text they save.
def tree_code_files(tree: GuardTree) -> set[str]:
    """The full paths of the code objects the tree's guards name (a clipped path of a guard's comment is one's end)."""
    return {path for line in tree.lines if line.site is not None and "<code object " in line.site.guard
            for path in _CODE_FILE.findall(line.site.guard)}


def tree_marked_dims(tree: GuardTree, source: str) -> dict[str, tuple[str, ...]]:
    """The dimensions of the tensor at source (`L['x']`) the tree's guards check as marked dynamic, by the attribute
    marking them: `_dynamo_dynamic_indices` -> ("0", "1") (each attribute's first guard; one pass for all)."""
    found: dict[str, tuple[str, ...]] = {}
    for line in tree.lines:
        if line.site is not None and line.site.guard.startswith("DIMENSION_DYNAMIC_MARKING_GUARD: ") \
                and ".issubset({" in line.site.guard:
            for m in _MARKED_DIMS.finditer(line.site.guard):
                if m["source"] == source:
                    found.setdefault(m["attr"], tuple(d.strip() for d in m["dims"].split(",")))
    return found


def guard_site_of(line: str) -> GuardSite | None:
    """The guard a tree's line holds with the user line that made it, where it names one."""
    found = _guard_line(line)
    if found is None:
        return None
    guard, code, m = found
    inlined = CODE_GUARD.match(guard)
    return GuardSite(guard, m["file"], int(m["line"]), code, m["hint"], m["func"],
                     inlined and (inlined["key"] or inlined["attr"]), (m["note"] or "").startswith(FIRST_USE_NOTE))


# GUARD_LINE from the `# ` before the path on: what follows the code. Searched for first on every line (most guard
# lines name no user line, and GUARD_LINE backtracks over such a line for ~25 us); the leftmost is where the site is
# on most lines, so it is matched once.
_SITE_TAIL = lazy_compile(r"# (?P<file>\S+?):(?P<line>\d+) in (?P<func>\S+)(?:\s+\(HINT: (?P<hint>.*)\)|\s+\((?P<note>.*)\))?\s*$")
# _SITE_TAIL for a line whose end (past whitespace) is no `)`: its parenthesised groups cannot match there, and their
# `.*` ran to the line's end and back from every `# ` of an (untrusted) line repeating `# f.py:1 in g (` unclosed.
# The same groups, never matching, so its matches read as _SITE_TAIL's.
_UNCLOSED_SITE_TAIL = lazy_compile(r"# (?P<file>\S+?):(?P<line>\d+) in (?P<func>\S+)(?P<hint>(?!))?(?P<note>(?!))?\s*$")
# Lines up to this long keep _SITE_TAIL whatever their end (its `.*` bounded: at most ~0.6 ms a hostile line), so real
# guard lines (~250 characters, the longest seen ~600) pay neither the end's test nor _UNCLOSED_SITE_TAIL's compiling.
_SHORT_LINE = 1024
_KIND = lazy_compile(r"[A-Z_]+: ")  # a guard's kind: `EQUALS_MATCH: `


def _guard_line(line: str) -> tuple[str, str, re.Match[str]] | None:
    """(guard, code, the _SITE_TAIL match) of GUARD_LINE.search(line), found as it finds them without its two lazy
    groups, which tried the rest of the pattern at each character of a line (~25 us a guard line, most of reading a
    tree). The guard ends before the whitespace of the first `# ` past `KIND: `; the code at the first `# ` after that
    where _SITE_TAIL matches (a later end of the guard would try the same and fewer), each end as early as its
    whitespace allows. A line holding a newline (which `.` stops at) is left to GUARD_LINE.
    _SITE_TAIL is searched for once, as the filter of lines with no site: no `# ` before the leftmost it finds can
    match, and there it matches as found (matching the tail again, over torch's long hints, and walking the kind a
    character at a time were ~19K of a site's ~57K instructions). A long line not ending in `)` is read with
    _UNCLOSED_SITE_TAIL, which matches there as _SITE_TAIL does, without its `.*`."""
    site_tail = _SITE_TAIL if len(line) <= _SHORT_LINE or line.rstrip().endswith(")") else _UNCLOSED_SITE_TAIL
    tail = site_tail.search(line)  # (a line without one has no site: GUARD_LINE needs it too)
    if tail is None:
        return None
    if "\n" in line:
        m = GUARD_LINE.search(line)
        return None if m is None else (m["guard"], m["code"], m)
    leftmost = tail.start()
    start = line.find("+- ")
    while start >= 0:
        kind = _KIND.match(line, start + 3)  # (the guard's shortest end: after `KIND: `)
        if kind is not None:
            floor = kind.end()
            first = line.find("# ", floor + 1)  # the code's `# `: the first past that with whitespace before it
            while first >= 0 and not line[first - 1].isspace():
                first = line.find("# ", first + 1)
            if first >= 0:
                code = first + 2
                # the path's: the next such `# ` where _SITE_TAIL matches (none before the leftmost tail)
                at = line.find("# ", max(code + 1, leftmost))
                while at >= 0:
                    if line[at - 1].isspace() and (
                            m := tail if at == leftmost else site_tail.match(line, at)) is not None:
                        # (each end before its `# `'s whitespace: rstrip's, not below the guard's shortest end)
                        return (line[start + 3:floor + len(line[floor:first].rstrip())],
                                line[code:code + len(line[code:at].rstrip())], m)
                    at = line.find("# ", at + 1)
        start = line.find("+- ", start + 1)
    return None


def pinned_lengths(tree: GuardTree) -> dict[str, int]:
    """The length a compile's guard tree fixed of each container it checks: `G['history']` -> 3 (0: `not G['x']`)."""
    return {source: n for line in tree.lines for source, n in line.lengths}


def pinned_state(tree: GuardTree) -> dict[str, str]:
    """What a compile's guard tree fixed about the objects it read, by what it is: `L['self'].scale` -> "0.5",
    `L['self']._modules['dropout'].training` -> "True", `L['self']._modules['backbone']._parameters['weight']
    .requires_grad` -> "False", and the count of each module's hooks of a kind Dynamo traced:
    `L['self']._modules['head']._forward_hooks` -> "1". A module the tree guards with no hooks guarded has none of
    them: "0" (Dynamo guards a hooks dict only where it held a hook when it traced it)."""
    state: dict[str, str] = {}
    hooks: dict[str, int] = {}
    modules: set[str] = set()
    for line in tree.lines:
        if line.pins is not None:
            state[line.pins[0]] = line.pins[1]
        elif line.hooks is not None:
            hooks.setdefault(line.hooks, 0)
        elif line.hook is not None:
            hooks[line.hook] = hooks.get(line.hook, 0) + 1
        elif line.module is not None:
            modules.add(line.module)
    for module in modules:  # (a torch.nn module traced with no hook of its own: none of each kind)
        for kind in ("forward_hooks", "forward_pre_hooks"):
            hooks.setdefault(f"{module}._{kind}", 0)
    state.update((k, str(n)) for k, n in hooks.items())
    return state


def tree_closures(tree: GuardTree) -> dict[str, str]:
    """The closure variables a guard tree names, by their cell (closure_variables of its text)."""
    found: dict[str, str] = {}
    for line in tree.lines:
        if line.closure is not None:
            found.setdefault(*line.closure)
    return found

"""The guards a compilation installed, as torch prints their tree (`dynamo_cpp_guards_str`): what a guard line says.

Each guard line ends with the line of code that made it (`+- KIND: check  # code  # path:N in fn`); a GuardManager
line names the object it guards and that object's type (`+- GuardManager: source=L['x'], accessed_by=...,
type=<class 'torch.Tensor'>`). The source pages place every installed guard on its line; the recompiles ask where
the compile whose guard failed used a tensor, and what object held it.
"""

from __future__ import annotations

from ..lazy_regex import lazy_compile

GUARDS_ARTIFACT = "dynamo_cpp_guards_str"
# A guard with the user line that made it: `+- KIND: check  # code  # path:N in fn`, and torch's hint after it where
# it gave one: `... in fn (HINT: type float)` (a TYPE_MATCH or ID_MATCH on an object; a hint may hold parentheses).
# A shape guard ends in torch's own note instead, `... in fn (_dynamo/variables/tensor.py:2606 in evaluate_expr)`,
# or, for a size's range from 0/1 specialization, FIRST_USE_NOTE: its line is the size's first use.
GUARD_LINE = lazy_compile(r"\+- (?P<guard>[A-Z_]+: .*?)\s+# (?P<code>.*?)\s+# (?P<file>\S+?):(?P<line>\d+) in (?P<func>\S+)"
                          r"(?:\s+\(HINT: (?P<hint>.*)\)|\s+\((?P<note>.*)\))?\s*$")
# What every GUARD_LINE ends with, found without its lazy groups: most guard lines name no user line, and
# GUARD_LINE backtracks over such a line for ~25 us; only the lines this finds are matched in full.
GUARD_TAIL = lazy_compile(r"# \S+?:\d+ in \S+(?:\s+\(.*\))?\s*$")
# torch's note on a guard that its line did not make (symbolic_shapes.py, create_symbol): the line only used the size
# first, and the guard (`2 <= L['x'].size()[0]`) comes from specializing sizes 0 and 1.
FIRST_USE_NOTE = "user code shown is first use of this value"
_TYPE = lazy_compile(r", type=<class '(?P<type>[\w.]{1,300})'>")
_MANAGER = lazy_compile(r"GuardManager: source=(?P<source>[LG]\[.{1,1000}?), accessed_by=")


def _line_at(text: str, at: int) -> str:
    """The whole line of text that holds position at."""
    start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
    return text[start:] if end < 0 else text[start:end]


def tensor_check(text: str, source: str) -> str | None:
    """The TENSOR_MATCH guard line of the tensor at source (`L['x']`), when the tree has one."""
    at = text.find(f"TENSOR_MATCH: check_tensor({source}, ")
    return None if at < 0 else _line_at(text, at)


def guard_site(line: str) -> tuple[str, int, str, str] | None:
    """(path, line, function, code) of the code that made a guard line, when the line names it (the path as torch
    clipped it at the front)."""
    m = GUARD_LINE.search(line) if GUARD_TAIL.search(line) else None
    return None if m is None else (m["file"], int(m["line"]), m["func"], m["code"])


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


# A tensor's check names its class (`check_tensor(L['x'], UnitTensor, DispatchKeySet(...`): a tensor subclass's own.
_CHECKED_CLASS = lazy_compile(r"check_tensor\([^,]{1,1000}, (?P<cls>[\w.]{1,300}), ")
PLAIN_TENSOR_CLASSES = ("Tensor", "Parameter", "Buffer", "FakeTensor")


def tensor_subclass(text: str, source: str) -> str | None:
    """The class of the tensor at source where it is a subclass of torch.Tensor (`UnitTensor`), as its TENSOR_MATCH
    names it; None for a plain tensor or parameter, or where the tree checks no tensor there."""
    line = tensor_check(text, source)
    m = _CHECKED_CLASS.search(line) if line else None
    return m["cls"] if m and m["cls"] not in PLAIN_TENSOR_CLASSES else None


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
_REQUIRES_GRAD = lazy_compile(r"\+- TENSOR_MATCH: check_tensor\((?P<source>[LG]\[[^,]*?), .*?requires_grad=(?P<value>True|False)")
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


def pinned_lengths(text: str) -> dict[str, int]:
    """The length a compile's guard tree fixed of each container it checks: `G['history']` -> 3 (0: `not G['x']`)."""
    lengths: dict[str, int] = {}
    for m in _LENGTH.finditer(text):
        lengths[m["source"] or m["empty"]] = int(m["n"]) if m["n"] else 0
    return lengths


def pinned_state(text: str) -> dict[str, str]:
    """What a compile's guard tree fixed about the objects it read, by what it is: `L['self'].scale` -> "0.5",
    `L['self']._modules['dropout'].training` -> "True", `L['self']._modules['backbone']._parameters['weight']
    .requires_grad` -> "False", and the count of each module's hooks of a kind Dynamo traced:
    `L['self']._modules['head']._forward_hooks` -> "1". A module the tree guards with no hooks guarded has none of
    them: "0" (Dynamo guards a hooks dict only where it held a hook when it traced it)."""
    state: dict[str, str] = {}
    hooks: dict[str, int] = {}
    modules: set[str] = set()
    # Each pattern is tried only on a line holding the text it needs (`TENSOR_MATCH: `, `GuardManager: source=`):
    # five searches per line of the tree were most of this function's time.
    for line in text.splitlines():
        if "_MATCH: " in line:
            if (("EQUALS_MATCH: " in line or "TRUE_MATCH: " in line or "FALSE_MATCH: " in line)
                    and (m := _PINNED.search(line)) is not None):
                # (a module's hooks are counted from their own guards only: a value pinned of its hooks dict says no
                # count, and read as one it was taken for a number)
                if not _HOOKS_DICT.search(m["source"]):
                    state[m["source"]] = m["value"]
                continue
            if "TENSOR_MATCH: " in line and (m := _REQUIRES_GRAD.search(line)) is not None:
                state[f"{m['source']}.requires_grad"] = m["value"]
                continue
        if "GuardManager: source=" not in line:
            continue
        if "DictGuardManager: source=" in line and (m := _HOOKS.search(line)) is not None:
            hooks.setdefault(f"{m['module']}._{m['kind']}", 0)
        elif "ValueManager: GuardManager: source=" in line and (m := _HOOK.search(line)) is not None:
            hooks[m["hooks"]] = hooks.get(m["hooks"], 0) + 1
        elif (m := _MODULE.search(line)) is not None and ("type=<class 'torch.nn.modules." in line
                                                          or _SUBMODULE.search(m["source"])):
            # (a class of the user's own is a module too: a hook registered on `model.block` after compiling was
            # missed where Block was not one of torch's)
            modules.add(m["source"])
    for module in modules:  # (a torch.nn module traced with no hook of its own: none of each kind)
        for kind in ("forward_hooks", "forward_pre_hooks"):
            hooks.setdefault(f"{module}._{kind}", 0)
    state.update((k, str(n)) for k, n in hooks.items())
    return state

"""The lines of a program that may have made a state change that a recompile's guard trees show
(recompiles.StateChange): a hook registered on a module after its function was compiled (`register_forward_hook`),
a module's mode switched (`.eval()`, `.train()`).

torch logs neither line: the guard that failed names the call that ran next (`compiled(x)`), and the change is read
from two guard trees (`L['self']._modules['block']._forward_hooks`: none, then 1). The file is searched for the calls
that make such a change (its syntax tree: comments and strings are no calls) on a receiver that can be the module:
`model.block.register_forward_hook(...)` for self.block's forward hooks (any name for `self`: the caller's own name
for the model is not in the log); `model.eval()` or `model.block.eval()` for self.block.norm's training going False
(eval() and train() set a module's children too). Text order is not run order (a registration inside an `if`, a
loop), so every match is a candidate: one alone is the line, several are each said to be one of them.
"""

from __future__ import annotations

import ast
import os

from ..location import read_local_lines
from ..model.ids import compilation_key
from ..model.records import dataclass
from .recompiles import FrameRecompiles, RecompileStep, Recompiles, StateChange

MAX_SOURCE_BYTES = 4 << 20  # as the source pages: a bigger file is not read
MAX_SOURCE_NODES = 500_000  # ast nodes walked in one file
# The method that adds a hook of each kind, as guard trees name the module's hook dict
HOOK_METHODS = {"_forward_hooks": ("register_forward_hook",),
                "_forward_pre_hooks": ("register_forward_pre_hook",),
                "_backward_hooks": ("register_full_backward_hook", "register_backward_hook"),
                "_backward_pre_hooks": ("register_full_backward_pre_hook",)}


def change_lines(tree: ast.Module, change: StateChange) -> list[int]:
    """The lines of the parsed file holding a call that may have made the change, in order: for a hook added (its
    count grew), the call registering one on that module; for a module's training flag, the call that sets it to
    the value after (`.eval()` / `.train(False)`, or `.train()` / `.train(True)`) on that module or a module holding
    it. [] for any other change, or a module the file cannot name (not the compiled frame's self, nor a global)."""
    module = _module_of(change)
    if module is None:
        return []
    base, path = module
    found: list[int] = []
    try:
        for walked, node in enumerate(ast.walk(tree)):
            if walked > MAX_SOURCE_NODES:
                break
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method, receiver = node.func.attr, node.func.value
            if change.kind == "hook":
                hooks = change.source.rsplit(".", 1)[-1]
                if method in HOOK_METHODS.get(hooks, ()) and _names(receiver, base, path, exact=True):
                    found.append(node.lineno)
            elif (change.kind == "training" and _sets_training(node, method, change.after == "True")
                  and _names(receiver, base, path, exact=False)):
                found.append(node.lineno)
    except RecursionError:
        return []
    return sorted(set(found))


def _module_of(change: StateChange) -> tuple[str | None, str] | None:
    """The module whose state changed, as (its base name, the path after it): ("self" stands for any name) →
    (None, ".block.norm"); a global `model.block` → ("model", ".block"). None where it is neither: a hook count that
    went down (a hook removed), another kind of change."""
    if change.kind == "hook":
        if not (change.before.isdigit() and change.after.isdigit() and int(change.after) > int(change.before)):
            return None
        name = change.name
    elif change.kind == "training" and change.after in ("True", "False"):
        name = change.name.removesuffix(".training")
    else:
        return None
    if change.source.startswith("L['self']"):
        return (None, name.removeprefix("self")) if name == "self" or name.startswith(("self.", "self[")) else None
    if change.source.startswith("G['"):
        head = name.split(".", 1)[0].split("[", 1)[0]
        return (head, name[len(head):]) if head.isidentifier() else None
    return None


def _names(receiver: ast.expr, base: str | None, path: str, exact: bool) -> bool:
    """Whether the receiver can be the module (exact) or one holding it: its text is a base name then the module's
    path, or (not exact) a leading part of it that ends at a name. base None: any name, or a chain of names where
    the path is not empty (`trainer.model.block`)."""
    try:
        text = ast.unparse(receiver)
    except (ValueError, RecursionError):
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
        elif head.isidentifier() or (part and all(p.isidentifier() for p in head.split("."))):
            return True
    return False


def _sets_training(call: ast.Call, method: str, to: bool) -> bool:
    """`m.eval()`, `m.train(False)` set training False; `m.train()`, `m.train(True)` True."""
    if method == "eval":
        return not to and not call.args and not call.keywords
    if method != "train":
        return False
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if given is None:
        return to and not call.args and not call.keywords
    return isinstance(given, ast.Constant) and given.value is to


@dataclass
class StateLine:
    """A line that may have made a state change a recompile shows, and what the source page says of it."""

    path: str
    line: int
    code: str
    recompile: str  # the compile whose guard tree shows the change: "[0/1]"
    kind: str  # "hook" or "training" (StateChange.kind)
    text: str  # what the page says: "registers a hook on self.block after forward was compiled ..."


def state_lines(found: Recompiles) -> list[StateLine]:
    """The lines that may have registered a hook late or switched a module's mode, for each such change a recompile's
    guard trees show (change_lines), searched in the compiled frame's file and the files of the calls whose guards
    failed, where the file is on this machine and agrees with every line the log quotes of it there."""
    out: list[StateLine] = []
    files: dict[str, tuple[ast.Module, list[str]] | None] = {}
    for frame in found.frames:
        quoted = [g.location for s in frame.steps for g in s.failed_guards if g.location is not None]
        paths = [p for p in dict.fromkeys([frame.filename or "", *(q.filename for q in quoted),
                                           *(c.filename for c in frame.called_from)]) if p]
        for path in paths:
            if path not in files:
                files[path] = _parsed(path, [(q.line, q.code) for q in (*quoted, *frame.called_from)
                                             if q.filename == path and q.code])
        for step in frame.steps:
            guard = step.guard
            if guard is None:
                continue
            said: set[tuple[str, int, str]] = set()
            for change in step.also_changed:
                where = [(path, line, lines) for path in paths if (parsed := files[path]) is not None
                         for tree, lines in (parsed,) for line in change_lines(tree, change)]
                for path, line, lines in where:
                    if (path, line, change.kind) in said:  # (several modules switched by one eval())
                        continue
                    said.add((path, line, change.kind))
                    out.append(StateLine(path, line, lines[line - 1].strip(), compilation_key(step.compile_id),
                                         change.kind, _said(frame, step, guard.compile_id, change, len(where))))
    return out


def _said(frame: FrameRecompiles, step: RecompileStep, served: str | None, change: StateChange, candidates: int) -> str:
    compiled = compilation_key(served) if served else "the compile before"
    recompile = compilation_key(step.compile_id)
    function = frame.display_name
    if change.kind == "hook":
        verb = "registers" if candidates == 1 else f"is one of {candidates} lines that may register"
        before = "none" if change.before == "0" else change.before
        return (f"{verb} a hook on {change.name} after {function} was compiled ({compiled}'s guards count {before} "
                f"of its hooks, {recompile}'s {change.hooks_now}): torch does not recompile for a hook, so the calls "
                f"{compiled} served after it was registered ran without it ({recompile} compiled for another change)")
    module = change.name.removesuffix(".training")
    mode = "training" if change.after == "True" else "eval"
    verb = "switches" if candidates == 1 else f"is one of {candidates} lines that may switch"
    return (f"{verb} {module} to {mode} mode ({change.name} {change.before} → {change.after}): {function} was "
            f"compiled again as {recompile} in that mode (one compile per mode, expected)")


def _parsed(path: str, quoted: list[tuple[int, str | None]]) -> tuple[ast.Module, list[str]] | None:
    """The file's syntax tree and lines, where it is a Python file on this machine that agrees with the lines the log
    quotes of it (else a changed file's lines would be marked); None otherwise."""
    if not (os.path.isabs(path) and path.endswith(".py")):
        return None
    lines = read_local_lines(path, MAX_SOURCE_BYTES).lines
    if lines is None or any(line > len(lines) or lines[line - 1].strip() != code for line, code in quoted):
        return None
    try:
        return ast.parse("\n".join(lines)), list(lines)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

"""What the program's own files show of seeding: the first call that sets a known seed, in the file diagnose runs
(program_seed) or in a local module it imports (module_seed)."""

from __future__ import annotations

import ast
import builtins

from . import ProgramSeed
from ...model.records import NamedTuple

# A call that seeds a random generator, in the program's own file: torch.manual_seed(0), torch.cuda.manual_seed_all,
# random.seed, np.random.seed, transformers' set_seed, lightning's seed_everything: any call whose name holds "seed"
# and that is given a seed, but torch.initial_seed() (which reads it) and np.random.SeedSequence (which seeds nothing
# itself). A call given none, or None, seeds from the clock or the OS (random.seed(), torch.seed(),
# torch.cuda.seed_all(), seed_everything(workers=True)): no same seed for each run. Read from the file's syntax tree, so comments, strings and docstrings
# ("the same seed (...)") are no calls. The file diagnose runs is read (the first word of its command that names
# a .py file), and, where it holds no such call, the local modules it imports and those they import (beside it, as
# op_mutations.calling_files.imported_files finds them: `from utils import setup` whose setup() calls torch.manual_seed): a seed set
# in an installed package under a name without "seed" is not seen, and a seeding call the program never reaches is
# taken for one. Evidence enough to word what the runs shared, and to decide whether a second control run is worth
# its cost (another_control); what is compared rests on the control runs.


_NOT_SEEDING = {"initial_seed", "SeedSequence"}
_SEED_KEYWORDS = {"seed", "a"}  # set_seed(seed=42), random.seed(a=3)
# Python's own names (print, len, range): a bare call of one is no name a star import is taken to bind
_BUILTINS = frozenset(dir(builtins))


def _given_a_seed(call: ast.Call) -> bool:
    """Whether a seeding call is given a seed: its first argument, or a seed keyword, not None (a **kwargs may hold
    one: taken as given)."""
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in _SEED_KEYWORDS or k.arg is None),
                                                None)
    return given is not None and not (isinstance(given, ast.Constant) and given.value is None)


def _seeding_call(node: ast.AST) -> tuple[int, int, str] | None:
    """(line, column, the called name) of a call that sets a known seed (the rule above); None for any other node."""
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        last = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        if "seed" in last.lower() and last not in _NOT_SEEDING and _given_a_seed(node):
            return node.lineno, node.col_offset, ast.unparse(node.func)
    return None


def program_seed(file: str, source: str) -> ProgramSeed | None:
    """The first call in a program's source that sets a known seed (the rule above); None where the source is no Python
    diagnose can read (a file nested or long beyond what Python's parser holds included)."""
    try:
        tree = ast.parse(source)
        calls = [call for node in ast.walk(tree) if (call := _seeding_call(node)) is not None]
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _first_seed(file, calls)


def _first_seed(file: str, calls: list[tuple[int, int, str]]) -> ProgramSeed:
    """The seed of the first of these seeding calls (line, column, name) in file; an unseeded file's where none."""
    if not calls:
        return ProgramSeed(file)
    line, _, name = min(calls)
    return ProgramSeed(file, name, line)


# (relative level, dotted name) of a module a source imports: (0, "pkg.utils") of `import pkg.utils`, (1, "utils")
# of `from . import utils`
ImportedModule = tuple[int, str]


class ImportedCalls(NamedTuple):
    """The functions a source calls of the modules it imports (imported_calls)."""

    named: dict[ImportedModule, frozenset[str]]  # called through a name an import binds to the module or its function
    # The bare calls a `from module import *` may bind: names the source binds nowhere itself. Whether the module
    # defines them is for its own file to say (star_names).
    starred: dict[ImportedModule, frozenset[str]]


def imported_calls(source: str) -> ImportedCalls:
    """The functions a source calls of each module it imports, as its imports bind them: a bare `reset(0)` is the
    module's reset only where the source imports that name from it (`from helpers import reset`, `... import reset
    as r` and `r(0)`), `h.reset(0)` only where h is that module (`import helpers as h`; `import pkg.helpers` and
    `pkg.helpers.reset(0)`; `from pkg import helpers`); with `from helpers import *`, a bare call of a name the source
    binds nowhere itself (no def, class, assignment, argument or other import of it) may be helpers' (starred). A
    function of the source's own, or another module's of the same name, is not the module's; nor a module's the
    source imports none of its statements name (`import pkg` and `pkg.utils.reset(0)`): the keys are bounded by its
    imports. Bindings are read from the whole file, wherever they stand (an import or a def inside a function
    included); empty where the source is no Python."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ImportedCalls({}, {})
    functions: dict[str, set[tuple[ImportedModule, str]]] = {}  # name -> (module, its function) it may be
    modules: dict[str, set[ImportedModule]] = {}  # name -> the module it may be
    starred: set[ImportedModule] = set()
    named: set[ImportedModule] = set()  # the modules its imports name
    bound: set[str] = set()  # the names the source binds itself
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                # (`import pkg.utils` binds pkg; `import pkg.utils as u` binds u to pkg.utils)
                bound_name = alias.asname or alias.name.partition(".")[0]
                modules.setdefault(bound_name, set()).add((0, alias.name if alias.asname else bound_name))
                parts = alias.name.split(".")
                named.update((0, ".".join(parts[:i])) for i in range(1, len(parts) + 1))
        elif isinstance(node, ast.ImportFrom):
            module = (node.level, node.module or "")
            named.add(module)
            for alias in node.names:
                if alias.name == "*":
                    starred.add(module)
                    continue
                bound_name = alias.asname or alias.name
                functions.setdefault(bound_name, set()).add((module, alias.name))
                # (a name imported from a package may be its submodule: `from pkg import utils`)
                submodule = (node.level, f"{node.module}.{alias.name}" if node.module else alias.name)
                modules.setdefault(bound_name, set()).add(submodule)
                named.add(submodule)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
    called: dict[ImportedModule, set[str]] = {}
    star_called: dict[ImportedModule, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name):
            name = node.func.id
            for module, function in functions.get(name, ()):
                called.setdefault(module, set()).add(function)
            if name not in functions and name not in modules and name not in bound and name not in _BUILTINS:
                for module in starred:
                    star_called.setdefault(module, set()).add(name)
        elif isinstance(node.func, ast.Attribute):
            # `a.b.reset(0)`: the module bound to a, then its submodule b
            inner: list[str] = []  # (innermost last)
            value: ast.expr = node.func.value
            while isinstance(value, ast.Attribute):
                inner.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name):
                for level, dotted in modules.get(value.id, ()):
                    module = (level, ".".join(filter(None, (dotted, *reversed(inner)))))
                    if module in named:
                        called.setdefault(module, set()).add(node.func.attr)
    return ImportedCalls({module: frozenset(names) for module, names in called.items()},
                         {module: frozenset(names) for module, names in star_called.items()})


def star_names(source: str) -> frozenset[str] | None:
    """The names `from module import *` binds of a module's own functions, read from its source: those its `__all__`
    lists (a list or tuple of strings, assigned or added to at its top level), else its public top-level functions
    (Python binds every public name; module_seed looks at top-level functions only). None where that cannot be told:
    the source is no Python, or its __all__ is computed or changed by a call (__all__.extend)."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    listed: set[str] | None = None
    for statement in body:
        if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
                and isinstance(statement.value.func, ast.Attribute) and isinstance(statement.value.func.value, ast.Name)
                and statement.value.func.value.id == "__all__"):
            return None  # (__all__.extend(...), __all__.append(...))
        targets = (statement.targets if isinstance(statement, ast.Assign)
                   else [statement.target] if isinstance(statement, (ast.AugAssign, ast.AnnAssign)) else [])
        if not any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            continue
        value = getattr(statement, "value", None)
        if not (isinstance(value, (ast.List, ast.Tuple))
                and all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in value.elts)):
            return None
        names = {item.value for item in value.elts if isinstance(item, ast.Constant) and isinstance(item.value, str)}
        listed = (listed or set()) | names if isinstance(statement, ast.AugAssign) else names
    if listed is not None:
        return frozenset(listed)
    return frozenset(statement.name for statement in body if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and not statement.name.startswith("_"))


def module_seed(file: str, source: str, called: frozenset[str]) -> ProgramSeed | None:
    """The first seeding call of an imported module that runs: at its module level (run by the import; a function's
    or lambda's body there does not run), or in one of its top-level functions whose name the importer calls of it
    (called: imported_calls, of this module). A module that only defines a seeding function nobody calls through it
    does not seed the program. None where the source is no Python diagnose can read."""
    def running(node: ast.AST) -> list[tuple[int, int, str]]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return []
        found = [call] if (call := _seeding_call(node)) is not None else []
        return found + [c for child in ast.iter_child_nodes(node) for c in running(child)]

    try:
        calls: list[tuple[int, int, str]] = []
        for statement in ast.parse(source).body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name in called:
                calls += [call for node in ast.walk(statement) if (call := _seeding_call(node)) is not None]
            else:
                calls += running(statement)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _first_seed(file, calls)

"""The import graph of src/ has one direction and no cycle (read from the source with ast, not by importing it).

Layers, lowest first (a module imports only from its own layer or lower ones):
  0 the vocabulary: model (what a log says), errors, location (local path or URL), the package root (its version), _torch,
    invisible (how bidi and zero-width characters are shown)
  1 ingest (reads logs into the model)
  2 analyses (pure functions of the model)
  3 render (html, json, terminal: formats results)
  4 output, report_writer, log_job, runner, diagnose: write files, one log's report, run one log's map, run programs
  5 the front ends: cli, api, capture, demo
  6 __main__
and nothing but __main__ imports cli (capture and the API are beside the CLI, not above it).
Imports under `if TYPE_CHECKING:` are annotations, not arrows, and are left out; imports by name
(importlib.import_module of a module's string) are arrows too. No module imports another's private name.
analyses, model, ingest, render and location.py write no file and print nothing (side_effects).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "compilescope"

LAYERS = {
    "": 0, "model": 0, "errors": 0, "_torch": 0, "wording": 0, "decompile": 0, "location": 0, "invisible": 0,
    "lazy_regex": 0, "cache_dir": 0, "cores": 0, "collector": 0,
    "ingest": 1,
    "analyses": 2,
    "render": 3,
    "output": 4, "report_writer": 4, "log_job": 4, "runner": 4, "diagnose": 4,
    "cli": 5, "api": 5, "capture": 5, "demo": 5, "bytecode_capture": 5, "_child": 5,
    "__main__": 6,
}


def _module(path: Path) -> str:
    parts = ["compilescope", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    """`TYPE_CHECKING` or `typing.TYPE_CHECKING` itself (not `not TYPE_CHECKING`, whose body runs)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING" and ast.unparse(test.value) == "typing")


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of import nodes inside `if TYPE_CHECKING:` blocks (not their else)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def _exists(module: str) -> bool:
    """A compilescope module or package of src/ (a package is its folder's __init__.py)."""
    path = SRC.parent / module.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _string_imports(tree: ast.AST, name: str) -> set[str]:
    """The modules a module imports by name at run time (importlib.import_module): the strings it holds that name a
    compilescope module, relative to itself (`".report"` with import_module(s, __name__): the CLI's command table) or
    absolute (`f"compilescope.decompile.{name}"`: that package). Not the package root's _LAZY: `compilescope.load`
    and the rest are the API's names, resolved on first use, and the root stays layer 0 (every layer reads its
    __version__); test_the_roots_lazy_names_are_defined checks them."""
    if name == "compilescope" or not any(isinstance(n, (ast.Name, ast.Attribute)) and getattr(n, "id", getattr(n, "attr", None)) == "import_module"
               for n in ast.walk(tree)):
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            text = str(node.values[0].value).rpartition(".")[0]  # the constant part's whole names
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        target = name + text if text.startswith(".") else text
        if re.fullmatch(r"compilescope(\.[A-Za-z_]\w*)+", target) and _exists(target):
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the compilescope modules it imports (at any depth of its code: a function-level import counts)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        targets = graph.setdefault(name, set())
        targets.update(_string_imports(tree, name) - {name})
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] == "compilescope":
                    # `from package import x`: an arrow to module x when x is one, else to the package
                    for alias in node.names:
                        submodule = f"{target}.{alias.name}"
                        targets.add(submodule if _exists(submodule) else target)
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name.split(".")[0] == "compilescope")
    return graph


def layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top not in LAYERS:
        raise AssertionError(f"{module}: not in a layer; add its top-level name to LAYERS in {__file__}")
    return LAYERS[top]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), and modules that import themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    arrows = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer(target) > layer(module):
                arrows.append(f"{module} -> {target}")
            elif target.split(".")[:2] == ["compilescope", "cli"] and module.split(".")[:2] not in (
                ["compilescope", "cli"], ["compilescope", "__main__"]
            ):
                arrows.append(f"{module} -> {target} (only __main__ imports the CLI)")
    return arrows


# Arrows left out of the cycle check, each a function-level import that closes a cycle only at call time, and why.
LATE_ARROWS = {
    ("compilescope.cli.serve", "compilescope.cli"): "serve renders a run with the CLI's main, in-process; the command "
                                                    "table (cli/__init__.COMMANDS) names serve",
}


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    for module, target in LATE_ARROWS:
        assert target in graph[module], f"{module} -> {target} is gone: take it off LATE_ARROWS"
        graph[module] = graph[module] - {target}
    assert cycles(graph) == []


def test_the_roots_lazy_names_are_defined():
    """compilescope.load, .report, ...: each name the root resolves on first use is defined where _LAZY says."""
    root = ast.parse((SRC / "__init__.py").read_text(encoding="utf-8"))
    [lazy] = [n.value for n in ast.walk(root) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "_LAZY"]
    assert isinstance(lazy, ast.Dict) and lazy.keys
    for key, value in zip(lazy.keys, lazy.values):
        name, module = ast.literal_eval(key), "compilescope" + ast.literal_eval(value)
        assert _exists(module), module
        path = SRC.parent / module.replace(".", "/")
        source = (path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py").read_text()
        tree = ast.parse(source)
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | {
            a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert name in defined, f"compilescope.{name}: not defined in {module}"


def test_no_import_runs_against_the_flow():
    assert upward_arrows(import_graph()) == []


@pytest.mark.parametrize("edges, expected", [
    ({"compilescope.a": {"compilescope.b"}, "compilescope.b": {"compilescope.a"}}, [["compilescope.a", "compilescope.b"]]),
    ({"compilescope.a": {"compilescope.b"}, "compilescope.b": set()}, []),
    ({"compilescope.a": {"compilescope.a"}}, [["compilescope.a"]]),
])
def test_the_cycle_finder_finds_cycles(edges, expected):
    assert cycles(edges) == expected


def test_the_checker_sees_each_kind_of_arrow_it_forbids():
    """The three arrows the review found are caught (so the two tests above can fail)."""
    graph = {
        "compilescope.capture": {"compilescope.cli.report"},
        "compilescope.analyses.x": {"compilescope.render.html"},
        "compilescope.ingest.reader": {"compilescope.model.trace"},
    }
    assert upward_arrows(graph) == [
        "compilescope.analyses.x -> compilescope.render.html",
        "compilescope.capture -> compilescope.cli.report (only __main__ imports the CLI)",
    ]


def test_string_imports_and_subpackages_are_read():
    graph = import_graph()
    assert {"compilescope.cli.report", "compilescope.cli.serve"} <= graph["compilescope.cli"]  # the command table
    assert "compilescope.decompile" in graph["compilescope.bytecode_capture"]  # f"compilescope.decompile.{name}"
    assert "compilescope.model" in graph["compilescope.analyses.results"]  # `from .. import model`: the package, not the root
    tree = ast.parse("if not TYPE_CHECKING:\n    import a\nif TYPE_CHECKING:\n    import b\nelse:\n    import c\n")
    assert sorted(n.names[0].name for n in ast.walk(tree) if isinstance(n, ast.Import)
                  and id(n) not in _type_checking_only(tree)) == ["a", "c"]


def test_function_level_and_relative_imports_are_read():
    graph = import_graph()
    # cli/report.py imports batch inside ReportCommand.run (a function-level, relative import)
    assert "compilescope.cli.batch" in graph["compilescope.cli.report"]
    assert "compilescope.log_job" in graph["compilescope.cli.batch"]


def private_imports() -> list[str]:
    """`from module import _name` between compilescope modules: a name another module needs is public."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("compilescope")):
                found += [f"{path.relative_to(SRC)}:{node.lineno} {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_private_name_is_imported_from_another_module():
    assert private_imports() == []


# Only cli/, output.py, capture, runner and report_writer write files or print: the layers below hand over what
# they made. Each exception, by file and call, with why it must be there.
PURE_LAYERS = ("analyses", "model", "ingest", "render", "location.py")  # (location.py: read by ingest; output.py writes)
WRITES_ALLOWED = {
    ("model/payloads.py", "tempfile.TemporaryFile"): "payloads past the memory budget spill to an unnamed temporary "
                                                     "file, gone when closed: memory, not output",
}
_FILE_CHANGES = {"makedirs", "mkdir", "replace", "rename", "unlink", "remove", "rmdir", "rmtree", "copy", "copyfile",
                 "copy2", "copytree", "move", "symlink", "link", "utime", "chmod", "truncate"}
_TEMP_FILES = {"TemporaryFile", "NamedTemporaryFile", "SpooledTemporaryFile", "mkstemp", "mkdtemp", "TemporaryDirectory"}


def _writes_by_mode(mode: ast.expr | None) -> bool:
    """An open mode that writes: a literal with w, a, x or +, or one not known until run time."""
    if mode is None:
        return False
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)) or bool(set(mode.value) & set("wax+"))


def side_effects(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, call) for each call that writes a file, changes the disk, or prints: open(..., "w"/"a"/"x"/"+"),
    Path.write_text/write_bytes, os.open with a writing flag, os/shutil file changes, temporary files, print(),
    sys.stdout/stderr.write."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        owner = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
        mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
        call = f"{owner}.{name}" if owner else name
        if ((name == "open" and owner in ("", "io", "builtins", "gzip", "bz2", "lzma") and _writes_by_mode(mode))
                or (call == "os.fdopen" and _writes_by_mode(mode))
                or name in ("write_text", "write_bytes")
                or (call == "os.open" and any(f in ast.unparse(node) for f in ("O_WRONLY", "O_RDWR", "O_CREAT")))
                or (owner in ("os", "shutil") and name in _FILE_CHANGES)
                or (owner == "tempfile" and name in _TEMP_FILES)
                or call == "print"
                or call in ("sys.stderr.write", "sys.stdout.write")):
            found.append((node.lineno, call))
    return found


def test_analyses_model_ingest_and_render_write_no_file_and_print_nothing():
    found, allowed = [], set()
    for layer_name in PURE_LAYERS:
        for path in sorted((SRC / layer_name).rglob("*.py")) if (SRC / layer_name).is_dir() else [SRC / layer_name]:
            relative = str(path.relative_to(SRC))
            for line, call in side_effects(ast.parse(path.read_text(encoding="utf-8"))):
                if (relative, call) in WRITES_ALLOWED:
                    allowed.add((relative, call))
                else:
                    found.append(f"{relative}:{line} {call}")
    assert found == []
    assert allowed == set(WRITES_ALLOWED)  # an exception no longer needed is taken off the list


def test_the_side_effect_checker_sees_each_kind_of_write():
    source = """
open(p, "w"); open(p, mode="ab"); open(p, m); open(p); open(p, "rb"); gzip.open(p, "wt")
Path(p).write_text(t); p.write_bytes(b)
os.open(p, os.O_WRONLY | os.O_CREAT); os.open(p, os.O_RDONLY); os.fdopen(fd, "wb"); os.fdopen(fd, "rb")
os.makedirs(d); shutil.rmtree(d); os.replace(a, b); tempfile.mkdtemp()
print(x); sys.stderr.write(x); sys.stdout.write(x); log.write(x)
"""
    assert sorted(call for _, call in side_effects(ast.parse(source))) == sorted([
        "open", "open", "open", "gzip.open", "Path(p).write_text", "p.write_bytes", "os.open", "os.fdopen",
        "os.makedirs", "shutil.rmtree", "os.replace", "tempfile.mkdtemp", "print", "sys.stderr.write", "sys.stdout.write"])


# What reads the disk: an analysis takes the user's files from the model (model/source_files, read by
# ingest/source_files), so that what it says depends on its arguments, not on the machine it runs on.
_DISK_CALLS = {"open", "stat", "lstat", "isfile", "exists", "read_local_lines", "read_local_bytes", "open_regular",
               "open_regular_file", "read_text", "read_bytes", "listdir", "scandir"}


def disk_calls(tree: ast.AST) -> list[str]:
    """The calls of tree that read the disk (by the called name: `open(`, `os.stat(`, `Path(p).read_text(`)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(
                node.func, ast.Attribute) else None
            if name in _DISK_CALLS:
                found.append(f"{name}() at line {node.lineno}")
    return found


# analyze() and diagnose read the files the analyses list between their steps (which module a calling file imports is
# known once it is read): analyses/user_files.py runs those rounds through ingest, and no other analysis calls it.
_READ_ROUNDS = {"read_source_files", "read_source_file"}


def test_no_analysis_reads_the_disk():
    found = {str(path.relative_to(SRC)): calls for path in sorted((SRC / "analyses").rglob("*.py"))
             if (calls := disk_calls(ast.parse(path.read_text(encoding="utf-8"))))}
    assert found == {}
    rounds = {str(path.relative_to(SRC)) for path in sorted((SRC / "analyses").rglob("*.py"))
              if any(isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                     in _READ_ROUNDS for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))}
    assert rounds == {"analyses/user_files.py"}


def test_the_disk_call_finder_sees_each_kind_of_call():
    """So the test above can fail: each way the analyses read files before (analyses/user_kernels.py's os.stat)."""
    code = "open(p)\nos.stat(p)\nread_local_lines(p, 1)\nlocation.open_regular_file(p)\nPath(p).read_text()\nf(p)\n"
    assert [c.split("(")[0] for c in disk_calls(ast.parse(code))] == [
        "open", "stat", "read_local_lines", "open_regular_file", "read_text"]


# Past this a module holds several jobs and a newcomer cannot find their way in: split it into a package, the way
# analyses/diff/ is (its __init__.py keeps the saved classes, whose tags name their module, and lists its modules).
MAX_MODULE_LINES = 1500


def test_no_module_is_too_long_to_find_ones_way_in():
    long = {str(path.relative_to(SRC)): lines for path in sorted(SRC.rglob("*.py"))
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_each_package_of_the_analyses_lists_its_modules():
    packages = sorted(path.parent for path in (SRC / "analyses").glob("*/__init__.py"))
    assert len(packages) >= 5  # diff, recompiles, runtime, op_mutations, diagnosis
    unlisted = {}
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
        missing = [p.name for p in sorted(package.glob("*.py")) if p.name != "__init__.py" and p.name not in doc]
        if missing:
            unlisted[package.name] = missing
    assert unlisted == {}

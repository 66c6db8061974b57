"""The import graph of src/ has one direction and no cycle (read from the source with ast, not by importing it).

Layers, lowest first (a module imports only from its own layer or lower ones):
  0 the vocabulary: model (what a log says), errors, location (local path or URL), the package root (its version), _torch,
    invisible (how bidi and zero-width characters are shown)
  1 ingest (reads logs into the model)
  2 analyses (pure functions of the model)
  3 render (html, json, terminal: formats results)
  4 output, report_writer, worker, runner, diagnose: write files, one log's report, run one log's map, run programs
  5 the front ends: cli, api, capture, demo
  6 __main__
and nothing but __main__ imports cli (capture and the API are beside the CLI, not above it).
Imports under `if TYPE_CHECKING:` are annotations, not arrows, and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "compilescope"

LAYERS = {
    "": 0, "model": 0, "errors": 0, "_torch": 0, "wording": 0, "decompile": 0, "location": 0, "invisible": 0,
    "lazy_regex": 0, "cache_dir": 0, "cores": 0, "collector": 0,
    "ingest": 1,
    "analyses": 2,
    "render": 3,
    "output": 4, "report_writer": 4, "worker": 4, "runner": 4, "diagnose": 4,
    "cli": 5, "api": 5, "capture": 5, "demo": 5, "bytecode_capture": 5, "_child": 5,
    "__main__": 6,
}


def _module(path: Path) -> str:
    parts = ["compilescope", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of import nodes inside `if TYPE_CHECKING:` blocks."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def import_graph() -> dict[str, set[str]]:
    """module -> the compilescope modules it imports (at any depth of its code: a function-level import counts)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        name = _module(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        targets = graph.setdefault(name, set())
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
                        is_module = (SRC.parent / submodule.replace(".", "/")).with_suffix(".py").exists()
                        targets.add(submodule if is_module else target)
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


def test_the_import_graph_has_no_cycle():
    assert cycles(import_graph()) == []


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


def test_function_level_and_relative_imports_are_read():
    graph = import_graph()
    # cli/report.py imports batch inside ReportCommand.run (a function-level, relative import)
    assert "compilescope.cli.batch" in graph["compilescope.cli.report"]
    assert "compilescope.worker" in graph["compilescope.cli.batch"]


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

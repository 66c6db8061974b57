"""The files that call the custom ops, read where they agree with the lines the log quotes of them, and the local
modules they import, found where Python's path search finds them; and the files ingest reads for the analysis, in
its rounds (files_wanted, package_markers, modules_wanted)."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable, Sequence

from ...model.source_files import MAX_SOURCE_BYTES, SourceFiles
from ...model.trace import Compile, Trace
from . import CHANGED, MAX_MODULE_NODES, NOT_READABLE, FoundCalls, OpSource
from .graph_calls import found_calls




def read_calling_files(found: FoundCalls, files: SourceFiles) -> tuple[dict[str, list[tuple[str, OpSource]]],
                                                                          dict[str, str], dict[str, str]]:
    """(op -> (file, what its source says), per definition; path -> why its ops were not read; path -> its text, of
    each file read) of the files of the calls."""
    sources: dict[str, list[tuple[str, OpSource]]] = {}
    unread: dict[str, str] = {}
    texts: dict[str, str] = {}
    for path in sorted({p for p, _, _ in found.files}):
        add_file_ops(path, found.files, sources, unread, texts, files)
    return sources, unread, texts


def importers(found: FoundCalls, sources: dict[str, list[tuple[str, OpSource]]], texts: dict[str, str]) -> list[str]:
    """The calling files read whose imports are followed: those of the calls of an op they do not define."""
    return [path for path in sorted({c.location.filename for op, op_calls in found.calls.items() if op not in sources
                                     for c in op_calls}) if path in texts]


def import_roots(found: FoundCalls, path: str) -> list[str]:
    """Where the calling file at path's absolute imports are found: script_folders of the compiles calling from it."""
    return script_folders([place[0] for op, op_calls in found.calls.items()
                           for c, place in zip(op_calls, found.where[op]) if c.location.filename == path], path)


def files_wanted(trace: Trace) -> list[str]:
    """The files op_mutations reads first (_file_text: an absolute path to a .py file): those of the custom ops'
    calls. For ingest to read; then modules_wanted."""
    return sorted({p for p, _, _ in found_calls(trace).files if os.path.isabs(p) and p.endswith(".py")})


def modules_wanted(trace: Trace, files: SourceFiles) -> list[tuple[str, ...]]:
    """Where op_mutations looks for the modules the calling files import (files: as ingest read files_wanted), each
    module's candidates in Python's order (imported_modules): for ingest to read the first that is a file of each."""
    found = found_calls(trace)
    if not found.calls:
        return []
    sources, _, texts = read_calling_files(found, files)
    return [group for path in importers(found, sources, texts)
            for group in imported_modules(path, texts[path], import_roots(found, path), files.is_regular_file)]


def package_markers(trace: Trace, files: SourceFiles) -> list[str]:
    """The `__init__.py` files that make the importing calling files' folders packages, from each folder up to its
    import roots (files: as ingest read files_wanted): for ingest to read before modules_wanted, which follows a
    relative import only inside a package."""
    found = found_calls(trace)
    if not found.calls:
        return []
    sources, _, texts = read_calling_files(found, files)
    markers: list[str] = []
    for path in importers(found, sources, texts):
        below = tuple(os.path.join(os.path.normpath(root), "") for root in import_roots(found, path))
        folder = os.path.dirname(path)
        while os.path.normpath(folder).startswith(below) and len(markers) < MAX_IMPORTS:
            markers.append(os.path.join(folder, "__init__.py"))
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return list(dict.fromkeys(markers))


def read_lines(path: str, files: SourceFiles) -> list[str] | None:
    """The lines of a .py file as ingest read it (files), where it holds at most MAX_SOURCE_BYTES."""
    read = files.lines(path, MAX_SOURCE_BYTES) if path.endswith(".py") else None
    return list(read) if read is not None else None


def add_file_ops(path: str, sites: set[tuple[str, int, str | None]], sources: dict[str, list[tuple[str, OpSource]]],
                  unread: dict[str, str], texts: dict[str, str], files: SourceFiles) -> None:
    """Read path (_file_text, checked against the lines the log quotes of it) into texts and the ops it defines into
    sources, or why not into unread."""
    quoted = [(line, code) for p, line, code in sites if p == path and code]
    text, why = _file_text(path, quoted, files)
    if text is None:
        unread[path] = why
        return
    texts[path] = text
    # (here: reading an op's definitions, with their patterns and op_bodies, is for a log whose graphs call custom ops)
    from .definitions import custom_op_sources

    for op, defs in custom_op_sources(text).items():
        sources.setdefault(op, []).extend((path, d) for d in defs)


def _file_text(path: str, quoted: list[tuple[int, str]], files: SourceFiles) -> tuple[str | None, str]:
    """(the file's text, ""), where it is on this machine and every line the log quotes of it agrees with it; else
    (None, why it was not read): NOT_READABLE, or CHANGED (the file changed since the run: nothing is read from it)."""
    lines = read_lines(path, files) if os.path.isabs(path) else None
    if lines is None:
        return None, NOT_READABLE
    if any(line > len(lines) or lines[line - 1].strip() != code for line, code in quoted):
        return None, CHANGED
    return "\n".join(lines), ""


MAX_IMPORTS = 64  # import statements of a calling file followed


def script_folders(compiles: list[Compile], path: str) -> list[str]:
    """Where an absolute import of the calling file at path is found (sys.path's first entry): the folder of the
    script, the file of the outermost `<module>` frame of the compiles' dynamo_start stacks (`python main.py` runs
    main.py's module code first, whatever file the compiled function is in); the calling file's own folder where no
    stack has such a frame."""
    folders: list[str] = []
    for entry in compiles:
        outermost = next((f for f in entry.stack or () if f.name == "<module>"), None)  # (stacks are outermost first)
        if outermost is not None and os.path.dirname(outermost.filename) not in folders:
            folders.append(os.path.dirname(outermost.filename))
    return folders or [os.path.dirname(path)]


def imported_modules(path: str, text: str, roots: Sequence[str] | None = None,
                     is_file: Callable[[str], bool] | None = None) -> list[tuple[str, ...]]:
    """Where the modules a calling file imports (`from mutops import scale`, `import pkg.ops`, `from .ops import
    scale`) may lie, each module's candidates in the order Python's path search takes them: an absolute import in
    roots (sys.path's first entry: the folder of the script `python prog.py` runs, the working folder of `python -m
    pkg.prog`; None: the calling file's own, as where it is the script), a relative one in the calling file's package;
    a module's `.py` or its package's `__init__.py`. A folder above is not looked in (Python does not: a `utils.py`
    there is another program's), nor is a relative import followed outside a package: the script's own (`python
    prog.py` refuses it), or one climbing above its top-level package (each folder climbed must hold an `__init__.py`
    that is_file finds, below a root: package_markers lists them for ingest to read; without is_file, none is).
    Bounded: the file is parsed only where it imports, MAX_IMPORTS statements followed.
    (imported_files: the first of each that is a file.)"""
    if "import" not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    folder = os.path.dirname(path)
    bases = list(roots) if roots is not None else [folder]
    below = [os.path.join(os.path.normpath(base), "") for base in bases]

    def in_package(candidate: str) -> bool:
        """A package's folder, as a relative import can name: it holds __init__.py and lies below a root (a file in
        a root itself is the script, `__main__`, or a top-level module: neither has a package; one above a root is
        not imported as a package of this program)."""
        return is_file is not None and os.path.normpath(candidate).startswith(tuple(below)) \
            and is_file(os.path.join(candidate, "__init__.py"))

    # (folders to look in, dotted module name) of each import
    modules: list[tuple[tuple[str, ...], str]] = []
    statements = 0
    try:
        for walked, node in enumerate(ast.walk(tree)):
            if walked > MAX_MODULE_NODES or statements >= MAX_IMPORTS:
                break
            if isinstance(node, ast.Import):
                statements += 1
                modules.extend((tuple(bases), alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                statements += 1
                if node.level:  # relative: the calling file's package, `level - 1` folders up
                    package: str | None = folder if in_package(folder) else None
                    for _ in range(node.level - 1):
                        if package is None:
                            break
                        package = os.path.dirname(package)
                        package = package if in_package(package) else None
                    if package is None:
                        continue  # (Python raises ImportError: no known parent package, or beyond the top-level one)
                    looked_in: tuple[str, ...] = (package,)
                else:
                    looked_in = tuple(bases)
                if node.module:
                    modules.append((looked_in, node.module))
                # (`from pkg import ops`, `from . import ops`: a name imported may be a module of the package)
                modules.extend((looked_in, f"{node.module}.{a.name}" if node.module else a.name)
                               for a in node.names if a.name != "*")
    except RecursionError:
        return []
    groups: list[tuple[str, ...]] = []
    for looked_in, module in dict.fromkeys(modules):
        parts = module.split(".")
        if all(part.isidentifier() for part in parts):
            groups.append(tuple(candidate for base in looked_in for candidate in (
                os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py"))))
    return groups


def imported_files(path: str, text: str, files: SourceFiles, roots: Sequence[str] | None = None) -> list[str]:
    """The local files of the modules a calling file imports (imported_modules, roots as there): of each, the first
    candidate that is a regular file (files: as ingest read them). What is read of each module is bounded as the
    calling file is (read_lines)."""
    return first_files(path, imported_modules(path, text, roots, files.is_regular_file), files.is_regular_file)


def first_files(path: str, modules: Iterable[Iterable[str]], is_file: Callable[[str], bool]) -> list[str]:
    """Of each module's candidates (imported_modules), the first that is_file says is a regular file, as Python's path
    search takes it; not the importing file itself, each once."""
    found: list[str] = []
    for candidates in modules:
        first = next((candidate for candidate in candidates if is_file(candidate)), None)
        if first is not None and first != path and first not in found:
            found.append(first)
    return found

"""depyf's dump layout from a log: per compiled function, its graphs, kernels and transformed code as .py files.

Names as depyf lays them out (`__compiled_fn_6 Captured Graph 0.py`, `__transformed_code_0_for_f.py`,
`full_code_for_f_0.py`). A compile's files take torch's name of its graph (`__compiled_fn_6`, depyf's, the name its
transformed code calls) where the log has that code; torch logs it nowhere else, so a compile without it is named by
its compile id (`__compiled_fn_1_0` for [1/0], `__compiled_fn_1_0_1` for [1/0_1], `__compiled_fn_ca0_3_0` for
compiled autograd's [!0/3/0]: two or more number parts, never one of torch's names), where depyf, which runs in the
process, would have torch's. Every file's first line says its compile id. torch.export's ExportedPrograms are
`__exported_program Exported program N.py`. Unlike depyf's, every file here is valid Python: text that is not code
(guards, notes) is written as comments.

A dump's .py files hold the log's code: run or import them only for a log you trust. A graph is written as code only
where it is what torch prints a GraphModule as (classes of undecorated methods: defining them runs nothing of the log's
text), transformed code only as undecorated functions; anything else is written as comments. Kernel files
(inductor_output_code) are module-level code by design, as depyf writes them: importing one runs it.
"""

from __future__ import annotations

import ast
import keyword
import re
import textwrap
from typing import Iterator

from ..analyses.transformed import EXPORTED_PROGRAM_DUMP, MODULE_CODE_DUMPS, CompileDump
from ..model.names import safe_stem
from ..model.trace import Trace


# FX prints the class of a graph made by a function as `class <lambda>(torch.nn.Module):` (AOTAutograd's forward and
# inference graphs, post-grad graphs): not Python.
_CLASS_LINE = re.compile(r"^(?P<indent>[ \t]*)class (?P<name>[^\s(:]+)(?P<rest>[(:])", re.M)


def _python_name(name: str) -> str:
    word = re.sub(r"\W+", "_", name).strip("_") or "GraphModule"
    word = word if not word[0].isdigit() else f"_{word}"
    return f"{word}_" if keyword.iskeyword(word) else word


def _inert_function(node: ast.stmt) -> bool:
    """An undecorated function whose definition calls nothing: no defaults, and annotations only constants or names
    (torch prints `L_x_: "f32[4][1]cpu"`, compiled autograd's graphs `L_inputs_: list`), as these are evaluated when
    the def runs; its body runs only when called."""
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return False
    a = node.args
    annotations = [arg.annotation for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                   if arg is not None and arg.annotation is not None] + ([node.returns] if node.returns else [])
    return (not a.defaults and not any(d is not None for d in a.kw_defaults)
            and all(_named(x) for x in annotations))


def _named(node: ast.expr) -> bool:
    """An annotation that only names things: a constant, a dotted name, one subscripted by such (`list[int]`)."""
    if isinstance(node, ast.Subscript):
        return _named(node.value) and _named(node.slice)
    if isinstance(node, ast.Tuple):
        return all(_named(e) for e in node.elts)
    return isinstance(node, ast.Constant) or _dotted(node)


def _dotted(node: ast.expr) -> bool:
    """A base class as torch prints it (`torch.nn.Module`): names and attributes only, nothing called."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _inert_class(node: ast.stmt) -> bool:
    """A class as torch prints a GraphModule, whose definition runs nothing of the log's text: undecorated, its bases
    dotted names, its body methods (_inert_function) and such classes (a higher-order op's subgraph)."""
    return (isinstance(node, ast.ClassDef) and not node.decorator_list and not node.keywords
            and all(_dotted(b) for b in node.bases)
            and all(_inert_function(n) or _inert_class(n) or isinstance(n, ast.Pass) for n in node.body))


def _graph_source(text: str, module_code: bool = False) -> str:
    """A graph's printed code as valid Python: a class name FX printed that is not an identifier becomes one; if
    the text still does not parse, or is not what torch prints a graph as (_inert_class: module-level code there
    would run when the file is), it is kept whole as comments. module_code: Inductor's output code, module-level
    code by design (MODULE_CODE_DUMPS), kept where it parses."""
    fixed = _CLASS_LINE.sub(lambda m: f"{m['indent']}class {_python_name(m['name'])}{m['rest']}"
                            if not m["name"].isidentifier() else m.group(0), text)
    try:
        tree = ast.parse(fixed)
    except (SyntaxError, ValueError):
        return _comment(text)
    return fixed if module_code or (tree.body and all(_inert_class(n) for n in tree.body)) else _comment(text)


def _exported_source(text: str) -> str:
    """An ExportedProgram as torch prints it ("ExportedProgram:", its GraphModule indented, then "Graph signature:" and
    the range constraints): the graph as _graph_source writes it, the rest as comments."""
    head, _, program = text.partition("\n")
    if head.strip() != "ExportedProgram:":
        return _comment(text)
    graph, mark, rest = program.partition("\nGraph signature:")
    return "# ExportedProgram:\n" + _graph_source(textwrap.dedent(graph).strip("\n") + "\n") + _comment(mark.lstrip("\n") + rest)


def _code_source(text: str) -> str:
    """Transformed code as written: code only where it is what the decompiler writes, undecorated functions
    (_inert_function); anything else, module-level code that would run when the file is, as comments."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return _comment(text)
    return text if tree.body and all(_inert_function(n) for n in tree.body) else _comment(text)


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" if line else "#\n" for line in text.splitlines())


def _commented(text: str) -> str:
    """text as comments, its lines that are comments already kept as they are (an annotated disassembly)."""
    return "".join(f"{line}\n" if line.startswith("#") else f"# {line}\n" if line else "#\n"
                   for line in text.splitlines())


def _one_line(text: object) -> str:
    """Log text (a file or function name, a note) fit for one line of a header comment: a line break in it, or any
    character that is not printable, would end the comment and make the rest code (`import os; ...` run by whoever
    runs the file)."""
    return " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())


def dump_src_files(trace: Trace, dumps: list[CompileDump]) -> Iterator[tuple[str, str]]:
    per_function: dict[str, list[CompileDump]] = {}
    for dump in dumps:
        fn = safe_stem(dump.fn)
        for title, artifacts in dump.graphs:
            suffix = dump.suffix(title)
            comment = "//" if suffix == ".cpp" else "#"
            header = (f"{comment} {_one_line(dump.what)}{_one_line(dump.called_said)} (compilescope dump-src from "
                      f"{_one_line(trace.source)})\n")
            for k, artifact in enumerate(artifacts):
                text = trace.payload_text(artifact.payload)
                source = (text if suffix != ".py" else _exported_source(text) if title == EXPORTED_PROGRAM_DUMP
                          else _graph_source(text, title in MODULE_CODE_DUMPS))
                yield f"{fn} {title} {k}{suffix}", header + source
        if dump.function:
            per_function.setdefault(dump.function, []).append(dump)
    for name, entries in per_function.items():
        stem = safe_stem(name)
        full: list[str] = [f"# What torch.compile made of {_one_line(name)}: per compilation, its guards and the code "
                           "run instead.\n"]
        k = 0
        for dump in entries:
            code = dump.code
            full.append(f"\n# ===== compile id {_one_line(dump.entry.compile_id)} =====\n")
            if dump.guards is not None:
                full.append("# Guards (this code runs only while they hold):\n" + _comment(trace.payload_text(dump.guards.payload)))
            if code is None:
                full.append(_no_code_note(dump))
                continue
            note = f"# compile id {_one_line(dump.entry.compile_id)}: {_one_line(code.note)}\n"
            if dump.graph_said:
                note += f"# {_one_line(dump.graph_said)}\n"
            # (code not decompiled is the log's text, a disassembly: comments, never code to run)
            source = _code_source(code.source) if code.decompiled else _commented(code.source)
            yield f"__transformed_code_{k}_for_{stem}.py", note + source
            full.append(note + source)
            k += 1
        yield f"full_code_for_{stem}_0.py", "".join(full)


def _no_code_note(dump: CompileDump) -> str:
    """Why a compilation has no transformed code: a restarted attempt's code is its retry's; otherwise not recorded."""
    if dump.retry is not None:
        return (f"# This attempt restarted (a graph break); Dynamo compiled the frame again as {_one_line(dump.retry)}, "
                "whose code follows.\n")
    return "# The transformed code is not in this log (record it with `compilescope run` or capture()).\n"

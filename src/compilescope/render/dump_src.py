"""depyf's dump layout from a log: per compiled function, its graphs, kernels and transformed code as .py files.

Names as depyf writes them (`__compiled_fn_N Captured Graph 0.py`, `__transformed_code_0_for_f.py`,
`full_code_for_f_0.py`), so tools and habits built on depyf's `prepare_debug` / vLLM's `debug_dump_path`
find the same files. Unlike depyf's, every file here is valid Python: text that is not code (guards, notes)
is written as comments.
"""

from __future__ import annotations

import ast
import keyword
import re
from typing import Iterator

from ..analyses import Results
from ..analyses.fx_sites import AOT_FORWARD, POST_GRAD
from ..analyses.transformed import GUARDS, TransformedCode
from ..model.names import safe_stem
from ..model.trace import Artifact, Compile, Trace

# depyf's graph file titles, and the artifacts that hold them (first present wins).
GRAPH_FILES = (
    ("Captured Graph", ("dynamo_output_graph",)),
    ("Joint graph", ("aot_joint_graph",)),
    ("Forward graph", AOT_FORWARD),
    ("Backward graph", ("aot_backward_graph",)),
    ("AFTER POST GRAD", POST_GRAD),
    ("kernel", ("inductor_output_code",)),
)
_COMPILED_FN = re.compile(r"__compiled_fn_\d+")


# FX prints the class of a graph made by a function as `class <lambda>(torch.nn.Module):` (AOTAutograd's forward and
# inference graphs, post-grad graphs): not Python.
_CLASS_LINE = re.compile(r"^(?P<indent>[ \t]*)class (?P<name>[^\s(:]+)(?P<rest>[(:])", re.M)


def _python_name(name: str) -> str:
    word = re.sub(r"\W+", "_", name).strip("_") or "GraphModule"
    word = word if not word[0].isdigit() else f"_{word}"
    return f"{word}_" if keyword.iskeyword(word) else word


def _graph_source(text: str) -> str:
    """A graph's printed code as valid Python: a class name FX printed that is not an identifier becomes one; if
    the text still does not parse, it is kept whole as comments."""
    fixed = _CLASS_LINE.sub(lambda m: f"{m['indent']}class {_python_name(m['name'])}{m['rest']}"
                            if not m["name"].isidentifier() else m.group(0), text)
    try:
        ast.parse(fixed)
    except (SyntaxError, ValueError):
        return _comment(text)
    return fixed


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" if line else "#\n" for line in text.splitlines())


def _fn_name(entry: Compile, code: TransformedCode | None) -> str:
    """The graph's name in the transformed code (`__compiled_fn_1`); a name from the compile id when not logged."""
    if code is not None:
        for name in code.compiled_fns:
            m = _COMPILED_FN.match(name)
            if m:
                return m.group(0)
    cid = entry.compile_id
    return f"__compiled_fn_{cid.frame_id}_{cid.frame_compile_id}" if cid else "__compiled_fn"


def _of(entry: Compile, names: tuple[str, ...]) -> list[Artifact]:
    for name in names:
        found = [a for a in entry.artifacts if (a.name == name or a.kind == name) and a.payload is not None]
        if found:
            return found
    return []


def dump_src_files(trace: Trace, results: Results) -> Iterator[tuple[str, str]]:
    per_function: dict[str, list[tuple[Compile, TransformedCode | None]]] = {}
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        code = results.transformed.get(entry.dir_name)
        header = f"# compile id {entry.compile_id} (compilescope dump-src from {trace.source})\n"
        fn = safe_stem(_fn_name(entry, code))
        for title, names in GRAPH_FILES:
            for k, artifact in enumerate(_of(entry, names)):
                yield f"{fn} {title} {k}.py", header + _graph_source(trace.payload_text(artifact.payload))
        name = (code.function if code else None) or (entry.metrics or {}).get("co_name") or (
            entry.stack[-1].name if entry.stack else None)
        if name:
            per_function.setdefault(str(name), []).append((entry, code))
    for name, entries in per_function.items():
        stem = safe_stem(name)
        full: list[str] = [f"# What torch.compile made of {name}: per compilation, its guards and the code run instead.\n"]
        k = 0
        for entry, code in entries:
            guards = _of(entry, GUARDS)
            full.append(f"\n# ===== compile id {entry.compile_id} =====\n")
            if guards:
                full.append("# Guards (this code runs only while they hold):\n" + _comment(trace.payload_text(guards[0].payload)))
            if code is None:
                full.append(_no_code_note(entry, entries))
                continue
            note = f"# compile id {entry.compile_id}: {code.note}\n"
            yield f"__transformed_code_{k}_for_{stem}.py", note + code.source
            full.append(note + (code.source if code.decompiled else _comment(code.source)))
            k += 1
        yield f"full_code_for_{stem}_0.py", "".join(full)


def _no_code_note(entry: Compile, entries: list[tuple[Compile, TransformedCode | None]]) -> str:
    """Why a compilation has no transformed code: a restarted attempt's code is its retry's; otherwise not recorded."""
    cid = entry.compile_id
    retry = next((e.compile_id for e, code in entries if code is not None and e.compile_id is not None and cid is not None
                  and (e.compile_id.compiled_autograd_id, e.compile_id.frame_id, e.compile_id.frame_compile_id)
                  == (cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)
                  and (e.compile_id.attempt or 0) > (cid.attempt or 0)), None)
    if retry is not None:
        return f"# This attempt restarted (a graph break); Dynamo compiled the frame again as {retry}, whose code follows.\n"
    return "# The transformed code is not in this log (record it with `compilescope run` or capture()).\n"

"""What run_facts reads of printed code: the nodes of an FX graph Dynamo printed (graph_nodes: op, target and user
line, never the names FX generates), and the kernels Inductor's output code defines or calls (kernel_counts)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ..fx_sites import FX_NODE, FX_SOURCE_COMMENT
from ..numpy_graphs import numpy_target
from ..user_locations import is_python_library_file, is_toolchain_file


_CALL = re.compile(r"^(?P<target>[A-Za-z_][\w.]*)\(")
_INFIX = re.compile(r"^\S+\s+(?P<op>[-+*/@%&|^<>=!]+|//|\*\*)\s+\S+$")
_METHOD = re.compile(r"^[a-z_]\w*\.(?P<method>[A-Za-z_]\w*)\(")
# A user Triton kernel's launch in a Dynamo graph and the grid it is given: `triton_kernel_wrapper_mutation(kernel_idx = 0,
# ..., grid = [(floordiv, 1, 1)], ...)` (a list of tuples: one per config)
_LAUNCH_GRID = re.compile(r"^torch\.ops\.higher_order\.triton_kernel_wrapper_\w+\(.*?\bgrid = \[(?P<grid>[^\]]*)\]")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_KERNEL_DEF = re.compile(r"=\s*async_compile\.(?P<kind>cpp_pybinding|cpp|triton|cuda|halide)\(")
_SYMBOL = re.compile(r"\b[suf]\d+\b")  # generated symbol names (s0, s77, u0): not part of what a node is
_EXTERN = re.compile(r"\bextern_kernels\.(\w+)\(")


def not_a_user_line(filename: str) -> bool:
    """torch's (or Triton's) own code, Python's library, or code torch generated (`<eval_with_key>.5`, numbered per
    process, so another run numbers it differently): nodes from there are matched by op and target. A library the
    model comes from (transformers, in site-packages) keeps its lines: they are the model's code."""
    return filename.startswith("<") or is_toolchain_file(filename) or is_python_library_file(filename)


def graph_nodes(text: str) -> list[list[Any]]:
    """The nodes of a printed FX graph (dynamo_output_graph) as [op, target, user line, code, grid_of].

    FX prints `name: "type" = target(args)` after a `# File: path:line in f, code: ...`
    comment naming the user line; names are generated (add_1, l_x_), so they are dropped.
    A user Triton kernel's grid computed by `triton.cdiv(n, BLOCK)` is nodes at Triton's line (`(x + y - 1) // y`),
    no user line: they are placed at the launch whose grid they compute (grid_of: its target), as the user wrote them.
    """
    nodes: list[list[Any]] = []
    unplaced: dict[str, tuple[int, str]] = {}  # a node at no user line, by FX's name -> (its index in nodes, its expression)
    where: str | None = None
    code: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# File:"):
            m = FX_SOURCE_COMMENT.match(line)
            if m and not_a_user_line(m["file"]):
                where, code = None, None
            elif m:
                where, code = f"{m['file']}:{m['line']}", (m["code"] or "").strip() or None
            continue
        if not line or line.startswith(("#", "class ", "def ")):
            if line.startswith("def forward"):
                params = re.sub(r'"[^"]*"', "", line[len("def forward("):].rstrip("):"))  # types hold commas
                nodes.extend(["placeholder", _SYMBOL.sub("s#", p.split(":")[0].strip()), None, None, None]
                             for p in params.split(",")[1:] if p.strip())
            continue
        if line.startswith("return "):
            nodes.append(["output", "output", None, None, None])
            continue
        m = FX_NODE.match(line)
        if not m:
            continue
        rhs = m["expr"].strip()
        call, infix, method = _CALL.match(rhs), _INFIX.match(rhs), _METHOD.match(rhs)
        if method and not rhs.startswith(("torch.", "operator.", "math.")):
            op, target = "call_method", method["method"]
        elif call:
            # NumPy code Dynamo traced is said as NumPy's call: FX's name for its wrapper (`..._wrapped_add_1`) is
            # neither the user's nor the same from one run to another
            op, target = "call_function", numpy_target(call["target"]) or call["target"]
        elif infix:
            op, target = "call_function", f"operator {infix['op']}"
        elif re.fullmatch(r"[A-Z]_\w+|[a-z_]\w*", rhs):
            continue  # `l_x_ = L_x_`: an alias of an input, not a node of its own
        else:
            op, target = "get_attr", rhs.split("[")[0]
        if where is None:
            unplaced[m["name"]] = (len(nodes), rhs)
        elif grid := _LAUNCH_GRID.match(rhs):
            _place_grid(nodes, unplaced, grid["grid"], [where, code, target])
        nodes.append([op, target, where, code, None])
    return nodes


def _place_grid(nodes: list[list[Any]], unplaced: dict[str, tuple[int, str]], grid: str, launch: list[Any]) -> None:
    """The nodes at no user line that a launch's grid uses, and those they use in turn, placed at the launch: launch
    is its [user line, code, target]."""
    names = _NAME.findall(grid)
    while names:
        found = unplaced.pop(names.pop(), None)  # (popped: each node once)
        if found is not None:
            nodes[found[0]][2:5] = launch
            names.extend(_NAME.findall(found[1]))


def kernel_counts(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """(generated kernels by kind, extern kernel calls by name) in Inductor's output code."""
    kernels = Counter(m["kind"] for m in _KERNEL_DEF.finditer(text))
    externs = Counter(m.group(1) for m in _EXTERN.finditer(text))
    return dict(kernels), dict(externs)

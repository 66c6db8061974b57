"""Repeated blocks a compiled graph inlines: the case for regional compilation.

With `inline_inbuilt_nn_modules` (the default since torch 2.5), Dynamo passes every parameter of the modules it
inlines as an input of its graph, named after the attribute path: `L_self_modules_blocks_modules_0_modules_qkv_
parameters_weight_` is `self.blocks[0].qkv.weight`. A model compiled whole whose ModuleList holds N blocks of one
shape therefore has N runs of inputs that differ only in the index, and its graph traces the block's code N times:
Dynamo, AOTAutograd and Inductor compile the same code once per block. Compiling the block instead
(`block.compile()` for each) compiles its forward once: the other instances pass the guards (on the block's type, its
parameters as inputs) and reuse it. The guard tree (`dynamo_cpp_guards_str`) names each block's class.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import field
from typing import Any

from ..model.ids import compilation_key
from ..model.records import dataclass
from ..model.trace import Trace
from .fx_sites import FX_NODE, GRAPH_ARTIFACT
from .installed_guards import GUARDS_ARTIFACT, GuardTrees, tree_blocks
from .user_locations import user_source_name
from ..lazy_regex import lazy_compile

# `def forward(self, L_x_: "f32[4, 8][8, 1]cpu", ...)`: each input with its type; the graph's own forward is the first
_INPUT = lazy_compile(r"\b(?P<name>L_\w+): \"(?P<type>[^\"]*)\"")
# The outermost numbered module in an input's name: `L_self_modules_blocks` `0` `modules_qkv_parameters_weight_`
_NUMBERED = lazy_compile(r"^(?P<container>L_\w+?)_modules_(?P<index>\d+)_(?P<rest>(?:modules|parameters|buffers)_\w*)$")
_LINE = lazy_compile(r"^\s*# File: .+?:(?P<line>\d+) in ")
# A block's input the node computes with: `l_self_modules_blocks_modules_0_modules_qkv_parameters_weight_`
_BLOCK_INPUT = lazy_compile(r"\bl(?P<container>_\w+?)_modules_(?P<index>\d+)_(?:modules|parameters|buffers)_")
_OTHER_WEIGHT = lazy_compile(r"\bl_\w*_(?:parameters|buffers)_")
_IDENTIFIER = lazy_compile(r"(?<![\w.])[A-Za-z_]\w*\b")  # a name, not an attribute after a dot


@dataclass
class RepeatedBlocks:
    """Blocks of one shape a compile's graph inlines, each its own copy of the code."""

    compile_id: str  # the compilation ("[0/0]"), not the attempt that made the graph
    container: str  # as the user's code names it: "self.blocks"
    indices: list[int]  # the blocks alike, in order
    parameters: int  # graph inputs (parameters, buffers) of each block
    class_name: str | None  # the blocks' class, where the guards name it: "Block"
    total_s: float | None = None  # the compile's time, where logged

    @property
    def blocks(self) -> str:
        """"self.blocks[0] to [3]"; "self.blocks[0], [2]" (two alike of three)."""
        first, last = self.indices[0], self.indices[-1]
        if self.indices == list(range(first, last + 1)):
            return f"{self.container}[{first}] to [{last}]" if len(self.indices) > 2 else f"{self.container}[{first}], [{last}]"
        return f"{self.container}[{first}], " + ", ".join(f"[{i}]" for i in self.indices[1:])

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "container": self.container, "indices": self.indices,
                "inputs_per_block": self.parameters, "class": self.class_name, "compile_s": self.total_s}


@dataclass
class Regional:
    """The repeated blocks (the same layer compiled again and again) regional compilation would compile once."""

    repeated: list[RepeatedBlocks] = field(default_factory=list)  # in compile order

    def by_blocks(self) -> list[list[RepeatedBlocks]]:
        """The compiles of the same blocks together: a frame that recompiled copies them again each time."""
        groups: dict[tuple, list[RepeatedBlocks]] = {}
        for r in self.repeated:
            groups.setdefault((r.container, r.class_name, tuple(r.indices), r.compile_id.split("/")[0]), []).append(r)
        return list(groups.values())

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.repeated]


def _as_input_name(source: str) -> str:
    """The prefix Dynamo's graph inputs take from a source: L['self']._modules['blocks'] -> L_self_modules_blocks."""
    return re.sub(r"[^a-zA-Z0-9]+", "_", source).strip("_")


def block_code(graph_text: str) -> dict[tuple[str, int], list[tuple[str, str]]]:
    """What the graph computes for each block, (container's input prefix, index) -> its nodes as (user line, expression
    with the names of nodes and inputs blanked): a block's run starts at a node that uses one of its inputs and ends
    where a node uses another block's, or another module's parameter (the model's head)."""
    runs: dict[tuple[str, int], list[tuple[str, str]]] = {}
    names: set[str] = set()
    current: tuple[str, int] | None = None
    line = ""
    for raw in graph_text.splitlines():
        c = _LINE.match(raw)
        if c:
            line = c["line"]
            continue
        node = FX_NODE.match(raw)
        if node is None:
            continue
        if node["expr"].startswith(("L_", "self.")):  # an input's alias, a subgraph's get_attr: a name, no code
            names.add(node["name"])
            continue
        expr = node["expr"]
        used = _BLOCK_INPUT.search(expr)
        if used:
            current = ("L" + used["container"], int(used["index"]))
        elif _OTHER_WEIGHT.search(expr):
            current = None
        if current is not None:
            blanked = _IDENTIFIER.sub(lambda m: "_" if m[0] in names or m[0].startswith("l_") else m[0], expr)
            runs.setdefault(current, []).append((line, blanked))
        names.add(node["name"])
    return runs


def first_line_with(text: str, part: str) -> str:
    """The first of text.splitlines() holding part ("" if none), without splitting all of text: a graph's forward is
    its first line or near it, and most graphs (no two blocks of one list) are read no further. The line is cut at
    the newlines around part's first occurrence, then split as splitlines would (its other line breaks)."""
    at = text.find(part)
    if at < 0:
        return ""
    end = text.find("\n", at)
    chunk = text[text.rfind("\n", 0, at) + 1:end if end >= 0 else len(text)]
    return next(line for line in chunk.splitlines() if part in line)


def graph_blocks(graph_text: str, guarded: Callable[[], list[tuple[str, str]]] = list,
                 ) -> list[tuple[str, list[int], int, str | None]]:
    """(container as the code names it, indices of the blocks alike, inputs per block, class) for each ModuleList
    whose blocks (two or more) the graph takes the same inputs of (the same names after the index, the same types) and
    computes the same with (the same expressions from the same lines: blocks of one class whose code branches on an
    attribute are no copies). guarded: the numbered modules the compile's guard tree guards, with their classes
    (tree_blocks), asked for only where the graph has blocks of one list."""
    signature = first_line_with(graph_text, "def forward(")
    by_container: dict[str, dict[int, dict[str, str]]] = {}
    for m in _INPUT.finditer(signature):
        n = _NUMBERED.match(m["name"])
        if n:
            by_container.setdefault(n["container"], {}).setdefault(int(n["index"]), {})[n["rest"]] = m["type"]
    if all(len(blocks) < 2 for blocks in by_container.values()):  # (no two blocks of one list: the code is not read)
        return []
    code = block_code(graph_text)
    classes: dict[str, tuple[str, str]] = {}  # input-name prefix of a block -> (source of its container, class)
    for source, cls in guarded():
        classes[_as_input_name(source)] = (source.rsplit("._modules[", 1)[0], cls.rsplit(".", 1)[-1])
    found = []
    for container, blocks in by_container.items():
        shapes: dict[tuple, list[int]] = {}
        # Compared as long as the shortest run: the last block's run goes on into the model's code after it (up to
        # the next parameter it uses), and a checkpointed block's starts with the next block's subgraph.
        shortest = min(len(code.get((container, index), ())) for index in blocks)
        for index, inputs in sorted(blocks.items()):
            computed = tuple(code.get((container, index), ())[:shortest])
            shapes.setdefault((tuple(sorted(inputs.items())), computed), []).append(index)
        alike = max(shapes.items(), key=lambda kv: len(kv[1]))
        if len(alike[1]) < 2:
            continue
        known = classes.get(f"{container}_modules_{alike[1][0]}")
        named = user_source_name(known[0]) if known else container.removeprefix("L_").replace("_modules_", ".")
        found.append((named, alike[1], len(alike[0][0]), known[1] if known else None))
    return found


def regional(trace: Trace, guard_trees: GuardTrees | None = None) -> Regional:
    guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)  # (the tree parsed once a report)
    out = Regional()
    for entry in trace.sorted_compiles():
        if entry.compile_id is None or entry.metrics is None:  # (a restarted attempt: its compile is the next one's)
            continue
        graph = next((a for a in entry.artifacts if a.name == GRAPH_ARTIFACT), None)
        if graph is None:
            continue
        text = trace.payload_text(graph.payload)
        if "_modules_" not in text:
            continue
        guards = next((a.payload for a in entry.artifacts if a.name == GUARDS_ARTIFACT), None)
        seconds = (entry.metrics or {}).get("entire_frame_compile_time_s")
        guarded = (lambda payload=guards: tree_blocks(guard_trees.of(payload))) if guards is not None else list
        for container, indices, inputs, cls in graph_blocks(text, guarded):
            # (named as its compilation, "[0/0]" of [0/0_1], as the compile-time table names it)
            out.repeated.append(RepeatedBlocks(compilation_key(entry.compile_id), container, indices, inputs, cls,
                                               seconds if isinstance(seconds, (int, float)) else None))
    return out

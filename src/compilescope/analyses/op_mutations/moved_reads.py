"""The reads Inductor moved past a custom op's call: for a call of an op that writes an argument undeclared, the lines
of Dynamo's graph that read the argument before the call whose kernel the output code runs after it
(CompiledCalls.moved_reads, for analysis.told_calls). Inductor took the op for functional, so the order did not
matter to it; each such read sees what the op wrote."""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_left, bisect_right, insort
from operator import itemgetter

from ...model.trace import Artifact, Compile, Trace
from ..fx_sites import NODE_MAPPINGS, code_title, graph_kind, graph_nodes
from ..user_locations import UserLocation
from . import GraphPlace, MovedRead

MAX_CALL_CHARS = 4_000  # a graph node's call parsed to see which of its arguments is which
# (Each pattern's indentation is `[ \t]*`, never `\s*`: under re.M, \s spans newlines, so a run of n blank lines in
# the untrusted output code made every search n^2: 80k blank lines, 12 s for one search.)
# The wrapper's `def call(args):` (older torch) or `def call(self, args):` (Runner): the order its kernels run in
_WRAPPER_CALL = re.compile(r"^[ \t]*def call\((?:self, )?args\):", re.M)
# `# Topologically Sorted Source Nodes: [shifted, mul], Original ATen: ...` over a kernel's call: the nodes it computes
_SOURCE_NODES = re.compile(r"^[ \t]*# Topologically Sorted Source Nodes: \[(?P<nodes>[^\]\n]{0,4000})\]", re.M)
_CALLED = re.compile(r"^[ \t]*(?:\w+ = )?(?P<kernel>[A-Za-z_]\w{0,300})(?:\.run)?\(", re.M)
_TORCH_OPS = "torch.ops."
# A line of the wrapper that calls something: `kernel.run(`, `kernel(`, `buf3 = extern_kernels.mm(`
_CALL_LINE = re.compile(r"^[ \t]*(?:\w+ = )?(?P<callee>[A-Za-z_][\w.]*)\(", re.M)


class CompiledCalls:
    """What one compile's Dynamo graph and output code say of the reads moved past a custom op's calls, each read once
    (per call it re-parsed the graph, reloaded the provenance JSON and searched the wrapper per earlier node: 1,000
    calls in a graph took 15 s): the graph's nodes, which of them read each name, each kernel's first call and the
    Source Nodes comments of the wrapper; and, per name read, a sweep over its readers in graph order."""

    def __init__(self, trace: Trace, entry: Compile, graph: str) -> None:
        self.nodes = graph_nodes(graph)
        self.trace, self.entry = trace, entry
        self.calls: dict[str, list[int]] = {}  # the op as the graph names it -> its call nodes, in order
        self.readers: dict[str, list[int]] = {}  # a name -> the nodes whose expression reads it, in order
        self.named: dict[str, int] = {}  # a node's name -> its index
        for i, (name, expr, site) in enumerate(self.nodes):
            self.named.setdefault(name, i)
            stripped = expr.lstrip()
            if stripped.startswith(_TORCH_OPS):
                self.calls.setdefault(stripped[len(_TORCH_OPS):].split("(", 1)[0], []).append(i)
            if site is not None:
                for word in set(re.findall(r"\w+", expr)):
                    self.readers.setdefault(word, []).append(i)
        self._wrapper: str | None = None
        self.op_calls: dict[str, list[int]] = {}  # an overload ("mylib.scale.out") -> where the wrapper calls it
        self.kernels: dict[str, list[str]] = {}  # Dynamo's node -> its kernels, by provenance
        self.first_call: dict[str, int] = {}  # a kernel -> where the wrapper first calls it
        self.commented: dict[str, list[tuple[int, str]]] = {}  # a node -> (comment's position, the call's kernel)
        self._latest: dict[int, int | None] = {}  # a node -> the position of its last kernel's call (or comment)
        # a name -> (readers swept, the graph position swept to, (latest position, node) of each sorted)
        self._sweeps: dict[str, tuple[int, int, list[tuple[int, int]]]] = {}

    @property
    def wrapper(self) -> str:
        """The output code after its `def call(...)`, read on first use; "" where there is none."""
        if self._wrapper is None:
            code, mapping = _forward_code(self.trace, self.entry)
            start = _WRAPPER_CALL.search(code)
            self._wrapper = code[start.end():] if start is not None else ""
            if self._wrapper:
                self.kernels = _node_kernels(self.trace, mapping)
                for call in _CALL_LINE.finditer(self._wrapper):
                    callee = call["callee"]
                    self.first_call.setdefault(callee, call.start())
                    if callee.endswith(".run"):
                        self.first_call.setdefault(callee[:-4], call.start())
                self.commented = _commented_calls(self._wrapper)
        return self._wrapper

    def moved_reads(self, place: GraphPlace, arguments: list[str], parameters: list[str],
                    room: int) -> tuple[list[MovedRead], int, bool]:
        """The nodes of Dynamo's graph that read an argument the op writes before its call at place, whose kernel the
        output code runs after that call (Inductor took the op for functional, so order did not matter to it): each
        such read sees what the op wrote. At most `room` of them, in graph order, and how many more; and whether the
        output code's call was found (False: which of its calls of the overload is this one, the log does not say,
        and no read is claimed). The output code's call: the place.ran_at-th of its calls of the overload, where it
        makes as many as AOTAutograd's graph (not a place among all calls of the op: a packet's call and an
        overload's by name are one overload in the output code, two names in Dynamo's graph). A node's kernel:
        torch's provenance mappings (Dynamo's node -> post-grad nodes -> the kernel computing them), else the
        `# Topologically Sorted Source Nodes` comment over a call in the wrapper."""
        at = self.calls.get(place.graph_op, [])
        if place.nth >= len(at):
            return [], 0, True
        node = at[place.nth]
        read = _written_values(self.nodes[node][1].strip(), arguments, parameters)
        if not read or not self.wrapper:
            return [], 0, True
        if place.ran not in self.op_calls:
            self.op_calls[place.ran] = _positions(self.wrapper, f"{_TORCH_OPS}{place.ran}(")
        if not self.op_calls[place.ran]:
            return [], 0, True  # (an output code that runs none of AOTAutograd's calls of it: no read is looked for)
        if place.ran_at is None or len(self.op_calls[place.ran]) != place.ran_calls:
            return [], 0, False
        op_at = self.op_calls[place.ran][place.ran_at]  # (the wrapper calls an overload in AOTAutograd's order)
        moved: set[int] = set()
        for value in read:
            moved.update(map(itemgetter(1), self._after(value, node, op_at)))
        moved.difference_update(self.named[v] for v in read if v in self.named)  # (the node giving the value)
        ordered = sorted(moved)
        found_reads: list[MovedRead] = []
        for i in ordered[:max(room, 0)]:
            site = self.nodes[i][2]
            assert site is not None  # (only nodes under a `# File:` comment are readers)
            found_reads.append(MovedRead(UserLocation(site.path, site.line, site.function, site.code),
                                         self._kernel_after(self.nodes[i][0], op_at)))
        return found_reads, len(ordered) - len(found_reads), True

    def _after(self, value: str, before: int, op_at: int) -> list[tuple[int, int]]:
        """(latest position, node) of the nodes before node `before` that read value, whose kernel is called (or
        commented) after position op_at in the wrapper: the readers swept in graph order into a list sorted by
        latest position, so that each call asks one bisect (calls come in graph order; an earlier one starts over)."""
        readers = self.readers.get(value, [])
        swept, upto, latest = self._sweeps.get(value, (0, -1, []))
        if before < upto:
            swept, latest = 0, []
        while swept < len(readers) and readers[swept] < before:
            if (position := self._latest_of(readers[swept])) is not None:
                insort(latest, (position, readers[swept]))
            swept += 1
        self._sweeps[value] = (swept, before, latest)
        return latest[bisect_right(latest, (op_at, len(self.nodes))):]

    def _latest_of(self, i: int) -> int | None:
        if i not in self._latest:
            name = self.nodes[i][0]
            if name in self.kernels:
                self._latest[i] = max((self.first_call[k] for k in self.kernels[name] if k in self.first_call),
                                      default=None)
            else:  # (no provenance: the wrapper's comments over its calls)
                self._latest[i] = self.commented[name][-1][0] if name in self.commented else None
        return self._latest[i]

    def _kernel_after(self, name: str, op_at: int) -> str:
        """The first of the node's kernels the wrapper calls after op_at (by provenance, else by the comments)."""
        if name in self.kernels:
            return next(k for k in self.kernels[name] if self.first_call.get(k, -1) > op_at)
        commented = self.commented[name]
        return commented[bisect_right(commented, (op_at, chr(0x10FFFF)))][1]


def _written_values(expr: str, arguments: list[str], parameters: list[str]) -> set[str]:
    """The graph's names passed as the written arguments in a call node's expression
    (`torch.ops.mylib.scale.default(l_x_, 2.0)` with parameters [x, factor] and x written: {"l_x_"})."""
    if len(expr) > MAX_CALL_CHARS:
        return set()
    try:
        call = ast.parse(expr, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    if not isinstance(call, ast.Call):
        return set()
    given = {p: a for p, a in zip(parameters, call.args)} | {k.arg: k.value for k in call.keywords if k.arg}
    return {v.id for arg in arguments if isinstance(v := given.get(arg), ast.Name)}


def _forward_code(trace: Trace, entry: Compile) -> tuple[str, Artifact | None]:
    """The output code that runs the compile's forward graph (the one Dynamo's graph's calls run in) and its provenance
    mappings: the last whose AOT ID (its first line) is no backward's. A training compile logs the forward's output
    code, then the backward's (amp_train_step [0/0]: `0_forward`, then `0_backward`), each followed by its mappings;
    they pair by their order, as the provenance sections do, where as many of each are logged (else the last)."""
    codes = [a for a in entry.artifacts if a.name.startswith("inductor_output_code") and a.payload is not None]
    mappings = [a for a in entry.artifacts if a.name == NODE_MAPPINGS and a.payload is not None]
    for i in reversed(range(len(codes))):
        code = trace.payload_text(codes[i].payload)
        if graph_kind(code_title(code.lstrip("\n").split("\n", 3)[:3], "")) != "backward":
            return code, mappings[i] if len(mappings) == len(codes) else (mappings[-1] if mappings else None)
    return "", None


def _node_kernels(trace: Trace, mapping: Artifact | None) -> dict[str, list[str]]:
    """Dynamo's node -> the kernels of the output code that compute it, by torch's provenance mappings (preToPost,
    then the kernel's debug handle `triton_poi_fused_add_mul_0:2` -> post-grad nodes); {} where not logged."""
    if mapping is None:
        return {}
    try:
        found = json.loads(trace.payload_text(mapping.payload))
    except (ValueError, RecursionError):
        return {}
    pre_to_post = found.get("preToPost") if isinstance(found, dict) else None
    code_to_post = next((found.get(k) for k in ("cppCodeToPost", "pyCodeToPost") if isinstance(found.get(k), dict)),
                        None) if isinstance(found, dict) else None
    if not isinstance(pre_to_post, dict) or not isinstance(code_to_post, dict):
        return {}
    post_kernels: dict[str, list[str]] = {}
    for handle, posts in code_to_post.items():
        kernel = str(handle).rsplit(":", 1)[0]
        if kernel.startswith("torch.ops.") or not isinstance(posts, list):
            continue  # (an op's call, not a kernel of Inductor's)
        for post in posts:
            post_kernels.setdefault(str(post), []).append(kernel)
    return {str(pre): list(dict.fromkeys(k for post in posts for k in post_kernels.get(str(post), [])))
            for pre, posts in pre_to_post.items() if isinstance(posts, list)}


def _positions(text: str, part: str) -> list[int]:
    """Where part occurs in text, in order."""
    found: list[int] = []
    at = text.find(part)
    while at >= 0:
        found.append(at)
        at = text.find(part, at + 1)
    return found


def _commented_calls(wrapper: str) -> dict[str, list[tuple[int, str]]]:
    """Dynamo's node -> (where the comment is, the kernel of the call under it) of each `# Topologically Sorted Source
    Nodes` comment of the wrapper that names it, in the wrapper's order."""
    calls = [(c.start(), c["kernel"]) for c in _CALLED.finditer(wrapper)
             if c["kernel"] not in ("get_raw_stream", "stream0", "buf", "del")]
    starts = [start for start, _ in calls]
    found: dict[str, list[tuple[int, str]]] = {}
    for comment in _SOURCE_NODES.finditer(wrapper):
        if (under := bisect_left(starts, comment.end())) < len(calls):
            for node in comment["nodes"].split(","):
                found.setdefault(node.strip(), []).append((comment.start(), calls[under][1]))
    return found

"""Post-grad nodes for the kernels torch's node mappings leave out, through the user lines of their stacks."""

from __future__ import annotations

from ...lazy_regex import lazy_compile
from ..cached_lines import RunLines
from ..fx_sites import FX_SOURCE_COMMENT
from . import KernelTrace
from .line_mappings import GraphLines

_NO_SOURCE = lazy_compile(r"^\s*# No stacktrace found")
_KERNEL_OPS = lazy_compile(r"(?:^|_)fused_(?P<ops>.+?)(?:_\d+)?$")


def post_node_sources(graph: GraphLines, run: RunLines | None = None
                      ) -> list[tuple[int, str, str | None, tuple[str, int] | None]]:
    """(line, node, op, user file:line) for each node of a post-grad graph, from FX's '# File:' comments; run: this
    run's lines, where the graph came from a cache hit (the kernels' stacks are placed on them too)."""
    result = []
    source: tuple[str, int] | None = None
    ops = graph.ops()
    for i, (line, name) in enumerate(zip(graph.lines, graph.names)):
        if name is None:
            if line.lstrip().startswith("#"):  # only comments can name a source (and comments define no node)
                m = FX_SOURCE_COMMENT.match(line)
                if m:
                    source = (m["file"], int(m["line"]))
                    if run is not None:
                        code = (m["code"] or "").strip() or None
                        source = (m["file"], run.line(m["file"], int(m["line"]), m["function"].strip(), code))
                elif _NO_SOURCE.match(line):
                    source = None
            continue
        if " " in name or "(" in name:  # not a node: class/def/return lines
            continue
        op = ops[i]
        result.append((i + 1, name, op.partition(".")[2] if op else None, source))
    return result


def kernel_ops(kernel: str) -> str:
    """The op names a kernel is named after: ``cpp_fused_relu_threshold_backward_0`` -> ``relu_threshold_backward``."""
    base = kernel.rsplit(".", 1)[-1]  # extern_kernels.mm -> mm
    m = _KERNEL_OPS.search(base)
    return m["ops"] if m else base


def names_op(ops: str, op: str | None) -> bool:
    """Whether ``op`` is one of the ``_``-separated runs of ``ops`` (``relu`` in ``relu_threshold_backward``)."""
    return bool(op) and f"_{op}_" in f"_{ops}_"


def infer_kernel_nodes(kernels: list[KernelTrace], post: GraphLines, run: RunLines | None = None) -> dict[str, list[int]]:
    """Post-grad node lines for kernels the node mappings leave out, through their user source line.

    Candidates are the nodes FX attributes to a line of the kernel's stack; of those,
    the nodes whose op the kernel is named after, else the candidates no other kernel
    is named after, else all candidates.
    """
    if not kernels:
        return {}  # (most graphs: the node mappings place every kernel, and the graph's sources go unread)
    by_place: dict[tuple[str, int], list[tuple[int, str, str | None]]] = {}
    for line, name, op, src in post_node_sources(post, run):  # indexed once: not kernels x nodes
        if src is not None:
            by_place.setdefault(src, []).append((line, name, op))
    # Kernels share stacks (every kernel of one line, each debug handle of one kernel): candidates are worked
    # out once per distinct set of stack lines, and the ops filter once per kernel name and set.
    Candidate = tuple[int, str, str | None]
    places_of: dict[str, frozenset[tuple[str, int]]] = {}
    by_places: dict[frozenset[tuple[str, int]], list[Candidate]] = {}
    places_by_stacks: dict[tuple[int, ...], frozenset[tuple[str, int]]] = {}  # ids of k.frames' lists: alive here
    for k in kernels:
        stacks = tuple(map(id, k.frames))  # (kernel_traces shares one frames list per distinct stack text)
        places = places_by_stacks.get(stacks)
        if places is None:
            places = places_by_stacks[stacks] = frozenset((f.file, f.line) for frames in k.frames for f in frames)
        places_of[k.name] = places
        if places not in by_places:
            by_places[places] = sorted(c for place in places for c in by_place.get(place, ()))
    named: dict[str, list[Candidate]] = {}
    by_ops: dict[tuple[str, frozenset[tuple[str, int]]], list[Candidate]] = {}
    for k in kernels:
        key = (kernel_ops(k.kernel), places_of[k.name])
        if key not in by_ops:
            by_ops[key] = [c for c in by_places[key[1]] if names_op(key[0], c[2])]
        named[k.name] = by_ops[key]
    claimed = {c[0] for cs in named.values() for c in cs}
    unclaimed: dict[frozenset[tuple[str, int]], list[Candidate]] = {}
    result = {}
    for k in kernels:
        places = places_of[k.name]
        chosen = named[k.name]
        if not chosen:
            if places not in unclaimed:
                unclaimed[places] = [c for c in by_places[places] if c[0] not in claimed]
            chosen = unclaimed[places] or by_places[places]
        if chosen:
            result[k.name] = [c[0] for c in chosen]
    return result

"""The lines of code an FX graph's nodes came from, as Dynamo's graph dump (`dynamo_output_graph`) comments them.

The source pages place each node on its line; the recompiles ask where a graph first used one of its inputs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..lazy_regex import lazy_compile
from ..model.records import dataclass

GRAPH_ARTIFACT = "dynamo_output_graph"
# Inductor's post-grad graph, by the names torch logs it under (in tlparse's order of preference: a compile logs one
# of them, older torch the first), the one list of them that every reader of the graph uses; and torch's mappings of
# the output code's kernels to its nodes: what provenance/ and user_kernels.py read
POST_GRAD = ("after_post_grad_graph", "inductor_post_grad_graph")
NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
# AOTAutograd's forward graph, by the names it logs it under: a training compile's forward, an inference compile's
# whole graph (a compile logs one of them: none of the logs of tests/data or ../shared holds both)
AOT_FORWARD = ("aot_forward_graph", "aot_inference_graph")


def code_title(lines: list[str], fallback: str) -> str:
    """An output code's AOT ID (`0_forward`), which torch writes on its first line: the graph it compiled."""
    for line in lines[:3]:
        m = re.match(r"#\s*AOT ID:\s*\[?'?([^'\]]*)", line)
        if m and m.group(1):
            return m.group(1)
    return fallback


GRAPH_KINDS = ("forward", "backward", "inference")


def graph_kind(title: str) -> str | None:
    """forward / backward / inference from an AOT ID (`0_forward`, `3_backward`): torch names the graph it compiled
    (the output code's first line); None for another title."""
    kind = title.rpartition("_")[2]
    return kind if kind in GRAPH_KINDS and kind != title else None


# An FX graph's or output code's `# File: /path/x.py:23 in f, code: y = x * 2` comment (the code part is absent for
# some nodes), the one pattern for it: read per line here and by provenance, user_kernels, activation_checkpoint
# and diff. The first `:<line> in ` ends the file (code may hold another); with the line's digits bounded and
# possessive and no end anchor, one try per colon: linear in the line, whose text is the log's. Function and code
# may end in spaces: callers strip them.
FX_SOURCE_COMMENT = lazy_compile(
    r"^\s*# File: (?P<file>[^\n]*?):(?P<line>\d{1,9}) in (?P<function>[^,\n]*)(?:, code: (?P<code>.*))?")


def first_fx_source_comment(text: str) -> re.Match[str] | None:
    """The first line of a graph dump or output code that is a `# File:` comment (FX_SOURCE_COMMENT's match)."""
    start = text.find("# File: ")
    while start != -1:
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        m = FX_SOURCE_COMMENT.match(text[text.rfind("\n", 0, start) + 1:end])  # (`^` is the text's start alone)
        if m:
            return m
        start = text.find("# File: ", end)
    return None
# A node of a graph dump's body, its name and its expression up to torch's freeing of what it used:
# `    layer_norm: "f32[4, 32][32, 1]cpu" = torch.nn.functional.layer_norm(x, (32,), w, b);  x = w = None`
# (the type only in a typed graph: post-grad, or Dynamo's with its sizes; the indent is the graph body's)
FX_NODE = lazy_compile(r"^\s*(?P<name>[A-Za-z_]\w*)(?:\s*:\s*\"[^\"]*\")?\s*=\s*(?P<expr>.+?)(?:;\s+.*)?$")
# `    y: "f32[4][1]cpu" = l_x_ * 2;  l_x_ = None`
_NODE_DEF = re.compile(r"^\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:\s*:\s*\"[^\"]*\")?\s*=\s")


@dataclass(slots=True)
class FxNodeSite:
    """One `# File:` comment of an FX graph dump and the nodes defined under it."""

    path: str
    line: int
    function: str
    code: str | None
    nodes: list[str]


def fx_node_sites(graph_text: str) -> list[FxNodeSite]:
    """The `# File:` comments of an FX graph dump, each with the node names defined under it."""
    sites: list[FxNodeSite] = []
    current: FxNodeSite | None = None
    for raw in graph_text.splitlines():
        m = FX_SOURCE_COMMENT.match(raw)
        if m:
            current = FxNodeSite(m["file"], int(m["line"]), m["function"].strip(), (m["code"] or "").strip() or None, [])
            sites.append(current)
            continue
        if not raw.strip():
            current = None
            continue
        if current is not None:
            d = _NODE_DEF.match(raw)
            if d and d["name"] != "return":
                current.nodes.append(d["name"])
    return sites


def _code_lines(graph_text: str) -> Iterator[tuple[str, FxNodeSite | None]]:
    """Each code line of an FX graph dump with the `# File:` comment over it (None after a blank line or another
    comment, such as "# No stacktrace found for following nodes")."""
    current: FxNodeSite | None = None
    for raw in graph_text.splitlines():
        m = FX_SOURCE_COMMENT.match(raw)
        if m:
            current = FxNodeSite(m["file"], int(m["line"]), m["function"].strip(), (m["code"] or "").strip() or None, [])
        elif not raw.strip() or raw.lstrip().startswith("#"):
            current = None
        else:
            yield raw, current


def graph_nodes(graph_text: str) -> list[tuple[str, str, FxNodeSite | None]]:
    """Each node of an FX graph dump in order: (its name, its expression up to torch's `;  x = None` freeing what it
    used, the `# File:` comment over it)."""
    found: list[tuple[str, str, FxNodeSite | None]] = []
    for raw, current in _code_lines(graph_text):
        d = _NODE_DEF.match(raw)
        if d is not None and d["name"] != "return":
            found.append((d["name"], raw[d.end():].split(";", 1)[0], current))
    return found


def graph_input_name(source: str) -> str:
    """The name Dynamo gives the graph input of a source: L['kwargs']['input_ids'] -> l_kwargs_input_ids_."""
    name = re.sub(r"[^a-zA-Z0-9]+", "_", source)
    return name[:1].lower() + name[1:]


def first_use(graph_text: str, source: str) -> FxNodeSite | None:
    """The `# File:` comment over the first node that computes with the graph input of source; None when that node
    has none ("# No stacktrace found for following nodes") or no node uses it."""
    name = graph_input_name(source)
    used = re.compile(rf"\b{re.escape(name)}\b")
    for raw, current in _code_lines(graph_text):
        d = _NODE_DEF.match(raw)
        if d is None or d["name"] == name:  # (`l_x_ = L_x_`: the input itself)
            continue
        # The node's arguments: what follows its `=`, up to torch's `;  l_x_ = None` that frees what it used.
        if used.search(raw[d.end():].split(";", 1)[0]):
            return current
    return None


def op_call_site(graph_text: str, op: str) -> FxNodeSite | None:
    """The `# File:` comment over the first node that calls the operator `op` ("mylib.gelu_np.default", as torch
    names it in errors): `gelu_np_default = torch.ops.mylib.gelu_np.default(linear)`; None: no such node, or it has
    no comment."""
    call = re.compile(rf"=\s*torch\.ops\.{re.escape(op)}\(")
    for raw, current in _code_lines(graph_text):
        d = _NODE_DEF.match(raw)
        if d is not None and call.search(raw):
            if current is not None:
                current.nodes.append(d["name"])
            return current
    return None


# `clamp_np_default: "f32[8][1]cpu" = torch.ops.mylib.clamp_np.default(l_x_, 0.5);  clamp_np_default = None`: a call
# of an op (namespace.name.overload), and what torch frees after it
# `torch.ops.mylib.scale.default(`, or the packet a user calls directly: `torch.ops.mylib.scale_into(` (Dynamo's graph
# keeps the call as written; AOTAutograd's names the overload torch chose)
_OP_NODE = lazy_compile(r"\s*torch\.ops\.(?P<op>[A-Za-z_]\w{0,100}\.[A-Za-z_]\w{0,200}(?:\.\w{1,100})?)\(")


def op_call_sites(graph_text: str) -> list[tuple[str, FxNodeSite | None, bool]]:
    """Each call of an op in an FX graph dump: (the op as torch names it, "mylib.scale.default"; the `# File:`
    comment over it; whether its result is unused: torch frees the node on its own line,
    `clamp_np_default = None`)."""
    found: list[tuple[str, FxNodeSite | None, bool]] = []
    for raw, current in _code_lines(graph_text):
        d = _NODE_DEF.match(raw)
        call = _OP_NODE.match(raw, d.end()) if d is not None else None  # (the node's own expression only)
        if d is None or call is None:
            continue
        _, _, freed = raw.partition(";")
        names = {n.strip() for n in freed.split("=")[:-1]}
        found.append((call["op"], current, d["name"] in names))
    return found


# A name with its type in a graph dump: `view: "f32[32, 512][512, 1]cpu"` (a node, or an input in forward's signature),
# up to its size's `[` (the size is read up to the next `]`: typed_sizes)
_TYPED_NAME = lazy_compile(r"\b(?P<name>[A-Za-z_][A-Za-z0-9_]*): \"[a-z]+[0-9]*\[")
# `= torch.ops.mkl._mkl_linear(view, w, b, 32);  view = None`: the call's arguments (up to torch's freeing of them).
# Matched at the node's own `=` only: searched on, it tried each later `=` (`view = w = None`), each scanning to the
# line's end, quadratic in a line of many (2,000 `= f(`: 0.1 s, 8,000: 1.4 s).
_CALL = lazy_compile(r"=\s*[A-Za-z_][\w.]*\((?P<args>.*)\)\s*(?:;|$)")


def typed_sizes(line: str) -> dict[str, str]:
    """The sizes of the typed names in a line of a graph dump, written as torch's autotuning writes them ("32x512")."""
    found: dict[str, str] = {}
    at = 0
    while typed := _TYPED_NAME.search(line, at):
        # (one scan to the `]`, from where the next name is looked for: a regex reading the size would scan the rest
        # of the line again from each name when no `]` follows, quadratic in a line of many)
        close = line.find("]", typed.end())
        if close < 0:
            break
        found[typed["name"]] = "x".join(part.strip() for part in line[typed.end():close].split(","))
        at = close + 1
    return found


def calls_with_input_sizes(graph_text: str) -> list[tuple[tuple[str, ...], FxNodeSite | None]]:
    """Each call of an FX graph dump (a post-grad graph's, whose nodes are typed) with the sizes of the nodes it takes,
    in order, written as torch's autotuning writes them ("32x512"), and the `# File:` comment over it (None where
    there is none)."""
    sizes: dict[str, str] = {}
    calls: list[tuple[tuple[str, ...], FxNodeSite | None]] = []
    for raw, current in _code_lines(graph_text):
        sizes.update(typed_sizes(raw))
        d = _NODE_DEF.match(raw)
        call = _CALL.match(raw, d.end() - 2) if d else None  # (d ends at its `=` and one space)
        if call is not None:
            names = [a.strip() for a in call["args"].split(",")]
            calls.append((tuple(sizes[a] for a in names if a in sizes), current))
    return calls

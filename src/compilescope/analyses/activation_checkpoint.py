"""Activation checkpointing as torch.compile captured it: the user's checkpoint calls, and what the backward recomputes.

Dynamo captures `torch.utils.checkpoint.checkpoint(fn, ...)` (use_reentrant=False, and in torch 2.13 True as well)
as the higher-order op `torch.ops.higher_order.tag_activation_checkpoint` in its graph (`dynamo_output_graph`), under
the `# File:` comment of the user's checkpoint call. AOTAutograd's partitioner then copies the checkpointed ops it
does not save into the backward graph (`aot_backward_graph`) and comments each such run of nodes
`# ac_graph_id: <region> - PREFER_RECOMPUTE File: <path>:<line> in <function>, code: <code>`
(torch/fx/graph.py prints the node's recompute tag before its stack trace): those ops run twice. Ops the partitioner
recomputes outside any checkpointed region (cheap pointwise ops it chooses to recompute anyway) carry no such tag
and are not counted.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any

from ..lazy_regex import lazy_compile
from ..model.records import dataclass
from ..model.trace import Trace
from .fx_sites import FX_SOURCE_COMMENT, GRAPH_ARTIFACT

BACKWARD_GRAPH = "aot_backward_graph"
CHECKPOINT_OP = "torch.ops.higher_order.tag_activation_checkpoint("
# `# ac_graph_id: 3 - PREFER_RECOMPUTE File: /p/x.py:27 in forward, code: h = self.up(self.norm(x))`
_RECOMPUTE_COMMENT = lazy_compile(r"^\s*# ac_graph_id: (?P<region>\d+) - (?P<policy>\w+) File: (?P<file>.+?):(?P<line>\d+)"
                                r" in (?P<func>[^,]+?)(?:, code: (?P<code>.*))?\s*$")
# A node that calls an operator: `addmm: "bf16[16, 128]..." = torch.ops.aten.addmm.default(...)` (not getitem)
_OP_NODE = lazy_compile(r"^\s+[A-Za-z_]\w*(?:\s*:\s*\"[^\"]*\")?\s*=\s*torch\.ops\.")


@dataclass
class CheckpointSite:
    """A line of the user's code whose ops the graph holds as checkpointed, and how often."""

    path: str
    line: int
    function: str
    code: str | None
    count: int  # checkpoint calls captured at this line (a loop over blocks: one per block); ops, for recomputed

    @property
    def short(self) -> str:
        """file name:line, as the report names a line: "model.py:40"."""
        return f"{self.path.rsplit('/', 1)[-1]}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "function": self.function, "code": self.code, "count": self.count}


@dataclass
class CompileCheckpointing:
    """One compile id's checkpointing: the checkpoint calls in its Dynamo graph, the ops its backward recomputes."""

    compile_id: str
    calls: list[CheckpointSite] = field(default_factory=list)  # count: calls of the higher-order op at that line
    recomputed: list[CheckpointSite] = field(default_factory=list)  # count: ops of that line recomputed in backward
    regions: int = 0  # checkpointed regions the backward recomputes ops of (distinct ac_graph_id)
    has_backward: bool = False  # its backward graph was logged (None recomputed means none, not unknown)

    @property
    def n_recomputed(self) -> int:
        return sum(r.count for r in self.recomputed)

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "checkpoint_calls": [c.to_json() for c in self.calls],
                "backward_logged": self.has_backward, "recomputed_regions": self.regions,
                "recomputed_ops": self.n_recomputed if self.has_backward else None,
                "recomputed": [r.to_json() for r in self.recomputed]}


@dataclass
class ActivationCheckpointing:
    """The compiles whose graphs hold a checkpoint call, each with what its backward recomputes."""

    compiles: list[CompileCheckpointing] = field(default_factory=list)  # only those with a checkpoint call

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.compiles]


def checkpoint_calls(graph_text: str) -> list[CheckpointSite]:
    """The checkpoint calls of a Dynamo graph dump, by the user's line that made them."""
    sites: dict[tuple[str, int], CheckpointSite] = {}
    comment: re.Match[str] | None = None
    for raw in graph_text.splitlines():
        m = FX_SOURCE_COMMENT.match(raw)
        if m:
            comment = m
        elif not raw.strip():
            comment = None
        elif CHECKPOINT_OP in raw and comment is not None:
            key = (comment["file"], int(comment["line"]))
            if key not in sites:
                sites[key] = CheckpointSite(key[0], key[1], comment["function"].strip(), (comment["code"] or "").strip() or None, 0)
            sites[key].count += 1
    return list(sites.values())


def recomputed_ops(backward_text: str) -> tuple[list[CheckpointSite], int]:
    """The ops a backward graph dump recomputes from checkpointed regions, by the user's line they came from (in line
    order); and how many regions they belong to."""
    sites: dict[tuple[str, int], CheckpointSite] = {}
    regions: set[str] = set()
    current: CheckpointSite | None = None
    for raw in backward_text.splitlines():
        m = _RECOMPUTE_COMMENT.match(raw)
        if m:
            key = (m["file"], int(m["line"]))
            if key not in sites:
                sites[key] = CheckpointSite(key[0], key[1], m["func"].strip(), (m["code"] or "").strip() or None, 0)
            current = sites[key]
            regions.add(m["region"])
        elif not raw.strip() or raw.lstrip().startswith("#"):
            current = None  # the run ends at the next comment (another line, or ops of the backward itself)
        elif current is not None and _OP_NODE.match(raw):
            current.count += 1
    return sorted((s for s in sites.values() if s.count), key=lambda s: (s.path, s.line)), len(regions)


def activation_checkpointing(trace: Trace) -> ActivationCheckpointing:
    found = ActivationCheckpointing()
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        graph = next((a for a in entry.artifacts if a.name == GRAPH_ARTIFACT), None)
        if graph is None:
            continue
        text = trace.payload_text(graph.payload)
        if CHECKPOINT_OP not in text:
            continue
        one = CompileCheckpointing(entry.key, calls=checkpoint_calls(text))
        backward = next((a for a in entry.artifacts if a.name == BACKWARD_GRAPH), None)
        if backward is not None:
            one.has_backward = True
            one.recomputed, one.regions = recomputed_ops(trace.payload_text(backward.payload))
        found.compiles.append(one)
    return found

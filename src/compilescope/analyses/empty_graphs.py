"""Compilations that made no operator: Dynamo compiled them, yet nothing of them runs compiled.

torch logs each compilation's graph_op_count in its compilation_metrics (torch/_dynamo/convert_frame.py): the
operators of the graph Dynamo made, 0 for an empty one. It is null where the compile failed, where torch.export logged
the metrics (no guarded code), and where Dynamo installed code for the frame but made no graph at all (a function with
no tensor operation, or the rest of contextlib's __init__ after a graph break). Logs of a torch that did not log the
key lack it: a compilation without the key is never counted empty.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Mapping

from ..model.trace import Trace
from ..model.records import dataclass


def made_no_graph(metrics: Mapping[str, Any] | None) -> bool:
    """Dynamo compiled the frame (code installed, no failure) and made no graph: graph_op_count logged as null. Only
    where the key is there: older torch did not log it, and its absence says nothing."""
    return (metrics is not None and "graph_op_count" in metrics and metrics["graph_op_count"] is None
            and not metrics.get("fail_type") and metrics.get("has_guarded_code") is True)


@dataclass
class EmptyGraphs:
    """The compilations whose graph holds no operator, and whether every compilation that compiled is one of them."""

    empty: list[str] = field(default_factory=list)  # graph_op_count 0 (the status "empty")
    # Compiled with no graph at all (made_no_graph): their status is "ok", as tlparse's, but no code of them is compiled.
    no_graph: list[str] = field(default_factory=list)
    # Every compilation that compiled (metrics, no failure) is one of the above: nothing of the program ran compiled.
    ran_eagerly: bool = False
    # Operators in the graphs that compiled, graph_op_count summed; None where none logged a count, 0 where ran_eagerly
    # (a graph of none, or none at all). Not in to_json: a rank's summary carries it (ranks[].graph_ops).
    graph_ops: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"empty": self.empty, "no_graph": self.no_graph, "ran_eagerly": self.ran_eagerly}


def empty_graphs(trace: Trace) -> EmptyGraphs:
    found = EmptyGraphs()
    compiled = 0
    op_counts: list[int] = []
    for entry in trace.sorted_compiles():
        metrics = entry.metrics
        if entry.compile_id is None or metrics is None or metrics.get("fail_type"):
            continue
        compiled += 1
        if type(metrics.get("graph_op_count")) is int and metrics["graph_op_count"] >= 0:
            op_counts.append(metrics["graph_op_count"])
        if metrics.get("graph_op_count") == 0 and type(metrics.get("graph_op_count")) is int:
            found.empty.append(entry.key)
        elif made_no_graph(metrics):
            found.no_graph.append(entry.key)
    found.ran_eagerly = compiled > 0 and compiled == len(found.empty) + len(found.no_graph)
    found.graph_ops = 0 if found.ran_eagerly else sum(op_counts) if op_counts else None
    return found

"""Analyses: pure functions from a Trace to results. They never import renderers."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.ids import CompileId
from ..model.trace import Trace
from .failures import FailureRow, failures_and_restarts
from .stack_trie import StackTrieNode, build_stack_trie
from .status import compile_status


@dataclass
class Results:
    stack_trie: StackTrieNode
    failures: list[FailureRow]
    statuses: dict[CompileId | None, str]

    def to_json(self) -> dict:
        return {
            "stack_trie": self.stack_trie.to_json(),
            "failures": [f.to_json() for f in self.failures],
            "statuses": {str(k) if k else "[-/-]": v for k, v in self.statuses.items()},
        }


def analyze(trace: Trace) -> Results:
    return Results(
        stack_trie=build_stack_trie(trace),
        failures=failures_and_restarts(trace),
        statuses={cid: compile_status(c) for cid, c in trace.compiles.items()},
    )

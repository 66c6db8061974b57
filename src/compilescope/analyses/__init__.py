"""Analyses: pure functions from a Trace to results. They never import renderers."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.ids import CompileId
from ..model.trace import Trace
from .export import ExportReport, export_report
from .failures import FailureRow, failures_and_restarts
from .insights import Insights, insights
from .provenance import Provenance, analyze_provenance
from .sources import Sources, analyze_sources
from .transformed import TransformedCode, transformed_code
from .stack_trie import StackTrieNode, build_stack_trie, build_unknown_stack_trie
from .status import compile_statuses


@dataclass
class Results:
    stack_trie: StackTrieNode
    unknown_stack_trie: StackTrieNode
    failures: list[FailureRow]
    statuses: dict[CompileId | None, str]
    export: ExportReport = field(default_factory=ExportReport)
    provenance: Provenance = field(default_factory=Provenance)
    insights: Insights | None = None
    sources: Sources = field(default_factory=Sources)
    transformed: dict[str, TransformedCode] = field(default_factory=dict)  # compile dir -> code run instead

    def to_json(self) -> dict:
        return {
            "stack_trie": self.stack_trie.to_json(),
            "unknown_stack_trie": self.unknown_stack_trie.to_json(),
            "failures": [f.to_json() for f in self.failures],
            "statuses": {str(k) if k else "[-/-]": v for k, v in self.statuses.items()},
            "export": self.export.to_json(),
            "provenance": self.provenance.to_json(),
        }


def analyze(trace: Trace) -> Results:
    statuses = compile_statuses(trace)
    provenance = analyze_provenance(trace)
    return Results(
        stack_trie=build_stack_trie(trace, statuses),
        unknown_stack_trie=build_unknown_stack_trie(trace),
        failures=failures_and_restarts(trace),
        statuses=statuses,
        export=export_report(trace),
        provenance=provenance,
        insights=insights(trace),
        sources=analyze_sources(trace, provenance=provenance),
        transformed=transformed_code(trace),
    )

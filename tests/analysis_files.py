"""The analyses that look up the user's files, called as analyze() calls them: with the files ingest reads for them
first (analyses/user_files). Called alone, an analysis is given no files (as on a machine without the program): a
test of what it says of a program on disk calls it through here."""

from __future__ import annotations

from typing import Any

from compilescope.analyses.insights import Insights
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.op_mutations import OpMutations
from compilescope.analyses.op_mutations.analysis import op_mutations
from compilescope.analyses.provenance import Provenance
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.analyses.user_files import insight_files, op_mutation_files, read_sources
from compilescope.analyses.user_kernels import UserKernels, def_line, user_kernels
from compilescope.ingest.source_files import read_source_files
from compilescope.model.trace import Trace

__all__ = ["def_line_here", "insight_files", "insights_here", "op_mutation_files", "op_mutations_here",
           "provenance_here", "read_source_files", "read_sources", "user_kernels_here"]


def op_mutations_here(trace: Trace) -> OpMutations:
    return op_mutations(trace, op_mutation_files(trace))


def user_kernels_here(trace: Trace) -> UserKernels:
    return user_kernels(trace, insight_files(trace))


def insights_here(trace: Trace, *args: Any) -> Insights:
    return insights(trace, *args, files=insight_files(trace))


def provenance_here(trace: Trace) -> Provenance:
    return analyze_provenance(trace, insight_files(trace))


def def_line_here(path: str, decorator_line: int, def_text: str) -> int | None:
    return def_line(path, decorator_line, def_text, read_source_files([path]))

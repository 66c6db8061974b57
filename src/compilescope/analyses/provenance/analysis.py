"""The provenance of each compile id (analyze_provenance): its sections, one per Inductor graph, with their line maps,
kernels and kernel links, and which graph calls another graph's kernel (sections.py, for a log that logged some)."""

from __future__ import annotations

from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Trace
from ..fx_sites import NODE_MAPPINGS
from . import KERNEL_STACK_TRACES, Provenance


def analyze_provenance(trace: Trace, files: SourceFiles = NO_FILES) -> Provenance:
    """files: the user's files as ingest read them (user_kernels.files_wanted)."""
    if not any(a.filename.startswith((KERNEL_STACK_TRACES, NODE_MAPPINGS)) for entry in trace.compiles.values()
               for a in entry.artifacts):
        return Provenance()
    # (here: sections.py and the five modules it reads with are for a log with provenance, which most logs
    # (without INDUCTOR_PROVENANCE=1) are not, and their imports were every report's start-up)
    from .sections import provenance_of

    return provenance_of(trace, files)

"""The user's files the analyses look up, read by ingest (ingest/source_files.read_source_files) in the rounds the
analyses ask for them: which module a calling file imports, or which files the source pages show, is known only once
the files or analyses before are. analyze() and diagnose read them through here; the analyses themselves take the
SourceFiles and never read the disk (tests/test_layers.py).
"""

from __future__ import annotations

from typing import Any

from ..ingest.source_files import read_source_files
from ..model.source_files import SourceFiles
from ..model.trace import Trace
from . import state_lines, user_kernels
from .op_mutations.calling_files import files_wanted, modules_wanted, package_markers
from .recompiles import Recompiles
from .recompiles.analysis import recompiles
from .sources import Sources
from .sources.analysis import NotedSources, note_sources, source_pages
from .stack_values import StackValues


def op_mutation_files(trace: Trace, known: SourceFiles | None = None) -> SourceFiles:
    """known, with the files op_mutations(trace, files) looks up: its files_wanted (the custom ops' calling files),
    the `__init__.py` files of their packages (package_markers), then the first file of each module those import
    (modules_wanted: known once they are read)."""
    files = read_source_files(files_wanted(trace), known)
    files = read_source_files(package_markers(trace, files), files)  # (which folders are packages)
    return read_source_files(known=files, first_of=modules_wanted(trace, files))


def insight_files(trace: Trace, known: SourceFiles | None = None) -> SourceFiles:
    """known, with the files insights(trace, files=...) and analyze_provenance(trace, files) look up: the user
    kernels' files (their def lines) and op_mutation_files."""
    return op_mutation_files(trace, read_source_files(user_kernels.files_wanted(trace), known))


def state_line_files(found: Recompiles, known: SourceFiles) -> SourceFiles:
    """known, with the files state_lines(found, files) searches for the lines that changed a module's state."""
    return read_source_files(state_lines.files_wanted(found), known)


def page_files(noted: NotedSources, known: SourceFiles) -> SourceFiles:
    """known, with the files source_pages(noted, files) shows: each noted .py file."""
    return read_source_files(noted.paths, known)


def read_sources(trace: Trace, recompile_info: Recompiles | None = None, stack_values: StackValues | None = None,
                 **given: Any) -> Sources:
    """The source pages of trace with the user's files read (analyze_sources with the files each step looks up):
    given, note_sources' other arguments; the recompiles made here where not given, as note_sources would."""
    stack_values = stack_values if stack_values is not None else StackValues(trace)
    recompile_info = recompile_info if recompile_info is not None else recompiles(trace, stack_values)
    files = state_line_files(recompile_info, insight_files(trace))
    noted = note_sources(trace, recompile_info=recompile_info, stack_values=stack_values, files=files, **given)
    return source_pages(noted, page_files(noted, files))

"""The analysis (sources): every note a log gives a user's line, put on it (note_sources), then the noted files'
pages, read from disk or rebuilt from the log's quotes (source_pages); analyze_sources, both."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Iterable

from ...model.names import safe_stem
from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Trace
from ..activation_checkpoint import ActivationCheckpointing, activation_checkpointing
from ..aoti import Aoti
from ..autotuning import Autotuning, autotuning
from ..crash import Crashes
from ..dynamic_shapes import DynamicShapes, dynamic_shapes
from ..compile_errors import CompileErrors
from ..graph_breaks import GraphBreaks
from ..graph_breaks.analysis import graph_breaks
from ..numerics import Numerics, numerics
from ..op_mutations import OpMutations
from ..op_mutations.analysis import op_mutations
from ..provenance import Provenance
from ..provenance.analysis import analyze_provenance
from ..recompiles import Recompiles
from ..installed_guards import GuardTrees
from ..recompiles.analysis import recompiles
from ..stack_values import StackValues
from ..state_lines import StateLine
from ..user_kernels import UserKernels, user_kernels
from ..user_locations import UserLocation
from . import LineNotes, SourceFile, Sources
from .break_sites import BreakSites, add_breaks, graph_break_sites
from .calls import add_guarded_calls
from .captured import add_compiles
from .file_text import Quotes, is_user_source, read_disk
from .guards import add_failed_guards, add_installed_guards, add_state_changes, add_symbols
from .kernels import add_kernels, kernel_stacked
from .marks import (add_aoti, add_autotuning, add_checkpointing, add_failures, add_numerics, add_op_mutations,
                    add_ran_eagerly, add_user_kernels, failed_compilations)

def file_page(path: str) -> str:
    """The report page of a source file: readable and unique (two files may share a base name)."""
    digest = hashlib.sha1(path.encode("utf-8", "replace")).hexdigest()[:8]
    return f"sources/{safe_stem(os.path.basename(path) or 'source')}_{digest}.html"


class NotedSources:
    """What note_sources found, before the files are read: the lines to note, per file, and what the log quotes of
    them. (Not saved: no dataclass.)"""

    def __init__(self, trace: Trace, result: Sources, notes: dict[str, dict[int, LineNotes]], quotes: Quotes,
                 linked_lines: dict[str, set[int]], codes: dict[str, dict[tuple[str, int], int | None]],
                 breaks: GraphBreaks | None, errors: CompileErrors | None, changed_state: list[StateLine]) -> None:
        self.trace, self.result, self.notes, self.quotes = trace, result, notes, quotes
        self.linked_lines, self.codes, self.breaks, self.errors = linked_lines, codes, breaks, errors
        self.changed_state = changed_state  # (state_lines': for the recompiles' advice, link_switch_lines)

    @property
    def paths(self) -> list[str]:
        """The files source_pages reads (read_disk): each noted .py file."""
        return sorted(p for p in self.notes if p.endswith(".py"))


def analyze_sources(trace: Trace, files: SourceFiles = NO_FILES, **given: Any) -> Sources:
    """note_sources (given: its arguments), then source_pages. files: as ingest read them, with note_sources(...).paths
    (analyses.analyze reads the files in between)."""
    return source_pages(note_sources(trace, files=files, **given), files)


def note_sources(trace: Trace, provenance: Provenance | None = None, shapes: DynamicShapes | None = None,
                    recompile_info: Recompiles | None = None, linked_locations: Iterable[UserLocation] = (),
                    errors: CompileErrors | None = None, crashed: Crashes | None = None,
                    stack_values: StackValues | None = None, export_only: bool = False,
                    checkpointing: ActivationCheckpointing | None = None, breaks: GraphBreaks | None = None,
                    break_sites: BreakSites | None = None,
                    autotuned: Autotuning | None = None, aoti: Aoti | None = None,
                    numerics_found: Numerics | None = None,
                    own_kernels: UserKernels | None = None, mutations: OpMutations | None = None,
                    files: SourceFiles = NO_FILES, guard_trees: GuardTrees | None = None) -> NotedSources:
    """stack_values: names Dynamo's ___stack values in the user's words, for installed guards and symbols as the
    recompiles view names failed guards (shared with shapes and recompile_info where the caller made them).
    linked_locations: other user lines the report links to (where torch warned, a stack's or a traceback's frame):
    the page of their file, where it has one, shows them (as rows of their own where the log does not quote them), so
    the link lands on its line. errors, crashed: the compile failures and the crashes, each
    marked on the user line its analysis placed it at (a file with no other note gets a page for it). export_only:
    ExportReport.only, the log's every compile torch.export's. breaks: graph_breaks' (made here where not given): the
    functions Dynamo skipped and the higher-order op calls that ran uncompiled because of one, marked on their lines.
    break_sites: graph_break_sites' (made here where not given; the insights read it too).
    autotuned: autotuning's (made here where not given): max-autotune's searches, on the line of the op each was for.
    aoti: the AOTInductor packages the log compiled, each marked on the user's line that compiled it. numerics_found:
    numerics' (made here where not given): the lines whose compiled results differ from eager's, and why. own_kernels:
    user_kernels' (made here where not given): the user's own Triton kernels, marked on the lines that define and
    launch them. mutations: op_mutations' (made here where not given): the custom ops writing into arguments they do
    not declare, marked where they write and where compiled code calls them. files: as ingest read them (the files
    state_lines, user_kernels and op_mutations search: their files_wanted). guard_trees: the log's guard trees, where
    the caller has them (recompile_info's analysis reads them too; made here otherwise)."""
    quotes = Quotes()
    # (path, line) -> LineNotes, built first without text; files are made at the end.
    notes: dict[str, dict[int, LineNotes]] = {}

    def at(path: str, line: int) -> LineNotes | None:
        if not is_user_source(path) or line <= 0:
            return None
        lines = notes.get(path)
        if lines is None:
            lines = notes[path] = {}
        found = lines.get(line)
        if found is None:  # (made only here: a line is asked for once per note on it: 3,400 asks, 136 lines on GPT-2)
            found = lines[line] = LineNotes()
        return found

    # Each step notes what one analysis, or one kind of record, says of the lines, in this order: a line's first quote
    # is the one kept (Quotes.add), and each list of a line's notes is in the order its steps added them.
    stack_values = stack_values if stack_values is not None else StackValues(trace)
    # Compilations whose metrics tell a failure: their frame was not compiled, though Dynamo started on it.
    failed_keys = failed_compilations(trace)
    provenance = provenance if provenance is not None else analyze_provenance(trace, files)
    captured = add_compiles(trace, provenance, failed_keys, at, quotes)
    break_sites = break_sites if break_sites is not None else graph_break_sites(trace)
    break_sites.quote(quotes)
    sites = break_sites.sites
    add_breaks(sites, break_sites.resumes, failed_keys, at)
    guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)
    recompile_info = recompile_info if recompile_info is not None else recompiles(trace, stack_values, guard_trees)
    add_failed_guards(recompile_info, errors, at, quotes)
    changed_state = add_state_changes(trace, recompile_info, files, at)
    code_guards = add_installed_guards(guard_trees, captured.guard_sites, set(notes), stack_values, at, quotes)
    add_symbols(shapes if shapes is not None else dynamic_shapes(trace, stack_values), at)
    calls: dict[tuple[str, int, str, int], dict[str, Any]] = {}  # (caller's file, line, ops' file, line) -> its call
    # Where a compile's kernel stacks hold the whole chain of calls, they say them (add_kernels); elsewhere its guards do.
    add_guarded_calls(code_guards, captured.graph_sites, kernel_stacked(provenance), at, calls)
    add_kernels(trace, provenance, at, quotes, calls)
    add_failures(trace, errors, crashed, at, quotes)
    add_checkpointing(checkpointing if checkpointing is not None else activation_checkpointing(trace), at, quotes)
    add_autotuning(autotuned if autotuned is not None else autotuning(trace), at, quotes)
    add_numerics(numerics_found if numerics_found is not None else numerics(trace), at, quotes)
    add_op_mutations(mutations if mutations is not None else op_mutations(trace, files), at, quotes)
    add_aoti(aoti, at, quotes)
    add_user_kernels(own_kernels if own_kernels is not None else user_kernels(trace, files), at, quotes)

    linked_lines: dict[str, set[int]] = {path: lines for path, lines in captured.stack_lines.items()
                                            if path in notes}
    for loc in linked_locations:
        if loc.filename in notes and loc.line > 0:
            quotes.add(loc.filename, loc.line, loc.code)
            linked_lines.setdefault(loc.filename, set()).add(loc.line)

    result = Sources(graph_breaks=sites, export_only=export_only,
                     outside_name=(None if not aoti else "AOTInductor package" if len(aoti.packages) == 1
                                   else "AOTInductor packages"))
    return NotedSources(trace, result, notes, quotes, linked_lines, captured.codes, breaks, errors, changed_state)


def source_pages(noted: NotedSources, files: SourceFiles) -> Sources:
    """The noted files' pages: each file's text as ingest read it (files: with noted.paths), where the file agrees with
    every line the log quotes of it; else rebuilt from those lines."""
    trace, result, notes, quotes = noted.trace, noted.result, noted.notes, noted.quotes
    linked_lines, codes, breaks, errors = noted.linked_lines, noted.codes, noted.breaks, noted.errors
    read = {path: read_disk(path, quotes.by_file.get(path, {}), files) for path in notes}
    for path in sorted(notes):
        quoted = quotes.by_file.get(path, {})
        disk, note = read[path]
        if disk is not None:
            text = dict(enumerate(disk, 1))
            line_count = len(disk)
            origin = "disk"
        else:
            # Up to the highest line the log names; only the quoted lines take room (SourceFile.text is sparse).
            line_count = max(0, *quoted, *notes[path], *linked_lines.get(path, ()))
            text = {n: t for n, t in quoted.items() if n > 0}
            origin = "log"
        functions = quotes.functions.get(path, {}) if origin == "log" else {}
        linked_rows = sorted(n for n in linked_lines.get(path, ()) if n not in text and n not in notes[path]
                              and n <= line_count) if origin == "log" else []
        result.files.append(SourceFile(path, file_page(path), origin, note, text, line_count, notes[path],
                                       {n: f for n, f in functions.items() if n <= line_count},
                                       codes.get(path, {}) if origin == "log" else {}, linked_rows))
    add_ran_eagerly(result, breaks if breaks is not None else graph_breaks(trace), errors)
    return result

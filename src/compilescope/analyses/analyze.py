"""analyze(): every analysis of one log, in the order each needs the others."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..model.trace import Trace
from .compile_summary import compile_summaries, metric_pages
from .export import export_report
from .failures import failures_and_restarts
from .insights.analysis import insights
from .installed_guards import GuardTrees
from .provenance.analysis import analyze_provenance
from .results import Results
from .sources.analysis import note_sources, source_pages
from .sources.break_sites import graph_break_sites
from .transformed import transformed_code
from .stack_trie import build_stack_trie, outside_stacks
from .stack_values import StackValues
from .status import compile_statuses
from .user_files import insight_files, page_files, state_line_files
from .user_locations import UserLocation

if TYPE_CHECKING:
    from ..model.profile import Profile


def analyze(trace: Trace, profiles: Sequence[Profile] = ()) -> Results:
    files = insight_files(trace)  # the user's files, read by ingest in the rounds the analyses ask (they read none)
    statuses = compile_statuses(trace)
    provenance = analyze_provenance(trace, files)
    runtime = None
    if profiles:
        from .runtime.analysis import analyze_runtime  # here: the profile join (and its model) is for --profile only

        runtime = analyze_runtime(trace, provenance, profiles)
    export = export_report(trace)
    break_sites = graph_break_sites(trace)  # (the insights' summary and the source pages both read the breaks)
    guard_trees = GuardTrees(trace)  # (the recompiles' pinned state and the source pages' guards read the trees)
    # (the insights' recompiles and dynamic shapes and the source pages' guards name ___stack sources: read once)
    stack_values = StackValues(trace)
    found = insights(trace, runtime, export, files, break_sites, guard_trees, stack_values)
    outside = outside_stacks(trace)
    compiles = compile_summaries(trace, statuses, found)
    # Lines the report links to that no note of the source analysis places: where torch warned, the user frames of
    # the stacks outside any compilation (a torch.export call), the export call a failed strict export came from, the
    # frames of a crash's stack and of a compile's stack and traceback metrics (a traceback quotes each frame's line).
    linked = [w.location for w in found.warnings.warnings if w.location is not None]
    linked += [UserLocation(f.filename, f.line, f.name, f.loc) for group in outside for f in group.user]
    linked += [e.export_call for e in found.errors.errors if e.export_call is not None]
    linked += [f for crash in found.crashes.crashes for f in crash.frames]
    for summary in compiles.values():
        frames = [f for stack in summary.metrics.stacks.values() for f in stack]
        frames += [f for tracebacks in summary.metrics.tracebacks.values() for tb in tracebacks for raised in tb.chain
                   for f in raised.frames]
        linked += [UserLocation(f.filename, f.line, f.name, f.loc) for f in frames]
    files = state_line_files(found.recompiles, files)
    # (the insights' recompiles: the sources read their failed guards, which nothing after the analysis changes)
    noted = note_sources(trace, provenance=provenance, recompile_info=found.recompiles, errors=found.errors,
                         crashed=found.crashes, linked_locations=linked, export_only=export.only,
                         checkpointing=found.checkpointing, breaks=found.graph_breaks, break_sites=break_sites,
                         autotuned=found.autotuning,
                         aoti=found.aoti, numerics_found=found.numerics, own_kernels=found.user_kernels,
                         mutations=found.op_mutations, files=files, guard_trees=guard_trees,
                         stack_values=stack_values, shapes=found.dynamic_shapes)
    if found.recompiles.frames:
        from .recompiles.links import link_switch_lines  # (here: for a log that recompiled, as insights' links)

        link_switch_lines(found.recompiles, noted.changed_state)  # (the mode and requires_grad advice, with their lines)
    return Results(
        stack_trie=build_stack_trie(trace, statuses),
        outside_stacks=outside,
        failures=failures_and_restarts(trace, found.errors, found.graph_breaks),
        statuses=statuses,
        export=export,
        provenance=provenance,
        insights=found,
        compiles=compiles,
        runtime=runtime,
        trace=trace,
        sources=source_pages(noted, page_files(noted, files)),
        transformed=transformed_code(trace),
        metric_pages=metric_pages(trace),
    )

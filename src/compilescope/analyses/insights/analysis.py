"""insights(trace): every per-topic analysis of one log, linked where one reads another's results, then ranked
into findings (ranking.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Trace
from ..activation_checkpoint import activation_checkpointing
from ..aoti import aoti
from ..autotuning import autotuning
from ..caches import caches, name_aoti_cache_rows
from ..compile_time import as_export_time, compile_times, name_aoti_rows, unfinished_compiles
from ..crash import crashes
from ..cudagraphs import cudagraphs
from ..dynamic_shapes import dynamic_shapes
from ..empty_graphs import empty_graphs
from ..environment import environment
from ..compile_errors import compile_errors
from ..export import ExportReport, export_report
from ..freezing import freezing
from ..graph_breaks.analysis import graph_breaks
from ..numerics import numerics
from ..numpy_graphs import numpy_in_graphs
from ..op_mutations.analysis import op_mutations
from ..installed_guards import GuardTrees
from ..recompiles.analysis import recompiles
from ..repeated_blocks import regional
from ..sources.break_sites import BreakSites, add_eager_lines, graph_break_sites
from ..stack_values import StackValues
from ..status import compiled_attempts
from ..torch_warnings import PENDING_BACKWARD, torch_warnings
from ..unread import unread
from ..user_kernels import user_kernels
from . import Insights
from .ranking import findings

if TYPE_CHECKING:
    from ..runtime import Runtime


def insights(trace: Trace, runtime: Runtime | None = None, export: ExportReport | None = None,
             files: SourceFiles = NO_FILES, break_sites: BreakSites | None = None,
             guard_trees: GuardTrees | None = None, stack_values: StackValues | None = None) -> Insights:
    """export: the log's export_report(trace), where the caller has it already (computed here otherwise). files: the
    user's files as ingest read them (user_kernels' and op_mutations' files_wanted, then op_mutations.calling_files.modules_wanted):
    the kernels' def lines and the custom ops' definitions are read there. break_sites: graph_break_sites(trace), where
    the caller has it (the source analysis reads it too; made here otherwise). guard_trees: the log's guard trees,
    where the caller has them (the source analysis reads them too). stack_values: the log's StackValues, where the
    caller has them (the source analysis names ___stack sources too; made here otherwise)."""
    printed = torch_warnings(trace)  # (the CUDA graphs analysis reads them too)
    # (recompiles and dynamic shapes both name ___stack sources)
    stack_values = stack_values if stack_values is not None else StackValues(trace)
    guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)  # (recompiles, breaks, errors)
    ins = Insights(
        source=trace.source,
        n_compiles=trace.n_compile_ids,
        graph_breaks=graph_breaks(trace, guard_trees),
        recompiles=recompiles(trace, stack_values, guard_trees),
        compile_time=compile_times(trace, guard_trees),
        caches=caches(trace),
        errors=compile_errors(trace, guard_trees),
        dynamic_shapes=dynamic_shapes(trace, stack_values, guard_trees),
        autotuning=autotuning(trace),
        cudagraphs=cudagraphs(trace, printed),
        warnings=printed,
        unread=unread(trace.stats),
        runtime=runtime,
        environment=environment(trace),
        crashes=crashes(trace),
        compiled_attempts=compiled_attempts(trace),
        empty_graphs=empty_graphs(trace),
        checkpointing=activation_checkpointing(trace),
        regional=regional(trace, guard_trees),
        numpy=numpy_in_graphs(trace),
        aoti=aoti(trace),
        numerics=numerics(trace),
        freezing=freezing(trace),
        user_kernels=user_kernels(trace, files),
        op_mutations=op_mutations(trace, files),
    )
    add_eager_lines(ins.graph_breaks, (break_sites if break_sites is not None else graph_break_sites(trace)).sites)
    if ins.recompiles.frames:
        # (here: what the others add to a recompiled frame, with the advice it rewrites, is for a log that recompiled)
        from ..recompiles.links import link_guarded_values, link_specializations, link_times, name_failing_guards

        link_specializations(ins.recompiles, ins.dynamic_shapes.specializations)
        link_guarded_values(ins.recompiles, ins.dynamic_shapes.symbols)
        link_times(ins.recompiles, ins.compile_time)
        name_failing_guards(ins.errors, ins.recompiles)
    ins.unfinished = unfinished_compiles(trace, ins.compile_time)
    name_aoti_rows(ins.compile_time, ins.aoti)
    name_aoti_cache_rows(ins.caches, ins.aoti)
    pending = next((w for w in ins.warnings.warnings if w.name == PENDING_BACKWARD), None)
    if pending is not None and ins.cudagraphs.never_recorded:  # (cudagraphs gave them its reason)
        if not pending.compile_ids:  # read from stderr, which names no compile: the graphs it kept from recording
            pending.compile_ids = [c.compile_id for c in ins.cudagraphs.never_recorded]
    exported = export if export is not None else export_report(trace)
    ins.findings = findings(ins, exported)
    if exported.only and not ins.aoti.compiled:  # (an AOTInductor compile's time is no export's, finished or not)
        ins.export_calls = len(exported.calls)
        as_export_time(ins.compile_time, trace)
    return ins

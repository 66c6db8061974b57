"""findings(): the findings of one log's insights, one per cause, most urgent first.

The wording of each topic is in its module; failed compiles, the recompile limit, frames that recompiled and the
compile time's headline are worded here, where they are grouped (one finding per cause).
"""

from __future__ import annotations

import os

from ...wording import and_list, format_seconds, times
from ..compile_time import ends_during
from ..export import ExportReport
from ..graph_breaks.wording import FSDP2_ADVICE, skipped_cause, skipped_title
from ..recompiles import CHANGE_LABELS, FrameRecompiles
from ..torch_warnings import AUTOTUNE_CANDIDATE_FAILED, ITEM_BREAK, PENDING_BACKWARD, WONT_CONVERT
from . import ERROR, INFO, SECTIONS, WARNING, Finding, Insights, python_library, shown_names
from .compile_time_and_caches import (AUTOTUNING_WORTH_SAYING_S, autotuning_detail, frozen,
                                      kernels_compiled_again_finding, recompile_cost, repeated_blocks, so_far_note)
from .crash_and_warnings import crash_finding, testing_only, torch_warning_findings
from .cudagraphs import cudagraph_recordings, cudagraph_skips, cudagraphs_never_recorded, cudagraphs_run_once
from .export_and_aoti import (aoti_inputs, draft_export_stopped, export_dims, export_issues, header_precompile,
                              package_build, specializations)
from .graph_breaks_and_recompiles import (TENSOR_NAME, backward_recaptures, breaks_by_torch, breaks_in_ddp,
                                          compiled_afresh, compiled_alone, disabled_calls, graph_break_findings,
                                          hooks_registered_late, ran_eagerly, recompile_cause)
from .wrong_results import numerics_findings, numpy_random_findings, op_mutation_finding


def _merged(found: list[Finding]) -> list[Finding]:
    """Identical rows (the same resume function in two frames, say) once, with how many they were."""
    counts: dict[tuple, int] = {}
    for f in found:
        counts[(f.severity, f.section, f.title, f.detail)] = counts.get((f.severity, f.section, f.title, f.detail), 0) + 1
    out = []
    for key, n in counts.items():
        severity, section, title, detail = key
        out.append(Finding(severity, section, title + (f" (×{n})" if n > 1 else ""), detail))
    return out


def findings(ins: Insights, export: ExportReport | None = None) -> list[Finding]:
    """Ranked: compiles that failed or stopped compiling first, then what costs graphs, then time.

    One finding per cause: frames that recompile for the same change, compiles that fail with the
    same error at the same line, and graph-break reasons from one user line are grouped.
    """
    library = python_library(ins)
    out: list[Finding] = [testing_only(t) for t in ins.environment.testing_only]
    # (every compile the log began ended: an AOTInductor package that crashed in loading was built)
    compiled = ins.compile_time is not None and ins.compile_time.all_ended
    # the program died: before all but a test switch
    out.extend(crash_finding(c, ins.aoti, compiled) for c in ins.crashes.crashes)
    exported = export or ExportReport()
    out.extend(export_issues(exported))
    out.extend(export_dims(exported))
    out.extend(draft_export_stopped(exported))
    for frame in ins.recompiles.frames:
        if frame.hit_limit and id(frame) not in library.frames:
            last = frame.steps[-1] if frame.steps else None
            guard = last.guard if last else None
            # (late in a run is when a service meets it: after its warm-up, on a request unlike the others)
            when = f"; hit {last.when_text.split(';')[0]}" if last and last.when_text else ""
            out.append(Finding(ERROR, "recompiles", f"{frame.name or 'a function'} hit the recompile limit and runs uncompiled",
                               f"{' → '.join(frame.compilations)}; failing guard: {guard.shown if guard else '?'}{when}"))
    errors: dict[tuple, list] = {}
    for err in ins.errors.errors:
        if err.stage == "recompile_limit" or id(err) in library.errors:
            continue  # reported above, with its guard (or below, with Python's library)
        errors.setdefault((err.stage, err.exception, err.message, err.location.key if err.location else None), []).append(err)
    for group in errors.values():
        err = group[0]
        # A location torch logged is where it failed; without one, the compiled frame is only where the function
        # starts (its def line), so it is named as that and not as the place of the failure.
        where = ("" if err.location is None else f" at {err.location.short}" if err.location_kind != "compiled frame"
                 else f" while compiling {err.location.function or 'a frame'} (defined at {err.location.short}; no "
                      "failure location logged)")
        ids = err.compile_id if len(group) == 1 else shown_names([e.compile_id for e in group])
        if err.skipped_frame is not None:  # no exception: the function ran, all of it uncompiled
            told = (f"in FSDP2's hooks, which torch never compiles: {FSDP2_ADVICE}" if err.in_fsdp_hook
                    else err.message)
            before = err.skipped_before
            # A recompile's: only calls from it on run the frame eagerly, and lose what earlier ones ran compiled. Where
            # that held no op (the lines after a break each broke again), nothing compiled is lost: not an error.
            out.append(Finding(ERROR if before is None or before.ops else WARNING, "errors",
                               f"{ids}: {skipped_title(err.skipped_frame, before=before)}",
                               f"{before.ran + '; ' if before is not None else ''}"
                               f"{skipped_cause(err.in_loop, err.in_with)}{where}: {told}"))
            continue
        out.append(Finding(ERROR, "errors", f"{ids} failed in {err.stage_label}{where}", f"{err.exception}: {err.message}"))
    if ins.unfinished:
        named = [ins.aoti.said(c) for c, _ in ins.unfinished]  # (an AOTInductor build: its package's name)
        ids = named[0] if len(named) == 1 else shown_names(named)
        during = ends_during(ins.unfinished, ins.compile_time.labels, ins.aoti)
        out.append(Finding(ERROR, "compile_time", f"{ids} never finished compiling",
                           f"the log ends {during}: the program was stopped, crashed or was killed while compiling, "
                           "or the log was cut"))
    out.extend(ran_eagerly(ins))
    out.extend(breaks_in_ddp(ins.graph_breaks.breaks))
    # A break after which Dynamo skipped its frame is the errors finding above, which names the break's line: said
    # once, as the consequence the user feels (the Graph breaks section keeps the break itself).
    skipped_ids = {e.compile_id for e in ins.errors.errors if e.skipped_frame is not None}
    out.extend(graph_break_findings([b for b in ins.graph_breaks.breaks
                                      if id(b) not in library.breaks and not b.by_torch and not b.in_ddp_forward
                                      and not (b.skipped_frame is not None and set(b.compile_ids) <= skipped_ids)
                                      and not b.disabled]))
    out.extend(numpy_random_findings(ins.numpy))
    out.extend(aoti_inputs(package) for package in ins.aoti.packages)
    out.extend(op_mutation_finding(op) for op in (*ins.op_mutations.ops, *ins.op_mutations.functionalized))
    out.extend(numerics_findings(ins.numerics))
    ct = ins.compile_time
    causes: dict[tuple, list[FrameRecompiles]] = {}
    for frame in ins.recompiles.frames:
        if not frame.hit_limit and id(frame) not in library.frames:
            causes.setdefault(recompile_cause(frame), []).append(frame)
    for group in causes.values():
        frame = group[0]
        changes = ", ".join(CHANGE_LABELS[c] for c in frame.changes)
        if len(group) == 1:
            called = f" (called at {frame.called_at})" if frame.called_from else ""
            caches = f"; a size of transformers' KV cache ({', '.join(frame.kv_caches)}) among them" if frame.kv_caches else ""
            how_often = times(frame.recompiles)
            cost = recompile_cost(ct, [frame])
            alone = compiled_alone(frame, ins.graph_breaks.breaks)
            if alone:
                cost = f"{alone}; {cost}" if cost else alone
            if frame.settled:  # each recompile made what changed dynamic: a cost, not a fault
                failed = [s.guard.shown for s in frame.steps if s.guard]
                # A size marked dynamic that recompiled all the same: the mark met torch's 0/1 specialization.
                marked = [f"{s.dynamic_of} was marked dynamic at size {s.guard.marked_size}, which torch keeps static "
                          "(its 0/1 specialization)" for s in frame.steps if s.guard and s.guard.marked_size]
                out.append(Finding(INFO, "recompiles", f"{frame.display_name}{called} recompiled {how_often}, then ran "
                                   f"with {and_list(frame.made_dynamic)} dynamic",
                                   "; ".join(filter(None, (*marked, f"failed guard{'s' if len(failed) > 1 else ''}: "
                                                           f"{'; '.join(failed)}" if failed else "", cost)))))
                continue
            # Every recompile expected (one compile per setting: eval(), an input's requires_grad): a cost, not a fault.
            expected = frame.steps and all(s.expected is not None for s in frame.steps)
            out.append(Finding(INFO if expected else WARNING, "recompiles",
                               f"{frame.display_name}{called} recompiled {how_often}{', as expected' if expected else ''}",
                               "; ".join(filter(None, (f"changed: {changes}{caches}" if changes else "", cost)))))
            continue
        guards = "; ".join(dict.fromkeys(TENSOR_NAME.sub("tensor ", s.guard.shown) for s in frame.steps if s.guard))
        names = [f.display_name for f in group]
        if len(set(names)) < len(names):  # two `forward`s: say which
            names = [f"{f.display_name} ({os.path.basename(f.filename or '?')}:{f.first_line})" for f in group]
        cost = recompile_cost(ct, group)
        out.append(Finding(WARNING, "recompiles",
                           f"{len(group)} functions recompiled for one cause ({changes or 'no reason logged'})",
                           f"{shown_names(names)}{': ' + guards if guards else ''}{'; ' + cost if cost else ''}"))
    out.extend(hooks_registered_late(ins.recompiles))
    out.extend(backward_recaptures(ins.recompiles))
    out.extend(compiled_afresh(ins.recompiles, ct, ins.caches))
    out.extend(library.findings())
    out.extend(breaks_by_torch(ins.graph_breaks.breaks))
    out.extend(disabled_calls([b for b in ins.graph_breaks.breaks if id(b) not in library.breaks]))
    out.extend(cudagraph_skips(ins.cudagraphs))  # with the warnings, before the time
    out.extend(cudagraphs_never_recorded(ins.cudagraphs, ins.warnings))
    out.extend(cudagraphs_run_once(ins.cudagraphs))
    said = {name for name, found in ((PENDING_BACKWARD, ins.cudagraphs.never_recorded),
                                     (AUTOTUNE_CANDIDATE_FAILED, ins.autotuning.failed),
                                     (WONT_CONVERT, ins.errors.errors), (ITEM_BREAK, ins.graph_breaks)) if found}
    out.extend(torch_warning_findings(ins.warnings, said_above=said, runtime=ins.runtime))
    compared = ins.runtime.comparison if ins.runtime else None
    asked = None  # the finding a user asked for by giving both profiles: first of its severity, whatever its section
    if compared is not None:
        from ..runtime.findings import comparison_finding  # here: only a log given with a profile pays for the runtime analysis

        finding = comparison_finding(compared)
        if finding is not None:
            asked = Finding(INFO, "runtime", *finding)
            out.append(asked)
    if ct and ct.phases:
        top = ct.phases[0]
        slowest = ct.slowest
        recompiled = [f for f in ins.recompiles.frames if id(f) not in library.frames]
        cost = recompile_cost(ct, recompiled, short=True)
        # (an export-only log's compile time is strict export's Dynamo trace: the user ran no torch.compile; unless
        # the exported program was compiled with AOTInductor, whose compile_fx_aot is that time)
        doing = ("compiling with AOTInductor" if ins.aoti.compiled else "exporting" if exported.only else "compiling")
        # (a compile the log ends during counts the time it had run: the total is what compiling took so far)
        so_far = " so far" if any(c.unfinished for c in ct.compiles) else ""
        out.append(Finding(INFO, "compile_time", f"{doing} took {format_seconds(ct.total_s)}{so_far}",
                           f"{top.label}: {top.share:.0%}" + (
                               f"; slowest {slowest.compile_id} ({format_seconds(slowest.total_s)}"
                               # (itself unfinished: said once, not "(210 ms so far ([0/0] still compiling ...))")
                               + (f" so far, {slowest.unfinished_text}" if slowest.unfinished_text
                                  else so_far_note(ct, [slowest.compile_id])) + ")" if slowest else "")
                           + (f"; {cost}" if cost else "") + header_precompile(ins.aoti, ct)
                           + package_build(ins.aoti)))
    out.extend(repeated_blocks(group, ct) for group in ins.regional.by_blocks())
    out.extend(cudagraph_recordings(ins.cudagraphs))
    at = ins.autotuning
    if at.searches or at.total_s >= AUTOTUNING_WORTH_SAYING_S:
        out.append(Finding(INFO, "autotuning", f"autotuning took {format_seconds(at.total_s)}", autotuning_detail(at)))
    if (again := kernels_compiled_again_finding(ct, ins.caches)) is not None:
        out.append(again)
    if ins.freezing:
        out.append(frozen(ins.freezing, ins.caches, ct))
    if ins.caches.graphs_missing:
        out.append(Finding(INFO, "caches", f"served from cache: {', '.join(ins.caches.served_labels)}",
                           f"{ins.caches.what_is_missing}; run again with an empty cache to see them "
                           "(compilescope run --fresh-cache, or TORCHINDUCTOR_CACHE_DIR=$(mktemp -d))"))
    wrapped = {c.compile_id: c.model_local for c in ct.compiles if c.called_from is not None} if ct else {}
    if ins.dynamic_shapes.specializations and (specialized := specializations(
            ins.dynamic_shapes.specializations, exported, ins.dynamic_shapes.dynamic_compiles, wrapped)) is not None:
        out.append(specialized)
    if ins.runtime:
        from ..runtime.findings import runtime_finding  # here: only a log given with a profile pays for the runtime analysis

        for profile in ins.runtime.profiles:
            if compared is not None and profile.source == compared.eager and not profile.compiled:
                continue  # the eager side: the comparison above says what it holds
            out.append(Finding(INFO, "runtime", *runtime_finding(profile)))
    # Most urgent first: by severity (a torch.cond note, say, is info: it goes after every warning, though torch
    # printed it first), then in the sections' order, then in the order above. It ranked within one severity in the
    # order above only, so a warning about graph breaks came before one about recompiles the summary shows first.
    # Eager against compiled, where both were profiled, is the answer the user asked for: ahead of the compile time.
    return sorted(_merged(out), key=lambda f: (_URGENCY[f.severity], asked is None or f.title != asked.title,
                                               SECTIONS.index(f.section)))


_URGENCY = {ERROR: 0, WARNING: 1, INFO: 2}

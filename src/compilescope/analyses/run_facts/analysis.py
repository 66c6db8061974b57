"""One run reduced to what `diff` compares and `check` gates: run_facts makes a RunFacts from one rank's Results (its analyses taken as
they are; only config, graph nodes and kernel counts are read from the trace), masking what differs from run to run
(object addresses, generated file numbers, paths in the config). Also run_headline, the figures a run hub lists."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

import orjson

from ...model.ids import CompileId, compilation_key
from ...model.trace import Compile, Trace
from ..caches import KERNELS_AGAIN_WORTH_SAYING_S, kernels_compiled_again
from ..compile_time import CompileTimes, ends_during
from ..compiled_frames import frame_function, module_label, wrapped_module
from ..crash import Crash
from ..fx_sites import NODE_MAPPINGS, POST_GRAD
from ..graph_breaks.wording import skipped_text
from ..provenance import KERNEL_STACK_TRACES
from ..status import status_counts
from ..torch_warnings import TorchWarnings
from ..user_locations import UserLocation, called_at_text, code_origin, export_call, is_torch_file
from . import FrameFacts, GraphFacts, RunFacts
from .printed_graphs import graph_nodes, kernel_counts, not_a_user_line

if TYPE_CHECKING:
    from ..results import Results


# Config keys whose values name this machine or this run (paths, job ids), not a behaviour.
_VOLATILE_CONFIG = re.compile(r"(_dir$|_path$|^job_id$|cache_key_tag|_file$|^trace\.|worker_start_method|compile_threads)")
# Object ids / addresses in guard texts; not the digits of a fraction (`lr == 0.003333333333333333` is a value).
_ADDRESS = re.compile(r"(?<![\d.])(?:0x[0-9a-f]+|\d{7,})\b", re.I)
OUTPUT_CODE = "inductor_output_code"
FX_GRAPH = "dynamo_output_graph"


# Code torch generated is named per process (`<eval_with_key>.16`: the 16th FX module it printed): the same code
# has another number in another run.
_GENERATED_NUMBER = re.compile(r"^(<[\w ]+>)\.\d+$")


def frame_key(filename: str | None, function: str | None, first_line: int | None) -> str:
    if filename and filename.startswith("<"):
        filename = _GENERATED_NUMBER.sub(r"\1", filename)
    return f"{filename or '?'}:{first_line if first_line is not None else '?'} {function or '?'}"


def _mask(text: str) -> str:
    return _ADDRESS.sub("#", text)


def run_headline(facts: dict[int | None, RunFacts]) -> dict[str, Any]:
    """The figures a run hub's list shows of a run, summed over its ranks ({rank: RunFacts})."""
    runs = list(facts.values())
    return {
        "ranks": len(runs),
        "torch": next((f.torch_version for f in runs if f.torch_version), None),
        "frames": sum(len(f.frames) for f in runs),
        "compiles": sum(len(fr.compile_ids) for f in runs for fr in f.frames.values()),
        "graph_breaks": sum(len(f.graph_breaks) for f in runs),
        "recompiles": sum(fr.recompiles for f in runs for fr in f.frames.values()),
        "failures": sum(len(f.failures) for f in runs),
        # None: no rank recorded what torch printed (a plain TORCH_TRACE log)
        "warnings": None if all(f.warnings is None for f in runs) else sum(len(f.warnings or ()) for f in runs),
        "compile_time_s": sum(f.compile_time_s for f in runs),
    }


def _loc(location) -> dict[str, Any]:
    if location is None:
        return {"file": None, "line": None, "function": None, "code": None}
    return {"file": location.filename, "line": location.line, "function": location.function, "code": location.code}


def _kernel_work(trace: Trace, entry: Compile) -> list[dict[str, Any]] | None:
    """What each generated kernel of the compile computes (its graphs' node mappings, each with its post-grad graph);
    None: no provenance logged, or mappings and graphs that do not pair up."""
    mappings = [a for a in entry.artifacts if a.name == NODE_MAPPINGS and a.payload is not None]
    posts = next((kept for kind in POST_GRAD
                  if (kept := [a for a in entry.artifacts if a.name == kind and a.payload is not None])), [])
    if not mappings or len(mappings) != len(posts):
        return None
    # (here: the provenance readers are for a log with provenance, not every report's start-up: analyze_provenance)
    from ..provenance.kernel_notes import kernel_work
    from ..provenance.line_mappings import GraphLines, text_lines
    from ..provenance.stack_traces import kernel_traces

    # Each graph's kernel stacks, logged beside its mappings: they place a node FX comments with torch's file
    traced = [a for a in entry.artifacts if a.name == KERNEL_STACK_TRACES and a.payload is not None]
    stacks: list[dict[str, list[Any]]] = [{}] * len(mappings)
    if len(traced) == len(mappings):
        stacks = [{k.name: k.frames for k in kernel_traces(trace.payload_text(a.payload))} for a in traced]
    found: list[dict[str, Any]] = []
    for mapping, post, graph_stacks in zip(mappings, posts, stacks):
        try:
            node_mappings = orjson.loads(trace.payload_text(mapping.payload))
        except orjson.JSONDecodeError:
            return None
        if not isinstance(node_mappings, dict):
            return None
        post_graph = GraphLines(text_lines(trace.payload_text(post.payload)))
        found.extend({"kernel": w.kernel, "ops": w.ops, "lines": w.lines, "elsewhere": w.elsewhere}
                     for w in kernel_work(node_mappings, post_graph, graph_stacks))
    return found


def _config(trace: Trace) -> dict[str, str]:
    for entry in trace.sorted_compiles():
        metrics = entry.metrics or {}
        flat: dict[str, str] = {}
        for field_name, prefix in (("dynamo_config", "dynamo"), ("inductor_config", "inductor"),
                                   ("functorch_config", "functorch"), ("compiler_config", "compiler")):
            raw = metrics.get(field_name)
            try:
                values = orjson.loads(raw) if isinstance(raw, str) else None
            except orjson.JSONDecodeError:
                values = None
            if not isinstance(values, dict):
                continue
            for key, value in values.items():
                if not _VOLATILE_CONFIG.search(key):
                    flat[f"{prefix}.{key}"] = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
        if flat:
            return flat
    return {}


def _compile_steps(trace: Trace) -> dict[str, float]:
    """Seconds per chromium event name: each begin paired with its end on the same thread, complete events by their
    duration (a step nested in another counts in both)."""
    seconds: dict[str, float] = {}
    begun: dict[tuple, list[float]] = {}
    for event in trace.chromium_events:
        name, phase, ts = event.get("name"), event.get("ph"), event.get("ts")
        if not isinstance(name, str) or not isinstance(ts, (int, float)):
            continue
        track = (name, event.get("pid"), event.get("tid"))
        if phase == "B":
            begun.setdefault(track, []).append(ts)
            seconds.setdefault(name, 0.0)
        elif phase == "E" and begun.get(track):
            seconds[name] = seconds.get(name, 0.0) + (ts - begun[track].pop()) / 1e6
        elif phase == "X":
            duration = event.get("dur")
            seconds[name] = seconds.get(name, 0.0) + (duration / 1e6 if isinstance(duration, (int, float)) else 0.0)
    return {name: round(s, 6) for name, s in sorted(seconds.items())}


def _exported_root(entry: Compile) -> tuple[str | None, str | None, int | None]:
    """The function strict torch.export traced in a compile of an export-only log, which logs no dynamo_start: the
    outermost user frame of its symbols' and guards' user stacks (they start in torch's functional_export.py, whose
    forward calls the exported module's)."""
    for record in [*entry.symbols, *entry.guards_added]:
        for frame in record.get("user_stack") or []:
            filename = frame.get("filename") if isinstance(frame, dict) else None
            if isinstance(filename, str) and not not_a_user_line(filename):
                return filename, frame.get("name"), None
    return None, None, None


def _slowest_compile(times: CompileTimes, caller_of: dict[str, UserLocation]) -> dict[str, Any] | None:
    """The slowest compile, its function and the phase most of its time went to; called_at: the user's line that
    called it, where its frame is not the user's code (caller_of, by compilation), else None."""
    slowest = times.slowest
    if slowest is None:
        return None
    phase = slowest.top_phase
    caller = caller_of.get(slowest.compile_id)
    return {"compile_id": slowest.compile_id, "function": slowest.function_label,
            "called_at": caller.short if caller is not None else None, "seconds": round(slowest.total_s, 6),
            "phase": phase, "phase_label": times.labels.get(phase, phase) if phase else None,
            "phase_s": round(slowest.phases[phase], 6) if phase else None}


def run_facts(results: Results) -> RunFacts:
    """Everything `diff` compares, from one rank's analysis (analyses.analyze, or a saved one loaded): its analyses
    are taken as they are, never run again; only what diff alone looks at (config, graph nodes, kernel counts) is
    read from its trace."""
    trace, found = results.trace, results.insights
    if trace is None or found is None:
        raise ValueError("run_facts needs the Results of analyze(), with its trace and insights")
    statuses = results.statuses
    times = found.compile_time
    time_of = {c.compile_id: c for c in times.compiles}
    guards_by_cid = {step.compile_id: step.guard for f in found.recompiles.frames for step in f.steps}
    all_failed_by_cid = {step.compile_id: step.failed_guards for f in found.recompiles.frames for step in f.steps}
    expected = {step.compile_id for f in found.recompiles.frames for step in f.steps if step.expected}
    unknown = {step.compile_id for f in found.recompiles.frames for step in f.steps if step.unknown_settings}
    # What the recompiles analysis counts (Recompiles.with_backward, the report's heading): its frames' steps, and each
    # backward graph compiled autograd captured again (its first Dynamo compile: "[!1/9/0]").
    recompiled = set(guards_by_cid) | {next((c for c in g.compile_ids if not c.endswith("/-/-]")), "")
                                       for g in found.recompiles.backward_graphs[1:]}
    afresh = {cid for fn in found.recompiles.afresh for cid in fn.again}  # (compilations: "[4/0]")
    cached = set(found.caches.reused_across_reset)
    no_graph = set(found.empty_graphs.no_graph)

    # The last attempt of each compilation (a restart logs [0/0_1] after [0/0]), with its id:
    # compiles without an id or a frame id belong to no frame and are left out here.
    latest: dict[tuple[int | None, int, int | None], tuple[CompileId, Compile]] = {}
    for cid, entry in trace.compiles.items():
        if cid is None or cid.frame_id is None:
            continue
        k = (cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)
        if k not in latest or (cid.attempt or 0) >= (latest[k][0].attempt or 0):
            latest[k] = (cid, entry)
    # A frame's location is known from any of its compiles (a failed one may lack metrics).
    where: dict[tuple, tuple] = {}
    exported = results.export
    for (ca, fid, _), (_, entry) in latest.items():
        loc = frame_function(trace, entry)
        if loc[0] is None and exported.only:
            loc = _exported_root(entry)
        if loc[0] is not None and ((ca, fid) not in where or where[(ca, fid)][2] is None):
            where[(ca, fid)] = loc
    # Torch's `inner` running a module the user compiled (a Sequential, DDP) is named by the module, as the recompiles
    # and compile-time sections name it (compiled_frames.wrapped_module); its key keeps torch's name, so that a run
    # whose log has no guard tree to name the module by still matches it.
    named: dict[tuple, str] = {}
    # A wrapper frame (torch's `inner`, transformers' wrapped_func) the compile-time section named otherwise: by the
    # module it runs, or the user's function it passes its arguments on to. Its name there, one answer for both.
    timed = {c.compile_id: c.name for c in results.insights.compile_time.compiles} if results.insights else {}
    for (ca, fid, _), (cid, _) in latest.items():
        compiled = where.get((ca, fid))
        if compiled is None or (ca, fid) in named or (
                compiled[1] != "inner" and not (compiled[0] and code_origin(compiled[0]) == "library code")):
            continue
        said = timed.get(cid.compilation)
        if said and said != compiled[1]:
            named[(ca, fid)] = said
    inner = [at for at, loc in where.items() if loc[1] == "inner" and at not in named]
    if inner:
        frame_compiles: dict[tuple, list[Compile]] = {}
        for cid, entry in trace.compiles.items():
            if cid is not None and cid.frame_id is not None:
                frame_compiles.setdefault((cid.compiled_autograd_id, cid.frame_id), []).append(entry)
        for at in inner:
            module = wrapped_module(trace, frame_compiles.get(at, []))
            if module is not None:
                named[at] = module_label(module)

    # In an export-only log, the user's call whose strict export Dynamo traced: its compilation_metrics has no compile
    # id and carries the Python stack. Named where the log has one such trace: each strict export counts frames from
    # 0 again, so the records of several share frame 0.
    outside = trace.compiles.get(None)
    strict_call = (export_call(outside.metrics_stack) if outside is not None and not outside.earlier_metrics
                   and len({k[:2] for k in latest}) == 1 else None)
    frames: dict[str, FrameFacts] = {}
    frame_by_event_id: dict[str, str] = {}  # "[0/1]", as chromium events name a compile -> its frame
    # The user's lines that called each frame not their own (a library's, Dynamo-generated code), from each of its
    # compilations (compile_summary's called_from: the innermost user line on the stack Dynamo logged), each once.
    callers: dict[str, list[UserLocation]] = {}
    caller_of: dict[str, UserLocation] = {}  # "[0/1]" -> its compilation's caller, where the frame is not theirs
    for k in sorted(latest, key=lambda k: (-1 if k[0] is None else k[0], k[1], k[2] or 0)):
        compile_id, entry = latest[k]
        filename, function, first = where.get(k[:2], (None, None, None))
        key = frame_key(filename, function, first)
        if k[0] is not None:
            key = f"compiled autograd {key}"
        frame = frames.get(key) or frames.setdefault(key, FrameFacts(key, filename, named.get(k[:2], function), first))
        summary = results.compiles.get(entry.key)
        caller = summary.called_from if summary is not None and filename and code_origin(filename) else None
        if caller is not None:
            caller_of[compile_id.compilation] = caller
            seen = callers.setdefault(key, [])
            if all(caller.key != other.key for other in seen):
                seen.append(caller)
        if exported.only and strict_call is not None:
            frame.exported_at = strict_call.short
        frame_by_event_id[compile_id.compilation] = key
        cid_text = str(compile_id)
        frame.compile_ids.append(cid_text)
        frame.dirs.append(entry.dir_name)
        frame.statuses.append(statuses.get(compile_id, "unknown"))
        if cid_text in no_graph:
            frame.no_graph.append(cid_text)
        if cid_text in recompiled:
            frame.recompile_ids.append(cid_text)
            if cid_text in expected:
                frame.expected_recompile_ids.append(cid_text)
            elif cid_text in unknown:
                frame.unknown_recompile_ids.append(cid_text)
        if compile_id.compilation in afresh:
            frame.afresh.append(cid_text)
            if cid_text in cached:
                frame.afresh_cached.append(cid_text)
        guard = guards_by_cid.get(cid_text)
        if guard is not None:
            frame.guard_failures.append(_mask(guard.guard))
            if guard.described:
                frame.guard_words[_mask(guard.guard)] = _mask(guard.described)
        for failed in dict.fromkeys(_mask(g.guard) for g in all_failed_by_cid.get(cid_text, [])):
            frame.failed_anywhere[failed] = frame.failed_anywhere.get(failed, 0) + 1
        graph_text = next((trace.payload_text(a.payload) for a in entry.artifacts if a.name == FX_GRAPH), None)
        codes = [trace.payload_text(a.payload) for a in entry.artifacts if a.name.startswith(OUTPUT_CODE)]
        kernels: dict[str, int] | None = None
        externs: dict[str, int] | None = None
        if codes:
            kernel_total: Counter[str] = Counter()
            extern_total: Counter[str] = Counter()
            for code in codes:
                k_, e_ = kernel_counts(code)
                kernel_total.update(k_)
                extern_total.update(e_)
            kernels, externs = dict(kernel_total), dict(extern_total)
        if graph_text is not None or codes:
            frame.graphs.append(GraphFacts(graph_nodes(graph_text or ""), kernels, externs, _kernel_work(trace, entry)))
        ct = time_of.get(compile_id.compilation)
        frame.compile_s.append(round(ct.total_s, 6) if ct else 0.0)
        if ct:
            for phase, seconds in ct.phases.items():
                frame.phases[phase] = round(frame.phases.get(phase, 0.0) + seconds, 6)

    for key, found_callers in callers.items():
        frames[key].called_at = called_at_text(found_callers)

    frame_of_cid = {cid: f.key for f in frames.values() for cid in f.compile_ids}
    # A break is hit by attempts of compilations ("[0/0]" restarted as "[0/0_1]"): its frame is its first one's.
    frame_of_compilation = {compilation_key(cid): frame_of_cid.get(str(cid)) for cid, _ in latest.values()}
    # A break in FSDP2's hooks is placed at the user's call of the sharded module (`x = block(x)`), as the summary's
    # failure and note place it: the hook's line is torch's, the same in every program (torch_line keeps it).
    breaks = [{"reason": b.reason, **_loc(b.fsdp_call if b.in_fsdp_hook and b.fsdp_call else b.location),
               "torch_line": b.location.short if b.in_fsdp_hook and b.fsdp_call and b.location else None, "count": b.count,
               "frame": next((frame_of_compilation[c] for c in b.compile_ids if frame_of_compilation.get(c)), None),
               "disabled": b.disabled, "by_torch": b.by_torch}
              for b in found.graph_breaks.breaks]
    failures = []
    # Where torch named a line of its own (a compiled nonstrict_trace function fails in torch's wrapper), the user's
    # line the error's traceback has (analyses.compile_errors) is where it failed.
    user_line = {e.compile_id: f"{e.location.filename}:{e.location.line}" for e in found.errors.errors
                 if e.location is not None and e.location_kind == "failure" and not is_torch_file(e.location.filename)}
    # A frame Dynamo skipped after a break it could not resume from ran eagerly: said as the errors finding says it.
    # A frame not of the user's code keeps the user's line that called it, as its label does.
    ran_eagerly = {e.compile_id: skipped_text(e.skipped_frame, e.in_loop, e.in_with,
                                              called_at=frames[frame_of_cid[e.compile_id]].called_at
                                              if e.compile_id in frame_of_cid else "", before=e.skipped_before)
                   for e in found.errors.errors if e.skipped_frame is not None}
    # The error's message as the errors finding words it: torch's first line may only announce it ("backend='inductor'
    # raised:", "RuntimeError when making fake tensor call"), and what failed is on the next line or in the explanation.
    message = {e.compile_id: e.message for e in found.errors.errors if e.message}
    for row in results.failures:
        if row.is_restart:
            continue  # restarts are graph breaks, compared as such
        failed_frame = frame_of_cid.get(compilation_key(row.compile_id)) or frame_of_cid.get(str(row.compile_id))
        source = row.source
        if source and is_torch_file(source.rsplit(":", 1)[0]):
            source = user_line.get(str(row.compile_id), source)
        failures.append({"frame": failed_frame, "type": row.kind, "reason": _mask(message.get(str(row.compile_id))
                                                                         or (row.reason.strip().splitlines()[0] if row.reason.strip() else "")),
                         "source": source, "compile_id": str(row.compile_id) if row.compile_id else None,
                         "ran_eagerly": ran_eagerly.get(str(row.compile_id))})
    # Dynamic-shape decisions of the last attempt of each compilation (a restart makes its symbols again).
    kept = {str(cid) for cid, _ in latest.values()}
    frame_by_cid = {cid: f.key for f in frames.values() for cid in f.compile_ids}
    shapes = found.dynamic_shapes
    first_cids = {f.compile_ids[0] for f in frames.values() if f.compile_ids}
    symbols = [{"source": s.source, "source_text": s.source_text, "range": s.range, "unbacked": s.unbacked, "symbol": s.symbol,
                "frame": frame_by_cid.get(s.compile_id),
                "first_compile": s.compile_id in first_cids, **_loc(s.location),
                "torch_line": s.torch_location.short if s.torch_location else None, "retrace_of": s.retrace_of}
               for s in shapes.symbols if s.compile_id in kept]
    specs = [{"sources": list(s.sources), "described_sources": dict(s.source_texts), "value": s.value, "reason": s.reason, "frame": frame_by_cid.get(s.compile_id),
              **_loc(s.location), "read_text": s.read_text,
              "torch_location": s.torch_location.to_json() if s.torch_location else None}
             for s in shapes.specializations if s.compile_id in kept]
    tuned = found.autotuning
    cache_result = found.caches
    for compile_cache in cache_result.compiles:
        frame_key_ = frame_by_cid.get(compile_cache.compile_id)
        if frame_key_ is not None:
            per_frame = frames[frame_key_].caches
            for event in compile_cache.events:
                outcomes = per_frame.setdefault(event.cache, {})
                outcomes[event.outcome] = outcomes.get(event.outcome, 0) + 1
    ran_on = found.environment
    checkpointing = [{"frame": frame_of_cid[c.compile_id], "compile_id": c.compile_id,
                      "calls": [{"file": s.path, "line": s.line, "count": s.count} for s in c.calls],
                      "recomputed_ops": c.n_recomputed if c.has_backward else None,
                      "recomputed": [{"file": s.path, "line": s.line, "count": s.count} for s in c.recomputed]}
                     for c in found.checkpointing.compiles if c.compile_id in frame_of_cid]
    numerics: list[dict[str, Any]] = [{"kind": kind, "file": line.location.filename, "line": line.location.line,
                 "function": line.location.function, "code": line.location.code, "dtype": line.dtype,
                 "frame": next((frame_of_cid[c] for c in line.compile_ids if c in frame_of_cid), None)}
                for kind, lines in (("random", found.numerics.random), ("precision", found.numerics.precision))
                for line in lines]
    late_hooks = [{"frame": frame_of_cid.get(step.compile_id), "function": frame.display_name, "module": change.name,
                   "hooks": change.hooks_now, "served_by": step.guard.compile_id if step.guard else None,
                   "found_by": step.compile_id}
                  for frame, step, change in found.recompiles.late_hooks]
    # (a custom op's undeclared write: on the line that writes, with the op, in the frame that calls it first)
    numerics += [{"kind": "mutation", "file": w.filename, "line": w.line, "function": w.function, "code": w.code,
                  "dtype": None, "op": op.op, "form": op.form, "arguments": op.arguments,
                  "frame": next((frame_of_cid[c] for c in op.compile_ids if c in frame_of_cid), None)}
                 for op in found.op_mutations.ops for w in op.writes]
    return RunFacts(
        checkpointing=checkpointing,
        numerics=numerics,
        late_hooks=late_hooks,
        unread_custom_ops=[u.to_json() for u in found.op_mutations.unread],
        compile_statuses={status: n for status, n in status_counts(statuses).items() if n},
        no_graph_compiles=len(no_graph),
        source=trace.source,
        torch_version=ran_on.torch,
        ran_on=dict(ran_on.facts()),
        config=_config(trace),
        frames=frames,
        graph_breaks=breaks,
        # (copies, as the specializations' sources: the facts are values of their own, and the Results still rendered)
        cache_counts={cache: dict(outcomes) for cache, outcomes in cache_result.counts.items()},
        failures=failures,
        symbols=symbols,
        specializations=specs,
        compile_time_s=round(times.total_s, 6),
        phases={p.phase: round(p.seconds, 6) for p in times.phases},
        slowest_compile=_slowest_compile(times, caller_of),
        phase_labels=dict(times.labels),
        compile_steps=_compile_steps(trace),
        cache_saved_s=round(cache_result.time_saved_ms / 1000, 6),
        kernels_again=(again.to_json() if (again := kernels_compiled_again(times, cache_result)).seconds
                       >= KERNELS_AGAIN_WORTH_SAYING_S else None),
        autotune_s=round(tuned.total_s, 6),
        autotune_searches=[{"frame": frame_by_event_id.get(t.compile_id), "op": t.op, "shape": t.shape, "dtypes": t.dtypes,
                            "best_kernel": t.best_kernel, "best_config": t.best_config, "best_time_ms": t.best_time_ms,
                            "site": t.site.short if t.site else None, "site_code": t.site.code if t.site else None,
                            "seconds": round(t.seconds, 6), "candidate_compile_s": round(t.candidate_compile_seconds, 6)}
                           for t in tuned.searches],
        cudagraph_skips=[{"frame": frame_of_cid.get(c.compile_id), "compile_id": c.compile_id,
                          "reason": _mask(c.without_graphs_because or ""), "never_recorded": c.never_recorded}
                         for c in found.cudagraphs.without_graphs],
        cudagraph_recorded=[{"frame": frame_of_cid.get(c.compile_id), "compile_id": c.compile_id,
                             "recordings": len(c.recordings_ms)}
                            for c in found.cudagraphs.compiles if c.recordings_ms],
        cudagraph_set_up=sorted({frame_of_cid[c.compile_id] for c in found.cudagraphs.compiles
                                 if c.setups and c.compile_id in frame_of_cid}),
        warnings=_warnings(found.warnings, frame_of_cid),
        unread=found.unread.to_json() if found.unread else None,
        ends_during=ends_during(found.unfinished, times.labels, found.aoti) if found.unfinished else None,
        crash=_crash(found.crashes.crashes, frame_of_cid, bool(found.aoti) and times.all_ended),
        export_issues=([{"type": i.failure_type, "where": i.where, "headline": i.headline} for i in exported.issues]
                       if exported.detected else None),
        export_dims=[{"call": c.export_call.short if c.export_call else None, "input": c.input_text,
                      "declared": c.declared, "guard": c.guard, "value": c.value,
                      "at": c.location.short if c.location else None} for c in exported.dim_conflicts],
        aoti_packages=[{"call": p.call.short if p.call else None, "accepts": p.accepts, "one_shape": p.one_shape}
                       for p in found.aoti.packages],
        user_kernels=[{"name": k.name, "compile_id": k.compile_id, "frame": frame_of_cid.get(k.compile_id),
                       "launched_at": [u.short for u in k.launched_at], "symbolic": [a.name for a in k.symbolic],
                       "launch_call": k.launch_call, "source_md5": k.source_md5}
                      for k in found.user_kernels.kernels],
        runtime=_runtime_facts(results),
    )


def _runtime_facts(results: Results) -> dict[str, Any] | None:
    if results.runtime is None:
        return None
    from ..runtime.diff_facts import runtime_facts  # here: the runtime package is for runs read with a profile only

    return runtime_facts(results.runtime)


def _crash(found: list[Crash], frame_of_cid: dict[str, str], aoti_built: bool = False) -> dict[str, Any] | None:
    """The process's crash (a log is one process's: it has one at most), with the frame whose compiled code ran. A
    native crash only: an uncaught exception is not one for diff and check's no-crash (a program that raises a
    compile error exits 1 and its failures say so). aoti_built: the log holds an AOTInductor package's wrapper and
    every compile it began ended."""
    found = [c for c in found if not c.exception]
    if not found:
        return None
    crash = found[0]
    where, user = crash.where, crash.user_frame
    compiled = crash.compile_id
    return {"error": crash.error, "file": where.filename if where else None, "line": where.line if where else None,
            "function": where.function if where else None, "compile_id": compiled,
            "frame": frame_of_cid.get(compiled) if compiled else None, "during": crash.during,
            "user_file": user.filename if user else None, "user_line": user.line if user else None,
            "user_function": user.function if user else None,
            # (as the report words them: analyses/crash.py)
            "headline": crash.headline, "called_from": crash.called_from,
            # in torch's loader of an AOTInductor package, and after the log's package build ended, nothing left
            # compiling (check's no-aoti-load-crash; absent in facts saved before)
            "loading_built_aoti_package": crash.loading_aoti_package and aoti_built}


def _warnings(printed: TorchWarnings, frame_of_cid: dict[str, str]) -> list[dict[str, Any]] | None:
    """The warnings torch printed, where the run recorded them (None: a plain log, which cannot say)."""
    if not printed.recorded:
        return None
    return [{"frame": next((frame_of_cid[c] for c in w.compile_ids if c in frame_of_cid), None),
             "source": w.source, "text": _mask(w.headline), "name": w.name, "raised": w.raised, "failure": w.failure}
            for w in printed.warnings]

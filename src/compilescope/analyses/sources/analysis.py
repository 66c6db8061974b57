"""The analysis (sources): every note a log gives a user's line, put on it (note_sources), then the noted files'
pages, read from disk or rebuilt from the log's quotes (source_pages); analyze_sources, both."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Iterable

from ...model.ids import compilation_key
from ...model.names import safe_stem
from ...model.payloads import PayloadRef
from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Compile, Frame, Trace
from ...wording import format_seconds
from ..activation_checkpoint import ActivationCheckpointing, activation_checkpointing
from ..aoti import Aoti
from ..autotuning import Autotuning, autotuning
from ..compiled_frames import compiled_frame
from ..crash import Crashes
from ..dynamic_shapes import DynamicShapes, dynamic_shapes
from ..errors import CompileErrors
from ..fx_sites import GRAPH_ARTIFACT, FxNodeSite, fx_node_sites
from ..graph_breaks import GraphBreaks
from ..graph_breaks.analysis import graph_breaks
from ..installed_guards import FIRST_USE_NOTE, GUARD_LINE, GUARD_TAIL, GUARDS_ARTIFACT
from ..numerics import Numerics, numerics
from ..op_mutations import OpMutations
from ..op_mutations.analysis import op_mutations
from ..provenance import Provenance, is_users_file
from ..provenance.analysis import analyze_provenance
from ..provenance.stack_traces import user_lines_at
from ..recompiles import Recompiles
from ..recompiles.analysis import recompiles
from ..stack_values import StackValues, name_stack_values
from ..state_lines import StateLine, state_lines
from ..user_kernels import UserKernels, user_kernels
from ..userloc import UserLocation, numpy_in_words
from . import CodeGuards, LineNotes, SourceFile, Sources
from .break_sites import graph_break_sites, resume_frames
from .calls import CODE_GUARD, add_call, add_calls, guarded_calls
from .file_text import Quotes, is_user_source, original_last_line, read_disk
from .marks import add_failures, add_ran_eagerly, add_user_kernels, failed_compilations


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
                    autotuned: Autotuning | None = None, aoti: Aoti | None = None,
                    numerics_found: Numerics | None = None,
                    own_kernels: UserKernels | None = None, mutations: OpMutations | None = None,
                    files: SourceFiles = NO_FILES) -> NotedSources:
    """stack_values: names Dynamo's ___stack values in the user's words, for installed guards and symbols as the
    recompiles view names failed guards (shared with shapes and recompile_info where the caller made them).
    linked_locations: other user lines the report links to (where torch warned, a stack's or a traceback's frame):
    the page of their file, where it has one, shows them (as rows of their own where the log does not quote them), so
    the link lands on its line. errors, crashed: the compile failures and the crashes, each
    marked on the user line its analysis placed it at (a file with no other note gets a page for it). export_only:
    ExportReport.only, the log's every compile torch.export's. breaks: graph_breaks' (made here where not given): the
    functions Dynamo skipped and the higher-order op calls that ran uncompiled because of one, marked on their lines.
    autotuned: autotuning's (made here where not given): max-autotune's searches, on the line of the op each was for.
    aoti: the AOTInductor packages the log compiled, each marked on the user's line that compiled it. numerics_found:
    numerics' (made here where not given): the lines whose compiled results differ from eager's, and why. own_kernels:
    user_kernels' (made here where not given): the user's own Triton kernels, marked on the lines that define and
    launch them. mutations: op_mutations' (made here where not given): the custom ops writing into arguments they do
    not declare, marked where they write and where compiled code calls them. files: as ingest read them (the files
    state_lines, user_kernels and op_mutations search: their files_wanted)."""
    quotes = Quotes()
    # (path, line) -> LineNotes, built first without text; files are made at the end.
    notes: dict[str, dict[int, LineNotes]] = {}

    def at(path: str, line: int) -> LineNotes | None:
        if not is_user_source(path) or line <= 0:
            return None
        return notes.setdefault(path, {}).setdefault(line, LineNotes())

    stack_values = stack_values if stack_values is not None else StackValues(trace)
    # (compile id, its compile, guards payload: read one at a time, below)
    guard_sites: list[tuple[str, Compile, PayloadRef]] = []
    codes: dict[str, dict[tuple[str, int], int | None]] = {}  # file -> SourceFile.codes
    # Compilations whose metrics tell a failure: their frame was not compiled, though Dynamo started on it.
    failed_keys = failed_compilations(trace)
    # (path, line, compile id) of each LineNotes.frames entry: a scan of a line's frames per compile was quadratic in
    # its compiles (a function compiled after 20,000 resets)
    framed: set[tuple[str, int, str]] = set()
    stack_lines: dict[str, set[int]] = {}  # path -> the lines the compiles' stacks pass through
    graph_sites: dict[str, list[FxNodeSite]] = {}  # compile id -> its graph dump's node sites
    provenance = provenance if provenance is not None else analyze_provenance(trace, files)
    # compile id -> its kernels' stacks: they place a graph node FX comments with torch's file (user_lines_at)
    kernel_stacks = {compilation_key(cp.compile_id): [frames for section in cp.sections for kernel in section.kernels
                                                      for frames in kernel.frames]
                     for cp in provenance.compiles.values()}
    for entry in trace.sorted_compiles():
        key = compilation_key(entry.compile_id)
        frame = compiled_frame(entry)
        for f in entry.stack or []:
            quotes.add(f.filename, f.line, f.loc, f.name)
            stack_lines.setdefault(f.filename, set()).add(f.line)  # (its compile's page links each frame)
        if frame is not None:
            n = at(frame[0], frame[1])
            if n is not None and (frame[0], frame[1], key) not in framed:
                framed.add((frame[0], frame[1], key))
                n.frames.append({"compile_id": key, "function": frame[2], "failed": key in failed_keys})
            if n is not None:
                # Each attempt of a compile id may hold the bytecode (torch's at attempt 0, compilescope's at the last).
                file_codes = codes.setdefault(frame[0], {})
                if file_codes.get((frame[2], frame[1])) is None:
                    file_codes[(frame[2], frame[1])] = original_last_line(trace, entry, frame[2])
        for artifact in entry.artifacts:
            if artifact.name == GRAPH_ARTIFACT and artifact.payload is not None:
                sites_of_graph = fx_node_sites(trace.payload_text(artifact.payload))
                graph_sites.setdefault(key, []).extend(sites_of_graph)
                for node_site in sites_of_graph:
                    quotes.add(node_site.path, node_site.line, node_site.code)
                    places = [(node_site.path, node_site.line)]
                    if not is_users_file(node_site.path):  # (through a subclass's __torch_function__: _tensor.py)
                        places = [(u.file, u.line) for u in user_lines_at(kernel_stacks.get(key, ()), *places[0])]
                    for n in filter(None, (at(*place) for place in places)):
                        names = n.graphs.setdefault(key, [])
                        names.extend(x for x in node_site.nodes if x not in names)
            elif artifact.name == GUARDS_ARTIFACT and artifact.payload is not None:
                guard_sites.append((key, entry, artifact.payload))

    sites = graph_break_sites(trace, quotes)
    resume_by_frame = resume_frames(trace)
    for site in sites:
        n = at(site.location.filename, site.location.line)
        if n is not None:
            n.graph_breaks.append({"index": site.index, "reason": site.reason, "compile_ids": site.compile_ids,
                                   "resume_functions": site.resume_functions, "torch_text": site.torch_text})
        for path, line in site.eager_lines:
            n = at(path, line)
            if n is not None and site.index not in n.eager:
                n.eager.append(site.index)
    for (path, line, name), ids in resume_by_frame.items():
        n = at(path, line)
        if n is not None:
            n.resumes.append({"function": name, "compile_ids": ids, "failed": [c for c in ids if c in failed_keys]})

    recompile_info = recompile_info if recompile_info is not None else recompiles(trace, stack_values)
    # Why a compile failed, by compile id: a recompilation that failed (the recompile limit) compiled nothing.
    failed_why = {e.compile_id: e.message for e in (errors.errors if errors is not None else ())}
    for fr in recompile_info.frames:
        failed_before: set[tuple[str | None, str]] = set()  # (compilation, guard) failed at an earlier recompile
        for step in fr.steps:
            recompile = compilation_key(step.compile_id)
            failing_now = {(guard.compile_id, guard.guard) for guard in step.failed_guards}
            for guard in step.failed_guards:
                loc = guard.location
                if loc is None or guard.location_kind == "function":  # (the function's def: not where it failed)
                    continue
                quotes.add(loc.filename, loc.line, loc.code)
                n = at(loc.filename, loc.line)
                failed: dict[str, Any] = {"recompile": recompile,
                                          "failed_in": compilation_key(guard.compile_id) if guard.compile_id else None,
                                          "guard": guard.guard, "change": guard.change}
                if guard.described:  # (Dynamo's ___stack names in the user's words, as the recompiles view says them)
                    failed["described"] = guard.described
                if step.failed:
                    failed["recompile_failed"] = failed_why.get(recompile) or "it failed"
                if guard.compile_id is not None and (guard.compile_id, guard.guard) in failed_before:
                    failed["again"] = True
                if n is not None and failed not in n.guards:
                    n.guards.append(failed)
            failed_before |= failing_now

    stacks: dict[str, list[Frame]] = {}  # each compile's dynamo_start stack: which of several lines it passed
    for entry in trace.sorted_compiles():
        if entry.compile_id is not None and entry.stack:
            stacks.setdefault(compilation_key(entry.compile_id), entry.stack)
    changed_state = state_lines(recompile_info, stacks, files)
    for marked in changed_state:
        n = at(marked.path, marked.line)
        if n is not None:  # (read from the file itself, not quoted by the log: no check of the file against the run)
            n.state_changes.append({"recompile": marked.recompile, "kind": marked.kind, "text": marked.text})

    # Installed guards name the user line they came from, with the path clipped at the front: matched to a file
    # the log names in full, and only when exactly one ends that way.
    known = set(notes)
    resolved: dict[str, str | None] = {}  # clipped path -> the one known path it names (asked once per path)
    installed: set[tuple[str, int, str, str]] = set()
    code_guards: dict[str, CodeGuards] = {}  # compile id -> its guards on inlined functions' code
    # Recompiles install mostly the same guards again: each distinct guard line is parsed once.
    # (guard, file, line, code, hint, function, the function whose code it guards: CODE_GUARD, whether torch notes
    # the line as the first use of a size: FIRST_USE_NOTE)
    parsed: dict[str, tuple[str, str, int, str, str | None, str, str | None, bool] | None] = {}
    for key, guarded, guards_payload in guard_sites:
        for raw in trace.payload_text(guards_payload).splitlines():
            if raw in parsed:
                found_guard = parsed[raw]
            else:
                m = GUARD_LINE.search(raw) if GUARD_TAIL.search(raw) else None
                inlined = CODE_GUARD.match(m["guard"]) if m is not None else None
                found_guard = parsed[raw] = ((m["guard"], m["file"], int(m["line"]), m["code"], m["hint"], m["func"],
                                              inlined and (inlined["key"] or inlined["attr"]),
                                              (m["note"] or "").startswith(FIRST_USE_NOTE))
                                             if m is not None else None)
            if found_guard is None:
                continue
            guard_text, path, line, code, hint, function, inlined_name, first_use = found_guard
            if inlined_name is not None:
                code_guards.setdefault(key, CodeGuards()).in_function.setdefault(function, set()).add(inlined_name)
            if path not in known:
                if path not in resolved:
                    full = [p for p in known if p.endswith("/" + path) or p.endswith(path)]
                    resolved[path] = full[0] if len(full) == 1 else None
                found = resolved[path]
                if found is None:
                    continue
                path = found
            n = at(path, line)
            if n is not None:
                quotes.add(path, line, code)  # the guard's comment quotes its line, sometimes the only quote of it
                if inlined_name is not None:
                    code_guards[key].user_lines.setdefault((path, line), set()).add(inlined_name)
            if n is not None and (path, line, key, guard_text) not in installed:
                installed.add((path, line, key, guard_text))
                guard_note: dict[str, Any] = {"installed": key, "guard": guard_text}
                if hint:  # (torch's hint on what the guard checks: "type float")
                    guard_note["hint"] = hint
                if first_use:
                    guard_note["first_use"] = True
                named = stack_values.guard_names(guarded, guard_text) if "___stack" in guard_text else {}
                if named:  # (Dynamo's ___stack names in the user's words, as the recompiles view says them)
                    guard_note["described"] = name_stack_values(guard_text, named)
                if "___from_numpy(" in guard_text:  # (the NumPy array the function takes, not torch's tensor of it)
                    guard_note["described"] = numpy_in_words(guard_note.get("described") or guard_text)
                n.guards.append(guard_note)

    shapes = shapes if shapes is not None else dynamic_shapes(trace, stack_values)
    for created in shapes.symbols:
        if created.location is not None:
            n = at(created.location.filename, created.location.line)
            symbol = {"kind": "created", "compile_id": compilation_key(created.compile_id), "symbol": created.symbol,
                      "value": created.value, "source": created.source}
            if created.source_text:  # (a ___stack source in the user's words, as the dynamic-shapes view says it)
                symbol["described"] = created.source_text
            if n is not None and symbol not in n.symbols:
                n.symbols.append(symbol)
    for spec in shapes.specializations:
        if spec.location is not None:
            n = at(spec.location.filename, spec.location.line)
            # A specialization names every source of its symbol (symbolic_shape_specialization's "sources": sizes
            # torch found equal share one symbol), each in the user's words where it is a name Dynamo made.
            specialized: dict[str, Any] = {"kind": "specialized", "compile_id": compilation_key(spec.compile_id),
                                           "symbol": spec.symbol, "value": spec.value, "sources": list(spec.sources)}
            if spec.source_texts:
                specialized["described_sources"] = [{"source": source, "text": text}
                                                    for source, text in spec.source_texts.items()]
            if n is not None and specialized not in n.symbols:
                n.symbols.append(specialized)
    for shape_guard in shapes.guards:
        if shape_guard.location is not None:
            n = at(shape_guard.location.filename, shape_guard.location.line)
            shape_note = {"kind": "guard", "compile_id": compilation_key(shape_guard.compile_id), "expr": shape_guard.expr}
            if n is not None and shape_note not in n.symbols:
                n.symbols.append(shape_note)

    # Each output code's md5 (its envelope's has_payload), by artifact number: compiles alike in kernel names may
    # differ in code (a static recompile inlines other sizes), and only the same code makes one group of them.
    code_md5 = {a.number: a.md5 for entry in trace.compiles.values() for a in entry.artifacts if a.md5}
    # (file, line, kernel, compile id, graph): a line lists a kernel call once (a graph's handles restart at 1 in
    # torch 2.13: its forward and backward may each have an `extern_kernels.mm:2`)
    linked: set[tuple[str, int, str, str, int]] = set()
    anchors: dict[str, str] = {}  # kernel name -> its anchor, one object: a line lists the kernel of every compile
    calls: dict[tuple[str, int, str, int], dict[str, Any]] = {}  # (caller's file, line, ops' file, line) -> its call
    # Where a compile's kernel stacks hold the whole chain of calls, they say them (below); elsewhere its guards do.
    stacked = {compilation_key(cp.compile_id) for cp in provenance.compiles.values()
               if any(kernel.frames for section in cp.sections for kernel in section.kernels)}
    for outer, op_site, compile_id in guarded_calls({k: v for k, v in code_guards.items() if k not in stacked},
                                                    graph_sites):
        n = at(*outer)
        if n is not None:
            add_call(n, outer, (op_site.path, op_site.line, op_site.function), compile_id, calls)
    for cp in provenance.compiles.values():
        cp_key = compilation_key(cp.compile_id)
        # Kernels share stacks (a fused kernel lists each of its nodes', a backward its forward's), and the parsed
        # frames of one stack text are one list for the whole log (kernel_traces): each list is walked once a compile.
        walked: set[int] = set()
        for section_number, section in enumerate(cp.sections):
            # The first line of the generated code that calls each kernel: the kernel's place on the provenance page.
            called_at: dict[str, int] = {}
            for code_line, names in sorted(section.code_kernels.items()):
                for name in names:
                    called_at.setdefault(name, code_line)
            other_graphs = set(section.other_graphs)  # listed, and linked, under the graph whose code calls them
            noted = section.kernel_notes  # (made from the section's noted kernels: once a section)
            aot = section.language == "cpp"
            for kernel in section.kernels:
                # One an AOTInductor package's wrapper names nowhere, and no graph's code calls, is listed alone
                # (LineNotes.kernel_groups): not as the package's, and its stack traces still place it.
                uncalled = aot and kernel.name in other_graphs and kernel.name not in section.called_by
                if kernel.name in other_graphs and not uncalled:
                    continue
                for frames in kernel.frames:
                    if id(frames) not in walked:
                        walked.add(id(frames))
                        add_calls(frames, cp_key, at, quotes, calls)
                for user_line in kernel.placed_lines:  # (a kernel of torch's code: on the user's line to it)
                    quotes.add(user_line.file, user_line.line, user_line.code)
                    n = at(user_line.file, user_line.line)
                    call = (user_line.file, user_line.line, kernel.name, cp_key, section_number)
                    if n is not None and call not in linked:
                        linked.add(call)
                        anchor = anchors.get(kernel.name) or anchors.setdefault(kernel.name, kernel.anchor)
                        n.kernels.append({"compile_id": cp_key, "dir": cp.dir_name, "kernel": kernel.name,
                                          "debug_handle": kernel.debug_handle, "anchor": anchor,
                                          "section": section_number, "code_line": called_at.get(kernel.name),
                                          "graph": section.graph, "traces_artifact": section.kernel_traces_artifact,
                                          "code_md5": code_md5.get(section.code.artifact_number or -1),
                                          **({"note": noted[kernel.name]} if kernel.name in noted else {}),
                                          **({"uncalled": True} if uncalled else {})})

    add_failures(trace, errors, crashed, at, quotes)
    for ckpt in (checkpointing if checkpointing is not None else activation_checkpointing(trace)).compiles:
        for ckpt_site, what in [(c, "calls") for c in ckpt.calls] + [(r, "recomputed_ops") for r in ckpt.recomputed]:
            n = at(ckpt_site.path, ckpt_site.line)
            if n is not None:
                quotes.add(ckpt_site.path, ckpt_site.line, ckpt_site.code)
                n.checkpoint.append({"compile_id": ckpt.compile_id, what: ckpt_site.count})

    for search in (autotuned if autotuned is not None else autotuning(trace)).searches:
        n = at(search.site.filename, search.site.line) if search.site else None
        if n is not None and search.site is not None:
            quotes.add(search.site.filename, search.site.line, search.site.code)
            n.autotune.append({"compile_id": search.compile_id, "op": search.op, "shape": search.shape,
                               "best_kernel": search.best_kernel, "best_time": search.best_time_text,
                               "seconds": round(search.seconds, 6), "took": format_seconds(search.seconds),
                               "compile_notes": search.compile_notes})
    differ = numerics_found if numerics_found is not None else numerics(trace)
    for kind, lines in (("random", differ.random), ("precision", differ.precision)):
        for differing in lines:
            where = differing.location
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.numerics.append({"kind": kind, "compile_ids": differing.compile_ids, "ops": differing.ops,
                                   "why": differing.why})
    mutations = mutations if mutations is not None else op_mutations(trace, files)
    for op in mutations.ops:
        args = " and ".join(op.arguments)
        # (each with its badge: what the line does, not only that results differ)
        marks = [(w, op.compile_ids, op.write_note, f"writes {args}, undeclared") for w in op.writes]
        marks += [(c.location, [c.compile_id], op.call_note(c),
                   "call left out" if c.dropped else f"{op.op} writes {args}") for c in op.calls]
        marks += [(m.location, [c.compile_id], op.read_note(c, m), f"reads {args} after {op.op}")
                  for c in op.calls for m in c.moved_reads]
        for where, compile_ids, why, badge in marks:
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.numerics.append({"kind": "mutation", "compile_ids": compile_ids, "ops": [op.op], "why": why,
                                   "badge": badge})
    for op in mutations.functionalized:  # (torch found the store: advice, told in the INFO tone)
        stores = [(w, op.compile_ids, op.write_note, "store found by torch") for w in op.writes]
        stores += [(c.location, [c.compile_id], op.call_note(c), "store found by torch") for c in op.calls]
        for where, compile_ids, why, badge in stores:
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.found_stores.append({"op": op.op, "compile_ids": compile_ids, "why": why, "badge": badge})
    for package in aoti.packages if aoti is not None else ():
        n = at(package.call.filename, package.call.line) if package.call is not None else None
        if package.call is not None and n is not None:
            quotes.add(package.call.filename, package.call.line, package.call.code)
            n.aoti.append({"accepts": package.accepts, "checks_need_env": package.checks_need_env,
                           "holds": package.contents.text if package.contents else None,
                           "wrapper_artifact": package.wrapper_artifact, "kernel_artifact": package.kernel_artifact})

    add_user_kernels(own_kernels if own_kernels is not None else user_kernels(trace, files), at, quotes)

    linked_lines: dict[str, set[int]] = {path: lines for path, lines in stack_lines.items() if path in notes}
    for loc in linked_locations:
        if loc.filename in notes and loc.line > 0:
            quotes.add(loc.filename, loc.line, loc.code)
            linked_lines.setdefault(loc.filename, set()).add(loc.line)

    result = Sources(graph_breaks=sites, export_only=export_only,
                     outside_name=(None if not aoti else "AOTInductor package" if len(aoti.packages) == 1
                                   else "AOTInductor packages"))
    return NotedSources(trace, result, notes, quotes, linked_lines, codes, breaks, errors, changed_state)


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

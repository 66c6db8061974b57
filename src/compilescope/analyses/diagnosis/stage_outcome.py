"""One stage's run as diagnose judges it (StageOutcome): from what the orchestration saw of it (RunFacts), its
output and its trace: its failed compiles and those the program caught, where it raised or crashed, the line saying
torch's accuracy check failed and the graph it failed (wrong_graph, found in the trace by its AOT ID)."""

from __future__ import annotations

import re

from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Trace
from ..crash import GeneratedLine, generated_line, output_code_files, parse_crash, unrecorded_crash
from ..compile_errors import RECOMPILE_LIMIT, CompileError, compile_errors, testing_hooks
from ..export import export_report
from ..graph_breaks.analysis import graph_breaks
from ..installed_guards import GuardTrees
from ..numerics import numerics
from ..op_mutations.analysis import op_mutations
from ..provenance.analysis import analyze_provenance
from ..recompiles.analysis import recompiles
from ..recompiles.links import name_failing_guards
from ..user_locations import UserLocation, is_framework_file, last_user_stack_frame, traceback_frames
from . import KernelCall, RunFacts, StageOutcome, StageSpec, WrongGraph
from .printed_numbers import printed_lines

_ACCURACY_LINES = re.compile(r"Accuracy failed for [^\n]*|AccuracyError: [^\n]*|Bad accuracy detected[^\n]*")


def accuracy_failure(output: str) -> str | None:
    """torch's own line saying its level-4 accuracy check failed, if the run's output has one."""
    match = _ACCURACY_LINES.search(output)
    return match.group(0).strip() if match else None


# How torch.testing.assert_close (and numpy's assert_allclose) say that values differ: the program checked its results.
_MISMATCH_LINES = re.compile(r"Greatest (?:relative|absolute) difference: [^\n]*|(?:Tensor-likes|Scalars) are not "
                             r"(?:close|equal)![^\n]*|Not equal to tolerance[^\n]*")


def numeric_mismatch(output: str) -> str | None:
    """The line of a failed run saying its results differ from what it expected (the most telling one)."""
    found = [m.group(0).strip() for m in _MISMATCH_LINES.finditer(output)]
    return next((line for line in found if line.startswith("Greatest")), found[0] if found else None)



# torch's accuracy check (torch/_dynamo/utils.py same()), for each output that fails it: its RMSE against a float64 run,
# the compiled graph's (res) and eager's (ref); it fails where res > multiplier * ref + tol / 10
_RMSE = re.compile(r"RMSE \(res-fp64\): (?P<res>[-+\w.]+), \(ref-fp64\): (?P<ref>[-+\w.]+) and shape=torch\.Size\(\[(?P<shape>"
                   r"[^\]]*)\]\)\. res\.dtype: torch\.(?P<dtype>\w+), multiplier: (?P<multiplier>[\d.]+), tol: (?P<tol>[\d.]+)")
# AOTAutograd's name of the graph the check failed (get_aot_graph_name: model name, AOT ID, how many graphs it had
# compiled before): "model__0_inference_0" is the graph whose output code starts "# AOT ID: ['0_inference']"
_AOT_GRAPH = re.compile(r"Accuracy failed for the AOT Autograd graph (?P<name>\S*?__(?P<aot_id>\d+_[a-z]+)_\d+)\b")
_SOURCE_NODES = re.compile(r"#\s*Topologically Sorted Source Nodes: \[(?P<nodes>[^\]]*)\]")


def _kernel_source(code: list[str], kernel: str) -> tuple[int, int] | None:
    """The lines of a kernel's source in the output code: `name = async_compile.triton('name', '''` to the ''' that
    ends it."""
    start = re.compile(rf"^{re.escape(kernel)} = async_compile\.\w+\(")
    for i, text in enumerate(code):
        if start.match(text):
            end = next((j for j in range(i + 1, len(code)) if code[j].lstrip().startswith("'''")), None)
            return (i + 1, end + 1) if end is not None else None
    return None


def wrong_graph(trace: Trace | None, output: str, files: SourceFiles = NO_FILES) -> WrongGraph | None:
    """The graph torch's accuracy check failed (its run's output), found in the run's trace by its AOT ID. files: the
    user's files as ingest read them (user_files.insight_files: the provenance reads its user kernels' there)."""
    named = _AOT_GRAPH.search(output)
    rmse = _RMSE.search(output)
    if named is None and rmse is None:
        return None
    found = WrongGraph(named["name"] if named else None, rmse.groupdict() if rmse else None)
    if named is None or trace is None:
        return found
    for compiled in analyze_provenance(trace, files).compiles.values():
        for section in compiled.sections:
            if section.title != named["aot_id"] or section.code.payload is None:
                continue
            code = trace.payload_text(section.code.payload).splitlines()
            skip = section.code.skip  # (the panel's line numbers: the code less its leading empty lines)
            kernels = {k.name: k for k in section.own_kernels}
            found.compile_id = str(compiled.compile_id) if compiled.compile_id is not None else None
            found.label = section.label
            found.code_file = section.code.title
            entry = next((e for e in trace.compiles.values() if e.compile_id == compiled.compile_id), None)
            found.hooks = testing_hooks(entry.metrics or {}) if entry is not None else []
            for line, names in sorted(section.code_kernels.items()):
                for name in names:
                    if name not in kernels:
                        continue
                    call = line + skip
                    above = next((m for text in reversed(code[max(0, call - 5):call - 1])
                                  if (m := _SOURCE_NODES.search(text))), None)
                    kernel = kernels[name].kernel
                    found.kernels.append(KernelCall(kernel, call, _kernel_source(code, kernel),
                                                    [n.strip() for n in above["nodes"].split(",")] if above else [],
                                                    kernels[name].user_lines))
            return found
    return found


def _used_inductor(trace: Trace) -> bool:
    for entry in trace.compiles.values():
        if (entry.metrics or {}).get("inductor_compile_time_s") is not None:
            return True
        if any(a.name.startswith("inductor_") for a in entry.artifacts):
            return True
    return False


def _caught(trace: Trace, facts: RunFacts, errors: list[CompileError]) -> set[str]:
    """The compile ids of the failures the program went past: torch raised (it did not fall back to eager), and the
    run then exited 0 or compiled something else (a later compile starts lower in the log)."""
    starts = {entry.key: entry.first_lineno for cid, entry in trace.compiles.items() if cid is not None}
    last_start = max(starts.values(), default=0)
    exited_ok = facts.returncode == 0 and not facts.timed_out
    return {e.compile_id for e in errors
            if not e.fell_back and (exited_ok or starts.get(e.compile_id, last_start) < last_start)}


_TRACEBACK = "Traceback (most recent call last):"
# Inductor's code cache names a module by its key, in a folder of the key's 2nd and 3rd characters: .../gt/cgtzk….py
_CACHED_MODULE = re.compile(r"[/\\](?P<two>[a-z0-9]{2})[/\\][a-z](?P=two)[a-z0-9]{40,60}\.py$")


def raised_where(output: str, output_code: dict[str, tuple[str, int, int]]
                 ) -> tuple[UserLocation | None, tuple[GeneratedLine, UserLocation] | None]:
    """Where the last Python traceback in a run's output raised: its innermost frame of the user's code (neither
    torch's nor Python's, nor a compilation's output code), and the innermost output code line it went through."""
    start = output.rfind(_TRACEBACK)
    if start < 0:
        return None, None
    frames = [(f, generated_line(f, output_code)) for f in traceback_frames(output[start:])]
    user = next((f for f, g in reversed(frames)
                 if g is None and not is_framework_file(f.filename) and not _CACHED_MODULE.search(f.filename)), None)
    generated = next(((g, f) for f, g in reversed(frames) if g is not None), None)
    return user, generated


def stage_outcome(spec: StageSpec, facts: RunFacts, trace: Trace | None, output: str = "",
                  files: SourceFiles = NO_FILES) -> StageOutcome:
    """files: the user's files as ingest read them (user_files.insight_files: op_mutations' and the provenance's)."""
    outcome = StageOutcome(spec, facts, traced=trace is not None)
    if trace is not None:
        guard_trees = GuardTrees(trace)  # (each tree parsed once for the errors, the recompiles and the breaks)
        errors, recompiled = compile_errors(trace, guard_trees), recompiles(trace, guard_trees=guard_trees)
        name_failing_guards(errors, recompiled)  # (a recompile limit's steps name its guard, as the report's do)
        found = errors.errors
        outcome.export_errors = [e for e in found if e.export_call is not None]
        failed = [e for e in found if e.stage != RECOMPILE_LIMIT and e.export_call is None]
        exported = export_report(trace)
        outcome.export_issues = exported.issues if exported.detected else []
        outcome.export_dims = exported.dim_conflicts
        caught = _caught(trace, facts, failed)
        outcome.errors = [e for e in failed if e.compile_id not in caught]
        outcome.caught = [e for e in failed if e.compile_id in caught]
        outcome.limited = [e for e in found if e.stage == RECOMPILE_LIMIT]
        outcome.compiles = trace.n_compile_ids
        outcome.graph_breaks = len(graph_breaks(trace, guard_trees).breaks)
        outcome.recompiles = recompiled.total
        outcome.expected_recompiles = {s.compile_id: s.expected for f in recompiled.frames for s in f.steps if s.expected}
        outcome.used_inductor = _used_inductor(trace)
        outcome.numerics = numerics(trace)
        outcome.op_mutations = op_mutations(trace, files)
        outcome.backend_name = next((e.backend for e in found if e.backend), None)
        if outcome.backend_name is None and outcome.used_inductor:
            outcome.backend_name = "inductor"
    outcome.backend_name = spec.backend or outcome.backend_name
    outcome.accuracy_failure = accuracy_failure(output)
    if outcome.accuracy_failure:
        outcome.wrong_graph = wrong_graph(trace, output, files)
    outcome.printed = printed_lines(output)
    if facts.returncode != 0 and not facts.timed_out:
        outcome.mismatch = numeric_mismatch(output)
        outcome.raised_at, outcome.raised_in = raised_where(output, output_code_files(trace) if trace is not None else {})
    if facts.crash_texts:  # placed by the output code of the log read, which names whose compiled code ran
        outcome.crash = parse_crash(facts.crash_texts[0], output_code_files(trace) if trace is not None else None)
    elif not facts.timed_out:
        outcome.crash = unrecorded_crash(facts.signal)
    return outcome


def compiled_frame(trace: Trace) -> UserLocation | None:
    """The user's frame of the first compile: where an accuracy failure's graph came from."""
    for entry in trace.sorted_compiles():
        location = last_user_stack_frame(entry.stack)
        if location is not None:
            return location
    return None

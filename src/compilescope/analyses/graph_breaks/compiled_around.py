"""What Dynamo compiled around the graph breaks: the frames a break's call ran, compiled as frames of their own
(link_compiled_callees); the line Dynamo resumed a function at after a break inside a higher-order op's function
(resumed_at); what the breaks split the compiled code into, where most compiles hold no op (compiled_split).
"""

from __future__ import annotations

from ...model.ids import compilation_key
from ...model.trace import Compile, Trace
from ..compiled_frames import compiled_frame
from ..user_locations import UserLocation
from . import CompiledCallee, CompiledSplit, GraphBreak
from .resume_names import resume_of


def compiled_split(trace: Trace) -> CompiledSplit | None:
    """The compiles and which hold ops, where most hold none: the breaks left more compiles without ops than with
    (None otherwise, or where the log has no graph_op_count)."""
    latest: dict[str, Compile] = {}  # compilation -> its last attempt (a restart's attempt has the metrics that count)
    for entry in trace.sorted_compiles():
        if entry.compile_id is not None and entry.metrics is not None and not entry.metrics.get("fail_type"):
            latest[compilation_key(entry.compile_id)] = entry
    if not latest or any("graph_op_count" not in (e.metrics or {}) for e in latest.values()):
        return None
    split = CompiledSplit(compiles=len(latest))
    for key, entry in latest.items():
        ops = (entry.metrics or {}).get("graph_op_count")
        if type(ops) is int and ops > 0:
            frame = compiled_frame(entry)
            split.with_ops.append((key, frame[2] if frame else "?", ops))
        elif ops == 0:
            split.empty += 1
        else:  # (null: no graph, with guarded code (made_no_graph) or without; a log's garbage holds no ops either)
            split.no_graph += 1
    return split if split.with_ops and split.empty + split.no_graph > len(split.with_ops) else None


def resumed_at(trace: Trace, entry: Compile) -> UserLocation | None:
    """The line of entry's function that Dynamo resumed it at after its graph break: the statement that broke, in the
    compiled function itself. The first compile after entry's, in the log, of Dynamo's resume function for the same
    function in the same file past entry's own start (torch_dynamo_resume_in_forward_at_48 after forward, which starts
    at 46). A break inside a higher-order op's function is logged without that statement in its user traceback."""
    frame = compiled_frame(entry)
    if frame is None:
        return None
    path, first, name = frame
    function, start = resume_of(name) or (name, first)
    after = False
    for other in trace.compiles.values():
        if other is entry:
            after = True
            continue
        later = compiled_frame(other) if after else None
        resumed = resume_of(later[2]) if later is not None and later[0] == path else None
        if resumed is not None and resumed[0] == function and resumed[1] > start:
            return UserLocation(path, resumed[1], function)
    return None


def link_compiled_callees(trace: Trace, breaks: list[GraphBreak]) -> None:
    """Each break gets the frames Dynamo compiled below its line: compilations whose logged stack passes through the
    line where the break's compile stopped tracing (resume functions are what comes after the break, not below it).
    The innermost such line is the call that ran them: after several breaks in one function each resume function
    calls the next, so the stack passes through every earlier break's line too (train_step at line 41, then the
    resume function at line 46, `scaler.step(opt)`, which called the optimizer's step)."""
    at_line: dict[tuple[str, int], GraphBreak] = {}
    for b in breaks:
        if b.location is not None and b.location.line > 0:
            at_line.setdefault(b.location.key, b)  # two reasons at one line: the most frequent
    if not at_line:
        return
    for entry in trace.sorted_compiles():
        if entry.compile_id is None or not entry.stack:
            continue
        metrics = entry.metrics or {}
        name = str(metrics.get("co_name") or entry.stack[-1].name)
        filename = str(metrics.get("co_filename") or entry.stack[-1].filename)
        if resume_of(name) is not None or filename.startswith("<"):
            continue  # (code torch generated: compiled autograd's backward graphs have a section of their own)
        first_line = metrics.get("co_firstlineno")
        start = UserLocation(filename, int(first_line) if isinstance(first_line, int) else entry.stack[-1].line, name,
                             None)
        for frame in reversed(entry.stack[:-1]):  # the innermost frame is the compiled function itself
            brk = at_line.get((frame.filename, frame.line))
            if brk is None:
                continue
            key = compilation_key(entry.compile_id)
            if key in brk.compile_ids:
                continue
            callee = next((c for c in brk.compiled_callees if c.location.key == start.key and c.function == name), None)
            if callee is None:
                callee = CompiledCallee(name, start)
                brk.compiled_callees.append(callee)
            if key not in callee.compile_ids:
                callee.compile_ids.append(key)
            break

"""graph_breaks(trace), the analysis: each compile's graph breaks (its dynamo_graph_break_reason artifacts, or in older
logs its restart reasons) read, deduplicated by reason and user line, most frequent first, with what one break says of
the others (a break in torch.func's own code caused by one in the user's, GradScaler's calls, `.backward()`'s compiled
backward) and what Dynamo compiled around each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...model.ids import compilation_key
from ...model.trace import Trace
from ..compiled_frames import compiled_location
from ..installed_guards import GuardTrees
from ..user_locations import UserLocation, inline_frame, is_framework_file, traceback_frames
from . import GraphBreak, GraphBreaks, TransformCall
from .compiled_around import compiled_split, link_compiled_callees, resumed_at
from .reason_text import (ARTIFACT, FUNCTORCH_FILE, IN_LOOP, artifact_location, fsdp_hook_call, internal_restart,
                          parse_reason, skipped_frame, skipped_with, through_ddp, transform_call)
from .subclasses import dispatch_compiled_alone, untraced_subclass
from .wording import BACKWARD_BREAK, BACKWARD_GRAPH

if TYPE_CHECKING:
    from .compile_index import CompileIndex


def graph_breaks(trace: Trace, guard_trees: GuardTrees | None = None) -> GraphBreaks:
    """guard_trees: the log's guard trees, where the caller reads them too (made here otherwise): a break naming an
    untraced object asks which classes they type as tensor classes."""
    guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)
    # (compile id, parsed, location, through DDP's forward, the line Dynamo resumed at after it where it matters, the
    # torch.func transform it is inside, whether it is in FSDP2's hooks and the user's call of the sharded module)
    events: list[tuple[str, dict[str, Any], UserLocation | None, bool, UserLocation | None, TransformCall | None,
                       tuple[bool, UserLocation | None]]] = []
    for entry in trace.compiles.values():
        for artifact in entry.artifacts:
            if artifact.name == ARTIFACT:
                text = trace.payload_text(artifact.payload)
                location = artifact_location(text)
                parsed = parse_reason(text)
                events.append((compilation_key(entry.compile_id), parsed, location, through_ddp(text, location),
                               resumed_at(trace, entry) if parsed["higher_order_op"] else None, transform_call(text),
                               fsdp_hook_call(text, location)))
    source = ARTIFACT if events else None
    if not events:
        for entry in trace.compiles.values():
            for reason in (entry.metrics or {}).get("restart_reasons") or []:
                text = str(reason)
                if internal_restart(text):
                    continue
                if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" and text[0] not in text[1:-1]:
                    text = text[1:-1]  # older torch logged the reason's repr: 'skip function graph_break in ...'
                location = inline_frame(text)
                if location is None:
                    frames = [f for f in traceback_frames(text) if not is_framework_file(f.filename)]
                    location = frames[-1] if frames else None
                events.append((compilation_key(entry.compile_id), parse_reason(text), location,
                               through_ddp(text, location), None, None, fsdp_hook_call(text, location)))
        source = "restart_reasons" if events else None

    compiles = {compilation_key(entry.compile_id): entry for entry in trace.compiles.values()}
    index: CompileIndex | None = None  # (made where a break made Dynamo skip a frame)
    by_key: dict[tuple, GraphBreak] = {}
    for compile_key, parsed, location, in_ddp, op_call, transform, fsdp in events:
        torch_location = None
        if transform is not None and location is not None and FUNCTORCH_FILE.search(location.filename):
            # A break in torch.func's own code is the user's at the line that called the transform.
            torch_location, location = location, transform.call
        key = (parsed["reason"], location.key if location else None)
        found = by_key.get(key)
        if found is None:
            found = by_key[key] = GraphBreak(
                reason=parsed["reason"], location=location, context=parsed["context"],
                explanation=parsed["explanation"], hints=parsed["hints"], docs_url=parsed["docs_url"], text=parsed["text"],
                transform=transform, torch_location=torch_location,
            )
        found.in_ddp_forward = found.in_ddp_forward or in_ddp
        if fsdp[0]:
            found.in_fsdp_hook = True
            found.fsdp_call = found.fsdp_call or fsdp[1]
        skipped = skipped_frame(parsed["text"], compiled_location(compiles.get(compile_key)))
        found.subclass_advice = found.subclass_advice or untraced_subclass(guard_trees, parsed["text"])
        if skipped is not None and found.skipped_frame is None:
            found.skipped_frame, found.in_loop = skipped, IN_LOOP in parsed["text"]
            found.in_with = skipped_with(parsed["text"])
            failed = compiles.get(compile_key)
            found.skipped_before = None
            if failed is not None:
                # (here: the index is for a log whose break made Dynamo skip a frame, as the errors' for a failure)
                from .compile_index import compile_index, ran_before

                if index is None:
                    index = compile_index(trace)
                found.skipped_before = ran_before(index, failed)
        if (skipped is not None and found.skipped_frame is not None and compile_key not in found.skipped_in
                and (skipped.key, skipped.function) == (found.skipped_frame.key, found.skipped_frame.function)):
            found.skipped_in.append(compile_key)
        found.higher_order_op = found.higher_order_op or parsed["higher_order_op"]
        if op_call is not None and op_call not in found.op_calls:
            found.op_calls.append(op_call)
        # A restarted attempt may log the same break again: count compilations, not log lines.
        if compile_key not in found.compile_ids:
            found.compile_ids.append(compile_key)
            found.count += 1
    ordered = sorted(by_key.values(), key=lambda b: -b.count)  # stable: first seen first among equals
    for b in ordered:  # a break in torch.func's code, after one in the user's code inside the same transform call
        if b.transform is not None and b.torch_location is not None:
            b.caused_by = list(dict.fromkeys(
                o.location.short for o in ordered if o.transform is not None and o.torch_location is None
                and o.location is not None and o.transform.call.key == b.transform.call.key))
    backward = [b for b in ordered if b.reason == BACKWARD_BREAK]
    if backward:
        aot = list(dict.fromkeys(
            compilation_key(e.compile_id) for e in trace.compiles.values()
            if e.compile_id is not None and e.compile_id.compiled_autograd_id is None
            and (e.bwd_metrics or any(a.name == BACKWARD_GRAPH for a in e.artifacts))))
        by_ca = list(dict.fromkeys(f"[!{e.compile_id.compiled_autograd_id}]" for e in trace.compiles.values()
                                   if e.compile_id is not None and e.compile_id.compiled_autograd_id is not None))
        for b in backward:
            b.backward_compiled, b.backward_by_compiled_autograd = aot, by_ca
    amp = [b for b in ordered if b.amp_function is not None and b.location is not None]
    for b in amp[1:]:
        b.amp_said_at = amp[0].location.short  # type: ignore[union-attr]
    if amp:  # (ordered by count: the lines are put back in the program's order)
        amp[0].amp_calls = list(dict.fromkeys(
            b.location.code.strip() for b in sorted(amp, key=lambda b: b.location.key)  # type: ignore[union-attr]
            if b.location is not None and b.location.code))
    link_compiled_callees(trace, ordered)
    for b in ordered:
        if not b.skipped_in:
            continue
        from .compile_index import compile_index  # (here: as above)

        index = index or compile_index(trace)
        skipped_compiles = [compiles[key] for key in b.skipped_in if key in compiles]
        for callee in dispatch_compiled_alone(index, skipped_compiles, b.text):
            if all(c.location.key != callee.location.key for c in b.compiled_callees):
                b.compiled_callees.append(callee)
    return GraphBreaks(breaks=ordered, total=len(events), source=source, split=compiled_split(trace) if ordered else None)

"""Tensor subclasses in failed guards: the instance whose __tensor_flatten__ metadata changed, the attribute of one
the traced code read as a constant, and a subclass's __torch_dispatch__ that Dynamo compiled as a frame of its own."""

from __future__ import annotations

from ...lazy_regex import lazy_compile
from ...model.trace import Compile, Trace
from ...wording import and_list
from ..compiled_frames import CompiledFrames
from ..graph_breaks.reason_text import ARTIFACT as GRAPH_BREAK_ARTIFACT, skipped_frame
from ..graph_breaks.subclasses import UNTRACED_OBJECT
from ..installed_guards import GUARDS_ARTIFACT, guarded_source, object_type, tree_subclass, tree_tensor
from ..user_locations import user_source_name
from . import CompileTexts, FailedGuard, RecompileStep
from .placement import tree_sources
from .settings import user_caller

# A traceable tensor subclass (__tensor_flatten__/__tensor_unflatten__) whose metadata changed: torch names the guard
# only `___check_metadata_<id>_c1/0`; what changed is in describe_tensor's ctx of the two compiles.
SUBCLASS_METADATA_ADVICE = (
    "{name} is a {cls}, your tensor subclass, and Dynamo guards on the metadata its __tensor_flatten__ returns (the "
    "second value) by equality{values}: each new value compiles again, and one that keeps changing reaches the "
    "recompile limit. Keep that metadata constant, or return what changes as an inner tensor (its attribute name in "
    "__tensor_flatten__'s first list, read back in __tensor_unflatten__): an inner tensor is an input of the graph, "
    "and a new value in it compiles nothing.")
# An attribute of a tensor subclass's instance that Dynamo read while tracing (in the subclass's __torch_function__,
# say) and compiled as a constant: torch's generic advice (pass a tensor, let it be dynamic) does not apply to a str.
SUBCLASS_ATTRIBUTE_ADVICE = (
    "{names} {is_} an attribute of {tensors}, {an}instance{s} of your tensor subclass {classes}, that the traced code "
    "read{where}, and Dynamo compiled {it} as a constant: each new value compiles again{never}. Give {it} one value on "
    "every call (convert before calling the compiled function), or keep {it} out of what Dynamo traces (the compiled "
    "function and the subclass's __torch_function__).")
NEVER_DYNAMIC = " (a str is never made dynamic)"


_ATTRIBUTE_GUARD = lazy_compile(r"^(?P<object>[A-Za-z_][\w.\[\]'\"]{0,500}?)\.(?P<attribute>[A-Za-z_]\w{0,200}) == "
                                r"(?P<value>.{1,1000})$")


def _subclass_metadata(entry: Compile | None, source: str) -> str | None:
    """The metadata a compile's description of the traceable tensor subclass at source gives (its ctx)."""
    return next((str(d["ctx"]) for d in (entry.subclass_tensors if entry is not None else [])
                 if d.get("source") == source and d.get("ctx") is not None), None)


def subclass_guards(steps: list[tuple[RecompileStep, Compile]], texts: CompileTexts,
                     by_id: dict[str, Compile]) -> dict[str, list[str]]:
    """Names the tensor subclass a failed guard is about, from the guarded compile's guard tree: the instance whose
    __tensor_flatten__ metadata changed (with its values before and now), or whose attribute the traced code read
    (`x.unit == 'cm'`, x a UnitTensor). Returns the advice for each kind of change it explains."""
    metadata: list[str] = []
    attributes: list[FailedGuard] = []
    for step, entry in steps:
        for guard in step.failed_guards:
            m = _ATTRIBUTE_GUARD.match(guard.guard) if guard.change == "constant" else None
            # (the tree as GuardTrees parsed it for the report, asked only for a guard it can explain)
            tree = texts.guard_tree(guard.compile_id) if guard.change == "subclass_metadata" or m else None
            if tree is None:
                continue
            if guard.change == "subclass_metadata":
                # The object the metadata check hangs under, and its type, from the tree's text: only this rare guard
                # asks for a line's parent, and parsing every tree's nesting for it would cost each log more than it
                # saves.
                text = texts(guard.compile_id, GUARDS_ARTIFACT)
                source = guarded_source(text, guard.guard) if text else None
                if source is None:
                    continue
                line = tree_tensor(tree, source)
                typ = object_type(text, source)
                guard.subclass = tree_subclass(tree, source) or (typ.rsplit(".", 1)[-1] if typ else None)
                guard.subclass_object = user_source_name(source)
                guard.metadata_before = _subclass_metadata(by_id.get(guard.compile_id or ""), source)
                guard.metadata_after = _subclass_metadata(entry, source)
                if guard is step.guard and line is not None:
                    values = (f" ({guard.metadata_before} when {guard.compilation} compiled, {guard.metadata_after} "
                              f"at this call)" if guard.metadata_before and guard.metadata_after else "")
                    advice = SUBCLASS_METADATA_ADVICE.format(name=f"`{guard.subclass_object}`", cls=guard.subclass,
                                                             values=values)
                    if advice not in metadata:
                        metadata.append(advice)
                continue
            found = next(((src, cls) for src in (tree_sources(m["object"]) if m else [])
                          if (cls := tree_subclass(tree, src)) is not None), None)
            if found is not None:
                guard.subclass, guard.subclass_object = found[1], user_source_name(found[0])
                if guard is step.guard:
                    attributes.append(guard)
    advice: dict[str, list[str]] = {}
    if metadata:
        advice["subclass_metadata"] = metadata
    if attributes:
        names = list(dict.fromkeys(f"`{g.guard.partition(' == ')[0]}`" for g in attributes))
        tensors = list(dict.fromkeys(f"`{g.subclass_object}`" for g in attributes))
        classes = list(dict.fromkeys(str(g.subclass) for g in attributes))
        placed = next((g.location for g in attributes if g.location is not None), None)
        where = (f" (at {placed.short}" + (f" in {placed.function}" if placed.function else "") + ")") if placed else ""
        many = len(names) > 1
        advice["constant"] = [SUBCLASS_ATTRIBUTE_ADVICE.format(
            names=and_list(names), is_="are" if many else "is", tensors=and_list(tensors),
            an="" if len(tensors) > 1 else "an ", s="s" if len(tensors) > 1 else "", classes=and_list(classes),
            where=where, it="them" if many else "it",
            never=NEVER_DYNAMIC if all(_QUOTED.match(g.guard.partition(" == ")[2]) for g in attributes) else "")]
    return advice


_QUOTED = lazy_compile(r"^(['\"]).*\1$")


# A wrapper subclass's __torch_dispatch__ Dynamo compiled as a frame of its own: the frame that called the op on it was
# skipped (a graph break it could not resume from) and ran eagerly, so each op on the subclass reached its dispatch.
DISPATCH_ALONE_ADVICE = (
    "This is {cls}.__torch_dispatch__, your tensor subclass's, compiled on its own: Dynamo skipped {skipped} "
    "({where}, {compile_id}) at its graph break and ran it eagerly, so each op it ran on a {cls} called "
    "__torch_dispatch__, which Dynamo compiled as a frame (its recompiles are this frame's). Fix that break first: "
    "once {skipped} compiles, its graph takes the op and {cls}.__torch_dispatch__ is no frame of its own.")


def dispatch_compiled_alone(trace: Trace, entries: list[Compile], compiled_frames: CompiledFrames) -> str | None:
    """Why a __torch_dispatch__ frame was compiled (DISPATCH_ALONE_ADVICE), where one of its compiles was called from
    the user's line that called a frame Dynamo skipped after a graph break ([1/0]'s forward and [2/0]'s
    __torch_dispatch__ both from main's `compiled(...)` line); None where none was."""
    callers = {loc.key for e in entries if (loc := user_caller(compiled_frames.stack(e.compile_id))) is not None}
    for entry in trace.sorted_compiles():
        caller = user_caller(compiled_frames.stack(entry.compile_id)) if entry.compile_id is not None else None
        if caller is None or caller.key not in callers:
            continue
        for artifact in entry.artifacts:
            if artifact.name != GRAPH_BREAK_ARTIFACT or artifact.payload is None:
                continue
            text = trace.payload_text(artifact.payload)
            skipped = skipped_frame(text, compiled_frames.compiled(entry.compile_id))
            if skipped is None or not skipped.function:
                continue
            cls = UNTRACED_OBJECT.search(text)
            return DISPATCH_ALONE_ADVICE.format(cls=cls["cls"] if cls else "the tensor subclass",
                                                skipped=skipped.function, where=skipped.short,
                                                compile_id=entry.compile_id.compilation)
    return None

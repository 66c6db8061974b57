"""A recompile whose input changed dtype where the module the frame runs (`self`) holds parameters of another dtype
too: two models running one compiled forward, or one model cast (m.double()). Torch logs one failing guard (the input's
dtype, `tensor 'x' dtype mismatch`); casting inputs to one dtype is no fix where the inputs fit the parameters. The
guard trees of one model cast and of two models of one class are alike: two models are said only where the calls'
text calls two objects (`a(x)`, `b(x2)`) or their compiles' settings differ (autotune_cudagraphs: a float16 MLP
compiled with max-autotune and a float32 one with reduce-overhead)."""

from __future__ import annotations

import ast

from ...lazy_regex import lazy_compile
from ...model.trace import Compile
from ..compiled_frames import CompiledFrames
from ..installed_guards import GUARDS_ARTIFACT, GuardTree
from ..user_locations import UserLocation, called_at_text, last_user_stack_frame
from . import CompileTexts, RecompileStep, compilation_label

# A parameter of the module the frame runs, as its TENSOR_MATCH checks it: the source and its dtype.
_SELF_PARAMETER = lazy_compile(r"TENSOR_MATCH: check_tensor\((?P<source>L\['self'\][^,\n]{0,500}\._parameters\['\w{1,200}'\]), "
                             r"\w{1,100}, DispatchKeySet\([^)\n]{0,500}\), torch\.(?P<dtype>\w{1,40}),")
_SELF_CLASS = lazy_compile(r"TYPE_MATCH: ___check_type_id\(L\['self'\], \d{1,30}\), type=<class '(?:[\w.]{0,300}\.)?"
                         r"(?P<cls>\w{1,200})'>")
OTHER_MODEL_ADVICE = (
    "Not a dtype change inside one model: {ids} compiled {cls}.forward for two models, called at {calls}, whose "
    "parameters are {dtypes}, each called with inputs of its own dtype. Models of one class share their forward's "
    "compiled versions (one cache and one recompile limit, whatever torch.compile call or mode compiled each), so "
    "each model's dtype compiles it once: expected, and later calls of either reuse their own. Casting the inputs to "
    "one dtype would not fit the other model's parameters.{settings}")
SELF_CAST_ADVICE = (
    "The parameters of the {cls} that runs forward changed dtype ({change}; {ids}, called at {calls}): one {cls} cast with .to() or "
    ".double() between calls, or two models of one class, each called with inputs of its own dtype. Casting the inputs "
    "to one dtype would not fit the parameters. Each dtype compiles the forward once: cast a model once, before its "
    "first compiled call; models of one class share their forward's compiled versions (one cache and one recompile "
    "limit), so two models of two dtypes compile it once each, as expected.")
# What a compile's metrics say of the mode it was compiled with: Inductor benchmarked kernel choices while compiling
# (compile_time_autotune_time_us: max-autotune's GEMM templates), or set its code up as CUDA graphs when it first ran
# (a compilation_metrics_runtime's runtime_cudagraphify_time_us: mode="reduce-overhead").
SETTINGS_WORDS = {"autotune": "{cid} benchmarked kernels while compiling (max-autotune)",
                  "cudagraphs": "{cid} ran as CUDA graphs (reduce-overhead)"}


def _settings(entry: Compile) -> set[str]:
    said = set()
    if (entry.metrics or {}).get("compile_time_autotune_time_us"):
        said.add("autotune")
    if any(m.get("runtime_cudagraphify_time_us") for m in entry.runtime_metrics):
        said.add("cudagraphs")
    return said


def _self_parameters(text: str | None) -> tuple[str | None, set[str]]:
    """The class of the frame's `self` and its parameters' dtypes, from a guard tree's text."""
    if not text:
        return None, set()
    cls = _SELF_CLASS.search(text)
    return (cls["cls"] if cls else None), {m["dtype"] for m in _SELF_PARAMETER.finditer(text)}


def _guards_self_parameters(tree: GuardTree | None) -> bool:
    """The compile's guard tree (as GuardTrees parsed it) checks parameters of the module the frame runs."""
    return tree is not None and any(line.tensor is not None and line.tensor[0].startswith("L['self']")
                                    and "._parameters[" in line.tensor[0] for line in tree.lines)


def _callees(code: str | None) -> set[str] | None:
    """The named things a line's text calls (`print`, `a`, `torch.randn`; not a method of a call's result), or None
    where the text is no whole statement."""
    try:
        tree = ast.parse((code or "").strip())
    except (SyntaxError, ValueError):
        return None
    return {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)
            and all(isinstance(part, (ast.Name, ast.Attribute)) for part in ast.walk(node.func))}


def _two_objects(old_call: UserLocation, new_call: UserLocation) -> bool:
    """The two calls' text calls two things, none in common (`a(x)` and `b(x2)`): evidence of two models, where the
    same call (`c(x)`, before and after m.double()) is none."""
    old, new = _callees(old_call.code), _callees(new_call.code)
    return old is not None and new is not None and bool(old) and bool(new) and not old & new


def _caller(compiled_frames: CompiledFrames, entry: Compile) -> UserLocation | None:
    """The user's line that called the compiled frame: its stack's innermost user frame but the frame's own (a user's
    forward is the stack's last)."""
    stack = compiled_frames.stack(entry.compile_id) if entry.compile_id is not None else None
    return last_user_stack_frame(stack[:-1]) if stack else None


def other_model_advice(steps: list[tuple[RecompileStep, Compile]], texts: CompileTexts,
                       compiled_frames: CompiledFrames, by_id: dict[str, Compile]) -> str | None:
    """The advice for dtype recompiles each of which ran a module whose parameters changed dtype: the guarded compile's
    `self` held parameters of one dtype and the recompile's of another. Two models where each recompile's calls call
    two objects or were compiled with other settings; else one model cast or two models, said as both. None where any
    dtype recompile is not so (then the dtype advice stands)."""
    dtype_steps = [(step, entry) for step, entry in steps if step.guard is not None and step.guard.change == "dtype"]
    if not dtype_steps:
        return None
    ids: list[str] = []
    dtypes: list[str] = []
    changes: list[str] = []
    calls: list[UserLocation] = []
    cls = None
    settings: list[str] = []
    two_models = True
    for step, entry in dtype_steps:
        guarded = step.guard.compile_id if step.guard is not None else None
        old_entry = by_id.get(guarded or "")
        old_call = _caller(compiled_frames, old_entry) if old_entry is not None else None
        new_call = _caller(compiled_frames, entry)
        if old_call is None or new_call is None or not (
                _guards_self_parameters(texts.guard_tree(guarded))
                and _guards_self_parameters(texts.guard_tree(step.compile_id))):
            return None
        # (the trees' text, for the parameters' dtypes GuardTrees does not keep: read only for a module's forward)
        old_cls, old = _self_parameters(texts(guarded, GUARDS_ARTIFACT))
        new_cls, new = _self_parameters(texts(step.compile_id, GUARDS_ARTIFACT))
        if len(old) != 1 or len(new) != 1 or old == new or old_cls is None or old_cls != new_cls:
            return None
        cls = old_cls
        step_settings: list[str] = []
        if old_entry is not None and (old_said := _settings(old_entry)) != (new_said := _settings(entry)):
            # (each compile's own: what the other had and it lacked tells the two torch.compile calls apart)
            step_settings = [SETTINGS_WORDS[kind].format(cid=compilation_label(cid)) for cid, said, other in
                             ((guarded, old_said, new_said), (step.compile_id, new_said, old_said))
                             for kind in sorted(said - other)]
            settings += step_settings
        two_models = two_models and (bool(step_settings) or (
            old_call.key != new_call.key and _two_objects(old_call, new_call)))
        change = f"{next(iter(old))} → {next(iter(new))}"
        if change not in changes:
            changes.append(change)
        for cid, dtype, call in ((guarded, old.pop(), old_call), (step.compile_id, new.pop(), new_call)):
            if cid not in ids:
                ids.append(str(cid))
                dtypes.append(f"{dtype} in {compilation_label(cid)}")
                if all(call.key != seen.key for seen in calls):
                    calls.append(call)
    shown = [compilation_label(cid) or cid for cid in ids]  # (by compilation, as the steps read)
    listed_ids = " and ".join(shown) if len(shown) == 2 else ", ".join(shown)
    if not two_models:
        return SELF_CAST_ADVICE.format(cls=cls, change=", ".join(changes), ids=listed_ids, calls=called_at_text(calls))
    return OTHER_MODEL_ADVICE.format(ids=listed_ids, cls=cls, calls=called_at_text(calls), dtypes=" and ".join(dtypes),
                                     settings=f" They were compiled with other settings too: {'; '.join(settings)}."
                                     if settings else "")

"""What to do about each kind of change (ADVICE), and the advice that names what changed: sizes to mark dynamic, a
size a graph break passed on, a dimension marked dynamic that torch kept static, Python bools and modes, numbers
made dynamic, NumPy dtypes."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Sequence

from ...model.trace import Compile
from ...wording import and_list, first_listed, possessive
from ..dynamic_shapes import dynamo_config
from ..graph_breaks.resume_names import function_label, resume_of
from ..installed_guards import GuardTree, tree_marked_dims
from ..passed_on import ArgumentName, Passed
from ..stack_values import StackValue
from ..user_locations import UserLocation, code_origin, user_source_name
from . import FailedGuard, NUMPY_DTYPES, RecompileStep, TORCH_DTYPE_WORDS, numpy_array
from .reasons import FLAG

# torch's reasons (ShapeEnv._set_replacement): an equality on a float symbol replaces it with the value (trivial_lhs).
SPECIALIZED_ADVICE = ("A size that changed had been specialized to one value by the compile before (see above): a "
                      "line there fixed it (an operation with a tensor of fixed size, a branch or check on it), so "
                      "marking the dimension dynamic does not stop the recompiles; that line does.")

ADVICE = {
    "size": "Sizes change between calls: mark the dimension dynamic (torch._dynamo.mark_dynamic(x, dim)) or "
            "compile with dynamic=True.",
    "stride": "Strides change between calls: pass contiguous tensors (x.contiguous()).",
    "dtype": "Inputs arrive with different dtypes: cast them to one dtype before calling the compiled function.",
    "requires_grad": "Some calls pass tensors that require grad and some do not: make it consistent, or compile "
                     "separate functions for training and inference.",
    "device": "Inputs move between devices: keep them on one device.",
    "rank": "The number of dimensions changes: reshape inputs to one rank.",
    "dispatch_keys": "Calls run under different modes (grad mode, autocast, inference mode): call it under one mode.",
    "global_state": "Global state (grad mode, autocast, deterministic algorithms) differs between calls: keep it the same.",
    "type": "Arguments of different types are passed: pass one type.",
    "object_identity": "A different object (module, function) is passed each call: reuse one object.",
    "keyword_arguments": "Calls pass different keyword arguments (one passes an argument another leaves out), and "
                         "Dynamo compiles once for each set: pass the same ones on every call (a default written "
                         "out is enough). Calls a library makes for you (transformers' generate()) pass its own: "
                         "expect a compile for each set they use.",
    "positional_arguments": "Calls pass a different number of positional arguments (one passes an input by "
                            "position, another by keyword), and Dynamo compiles once for each count: pass each "
                            "argument the same way on every call. transformers' generate() calls the model with "
                            "keywords only: call it so too, model(input_ids=ids), not model(ids).",
    "length": "A list/tuple argument changes length: pad it or pass a tensor.",
    "shape_guard": "A guard on a symbolic size failed (code branches on a size): see Dynamic shapes for where.",
    "size_one": "A call passed a size of 0 or 1 where the compiled code has a dynamic size, and torch assumes a dynamic "
                "size is never 0 or 1 (its 0/1 specialization), so such a call compiles again, whatever the code does "
                "with it. Pad those inputs to 2 or more, or mark the dimension unbacked "
                "(torch._dynamo.decorators.mark_unbacked(tensor, dim)), which lets it take any size.",
    "flag": "A Python bool changes between calls, and Dynamo compiles each value apart (it never makes a bool "
            "dynamic).",
    "constant": "A Python number/string argument changes and Dynamo specializes on its value: pass it as a tensor, "
                "or let it be dynamic (do not force dynamic=False).",
    # PyTorch's tutorial "Running the compiled optimizer with an LR Scheduler" gives this fix.
    "optimizer_setting": "The compiled optimizer step guards on a hyperparameter that is a Python number (a learning "
                         "rate an LR scheduler changes every step): give the optimizer a tensor, e.g. "
                         "torch.optim.Adam(params, lr=torch.tensor(0.01)), and changing it will not recompile.",
    "subclass_metadata": "A tensor subclass's metadata (what its __tensor_flatten__ returns beside the inner tensors' "
                         "names) changed, and Dynamo compiles each value apart: keep it constant, or return what "
                         "changes as an inner tensor.",
    "other": "See the failing guard and the user line it came from.",
}
NUMPY_DTYPE_ADVICE = ("NumPy {arrays} {names} arrive{s} as {dtypes}, and each dtype is compiled apart: convert to one "
                      "dtype before the call (`.astype(np.{first})`; NumPy makes float64 unless told, as np.random.rand "
                      "and np.array of Python floats do), or pass torch tensors of one dtype.")


def numpy_dtype_advice(guards: list[FailedGuard]) -> str | None:
    """The advice for dtype checks that failed, where each is of a NumPy array the function takes; None otherwise."""
    arrays = [numpy_array(g.tensor) for g in guards]
    if not guards or not all(arrays):
        return None
    dtypes: list[str] = []
    for g in guards:
        m = TORCH_DTYPE_WORDS.search(g.guard)
        if m:
            dtypes.extend(NUMPY_DTYPES.get(d, d) for d in (m["expected"], m["actual"]))
    dtypes = list(dict.fromkeys(dtypes))
    names = list(dict.fromkeys(f"`{a}`" for a in arrays))
    return NUMPY_DTYPE_ADVICE.format(arrays="arrays" if len(names) > 1 else "array", names=and_list(names),
                                     s="" if len(names) > 1 else "s", dtypes=and_list(dtypes) or "different dtypes",
                                     first=dtypes[0] if dtypes else "float32")


FLAG_ADVICE = ("{names} is a Python bool{where} that picks a code path, and Dynamo compiles each value apart: it never "
               "makes a bool dynamic, so mark_dynamic or dynamic=True does not help, and each value costs a compile. To "
               "compile once, take one path for every value (always apply a mask, say, all True where nothing is "
               "masked), or pass a tensor and select with torch.where; else call with each value while warming up, "
               "before serving.")
# A module's `training` flag is a bool too, but one the program switches on purpose (.train(), .eval()): a compile per
# mode is expected, and the one-path fix above (a mask, torch.where) is no advice for it.
MODE_ADVICE = ("{names} {is_} {whose} mode (.train() or .eval(){where}), and Dynamo compiles once for each mode: "
               "expected, not a fault. Switching back to a mode compiled before reuses that compile; to keep the "
               "compile out of the first call after a switch, call the model once in each mode while warming up.")
# A transformers KV cache whose tensors grow: the fix transformers documents for torch.compile is a static cache
# (its docs' "Cache strategies" table: DynamicCache does not support torch.compile, StaticCache does).
CACHE_ADVICE_GENERATE = (
    "transformers' KV cache ({source}, a {cls}) grows as generate() adds tokens, so its sizes change between calls: "
    "give generate() a static cache, which keeps them fixed: model.generate(..., cache_implementation=\"static\") "
    "(or set model.generation_config.cache_implementation = \"static\"). Or compile with dynamic=True, so that sizes "
    "are dynamic from the first compile.")
# A size of an input transformers' generate() makes and passes to the compiled forward: the user has no tensor to mark.
GENERATED_SIZE_ADVICE = (
    "transformers' generate() makes the inputs it passes ({inputs}: the prompt, then one token each decode step), so "
    "there is no tensor of yours to mark dynamic: compile with dynamic=True, so that sizes are dynamic from the first "
    "compile, or give generate() a static cache, model.generate(..., cache_implementation=\"static\"), whose fixed "
    "sizes make every decode step alike.")
CACHE_ADVICE = (
    "transformers' KV cache ({source}, a {cls}) grows with each token added, so its sizes change between calls: pass "
    "a static cache (transformers' StaticCache) as past_key_values, which keeps them fixed. Or compile with "
    "dynamic=True, so that sizes are dynamic from the first compile.")
_SIZES_LISTED = 4

# A size marked dynamic by hand, whose first call had a size of 0 or 1: torch specializes 0 and 1 whatever the mark
# (ShapeEnv.create_symbol returns the constant), unless backed_size_oblivious (torch.fx.experimental._config, 2.13)
# tells it not to; an unbacked size is never specialized so.
MARKED_SIZE_ONE_ADVICE = (
    "{dim_of} was marked dynamic ({call}), yet the call that compiled {compile_id} had size {size} there, and torch "
    "specializes sizes 0 and 1 (its 0/1 specialization): it kept the dimension static, and a call with another size "
    "compiled again. Mark it where the first call has a size of 2 or more (a warm-up call, say), or mark it unbacked "
    "in its place, which lets it take any size, 0 and 1 too: torch._dynamo.decorators.mark_unbacked({arg}, {dim}); or "
    "set torch.fx.experimental._config.backed_size_oblivious = True (experimental), under which a marked size of 0 or "
    "1 stays dynamic.")
# The attributes the marking calls set on a tensor, which Dynamo's DIMENSION_DYNAMIC_MARKING_GUARD checks
# (`getattr(L['x'], '_dynamo_dynamic_indices', set()).issubset({0})`: the dims marked when the compile saw it).
MARKING_CALLS = {"_dynamo_dynamic_indices": "torch._dynamo.mark_dynamic",
                 "_dynamo_weak_dynamic_indices": "torch._dynamo.maybe_mark_dynamic"}

# torch's own hint on such a guard (guards.py) names allow_unspec_int_on_nn_module and a tensor.
ATTRIBUTE_ADVICE = ("{names} changes between calls, and torch.compile takes an nn.Module's int attributes as constants "
                    "(automatic dynamic leaves them): every new value compiles again, until the recompile limit. Keep "
                    "counters out of the compiled forward (count in the loop that calls it), or hold the value in a "
                    "tensor; torch._dynamo.config.allow_unspec_int_on_nn_module = True makes such ints dynamic.")
NUMBER_MADE_DYNAMIC = ("torch compiled {names} as dynamic once it changed (automatic dynamic): {recompiles} for it, "
                       "and none while it keeps changing. To avoid even that one, compile with dynamic=True.")
# The number made dynamic, then fixed again by a line of the compile that made it so (`while n > 0:` on it): automatic
# dynamic settles nothing, as each value is compiled apart.
NUMBER_SPECIALIZED_AGAIN = (
    "torch compiled {names} as dynamic once it changed (automatic dynamic), but {compile_id} specialized it again at "
    "{where}: a branch or loop on the value fixes it, so each new value compiles again, and dynamic=True does not "
    "help. Stop branching on it there: torch.cond for a branch, arithmetic for a loop count{item}.")
# The recompile that made the number dynamic failed: nothing took care of it, and Dynamo gave the frame up (torch
# 2.13 skips a frame whose compile failed so: no later call compiles it, each runs it eagerly).
NUMBER_DYNAMIC_FAILED = (
    "torch compiled {names} as dynamic once it changed (automatic dynamic), but that compile, {compile_id}, "
    "failed{at}: Dynamo gave up compiling {function}, and every later call runs it eagerly. {fix}")
ITEM_OUTSIDE = ("Read the value outside the compiled function: return the tensor and call .item() (and print it) in "
                "the code that calls it, which also removes the graph break that .item() makes.")
NUMBER_OUTSIDE = "Pass the number as a tensor, or keep the code that failed on it out of the compiled function."
ITEM_IN_GRAPH = (", with the value kept in the graph (torch._dynamo.config.capture_scalar_outputs = True, and "
                 "torch._check(...) for what you know of it)")


# torch.compile(dynamic=False) patches Dynamo's config to these (torch/_dynamo/eval_frame.py, make_set_enable_dynamic):
# each compile's metrics record the config (dynamo_config), so the log says a function was compiled so.
STATIC_CONFIG = {"automatic_dynamic_shapes": False, "assume_static_by_default": True}
STATIC_WORDS = ("it was compiled with dynamic=False (its compiles' config has automatic dynamic shapes off), so "
                "each new size compiles it again")


def size_advice(sizes: list[tuple[str, str, str]], static: bool = False) -> str:
    """The advice for sizes that changed, naming them: [("x", "0", "")] -> "... torch._dynamo.mark_dynamic(x, 0) ...";
    the third part says where the user's call passed an argument of a library's frame in (", passed in by the call at
    prog.py:32"), else "". static: compiled with dynamic=False, which dynamic=True would contradict: mark the
    dimension, or drop it."""
    if static:
        named = "" if not sizes else f" ({'; '.join(f'{_listed(t)} at index {d}{w}' for t, d, w in sizes[:_SIZES_LISTED])}" + (
            f"; {len(sizes) - _SIZES_LISTED} more)" if len(sizes) > _SIZES_LISTED else ")")
        if len(sizes) == 1:
            how = [_mark_one(*sizes[0][:2])]
            how[0] += "" if how[0].endswith("pass that name") else " before the call"  # (an expression's says where)
        else:
            how = _mark_several(sizes, "mark the dimensions dynamic", " before the call")
        return (f"Sizes change between calls{named}, and {STATIC_WORDS}: {_or_else(how, 'drop dynamic=False')} "
                "(torch then makes a size dynamic once it changes).")
    if not sizes:
        return ADVICE["size"]
    if len(sizes) == 1:
        tensor, dim, where = sizes[0]
        return (f"Sizes change between calls ({_listed(tensor)} at index {dim}{where}): {_mark_one(tensor, dim, 'that')}, or "
                "compile with dynamic=True.")
    listed = "; ".join(f"{_listed(tensor)} at index {dim}{where}" for tensor, dim, where in sizes[:_SIZES_LISTED])
    if len(sizes) > _SIZES_LISTED:
        listed += f"; {len(sizes) - _SIZES_LISTED} more"
    how = _mark_several(sizes, "mark those dimensions dynamic")
    return f"Sizes change between calls ({listed}): {_or_else(how, 'compile with dynamic=True')}."


def _listed(tensor: str) -> str:
    """A tensor as the list of the sizes that changed names it: an expression cut in the middle as the labels above
    the advice cut it (ArgumentName.short: `----…----t`). The list is no code to paste: library_calls_deep's
    470-character expression there was a 478-column line; the whole text stays in the clause that says to name it."""
    return ArgumentName(tensor).short


def _or_else(clauses: list[str], other: str) -> str:
    """The ways to mark the sizes, then the other fix: after one clause ", or ...", after several (each apart, "; ")
    a sentence of its own, ". Or ...", since ", or" after the last read as the other way of that clause alone."""
    return f"{clauses[0]}, or {other}" if len(clauses) == 1 else f"{'; '.join(clauses)}. Or {other}"


def _mark_several(sizes: list[tuple[str, str, str]], mark: str, before: str = "") -> list[str]:
    """How to mark several sizes dynamic, all listed, a clause each: one call in code for each tensor that is a name
    the user can pass, its dimensions together and sorted ("... dynamic: torch._dynamo.mark_dynamic(a, 0) and
    torch._dynamo.mark_dynamic(tokens, [0, 1])": mark_dynamic takes a list), then words for each other tensor (an
    expression, a name of torch's), its dimensions in one clause: a bare "and" between them ran on. Where words
    follow, the calls' clause names its own dimensions ("mark t's dimension 0 dynamic with ..."): "mark those
    dimensions dynamic" said all of them. before (" before the call") follows the calls and torch's names' words (an
    expression's words say where themselves). The placeholder only where not all are listed."""
    if len(sizes) > _SIZES_LISTED:
        return [f"{mark} with torch._dynamo.mark_dynamic(tensor, dim){before}"]
    dims: dict[str, list[str]] = {}
    for tensor, dim, _ in sizes:
        if dim not in dims.setdefault(tensor, []):
            dims[tensor].append(dim)
    calls: list[str] = []
    marked: list[str] = []  # (the calls' dimensions, "t's dimension 0")
    words: list[str] = []
    for tensor, its in dims.items():
        its.sort(key=lambda dim: int(dim) if dim.isdigit() else -1)
        call = _mark_call(tensor, its[0] if len(its) == 1 else f"[{', '.join(its)}]")
        if call is not None:
            calls.append(call)
            which = f"dimension{'s' if len(its) > 1 else ''} {and_list(its)}"
            marked.append(f"{possessive(tensor)} {which}" if tensor.isidentifier() else f"{which} of {tensor}")
        else:
            words.append(_mark_words(tensor, its, before))
    if calls and words:
        return [f"mark {and_list(marked)} dynamic with {and_list(calls)}{before}", *words]
    return [f"{mark}: {and_list(calls)}{before}"] if calls else words


def _mark_call(tensor: str, dim: str) -> str | None:
    """`torch._dynamo.mark_dynamic(t, 0)` where the tensor is a name the user can pass (or an expression that reads one
    object each time: `batch["x"]`); None otherwise. In backticks: the call is code to copy, which the terminal keeps on
    one line and the pages show as code."""
    code = tensor[1:-1] if len(tensor) > 2 and tensor.startswith("`") and tensor.endswith("`") else None
    if tensor.isidentifier() or (code is not None and _same_object_each_time(code)):
        return f"`torch._dynamo.mark_dynamic({code or tensor}, {dim})`"
    return None


def _mark_one(tensor: str, dim: str, which: str = "the") -> str:
    """How to mark one size dynamic, in code only where the tensor is a name the user can pass
    (torch._dynamo.mark_dynamic(t, 0)); an expression their call passes (`torch.randn(n, 4)`) or a name that is no
    variable of theirs (args[0]) in words: a placeholder that looks like code (mark_dynamic(tensor, 0)) is none."""
    call = _mark_call(tensor, dim)
    if call is not None:
        return f"mark {which} dimension dynamic with {call}"
    return _mark_words(tensor, [dim])


def _mark_words(tensor: str, dims: list[str], before: str = "") -> str:
    """How to mark dimensions of a tensor that has no name the user can pass, in words: an expression's ("mark
    dimensions 0 and 1 of the tensor that `e` makes dynamic: ... give it a name before the call"), a name of torch's
    ("... of the tensor passed as forward's x dynamic with torch._dynamo.mark_dynamic", then before)."""
    which = f"dimension{'s' if len(dims) > 1 else ''} {and_list(dims)}"
    code = tensor[1:-1] if len(tensor) > 2 and tensor.startswith("`") and tensor.endswith("`") else None
    if code is not None:
        return (f"mark {which} of the tensor that {tensor} makes dynamic: torch._dynamo.mark_dynamic takes "
                "the tensor, so give it a name before the call, mark it, and pass that name")
    return f"mark {which} of the tensor passed as {tensor} dynamic with torch._dynamo.mark_dynamic{before}"


# A tensor's attributes that make a new tensor each time read (`t.T`): marking one marks none the call passes.
_TENSOR_VIEWS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data", "grad"})


def _same_object_each_time(code: str) -> bool:
    """Whether a call's argument reads one object each time it is evaluated, so marking what it reads before the
    call marks what the call passes: a variable's attribute or its item by a string key (`obj.t`, `batch["x"]`,
    `self.batch['ids']`), not a call (`torch.randn(n, 4)`), a slice (`base[:n]`), or an item by number (`t[0]`, a new
    view where t is a tensor)."""
    try:
        node = ast.parse(code, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    if not isinstance(node, (ast.Attribute, ast.Subscript)):
        return False
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and node.attr in _TENSOR_VIEWS:
            return False
        if isinstance(node, ast.Subscript) and not (isinstance(node.slice, ast.Constant)
                                                    and isinstance(node.slice.value, str)):
            return False
        node = node.value
    return isinstance(node, ast.Name)


def _as_code(tensor: str) -> str:
    """A tensor's name as code in the advice: an expression is in backticks already (`torch.randn(n, 4)`)."""
    return tensor if len(tensor) > 2 and tensor.startswith("`") and tensor.endswith("`") else f"`{tensor}`"


def resumed_size_advice(sizes: list[tuple[str, str, str]], resumed: tuple[str, int], static: bool = False) -> str:
    """The advice for sizes that changed of a resume function's arguments: the locals of the user's function that
    Dynamo passes on past its graph break (h, a local of forward), which the user never passes in, so
    torch._dynamo.mark_dynamic cannot reach them (the tensor Dynamo passes on is a new one each call). What applies is
    the dynamic= option of the compile, or removing the break."""
    listed = "; ".join(f"{_listed(tensor)} at index {dim}" for tensor, dim, _ in sizes[:_SIZES_LISTED]) + (
        f"; {len(sizes) - _SIZES_LISTED} more" if len(sizes) > _SIZES_LISTED else "")
    names, one = _distinct_names(sizes)
    function, line = resumed
    # (the sizes, not the tensors: two dimensions of one local are "them")
    several = len({(tensor, dim) for tensor, dim, _ in sizes}) > 1
    how = ("drop dynamic=False (torch then makes a size dynamic once it changes) or compile with dynamic=True"
           if static else f"compile with dynamic=True to have {'them' if several else 'it'} dynamic from the first "
           "compile (torch makes a size dynamic once it changes)")
    return (f"Sizes change between calls ({listed}){', and ' + STATIC_WORDS if static else ''}. {names} "
            f"{'is a local' if one else 'are locals'} of {function} that Dynamo passes on past its graph break at "
            f"line {line}, not {'a tensor' if one else 'tensors'} you pass in, so "
            f"torch._dynamo.mark_dynamic cannot mark {'it' if one else 'them'}: {how}; or remove that "
            "graph break (Graph breaks says how), and the code after it compiles with the code before it.")


def _distinct_names(sizes: list[tuple[str, str, str]]) -> tuple[str, bool]:
    """The tensors of sizes as code, each once (two dimensions of x are one tensor: "`x`", never "`x` and `x`"), those
    past _SIZES_LISTED counted ("`a`, `b`, `c`, `d` and 1 more": a fifth was dropped unsaid), and whether there is
    one."""
    distinct = list(dict.fromkeys(tensor for tensor, _, _ in sizes))
    named = [_as_code(tensor) for tensor in distinct[:_SIZES_LISTED]]
    if len(distinct) > _SIZES_LISTED:
        named.append(f"{len(distinct) - _SIZES_LISTED} more")
    return and_list(named), len(distinct) == 1


def resumed_parameter_size_advice(sizes: list[tuple[str, str, str]], resumed: tuple[str, int],
                                  static: bool = False) -> str:
    """The advice for sizes that changed of a resume function's arguments that are parameters of the function it
    resumes (f(x), x used after f's graph break): Dynamo passes the resume function the tensor f was passed, so a
    torch._dynamo.mark_dynamic(x, 0) before calling f reaches it, where f passes x on unchanged."""
    function, line = resumed
    names, one = _distinct_names(sizes)
    return (f"{size_advice(sizes, static)} {names} {'is a parameter' if one else 'are parameters'} of {function}, "
            f"which Dynamo passes on past its graph break at line {line}: the mark reaches this function if "
            f"{function} passes {'it' if one else 'them'} on unchanged.")


# A size of a value Dynamo passed into a resume function (___stack0): a tensor the user's code made before the graph
# break, which has no name the user could mark dynamic; automatic dynamic makes it dynamic after one recompile.
STACK_SIZE_ADVICE = (
    "The size that changed (dimension {dim}) is of {what} made before the graph break at {where} and passed on past "
    "it: no input you can mark dynamic; torch made that dimension dynamic after this recompile. To avoid even that "
    "one, remove that graph break (Graph breaks says how), and the code after it compiles with the code before it.")


def stack_size_advice(value: StackValue, dim: str) -> str:
    """The advice for a size of a resume function's ___stack argument that changed, in the user's words."""
    where = (f"{os.path.basename(value.filename)}:{value.line}" if value.filename else f"line {value.line}") + (
        f" (`{value.code}`)" if value.code else "")
    return STACK_SIZE_ADVICE.format(dim=dim, what=f"`{value.call}`" if value.call else "a tensor your code",
                                    where=where)


def library_size_advice(tensor: str, dim: str, code: UserLocation | None, caller: UserLocation | None,
                        made_dynamic: bool, passed: Passed | None = None) -> str:
    """The advice for a size that changed of a value the library made and passed to a frame compiled apart (the
    output dataclass __init__'s `logits`, made by transformers' forward): no tensor of the user's to mark dynamic.
    passed: where the log shows the library function that made it (Passed.made_by: forward, for loss2's pred), that
    function and its line that passed it on are named."""
    # (a resume function by what it is, the rest of the library's function after its graph break: the value is one of
    # that function's locals, carried across the break, not passed in)
    resumed = resume_of(code.function) if code is not None else None
    frame = (f"{function_label(code.function)} ({code.short}, {code_origin(code.filename)})"
             if code is not None and code.function else "this function")
    if resumed and code is not None:
        frame = (f"the rest of {resumed[0]} after its graph break at line {resumed[1]} ({code.short}, "
                 f"{code_origin(code.filename)})")
    call = f" at {caller.short}" if caller is not None else ""
    made = (" torch made that dimension dynamic at this recompile, so later sizes reuse it; to have it dynamic from "
            "the first compile" if made_dynamic else " To have it dynamic from the first compile")
    how = f"carried across the graph break into {frame}" if resumed else f"passed to {frame}"
    maker = f"the code your call{call} runs"
    if passed is not None and passed.made_by and not resumed:
        at = passed.made_at
        line = f" at {at.short}" + (f" (`{at.code}`)" if at.code else "") if at is not None else ""
        maker, how = f"{passed.made_by}, which your call{call} runs,", f"{how}{line}"
    return (f"The size that changed ({tensor} at index {dim}) is of a value {maker} made and {how}, compiled apart "
            f"inside that call: there is no tensor of yours named {tensor} to mark dynamic.{made}, compile with "
            "dynamic=True.")


def marking_call(tree: GuardTree, source: str, dim: str) -> str | None:
    """The call that had marked dimension dim of the tensor at source (`L['x']`) dynamic when the compile whose guard
    tree this is saw it ("torch._dynamo.mark_dynamic"), from its DIMENSION_DYNAMIC_MARKING_GUARD; None: not marked."""
    marked = tree_marked_dims(tree, source)
    return next((call for attr, call in MARKING_CALLS.items() if dim in marked.get(attr, ())), None)


def marked_size_one_advice(guard: FailedGuard, dim: str, size: str) -> str:
    """The advice for a size marked dynamic that torch kept static, its first call's size being 0 or 1."""
    tensor = guard.tensor or "tensor"
    return MARKED_SIZE_ONE_ADVICE.format(
        dim_of=f"{possessive(tensor)} dimension {dim}", call=guard.marked, compile_id=guard.compilation, size=size,
        arg=tensor if tensor.isidentifier() else "tensor", dim=dim)


def flag_advice(guards: list[FailedGuard]) -> list[str]:
    """The advice for Python bools whose value changed (`padded == False`), naming them and the line that reads one;
    a module's `training` flag gets its own (a mode switch is expected)."""
    named = [(m["name"], g) for g in guards if (m := re.match(FLAG, g.guard))]
    modes = [(name, g) for name, g in named if name.endswith(".training")]
    others = [g for g in guards if not any(g is mode for _, mode in modes)]
    advice = []
    if modes:
        advice.append(mode_advice([g for _, g in modes]))
    if others:
        names = list(dict.fromkeys(m["name"] for g in others if (m := re.match(FLAG, g.guard))))
        shown = ", ".join(names[:_SIZES_LISTED]) or "A bool"
        placed = next((g.location for g in others if g.location is not None), None)
        where = f" (read at {placed.short}: {placed.code})" if placed and placed.code else (
            f" (read at {placed.short})" if placed else "")
        advice.append(FLAG_ADVICE.format(names=shown, where=where))
    return advice


def mode_advice(modes: list[FailedGuard], switched: Sequence[str] = (), left_out: int = 0,
                switched_at: Sequence[str] = ()) -> str:
    """MODE_ADVICE for failed guards on modules' training flags, naming their modules; where the lines that switched
    them are known (state_lines), with the other modules those lines switched (switched: their flags, as the guards
    name them; left_out: how many more, not named) and the lines (switched_at: "file.py:54 (`m.training = False`)")."""
    names = list(dict.fromkeys([*(user_source_name(m["name"]) for g in modes if (m := re.match(FLAG, g.guard))),
                                *switched]))
    shown, lines = _with_lines(names, left_out, "switched", switched_at)
    placed = next((g.location for g in modes if g.location is not None), None)
    where = f"; read at {placed.short}" + (f": {placed.code}" if placed.code else "") if placed else ""
    several = len(names) + left_out > 1
    return MODE_ADVICE.format(names=shown, is_="are" if several else "is", whose="modules'" if several else "a module's",
                              where=where + lines)


# A parameter's requires_grad that changed (a frozen layer unfrozen): torch's own hint on it names
# force_parameter_static_shapes, which is about sizes and changes nothing here.
PARAMETER_REQUIRES_GRAD_ADVICE = (
    "{params} changed requires_grad (a layer frozen or unfrozen, requires_grad_(){where}): Dynamo compiles once for "
    "each setting, expected when it changes once (fine-tuning); torch's hint to set force_parameter_static_shapes does "
    "not apply (it is about sizes). Only toggling it back and forth recompiles again and again.")


def parameter_guards(steps: Sequence[RecompileStep]) -> list[str]:
    """The tensors of the steps' first failed guards on requires_grad ("self._modules['fc']._parameters['bias']"),
    where each is a parameter's (PARAMETER_REQUIRES_GRAD_ADVICE's); [] where one is not."""
    tensors = [g.tensor for step in steps for g in step.failed_guards[:1] if g.change == "requires_grad"]
    return [t for t in dict.fromkeys(tensors) if t] if all(t and "._parameters[" in t for t in tensors) else []


def requires_grad_advice(params: Sequence[str], set_: Sequence[str] = (), left_out: int = 0,
                         set_at: Sequence[str] = ()) -> str:
    """PARAMETER_REQUIRES_GRAD_ADVICE for parameter_guards' tensors, naming their parameters; where the lines that
    set them are known (state_lines), with the other parameters those lines set (set_: their requires_grad, as the
    guard trees name them, "self.fc.weight.requires_grad"; left_out: how many more, not named) and the lines (set_at,
    as mode_advice's switched_at)."""
    names = list(dict.fromkeys([*(user_source_name(t) for t in params),
                                *(n.removesuffix(".requires_grad") for n in set_)]))
    shown, lines = _with_lines([f"`{n}`" for n in names], left_out, "set", set_at)
    return PARAMETER_REQUIRES_GRAD_ADVICE.format(params=shown, where=lines)


def _with_lines(names: list[str], left_out: int, verb: str, lines: Sequence[str]) -> tuple[str, str]:
    """The names a mode or requires_grad advice lists (the first _SIZES_LISTED, then how many more, left_out too),
    and what it says of the lines that made the changes: "; switched at file.py:54 (`m.training = False`)", and of
    left_out apart: those changes were never compared with any line (state_lines matches at most MAX_UNSEARCHED of a
    step), so whether these lines made them is not known: ", and 3 more not matched to a line"."""
    more = max(len(names) - _SIZES_LISTED, 0) + left_out
    shown = and_list(names) if not more else f"{', '.join(names[:_SIZES_LISTED])} and {more} more"
    if not lines:
        return shown, ""
    unmatched = f", and {left_out} more not matched to a line" if left_out else ""
    return shown, f"; {verb} at {first_listed(list(lines), shown=_SIZES_LISTED)}{unmatched}"


def compiled_static(entries: list[Compile]) -> bool:
    """Every compile of the frame whose metrics record Dynamo's config had dynamic=False's (STATIC_CONFIG)."""
    configs = [config for e in entries if (config := dynamo_config(e)) is not None]
    return bool(configs) and all(all(c.get(k) is v for k, v in STATIC_CONFIG.items()) for c in configs)


def number_dynamic_failed(names: str, step: RecompileStep, entry: Compile | None, function: str | None) -> str:
    """NUMBER_DYNAMIC_FAILED for the recompile `step`, which made the number dynamic and failed: where (the line its
    failure names, with torch's first line of it) and what to do (a value of .item(): read it outside)."""
    metrics = (entry.metrics if entry is not None else None) or {}
    line = metrics.get("fail_user_frame_lineno")
    filename = metrics.get("fail_user_frame_filename")
    reason = str(metrics.get("fail_reason") or "").strip().splitlines()
    at = (f" at {UserLocation(str(filename), line).short}" if filename and isinstance(line, int) else "") + (
        f" ({reason[0]})" if reason else "")
    return NUMBER_DYNAMIC_FAILED.format(names=names, compile_id=step.compilation, at=at,
                                        function=function_label(function) or "the function",
                                        fix=ITEM_OUTSIDE if ".item()" in names else NUMBER_OUTSIDE)

"""Recompiles: per frame, the chain [0/0] -> [0/1] -> ... with the guard that failed each time; and the backward
graphs compiled autograd captured ([!0], [!1], ...), a new one each time its cache missed.

Sources: `compilation_metrics.recompile_reason` (the guard of the newest cache entry)
and the `recompile_reasons` artifact (one reason per cache entry tried; with a single
reason torch logs the bare string although the encoding says json). Compiled autograd's
`compiled_autograd_compile_reasons` artifact ("!1: Cache miss due to ...", every reason
of that cache so far), which torch logs only with TORCH_LOGS=compiled_autograd_verbose.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import field, replace
from typing import Any

import orjson

from ..model.ids import compilation_key
from ..model.trace import Compile, Trace
from ..wording import and_list, count, format_seconds, possessive, times
from .compile_time import STILL_COMPILING, CompileTimes
from .compiled_frames import CompiledFrames, module_label, wrapped_module
from .errors import RECOMPILE_LIMIT, CompileErrors
from ..lazy_regex import lazy_compile
from .dynamic_shapes import SPECIALIZATION_REASONS, PlacementPart, Specialization, dynamo_config
from .fx_sites import GRAPH_ARTIFACT, first_use
from .graph_breaks import ARTIFACT as GRAPH_BREAK_ARTIFACT, UNTRACED_OBJECT, function_label, skipped_frame
from .installed_guards import (GUARDS_ARTIFACT, enclosing_sources, guard_site, guarded_source, object_type,
                               pinned_lengths, pinned_state, tensor_check, tensor_subclass)
from .stack_values import StackValue, StackValues, name_stack_values
from .userloc import (FRAME_SOURCE, NUMPY_SOURCE, UserLocation, called_at_text, closure_owner, closure_variables,
                      code_origin, is_clipped_torch_file, name_closures,
                      is_torch_file, last_user_frame, last_user_stack_frame, placed_at_call, traceback_frames, user_source_name)
from ..model.records import dataclass

ARTIFACT = "recompile_reasons"
BACKWARD_ARTIFACT = "compiled_autograd_compile_reasons"
BACKWARD_REASONS_HINT = "TORCH_LOGS=compiled_autograd_verbose"  # without it, torch does not log why
# What "[!1]" is, said where a backward graph's label first appears: compile ids carry compiled_autograd_id as "!N/".
BACKWARD_LABEL_HELP = "compiled autograd numbers its backward graphs [!0], [!1], …; its compile ids start with !"
# Patterns below are strings, compiled on first use by re (and kept in its cache): most logs recompile nothing,
# and compiling them all at import was ~1 ms of every report's start-up.
_PREFIX = r"(?s)^\s*(?P<cid>(?:!\d+/)?\d+/\d+):\s?(?P<body>.*)$"
_CLIPPED_LOC = r"#\s+(?P<file>[^\s#]+):(?P<line>\d{1,9}+) in (?P<func>[\w<>.]+)"
_LIMIT = r"(?i)recompile.?limit|cache_size_limit|cache size limit"
_LIMIT_VALUE = r"currently set to (\d{1,9})"
_CONSTANT = r"^[\w.\[\]'\"()]+ (?:==|!=) (?:-?\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\"|True|False|None)$"
# Dynamo's CONSTANT_MATCH on a Python bool (`padded == False`): an int's is `n == 1`, so True/False is a bool's.
# What torch appends to a guard its 0/1 specialization made (the range [2, ...] of a dynamic size), in its comment.
_SIZE_ONE = "due to 0/1 specialization"
_FLAG = r"^(?P<name>[\w.\[\]'\"()]+) (?:==|!=) (?:True|False)$"
# A torch.optim optimizer's hyperparameter, as a guard names it: self.param_groups[0]['lr'], L['opt'].param_groups[1]...
_OPTIMIZER_SETTING = r"\bparam_groups\[\d{1,9}\]\[['\"](?P<key>\w{1,100})['\"]\]"

# What changed between calls, from the guard text torch writes (C++ guard messages and Python guard code).
CHANGE_RULES: tuple[tuple[str, str], ...] = (
    # A traceable tensor subclass's metadata (what its __tensor_flatten__ returned beside the inner tensors' names),
    # checked by a Python lambda torch names `___check_metadata_<id>_c<compile id>` (torch/_dynamo/guards.py).
    ("subclass_metadata", r"___check_metadata_"),
    ("size", r"size mismatch"),
    ("stride", r"stride mismatch"),
    ("dtype", r"dtype mismatch"),
    ("requires_grad", r"requires_grad mismatch"),
    ("device", r"(?i)device (?:index )?mismatch"),
    ("rank", r"rank mismatch"),
    ("dispatch_keys", r"dispatch key set mismatch"),
    ("global_state", r"(?i)GLOBAL_STATE|global state"),
    ("type", r"___check_type_id|type mismatch|isinstance\("),
    ("object_identity", r"___check_obj_id|\bid\("),
    # A function's **kwargs: Dynamo guards on how many keyword arguments a call passes and which
    # (`len(kwargs) == 6`, `not ___dict_contains('return_dict', kwargs)`); before "length", which is a list's.
    ("keyword_arguments", r"\blen\((?:L\[['\"])?kwargs\b|___dict_contains\([^)]*,\s*(?:L\[['\"])?kwargs\b"),
    # Its *args: how many positional arguments a call passes (`len(args) == 2`: model(ids), where generate() calls
    # model(input_ids=...)); also before "length", which would say to pad a list.
    ("positional_arguments", r"^\s*len\((?:L\[['\"])?args(?:['\"]\])?\)\s*=="),
    # Dynamo's LENGTH_CHECK is `len(x) == N`, and `not x` where N is 0 (an empty list or dict).
    ("length", r"\blen\(|^\s*not [GL]\["),
    ("shape_guard", r"\.size\(\)|\.stride\(\)|\.storage_offset\(\)|\bs\d+\b"),
)

CHANGE_LABELS = {
    "size": "tensor size",
    "stride": "tensor stride",
    "dtype": "tensor dtype",
    "requires_grad": "requires_grad",
    "device": "device",
    "rank": "tensor rank",
    "dispatch_keys": "dispatch keys (grad mode, autocast, ...)",
    "global_state": "global state (grad mode, autocast, ...)",
    "type": "object type",
    "object_identity": "object identity",
    "keyword_arguments": "keyword arguments",
    "positional_arguments": "number of positional arguments",
    "length": "container length",
    "shape_guard": "symbolic shape guard",
    "size_one": "size (to 0 or 1)",
    "constant": "Python constant",
    "flag": "Python bool",
    "optimizer_setting": "optimizer hyperparameter",
    "subclass_metadata": "tensor subclass metadata",
    "other": "other guard",
}

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

# A NumPy array the compiled function takes is guarded as the tensor Dynamo makes of it, `___from_numpy(a)`
# (userloc.NUMPY_SOURCE); its failed dtype check names torch's dtypes ("expected Float, actual
# Double"), said as NumPy names them.
_TORCH_DTYPE_WORDS = lazy_compile(r"(?<=expected )(?P<expected>\w{1,40}), actual (?P<actual>\w{1,40})")
NUMPY_DTYPES = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16", "Int": "int32",
                "Long": "int64", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
                "ComplexFloat": "complex64", "ComplexDouble": "complex128"}
NUMPY_DTYPE_ADVICE = ("NumPy {arrays} {names} arrive{s} as {dtypes}, and each dtype is compiled apart: convert to one "
                      "dtype before the call (`.astype(np.{first})`; NumPy makes float64 unless told, as np.random.rand "
                      "and np.array of Python floats do), or pass torch tensors of one dtype.")


def numpy_array(tensor: str | None) -> str | None:
    """The NumPy array a tensor name of Dynamo's stands for (`___from_numpy(a)`: "a"); None for any other."""
    m = NUMPY_SOURCE.fullmatch(tensor or "")
    return FRAME_SOURCE.sub(r"\1", m["source"]) if m else None


def numpy_words(guard: str) -> str:
    """A failed check of a NumPy array in NumPy's words: "tensor '___from_numpy(a)' dtype mismatch. expected Float,
    actual Double" reads "NumPy array 'a' dtype mismatch. expected float32, actual float64"."""
    said = NUMPY_SOURCE.sub(lambda m: FRAME_SOURCE.sub(r"\1", m["source"]), guard)
    if said == guard:
        return guard
    said = re.sub(r"^tensor '", "NumPy array '", said)
    if " dtype mismatch" in said:
        said = _TORCH_DTYPE_WORDS.sub(lambda m: f"{NUMPY_DTYPES.get(m['expected'], m['expected'])}, actual "
                                                f"{NUMPY_DTYPES.get(m['actual'], m['actual'])}", said)
    return said


def numpy_dtype_advice(guards: list[FailedGuard]) -> str | None:
    """The advice for dtype checks that failed, where each is of a NumPy array the function takes; None otherwise."""
    arrays = [numpy_array(g.tensor) for g in guards]
    if not guards or not all(arrays):
        return None
    dtypes: list[str] = []
    for g in guards:
        m = _TORCH_DTYPE_WORDS.search(g.guard)
        if m:
            dtypes.extend(NUMPY_DTYPES.get(d, d) for d in (m["expected"], m["actual"]))
    dtypes = list(dict.fromkeys(dtypes))
    names = list(dict.fromkeys(f"`{a}`" for a in arrays))
    return NUMPY_DTYPE_ADVICE.format(arrays="arrays" if len(names) > 1 else "array", names=and_list(names),
                                     s="" if len(names) > 1 else "s", dtypes=and_list(dtypes) or "different dtypes",
                                     first=dtypes[0] if dtypes else "float32")


# What a failed guard's location is, and the words that precede it where it is shown.
LOCATION_KINDS = {
    "guard": "at",  # the line that made the guard (torch's comment on it, or its user stack)
    "first_use": "{tensor} first used at",  # where the compile whose guard failed first used the tensor
    "function": "{tensor} is an input of the compiled function at",  # nothing finer: the function's def line
    # The compiled frame and the tensor's first use are both torch's (DDP's `inner`, a compiled module's wrapper):
    # the user's line that called it is where the tensor came in.
    "call": "{tensor} passed in by the call at",
    # How many arguments, or which keywords, a call of a library's frame passes (transformers' wrapped_func, whose
    # guard torch places in the decorator's own code): the user's call that passed them so.
    "arguments_call": "arguments passed by the call at",
    # A global state guard (grad mode) names nothing of the code: the user's line that called under the other state.
    "state_call": "called under the new state from",
}
# What each part of a failed GLOBAL_STATE guard ("GLOBAL_STATE changed: grad_mode ") is, in the API that sets it
# (torch/csrc/dynamo/guards.cpp, GlobalStateGuard::reason).
GLOBAL_STATES = {
    "grad_mode": "grad mode (torch.no_grad(), torch.inference_mode(), torch.enable_grad())",
    "torch_function": "torch function mode",
    "deterministic_algorithms": "torch.use_deterministic_algorithms()",
    "allow_tf32": "the TF32 setting (torch.backends.cudnn.allow_tf32)",
    "allow_tf32_cublas": "the TF32 matmul setting (torch.backends.cuda.matmul.allow_tf32)",
    "allow_fp16_reduce": "the reduced-precision fp16 reduction setting",
    "allow_bf16_reduce": "the reduced-precision bf16 reduction setting",
    "num_threads": "torch.set_num_threads()",
    "default_dtype": "torch.set_default_dtype()",
}
_GLOBAL_STATE_PARTS = r"GLOBAL_STATE changed:(?P<parts>[\w ]*)"
STATE_ADVICE = ("Calls run under a different {states}{where}: Dynamo guards on it and compiles once for each. Call the "
                "compiled function under one setting everywhere (the same torch.inference_mode() or torch.no_grad() "
                "around every call), or keep the odd call out of the compiled function.")
# Where every recompile for the state came with a setting no compiled version had (RecompileStep.expected: eval() for a
# validation call under torch.no_grad()), the call under the other state is on purpose: advising one setting everywhere
# would remove the validation. What it costs instead.
STATE_EXPECTED_ADVICE = ("Calls run under a different {states}{where}: Dynamo guards on it and compiles once for each. "
                         "Expected here, as the same calls switched {why}: it costs one compile for the new setting, "
                         "which later calls under it reuse, so there is nothing to remove.")
# Where some of a state's recompiles were expected and others not (module_state: [0/3] the validation's eval(), [0/4]
# back to train() with [0/2]'s settings, [0/2] failing on a list's length), each said as what it is: one setting
# everywhere would remove the validation, and does not fix a recompile that another guard made.
STATE_MIXED_ADVICE = "Calls run under a different {states}{where}: Dynamo guards on it and compiles once for each. {each}"
STATE_EXPECTED_PART = ("{ids} {is_} expected, as {its} call switched {why}: one compile for the new setting, which "
                       "later calls under it reuse, so there is nothing to remove.")
STATE_SAME_SETTINGS_PART = ("{id} is avoidable: {same} had its settings (modules' modes, parameters' requires_grad) and "
                            "failed on {guard}: that guard made it recompile, not the state, so its fix is that guard's.")
STATE_AVOIDABLE_PART = ("{ids} {is_} avoidable: call the compiled function under one setting everywhere (the same "
                        "torch.inference_mode() or torch.no_grad() around every call), or keep the odd call out of the "
                        "compiled function.")
STATE_UNKNOWN_PART = "{ids}: expected or avoidable, the log cannot tell ({unknown} has no guard tree to compare settings with)."
# What a call switched, where a state recompile was expected (a key of EXPECTED), for STATE_EXPECTED_ADVICE.
EXPECTED_SWITCH = {"training": "a module's mode (.eval() or .train())",
                   "requires_grad": "a parameter's requires_grad (a layer frozen or unfrozen)"}
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


# A length guard's container, in either form of Dynamo's LENGTH_CHECK: "len(G['history']) == 2", "not G['history']".
_LENGTH_SUBJECT = r"^\s*(?:len\((?P<len>.+)\)\s*==\s*\d+|not (?P<not>.+?))\s*$"
_GLOBAL_NAME = r"^G\[['\"](?P<name>[^'\"]+)['\"]\]$"
SIDE_EFFECTS_ARTIFACT = "dynamo_side_effects"  # what the compiled code changes that outlives it, with the line that does
_MUTATION = r"Mutating object of type (?P<type>\w+) \(source name: (?P<source>[^)\n]+)\)(?P<stack>(?:\n[ \t]+.*|\n)*)"
GLOBAL_MUTATED_ADVICE = (
    "The compiled code changes the global {type} {name} itself ({where}, a change torch logged), and Dynamo guards on "
    "its length, {history}. {fix}")
KEEP_OUT = "Keep that bookkeeping out of the compiled function (in the code that calls it)."
# A length that changed and then stayed (a dict's first key, set once): what it cost is paid, and the way to spare it.
SETTLED_LENGTH_FIX = ("To spare even that, give it its {what} before the first compiled call, or keep that bookkeeping "
                      "out of the compiled function (in the code that calls it).")
# A variable of a function's closure (`seen` of `counter`'s), which the compiled code appends to: no argument to pad,
# but state the compiled function reads and grows, so each new length compiles again.
CLOSURE_MUTATED_ADVICE = (
    "The compiled code changes the {type} `{name}` itself, a variable of {owner}'s closure ({where}, a change torch "
    "logged), and Dynamo guards on its length, {history}. It is not an argument to pad: don't grow state the compiled "
    "function reads. Keep that bookkeeping in the code that calls the function, and where the function needs the "
    "count, pass it in as a tensor.")
CLOSURE_LENGTH_ADVICE = ("`{name}`, a variable of {owner}'s closure, changes length between calls, and Dynamo guards "
                         "on its length: keep it the same while the function runs compiled, or pass what the function "
                         "needs of it in as a tensor.")
GLOBAL_LENGTH_ADVICE = ("The global {name} changes length between calls, and Dynamo guards on its length: keep it "
                        "the same while the function runs compiled, or hold its contents in a tensor.")

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
        named = "" if not sizes else f" ({'; '.join(f'{t} at index {d}{w}' for t, d, w in sizes[:_SIZES_LISTED])}" + (
            f"; {len(sizes) - _SIZES_LISTED} more)" if len(sizes) > _SIZES_LISTED else ")")
        arg, dim = sizes[0][:2] if len(sizes) == 1 else ("tensor", "dim")
        arg = arg if arg.isidentifier() else "tensor"
        return (f"Sizes change between calls{named}, and {STATIC_WORDS}: mark the dimension dynamic with "
                f"torch._dynamo.mark_dynamic({arg}, {dim}) before the call, or drop dynamic=False (torch then makes a "
                "size dynamic once it changes).")
    if not sizes:
        return ADVICE["size"]
    if len(sizes) == 1:
        tensor, dim, where = sizes[0]
        arg = tensor if tensor.isidentifier() else "tensor"
        return (f"Sizes change between calls ({tensor} at index {dim}{where}): mark that dimension dynamic with "
                f"torch._dynamo.mark_dynamic({arg}, {dim}), or compile with dynamic=True.")
    listed = "; ".join(f"{tensor} at index {dim}{where}" for tensor, dim, where in sizes[:_SIZES_LISTED])
    if len(sizes) > _SIZES_LISTED:
        listed += f"; {len(sizes) - _SIZES_LISTED} more"
    return (f"Sizes change between calls ({listed}): mark those dimensions dynamic with "
            "torch._dynamo.mark_dynamic(tensor, dim), or compile with dynamic=True.")


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


def marking_call(tree: str, source: str, dim: str) -> str | None:
    """The call that had marked dimension dim of the tensor at source (`L['x']`) dynamic when the compile whose guard
    tree this is saw it ("torch._dynamo.mark_dynamic"), from its DIMENSION_DYNAMIC_MARKING_GUARD; None: not marked."""
    for attr, call in MARKING_CALLS.items():
        head = f"(getattr({source}, '{attr}', set()).issubset({{"
        at = tree.find(head)
        end = tree.find("})", at) if at >= 0 else -1
        if end >= 0 and dim in (d.strip() for d in tree[at + len(head):end].split(",")):
            return call
    return None


def marked_size_one_advice(guard: FailedGuard, dim: str, size: str) -> str:
    """The advice for a size marked dynamic that torch kept static, its first call's size being 0 or 1."""
    tensor = guard.tensor or "tensor"
    return MARKED_SIZE_ONE_ADVICE.format(
        dim_of=f"{possessive(tensor)} dimension {dim}", call=guard.marked, compile_id=guard.compile_id, size=size,
        arg=tensor if tensor.isidentifier() else "tensor", dim=dim)


def changed_states(guard: str) -> list[str]:
    """The global states a failed GLOBAL_STATE guard names, for people: ["grad mode (torch.no_grad(), ...)"]."""
    m = re.search(_GLOBAL_STATE_PARTS, guard)
    return [GLOBAL_STATES.get(part, part) for part in (m["parts"].split() if m else [])]


def flag_advice(guards: list[FailedGuard]) -> list[str]:
    """The advice for Python bools whose value changed (`padded == False`), naming them and the line that reads one;
    a module's `training` flag gets its own (a mode switch is expected)."""
    named = [(m["name"], g) for g in guards if (m := re.match(_FLAG, g.guard))]
    modes = [(name, g) for name, g in named if name.endswith(".training")]
    others = [g for g in guards if not any(g is mode for _, mode in modes)]
    advice = []
    if modes:
        names = list(dict.fromkeys(user_source_name(name) for name, _ in modes))
        placed = next((g.location for _, g in modes if g.location is not None), None)
        advice.append(MODE_ADVICE.format(
            names=and_list(names[:_SIZES_LISTED]), is_="is" if len(names) == 1 else "are",
            whose="a module's" if len(names) == 1 else "modules'",
            where=f"; read at {placed.short}" + (f": {placed.code}" if placed.code else "") if placed else ""))
    if others:
        names = list(dict.fromkeys(m["name"] for g in others if (m := re.match(_FLAG, g.guard))))
        shown = ", ".join(names[:_SIZES_LISTED]) or "A bool"
        placed = next((g.location for g in others if g.location is not None), None)
        where = f" (read at {placed.short}: {placed.code})" if placed and placed.code else (
            f" (read at {placed.short})" if placed else "")
        advice.append(FLAG_ADVICE.format(names=shown, where=where))
    return advice


def _caller(stack: list | None) -> UserLocation | None:
    """The user's line that called the compiled frame: Dynamo's stack ends with the frame it compiles, not a call."""
    return last_user_stack_frame(stack[:-1]) if stack else None


def compiled_static(entries: list[Compile]) -> bool:
    """Every compile of the frame whose metrics record Dynamo's config had dynamic=False's (STATIC_CONFIG)."""
    configs = [config for e in entries if (config := dynamo_config(e)) is not None]
    return bool(configs) and all(all(c.get(k) is v for k, v in STATIC_CONFIG.items()) for c in configs)


@dataclass
class FailedGuard:
    """A guard of a cached compilation that failed, so that the frame was compiled again."""

    compile_id: str | None  # the cached compilation whose guard failed, e.g. "[0/1]"
    guard: str  # the failing check as torch printed it
    change: str  # a key of CHANGE_LABELS
    location: UserLocation | None = None
    text: str = ""  # as torch wrote it
    # A check of a tensor that failed (`tensor 'x' size mismatch ...`): the tensor as torch names it ("x",
    # "kwargs['input_ids']"). Its guard's text names no line; location is then where the compile whose guard failed
    # first used the tensor (its TENSOR_MATCH guard's line), else the compiled function the tensor came into. Also
    # the tensor whose size a 0/1 specialization's guard names, placed at the size's first use.
    tensor: str | None = None
    location_kind: str = "guard"  # a key of LOCATION_KINDS: what location is
    # The tensor is one of a transformers KV cache's: the cache object ("kwargs['past_key_values']") and its class
    # ("DynamicCache"), as the guarded compile's guard tree types it.
    cache_source: str | None = None
    cache_class: str | None = None
    # A size check that failed where the guarded compile saw the dimension marked dynamic, at a size of 0 or 1 (so
    # torch kept it static): the call that marked it ("torch._dynamo.mark_dynamic").
    marked: str | None = None
    # The names of the guard that Dynamo made (a resume function's ___stack0), in the user's words
    # (StackValues.guard_names): name -> words. {} where it names none.
    names: dict[str, str] = field(default_factory=dict)
    # The tensor in the user's words where it is a name Dynamo made (a resume function's ___stack0: "the value on the
    # stack at line 36's graph break", StackValues.short); None where tensor is the user's own name.
    tensor_text: str | None = None
    # A guard on a tensor subclass: its class ("ScaledTensor"), the object in the user's words ("self.weight", "x"),
    # and for its metadata (subclass_metadata), the values __tensor_flatten__ returned for the guarded compile and
    # for this call ("{'scale': 0.5}", "{'scale': 0.25}"), where the log describes them.
    subclass: str | None = None
    subclass_object: str | None = None
    metadata_before: str | None = None
    metadata_after: str | None = None

    @property
    def described(self) -> str | None:
        """The guard with Dynamo's names in the user's words ("the value of `loss.item()` (item_break.py:19), passed
        on past the graph break, == -1.3068742752075195", "NumPy array 'a' dtype mismatch. expected float32, actual
        float64"); None where it names none: guard says it."""
        if self.change == "subclass_metadata" and self.subclass_object:
            values = (f": {self.metadata_before}, now {self.metadata_after}"
                      if self.metadata_before and self.metadata_after else "")
            return f"metadata of {self.subclass_object} ({self.subclass}, from its __tensor_flatten__) changed{values}"
        said = name_stack_values(self.guard, self.names) if self.names else self.guard
        said = numpy_words(said)  # (a NumPy array's: as NumPy names it)
        said = name_closures(said, self.closures)  # (a closure's variable: `seen`, as torch's hint names it)
        return said if said != self.guard else None

    @property
    def closures(self) -> dict[str, str]:
        """The closure variables the guard checks, by cell, as torch's hint in its text names them ({} for none)."""
        return closure_variables(self.text) if "cell_contents" in self.guard else {}

    @property
    def shown(self) -> str:
        """The guard as the views show it: described, else as torch wrote it (guard, which they keep at hand)."""
        return self.described or self.guard

    @property
    def marked_size(self) -> str | None:
        """The size, 0 or 1, a dimension marked dynamic had when the guarded compile saw it (the check's "expected
        1"), which torch kept static; None where the dimension was not marked."""
        size = _SIZE_GUARD.match(self.guard) if self.marked else None
        return size["size"] if size else None

    @property
    def change_label(self) -> str:
        return CHANGE_LABELS[self.change]

    @property
    def location_label(self) -> str:
        """What precedes the location when it is shown: "at", "kwargs['input_ids'] first used at", ..."""
        array = numpy_array(self.tensor)
        # (a module's parameter in the user's words: self.backbone.bias, not torch's self._modules['backbone']...)
        return LOCATION_KINDS[self.location_kind].format(
            tensor=self.tensor_text or (f"NumPy array {array}" if array
                                        else user_source_name(self.tensor) if self.tensor else self.tensor))

    @property
    def cache_text(self) -> str | None:
        """"a tensor of transformers' KV cache: kwargs['past_key_values'] is a DynamicCache", for people."""
        if self.cache_class is None:
            return None
        return f"a tensor of transformers' KV cache: {self.cache_source} is a {self.cache_class}"

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "guard": self.guard, "change": self.change,
                "location": self.location.to_json() if self.location else None, "text": self.text,
                "tensor": self.tensor, "tensor_text": self.tensor_text, "location_kind": self.location_kind,
                "cache_source": self.cache_source, "cache_class": self.cache_class, "described": self.described,
                "marked": self.marked, "subclass": self.subclass, "subclass_object": self.subclass_object,
                "metadata_before": self.metadata_before, "metadata_after": self.metadata_after}


def _rounded(seconds: float | None) -> float | None:
    return round(seconds, 6) if seconds is not None else None


# What a change of module state found by comparing guard trees means, by the attribute that changed.
_HOOK_KINDS = {"_forward_hooks": "forward hook", "_forward_pre_hooks": "forward pre-hook",
               "_backward_hooks": "backward hook", "_backward_pre_hooks": "backward pre-hook"}
# A parameter's requires_grad that changed (a frozen layer unfrozen): torch's own hint on it names
# force_parameter_static_shapes, which is about sizes and changes nothing here.
PARAMETER_REQUIRES_GRAD_ADVICE = (
    "{params} changed requires_grad (a layer frozen or unfrozen, requires_grad_()): Dynamo compiles once for each "
    "setting, expected when it changes once (fine-tuning); torch's hint to set force_parameter_static_shapes does "
    "not apply (it is about sizes). Only toggling it back and forth recompiles again and again.")
# One line of the user's calls the function with a tensor that needs no grad, then with one that does: `x = block(x)`
# in a loop over modules gives the first the data and the next the first one's output, computed with its parameters.
SAME_CALL_REQUIRES_GRAD_ADVICE = (
    "{function} was compiled as {compiles} for calls from the same line, {where}{code}: {tensors} did not require "
    "grad, then did{chained}. Dynamo compiles once for each requires_grad setting, and each compile serves every later "
    "call with its setting: expected, not a training/inference split, and mark_dynamic or dynamic=True does not apply "
    "(requires_grad is not a size). Only making the input require grad ({first}.requires_grad_()) would spare a "
    "compile, at the cost of computing its gradient in every backward: rarely worth it.")
CHAINED_CALL = (": the line passes each call what the call before returned, so the first gets your input, which "
                "needs no grad, and the next ones an output computed with parameters that require grad")
# `x = block(x)`: a call given back what it returned (the assigned name is among its arguments).
_CHAINED_CALL = r"^\s*(?P<name>\w+)\s*=\s*[\w.\[\]]+\((?:[^()]*,\s*)?(?P=name)\s*[,)]"
HOOK_ADVICE = ("A hook was registered on {modules} after the function was compiled: Dynamo had not guarded on "
               "hooks there, so a compiled call runs without the hook until another change recompiles the function "
               "(here {compile_ids}). Register hooks before the first compiled call (or call torch._dynamo.reset() "
               "after registering one).")


# The settings a program switches on purpose, each compiled once (StateChange.kind; a parameter's requires_grad only):
# a recompile to one that no compiled version had is expected; to one a compiled version had, avoidable.
EXPECTED = {
    "training": "a module's mode no compiled version had (.eval() or .train(): one compile per mode)",
    "requires_grad": "a parameter's requires_grad no compiled version had (a layer frozen or unfrozen: one compile "
                     "per setting)",
    "input_requires_grad": "the same call passed a tensor that requires grad where it had passed one that does not "
                           "(one compile per setting)",
}


def _is_count(value: str) -> bool:
    """A number of hooks as pinned_state counts them ("0", "2"), which int() reads: not a value a guard pinned."""
    return value.isascii() and value.isdigit() and len(value) < 10


@dataclass
class StateChange:
    """A value the guarded compile's guards fixed that the recompile's guards fix differently (the module's mode,
    a parameter's requires_grad, how many hooks a module has): changed too, though torch names only the first
    failing guard of each cache entry."""

    source: str  # as the guard tree names it: L['self']._modules['dropout'].training; len(G['history']) for a length
    before: str
    after: str
    # The closure variables the tree names by their cells (installed_guards: torch's hint): `seen` for
    # G['counter'].__closure__[0].cell_contents.
    closures: dict[str, str] = field(default_factory=dict)

    @property
    def of(self) -> str:
        """The source whose state it is: the container of a length (G['history'] of len(G['history']))."""
        return self.source[4:-1] if self.kind == "length" else self.source

    @property
    def name(self) -> str:
        """The object in the user's words: self.dropout.training, self.head (for its hooks), seen (a closure's)."""
        hooks = next((k for k in _HOOK_KINDS if self.source.endswith("." + k)), None)
        of = self.source[:-len(hooks) - 1] if hooks else self.of
        return name_closures(of, self.closures) if self.closures else user_source_name(of)

    @property
    def kind(self) -> str:
        """"hook" (a count of a module's hooks, pinned_state's), "training", "requires_grad", "length" (a list's, a
        dict's) or "value"."""
        if self.source.startswith("len(") and self.source.endswith(")"):
            return "length"
        if any(self.source.endswith("." + k) for k in _HOOK_KINDS) and _is_count(self.before) and _is_count(self.after):
            return "hook"
        return next((k for k in ("training", "requires_grad") if self.source.endswith("." + k)), "value")

    @property
    def hooks_now(self) -> str:
        """Of a change of kind "hook", the count after it in words: "1 forward hook"."""
        return count(int(self.after), next(v for k, v in _HOOK_KINDS.items() if self.source.endswith("." + k)))

    @property
    def detail(self) -> str:
        """What changed of name, and what that means: " True → False (.eval() or .train(): ...)", ": 1 forward hook
        now, none before (...)"."""
        if self.kind == "hook":
            before = "none" if self.before == "0" else self.before
            return (f": {self.hooks_now} now, {before} before (registered after compiling: a compiled "
                    "call runs without it until something recompiles the function)")
        if self.kind == "length":
            return f": length {self.before} → {self.after}"
        said = f" {self.before} → {self.after}"
        if self.kind == "training":
            return said + " (.eval() or .train(): one compile per mode, expected)"
        if self.kind == "requires_grad" and "._parameters[" in self.source:
            return said + " (requires_grad_(): freezing or unfreezing, one compile per setting, expected)"
        return said

    @property
    def text(self) -> str:
        """"self.dropout.training True → False (.eval() or .train(): one compile per mode, expected)", for people."""
        return self.name + self.detail

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "name": self.name, "kind": self.kind, "before": self.before,
                "after": self.after, "text": self.text}


def state_changes(old: dict[str, str], new: dict[str, str]) -> list[StateChange]:
    """The values the guard tree before fixed (its pinned_state, old) that the tree after fixes differently (a value
    only one of them fixes, a number made dynamic, is no change of state)."""
    return [StateChange(k, old[k], v) for k, v in new.items() if k in old and old[k] != v]


def tree_lengths(lengths: dict[str, int]) -> dict[str, str]:
    """A guard tree's pinned_lengths as state_changes compares them, beside its pinned_state: `len(G['history'])` ->
    "3" (a list the compiled code appends to grows at every call, and torch names only the first failing guard: a
    config field that changed too hides it)."""
    return {f"len({k})": str(n) for k, n in lengths.items()}


@dataclass
class RecompileStep:
    """One recompilation and the guards whose failure caused it."""

    compile_id: str  # the recompilation, e.g. "[0/2]"
    failed_guards: list[FailedGuard]  # newest cache entry first, as torch lists them
    failed: bool = False  # this recompilation itself failed (e.g. the limit)
    # A size guard that failed because the compile it guards had specialized that size to one value (a line there
    # fixed it): the specialization, from the dynamic-shapes analysis (link_specializations).
    specialized: Specialization | None = None
    # The symbol this recompilation made of the size or number whose guard failed (torch's automatic dynamic: "s27"),
    # and of what: "x's dimension 0", or the number's name ("n").
    dynamic_symbol: str | None = None
    dynamic_of: str = ""
    attribute: bool = False  # the number is an object's attribute (`self.step`), not a local
    # When it happened, from the compile-time timeline (link_times): seconds from the log's first record to its start,
    # since the frame's compile before it ended (how long the function ran compiled before a call failed a guard), and
    # what compiling it took. None where the log has no time for it.
    started_s: float | None = None
    quiet_s: float | None = None
    cost_s: float | None = None
    unfinished: bool = False  # the log ends during it: cost_s is the time it had run so far
    # What else changed between the compile whose guard failed and this one (state_changes): torch logs one failing
    # guard per cache entry, and a mode switched or a hook registered at the same time is not among them.
    also_changed: list[StateChange] = field(default_factory=list)
    # Why the recompile was expected (a key of EXPECTED): the program switched its model to a setting no compiled
    # version had (eval(), a layer unfrozen), which compiles once per setting whatever else it does; None: avoidable,
    # as some compiled version had the same settings and failed for something else (or the log cannot tell).
    expected: str | None = None
    # Where the newest cached compile had other settings (so torch's reason reads as expected: eval()) yet an older
    # one had the same: that one's failed guard, which made this recompile avoidable (a list's length, after train()).
    same_settings: FailedGuard | None = None
    # Where no compile torch tried is known to have had the recompile's settings and one of them, or the recompile
    # (one that did not fail), has no guard tree in the log (dynamo_cpp_guards_str: older torch logs none): that
    # compile. Whether the recompile was expected the log cannot tell, and it is not counted avoidable.
    unknown_settings: str | None = None

    @property
    def expected_text(self) -> str | None:
        """"expected: a module's mode no compiled version had (.eval() or .train(): one compile per mode)", or
        "avoidable: [0/2] had the same settings ... and failed on len(G['activations']) == 1"."""
        if self.expected:
            return f"expected: {EXPECTED[self.expected]}"
        if self.unknown_settings:
            return (f"expected or avoidable: the log cannot tell ({self.unknown_settings} has no guard tree to "
                    "compare settings with)")
        same = self.same_settings
        if same is None:
            return None
        return (f"avoidable: {same.compile_id} had these settings (modules' modes, parameters' requires_grad) and "
                f"failed on {same.shown}")

    @property
    def when_text(self) -> str | None:
        """"at 97.31 s, 13.02 s after [0/3] was compiled; took 12.63 s", for people: a recompile long after the one
        before is one a service meets in production, after its warm-up. One the log ends during took no time it
        knows: "...; still compiling when the log ended, 1.17 s in"."""
        if self.started_s is None:
            return None
        text = f"at {format_seconds(self.started_s)} into the log"
        if self.quiet_s is not None and self.previous is not None:
            text += f", {format_seconds(self.quiet_s)} after {self.previous} was compiled"
        if self.unfinished:
            text += f"; {STILL_COMPILING}" + (f", {format_seconds(self.cost_s)} in" if self.cost_s is not None else "")
        elif self.cost_s is not None:
            text += f"; took {format_seconds(self.cost_s)}"
        return text

    previous: str | None = None  # the frame's compile before this one ("[0/3]")

    @property
    def guard(self) -> FailedGuard | None:
        return self.failed_guards[0] if self.failed_guards else None

    @property
    def dynamic_text(self) -> str | None:
        """"[0/1] compiled x's dimension 0 as dynamic (s27)", "[1/1] compiled n as dynamic (s86)", for people."""
        return (f"{self.compile_id} compiled {self.dynamic_of} as dynamic ({self.dynamic_symbol})"
                if self.dynamic_symbol else None)

    def to_json(self) -> dict[str, Any]:
        g = self.guard
        return {"compile_id": self.compile_id, "change": g.change if g else None, "guard": g.guard if g else None,
                "failed": self.failed, "failed_guards": [f.to_json() for f in self.failed_guards],
                "specialized": self.specialized.to_json() if self.specialized else None,
                "dynamic_symbol": self.dynamic_symbol, "started_s": _rounded(self.started_s),
                "quiet_s": _rounded(self.quiet_s), "cost_s": _rounded(self.cost_s), "unfinished": self.unfinished,
                "previous": self.previous, "also_changed": [c.to_json() for c in self.also_changed],
                "expected": self.expected, "unknown_settings": self.unknown_settings,
                "same_settings": self.same_settings.to_json() if self.same_settings else None}

    @property
    def specialized_placement(self) -> list[PlacementPart]:
        """"[0/2] had specialized s27 = 8 (its range narrowed to one value) at prog.py:3", for people, in parts (words,
        then the location they lead to); [] where no specialization caused it. Where torch logged no line for it: what
        was read, and the user's line that called the function that read it ("...: lr, read as
        self.param_groups[0]['lr'] by step, called at prog.py:24")."""
        spec = self.specialized
        if spec is None:
            return []
        why = SPECIALIZATION_REASONS.get(spec.reason or "", spec.reason)
        text = f"{spec.compile_id} had specialized {spec.symbol} = {spec.value}" + (f" ({why})" if why else "")
        read = spec.read_text
        text += f": {read}" if read else ""
        if spec.location is None:
            return [PlacementPart(text)]
        return [PlacementPart(text + (", called at " if read else " at "), spec.location)]


@dataclass
class FrameRecompiles:
    """The recompilations of one frame (code object), in order, with what changed and advice."""

    frame_id: int | None
    name: str | None  # co_name
    filename: str | None
    first_line: int | None
    chain: list[str]  # compile ids in order: ["[0/0]", "[0/1]", ...]
    steps: list[RecompileStep]
    hit_limit: bool = False
    limit: int | None = None
    changes: list[str] = field(default_factory=list)  # kinds of change, most frequent first
    advice: list[str] = field(default_factory=list)
    # When the frame is not the user's code (torch's `inner` wrapping a compiled nn.Sequential, say): the user's lines
    # that called it, which is what the user knows it by, in the order its compiles came from them (a model's forward
    # compiled from a loop's line, then recompiled from generate()'s).
    called_from: list[UserLocation] = field(default_factory=list)
    # Where the frame is torch's `inner` running a module (compiled_frames.wrapped_module): the module's class
    # ("Sequential", the model DDP calls): what the user compiled, and so what the frame is named by.
    module: str | None = None

    @property
    def short(self) -> str | None:
        """`file.py:23`, where the frame's code starts (the full path goes in a title); None: no file logged."""
        return f"{os.path.basename(self.filename)}:{self.first_line}" if self.filename else None

    @property
    def called_at(self) -> str:
        """"prog.py:20, 22": where the user's code called it ("" for the user's own function)."""
        return called_at_text(self.called_from)

    @property
    def recompiles(self) -> int:
        return len(self.steps)

    @property
    def avoidable(self) -> list[str]:
        """Its recompiles that were not expected (RecompileStep.expected), less those the log cannot tell
        (unknown_settings): what `check --max-avoidable-recompiles` counts."""
        return [s.compile_id for s in self.steps if s.expected is None and s.unknown_settings is None]

    @property
    def unknown(self) -> list[str]:
        """Its recompiles the log cannot tell expected or avoidable (RecompileStep.unknown_settings)."""
        return [s.compile_id for s in self.steps if s.unknown_settings is not None]

    @property
    def expected_split(self) -> str | None:
        """"4 avoidable ([0/1], [0/2], [0/4], [0/6]), 2 expected ([0/3], [0/5])", for people, and how many the log
        cannot tell; None where none was expected or unknown (every recompile is avoidable, as the list says)."""
        expected = [s.compile_id for s in self.steps if s.expected is not None]
        if not expected and not self.unknown:
            return None
        parts = [f"{len(self.avoidable)} avoidable ({', '.join(self.avoidable)})" if self.avoidable else "",
                 f"{len(expected)} expected ({', '.join(expected)})" if expected else "",
                 f"{len(self.unknown)} the log cannot tell (no guard trees to compare: {', '.join(self.unknown)})"
                 if self.unknown else ""]
        return ", ".join(filter(None, parts))

    @property
    def settled(self) -> bool:
        """Each recompile made what changed dynamic (torch's automatic dynamic: a batch size, then a scale factor):
        nothing recompiles it again while those keep changing, and one recompile for each is all it cost. Not where a
        compile specialized what it had made dynamic (a loop on the number): each value then compiles again."""
        return (bool(self.steps) and not self.hit_limit
                and all(not s.failed and s.dynamic_symbol is not None and s.specialized is None for s in self.steps))

    @property
    def made_dynamic(self) -> list[str]:
        """What its recompiles made dynamic, once each: ["x's dimension 0", "factor"]."""
        return list(dict.fromkeys(s.dynamic_of for s in self.steps if s.dynamic_symbol is not None))

    @property
    def function_label(self) -> str:
        """Its name as a heading shows it: "forward (after its graph break at line 22)" for Dynamo's resume function
        torch_dynamo_resume_in_forward_at_22, "Sequential's forward" for torch's `inner` running a module, else its
        own name ("?" where the log names none)."""
        return module_label(self.module) if self.module else function_label(self.name) or "?"

    @property
    def display_name(self) -> str:
        """Its name in a sentence: "forward (after its graph break at line 22)" for Dynamo's resume function
        torch_dynamo_resume_in_forward_at_22, "Sequential's forward" for torch's `inner` running a module, else its
        own name."""
        return module_label(self.module) if self.module else function_label(self.name) or "a function"

    @property
    def any_placed(self) -> bool:
        """Some failed guard of it has a place in the code (else a table's where column would say nothing)."""
        return any(s.guard is not None and s.guard.location is not None for s in self.steps)

    @property
    def kv_caches(self) -> list[str]:
        """The classes of the transformers KV caches whose sizes failed a guard ("DynamicCache"), once each."""
        return list(dict.fromkeys(s.guard.cache_class for s in self.steps if s.guard and s.guard.cache_class))

    def to_json(self) -> dict[str, Any]:
        return {
            "frame_id": self.frame_id, "name": self.name, "module": self.module, "filename": self.filename,
            "first_line": self.first_line, "called_from": [loc.to_json() for loc in self.called_from],
            "chain": self.chain, "recompiles": self.recompiles, "hit_limit": self.hit_limit, "limit": self.limit,
            "changes": self.changes, "advice": self.advice, "avoidable": self.avoidable,
            "unknown": self.unknown,
            "steps": [s.to_json() for s in self.steps],
        }


@dataclass
class BackwardGraph:
    """A graph compiled autograd captured from a backward call, [!N]: a new one each time its cache missed."""

    id: int  # compiled_autograd_id
    compile_ids: list[str]  # the capture's own ("[!1/-/-]": its graph, why) and Dynamo's compiles of it ("[!1/3/0]")
    reason: str | None = None  # why the cache missed, where torch logged it (BACKWARD_REASONS_HINT)

    @property
    def label(self) -> str:
        return f"[!{self.id}]"

    @property
    def capture_id(self) -> str | None:
        """The compile id of the capture itself ([!1/-/-]: no frame), when the log has it."""
        return next((c for c in self.compile_ids if c.endswith("/-/-]")), None)

    @property
    def reasons_hint(self) -> str:
        return BACKWARD_REASONS_HINT

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "compile_ids": self.compile_ids, "reason": self.reason}


@dataclass
class CompiledAfresh:
    """A function compiled from scratch more than once, each time as a new frame: torch._dynamo.reset() dropped its
    compiled code (and torch counted frames from 0 again), so the next call compiled it as at first."""

    name: str | None  # co_name
    filename: str | None
    first_line: int | None
    compile_ids: list[str]  # each first compile ("[3/0]", "[4/0]", ...), in order
    logged_as: list[str]  # the same as torch logged them ("[0/0]" after each reset)
    # Of compile_ids, those after a reset (renumbered: torch counted frames from 0 again before them). All of them
    # where reset() ran before the first call too (compile_per_call's poly); not the first where the function was
    # compiled before any reset (cache_hit_miss.log's [0/0] and [1/0]).
    after_reset: list[str] = field(default_factory=list)

    @property
    def again(self) -> list[str]:
        """The compiles after the first: what compiling it once would have saved."""
        return self.compile_ids[1:]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "filename": self.filename, "first_line": self.first_line,
                "compile_ids": self.compile_ids, "logged_as": self.logged_as, "after_reset": self.after_reset}


def compiled_afresh(trace: Trace) -> list[CompiledAfresh]:
    """The functions of the log compiled from scratch in several frames after torch._dynamo.reset(), where the
    reader numbered frames on (ingest/resets.py): one code object, several first compiles. Within one process: two
    processes' logs one after another (`cat a.log b.log`) compile a function once each, and no reset ran."""
    by_code: dict[tuple, dict[int | None, Compile]] = {}  # (process, code) -> frame id -> its first compile
    for cid, entry in trace.compiles.items():
        metrics = entry.metrics or {}
        if (cid is None or cid.compiled_autograd_id is not None or cid.frame_compile_id != 0
                or not metrics.get("co_name") or metrics.get("fail_type")):
            continue
        code = (entry.process_start, metrics.get("co_filename"), metrics.get("co_firstlineno"), metrics.get("co_name"))
        # (a restarted attempt is the same compile: one per frame id, in log order; a dict, as a log of 30,000
        # frames of one function made this quadratic)
        by_code.setdefault(code, {}).setdefault(cid.frame_id, entry)
    found = []
    for (_, filename, first_line, name), frames in by_code.items():
        entries = list(frames.values())
        if len(entries) > 1 and any(e.renumbered_by_reset for e in entries):
            found.append(CompiledAfresh(name, filename, first_line, [e.compile_id.compilation for e in entries],
                                        [f"[{e.logged_frame_id if e.logged_frame_id is not None else e.compile_id.frame_id}"
                                         f"/{e.compile_id.frame_compile_id}]" for e in entries],
                                        [e.compile_id.compilation for e in entries if e.renumbered_by_reset]))
    return found


@dataclass
class RenumberedAfterReset:
    """A compile the reader numbered on after torch._dynamo.reset() (ingest/resets.py): torch logged it, and names it
    in its messages, with the frame id counted from 0 again."""

    compile_id: str  # as the report names it: "[3/0]"
    logged_as: str  # as torch logged it: "[0/0]"

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "logged_as": self.logged_as}


def renumbered_after_reset(trace: Trace) -> list[RenumberedAfterReset]:
    """Every compile id of the log the reader numbered on after a reset, in log order."""
    return [RenumberedAfterReset(str(cid), str(replace(cid, frame_id=entry.logged_frame_id)))
            for cid, entry in trace.compiles.items() if cid is not None and entry.renumbered_by_reset]


@dataclass
class RenumberedOtherProcess:
    """A compile of another process than the log's first (several processes' logs one after another: `cat a.log
    b.log`), numbered on by the reader (ingest/resets.py): that process counted its frames from 0, and no
    torch._dynamo.reset() ran."""

    compile_id: str  # as the report names it: "[3/0]"
    logged_as: str  # as its process logged it: "[0/0]"
    pid: int | None  # that process's, from the log's glog prefixes

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "logged_as": self.logged_as, "pid": self.pid}


def renumbered_other_process(trace: Trace) -> list[RenumberedOtherProcess]:
    """Every compile id of the log the reader numbered on as another process's, and not after a reset in it."""
    return [RenumberedOtherProcess(str(cid), str(replace(cid, frame_id=entry.logged_frame_id)), entry.process_pid)
            for cid, entry in trace.compiles.items()
            if cid is not None and entry.process_start is not None and not entry.renumbered_by_reset]


@dataclass
class Recompiles:
    """The frames of the log that were compiled more than once, and compiled autograd's backward graphs."""

    frames: list[FrameRecompiles] = field(default_factory=list)  # frames hitting the limit first
    backward_graphs: list[BackwardGraph] = field(default_factory=list)  # in capture order; all of them
    afresh: list[CompiledAfresh] = field(default_factory=list)  # functions compiled anew after torch._dynamo.reset()
    after_reset: list[RenumberedAfterReset] = field(default_factory=list)  # compiles renumbered after a reset
    # Compiles renumbered as another process's (a log of several processes' logs), not after a reset in it.
    other_process: list[RenumberedOtherProcess] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.frames) or self.backward_recaptures > 0

    @property
    def total(self) -> int:
        return sum(f.recompiles for f in self.frames)

    @property
    def late_hooks(self) -> list[tuple[FrameRecompiles, RecompileStep, StateChange]]:
        """The hooks registered after their module's function was compiled: a recompile's guard tree counts more
        hooks of a module than that of the compile whose guard failed. torch does not recompile for such a hook, so
        the calls that compile served after it was registered ran without it; only a recompile for something else
        shows it, and a hook registered with no other recompile after leaves nothing in the log."""
        return [(frame, step, change) for frame in self.frames for step in frame.steps for change in step.also_changed
                if change.kind == "hook" and step.guard is not None and int(change.after) > int(change.before)]

    @property
    def backward_reasons_logged(self) -> bool:
        """torch logged why compiled autograd's cache missed (only with BACKWARD_REASONS_HINT)."""
        return any(g.reason for g in self.backward_graphs)

    @property
    def with_backward(self) -> int:
        """Frames' recompiles and compiled autograd's recaptures: every graph compiled again."""
        return self.total + self.backward_recaptures

    @property
    def backward_recaptures(self) -> int:
        """Backward graphs captured after the first: compiled autograd's cache missed again."""
        return max(len(self.backward_graphs) - 1, 0)

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "backward_recaptures": self.backward_recaptures,
                "with_backward": self.with_backward, "frames_at_limit": sum(f.hit_limit for f in self.frames),
                "frames": [f.to_json() for f in self.frames],
                "backward_graphs": [g.to_json() for g in self.backward_graphs],
                "compiled_afresh": [a.to_json() for a in self.afresh],
                "after_reset": [r.to_json() for r in self.after_reset],
                # (only where there are some: a log of one process reads as it did before)
                **({"other_process": [r.to_json() for r in self.other_process]} if self.other_process else {})}


def classify_change(guard: str) -> str:
    for change, pattern in CHANGE_RULES:
        if re.search(pattern, guard):
            return change
    if re.match(_FLAG, guard.strip()):
        return "flag"
    if re.match(_CONSTANT, guard.strip()):
        return "optimizer_setting" if re.search(_OPTIMIZER_SETTING, guard) else "constant"
    return "other"


def parse_reason(text: str, frame_offset: int = 0) -> FailedGuard:
    """One failed guard of torch's recompile reasons ("0/1: n == 1  # code  # path:line in fn ..."). frame_offset: what
    the reader added to the frame ids of the recompile's reset epoch (ingest/resets.py); the "N/M:" prefix is in torch's
    numbering, counted from 0 again after torch._dynamo.reset(), and the failed guard is of a compile of that epoch
    (reset() dropped every earlier one), so its frame is numbered on by the same offset."""
    m = re.match(_PREFIX, text)
    cid, body = (f"[{_placed(m['cid'], frame_offset)}]", m["body"]) if m else (None, text)
    head, _, user_stack = body.partition("User stack trace:")
    guard_line = head.strip().splitlines()[0] if head.strip() else ""
    guard, _, comment = guard_line.partition("  #")
    location = last_user_frame("User stack trace:" + user_stack, ("User stack trace:",)) if user_stack else None
    loc = re.search(_CLIPPED_LOC, comment)
    if loc:
        # `# return x + n  # ork/main/x.py:29 in h (_dynamo/...)`: the code, then the (front-clipped) path.
        code = comment[:loc.start()].strip(" #") or None
        if location is None:
            location = UserLocation(loc["file"], int(loc["line"]), loc["func"], code)
        elif location.code is None and code:
            location = UserLocation(location.filename, location.line, location.function, code)
    guard = guard.strip()
    change = classify_change(guard)
    if change == "shape_guard" and _SIZE_ONE in comment:
        # `2 <= x.size()[1]`: torch's comment says the guard is its own, the range of a dynamic size, not a branch of
        # the user's code (the line it names is only the size's first use).
        change = "size_one"
    return FailedGuard(cid, guard, change, location, text)


def _placed(logged: str, frame_offset: int) -> str:
    """A compile id torch wrote ("0/1") as the reader placed it; compiled autograd's ("!0/1/0") is never renumbered."""
    if not frame_offset or logged.startswith("!"):
        return logged
    frame, _, compile_ = logged.partition("/")
    return f"{int(frame) + frame_offset}/{compile_}"


def reasons_payload(text: str) -> list[str]:
    """The recompile_reasons payload as a list: JSON list, JSON string, or (torch's single reason) bare text."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return [text] if text.strip() else []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def _attempts(trace: Trace) -> dict[str, list[tuple[int, Compile]]]:
    """Each compilation ("[1/1]") -> its attempts (attempt number, compile) in the log's order: made once per log, as
    every restarted attempt looks up its earlier ones (a log of thousands of restarts)."""
    attempts: dict[str, list[tuple[int, Compile]]] = {}
    for cid, entry in trace.compiles.items():
        if cid is not None:
            attempts.setdefault(cid.compilation, []).append((cid.attempt or 0, entry))
    return attempts


def _step(trace: Trace, entry: Compile, attempts_of: dict[str, list[tuple[int, Compile]]]) -> RecompileStep:
    """attempts_of: _attempts(trace)."""
    reasons: list[str] = []
    # Dynamo logs the reasons once, with attempt 0; a restart ([1/1_1], after a graph break) logs none of its own and
    # names them in its compilation_metrics: one the log ends during has only its first attempt's record.
    attempt_number = entry.compile_id.attempt or 0
    attempts = [e for number, e in attempts_of.get(entry.compile_id.compilation, []) if number < attempt_number]
    for attempt in [*attempts, entry]:
        for artifact in attempt.artifacts:
            if artifact.name == ARTIFACT:
                reasons = reasons_payload(trace.payload_text(artifact.payload))
    primary = (entry.metrics or {}).get("recompile_reason")
    if not reasons and primary:
        reasons = [str(primary)]
    cid = entry.compile_id
    offset = cid.frame_id - entry.logged_frame_id if entry.logged_frame_id is not None and cid.frame_id is not None else 0
    return RecompileStep(str(cid), [parse_reason(r, offset) for r in reasons],
                         failed=bool((entry.metrics or {}).get("fail_type")))


def _mutations(trace: Trace, entries: list[Compile]) -> dict[str, tuple[str, UserLocation | None]]:
    """Source ("G['history']") -> its type and the line that changes it, for each object the compiled code of these
    compiles changes (torch's dynamo_side_effects artifact: "Mutating object of type list (source name: ...)" and the
    stack of the change, innermost last)."""
    found: dict[str, tuple[str, UserLocation | None]] = {}
    for entry in entries:
        for artifact in entry.artifacts:
            if artifact.name != SIDE_EFFECTS_ARTIFACT:
                continue
            for m in re.finditer(_MUTATION, trace.payload_text(artifact.payload)):
                frames = [f for f in traceback_frames(m["stack"]) if not is_torch_file(f.filename)]
                found.setdefault(m["source"].strip(), (m["type"], frames[-1] if frames else None))
    return found


@dataclass
class LengthHistory:
    """How a container's length went over a frame's compiles, from their guard trees (the length each pinned) and
    the failed guards of recompiles that left no tree (a failed compile)."""

    changed: list[str]  # the recompiles at which it had a new length
    lengths: list[int | None]  # the lengths pinned, in order, each once (None: a new one no tree says)
    stayed: int  # compiles after the last change that pinned the same length
    last_step: str | None  # the frame's last recompile

    @property
    def keeps_changing(self) -> bool:
        return len(self.changed) > 1 and self.stayed == 0 and self.changed[-1] == self.last_step

    def words(self, recompiles: int) -> str:
        """"which changed at 5 of the 6 recompiles ...": what the log shows, and whether it keeps changing."""
        n = len(self.changed)
        shown = [str(v) for v in self.lengths]
        if len(shown) > 6:  # (a list growing at every call: thousands of lengths; the first and the last tell it)
            shown = [*shown[:3], "…", *shown[-2:]]
        went = " → ".join(shown) if self.lengths and None not in self.lengths else ""
        at = (f"{self.changed[0]} to {self.changed[-1]}" if n > 3 else and_list(self.changed))
        if self.keeps_changing:
            of = f"each of the {recompiles}" if n == recompiles else f"{n} of the {recompiles}"
            return (f"which changed at {of} recompiles ({at}{f': {went}' if went else ''}), the last one too, so "
                    "it keeps changing: each call that sees a new length compiles again")
        if self.stayed:
            return (f"which changed {times(n)} ({went + ', ' if went else ''}at {at}) and then stayed "
                    f"{self.lengths[-1]} in the {count(self.stayed, 'compile')} after: that cost "
                    f"{count(n, 'recompile')}, not one per call")
        return (f"which changed {times(n)} ({went + ', ' if went else ''}at {at}), in the log's last compile, "
                "so whether it keeps changing the log does not say")


def length_failures(steps: list[tuple[RecompileStep, Compile]]) -> dict[str, set[str]]:
    """The recompiles at which a length guard of each container failed: source ("G['history']") -> compile ids."""
    failed_at: dict[str, set[str]] = {}
    for st, _ in steps:
        for g in st.failed_guards:
            if source := _length_subject(g.guard):
                failed_at.setdefault(source, set()).add(st.compile_id)
    return failed_at


def length_history(source: str, failed_at: set[str], entries: list[Compile], trees: _PinnedByTrees,
                   last_step: str | None) -> LengthHistory | None:
    """source ("G['history']")'s lengths over the frame's compiles (entries), with the recompiles at which its length
    guard failed (failed_at, length_failures'); None where nothing says it changed. last_step: the frame's last
    recompile."""
    changed: list[str] = []
    lengths: list[int | None] = []
    stayed = 0
    for entry in entries:
        cid = str(entry.compile_id)
        pinned = trees.lengths(cid)
        length = pinned.get(source) if pinned is not None else None
        if length is None and cid not in failed_at:
            continue
        if length is not None and lengths and lengths[-1] == length:
            stayed += 1
            continue
        if lengths or cid in failed_at:
            changed.append(cid)
        lengths.append(length)
        stayed = 0
    if not changed:
        return None
    return LengthHistory(changed, lengths, stayed, last_step)


def _length_subject(guard: str) -> str:
    """The container a length guard checks ("G['history']" of `len(G['history']) == 2`, `not G['history']`); "" for
    another guard."""
    m = re.match(_LENGTH_SUBJECT, guard)
    return (m["len"] or m["not"]).strip() if m else ""


def _mutated_at(loc: UserLocation | None) -> str:
    """Where the compiled code changed a container: "python_features.py:59: seen.append(t.shape[0])"."""
    return f"{loc.short}: {loc.code}" if loc and loc.code else (loc.short if loc else "where it runs")


def length_advice(guards: list[FailedGuard], mutations: dict[str, tuple[str, UserLocation | None]],
                  history=lambda source: None, recompiles: int = 0) -> list[str]:
    """The advice for containers whose length changed: a global one the compiled code changes itself (a list it
    appends to) is the user's bookkeeping, not an argument to pad, said with how its length went (history: source ->
    LengthHistory | None, of recompiles recompiles); any other, the general advice."""
    advice: list[str] = []
    for guard in guards:
        source = _length_subject(guard.guard)
        named = re.match(_GLOBAL_NAME, source)
        closure = guard.closures.get(source)
        if closure is not None:
            owner = closure_owner(source) or "a function"
            if source in mutations:
                kind, loc = mutations[source]
                went = history(source)
                text = CLOSURE_MUTATED_ADVICE.format(
                    type=kind, name=closure, owner=owner, where=_mutated_at(loc),
                    history="and each new length compiles again" if went is None else went.words(recompiles))
            else:
                text = CLOSURE_LENGTH_ADVICE.format(name=closure, owner=owner)
        elif named is None:
            text = ADVICE["length"]
        elif source in mutations:
            kind, loc = mutations[source]
            where = _mutated_at(loc)
            went: LengthHistory | None = history(source)
            if went is None:
                said, fix = "and each new length compiles again", KEEP_OUT
            else:
                said = went.words(recompiles)
                fix = (SETTLED_LENGTH_FIX.format(what="keys" if kind == "dict" else "final length") if went.stayed
                       else KEEP_OUT)
            text = GLOBAL_MUTATED_ADVICE.format(type=kind, name=named["name"], where=where, history=said, fix=fix)
        else:
            text = GLOBAL_LENGTH_ADVICE.format(name=named["name"])
        if text not in advice:
            advice.append(text)
    return advice


def _frames(trace: Trace) -> dict[tuple, list[Compile]]:
    """Compilations of each frame, the last attempt of each, in compile order."""
    latest: dict[tuple, Compile] = {}
    for cid, entry in trace.compiles.items():
        if cid is None or cid.frame_id is None or cid.frame_compile_id is None:
            continue
        key = (cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)
        if key not in latest or (cid.attempt or 0) >= (latest[key].compile_id.attempt or 0):
            latest[key] = entry
    frames: dict[tuple, list[Compile]] = {}
    for key in sorted(latest, key=lambda k: (-1 if k[0] is None else k[0], k[1], k[2])):
        frames.setdefault(key[:2], []).append(latest[key])
    return frames


def _known_files(trace: Trace) -> set[str]:
    files = set(trace.string_table.values())
    for entry in trace.compiles.values():
        files.update(f.filename for f in entry.stack or [])
        if entry.metrics and entry.metrics.get("co_filename"):
            files.add(str(entry.metrics["co_filename"]))
    return files


def _unclipped(loc: UserLocation, known: set[str]) -> UserLocation:
    """Torch clips long paths at the front in guard comments: the full path, when the log has it."""
    if loc.filename.startswith("/") or loc.filename in known:
        return loc
    full = sorted(f for f in known if f.endswith(loc.filename))
    return UserLocation(full[0], loc.line, loc.function, loc.code) if len(full) == 1 else loc


def _unclip(guard: FailedGuard, known: set[str]) -> None:
    if guard.location is not None:
        guard.location = _unclipped(guard.location, known)


_SIZE_GUARD = lazy_compile(r"^tensor '(?P<tensor>.{1,500}?)' size mismatch at index (?P<dim>\d{1,6})\. expected (?P<size>\d{1,20}),")
# A size a guard names, as the frame does (`tokens.size()[1]`, `self.buf.size()[0]`).
_SIZE_SOURCE = lazy_compile(r"(?<![\w.\]'\"])(?P<tensor>[A-Za-z_][\w.\[\]'\"]{0,500}?)\.size\(\)\[(?P<dim>\d{1,6})\]")
_CODE_FILE = lazy_compile(r'<code object [^<>\n]{0,300}?, file "([^"\n]{1,1000})", line \d{1,9}>')
# A guard on a number: `___as_tensor(X).item() == 0.0046…` (a float Dynamo made a symbol) or `X == 2`.
_VALUE_GUARD = lazy_compile(r"^(?:___as_tensor\((?P<tensor>.{1,500})\)\.item\(\)|(?P<name>[\w.\[\]'\"]{1,500})) == "
                            r"(?P<value>-?\d{1,30}(?:\.\d{1,30})?(?:e-?\d{1,3})?)$")
# (an attribute may be an item's: `args[1]._scale == 0.5`, a ScaledTensor's float in its __torch_dispatch__'s args)
_NUMBER_GUARD = lazy_compile(r"^(?:L\['(?P<local>\w{1,200})'\]|(?P<name>[A-Za-z_]\w{0,200})"
                             r"(?P<attribute>(?:\[\d{1,6}\]){0,4}(?:\.[A-Za-z_]\w{0,200}){1,8})?) == -?\d")
# A check of a tensor that failed, as torch's TENSOR_MATCH words it: `tensor 'x' dtype mismatch. ...`.
_TENSOR_CHECK = r"^tensor '(?P<tensor>.{1,500}?)' (?=[\w ]{1,40}mismatch)"
_NAME = r"^(?P<name>[A-Za-z_]\w{0,200})(?P<rest>.*)$"
CACHE_MODULE = "transformers.cache_utils."


def _tree_sources(tensor: str) -> list[str]:
    """How the guard tree may name the tensor a failure names: `x` is the frame's local L['x']."""
    m = re.match(_NAME, tensor)
    return [tensor] + ([f"L['{m['name']}']{m['rest']}"] if m and m["name"] != "L" else [])


def _cache_of(tree: str, source: str) -> tuple[str, str] | None:
    """(the cache's source, its class) when the tensor at source is held by a transformers KV cache."""
    for outer in enclosing_sources(source):
        typ = object_type(tree, outer)
        if typ is not None and typ.startswith(CACHE_MODULE):
            return user_source_name(outer), typ[len(CACHE_MODULE):]
    return None


def _in_generate(stack: list | None) -> bool:
    """The compile was called from transformers' generate() (its dynamo_start stack passes through it)."""
    return any(f.name == "generate" and "transformers" in f.filename and "generation" in f.filename
               for f in stack or [])


class _CompileTexts:
    """The guard tree (dynamo_cpp_guards_str) or graph (dynamo_output_graph) of a compilation of the frame, read when
    asked and not kept: a frame recompiled a thousand times would hold a thousand guard trees."""

    def __init__(self, trace: Trace, entries: list[Compile]) -> None:
        self._trace = trace
        self._entries = {str(e.compile_id): e for e in entries}

    def __call__(self, compile_id: str | None, name: str) -> str | None:
        entry = self._entries.get(compile_id) if compile_id is not None else None
        payload = next((a.payload for a in entry.artifacts if a.name == name and a.payload is not None),
                       None) if entry is not None else None
        return self._trace.payload_text(payload) if payload is not None else None


class _PinnedByTrees:
    """What each guard tree of the frame pins (pinned_state, pinned_lengths, the settings of EXPECTED), each tree
    read and parsed once per analysis run, the first time it is asked for, and its text dropped: what else changed,
    expected or avoidable and a list's lengths all compare the trees compile against compile, and each reading its
    trees per step or per failed guard was quadratic in the frame's recompiles."""

    def __init__(self, texts: _CompileTexts) -> None:
        self._texts = texts
        self._pinned: dict[str, tuple[dict[str, str], dict[str, int], dict[str, str]] | None] = {}
        self.closures: dict[str, str] = {}  # the closure variables the trees read so far name, by cell

    def _of(self, cid: str) -> tuple[dict[str, str], dict[str, int], dict[str, str]] | None:
        if cid not in self._pinned:
            tree = self._texts(cid, GUARDS_ARTIFACT)
            if tree is None:
                self._pinned[cid] = None
            else:
                state, lengths = pinned_state(tree), pinned_lengths(tree)
                self._pinned[cid] = ({**state, **tree_lengths(lengths)}, lengths, _intended_settings(state))
                if "cell_contents" in tree:
                    self.closures.update(closure_variables(tree))
        return self._pinned[cid]

    def state(self, cid: str) -> dict[str, str] | None:
        """pinned_state of cid's tree with its tree_lengths; None where the log has no tree for it."""
        pinned = self._of(cid)
        return pinned[0] if pinned is not None else None

    def lengths(self, cid: str) -> dict[str, int] | None:
        pinned = self._of(cid)
        return pinned[1] if pinned is not None else None

    def settings(self, cid: str) -> dict[str, str] | None:
        pinned = self._of(cid)
        return pinned[2] if pinned is not None else None


def _place_tensor_check(guard: FailedGuard, texts: _CompileTexts, code: UserLocation | None,
                        known: set[str], caller: UserLocation | None) -> str | None:
    """For a failed check of a tensor: its name, where the guarded compile first used it (where torch's own frame
    first used it in torch's code too: the user's line that called the frame, caller), and the KV cache holding
    it. Returns the source the guard tree names the tensor by (`L['x']`), when the tree has it."""
    m = re.match(_TENSOR_CHECK, guard.guard)
    if m is None:
        return None
    guard.tensor = m["tensor"]
    tree = texts(guard.compile_id, GUARDS_ARTIFACT)
    found = next(((source, line) for source in _tree_sources(guard.tensor)
                  if (line := tensor_check(tree, source)) is not None), None) if tree else None
    if guard.location is None:
        site = guard_site(found[1]) if found else None
        used = _unclipped(UserLocation(site[0], site[1], site[2], site[3].strip() or None), known) if site else None
        if used is not None and not used.filename.startswith("/") and tree:
            # Still clipped ("nn/attention/_utils.py", a torch file no stack of the log passes through): the guard
            # tree's code objects name files in full (`<code object f at 0x.., file "/…/torch/nn/…", line 34>`).
            used = _unclipped(used, set(_CODE_FILE.findall(tree)))
        # Inside torch: a path in full, or one still clipped that starts in a folder of torch's (the wrapper that
        # runs a nested_compile_region, _higher_order_ops/invoke_subgraph.py, named by no stack when no symbol was made).
        used_in_torch = used is not None and (is_torch_file(used.filename) or is_clipped_torch_file(used.filename))
        if used is not None and used_in_torch and found is not None:
            # First used inside torch (F.layer_norm, for the user's self.norm(x)): the graph's first node that
            # computes with it names the user's line, where it has one.
            graph = texts(guard.compile_id, GRAPH_ARTIFACT)
            node = first_use(graph, found[0]) if graph else None
            if node is not None and not is_torch_file(node.path):
                used, used_in_torch = UserLocation(node.path, node.line, node.function, node.code), False
        torch_frame = code is None or is_torch_file(code.filename)
        passed_in = caller is not None and placed_at_call(code.filename if code is not None else None, guard.tensor,
                                                          used.filename if used is not None else None)
        if used is not None and not used_in_torch and not passed_in:
            guard.location, guard.location_kind = used, "first_use"
        elif caller is not None and (torch_frame or passed_in):
            guard.location, guard.location_kind = caller, "call"
        elif used is not None and torch_frame:
            guard.location, guard.location_kind = used, "first_use"
        elif code is not None:
            guard.location, guard.location_kind = code, "function"
    if found is None:
        return None
    cache = _cache_of(tree, found[0]) if tree else None
    if cache is not None:
        guard.cache_source, guard.cache_class = cache
    return found[0]


def _place_tensor_check_once(guard: FailedGuard, texts: _CompileTexts, code: UserLocation | None, known: set[str],
                             caller: UserLocation | None,
                             placed: dict[tuple[str | None, str, tuple[str, int] | None],
                                          tuple[str | None, FailedGuard]]) -> str | None:
    """_place_tensor_check, for a check of a tensor that compile and caller placed before: as that one was placed."""
    m = re.match(_TENSOR_CHECK, guard.guard)
    if m is None:
        return None
    key = (guard.compile_id, m["tensor"], (caller.filename, caller.line) if caller is not None else None)
    known_placement = placed.get(key)
    if known_placement is None:
        unplaced = guard.location is None
        source = _place_tensor_check(guard, texts, code, known, caller)
        if unplaced:  # (a check whose text named its line keeps it: not one to place others by)
            placed[key] = (source, guard)
        return source
    source, done = known_placement
    guard.tensor = done.tensor
    if guard.location is None:
        guard.location, guard.location_kind = done.location, done.location_kind
    guard.cache_source, guard.cache_class = done.cache_source, done.cache_class
    return source


def _place_failed_checks(steps: list[tuple[RecompileStep, Compile]], texts: _CompileTexts, code: UserLocation | None,
                         known: set[str], compiled_frames: CompiledFrames,
                         stack_values: StackValues) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Places each failed guard (unclipped paths; for a check of a tensor, where the guarded compile first used it)
    and a size's symbol in the recompile that made it dynamic. Returns the advice for KV caches that grew and for
    sizes marked dynamic that torch kept static (a first call's size of 0 or 1) or that transformers' generate() made,
    and the other sizes that changed: (tensor, dim, where the user's call passed it in, or "")."""
    cache_advice: list[str] = []
    sizes: list[tuple[str, str, str]] = []
    generated: list[str] = []  # the sizes of inputs transformers' generate() made and passed: "kwargs['input_ids'] at index 1"
    marked: list[str] = []
    # How a check of a tensor of a compile was placed, by (compile id, tensor, the user's line that called the frame):
    # each older cache entry a recompile tried failed a check its compile's guard tree places, and later recompiles
    # try the same entries again. Placed once each, a frame recompiled n times reads n trees, not n * n / 2.
    placed: dict[tuple[str | None, str, tuple[str, int] | None], tuple[str | None, FailedGuard]] = {}
    for step, entry in steps:
        caller = compiled_frames.called_from(entry.compile_id)
        for guard in step.failed_guards:
            source = _place_tensor_check_once(guard, texts, code, known, caller, placed)
            if guard is not step.guard:  # (the newest entry's guard is what the step says of its sizes)
                source = None
            _unclip(guard, known)
            if "___stack" in guard.guard:  # (a resume function's: in words, as its symbols are)
                guard.names = stack_values.guard_names(entry, guard.guard)
            number = _NUMBER_GUARD.match(guard.guard) if guard is step.guard and guard.change == "constant" else None
            if number is not None:  # `n == 0`: automatic dynamic makes a number that changed a symbol too
                name = number["name"] or number["local"]
                attribute = number["attribute"] or ""  # `self.step == 3`: an attribute of an object it reads
                step.dynamic_symbol = next((str(sym.get("symbol")) for sym in entry.symbols
                                            if sym.get("source") == f"L['{name}']{attribute}" and sym.get("symbol")),
                                           None)
                # (a resume function's ___stack0 is a value the user's code computed: "the value of `loss.item()`")
                step.dynamic_of = name + attribute if attribute else stack_values.short(entry, name) or name
                step.attribute = bool(attribute)
            size = _SIZE_GUARD.match(guard.guard) if guard is step.guard and guard.change == "size" else None
            if size is None:
                continue
            if source is not None:
                wanted = f"{source}.size()[{size['dim']}]"
                step.dynamic_symbol = next((str(sym.get("symbol")) for sym in entry.symbols
                                            if sym.get("source") == wanted and sym.get("symbol")), None)
                # (a resume function's ___stack0 is a value the user's code made before the break: said so)
                guard.tensor_text = stack_values.short(entry, size["tensor"])
                step.dynamic_of = (f"dimension {size['dim']} of {guard.tensor_text}" if guard.tensor_text
                                   else f"{possessive(size['tensor'])} dimension {size['dim']}")
                tree = texts(guard.compile_id, GUARDS_ARTIFACT) if size["size"] in ("0", "1") else None
                guard.marked = marking_call(tree, source, size["dim"]) if tree else None
            if guard.marked is not None:  # (marked already: the advice is on its size of 0 or 1)
                marked.append(marked_size_one_advice(guard, size["dim"], size["size"]))
            elif guard.cache_class is None and (value := stack_values.value(entry, size["tensor"])) is not None:
                advice = stack_size_advice(value, size["dim"])  # (no name of the user's to mark dynamic)
                if advice not in cache_advice:
                    cache_advice.append(advice)
            elif guard.cache_class is None and guard.location_kind == "call" and _in_generate(
                    compiled_frames.stack(entry.compile_id)):
                # generate() made the input it passed (the decode step's one token): nothing of the user's to mark
                if f"{size['tensor']} at index {size['dim']}" not in generated:
                    generated.append(f"{size['tensor']} at index {size['dim']}")
            elif guard.cache_class is None:
                # An argument the user's call passed (args[1]): which call, as they know it by its line
                passed = f", passed in by the call at {guard.location.short}" if (
                    guard.location_kind == "call" and guard.location is not None) else ""
                if not any(t == size["tensor"] and d == size["dim"] for t, d, _ in sizes):
                    sizes.append((size["tensor"], size["dim"], passed))
            elif "Static" not in guard.cache_class:  # (a static cache that changed size needs other advice)
                words = CACHE_ADVICE_GENERATE if _in_generate(compiled_frames.stack(entry.compile_id)) else CACHE_ADVICE
                advice = words.format(source=guard.cache_source, cls=guard.cache_class)
                if advice not in cache_advice:
                    cache_advice.append(advice)
    generated_advice = [GENERATED_SIZE_ADVICE.format(inputs="; ".join(generated))] if generated else []
    return cache_advice + generated_advice + list(dict.fromkeys(marked)), sizes


def _named_by(change: StateChange, guards: str) -> bool:
    """The failing guards' text already names what changed (`n == 1`, `tensor 'x' requires_grad mismatch`, the
    `self._modules['backbone']._parameters['bias']` of a parameter's): not something else that changed."""
    of = change.of.removesuffix(".requires_grad")  # (a length: its container, in `len(x) == 2` or `not x`)
    names = {of, user_source_name(of), FRAME_SOURCE.sub(r"\1", of)}  # (torch's reasons write a global's G['x'])
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?![\w(\[.])", guards) for name in names)


def _link_state_changes(steps: list[tuple[RecompileStep, Compile]],
                        trees: _PinnedByTrees) -> list[tuple[str, StateChange]]:
    """Sets each step's also_changed from the guard trees of the compile whose guard failed and of the recompile.
    Returns the hooks found registered after compiling: (the recompile that first ran them, the change)."""
    hooked: list[tuple[str, StateChange]] = []
    for step, _ in steps:
        guard = step.guard
        before = trees.state(guard.compile_id) if guard is not None and guard.compile_id is not None else None
        after = trees.state(step.compile_id) if before is not None else None
        if before is None or after is None:
            continue
        named = " ".join(g.guard for g in step.failed_guards)
        step.also_changed = [replace(c, closures=trees.closures) if "cell_contents" in c.source else c
                             for c in state_changes(before, after) if not _named_by(c, named)]
        hooked.extend((step.compile_id, c) for c in step.also_changed
                      if c.kind == "hook" and int(c.after) > int(c.before))  # (kind "hook": both are counts)
    return hooked


def _intended_settings(state: dict[str, str]) -> dict[str, str]:
    """The settings of EXPECTED a compile's guard tree pins (pinned_state: a module's training flag, a parameter's
    requires_grad)."""
    return {k: v for k, v in state.items()
            if k.endswith(".training") or (k.endswith(".requires_grad") and "._parameters[" in k)}


def _mark_expected(steps: list[tuple[RecompileStep, Compile]], trees: _PinnedByTrees) -> None:
    """Sets each step's expected where every cached compile torch tried (one failed guard each) had other settings of
    EXPECTED than the recompile: it would have compiled whatever else changed. One with the same settings failed for
    something else, which made the recompile avoidable. Where the log has no guard tree of a compile torch tried
    (older torch logs none) and none is known to have had the same settings, it cannot tell: unknown_settings,
    neither expected nor avoidable."""
    for step, _ in steps:
        tried = [g for g in step.failed_guards if g.compile_id]
        why: list[set[str]] = []  # per compile tried, the settings it had otherwise
        unknown: str | None = None  # the first compile compared whose settings no tree says
        after = trees.settings(step.compile_id)
        if after is None and step.failed:
            # (a recompile that failed, at the recompile limit, installed no tree: it compiled nothing, so no setting
            # explains it; counted avoidable, as a failed compile is to fix)
            after = {}
        for guard in tried:
            if guard.change == "requires_grad" and guard.tensor and "._parameters[" in guard.tensor:
                why.append({"requires_grad"})
                continue
            before = trees.settings(guard.compile_id or "")
            if before is None or after is None:
                unknown = unknown or (guard.compile_id if before is None else step.compile_id)
                continue
            differ = {"training" if k.endswith(".training") else "requires_grad"
                      for k, v in after.items() if k in before and before[k] != v}
            if not differ:
                step.same_settings = guard if why or unknown else None
                break
            why.append(differ)
        else:
            if unknown:
                step.unknown_settings = unknown
            elif tried:
                # the setting every compile tried had otherwise, else the one most of them had
                common = set.intersection(*why)
                step.expected = min(common) if common else Counter(k for w in why for k in w).most_common(1)[0][0]


def _place_size_one_guards(steps: list[tuple[RecompileStep, Compile]], by_id: dict[str, Compile]) -> None:
    """Places each failed guard of torch's 0/1 specialization (`2 <= x.size()[1]`) at the user's line that first used
    the size: torch's comment names the size's first use, and that is torch's own line where the user's code called
    into torch (F.embedding in nn/modules/sparse.py, for the user's self.emb(x)). The symbol the guarded compile made of
    the size has the user's stack: its innermost user frame is that line."""
    for step, _ in steps:
        for guard in step.failed_guards:
            loc = guard.location
            if guard.change != "size_one" or (
                    loc is not None and not is_torch_file(loc.filename) and not is_clipped_torch_file(loc.filename)):
                continue
            size = _SIZE_SOURCE.search(guard.guard)
            guarded = by_id.get(guard.compile_id or "")
            if size is None or guarded is None:
                continue
            user = next((where for sym in guarded.symbols
                         if FRAME_SOURCE.sub(r"\1", str(sym.get("source"))) == size[0]
                         and (where := last_user_stack_frame(sym.get("user_stack"))) is not None), None)
            if user is not None:
                guard.location, guard.location_kind, guard.tensor = user, "first_use", size["tensor"]


# The arguments a guard on how a call passes them checks (`len(args) == 2`, `len(kwargs) == 6`).
_CALL_ARGUMENTS = {"positional_arguments": "args", "keyword_arguments": "kwargs"}


def _place_argument_guards(steps: list[tuple[RecompileStep, Compile]], code: UserLocation | None,
                           compiled_frames: CompiledFrames) -> None:
    """Places each failed guard on how many arguments or which keywords a call passes, where torch placed it in a
    library's frame (transformers' deprecation.py:126, inside its decorator), at the user's call that passed them so
    (generate() at hf_llama.py:39): the rule that places the frame's arguments (userloc.placed_at_call)."""
    for step, entry in steps:
        caller = compiled_frames.called_from(entry.compile_id)
        for guard in step.failed_guards if caller is not None else []:
            if guard.change not in _CALL_ARGUMENTS or guard.location_kind != "guard":
                continue
            used = guard.location.filename if guard.location is not None else None
            if placed_at_call(code.filename if code is not None else None, _CALL_ARGUMENTS[guard.change], used):
                guard.location, guard.location_kind = caller, "arguments_call"


def _place_state_guards(steps: list[tuple[RecompileStep, Compile]], by_id: dict[str, Compile],
                        compiled_frames: CompiledFrames) -> list[str]:
    """Places each failed global-state guard (grad mode) at the user's line that called under the new state, and
    returns the advice naming the state and the calls that differ in it: once per state, for all its recompiles (a
    validation call under torch.no_grad() recompiles going in and again coming back: one fix)."""
    # states -> the user's line -> (it, the compile ids called from it: recompiles, then the compiles they missed)
    calls: dict[tuple[str, ...], dict[tuple, tuple[UserLocation, list[str], list[str]]]] = {}
    recompiled: dict[tuple[str, ...], list[RecompileStep]] = {}  # states -> its recompiles (their .expected)
    for step, entry in steps:
        guard = step.guard
        if guard is None or guard.change != "global_state":
            continue
        recompiled.setdefault(tuple(changed_states(guard.guard)), []).append(step)
        here = _caller(compiled_frames.stack(entry.compile_id))
        guarded = by_id.get(guard.compile_id or "")
        there = _caller(compiled_frames.stack(guarded.compile_id)) if guarded is not None else None
        if guard.location is None and here is not None:
            guard.location, guard.location_kind = here, "state_call"
        lines = calls.setdefault(tuple(changed_states(guard.guard)), {})
        if here is not None:
            lines.setdefault(here.key, (here, [], []))[1].append(step.compile_id)
        if there is not None and guard.compile_id:
            lines.setdefault(there.key, (there, [], []))[2].append(guard.compile_id)
    advice: list[str] = []
    order = list(by_id)  # the frame's compile ids, in compile order
    for states, lines in calls.items():
        # One line only: the calls do not differ where the log can tell, so only the recompiles are named.
        named = [(loc, sorted(set(recompiled + (missed if len(lines) > 1 else [])), key=order.index))
                 for loc, recompiled, missed in lines.values()]
        said = [f"{and_list(ids)} {'from' if i else ('was' if len(ids) == 1 else 'were') + ' called from'} {loc.short}"
                + (f" ({loc.code})" if loc.code else "") for i, (loc, ids) in enumerate(c for c in named if c[1])]
        where = f": {', '.join(said)}" if said else ""
        named_states = " and ".join(states) if states else "global state"
        state_steps = recompiled.get(states, [])
        expected = [st for st in state_steps if st.expected in EXPECTED_SWITCH]
        if expected and len(expected) == len(state_steps):
            switched = and_list([EXPECTED_SWITCH[w] for w in dict.fromkeys(st.expected for st in expected if st.expected)])
            advice.append(STATE_EXPECTED_ADVICE.format(states=named_states, where=where, why=switched))
        elif expected:
            advice.append(STATE_MIXED_ADVICE.format(states=named_states, where=where,
                                                            each=_state_steps_said(state_steps)))
        else:
            advice.append(STATE_ADVICE.format(states=named_states, where=where))
    return advice


def _state_steps_said(steps: list[RecompileStep]) -> str:
    """Of a state's recompiles, some expected and some not: which are expected (and what their calls switched), and
    of the others, each that an older compile with its settings made (RecompileStep.same_settings: its guard, not
    the state, is what to fix), those the log cannot tell, and the rest, avoidable by one setting everywhere."""
    def ids_said(group: list[RecompileStep]) -> tuple[str, str]:
        return and_list([st.compile_id for st in group]), "is" if len(group) == 1 else "are"

    parts = []
    expected = [st for st in steps if st.expected in EXPECTED_SWITCH]
    ids, is_ = ids_said(expected)
    switched = and_list([EXPECTED_SWITCH[w] for w in dict.fromkeys(st.expected for st in expected if st.expected)])
    parts.append(STATE_EXPECTED_PART.format(ids=ids, is_=is_, its="its" if len(expected) == 1 else "their",
                                            why=switched))
    rest = [st for st in steps if st not in expected]
    parts += [STATE_SAME_SETTINGS_PART.format(id=st.compile_id, same=st.same_settings.compile_id,
                                              guard=st.same_settings.shown)
              for st in rest if st.same_settings is not None]
    if unknown := [st for st in rest if st.same_settings is None and st.unknown_settings]:
        parts.append(STATE_UNKNOWN_PART.format(ids=ids_said(unknown)[0],
                                               unknown=and_list(list(dict.fromkeys(st.unknown_settings or ""
                                                                                   for st in unknown)))))
    if avoidable := [st for st in rest if st.same_settings is None and not st.unknown_settings]:
        ids, is_ = ids_said(avoidable)
        parts.append(STATE_AVOIDABLE_PART.format(ids=ids, is_=is_))
    return " ".join(parts)


def _same_call_requires_grad(steps: list[tuple[RecompileStep, Compile]], by_id: dict[str, Compile],
                             compiled_frames: CompiledFrames, function: str) -> str | None:
    """Where every requires_grad recompile is of a tensor argument the same user's line passed without grad to each
    compile torch tried and with grad now (`x = block(x)`: the first block gets the data, the next its output): marks
    them expected and returns the advice saying so. None, and nothing marked, where any is not (another line called
    it, grad went the other way, a parameter's requires_grad changed): the general advice holds there."""
    ours = [(step, entry) for step, entry in steps if step.guard is not None and step.guard.change == "requires_grad"]
    here: UserLocation | None = None
    for step, entry in ours:
        caller = _caller(compiled_frames.stack(entry.compile_id))
        for guard in step.failed_guards:
            guarded = by_id.get(guard.compile_id or "")
            there = _caller(compiled_frames.stack(guarded.compile_id)) if guarded is not None else None
            if (guard.change != "requires_grad" or not guard.tensor or "._parameters[" in guard.tensor
                    or not guard.guard.endswith("expected requires_grad=0") or caller is None or there is None
                    or there.key != caller.key or (here is not None and here.key != caller.key)):
                return None
        here = caller
    if not ours or here is None:
        return None
    for step, _ in ours:
        step.expected = "input_requires_grad"
        # The cause is the call that passed the tensor now requiring grad, not where the function first uses it
        # (its TENSOR_MATCH guard's line): every call is from `here`, so that call is here.
        for guard in step.failed_guards:
            guard.location, guard.location_kind = here, "call"
    ids = list(dict.fromkeys(cid for step, _ in ours for cid in [*(g.compile_id for g in step.failed_guards),
                                                                   step.compile_id] if cid))
    tensors = list(dict.fromkeys(user_source_name(g.tensor) for step, _ in ours for g in step.failed_guards if g.tensor))
    chained = here.code is not None and re.match(_CHAINED_CALL, here.code) is not None
    return SAME_CALL_REQUIRES_GRAD_ADVICE.format(
        compiles=and_list(ids), function=function, where=here.short, code=f" (`{here.code.strip()}`)" if here.code else "",
        tensors=and_list([f"`{t}`" for t in tensors]), chained=CHAINED_CALL if chained else "", count=len(ids),
        first=tensors[0])


_ATTRIBUTE_GUARD = lazy_compile(r"^(?P<object>[A-Za-z_][\w.\[\]'\"]{0,500}?)\.(?P<attribute>[A-Za-z_]\w{0,200}) == "
                                r"(?P<value>.{1,1000})$")


def _subclass_metadata(entry: Compile | None, source: str) -> str | None:
    """The metadata a compile's description of the traceable tensor subclass at source gives (its ctx)."""
    return next((str(d["ctx"]) for d in (entry.subclass_tensors if entry is not None else [])
                 if d.get("source") == source and d.get("ctx") is not None), None)


def _subclass_guards(steps: list[tuple[RecompileStep, Compile]], texts: _CompileTexts,
                     by_id: dict[str, Compile]) -> dict[str, list[str]]:
    """Names the tensor subclass a failed guard is about, from the guarded compile's guard tree: the instance whose
    __tensor_flatten__ metadata changed (with its values before and now), or whose attribute the traced code read
    (`x.unit == 'cm'`, x a UnitTensor). Returns the advice for each kind of change it explains."""
    metadata: list[str] = []
    attributes: list[FailedGuard] = []
    for step, entry in steps:
        for guard in step.failed_guards:
            m = _ATTRIBUTE_GUARD.match(guard.guard) if guard.change == "constant" else None
            # (a guard tree is read only for a guard it can explain, and let go before the next: trees are large)
            tree = None
            tree = texts(guard.compile_id, GUARDS_ARTIFACT) if guard.change == "subclass_metadata" or m else None
            if tree is None:
                continue
            if guard.change == "subclass_metadata":
                source = guarded_source(tree, guard.guard)
                if source is None:
                    continue
                line = tensor_check(tree, source)
                typ = object_type(tree, source)
                guard.subclass = tensor_subclass(tree, source) or (typ.rsplit(".", 1)[-1] if typ else None)
                guard.subclass_object = user_source_name(source)
                guard.metadata_before = _subclass_metadata(by_id.get(guard.compile_id or ""), source)
                guard.metadata_after = _subclass_metadata(entry, source)
                if guard is step.guard and line is not None:
                    values = (f" ({guard.metadata_before} when {guard.compile_id} compiled, {guard.metadata_after} "
                              f"at this call)" if guard.metadata_before and guard.metadata_after else "")
                    advice = SUBCLASS_METADATA_ADVICE.format(name=f"`{guard.subclass_object}`", cls=guard.subclass,
                                                             values=values)
                    if advice not in metadata:
                        metadata.append(advice)
                continue
            found = next(((src, cls) for src in (_tree_sources(m["object"]) if m else [])
                          if (cls := tensor_subclass(tree, src)) is not None), None)
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


def _same_number(a: str | None, b: str) -> bool:
    """sympy's "0.00466666666666667" and Python's "0.004666666666666667" are one value (sympy keeps 15 digits)."""
    try:
        return math.isclose(float(a or ""), float(b), rel_tol=1e-12)
    except ValueError:
        return False


def _value_specialization(guard: FailedGuard, specializations: list[Specialization]) -> Specialization | None:
    """The specialization, in the compile the guard guarded, of the number a value guard compares
    (`___as_tensor(self.param_groups[0]['lr']).item() == 0.004666666666666667`: the float lr that compile made a symbol
    and then fixed): what a guard torch could not name the source of ("unknown source ..., please file a bug") came
    from."""
    m = _VALUE_GUARD.match(guard.guard)
    if m is None:
        return None
    read = m["tensor"] or m["name"]
    return next((spec for spec in specializations
                 if spec.compile_id == guard.compile_id and _same_number(spec.value, m["value"])
                 and any(FRAME_SOURCE.sub(r"\1", src) == read for src in spec.sources)), None)


def link_specializations(found: Recompiles, specializations: list[Specialization]) -> None:
    """Ties each size guard that failed to the specialization of that size in the compile it guarded (a size torch
    made static because a line fixed it, as transformers' GPT-2 did in generate()), and says so in the advice; and each
    value guard to the specialization of that number (a compiled optimizer's lr), which says where it was read."""
    for frame in found.frames:
        sizes = False
        for step in frame.steps:
            guard = step.guard
            if guard is None:
                continue
            m = _SIZE_GUARD.match(guard.guard) if guard.change == "size" else None
            if m is not None:
                source = f"{m['tensor']}.size()[{m['dim']}]"
                step.specialized = next((spec for spec in specializations
                                         if spec.compile_id == guard.compile_id and spec.value == m["size"]
                                         and any(FRAME_SOURCE.sub(r"\1", src) == source for src in spec.sources)), None)
                sizes = sizes or step.specialized is not None
            elif guard.change != "size":
                step.specialized = _value_specialization(guard, specializations)
            if step.specialized is not None and step.specialized.recompile is None:
                step.specialized.recompile = step.compile_id
        # (the advice is on sizes: a number's guard, the optimizer's lr, has its own)
        if sizes and SPECIALIZED_ADVICE not in frame.advice:
            frame.advice.insert(0, SPECIALIZED_ADVICE)
        _number_specialized_again(frame)


def _number_specialized_again(frame: FrameRecompiles) -> None:
    """Where a number torch made dynamic (a Python int past a graph break, say) was specialized again by a line of
    that compile, the advice that automatic dynamic took care of it is wrong: say which line fixed it instead."""
    again = [st for st in frame.steps if st.guard is not None and st.guard.change == "constant"
             and st.specialized is not None and st.specialized.location is not None]
    if not again:
        return
    spec = again[0].specialized
    assert spec is not None and spec.location is not None
    names = ", ".join(dict.fromkeys(st.dynamic_of for st in frame.steps
                                    if st.guard is not None and st.guard.change == "constant" and st.dynamic_symbol))
    where = spec.location.short + (f" (`{spec.location.code}`)" if spec.location.code else "")
    advice = NUMBER_SPECIALIZED_AGAIN.format(names=names or "the number", compile_id=spec.compile_id, where=where,
                                             item=ITEM_IN_GRAPH if ".item()" in names else "")
    made = NUMBER_MADE_DYNAMIC.split("{names}", 1)[0]
    frame.advice = [advice if a.startswith(made) and "(automatic dynamic)" in a else a for a in frame.advice]
    if advice not in frame.advice:
        frame.advice.insert(0, advice)


def _number_dynamic_failed(names: str, step: RecompileStep, entry: Compile | None, function: str | None) -> str:
    """NUMBER_DYNAMIC_FAILED for the recompile `step`, which made the number dynamic and failed: where (the line its
    failure names, with torch's first line of it) and what to do (a value of .item(): read it outside)."""
    metrics = (entry.metrics if entry is not None else None) or {}
    line = metrics.get("fail_user_frame_lineno")
    filename = metrics.get("fail_user_frame_filename")
    reason = str(metrics.get("fail_reason") or "").strip().splitlines()
    at = (f" at {UserLocation(str(filename), line).short}" if filename and isinstance(line, int) else "") + (
        f" ({reason[0]})" if reason else "")
    return NUMBER_DYNAMIC_FAILED.format(names=names, compile_id=step.compile_id, at=at,
                                        function=function_label(function) or "the function",
                                        fix=ITEM_OUTSIDE if ".item()" in names else NUMBER_OUTSIDE)


def link_times(found: Recompiles, times: CompileTimes) -> None:
    """Says when each recompile happened and what it cost, from the compile-time timeline: its start (from the log's
    first record), how long after the frame's compile before it ended, and its compile time."""
    spans: dict[str, tuple[float, float]] = {}
    for row in times.timeline:
        if row.compile_id is None:
            continue
        key = compilation_key(row.compile_id)
        start, end = spans.get(key, (row.start_s, row.start_s + row.duration_s))
        spans[key] = (min(start, row.start_s), max(end, row.start_s + row.duration_s))
    cost = {c.compile_id: c.total_s for c in times.compiles}
    unfinished = {c.compile_id for c in times.compiles if c.unfinished}
    for frame in found.frames:
        ids = [compilation_key(cid) for cid in frame.chain]
        for step in frame.steps:
            key = compilation_key(step.compile_id)
            span = spans.get(key)
            if span is None:
                continue
            step.started_s = span[0]
            step.cost_s = cost.get(key)
            step.unfinished = key in unfinished
            before = ids[:ids.index(key)] if key in ids else []
            ended = [spans[k][1] for k in before if k in spans]
            if before and ended:
                step.previous = frame.chain[len(before) - 1]
                step.quiet_s = max(span[0] - max(ended), 0.0)


def recompiles(trace: Trace, stack_values: StackValues | None = None) -> Recompiles:
    """stack_values: the log's, where the caller names sources for other analyses too (read here otherwise)."""
    known = _known_files(trace)
    compiled_frames = CompiledFrames(trace)
    stack_values = stack_values if stack_values is not None else StackValues(trace)
    result: list[FrameRecompiles] = []
    attempts_of = _attempts(trace)
    for (_, frame_id), entries in _frames(trace).items():
        chain_entries = [e for e in entries if (e.compile_id.frame_compile_id or 0) > 0]
        limit_entry = next((e for e in entries if re.search(_LIMIT, str((e.metrics or {}).get("fail_reason") or ""))), None)
        if not chain_entries and limit_entry is None:
            continue
        steps: list[tuple[RecompileStep, Compile]] = []
        for i, e in enumerate(entries):
            if (e.compile_id.frame_compile_id or 0) == 0:
                continue
            step = _step(trace, e, attempts_of)
            # After failed compiles only, nothing was cached, so nothing was compiled again: a program that caught
            # a fullgraph=True error and compiled the function anew. No guard failed, and torch gives no reason.
            if not step.failed_guards and all((p.metrics or {}).get("fail_type") for p in entries[:i]):
                continue
            steps.append((step, e))
        if not steps and limit_entry is None:
            continue
        named = next((e for e in entries if (e.metrics or {}).get("co_name")), None)
        metrics = named.metrics if named else {}
        name = metrics.get("co_name")
        if name is None:
            frame = next((e.stack[-1] for e in entries if e.stack), None)
            name = frame.name if frame else None
        filename = metrics.get("co_filename")
        first_line = metrics.get("co_firstlineno")
        code = UserLocation(str(filename), first_line, name) if filename and isinstance(first_line, int) else None
        # torch names a cached compilation without its attempt ("0/0"); the chain shows the attempt that was cached
        # ("[0/0_1]", after a restart), so a guard names the compile id the chain shows.
        shown = {e.compile_id.compilation: str(e.compile_id) for e in entries}
        for step, _ in steps:
            for guard in step.failed_guards:
                if guard.compile_id is not None:
                    guard.compile_id = shown.get(guard.compile_id, guard.compile_id)
        texts = _CompileTexts(trace, entries)
        trees = _PinnedByTrees(texts)
        sized_advice, sizes = _place_failed_checks(steps, texts, code, known, compiled_frames, stack_values)
        hooked = _link_state_changes(steps, trees)
        _mark_expected(steps, trees)
        by_id = {str(e.compile_id): e for e in entries}
        _place_size_one_guards(steps, by_id)
        _place_argument_guards(steps, code, compiled_frames)
        state_advice = _place_state_guards(steps, by_id, compiled_frames)
        same_call_advice = _same_call_requires_grad(steps, by_id, compiled_frames, function_label(name) or "a function")
        subclass_advice = _subclass_guards(steps, texts, by_id)
        limit = None
        if limit_entry is not None:
            m = re.search(_LIMIT_VALUE, str(limit_entry.metrics.get("fail_reason")))
            limit = int(m.group(1)) if m else None
        counts = Counter(s.guard.change for s, _ in steps if s.guard)
        changes = [c for c, _ in counts.most_common()]
        advice: list[str] = []
        failed_lengths = length_failures(steps)
        histories: dict[str, LengthHistory | None] = {}  # source -> its length_history, made once

        def history(source: str) -> LengthHistory | None:
            if source not in histories:
                histories[source] = length_history(source, failed_lengths.get(source, set()), entries, trees,
                                                   steps[-1][0].compile_id if steps else None)
            return histories[source]

        for c in changes:
            numbers = [st for st, _ in steps if st.guard is not None and st.guard.change == "constant"]
            if c == "constant" and all(st.dynamic_symbol for st in numbers):
                # automatic dynamic took care of it, the number a symbol from then on; unless that compile failed
                names = ", ".join(dict.fromkeys(st.dynamic_of for st in numbers))
                failed = next((st for st in numbers if st.failed), None)
                if failed is not None:
                    advice.append(_number_dynamic_failed(names, failed, by_id.get(failed.compile_id), name))
                    continue
                advice.append(NUMBER_MADE_DYNAMIC.format(names=names, recompiles=count(len(numbers), "recompile")))
                continue
            if c in subclass_advice:
                advice.extend(subclass_advice[c])
                if c == "subclass_metadata" or all(st.guard.subclass for st, _ in steps
                                                   if st.guard is not None and st.guard.change == c):
                    continue
            attributes = list(dict.fromkeys(st.dynamic_of for st in numbers if st.attribute and not st.dynamic_symbol))
            if c == "constant" and attributes:
                advice.append(ATTRIBUTE_ADVICE.format(names=and_list([f"`{a}`" for a in attributes])))
                if all(st.attribute and not st.dynamic_symbol for st in numbers):
                    continue
            if c == "length":
                advice.extend(length_advice([st.guard for st, _ in steps if st.guard and st.guard.change == c],
                                            _mutations(trace, entries), history, len(steps)))
                continue
            if c == "flag":
                advice.extend(flag_advice([st.guard for st, _ in steps if st.guard and st.guard.change == c]))
                continue
            if c == "global_state" and state_advice:
                advice.extend(state_advice)
                continue
            params = [g.tensor for st, _ in steps for g in st.failed_guards[:1] if g.change == c]
            if c == "requires_grad" and params and all(t is not None and "._parameters[" in t for t in params):
                names = and_list([f"`{user_source_name(t)}`" for t in dict.fromkeys(t for t in params if t)])
                advice.append(PARAMETER_REQUIRES_GRAD_ADVICE.format(params=names))
                continue
            if c == "requires_grad" and same_call_advice:
                advice.append(same_call_advice)
                continue
            if c == "dtype" and (numpy := numpy_dtype_advice(
                    [g for st, _ in steps for g in st.failed_guards if g.change == "dtype"])):
                advice.append(numpy)
                continue
            if c != "size":
                advice.append(ADVICE[c])
                continue
            advice.extend(sized_advice)
            if sizes or not sized_advice:
                advice.append(size_advice(sizes, compiled_static(entries)))
        if hooked:
            advice.insert(0, HOOK_ADVICE.format(modules=and_list(list(dict.fromkeys(c.name for _, c in hooked))),
                                                compile_ids=", ".join(dict.fromkeys(cid for cid, _ in hooked))))
        if limit_entry is not None:
            advice.insert(0, f"This function hit the recompile limit{f' ({limit})' if limit else ''} and now runs "
                             "without compiling: fix the failing guard above; raising "
                             "torch._dynamo.config.recompile_limit only postpones it.")
        if name == "__torch_dispatch__" and (alone := _dispatch_compiled_alone(trace, entries, compiled_frames)):
            advice.insert(0, alone)
        called_from: list[UserLocation] = []
        if filename and code_origin(str(filename)) is not None:
            for e in entries:
                # (Dynamo logs the stack when an attempt starts: a restarted one, [0/1_1], has none; its [0/1] has.)
                loc = compiled_frames.called_from(e.compile_id)
                if loc is not None and all(loc.key != seen.key for seen in called_from):
                    called_from.append(loc)
        result.append(FrameRecompiles(
            frame_id=frame_id, name=name, filename=filename, first_line=first_line,
            chain=[str(e.compile_id) for e in entries], steps=[s for s, _ in steps], hit_limit=limit_entry is not None,
            limit=limit, changes=changes, advice=advice, called_from=called_from, module=wrapped_module(trace, entries),
        ))
    result.sort(key=lambda f: (not f.hit_limit, -f.recompiles))
    return Recompiles(result, backward_graphs(trace), compiled_afresh(trace), renumbered_after_reset(trace),
                      renumbered_other_process(trace))


# A wrapper subclass's __torch_dispatch__ Dynamo compiled as a frame of its own: the frame that called the op on it was
# skipped (a graph break it could not resume from) and ran eagerly, so each op on the subclass reached its dispatch.
DISPATCH_ALONE_ADVICE = (
    "This is {cls}.__torch_dispatch__, your tensor subclass's, compiled on its own: Dynamo skipped {skipped} "
    "({where}, {compile_id}) at its graph break and ran it eagerly, so each op it ran on a {cls} called "
    "__torch_dispatch__, which Dynamo compiled as a frame (its recompiles are this frame's). Fix that break first: "
    "once {skipped} compiles, its graph takes the op and {cls}.__torch_dispatch__ is no frame of its own.")


def _dispatch_compiled_alone(trace: Trace, entries: list[Compile], compiled_frames: CompiledFrames) -> str | None:
    """Why a __torch_dispatch__ frame was compiled (DISPATCH_ALONE_ADVICE), where one of its compiles was called from
    the user's line that called a frame Dynamo skipped after a graph break ([1/0]'s forward and [2/0]'s
    __torch_dispatch__ both from main's `compiled(...)` line); None where none was."""
    callers = {loc.key for e in entries if (loc := _caller(compiled_frames.stack(e.compile_id))) is not None}
    for entry in trace.sorted_compiles():
        caller = _caller(compiled_frames.stack(entry.compile_id)) if entry.compile_id is not None else None
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
                                                compile_id=str(entry.compile_id))
    return None


def limit_steps(frame: FrameRecompiles) -> list[str]:
    """What to do about a frame that hit the recompile limit, as the Errors section says it: the guard that kept
    failing, then the frame's own advice (the Recompiles section's, word for word)."""
    guarded = [s for s in frame.steps if s.guard is not None]
    if not guarded:
        return list(frame.advice)
    step, guards = guarded[-1], [s.guard for s in guarded]
    last = step.guard
    assert last is not None
    subjects = {s.dynamic_of for s in frame.steps}
    where = f", at {last.location.short}" if last.location is not None else ""
    code = f" ({last.location.code.strip()})" if last.location is not None and last.location.code else ""
    # (whose guard, by the chain: the id torch's reason starts with counts frames from 0 again after a reset)
    at = frame.chain.index(step.compile_id) if step.compile_id in frame.chain else 0
    of = f" ({frame.chain[at - 1]}'s)" if at > 0 else ""
    if len(subjects) == 1 and "" not in subjects and len(guards) == len(frame.steps) > 1:
        said = (f"Each of its {len(frame.steps)} recompiles failed a guard on `{subjects.pop()}`, the last "
                f"`{last.shown}`{of}{where}{code}.")
    else:
        said = f"The guard that failed last: `{last.shown}`{of}{where}{code}."
    return [said, *frame.advice]


def name_failing_guards(errors: CompileErrors, rec: Recompiles) -> None:
    """A recompile limit's next steps, from the recompiles analysis where it has the frame: the guard that kept
    failing and what to do about it, as the Recompiles section says it, instead of the general steps."""
    by_compile = {cid: frame for frame in rec.frames if frame.hit_limit for cid in frame.chain}
    for err in errors.errors:
        frame = by_compile.get(err.compile_id) if err.stage == RECOMPILE_LIMIT else None
        if frame is not None and frame.steps:
            err.next_steps = limit_steps(frame)


def backward_graphs(trace: Trace) -> list[BackwardGraph]:
    """Compiled autograd's graphs, [!0], [!1], ..., with the compiles of each and why its cache missed."""
    graphs: dict[int, BackwardGraph] = {}
    for cid in sorted((c for c in trace.compiles if c is not None and c.compiled_autograd_id is not None),
                      key=lambda c: c.sort_key()):
        graph = graphs.setdefault(cid.compiled_autograd_id, BackwardGraph(cid.compiled_autograd_id, []))
        graph.compile_ids.append(str(cid))
        for artifact in trace.compiles[cid].artifacts:
            if artifact.name == BACKWARD_ARTIFACT:
                graph.reason = _backward_reason(graph.id, reasons_payload(trace.payload_text(artifact.payload)))
    return list(graphs.values())


def _backward_reason(graph_id: int, reasons: list[str]) -> str | None:
    """This graph's reason among its cache's ("!1: Cache miss due to ...", one per capture so far)."""
    prefix = f"!{graph_id}: "
    mine = next((r for r in reversed(reasons) if r.startswith(prefix)), reasons[-1] if reasons else None)
    return mine[len(prefix):] if mine and mine.startswith(prefix) else mine



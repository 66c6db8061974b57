"""Recompiles: per frame, the chain [0/0] -> [0/1] -> ... with the guard that failed each time; and the backward
graphs compiled autograd captured ([!0], [!1], ...), a new one each time its cache missed.

Sources: `compilation_metrics.recompile_reason` (the guard of the newest cache entry)
and the `recompile_reasons` artifact (one reason per cache entry tried; with a single
reason torch logs the bare string although the encoding says json). Compiled autograd's
`compiled_autograd_compile_reasons` artifact ("!1: Cache miss due to ...", every reason
of that cache so far), which torch logs only with TORCH_LOGS=compiled_autograd_verbose.

This module holds the analysis's classes (saved results name each by module and name: model/codec.type_name) and the
helpers their methods use; it imports none of its modules, which import it:
  analysis.py             recompiles(trace), the analysis: each frame's compiles; frames.py is imported for a log
                          that recompiled (most logs do not), with the modules it calls
  frames.py               each recompiled frame explained: one step per recompile, its guards placed, its advice
  reasons.py              torch's recompile reasons read into failed guards, and the kind of change each guard checks
  placement.py            where the user's code meets each failed guard: a tensor's first use, the call that passed it
  advice.py               what to do about each kind of change, and the advice that names the sizes, bools and numbers
  settings.py             what else changed (a module's mode, requires_grad, a hook, grad mode), and whether each
                          recompile was expected or avoidable
  lengths.py              containers whose length changed: a list the compiled code appends to, how its length went
  models.py               two models of one class running one compiled forward: a dtype recompile that is no cast
  subclasses.py           tensor subclasses: guarded metadata and attributes, a __torch_dispatch__ compiled on its own
  backward_and_resets.py  compiled autograd's backward graphs; functions compiled afresh after torch._dynamo.reset()
  links.py                what other analyses add: the specialization behind a guard (dynamic shapes), when each
                          recompile ran and what it cost (compile time), the recompile limit's next steps (errors),
                          the lines that switched a module's mode or requires_grad (state_lines)
"""

from __future__ import annotations

import os
import re
from dataclasses import field
from typing import Any

from ...lazy_regex import lazy_compile
from ...model.ids import compilation_key
from ...model.records import dataclass
from ...model.trace import Compile, Trace
from ...model.payloads import PayloadRef
from ...wording import LISTED, Listed, and_list, count, cut, format_seconds, times
from ..compile_time import STILL_COMPILING
from ..compiled_frames import module_label
from ..dynamic_shapes import PlacementPart, SPECIALIZATION_REASONS, Specialization, number_text
from ..graph_breaks.resume_names import function_label, function_title
from ..installed_guards import GUARDS_ARTIFACT, GuardTree, GuardTrees, pinned_lengths, pinned_state, tree_closures
from ..stack_values import name_stack_values
from ..user_locations import (FRAME_SOURCE, NUMPY_SOURCE, UserLocation, called_at_text, closure_variables, code_owner,
                              name_closures, user_source_name)

BACKWARD_REASONS_HINT = "TORCH_LOGS=compiled_autograd_verbose"  # without it, torch does not log why

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

# A NumPy array the compiled function takes is guarded as the tensor Dynamo makes of it, `___from_numpy(a)`
# (user_locations.NUMPY_SOURCE); its failed dtype check names torch's dtypes ("expected Float, actual
# Double"), said as NumPy names them.
TORCH_DTYPE_WORDS = lazy_compile(r"(?<=expected )(?P<expected>\w{1,40}), actual (?P<actual>\w{1,40})")
NUMPY_DTYPES = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16", "Int": "int32",
                "Long": "int64", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
                "ComplexFloat": "complex64", "ComplexDouble": "complex128"}


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
        said = TORCH_DTYPE_WORDS.sub(lambda m: f"{NUMPY_DTYPES.get(m['expected'], m['expected'])}, actual "
                                                f"{NUMPY_DTYPES.get(m['actual'], m['actual'])}", said)
    return said


# What a failed guard's location is, and the words that precede it where it is shown.
LOCATION_KINDS = {
    "guard": "at",  # the line that made the guard (torch's comment on it, or its user stack)
    "first_use": "{tensor} first used at",  # where the compile whose guard failed first used the tensor
    "function": "{tensor} is an input of the compiled function at",  # nothing finer: the function's def line
    # The compiled frame and the tensor's first use are both torch's (DDP's `inner`, a compiled module's wrapper):
    # the user's line that called it is where the tensor came in.
    "call": "{tensor} passed in by the call at",
    # An expression the user's call passed (`cm(torch.randn(n, 4), ...)`), said by its place: "forward's x, the first
    # argument of the call at".
    "argument": "{tensor} of the call at",
    # How many arguments, or which keywords, a call of a library's frame passes (transformers' wrapped_func, whose
    # guard torch places in the decorator's own code): the user's call that passed them so.
    "arguments_call": "arguments passed by the call at",
    # A global state guard (grad mode) names nothing of the code: the user's line that called under the other state.
    "state_call": "called under the new state from",
}


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
        size = SIZE_GUARD.match(self.guard) if self.marked else None
        return size["size"] if size else None

    @property
    def change_label(self) -> str:
        return CHANGE_LABELS[self.change]

    @property
    def compilation(self) -> str | None:
        """The cached compilation whose guard failed, as the steps say it ("[1/0]" for [1/0_1]: compilation_label)."""
        return compilation_label(self.compile_id)

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


def compilation_label(compile_id: str | None) -> str | None:
    """A compile id as the recompile steps say it, by compilation like FrameRecompiles.compilations: "[1/0]" for
    [1/0_1] (attempt 1 is Dynamo's restart within [1/0], not a recompile; the chain's restarts line says it). The
    ids themselves stay in the JSON and the report's links, which lead to the attempt that compiled."""
    return compilation_key(compile_id) if compile_id is not None else None


def _rounded(seconds: float | None) -> float | None:
    return round(seconds, 6) if seconds is not None else None


# What a change of module state found by comparing guard trees means, by the attribute that changed.
_HOOK_KINDS = {"_forward_hooks": "forward hook", "_forward_pre_hooks": "forward pre-hook",
               "_backward_hooks": "backward hook", "_backward_pre_hooks": "backward pre-hook"}


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


# A wrapper frame's own *args and **kwargs (transformers' wrapped_func(*args, **kwargs)): names the user never wrote;
# their length is how many arguments the user's call passed, said so (StateChange.users_name).
PASSED_ARGUMENTS = {"args": "the positional arguments passed", "kwargs": "the keyword arguments passed"}


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
    # The object in the user's words where the frame is a wrapper that passes them on (UsersNames.of):
    # "cache.layers[0].is_initialized" for transformers' wrapped_func's kwargs['cache'].layers[0].is_initialized;
    # None where name says it as it is (source keeps torch's).
    users_name: str | None = None

    @property
    def of(self) -> str:
        """The source whose state it is: the container of a length (G['history'] of len(G['history']))."""
        return self.source[4:-1] if self.kind == "length" else self.source

    @property
    def name(self) -> str:
        """The object in the user's words: self.dropout.training, self.head (for its hooks), seen (a closure's)."""
        if self.users_name is not None:
            return self.users_name
        return self.own_name

    @property
    def own_name(self) -> str:
        """name as the compiled frame's own code names it (kwargs['cache'].layers[0] in a wrapper)."""
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
        if self.kind == "length":  # (the arguments a wrapper was passed: how many, "0 → 6", not their dict's length)
            counted = self.users_name is not None and self.users_name in PASSED_ARGUMENTS.values()
            return f": {'' if counted else 'length '}{self.before} → {self.after}"
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
            return (f"expected or avoidable: the log cannot tell ({compilation_label(self.unknown_settings)} has no guard tree to "
                    "compare settings with)")
        same = self.same_settings
        if same is None:
            return None
        return (f"avoidable: {same.compilation} had these settings (modules' modes, parameters' requires_grad) and "
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
            text += f", {format_seconds(self.quiet_s)} after {compilation_label(self.previous)} was compiled"
        if self.unfinished:
            text += f"; {STILL_COMPILING}" + (f", {format_seconds(self.cost_s)} in" if self.cost_s is not None else "")
        elif self.cost_s is not None:
            text += f"; took {format_seconds(self.cost_s)}"
        return text

    previous: str | None = None  # the frame's compile before this one ("[0/3]")

    @property
    def also_changed_listed(self) -> Listed[StateChange]:
        """The first LISTED of also_changed, as a page or the terminal names them, and how many more: a model of
        1,200 modules whose mode flipped changed 2,400 values (--json keeps them all)."""
        return cut(self.also_changed)

    @property
    def also_changed_rest(self) -> list[StateChange]:
        """The changes also_changed_listed leaves out, for a page that shows them folded."""
        return self.also_changed[LISTED:]

    @property
    def also_changed_more_text(self) -> str | None:
        """"and 63 more also changed since [0/0]", where also_changed_listed leaves some out; None otherwise."""
        more, guard = self.also_changed_listed.more, self.guard
        if not more or guard is None:
            return None
        return f"and {more} more also changed since {guard.compilation}"

    @property
    def guard(self) -> FailedGuard | None:
        return self.failed_guards[0] if self.failed_guards else None

    @property
    def compilation(self) -> str:
        """The recompilation as the steps say it: "[1/1]" for [1/1_1] (compilation_label); compile_id is the attempt
        that compiled it, which the report's link leads to."""
        return compilation_key(self.compile_id)

    @property
    def dynamic_text(self) -> str | None:
        """"[0/1] compiled x's dimension 0 as dynamic (s27)", "[1/1] compiled n as dynamic (s86)", for people."""
        return (f"{self.compilation} compiled {self.dynamic_of} as dynamic ({self.dynamic_symbol})"
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
        text = f"{compilation_label(spec.compile_id)} had specialized {spec.symbol} = {number_text(spec.value)}" + (f" ({why})" if why else "")
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
    # Where the frame is a wrapper that passes its arguments on to the user's function (torch.no_grad's decorator,
    # compiled as wrap_inline's `inner`: compiled_frames.wrapped_by_passing_on): that function's name ("scale"),
    # which the frame is named by; None otherwise.
    runs: str | None = None
    # Where another frame of the log has the same code's name, file and first line (the two resume functions Dynamo
    # makes after a graph break at an `if`, one for each way it goes): its first compile id ("[1/0]"), which names it
    # apart ("forward (after its graph break at line 26, first compiled as [1/0])"); None otherwise.
    named_apart: str | None = None

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
    def compilations(self) -> list[str]:
        """The chain as the recompiles went: "[1/0]", "[1/1]". A chain's id is each compilation's last attempt, and
        "[1/0_1] → [1/1_1]" read as if the attempt were part of the step (attempt 1 is a restart within [1/0], not
        a recompile); the restarts are said apart (restarts)."""
        return [compilation_key(cid) for cid in self.chain]

    @property
    def restarts(self) -> str | None:
        """"[1/0] and [1/1] each compiled after a restart ([1/0_1], [1/1_1]: ...)", for the chain's compilations
        compiled in a restarted attempt; None where none was."""
        restarted = [(label, cid) for label, cid in zip(self.compilations, self.chain) if label != cid]
        if not restarted:
            return None
        labels, cids = and_list([label for label, _ in restarted]), ", ".join(cid for _, cid in restarted)
        which = f"{labels} each" if len(restarted) > 1 else labels
        return f"{which} compiled after a restart ({cids}: Dynamo restarted its analysis, most often at a graph break)"

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
        expected = [s.compilation for s in self.steps if s.expected is not None]
        if not expected and not self.unknown:
            return None
        # (by compilation, as the steps read: avoidable and unknown keep the compile ids for the JSON)
        avoidable, unknown = [compilation_key(c) for c in self.avoidable], [compilation_key(c) for c in self.unknown]
        parts = [f"{len(avoidable)} avoidable ({', '.join(avoidable)})" if avoidable else "",
                 f"{len(expected)} expected ({', '.join(expected)})" if expected else "",
                 f"{len(unknown)} the log cannot tell (no guard trees to compare: {', '.join(unknown)})"
                 if unknown else ""]
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
        return module_label(self.module) if self.module else self.runs or self._function_apart(function_label(self.name)) or "?"

    def _function_apart(self, label: str) -> str:
        """label, with the frame's first compile id where another frame's code has the same name (named_apart):
        "forward (after its graph break at line 26, first compiled as [1/0])"."""
        if not label or self.named_apart is None:
            return label
        if label.endswith(")"):
            return f"{label[:-1]}, first compiled as {self.named_apart})"
        return f"{label} (first compiled as {self.named_apart})"

    @property
    def heading_title(self) -> str | None:
        """What stands behind its heading (function_label), for the heading's title: module_title, or "Dynamo's
        resume function torch_dynamo_resume_in_forward_at_26"; None where the heading is the function's own name."""
        return self.module_title or function_title(self.name)

    @property
    def module_title(self) -> str | None:
        """What a frame named by its module is (a heading's title): "transformers' wrapped_func, which runs the
        LlamaForCausalLM compiled", "torch's inner, which runs scale" (a function it passes its arguments on to),
        its owner from its file; None where it is not named so."""
        if not self.module and not self.runs:
            return None
        owner = code_owner(self.filename)
        runs = f"the {self.module} compiled" if self.module else self.runs
        return f"{owner + ' ' if owner else ''}{self.name}, which runs {runs}"

    @property
    def display_name(self) -> str:
        """Its name in a sentence: "forward (after its graph break at line 22)" for Dynamo's resume function
        torch_dynamo_resume_in_forward_at_22, "Sequential's forward" for torch's `inner` running a module, else its
        own name."""
        return (module_label(self.module) if self.module else self.runs
                or self._function_apart(function_label(self.name)) or "a function")

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
            "frame_id": self.frame_id, "name": self.name, "module": self.module, "runs": self.runs,
            "named_apart": self.named_apart, "label": self.function_label, "filename": self.filename,
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


@dataclass
class RenumberedAfterReset:
    """A compile the reader numbered on after torch._dynamo.reset() (ingest/resets.py): torch logged it, and names it
    in its messages, with the frame id counted from 0 again."""

    compile_id: str  # as the report names it: "[3/0]"
    logged_as: str  # as torch logged it: "[0/0]"

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "logged_as": self.logged_as}


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
        shown = [compilation_label(cid) or cid for cid in self.changed]  # (by compilation, as the steps read)
        at = (f"{shown[0]} to {shown[-1]}" if n > 3 else and_list(shown))
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


# A failed size check, as torch words it (FailedGuard.marked_size reads it, as placement and links do).
SIZE_GUARD = lazy_compile(r"^tensor '(?P<tensor>.{1,500}?)' size mismatch at index (?P<dim>\d{1,6})\. expected (?P<size>\d{1,20}),")


class CompileTexts:
    """The guard tree (dynamo_cpp_guards_str) or graph (dynamo_output_graph) of a compilation of the frame, read when
    asked and not kept: a frame recompiled a thousand times would hold a thousand guard trees. A guard tree as
    GuardTrees parsed it (guard_tree) is read once a report; its text only where a reader needs what it does not parse."""

    def __init__(self, trace: Trace, entries: list[Compile], guard_trees: GuardTrees) -> None:
        self._trace = trace
        self._entries = {str(e.compile_id): e for e in entries}
        self._guard_trees = guard_trees

    def guard_tree(self, compile_id: str | None) -> GuardTree | None:
        """The guard tree of the compilation, parsed (GuardTrees); None where the log has none."""
        payload = self.payload(compile_id, GUARDS_ARTIFACT)
        return self._guard_trees.of(payload) if payload is not None else None

    def __call__(self, compile_id: str | None, name: str) -> str | None:
        payload = self.payload(compile_id, name)
        return self._trace.payload_text(payload) if payload is not None else None

    def payload(self, compile_id: str | None, name: str) -> PayloadRef | None:
        entry = self._entries.get(compile_id) if compile_id is not None else None
        return next((a.payload for a in entry.artifacts if a.name == name and a.payload is not None),
                    None) if entry is not None else None


class PinnedByTrees:
    """What each guard tree of the frame pins (pinned_state, pinned_lengths, the settings of EXPECTED), each worked
    out once per analysis run, the first time it is asked for, from the tree as GuardTrees parsed it: what else
    changed, expected or avoidable and a list's lengths all compare the trees compile against compile, and each
    reading its trees per step or per failed guard was quadratic in the frame's recompiles."""

    def __init__(self, texts: CompileTexts) -> None:
        self._texts = texts
        self._pinned: dict[str, tuple[dict[str, str], dict[str, int], dict[str, str]] | None] = {}
        self.closures: dict[str, str] = {}  # the closure variables the trees read so far name, by cell

    def _of(self, cid: str) -> tuple[dict[str, str], dict[str, int], dict[str, str]] | None:
        if cid not in self._pinned:
            tree = self._texts.guard_tree(cid)
            if tree is None:
                self._pinned[cid] = None
            else:
                state, lengths = pinned_state(tree), pinned_lengths(tree)
                self._pinned[cid] = ({**state, **tree_lengths(lengths)}, lengths, _intended_settings(state))
                self.closures.update(tree_closures(tree))
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


def _intended_settings(state: dict[str, str]) -> dict[str, str]:
    """The settings of EXPECTED a compile's guard tree pins (pinned_state: a module's training flag, a parameter's
    requires_grad)."""
    return {k: v for k, v in state.items()
            if k.endswith(".training") or (k.endswith(".requires_grad") and "._parameters[" in k)}

"""Dynamic shapes: symbols created, specializations and guards added, each with its user location.

From `create_symbol` / `create_unbacked_symbol`, `symbolic_shape_specialization` and
`guard_added_fast` / `guard_added` (the last two ask the same question: which user line
made a size concrete or added a condition on it).

The events are kept one by one (--json, and the page's folded table); what a person reads first is them grouped
(group_specializations, group_sizes, group_guards). Two GPU logs of transformers' GPT-2: training it
(gpt2_train, the shared traces' gpu-torch211) adds 28 guards, 24 of them where no line of the model ran (an empty
user stack); generating with it (hf_gpt2_generate, tests/data/cuda_torch211) creates 8 symbols for 6 sizes.
--json has both: a script reads the groups without redoing them.
"""

from __future__ import annotations

from dataclasses import field
from functools import cached_property
import math
import re

import orjson
from typing import Any, Callable, ClassVar, Hashable, Iterable, TypeVar

from ..lazy_regex import lazy_compile
from ..model.ids import CompileId, compilation_key
from ..model.trace import Compile, Trace
from ..wording import and_list, count
from .aoti import aoti_call
from .compiled_frames import CompiledFrames, UsersNames
from .installed_guards import GuardTrees
from .passed_on import PassedOn, argument_name, argument_of, item_name, unreached_name
from .stack_values import StackValues
from .status import RESTARTED, attempt_words, compile_statuses, restarted_attempt_label
from .user_locations import (UserLocation, is_torch_file, last_code_stack_frame, last_user_stack_frame,
                             export_call, exported_user_frame, placed_at_call, user_source_name)
from ..model.records import dataclass

T = TypeVar("T")

# Symbol names by kind (torch's SymT prefixes): s77 a size (or an int), zf8 a float (zuf an unbacked one).
SIZE_SYMBOL = lazy_compile(r"s\d{1,9}")
FLOAT_SYMBOL = lazy_compile(r"zu?f\d{1,9}")
# An unbacked (data-dependent) symbol: u0 an int read from a tensor (.item(), nonzero's count), zuf0 a float.
UNBACKED_SYMBOL = lazy_compile(r"\b(?:u|zuf)\d{1,9}\b")
# An int read from a tensor with .item(): torch 2.13 makes a 0-dim int tensor a global or buffer holds (a counter,
# BatchNorm's num_batches_tracked) a backed symbol of source "G['hook_calls'].item()"; a value .item() gave that a
# graph break passed on is named in words ("the value of `n.item()` (prog.py:12), passed on past the graph break").
# A value of the program, not a size.
_ITEM_SOURCE = lazy_compile(r"\.item\(\)$")
_ITEM_TEXT = lazy_compile(r"^the value of `[^`]{1,400}\.item\(\)`")
# A bound on one symbol alone, as torch writes a torch._check's: "u0 >= 0", "u0 <= 32", "u0 > 2", "u0 < 5".
_BOUND = lazy_compile(r"(\w{1,30}) (>=|<=|>|<) (-?\d{1,30})")

# torch's reasons for a specialization (symbolic_shape_specialization's "reason"), in words.
SPECIALIZATION_REASONS = {"range_refined_to_singleton": "its range narrowed to one value",
                          "trivial_lhs": "an equality fixed its value", "trivial_rhs": "an equality fixed its value"}

# The name a source's value goes by: its last key or attribute (lr, of self.param_groups[0]['lr']).
_LAST_NAME = lazy_compile(r"(?:\[['\"](\w{1,200})['\"]\]|\.(\w{1,200}))$")


def value_name(source: str) -> str | None:
    """The name a source's value goes by, its last key or attribute: lr, of self.param_groups[0]['lr']."""
    name = _LAST_NAME.search(source)
    return (name[1] or name[2]) if name else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# A float as sympy prints it, to 15 significant digits (`1.00000000000000e-5`, a LayerNorm's eps specialized).
_SYMPY_FLOAT = lazy_compile(r"^-?\d\.\d{14}(?:e[-+]?\d{1,4})?$")


def _value_text(value: Any) -> str | None:
    """A specialized value as the user's Python prints it: sympy's `1.00000000000000e-5` is 1e-05."""
    text = _text(value)
    return repr(float(text)) if text is not None and _SYMPY_FLOAT.match(text) else text


def _source_text(stack_values: StackValues, entry: Compile, source: str | None, names: UsersNames) -> str | None:
    """A source in the user's words: a name Dynamo made described (stack_values), else the user's name for it
    (user_source_name; where the frame is a wrapper's, the model and keywords as the user names them: names); None
    where there is no source, or torch's text is the user's already."""
    if source is None:
        return None
    described = stack_values.describe(entry, source)
    if described is not None:
        return described
    named = names.of(entry.compile_id, user_source_name(source))
    return named if named != source else None


def _location(entry: dict) -> tuple[UserLocation | None, UserLocation | None]:
    """(where the event is placed, torch's line when that is the user's call into torch: else None).

    An empty user stack means no user code was running (e.g. AOTAutograd), unless the Python stack runs through
    torch.export into the user's code (non-strict export runs forward in Python under its tracer): that line is
    placed. A stack of a library's code only (a transformers model, in site-packages) gives that library's line: the one that made the size dynamic. A user stack
    of torch's own code only (a compiled optimizer's step, adam.py:229) gives the user's line that called it, from the
    Python stack (opt.step() at compiled_optimizer.py:24), as recompiles places a tensor check in torch's frames: the
    line the user can change; torch's line is kept beside it."""
    stack = entry.get("user_stack") if "user_stack" in entry else entry.get("stack")
    own = last_user_stack_frame(stack) or last_code_stack_frame(stack)
    if own is None and not stack and "user_stack" in entry:
        # Non-strict export runs the forward in Python under its tracer: the user's line is in the Python stack only.
        # A symbol made before forward runs (an input's Dim, as export fakes the inputs) is the export call's line.
        # (the export call first: most stacks run through none, and exported_user_frame asks it again where one does)
        call = export_call(entry.get("stack"))
        own = (exported_user_frame(entry.get("stack")) or call) if call is not None else None
    if own is not None or not stack or "user_stack" not in entry:
        return own, None
    torch_line = UserLocation.from_frame(stack[-1])
    caller = last_user_stack_frame(entry.get("stack")) if is_torch_file(torch_line.filename) else None
    return (caller, torch_line) if caller is not None else (None, None)


@dataclass(frozen=True)
class PlacementPart:
    """One part of where an event is placed, in the order read: words, then the location they lead to (None: the
    words alone). ("in torch's ", adam.py:229), (", called at ", compiled_optimizer.py:24)."""

    text: str
    location: UserLocation | None = None
    # The words name the location's function already ("read ... by step at torch's "): a renderer may leave it out.
    function_said: bool = False


def placement(location: UserLocation | None, torch_location: UserLocation | None,
              passed_in: bool = False) -> list[PlacementPart]:
    """Where an event torch placed on a line is ("at prog.py:3"; "in torch's adam.py:229, called at prog.py:24": the
    user's call into torch's code that made it; "passed in by the call at prog.py:32": the user's call that passed a
    library's compiled frame the value); [] where torch logged no line."""
    if location is None:
        return []
    if passed_in:
        return [PlacementPart("passed in by the call at ", location)]
    if torch_location is None:
        return [PlacementPart("at ", location)]
    return [PlacementPart("in torch's ", torch_location), PlacementPart(", called at ", location)]


def read_placement(read: str | None, location: UserLocation | None,
                   torch_location: UserLocation | None) -> list[PlacementPart]:
    """Where a specialization is (placement); where torch logged no line for it, what was read (read_text) and where
    ("lr, read as self.param_groups[0]['lr'] by step at torch's adam.py:229, called at compiled_optimizer.py:24"): the
    function that read it named already, torch's line need not name it again. The report's and diff's, one wording."""
    if read is None:
        return placement(location, torch_location)
    parts = [PlacementPart(f"{read} at torch's ", torch_location, function_said=True) if torch_location
             else PlacementPart(read)]
    return parts + ([PlacementPart(", called at ", location)] if location else [])


def made_by(event: dict, compile_id: CompileId | None) -> str | None:
    """What made an event logged outside any compile id (tlparse's [-/-]), by its Python stack: "AOTInductor package of
    aoti_deploy.py:41" (a package build has no compile id), "torch.export at aoti_deploy.py:39" (non-strict export
    fakes the inputs and traces without Dynamo); None in a compile, or where the stack runs through neither."""
    if compile_id is not None:
        return None
    stack = event.get("stack")
    built = aoti_call(stack)
    if built is not None:
        return f"AOTInductor package of {built.short}"
    exported = export_call(stack)
    return f"torch.export at {exported.short}" if exported is not None else None


def placement_text(parts: list[PlacementPart]) -> str:
    """A placement in one line, each location by its file and line ("at prog.py:3"), as a diff's title says it."""
    return "".join(p.text + (p.location.short if p.location else "") for p in parts)


@dataclass
class SymbolCreated:
    """A symbol (backed or unbacked) that a compile created for a dynamic size."""

    compile_id: str
    symbol: str
    value: str | None  # the example value it was created from
    range: str | None  # value range, e.g. "[2, int_oo]"
    source: str | None  # e.g. "L['x'].size()[0]"
    unbacked: bool
    location: UserLocation | None
    torch_location: UserLocation | None = None  # torch's line, where location is the user's call into it (_location)
    # What the source is in the user's code: a name Dynamo made in words (a resume function's L['___stack0']: "the
    # value of `loss.item()` (item_break.py:16), passed on past the graph break"), else the user's name for it
    # (user_locations.user_source_name: self.blocks[0].norm1.eps); None where torch's text is already the user's.
    source_text: str | None = None
    # location is the user's call that passed the value in: an argument of a library's compiled frame (transformers'
    # wrapped_func) that the library's code first used (user_locations.placed_at_call, recompiles' rule too).
    passed_in: bool = False
    # An unbacked symbol AOTAutograd made again when it traced the graph Dynamo made (no user line: the same op on the
    # same values; torch renames it back, its graphs name the first): the symbol Dynamo made, which it stands for.
    retrace_of: str | None = None
    # An unbacked symbol's range as the same compile's runtime asserts on it alone bound it ("[0, 32]", from
    # torch._check(n >= 0) and torch._check(n <= x.numel())): torch logs the range at creation, unbounded, only.
    checked_range: str | None = None
    # What made it where no compile id did (tlparse's [-/-]), by its Python stack (made_by): "torch.export at
    # aoti_deploy.py:39", "AOTInductor package of aoti_deploy.py:41"; None in a compile, or where the stack says neither.
    made_by: str | None = None
    # The value a failed guard compared its source with, where the compile made it a symbol when that guard failed
    # (recompiles.links.link_guarded_values; 0.001 where the value is 0.0009999999753259891): shown apart from it.
    guarded_value: str | None = None

    @property
    def shown_id(self) -> str:
        """Its compile id as reports show it: what made it (made_by) where it has none."""
        return self.made_by or self.compile_id

    @property
    def value_text(self) -> str | None:
        """The example value as a user writes it (number_text): "0.00466667", not "0.004666666666666667"; apart from the
        failed guard's value it replaced (guarded_value)."""
        return number_text(self.value, compared_with=self.guarded_value) if self.value is not None else None

    @property
    def range_text(self) -> str | None:
        """The range for people ("any value ≥ 2", "any value"), torch's ("[2, int_oo]") where it is not lo..infinity;
        an unbacked symbol's as its runtime asserts bound it ("0 to 32, by its runtime asserts")."""
        if self.checked_range is not None:
            return f"{_range_words(self.checked_range)}, by its runtime asserts"
        return range_text(self.range)

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "symbol": self.symbol, "value": self.value, "range": self.range,
                "source": self.source, "source_text": self.source_text, "unbacked": self.unbacked,
                "location": self.location.to_json() if self.location else None,
                "torch_location": _location_json(self.torch_location), "passed_in": self.passed_in,
                "retrace_of": self.retrace_of, "checked_range": self.checked_range, "made_by": self.made_by}


@dataclass
class Specialization:
    """A symbol that a compile specialized to one value, and why."""

    compile_id: str
    symbol: str
    value: str | None
    sources: list[str]
    reason: str | None
    location: UserLocation | None
    # The recompilation that followed when the size changed (a size guard of this compile failed on it), e.g.
    # "[0/3]": set by recompiles.links.link_specializations; None when nothing recompiled for it.
    recompile: str | None = None
    torch_location: UserLocation | None = None  # torch's line, where location is the user's call into it (_location)
    # Where torch logged no line for the specialization itself (a compiled optimizer's float lr, which AOTAutograd
    # specializes with user_stack null): the source as the compiled function names it ("self.param_groups[0]['lr']")
    # and that function ("step"). location and torch_location are then where the value was read (_read_place).
    read_as: str | None = None
    read_by: str | None = None

    @property
    def value_text(self) -> str:
        """The value as a user writes it (number_text): sympy's "0.00466666666666667" as "0.00466667"."""
        return number_text(self.value)

    @property
    def read_text(self) -> str | None:
        """"lr, read as self.param_groups[0]['lr'] by step": what was specialized, where torch logged no line for it
        (None where it did: the line then says it)."""
        if self.read_as is None:
            return None
        name = value_name(self.read_as)
        text = (f"{name}, " if name else "") + f"read as {self.read_as}"
        return text + (f" by {self.read_by}" if self.read_by else "")
    # Its sources in the user's words, where torch's text is not (as SymbolCreated.source_text): source -> text.
    source_texts: dict[str, str] = field(default_factory=dict)
    made_by: str | None = None  # what made it where no compile id did (SymbolCreated.made_by)

    @property
    def shown_id(self) -> str:
        return self.made_by or self.compile_id

    @property
    def kind(self) -> str:
        """"size", "float" or "value": an int read with .item() is a value though its symbol is named as a size's
        (s2), as DynamicSize.kind tells it, by its source or the source in words."""
        if FLOAT_SYMBOL.fullmatch(self.symbol):
            return "float"
        from_item = any(_ITEM_SOURCE.search(src) for src in self.sources) or any(
            _ITEM_TEXT.match(text) for text in self.source_texts.values())
        return "size" if SIZE_SYMBOL.fullmatch(self.symbol) and not from_item else "value"

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "symbol": self.symbol, "value": self.value, "sources": self.sources,
                "described_sources": _described_json(self.source_texts),
                "reason": self.reason, "location": self.location.to_json() if self.location else None,
                "recompile": self.recompile, "torch_location": _location_json(self.torch_location),
                "read_as": self.read_as, "read_by": self.read_by, "read_text": self.read_text, "made_by": self.made_by}


@dataclass
class GuardAdded:
    """A guard on symbols that a compile added."""

    compile_id: str
    expr: str
    location: UserLocation | None
    torch_location: UserLocation | None = None  # torch's line, where location is the user's call into it (_location)
    made_by: str | None = None  # what made it where no compile id did (SymbolCreated.made_by)

    @property
    def shown_id(self) -> str:
        return self.made_by or self.compile_id

    @property
    def runtime_assert(self) -> bool:
        """A condition on a data-dependent (unbacked) value: torch cannot check it before the graph runs (the value is
        computed in it), so it defers it to an assert the graph tests as it runs (torch._check(n >= 0) adds one);
        torch makes a condition on backed sizes only a guard, checked before each call."""
        return UNBACKED_SYMBOL.search(self.expr) is not None

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "expr": self.expr,
                "location": self.location.to_json() if self.location else None,
                "torch_location": _location_json(self.torch_location), "runtime_assert": self.runtime_assert,
                "made_by": self.made_by}


@dataclass
class DynamicShapes:
    """The dynamic-shape events of the log: symbols created, specializations and guards added."""

    symbols: list[SymbolCreated] = field(default_factory=list)
    specializations: list[Specialization] = field(default_factory=list)
    guards: list[GuardAdded] = field(default_factory=list)
    # The compiles whose Dynamo config is torch.compile(dynamic=True)'s (compiled_dynamic): there every float of the
    # code's (a module's scale, eps) is made a symbol from the first compile, and a line that needs one as a number
    # fixes it again.
    dynamic_compiles: list[str] = field(default_factory=list)
    # The attempts Dynamo restarted ([0/1] where [0/1_1] compiled it: status.RESTARTED). What they added was thrown
    # away with them: a guard only they added is not listed as its compilation's (GuardCondition.discarded_text).
    discarded_attempts: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.symbols or self.specializations or self.guards)

    @property
    def specialized(self) -> list[SpecializedSize]:
        return group_specializations(self.specializations)

    @property
    def sizes(self) -> list[DynamicSize]:
        return group_sizes(self.symbols)

    @cached_property
    def guard_places(self) -> list[GuardPlace]:
        """The guards grouped (group_guards), once: guard_lines, unplaced_guards and the JSON each read them, about
        three times a report. (Not a field, so not saved; the guards are complete when the analysis returns.)"""
        return group_guards(self.guards, self.discarded_attempts)

    @property
    def guard_lines(self) -> list[GuardPlace]:
        """The guards by the line that added them (group_guards), those where torch logged no line left out."""
        return [p for p in self.guard_places if p.location is not None]

    @property
    def runtime_assert_lines(self) -> list[GuardPlace]:
        """Of guard_lines, those of runtime asserts (torch._check's: tested as the graph runs, not before each call)."""
        return [p for p in self.guard_lines if p.runtime_asserts]

    @property
    def added_guard_lines(self) -> list[GuardPlace]:
        """Of guard_lines, those of guards the compiled code checks before it runs."""
        return [p for p in self.guard_lines if not p.runtime_asserts]

    @property
    def unplaced_guards(self) -> GuardPlace | None:
        """The guards where torch logged no line, together (None when every guard has its line)."""
        return next((p for p in self.guard_places if p.location is None), None)

    @property
    def kind(self) -> str:
        """What its symbols stand for: "size" (ints: sizes, or ints made dynamic) or "value" (a float, an unbacked
        int or an int read with .item() among them: DynamicSize.kind)."""
        return "size" if all(z.kind == "size" for z in self.sizes) else "value"

    def _kinds_counted(self, sizes: list[DynamicSize]) -> str:
        """"2 sizes", "2 values", "1 size and 1 value": the dynamic ones by kind (DynamicSize.kind)."""
        values = sum(1 for z in sizes if z.kind == "value")
        return " and ".join(count(n, kind) for n, kind in ((len(sizes) - values, "size"), (values, "value")) if n)

    @property
    def kind_words(self) -> tuple[str, str]:
        """The noun for its dynamic ones, one and many: ("size", "sizes"), ("value", "values"), or ("size or value",
        "sizes and values") where they are both."""
        kinds = {z.kind for z in self.sizes}
        if len(kinds) > 1:
            return "size or value", "sizes and values"
        kind = kinds.pop() if kinds else "size"
        return kind, kind + "s"

    @property
    def events(self) -> int:
        return len(self.symbols) + len(self.specializations) + len(self.guards)

    @property
    def overview(self) -> str:
        """"6 sizes compiled as dynamic; 2 specialized to a constant, 1 of them recompiled when it changed; 22 guards
        added, 15 where torch logged no line", for people. The symbols are counted only where a size had more than one
        name: a recompile creates a size's symbol again, usually under the same name, and "(3 symbols)" over two rows of
        one symbol each read as one missing."""
        parts = []
        if self.symbols:
            sizes = self.sizes
            names = sum(len(z.symbol_names) for z in sizes)
            parts.append(f"{self._kinds_counted(sizes)} compiled as dynamic"
                         + (f" ({count(names, 'symbol')})" if names != len(sizes) else ""))
        if self.specializations:
            specialized = self.specialized
            recompiled = sum(1 for s in specialized if s.recompiles)
            parts.append(f"{len(specialized)} specialized to a constant"
                         + (f", {recompiled} of them recompiled when it changed" if recompiled else ""))
        asserts = self.runtime_asserts
        if len(self.guards) > asserts:
            unplaced = self.unplaced_guards
            parts.append(f"{count(len(self.guards) - asserts, 'guard')} added"
                         + (f", {unplaced.count} where torch logged no line" if unplaced else ""))
        if asserts:
            parts.append(f"{count(asserts, 'runtime assert')} on data-dependent values")
        return "; ".join(parts)

    @property
    def runtime_asserts(self) -> int:
        """Of the guards, those on data-dependent values: asserts the graph tests as it runs (GuardAdded.runtime_assert),
        not guards checked before each call."""
        return sum(1 for g in self.guards if g.runtime_assert)

    @property
    def counts(self) -> str:
        """"2 sizes, 9 guards": what the grouped rows show, for a heading (the sizes and the sizes specialized, not
        each compile's symbol for them; every guard added, as the overview counts them); nothing of which there is
        none."""
        parts = [self._kinds_counted(self.sizes).replace(" and ", ", ")] if self.symbols else []
        if self.specializations:
            parts.append(f"{len(self.specialized)} specialized")
        asserts = self.runtime_asserts
        if len(self.guards) > asserts:
            parts.append(count(len(self.guards) - asserts, "guard"))
        if asserts:
            parts.append(count(asserts, "runtime assert"))
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        # The events as torch logged them, then the groups the report and `summary` show, every one (where the
        # terminal says "… N more", a script reads them here).
        return {"symbols": [s.to_json() for s in self.symbols],
                "specializations": [s.to_json() for s in self.specializations],
                "guards": [g.to_json() for g in self.guards],
                "kind": self.kind,
                "overview": self.overview,
                "specialized": [s.to_json() for s in self.specialized],
                "sizes": [z.to_json() for z in self.sizes],
                "guards_by_line": [p.to_json() for p in self.guard_places],
                "dynamic_compiles": self.dynamic_compiles, "discarded_attempts": self.discarded_attempts}

    @property
    def event_labels(self) -> dict[str, str]:
        """Each event's compile id -> how the events table says it, by compilation as the other tables do: "[0/1]"
        for [0/1_1], the attempt that compiled it; "[0/1] first try, restarted" for [0/1] where a later attempt
        compiled it (the row links the attempt itself either way). Built once for the table (a set of the restarted
        attempts, not a list searched per row: a log may have thousands of restarts)."""
        discarded = set(self.discarded_attempts)
        return {cid: restarted_attempt_label(cid) if cid in discarded else compilation_key(cid)
                for cid in dict.fromkeys(e.compile_id for events in (self.symbols, self.specializations, self.guards)
                                         for e in events)}


def dynamo_config(entry: Compile) -> dict[str, Any] | None:
    """Dynamo's config for a compile, as its metrics record it (dynamo_config); None where they do not."""
    text = (entry.metrics or {}).get("dynamo_config")
    if not isinstance(text, str):
        return None
    try:
        config = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return config if isinstance(config, dict) else None


# torch.compile(dynamic=True) patches Dynamo's config so (torch/_dynamo/eval_frame.py, make_set_enable_dynamic): every
# size and, with specialize_float off (torch's default), every float is a symbol from the first compile.
DYNAMIC_CONFIG = {"assume_static_by_default": False}


def compiled_dynamic(entry: Compile) -> bool:
    """The compile's metrics record dynamic=True's config (DYNAMIC_CONFIG)."""
    config = dynamo_config(entry)
    return config is not None and all(config.get(k) is v for k, v in DYNAMIC_CONFIG.items())


def _read_place(spec: Specialization, entry: dict, symbols: list[SymbolCreated], frames: CompiledFrames,
                compile_id: CompileId | None, names: UsersNames) -> None:
    """Places a specialization for which torch logged no user line (user_stack null: AOTAutograd made a compiled
    optimizer's float lr constant, after Dynamo's trace) by what the log does say: the source, as the compiled function
    reads it, and that function; the line where the same compile made the symbol from that source (torch's
    adam.py:229, called at compiled_optimizer.py:24), else the user's line on the way into the compile. Never a line of
    the specialization's own: the log has none."""
    if not spec.sources:
        return
    spec.read_as = names.of(compile_id, user_source_name(spec.sources[0]))
    compiled = frames.compiled(compile_id) if compile_id is not None else None
    spec.read_by = names.function(compile_id, compiled.function) if compiled is not None and compile_id is not None else None
    created = next((s for s in symbols if s.symbol == spec.symbol and s.source in spec.sources and s.location), None)
    if created is not None:
        spec.location, spec.torch_location = created.location, created.torch_location
    else:
        spec.location = last_user_stack_frame(entry.get("stack")) or (
            frames.called_from(compile_id) if compile_id is not None else None)


def dynamic_shapes(trace: Trace, stack_values: StackValues | None = None,
                   guard_trees: GuardTrees | None = None) -> DynamicShapes:
    """stack_values: the log's, where the caller names sources for other analyses too (read here otherwise);
    guard_trees: the log's, parsed once for the report (a wrapper frame's model is typed by its tree)."""
    result = DynamicShapes()
    result.discarded_attempts = [str(cid) for cid, status in compile_statuses(trace).items() if status == RESTARTED]
    stack_values = stack_values if stack_values is not None else StackValues(trace)
    frames = CompiledFrames(trace)
    names = UsersNames(trace, guard_trees, frames)
    # (trees parsed only for a symbol of an argument of a library's frame: GuardTrees reads none until asked)
    passed_on = PassedOn(trace, frames, guard_trees if guard_trees is not None else GuardTrees(trace), names)
    for entry in trace.sorted_compiles():
        key = entry.key
        if compiled_dynamic(entry):
            result.dynamic_compiles.append(key)
        symbols = []
        for sym in entry.symbols:
            source = _text(sym.get("source"))
            created = SymbolCreated(
                key, str(sym.get("symbol", "?")), _text(sym.get("val")), _text(sym.get("vr")), source,
                sym.get("kind") == "create_unbacked_symbol", *_location(sym),
                source_text=_source_text(stack_values, entry, source, names), made_by=made_by(sym, entry.compile_id))
            _place_at_call(created, frames, entry.compile_id, passed_on, names)
            symbols.append(created)
        result.symbols.extend(symbols)
        for spec in entry.specializations:
            sources = [str(s) for s in spec["sources"]] if isinstance(spec.get("sources"), list) else []
            where, torch_line = _location(spec)
            described = {s: text for s in sources if (text := _source_text(stack_values, entry, s, names)) is not None}
            found = Specialization(
                key, str(spec.get("symbol", "?")), _value_text(spec.get("value")), sources, _text(spec.get("reason")), where,
                torch_location=torch_line, source_texts=described, made_by=made_by(spec, entry.compile_id))
            if where is None and not spec.get("user_stack"):
                _read_place(found, spec, symbols, frames, entry.compile_id, names)
            result.specializations.append(found)
        for guard in entry.guards_added:
            added = GuardAdded(key, str(guard.get("expr", "?")), *_location(guard),
                               made_by=made_by(guard, entry.compile_id))
            if added.location is None and not guard.get("user_stack"):
                _place_by_symbol(added, symbols)
            result.guards.append(added)
        _fold_retraces(entry.symbols, symbols)
        _bound_by_asserts(symbols, [g for g in result.guards if g.compile_id == key])
    return result


def _place_at_call(symbol: SymbolCreated, frames: CompiledFrames, compile_id: CompileId | None,
                   passed_on: PassedOn, names: UsersNames) -> None:
    """Places a symbol made from an argument of a library's compiled frame, first used in the library's code (the
    user's ids, at transformers' output_capturing.py:332), at the user's call that passed it in (hf_llama.py:32), as
    recompiles places the argument's failed check: user_locations.placed_at_call and, for a frame the library's code
    called, passed_on (loss2's pred, the library's own `out`, is not the call's), one rule for both. The frame is
    named as the report names it (names.function: GPT2LMHeadModel's forward, not transformers' `wrapper`)."""
    if symbol.source is None or symbol.location is None or symbol.torch_location is not None or compile_id is None:
        return
    compiled = frames.compiled(compile_id)
    caller = frames.called_from(compile_id)
    if caller is None and symbol.source.startswith("L['"):
        # (a library's function compiled by the user themselves: its local is no name at their call, as recompiles
        # say it: "forward's target")
        argument = argument_of(user_source_name(symbol.source))
        if argument is not None and symbol.source_text == f"{argument[0]}{argument[1]}":
            function = names.function(compile_id, compiled.function) if compiled is not None else None
            named = unreached_name(function, compiled, caller, argument[0])
            if named is not None:
                symbol.source_text = named.said(argument[1])
        return
    if caller is not None and placed_at_call(compiled.filename if compiled is not None else None, symbol.source,
                                             symbol.location.filename, caller.code,
                                             compiled.function if compiled is not None else None):
        argument = argument_of(user_source_name(symbol.source)) if symbol.source.startswith("L['") else None
        local, rest = argument if argument is not None else ("", "")
        passed = passed_on.of(compile_id, compiled, local) if local else None
        if passed is None or passed.made_by is None:
            symbol.location, symbol.passed_in = caller, True
        # (the argument in the words every place of the report uses for it, argument_name's: the user's t, not
        # forward's target, Dynamo's source beside it; torch's name, where not settled, qualified by the frame,
        # unless another name says it already. Only the argument's own size or value: an item of it, L['args'][1],
        # is no tensor passed)
        function = (passed_on.qualifier(compile_id, names.function(compile_id, compiled.function))
                    if compiled is not None else None)
        named = argument_name(passed, function, local) if local else None
        if named is not None and (named.users or symbol.source_text == f"{local}{rest}"):
            symbol.source_text = named.said(rest)
        elif not local and symbol.source.startswith("L['"):
            # (an item of a local, loss_star's args[0]: qualified by the frame as an unsettled argument is)
            item = item_name(function, user_source_name(symbol.source))
            if item is not None and symbol.source_text in (None, user_source_name(symbol.source)):
                symbol.source_text = item[0].said(item[1])


def _made_by(sym: dict) -> str | None:
    """The torch function that made an unbacked symbol: its Python stack's innermost ("local_scalar_dense" for
    .item(), "nonzero" for a boolean mask)."""
    stack = sym.get("stack")
    return str(stack[-1].get("name")) if isinstance(stack, list) and stack and isinstance(stack[-1], dict) else None


def _in_aot_autograd(sym: dict) -> bool:
    stack = sym.get("stack")
    return isinstance(stack, list) and any("/_functorch/" in str(f.get("filename", "")).replace("\\", "/")
                                           for f in stack if isinstance(f, dict))


def _fold_retraces(entries: list[dict], symbols: list[SymbolCreated]) -> None:
    """Marks the unbacked symbols AOTAutograd made again (no user line, its frames on the Python stack) with the
    symbol Dynamo made by the same op in the same compile: each of its passes over the graph (collecting metadata, the
    joint trace) runs the ops in Dynamo's order, so the n-th it made by an op is the n-th Dynamo made by it, again on
    each pass. data_dependent_rewritten's u2 and u4 (local_scalar_dense) are u0, its `.item()`; u3 and u5 (nonzero)
    are u1; its AOT graphs name only u0 and u1."""
    first: dict[str, list[str]] = {}  # op -> the symbols Dynamo made by it, in order
    again: dict[str, int] = {}  # op -> how many AOTAutograd made again so far
    for sym, made in zip(entries, symbols):
        op = _made_by(sym)
        if not made.unbacked or op is None:
            continue
        if made.location is not None:
            first.setdefault(op, []).append(made.symbol)
        elif not sym.get("user_stack") and _in_aot_autograd(sym) and first.get(op):
            n = again.get(op, 0)
            made.retrace_of = first[op][n % len(first[op])]
            again[op] = n + 1


def _bound_by_asserts(symbols: list[SymbolCreated], guards: list[GuardAdded]) -> None:
    """An unbacked symbol's range as its compile's runtime asserts on it alone bound it (checked_range)."""
    for made in symbols:
        if not made.unbacked:
            continue
        low = high = None
        for guard in guards:
            m = _BOUND.fullmatch(guard.expr)
            if m is None or m[1] != made.symbol:
                continue
            value = int(m[3])
            if m[2] in (">=", ">"):
                value += m[2] == ">"
                low = value if low is None else max(low, value)
            else:
                value -= m[2] == "<"
                high = value if high is None else min(high, value)
        if low is not None or high is not None:
            made.checked_range = f"[{'-int_oo' if low is None else low}, {'int_oo' if high is None else high}]"


# A guard that fixes one symbol to a value: "Eq(zf8, 0.00466666666666667)", "Eq(s70, 96)". The same fact as a
# specialization of it (torch logs both, the guard with no user line when AOTAutograd or Inductor added it).
_FIXING_GUARD = lazy_compile(r"Eq\((\w{1,30}), -?[\d.]{1,40}(?:e[+-]?\d{1,4})?\)")


def _place_by_symbol(guard: GuardAdded, symbols: list[SymbolCreated]) -> None:
    """Places a guard for which torch logged no user line, one that fixes a symbol's value, where the same compile
    created that symbol (a compiled optimizer's lr, zf8: torch's adam.py:229, called at compiled_optimizer.py:24), as a
    specialization torch logged no line for is placed (_read_place). Any other guard stays where torch put it: none."""
    m = _FIXING_GUARD.fullmatch(guard.expr)
    created = next((s for s in symbols if m is not None and s.symbol == m[1] and s.location), None)
    if created is not None:
        guard.location, guard.torch_location = created.location, created.torch_location


_UNBOUNDED = ("int_oo", "oo")  # sympy's infinity, as torch prints a value range's open end


def range_text(value_range: str | None) -> str | None:
    """torch's value range "[2, int_oo]" as "any value ≥ 2", "[-int_oo, int_oo]" as "any value", "[-int_oo, 5]" as
    "any value ≤ 5"; a closed range ("[2, 64]") as torch wrote it."""
    if not value_range or not (value_range.startswith("[") and value_range.endswith("]")) or value_range.count(",") != 1:
        return value_range
    low, high = (part.strip() for part in value_range[1:-1].split(","))
    no_low, no_high = low.lstrip("-") in _UNBOUNDED and low.startswith("-"), high in _UNBOUNDED
    if no_low and no_high:
        return "any value"
    if no_high:
        return f"any value ≥ {low}"
    if no_low:
        return f"any value ≤ {high}"
    return value_range


def _range_words(value_range: str) -> str:
    """A closed range "[0, 32]" as "0 to 32"; an open one as range_text says it ("any value ≥ 0")."""
    words = range_text(value_range) or value_range
    return words.replace("[", "").replace("]", "").replace(", ", " to ") if words == value_range else words


# A decimal as Python or sympy writes one ("0.004666666666666667", "0.00466666666666667", "1.6666666666666667e-05"),
# ASCII digits only: log text is untrusted, and float() reads digits str.isdigit() takes for others ("²") or refuses.
_DECIMAL = lazy_compile(r"-?\d{1,40}(?:\.\d{0,40})?(?:e[-+]?\d{1,4})?", re.ASCII)
_INTEGER = lazy_compile(r"-?\d{1,40}", re.ASCII)


def _decimal(text: str) -> float | None:
    """text's value where it is a decimal (a "." or an exponent): None for an integer ("8", shown as written), an
    expression, or text that only looks like a number ("0.0046666²")."""
    if ("." not in text and "e" not in text) or _DECIMAL.fullmatch(text) is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _rounded(value: float, digits: int) -> str | None:
    """value to digits significant digits (%g), or None where that hides what it is: a fraction dropped (2.0000004 as
    "2", 123456.7 as "123457": another integer) or a number of 1 or more in exponent form ("1.23457e+06")."""
    text = f"{value:.{digits}g}"
    if abs(value) >= 1 and "e" in text:
        return None
    return None if value != int(value) and float(text) == int(float(text)) else text


def numbers_text(values: Iterable[str | None]) -> dict[str, str]:
    """Numbers shown together (one list, or a value and the guard's value it is compared with) as a user writes them,
    each of torch's texts (str(value)) to its shown text: a decimal to the fewest significant digits, at least six,
    that keep every two values apart ("0.00466667", not sympy's "0.00466666666666667" nor Python's
    "0.004666666666666667"; 0.001 and 0.0009999999753259891 as "0.001" and "0.000999999975"), else Python's repr of
    it; never a fraction dropped ("123456.7", not "123457"), a small one in exponent form ("1.66667e-05"), an
    integer-valued one below 1e16 whole (sympy's "1234567.00000000" as "1234567"); from 1e16 up (a float holds no
    fraction there, and 16 digits need an exponent) all are Python's repr ("1e+39"). One value is one text, however
    written ("0.250000000000000" and "0.25"); -0.0 and 0.0, equal, keep their signs ("-0" and "0"). Anything else (an
    integer, an expression, None) as written."""
    texts = _distinct(str(v) for v in values)
    # (by value and sign: -0.0 == 0.0, and one key for both showed "0.0" as "-0")
    decimals = {t: (d, math.copysign(1.0, d)) for t in texts if (d := _decimal(t)) is not None}
    distinct = set(decimals.values())
    shown: dict[tuple[float, float], str | None] = {}
    for digits in range(6, 17):
        shown = {d: _rounded(d[0], digits) for d in distinct}
        if None not in shown.values() and len(set(shown.values())) == len(distinct):
            break
    else:
        shown = {d: repr(d[0]) for d in distinct}
    return {t: shown[decimals[t]] or t if t in decimals else t for t in texts}


def number_key(value: str | None) -> float | int | str:
    """What two numbers are the same value by: a number's value ("0.250000000000000" and "0.25" are one, "2" and "2.0"
    too: 2 == 2.0), else the text; for counting and deduplicating, never the shown text (which rounds: 0.001 and
    0.0009999999753 are two)."""
    text = str(value)
    decimal = _decimal(text)
    if decimal is not None:
        return decimal
    return int(text) if _INTEGER.fullmatch(text) else text


def number_text(value: str | None, exact: bool = False, compared_with: str | None = None) -> str:
    """A number torch wrote as a user writes it, alone (numbers_text), or apart from the value compared_with (the
    failed guard's value it replaced). exact: sympy's trailing zeros dropped only, every other digit kept (a value
    inside a guard's code, which compares it whole)."""
    text = str(value)
    if exact:
        return text.rstrip("0").rstrip(".") if "e" not in text and _decimal(text) is not None else text
    return numbers_text([text] if compared_with is None else [text, compared_with])[text]


def _by_compilation(compile_ids: list[str]) -> list[str]:
    """Compile ids as the text says them, by compilation (the recompile steps' compilation_label): "[0/1]" once for
    [0/1] and its restart [0/1_1], which are one compilation. The JSON keeps each id."""
    return _distinct(compilation_key(cid) for cid in compile_ids)


def _frame(compile_id: str) -> int | None:
    """The frame of a compile id ("[0/2_1]" -> 0): a size of one frame is another than the same name in another
    (f's L['x'] is not g's); compiled autograd's captures ("[!0/-/-]", "[!1/-/-]") are one frame (None)."""
    parsed = CompileId.parse(compile_id)
    return parsed.frame_id if parsed is not None else None


def _grouped(items: Iterable[T], key: Callable[[T], Hashable]) -> list[list[T]]:
    """items in groups of equal key, each group and the groups in the order of their first item."""
    groups: dict[Hashable, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return list(groups.values())


def _first_location(items: Iterable[SymbolCreated | Specialization | GuardAdded]) -> UserLocation | None:
    return next((i.location for i in items if i.location is not None), None)


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _described_json(texts: dict[str, str]) -> list[dict[str, str]]:
    """A specialization's sources that are names Dynamo made, in words: [{"source": "L['___stack0']", "text": ...}]."""
    return [{"source": source, "text": text} for source, text in texts.items()]


def _location_json(location: UserLocation | None) -> dict[str, Any] | None:
    return location.to_json() if location is not None else None


class _SizeEvents:
    """A size's events, one or more per compile (its specializations, or the symbols created for it): where they were
    first placed on a line and the compiles they came from, said alike for every kind of size."""

    _EVENTS: ClassVar[str]  # the name of the attribute that holds them

    def _events(self) -> list[SymbolCreated] | list[Specialization]:
        return getattr(self, self._EVENTS)

    @property
    def location(self) -> UserLocation | None:
        """The line of its first event that has one (a later compile may name another line: every event has its
        own)."""
        return _first_location(self._events())

    @property
    def torch_location(self) -> UserLocation | None:
        """torch's line, where location is the user's call into torch (the same event's)."""
        return next((e.torch_location for e in self._events() if e.location is not None), None)

    @property
    def placement(self) -> list[PlacementPart]:
        """Where it is, in parts to write one after the other (placement); [] where torch logged no line."""
        return placement(self.location, self.torch_location)

    @property
    def compile_ids(self) -> list[str]:
        return _distinct(e.compile_id for e in self._events())


@dataclass
class SpecializedSize(_SizeEvents):
    """One size that compiles made constant (a line fixed it: a check, a branch, an operation with a tensor of fixed
    size), each compile's specialization of it: a compiled optimizer fixes the learning rate at every step."""

    specializations: list[Specialization]
    _EVENTS = "specializations"

    @property
    def symbol(self) -> str:
        return ", ".join(_distinct(s.symbol for s in self.specializations))

    @property
    def sources(self) -> list[str]:
        return _distinct(src for s in self.specializations for src in s.sources)

    @property
    def source_texts(self) -> dict[str, str]:
        """Its sources that are names Dynamo made, in words (Specialization.source_texts)."""
        return {src: text for s in self.specializations for src, text in s.source_texts.items()}

    @property
    def sources_shown(self) -> list[str]:
        """Its sources as a person reads them: a name Dynamo made in words (source_texts), any other as torch wrote it."""
        texts = self.source_texts
        return [texts.get(src, src) for src in self.sources]

    @property
    def reason(self) -> str | None:
        """torch's reason in words ("its range narrowed to one value")."""
        reason = self.specializations[0].reason
        return SPECIALIZATION_REASONS.get(reason or "", reason)

    @property
    def read_text(self) -> str | None:
        """"lr, read as self.param_groups[0]['lr'] by step", where torch logged no line for the specialization."""
        return next((s.read_text for s in self.specializations if s.read_text), None)

    @property
    def placement(self) -> list[PlacementPart]:
        """Where it is, in parts; where torch logged no line for it, what was read and where ("lr, read as
        self.param_groups[0]['lr'] by step at torch's adam.py:229, called at compiled_optimizer.py:24"): the function
        that read it named already, torch's line need not name it again."""
        return read_placement(self.read_text, self.location, self.torch_location)

    @property
    def recompiles(self) -> list[str]:
        """The recompilations that followed when it changed (its guard failed)."""
        return _distinct(s.recompile for s in self.specializations if s.recompile)

    @property
    def kind(self) -> str:
        """"size" or "value" (a float, or an int read with .item(): Specialization.kind), as sizes[].kind."""
        return "size" if all(s.kind == "size" for s in self.specializations) else "value"

    @property
    def values(self) -> list[tuple[str | None, list[str]]]:
        """Each value it was specialized to (as torch first wrote it), once, with the compiles that specialized it so;
        one value however written ("0.250000000000000", "0.25": number_key)."""
        return [(same[0].value, _distinct(s.compile_id for s in same))
                for same in _grouped(self.specializations, lambda s: number_key(s.value))]

    @property
    def values_text(self) -> str:
        """"s27 = 8 in [0/2]"; of several compiles, each value once: "zf8 = 0.00466667 in [2/1]; 0.006 in [2/2]" (by
        compilation: [2/1_1] is [2/1])."""
        values = self.values
        shown = numbers_text(value for value, _ in values)  # (shown together: each apart from the others)
        return f"{self.symbol} = " + "; ".join(f"{shown[str(value)]} in {', '.join(_by_compilation(ids))}"
                                               for value, ids in values)

    def to_json(self) -> dict[str, Any]:
        return {"symbols": _distinct(s.symbol for s in self.specializations), "kind": self.kind,
                "values": [{"value": value, "compile_ids": ids} for value, ids in self.values],
                "sources": self.sources,
                "described_sources": _described_json(self.source_texts),
                "reason": self.specializations[0].reason,  # torch's, as specializations[].reason
                "reason_text": self.reason,
                "location": _location_json(self.location),
                "torch_location": _location_json(self.torch_location),
                "read_text": self.read_text,
                "compile_ids": self.compile_ids,
                "recompiles": self.recompiles,
                "text": self.values_text}


@dataclass
class DynamicSize(_SizeEvents):
    """One size that the compiles of one frame made dynamic (an input's dimension, an int): the symbol each created
    for it (a recompile creates it again, usually under the same name)."""

    source: str | None  # e.g. "L['x'].size()[0]"; None for a data-dependent (unbacked) symbol
    symbols: list[SymbolCreated]
    _EVENTS = "symbols"

    @property
    def unbacked(self) -> bool:
        return any(s.unbacked for s in self.symbols)

    @property
    def from_item(self) -> bool:
        """An int read from a tensor with .item() (_ITEM_SOURCE, _ITEM_TEXT): a value, though its symbol is named as
        a size's (s68)."""
        return bool(self.source and _ITEM_SOURCE.search(self.source)) or bool(
            self.source_text and _ITEM_TEXT.match(self.source_text))

    @property
    def kind(self) -> str:
        """"size" (a size, or an int made dynamic) or "value": a float, an unbacked int (data-dependent), or an int
        read with .item() (from_item)."""
        return "size" if all(SIZE_SYMBOL.fullmatch(s.symbol) for s in self.symbols) and not self.from_item else "value"

    @property
    def kind_note(self) -> str | None:
        """What an int read with .item() is, where its kind is not plain from its symbol: "an int .item() read from a
        tensor with .item(), backed: a value, not a size"."""
        return "an int read from a tensor with .item(), backed: a value, not a size" if self.from_item and not self.unbacked \
            else None

    @property
    def placement(self) -> list[PlacementPart]:
        """Where it is (placement): its symbols' line, and whether the user's call passed it in. Where compiles made
        it at other lines (the prompt passed in by the call at hf_llama.py:32, then by generate()'s at :37), each line
        with the compilations that made it there, in the order of their first: "passed in by the call at hf_llama.py:32
        for [0/0]; passed in by the call at hf_llama.py:37 for [0/1]"; the first line alone would place
        every compile's at it."""
        placed = self._placed()
        if len(placed) < 2:
            return placement(self.location, self.torch_location, bool(placed) and placed[0][0].passed_in)
        parts: list[PlacementPart] = []
        for same in placed:
            where = placement(same[0].location, same[0].torch_location, same[0].passed_in)
            if parts:
                where[0] = PlacementPart("; " + where[0].text, where[0].location, where[0].function_said)
            # (by compilation, as symbols_text: [0/0] and its restart [0/0_1] are one)
            parts += [*where, PlacementPart(f" for {', '.join(_by_compilation([s.compile_id for s in same]))}")]
        return parts

    def _placed(self) -> list[list[SymbolCreated]]:
        """Its symbols that have a line, by the line (and torch's line, and whether the call passed the value in),
        in the order of their first."""
        return _grouped((s for s in self.symbols if s.location is not None),
                        lambda s: (s.location.key if s.location else None,
                                   s.torch_location.key if s.torch_location else None, s.passed_in))

    def locations_json(self) -> list[dict[str, Any]]:
        """Every line its compiles made it at, in the order of their first, each with those compiles: location
        names only the first (hf_llama_fixed's prompt length, passed in by the call at line 32, then at 37)."""
        return [{"location": _location_json(same[0].location), "torch_location": _location_json(same[0].torch_location),
                 "passed_in": same[0].passed_in, "compile_ids": _distinct(s.compile_id for s in same)}
                for same in self._placed()]

    @property
    def source_text(self) -> str | None:
        """The source in words, where it is a name Dynamo made (SymbolCreated.source_text). Where its symbols say it
        differently (loss3's pred: the user's t, passed on by one library function, another function's own value in
        a recompile of the same frame), the source in the frame's words: one user's name would be wrong for the rest."""
        texts = _distinct(s.source_text for s in self.symbols if s.source_text)
        if len(texts) > 1 and self.source is not None:
            return user_source_name(self.source)
        return texts[0] if texts else None

    @property
    def symbol_names(self) -> list[str]:
        """Its symbols' names, each once (each compile that made it dynamic created one, usually the same)."""
        return _distinct(s.symbol for s in self.symbols)

    @property
    def symbols_text(self) -> str:
        """"s27 = 24 in [0/1]; s27 = 8 in [0/2] (any value ≥ 2)": each symbol and the example value it was made
        from, with its compiles (a retried compile makes the same again; none: what made it, SymbolCreated.made_by);
        the value range once where all agree."""
        made = [s for s in self.symbols if s.retrace_of is None]  # (AOTAutograd's again: said after them, by name)
        ranges = _distinct(s.range_text for s in made if s.range_text)
        one_range = len(ranges) == 1
        # (the values shown together, and each apart from the failed guard's value it replaced)
        shown = numbers_text([*(s.value for s in made), *(s.guarded_value for s in made if s.guarded_value)])
        by_symbol: dict[str, list[str]] = {}
        for s in made:
            text = (s.symbol + (f" = {shown[str(s.value)]}" if s.value is not None else "")
                    + (f" ({s.range_text})" if s.range_text and not one_range else ""))
            ids = by_symbol.setdefault(text, [])
            if compilation_key(s.shown_id) not in ids:  # (by compilation, as the recompile steps: [0/1_1] is [0/1])
                ids.append(compilation_key(s.shown_id))
        again = _distinct(s.symbol for s in self.symbols if s.retrace_of is not None)
        return ("; ".join(f"{text} in {', '.join(ids)}" for text, ids in by_symbol.items())
                + (f" ({ranges[0]})" if one_range else "")
                + (f"; AOTAutograd's trace made it again as {', '.join(again)} (the same value)" if again else ""))

    def to_json(self) -> dict[str, Any]:
        # Each symbol once per example value and range, with its compiles: a retried compile creates the same again.
        created = [{"symbol": same[0].symbol, "value": same[0].value, "range": same[0].range,
                    "compile_ids": _distinct(s.compile_id for s in same)}
                   for same in _grouped(self.symbols, lambda s: (s.symbol, s.value, s.range))]
        return {"source": self.source, "source_text": self.source_text, "unbacked": self.unbacked, "kind": self.kind,
                "from_item": self.from_item, "symbols": created,
                "location": _location_json(self.location), "torch_location": _location_json(self.torch_location),
                "locations": self.locations_json(), "compile_ids": self.compile_ids, "text": self.symbols_text}


@dataclass
class GuardCondition:
    """One guard expression, and the compiles that added it (a retried compile adds its guards again)."""

    expr: str
    compile_ids: list[str]
    count: int  # times added (a compile may add the same guard twice)
    # Of compile_ids, the attempts Dynamo restarted (DynamicShapes.discarded_attempts): in no compiled code.
    discarded_attempts: list[str] = field(default_factory=list)

    @property
    def compilations(self) -> list[str]:
        """The compilations whose kept attempt (not one Dynamo restarted) added it, each once, as the other tables say them: "[1/1]" for
        gpt2_train's `s70*… > 1`, which [1/1]'s restarted attempt and [1/1_1], which compiled, both added (the report
        links each to the attempt that compiled it). Not [0/1] for `s27*… > 1`, which only its restarted attempt
        added (discarded_text). compile_ids keeps the attempts, for the JSON."""
        return _distinct(compilation_key(cid) for cid in self.compile_ids if cid not in self.discarded_attempts)

    @property
    def discarded_text(self) -> str | None:
        """"added only by [0/1]'s first attempt, which Dynamo restarted; no later attempt of [0/1] added this
        expression", where only attempts Dynamo restarted added it; None where a kept attempt added it too. Said of the
        expression's text, which is all that is compared: the attempt that compiled may add the same condition on a
        symbol it named otherwise (s99 for the restarted attempt's s77), so "the compiled code does not check it" would
        not always be true."""
        if not self.discarded_attempts or self.compilations:  # (compilations parses ids: asked only where needed)
            return None
        attempts = [attempt_words(cid) for cid in self.discarded_attempts]
        restarted = "which Dynamo restarted" if len(attempts) == 1 else "each of which Dynamo restarted"
        of = " or ".join(_by_compilation(self.discarded_attempts))
        return f"added only by {and_list(attempts)}, {restarted}; no later attempt of {of} added this expression"

    def to_json(self) -> dict[str, Any]:
        return {"expr": self.expr, "compile_ids": self.compile_ids, "count": self.count,
                "compilations": self.compilations, "discarded_attempts": self.discarded_attempts,
                "discarded_text": self.discarded_text}


@dataclass
class GuardPlace:
    """The guards added at one line (location None: where torch logged no line, as for the checks Inductor adds
    while it compiles the graph), each expression once."""

    location: UserLocation | None
    conditions: list[GuardCondition]
    # Its conditions are on data-dependent values: runtime asserts the graph tests as it runs (torch._check), not
    # guards checked before each call (GuardAdded.runtime_assert). A line's asserts and guards are two places.
    runtime_asserts: bool = False

    @property
    def count(self) -> int:
        """Guards added here, each time it was added (as DynamicShapes.guards counts them)."""
        return sum(c.count for c in self.conditions)

    @property
    def distinct_note(self) -> str:
        """" (5 distinct)" where a guard was added more than once (each compile of a size adds its guards again), so
        that "9 guards" over 5 listed expressions does not read as 4 missing; "" where each was added once."""
        return f" ({len(self.conditions)} distinct)" if self.count != len(self.conditions) else ""

    def to_json(self) -> dict[str, Any]:
        return {"location": _location_json(self.location), "count": self.count,
                "conditions": [c.to_json() for c in self.conditions], "runtime_asserts": self.runtime_asserts}


def group_specializations(specializations: list[Specialization]) -> list[SpecializedSize]:
    """The specializations of one size (frame, sources, reason and line alike) together; those that a recompile
    followed first, as what a user acts on (the line that fixed the size is what recompiles)."""
    groups = [SpecializedSize(g) for g in _grouped(
        specializations, lambda s: (_frame(s.compile_id), tuple(s.sources) or s.symbol, s.reason,
                                    s.location.key if s.location else None))]
    return sorted(groups, key=lambda g: not g.recompiles)


def group_sizes(symbols: list[SymbolCreated]) -> list[DynamicSize]:
    """The symbols of one size (frame and source alike; an unbacked one, which has no source, by its name, with those
    AOTAutograd made again of it)."""
    return [DynamicSize(g[0].source, g) for g in _grouped(
        symbols, lambda s: (_frame(s.compile_id),
                            s.source if s.source is not None else ("symbol", s.retrace_of or s.symbol)))]


def group_guards(guards: list[GuardAdded], discarded_attempts: Iterable[str] = ()) -> list[GuardPlace]:
    """The guards by the line that added them, in the order of their first guard, each expression once with its
    compiles; the guards where torch logged no line last, together. discarded_attempts: the attempts Dynamo
    restarted (DynamicShapes.discarded_attempts); a line's conditions that only they added come after the others."""
    places = []
    discarded = set(discarded_attempts)
    # A line's runtime asserts apart from its guards; those where torch logged no line stay one place.
    for group in _grouped(guards, lambda g: (g.location.key, g.runtime_assert) if g.location else None):
        conditions = [GuardCondition(same[0].expr, ids, len(same), [cid for cid in ids if cid in discarded])
                      for same in _grouped(group, lambda g: g.expr)
                      for ids in (_distinct(g.compile_id for g in same),)]
        if discarded:  # (a log without restarts keeps the order as it is, never parsing every condition's ids)
            conditions.sort(key=lambda c: bool(c.discarded_attempts) and not c.compilations)
        places.append(GuardPlace(_first_location(group), conditions, all(g.runtime_assert for g in group)))
    return sorted(places, key=lambda p: p.location is None)

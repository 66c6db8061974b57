"""Where in the user's code each failed guard is: a tensor's first use in the compile whose guard failed (its guard tree
and graph), the user's call that passed it in, a 0/1 specialization's size, a call's arguments; paths torch clipped
made whole. Placing a size check also finds the symbol a recompile made of it and the advice on KV caches, sizes
marked dynamic and inputs transformers' generate() made."""

from __future__ import annotations

import re

from ...lazy_regex import lazy_compile
from ...model.trace import Compile, Trace
from ...wording import possessive
from ..compiled_frames import CompiledFrames, UsersNames
from ..fx_sites import GRAPH_ARTIFACT, first_use
from ..passed_on import ArgumentName, Passed, PassedOn, argument_name, argument_of, item_name, unreached_name
from ..installed_guards import GuardTree, enclosing_sources, tree_caches, tree_code_files, tree_tensor
from ..stack_values import StackValues
from ..user_locations import (FRAME_SOURCE, UserLocation, called_inside_compiled_code, code_origin,
                              is_clipped_torch_file, is_torch_file, last_user_stack_frame, passed_by_call,
                              placed_at_call, user_source_name)
from . import CompileTexts, FailedGuard, RecompileStep, SIZE_GUARD
from .advice import (CACHE_ADVICE, CACHE_ADVICE_GENERATE, GENERATED_SIZE_ADVICE, library_size_advice,
                     marked_size_one_advice, marking_call, stack_size_advice)


def known_files(trace: Trace) -> set[str]:
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


# A size a guard names, as the frame does (`tokens.size()[1]`, `self.buf.size()[0]`).
_SIZE_SOURCE = lazy_compile(r"(?<![\w.\]'\"])(?P<tensor>[A-Za-z_][\w.\[\]'\"]{0,500}?)\.size\(\)\[(?P<dim>\d{1,6})\]")
# (an attribute may be an item's: `args[1]._scale == 0.5`, a ScaledTensor's float in its __torch_dispatch__'s args)
_NUMBER_GUARD = lazy_compile(r"^(?:L\['(?P<local>\w{1,200})'\]|(?P<name>[A-Za-z_]\w{0,200})"
                             r"(?P<attribute>(?:\[\d{1,6}\]){0,4}(?:\.[A-Za-z_]\w{0,200}){1,8})?) == -?\d")
# A check of a tensor that failed, as torch's TENSOR_MATCH words it: `tensor 'x' dtype mismatch. ...`.
_TENSOR_CHECK = r"^tensor '(?P<tensor>.{1,500}?)' (?=[\w ]{1,40}mismatch)"
_NAME = r"^(?P<name>[A-Za-z_]\w{0,200})(?P<rest>.*)$"


def tree_sources(tensor: str) -> list[str]:
    """How the guard tree may name the tensor a failure names: `x` is the frame's local L['x']."""
    m = re.match(_NAME, tensor)
    return [tensor] + ([f"L['{m['name']}']{m['rest']}"] if m and m["name"] != "L" else [])


def _cache_of(tree: GuardTree, source: str) -> tuple[str, str] | None:
    """(the cache's source, its class) when the tensor at source is held by a transformers KV cache."""
    caches = tree_caches(tree)
    return next(((user_source_name(outer), caches[outer]) for outer in enclosing_sources(source) if outer in caches),
                None)


def _in_generate(stack: list | None) -> bool:
    """The compile was called from transformers' generate() (its dynamo_start stack passes through it)."""
    return any(f.name == "generate" and "transformers" in f.filename and "generation" in f.filename
               for f in stack or [])


def _place_tensor_check(guard: FailedGuard, texts: CompileTexts, code: UserLocation | None,
                        known: set[str], caller: UserLocation | None, passed: Passed | None = None) -> str | None:
    """For a failed check of a tensor: its name, where the guarded compile first used it (where torch's own frame
    first used it in torch's code too: the user's line that called the frame, caller), and the KV cache holding
    it. Returns the source the guard tree names the tensor by (`L['x']`), when the tree has it."""
    m = re.match(_TENSOR_CHECK, guard.guard)
    if m is None:
        return None
    guard.tensor = m["tensor"]
    tree = texts.guard_tree(guard.compile_id)  # (as GuardTrees parsed it for the report)
    found = next(((source, line) for source in tree_sources(guard.tensor)
                  if (line := tree_tensor(tree, source)) is not None), None) if tree is not None else None
    if guard.location is None:
        site = found[1].site if found else None
        used = (_unclipped(UserLocation(site.path, site.line, site.function, site.code.strip() or None), known)
                if site else None)
        if used is not None and not used.filename.startswith("/") and tree is not None:
            # Still clipped ("nn/attention/_utils.py", a torch file no stack of the log passes through): the guard
            # tree's code objects name files in full (`<code object f at 0x.., file "/…/torch/nn/…", line 34>`).
            used = _unclipped(used, tree_code_files(tree))
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
        passed_in = caller is not None and not (passed is not None and passed.made_by) and placed_at_call(code.filename if code is not None else None, guard.tensor,
                                                          used.filename if used is not None else None, caller.code,
                                                          code.function if code is not None else None)
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
    cache = _cache_of(tree, found[0]) if tree is not None else None
    if cache is not None:
        guard.cache_source, guard.cache_class = cache
    return found[0]


def _place_tensor_check_once(guard: FailedGuard, texts: CompileTexts, code: UserLocation | None, known: set[str],
                             caller: UserLocation | None,
                             placed: dict[tuple[str | None, str, tuple[str, int] | None],
                                          tuple[str | None, FailedGuard]], passed: Passed | None) -> str | None:
    """_place_tensor_check, for a check of a tensor that compile and caller placed before: as that one was placed."""
    m = re.match(_TENSOR_CHECK, guard.guard)
    if m is None:
        return None
    key = (guard.compile_id, m["tensor"], (caller.filename, caller.line) if caller is not None else None)
    known_placement = placed.get(key)
    if known_placement is None:
        unplaced = guard.location is None
        source = _place_tensor_check(guard, texts, code, known, caller, passed)
        if unplaced:  # (a check whose text named its line keeps it: not one to place others by)
            placed[key] = (source, guard)
        return source
    source, done = known_placement
    guard.tensor = done.tensor
    if guard.location is None:
        guard.location, guard.location_kind = done.location, done.location_kind
    guard.cache_source, guard.cache_class = done.cache_source, done.cache_class
    return source


def _made_by_library(guard: FailedGuard, tensor: str, code: UserLocation | None, entry: Compile,
                     compiled_frames: CompiledFrames, passed: Passed | None) -> bool:
    """A size check of a value the library made: an argument, not passed by the user's call, of a frame not the user's
    that the library's code called while it ran compiled (transformers' output dataclass __init__'s `logits`; loss2's
    pred, forward's own `out`, where the user's call is cut on its stack: passed says so)."""
    caller = compiled_frames.called_from(entry.compile_id)
    not_passed = (passed.made_by is not None if passed is not None
                  else caller is not None and not passed_by_call(caller.code, tensor, code.function if code else None))
    return (code is not None and code_origin(code.filename) is not None
            and guard.location_kind not in ("call", "argument")
            and caller is not None and not_passed
            and called_inside_compiled_code(compiled_frames.stack(entry.compile_id)))


def place_failed_checks(steps: list[tuple[RecompileStep, Compile]], texts: CompileTexts, code: UserLocation | None,
                         known: set[str], compiled_frames: CompiledFrames, stack_values: StackValues,
                         names: UsersNames, passed_on: PassedOn) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Places each failed guard (unclipped paths; for a check of a tensor, where the guarded compile first used it)
    and a size's symbol in the recompile that made it dynamic. Returns the advice for KV caches that grew and for
    sizes marked dynamic that torch kept static (a first call's size of 0 or 1) or that transformers' generate() made,
    and the other sizes that changed: (tensor, dim, where the user's call passed it in, or ""). Where the frame is a
    wrapper (names), a tensor is said as the user names it: `input_ids` for the wrapper's kwargs['input_ids']; the
    guard's own text stays torch's. A tensor the user's call passed under another name is said by theirs
    (passed_on: `t`, where `cm(x, t)` passes it as forward's target), or by its place in the call where an expression
    passed it ("the first argument of the call at prog.py:28")."""
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
        # (the frame as the report's heading names it: GPT2LMHeadModel's forward, for transformers' wrapper; by its
        # module where that name is the user's function that called it, PassedOn.qualifier)
        function = (passed_on.qualifier(entry.compile_id, names.function(entry.compile_id, code.function))
                    if code is not None else None)
        for guard in step.failed_guards:
            checked = re.match(_TENSOR_CHECK, guard.guard) if guard is step.guard else None
            argument = argument_of(checked["tensor"]) if checked else None
            passed_by = (passed_on.of(entry.compile_id, code, argument[0]) if argument is not None and not argument[1]
                         else None)
            source = _place_tensor_check_once(guard, texts, code, known, caller, placed, passed_by)
            if guard is not step.guard:  # (the newest entry's guard is what the step says of its sizes)
                source = None
            _unclip(guard, known)
            _name_as_the_user(guard, entry, names)
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
            size = SIZE_GUARD.match(guard.guard) if guard is step.guard and guard.change == "size" else None
            if size is None:
                continue
            if source is not None:
                wanted = f"{source}.size()[{size['dim']}]"
                step.dynamic_symbol = next((str(sym.get("symbol")) for sym in entry.symbols
                                            if sym.get("source") == wanted and sym.get("symbol")), None)
                # (a resume function's ___stack0 is a value the user's code made before the break: said so)
                stacked = stack_values.short(entry, size["tensor"])
                guard.tensor_text = stacked or guard.tensor_text
                step.dynamic_of = (f"dimension {size['dim']} of {stacked}" if stacked
                                   else f"{possessive(guard.tensor_text or size['tensor'])} dimension {size['dim']}")
                marking = texts.guard_tree(guard.compile_id) if size["size"] in ("0", "1") else None
                guard.marked = marking_call(marking, source, size["dim"]) if marking is not None else None
            if guard.marked is not None:  # (marked already: the advice is on its size of 0 or 1)
                marked.append(marked_size_one_advice(guard, size["dim"], size["size"]))
            elif guard.cache_class is None and (value := stack_values.value(entry, size["tensor"])) is not None:
                advice = stack_size_advice(value, size["dim"])  # (no name of the user's to mark dynamic)
                if advice not in cache_advice:
                    cache_advice.append(advice)
            elif guard.cache_class is None and guard.location_kind == "call" and _in_generate(
                    compiled_frames.stack(entry.compile_id)):
                # generate() made the input it passed (the decode step's one token): nothing of the user's to mark
                named = _named(argument, passed_by, function, guard, size["tensor"])
                if named is not None:
                    guard.tensor_text = named.said()
                    if source is not None:
                        step.dynamic_of = named.dimension(size["dim"])
                said = f"{guard.tensor_text or size['tensor']} at index {size['dim']}"
                if said not in generated:
                    generated.append(said)
            elif guard.cache_class is None and _made_by_library(guard, size["tensor"], code, entry, compiled_frames,
                                                                passed_by):
                # (the library's own tensor, logits: no name of the user's to mark dynamic)
                advice = library_size_advice(guard.tensor_text or size["tensor"], size["dim"], code, caller,
                                             bool(step.dynamic_symbol), passed_by)
                if advice not in cache_advice:
                    cache_advice.append(advice)
            elif guard.cache_class is None:
                # An argument the user's call passed (args[1]): which call, as they know it by its line
                passed = f", passed in by the call at {guard.location.short}" if (
                    guard.location_kind in ("call", "argument") and guard.location is not None) else ""
                tensor = guard.tensor_text or size["tensor"]
                # (the frame's argument in the words every place of the report uses for it: argument_name's)
                named = _named(argument, passed_by, function, guard, size["tensor"]) if passed else None
                if named is None and not passed:
                    named = (unreached_name(function, code, caller, argument[0]) if argument is not None
                             and not argument[1] else None)
                    if named is not None:
                        tensor = guard.tensor_text = named.said()
                        if source is not None:
                            step.dynamic_of = named.dimension(size["dim"])
                if named is not None and passed and guard.location is not None:
                    tensor, passed = _say_passed(guard, named, passed_by, guard.location)
                    if source is not None:
                        step.dynamic_of = named.dimension(size["dim"])
                if not any(t == tensor and d == size["dim"] for t, d, _ in sizes):
                    sizes.append((tensor, size["dim"], passed))
            elif "Static" not in guard.cache_class:  # (a static cache that changed size needs other advice)
                words = CACHE_ADVICE_GENERATE if _in_generate(compiled_frames.stack(entry.compile_id)) else CACHE_ADVICE
                advice = words.format(source=guard.cache_source, cls=guard.cache_class)
                if advice not in cache_advice:
                    cache_advice.append(advice)
    generated_advice = [GENERATED_SIZE_ADVICE.format(inputs="; ".join(generated))] if generated else []
    return cache_advice + generated_advice + list(dict.fromkeys(marked)), sizes


def _named(argument: tuple[str, str] | None, passed: Passed | None, function: str | None,
           guard: FailedGuard, tensor: str) -> ArgumentName | None:
    """The failed check's tensor, where it is an argument of the frame placed at the user's call that passed it in
    (argument: argument_of's), or an item of one (tensor: `args[0]`, item_name's), in the words every place of the
    report uses for it (argument_name)."""
    if guard.location is None or guard.location_kind not in ("call", "argument"):
        return None
    if argument is None:
        item = item_name(function, tensor)
        return item[0] if item is not None and not item[1] else None
    return None if argument[1] else argument_name(passed, function, argument[0])


def _say_passed(guard: FailedGuard, named: ArgumentName, passed: Passed | None,
                call: UserLocation) -> tuple[str, str]:
    """The argument of a library's frame the user's call passed, named (argument_name), for the advice: (the tensor,
    where: ", passed in by the call at prog.py:26 as forward's target"); the failed check's line says it so too
    (tensor_text, location_kind). A name of theirs is the tensor to mark dynamic (`t`); an expression
    (`torch.randn(n, 4)`) is said by its place in the call too, the tensor passed there; torch's name, qualified
    ("forward's x"), where the log settles neither."""
    if not named.users:
        guard.tensor_text = named.said()
        return named.name, f", passed in by the call at {call.short}" + (f" as {named.of}" if named.of else "")
    if named.expression and passed is not None and passed.argument is not None:
        ordinal = passed.argument.ordinal
        guard.tensor_text, guard.location_kind = f"{named.said()}, {ordinal}", "argument"
        return named.name, f", {ordinal} of the call at {call.short}, as {named.of}"
    guard.tensor_text = named.said()
    return named.name, f", passed in by the call at {call.short} as {named.of}"


def _name_as_the_user(guard: FailedGuard, entry: Compile, names: UsersNames) -> None:
    """Says the guard's tensor and KV cache as the user names them where its frame is a wrapper (UsersNames.of):
    tensor_text, unless a name Dynamo made says it already; cache_source."""
    if guard.tensor and guard.tensor_text is None:
        own = user_source_name(guard.tensor)
        named = names.of(entry.compile_id, own)
        guard.tensor_text = named if named != own else None
    if guard.cache_source:
        guard.cache_source = names.of(entry.compile_id, guard.cache_source)


def place_size_one_guards(steps: list[tuple[RecompileStep, Compile]], by_id: dict[str, Compile]) -> None:
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


def place_argument_guards(steps: list[tuple[RecompileStep, Compile]], code: UserLocation | None,
                           compiled_frames: CompiledFrames) -> None:
    """Places each failed guard on how many arguments or which keywords a call passes, where torch placed it in a
    library's frame (transformers' deprecation.py:126, inside its decorator), at the user's call that passed them so
    (generate() at hf_llama.py:39): the rule that places the frame's arguments (user_locations.placed_at_call)."""
    for step, entry in steps:
        caller = compiled_frames.called_from(entry.compile_id)
        for guard in step.failed_guards if caller is not None else []:
            if guard.change not in _CALL_ARGUMENTS or guard.location_kind != "guard":
                continue
            used = guard.location.filename if guard.location is not None else None
            if placed_at_call(code.filename if code is not None else None, _CALL_ARGUMENTS[guard.change], used):
                guard.location, guard.location_kind = caller, "arguments_call"

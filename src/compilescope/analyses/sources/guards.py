"""What the compiles check of the user's lines, on the lines: the guards recompiles found failing (add_failed_guards),
the switches of state that made them (add_state_changes), the guards each compile installed because of a line, with
its guards on inlined functions' code (add_installed_guards), and the dynamic-shape symbols made, specialized and
guarded there (add_symbols)."""

from __future__ import annotations

from typing import Any

from ...model.source_files import SourceFiles
from ...model.ids import compilation_key
from ...model.payloads import PayloadRef
from ...model.trace import Compile, Frame, Trace
from ..dynamic_shapes import DynamicShapes
from ..compile_errors import CompileErrors
from ..installed_guards import GuardTrees
from ..recompiles import Recompiles
from ..stack_values import StackValues, name_stack_values
from ..state_lines import StateLine, state_lines
from ..user_locations import numpy_in_words
from . import CodeGuards, NoteAt
from .file_text import Quotes


def add_failed_guards(recompile_info: Recompiles, errors: CompileErrors | None, at: NoteAt, quotes: Quotes) -> None:
    """Each guard a recompile found failing, on its line (not a function's def: not where it failed), once per
    recompile; "recompile_failed" where the recompilation failed itself, "again" where the compilation whose guard it
    is failed it at an earlier recompile already."""
    # Why a compile failed, by compile id: a recompilation that failed (the recompile limit) compiled nothing.
    failed_why = {e.compile_id: e.message for e in (errors.errors if errors is not None else ())}
    for fr in recompile_info.frames:
        failed_before: set[tuple[str | None, str]] = set()  # (compilation, guard) failed at an earlier recompile
        for step in fr.steps:
            recompile = compilation_key(step.compile_id)
            failing_now = {(guard.compile_id, guard.guard) for guard in step.failed_guards}
            for guard in step.failed_guards:
                loc = guard.location
                if loc is None or guard.location_kind == "function":  # (the function's def: not where it failed)
                    continue
                quotes.add(loc.filename, loc.line, loc.code)
                n = at(loc.filename, loc.line)
                failed: dict[str, Any] = {"recompile": recompile,
                                          "failed_in": compilation_key(guard.compile_id) if guard.compile_id else None,
                                          "guard": guard.guard, "change": guard.change}
                if guard.described:  # (Dynamo's ___stack names in the user's words, as the recompiles view says them)
                    failed["described"] = guard.described
                if step.failed:
                    failed["recompile_failed"] = failed_why.get(recompile) or "it failed"
                if guard.compile_id is not None and (guard.compile_id, guard.guard) in failed_before:
                    failed["again"] = True
                if n is not None and failed not in n.guards:
                    n.guards.append(failed)
            failed_before |= failing_now


def add_state_changes(trace: Trace, recompile_info: Recompiles, files: SourceFiles, at: NoteAt) -> list[StateLine]:
    """The lines that switched the state a recompile's failed guard checks (state_lines, from the files as ingest read
    them), each marked with what it switched; state_lines' finding, for the recompiles' advice."""
    stacks: dict[str, list[Frame]] = {}  # each compile's dynamo_start stack: which of several lines it passed
    for entry in trace.sorted_compiles():
        if entry.compile_id is not None and entry.stack:
            stacks.setdefault(compilation_key(entry.compile_id), entry.stack)
    changed_state = state_lines(recompile_info, stacks, files)
    for marked in changed_state:
        n = at(marked.path, marked.line)
        if n is not None:  # (read from the file itself, not quoted by the log: no check of the file against the run)
            n.state_changes.append({"recompile": marked.recompile, "kind": marked.kind, "text": marked.text})
    return changed_state


def add_installed_guards(guard_trees: GuardTrees, guard_sites: list[tuple[str, Compile, PayloadRef]], known: set[str],
                         stack_values: StackValues, at: NoteAt, quotes: Quotes) -> dict[str, CodeGuards]:
    """Each guard a compile installed (guard_sites: the compiles' guards payloads) on the user line it came from, once
    per compile, with torch's hint, whether the line only used the size first, and Dynamo's ___stack names in the
    user's words; and, by compile id, its guards on inlined functions' code (guarded_calls reads them). known: the
    files noted so far."""
    # Installed guards name the user line they came from, with the path clipped at the front: matched to a file
    # the log names in full, and only when exactly one ends that way.
    resolved: dict[str, str | None] = {}  # clipped path -> the one known path it names (asked once per path)
    installed: set[tuple[str, int, str, str]] = set()
    code_guards: dict[str, CodeGuards] = {}  # compile id -> its guards on inlined functions' code
    for key, guarded, guards_payload in guard_sites:
        for tree_line in guard_trees.of(guards_payload).lines:  # (each tree parsed once a report: GuardTrees)
            if tree_line.site is None:
                continue
            guard_text, path, line, code, hint, function, inlined_name, first_use = tree_line.site
            if inlined_name is not None:
                code_guards.setdefault(key, CodeGuards()).in_function.setdefault(function, set()).add(inlined_name)
            if path not in known:
                if path not in resolved:
                    full = [p for p in known if p.endswith("/" + path) or p.endswith(path)]
                    resolved[path] = full[0] if len(full) == 1 else None
                found = resolved[path]
                if found is None:
                    continue
                path = found
            n = at(path, line)
            if n is not None:
                quotes.add(path, line, code)  # the guard's comment quotes its line, sometimes the only quote of it
                if inlined_name is not None:
                    code_guards[key].user_lines.setdefault((path, line), set()).add(inlined_name)
            if n is not None and (path, line, key, guard_text) not in installed:
                installed.add((path, line, key, guard_text))
                guard_note: dict[str, Any] = {"installed": key, "guard": guard_text}
                if hint:  # (torch's hint on what the guard checks: "type float")
                    guard_note["hint"] = hint
                if first_use:
                    guard_note["first_use"] = True
                named = stack_values.guard_names(guarded, guard_text) if "___stack" in guard_text else {}
                if named:  # (Dynamo's ___stack names in the user's words, as the recompiles view says them)
                    guard_note["described"] = name_stack_values(guard_text, named)
                if "___from_numpy(" in guard_text:  # (the NumPy array the function takes, not torch's tensor of it)
                    guard_note["described"] = numpy_in_words(guard_note.get("described") or guard_text)
                n.guards.append(guard_note)
    return code_guards


def add_symbols(shapes: DynamicShapes, at: NoteAt) -> None:
    """The dynamic-shape symbols made (created), specialized and guarded on each line, each said once a line."""
    for created in shapes.symbols:
        if created.location is not None:
            n = at(created.location.filename, created.location.line)
            symbol = {"kind": "created", "compile_id": compilation_key(created.compile_id), "symbol": created.symbol,
                      "value": created.value, "source": created.source}
            if created.source_text:  # (a ___stack source in the user's words, as the dynamic-shapes view says it)
                symbol["described"] = created.source_text
            if n is not None and symbol not in n.symbols:
                n.symbols.append(symbol)
    for spec in shapes.specializations:
        if spec.location is not None:
            n = at(spec.location.filename, spec.location.line)
            # A specialization names every source of its symbol (symbolic_shape_specialization's "sources": sizes
            # torch found equal share one symbol), each in the user's words where it is a name Dynamo made.
            specialized: dict[str, Any] = {"kind": "specialized", "compile_id": compilation_key(spec.compile_id),
                                           "symbol": spec.symbol, "value": spec.value, "sources": list(spec.sources)}
            if spec.source_texts:
                specialized["described_sources"] = [{"source": source, "text": text}
                                                    for source, text in spec.source_texts.items()]
            if n is not None and specialized not in n.symbols:
                n.symbols.append(specialized)
    # The guards as the Dynamic shapes section groups them (DynamicShapes.guard_lines), so that the two agree: each
    # under the compilations whose kept attempt added it; one only an attempt Dynamo restarted added is said so
    # (discarded_text, naming the attempt), not listed as its compilation's.
    for place in shapes.guard_lines:
        assert place.location is not None  # (guard_lines: those with a line)
        n = at(place.location.filename, place.location.line)
        if n is None:
            continue
        for condition in place.conditions:
            shape_notes: list[dict[str, Any]] = [{"kind": "guard", "compile_id": compilation, "expr": condition.expr}
                                                 for compilation in condition.compilations]
            if condition.discarded_text:
                shape_notes.append({"kind": "guard", "attempts": condition.discarded_attempts, "expr": condition.expr,
                                    "discarded": condition.discarded_text})
            n.symbols.extend(note for note in shape_notes if note not in n.symbols)

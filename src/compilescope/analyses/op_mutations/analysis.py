"""The analysis (op_mutations): the custom ops' calls the log's graphs hold joined with what their source says,
into the undeclared writes, the ops not checked and the calls left out; each call's reads moved past it
(told_calls)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import Trace
from ..user_locations import UserLocation
from . import (CUSTOM_OP, NOT_FOUND, OVERLOAD_NOT_SHOWN, TRITON_OP, DroppedCall, FoundCalls, GraphPlace, MovedRead,
               OpCall, OpMutations, OpSource, UndeclaredMutation, UnreadSource)
from .calling_files import add_file_ops, import_roots, imported_files, importers, read_calling_files, read_lines
from .graph_calls import found_calls

if TYPE_CHECKING:
    from .moved_reads import CompiledCalls


def op_mutations(trace: Trace, files: SourceFiles = NO_FILES) -> OpMutations:
    """files: as ingest read them, with files_wanted and modules_wanted (the files the ops are defined in)."""
    in_graphs = found_calls(trace)
    calls, functional = in_graphs.calls, in_graphs.functional
    if not calls:
        return OpMutations()
    sources, unread, texts = read_calling_files(in_graphs, files)
    # An op its calling files do not define: in the modules they import, where Python finds them from the script
    for path in importers(in_graphs, sources, texts):
        for module in imported_files(path, texts[path], files, import_roots(in_graphs, path)):
            if module not in texts and module not in unread:
                add_file_ops(module, in_graphs.files, sources, unread, texts, files)
    out = OpMutations()
    calls, where, stored_at, left_out, not_shown = _overloads_shown(in_graphs, sources)
    out.unread.extend(not_shown)
    compiled: dict[int, CompiledCalls] = {}  # id of a compile -> what its code says of moved reads
    unknown = in_graphs.packets - set(sources)  # (a packet no file read defines: some library's op, not checked)
    calls = {op: op_calls for op, op_calls in calls.items() if op not in unknown}
    left_out = [(d, unknown_overload) for d, unknown_overload in left_out if d.op not in unknown]
    for op, op_calls in calls.items():
        if op in sources:
            continue
        for path in dict.fromkeys(c.location.filename for c in op_calls):
            if path in unread:
                out.unread.append(UnreadSource(op, path, unread[path]))
            elif not any(_names_op(text, op) for text in texts.values()):
                # (a file read names it: defined there otherwise than with custom_op, as triton_op or a Library's
                # define, whose schema says what it writes)
                out.unread.append(UnreadSource(op, path, NOT_FOUND))
    decomposed: set[str] = set()  # triton_ops: AOTAutograd runs their body, so a call it no longer holds is no drop
    for op, op_calls in calls.items():
        stored = [s or set() for s in stored_at[op]]  # (each call's, in order)
        for path, source in sources.get(op, []):
            if source.form == TRITON_OP:
                decomposed.add(op)
                op_calls = [OpCall(c.compile_id, c.location, False, c.cached) for c in op_calls]
                if source.declared is None:
                    continue  # (AOTAutograd decomposes it: how torch took mutates_args, the log does not show)
            declared = source.declared if source.declared is not None else (
                frozenset() if functional.get(op) else None)
            if declared is None:
                continue  # (torch took it for mutating: which arguments, the log does not say)
            if not declared and functional.get(op) is False:
                continue  # (AOTAutograd wrapped it as mutating: not this definition's, which declares no write, ran)
            written = [(arg, line) for arg, line in source.writes if arg not in declared]
            # Declared, yet run as functional: graphs compiled before the declaration, served from the cache (checked
            # with custom_op's mutates_args only)
            stale = not written and source.form == CUSTOM_OP and bool(source.declared) and functional.get(op, False) \
                and any(c.cached for c in op_calls)
            if stale:
                written = [(arg, line) for arg, line in source.writes if arg in declared]
            if not written:
                continue
            lines = read_lines(path, files)
            arguments = list(dict.fromkeys(a for a, _ in written))
            # (a triton_op's calls: no read moved past them is claimed, its kernels run in the op's place)
            told = op_calls if source.form == TRITON_OP else told_calls(trace, op_calls, where[op], arguments,
                                                                         source.parameters, compiled)
            defined_at = UserLocation(path, source.defined_line, source.function, _code(lines, source.defined_line))
            writes = [UserLocation(path, line, source.function, _code(lines, line))
                      for line in dict.fromkeys(line for _, line in written)]
            if source.form == TRITON_OP:
                # A call under whose line AOTAutograd's kernel launches list each written argument's pointer in
                # tensors_to_clone: torch found the store itself and keeps it, whatever mutates_args says. One
                # statement an op: functionalized where every call shows it; else the undeclared write, its calls
                # that show it marked (OpCall.store_found), never both
                pointers = [set(source.pointers.get(a, ())) for a in arguments]
                found = [bool(pointers) and all(p & s for p in pointers) for s in stored]
                told = [OpCall(c.compile_id, c.location, c.dropped, c.cached, store_found=f)
                        for c, f in zip(told, found)]
                if told and all(found):
                    cloned = sorted({name for p in pointers for s in stored for name in p & s})
                    out.functionalized.append(UndeclaredMutation(
                        op, source.function, arguments, source.declared_text or "(none)", defined_at, writes,
                        told, False, source.declared_value, source.form, cloned))
                    continue
            out.ops.append(UndeclaredMutation(
                op, source.function, arguments, source.declared_text or "(none)", defined_at, writes, told, stale,
                source.declared_value, source.form))
    written_by = {op.op: op.arguments for op in (*out.ops, *out.functionalized)}
    out.dropped = [DroppedCall(d.op, d.compile_id, d.location, d.op in sources and not unknown_overload,
                               [] if unknown_overload else written_by.get(d.op, []), d.op in sources and unknown_overload)
                   for d, unknown_overload in left_out if d.op not in decomposed]
    return out


def _overloads_shown(found: FoundCalls, sources: dict[str, list[tuple[str, OpSource]]]) -> tuple[
        dict[str, list[OpCall]], dict[str, list[GraphPlace]], dict[str, list[set[str] | None]],
        list[tuple[DroppedCall, bool]], list[UnreadSource]]:
    """found's calls, where and stored_at without the calls of a packet whose overload the log does not show
    (FoundCalls.unresolved) where the source defines overloads of it besides the default: which one such a call ran,
    its body and schema, is not known, so it is credited to none (a packet of the default alone is the default's).
    Each calling file of those calls as not checked (OVERLOAD_NOT_SHOWN); each call left out, with whether its
    overload is unknown."""
    unknown: dict[str, set[int]] = {
        op: indexes for op, indexes in found.unresolved.items()
        if any(other.startswith(f"{op}.") for other in sources)}
    if not unknown:
        return found.calls, found.where, found.stored_at, [(d, False) for d in found.left_out], []
    calls, where, stored_at = dict(found.calls), dict(found.where), dict(found.stored_at)
    not_shown: list[UnreadSource] = []
    # (op, compile, file, line) of the calls taken out: a call left out there is no known overload's
    places: set[tuple[str, str, str, int]] = set()
    for op, indexes in unknown.items():
        kept = [i for i in range(len(calls[op])) if i not in indexes]
        for i in sorted(indexes):
            place = calls[op][i].location
            places.add((op, where[op][i][0].key, place.filename, place.line))
        not_shown.extend(UnreadSource(op, path, OVERLOAD_NOT_SHOWN)
                         for path in dict.fromkeys(calls[op][i].location.filename for i in sorted(indexes)))
        if kept:
            calls[op] = [calls[op][i] for i in kept]
            where[op] = [where[op][i] for i in kept]
            stored_at[op] = [stored_at[op][i] for i in kept]
        else:
            del calls[op], where[op], stored_at[op]
    left_out = [(d, (d.op, d.compile_id, d.location.filename, d.location.line) in places) for d in found.left_out]
    return calls, where, stored_at, left_out, not_shown


MAX_MOVED_READS = 20  # moved reads listed per op, over its calls; the rest counted (OpCall.more_moved_reads)


def told_calls(trace: Trace, op_calls: list[OpCall], where: list[GraphPlace],
               arguments: list[str], parameters: list[str], compiled: dict[int, CompiledCalls]) -> list[OpCall]:
    """The op's calls with their moved reads: at most MAX_MOVED_READS listed over all of them, the rest counted.
    where: each call's place in its compile's graph (FoundCalls.where). `compiled` keeps what each compile's graph
    and output code say, read once however many calls it has."""
    from .moved_reads import CompiledCalls  # here: the output code's calls are read for a log with custom-op calls only

    told: list[OpCall] = []
    room = MAX_MOVED_READS
    for c, place in zip(op_calls, where, strict=True):
        reads: list[MovedRead] = []
        more = 0
        placed = True
        if not c.dropped:
            if (found := compiled.get(id(place.entry))) is None:
                found = compiled[id(place.entry)] = CompiledCalls(trace, place.entry, place.graph)
            reads, more, placed = found.moved_reads(place, arguments, parameters, room)
            room -= len(reads)
        told.append(OpCall(c.compile_id, c.location, c.dropped, c.cached, reads, more, unplaced=not placed))
    return told


def _code(lines: list[str] | None, line: int) -> str | None:
    return lines[line - 1].strip() if lines is not None and 0 < line <= len(lines) else None


def _names_op(text: str, op: str) -> bool:
    """The text names the op in a string, as a definition does (`triton_op("mylib::scale"`, `"mylib::scale.out"`,
    `Library("mylib", "DEF")`); not in prose (a docstring's `mylib::scale multiplies`)."""
    namespace = op.split("::", 1)[0]
    return any(f"{quote}{name}" in text for quote in "\"'" for name in (op, f"{namespace}{quote}"))

"""The calls made on a user line whose ops the graph holds in another function (a library call, a submodule's
forward, a helper Dynamo inlined): from the kernel stack traces, which run from the compiled frame inward (add_calls),
or, where a compile's stacks do not hold the chain, from Dynamo's guards on the inlined functions' code and the
graph's order (guarded_calls, bracketed_calls, marked by add_guarded_calls)."""

from __future__ import annotations

from typing import Any

from ..fx_sites import FxNodeSite
from ..provenance import UserLine
from . import CodeGuards, LineNotes, NoteAt
from .file_text import Quotes, is_user_source


def add_call(n: LineNotes, outer: tuple[str, int], inner: tuple[str, int, str | None], compile_id: str,
              calls: dict[tuple[str, int, str, int], dict[str, Any]]) -> None:
    """Notes on the line outer that a call made there holds the graph's ops at inner (file, line, function)."""
    key = (*outer, inner[0], inner[1])
    call = calls.get(key)
    if call is None:
        call = calls[key] = {"file": inner[0], "line": inner[1], "function": inner[2], "compile_ids": []}
        n.calls.append(call)
    if compile_id not in call["compile_ids"]:
        call["compile_ids"].append(compile_id)


def add_guarded_calls(code_guards: dict[str, CodeGuards], graph_sites: dict[str, list[FxNodeSite]], stacked: set[str],
                      at: NoteAt, calls: dict[tuple[str, int, str, int], dict[str, Any]]) -> None:
    """The calls guarded_calls finds, on their lines, for the compiles whose kernel stacks do not hold the whole chain
    of calls (stacked: those whose do; add_kernels says their calls)."""
    for outer, op_site, compile_id in guarded_calls({k: v for k, v in code_guards.items() if k not in stacked},
                                                    graph_sites):
        n = at(*outer)
        if n is not None:
            add_call(n, outer, (op_site.path, op_site.line, op_site.function), compile_id, calls)


def guarded_calls(code_guards: dict[str, CodeGuards],
                  graph_sites: dict[str, list[FxNodeSite]]) -> list[tuple[tuple[str, int], FxNodeSite, str]]:
    """The calls a graph dump shows where no kernel stack does (backend="eager": a node's comment names only its
    innermost line). A user line from which Dynamo guarded a function's code called that function, inlined into the
    compile's graph: the nodes the dump places in a user function of that name are that line's ops, and so are those
    of the functions guarded inside it, in turn (per_sample_grads' `vmap(grad(sample_loss))` at func_numpy.py:32:
    sample_loss's ops at line 27; jacobian's `jacrev(energy)(x)`: jacrev, torch's, guards energy). Where two lines
    call one function, the guard is on the first: it has the ops, and the other lines are found in the graph's
    order (bracketed_calls). As (caller's file and line, the site of its ops, compile id)."""
    found: list[tuple[tuple[str, int], FxNodeSite, str]] = []
    for compile_id, guards in code_guards.items():
        sites_in: dict[str, list[FxNodeSite]] = {}
        for site in graph_sites.get(compile_id, ()):
            if is_user_source(site.path):
                sites_in.setdefault(site.function, []).append(site)
        for outer, names in guards.user_lines.items():
            for name in sorted(names):
                found.extend((outer, site, compile_id) for site in _reached(name, guards, sites_in)
                             if (site.path, site.line) != outer)  # (recursion: the line's own ops)
        callers: dict[str, set[str]] = {}  # an inlined function -> the functions Dynamo guarded its code in
        for function, inlined in guards.in_function.items():
            for name in inlined:
                callers.setdefault(name, set()).add(function)
        for name, calling in sorted(callers.items()):
            reached = {site.function for site in _reached(name, guards, sites_in)}
            found.extend((outer, site, compile_id) for outer, run in
                         bracketed_calls(graph_sites.get(compile_id, []), reached, calling)
                         for site in run if (site.path, site.line) != outer)
    return found


def _reached(name: str, guards: CodeGuards, sites_in: dict[str, list[FxNodeSite]]) -> list[FxNodeSite]:
    """The graph's sites in the function name and in the functions guarded inside it, in turn."""
    found: list[FxNodeSite] = []
    todo, seen = [name], set()
    while todo:
        function = todo.pop(0)
        if function in seen:
            continue
        seen.add(function)
        found.extend(sites_in.get(function, ()))
        todo.extend(sorted(guards.in_function.get(function, ())))
    return found


def bracketed_calls(sites: list[FxNodeSite], callee: set[str],
                    callers: set[str]) -> list[tuple[tuple[str, int], list[FxNodeSite]]]:
    """The lines that called an inlined function, read from the graph's order: Dynamo places the guard on a
    function's code at the first line that reached it only, but its ops sit where each call ran, between the ops of
    the statement that called it. A run of sites in callee's functions whose neighbours, before and after, are one
    line of a function that calls it (`k_embed = (k * cos) + (rotate_half(k) * sin)`: k * cos, then rotate_half's
    ops, then * sin) was called from that line. A call whose line has ops on one side only is not placed."""
    found: list[tuple[tuple[str, int], list[FxNodeSite]]] = []
    i = 0
    while i < len(sites):
        if sites[i].function not in callee or not is_user_source(sites[i].path):
            i += 1
            continue
        end = i
        while end < len(sites) and sites[end].function in callee and is_user_source(sites[end].path):
            end += 1
        before, after = (sites[i - 1] if i else None), (sites[end] if end < len(sites) else None)
        if (before is not None and after is not None and before.function in callers
                and (before.path, before.line, before.function) == (after.path, after.line, after.function)):
            found.append(((before.path, before.line), sites[i:end]))
        i = end
    return found


def add_calls(frames: list[UserLine], compile_id: str, at: NoteAt, quotes: Quotes,
               calls: dict[tuple[str, int, str, int], dict[str, Any]]) -> None:
    """The outer frames of one kernel stack (outermost first): each user line among them called, directly or through
    other calls, the function whose line, the innermost, holds the ops; its note names that line."""
    if len(frames) < 2:
        return
    inner = frames[-1]
    for outer in frames[:-1]:
        if outer.file == inner.file and outer.line == inner.line:  # (recursion: the line's own ops)
            continue
        n = at(outer.file, outer.line)
        if n is None:
            continue
        quotes.add(outer.file, outer.line, outer.code)
        add_call(n, (outer.file, outer.line), (inner.file, inner.line, inner.function), compile_id, calls)

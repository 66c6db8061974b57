"""What each kernel call computes (KernelWork), and what to tell of the user's own Triton kernels and of the
generated kernels torch ties to their launches."""

from __future__ import annotations

import os
from typing import Mapping

from ...model.source_files import NO_FILES, SourceFiles
from ..user_kernels import CUSTOM_KERNEL, LaunchSites, definition_text
from ..user_kernels import definition as user_definition
from ..user_kernels import definitions as user_definitions
from ..user_locations import UserLocation
from . import KernelTrace, KernelWork, UserLine, inferred_nodes, is_users_file, reaching_user_line, user_lines_at, \
    without_handle
from .inferred_nodes import kernel_ops, names_op
from .line_mappings import GraphLines, dict_or_empty, names_in


def kernel_work(node_mappings: dict, post: GraphLines, stacks: Mapping[str, list[list[UserLine]]] | None = None,
                noted_only: bool = False) -> list[KernelWork]:
    """What each generated kernel call of a graph computes, from torch's node mappings (code call -> post-grad nodes)
    and the post-grad graph's lines (each node's op); calls in the mappings' order. A generated kernel's name has
    no dot; `extern_kernels.mm`, `torch.ops.mylib.bucketize.default` are calls of existing kernels. stacks: each
    call's logged stacks (kernel_traces' frames), which place a node FX comments with torch's file on the user's line
    that reached it (user_lines_at). noted_only: only the calls with a note (KernelWork.note), without their lines."""
    calls = {**dict_or_empty(node_mappings.get("pyCodeToPost")), **dict_or_empty(node_mappings.get("cppCodeToPost"))}
    elsewhere: dict[str, list[str]] = {}  # post node -> the existing kernels' calls computing it
    for call, nodes in calls.items():
        if "." in without_handle(call):
            for node in names_in(nodes):
                elsewhere.setdefault(node, []).append(call)
    if noted_only and not elsewhere:
        return []  # (a note names a node another call computes)
    ops = {name: op for name, op in zip(post.names, post.ops()) if op is not None}
    # (looked up on its module when called: this module is imported on the first provenance log, maybe while a test
    # patches the function, and a name bound then would keep the test's stand-in)
    sources = {name: src for _, name, _, src in inferred_nodes.post_node_sources(post) if src} if not noted_only else {}

    def lines_of(call: str, node: str) -> list[str]:
        file, line = sources[node]
        placed = user_lines_at((stacks or {}).get(call, ()), file, line) if not is_users_file(file) else []
        return [u.short for u in placed] or [f"{os.path.basename(file)}:{line}"]
    found = []
    for call, nodes in calls.items():
        kernel = without_handle(call)
        if "." in kernel:
            continue
        own = [ops[n] for n in names_in(nodes) if n in ops and n not in elsewhere]
        named = kernel_ops(kernel)
        apart: dict[str, list[str]] = {}
        for n in names_in(nodes):
            if n in elsewhere and n in ops and names_op(named, ops[n].partition(".")[2]):
                apart.setdefault(ops[n], []).extend(c for c in elsewhere[n] if c not in apart.get(ops[n], []))
        if noted_only and not (apart and own):
            continue
        lines = [at for n in names_in(nodes) if n in sources and n not in elsewhere for at in lines_of(call, n)]
        found.append(KernelWork(call, list(dict.fromkeys(own)), apart if own else {}, list(dict.fromkeys(lines))))
    return found


def user_kernel_notes(code: str, node_mappings: dict, post: list[str], kernels: list[KernelTrace],
                      files: SourceFiles = NO_FILES) -> dict[str, str]:
    """Each call of a user's own Triton kernel (user_kernels.definitions) -> what to tell of it: that it is theirs,
    not one Inductor generated, where it is defined and launched, and which lines torch's stack traces tie to it that
    are not its launch (torch 2.11 ties the call to the nodes of the kernel fused before it: relu and mul of line 44,
    for scaled_add_kernel_0 launched at line 34)."""
    if CUSTOM_KERNEL not in code:
        return {}
    notes = {}
    traced = {k.name: k for k in kernels}
    sites = LaunchSites(node_mappings, post)
    for defined in user_definitions(code):
        defined_at, decorator_line = user_definition(defined, files)
        for call in defined.calls:
            launched = sites.of([call])
            note = f"your own Triton kernel {defined.name}"
            if defined_at is not None:
                note += f", defined at {definition_text(defined_at, decorator_line)}"
            if launched:
                note += f", launched at {', '.join(u.short for u in launched)}"
            note += ": Inductor compiled it as you wrote it (it generated none of it)"
            listed = traced.get(call)
            others = [u.short for u in listed.user_lines if (u.file, u.line) not in {x.key for x in launched}] if listed and launched else []
            if others:
                note += (f"; {', '.join(others)} below {'is' if len(others) == 1 else 'are'} torch's mapping of the ops fused "
                         "before it, not where it came from")
            notes[call] = note
    return notes


def placed_apart_from_user_kernels(code: str, node_mappings: dict, post: list[str],
                                   kernels: list[KernelTrace]) -> tuple[list[KernelTrace], dict[str, str]]:
    """The kernels placed by their own stacks where torch ties a call to a user Triton kernel's launch and to the ops
    fused before it, both: torch 2.11 maps Inductor's triton_poi_fused_mul_relu_0:1 and the user's scaled_add_kernel_0:2
    each to triton_kernel_wrapper_mutation, mul_1 and relu, so each lists the stacks of the launch (line 34) and of
    relu and mul (line 44). A generated kernel keeps the stacks other than the launches (what it computes: its name's
    ops); the user's kernel keeps its launches only (user_kernel_notes tells the rest). Where none would remain, a
    kernel keeps its stacks. And each generated kernel so moved -> what to tell of it."""
    if CUSTOM_KERNEL not in code:
        return kernels, {}
    calls = {**dict_or_empty(node_mappings.get("pyCodeToPost")), **dict_or_empty(node_mappings.get("cppCodeToPost"))}
    launches: dict[str, list[UserLocation]] = {}  # user kernel call -> where it was launched
    names: dict[str, str] = {}  # user kernel call -> the @triton.jit function's name
    sites = LaunchSites(node_mappings, post)
    for defined in user_definitions(code):
        for call in defined.calls:
            launches[call], names[call] = sites.of([call]), defined.name
    wrappers = {node: call for call in launches for node in names_in(calls.get(call)) if node.startswith("triton_kernel_wrapper")}
    placed, notes = [], {}
    for k in kernels:
        if k.name in launches:
            keep = {u.key for u in launches[k.name]}
            apart = []
        else:
            apart = list(dict.fromkeys(wrappers[n] for n in names_in(calls.get(k.name)) if n in wrappers))
            keep = set()
        drop = {u.key for call in apart for u in launches[call]}

        def stays(frames: list[UserLine]) -> bool:
            user = reaching_user_line(frames)
            key = (user.file, user.line) if user is not None else None
            return key in keep if keep else key not in drop
        frames = [f for f in k.frames if stays(f)] if keep or drop else k.frames
        if not frames or len(frames) == len(k.frames):
            placed.append(k)
            continue
        placed.append(KernelTrace(k.name, k.kernel, k.debug_handle, k.traces, frames))
        if apart:
            moved = [u.short for u in KernelTrace(k.name, k.kernel, k.debug_handle, k.traces, k.frames).placed_lines
                     if (u.file, u.line) in drop]
            own = ", ".join(u.short for u in placed[-1].placed_lines)
            notes[k.name] = (f"made for the ops of {own}; torch's stack traces also tie it to {', '.join(moved)}, the "
                             f"launch of your own Triton kernel {', '.join(dict.fromkeys(names[c] for c in apart))} "
                             f"({', '.join(apart)}), not where it came from")
    return placed, notes

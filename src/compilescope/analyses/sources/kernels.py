"""The kernels Inductor made of the user's lines, on the lines (add_kernels): each kernel on the user line its stack
traces place it at, with where the generated code calls it, and the calls its stacks pass through (calls.py)."""

from __future__ import annotations

from typing import Any

from ...model.ids import compilation_key
from ...model.trace import Trace
from ..provenance import Provenance
from . import NoteAt
from .calls import add_calls
from .file_text import Quotes


def kernel_stacked(provenance: Provenance) -> set[str]:
    """The compilations whose kernel stacks hold the whole chain of calls: add_kernels says their calls (elsewhere,
    their guards do: add_guarded_calls)."""
    return {compilation_key(cp.compile_id) for cp in provenance.compiles.values()
            if any(kernel.frames for section in cp.sections for kernel in section.kernels)}


def add_kernels(trace: Trace, provenance: Provenance, at: NoteAt, quotes: Quotes,
                calls: dict[tuple[str, int, str, int], dict[str, Any]]) -> None:
    """Each compile's kernels, section by section (a graph's code), on the user lines they were made for: once a line,
    kernel, compile and graph, with the place the code calls it, its code's md5 and provenance's note; and the calls
    each stack passes through (add_calls), each stack walked once a compile."""
    # Each output code's md5 (its envelope's has_payload), by artifact number: compiles alike in kernel names may
    # differ in code (a static recompile inlines other sizes), and only the same code makes one group of them.
    code_md5 = {a.number: a.md5 for entry in trace.compiles.values() for a in entry.artifacts if a.md5}
    # (file, line, kernel, compile id, graph): a line lists a kernel call once (a graph's handles restart at 1 in
    # torch 2.13: its forward and backward may each have an `extern_kernels.mm:2`)
    linked: set[tuple[str, int, str, str, int]] = set()
    anchors: dict[str, str] = {}  # kernel name -> its anchor, one object: a line lists the kernel of every compile
    for cp in provenance.compiles.values():
        cp_key = compilation_key(cp.compile_id)
        # Kernels share stacks (a fused kernel lists each of its nodes', a backward its forward's), and the parsed
        # frames of one stack text are one list for the whole log (kernel_traces): each list is walked once a compile.
        walked: set[int] = set()
        for section_number, section in enumerate(cp.sections):
            # The first line of the generated code that calls each kernel: the kernel's place on the provenance page.
            called_at: dict[str, int] = {}
            for code_line, names in sorted(section.code_kernels.items()):
                for name in names:
                    called_at.setdefault(name, code_line)
            other_graphs = set(section.other_graphs)  # listed, and linked, under the graph whose code calls them
            noted = section.kernel_notes  # (made from the section's noted kernels: once a section)
            aot = section.language == "cpp"
            for kernel in section.kernels:
                # One an AOTInductor package's wrapper names nowhere, and no graph's code calls, is listed alone
                # (LineNotes.kernel_groups): not as the package's, and its stack traces still place it.
                uncalled = aot and kernel.name in other_graphs and kernel.name not in section.called_by
                if kernel.name in other_graphs and not uncalled:
                    continue
                for frames in kernel.frames:
                    if id(frames) not in walked:
                        walked.add(id(frames))
                        add_calls(frames, cp_key, at, quotes, calls)
                for user_line in kernel.placed_lines:  # (a kernel of torch's code: on the user's line to it)
                    quotes.add(user_line.file, user_line.line, user_line.code)
                    n = at(user_line.file, user_line.line)
                    call = (user_line.file, user_line.line, kernel.name, cp_key, section_number)
                    if n is not None and call not in linked:
                        linked.add(call)
                        anchor = anchors.get(kernel.name) or anchors.setdefault(kernel.name, kernel.anchor)
                        n.kernels.append({"compile_id": cp_key, "dir": cp.dir_name, "kernel": kernel.name,
                                          "debug_handle": kernel.debug_handle, "anchor": anchor,
                                          "section": section_number, "code_line": called_at.get(kernel.name),
                                          "graph": section.graph, "traces_artifact": section.kernel_traces_artifact,
                                          "code_md5": code_md5.get(section.code.artifact_number or -1),
                                          **({"note": noted[kernel.name]} if kernel.name in noted else {}),
                                          **({"uncalled": True} if uncalled else {})})

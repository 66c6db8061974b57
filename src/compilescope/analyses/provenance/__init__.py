"""Inductor provenance: from a generated kernel back to graph nodes and the user's source line.

With ``INDUCTOR_PROVENANCE=1`` torch logs, per Inductor graph, the artifact
``inductor_provenance_tracking_node_mappings`` (node and kernel *names*: pre-grad
node -> post-grad nodes, kernel -> post-grad nodes, and back) and
``inductor_provenance_tracking_kernel_stack_traces`` (kernel -> user stack traces).
Here the names become *line numbers* in the three texts a reader looks at: the
graph Inductor received (pre-grad), the post-grad graph, and the generated code
(Python wrapper for JIT, C++ wrapper for AOTInductor).

The line numbers are those tlparse 0.4.3 computes with ``--inductor-provenance``
(``convert_node_mappings_to_line_numbers``), so the two tools can be diffed, with
two corrections where tlparse is wrong (see ``without_handle``
and ``code_lines``). On top of that:

- a compile id that ran Inductor twice (forward and backward of a training step)
  gets one section per graph instead of tlparse's mix of the last artifacts;
- a kernel the node mappings do not cover (torch 2.13 logs only ``{"version": 2.0}``
  for the backward) is mapped to post-grad nodes through the user source line its
  stack trace names, marked as *inferred*;
- a kernel a graph's stack traces list but its code does not call (torch 2.11 keeps
  the kernels of earlier graphs in a backward's list) is set apart as another graph's,
  and named as the graph whose code calls it where the log tells (``called_by``).

This module holds what provenance is made of, the classes its results are saved as (UserLine, KernelTrace, KernelWork,
Panel, GraphRef, ProvenanceSection, CompileProvenance, Provenance), with what their methods use: which frame of a stack
is the user's line (reaching_user_line, is_users_file), the user's lines that reached a line of torch's
(user_lines_at), a kernel's anchor, a call without its debug handle. Its modules:

- analysis.py: the analysis (analyze_provenance): empty for a log without provenance artifacts (most logs), which
  imports none of the modules below; sections.py otherwise;
- sections.py: per compile id, which artifacts fill the three panels, a section per Inductor graph with its label,
  line maps and kernel links, and which graph's code calls another graph's kernel (place_other_graphs);
- line_mappings.py: the texts as their panels number them (text_lines, code_lines, panel_lines), and tlparse's six
  line maps: node and kernel names found as line numbers (node_lines, kernel_lines, line_mappings);
- stack_traces.py: the kernel stack traces artifact read into KernelTraces (kernel_traces), placed on this run's lines
  where a cache hit logged them (on_run_lines);
- inferred_nodes.py: post-grad nodes for the kernels the node mappings leave out, found through the user lines of their
  stacks (infer_kernel_nodes);
- kernel_notes.py: what each kernel call computes (kernel_work), and what to tell of the user's own Triton kernels and
  of the generated kernels torch ties to their launches.
"""

from __future__ import annotations

import functools
import os
from dataclasses import field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ...lazy_regex import lazy_compile
from ...model.ids import CompileId
from ...model.payloads import PayloadRef
from ...model.records import dataclass
from ..user_locations import is_python_library_file, is_toolchain_file

if TYPE_CHECKING:
    from ...model.trace import Compile, Trace

# The artifact of each graph's kernel stack traces (read by stack_traces.py): with the node mappings, what tells a log
# with provenance from one without (analysis.py), here so that telling them apart imports neither reader
KERNEL_STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"

KeptLineMap = Mapping[int, list[int]]  # as the results keep it (packed: analyses/line_map.py)


# --- kernel stack traces -------------------------------------------------------------------------


@dataclass(slots=True)
class UserLine:
    """One frame of a kernel's user stack: where in the user's program the kernel came from."""

    file: str
    line: int
    function: str | None
    code: str | None

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def file_name(self) -> str:
        """The file's name, without its directory: what a line is named by where the full path would not fit."""
        return os.path.basename(self.file)

    @property
    def short(self) -> str:
        """`file.py:23`, as the other pages name a line (UserLocation.short); the full path goes in its title."""
        return f"{self.file_name}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "code": self.code}


# A tensor subclass's __torch_function__ / __torch_dispatch__ runs for each op of its tensors: the op's own line is the
# one that called into it (UnitTensor's `out = super().__torch_function__(...)` is every op's, `x * 2 + 1` this one's).
_SUBCLASS_HOOKS = frozenset({"__torch_function__", "__torch_dispatch__"})


@functools.lru_cache(maxsize=4096)  # (a log names few files, in every frame of every kernel's stacks)
def is_users_file(file: str) -> bool:
    """Not torch's or Triton's, Python's library's, nor code torch generated (`<eval_with_key>.5`)."""
    return not file.startswith("<") and not is_toolchain_file(file) and not is_python_library_file(file)


def reaching_user_line(frames: list[UserLine]) -> UserLine | None:
    """The user's line that reached a stack's innermost frame (outermost first): that frame where it is the user's;
    else the innermost user frame outside a tensor subclass's hook (through a `__torch_function__` subclass every
    node's FX `# File:` comment is torch's _tensor.py:1530, and the hook's line is every op's), else the hook's."""
    if frames and is_users_file(frames[-1].file):
        return frames[-1]
    users = [f for f in frames if is_users_file(f.file)]
    outside = [f for f in users if f.function not in _SUBCLASS_HOOKS]
    return (outside or users or [None])[-1]


def user_lines_at(stacks: Iterable[list[UserLine]], file: str, line: int) -> list[UserLine]:
    """The user's lines that reached torch's file:line (an FX `# File:` comment naming torch's code), by the logged
    stacks whose innermost frame it is; none where no stack ends there."""
    found: dict[tuple[str, int], UserLine] = {}
    for frames in stacks:
        if frames and frames[-1].line == line and frames[-1].file == file:
            user = reaching_user_line(frames)
            if user is not None:
                found.setdefault((user.file, user.line), user)
    return list(found.values())


@dataclass(slots=True)
class KernelTrace:
    """The logged stack traces of one kernel (one call site when it has a debug handle)."""

    name: str  # as logged, e.g. "triton_poi_fused_mul_1:2"
    kernel: str  # without the debug handle
    debug_handle: str | None  # "2": one per call site of the kernel
    traces: list[str]  # the stack traces as logged, readable (\\n turned into newlines)
    frames: list[list[UserLine]]  # each trace's frames, outermost first

    @property
    def anchor(self) -> str:
        return kernel_anchor(self.name)

    @property
    def user_lines(self) -> list[UserLine]:
        """The innermost frame of each stack (the line that produced the kernel), without repeats."""
        seen, result = set(), []
        for frames in self.frames:
            if frames and (frames[-1].file, frames[-1].line) not in seen:
                seen.add((frames[-1].file, frames[-1].line))
                result.append(frames[-1])
        return result

    @property
    def placed_lines(self) -> list[UserLine]:
        """The user's line each stack reached the kernel from (reaching_user_line), without repeats: where a source
        page places the kernel."""
        seen, result = set(), []
        for frames in self.frames:
            user = reaching_user_line(frames)
            if user is not None and (user.file, user.line) not in seen:
                seen.add((user.file, user.line))
                result.append(user)
        return result

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kernel": self.kernel, "debug_handle": self.debug_handle,
                "user_lines": [u.to_json() for u in self.user_lines]}


def kernel_anchor(name: str) -> str:
    return "kernel-" + _NOT_IN_ANCHOR.sub("-", name)


_NOT_IN_ANCHOR = lazy_compile(r"[^A-Za-z0-9_.-]")  # (compiled once: re.sub looks the pattern up per call)


# --- what a kernel computes -----------------------------------------------------------------------


@dataclass(slots=True)
class KernelWork:
    """What one generated kernel call computes: the ops of the post-grad nodes torch maps to it, less the nodes that
    another call of the graph computes (a custom op or extern kernel, called on its own). torch names a fused kernel
    after the nodes it was made for, which can take in such a node whose input it computes: featurize's
    cpp_fused_bucketize_tanh_0 computes tanh, and mylib::bucketize is its own call, torch.ops.mylib.bucketize.default."""

    call: str  # as the node mappings name it: "cpp_fused_bucketize_tanh_0:1"
    ops: list[str]  # the ops it computes, "namespace.op": ["aten.tanh"]
    # The ops its name lists that other calls compute: op ("mylib.bucketize") -> those calls
    elsewhere: dict[str, list[str]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # the user lines of what it computes: "custom_ops.py:82"

    @property
    def kernel(self) -> str:
        """The kernel's name, without the debug handle."""
        return without_handle(self.call)

    @property
    def note(self) -> str | None:
        """What it computes, where its name says more (None: the name says what it computes)."""
        if not self.elsewhere:
            return None
        apart = "; ".join(f"{op.partition('.')[2]}, in its name, is computed by its own call {' and '.join(calls)}"
                          for op, calls in self.elsewhere.items())
        return (f"computes {', '.join(op.partition('.')[2] for op in self.ops)} only; {apart} (torch names a fused "
                "kernel after all the nodes it was made for)")

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call, "kernel": self.kernel, "ops": self.ops, "elsewhere": self.elsewhere,
                "lines": self.lines, "note": self.note}


def without_handle(call: str) -> str:
    """``kernel:N`` -> ``kernel``. The handle is the last ':' part; kernel names may hold colons.

    tlparse cuts Python kernel names at the *first* colon (C++ ones at the last): wrong for a name like
    ``ns::kernel:3`` (pinned by a test)."""
    return call.rpartition(":")[0] if ":" in call else call


# --- per compile id ------------------------------------------------------------------------------


@dataclass(slots=True)
class Panel:
    """One of the three texts: which artifact, and how many leading lines the panel drops."""

    title: str
    artifact_number: int | None = None
    payload: PayloadRef | None = None
    skip: int = 0


@dataclass
class GraphRef:
    """One section of a compile id's provenance: the graph whose code calls a kernel."""

    compile_id: CompileId | None
    dir_name: str
    section: int  # its index in that compile id's sections
    title: str
    graph: str | None  # "forward", "backward", "inference" (ProvenanceSection.graph)
    label: str  # ProvenanceSection.label: `[1/0] backward`


@dataclass
class ProvenanceSection:
    """One Inductor graph: its three panels and the line maps between them."""

    title: str
    language: str  # of the generated code: "python" (JIT) | "cpp" (AOTInductor wrapper)
    pre: Panel
    post: Panel
    code: Panel
    mappings: dict[str, KeptLineMap]  # the six maps, as tlparse computes them
    inferred_code_to_post: KeptLineMap = field(default_factory=dict)
    inferred_post_to_code: KeptLineMap = field(default_factory=dict)
    code_kernels: dict[int, list[str]] = field(default_factory=dict)  # code line -> kernels called there
    kernels: list[KernelTrace] = field(default_factory=list)
    kernel_traces_artifact: int | None = None  # the kernel page's artifact
    graph: str | None = None  # "forward", "backward" or "inference": what the code's AOT ID says it is
    # Kernels the stack traces list with a debug handle that no debug-handle comment of the code names: torch 2.11
    # does not clear its provenance between graphs, so a backward's stack traces (and node mappings) also
    # list the kernels of the graphs compiled before it (its forward, another frame's backward), each with the handle
    # of the code that calls it. In an AOTInductor wrapper's section: also those its code names nowhere.
    other_graphs: list[str] = field(default_factory=list)
    # What the page calls the graph (graph_labels): `[1/0] backward`, not torch's AOT ID (`1_backward`, the title).
    label: str = ""
    number: int | None = None  # the label's number, where the compile id has several graphs of this kind
    # Of other_graphs, those whose graph the log tells (place_other_graphs): kernel name -> the graph calling it.
    called_by: dict[str, GraphRef] = field(default_factory=dict)
    # The kernel calls whose name says more than they compute (a KernelWork with a note), in the graph's order.
    noted_work: list[KernelWork] = field(default_factory=list)
    # The calls of the user's own Triton kernels (user_kernels.py), which Inductor emits as written: call -> the note
    # that says so, with where the kernel is defined and launched (user_kernel_notes)
    user_kernel_notes: dict[str, str] = field(default_factory=dict)
    # The generated kernels' calls whose stacks of a user kernel's launch were set apart (placed_apart_from_user_kernels):
    # call -> the note that says which lines it was made for, and which launch torch tied it to
    apart_notes: dict[str, str] = field(default_factory=dict)

    @property
    def kernel_notes(self) -> dict[str, str]:
        """What a kernel call computes where its name says more (KernelWork.note), that it is the user's own kernel, or
        that torch tied it to a user kernel's launch: call ("cpp_fused_bucketize_tanh_0:1") -> the note."""
        return {**{w.call: note for w in self.noted_work if (note := w.note)}, **self.apart_notes,
                **self.user_kernel_notes}

    @property
    def noted_calls(self) -> list[tuple[KernelWork, int | None]]:
        """Each of noted_work with the first line of the generated code that calls it (None: no line calls it)."""
        return [(work, next((n for n, names in sorted(self.code_kernels.items()) if work.call in names), None))
                for work in self.noted_work]

    @property
    def own_kernels(self) -> list[KernelTrace]:
        """The kernels of this graph: those listed less other_graphs (another graph's code calls them)."""
        if not self.other_graphs:
            return self.kernels
        others = set(self.other_graphs)
        return [k for k in self.kernels if k.name not in others]

    @property
    def code_to_post(self) -> KeptLineMap:
        return self.mappings["pyCodeToPost" if self.language == "python" else "cppCodeToPost"]

    @property
    def post_to_code(self) -> KeptLineMap:
        return self.mappings["postToPyCode" if self.language == "python" else "postToCppCode"]

    def mapped_lines(self) -> dict[str, set[int]]:
        """The lines each panel shows in bold: those the mappings cover."""
        m = self.mappings
        return {
            "pre": set(m["preToPost"]),
            "post": set(m["postToPre"]) | set(self.post_to_code) | set(self.inferred_post_to_code),
            "code": set(self.code_to_post) | set(self.inferred_code_to_post),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "language": self.language,
            "artifacts": {p: getattr(self, p).artifact_number for p in ("pre", "post", "code")},
            **{k: _json_map(v) for k, v in self.mappings.items()},
            "inferredCodeToPost": _json_map(self.inferred_code_to_post),
            "inferredPostToCode": _json_map(self.inferred_post_to_code),
            "codeKernels": {str(k): v for k, v in sorted(self.code_kernels.items())},
            "kernels": [k.to_json() for k in self.kernels],
            "graph": self.graph,
            "label": self.label,
            "otherGraphs": self.other_graphs,
            "calledBy": {name: ref.label for name, ref in self.called_by.items()},
            "kernelNotes": self.kernel_notes,
        }


def _json_map(m: KeptLineMap) -> dict[str, list[int]]:
    return {str(k): v for k, v in sorted(m.items())}


@dataclass
class CompileProvenance:
    """Provenance of one compile id: its line mappings and the sections of its provenance page."""

    compile_id: CompileId | None
    dir_name: str
    line_mappings: dict[str, KeptLineMap]  # what tlparse 0.4.3 -i computes for this compile id
    sections: list[ProvenanceSection]

    def to_json(self) -> dict[str, Any]:
        return {**self.line_mappings_json(), "sections": [s.to_json() for s in self.sections]}

    def line_mappings_json(self) -> dict[str, Any]:
        """to_json without its sections (a report writes those one at a time)."""
        return {k: _json_map(v) for k, v in self.line_mappings.items()}


@dataclass
class Provenance:
    """Provenance of every compile id, and the kernels of each stack traces artifact."""

    compiles: dict[CompileId | None, CompileProvenance] = field(default_factory=dict)
    kernels: dict[int, list[KernelTrace]] = field(default_factory=dict)  # stack traces artifact number -> kernels

    def unmapped(self, trace: Trace) -> list[Compile]:
        """The compiles of the trace with nothing to map (no node mappings, graphs or code to map lines of), in
        compile_directory.json's order: tlparse -i writes an empty provenance page for each, one for each entry (two
        compiles with one directory, as compile_directory.json has them: one)."""
        mapped = {found.dir_name for found in self.compiles.values()}
        by_dir = {entry.dir_name: entry for entry in trace.sorted_compiles() if entry.dir_name not in mapped}
        return list(by_dir.values())

    def paged_dirs(self, trace: Trace, every_compile: bool) -> set[str]:
        """The compile directories given a provenance page: those with something to map, and with every_compile (-i,
        as tlparse) every other too (an empty page). The pages that link provenance link these, and only these."""
        mapped = {found.dir_name for found in self.compiles.values()}
        return (mapped | {entry.dir_name for entry in self.unmapped(trace)}) if every_compile else mapped

    def to_json(self) -> dict[str, Any]:
        return {c.dir_name: c.to_json() for c in self.compiles.values()}

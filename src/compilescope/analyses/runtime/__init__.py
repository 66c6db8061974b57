"""Where the run time goes: a torch.profiler trace joined to kernels, graphs and user lines.

The total, and so every share, is defined on one timeline per profile:

- a profile with GPU activity: the GPU timeline. Per device, from the start of its
  first kernel (or copy) to the end of its last one: the kernels' own time plus the
  time no kernel ran ("GPU idle": launch overhead, Python, data loading, sync).
  Kernels overlapping on several streams each count their own time, so the total is
  then the kernels' time plus the idle time, which is the wall span when nothing
  overlaps.
- a CPU-only profile: the wall span of each thread that recorded an operator (first
  event start to last event end), cut into the time of the innermost event running
  at each instant, plus the time in no event at all ("no profiler event").

Each piece of time goes to one row: an Inductor kernel by name (``triton_*``,
``cpp_fused_*``), an extern kernel (a cuBLAS GEMM, ``aten::mm``, SDPA) through the
ATen op that launched it, the graph's own wrapper code, an eager op outside any
compiled graph, torch.compile's own work (compiling), framework overhead (Dynamo guards,
AOT wrappers, autograd), time outside torch (record_function ranges, Python, CUDA runtime
calls) or idle/untraced time. The rows add up to the total by construction. A kernel launched on the GPU is
joined to its CPU launch by the CUDA correlation id, and from there to the ATen op
and the ``## Call CompiledFxGraph <key> ##`` range around it (time nesting on the
launching thread); the graph's FX-graph-cache key names its compile id in the log.
Kernel -> user lines comes from Inductor provenance; a kernel fused from several
lines has its time divided evenly among them in the by-line table. An extern op's n-th call in one call of a
graph is the n-th call of it in the graph's output code (provenance numbers them in order), and its time goes to
that call's lines.

The package, by what each module holds:

- __init__.py: the saved classes (KernelRow, GraphRow, ..., ProfileRuntime, Comparison, Runtime), the row kinds and
  labels, and the names a profile's events are matched by. A saved result names its class by its module
  (model/codec.type_name): a saved class stays here, and no class a result holds may move out.
- log_index.py: what the log says (LogIndex: graph keys, kernels, user lines, an extern op's calls in a graph's code).
- timeline.py: the profile's nesting on each thread (each event's context) and the rows of the two timelines built
  from it (Rows, cpu_rows, gpu_rows): the analysis's working state, never saved.
- intervals.py: time covered by intervals (union, merged, Covered, less).
- analysis.py: analyze_runtime, the entry, and profile_runtime: one profile joined to the log (rows, graphs, lines,
  shares, whether it is this log's run).
- slow_calls.py: the calls a steady state does not pay (a first call's warm-up, a stall), on each timeline.
- gpu_idle.py: the GPU's idle time by what the CPU ran meanwhile, and each part's idle time.
- comparison.py: eager against compiled, op by op; one profile split into its eager and compiled runs.
- findings.py: the Insights lines (a profile's, eager against compiled, float32 matmuls without TF32).
- diff_facts.py: what `diff` compares of a run's profile.
"""

from __future__ import annotations

import os
import re
from dataclasses import field
from typing import Any


from ...model.ids import CompileId
from ..kernel_names import library_kernel
from ..provenance import UserLine
from ...wording import and_list, count, format_us
from ...model.records import dataclass

GRAPH_RANGE = re.compile(r"^## Call CompiledFxGraph (?P<key>\S+) ##$")
COMPILED_REGION = re.compile(r"^Torch-Compiled Region: (?P<cid>\S+)$")
INDUCTOR_KERNEL = re.compile(r"^(?:triton_|cpp_fused_|cpp_kernel_|cpp_CppKernelProxy)")
EPS = 1e-6

# Row kinds, in the order the report explains them.
INDUCTOR, EXTERN, WRAPPER, EAGER = "inductor", "extern", "wrapper", "eager"
# An ATen op that ran inside a compiled region with no graph range in it: a backend other than Inductor (eager,
# aot_eager, the user's) runs the region's graph as such ops, so they are compiled code, not eager code around it.
REGION_OP = "region_op"
COMPILE, FRAMEWORK, OTHER, IDLE = "compile", "framework", "other", "idle"
KIND_LABELS = {
    INDUCTOR: "Inductor kernel",
    EXTERN: "extern kernel (via ATen op)",
    WRAPPER: "graph wrapper (around the output code's kernels: Python, input copies)",
    REGION_OP: "ATen op in a compiled region (backend without Inductor)",
    EAGER: "eager op (no compiled graph)",
    COMPILE: "compiling (torch.compile's own work)",
    FRAMEWORK: "framework (Dynamo guards, AOT wrappers, autograd)",
    OTHER: "outside torch (record_function ranges, Python, CUDA runtime calls)",
    IDLE: "idle / untraced",
}
# A row's kind in a few words, where the row names it (the kernel tables of the report and the terminal, --json's
# kind_label); KIND_LABELS says more, once per kind, in by kind.
KIND_NAMES = {
    INDUCTOR: "Inductor kernel",
    EXTERN: "extern kernel",
    WRAPPER: "graph wrapper",
    REGION_OP: "ATen op in a compiled region",
    EAGER: "eager op",
    COMPILE: "compiling",
    FRAMEWORK: "framework",
    OTHER: "outside torch",
    IDLE: "idle",
}
IN_GRAPH = (INDUCTOR, EXTERN, WRAPPER)
GPU_IDLE = "GPU idle (no kernel running)"
GRAPH_LAUNCH = "cudaGraphLaunch"  # the CUDA runtime call that replays a CUDA graph
UNTRACED = "no profiler event (Python, data loading)"
COMPILING = "compiling (Dynamo, AOTAutograd, Inductor)"


@dataclass
class KernelRow:
    name: str
    kind: str
    graph: str | None  # the CompiledFxGraph key
    compile_id: CompileId | None
    op: str | None = None  # the ATen op that launched it (extern and eager GPU kernels)
    calls: int = 0
    total_us: float = 0.0
    share: float = 0.0
    run_share: float | None = None  # of the time not spent compiling (None: the profile has none, or this row is it)
    user_lines: list[UserLine] = field(default_factory=list)
    line_us: list[float] = field(default_factory=list)  # the time of it on each of user_lines (Rows.split_by_line)
    code_artifact: int | None = None  # the output code artifact that defines it, and the line
    code_line: int | None = None
    stacks_artifact: int | None = None  # the kernel stack traces artifact, and the kernel's name there
    stacks_name: str | None = None
    region: str | None = None  # in a graph with no graph range: its "Torch-Compiled Region: <region>" keeps it apart
    replayed: bool = False  # run by a CUDA graph replay (cudaGraphLaunch), not launched on its own
    # An eager op on a CPU timeline: the ops its calls called (aten::linear: aten::t, aten::addmm), in the order met.
    inner_ops: list[str] = field(default_factory=list)

    @property
    def library(self) -> str | None:
        """What a library's kernel is, in words ("cuBLAS float32 GEMM"), from its name, which stays the row's name;
        None for Inductor's kernels, the rows that are no kernel, and a name no library's known (kernel_names.py)."""
        return library_kernel(self.name) if self.kind in (EXTERN, EAGER, REGION_OP) else None

    @property
    def kind_label(self) -> str:
        """Its kind in words ("ATen op in a compiled region"), as its row says it (KIND_NAMES)."""
        return KIND_NAMES[self.kind]

    @property
    def reported_share(self) -> float:
        """Its share of the run when the profile covers a compile, else of the total: the one a reader is shown."""
        return self.share if self.run_share is None else self.run_share

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "library": self.library, "kind": self.kind, "kind_label": self.kind_label, "op": self.op, "graph": self.graph,
                "region": self.region, "replayed": self.replayed, "inner_ops": self.inner_ops,
                "compile_id": str(self.compile_id) if self.compile_id else None, "calls": self.calls,
                "total_us": round(self.total_us, 3), "share": round(self.share, 6), "run_share": _rounded(self.run_share),
                "user_lines": [{"file": u.file, "line": u.line, "us": _rounded(us, 3)}
                               for u, us in zip(self.user_lines, self._line_us())]}

    def lines_by_file(self, first: int | None = None) -> list[tuple[str, list[int]]]:
        """Its first `first` user lines (all: None) by the name of their file, each file once, in the order met:
        [("model.py", [28, 31, 32])]."""
        by_file: dict[str, list[int]] = {}
        for u in self.user_lines[:first]:
            by_file.setdefault(u.file_name, []).append(u.line)
        return list(by_file.items())

    def _line_us(self) -> list[float | None]:
        """line_us where the rows were split by line (Rows.split_by_line), else None for each user line."""
        return list(self.line_us) if len(self.line_us) == len(self.user_lines) else [None] * len(self.user_lines)


def _rounded(share: float | None, digits: int = 6) -> float | None:
    return None if share is None else round(share, digits)


@dataclass
class GraphRow:
    key: str | None  # the CompiledFxGraph key; None with no region either: time in no compiled graph
    compile_id: CompileId | None
    calls: int = 0
    total_us: float = 0.0
    share: float = 0.0
    kernels_us: float = 0.0  # of which Inductor and extern kernels
    run_share: float | None = None  # of the time not spent compiling (as KernelRow's)
    region: str | None = None  # a graph known only by its compiled region (a profile without graph ranges)
    # Outside any graph, the idle time (GPU_IDLE, UNTRACED): a row of its own, as idle is no graph and no eager op
    idle: bool = False
    idle_label: str | None = None  # its label (outside_label): "GPU idle", "no profiler event"

    @property
    def in_graph(self) -> bool:
        return self.key is not None or self.region is not None

    @property
    def outside_label(self) -> str | None:
        """What a row outside compiled graphs is: "GPU idle" (no kernel running) or, on a CPU timeline, "no profiler
        event"; "no compiled graph" for the rest (eager ops, graph breaks' Python, compiling). None: a graph."""
        if self.in_graph:
            return None
        return self.idle_label or "no compiled graph"

    @property
    def reported_share(self) -> float:
        """As KernelRow.reported_share."""
        return self.share if self.run_share is None else self.run_share

    def to_json(self) -> dict[str, Any]:
        return {"graph": self.key, "region": self.region, "compile_id": str(self.compile_id) if self.compile_id else None,
                "idle": self.idle, "label": self.outside_label, "calls": self.calls,
                "total_us": round(self.total_us, 3), "share": round(self.share, 6), "kernels_us": round(self.kernels_us, 3),
                "run_share": _rounded(self.run_share)}


@dataclass
class LineRow:
    file: str
    line: int
    function: str | None
    code: str | None
    total_us: float = 0.0
    share: float = 0.0
    kernels: list[str] = field(default_factory=list)

    @property
    def short(self) -> str:
        """`file.py:23`, as the other pages name a line (UserLine.short); the full path goes in its title."""
        return f"{os.path.basename(self.file)}:{self.line}"
    run_share: float | None = None  # of the time not spent compiling (as KernelRow's)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "total_us": round(self.total_us, 3),
                "share": round(self.share, 6), "run_share": _rounded(self.run_share), "kernels": self.kernels}


@dataclass
class PartIdle:
    """A part of a profile (split_runs), "eager" or "compiled": how long its GPU waited between its kernels, and how
    much of its time ran in compiled graphs."""

    part: str
    idle_us: float
    span_us: float  # from its first kernel to its last, per GPU, summed
    graph_launches: int = 0
    # Its time as the whole profile's total counts it (TOTAL_DEFINITION: on a GPU its kernels and the idle between
    # them; on a CPU its ranges), compiling left out; and of that, the time in compiled graphs.
    run_us: float = 0.0
    graphs_us: float = 0.0

    @property
    def share(self) -> float:
        return self.idle_us / self.span_us if self.span_us else 0.0

    @property
    def graphs_share(self) -> float:
        return self.graphs_us / self.run_us if self.run_us else 0.0

    def share_of(self, us: float) -> float:
        """`us` of this part's time (run_us): a row of the part's own, over the part and not the whole profile."""
        return us / self.run_us if self.run_us else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part, "idle_us": round(self.idle_us, 3), "span_us": round(self.span_us, 3),
                "share": round(self.share, 6), "graph_launches": self.graph_launches, "run_us": round(self.run_us, 3),
                "graphs_us": round(self.graphs_us, 3), "graphs_share": round(self.graphs_share, 6)}


@dataclass
class IdleCause:
    """What the CPU was doing while the GPU idled (outside compiling): in a compiled graph's call (launching its
    kernels, or a first call's warm-up), in Dynamo's compiled region around it (guards, the wrapper), in the backward's
    wrapper, in an eager op (by its outermost range's name), or in no op the profiler recorded (Python, waiting)."""
    kind: str  # IDLE_IN_GRAPH, IDLE_IN_REGION, IDLE_IN_OP, IDLE_IN_NO_OP
    what: str
    us: float
    longest_us: float = 0.0  # an eager op: the most idle one of its calls cost (a first call's stall is one call's)

    @property
    def one_call_us(self) -> float | None:
        """The time of it one call cost, where that was most of it (a first call's stall); None otherwise."""
        return self.longest_us if self.longest_us >= 0.5 * self.us and self.longest_us < self.us - 1 else None

    @property
    def said(self) -> str:
        """"AccumulateGrad 12 ms (11 ms of it in one call)": its time, and one call's where that was most of it."""
        one = f" ({format_us(self.one_call_us)} of it in one call)" if self.one_call_us is not None else ""
        return f"{self.what} {format_us(self.us)}{one}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "what": self.what, "us": round(self.us, 3), "longest_us": round(self.longest_us, 3)}


IDLE_IN_GRAPH, IDLE_IN_REGION, IDLE_IN_OP, IDLE_IN_NO_OP = "graph call", "compiled region", "eager op", "no op"
# An outermost range's name, as a reader knows it: the autograd engine's ranges name the node it ran
DYNAMO_LOOKUP = "TorchDynamo Cache Lookup"  # Dynamo's guards, before a compiled region runs
AUTOGRAD_NODE = re.compile(r"^autograd::engine::evaluate_function: (?:torch::autograd::)?")


@dataclass
class ProfileCompile:
    """One compile the profile covers: torch.compile's ranges named it (`dynamo_data: compile_id=0/2`)."""
    compile_id: CompileId | None  # None: its ranges named none (an older torch)
    us: float  # its outermost compile range's wall time
    recompile: bool  # not its frame's first compile: a warm-up step does not take it out of the profile

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": str(self.compile_id) if self.compile_id else None, "us": round(self.us, 3),
                "recompile": self.recompile}


GRAPH_CALL = "graph call"  # a SlowCalls of a GPU timeline: a compiled graph's whole call (_slow_graph_calls)


@dataclass
class SlowCall:
    """One call of a kernel far longer than its median call (SlowCalls)."""
    compile_id: CompileId | None  # the graph it ran in
    nth: int  # which of the kernel's calls it was, in the order they ran (1: the first)
    us: float
    first_in_graph: bool  # its graph's first call of this kernel in the profile
    after_compile: bool  # and that graph was compiled in this profile: its first call ever, right after compiling
    # On a GPU timeline, the part of its time another slow call counts already: two threads' first calls at once keep
    # the GPU waiting once, and a steady state would not spend that time once, not twice (_count_once).
    overlap_us: float = 0.0
    # An eager op's or compiled region's call on a GPU timeline (_slow_op_calls), in the user's terms: the compiled
    # graph call it ran around or after ("after backward graph call 2 of 5 of [0/0] (forward)"), and why it is a
    # warm-up where the profile tells: "first on its thread" (a first call: its kernels, cuBLAS's handle load), or
    # an op inside it that none of its name's earlier calls ran ("aten::add_": AccumulateGrad's 13th call, the first
    # to add into .grad; the 12 before assigned it).
    during: str | None = None
    first_on_thread: bool = False
    first_op: str | None = None
    first_op_in_profile: bool = False  # and no call before it in the profile ran that op at all

    def said_of(self, calls: int) -> str:
        """`23.39 ms in [0/1] (call 2 of 5, [0/1]'s first in the profile)`; an eager op's: `11 ms (call 13 of 60,
        after backward graph call 2 of 5 of [0/0] (forward): the first of its calls to run aten::add_, ...)`."""
        where = f" in {self.compile_id}" if self.compile_id else ""
        first = (f", the first after {self.compile_id or 'its graph'} compiled in this profile" if self.after_compile
                 else f", {self.compile_id or 'its graph'}'s first in the profile" if self.first_in_graph else "")
        during = f", {self.during}" if self.during else ""
        if self.nth == 1 and self.first_on_thread:
            why = ": its first call, its kernels loading while the GPU waited"
        elif self.first_on_thread:
            why = ": its first call on its thread (another thread called it before), loading while the GPU waited"
        elif self.first_op:
            why = (f": the first of its calls to run {self.first_op}" + (", the profile's first" if self.first_op_in_profile else "")
                   + ", whose kernels loaded while the GPU waited")
        else:
            why = ""
        counted = (f"; {format_us(self.overlap_us)} of it at the same time as another thread's slow call, counted once"
                   if self.overlap_us >= 1 else "")
        return f"{format_us(self.us)}{where} (call {self.nth} of {calls}{first}{during}{why}{counted})"

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": str(self.compile_id) if self.compile_id else None, "nth": self.nth,
                "us": round(self.us, 3), "first_in_graph": self.first_in_graph, "after_compile": self.after_compile,
                "overlap_us": round(self.overlap_us, 3), "during": self.during, "first_on_thread": self.first_on_thread,
                "first_op": self.first_op, "first_op_in_profile": self.first_op_in_profile}


@dataclass
class SlowCalls:
    """A compiled graph's kernel (Inductor's, or an extern op's call) some of whose calls took far longer than its
    median call (a first call's warm-up, a page fault, a thread pool waking up, another process on the core): their
    time says nothing of the kernel's steady state, yet counts in "where the time goes". A kernel is its name at its
    user lines, so a recompile's (the same code for another size) counts with the first compile's; an eager op is
    not judged on a CPU, as one name stands for calls of any size and the profile does not tell which line called it
    (on a GPU its call's warm-up is GPU idle, judged by its outermost range: _slow_op_calls)."""
    name: str
    kind: str
    user_lines: list[UserLine]
    calls: int  # outside compiling, in every graph that ran it
    median_us: float
    slow: list[SlowCall]  # in the order they ran

    @property
    def over_median_us(self) -> float:
        """What the slow calls took beyond the median call each: the time a steady state would not have spent, the
        time another slow call counts already left out (SlowCall.overlap_us)."""
        return sum(max(0.0, s.us - s.overlap_us - self.median_us) for s in self.slow)

    @property
    def short(self) -> str:
        """`AccumulateGrad 11 ms (call 13 of 60, after ...: the first of its calls to run aten::add_, ...)`: its name,
        what its slow calls cost over the median, and which calls they were (one: said as in said)."""
        said = f"{self.name} {format_us(self.over_median_us)}"
        if len(self.slow) != 1:
            return f"{said} (calls {and_list([str(s.nth) for s in self.slow])} of {self.calls})"
        full = self.slow[0].said_of(self.calls)
        return f"{said} {full[full.index('('):]}"

    @property
    def said(self) -> str:
        """`aten::addmm (model.py:23): 2 of its 5 calls, 23.39 ms in [0/1] (...) and 15.85 ms in [0/2] (...), against
        a median of 89 µs`."""
        lines = ", ".join(u.short for u in self.user_lines[:2])
        calls = " and ".join(s.said_of(self.calls) for s in self.slow[:3]) + (", ..." if len(self.slow) > 3 else "")
        return (f"{self.name}{f' ({lines})' if lines else ''}: {len(self.slow)} of its {self.calls} calls, {calls}, "
                f"against a median of {format_us(self.median_us)}")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "user_lines": [{"file": u.file, "line": u.line} for u in self.user_lines],
                "calls": self.calls, "median_us": round(self.median_us, 3),
                "over_median_us": round(self.over_median_us, 3), "slow": [s.to_json() for s in self.slow]}


@dataclass
class ProfileRuntime:
    source: str
    timeline: str  # "gpu" | "cpu"
    total_us: float
    devices: int  # GPUs or CPU threads the total sums over
    kernels: list[KernelRow]  # every row, largest first; they add up to total_us
    graphs: list[GraphRow]
    lines: list[LineRow]
    notes: list[str]  # what was skipped, and whether the profile matches the log
    matched: bool  # enough of the profile's Inductor kernels or compiled graphs are in the log (_not_joined)
    graph_launches: int = 0  # CUDA graph replays (cudaGraphLaunch): reduce-overhead is on
    wall_us: float | None = None  # a run cut out of a profile: its ranges' wall time (Profile.wall_us)
    other_run: bool = False  # compiled graphs ran, but not this log's: shown as one line, its rows in --json only
    stopped: str | None = None  # reading stopped before the end of the file (Profile.stopped): the numbers are a part's
    # Not matched: why its time is not joined to this log (another run's, or no compiled graph ran). Also notes[0].
    not_joined: str | None = None
    # No row has user lines: why (no compiled graph ran, torch logged empty stacks, or provenance was not logged).
    no_lines: str | None = None
    # A profile holding an eager and a compiled run (split_runs): each part's GPU idle time, its kernels' span (first
    # start to last end, per GPU) and its CUDA graph replays. The GPU idle row is the whole profile's, gap between the
    # parts included; what keeps a GPU waiting differs by part (launches in eager, the CPU's own time under replays).
    idle_by_part: list[PartIdle] = field(default_factory=list)
    compiles: list[ProfileCompile] = field(default_factory=list)  # the compiles it covers, in the order they ran
    backward: bool = False  # the log compiled a backward graph: a warm-up step is a forward and a backward
    # most time over the median first (GPU: graph calls, and eager ops and compiled regions by their outermost range)
    slow_calls: list[SlowCalls] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)  # each GPU's compute capability (Profile.capabilities)
    # A GPU timeline's idle time (compiling left out) by what the CPU was doing meanwhile, most first: a GPU idle row
    # alone hid that capture_profile's steady steps waited 12 ms on AccumulateGrad (its first accumulation) and
    # 7.7 ms inside graph calls launching their microsecond kernels.
    idle_by_cpu: list[IdleCause] = field(default_factory=list)

    @property
    def recompiles(self) -> int:
        """How many of its compiles are recompiles (ProfileCompile.recompile)."""
        return sum(1 for c in self.compiles if c.recompile)

    @property
    def slow_us(self) -> float:
        """The time slow calls took beyond their kernels' median calls (SlowCalls.over_median_us)."""
        return sum(s.over_median_us for s in self.slow_calls)

    @property
    def slow_said(self) -> str:
        """The slow calls in words, with what they cost the run; '' when there are none."""
        if not self.slow_calls:
            return ""
        n = sum(len(s.slow) for s in self.slow_calls)
        kernels = "; ".join(s.said for s in self.slow_calls[:3])
        if rest := self.slow_calls[3:]:  # named with what each cost over its median: the steady state leaves it out
            kernels += "; also " + ", ".join(s.short for s in rest[:4]) + \
                (", ..." if len(rest) > 4 else "")
        share = self.slow_us / self.run_us if self.run_us else 0.0
        run = "the run" if self.run_share_known else "the profile"
        kinds = {s.kind for s in self.slow_calls}
        what = "graph" if kinds == {GRAPH_CALL} else "kernel" if kinds <= {INDUCTOR, EXTERN} else None
        whose = (("its median call" if n == 1 else "their median calls") if what is None else f"its {what}'s median call" if n == 1
                 else f"their {what}'s median call" if len(self.slow_calls) == 1 else f"their {what}s' median calls")
        why = ("a first call's warm-up, a page fault, a thread pool waking up" if what == "kernel"
               else "a first call's warm-up: loading its kernels and libraries while the GPU waits")
        # Which calls the steady state keeps at their median: on a GPU, every graph's and eager op's (_slow)
        steady = "" if what == "kernel" else \
            " (every graph call, eager op and compiled region at its median call: each first call's warm-up left out)"
        return (f"{count(n, 'call')} far longer than {whose} ({why}): {kernels}; {format_us(self.slow_us)} over the "
                f"median, {share:.0%} of {run}: in a steady state it would take "
                f"{format_us(self.run_us - self.slow_us)}, not {format_us(self.run_us)}{steady}")

    @property
    def idle_outside_graph_calls(self) -> float:
        """The share of the GPU's idle (idle_by_cpu) while the CPU was in no compiled graph's call; 0 where unknown."""
        total = sum(c.us for c in self.idle_by_cpu)
        return sum(c.us for c in self.idle_by_cpu if c.kind != IDLE_IN_GRAPH) / total if total else 0.0

    @property
    def idle_rows(self) -> list[tuple[IdleCause, float]]:
        """idle_by_cpu's rows with each one's share of the idle they split: what the runtime page and table show."""
        total = sum(c.us for c in self.idle_by_cpu)
        return [(c, c.us / total if total else 0.0) for c in self.idle_by_cpu]

    @property
    def idle_one_call_shown(self) -> bool:
        """Whether the idle table has its "of it in one call" column: some row cost mostly one call (a first call's
        stall); where none did, the column would be empty on every row."""
        return any(c.one_call_us is not None for c in self.idle_by_cpu)

    @property
    def idle_said(self) -> str:
        """"while it idled the CPU was in AccumulateGrad 12 ms, compiled graph calls 7.7 ms, ...": the GPU's idle by
        what the CPU ran meanwhile (idle_by_cpu), the four largest; '' where it was not worked out."""
        if not self.idle_by_cpu:
            return ""
        said = ", ".join(c.said for c in self.idle_by_cpu[:4])
        rest = sum(c.us for c in self.idle_by_cpu[4:])
        return f"while it idled the CPU was in {said}" + (f", other ops {format_us(rest)}" if rest else "")

    @property
    def part_read(self) -> str:
        """What a headline adds when the profile was read only in part."""
        return " in the part read" if self.stopped else ""

    @property
    def compiled(self) -> bool:
        return any(r.kind in IN_GRAPH for r in self.kernels)

    @property
    def compiling_us(self) -> float:
        """torch.compile's own work in the profile (a first call's compile and autotuning), and the GPU's wait."""
        return sum(r.total_us for r in self.kernels if r.name == COMPILING)

    @property
    def run_us(self) -> float:
        return self.total_us - self.compiling_us

    @property
    def parts_said(self) -> str:
        """A profile holding an eager and a compiled run: what each part took, and that the rows' shares are of the
        whole (the finding's shares are of a part: they would not match the rows' otherwise); '' for other profiles."""
        compiled = next((i for i in self.idle_by_part if i.part == "compiled"), None)
        if compiled is None:
            return ""
        parts = ", ".join(f"the {i.part} part {format_us(i.run_us)}" + (f" ({i.graphs_share:.0%} of it in compiled graphs)"
                                                                       if i is compiled else "")
                          for i in self.idle_by_part)
        outside = self.run_us - sum(i.run_us for i in self.idle_by_part)
        rest = f", {format_us(outside)} outside both" if outside >= 1 else ""
        return f"It holds an eager and a compiled run: {parts}{rest}. The shares here are of the whole profile, both parts."

    @property
    def run_share_known(self) -> bool:
        """Rows have a share of the run (the profile covers a compile)."""
        return any(k.run_share is not None for k in self.kernels)

    def share_after(self, shown: int) -> float:
        """The share of the rows past the first `shown` (the largest): what a table of `shown` rows leaves out."""
        return sum(k.share for k in self.kernels[shown:])

    @property
    def by_kind(self) -> list[tuple[str, str, float, float]]:
        """(kind, label, time, share) of each kind of row present."""
        out = []
        for kind, label in KIND_LABELS.items():
            us = sum(r.total_us for r in self.kernels if r.kind == kind)
            if us:
                out.append((kind, label, us, us / self.total_us if self.total_us else 0.0))
        return out

    @property
    def kind_run_shares(self) -> dict[str, float]:
        """Each kind's part of the run (the time not spent compiling), when the profile covers a compile: the chart's
        shares are of the total, where compiling may be nearly all; compiling itself has none."""
        if not self.run_share_known or self.run_us <= 0:
            return {}
        return {kind: us / self.run_us for kind, _, us, _ in self.by_kind if kind != COMPILE}

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "timeline": self.timeline, "total_us": round(self.total_us, 3),
                "total_definition": TOTAL_DEFINITION[self.timeline], "devices": self.devices, "matched": self.matched,
                "other_run": self.other_run, "not_joined": self.not_joined, "no_lines": self.no_lines,
                "stopped": self.stopped,
                "compiling_us": round(self.compiling_us, 3), "run_us": round(self.run_us, 3),
                "graph_launches": self.graph_launches, "idle_by_part": [i.to_json() for i in self.idle_by_part],
                "compiles": [c.to_json() for c in self.compiles], "idle_by_cpu": [c.to_json() for c in self.idle_by_cpu],
                "slow_calls": [c.to_json() for c in self.slow_calls], "slow_us": round(self.slow_us, 3),
                "notes": self.notes, "kernels": [k.to_json() for k in self.kernels],
                "graphs": [g.to_json() for g in self.graphs], "user_lines": [u.to_json() for u in self.lines]}


TOTAL_DEFINITION = {
    "gpu": "per GPU, kernel time plus idle time from its first to its last kernel; summed over GPUs",
    "cpu": "per CPU thread that recorded an operator, the wall span from its first to its last event; summed over threads",
}


# What a side of the comparison counts: two profiles of their own each have idle time of their own (the GPU waiting
# between steps, the time before the first op), which says nothing about the code compiled; a run cut out of one
# profile has none. So both count only the time something of the run was running.
BUSY_DEFINITION = {
    "gpu": "kernel time (GPU idle and compiling left out)",
    "cpu": "time in profiler events (untraced time and compiling left out)",
}


@dataclass
class OpComparison:
    name: str
    eager_calls: int
    eager_us: float
    compiled_calls: int
    compiled_us: float
    # The eager op whose calls ran it, where eager ran it inside another (aten::linear, for the compiled graph's
    # aten::addmm): the eager side is that op's.
    eager_op: str | None = None
    # What a library's kernel is, as its KernelRow says (KernelRow.library): the comparison names it so, as the
    # profile's headline does; name stays the kernel's own (the page's title, --json).
    library: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "library": self.library, "eager_op": self.eager_op, "eager_calls": self.eager_calls,
                "eager_us": round(self.eager_us, 3), "compiled_calls": self.compiled_calls,
                "compiled_us": round(self.compiled_us, 3)}


@dataclass
class Comparison:
    eager: str  # source of each side
    compiled: str
    eager_us: float  # each side's busy time (BUSY_DEFINITION): idle and compiling left out
    compiled_us: float
    ops: list[OpComparison]
    graphs: list[tuple[str, float, float | None]]  # compile id, compiled time, speedup (when it can be told)
    # One profile holding both runs: the wall time of each run's ranges (on a GPU, kernel time leaves out the
    # launches and waits that CUDA graphs save).
    eager_wall_us: float | None = None
    compiled_wall_us: float | None = None
    timeline: str = "gpu"  # the eager side's: what busy means (BUSY_DEFINITION)
    # The compiles in the compiled side's profile (left out of compiled_us): as profiled, they may make it the slower.
    compiled_compiles: list[ProfileCompile] = field(default_factory=list)
    # What the compiled side's slow calls took over their median calls, of compiled_us (a CPU timeline's: a GPU's slow
    # calls are graph calls whose cost is GPU idle, which kernel time leaves out already); and how many calls.
    compiled_slow_us: float = 0.0
    compiled_slow_calls: int = 0

    @property
    def compiling_us(self) -> float:
        return sum(c.us for c in self.compiled_compiles)

    @property
    def recompiles(self) -> int:
        return sum(1 for c in self.compiled_compiles if c.recompile)

    @property
    def speedup(self) -> float | None:
        return self.eager_us / self.compiled_us if self.compiled_us else None

    @property
    def steady_speedup(self) -> float | None:
        """The speedup with the compiled side's slow calls at their median (a first call's warm-up is no steady state);
        None where it has none in its busy time."""
        steady = self.compiled_us - self.compiled_slow_us
        return self.eager_us / steady if self.compiled_slow_us and steady > 0 else None

    @property
    def wall_speedup(self) -> float | None:
        return self.eager_wall_us / self.compiled_wall_us if self.eager_wall_us and self.compiled_wall_us else None

    @property
    def busy_definition(self) -> str:
        return BUSY_DEFINITION[self.timeline]

    def to_json(self) -> dict[str, Any]:
        return {"eager": self.eager, "compiled": self.compiled, "eager_us": round(self.eager_us, 3),
                "compiled_us": round(self.compiled_us, 3), "busy_definition": self.busy_definition,
                "speedup": self.speedup, "compiled_slow_us": round(self.compiled_slow_us, 3),
                "steady_speedup": self.steady_speedup,
                "eager_wall_us": _rounded(self.eager_wall_us), "compiled_wall_us": _rounded(self.compiled_wall_us),
                "wall_speedup": self.wall_speedup, "compiled_compiles": [c.to_json() for c in self.compiled_compiles],
                "ops": [o.to_json() for o in self.ops],
                "graphs": [{"compile_id": c, "compiled_us": round(us, 3), "speedup": s} for c, us, s in self.graphs]}


@dataclass
class Runtime:
    profiles: list[ProfileRuntime] = field(default_factory=list)
    comparison: Comparison | None = None

    def __bool__(self) -> bool:
        return bool(self.profiles)

    def to_json(self) -> dict[str, Any]:
        return {"profiles": [p.to_json() for p in self.profiles],
                "comparison": self.comparison.to_json() if self.comparison else None}

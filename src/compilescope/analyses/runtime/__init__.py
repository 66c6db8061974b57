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
  labels; what the log says (LogIndex: graph keys, kernels, user lines); and the profile's nesting on each thread
  into rows of the two timelines (cpu_rows, gpu_rows), with the interval helpers (union, merged, Covered, less).
  Every class stays here: a saved result names its class by this module (model/codec.type_name), and the nesting
  makes _Context, whose name is part of the saved form's fingerprint.
- join.py: analyze_runtime, the entry, and profile_runtime: one profile joined to the log (rows, graphs, lines,
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
from bisect import bisect_left, bisect_right
from dataclasses import field
from typing import Any, Iterable


from ...model.ids import CompileId
from ...model.payloads import json_object
from ...model.profile import OP_CATEGORIES, PROFILER_CATEGORIES, Profile, ProfileEvent
from ...model.trace import Trace
from ..kernel_names import library_kernel
from ..provenance import KernelTrace, Provenance, UserLine, code_lines, text_lines
from ...wording import and_list, count, format_us
from ...model.records import dataclass

GRAPH_RANGE = re.compile(r"^## Call CompiledFxGraph (?P<key>\S+) ##$")
COMPILED_REGION = re.compile(r"^Torch-Compiled Region: (?P<cid>\S+)$")
INDUCTOR_KERNEL = re.compile(r"^(?:triton_|cpp_fused_|cpp_kernel_|cpp_CppKernelProxy)")
# torch 2.13 names a C++ kernel's profiler range after its graph too: graph_0_cpp_fused_...
_GRAPH_PREFIX = re.compile(r"^graph_\d+_(?=cpp_)")


def kernel_name(event_name: str) -> str | None:
    """The Inductor kernel an event name is (as the output code names it), or None."""
    name = _GRAPH_PREFIX.sub("", event_name, count=1)
    return name if INDUCTOR_KERNEL.match(name) else None
_CACHE_EVENTS = ("fx_graph_cache_miss", "fx_graph_cache_hit", "fx_graph_cache_bypass", "inductor_compile")
_LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver", "runtime")  # "runtime": older Kineto
EPS = 1e-6

# Row kinds, in the order the report explains them.
INDUCTOR, EXTERN, WRAPPER, EAGER = "inductor", "extern", "wrapper", "eager"
COMPILE, FRAMEWORK, OTHER, IDLE = "compile", "framework", "other", "idle"
KIND_LABELS = {
    INDUCTOR: "Inductor kernel",
    EXTERN: "extern kernel (via ATen op)",
    WRAPPER: "graph wrapper (around the output code's kernels: Python, input copies)",
    EAGER: "eager op (no compiled graph)",
    COMPILE: "compiling (torch.compile's own work)",
    FRAMEWORK: "framework (Dynamo guards, AOT wrappers, autograd)",
    OTHER: "outside torch (record_function ranges, Python, CUDA runtime calls)",
    IDLE: "idle / untraced",
}
IN_GRAPH = (INDUCTOR, EXTERN, WRAPPER)
GPU_IDLE = "GPU idle (no kernel running)"
GRAPH_LAUNCH = "cudaGraphLaunch"  # the CUDA runtime call that replays a CUDA graph
UNTRACED = "no profiler event (Python, data loading)"


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
        return library_kernel(self.name) if self.kind in (EXTERN, EAGER) else None

    @property
    def reported_share(self) -> float:
        """Its share of the run when the profile covers a compile, else of the total: the one a reader is shown."""
        return self.share if self.run_share is None else self.run_share

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "library": self.library, "kind": self.kind, "op": self.op, "graph": self.graph,
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


# --- the log's side: graph keys, kernels, user lines ---------------------------------------------


def _op_short(name: str) -> str:
    """``aten::mm``, ``extern_kernels.mm``, ``torch.ops.aten.mm.default`` -> ``mm``."""
    parts = [p for p in re.split(r"::|\.", name) if p and p not in ("torch", "ops", "aten", "extern_kernels")]
    return parts[0] if parts else name


@dataclass
class _KernelHome:
    compile_id: CompileId | None
    user_lines: list[UserLine]
    code_artifact: int | None
    code_line: int | None
    stacks_artifact: int | None = None
    stacks_name: str | None = None


@dataclass(slots=True)
class _CallSite:
    """One call of an extern op in a graph's output code (``extern_kernels.mm:7``)."""

    handle: int  # provenance's debug handle: the calls of a graph's code are numbered in the order it makes them
    user_lines: list[UserLine]
    name: str  # in the kernel stack traces artifact


def _attempt_text(cid: CompileId) -> str:
    """"0/0_1" (the attempt always written, attempt 0 too): how by_text keeps each attempt apart from the bare "0/0"."""
    return f"{str(cid).strip('[]').partition('_')[0]}_{cid.attempt or 0}"


class LogIndex:
    """What the log says about graphs and kernels, looked up by the names a profile uses."""

    def __init__(self, trace: Trace, provenance: Provenance):
        self.trace = trace
        # A training run: Inductor compiled a backward (at the first .backward()), so a warm-up step is a forward and
        # a backward; an inference-only run (no backward graph, no bwd_compilation_metrics) has none to warm up.
        self.backward = any("aot_backward_graph" in {a.name for a in entry.artifacts} | {a.kind for a in entry.artifacts}
                            or entry.bwd_metrics for entry in trace.compiles.values())
        # A profile's "0/0" (a compiled region, a cache event) names no attempt. After a graph-break restart [0/0]
        # compiled nothing and [0/0_1] the graph that ran: the name is the attempt that produced output code, or
        # else the last attempt.
        self.by_text: dict[str, CompileId] = {}
        produced = {entry.compile_id for entry in trace.compiles.values()
                    if any(a.name.startswith("inductor_output_code") for a in entry.artifacts)}
        for attempt in sorted((c for c in trace.compiles if c is not None), key=CompileId.sort_key):
            self.by_text[_attempt_text(attempt)] = attempt
            short = _attempt_text(attempt).rpartition("_")[0]
            if short not in self.by_text or attempt in produced or self.by_text[short] not in produced:
                self.by_text[short] = attempt
        # A graph's cache key -> the compile that made it: its cache artifact carries the attempt, the chromium
        # events only frame/frame_compile_id.
        self.graph_cid: dict[str, CompileId] = {}
        # A graph's cache key -> its output code: Inductor logs a graph's output code, then its cache artifact.
        self.graph_code: dict[str, int] = {}
        for entry in trace.compiles.values():
            code = None
            for a in sorted(entry.artifacts, key=lambda a: a.number):
                if a.name.startswith("inductor_output_code"):
                    code = a.number
                elif entry.compile_id is not None and a.cache in ("miss", "hit") and a.name.startswith("fx_graph_cache"):
                    key = json_object(trace.payload_text(a.payload)).get("key")
                    if isinstance(key, str) and key not in self.graph_cid:
                        self.graph_cid[key] = entry.compile_id
                        if code is not None:
                            self.graph_code[key] = code
                    code = None  # claimed: the next graph's cache artifact follows its own output code
        for e in trace.chromium_events:
            args = e.get("args") if isinstance(e, dict) else None
            if isinstance(args, dict) and e.get("name") in _CACHE_EVENTS and isinstance(args.get("key"), str):
                cid = self.compile_id(args.get("compile_id"))
                if cid is not None:
                    self.graph_cid.setdefault(args["key"], cid)
        # (output code artifact, short op name) -> each call of an extern op in that graph's code, in call order
        # (extern_kernels.mm:7, :9...: provenance's debug handle counts the calls as the code makes them); None when
        # a call has no handle to order it by, or two share one.
        self._sites: dict[tuple[int, str], list[_CallSite] | None] = {}
        # kernel name -> [(compile id, its user lines, code artifact, stack traces artifact, name there)]
        self.kernels: dict[str, list[tuple[CompileId | None, list[UserLine], int | None, int | None, str]]] = {}
        for cp in provenance.compiles.values():
            for section in cp.sections:
                # A kernel the section lists for another graph (torch 2.11 keeps earlier graphs' kernels in a
                # backward's stack traces) is that graph's: here it would lend its lines to this graph's kernels of
                # the same name and to this code's calls of its op, and take a place in their order. Its own graph's
                # section lists it too.
                others = set(section.other_graphs)
                own = [k for k in section.kernels if k.name not in others] if others else section.kernels
                merged: dict[str, list[UserLine]] = {}
                first: dict[str, str] = {}
                for k in own:
                    first.setdefault(k.kernel, k.name)
                    lines = merged.setdefault(k.kernel, [])
                    for u in k.user_lines:
                        if all((u.file, u.line) != (v.file, v.line) for v in lines):
                            lines.append(u)
                for name, lines in merged.items():
                    self.kernels.setdefault(name, []).append((cp.compile_id, lines, section.code.artifact_number,
                                                              section.kernel_traces_artifact, first[name]))
                self._add_call_sites(section.code.artifact_number, own)
        self._code: dict[int, tuple[list[str], int]] = {}
        self._homes: dict[tuple, _KernelHome | None] = {}
        self._names_in_code: set[str] | None = None
        # Asked once per profile event (a row's op, a replayed kernel's): each answer reads a whole output code.
        self._calls: dict[int, str] = {}
        self._calls_op: dict[tuple[int, str], bool | None] = {}
        self._only_extern_op: dict[int, str | None] = {}

    def _add_call_sites(self, code: int | None, kernels: list[KernelTrace]) -> None:
        """One output code's extern calls, by op, ordered by their debug handles (the order the code makes them:
        GPT-2's extern_kernels.mm:7 .. :46 stand in its code in that order)."""
        if code is None:
            return
        found: dict[str, list[_CallSite] | None] = {}
        for k in kernels:
            if INDUCTOR_KERNEL.match(k.kernel):
                continue
            op = _op_short(k.kernel)
            sites = found.setdefault(op, [])
            if sites is None:
                continue
            handle = k.debug_handle or ""
            if handle.isascii() and handle.isdigit():
                sites.append(_CallSite(int(handle), k.user_lines, k.name))
            else:
                found[op] = None
        for op, sites in found.items():
            if sites is not None:
                sites.sort(key=lambda c: c.handle)
                if len({c.handle for c in sites}) < len(sites):
                    sites = None
            self._sites[(code, op)] = sites

    def call_sites(self, code: int | None, op: str) -> list[_CallSite] | None:
        """An extern op's calls in one graph's output code, in the order the code makes them (None: not known)."""
        return self._sites.get((code, _op_short(op))) if code is not None else None

    def function(self, cid: CompileId | None) -> str | None:
        """The name of the function a compile id compiled (its compilation_metrics' co_name), or None."""
        entry = self.trace.compiles.get(cid) if cid is not None else None
        name = (entry.metrics or {}).get("co_name") if entry is not None else None
        return name if isinstance(name, str) else None

    def compile_id(self, text: Any) -> CompileId | None:
        if not isinstance(text, str):
            return None
        return self.by_text.get(text.strip("[]"))

    def home(self, name: str, compile_id: CompileId | None, extern: bool = False,
             code: int | None = None) -> _KernelHome | None:
        """Where a kernel (or, extern, an ATen op's call) came from: its compile id and user lines.

        code: the output code artifact of the graph that ran it, when its graph key says (graph_code): a compile's
        forward and backward are two, and a kernel name or an extern op may be in both."""
        key = (name, compile_id, extern, code)
        if key not in self._homes:
            self._homes[key] = self._find_home(name, compile_id, extern, code)
        return self._homes[key]

    def _find_home(self, name: str, compile_id: CompileId | None, extern: bool, code: int | None) -> _KernelHome | None:
        if extern:
            short = _op_short(name)
            found = [h for kname, homes in self.kernels.items() if not INDUCTOR_KERNEL.match(kname)
                     and _op_short(kname) == short for h in homes if h[0] == compile_id]
            found = [h for h in found if h[2] == code] if code is not None else found
            if not found:
                return None
            lines = [u for h in found for u in h[1]]
            unique = list({(u.file, u.line): u for u in lines}.values())
            return _KernelHome(compile_id, unique, None, None, found[0][3], found[0][4])
        homes = self.kernels.get(name, [])
        if compile_id is not None:
            homes = [h for h in homes if h[0] == compile_id] or homes
        if code is not None:
            homes = [h for h in homes if h[2] == code] or homes
        if len({h[0] for h in homes}) > 1:
            return None  # the same name in several graphs and no graph range to tell which
        if not homes:
            return self._home_in_output_code(name, compile_id, code)
        cid, lines, art, stacks, stacks_name = homes[0]
        return _KernelHome(cid, lines, art, self._definition_line(art, name), stacks, stacks_name)

    def _home_in_output_code(self, name: str, compile_id: CompileId | None, code: int | None) -> _KernelHome | None:
        """No provenance for this kernel: its compile id from the output code that defines it, no user lines."""
        found = []
        for entry in self.trace.compiles.values():
            if compile_id is not None and entry.compile_id != compile_id:
                continue
            for a in entry.artifacts:
                if code is not None and a.number != code:
                    continue
                if a.filename.startswith("inductor_output_code") and a.payload is not None:
                    line = self._definition_line(a.number, name)
                    if line is not None:
                        found.append(_KernelHome(entry.compile_id, [], a.number, line))
        return found[0] if len({h.compile_id for h in found}) == 1 else None

    def _code_text(self, artifact: int) -> tuple[list[str], int]:
        """An output code artifact's lines as code_lines() numbers them, and the empty lines it drops."""
        if artifact not in self._code:
            text = next((self.trace.payload_text(a.payload) for entry in self.trace.compiles.values()
                         for a in entry.artifacts if a.number == artifact), "")
            lines = code_lines(text)
            self._code[artifact] = (lines, len(text_lines(text)) - len(lines))
        return self._code[artifact]

    def _definition_line(self, artifact: int | None, name: str) -> int | None:
        """The line of the output code page (numbered as its anchors) where the kernel is defined."""
        if artifact is None:
            return None
        lines, skipped = self._code_text(artifact)
        anchored = re.compile(rf"^\s*{re.escape(name)}\s*=")
        first = None
        for i, line in enumerate(lines):
            if name in line:
                if anchored.match(line):
                    return i + 1 + skipped
                first = first or i + 1 + skipped
        return first

    def calls_op(self, code: int | None, op: str) -> bool | None:
        """Whether a graph's output code calls the ATen op (``aten::mm``: ``extern_kernels.mm``,
        ``torch.ops.aten.mm``); None when its code is not known, or is no Python wrapper (a C++ wrapper calls
        ``aoti_torch_*`` shims, which these names do not find)."""
        if code is None:
            return None
        key = (code, op)
        if key not in self._calls_op:
            self._calls_op[key] = self._find_calls_op(code, op)
        return self._calls_op[key]

    def _find_calls_op(self, code: int, op: str) -> bool | None:
        text = self._calls_text(code)
        if not re.search(r"^[ \t]*def call\(", text, re.MULTILINE):  # (a method of Runner in torch 2.11)
            return None
        namespace, _, short = op.partition("::")
        names = [re.escape(f"{namespace}.{short}.")] + ([re.escape(f"extern_kernels.{short}(")] if namespace == "aten" else [])
        return re.search(rf"\b(?:{'|'.join(names)})", text) is not None

    def only_extern_op(self, code: int | None) -> str | None:
        """The one ATen op a graph's output code calls extern kernels of (``aten::mm``), if it calls one only."""
        if code is None:
            return None
        if code not in self._only_extern_op:
            text = self._calls_text(code)
            ops = set(re.findall(r"\bextern_kernels\.(\w+)\(", text)) | set(re.findall(r"\baten\.(\w+)\.\w+\(", text))
            self._only_extern_op[code] = f"aten::{ops.pop()}" if len(ops) == 1 else None
        return self._only_extern_op[code]

    def _calls_text(self, code: int) -> str:
        """The output code without its comments (which quote the FX graph's torch.ops.aten targets)."""
        if code not in self._calls:
            self._calls[code] = "\n".join(line for line in self._code_text(code)[0] if not line.lstrip().startswith("#"))
        return self._calls[code]

    def knows_kernel(self, name: str) -> bool:
        if name in self.kernels:
            return True
        if self._names_in_code is None:
            self._names_in_code = set()
            for entry in self.trace.compiles.values():
                for a in entry.artifacts:
                    if a.filename.startswith("inductor_output_code") and a.payload is not None:
                        self._names_in_code.update(re.findall(r"\b(?:triton_|cpp_fused_)\w+", self.trace.payload_text(a.payload)))
        return name in self._names_in_code


# --- the profile's side: nesting on each thread --------------------------------------------------


@dataclass(slots=True)
class _Context:
    graph: str | None
    region: str | None
    kernel: str | None
    op: str | None
    compiling: bool = False  # inside torch.compile's own work (a dynamo_timed range)
    # In one call of a graph (its graph range): op -> its calls there, one dict shared by the call's events (the
    # whole call's counts once its thread is nested), and which of them the op is (1 for the first).
    run_calls: dict[str, int] | None = None
    nth: int = 0


COMPILING = "compiling (Dynamo, AOTAutograd, Inductor)"
_COMPILE_RANGE = re.compile(r" \(dynamo_timed\)$|_data: |^(?:dynamo|entire_frame_compile)$")
# The annotation torch puts inside each compile range: "dynamo_data: compile_id=0/2", "entire_frame_compile_data:
# fn_name=_compile.compile_inner, compile_id=0/2".
_COMPILE_RANGE_ID = re.compile(r"_data: (?:.*, )?compile_id=(?P<cid>[^,\s]+)")


def _compile_spans(evs: list[ProfileEvent], parents: list[int | None],
                   contexts: list[_Context]) -> list[tuple[float, float, str | None]]:
    """Each outermost compile range on a thread: (start, end, the compile id its ranges name)."""
    spans: list[tuple[float, float, str | None]] = []
    for i, (e, ctx) in enumerate(zip(evs, contexts)):
        if not ctx.compiling:
            continue
        parent = parents[i]
        if parent is None or not contexts[parent].compiling:
            spans.append((e.ts, e.end, None))
        elif spans and spans[-1][2] is None and (m := _COMPILE_RANGE_ID.search(e.name)):
            spans[-1] = (spans[-1][0], spans[-1][1], m["cid"])  # (events come sorted by start: it is inside the last)
    return spans


# The autograd engine's ranges ("autograd::engine::evaluate_function: CompiledFunctionBackward", the AccumulateGrad
# node) hold ops, they are none: a backward GEMM is aten::mm's, a gradient's accumulation aten::add_'s.
_AUTOGRAD_RANGES = ("autograd::", "torch::autograd::")


def _is_op(e: ProfileEvent) -> bool:
    return e.cat in OP_CATEGORIES and "::" in e.name and not e.name.startswith(_AUTOGRAD_RANGES)


def threads_of(events: Iterable[ProfileEvent]) -> dict[tuple, list[ProfileEvent]]:
    threads: dict[tuple, list[ProfileEvent]] = {}
    for e in events:
        if not e.on_gpu and e.cat not in PROFILER_CATEGORIES:
            threads.setdefault((e.pid, e.tid), []).append(e)
    for evs in threads.values():
        evs.sort(key=lambda e: (e.ts, -e.dur))
    return threads


def _nest(events: list[ProfileEvent]) -> tuple[list[int | None], list[_Context]]:
    """Parents (time nesting, events sorted by start) and each event's context (graph, region, kernel, op)."""
    parents: list[int | None] = []
    contexts: list[_Context] = []
    stack: list[int] = []
    for i, e in enumerate(events):
        while stack and events[stack[-1]].end <= e.ts + EPS:
            stack.pop()
        parent = stack[-1] if stack else None
        up = contexts[parent] if parent is not None else _Context(None, None, None, None)
        g, r = GRAPH_RANGE.match(e.name), COMPILED_REGION.match(e.name)
        kernel = up.kernel or kernel_name(e.name)
        # In a graph's call, the op is one its output code called (extern_kernels.mm: aten::mm), not one around it.
        op = None if g else up.op or (e.name if _is_op(e) and not kernel else None)
        run_calls, nth = ({}, 0) if g else (up.run_calls, up.nth)
        if op and not up.op and run_calls is not None:  # an op's call (not one inside it): the graph's n-th of it
            nth = run_calls[op] = run_calls.get(op, 0) + 1
        contexts.append(_Context(g["key"] if g else up.graph, r["cid"] if r else up.region, kernel, op,
                                 up.compiling or bool(_COMPILE_RANGE.search(e.name)), run_calls, nth))
        parents.append(parent)
        stack.append(i)
    return parents, contexts


def union(intervals: list[tuple[float, float]]) -> float:
    """The length the intervals cover together (each instant once)."""
    return sum(e - s for s, e in merged(intervals))


def merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of intervals as disjoint ones, in order (touching ones joined)."""
    out: list[tuple[float, float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


class Covered:
    """The union of intervals, asked many times what lies in a window: each question bisects, where scanning every
    interval made a profile of 10000 kernels take minutes (the idle gaps against every op, every compile range)."""

    def __init__(self, intervals: Iterable[tuple[float, float]]):
        self.spans = merged(intervals)
        self.starts = [s for s, _ in self.spans]
        self.ends = [e for _, e in self.spans]
        self.before = [0.0]  # the time covered before each span
        for s, e in self.spans:
            self.before.append(self.before[-1] + (e - s))

    def _upto(self, t: float) -> float:
        k = bisect_right(self.starts, t) - 1
        return 0.0 if k < 0 else self.before[k] + min(t, self.ends[k]) - self.starts[k]

    def within(self, start: float, end: float) -> float:
        """The time covered between start and end."""
        return self._upto(end) - self._upto(start) if end > start else 0.0

    def pieces(self, start: float, end: float) -> list[tuple[float, float]]:
        """The covered spans between start and end, cut to them."""
        return [(max(s, start), min(e, end))
                for s, e in self.spans[bisect_right(self.ends, start):bisect_left(self.starts, end)]]


class Rows:
    def __init__(self, index: LogIndex):
        self.index = index
        self.rows: dict[tuple, KernelRow] = {}
        self._regions: dict[tuple, str | None] = {}  # the region each row outside a graph took its compile id from
        # An extern row's op calls in its graph's code (LogIndex.call_sites), and its time by call (None: a call not
        # told apart, whose time goes to all the row's lines).
        self._sites: dict[tuple, list[_CallSite]] = {}
        self._site_us: dict[tuple, dict[int | None, float]] = {}
        self.compile_spans: list[tuple[float, float, str | None]] = []  # _compile_spans of every thread
        # A kernel row's calls on a CPU timeline: (start, time) of each, for SlowCalls. By id: a row is unhashable.
        self.timed: dict[int, tuple[KernelRow, list[tuple[float, float]]]] = {}
        # A GPU timeline's graph calls, (graph key, start, end, in a backward), its compile ranges and each GPU's span
        # (first kernel start, last kernel end): for _slow_graph_calls.
        self.graph_calls: list[tuple[str, float, float, bool]] = []
        self.compiling: list[tuple[float, float]] = []
        self._compiling_covered: Covered | None = None  # (compiling, asked per call by _gpu_time)
        self.gpu_spans: list[tuple[float, float]] = []
        self.idle_gaps: list[tuple[float, float]] = []  # each GPU's idle, compiling left out: for idle_by_cpu

    def compiling_in(self, start: float, end: float) -> list[tuple[float, float]]:
        """The compile ranges between start and end, cut to them."""
        if self._compiling_covered is None:
            self._compiling_covered = Covered(self.compiling)
        return self._compiling_covered.pieces(start, end)

    def time_call(self, row: KernelRow, start: float, us: float) -> None:
        self.timed.setdefault(id(row), (row, []))[1].append((start, us))

    def add(self, kind: str, name: str, ctx: _Context, us: float, calls: int, op: str | None = None,
            replayed: bool = False) -> KernelRow:
        graph = ctx.graph if kind in IN_GRAPH else None
        if kind == EXTERN and op and self.index.calls_op(self.index.graph_code.get(graph or ""), op) is False:
            # In the graph's call but not of its output code: CUDA graph trees' copy of the inputs (_foreach_copy_),
            # an AOT wrapper's op. The graph's wrapper, then, with the op named.
            kind = WRAPPER
        # No graph range (older torch, a CPU profile without them): the same kernel in two compiled regions is two
        # graphs' kernel, kept apart by the region.
        region = ctx.region if kind in IN_GRAPH and graph is None else None
        key = (kind, name, graph, region, op, replayed)
        row = self.rows.get(key)
        if row is not None and kind not in IN_GRAPH and self._regions.get(key) != ctx.region:
            row.compile_id = None  # framework or eager time in several compiled regions: no one compile's
        if row is None:
            cid = self.index.graph_cid.get(graph) if graph else None
            # A compile inside a compiled region is another frame's (a resume function's, compiled when the region's
            # code first calls it): the region's compile id is its only inside a graph's call (autotuning).
            if cid is None and ctx.region is not None and kind != IDLE and (kind != COMPILE or ctx.graph):
                cid = self.index.compile_id(ctx.region)
            self._regions[key] = ctx.region
            row = self.rows[key] = KernelRow(name, kind, graph, cid, op, region=region, replayed=replayed)
            code = self.index.graph_code.get(graph) if graph else None
            if kind == INDUCTOR:
                home = self.index.home(name, cid, code=code)
            elif kind == EXTERN and op:
                home = self.index.home(op, cid, extern=True, code=code)
            else:
                home = None
            if home is not None:
                row.compile_id = row.compile_id or home.compile_id
                row.user_lines = home.user_lines
                row.code_artifact, row.code_line = home.code_artifact, home.code_line
                row.stacks_artifact, row.stacks_name = home.stacks_artifact, home.stacks_name
                sites = self.index.call_sites(code, op) if kind == EXTERN and op else None
                if sites:
                    self._sites[key] = sites
        row.total_us += us
        row.calls += calls
        sites = self._sites.get(key)
        if sites is not None:
            # The n-th call of the op in a call of the graph is the code's n-th call of it, when the graph's call
            # made as many as its code has: else (a call cut by the profile's end, a replay) it is not told apart.
            made = ctx.run_calls.get(op) if ctx.run_calls is not None and ctx.op == op and op else None
            site = ctx.nth - 1 if made == len(sites) and ctx.nth else None
            spent = self._site_us.setdefault(key, {})
            spent[site] = spent.get(site, 0.0) + us
        return row

    def split_by_line(self) -> None:
        """Each row's time on each of its user lines (KernelRow.line_us): an extern call's on its call's lines, the
        rest of a row's spread evenly over all of them. A row keeps the lines its time went to."""
        for key, row in self.rows.items():
            if not row.user_lines:
                continue
            spent = self._site_us.get(key)
            if not spent or set(spent) == {None}:
                row.line_us = [row.total_us / len(row.user_lines)] * len(row.user_lines)
                continue
            sites = self._sites[key]
            # (a call's lines are among its op's in that graph, row.user_lines: the lines keep that order)
            where = {(u.file, u.line): u for u in row.user_lines}
            on = dict.fromkeys(where, 0.0)
            for site, us in spent.items():
                lines = sites[site].user_lines if site is not None and sites[site].user_lines else row.user_lines
                for u in lines:
                    place = (u.file, u.line)
                    where.setdefault(place, u)
                    on[place] = on.get(place, 0.0) + us / len(lines)
            kept = [place for place, us in on.items() if us > 0] or list(on)
            row.user_lines, row.line_us = [where[place] for place in kept], [on[place] for place in kept]
            calls = [site for site, us in spent.items() if us > 0]
            if len(calls) == 1 and calls[0] is not None:  # one call's time: its stack traces, not its op's first call's
                row.stacks_name = sites[calls[0]].name


def cpu_rows(threads: dict[tuple, list[ProfileEvent]], rows: Rows, part: bool = False) -> tuple[float, int]:
    total, n_threads = 0.0, 0
    for evs in threads.values():
        if not any(e.cat in OP_CATEGORIES for e in evs):
            continue
        n_threads += 1
        parents, contexts = _nest(evs)
        rows.compile_spans.extend(_compile_spans(evs, parents, contexts))
        children: dict[int, list[tuple[float, float]]] = {}
        top: list[tuple[float, float]] = []
        ends: list[float] = []  # each event's end, cut at its parent's (a child never outlasts it here)
        for i, e in enumerate(evs):
            p = parents[i]
            ends.append(e.end if p is None else min(e.end, ends[p]))
            if p is None:
                top.append((e.ts, e.end))
            else:
                children.setdefault(p, []).append((e.ts, ends[i]))
        # A run cut out of a profile is the time of its ranges; gaps between them belong to the other run.
        span = union(top) if part else max(e.end for e in evs) - min(e.ts for e in evs)
        total += span
        rows.add(IDLE, UNTRACED, _Context(None, None, None, None), span - union(top), 0)
        for i, e in enumerate(evs):
            length = e.dur if ends[i] == e.end else ends[i] - e.ts  # dur as recorded: ts + dur loses digits
            own = max(0.0, length - union(children.get(i, [])))
            ctx = contexts[i]
            if ctx.compiling:  # a first call's compile, or its autotuning inside the graph's call
                parent = parents[i]
                outermost = parent is None or not contexts[parent].compiling
                rows.add(COMPILE, COMPILING, ctx, own, 1 if outermost else 0)
            elif ctx.kernel:
                call = not _inside_kernel(parents, contexts, i)
                row = rows.add(INDUCTOR, ctx.kernel, ctx, own, 1 if call else 0)
                if call:  # the call's whole time: what ran inside it is the kernel's too
                    rows.time_call(row, e.ts, length)
            elif ctx.op and ctx.graph:
                call = e.name == ctx.op and not _inside_op(parents, contexts, i)
                row = rows.add(EXTERN, ctx.op, ctx, own, 1 if call else 0, op=ctx.op)
                if call:
                    rows.time_call(row, e.ts, length)
            elif ctx.op:
                row = rows.add(EAGER, ctx.op, ctx, own, 1 if e.name == ctx.op and not _inside_op(parents, contexts, i) else 0)
                p = parents[i]
                if (p is not None and e.name != ctx.op and _is_op(e) and e.name not in row.inner_ops
                        and evs[p].name == ctx.op and not _inside_op(parents, contexts, p)):
                    row.inner_ops.append(e.name)  # an op the outermost one called
            elif ctx.graph:
                rows.add(WRAPPER, "graph wrapper code", ctx, own, 0)
            elif e.cat in OP_CATEGORIES:  # torch's own ranges: guards, AOT wrappers, the autograd engine
                rows.add(FRAMEWORK, e.name, ctx, own, 1)
            else:  # a user_annotation (record_function), a Python function, a CUDA runtime call: none is torch's
                rows.add(OTHER, e.name, ctx, own, 1)
    return total, n_threads


def _inside_kernel(parents: list[int | None], contexts: list[_Context], i: int) -> bool:
    p = parents[i]
    return p is not None and contexts[p].kernel is not None


def _inside_op(parents: list[int | None], contexts: list[_Context], i: int) -> bool:
    p = parents[i]
    return p is not None and contexts[p].op is not None


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """The length of time inside both unions."""
    return union(a) + union(b) - union(a + b)


def gpu_rows(profile: Profile, threads: dict[tuple, list[ProfileEvent]], rows: Rows) -> tuple[float, int]:
    launches: dict[int, tuple[_Context, bool]] = {}  # correlation -> the launch's context, whether a replay
    compiling: list[tuple[float, float]] = []  # the CPU's compile ranges: the GPU waits while a first call compiles
    for evs in threads.values():
        parents, contexts = _nest(evs)
        rows.compile_spans.extend(_compile_spans(evs, parents, contexts))
        for i, (e, ctx) in enumerate(zip(evs, contexts)):
            if e.correlation is not None and e.cat in _LAUNCH_CATEGORIES:
                launches[e.correlation] = (ctx, e.name == GRAPH_LAUNCH)
            parent = parents[i]
            if (g := GRAPH_RANGE.match(e.name)) and not ctx.compiling:
                rows.graph_calls.append((g["key"], e.ts, e.end, _in_backward(evs, parents, i)))
            if ctx.compiling and (parent is None or not contexts[parent].compiling):
                compiling.append((e.ts, e.end))
    devices: dict[Any, list[ProfileEvent]] = {}
    annotations: dict[Any, list[ProfileEvent]] = {}
    for e in profile.events:
        if e.cat == "gpu_user_annotation":
            annotations.setdefault(e.pid, []).append(e)
        elif e.on_gpu:
            devices.setdefault(e.pid, []).append(e)
    total = 0.0
    for device, evs in devices.items():
        ranges = sorted((a for a in annotations.get(device, []) if GRAPH_RANGE.match(a.name)), key=lambda a: a.ts)
        starts = [a.ts for a in ranges]
        busy = 0.0
        for e in evs:
            launched = launches.get(e.correlation) if e.correlation is not None else None
            if launched is not None:
                ctx, replayed = launched
            else:  # no CPU launch recorded: the GPU-side graph range around it, if any
                j = bisect_right(starts, e.ts) - 1
                around = GRAPH_RANGE.match(ranges[j].name) if j >= 0 and ranges[j].end >= e.end - EPS else None
                graph = around["key"] if around else None
                ctx, replayed = _Context(graph, None, None, None), False
            if ctx.compiling:  # autotuning's benchmark runs, launched while the first call compiled
                rows.add(COMPILE, COMPILING, ctx, e.dur, 0)
            elif kernel_name(e.name):
                rows.add(INDUCTOR, kernel_name(e.name) or e.name, ctx, e.dur, 1, replayed=replayed)
            elif ctx.graph:
                # A replay launches the recorded kernels with no op around them; a graph whose output code calls one
                # extern op only (extern_kernels.mm) tells whose they are, else the row says it cannot.
                op = ctx.op or (rows.index.only_extern_op(rows.index.graph_code.get(ctx.graph)) if replayed else None)
                rows.add(EXTERN, e.name, ctx, e.dur, 1, op=op, replayed=replayed)
            else:
                rows.add(EAGER, e.name, ctx, e.dur, 1, op=ctx.op)
            busy += e.dur
        first, last = min(e.ts for e in evs), max(e.end for e in evs)
        rows.gpu_spans.append((first, last))
        # A run cut out of a profile: its kernels only (the gaps hold the other run's kernels).
        ran = [(e.ts, e.end) for e in evs]
        idle = 0.0 if profile.part_of else (last - first) - union(ran)
        # The GPU idles while a first call compiles (and waits for g++, Triton, autotuning): that is compiling.
        waiting = 0.0
        if idle and compiling:
            window = [(max(s, first), min(e, last)) for s, e in compiling if e > first and s < last]
            waiting = min(idle, union(window) - _overlap(window, ran))
        rows.add(COMPILE, COMPILING, _Context(None, None, None, None), waiting, 0)
        rows.add(IDLE, GPU_IDLE, _Context(None, None, None, None), idle - waiting, 0)
        if idle and not profile.part_of:
            rows.idle_gaps.extend(less(_gaps(ran), compiling))
        total += busy + idle
    rows.compiling = compiling
    return total, len(devices)


def _gaps(ran: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The times between the first start and the last end that no interval covers."""
    out, end = [], None
    for s, e in sorted(ran):
        if end is not None and s > end:
            out.append((end, s))
        end = e if end is None else max(end, e)
    return out


def less(gaps: list[tuple[float, float]], taken: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """gaps with the times in `taken` cut out (each gap against the cuts inside it only)."""
    out = []
    cuts = Covered(taken)
    for a, b in gaps:
        start = a
        for s, e in cuts.pieces(a, b):
            if s > start:
                out.append((start, s))
            start = e
        if start < b:
            out.append((start, b))
    return out


def _in_backward(evs: list[ProfileEvent], parents: list[int | None], i: int) -> bool:
    """A graph call the autograd engine made (inside its CompiledFunctionBackward range): the backward graph."""
    p = parents[i]
    while p is not None:
        if "Backward" in evs[p].name:
            return True
        p = parents[p]
    return False

"""What one compile id's page leads with: outcome, reason, times by phase, cache, graph sizes.

Everything here is taken from the insights already computed (errors, graph breaks,
recompiles, compile time, caches) and from the compile's own metrics; the rest of
`compilation_metrics` is sorted into folded groups, with the keys torch left empty
listed apart, so the page never opens on an alphabetical dump.
"""

from __future__ import annotations

import os
from dataclasses import field, replace
from typing import Any, Iterator, Mapping, Sequence

from ..model.ids import CompileId, compilation_key
from ..model.trace import METRICS, Artifact, Compile, Frame, Trace
from .activation_checkpoint import CompileCheckpointing
from .autotuning import TemplateSearch
from .cached_lines import moved_lines
from .caches import CACHES
from .compile_time import PHASES, STILL_COMPILING
from .compiled_frames import CompiledFrames, wrapped_function
from .cudagraphs import CudaGraphCompile
from .compile_errors import OUTPUT_CODE, CompileError
from .graph_breaks import GraphBreak
from .insights import Insights
from .metric_values import (SHOWN_ELSEWHERE, STACK_METRICS, TRACEBACK_METRICS, LongMetric, MetricElsewhere,
                            MetricTraceback, long_metric, metric_stack, metric_tracebacks)
from .op_mutations import DroppedCall
from .recompiles import BackwardGraph, FailedGuard, RecompileStep, RenumberedOtherProcess
from .status import BREAK, ERROR, MISSING, RESTARTED, STATUS_LABELS, compiled_attempts
from .user_locations import UserLocation, code_origin, user_source_name
from ..model.records import dataclass
from ..wording import and_list, possessive

# Graph and guard sizes, in the order shown (label for one, label for several, compilation_metrics key): each one
# this compile's own.
# ir_count counts the bytecode instructions Dynamo stepped through (torch/_dynamo/symbolic_convert.py adds each
# run between jumps and returns, inlined calls and earlier attempts of the compile included; g(x): x * 2 + 1 logs 7,
# and every recompile of one frame logs the same count), not Inductor IR. num_graph_breaks is left out: torch sets it
# to counters["graph_break"].total(), the process's graph breaks so far (GPT-2's [3/0] logs 2 with none of its own),
# and this compile's graph breaks are the page's own row.
SIZE_KEYS = (
    ("operator in the Dynamo graph", "operators in the Dynamo graph", "graph_op_count"),
    ("node in the Dynamo graph", "nodes in the Dynamo graph", "graph_node_count"),
    ("graph input", "graph inputs", "graph_input_count"),
    ("guard", "guards", "guard_count"),
    ("shape-environment guard", "shape-environment guards", "shape_env_guard_count"),
    ("bytecode instruction traced", "bytecode instructions traced", "ir_count"),
)
# Shown in the summary above the metrics (never again in the groups).
LEADING_KEYS = frozenset(
    {"fail_type", "fail_reason", "fail_user_frame_filename", "fail_user_frame_lineno", "restart_reasons",
     "recompile_reason", "co_name", "co_filename", "co_firstlineno"} | {key for _, _, key in SIZE_KEYS}
)
_METRIC_GROUPS = (
    ("Times", lambda k: "time" in k or k.endswith(("_s", "_us", "_ms"))),
    ("Counts and sizes", lambda k: "count" in k or "size" in k or k.startswith("num_")),
    ("Caches", lambda k: "cache" in k),
    ("Configuration", lambda k: "config" in k),
)
# A graph input of a traceable tensor subclass (describe_tensor's is_traceable_wrapper_subclass): AOTAutograd desugars
# it, so the compiled graph takes its inner tensors (SubclassGetAttrAOTInput(..., attr='_data')) where Dynamo's graph
# shows one input typed "ScaledTensor(f32[8, 8])"; the metadata its __tensor_flatten__ returns is compiled in.
SUBCLASS_INPUT_NOTE = ("{name}, one of the graph inputs, is a {cls} (your tensor subclass): AOTAutograd passed its inner "
                       "tensor{s} {attrs} to the compiled graph separately, as {inputs} (what its "
                       "__tensor_flatten__ names){meta}.")
SUBCLASS_METADATA_PART = "; its metadata {ctx} was compiled in as a constant, which Dynamo guards on"


def subclass_input_notes(entry: Compile) -> list[str]:
    """SUBCLASS_INPUT_NOTE for each traceable tensor subclass this compile took as a graph input."""
    notes = []
    for described in entry.subclass_tensors:
        attrs = described.get("attrs") or []
        if not described.get("source") or not attrs:
            continue
        notes.append(SUBCLASS_INPUT_NOTE.format(
            name=f"`{user_source_name(described['source'])}`",
            cls=str(described.get("type") or "tensor subclass").rpartition(".")[2],
            s="s" if len(attrs) > 1 else "", inputs="inputs of their own" if len(attrs) > 1 else "an input of its own",
            attrs=and_list([f"`{a}`" for a in attrs]),
            meta=SUBCLASS_METADATA_PART.format(ctx=described["ctx"]) if described.get("ctx") else ""))
    return list(dict.fromkeys(notes))


# Why a compile's id is not the one torch logged (ingest/resets.py renumbered it): its own messages name the logged one.
RENUMBERED_NOTE = ("torch logged this compile as {logged}: torch._dynamo.reset() ran before it, and after a reset torch "
                   "counts frame ids from 0 again, so its messages (and tlparse) call it {logged}{before}. compilescope "
                   "numbers the frames compiled after a reset on from the highest before it, so that two compilations "
                   "never share an id.")
# On a compile whose id torch logged again for others after torch._dynamo.reset() (their pages say RENUMBERED_NOTE):
# someone coming from torch's stderr or tlparse with that id lands here first.
ALSO_LOGGED_NOTE = ("torch logged {others} as {key} too: after torch._dynamo.reset() torch counts frame ids from 0 "
                    "again, so its messages (and tlparse) naming {key} after a reset mean {those}, not this compile.")
# The same, for a compile of another process than the log's first (several processes' logs one after another).
OTHER_PROCESS_NOTE = ("torch logged this compile as {logged} in another process in the same log{pid}: each process "
                      "counts frame ids from 0, so that process's messages call it {logged}{before}. compilescope "
                      "numbers the frames of each process after the log's first on from the highest before it, so "
                      "that two compilations never share an id.")
ALSO_LOGGED_OTHER_PROCESS_NOTE = ("torch logged {others} as {key} too, in another process in the same log: each "
                                  "process counts frame ids from 0, so that process's messages naming {key} mean "
                                  "{those}, not this compile.")
BACKWARD_METRICS = "bwd_compilation_metrics"
# DDPOptimizer (torch/_dynamo/backends/distributed.py) logs the graph it split, then each submodule it compiles alone.
DDP_SPLIT_GRAPH = "optimize_ddp_split_graph"
DDP_SPLIT_CHILD = "optimize_ddp_split_child"


@dataclass
class MetricGroups:
    """compilation_metrics without the leading keys: non-empty values by group, then the names of empty ones."""

    groups: list[tuple[str, Sequence[tuple[str, Any]]]] = field(default_factory=list)  # (group, MetricRows)
    empty: list[str] = field(default_factory=list)
    long: dict[str, LongMetric] = field(default_factory=dict)  # values cut on the compile's page (metric_values.py)
    stacks: dict[str, list[Frame]] = field(default_factory=dict)  # the frames of each stack metric (STACK_METRICS)
    tracebacks: dict[str, list[MetricTraceback]] = field(default_factory=dict)  # each traceback metric's (TRACEBACK_METRICS)
    # long values cut on every page that shows the record, the compile's and the record's own: the report shows them
    # whole on their artifacts' pages (metric_values.SHOWN_ELSEWHERE)
    elsewhere: dict[str, MetricElsewhere] = field(default_factory=dict)


@dataclass
class DdpSplit:
    """One Dynamo graph that DDPOptimizer split at DistributedDataParallel's gradient buckets: each subgraph is
    compiled on its own (AOTAutograd and Inductor once each), so that DDP can all-reduce a bucket's gradients while
    the backward of the rest goes on."""

    count: int  # subgraphs compiled on their own
    subgraphs: list[tuple[str, int]] = field(default_factory=list)  # (submodule name, its artifact number)
    graph: int | None = None  # the artifact number of the split graph (the submodules and how they are called)

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "subgraphs": [name for name, _ in self.subgraphs]}


def ddp_splits(entry: Compile) -> list[DdpSplit]:
    """The graphs of the compile DDPOptimizer split, in log order, from its split graph record and the record of
    each submodule after it. A compile can have several: one whose frame was compiled in more than one graph (a
    graph break without a restart)."""
    found: list[tuple[int | None, list[tuple[str, int]]]] = []  # (split graph artifact, its submodules)
    for artifact in entry.artifacts:
        if artifact.kind == DDP_SPLIT_GRAPH:
            found.append((artifact.number, []))
        elif artifact.kind == DDP_SPLIT_CHILD:
            if not found:  # (a log without its split graph record)
                found.append((None, []))
            found[-1][1].append((artifact.name.removeprefix(DDP_SPLIT_CHILD + "_"), artifact.number))
    # (DDPOptimizer logs a split graph only when it has more than one bucket: none without submodules is a split)
    return [DdpSplit(count=len(children), subgraphs=children, graph=graph) for graph, children in found if children]


@dataclass
class CompileSummary:
    """What one compile id's page leads with: outcome, reason, the frame compiled, times, caches and sizes."""

    compile_id: str
    status: str  # a key of STATUS_LABELS
    outcome: str  # one line: "Error: failed in C++/Triton compile (fell back to eager)"
    compiled: UserLocation | None  # the frame Dynamo compiled: its function, file and first line
    compiled_origin: str | None  # whose code that is when not the user's: "library code" (user_locations.code_origin)
    called_from: UserLocation | None  # when it is not the user's: the innermost frame of theirs that led to it
    failed_at: UserLocation | None  # the line of the user's code where the compile failed, when known
    error: CompileError | None = None
    # Where the frame compiled is torch's wrapper of a user's function (compiled_frames.wrapped_function): that
    # function, at the line of it the log names
    wraps: UserLocation | None = None
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    restart_reasons: list[str] = field(default_factory=list)  # only where no graph break explains the restart
    recompile: FailedGuard | None = None  # the guard whose failure caused this compilation
    # What the Recompiles section says of it beyond the guard (RecompileStep.also_changed, expected_text): what else
    # changed since the compile whose guard failed, the first LISTED, then how many more and the rest (the page folds
    # them under it, as the insights page does), and whether it was expected or avoidable
    recompile_notes: list[str] = field(default_factory=list)
    recompile_more: str | None = None  # "and 63 more also changed since [0/0]"
    recompile_rest: list[str] = field(default_factory=list)
    recompile_expected: str | None = None
    total_s: float | None = None  # the compilation (all its attempts), as the compile-time analysis measured it
    # STILL_COMPILING where the log ends during its compilation (any attempt of it): total_s is only so far
    unfinished: str | None = None
    # What its card on the index says of that: the attempt the log ends during is still compiling; one restarted
    # before it, that its next attempt is (its status's help says that attempt compiled the frame)
    unfinished_note: str | None = None
    timed_with: str | None = None  # without a time of its own: the compilation whose records its records repeat
    phases: list[tuple[str, float]] = field(default_factory=list)  # (label, seconds), biggest first, zeros left out
    backward_s: float | None = None  # of total_s, its backward's compile (compile_time.CompileTime.backward_s)
    # The frame's compile time as torch's compilation_metrics give it (name, seconds), beside total_s: the report counts
    # from torch's timing events (the outermost `dynamo` event, every attempt, the backward), as every page does; the
    # metric times the frame's compile alone, so the two differ (comp_failure.log: 163 ms, and 157 ms logged)
    logged_time: tuple[str, float] | None = None
    # The checkpoint calls its graph captured and what its backward recomputes; None where it checkpoints nothing
    checkpointing: CompileCheckpointing | None = None
    caches: list[tuple[str, str]] = field(default_factory=list)  # (cache label, "miss" / "miss, hit")
    # (file, line, this run's line) of each line its cache hit's graphs name where this run's code is on another
    # (cached_lines.moved_lines): the cached code was compiled from an older version of the file
    moved_lines: list[tuple[str, int, int]] = field(default_factory=list)
    sizes: list[tuple[str, str, Any]] = field(default_factory=list)  # (label for one, for several, value), logged ones
    subclass_inputs: list[str] = field(default_factory=list)  # SUBCLASS_INPUT_NOTE of each desugared subclass input
    searches: list[TemplateSearch] = field(default_factory=list)  # max-autotune's searches in this compilation
    cudagraphs: CudaGraphCompile | None = None  # its CUDA graph recordings, or why it ran without them
    # What torch printed about a graph of it never recorded (analyses/torch_warnings.py), when the run recorded it
    cudagraphs_warning: str | None = None
    # The backward graph compiled autograd captured that this compile id is (its capture, [!1/-/-]) or compiles
    backward_graph: BackwardGraph | None = None
    code_roles: dict[int, str] = field(default_factory=dict)  # output code artifact number -> forward/backward/inference
    runtime_records: dict[int, RuntimeRecord] = field(default_factory=dict)  # by artifact number (runtime_records)
    ddp_splits: list[DdpSplit] = field(default_factory=list)  # its graphs DDPOptimizer split, each compiled in parts
    # The custom ops' calls its AOTAutograd graphs left out (op_mutations.DroppedCall): its code does not run them
    dropped_calls: list[DroppedCall] = field(default_factory=list)
    metrics: MetricGroups = field(default_factory=MetricGroups)
    # The id torch logged ("[0/0]") where the reader numbered it on after torch._dynamo.reset() (or as another
    # process's), and why (RENUMBERED_NOTE, OTHER_PROCESS_NOTE)
    logged_as: str | None = None
    renumbered_note: str | None = None
    # The compiles torch logged with this one's id after a reset or in another process ("[3/0]"...), and what the
    # page says of them
    also_logged: list[str] = field(default_factory=list)
    also_logged_note: str | None = None

    @property
    def moved_note(self) -> str | None:
        """What the cache row says where the cached code's line comments are of an older file."""
        if not self.moved_lines:
            return None
        files = list(dict.fromkeys(path for path, _, _ in self.moved_lines))
        said = []
        for path in files:
            pairs = [(old, new) for p, old, new in self.moved_lines if p == path][:_MOVED_SHOWN]
            more = ", ..." if sum(p == path for p, _, _ in self.moved_lines) > _MOVED_SHOWN else ""
            said.append(f"{os.path.basename(path)} (its lines {', '.join(str(old) for old, _ in pairs)}{more} are this "
                        f"run's {', '.join(str(new) for _, new in pairs)}{more})")
        return (f"The cached code's line comments (its graphs' # File: lines, its kernels' stack traces) are of an older "
                f"version of {and_list(said)}, as the run that filled the cache had it; the report places its ops "
                "and kernels on this run's lines, where Dynamo's graph of this compile puts the same code.")

    def to_json(self) -> dict[str, Any]:
        return {
            "compile_id": self.compile_id, "logged_as": self.logged_as, "also_logged": self.also_logged,
            "status": self.status, "outcome": self.outcome,
            "compiled": self.compiled.to_json() if self.compiled else None, "compiled_origin": self.compiled_origin,
            "called_from": self.called_from.to_json() if self.called_from else None,
            "wraps": self.wraps.to_json() if self.wraps else None,
            "failed_at": self.failed_at.to_json() if self.failed_at else None,
            "error": self.error.to_json() if self.error else None,
            "graph_breaks": [b.reason for b in self.graph_breaks], "restart_reasons": self.restart_reasons,
            "recompile": self.recompile.to_json() if self.recompile else None,
            "total_s": self.total_s, "backward_s": self.backward_s, "unfinished": self.unfinished is not None,
            "logged_time": {"metric": self.logged_time[0], "seconds": self.logged_time[1]} if self.logged_time else None,
            "checkpointing": self.checkpointing.to_json() if self.checkpointing else None, "phases": [{"phase": p, "seconds": s} for p, s in self.phases],
            "caches": dict(self.caches),
            "moved_lines": [{"file": path, "cached_line": old, "line": new} for path, old, new in self.moved_lines],
            "sizes": {many: value for _, many, value in self.sizes}, "subclass_inputs": self.subclass_inputs,
            "code_roles": {str(n): r for n, r in self.code_roles.items()},
            "backward_graph": self.backward_graph.to_json() if self.backward_graph else None,
            "ddp_splits": [split.to_json() for split in self.ddp_splits],
            "dropped_calls": [d.to_json() for d in self.dropped_calls],
        }


# The metrics that time a frame's compile alone, in seconds or microseconds, the first one logged taken: torch 2.6's
# failed compiles log no entire_frame_compile_time_s, only dynamo_cumulative_compile_time_us.
_MOVED_SHOWN = 6  # moved lines a cache row names per file
_FRAME_TIME_METRICS = (("entire_frame_compile_time_s", 1.0), ("dynamo_cumulative_compile_time_us", 1e-6))


def logged_compile_time(metrics: Mapping[str, Any]) -> tuple[str, float] | None:
    """(metric, seconds) of the frame's compile time as compilation_metrics logs it; None where it logs none."""
    for name, scale in _FRAME_TIME_METRICS:
        value = metrics.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return name, value * scale
    return None


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {} or value == "{}"


class MetricRows(Sequence[tuple[str, Any]]):
    """A group's rows, (name, value) in the order shown, read from the metrics record as they are written:
    the summaries keep about sixty rows a compile, for every compile until its page is written. Equal to the
    list of pairs it reads as, and saved as that list (model/codec.py)."""

    __slots__ = ("_metrics", "_names")

    def __init__(self, metrics: Mapping[str, Any], names: tuple[str, ...]):
        self._metrics = metrics
        self._names = names  # (shared by the compiles whose groups hold the same names: _Shared)

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [(name, self._metrics[name]) for name in self._names[index]]
        name = self._names[index]
        return name, self._metrics[name]

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        metrics = self._metrics
        return ((name, metrics[name]) for name in self._names)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (MetricRows, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def codec_plain(self) -> list[tuple[str, Any]]:
        return list(self)

    def __repr__(self) -> str:
        return repr(self.codec_plain())


class _Shared:
    """What the summaries of one log share: each distinct tuple of a group's names, and the cut of each long
    text or list value (the config dumps every record repeats are one object: model/builder.py share_long_texts)."""

    def __init__(self) -> None:
        self.names: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.cuts: dict[int, tuple[Any, LongMetric | None]] = {}  # id(value) -> (value, its cut): value kept alive

    def long_metric(self, value: Any) -> LongMetric | None:
        if type(value) is not str and type(value) is not list:  # (a list: inductor_provenance, cut for two uses)
            return long_metric(value)
        found = self.cuts.get(id(value))
        if found is None:
            found = self.cuts[id(value)] = (value, long_metric(value))
        return found[1]


def metric_groups(metrics: Mapping[str, Any], cut_long: bool = False, shared: _Shared | None = None,
                  record: tuple[Compile, int] | None = None) -> MetricGroups:
    """The metrics by group; with cut_long, the head and size of each value too long for the compile's page. record:
    the compile and the number of the metrics record, to find the long values its other artifacts hold."""
    result = MetricGroups()
    groups: dict[str, list[str]] = {name: [] for name, _ in _METRIC_GROUPS}
    groups["Other"] = []
    for key in sorted(metrics):
        if key in LEADING_KEYS:
            continue
        value = metrics[key]
        if _empty(value):
            result.empty.append(key)
            continue
        group = next((name for name, match in _METRIC_GROUPS if match(key)), "Other")
        groups[group].append(key)
    shared = shared or _Shared()
    if record is not None:
        result.elsewhere = _shown_elsewhere(metrics, *record, shared)
    for name, names in groups.items():
        if names:
            kept = shared.names.setdefault(tuple(names), tuple(names))
            result.groups.append((name, MetricRows(metrics, kept)))
    result.stacks = {key: frames for key in STACK_METRICS
                     if key not in LEADING_KEYS and (frames := metric_stack(metrics.get(key))) is not None}
    result.tracebacks = {key: tracebacks for key in TRACEBACK_METRICS
                         if key not in LEADING_KEYS and (tracebacks := metric_tracebacks(metrics.get(key))) is not None}
    if cut_long:  # (a stack is shown whole, as every page shows a stack: a traceback's frames too, its text folded)
        result.long = {key: cut for names in groups.values() for key in names
                       if key not in result.stacks and key not in result.tracebacks and key not in result.elsewhere
                       and (cut := shared.long_metric(metrics[key])) is not None}
    return result


def _shown_elsewhere(metrics: Mapping[str, Any], entry: Compile, number: int,
                     shared: _Shared) -> dict[str, MetricElsewhere]:
    """The long values of the metrics record `number` that the compile's artifacts logged with it hold: those after
    its previous metrics record and before it (a compile's backward graph is often compiled at its first run, after
    the compile's record, and its kernels are in the backward's record)."""
    found = {}
    for key, name in SHOWN_ELSEWHERE.items():
        if key not in metrics:
            continue
        after = max((a.number for a in entry.artifacts if a.display == METRICS and a.number < number), default=-1)
        holders = [a.number for a in entry.artifacts if a.name == name and after < a.number < number]
        # (none logged: the record is the only place that shows it, whole)
        if holders and (cut := shared.long_metric(metrics[key])) is not None:
            found[key] = MetricElsewhere(cut=cut, name=name, artifacts=holders)
    return found


# What a runtime metrics record times (torch/_dynamo/utils.py, at a compiled graph's run), in the words the pages use.
_RUNTIME_TIMES = {"runtime_triton_autotune_time_us": "Triton autotuning",
                  "runtime_cudagraphify_time_us": "CUDA-graph set-up"}
RUNTIME_METRICS = ("compilation_metrics_runtime", "bwd_compilation_metrics_runtime")


@dataclass
class RuntimeRecord:
    """One runtime metrics record of a compile: work done when its graph ran, not while it compiled (Triton kernels
    benchmarked at their first run, CUDA graphs set up), which its page leads with."""

    direction: str  # "forward" | "backward": the record's kind (bwd_...), else its is_forward
    nth: int  # its place among the compile's records of that direction, from 1
    of: int
    timings: list[tuple[str, float]] = field(default_factory=list)  # (what, seconds): each one not zero, then "in all"

    @property
    def heading(self) -> str:
        """What tells it from the compile's other runtime pages: "forward, record 1 of 2"."""
        return self.direction + (f", record {self.nth} of {self.of}" if self.of > 1 else "")


def runtime_records(entry: Compile) -> dict[int, RuntimeRecord]:
    """The compile's runtime metrics records, by artifact number: each one's direction decided once, here."""
    records = [(a, _runtime_direction(a)) for a in entry.artifacts if a.kind in RUNTIME_METRICS]
    result = {}
    for direction in ("forward", "backward"):
        alike = [a for a, d in records if d == direction]
        for nth, artifact in enumerate(alike, 1):
            result[artifact.number] = RuntimeRecord(direction, nth, len(alike), _runtime_timings(artifact))
    return result


def _runtime_direction(artifact: Artifact) -> str:
    forward = artifact.kind == RUNTIME_METRICS[0] and (artifact.data or {}).get("is_forward") is not False
    return "forward" if forward else "backward"


def _runtime_timings(artifact: Artifact) -> list[tuple[str, float]]:
    metrics = artifact.data if isinstance(artifact.data, Mapping) else {}
    timings = []
    for key in sorted(metrics):
        us = metrics[key]
        if key.startswith("runtime_") and key.endswith("_time_us") and isinstance(us, (int, float)) and us > 0:
            timings.append((_RUNTIME_TIMES.get(key, key), us / 1e6))
    total = metrics.get("duration_us")
    if isinstance(total, (int, float)) and total > 0 and len(timings) != 1:
        timings.append(("in all", total / 1e6))
    return timings


@dataclass
class RuntimeRecordsOwner:
    """A restarted attempt whose runtime metrics records belong to the attempt that compiled: torch names the compile
    of such a record without its attempt ("1/1"), so it is filed, as tlparse files it, under the restarted attempt
    [1/1], which never ran; the graph that ran is [1/1_1]'s. Their pages stay where tlparse puts them (its
    compile_directory.json); the pages of both attempts say whose they are."""

    filed_under: Compile  # the restarted attempt, [1/1]
    compiled: Compile  # the attempt that compiled, [1/1_1]

    @property
    def records(self) -> list[Artifact]:
        return [a for a in self.filed_under.artifacts if a.kind in RUNTIME_METRICS]


def runtime_records_owners(trace: Trace) -> list[RuntimeRecordsOwner]:
    """Each restarted attempt that holds runtime metrics records, with the attempt of its compilation that compiled
    (status.compiled_attempts): gpt2_train's [1/0] and [1/1], compiled in [1/0_1] and [1/1_1]."""
    attempts = compiled_attempts(trace)
    by_key = {entry.key: entry for entry in trace.compiles.values() if entry.compile_id is not None}
    owners = []
    for entry in by_key.values():
        compiled = by_key.get(attempts.get(entry.key, entry.key))
        if compiled is not None and compiled is not entry and any(a.kind in RUNTIME_METRICS for a in entry.artifacts):
            owners.append(RuntimeRecordsOwner(entry, compiled))
    return owners


def _metrics_record(entry: Compile) -> tuple[Compile, int] | None:
    """The compile and the number of its compilation_metrics record, the last one (its metrics; None: it has none)."""
    number = next((a.number for a in reversed(entry.artifacts) if a.kind == "compilation_metrics"), None)
    return (entry, number) if number is not None else None


def metric_pages(trace: Trace) -> dict[int, MetricGroups]:
    """The groups of each metrics page no compile summary leads with, by artifact number: the backward's and runtime
    records, and the compilation metrics outside any compile id (strict torch.export's). Whole: a page of its own."""
    return {a.number: metric_groups(a.data or {}, record=(entry, a.number)) for entry in trace.compiles.values()
            for a in entry.artifacts if a.display == METRICS and (a.kind != "compilation_metrics" or entry.compile_id is None)}


def code_roles(entry: Compile) -> dict[int, str]:
    """forward / backward / inference for each output code of the compile.

    Inductor compiles the forward before compilation_metrics is logged and, lazily,
    the backward after it (at the first .backward()). A compile with no backward graph
    is an inference graph. Two codes before the metrics mean both were compiled eagerly.
    """
    names = {a.name for a in entry.artifacts} | {a.kind for a in entry.artifacts}
    training = "aot_backward_graph" in names or bool(entry.bwd_metrics)
    before: list[int] = []
    after: list[int] = []
    seen_metrics = False
    for artifact in entry.artifacts:
        if artifact.kind == "compilation_metrics":
            seen_metrics = True
        elif artifact.kind == OUTPUT_CODE:
            (after if seen_metrics else before).append(artifact.number)
    roles: dict[int, str] = {}
    if not training:
        roles.update((n, "inference" if len(before) + len(after) == 1 else f"graph {i}")
                     for i, n in enumerate(before + after, 1))
        return roles
    for i, number in enumerate(before):
        roles[number] = "backward" if i == 1 and not after else "forward"
    roles.update((n, "backward") for n in after)
    return roles


def _outcome(status: str, error: CompileError | None, graph_breaks: list[GraphBreak], restarts: list[str],
             compiled: UserLocation | None, cid: CompileId, retry: str | None, unfinished: bool = False) -> str:
    """One line; retry: the attempt after this one, when Dynamo restarted this one ("[0/0_1]" for [0/0]); unfinished:
    the log ends during the compilation (this attempt, or the retry of a restarted one)."""
    label = STATUS_LABELS[status].capitalize()  # ("compiled" counts a card; "Compiled" opens the page's outcome)
    if status == ERROR and error is not None:
        if error.skipped_frame is not None:  # (no exception: Dynamo gave the frame up and it ran eagerly)
            return f"Failed in {error.stage_label}: {error.skipped_text}"
        return f"Failed in {error.stage_label}" + (" (torch fell back to eager for this frame)" if error.fell_back else "")
    still = unfinished and status == MISSING  # (the attempt the log ends during: no metrics because it never finished)
    if still:
        label += f": {STILL_COMPILING}"
    if retry and unfinished:  # (the retry never finished: "compiled the frame again" would say it did)
        again = f"Dynamo began compiling the frame again as {retry}, which was {STILL_COMPILING}"
    else:
        again = f"Dynamo compiled the frame again as {retry}" if retry else "Dynamo analysed the frame again"
    if graph_breaks or restarts:
        breaks = _breaks_text(graph_breaks, restarts, compiled)
        if status == RESTARTED:  # (nothing was compiled in this attempt: its retry compiled the frame)
            return f"{label} ({breaks}): {again}"
        if status == BREAK:
            return f"{label} ({breaks}): the graph was split"
        if restarts or cid.attempt:  # (an empty graph or a failure, in the attempt after a restart)
            return f"{label}{',' if still else ''} after a restart ({breaks})"
        # Dynamo compiled the graph up to the break and resumed after it, in this same attempt (no [0/0_1]).
        return f"{label}: the graph was split ({breaks}), without a restart"
    if status == RESTARTED:
        return f"{label}: {again}"
    return label


def _retries(trace: Trace) -> dict[CompileId, str]:
    """Each attempt that has a next one ([0/0] -> "[0/0_1]"): Dynamo restarted it."""
    ids = {cid for cid in trace.compiles if cid is not None}
    return {cid: str(later) for cid in ids if isinstance(cid.attempt, int)
            and (later := replace(cid, attempt=cid.attempt + 1)) in ids}


def _breaks_text(graph_breaks: list[GraphBreak], restarts: list[str], compiled: UserLocation | None) -> str:
    """"graph break at line 22" (in the compiled frame's file), "graph break at other.py:7", "2 graph breaks"."""
    n = len(graph_breaks) or len(restarts)
    if n == 1 and graph_breaks and graph_breaks[0].location is not None:
        where = graph_breaks[0].location
        same_file = compiled is not None and compiled.filename == where.filename
        return f"graph break at {f'line {where.line}' if same_file else where.short}"
    return f"{n} graph break{'s' if n != 1 else ''}"


def _renumbered_note(trace: Trace, logged: str, other_process: RenumberedOtherProcess | None = None) -> str:
    """RENUMBERED_NOTE (OTHER_PROCESS_NOTE for another process's compile), naming the function whose compile has
    the logged id in the report."""
    earlier = trace.compiles.get(CompileId.parse(logged))
    name = (earlier.metrics or {}).get("co_name") if earlier is not None else None
    if other_process is not None:
        before = (f" (here, {logged} is {name}'s compile, of the log's first process)"
                  if isinstance(name, str) and name else "")
        pid = f" (pid {other_process.pid})" if other_process.pid is not None else ""
        return OTHER_PROCESS_NOTE.format(logged=logged, pid=pid, before=before)
    before = f" (here, {logged} is {name}'s compile, before any reset)" if isinstance(name, str) and name else ""
    return RENUMBERED_NOTE.format(logged=logged, before=before)


def _also_logged_note(trace: Trace, key: str, others: list[str], note: str = ALSO_LOGGED_NOTE) -> str:
    """ALSO_LOGGED_NOTE (or note), naming the functions those compiles were of ("poly's [3/0], [4/0] and [5/0]")."""
    by_name: dict[str, list[str]] = {}
    for cid in others:
        entry = trace.compiles.get(CompileId.parse(cid))
        name = (entry.metrics or {}).get("co_name") if entry is not None else None
        by_name.setdefault(name if isinstance(name, str) and name else "", []).append(cid)
    named = and_list([f"{possessive(name) + ' ' if name else ''}{and_list(cids)}" for name, cids in by_name.items()])
    return note.format(others=named, key=key, those="one of those" if len(others) > 1 else "that one")


def _add_recompile_notes(summary: CompileSummary, step: RecompileStep) -> None:
    """What the Recompiles section says of the step beyond its guard, as the compile's page shows it."""
    since = f"also changed since {step.guard.compilation}: " if step.guard else None  # (as recompile_more says it)
    summary.recompile_notes = [since + c.text for c in step.also_changed_listed.items] if since else []
    summary.recompile_more = step.also_changed_more_text
    summary.recompile_rest = [since + c.text for c in step.also_changed_rest] if since and summary.recompile_more else []
    summary.recompile_expected = step.expected_text


def compile_summaries(trace: Trace, statuses: dict[CompileId | None, str], ins: Insights) -> dict[str, CompileSummary]:
    errors = {e.compile_id: e for e in ins.errors.errors}
    breaks: dict[str, list[GraphBreak]] = {}
    for b in ins.graph_breaks.breaks:
        for key in b.compile_ids:
            breaks.setdefault(key, []).append(b)
    # A recompile's step is its last attempt ([1/1_1], restarted after a graph break), yet [1/1] is the compile the
    # failed guard created: every attempt of it says why it was compiled.
    guards = {compilation_key(CompileId.parse(step.compile_id)): step.guard
              for frame in ins.recompiles.frames for step in frame.steps}
    recompile_steps = {compilation_key(CompileId.parse(step.compile_id)): step
                       for frame in ins.recompiles.frames for step in frame.steps}
    times = {c.compile_id: c for c in ins.compile_time.compiles}
    unfinished = {c.compile_id for c in ins.compile_time.compiles if c.unfinished}
    caches = {c.compile_id: c for c in ins.caches.compiles}
    searches: dict[str, list[TemplateSearch]] = {}  # by compilation, as chromium events name it ("[0/1]")
    for search in ins.autotuning.searches:
        searches.setdefault(search.compile_id, []).append(search)
    graphed = {c.compile_id: c for c in ins.cudagraphs.compiles}
    backward = {cid: g for g in ins.recompiles.backward_graphs for cid in g.compile_ids}
    checkpointed = {c.compile_id: c for c in ins.checkpointing.compiles}
    dropped: dict[str, list[DroppedCall]] = {}
    for call in ins.op_mutations.dropped:
        dropped.setdefault(call.compile_id, []).append(call)

    frames = CompiledFrames(trace)
    retries = _retries(trace)
    logged_as = {r.compile_id: r.logged_as for r in ins.recompiles.after_reset}
    also_logged: dict[str, list[str]] = {}
    for r in ins.recompiles.after_reset:
        also_logged.setdefault(r.logged_as, []).append(r.compile_id)
    other_process = {r.compile_id: r for r in ins.recompiles.other_process}
    logged_as.update({key: r.logged_as for key, r in other_process.items()})
    also_logged_elsewhere: dict[str, list[str]] = {}
    for elsewhere_id, renumbered in other_process.items():
        also_logged_elsewhere.setdefault(renumbered.logged_as, []).append(elsewhere_id)
    # Torch logs a compilation's metrics once, with its last attempt ([1/0_1] after a restart), timing all its attempts
    # as the compile time row does: each attempt's page names that figure, not only the attempt that logged it.
    logged_times: dict[str, tuple[str, float]] = {}
    for entry in trace.compiles.values():
        logged = logged_compile_time(entry.metrics or {}) if entry.compile_id is not None else None
        if logged is not None:
            logged_times[compilation_key(entry.compile_id)] = logged
    result: dict[str, CompileSummary] = {}
    shared = _Shared()
    for entry in trace.compiles.values():
        if entry.compile_id is None:
            continue
        key = entry.key
        metrics = entry.metrics or {}
        compilation = compilation_key(entry.compile_id)
        error = errors.get(key)
        graph_breaks = breaks.get(compilation, []) if ins.graph_breaks.source == "dynamo_graph_break_reason" else []
        restarts = [] if graph_breaks else [str(r) for r in metrics.get("restart_reasons") or []]
        compiled = frames.compiled(entry.compile_id)
        origin = code_origin(compiled.filename) if compiled else None
        called_from = frames.library_caller(entry.compile_id)
        status = statuses.get(entry.compile_id, "missing")
        retry = retries.get(entry.compile_id)
        ends_during = compilation in unfinished
        summary = CompileSummary(
            compile_id=key, status=status, outcome=_outcome(status, error, graph_breaks, restarts, compiled, entry.compile_id,
                                                          retry, ends_during),
            compiled=compiled, compiled_origin=origin, called_from=called_from,
            failed_at=error.location if error is not None and error.location_kind == "failure" else None,
            error=error, wraps=wrapped_function(trace, entry), graph_breaks=graph_breaks, restart_reasons=restarts,
            recompile=guards.get(compilation),
            code_roles=code_roles(entry), runtime_records=runtime_records(entry),
            metrics=metric_groups(metrics, cut_long=True, shared=shared, record=_metrics_record(entry)),
        )
        if (step := recompile_steps.get(compilation)) is not None:
            _add_recompile_notes(summary, step)
        timed = times.get(compilation)
        summary.timed_with = ins.compile_time.repeats.get(compilation)
        if timed is not None:
            summary.total_s = timed.total_s
            summary.backward_s = timed.backward_s
            summary.logged_time = logged_times.get(compilation)
            summary.phases = sorted(((ins.compile_time.labels[p], timed.phases.get(p, 0.0)) for p, _ in PHASES
                                     if timed.phases.get(p, 0.0) > 0), key=lambda ps: -ps[1])
        if ends_during:
            summary.unfinished = STILL_COMPILING
            if status == MISSING:
                summary.unfinished_note = STILL_COMPILING
            elif status == RESTARTED and retry:
                summary.unfinished_note = f"its next attempt, {retry}, was {STILL_COMPILING}"
        cached = caches.get(key)
        if cached is not None:
            summary.caches = [(label, outcome) for cache, label in CACHES.items() if (outcome := cached.outcome(cache))]
        summary.moved_lines = moved_lines(trace, entry)
        summary.sizes = [(one, many, metrics[k]) for one, many, k in SIZE_KEYS if not _empty(metrics.get(k))]
        summary.subclass_inputs = subclass_input_notes(entry)
        summary.searches = searches.get(compilation, [])
        summary.cudagraphs = graphed.get(key)
        if summary.cudagraphs is not None and summary.cudagraphs.never_recorded:
            summary.cudagraphs_warning = ins.cudagraphs.never_recorded_warning
        summary.backward_graph = backward.get(key)
        summary.checkpointing = checkpointed.get(key)
        summary.ddp_splits = ddp_splits(entry)
        summary.dropped_calls = dropped.get(key, [])
        summary.logged_as = logged_as.get(key)
        if summary.logged_as is not None:
            summary.renumbered_note = _renumbered_note(trace, summary.logged_as, other_process.get(key))
        after_reset, elsewhere = also_logged.get(key, []), also_logged_elsewhere.get(key, [])
        summary.also_logged = after_reset + elsewhere
        notes = ([_also_logged_note(trace, key, after_reset)] if after_reset else []) + (
            [_also_logged_note(trace, key, elsewhere, ALSO_LOGGED_OTHER_PROCESS_NOTE)] if elsewhere else [])
        summary.also_logged_note = " ".join(notes) or None
        result[key] = summary
    return result

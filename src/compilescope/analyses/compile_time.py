"""Compile time: total and per compile id, split by phase, and the timeline of each compilation.

The chromium events (`dynamo_timed` B/E pairs) nest; each moment of a compilation
is charged to the innermost event running then, and that event's name decides
the phase (unknown names inherit their parent's phase). The events are streamed
once with a stack, so deep or huge logs cost no recursion and little memory.
Compilations without chromium events fall back to the times in compilation_metrics.
A compilation logged again (the same events, at the same times, under another compile id) is counted once.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import field
from typing import Any, Iterable, Iterator

from ..model.ids import NO_COMPILE_ID, CompileId, compilation_key
from ..model.trace import BENCHMARK_EVENT_SUFFIXES, FUSION_BENCHMARK_EVENTS, Compile, Trace
from ..model.records import dataclass
from ..wording import Listed, cut, format_seconds
from .aoti import COMPILE_EVENT as AOTI_COMPILE_EVENT, Aoti
from .compiled_frames import (CompiledFrames, WrappedModule, module_label, self_is_module, wrapped_by_passing_on,
                              wrapped_function, wrapper_module)
from .installed_guards import GuardTrees
from .user_locations import UserLocation, code_origin, export_call, is_framework_file, section, traceback_frames
from .graph_breaks.resume_names import function_label
from .fx_sites import first_fx_source_comment

PHASES: tuple[tuple[str, str], ...] = (
    ("dynamo", "Dynamo tracing"),
    ("guards", "Guard building"),
    ("aot", "AOTAutograd"),
    ("compiled_autograd", "Compiled autograd capture"),  # tracing a backward into a graph ([!N], before Dynamo)
    ("inductor_passes", "Inductor FX passes"),
    ("inductor_codegen", "Inductor lowering & codegen"),
    ("kernel_compile", "C++/Triton compile"),
    # AOTInductor building its package (AotCodeCompiler.compile) outside the compiler runs it times (compile_file):
    # 45.2 s of aoti_deploy_cuda_dynamic's 61.2 s on torch 2.11 CUDA, in gaps of ~4 s between its runs, which torch
    # times under no event of its own. Not lowering & codegen (GraphLowering.codegen took 1.3 s there), whose
    # compile_to_fn it is under.
    ("aoti_package", "AOTInductor package build"),
    # Inductor choosing code by running it (analyses/autotuning.py): max-autotune's searches (their candidates'
    # compiles included), fusions benchmarked both ways, Triton kernels' launch configs benchmarked, at compile time
    # or at a kernel's first run. GPU time, not compiling: without this phase it read as codegen and Triton compile.
    ("autotune", "Autotuning"),
    # Importing the compiled module and the kernels it loads (PyCodeCache.load_by_key_path), outside any compiler run
    # (compile_file, async_compile): with a warm cache, the whole of what Inductor does for a graph it finds cached.
    ("kernel_load", "Loading compiled kernels"),
    ("cache", "Cache lookup & load"),
    # The backend's time not in a phase above (a custom backend's whole compile, Inductor's set-up), and hashing the
    # installed torch and Triton for the keys of the caches Inductor will use (inductor_codecache_torch_key,
    # CacheBase.get_system.triton_key: once a process, 0.12-0.33 s for torch on the 2.13/2.14 logs, 0.51 s for
    # importing and hashing Triton on 2.14's CUDA build), wherever torch runs it: no lookup, so not "Cache lookup &
    # load", whose change would then read as a cache's.
    ("backend", "Backend compiler"),
    ("other", "Other"),
)
PHASE_LABELS = dict(PHASES)

_EXACT: dict[str, str | None] = {
    "dynamo": "dynamo", "entire_frame_compile": "dynamo", "bytecode_tracing": "dynamo",
    "insert_deferred_runtime_asserts": "dynamo", "compile_inner": "dynamo",
    "build_guards": "guards",
    "backend_compile": "backend",
    "entire_backward_compile": "aot", "create_aot_dispatcher_function": "aot", "aot_collect_metadata": "aot",
    "aot_trace_joint_graph": "aot", "min_cut_rematerialization_partition": "aot",
    "_recursive_pre_grad_passes": "inductor_passes", "_recursive_joint_graph_passes": "inductor_passes",
    "_recursive_post_grad_passes": "inductor_passes", "additional_fake_tensor_prop": "inductor_passes",
    "inductor_compile": "inductor_codegen", "fx_codegen_and_compile": "inductor_codegen", "code_gen": "inductor_codegen",
    "compile_file": "kernel_compile", "PyCodeCache.load_by_key_path": "kernel_load",
    **dict.fromkeys(FUSION_BENCHMARK_EVENTS, "autotune"),
    # Hashing the installed torch and Triton (importing it first: 2.14's CUDA build took 0.51 s where 2.13's CPU build,
    # with no Triton, took 0.1 ms) for the caches' keys: the backend's work, not a lookup (PHASES), one phase for both
    # wherever torch calls them (backend_compile in 2.13/2.14; Scheduler.codegen, inductor_compile in tlparse's logs).
    "inductor_codecache_torch_key": "backend",
    "CacheBase.get_system.triton_key": "backend",
    "gc": "other",
    "compiled_autograd": "compiled_autograd",
}
_PREFIXES = (
    ("compile_attempt_", "dynamo"),
    ("aot_", "aot"),
    ("compile_fx.<locals>.", "aot"),  # fw_compiler_base / bw_compiler wrap Inductor
    ("pass.", "inductor_passes"),
    ("GraphLowering.", "inductor_codegen"),
    ("Scheduler.", "inductor_codegen"),
    ("PythonWrapperCodegen", "inductor_codegen"),
    ("CppWrapper", "inductor_codegen"),
    ("TritonBundler.", "inductor_codegen"),
    ("AotCodeCompiler.", "aoti_package"),
    ("async_compile", "kernel_compile"),
    ("CachingAutotuner.", "autotune"),
    ("triton", "kernel_compile"),
    ("CacheBase.", "cache"),
    ("AOTAutogradCache.", "cache"),
    ("FxGraphCache.", "cache"),
)
BACKWARD_ROOT = "entire_backward_compile"
# What a compile the log ends during is said to be, where a finished one "took" its time: its time is only so far.
STILL_COMPILING = "still compiling when the log ended"


def phase_of(name: str) -> str | None:
    """The phase an event name belongs to, or None to inherit the enclosing event's."""
    if name in _EXACT:
        return _EXACT[name]
    if name.endswith(BENCHMARK_EVENT_SUFFIXES):  # "addmm_template_autotuning", "mm_template_precompiling"
        return "autotune"
    for prefix, phase in _PREFIXES:
        if name.startswith(prefix):
            return phase
    return None


@dataclass
class Segment:
    """One phase's span within a timeline row."""

    # Kept by the thousand (a row has a segment per phase change). Declared here, not by slots=True, which
    # makes the class a second time at import (start-up).
    __slots__ = ("phase", "start_s", "duration_s")

    phase: str
    start_s: float  # since the row started
    duration_s: float

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "start_s": round(self.start_s, 6), "duration_s": round(self.duration_s, 6)}


@dataclass
class TimelineRow:
    """One outermost compile event (a compilation or its backward) on the timeline, split into phases."""

    label: str  # "[0/0]" or "[0/0] backward"
    compile_id: str | None
    start_s: float  # since the first event of the log
    duration_s: float
    segments: list[Segment] = field(default_factory=list)
    incomplete: bool = False  # an event never ended (crash, or the log was cut)
    # Where incomplete: the phase of the innermost event still open where the log ends (begun, never ended), which the
    # compile was in. Not the last segment's: that is the last event that ended where the log ends right after an end
    # (a compile_file inside Scheduler.codegen) or none where it ends right after a begin.
    open_phase: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "compile_id": self.compile_id, "start_s": round(self.start_s, 6),
                "duration_s": round(self.duration_s, 6), "incomplete": self.incomplete,
                "open_phase": self.open_phase, "segments": [s.to_json() for s in self.segments]}


@dataclass
class CompileTime:
    """Where one compile id's time went, by phase."""

    compile_id: str
    name: str | None  # co_name
    total_s: float
    phases: dict[str, float]  # every phase key, seconds
    source: str  # "chromium_events" | "compilation_metrics"
    # An export-only log's rows are its strict torch.export calls (all outside any compile id): the user's call each
    # times, and the model's line its Dynamo trace names (where it failed, else its graph's first); name is its function.
    export_call: UserLocation | None = None
    traced: UserLocation | None = None
    # Of total_s, the backward's compile (AOTAutograd compiles it lazily, when backward first runs through the
    # graph); None where the log times no backward of it
    backward_s: float | None = None
    # Its kernel compile's name where its own events name it otherwise than the log's label: SOURCE_COMPILE_LABEL
    # where they are all compile_file (simple.log's time outside any compile, in a log of Triton kernels)
    kernel_compile_label: str | None = None
    # Where its function is defined (co_filename, co_firstlineno), set only where another row of the table names a
    # function defined elsewhere alike (Model.forward and Block.forward are both "forward"): what tells them apart
    defined_at: UserLocation | None = None
    # The log ends during it (unfinished_compiles): total_s is the time it had run so far, not what it took
    unfinished: bool = False
    # Where its frame is not the user's code (transformers' wrapped_func, torch's wrapper of a module): the user's line
    # that called it, as the recompiles and graph breaks sections say it (CompiledFrames.library_caller)
    called_from: UserLocation | None = None
    # Where its frame is not the user's code (called_from) and runs a module's forward: the frame's local that is
    # the module, "fn" or "args[0]" of a wrapper around it (compiled_frames.wrapper_module), "self" of a library's
    # forward, which findings name `model`; None otherwise (a wrapper's `args[0]` may be a tensor, and torch's
    # optimizer `wrapper`'s an optimizer: its guard tree types none of them as a module)
    model_local: str | None = None

    def phase_label(self, phase: str, labels: dict[str, str]) -> str:
        """The phase's name for this compile: the log's (labels), or its own kernel compile's."""
        return self.kernel_compile_label if phase == "kernel_compile" and self.kernel_compile_label else labels[phase]

    @property
    def function_text(self) -> str:
        """Its function_label, with the model's line an export's trace names: "forward (line 16)" in the file of its
        call, else "forward (model.py:16)"; where another row's function has its name, where it is defined."""
        if self.traced is None:
            where = [self.defined_at.short] if self.defined_at is not None else []
            where += [f"called at {self.called_from.short}"] if self.called_from is not None else []
            return self.function_label + (f" ({', '.join(where)})" if where else "")
        same = self.export_call is not None and self.export_call.filename == self.traced.filename
        return f"{self.function_label} ({f'line {self.traced.line}' if same else self.traced.short})"

    @property
    def label(self) -> str:
        """What the row is: its compile id, or the user's torch.export call ("export_strict_several.py:37")."""
        return self.export_call.short if self.export_call is not None else self.compile_id

    @property
    def function_label(self) -> str:
        """Its function as the report names it: a resume function as the rest of the function it resumes; compiled
        autograd's capture of a backward ([!0/-/-]: no frame, no function of its own) as what it does."""
        if self.name is None and self.compile_id.startswith("[!") and self.compile_id.endswith("/-/-]"):
            return f"compiled autograd capturing the backward graph {self.compile_id.removesuffix('/-/-]')}]"
        return function_label(self.name)

    @property
    def unfinished_text(self) -> str | None:
        """STILL_COMPILING where the log ends during it (its total is only so far), else None."""
        return STILL_COMPILING if self.unfinished else None

    @property
    def top_phase(self) -> str | None:
        phase = max(self.phases, key=lambda p: self.phases[p]) if self.phases else None
        return phase if phase and self.phases[phase] > 0 else None

    def to_json(self) -> dict[str, Any]:
        found = {"compile_id": self.compile_id, "name": self.name, "total_s": round(self.total_s, 6),
                 "top_phase": self.top_phase, "source": self.source,
                 "phases": {p: round(s, 6) for p, s in self.phases.items()},
                 "backward_s": round(self.backward_s, 6) if self.backward_s is not None else None,
                 "unfinished": self.unfinished}
        if self.defined_at is not None:
            found["defined_at"] = self.defined_at.to_json()
        found["called_from"] = self.called_from.to_json() if self.called_from is not None else None
        if self.export_call is not None:
            found["export_call"] = self.export_call.to_json()
            found["traced"] = self.traced.to_json() if self.traced is not None else None
        return found


@dataclass
class PhaseTime:
    """One phase's time summed over the log, and its share of the total."""

    phase: str
    label: str
    seconds: float
    share: float  # of the total, 0..1

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "label": self.label, "seconds": round(self.seconds, 6), "share": round(self.share, 4)}


TIMELINE_ROWS = 60  # the timeline rows a chart draws at most (CompileTimes.timeline_shown)
TABLE_ROWS = 20  # the slowest compilations a page's table lists (compiles_listed; --json has them all)


@dataclass
class CompileTimes:
    """Compile time of the whole log: by phase, by compile id and as a timeline."""

    total_s: float = 0.0
    phases: list[PhaseTime] = field(default_factory=list)  # biggest first, zero phases left out
    compiles: list[CompileTime] = field(default_factory=list)  # slowest first
    # Every outermost event (a compilation, or its backward), in start order. Which a chart draws: timeline_shown;
    # where, the renderer's layout (render/charts.py).
    timeline: list[TimelineRow] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=lambda: dict(PHASE_LABELS))
    # A compile id whose records repeat another compilation's -> that one ("[0/2]" -> "[0/1]"): its time is counted
    # there, once (the peer multi_rank_runtime logs repeat [0/1]'s records under [0/2] and [0/3]).
    repeats: dict[str, str] = field(default_factory=dict)
    # Every compile in the log is torch.export's (ExportReport.only, set by as_export_time): its time is strict
    # export's Dynamo trace, and the user ran no torch.compile, so the report speaks of exports.
    export_only: bool = False
    # The absolute time (s) the timeline starts at, its rows' start_s are from: what places a row among the records.
    origin_s: float | None = None

    def __bool__(self) -> bool:
        return bool(self.compiles)

    @property
    def all_ended(self) -> bool:
        """Every compile the log began ended: no compile id left unfinished, and no outermost event left open, such as
        an AOTInductor package's compile_fx_aot, which has no compile id (a crash that follows came after the build)."""
        return not any(c.unfinished for c in self.compiles) and not any(r.incomplete for r in self.timeline)

    @property
    def heading(self) -> str:
        return "Export time" if self.export_only else "Compile time"

    @property
    def timeline_text(self) -> str:
        """What a timeline row is."""
        if self.export_only:  # (non-strict export runs forward in Python: torch logs no timed event for it)
            return "Each strict torch.export's Dynamo trace from its start (non-strict export logs no times)"
        return "Each compilation from its start"

    @property
    def slowest_heading(self) -> str:
        return "By torch.export call" if self.export_only else "Slowest compilations"

    @property
    def first_column(self) -> str:
        """What a row of the table is named by."""
        return "torch.export call" if self.export_only else "compile id"

    @property
    def compile_ids(self) -> int:
        """How many compile ids the time is spread over (the time outside any compile, NO_COMPILE_ID, is not one)."""
        return sum(1 for c in self.compiles if c.compile_id != NO_COMPILE_ID)

    @property
    def compiles_listed(self) -> Listed[CompileTime]:
        """The slowest compilations a page's table lists, and how many more there are."""
        return cut(self.compiles, TABLE_ROWS)

    def timeline_shown(self, rows: int = TIMELINE_ROWS) -> list[TimelineRow]:
        """The timeline rows a chart draws: the `rows` slowest, in start order (a long run has thousands; the table of
        compilations lists every one)."""
        return sorted(sorted(self.timeline, key=lambda r: -r.duration_s)[:rows], key=lambda r: r.start_s)

    @property
    def slowest(self) -> CompileTime | None:
        """The slowest compile (never the time outside any compile)."""
        return next((c for c in self.compiles if c.compile_id != NO_COMPILE_ID), None)

    @property
    def totals_note(self) -> str | None:
        """Why a compilation's total (the slowest compilations) is more than its row of the timeline, with the slowest
        such compilation for an example; None where each compilation is one row. The timeline draws each outermost
        event apart: GPT-2's [0/0] is a row of 8.50 s, its benchmarking eight more, its total 8.80 s."""
        rows: dict[str, list[TimelineRow]] = {}
        for row in self.timeline:
            if row.compile_id is not None:
                rows.setdefault(row.compile_id, []).append(row)
        split = next((c for c in self.compiles if len(rows.get(c.compile_id, ())) > 1), None)
        if split is None:
            return None
        longest = max(r.duration_s for r in rows[split.compile_id])
        return (f"A compilation's total adds up its rows of the timeline (its backward and the benchmarking after it "
                f"are rows of their own): {split.compile_id} took {format_seconds(split.total_s)} in all, its longest "
                f"row {format_seconds(longest)}.")

    def seconds_of(self, compile_ids: Iterable[str]) -> float:
        """The compile time of these compile ids ("[1/2]", or "[1/4_0]" with its attempt: the same compile), each
        once: what a frame's recompiles cost, say."""
        wanted = {compilation_key(cid) for cid in compile_ids}  # times are per compilation
        return sum(c.total_s for c in self.compiles if c.compile_id in wanted)

    def to_json(self) -> dict[str, Any]:
        return {"total_s": round(self.total_s, 6), "phases": [p.to_json() for p in self.phases],
                "compiles": [c.to_json() for c in self.compiles], "timeline": [r.to_json() for r in self.timeline]}


class _Open:
    __slots__ = ("name", "phase", "compile_id")

    def __init__(self, name: str, phase: str, compile_id: str | None):
        self.name, self.phase, self.compile_id = name, phase, compile_id


def finite_number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def event_compile_id(value: Any) -> str | None:
    """A chromium event's `args.compile_id` ("0/1"); None outside any compile, which torch writes as "None"
    (str(None), e.g. a file compiled for the cache). Compiled autograd's capture of a backward, "!1", is the
    compile id "!1/-/-" everywhere else (its envelopes carry no frame)."""
    if value is None or value == "None":
        return None
    text = str(value)
    return f"{text}/-/-" if text[:1] == "!" and text[1:].isdigit() else text


def event_compile_label(value: Any) -> str:
    """The same compile id as reports name it: "[0/1]", NO_COMPILE_ID outside any compile."""
    return _label(event_compile_id(value))


def outside_name(rows: list[TimelineRow]) -> str:
    """What the time outside any compile id is, by torch's outermost events there, with how many of each: simple.log's
    1.89 s are three `compile_file` events (torch running a system compiler on a source file) logged before Dynamo's
    first compile, not a function's compile."""
    counts: dict[str, int] = {}
    for row in rows:
        if row.compile_id is None:
            event = row.label.removeprefix(NO_COMPILE_ID).strip() or "dynamo"
            counts[event] = counts.get(event, 0) + 1
    events = ", ".join(f"{event} ×{n}" if n > 1 else event for event, n in counts.items())
    return f"outside any compile ({events})"


def _label(compile_id: str | None) -> str:
    return f"[{compile_id}]" if compile_id else NO_COMPILE_ID


def _rows(events: Iterable[dict]) -> tuple[list[TimelineRow], float | None]:
    """Stream B/E events into rows (one per outermost event) of exclusive, phase-tagged segments."""
    rows: list[TimelineRow] = []
    # An outermost event met again (same name, start, track and compile id) is the same compilation logged again,
    # not a second one: the peer multi_rank_runtime logs repeat [0/1]'s events word for word under [0/2] and [0/3].
    # Its whole row is skipped; the names open in it, per track, close it. (Kept per row, not per event: rows are few.)
    row_starts: set[tuple] = set()
    relogged: dict[tuple, list[str]] = {}
    stacks: dict[tuple, list[_Open]] = {}
    current: dict[tuple, TimelineRow] = {}
    last_ts: dict[tuple, float] = {}
    row_start: dict[int, float] = {}  # id(row) -> absolute start
    first_ts: float | None = None
    end_ts: float | None = None

    def charge(track: tuple, until: float) -> None:
        stack, row = stacks.get(track), current.get(track)
        if not stack or row is None:
            return
        start = last_ts[track]
        if until <= start:
            return
        phase = stack[-1].phase
        offset = start - row_start[id(row)]
        segs = row.segments
        if segs and segs[-1].phase == phase and abs(segs[-1].start_s + segs[-1].duration_s - offset) < 1e-9:
            segs[-1].duration_s += until - start
        else:
            segs.append(Segment(phase, offset, until - start))

    phases: dict[str, str | None] = {}  # event name -> phase_of(name): a log has few names, each met thousands of times
    for event in events:
        if not isinstance(event, dict):
            continue
        get = event.get
        ph, name, ts = get("ph"), get("name"), get("ts")
        if (ph != "B" and ph != "E") or not isinstance(name, str):
            continue
        # (A finite float, as torch logs it, is its own _number: x - x is 0.0 only for a finite x.)
        if type(ts) is not float or ts - ts != 0.0:
            ts = finite_number(ts)
            if ts is None:
                continue
        ts /= 1e6
        if first_ts is None or ts < first_ts:
            first_ts = ts
        if end_ts is None or ts > end_ts:
            end_ts = ts
        track = (get("pid"), get("tid"))
        if relogged and track in relogged:
            skipped = relogged[track]
            if ph == "B":
                skipped.append(name)
            elif name in skipped:
                while skipped.pop() != name:
                    pass
                if not skipped:
                    del relogged[track]
            continue
        stack = stacks.setdefault(track, [])
        if ph == "B":
            args = get("args")
            if not isinstance(args, dict):
                args = {}
            if stack:
                charge(track, ts)
            parent = stack[-1] if stack else None
            cid = event_compile_id(args.get("compile_id")) or (parent.compile_id if parent else None)
            if not stack:
                start = (name, ts, track, cid)
                if start in row_starts:
                    relogged[track] = [name]
                    continue
                row_starts.add(start)
            phase = phases[name] if name in phases else phases.setdefault(name, phase_of(name))
            phase = phase or (parent.phase if parent else "other")
            if parent is not None and parent.phase == "autotune":
                # What a benchmark runs is the benchmark's: CPU max-autotune compiles each C++ GEMM candidate with g++
                # (compile_file) inside its search, 11.7 s of cpu_autotune.log's 12.1 s fc1 search: charged to C++
                # compile, the candidates' compiles read as the model's, and autotuning as 2% of the compile.
                phase = "autotune"
            if not stack:
                label = _label(cid) + (" backward" if name == BACKWARD_ROOT else "" if name == "dynamo" else f" {name}")
                row = TimelineRow(label, _label(cid) if cid else None, 0.0, 0.0)
                row_start[id(row)] = ts
                rows.append(row)
                current[track] = row
            stack.append(_Open(name, phase, cid))
            last_ts[track] = ts
        else:
            for opened in stack:
                if opened.name == name:
                    break
            else:
                continue  # an end without a begin: ignore it
            charge(track, ts)
            last_ts[track] = ts
            while stack and stack.pop().name != name:
                pass
            if not stack:
                row = current.pop(track)
                row.duration_s = ts - row_start[id(row)]
    for track, row in current.items():  # never ended: cut at the last timestamp of the log
        if end_ts is not None:
            charge(track, end_ts)
            row.duration_s = end_ts - row_start[id(row)]
        row.incomplete = True
        row.open_phase = stacks[track][-1].phase if stacks.get(track) else None
    for row in rows:
        row.start_s = row_start[id(row)] - first_ts
    return rows, first_ts


# The kernels Inductor's output code defines (`name = async_compile.cpp_pybinding(...)`), by the compiler that builds
# them: g++ for C++ (CPU), Triton for GPU, other (CUTLASS, Halide). Searched as bytes, chunk by chunk: output code can
# be the largest payload of a log, and is never held whole for this.
_KERNEL_CALLS = ((b"async_compile.cpp", "cpp"), (b"async_compile.triton(", "triton"), (b"async_compile.cuda(", "other"),
                 (b"async_compile.halide(", "other"), (b"async_compile.rocm(", "other"))
_LONGEST_CALL = max(len(needle) for needle, _ in _KERNEL_CALLS)
_CPP_WRAPPER = '"cpp_wrapper": true'  # in compilation_metrics' inductor_config: a C++ wrapper, g++ even on a GPU
# AOTInductor's code (graph_dump records, not inductor_output_code): a C++ wrapper and kernel file, built by the C++
# compiler (compile_file) whatever the device; a CUDA package's Triton kernels are embedded in its wrapper as comments
# (peer inductor_provenance_aot_cuda_log), a CPU package's kernels are C++ (extern "C" cpp_fused_*).
AOT_CODE_DUMPS = frozenset({"inductor_aot_wrapper_code", "inductor_aot_kernel_code"})
_AOT_KERNEL_CALLS = ((b"@triton.jit", "triton"),)
KERNEL_COMPILE_LABELS = {frozenset({"cpp"}): "C++ compile", frozenset({"triton"}): "Triton compile"}
# torch's compile_file event times a system compiler run on a source file (cpp_builder's compile command in 2.13, g++;
# CUDACodeCache's nvcc in older torch), never Triton: where the output code shows no C++ kernel, its time is this.
SOURCE_COMPILE_EVENT = "compile_file"
SOURCE_COMPILE_LABEL = "C++/CUDA compile"


def kernel_compile_events(trace: Trace) -> dict[str, set[str]]:
    """Per compile key (NO_COMPILE_ID outside any), the names of the events that start its kernel compile time."""
    found: dict[str, set[str]] = {}
    for _ in _noting_kernel_compiles(trace.compile_timeline_events(), found):
        pass
    return found


def _noting_kernel_compiles(events: Iterable[dict], found: dict[str, set[str]]) -> Iterator[dict]:
    """events, each noted in found as kernel_compile_events notes it as it passes: compile_times reads the log's
    begin and end events (Trace.compile_timeline_events) once for its rows and these (each read parses its JSON line again)."""
    for event in events:
        name = event.get("name")
        if event.get("ph") == "B" and isinstance(name, str) and phase_of(name) == "kernel_compile":
            key = event_compile_id((event.get("args") or {}).get("compile_id")) or NO_COMPILE_ID
            found.setdefault(key, set()).add(name)
        yield event


def kernel_compilers(trace: Trace) -> frozenset[str]:
    """The kernel compilers the log's output code shows ran: "cpp", "triton", "other" (CUTLASS, Halide); empty where
    the log holds no output code."""
    found: set[str] = set()
    for entry in trace.compiles.values():
        config = (entry.metrics or {}).get("inductor_config")
        if isinstance(config, str) and _CPP_WRAPPER in config:
            found.add("cpp")
        for artifact in entry.artifacts:
            aot = artifact.name in AOT_CODE_DUMPS
            if artifact.payload is None or not (aot or artifact.name.startswith("inductor_output_code")):
                continue
            if aot:
                found.add("cpp")
            calls = _AOT_KERNEL_CALLS if aot else _KERNEL_CALLS
            tail = b""  # the end of the chunk before, so that a call split between two chunks is found
            for chunk in trace.payload_chunks(artifact.payload):
                data = tail + chunk
                found.update(kind for needle, kind in calls if kind not in found and needle in data)
                tail = data[-_LONGEST_CALL:]
    return frozenset(found)


def phase_labels(trace: Trace, events: dict[str, set[str]] | None = None) -> dict[str, str]:
    """The phases' labels for this log: the kernel compile named by the compiler its output code shows ("C++ compile"
    on a CPU-only run, "Triton compile" on a GPU run with no C++ kernel); "C++/Triton compile" where both ran, or the
    log does not say. A compile_file event (events: kernel_compile_events) is a C++ or CUDA compile whatever the
    output code shows: SOURCE_COMPILE_LABEL where every kernel compile event is one, else C++ beside Triton."""
    labels = dict(PHASE_LABELS)
    compilers = kernel_compilers(trace)
    names = set().union(*(events if events is not None else kernel_compile_events(trace)).values())
    if SOURCE_COMPILE_EVENT in names and "cpp" not in compilers:
        labels["kernel_compile"] = SOURCE_COMPILE_LABEL if names == {SOURCE_COMPILE_EVENT} else PHASE_LABELS[
            "kernel_compile"]
    else:
        labels["kernel_compile"] = KERNEL_COMPILE_LABELS.get(compilers, labels["kernel_compile"])
    return labels


def compile_times(trace: Trace, guard_trees: GuardTrees | None = None) -> CompileTimes:
    """guard_trees: the log's, parsed once for the report (a wrapper frame's module is typed by its tree)."""
    events: dict[str, set[str]] = {}  # kernel_compile_events(trace), noted as _rows reads the events
    rows, origin = _rows(_noting_kernel_compiles(trace.compile_timeline_events(), events))
    by_compile: dict[str, dict[str, float]] = {}
    backward: dict[str, float] = {}  # of each compile's time, that of its backward's rows (entire_backward_compile)
    for row in rows:
        key = row.compile_id or NO_COMPILE_ID
        phases = by_compile.setdefault(key, {p: 0.0 for p, _ in PHASES})
        for seg in row.segments:
            phases[seg.phase] += seg.duration_s
        if row.compile_id is not None and row.label == f"{row.compile_id} backward":
            backward[key] = backward.get(key, 0.0) + sum(seg.duration_s for seg in row.segments)

    names: dict[str, str | None] = {}
    # A compile that failed before Dynamo named it (the recompile limit: co_name null) is still its frame's: the
    # function its frame's other compiles name.
    frame_of: dict[str, tuple] = {}
    frame_names: dict[tuple, str] = {}
    frame_code: dict[tuple, UserLocation] = {}  # frame -> its code object's file and first line (compilation_metrics)
    compiles: list[CompileTime] = []
    listed: set[str] = set()  # keys of compiles: a set kept, not rebuilt per compile (quadratic in compiles)
    repeats: dict[str, str] = {}
    modules: dict[tuple, WrappedModule | None] = {}  # frame -> wrapper_module's answer
    runs: dict[tuple, str | None] = {}  # frame -> the user's function it passes its arguments on to, where no module
    model_locals: dict[tuple, str | None] = {}  # frame -> CompileTime.model_local
    compile_ids: dict[str, CompileId] = {}  # "[0/1]" -> its compile id (attempt 0's, where several)
    frame_compiles: dict[tuple, list[Compile]] = {}  # frame -> its compiles, made at the first `inner`

    def frame_entries(frame: tuple) -> list[Compile]:
        if not frame_compiles:  # (once: a scan per `inner` frame was quadratic in its resets)
            for e in trace.compiles.values():
                if e.compile_id:
                    frame_compiles.setdefault((e.compile_id.compiled_autograd_id, e.compile_id.frame_id), []).append(e)
        return frame_compiles.get(frame, [])
    for entry in trace.compiles.values():
        if entry.compile_id is None:
            continue
        key = entry.compile_id.compilation  # as chromium events name it
        compile_ids.setdefault(key, entry.compile_id)
        metrics = entry.metrics or {}
        frame_of[key] = (entry.compile_id.compiled_autograd_id, entry.compile_id.frame_id)
        wrapped = wrapped_function(trace, entry)  # (torch's wrapper of a user's function: named by the user's)
        name = wrapped.function if wrapped is not None else metrics.get("co_name")
        if name is None and not metrics and entry.stack:
            # (a compile the log ends in has no metrics, torch's co_name: its dynamo_start's stack ends in its frame)
            name = entry.stack[-1].name
        # (torch's wrapper of a module the user compiled, or a library's decorator around its forward: named by the
        # module, once per frame)
        if name == "inner" or (wrapped is None and isinstance(metrics.get("co_filename"), str)
                               and code_origin(metrics["co_filename"]) == "library code"):
            if frame_of[key] not in modules:
                guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)
                modules[frame_of[key]] = wrapper_module(trace, frame_entries(frame_of[key]), guard_trees)
            module = modules[frame_of[key]]
            if module is None and frame_of[key] not in runs:  # (a wrapper of the user's function: named by it)
                passed_to = wrapped_by_passing_on(frame_entries(frame_of[key]), guard_trees)
                runs[frame_of[key]] = passed_to.function if passed_to is not None else None
            name = module_label(module.cls) if module else runs.get(frame_of[key]) or name
        if name:
            names[key] = name
            frame_names.setdefault(frame_of[key], name)
        if metrics.get("co_filename") and isinstance(metrics.get("co_firstlineno"), int) and wrapped is None:
            frame_code.setdefault(frame_of[key], UserLocation(str(metrics["co_filename"]), metrics["co_firstlineno"],
                                                              name or None))
        if key in by_compile or not metrics or key in listed:
            continue
        repeated = _repeated(metrics, key, by_compile, listed)
        if repeated is not None:
            repeats[key] = repeated
            continue
        phases = _metrics_phases(metrics)
        if phases is not None:
            listed.add(key)
            compiles.append(CompileTime(key, names.get(key), sum(phases.values()), phases, "compilation_metrics"))
    if NO_COMPILE_ID in by_compile:
        names[NO_COMPILE_ID] = outside_name(rows)
    for key, phases in by_compile.items():
        compiles.append(CompileTime(key, names.get(key), sum(phases.values()), phases, "chromium_events",
                                    backward_s=backward.get(key)))
    for found in compiles:
        if found.name is None and frame_of.get(found.compile_id) in frame_names:
            found.name = frame_names[frame_of[found.compile_id]]
    compiles.sort(key=lambda c: -c.total_s)
    _place_alike_names(compiles, {key: frame_code[f] for key, f in frame_of.items() if f in frame_code})
    frames = CompiledFrames(trace)
    for found in compiles:
        if found.compile_id in compile_ids:
            found.called_from = frames.library_caller(compile_ids[found.compile_id])
        frame = frame_of.get(found.compile_id)
        if found.called_from is not None and frame is not None:
            if frame not in model_locals:  # (the module a wrapper runs, else a library's forward's own self)
                wrapper = modules.get(frame)
                guard_trees = guard_trees if guard_trees is not None else GuardTrees(trace)
                model_locals[frame] = wrapper.local if wrapper is not None else (
                    "self" if self_is_module(guard_trees, frame_entries(frame)) else None)
            found.model_local = model_locals[frame]

    total = sum(c.total_s for c in compiles)
    sums = {p: sum(c.phases.get(p, 0.0) for c in compiles) for p, _ in PHASES}
    labels = phase_labels(trace, events)
    for found in compiles:
        if events.get(found.compile_id) == {SOURCE_COMPILE_EVENT} and labels["kernel_compile"] != "C++ compile":
            found.kernel_compile_label = SOURCE_COMPILE_LABEL
    phases = [PhaseTime(p, labels[p], s, s / total if total else 0.0)
              for p, s in sorted(sums.items(), key=lambda kv: -kv[1]) if s > 0]
    times = CompileTimes(total, phases, compiles, sorted(rows, key=lambda r: r.start_s), labels=labels,
                         repeats=repeats, origin_s=origin)
    unfinished = {cid for cid, _ in unfinished_compiles(trace, times)}
    for found in compiles:
        found.unfinished = found.compile_id in unfinished
    return times


def _place_alike_names(compiles: list[CompileTime], code: dict[str, UserLocation]) -> None:
    """Sets defined_at on the rows whose function's name another row's function, defined elsewhere, shares: two
    frames' `forward`s are two functions (a frame recompiled is one, and stays as it is)."""
    placed = [(c, c.function_text) for c in compiles if c.compile_id in code and c.name and c.traced is None]
    by_text: dict[str, set[tuple[str, int]]] = {}
    for c, text in placed:
        by_text.setdefault(text, set()).add(code[c.compile_id].key)
    for c, text in placed:
        if len(by_text[text]) > 1:
            c.defined_at = code[c.compile_id]


# The outermost event of strict torch.export's Dynamo trace (torch/export/_trace.py), outside any compile id.
STRICT_EXPORT_EVENT = "fullgraph_capture"


def as_export_time(times: CompileTimes, trace: Trace) -> None:
    """The compile time of a log whose every compile is torch.export's, told in export words: strict export's
    Dynamo trace is its timeline's row, not "[-/-] fullgraph_capture"; and the time outside any compile id is one
    row per strict torch.export call (export_calls_times), not all of them added up under NO_COMPILE_ID."""
    from .compile_errors import EXPORT_STRICT_LABEL  # (compile_errors imports this module: the label is its failures' too)

    times.export_only = True
    for row in times.timeline:
        if row.compile_id is None and row.label == f"{NO_COMPILE_ID} {STRICT_EXPORT_EVENT}":
            row.label = EXPORT_STRICT_LABEL
    outside = next((c for c in times.compiles if c.compile_id == NO_COMPILE_ID), None)
    calls = export_calls_times(trace, times) if outside is not None else []
    if calls:
        left = {p: max(outside.phases.get(p, 0.0) - sum(c.phases.get(p, 0.0) for c in calls), 0.0) for p, _ in PHASES}
        rest = [CompileTime(NO_COMPILE_ID, None, sum(left.values()), left, outside.source)] if sum(left.values()) > 1e-6 else []
        times.compiles = sorted([c for c in times.compiles if c is not outside] + calls + rest, key=lambda c: -c.total_s)


def export_calls_times(trace: Trace, times: CompileTimes) -> list[CompileTime]:
    """Each strict torch.export call's time, from its compilation_metrics (no compile id, a Python stack through the
    user's call; Compile.earlier_metrics keeps each): the timeline's rows outside any compile id that start within
    its start_time_us..end_time_us, by phase; else its own times. Its records (each trace counts its frames from 0
    again: every call's are [0/0]'s) are those logged after the call before it and up to its metrics."""
    from .compile_errors import EXPORT_STRICT_LABEL  # (compile_errors imports this module)
    calls = [(entry, call) for entry in trace.metrics_compiles(sort=False)
             if entry.compile_id is None and entry.metrics is not None
             and (call := export_call(entry.metrics_stack)) is not None]
    # Several calls' rows would read alike on the timeline: each is named by its call, as the table names it.
    several = len({call.key for _, call in calls}) > 1
    found: list[CompileTime] = []
    outside_rows = [r for r in times.timeline if r.compile_id is None]
    # Each row's absolute start, sorted, with its place among outside_rows: a call's rows are found by bisection (a
    # scan per call made a log of many exports quadratic) and summed in the timeline's order, as before.
    starts = sorted((times.origin_s + r.start_s, i) for i, r in enumerate(outside_rows)) if times.origin_s is not None else []
    start_values = [at for at, _ in starts]
    traced_lines = _TracedLines(trace)
    after = 0  # the line of the call before's metrics
    for entry, call in calls:
        metrics = entry.metrics or {}
        line = next((a.lineno for a in reversed(entry.artifacts) if a.kind == "compilation_metrics"), entry.first_lineno)
        start, end = finite_number(metrics.get("start_time_us")), finite_number(metrics.get("end_time_us"))
        phases = {p: 0.0 for p, _ in PHASES}
        timed = False
        if start is not None and end is not None and times.origin_s is not None:
            # (torch takes the metrics' start a little before it logs the trace's first event)
            lo = bisect.bisect_left(start_values, start / 1e6 - _SLACK_S)
            hi = bisect.bisect_right(start_values, end / 1e6)
            for i in sorted(i for _, i in starts[lo:hi]):
                timed = True
                if several and outside_rows[i].label == EXPORT_STRICT_LABEL:
                    outside_rows[i].label = f"{EXPORT_STRICT_LABEL}, the call at {call.short}"
                for seg in outside_rows[i].segments:
                    phases[seg.phase] += seg.duration_s
        if not timed:
            own = _metrics_phases(metrics) if metrics.get("entire_frame_compile_time_s") is not None else None
            if own is None and start is not None and end is not None and end >= start:
                backend = finite_number(metrics.get("backend_compile_time_s")) or 0.0
                own = {**phases, "dynamo": max((end - start) / 1e6 - backend, 0.0), "backend": backend}
            if own is None:
                after = line
                continue
            phases = own
        traced = traced_lines.find(metrics, after, line)
        found.append(CompileTime(NO_COMPILE_ID, traced.function if traced else None, sum(phases.values()), phases,
                                 "chromium_events" if timed else "compilation_metrics",
                                 export_call=call, traced=traced))
        after = line
    return found


_SLACK_S = 0.001


class _TracedLines:
    """The model's line a strict export's Dynamo trace names (find), from one index of the log's records by line:
    each call's records are those between two lines, and a scan of every record per call made a log of many
    exports quadratic."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        # (line, rank, record): rank is the order the records are tried in, within one call's lines: compile by
        # compile, its symbols and guards first, then its graphs.
        candidates: list[tuple[int, tuple[int, int, int], Any]] = []
        ranked = (entry for entry in trace.compiles.values() if entry.compile_id is not None)
        for n, entry in enumerate(ranked):
            for i, record in enumerate([*entry.symbols, *entry.guards_added]):
                candidates.append((record.get("lineno") or 0, (n, 0, i), record))
            for i, artifact in enumerate(entry.artifacts):
                if artifact.name == "dynamo_output_graph":
                    candidates.append((artifact.lineno, (n, 1, i), artifact))
        candidates.sort(key=lambda c: c[0])
        self.lines = [c[0] for c in candidates]
        self.candidates = candidates

    def find(self, metrics: dict, after: int, upto: int) -> UserLocation | None:
        """The outermost user frame of the failure's `from user code:` (functional_export.py's forward calls the
        model's), else of its symbols' and guards' user stacks, else its graph's first `# File:` line; records
        logged between lines after and upto are the trace's."""
        body = section(str(metrics.get("fail_reason") or ""), "from user code:")
        users = [f for f in traceback_frames(body or "") if not is_framework_file(f.filename)]
        if users:
            return users[0]
        lo, hi = bisect.bisect_right(self.lines, after), bisect.bisect_right(self.lines, upto)
        for _, rank, item in sorted(self.candidates[lo:hi], key=lambda c: c[1]):
            if rank[1] == 0:
                for frame in item.get("user_stack") or []:
                    if isinstance(frame, dict) and isinstance(frame.get("filename"), str) \
                            and not is_framework_file(frame["filename"]):
                        return UserLocation.from_frame(frame)
            else:
                m = first_fx_source_comment(self.trace.payload_text(item.payload))
                if m and not is_framework_file(m["file"]):
                    return UserLocation(m["file"], int(m["line"]), m["function"].strip())
        return None


def _repeated(metrics: dict, key: str, by_compile: dict[str, dict[str, float]], listed: set[str]) -> str | None:
    """The compilation whose metrics these are, logged again under this compile id, when its time is counted: their
    own compile_id names it (the peer multi_rank_runtime logs repeat [0/1]'s records, metrics included, under [0/2]
    and [0/3]). Torch writes that id with or without the attempt ("0/1", "0/1_1"): the same compile."""
    own = metrics.get("compile_id")
    parsed = CompileId.parse(own) if isinstance(own, str) else None
    if parsed is None:
        return None
    own_key = parsed.compilation
    return own_key if own_key != key and (own_key in by_compile or own_key in listed) else None


def _metrics_phases(metrics: dict) -> dict[str, float] | None:
    total = finite_number(metrics.get("entire_frame_compile_time_s"))
    if total is None:
        return None
    backend = finite_number(metrics.get("backend_compile_time_s")) or 0.0
    inductor = finite_number(metrics.get("inductor_compile_time_s")) or 0.0
    phases = {p: 0.0 for p, _ in PHASES}
    phases["dynamo"] = max(total - backend, 0.0)
    phases["backend"] = max(backend - inductor, 0.0)
    phases["inductor_codegen"] = inductor
    return phases


def unfinished_compiles(trace: Trace, times: CompileTimes) -> list[tuple[str, str | None]]:
    """Compile ids whose compile never finished: an event still open where the log ends, and no metrics (the program
    was stopped or crashed while compiling, or the log was cut). (compile id, the phase it was in)"""
    # By compilation, as the rows name it: a restarted attempt ([1/1]) logs none, the attempt after it ([1/1_1]) does
    finished = {cid.compilation for cid, entry in trace.compiles.items() if cid is not None and entry.metrics is not None}
    without_metrics = {cid.compilation for cid in trace.compiles if cid is not None} - finished
    # An AOTInductor package's build has no compile id (NO_COMPILE_ID, as its row of the compile times): its
    # compile_fx_aot left open is a build the log ends during, the program killed or crashed while building.
    return [(row.compile_id or NO_COMPILE_ID, row.open_phase)
            for row in times.timeline
            if row.incomplete and (row.compile_id in without_metrics or row.label == _AOTI_ROW)
            and not row.label.endswith("backward")]


_AOTI_ROW = f"{NO_COMPILE_ID} {AOTI_COMPILE_EVENT}"  # (the timeline's label of an AOTInductor compile)


def name_aoti_rows(times: CompileTimes, aoti: Aoti) -> None:
    """The timeline's rows of an AOTInductor package's build named as every table names it (Aoti.compile_name:
    "AOTInductor package of aoti_deploy.py:41"), not "[-/-] compile_fx_aot". After unfinished_compiles, which finds
    them by that label."""
    if not aoti.compiled:
        return
    for row in times.timeline:
        if row.compile_id is None and row.label == _AOTI_ROW:
            row.label = aoti.compile_name(NO_COMPILE_ID)


def ends_during(unfinished: list[tuple[str, str | None]], labels: dict[str, str], aoti: Aoti | None = None) -> str:
    """"during [0/3]'s Inductor lowering & codegen": where a log of unfinished compiles ends; in an AOTInductor
    package's build, "while building the AOTInductor package of aoti_deploy_cuda.py:40" (aoti: the log's, which names
    it as every report does: Aoti.compile_name), without its phase, which the name says already (the build's own,
    "AOTInductor package build", or "Other": compile_fx_aot alone still open)."""
    cid, phase = unfinished[0]
    if aoti is not None and aoti.said(cid) != cid:
        return f"while building {aoti.said(cid)}"
    return f"during {cid}'s {labels.get(phase, phase)}" if phase else f"while {cid} compiled"

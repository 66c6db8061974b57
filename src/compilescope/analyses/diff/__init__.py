"""What changed between two runs: `compilescope diff A B` and `compilescope check --baseline`.

Each side is first reduced to a `RunFacts` (plain, JSON-serialisable) taken from the
analyses its Results already hold (graph breaks, recompiles, compile time, caches,
dynamic shapes, failures); `diff_runs` then compares two RunFacts. Nothing here depends on ids
that change when anything changes:

- frames are matched by their code location (file, function, first line), never by
  frame id;
- FX graph nodes by (op, target, user line), never by the names FX generates;
- symbols by their source (L['x'].size()[0]), never by s0/s1;
- guard texts with object addresses and ids masked.

Timing differences under the noise threshold (TimeThreshold) are not changes.
The JSON document (`RunDiff.to_json`) is described in docs/diff-schema.md.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import asdict, field
from typing import TYPE_CHECKING, Any, Callable

import orjson

from ...model.ids import CompileId, compilation_key
from ...model.trace import Compile, Trace
from ..autotuning import config_items
from ..caches import CACHES, KERNELS_AGAIN_WORTH_SAYING_S, kernels_compiled_again
from ..compile_time import PHASE_LABELS, CompileTimes, ends_during
from ..crash import Crash
from ..cudagraphs import NEVER_RECORDED
from ..dynamic_shapes import number_text, placement_text, read_placement
from ..fx_sites import FX_NODE, FX_SOURCE_COMMENT, NODE_MAPPINGS, POST_GRAD
from ..compiled_frames import frame_function, module_label, wrapped_module
from ..graph_breaks import function_label, resume_of, skipped_text
from ..numpy_graphs import numpy_target
from ..provenance import KERNEL_STACK_TRACES, kernel_traces, kernel_work, text_lines
from ..status import MISSING, counts_text, status_counts
from ..unread import Unread
from ..torch_warnings import TorchWarnings, backward_error
from ..user_kernels import launch_words
from ..userloc import (UserLocation, called_at_text, code_origin, export_call, is_python_library_file, is_toolchain_file,
                      is_torch_file)
from ...wording import and_list, count, format_kernel_time, format_seconds, format_seconds_change, format_us, possessive, times
from ...model.records import dataclass

if TYPE_CHECKING:
    from ..results import Results

SCHEMA_VERSION = 1

# Config keys whose values name this machine or this run (paths, job ids), not a behaviour.
_VOLATILE_CONFIG = re.compile(r"(_dir$|_path$|^job_id$|cache_key_tag|_file$|^trace\.|worker_start_method|compile_threads)")
# Object ids / addresses in guard texts; not the digits of a fraction (`lr == 0.003333333333333333` is a value).
_ADDRESS = re.compile(r"(?<![\d.])(?:0x[0-9a-f]+|\d{7,})\b", re.I)
# A number in a guard's text: guards that differ only in one number are one guard failing at several values.
_GUARD_NUMBER = re.compile(r"(?<![\w.#])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])", re.I)
_CALL = re.compile(r"^(?P<target>[A-Za-z_][\w.]*)\(")
_INFIX = re.compile(r"^\S+\s+(?P<op>[-+*/@%&|^<>=!]+|//|\*\*)\s+\S+$")
_METHOD = re.compile(r"^[a-z_]\w*\.(?P<method>[A-Za-z_]\w*)\(")
# A user Triton kernel's launch in a Dynamo graph and the grid it is given: `triton_kernel_wrapper_mutation(kernel_idx = 0,
# ..., grid = [(floordiv, 1, 1)], ...)` (a list of tuples: one per config)
_LAUNCH_GRID = re.compile(r"^torch\.ops\.higher_order\.triton_kernel_wrapper_\w+\(.*?\bgrid = \[(?P<grid>[^\]]*)\]")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_KERNEL_DEF = re.compile(r"=\s*async_compile\.(?P<kind>cpp_pybinding|cpp|triton|cuda|halide)\(")
_SYMBOL = re.compile(r"\b[suf]\d+\b")  # generated symbol names (s0, s77, u0): not part of what a node is
_EXTERN = re.compile(r"\bextern_kernels\.(\w+)\(")
OUTPUT_CODE = "inductor_output_code"
FX_GRAPH = "dynamo_output_graph"


@dataclass(frozen=True)
class TimeThreshold:
    """A timing difference is a change only when it is at least `seconds` and the slower side took `ratio` times the faster.
    A difference of zero is never a change, whatever the threshold (0 seconds: any non-zero difference is one).

    Compile time of one program varies a lot between runs (the C++/Triton compiles compete
    with everything else on the machine): on a shared 2-core machine two runs of the same
    program (tests/data/torch213 diff_base, diff_base_again) took 37.6s and 16.2s (2.3x) in
    one generation of the fixtures and 44.1s and 30.3s in the next, so the default asks
    for 3x; on a quiet machine, --time-ratio 1.5 shows smaller changes.

    `check --baseline` fails on compile time by this same threshold, with the same options: a gate stricter than
    `diff` would fail CI on what `diff` calls noise, and such a gate gets switched off.
    """

    seconds: float = 1.0
    ratio: float = 3.0

    def significant(self, a: float, b: float) -> bool:
        slow, fast = max(a, b), min(a, b)
        return slow > fast and slow - fast >= self.seconds and (fast <= 0 or slow / fast >= self.ratio)

    @property
    def rule(self) -> str:
        """The rule in words, naming the options that set it (the same in `diff` and `check`)."""
        return (f"a timing difference counts as a change when it is at least {self.seconds:g}s (--time-threshold) "
                f"and the slower side took at least {self.ratio:g}x the faster (--time-ratio)")

    def not_a_change(self, what: str, a: float, b: float) -> str:
        """Why a difference that is not significant is no change, naming the test it failed: `compile time
        44.13s → 22.45s: the slower took 1.96x the faster, under the 3x that counts as a change (--time-ratio)`."""
        slow, fast = max(a, b), min(a, b)
        if slow - fast < self.seconds:
            why = f"less than the {self.seconds:g}s apart that counts as a change (--time-threshold)"
        else:
            # Rounded down: 2.999x printed as 3.00x would read as reaching a 3x ratio it did not reach.
            why = (f"the slower took {math.floor(slow / fast * 100) / 100:.2f}x the faster, under the {self.ratio:g}x "
                   "that counts as a change (--time-ratio)")
        return f"{what} {format_seconds(a)} → {format_seconds(b)}: {why}"

    def a_change(self, what: str, a: float, b: float) -> str:
        """Why a significant difference is a change, naming the options that set the threshold: `compile time
        1.42 s → 8.27 s (+6.85 s): the slower took 5.83x the faster, at least the 3x and 1s that count as a change
        (--time-ratio, --time-threshold)`."""
        slow, fast = max(a, b), min(a, b)
        if fast <= 0:  # from nothing, any ratio is reached: only the seconds count
            why = f"at least the {self.seconds:g}s that counts as a change (--time-threshold)"
        else:
            # Rounded down, as not_a_change does: never a ratio the difference did not reach.
            why = (f"the slower took {math.floor(slow / fast * 100) / 100:.2f}x the faster, at least the "
                   f"{self.ratio:g}x and {self.seconds:g}s that count as a change (--time-ratio, --time-threshold)")
        return f"{what} {format_seconds(a)} → {format_seconds(b)} ({format_seconds_change(b - a)}): {why}"


# Code torch generated is named per process (`<eval_with_key>.16`: the 16th FX module it printed): the same code
# has another number in another run.
_GENERATED_NUMBER = re.compile(r"^(<[\w ]+>)\.\d+$")


def frame_key(filename: str | None, function: str | None, first_line: int | None) -> str:
    if filename and filename.startswith("<"):
        filename = _GENERATED_NUMBER.sub(r"\1", filename)
    return f"{filename or '?'}:{first_line if first_line is not None else '?'} {function or '?'}"


def _mask(text: str) -> str:
    return _ADDRESS.sub("#", text)


# ---------------------------------------------------------------- one side


@dataclass
class GraphFacts:
    """One compiled graph, as Dynamo captured it: nodes as (op, target, user line), and its kernels."""

    # [op, target, "file:line" or None, code or None, grid_of], in graph order. grid_of: the target of the Triton kernel
    # launch whose grid the node computes (triton.cdiv's nodes, at Triton's line), which gives it the launch's line and
    # code; None for every other node (and absent from facts saved before it was kept)
    nodes: list[list[Any]]
    kernels: dict[str, int] | None  # kind -> generated kernels; None: no output code logged (e.g. a cache hit)
    extern_kernels: dict[str, int] | None
    # What each generated kernel computes, from torch's provenance (provenance.KernelWork): {"kernel", "ops", "lines",
    # "elsewhere"}, in call order; None: the log has no provenance of the graph (or facts saved before it was kept).
    kernel_work: list[dict[str, Any]] | None = None


@dataclass
class FrameFacts:
    key: str
    filename: str | None
    # As the report names it: torch's co_name, or "Sequential's forward" for torch's `inner` running a module (key
    # keeps torch's name)
    function: str | None
    first_line: int | None
    compile_ids: list[str] = field(default_factory=list)  # e.g. ["[0/0]", "[0/1]"]
    dirs: list[str] = field(default_factory=list)  # each compile id's directory in the report (links)
    statuses: list[str] = field(default_factory=list)
    # Of its compile ids, those that compiled and made no graph at all (the report's empty_graphs.no_graph): their
    # status is "ok", but nothing of them runs compiled. Empty in facts saved before they were kept.
    no_graph: list[str] = field(default_factory=list)
    guard_failures: list[str] = field(default_factory=list)  # masked failing guard texts, one per recompile
    # Of those, the ones that name a value Dynamo made a name for (a resume function's ___stack0): guard -> the guard
    # in the user's words (FailedGuard.described, masked), as the report shows it. Empty in facts saved before.
    guard_words: dict[str, str] = field(default_factory=dict)
    # Every guard torch lists as failed for a recompile, each cached compile's, not only the first (guard_failures):
    # masked text -> how many recompiles list it. A guard no longer first can fail still (the eval() compile's grad
    # mode, checked again when a later call misses). Empty in facts saved before.
    failed_anywhere: dict[str, int] = field(default_factory=dict)
    graphs: list[GraphFacts] = field(default_factory=list)  # in compile order
    compile_s: list[float] = field(default_factory=list)  # per compile id, in compile order
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase, the frame's compiles summed
    caches: dict[str, dict[str, int]] = field(default_factory=dict)  # cache -> outcome -> lookups, the frame's compiles
    # "export_constraints.py:63": the user's torch.export call whose strict (Dynamo) trace this frame is, where the log
    # says; None for torch.compile's frames.
    exported_at: str | None = None
    # "hf_llama.py:32, 39": the user's lines that called it, where it is not the user's code (a library's frame,
    # whether it recompiled, broke or compiled once), in the order its compiles came from them, worded as the report's
    # recompiles name it (userloc.called_at_text). Words only: frames are matched by key. "" in facts saved before it
    # was kept.
    called_at: str = ""

    @property
    def function_label(self) -> str:
        """Its function as the report names it: "f (after its graph break at line 33)" for Dynamo's resume function
        torch_dynamo_resume_in_f_at_33 (function keeps torch's name), "?" where the log names none. In text with
        brackets of its own: function_words."""
        return function_label(self.function) or "?"

    @property
    def label(self) -> str:
        """"f (diff_pair.py:30)": its function and where it starts, as a change's title names it ("f after its graph
        break (diff_pair.py:33)" for Dynamo's resume function torch_dynamo_resume_in_f_at_33); "f (diff_pair.py)"
        where the log names no first line (a compile cut before its metrics), "f" where it names no file; "wrapped_func
        (deprecation.py:121, called at hf_llama.py:32, 39)" where it is not the user's code."""
        return self.label_called(self.called_at)

    @property
    def function_words(self) -> str:
        """function_label without brackets, for text that adds its own in brackets: "f after its graph break at
        line 33" for Dynamo's resume function torch_dynamo_resume_in_f_at_33, not "f (after its graph break at line
        33) (diff_pair.py:33)"."""
        resumed = resume_of(self.function)
        return f"{resumed[0]} after its graph break at line {resumed[1]}" if resumed else self.function_label

    def label_called(self, called_at: str) -> str:
        """label, with called_at for where the user's code called it (both runs' calls: frames_label)."""
        exported = f", by strict torch.export at {self.exported_at}" if self.exported_at else ""
        called = f", called at {called_at}" if called_at else ""
        if not self.filename:
            return self.function_words + (f" (called at {called_at})" if called_at else "") + exported
        name = self.function_words
        resumed = resume_of(self.function)
        if resumed is not None and self.first_line == resumed[1]:  # (a resume function starts at its break's line)
            name = f"{resumed[0]} after its graph break"
        line = f":{self.first_line}" if self.first_line is not None else ""
        return f"{name} ({short_path(self.filename)}{line}{called}){exported}"

    @property
    def outcomes(self) -> str:
        """`2 compiled (1 after a restart), 1 failed`, `1 compiled, with no graph`: how its compiles ended, in the
        report's words (status.counts_text, with its cards' compiles that made no graph)."""
        return counts_text(Counter(self.statuses), len(self.no_graph))

    # Of its compile ids, those the recompiles analysis counts as recompiles (a step of its frame's chain: a guard
    # failed; a backward graph compiled autograd captured again), so that diff and check count what summary counts.
    # Not a function compiled from scratch again after torch._dynamo.reset() (first compiles of new frames: afresh).
    # Empty in facts saved before.
    recompile_ids: list[str] = field(default_factory=list)
    afresh: list[str] = field(default_factory=list)  # its first compiles after the first (recompiles.CompiledAfresh)
    # Of afresh, those a cache served (caches.reused_across_reset): reset() throws compiled functions away, not what
    # the caches hold, so such a compile loaded what one before the reset wrote. Empty in facts saved before.
    afresh_cached: list[str] = field(default_factory=list)

    # Of recompile_ids, those the recompiles analysis calls expected (RecompileStep.expected: eval()/train(), a layer
    # unfrozen): the rest are avoidable. Empty in facts saved before: every recompile counted avoidable.
    expected_recompile_ids: list[str] = field(default_factory=list)
    # Of recompile_ids, those the log cannot tell expected or avoidable (RecompileStep.unknown_settings: no guard tree
    # to compare settings with): not counted avoidable. Empty in facts saved before.
    unknown_recompile_ids: list[str] = field(default_factory=list)

    @property
    def recompiles(self) -> int:
        return len(self.recompile_ids)

    @property
    def avoidable_recompile_ids(self) -> list[str]:
        return [cid for cid in self.recompile_ids
                if cid not in self.expected_recompile_ids and cid not in self.unknown_recompile_ids]


def frames_label(a: FrameFacts, b: FrameFacts, sides: tuple[str, str] = ("A", "B")) -> str:
    """A frame both runs compiled, as a change's title names it: "wrapped_func (deprecation.py:121, called at
    hf_llama.py:32, 39 in A; hf_llama.py:32, 37 in B)" where the user's code called it from other lines in each
    (the fixed program calls generate() from another line): a's label alone would place B's calls at A's lines.
    a.label where both agree, or one run's facts do not say (saved before they kept it)."""
    if a.called_at == b.called_at or not a.called_at or not b.called_at:
        return a.label_called(a.called_at or b.called_at)
    return a.label_called(f"{a.called_at} in {sides[0]}; {b.called_at} in {sides[1]}")


@dataclass
class RunFacts:
    source: str
    torch_version: str | None
    config: dict[str, str]  # "inductor.fallback_random" -> JSON of the value (the first compile's)
    frames: dict[str, FrameFacts]  # by frame_key
    # {reason, file, line, function, code, count, frame, disabled, by_torch}: disabled, a torch.compiler.disable'd call
    # (GraphBreak.disabled), which runs eagerly on purpose; by_torch, a break torch's own code makes on purpose
    # (GraphBreak.by_torch: the optimizer's torch._dynamo.graph_break())
    graph_breaks: list[dict[str, Any]]
    cache_counts: dict[str, dict[str, int]]  # cache -> outcome -> n
    failures: list[dict[str, Any]]  # {frame, type, reason, source, compile_id}
    symbols: list[dict[str, Any]]  # {source, range, location}
    specializations: list[dict[str, Any]]  # {sources, value, reason, location}
    compile_time_s: float
    phases: dict[str, float]
    # What torch logged its cache hits saved (the AOTAutograd cache hits' time_saved_ms, summed), seconds
    cache_saved_s: float = 0.0
    # Compiles the FX graph cache served that compiled their kernels all the same (caches.kernels_compiled_again):
    # {compile_ids, seconds}. None where they took under caches.KERNELS_AGAIN_WORTH_SAYING_S, or in facts saved before.
    kernels_again: dict[str, Any] | None = None
    autotune_s: float = 0.0  # benchmarking to choose code (analyses/autotuning.py)
    # max-autotune's searches: {frame, op, shape, dtypes, best_kernel, best_config, best_time_ms}, in the order they ran
    autotune_searches: list[dict[str, Any]] = field(default_factory=list)
    # Compiles Inductor ran without CUDA graphs: {frame, compile_id, reason (first line, masked)}
    cudagraph_skips: list[dict[str, Any]] = field(default_factory=list)
    # Compiles CUDA graphs recorded: {frame, compile_id, recordings}. With the skips, whether a frame ran as CUDA
    # graphs at all: a run without mode="reduce-overhead" has neither, which is a loss against one that recorded them
    cudagraph_recorded: list[dict[str, Any]] = field(default_factory=list)
    # Frames CUDA graphs set up at a first call, recorded or not (one that ran once is neither recorded nor skipped)
    cudagraph_set_up: list[str] = field(default_factory=list)
    # The warnings torch printed: {frame, source, text (first line, masked), name, failure (the compile id of the
    # failure it reports: TorchWarning.failure; absent in facts saved before)}; None: not recorded by this run (a
    # plain log, without compilescope run, capture() or a saved stderr beside it)
    warnings: list[dict[str, Any]] | None = None
    unread: dict[str, Any] | None = None  # what of the log was not read (analyses/unread.py, as JSON); None: all of it
    ran_on: dict[str, str] = field(default_factory=dict)  # what the log says the run had: {"torch": ..., "GPU": ...}
    # The log ends while these compiles ran ("during [0/3]'s Inductor lowering & codegen"): the program was stopped,
    # crashed or was killed, so what it would have logged after is missing though every line was read. None: it ends
    # with no compile open.
    ends_during: str | None = None
    # The process died in native code (a segfault), from the stack `compilescope run` recorded (analyses/crash.py):
    # {error, file, line, function (where Python was), compile_id and frame (whose compiled code ran, if any), during,
    # user_file, user_line, user_function, headline, called_from, loading_built_aoti_package}. Its log stops there, as one
    # killed while compiling does. None: no crash recorded (a plain log cannot say).
    crash: dict[str, Any] | None = None
    # Draft export's issues (analyses/export.py): {type, where, headline}; its program holds only under what export
    # assumed. None: the log holds no torch.export.
    export_issues: list[dict[str, Any]] | None = None
    # The dims non-strict torch.export calls were given that the model's code contradicts (export.DimConflict):
    # {call, input, declared, guard, value, at}. Empty in facts saved before they were kept.
    export_dims: list[dict[str, Any]] = field(default_factory=list)
    # The slowest compile and where most of its time went: {compile_id, function, seconds, phase, phase_label,
    # phase_s} (phase None where no phase took any time). None: nothing compiled. What `check` names when the compile
    # time is over its limit.
    slowest_compile: dict[str, Any] | None = None
    # The phases' labels for this run (analyses/compile_time.py: "C++ compile" where its output code shows only C++
    # kernels); empty in facts saved before they were kept: the default labels.
    phase_labels: dict[str, str] = field(default_factory=dict)
    # Seconds per step torch timed while compiling (its chromium events by name: "pass.post_grad_passes.…",
    # "Scheduler.simple_overlap"): a torch version's new passes are steps the other's compiles never ran. Empty in
    # facts saved before they were kept.
    compile_steps: dict[str, float] = field(default_factory=dict)
    # Every compile id by how it ended (status.status_counts, the restarted attempts included, which no frame's
    # compile_ids hold) and those that made no graph: the report's cards. Empty in facts saved before they were kept.
    compile_statuses: dict[str, int] = field(default_factory=dict)
    no_graph_compiles: int = 0
    # The compiles that captured torch.utils.checkpoint calls (analyses/activation_checkpoint.py), a compilation's last
    # attempt: {frame, compile_id, calls: [{file, line, count}], recomputed_ops (null: no backward graph logged),
    # recomputed: [{file, line, count}]}. None in facts saved before they were kept (not compared).
    checkpointing: list[dict[str, Any]] | None = None
    # The AOTInductor packages compiled (analyses/aoti.py), in log order: {call (the user's line, or null), accepts
    # (the inputs the wrapper checks: "x: Float [2..64, 16] cpu"), one_shape (every dim fixed: AotiPackage.one_shape;
    # absent in facts saved before it was kept)}. Empty in facts saved before they were kept.
    aoti_packages: list[dict[str, Any]] = field(default_factory=list)
    # The user's own Triton kernels the compiled code holds (analyses/user_kernels.py): {name, compile_id, frame,
    # launched_at ("prog.py:34"), symbolic (its scalar arguments passed as size symbols), launch_call (how its launch
    # entered the graph: "torch.ops.mylib.scaled_add.default"), source_md5 (its code as compiled)}; the last two absent
    # in facts saved before they were kept. None in facts saved before any was kept.
    user_kernels: list[dict[str, Any]] | None = None
    # The lines whose compiled results differ from eager's (analyses/numerics.py): {kind ("random" | "precision"),
    # file, line, function, code, dtype, frame}. None in facts saved before they were kept (not compared).
    numerics: list[dict[str, Any]] | None = None
    # The run's profile, when one was read with its log (runtime.runtime_facts): {profile, timeline, part, unusable,
    # run_us, idle_us, graph_launches, slow_us, graphs: [{compile_id, calls, kernels_us}]}; {profile, not_joined} for
    # one of another run; {profile, unusable} for one that could not be read. `unusable`: why its times are not the
    # run's (read in part, or not at all), else None or absent (facts saved before). None: no profile.
    runtime: dict[str, Any] | None = None
    # The hooks registered after their module's function was compiled (Recompiles.late_hooks), which calls that
    # compile served ran without: {frame, function, module ("self.block"), hooks ("1 forward hook"), served_by (the
    # compile id that ran without it), found_by (the recompile whose guard tree counts it)}. None in facts saved before
    # they were kept.
    late_hooks: list[dict[str, Any]] | None = None
    # The custom ops called in compiled code whose calling file was not read (OpMutations.unread): {op, file, why,
    # said}; what they write is not known. None in facts saved before they were kept.
    unread_custom_ops: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RunFacts:
        doc = dict(doc)
        frames = {}
        for key, f in doc["frames"].items():
            f = dict(f)
            f["graphs"] = [GraphFacts(**g) for g in f["graphs"]]
            frames[key] = FrameFacts(**f)
        doc["frames"] = frames
        return cls(**doc)


def run_headline(facts: dict[int | None, RunFacts]) -> dict[str, Any]:
    """The figures a run hub's list shows of a run, summed over its ranks ({rank: RunFacts})."""
    runs = list(facts.values())
    return {
        "ranks": len(runs),
        "torch": next((f.torch_version for f in runs if f.torch_version), None),
        "frames": sum(len(f.frames) for f in runs),
        "compiles": sum(len(fr.compile_ids) for f in runs for fr in f.frames.values()),
        "graph_breaks": sum(len(f.graph_breaks) for f in runs),
        "recompiles": sum(fr.recompiles for f in runs for fr in f.frames.values()),
        "failures": sum(len(f.failures) for f in runs),
        # None: no rank recorded what torch printed (a plain TORCH_TRACE log)
        "warnings": None if all(f.warnings is None for f in runs) else sum(len(f.warnings or ()) for f in runs),
        "compile_time_s": sum(f.compile_time_s for f in runs),
    }


def _loc(location) -> dict[str, Any]:
    if location is None:
        return {"file": None, "line": None, "function": None, "code": None}
    return {"file": location.filename, "line": location.line, "function": location.function, "code": location.code}


def _at(file: str | None, line: int | None, torch_line: str | None = None) -> str:
    """'at prog.py:12', or what the log lacks (a symbol torch logged with no user frame); "in torch's adam.py:229,
    called at prog.py:24" where the user's line is the call into torch's (dynamic_shapes._location)."""
    if file and torch_line:
        return f"in torch's {torch_line}, called at {_short(file)}:{line}"
    return f"at {_short(file)}:{line}" if file else "location not in the log"


# Said after a break torch's own code makes on purpose (GraphBreak.by_torch: the optimizer's graph_break() in
# _use_grad): it comes and goes with what of torch's code is compiled, and no line of the program makes it.
BY_TORCH_GONE = (" (PyTorch's own break, made on purpose: B compiled none of the code that reaches it; not a break of "
                 "your code)")
BY_TORCH_NEW = " (PyTorch's own break, made on purpose: nothing in your code to change)"


def break_at(x: dict) -> str:
    """Where a graph break is, for people: "at prog.py:12"; one in FSDP2's hooks "in FSDP2's hooks (torch's
    _fsdp_common.py:30), called at prog.py:46", the user's call of the sharded module."""
    if x.get("torch_line") and x.get("file"):
        return f"in FSDP2's hooks (torch's {x['torch_line']}), called at {_short(x['file'])}:{x['line']}"
    return _at(x["file"], x["line"])


def _not_a_user_line(filename: str) -> bool:
    """torch's (or Triton's) own code, Python's library, or code torch generated (`<eval_with_key>.5`, numbered per
    process, so another run numbers it differently): nodes from there are matched by op and target. A library the
    model comes from (transformers, in site-packages) keeps its lines: they are the model's code."""
    return filename.startswith("<") or is_toolchain_file(filename) or is_python_library_file(filename)


def graph_nodes(text: str) -> list[list[Any]]:
    """The nodes of a printed FX graph (dynamo_output_graph) as [op, target, user line, code, grid_of].

    FX prints `name: "type" = target(args)` after a `# File: path:line in f, code: ...`
    comment naming the user line; names are generated (add_1, l_x_), so they are dropped.
    A user Triton kernel's grid computed by `triton.cdiv(n, BLOCK)` is nodes at Triton's line (`(x + y - 1) // y`),
    no user line: they are placed at the launch whose grid they compute (grid_of: its target), as the user wrote them.
    """
    nodes: list[list[Any]] = []
    unplaced: dict[str, tuple[int, str]] = {}  # a node at no user line, by FX's name -> (its index in nodes, its expression)
    where: str | None = None
    code: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# File:"):
            m = FX_SOURCE_COMMENT.match(line)
            if m and _not_a_user_line(m["file"]):
                where, code = None, None
            elif m:
                where, code = f"{m['file']}:{m['line']}", (m["code"] or "").strip() or None
            continue
        if not line or line.startswith(("#", "class ", "def ")):
            if line.startswith("def forward"):
                params = re.sub(r'"[^"]*"', "", line[len("def forward("):].rstrip("):"))  # types hold commas
                nodes.extend(["placeholder", _SYMBOL.sub("s#", p.split(":")[0].strip()), None, None, None]
                             for p in params.split(",")[1:] if p.strip())
            continue
        if line.startswith("return "):
            nodes.append(["output", "output", None, None, None])
            continue
        m = FX_NODE.match(line)
        if not m:
            continue
        rhs = m["expr"].strip()
        call, infix, method = _CALL.match(rhs), _INFIX.match(rhs), _METHOD.match(rhs)
        if method and not rhs.startswith(("torch.", "operator.", "math.")):
            op, target = "call_method", method["method"]
        elif call:
            # NumPy code Dynamo traced is said as NumPy's call: FX's name for its wrapper (`..._wrapped_add_1`) is
            # neither the user's nor the same from one run to another
            op, target = "call_function", numpy_target(call["target"]) or call["target"]
        elif infix:
            op, target = "call_function", f"operator {infix['op']}"
        elif re.fullmatch(r"[A-Z]_\w+|[a-z_]\w*", rhs):
            continue  # `l_x_ = L_x_`: an alias of an input, not a node of its own
        else:
            op, target = "get_attr", rhs.split("[")[0]
        if where is None:
            unplaced[m["name"]] = (len(nodes), rhs)
        elif grid := _LAUNCH_GRID.match(rhs):
            _place_grid(nodes, unplaced, grid["grid"], [where, code, target])
        nodes.append([op, target, where, code, None])
    return nodes


def _place_grid(nodes: list[list[Any]], unplaced: dict[str, tuple[int, str]], grid: str, launch: list[Any]) -> None:
    """The nodes at no user line that a launch's grid uses, and those they use in turn, placed at the launch: launch
    is its [user line, code, target]."""
    names = _NAME.findall(grid)
    while names:
        found = unplaced.pop(names.pop(), None)  # (popped: each node once)
        if found is not None:
            nodes[found[0]][2:5] = launch
            names.extend(_NAME.findall(found[1]))


def _kernel_work(trace: Trace, entry: Compile) -> list[dict[str, Any]] | None:
    """What each generated kernel of the compile computes (its graphs' node mappings, each with its post-grad graph);
    None: no provenance logged, or mappings and graphs that do not pair up."""
    mappings = [a for a in entry.artifacts if a.name == NODE_MAPPINGS and a.payload is not None]
    posts = next((kept for kind in POST_GRAD
                  if (kept := [a for a in entry.artifacts if a.name == kind and a.payload is not None])), [])
    if not mappings or len(mappings) != len(posts):
        return None
    # Each graph's kernel stacks, logged beside its mappings: they place a node FX comments with torch's file
    traced = [a for a in entry.artifacts if a.name == KERNEL_STACK_TRACES and a.payload is not None]
    stacks: list[dict[str, list[Any]]] = [{}] * len(mappings)
    if len(traced) == len(mappings):
        stacks = [{k.name: k.frames for k in kernel_traces(trace.payload_text(a.payload))} for a in traced]
    found: list[dict[str, Any]] = []
    for mapping, post, graph_stacks in zip(mappings, posts, stacks):
        try:
            node_mappings = orjson.loads(trace.payload_text(mapping.payload))
        except orjson.JSONDecodeError:
            return None
        if not isinstance(node_mappings, dict):
            return None
        found.extend({"kernel": w.kernel, "ops": w.ops, "lines": w.lines, "elsewhere": w.elsewhere}
                     for w in kernel_work(node_mappings, text_lines(trace.payload_text(post.payload)), graph_stacks))
    return found


def kernel_counts(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """(generated kernels by kind, extern kernel calls by name) in Inductor's output code."""
    kernels = Counter(m["kind"] for m in _KERNEL_DEF.finditer(text))
    externs = Counter(m.group(1) for m in _EXTERN.finditer(text))
    return dict(kernels), dict(externs)


def _config(trace: Trace) -> dict[str, str]:
    for entry in trace.sorted_compiles():
        metrics = entry.metrics or {}
        flat: dict[str, str] = {}
        for field_name, prefix in (("dynamo_config", "dynamo"), ("inductor_config", "inductor"),
                                   ("functorch_config", "functorch"), ("compiler_config", "compiler")):
            raw = metrics.get(field_name)
            try:
                values = orjson.loads(raw) if isinstance(raw, str) else None
            except orjson.JSONDecodeError:
                values = None
            if not isinstance(values, dict):
                continue
            for key, value in values.items():
                if not _VOLATILE_CONFIG.search(key):
                    flat[f"{prefix}.{key}"] = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
        if flat:
            return flat
    return {}


def _compile_steps(trace: Trace) -> dict[str, float]:
    """Seconds per chromium event name: each begin paired with its end on the same thread, complete events by their
    duration (a step nested in another counts in both)."""
    seconds: dict[str, float] = {}
    begun: dict[tuple, list[float]] = {}
    for event in trace.chromium_events:
        name, phase, ts = event.get("name"), event.get("ph"), event.get("ts")
        if not isinstance(name, str) or not isinstance(ts, (int, float)):
            continue
        track = (name, event.get("pid"), event.get("tid"))
        if phase == "B":
            begun.setdefault(track, []).append(ts)
            seconds.setdefault(name, 0.0)
        elif phase == "E" and begun.get(track):
            seconds[name] = seconds.get(name, 0.0) + (ts - begun[track].pop()) / 1e6
        elif phase == "X":
            duration = event.get("dur")
            seconds[name] = seconds.get(name, 0.0) + (duration / 1e6 if isinstance(duration, (int, float)) else 0.0)
    return {name: round(s, 6) for name, s in sorted(seconds.items())}


def _exported_root(entry: Compile) -> tuple[str | None, str | None, int | None]:
    """The function strict torch.export traced in a compile of an export-only log, which logs no dynamo_start: the
    outermost user frame of its symbols' and guards' user stacks (they start in torch's functional_export.py, whose
    forward calls the exported module's)."""
    for record in [*entry.symbols, *entry.guards_added]:
        for frame in record.get("user_stack") or []:
            filename = frame.get("filename") if isinstance(frame, dict) else None
            if isinstance(filename, str) and not _not_a_user_line(filename):
                return filename, frame.get("name"), None
    return None, None, None


def _slowest_compile(times: CompileTimes, caller_of: dict[str, UserLocation]) -> dict[str, Any] | None:
    """The slowest compile, its function and the phase most of its time went to; called_at: the user's line that
    called it, where its frame is not the user's code (caller_of, by compilation), else None."""
    slowest = times.slowest
    if slowest is None:
        return None
    phase = slowest.top_phase
    caller = caller_of.get(slowest.compile_id)
    return {"compile_id": slowest.compile_id, "function": slowest.function_label,
            "called_at": caller.short if caller is not None else None, "seconds": round(slowest.total_s, 6),
            "phase": phase, "phase_label": times.labels.get(phase, phase) if phase else None,
            "phase_s": round(slowest.phases[phase], 6) if phase else None}


def torch_changed(a: RunFacts, b: RunFacts) -> bool:
    """Both runs name their torch version, and the versions differ: what an upgrade's own differences are said with."""
    return bool(a.torch_version and b.torch_version and a.torch_version != b.torch_version)


def _afresh_text(side: str, frame: FrameFacts) -> str:
    """What a run compiled again after torch._dynamo.reset(): from scratch, unless a cache served it (reset() throws
    compiled functions away, not what the caches hold: tlparse's cache_hit_miss.log, whose [3/0] loaded [1/0]'s)."""
    n, cached = len(frame.afresh), frame.afresh_cached
    if not cached:
        return f"{side} compiled it from scratch again {times(n)}, after torch._dynamo.reset()"
    served = ("served from the cache" if len(cached) == n == 1 else "each served from the cache" if len(cached) == n
              else f"{and_list(cached)} served from the cache, the others from scratch")
    return (f"{side} compiled it again {times(n)} after torch._dynamo.reset(), {served} (reset() throws compiled "
            "functions away, not what the caches hold)")


def run_facts(results: Results) -> RunFacts:
    """Everything `diff` compares, from one rank's analysis (analyses.analyze, or a saved one loaded): its analyses
    are taken as they are, never run again; only what diff alone looks at (config, graph nodes, kernel counts) is
    read from its trace."""
    trace, found = results.trace, results.insights
    if trace is None or found is None:
        raise ValueError("run_facts needs the Results of analyze(), with its trace and insights")
    statuses = results.statuses
    times = found.compile_time
    time_of = {c.compile_id: c for c in times.compiles}
    guards_by_cid = {step.compile_id: step.guard for f in found.recompiles.frames for step in f.steps}
    all_failed_by_cid = {step.compile_id: step.failed_guards for f in found.recompiles.frames for step in f.steps}
    expected = {step.compile_id for f in found.recompiles.frames for step in f.steps if step.expected}
    unknown = {step.compile_id for f in found.recompiles.frames for step in f.steps if step.unknown_settings}
    # What the recompiles analysis counts (Recompiles.with_backward, the report's heading): its frames' steps, and each
    # backward graph compiled autograd captured again (its first Dynamo compile: "[!1/9/0]").
    recompiled = set(guards_by_cid) | {next((c for c in g.compile_ids if not c.endswith("/-/-]")), "")
                                       for g in found.recompiles.backward_graphs[1:]}
    afresh = {cid for fn in found.recompiles.afresh for cid in fn.again}  # (compilations: "[4/0]")
    cached = set(found.caches.reused_across_reset)
    no_graph = set(found.empty_graphs.no_graph)

    # The last attempt of each compilation (a restart logs [0/0_1] after [0/0]), with its id:
    # compiles without an id or a frame id belong to no frame and are left out here.
    latest: dict[tuple[int | None, int, int | None], tuple[CompileId, Compile]] = {}
    for cid, entry in trace.compiles.items():
        if cid is None or cid.frame_id is None:
            continue
        k = (cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)
        if k not in latest or (cid.attempt or 0) >= (latest[k][0].attempt or 0):
            latest[k] = (cid, entry)
    # A frame's location is known from any of its compiles (a failed one may lack metrics).
    where: dict[tuple, tuple] = {}
    exported = results.export
    for (ca, fid, _), (_, entry) in latest.items():
        loc = frame_function(trace, entry)
        if loc[0] is None and exported.only:
            loc = _exported_root(entry)
        if loc[0] is not None and ((ca, fid) not in where or where[(ca, fid)][2] is None):
            where[(ca, fid)] = loc
    # Torch's `inner` running a module the user compiled (a Sequential, DDP) is named by the module, as the recompiles
    # and compile-time sections name it (compiled_frames.wrapped_module); its key keeps torch's name, so that a run
    # whose log has no guard tree to name the module by still matches it.
    named: dict[tuple, str] = {}
    inner = [at for at, loc in where.items() if loc[1] == "inner"]
    if inner:
        frame_compiles: dict[tuple, list[Compile]] = {}
        for cid, entry in trace.compiles.items():
            if cid is not None and cid.frame_id is not None:
                frame_compiles.setdefault((cid.compiled_autograd_id, cid.frame_id), []).append(entry)
        for at in inner:
            module = wrapped_module(trace, frame_compiles.get(at, []))
            if module is not None:
                named[at] = module_label(module)

    # In an export-only log, the user's call whose strict export Dynamo traced: its compilation_metrics has no compile
    # id and carries the Python stack. Named where the log has one such trace: each strict export counts frames from
    # 0 again, so the records of several share frame 0.
    outside = trace.compiles.get(None)
    strict_call = (export_call(outside.metrics_stack) if outside is not None and not outside.earlier_metrics
                   and len({k[:2] for k in latest}) == 1 else None)
    frames: dict[str, FrameFacts] = {}
    frame_by_event_id: dict[str, str] = {}  # "[0/1]", as chromium events name a compile -> its frame
    # The user's lines that called each frame not their own (a library's, Dynamo-generated code), from each of its
    # compilations (compile_summary's called_from: the innermost user line on the stack Dynamo logged), each once.
    callers: dict[str, list[UserLocation]] = {}
    caller_of: dict[str, UserLocation] = {}  # "[0/1]" -> its compilation's caller, where the frame is not theirs
    for k in sorted(latest, key=lambda k: (-1 if k[0] is None else k[0], k[1], k[2] or 0)):
        compile_id, entry = latest[k]
        filename, function, first = where.get(k[:2], (None, None, None))
        key = frame_key(filename, function, first)
        if k[0] is not None:
            key = f"compiled autograd {key}"
        frame = frames.get(key) or frames.setdefault(key, FrameFacts(key, filename, named.get(k[:2], function), first))
        summary = results.compiles.get(entry.key)
        caller = summary.called_from if summary is not None and filename and code_origin(filename) else None
        if caller is not None:
            caller_of[compile_id.compilation] = caller
            seen = callers.setdefault(key, [])
            if all(caller.key != other.key for other in seen):
                seen.append(caller)
        if exported.only and strict_call is not None:
            frame.exported_at = strict_call.short
        frame_by_event_id[compile_id.compilation] = key
        cid_text = str(compile_id)
        frame.compile_ids.append(cid_text)
        frame.dirs.append(entry.dir_name)
        frame.statuses.append(statuses.get(compile_id, "unknown"))
        if cid_text in no_graph:
            frame.no_graph.append(cid_text)
        if cid_text in recompiled:
            frame.recompile_ids.append(cid_text)
            if cid_text in expected:
                frame.expected_recompile_ids.append(cid_text)
            elif cid_text in unknown:
                frame.unknown_recompile_ids.append(cid_text)
        if compile_id.compilation in afresh:
            frame.afresh.append(cid_text)
            if cid_text in cached:
                frame.afresh_cached.append(cid_text)
        guard = guards_by_cid.get(cid_text)
        if guard is not None:
            frame.guard_failures.append(_mask(guard.guard))
            if guard.described:
                frame.guard_words[_mask(guard.guard)] = _mask(guard.described)
        for failed in dict.fromkeys(_mask(g.guard) for g in all_failed_by_cid.get(cid_text, [])):
            frame.failed_anywhere[failed] = frame.failed_anywhere.get(failed, 0) + 1
        graph_text = next((trace.payload_text(a.payload) for a in entry.artifacts if a.name == FX_GRAPH), None)
        codes = [trace.payload_text(a.payload) for a in entry.artifacts if a.name.startswith(OUTPUT_CODE)]
        kernels: dict[str, int] | None = None
        externs: dict[str, int] | None = None
        if codes:
            kernel_total: Counter[str] = Counter()
            extern_total: Counter[str] = Counter()
            for code in codes:
                k_, e_ = kernel_counts(code)
                kernel_total.update(k_)
                extern_total.update(e_)
            kernels, externs = dict(kernel_total), dict(extern_total)
        if graph_text is not None or codes:
            frame.graphs.append(GraphFacts(graph_nodes(graph_text or ""), kernels, externs, _kernel_work(trace, entry)))
        ct = time_of.get(compile_id.compilation)
        frame.compile_s.append(round(ct.total_s, 6) if ct else 0.0)
        if ct:
            for phase, seconds in ct.phases.items():
                frame.phases[phase] = round(frame.phases.get(phase, 0.0) + seconds, 6)

    for key, found_callers in callers.items():
        frames[key].called_at = called_at_text(found_callers)

    frame_of_cid = {cid: f.key for f in frames.values() for cid in f.compile_ids}
    # A break is hit by attempts of compilations ("[0/0]" restarted as "[0/0_1]"): its frame is its first one's.
    frame_of_compilation = {compilation_key(cid): frame_of_cid.get(str(cid)) for cid, _ in latest.values()}
    # A break in FSDP2's hooks is placed at the user's call of the sharded module (`x = block(x)`), as the summary's
    # failure and note place it: the hook's line is torch's, the same in every program (torch_line keeps it).
    breaks = [{"reason": b.reason, **_loc(b.fsdp_call if b.in_fsdp_hook and b.fsdp_call else b.location),
               "torch_line": b.location.short if b.in_fsdp_hook and b.fsdp_call and b.location else None, "count": b.count,
               "frame": next((frame_of_compilation[c] for c in b.compile_ids if frame_of_compilation.get(c)), None),
               "disabled": b.disabled, "by_torch": b.by_torch}
              for b in found.graph_breaks.breaks]
    failures = []
    # Where torch named a line of its own (a compiled nonstrict_trace function fails in torch's wrapper), the user's
    # line the error's traceback has (analyses.errors) is where it failed.
    user_line = {e.compile_id: f"{e.location.filename}:{e.location.line}" for e in found.errors.errors
                 if e.location is not None and e.location_kind == "failure" and not is_torch_file(e.location.filename)}
    # A frame Dynamo skipped after a break it could not resume from ran eagerly: said as the errors finding says it.
    # A frame not of the user's code keeps the user's line that called it, as its label does.
    ran_eagerly = {e.compile_id: skipped_text(e.skipped_frame, e.in_loop, e.in_with,
                                              called_at=frames[frame_of_cid[e.compile_id]].called_at
                                              if e.compile_id in frame_of_cid else "", before=e.skipped_before)
                   for e in found.errors.errors if e.skipped_frame is not None}
    # The error's message as the errors finding words it: torch's first line may only announce it ("backend='inductor'
    # raised:", "RuntimeError when making fake tensor call"), and what failed is on the next line or in the explanation.
    message = {e.compile_id: e.message for e in found.errors.errors if e.message}
    for row in results.failures:
        if row.is_restart:
            continue  # restarts are graph breaks, compared as such
        failed_frame = frame_of_cid.get(compilation_key(row.compile_id)) or frame_of_cid.get(str(row.compile_id))
        source = row.source
        if source and is_torch_file(source.rsplit(":", 1)[0]):
            source = user_line.get(str(row.compile_id), source)
        failures.append({"frame": failed_frame, "type": row.kind, "reason": _mask(message.get(str(row.compile_id))
                                                                         or (row.reason.strip().splitlines()[0] if row.reason.strip() else "")),
                         "source": source, "compile_id": str(row.compile_id) if row.compile_id else None,
                         "ran_eagerly": ran_eagerly.get(str(row.compile_id))})
    # Dynamic-shape decisions of the last attempt of each compilation (a restart makes its symbols again).
    kept = {str(cid) for cid, _ in latest.values()}
    frame_by_cid = {cid: f.key for f in frames.values() for cid in f.compile_ids}
    shapes = found.dynamic_shapes
    first_cids = {f.compile_ids[0] for f in frames.values() if f.compile_ids}
    symbols = [{"source": s.source, "source_text": s.source_text, "range": s.range, "unbacked": s.unbacked, "symbol": s.symbol,
                "frame": frame_by_cid.get(s.compile_id),
                "first_compile": s.compile_id in first_cids, **_loc(s.location),
                "torch_line": s.torch_location.short if s.torch_location else None, "retrace_of": s.retrace_of}
               for s in shapes.symbols if s.compile_id in kept]
    specs = [{"sources": list(s.sources), "described_sources": dict(s.source_texts), "value": s.value, "reason": s.reason, "frame": frame_by_cid.get(s.compile_id),
              **_loc(s.location), "read_text": s.read_text,
              "torch_location": s.torch_location.to_json() if s.torch_location else None}
             for s in shapes.specializations if s.compile_id in kept]
    tuned = found.autotuning
    cache_result = found.caches
    for compile_cache in cache_result.compiles:
        frame_key_ = frame_by_cid.get(compile_cache.compile_id)
        if frame_key_ is not None:
            per_frame = frames[frame_key_].caches
            for event in compile_cache.events:
                outcomes = per_frame.setdefault(event.cache, {})
                outcomes[event.outcome] = outcomes.get(event.outcome, 0) + 1
    ran_on = found.environment
    checkpointing = [{"frame": frame_of_cid[c.compile_id], "compile_id": c.compile_id,
                      "calls": [{"file": s.path, "line": s.line, "count": s.count} for s in c.calls],
                      "recomputed_ops": c.n_recomputed if c.has_backward else None,
                      "recomputed": [{"file": s.path, "line": s.line, "count": s.count} for s in c.recomputed]}
                     for c in found.checkpointing.compiles if c.compile_id in frame_of_cid]
    numerics: list[dict[str, Any]] = [{"kind": kind, "file": line.location.filename, "line": line.location.line,
                 "function": line.location.function, "code": line.location.code, "dtype": line.dtype,
                 "frame": next((frame_of_cid[c] for c in line.compile_ids if c in frame_of_cid), None)}
                for kind, lines in (("random", found.numerics.random), ("precision", found.numerics.precision))
                for line in lines]
    late_hooks = [{"frame": frame_of_cid.get(step.compile_id), "function": frame.display_name, "module": change.name,
                   "hooks": change.hooks_now, "served_by": step.guard.compile_id if step.guard else None,
                   "found_by": step.compile_id}
                  for frame, step, change in found.recompiles.late_hooks]
    # (a custom op's undeclared write: on the line that writes, with the op, in the frame that calls it first)
    numerics += [{"kind": "mutation", "file": w.filename, "line": w.line, "function": w.function, "code": w.code,
                  "dtype": None, "op": op.op, "form": op.form, "arguments": op.arguments,
                  "frame": next((frame_of_cid[c] for c in op.compile_ids if c in frame_of_cid), None)}
                 for op in found.op_mutations.ops for w in op.writes]
    return RunFacts(
        checkpointing=checkpointing,
        numerics=numerics,
        late_hooks=late_hooks,
        unread_custom_ops=[u.to_json() for u in found.op_mutations.unread],
        compile_statuses={status: n for status, n in status_counts(statuses).items() if n},
        no_graph_compiles=len(no_graph),
        source=trace.source,
        torch_version=ran_on.torch,
        ran_on=dict(ran_on.facts()),
        config=_config(trace),
        frames=frames,
        graph_breaks=breaks,
        # (copies, as the specializations' sources: the facts are values of their own, and the Results still rendered)
        cache_counts={cache: dict(outcomes) for cache, outcomes in cache_result.counts.items()},
        failures=failures,
        symbols=symbols,
        specializations=specs,
        compile_time_s=round(times.total_s, 6),
        phases={p.phase: round(p.seconds, 6) for p in times.phases},
        slowest_compile=_slowest_compile(times, caller_of),
        phase_labels=dict(times.labels),
        compile_steps=_compile_steps(trace),
        cache_saved_s=round(cache_result.time_saved_ms / 1000, 6),
        kernels_again=(again.to_json() if (again := kernels_compiled_again(times, cache_result)).seconds
                       >= KERNELS_AGAIN_WORTH_SAYING_S else None),
        autotune_s=round(tuned.total_s, 6),
        autotune_searches=[{"frame": frame_by_event_id.get(t.compile_id), "op": t.op, "shape": t.shape, "dtypes": t.dtypes,
                            "best_kernel": t.best_kernel, "best_config": t.best_config, "best_time_ms": t.best_time_ms,
                            "site": t.site.short if t.site else None, "site_code": t.site.code if t.site else None,
                            "seconds": round(t.seconds, 6), "candidate_compile_s": round(t.candidate_compile_seconds, 6)}
                           for t in tuned.searches],
        cudagraph_skips=[{"frame": frame_of_cid.get(c.compile_id), "compile_id": c.compile_id,
                          "reason": _mask(c.without_graphs_because or ""), "never_recorded": c.never_recorded}
                         for c in found.cudagraphs.without_graphs],
        cudagraph_recorded=[{"frame": frame_of_cid.get(c.compile_id), "compile_id": c.compile_id,
                             "recordings": len(c.recordings_ms)}
                            for c in found.cudagraphs.compiles if c.recordings_ms],
        cudagraph_set_up=sorted({frame_of_cid[c.compile_id] for c in found.cudagraphs.compiles
                                 if c.setups and c.compile_id in frame_of_cid}),
        warnings=_warnings(found.warnings, frame_of_cid),
        unread=found.unread.to_json() if found.unread else None,
        ends_during=ends_during(found.unfinished, times.labels, found.aoti) if found.unfinished else None,
        crash=_crash(found.crashes.crashes, frame_of_cid, bool(found.aoti) and times.all_ended),
        export_issues=([{"type": i.failure_type, "where": i.where, "headline": i.headline} for i in exported.issues]
                       if exported.detected else None),
        export_dims=[{"call": c.export_call.short if c.export_call else None, "input": c.input_text,
                      "declared": c.declared, "guard": c.guard, "value": c.value,
                      "at": c.location.short if c.location else None} for c in exported.dim_conflicts],
        aoti_packages=[{"call": p.call.short if p.call else None, "accepts": p.accepts, "one_shape": p.one_shape}
                       for p in found.aoti.packages],
        user_kernels=[{"name": k.name, "compile_id": k.compile_id, "frame": frame_of_cid.get(k.compile_id),
                       "launched_at": [u.short for u in k.launched_at], "symbolic": [a.name for a in k.symbolic],
                       "launch_call": k.launch_call, "source_md5": k.source_md5}
                      for k in found.user_kernels.kernels],
        runtime=_runtime_facts(results),
    )


def _runtime_facts(results: Results) -> dict[str, Any] | None:
    if results.runtime is None:
        return None
    from ..runtime import runtime_facts  # here: the profile join is for runs read with a profile only

    return runtime_facts(results.runtime)


def _cudagraph_use_changes(a: RunFacts, b: RunFacts, result: RunDiff) -> list[Change]:
    """A frame (compiled in both runs) that one run ran as CUDA graphs, and the other ran with none at all: no graph
    recorded, none skipped, none even set up (CUDA graph trees set one up at the first call whenever they are on), as
    when mode="reduce-overhead" is dropped. A skip only compares runs that both used CUDA graphs; this is the loss (or
    gain) of them, run without in B only as a skip is ("added")."""
    def recorded(facts: RunFacts) -> dict[str, int]:
        recordings: dict[str, int] = {}
        for x in facts.cudagraph_recorded:
            if x["frame"] in result.matched_frames:
                recordings[x["frame"]] = recordings.get(x["frame"], 0) + x["recordings"]
        return recordings

    def used(facts: RunFacts) -> set[str]:
        return set(recorded(facts)) | {x["frame"] for x in facts.cudagraph_skips} | set(facts.cudagraph_set_up)

    changes = []
    used_a, used_b = used(a), used(b)
    for frame_key_, n in sorted(recorded(a).items()):
        if frame_key_ not in used_b:
            changes.append(Change("cudagraphs", "added", f"CUDA graphs no longer used: A recorded {count(n, 'graph')},"
                                  " B never set one up (not compiled with mode=\"reduce-overhead\"?)", frame_key_,
                                  {"frame": frame_key_, "recordings": n}, {"frame": frame_key_, "recordings": 0}))
    for frame_key_, n in sorted(recorded(b).items()):
        if frame_key_ not in used_a:
            changes.append(Change("cudagraphs", "removed", f"CUDA graphs now used: B recorded {count(n, 'graph')}, "
                                  "A never set one up", frame_key_,
                                  {"frame": frame_key_, "recordings": 0}, {"frame": frame_key_, "recordings": n}))
    return changes


def _frame_checkpointing(facts: RunFacts) -> dict[str, tuple[dict[str, int], int | None]]:
    """Per frame: the checkpoint calls its compiles captured, by line ("checkpoint_autocast.py:52" -> 2), and the ops
    their backward graphs recompute (None: a compile with checkpoint calls logged no backward graph)."""
    found: dict[str, tuple[dict[str, int], int | None]] = {}
    for one in facts.checkpointing or []:
        sites, recomputed = found.get(one["frame"], ({}, 0))
        for call in one["calls"]:
            site = f"{short_path(call['file'])}:{call['line']}"
            sites[site] = sites.get(site, 0) + call["count"]
        recomputed = None if recomputed is None or one["recomputed_ops"] is None else recomputed + one["recomputed_ops"]
        found[one["frame"]] = (sites, recomputed)
    return found


def _calls_text(sites: dict[str, int]) -> str:
    """"2 at checkpoint_autocast.py:52", "3 at m.py:40 ×2, m.py:47", "0"."""
    n = sum(sites.values())
    if len(sites) < 2:
        return f"{n} at {next(iter(sites))}" if sites else "0"
    return f"{n} at " + ", ".join(f"{site} ×{calls}" if calls > 1 else site for site, calls in sites.items())


def _checkpointing_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """What torch.compile captured of activation checkpointing, per frame: the checkpoint calls (a graph break in the
    checkpointed function makes Dynamo run the call uncompiled, or give up the frame), and the ops the backward
    recomputes. Compared only where both facts kept it."""
    if a.checkpointing is None or b.checkpointing is None:
        return []
    per_a, per_b = _frame_checkpointing(a), _frame_checkpointing(b)
    changes: list[Change] = []
    for key in [k for k in per_a if k in a.frames] + [k for k in per_b if k not in per_a and k in b.frames]:
        frame = frames_label(a.frames[key], b.frames[key]) if key in a.frames and key in b.frames else (
            a.frames.get(key) or b.frames[key]).label
        sites_a, ops_a = per_a.get(key, ({}, 0))
        sites_b, ops_b = per_b.get(key, ({}, 0))
        if sites_a != sites_b:
            calls_a, calls_b = sum(sites_a.values()), sum(sites_b.values())
            kind = "removed" if not calls_b else "added" if not calls_a else "changed"
            changes.append(Change("checkpointing", kind, f"{frame}: checkpoint calls captured: {_calls_text(sites_a)} → "
                                  f"{_calls_text(sites_b)}", key, calls_a, calls_b, {"calls_a": sites_a, "calls_b": sites_b}))
        if ops_a != ops_b:
            words = ["not logged (no backward graph)" if n is None else str(n) if n else "none" for n in (ops_a, ops_b)]
            kind = "removed" if ops_b == 0 else "added" if ops_a == 0 else "changed"
            changes.append(Change("checkpointing", kind, f"{frame}: ops the backward recomputes: {words[0]} → {words[1]}",
                                  key, ops_a, ops_b))
    return changes


def _numerics_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """Lines whose compiled results differ from eager's in one run only: random numbers Inductor draws itself, bf16/fp16
    fused in float32. Matched by file name, function and code, not line: a fix above them moves the lines."""
    if a.numerics is None or b.numerics is None:
        return []

    def by_key(facts: RunFacts) -> dict[tuple, dict[str, Any]]:
        return {(n["kind"], os.path.basename(n["file"]), n["function"], n["code"] or n["line"]): n for n in facts.numerics or []}

    ka, kb = by_key(a), by_key(b)
    out: list[Change] = []
    for kind, now, gone in (("random", "now draws its own random numbers (Inductor's generator, not eager's)",
                             "no longer draws its own random numbers"),
                            ("precision", "now fuses {dtype} ops in float32", "no longer fuses {dtype} ops in float32"),
                            ("mutation", "now calls {ops}, whose write into its argument torch does not know of (its "
                                         "mutates_args does not name it)",
                             "no longer takes {ops} for functional while it writes into its argument")):
        for change, keys, side in (("added", kb.keys() - ka.keys(), kb), ("removed", ka.keys() - kb.keys(), ka)):
            found = [side[k] for k in side if k in keys and k[0] == kind]  # (in the side's order)
            if not found:
                continue
            dtype = "/".join(dict.fromkeys(n["dtype"] or "" for n in found))
            where = "; ".join(f"{os.path.basename(n['file'])}:{n['line']}" + (f" ({n['code']})" if n["code"] else "")
                              for n in found)
            ops = ", ".join(dict.fromkeys(n.get("op") or "" for n in found))
            what = (now if change == "added" else gone).format(dtype=dtype, ops=ops)
            out.append(Change("numerics", change, f"compiled code {what} at {where}", found[0]["frame"],
                              found if change == "removed" else None, found if change == "added" else None))
    return out


def _export_dim_changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Change]:
    """The dims a torch.export call was given that the model's code narrowed (a guard: torch raises "Constraints
    violated") or fixed to one value, gone or new: torch.export's words for what a specialization and a guard are to
    a torch.compile user."""
    def key(d: dict[str, Any]) -> tuple:
        return d["call"], d["input"], d["guard"], d["value"]

    def said(d: dict[str, Any], now: str) -> str:
        call = f"torch.export at {d['call']}" if d["call"] else "torch.export"
        at = f" at {d['at']}" if d["at"] else ""
        if d["value"] is not None:
            return f"{call}: {d['input']} {now} fixed to {d['value']} by the code{at}"
        return f"{call}: {d['input']} (given {d['declared']}) {now} narrowed by the code ({d['guard']}{at})"

    keys_a, keys_b = {key(d): d for d in a}, {key(d): d for d in b}
    out = [Change("dynamic_shapes", "removed", said(d, "no longer"), None, d, None)
           for k, d in keys_a.items() if k not in keys_b]
    out += [Change("dynamic_shapes", "added", said(d, "now"), None, None, d) for k, d in keys_b.items() if k not in keys_a]
    return out


def _aoti_changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Change]:
    """What each AOTInductor package accepts, where it changed (a Dim added: a batch of 4 only, then 2..64), and the
    packages one run compiled and the other did not; paired by the user's call, else in log order."""
    def keyed(packages: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
        return {p["call"] if p["call"] is not None else i: p for i, p in enumerate(packages)}

    def name(p: dict[str, Any]) -> str:
        return f"the AOTInductor package of {p['call']}" if p["call"] else "an AOTInductor package"

    ka, kb = keyed(a), keyed(b)
    out = [Change("dynamic_shapes", "changed", f"{name(pa)} accepts {pa['accepts']} → {kb[k]['accepts']}", None,
                  pa["accepts"], kb[k]["accepts"])
           for k, pa in ka.items() if k in kb and pa["accepts"] != kb[k]["accepts"]]
    out += [Change("dynamic_shapes", "removed", f"{name(p)} (accepts {p['accepts']}) is no longer compiled", None,
                   p["accepts"], None) for k, p in ka.items() if k not in kb]
    out += [Change("dynamic_shapes", "added", f"{name(p)} (accepts {p['accepts']}) is new", None, None, p["accepts"])
            for k, p in kb.items() if k not in ka]
    return out


# Two profiles of one program differ by a few percent from run to run: a graph's kernel time per call, or the GPU time
# per call, is a change from this ratio on; the GPU's idle share from this many points.
RUNTIME_RATIO = 1.2
RUNTIME_IDLE_POINTS = 0.10
# Each profile's compiled part against its own eager part (the same code, timed beside it on the same machine): a
# speed-up that moved less than this while the compiled kernels per call moved RUNTIME_RATIO or more says the eager
# code changed as much, so the machine (or its load) did, not the compile.
SPEEDUP_HELD = 1.1


def runtime_per_call(ra: dict[str, Any], rb: dict[str, Any]) -> tuple[list[dict[str, Any]], tuple[float, float] | None]:
    """Two runs' profile facts (RunFacts.runtime, both joined) per call: each compile id in both, its kernel time per
    call ({compile_id, a_us, a_calls, b_us, b_calls}); and where each ran one compile id, the GPU (or CPU) time of the
    run per call of it, kernels and the idle between them (a call of the one graph is a step of the run). What `diff`
    says and `check --max-run-time-ratio` gates."""
    ga, gb = {g["compile_id"]: g for g in ra["graphs"]}, {g["compile_id"]: g for g in rb["graphs"]}
    rows: list[dict[str, Any]] = []
    for cid in [c for c in ga if c in gb]:
        x, y = ga[cid], gb[cid]
        if x["calls"] and y["calls"]:
            rows.append({"compile_id": cid, "a_us": round(x["kernels_us"] / x["calls"], 3), "a_calls": x["calls"],
                         "b_us": round(y["kernels_us"] / y["calls"], 3), "b_calls": y["calls"]})
    per_call = None
    if len(ga) == len(gb) == 1 and rows:
        per_call = (ra["run_us"] / rows[0]["a_calls"], rb["run_us"] / rows[0]["b_calls"])
    return rows, per_call


def timelines_differ(ra: dict[str, Any], rb: dict[str, Any], sides: tuple[str, str] = ("the baseline", "the run")) -> str | None:
    """Two runs' profile facts (RunFacts.runtime) whose timelines differ, in words ("a GPU profile, x.json, and
    the baseline a CPU one, y.json: ..."), said after the second side's name; None when both are CPU or both GPU. A
    CPU timeline times the CPU's ops, a GPU one the GPU's kernels: neither time stands for the other."""
    if ra["timeline"] == rb["timeline"]:
        return None
    return (f"a {rb['timeline'].upper()} profile, {rb['profile']}, and {sides[0]} a {ra['timeline'].upper()} one, "
            f"{ra['profile']}: a CPU profile times the CPU's ops, a GPU one the GPU's kernels, and neither stands for "
            "the other")


def _runtime_changes(a: RunFacts, b: RunFacts, result: RunDiff, sides: tuple[str, str]) -> list[Change]:
    """What changed in run time between the two runs' profiles: per compile id in both, its kernel time per call
    (profiles of 20 calls and of 5 compare so); where each ran one compile id, the GPU time per call (kernels and the
    idle between them); and the GPU's idle share. A side without a profile: a note, nothing compared."""
    ra, rb = a.runtime, b.runtime
    if ra is None and rb is None:
        return []
    if ra is None or rb is None:
        result.notes.append(f"run time not compared: only {sides[0] if ra else sides[1]} was read with a profile "
                            "(a profile beside each log, or --profile-a/--profile-b)")
        return []
    for side, r in zip(sides, (ra, rb)):
        if r.get("unusable"):  # (read in part, or not at all: its times are not the run's)
            result.notes.append(f"run time not compared: {possessive(side)} profile {r['profile']} cannot be used "
                                f"({r['unusable']})")
            return []
        if "not_joined" in r:
            result.notes.append(f"run time not compared: {possessive(side)} profile {r['profile']} is not joined to its "
                                f"log ({r['not_joined']})")
            return []
    if (differ := timelines_differ(ra, rb, sides)) is not None:
        result.notes.append(f"run time not compared: {sides[1]} has {differ}")
        return []
    ga, gb = {g["compile_id"]: g for g in ra["graphs"]}, {g["compile_id"]: g for g in rb["graphs"]}
    rows, per_call = runtime_per_call(ra, rb)
    said = [f"{r['compile_id']} kernels {format_us(r['a_us'])} → {format_us(r['b_us'])} per call" for r in rows]
    changed = any(_ratio(r["a_us"], r["b_us"]) >= RUNTIME_RATIO for r in rows)
    if per_call is not None:
        said.insert(0, f"{ra['timeline'].upper()} time {format_us(per_call[0])} → {format_us(per_call[1])} per call")
        changed = changed or _ratio(*per_call) >= RUNTIME_RATIO
    idle = None
    if ra["timeline"] == rb["timeline"] == "gpu" and ra["run_us"] and rb["run_us"]:
        idle = (ra["idle_us"] / ra["run_us"], rb["idle_us"] / rb["run_us"])
        said.append(f"GPU idle {idle[0]:.0%} → {idle[1]:.0%}")
        changed = changed or abs(idle[1] - idle[0]) >= RUNTIME_IDLE_POINTS
    # A profile holding an eager run too (facts saved before have no "eager"): its kernels and idle, the same code in
    # both runs, and what each run's compiled part took against its own eager part.
    ea, eb = ra.get("eager"), rb.get("eager")
    if ea and eb:
        said.append(f"eager part {format_us(ea['kernels_us'])} → {format_us(eb['kernels_us'])} of kernels, GPU idle "
                    f"{_share(ea['idle_us'], ea['run_us']):.0%} → {_share(eb['idle_us'], eb['run_us']):.0%}")
        if ra.get("speedup") and rb.get("speedup"):
            said.append(f"the compiled part's speed-up over its profile's eager part (kernel time) {ra['speedup']:.2f}x → "
                        f"{rb['speedup']:.2f}x")
            machine = _machine_changed(rows, ra["speedup"], rb["speedup"])
            if machine is not None:
                said.append(machine)
    elif (ea or eb) and (ra if ea else rb).get("speedup"):
        side, r = (sides[0], ra) if ea else (sides[1], rb)
        faster = f"{r['speedup']:.2f}x faster" if r["speedup"] >= 1 else f"{1 / r['speedup']:.2f}x slower"
        said.append(f"{possessive(side)} profile also holds an eager run: its compiled part ran {faster} (kernel time)")
    only = [c for c in ga if c not in gb] + [c for c in gb if c not in ga]
    if only:
        said.append(f"ran in one profile only: {', '.join(only[:4])}")
    text = "; ".join(said) or "no compiled graph in either profile"
    if not changed:
        result.notes.append(f"run time (profiles {ra['profile']} → {rb['profile']}): {text}; not a change (under "
                            f"{RUNTIME_RATIO:g}x, and the idle share within {RUNTIME_IDLE_POINTS:.0%})")
        return []
    detail = {"profile_a": ra["profile"], "profile_b": rb["profile"], "graphs": rows,
              "per_call_us": list(per_call) if per_call else None, "idle_share": list(idle) if idle else None,
              "eager_kernels_us": [ea["kernels_us"], eb["kernels_us"]] if ea and eb else None,
              "speedup": [ra.get("speedup"), rb.get("speedup")] if ra.get("speedup") or rb.get("speedup") else None,
              "machine_changed": bool(ea and eb and ra.get("speedup") and rb.get("speedup")
                                      and _machine_changed(rows, ra["speedup"], rb["speedup"]))}
    return [Change("runtime", "changed", f"run time: {text}", None, ra["run_us"], rb["run_us"], detail)]


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _machine_changed(rows: list[dict[str, Any]], speedup_a: float, speedup_b: float) -> str | None:
    """Where the compiled kernels per call changed (RUNTIME_RATIO) and each profile's speed-up over its own eager part
    held (SPEEDUP_HELD), the eager code changed as much: what that says; None otherwise."""
    moved = [r for r in rows if _ratio(r["a_us"], r["b_us"]) >= RUNTIME_RATIO]
    if not moved or _ratio(speedup_a, speedup_b) >= SPEEDUP_HELD:
        return None
    r = moved[0]
    how = "slower" if r["b_us"] > r["a_us"] else "faster"
    return (f"the eager parts {'slowed down' if how == 'slower' else 'sped up'} as much as the compiled ones "
            f"({r['compile_id']}'s kernels "
            f"{_ratio(r['a_us'], r['b_us']):.2f}x {how} per call, the speed-up over eager held): the machine or its "
            "load changed, not the compile")


def _ratio(x: float, y: float) -> float:
    """The slower of two times over the faster (inf when one is 0 and the other is not)."""
    lo, hi = sorted((x, y))
    return 1.0 if hi == 0 else math.inf if lo == 0 else hi / lo


def _user_kernel_changes(a: list[dict[str, Any]] | None, b: list[dict[str, Any]] | None) -> list[Change]:
    """The user's own Triton kernels, by name: one the compiled code of one run holds and the other's not; one whose
    launch entered the graphs otherwise (launched raw, then through a triton_op), said with what stayed the same (its
    code, the compiles holding it, the sizes each took symbolic), which the graph nodes that changed do not tell."""
    if a is None or b is None:
        return []

    def by_name(kernels: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for k in kernels:
            found.setdefault(k["name"], []).append(k)
        return found

    def compiles(ks: list[dict[str, Any]]) -> str:
        """"[0/0], [0/1] (n symbolic in [0/1])"; a compile id whose code defines the kernel twice, once: "[0/0] (2 times)"."""
        per_id: dict[str, list[dict[str, Any]]] = {}
        for k in ks:
            per_id.setdefault(k["compile_id"], []).append(k)
        symbolic = [f"{', '.join(names)} symbolic in {compile_id}" for compile_id, same in per_id.items()
                    if (names := list(dict.fromkeys(s for k in same for s in k["symbolic"])))]
        return (", ".join(compile_id + (f" ({len(same)} times)" if len(same) > 1 else "") for compile_id, same in per_id.items())
                + (f" ({'; '.join(symbolic)})" if symbolic else ""))

    def launch(ks: list[dict[str, Any]]) -> str:
        at = ", ".join(dict.fromkeys(u for k in ks for u in k["launched_at"]))
        how = " or ".join(dict.fromkeys(w for k in ks if (w := launch_words(k.get("launch_call")))))
        called = "called" if how.startswith("through the custom op") else "launched"  # (the op's call, not a launch)
        return ", ".join(filter(None, [f"{called} at {at}" if at else "", how]))

    ka, kb = by_name(a), by_name(b)
    out = []
    for name, ks in ka.items():
        if name not in kb:
            out.append(Change("graphs", "removed", f"your Triton kernel {name} is no longer in the compiled code "
                              f"(A: {compiles(ks)})", ks[0]["frame"], ks, None))
    for name, ks in kb.items():
        if name not in ka:
            out.append(Change("graphs", "added", f"your Triton kernel {name} is new in the compiled code "
                              f"(B: {compiles(ks)})", ks[0]["frame"], None, ks))
    for name, ks in ka.items():
        other = kb.get(name)
        if other is None or launch(ks) == launch(other):
            continue
        codes = ({k.get("source_md5") for k in ks}, {k.get("source_md5") for k in other})
        same_code = None not in codes[0] | codes[1] and codes[0] == codes[1] and len(codes[0]) == 1
        same = [what for what, kept in (("its code", same_code), (f"compiled in {compiles(ks)}",
                                                                  compiles(ks) == compiles(other))) if kept]
        changed = [] if same_code or None in codes[0] | codes[1] else ["its code changed"]
        changed += [] if compiles(ks) == compiles(other) else [f"compiled in {compiles(ks)} → {compiles(other)}"]
        title = f"your Triton kernel {name}: how its launch enters the graph changed: {launch(ks)} → {launch(other)}"
        if same:
            title += f"; the kernel is the same in both: {', '.join(same)}"
        if changed:
            title += f"; {'; '.join(changed)}"
        out.append(Change("graphs", "changed", title, ks[0]["frame"], ks, other,
                          {"same_code": same_code, "same_compiles": compiles(ks) == compiles(other)}))
    return out


def _crash(found: list[Crash], frame_of_cid: dict[str, str], aoti_built: bool = False) -> dict[str, Any] | None:
    """The process's crash (a log is one process's: it has one at most), with the frame whose compiled code ran. A
    native crash only: an uncaught exception is not one for diff and check's no-crash (a program that raises a
    compile error exits 1 and its failures say so). aoti_built: the log holds an AOTInductor package's wrapper and
    every compile it began ended."""
    found = [c for c in found if not c.exception]
    if not found:
        return None
    crash = found[0]
    where, user = crash.where, crash.user_frame
    compiled = crash.compile_id
    return {"error": crash.error, "file": where.filename if where else None, "line": where.line if where else None,
            "function": where.function if where else None, "compile_id": compiled,
            "frame": frame_of_cid.get(compiled) if compiled else None, "during": crash.during,
            "user_file": user.filename if user else None, "user_line": user.line if user else None,
            "user_function": user.function if user else None,
            # (as the report words them: analyses/crash.py)
            "headline": crash.headline, "called_from": crash.called_from,
            # in torch's loader of an AOTInductor package, and after the log's package build ended, nothing left
            # compiling (check's no-aoti-load-crash; absent in facts saved before)
            "loading_built_aoti_package": crash.loading_aoti_package and aoti_built}


def crash_line(crash: dict[str, Any]) -> str:
    """`Segmentation fault in static_triton_launcher.py:291 (run) while running [0/1]'s compiled code`, as the
    report's finding names it."""
    return crash["headline"] + (f" {crash['during']}" if crash["during"] else "")


def crash_called_from(crash: dict[str, Any] | None) -> str | None:
    """`called from hf_gpt2_static_cache.py:22 in main`: the user's line on the crashed stack."""
    return crash["called_from"] if crash is not None else None


def _warnings(printed: TorchWarnings, frame_of_cid: dict[str, str]) -> list[dict[str, Any]] | None:
    """The warnings torch printed, where the run recorded them (None: a plain log, which cannot say)."""
    if not printed.recorded:
        return None
    return [{"frame": next((frame_of_cid[c] for c in w.compile_ids if c in frame_of_cid), None),
             "source": w.source, "text": _mask(w.headline), "name": w.name, "raised": w.raised, "failure": w.failure}
            for w in printed.warnings]


# ---------------------------------------------------------------- the comparison

# A crash first: a run that died is the change that matters most, and its log stops there (what it lacks after may
# read as changes below).
SECTIONS = ("crash", "environment", "frames", "graph_breaks", "recompiles", "graphs", "numerics", "checkpointing", "compile_time", "autotuning", "cudagraphs", "runtime",
            "warnings", "caches", "failures", "dynamic_shapes")
SECTION_LABELS = {
    "crash": "Crash",
    "environment": "Versions, GPU & config",
    "frames": "Frames compiled",
    "graph_breaks": "Graph breaks",
    "recompiles": "Compiles & recompiles",
    "graphs": "Graphs & kernels",
    "numerics": "Results that differ from eager",
    "checkpointing": "Activation checkpointing",
    "compile_time": "Compile time",
    "autotuning": "Autotuning",
    "cudagraphs": "CUDA graphs",
    "runtime": "Run time (profiles)",
    "warnings": "Warnings torch printed",
    "caches": "Caches",
    "failures": "Failures",
    "dynamic_shapes": "Dynamic shapes",
}


def unread_note(side: str) -> str:
    """Said of a change (or a regression) that what side's log lacks (a cut, records skipped, a run killed while
    compiling) may explain: `may be only what B's log lacks`."""
    return f"may be only what {possessive(side)} log lacks"


_WORSE_WHEN_ADDED = frozenset({"crash", "failures", "graph_breaks", "cudagraphs", "warnings"})


@dataclass
class Change:
    section: str  # a key of SECTION_LABELS
    kind: str  # "added" | "removed" | "changed" | "moved"
    title: str  # one line, for people
    frame: str | None = None  # frame key, when the change belongs to one frame
    a: Any = None  # the value in A (None: absent)
    b: Any = None  # the value in B
    detail: dict[str, Any] = field(default_factory=dict)
    # "A" or "B": a side whose log was read in part (cut, records skipped) or ends early (killed while compiling,
    # crashed) that may explain this change (it has less of what the change names: a frame, compiles, a break it
    # lacks; see _may_be_unread): the change may be only what that side's log lacks, not what the run did.
    unread_side: str | None = None

    @property
    def direction(self) -> str | None:
        """"worse" or "better" where the kind alone misleads: a failure, graph break, crash, CUDA graph skip, torch
        warning or line drawing Inductor's random numbers added is a change for the worse (what `check --baseline` fails on), one removed for the
        better; None for the rest (more graphs or kernels are neither, nor is a break torch's own code makes)."""
        if self.section == "graph_breaks" and isinstance(self.a or self.b, dict) and (self.a or self.b).get("by_torch"):
            return None
        if self.section in _WORSE_WHEN_ADDED and self.kind in ("added", "removed"):
            return "worse" if self.kind == "added" else "better"
        if self.section == "numerics" and self.kind in ("added", "removed") and (self.random_lines or any(
                n.get("kind") == "mutation" for n in (self.b if self.kind == "added" else self.a) or [])):
            return "worse" if self.kind == "added" else "better"
        if self.detail.get("late_hook") and self.kind in ("added", "removed"):  # (a hook compiled calls skipped)
            return "worse" if self.kind == "added" else "better"
        return None

    @property
    def random_lines(self) -> list[dict[str, Any]]:
        """Of a numerics change, the lines whose random numbers compiled code draws with Inductor's generator: one
        added no longer matches eager under a seed, which `check --baseline` fails on. (bf16 fused in float32 is
        neither worse nor better: it rounds less than eager, not wrongly.)"""
        if self.section != "numerics":
            return []
        return [n for n in (self.b if self.kind == "added" else self.a) or [] if n.get("kind") == "random"]

    @property
    def unread_note(self) -> str:
        """What the terminal and the page say after the title of a change a side read in part may explain."""
        return unread_note(self.unread_side) if self.unread_side else ""

    @property
    def guard_lines(self) -> list[tuple[str, str, int]]:
        """(what, guard, times): the guards that fail only in one run, each once; guards that differ only in a
        number are one, with its values (a compiled optimizer step recompiled at every learning rate fails
        `... .item() == 0.004666666666666667`, then `== 0.006`, ...: "== one of 0.004666666666666667, 0.006, …")."""
        out: list[tuple[str, str, int]] = []
        labels = {"new_guard_failures": "new failing guard", "gone_guard_failures": "guard no longer failing"}
        stopped = self.detail.get("stopped_after_failure")
        if stopped:  # the side that stopped compiling never checked the guards the other recompiled for
            other, key = ("A", "gone_guard_failures") if stopped["side"] == "B" else ("B", "new_guard_failures")
            labels[key] = f"failing guard in {other} only (not checked in {stopped['side']})"
        # A guard first at fewer (more) recompiles that the other run's recompiles list too is failing in both: how many
        # recompiles list it in each, not "no longer failing" ("still_failing": guard -> [A's count, B's count])
        both = self.detail.get("still_failing") or {}
        for key, label in labels.items():
            groups: dict[tuple[str, str], list[str]] = {}
            for guard in self.detail.get(key, []):
                counts = both.get(guard)
                said = label if counts is None else f"guard failing in both, listed at {counts[0]} → {counts[1]} recompiles"
                groups.setdefault((said, _GUARD_NUMBER.sub("#", guard)), []).append(guard)
            out.extend((said, _one_of(_in_words(guards, self.guard_words)), 1 if said != label else len(guards))
                       for (said, _), guards in groups.items())
        return out

    @property
    def guard_words(self) -> dict[str, str]:
        """The guards of guard_lines that the report words otherwise (a ___stack0 named as the user's value): torch's
        text -> the words (detail["guard_words"])."""
        return self.detail.get("guard_words") or {}

    @property
    def torch_guards(self) -> dict[str, str]:
        """Each line of guard_lines said in words -> the guard as torch wrote it, where they differ (a page's title)."""
        words = self.guard_words
        found = {}
        for guards in _guard_groups([g for key in ("new_guard_failures", "gone_guard_failures")
                                     for g in self.detail.get(key, [])]):
            shown = _one_of(_in_words(guards, words))
            if shown != _one_of(guards):
                found[shown] = _one_of(guards)
        return found

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "kind": self.kind, "title": self.title, "frame": self.frame,
                "a": self.a, "b": self.b, "detail": self.detail, "unread_side": self.unread_side}


@dataclass
class RunDiff:
    a: RunFacts
    b: RunFacts
    threshold: TimeThreshold
    changes: list[Change] = field(default_factory=list)
    matched_frames: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # timing differences not counted as changes, and why, so nobody wonders
    # A side's log read only in part (cut off, records skipped): said before the changes, which may be only what the
    # cut lost ("7 → 4 compiles"). In the JSON's notes, first.
    partial: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.changes)

    def sections(self) -> dict[str, list[Change]]:
        out: dict[str, list[Change]] = {}
        for change in self.changes:
            out.setdefault(change.section, []).append(change)
        return {s: out[s] for s in SECTIONS if s in out}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "a": self._side_json(self.a),
            "b": self._side_json(self.b),
            "threshold": {"seconds": self.threshold.seconds, "ratio": self.threshold.ratio},
            "changed": bool(self.changes),
            "sections": sorted({c.section for c in self.changes}, key=SECTIONS.index),
            "matched_frames": self.matched_frames,
            "notes": self.partial + self.notes,
            "changes": [c.to_json() for c in self.changes],
        }

    @staticmethod
    def _side_json(facts: RunFacts) -> dict[str, Any]:
        return {"source": facts.source, "torch_version": facts.torch_version, "ran_on": facts.ran_on,
                "compile_time_s": facts.compile_time_s, "frames": len(facts.frames),
                "compiles": sum(len(f.compile_ids) for f in facts.frames.values()), "unread": facts.unread,
                "ends_during": facts.ends_during, "crash": facts.crash}


def short_path(path: str | None) -> str:
    """The file name of a path, for one-line messages."""
    return path.rsplit("/", 1)[-1] if path else "?"


_short = short_path


def failed_compiles(facts: RunFacts, failure: dict[str, Any], compile_ids: list[str] | None = None) -> str:
    """Failed compiles as diff and check name them: "[0/2] train_step (train_step_pitfalls.py:31): Unsupported: Dynamo
    recompile limit exceeded", with " at file.py:35" where torch logged where it failed in the frame; compile_ids
    (the compiles that failed so, "[0/0], [0/1]") in place of the failure's own."""
    frame = facts.frames.get(failure["frame"]) if failure.get("frame") else None
    ids = ", ".join(compile_ids) if compile_ids else failure.get("compile_id")
    who = " ".join(part for part in (ids, frame.label if frame else None) if part)
    at = f" at {short_path(failure['source'])}" if failure.get("source") else ""
    if failure.get("ran_eagerly"):  # no exception: the errors finding's words ("[0/0]: Dynamo skipped forward ...")
        # (they name a frame not the user's, Python's library's, with the user's line that called it: run_facts)
        return f"{ids or 'a compile'}: {failure['ran_eagerly']}{at}: {failure['reason']}"
    return f"{who or 'a compile'}{at}: {failure['type']}: {failure['reason']}"


def _config_value(value: str | None, side: str) -> str:
    """A config value as a person reads it: a string without its JSON quotes (`compile_error`), null as unset;
    true, 3 or [1, 2] as JSON writes them."""
    if value is None:
        return f"(not in {possessive(side)} config)"
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value
    if parsed is None:
        return "(unset)"
    if isinstance(parsed, str):
        return parsed or "(empty)"
    return value


def _differing_numbers(texts: list[str]) -> list[int]:
    """Where the numbers of guards that differ only in their numbers differ: their indexes among the numbers."""
    numbers = [_GUARD_NUMBER.findall(t) for t in texts]
    return [i for i in range(len(numbers[0])) if len({n[i] for n in numbers}) > 1]


def _still_failing(fa: FrameFacts, fb: FrameFacts, gone: list[str], new: list[str]) -> dict[str, Any]:
    """Of the guards first at fewer recompiles in B (gone) or more (new), those the other run's recompiles list as
    failing too: guard -> [how many recompiles list it in A, in B] (Change.guard_lines)."""
    found = {g: [fa.failed_anywhere.get(g, 0), fb.failed_anywhere.get(g, 0)] for g in dict.fromkeys(gone + new)
             if (fb if g in gone else fa).failed_anywhere.get(g)}
    return {"still_failing": found} if found else {}


def _avoidable_text(fa: FrameFacts, fb: FrameFacts) -> str:
    """"; avoidable 4 → 0": where either run has a recompile the recompiles analysis calls expected or cannot tell
    (else all are avoidable, as the recompile counts say), and the avoidable counts differ."""
    if not (fa.expected_recompile_ids or fb.expected_recompile_ids or fa.unknown_recompile_ids
            or fb.unknown_recompile_ids):
        return ""
    na, nb = len(fa.avoidable_recompile_ids), len(fb.avoidable_recompile_ids)
    return f"; avoidable {na} → {nb}" if na != nb else ""


def _guard_words(fa: FrameFacts, fb: FrameFacts, guards: list[str]) -> dict[str, Any]:
    """A change's guard_words: of guards (a change's, as torch wrote them), those either run says in words."""
    words = {g: fa.guard_words.get(g) or fb.guard_words[g] for g in dict.fromkeys(guards)
             if g in fa.guard_words or g in fb.guard_words}
    return {"guard_words": words} if words else {}


def _in_words(guards: list[str], words: dict[str, str]) -> list[str]:
    """Guards as the report says them: one that names a value Dynamo made a name for in the user's words (words, the
    facts' guard_words), any other as torch wrote it."""
    return [words.get(guard, guard) for guard in guards]


def _guard_groups(guards: list[str]) -> list[list[str]]:
    """Guards that differ only in a number, together, in the order they failed."""
    groups: dict[str, list[str]] = {}
    for guard in guards:
        groups.setdefault(_GUARD_NUMBER.sub("#", guard), []).append(guard)
    return list(groups.values())


def _one_of(guards: list[str]) -> str:
    """Guards that differ only in their numbers, as one: the number that differs written as its values."""
    texts = list(dict.fromkeys(guards))
    numbers = [_GUARD_NUMBER.findall(t) for t in texts]
    differ = _differing_numbers(texts)
    if len(differ) != 1:
        return texts[0] if len(texts) == 1 else "; ".join(texts)
    at = differ[0]
    values = "one of " + ", ".join(dict.fromkeys(number_text(n[at]) for n in numbers))
    match = list(_GUARD_NUMBER.finditer(texts[0]))[at]
    return texts[0][:match.start()] + values + texts[0][match.end():]


def most_failed_guard(guards: list[str], words: dict[str, str] | None = None) -> tuple[str, int, str] | None:
    """The guard among these that failed most often, those that differ only in a number counted as one (as
    Change.guard_lines groups them): as _one_of writes it (in the user's words where words, a run's guard_words, has
    them), how often it failed, and its first text as torch wrote it."""
    groups = _guard_groups(guards)
    if not groups:
        return None
    most = max(groups, key=len)  # the first of the largest: the order they failed in
    texts = list(dict.fromkeys(_in_words(most, words or {})))
    if len(texts) > 1 and len(_differing_numbers(texts)) != 1:  # _one_of would list them all
        return f"guards like {texts[0]}", len(most), most[0]
    return _one_of(texts), len(most), most[0]


def multiset_diff(a: list, b: list) -> tuple[list, list]:
    ca, cb = Counter(a), Counter(b)
    return list((ca - cb).elements()), list((cb - ca).elements())


def _node_key(node: list) -> tuple:
    return (node[0], node[1], node[2])


def _diff_nodes(nodes_a: list[list], nodes_b: list[list]) -> dict[str, list] | None:
    """Nodes added, removed or retargeted between two graphs, matched by (op, target, user line)."""
    removed, added = multiset_diff([_node_key(n) for n in nodes_a], [_node_key(n) for n in nodes_b])
    # Same op at the same user line with another target: retargeted, not one removed and one added.
    retargeted = []
    for r in list(removed):
        match = next((x for x in added if x[0] == r[0] and x[2] == r[2] and x[2] is not None), None)
        if match is not None:
            removed.remove(r)
            added.remove(match)
            retargeted.append({"op": r[0], "from": r[1], "to": match[1], "line": r[2]})
    if not (added or removed or retargeted):
        return None
    code_of = {_node_key(n): n[3] for n in nodes_a + nodes_b}
    grid_of = {_node_key(n): n[4] for n in nodes_a + nodes_b if len(n) > 4 and n[4]}
    as_dict = lambda n: {"op": n[0], "target": n[1], "line": n[2], "code": code_of.get(n),  # noqa: E731
                         "grid_of": grid_of.get(n)}
    return {"added": [as_dict(n) for n in added], "removed": [as_dict(n) for n in removed], "retargeted": retargeted}


def _diff_graphs(label: str, key: str, fa: FrameFacts, fb: FrameFacts,
                 runs: tuple[RunFacts, RunFacts] | None = None) -> list[Change]:
    """Graph i of the frame in A against graph i in B; graphs beyond the shorter side are counted. runs: (A, B), where
    a kernel of one side only is looked for in the other run's frames."""
    out: list[Change] = []
    for i in range(min(len(fa.graphs), len(fb.graphs))):
        nodes = _diff_nodes(fa.graphs[i].nodes, fb.graphs[i].nodes)
        if nodes is not None:
            # "1 FX node added", "3 FX nodes added, 1 removed": the noun on the first count, in its number
            parts = [f"{count(len(v), 'FX node') if not j else len(v)} {w}"
                     for j, (w, v) in enumerate((w, v) for w, v in nodes.items() if v)]
            cids = (fa.compile_ids[i] if i < len(fa.compile_ids) else "?", fb.compile_ids[i] if i < len(fb.compile_ids) else "?")
            out.append(Change("graphs", "changed", f"{label}: graph {cids[0]} → {cids[1]}: {', '.join(parts)}", key,
                              len(fa.graphs[i].nodes), len(fb.graphs[i].nodes),
                              {"graph": i, "compile_a": cids[0], "compile_b": cids[1], **nodes}))
    if len(fa.graphs) != len(fb.graphs):
        out.append(Change("graphs", "changed", f"{label}: {len(fa.graphs)} → {len(fb.graphs)} graphs", key,
                          len(fa.graphs), len(fb.graphs)))

    def kernel_total(f: FrameFacts, attr: str) -> dict[str, int] | None:
        known = [getattr(g, attr) for g in f.graphs if getattr(g, attr) is not None]
        if not known or len(known) != len(f.graphs):
            return None  # some graph's output code is not in the log (served from cache): unknown, not zero
        total: Counter = Counter()
        for k in known:
            total.update(k)
        return dict(total)

    for attr, what in (("kernels", "generated kernels"), ("extern_kernels", "extern kernel calls")):
        ka, kb = kernel_total(fa, attr), kernel_total(fb, attr)
        if ka is not None and kb is not None and ka != kb:
            said, detail = _kernels_changed(fa, fb, runs) if attr == "kernels" else ("", {})
            out.append(Change("graphs", "changed", f"{label}: {what} {sum(ka.values())} → {sum(kb.values())}{said}",
                              key, ka, kb, detail))
    return out


def _work_of(f: FrameFacts) -> list[dict[str, Any]] | None:
    """The frame's kernels with what each computes, all its graphs'; None: some graph has no provenance."""
    if not f.graphs or any(g.kernel_work is None for g in f.graphs):
        return None
    return [w for g in f.graphs for w in g.kernel_work or ()]


def _computes(w: dict[str, Any]) -> str:
    """"tanh at custom_ops.py:82": what a kernel computes, by its ops' names and user lines."""
    ops = ", ".join(op.partition(".")[2] or op for op in w["ops"]) or "nothing torch maps"
    return f"{ops}{' at ' + ', '.join(w['lines']) if w['lines'] else ''}"


def _kernels_changed(fa: FrameFacts, fb: FrameFacts,
                     runs: tuple[RunFacts, RunFacts] | None) -> tuple[str, dict[str, Any]]:
    """The kernels that differ, each by what it computes (torch's provenance): kernels computing the same ops at the
    same lines are one kernel renamed (torch names a fused kernel after the nodes it was made for, an op called on its
    own among them); a kernel of one side only is said with the frame of the other run that computed the same, where
    one did (the rest of a function after a graph break, compiled as its own graph). ("", {}): no provenance."""
    wa, wb = _work_of(fa), _work_of(fb)
    if wa is None or wb is None:
        return "", {}
    key = lambda w: (tuple(w["ops"]), tuple(w["lines"]))  # noqa: E731
    only_a, only_b = multiset_diff([key(w) for w in wa], [key(w) for w in wb])
    names_a, names_b = Counter(w["kernel"] for w in wa), Counter(w["kernel"] for w in wb)
    renamed = [(x, y) for x, y in zip(wa, wb) if key(x) == key(y) and x["kernel"] != y["kernel"]
               and names_b[x["kernel"]] == 0 and names_a[y["kernel"]] == 0]
    parts: list[str] = []
    detail: dict[str, Any] = {"kernels_added": [], "kernels_removed": [], "kernels_renamed": []}
    for side, only, work, other in (("B", only_b, wb, 0), ("A", only_a, wa, 1)):
        for k in only:
            w = next(x for x in work if key(x) == k)
            elsewhere = _computed_in(runs[other], k) if runs is not None else None
            where = f", which {'A' if other == 0 else 'B'} computed in {elsewhere}" if elsewhere else ""
            parts.append(f"{'+' if side == 'B' else '-'} {w['kernel']} ({_computes(w)}{where})")
            detail["kernels_added" if side == "B" else "kernels_removed"].append({**w, "other_run_frame": elsewhere})
    for x, y in renamed:
        apart = "; ".join(f"{'B' if op in y['elsewhere'] else 'A'}'s graph calls {op} whole, as its own call "
                          f"{', '.join(calls)}, and torch names the fused kernel after it too"
                          for op, calls in {**x["elsewhere"], **y["elsewhere"]}.items())
        parts.append(f"{x['kernel']} → {y['kernel']}, both {_computes(y)}{' (' + apart + ')' if apart else ''}")
        detail["kernels_renamed"].append({"a": x, "b": y})
    return (f": {'; '.join(parts)}" if parts else ""), detail


def _computed_in(run: RunFacts, k: tuple[tuple[str, ...], tuple[str, ...]]) -> str | None:
    """The label of the run's frame with a kernel computing these ops at these lines."""
    for f in run.frames.values():
        if any((tuple(w["ops"]), tuple(w["lines"])) == k for w in _work_of(f) or ()):
            return f.label
    return None


def _frame_detail(facts: RunFacts, f: FrameFacts) -> dict[str, Any]:
    """What a frame compiled in one run only brings with it."""
    return {"compile_ids": f.compile_ids, "recompiles": f.recompiles, "caches": f.caches,
            "graph_nodes": [len(g.nodes) for g in f.graphs],
            "symbols": [s["source"] for s in facts.symbols if s.get("frame") == f.key],
            "compile_s": round(sum(f.compile_s), 6)}


def _break_key(b: dict) -> tuple:
    return (b["reason"], b["file"], b["line"])


def _option_words(leaf: str) -> tuple[str, ...]:
    return tuple(word for word in leaf.split("_") if word)


def renamed_options(gone: set[str], new: set[str], config_a: dict[str, str], config_b: dict[str, str]) -> dict[str, str]:
    """Options of one torch version (gone) that the other has under another name (new), gone -> new: the same leaf name
    under another prefix (`inductor.cuda.x` -> `inductor.x`), or, under one prefix and with one value, a leaf whose
    words are the other's with words added (`dynamo._shapes_spec` -> `dynamo._dynamic_shapes_spec`). Only a pair that
    each of its options forms with nothing else: two candidates either way are no rename."""
    def candidates(key: str, among: set[str], mine: dict[str, str], theirs: dict[str, str]) -> set[str]:
        prefix, _, leaf = key.rpartition(".")
        found = set()
        for other in among:
            other_prefix, _, other_leaf = other.rpartition(".")
            if leaf == other_leaf and prefix != other_prefix:
                found.add(other)
            elif prefix == other_prefix and mine[key] == theirs[other]:
                words, other_words = _option_words(leaf), _option_words(other_leaf)
                shorter, longer = sorted((words, other_words), key=len)
                if len(shorter) >= 2 and len(shorter) < len(longer) and set(shorter) <= set(longer):
                    found.add(other)
        return found
    pairs = {}
    for key in gone:
        [match] = found if len(found := candidates(key, new, config_a, config_b)) == 1 else [None]
        if match is not None and candidates(match, gone, config_b, config_a) == {key}:
            pairs[key] = match
    return dict(sorted(pairs.items()))


def _config_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """A change for each config key whose value differs. Across two torch versions, the keys only one version has are
    that version's options, not a change the user made (2.13 -> 2.14 adds and drops dozens): one change each way,
    naming a few, every key and value in its detail."""
    changes: list[Change] = []
    upgrade = torch_changed(a, b)
    only = {"A": {}, "B": {}}  # type: dict[str, dict[str, str]]
    for key in sorted(set(a.config) | set(b.config)):
        va, vb = a.config.get(key), b.config.get(key)
        if va == vb:
            continue
        if upgrade and (va is None or vb is None):
            only["B" if va is None else "A"][key] = _config_value(vb if va is None else va, "")
            continue
        kind = "added" if va is None else "removed" if vb is None else "changed"
        changes.append(Change("environment", kind, f"config {key}: {_config_value(va, 'A')} → "
                              f"{_config_value(vb, 'B')}", None, va, vb))
    for old, new in renamed_options(set(only["A"]), set(only["B"]), a.config, b.config).items():
        va, vb = a.config[old], b.config[new]
        value = (f"{_config_value(va, 'A')}, as before" if va == vb
                 else f"{_config_value(va, 'A')} → {_config_value(vb, 'B')}")
        changes.append(Change("environment", "changed", f"config {old} renamed {new} (torch {a.torch_version} → "
                              f"{b.torch_version}): {value}", None, va, vb, {"renamed": {"a": old, "b": new}}))
        del only["A"][old], only["B"][new]
    for side, kind in (("A", "removed"), ("B", "added")):
        keys = only[side]
        if not keys:
            continue
        mine, other = (a, b) if side == "A" else (b, a)
        named = ", ".join(list(keys)[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        changes.append(Change(
            "environment", kind, f"config: {count(len(keys), 'option')} of torch {mine.torch_version} that "
            f"{other.torch_version} does not have ({named})", None,
            len(keys) if side == "A" else None, len(keys) if side == "B" else None,
            {"version_options": keys, "torch": mine.torch_version}))
    return changes


def _program_files(facts: RunFacts) -> set[str]:
    """The files a run compiled frames of or broke graphs in (not the code torch generated, `<eval_with_key>`)."""
    files = {f.filename for f in facts.frames.values() if f.filename and not f.filename.startswith("<")}
    return files | {x["file"] for x in facts.graph_breaks if x.get("file") and not x["file"].startswith("<")}


def relocated_files(a: RunFacts, b: RunFacts) -> dict[str, str]:
    """B's files that are A's in another directory -> A's path: the same program run from another checkout, machine
    or venv (torch 2.14 in a venv of its own runs its optimizer.py from another site-packages). Logs name files by
    absolute path, so every frame and break of such a file read as gone and new. A file of one side only is matched
    to the other side's file with the same name and the most trailing directories in common, where that is one file
    both ways (a package's __init__.py by its folder too); paths both runs name are left alone."""
    files_a, files_b = _program_files(a), _program_files(b)
    only_a, only_b = files_a - files_b, files_b - files_a

    def common_tail(x: str, y: str) -> int:
        n = 0
        for part_x, part_y in zip(reversed(x.split("/")), reversed(y.split("/"))):
            if part_x != part_y:
                break
            n += 1
        return n

    def best(path: str, candidates: set[str]) -> str | None:
        scored = [(common_tail(path, other), other) for other in candidates]
        top = max((n for n, _ in scored), default=0)
        found = [other for n, other in scored if n == top]
        # A package's __init__.py or __main__.py names no module by itself: such a file needs its folder too.
        enough = 2 if path.rsplit("/", 1)[-1] in ("__init__.py", "__main__.py") else 1
        return found[0] if top >= enough and len(found) == 1 else None

    return {path: match for path in sorted(only_b) if (match := best(path, only_a)) and best(match, only_b) == path}


def _moved_onto(facts: RunFacts, moved: dict[str, str]) -> RunFacts:
    """facts with each file of moved named by its other path, wherever a path is (frame keys, breaks, graph nodes'
    lines, symbols)."""
    pattern = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, sorted(moved, key=len, reverse=True)))
                         + r")(?![\w.-])")

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda m: moved[m.group(1)], value)
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    doc = walk(facts.to_json())
    doc["source"] = facts.source  # the log's own path is no program file
    return RunFacts.from_json(doc)


def _step_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """Across two torch versions, the steps one version's compiles ran and the other's never did (its new passes), one
    change each way: said with the versions, where the upgrade's own differences are, so that a compile-time change
    below is read with them."""
    if not a.compile_steps or not b.compile_steps:
        return []
    changes = []
    for side, kind, mine, other in (("A", "removed", a, b), ("B", "added", b, a)):
        steps = {name: s for name, s in mine.compile_steps.items() if name not in other.compile_steps}
        if not steps:
            continue
        slowest = sorted(steps, key=lambda name: -steps[name])
        named = ", ".join(f"{name} ({format_seconds(steps[name])})" for name in slowest[:3])
        more = f" and {len(steps) - 3} more" if len(steps) > 3 else ""
        changes.append(Change(
            "environment", kind, f"compile steps torch {mine.torch_version} ran and {other.torch_version} did not: "
            f"{named}{more}", None, steps if side == "A" else None, steps if side == "B" else None,
            {"compile_steps": steps, "torch": mine.torch_version}))
    return changes


def _torch_cause(a: RunFacts, b: RunFacts, phases: list[dict[str, Any]], sides: tuple[str, str]) -> str:
    """Why compile time changed, where the runs ran two torch versions: torch's own work may be part of it."""
    grew = max(phases, key=lambda p: abs(p["delta_s"]), default=None)
    most = (f"; the most in {grew['label']} ({format_seconds(grew['a_s'])} → {format_seconds(grew['b_s'])})"
            if grew else "")
    return (f"{sides[0]} ran torch {a.torch_version} and {sides[1]} {b.torch_version}, whose compiles do other work "
            f"(passes, defaults){most}: part of it may be the upgrade, not the program; compare runs of one torch to "
            "measure the program's change alone")


def _say_library_changes(a: RunFacts, b: RunFacts, result: RunDiff) -> None:
    """Across two torch versions, frames, breaks and failures in Python's own library that one run only has are marked,
    and a note says why they may be the version's: torch calls that code from compiled code (2.14's compiled autograd
    calls inspect.getattr_static, and Dynamo compiles it), so the version, not the program, may be what changed them."""
    if not torch_changed(a, b):
        return
    marked: dict[str, Counter[str]] = {"added": Counter(), "removed": Counter()}
    for change in result.changes:
        if change.kind not in marked or change.section not in ("frames", "graph_breaks", "failures"):
            continue
        if change.section == "graph_breaks":
            found = change.b if change.kind == "added" else change.a
            file = found.get("file") if isinstance(found, dict) else None
        else:
            frame = (b if change.kind == "added" else a).frames.get(change.frame or "")
            file = frame.filename if frame is not None else None
        if file and is_python_library_file(file):
            change.title += " (Python's own library)"
            change.detail = {**change.detail, "python_library": True}
            marked[change.kind][change.section] += 1
    words = {"frames": "frame", "graph_breaks": "graph break", "failures": "failure"}
    for kind, side, mine, other in (("added", "B", b, a), ("removed", "A", a, b)):
        if marked[kind]:
            what = ", ".join(count(n, words[section]) for section, n in marked[kind].items())
            result.notes.append(
                f"{what} in Python's own library only in {side}: torch calls such code from compiled code, and torch "
                f"{mine.torch_version} did where {other.torch_version} did not, so the torch version, not the "
                "program, may explain them")


def _late_hook_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """A hook registered after compiling (RunFacts.late_hooks) in one run and not the other, by its frame and module:
    the hook the calls of one run's earlier compile skipped, which a recompile count says nothing of (the fixed program
    registers it first and recompiles as often). Nothing where a side's facts did not keep them."""
    if a.late_hooks is None or b.late_hooks is None:
        return []

    def said(side: str, hook: dict[str, Any]) -> str:
        return (f"{hook['module']}: {hook['hooks']} registered after {hook['function']} was compiled in {side} "
                f"only: calls {possessive(side)} {hook['served_by']} served after it ran without it (found by "
                f"{hook['found_by']}'s guards)")
    ka = {(h["frame"], h["module"]): h for h in a.late_hooks}
    kb = {(h["frame"], h["module"]): h for h in b.late_hooks}
    return ([Change("recompiles", "removed", said("A", h), h["frame"], h, None, {"late_hook": True})
             for k, h in ka.items() if k not in kb]
            + [Change("recompiles", "added", said("B", h), h["frame"], None, h, {"late_hook": True})
               for k, h in kb.items() if k not in ka])


def diff_runs(a: RunFacts, b: RunFacts, threshold: TimeThreshold = TimeThreshold(),
              sides: tuple[str, str] = ("A", "B")) -> RunDiff:
    """sides: what the compile time's cause calls the runs (`check` says "the baseline" and "the run")."""
    moved = relocated_files(a, b)
    if moved:
        b = _moved_onto(b, moved)
    result = RunDiff(a, b, threshold)
    changes = result.changes
    if moved:
        named = "; ".join(f"{path} as {other}" for path, other in list(moved.items())[:2])
        more = f" and {count(len(moved) - 2, 'more file')}" if len(moved) > 2 else ""
        result.notes.append(f"{sides[1]} ran its files from another directory: matched by name ({named}{more})")
    changes.extend(_crash_changes(a, b))

    # Environment: the versions and the GPU (where both logs say), then config keys whose values differ.
    config = _config_changes(a, b) if a.config and b.config else []
    if torch_changed(a, b):
        # A log holds every option's value, set or not: across two torch versions, an option whose value differs
        # may be one whose default changed, which the user did not touch. Said once, where the versions are.
        values = [c.detail["renamed"]["b"] if "renamed" in c.detail else c.title.split(":")[0].removeprefix("config ")
                  for c in config if c.a is not None and c.b is not None and c.a != c.b]
        hedge = ("" if not values else " (the config value below that differs may be one of the versions' own defaults, "
                 "unless the program sets it)" if len(values) == 1 else f" (the {len(values)} config values below that differ may be the "
                 "versions' own defaults, unless the program sets them)")
        changes.append(Change(
            "environment", "changed", f"torch: {a.torch_version} → {b.torch_version}{hedge}", None,
            a.torch_version, b.torch_version, {"config_defaults_may_differ": values} if values else {}))
    for what in ("Python", "CUDA", "Triton", "GPU"):
        va, vb = a.ran_on.get(what), b.ran_on.get(what)
        if va and vb and va != vb:
            changes.append(Change("environment", "changed", f"{what}: {va} → {vb}", None, va, vb))
    if torch_changed(a, b):
        changes.extend(_step_changes(a, b))
    changes.extend(config)

    # Frames.
    only_a = [k for k in a.frames if k not in b.frames]
    only_b = [k for k in b.frames if k not in a.frames]
    result.matched_frames = [k for k in a.frames if k in b.frames]
    for k in only_a:
        f = a.frames[k]
        changes.append(Change("frames", "removed", f"{f.label} compiled only in A ({count(len(f.compile_ids), 'compile')})",
                              k, len(f.compile_ids), None, _frame_detail(a, f)))
    for k in only_b:
        f = b.frames[k]
        changes.append(Change("frames", "added", f"{f.label} compiled only in B ({count(len(f.compile_ids), 'compile')})",
                              k, None, len(f.compile_ids), _frame_detail(b, f)))

    changes.extend(_recompiles_in_all(a, b, only_a, only_b))
    if not result.matched_frames:
        changes.extend(_graphs_in_all(a, b, only_a, only_b))

    # Per matched frame: compiles, recompiles, new guard failures, statuses, graphs.
    for k in result.matched_frames:
        fa, fb = a.frames[k], b.frames[k]
        label = frames_label(fa, fb)
        if len(fa.compile_ids) != len(fb.compile_ids):
            gone, new = multiset_diff(fa.guard_failures, fb.guard_failures)
            # The run with fewer compiles whose last one failed: a failure torch suppressed (suppress_errors, a
            # graph break it cannot resume from) makes Dynamo run the code uncompiled from then on, so the guards
            # the other run recompiled for were never checked there: not a fix of what made them fail.
            fewer, side = (fb, "B") if len(fb.compile_ids) < len(fa.compile_ids) else (fa, "A")
            stopped = fewer.compile_ids[-1] if fewer.statuses and fewer.statuses[-1] == "error" else None
            said = (f": {possessive(side)} last compile of {fewer.function_words}, {stopped}, failed, and {side} compiled it no "
                    "more" if stopped else "")
            # (compiles that are no recompile: torch._dynamo.reset() made the program compile the function from scratch)
            said += "".join(f"; {_afresh_text(side_, f)}" for side_, f in (("A", fa), ("B", fb)) if f.afresh)
            changes.append(Change(
                "recompiles", "changed",
                f"{label}: {len(fa.compile_ids)} → {len(fb.compile_ids)} compiles ({fa.recompiles} → {fb.recompiles} "
                f"recompiles{_avoidable_text(fa, fb)}){said}",
                k, len(fa.compile_ids), len(fb.compile_ids),
                {"recompiles_a": fa.recompiles, "recompiles_b": fb.recompiles,
                 "avoidable_a": fa.avoidable_recompile_ids, "avoidable_b": fb.avoidable_recompile_ids,
                 **({"afresh_a": fa.afresh, "afresh_b": fb.afresh, "afresh_cached_a": fa.afresh_cached,
                     "afresh_cached_b": fb.afresh_cached} if fa.afresh or fb.afresh else {}),
                 "new_guard_failures": new, "gone_guard_failures": gone, **_guard_words(fa, fb, new + gone),
                 **_still_failing(fa, fb, gone, new),
                 **({"stopped_after_failure": {"side": side, "compile_id": stopped}} if stopped else {})}))
        else:
            gone, new = multiset_diff(fa.guard_failures, fb.guard_failures)
            if new or gone:
                avoidable = _avoidable_text(fa, fb)
                changes.append(Change("recompiles", "changed", f"{label}: recompiles for another guard"
                                      + (f" ({avoidable[2:]})" if avoidable else ""), k,
                                      fa.guard_failures, fb.guard_failures,
                                      {"new_guard_failures": new, "gone_guard_failures": gone,
                                       "avoidable_a": fa.avoidable_recompile_ids,
                                       "avoidable_b": fb.avoidable_recompile_ids,
                                       **_guard_words(fa, fb, new + gone), **_still_failing(fa, fb, gone, new)}))
        sa, sb = Counter(fa.statuses), Counter(fb.statuses)
        if (sa, len(fa.no_graph)) != (sb, len(fb.no_graph)) and len(fa.compile_ids) == len(fb.compile_ids):
            changes.append(Change("recompiles", "changed", f"{label}: outcomes: {fa.outcomes} → {fb.outcomes}", k,
                                  dict(sa), dict(sb),
                                  {"no_graph_a": fa.no_graph, "no_graph_b": fb.no_graph}
                                  if fa.no_graph or fb.no_graph else {}))
        changes.extend(_diff_graphs(label, k, fa, fb, (a, b)))
    changes.extend(_late_hook_changes(a, b))

    # Graph breaks: added, removed, moved (same reason in the same function, another line).
    ka = {_break_key(x): x for x in a.graph_breaks}
    kb = {_break_key(x): x for x in b.graph_breaks}
    removed = [ka[k] for k in ka if k not in kb]
    added = [kb[k] for k in kb if k not in ka]
    for r in list(removed):
        match = next((x for x in added if x["reason"] == r["reason"] and x["file"] == r["file"]
                      and (x["function"] == r["function"] or (x["code"] and x["code"] == r["code"]))), None)
        if match is not None:
            removed.remove(r)
            added.remove(match)
            changes.append(Change("graph_breaks", "moved",
                                  f"graph break moved: {r['reason']} ({_short(r['file'])}:{r['line']} → {match['line']})",
                                  match.get("frame") or r.get("frame"), r, match))
    # torch's own breaks (by_torch) come after the program's, and say so: one gone is no fix of the program's.
    for x in sorted(removed, key=lambda x: bool(x.get("by_torch"))):
        changes.append(Change("graph_breaks", "removed",
                              f"graph break gone: {x['reason']} {break_at(x)}{BY_TORCH_GONE if x.get('by_torch') else ''}",
                              x.get("frame"), x, None))
    for x in sorted(added, key=lambda x: bool(x.get("by_torch"))):
        changes.append(Change("graph_breaks", "added",
                              f"new graph break: {x['reason']} {break_at(x)}{BY_TORCH_NEW if x.get('by_torch') else ''}",
                              x.get("frame"), None, x))
    for bk in set(ka) & set(kb):
        if ka[bk]["count"] != kb[bk]["count"]:
            changes.append(Change("graph_breaks", "changed", f"graph break {bk[0]} {break_at(kb[bk])}: hit "
                                  f"{ka[bk]['count']} → {kb[bk]['count']} times", kb[bk].get("frame") or ka[bk].get("frame"),
                                  ka[bk]["count"], kb[bk]["count"]))

    # Caches: outcomes per cache, of the frames compiled in both runs (a frame compiled in one run only
    # brings its own lookups; they are listed with it, not as a change of cache behaviour).
    def cache_totals(facts: RunFacts) -> dict[str, dict[str, int]]:
        total: dict[str, Counter] = {}
        for k in result.matched_frames:
            for cache, outcomes in facts.frames[k].caches.items():
                total.setdefault(cache, Counter()).update(outcomes)
        return {c: dict(n) for c, n in total.items()}

    totals_a, totals_b = cache_totals(a), cache_totals(b)

    # Compile time: total, per phase, and which compiles account for it (only beyond the noise threshold).
    upgraded = torch_changed(a, b)
    if threshold.significant(a.compile_time_s, b.compile_time_s):
        phases = []
        for phase in sorted(set(a.phases) | set(b.phases), key=list(PHASE_LABELS).index):
            pa, pb = a.phases.get(phase, 0.0), b.phases.get(phase, 0.0)
            if threshold.significant(pa, pb):
                # One label for both runs: each run's, where they agree (a CPU run against a GPU run: the default)
                label_a, label_b = (run.phase_labels.get(phase, PHASE_LABELS[phase]) for run in (a, b))
                phases.append({"phase": phase, "label": label_a if label_a == label_b else PHASE_LABELS[phase],
                               "a_s": pa, "b_s": pb, "delta_s": round(pb - pa, 6)})
        compiles: list[dict[str, Any]] = []
        for k in set(a.frames) | set(b.frames):
            frame_a, frame_b = a.frames.get(k), b.frames.get(k)  # None: the frame compiled in one run only
            n = max(len(frame_a.compile_s) if frame_a else 0, len(frame_b.compile_s) if frame_b else 0)
            for i in range(n):
                ta = frame_a.compile_s[i] if frame_a and i < len(frame_a.compile_s) else 0.0
                tb = frame_b.compile_s[i] if frame_b and i < len(frame_b.compile_s) else 0.0
                cid_a = frame_a.compile_ids[i] if frame_a and i < len(frame_a.compile_ids) else None
                cid_b = frame_b.compile_ids[i] if frame_b and i < len(frame_b.compile_ids) else None
                compiles.append({"frame": k, "compile_a": cid_a, "compile_b": cid_b, "a_s": ta, "b_s": tb,
                                 "delta_s": round(tb - ta, 6)})
        compiles.sort(key=lambda c: -abs(c["delta_s"]))
        changes.append(Change("compile_time", "changed",
                              f"compile time {format_seconds(a.compile_time_s)} → {format_seconds(b.compile_time_s)} "
                              f"({format_seconds_change(b.compile_time_s - a.compile_time_s)})", None, a.compile_time_s, b.compile_time_s,
                              {"phases": phases, "compiles": compiles[:10],
                               "cause": _cache_cause(a, b, totals_a, totals_b, sides) or (
                                   _torch_cause(a, b, phases, sides) if upgraded else None)}))
    elif a.compile_time_s != b.compile_time_s:
        # A run the caches served and that took as long says why: what served it, and what it compiled all the same
        served = _served_yet_compiled(a, b, totals_a, totals_b, sides)
        went = _where_time_went(a, b, sides)
        result.notes.append(threshold.not_a_change("compile time", a.compile_time_s, b.compile_time_s)
                            + (f"; {served}" if served else "") + (f"; {went}" if went else ""))

    changes.extend(_autotuning_changes(a, b, threshold, result))

    # CUDA graphs: compiles run without them in one run only (of the frames compiled in both), by reason.
    # A graph never recorded is one fact, whether or not that run's stderr said why (a backward left pending): the
    # runs compare on it, and each says its own reason.
    def skip_key(x: dict[str, Any]) -> tuple[str, str]:
        return x["frame"], NEVER_RECORDED if x.get("never_recorded") else x["reason"]

    reason_a = {skip_key(x): x["reason"] for x in a.cudagraph_skips}
    reason_b = {skip_key(x): x["reason"] for x in b.cudagraph_skips}
    gone_keys, new_keys = multiset_diff([skip_key(x) for x in a.cudagraph_skips if x["frame"] in result.matched_frames],
                                        [skip_key(x) for x in b.cudagraph_skips if x["frame"] in result.matched_frames])
    gone = [(key[0], reason_a[key]) for key in gone_keys]
    new = [(key[0], reason_b[key]) for key in new_keys]
    for frame_key_, reason in new:
        before = next((g for g in gone if g[0] == frame_key_), None)
        if before is not None:  # without CUDA graphs in both runs, for another reason
            gone.remove(before)
            changes.append(Change("cudagraphs", "changed", f"CUDA graphs still not used, now: {reason}", frame_key_,
                                  {"frame": frame_key_, "reason": before[1]}, {"frame": frame_key_, "reason": reason}))
            continue
        changes.append(Change("cudagraphs", "added", f"CUDA graphs skipped in B: {reason}", frame_key_, None,
                              {"frame": frame_key_, "reason": reason}))
    for frame_key_, reason in gone:
        changes.append(Change("cudagraphs", "removed", f"CUDA graphs no longer skipped: {reason}", frame_key_,
                              {"frame": frame_key_, "reason": reason}, None))
    changes.extend(_cudagraph_use_changes(a, b, result))

    # Caches: outcomes per cache, of the frames compiled in both runs (totals_a, totals_b, above).
    for cache in sorted(set(totals_a) | set(totals_b)):
        ca, cb = totals_a.get(cache, {}), totals_b.get(cache, {})
        if ca != cb:
            fmt = lambda c: ", ".join(count(n, o) for o, n in sorted(c.items())) or "no lookups"  # noqa: E731
            changes.append(Change("caches", "changed", f"{CACHES.get(cache, cache)}: {fmt(ca)} → {fmt(cb)}", None, ca, cb))

    # Failures.
    key_f = lambda x: (x["frame"], x["type"], x["reason"])  # noqa: E731
    fa_keys, fb_keys = {key_f(x): x for x in a.failures}, {key_f(x): x for x in b.failures}
    # Which compiles failed so (one key: the same error in the same frame, at each of its compiles): the title names
    # them as check's rules do ("new failure: [0/0] f (diff_pair.py:30): ...").
    def failed_ids(fk: tuple, facts: RunFacts) -> list[str]:
        return [y["compile_id"] for y in facts.failures if key_f(y) == fk and y.get("compile_id")]
    for fk, x in fa_keys.items():
        if fk not in fb_keys:
            gone_ids = failed_ids(fk, a)
            changes.append(Change("failures", "removed", f"failure gone: {failed_compiles(a, x, gone_ids)}",
                                  x.get("frame"), x, None, {"compile_ids": gone_ids}))
    for fk, x in fb_keys.items():
        if fk not in fa_keys:
            failed = failed_ids(fk, b)
            frame = b.frames.get(x["frame"]) if x.get("frame") else None
            changes.append(Change("failures", "added", f"new failure: {failed_compiles(b, x, failed)}",
                                  x.get("frame"), None, x,
                                  {"compile_ids": failed, "function": frame.label if frame is not None else None}))
    # (after the failures: a warning that reports a failure gone or new is said with it)
    changes.extend(_warning_changes(a, b, result, changes))

    # Dynamic shapes: symbols by source, specializations by sources and value.
    def matched(x: dict) -> bool:  # decisions inside a frame compiled in one run only belong to that frame's line
        return x.get("frame") is None or x["frame"] in result.matched_frames

    # A symbol is keyed by its source and line, and by whether the frame's first compile made it
    # (mark_dynamic, dynamic=True) or a recompile did (automatic dynamic, after a size changed).
    # (an unbacked symbol AOTAutograd made again is the one Dynamo made: dynamic_shapes.SymbolCreated.retrace_of)
    sym_a = [(sym["source"], sym["file"], sym["line"], sym.get("first_compile")) for sym in a.symbols
             if matched(sym) and not sym.get("retrace_of")]
    sym_b = [(sym["source"], sym["file"], sym["line"], sym.get("first_compile")) for sym in b.symbols
             if matched(sym) and not sym.get("retrace_of")]
    torch_lines = {(s["source"], s["file"], s["line"]): s.get("torch_line") for s in [*a.symbols, *b.symbols]}
    placed = lambda s: _at(s[1], s[2], torch_lines.get(s[:3]))  # noqa: E731
    # A name Dynamo made (a resume function's L['___stack0']) is said as the user's code has it; it is keyed by the name
    # still (the facts of an older run lack the words), and its words by the name and the line that used it: another
    # resume function's ___stack0 is another value.
    in_words: dict[tuple, str] = {(s["source"], s["file"], s["line"]): s["source_text"]
                                  for s in [*a.symbols, *b.symbols] if s.get("source_text")}
    in_words.update(((src, x["file"], x["line"]), text) for x in [*a.specializations, *b.specializations]
                    for src, text in (x.get("described_sources") or {}).items())

    # An unbacked symbol has no source (a value the program read from a tensor: .item(), .tolist()): it is said by its
    # name, which the symbols of one line share in each run, and keyed by its line.
    unbacked_names: dict[tuple, str] = {}
    for s in [*a.symbols, *b.symbols]:
        if s["source"] is None and s.get("symbol"):
            unbacked_names.setdefault((s["file"], s["line"]), s["symbol"])

    def words(source: str | None, file: str | None, line: int | None) -> str:
        if source is None:
            name = unbacked_names.get((file, line))
            return f"a data-dependent value ({name}, unbacked)" if name else "a data-dependent value (unbacked)"
        return in_words.get((source, file, line), source)

    def with_words(fact: dict[str, Any], source: str, file: str | None, line: int | None) -> dict[str, Any]:
        said = in_words.get((source, file, line))
        return {**fact, "source_text": said} if said else fact

    gone, new = multiset_diff(sym_a, sym_b)
    when = lambda first: "from the first compile" if first else "after a recompile"  # noqa: E731
    for s in list(gone):
        other = next((x for x in new if x[:3] == s[:3]), None)
        if other is not None:
            gone.remove(s)
            new.remove(other)
            changes.append(Change("dynamic_shapes", "changed", f"{words(*s[:3])} dynamic {when(other[3])} (was {when(s[3])}; "
                                  f"{placed(s)})", None, with_words({"source": s[0], "first_compile": s[3]}, *s[:3]),
                                  with_words({"source": s[0], "first_compile": other[3]}, *s[:3])))
    # (one change per symbol, with how many: each recompile of a frame makes its symbols again)
    # (the lines do not say which compile made it: one line for a symbol made by the first compile and again by a recompile)
    for s, n in Counter(x[:3] for x in gone).items():
        changes.append(Change("dynamic_shapes", "removed", f"dynamic symbol for {words(*s[:3])} removed ({placed(s)})"
                              + (f" (×{n})" if n > 1 else ""), None,
                              with_words({"source": s[0], "file": s[1], "line": s[2]}, *s[:3]), None))
    for s, n in Counter(x[:3] for x in new).items():
        changes.append(Change("dynamic_shapes", "added", f"new dynamic symbol for {words(*s[:3])} ({placed(s)})"
                              + (f" (×{n})" if n > 1 else ""), None, None,
                              with_words({"source": s[0], "file": s[1], "line": s[2]}, *s[:3])))
    changes.extend(_unbacked_in_unmatched_frames(a, b, matched))

    def spec_placed(x: dict[str, Any]) -> str:
        """Where a specialization is, as the report places it (dynamic_shapes.read_placement): "at prog.py:3"; where
        torch logged no line for it, what was read and where."""
        location = UserLocation(x["file"], x["line"], x.get("function")) if x["file"] else None
        torch_location = UserLocation(**x["torch_location"]) if x.get("torch_location") else None
        return placement_text(read_placement(x.get("read_text"), location, torch_location)) or "location not in the log"

    places = {side: {(tuple(x["sources"]), x["file"], x["line"]): spec_placed(x) for x in facts.specializations}
              for side, facts in (("removed", a), ("added", b))}
    spec_a = [(tuple(s["sources"]), s["value"], s["file"], s["line"]) for s in a.specializations if matched(s)]
    spec_b = [(tuple(s["sources"]), s["value"], s["file"], s["line"]) for s in b.specializations if matched(s)]
    gone, new = multiset_diff(spec_a, spec_b)
    # (one change per source and place, with every value: a compiled optimizer step specialized its learning rate
    # at each of five values, which one fix, a tensor lr, undoes)
    for specs, kind, verb in ((gone, "removed", "no longer specialized"), (new, "added", "now specialized")):
        by_place: dict[tuple, list[str]] = {}
        for sources, value, file, line in specs:
            by_place.setdefault((sources, file, line), []).append(value)
        for (sources, file, line), values in by_place.items():
            shown = values[0] if len(values) == 1 else f"{len(values)} values: {', '.join(number_text(v) for v in values)}"
            spec = {"sources": list(sources), "value": values[0], "values": values, "file": file, "line": line}
            changes.append(Change("dynamic_shapes", kind, f"{verb}: {', '.join(words(src, file, line) for src in sources)} = {shown} ({places[kind][(sources, file, line)]})",
                                  None, spec if kind == "removed" else None, spec if kind == "added" else None))
    changes.extend(_export_dim_changes(a.export_dims, b.export_dims))
    changes.extend(_aoti_changes(a.aoti_packages, b.aoti_packages))
    changes.extend(_user_kernel_changes(a.user_kernels, b.user_kernels))
    changes.extend(_checkpointing_changes(a, b))
    changes.extend(_numerics_changes(a, b))
    changes.extend(_runtime_changes(a, b, result, sides))
    # In the order of SECTIONS, as `sections` lists them and the terminal and page show them (stable: in each
    # section, the order found).
    _say_library_changes(a, b, result)
    changes.sort(key=lambda c: SECTIONS.index(c.section))
    # A log read only in part (cut off, corrupt lines): what it lacks may look like a change, so the diff says so,
    # first, and marks each change where that side has less (a frame, compiles, a break past a cut).
    # A log that ends while a compile ran (a killed job's, whole to its last line), or at a crash, lacks what came
    # after in the same way.
    for side, facts, other in (("A", a, b), ("B", b, a)):
        if not facts.unread and not facts.ends_during and facts.crash is None:
            continue
        not_read = Unread.from_json(facts.unread) if facts.unread else None
        marked = 0
        if (not_read is not None and not_read.records_lost) or facts.ends_during or facts.crash is not None:
            for change in changes:
                if change.unread_side is None and _may_be_unread(change, side, facts, other):
                    change.unread_side = side
                    marked += 1
        said = f"; the {count(marked, 'change')} it may explain {'says' if marked == 1 else 'say'} so" if marked else ""
        if not_read is not None:
            result.partial.append(f"{possessive(side)} log was not read in full ({not_read.describe()}): the diff compares what "
                                  f"was read, so what {side} logged past that is missing and may show below as a change "
                                  "(fewer compiles, a guard no longer failing)" + said)
            said = ""
        if facts.crash is not None:  # (a crash while compiling also ends during a compile: the crash says why)
            ends = f"{facts.ends_during}, " if facts.ends_during else ""
            result.partial.append(f"{possessive(side)} log ends {ends}where the program crashed ({crash_line(facts.crash)}): "
                                  "what it would have done after is not in the log and may show below as a change"
                                  + said)
        elif facts.ends_during:
            result.partial.append(f"{possessive(side)} log ends {facts.ends_during} (the program was stopped, crashed or was "
                                  "killed while compiling): what it did after is not in the log and may show below as "
                                  "a change" + said)
    return result


def _where_time_went(a: RunFacts, b: RunFacts, sides: tuple[str, str] = ("A", "B")) -> str | None:
    """"B's extra 64.51 s went mostly to Autotuning (0 µs → 44.38 s, 3 more max-autotune searches, 43.05 s of it
    compiling candidates) and C++ compile (46.80 s → 71.61 s)": the phases that grew with the slower run, the most
    first (two at most), said where the difference is no change by the threshold: cpu_autotune's max-autotune took 2x
    the default mode, and a note that said no more hid 44 s of searches. None unless autotuning is one of them: a
    search is work one run chose to do, where phases that merely moved with the machine's load are noise, not a cause."""
    slower, faster, name = (b, a, sides[1]) if b.compile_time_s > a.compile_time_s else (a, b, sides[0])
    grew = sorted(((slower.phases.get(p, 0.0) - faster.phases.get(p, 0.0), p) for p in slower.phases), reverse=True)
    grew = [(delta, p) for delta, p in grew if delta >= 1.0][:2]
    if "autotune" not in (p for _, p in grew):
        return None
    said = []
    for _, phase in grew:
        label = slower.phase_labels.get(phase) or PHASE_LABELS.get(phase, phase)
        text = f"{label} ({format_seconds(faster.phases.get(phase, 0.0))} → {format_seconds(slower.phases[phase])}"
        if phase == "autotune":
            compiling = sum(s.get("candidate_compile_s") or 0.0 for s in slower.autotune_searches)
            searches = len(slower.autotune_searches) - len(faster.autotune_searches)
            text += f", {searches} more max-autotune {'search' if searches == 1 else 'searches'}" if searches > 0 else ""
            text += f", {format_seconds(compiling)} of it compiling candidates" if compiling else ""
        said.append(text + ")")
    extra = format_seconds(abs(b.compile_time_s - a.compile_time_s))
    return f"{name}'s extra {extra} went mostly to " + " and ".join(said)


def _served_yet_compiled(a: RunFacts, b: RunFacts, totals_a: dict[str, dict[str, int]],
                         totals_b: dict[str, dict[str, int]], sides: tuple[str, str] = ("A", "B")) -> str | None:
    """"B's caches served what A compiled anew (FX graph cache: 4 hits where A's 4 missed; ...), yet B compiled its
    C++ kernels again: ...": the side whose lookups (of the frames both compiled) hit where the other's missed, each
    cache that served it, and the kernels the FX graph cache's hits still compiled (caches.kernels_compiled_again).
    None where neither side hit more often."""
    for (run, totals, name), (other_run, other_totals, other) in (((a, totals_a, sides[0]), (b, totals_b, sides[1])),
                                                                  ((b, totals_b, sides[1]), (a, totals_a, sides[0]))):
        hits = {c: totals.get(c, {}).get("hit", 0) for c in CACHES}
        gained = [f"{CACHES[c]}: {count(n, 'hit')} where {possessive(other)} {other_totals[c]['miss']} missed"
                  for c, n in hits.items() if n > other_totals.get(c, {}).get("hit", 0)
                  and other_totals.get(c, {}).get("miss")]
        if not gained:
            continue
        said = f"{possessive(name)} caches served what {other} compiled anew ({'; '.join(gained)})"
        again = run.kernels_again
        if again:
            label = run.phase_labels.get("kernel_compile", PHASE_LABELS["kernel_compile"])
            said += (f", yet {name} compiled its kernels again: {and_list(again['compile_ids'])} hit the FX graph cache "
                     f"and {label} still took {format_seconds(again['seconds'])} of its "
                     f"{format_seconds(run.compile_time_s)} ({other}: {format_seconds(other_run.phases.get('kernel_compile', 0.0))}; a hit gives Inductor's generated code; the compiled "
                     f"kernels come from {possessive(name)} Inductor cache directory, which did not hold them, as "
                     "after torch.compiler.load_cache_artifacts into an empty one)")
        return said
    return None


def _cache_cause(a: RunFacts, b: RunFacts, totals_a: dict[str, dict[str, int]],
                 totals_b: dict[str, dict[str, int]], sides: tuple[str, str] = ("A", "B")) -> str | None:
    """Why compile time changed, where the caches say so: the faster run's lookups (of the frames both compiled) hit
    where the slower run's missed, so it reused compiled graphs the slower compiled anew (a warm cache against a cold
    one), with what torch logged those hits saved. None where the faster run hit no more often."""
    a_faster = a.compile_time_s < b.compile_time_s
    faster, slower = sides if a_faster else sides[::-1]
    fast = a if a_faster else b
    fast_totals, slow_totals = (totals_a, totals_b) if a_faster else (totals_b, totals_a)
    hits_fast = sum(outcomes.get("hit", 0) for outcomes in fast_totals.values())
    hits_slow = sum(outcomes.get("hit", 0) for outcomes in slow_totals.values())
    misses_slow = sum(outcomes.get("miss", 0) for outcomes in slow_totals.values())
    if hits_fast <= hits_slow or not misses_slow:
        return None
    saved = f"; torch logged {format_seconds(fast.cache_saved_s)} of compiling saved by {possessive(faster)} hits" if fast.cache_saved_s else ""
    return (f"{possessive(faster)} cache lookups hit where {possessive(slower)} missed ({count(hits_fast, 'hit')} in {faster}, "
            f"{hits_slow} in {slower}): {faster} reused graphs that {slower} compiled anew{saved}")


def _may_be_unread(change: Change, side: str, facts: RunFacts, other: RunFacts) -> bool:
    """Whether what side's log did not read may explain change: that side has less of what it names, or it is a frame
    of that side only whose first line is unknown (its compile's metrics were not read) while the other side compiled
    a frame of that file and function: one frame, seen as two.

    A graph, and the code made of it, of a compile that ended (its metrics read) was logged before the cut, whole:
    its nodes and kernels are what the run made. Only a compile that had not ended, or one the cut left out (fewer
    graphs), may lack them."""
    frame = facts.frames.get(change.frame or "")
    if change.section == "frames":
        return _side_with_less(change) == side or (frame is not None and frame.first_line is None and any(
            f.filename == frame.filename and f.function == frame.function for f in other.frames.values()))
    if _side_with_less(change) != side:
        return False
    if change.section == "graphs" and frame is not None:
        ended = [status != MISSING for status in frame.statuses]
        if "graph" in change.detail:  # one graph's nodes: that compile's
            compile_id = change.detail[f"compile_{side.lower()}"]
            return compile_id not in frame.compile_ids or not ended[frame.compile_ids.index(compile_id)]
        if isinstance(change.a, dict):  # the frame's kernels, all its graphs'
            other_frame = other.frames.get(change.frame or "")
            return not all(ended) or (other_frame is not None and len(frame.graphs) < len(other_frame.graphs))
    return True


def _side_with_less(change: Change) -> str | None:
    """"A" or "B": the side that has less of what a change names (a frame, break or failure it lacks, fewer compiles,
    graphs, kernels, cache lookups or seconds), else None (another value, a move, the environment: none a cut
    makes)."""
    if change.section == "environment" or change.kind == "moved":
        return None
    a, b = change.a, change.b
    if change.section == "recompiles" and isinstance(a, dict) and isinstance(b, dict):
        # Outcomes: a compile whose metrics lay past a cut ends "without metrics"; the side with fewer ends has less.
        a, b = ({status: n for status, n in x.items() if status != MISSING} for x in (a, b))
    if a == b:
        return None
    if a is None or b is None:
        return "A" if a is None else "B"
    if _at_most(a, b):
        return "A"
    if _at_most(b, a):
        return "B"
    return None


def _recompiles_in_all(a: RunFacts, b: RunFacts, only_a: list[str], only_b: list[str]) -> list[Change]:
    """The recompiles of both runs, each whole, where a function compiled in one run only recompiled: per frame, the
    matched frames' changes say theirs, and a rewrite that renames or merges functions (data_dependent's Gate.forward,
    three resume functions, made one GateRewritten.forward) has none matched. [] where none did, or the totals agree.
    The program's functions only, as check counts them: not those of Python's library that torch compiles (one torch
    version's compiled autograd compiles inspect.py's), which the frames' changes mark."""
    def own(run: RunFacts, key: str) -> bool:
        filename = run.frames[key].filename
        return not (filename and is_python_library_file(filename))

    total_a, total_b = (sum(f.recompiles for k, f in run.frames.items() if own(run, k)) for run in (a, b))
    unmatched = [(side, run.frames[k]) for side, run, keys in (("A", a, only_a), ("B", b, only_b)) for k in keys
                 if run.frames[k].recompiles and own(run, k)]
    if total_a == total_b or not unmatched:
        return []
    ones = "; ".join(f"{f.label} recompiled {times(f.recompiles)} (compiled in {side} only)" for side, f in unmatched)
    if total_b == 0:
        title = f"recompiles gone: {total_a} in A, none in B ({ones})"
    elif total_a == 0:
        title = f"new recompiles: none in A, {total_b} in B ({ones})"
    else:
        title = f"recompiles in all: {total_a} → {total_b} ({ones})"
    return [Change("recompiles", "changed", title, None, total_a, total_b,
                   {"unmatched": [{"side": side, "frame": f.key, "recompiles": f.recompiles} for side, f in unmatched]})]


def _graphs_in_all(a: RunFacts, b: RunFacts, only_a: list[str], only_b: list[str]) -> list[Change]:
    """What both runs compiled, each whole (graphs, their ops, generated kernels), where no function was compiled in
    both (the caller asks only then): per frame, the matched frames' changes say theirs, and a model compiled whole
    against its blocks compiled one by one (regional compilation) has none matched, though what it saved is the point.
    [] where the totals agree. Kernels only where every graph's output code was logged (not served from cache)."""
    if not (only_a or only_b):
        return []

    def totals(run: RunFacts) -> tuple[int, int, int | None]:
        graphs = [g for f in run.frames.values() for g in f.graphs]
        # (graph_nodes reads an indexing `chunk[0]` as a get_attr: an operator.getitem node, which torch's
        # graph_op_count counts; a subgraph's `self.wrap_body_0` is the get_attr it does not)
        ops = sum(1 for g in graphs for n in g.nodes if n[0] not in ("placeholder", "output")
                  and not (n[0] == "get_attr" and str(n[1]).startswith("self.")))
        known = [g.kernels for g in graphs if g.kernels is not None]
        kernels = sum(sum(k.values()) for k in known) if len(known) == len(graphs) else None
        return len(graphs), ops, kernels

    (graphs_a, ops_a, kernels_a), (graphs_b, ops_b, kernels_b) = totals(a), totals(b)
    parts = [f"{x} → {y} {what}" for x, y, what in ((graphs_a, graphs_b, "graphs"), (ops_a, ops_b, "graph ops"),
                                                  (kernels_a, kernels_b, "generated kernels"))
             if x is not None and y is not None]
    if (graphs_a, ops_a, kernels_a) == (graphs_b, ops_b, kernels_b):
        return []
    return [Change("graphs", "changed", f"graphs in all: {', '.join(parts)} (no function was compiled in both runs)",
                   None, {"graphs": graphs_a, "ops": ops_a, "kernels": kernels_a},
                   {"graphs": graphs_b, "ops": ops_b, "kernels": kernels_b})]


def _unbacked_in_unmatched_frames(a: RunFacts, b: RunFacts, matched: Callable[[dict], bool]) -> list[Change]:
    """The data-dependent values (unbacked symbols: .item(), a boolean mask's count) that one run traced into its graph
    in functions the other did not compile: a rewrite (torch.cond, capture_scalar_outputs) makes one function of a
    function and the resume functions its graph breaks made, so no frame matches and the frames' symbols are not
    compared; each by its line, where the other run made none at that line."""
    def unbacked(facts: RunFacts) -> list[dict]:
        return [s for s in facts.symbols if s["source"] is None and s.get("unbacked") and not s.get("retrace_of")
                and s.get("symbol") and not matched(s)]

    found = []
    for side, here, there, kind in (("B", b, a, "added"), ("A", a, b, "removed")):
        lines_there = {(s["file"], s["line"]) for s in there.symbols if s["source"] is None and s.get("unbacked")}
        shown: dict[tuple[Any, Any], dict] = {}
        for s in unbacked(here):
            if (s["file"], s["line"]) not in lines_there:
                shown.setdefault((s["file"], s["line"]), s)
        if not shown:
            continue
        said = ", ".join(f"{s['symbol']} {_at(s['file'], s['line'], s.get('torch_line'))}" for s in shown.values())
        title = (f"data-dependent values traced into the graph only in {side}, not breaking it: {count(len(shown), 'unbacked symbol')}, "
                 f"{said} (in functions compiled only in {side})")
        values = [{"symbol": s["symbol"], "file": s["file"], "line": s["line"]} for s in shown.values()]
        found.append(Change("dynamic_shapes", kind, title, None, values if kind == "removed" else None,
                            values if kind == "added" else None))
    return found


def _at_most(x: Any, y: Any) -> bool:
    """x is no more than y: a number, counts by name ({"hit": 3}), or a list as a multiset (failing guards)."""
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if number(x) and number(y):
        return x <= y
    if isinstance(x, dict) and isinstance(y, dict) and all(map(number, [*x.values(), *y.values()])):
        return all(n <= y.get(k, 0) for k, n in x.items())
    if isinstance(x, list) and isinstance(y, list) and all(isinstance(v, str) for v in [*x, *y]):
        return not Counter(x) - Counter(y)
    return False


def _crash_key(crash: dict[str, Any] | None) -> tuple | None:
    """One crash is another's when it is the same error at the same place in the same frame's compiled code (compile
    ids shift between runs; the frame they belong to does not)."""
    if crash is None:
        return None
    return (crash["error"], crash["file"], crash["line"], crash["function"], crash["frame"])


def _crash_changes(a: RunFacts, b: RunFacts) -> list[Change]:
    """A run that crashed where the other did not, or crashed elsewhere. (Only `compilescope run` and capture() record
    a crash: a log without one says no more than that, hence "records no crash".)"""
    if _crash_key(a.crash) == _crash_key(b.crash):
        return []
    detail = {"called_from_a": crash_called_from(a.crash), "called_from_b": crash_called_from(b.crash)}
    if a.crash is None or b.crash is None:
        side, other, crash = ("A", "B", a.crash) if b.crash is None else ("B", "A", b.crash)
        assert crash is not None
        return [Change("crash", "removed" if side == "A" else "added", f"{side} crashed: {crash_line(crash)}; "
                       f"{possessive(other)} log records no crash", crash["frame"], a.crash, b.crash, detail)]
    return [Change("crash", "changed", f"A crashed: {crash_line(a.crash)}; B crashed: {crash_line(b.crash)}",
                   b.crash["frame"] or a.crash["frame"], a.crash, b.crash, detail)]


def _warning_changes(a: RunFacts, b: RunFacts, result: RunDiff, found: list[Change]) -> list[Change]:
    """Warnings torch printed in one run only (by the torch file that warned and what it said), when both runs recorded
    them. A warning that reports a failure found gone or new (anomaly mode's "Error detected in
    GeneratedBackwardFor_..." of a backward AOTAutograd traced) is said in that failure's change, not again here."""
    if a.warnings is None or b.warnings is None:
        if a.warnings or b.warnings:
            result.notes.append("the warnings torch printed are compared only when both runs recorded them "
                                "(compilescope run, capture(), or the run's stderr saved beside its log)")
        return []
    # Where torch warned is its file, not its line: the line moves from one torch version to the next
    # (lowering.py:2633 in 2.13 is :2774 in 2.14), and the same warning is no new one.
    key = lambda w: (w["source"].rsplit(":", 1)[0], w["name"] or w["text"])  # noqa: E731
    gone, new = multiset_diff(list(dict.fromkeys(key(w) for w in a.warnings)), list(dict.fromkeys(key(w) for w in b.warnings)))
    first = {key(w): w for w in reversed([*a.warnings, *b.warnings])}

    def by_version(source: str, printed_by: str | None, not_by: str | None) -> str:
        """Across two torch versions, which printed it, from where: a version's own warning (2.14's CUDA build says
        "No CUDA runtime is found" on a machine without one) is no change of the program's."""
        if not torch_changed(a, b):
            return ""
        return f" (printed by torch {printed_by} from {source}, not by {not_by}: the torch version alone may explain it)"

    # The failure changes by (kind, compile id): a failure gone is A's compile, a new one B's.
    failed = {(c.kind, cid): c for c in found if c.section == "failures" for cid in c.detail.get("compile_ids") or ()}

    def with_failure(kind: str, keys: list[tuple[str, str]], side: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """keys, less the warnings of this side that report a failure `kind` (gone, new), told in its change."""
        left = []
        for k in keys:
            failure = next((failed.get((kind, w.get("failure"))) for w in side if key(w) == k and w.get("failure")), None)
            if failure is None:
                left.append(k)
                continue
            node = backward_error(first[k]["text"])
            told = f"Error detected in {node}" if node else first[k]["text"]
            failure.title += f" (torch also printed it, under anomaly mode: {told})"
            failure.detail.setdefault("torch_printed", []).append(first[k])
        return left

    gone = with_failure("removed", gone, a.warnings)
    new = with_failure("added", new, b.warnings)
    changes = [Change("warnings", "added", f"torch now warns: {what}{by_version(source, b.torch_version, a.torch_version)}",
                      first[(source, what)]["frame"], None, first[(source, what)]) for source, what in new]
    changes += [Change("warnings", "removed",
                       f"torch no longer warns: {what}{by_version(source, a.torch_version, b.torch_version)}",
                       first[(source, what)]["frame"], first[(source, what)], None) for source, what in gone]
    return changes


def _won_by(search: dict) -> str:
    """What a search chose, for a search one run has alone: ", won by _mkl_linear (49.8 µs)"."""
    if not search.get("best_kernel"):
        return ""
    time_ms = search.get("best_time_ms")
    return f", won by {search['best_kernel']}" + (f" ({format_kernel_time(time_ms / 1000)})" if time_ms is not None else "")


def _autotuning_changes(a: RunFacts, b: RunFacts, threshold: TimeThreshold, result: RunDiff) -> list[Change]:
    """max-autotune's winners that changed (the same op, shapes and dtypes in the same frame), searches run in one run
    only (of the frames compiled in both: a frame of one run brings its own), and the time spent benchmarking."""
    out: list[Change] = []
    matched = set(result.matched_frames)

    def searches(facts: RunFacts) -> dict[tuple, list[dict]]:
        by_key: dict[tuple, list[dict]] = {}
        for search in facts.autotune_searches:
            if search["frame"] is None or search["frame"] in matched:
                by_key.setdefault((search["frame"], search["op"], search["shape"], search["dtypes"]), []).append(search)
        return by_key

    in_a, in_b = searches(a), searches(b)
    for key in list(dict.fromkeys([*in_a, *in_b])):
        frame, op, shape, dtypes = key
        runs_a, runs_b = in_a.get(key, []), in_b.get(key, [])
        # The user's line first, where the graph placed the op (a saved facts file of an older version has none)
        site = next((s.get("site") for s in [*runs_a, *runs_b] if s.get("site")), None)
        code = next((s.get("site_code") for s in [*runs_a, *runs_b] if s.get("site_code")), None)
        what = (f"{site}" + (f" `{code}`" if code else "") + ", " if site else "") + f"{op} {shape or ''}".rstrip() + (
            f" ({dtypes})" if dtypes else "")
        for sa, sb in zip(runs_a, runs_b):
            # A Triton winner's name ends with its place among the candidates (triton_mm_17): the config says which
            # template it is; the name without that number tells a Triton winner from ATen's.
            if sa["best_config"] != sb["best_config"] or (sa["best_kernel"] or "").rstrip("0123456789") != (
                    sb["best_kernel"] or "").rstrip("0123456789"):
                out.append(Change("autotuning", "changed", f"max-autotune chose another kernel for {what}: "
                                  f"{_winners(sa, sb)}", frame, sa, sb))
        for sa in runs_a[len(runs_b):]:
            out.append(Change("autotuning", "removed", f"max-autotune search for {what} only in A{_won_by(sa)}", frame, sa,
                              None))
        for sb in runs_b[len(runs_a):]:
            out.append(Change("autotuning", "added", f"max-autotune search for {what} only in B{_won_by(sb)}", frame, None,
                              sb))
    if threshold.significant(a.autotune_s, b.autotune_s):
        out.append(Change("autotuning", "changed", f"autotuning {format_seconds(a.autotune_s)} → {format_seconds(b.autotune_s)} "
                          f"({format_seconds_change(b.autotune_s - a.autotune_s)})", None, a.autotune_s, b.autotune_s))
    elif a.autotune_s != b.autotune_s:
        result.notes.append(threshold.not_a_change("autotuning", a.autotune_s, b.autotune_s))
    return out


def _winners(a: dict, b: dict) -> str:
    """`triton_mm_17 → triton_mm_4 (BLOCK_K 64 → 32, BLOCK_M 128 → 64; 22.6 µs → 31.0 µs)`: the configs' keys that
    differ (torch writes a config as `KEY=value, ...`), else both configs whole; the run times worded as summary and
    report word them (format_kernel_time), the change's a and b keep best_time_ms as torch logged it."""
    config_a, config_b = config_items(a["best_config"]), config_items(b["best_config"])
    if config_a is not None and config_b is not None:
        details = [f"{k} {config_a.get(k, '-')} → {config_b.get(k, '-')}"
                   for k in dict.fromkeys([*config_a, *config_b]) if config_a.get(k) != config_b.get(k)]
    else:
        details = [f"{a['best_config'] or '?'} → {b['best_config'] or '?'}"]
    times = ""
    if a["best_time_ms"] is not None and b["best_time_ms"] is not None:
        times = f"; {format_kernel_time(a['best_time_ms'] / 1000)} → {format_kernel_time(b['best_time_ms'] / 1000)}"
    return f"{a['best_kernel'] or '?'} → {b['best_kernel'] or '?'} ({', '.join(details)}{times})"


@dataclass
class SideTotals:
    """One side of a diff as a whole: every rank read of a directory of ranks (the one log of a single log). The
    figures of the page's header and the JSON's totals_a/totals_b (docs/diff-schema.md)."""

    ranks: int  # ranks read
    frames: int  # frames compiled, by code location: one frame compiled on several ranks counts once
    compiles: int  # compilations of those frames, all ranks summed (each rank's `compiles`, as its comparison counts)
    compile_time_s: float  # all ranks summed
    torch_versions: list[str]  # the versions the ranks ran, each once ([] when no log names one)
    # What the report's cards count, all ranks summed: its compile ids (a restarted attempt, [0/0_0], is one; no
    # frame's compile counts it), and how they ended in the cards' words ("2 compiled (1 after a restart), 3 restarted
    # attempts, 2 empty graph"; status.counts_text). The compile ids of the frames where facts saved before lack them.
    compile_ids: int = 0
    outcomes: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def side_totals(facts: dict[int | None, RunFacts]) -> SideTotals:
    statuses: Counter[str] = Counter()
    for f in facts.values():
        statuses.update(f.compile_statuses or Counter(s for frame in f.frames.values() for s in frame.statuses))
    no_graph = sum(f.no_graph_compiles if f.compile_statuses else sum(len(frame.no_graph) for frame in f.frames.values())
                   for f in facts.values())
    return SideTotals(
        len(facts), len({key for f in facts.values() for key in f.frames}),
        sum(len(frame.compile_ids) for f in facts.values() for frame in f.frames.values()),
        round(sum(f.compile_time_s for f in facts.values()), 6),
        sorted({f.torch_version for f in facts.values() if f.torch_version}),
        sum(statuses.values()), counts_text(statuses, no_graph))


@dataclass
class DiffReport:
    """A diff of two runs: one RunDiff per rank (a single log: one, rank None)."""

    source_a: str
    source_b: str
    ranks: list[tuple[int | None, RunDiff]]
    # Each side as a whole: the figures of the page's header, where a rank's would stand for the job.
    totals_a: SideTotals
    totals_b: SideTotals
    ranks_only_a: list[int] = field(default_factory=list)
    ranks_only_b: list[int] = field(default_factory=list)
    # Ranks whose log could not be read at all (empty, not a log), side by side: rank -> why. Not compared, and not
    # "only in" the other side: `diff` exits 2 for them (trouble, as diff(1) for a file it cannot read).
    not_read_a: dict[int, str] = field(default_factory=dict)
    not_read_b: dict[int, str] = field(default_factory=dict)

    def rank_by_rank_side(self, side: str) -> bool:
        """Side "a" or "b" is a directory of several rank logs (read or not): its report is a landing page, each
        rank's under rank_<N>/ (cli/diff.py read_side)."""
        totals, lost = (self.totals_a, self.not_read_a) if side == "a" else (self.totals_b, self.not_read_b)
        return totals.ranks + len(lost) > 1

    @property
    def changed(self) -> bool:
        return bool(self.ranks_only_a or self.ranks_only_b or any(d for _, d in self.ranks))

    @property
    def changed_ranks(self) -> list[int]:
        return [rank for rank, diff in self.ranks if rank is not None and diff]

    @property
    def unchanged_ranks(self) -> list[int]:
        return [rank for rank, diff in self.ranks if rank is not None and not diff]

    @property
    def ranks_one_side_only(self) -> list[int]:
        """The ranks that only one side has, A's and B's together, in order."""
        return sorted(self.ranks_only_a + self.ranks_only_b)

    @property
    def ranks_not_read(self) -> list[int]:
        """The ranks not read on either side (so not compared), each once, in order."""
        return sorted(set(self.not_read_a) | set(self.not_read_b))

    @property
    def rank_by_rank(self) -> bool:
        """Two jobs' ranks compared (not one log with another): a tally of the ranks ends the diff."""
        return len(self.ranks) > 1

    @property
    def quiet_ranks(self) -> list[int]:
        """Of ranks compared rank by rank, those with neither a change nor a note: said in one line for all, not a
        paragraph each (a job has hundreds of ranks)."""
        if not self.rank_by_rank:
            return []
        return [rank for rank, diff in self.ranks if rank is not None and not diff and not diff.notes and not diff.partial]

    @property
    def told_ranks(self) -> list[tuple[int | None, RunDiff]]:
        """The ranks told one by one: all but the quiet ones."""
        quiet = set(self.quiet_ranks)
        return [(rank, diff) for rank, diff in self.ranks if rank not in quiet]

    @property
    def threshold_rule(self) -> str:
        """When a time difference counts as a change, in words (one threshold for every rank); "" with no rank."""
        return self.ranks[0][1].threshold.rule if self.ranks else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "a": self.source_a,
            "b": self.source_b,
            "changed": self.changed,
            "ranks_only_a": self.ranks_only_a,
            "ranks_only_b": self.ranks_only_b,
            "ranks_not_read_a": {str(r): why for r, why in sorted(self.not_read_a.items())},
            "ranks_not_read_b": {str(r): why for r, why in sorted(self.not_read_b.items())},
            "totals_a": self.totals_a.to_json(),
            "totals_b": self.totals_b.to_json(),
            "ranks": [{"rank": rank, **d.to_json()} for rank, d in self.ranks],
        }


def diff_report(source_a: str, source_b: str, facts_a: dict[int | None, RunFacts], facts_b: dict[int | None, RunFacts],
                threshold: TimeThreshold = TimeThreshold(), not_read_a: dict[int, str] | None = None,
                not_read_b: dict[int, str] | None = None) -> DiffReport:
    """Ranks matched by number; a single log on either side is compared with rank 0 (or the only rank) of the other.
    not_read_a/b: ranks of that side whose log could not be read (rank -> why)."""
    pairs = paired_ranks(facts_a, facts_b)
    not_read_a, not_read_b = dict(not_read_a or {}), dict(not_read_b or {})
    unpaired = {r for r, _, _ in pairs} | set(not_read_a) | set(not_read_b)  # an unread rank is not "only in" a side
    return DiffReport(source_a, source_b, [(r, diff_runs(fa, fb, threshold)) for r, fa, fb in pairs],
                      side_totals(facts_a), side_totals(facts_b),
                      sorted(r for r in facts_a if r is not None and r not in unpaired),
                      sorted(r for r in facts_b if r is not None and r not in unpaired), not_read_a, not_read_b)


def paired_ranks(facts_a: dict[int | None, RunFacts],
                 facts_b: dict[int | None, RunFacts]) -> list[tuple[int | None, RunFacts, RunFacts]]:
    """The ranks of two runs to compare, as (rank, a's facts, b's facts), by rank number. A single log on either side
    stands for the lowest rank of the other; two single logs are one pair (rank None unless both name one rank)."""
    if len(facts_a) == 1 and len(facts_b) == 1:
        (ra, fa), (rb, fb) = next(iter(facts_a.items())), next(iter(facts_b.items()))
        return [(ra if ra == rb else None, fa, fb)]
    if list(facts_a) == [None]:
        facts_a = {min(facts_b, key=lambda r: r or 0): facts_a[None]}
    elif list(facts_b) == [None]:
        facts_b = {min(facts_a, key=lambda r: r or 0): facts_b[None]}
    return [(r, facts_a[r], facts_b[r]) for r in sorted((r for r in facts_a if r in facts_b), key=lambda r: r or 0)]

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

This module holds what a diff is made of, the classes its results are saved as (RunFacts and the facts in it, Change,
RunDiff, DiffReport, TimeThreshold), with the sections and the guard wording their methods use. Its modules:

- facts.py: one run reduced to its RunFacts (run_facts), and the figures a run hub lists of a run (run_headline);
- printed_graphs.py: what run_facts reads of printed code: an FX graph's nodes (graph_nodes), the kernels of
  Inductor's output code (kernel_counts);
- runs.py: the comparison itself, section by section (diff_runs), the changes a log read in part may explain, and
  the ranks of two jobs paired (diff_report);
- environment.py: versions, config (options a torch upgrade renamed), compile steps, files run from another
  directory;
- frames.py: the frames both runs compiled: compiles and recompiles, failing guards, graphs and kernels;
- timing.py: why compile time changed, max-autotune's searches, run time from profiles;
- compiled_code.py: CUDA graphs used or not, activation checkpointing, results that differ from eager, the user's
  Triton kernels, torch.export's dims and AOTInductor packages;
- crash_and_warnings.py: a crash, failed compiles, and the warnings torch printed.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, field
from typing import Any

from ..status import counts_text
from ..graph_breaks import function_label, resume_of
from ..dynamic_shapes import number_text
from ...wording import format_seconds, format_seconds_change, possessive
from ...model.records import dataclass

SCHEMA_VERSION = 1

# A number in a guard's text: guards that differ only in one number are one guard failing at several values.
_GUARD_NUMBER = re.compile(r"(?<![\w.#])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])", re.I)


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
        """label, with called_at for where the user's code called it (both runs' calls: frames.frames_label)."""
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


@dataclass
class RunFacts:
    source: str
    torch_version: str | None
    config: dict[str, str]  # "inductor.fallback_random" -> JSON of the value (the first compile's)
    frames: dict[str, FrameFacts]  # by facts.frame_key
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
    # The run's profile, when one was read with its log (runtime.diff_facts.runtime_facts): {profile, timeline, part, unusable,
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
    # lacks; see runs._may_be_unread): the change may be only what that side's log lacks, not what the run did.
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


def _differing_numbers(texts: list[str]) -> list[int]:
    """Where the numbers of guards that differ only in their numbers differ: their indexes among the numbers."""
    numbers = [_GUARD_NUMBER.findall(t) for t in texts]
    return [i for i in range(len(numbers[0])) if len({n[i] for n in numbers}) > 1]


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

"""One run reduced to plain, JSON-serialisable facts (RunFacts): what `compilescope diff` compares between two runs
and what `compilescope check` gates one run on, with or without a baseline. A check of one run reads only these, so
it imports nothing of the comparison (analyses/diff/).

This module holds the classes (RunFacts and the facts in it). Its modules:

- analysis.py: one run reduced to its RunFacts (run_facts), and the figures a run hub lists of a run (run_headline);
- printed_graphs.py: what run_facts reads of printed code: an FX graph's nodes (graph_nodes), the kernels of
  Inductor's output code (kernel_counts);
- words.py: a run's facts in one line, as diff and check both say them: a crash, failed compiles, where a graph
  break is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, field
from typing import Any

from ..graph_breaks.resume_names import function_label, resume_of
from ..status import counts_text
from ...model.records import dataclass


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
    # recompiles name it (user_locations.called_at_text). Words only: frames are matched by key. "" in facts saved before it
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


def short_path(path: str | None) -> str:
    """The file name of a path, for one-line messages."""
    return path.rsplit("/", 1)[-1] if path else "?"

"""Results: everything known about one log, and its saved form (the version, what each version added, the classes
a saved file may hold)."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from .. import model
from ..errors import CompilescopeError
from ..model.ids import CompileId
from ..model.trace import Compile, Trace
from .compile_summary import CompileSummary, MetricGroups, RuntimeRecordsOwner, runtime_records_owners
from .export import ExportReport
from .failures import FailureRow
from .insights import Insights
from .provenance import Provenance
from .sources import Sources
from .transformed import TransformedCode
from .stack_trie import OutsideStacks, StackTrieNode
from .status import count_words, status_counts
from ..model.records import dataclass
from ..wording import count

if TYPE_CHECKING:
    from .runtime import Runtime


RESULTS_FORMAT = "compilescope.results"
# The saved form's version: bump it when a saved file of the previous version can no longer be loaded as it was
# (a field it lacks would load as its default: every recompile avoidable, no AOTInductor package), and say in
# RESULTS_ADDED what the new version added, which a refused older file is told it lacks.
# 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10: see RESULTS_ADDED; 9: cache bypass reasons are numbered and grouped by the analysis (Caches.reason_numbers, .compiles_by_reason,
# CompileCache.reason_numbers: were worked out where they were shown);
# 8: the stacks outside any compilation are grouped by the user's frames (outside_stacks; was one trie);
# 7: a compile's summary holds its runtime metrics records (runtime_records: were worked out by their pages);
# 6: transformed code holds its graph's and guards' artifacts (were their numbers); 5: a restarted attempt's status is
# "restarted" (was "break", its retry's); 4: where reading stopped
RESULTS_VERSION = 20
# The digest of the saved classes' fields (names and annotations) that RESULTS_VERSION's form has: tests/test_results.py
# fails naming RESULTS_VERSION when a field changes and this does not, so a change to the saved form moves both here.
RESULTS_FINGERPRINT = "cc7dfcc025680f66"
# Another version's file is refused, not migrated: the fields a version adds have defaults, but each is a claim (no
# RecompileStep.expected: every recompile avoidable; no numerics: no line differs from eager), not "unknown".
SAVE_AGAIN = "save them again from the log: compilescope LOG --save FILE"
RESULTS_ADDED = {
    10: "whether each recompile was expected (a module's mode, a parameter's requires_grad) or avoidable and what else "
        "changed with it, the AOTInductor packages, the lines whose results differ from eager's (numerics), what "
        "freezing did, max-autotune's searches' lines, graph breaks in FSDP2's hooks or a with block, the errors' "
        "hints set aside, the runtime's slow calls, what fused kernels compute, how the breaks split the compiles, "
        "where torch's own code broke a graph, and each autotuning search's device",
    11: "the compiles in which a graph break made Dynamo skip the function it names and what calls before ran "
        "compiled, GradScaler's calls and whether a backward break's backward was compiled, the user's own Triton "
        "kernels, what an AOTInductor package holds and its build's time, the lines that differ from eager on the "
        "source pages, the compiled side's slow calls in a speed-up, the run-time facts diff compares, and the user's "
        "line that called each compile's frame where it is not their code, a profile's GPUs' compute capability and "
        "its GPU idle by what the CPU ran, and check's run-time gate (--max-run-time-ratio)",
    12: "the custom ops that write into an argument their mutates_args does not name, the hooks registered after "
        "compiling, whether a run crashed loading the AOTInductor package it built, the AOTInductor build's calls and "
        "what made each dynamic size (torch.export or the package), the phase a compile the log ends in was in, "
        "the generated kernel a compile error is in, the runtime's slow calls counted once across threads and what "
        "each ran during, and diagnose's control runs, the program's seed, the wrong graph of an accuracy failure, "
        "the minimal repro's path and torch's testing hooks",
    13: "custom ops defined by a schema (Library.define) or as triton_op, and the triton_ops whose stores torch found "
        "itself, the program's lines that registered a hook or switched a module's mode after compiling, the imported "
        "module a program's seed is set in, and each compile's metrics pages (Results is saved as analyses.results.Results)",
    14: "which calls of a triton_op torch found the store of (an op whose calls differ is one undeclared write, not also "
        "one torch handled) and the source lines of the triton_ops torch handled",
    15: "which calls of a custom op the log does not place among the compiled code's calls of their overload (no read "
        "said moved past them, nor said not to be); which calls left out were not checked because the log does not "
        "say their overload, not because their source was not read (DroppedCall.overload_unknown)",
    16: "which graph breaks the source pages list at the user's call of a fully_shard-ed module, being in FSDP2's "
        "hooks (GraphBreakSite.in_fsdp_hook)",
    17: "the changes a compile's page folds under \"and K more also changed since\", and which of its recompile's notes "
        "says whether it was expected (CompileSummary.recompile_more, recompile_rest, recompile_expected), and the "
        "local of a compile's wrapper frame that holds the user's model (CompileTime.model_local)",
    18: "the user's function a recompiled wrapper frame passes its arguments on to, which names the frame "
        "(FrameRecompiles.runs: torch.no_grad's decorator compiled as torch's inner); "
        "the value a failed guard compared a number with where the recompile made that number a symbol, so that the "
        "symbol's value is shown apart from it (SymbolCreated.guarded_value); a value that also changed "
        "in a wrapper frame, in the user's words (StateChange.users_name: cache.layers[0].is_initialized for "
        "transformers' kwargs['cache'].layers[0].is_initialized); the first compile id that names a frame apart from "
        "another of the same code's name, file and first line (FrameRecompiles.named_apart: the two resume functions "
        "of a graph break at an `if`); the long metric values the report shows "
        "whole on other pages, cut on the metrics pages with links there (MetricGroups.elsewhere: "
        "inductor_provenance, the kernels' stack traces); and whether a transformed code page holds its guards or "
        "links to them only (TransformedCode.guards_inline: a guard tree of hundreds of KB)",
    19: "the attempts Dynamo restarted, whose guards no compiled code checks: a guard only they added is said so, not "
        "listed as its compilation's (DynamicShapes.discarded_attempts); each cache row's label as the table, prose "
        "and bypass reasons name it, a restarted attempt's told apart (CompileCache.label, .names_package; "
        "Caches.compiles_by_reason holds those labels)",
    20: "whether tlparse 0.4.3 reads a draft-export issue's record, which numbers the files of --export as tlparse "
        "does (ExportIssue.tlparse_reads, read from the record as logged: ExportEvent.tlparse_reads)",
}


@dataclass
class Results:
    """Everything known about one log: the model read from it (trace) and every analysis of it.

    The one value between analysis and every output. It is saved and loaded exactly
    (to_json / from_json), so a report can be re-rendered, compared or sent elsewhere
    without the log. A Results holds its trace's spooled payloads: close it when done.
    """

    stack_trie: StackTrieNode
    outside_stacks: list[OutsideStacks]  # stacks of events outside any compilation, by the user's frames
    failures: list[FailureRow]
    statuses: dict[CompileId | None, str]
    export: ExportReport = field(default_factory=ExportReport)
    provenance: Provenance = field(default_factory=Provenance)
    insights: Insights | None = None
    trace: Trace | None = None  # the model the analyses were computed from (payloads included)
    compiles: dict[str, CompileSummary] = field(default_factory=dict)  # by compile id key: what its page leads with
    runtime: Runtime | None = None  # None unless profiles were given
    sources: Sources = field(default_factory=Sources)
    transformed: dict[str, TransformedCode] = field(default_factory=dict)  # compile dir -> code run instead
    metric_pages: dict[int, MetricGroups] = field(default_factory=dict)  # compile_summary.metric_pages

    @property
    def failed_compiles(self) -> int:
        """The failures table's rows that are failed compiles, not restarts (a graph break's): a failure to fix."""
        return sum(1 for row in self.failures if not row.is_restart)

    @property
    def disabled_restarts(self) -> int:
        """The failures table's restarts at calls of torch.compiler.disable'd functions: asked for, not to fix (the
        index's card counts them apart, as check --max-graph-breaks leaves their breaks out)."""
        return sum(1 for row in self.failures if row.disabled_call)

    @property
    def failures_noted(self) -> bool:
        """Whether a row of the failures table has a note (FailureRow.noted): the table has the column."""
        return any(row.noted for row in self.failures)

    @property
    def status_counts(self) -> dict[str, int]:
        return status_counts(self.statuses)

    @property
    def status_count_words(self) -> list[tuple[str, int, str]]:
        """The index's count of compile ids by status, the compiles that made no graph counted apart."""
        return count_words(self.status_counts, len(self.insights.empty_graphs.no_graph) if self.insights else 0)

    @property
    def runtime_records_owners(self) -> list[RuntimeRecordsOwner]:
        return runtime_records_owners(self.trace) if self.trace is not None else []

    @property
    def code_linked_compiles(self) -> list[Compile]:
        """The compiles whose output code the index links: those that failed (a C++ compiler's errors link to the
        failing line there) and those whose generated code is on a crashed stack (the crash links to its line)."""
        if self.trace is None:
            return []
        crashes = self.insights.crashes.crashes if self.insights else []
        crashed = {g.compile_id for c in crashes for g in c.generated if g is not None}
        return [entry for entry in self.trace.compiles.values()
                if (entry.metrics or {}).get("fail_type") or str(entry.compile_id) in crashed]

    @property
    def crash_records(self) -> set[int]:
        """The artifact numbers of the crashes' records in the log (run appended them, outside any compilation)."""
        crashes = self.insights.crashes.crashes if self.insights else []
        return {c.record for c in crashes if c.record is not None}

    def to_json(self) -> dict[str, Any]:
        """The exact saved form (JSON-able): from_json(to_json()) == self."""
        if self.trace is not None and self.trace.closed:  # (its payloads are saved too, and they are gone)
            raise CompilescopeError(f"the Results of {self.trace.source} are closed: analyze the log again to save them")
        from ..model.codec import encode  # here: only saving or loading an analysis needs the codec (start-up time)

        return {"format": RESULTS_FORMAT, "version": RESULTS_VERSION, "results": encode(self)}

    @classmethod
    def from_json(cls, doc: Any) -> Results:
        from ..model.codec import CodecError, decode

        if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
            raise CodecError("not a compilescope results file")
        version = doc.get("version")
        if type(version) is int and version < RESULTS_VERSION:
            # (loaded as it is, each thing it lacks would be its default: said as absent, every recompile avoidable)
            lacks = "; ".join(RESULTS_ADDED[v] for v in range(version + 1, RESULTS_VERSION + 1) if v in RESULTS_ADDED)
            raise CodecError(f"results saved in format version {version}, by an older compilescope: they lack "
                             f"{lacks or 'what later versions added'}. S{SAVE_AGAIN[1:]}")
        if version != RESULTS_VERSION:
            raise CodecError(f"results saved in format version {version}; this compilescope reads version "
                             f"{RESULTS_VERSION} ({SAVE_AGAIN})")
        value = decode(doc.get("results"), saved_classes())
        if not isinstance(value, cls):
            raise CodecError("not a compilescope results file")
        return value

    def close(self) -> None:
        if self.trace is not None:
            self.trace.close()

    def __repr__(self) -> str:
        # Short: the dataclass's repr is every analysis and the whole model (12 MB for a GPT-2 log).
        source = "a trace" if self.trace is None else repr(self.trace.source)
        compiles = sum(1 for cid in self.statuses if cid is not None)  # (None: the records outside any compile)
        counts = [count(compiles, "compile id"), count(len(self.failures), "failure or restart", "failures or restarts")]
        if self.insights is not None:
            counts += [count(len(self.insights.graph_breaks.breaks), "distinct graph break"),
                       count(self.insights.recompiles.total, "recompile")]
        runtime = ", with runtime" if self.runtime is not None else ""
        closed = ", closed" if self.trace is not None and self.trace.closed else ""
        return f"<Results of {source}: {', '.join(counts)}{runtime}{closed}>"

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def saved_classes() -> dict[str, type]:
    """The classes a saved Results may hold: those of the model and of the analyses."""
    import importlib  # here: only loading a saved analysis imports every module (start-up time)
    import pkgutil

    names = []
    for package in (model, importlib.import_module(__package__)):
        # (walk_packages: an analysis split into a package keeps its saved classes in any of its modules)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
            names.append(info.name)
    from ..model.codec import classes_of

    return classes_of(names)

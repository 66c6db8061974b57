"""What torch.compile did to each line of the user's source: per file, per line.

Everything comes from the log itself:
- FX graph node comments (``# File: path:N in fn, code: ...``) in ``dynamo_output_graph``: which
  compile ids captured the line, and as which graph nodes;
- ``dynamo_graph_break_reason`` artifacts (reason + user traceback): where a graph broke, and which
  lines then ran eagerly (the breaking statement in the compiled frame and the inlined calls under it);
- ``dynamo_start`` stacks: the compiled frame, including resume functions (``torch_dynamo_resume_in_f_at_N``);
- recompile reasons, dynamic-shape events and Inductor provenance (kernels), through their analyses.
- where a compile failed and where the program died (an uncaught exception, a native crash), as errors and crash place
  them: the line is marked, with what failed;
- where torch warned, when the file has a page: the report links there, so the page shows the line.

The text of a file is read from disk only when the path exists, is a regular ``.py`` file of sane size, and
agrees with every line the log quotes from it. Otherwise the file is rebuilt from the quoted lines, the
others being gaps (``None``), never guessed text.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import re
from dataclasses import field
from functools import cached_property
from typing import Any, Callable, Iterable

from ...decompile.recorded import ORIGINAL as RECORDED_ORIGINAL_BYTECODE
from ...lazy_regex import lazy_compile
from ...location import NOT_A_FILE, NOT_HERE, TOO_BIG
from ...model.ids import CompileId, compilation_key
from ...model.names import safe_stem
from ...model.trace import Compile, Frame, Trace
from ...model.payloads import PayloadRef
from ...model.source_files import NO_FILES, SourceFiles
from ..activation_checkpoint import ActivationCheckpointing, activation_checkpointing
from ..autotuning import Autotuning, autotuning
from ..aoti import Aoti
from ..compiled_frames import ORIGINAL_BYTECODE_SUFFIX, compiled_frame
from ..crash import Crashes
from ..dynamic_shapes import DynamicShapes, dynamic_shapes
from ..errors import CompileErrors, metrics_number
from ..graph_breaks import EXPLICIT_BREAK, GraphBreaks, resume_of
from ..graph_breaks.analysis import graph_breaks
from ..graph_breaks.reason_text import ARTIFACT as GRAPH_BREAK_ARTIFACT, BREAK_HEADER, parse_reason
from ..fx_sites import GRAPH_ARTIFACT, FxNodeSite, fx_node_sites
from ..installed_guards import FIRST_USE_NOTE, GUARD_LINE, GUARD_TAIL, GUARDS_ARTIFACT
from ..numerics import Numerics, numerics
from ..op_mutations import OpMutations
from ..op_mutations.analysis import op_mutations
from ..provenance import Provenance, UserLine, analyze_provenance, is_users_file, user_lines_at
from ..recompiles import Recompiles
from ..recompiles.analysis import recompiles
from ..stack_values import StackValues, name_stack_values
from ..state_lines import state_lines
from ..user_kernels import UserKernels, user_kernels
from ..userloc import UserLocation, is_torch_file, is_triton_file, numpy_in_words, traceback_frames
from ...model.records import dataclass
from ...wording import format_seconds

SCHEMA_VERSION = 1
MAX_SOURCE_BYTES = 4 << 20  # a user source bigger than this is not read from disk
# A `dis` row that starts a source line: the line number comes first, within the first few columns (3.10-3.12:
# `942     >>  212 LOAD_FAST`; 3.13: `  5   L1:     LOAD_FAST`); a row without one starts with the offset or label
# past them (`              2 LOAD_CONST`). At most 9 leading spaces and 9 digits: the text is untrusted.
_DIS_LINE_START = lazy_compile(r"^[ \t]{0,9}(\d{1,9})[ \t]+(?:>>[ \t]*)?(?:L\d{1,9}:[ \t]+)?(?:\d{1,9}[ \t]+)?[A-Z][A-Z_0-9]*\b")
# Torch's own files: what Dynamo traced through, not the user's code.
_TORCH_FILE = re.compile(r"[/\\](?:site|dist)-packages[/\\]torch[/\\]")


_USER_SOURCE: dict[str, bool] = {}  # path -> is_user_source(path): a log names few files, each many times


def is_user_source(path: str) -> bool:
    known = _USER_SOURCE.get(path)
    if known is None:
        if len(_USER_SOURCE) > 65536:  # (a batch of many logs in one process)
            _USER_SOURCE.clear()
        known = _USER_SOURCE[path] = (bool(path) and not path.startswith("<") and not _TORCH_FILE.search(path)
                                      and not is_triton_file(path))
    return known


def file_page(path: str) -> str:
    """The report page of a source file: readable and unique (two files may share a base name)."""
    digest = hashlib.sha1(path.encode("utf-8", "replace")).hexdigest()[:8]
    return f"sources/{safe_stem(os.path.basename(path) or 'source')}_{digest}.html"


def line_anchor(line: int) -> str:
    return f"L{line}"


def resumed_function(code_name: str | None) -> str | None:
    """The function a resume function `torch_dynamo_resume_in_f_at_22` runs the rest of (`f`); None for another code.
    Dynamo's resume functions run lines of the function they resume."""
    resumed = resume_of(code_name)
    return resumed[0] if resumed else None


def _rest_of(code_name: str) -> str:
    """The function a resume function runs the rest of, as a source page says it ("the function" where its name does
    not say)."""
    return resumed_function(code_name) or "the function"


@dataclass
class GraphBreakSite:
    """One distinct graph break (reason + innermost user line), with the lines that ran eagerly because of it."""

    index: int
    reason: str
    location: UserLocation  # the innermost user frame of the break's traceback
    compile_ids: list[str] = field(default_factory=list)
    resume_functions: list[str] = field(default_factory=list)  # resume functions that took over after it
    eager_lines: list[tuple[str, int]] = field(default_factory=list)  # (path, line), outermost frame first
    quoted: dict[tuple[str, int], str] = field(default_factory=dict)  # the code the traceback quotes at a line
    # Where torch placed the break ("Graph break in user code at .../torch/optim/optimizer.py:79"), when that is not
    # the user's line it is listed at (location, the innermost user frame, the call that led there).
    torch_location: UserLocation | None = None

    @property
    def torch_text(self) -> str | None:
        """"PyTorch's own break, in optimizer.py:79 (_use_grad), which it makes there on purpose: nothing in your code
        to change": what a break listed at the user's line is, where torch placed it in its own code."""
        at = self.torch_location
        if at is None:
            return None
        where = f"{at.short}{f' ({at.function})' if at.function else ''}"
        if self.reason == EXPLICIT_BREAK and is_torch_file(at.filename):
            return (f"PyTorch's own break, in {where}, which it makes there on purpose: nothing in your code to "
                    "change")
        return f"placed by torch in {where}, which this line called"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "reason": self.reason,
                "location": self.location.to_json(),
                "torch_location": self.torch_location.to_json() if self.torch_location else None,
                "torch_text": self.torch_text,
                "compile_ids": self.compile_ids, "resume_functions": self.resume_functions,
                "eager_lines": [{"path": p, "line": n} for p, n in self.eager_lines]}


# Dynamo installs one of these per tensor input and way of marking a dimension dynamic by hand (five a tensor in the
# torch 2.13 logs), whatever the line does: they say only that no one marked it, so a line's notes fold them.
DIMENSION_MARKING_GUARD = "DIMENSION_DYNAMIC_MARKING_GUARD"


@dataclass
class InstalledGuards:
    """The guards compilations installed because of one line: one compilation's, or several's that installed the
    very same (a recompile for a new size installs the line's guards again, alike)."""

    compile_ids: list[str]
    guards: list[str] = field(default_factory=list)
    dimension_marking: list[str] = field(default_factory=list)  # DIMENSION_MARKING_GUARD checks, folded
    # A guard (torch's text) -> it with Dynamo's ___stack names in the user's words, as the recompiles view says it.
    described: dict[str, str] = field(default_factory=dict)
    hints: dict[str, str] = field(default_factory=dict)  # a guard (torch's text) -> torch's hint after it ("type float")
    # The guards (torch's text) that torch says this line only used the size of first (FIRST_USE_NOTE): 0/1
    # specialization made them, not the line.
    first_use: list[str] = field(default_factory=list)


@dataclass
class FailedCheck:
    """One check a recompile found failing on a line, as torch wrote it, with the compilations whose guard it was:
    a recompile checks every earlier compilation of the frame, and their alike guards fail alike (a dtype change fails
    [0/0]'s and [0/1]'s same dtype check)."""

    guard: str  # torch's text
    described: str | None  # it with Dynamo's ___stack names in the user's words, where torch wrote one
    failed_in: list[str]  # compile ids whose guard failed, in compile order ("?" where torch did not say)


@dataclass
class RecompileNote:
    """A recompilation that failed guards of one line caused, with each check of the line it failed said once."""

    recompile: str  # its compile id
    checks: list[FailedCheck]  # torch's order (the newest compilation's first), alike checks one
    failed: str | None = None  # why the recompilation failed itself (the recompile limit): torch compiled nothing


def _compile_order(cid: str) -> tuple:
    parsed = CompileId.parse(cid) if cid != "?" else None
    return parsed.sort_key() if parsed is not None else (float("inf"),)


@dataclass
class ResumeNote:
    """A resume function that starts after a line, as the line's note says it: the rest of `resumed`, compiled as
    compile_ids (those of them in `failed` failed: nothing was compiled)."""

    function: str  # torch's name, torch_dynamo_resume_in_f_at_22
    resumed: str  # the function it runs the rest of, f ("the function" where its name does not say)
    compile_ids: list[str]
    failed: list[str] = field(default_factory=list)

    @property
    def compiled(self) -> list[str]:
        """Of compile_ids, those that compiled."""
        return [c for c in self.compile_ids if c not in self.failed]


@dataclass
class LineNotes:
    """What the report knows about one source line: graphs, frames, breaks, resumes, guards, kernels, symbols."""

    graphs: dict[str, list[str]] = field(default_factory=dict)  # compile id -> FX node names from this line
    frames: list[dict[str, Any]] = field(default_factory=list)  # compiled frames starting here
    graph_breaks: list[dict[str, Any]] = field(default_factory=list)  # breaks located on this line
    eager: list[int] = field(default_factory=list)  # indexes of breaks that made this line run eagerly
    resumes: list[dict[str, Any]] = field(default_factory=list)  # resume functions that start after this line
    # Failed guards (recompiles) pointing here; one whose recompilation itself failed (the recompile limit) says why
    # ("recompile_failed"): torch compiled nothing for it. "again": the compilation whose guard it is failed it at an
    # earlier recompile already (torch lists every cached compilation's failure at each recompile, so a compilation
    # that no call matches any more fails the same guard at every one after): not what made this one recompile.
    guards: list[dict[str, Any]] = field(default_factory=list)
    kernels: list[dict[str, Any]] = field(default_factory=list)
    symbols: list[dict[str, Any]] = field(default_factory=list)  # created / specialized / guarded
    # Where the ops of a call made on this line sit (a library call, a submodule's forward, a helper Dynamo inlined),
    # from the kernel stack traces, which run from the compiled frame inward: {"file", "line", "function",
    # "compile_ids"}, one per innermost line. The graph holds those ops, though no FX node names this line.
    calls: list[dict[str, Any]] = field(default_factory=list)
    # Compilations that failed here (errors.py's location of each: where it failed, or the frame it compiled).
    failures: list[dict[str, Any]] = field(default_factory=list)
    # The program died here: the innermost frame of the user's code on the stack of its uncaught exception or crash.
    crashes: list[dict[str, Any]] = field(default_factory=list)
    # Activation checkpointing (activation_checkpoint.py): {"compile_id", "calls": n} where the graph captured n
    # checkpoint calls made on this line; {"compile_id", "recomputed_ops": n} where its backward recomputes n ops of it.
    checkpoint: list[dict[str, Any]] = field(default_factory=list)
    # Compiled results that differ from eager's here (numerics.py): {"kind": "random" | "precision", "compile_ids",
    # "ops", "why"}; a custom op's ("mutation", op_mutations/) adds "badge", what the line does ("call left out")
    numerics: list[dict[str, Any]] = field(default_factory=list)
    # Ran eagerly, all of it, because of a graph break elsewhere that no resume could follow (graph_breaks' and
    # errors' facts, said in their words): {"kind": "skipped_frame", "function", "compile_ids", "text"} on each line
    # of a function Dynamo skipped; {"kind": "higher_order_op", "op", "compile_ids", "text"} on a line whose call of
    # a higher-order op (torch.utils.checkpoint.checkpoint) ran uncompiled because the break is inside it.
    ran_eagerly: list[dict[str, Any]] = field(default_factory=list)
    # max-autotune's searches for an op of this line (autotuning.py's site): {"compile_id", "op", "shape",
    # "best_kernel", "best_time", "seconds", "took", "compile_notes"} (best_time, took and compile_notes as the
    # pages word them), in the order they ran
    autotune: list[dict[str, Any]] = field(default_factory=list)

    @property
    def uncaught_exception(self) -> bool:
        """Whether every crash at this line is an uncaught Python exception, none a native crash."""
        return all(c["exception"] for c in self.crashes)

    @property
    def autotune_text(self) -> str:
        """The compile time this line's searches took, together, as its badge says it: "14.73 s"."""
        return format_seconds(sum(a["seconds"] for a in self.autotune))
    # AOTInductor packages compiled here (the user's aoti_compile_and_package call: aoti.AotiPackage.call), each
    # {"accepts", "checks_need_env", "holds", "wrapper_artifact", "kernel_artifact"}: what it accepts and holds, and its
    # code's outputs
    # (Artifact.number; kernel_artifact None where it logged none apart).
    aoti: list[dict[str, Any]] = field(default_factory=list)
    # The user's own Triton kernels (user_kernels.py) on the lines that define and launch them: {"kernel", "role"
    # ("defined": its def, or its first decorator where only torch's line is known: "decorated"; "launched": the
    # launch, or the triton_op call, the graph traced), "compile_ids" (whose code holds it), "code_name" (Inductor's
    # name for it there), "defined_at" (for a launch: the line it is defined at, "prog.py:21")}
    user_kernels: list[dict[str, Any]] = field(default_factory=list)
    # A line that may have made a change a recompile's guard trees show, which torch logs no line for (state_lines):
    # {"recompile", "kind" ("hook": registered after compiling; "training": a mode switched; "requires_grad": a
    # parameter's set), "text"}
    state_changes: list[dict[str, Any]] = field(default_factory=list)
    # A triton_op's write its mutates_args does not declare, which torch.compile found itself at every call
    # (op_mutations' OpMutations.functionalized: advice, no result differs), on its call lines and the lines that
    # write: {"op", "compile_ids", "why", "badge"}
    found_stores: list[dict[str, Any]] = field(default_factory=list)

    @property
    def checkpoint_calls(self) -> int:
        """Checkpoint calls made on this line that graphs captured, over all of them."""
        return sum(c.get("calls", 0) for c in self.checkpoint)

    @property
    def recomputed_ops(self) -> int:
        """Ops of this line that backward graphs recompute (checkpointed), over all of them."""
        return sum(c.get("recomputed_ops", 0) for c in self.checkpoint)

    @property
    def started_frames(self) -> list[dict[str, Any]]:
        """The compiled frames whose function starts here: not a resume function, which starts at the line whose
        break it follows (that line itself did not compile into it)."""
        return [fr for fr in self.frames if resumed_function(fr["function"]) is None]

    @property
    def resumed_frames(self) -> list[dict[str, Any]]:
        """The compiled frames of resume functions starting here: the rest of a function, after a break."""
        return [fr for fr in self.frames if resumed_function(fr["function"]) is not None]

    @property
    def rest_of(self) -> str | None:
        """The function whose rest, after a graph break on this line, was compiled from here (f, of the first of
        resumed_frames; "the function" where its name does not say); None where no resume function starts here."""
        resumed = self.resumed_frames
        return _rest_of(resumed[0]["function"]) if resumed else None

    @property
    def resume_notes(self) -> list[ResumeNote]:
        """The resume functions that start after this line, each with the function it runs the rest of."""
        return [ResumeNote(r["function"], _rest_of(r["function"]), r["compile_ids"], r.get("failed", []))
                for r in self.resumes]

    @property
    def break_resumes(self) -> list[tuple[dict[str, Any], list[str]]]:
        """Each graph break on this line, with the resume functions that took over after it and start on another
        line: one that starts after this line is said by its own note (resume_notes)."""
        here = {r["function"] for r in self.resumes}
        return [(b, [r for r in b["resume_functions"] if r not in here]) for b in self.graph_breaks]

    @property
    def graph_groups(self) -> dict[tuple[str, ...], list[str]]:
        """The graphs that captured this line, those with the same nodes from it together, in order: a recompile
        for a new size captures the line as the same nodes again, said once for all its compile ids."""
        return {tuple(ids): nodes for ids, nodes in _alike(self.graphs.items(), tuple)}

    @property
    def call_groups(self) -> dict[tuple[str, ...], list[dict[str, Any]]]:
        """The calls by the graphs holding their ops, in order: a model's compiles mostly share theirs, said once."""
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for call in self.calls:
            groups.setdefault(tuple(call["compile_ids"]), []).append(call)
        return groups

    @property
    def call_compile_ids(self) -> list[str]:
        """The graphs holding ops of the calls made on this line, in order."""
        return list(dict.fromkeys(c for call in self.calls for c in call["compile_ids"]))

    @property
    def recompile_guards(self) -> list[dict[str, Any]]:
        """The failed guards of this line that caused a recompilation (the rest of guards are installed ones)."""
        return [g for g in self.guards if "recompile" in g]

    @property
    def recompile_notes(self) -> list[RecompileNote]:
        """The recompilations failed guards of this line caused, in order, one note each: torch logs a failed check
        per earlier compilation it tried, so one recompile may fail several here (cpu_slower_than_eager.py line 23:
        [0/2] failed [0/0]'s size check and [0/1]'s), and alike checks of several compilations are one check."""
        notes: dict[str, RecompileNote] = {}
        checks: dict[tuple[str, str, str | None], FailedCheck] = {}
        caused = self._caused
        for g in self.recompile_guards:
            recompile = g["recompile"]
            if recompile not in caused and "recompile_failed" not in g:
                continue
            note = notes.setdefault(recompile, RecompileNote(recompile, []))
            if "recompile_failed" in g:
                note.failed = g["recompile_failed"]
            key = (recompile, g["guard"], g.get("described"))
            check = checks.get(key)
            if check is None:
                check = checks[key] = FailedCheck(g["guard"], g.get("described"), [])
                note.checks.append(check)
            failed_in = g["failed_in"] or "?"
            if failed_in not in check.failed_in:
                check.failed_in.append(failed_in)
        for check in checks.values():
            check.failed_in.sort(key=_compile_order)
        return list(notes.values())

    @property
    def eager_only(self) -> list[int]:
        """The indexes of the breaks that made this line run eagerly, less those located on this line (said as
        graph breaks)."""
        here = {b["index"] for b in self.graph_breaks}
        return [i for i in self.eager if i not in here]

    @property
    def recompiled(self) -> list[str]:
        """The compilations a failed guard of this line caused, in order: what the line made torch.compile do. Not
        those that failed (failed_recompiles): torch compiled nothing there."""
        found: list[str] = []
        for g in self.recompile_guards:
            if g["recompile"] not in found and "recompile_failed" not in g and not g.get("again"):
                found.append(g["recompile"])
        return found

    @property
    def _caused(self) -> set[str]:
        """The recompiles a guard of this line failed for the first time in (not only "again": an older compilation
        failing the guard it failed before, module_state.py's [0/0] pinning self.scale == 0.5 at every recompile)."""
        return {g["recompile"] for g in self.recompile_guards if not g.get("again")}

    @property
    def failed_recompiles(self) -> dict[str, str]:
        """The recompilations a failed guard of this line started that failed themselves, in order, with why
        ("Dynamo recompile limit exceeded"): from then on the frame ran eagerly, or the program stopped."""
        return {g["recompile"]: g["recompile_failed"] for g in self.recompile_guards if "recompile_failed" in g}

    @property
    def kernel_graphs(self) -> dict[str, int]:
        """How many of the line's kernels each kind of graph calls ("forward", "backward", "inference"; "": unknown),
        in order: a training step's line feeds both its forward's kernels and its backward's."""
        found: dict[str, int] = {}
        for k in self.kernels:
            graph = k.get("graph") or ""
            found[graph] = found.get(graph, 0) + 1
        return found

    def kernel_groups(self) -> dict[tuple[tuple[str, ...], str | None, bool], list[dict[str, Any]]]:
        """The line's kernels by (compile ids, graph kind, uncalled), in order: a compile's forward, then its backward.
        The compiles whose graph of that kind has the very same kernels here (names, debug handles and generated code:
        a dynamic recompile's) are one group, listing the first one's kernels (the links show its code, the same); a
        static recompile for a new size names its kernels alike, with other code, and is a group of its own. uncalled:
        the kernels stack traces logged outside any compile id list that no logged code calls (the AOTInductor
        package's wrapper names them nowhere), a group apart from the package's."""
        by_compile: dict[tuple[str, str | None, bool], list[dict[str, Any]]] = {}
        for k in self.kernels:
            by_compile.setdefault((k["compile_id"], k.get("graph"), bool(k.get("uncalled"))), []).append(k)
        groups: dict[tuple[tuple[str, ...], str | None, bool], list[dict[str, Any]]] = {}
        for ids, (graph, uncalled, kernels) in _alike(
                ((cid, (graph, uncalled, kernels)) for (cid, graph, uncalled), kernels in by_compile.items()),
                lambda value: (value[0], value[1],
                               tuple((k["kernel"], k["debug_handle"], k.get("code_md5")) for k in value[2]))):
            groups[(tuple(ids), graph, uncalled)] = kernels
        return groups

    def installed_guards(self) -> list[InstalledGuards]:
        """The guards each compilation installed because of this line, the dimension-marking checks apart; the
        compilations that installed the very same guards here, one entry naming them all."""
        by_compile: dict[str, InstalledGuards] = {}
        for g in self.guards:
            if "installed" in g:
                group = by_compile.setdefault(g["installed"], InstalledGuards([g["installed"]]))
                marking = g["guard"].startswith(DIMENSION_MARKING_GUARD)
                (group.dimension_marking if marking else group.guards).append(g["guard"])
                if "described" in g:
                    group.described[g["guard"]] = g["described"]
                if "hint" in g:
                    group.hints[g["guard"]] = g["hint"]
                if g.get("first_use"):
                    group.first_use.append(g["guard"])
        for group in by_compile.values():
            if not group.guards:  # the line has nothing else: its checks are its guards, shown as such
                group.guards, group.dimension_marking = group.dimension_marking, []
        alike = _alike(((cid, group) for cid, group in by_compile.items()),
                       lambda g: (tuple(g.guards), tuple(g.dimension_marking), tuple(g.described.items()),
                                  tuple(g.hints.items()), tuple(g.first_use)))
        for ids, group in alike:
            group.compile_ids = ids
        return [group for _, group in alike]

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in {
            "graphs": self.graphs, "frames": self.frames, "graph_breaks": self.graph_breaks, "eager": self.eager,
            "resumes": self.resumes, "guards": self.guards, "kernels": self.kernels, "symbols": self.symbols,
            "calls": self.calls, "failures": self.failures, "crashes": self.crashes, "checkpoint": self.checkpoint,
            "numerics": self.numerics, "ran_eagerly": self.ran_eagerly, "autotune": self.autotune, "aoti": self.aoti,
            "user_kernels": self.user_kernels, "state_changes": self.state_changes, "found_stores": self.found_stores,
        }.items() if v}

    @property
    def status(self) -> str:
        """How the line ran, for colouring: "crashed" (the program died here), "failed" (a compile failed here),
        "break", "eager", "captured", "called" (captured through a call: its ops are in a function called here) or ""
        (nothing known). The first that holds: a line where the program died is read for that before all else."""
        if self.crashes:
            return "crashed"
        if self.failures:
            return "failed"
        if self.graph_breaks:
            return "break"
        if self.eager or self.ran_eagerly:
            return "eager"
        if self.graphs:
            return "captured"
        if self.calls:
            return "called"
        return ""


def _alike(by_compile: Iterable[tuple[str, Any]], same: Callable[[Any], Any]) -> list[tuple[list[str], Any]]:
    """Compile id -> a note, as (compile ids, note) with the compile ids whose notes are the same (by `same`, a
    hashable reading of one) together, each group at its first compile id and with its first note."""
    groups: dict[Any, tuple[list[str], Any]] = {}
    for cid, note in by_compile:
        groups.setdefault(same(note), ([], note))[0].append(cid)
    return list(groups.values())


@dataclass
class SourceFile:
    """One user source file shown as a page: its lines (from disk or from the log) and notes by line."""

    path: str
    page: str
    origin: str  # "disk": read from the file; "log": rebuilt from the lines the log quotes
    note: str  # how the text was read ("disk"), or why it was not ("log"): a clause the page puts in its sentence
    # Line number -> its text; a line not here is a gap (the log does not quote it). Sparse: a file rebuilt from the
    # log runs to the highest line the log names, and a log (untrusted) of a few bytes can name line 10**9.
    text: dict[int, str]
    line_count: int  # lines of the file (disk), or the highest line the log names (log)
    notes: dict[int, LineNotes] = field(default_factory=dict)
    # Rebuilt files only: the function the log's stacks place a line in (resume functions named as the function
    # they resume), which bounds a function whose end the unindented quotes cannot show.
    functions: dict[int, str] = field(default_factory=dict)
    # Rebuilt files only: each compiled code of the file by (co_name, co_firstlineno), with the last line its logged
    # bytecode reaches (None: the log holds none). A name does not tell functions apart: the first line does
    # (same_cause.py's two compiled `forward`s), and the last line ends one that no other compiled function follows
    # (transformers' generic.py: the compiled `wrapper` at 933, then an inlined `wrapper` the log quotes from 1016).
    codes: dict[tuple[str, int], int | None] = field(default_factory=dict)
    # Rebuilt files only: the lines other pages link to (a stack's or a traceback's frame) that neither the quotes nor
    # the notes show: each is a row of its own, quoted or not, so a link to line 29 lands on line 29, not on the gap
    # that holds it (whose anchor is its first line's).
    linked: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return os.path.basename(self.path) or self.path

    @property
    def debug_handles(self) -> bool:
        """Whether a line's kernels include one named with its debug handle (`triton_poi_fused_gelu_1:3`)."""
        return any(k["debug_handle"] is not None for notes in self.notes.values() for k in notes.kernels)

    @property
    def failed_lines(self) -> list[tuple[int, LineNotes]]:
        """The lines where the program crashed or a compile failed, in order, with their notes."""
        return [(n, notes) for n, notes in sorted(self.notes.items()) if notes.crashes or notes.failures]

    @cached_property
    def shown_lines(self) -> list[int]:
        """The lines the page shows a row for, in order: those quoted, those with notes and those linked to. The lines
        between are gaps, one row each whatever their length, so a page costs what the log names."""
        count = self.line_count
        return sorted({n for n in (*self.text, *self.notes, *self.linked) if 0 < n <= count})

    @cached_property
    def _gap_starts(self) -> list[int]:
        """The first line of each gap: a run of lines the page does not show (unquoted, without notes)."""
        starts = []
        previous = 0
        for n in (*self.shown_lines, self.line_count + 1):
            if n > previous + 1:
                starts.append(previous + 1)
            previous = n
        return starts

    def line_name(self, path: str, line: int) -> str:
        """How this file's page names a line it links to: "line 27" for a line of its own (the reader is in the file),
        "inlined_helpers.py:18" for another file's (its base name: the link's title holds the path)."""
        if path == self.path:
            return f"line {line}"
        base = path.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{base}:{line}"

    def anchor(self, line: int) -> str | None:
        """The anchor of the page a link to `line` lands on: its own row, or the one row of the gap that holds it
        (a gap is one element, whatever its length, so a page costs what the log quotes); None past the file."""
        if not 0 < line <= self.line_count:
            return None
        if line in self.text or line in self.notes or line in self.linked:
            return line_anchor(line)
        return line_anchor(self._gap_starts[bisect.bisect_right(self._gap_starts, line) - 1])

    @cached_property
    def _function_starts(self) -> frozenset[int]:
        """Rebuilt files: the first line of each compiled function other than a resume function (which starts inside
        the function it resumes): a line that ends the function before it."""
        return frozenset(start for code, start in self.codes if resume_of(code) is None)

    @cached_property
    def _known_lines(self) -> list[int]:
        """Rebuilt files: the lines something is known of (quoted, noted, placed in a function by a stack, or starting
        a compiled function), in order: function_lines finds a function's by bisection, so each skipped frame and
        each transformed code costs its own lines, not the file's (2,000 skipped frames of one file: 6 s). Made at
        the first call; a note added after it goes through note_at, which keeps it."""
        return sorted({*self.text, *self.notes, *self.functions, *self._function_starts})

    def note_at(self, line: int) -> LineNotes:
        """The notes of `line`, made empty if it has none: how notes are added once the file is made."""
        notes = self.notes.get(line)
        if notes is None:
            notes = self.notes[line] = LineNotes()
            known = self.__dict__.get("_known_lines")  # (not made yet: it will be made with this line)
            if known is not None:
                at = bisect.bisect_left(known, line)
                if at == len(known) or known[at] != line:
                    known.insert(at, line)
        return notes

    def function_lines(self, first: int, name: str | None = None) -> list[tuple[int, int, str | None]]:
        """(first line, last line, text or None) of the compiled code `name` that starts, or resumes, at line `first`,
        while lines belong to it (the transformed-code page shows them beside the code run instead): a line of text,
        or a run of unquoted lines (None) that are one gap of the page, however long; [] when the file has no such
        line."""
        count = self.line_count
        if not 0 < first <= count:
            return []
        text = self.text
        head = text.get(first)
        out: list[tuple[int, int, str | None]] = [(first, first, head)]
        if self.origin == "log":
            # Rebuilt from the log's quotes, which carry no indentation (and may lack the def line): the function
            # runs to the last line its logged bytecode reaches, to the first line of another compiled function, to
            # the next quoted definition, or to the first line a stack places in another function, its unquoted
            # lines shown as such. A resume function starts inside the function it resumes, so it ends none.
            owner = self.functions.get(first)
            last = self.codes.get((name, first)) if name is not None else None
            end = min(last or count, count)
            others = self._function_starts  # (past `first`, so never its own)
            # Only the lines something is known of can end it or be shown apart; the runs between are gaps.
            known = self._known_lines
            marked = (known[i] for i in range(bisect.bisect_right(known, first), bisect.bisect_right(known, end)))
            previous = first
            for n in itertools.chain(marked, (end + 1,)):  # (lazily: most functions end long before the file)
                if n > previous + 1:
                    out.append((previous + 1, n - 1, None))
                if n > end:
                    break
                line = text.get(n)
                if n in others or (line is not None and line.startswith(("def ", "async def ", "class ", "@"))):
                    break
                in_function = self.functions.get(n)
                if in_function is not None:
                    if owner is None:
                        owner = in_function
                    elif in_function != owner:
                        break
                out.append((n, n, line))
                previous = n
        elif head is not None:
            indent = len(head) - len(head.lstrip())
            is_def = head.lstrip().startswith(("def ", "async def "))
            for n in range(first + 1, count + 1):  # (a file read from disk: every line is there)
                line = text.get(n)
                if line is not None and line.strip():
                    own = len(line) - len(line.lstrip())
                    if own < indent or (is_def and own == indent):
                        break
                out.append((n, n, line))
        while out and (out[-1][2] is None or not out[-1][2].strip()):
            out.pop()
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path, "name": self.name, "page": self.page, "origin": self.origin, "origin_note": self.note,
            "line_count": self.line_count,
            "text": {str(n): self.text[n] for n in sorted(self.text)},
            "lines": {str(n): self.notes[n].to_json() for n in sorted(self.notes)},
            "linked": self.linked,
        }


@dataclass
class Sources:
    """The user source files the log points at, and where its graph breaks are in them."""

    files: list[SourceFile] = field(default_factory=list)
    graph_breaks: list[GraphBreakSite] = field(default_factory=list)
    # Every compile in the log is torch.export's (ExportReport.only): its pages tell what torch.export did to a line.
    export_only: bool = False
    # What made the graphs and kernels logged outside any compile id, where the log says: "AOTInductor package" (an
    # aoti_compile_and_package compile, which has no compile id); None: it does not say (pages name them "outside any
    # compilation", not by tlparse's [-/-]).
    outside_name: str | None = None

    def __bool__(self) -> bool:
        return bool(self.files)

    @property
    def tool(self) -> str:
        """What made the log's notes on the lines: a link to a line says it shows what this did there."""
        return "torch.export" if self.export_only else "torch.compile"

    def file(self, path: str) -> SourceFile | None:
        """The file of that path, if it has a page: every frame of every stack the report shows asks."""
        return self._by_path.get(path)

    @cached_property
    def _by_path(self) -> dict[str, SourceFile]:
        # Made at the first lookup, by the renderers: the analysis has added every file by then.
        return {f.path: f for f in reversed(self.files)}  # (the first of a path, as a scan would find)

    @cached_property
    def resume_compile_ids(self) -> dict[str, list[str]]:
        """Each resume function -> the compile ids it was compiled as (its note on the line it follows): what a
        graph break's note links, wherever the break is."""
        found: dict[str, list[str]] = {}
        for f in self.files:
            for notes in f.notes.values():
                for r in notes.resumes:
                    found[r["function"]] = r["compile_ids"]
        return found

    def breaks_in(self, path: str) -> list[GraphBreakSite]:
        """The graph breaks located in file `path`, by line: the order a reader of the file meets them."""
        return sorted((b for b in self.graph_breaks if b.location.filename == path),
                      key=lambda b: (b.location.line, b.index))

    def to_json(self) -> dict[str, Any]:
        return {"version": SCHEMA_VERSION, "files": [f.to_json() for f in self.files],
                "graph_breaks": [b.to_json() for b in self.graph_breaks]}


# --- reading what the log says --------------------------------------------------------------------


class _Quotes:
    """Lines the log quotes, per file: what a rebuilt file shows and what a disk file must agree with."""

    def __init__(self) -> None:
        self.by_file: dict[str, dict[int, str]] = {}
        self.functions: dict[str, dict[int, str]] = {}  # the function a stack places each line in, per file

    def add(self, path: str, line: int, code: str | None, function: str | None = None) -> None:
        lines = self.by_file.setdefault(path, {})
        if code and line not in lines:
            lines[line] = code.strip()
        function = resumed_function(function) or function  # (a resume function's lines are its function's)
        if function and not function.startswith("<"):  # <module>, <lambda>, <genexpr>: not a def of the file
            self.functions.setdefault(path, {}).setdefault(line, function)


def _read_disk(path: str, quoted: dict[int, str], files: SourceFiles) -> tuple[list[str] | None, str]:
    """The file's lines, and how they were read (files: as ingest read them); or None, and why not (the page says it
    rebuilt the file)."""
    if not path.endswith(".py"):
        return None, "it is not a .py file"
    read, refused, _ = files.text(path, MAX_SOURCE_BYTES)
    if read is None:
        return None, {NOT_HERE: "the file is not on this machine",
                      NOT_A_FILE: "the path on this machine is not a regular file",
                      TOO_BIG: "the file on this machine is too big to show"}.get(
                          refused, f"the file could not be read ({refused})")
    lines = list(read)
    if not quoted:
        return None, "the log quotes no line of it, so the file on this machine cannot be checked against the run"
    for number, code in quoted.items():
        if number > len(lines) or lines[number - 1].strip() != code:
            return None, f"the file on this machine differs from the logged run (line {number})"
    return lines, f"read from {path}; every line the log quotes ({len(quoted)}) agrees with it"


def original_last_line(trace: Trace, entry: Compile, name: str) -> int | None:
    """The last line the compiled code `name` reaches, from its logged bytecode (the highest line a row starts);
    None where the log holds none."""
    for artifact in entry.artifacts:
        if artifact.payload is not None and artifact.name in (RECORDED_ORIGINAL_BYTECODE, name + ORIGINAL_BYTECODE_SUFFIX):
            lines = [int(m[1]) for m in map(_DIS_LINE_START.match, trace.payload_text(artifact.payload).splitlines()) if m]
            if lines:
                return max(lines)
    return None


def _user_traceback(text: str) -> str:
    if "User code traceback:" not in text:
        return ""
    body = text.rsplit("User code traceback:", 1)[1]
    return body.split("Traceback (most recent call last):", 1)[0]


def _eager_frames(frames: list[UserLocation], compiled_name: str | None) -> list[UserLocation]:
    """The traceback from the compiled frame inward: those statements ran eagerly after the break."""
    if compiled_name:
        for i in range(len(frames) - 1, -1, -1):
            if frames[i].function == compiled_name:
                return frames[i:]
    return frames[-1:]


def _resume_frames(trace: Trace) -> dict[tuple[str, int, str], list[str]]:
    """(path, line, torch's name) -> compile ids of the resume functions `torch_dynamo_resume_in_<f>_at_<line>`."""
    found: dict[tuple[str, int, str], list[str]] = {}
    for entry in trace.sorted_compiles():
        frame = compiled_frame(entry)
        if frame is None:
            continue
        resumed = resume_of(frame[2])
        if resumed is not None:
            ids = found.setdefault((frame[0], resumed[1], frame[2]), [])
            if compilation_key(entry.compile_id) not in ids:
                ids.append(compilation_key(entry.compile_id))
    return found


def graph_break_sites(trace: Trace, quotes: _Quotes | None = None) -> list[GraphBreakSite]:
    """Distinct graph breaks with the lines that ran eagerly because of them and the resume functions after them."""
    sites: dict[tuple, GraphBreakSite] = {}
    statements: dict[int, set[tuple[str, int]]] = {}  # break -> the statements of compiled frames it stopped at
    for entry in trace.sorted_compiles():
        key = compilation_key(entry.compile_id)
        frame = compiled_frame(entry)
        for artifact in entry.artifacts:
            if artifact.name != GRAPH_BREAK_ARTIFACT or artifact.payload is None:
                continue
            text = trace.payload_text(artifact.payload)
            frames = traceback_frames(_user_traceback(text))
            if quotes is not None:
                for f in frames:
                    quotes.add(f.filename, f.line, f.code, f.function)
            user = [f for f in frames if is_user_source(f.filename)]
            if not user:
                continue
            reason = parse_reason(text)["reason"]
            inner = user[-1]
            site = sites.get((reason, inner.key))
            if site is None:
                site = sites[(reason, inner.key)] = GraphBreakSite(len(sites), reason, inner)
                header = BREAK_HEADER.search(text)
                if header is not None and not is_user_source(header["file"]):
                    placed = (header["file"], int(header["line"]))
                    function = next((f.function for f in reversed(frames) if f.key == placed), None)
                    site.torch_location = UserLocation(placed[0], placed[1], function)
            if key not in site.compile_ids:
                site.compile_ids.append(key)
            # User tracebacks name a resume function by the function it resumes.
            compiled_name = frame[2] if frame else None
            compiled_name = resumed_function(compiled_name) or compiled_name
            eager = _eager_frames(user, compiled_name)
            statements.setdefault(site.index, set()).add(eager[0].key)
            for f in eager:
                if f.key not in site.eager_lines:
                    site.eager_lines.append(f.key)
                if f.code:
                    site.quoted.setdefault(f.key, f.code)
    # A resume function `torch_dynamo_resume_in_f_at_N` took over after the break whose eager statement is f's line N.
    resumes = _resume_frames(trace)
    for site in sites.values():
        for path, line in sorted(statements.get(site.index, ())):
            for (rpath, rline, name) in resumes:
                if rpath == path and rline == line and name not in site.resume_functions:
                    site.resume_functions.append(name)
    return sorted(sites.values(), key=lambda s: s.index)


def add_eager_lines(breaks: GraphBreaks, sites: list[GraphBreakSite]) -> None:
    """Each distinct graph break of the summary gets the lines that ran eagerly because of it."""
    by_key = {(s.reason, s.location.key): s for s in sites}
    for brk in breaks.breaks:
        site = by_key.get((brk.reason, brk.location.key)) if brk.location else None
        if site is None:
            continue
        brk.eager_lines = [UserLocation(p, n, None, site.quoted.get((p, n))) for p, n in site.eager_lines]
        brk.resume_functions = list(site.resume_functions)


def _add_call(n: LineNotes, outer: tuple[str, int], inner: tuple[str, int, str | None], compile_id: str,
              calls: dict[tuple[str, int, str, int], dict[str, Any]]) -> None:
    """Notes on the line outer that a call made there holds the graph's ops at inner (file, line, function)."""
    key = (*outer, inner[0], inner[1])
    call = calls.get(key)
    if call is None:
        call = calls[key] = {"file": inner[0], "line": inner[1], "function": inner[2], "compile_ids": []}
        n.calls.append(call)
    if compile_id not in call["compile_ids"]:
        call["compile_ids"].append(compile_id)


# An inlined function's code object, as Dynamo guards it where the code calling it reached it (`ID_MATCH:
# ___check_obj_id(G['sample_loss'].__code__, 1403...)`): the function's name is the source's last part.
_CODE_GUARD = lazy_compile(r"^ID_MATCH: ___check_obj_id\((?:[^,\n]{0,500}?)(?:\['(?P<key>\w{1,200})'\]|\.(?P<attr>\w{1,200}))"
                           r"\.__code__, ")


@dataclass(slots=True)
class CodeGuards:
    """One compile's guards on inlined functions' code: Dynamo inlined each into that compile's graph."""

    user_lines: dict[tuple[str, int], set[str]] = field(default_factory=dict)  # a user line -> functions guarded there
    in_function: dict[str, set[str]] = field(default_factory=dict)  # a function (torch's too) -> functions guarded in it


def guarded_calls(code_guards: dict[str, CodeGuards],
                  graph_sites: dict[str, list[FxNodeSite]]) -> list[tuple[tuple[str, int], FxNodeSite, str]]:
    """The calls a graph dump shows where no kernel stack does (backend="eager": a node's comment names only its
    innermost line). A user line from which Dynamo guarded a function's code called that function, inlined into the
    compile's graph: the nodes the dump places in a user function of that name are that line's ops, and so are those
    of the functions guarded inside it, in turn (per_sample_grads' `vmap(grad(sample_loss))` at func_numpy.py:32:
    sample_loss's ops at line 27; jacobian's `jacrev(energy)(x)`: jacrev, torch's, guards energy). Where two lines
    call one function, the guard is on the first: it has the ops, and the other lines are found in the graph's
    order (bracketed_calls). As (caller's file and line, the site of its ops, compile id)."""
    found: list[tuple[tuple[str, int], FxNodeSite, str]] = []
    for compile_id, guards in code_guards.items():
        sites_in: dict[str, list[FxNodeSite]] = {}
        for site in graph_sites.get(compile_id, ()):
            if is_user_source(site.path):
                sites_in.setdefault(site.function, []).append(site)
        for outer, names in guards.user_lines.items():
            for name in sorted(names):
                found.extend((outer, site, compile_id) for site in _reached(name, guards, sites_in)
                             if (site.path, site.line) != outer)  # (recursion: the line's own ops)
        callers: dict[str, set[str]] = {}  # an inlined function -> the functions Dynamo guarded its code in
        for function, inlined in guards.in_function.items():
            for name in inlined:
                callers.setdefault(name, set()).add(function)
        for name, calling in sorted(callers.items()):
            reached = {site.function for site in _reached(name, guards, sites_in)}
            found.extend((outer, site, compile_id) for outer, run in
                         bracketed_calls(graph_sites.get(compile_id, []), reached, calling)
                         for site in run if (site.path, site.line) != outer)
    return found


def _reached(name: str, guards: CodeGuards, sites_in: dict[str, list[FxNodeSite]]) -> list[FxNodeSite]:
    """The graph's sites in the function name and in the functions guarded inside it, in turn."""
    found: list[FxNodeSite] = []
    todo, seen = [name], set()
    while todo:
        function = todo.pop(0)
        if function in seen:
            continue
        seen.add(function)
        found.extend(sites_in.get(function, ()))
        todo.extend(sorted(guards.in_function.get(function, ())))
    return found


def bracketed_calls(sites: list[FxNodeSite], callee: set[str],
                    callers: set[str]) -> list[tuple[tuple[str, int], list[FxNodeSite]]]:
    """The lines that called an inlined function, read from the graph's order: Dynamo places the guard on a
    function's code at the first line that reached it only, but its ops sit where each call ran, between the ops of
    the statement that called it. A run of sites in callee's functions whose neighbours, before and after, are one
    line of a function that calls it (`k_embed = (k * cos) + (rotate_half(k) * sin)`: k * cos, then rotate_half's
    ops, then * sin) was called from that line. A call whose line has ops on one side only is not placed."""
    found: list[tuple[tuple[str, int], list[FxNodeSite]]] = []
    i = 0
    while i < len(sites):
        if sites[i].function not in callee or not is_user_source(sites[i].path):
            i += 1
            continue
        end = i
        while end < len(sites) and sites[end].function in callee and is_user_source(sites[end].path):
            end += 1
        before, after = (sites[i - 1] if i else None), (sites[end] if end < len(sites) else None)
        if (before is not None and after is not None and before.function in callers
                and (before.path, before.line, before.function) == (after.path, after.line, after.function)):
            found.append(((before.path, before.line), sites[i:end]))
        i = end
    return found


def _add_calls(frames: list[UserLine], compile_id: str, at: Callable[[str, int], LineNotes | None], quotes: _Quotes,
               calls: dict[tuple[str, int, str, int], dict[str, Any]]) -> None:
    """The outer frames of one kernel stack (outermost first): each user line among them called, directly or through
    other calls, the function whose line, the innermost, holds the ops; its note names that line."""
    if len(frames) < 2:
        return
    inner = frames[-1]
    for outer in frames[:-1]:
        if outer.file == inner.file and outer.line == inner.line:  # (recursion: the line's own ops)
            continue
        n = at(outer.file, outer.line)
        if n is None:
            continue
        quotes.add(outer.file, outer.line, outer.code)
        _add_call(n, (outer.file, outer.line), (inner.file, inner.line, inner.function), compile_id, calls)


def failed_compilations(trace: Trace) -> set[str]:
    """The compilations (compilation_key) whose compilation_metrics tell a failure (fail_type): Dynamo started on
    their frame, and nothing of it was compiled."""
    return {compilation_key(entry.compile_id) for entry in trace.metrics_compiles(sort=False)
            if entry.compile_id is not None and entry.metrics is not None and entry.metrics.get("fail_type")}


def _add_failures(trace: Trace, errors: CompileErrors | None, crashed: Crashes | None,
                  at: Callable[[str, int], LineNotes | None], quotes: _Quotes) -> None:
    """Each compile failure and crash on its user line, placed as errors.py and crash.py place them (not again here)."""
    # The attempt whose metrics tell a failure, by their artifact's number: its page shows the failure message.
    dirs = {metrics_number(entry): entry.dir_name for entry in trace.metrics_compiles() if entry.compile_id is not None}
    for error in errors.errors if errors is not None else ():
        loc = error.location
        n = at(loc.filename, loc.line) if loc is not None else None
        if loc is None or n is None:
            continue
        quotes.add(loc.filename, loc.line, loc.code)
        n.failures.append({"compile_id": error.compile_id, "dir": dirs.get(error.metrics_number),
                           "stage": error.stage_label, "exception": error.exception, "message": error.message,
                           "kind": error.location_kind, "fell_back": error.fell_back})
    for crash in crashed.crashes if crashed is not None else ():
        user = crash.user_frame
        n = at(user.filename, user.line) if user is not None else None
        if user is None or n is None:
            continue
        for frame in crash.frames:  # (an uncaught exception's traceback quotes its lines; faulthandler's does not)
            quotes.add(frame.filename, frame.line, frame.code)
        where = crash.where
        n.crashes.append({"error": crash.error, "exception": crash.exception, "thread": crash.thread,
                          # Where Python was, when not on this line (a native crash in a library it called)
                          "where": where.to_json() if where is not None and where is not user else None,
                          "during": crash.during, "compile_id": crash.compile_id})


class NotedSources:
    """What note_sources found, before the files are read: the lines to note, per file, and what the log quotes of
    them. (Not saved: no dataclass.)"""

    def __init__(self, trace: Trace, result: Sources, notes: dict[str, dict[int, LineNotes]], quotes: _Quotes,
                 linked_lines: dict[str, set[int]], codes: dict[str, dict[tuple[str, int], int | None]],
                 breaks: GraphBreaks | None, errors: CompileErrors | None) -> None:
        self.trace, self.result, self.notes, self.quotes = trace, result, notes, quotes
        self.linked_lines, self.codes, self.breaks, self.errors = linked_lines, codes, breaks, errors

    @property
    def paths(self) -> list[str]:
        """The files source_pages reads (_read_disk): each noted .py file."""
        return sorted(p for p in self.notes if p.endswith(".py"))


def analyze_sources(trace: Trace, files: SourceFiles = NO_FILES, **given: Any) -> Sources:
    """note_sources (given: its arguments), then source_pages. files: as ingest read them, with note_sources(...).paths
    (analyses.analyze reads the files in between)."""
    return source_pages(note_sources(trace, files=files, **given), files)


def note_sources(trace: Trace, provenance: Provenance | None = None, shapes: DynamicShapes | None = None,
                    recompile_info: Recompiles | None = None, linked_locations: Iterable[UserLocation] = (),
                    errors: CompileErrors | None = None, crashed: Crashes | None = None,
                    stack_values: StackValues | None = None, export_only: bool = False,
                    checkpointing: ActivationCheckpointing | None = None, breaks: GraphBreaks | None = None,
                    autotuned: Autotuning | None = None, aoti: Aoti | None = None,
                    numerics_found: Numerics | None = None,
                    own_kernels: UserKernels | None = None, mutations: OpMutations | None = None,
                    files: SourceFiles = NO_FILES) -> NotedSources:
    """stack_values: names Dynamo's ___stack values in the user's words, for installed guards and symbols as the
    recompiles view names failed guards (shared with shapes and recompile_info where the caller made them).
    linked_locations: other user lines the report links to (where torch warned, a stack's or a traceback's frame):
    the page of their file, where it has one, shows them (as rows of their own where the log does not quote them), so
    the link lands on its line. errors, crashed: the compile failures and the crashes, each
    marked on the user line its analysis placed it at (a file with no other note gets a page for it). export_only:
    ExportReport.only, the log's every compile torch.export's. breaks: graph_breaks' (made here where not given): the
    functions Dynamo skipped and the higher-order op calls that ran uncompiled because of one, marked on their lines.
    autotuned: autotuning's (made here where not given): max-autotune's searches, on the line of the op each was for.
    aoti: the AOTInductor packages the log compiled, each marked on the user's line that compiled it. numerics_found:
    numerics' (made here where not given): the lines whose compiled results differ from eager's, and why. own_kernels:
    user_kernels' (made here where not given): the user's own Triton kernels, marked on the lines that define and
    launch them. mutations: op_mutations' (made here where not given): the custom ops writing into arguments they do
    not declare, marked where they write and where compiled code calls them. files: as ingest read them (the files
    state_lines, user_kernels and op_mutations search: their files_wanted)."""
    quotes = _Quotes()
    # (path, line) -> LineNotes, built first without text; files are made at the end.
    notes: dict[str, dict[int, LineNotes]] = {}

    def at(path: str, line: int) -> LineNotes | None:
        if not is_user_source(path) or line <= 0:
            return None
        return notes.setdefault(path, {}).setdefault(line, LineNotes())

    stack_values = stack_values if stack_values is not None else StackValues(trace)
    # (compile id, its compile, guards payload: read one at a time, below)
    guard_sites: list[tuple[str, Compile, PayloadRef]] = []
    codes: dict[str, dict[tuple[str, int], int | None]] = {}  # file -> SourceFile.codes
    # Compilations whose metrics tell a failure: their frame was not compiled, though Dynamo started on it.
    failed_keys = failed_compilations(trace)
    # (path, line, compile id) of each LineNotes.frames entry: a scan of a line's frames per compile was quadratic in
    # its compiles (a function compiled after 20,000 resets)
    framed: set[tuple[str, int, str]] = set()
    stack_lines: dict[str, set[int]] = {}  # path -> the lines the compiles' stacks pass through
    graph_sites: dict[str, list[FxNodeSite]] = {}  # compile id -> its graph dump's node sites
    provenance = provenance if provenance is not None else analyze_provenance(trace, files)
    # compile id -> its kernels' stacks: they place a graph node FX comments with torch's file (user_lines_at)
    kernel_stacks = {compilation_key(cp.compile_id): [frames for section in cp.sections for kernel in section.kernels
                                                      for frames in kernel.frames]
                     for cp in provenance.compiles.values()}
    for entry in trace.sorted_compiles():
        key = compilation_key(entry.compile_id)
        frame = compiled_frame(entry)
        for f in entry.stack or []:
            quotes.add(f.filename, f.line, f.loc, f.name)
            stack_lines.setdefault(f.filename, set()).add(f.line)  # (its compile's page links each frame)
        if frame is not None:
            n = at(frame[0], frame[1])
            if n is not None and (frame[0], frame[1], key) not in framed:
                framed.add((frame[0], frame[1], key))
                n.frames.append({"compile_id": key, "function": frame[2], "failed": key in failed_keys})
            if n is not None:
                # Each attempt of a compile id may hold the bytecode (torch's at attempt 0, compilescope's at the last).
                file_codes = codes.setdefault(frame[0], {})
                if file_codes.get((frame[2], frame[1])) is None:
                    file_codes[(frame[2], frame[1])] = original_last_line(trace, entry, frame[2])
        for artifact in entry.artifacts:
            if artifact.name == GRAPH_ARTIFACT and artifact.payload is not None:
                sites_of_graph = fx_node_sites(trace.payload_text(artifact.payload))
                graph_sites.setdefault(key, []).extend(sites_of_graph)
                for node_site in sites_of_graph:
                    quotes.add(node_site.path, node_site.line, node_site.code)
                    places = [(node_site.path, node_site.line)]
                    if not is_users_file(node_site.path):  # (through a subclass's __torch_function__: _tensor.py)
                        places = [(u.file, u.line) for u in user_lines_at(kernel_stacks.get(key, ()), *places[0])]
                    for n in filter(None, (at(*place) for place in places)):
                        names = n.graphs.setdefault(key, [])
                        names.extend(x for x in node_site.nodes if x not in names)
            elif artifact.name == GUARDS_ARTIFACT and artifact.payload is not None:
                guard_sites.append((key, entry, artifact.payload))

    sites = graph_break_sites(trace, quotes)
    resume_by_frame = _resume_frames(trace)
    for site in sites:
        n = at(site.location.filename, site.location.line)
        if n is not None:
            n.graph_breaks.append({"index": site.index, "reason": site.reason, "compile_ids": site.compile_ids,
                                   "resume_functions": site.resume_functions, "torch_text": site.torch_text})
        for path, line in site.eager_lines:
            n = at(path, line)
            if n is not None and site.index not in n.eager:
                n.eager.append(site.index)
    for (path, line, name), ids in resume_by_frame.items():
        n = at(path, line)
        if n is not None:
            n.resumes.append({"function": name, "compile_ids": ids, "failed": [c for c in ids if c in failed_keys]})

    recompile_info = recompile_info if recompile_info is not None else recompiles(trace, stack_values)
    # Why a compile failed, by compile id: a recompilation that failed (the recompile limit) compiled nothing.
    failed_why = {e.compile_id: e.message for e in (errors.errors if errors is not None else ())}
    for fr in recompile_info.frames:
        failed_before: set[tuple[str | None, str]] = set()  # (compilation, guard) failed at an earlier recompile
        for step in fr.steps:
            recompile = compilation_key(step.compile_id)
            failing_now = {(guard.compile_id, guard.guard) for guard in step.failed_guards}
            for guard in step.failed_guards:
                loc = guard.location
                if loc is None or guard.location_kind == "function":  # (the function's def: not where it failed)
                    continue
                quotes.add(loc.filename, loc.line, loc.code)
                n = at(loc.filename, loc.line)
                failed: dict[str, Any] = {"recompile": recompile,
                                          "failed_in": compilation_key(guard.compile_id) if guard.compile_id else None,
                                          "guard": guard.guard, "change": guard.change}
                if guard.described:  # (Dynamo's ___stack names in the user's words, as the recompiles view says them)
                    failed["described"] = guard.described
                if step.failed:
                    failed["recompile_failed"] = failed_why.get(recompile) or "it failed"
                if guard.compile_id is not None and (guard.compile_id, guard.guard) in failed_before:
                    failed["again"] = True
                if n is not None and failed not in n.guards:
                    n.guards.append(failed)
            failed_before |= failing_now

    stacks: dict[str, list[Frame]] = {}  # each compile's dynamo_start stack: which of several lines it passed
    for entry in trace.sorted_compiles():
        if entry.compile_id is not None and entry.stack:
            stacks.setdefault(compilation_key(entry.compile_id), entry.stack)
    for marked in state_lines(recompile_info, stacks, files):
        n = at(marked.path, marked.line)
        if n is not None:  # (read from the file itself, not quoted by the log: no check of the file against the run)
            n.state_changes.append({"recompile": marked.recompile, "kind": marked.kind, "text": marked.text})

    # Installed guards name the user line they came from, with the path clipped at the front: matched to a file
    # the log names in full, and only when exactly one ends that way.
    known = set(notes)
    resolved: dict[str, str | None] = {}  # clipped path -> the one known path it names (asked once per path)
    installed: set[tuple[str, int, str, str]] = set()
    code_guards: dict[str, CodeGuards] = {}  # compile id -> its guards on inlined functions' code
    # Recompiles install mostly the same guards again: each distinct guard line is parsed once.
    # (guard, file, line, code, hint, function, the function whose code it guards: _CODE_GUARD, whether torch notes
    # the line as the first use of a size: FIRST_USE_NOTE)
    parsed: dict[str, tuple[str, str, int, str, str | None, str, str | None, bool] | None] = {}
    for key, guarded, guards_payload in guard_sites:
        for raw in trace.payload_text(guards_payload).splitlines():
            if raw in parsed:
                found_guard = parsed[raw]
            else:
                m = GUARD_LINE.search(raw) if GUARD_TAIL.search(raw) else None
                inlined = _CODE_GUARD.match(m["guard"]) if m is not None else None
                found_guard = parsed[raw] = ((m["guard"], m["file"], int(m["line"]), m["code"], m["hint"], m["func"],
                                              inlined and (inlined["key"] or inlined["attr"]),
                                              (m["note"] or "").startswith(FIRST_USE_NOTE))
                                             if m is not None else None)
            if found_guard is None:
                continue
            guard_text, path, line, code, hint, function, inlined_name, first_use = found_guard
            if inlined_name is not None:
                code_guards.setdefault(key, CodeGuards()).in_function.setdefault(function, set()).add(inlined_name)
            if path not in known:
                if path not in resolved:
                    full = [p for p in known if p.endswith("/" + path) or p.endswith(path)]
                    resolved[path] = full[0] if len(full) == 1 else None
                found = resolved[path]
                if found is None:
                    continue
                path = found
            n = at(path, line)
            if n is not None:
                quotes.add(path, line, code)  # the guard's comment quotes its line, sometimes the only quote of it
                if inlined_name is not None:
                    code_guards[key].user_lines.setdefault((path, line), set()).add(inlined_name)
            if n is not None and (path, line, key, guard_text) not in installed:
                installed.add((path, line, key, guard_text))
                guard_note: dict[str, Any] = {"installed": key, "guard": guard_text}
                if hint:  # (torch's hint on what the guard checks: "type float")
                    guard_note["hint"] = hint
                if first_use:
                    guard_note["first_use"] = True
                named = stack_values.guard_names(guarded, guard_text) if "___stack" in guard_text else {}
                if named:  # (Dynamo's ___stack names in the user's words, as the recompiles view says them)
                    guard_note["described"] = name_stack_values(guard_text, named)
                if "___from_numpy(" in guard_text:  # (the NumPy array the function takes, not torch's tensor of it)
                    guard_note["described"] = numpy_in_words(guard_note.get("described") or guard_text)
                n.guards.append(guard_note)

    shapes = shapes if shapes is not None else dynamic_shapes(trace, stack_values)
    for created in shapes.symbols:
        if created.location is not None:
            n = at(created.location.filename, created.location.line)
            symbol = {"kind": "created", "compile_id": compilation_key(created.compile_id), "symbol": created.symbol,
                      "value": created.value, "source": created.source}
            if created.source_text:  # (a ___stack source in the user's words, as the dynamic-shapes view says it)
                symbol["described"] = created.source_text
            if n is not None and symbol not in n.symbols:
                n.symbols.append(symbol)
    for spec in shapes.specializations:
        if spec.location is not None:
            n = at(spec.location.filename, spec.location.line)
            # A specialization names every source of its symbol (symbolic_shape_specialization's "sources": sizes
            # torch found equal share one symbol), each in the user's words where it is a name Dynamo made.
            specialized: dict[str, Any] = {"kind": "specialized", "compile_id": compilation_key(spec.compile_id),
                                           "symbol": spec.symbol, "value": spec.value, "sources": list(spec.sources)}
            if spec.source_texts:
                specialized["described_sources"] = [{"source": source, "text": text}
                                                    for source, text in spec.source_texts.items()]
            if n is not None and specialized not in n.symbols:
                n.symbols.append(specialized)
    for shape_guard in shapes.guards:
        if shape_guard.location is not None:
            n = at(shape_guard.location.filename, shape_guard.location.line)
            shape_note = {"kind": "guard", "compile_id": compilation_key(shape_guard.compile_id), "expr": shape_guard.expr}
            if n is not None and shape_note not in n.symbols:
                n.symbols.append(shape_note)

    # Each output code's md5 (its envelope's has_payload), by artifact number: compiles alike in kernel names may
    # differ in code (a static recompile inlines other sizes), and only the same code makes one group of them.
    code_md5 = {a.number: a.md5 for entry in trace.compiles.values() for a in entry.artifacts if a.md5}
    # (file, line, kernel, compile id, graph): a line lists a kernel call once (a graph's handles restart at 1 in
    # torch 2.13: its forward and backward may each have an `extern_kernels.mm:2`)
    linked: set[tuple[str, int, str, str, int]] = set()
    anchors: dict[str, str] = {}  # kernel name -> its anchor, one object: a line lists the kernel of every compile
    calls: dict[tuple[str, int, str, int], dict[str, Any]] = {}  # (caller's file, line, ops' file, line) -> its call
    # Where a compile's kernel stacks hold the whole chain of calls, they say them (below); elsewhere its guards do.
    stacked = {compilation_key(cp.compile_id) for cp in provenance.compiles.values()
               if any(kernel.frames for section in cp.sections for kernel in section.kernels)}
    for outer, op_site, compile_id in guarded_calls({k: v for k, v in code_guards.items() if k not in stacked},
                                                    graph_sites):
        n = at(*outer)
        if n is not None:
            _add_call(n, outer, (op_site.path, op_site.line, op_site.function), compile_id, calls)
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
                        _add_calls(frames, cp_key, at, quotes, calls)
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

    _add_failures(trace, errors, crashed, at, quotes)
    for ckpt in (checkpointing if checkpointing is not None else activation_checkpointing(trace)).compiles:
        for ckpt_site, what in [(c, "calls") for c in ckpt.calls] + [(r, "recomputed_ops") for r in ckpt.recomputed]:
            n = at(ckpt_site.path, ckpt_site.line)
            if n is not None:
                quotes.add(ckpt_site.path, ckpt_site.line, ckpt_site.code)
                n.checkpoint.append({"compile_id": ckpt.compile_id, what: ckpt_site.count})

    for search in (autotuned if autotuned is not None else autotuning(trace)).searches:
        n = at(search.site.filename, search.site.line) if search.site else None
        if n is not None and search.site is not None:
            quotes.add(search.site.filename, search.site.line, search.site.code)
            n.autotune.append({"compile_id": search.compile_id, "op": search.op, "shape": search.shape,
                               "best_kernel": search.best_kernel, "best_time": search.best_time_text,
                               "seconds": round(search.seconds, 6), "took": format_seconds(search.seconds),
                               "compile_notes": search.compile_notes})
    differ = numerics_found if numerics_found is not None else numerics(trace)
    for kind, lines in (("random", differ.random), ("precision", differ.precision)):
        for differing in lines:
            where = differing.location
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.numerics.append({"kind": kind, "compile_ids": differing.compile_ids, "ops": differing.ops,
                                   "why": differing.why})
    mutations = mutations if mutations is not None else op_mutations(trace, files)
    for op in mutations.ops:
        args = " and ".join(op.arguments)
        # (each with its badge: what the line does, not only that results differ)
        marks = [(w, op.compile_ids, op.write_note, f"writes {args}, undeclared") for w in op.writes]
        marks += [(c.location, [c.compile_id], op.call_note(c),
                   "call left out" if c.dropped else f"{op.op} writes {args}") for c in op.calls]
        marks += [(m.location, [c.compile_id], op.read_note(c, m), f"reads {args} after {op.op}")
                  for c in op.calls for m in c.moved_reads]
        for where, compile_ids, why, badge in marks:
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.numerics.append({"kind": "mutation", "compile_ids": compile_ids, "ops": [op.op], "why": why,
                                   "badge": badge})
    for op in mutations.functionalized:  # (torch found the store: advice, told in the INFO tone)
        stores = [(w, op.compile_ids, op.write_note, "store found by torch") for w in op.writes]
        stores += [(c.location, [c.compile_id], op.call_note(c), "store found by torch") for c in op.calls]
        for where, compile_ids, why, badge in stores:
            n = at(where.filename, where.line)
            if n is not None:
                quotes.add(where.filename, where.line, where.code)
                n.found_stores.append({"op": op.op, "compile_ids": compile_ids, "why": why, "badge": badge})
    for package in aoti.packages if aoti is not None else ():
        n = at(package.call.filename, package.call.line) if package.call is not None else None
        if package.call is not None and n is not None:
            quotes.add(package.call.filename, package.call.line, package.call.code)
            n.aoti.append({"accepts": package.accepts, "checks_need_env": package.checks_need_env,
                           "holds": package.contents.text if package.contents else None,
                           "wrapper_artifact": package.wrapper_artifact, "kernel_artifact": package.kernel_artifact})

    _add_user_kernels(own_kernels if own_kernels is not None else user_kernels(trace, files), at, quotes)

    linked_lines: dict[str, set[int]] = {path: lines for path, lines in stack_lines.items() if path in notes}
    for loc in linked_locations:
        if loc.filename in notes and loc.line > 0:
            quotes.add(loc.filename, loc.line, loc.code)
            linked_lines.setdefault(loc.filename, set()).add(loc.line)

    result = Sources(graph_breaks=sites, export_only=export_only,
                     outside_name=(None if not aoti else "AOTInductor package" if len(aoti.packages) == 1
                                   else "AOTInductor packages"))
    return NotedSources(trace, result, notes, quotes, linked_lines, codes, breaks, errors)


def source_pages(noted: NotedSources, files: SourceFiles) -> Sources:
    """The noted files' pages: each file's text as ingest read it (files: with noted.paths), where the file agrees with
    every line the log quotes of it; else rebuilt from those lines."""
    trace, result, notes, quotes = noted.trace, noted.result, noted.notes, noted.quotes
    linked_lines, codes, breaks, errors = noted.linked_lines, noted.codes, noted.breaks, noted.errors
    read = {path: _read_disk(path, quotes.by_file.get(path, {}), files) for path in notes}
    for path in sorted(notes):
        quoted = quotes.by_file.get(path, {})
        disk, note = read[path]
        if disk is not None:
            text = dict(enumerate(disk, 1))
            line_count = len(disk)
            origin = "disk"
        else:
            # Up to the highest line the log names; only the quoted lines take room (SourceFile.text is sparse).
            line_count = max(0, *quoted, *notes[path], *linked_lines.get(path, ()))
            text = {n: t for n, t in quoted.items() if n > 0}
            origin = "log"
        functions = quotes.functions.get(path, {}) if origin == "log" else {}
        linked_rows = sorted(n for n in linked_lines.get(path, ()) if n not in text and n not in notes[path]
                              and n <= line_count) if origin == "log" else []
        result.files.append(SourceFile(path, file_page(path), origin, note, text, line_count, notes[path],
                                       {n: f for n, f in functions.items() if n <= line_count},
                                       codes.get(path, {}) if origin == "log" else {}, linked_rows))
    _add_ran_eagerly(result, breaks if breaks is not None else graph_breaks(trace), errors)
    return result


def _add_user_kernels(found: UserKernels, at: Callable[[str, int], LineNotes | None], quotes: _Quotes) -> None:
    """Each of the user's own Triton kernels on its def line (its first decorator where only torch's line is known)
    and on the lines whose launch the graphs traced, with the compiles whose code holds it."""
    marks: dict[tuple[str, int, str, str], dict[str, Any]] = {}
    for k in found.kernels:
        places = [(k.defined_at, "decorated" if k.defined_at.line == k.decorator_line else "defined")] if k.defined_at else []
        places += [(u, "launched") for u in k.launched_at]
        for place, role in places:
            mark = marks.get((place.filename, place.line, k.name, role))
            if mark is None:
                n = at(place.filename, place.line)
                if n is None:
                    continue
                quotes.add(place.filename, place.line, place.code, place.function if role == "defined" else None)
                mark = marks[(place.filename, place.line, k.name, role)] = {
                    "kernel": k.name, "role": role, "compile_ids": [], "code_name": k.code_name,
                    "defined_at": k.defined_text if role == "launched" else None}
                n.user_kernels.append(mark)
            if k.compile_id not in mark["compile_ids"]:
                mark["compile_ids"].append(k.compile_id)


def _add_ran_eagerly(result: Sources, breaks: GraphBreaks, errors: CompileErrors | None) -> None:
    """Marks what ran eagerly, all of it, though no break is on its lines: each line of a function Dynamo skipped
    after a break it could not resume from (the function's lines as its file shows them, its def line on), and each
    line that called a higher-order op whose function holds a break. The break's own line says the break."""
    skipped: dict[tuple[str, int, str | None], tuple[list[str], str]] = {}  # frame -> (compile ids, what it was)
    for brk in breaks.breaks:
        if brk.skipped_frame is not None and brk.skipped_text is not None:
            ids, _ = skipped.setdefault(brk.skipped_frame.key + (brk.skipped_frame.function,), ([], brk.skipped_text))
            ids.extend(c for c in brk.skipped_in if c not in ids)  # (not its other compiles: they skipped others)
    for err in errors.errors if errors is not None else ():
        if err.skipped_frame is not None and err.skipped_text is not None:
            ids, _ = skipped.setdefault(err.skipped_frame.key + (err.skipped_frame.function,), ([], err.skipped_text))
            if err.compile_id not in ids:
                ids.append(err.compile_id)
    for (path, first, function), (ids, text) in skipped.items():
        f = result.file(path)
        if f is None:
            continue
        for n, _, line_text in f.function_lines(first, function):
            if line_text is None or not line_text.strip():  # (a gap of a rebuilt file, or a blank line)
                continue
            note = {"kind": "skipped_frame", "function": function, "compile_ids": ids, "text": text}
            lines = f.note_at(n).ran_eagerly
            if note not in lines:
                lines.append(note)
    for brk in breaks.breaks:
        if brk.higher_order_op is None or brk.uncompiled_text is None:
            continue
        for call in brk.op_calls:
            f = result.file(call.filename)
            if f is None or not 0 < call.line <= f.line_count:
                continue
            note = {"kind": "higher_order_op", "op": brk.higher_order_op, "compile_ids": brk.compile_ids,
                    "text": brk.uncompiled_text}
            lines = f.note_at(call.line).ran_eagerly
            if note not in lines:
                lines.append(note)

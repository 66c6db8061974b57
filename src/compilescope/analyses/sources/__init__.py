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

This module holds what the analysis finds, the classes its results are saved as (a saved result names a class by its
module: model/codec.type_name): Sources with its SourceFile pages and their LineNotes, GraphBreakSite, and the notes a
line's methods make (InstalledGuards, RecompileNote with its FailedCheck, ResumeNote); CodeGuards, one compile's
guards on inlined functions' code; and what those methods use (line_anchor, resumed_function,
DIMENSION_MARKING_GUARD); NoteAt, how note_sources' steps reach a line's notes. It imports none of its modules, which import it:
  file_text.py    which files are the user's (is_user_source); the lines the log quotes of each (Quotes), the file on
                  disk where it agrees with them (read_disk, MAX_SOURCE_BYTES), and the last line a compiled code's
                  logged bytecode reaches (original_last_line)
  captured.py     what each compile captured: its frame, the lines its stack passed through, its graphs' nodes on
                  their lines (add_compiles)
  break_sites.py  the distinct graph breaks with the lines that ran eagerly because of each and the resume functions
                  that took over after it (graph_break_sites, resume_frames), noted on the lines (add_breaks) and
                  given to graph_breaks' (add_eager_lines)
  guards.py       the guards recompiles found failing, the switches of state behind them, the guards each compile
                  installed because of a line, and the dynamic-shape symbols of a line (add_failed_guards,
                  add_state_changes, add_installed_guards, add_symbols)
  calls.py        the calls made on a line whose ops the graph holds elsewhere: from kernel stack traces (add_calls)
                  or, where none, from Dynamo's guards on inlined functions' code (guarded_calls, bracketed_calls,
                  add_guarded_calls)
  kernels.py      Inductor's kernels on the user lines they were made for (add_kernels)
  marks.py        compile failures and crashes, the user's Triton kernels, activation checkpointing, max-autotune's
                  searches, numerics, custom ops' undeclared writes, AOTInductor packages, and what ran eagerly
                  because of a break elsewhere (a skipped function, a higher-order op's call), marked on their lines
  analysis.py     the analysis: every note put on its line, step by step (note_sources: the steps above, in order),
                  then each noted file's page made (source_pages, file_page); analyze_sources, both
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
from dataclasses import field
from functools import cached_property
from typing import Any, Callable, Iterable

from ...model.ids import CompileId
from ...model.records import dataclass
from ...wording import Listed, cut, format_seconds, said
from ..graph_breaks.resume_names import resume_of
from ..graph_breaks.wording import EXPLICIT_BREAK, fsdp_note, in_fsdp_hooks
from ..user_locations import UserLocation, is_torch_file

SCHEMA_VERSION = 1
# What a line's notes name of a long list (a model's line makes hundreds of nodes; its top call's ops sit on hundreds
# of lines): the first ones, then how many more (wording.LISTED for the rest: compile ids, notes' texts).
MAX_NODES_NAMED = 8  # a graph's nodes from one line
MAX_CALL_LINES = 8  # the lines a call's ops sit on
NUMERICS_BADGE = "differs from eager"  # a numerics note's badge, where it gives none of its own


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
    # In FSDP2's hooks (graph_breaks' fsdp_hook_call): torch placed it in FSDP's code, under the user's call of a
    # fully_shard-ed module (location), the line to change.
    in_fsdp_hook: bool = False

    @property
    def torch_text(self) -> str | None:
        """"PyTorch's own break, in optimizer.py:79 (_use_grad), which it makes there on purpose: nothing in your code
        to change": what a break listed at the user's line is, where torch placed it in its own code."""
        at = self.torch_location
        if at is None:
            return None
        if self.in_fsdp_hook:
            return f"{in_fsdp_hooks(at)}, which this line called"
        where = f"{at.short}{f' ({at.function})' if at.function else ''}"
        if self.reason == EXPLICIT_BREAK and is_torch_file(at.filename):
            return (f"PyTorch's own break, in {where}, which it makes there on purpose: nothing in your code to "
                    "change")
        return f"placed by torch in {where}, which this line called"

    @property
    def note(self) -> str | None:
        """What the break is and what to do, where torch's own words would send the user to the wrong line (FSDP2's
        hooks: the insights' note, the line being this one); None for others."""
        return fsdp_note(None) if self.in_fsdp_hook else None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "reason": self.reason,
                "location": self.location.to_json(),
                "torch_location": self.torch_location.to_json() if self.torch_location else None,
                "torch_text": self.torch_text, "in_fsdp_hook": self.in_fsdp_hook, "note": self.note,
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
    # Compilations that failed here (compile_errors.py's location of each: where it failed, or the frame it compiled).
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

    # AOTInductor packages compiled here (the user's aoti_compile_and_package call: aoti.AotiPackage.call), each
    # {"accepts", "checks_need_env", "holds", "wrapper_artifact", "kernel_artifact"}: what it accepts and holds, and its
    # code's outputs (Artifact.number; kernel_artifact None where it logged none apart).
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
    def uncaught_exception(self) -> bool:
        """Whether every crash at this line is an uncaught Python exception, none a native crash."""
        return all(c["exception"] for c in self.crashes)

    @property
    def autotune_text(self) -> str:
        """The compile time this line's searches took, together, as its badge says it: "14.73 s"."""
        return format_seconds(sum(a["seconds"] for a in self.autotune))

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
    def graph_ids(self) -> Listed[str]:
        """The graphs that captured this line, as its badge names them: the first LISTED, and how many more (a line
        of a loop Dynamo recompiles is captured by hundreds)."""
        return cut(list(self.graphs))

    @property
    def break_ids(self) -> Listed[str]:
        """The compilations whose graph broke on this line, each once, in order, the first LISTED, as its break badge
        names them: a line no graph captures (a print in a resume function) has no graph badge to name them."""
        return cut(list(dict.fromkeys(c for b in self.graph_breaks for c in b["compile_ids"])))

    @property
    def graph_groups(self) -> list[tuple[Listed[str], Listed[str]]]:
        """The graphs that captured this line, those with the same nodes from it together, in order: the first LISTED
        compile ids of each group, with the first MAX_NODES_NAMED of those nodes. A recompile for a new size captures
        the line as the same nodes again, said once for all its compile ids (a line of a loop Dynamo recompiles, once
        for hundreds)."""
        return [(cut(ids), cut(nodes, MAX_NODES_NAMED)) for ids, nodes in _alike(self.graphs.items(), tuple)]

    @property
    def call_groups(self) -> dict[tuple[str, ...], Listed[dict[str, Any]]]:
        """The calls by the graphs holding their ops, in order, the first MAX_CALL_LINES of each: a model's compiles
        mostly share theirs, said once."""
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for call in self.calls:
            groups.setdefault(tuple(call["compile_ids"]), []).append(call)
        return {ids: cut(calls, MAX_CALL_LINES) for ids, calls in groups.items()}

    @property
    def call_compile_ids(self) -> Listed[str]:
        """The graphs holding ops of the calls made on this line, in order, the first LISTED."""
        return cut(list(dict.fromkeys(c for call in self.calls for c in call["compile_ids"])))

    @property
    def failed_compile_ids(self) -> Listed[str]:
        """The compilations that failed here, each once, in order (a compile may fail at several of a line's calls),
        the first LISTED, as the badge names them."""
        return cut(list(dict.fromkeys(f["compile_id"] for f in self.failures)))

    @property
    def failures_title(self) -> Listed[str]:
        """The compile failed badge's title: each failure's compile id and exception, once, the first LISTED (each
        failure is said whole in its note below)."""
        return cut(list(dict.fromkeys(f'{f["compile_id"]}: {f["exception"]}' for f in self.failures)))

    def _frame_ids(self, frames: list[dict[str, Any]], failed: bool) -> Listed[str]:
        """The compile ids of those frames that compiled, or (failed) that failed and whose failure this line does not
        say already (a compile that failed is no compiled one), the first LISTED, as a badge names them: a function
        recompiled at every call starts here hundreds of times, each said by its own note."""
        if not failed:
            return cut([fr["compile_id"] for fr in frames if not fr.get("failed")])
        failed_here = {f["compile_id"] for f in self.failures}
        return cut([fr["compile_id"] for fr in frames if fr.get("failed") and fr["compile_id"] not in failed_here])

    @property
    def compiled_here(self) -> Listed[str]:
        """The compilations of the functions that start here that compiled."""
        return self._frame_ids(self.started_frames, failed=False)

    @property
    def not_compiled_here(self) -> Listed[str]:
        """The compilations of the functions that start here that failed, where no failure note of this line says so."""
        return self._frame_ids(self.started_frames, failed=True)

    @property
    def rest_compiled(self) -> Listed[str]:
        """The compilations of the rest of a function, after a break on this line, that compiled."""
        return self._frame_ids(self.resumed_frames, failed=False)

    @property
    def rest_not_compiled(self) -> Listed[str]:
        """The compilations of the rest of a function, after a break on this line, that failed (as not_compiled_here)."""
        return self._frame_ids(self.resumed_frames, failed=True)

    @property
    def numerics_listed(self) -> list[tuple[dict[str, Any], Listed[str]]]:
        """Each note of results differing from eager's, with the first LISTED of its compile ids (a custom op's note
        names every compile that calls it)."""
        return [(d, cut(d["compile_ids"])) for d in self.numerics]

    @property
    def numerics_title(self) -> Listed[str]:
        """The texts of the numerics notes, each once, the first LISTED: its badge's title (a line of N calls has N
        notes, each said in full below it)."""
        return cut(list(dict.fromkeys(d["why"] for d in self.numerics)))

    @property
    def numerics_badges(self) -> list[str]:
        """What the numerics notes' badge says, each once (NUMERICS_BADGE for a note that gives none)."""
        return list(dict.fromkeys(d.get("badge") or NUMERICS_BADGE for d in self.numerics))

    @property
    def found_stores_listed(self) -> list[tuple[dict[str, Any], Listed[str]]]:
        """Each found store note, with the first LISTED of its compile ids (as numerics_listed)."""
        return [(d, cut(d["compile_ids"])) for d in self.found_stores]

    @property
    def found_stores_title(self) -> Listed[str]:
        """The found stores' texts, each once, the first LISTED (as numerics_title)."""
        return cut(list(dict.fromkeys(d["why"] for d in self.found_stores)))

    @property
    def found_stores_badges(self) -> list[str]:
        """What the found stores' badge says, each once."""
        return list(dict.fromkeys(d["badge"] for d in self.found_stores))

    @property
    def recompile_guards(self) -> list[dict[str, Any]]:
        """The failed guards of this line that caused a recompilation (the rest of guards are installed ones)."""
        return [g for g in self.guards if "recompile" in g]

    @functools.cached_property
    def recompile_notes(self) -> list[RecompileNote]:
        """The recompilations failed guards of this line caused, in order, one note each: torch logs a failed check
        per earlier compilation it tried, so one recompile may fail several here (cpu_slower_than_eager.py line 23:
        [0/2] failed [0/0]'s size check and [0/1]'s), and alike checks of several compilations are one check.
        Worked out once, when a page first asks (the badge's title and the notes both say them): only the pages ask,
        once the analysis has noted every guard."""
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
    def recompiled_ids(self) -> Listed[str]:
        """The recompiles its badge names: the first LISTED of recompiled, and how many more (a line whose value
        changes at every call recompiles at each, up to the recompile limit a program may raise)."""
        return cut(self.recompiled)

    @property
    def recompiled_title(self) -> Listed[str]:
        """The title of the recompiled badge, of the line's recompile_notes: for each of the first LISTED recompiles that compiled, the checks of this line it failed, the first LISTED
        ("[0/2]: the guard of [0/1] failed: self.step == 1 and ..."); each recompile's note says them whole. A
        recompile checks every earlier compilation, so uncut they grew as the square of the recompiles."""
        return cut([f"{r.recompile}: " + said(cut([
            f'the {"guard" if len(c.failed_in) == 1 else "guards"} of {", ".join(c.failed_in)} failed: '
            f'{c.described or c.guard}' for c in r.checks]), " and ")
            for r in self.recompile_notes if r.failed is None])

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


# How the steps of note_sources reach a line's notes: (path, line) -> its LineNotes, made empty at the first ask; None
# for a line that gets none (not the user's file, or no line).
NoteAt = Callable[[str, int], "LineNotes | None"]


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

    @property
    def compile_failed(self) -> bool:
        """Whether a compile failed on a line of this file (the page's legend then names that colour)."""
        return any(notes.failures for notes in self.notes.values())

    @property
    def crashed(self) -> bool:
        """Whether the program died on a line of this file (the page's legend then names that colour)."""
        return any(notes.crashes for notes in self.notes.values())

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


@dataclass(slots=True)
class CodeGuards:
    """One compile's guards on inlined functions' code: Dynamo inlined each into that compile's graph."""

    user_lines: dict[tuple[str, int], set[str]] = field(default_factory=dict)  # a user line -> functions guarded there
    in_function: dict[str, set[str]] = field(default_factory=dict)  # a function (torch's too) -> functions guarded in it

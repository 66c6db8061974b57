"""What changed between two runs: `compilescope diff A B` and `compilescope check --baseline`.

Each side is first reduced to a `RunFacts` (analyses/run_facts/: plain, JSON-serialisable, what `check` of one
run reads too) taken from the analyses its Results already hold (graph breaks, recompiles, compile time, caches,
dynamic shapes, failures); `diff_runs` then compares two RunFacts. Nothing here depends on ids
that change when anything changes:

- frames are matched by their code location (file, function, first line), never by
  frame id;
- FX graph nodes by (op, target, user line), never by the names FX generates;
- symbols by their source (L['x'].size()[0]), never by s0/s1;
- guard texts with object addresses and ids masked.

Timing differences under the noise threshold (analyses/time_threshold.py) are not changes.
The JSON document (`RunDiff.to_json`) is described in docs/diff-schema.md.

This module holds what a diff is made of, the classes its results are saved as (Change, RunDiff, DiffReport), with
the sections and the guard wording their methods use. Its modules:

- analysis.py: the comparison itself, section by section (diff_runs), the changes a log read in part may explain, and
  the ranks of two jobs paired (diff_report);
- environment.py: versions, config (options a torch upgrade renamed), compile steps, files run from another
  directory;
- frames.py: the frames both runs compiled: compiles and recompiles, failing guards, graphs and kernels;
- timing.py: why compile time changed, max-autotune's searches, run time from profiles;
- compiled_code.py: CUDA graphs used or not, activation checkpointing, results that differ from eager, the user's
  Triton kernels, torch.export's dims and AOTInductor packages;
- crash_and_warnings.py: a crash, and the warnings torch printed, new or gone.
"""

from __future__ import annotations

import re
from dataclasses import asdict, field
from typing import Any

from ..dynamic_shapes import number_text
from ...wording import Listed, cut, possessive
from ...model.records import dataclass
from ..run_facts import RunFacts
from ..time_threshold import TimeThreshold

SCHEMA_VERSION = 1
# The compiles a compile-time change names, biggest change first (a run recompiling at every step has thousands):
COMPILES_KEPT = 10  # in its detail (--json), with how many more (compiles_more)
COMPILES_ON_PAGE = 5  # in the page's table
COMPILES_IN_TERMINAL = 3  # under its line in the terminal
NODES_IN_TERMINAL = 8  # the FX nodes a graphs change lists in the terminal, of each kind (--json: all)

# A number in a guard's text: guards that differ only in one number are one guard failing at several values.
_GUARD_NUMBER = re.compile(r"(?<![\w.#])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])", re.I)


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

    def compiles_listed(self, shown: int) -> Listed[dict[str, Any]]:
        """The first `shown` compiles a compile-time change keeps, and how many more it accounts for (those it keeps
        beyond them, and those it left out: its detail's compiles_more)."""
        listed = cut(self.detail.get("compiles", []), shown)
        return Listed(listed.items, listed.more + self.detail.get("compiles_more", 0))

    @property
    def compiles_on_page(self) -> Listed[dict[str, Any]]:
        """The compiles the page's table lists, and how many more."""
        return self.compiles_listed(COMPILES_ON_PAGE)

    @property
    def compiles_in_terminal(self) -> Listed[dict[str, Any]]:
        """The compiles the terminal lists under the change, and how many more."""
        return self.compiles_listed(COMPILES_IN_TERMINAL)

    def nodes_in_terminal(self, key: str) -> Listed[dict[str, Any]]:
        """Of a graphs change, the FX nodes of detail[key] ("added", "removed", "retargeted") the terminal lists, and
        how many more (the title counts them all)."""
        return cut(self.detail.get(key, []) if self.section == "graphs" else [], NODES_IN_TERMINAL)

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
    values = "one of " + ", ".join(dict.fromkeys(number_text(n[at], exact=True) for n in numbers))
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

"""What went wrong in a run, compared: a native crash (one run only, or elsewhere), and the warnings torch printed,
new or gone (those that report a failure told with it). How one run's crash and failed compiles are said:
run_facts/words.py."""

from __future__ import annotations

from typing import Any

from ...wording import possessive
from ..torch_warnings import backward_error
from ..run_facts import RunFacts
from ..run_facts.words import crash_called_from, crash_line
from . import Change, RunDiff
from .environment import torch_changed
from .frames import multiset_diff


def _crash_key(crash: dict[str, Any] | None) -> tuple | None:
    """One crash is another's when it is the same error at the same place in the same frame's compiled code (compile
    ids shift between runs; the frame they belong to does not)."""
    if crash is None:
        return None
    return (crash["error"], crash["file"], crash["line"], crash["function"], crash["frame"])


def crash_changes(a: RunFacts, b: RunFacts) -> list[Change]:
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


def warning_changes(a: RunFacts, b: RunFacts, result: RunDiff, found: list[Change]) -> list[Change]:
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

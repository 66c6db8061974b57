"""The HTML page of `compilescope diff` (and of the run hub's "compare"): links into both sides' reports."""

from __future__ import annotations

import os

from ...analyses.diff import SECTION_LABELS, DiffReport
from ...analyses.divergence import rank_list
from .env import ENV


def diff_page(report: DiffReport, a_root: str, b_root: str, root: str = "") -> str:
    """a_root, b_root: URL prefixes of the two reports (each rank's report under rank_<N>/ of a multi-rank side)."""
    multi = any(rank is not None for rank, _ in report.ranks)
    ranks, quiet = [], report.quiet_ranks
    for rank, diff in report.told_ranks:  # the quiet ones are one line
        sub = f"rank_{rank}/" if multi and rank is not None else ""
        ranks.append({"rank": rank, "diff": diff, "sections": diff.sections(), "a": a_root + sub, "b": b_root + sub})
    first = report.ranks[0] if report.ranks else None
    sides = {"a": a_root + (f"rank_{first[0]}/" if multi and first[0] is not None else ""),
             "b": b_root + (f"rank_{first[0]}/" if multi and first[0] is not None else ""),
             "diff": first[1]} if first else None
    return ENV.get_template("diff.html").render(
        root=root, source_name=f"{os.path.basename(report.source_a)} → {os.path.basename(report.source_b)}",
        rank=None, nav_failures=False, report=report, ranks=ranks, labels=SECTION_LABELS, first=sides,
        unchanged=rank_list(quiet) if quiet else None, unchanged_count=len(quiet),
        rule=report.threshold_rule,
    )

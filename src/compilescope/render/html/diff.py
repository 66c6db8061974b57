"""The HTML page of `compilescope diff` (and of the run hub's "compare"): links into both sides' reports."""

from __future__ import annotations

import os

from ...analyses.diff import SECTION_LABELS, DiffReport
from ...analyses.divergence import rank_list
from .env import ENV


def diff_page(report: DiffReport, a_root: str, b_root: str, root: str = "", typed: tuple[str, str] | None = None) -> str:
    """a_root, b_root: URL prefixes of the two reports (each rank's report under rank_<N>/ of a multi-rank side).
    typed: A and B as the user typed them, which the page names, as the terminal does (the report holds absolute
    paths, shown in their titles)."""
    roots = {"a": a_root, "b": b_root}
    by_rank = {side: report.rank_by_rank_side(side) for side in roots}

    def rank_root(side: str, rank: int | None) -> str:
        return roots[side] + (f"rank_{rank}/" if by_rank[side] and rank is not None else "")

    ranks, quiet = [], report.quiet_ranks
    for rank, diff in report.told_ranks:  # the quiet ones are one line
        ranks.append({"rank": rank, "diff": diff, "sections": diff.sections(), "a": rank_root("a", rank),
                      "b": rank_root("b", rank)})
    # Each side's own figures, all its ranks together (the JSON's totals_a/totals_b), and its report: a landing page
    # for a directory of ranks.
    shown = typed if typed is not None else (report.source_a, report.source_b)
    sides = [{"name": name, "source": source, "path": path, "totals": totals, "url": roots[side],
              "by_rank": by_rank[side]}
             for name, side, source, path, totals in (("A", "a", shown[0], report.source_a, report.totals_a),
                                                       ("B", "b", shown[1], report.source_b, report.totals_b))]
    return ENV.get_template("diff.html").render(
        root=root, source_name=f"{os.path.basename(report.source_a)} → {os.path.basename(report.source_b)}",
        rank=None, nav_failures=False, report=report, ranks=ranks, labels=SECTION_LABELS, sides=sides,
        unchanged=rank_list(quiet) if quiet else None, unchanged_count=len(quiet),
        rule=report.threshold_rule,
    )

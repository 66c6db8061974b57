"""The terminal summary of `compilescope diff`: one heading per section, one line per change."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ..analyses.diff import SECTION_LABELS, DiffReport, RunDiff
from ..wording import count

MARKS = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow"), "moved": (">", "cyan")}
MAX_NODES = 8  # FX nodes listed per graph change


def _change_lines(diff: RunDiff) -> list[Text]:
    lines: list[Text] = []
    for section, changes in diff.sections().items():
        lines.append(Text(f"\n{SECTION_LABELS[section]}", style="bold underline"))
        for change in changes:
            mark, style = MARKS.get(change.kind, ("~", "yellow"))
            lines.append(Text.assemble((f"  {mark} ", style), change.title))
            d = change.detail
            for guard in d.get("new_guard_failures", []):
                lines.append(Text(f"      new failing guard: {guard}", style="dim"))
            for guard in d.get("gone_guard_failures", []):
                lines.append(Text(f"      guard no longer failing: {guard}", style="dim"))
            for key, sign in (("added", "+"), ("removed", "-")):
                for node in d.get(key, [])[:MAX_NODES] if section == "graphs" else []:
                    where = f"  ({node['line'].rsplit('/', 1)[-1]})" if node.get("line") else ""
                    lines.append(Text(f"      {sign} {node['op']} {node['target']}{where}", style="dim"))
            for node in d.get("retargeted", [])[:MAX_NODES]:
                lines.append(Text(f"      ~ {node['from']} → {node['to']}  ({(node['line'] or '?').rsplit('/', 1)[-1]})", style="dim"))
            for phase in d.get("phases", []):
                lines.append(Text(f"      {phase['label']}: {phase['a_s']:.2f}s → {phase['b_s']:.2f}s", style="dim"))
            for row in d.get("compiles", [])[:3]:
                lines.append(Text(f"      {row['compile_a'] or '(none)'} → {row['compile_b'] or '(none)'}: "
                                  f"{row['delta_s']:+.2f}s", style="dim"))
    return lines


def print_diff(report: DiffReport, console: Console) -> None:
    console.print(Text.assemble(("A ", "bold"), report.source_a))
    console.print(Text.assemble(("B ", "bold"), report.source_b))
    for rank_a in report.ranks_only_a:
        console.print(Text(f"rank {rank_a}: only in A", style="red"))
    for rank_b in report.ranks_only_b:
        console.print(Text(f"rank {rank_b}: only in B", style="green"))
    for rank, diff in report.ranks:
        if rank is not None:
            console.print(Text(f"\nrank {rank}", style="bold"))
        if not diff:
            console.print(Text(f"No change ({count(len(diff.matched_frames), 'frame')} matched; {diff.threshold.rule})."))
        for line in _change_lines(diff):
            console.print(line)
        for note in diff.notes:  # what was not counted as a change, so nobody wonders
            console.print(Text(f"\n{note}", style="dim"))

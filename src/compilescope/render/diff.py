"""The terminal summary of `compilescope diff`: one heading per section, one line per change."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ..analyses.diff import SECTION_LABELS, DiffReport, RunDiff
from ..wording import Listed, count, format_seconds
from .terminal_text import FoldedPath, TerminalText

MARKS = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow"), "moved": (">", "cyan")}
DETAIL = "      "  # the indent of a change's details, under its title


def _hanging(prefix: Text | str, body: Text | str, style: str = "") -> Table:
    """prefix, then body; a body too long for the line wraps under its own start, not under the prefix (a grid:
    plain Text would wrap to column 0, into the marks of the lines around it)."""
    prefix = prefix if isinstance(prefix, Text) else TerminalText(prefix, style=style)
    grid = Table.grid()
    grid.add_column(width=cell_len(prefix.plain), no_wrap=True)
    grid.add_column(overflow="fold")  # never "…": a guard or path may be copied from here
    grid.add_row(prefix, body if isinstance(body, Text) else TerminalText(body, style=style))
    return grid


class _Trimmed:
    """A renderable printed without the spaces rich pads its lines with: a grid fills every line of a wrapped cell
    to the column's width, so a wrapped guard ended in spaces a copy took along."""

    def __init__(self, renderable: RenderableType):
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.renderable, options, pad=False):
            while line and not line[-1].control and not (line[-1].style and line[-1].style.bgcolor):
                text, style, _ = line.pop()
                if text.rstrip(" "):
                    line.append(Segment(text.rstrip(" "), style))
                    break
            yield from line
            yield Segment.line()


def _more(nodes: Listed) -> list[RenderableType]:
    """The line under a list of nodes the analysis cut: how many of those the title counts are not listed."""
    return [_hanging(DETAIL, f"… and {nodes.more} more (--json lists them all)", "dim")] if nodes.more else []


def _change_lines(diff: RunDiff) -> list[RenderableType]:
    lines: list[RenderableType] = []
    for section, changes in diff.sections().items():
        lines.append(TerminalText(f"\n{SECTION_LABELS[section]}", style="bold underline"))
        for change in changes:
            mark, style = MARKS.get(change.kind, ("~", "yellow"))
            title = TerminalText(change.title)
            if change.unread_note:  # a side read in part may explain it: said where the change is read
                title.append(f" ({change.unread_note})", style="yellow")
            lines.append(_hanging(TerminalText(f"  {mark} ", style=style), title))
            d = change.detail
            for side in ("a", "b"):
                if d.get(f"called_from_{side}"):  # the user's line on a crashed stack
                    lines.append(_hanging(DETAIL, f"{side.upper()}: {d[f'called_from_{side}']}", "dim"))
            for label, guard, times in change.guard_lines:
                lines.append(_hanging(DETAIL, f"{label}: {guard}" + (f" (×{times})" if times > 1 else ""), "dim"))
            for key, sign in (("added", "+"), ("removed", "-")):
                nodes = change.nodes_in_terminal(key)
                for node in nodes.items:
                    grid = ", the launch's grid" if node.get("grid_of") else ""  # (triton.cdiv's nodes)
                    where = f"  ({node['line'].rsplit('/', 1)[-1]}{grid})" if node.get("line") else ""
                    lines.append(_hanging(f"{DETAIL}{sign} ", f"{node['op']} {node['target']}{where}", "dim"))
                lines.extend(_more(nodes))
            retargeted = change.nodes_in_terminal("retargeted")
            for node in retargeted.items:
                lines.append(_hanging(f"{DETAIL}~ ", f"{node['from']} → {node['to']}  "
                                      f"({(node['line'] or '?').rsplit('/', 1)[-1]})", "dim"))
            lines.extend(_more(retargeted))
            if d.get("cause"):
                lines.append(_hanging(DETAIL, f"why: {d['cause']}", "dim"))
            for phase in d.get("phases", []):
                lines.append(_hanging(DETAIL, f"{phase['label']}: {format_seconds(phase['a_s'])} → "
                                      f"{format_seconds(phase['b_s'])}", "dim"))
            compiles = change.compiles_in_terminal
            for row in compiles.items:
                lines.append(_hanging(DETAIL, row["text"], "dim"))
            if compiles.more:
                lines.append(_hanging(DETAIL, f"… and {count(compiles.more, 'more compile')}", "dim"))
    return lines


def _print(console: Console, renderable: RenderableType) -> None:
    console.print(_Trimmed(renderable))


def print_diff(report: DiffReport, console: Console, typed: tuple[str, str] | None = None) -> None:
    """typed: A and B as the user typed them, which the first lines name (the report holds absolute paths)."""
    source_a, source_b = typed if typed is not None else (report.source_a, report.source_b)
    _print(console, FoldedPath(TerminalText("A ", style="bold"), source_a))
    _print(console, FoldedPath(TerminalText("B ", style="bold"), source_b))
    for rank_a in report.ranks_only_a:
        _print(console, TerminalText(f"rank {rank_a}: only in A", style="red"))
    for rank_b in report.ranks_only_b:
        _print(console, TerminalText(f"rank {rank_b}: only in B", style="green"))
    for side, lost in (("A", report.not_read_a), ("B", report.not_read_b)):
        for lost_rank, why in sorted(lost.items()):
            _print(console, _hanging(TerminalText(f"rank {lost_rank}: not read in {side}, not compared: ", style="red"), why))
    for rank, diff in report.told_ranks:  # the quiet ones are one line, below
        if rank is not None:
            _print(console, TerminalText(f"\nrank {rank}", style="bold"))
        for partial in diff.partial:  # before the changes, which may be only what a cut lost
            _print(console, _hanging(TerminalText("! ", style="yellow"), partial, "yellow"))
        if not diff:
            _print(console, TerminalText(f"No change ({count(len(diff.matched_frames), 'frame')} matched; {diff.threshold.rule})."))
        for line in _change_lines(diff):
            _print(console, line)
        for note in diff.notes:  # what was not counted as a change, so nobody wonders
            _print(console, TerminalText(f"\n{note}", style="dim"))
    if report.rank_by_rank:
        _print_tally(report, console)


def _print_tally(report: DiffReport, console: Console) -> None:
    """Ranks compared rank by rank: one line for every unchanged rank, and a closing count of each kind."""
    from ..analyses.divergence import rank_list  # formatting only: "0-4, 7"

    def ranks(numbers: list) -> str:
        return f"{'rank' if len(numbers) == 1 else 'ranks'} {rank_list(numbers)}"

    unchanged, changed, quiet = report.unchanged_ranks, report.changed_ranks, report.quiet_ranks
    if quiet:  # the other unchanged ranks printed their notes
        _print(console, TerminalText(f"\nNo change in {ranks(quiet)} ({report.threshold_rule})."))
    tally = [f"{ranks(changed)} changed" if changed else "no rank changed"]
    if unchanged:
        tally.append(f"{count(len(unchanged), 'rank')} unchanged")
    if only := report.ranks_one_side_only:
        tally.append(f"{ranks(only)} on one side only")
    if lost := report.ranks_not_read:
        tally.append(f"{ranks(lost)} not read")
    _print(console, TerminalText("; ".join(tally) + ".", style="bold"))

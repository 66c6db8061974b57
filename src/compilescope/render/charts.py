"""Chart geometry of the compile-time charts: where each bar goes, in percent of the chart's width.

A renderer in memray's manner: ``CompileTimeChart.from_results(times, options)``
shapes the analysis (analyses/compile_time.py: seconds only) into what a page
draws; templates and the terminal only format it. What is left out of a picture
(rows beyond the cut, sub-pixel slivers) is a drawing choice, so it is made here;
the analysis and ``summary --json`` keep everything.
"""

from __future__ import annotations

import math

from ..analyses.compile_time import PHASES, TIMELINE_ROWS, CompileTimes
from ..model.records import dataclass


@dataclass(frozen=True)
class ChartOptions:
    """How the compile-time charts are drawn: rows at most, and the narrowest segment shown."""

    timeline_rows: int = TIMELINE_ROWS  # rows drawn at most (the analysis picks the slowest)
    min_segment_pct: float = 0.05  # narrower segments are not drawn (their time is in the totals)


# The chart's parts are plain classes, not dataclasses: a report makes a few dozen of them, and creating
# five dataclasses (their generated methods) cost ~2 ms of every start-up. Nothing compares or copies them.
class ChartSegment:
    __slots__ = ("phase", "duration_s", "x_pct", "w_pct")

    def __init__(self, phase: str, duration_s: float, x_pct: float, w_pct: float):
        self.phase, self.duration_s, self.x_pct, self.w_pct = phase, duration_s, x_pct, w_pct


class ChartRow:
    __slots__ = ("label", "compile_id", "duration_s", "incomplete", "w_pct", "segments")

    def __init__(self, label: str, compile_id: str | None, duration_s: float, incomplete: bool, w_pct: float,
                 segments: list[ChartSegment]):
        self.label, self.compile_id, self.duration_s, self.incomplete = label, compile_id, duration_s, incomplete
        self.w_pct, self.segments = w_pct, segments


class Tick:
    __slots__ = ("x_pct", "label")

    def __init__(self, x_pct: float, label: str):
        self.x_pct, self.label = x_pct, label


class PhaseBar:
    __slots__ = ("phase", "label", "seconds", "share", "bar_pct")

    def __init__(self, phase: str, label: str, seconds: float, share: float, bar_pct: float):
        self.phase, self.label, self.seconds = phase, label, seconds
        self.share = share  # of the total, 0..1
        self.bar_pct = bar_pct  # length relative to the biggest phase


class CompileTimeChart:
    __slots__ = ("total_s", "timeline", "ticks", "rows_omitted", "phases", "labels")

    def __init__(self, total_s: float, timeline: list[ChartRow], ticks: list[Tick], rows_omitted: int,
                 phases: list[PhaseBar], labels: dict[str, str] | None = None):
        self.total_s = total_s
        self.timeline = timeline  # the rows drawn, in start order
        self.ticks = ticks
        self.rows_omitted = rows_omitted
        self.phases = phases  # biggest first
        self.labels = dict(PHASES) if labels is None else labels

    @property
    def legend(self) -> list[tuple[str, str]]:
        """(phase, label) of the phases that took any time, in pipeline order."""
        used = {p.phase for p in self.phases}
        return [(p, self.labels.get(p, label)) for p, label in PHASES if p in used]

    @classmethod
    def from_results(cls, times: CompileTimes, options: ChartOptions = ChartOptions()) -> CompileTimeChart:
        shown = times.timeline_shown(options.timeline_rows)
        scale = max((r.duration_s for r in shown), default=0.0)
        rows: list[ChartRow] = []
        for row in shown:
            segments = [ChartSegment(s.phase, s.duration_s, _pct(s.start_s, scale), _pct(s.duration_s, scale))
                        for s in row.segments]
            if scale > 0:
                segments = [s for s in segments if s.w_pct >= options.min_segment_pct] or segments[:1]
            rows.append(ChartRow(row.label, row.compile_id, row.duration_s, row.incomplete,
                                 100 * row.duration_s / scale if scale > 0 else 0.0, segments))
        ticks: list[Tick] = []
        if scale > 0:
            step = nice_step(scale)
            ticks = [Tick(_pct(i * step, scale), tick_label(i * step)) for i in range(int(scale / step) + 1)]
        return cls(times.total_s, rows, ticks, len(times.timeline) - len(shown), phase_bars(times),
                   dict(times.labels))


def phase_bars(times: CompileTimes) -> list[PhaseBar]:
    """The phases, biggest first, each with its bar's length relative to the biggest (for the page and the terminal)."""
    biggest = max((p.seconds for p in times.phases), default=0.0)
    return [PhaseBar(p.phase, p.label, p.seconds, p.share, 100 * p.seconds / biggest if biggest else 0.0)
            for p in times.phases]


def _pct(seconds: float, scale: float) -> float:
    return round(100 * seconds / scale, 3) if scale > 0 else 0.0


def nice_step(span: float) -> float:
    raw = span / 5 if span > 0 else 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)


def tick_label(seconds: float) -> str:
    if seconds == 0:
        return "0"
    if seconds >= 1:
        return f"{seconds:g} s"
    if seconds >= 0.001:
        return f"{seconds * 1000:g} ms"
    return f"{seconds * 1e6:g} µs"

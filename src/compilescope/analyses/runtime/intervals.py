"""Lengths of time covered by intervals (start, end): their union, what lies in a window, the gaps between them."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable


def union(intervals: list[tuple[float, float]]) -> float:
    """The length the intervals cover together (each instant once)."""
    return sum(e - s for s, e in merged(intervals))


def merged(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of intervals as disjoint ones, in order (touching ones joined)."""
    out: list[tuple[float, float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


class Covered:
    """The union of intervals, asked many times what lies in a window: each question bisects, where scanning every
    interval made a profile of 10000 kernels take minutes (the idle gaps against every op, every compile range)."""

    def __init__(self, intervals: Iterable[tuple[float, float]]):
        self.spans = merged(intervals)
        self.starts = [s for s, _ in self.spans]
        self.ends = [e for _, e in self.spans]
        self.before = [0.0]  # the time covered before each span
        for s, e in self.spans:
            self.before.append(self.before[-1] + (e - s))

    def _upto(self, t: float) -> float:
        k = bisect_right(self.starts, t) - 1
        return 0.0 if k < 0 else self.before[k] + min(t, self.ends[k]) - self.starts[k]

    def within(self, start: float, end: float) -> float:
        """The time covered between start and end."""
        return self._upto(end) - self._upto(start) if end > start else 0.0

    def pieces(self, start: float, end: float) -> list[tuple[float, float]]:
        """The covered spans between start and end, cut to them."""
        return [(max(s, start), min(e, end))
                for s, e in self.spans[bisect_right(self.ends, start):bisect_left(self.starts, end)]]


def overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """The length of time inside both unions."""
    return union(a) + union(b) - union(a + b)


def gaps_in(ran: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The times between the first start and the last end that no interval covers."""
    out, end = [], None
    for s, e in sorted(ran):
        if end is not None and s > end:
            out.append((end, s))
        end = e if end is None else max(end, e)
    return out


def less(gaps: list[tuple[float, float]], taken: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """gaps with the times in `taken` cut out (each gap against the cuts inside it only)."""
    out = []
    cuts = Covered(taken)
    for a, b in gaps:
        start = a
        for s, e in cuts.pieces(a, b):
            if s > start:
                out.append((start, s))
            start = e
        if start < b:
            out.append((start, b))
    return out

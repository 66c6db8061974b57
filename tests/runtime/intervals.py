"""Time covered by intervals, as the runtime tests derive it from a profile's raw events (never from our analysis)."""


def union_length(intervals: list[tuple[float, float]]) -> float:
    """The length the intervals cover together, each instant once."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e > end:
            total, end = total + e - max(s, end), e
    return total

"""When a difference in time between two runs is a change, not noise: `compilescope diff` and `check --baseline`
decide it alike (with the same options)."""

from __future__ import annotations

import math

from ..model.records import dataclass
from ..wording import format_seconds, format_seconds_change


@dataclass(frozen=True)
class TimeThreshold:
    """A timing difference is a change only when it is at least `seconds` and the slower side took `ratio` times the faster.
    A difference of zero is never a change, whatever the threshold (0 seconds: any non-zero difference is one).

    Compile time of one program varies a lot between runs (the C++/Triton compiles compete
    with everything else on the machine): on a shared 2-core machine two runs of the same
    program (tests/data/torch213 diff_base, diff_base_again) took 37.6s and 16.2s (2.3x) in
    one generation of the fixtures and 44.1s and 30.3s in the next, so the default asks
    for 3x; on a quiet machine, --time-ratio 1.5 shows smaller changes.

    `check --baseline` fails on compile time by this same threshold, with the same options: a gate stricter than
    `diff` would fail CI on what `diff` calls noise, and such a gate gets switched off.
    """

    seconds: float = 1.0
    ratio: float = 3.0

    def significant(self, a: float, b: float) -> bool:
        slow, fast = max(a, b), min(a, b)
        return slow > fast and slow - fast >= self.seconds and (fast <= 0 or slow / fast >= self.ratio)

    @property
    def rule(self) -> str:
        """The rule in words, naming the options that set it (the same in `diff` and `check`)."""
        return (f"a timing difference counts as a change when it is at least {self.seconds:g}s (--time-threshold) "
                f"and the slower side took at least {self.ratio:g}x the faster (--time-ratio)")

    def not_a_change(self, what: str, a: float, b: float) -> str:
        """Why a difference that is not significant is no change, naming the test it failed: `compile time
        44.13s → 22.45s: the slower took 1.96x the faster, under the 3x that counts as a change (--time-ratio)`."""
        slow, fast = max(a, b), min(a, b)
        if slow - fast < self.seconds:
            why = f"less than the {self.seconds:g}s apart that counts as a change (--time-threshold)"
        else:
            # Rounded down: 2.999x printed as 3.00x would read as reaching a 3x ratio it did not reach.
            why = (f"the slower took {math.floor(slow / fast * 100) / 100:.2f}x the faster, under the {self.ratio:g}x "
                   "that counts as a change (--time-ratio)")
        return f"{what} {format_seconds(a)} → {format_seconds(b)}: {why}"

    def a_change(self, what: str, a: float, b: float) -> str:
        """Why a significant difference is a change, naming the options that set the threshold: `compile time
        1.42 s → 8.27 s (+6.85 s): the slower took 5.83x the faster, at least the 3x and 1s that count as a change
        (--time-ratio, --time-threshold)`."""
        slow, fast = max(a, b), min(a, b)
        if fast <= 0:  # from nothing, any ratio is reached: only the seconds count
            why = f"at least the {self.seconds:g}s that counts as a change (--time-threshold)"
        else:
            # Rounded down, as not_a_change does: never a ratio the difference did not reach.
            why = (f"the slower took {math.floor(slow / fast * 100) / 100:.2f}x the faster, at least the "
                   f"{self.ratio:g}x and {self.seconds:g}s that count as a change (--time-ratio, --time-threshold)")
        return f"{what} {format_seconds(a)} → {format_seconds(b)} ({format_seconds_change(b - a)}): {why}"

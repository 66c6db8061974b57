"""Usage errors argparse cannot express: a value out of its range, an option given without the one it needs.

Each is one line on stderr and exit status 2 (a CompilescopeError, printed by main), as every other bad input.
Commands call these first in run(), before they read a log or start a program.
"""

from __future__ import annotations

from ..errors import CompilescopeError


def require_at_least(option: str, value: float | None, minimum: float) -> None:
    """value >= minimum (None: the option was not given). NaN is refused too: it compares false with everything."""
    if value is not None and not value >= minimum:
        raise CompilescopeError(f"{option} must be {minimum:g} or more")


def require_more_than(option: str, value: float | None, bound: float) -> None:
    if value is not None and not value > bound:
        raise CompilescopeError(f"{option} must be more than {bound:g}")


def require_within(option: str, value: float | None, low: float, high: float) -> None:
    if value is not None and not low <= value <= high:
        raise CompilescopeError(f"{option} must be from {low:g} to {high:g}")


def require_with(option: str, given: bool, needed: str, needed_given: bool, why: str) -> None:
    """An option that does nothing without another is refused, naming the one it needs, rather than ignored."""
    if given and not needed_given:
        raise CompilescopeError(f"{option} {why}: give {needed}")

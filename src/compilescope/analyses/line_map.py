"""A provenance line map as the results keep it: line -> lines, packed into three arrays of ints.

Every compile id's provenance keeps six maps per graph (pre-grad <-> post-grad <-> generated code) until its
page is written. As dicts of lists they were ~19 KB a compile (a dict entry, a list and int objects per
mapped line); packed they are ~4 KB. The maps are built as dicts and packed once complete (packed()); they
are only read after that: iterated in their order (the page's JSON island keeps it), rarely looked up.
"""

from __future__ import annotations

from array import array
from itertools import accumulate, chain
from collections.abc import Mapping
from typing import Iterator


class PackedLineMap(Mapping[int, list[int]]):
    """Read-only: equal to the dict it was packed from, each value a new list; saved as that dict (model/codec.py)."""

    __slots__ = ("_lines", "_ends", "_targets")

    def __init__(self, lines: array, ends: array, targets: array):
        self._lines = lines  # the keys, in order
        self._ends = ends  # where each key's targets end in _targets
        self._targets = targets

    def __getitem__(self, line: int) -> list[int]:
        try:
            i = self._lines.index(line)
        except (ValueError, TypeError):
            raise KeyError(line) from None
        return self._targets[self._ends[i - 1] if i else 0:self._ends[i]].tolist()

    def __contains__(self, line: object) -> bool:
        try:
            return line in self._lines
        except TypeError:
            return False

    def __iter__(self) -> Iterator[int]:
        return iter(self._lines.tolist())

    def __len__(self) -> int:
        return len(self._lines)

    def items(self):  # (a list of pairs, not a view: one pass over the arrays)
        targets, ends = self._targets.tolist(), self._ends.tolist()
        return list(zip(self._lines.tolist(), [targets[start:end] for start, end in zip([0, *ends], ends)]))

    def values(self):
        return [targets for _, targets in self.items()]

    def codec_plain(self) -> dict[int, list[int]]:
        return dict(self.items())

    def __repr__(self) -> str:
        return repr(self.codec_plain())


def packed(line_map: Mapping[int, list[int]]) -> Mapping[int, list[int]]:
    """line_map packed (a PackedLineMap), or as it is where its numbers do not fit the arrays' ints."""
    if isinstance(line_map, PackedLineMap):
        return line_map
    if not line_map:
        return EMPTY
    try:
        return PackedLineMap(array("I", line_map), array("I", accumulate(map(len, line_map.values()))),
                             array("I", chain.from_iterable(line_map.values())))
    except (OverflowError, TypeError):  # (a line past 2**32 or below 0, or not an int: an odd log; kept as built)
        return line_map


EMPTY = PackedLineMap(array("I"), array("I"), array("I"))  # (read-only: one for every empty map)

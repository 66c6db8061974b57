"""A compilation metrics record as the model keeps it: a read-only mapping whose keys are shared.

torch logs every compilation_metrics record with the same ~100 fields in the same order, most of them
null, twice per compile (the record and its runtime companion). As dicts, their hash tables alone were
~4.7 KB a record, kept for every compile of the log until its pages are written; here a record is its
values as one tuple (~0.8 KB), and the field names and their places are one dict shared by every record
logged with the same fields (MetricShapes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator


class MetricRecord(Mapping[str, Any]):
    """One metrics record, read-only, in the order its fields were logged; equal to the dict it was made from,
    and saved as that dict (model/codec.py: a loaded analysis holds dicts)."""

    __slots__ = ("_places", "_values")

    def __init__(self, places: dict[str, int], values: tuple[Any, ...]):
        self._places = places  # field name -> its index in values (shared, never changed)
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return self._values[self._places[key]]

    def get(self, key: str, default: Any = None) -> Any:
        place = self._places.get(key)
        return default if place is None else self._values[place]

    def __contains__(self, key: object) -> bool:
        return key in self._places

    def __iter__(self) -> Iterator[str]:
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._values)

    def codec_plain(self) -> dict[str, Any]:
        return dict(zip(self._places, self._values))

    def __repr__(self) -> str:
        return repr(self.codec_plain())


class MetricShapes:
    """The shared field places of the records of one log: one dict per distinct list of field names."""

    def __init__(self) -> None:
        self._shapes: dict[tuple[str, ...], dict[str, int]] = {}

    def record(self, metrics: dict[str, Any]) -> MetricRecord:
        names = tuple(metrics)
        places = self._shapes.get(names)
        if places is None:
            places = self._shapes[names] = {name: i for i, name in enumerate(names)}
        return MetricRecord(places, tuple(metrics.values()))

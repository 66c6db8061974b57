"""model/records.dataclass shares one __repr__ and __eq__ instead of compiling them per class (start-up cost):
they must behave exactly as the ones dataclasses generates, on the real model classes and on the corner cases."""

from __future__ import annotations

import dataclasses

from compilescope.analyses import analyze
from compilescope.ingest.reader import read_trace
from compilescope.model import records
from compilescope.model.trace import Artifact, Compile, Frame

from .conftest import TORCH213_LOGS


def stdlib_twin(cls: type) -> type:
    """The same fields made into a class by dataclasses itself: the reference behaviour."""
    fields = [(f.name, f.type, dataclasses.field(default=None, repr=f.repr, compare=f.compare))
              for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(cls.__name__, fields)


def test_real_records_repr_and_compare_as_dataclasses_would():
    trace = read_trace(str(TORCH213_LOGS / "graph_breaks.log"))
    insights = analyze(trace).insights
    compile_ = next(iter(trace.compiles.values()))
    objects = [compile_, *compile_.artifacts[:5], insights.graph_breaks, *insights.graph_breaks.breaks[:3]]
    assert isinstance(compile_, Compile) and any(isinstance(o, Artifact) for o in objects) and insights.graph_breaks
    for obj in objects:
        twin = stdlib_twin(type(obj))
        values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        assert repr(obj) == repr(twin(**values))
        assert obj == dataclasses.replace(obj)
        first = dataclasses.fields(obj)[0]
        changed = dataclasses.replace(obj, **{first.name: "something else"})
        assert (obj == changed) is (twin(**values) == twin(**{**values, first.name: "something else"}))
        assert type(obj).__hash__ is None  # compares by value, so not hashable, as dataclasses makes it


def test_corner_cases_match_dataclasses():
    @records.dataclass
    class Ours:
        a: int
        b: list = dataclasses.field(default_factory=list, repr=False)
        c: str = dataclasses.field(default="x", compare=False)

    @dataclasses.dataclass
    class Theirs:
        a: int
        b: list = dataclasses.field(default_factory=list, repr=False)
        c: str = dataclasses.field(default="x", compare=False)

    assert repr(Ours(1, [2], "y")).replace("Ours", "T") == repr(Theirs(1, [2], "y")).replace("Theirs", "T")
    assert Ours(1, [2], "y") == Ours(1, [2], "z")  # c is not compared
    assert Ours(1, [2]) != Ours(1, [3])
    assert Ours(1).__eq__(Theirs(1)) is NotImplemented  # another class: not equal, as dataclasses does
    assert Ours.__hash__ is None

    @records.dataclass
    class Loop:
        me: object = None

    loop = Loop()
    loop.me = loop
    assert repr(loop).endswith("Loop(me=...)")  # a record holding itself does not recurse forever

    @records.dataclass(slots=True)
    class Slotted:
        a: int

    assert Slotted(1) == Slotted(1) and not hasattr(Slotted(1), "__dict__")
    assert Frame.__eq__ is not object.__eq__

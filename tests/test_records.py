"""model/records.dataclass shares one __repr__ and __eq__ instead of compiling them per class (start-up cost):
they must behave exactly as the ones dataclasses generates, on the real model classes and on the corner cases."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from dataclasses import KW_ONLY as KwOnly, InitVar as Init
from typing import ClassVar as CV

from compilescope.analyses.analyze import analyze
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


def _record_classes() -> list[type]:
    """Every class model/records.dataclass made in the modules a report, summary and the other commands import."""
    import importlib
    import sys

    for name in ("compilescope.cli.report", "compilescope.cli.summary", "compilescope.cli.batch", "compilescope.cli.diff",
                 "compilescope.cli.check", "compilescope.analyses.runtime.analysis", "compilescope.ingest.saved",
                 "compilescope.analyses.log_digest", "compilescope.analyses.rank_summary"):
        importlib.import_module(name)
    found = []
    for name, module in list(sys.modules.items()):
        if name.startswith("compilescope"):
            found += [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == name
                      and dataclasses.is_dataclass(v) and v.__init__.__code__.co_filename == "<string>"
                      and not v.__dataclass_params__.init]  # (records' own __init__; dataclasses' says init)
    return found


def stdlib_init_twin(cls: type) -> type:
    """cls's fields, defaults and factories made into a class by dataclasses itself, __post_init__ and all."""
    namespace = {"__annotations__": {f.name: f.type for f in dataclasses.fields(cls)}, "__module__": cls.__module__,
                 "__qualname__": cls.__qualname__, "__doc__": cls.__dict__.get("__doc__")}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            namespace[f.name] = dataclasses.field(default=f.default, default_factory=f.default_factory)
    if hasattr(cls, "__post_init__"):
        namespace["__post_init__"] = cls.__post_init__
    return dataclasses.dataclass(type(cls.__name__, (), namespace))


def test_real_records_init_as_dataclasses_would():
    """The __init__ made from a shared template has dataclasses' signature, defaults, factories, annotations,
    docstring (when the class has none) and error for a missing argument, on every real record class."""
    import inspect

    classes = _record_classes()
    assert len(classes) > 50  # every ingest, model and analyses record (a silent fall back to dataclasses fails here)
    for cls in classes:
        twin = stdlib_init_twin(cls)
        assert str(inspect.signature(cls)) == str(inspect.signature(twin)), cls
        assert cls.__init__.__annotations__ == twin.__init__.__annotations__, cls
        assert cls.__init__.__defaults__ == twin.__init__.__defaults__ or \
            repr(cls.__init__.__defaults__) == repr(twin.__init__.__defaults__), cls  # (the factory markers)
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__" and cls.__init__.__module__ == cls.__module__
        assert cls.__init__.__globals__ is twin.__init__.__globals__
        if not cls.__dict__.get("__doc__"):
            assert cls.__doc__ == twin.__doc__
        required = [f for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if required:
            messages = []
            for made in (cls, twin):
                try:
                    made()
                except TypeError as exc:
                    messages.append(str(exc).replace(twin.__init__.__qualname__, cls.__init__.__qualname__))
            assert messages[0] == messages[1], cls


def test_init_corner_cases_match_dataclasses():
    made_by_post_init = []

    @records.dataclass
    class Ours:
        a: int
        b: list = dataclasses.field(default_factory=list)
        c: str = "x"
        d: dict = dataclasses.field(default_factory=dict)

        def __post_init__(self) -> None:
            made_by_post_init.append(self.a)

    first, second = Ours(1), Ours(2, c="y")
    assert (first.a, first.b, first.c, first.d) == (1, [], "x", {}) and (second.c, second.d) == ("y", {})
    assert first.b is not second.b and first.d is not second.d  # a new list and dict for each
    given = [3]
    assert Ours(3, given).b is given and made_by_post_init == [1, 2, 3]

    @records.dataclass(slots=True)
    class Slotted:
        a: int
        b: list = dataclasses.field(default_factory=list)

    assert Slotted(1).b == [] and not hasattr(Slotted(1), "__dict__")

    @records.dataclass
    class Empty:
        pass

    assert Empty() == Empty() and repr(Empty()) == "test_init_corner_cases_match_dataclasses.<locals>.Empty()"

    @records.dataclass
    class Child(Ours):
        e: int = 5

    assert Child(1, e=6).e == 6 and Child(1).b == []

    @records.dataclass
    class OwnInit:
        a: int

        def __init__(self, a: str) -> None:
            self.a = int(a)

    assert OwnInit("7").a == 7  # a class's own __init__ is kept, as dataclasses keeps it


def test_fields_records_cannot_write_are_refused_when_the_class_is_made():
    """Not a silently different __init__: fields out of the ordinary (init=False, kw_only, InitVar) are refused,
    and so is a default before a field without one (as dataclasses refuses it)."""
    import pytest

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @records.dataclass
        class Order:
            a: int = 0
            b: int  # type: ignore[misc]

    for field in (dataclasses.field(default=0, init=False), dataclasses.field(default=0, kw_only=True)):
        with pytest.raises(TypeError, match="make it with dataclasses.dataclass"):
            @records.dataclass
            class Odd:
                a: int = field  # noqa: B023

    with pytest.raises(TypeError, match="make it with dataclasses.dataclass"):
        @records.dataclass
        class WithInitVar:
            a: dataclasses.InitVar[int]


def test_frozen_and_ordered_records_hash_compare_and_refuse_writes_as_dataclasses_would():
    """CompileId (frozen, ordered, slots: every report's dict key) and a frozen class with a factory and hash=False:
    hash, ordering, FrozenInstanceError, pickling and copying as the dataclasses-made twin."""
    import copy
    import pickle

    import pytest

    from compilescope.model.ids import CompileId
    from compilescope.render.options import ReportOptions

    @dataclasses.dataclass(frozen=True, order=True, slots=True)
    class Twin:
        compiled_autograd_id: int | None
        frame_id: int | None
        frame_compile_id: int | None
        attempt: int | None

    values = [(None, 0, 0, 0), (None, 0, 1, 0), (None, 1, 0, 0), (None, 2, 0, 0), (None, 0, 0, 1)]  # (None < 1 raises)
    ours, theirs = [CompileId(*v) for v in values], [Twin(*v) for v in values]
    assert [hash(o) for o in ours] == [hash(t) for t in theirs]
    for (a, b), (ta, tb) in zip([(x, y) for x in ours for y in ours], [(x, y) for x in theirs for y in theirs]):
        assert (a < b, a <= b, a > b, a >= b, a == b) == (ta < tb, ta <= tb, ta > tb, ta >= tb, ta == tb)
    assert CompileId(None, 0, 0, 0).__lt__(Twin(None, 0, 0, 0)) is NotImplemented
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours[0].frame_id = 3  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(ours[1])) == ours[1] and copy.deepcopy(ours[2]) == ours[2]
    assert not hasattr(ours[0], "__dict__") and CompileId.__dataclass_params__.frozen

    options = ReportOptions(plain_text=True)
    assert hash(options) == hash(dataclasses.astuple(options)) and dataclasses.replace(options) == options
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.verbose = True  # type: ignore[misc]

    @records.dataclass(frozen=True)
    class Ours:
        a: int
        b: list = dataclasses.field(default_factory=list, hash=False, compare=False)

    @dataclasses.dataclass(frozen=True)
    class Theirs:
        a: int
        b: list = dataclasses.field(default_factory=list, hash=False, compare=False)

    assert hash(Ours(1)) == hash(Theirs(1)) and Ours(1) == Ours(1, [2]) and Ours(1).b == []
    with pytest.raises(TypeError, match="Cannot overwrite attribute __lt__"):
        @records.dataclass(order=True)
        class OwnOrder:
            a: int

            def __lt__(self, other: object) -> bool:
                return True

    @records.dataclass(frozen=True)
    class OwnHash:
        a: int

        def __hash__(self) -> int:
            return 7

    assert hash(OwnHash(1)) == 7


def test_text_annotations_are_not_parsed_by_dataclasses_and_come_back_as_written(monkeypatch):
    """Making a record does not run dataclasses' parse of each text annotation (a pattern and a module lookup per
    field, twice: about 15M instructions of every run's start-up), yet each field's type, the class's annotations and
    __init__'s are the texts as written, slots or not, with a base's fields; an InitVar is still told apart."""
    import pytest

    parsed = []
    real_is_type = dataclasses._is_type  # type: ignore[attr-defined]
    monkeypatch.setattr(dataclasses, "_is_type", lambda *args: parsed.append(args[0]) or real_is_type(*args))

    @records.dataclass
    class Base:
        """A base."""
        a: int
        b: list[str] = dataclasses.field(default_factory=list)

    @records.dataclass(frozen=True, slots=True)
    class Slotted:
        """With slots: dataclasses makes a new class."""
        c: dict[str, int] | None
        d: "Base" = None  # type: ignore[assignment]

    @records.dataclass
    class Derived(Base):
        """A subclass."""
        e: float = 0.0

    assert parsed == []
    assert [(f.name, f.type) for f in dataclasses.fields(Derived)] == [("a", "int"), ("b", "list[str]"), ("e", "float")]
    assert [(f.name, f.type) for f in dataclasses.fields(Slotted)] == [("c", "dict[str, int] | None"), ("d", "'Base'")]
    assert Base.__annotations__ == {"a": "int", "b": "list[str]"} and Derived.__annotations__ == {"e": "float"}
    assert Slotted.__annotations__ == {"c": "dict[str, int] | None", "d": "'Base'"} and Slotted.__slots__ == ("c", "d")
    assert Slotted.__init__.__annotations__ == {"c": "dict[str, int] | None", "d": "'Base'", "return": None}
    assert Derived(1, ["x"], 2.0) == Derived(1, ["x"], 2.0) and Slotted({}, None).c == {}

    with pytest.raises(TypeError, match="make it with dataclasses.dataclass"):
        @records.dataclass
        class WithInitVar:
            """An InitVar is handed to dataclasses as written, which tells it apart: refused, as before."""
            f: int
            g: dataclasses.InitVar[int]
    assert parsed


def test_a_classvar_initvar_or_kw_only_under_another_name_is_refused(monkeypatch):
    """An annotation is handed to dataclasses as a stand-in unless it names ClassVar, InitVar or KW_ONLY: under an
    alias (`from typing import ClassVar as CV`) it silently became a field, where dataclasses resolved the alias in the
    class's module and records refused the class. The alias is looked up in that module, without dataclasses' parse
    of the other annotations (test_text_annotations_are_not_parsed_by_dataclasses_and_come_back_as_written)."""
    import pytest

    parsed = []
    real_is_type = dataclasses._is_type  # type: ignore[attr-defined]
    monkeypatch.setattr(dataclasses, "_is_type", lambda *args: parsed.append(args[0]) or real_is_type(*args))

    with pytest.raises(TypeError, match="make it with dataclasses.dataclass"):
        @records.dataclass
        class WithClassVar:
            x: int
            y: CV[int] = 0

    with pytest.raises(TypeError, match="make it with dataclasses.dataclass"):
        @records.dataclass
        class WithInitVar:
            x: int
            y: Init[int]

    with pytest.raises(TypeError, match="make it with dataclasses.dataclass"):
        @records.dataclass
        class WithQuotedAlias:
            x: int
            y: "CV[int]" = 0

    with pytest.raises(TypeError):
        @records.dataclass
        class WithKwOnly:
            x: int
            _: KwOnly
            y: int = 0
    assert parsed  # (each went through dataclasses)
    parsed.clear()

    @records.dataclass
    class Plain:
        x: int
        y: dict[str, int] | None = None
        z: records.Any = None  # (a name looked up in the module: not one of the three)

    assert parsed == [] and [f.name for f in dataclasses.fields(Plain)] == ["x", "y", "z"]


# Run in a fresh interpreter: what a report imports, then the record classes those modules made and the ones whose
# docstring dataclasses wrote (it starts with the class's name and signature).
_RECORD_DOCS = """
import json, runpy, sys
found, sys.argv = sys.argv[1], ['compilescope', sys.argv[2], '-o', sys.argv[3], '--no-browser']
try:
    runpy.run_module('compilescope', run_name='__main__')
except SystemExit:
    pass
made = [v for n, m in list(sys.modules.items()) if n.startswith('compilescope') for v in vars(m).values()
        if isinstance(v, type) and '__dataclass_fields__' in vars(v) and v.__module__ == n]
written = [f'{c.__module__}.{c.__name__}' for c in made if (c.__doc__ or '').startswith(c.__name__ + '(')]
open(found, 'w').write(json.dumps({'made': len(made), 'written': written}))
"""


def test_every_record_class_a_report_imports_has_its_own_docstring(tmp_path):
    """dataclasses writes a docstring from inspect.signature(cls) for a class without one when its module is
    imported (about 60 us a class here): every class a report makes says what it is instead, at no cost."""
    found = tmp_path / "found.json"
    subprocess.run([sys.executable, "-c", _RECORD_DOCS, str(found), str(TORCH213_LOGS / "training.log"),
                    str(tmp_path / "report")], capture_output=True, check=True)
    classes = json.loads(found.read_text())
    assert classes["made"] > 100  # (the report imported its record classes)
    assert classes["written"] == []


def test_named_tuples_are_typing_s_classes_with_their_annotations_as_written(monkeypatch):
    """records.NamedTuple makes the class typing.NamedTuple makes (fields, defaults, docstring, methods, repr,
    _replace, the same errors) without compiling each text annotation into a ForwardRef (~600K instructions a class,
    ~17 classes in every report's start-up): the annotations stay the texts, which get_type_hints reads alike."""
    import typing

    import pytest

    forward_refs = []
    real_forward_ref_init = typing.ForwardRef.__init__

    def counted(self, *args, **kwargs):
        forward_refs.append(args[0])
        real_forward_ref_init(self, *args, **kwargs)

    def make(base):
        class Place(base):
            """Where it is."""
            path: str
            line: int | None = None
            names: tuple[str, ...] = ()

            def shown(self) -> str:
                return f"{self.path}:{self.line}"

        return Place

    theirs = make(typing.NamedTuple)
    monkeypatch.setattr(typing.ForwardRef, "__init__", counted)
    ours = make(records.NamedTuple)
    assert forward_refs == []
    monkeypatch.undo()
    for name in ("__doc__", "__qualname__", "__module__", "_fields", "_field_defaults", "__match_args__",
                 "__slots__"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.__mro__[1:] == theirs.__mro__[1:] == (tuple, object)
    assert ours.__annotations__ == {"path": "str", "line": "int | None", "names": "tuple[str, ...]"}
    assert typing.get_type_hints(ours) == typing.get_type_hints(theirs)
    made, reference = ours("a.py", 3), theirs("a.py", 3)
    assert repr(made) == repr(reference) and made == reference and made.shown() == "a.py:3"
    assert made._replace(line=4)._asdict() == reference._replace(line=4)._asdict()
    assert ours._make(["b.py", 1, ("x",)]) == ("b.py", 1, ("x",))
    for body, error in (("a: int = 1\n    b: int", "Non-default namedtuple field b cannot follow default field a"),
                        ("a: int\n    def _replace(self): pass", "Cannot overwrite NamedTuple attribute _replace")):
        for base in (typing.NamedTuple, records.NamedTuple):
            with pytest.raises((TypeError, AttributeError), match=error):
                exec(f"class Bad(base):\n    {body}\n", {"base": base, "__name__": "bad"})


def test_a_class_variable_of_a_named_tuple_is_refused_not_made_a_field():
    """A ClassVar annotation is no field of typing.NamedTuple: typing raises TypeError on it (where it evaluates the
    annotation); records.NamedTuple, which keeps the texts unchecked, made it a field. Now refused too, as a text or
    an object."""
    import typing

    import pytest

    def make(base: object, head: str, annotation: str) -> None:
        # (dont_inherit: this module's `from __future__ import annotations` would make every annotation a text)
        code = compile(f"{head}class Bad(base):\n    a: int\n    b: {annotation}\n", "bad", "exec", dont_inherit=True)
        exec(code, {"base": base, "ClassVar": typing.ClassVar, "typing": typing, "__name__": "bad"})

    for head, annotation in (("from __future__ import annotations\n", "ClassVar[int]"),
                             ("", "ClassVar[int]"), ("", "'typing.ClassVar[int]'")):
        with pytest.raises(TypeError, match="ClassVar"):
            make(records.NamedTuple, head, annotation)
    with pytest.raises(TypeError, match="ClassVar"):  # (typing's own, where it evaluates one)
        make(typing.NamedTuple, "", "ClassVar[int]")


def test_the_named_tuples_a_report_imports_compile_no_annotation():
    """Every NamedTuple class of the modules a report imports is made by records.NamedTuple: its annotations are the
    texts as written, not typing's ForwardRefs compiled from them."""
    import typing

    import compilescope.cli.report  # noqa: F401  (the report's modules)

    named_tuples = [value for module in list(sys.modules.values()) if module.__name__.startswith("compilescope")
                    for value in vars(module).values()
                    if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")
                    and value.__module__ == module.__name__]
    assert len(named_tuples) > 10
    compiled = [cls.__qualname__ for cls in named_tuples
                if any(isinstance(a, typing.ForwardRef) for a in cls.__annotations__.values())]
    assert compiled == []


def test_a_frozen_record_refuses_writes_as_dataclasses_would_without_compiling_them(monkeypatch):
    """A frozen record (no slots, no dataclass base) gets shared __setattr__/__delattr__ rather than the two
    dataclasses compiles for each frozen class (~1M instructions a class), refusing the same writes with the same
    errors; a subclass is still checked by dataclasses against it."""
    import pytest

    created = []
    real_create_fn = dataclasses._create_fn  # type: ignore[attr-defined]
    monkeypatch.setattr(dataclasses, "_create_fn", lambda name, *args, **kwargs: created.append(name)
                        or real_create_fn(name, *args, **kwargs))

    @records.dataclass(frozen=True)
    class Ours:
        """Frozen."""
        a: int
        b: str = ""

    assert created == []
    monkeypatch.undo()

    @dataclasses.dataclass(frozen=True)
    class Theirs:
        a: int
        b: str = ""

    assert Ours.__dataclass_params__.frozen and dataclasses.fields(Ours)[0].name == "a"
    for cls in (Ours, Theirs):
        made = cls(1)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
            made.a = 2
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'c'"):
            made.c = 2  # (any name, on the class's own instances)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'b'"):
            del made.b
        assert hash(made) == hash(cls(1)) and made == cls(1) and (made.a, made.b) == (1, "")
    assert Ours.__setattr__.__qualname__.endswith("Ours.__setattr__")
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        @records.dataclass
        class Mutable(Ours):
            c: int = 0

    @records.dataclass(frozen=True)
    class Sub(Ours):
        """A frozen subclass."""
        c: int = 0

    sub = Sub(1, "x", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sub.c = 3
    assert repr(sub) == "test_a_frozen_record_refuses_writes_as_dataclasses_would_without_compiling_them.<locals>.Sub(a=1, b='x', c=2)"

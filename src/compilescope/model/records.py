"""dataclass, with shared __repr__, __eq__ (and __hash__ and ordering) and an __init__ that compiles nothing of its own.

dataclasses.dataclass writes the source of each class's __init__, __repr__ and __eq__ and compiles it
(exec) when the module is imported: compiling is about a million instructions per function, and a report
imports some seventy classes (a sixth of a small report's start-up). Here:
- __repr__ and __eq__ are shared and behave as the generated ones (same text, same comparison: fields with
  compare=True as a tuple, NotImplemented for another class, and no __hash__), without compiling anything; so
  are a frozen class's __hash__ (of the fields that compare, or of those with hash=True) and an ordered class's
  __lt__, __le__, __gt__ and __ge__ (the same tuples compared);
- __init__ is the one dataclasses would write (same parameters, defaults, default factories, annotations and
  __post_init__ call, the same instructions), made from a template compiled once per *shape* of class (how many fields,
  which have a default factory, whether __post_init__ is called, whether the class is frozen) with the field
  names put into a copy of its code object: the ~60 classes of a report have ~35 shapes. The command line keeps
  the compiled templates between runs (read_kept_templates, templates_to_keep: ~25M instructions a run).
- dataclasses makes the class's fields from stand-ins for its text annotations (_dataclasses_made): parsing each
  text to tell a ClassVar or InitVar was a third of its time.
A frozen class's __setattr__ and __delattr__ are shared too (_frozen_methods: a field, or any name on the class's
own instance, raises FrozenInstanceError), except where the class has slots or a dataclass base, or defines
either itself: there they are dataclasses' own.
Fields out of the ordinary (init=False, kw_only, InitVar, ClassVar, a field named self or like the template's
own names) are refused with a TypeError when the class is made: use dataclasses.dataclass for such a class.
Unlike dataclasses', __dataclass_params__ says init, repr, eq and order are False (they are ours, not generated).
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import marshal
import operator
import reprlib
import sys
from operator import attrgetter
from types import CellType, CodeType, FunctionType, ModuleType
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform  # (typing has it from Python 3.11)
else:
    def dataclass_transform(**kwargs: Any) -> Callable[[T], T]:
        return lambda f: f

T = TypeVar("T")


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
    return f"{self.__class__.__qualname__}({shown})"


def _values_of(names: list[str]) -> Callable[[Any], tuple]:
    """obj -> the tuple of its named attributes (what dataclasses' generated methods compare and hash)."""
    if not names:
        def values(obj: Any) -> tuple:
            return ()
    elif len(names) == 1:
        get = attrgetter(names[0])

        def values(obj: Any) -> tuple:
            return (get(obj),)
    else:
        values = attrgetter(*names)  # type: ignore[assignment]  # (a tuple of the values)
    return values


def _compared(cls: type) -> Callable[[Any], tuple]:
    return _values_of([f.name for f in dataclasses.fields(cls) if f.compare])


def _eq_for(cls: type) -> Callable[[Any, Any], Any]:
    values = _compared(cls)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_for(cls: type) -> Callable[[Any], int]:
    values = _values_of([f.name for f in dataclasses.fields(cls) if (f.compare if f.hash is None else f.hash)])

    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _frozen_methods(cls: Any) -> tuple[Callable[[Any, str, Any], None], Callable[[Any, str], None]]:
    """The __setattr__ and __delattr__ dataclasses writes for a frozen class: a field, or any name on an instance of
    the class itself (not of a subclass), raises FrozenInstanceError."""
    names = frozenset(f.name for f in dataclasses.fields(cls))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    return __setattr__, __delattr__


def _order_for(cls: type) -> dict[str, Callable[[Any, Any], Any]]:
    values = _compared(cls)

    def ordering(name: str, compare: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def method(self: Any, other: Any) -> Any:
            if other.__class__ is self.__class__:
                return compare(values(self), values(other))
            return NotImplemented

        method.__name__ = name
        method.__qualname__ = f"{cls.__qualname__}.{name}"
        return method

    return {name: ordering(name, compare)
            for name, compare in (("__lt__", operator.lt), ("__le__", operator.le), ("__gt__", operator.gt), ("__ge__", operator.ge))}


class _HasDefaultFactory:
    """The default of a parameter whose field has a default factory (shown as dataclasses shows its own)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _HasDefaultFactory()
_PREFIX = "__dataclass_"  # the template's own names start with this (a field may not)
_TEMPLATES: dict[tuple, CodeType] = {}  # shape -> code of __init__ with placeholder names
_COMPILED: dict[str, CodeType] = {}  # a template's text -> its code: compiled here, or read from a kept file
_compiled_here: list[str] = []  # the texts this process compiled and did not keep yet (what a kept file lacks)
compiled_in_this_process = 0  # (how many: the test of the kept file reads it)


def _template(size: int, factories: frozenset[int], post_init: bool, frozen: bool) -> CodeType:
    """The code of __init__ for a shape, with parameters __dataclass_p0__...: the text dataclasses writes,
    less the annotations (set on the function instead) and the names (put in by _init_for)."""
    shape = (size, factories, post_init, frozen)
    code = _TEMPLATES.get(shape)
    if code is None:
        params = [f"{_PREFIX}p{i}__" for i in range(size)]
        values = [f"{_PREFIX}dflt{i}__() if {p} is {_PREFIX}HAS_DEFAULT_FACTORY__ else {p}" if i in factories else p
                  for i, p in enumerate(params)]
        lines = [f"{_PREFIX}builtins_object__.__setattr__(self,{p!r},{value})" if frozen else f"self.{p}={value}"
                 for p, value in zip(params, values)]
        if post_init:
            lines.append("self.__post_init__()")
        free = [f"{_PREFIX}HAS_DEFAULT_FACTORY__", f"{_PREFIX}builtins_object__",
                *(f"{_PREFIX}dflt{i}__" for i in sorted(factories))]
        body = "\n".join(f"  {line}" for line in lines or ["pass"])
        text = f"def __create_fn__({','.join(free)}):\n def __init__({','.join(['self', *params])}):\n{body}\n return __init__"
        code = _TEMPLATES[shape] = _compiled(text)
    return code


def _compiled(text: str) -> CodeType:
    global compiled_in_this_process
    code = _COMPILED.get(text)
    if code is None:
        outer = next(c for c in compile(text, "<string>", "exec").co_consts if isinstance(c, CodeType))
        code = _COMPILED[text] = next(c for c in outer.co_consts if isinstance(c, CodeType))
        _compiled_here.append(text)
        compiled_in_this_process += 1
    return code


def _magic() -> bytes:
    from importlib.util import MAGIC_NUMBER  # (code objects are kept for this bytecode only)

    return b"compilescope records 1 " + MAGIC_NUMBER


def read_kept_templates(path: str) -> None:
    """Take the templates an earlier run kept in path (see templates_to_keep), before the records are made.
    A file of another Python, a broken one, or one this user does not own or others may write, is not read."""
    from ..cache_dir import open_owned

    f = open_owned(path)
    if f is None:
        return
    with f:
        data = f.read()
    magic = _magic()
    if not data.startswith(magic):
        return
    try:
        kept = marshal.loads(data[len(magic):])
    except (EOFError, ValueError, TypeError):
        return
    if isinstance(kept, dict):
        for text, code in kept.items():
            if isinstance(text, str) and isinstance(code, CodeType):
                _COMPILED.setdefault(text, code)


def templates_to_keep() -> bytes | None:
    """What cli/compiled_cache keeps for the next run (read back by read_kept_templates): every template this process
    has, when it compiled one the kept file lacked; else None (nothing to write)."""
    if not _compiled_here:
        return None
    return _magic() + marshal.dumps(_COMPILED)


def templates_kept() -> None:
    """templates_to_keep's bytes were written: nothing new to keep until another template is compiled."""
    _compiled_here.clear()


def _unsupported(cls: Any, what: str) -> TypeError:
    return TypeError(f"{cls.__qualname__}: {what}: make it with dataclasses.dataclass (model/records.dataclass "
                     "writes the __init__ of plain fields only)")


def _init_for(cls: Any, frozen: bool) -> FunctionType:
    """cls's __init__ from its shape's template."""
    fields = dataclasses.fields(cls)
    if len(fields) != len(cls.__dataclass_fields__):
        raise _unsupported(cls, "a ClassVar or InitVar")
    names: dict[str, str] = {}
    defaults: list[Any] = []
    factories: dict[int, Any] = {}
    annotations: dict[str, Any] = {}
    for i, f in enumerate(fields):
        if not f.init or f.kw_only is True or f.name == "self" or f.name.startswith(_PREFIX):
            raise _unsupported(cls, f"field {f.name!r}")
        names[f"{_PREFIX}p{i}__"] = f.name
        annotations[f.name] = f.type
        if f.default_factory is not dataclasses.MISSING:
            factories[i] = f.default_factory
            defaults.append(_FACTORY)
        elif f.default is not dataclasses.MISSING:
            defaults.append(f.default)
        elif defaults:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    annotations["return"] = None
    template = _template(len(fields), frozenset(factories), hasattr(cls, "__post_init__"), frozen)
    renamed: dict[str, Any] = {"co_varnames": tuple(names.get(n, n) for n in template.co_varnames),
                               "co_names": tuple(names.get(n, n) for n in template.co_names),
                               "co_consts": tuple(names.get(c, c) if type(c) is str else c for c in template.co_consts)}
    if sys.version_info >= (3, 11):  # (the name errors about its arguments give)
        renamed["co_qualname"] = f"{cls.__qualname__}.__init__"
    code = template.replace(**renamed)
    cells = {f"{_PREFIX}HAS_DEFAULT_FACTORY__": _FACTORY, f"{_PREFIX}builtins_object__": object,
             **{f"{_PREFIX}dflt{i}__": v for i, v in factories.items()}}
    module = sys.modules.get(cls.__module__)
    init = FunctionType(code, module.__dict__ if module else {}, "__init__", tuple(defaults) or None,
                        tuple(CellType(cells[n]) for n in code.co_freevars))
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = annotations
    return init


class _PlainAnnotation:
    """What dataclasses sees as a field's annotation while it makes the class (the text is put back after)."""


_PLAIN = _PlainAnnotation()
# Heads of annotations that name no ClassVar, InitVar or KW_ONLY, without a lookup in the class's module
_PLAIN_NAMES = frozenset(dir(builtins)) | {"Any", "Callable", "Optional", "Union", "Literal"}


def _names_special(annotation: str, namespace: dict[str, Any]) -> bool:
    """Whether a text annotation names ClassVar, InitVar or KW_ONLY, under its name or another the class's module
    binds it to (`from typing import ClassVar as CV`; `y: CV[int]`, `y: "CV[int]"`, `y: dc.KW_ONLY`), as dataclasses
    tells them: by the head of the text, looked up in the module. Plain string operations, not dataclasses' pattern."""
    # (tests written out, not any() over generators: asked of every field of every record a report imports)
    if "ClassVar" in annotation or "InitVar" in annotation or "KW_ONLY" in annotation:
        return True
    first, _, attribute = annotation.lstrip("'\" ").partition("[")[0].partition(".")
    first = first.strip()
    if not attribute and first in _PLAIN_NAMES:
        return False
    named = namespace.get(first)
    if attribute:
        named = vars(named).get(attribute.strip()) if isinstance(named, ModuleType) else None
    return named is ClassVar or named is dataclasses.InitVar or named is dataclasses.KW_ONLY


def _dataclasses_made(cls: Any, frozen: bool, slots: bool) -> Any:
    """dataclasses.dataclass(cls) with none of the methods records write, and with no text annotation parsed.

    Every annotation is text (the modules import annotations from __future__), and dataclasses matches each against
    a pattern and looks its name up in the module to tell a ClassVar or InitVar: a third of its time, ~15M
    instructions of every run's start-up for the ~1,000 fields of a report's classes. An annotation that does not
    name one of them is handed over as a stand-in and its text put back on the class and its Field: the same class
    (_names_special: a ClassVar, InitVar or KW_ONLY under another name is handed over as written too)."""
    own = cls.__dict__.get("__annotations__")
    module = sys.modules.get(cls.__module__)
    namespace = vars(module) if module is not None else {}
    as_written = not own  # (one pass over the fields: a report makes ~150 classes of ~1,000 fields)
    for name, annotation in (own or {}).items():
        if type(annotation) is not str:
            as_written = True
        elif _names_special(annotation, namespace):
            # (quoted, `y: "CV[int]"`, dataclasses takes even the alias for a plain field: refused here)
            if annotation.lstrip().startswith(("'", '"')):
                raise _unsupported(cls, f"a ClassVar, InitVar or KW_ONLY ({name}: {annotation})")
            as_written = True
    if as_written:
        return dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=frozen, slots=slots)
    cls.__annotations__ = dict.fromkeys(own, _PLAIN)
    try:
        made = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=frozen, slots=slots)
    finally:
        cls.__annotations__ = own
    made.__annotations__ = own  # (slots: a new class, made with a copy of the class's dict)
    for f in made.__dataclass_fields__.values():
        if f.type is _PLAIN:
            f.type = own[f.name]
    return made


def _process(cls: Any, slots: bool, frozen: bool, order: bool) -> Any:
    own = cls.__dict__
    has_init, has_repr, has_eq = "__init__" in own, "__repr__" in own, "__eq__" in own
    own_hash = own.get("__hash__", dataclasses.MISSING)  # (None in the dict of a class that defines __eq__ only)
    has_hash = not (own_hash is dataclasses.MISSING or (own_hash is None and has_eq))  # as dataclasses decides
    has_doc = bool(own.get("__doc__"))
    if order:
        for name in ("__lt__", "__le__", "__gt__", "__ge__"):
            if name in own:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}. "
                                "Consider using functools.total_ordering")
    if not has_doc:  # (written below, once __init__ is there: dataclasses would look for a signature without one)
        cls.__doc__ = "(a record)"
    # A frozen class without slots or a dataclass base is made as a mutable one, then given shared __setattr__ and
    # __delattr__ (_frozen_methods): dataclasses compiles both for each frozen class, ~1M instructions a class.
    shared_frozen = (frozen and not slots and "__setattr__" not in own and "__delattr__" not in own
                     and not any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:]))
    made = _dataclasses_made(cls, frozen and not shared_frozen, slots)
    if shared_frozen:
        made.__dataclass_params__.frozen = True  # (what a subclass and dataclasses' checks read)
        made.__setattr__, made.__delattr__ = _frozen_methods(made)
    if not has_init:
        made.__init__ = _init_for(made, frozen)
    if not has_doc:  # as dataclasses writes it
        import inspect

        made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
    if not has_repr:
        made.__repr__ = _repr
    if not has_eq:
        made.__eq__ = _eq_for(made)
    if not has_hash:  # as dataclasses does for a class that compares by value: frozen hashes, mutable does not
        made.__hash__ = _hash_for(made) if frozen else None
    if order:
        for name, method in _order_for(made).items():
            setattr(made, name, method)
    return made


@overload
def dataclass(cls: T, /) -> T: ...


@overload
def dataclass(*, slots: bool = False, frozen: bool = False, order: bool = False) -> Callable[[T], T]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: Any = None, /, *, slots: bool = False, frozen: bool = False, order: bool = False) -> Any:
    if cls is None:
        return lambda c: _process(c, slots, frozen, order)
    return _process(cls, slots, frozen, order)


if TYPE_CHECKING:
    from typing import NamedTuple
else:
    class _NamedTupleMeta(type):
        """typing.NamedTuple's class syntax, with the field annotations kept as their text. typing checks each text
        annotation by compiling it into a ForwardRef (~150K instructions a field, ~600K a class: ~10M of every
        report's start-up for its ~17 NamedTuple classes). The class is collections.namedtuple's, with the body's
        methods, docstring and defaults; typing.get_type_hints(cls) reads the texts as it reads ForwardRefs. It
        differs from typing's: no Generic NamedTuple and no call form (none is made here); a ClassVar annotation is
        refused with a TypeError (typing refuses one it evaluates; unchecked, a text would become a field); no
        __set_name__ is called on the body's values (typing calls it from Python 3.13); no __orig_bases__;
        __new__'s annotations are the texts, so inspect.signature shows "(x: 'int')" and
        typing.get_type_hints(cls.__new__) raises NameError where typing's ForwardRefs resolve."""

        def __new__(mcs, typename: str, bases: tuple, namespace: dict[str, Any]) -> Any:
            if bases != (_NamedTupleBase,):
                raise TypeError("can only inherit from NamedTuple")
            annotations = namespace.get("__annotations__", {})
            default_names = []
            for name in annotations:
                # (a cheap look at the text, no parse: a ClassVar is no field, and typing makes none of it)
                if "ClassVar" in (text := annotations[name] if isinstance(annotations[name], str)
                                  else repr(annotations[name])):
                    raise TypeError(f"{text} is not valid as a NamedTuple field ({typename}.{name})")
                if name in namespace:
                    default_names.append(name)
                elif default_names:
                    raise TypeError(f"Non-default namedtuple field {name} cannot follow default field"
                                    f"{'s' if len(default_names) > 1 else ''} {', '.join(default_names)}")
            made = collections.namedtuple(typename, list(annotations), defaults=[namespace[n] for n in default_names],
                                          module=namespace["__module__"])
            made.__annotations__ = made.__new__.__annotations__ = dict(annotations)
            for key, value in namespace.items():  # (as typing: the body's, but for namedtuple's own names)
                if key in _NAMEDTUPLE_OWN:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in ("__module__", "__name__", "__annotations__") and key not in made._fields:
                    setattr(made, key, value)
            return made

    _NamedTupleBase = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})
    _NAMEDTUPLE_OWN = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                                 "_make", "_replace", "_asdict", "_source"})

    def NamedTuple(typename: str, fields: Any = None, /, **kwargs: Any) -> Any:  # noqa: N802 - typing's name
        """The class syntax only (class X(NamedTuple): ...); typing.NamedTuple's call form is not needed here."""
        raise TypeError("use the class syntax: class X(NamedTuple): ...")

    NamedTuple.__mro_entries__ = lambda bases: (_NamedTupleBase,)

"""dataclass, with a shared __repr__ and __eq__ instead of ones compiled for each class.

dataclasses.dataclass writes the source of each class's __init__, __repr__ and __eq__ and compiles it
(exec) when the module is imported: about a millisecond of start-up per class, and a report imports some
seventy of them. The __repr__ and __eq__ here behave as the generated ones (same text, same comparison:
fields with compare=True as a tuple, NotImplemented for another class, and no __hash__), without
compiling anything. Frozen or ordered classes (a generated __hash__ or ordering) use dataclasses as is.
"""

from __future__ import annotations

import dataclasses
import reprlib
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable, TypeVar, overload

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


def _eq_for(cls: type) -> Callable[[Any, Any], Any]:
    names = [f.name for f in dataclasses.fields(cls) if f.compare]
    if not names:
        def values(obj: Any) -> tuple:
            return ()
    elif len(names) == 1:
        get = attrgetter(names[0])

        def values(obj: Any) -> tuple:
            return (get(obj),)
    else:
        values = attrgetter(*names)  # type: ignore[assignment]  # (a tuple of the values)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _process(cls: Any, slots: bool) -> Any:
    own = cls.__dict__
    has_repr, has_eq, has_hash = "__repr__" in own, "__eq__" in own, "__hash__" in own
    cls = dataclasses.dataclass(cls, repr=False, eq=False, slots=slots)
    if not has_repr:
        cls.__repr__ = _repr
    if not has_eq:
        cls.__eq__ = _eq_for(cls)
        if not has_hash:  # as dataclasses does for a class that compares by value
            cls.__hash__ = None
    return cls


@overload
def dataclass(cls: T, /) -> T: ...


@overload
def dataclass(*, slots: bool = False, frozen: bool = False, order: bool = False) -> Callable[[T], T]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: Any = None, /, *, slots: bool = False, frozen: bool = False, order: bool = False) -> Any:
    if frozen or order:
        return dataclasses.dataclass(cls, slots=slots, frozen=frozen, order=order) if cls is not None else \
            dataclasses.dataclass(slots=slots, frozen=frozen, order=order)
    if cls is None:
        return lambda c: _process(c, slots)
    return _process(cls, slots)

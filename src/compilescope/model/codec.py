"""Exact JSON form of the model and analysis values (dataclasses all the way down), and back.

One generic codec instead of a to_json/from_json pair per class: a class added to
an analysis is saved and loaded without more code, and nothing is silently left
out (an unknown type is an error, caught by the round-trip tests).

    dataclass       {"$t": "analyses.insights.Finding", <field>: <value>, ...}
                    (fields with compare=False are caches, rebuilt by the class's __post_init__)
    dict            as is when every key is a str not starting with "$"; else {"$d": [[key, value], ...]}
    codec_plain()   a compact read-only stand-in for a dict or list (model/metrics.py's records, packed line maps,
                    metric rows) is saved as the dict or list its codec_plain() gives, and loaded as that
    Counter         {"$counter": [[key, value], ...]}
    tuple           {"$tuple": [...]}
    float           as is when finite; else {"$f": "inf" | "-inf" | "nan"}
    int             as is within 64 bits; else {"$int": digits}
    bytes           {"$utf8": text} when valid UTF-8; else {"$b64": base64}
    spools          {"$t": ..., "$state": ...} for classes with codec_state()/from_codec_state()

Decoding builds only the classes it is given (a saved file is untrusted input), and each field only from a value
of its annotated type: a file edited by hand fails to load, with a CodecError saying where, instead of failing later
in whatever reads the field (a report half written).
"""

from __future__ import annotations

import base64
import binascii
import collections.abc
import dataclasses
import math
import sys
import types
import typing
from collections import Counter
from typing import Any, Callable, Iterable

from ..errors import CompilescopeError

TYPE = "$t"
STATE = "$state"
PACKAGE = "compilescope."


class CodecError(CompilescopeError, ValueError):
    """A value that cannot be saved (a bug: a class the codec does not know), or a saved value that cannot be
    loaded (a file that is not what compilescope saved: said in one line)."""


def type_name(cls: type) -> str:
    module = cls.__module__
    return (module[len(PACKAGE):] if module.startswith(PACKAGE) else module) + "." + cls.__qualname__


def classes_of(modules: Iterable[str]) -> dict[str, type]:
    """Every dataclass (and spool class) defined in the given modules (already imported), by type_name."""
    found: dict[str, type] = {}
    for name in modules:
        module = sys.modules[name]
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == name and (
                dataclasses.is_dataclass(value) or hasattr(value, "from_codec_state")
            ):
                found[type_name(value)] = value
    return found


def encode(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return value if -(1 << 63) <= value < (1 << 64) else {"$int": str(value)}  # JSON readers stop at 64 bits
    if kind is float:
        return value if math.isfinite(value) else {"$f": repr(value)}
    if kind is list:
        return [encode(v) for v in value]
    if kind is tuple:
        return {"$tuple": [encode(v) for v in value]}
    if kind is Counter:
        return {"$counter": [[encode(k), encode(v)] for k, v in value.items()]}
    if kind is dict:
        if all(type(k) is str and not k.startswith("$") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$d": [[encode(k), encode(v)] for k, v in value.items()]}
    if hasattr(value, "codec_plain"):
        return encode(value.codec_plain())
    if kind is bytes:
        try:
            return {"$utf8": value.decode("utf-8")}
        except UnicodeDecodeError:
            return {"$b64": base64.b64encode(value).decode("ascii")}
    if hasattr(value, "codec_state"):
        return {TYPE: type_name(kind), STATE: encode(value.codec_state())}
    if dataclasses.is_dataclass(value):
        doc: dict[str, Any] = {TYPE: type_name(kind)}
        for f in dataclasses.fields(value):
            if f.compare:
                doc[f.name] = encode(getattr(value, f.name))
        return doc
    raise CodecError(f"cannot save a {kind.__module__}.{kind.__qualname__} (add it to the codec)")


def decode(doc: Any, classes: dict[str, type]) -> Any:
    """The value a saved document holds (encode's inverse), built of `classes` only; CodecError where it is not one."""
    try:
        return _decode(doc, classes)
    except RecursionError:
        # (A saved file is untrusted: 900 nested lists parse as JSON, and took Python's stack.)
        raise CodecError("a saved value nested too deeply to be one compilescope saved") from None


def _decode(doc: Any, classes: dict[str, type]) -> Any:
    if doc is None or type(doc) in (bool, int, float, str):
        return doc
    if type(doc) is list:
        return [_decode(v, classes) for v in doc]
    if type(doc) is not dict:
        raise CodecError(f"unexpected {type(doc).__name__} in a saved value")
    if TYPE in doc:
        name = doc[TYPE]
        cls = classes.get(name) if isinstance(name, str) else None
        if cls is None:
            raise CodecError(f"unknown type {name!r} in a saved value")
        if STATE in doc:
            try:
                return cls.from_codec_state(_decode(doc[STATE], classes))  # type: ignore[attr-defined]
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
                raise CodecError(f"{name}: a saved state that cannot be read: {exc}") from None
        return _dataclass(cls, doc, classes)
    if len(doc) == 1:
        (key, value), = doc.items()
        special = _SPECIAL.get(key)
        if special is not None:
            try:
                return special(value, classes)
            except (ValueError, TypeError, AttributeError, binascii.Error) as exc:
                raise CodecError(f"a saved {key} value that cannot be read: {exc}") from None
    if any(k.startswith("$") for k in doc):
        raise CodecError(f"unexpected keys in a saved value: {sorted(doc)[:5]}")
    return {k: _decode(v, classes) for k, v in doc.items()}


def _pairs(value: Any, classes: dict[str, type]) -> Iterable[tuple[Any, Any]]:
    for k, v in value:
        yield _key(_decode(k, classes)), _decode(v, classes)


# The values saved as {"$tag": value}: how each is read back (a ValueError, TypeError... where it is not one).
_SPECIAL: dict[str, Callable[[Any, dict[str, type]], Any]] = {
    "$tuple": lambda value, classes: tuple(_decode(v, classes) for v in _list(value)),
    "$counter": lambda value, classes: Counter(dict(_pairs(_list(value), classes))),
    "$d": lambda value, classes: dict(_pairs(_list(value), classes)),
    "$f": lambda value, classes: float(_text(value)),
    "$int": lambda value, classes: int(_text(value)),
    "$utf8": lambda value, classes: _text(value).encode("utf-8"),
    "$b64": lambda value, classes: base64.b64decode(_text(value), validate=True),
}


def _list(value: Any) -> list:
    if type(value) is not list:
        raise TypeError(f"a list expected, not {type(value).__name__}")
    return value


def _text(value: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"a string expected, not {type(value).__name__}")
    return value


def _key(key: Any) -> Any:
    if isinstance(key, (list, dict)):
        raise CodecError("a saved dictionary key is not hashable")
    return key


def _dataclass(cls: type, doc: dict[str, Any], classes: dict[str, type]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(doc) - set(fields) - {TYPE}
    if unknown:
        raise CodecError(f"{doc[TYPE]}: unknown fields {sorted(unknown)[:5]} (saved by another version?)")
    values = {name: _decode(value, classes) for name, value in doc.items() if name != TYPE}
    hints = _field_types(cls, classes)
    for name, value in values.items():
        hint = hints.get(name)
        if hint is not None and not _conforms(value, hint):
            raise CodecError(f"{doc[TYPE]}.{name}: {_hint_name(hint)} expected, found {type(value).__name__}")
    init = {k: v for k, v in values.items() if fields[k].init}
    try:
        obj = cls(**init)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:  # (its __post_init__ reads them)
        raise CodecError(f"{doc[TYPE]}: {exc}") from None
    for k, v in values.items():
        if not fields[k].init:
            object.__setattr__(obj, k, v)
    return obj


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def _field_types(cls: type, classes: dict[str, type]) -> dict[str, Any]:
    """Each field's annotation, evaluated (None where it cannot be: a name imported only for type checkers
    that is not a saved class, a type the check does not know)."""
    found = _FIELD_TYPES.get(cls)
    if found is None:
        namespace = {c.__name__: c for c in classes.values()}
        namespace.update(vars(sys.modules[cls.__module__]))
        found = {}
        for f in dataclasses.fields(cls):
            try:
                found[f.name] = eval(f.type, namespace) if isinstance(f.type, str) else f.type  # noqa: S307 (our source)
            except Exception:  # noqa: BLE001 - an annotation that cannot be evaluated is not checked
                found[f.name] = None
        _FIELD_TYPES[cls] = found
    return found


def _conforms(value: Any, hint: Any) -> bool:
    """value is of the annotated type hint, as far as the codec can say (containers element by element)."""
    if hint is Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin is None:
        if not isinstance(hint, type) or hasattr(hint, "codec_plain"):  # (saved as the plain dict or list it gives)
            return True
        if hint is float:
            return type(value) in (float, int)
        return isinstance(value, hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(_conforms(value, h) for h in args)
    if origin is typing.Literal:
        return value in args
    if not isinstance(origin, type):
        return True
    if not isinstance(value, origin):
        return False
    value = typing.cast(Any, value)  # (of type origin: a container, read below)
    if not args:
        return True
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(_conforms(v, h) for v, h in zip(value, args))
    if issubclass(origin, collections.abc.Mapping) and len(args) == 2:
        return all(_conforms(k, args[0]) and _conforms(v, args[1]) for k, v in value.items())
    if issubclass(origin, (list, set, frozenset, collections.abc.Sequence)) and len(args) == 1:
        return all(_conforms(v, args[0]) for v in value)
    return True


def _hint_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "").replace(PACKAGE, "")

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
    # Only what encode() saves is read back: a field it leaves out (compare=False: a cache, or what this process
    # knows of itself, as Trace.read_from_source) must not be set by a file.
    fields = {f.name: f for f in dataclasses.fields(cls) if f.compare}
    unknown = set(doc) - set(fields) - {TYPE}
    if unknown:
        raise CodecError(f"{doc[TYPE]}: unknown fields {sorted(unknown)[:5]} (saved by another version?)")
    readers = _field_readers(cls, classes)
    values = {}
    for name, value in doc.items():
        if name == TYPE:
            continue
        hint, read = readers.get(name, (Any, _decode))
        try:
            values[name] = read(value, classes)
        except _Mismatch:
            found = type(_decode(value, classes)).__name__  # (only to say so)
            raise CodecError(f"{doc[TYPE]}.{name}: {_hint_name(hint)} expected, found {found}") from None
    init = {k: v for k, v in values.items() if fields[k].init}
    try:
        obj = cls(**init)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:  # (its __post_init__ reads them)
        raise CodecError(f"{doc[TYPE]}: {exc}") from None
    for k, v in values.items():
        if not fields[k].init:
            object.__setattr__(obj, k, v)
    return obj


# Each field is decoded by a reader made from its annotation, which checks the saved value against it as it builds
# it: one walk. (Decoding first and checking after walked every container twice: 1M lines of a rebuilt source file,
# list[str | None], took 1.9 s.)
Reader = Callable[[Any, dict[str, type]], Any]


class _Mismatch(Exception):
    """A saved value not of the annotated type (said by _dataclass, which knows the field)."""


_FIELD_READERS: dict[type, dict[str, tuple[Any, Reader]]] = {}


def _field_readers(cls: type, classes: dict[str, type]) -> dict[str, tuple[Any, Reader]]:
    """Each field's annotation, evaluated, and its reader (a field whose annotation cannot be evaluated is not
    checked)."""
    found = _FIELD_READERS.get(cls)
    if found is None:
        module = vars(sys.modules[cls.__module__])
        names = Counter(c.__name__ for c in classes.values())
        # The saved classes, for names imported only for type checkers. get_type_hints looks in localns before the
        # module, so a name the module has, or two saved classes share (RunFacts), is left to the module.
        saved = {c.__name__: c for c in classes.values() if names[c.__name__] == 1 and c.__name__ not in module}
        try:
            hints = typing.get_type_hints(cls, localns=saved)
        except Exception:  # noqa: BLE001 - annotations that cannot be evaluated are not checked
            hints = {}
        found = {f.name: (hints[f.name], _reader(hints[f.name])) for f in dataclasses.fields(cls) if f.name in hints}
        _FIELD_READERS[cls] = found
    return found


_READERS: dict[Any, Reader] = {}


def _reader(hint: Any) -> Reader:
    try:
        return _READERS[hint]
    except KeyError:
        found = _READERS[hint] = _make_reader(hint)
        return found
    except TypeError:  # (an unhashable hint)
        return _make_reader(hint)


def _make_reader(hint: Any) -> Reader:
    """How a saved value of the annotated type hint is read, as far as the codec can say (containers element by
    element); _Mismatch where it is not one."""
    if hint is Any or hint is object:
        return _decode
    if hint is None or hint is type(None):
        return _read_none
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is None:
        if not isinstance(hint, type) or hasattr(hint, "codec_plain"):  # (saved as the plain dict or list it gives)
            return _decode
        return _read_number if hint is float else _instance_reader(hint)
    if origin is typing.Union or origin is types.UnionType:
        return _union_reader([_reader(h) for h in args], _as_read(hint))
    if origin is typing.Literal:
        return _literal_reader(args)
    if not isinstance(origin, type):
        return _decode
    if not args:
        return _instance_reader(origin)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _sequence_reader(tuple, _reader(args[0]), _as_read(args[0]))
        return _tuple_reader([_reader(h) for h in args])
    if issubclass(origin, collections.abc.Mapping) and len(args) == 2:
        return _mapping_reader(origin, _reader(args[0]), _reader(args[1]))
    if issubclass(origin, (list, set, frozenset, collections.abc.Sequence)) and len(args) == 1:
        return _sequence_reader(origin, _reader(args[0]), _as_read(args[0]))
    return _instance_reader(origin)


# The JSON values a hint takes as they are read (a str for str, an int or a bool for int...): containers of them
# are read without a call per element.
_SCALARS: dict[Any, frozenset[type]] = {
    Any: frozenset((type(None), bool, int, float, str)), object: frozenset((type(None), bool, int, float, str)),
    None: frozenset((type(None),)), type(None): frozenset((type(None),)),
    str: frozenset((str,)), bool: frozenset((bool,)), int: frozenset((int, bool)), float: frozenset((float, int)),
}


def _as_read(hint: Any) -> frozenset[type]:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return frozenset().union(*(_as_read(h) for h in typing.get_args(hint)))
    try:
        return _SCALARS.get(hint, frozenset())
    except TypeError:  # (an unhashable hint)
        return frozenset()


def _read_none(doc: Any, classes: dict[str, type]) -> None:
    if doc is not None:
        raise _Mismatch
    return None


def _read_number(doc: Any, classes: dict[str, type]) -> Any:
    value = _decode(doc, classes)
    if type(value) is not float and type(value) is not int:
        raise _Mismatch
    return value


def _instance_reader(cls: type) -> Reader:
    def read(doc: Any, classes: dict[str, type]) -> Any:
        if type(doc) is dict and isinstance(doc.get(TYPE), str):
            # A saved class is judged by its name before it is built: a union tries its next type at no cost.
            named = classes.get(doc[TYPE])
            if named is not None and not issubclass(named, cls):
                raise _Mismatch
        value = _decode(doc, classes)
        if not isinstance(value, cls):
            raise _Mismatch
        return value

    return read


def _union_reader(alternatives: list[Reader], as_read: frozenset[type]) -> Reader:
    def read(doc: Any, classes: dict[str, type]) -> Any:
        if type(doc) in as_read:
            return doc
        for alternative in alternatives:
            try:
                return alternative(doc, classes)
            except _Mismatch:
                pass
        raise _Mismatch

    return read


def _literal_reader(allowed: tuple) -> Reader:
    def read(doc: Any, classes: dict[str, type]) -> Any:
        value = _decode(doc, classes)
        if value not in allowed:
            raise _Mismatch
        return value

    return read


def _tagged(doc: Any) -> str | None:
    """The tag of a saved {"$tag": value} that _SPECIAL reads, else None."""
    if type(doc) is dict and len(doc) == 1:
        key = next(iter(doc))
        if key in _SPECIAL:
            return key
    return None


def _special(tag: str, read: Callable[[], Any]) -> Any:
    try:
        return read()
    except (ValueError, TypeError, AttributeError, binascii.Error) as exc:  # (as _decode says it)
        raise CodecError(f"a saved {tag} value that cannot be read: {exc}") from None


def _sequence_reader(origin: type, element: Reader, as_read: frozenset[type]) -> Reader:
    takes_list, takes_tuple = issubclass(list, origin), issubclass(tuple, origin)

    def items(values: list, classes: dict[str, type]) -> list:
        if as_read:
            return [v if type(v) in as_read else element(v, classes) for v in values]
        return [element(v, classes) for v in values]

    def read(doc: Any, classes: dict[str, type]) -> Any:
        if type(doc) is list:
            if not takes_list:
                raise _Mismatch
            return items(doc, classes)
        if _tagged(doc) == "$tuple":
            if not takes_tuple:
                raise _Mismatch
            return _special("$tuple", lambda: tuple(items(_list(doc["$tuple"]), classes)))
        value = _decode(doc, classes)  # (another saved form: a class, built and checked by itself)
        if not isinstance(value, origin):
            raise _Mismatch
        return value

    return read


def _tuple_reader(elements: list[Reader]) -> Reader:
    def read(doc: Any, classes: dict[str, type]) -> Any:
        if _tagged(doc) != "$tuple":
            _decode(doc, classes)  # (a malformed value is said as _decode says it; no other saved form is a tuple)
            raise _Mismatch
        items = _special("$tuple", lambda: _list(doc["$tuple"]))
        if len(items) != len(elements):
            raise _Mismatch
        return _special("$tuple", lambda: tuple([read(v, classes) for v, read in zip(items, elements)]))

    return read


def _mapping_reader(origin: type, key: Reader, value: Reader) -> Reader:
    takes_dict, takes_counter = issubclass(dict, origin), issubclass(Counter, origin)

    def pairs(items: Any, classes: dict[str, type]) -> dict:
        return {_key(key(k, classes)): value(v, classes) for k, v in _list(items)}

    def read(doc: Any, classes: dict[str, type]) -> Any:
        tag = _tagged(doc)
        if tag == "$d" and takes_dict:
            return _special(tag, lambda: pairs(doc[tag], classes))
        if tag == "$counter" and takes_counter:
            return _special(tag, lambda: Counter(pairs(doc[tag], classes)))
        if type(doc) is dict and tag is None and TYPE not in doc and not any(k.startswith("$") for k in doc):
            if not takes_dict:
                raise _Mismatch
            return {key(k, classes): value(v, classes) for k, v in doc.items()}
        found = _decode(doc, classes)  # (another saved form, or a malformed one: said as _decode says it)
        if not isinstance(found, origin):
            raise _Mismatch
        return found

    return read


def _hint_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "").replace(PACKAGE, "")

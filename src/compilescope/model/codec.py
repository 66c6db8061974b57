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

Decoding builds only the classes it is given (a saved file is untrusted input).
"""

from __future__ import annotations

import base64
import dataclasses
import math
import sys
from collections import Counter
from typing import Any, Iterable

TYPE = "$t"
STATE = "$state"
PACKAGE = "compilescope."


class CodecError(ValueError):
    pass


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
    if doc is None or type(doc) in (bool, int, float, str):
        return doc
    if type(doc) is list:
        return [decode(v, classes) for v in doc]
    if type(doc) is not dict:
        raise CodecError(f"unexpected {type(doc).__name__} in a saved value")
    if TYPE in doc:
        name = doc[TYPE]
        cls = classes.get(name) if isinstance(name, str) else None
        if cls is None:
            raise CodecError(f"unknown type {name!r} in a saved value")
        if STATE in doc:
            return cls.from_codec_state(decode(doc[STATE], classes))  # type: ignore[attr-defined]
        return _dataclass(cls, doc, classes)
    if len(doc) == 1:
        (key, value), = doc.items()
        if key == "$tuple":
            return tuple(decode(v, classes) for v in value)
        if key == "$counter":
            return Counter({_key(decode(k, classes)): decode(v, classes) for k, v in value})
        if key == "$d":
            return {_key(decode(k, classes)): decode(v, classes) for k, v in value}
        if key == "$f":
            return float(value)
        if key == "$int":
            return int(value)
        if key == "$utf8":
            return value.encode("utf-8")
        if key == "$b64":
            return base64.b64decode(value)
    if any(k.startswith("$") for k in doc):
        raise CodecError(f"unexpected keys in a saved value: {sorted(doc)[:5]}")
    return {k: decode(v, classes) for k, v in doc.items()}


def _key(key: Any) -> Any:
    if isinstance(key, (list, dict)):
        raise CodecError("a saved dictionary key is not hashable")
    return key


def _dataclass(cls: type, doc: dict[str, Any], classes: dict[str, type]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(doc) - set(fields) - {TYPE}
    if unknown:
        raise CodecError(f"{doc[TYPE]}: unknown fields {sorted(unknown)[:5]} (saved by another version?)")
    values = {name: decode(value, classes) for name, value in doc.items() if name != TYPE}
    init = {k: v for k, v in values.items() if fields[k].init}
    try:
        obj = cls(**init)
    except TypeError as exc:
        raise CodecError(f"{doc[TYPE]}: {exc}") from None
    for k, v in values.items():
        if not fields[k].init:
            object.__setattr__(obj, k, v)
    return obj

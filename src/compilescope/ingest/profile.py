"""Read a torch.profiler Chrome trace (``export_chrome_trace``), plain or gzip.

A profile is untrusted input, like a log. It is read as far as it goes: a
truncated .gz or a file cut off mid-event keeps every event before the break,
and ``Profile.stopped`` / ``Profile.skipped`` say what was not read. The work is
bounded: at most MAX_BYTES of (decompressed) text and MAX_EVENTS events.
"""

from __future__ import annotations

import json
import math
import os
import zlib
from typing import Any, Iterator

import orjson

from ..errors import CompilescopeError
from ..location import open_regular_file
from ..model.profile import PROFILER_CATEGORIES, Profile, ProfileEvent

MAX_BYTES = 1 << 30
MAX_EVENTS = 5_000_000
MAX_NAME = 1000  # characters of an event name kept (kernel names are long, never this long)
_CHUNK = 1 << 22


def read_profile(path: str, max_bytes: int = MAX_BYTES, max_events: int = MAX_EVENTS) -> Profile:
    """The profile's timed events. A missing or unreadable file is an error; broken contents are not."""
    profile = Profile(source=os.path.abspath(path))
    data = _read_bytes(path, profile, max_bytes)
    doc = _whole(data) if profile.stopped is None else None
    if doc is not None:
        events = doc.get("traceEvents") if isinstance(doc, dict) else doc
        if not isinstance(events, list):
            raise CompilescopeError(f"{path}: not a torch.profiler Chrome trace (no traceEvents list)")
        if isinstance(doc, dict):
            props = [d for d in doc.get("deviceProperties") or [] if isinstance(d, dict)]
            profile.devices = [str(d.get("name"))[:200] for d in props]
            profile.capabilities = [f"{d['computeMajor']}.{d.get('computeMinor', 0)}" for d in props
                                    if type(d.get("computeMajor")) is int and type(d.get("computeMinor", 0)) is int]
        raw: Iterator[Any] = iter(events)
    else:
        raw = _events_as_far_as_they_go(data, profile)
    for value in raw:
        if len(profile.events) >= max_events:
            profile.stopped = f"more than {max_events:,} timed events (the rest is not read)"
            break
        event = _event(value, profile)
        if event is not None:
            profile.events.append(event)
    if not any(e.cat not in PROFILER_CATEGORIES for e in profile.events):
        # Nothing to attribute: a report would explain 0 µs ("an eager run", "0 threads") as if it had read a run.
        why = f"; read stopped early: {profile.stopped}" if profile.stopped else ""
        raise CompilescopeError(f"{path}: no timed events in this profile (metadata at most: the profiler recorded "
                                f"no work{why})")
    return profile


def _read_bytes(path: str, profile: Profile, max_bytes: int) -> bytes:
    try:
        # (a path found beside a log: a FIFO put there would block open(), a device would never end)
        f = open_regular_file(path)
    except OSError as exc:
        raise CompilescopeError(f"cannot read profile {path}: {exc.strerror or exc}") from None
    with f:
        try:
            gz = f.read(2) == b"\x1f\x8b"
            f.seek(0)
        except OSError as exc:
            raise CompilescopeError(f"cannot read profile {path}: {exc.strerror or exc}") from None
        chunks: list[bytes] = []
        size = 0
        # zlib, not gzip.open: a truncated .gz keeps everything decompressed before the break.
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if gz else None
        try:
            while raw := f.read(_CHUNK):
                chunk = inflate.decompress(raw, max_bytes + 1 - size) if inflate is not None else raw
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes:
                    profile.stopped = f"larger than {max_bytes:,} bytes (the rest is not read)"
                    break
                if inflate is not None and inflate.eof:
                    break
            if inflate is not None and not inflate.eof and profile.stopped is None:
                profile.stopped = "the compressed file is truncated"
        except (zlib.error, OSError) as exc:
            profile.stopped = f"the compressed file is damaged ({type(exc).__name__})"
    data = b"".join(chunks)
    return data[:max_bytes]


def _bounded_int(digits: str) -> int | float:
    # Python refuses to convert an integer of more than 4,300 digits (ValueError): such a number is a float (inf),
    # which no event takes as a time.
    return int(digits) if len(digits) <= 4000 else float(digits)


# Python's decoder, unlike orjson, takes what torch's json.dump writes and strict JSON lacks: NaN, Infinity,
# integers past 64 bits.
_LENIENT = json.JSONDecoder(parse_int=_bounded_int)


def _whole(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if not _lenient_may_parse(data, exc):
            return None
    try:
        return _LENIENT.decode(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None


def _lenient_may_parse(data: bytes, orjson_error: orjson.JSONDecodeError) -> bool:
    """Whether the lenient decoder can read what orjson did not (NaN, 1e400): not a file cut off, which it would
    decode up to 1 GB of to fail at the end (the event-by-event reader, lenient too, then reads it a third time)."""
    if orjson_error.msg.startswith("unexpected end of data"):
        return False  # all orjson read was JSON Python reads too, up to the same end
    tail = data[-4096:].rstrip(b" \t\r\n")
    # A document ends as its object or list closes; 4 KB of trailing whitespace is no cut file's, so it is tried.
    return not tail or tail.endswith((b"}", b"]"))


def _events_as_far_as_they_go(data: bytes, profile: Profile) -> Iterator[Any]:
    """The events of a damaged file one at a time, until the first one that does not parse."""
    text = data.decode("utf-8", "replace")
    key = text.find('"traceEvents"')
    start = text.find("[", key if key >= 0 else 0)
    if start < 0 or (key < 0 and text[:start].strip()):
        # (a .gz cut before its event list: the cut is why, as much as the list missing)
        cut = f"; read stopped early: {profile.stopped}" if profile.stopped else ""
        raise CompilescopeError(f"{profile.source}: not a torch.profiler Chrome trace (no traceEvents list{cut})")
    decoder = _LENIENT
    pos, n = start + 1, len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n:
            profile.stopped = profile.stopped or "the file ends inside the event list (truncated)"
            return
        if text[pos] == "]":
            # The whole file did not parse, even leniently, but every event did: what is broken follows them.
            if profile.stopped is None:
                profile.stopped = "the JSON after the event list is broken (every event was read)"
            return
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):  # (JSONDecodeError is a ValueError)
            profile.stopped = profile.stopped or f"broken JSON at character {pos:,} (truncated or corrupt)"
            return
        yield value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _ident(value: Any) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return str(value)[:200]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _event(value: Any, profile: Profile) -> ProfileEvent | None:
    if not isinstance(value, dict):
        profile.skip("not a JSON object")
        return None
    if value.get("ph") != "X":
        return None  # metadata, flows, instants: no duration to attribute
    name, ts, dur = value.get("name"), _number(value.get("ts")), _number(value.get("dur"))
    if not isinstance(name, str) or ts is None or dur is None or dur < 0:
        profile.skip("a timed event without a name, start or duration")
        return None
    args = value.get("args")
    args = args if isinstance(args, dict) else {}
    cat = value.get("cat")
    return ProfileEvent(name=name[:MAX_NAME], cat=cat[:100].lower() if isinstance(cat, str) else "", ts=ts, dur=dur,
                        pid=_ident(value.get("pid")), tid=_ident(value.get("tid")),
                        correlation=_int(args.get("correlation")), device=_int(args.get("device")))


# capture(profile=True) writes its trace as this, beside the log (capture.PROFILE_NAME)
CAPTURED_PROFILE = "profile.json.gz"


def profile_beside(log: str) -> str | None:
    """The profile of a log's run lying beside it: `<name>.profile.json[.gz]` for `<name>.log[.gz]` (a program that
    records its own profile beside its log), else capture()'s `profile.json.gz` where the log is alone in its
    directory with it (several logs there: whose it is, nothing says). None: none, or a log that is no local file."""
    if not os.path.isfile(log):
        return None
    folder, name = os.path.split(os.path.abspath(log))
    stem = name
    for ending in (".gz", ".log", ".txt"):
        stem = stem.removesuffix(ending)
    for candidate in (f"{stem}.profile.json.gz", f"{stem}.profile.json"):
        if os.path.isfile(os.path.join(folder, candidate)):
            return os.path.join(folder, candidate)
    captured = os.path.join(folder, CAPTURED_PROFILE)
    if os.path.isfile(captured):
        logs = [n for n in os.listdir(folder) if n.endswith((".log", ".log.gz"))]
        if logs == [name]:
            return captured
    return None

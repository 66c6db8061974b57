"""CompileId: the identity of one compilation, as torch writes it in a trace."""

from __future__ import annotations

from typing import Any
from .records import dataclass


NO_COMPILE_ID = "[-/-]"  # how a report names the events outside any compilation (tlparse's spelling)


def compile_id_key(compile_id: CompileId | None) -> str:
    """A compile id as reports name it ("[0/1]"), NO_COMPILE_ID for none."""
    return str(compile_id) if compile_id is not None else NO_COMPILE_ID


def compile_id_words(key: str) -> str:
    """CompileId.words of a compile id as reports name it ("[0/1_1]"); "" for one that names no compilation."""
    compile_id = CompileId.parse(key) if key != NO_COMPILE_ID else None
    return compile_id.words() if compile_id is not None else ""


def compilation_key(compile_id: CompileId | str | None) -> str:
    """The compilation a compile id is an attempt of, as reports name it: "[0/1]" for [0/1_1] (Dynamo restarted
    [0/1], most often at a graph break), so that its attempts count once; NO_COMPILE_ID for none. A compile id as
    reports name it ("[0/1_1]") is read first; one that does not parse is its own."""
    if isinstance(compile_id, str):
        parsed = CompileId.parse(compile_id)
        return parsed.compilation if parsed is not None else compile_id
    return compile_id.compilation if compile_id is not None else NO_COMPILE_ID


def _part(value: int | None) -> str:
    return "-" if value is None else str(value)


_CONTEXT_ID_KEYS = ("compiled_autograd_id", "frame_id", "frame_compile_id", "attempt")  # as from_context's values
_NO_VALUES = (None, None, None, None)
_ID_LIMIT = 1 << 32  # tlparse's u32


@dataclass(frozen=True, order=True, slots=True)
class CompileId:
    """``[!ca/frame/frame_compile_attempt]``; any part may be unknown (None).

    Ordered so that sorting gives the natural report order (None sorts first
    through the key below, not through field comparison).
    """

    compiled_autograd_id: int | None
    frame_id: int | None
    frame_compile_id: int | None
    attempt: int | None

    @classmethod
    def from_context(cls, obj: dict[str, Any], problems: list[tuple[str, str]] | None = None) -> CompileId | None:
        """The compile id of an envelope, or None when it carries none.

        A part that is no compile id number ("frame_id='../..'", -1, True) is read as unknown (None), and
        appended to problems as one ("bad_compile_id", message) naming each: torch writes counters (ints from 0),
        tlparse reads each as a u32 and skips the record otherwise; the reader lists the record as a problem.
        (The envelope's own list of problems, not one of parts: nearly every record has none to build.)
        """
        get = obj.get
        values = (get("compiled_autograd_id"), get("frame_id"), get("frame_compile_id"), get("attempt"))
        if values == _NO_VALUES and not any(k in obj for k in _CONTEXT_ID_KEYS):
            return None
        # One object per distinct readable id (a log has few): built once, and dict lookups by it hit on identity.
        # Only exact ints and None are looked up (True == 1 and hashes alike, but is no id part); a hit is
        # readable, so the parts are checked only here, on a miss or a part of another type.
        ca, frame, fcid, attempt = values
        if ((ca is None or type(ca) is int) and (frame is None or type(frame) is int)
                and (fcid is None or type(fcid) is int) and (attempt is None or type(attempt) is int)):
            known = _INTERNED.get(values)
            if known is not None:
                return known
            bad = _unreadable_parts(values)
            if not bad:
                if len(_INTERNED) > 4096:  # (many logs in one process, or a log of made-up ids)
                    _INTERNED.clear()
                known = _INTERNED[values] = cls._of(values)
                return known
        else:
            bad = _unreadable_parts(values)
        if bad and problems is not None:
            problems.append(("bad_compile_id", f"compile id parts torch never writes (it counts from 0): {', '.join(bad)}; "
                                               "read anyway, those parts as unknown"))
        return cls._of(values)

    @classmethod
    def _of(cls, raw: tuple) -> CompileId:
        values = [v if type(v) is int and 0 <= v < _ID_LIMIT else None for v in raw]  # (else: _unreadable_parts)
        if values[3] is None and values[1] is not None:
            # Some kinds (e.g. compilation_metrics_runtime) omit the attempt; it is
            # the same compilation as attempt 0, not a different one.
            values[3] = 0
        return cls(*values)

    @classmethod
    def parse(cls, text: str) -> CompileId | None:
        """Inverse of ``str()``: ``"[!1/0/2_1]"`` -> CompileId(1, 0, 2, 1)."""
        body = text.strip().strip("[]")

        def num(part: str) -> int | None:
            return None if part in ("-", "") else int(part)  # ValueError past Python's digit limit too

        try:
            ca = None
            if body.startswith("!"):
                ca_text, _, body = body[1:].partition("/")
                ca = num(ca_text)
            frame_text, _, rest = body.partition("/")
            fcid_text, _, attempt_text = rest.partition("_")
            return cls(ca, num(frame_text), num(fcid_text), num(attempt_text) if attempt_text else 0)
        except ValueError:
            return None

    def __str__(self) -> str:
        attempt = f"_{self.attempt}" if self.attempt else ""
        return f"[{self._without_attempt()}{attempt}]"

    @property
    def compilation(self) -> str:
        """The compilation this is an attempt of: "[0/1]" for [0/1_1], as chromium events name it too."""
        return f"[{self._without_attempt()}]"

    def _without_attempt(self) -> str:
        prefix = f"!{self.compiled_autograd_id}/" if self.compiled_autograd_id is not None else ""
        return f"{prefix}{_part(self.frame_id)}/{_part(self.frame_compile_id)}"

    def words(self) -> str:
        """What each number of it is, for a tooltip: "frame 1 (...), compile 1 (a recompile: ...), attempt 1 (...)"."""
        parts = [] if self.compiled_autograd_id is None else [f"compiled autograd graph {self.compiled_autograd_id}"]
        if self.frame_id is None:
            return ", ".join(parts + ["its capture of the backward graph"]) if parts else ""
        parts.append(f"frame {self.frame_id} (a function Dynamo compiled)")
        if self.frame_compile_id is not None:
            again = "a recompile: a guard of an earlier compile failed" if self.frame_compile_id else "its first"
            parts.append(f"compile {self.frame_compile_id} ({again})")
        if self.attempt:
            parts.append(f"attempt {self.attempt} (Dynamo restarted its analysis, most often at a graph break)")
        return ", ".join(parts)

    def dir_name(self) -> str:
        """Path-safe form used for the per-compile directory (tlparse's layout)."""
        return "_".join(
            _part(v) for v in (self.compiled_autograd_id, self.frame_id, self.frame_compile_id, self.attempt)
        )

    def sort_key(self) -> tuple:
        return tuple(-1 if v is None else v for v in (self.compiled_autograd_id, self.frame_id, self.frame_compile_id, self.attempt))

    def to_json(self) -> list:
        return [self.compiled_autograd_id, self.frame_id, self.frame_compile_id, self.attempt]

    @classmethod
    def from_json(cls, data: list) -> CompileId:
        return cls(*data)


_INTERNED: dict[tuple, CompileId] = {}  # from_context's readable ids, by their raw values


def _unreadable_parts(values: tuple) -> list[str]:
    """Each of an envelope's id values (from_context's) that is no u32 counter, as "key=value"."""
    return [f"{key}={value!r}"[:80] for key, value in zip(_CONTEXT_ID_KEYS, values)
            if value is not None and not (type(value) is int and 0 <= value < _ID_LIMIT)]

"""What Dynamo's name for a value passed on past a graph break stands for in the user's code.

At a graph break, Dynamo runs the call it could not trace and passes what was on the interpreter stack to the resume
function (torch_dynamo_resume_in_f_at_16) as its arguments ___stack0, ___stack1, ... A source such as
`L['___stack0']` (a symbol's, a guard's) names one of them: a name the user never wrote. The top of that stack, the
last ___stack argument, is the result of the call that broke the graph; the graph break's user traceback marks that
call's text with carets (`scale = loss.item()` over `^^^^^^^^^^^`), so it reads "the value of `loss.item()`". The
resume function's bytecode, as Dynamo logs it (<co_name>_ORIGINAL_BYTECODE), loads every ___stack argument: from it
the last one is known. Where the log lacks either, the value is named by the line of the break only.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Mapping

from ..lazy_regex import lazy_compile
from ..model.trace import Compile, Trace
from ..model.records import dataclass
from .compiled_frames import ORIGINAL_BYTECODE_SUFFIX, compiled_frame
from .graph_breaks.resume_names import resume_of
from .graph_breaks.reason_text import ARTIFACT as GRAPH_BREAK_ARTIFACT, BREAK_HEADER
from .user_locations import CARETS, TRACEBACK_FRAME, section

# L['___stack0'] and what follows it (".size()[0]" for a tensor's size); a guard's text may name it bare (___stack0).
_STACK_SOURCE = lazy_compile(r"(?:L\['___stack(\d{1,6})'\]|___stack(\d{1,6}))(.{0,1000})", re.S)
_STACK_NAME = lazy_compile(r"\b___stack(\d{1,6})\b")
# A ___stack argument as a guard's text names it (`___stack0 == -1.3`, `L['___stack1'].size()[0] == 4`), with what it
# reads of it (".size()[0]", "[1]").
_GUARD_STACK = lazy_compile(r"(?:L\['___stack\d{1,6}'\]|\b___stack\d{1,6}\b)(?:\.\w{1,100}(?:\(\))?|\[\d{1,9}\])*")
# What a guard does with a value it names first: a comparison, which the value's words end before with a comma.
_COMPARED = lazy_compile(r"\s*(?:[=!<>]=|[<>]|is\b|in\b|not\b)")
# The instruction a graph break stopped at, as its reason says ("... when attempting to trace CALL: a function call"):
# a call leaves its result on top of the stack (CALL_FUNCTION / CALL_METHOD before Python 3.11).
_CALL_BREAK = lazy_compile(r"attempting to trace (?:CALL|CALL_FUNCTION\w*|CALL_METHOD|CALL_KW|CALL_FUNCTION_EX)\b")


@dataclass
class BrokenLine:
    """The line a graph break stopped at, from its user traceback: the line's code and the call the carets mark."""

    code: str | None  # "scale = loss.item()"
    call: str | None  # "loss.item()": the call that broke the graph, where the reason says it was one


@dataclass
class StackValue:
    """A ___stack argument of a resume function: what the user's code computed there."""

    index: int
    function: str  # the function whose graph broke (train_step)
    filename: str | None
    line: int  # where it broke
    code: str | None  # the line's code
    call: str | None  # the call whose result this value is (only for the last ___stack argument)

    @property
    def short(self) -> str:
        """"the value of `loss.item()`", or "the value on the stack at line 19's graph break": where the text around
        it gives the place (a recompile of the resume function)."""
        return f"the value of `{self.call}`" if self.call else f"the value on the stack at line {self.line}'s graph break"

    def text(self, rest: str = "") -> str:
        """The short form with its detail after it, so that both read as one value: "the value of `loss.item()`
        (item_break.py:16), passed on past the graph break"; of a value not known to be the call's, "the value on the
        stack at line 16's graph break (`scale = loss.item()` in item_break.py), passed on past it". rest is what the
        source adds to it (".size()[0]")."""
        of = f"`{rest.lstrip('.')}` of " if rest else ""
        if self.call:
            where = f"{os.path.basename(self.filename)}:{self.line}" if self.filename else f"line {self.line} of {self.function}"
            return f"{of}{self.short} ({where}), passed on past the graph break"
        # (the short form names the line already: the detail adds the line's code and its file)
        place = os.path.basename(self.filename) if self.filename else self.function
        detail = f"`{self.code}` in {place}" if self.code else f"in {place}"
        return f"{of}{self.short} ({detail}), passed on past it"


class StackValues:
    """Names the ___stack sources of a log's resume functions. Reads the graph breaks once, when first asked, and each
    resume function's bytecode once: the analyses that name sources (recompiles, dynamic shapes) share one."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._breaks: dict[tuple[str, int], BrokenLine] | None = None
        self._by_frame: dict[int | None, list[Compile]] | None = None  # a frame's compiles, by compile id
        self._last_indexes: dict[tuple[int | None, str], int | None] = {}  # (frame id, resume function) -> index

    def describe(self, entry: Compile, source: str | None) -> str | None:
        """The source in words, where it is a ___stack argument of the resume function entry compiled; else None."""
        value = self.value(entry, source)
        if value is None or source is None:
            return None
        m = _STACK_SOURCE.fullmatch(source)
        return value.text(m[3] if m else "")

    def guard_names(self, entry: Compile, guard: str) -> dict[str, str]:
        """Each ___stack source the text of a guard of entry's frame names, in words (describe): for
        name_stack_values. {} where it names none, or none known."""
        found = {}
        for m in _GUARD_STACK.finditer(guard):
            text = self.describe(entry, m[0])
            if text is not None:
                found[m[0]] = text
        return found

    def short(self, entry: Compile, source: str | None) -> str | None:
        """The source briefly in words (StackValue.short), where it is a ___stack argument; else None."""
        value = self.value(entry, source)
        return value.short if value is not None else None

    def value(self, entry: Compile, source: str | None) -> StackValue | None:
        m = _STACK_SOURCE.fullmatch(source or "")
        frame = compiled_frame(entry)
        resumed = resume_of(frame[2] if frame else None) if m else None
        if m is None or frame is None or resumed is None:
            return None
        index = int(m[1] or m[2])
        function, line = resumed
        broken = self.broken_lines().get((frame[0], line))
        last = self._last_stack_index(entry, frame[2])
        call = broken.call if broken is not None and last is not None and index == last else None
        return StackValue(index, function, frame[0], line, broken.code if broken else None, call)

    def broken_lines(self) -> dict[tuple[str, int], BrokenLine]:
        """(file, line) -> the line there as the graph breaks' user tracebacks quote it; the call the carets mark only
        at the line a break names in its header (where it stopped: an outer frame's line is a call still running)."""
        if self._breaks is None:
            found: dict[tuple[str, int], BrokenLine] = {}
            stopped: dict[tuple[str, int], BrokenLine] = {}
            for entry in self.trace.sorted_compiles():
                for artifact in entry.artifacts:
                    if artifact.name == GRAPH_BREAK_ARTIFACT and artifact.payload is not None:
                        text = self.trace.payload_text(artifact.payload)
                        header = BREAK_HEADER.search(text)
                        stop = (header["file"], int(header["line"])) if header else None
                        for key, line in _traceback_lines(text, _CALL_BREAK.search(text) is not None).items():
                            if key == stop:
                                stopped.setdefault(key, line)
                            else:
                                found.setdefault(key, BrokenLine(line.code, None))
            self._breaks = {**found, **stopped}
        return self._breaks

    def _last_stack_index(self, entry: Compile, name: str) -> int | None:
        """The last ___stack argument the resume function loads, from its logged bytecode (None: none logged). Every
        compile of a frame compiles the same code: read once per frame."""
        frame_id = entry.compile_id.frame_id if entry.compile_id else None
        key = (frame_id, name)
        if key not in self._last_indexes:
            self._last_indexes[key] = self._read_last_stack_index(entry, name, frame_id)
        return self._last_indexes[key]

    def _read_last_stack_index(self, entry: Compile, name: str, frame_id: int | None) -> int | None:
        logged = name + ORIGINAL_BYTECODE_SUFFIX
        if self._by_frame is None:
            self._by_frame = {}
            for c in self.trace.sorted_compiles():
                if c.compile_id:
                    self._by_frame.setdefault(c.compile_id.frame_id, []).append(c)
        # (a compile's retry, [1/0_1], logs no bytecode: its first attempt's is the same code's)
        for other in [entry, *(c for c in self._by_frame.get(frame_id, ()) if c is not entry)]:
            for artifact in other.artifacts:
                if artifact.name == logged and artifact.payload is not None:
                    indexes = [int(i) for i in _STACK_NAME.findall(self.trace.payload_text(artifact.payload))]
                    return max(indexes) if indexes else None
        return None


def name_stack_values(guard: str, names: Mapping[str, str]) -> str:
    """A guard's text with each ___stack source of names (StackValues.guard_names) in words: "___stack0 ==
    -1.3068742752075195" reads "the value of `loss.item()` (item_break.py:19), passed on past the graph break,
    == -1.3068742752075195". The guard as torch wrote it where names has none of its sources."""
    if not names:
        return guard

    def said(m: re.Match[str]) -> str:
        words = names.get(m[0])
        if words is None:
            return m[0]
        return words + ("," if _COMPARED.match(guard, m.end()) else "")

    return _GUARD_STACK.sub(said, guard)


def _traceback_lines(text: str, at_call: bool) -> dict[tuple[str, int], BrokenLine]:
    """(file, line) -> each frame's code in the user traceback of a graph break's text, and the text its carets mark
    where the break was at a call. The code line and the caret line carry the same indent, so a caret's column is the
    code's; where they end is not (torch 2.13 marks `y.sum().item()  # comment` to the line's end), so the call
    is read from the code where they start (_call_at)."""
    traceback = section(text, "User code traceback:")
    lines = (text if traceback is None else traceback).splitlines()
    found: dict[tuple[str, int], BrokenLine] = {}
    for i, row in enumerate(lines[:-1]):
        m = TRACEBACK_FRAME.match(row)
        code = lines[i + 1]
        if m is None or not code.strip() or TRACEBACK_FRAME.match(code) or CARETS.match(code):
            continue
        carets = lines[i + 2] if i + 2 < len(lines) else ""
        call = _call_at(code[len(carets) - len(carets.lstrip()):]) if at_call and CARETS.match(carets) else None
        found[(m["file"], int(m["line"]))] = BrokenLine(code.strip(), call)
    return found


_MAX_CODE = 500  # a line longer than this is named as it is: each ')' in it is one parse


def _call_at(code: str) -> str | None:
    """The call that code starts with: "loss.item()" of "loss.item() * 2  # note", "torch._dynamo.graph_break()" of
    "torch._dynamo.graph_break(), t.sin() + 1)[1]"; None where it starts with none. The longest part of it that ends
    at a ')' and parses as one call is that call (a comment after it is no part of it)."""
    if len(code) > _MAX_CODE:
        return None
    for end in range(len(code), 0, -1):
        if code[end - 1] != ")":
            continue
        part = code[:end]
        try:
            body = ast.parse(part, mode="eval").body
        except (SyntaxError, ValueError):
            continue
        if isinstance(body, ast.Call):
            return ast.get_source_segment(part, body)
    return None

"""Which files the source pages are for, and the text each shows: a user's source file (is_user_source), the lines
the log quotes of it (Quotes), the file on disk where it agrees with every one of them (read_disk), and the last line
a compiled code's logged bytecode reaches (original_last_line), which ends a function of a file rebuilt from the
quotes."""

from __future__ import annotations

import re

from ...decompile.recorded import ORIGINAL as RECORDED_ORIGINAL_BYTECODE
from ...lazy_regex import lazy_compile
from ...location import NOT_A_FILE, NOT_HERE, TOO_BIG
from ...model.source_files import MAX_SOURCE_BYTES, SourceFiles
from ...model.trace import Compile, Trace
from ..compiled_frames import ORIGINAL_BYTECODE_SUFFIX
from ..user_locations import is_triton_file
from . import resumed_function

# A `dis` row that starts a source line: the line number comes first, within the first few columns (3.10-3.12:
# `942     >>  212 LOAD_FAST`; 3.13: `  5   L1:     LOAD_FAST`); a row without one starts with the offset or label
# past them (`              2 LOAD_CONST`). At most 9 leading spaces and 9 digits: the text is untrusted.
_DIS_LINE_START = lazy_compile(r"^[ \t]{0,9}(\d{1,9})[ \t]+(?:>>[ \t]*)?(?:L\d{1,9}:[ \t]+)?(?:\d{1,9}[ \t]+)?[A-Z][A-Z_0-9]*\b")
# Torch's own files: what Dynamo traced through, not the user's code.
_TORCH_FILE = re.compile(r"[/\\](?:site|dist)-packages[/\\]torch[/\\]")


_USER_SOURCE: dict[str, bool] = {}  # path -> is_user_source(path): a log names few files, each many times


def is_user_source(path: str) -> bool:
    known = _USER_SOURCE.get(path)
    if known is None:
        if len(_USER_SOURCE) > 65536:  # (a batch of many logs in one process)
            _USER_SOURCE.clear()
        known = _USER_SOURCE[path] = (bool(path) and not path.startswith("<") and not _TORCH_FILE.search(path)
                                      and not is_triton_file(path))
    return known


class Quotes:
    """Lines the log quotes, per file: what a rebuilt file shows and what a disk file must agree with."""

    def __init__(self) -> None:
        self.by_file: dict[str, dict[int, str]] = {}
        self.functions: dict[str, dict[int, str]] = {}  # the function a stack places each line in, per file

    def add(self, path: str, line: int, code: str | None, function: str | None = None) -> None:
        # (called once per note and stack frame, mostly for a line already quoted and with no function: an empty dict
        # made and dropped, or a resume name looked for in none, per call was most of its cost)
        lines = self.by_file.get(path)
        if lines is None:
            lines = self.by_file[path] = {}
        if code and line not in lines:
            lines[line] = code.strip()
        if not function:
            return
        function = resumed_function(function) or function  # (a resume function's lines are its function's)
        if not function.startswith("<"):  # <module>, <lambda>, <genexpr>: not a def of the file
            functions = self.functions.get(path)
            if functions is None:
                functions = self.functions[path] = {}
            functions.setdefault(line, function)


def read_disk(path: str, quoted: dict[int, str], files: SourceFiles) -> tuple[list[str] | None, str]:
    """The file's lines, and how they were read (files: as ingest read them); or None, and why not (the page says it
    rebuilt the file)."""
    if not path.endswith(".py"):
        return None, "it is not a .py file"
    read, refused, _ = files.text(path, MAX_SOURCE_BYTES)
    if read is None:
        return None, {NOT_HERE: "the file is not on this machine",
                      NOT_A_FILE: "the path on this machine is not a regular file",
                      TOO_BIG: "the file on this machine is too big to show"}.get(
                          refused, f"the file could not be read ({refused})")
    lines = list(read)
    if not quoted:
        return None, "the log quotes no line of it, so the file on this machine cannot be checked against the run"
    for number, code in quoted.items():
        if number > len(lines) or lines[number - 1].strip() != code:
            return None, f"the file on this machine differs from the logged run (line {number})"
    return lines, f"read from {path}; every line the log quotes ({len(quoted)}) agrees with it"


def original_last_line(trace: Trace, entry: Compile, name: str) -> int | None:
    """The last line the compiled code `name` reaches, from its logged bytecode (the highest line a row starts);
    None where the log holds none."""
    for artifact in entry.artifacts:
        if artifact.payload is not None and artifact.name in (RECORDED_ORIGINAL_BYTECODE, name + ORIGINAL_BYTECODE_SUFFIX):
            lines = [int(m[1]) for m in map(_DIS_LINE_START.match, trace.payload_text(artifact.payload).splitlines()) if m]
            if lines:
                return max(lines)
    return None

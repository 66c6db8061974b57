"""Crashes: a process of the run killed in native code (a segfault, an abort), from the stack Python's faulthandler
wrote and `compilescope run` appended to that process's log (artifact `compilescope_crash`; runner/trace_dir.py,
attach_crash_reports), or that a process tracing itself with capture() left beside its log, which the reader takes as
that artifact (ingest/crash_files.py). torch logs nothing of such a death: without it, a log that just stops.

faulthandler's text: "Fatal Python error: Segmentation fault", then per thread "Current thread 0x... (most recent
call first):" (the thread that crashed; the others are "Thread 0x...") and its frames, innermost first, each
`  File "path", line N in function`. A crash in a thread Python does not know (an OpenMP thread of Inductor's C++
kernel, a CUDA driver thread) has no current thread: every thread is "Thread 0x...", newest first, so the main
thread is the last.

An uncaught Python exception that ended the process (a job whose ranks raised outside any compilation: torch logs
nothing of it either) is recorded in the same file, as a JSON line (ingest/crash_files.py, uncaught_exceptions), and
read here as a crash of its own kind (Crash.exception): "stopped with AssertionError: ... raised at ...".
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import Any

from ..decompile.recorded import CRASH
from ..ingest.crash_files import FAULTHANDLER_HEADER, UncaughtException, ending, ending_said, exception_said
from ..lazy_regex import lazy_compile
from ..model.trace import Trace
from .user_locations import UserLocation, is_framework_file, is_torch_file, traceback_frames
from ..model.records import dataclass

_FRAME = lazy_compile(r'^\s*File "(?P<file>[^"]{1,4096})", line (?P<line>\d{1,9}) in (?P<func>\S{1,500})')
_THREAD = lazy_compile(r"^(?P<current>Current thread|Thread) 0x[0-9a-fA-F]{1,32}")
# Frames of the code Dynamo and Inductor run while they compile; a crash under them is one while compiling.
_COMPILING = ("torch/_dynamo/convert_frame.py", "torch/_inductor/compile_fx.py")
_CUDAGRAPH_TREES = "torch/_inductor/cudagraph_trees.py"  # reduce-overhead's CUDA graphs, recorded and replayed
# Inductor's own launcher of compiled Triton kernels (torch >= 2.7), which skips Triton's checks of the arguments.
_STATIC_LAUNCHER = "torch/_inductor/runtime/static_triton_launcher.py"
# torch's loader of an AOTInductor package (aoti_load_package -> package.py load_package -> pt2_archive's load_pt2 and
# _load_aoti, which loads the package's compiled library): seen on an H200 (cuda_torch211, aoti_deploy_cuda_*), a
# SIGSEGV in _load_aoti that plain python, without compilescope or TORCH_TRACE, met too.
AOTI_LOADER = "aoti_load_package"
_AOTI_LOADER_FILES = ("torch/_inductor/package/package.py", "torch/export/pt2_archive/_package.py")
# Seen on an H200 (tests/data/cuda_torch211, hf_gpt2_static_cache): the SIGSEGV there became, with the variable set,
# "TypeError: Pointer argument must be either uint64 or have data_ptr method" raised by Triton's launcher.
STATIC_LAUNCHER_ADVICE = (
    "it crashed in Inductor's static launcher of Triton kernels, which does not check the kernel's arguments: rerun "
    "with TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0 (torch._inductor.config.use_static_cuda_launcher = False) and "
    "Triton's own launcher raises a Python error naming the bad argument instead")


@dataclass
class GeneratedLine:
    """A frame of the crashed stack in a compilation's generated output code: the line its output code page shows."""

    compile_id: str
    artifact: int  # the output code artifact's number
    line: int | None  # as the page numbers it (None: one of the empty lines the page drops)

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "artifact": self.artifact, "line": self.line}


@dataclass
class Crash:
    """One process that crashed, and where."""

    error: str  # as faulthandler names it: "Segmentation fault", "Aborted", "Floating-point exception"
    frames: list[UserLocation]  # the crashing thread's stack, innermost first
    threads: int  # threads faulthandler listed
    text: str  # faulthandler's, as it wrote it
    compile_id: str | None = None  # the compilation whose generated code was running (its output code is on the stack)
    compiling: bool = False  # it crashed inside Dynamo or Inductor compiling, not running what they made
    user_frame: UserLocation | None = None  # the innermost frame of the user's code (not torch's, a library's, generated)
    # The innermost frame in that compile's generated code: its output code artifact, and the line as its page numbers it
    code_artifact: int | None = None
    code_line: int | None = None
    # No Python thread crashed (faulthandler marked none current): frames are those of the thread running the log's
    # compiled code, else of the main thread, which launched the native work that crashed.
    other_thread: bool = False
    # The crash file it was read from, beside the log (a process that traced itself with capture() and died: nobody
    # appended its crash to the log); None: the log holds it.
    file: str | None = None
    # The log's record of it (the `compilescope_crash` artifact's number, outside any compilation); None: read from file.
    record: int | None = None
    # For each frame, its line of generated output code where it is in a compilation's (else None): the stack links each.
    generated: list[GeneratedLine | None] = field(default_factory=list)
    # An uncaught Python exception ended it (error: "AssertionError: its message's first line"), not native code
    exception: bool = False
    thread: str | None = None  # the exception's thread, when not the main thread's (the process went on)

    @property
    def stack(self) -> list[tuple[UserLocation, GeneratedLine | None]]:
        """Each frame, innermost first, with its line of generated code if it ran a compilation's."""
        return [(f, self.generated[i] if i < len(self.generated) else None) for i, f in enumerate(self.frames)]

    @property
    def where(self) -> UserLocation | None:
        """The innermost frame: where Python last was when native code crashed."""
        return self.frames[0] if self.frames else None

    @property
    def under_cudagraphs(self) -> bool:
        """CUDA graph trees (reduce-overhead) were recording or replaying the compiled code."""
        return any(f.filename.replace("\\", "/").endswith(_CUDAGRAPH_TREES) for f in self.frames)

    @property
    def in_static_launcher(self) -> bool:
        """Python was in Inductor's static Triton launcher: a kernel launch crashed (STATIC_LAUNCHER_ADVICE)."""
        where = self.where
        return where is not None and where.filename.replace("\\", "/").endswith(_STATIC_LAUNCHER)

    @property
    def loading_aoti_package(self) -> bool:
        """Python was in torch's loader of an AOTInductor package (aoti_load_package and what it calls), not in
        compiling one or running what one computes."""
        return not self.exception and any(
            (f.function == AOTI_LOADER and is_torch_file(f.filename))
            or f.filename.replace("\\", "/").endswith(_AOTI_LOADER_FILES) for f in self.frames)

    @property
    def during(self) -> str:
        """"while running [0/1]'s compiled code", "while compiling", or "" (neither: elsewhere in the program)."""
        if self.loading_aoti_package:
            return f"while loading an AOTInductor package (torch's {AOTI_LOADER})"
        if self.compile_id is not None:
            under = " under CUDA graph trees" if self.under_cudagraphs else ""
            return f"while running {self.compile_id}'s compiled code{under}"
        return "while compiling" if self.compiling else ""

    @property
    def recorded(self) -> bool:
        """faulthandler wrote its stack (else only the signal that killed the process is known)."""
        return bool(self.text)

    @property
    def headline(self) -> str:
        """"Segmentation fault in __init__.py:519 (string_at)": what killed it, and where Python was."""
        where = self.where
        if self.exception:  # (the function named here when it is the user's: called_from leaves it out then)
            user = f" in {where.function}" if where is not None and where is self.user_frame and where.function else ""
            return self.error + (f" raised at {where.short}{user}" if where else "")
        return self.error + (f" in {where.short} ({where.function})" if where else "")

    @property
    def ending(self) -> str:
        """How the process ended, after a rank or "the program": "crashed: ...", or "stopped with ..."."""
        return ending_said(self.said, self.exception, self.thread)

    @property
    def circumstances(self) -> list[str]:
        """What else the stack tells: whose compiled code ran, in which thread, from which line of the user's."""
        said = [self.during] if self.during else []
        if self.thread is not None:
            said.append(f"in thread {self.thread}")
        if self.other_thread:
            said.append("in a thread of native code (faulthandler names no Python thread: an OpenMP or a driver thread)")
        if self.called_from:
            said.append(self.called_from)
        return said

    @property
    def called_from(self) -> str | None:
        """"called from hf_gpt2_static_cache.py:22 in main": the user's line on the crashed stack."""
        user = self.user_frame
        if self.exception and user is not None and user is self.where:  # (raised there: the headline names it)
            return None
        return f"called from {user.short}" + (f" in {user.function}" if user.function else "") if user else None

    @property
    def said(self) -> str:
        """The crash in one line: its headline and circumstances."""
        return ", ".join([self.headline, *self.circumstances])

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "frames": [f.to_json() for f in self.frames], "threads": self.threads,
                "compile_id": self.compile_id, "compiling": self.compiling, "during": self.during,
                "code_artifact": self.code_artifact, "code_line": self.code_line,
                "in_static_launcher": self.in_static_launcher, "loading_aoti_package": self.loading_aoti_package,
                "other_thread": self.other_thread, "file": self.file, "record": self.record,
                "generated": [g.to_json() if g else None for g in self.generated],
                "where": self.where.to_json() if self.where else None,
                "user_frame": self.user_frame.to_json() if self.user_frame else None, "text": self.text,
                "exception": self.exception, "thread": self.thread, "ending": self.ending}


@dataclass
class Crashes:
    """The processes of the log that crashed (one: a log is one process's)."""

    crashes: list[Crash] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.crashes)

    def to_json(self) -> dict[str, Any]:
        return {"crashes": [c.to_json() for c in self.crashes]}


def _error_named(header: str) -> str:
    """The error of faulthandler's first line. Two threads that crash at once (both of an OpenMP region calling
    terminate()) each write it, interleaved: "Fatal Python error: Fatal Python error: AbortedAborted"."""
    error = header.replace(FAULTHANDLER_HEADER, "").strip()
    half = len(error) // 2
    return error[:half] if half and error[:half] * 2 == error else error


def parse_crash(text: str, output_code: dict[str, tuple[str, int, int]] | None = None) -> Crash:
    """faulthandler's text; output_code: the stem of each output code file the log holds -> (its compile id, its
    artifact number, the empty lines its page drops before line 1). An uncaught exception's record that ended the
    process (crash_files.ending): parse_exception."""
    end = ending(text)
    if end.exception:
        return parse_exception(end.raised, text, output_code)
    error = ""
    threads: list[tuple[bool, list[UserLocation]]] = []
    for line in end.faulthandler.splitlines():
        if not error and line.startswith(FAULTHANDLER_HEADER):
            error = _error_named(line)
            continue
        thread = _THREAD.match(line)
        if thread:
            threads.append((thread["current"] == "Current thread", []))
            continue
        frame = _FRAME.match(line)
        if frame and threads:
            threads[-1][1].append(UserLocation(frame["file"], int(frame["line"]), frame["func"], None))
    output_code = output_code or {}

    other_thread = bool(threads) and not any(is_current for is_current, _ in threads)
    if other_thread:
        # A thread of native code crashed: the thread in compiled code launched it; else the main thread (the last).
        crashed = next((frames for _, frames in threads if any(generated_line(f, output_code) for f in frames)),
                       threads[-1][1])
    else:
        crashed = next((frames for is_current, frames in threads if is_current), [])
    crash = Crash(error or "a crash", crashed, len(threads), text, other_thread=other_thread)
    return _placed(crash, output_code)


def _placed(crash: Crash, output_code: dict[str, tuple[str, int, int]]) -> Crash:
    """crash with its frames placed: in which compilation's generated code, in the user's code, while compiling."""
    crash.generated = [generated_line(f, output_code) for f in crash.frames]
    first = next((g for g in crash.generated if g is not None), None)
    if first is not None:
        crash.compile_id, crash.code_artifact, crash.code_line = first.compile_id, first.artifact, first.line
    generated_files = {f.filename for f, g in crash.stack if g is not None}
    crash.user_frame = next((f for f in crash.frames
                             if not is_framework_file(f.filename) and f.filename not in generated_files), None)
    crash.compiling = crash.compile_id is None and any(f.filename.replace("\\", "/").endswith(_COMPILING)
                                                       for f in crash.frames)
    return crash


def parse_exception(exc: UncaughtException | None, text: str,
                    output_code: dict[str, tuple[str, int, int]] | None = None) -> Crash:
    """The uncaught exception that ended the process (crash_files.ending; None: its record is unreadable), of the crash
    file's text."""
    if exc is None:
        return Crash("an uncaught exception", [], 0, text, exception=True)
    # The record's frames carry no code; Python's traceback after it quotes each line (a line of a file has one text,
    # whichever traceback of the text quotes it: a chained exception's, another thread's).
    quoted = {(f.filename, f.line): f.code for f in traceback_frames(text) if f.code}
    frames = [UserLocation(file, line, function, quoted.get((file, line))) for file, line, function in exc.frames]
    crash = Crash(exception_said(exc), frames, 1, text, exception=True, thread=exc.thread)
    return _placed(crash, output_code or {})


def generated_line(frame: UserLocation, output_code: dict[str, tuple[str, int, int]]) -> GeneratedLine | None:
    # Inductor's generated module of a compilation: its file is named as its artifact is (inductor_output_code_<stem>).
    found = output_code.get(os.path.splitext(os.path.basename(frame.filename))[0])
    if found is None:
        return None
    compile_id, artifact, dropped = found
    return GeneratedLine(compile_id, artifact, frame.line - dropped if frame.line > dropped else None)


# The signals faulthandler dumps a stack for, named as it names them.
SIGNAL_ERRORS = {"SIGSEGV": "Segmentation fault", "SIGABRT": "Aborted", "SIGBUS": "Bus error",
                 "SIGFPE": "Floating-point exception", "SIGILL": "Illegal instruction"}


def unrecorded_crash(signal: str | None) -> Crash | None:
    """A process killed by a signal of a crash ("SIGSEGV") with no stack recorded (it died before faulthandler was
    turned on, which `compilescope run` does when torch._dynamo is imported); None for any other end."""
    error = SIGNAL_ERRORS.get(signal or "")
    return Crash(error, [], 0, "") if error else None


def output_code_files(trace: Trace) -> dict[str, tuple[str, int, int]]:
    """The stem of each output code file the log holds -> (its compile id, its artifact number, the empty lines its
    page drops before line 1): what parse_crash places a crash by."""
    return {a.name[len("inductor_output_code_"):]: (str(entry.compile_id), a.number, _leading_empty(trace, a))
            for entry in trace.compiles.values() if entry.compile_id is not None
            for a in entry.artifacts if a.name.startswith("inductor_output_code_")}


def crashes(trace: Trace) -> Crashes:
    """The log's crash records, else the crash file the reader found beside it (trace.crash_file)."""
    found = [a for entry in trace.compiles.values() for a in entry.artifacts if a.name == CRASH and a.payload is not None]
    if not found and not trace.crash_text:
        return Crashes()
    output_code = output_code_files(trace)
    read = []
    for a in sorted(found, key=lambda a: a.number):
        crash = parse_crash(trace.payload_text(a.payload), output_code)
        crash.record = a.number
        read.append(crash)
    if not found and trace.crash_file is not None:
        crash = parse_crash(trace.crash_text, output_code)
        crash.file = os.path.basename(trace.crash_file)
        read.append(crash)
    return Crashes(read)


def _leading_empty(trace: Trace, artifact) -> int:
    """The empty lines the code page drops before its line 1 (provenance.line_mappings.code_lines): a file line less them is the
    page's line. Only the start of the payload is looked at."""
    if artifact.payload is None:
        return 0
    head = trace.payload_text(artifact.payload)[:4096]
    return len(head) - len(head.lstrip("\n")) if head.strip() else 0

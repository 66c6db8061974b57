"""A kernel's logged stack traces (``inductor_provenance_tracking_kernel_stack_traces``) read into KernelTraces."""

from __future__ import annotations

import orjson

from ...lazy_regex import lazy_compile
from ..cached_lines import RunLines
from . import KernelTrace, UserLine

# A kernel stack trace's frame: user_locations.TRACEBACK_FRAME's line, but the function may be absent (`File "x.py", line 1`,
# a format the provenance artifacts were logged in), so not that pattern
_FRAME = lazy_compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d{1,9})(?:, in (?P<function>.+))?\s*$')
_MARKER = lazy_compile(r"^\s*[\^~]+\s*$")  # the ^^^^ under the code


def parse_stack_trace(text: str) -> list[UserLine]:
    frames: list[UserLine] = []
    for line in text.split("\n"):
        m = _FRAME.match(line)
        if m:
            frames.append(UserLine(m["file"], int(m["line"]), m["function"], None))
        elif frames and frames[-1].code is None and line.strip() and not _MARKER.match(line):
            frames[-1].code = line.strip()
    return frames


def _call_order(name: str) -> tuple:
    """Kernels by debug handle (the order of their calls), then by name."""
    handle = name.rpartition(":")[2]
    return (0, int(handle), name) if ":" in name and handle.isascii() and handle.isdigit() else (1, 0, name)


def kernel_traces(text: str, parsed: dict[str, list[UserLine]] | None = None,
                  texts: dict[str, str] | None = None) -> list[KernelTrace]:
    """``inductor_provenance_tracking_kernel_stack_traces``: kernel -> list of stack trace strings.

    parsed: stack trace text -> its frames, shared by the calls for one log (a backward graph's kernels carry
    its forward's stacks: GPT-2 logs 168 stacks, 47 of them distinct). texts: each distinct stack trace text,
    kernel name and debug handle, one object for the calls for one log (the results keep every compile's
    kernels: its recompiles and backward graphs repeat them)."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(data, dict):
        return []
    result = []
    if parsed is None:
        parsed = {}  # kernels of one graph share most stacks: parse each text once
    if texts is None:
        texts = {}
    for name in sorted(data, key=_call_order):
        value = data[name]
        raw = value if isinstance(value, list) else [value]
        # Some torch versions log the newlines escaped (a literal backslash-n).
        traces = [_as_text(t).replace("\\n", "\n").rstrip("\n") for t in raw]
        # Each distinct text kept once (as its frames are): the result holds every kernel's traces.
        traces = [texts.setdefault(t, t) for t in traces]
        kernel, _, handle = name.rpartition(":") if ":" in name else (name, "", "")
        frames = [parsed[t] if t in parsed else parsed.setdefault(t, parse_stack_trace(t)) for t in traces]
        result.append(KernelTrace(name, texts.setdefault(kernel, kernel), texts.setdefault(handle, handle) or None,
                                  traces, frames))
    return result


def on_run_lines(kernels: list[KernelTrace], run: RunLines | None) -> list[KernelTrace]:
    """The kernels with their stacks' frames on this run's lines, where a cache hit logged the cached stacks (of the
    run that compiled them: cached_lines.py). The stack texts stay as logged; the parsed frames of a text are shared
    by every compile, so a moved stack gets new frames."""
    if run is None:
        return kernels
    placed: dict[int, list[UserLine]] = {}  # id of a shared frames list -> its frames on this run's lines

    def moved(frames: list[UserLine]) -> list[UserLine]:
        if id(frames) not in placed:
            lines = [run.line(f.file, f.line, f.function, f.code) for f in frames]
            placed[id(frames)] = frames if lines == [f.line for f in frames] else [
                UserLine(f.file, line, f.function, f.code) for f, line in zip(frames, lines)]
        return placed[id(frames)]

    return [KernelTrace(k.name, k.kernel, k.debug_handle, k.traces, [moved(f) for f in k.frames]) for k in kernels]


def _as_text(value: object) -> str:
    """A stack trace entry as text; a non-string (odd or hostile log) is shown as its JSON, or repr if too deep."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return repr(value)[:10_000]

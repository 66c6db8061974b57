"""How a compilation metric's value is shown, and which values are too long to show whole on a compile's page.

A compile's page (its summary) lists every metric, and so does its compilation metrics page, the full record.
A few values are machine dumps tens or hundreds of KB long: on the summary they are cut to their head, with their
size and a link to the full record. Measured on the GPT-2 CUDA log (gpu-torch211/gpt2_train), as shown:
inductor_provenance 2-830 KB (kernel stack traces, also on the provenance page), inductor_config 22 KB,
graph_node_shapes 10-11 KB, dynamo_config 4.7 KB; the longest value worth reading there whole,
triton_kernel_compile_times_us (which kernels took long to compile), is 2 KB, a stack or restart reason under 1 KB.
A value the report shows whole elsewhere (SHOWN_ELSEWHERE) is cut on its metrics page too, with a link there: GPT-2's
backward metrics page was 501 KB, 453 KB of it inductor_provenance escaped (tlparse's page shows neither).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..lazy_regex import lazy_compile
from ..model.records import dataclass
from ..model.trace import Frame
from .user_locations import TRACEBACK_FRAME

LONG_METRIC = 4096  # characters of text past which a value is cut on the summary (about a screen)
METRIC_HEAD = 512  # characters of a cut value that are shown (whole lines where its lines are short)
# Metrics that are a stack, shown as the pages show a stack (file.py:42 in f, the path in its title). torch writes
# stack_trace (torch/_dynamo/convert_frame.py) a frame a string, outermost first, the compiled frame last:
# "Line: 42, Name: <module>, Filename: /home/me/train.py" (a frame's name is a code name: it holds no comma).
STACK_METRICS = ("stack_trace",)
_STACK_FRAME = re.compile(r"Line: (\d+), Name: ([^,]*), Filename: (.+)", re.S)
# Metrics that are Python tracebacks, shown as their frames and the exception's own line. torch writes
# exception_stack_trace (torch/_dynamo/convert_frame.py, a failed compile) as [traceback.format_exc()]: one string,
# "Traceback (most recent call last):", a frame a `  File "p", line N, in f` line and its code (with carets), then the
# exception's lines; an exception raised while handling another follows it, after one of Python's two sentences.
TRACEBACK_METRICS = ("exception_stack_trace",)
_TRACEBACK_HEAD = "Traceback (most recent call last):"
_CHAIN_SENTENCE = lazy_compile(r"\n\n(The above exception was the direct cause of the following exception:|"
                             r"During handling of the above exception, another exception occurred:)\n\n"
                             r"(?=Traceback \(most recent call last\):\n)")
_FRAME_LINE = '  File "'  # a frame, as Python indents it (user_locations.TRACEBACK_FRAME reads it)
_FRAME_CODE = "    "  # a frame's code and carets; Python's "  [Previous line repeated N more times]" is skipped too
_REPEATED = lazy_compile(r"  \[Previous line repeated \d+ more times?\]")
_CARETS = lazy_compile(r"\s*[~^]+\s*")
# Metrics that hold what torch also logs as an artifact of the compile, by that artifact's name: the report shows
# those whole (inductor_provenance, a list of the kernels' stack traces, one JSON text per graph compiled, is what
# torch/_inductor logs as inductor_provenance_tracking_kernel_stack_traces: its pages and the provenance page).
SHOWN_ELSEWHERE = {"inductor_provenance": "inductor_provenance_tracking_kernel_stack_traces"}


@dataclass(slots=True)
class RaisedException:
    """One exception of a traceback: the frames it was raised through and its own lines."""

    frames: list[Frame]  # outermost first, the frame that raised it last, as Python writes them
    exception: str  # `torch._dynamo.exc.Unsupported: Failed to trace builtin operator` and the rest of its message
    then: str | None  # Python's sentence to the next exception of the chain; None for the last, the one that escaped

    @property
    def exception_line(self) -> str:
        return self.exception.split("\n", 1)[0]

    @property
    def message_lines(self) -> list[str]:
        """Its message's lines (exception_line first), less the newline that ends it."""
        return self.exception.rstrip("\n").split("\n")


@dataclass(slots=True)
class MetricTraceback:
    """A traceback a metric holds: the text as logged, and each exception of its chain, in Python's order."""

    text: str
    chain: list[RaisedException]

    @property
    def line_count(self) -> int:
        """The lines of its text as logged (less the newline that ends it)."""
        return self.text.rstrip("\n").count("\n") + 1


@dataclass(slots=True)
class LongMetric:
    """A value too long for the summary: the head of its text, and how long the whole is."""

    head: str
    chars: int  # the length of the whole text
    items: int | None  # entries of a list or dict, None for text


@dataclass(slots=True)
class MetricElsewhere:
    """A long value the report shows whole on other pages (SHOWN_ELSEWHERE): its head and size, and those pages."""

    cut: LongMetric
    name: str  # the artifacts' name (SHOWN_ELSEWHERE)
    artifacts: list[int]  # the numbers of the compile's artifacts that hold it (logged with the record, before it)


def is_structured(value: Any) -> bool:
    """A list or dict (shown as indented JSON), as opposed to text, a number or None."""
    kind = type(value)
    if kind in _PLAIN:  # (what a metric nearly always is: no abstract-class checks, about a thousand a log)
        return kind is dict or kind is list
    return isinstance(value, Mapping) or (not isinstance(value, str) and isinstance(value, Iterable))


_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})


def pretty_json(value: Any) -> str:
    """A list or dict as the pages show it: indented JSON."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:  # orjson writes at most 255 levels of nesting (a log may hold more)
        return "(nested too deeply to show)"


def long_metric(value: Any) -> LongMetric | None:
    """The head and size of a value whose text is longer than LONG_METRIC; None for a shorter one."""
    if isinstance(value, str):
        text = value
    elif is_structured(value):
        text = pretty_json(value)
    else:
        return None  # a number, a bool, None
    if len(text) <= LONG_METRIC:
        return None
    head = text[:METRIC_HEAD]
    line_end = head.rfind("\n")
    if line_end > METRIC_HEAD // 2:  # end on a whole line; a value of long lines (a list of long strings) is cut
        head = head[:line_end]
    items = len(value) if is_structured(value) and hasattr(value, "__len__") else None
    return LongMetric(head=head, chars=len(text), items=items)


def metric_stack(value: Any) -> list[Frame] | None:
    """The frames of a stack metric as torch writes it; None where any entry is not such a frame (it is shown as
    logged: another torch's format, or a log edited by hand)."""
    if not isinstance(value, list) or not value:
        return None
    frames = []
    for entry in value:
        found = _STACK_FRAME.fullmatch(entry) if isinstance(entry, str) else None
        if found is None:
            return None
        frames.append(Frame(filename=found[3], line=int(found[1]), name=found[2]))
    return frames


def metric_tracebacks(value: Any) -> list[MetricTraceback] | None:
    """The tracebacks of a traceback metric as torch writes it; None where any entry is not one (it is shown as
    logged: an exception group, another Python's format, or a log edited by hand)."""
    if not isinstance(value, list) or not value:
        return None
    tracebacks = []
    for entry in value:
        parsed = _traceback(entry) if isinstance(entry, str) else None
        if parsed is None:
            return None
        tracebacks.append(parsed)
    return tracebacks


def _traceback(text: str) -> MetricTraceback | None:
    pieces = _CHAIN_SENTENCE.split(text.rstrip("\n"))  # [traceback, sentence, traceback, ...]
    chain = []
    for i in range(0, len(pieces), 2):
        raised = _raised(pieces[i], pieces[i + 1] if i + 1 < len(pieces) else None)
        if raised is None:
            return None
        chain.append(raised)
    return MetricTraceback(text=text, chain=chain)


def _raised(text: str, then: str | None) -> RaisedException | None:
    lines = text.split("\n")
    if lines[0] != _TRACEBACK_HEAD:
        return None
    frames: list[Frame] = []
    n = 1
    while n < len(lines):
        line = lines[n]
        found = TRACEBACK_FRAME.match(line) if line.startswith(_FRAME_LINE) else None
        if found is not None:
            frames.append(Frame(filename=found["file"], line=int(found["line"]), name=found["func"]))
        elif line.startswith(_FRAME_CODE) and frames:
            if frames[-1].loc is None and line.strip() and not _CARETS.fullmatch(line):
                frames[-1].loc = line.strip()  # (the first line of a statement Python shows over several)
        elif not _REPEATED.fullmatch(line):
            break
        n += 1
    exception = "\n".join(lines[n:])
    if not exception or exception[0].isspace():
        return None  # no exception line where Python writes it: not a traceback of this shape
    return RaisedException(frames=frames, exception=exception, then=then)

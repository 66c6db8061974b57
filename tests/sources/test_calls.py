"""A line whose ops sit in a function it calls (a helper or library call Dynamo inlined) is captured through the call.

The graph dumps' `# File:` comments name only a node's innermost frame; the kernel stack traces
(`inductor_provenance_tracking_kernel_stack_traces`) hold the whole chain from the compiled frame inward, innermost
last. Expected lines are read from the programs and from the raw logs' stack traces, never from our own output.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

from compilescope.analyses.sources import LineNotes, analyze_sources, is_user_source
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, report, torch213
from .test_source_page import plain, row

GPT2_GENERATE = "hf_gpt2_generate.log.gz"
# An independent reading of the raw log: each stack trace of each kernel, as (file, line) frames, outermost first.
_STACKS_HEADER = re.compile(r'^V\d{4} .*"name": "inductor_provenance_tracking_kernel_stack_traces"')
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in ')


def raw_stacks(log: Path) -> list[list[tuple[str, int]]]:
    stacks = []
    with gzip.open(log, "rt") as f:
        lines = iter(f)
        for line in lines:
            if _STACKS_HEADER.match(line):
                for traces in json.loads(next(lines)[1:]).values():
                    for trace in traces:
                        stacks.append([(m[1], int(m[2])) for m in map(_FRAME.match, trace.split("\n")) if m])
    return stacks


def file_notes(log: Path, basename: str) -> dict[int, LineNotes]:
    with read_trace(str(log)) as trace:
        (found,) = [f for f in analyze_sources(trace).files if os.path.basename(f.path) == basename]
    return found.notes


def calls(notes: LineNotes) -> list[tuple[str, int, list[str]]]:
    return [(os.path.basename(c["file"]), c["line"], c["compile_ids"]) for c in notes.calls]


def test_a_user_line_calling_inlined_helpers_is_captured_through_the_call():
    """inlined_helpers.py: `f` line 27 `y = scale_then_shift(x, k)` has no op of its own; the one kernel's stack
    traces run f:27 -> scale_then_shift:22 -> shift:18 (`t + 1`) and f:27 -> scale_then_shift:22 (`t * k`). So line
    27 is captured through the call, its ops at lines 18 and 22; line 22 keeps its own node (mul) and also calls
    line 18; lines 18 and 28 (`.sin()`) are innermost only; line 26 (`k = 2 * 3`, no op) is on no stack."""
    notes = file_notes(torch213("inlined_helpers.log.gz"), "inlined_helpers.py")
    assert notes[27].status == "called" and not notes[27].graphs
    assert calls(notes[27]) == [("inlined_helpers.py", 18, ["[0/0]"]), ("inlined_helpers.py", 22, ["[0/0]"])]
    assert notes[22].status == "captured" and notes[22].graphs == {"[0/0]": ["mul"]}
    assert calls(notes[22]) == [("inlined_helpers.py", 18, ["[0/0]"])]
    assert [c["function"] for c in notes[22].calls] == ["shift"]
    for own in (18, 28):
        assert notes[own].status == "captured" and not notes[own].calls
    assert 26 not in notes


def test_a_library_call_of_a_model_line_is_captured_through_it():
    """hf_gpt2_generate: modeling_gpt2.py line 223 `attn_output = self.c_proj(attn_output)` calls Conv1D.forward; in
    each of the five compiles' kernel stack traces its stacks end in pytorch_utils.py line 119 (`torch.addmm`) or 120
    (`x.view(size_out)`), and no FX node names line 223. Line 240 `self.act(...)` ends in activations.py:66. Line 217
    (`dropout=... if self.training else 0.0`) is on no stack: only guards name it, so it stays uncoloured."""
    notes = file_notes(cuda211(GPT2_GENERATE), "modeling_gpt2.py")
    five = ["[0/0]", "[0/1]", "[0/2]", "[0/3]", "[0/4]"]
    assert notes[223].status == "called" and not notes[223].graphs
    assert sorted(calls(notes[223])) == [("pytorch_utils.py", 119, five), ("pytorch_utils.py", 120, five)]
    assert notes[240].status == "called" and calls(notes[240]) == [("activations.py", 66, five)]
    assert notes[217].guards and not notes[217].calls and notes[217].status == ""


def test_every_outer_frame_of_a_kernel_stack_names_the_line_of_its_ops():
    """Read independently from the raw log: each user frame of a stack but its last is a line that called into the
    ops at the stack's last frame; the line's notes say so. And a line no stack passes through has no call."""
    log = cuda211(GPT2_GENERATE)
    expected: dict[tuple[str, int], set[tuple[str, int]]] = {}
    for stack in raw_stacks(log):
        for frame in stack[:-1]:
            if is_user_source(frame[0]) and frame != stack[-1]:
                expected.setdefault(frame, set()).add(stack[-1])
    assert len(expected) >= 20  # (22 lines: the model's, its layers', the cache's, the mask's)
    with read_trace(str(log)) as trace:
        found = {(f.path, n): {(c["file"], c["line"]) for c in notes.calls}
                 for f in analyze_sources(trace).files for n, notes in f.notes.items() if notes.calls}
    assert found == expected


def test_the_page_marks_and_explains_a_line_captured_through_a_call(tmp_path):
    """The row of line 27 has its own colour, its title and the legend say what it means, and its note links the
    lines of the ops (on the same page: lines 18 and 22, named "line 18" there, as the file is the page's own)."""
    out = tmp_path / "out"
    report(torch213("inlined_helpers.log.gz"), out)
    (page,) = (out / "sources").glob("inlined_helpers.py_*.html")
    text = page.read_text()
    line = row(text, 27)
    assert 'class="src-line s-called"' in line and 'title="captured through a call' in line
    assert re.findall(r'<li class="n-call">.*?</li>', line, re.S) and 'href="#L18"' in line and 'href="#L22"' in line
    assert "captured through a call: the ops of the code it calls are at line 18, line 22 (graph [0/0])" in plain(line)
    assert '<span class="src-line s-called">captured through a call' in text
    assert 'class="src-line s-captured"' in row(text, 22) and 'href="#L18"' in row(text, 22)


def test_a_call_into_another_file_names_that_file(tmp_path):
    """hf_gpt2_generate: modeling_gpt2.py line 223 (`self.c_proj(attn_output)`) has its ops in pytorch_utils.py
    lines 119 and 120 (the kernel stacks end there): another file's lines, named with its file, unlike a line of the
    page's own file."""
    out = tmp_path / "out"
    report(cuda211(GPT2_GENERATE), out)
    (page,) = (out / "sources").glob("modeling_gpt2.py_*.html")
    (call,) = re.findall(r'<li class="n-call">.*?</li>', row(page.read_text(), 223), re.S)
    assert "the ops of the code it calls are at pytorch_utils.py:119, pytorch_utils.py:120 " in plain(call)

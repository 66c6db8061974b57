"""A line whose ops sit in a function it calls (a helper or library call Dynamo inlined) is captured through the call.

The graph dumps' `# File:` comments name only a node's innermost frame; the kernel stack traces
(`inductor_provenance_tracking_kernel_stack_traces`) hold the whole chain from the compiled frame inward, innermost
last. Where a log has none (backend="eager"), the guards on inlined functions' code say which line reached which
function. Expected lines are read from the programs and from the raw logs' stack traces, never from our own output.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

from compilescope.analyses.sources import LineNotes
from compilescope.analyses.sources.analysis import analyze_sources
from compilescope.analyses.sources.file_text import is_user_source
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, line_holding, report, torch213
from ..tracelog import raw_records
from .test_source_page import plain, row

GPT2_GENERATE = "hf_gpt2_generate.log.gz"
FUNC_NUMPY = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "func_numpy.py"
# An independent reading of the raw log: each stack trace of each kernel, as (file, line) frames, outermost first.
_STACKS_HEADER = re.compile(r'^V\d{4} .*"name": "inductor_provenance_tracking_kernel_stack_traces"')
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in ')


def _program_line(text: str) -> int:
    return line_holding(FUNC_NUMPY, text)


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


def _raw_text(log: Path) -> str:
    with gzip.open(log, "rt") as f:
        return f.read()


def _without_kernel_stacks(log: Path, out: Path) -> Path:
    """The log less its kernel stack traces (each artifact's envelope line and its tab-indented payload): as a
    backend without them (eager) logs it."""
    kept, skipping = [], False
    for line in _raw_text(log).splitlines(keepends=True):
        if line.startswith("\t"):
            if not skipping:
                kept.append(line)
            continue
        skipping = '"name": "inductor_provenance_tracking_kernel_stack_traces"' in line
        if not skipping:
            kept.append(line)
    out.write_text("".join(kept))
    return out


def test_where_no_kernel_stack_is_logged_the_guards_on_inlined_code_say_the_same_calls(tmp_path):
    """inlined_helpers.py's guards name each inlined function where its caller reached it: `G['scale_then_shift']
    .__code__` at line 27, `G['shift'].__code__` at line 22 (in scale_then_shift). The same log less its kernel stacks
    (what backend="eager" logs) gives line 27 and line 22 the calls the stacks gave (the first test's)."""
    raw = _raw_text(torch213("inlined_helpers.log.gz"))
    assert re.search(r"ID_MATCH: ___check_obj_id\(G\['scale_then_shift'\]\.__code__, \d+\).*inlined_helpers\.py:27 in f$",
                     raw, re.M)
    assert re.search(r"ID_MATCH: ___check_obj_id\(G\['shift'\]\.__code__, \d+\).*inlined_helpers\.py:22 in "
                     r"scale_then_shift$", raw, re.M)
    bare = _without_kernel_stacks(torch213("inlined_helpers.log.gz"), tmp_path / "bare.log")
    assert "kernel_stack_traces" in raw and "kernel_stack_traces" not in bare.read_text()
    notes = file_notes(bare, "inlined_helpers.py")
    assert notes[27].status == "called" and not notes[27].graphs
    assert sorted(calls(notes[27])) == [("inlined_helpers.py", 18, ["[0/0]"]), ("inlined_helpers.py", 22, ["[0/0]"])]
    assert calls(notes[22]) == [("inlined_helpers.py", 18, ["[0/0]"])] and notes[22].status == "captured"
    for own in (18, 28):
        assert not notes[own].calls


def _guard_at(raw: str, function: str, where: str) -> bool:
    """Whether a guard on the code of function sits at where (`func_numpy.py:32 in per_sample_grads`, torch's
    `eager_transforms.py:643 in jacrev`)."""
    return bool(re.search(rf"ID_MATCH: ___check_obj_id\(G\['{function}'\]\.__code__, \d+\).*{re.escape(where)}$", raw,
                          re.M))


def test_a_torch_func_transform_call_captured_whole_is_captured_through_the_call(tmp_path):
    """func_numpy.py (backend eager, no kernel stacks): per_sample_grads' line 32 `vmap(grad(sample_loss), ...)(p, xs,
    ys)` has no node of its own in [0/0] (torch.func's ops are placed in torch's files, no higher-order op), and its
    sample_loss's ops are on line 27, whose code Dynamo guarded from line 32. The fixed run's jacobian line 42
    `jacrev(energy)(x)` is captured whole in [1/0]: jacrev's code is guarded from line 42, energy's from jacrev (torch's
    eager_transforms.py:643), and energy's ops are on line 37. The program as written breaks inside jacrev: [1/0] is
    empty, and line 42 is a break, not a call."""
    line_32, line_27 = _program_line("return vmap(grad(sample_loss)"), _program_line("return ((functional_call(")
    line_42, line_37 = _program_line("return jacrev(energy)(x)"), _program_line("return (x ** 3).sum() * scale")
    raw = _raw_text(torch213("func_numpy.log.gz"))
    assert _guard_at(raw, "sample_loss", f"func_numpy.py:{line_32} in per_sample_grads")
    (graph,) = [p for e, p in raw_records(torch213("func_numpy.log.gz"))
                if "dynamo_output_graph" in e and (e["frame_id"], e["frame_compile_id"]) == (0, 0)]
    assert f"func_numpy.py:{line_27} in sample_loss, code:" in graph and "higher_order" not in graph
    assert not re.search(rf"# File: \S+func_numpy\.py:{line_32} ", graph)  # (no node of line 32's own)
    notes = file_notes(torch213("func_numpy.log.gz"), "func_numpy.py")
    assert notes[line_32].status == "called" and not notes[line_32].graphs
    assert calls(notes[line_32]) == [("func_numpy.py", line_27, ["[0/0]"])]
    assert notes[line_42].status == "break" and not notes[line_42].calls

    fixed_raw = _raw_text(torch213("func_numpy_fixed.log.gz"))
    assert _guard_at(fixed_raw, "jacrev", f"func_numpy.py:{line_42} in jacobian")
    assert _guard_at(fixed_raw, "energy", "_functorch/eager_transforms.py:643 in jacrev")
    assert f"func_numpy.py:{line_37} in energy, code:" in fixed_raw
    fixed = file_notes(torch213("func_numpy_fixed.log.gz"), "func_numpy.py")
    assert fixed[line_42].status == "called" and calls(fixed[line_42]) == [("func_numpy.py", line_37, ["[1/0]"])]

    out = tmp_path / "out"
    report(torch213("func_numpy.log.gz"), out)
    (page,) = (out / "sources").glob("func_numpy.py_*.html")
    line = row(page.read_text(), line_32)
    assert 'class="src-line s-called"' in line
    assert (f"captured through a call: the ops of the code it calls are at line {line_27} (graph [0/0])"
            in plain(line))


def test_a_function_called_from_two_lines_is_a_call_of_both(tmp_path):
    """hf_llama.log.gz (aot_eager, no kernel stacks): transformers' apply_rotary_pos_emb calls rotate_half on two lines,
    147 (`q_embed = (q * cos) + (rotate_half(q) * sin)`) and 148 (the same for k). Dynamo guards rotate_half's code
    once, at line 147, the first that reached it; but each graph holds rotate_half's ops (lines 121-123) twice per
    layer, each time between ops of the line that called it: after q * cos and before * sin on line 147, then after
    k * cos and before * sin on line 148. Both lines are calls of rotate_half."""
    raw = _raw_text(torch213("hf_llama.log.gz"))
    guards = re.findall(r"ID_MATCH: ___check_obj_id\(\S+\.rotate_half\.__code__, \d+\).*modeling_llama\.py:(\d+) in "
                        r"apply_rotary_pos_emb$", raw, re.M)
    assert set(guards) == {"147"}  # (one guard per compile, [0/0] to [0/4])
    graphs = [p for e, p in raw_records(torch213("hf_llama.log.gz")) if "dynamo_output_graph" in e]
    assert len(graphs) == 5
    for graph in graphs:
        order = [(int(m[1]), m[2]) for m in re.finditer(r"# File: \S+modeling_llama\.py:(\d+) in (\w+),", graph)]
        rope = [line for line, function in order if function in ("apply_rotary_pos_emb", "rotate_half")
                and line in (121, 122, 123, 147, 148)]
        one_layer = [147, 121, 122, 123, 147, 148, 121, 122, 123, 148]
        assert rope == one_layer * 2  # (2 layers)
    notes = file_notes(torch213("hf_llama.log.gz"), "modeling_llama.py")
    every = ["[0/0]", "[0/1]", "[0/2]", "[0/3]", "[0/4]"]
    rotate_half = [("modeling_llama.py", line, every) for line in (121, 122, 123)]
    assert sorted(calls(notes[147])) == rotate_half
    assert sorted(calls(notes[148])) == rotate_half
    for own in (121, 122, 123, 149):
        assert own not in notes or not notes[own].calls

"""An inference service whose requests vary (serve_varying.py): a Python bool that picks a path, a health check
called outside inference_mode, and recompiles late in the run up to recompile_limit. What compilescope says of each,
checked against the raw log and the program."""

from __future__ import annotations

import gzip
import json
import os
import re

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles.advice import ADVICE
from compilescope.analyses.recompiles.reasons import classify_change
from compilescope.ingest.reader import read_trace
from compilescope.wording import possessive

from ..conftest import torch213

PROGRAM = torch213("serve_varying.log.gz").parent.parent / "programs" / "serve_varying.py"


def _text(log: str = "serve_varying.log.gz") -> str:
    return gzip.open(torch213(log), "rt").read()


def _frame(log: str = "serve_varying.log.gz"):
    with read_trace(str(torch213(log))) as trace:
        ins = insights(trace)
    [frame] = ins.recompiles.frames
    return ins, frame


def _line(code: str) -> int:
    """The line of the program that holds code (once)."""
    [line] = [i for i, text in enumerate(PROGRAM.read_text().splitlines(), 1) if code in text]
    return line


def _step(frame, change: str):
    [step] = [s for s in frame.steps if s.guard is not None and s.guard.change == change]
    return step


def test_a_python_bool_that_picks_a_path_is_not_advised_to_be_made_dynamic():
    text = _text()
    branch = _line("if padded else None")
    # torch's reason for [0/3]: the bool's CONSTANT_MATCH, with the line that reads it.
    assert re.search(r'"0/2: padded == False +# mask = tokens != pad_token\(VOCAB\) if padded else None +# '
                     rf'[^"]*serve_varying\.py:{branch} in forward', text)
    assert classify_change("padded == False") == "flag"
    assert classify_change("n == 1") == "constant"  # an int's is still a number that automatic dynamic can take

    _, frame = _frame()
    step = _step(frame, "flag")
    assert (step.compile_id, step.guard.guard, step.guard.location.line) == ("[0/3]", "padded == False", branch)
    # Dynamo never makes a bool dynamic: "pass it as a tensor, or let it be dynamic" was the advice for a number.
    assert ADVICE["constant"] not in frame.advice
    [advice] = [a for a in frame.advice if a.startswith("padded is a Python bool")]
    assert f"serve_varying.py:{branch}" in advice and "never makes a bool dynamic" in advice


def test_a_grad_mode_change_is_told_apart_from_a_shape_one_and_placed_at_the_call_that_differs():
    text = _text()
    assert "GLOBAL_STATE changed: grad_mode" in text
    lines = [i for i, t in enumerate(PROGRAM.read_text().splitlines(), 1) if "return model(tokens, padded)" in t]
    health, served = lines  # the health check's call (no inference_mode), then the one under inference_mode
    assert "with torch.inference_mode():" in PROGRAM.read_text().splitlines()[served - 2]
    # Dynamo's stack for [0/4] comes through the health check's line; that of [0/1], whose guard failed, the other.
    starts = {(m[2], m[3]): json.loads(m[1]) for m in re.finditer(
        r'\{"dynamo_start": \{"stack": (\[.*?\])\}, "frame_id": (\d+), "frame_compile_id": (\d+)', text)}
    callers = {key: [f["line"] for f in stack if f["name"] == "handle"] for key, stack in starts.items()}
    assert callers[("0", "4")] == [health] and callers[("0", "1")] == [served]

    _, frame = _frame()
    step = _step(frame, "global_state")
    assert step.compile_id == "[0/4]" and step.guard.compile_id == "[0/1]"
    assert step.guard.location_kind == "state_call"
    assert (step.guard.location.function, step.guard.location.line) == ("handle", health)
    [advice] = [a for a in frame.advice if a.startswith("Calls run under a different grad mode")]
    assert (f"[0/4] was called from serve_varying.py:{health}" in advice
            and f"[0/1] from serve_varying.py:{served}" in advice)
    assert ADVICE["global_state"] not in frame.advice


def test_each_recompile_says_when_it_happened_and_the_limit_finding_says_when_it_was_hit():
    text = _text()
    # torch's own start time of each compile (seconds since the epoch) orders them as the chain does.
    starts = {m[1]: float(m[2]) for m in re.finditer(
        r'\{"compilation_metrics": \{"compile_id": "(0/\d)".*?"start_time": ([\d.]+)', text)}
    assert sorted(starts, key=starts.get) == ["0/0", "0/1", "0/2", "0/3", "0/4", "0/5"]

    ins, frame = _frame()
    assert [s.compile_id for s in frame.steps] == ["[0/1]", "[0/2]", "[0/3]", "[0/4]", "[0/5]"]
    assert [s.previous for s in frame.steps] == ["[0/0]", "[0/1]", "[0/2]", "[0/3]", "[0/4]"]
    times = [s.started_s for s in frame.steps]
    assert all(t is not None for t in times) and times == sorted(times)
    assert all(s.quiet_s is not None and s.quiet_s >= 0 and s.cost_s is not None for s in frame.steps)
    # Each recompile starts after the one before has ended: its start is at least that one's start plus its cost.
    for before, step in zip(frame.steps, frame.steps[1:]):
        assert step.started_s >= before.started_s + before.cost_s
    last = frame.steps[-1]
    assert last.failed and last.when_text.startswith("at ") and "after [0/4] was compiled" in last.when_text
    [limit] = [f for f in ins.findings if f.title == "forward hit the recompile limit and runs uncompiled"]
    assert limit.detail.endswith("hit " + last.when_text.split(";")[0])
    assert frame.to_json()["steps"][-1]["previous"] == "[0/4]"


def test_a_size_of_one_below_a_dynamic_range_is_torchs_0_1_specialization_not_a_branch_of_the_users_code():
    text = _text()
    # Request 60 has seq 1; [0/1] made dim 1 dynamic with the range [2, ...]: torch's comment says whose guard it is.
    reason = re.search(r'"0/1: (2 <= tokens\.size\(\)\[1\]) [^"]*due to 0/1 specialization in the framework', text)
    assert reason is not None
    assert re.search(r'"create_symbol": \{"symbol": "(s\d+)", "val": "24", "vr": "\[2, int_oo\]", '
                     r'"source": "L\[\'tokens\'\]\.size\(\)\[1\]"', text)

    _, frame = _frame()
    step = frame.steps[-1]
    assert (step.compile_id, step.failed, step.guard.guard, step.guard.change) == (
        "[0/5]", True, reason[1], "size_one")
    assert ADVICE["size_one"] in frame.advice and ADVICE["shape_guard"] not in frame.advice
    # The same guard text without torch's comment stays a guard of the user's code (a branch on the size, say).
    assert classify_change(reason[1]) == "shape_guard"


def _symbols(text: str) -> set[tuple[str, str, str]]:
    """(compile id, symbol, dim) of each size of tokens that a compile made a symbol of, from create_symbol."""
    return {(f"[0/{m[3]}]", m[1], m[2]) for m in re.finditer(
        r'"create_symbol": \{"symbol": "(s\d+)", "val": "\d+", "vr": "[^"]*", '
        r'"source": "L\[\'tokens\'\]\.size\(\)\[(\d)\]".*"frame_id": 0, "frame_compile_id": (\d+)', text)}


def test_a_name_that_ends_in_s_takes_an_apostrophe_alone():
    # The sizes of tokens that automatic dynamic made symbols of: [0/1] dim 1 (seq 24), [0/2] dim 0 (batch 4) too.
    assert {("[0/1]", "s27", "1"), ("[0/2]", "s52", "0")} <= _symbols(_text())
    assert _symbols(_text("serve_varying_fixed.log.gz")) == {("[0/1]", "s52", "0")}

    _, frame = _frame()
    assert frame.steps[0].dynamic_text == "[0/1] compiled tokens' dimension 1 as dynamic (s27)"
    assert frame.made_dynamic == ["tokens' dimension 1", "tokens' dimension 0"]
    ins, frame = _frame("serve_varying_fixed.log.gz")
    assert [s.dynamic_text for s in frame.steps] == ["[0/1] compiled tokens' dimension 0 as dynamic (s52)"]
    assert "forward recompiled once, then ran with tokens' dimension 0 dynamic" in [f.title for f in ins.findings]
    assert (possessive("x"), possessive("args[0]"), possessive("tokens")) == ("x's", "args[0]'s", "tokens'")


def test_the_0_1_specialization_guard_is_placed_on_the_users_line_not_torchs():
    text = _text()
    emb = _line("x = self.emb(tokens)")
    # torch's comment places [0/1]'s guard at torch's own line (F.embedding in nn/modules/sparse.py) and says it is
    # only the size's first use; [0/1]'s symbol of that size has the user's stack: its innermost user frame is emb.
    assert re.search(r'"0/1: 2 <= tokens\.size\(\)\[1\]  # return F\.embedding\(  # nn/modules/sparse\.py:\d+ in '
                     r'forward \(user code shown is first use of this value', text)
    made = re.search(r'"create_symbol": \{"symbol": "s27", "val": "24", "vr": "\[2, int_oo\]", '
                     r'"source": "L\[\'tokens\'\]\.size\(\)\[1\]", "user_stack": (\[.*?\]), "stack".*'
                     r'"frame_id": 0, "frame_compile_id": 1,', text)
    assert made is not None
    assert [(f["line"], f["name"]) for f in json.loads(made[1])] == [(emb, "forward"), (189, "forward")]

    _, frame = _frame()
    guards = [g for s in frame.steps for g in s.failed_guards if g.change == "size_one"]
    # [0/1]'s guard (failed by [0/5], the seq of 1) and [0/2]'s (on dim 0, tried by [0/3]... as older entries)
    assert {g.guard for g in guards} == {"2 <= tokens.size()[1]", "2 <= tokens.size()[0]"}
    for g in guards:
        assert (os.path.basename(g.location.filename), g.location.line, g.location.code) == (
            "serve_varying.py", emb, "x = self.emb(tokens)")
        assert g.location_label == "tokens first used at"
    assert frame.steps[-1].guard.location.line == emb


def test_a_dimension_marked_dynamic_at_size_1_is_told_torch_kept_it_static_not_advised_to_be_marked():
    text = _text("serve_varying_fixed.log.gz")
    program = PROGRAM.read_text()
    assert "torch._dynamo.mark_dynamic(bucket, 0)" in program and "return model(bucket, True)" in program
    # [0/0] saw tokens (the program's bucket) marked dynamic at dim 0, with size 1 there: its fake tensor...
    assert re.search(r'"describe_tensor": \{"id": 0, "ndim": 2, "dtype": "torch\.int64", [^{}]*"size": \[1, 32\], '
                     r'"dynamo_dynamic_indices": \[0\],.*"frame_id": 0, "frame_compile_id": 0,', text)
    assert '{"describe_source": {"describer_id": 0, "id": 0, "source": "L[\'tokens\']"}, "frame_id": 0, ' \
           '"frame_compile_id": 0,' in text
    # ...and its guards: the mark, and a static size 1 (no symbol: torch's 0/1 specialization kept it).
    [tree] = re.findall(r'\{"dynamo_cpp_guards_str": \{\}, "frame_id": 0, "frame_compile_id": 0,[^\n]*\n((?:\t[^\n]*\n)+)',
                        text)
    assert ("DIMENSION_DYNAMIC_MARKING_GUARD: ((getattr(L['tokens'], '_dynamo_dynamic_indices', set())"
            ".issubset({0}))") in tree
    assert "check_tensor(L['tokens'], Tensor, " in tree and "size=[1, 32]" in tree
    assert not any(cid == "[0/0]" for cid, _, _ in _symbols(text))
    assert "0/0: tensor 'tokens' size mismatch at index 0. expected 1, actual 4" in text

    _, frame = _frame("serve_varying_fixed.log.gz")
    [step] = frame.steps
    assert (step.compile_id, step.guard.compile_id, step.guard.marked) == ("[0/1]", "[0/0]", "torch._dynamo.mark_dynamic")
    # The user marked it already: "mark it dynamic with mark_dynamic(tokens, 0)" was no advice.
    assert not any("mark_dynamic(tokens, 0)" in a for a in frame.advice)
    assert ADVICE["size"] not in frame.advice
    [advice] = frame.advice
    assert advice.startswith("tokens' dimension 0 was marked dynamic (torch._dynamo.mark_dynamic), yet the call that "
                             "compiled [0/0] had size 1 there")
    assert "0/1 specialization" in advice and "kept the dimension static" in advice
    assert "size of 2 or more" in advice and "torch._dynamo.decorators.mark_unbacked(tokens, 0)" in advice
    assert "torch.fx.experimental._config.backed_size_oblivious = True" in advice

    # The run that marked nothing is told to mark its sizes by name (`model(tokens, padded)`, line 74): both of
    # tokens' in one call, its dimensions sorted (mark_dynamic takes a list); it said mark_dynamic(tokens, 1) and
    # mark_dynamic(tokens, 0).
    _, unmarked = _frame()
    assert not any(g.marked for s in unmarked.steps for g in s.failed_guards)
    assert any("dimensions dynamic: `torch._dynamo.mark_dynamic(tokens, [0, 1])`, or" in a for a in unmarked.advice)
    assert not any("mark_dynamic(tokens, 1)" in a for a in unmarked.advice)


def test_the_settled_finding_says_the_marked_size_was_1_which_torch_keeps_static():
    # serve_varying_fixed: [0/0]'s tokens were marked dynamic at dim 0 (describe_tensor "dynamo_dynamic_indices": [0])
    # with size 1 there ("size": [1, 32]), and [0/1]'s recompile reason is "0/0: tensor 'tokens' size mismatch at
    # index 0. expected 1, actual 4": torch specialized the 1 (ShapeEnv.create_symbol returns the constant), so one
    # recompile, after which s52 is tokens' dim 0 (the settled INFO finding).
    text = _text("serve_varying_fixed.log.gz")
    assert re.search(r'"size": \[1, 32\], "dynamo_dynamic_indices": \[0\],', text)
    assert "0/0: tensor 'tokens' size mismatch at index 0. expected 1, actual 4" in text
    ins, frame = _frame("serve_varying_fixed.log.gz")
    [step] = frame.steps
    assert (step.guard.marked, step.guard.marked_size) == ("torch._dynamo.mark_dynamic", "1")
    [finding] = [f for f in ins.findings if f.section == "recompiles"]
    assert (finding.severity, finding.title) == ("info", "forward recompiled once, then ran with tokens' dimension 0 "
                                                          "dynamic")
    assert finding.detail.startswith("tokens' dimension 0 was marked dynamic at size 1, which torch keeps static (its "
                                     "0/1 specialization); failed guard: tensor 'tokens' size mismatch at index 0. "
                                     "expected 1, actual 4")
    # The run that marked nothing: its sizes recompiled up to the limit, not settled, and no mark is claimed.
    unmarked, _ = _frame()
    assert not any("was marked dynamic" in f.detail for f in unmarked.findings)

"""A model that branches on tensor values (data_dependent.py), its torch.cond/torch._check rewrite and the errors met
on the way. What compilescope says of each, checked against the raw logs and the program."""

from __future__ import annotations

import gzip
import io
import re

from rich.console import Console

from compilescope.analyses.compile_errors import COND_BRANCHES_STEP, compile_errors
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.render.terminal import print_summary

from ..conftest import torch213

PROGRAM = torch213("data_dependent.log.gz").parent.parent / "programs" / "data_dependent.py"


def _text(log: str) -> str:
    return gzip.open(torch213(log), "rt").read()


def _line(code: str) -> int:
    """The line of the program that holds code (once)."""
    [line] = [i for i, text in enumerate(PROGRAM.read_text().splitlines(), 1) if code in text]
    return line


def _in_gate(code: str) -> int:
    """The line of Gate.forward (the model before its rewrite, which GateRewritten repeats lines of) that holds code."""
    return min(i for i, text in enumerate(PROGRAM.read_text().splitlines(), 1) if code in text)


def _errors():
    with read_trace(str(torch213("data_dependent_pitfalls.log.gz"))) as trace:
        return {e.compile_id: e for e in compile_errors(trace).errors}


def _frames():
    with read_trace(str(torch213("data_dependent.log.gz"))) as trace:
        ins = insights(trace)
    return ins, {f.name: f for f in ins.recompiles.frames}


def test_a_guard_on_an_unbacked_value_names_where_the_value_came_from_and_the_check_to_add():
    text = _text("data_dependent_pitfalls.log.gz")
    loop, item = _line("def halve_while") + 2, _line("n = (h > 0).sum().item()")
    assert PROGRAM.read_text().splitlines()[loop - 1].strip() == "while n > 0:" and item == loop - 1
    # torch's error names only the symbol; the symbol's own event has the user's line that made it.
    assert "Could not guard on data-dependent expression u0 > 0 (unhinted: u0 > 0)" in text
    assert re.search(rf'"create_unbacked_symbol": {{"symbol": "u0", [^\n]*"user_stack": \[{{"line": {item}, '
                     r'"name": "halve_while", "filename": \d+, "loc": "n = \(h > 0\)\.sum\(\)\.item\(\)"}\]', text)

    error = _errors()["[1/0]"]
    assert (error.exception, error.location.line) == ("UserError", loop)
    said, check, either = error.next_steps[:3]
    assert "whether u0 > 0 holds at data_dependent.py:%d (`while n > 0:`)" % loop in said
    assert f"u0 is the value read from a tensor at data_dependent.py:{item} (`n = (h > 0).sum().item()`)" in said
    # The check in the user's variable: the line assigned u0 to n.
    assert "torch._check(n > 0)" in check
    # Without fullgraph=True the same loop is a graph break (checked by hand): a rewrite, or letting it break.
    assert "torch.cond" in either and "drop fullgraph=True" in either
    # Not the steps for code Dynamo cannot trace: it traced it; the value is what it cannot know.
    assert not any(s.startswith("Dynamo could not trace this code") for s in error.next_steps)


def test_a_torch_cond_whose_branches_disagree_says_what_torch_cond_raised():
    text = _text("data_dependent_pitfalls.log.gz")
    # Dynamo's headline is generic; the error torch.cond raised is in its explanation only.
    assert '"fail_reason": "RuntimeError when making fake tensor call\\n' in text
    assert ("got RuntimeError(\\\"When merging two branches' output in torch.cond,  expected same dim but got 1 "
            "and 2.\\\")") in text

    error = _errors()["[2/0]"]
    assert error.exception == "TorchRuntimeError"
    assert error.message == ("RuntimeError when making fake tensor call: When merging two branches' output in "
                             "torch.cond, expected same dim but got 1 and 2.")
    assert error.location.line == _line("def mismatched") + 1
    assert error.next_steps[0] == COND_BRANCHES_STEP
    assert not any(s.startswith("Dynamo could not trace this code") for s in error.next_steps)
    # A graph-break error under fullgraph=True keeps its own steps.
    assert _errors()["[0/0]"].next_steps[0].startswith("fullgraph=True makes every graph break an error")


def test_a_loop_count_made_dynamic_and_specialized_again_is_not_called_settled():
    text = _text("data_dependent.log.gz")
    loop = _line("        while n > 0:")
    item = _in_gate("n = (x.abs() > 1).sum().item()")
    # [2/1] recompiled for the count, made it a symbol, and the loop on it fixed it again; so [2/2] recompiled.
    assert re.search(rf'"2/0: ___stack0 == 8 +# while n > 0: +# [^"]*data_dependent\.py:{loop} ', text)
    assert re.search(rf'"2/1: ___stack0 == 11 +# while n > 0: +# [^"]*data_dependent\.py:{loop} ', text)
    assert re.search(r'"symbolic_shape_specialization": \{"symbol": "s2", "sources": \["L\[\'___stack0\'\]"\], '
                     r'"value": "11", "reason": "range_refined_to_singleton"', text)

    ins, frames = _frames()
    frame = frames[f"torch_dynamo_resume_in_forward_at_{item}"]
    assert [s.compile_id for s in frame.steps] == ["[2/1_1]", "[2/2_1]"]
    assert frame.steps[1].specialized.location.line == loop
    assert not frame.settled
    [advice] = frame.advice
    assert "automatic dynamic" in advice and "none while it keeps changing" not in advice
    assert f"[2/1] specialized it again at data_dependent.py:{loop} (`while n > 0:`)" in advice
    assert "dynamic=True does not help" in advice and "capture_scalar_outputs = True" in advice
    # The insight is a warning, not "then ran with it dynamic".
    [finding] = [f for f in ins.findings if f.title.startswith(f"forward (after its graph break at line {item})")]
    assert finding.severity == "warning" and "dynamic" not in finding.title


def test_a_size_of_a_value_past_a_graph_break_is_not_advised_to_be_marked_dynamic_by_dynamos_name():
    text = _text("data_dependent.log.gz")
    mask = _in_gate("keep = h[h > 0]")
    assert "3/0: tensor '___stack0' size mismatch at index 0. expected 17, actual 16" in text

    _, frames = _frames()
    frame = frames[f"torch_dynamo_resume_in_forward_at_{mask}"]
    [advice] = frame.advice
    assert "___stack0" not in advice and "mark_dynamic" not in advice
    assert f"graph break at data_dependent.py:{mask} (`keep = h[h > 0]`)" in advice
    assert "remove that graph break" in advice


def test_the_recompile_that_made_a_size_past_a_graph_break_dynamic_names_the_value_not_dynamos_name():
    text = _text("data_dependent.log.gz")
    mask = _in_gate("keep = h[h > 0]")
    # [3/1] made dimension 0 of the resume function's ___stack0 (keep's mask result, made before the break) s38.
    assert re.search(r'"create_symbol": \{"symbol": "s38", [^\n]*"source": "L\[\'___stack0\'\]\.size\(\)\[0\]"', text)

    _, frames = _frames()
    [step] = frames[f"torch_dynamo_resume_in_forward_at_{mask}"].steps
    assert step.dynamic_text == (f"[3/1] compiled dimension 0 of the value on the stack at line {mask}'s graph break "
                                 "as dynamic (s38)")
    assert step.guard.location_label == f"the value on the stack at line {mask}'s graph break first used at"


def test_summary_shows_every_hint_of_a_data_dependent_branch_the_torch_cond_one_too():
    text = _text("data_dependent.log.gz")
    branch = _line("        if h.sum() > 0:")
    # torch's three hints for line 28, in its order: the fix it names last (torch.cond) is what the rewrite used.
    hints = re.findall(r"^\t  Hint: (.*)$", text.split(f"data_dependent.py:{branch}\n", 1)[1], re.M)[:3]
    assert hints[0].startswith("For the common pattern `if tensor_cond: x = transform(x)`")
    assert hints[1].startswith("This graph break is fundamental")
    assert hints[2] == "Use `torch.cond` to express dynamic control flow."

    ins, _ = _frames()
    console = Console(width=400, color_system=None, record=True, file=io.StringIO())
    print_summary(ins, console)
    shown = console.export_text()
    block = shown[shown.index(f"data_dependent.py:{branch} in forward  ·  1 time"):]
    block = block[:block.index("ran eagerly")]
    assert [line.strip()[len("hint: "):] for line in block.splitlines() if line.strip().startswith("hint: ")] == hints


def _rewritten_shapes():
    with read_trace(str(torch213("data_dependent_rewritten.log.gz"))) as trace:
        return insights(trace).dynamic_shapes


def test_the_unbacked_symbols_aotautograd_made_again_are_folded_into_the_ones_dynamo_made():
    text = _text("data_dependent_rewritten.log.gz")
    item, mask = _line("    torch._check(n >= 0)") - 1, _line("    torch._check(n <= x.numel())") + 2
    made = {m[0]: m for m in re.findall(r'"create_unbacked_symbol": \{"symbol": "(u\d)", [^\n]*?"user_stack": '
                                        r'(\[[^\]]*\])[^\n]*"name": "(\w+)", "filename": \d+, "loc": "[^"]*"\}\]\}',
                                        text)}
    # Dynamo made u0 (.item(), local_scalar_dense) and u1 (the mask's nonzero) at the user's lines; AOTAutograd's two
    # passes made u2-u5 with no user line, by the same ops in the same order; its graphs name only u0 and u1.
    assert f'"line": {item},' in made["u0"][1] and f'"line": {mask},' in made["u1"][1]
    assert [(s, made[s][1], made[s][2]) for s in ("u2", "u3", "u4", "u5")] == [
        ("u2", "[]", "local_scalar_dense"), ("u3", "[]", "nonzero"), ("u4", "[]", "local_scalar_dense"),
        ("u5", "[]", "nonzero")]
    assert (made["u0"][2], made["u1"][2]) == ("local_scalar_dense", "nonzero")
    assert not re.search(r'Sym\(u[2-5]\)', text) and 'Sym(u0)" = torch.ops.aten._local_scalar_dense' in text

    ds = _rewritten_shapes()
    assert {s.symbol: s.retrace_of for s in ds.symbols} == {"u0": None, "u1": None, "u2": "u0", "u3": "u1",
                                                             "u4": "u0", "u5": "u1"}
    [u0, u1] = ds.sizes
    assert [s.symbol for s in u0.symbols] == ["u0", "u2", "u4"] and u0.location.line == item
    assert [s.symbol for s in u1.symbols] == ["u1", "u3", "u5"] and u1.location.line == mask
    assert "location not in log" not in u0.symbols_text and "u2, u4" in u0.symbols_text


def test_an_unbacked_symbol_reads_the_range_its_checks_give_and_the_checks_are_runtime_asserts():
    text = _text("data_dependent_rewritten.log.gz")
    # torch logs u0 unbounded at creation; torch._check(n >= 0) and torch._check(n <= x.numel()) (x is 4 x 8) bound it.
    assert re.search(r'"create_unbacked_symbol": \{"symbol": "u0", [^\n]*"vr": "\[-int_oo, int_oo\]"', text)
    assert '"guard_added_fast": {"expr": "u0 >= 0"' in text and '"guard_added_fast": {"expr": "u0 <= 32"' in text
    # They are asserts in the graph, tested as it runs, not guards of the compiled frame.
    assert 'Runtime assertion failed for expression u0 >= 0' in text
    assert 'Runtime assertion failed for expression u0 <= 32' in text

    ds = _rewritten_shapes()
    u0 = ds.symbols[0]
    assert (u0.symbol, u0.checked_range, u0.range_text) == ("u0", "[0, 32]", "0 to 32, by its runtime asserts")
    assert ds.symbols[1].checked_range is None  # u1: no check of the user's bounds it in the log
    places = [p for p in ds.guard_lines]
    assert [(p.location.line, [c.expr for c in p.conditions], p.runtime_asserts) for p in places] == [
        (_line("    torch._check(n >= 0)"), ["u0 >= 0"], True), (_line("    torch._check(n <= x.numel())"), ["u0 <= 32"], True)]
    assert ds.counts == "2 values, 2 runtime asserts"


def test_an_item_value_specialized_by_a_loop_is_called_a_value_not_a_size():
    text = _text("data_dependent.log.gz")
    item = _in_gate("n = (x.abs() > 1).sum().item()")
    # s2 is the count read with .item() at the break and passed on past it (___stack0), fixed by the loop on it in
    # the two compiles of the frame after the break (2/1 at 11, 2/2 at 12; each compiled again after a restart).
    specs = re.findall(r'"symbolic_shape_specialization": \{"symbol": "(s\d+)", "sources": \["L\[\'___stack0\'\]"\], '
                       r'"value": "(\d+)"', text)
    assert specs == [("s2", "11"), ("s2", "11"), ("s2", "12"), ("s2", "12")]
    assert re.search(r'"create_symbol": \{"symbol": "s2", [^\n]*"source": "L\[\'___stack0\'\]"', text)

    ins, _ = _frames()
    [spec] = ins.dynamic_shapes.specialized
    assert spec.kind == "value" and spec.to_json()["kind"] == "value"
    assert spec.sources_shown[0].startswith(f"the value of `(x.abs() > 1).sum().item()` (data_dependent.py:{item})")
    [finding] = [f for f in ins.findings if "specialized to a constant" in f.title]
    assert finding.title == "1 dynamic value specialized to a constant (2 compilations)"
    # (named as the program wrote it: "s2" alone is a name only torch's records use)
    assert finding.detail == f"{spec.sources_shown[0]} (s2) = 11, 12"


def test_the_value_past_a_graph_break_is_named_alike_in_the_step_the_failed_guard_and_the_sizes():
    """[3/1]'s changed size is of ___stack0 (keep's mask result, made before the break at line 36, no call's result):
    the step names it briefly, the failed guard and the Dynamic shapes size at length, the long form being the short
    one with its detail after it, so that a reader sees one value."""
    text = _text("data_dependent.log.gz")
    mask = _in_gate("keep = h[h > 0]")
    assert re.search(r'"create_symbol": \{"symbol": "s38", [^\n]*"source": "L\[\'___stack0\'\]\.size\(\)\[0\]"', text)

    ins, frames = _frames()
    [step] = frames[f"torch_dynamo_resume_in_forward_at_{mask}"].steps
    name = f"the value on the stack at line {mask}'s graph break"
    assert step.dynamic_of == f"dimension 0 of {name}"
    [at_length] = step.guard.names.values()
    assert at_length.startswith(f"{name} (") and "`keep = h[h > 0]`" in at_length
    [size] = {s.source_text for s in ins.dynamic_shapes.symbols if s.symbol == "s38"}
    assert size == f"`size()[0]` of {at_length}"

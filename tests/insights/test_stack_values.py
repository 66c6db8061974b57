"""A value Dynamo passed on past a graph break (a resume function's argument L['___stack0']) is named by the user's
expression, with Dynamo's name kept beside it.

item_break.log.gz (tests/data/torch213/programs/item_break.py): `scale = loss.item()` breaks the graph; the float is
the resume function's ___stack0, made a symbol (zf2) when [1/1] recompiles. Every expected value is read from the raw
log: the create_symbol record, the graph break's user traceback and its carets, the resume function's logged bytecode.
"""

from __future__ import annotations

import gzip
import html
import json
import re

from compilescope.analyses.stack_values import StackValues
from compilescope.ingest.reader import read_trace

from ..conftest import TORCH213_LOGS, run_cli, torch213, torch214

LOG = torch213("item_break.log.gz")
STEADY = torch213("item_break_steady.log.gz")


def _raw(log) -> str:
    return gzip.open(log, "rt", encoding="utf-8").read()


def _records(text: str, kind: str) -> list[dict]:
    return [json.loads(line.split("] ", 1)[1]) for line in text.splitlines()
            if not line.startswith("\t") and f'{{"{kind}": ' in line]


def _marked_call(text: str, line: int) -> tuple[str, str]:
    """(the code, the text from where the carets under it start) of the user traceback's frame at `line`."""
    rows = [r[1:] for r in text.split("User code traceback:", 1)[1].splitlines()]
    at = next(i for i, r in enumerate(rows) if r.strip().startswith("File ") and f", line {line}, in " in r)
    code, carets = rows[at + 1], rows[at + 2]
    assert set(carets.strip()) == {"^"}
    return code.strip(), code[len(carets) - len(carets.lstrip()):]


def _expected_text() -> str:
    """What the raw log says the value is: the call the graph break's carets mark, at the line the break names."""
    text = _raw(LOG)
    (symbol,) = _records(text, "create_symbol")
    assert symbol["create_symbol"]["source"] == "L['___stack0']"
    assert (symbol["frame_id"], symbol["frame_compile_id"]) == (1, 1)
    metrics = {(r["frame_id"], r["frame_compile_id"]): r["compilation_metrics"]["co_name"]
               for r in _records(text, "compilation_metrics")}
    assert metrics[(1, 1)] == "torch_dynamo_resume_in_train_step_at_19"
    # The resume function's bytecode loads one stack value: ___stack0 is the last, the result of the broken call.
    bytecode = text.split('"name": "torch_dynamo_resume_in_train_step_at_19_ORIGINAL_BYTECODE"', 1)[1].split("\nV", 1)[0]
    assert set(re.findall(r"___stack\d+", bytecode)) == {"___stack0"}
    reason = text.split('"name": "dynamo_graph_break_reason"', 1)[1].split("\nV", 1)[0]
    assert "Graph break in user code at " in reason and "item_break.py:19\n" in reason
    assert "attempting to trace CALL" in reason
    code, marked = _marked_call(reason, 19)
    program = (TORCH213_LOGS.parent / "programs" / "item_break.py").read_text().splitlines()
    assert program[18].strip() == code == "scale = loss.item()"
    assert marked == "loss.item()"  # (here the carets end at the line's end, where the call ends)
    return f"the value of `{marked}` (item_break.py:19), passed on past the graph break"


def _summary_json(capsys, log) -> dict:
    assert run_cli("summary", "--json", log) == 0
    return json.loads(capsys.readouterr().out)


def test_the_dynamic_value_is_named_by_the_call_that_made_it(capsys):
    expected = _expected_text()
    ds = _summary_json(capsys, LOG)["dynamic_shapes"]
    assert [(s["source"], s["source_text"], s["compile_id"]) for s in ds["symbols"]] == [
        ("L['___stack0']", expected, "[1/1]")]
    assert [(z["source"], z["source_text"]) for z in ds["sizes"]] == [("L['___stack0']", expected)]


def test_summary_says_the_expression_not_dynamos_name(capsys):
    expected = _expected_text()
    assert run_cli("summary", LOG) == 0
    out = capsys.readouterr().out
    section = " ".join(out.split("Dynamic shapes", 1)[1].split())
    assert expected in section
    assert "___stack0" not in section


def test_the_report_says_it_and_keeps_dynamos_name_in_the_title(tmp_path):
    expected = _expected_text()
    assert run_cli(LOG, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    # (the call in backticks shown as code)
    in_code = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(expected))
    assert "<code>loss.item()</code>" in in_code
    shown = ("<span class=\"dynamo-source\" title=\"Dynamo's name for it: L[&#39;___stack0&#39;]\">"
             f"{in_code}</span>")
    assert page.count(shown) == 2  # the dynamic values' list and the table of each event
    assert "<code>L[&#39;___stack0&#39;]</code>" not in page


def test_diff_says_the_new_symbol_by_its_expression(capsys):
    """The steady run's float never changed: the raw log has no create_symbol, so B's symbol is new."""
    assert _records(_raw(STEADY), "create_symbol") == []
    expected = _expected_text()
    assert run_cli("diff", "--json", STEADY, LOG) == 1  # (changes found)
    (compared,) = json.loads(capsys.readouterr().out)["ranks"]
    changes = [c for c in compared["changes"] if c["section"] == "dynamic_shapes"]
    assert [(c["kind"], c["b"]["source"], c["b"]["source_text"]) for c in changes] == [
        ("added", "L['___stack0']", expected)]
    assert changes[0]["title"].startswith(f"new dynamic symbol for {expected} (")


def test_a_source_the_user_wrote_is_not_described():
    with read_trace(str(LOG)) as trace:
        values = StackValues(trace)
        resumed = next(c for c in trace.sorted_compiles() if c.key == "[1/1]")
        assert values.describe(resumed, "L['w']") is None
        first = next(c for c in trace.sorted_compiles() if c.key == "[0/0]")
        assert values.describe(first, "L['___stack0']") is None  # train_step itself is no resume function


def test_the_call_ends_where_its_parentheses_close_not_where_the_carets_do():
    """torch 2.14's graph_breaks.log: line 28's carets run on under the comment after `y.sum().item()`; [3/0] is the
    resume function after it, whose bytecode loads ___stack0 only."""
    log = torch214("graph_breaks.log")
    text = _raw(log)
    reason = next(r for r in text.split('"name": "dynamo_graph_break_reason"')[1:] if "graph_breaks.py:28\n" in r)
    code, marked = _marked_call(reason.split("\nV", 1)[0], 28)
    assert marked == "y.sum().item()  # graph break 3: .item()"
    with read_trace(str(log)) as trace:
        resumed = next(c for c in trace.sorted_compiles() if c.key == "[3/0]")
        assert values_text(trace, resumed) == (
            "the value of `y.sum().item()` (graph_breaks.py:28), passed on past the graph break")


def values_text(trace, entry) -> str | None:
    return StackValues(trace).describe(entry, "L['___stack0']")


def test_a_call_inside_a_tuple_is_the_call_alone():
    """lambda_break.log.gz: the lambda's line 17 breaks at `torch._dynamo.graph_break()`, the first item of a tuple;
    the carets start there and run to the line's end."""
    log = torch213("lambda_break.log.gz")
    reason = next(r for r in _raw(log).split('"name": "dynamo_graph_break_reason"')[1:] if "lambda_break.py:17\n" in r)
    _, marked = _marked_call(reason.split("\nV", 1)[0], 17)
    assert marked.startswith("torch._dynamo.graph_break(), t.sin() + 1)[1]")
    with read_trace(str(log)) as trace:
        resumed = next(c for c in trace.sorted_compiles() if c.key == "[1/0]")
        assert values_text(trace, resumed) == (
            "the value of `torch._dynamo.graph_break()` (lambda_break.py:17), passed on past the graph break")


def test_a_value_below_the_top_of_the_stack_is_named_by_its_line():
    """compiled_optimizer.log.gz's [3/0] resumes torch's optimizer.py after line 530 (`out = func(*args, **kwargs)`)
    with two stack values (its bytecode loads ___stack0 and ___stack1): the first is no call's result, so only the line
    names it."""
    log = torch213("compiled_optimizer.log.gz")
    text = _raw(log)
    with read_trace(str(log)) as trace:
        resumed = next(c for c in trace.sorted_compiles() if c.key == "[3/0]")
        name = resumed.metrics["co_name"]
        bytecode = text.split(f'"name": "{name}_ORIGINAL_BYTECODE"', 1)[1].split("\nV", 1)[0]
        assert set(re.findall(r"___stack\d+", bytecode)) == {"___stack0", "___stack1"}
        assert name.endswith("_at_530")
        assert re.search(r'File "[^"]*/torch/optim/optimizer.py", line 530, in \w+\n\t\s+out = func\(\*args, \*\*kwargs\)\n', text)
        assert values_text(trace, resumed) == ("the value on the stack at line 530's graph break "
                                               "(`out = func(*args, **kwargs)` in optimizer.py), passed on past it")


def test_the_recompile_that_made_it_dynamic_names_the_expression(capsys):
    """[1/1] recompiled because [1/0]'s guard on ___stack0 (the float, specialized) failed, and made it zf2."""
    text = _raw(LOG)
    reasons = text.split('"name": "recompile_reasons"', 1)[1].split("\nV", 1)[0]
    assert "1/0: ___stack0 == " in reasons
    (symbol,) = _records(text, "create_symbol")
    assert symbol["create_symbol"]["symbol"] == "zf2"
    assert run_cli("summary", LOG) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "[1/1] compiled the value of `loss.item()` as dynamic (zf2)" in out
    assert "recompiled once, then ran with the value of `loss.item()` dynamic" in out
    assert "torch compiled the value of `loss.item()` as dynamic once it changed" in out
    assert "compiled ___stack0" not in out and "with ___stack0 dynamic" not in out


def _failed_guard() -> str:
    """The guard torch wrote that [1/0] failed, from the raw recompile_reasons (one reason: torch logs the bare
    string, its first line the guard, then its comment)."""
    reasons = _raw(LOG).split('"name": "recompile_reasons"', 1)[1].split("\nV", 1)[0]
    first = reasons.splitlines()[1][1:]
    assert first.startswith("1/0: ___stack0 == ")
    return first.removeprefix("1/0: ").split("  #", 1)[0].strip()


def test_the_failed_guard_names_the_value_as_the_dynamic_shapes_do(capsys, tmp_path):
    guard = _failed_guard()
    assert guard == "___stack0 == -1.3068742752075195"
    in_words = guard.replace("___stack0", _expected_text() + ",")
    # --json keeps torch's text and gives the words beside it.
    doc = _summary_json(capsys, LOG)
    (failed,) = [g for f in doc["recompiles"]["frames"] for s in f["steps"] for g in s["failed_guards"]]
    assert (failed["guard"], failed["described"]) == (guard, in_words)
    # summary: the recompiles section and the finding say the value, not Dynamo's name.
    assert run_cli("summary", LOG) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert f"failed guard of [1/0]: {in_words}" in out
    assert f"failed guard: {in_words}" in out
    assert "___stack0" not in out
    # The report: the words, torch's text in the title.
    assert run_cli(LOG, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert f'<code title="{html.escape(guard)}">{html.escape(in_words)}</code>' in page
    capsys.readouterr()
    # diff and check: the steady run never recompiled (its raw log has no recompile_reasons).
    assert '"recompile_reasons"' not in _raw(STEADY)
    assert run_cli("diff", "--json", STEADY, LOG) == 1
    (compared,) = json.loads(capsys.readouterr().out)["ranks"]
    (change,) = [c for c in compared["changes"] if c["section"] == "recompiles"]
    assert change["detail"]["new_guard_failures"] == [guard] and change["detail"]["guard_words"] == {guard: in_words}
    assert run_cli("diff", STEADY, LOG) == 1
    assert f"new failing guard: {in_words}" in " ".join(capsys.readouterr().out.split())
    assert run_cli("diff", STEADY, LOG, "-o", tmp_path / "diff", "--no-browser") == 1
    capsys.readouterr()
    diff_page = (tmp_path / "diff" / "index.html").read_text(encoding="utf-8")
    assert f'<code title="{html.escape(guard)}">{html.escape(in_words)}</code>' in diff_page
    assert run_cli("check", "--baseline", STEADY, LOG) == 1
    assert f"1 of them failing {in_words} (Python constant)" in capsys.readouterr().out


def test_the_source_page_names_the_failed_guard_as_the_recompiles_view_does(tmp_path):
    # The raw reason: torch's guard, whose comment and user stack place it at item_break.py:20 ("return w * scale").
    guard = _failed_guard()
    reason = _raw(LOG).split('"name": "recompile_reasons"', 1)[1].split("\nV", 1)[0]
    assert 'item_break.py", line 20, in torch_dynamo_resume_in_train_step_at_19' in reason
    in_words = guard.replace("___stack0", _expected_text() + ",")
    out = tmp_path / "out"
    assert run_cli(LOG, "-o", out, "--no-browser") == 0
    (page,) = (out / "sources").glob("item_break.py_*.html")
    row = re.search(r'<div class="src-line[^"]*" id="L20".*?</ul></div>', page.read_text(encoding="utf-8"), re.S)[0]
    assert f'failed: <code title="{html.escape(guard)}">{html.escape(in_words)}</code>' in row
    assert f"failed: {html.escape(in_words)}" in row  # the line's badge says it so too
    (note,) = re.findall(r'<li class="n-guard">.*?</li>', row)
    assert "___stack0" not in note.replace(f'title="{html.escape(guard)}"', "")
    # sources.json keeps torch's text, the words beside it.
    notes = json.loads((out / "sources.json").read_text())
    found = []

    def walk(value):
        if isinstance(value, dict):
            if "recompile" in value:
                found.append(value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(notes)
    assert [(f["recompile"], f["guard"], f["described"]) for f in found] == [("[1/1]", guard, in_words)]


def test_a_rank_that_recompiled_on_the_value_is_told_in_words(tmp_path, capsys):
    # Two ranks of the same program: rank 0's log is item_break_steady (no recompile_reasons: the value never changed),
    # rank 1's item_break, whose [1/1] recompiled on ___stack0. The compile-id divergence gives rank 1's reason.
    assert '"recompile_reasons"' not in _raw(STEADY)
    guard = _failed_guard()
    in_words = guard.replace("___stack0", _expected_text() + ",")
    job = tmp_path / "job"
    job.mkdir()
    for rank, log in enumerate((STEADY, LOG)):
        (job / f"dedicated_log_torch_trace_rank_{rank}.log.gz").write_bytes(log.read_bytes())
    assert run_cli("summary", "--json", job) == 0
    doc = json.loads(capsys.readouterr().out)
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert ranks[1]["recompile_reasons"] == {"[1/1]": guard}  # torch's text
    assert ranks[1]["recompile_reasons_described"] == {"[1/1]": in_words}
    (divergence,) = [d for d in doc["analysis"]["divergences"] if d["kind"] == "compile_ids"]
    assert divergence["details"] == [f"[1/1] compiled only on rank 1: {in_words}"]
    assert run_cli("summary", job) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert f"[1/1] compiled only on rank 1: {in_words}" in out and "___stack0" not in out

"""Everyday Python inside a compiled function (tests/data/torch213 programs/python_features.py): a contextmanager
timer, logging, warnings, random, time and a closure's list. Expected values are read from the raw log and the
program, not from our output."""

from __future__ import annotations

import json
from pathlib import Path

from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import report, run_cli, torch213
from ..tracelog import raw_records

LOG = "python_features.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "python_features.py"


def _line(text: str) -> int:
    """The line of the program that is text (once), indentation aside."""
    (line,) = [n for n, src in enumerate(PROGRAM.read_text().splitlines(), 1) if src.strip() == text]
    return line


def _break_texts(frame_id: int) -> list[str]:
    return [p for e, p in raw_records(torch213(LOG))
            if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason" and e.get("frame_id") == frame_id]


def test_a_break_inside_a_with_block_says_the_whole_function_ran_eagerly_and_to_move_the_with_out(tmp_path, capsys):
    """`timed` wraps x.sin() in `with timer(times):`, whose time.perf_counter() breaks inside the `with`. torch skips
    all of `timed` ("Skipping the function and falling back to eager") but names no frame ("frame skipped: ..." is
    absent), and the failure's own text does not say it skipped one. The report said "[5/0] failed" and told the user
    to drop a fullgraph=True they never passed."""
    timed_def = _line("def timed(x):") - 1  # its decorator line: co_firstlineno
    with_line, break_line = _line("with timer(times):"), _line("def timer(times):") + 1  # its start = time.perf_counter()
    (text,) = _break_texts(5)
    assert "Skipping the function and falling back to eager" in text and "frame skipped" not in text
    assert f"python_features.py:{break_line}" in text and "start = time.perf_counter()" in text
    assert "WithExitFunctionVariable() originated from:" in text
    (metrics,) = [e["compilation_metrics"] for e, _ in raw_records(torch213(LOG))
                  if e.get("compilation_metrics", {}).get("compile_id") == "5/0"]
    assert (metrics["co_name"], metrics["co_firstlineno"], metrics["fail_type"]) == ("timed", timed_def, "Unsupported")
    assert "Skipping the function" not in metrics["fail_reason"]

    found = insights(read_trace(torch213(LOG)))
    (err,) = found.errors.errors
    assert err.skipped_frame is not None and not err.in_loop
    assert (err.skipped_frame.function, err.skipped_frame.line) == ("timed", timed_def)
    assert err.in_with is not None and (err.in_with.line, err.in_with.code) == (with_line, "with timer(times):")
    assert not any("fullgraph" in step for step in err.next_steps)
    assert "Move the `with timer(times):` block out of the compiled function" in err.next_steps[0]
    (finding,) = [f for f in found.findings if f.section == "errors"]
    assert finding.title == f"[5/0]: Dynamo skipped timed (python_features.py:{timed_def}) and ran it eagerly"
    # said as a sentence with the break's place after it (check read "... which Dynamo cannot resume inside at
    # python_features.py:41"): the break is timer's line 41, reached from the with line 91
    assert finding.detail == (f"Dynamo cannot resume inside a `with` block, and a graph break came inside "
                              f"`with timer(times):` (python_features.py:{with_line}) at python_features.py:{break_line}: "
                              "Attempted to call function marked as skipped")
    (brk,) = [b for b in found.graph_breaks.breaks if b.location is not None and b.location.line == break_line]
    assert brk.skipped_text == err.skipped_text and "timed" in (brk.skipped_text or "")
    assert run_cli("check", torch213(LOG), "--no-failures") == 1
    gate = capsys.readouterr().out
    assert f"[5/0]: Dynamo skipped timed (python_features.py:{timed_def}) and ran it eagerly" in gate
    assert (f"came inside `with timer(times):` (python_features.py:{with_line}) at python_features.py:{break_line}: "
            "Attempted to call function marked as skipped") in gate
    assert "resume inside at" not in gate
    report(torch213(LOG), tmp_path / "r")
    page = (tmp_path / "r" / "-_5_0_0" / "index.html").read_text()
    assert "Dynamo skipped timed" in page and "fullgraph" not in page


def test_a_break_skipping_a_loop_is_still_named_by_torchs_frame():
    """The `with` reading changes nothing where torch names the frame: no `with` line in the loop case."""
    (err,) = insights(read_trace(torch213("checkpoint_autocast_print.log.gz"))).errors.errors
    assert err.in_loop and err.in_with is None


def test_a_logger_call_that_breaks_says_torchs_hint_would_silence_it():
    """`log.info("step done")` in step breaks every compile of step ("logging.Logger method not supported for
    non-export cases"); torch's only hint is ignore_logging_functions, which makes the call a no-op in compiled code
    (torch/_dynamo/config.py: "These functions will NOT run"). The report repeated the hint as the fix."""
    (log_line,) = [n for n, src in enumerate(PROGRAM.read_text().splitlines(), 1) if src == '    log.info("step done")']
    texts = [t for f in range(4) for t in _break_texts(f) if f"python_features.py:{log_line}\n" in t]
    assert len(texts) == 4 and all("logging.Logger method not supported for non-export cases" in t for t in texts)
    assert all("ignore_logging_functions" in t and "reorderable_logging_functions" not in t for t in texts)
    assert all("method: <Logger __main__ (INFO)>.info, args:" in t for t in texts)
    (brk,) = [b for b in insights(read_trace(torch213(LOG))).graph_breaks.breaks
              if b.location is not None and b.location.line == log_line]
    assert brk.note is not None
    assert brk.note.startswith("torch's hint, adding logging.Logger.info to torch._dynamo.config.ignore_logging_functions")
    assert '`log.info("step done")` a no-op in compiled code' in brk.note
    assert "log in the code that calls the compiled function" in brk.note
    # (a warnings.warn break: torch's hint, reorderable_logging_functions, does apply; its note says what it does)
    (warn,) = [b for b in insights(read_trace(torch213(LOG))).graph_breaks.breaks
               if b.location is not None and b.location.line == _line('warnings.warn("step is experimental")')]
    assert any("reorderable_logging_functions" in h for h in warn.hints)
    assert "ignore_logging_functions" not in (warn.note or "")


def test_random_and_time_calls_that_break_say_to_take_the_value_in_from_the_caller():
    """random.random() (line 84) and time.perf_counter() (lines 85 and timer's 41) break as "Attempted to call function
    marked as skipped", C code Dynamo cannot trace (the debug context names `module: <unknown module>, qualname:
    Random.random` and `module: time, qualname: perf_counter`); torch's hints say to file an issue or wrap a C
    extension in a custom op. The fixed variant draws the number outside and passes it as a tensor, and times the call
    from outside: its log has no break and no recompile for the noise, where the float `noise` passed past line 85's
    break was guarded on its value ([4/1]: "4/0: noise == ...")."""
    random_line, clock_line = _line("noise = random.random()"), _line("stamp = time.perf_counter()")
    timer_line = _line("def timer(times):") + 1
    contexts = {line: [t for f in range(6) for t in _break_texts(f) if f"python_features.py:{line}\n" in t]
                for line in (random_line, clock_line, timer_line)}
    assert all("Attempted to call function marked as skipped" in t for ts in contexts.values() for t in ts)
    assert all("module: <unknown module>, qualname: Random.random," in t for t in contexts[random_line])
    assert all("module: time, qualname: perf_counter," in t for line in (clock_line, timer_line) for t in contexts[line])
    reasons = [p for e, p in raw_records(torch213(LOG)) if e.get("artifact", {}).get("name") == "recompile_reasons"]
    assert any(r.startswith("4/0: noise == ") for r in reasons)
    fixed = raw_records(torch213("python_features_fixed.log.gz"))
    assert not [e for e, _ in fixed if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason"]
    assert not [p for e, p in fixed if e.get("artifact", {}).get("name") == "recompile_reasons" and "noise" in p]

    found = insights(read_trace(torch213(LOG)))
    at = {b.location.line: b for b in found.graph_breaks.breaks if b.location is not None}
    assert at[random_line].untraced_builtin == ("random", "random.random()")
    assert at[clock_line].untraced_builtin == at[timer_line].untraced_builtin == ("time", "time.perf_counter()")
    warn = at[_line('warnings.warn("step is experimental")')]  # (test_warnings_warn_...)
    assert warn.reason == "Attempted to call function marked as skipped"
    random_note = at[random_line].note or ""
    assert "pass it in as a tensor argument (torch.tensor(random.random()))" in random_note
    assert "a Python float passed in is guarded on its value" in random_note
    assert "read it in the code that calls the function, around the call" in (at[clock_line].note or "")
    assert "the call ran eagerly, splitting the graph there" in (at[clock_line].note or "")
    # timer's clock read made Dynamo skip all of timed: its note says so, not that the graph was split
    assert "here that made Dynamo skip all of timed" in (at[timer_line].note or "")
    (clock,) = [f for f in found.findings if f.title.startswith(f"graph break at python_features.py:{clock_line} ")]
    assert clock.detail == ("Attempted to call function marked as skipped: time.perf_counter() cannot be traced: read "
                            "the clock in the code that calls the compiled function")


def _trees() -> dict[str, str]:
    return {f"{e['frame_id']}/{e['frame_compile_id']}": p for e, p in raw_records(torch213(LOG))
            if "dynamo_cpp_guards_str" in e and e.get("frame_id") == 0}


def test_the_closures_list_is_named_seen_and_its_advice_is_not_to_pad_an_argument(tmp_path):
    """`counter` closes over `seen = []` (make_counter) and appends to it on every call; torch guards on its length as
    `len(G['counter'].__closure__[0].cell_contents) == 2` with the hint `guard on "seen"`, and logs the append
    (dynamo_side_effects). The report showed torch's source and said "A list/tuple argument changes length: pad it"."""
    (reason,) = [json.loads(p)[0] for e, p in raw_records(torch213(LOG)) if e.get("frame_id") == 0
                 and e.get("frame_compile_id") == 3 and e.get("artifact", {}).get("name") == "recompile_reasons"]
    assert reason.startswith("0/2: len(G['counter'].__closure__[0].cell_contents) == 2 ")
    assert '(HINT: guard on "seen")' in reason.splitlines()[0]
    effects = [p for e, p in raw_records(torch213(LOG)) if e.get("artifact", {}).get("name") == "dynamo_side_effects"]
    assert "Mutating object of type list (source name: G['counter'].__closure__[0].cell_contents)" in effects[0]
    append_line = _line("seen.append(t.shape[0])")

    frame = next(f for f in insights(read_trace(torch213(LOG))).recompiles.frames if f.name == "step")
    (guard,) = [g for st in frame.steps for g in st.failed_guards if g.change == "length"]
    assert guard.shown == "len(seen) == 2" and guard.guard == "len(G['counter'].__closure__[0].cell_contents) == 2"
    (advice,) = [a for a in frame.advice if "seen" in a]
    assert advice.startswith("The compiled code changes the list `seen` itself, a variable of counter's closure "
                             f"(python_features.py:{append_line}: seen.append(t.shape[0]), a change torch logged)")
    assert "pass it in as a tensor" in advice and "A list/tuple argument changes length" not in " ".join(frame.advice)
    report(torch213(LOG), tmp_path / "r")
    (page,) = (tmp_path / "r" / "sources").glob("python_features.py_*.html")
    assert "the guard of [0/2] failed: len(seen) == 2" in page.read_text()


def test_the_lists_growth_hidden_behind_the_config_fields_is_read_from_the_guard_trees():
    """torch names one failing guard per cached compile: call 2 failed [0/0] on cfg.scale and call 3 failed [0/1] on
    cfg.use_bias, and `seen` had grown at both. The trees say so: [0/0] checks `not ...cell_contents` (empty), [0/1]
    `len(...) == 1`, [0/2] `== 2`, [0/3] `== 3`. The config fields give nothing more: cfg.scale is pinned in [0/0]
    only (dynamic from [0/1]: TYPE_MATCH float), cfg.use_bias is what [0/2]'s guard names, the same in [0/2] and
    [0/3]."""
    trees = _trees()
    cell = "G['counter'].__closure__[0].cell_contents"
    assert f"LENGTH_CHECK: not {cell} " in trees["0/0"]
    assert all(f"LENGTH_CHECK: len({cell}) == {n} " in trees[f"0/{n}"] for n in (1, 2, 3))
    assert "EQUALS_MATCH: L['cfg'].scale == 1.0 " in trees["0/0"] and "L['cfg'].scale ==" not in trees["0/1"]
    assert "FALSE_MATCH: L['cfg'].use_bias == False " in trees["0/2"] and "L['cfg'].use_bias == False " in trees["0/3"]

    frame = next(f for f in insights(read_trace(torch213(LOG))).recompiles.frames if f.name == "step")
    changed = {st.compile_id: [(c.name, c.before, c.after, c.kind) for c in st.also_changed] for st in frame.steps}
    assert changed == {"[0/1_1]": [("seen", "0", "1", "length")], "[0/2_1]": [("seen", "1", "2", "length")],
                       "[0/3_1]": []}  # ([0/3]'s own guard names the length)
    (step,) = [st for st in frame.steps if st.compile_id == "[0/1_1]"]
    assert step.also_changed[0].text == "seen: length 0 → 1"


def test_warnings_warn_that_breaks_says_the_warning_still_runs_and_how_to_keep_one_graph():
    """`warnings.warn("step is experimental")` (line 83) breaks [1/0]: Python's warnings.warn is the C builtin
    _warnings.warn (debug context `module: _warnings, qualname: warn`), and torch's hints were a generic pair (try
    reorderable_logging_functions, file an issue). In torch 2.13 a function in that set is recorded and called after
    the graph (torch/_dynamo/variables/misc.py DebuggingVariable, output_graph.py's debug_locals), if its arguments
    are constants, tensors or formatted strings (can_reorder_logs); the rest of step after the call is [2/0]."""
    warn_line = _line('warnings.warn("step is experimental")')
    (text,) = [t for t in _break_texts(1) if f"python_features.py:{warn_line}\n" in t]
    assert "Dynamo does not know how to trace the Python builtin `_warnings.warn`." in text
    assert "module: _warnings, qualname: warn, skip reason: cannot determine source file" in text
    assert "`torch._dynamo.config.reorderable_logging_functions`" in text
    (rest,) = [e["compilation_metrics"] for e, _ in raw_records(torch213(LOG))
               if e.get("compilation_metrics", {}).get("compile_id") == "2/0"]
    assert rest["co_name"] == f"torch_dynamo_resume_in_step_at_{warn_line}"

    found = insights(read_trace(torch213(LOG)))
    (brk,) = [b for b in found.graph_breaks.breaks if b.location is not None and b.location.line == warn_line]
    assert brk.untraced_builtin == ("warnings", "warnings.warn()") and brk.note_kind == "advice"
    note = brk.note or ""
    assert note.startswith("Dynamo cannot trace warnings.warn (C code: Python's _warnings.warn): the call ran eagerly")
    assert "The warning is still issued, but the rest of step after it is compiled as a function of its own" in note
    assert "warn in the code that calls the compiled function" in note
    assert "`torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)`" in note
    assert "its arguments must be constants, tensors or formatted strings" in note
    assert "file an issue" not in note
    (finding,) = [f for f in found.findings if f.title.startswith(f"graph break at python_features.py:{warn_line} ")]
    assert finding.detail == ("Attempted to call function marked as skipped: warnings.warn() cannot be traced: warn in "
                              "the code that calls the compiled function, or add warnings.warn to "
                              "torch._dynamo.config.reorderable_logging_functions (then called after the graph)")


def test_fix_first_lists_each_graph_break_cause_where_one_is_left_over():
    """step's four breaks (lines 82-85, each torch's "Graph break in user code at" line) are four fixes; the fifth,
    timer's line 41, is the error's (it skipped timed). Fix first showed three and "1 more graph break cause" naming
    line 84 alone: random.random(), whose value then recompiled [3/1]."""
    lines = {int(t.split("python_features.py:", 1)[1].split("\n", 1)[0]) for f in range(6) for t in _break_texts(f)}
    log_line = _line("y = counter(y)") + 1  # (the fixed variant's main logs "step done" too)
    step_lines = [log_line] + [_line(c) for c in ('warnings.warn("step is experimental")', "noise = random.random()",
                                                  "stamp = time.perf_counter()")]
    assert lines == {*step_lines, _line("def timer(times):") + 1}
    found = insights(read_trace(torch213(LOG)))
    titled = [f.title for f in found.findings if f.section == "graph_breaks" and f.title.startswith("graph break")]
    assert sorted(int(t.split("python_features.py:")[1].split(" ")[0]) for t in titled) == step_lines
    assert not any("more graph break cause" in t for t in titled)
    # amp_train_step: the user's four lines (41, 46, 47, 48; torch's own break at optimizer.py:79 is said apart):
    # the fourth, opt.zero_grad() at line 48, was "1 more" too
    amp = insights(read_trace(torch213("amp_train_step.log.gz")))
    amp_titles = [f.title for f in amp.findings if f.section == "graph_breaks"]
    assert any(t.startswith("graph break at amp_train_step.py:48 in train_step") for t in amp_titles)
    assert not any("more graph break cause" in t for t in amp_titles)

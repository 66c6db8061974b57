"""A Hugging Face transformers user compiles a tiny Llama on CPU and calls generate() (programs/hf_llama.py)."""

from __future__ import annotations

import gzip
import json

from compilescope.analyses.failures import failures_and_restarts
from compilescope.analyses.graph_breaks.analysis import graph_breaks
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import run_cli, torch213


def _metrics(name: str) -> list[dict]:
    with gzip.open(torch213(name), "rt", encoding="utf-8") as f:
        return [json.loads(line.split("] ", 1)[1])["compilation_metrics"] for line in f
                if line.startswith("V") and '] {"compilation_metrics"' in line]


def _records(name: str, kind: str) -> list[dict]:
    """The log's records of one kind, each with its envelope (frame_id, frame_compile_id, ...) and payload."""
    with gzip.open(torch213(name), "rt", encoding="utf-8") as f:
        return [json.loads(line.split("] ", 1)[1]) for line in f
                if line.startswith("V") and f'] {{"{kind}"' in line]


def _program_lines(name: str) -> dict[str, int]:
    """"[0/1]" -> the line of programs/hf_llama.py innermost on each dynamo_start stack (the string table names the
    program's file; its index is that of the first "str" record ending in hf_llama.py)."""
    [index] = {r["str"][1] for r in _records(name, "str") if r["str"][0].endswith("/programs/hf_llama.py")}
    return {f"[{r['frame_id']}/{r['frame_compile_id']}]": [f["line"] for f in r["dynamo_start"]["stack"]
                                                          if f["filename"] == index][-1]
            for r in _records(name, "dynamo_start")}


def test_calling_the_model_positionally_then_through_generate_is_a_change_of_positional_arguments():
    # The user calls compiled(ids) (line 32: wrapped_func's *args are (self, ids)); generate() calls the forward with
    # keywords only (line 39), so [0/1]'s guard `len(args) == 2` fails, as [0/2]'s recompile_reasons say. That is no
    # list to pad: it is how the arguments are passed.
    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        ins = insights(trace)
    [frame] = ins.recompiles.frames
    assert frame.name == "wrapped_func" and frame.filename.endswith("/transformers/utils/deprecation.py")
    assert [(loc.filename.rsplit("/", 1)[-1], loc.line) for loc in frame.called_from] == [
        ("hf_llama.py", 32), ("hf_llama.py", 39)]
    steps = {s.compile_id: s.guard for s in frame.steps}
    assert (steps["[0/2]"].guard, steps["[0/2]"].change) == ("len(args) == 2", "positional_arguments")
    advice = " ".join(frame.advice)
    assert "model(input_ids=ids), not model(ids)" in advice
    assert "pad it" not in advice  # the list advice ("A list/tuple argument changes length: pad it ...")
    # The other steps are sizes: the second prompt length, the decode step's one token, the KV cache growing.
    assert [steps[c].change for c in ("[0/1]", "[0/3]", "[0/4]")] == ["size", "size", "size"]


def test_dynamos_own_float_restart_is_no_graph_break_and_says_what_it_cost():
    # _fixed compiles with dynamic=True: [0/0]'s metrics have restart_reasons
    # ["<class 'torch._dynamo.exc.TensorifyScalarRestartAnalysis'>"] (a float attribute made a symbol, then
    # specialized) after 44.07 s of tracing (dynamo_time_before_restart_s), and the log has no
    # dynamo_graph_break_reason at all: nothing broke the graph.
    restarted = [m for m in _metrics("hf_llama_fixed.log.gz") if m.get("restart_reasons")]
    assert [(m["compile_id"], m["restart_reasons"]) for m in restarted] == [
        ("0/0", ["<class 'torch._dynamo.exc.TensorifyScalarRestartAnalysis'>"])]
    before = restarted[0]["dynamo_time_before_restart_s"]
    assert before > 1
    with read_trace(str(torch213("hf_llama_fixed.log.gz"))) as trace:
        breaks = graph_breaks(trace)
        rows = failures_and_restarts(trace, None, breaks)
        ins = insights(trace)
    assert not breaks and breaks.total == 0
    assert not any("graph break" in f.title for f in ins.findings)
    [row] = rows
    assert row.is_restart and str(row.compile_id) == "[0/0_1]"  # (the metrics' envelope has "attempt": 1)
    assert row.explanation is not None and row.explanation.startswith("No graph break")
    assert f"the {before:.2f} s it had traced were lost" in row.explanation
    assert "torch._dynamo.config.specialize_float = True" in row.explanation


def test_an_argument_of_transformers_frame_is_placed_at_the_users_call_that_passed_it():
    # [0/0]'s guard tree checks L['args'][1] (the user's ids) with the comment `# recordable_keys = {` of
    # transformers/utils/output_capturing.py: transformers' line, not the user's. The dynamo_start stacks of [0/1] and
    # [0/3] end in the program at lines 32 (compiled(ids)) and 39 (model.generate(...)): the calls that passed the
    # tensor in. A tensor reached through an argument (the cache's keys) stays where it was first used: [0/3]'s guard
    # tree comments L['kwargs']['cache'].layers[0].keys with `if not self.is_initialized or self.keys.numel() == 0:`,
    # transformers/cache_utils.py:148.
    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        ins = insights(trace)
    [frame] = ins.recompiles.frames
    placed = {s.compile_id: (s.guard.tensor, s.guard.location_kind, s.guard.location.filename.rsplit("/", 1)[-1],
                             s.guard.location.line) for s in frame.steps if s.guard.tensor}
    assert placed == {
        "[0/1]": ("args[1]", "call", "hf_llama.py", 32),
        "[0/3]": ("kwargs['input_ids']", "call", "hf_llama.py", 39),
        "[0/4]": ("kwargs['cache'].layers[0].keys", "first_use", "cache_utils.py", 148)}


def test_the_dynamic_size_of_the_users_ids_is_placed_at_their_call_as_recompiles_places_it():
    # [0/1]'s create_symbol s81 (source L['args'][1].size()[1]) has a user_stack ending in transformers'
    # output_capturing.py:332 (`recordable_keys = {`) and a stack whose user frame is hf_llama.py:32 (compiled(ids)):
    # the argument of transformers' wrapped_func is the user's ids, passed in there. The KV cache's s87
    # (L['kwargs']['cache'].layers[0].keys.size()[2]) is reached through an argument: its first use,
    # cache_utils.py:148, stays.
    from compilescope.analyses.dynamic_shapes import dynamic_shapes

    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        shapes = dynamic_shapes(trace)
    placed = {z.source: (z.symbol_names, [(p.text, p.location.filename.rsplit("/", 1)[-1], p.location.line)
                                          for p in z.placement if p.location]) for z in shapes.sizes}
    assert placed["L['args'][1].size()[1]"] == (["s81"], [("passed in by the call at ", "hf_llama.py", 32)])
    assert placed["L['kwargs']['cache'].layers[0].keys.size()[2]"] == (["s87"], [("at ", "cache_utils.py", 148)])


def test_a_guard_on_how_many_arguments_a_call_passes_is_placed_at_the_users_call():
    # [0/2]'s recompile_reasons: "0/1: len(args) == 2 # func_name = ... deprecation.py:126 in wrapped_func":
    # transformers' decorator, not the user's. [0/2]'s dynamo_start stack ends in the program at line 39, the
    # model.generate(...) call that passed keywords only. In _fixed, [0/1]'s "len(kwargs) == 1" and [0/2]'s
    # "len(kwargs) == 6" (deprecation.py:134) are generate()'s call at line 37.
    for log, expected in (("hf_llama.log.gz", {"[0/2]": ("len(args) == 2", 39)}),
                          ("hf_llama_fixed.log.gz", {"[0/1]": ("len(kwargs) == 1", 37),
                                                     "[0/2]": ("len(kwargs) == 6", 37)})):
        with read_trace(str(torch213(log))) as trace:
            [frame] = insights(trace).recompiles.frames
        placed = {s.compile_id: (s.guard.guard, s.guard.location.line) for s in frame.steps
                  if s.guard.change in ("positional_arguments", "keyword_arguments")
                  and s.guard.location_kind == "arguments_call"
                  and s.guard.location.filename.endswith("/hf_llama.py")}
        assert placed == expected, log


def test_the_decode_steps_input_ids_are_generates_so_the_advice_is_not_to_mark_them():
    # [0/3] fails "tensor 'kwargs['input_ids']' size mismatch at index 1. expected 6, actual 1": the first decode
    # step's one token, which generate() (on [0/3]'s dynamo_start stack) made. The user's own args[1] (prompts of 5,
    # then 9 tokens) came in by their call at line 32: that one they can mark.
    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        [frame] = insights(trace).recompiles.frames
    [generated] = [a for a in frame.advice if a.startswith("transformers' generate() makes the inputs")]
    # (named by the keyword generate() passed: the wrapper's `kwargs` is no name of the user's)
    assert "(input_ids of LlamaForCausalLM's forward at index 1:" in generated and "kwargs[" not in generated
    assert 'cache_implementation=\\"static\\"' not in generated and 'cache_implementation="static"' in generated
    assert "dynamic=True" in generated
    [sizes] = [a for a in frame.advice if a.startswith("Sizes change between calls")]
    assert "(args[1] at index 1, passed in by the call at hf_llama.py:32)" in sizes
    assert "kwargs['input_ids']" not in sizes


def test_check_and_diff_name_transformers_frame_by_the_users_calls_and_still_match_it_between_runs(capsys):
    # Both runs compile one frame, transformers' wrapped_func (co_filename .../transformers/utils/deprecation.py,
    # co_firstlineno 121), called from the program's lines 32 and 39 (hf_llama) or 32 and 37 (_fixed, whose generate()
    # call is at 37): its dynamo_start stacks. check and diff name it as the report does, by the model whose forward
    # it runs (LlamaForCausalLM's forward, not the decorator's wrapped_func); diff still matches the two runs' frames
    # by torch's function and file (the key), whatever the calls.
    from compilescope.analyses.analyze import analyze
    from compilescope.analyses.run_facts.analysis import run_facts
    from compilescope.analyses.diff.analysis import diff_runs

    from ..conftest import run_cli

    facts = {}
    for log in ("hf_llama.log.gz", "hf_llama_fixed.log.gz"):
        with read_trace(str(torch213(log))) as trace:
            facts[log] = run_facts(analyze(trace))
    [(key, frame)] = facts["hf_llama.log.gz"].frames.items()
    [(key_fixed, frame_fixed)] = facts["hf_llama_fixed.log.gz"].frames.items()
    assert key == key_fixed and key.endswith("/transformers/utils/deprecation.py:121 wrapped_func")
    assert frame.label == "LlamaForCausalLM's forward (deprecation.py:121, called at hf_llama.py:32, 39)"
    assert frame_fixed.label == "LlamaForCausalLM's forward (deprecation.py:121, called at hf_llama.py:32, 37)"
    assert diff_runs(facts["hf_llama_fixed.log.gz"], facts["hf_llama.log.gz"]).matched_frames == [key]

    assert run_cli("check", "--max-recompiles", "0", str(torch213("hf_llama.log.gz"))) == 1
    assert ("LlamaForCausalLM's forward (deprecation.py:121, called at hf_llama.py:32, 39) recompiled 4 times"
            in capsys.readouterr().out)


def test_floats_dynamic_true_made_symbols_are_said_to_be_its_where_their_specialization_is_listed():
    # _fixed compiles with dynamic=True: its compiles' dynamo_config has "assume_static_by_default": false (hf_llama's:
    # true), and the create_symbol records make floats of the model's attributes symbols (zf78 from layer 0's
    # self_attn.scaling, zf14 from embed_tokens.norm_type, ...). symbolic_shape_specialization then fixes zf78, zf10
    # (scaling, 0.25) and zf14 (norm_type, 2.0), "trivial_lhs". hf_llama makes no float symbol at all.
    configs = {log: {json.loads(m["dynamo_config"])["assume_static_by_default"] for m in _metrics(log)
                     if m.get("dynamo_config")} for log in ("hf_llama.log.gz", "hf_llama_fixed.log.gz")}
    assert configs == {"hf_llama.log.gz": {True}, "hf_llama_fixed.log.gz": {False}}
    found = {}
    for log in configs:
        with read_trace(str(torch213(log))) as trace:
            ins = insights(trace)
        found[log] = next((f for f in ins.findings if "specialized to a constant" in f.title), None)
    assert found["hf_llama.log.gz"] is None
    detail = found["hf_llama_fixed.log.gz"].detail
    # (the title counts 6 symbols; the detail names 3 and says how many it leaves out)
    assert found["hf_llama_fixed.log.gz"].title.startswith("6 dynamic values") and detail.count(") = ") == 3
    assert "; and 3 more" in detail
    # (the model, as the user holds it: `args[0]` is transformers' wrapped_func's name for it, the frame compiled)
    assert "model.model.layers[0].self_attn.scaling (zf78) = 0.25" in detail and "args[0]" not in detail
    assert "zf78, zf10, zf14 are floats (scaling, norm_type) that dynamic=True made dynamic" in detail
    assert "torch._dynamo.config.specialize_float = True" in detail


def test_a_frame_both_runs_compiled_is_named_by_each_runs_calls_where_they_differ(capsys):
    # The dynamo_start stacks: hf_llama's compiles come from lines 32 ([0/0], [0/1]) and 39 ([0/2]-[0/4]: generate());
    # _fixed's from 32 ([0/0]) and 37 ([0/1], [0/2]: its generate() call, a line up). One frame in both, matched by
    # function and file: diff names it by A's calls and B's, check --baseline by the baseline's and this run's.
    from ..conftest import run_cli

    calls = {log: _program_lines(log) for log in ("hf_llama.log.gz", "hf_llama_fixed.log.gz")}
    assert calls == {"hf_llama.log.gz": {"[0/0]": 32, "[0/1]": 32, "[0/2]": 39, "[0/3]": 39, "[0/4]": 39},
                     "hf_llama_fixed.log.gz": {"[0/0]": 32, "[0/1]": 37, "[0/2]": 37}}
    assert run_cli("diff", "--json", str(torch213("hf_llama.log.gz")), str(torch213("hf_llama_fixed.log.gz"))) == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    titles = [c["title"] for c in rank["changes"] if c["section"] == "recompiles"]
    assert titles[0].startswith("LlamaForCausalLM's forward (deprecation.py:121, called at hf_llama.py:32, 39 in A; "
                                "hf_llama.py:32, 37 in B): 5 → 3 compiles")
    assert run_cli("check", "--baseline", str(torch213("hf_llama_fixed.log.gz")), str(torch213("hf_llama.log.gz"))) == 1
    assert ("most in LlamaForCausalLM's forward (deprecation.py:121, called at hf_llama.py:32, 37 in the baseline; "
            "hf_llama.py:32, 39 in this run): 2 → 4") in capsys.readouterr().out


def test_the_slowest_compile_of_a_library_frame_is_named_by_the_users_call(capsys):
    # hf_llama's compilation_metrics: [0/1] has the largest entire_frame_compile_time_s; its dynamo_start stack's
    # innermost line of the program is 32 (compiled(ids), the 9-token prompt).
    from ..conftest import run_cli

    slowest = max(_metrics("hf_llama.log.gz"), key=lambda m: m["entire_frame_compile_time_s"])
    assert slowest["compile_id"] == "0/1" and _program_lines("hf_llama.log.gz")["[0/1]"] == 32
    assert run_cli("check", "--max-compile-seconds", "1", str(torch213("hf_llama.log.gz"))) == 1
    assert ("the slowest compile, [0/1] LlamaForCausalLM's forward (called at hf_llama.py:32), took "
            in capsys.readouterr().out)


def test_a_dynamic_size_made_at_two_users_calls_is_placed_at_each():
    # _fixed's create_symbol records of L['kwargs']['input_ids'].size()[1]: s27 (val 5) in [0/0] (both attempts) and
    # s27 (val 6) in [0/1], each user_stack ending in transformers' output_capturing.py:332; the user passed the ids in
    # at line 32 ([0/0]'s dynamo_start) and generate() at line 37 ([0/1]'s). One size, placed at both calls.
    from compilescope.analyses.dynamic_shapes import dynamic_shapes, placement_text

    made = [(f"[{r['frame_id']}/{r['frame_compile_id']}_{r['attempt']}]", r["create_symbol"]["symbol"],
             r["create_symbol"]["val"]) for r in _records("hf_llama_fixed.log.gz", "create_symbol")
            if r["create_symbol"]["source"] == "L['kwargs']['input_ids'].size()[1]"]
    assert made == [("[0/0_0]", "s27", "5"), ("[0/0_1]", "s27", "5"), ("[0/1_0]", "s27", "6")]
    lines = _program_lines("hf_llama_fixed.log.gz")
    assert (lines["[0/0]"], lines["[0/1]"]) == (32, 37)

    with read_trace(str(torch213("hf_llama_fixed.log.gz"))) as trace:
        shapes = dynamic_shapes(trace)
    [size] = [z for z in shapes.sizes if z.source == "L['kwargs']['input_ids'].size()[1]"]
    # By compilation, as the sizes' symbols and the recompile steps say it: [0/0] restarted and [0/0_1] compiled it,
    # one compilation (this said "for [0/0], [0/0_1]", as if two).
    assert placement_text(size.placement) == ("passed in by the call at hf_llama.py:32 for [0/0]; "
                                              "passed in by the call at hf_llama.py:37 for [0/1]")
    # hf_llama's s81 (L['args'][1].size()[1]) is made once, in [0/1]: one call, said as before.
    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        shapes = dynamic_shapes(trace)
    [size] = [z for z in shapes.sizes if z.source == "L['args'][1].size()[1]"]
    assert placement_text(size.placement) == "passed in by the call at hf_llama.py:32"


def test_each_compile_time_row_says_the_users_line_that_called_transformers_frame(capsys, monkeypatch):
    # The one frame Dynamo compiles is transformers' decorator wrapped_func (deprecation.py:121), which the user never
    # wrote, named by the model whose forward it runs: each row of the compile-time table says the line of programs/hf_llama.py innermost on that compile's
    # dynamo_start stack (32: compiled(ids), 39: model.generate(...)), as the recompiles section's heading does.
    from ..conftest import run_cli

    calls = _program_lines("hf_llama.log.gz")
    assert calls == {"[0/0]": 32, "[0/1]": 32, "[0/2]": 39, "[0/3]": 39, "[0/4]": 39}
    assert run_cli("summary", "--json", str(torch213("hf_llama.log.gz"))) == 0
    rows = json.loads(capsys.readouterr().out)["compile_time"]["compiles"]
    assert {r["compile_id"]: (r["name"], r["called_from"]["filename"].rsplit("/", 1)[-1], r["called_from"]["line"])
            for r in rows} == {cid: ("LlamaForCausalLM's forward", "hf_llama.py", line) for cid, line in calls.items()}
    monkeypatch.setenv("COLUMNS", "160")  # (each row on one line)
    assert run_cli("summary", str(torch213("hf_llama.log.gz"))) == 0
    out = capsys.readouterr().out
    table = " ".join(out[out.index("slowest   function"):].split())
    for cid, line in calls.items():
        assert f"{cid} LlamaForCausalLM's forward (called at hf_llama.py:{line}) " in table


def test_json_gives_every_line_a_size_was_made_at_not_the_first_only(capsys):
    # _fixed's L['kwargs']['input_ids'].size()[1]: s27 made in [0/0] (both attempts) and [0/1] (create_symbol records,
    # as the test above reads them), the ids passed in at line 32 ([0/0]'s dynamo_start) and by generate() at line 37
    # ([0/1]'s). `location` stays the first; `locations` holds both, each with its compiles.
    from ..conftest import run_cli

    lines = _program_lines("hf_llama_fixed.log.gz")
    assert (lines["[0/0]"], lines["[0/1]"]) == (32, 37)
    assert run_cli("summary", "--json", str(torch213("hf_llama_fixed.log.gz"))) == 0
    [size] = [z for z in json.loads(capsys.readouterr().out)["dynamic_shapes"]["sizes"]
              if z["source"] == "L['kwargs']['input_ids'].size()[1]"]
    assert size["location"]["line"] == 32
    assert [(p["location"]["filename"].rsplit("/", 1)[-1], p["location"]["line"], p["passed_in"], p["compile_ids"])
            for p in size["locations"]] == [("hf_llama.py", 32, True, ["[0/0]", "[0/0_1]"]),
                                            ("hf_llama.py", 37, True, ["[0/1]"])]
    assert size["compile_ids"] == ["[0/0]", "[0/0_1]", "[0/1]"]


def test_the_frame_of_transformers_decorator_is_named_by_the_model_whose_forward_it_runs():
    # hf_llama's one compiled frame is transformers' decorator wrapped_func (deprecation.py), not the user's code: its
    # guard trees guard the function it wraps (L['func']) and the module it passes first, args[0], a
    # LlamaForCausalLM whose _modules they guard. The report names the frame as the user knows it, as torch's
    # wrap_inline around a Sequential is named "Sequential's forward".
    with gzip.open(torch213("hf_llama.log.gz"), "rt", encoding="utf-8") as f:
        text = f.read()
    assert "GuardManager: source=L['func'], " in text and "GuardManager: source=L['args'][0]._modules, " in text
    assert ("GuardManager: source=L['args'][0], accessed_by=TupleGetItemGuardAccessor(0), "
            "type=<class 'transformers.models.llama.modeling_llama.LlamaForCausalLM'>") in text
    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        found = insights(trace)
    [frame] = found.recompiles.frames
    assert (frame.name, frame.module, frame.function_label) == ("wrapped_func", "LlamaForCausalLM",
                                                                "LlamaForCausalLM's forward")
    assert {c.name for c in found.compile_time.compiles} == {"LlamaForCausalLM's forward"}


def test_the_page_says_whose_decorator_the_frame_named_by_its_model_is(tmp_path):
    # The frame is transformers' decorator (…/site-packages/transformers/utils/deprecation.py), not torch's: the
    # heading's title says so, its owner from the frame's file.
    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        [frame] = insights(trace).recompiles.frames
    assert "/site-packages/transformers/utils/deprecation.py" in (frame.filename or "")
    assert frame.module_title == "transformers' wrapped_func, which runs the LlamaForCausalLM compiled"
    assert run_cli(torch213("hf_llama.log.gz"), "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert ('<strong class="mono" title="transformers&#39; wrapped_func, which runs the LlamaForCausalLM compiled">'
            "LlamaForCausalLM&#39;s forward</strong>") in page
    assert "torch's wrapped_func" not in page


def test_the_keyword_arguments_generate_passed_are_said_as_such_not_as_the_wrappers_kwargs(capsys):
    # generate() calls transformers' wrapped_func(*args, **kwargs) with 6 keywords where the user's own call passed
    # none: [0/2]'s guard tree pins `len(L['kwargs']) == 6`. kwargs is the wrapper's dict, a name the user never wrote:
    # the recompile said "kwargs: length 0 → 6"; it is how many keyword arguments the call passed.
    assert "len(L['kwargs']) == 6" in gzip.open(torch213("hf_llama.log.gz"), "rt").read()
    assert run_cli("summary", torch213("hf_llama.log.gz")) == 0
    out = capsys.readouterr().out
    assert "also changed since [0/1]: the keyword arguments passed: 0 → 6" in out
    assert "kwargs: length" not in out
    assert run_cli("summary", "--json", torch213("hf_llama.log.gz")) == 0
    frames = json.loads(capsys.readouterr().out)["recompiles"]["frames"]
    changed = [c for f in frames for s in f["steps"] for c in s.get("also_changed", [])]
    assert {"source": "len(L['kwargs'])", "name": "the keyword arguments passed", "kind": "length", "before": "0",
            "after": "6", "text": "the keyword arguments passed: 0 → 6"} in changed

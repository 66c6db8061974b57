"""A tensor the user's call passed to a library's compiled frame is named the same way everywhere: the recompile's
advice, its step, and the Dynamic shapes section (terminal, report, summary --json) say the user's name for it where
the log settles one (`t`, where `cm(x, t)` calls `forward(self, x, target)`), with torch's name beside it, and an
expression or a value the library made in words a user can act on, never a placeholder that looks like code."""

from __future__ import annotations

import json

import pytest

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles.advice import resumed_size_advice, size_advice
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, run_cli, torch213

PROGRAMS_213 = REPO / "tests" / "data" / "torch213" / "programs"
MYLIB = PROGRAMS_213 / "library_args_site" / "lib" / "python3.11" / "site-packages" / "mylib" / "__init__.py"


def _line(path, number: int) -> str:
    return path.read_text().splitlines()[number - 1].strip()


def _sizes(log) -> dict:
    """The Dynamic shapes section's sizes by (torch's source, their compile ids)."""
    with read_trace(str(log)) as trace:
        found = insights(trace)
        return {(z.source, tuple(z.compile_ids)): z.source_text for z in found.dynamic_shapes.sizes}



def _frame(log, name: str):
    """The recompiles' frame of that name in log's insights (one of that name)."""
    with read_trace(str(log)) as trace:
        (frame,) = [f for f in insights(trace).recompiles.frames if f.name == name]
    return frame

def test_the_dynamic_shapes_section_names_a_passed_tensor_as_the_advice_does(capsys):
    # library_args.py (target): `cm(x, t)`, line 26, into Net3's forward(self, x, target), which passes target on to
    # loss3: the advice says mark_dynamic(t, 0) for both; the section said target.size()[0].
    assert _line(PROGRAMS_213 / "library_args.py", 26) == "out = cm(x, t)"
    log = torch213("library_args_target.log.gz")
    sizes = _sizes(log)
    assert sizes[("L['target'].size()[0]", ("[0/1]", "[0/1_1]"))] == "t.size()[0] (forward's target)"
    assert sizes[("L['target'].size()[0]", ("[1/1]", "[1/1_1]"))] == (
        "t.size()[0] (loss3's target, which forward passes on)")
    assert sizes[("L['d'].size()[0]", ("[2/1]",))] == "d.size()[0]"  # (loss3's own local: torch's words)
    assert run_cli("summary", log) == 0
    shown = capsys.readouterr().out
    assert "mark_dynamic(t, 0)" in shown and "t.size()[0] (forward's target)" in shown
    assert "[0/1] compiled t's dimension 0 as dynamic (s48)" in shown  # (the step, as the advice names it)
    assert run_cli("summary", "--json", log) == 0
    said = json.loads(capsys.readouterr().out)["dynamic_shapes"]["sizes"]
    # (torch's source kept beside the user's words)
    assert {(z["source"], z["source_text"]) for z in said} >= {
        ("L['target'].size()[0]", "t.size()[0] (forward's target)"),
        ("L['target'].size()[0]", "t.size()[0] (loss3's target, which forward passes on)")}


def _said_as_forwards_x(log) -> None:
    """The log's forward frame says its x, whose size changed, as forward's x (torch's name, qualified by the frame) in
    the step, the advice and the sizes, and never marks the user's x."""
    forward = _frame(log, "forward")
    (step,) = forward.steps
    assert step.guard.location_label == "forward's x passed in by the call at"
    (advice,) = forward.advice
    assert "mark_dynamic(x, 0)" not in advice and "the tensor passed as forward's x" in advice
    assert _sizes(log)[("L['x'].size()[0]", ("[0/1]", "[0/1_1]"))] == "forward's x.size()[0]"


def test_a_size_whose_compiles_were_passed_different_tensors_keeps_torchs_name():
    # library_calls.py (twocallers): Net3 calls loss3(out, target) (line 29's cm), Net4 loss3(target, out) (line 30's
    # cm4): loss3's pred is the user's t in [1/1] (from Net4) and Net3's own `out` in [1/2]. One row for both: the
    # user's name would be wrong for one of them.
    assert _line(MYLIB, 45) == "return loss3(out, target)" and _line(MYLIB, 57) == "return loss3(target, out)"
    sizes = _sizes(torch213("library_calls_twocallers.log.gz"))
    assert sizes[("L['pred'].size()[0]", ("[1/1]", "[1/1_1]", "[1/2]", "[1/2_1]"))] == "pred.size()[0]"
    # (a size only [1/1] made, from Net4's call: pred is t there)
    assert sizes[("L['pred'].size()[1]", ("[1/1]", "[1/1_1]"))] == "t.size()[1] (loss3's pred, which forward passes on)"


def test_an_expression_the_call_passes_is_the_tensor_to_mark_not_a_placeholder():
    # library_args.py (multiline): `cm(torch.randn(n, 4),` / `target=t)`: forward's x is the call's first argument,
    # an expression. The advice said torch._dynamo.mark_dynamic(tensor, 0), a placeholder that reads as code.
    assert _line(PROGRAMS_213 / "library_args.py", 28) == "out = cm(torch.randn(n, 4),"
    with read_trace(str(torch213("library_args_multiline.log.gz"))) as trace:
        frames = {f.name: f for f in insights(trace).recompiles.frames}
    (advice,) = frames["forward"].advice
    assert ("(`torch.randn(n, 4)` at index 0, the first argument of the call at library_args.py:28, as forward's x): "
            "mark dimension 0 of the tensor that `torch.randn(n, 4)` makes dynamic: torch._dynamo.mark_dynamic takes "
            "the tensor, so give it a name before the call") in advice
    assert "mark_dynamic(tensor" not in advice and "mark_dynamic(x," not in advice
    # A name that is no variable of the user's (a wrapper's args[0]) is said in words too; a name, in code.
    said = size_advice([("args[0]", "0", "")])
    assert "mark dimension 0 of the tensor passed as args[0] dynamic with torch._dynamo.mark_dynamic" in said
    assert "mark_dynamic(tensor" not in said and "mark_dynamic(tensor" not in size_advice([("args[0]", "0", "")], True)
    assert "torch._dynamo.mark_dynamic(t, 0)" in size_advice([("t", "0", "")])
    # Several sizes, some named and some not: code for the named, words for the others (it was the placeholder for
    # all, torch._dynamo.mark_dynamic(tensor, dim), the one it could name too).
    mixed = size_advice([("a", "0", ""), ("forward's target", "0", "")])
    assert ("mark a's dimension 0 dynamic with `torch._dynamo.mark_dynamic(a, 0)`; mark dimension 0 of the tensor "
            "passed as forward's target dynamic with torch._dynamo.mark_dynamic. Or compile") in mixed
    assert "mark_dynamic(tensor, dim)" not in mixed
    # An expression the resume function's advice names is code once, not ``torch.randn(n, 4)``.
    resumed = resumed_size_advice([("`torch.randn(n, 4)`", "0", "")], ("f", 3))
    assert "`torch.randn(n, 4)`" in resumed and "``" not in resumed
    # An expression that reads one object each time (a dict's item by its key, an attribute) is code as it stands;
    # one that makes a new tensor each time (a slice, a tensor's item by number, its .T) is not: marking what it
    # makes before the call marks none the call passes.
    assert "torch._dynamo.mark_dynamic(batch[\"x\"], 0)" in size_advice([("`batch[\"x\"]`", "0", "")])
    assert "`torch._dynamo.mark_dynamic(obj.t, 0)` before the call" in size_advice([("`obj.t`", "0", "")], True)
    for made in ("`base[:n]`", "`t[0]`", "`x.T`", "`f(x).t`"):
        assert f"mark dimension 0 of the tensor that {made} makes dynamic" in size_advice([(made, "0", "")])


def test_a_value_the_library_makes_names_the_function_that_made_it():
    # library_args.py (multiline): Net2.forward makes `out` (line 34) and calls loss2(target, out) (line 35): loss2's
    # pred is forward's value, as the graph break's traceback shows; the advice said only the code the call runs.
    assert _line(MYLIB, 35) == "return loss2(target, out)"
    with read_trace(str(torch213("library_args_multiline.log.gz"))) as trace:
        frames = {f.name: f for f in insights(trace).recompiles.frames}
    (advice,) = frames["loss2"].advice
    assert ("is of a value forward, which your call at library_args.py:28 runs, made and passed to loss2 "
            "(__init__.py:7, library code) at __init__.py:35 (`return loss2(target, out)`)") in advice
    assert "there is no tensor of yours named pred to mark dynamic" in advice


def test_a_keyword_the_users_call_passes_is_named_by_their_variable_where_the_call_settles_it(capsys):
    # gpt2_train.py:13 is `out = cmodel(input_ids=ids, labels=ids)`: transformers' `wrapper` (frame 0), which the
    # call runs as the module's forward, takes them as its kwargs: its kwargs['input_ids'] is the user's ids, as the
    # advice says. Forward (frame 1) is called by the wrapper's compiled code, at its line `output = func(self,
    # *args, **kwargs)` (the graph break's traceback): the keyword the wrapper took, passed on by name, is the user's
    # ids too, and forward is the GPT2LMHeadModel forward the wrapper's heading names: one name in both frames.
    from ..conftest import shared

    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    assert _line(log.parent / "script.py", 13) == "out = cmodel(input_ids=ids, labels=ids)"
    with read_trace(str(log)) as trace:
        found = insights(trace)
        frames = {f.name: f for f in found.recompiles.frames}
        sizes = {(z.source, tuple(z.compile_ids)): z.source_text for z in found.dynamic_shapes.sizes}
    (step,) = frames["wrapper"].steps
    assert step.guard.location_label == "ids (input_ids of GPT2LMHeadModel's forward) passed in by the call at"
    assert step.dynamic_of == "ids' dimension 1"
    assert sizes[("L['kwargs']['input_ids'].size()[1]", ("[0/1]", "[0/1_1]"))] == (
        "ids.size()[1] (input_ids of GPT2LMHeadModel's forward)")
    (step,) = frames["forward"].steps
    assert step.guard.location_label == "ids (input_ids of GPT2LMHeadModel's forward) passed in by the call at"
    assert step.dynamic_of == "ids' dimension 1"
    assert sizes[("L['input_ids'].size()[1]", ("[1/1]", "[1/1_1]"))] == (
        "ids.size()[1] (input_ids of GPT2LMHeadModel's forward)")
    assert run_cli("summary", log) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "ids (input_ids of GPT2LMHeadModel's forward) passed in by the call at gpt2_train.py:13" in shown
    assert "[0/1] compiled ids' dimension 1 as dynamic (s27)" in shown
    assert "[1/1] compiled ids' dimension 1 as dynamic (s70)" in shown
    assert "forward's input_ids" not in shown


def test_a_keyword_a_library_passes_on_from_its_kwargs_is_the_users_tensor(capsys):
    # library_passed.py (kwargs): `cm(input_ids=tok)` into NetKw's forward(self, **kwargs), which calls
    # `inner_kw(input_ids=kwargs["input_ids"])`; inner_kw's print breaks the graph. inner_kw's input_ids is tok: the
    # advice said it was a value forward made, "no tensor of yours named input_ids".
    assert _line(PROGRAMS_213 / "library_passed.py", 20) == "out = cm(input_ids=tok)"
    assert _line(MYLIB, 75) == 'return inner_kw(input_ids=kwargs["input_ids"]) + h'
    log = torch213("library_passed_kwargs.log.gz")
    with read_trace(str(log)) as trace:
        frames = {f.name: f for f in insights(trace).recompiles.frames}
    (step,) = frames["inner_kw"].steps
    assert step.guard.location_label == "tok (inner_kw's input_ids, which forward passes on) passed in by the call at"
    (advice,) = frames["inner_kw"].advice
    assert "torch._dynamo.mark_dynamic(tok, 0)" in advice and "no tensor of yours" not in advice
    assert _sizes(log)[("L['kwargs']['input_ids'].size()[0]", ("[1/1]", "[1/1_1]"))] == (
        "tok.size()[0] (inner_kw's input_ids, which forward passes on)")
    assert run_cli("summary", log) == 0
    assert "made and passed to inner_kw" not in capsys.readouterr().out


def test_a_tensor_the_users_call_passes_twice_is_theirs_not_the_librarys():
    # library_passed.py (same): `cm(t, t)` into Net3's forward(self, x, target), which calls loss3(out, target).
    # forward's guard tree reads x alone and checks target as `L['x'] is L['target']`: target was said to be a value
    # forward made, "no tensor of yours named target". It is the user's t (through x, the same object).
    import gzip

    assert _line(PROGRAMS_213 / "library_passed.py", 23) == "out = cm(t, t)"
    log = torch213("library_passed_same.log.gz")
    text = gzip.open(log, "rt", encoding="utf-8").read()
    assert "LAMBDA_GUARD: L['x'] is L['target']" in text and "key='target', framelocals_idx=2" not in text
    with read_trace(str(log)) as trace:
        frames = {f.name: f for f in insights(trace).recompiles.frames}
    (step,) = frames["loss3"].steps
    assert step.guard.location_label == "t (loss3's target, which forward passes on) passed in by the call at"
    (advice,) = frames["loss3"].advice
    assert "torch._dynamo.mark_dynamic(t, 0)" in advice and "no tensor of yours" not in advice
    # (loss3's pred is forward's own `out`, named in no line of forward's tree: made by the library, as before)
    sizes = _sizes(log)
    assert sizes[("L['target'].size()[0]", ("[1/1]", "[1/1_1]"))] == (
        "t.size()[0] (loss3's target, which forward passes on)")


def test_a_wrappers_argument_is_not_named_by_a_name_its_first_use_reads_for_another(capsys):
    # wrapped_reassigned.py: torch.no_grad's wrapper frame runs scale(x), then shift(y, s) (`y = s; return y - 3`) or
    # star(*ys) (`return ys[1] - 3`). args[1]'s first use reads `y` (which holds s, args[1], by then) or `ys[1]`: it
    # was named y and ys. Named only where each of args[0..1] has a first use by a name of its own; else torch's.
    programs = PROGRAMS_213 / "wrapped_reassigned.py"
    assert _line(programs, 21) == "y = s" and _line(programs, 27) == "return ys[1] - 3"
    for variant, shown_line in (("shadow", "wrapped_reassigned.py:22 in shift · return y - 3"),
                                ("shadow_size", "wrapped_reassigned.py:22 in shift · return y - 3"),
                                ("star", "wrapped_reassigned.py:27 in star · return ys[1] - 3")):
        log = torch213(f"wrapped_reassigned_{variant}.log.gz")
        with read_trace(str(log)) as trace:
            (frame,) = insights(trace).recompiles.frames
        steps = {s.compile_id: s for s in frame.steps}
        assert steps["[0/3]"].guard.location_label == "args[1] first used at", variant
        assert steps["[0/1]"].guard.location_label == "x first used at"  # (scale's x: its args[0], read by x alone)
        assert run_cli("summary", log) == 0
        shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
        assert f"args[1] first used at {shown_line}" in shown
        assert "y first used" not in shown and "ys first used" not in shown and "(x at index 0" in shown
        if variant == "shadow_size":
            assert "x at index 0; args[1] at index 0" in shown and "y at index 0" not in shown


# library_args_target's stacks into forward and loss3 pass through nn.Module's call: [<module>, __call__,
# _wrapped_call_impl, _call_impl, compile_wrapper, forward]. Without those (a bound method compiled, `cm =
# torch.compile(net.forward)`), eval_frame's compile_wrapper alone is between the user's line and forward.
_MODULE_CALL = ('{"line": 511, "name": "__call__", "filename": 2, "loc": "return super().__call__(*args, **kwargs)"}, '
                '{"line": 1778, "name": "_wrapped_call_impl", "filename": 3, "loc": "return self._call_impl(*args, '
                '**kwargs)"}, {"line": 1789, "name": "_call_impl", "filename": 3, "loc": "return forward_call(*args, '
                '**kwargs)"}, ')


def test_a_call_whose_stack_shows_no_module_call_is_not_counted_into_a_position(tmp_path):
    # The positional rule's blind spot: with no module call on the stack, whether the call passed forward's self
    # unseen (a bound method) or by hand (torch.compile(Net3.forward)) was told by counting: as many arguments as the
    # locals the guard tree reads (self, x, target), self by hand. A trailing parameter the code never reads is in no
    # guard tree: `cm(x, t, u)` into a bound forward(self, x, target, weight=None) passes three, and the count took
    # u for target. Crafted from the real log: the module call taken off the stacks, u added to the call's line.
    # This guards a stack shape no torch 2.13 recording shows: [<module>, compile_wrapper (eval_frame.py), forward],
    # torch's wrapper alone between the user's line and a bound forward. torch 2.13 logs only [forward] for
    # `cm = torch.compile(net.forward)`; `cm(x, t, u)` (recorded: the rule never counts there, the stack holding no
    # line of the user's). The rule must hold for the shape all the same: a stack that does show the user's line
    # and torch's wrapper alone (another torch version, or another way of calling) is counted by nothing that
    # settles self, and a count there names the user's wrong tensor (u for target).
    import gzip

    real = gzip.open(torch213("library_args_target.log.gz"), "rt", encoding="utf-8").read()
    assert real.count(_MODULE_CALL) >= 4 and '"loc": "out = cm(x, t)"' in real
    crafted = tmp_path / "bound_method.log"
    crafted.write_text(real.replace(_MODULE_CALL, "").replace('"loc": "out = cm(x, t)"', '"loc": "out = cm(x, t, u)"'),
                       encoding="utf-8")
    with read_trace(str(crafted)) as trace:
        frames = {f.name: f for f in insights(trace).recompiles.frames}
        sizes = [z.source_text for z in insights(trace).dynamic_shapes.sizes]
    advice = [a for f in frames.values() for a in f.advice]
    assert not any("mark_dynamic(u" in a for a in advice) and not any("u.size()" in (s or "") for s in sizes)
    # (not settled: torch's words, as forward's, never a bare target that may be another tensor of the user's)
    (step,) = frames["forward"].steps
    assert step.guard.location_label == "forward's target passed in by the call at"
    assert any("the tensor passed as forward's target" in a for a in frames["forward"].advice)


def test_a_librarys_decorator_run_as_the_models_forward_is_named_by_the_model(capsys):
    # gpt2_train: transformers' decorator `wrapper` (generic.py:933) around GPT2LMHeadModel.forward is frame 0, its
    # tree typing L['self'] GPT2LMHeadModel but guarding no submodule of it (forward, frame 1, compiled apart):
    # hf_llama's wrapped_func is named "LlamaForCausalLM's forward" by its tree's submodules; this one was `wrapper`.
    # nn.Module's _call_impl called it (torch's compile_wrapper between), on the stack of its first attempt only
    # ([0/0]; the recompiles' [0/0_1], [0/1_1] log none): self is the module called.
    from compilescope.analyses.analyze import analyze
    from compilescope.analyses.run_facts.analysis import run_facts

    from ..conftest import shared

    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    with read_trace(str(log)) as trace:
        results = analyze(trace)
        facts = run_facts(results)
    frames = {f.name: f for f in results.insights.recompiles.frames}
    assert frames["wrapper"].function_label == "GPT2LMHeadModel's forward"
    assert {c.function_label for c in results.insights.compile_time.compiles
            if c.compile_id in ("[0/0]", "[0/1]")} == {"GPT2LMHeadModel's forward"}
    assert any(f.label.startswith("GPT2LMHeadModel's forward") for f in facts.frames.values())
    assert run_cli("summary", log) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "GPT2LMHeadModel's forward (generic.py:933, called at gpt2_train.py:13)" in shown
    assert "wrapper (generic.py:933" not in shown and "[0/1] wrapper" not in shown


def test_a_librarys_decorator_run_as_the_models_forward_names_its_arguments_by_the_model(capsys):
    # gpt2_train: the heading says "GPT2LMHeadModel's forward" for transformers' `wrapper`; the step, the advice and
    # the size row said "ids (wrapper's input_ids)", a function the user never sees. One name, everywhere.
    from ..conftest import shared

    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    assert run_cli("summary", log) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "ids (input_ids of GPT2LMHeadModel's forward) passed in by the call at gpt2_train.py:13" in shown
    assert "as input_ids of GPT2LMHeadModel's forward): mark that dimension dynamic with " \
           "`torch._dynamo.mark_dynamic(ids, 1)`" in shown
    assert "ids.size()[1] (input_ids of GPT2LMHeadModel's forward): s27 = 96" in shown
    assert "wrapper's" not in shown
    assert run_cli("summary", "--json", log) == 0
    said = capsys.readouterr().out
    assert "wrapper's" not in said
    assert {z["source_text"] for z in json.loads(said)["dynamic_shapes"]["sizes"]} >= {
        "ids.size()[1] (input_ids of GPT2LMHeadModel's forward)"}


def test_a_forward_reading_nothing_of_self_names_the_users_tensor_its_call_passed(capsys):
    # library_swap.py (swap): `cm(t, x)` (line 21) into NetSwap.forward(self, x, target), which swaps them
    # (`target, x = x, target`) and reads nothing of self: its tree reads locals 1 (x) and 2 (target), no local 0,
    # so nothing said a self came first, and the call was not resolved: mark_dynamic(x, 0), torch's name for
    # forward's x, read as the user's own x (the call's target, of 2 rows always). forward's x is the user's t.
    assert _line(PROGRAMS_213 / "library_swap.py", 21) == "out = cm(t, x)"
    import gzip

    assert _line(MYLIB, 83) == "target, x = x, target"
    log = torch213("library_passed_swap.log.gz")
    text = gzip.open(log, "rt", encoding="utf-8").read()
    assert "key='x', framelocals_idx=1" in text and "key='self'" not in text
    forward = _frame(log, "forward")
    (step,) = forward.steps
    assert step.guard.location_label == "t (forward's x) passed in by the call at"
    (advice,) = forward.advice
    assert "torch._dynamo.mark_dynamic(t, 0)" in advice and "mark_dynamic(x, 0)" not in advice
    assert _sizes(log)[("L['x'].size()[0]", ("[0/1]", "[0/1_1]"))] == "t.size()[0] (forward's x)"


def test_an_unsettled_argument_is_not_named_by_a_name_the_users_line_uses_for_another_tensor(capsys):
    # library_swap.py (twice): `cm(t, x) + cm(t, x)` (line 23): two calls on the line, so which argument forward's x
    # is is not settled (call_argument: None). torch's name `x` is also the user's x on that line, a different
    # tensor (forward's x is t): said "forward's x", never mark_dynamic(x, 0).
    assert _line(PROGRAMS_213 / "library_swap.py", 23) == "out = cm(t, x) + cm(t, x)"
    log = torch213("library_passed_twice.log.gz")
    forward = _frame(log, "forward")
    (step,) = forward.steps
    assert step.guard.location_label == "forward's x passed in by the call at"
    assert step.dynamic_of == "dimension 0 of forward's x"
    (advice,) = forward.advice
    assert "mark_dynamic(x, 0)" not in advice and "the tensor passed as forward's x" in advice
    assert _sizes(log)[("L['x'].size()[0]", ("[0/1]", "[0/1_1]"))] == "forward's x.size()[0]"
    assert run_cli("summary", log) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "mark_dynamic(x, 0)" not in shown and "size forward's x.size()[0]: s77 = 3" in shown


def test_a_call_through_functools_partial_does_not_name_the_tensor_at_the_calls_position(capsys):
    # library_swap.py (partial): `out = g(x)` (line 28), g = functools.partial(cm, t): the partial passes t as
    # forward's x, the user's x goes to forward's target. The line's first argument was taken for forward's x: it
    # said mark_dynamic(x, 0), the user's x (2 rows always), not t, whose size changed. The call passes one of the
    # two tensors forward's tree checks: its positions are not forward's, so torch's name stays, as forward's x
    # (the line's x is another tensor).
    assert _line(PROGRAMS_213 / "library_swap.py", 27) == "g = partial(cm, t)"
    assert _line(PROGRAMS_213 / "library_swap.py", 28) == "out = g(x)"
    log = torch213("library_passed_partial.log.gz")
    _said_as_forwards_x(log)


def test_an_argument_a_dict_spread_as_keywords_passed_is_named_by_its_item(capsys):
    # library_splat.py: `cm(**batch)` (line 12) into Net3.forward(self, x, target), batch = {"x": t, "target": x}:
    # forward's x is batch["x"] (t, whose size changes); the user's own x is forward's target. It said
    # mark_dynamic(x, 0), the user's x. A call passing nothing but one **batch passes each argument as its item.
    assert _line(PROGRAMS_213 / "library_splat.py", 12) == "out = cm(**batch)"
    log = torch213("library_passed_splat.log.gz")
    forward = _frame(log, "forward")
    (step,) = forward.steps
    assert step.dynamic_of == 'dimension 0 of `batch["x"]`'
    (advice,) = forward.advice
    assert 'torch._dynamo.mark_dynamic(batch["x"], 0)' in advice and "mark_dynamic(x, 0)" not in advice
    assert _sizes(log)[("L['x'].size()[0]", ("[0/1]", "[0/1_1]"))] == "batch[\"x\"].size()[0] (forward's x)"


def test_a_library_frame_the_users_compiled_code_calls_is_not_named_by_the_users_other_tensor(capsys):
    # library_outer.py: the user's compiled Mine.forward(self, a, target) returns `self.model(target, a)` (line 15);
    # Net3's forward and loss3, compiled apart after loss3's graph break, take the user's a (t, whose size changes)
    # as their target. The log does not settle it from that line (the call runs inside compiled code): it said
    # mark_dynamic(target, 0), the user's own target (2 rows always), then "forward's target", which beside that line
    # (in the user's forward) reads as the user's target too. Now Net3's forward, by the class its tree types self.
    assert _line(PROGRAMS_213 / "library_outer.py", 15) == "return self.model(target, a)"
    log = torch213("library_passed_outer.log.gz")
    with read_trace(str(log)) as trace:
        frames = {(f.name, f.first_line): f for f in insights(trace).recompiles.frames}
    for name, first_line, label in (("forward", 43, "target of Net3's forward"), (
            "loss3", 13, "target of Net3's forward (loss3's target, which Net3's forward passes on)")):
        (step,) = frames[(name, first_line)].steps
        assert step.guard.location_label == f"{label} passed in by the call at"
        assert step.dynamic_of == "dimension 0 of target of Net3's forward"
        (advice,) = frames[(name, first_line)].advice
        assert "mark_dynamic(target, 0)" not in advice and "forward's target" not in advice
    sizes = _sizes(log)
    # (in parentheses: "target of Net3's forward.size()[0]" read as the size of Net3's forward)
    assert sizes[("L['target'].size()[0]", ("[1/1]", "[1/1_1]"))] == "(target of Net3's forward).size()[0]"
    assert sizes[("L['target'].size()[0]", ("[2/1]", "[2/1_1]"))] == (
        "(target of Net3's forward).size()[0] (loss3's target, which Net3's forward passes on)")
    assert run_cli("summary", log) == 0
    shown = capsys.readouterr().out
    assert "forward's target" not in shown and "forward's\n" not in shown
    assert "forward.size()" not in shown and "(target of Net3's forward).size()[0]: s48 = 3" in shown


def test_a_library_frame_the_users_code_calls_whose_tree_types_no_self_is_named_by_its_library(monkeypatch, capsys):
    # As above, where the guard tree gives L['self'] no type (a module whose class it does not name): the step, the
    # dimension, the advice and Dynamic shapes said "the function's target", and loss3 lost "which forward passes
    # on". Now the frame is named by the package its file is in, mylib.
    import compilescope.analyses.passed_on as passed_on
    monkeypatch.setattr(passed_on, "object_type", lambda text, source: None)
    log = torch213("library_passed_outer.log.gz")
    with read_trace(str(log)) as trace:
        frames = {(f.name, f.first_line): f for f in insights(trace).recompiles.frames}
    for name, first_line, label in (("forward", 43, "target of mylib's forward"), (
            "loss3", 13, "target of mylib's forward (loss3's target, which mylib's forward passes on)")):
        (step,) = frames[(name, first_line)].steps
        assert step.guard.location_label == f"{label} passed in by the call at"
        assert step.dynamic_of == "dimension 0 of target of mylib's forward"
        (advice,) = frames[(name, first_line)].advice
        assert "the function's" not in advice and "as target of mylib's forward dynamic" in advice
    sizes = _sizes(log)
    assert sizes[("L['target'].size()[0]", ("[1/1]", "[1/1_1]"))] == "(target of mylib's forward).size()[0]"
    assert sizes[("L['target'].size()[0]", ("[2/1]", "[2/1_1]"))] == (
        "(target of mylib's forward).size()[0] (loss3's target, which mylib's forward passes on)")
    assert run_cli("summary", log) == 0
    assert "the function's" not in capsys.readouterr().out


def test_a_staticmethod_forward_with_an_unused_first_parameter_is_not_counted_as_having_self(capsys):
    # library_names.py (static): `cm(x, t)` (line 25) into NetStatic's staticmethod forward(unused, x): forward's x is
    # the user's t. Its tree reads x (local 1) and no local 0, as NetSwap's, whose local 0 is self: x was taken for
    # the call's first argument, and the advice said mark_dynamic(x, 0), the user's x (2 rows always). The call
    # passes enough arguments for either reading, so the log does not settle it: torch's name, as forward's.
    assert _line(PROGRAMS_213 / "library_names.py", 25) == "out = cm(x, t)"
    assert _line(MYLIB, 100) == "def forward(unused, x):"
    log = torch213("library_names_static.log.gz")
    _said_as_forwards_x(log)


def test_an_unsettled_argument_is_not_named_by_torchs_name_where_the_line_does_not_name_it(capsys):
    # library_names.py (rebound): `cm(*pair)` (line 28), pair = (t, x): forward's x is t, which the splat does not
    # settle. The line names no x, so torch's bare x was kept, and the advice said mark_dynamic(x, 0): the user's x
    # (line 21), their other tensor. Only the call's line is in the log, not the lines before it that bind names.
    assert _line(PROGRAMS_213 / "library_names.py", 28) == "out = cm(*pair)"
    assert _line(PROGRAMS_213 / "library_names.py", 21) == "x = torch.ones(2, 4)"
    log = torch213("library_names_rebound.log.gz")
    _said_as_forwards_x(log)


def test_a_star_args_tuple_is_no_argument_passed_on():
    # library_names.py (star): NetStar's forward calls `loss_star(target, out)` (mylib line 114), loss_star(*args):
    # its one local, args, is the tuple (t, out). of() read args as the tuple's first item, the user's t.
    from compilescope.analyses.compiled_frames import CompiledFrames
    from compilescope.analyses.installed_guards import GuardTrees
    from compilescope.analyses.passed_on import PassedOn

    assert _line(MYLIB, 114) == "return loss_star(target, out)"
    with read_trace(str(torch213("library_names_star.log.gz"))) as trace:
        frames = CompiledFrames(trace)
        passed_on = PassedOn(trace, frames, GuardTrees(trace))
        (cid,) = [c for c in trace.compiles if c is not None and c.frame_id == 1 and c.frame_compile_id == 1
                  and not c.attempt]
        function = frames.compiled(cid)
        assert function is not None and function.function == "loss_star"
        assert passed_on.of(cid, function, "args") is None
        # (forward's target, at the same line, is the user's t: the call is read)
        (forward,) = [c for c in trace.compiles if c is not None and c.frame_id == 0 and c.frame_compile_id == 1
                      and not c.attempt]
        passed = passed_on.of(forward, frames.compiled(forward), "target")
        assert passed is not None and passed.argument is not None and passed.argument.name == "t"


def test_several_sizes_that_changed_are_marked_by_name(capsys):
    # library_names.py (several): `cm(a, t)` (line 31): forward's x (a) changed size, then its target (t). The
    # advice listed both but said torch._dynamo.mark_dynamic(tensor, dim), a placeholder that reads as code.
    assert _line(PROGRAMS_213 / "library_names.py", 31) == "out = cm(a, t)"
    forward = _frame(torch213("library_names_several.log.gz"), "forward")
    (advice,) = forward.advice
    assert "mark_dynamic(tensor, dim)" not in advice
    assert "`torch._dynamo.mark_dynamic(a, 0)` and `torch._dynamo.mark_dynamic(t, 0)`" in advice


def _names_of(log, frame: str, local: str, dim: str) -> dict[str, str]:
    """How each place of the report names the argument `local` of the frame (its code's name) whose size
    at dim changed: the step's failed check, what the step made dynamic, the advice, the Dynamic shapes size; each
    without what of the tensor it says (`.size()[1]`, "'s dimension 1")."""
    with read_trace(str(log)) as trace:
        found = insights(trace)
    (recompiled,) = [f for f in found.recompiles.frames if f.name == frame]
    (step,) = [s for s in recompiled.steps if s.guard.change == "size"
               and s.guard.tensor in (local, f"kwargs['{local}']")]
    (advice,) = [a for a in recompiled.advice if a.startswith("Sizes change between calls (")]
    source = f"L['{local}'].size()[{dim}]" if step.guard.tensor == local else f"L['kwargs']['{local}'].size()[{dim}]"
    compiled = step.compile_id.split("_")[0] + ("]" if "_" in step.compile_id else "")
    (size,) = [z.source_text for z in found.dynamic_shapes.sizes if z.source == source and compiled in z.compile_ids]
    dynamic = step.dynamic_of or ""
    return {"step": step.guard.tensor_text or step.guard.tensor,
            "made dynamic": dynamic.removesuffix(f"' dimension {dim}").removesuffix(f"'s dimension {dim}")
            .removeprefix(f"dimension {dim} of "),
            "advice": advice.removeprefix("Sizes change between calls (").split(f" at index {dim}")[0],
            "size": (size or "").replace(f".size()[{dim}]", "", 1)}


@pytest.mark.parametrize(("log", "frame", "local", "dim", "name", "of"), [
    # gpt2_train.py:13, `cmodel(input_ids=ids, labels=ids)`: forward (frame 1), which transformers' wrapper runs with
    # `func(self, *args, **kwargs)`, takes the keyword the wrapper took: the user's ids, as in the wrapper's frame.
    # The step said input_ids, the advice mark_dynamic(ids, 1), the size "forward's input_ids.size()[1]".
    ("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log", "forward", "input_ids", "1", "ids",
     "input_ids of GPT2LMHeadModel's forward"),
    # library_args.py (multiline): `cm(torch.randn(n, 4),` / `target=t)`: forward's x is the expression. The step
    # said "forward's x, the first argument", the step's dimension and the size torch's bare x.
    ("library_args_multiline.log.gz", "forward", "x", "0", "`torch.randn(n, 4)`", "forward's x"),
    # library_passed.py (splat): `cm(**batch)`: forward's x is batch["x"]. The step said "forward's x, a keyword
    # argument", the advice and the size batch["x"].
    ("library_passed_splat.log.gz", "forward", "x", "0", '`batch["x"]`', "forward's x"),
    # library_wrapped.py:12, `cm(input_ids=ids)`: NetWrapped's decorator's wrapper passes its **kwargs to Inner's
    # forward (`target(**kwargs)`, mylib), not to the forward it decorates: the frame compiled apart is Inner's, so it
    # is not named as the wrapper is. Every place said "input_ids of NetWrapped's forward", the wrapper's words.
    ("library_names_wrapped.log.gz", "forward", "input_ids", "0", "ids",
     "forward's input_ids, which NetWrapped's forward passes on"),
])
def test_a_tensor_is_named_the_same_in_its_step_its_advice_and_its_size(log, frame, local, dim, name, of):
    from ..conftest import shared

    path = shared(log) if "/" in log else torch213(log)
    said = _names_of(path, frame, local, dim)
    plain = name.strip("`")  # (an expression's backticks, where `.size()[0]` follows it)
    assert (said["made dynamic"], said["advice"], said["size"]) == (name, name, f"{plain} ({of})")
    assert said["step"].startswith(f"{name} ({of})")  # (an expression's: ", the first argument" after it)


def test_an_unplaced_argument_a_library_passes_on_keeps_the_name_it_has_where_it_came_in():
    # library_args.py (multiline): `cm(torch.randn(n, 4),` / `target=t)`, the user's t on the line after the call's,
    # which the log does not hold: forward's target is not placed, and forward passes it on to loss2 (mylib line 35).
    # Its size was "forward's target" in [0/1] and "loss2's target" in [1/1]: one tensor, two names.
    assert _line(MYLIB, 35) == "return loss2(target, out)"
    sizes = _sizes(torch213("library_args_multiline.log.gz"))
    assert sizes[("L['target'].size()[0]", ("[0/1]", "[0/1_1]"))] == "forward's target.size()[0]"
    assert sizes[("L['target'].size()[0]", ("[1/1]", "[1/1_1]"))] == (
        "forward's target.size()[0] (loss2's target, which forward passes on)")


def test_an_item_of_a_library_frames_local_is_qualified_by_the_frame(capsys):
    # library_names.py (star): `cm(x, t)` (line 25); NetStar's forward calls `loss_star(target, out)`, whose args[0]
    # is the user's t. It was said bare, "args[0]", which an argparse user reads as their own args[0].
    assert _line(PROGRAMS_213 / "library_names.py", 25) == "out = cm(x, t)"
    log = torch213("library_names_star.log.gz")
    loss_star = _frame(log, "loss_star")
    (step,) = loss_star.steps
    assert step.guard.location_label == "loss_star's args[0] passed in by the call at"
    assert step.dynamic_of == "dimension 0 of loss_star's args[0]"
    (advice,) = loss_star.advice
    assert "(loss_star's args[0] at index 0" in advice and "passed as loss_star's args[0] dynamic" in advice
    assert _sizes(log)[("L['args'][0].size()[0]", ("[1/1]", "[1/1_1]"))] == "loss_star's args[0].size()[0]"


def test_a_long_expression_is_cut_in_labels_and_whole_in_the_advice(tmp_path):
    # library_calls.py (deep): the call's second argument is a 471-character expression (`----…--t`). The step's
    # check, its dimension and the Dynamic shapes size said it whole (7 wrapped terminal lines each); the HTML step
    # showed it in raw backticks, where the other places show <code>.
    from ..conftest import report

    log = torch213("library_calls_deep.log.gz")
    forward = _frame(log, "forward")
    (step,) = forward.steps
    cut = "`" + "-" * 29 + "…" + "-" * 28 + "t`"
    assert step.guard.location_label == f"{cut} (forward's target), the second argument of the call at"
    assert step.dynamic_of == f"dimension 0 of {cut}"
    (advice,) = forward.advice
    whole = "`" + "-" * 470 + "t`"
    # The list of sizes cuts it as the labels do (it is no code to paste: said whole, a 478-column line in the
    # terminal); the clause that says to give it a name keeps it whole, the code the user copies.
    assert advice.startswith(f"Sizes change between calls ({cut} at index 0")
    assert advice.count(whole) == 1 and f"of the tensor that {whole} makes dynamic" in advice
    assert _sizes(log)[("L['target'].size()[0]", ("[0/1]", "[0/1_1]"))] == (
        f"({cut[1:-1]}).size()[0] (forward's target)")  # (not "---…--t.size()[0]": minus t's size)
    report(log, tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert f'<span class="muted"><code>{cut[1:-1]}</code> (forward&#39;s target), the second argument' in page
    assert f"`{'-' * 29}" not in page
    # (the compile's own pages, [0/1]'s attempts, showed the raw backticks)
    pages = sorted(tmp_path.glob("-_0_1_*/index.html"))
    assert len(pages) == 2
    for compile_page in pages:
        shown = compile_page.read_text()
        assert f"<div><code>{cut[1:-1]}</code> (forward&#39;s target), the second argument" in shown
        assert f"`{'-' * 29}" not in shown


LONG_NAME = "encoder_hidden_states_for_cross_attention_with_padding_mask_applied"


def test_a_long_name_is_said_whole_in_labels_as_in_the_advice(capsys):
    # library_long.py (ident): `cm(torch.ones(2, 4), <a 67-character name>)` (line 21): forward's target is the
    # user's variable. The step's check, its dimension and the size cut it in the middle ("encoder_hidden_states_for_
    # cro…ion_with_padding_mask_applied") where the advice said it whole: one tensor spelled two ways. Only an
    # expression is cut.
    assert _line(PROGRAMS_213 / "library_long.py", 21) == f"out = cm(torch.ones(2, 4), {LONG_NAME})"
    log = torch213("library_long_ident.log.gz")
    forward = _frame(log, "forward")
    (step,) = forward.steps
    assert step.guard.location_label == f"{LONG_NAME} (forward's target) passed in by the call at"
    assert step.dynamic_of == f"{LONG_NAME}'s dimension 0"
    (advice,) = forward.advice
    assert f"torch._dynamo.mark_dynamic({LONG_NAME}, 0)" in advice
    assert _sizes(log)[("L['target'].size()[0]", ("[0/1]", "[0/1_1]"))] == f"{LONG_NAME}.size()[0] (forward's target)"
    assert run_cli("summary", "--json", log) == 0
    assert "…" not in capsys.readouterr().out


def test_an_expression_that_is_an_operation_is_in_parentheses_before_its_size():
    # library_long.py (mixed): `cm(torch.ones(n, 4) * 1.0, t)` (line 23): the size of forward's x read
    # "torch.ones(n, 4) * 1.0.size()[0]", 1.0's size times a tensor. A name, attribute, item or call needs none.
    assert _line(PROGRAMS_213 / "library_long.py", 23) == "out = cm(torch.ones(n, 4) * 1.0, t)"
    sizes = _sizes(torch213("library_long_mixed.log.gz"))
    assert sizes[("L['x'].size()[0]", ("[0/1]", "[0/1_1]", "[0/2]", "[0/2_1]"))] == (
        "(torch.ones(n, 4) * 1.0).size()[0] (forward's x)")
    assert sizes[("L['target'].size()[0]", ("[0/2]", "[0/2_1]"))] == "t.size()[0] (forward's target)"


E = "`torch.ones(n, 4) * 1.0`"
F = "`torch.randn(n, 4)`"
_PUT_IN = "torch._dynamo.mark_dynamic takes the tensor, so give it a name before the call, mark it, and pass that name"


def test_sizes_in_code_and_in_words_are_said_as_separate_clauses():
    # library_long.py (mixed): forward's x, an expression, changes size at the second call, its target (t) at the
    # third. The advice ran the words on after the call with a bare ", and": "mark_dynamic(t, 0), and mark dimension
    # 0 of the tensor that ... pass that name, or compile ..."; then, clauses apart, the call's still said "mark those
    # dimensions dynamic:" (it covers t's alone) and ", or compile with dynamic=True" hung off the last clause only.
    forward = _frame(torch213("library_long_mixed.log.gz"), "forward")
    (advice,) = forward.advice
    assert (f"mark t's dimension 0 dynamic with `torch._dynamo.mark_dynamic(t, 0)`; mark dimension 0 of the tensor that "
            f"{E} makes dynamic: {_PUT_IN}. Or compile with dynamic=True.") in advice
    assert "those dimensions" not in advice
    said = size_advice([("t", "0", ""), ("tokens", "1", ""), ("tokens", "0", ""), ('`batch["x"]`', "0", ""),
                        (E, "0", "")][1:])
    assert ('mark tokens\' dimensions 0 and 1 and dimension 0 of `batch["x"]` dynamic with '
            '`torch._dynamo.mark_dynamic(tokens, [0, 1])` and `torch._dynamo.mark_dynamic(batch["x"], 0)`; mark') in said
    # (calls alone: one clause, "those dimensions" all of them)
    said = size_advice([("t", "0", ""), ("u", "0", "")])
    assert said.endswith("mark those dimensions dynamic: `torch._dynamo.mark_dynamic(t, 0)` and "
                         "`torch._dynamo.mark_dynamic(u, 0)`, or compile with dynamic=True.")


def test_an_expressions_dimensions_are_one_clause_and_words_replace_the_placeholder():
    said = size_advice([("t", "0", ""), (E, "0", ""), (E, "1", "")])
    assert f"`torch._dynamo.mark_dynamic(t, 0)`; mark dimensions 0 and 1 of the tensor that {E} makes dynamic" in said
    assert said.count(_PUT_IN) == 1
    said = size_advice([("t", "0", ""), (E, "0", ""), (F, "1", "")])
    assert (f"`torch._dynamo.mark_dynamic(t, 0)`; mark dimension 0 of the tensor that {E} makes dynamic: {_PUT_IN}; "
            f"mark dimension 1 of the tensor that {F} makes dynamic") in said
    # (dynamic=False: the call is made before the call, as a single one's is)
    said = size_advice([("t", "0", ""), (E, "0", ""), (F, "1", "")], static=True)
    assert "mark t's dimension 0 dynamic with `torch._dynamo.mark_dynamic(t, 0)` before the call; mark dimension 0" in said
    assert said.endswith(". Or drop dynamic=False (torch then makes a size dynamic once it changes).")
    # (every size in words: the words, not the placeholder `mark_dynamic(tensor, dim)`)
    said = size_advice([(E, "0", ""), (F, "1", "")])
    assert "mark_dynamic(tensor, dim)" not in said
    assert said.startswith(f"Sizes change between calls ({E} at index 0; {F} at index 1): mark dimension 0 of the "
                           f"tensor that {E} makes dynamic: {_PUT_IN}; mark dimension 1 of the tensor that {F}")


def test_a_library_function_the_user_compiled_is_advised_by_no_name_of_its_own(capsys):
    # library_calls.py (unbound): `unbound(net, x, t)` (line 27), unbound = torch.compile(Net3.forward): forward's
    # stack is the frame alone, no line of the user's. Its target (the user's t) was advised as
    # torch._dynamo.mark_dynamic(target, 0): no `target` exists at the user's call. Now in words, by the frame.
    assert _line(PROGRAMS_213 / "library_calls.py", 27) == "out = unbound(net, x, t)"
    log = torch213("library_calls_unbound.log.gz")
    forward = _frame(log, "forward")
    (step,) = forward.steps
    assert step.dynamic_of == "dimension 0 of forward's target"
    (advice,) = forward.advice
    assert "mark_dynamic(target" not in advice
    assert "mark dimension 0 of the tensor passed as forward's target dynamic with torch._dynamo.mark_dynamic" in advice
    assert _sizes(log)[("L['target'].size()[0]", ("[0/1]", "[0/1_1]"))] == "forward's target.size()[0]"

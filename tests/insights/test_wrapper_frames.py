"""What a finding calls a value of a compile whose frame is a wrapper's, not the user's code (torch's wrap_inline,
a library's decorator): the wrapper's local is the user's model only where its guard tree types it as a module, and
a keyword the wrapper passes on is named as the keyword.

nograd_wrapped.py (torch 2.13): `@torch.no_grad() def scale(x)` compiled with dynamic=True: Dynamo compiles torch's
wrap_inline `inner(*args, **kwargs)` around it, whose args[0] is x, a tensor.
"""

from __future__ import annotations

import gzip
import json
import re
from html import unescape

from compilescope.analyses.compile_time import compile_times
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import TORCH213_PROGRAMS, cuda211, run_cli, torch213


def _specialized(log) -> str:
    with read_trace(str(log)) as trace:
        (finding,) = [f for f in insights(trace).findings if "specialized to a constant" in f.title]
    return finding.title + " " + finding.detail


def test_a_tensor_a_decorator_passes_on_is_not_named_the_model():
    log = torch213("nograd_wrapped.log.gz")
    assert "@torch.no_grad()\ndef scale(x):\n    if x.shape[0] == 5:" in (TORCH213_PROGRAMS / "nograd_wrapped.py").read_text()
    with gzip.open(log, "rt", encoding="utf-8") as f:
        text = f.read()
    # (torch's wrapper: its `fn` a function, its `args[0]` the user's tensor x, which the guard tree types so)
    assert '"co_name": "inner", "co_filename": ' in text and "external_utils.py" in text
    assert "GuardManager: source=L['args'][0], accessed_by=TupleGetItemGuardAccessor(0), type=<class 'torch.Tensor'>" in text
    assert "GuardManager: source=L['fn'], accessed_by=FrameLocalsGuardAccessor(key='fn', framelocals_idx=2), type=<class 'function'>" in text
    said = _specialized(log)
    assert "model" not in re.findall(r"\w+", said)


def test_a_tensor_a_decorator_passes_on_is_named_as_the_decorated_function_names_it(capsys):
    # nograd_wrapped: wrap_inline's `inner` passes its args on to torch.no_grad's decorate_context, which passes them
    # on to scale(x) (the symbol's user stack: `return fn(*args, **kwargs)`, `return func(*args, **kwargs)`, then
    # scale's line); the guard tree places args[0]'s TENSOR_MATCH at scale's `if x.shape[0] == 5:`, which reads x
    # only. The user's name is x; torch's failed guard stays as torch wrote it.
    log = torch213("nograd_wrapped.log.gz")
    with gzip.open(log, "rt", encoding="utf-8") as f:
        text = f.read()
    assert ('"user_stack": [{"line": 69, "name": "inner", "filename": 2, "loc": "return fn(*args, **kwargs)"}, '
            '{"line": 124, "name": "decorate_context", "filename": 3, "loc": "return func(*args, **kwargs)"}, '
            '{"line": 9, "name": "scale"') in text
    assert re.search(r"TENSOR_MATCH: check_tensor\(L\['args'\]\[0\], .*# if x\.shape\[0\] == 5: .* in scale", text)
    said = _specialized(log)
    assert "x.size()[0] (s33) = 5" in said and "args[" not in said
    with read_trace(str(log)) as trace:
        found = insights(trace)
    [frame] = found.recompiles.frames
    [step] = frame.steps
    assert step.guard.guard == "tensor 'args[0]' size mismatch at index 0. expected 5, actual 7"
    assert step.guard.location_label == "x first used at"
    assert step.dynamic_text == "[0/1] compiled x's dimension 0 as dynamic (s33)"
    assert {s.source_text for s in found.dynamic_shapes.symbols} == {"x.size()[0]"}
    assert run_cli("summary", str(log)) == 0
    shown = capsys.readouterr().out
    assert "x.size()[0]: s33 = 5 in [0/0]" in shown and "args[0] first used" not in shown



def test_the_model_a_wrapper_runs_is_the_local_its_guard_tree_types_as_a_module():
    # compiled_optimizer.py: torch's optimizer `wrapper(*args, **kwargs)` around Adam.step, args[0] the optimizer; its
    # step frame's self the same: none is a module (no submodule or parameter guarded), none is the model.
    # hf_llama: transformers' wrapped_func's args[0], a LlamaForCausalLM; profile_compiled: wrap_inline's fn.
    with gzip.open(torch213("compiled_optimizer.log.gz"), "rt", encoding="utf-8") as f:
        assert "source=L['args'][0], accessed_by=TupleGetItemGuardAccessor(0), type=<class 'torch.optim.adam.Adam'>" in f.read()
    for log, local in ((torch213("compiled_optimizer.log.gz"), None), (torch213("hf_llama.log.gz"), "args[0]")):
        with read_trace(str(log)) as trace:
            timed = compile_times(trace)
        assert {c.model_local for c in timed.compiles if c.called_from is not None} == {local}
    assert {c.name for c in timed.compiles} == {"LlamaForCausalLM's forward"}


def test_a_keyword_transformers_wrapper_passes_on_is_named_as_the_keyword():
    # hf_gpt2_generate.py (CUDA, torch 2.11): GPT2LMHeadModel.generate compiled; the frame is transformers'
    # generic.py wrapper(self, *args, **kwargs) around the forward, and generate() passes the forward's keywords
    # (input_ids, attention_mask): `kwargs` is the wrapper's own local, a name the user's code has nowhere.
    log = cuda211("hf_gpt2_generate.log.gz")
    with gzip.open(log, "rt", encoding="utf-8") as f:
        text = f.read()
    assert '"co_name": "wrapper", "co_filename": ' in text and "transformers/utils/generic.py" in text
    assert "source=L['kwargs']['input_ids']" in text
    said = _specialized(log)
    assert "input_ids.size()[1] (s27) = 8; attention_mask.size()[1] (s16) = 9" in said
    assert "kwargs[" not in said


def test_the_recompiles_and_the_sizes_of_a_wrapper_frame_say_the_users_names_as_the_findings_do(capsys):
    # hf_llama.py (torch 2.13): model.forward compiled, generate() calls it with keywords, and Dynamo compiles
    # transformers' wrapped_func(*args, **kwargs): [0/3] fails on input_ids (6 tokens, then 1), [0/4] on the KV
    # cache's keys, which generate() passes as `cache`. The user knows those by the keyword, not the wrapper's
    # `kwargs`; torch's failed guard stays as torch wrote it (what matches the log).
    log = torch213("hf_llama.log.gz")
    with gzip.open(log, "rt", encoding="utf-8") as f:
        text = f.read()
    assert "tensor 'kwargs['input_ids']' size mismatch at index 1. expected 6, actual 1" in text
    assert "L['kwargs']['cache'].layers[0].keys.size()[2]" in text
    with read_trace(str(log)) as trace:
        found = insights(trace)
    [frame] = found.recompiles.frames
    steps = {s.compile_id: s for s in frame.steps}
    inputs, keys = steps["[0/3]"].guard, steps["[0/4]"].guard
    assert inputs.guard == "tensor 'kwargs['input_ids']' size mismatch at index 1. expected 6, actual 1"
    # (generate()'s own input, the user's call passing no input_ids: torch's name, qualified by the frame as the
    # report names it, in the step as in the advice and the sizes)
    assert inputs.location_label == "input_ids of LlamaForCausalLM's forward passed in by the call at"
    assert keys.location_label == "cache.layers[0].keys first used at"
    assert keys.cache_text == "a tensor of transformers' KV cache: cache is a DynamicCache"
    assert steps["[0/4]"].dynamic_text == "[0/4] compiled cache.layers[0].keys' dimension 2 as dynamic (s87)"
    sizes = {s.source: s.source_text for s in found.dynamic_shapes.symbols if s.compile_id == "[0/4]"}
    assert sizes["L['kwargs']['cache'].layers[0].keys.size()[2]"] == "cache.layers[0].keys.size()[2]"
    # (the model's own positional input: args[1] of wrapped_func, which the log names by nothing else, stays)
    assert "args[1].size()[1]" in {s.source_text for s in found.dynamic_shapes.symbols}
    # One analysis decides: the terminal and --json say the same.
    assert run_cli("summary", str(log)) == 0
    shown = capsys.readouterr().out
    flat = " ".join(shown.replace("│", " ").split())
    assert "cache.layers[0].keys.size()[2]: s87" in shown and (
        "input_ids of LlamaForCausalLM's forward passed in by the call at") in flat
    assert "kwargs['cache'].layers[0].keys.size()" not in shown and "kwargs['input_ids'] passed" not in shown
    assert run_cli("summary", "--json", str(log)) == 0
    said = capsys.readouterr().out
    assert '"source_text": "cache.layers[0].keys.size()[2]"' in said or '"source_text":"cache.layers[0].keys.size()[2]"' in said
    assert json.loads(said)["recompiles"]["frames"][0]["steps"][2]["failed_guards"][0]["tensor_text"] == (
        "input_ids of LlamaForCausalLM's forward")


def test_a_wrapper_of_the_users_function_is_named_by_it_in_every_section(capsys, tmp_path):
    # nograd_wrapped: the frame compiled is torch's wrap_inline `inner` (external_utils.py:67), which passes its
    # arguments on to torch.no_grad's decorate_context and it to scale (the symbols' user stacks): the user wrote
    # scale, never inner. The recompiles, the compile-time rows, their finding and run facts (check, diff) all say so;
    # run facts' key keeps torch's name, which matches runs.
    from compilescope.analyses.analyze import analyze
    from compilescope.analyses.run_facts.analysis import run_facts

    log = torch213("nograd_wrapped.log.gz")
    with read_trace(str(log)) as trace:
        results = analyze(trace)
        facts = run_facts(results)
    [frame] = results.insights.recompiles.frames
    assert (frame.name, frame.runs, frame.function_label) == ("inner", "scale", "scale")
    assert frame.module_title == "torch's inner, which runs scale"
    assert {c.name for c in results.insights.compile_time.compiles} == {"scale"}
    [(key, facts_frame)] = facts.frames.items()
    assert key.endswith("_dynamo/external_utils.py:67 inner")
    assert facts_frame.label == "scale (external_utils.py:67, called at nograd_wrapped.py:20)"
    assert run_cli("summary", str(log)) == 0
    shown = capsys.readouterr().out
    assert "scale (called at nograd_wrapped.py:20) recompiled once" in shown
    assert "\nscale  (external_utils.py:67, called at nograd_wrapped.py:20)\n" in shown
    assert "inner" not in shown
    assert run_cli(str(log), "-o", str(tmp_path / "out"), "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert 'title="torch&#39;s inner, which runs scale">scale</strong>' in page and ">inner</strong>" not in page


def test_a_wrapper_shared_by_two_users_functions_is_named_by_neither(capsys, tmp_path):
    # two_wrapped: torch.no_grad's decorate_context wraps scale(x) and shift(y) in one code object, so Dynamo gives
    # both one frame (wrap_inline's `inner`): [0/0], [0/1] run scale (their symbols' user stacks say so), [0/2], [0/3]
    # shift, which log no user stack: only their guard trees' TENSOR_MATCH on args[0] sits in shift. Named by scale,
    # shift's compiles read "runs scale" and their args[0] "x"; no one function runs the frame, so torch's names stay
    # for the frame, and scale's own compiles, which the log proves, name args[0] `x` (they read `args[0]` while the
    # frame named none of its compiles). Shift's compiles prove theirs by their trees alone: every site of args[0] is
    # its first use in shift, `return y - 3`, a line reading y only (they read `args[0]` while stacks were asked for).
    from compilescope.analyses.analyze import analyze
    from compilescope.analyses.compiled_frames import passed_arguments
    from compilescope.analyses.installed_guards import GuardTrees
    from compilescope.analyses.run_facts.analysis import run_facts

    log = torch213("two_wrapped.log.gz")
    with gzip.open(log, "rt", encoding="utf-8") as f:
        text = f.read()
    assert re.search(r"TENSOR_MATCH: check_tensor\(L\['args'\]\[0\], .*# return y - 3 .* in shift", text)
    assert re.search(r"TENSOR_MATCH: check_tensor\(L\['args'\]\[0\], .*# if x\.shape\[0\] == 5: .* in scale", text)
    assert '"name": "shift"' not in text  # (no user stack of shift's)
    with read_trace(str(log)) as trace:
        results = analyze(trace)
        facts = run_facts(results)
        entries = [e for e in trace.compiles.values() if e.compile_id is not None]
        assert passed_arguments(entries, GuardTrees(trace)) == {}
    [frame] = results.insights.recompiles.frames
    assert (frame.name, frame.runs) == ("inner", None)
    assert {c.name for c in results.insights.compile_time.compiles} == {"inner"}
    [facts_frame] = facts.frames.values()
    assert "scale" not in facts_frame.label
    steps = {s.compile_id: s for s in frame.steps}
    assert steps["[0/3]"].guard.location_label == "y first used at"
    assert steps["[0/1]"].guard.location_label == "x first used at"
    assert run_cli("summary", str(log)) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "y first used at two_wrapped.py:17 in shift · return y - 3" in shown
    assert "x first used at two_wrapped.py:10 in scale · if x.shape[0] == 5:" in shown
    assert "[0/1] compiled x's dimension 0 as dynamic (s33)" in shown
    assert "torch._dynamo.mark_dynamic(x, 0)" in shown and "runs scale" not in shown
    assert run_cli("summary", "--json", str(log)) == 0
    said = json.loads(capsys.readouterr().out)
    assert [f["runs"] for f in said["recompiles"]["frames"]] == [None]
    assert {r["name"] for r in said["compile_time"]["compiles"]} == {"inner"}
    assert run_cli(str(log), "-o", str(tmp_path / "out"), "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert "which runs scale" not in page


def test_what_also_changed_in_a_wrapper_frame_is_named_as_the_user_wrote_it(capsys, tmp_path):
    # hf_llama's [0/3] (generate()'s first decoding step) found the KV cache's layers initialized since [0/2]: the
    # guard trees pin L['kwargs']['cache'].layers[0].is_initialized, transformers' wrapped_func passing generate()'s
    # `cache` keyword on. The steps said "also changed since [0/2]: kwargs['cache'].layers[0].is_initialized", a name
    # the user never wrote, where the guard's own tensor already read cache.layers[0].keys. The JSON keeps torch's
    # source; its name and text are the user's, as the terminal and the report say them.
    log = torch213("hf_llama.log.gz")
    with read_trace(str(log)) as trace:
        [frame] = insights(trace).recompiles.frames
    [step] = [s for s in frame.steps if s.compile_id == "[0/3]"]
    assert [(c.source, c.text) for c in step.also_changed] == [
        (f"L['kwargs']['cache'].layers[{i}].is_initialized", f"cache.layers[{i}].is_initialized False → True")
        for i in (0, 1)]
    assert run_cli("summary", str(log)) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "also changed since [0/2]: cache.layers[0].is_initialized False → True" in shown
    assert not re.search(r"also changed since \[\d/\d\]: kwargs\[", shown)  # (torch's failed guard stays verbatim)
    assert run_cli("summary", "--json", str(log)) == 0
    [said] = json.loads(capsys.readouterr().out)["recompiles"]["frames"]
    [changes] = [s["also_changed"] for s in said["steps"] if s["compile_id"] == "[0/3]"]
    assert changes[0]["source"] == "L['kwargs']['cache'].layers[0].is_initialized"
    assert (changes[0]["name"], changes[0]["text"]) == ("cache.layers[0].is_initialized",
                                                        "cache.layers[0].is_initialized False → True")
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = unescape((tmp_path / "r" / "index.html").read_text())
    section = page[page.index('id="insights-recompiles"'):]
    section = section[:section.index("</table>")]
    assert "also changed since [0/2]: <code>cache.layers[0].is_initialized</code> False → True" in section
    assert "also changed since [0/2]: <code>kwargs" not in section
    # (the compile's own page says it too)
    notes = [unescape(n) for p in (tmp_path / "r").glob("*_0_3_*/*.html")
             for n in re.findall(r'<div class="recompile-note">(.*?)</div>', p.read_text())]
    assert notes and all("kwargs['cache']" not in n for n in notes)
    assert any("cache.layers[0].is_initialized False → True" in re.sub(r"<[^>]+>", "", n) for n in notes)


def test_a_kv_cache_generate_passes_on_is_named_by_its_keyword_in_what_also_changed(capsys):
    # hf_gpt2_generate (CUDA, torch 2.11): GPT2's generate() passes the cache as past_key_values to wrapped_func.
    assert run_cli("summary", str(cuda211("hf_gpt2_generate.log.gz"))) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "also changed since [0/2]: past_key_values.layers[0].is_initialized False → True" in shown
    assert not re.search(r"also changed since \[\d/\d\]: kwargs\[", shown)

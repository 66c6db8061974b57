"""A recompile caused by a failed check of a tensor says where the user's code meets that tensor, and a KV cache of
transformers that grew in generate() gets the fix transformers documents, on real logs.

Torch's text for such a guard (`tensor 'x' size mismatch at index 0. expected 4, actual 8`) names no line; the compile
whose guard failed logged its guard tree (`dynamo_cpp_guards_str`), where the tensor's TENSOR_MATCH guard names the
line it was made on, and its graph, whose nodes name theirs.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles.analysis import recompiles
from compilescope.analyses.user_locations import ArgumentSlot, CallArgument, call_argument
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, cuda211, peer, run_cli, shared, torch213
from .helpers import tree_reads

PROGRAMS_213 = REPO / "tests" / "data" / "torch213" / "programs"
PROGRAMS_211 = REPO / "tests" / "data" / "cuda_torch211" / "programs"


def _frames(log: Path) -> dict:
    with read_trace(str(log)) as trace:
        return {f.name: f for f in insights(trace).recompiles.frames}


def _line(program: Path, number: int) -> str:
    return program.read_text().splitlines()[number - 1].strip()


def _raw_guard_lines(log: Path, needle: str) -> list[str]:
    opener = gzip.open if log.suffix == ".gz" else open
    with opener(log, "rt", encoding="utf-8") as f:
        return [line for line in f if needle in line]


def test_a_failed_size_dtype_or_requires_grad_check_names_the_line_that_first_used_the_tensor():
    # recompiles.py: g(x) is `return x * 2 + 1` (line 25, its only line); called with sizes 4 then 8, then float64,
    # then requiring grad: three recompiles, each failing a check of x that [0/0], [0/1], [0/2] installed.
    program = PROGRAMS_213 / "recompiles.py"
    assert _line(program, 24) == "def g(x):" and _line(program, 25) == "return x * 2 + 1"
    g = _frames(torch213("recompiles.log"))["g"]
    placed = [(s.guard.change, s.guard.tensor, s.guard.location_kind, s.guard.location.filename.endswith(
        "programs/recompiles.py"), s.guard.location.line, s.guard.location.code) for s in g.steps]
    assert placed == [(change, "x", "first_use", True, 25, "return x * 2 + 1")
                      for change in ("size", "dtype", "requires_grad")]
    # The size recompile made the size a symbol (the log's create_symbol s77 for L['x'].size()[0]); the others did not.
    assert [s.dynamic_symbol for s in g.steps] == ["s77", None, None]
    # Other guards keep the line torch names for them: h's `n == 1` came from `return x + n`, line 29.
    h = _frames(torch213("recompiles.log"))["h"]
    assert {(s.guard.location_kind, s.guard.location.line, s.guard.tensor) for s in h.steps} == {("guard", 29, None)}


def test_the_size_advice_names_the_tensor_and_the_mark_dynamic_call_that_removes_the_recompile():
    # diff_pair.py's "dynamic" variant calls torch._dynamo.mark_dynamic(x, 0) before each call, and its log
    # (diff_dynamic) compiles f once; the base variant recompiles on x's size at index 0.
    assert "torch._dynamo.mark_dynamic(x, 0)" in (PROGRAMS_213 / "diff_pair.py").read_text()
    assert _frames(torch213("diff_dynamic.log.gz")) == {}
    f = _frames(torch213("diff_base.log.gz"))["f"]
    assert (f.steps[0].guard.location.line, f.steps[0].guard.location.code) == (31, _line(PROGRAMS_213 / "diff_pair.py", 31))
    assert f.advice == ["Sizes change between calls (x at index 0): mark that dimension dynamic with "
                        "`torch._dynamo.mark_dynamic(x, 0)`, or compile with dynamic=True."]


def test_a_tensor_first_used_inside_torch_is_placed_at_the_users_line_the_graph_gives():
    # train_break_recompile.py: forward's `self.norm(x)` (line 21) is where x is first used, and the resume function
    # after the print computes `self.down(h)` on line 23; torch's TENSOR_MATCH guards name its own lines (LayerNorm's
    # and Linear's forward), the graphs' node comments the program's.
    log = cuda211("train_break_recompile.log.gz")
    assert any("nn/modules/normalization.py:" in line for line in _raw_guard_lines(log, "TENSOR_MATCH: check_tensor(L['x'], "))
    h_matches = _raw_guard_lines(log, "TENSOR_MATCH: check_tensor(L['h'], ")
    assert h_matches and all("nn/modules/linear.py:" in line for line in h_matches)
    program = PROGRAMS_211 / "train_break_recompile.py"
    frames = _frames(log)
    placed = {name: (f.steps[0].guard.tensor, f.steps[0].guard.location_kind, f.steps[0].guard.location.line,
                     f.steps[0].guard.location.code) for name, f in frames.items()}
    assert placed == {"forward": ("x", "first_use", 21, _line(program, 21)),
                      "torch_dynamo_resume_in_forward_at_22": ("h", "first_use", 23, _line(program, 23))}
    assert "self.norm(x)" in _line(program, 21) and "self.down(h)" in _line(program, 23)


def test_a_recompiled_resume_function_is_said_in_the_users_terms(capsys):
    """Dynamo names the code after a graph break torch_dynamo_resume_in_<f>_at_<line>: a user reads it as the rest of
    forward after its break, the print on train_break_recompile.py's line 22, in the finding and the section."""
    log = cuda211("train_break_recompile.log.gz")
    program = PROGRAMS_211 / "train_break_recompile.py"
    assert "# graph break" in _line(program, 22) and _line(program, 22).startswith("print(")
    frames = _frames(log)
    assert frames["torch_dynamo_resume_in_forward_at_22"].function_label == "forward (after its graph break at line 22)"
    assert frames["forward"].function_label == "forward"
    assert run_cli("summary", str(log)) == 0
    out = capsys.readouterr().out
    recompiles = out[out.index("Recompiles ("):]
    heads = [" ".join(line.split()) for line in recompiles.splitlines()[1:] if line.strip() and line[0] not in " │├└"]
    assert heads[:2] == ["forward (train_break_recompile.py:20)",
                         "forward (after its graph break at line 22) (train_break_recompile.py:22)"], heads
    assert "torch_dynamo_resume_in" not in recompiles.split("\n\n", 1)[0]
    # the finding: both compiled parts of forward recompiled for x's size
    with read_trace(str(log)) as trace:
        [finding] = [f for f in insights(trace).findings if f.section == "recompiles"]
    assert finding.detail.startswith("forward, forward (after its graph break at line 22): ")


def test_a_number_torch_made_dynamic_after_one_recompile_is_said_so():
    """automatic_dynamic.py calls scale with factor 2, 3, 4, 5: [0/1] recompiled for `factor == 2` and made factor a
    symbol (its create_symbol for L['factor']); 4 and 5 reuse it. One recompile that torch settled: INFO, and the
    advice is not to pass the number as a tensor."""
    log = torch213("automatic_dynamic.log.gz")
    with gzip.open(log, "rt") as f:
        text = f.read()
    [symbol] = re.findall(r'"create_symbol": \{"symbol": "(s\d+)", "val": "3", "vr": "[^"]*", "source": "L\[\'factor\'\]"', text)
    scale = _frames(log)["scale"]
    [step] = scale.steps
    assert (step.compile_id, step.guard.guard, step.dynamic_symbol) == ("[0/1]", "factor == 2", symbol)
    assert step.dynamic_text == f"[0/1] compiled factor as dynamic ({symbol})" and scale.settled
    assert scale.advice == ["torch compiled factor as dynamic once it changed (automatic dynamic): 1 recompile for "
                            "it, and none while it keeps changing. To avoid even that one, compile with dynamic=True."]
    with read_trace(str(log)) as trace:
        [finding] = [f for f in insights(trace).findings if f.section == "recompiles"]
    assert (finding.severity, finding.title) == ("info", "scale recompiled once, then ran with factor dynamic")
    # recompiles.log's h: dynamic=False keeps n a constant, so each value recompiles, to the limit: no symbol
    h = _frames(torch213("recompiles.log"))["h"]
    assert not any(st.dynamic_symbol for st in h.steps) and not h.settled


def test_with_no_line_in_the_log_the_compiled_function_is_named():
    # tlparse's gen_many_frames.py log (an older torch): its TENSOR_MATCH guards carry no line, and kernel (line 6,
    # as every dynamo_start stack ends) recompiles at each new size of x.
    log = peer("multi_rank_logs/dedicated_log_torch_trace_rank_3.log")
    assert not [line for line in _raw_guard_lines(log, "TENSOR_MATCH: check_tensor(L['x'], ") if "#" in line]
    assert _raw_guard_lines(log, '{"line": 6, "name": "kernel", "filename": 1}]}')
    kernel = _frames(log)["kernel"]
    assert {(s.guard.location_kind, s.guard.location.line, s.guard.location.function) for s in kernel.steps} == {
        ("function", 6, "kernel")}
    assert kernel.steps[0].guard.location_label == "x is an input of the compiled function at"


def test_generates_kv_cache_that_grew_is_named_and_given_the_static_cache_fix(tmp_path, capsys):
    # hf_gpt2_generate: [0/4] failed [0/3]'s guard on the keys of past_key_values' first layer (8 -> 9). [0/3]'s guard
    # tree types past_key_values as transformers' DynamicCache and places the keys' TENSOR_MATCH at cache_utils.py:158
    # (get_seq_length); [0/4] was called from generate() (its dynamo_start stack) and made the size the symbol s53.
    log = cuda211("hf_gpt2_generate.log.gz")
    [typed] = {line.split("type=", 1)[1].split(",", 1)[0] for line in _raw_guard_lines(
        log, "GuardManager: source=L['kwargs']['past_key_values'], ")}
    assert typed == "<class 'transformers.cache_utils.DynamicCache'>"
    assert any("cache_utils.py:158 in get_seq_length" in line
               for line in _raw_guard_lines(log, "TENSOR_MATCH: check_tensor(L['kwargs']['past_key_values'].layers[0].keys, "))
    wrapper = _frames(log)["wrapper"]
    by_id = {s.compile_id: s for s in wrapper.steps}
    grew = by_id["[0/4]"].guard
    assert (grew.tensor, grew.cache_source, grew.cache_class) == (
        "kwargs['past_key_values'].layers[0].keys", "past_key_values", "DynamicCache")
    # (the tensor as the keyword generate() passed names it: the wrapper's `kwargs` is no name of the user's)
    assert grew.tensor_text == "past_key_values.layers[0].keys"
    assert (grew.location_kind, grew.location.filename.endswith("transformers/cache_utils.py"), grew.location.line,
            grew.location.function) == ("first_use", True, 158, "get_seq_length")
    assert by_id["[0/4]"].dynamic_symbol == "s53"
    # The prompt length is no cache's: no cache named. [0/1]'s input_ids (16 -> 24 tokens) came from the program's own
    # model(input_ids=ids) at line 20 (its dynamo_start stack): the size advice names it and that call. [0/3]'s
    # (8 -> 1: generate()'s first decode step, its stack passes through generate()) is generate()'s own input: no
    # tensor of the user's to mark.
    assert [by_id[c].guard.cache_class for c in ("[0/1]", "[0/3]")] == [None, None]
    assert wrapper.kv_caches == ["DynamicCache"]
    [cache_fix] = [a for a in wrapper.advice if "KV cache" in a]
    assert ("(past_key_values, a DynamicCache)" in cache_fix and "generate()" in cache_fix
            and 'cache_implementation="static"' in cache_fix and "dynamic=True" in cache_fix)
    # (named as the call names it: `model(input_ids=ids)`, the one call of line 20 that passes a keyword input_ids;
    # print's and float's pass none)
    assert ("Sizes change between calls (ids at index 1, passed in by the call at hf_gpt2_generate.py:20 as "
            "input_ids of GPT2LMHeadModel's forward): mark that dimension dynamic with "
            "`torch._dynamo.mark_dynamic(ids, 1)`") in " ".join(wrapper.advice)
    [generated] = [a for a in wrapper.advice if a.startswith("transformers' generate() makes the inputs it passes")]
    assert "(input_ids of GPT2LMHeadModel's forward at index 1:" in generated  # (as its step and size say it)

    assert run_cli("summary", log) == 0
    out = re.sub(r"[\s│├└─]+", " ", capsys.readouterr().out)
    assert "a tensor of transformers' KV cache: past_key_values is a DynamicCache" in out
    assert "past_key_values.layers[0].keys first used at cache_utils.py:158 in get_seq_length" in out
    assert "a size of transformers' KV cache (DynamicCache) among them" in out  # the finding, in Fix first
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    # (the page says what the terminal does: the keyword generate() passed, not the wrapper's kwargs)
    assert ('<span class="kv-cache">a tensor of transformers&#39; KV cache: past_key_values is a '
            'DynamicCache</span>') in page
    assert "past_key_values.layers[0].keys first used at</span>" in page


def test_no_kv_cache_advice_without_a_cache_in_the_log():
    # The static-cache run recompiles on len(kwargs) (generate's decode step passes other arguments), no size.
    for log in (cuda211("hf_gpt2_static_cache.log.gz"), torch213("recompiles.log"), torch213("dynamic_shapes.log")):
        frames = _frames(log).values()
        assert frames and not any("KV cache" in a for f in frames for a in f.advice)
        assert not any(f.kv_caches for f in frames)


def test_a_call_that_passes_other_keyword_arguments_is_said_so_not_a_list_that_changed_length(capsys):
    # Both guards are on the **kwargs of transformers' `wrapper` (generic.py:933), as the raw recompile_reasons say:
    # the static-cache run's decode step fails `len(kwargs) == 6` (generate passes another set than the prefill), and
    # the generate run's [0/2] fails `not ___dict_contains('return_dict', kwargs)` (generate passes return_dict, the
    # program's own calls, `model(input_ids=ids)`, do not). No list or tuple is involved: padding one fixes nothing.
    static = cuda211("hf_gpt2_static_cache.log.gz")
    assert any("0/0: len(kwargs) == 6" in line for line in _raw_guard_lines(static, "len(kwargs)"))
    wrapper = _frames(static)["wrapper"]
    assert [s.guard.change for s in wrapper.steps] == ["keyword_arguments"]
    assert wrapper.changes == ["keyword_arguments"]
    assert not any("list/tuple" in a for a in wrapper.advice)
    assert any(a.startswith("Calls pass different keyword arguments") for a in wrapper.advice)

    generate = cuda211("hf_gpt2_generate.log.gz")
    assert _raw_guard_lines(generate, "___dict_contains('return_dict', kwargs)")
    steps = {s.compile_id: s for s in _frames(generate)["wrapper"].steps}
    assert steps["[0/2]"].guard.guard == "not ___dict_contains('return_dict', kwargs)"
    assert steps["[0/2]"].guard.change == "keyword_arguments"

    assert run_cli("summary", static) == 0
    out = re.sub(r"[\s│├└─]+", " ", capsys.readouterr().out)
    assert "[0/1]: keyword arguments changed" in out and "changed: keyword arguments" in out  # the tree, Fix first
    assert "container length" not in out and "list/tuple" not in out


def test_a_tensor_first_used_in_torch_code_whose_path_torch_clipped_is_not_called_the_users_line():
    # flex_sdpa_model: attn (`@torch.compile(dynamic=False)`, line 9) recompiled on k's size (128 -> 256). [0/0]'s
    # guard tree places k's TENSOR_MATCH at "nn/attention/_utils.py:51" (torch clips the path), the one file of the
    # log with that tail being torch's (a code object's file in the same tree); no node of its graph names a user line.
    run = shared("gpu-torch211/flex_sdpa_model")
    log = next(run.glob("dedicated_log_torch_trace*.log"))
    k_checks = _raw_guard_lines(log, "TENSOR_MATCH: check_tensor(L['k'], ")  # attn's [0/0] and [0/1], sdpa's [1/0]
    assert [c.rstrip().endswith("# nn/attention/_utils.py:51 in _validate_sdpa_input") for c in k_checks] == [
        True, False, True]
    assert any('file "/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/attention/_utils.py"' in line
               for line in _raw_guard_lines(log, "<code object _validate_sdpa_input "))
    assert _line(run / "script.py", 9) == "@torch.compile(dynamic=False)"
    attn = _frames(log)["attn"]
    guard = attn.steps[0].guard
    assert (guard.tensor, guard.location_kind, guard.location.short) == ("k", "function", "flex_sdpa_model.py:9")


def test_the_size_advice_to_a_function_compiled_with_dynamic_false_is_not_dynamic_true(capsys):
    # Both compiles of attn record dynamic=False's config (torch's make_set_enable_dynamic): automatic_dynamic_shapes
    # false, assume_static_by_default true; sdpa, compiled with dynamic=True, records assume_static_by_default false.
    log = next(shared("gpu-torch211/flex_sdpa_model").glob("dedicated_log_torch_trace*.log"))
    metrics = _raw_guard_lines(log, '{"compilation_metrics": {"compile_id": "0/')
    assert len(metrics) == 2 and all('\\"automatic_dynamic_shapes\\": false' in m
                                     and '\\"assume_static_by_default\\": true' in m for m in metrics)
    [advice] = _frames(log)["attn"].advice
    assert "compiled with dynamic=False" in advice and "torch._dynamo.mark_dynamic(k, 2)" in advice
    assert "drop dynamic=False" in advice and "dynamic=True" not in advice
    # A function compiled with the default config keeps the dynamic=True advice (recompiles.py: g's sizes 4 then 8).
    assert any("or compile with dynamic=True" in a for a in _frames(torch213("recompiles.log"))["g"].advice)


def _placed_reading_trees(log: Path) -> tuple[list, set[tuple[int, int]], list[tuple[int, int]]]:
    """The recompiles of log, with the guard trees GuardTrees parsed for the report before (as analyze does for the
    source pages): (failed guards, the trees' payloads, the payloads whose text the recompiles read)."""
    with tree_reads(log) as reads:
        found = recompiles(reads.trace, guard_trees=reads.trees)
    failed = [g for f in found.frames for s in f.steps for g in s.failed_guards]
    return failed, reads.guards, reads.read


def test_a_failed_check_of_a_tensor_is_placed_from_the_guard_trees_the_report_parsed_once():
    # recompiles.py: g's three recompiles fail checks of x that [0/0], [0/1], [0/2] installed; hf_llama.py: [0/4]
    # fails the size of a DynamicCache's keys. Each placed from the tree GuardTrees parsed (its TENSOR_MATCH line, the
    # GuardManager line typing the cache), not from the tree's text read again for each check (three times in each log).
    failed, guards, read = _placed_reading_trees(torch213("recompiles.log"))
    assert len(guards) == 8 and read == []
    assert {(g.tensor, g.location.line, g.location_kind) for g in failed if g.tensor} == {("x", 25, "first_use")}
    failed, guards, read = _placed_reading_trees(torch213("hf_llama.log.gz"))
    # (naming the frame by the model transformers' decorator runs reads the parsed trees too: compiled_frames.
    # wrapper_module, from the types TreeLine.local keeps of the wrapper's locals)
    assert len(guards) == 5 and read == []
    [cache] = [g for g in failed if g.cache_class is not None]
    assert (cache.tensor, cache.cache_class, cache.cache_source) == ("kwargs['cache'].layers[0].keys", "DynamicCache",
                                                                     "cache")


def test_a_tensor_subclass_attribute_is_found_in_the_guard_trees_the_report_parsed_once():
    # tensor_subclasses.py: `x.unit == 'cm'` failed, x a UnitTensor (its TENSOR_MATCH names the class): read from the
    # tree GuardTrees parsed. (A subclass's metadata check still reads its tree's text, for the object it hangs under.)
    failed, _, read = _placed_reading_trees(torch213("tensor_subclasses.log.gz"))
    assert read == []
    assert [(g.guard, g.subclass, g.subclass_object) for g in failed if g.subclass] == [("x.unit == 'cm'", "UnitTensor", "x")]
    failed, _, read = _placed_reading_trees(torch213("tensor_subclasses_meta.log.gz"))
    assert len(read) == 1
    assert [(g.subclass, g.subclass_object) for g in failed if g.subclass] == [("UnitTensor", "x"),
                                                                              ("ScaledTensor", "self.weight")]


def test_a_size_marked_dynamic_is_found_in_the_guard_tree_the_report_parsed_once():
    # serve_varying.py (fixed): tokens' dimension 0 marked dynamic, [0/0] compiled at size 1 and its size check failed.
    # The mark comes from [0/0]'s DIMENSION_DYNAMIC_MARKING_GUARD line as GuardTrees parsed it, not from the tree's
    # text read again for the failed check (once before).
    failed, guards, read = _placed_reading_trees(torch213("serve_varying_fixed.log.gz"))
    assert len(guards) == 2 and read == []
    assert [(g.compile_id, g.tensor, g.marked) for g in failed if g.marked] == [
        ("[0/0]", "tokens", "torch._dynamo.mark_dynamic")]


def test_a_tensor_and_a_kv_cache_whose_sources_hold_commas_are_placed_and_named():
    # odd_sources.py: d[(1, 2)] (a tuple key) and c['a, b'] (a str key, a DynamicCache) recompile in turn; torch's
    # TENSOR_MATCH reads `check_tensor(L['d'][(1, 2)], Tensor, DispatchKeySet(...` and the cache's GuardManager line
    # `source=L['c']['a, b'], ...`. A source read up to its first ", " (`L['d'][(1`) found no tensor check and no cache:
    # both were said "an input of the compiled function" at the def line (12), not first used at line 14.
    text = gzip.decompress(torch213("odd_sources.log.gz").read_bytes()).decode()
    assert "TENSOR_MATCH: check_tensor(L['d'][(1, 2)], Tensor, DispatchKeySet(" in text
    assert re.search(r"GuardManager: source=L\['c'\]\['a, b'\], accessed_by=.*type=<class 'transformers\.cache_utils"
                     r"\.DynamicCache'>", text)
    failed, _, read = _placed_reading_trees(torch213("odd_sources.log.gz"))
    assert read == []
    placed = {(g.tensor, g.location.line, g.location_kind) for g in failed if g.tensor and g.location}
    assert placed == {("d[(1, 2)]", 14, "first_use"), ("c['a, b'].keys", 14, "first_use")}
    [cache] = [g for g in failed if g.cache_class is not None]
    assert (cache.cache_class, cache.cache_source) == ("DynamicCache", "c['a, b']")


def test_a_size_of_a_value_the_library_made_is_not_placed_at_the_users_call_nor_marked_dynamic_by_its_name():
    # gpt2_train.py:13 is `out = cmodel(input_ids=ids, labels=ids)`. GPT2LMHeadModel's compiled forward calls
    # transformers' ForCausalLMLoss(logits, labels, ...) (frame 3) and its output dataclass's generated __init__
    # (<string>:2, frame 4), each compiled apart inside that call: their `logits` is the model's, not the call's.
    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    assert _line(log.parent / "script.py", 13) == "out = cmodel(input_ids=ids, labels=ids)"
    with read_trace(str(log)) as trace:
        found = insights(trace)
    init = next(f for f in found.recompiles.frames if f.name == "__init__")
    assert init.steps[0].guard.tensor == "logits" and init.steps[0].dynamic_symbol == "s3"
    assert not any("mark_dynamic(logits" in advice for advice in init.advice)
    assert any("there is no tensor of yours named logits to mark dynamic" in advice and "dynamic=True" in advice
               for advice in init.advice)
    # Dynamic shapes: [3/1]'s logits size is placed where the loss first used it, not at the user's call; labels,
    # which the call passes by that name, still is.
    placed = {(s.compile_id, s.source): (s.passed_in, s.location.short if s.location else None)
              for s in found.dynamic_shapes.symbols if s.compile_id == "[3/1]"}
    assert placed[("[3/1]", "L['logits'].size()[1]")] == (False, "loss_utils.py:59")
    assert placed[("[3/1]", "L['labels'].size()[1]")] == (True, "gpt2_train.py:13")
    # The frames the call entered keep the call's placement: forward's input_ids, which the call passes.
    forward = next(f for f in found.recompiles.frames if f.name == "forward")
    assert forward.steps[0].guard.location_kind == "call"


def test_a_dtype_recompile_of_two_models_sharing_a_forward_is_said_so_not_cast_the_inputs():
    # autotune_cudagraphs.py compiles a float16 MLP with max-autotune (called at line 18) and a float32 MLP with
    # reduce-overhead (line 23): MLP.forward's [0/1] failed [0/0]'s `tensor 'x' dtype mismatch`, and each compile's
    # guard tree checks its own model's parameters, float16 in [0/0], float32 in [0/1].
    log = next(shared("gpu-torch211/autotune_cudagraphs/output.txt").parent.glob("dedicated_log_torch_trace*.log"))
    program = log.parent / "script.py"
    assert _line(program, 18).startswith("print(\"autotune\", a(x)") and _line(program, 23) == "y = b(x2)"
    weights = _raw_guard_lines(log, "TENSOR_MATCH: check_tensor(L['self']._modules['l1']._parameters['weight']")
    assert ["torch.float16" in w for w in weights] == [True, False] and "torch.float32" in weights[1]
    forward = _frames(log)["forward"]
    assert forward.changes == ["dtype"]
    assert not any("cast them to one dtype" in advice for advice in forward.advice)
    (advice,) = forward.advice
    assert "[0/0] and [0/1] compiled MLP.forward for two models, called at autotune_cudagraphs.py:18, 23" in advice
    assert "float16 in [0/0] and float32 in [0/1]" in advice
    assert ("[0/0] benchmarked kernels while compiling (max-autotune); [0/1] ran as CUDA graphs (reduce-overhead)"
            in advice)


def test_a_tensor_the_users_call_passes_positionally_to_a_librarys_forward_is_placed_at_that_call():
    # library_args.py (positional) calls mylib's Net (a package under lib/python3.11/site-packages) as `cm(t)`, line 24,
    # into `forward(self, x)`: x's size recompiles. The call's text does not name x: it passes it by position.
    program = PROGRAMS_213 / "library_args.py"
    assert _line(program, 24) == "out = cm(t)"
    forward = _frames(torch213("library_args_positional.log.gz"))["forward"]
    (step,) = forward.steps
    assert (step.guard.tensor, step.guard.location_kind, step.guard.location.short) == (
        "x", "call", "library_args.py:24")
    (advice,) = forward.advice
    # (the user's own name for it: `t`, forward's only argument after self)
    assert ("(t at index 0, passed in by the call at library_args.py:24 as forward's x): mark that dimension dynamic "
            "with `torch._dynamo.mark_dynamic(t, 0)`") in advice


def test_a_call_split_over_lines_may_pass_any_argument():
    # library_args.py (multiline): `cm(torch.randn(n, 4),` / `target=t)`, lines 28-29; the stack holds line 28 only,
    # whose text passes x by position.
    program = PROGRAMS_213 / "library_args.py"
    assert _line(program, 28) == "out = cm(torch.randn(n, 4),"
    forward = _frames(torch213("library_args_multiline.log.gz"))["forward"]
    assert [(s.guard.tensor, s.guard.location_kind, s.guard.location.short) for s in forward.steps] == [
        ("x", "argument", "library_args.py:28")]


def test_a_users_tensor_a_librarys_forward_passes_on_is_not_said_to_be_the_librarys():
    # library_args.py (target): `cm(x, t)`, line 26; Net3.forward passes `target` (the user's t) on to loss3, which
    # breaks the graph, so loss3 is compiled apart and recompiles on target's size; its resume function on d's.
    program = PROGRAMS_213 / "library_args.py"
    assert _line(program, 26) == "out = cm(x, t)"
    frames = _frames(torch213("library_args_target.log.gz"))
    loss3 = frames["loss3"]
    assert not any("no tensor of yours" in advice for advice in loss3.advice)
    assert [(s.guard.tensor, s.guard.location_kind, s.guard.location.short) for s in loss3.steps] == [
        ("target", "call", "library_args.py:26")]
    # The resume function's d is loss3's local, carried across its graph break (line 15): said so, and the function
    # named as the headings name it, not by Dynamo's torch_dynamo_resume_in_loss3_at_15.
    (advice,) = frames["torch_dynamo_resume_in_loss3_at_15"].advice
    assert ("made and carried across the graph break into the rest of loss3 after its graph break at line 15 "
            "(__init__.py:15, library code)") in advice
    assert "torch_dynamo_resume_in" not in advice


def test_a_positional_argument_is_marked_dynamic_by_the_users_name_for_it():
    # library_args.py (target): `cm(x, t)`, line 26, into Net3's `forward(self, x, target)`: the user has no `target`,
    # their tensor is t (the guard tree reads target as local 2, after self: the call's second argument). loss3,
    # compiled apart, gets t from forward's `return loss3(out, target)` (the graph break's traceback): t too.
    program = PROGRAMS_213 / "library_args.py"
    assert _line(program, 26) == "out = cm(x, t)"
    frames = _frames(torch213("library_args_target.log.gz"))
    (forward_advice,) = frames["forward"].advice
    assert ("(t at index 0, passed in by the call at library_args.py:26 as forward's target): mark that dimension "
            "dynamic with `torch._dynamo.mark_dynamic(t, 0)`") in forward_advice
    (step,) = frames["forward"].steps
    assert step.guard.location_label == "t (forward's target) passed in by the call at"
    (loss3_advice,) = frames["loss3"].advice
    assert ("(t at index 0, passed in by the call at library_args.py:26 as loss3's target, which forward passes on)"
            in loss3_advice and "mark_dynamic(t, 0)" in loss3_advice)
    (step,) = frames["loss3"].steps
    assert step.guard.location_label == "t (loss3's target, which forward passes on) passed in by the call at"
    assert not any("mark_dynamic(target" in a for f in frames.values() for a in f.advice)


def test_an_expression_a_call_split_over_lines_passes_is_said_by_its_place():
    # library_args.py (multiline): `cm(torch.randn(n, 4),` / `target=t)`: forward's x is the call's first argument,
    # an expression, not a tensor of the user's named x. loss2's pred is no argument of the call at all: Net2's
    # forward makes it (`out = self.l(x)`, then `return loss2(target, out)`, as the graph break's traceback shows).
    frames = _frames(torch213("library_args_multiline.log.gz"))
    (forward_advice,) = frames["forward"].advice
    assert ("(`torch.randn(n, 4)` at index 0, the first argument of the call at library_args.py:28, as forward's x)"
            in forward_advice)
    assert "mark_dynamic(x," not in forward_advice
    (step,) = frames["forward"].steps
    # (the expression is the tensor's name in every place: the advice's, the step's and the size's)
    assert step.guard.location_label == "`torch.randn(n, 4)` (forward's x), the first argument of the call at"
    (step,) = frames["loss2"].steps
    assert (step.guard.tensor, step.guard.location_kind, step.guard.location.short) == (
        "pred", "first_use", "__init__.py:8")
    (loss2_advice,) = frames["loss2"].advice
    assert "there is no tensor of yours named pred to mark dynamic" in loss2_advice
    assert "passed in by the call" not in loss2_advice
    # Dynamic shapes places pred's symbol by the same rule: where loss2 first uses it, not at the user's call.
    with read_trace(str(torch213("library_args_multiline.log.gz"))) as trace:
        sizes = insights(trace).dynamic_shapes.symbols
    preds = [(s.passed_in, s.location.short) for s in sizes if s.source == "L['pred'].size()[0]"]
    assert preds and set(preds) == {(False, "__init__.py:8")}  # (one for each attempt of [1/1])


def test_a_keyword_argument_is_marked_dynamic_by_the_users_name_for_it():
    # gpt2_train.py:13 is `out = cmodel(input_ids=ids, labels=ids)`: the tensor the user can mark is ids.
    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    assert _line(log.parent / "script.py", 13) == "out = cmodel(input_ids=ids, labels=ids)"
    with read_trace(str(log)) as trace:
        advice = [a for f in insights(trace).recompiles.frames for a in f.advice if "mark_dynamic(" in a]
    assert advice and all("torch._dynamo.mark_dynamic(ids, 1)" in a for a in advice)
    assert not any("mark_dynamic(input_ids" in a or "mark_dynamic(labels" in a for a in advice)


def test_the_guards_added_are_listed_by_compilation_each_linking_the_attempt_that_compiled_it(tmp_path):
    # gpt2_train: [1/1] restarted (attempt [1/1_1] compiled it) and both attempts added `s70*… > 1`: listed as [1/1]
    # once, as the recompile steps say it, its link leading to [1/1_1]'s row; the JSON keeps the attempts.
    log = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    with read_trace(str(log)) as trace:
        lines = insights(trace).dynamic_shapes.guard_lines
    [condition] = [c for p in lines for c in p.conditions if c.expr == "s70*Max(1, s70 - (Mod(s70, 8)) + 8) > 1"]
    assert condition.compile_ids == ["[1/1]", "[1/1_1]"] and condition.compilations == ["[1/1]"]
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    shown = page[page.index("<strong>Guards added, by line</strong>"):]
    shown = shown[:shown.index("</ul></li></ul>") if "</ul></li></ul>" in shown else len(shown)]
    listed = re.findall(r'<span class="muted">((?:<a [^>]*>[^<]*</a>(?:, )?)+)</span>', shown)
    links = [link for ids in listed for link in re.findall(r'href="#([^"]+)"[^>]*>([^<]*)</a>', ids)]
    assert links and not [label for _, label in links if "_" in label]  # by compilation
    anchors = set(re.findall(r'\bid="([^"]+)"', page))
    assert all(target in anchors for target, _ in links)  # each leads to a row on the page
    assert ("[1/1_1]", "[1/1]") in links


def test_a_dtype_recompile_of_one_model_cast_is_not_said_to_be_two_models():
    # one_model_cast.py compiles one MLP, calls it at line 19, casts it with m.double() (line 20) and calls it at 21:
    # the guard trees are those two models of one class would give, and both lines call the same `c`.
    program = PROGRAMS_213 / "one_model_cast.py"
    assert _line(program, 20) == "m.double()"
    forward = _frames(torch213("one_model_cast.log.gz"))["forward"]
    (advice,) = forward.advice
    assert "two models, called at" not in advice and "Not a dtype change inside one model" not in advice
    assert advice.startswith("The parameters of the MLP that runs forward changed dtype (float32 → float64; [0/0] "
                             "and [0/1], called at one_model_cast.py:19, 21): one MLP cast with .to() or .double()")


def test_a_compiled_call_inside_another_call_is_not_read_from_the_outer_calls_arguments():
    # library_calls.py (wrapped): `torch.add(cm(x, t), u)`, line 25: forward's target is cm's second argument, t;
    # torch.add's second argument is u, the tensor the review saw named.
    program = PROGRAMS_213 / "library_calls.py"
    assert _line(program, 25) == "out = torch.add(cm(x, t), u)"
    frames = _frames(torch213("library_calls_wrapped.log.gz"))
    (forward_advice,) = frames["forward"].advice
    assert "mark_dynamic(t, 0)" in forward_advice
    assert not any("mark_dynamic(u" in a for f in frames.values() for a in f.advice)
    (step,) = frames["forward"].steps
    assert step.guard.location_label == "t (forward's target) passed in by the call at"


def test_a_line_with_several_calls_names_an_argument_only_where_one_call_could_pass_it():
    slot = ArgumentSlot(local_index=2, after_self=True)  # forward(self, x, target)'s target
    assert call_argument("out = torch.add(cm(x, t), u)", "target", slot, bound=True) == CallArgument("t", "t", 1)
    # (two calls of the user's, either one could be the compiled one: not said)
    assert call_argument("out = add(cm(x, t), u)", "target", slot, bound=True) is None
    assert call_argument("out = add(cm(x, t), u)", "target", slot, callee="cm", bound=True) == CallArgument("t", "t", 1)
    assert call_argument("out = cm(x.clone(), t.float())", "target", slot, bound=True) == CallArgument(
        "t.float()", None, 1)


def test_an_argument_is_cut_from_its_line_by_utf8_columns_as_get_source_segment_cuts_it():
    # (call_argument cuts one-line text itself, not through ast.get_source_segment: its columns are UTF-8 offsets)
    slot = ArgumentSlot(local_index=2, after_self=True)
    assert call_argument("ü = cm(x, t['é'])  # naïve", "target", slot, bound=True) == CallArgument("t['é']", None, 1)
    assert call_argument("out = cm(x, t.float(),", "target", slot, bound=True) == CallArgument("t.float()", None, 1)
    # (a line cut mid-call after non-ASCII text: its last argument may go on on the next line, `t` / `.float())`)
    assert call_argument("ü = cm(x, t", "target", slot, bound=True) is None
    assert call_argument('cm("é", t', "target", slot, bound=True) is None


def test_self_passed_by_hand_to_a_compiled_unbound_forward_is_not_taken_for_the_module_passing_it():
    # library_calls.py (unbound): `unbound(net, x, t)`, line 27, unbound = torch.compile(Net3.forward): the call
    # passes self itself, so target is its third argument, t, not its second, x. The stack of loss3 (compiled apart
    # after forward's graph break) shows no torch wrapper between that line and loss3: how the line called it is not
    # known, so torch's name stays, as loss3's (a bare target may be another tensor of the user's code).
    program = PROGRAMS_213 / "library_calls.py"
    assert _line(program, 27) == "out = unbound(net, x, t)"
    frames = _frames(torch213("library_calls_unbound.log.gz"))
    assert not any("mark_dynamic(x" in a for f in frames.values() for a in f.advice)
    (step,) = frames["loss3"].steps
    assert step.guard.location_label == "loss3's target passed in by the call at"
    # Without a module call on the stack, no count of what a call passes settles whether self was passed by hand: a
    # trailing parameter never read is in no guard tree, a defaulted one read is in every one
    # (test_users_names.test_a_call_whose_stack_shows_no_module_call_is_not_counted_into_a_position).
    slot = ArgumentSlot(local_index=2, after_self=True)
    assert call_argument("out = unbound(net, x, t)", "target", slot) is None
    assert call_argument("out = bound(x, t)", "target", slot) is None
    assert call_argument("out = bound(x, t)", "target", slot, bound=True) == CallArgument("t", "t", 1)
    assert call_argument("out = f(x)", "target", slot) is None
    assert call_argument("out = f(x, *rest)", "target", slot, bound=True) is None
    assert call_argument("out = f(x, t,", "target", slot, bound=True) == CallArgument("t", "t", 1)


def test_a_stack_line_nested_past_the_recursion_limit_is_not_read_and_does_not_stop_the_report(tmp_path):
    # library_calls.py (deep): `cm(x, ----…t)`, line 32, 470 unary minuses: rebuilding the argument's text from its
    # syntax tree (ast.unparse) recursed past Python's limit; summary exited 1, the report 3 without a page.
    log = torch213("library_calls_deep.log.gz")
    program = PROGRAMS_213 / "library_calls.py"
    assert _line(program, 32) == "out = cm(x, " + "-" * 470 + "t)"
    assert run_cli("summary", log) == 0
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    (step,) = _frames(log)["forward"].steps
    # (the label cuts the expression in the middle: test_a_long_expression_is_cut_in_labels_and_whole_in_the_advice)
    assert step.guard.location_label == f"`{'-' * 29}…{'-' * 28}t` (forward's target), the second argument of the call at"
    # A crafted line, deeper than the parser goes, and one the parser reads but ast.unparse would recurse on: untrusted
    # text, never an error.
    slot = ArgumentSlot(local_index=2, after_self=True)
    assert call_argument("cm(x, " + "(" * 400 + "t" + ")" * 400 + ")", "target", slot, bound=True) is None
    deep = call_argument("cm(x, " + "-" * 470 + "t)", "target", slot, bound=True)
    assert deep is not None and deep.text == "-" * 470 + "t" and deep.name is None
    keyword = call_argument("cm(x, target=" + "-" * 470 + "t)", "target", slot, bound=True)
    assert keyword is not None and keyword.text == "-" * 470 + "t" and keyword.position is None


def test_a_library_function_two_library_callers_pass_arguments_to_is_read_from_the_caller_of_this_compile():
    # library_calls.py (twocallers): `cm(x, t)` (line 29) runs Net3's forward, `return loss3(out, target)`; `cm4(x, t)`
    # (line 30) Net4's, `return loss3(target, out)`. loss3's [1/1] came from line 30: its pred is Net4's target, the
    # user's t, passed in by that call, not Net3's `out` first used in loss3.
    program = PROGRAMS_213 / "library_calls.py"
    assert (_line(program, 29), _line(program, 30)) == ("out = cm(x, t)", "out = cm4(x, t)")
    loss3 = _frames(torch213("library_calls_twocallers.log.gz"))["loss3"]
    placed = [(s.guard.tensor, s.guard.location_kind, s.guard.location.short) for s in loss3.steps]
    assert placed == [("pred", "call", "library_calls.py:30"), ("pred", "first_use", "__init__.py:14")]

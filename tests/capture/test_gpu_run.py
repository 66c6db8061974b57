"""`compilescope run` on GPU machines (an H200 and an H100, torch 2.11, Python 3.12): what it recorded reads back whole.

tests/data/cuda_torch211/logs/ (README there), from the programs of programs/ there:
- train_break_recompile.log.gz: an MLP trained 5 steps, a `print` in forward (line 22) breaking the graph, the batch
  going from 32 to 48;
- ddp_uneven_batch/: two DDP ranks around a compiled nn.Sequential, rank 1's last batch smaller;
- hf_gpt2_generate.log.gz: transformers' GPT-2, its forward compiled, three prompt lengths, then generate().
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from collections import Counter

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.analyses.transformed import transformed_code
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, run_cli, shared, torch213

LOG = cuda211("train_break_recompile.log.gz")


def test_the_break_and_the_recompiles_of_both_frames():
    with read_trace(str(LOG)) as trace:
        ins = insights(trace)
    [brk] = ins.graph_breaks.breaks
    assert (brk.reason, brk.location.line, brk.location.function, brk.count) == (
        "Failed to trace builtin operator", 22, "forward", 2)
    assert [(f.name, [s.guard.guard for s in f.steps]) for f in ins.recompiles.frames] == [
        ("forward", ["tensor 'x' size mismatch at index 0. expected 32, actual 48"]),
        ("torch_dynamo_resume_in_forward_at_22", ["tensor 'h' size mismatch at index 0. expected 32, actual 48"])]


def test_the_transformed_code_decompiled_from_python_312_is_python():
    with read_trace(str(LOG)) as trace:
        code = transformed_code(trace)
    assert sorted(c.compile_id for c in code.values()) == ["[0/0_1]", "[0/1_1]", "[1/0]", "[1/1]"]
    for c in code.values():
        assert (c.origin, c.decompiled, c.note) == ("recorded", True, "decompiled from Python 3.12 bytecode")
        ast.parse(c.source)  # it is Python, whatever Python reads it
        assert c.compiled_fns and c.graph_artifact is not None
    first = next(c for c in code.values() if c.compile_id == "[0/0_1]")
    assert "__resume_at_" in first.source  # the break: the rest of forward runs in the resume function


def test_every_triton_kernel_names_its_user_lines():
    with read_trace(str(LOG)) as trace:
        prov = analyze_provenance(trace)
    kernels = [k for c in prov.compiles.values() for s in c.sections for k in s.kernels if k.kernel.startswith("triton_")]
    assert len(kernels) >= 8
    for k in kernels:
        lines = {(f.file.rsplit("/", 1)[-1], f.line) for frames in k.frames for f in frames}
        assert lines and lines <= {("train_break_recompile.py", n) for n in (21, 23)}, (k.name, lines)


def test_a_recompiled_frame_of_torchs_own_code_names_the_users_line_that_called_it(tmp_path, capsys):
    # tests/data/cuda_torch211/logs/ddp_uneven_batch/: DDP around torch.compile(nn.Sequential(...)). The frame Dynamo
    # compiles is torch's `inner` (external_utils.py, the wrapper of a compiled module); the user knows it by line 27
    # of their program, `loss = step(x).pow(2).mean()`, where rank 1's smaller last batch recompiled it.
    [rank1] = cuda211("ddp_uneven_batch").glob("*rank_1_*.log.gz")
    with read_trace(str(rank1)) as trace:
        ins = insights(trace)
    [frame] = ins.recompiles.frames
    assert (frame.name, frame.filename.rsplit("/", 2)[-2:], frame.first_line) == ("inner", ["_dynamo", "external_utils.py"], 67)
    [called] = frame.called_from
    assert (called.filename.rsplit("/", 1)[-1], called.line, called.function, called.code) == (
        "ddp_uneven_batch.py", 27, "main", "loss = step(x).pow(2).mean()")
    # `inner` runs the model the user compiled, the nn.Sequential DDP calls (the guard tree's `L['fn']` is of type
    # torch.nn.modules.container.Sequential): what recompiled is named by it, not by torch's wrapper.
    assert frame.module == "Sequential"
    assert ("Sequential's forward (called at ddp_uneven_batch.py:27) recompiled once, then ran with args[0]'s "
            "dimension 0 dynamic" in [f.title for f in ins.findings])  # the uneven last batch: one recompile, then dynamic
    # args[0] is first used in torch's linear.py, inside torch's frame: the user passed it in at line 27, which is
    # what the program holds there
    [step] = frame.steps
    assert (step.guard.location_kind, step.guard.location.short) == ("call", "ddp_uneven_batch.py:27")
    program = (cuda211("../programs/ddp_uneven_batch.py")).read_text().split("\n")
    assert program[26].strip() == step.guard.location.code == "loss = step(x).pow(2).mean()"
    assert step.guard.location_label == "args[0] passed in by the call at"
    assert run_cli("summary", rank1) == 0
    out = capsys.readouterr().out
    assert "Sequential's forward  (external_utils.py:67, called at ddp_uneven_batch.py:27)\n" in out
    # (the slowest compiles' table, by the module too, and by the line that called it, as the heading above)
    row = out[out.index("[0/1]     Sequential's forward (called at "):].split("\n")[:2]
    assert row[1].split() == ["ddp_uneven_batch.py:27)"]
    assert run_cli(rank1, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert '<span class="muted">called from your code at</span> ' in page
    # The user's own function is named as it is: nothing to add.
    with read_trace(str(LOG)) as trace:
        assert [f.called_from for f in insights(trace).recompiles.frames] == [[], []]


def test_a_compile_partly_served_from_cache_says_how_much(capsys):
    # The DDP job's ranks shared one Inductor cache: rank 1's [0/0], split by DDPOptimizer into 3 subgraphs (a forward
    # and a backward each: 6 FX graph lookups), found 3 that rank 0 had compiled. Rank 0 found none.
    rank0, rank1 = (next(cuda211("ddp_uneven_batch").glob(f"*rank_{r}_*.log.gz")) for r in (0, 1))
    with read_trace(str(rank1)) as trace:
        ins = insights(trace)
        assert (ins.caches.graphs_missing, ins.caches.partly_served) == (["[0/0]"], {"[0/0]": "3 of 6 graphs"})
        [served] = [f for f in ins.findings if f.title == "served from cache: [0/0] (3 of 6 graphs)"]
        # An FX graph cache hit alone: AOTAutograd ran (its cache was bypassed), and only Inductor's graphs before its
        # post-grad passes are missing: 3 before_post_grad_graph for 6 output codes, where rank 0 logged 6 and 6.
        assert served.detail.startswith("Inductor's graphs before its post-grad passes are not in this log for the graphs "
                                        "it loaded (their AOTAutograd graphs and output code are)")
        kinds = Counter(a.name for a in trace.compiles[next(c for c in trace.compiles if str(c) == "[0/0]")].artifacts)
        assert (kinds["before_post_grad_graph"], kinds["aot_joint_graph"]) == (3, 3)
        assert sum(n for name, n in kinds.items() if name.startswith("inductor_output_code")) == 6
    with read_trace(str(rank0)) as trace:
        assert (insights(trace).caches.graphs_missing, insights(trace).caches.partly_served) == ([], {})
    # A compile whose every lookup hit is named alone (the warm-cache CPU log).
    assert run_cli("summary", "--json", torch213("cache_warm.log")) == 0
    served = json.loads(capsys.readouterr().out)["caches"]
    assert served["graphs_missing"] and served["partly_served"] == {}


def test_a_hugging_face_model_recompiles_in_transformers_code_called_from_the_users_line():
    # tests/data/cuda_torch211/logs/hf_gpt2_generate.log.gz: transformers' GPT-2 with its forward compiled, three
    # prompt lengths, then generate(). The frame is transformers' decorator `wrapper`; the user calls it at line 20.
    with read_trace(str(cuda211("hf_gpt2_generate.log.gz"))) as trace:
        ins = insights(trace)
        prov = analyze_provenance(trace)
    [frame] = ins.recompiles.frames
    assert (frame.name, frame.filename.rsplit("/", 3)[-3:], frame.first_line) == (
        "wrapper", ["transformers", "utils", "generic.py"], 933)
    # Called from the prompt loop (line 20) for [0/0] and [0/1], from generate() (line 22) for the rest: each compile's
    # dynamo_start stack, read with json, ends in the program at those lines.
    with gzip.open(cuda211("hf_gpt2_generate.log.gz"), "rt", encoding="utf-8") as f:
        starts = [json.loads(line.split("] ", 1)[1])["dynamo_start"] for line in f if '{"dynamo_start"' in line]
    program = [[fr["line"] for fr in start["stack"] if fr["name"] == "main"][-1] for start in starts]
    assert program == [20, 20, 22, 22, 22]
    assert [(loc.filename.rsplit("/", 1)[-1], loc.line) for loc in frame.called_from] == [
        ("hf_gpt2_generate.py", 20), ("hf_gpt2_generate.py", 22)]
    assert frame.chain == ["[0/0]", "[0/1]", "[0/2]", "[0/3]", "[0/4]"]
    guards = [(s.compile_id, s.guard.guard) for s in frame.steps]
    assert guards == [
        ("[0/1]", "tensor 'kwargs['input_ids']' size mismatch at index 1. expected 16, actual 24"),
        ("[0/2]", "not ___dict_contains('return_dict', kwargs)"),  # generate() passes return_dict
        ("[0/3]", "tensor 'kwargs['input_ids']' size mismatch at index 1. expected 8, actual 1"),  # the decode step
        ("[0/4]", "tensor 'kwargs['past_key_values'].layers[0].keys' size mismatch at index 2. expected 8, actual 9")]
    # [0/2]'s recompile_reasons places the failed check where transformers' decorator reads the keyword
    # (`kwargs.pop("return_dict", ...)  # transformers/utils/generic.py:936 in wrapper`), yet the user passed no
    # return_dict: generate() did, on [0/2]'s dynamo_start stack main:22 → generate → _sample → _prefill → wrapper,
    # while the prompt loop's calls (line 20) passed input_ids only. The set of keywords is the call's, so the guard
    # is placed at the user's call that made it (user_locations.placed_at_call, as hf_llama's generate() at line 39), and the
    # advice says generate() passes its own keywords.
    with gzip.open(cuda211("hf_gpt2_generate.log.gz"), "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    header = next(n for n, line in enumerate(lines)
                  if '"recompile_reasons"' in line and '"frame_id": 0, "frame_compile_id": 2,' in line)
    newest = lines[header + 2]  # the payload's first entry, after its "\t[" line: [0/1]'s guard
    assert newest.startswith("\t\"0/1: not ___dict_contains('return_dict', kwargs)")
    assert "# transformers/utils/generic.py:936 in wrapper" in newest
    assert starts[2]["stack"][-1]["name"] == "wrapper" and [fr["name"] for fr in starts[2]["stack"]][-5:-1] == [
        "generate", "_sample", "_prefill", "_wrapped_call_impl"]
    where, kind = frame.steps[1].guard.location, frame.steps[1].guard.location_kind
    assert (where.filename.rsplit("/", 1)[-1], where.line, where.function, kind) == (
        "hf_gpt2_generate.py", 22, "main", "arguments_call")
    assert any("transformers' generate()" in a and "pass its own" in a for a in frame.advice)
    assert "GPT2LMHeadModel's forward (called at hf_gpt2_generate.py:20, 22) recompiled 4 times" in [f.title for f in ins.findings]
    assert ins.environment.gpu == "NVIDIA H200"
    # The kernels lead back into the model's code, in site-packages: most of their lines are modeling_gpt2.py's.
    kernels = [k for c in prov.compiles.values() for s in c.sections for k in s.kernels if k.kernel.startswith("triton_")]
    files = Counter(f.file.rsplit("/", 1)[-1] for k in kernels for frames in k.frames for f in frames)
    assert files.most_common(1)[0][0] == "modeling_gpt2.py"


def test_frames_recompiled_only_in_restarted_attempts_still_name_the_users_line():
    # ../shared gpu-torch211/gpt2_train (transformers' GPT-2 trained on an H100): transformers' `wrapper` and GPT-2's
    # `forward` restart at a graph break each time they compile ([0/0_1] → [0/1_1]); Dynamo logs the call stack with
    # the first attempt ([0/0], [0/1]) only. Every frame is called from the training step, line 13 of gpt2_train.py.
    log = next(shared("gpu-torch211/gpt2_train").glob("*.log"))
    with read_trace(str(log)) as trace:
        frames = insights(trace).recompiles.frames
        first_attempts = {str(c): e.stack for c, e in trace.compiles.items() if c is not None and c.frame_id in (0, 1)}
    assert first_attempts["[0/1_1]"] is None and first_attempts["[0/1]"]  # (what the log holds)
    chains = {f.name: (f.chain, f.called_at) for f in frames}
    assert chains["wrapper"] == (["[0/0_1]", "[0/1_1]"], "gpt2_train.py:13")
    assert chains["forward"] == (["[1/0_1]", "[1/1_1]"], "gpt2_train.py:13")


def test_a_user_project_in_a_folder_named_torch_is_the_users_code(tmp_path):
    # The H200 log with its program's folder renamed /home/me/torch/proj/ (the string table and every payload that
    # names it; md5s do not matter here): a folder named torch holding the user's code is not torch's code.
    with gzip.open(LOG, "rt", encoding="utf-8") as f:
        text = f.read()
    moved = tmp_path / "moved.log"
    moved.write_text(text.replace("/work/main/tests/data/cuda_torch211/programs/", "/home/me/torch/proj/"))
    with read_trace(str(moved)) as trace:
        ins = insights(trace)
    [brk] = ins.graph_breaks.breaks
    assert (brk.location.filename, brk.location.line, brk.location.function) == (
        "/home/me/torch/proj/train_break_recompile.py", 22, "forward")
    assert ins.dynamic_shapes.symbols and all(
        s.location is not None and s.location.filename.startswith("/home/me/torch/proj/")
        for s in ins.dynamic_shapes.symbols)


def test_a_graph_break_in_a_librarys_code_keeps_its_function_and_code():
    # ../shared gpu-torch211/gpt2_train: the break is in transformers' loss_function (its header names
    # modeling_utils.py:4635), under the user's line 13 that called the model: the traceback's frame there says which
    # function and code.
    log = next(shared("gpu-torch211/gpt2_train").glob("*.log"))
    text = log.read_text()
    assert ('File "/opt/torch/.venv/lib/python3.12/site-packages/transformers/modeling_utils.py", line 4635, in '
            'loss_function\n\t    logger.warning_once(') in text
    with read_trace(str(log)) as trace:
        [brk] = insights(trace).graph_breaks.breaks
    assert (brk.location.short, brk.location.function, brk.location.code) == (
        "modeling_utils.py:4635", "loss_function", "logger.warning_once(")


def test_a_recompile_caused_by_a_size_an_earlier_compile_specialized_says_so(tmp_path, capsys):
    # hf_gpt2_generate: generate()'s first call compiled [0/2] with input_ids 8 tokens long, and a line of GPT-2's
    # forward refined the symbol of that length to 8 (a symbolic_shape_specialization record in [0/2]); the one-token
    # decode step then failed [0/2]'s guard on that size, though the length had been dynamic since [0/1].
    log = cuda211("hf_gpt2_generate.log.gz")
    with gzip.open(log, "rt", encoding="utf-8") as f:
        records = [json.loads(line.split("] ", 1)[1]) for line in f if '{"symbolic_shape_specialization"' in line]
    [logged] = [r for r in records if r["symbolic_shape_specialization"]["symbol"] == "s27"]
    assert (logged["frame_compile_id"], logged["symbolic_shape_specialization"]["value"],
            logged["symbolic_shape_specialization"]["sources"]) == (2, "8", ["L['kwargs']['input_ids'].size()[1]"])
    with read_trace(str(log)) as trace:
        [frame] = insights(trace).recompiles.frames
    by_step = {s.compile_id: s.specialized for s in frame.steps}
    assert [cid for cid, spec in by_step.items() if spec] == ["[0/3]"]
    spec = by_step["[0/3]"]
    assert (spec.compile_id, spec.symbol, spec.value, spec.location.short) == ("[0/2]", "s27", "8", "modeling_gpt2.py:577")
    assert frame.advice[0].startswith("A size that changed had been specialized to one value by the compile before")
    assert run_cli("summary", log) == 0
    assert "[0/2] had specialized s27 = 8 (its range narrowed to one value) at" in capsys.readouterr().out
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    assert '<span class="specialized">[0/2] had specialized s27 = 8 (its range narrowed to one value) at ' in (
        tmp_path / "out" / "index.html").read_text()


def test_each_input_torch_made_dynamic_costs_one_recompile_and_is_said_as_such():
    """dynamic_batch.log.gz: step(x, factor) with batches 32, 48, 64, 80, then factors 2, 3, 4, 5 (programs/
    dynamic_batch.py, on an H200). 48 recompiles [0/1] with x's dimension 0 a symbol, 3 recompiles [0/2] with factor
    a symbol; every later call reuses [0/2]. That is automatic dynamic working: INFO, not a warning to fix."""
    log = cuda211("dynamic_batch.log.gz")
    raw = gzip.open(log, "rt").read()
    # the symbols each recompile created, from the raw create_symbol records
    made = dict(re.findall(r'"create_symbol": \{"symbol": "(s\d+)", "val": "\d+", "vr": "[^"]*", "source": "([^"]+)"',
                           raw))
    by_source = {source: symbol for symbol, source in made.items()}
    with read_trace(str(log)) as trace:
        ins = insights(trace)
    [frame] = ins.recompiles.frames
    assert frame.chain == ["[0/0]", "[0/1]", "[0/2]"] and frame.settled
    assert [(s.guard.guard, s.dynamic_symbol) for s in frame.steps] == [
        ("tensor 'x' size mismatch at index 0. expected 32, actual 48", by_source["L['x'].size()[0]"]),
        ("factor == 2", by_source["L['factor']"])]
    assert frame.made_dynamic == ["x's dimension 0", "factor"]
    [finding] = [f for f in ins.findings if f.section == "recompiles"]
    assert (finding.severity, finding.title) == ("info", "step recompiled 2 times, then ran with x's dimension 0 and "
                                                         "factor dynamic")
    guards, cost = finding.detail.split("; its recompiles took ")
    assert guards == "failed guards: tensor 'x' size mismatch at index 0. expected 32, actual 48; factor == 2"
    # and what the two recompiles cost of all the compiling: [0/1] and [0/2]'s compile time, as the compile-time
    # analysis measures each compile from its chromium events
    took, total, share = re.fullmatch(r"([\d.]+) s of the ([\d.]+) s compiling \((\d+)%\)", cost).groups()
    times = ins.compile_time
    assert abs(float(took) - times.seconds_of(["[0/1]", "[0/2]"])) < 0.01 and abs(float(total) - times.total_s) < 0.01
    assert int(share) == round(100 * times.seconds_of(["[0/1]", "[0/2]"]) / times.total_s)
    # the program's own output: every batch and factor ran (seven calls, three compiles)
    said = (cuda211("dynamic_batch.output.txt")).read_text().split("\n")
    assert [line.split()[:2] for line in said if line] == [["batch", "32"], ["batch", "48"], ["batch", "64"],
                                                          ["batch", "80"], ["factor", "3"], ["factor", "4"],
                                                          ["factor", "5"]]

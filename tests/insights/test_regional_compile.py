"""A model of identical blocks compiled whole, then block by block (regional compilation; tests/data/torch213
programs/regional_compile.py): that the report of the whole model suggests compiling the blocks, that the per-block
run compiled the block once for every instance, and what `diff` says the switch saved. Expected values are read from
the raw logs and the program, not from our output."""

from __future__ import annotations

import re
from pathlib import Path

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.repeated_blocks import first_line_with, graph_blocks, regional
from compilescope.analyses.user_locations import user_source_name
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, shared, torch213
from ..tracelog import raw_records
from .helpers import tree_reads

WHOLE, BLOCKS, WARM = "regional_whole.log.gz", "regional_blocks.log.gz", "regional_blocks_warm.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "regional_compile.py"


def _raw(log: str) -> list[tuple[dict, str]]:
    """The log's envelopes with their payloads, read without compilescope."""
    return raw_records(torch213(log))


def _metrics(log: str) -> list[dict]:
    return [e["compilation_metrics"] for e, _ in _raw(log) if "compilation_metrics" in e]


def _payloads(kind: str, log: str) -> list[str]:
    return [p for e, p in _raw(log) if kind in e]


def _artifacts(name: str, log: str) -> list[dict]:
    return [e for e, _ in _raw(log) if (e.get("artifact") or {}).get("name") == name]


def _program_line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _insights(log: str):
    with read_trace(str(torch213(log))) as trace:
        return insights(trace)


def _facts(log: str):
    with read_trace(str(torch213(log))) as trace:
        return run_facts(analyze(trace))


def test_the_whole_models_graph_holds_a_copy_of_each_block():
    # The program builds Model(depth=4); each Block has 2 LayerNorms and 4 Linears, a weight and a bias each: 12
    # parameters, which the graph takes as inputs named after self.blocks[i] (inline_inbuilt_nn_modules).
    assert "depth=4" in PROGRAM.read_text()
    (metrics,) = _metrics(WHOLE)
    assert metrics["config_inline_inbuilt_nn_modules"] is True
    (graph,) = _payloads("dynamo_output_graph", WHOLE)
    signature = next(line for line in graph.splitlines() if "def forward(" in line)
    per_block = [len(re.findall(rf"\bL_self_modules_blocks_modules_{i}_\w+: ", signature)) for i in range(4)]
    assert per_block == [12] * 4
    # Dynamo's guard tree names the blocks' class
    (guards,) = _payloads("dynamo_cpp_guards_str", WHOLE)
    assert "source=L['self']._modules['blocks']._modules['3'], type=<class '__main__.Block'>" in guards

    (found,) = regional(read_trace(str(torch213(WHOLE)))).repeated
    assert (found.compile_id, found.container, found.indices, found.parameters, found.class_name) == (
        "[0/0]", "self.blocks", [0, 1, 2, 3], 12, "Block")


def test_the_whole_models_report_suggests_compiling_the_blocks():
    (finding,) = [f for f in _insights(WHOLE).findings if "once per block" in f.title]
    assert (finding.severity, finding.section) == ("info", "compile_time")
    assert finding.title == "[0/0] compiled Block's code 4 times, once per block of self.blocks"
    assert "self.blocks[0] to [3]" in finding.detail
    assert "`for block in model.blocks: block.compile()`" in finding.detail
    assert "Block.forward is compiled once" in finding.detail


def test_blocks_of_one_class_whose_code_differs_are_no_copies():
    # slow_compile.py's three Blocks have the same Linear(8, 8) but each another activation (gelu, tanh, sigmoid,
    # picked by self.i): compiled one by one they would recompile per block, so nothing is suggested.
    graph = _payloads("dynamo_output_graph", "slow_compile_cold.log.gz")[0]  # [0/0], the model
    assert "gelu" in graph and "tanh" in graph and "sigmoid" in graph
    assert regional(read_trace(str(torch213("slow_compile_cold.log.gz")))).repeated == []
    assert not [f for f in _insights("slow_compile_cold.log.gz").findings if "once per block" in f.title]


def test_compiled_block_by_block_the_block_compiles_once_for_every_instance():
    # One compile, of Block.forward (its def line), and no recompile although four instances ran it twice: the guards
    # check self's type, not its id (its parameters are graph inputs).
    (metrics,) = _metrics(BLOCKS)
    assert (metrics["co_name"], metrics["co_firstlineno"]) == ("forward", _program_line("def forward(self, x):"))
    assert _payloads("recompile_reasons", BLOCKS) == []
    (guards,) = _payloads("dynamo_cpp_guards_str", BLOCKS)
    assert "TYPE_MATCH: ___check_type_id(L['self']," in guards and "ID_MATCH: ___check_obj_id(L['self']" not in guards

    ins = _insights(BLOCKS)
    assert ins.recompiles.frames == [] and ins.n_compiles == 1
    assert ins.regional.repeated == []
    assert not [f for f in ins.findings if "once per block" in f.title]


def test_diff_of_whole_against_blocks_says_what_the_graphs_held():
    # No frame matches (Model.forward in A, Block.forward in B): the totals say what the switch saved.
    ops = [m["graph_op_count"] for log in (WHOLE, BLOCKS) for m in _metrics(log)]
    kernels = [len(re.findall(r"= async_compile\.cpp_pybinding\(", code))
               for log in (WHOLE, BLOCKS) for code in _payloads("inductor_output_code", log)]
    assert ops[0] > ops[1] and kernels[0] > kernels[1]
    result = diff_runs(_facts(WHOLE), _facts(BLOCKS))
    (change,) = [c for c in result.changes if c.title.startswith("graphs in all")]
    assert change.title.startswith(f"graphs in all: 1 → 1 graphs, {ops[0]} → {ops[1]} graph ops, "
                                   f"{kernels[0]} → {kernels[1]} generated kernels")
    assert (change.a["ops"], change.b["ops"]) == tuple(ops)


def test_diff_of_one_program_cold_and_warm_has_no_totals():
    # The same frame in both: its own changes say what differs, no totals. The warm run's lookups hit.
    assert _artifacts("fx_graph_cache_hit", WARM) and not _artifacts("fx_graph_cache_miss", WARM)
    result = diff_runs(_facts(BLOCKS), _facts(WARM))
    assert not [c for c in result.changes if c.title.startswith("graphs in all")]


def test_a_restarted_compile_is_named_as_its_compilation():
    # dynamic=True: Dynamo restarted [0/0] (TensorifyScalarRestartAnalysis: eps and norm_type made float symbols),
    # so the attempt [0/0_0] made a graph too, and [0/0_1] compiled it. The blocks are said once, as [0/0], the
    # compilation the compile-time table times.
    log = "regional_dynamic.log.gz"
    (metrics,) = _metrics(log)
    assert metrics["restart_reasons"] == ["<class 'torch._dynamo.exc.TensorifyScalarRestartAnalysis'>"]
    assert len(_payloads("dynamo_output_graph", log)) == 2
    (found,) = regional(read_trace(str(torch213(log)))).repeated
    assert (found.compile_id, found.indices) == ("[0/0]", [0, 1, 2, 3])
    (finding,) = [f for f in _insights(log).findings if "once per block" in f.title]
    assert finding.title.startswith("[0/0] compiled Block's code 4 times")


def _regional_reading_trees(log: str) -> tuple[list[tuple], int, list[tuple[int, int]]]:
    """The repeated blocks of log, with the guard trees GuardTrees parsed for the report before (as the source pages
    do): ((compile, container, indices, class) of each, the trees' count, the trees whose text the analysis read)."""
    with tree_reads(torch213(log)) as reads:
        found = regional(reads.trace, reads.trees).repeated
    return ([(r.compile_id, r.container, r.indices, r.class_name) for r in found], len(reads.guards), reads.read)


def test_the_blocks_class_is_read_from_the_guard_trees_the_report_parsed_once():
    # hf_llama.py: the decoder's two LlamaDecoderLayers, compiled four times; serve_varying.py: two Blocks, five times.
    # The class each block is comes from the tree GuardTrees parsed (the ValueManager line of its _modules entry), not
    # from each tree's text read again (four and five times before).
    found, trees, read = _regional_reading_trees("hf_llama.log.gz")
    assert trees == 5 and read == []
    assert found == [(f"[0/{i}]", "args[0].model.layers", [0, 1], "LlamaDecoderLayer") for i in range(4)]
    found, trees, read = _regional_reading_trees("serve_varying.log.gz")
    assert read == []
    assert found == [(f"[0/{i}]", "self.blocks", [0, 1], "Block") for i in range(5)]


def test_a_modules_attribute_is_named_as_the_program_writes_it():
    # regional_dynamic: each block's two LayerNorms' eps became float symbols that torch specialized; its
    # symbolic_shape_specialization records name them through the modules' dicts
    # (L['self']._modules['blocks']._modules['0']._modules['norm1'].eps), where the program writes self.blocks (a
    # ModuleList) and each Block's self.norm1 / self.norm2. The raw source stays in JSON; the words are the program's.
    log = "regional_dynamic.log.gz"
    raw = {src for e, _ in _raw(log) if "symbolic_shape_specialization" in e
           for src in e["symbolic_shape_specialization"]["sources"]}
    first = "L['self']._modules['blocks']._modules['0']._modules['norm1'].eps"
    embed = "L['self']._modules['embed'].norm_type"  # (the model's self.embed, an Embedding: its norm_type)
    assert first in raw and embed in raw
    assert "self.blocks = torch.nn.ModuleList(" in PROGRAM.read_text() and _program_line("self.norm1 = ") > 0
    ds = _insights(log).dynamic_shapes
    (spec,) = [s for s in ds.specializations if first in s.sources and s.compile_id == "[0/0]"]
    assert spec.to_json()["sources"] == [first]
    assert spec.source_texts == {first: "self.blocks[0].norm1.eps"}
    words = {text for s in ds.specializations for text in s.source_texts.values()}
    assert {"self.blocks[3].norm2.eps", "self.embed.norm_type"} <= words and not any("_modules" in t for t in words)
    # A parameter, as the log's describe_source names it: the program's block's norm1.weight.
    described = {e["describe_source"]["source"] for e, _ in _raw(log) if "describe_source" in e}
    weight = "L['self']._modules['blocks']._modules['0']._modules['norm1']._parameters['weight']"
    assert weight in described and user_source_name(weight) == "self.blocks[0].norm1.weight"



def test_a_specialized_float_is_shown_as_python_prints_it():
    # regional_dynamic: the LayerNorms' eps (1e-5, torch's default) specialized; torch's symbolic_shape_specialization
    # records give the value as sympy prints a float, `1.00000000000000e-5`. The report says 1e-05, as the program's
    # Python prints it.
    log = "regional_dynamic.log.gz"
    first = "L['self']._modules['blocks']._modules['0']._modules['norm1'].eps"
    raw = [e["symbolic_shape_specialization"]["value"] for e, _ in _raw(log) if "symbolic_shape_specialization" in e
           and first in e["symbolic_shape_specialization"]["sources"]]
    assert raw and set(raw) == {"1.00000000000000e-5"}
    ds = _insights(log).dynamic_shapes
    assert {s.value for s in ds.specializations if first in s.sources} == {"1e-05"}
HF_PROGRAM = PROGRAM.parent / "hf_llama.py"


def test_a_model_a_wrapper_compiled_is_named_as_the_user_holds_it():
    # hf_llama.py compiles its LlamaForCausalLM whole (`compiled = torch.compile(model, ...)`); transformers'
    # decorator `wrapped_func(*args, **kwargs)` around its forward is the frame Dynamo compiled, so the guard tree
    # names the model `L['args'][0]` (the forward's self). The user has no `args`: the decoder layers are
    # `model.model.layers` in their code, and the loop to write is over those.
    log = "hf_llama.log.gz"
    assert "compiled = torch.compile(model," in HF_PROGRAM.read_text()
    assert {m["co_name"] for m in _metrics(log)} == {"wrapped_func"}
    (guards, *_) = _payloads("dynamo_cpp_guards_str", log)
    assert "source=L['args'][0]._modules['model']._modules['layers']._modules['1']" in guards
    (finding,) = [f for f in _insights(log).findings if "once per block" in f.title]
    assert finding.title.endswith("once per block of model.model.layers")
    assert "`for block in model.model.layers: block.compile()`" in finding.detail
    assert "model.model.layers[0], [1]" in finding.detail
    assert "args[0]" not in finding.title + finding.detail


def test_a_module_torch_wraps_is_named_as_the_model_not_as_torchs_fn():
    # profile_compiled.py compiles an nn.Sequential of 4 Blocks (`cm = torch.compile(m)`): Dynamo compiles torch's
    # wrap_inline `inner`, whose local `fn` is the Sequential. `fn` is torch's name: the loop is over the model.
    log = shared("gpu-torch211/profile_compiled/dedicated_log_torch_trace_735v34qb.log")
    script = (log.parent / "script.py").read_text()
    assert "torch.nn.Sequential(*[Block() for _ in range(4)])" in script and "cm = torch.compile(m)" in script
    guards = next(p for e, p in raw_records(log) if "dynamo_cpp_guards_str" in e)
    assert "source=L['fn']._modules['3'], type=<class '__main__.Block'>" in guards
    with read_trace(str(log)) as trace:
        (finding,) = [f for f in insights(trace).findings if "once per block" in f.title]
    assert finding.title == "[0/0] compiled Block's code 4 times, once per block of model"
    assert "`for block in model: block.compile()`" in finding.detail and "model[0] to [3]" in finding.detail
    assert "fn" not in re.findall(r"\w+", finding.title + finding.detail)


class _SplitCounted(str):
    """A graph's text that counts the times it is split into lines whole (slices of it are plain str)."""

    splits = 0

    def splitlines(self, keepends: bool = False) -> list[str]:
        type(self).splits += 1
        return super().splitlines(keepends)


def _blocks_and_splits(graph: str) -> tuple[list, int]:
    _SplitCounted.splits = 0
    found = graph_blocks(_SplitCounted(graph))
    return found, _SplitCounted.splits


def test_a_graph_is_split_into_lines_only_where_it_has_blocks_to_compare():
    # amp_train_step's graph takes a module's parameters (`_modules_`, so regional reads it) but no two blocks of one
    # list: its forward line alone is read, not every line (the whole text was split to find it). regional_whole's
    # four blocks are compared node by node: its text is split once.
    (graph, _) = _payloads("dynamo_output_graph", "amp_train_step.log.gz")
    assert "_modules_" in graph
    assert _blocks_and_splits(graph) == ([], 0)
    (graph,) = _payloads("dynamo_output_graph", WHOLE)
    assert _blocks_and_splits(graph) == ([("self.blocks", [0, 1, 2, 3], 12, None)], 1)


def test_the_forward_line_is_the_first_line_holding_it_as_splitlines_cuts_lines():
    (graph,) = _payloads("dynamo_output_graph", WHOLE)
    forward = next(line for line in graph.splitlines() if "def forward(" in line)
    assert first_line_with(graph, "def forward(") == forward and "L_self_modules_blocks_modules_3_" in forward
    # line breaks other than "\n" (a form feed, "\r\n", a lone "\r") end lines too; no line holding it: ""
    for text in ("a\x0cdef forward(x)\x0cb", "a\r\ndef forward(x)\r\nb", "a\rdef forward(x)\rb", "def forward(x)"):
        assert first_line_with(text, "def forward(") == "def forward(x)"
    assert first_line_with(graph, "def backward(") == ""

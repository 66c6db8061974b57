"""A Hugging Face transformers user compiles a tiny Llama on CPU and calls generate() (programs/hf_llama.py)."""

from __future__ import annotations

import gzip
import json

from compilescope.analyses.failures import failures_and_restarts
from compilescope.analyses.graph_breaks import graph_breaks
from compilescope.analyses.insights import insights
from compilescope.ingest.reader import read_trace

from ..conftest import torch213


def _metrics(name: str) -> list[dict]:
    with gzip.open(torch213(name), "rt", encoding="utf-8") as f:
        return [json.loads(line.split("] ", 1)[1])["compilation_metrics"] for line in f
                if line.startswith("V") and '] {"compilation_metrics"' in line]


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

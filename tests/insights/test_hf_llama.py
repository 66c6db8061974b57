"""A Hugging Face transformers user compiles a tiny Llama on CPU and calls generate() (programs/hf_llama.py)."""

from __future__ import annotations

from compilescope.analyses.insights import insights
from compilescope.ingest.reader import read_trace

from ..conftest import torch213


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

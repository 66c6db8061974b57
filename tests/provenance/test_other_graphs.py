"""A kernel a graph's stack traces list but its code does not call is another graph's (torch 2.11 does not clear its
provenance between graphs): which graph calls it, and how the kernel stack traces page says so.

Expected values come from the raw log (helpers.raw_graphs): each output code's `# [Provenance debug handles]`
comments and the kernel stack traces artifact Inductor logged after it."""

from __future__ import annotations

from compilescope.analyses.provenance import analyze_provenance
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211
from .helpers import raw_graphs

LOG = "train_break_recompile.log.gz"


def _leftovers(aot_id: str) -> list[str]:
    """The kernels the graph's stack traces list that its code's debug-handle comments do not name."""
    graph = raw_graphs(cuda211(LOG))[aot_id]
    return [name for name in graph.stacks if name not in graph.calls]


def test_another_graphs_kernel_is_placed_in_the_graph_whose_code_calls_it():
    """[0/0_1]'s backward (0_backward) was compiled right after [1/0]'s backward at the first loss.backward(): its list
    carries 1_backward's three calls, which no other code names. [0/1_1]'s backward carries its forward's (2_forward),
    whose calls and stacks are also 0_forward's: the last graph logged before it is the one (the list is cleared
    before each forward, and 0_forward's was cleared before 1_forward). [1/1]'s backward carries 3_forward's."""
    raw = raw_graphs(cuda211(LOG))
    expected = {"0_backward": "1_backward", "2_backward": "2_forward", "3_backward": "3_forward"}
    for aot_id, caller in expected.items():
        left = _leftovers(aot_id)
        assert left and all(raw[caller].stacks[n] == raw[aot_id].stacks[n] and n in raw[caller].calls for n in left)
    assert [a for a, g in raw.items() if "triton_per_fused_mul_sum_0:1" in g.calls] == ["1_backward"]
    assert {a for a, g in raw.items() if set(_leftovers("2_backward")) <= set(g.calls)} == {"0_forward", "2_forward"}
    with read_trace(cuda211(LOG)) as trace:
        found = analyze_provenance(trace)
    sections = {s.title: s for c in found.compiles.values() for s in c.sections}
    placed = {title: {name: (ref.title, ref.label) for name, ref in s.called_by.items()}
              for title, s in sections.items() if s.called_by}
    assert placed == {aot_id: {n: (caller, f"{raw[caller].compile_id} {caller.split('_')[1]}") for n in _leftovers(aot_id)}
                      for aot_id, caller in expected.items()}
    assert placed["0_backward"]["extern_kernels.mm:2"] == ("1_backward", "[1/0] backward")
    # the section it names is that graph's
    ref = sections["0_backward"].called_by["extern_kernels.mm:2"]
    assert found.compiles[ref.compile_id].sections[ref.section].title == "1_backward"

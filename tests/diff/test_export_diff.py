"""diff of a torch.export user's failed exports against the same program with torch's suggested fixes
(tests/data/torch213/README.md, export_constraints and export_constraints_fixed): told in export words."""

from __future__ import annotations

import functools

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts import RunFacts
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.ingest.reader import read_trace

from ..conftest import torch213

PROGRAM = "export_constraints.py"


@functools.cache
def facts(log: str) -> RunFacts:
    with read_trace(str(torch213(log))) as trace:
        return run_facts(analyze(trace))


def changes():
    return diff_runs(facts("export_constraints.log.gz"), facts("export_constraints_fixed.log.gz")).changes


def test_the_frame_strict_export_traced_is_named_by_the_model_and_the_export_call():
    # Neither log has a dynamo_start. Strict export's Dynamo trace logs its records under frame 0, compile 0; their
    # user stacks start in torch's functional_export.py `forward` and go on into the model's `forward` in
    # export_constraints.py (line 36, `n = k.item()`). Its compilation_metrics ("compile_id": null) carries the Python
    # stack through export_topk's torch.export.export(TopK(), ...) at line 63. A's trace failed before its graph
    # (no dynamo_output_graph); B's logged one.
    for log in ("export_constraints.log.gz", "export_constraints_fixed.log.gz"):
        [frame] = facts(log).frames.values()
        assert (frame.filename.rsplit("/", 1)[-1], frame.function, frame.first_line) == (PROGRAM, "forward", None)
        assert frame.exported_at == f"{PROGRAM}:63" and frame.compile_ids == ["[0/0]"]
    [graphs] = [c for c in changes() if c.section == "graphs"]
    assert graphs.title == (f"forward ({PROGRAM}), by strict torch.export at {PROGRAM}:63: 0 → 1 graphs")


def test_the_dims_the_fix_no_longer_contradicts_are_told_gone():
    # A: create_symbol s27 vr [2, 128] (L['tokens'].size()[1]) and guard_added_fast "s27 <= 32" from forward line 30;
    # create_symbol s52 (L['tokens'].size()[0]) specialized to 2 by line 31. B: s27 vr [2, 32], no s52, no such guard.
    dims = [c for c in changes() if c.section == "dynamic_shapes" and isinstance(c.a, dict) and "call" in c.a]
    assert [(c.kind, c.a["input"], c.a["guard"], c.a["value"], c.a["at"]) for c in dims] == [
        ("removed", "tokens.size()[1]", "s27 <= 32", None, f"{PROGRAM}:30"),
        ("removed", "tokens.size()[0]", None, "2", f"{PROGRAM}:31")]
    assert [c.title for c in dims] == [
        f"torch.export at {PROGRAM}:52: tokens.size()[1] (given [2, 128]) no longer narrowed by the code "
        f"(s27 <= 32 at {PROGRAM}:30)",
        f"torch.export at {PROGRAM}:52: tokens.size()[0] no longer fixed to 2 by the code at {PROGRAM}:31"]
    # The other way round, they are new.
    back = diff_runs(facts("export_constraints_fixed.log.gz"), facts("export_constraints.log.gz")).changes
    assert sorted(c.kind for c in back if isinstance(c.b, dict) and "call" in c.b) == ["added", "added"]


def test_an_unbacked_symbol_is_named_as_a_data_dependent_value():
    # B's strict trace makes u2 at line 42 (`scores[:n]`, n from k.item()): create_unbacked_symbol logs no source.
    new = [c.title for c in changes() if c.section == "dynamic_shapes" and c.kind == "added"]
    assert new == [f"new dynamic symbol for a data-dependent value (u2, unbacked) (at {PROGRAM}:42)"]
    assert not any("None" in c.title for c in changes())


def test_a_frame_several_strict_exports_share_names_no_one_call():
    # export_strict_several: three strict exports (lines 37, 42, 47), all three traces' records under frame 0.
    [frame] = facts("export_strict_several.log.gz").frames.values()
    assert frame.exported_at is None and frame.compile_ids == ["[0/0]"]


def test_torch_compile_frames_name_no_export():
    with read_trace(str(torch213("dynamic_shapes.log"))) as trace:
        frames = run_facts(analyze(trace)).frames.values()
    assert frames and all(f.exported_at is None and "torch.export" not in f.label for f in frames)

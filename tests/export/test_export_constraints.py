"""A torch.export user's failed exports (tests/data/torch213/README.md, export_constraints): where the log places
their guards, and how a strict export that Dynamo could not trace is worded."""

from __future__ import annotations

from functools import lru_cache

from compilescope.analyses.insights import Insights, insights
from compilescope.ingest.reader import read_trace

from ..conftest import torch213

PROGRAM = "export_constraints.py"


@lru_cache(maxsize=None)
def insights_of(log: str) -> Insights:
    with read_trace(str(torch213(log))) as trace:
        return insights(trace)


def test_non_strict_export_guards_are_placed_on_the_model_line_that_added_them():
    # Non-strict export runs forward in Python: both guard_added_fast events log "user_stack": [] and a Python stack
    # through export_constraints.py:52 (the export call), torch's tracer, then forward at line 30 (the 32-row position
    # table: "s27 <= 32") and line 31 (reshape(2, -1): "Eq(s52, 2)"), then torch's ops.
    guards = insights_of("export_constraints.log.gz").dynamic_shapes.guards
    placed = {g.expr: (g.location.filename.rsplit("/", 1)[-1], g.location.line, g.location.function)
              for g in guards if g.location is not None}
    assert placed == {"s27 <= 32": (PROGRAM, 30, "forward"), "Eq(s52, 2)": (PROGRAM, 31, "forward")}
    assert all(g.torch_location is None for g in guards)


def test_torch_compile_guards_with_no_user_line_stay_unplaced():
    # torch.compile traces bytecode: dynamic_shapes.log's guards with an empty user stack (AOTAutograd's) have no user
    # frame below torch's in their Python stack, so the traced frame adds no place to them.
    ds = insights_of("dynamic_shapes.log").dynamic_shapes
    assert ds.unplaced_guards is not None and ds.unplaced_guards.count > 0

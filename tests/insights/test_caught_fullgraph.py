"""A fullgraph=True compile that fails, caught by the program, then the same function compiled again
(tests/data/torch213/programs/caught_fullgraph.py): the failure is reported, and nothing counts as a recompile."""

from __future__ import annotations

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.ingest.reader import read_trace

from ..conftest import run_cli, torch213

LOG = torch213("caught_fullgraph.log.gz")


def test_a_compile_after_a_failed_one_is_not_a_recompile(capsys):
    with read_trace(str(LOG)) as trace:
        results = analyze(trace)
        ins, facts = results.insights, run_facts(results)
        compile_ids = sorted(str(c) for c in trace.compiles if c is not None)
    assert compile_ids == ["[0/0]", "[0/1]", "[0/1_1]", "[1/0]"]  # frame 0 compiled twice, [0/0] failed
    assert [e.compile_id for e in ins.errors.errors] == ["[0/0]"]
    assert ins.recompiles.total == 0 and ins.recompiles.frames == []
    assert not [f for f in ins.findings if "recompiled" in f.title]
    (f,) = [fr for fr in facts.frames.values() if fr.function == "f"]
    assert f.compile_ids == ["[0/0]", "[0/1_1]"] and f.statuses[0] == "error" and f.recompiles == 0
    assert run_cli("check", LOG, "--max-recompiles", "0") == 0
    assert capsys.readouterr().out.strip() == "compilescope check: 1 rule passed (max-recompiles)"


def test_a_recompile_after_a_cached_compile_still_counts():
    # recompiles.log: every compile of g after the first follows a compile that was cached.
    with read_trace(str(torch213("recompiles.log"))) as trace:
        results = analyze(trace)
        ins, facts = results.insights, run_facts(results)
    assert ins.recompiles.total == sum(f.recompiles for f in facts.frames.values()) > 0

"""A compiled training step with a custom autograd.Function and a global list it appends to (train_step_pitfalls.py):
what compilescope says of its recompiles and cache lookups, checked against the raw logs."""

from __future__ import annotations

import gzip
import re

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles.advice import ADVICE
from compilescope.analyses.recompiles.reasons import classify_change
from compilescope.ingest.reader import read_trace

from ..conftest import torch213


def _text(name: str) -> str:
    return gzip.open(torch213(name), "rt").read()


def _insights(name: str):
    with read_trace(str(torch213(name))) as trace:
        return insights(trace)


def _lookups(text: str) -> list[tuple[str, str, str | None]]:
    """(compile id, artifact name, key) of each cache lookup artifact, in log order."""
    found = []
    for m in re.finditer(r'\{"artifact": \{"name": "((?:fx_graph|aotautograd)_cache_\w+)", "encoding": "json"\}, '
                         r'"frame_id": (\d+), "frame_compile_id": (\d+).*\n\t(.*)', text):
        key = re.search(r'"key": "(\w+)"', m[4])
        found.append((f"[{m[2]}/{m[3]}]", m[1], key[1] if key else None))
    return found


def test_a_global_list_the_compiled_step_appends_to_is_advised_as_such_not_as_an_argument():
    text = _text("train_step_pitfalls.log.gz")
    # torch's reasons: [0/1] because the list was no longer empty (LENGTH_CHECK `not G['history']`), [0/2] because
    # its length changed again; [0/2] hit recompile_limit (2).
    reasons = re.findall(r"\b(0/\d): (not G\['history'\]|len\(G\['history'\]\) == \d)\s+# history\.append\(1\)", text)
    assert sorted(set(reasons)) == [("0/0", "not G['history']"), ("0/1", "len(G['history']) == 1")]
    assert "LENGTH_CHECK: not G['history']" in text
    # torch logged that the compiled code itself changes the list, and where.
    mutation = re.search(r"Mutating object of type list \(source name: G\['history'\]\)\n\t\n(?:\t.*\n)*?"
                         r'\t +File "[^"]+/train_step_pitfalls\.py", line (\d+), in train_step\n\t +(.*)\n', text)
    assert mutation is not None and mutation[2] == "history.append(1)"
    line = mutation[1]

    [frame] = _insights("train_step_pitfalls.log.gz").recompiles.frames
    assert frame.hit_limit and frame.limit == 2
    assert [(s.compile_id, s.guard.guard, s.guard.change) for s in frame.steps] == [
        ("[0/1]", "not G['history']", "length"), ("[0/2]", "len(G['history']) == 1", "length")]
    # The advice names the global and the line that changes it; a list *argument* to pad it is not.
    assert ADVICE["length"] not in frame.advice
    [advice] = [a for a in frame.advice if "history" in a]
    assert advice.startswith(f"The compiled code changes the global list history itself (train_step_pitfalls.py:{line}: "
                             "history.append(1), a change torch logged)")
    assert "Keep that bookkeeping out of the compiled function" in advice


def test_length_checks_of_arguments_keep_the_general_advice():
    # Dynamo's LENGTH_CHECK of an empty container is `not <source>`; of a local (an argument), the advice stays.
    assert classify_change("not G['history']") == classify_change("not L['xs']") == "length"
    assert classify_change("len(L['xs']) == 3") == "length"


def test_a_hit_on_a_graph_this_run_compiled_is_not_said_to_reuse_an_earlier_run():
    text = _text("train_step_pitfalls.log.gz")
    lookups = _lookups(text)
    # [0/0] missed both FX graphs (forward, backward); [0/1] hit the same two keys: what [0/0] wrote in this run.
    missed = [key for cid, name, key in lookups if cid == "[0/0]" and name == "fx_graph_cache_miss"]
    hit = [key for cid, name, key in lookups if cid == "[0/1]" and name == "fx_graph_cache_hit"]
    assert len(missed) == 2 and sorted(hit) == sorted(missed)
    assert {name for _, name, _ in lookups if name.startswith("aotautograd")} == {"aotautograd_cache_bypass"}

    found = _insights("train_step_pitfalls.log.gz").caches
    assert found.overall == "mixed"
    assert found.reused_in_run == {"[0/1]": ["[0/0]"]}
    assert found.reused_across_reset == []  # (a recompile: no torch._dynamo.reset() between them)
    assert [e.reused_from for c in found.compiles if c.compile_id == "[0/1]" for e in c.events
            if e.outcome == "hit"] == ["[0/0]", "[0/0]"]
    # Its graphs are in this log (under [0/0]): no "served from cache, run with an empty cache to see them".
    assert found.graphs_missing == []
    assert found.overall_text == ("some cache lookups hit (torch reused what this run had compiled already: [0/1] "
                                  "reused [0/0]'s), others missed (compiled anew)")
    assert "earlier run" not in found.overall_text


def test_misses_and_bypasses_without_a_hit_are_not_called_mixed():
    text = _text("train_step_pitfalls_no_hits.log.gz")
    names = [name for _, name, _ in _lookups(text)]
    # Each compile's graph divides by a different len(history): every FX lookup misses; AOTAutograd's are bypassed
    # (the autograd.Function), and nothing hits.
    assert sorted(set(names)) == ["aotautograd_cache_bypass", "fx_graph_cache_miss"]
    misses, bypasses = names.count("fx_graph_cache_miss"), names.count("aotautograd_cache_bypass")
    assert (misses, bypasses) == (4, 2)

    found = _insights("train_step_pitfalls_no_hits.log.gz").caches
    assert found.overall == "cold"
    assert found.overall_text == (f"no cache lookup hit ({misses} missed; {bypasses} were bypassed, as torch could not "
                                  "cache those graphs), so torch compiled everything anew (a first run, or an empty "
                                  "cache)")
    assert "some cache lookups hit" not in found.overall_text


def test_a_compile_that_failed_before_dynamo_named_it_is_named_by_its_frame():
    text = _text("train_step_pitfalls.log.gz")
    # [0/2] hit the recompile limit: its compilation_metrics name no function; [0/0] and [0/1] (frame 0 too) do.
    names = dict(re.findall(r'"compilation_metrics": \{"compile_id": "(0/\d)", "frame_key": [^,]+, "co_name": '
                            r'(null|"\w+")', text))
    assert names == {"0/0": '"train_step"', "0/1": '"train_step"', "0/2": "null"}
    times = _insights("train_step_pitfalls.log.gz").compile_time
    assert {c.compile_id: c.name for c in times.compiles} == {"[0/0]": "train_step", "[0/1]": "train_step",
                                                              "[0/2]": "train_step"}

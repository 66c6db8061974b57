"""A user who upgraded torch diffs a run of each version: what the upgrade changed, told apart from what the program
did, and no change where only the recording differs (the directory the program ran from)."""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses import analyze
from compilescope.analyses.diff import diff_runs, run_facts
from compilescope.ingest.reader import read_trace

from ..conftest import run_cli, torch213, torch214


def _facts(path):
    with read_trace(str(path)) as trace:
        return run_facts(analyze(trace))


def _text(path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.name.endswith(".gz") else data).decode()


def _program_paths(path) -> set[str]:
    return set(re.findall(r'"co_filename": "([^"]+)"', _text(path)))


def test_the_same_program_run_from_another_checkout_is_matched_by_its_file_name(capsys):
    old, new = torch213("empty_graph.log"), torch214("empty_graph.log")
    # The two recordings ran empty_graph.py from two checkouts: every frame is named by another absolute path.
    assert _program_paths(old) == {"/work/wt-15/tests/data/torch213/programs/empty_graph.py"}
    assert _program_paths(new) == {"/work/main/tests/data/torch213/programs/empty_graph.py"}
    d = diff_runs(_facts(old), _facts(new))
    # The same five frames (log_first, break_first, their resume functions, passthrough) and the same two breaks
    # (README: print at line 15, graph_break() at line 21) in both: nothing compiled or broke in one run only.
    assert {c.section for c in d.changes} == {"environment"}
    assert sorted(k.rsplit(" ", 1)[1] for k in d.matched_frames) == sorted([
        "log_first", "torch_dynamo_resume_in_log_first_at_15", "break_first", "torch_dynamo_resume_in_break_first_at_21",
        "passthrough"])
    assert ("B ran its files from another directory: matched by name "
            "(/work/main/tests/data/torch213/programs/empty_graph.py as "
            "/work/wt-15/tests/data/torch213/programs/empty_graph.py)") in d.notes
    # The gate passes: a break that only moved directory is no new break.
    assert run_cli("check", "--json", new, "--baseline", old) == 0
    results = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert results["baseline-graph-breaks"]["passed"]


def test_files_both_runs_name_are_not_matched_again():
    # diff_pair.py from one directory in both: the break the variant added is new, still (its file is the same file).
    base, brk = torch213("diff_base.log.gz"), torch213("diff_break.log.gz")
    assert _program_paths(base) == _program_paths(brk)
    d = diff_runs(_facts(base), _facts(brk))
    assert [c.title for c in d.changes if c.section == "graph_breaks"] == [
        "new graph break: Call to `torch._dynamo.graph_break()` at diff_pair.py:33"]
    assert not any("another directory" in note for note in d.notes)

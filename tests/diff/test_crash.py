"""diff and check of a run that crashed in native code (the stack `compilescope run` appended to its log as a
`compilescope_crash` artifact): the gate fails on it, and the diff shows it first and reads its log as one that ends
early.

Real logs: tests/data/torch213 `native_crash.log.gz` (a custom op reads address 0 while [0/0]'s compiled code runs)
against the same log without its crash record (the envelope line and its tab-indented payload removed: the same run,
as a log without the recorder would hold it); tests/data/cuda_torch211 `hf_gpt2_static_cache.log.gz` (transformers'
static-cache recipe, dead in torch 2.11's Triton launcher while CUDA graph trees ran its recompile [0/1]) against
`hf_gpt2_generate.log.gz` (the same GPT-2 `wrapper` frame with the dynamic cache, compiled 5 times).
"""

from __future__ import annotations

import gzip
import json
import os
import re

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.ingest.reader import read_trace
from compilescope.runner import attach_crash_reports

from ..conftest import cuda211, run_cli, torch213

NATIVE = torch213("native_crash.log.gz")
GENERATE = cuda211("hf_gpt2_generate.log.gz")
STATIC_CACHE = cuda211("hf_gpt2_static_cache.log.gz")
ENVELOPE = '"name": "compilescope_crash"'
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def _lines(path) -> list[str]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read().split("\n")


def _crash_span(lines: list[str]) -> tuple[int, int]:
    """The crash record: its envelope line and the tab-indented payload lines under it."""
    [start] = [i for i, line in enumerate(lines) if ENVELOPE in line]
    end = start + 1
    while end < len(lines) and lines[end].startswith("\t"):
        end += 1
    return start, end


def without_crash(log, path):
    """The same log with its crash record taken out."""
    lines = _lines(log)
    start, end = _crash_span(lines)
    path.write_text("\n".join(lines[:start] + lines[end:]))
    return path


def raw_crash(log) -> dict:
    """From the raw log, not compilescope's reading: the error, the crashing thread's innermost frame, the compile whose
    output code file is on that stack (its inductor_output_code record names the file), and the program's own line
    (the innermost frame in tests/data's programs)."""
    lines = _lines(log)
    start, end = _crash_span(lines)
    text = [line[1:] for line in lines[start + 1:end]]
    current = text[next(i for i, t in enumerate(text) if t.startswith("Current thread")):]
    frames = []
    for t in current[1:]:
        m = _FRAME.match(t)
        if not m:
            break
        frames.append(m)
    code = {}
    for line in lines:
        if '{"inductor_output_code": {"filename": ' in line:
            record = json.loads(line[line.index("{"):])
            code[record["inductor_output_code"]["filename"]] = f"[{record['frame_id']}/{record['frame_compile_id']}]"
    [compile_id] = {code[f["file"]] for f in frames if f["file"] in code}
    user = next(f for f in frames if "/tests/data/" in f["file"] and "/programs/" in f["file"])
    return {"error": text[0].removeprefix("Fatal Python error: "), "where": frames[0], "compile_id": compile_id,
            "graph_trees": any(f["file"].endswith("torch/_inductor/cudagraph_trees.py") for f in frames),
            "user": user, "last_record": not any(line.startswith("V") for line in lines[end:])}


def _described(raw: dict) -> str:
    """How the report's crash finding names it: error, place, function, and whose compiled code ran."""
    where = raw["where"]
    trees = " under CUDA graph trees" if raw["graph_trees"] else ""
    return (f"{raw['error']} in {os.path.basename(where['file'])}:{where['line']} ({where['func']}) while running "
            f"{raw['compile_id']}'s compiled code{trees}")


def _facts(log):
    with read_trace(str(log)) as trace:
        return run_facts(analyze(trace))


def test_check_fails_a_run_that_crashed_and_names_the_crash(tmp_path, capsys):
    raw = raw_crash(NATIVE)
    assert raw["error"] == "Segmentation fault" and raw["last_record"]
    clean = without_crash(NATIVE, tmp_path / "clean.log")
    # Without rules only no-failures is asked for, and it holds: the crash fails the gate anyway, in one line.
    assert run_cli("check", NATIVE) == 1
    assert capsys.readouterr().out.splitlines() == [f"no-crash: the run crashed: {_described(raw)}"]
    # The same run without its crash record passes: nothing else of the log fails.
    assert run_cli("check", clean) == 0
    assert capsys.readouterr().out.splitlines() == ["compilescope check: 1 rule passed (no-failures)"]
    # JSON: the rule comes first, and its details add the user's line on the stack.
    assert run_cli("check", NATIVE, "--json") == 1
    rules = json.loads(capsys.readouterr().out)["rules"]
    assert [(r["rule"], r["passed"]) for r in rules] == [("no-crash", False), ("no-failures", True)]
    user = raw["user"]
    assert rules[0]["details"] == [f"the run crashed: {_described(raw)}, called from "
                                   f"{os.path.basename(user['file'])}:{user['line']} in {user['func']}"]
    # A crashed baseline is one whose log stops early: the gate says so, and nothing else regressed.
    assert run_cli("check", clean, "--baseline", NATIVE) == 1
    assert capsys.readouterr().out.splitlines() == [f"no-crash: the baseline's run crashed: {_described(raw)}"]


def test_diff_shows_the_crash_first_and_only_it(tmp_path, capsys):
    raw = raw_crash(NATIVE)
    clean = without_crash(NATIVE, tmp_path / "clean.log")
    crashed, whole = _facts(NATIVE), _facts(clean)
    # The crash record is the log's last: nothing else differs, so it is the one change.
    [change] = diff_runs(crashed, whole).changes
    assert (change.section, change.kind) == ("crash", "removed")
    assert change.title == f"A crashed: {_described(raw)}; B's log records no crash"
    # The frame whose compiled code ran: the one frame that compiled raw's compile id.
    [frame] = [k for k, f in crashed.frames.items() if raw["compile_id"] in f.compile_ids]
    assert change.frame == frame
    [flipped] = diff_runs(whole, crashed).changes
    assert (flipped.kind, flipped.title) == ("added", f"B crashed: {_described(raw)}; A's log records no crash")
    # One crash on both sides is no change; each side still says its log ends at it.
    same = diff_runs(crashed, crashed)
    assert same.changes == [] and [p.split(" (")[0] for p in same.partial] == [
        "A's log ends where the program crashed", "B's log ends where the program crashed"]

    user = f"{os.path.basename(raw['user']['file'])}:{raw['user']['line']} in {raw['user']['func']}"
    assert run_cli("diff", NATIVE, clean) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"! A's log ends where the program crashed ({_described(raw)}): what it would have done after" in out
    assert f"Crash - A crashed: {_described(raw)}; B's log records no crash A: called from {user}" in out
    assert run_cli("diff", NATIVE, clean, "--json") == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    assert rank["sections"] == ["crash"] and rank["b"]["crash"] is None
    assert rank["a"]["crash"]["compile_id"] == raw["compile_id"] and rank["a"]["crash"]["line"] == int(raw["where"]["line"])
    # The page: the crash is the first section, with a link to the stack in A's report.
    assert run_cli("diff", NATIVE, clean, "-o", tmp_path / "page", "--no-browser") == 1
    capsys.readouterr()
    page = (tmp_path / "page" / "index.html").read_text()
    assert re.findall(r'<section class="diff-section" id="(\w+)"', page) == ["crash"]
    assert f"called from {user} · " in page and '<a href="a/index.html#insights-crash">' in page
    assert 'id="insights-crash"' in (tmp_path / "page" / "a" / "index.html").read_text()


def test_two_crashes_elsewhere_are_a_change():
    native, static = raw_crash(NATIVE), raw_crash(STATIC_CACHE)
    [change] = [c for c in diff_runs(_facts(NATIVE), _facts(STATIC_CACHE)).changes if c.section == "crash"]
    assert change.kind == "changed"
    assert change.title == f"A crashed: {_described(native)}; B crashed: {_described(static)}"


def test_the_crashed_side_explains_what_it_did_not_live_to_compile(capsys):
    # The static-cache run died while running its recompile [0/1], its crash the log's last record; generate went on to
    # compile the same transformers wrapper frame 5 times ([0/0] .. [0/4], tests/data/cuda_torch211/README.md).
    raw = raw_crash(STATIC_CACHE)
    assert raw["last_record"] and raw["compile_id"] == "[0/1]" and raw["graph_trees"]
    d = diff_runs(_facts(GENERATE), _facts(STATIC_CACHE))
    first = d.changes[0]
    assert (first.section, first.kind, first.title) == (
        "crash", "added", f"B crashed: {_described(raw)}; A's log records no crash")
    marked = {c.title: c.unread_side for c in d.changes}
    # (the frame named as the report names it: by the program's lines that called it, 20 and 22 in hf_gpt2_generate.py,
    # the dynamo_start stacks of A's compiles; B's two, [0/0] and [0/1], pass hf_gpt2_static_cache.py's line 22 last:
    # each run's, as they differ; and by the model transformers' decorator `wrapper` runs, as its sections name it)
    wrapper = ("GPT2LMHeadModel's forward (generic.py:933, called at hf_gpt2_generate.py:20, 22 in A; "
               "hf_gpt2_static_cache.py:22 in B)")
    # Fewer compiles in B: what a run that stopped at [0/1] cannot have logged.
    assert marked[f"{wrapper}: 5 → 2 compiles (4 → 1 recompiles)"] == "B"
    # What B has more of, or another value of, a crash cannot have made: not marked.
    assert marked["GPU: NVIDIA H200 → NVIDIA H100 80GB HBM3"] is None
    assert all(side is None for title, side in marked.items() if title.startswith("CUDA graphs skipped in B"))
    assert first.unread_side is None
    n = sum(side == "B" for side in marked.values())
    assert d.partial == [f"B's log ends where the program crashed ({_described(raw)}): what it would have done after "
                         f"is not in the log and may show below as a change; the {n} changes it may explain say so"]
    # check against it as the baseline: the crash fails the gate, and the recompiles it may explain are hedged.
    assert run_cli("check", GENERATE, "--baseline", STATIC_CACHE) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"no-crash: the baseline's run crashed: {_described(raw)}",
        # the frame both compiled: transformers' wrapper at generic.py:933 (README), 1 recompile in the static-cache
        # run, 4 in generate's. Of generate's 4 recompile reasons, 2 are kwargs['input_ids'] size mismatches at index
        # 1 (expected 16, actual 24; expected 8, actual 1: two numbers differ, so the first stands for both); the
        # static-cache run's one was len(kwargs) == 6.
        "baseline-recompiles: 1 → 4 recompiles; most in GPT2LMHeadModel's forward (generic.py:933, called at "
        "hf_gpt2_static_cache.py:22 in the baseline; hf_gpt2_generate.py:20, 22 in this run): "
        "1 → 4, 2 of them failing guards like "
        "tensor 'kwargs['input_ids']' size mismatch at index 1. expected 16, actual 24 (tensor size) (may be only what "
        "the baseline's log lacks)"]


def test_a_crash_while_compiling_is_the_crash_not_a_second_failure(tmp_path, capsys):
    # recompiles.log cut after its line 1000 on a whole line, as a process that died there leaves it ([0/3] has
    # started and has no metrics), and a crash recorded for it by run's own code, faulthandler's text inside Dynamo.
    lines = torch213("recompiles.log").read_text().splitlines(keepends=True)
    log = tmp_path / "died.log"
    log.write_text("".join(lines[:1000]))
    pid = re.search(r"^V\d{4} [\d:.]+ (\d+) ", lines[0])[1]
    (tmp_path / f"compilescope_crash_{pid}.txt").write_text(
        "Fatal Python error: Aborted\n\nCurrent thread 0x01 (most recent call first):\n"
        '  File "/v/site-packages/torch/_inductor/lowering.py", line 7 in lower\n'
        '  File "/v/site-packages/torch/_dynamo/convert_frame.py", line 9 in _compile\n')
    assert len(attach_crash_reports(str(tmp_path), [str(log)])) == 1
    # The crash says why the log ends mid-compile: one line, not whole-log's "stopped, crashed or killed" too.
    assert run_cli("check", log) == 1
    assert capsys.readouterr().out.splitlines() == [
        "no-crash: the run crashed: Aborted in lowering.py:7 (lower) while compiling"]
    assert run_cli("diff", torch213("recompiles.log"), log, "--json") == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    assert rank["b"]["ends_during"].startswith("during [0/3]'s ")
    assert rank["notes"][0].startswith(f"B's log ends {rank['b']['ends_during']}, where the program crashed (Aborted in "
                                       "lowering.py:7 (lower) while compiling): ")
    assert "h (recompiles.py:28) compiled only in A (5 compiles)" in [
        c["title"] for c in rank["changes"] if c["unread_side"] == "B"]

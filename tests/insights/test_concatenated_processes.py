"""Several processes' logs one after another in one file (`cat a.log b.log`): each process counts its frames from 0,
and no torch._dynamo.reset() ran. The reader numbers each later process's frames on (ingest/resets.py) and says so as
another process's, not a reset's. Values from the raw logs: their glog pids and the compile ids torch logged."""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import report, run_cli, torch213


def _pids(text: str) -> list[str]:
    """The glog pids of the log's envelopes, each once, in order."""
    return list(dict.fromkeys(re.findall(r"^[VIWEC]\d{4} [\d:.]+ (\d+) ", text, re.M)))


def _dynamo_starts(text: str) -> list[tuple[int, int, int]]:
    """(frame id, frame compile id, attempt) of each compile id the log's envelopes name, once, in order (torch names
    a restarted attempt, [1/0_1], in its records without logging a dynamo_start for it)."""
    return list(dict.fromkeys((int(f), int(c), int(a)) for f, c, a in re.findall(
        r'^V[^\n]*"frame_id": (\d+), "frame_compile_id": (\d+), "attempt": (\d+)', text, re.M)))


def _id(frame: int, compile_: int, attempt: int) -> str:
    return f"[{frame}/{compile_}{f'_{attempt}' if attempt else ''}]"


def _concatenated(tmp_path, texts: list[str]):
    path = tmp_path / "concatenated.log"
    path.write_text("".join(texts))
    return path


def test_two_programs_logs_keep_their_compiles_apart(tmp_path):
    # recompiles.log (pid 13843: g as 0/0..0/3, h as 1/0..1/4) then graph_breaks.log (pid 13841, logged earlier:
    # f and its resume functions as frames 0..4). Read as a copied block before, graph_breaks' frames 0 and 1 were
    # merged into g's and h's compiles.
    first = torch213("recompiles.log").read_text()
    second = torch213("graph_breaks.log").read_text()
    assert _pids(first) == ["13843"] and _pids(second) == ["13841"]
    top = max(frame for frame, _, _ in _dynamo_starts(first))
    assert top == 1
    later = _dynamo_starts(second)
    assert sorted({frame for frame, _, _ in later}) == [0, 1, 2, 3, 4]
    with read_trace(str(_concatenated(tmp_path, [first, second]))) as trace:
        names = {str(cid): (c.metrics or {}).get("co_name") for cid, c in trace.compiles.items() if cid is not None}
        logged = {str(cid): (c.logged_frame_id, c.process_pid) for cid, c in trace.compiles.items()
                  if cid is not None and c.logged_frame_id is not None}
        found = insights(trace)
    # recompiles' ids stay as logged, and hold none of f's (graph_breaks') metrics
    assert all(_id(*started) in names and _id(*started) not in logged for started in _dynamo_starts(first))
    assert {names[_id(*started)] for started in _dynamo_starts(first)} <= {"g", "h", None}
    # each of graph_breaks' frames numbered on from recompiles' highest (1), with the frame id and pid it logged
    assert logged == {_id(frame + top + 1, compile_, attempt): (frame, 13841) for frame, compile_, attempt in later}
    assert names[f"[{top + 1}/0]"] == "f"
    assert not found.recompiles.after_reset and not found.recompiles.afresh
    assert [(r.compile_id, r.logged_as, r.pid) for r in found.recompiles.other_process] == [
        (_id(frame + top + 1, compile_, attempt), _id(frame, compile_, attempt), 13841)
        for frame, compile_, attempt in later]


def test_two_runs_of_one_program_are_no_reset(tmp_path, capsys):
    # diff_base and diff_base_again: the same program (diff_pair.py, no reset()) run twice, pids 29781 and 30971,
    # each compiling f as 0/0 and 0/1. Read as one log before, f was "compiled from scratch 2 times, the last after
    # torch._dynamo.reset()".
    texts = [gzip.open(torch213(name), "rt").read() for name in ("diff_base.log.gz", "diff_base_again.log.gz")]
    assert [_pids(t) for t in texts] == [["29781"], ["30971"]]
    assert [set(_dynamo_starts(t)) for t in texts] == [{(0, 0, 0), (0, 1, 0)}] * 2
    assert "reset(" not in (torch213("diff_base.log.gz").parent.parent / "programs" / "diff_pair.py").read_text()
    log = _concatenated(tmp_path, texts)
    assert run_cli("summary", str(log)) == 0
    out = capsys.readouterr().out
    assert "reset()" not in out and "from scratch" not in out
    assert run_cli("summary", "--json", str(log)) == 0
    doc = json.loads(capsys.readouterr().out)["recompiles"]
    assert doc["after_reset"] == [] and doc["compiled_afresh"] == []
    assert doc["other_process"] == [{"compile_id": f"[1/{c}]", "logged_as": f"[0/{c}]", "pid": 30971} for c in (0, 1)]
    report(log, tmp_path / "cs")
    page = (tmp_path / "cs" / "-_1_0_0" / "index.html").read_text()
    [note] = re.findall(r'<p id="logged-compile-id">([^<]*)</p>', page)
    assert note.startswith("torch logged this compile as [0/0] in another process in the same log (pid 30971)")
    assert "reset" not in note
    first = (tmp_path / "cs" / "-_0_0_0" / "index.html").read_text()
    [also] = re.findall(r'<p id="also-logged-as">([^<]*)</p>', first)
    assert "in another process in the same log" in also and "reset" not in also


def test_a_copied_block_of_one_process_is_still_one_compilation(tmp_path):
    # The copied-block rule holds within a process: recompiles.log twice (one pid, the copy logged no later than the
    # first's metrics) reads as it does once.
    text = torch213("recompiles.log").read_text()
    with read_trace(str(torch213("recompiles.log"))) as once:
        ids = [str(cid) for cid in once.compiles]
    with read_trace(str(_concatenated(tmp_path, [text, text]))) as twice:
        assert [str(cid) for cid in twice.compiles] == ids
        assert all(c.process_pid is None and c.logged_frame_id is None for c in twice.compiles.values())


def _cache_keys(text: str, name: str) -> list[str]:
    """The keys of a log's lookups of one outcome ("fx_graph_cache_hit"), in order: their payload's "key"."""
    return re.findall(r'"name": "' + name + r'"[^\n]*\n\t\{[^\n]*?"key": "(\w+)"', text)


def test_a_hit_on_another_processs_output_is_not_this_runs(tmp_path, capsys):
    # cache_cold.log (pid 14726) then cache_warm.log (pid 14842), one TORCHINDUCTOR_CACHE_DIR: the second process's
    # [0/0], numbered [1/0] here, hit both caches on the keys the first's [0/0] missed and wrote. That is reuse of
    # another process's output, not of this run's own (a recompile that made the same graph).
    cold, warm = (torch213(name).read_text() for name in ("cache_cold.log", "cache_warm.log"))
    assert [_pids(cold), _pids(warm)] == [["14726"], ["14842"]]
    for cache in ("fx_graph_cache", "aotautograd_cache"):
        written = _cache_keys(cold, f"{cache}_miss")
        assert len(written) == 1 and _cache_keys(warm, f"{cache}_hit") == written
        assert not _cache_keys(cold, f"{cache}_hit") and not _cache_keys(warm, f"{cache}_miss")
    log = _concatenated(tmp_path, [cold, warm])
    assert run_cli("summary", "--json", str(log)) == 0
    doc = json.loads(capsys.readouterr().out)["caches"]
    assert (doc["reused_in_run"], doc["reused_other_process"], doc["reused_across_reset"]) == (
        {"[1/0]": ["[0/0]"]}, {"[1/0]": ["[0/0]"]}, [])
    expected = ("some cache lookups hit (torch reused what another process in the same log had compiled: [1/0] reused "
                "[0/0]'s), others missed (compiled anew)")
    assert run_cli("summary", str(log)) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"mixed: {expected}" in out and "this run" not in out
    report(log, tmp_path / "cs")
    page = (tmp_path / "cs" / "index.html").read_text()
    [overall] = re.findall(r'<p class="muted" id="caches-overall">([^<]*)</p>', page)
    assert " ".join(overall.split()) == f"Mixed: {expected.replace(chr(39), '&#39;')}."

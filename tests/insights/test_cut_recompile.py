"""A recompile the log ends during is said to be still compiling, with the time it had run so far: never "took".

../shared gpu-torch211/gpt2_train cut at 6 MB (a whole line) ends inside GPT-2's forward recompile [1/1]: its last
records are [1/1_1]'s (Dynamo tracing), and the log has no `compilation_metrics` for 1/1, while [0/1] (wrapper's
recompile) logged its metrics before the cut. tests/data/torch213/logs/recompiles.log cut between [1/4]'s
`recompile_reasons` and its `compilation_metrics` ends inside h's last recompile, after [1/1] to [1/3] finished.
Which compiles finished is read from the cut text itself: the compile ids its `compilation_metrics` name.
"""

from __future__ import annotations

import html
import json
import re

from compilescope.analyses.compile_time import STILL_COMPILING
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import report, run_cli, shared, torch213

GPT2 = "gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"
CUT_BYTES = 6_000_000
_METRICS = re.compile(r'\{"compilation_metrics": \{"compile_id": "([0-9/_]+)"')
_IDS = re.compile(r'"frame_id": (\d+), "frame_compile_id": (\d+), "attempt": (\d+)')


def _cut_gpt2(tmp_path):
    """The first 6 MB of the GPT-2 log, up to its last whole line."""
    with open(shared(GPT2), "rb") as src:
        head = src.read(CUT_BYTES)
    cut = tmp_path / "gpt2_cut.log"
    cut.write_bytes(head[:head.rindex(b"\n") + 1])
    return cut


def _cut_recompiles(tmp_path):
    """recompiles.log up to (not with) the metrics of [1/4], its last recompile."""
    lines = torch213("recompiles.log").read_text().splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if '"compilation_metrics": {"compile_id": "1/4"' in line)
    cut = tmp_path / "recompiles_cut.log"
    cut.write_text("".join(lines[:end]))
    return cut


def _raw_facts(cut):
    """From the cut text: the compilations whose metrics it holds ("[0/1]"), and the compile id of its last record
    that names one, as (frame, compile, attempt)."""
    text = cut.read_text()
    finished = {f"[{cid.split('_')[0]}]" for cid in _METRICS.findall(text)}
    *_, last = _IDS.finditer(text)
    return finished, tuple(int(n) for n in last.groups())


def _check_analyses(cut):
    finished, (frame, compile_number, _) = _raw_facts(cut)
    ended_in = f"[{frame}/{compile_number}]"
    assert ended_in not in finished  # the log ends inside a compile that logged no metrics
    with read_trace(str(cut)) as trace:
        ins = insights(trace)
    assert [cid for cid, _ in ins.unfinished] == [ended_in]
    # The compile-time table: only that compile's total is so far
    assert [c.compile_id for c in ins.compile_time.compiles if c.unfinished] == [ended_in]
    steps = {re.sub(r"_\d+\]$", "]", s.compile_id): s for f in ins.recompiles.frames for s in f.steps}
    assert ended_in in steps and set(steps) - {ended_in}  # it is a recompile, and others finished before it
    for key, step in steps.items():
        assert step.when_text is not None, key
        if key == ended_in:
            assert step.unfinished and step.cost_s is not None and step.cost_s > 0
            assert f"; {STILL_COMPILING}, " in step.when_text and "took" not in step.when_text
        else:
            assert key in finished and not step.unfinished, key
            assert "; took " in step.when_text and STILL_COMPILING not in step.when_text, key
    cost = next(f for f in ins.findings if f.section == "recompiles" and "took" in f.detail)
    assert f"so far ({ended_in} {STILL_COMPILING})" in cost.detail
    return ended_in, ins.to_json()


def test_gpt2_cut_inside_its_forward_recompile(tmp_path):
    cut = _cut_gpt2(tmp_path)
    finished, (frame, compile_number, attempt) = _raw_facts(cut)
    assert (frame, compile_number) == (1, 1) and "[0/1]" in finished  # as the docstring says of this cut
    ended_in, doc = _check_analyses(cut)
    doc = json.loads(json.dumps(doc))  # (as --json writes it)
    [forward] = [f for f in doc["recompiles"]["frames"] if f["frame_id"] == frame]
    assert [s["unfinished"] for s in forward["steps"]] == [True]
    assert {c["compile_id"] for c in doc["compile_time"]["compiles"] if c["unfinished"]} == {ended_in}

    out = tmp_path / "report"
    report(cut, out)
    slowest = re.search(r'<table class="slowest">(.*?)</table>', (out / "index.html").read_text(), re.S)
    rows = {_text(cells[0]): [_text(c) for c in cells[1:]] for row in re.findall(r"<tr>(.*?)</tr>", slowest[1], re.S)
            if (cells := re.findall(r"<td[^>]*>(.*?)</td>", row, re.S))}
    for cid, (_, total, biggest) in rows.items():
        assert (total.endswith(" so far"), STILL_COMPILING in biggest) == ((cid == ended_in),) * 2, cid
    last = f"-_{frame}_{compile_number}_{attempt}"  # the attempt the log ends during ([1/1_1])
    page = (out / last / "index.html").read_text()
    assert STILL_COMPILING in _cell(page, "outcome")
    assert re.search(rf" so far: {STILL_COMPILING} ", _cell(page, "compile-time"))
    # The attempt Dynamo restarted before it did not lead to a compiled frame
    restarted = _cell((out / f"-_{frame}_{compile_number}_{attempt - 1}" / "index.html").read_text(), "outcome")
    assert "Dynamo compiled the frame again" not in restarted
    assert f"again as [{frame}/{compile_number}_{attempt}], which was {STILL_COMPILING}" in restarted
    cards = re.findall(r'<div class="compile" id="([^"]+)">\s*<div class="head">(.*?)</div>',
                       (out / "index.html").read_text(), re.S)
    noted = {cid for cid, head in cards if STILL_COMPILING in _text(head)}
    assert noted == {f"[{frame}/{compile_number}]", f"[{frame}/{compile_number}_{attempt}]"}


def test_recompiles_cut_inside_its_last_recompile(tmp_path, capsys):
    cut = _cut_recompiles(tmp_path)
    assert _check_analyses(cut)[0] == "[1/4]"
    assert run_cli("summary", cut) == 0
    out = " ".join(capsys.readouterr().out.split())  # (the terminal wraps its lines)
    assert "[1/4] h" in out and re.search(r"\[1/4\] h [0-9.]+ [µm]?s so far Dynamo tracing", out.replace("│", ""))


def test_whole_logs_say_took():
    # The same logs uncut: every recompile finished, and none is said to be still compiling.
    for log in (torch213("recompiles.log"),):
        with read_trace(str(log)) as trace:
            ins = insights(trace)
        steps = [s for f in ins.recompiles.frames for s in f.steps if s.when_text]
        assert steps and not any(s.unfinished or STILL_COMPILING in s.when_text for s in steps)
        assert not any(c.unfinished for c in ins.compile_time.compiles)


def _cell(page: str, cell_id: str) -> str:
    found = re.search(rf'id="{cell_id}">(.*?)</td>', page, re.S)
    assert found, cell_id
    return _text(found[1])


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())

"""Insights never fail on what a log may hold: other torch versions, cut logs, odd payloads, hostile text."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.render.terminal import print_summary

from ..conftest import PEER_SINGLE_LOGS, peer, report
from ..tracelog import cid, envelope


def _summary(path) -> tuple:
    with read_trace(str(path)) as trace:
        ins = insights(trace)
    console = Console(width=100, color_system=None, file=io.StringIO())
    print_summary(ins, console)
    json.dumps(ins.to_json())
    return ins, console.file.getvalue()


@pytest.mark.parametrize("name", PEER_SINGLE_LOGS)
def test_peer_logs(name):
    ins, text = _summary(peer(name))
    assert max(len(line) for line in text.splitlines()) <= 100


def test_peer_failure_and_old_style_breaks():
    ins, _ = _summary(peer("comp_failure.log"))
    (err,) = ins.errors.errors
    assert (err.stage, err.backend, err.inner_exception) == ("user_backend", "broken_backend", "RuntimeError")
    ins, _ = _summary(peer("comp_metrics.log"))  # older torch: breaks only as restart_reasons
    assert ins.graph_breaks.source == "restart_reasons"
    assert [(b.count, b.compile_ids) for b in ins.graph_breaks.breaks] == [(2, ["[0/0]", "[1/0]"])]
    # torch logged the reason's repr ("'skip function graph_break in file ...'"): shown as the text it quotes.
    assert ins.graph_breaks.breaks[0].reason.startswith("skip function graph_break in file ")
    assert not ins.graph_breaks.breaks[0].reason.endswith("'")
    ins, _ = _summary(peer("cache_hit_miss.log"))
    assert ins.caches.overall == "mixed"
    assert ins.caches.bypass_reasons[0][1] == 3
    # The log's three aotautograd_cache_bypass artifacts are logged as [1/0], one in each run between the program's
    # resets (ours [1/0], [3/0], [5/0]), each with the same cache_bypass_reason (flex_attention is not cacheable); the
    # summary's row and the page's read these, each on one line (the log's reason holds " \n " and ", \n": a table cell
    # cannot).
    assert {c.compile_id: c.bypass_reasons for c in ins.caches.compiles} == {
        cid: ["Unsupported call_function target flex_attention. Function module: torch.ops.higher_order, Function "
              "name: flex_attention"] for cid in ("[1/0]", "[3/0]", "[5/0]")}
    # The second run's fn ([3/0]) hit the key the first run's ([1/0]) missed and wrote (both fx_graph_cache lookups
    # name key ff6i4wr5…): the cache outlived the reset between them, as the program wants; said plainly, and fn's
    # second compile is not called "from scratch".
    assert (ins.caches.reused_in_run, ins.caches.reused_across_reset) == ({"[3/0]": ["[1/0]"]}, ["[3/0]"])
    assert "[3/0] reused [1/0]'s, compiled before torch._dynamo.reset(), which throws compiled functions away, not " \
           "what the caches hold" in ins.caches.overall_text
    [fn] = [f for f in ins.findings if f.title.startswith("fn (")]
    # fn's first compile ([1/0]) came before any reset: only the last followed one.
    assert fn.title == "fn (test_codecache.py:459) compiled 2 times, the last after torch._dynamo.reset()"
    assert "[3/0] was served from the cache [1/0] had filled" in fn.detail


def _chromium(name, ph, ts, compile_id="0/0"):
    return envelope({"chromium_event": {}, **cid(0)}, json.dumps(
        {"name": name, "ph": ph, "ts": ts, "pid": 0, "tid": 0, "cat": "dynamo_timed", "args": {"compile_id": compile_id}}))


def test_cut_log_and_hostile_text(tmp_path):
    hostile = "<script>alert(1)</script>"
    log = tmp_path / "cut.log"
    log.write_text("".join([
        envelope({"dynamo_start": {"stack": []}, **cid(0)}),
        _chromium("dynamo", "B", 1_000_000),
        _chromium("bytecode_tracing", "B", 1_000_100),
        _chromium("bytecode_tracing", "E", 1_200_000),
        _chromium("nonsense_end", "E", 1_250_000),  # an end without a begin
        _chromium("backend_compile", "B", 1_300_000),  # never ends: the log is cut
        envelope({"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, **cid(0)},
                 f"Graph break in user code at /u/{hostile}.py:7\nGraph Break Reason: {hostile}\n"),
        envelope({"artifact": {"name": "recompile_reasons", "encoding": "json"}, **cid(0, 1)}, "{not json"),
        envelope({"artifact": {"name": "fx_graph_cache_bypass", "encoding": "json"}, **cid(0, 1)}, "[1, 2]"),
        envelope({"compilation_metrics": {"fail_type": hostile, "fail_reason": None, "co_name": hostile}, **cid(0, 1)}),
    ]))
    ins, _ = _summary(log)
    (row,) = ins.compile_time.timeline
    assert row.incomplete and row.duration_s == pytest.approx(0.3)
    assert [s.phase for s in row.segments] == ["dynamo"]  # the cut backend_compile has no time after its start
    assert ins.graph_breaks.breaks[0].reason == hostile
    assert ins.recompiles.frames[0].steps[0].guard.guard == "{not json"
    assert ins.caches.compiles[0].events[0].outcome == "bypass"
    assert ins.errors.errors[0].stage == "dynamo"
    out = tmp_path / "out"
    report(log, out)
    html = (out / "index.html").read_text()
    assert hostile not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html

"""An export-only log (tests/data/torch213/README.md, export_constraints) is told in export words: the user ran
torch.export, not torch.compile, and a dim the export finding names is not told again as a specialization."""

from __future__ import annotations

import io
from functools import lru_cache

import pytest
from rich.console import Console

from compilescope.analyses.export import ExportReport, export_report
from compilescope.analyses.insights import Insights
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.render.terminal import print_summary

from ..conftest import torch213

PROGRAM = "export_constraints.py"


@lru_cache(maxsize=None)
def analysed(log: str) -> tuple[Insights, ExportReport]:
    with read_trace(str(torch213(log))) as trace:
        exported = export_report(trace)
        return insights(trace, export=exported), exported


def test_an_export_only_log_counts_the_users_export_calls():
    # Neither log has a dynamo_start (torch.compile logs one per frame it compiles; strict export's Dynamo trace
    # none), and their Python stacks run through two torch.export.export lines: export_encoder's at line 52 and
    # export_topk's at line 63 (called twice, strict=True then False, in a loop: one call).
    for log in ("export_constraints.log.gz", "export_constraints_fixed.log.gz"):
        ins, exported = analysed(log)
        assert exported.only
        assert [(c.filename.rsplit("/", 1)[-1], c.line, c.function) for c in exported.calls] == [
            (PROGRAM, 52, "export_encoder"), (PROGRAM, 63, "export_topk")]
        assert ins.export_calls == 2 and ins.counted == "2 torch.export calls"
        assert ins.to_json()["export_calls"] == 2


def test_an_export_only_log_says_exporting_took_not_compiling():
    # Its compile time is strict export's Dynamo trace (the compilation_metrics with "compile_id": null).
    titles = [f.title for f in analysed("export_constraints.log.gz")[0].findings if f.section == "compile_time"]
    assert len(titles) == 1 and titles[0].startswith("exporting took ")


def test_the_size_the_dim_finding_names_is_not_told_again_as_a_specialization():
    # symbolic_shape_specialization s52 = 2 (range_refined_to_singleton, reshape(2, -1) at line 31) is the dim the
    # export finding says the code fixes to 2: one finding for it, not also "1 dynamic size specialized".
    ins, exported = analysed("export_constraints.log.gz")
    assert [(c.symbol, c.value) for c in exported.dim_conflicts if c.value is not None] == [("s52", "2")]
    assert [(s.symbol, s.value) for s in ins.dynamic_shapes.specializations] == [("s52", "2")]  # (still listed)
    assert not [f for f in ins.findings if "specialized to a constant" in f.title]
    assert [f.title for f in ins.findings if f.section == "dynamic_shapes"] == [
        "torch.export at export_constraints.py:52: the model's code contradicts 2 dynamic dims it was given"]


def test_the_summary_heading_counts_exports():
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    print_summary(analysed("export_constraints.log.gz")[0], console)
    text = console.export_text()
    assert "· 2 torch.export calls" in text.splitlines()[0]
    assert "compile id" not in text.splitlines()[0] and "compiling took" not in text


def test_a_torch_compile_log_keeps_its_compile_words():
    # dynamic_shapes.log is torch.compile's (dynamo_start per frame): no export call, compile ids counted.
    ins, exported = analysed("dynamic_shapes.log")
    assert not exported.only and ins.export_calls is None
    assert ins.counted == f"{ins.n_compiles} compile ids"
    assert any(f.title.startswith("compiling took ") for f in ins.findings)
    assert any("specialized to a constant" in f.title and "compilation" in f.title for f in ins.findings)


def test_an_export_only_log_s_time_is_export_time():
    # Its one timed event outside a compile id is strict export's fullgraph_capture (B/E, compile_id None) around
    # Dynamo's compile_attempt_0 of [0/0]: the row of export_topk's strict export (line 63). Non-strict exports log none.
    ct = analysed("export_constraints.log.gz")[0].compile_time
    assert ct.export_only and ct.heading == "Export time"
    assert [(r.label, r.compile_id) for r in ct.timeline] == [("strict torch.export (Dynamo)", None)]
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    print_summary(analysed("export_constraints.log.gz")[0], console)
    text = console.export_text()
    assert "Export time (" in text and "Compile time" not in text


def test_an_export_only_report_says_export_time(tmp_path):
    from compilescope.api import report

    with open(report(torch213("export_constraints.log.gz"), out=tmp_path / "r")) as f:
        page = f.read()
    assert '<h3 id="insights-compile_time">Export time (' in page
    assert "Each strict torch.export&#39;s Dynamo trace from its start" in page
    assert 'title="strict torch.export (Dynamo)">strict torch.export (Dynamo)</a>' in page
    assert "fullgraph_capture" not in page and "Slowest compilations" not in page and "Compile time" not in page


def test_a_torch_compile_log_keeps_compile_time():
    ct = analysed("dynamic_shapes.log")[0].compile_time
    assert not ct.export_only and ct.heading == "Compile time" and ct.slowest_heading == "Slowest compilations"


def test_an_export_only_report_s_line_links_say_torch_export(tmp_path):
    # export_constraints' every compile is torch.export's (no dynamo_start in the log): a link to a line of
    # export_constraints.py says the page shows what torch.export did there, not torch.compile.
    import re
    from html import unescape

    from compilescope.api import report

    out = tmp_path / "r"
    report(torch213("export_constraints.log.gz"), out=out)
    titles = {unescape(t) for page in out.rglob("*.html") for t in re.findall(
        r'<a [^>]*href="(?:\.\./)*sources/[^"#]+#\w+" title="([^"]*)"', page.read_text())}
    assert titles and all(t.endswith(f"{PROGRAM}: what torch.export did to this line") for t in titles), titles


def test_a_multirank_report_of_export_only_ranks_says_export_time(tmp_path):
    # Two ranks, each export_strict_several's log (three strict exports, no dynamo_start): their time is export time.
    import gzip
    import shutil

    from ..conftest import run_cli

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in (0, 1):
        with gzip.open(torch213("export_strict_several.log.gz"), "rb") as src, \
                open(ranks / f"dedicated_log_torch_trace_rank_{rank}_x.log", "wb") as dest:
            shutil.copyfileobj(src, dest)
    out = tmp_path / "out"
    assert run_cli(ranks, "--all-ranks-html", "-o", out, "--no-browser", "--overwrite", "-j", "1") == 0
    page = (out / "index.html").read_text()
    assert '<h2 id="compile-time">Export time across ranks</h2>' in page
    assert '<th class="num">Export time (s)</th>' in page and "Compile time" not in page


def _raw_records(log: str) -> list[tuple[dict, str]]:
    """(envelope, payload) of each record of a raw log, in order: a payload is the tab-indented lines after it."""
    import gzip
    import json

    records: list[tuple[dict, list[str]]] = []
    with gzip.open(torch213(log), "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("\t") and records:
                records[-1][1].append(line[1:])
            elif "] {" in line:
                records.append((json.loads(line[line.index("] {") + 2:]), []))
    return [(envelope, "".join(payload)) for envelope, payload in records]


def test_an_export_only_log_times_each_strict_export_call_on_its_own():
    import json

    records = _raw_records("export_strict_several.log.gz")
    # Three compilation_metrics with "compile_id": null, each with a Python stack through the user's
    # torch.export.export line (37 Gate, 42 Scale, 47 Take); the string table names the program file 0.
    calls = [[f["line"] for f in env["stack"] if f["filename"] == 0][-1]  # (its innermost frame of the program)
             for env, _ in records if "compilation_metrics" in env]
    assert calls == [37, 42, 47]
    # Each strict export's Dynamo trace is one fullgraph_capture B/E pair outside any compile id, in call order.
    events = [json.loads(payload) for env, payload in records if "chromium_event" in env]
    begins = [e["ts"] for e in events if e["name"] == "fullgraph_capture" and e["ph"] == "B"]
    ends = [e["ts"] for e in events if e["name"] == "fullgraph_capture" and e["ph"] == "E"]
    assert len(begins) == len(ends) == 3
    durations = [(end - begin) / 1e6 for begin, end in zip(begins, ends)]
    # The model's line each trace names: Gate's failure at line 16 and Take's at 29 (their fail_reason's `from user
    # code:`), Scale's graph's first line, 23.
    reasons = [env["compilation_metrics"]["fail_reason"] or "" for env, _ in records if "compilation_metrics" in env]
    assert 'export_strict_several.py", line 16, in forward' in reasons[0] and not reasons[1]
    assert 'export_strict_several.py", line 29, in forward' in reasons[2]
    assert any(":23 in forward, code: return x * 3" in payload for env, payload in records if "dynamo_output_graph" in env)

    ct = analysed("export_strict_several.log.gz")[0].compile_time
    assert ct.slowest_heading == "By torch.export call" and ct.first_column == "torch.export call"
    rows = sorted(ct.compiles, key=lambda c: c.export_call.line)
    assert [(c.export_call.short, c.function_text) for c in rows] == [
        ("export_strict_several.py:37", "forward (line 16)"), ("export_strict_several.py:42", "forward (line 23)"),
        ("export_strict_several.py:47", "forward (line 29)")]
    assert [c.total_s for c in rows] == pytest.approx(durations, abs=1e-6)
    assert sum(c.total_s for c in ct.compiles) == pytest.approx(ct.total_s)  # (nothing left outside the calls)

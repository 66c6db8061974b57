"""Every renderer follows one contract (render/contract.py): from_results(results, options) shapes, render() formats."""

from __future__ import annotations

import inspect
import io
import re

import orjson
import pytest
from rich.console import Console

from compilescope.analyses.analyze import analyze
from compilescope.cli.multirank import summarize_ranks
from compilescope.ingest.reader import read_trace
from compilescope.model.payloads import JsonLines
from compilescope.render import contract
from compilescope.render.charts import ChartOptions, CompileTimeChart
from compilescope.render.multirank import SUMMARY_JSON, LandingOptions, LandingRenderer
from compilescope.render.options import ReportOptions
from compilescope.render.report import ReportRenderer
from compilescope.render.terminal import RankSummariesRenderer, SummaryRenderer, TerminalOptions

from .conftest import peer, torch213


def _text(renderable) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


RENDERERS = [
    (ReportRenderer, ReportOptions), (SummaryRenderer, TerminalOptions), (RankSummariesRenderer, TerminalOptions),
    (LandingRenderer, LandingOptions),
]


@pytest.mark.parametrize("renderer, options", RENDERERS)
def test_each_renderer_has_the_contract(renderer, options):
    # render/contract.Renderer's shape: a classmethod from_results(results, options), and render() of no argument
    assert isinstance(inspect.getattr_static(renderer, "from_results"), classmethod)
    assert list(inspect.signature(renderer.from_results).parameters) == ["results", "options"]
    assert inspect.signature(renderer.from_results).parameters["options"].default == options()
    assert list(inspect.signature(renderer.render).parameters) == ["self"]
    assert options.__dataclass_params__.frozen  # an options object, not loose arguments


def test_the_contract_lists_the_renderers_checked_here():
    """contract.py's table names each renderer held to the contract; the test above checks those, no fewer."""
    listed = re.findall(r"^    (\w+Renderer) +render/(\w+)\.py", contract.__doc__ or "", re.MULTILINE)
    checked = [(r.__name__, r.__module__.rsplit(".", 1)[1]) for r, _ in RENDERERS]
    assert sorted(listed) == sorted(checked)


def test_chart_geometry_is_shaped_from_results_with_options():
    with read_trace(str(torch213("training.log"))) as trace:
        times = analyze(trace).insights.compile_time
    chart = CompileTimeChart.from_results(times, ChartOptions(timeline_rows=1))
    assert len(chart.timeline) == 1 and chart.rows_omitted == len(times.timeline) - 1 == 1


def test_report_and_summary_renderers_take_results():
    with read_trace(str(torch213("graph_breaks.log"))) as trace:
        results = analyze(trace)
        files = dict(ReportRenderer.from_results(results, ReportOptions(plain_text=True)).render())
        assert {"index.html", "compile_directory.json", "raw.jsonl", "chromium_events.json"} <= set(files)
        assert any(name.endswith(".txt") and "output_code" in name for name in files) or "-_0_0_0/index.html" in files
        text = _text(SummaryRenderer.from_results(results).render())
    assert text.startswith("compilescope summary · graph_breaks.log")
    assert "Graph breaks" in text or "graph break" in text


def test_the_multi_rank_summary_renders_results_not_a_dict():
    results = summarize_ranks(str(peer("multi_rank_logs")), jobs=1)
    assert [s.rank for s in results.summaries] == [0, 1, 2, 3]
    text = _text(RankSummariesRenderer.from_results(results).render())
    assert "4 ranks" in text and "compilescope summary · multi_rank_logs" in text
    files = dict(LandingRenderer.from_results(results, LandingOptions(custom_header_html="<b>x</b>")).render())
    assert "<b>x</b>" in files["index.html"]
    assert orjson.loads(files[SUMMARY_JSON]) == results.to_json()  # the page's JSON is the results' own form


@pytest.mark.parametrize("log", ["cache_hit_miss.log", "simple.log"])
def test_a_report_names_each_file_once(log):
    # cache_hit_miss.log logs the same output code twice: its payloads/<md5>.txt was written twice, and counted so.
    with read_trace(str(peer(log))) as trace:
        names = [name for name, _ in ReportRenderer.from_results(analyze(trace)).render()]
    assert len(names) == len(set(names))


def test_chromium_events_json_is_the_spooled_lines_as_one_array_whatever_the_chunks():
    # Written from the spool's bytes a chunk at a time (not a line at a time): a chunk may end anywhere in a line.
    events = JsonLines()
    for i in range(50):
        events.append({"name": f"event {i}", "ph": "B", "ts": i, "args": {"text": "x\ny" * i}})
    whole = b"".join(events.json_array())
    assert orjson.loads(whole) == list(events) and whole.count(b",\n") == 49
    for size in (1, 7, 100, 4096):
        assert b"".join(events.json_array(size)) == whole
    assert b"".join(JsonLines().json_array(3)) == b"[]"

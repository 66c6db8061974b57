"""The one contract of every renderer (memray's shape).

    renderer = SomeRenderer.from_results(results, SomeOptions(...))   # shapes the data for this output
    output = renderer.render()                                         # formats it, computes nothing

`results` is what the analyses produced (analyses.results.Results for one log,
analyses.divergence.MultiRankResults for the ranks of a job); each renderer has
its own frozen options object. Renderers return content; only the CLI writes it.

    ReportRenderer         render/report.py    every file of a report directory (html and json)
    SummaryRenderer        render/terminal.py  `compilescope summary LOG` (a rich renderable)
    RankSummariesRenderer  render/terminal.py  `compilescope summary DIR`
    LandingRenderer        render/multirank.py the landing page of a multi-rank report

tests/test_renderers.py holds each renderer listed here to this shape (and fails when one is added here but not there).

Shaping helpers used inside a renderer follow the first half (from_results with options), e.g.
render/charts.CompileTimeChart: the compile-time charts' geometry, drawn by the html templates.
"""

from __future__ import annotations

from typing import Any, Protocol


class Renderer(Protocol):
    @classmethod
    def from_results(cls, results: Any, options: Any) -> Renderer: ...

    def render(self) -> Any: ...

"""The files of a multi-rank report's top level: landing page, merged and tlparse-compatible JSON.

Everything here formats summaries and the cross-rank analysis; nothing reads a
log or a rendered file. Only the CLI writes what these functions return.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator

import orjson

from ..analyses.divergence import (
    CACHE,
    COLLECTIVES,
    COMPILE_IDS,
    TENSOR_META,
    CollectivesParity,
    MultiRankAnalysis,
    MultiRankResults,
    multirank_json,
    rank_list,
)
from ..analyses.rank_summary import RankSummary
from .html.env import ENV, custom_header

SUMMARY_JSON = "multi_rank_summary.json"
CHROMIUM_EVENTS = "chromium_events.json"
COLLECTIVE_SCHEDULES = "collective_schedules.json"
RUNTIME_ESTIMATIONS = "runtime_estimations.json"
RUNTIME_TRACE = "chromium_trace_with_runtime.json"
PARITY_JSON = "collectives_parity.json"
PARITY_DESCRIPTION = "Difference of # of collectives in scheduler and inductor output code and missing wait collectives"


@dataclass
class LandingInfo:
    """What the landing page says about the input besides the summaries."""

    source: str  # the directory read
    notes: list[str] = field(default_factory=list)  # ignored files, duplicate ranks, …
    has_chromium_events: bool = False
    custom_header_html: str = ""  # trusted: given on the command line
    jobs: int = 1


@dataclass(frozen=True)
class LandingOptions:
    has_chromium_events: bool = False  # chromium_events.json (all ranks merged) was written beside the page
    custom_header_html: str = ""  # trusted: given on the command line
    jobs: int = 1


class LandingRenderer:
    """The landing page of a multi-rank report and its JSON files (render/contract.py)."""

    def __init__(self, results: MultiRankResults, info: LandingInfo):
        self.results, self.info = results, info

    @classmethod
    def from_results(cls, results: MultiRankResults, options: LandingOptions = LandingOptions()) -> LandingRenderer:
        info = LandingInfo(results.source, list(results.notes), options.has_chromium_events, options.custom_header_html,
                           options.jobs)
        return cls(results, info)

    def render(self) -> Iterator[tuple[str, bytes | str]]:
        return landing_files(self.results, self.info)


def landing_files(results: MultiRankResults, info: LandingInfo) -> Iterator[tuple[str, bytes | str]]:
    summaries, analysis = results.by_rank, results.analysis
    yield "index.html", landing_page(summaries, analysis, info)
    doc = multirank_json(summaries, analysis)
    doc["notes"] = info.notes
    yield SUMMARY_JSON, orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    schedules = results.collective_schedules
    if schedules:
        yield COLLECTIVE_SCHEDULES, orjson.dumps(schedules, option=orjson.OPT_INDENT_2)
    if analysis.runtime_estimations:
        yield RUNTIME_ESTIMATIONS, orjson.dumps(analysis.runtime_estimations, option=orjson.OPT_INDENT_2)
        yield RUNTIME_TRACE, orjson.dumps(analysis.runtime_trace, option=orjson.OPT_INDENT_2)


def rank_parity_json(parity: CollectivesParity) -> bytes:
    """rank_<N>/collectives_parity.json in tlparse's schema (graphs that disagree)."""
    graphs = [
        {"graph": r.dir_name, "compile_id": r.graph, "offset": r.offset, "missing_waits": r.missing_waits}
        for r in parity.rows
    ]
    return orjson.dumps({"description": PARITY_DESCRIPTION, "graphs": graphs}, option=orjson.OPT_INDENT_2)


# -- landing page ---------------------------------------------------------------------

CHART_WIDTH = 720
CHART_HEIGHT = 160
CHART_LEFT = 48  # room for the axis labels
CHART_BOTTOM = 22


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    rank: int
    seconds: float
    css: str  # "fast" | "slow" | ""


def skew_chart(analysis: MultiRankAnalysis) -> dict | None:
    """Geometry of the compile-time bar chart (one bar per rank), for an inline SVG."""
    ct = analysis.compile_time
    if not ct.ranks:
        return None
    top = max(ct.seconds) or 1.0
    n = len(ct.ranks)
    plot_w = CHART_WIDTH - CHART_LEFT - 8
    plot_h = CHART_HEIGHT - CHART_BOTTOM - 8
    step = plot_w / n
    gap = step * 0.15 if step > 4 else 0.0
    bars = []
    for i, (rank, secs) in enumerate(zip(ct.ranks, ct.seconds)):
        h = plot_h * secs / top
        css = "slow" if rank == ct.slowest_rank and ct.notable else "fast" if rank == ct.fastest_rank and ct.notable else ""
        bars.append(Bar(round(CHART_LEFT + i * step + gap / 2, 2), round(8 + plot_h - h, 2), round(max(step - gap, 0.5), 2), round(h, 2), rank, secs, css))
    label_every = max(1, n // 16)  # at most ~16 rank labels under the bars
    median_y = round(8 + plot_h - plot_h * ct.median_s / top, 2)
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "left": CHART_LEFT,
        "base_y": 8 + plot_h,
        "top_s": top,
        "bars": bars,
        "labels": [b for i, b in enumerate(bars) if i % label_every == 0],
        "median_y": median_y,
    }


def landing_page(summaries: list[RankSummary], analysis: MultiRankAnalysis, info: LandingInfo) -> str:
    by_kind = {d.kind: d for d in analysis.divergences}
    return ENV.get_template("multirank.html").render(
        root="",
        source_name=os.path.basename(os.path.normpath(info.source)) or info.source,
        rank=None,
        nav_failures=False,
        source=info.source,
        notes=info.notes,
        summaries=summaries,
        analysis=analysis,
        divergences=analysis.divergences,
        compile_id_divergence=by_kind.get(COMPILE_IDS),
        cache_divergence=by_kind.get(CACHE),
        collective_divergence=by_kind.get(COLLECTIVES),
        tensor_meta_divergence=by_kind.get(TENSOR_META),
        chart=skew_chart(analysis),
        rank_list=rank_list,
        has_chromium_events=info.has_chromium_events,
        has_schedules=any(s.collective_schedules for s in summaries),
        has_runtime_estimates=bool(analysis.runtime_estimations),
        runtime_files={"estimations": RUNTIME_ESTIMATIONS, "trace": RUNTIME_TRACE},
        **custom_header(info.custom_header_html),
        basename=os.path.basename,
        jobs=info.jobs,
    )

"""Work the source analysis (and its page) does once per report, not again: counted in calls and comparisons on real
logs, not timed."""

from __future__ import annotations

import re

from compilescope.analyses import dynamic_shapes, user_locations
from compilescope.analyses.analyze import analyze
from compilescope.analyses.dynamic_shapes import DynamicShapes
from compilescope.analyses.graph_breaks.reason_text import ARTIFACT as GRAPH_BREAK_ARTIFACT
from compilescope.analyses.sources import LineNotes, break_sites, captured
from compilescope.analyses.sources.analysis import note_sources
from compilescope.analyses.stack_values import StackValues
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, record_calls, report, torch213


class _CountedName(str):
    """A node name that counts its comparisons by value: a hash set's lookup of a new name makes none, a list scan one
    per name before it."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _CountedName.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_a_lines_graph_nodes_are_deduplicated_without_scanning_the_line(monkeypatch):
    trace = read_trace(str(torch213("module_mode_loops.log.gz")))
    sites_of = captured.fx_node_sites

    def counted_sites(text: str):
        sites = sites_of(text)
        for site in sites:
            site.nodes = [_CountedName(n) for n in site.nodes]
        return sites

    monkeypatch.setattr(captured, "fx_node_sites", counted_sites)
    _CountedName.compared = 0
    noted = note_sources(trace)
    per_line = [len(names) for lines in noted.notes.values() for n in lines.values() for names in n.graphs.values()]
    assert max(per_line) >= 50  # (a line with many nodes of one graph: what a scan was quadratic in)
    # A set's lookup compares by value only a name hashed alike: at most the names seen again.
    assert _CountedName.compared <= sum(per_line)


def test_a_lines_recompile_notes_are_worked_out_once_for_its_badge_and_its_notes(monkeypatch, tmp_path):
    asked: dict[int, int] = {}  # id of a line's LineNotes -> how often its recompile_notes were worked out
    cached = LineNotes.__dict__["recompile_notes"]  # (a cached_property: its function, counted)
    worked_out = cached.func

    def counted(notes: LineNotes):
        asked[id(notes)] = asked.get(id(notes), 0) + 1
        return worked_out(notes)

    monkeypatch.setattr(cached, "func", counted)
    report(torch213("module_state.log.gz"), tmp_path / "out", "-j", "1")
    recompiled = re.findall(r'<span class="b b-guard" title="[^"]*">recompiled ', _source_pages_text(tmp_path / "out"))
    assert recompiled  # (lines with a recompiled badge and recompile notes: what the check is about)
    assert asked and max(asked.values()) == 1


def _source_pages_text(out) -> str:
    return "".join(page.read_text(encoding="utf-8") for page in sorted((out / "sources").glob("*.html")))


def test_the_graph_breaks_tracebacks_are_read_once_a_report(monkeypatch):
    """The insights (the summary's eager lines) and the source analysis (the lines' notes) both read the breaks."""
    log = torch213("graph_breaks.log")
    with read_trace(str(log)) as trace:
        artifacts = [a for entry in trace.sorted_compiles() for a in entry.artifacts
                     if a.name == GRAPH_BREAK_ARTIFACT and a.payload is not None]
        read = record_calls(monkeypatch, break_sites, "traceback_frames", lambda text: text)
        results = analyze(trace)
    assert len(artifacts) >= 2 and results.sources.graph_breaks
    assert len(read) == len(artifacts)


def test_the_dynamic_shapes_and_stack_values_are_worked_out_once_a_report(monkeypatch):
    """The insights (the dynamic-shapes view, the recompiles) and the source analysis (the lines' symbols, the
    installed guards) read the same symbols and ___stack sources: one DynamicShapes and one StackValues a report."""
    made: list[str] = []
    for cls in (DynamicShapes, StackValues):
        init = cls.__init__

        def counted(self, *args, _init=init, _name=cls.__name__, **kwargs):
            made.append(_name)
            _init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counted)
    with read_trace(str(torch213("dynamic_shapes.log"))) as trace:
        results = analyze(trace)
    assert results.insights is not None and results.insights.dynamic_shapes.symbols  # (symbols to place)
    assert any(n.symbols for f in results.sources.files for n in f.notes.values())
    assert sorted(made) == ["DynamicShapes", "StackValues"]


def test_a_symbol_outside_any_user_stack_asks_for_the_export_call_once(monkeypatch):
    """A symbol, specialization or shape guard with an empty user stack is placed by the export call of its Python
    stack, where it runs through one: compiled_optimizer's (no export) each asked for it twice."""
    # (exported_user_frame asks user_locations' own export_call)
    asked = [record_calls(monkeypatch, module, "export_call", lambda stack: stack)
             for module in (dynamic_shapes, user_locations)]
    with read_trace(str(cuda211("compiled_optimizer.log.gz"))) as trace:
        dynamic_shapes.dynamic_shapes(trace)
    stacks = [id(stack) for calls in asked for stack in calls if stack]  # (each stack kept: ids stay distinct)
    assert len(stacks) >= 5 and len(set(stacks)) == len(stacks)

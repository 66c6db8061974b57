"""A post-grad graph's lines are cut once a report (line_mappings.GraphLines), not once by each of its readers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from compilescope.analyses.provenance import inferred_nodes, line_mappings
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.analyses.provenance.line_mappings import text_lines
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211


def test_each_graph_line_is_cut_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # node_lines, kernel_work and post_node_sources each cut every post-grad line (name_part) before: three times
    # a section's graph. Now each pre-grad graph is cut once a compile id, each post-grad graph once a section.
    calls = 0
    cut = line_mappings.name_part

    def counted(line: str) -> str:
        nonlocal calls
        calls += 1
        return cut(line)
    monkeypatch.setattr(line_mappings, "name_part", counted)
    monkeypatch.setattr(inferred_nodes, "name_part", counted, raising=False)
    with read_trace(cuda211("train_break_recompile.log.gz")) as trace:
        provenance = analyze_provenance(trace)
        graphs = 0
        for cp in provenance.compiles.values():
            assert len(cp.sections) > 1  # (no compile id's maps are worked out again from the last artifacts)
            graphs += len(text_lines(trace.payload_text(cp.sections[0].pre.payload)))
            graphs += sum(len(text_lines(trace.payload_text(s.post.payload))) for s in cp.sections)
    assert graphs > 100 and (calls, graphs) == (graphs, graphs)


def test_a_graph_whose_kernels_are_all_mapped_is_not_read_for_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    # infer_kernel_nodes read every section's FX '# File:' comments (post_node_sources) before, with no kernel to
    # place in six of train_break_recompile's eight: the node mappings place them all.
    read = 0
    sources = inferred_nodes.post_node_sources

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal read
        read += 1
        return sources(*args, **kwargs)
    monkeypatch.setattr(inferred_nodes, "post_node_sources", counted)
    with read_trace(cuda211("train_break_recompile.log.gz")) as trace:
        provenance = analyze_provenance(trace)
    sections = [s for cp in provenance.compiles.values() for s in cp.sections]
    inferred = [s for s in sections if s.inferred_code_to_post]
    assert (len(sections), len(inferred), read) == (8, 2, 2)


def test_a_patch_of_post_node_sources_made_before_kernel_notes_is_imported_ends_with_the_patch() -> None:
    """kernel_notes is imported when a provenance log is first analysed: where that was inside a test patching
    inferred_nodes.post_node_sources (as the one above), a name imported from it kept the test's wrapper for the rest
    of the run. In a fresh interpreter: run_facts' kernel work, read after the patch is undone, calls the module's own."""
    code = f"""if True:
        import pytest
        from compilescope.analyses.provenance import inferred_nodes
        from compilescope.analyses.run_facts.analysis import _kernel_work
        from compilescope.ingest.reader import read_trace
        patched = []
        sources = inferred_nodes.post_node_sources
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setattr(inferred_nodes, "post_node_sources", lambda *a, **k: patched.append(1) or sources(*a, **k))
            from compilescope.analyses.provenance import kernel_notes  # (its first import, inside the patch)
        patched.clear()
        with read_trace({str(cuda211("train_break_recompile.log.gz"))!r}) as trace:
            work = [w for entry in trace.compiles.values() for w in _kernel_work(trace, entry) or ()]
        print(len(work) > 0, len(patched))"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["True", "0"]

"""Several strict torch.export calls in one program (tests/data/torch213/README.md, export_strict_several): each
logs its compilation_metrics with no compile id, and each failure is told."""

from __future__ import annotations

import gzip
from functools import lru_cache

import orjson

from compilescope.analyses.analyze import analyze
from compilescope.analyses.results import Results, saved_classes
from compilescope.ingest.reader import read_trace
from compilescope.model.codec import decode, encode
from compilescope.model.trace import Compile

from ..conftest import report, torch213
from ..sources.test_source_page import plain

LOG = "export_strict_several.log.gz"
PROGRAM = "export_strict_several.py"


@lru_cache(maxsize=None)
def results() -> Results:
    with read_trace(str(torch213(LOG))) as trace:
        return analyze(trace)


def test_each_id_less_compilation_metrics_is_kept_in_log_order():
    # Three compilation_metrics, each "compile_id": null with a Python stack through main's torch.export.export at
    # lines 37 (Gate), 42 (Scale), 47 (Take): fail_type "Unsupported" (Data-dependent branching), null, "UserError".
    trace = results().trace
    outside = trace.compiles[None]
    records = [*outside.earlier_metrics, outside]
    assert [r.metrics.get("fail_type") for r in records] == ["Unsupported", None, "UserError"]
    calls = [next(f.line for f in r.metrics_stack if f.name == "main") for r in records]
    assert calls == [37, 42, 47]
    # Each is its own compilation_metrics artifact; all three stay on the entry outside any compile id (tlparse's
    # -_-_-_- directory), in log order.
    metrics_artifacts = [a for a in outside.artifacts if a.kind == "compilation_metrics"]
    assert len(metrics_artifacts) == 3
    assert [r.artifacts for r in outside.earlier_metrics] == [[a] for a in metrics_artifacts[:2]]
    assert [c is outside or c in outside.earlier_metrics for c in trace.metrics_compiles()].count(True) == 3


def test_both_strict_export_failures_are_told_each_at_its_line_and_call():
    # Gate's `if x.sum() > 0:` (line 16) and Take's `if n > x.shape[0]:` (line 29), from the calls at lines 37 and 47.
    errors = results().insights.errors.errors
    assert [(e.compile_id, e.exception, e.location.line, e.export_call.line) for e in errors] == [
        ("[-/-]", "Unsupported", 16, 37), ("[-/-]", "UserError", 29, 47)]
    assert errors[0].message == "Data-dependent branching"
    assert len({e.metrics_number for e in errors}) == 2
    rows = [(str(r.compile_id), r.kind) for r in results().failures]
    assert rows == [("None", "Unsupported"), ("None", "UserError")]
    assert [f.title for f in results().insights.findings if f.severity == "error"] == [
        f"[-/-] failed in strict torch.export (Dynamo) at {PROGRAM}:16",
        f"[-/-] failed in strict torch.export (Dynamo) at {PROGRAM}:29"]


def test_the_earlier_records_survive_a_save_and_load():
    outside = results().trace.compiles[None]
    back = decode(orjson.loads(orjson.dumps(encode(outside))), saved_classes())
    assert [c.metrics.get("fail_type") for c in back.earlier_metrics] == ["Unsupported", None]
    assert [c.metrics.get("fail_type") for c in Compile.from_json(outside.to_json()).earlier_metrics] == [
        "Unsupported", None]


def raw_envelopes() -> list[tuple[int, dict]]:
    """(line number, envelope) of each record of the raw log, payload lines skipped."""
    found = []
    with gzip.open(torch213(LOG), "rt") as f:
        for n, line in enumerate(f, 1):
            if not line.startswith("\t"):
                found.append((n, orjson.loads(line[line.index("] ") + 2:])))
    return found


def test_the_calls_sharing_0_0_are_told_apart_by_their_export_call(tmp_path):
    """Each strict export's Dynamo trace logs under [0/0] (frame ids count from 0 again): the records between one
    call's id-less compilation_metrics and the next are the next call's. The raw log: metrics at three lines, [0/0]
    records before each, and the one dynamo_output_graph between the first and second metrics (Scale's, line 42)."""
    envelopes = raw_envelopes()
    metrics_lines = [n for n, e in envelopes if "compilation_metrics" in e]
    graph_lines = [n for n, e in envelopes if "dynamo_output_graph" in e]
    zero = [n for n, e in envelopes if (e.get("frame_id"), e.get("frame_compile_id")) == (0, 0)]
    assert len(metrics_lines) == 3 and len(graph_lines) == 1 and metrics_lines[0] < graph_lines[0] < metrics_lines[1]
    assert all(any(a < n <= b for n in zero) for a, b in zip([0, *metrics_lines], metrics_lines))
    shared = results().export.shared
    assert list(shared) == ["[0/0]"]
    traces = shared["[0/0]"]
    assert [(t.call.line, t.metrics_line, t.fail_type) for t in traces] == [
        (37, metrics_lines[0], "Unsupported"), (42, metrics_lines[1], None), (47, metrics_lines[2], "UserError")]
    assert [[a.lineno for a in t.artifacts] for t in traces] == [[], graph_lines, []]
    # The timeline's three rows are each named by their call, not three alike "strict torch.export (Dynamo)".
    labels = [r.label for r in results().insights.compile_time.timeline]
    assert sorted(labels) == [f"strict torch.export (Dynamo), the call at {PROGRAM}:{n}" for n in (37, 42, 47)]
    # [0/0]'s page says whose records it holds, by call, in the order they ran.
    out = tmp_path / "out"
    report(torch213(LOG), out)
    page = (out / "-_0_0_0" / "index.html").read_text()
    said = plain(page[page.index('<div id="strict-export-traces">'):page.index("</div>", page.index("strict-export-traces"))])
    assert "[0/0] holds the records of 3 strict torch.export calls" in said
    assert (f"{PROGRAM}:37 (failed: Unsupported){PROGRAM}:42 (traced): dynamo_output_graph_2.txt"
            f"{PROGRAM}:47 (failed: UserError)") in said
    # tlparse 0.4.3's file names are kept: one -_0_0_0 directory, the graph in it.
    assert (out / "-_0_0_0" / "dynamo_output_graph_2.txt").is_file()


def test_one_strict_export_shares_nothing():
    # export.log: one strict export (its Dynamo records under 0/0): nothing to tell apart, and its row keeps its label.
    with read_trace(str(torch213("export.log"))) as trace:
        found = analyze(trace)
    assert found.export.shared == {}
    assert [r.label for r in found.insights.compile_time.timeline if r.compile_id is None] == ["strict torch.export (Dynamo)"]

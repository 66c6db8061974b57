"""raw.jsonl: a long line (a real compilation_metrics record is 0.84 MB) is not parsed and written again whole
(orjson needs ~13x a line as scratch for that): the reader notes where each top-level value of such a line is
(Trace.raw_spans), the renderer reads only the fields it changes and copies the rest, and the file is the same
bytes as when every line is parsed."""

from __future__ import annotations

import orjson
import pytest

from compilescope.ingest.reader import read_trace
from compilescope.model import trace as trace_model
from compilescope.model.codec import classes_of, decode, encode
from compilescope.render import json as json_renderer
from compilescope.render.options import ReportOptions

from .conftest import GPU_TRACES, shared, torch213
from .tracelog import cid, envelope


def raw_file(trace) -> bytes:
    return b"".join(json_renderer.raw_jsonl(trace, ReportOptions()))


def parsed_whole(trace) -> bytes:
    """raw.jsonl with every line parsed (as for a trace with no spans, e.g. a loaded analysis)."""
    spans, trace.raw_spans = trace.raw_spans, []
    try:
        return raw_file(trace)
    finally:
        trace.raw_spans = spans


@pytest.mark.parametrize("name", ["training.log", "provenance.log", "export_draft.log", "recompiles.log"])
def test_every_line_written_from_its_spans_gives_the_same_file(name, monkeypatch):
    monkeypatch.setattr(trace_model, "LONG_RAW_LINE", 0)
    with read_trace(str(torch213(name))) as trace:
        lines = sum(1 for _ in trace.raw.lines())
        assert len(trace.raw_spans) == lines > 0 and None not in trace.raw_spans  # every line has its spans
        assert raw_file(trace) == parsed_whole(trace)


def test_the_same_file_on_a_real_cuda_log():
    log = shared(f"{GPU_TRACES.name}/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    with read_trace(str(log)) as trace:
        long_lines = [line for line in trace.raw.lines() if len(line) >= trace_model.LONG_RAW_LINE]
        assert len(long_lines) == len(trace.raw_spans) == 3 and None not in trace.raw_spans
        assert raw_file(trace) == parsed_whole(trace)


def test_keys_named_like_ours_inside_the_metadata_are_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_model, "LONG_RAW_LINE", 0)
    tricky = {"artifact_number": 7, "timestamp": "x", "_payload_key": "k", "has_payload": "h", "big": "a\"},{" * 30}
    log = tmp_path / "t.log"
    log.write_text(
        envelope({"dynamo_output_graph": tricky, **cid(0)}, "graph():\n  x")
        + envelope({"brand_new_kind": {"nested": [tricky, {"payload_filename": 1}]}, "\u00e9": [1.5e-7, None], **cid(0)},
                   "new payload")
        + envelope({"compilation_metrics": {"inductor_config": "\u00e9\\\"\n" * 50, "x": 1.5e-7}, **cid(0)})
        + envelope({"two": {"a": 1}, "kinds": {"b": "\ud7ff"}, "has_payload": [1, {"x": 2}]})
    )
    with read_trace(str(log)) as trace:
        assert len(trace.raw_spans) == 4 and None not in trace.raw_spans
        whole = raw_file(trace)
        assert whole == parsed_whole(trace)
    lines = [orjson.loads(line) for line in whole.splitlines()[1:]]
    assert lines[0]["dynamo_output_graph"] == tricky and lines[0]["payload_filename"].endswith(".txt")
    assert lines[1]["brand_new_kind"]["nested"][0] == tricky and lines[1]["payload_filename"].startswith("payloads/")


def test_a_long_line_is_never_parsed_whole_by_orjson(tmp_path, monkeypatch):
    log = tmp_path / "t.log"
    log.write_text(envelope({"compilation_metrics": {"inductor_provenance": ["x" * 300_000]}, **cid(0)}))
    with read_trace(str(log)) as trace:
        assert len(trace.raw_spans) == 1 and trace.raw_spans[0] is not None
        parsed: list[int] = []
        loads = orjson.loads

        def counted(data):
            parsed.append(len(data))
            return loads(data)

        monkeypatch.setattr(json_renderer.orjson, "loads", counted)
        data = raw_file(trace)
    assert len(data) > 300_000 and max(parsed, default=0) < 1000


def test_spans_are_not_saved_and_a_loaded_trace_writes_the_same_file(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(envelope({"compilation_metrics": {"inductor_provenance": ["x" * 300_000]}, **cid(0)}))
    with read_trace(str(log)) as trace:
        saved = orjson.dumps(encode(trace))
        assert b"raw_spans" not in saved
        loaded = decode(orjson.loads(saved), classes_of(["compilescope.model.trace", "compilescope.model.stats",
                                                          "compilescope.model.ids", "compilescope.model.payloads"]))
        assert loaded.raw_spans == [] and loaded == trace
        assert raw_file(loaded) == raw_file(trace)
        loaded.close()

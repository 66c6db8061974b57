"""raw.jsonl: a long line (a real compilation_metrics record is 0.84 MB) is not parsed and written again whole
(orjson needs ~13x a line as scratch for that): only the fields raw.jsonl changes are read, the rest is
copied as it is, and the file is the same bytes as when every line is parsed."""

from __future__ import annotations

import orjson
import pytest

from compilescope.ingest.reader import read_trace
from compilescope.render import json as json_renderer
from compilescope.render.options import ReportOptions

from .conftest import GPU_TRACES, shared, torch213
from .tracelog import cid, envelope


def raw_file(trace, monkeypatch, big_line: int) -> bytes:
    monkeypatch.setattr(json_renderer, "BIG_LINE", big_line)
    return b"".join(json_renderer.raw_jsonl(trace, ReportOptions()))


@pytest.mark.parametrize("name", ["training.log", "provenance.log", "export_draft.log", "recompiles.log"])
def test_every_line_read_as_a_long_one_gives_the_same_file(name, monkeypatch):
    with read_trace(str(torch213(name))) as trace:
        assert raw_file(trace, monkeypatch, 0) == raw_file(trace, monkeypatch, 1 << 62)


def test_the_same_file_on_a_real_cuda_log(monkeypatch):
    log = shared(f"{GPU_TRACES.name}/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    with read_trace(str(log)) as trace:
        longest = max(len(line) for line in trace.raw.lines())
        assert longest > json_renderer.BIG_LINE  # the log has such lines
        assert raw_file(trace, monkeypatch, json_renderer.BIG_LINE) == raw_file(trace, monkeypatch, 1 << 62)


def test_keys_named_like_ours_inside_the_metadata_are_left_alone(tmp_path, monkeypatch):
    tricky = {"artifact_number": 7, "timestamp": "x", "_payload_key": "k", "has_payload": "h", "big": "a" * 300}
    log = tmp_path / "t.log"
    log.write_text(
        envelope({"dynamo_output_graph": tricky, **cid(0)}, "graph():\n  x")
        + envelope({"brand_new_kind": {"nested": [tricky, {"payload_filename": 1}]}, **cid(0)}, "new payload")
        + envelope({"compilation_metrics": {"inductor_config": "\u00e9\\\"\n" * 50, "x": 1.5e-7}, **cid(0)})
    )
    with read_trace(str(log)) as trace:
        whole = raw_file(trace, monkeypatch, 1 << 62)
        assert raw_file(trace, monkeypatch, 0) == whole
    lines = [orjson.loads(line) for line in whole.splitlines()[1:]]
    assert lines[0]["dynamo_output_graph"] == tricky and lines[0]["payload_filename"].endswith(".txt")
    assert lines[1]["brand_new_kind"]["nested"][0] == tricky and lines[1]["payload_filename"].startswith("payloads/")


def test_a_long_line_is_never_parsed_whole_by_orjson(tmp_path, monkeypatch):
    log = tmp_path / "t.log"
    log.write_text(envelope({"compilation_metrics": {"inductor_provenance": ["x" * 300_000]}, **cid(0)}))
    with read_trace(str(log)) as trace:
        parsed: list[int] = []
        loads = orjson.loads

        def counted(data):
            parsed.append(len(data))
            return loads(data)

        monkeypatch.setattr(json_renderer.orjson, "loads", counted)
        data = raw_file(trace, monkeypatch, json_renderer.BIG_LINE)
    assert len(data) > 300_000 and max(parsed, default=0) < json_renderer.BIG_LINE

"""compile_directory.json grows with the log (an entry per artifact): it is written an artifact at a time,
as exactly the bytes orjson writes for the whole document (tlparse's format: sorted keys, 2-space indent)."""

from __future__ import annotations

import orjson
import pytest

from compilescope.analyses.analyze import analyze
from compilescope.ingest.reader import read_trace
from compilescope.render import json as json_renderer
from compilescope.render.options import ReportOptions
from compilescope.render.report import report_files

from .conftest import record_calls, torch213
from .tracelog import cid, envelope

TLPARSE_FORMAT = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def directory_file(trace) -> object:
    files = dict(report_files(trace, analyze(trace), ReportOptions()))
    return files["compile_directory.json"]


def whole(content) -> bytes:
    return content if isinstance(content, bytes) else b"".join(content)


@pytest.mark.parametrize("name", ["training.log", "recompiles.log", "provenance.log", "graph_breaks.log"])
def test_the_streamed_file_is_the_document_as_orjson_writes_it(name):
    with read_trace(str(torch213(name))) as trace:
        data = whole(directory_file(trace))
        doc = orjson.loads(data)
        assert data == orjson.dumps(doc, option=TLPARSE_FORMAT)
        # Every compile id, in tlparse's sorted order, with its artifacts in log order.
        assert list(doc) == sorted(c.key for c in trace.compiles.values())
        for entry in trace.compiles.values():
            assert [a["number"] for a in doc[entry.key]["artifacts"]] == [
                a.number + 1 if a.readable else a.number for a in entry.artifacts]


def test_compiles_named_alike_and_empty_entries(tmp_path):
    # An envelope with null id fields is a compile id that prints as "[-/-]", as events outside any compile
    # do: the later one's artifacts are listed, as the whole dict kept them. A compile id with no artifact
    # is an empty list.
    log = tmp_path / "t.log"
    log.write_text(
        envelope({"artifact": {"name": "outside", "encoding": "string"}}, "text")
        + envelope({"artifact": {"name": "nulls", "encoding": "string"}, "frame_id": None}, "more")
        + envelope({"describe_tensor": {"id": 0}, **cid(1)})
        + envelope({"dynamo_output_graph": {}, **cid(0)}, "graph():\n  x")
    )
    with read_trace(str(log)) as trace:
        data = whole(directory_file(trace))
    doc = orjson.loads(data)
    assert data == orjson.dumps(doc, option=TLPARSE_FORMAT)
    assert list(doc) == ["[-/-]", "[0/0]", "[1/0]"]
    assert [a["name"] for a in doc["[-/-]"]["artifacts"]] == ["nulls_1.txt"]
    assert doc["[1/0]"] == {"artifacts": []}


def test_an_empty_log_has_an_empty_directory(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(envelope({"str": ["/home/u/train.py", 0]}))
    with read_trace(str(log)) as trace:
        assert whole(directory_file(trace)) == orjson.dumps({}, option=TLPARSE_FORMAT) == b"{}"


def test_it_is_built_while_it_is_written(monkeypatch):
    """Fails if compile_directory.json is built whole (as one dict or one bytes) before it is written."""
    made = record_calls(monkeypatch, json_renderer, "_directory_artifact", lambda artifact, options: artifact.name)
    monkeypatch.setattr(json_renderer, "DIRECTORY_CHUNK", 512)
    monkeypatch.setattr(json_renderer, "DIRECTORY_BATCH", 2)
    with read_trace(str(torch213("provenance.log"))) as trace:
        content = directory_file(trace)
        total = sum(len(c.artifacts) for c in trace.compiles.values())
        assert not isinstance(content, (str, bytes)) and made == []  # nothing of it made before it is written
        progress, sizes = [], []
        chunks = []
        for chunk in content:
            progress.append(len(made))
            sizes.append(len(chunk))
            chunks.append(chunk)
    data = b"".join(chunks)  # (batches of 2 artifacts joined: still the whole document's bytes)
    assert data == orjson.dumps(orjson.loads(data), option=TLPARSE_FORMAT)
    assert total > 20 and len(made) == total
    assert progress[0] < total / 4 and len(set(progress)) > 4, progress  # chunks come out as artifacts are made
    assert max(sizes) < sum(sizes) / 4, sizes

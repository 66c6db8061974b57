"""Event kinds beyond the common ones, on synthetic logs in torch's format (and tlparse where it knows them)."""

import json
import subprocess

from compilescope.analyses.analyze import analyze
from compilescope.analyses.results import Results
from compilescope.ingest.reader import read_trace

from .conftest import peer, report, tlparse_binary
from .tracelog import cid, envelope


def dump_file_log(path):
    path.write_text(
        envelope({"str": ["/home/u/train.py", 0]})
        + envelope({"str": ["<eval_with_key>.3", 1]})
        + envelope({"dynamo_start": {"stack": [{"filename": 0, "line": 10, "name": "main"},
                                              {"filename": 1, "line": 2, "name": "forward"}]}, **cid(0)})
        + envelope({"dump_file": {"name": "<eval_with_key>.3"}, **cid(0)}, "def forward(x):\n    return x + 1")
        + envelope({"dynamo_output_graph": {}, **cid(0), "subgraph_name": "fwd_body_0"}, "graph():\n  x")
        + envelope({"compilation_metrics": {"graph_op_count": 1, "restart_reasons": []}, **cid(0)})
        + envelope({"aot_saved_tensors_hooks_pack my_hook": {}, **cid(0)}, "graph(): pack")
        + envelope({"brand_new_kind": {"x": 1}, **cid(0)}, "new payload")
        + envelope({"artifact": {"name": "outside", "encoding": "string"},
                    "stack": [{"filename": 0, "line": 99, "name": "export_it"}]}, "text")
    )
    return path


def test_dump_file_is_numbered_and_linked_like_tlparse(tmp_path):
    log = dump_file_log(tmp_path / "t.log")
    ours = report(log, tmp_path / "cs")
    subprocess.run([tlparse_binary(), str(log), "-o", str(tmp_path / "tl"), "--no-browser"], check=True,
                   capture_output=True)
    theirs = json.loads((tmp_path / "tl" / "compile_directory.json").read_text())
    ours_known = {k: [a for a in v["artifacts"] if "pack" not in a["name"]] for k, v in ours.items()}
    assert [a["url"] for a in ours_known["[0/0]"]] == [a["url"] for a in theirs["[0/0]"]["artifacts"]]
    assert "dump_file/eval_with_key_3.html" in [a["url"] for a in ours["[0/0]"]["artifacts"]]
    page = (tmp_path / "cs" / "dump_file" / "eval_with_key_3.html").read_text()
    assert 'id="L2"' in page and "return" in page
    # The stack frame in <eval_with_key>.3 links to its line in the dumped source.
    index = (tmp_path / "cs" / "index.html").read_text()
    assert 'href="dump_file/eval_with_key_3.html#L2"' in index


def test_context_keys_prefix_kinds_and_unknown_kinds(tmp_path):
    log = dump_file_log(tmp_path / "t.log")
    with read_trace(str(log)) as trace:
        compile0 = next(c for c in trace.compiles.values() if c.compile_id and c.compile_id.frame_id == 0)
        assert compile0.subgraphs == ["fwd_body_0"]
        assert any(a.kind.startswith("aot_saved_tensors_hooks_pack") for a in compile0.artifacts)
        assert trace.stats.unknown_kinds == {"brand_new_kind": 1}
        assert [u.kind for u in trace.unknown_events] == ["brand_new_kind"]
        assert [[f.name for f in s] for s in trace.unknown_stacks] == [["export_it"]]
        results = analyze(trace)
        assert [[f.name for f in group.user] for group in results.outside_stacks] == [["export_it"]]
    report(log, tmp_path / "cs")
    index = (tmp_path / "cs" / "index.html").read_text()
    assert "brand_new_kind" in index and "Stacks outside any compilation" in index
    # The unknown kind's payload is kept where raw.jsonl says it is.
    raw = [json.loads(line) for line in (tmp_path / "cs" / "raw.jsonl").read_text().splitlines()[1:]]
    unknown = next(r for r in raw if "brand_new_kind" in r)
    assert (tmp_path / "cs" / unknown["payload_filename"]).read_text() == "new payload"


def test_restarted_attempt_is_restarted_not_missing_metrics():
    # The raw log: [0/0] and [1/0] log dynamo_start and no compilation_metrics; [0/0_1] and [1/0_1] log the metrics,
    # restart_reasons set; [2/0] logs both, no restart_reasons. The attempts were restarted, their retries compiled.
    with read_trace(str(peer("comp_metrics.log"))) as trace:
        statuses = {str(k): v for k, v in analyze(trace).statuses.items()}
    assert statuses == {"[0/0]": "restarted", "[0/0_1]": "break", "[1/0]": "restarted", "[1/0_1]": "break", "[2/0]": "ok"}


def test_config_dumps_repeated_by_each_compile_are_kept_once(tmp_path):
    # Every compilation_metrics repeats the run's configs (inductor_config is ~22 KB on real logs): the model
    # keeps one object while the value repeats, so the loaded trace does not grow by a config per compile.
    config = json.dumps({f"option_{i}": i for i in range(100)})
    log = tmp_path / "t.log"
    log.write_text("".join(
        envelope({"compilation_metrics": {"inductor_config": config, "dynamo_config": config + " ",
                                          "graph_node_shapes": f"short {frame}"}, **cid(frame)})
        + envelope({"compilation_metrics_runtime": {"inductor_config": config}, **cid(frame)})
        for frame in range(3)))
    with read_trace(str(log)) as trace:
        metrics = [c.metrics for c in trace.compiles.values()]
        runtime = [r for c in trace.compiles.values() for r in c.runtime_metrics]
        assert len(metrics) == 3 and len(runtime) == 3
        configs = {id(m["inductor_config"]) for m in metrics} | {id(r["inductor_config"]) for r in runtime}
        assert len(configs) == 1 and metrics[0]["inductor_config"] == config  # one object, the logged text
        assert len({id(m["dynamo_config"]) for m in metrics}) == 1 and metrics[1]["dynamo_config"] == config + " "
        assert [m["graph_node_shapes"] for m in metrics] == ["short 0", "short 1", "short 2"]


def test_metrics_records_share_their_field_names_and_read_as_logged(tmp_path):
    # The model keeps every metrics record until the report is written: each is its values as a tuple, and the
    # field names are one dict for all records logged with the same fields. They still read as the logged dicts.
    log = tmp_path / "t.log"
    log.write_text("".join(
        envelope({"compilation_metrics": {"co_name": f"f{frame}", "fail_type": None, "guard_count": frame,
                                          "cache_size": frame + 1}, **cid(frame)})
        + envelope({"compilation_metrics_runtime": {"duration_us": frame}, **cid(frame)})
        for frame in range(3)))
    with read_trace(str(log)) as trace:
        metrics = [c.metrics for c in trace.compiles.values()]
        assert [dict(m) for m in metrics] == [{"co_name": f"f{i}", "fail_type": None, "guard_count": i, "cache_size": i + 1}
                                              for i in range(3)]
        assert metrics[1] == {"co_name": "f1", "fail_type": None, "guard_count": 1, "cache_size": 2}
        assert metrics[1].get("nope", 7) == 7 and "cache_size" in metrics[1] and "nope" not in metrics[1]
        assert list(metrics[2].items()) == [("co_name", "f2"), ("fail_type", None), ("guard_count", 2), ("cache_size", 3)]
        assert len({id(m._places) for m in metrics}) == 1
        runtime = [r for c in trace.compiles.values() for r in c.runtime_metrics]
        assert runtime == [{"kind": "compilation_metrics_runtime", "duration_us": i} for i in range(3)]
        # Saved and loaded (--save / --load): equal.
        results = analyze(trace)
        # A compile page's metric groups read their values from the record; the names are one tuple for the log.
        groups = [s.metrics.groups for s in results.compiles.values()]
        assert groups == [[("Counts and sizes", [("cache_size", i + 1)])] for i in range(3)]
        assert groups[0][0][1]._names is groups[2][0][1]._names
        loaded = Results.from_json(json.loads(json.dumps(results.to_json())))
        assert loaded == results
        assert [c.metrics for c in loaded.trace.compiles.values()] == metrics


def test_guard_stacks_share_their_frames_and_keep_them_as_logged(tmp_path):
    # Every guard's stacks are kept and repeat the same few frames: one dict per distinct frame. A frame
    # whose line is logged as `true` stays distinct from line 1 (equal as Python values, not as JSON).
    stack = [{"filename": 0, "line": 10, "name": "main"}, {"filename": 0, "line": 12, "name": "f", "loc": "y = x * 2"}]
    log = tmp_path / "t.log"
    log.write_text(
        envelope({"str": ["/home/u/train.py", 0]})
        + "".join(envelope({"guard_added_fast": {"expr": f"s{i} > 1", "stack": stack, "user_stack": stack}, **cid(0)})
                  for i in range(3))
        + envelope({"guard_added_fast": {"expr": "odd", "stack": [{"filename": 0, "line": True, "name": "main"},
                                                                  {"filename": 0, "line": 1, "name": "main"}]}, **cid(0)}))
    with read_trace(str(log)) as trace:
        guards = trace.compiles[next(iter(trace.compiles))].guards_added
    assert guards[0]["stack"] == [{"filename": "/home/u/train.py", "line": 10, "name": "main"},
                                  {"filename": "/home/u/train.py", "line": 12, "name": "f", "loc": "y = x * 2"}]
    frames = [f for g in guards[:3] for key in ("stack", "user_stack") for f in g[key]]
    assert len(frames) == 12 and len({id(f) for f in frames}) == 2
    odd = guards[3]["stack"]
    assert [f["line"] for f in odd] == [True, 1] and odd[0]["line"] is True and odd[1] is not odd[0]

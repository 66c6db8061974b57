"""The facts EXPECTATIONS.md lists for the single-rank peer logs, checked on our report."""

import json

import pytest

from compilescope.ingest.reader import read_trace

from .conftest import PEER_SINGLE_LOGS, peer, report, run_cli
from .htmltable import table_rows


@pytest.mark.parametrize("name", PEER_SINGLE_LOGS)
def test_every_single_log_reports(name, tmp_path):
    directory = report(peer(name), tmp_path / "out")
    assert directory, "compile_directory.json is empty"
    index = (tmp_path / "out" / "index.html").read_text()
    assert "Parse statistics" in index
    # Every artifact the directory names exists on disk (links excepted).
    for entry in directory.values():
        for artifact in entry["artifacts"]:
            if not artifact["url"].startswith("http"):
                assert (tmp_path / "out" / artifact["url"]).is_file(), artifact["url"]
            if artifact["readable_url"]:
                assert (tmp_path / "out" / artifact["readable_url"]).is_file()


def test_simple_log_outputs(tmp_path):
    directory = report(peer("simple.log"), tmp_path / "out", "--strict")
    names = [a["name"] for a in directory["[0/0]"]["artifacts"]]
    for stem in ("dynamo_output_graph", "aot_inference_graph", "inductor_post_grad_graph",
                 "inductor_output_code", "compilation_metrics", "fx_graph_cache_miss"):
        assert any(n.startswith(stem) for n in names), stem
    raw = (tmp_path / "out" / "raw.jsonl").read_text().splitlines()
    # The string table line plus one line per envelope other than str and chromium_event.
    assert len(raw) == 15
    assert "string_table" in json.loads(raw[0])


def test_comp_metrics_attempts_and_unclaimed_payloads(tmp_path):
    directory = report(peer("comp_metrics.log"), tmp_path / "out", "--strict")
    with_outputs = [k for k, v in directory.items() if v["artifacts"]]
    assert with_outputs == ["[0/0_1]", "[1/0_1]", "[2/0]"]
    # The first attempts (restarted) have a stack but no outputs; tlparse lists them too.
    assert list(directory) == ["[0/0]", "[0/0_1]", "[1/0]", "[1/0_1]", "[2/0]"]
    assert len((tmp_path / "out" / "raw.jsonl").read_text().splitlines()) == 13
    # The three dynamo_guards payloads are shown as tables, not verbatim: kept by md5.
    assert len(list((tmp_path / "out" / "payloads").iterdir())) == 3


def test_comp_failure_is_listed(tmp_path):
    report(peer("comp_failure.log"), tmp_path / "out", "--strict")
    rows = table_rows((tmp_path / "out" / "failures_and_restarts.html").read_text())
    failures = [r for r in rows[1:] if r[1] != "RestartAnalysis"]
    # fail_user_frame_* are null in this log: no failure location, and the compiled frame (the last frame of its
    # stack) is named as that, not as where it failed.
    assert failures == [["[0/0]", "BackendCompilerFailed", "backend='broken_backend' raised: RuntimeError: broken backend",
                         "N/A: torch logged no failure location "
                         "compiled frame: /data/users/xmfan/a/pytorch/test/dynamo/test_misc.py:10755"]]


def test_artifacts_and_cache_badges(tmp_path):
    directory = report(peer("artifacts.log"), tmp_path / "a", "--strict")
    assert any(a["name"].startswith("fx_graph_cache_hash") for a in directory["[0/0]"]["artifacts"])
    directory = report(peer("cache_hit_miss.log"), tmp_path / "b", "--strict")
    suffixes = {a["name"].rsplit("_", 1)[0]: a["suffix"] for e in directory.values() for a in e["artifacts"]}
    assert suffixes["fx_graph_cache_miss"] == "\u274c"
    assert suffixes["fx_graph_cache_hit"] == "\u2705"


def test_chromium_events_export(tmp_path):
    report(peer("chromium_events.log"), tmp_path / "out", "--strict")
    events = json.loads((tmp_path / "out" / "chromium_events.json").read_text())
    assert isinstance(events, list) and events
    assert all({"name", "ph", "ts"} <= set(e) for e in events)


def test_corrupted_md5_non_strict_renders_everything(tmp_path):
    good = report(peer("simple.log"), tmp_path / "good")
    bad = report(peer("simple_corrupted_json.log"), tmp_path / "bad")
    assert [a["name"] for a in bad["[0/0]"]["artifacts"]] == [a["name"] for a in good["[0/0]"]["artifacts"]]
    index = (tmp_path / "bad" / "index.html").read_text()
    assert "md5_mismatch" in index


def test_strict_fails_exactly_on_the_bad_line(tmp_path, capsys):
    rc = run_cli(peer("simple_corrupted_json.log"), "-o", tmp_path / "out", "--no-browser", "--strict")
    assert rc == 1
    err = capsys.readouterr().err
    trace = read_trace(str(peer("simple_corrupted_json.log")))
    (problem,) = trace.stats.strict_failures()
    assert problem.category == "md5_mismatch"
    assert f"line {problem.lineno}: md5_mismatch" in err
    # The same log without corruption passes strict mode.
    assert run_cli(peer("simple.log"), "-o", tmp_path / "ok", "--no-browser", "--strict") == 0


def test_counts_add_up(tmp_path):
    for name in PEER_SINGLE_LOGS:
        trace = read_trace(str(peer(name)))
        stats = trace.stats
        assert stats.total == sum(stats.outcomes.values())
        assert stats.outcomes["ok"] + stats.outcomes["md5_mismatch"] + stats.outcomes["unknown_kind"] == sum(stats.kinds.values())
        trace.close()


def test_demo_writes_a_report_per_bundled_trace(tmp_path):
    from compilescope.demo import SCENARIOS

    assert run_cli("demo", "--bundled", "-o", tmp_path / "demo", "--no-browser") == 0
    index = (tmp_path / "demo" / "index.html").read_text()
    for name, _ in SCENARIOS:
        assert f'href="{name}/index.html"' in index
        assert json.loads((tmp_path / "demo" / name / "compile_directory.json").read_text())


def test_an_empty_guard_list_points_to_the_guard_tree_and_does_not_say_zero_guards(tmp_path):
    # artifacts.log's dynamo_guards payload (log line 34) is an empty list, and the dynamo_cpp_guards_str right after
    # it (line 38) holds [0/0]'s guard tree: TENSOR_MATCH on L['x'] and L['y'], and more. The page said "0 guards:
    # the conditions under which this compiled code is reused".
    directory = report(peer("artifacts.log"), tmp_path / "a")
    names = [a["name"] for a in directory["[0/0]"]["artifacts"]]
    [guards] = [n for n in names if n.startswith("dynamo_guards")]
    [tree] = [n for n in names if n.startswith("dynamo_cpp_guards_str")]
    page = (tmp_path / "a" / "-_0_0_0" / guards).read_text()
    assert "0 guards" not in page
    assert "torch logged this list of guards empty" in page and f'<a href="{tree}">' in page
    assert "TENSOR_MATCH: check_tensor(L['x']" in (tmp_path / "a" / "-_0_0_0" / tree).read_text()


def test_a_compilation_logged_again_is_timed_once(tmp_path, capsys):
    """multi_rank_runtime's rank 0 logs [0/1] three times: its records (76 chromium events, the 12 of the
    benchmarking after it, its compilation_metrics) come again word for word, glog times included, under
    frame_compile_id 2 and 3; only the envelope's compile id changes. Every event's payload still says "0/1", at the
    same ts. Worked out by hand from the log, each outermost B/E pair once:
      [0/0]: dynamo 1754336052816497.5 -> 1754336055529697.5 (2.7132 s), then CachingAutotuner.benchmark_all_configs
             1754336055771875.5 -> ...55819584.5 (0.047709 s) and 1754336056280687.0 -> ...56310013.0 (0.029326 s):
             2.790235 s;
      [0/1]: dynamo 1754336056314114.5 -> 1754336057635532.5 (1.321418 s), benchmark_all_configs
             1754336057637016.0 -> ...57666930.5 (0.0299145 s) and 1754336057667961.5 -> ...57689658.0 (0.0216965 s):
             1.373029 s.
    [0/2] and [0/3] have no events of their own, and their compilation_metrics say compile_id "0/1": they add nothing.
    The log took 4.163264 s to compile; counting every record made it 9.54 s ([0/1] three times, then [0/2] and [0/3]
    again from their metrics)."""
    log = peer("multi_rank_runtime/dedicated_log_torch_trace_rank_0.log")
    assert run_cli("summary", "--json", log) == 0
    times = json.loads(capsys.readouterr().out)["compile_time"]
    assert {c["compile_id"]: c["total_s"] for c in times["compiles"]} == {"[0/0]": 2.790235, "[0/1]": 1.373029}
    assert times["total_s"] == pytest.approx(4.163264, abs=1e-6)
    # Six outermost events, each drawn once: [0/1]'s three were drawn three times each.
    assert [r["label"] for r in times["timeline"]] == [
        "[0/0]", "[0/0] CachingAutotuner.benchmark_all_configs", "[0/0] CachingAutotuner.benchmark_all_configs",
        "[0/1]", "[0/1] CachingAutotuner.benchmark_all_configs", "[0/1] CachingAutotuner.benchmark_all_configs"]
    # [0/2]'s page says whose time its records are, not that it has none.
    report(log, tmp_path / "out")
    page = (tmp_path / "out" / "-_0_2_0" / "index.html").read_text()
    assert "counted once, as [0/1]'s: this compile id's records repeat its events and metrics" in page

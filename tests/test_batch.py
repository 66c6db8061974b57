"""`compilescope LOG LOG ...`: one report per log, the same as reporting each alone, and a page listing them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from compilescope.render.notices import SEVERITY_LABELS

from .browser import LAPTOP, browser_page, pages_wider_than_the_window
from .conftest import PEER_SINGLE_LOGS, TORCH213_LOGS, peer, report, run_cli

SOME = ["simple.log", "comp_failure.log", "comp_metrics.log", "export.log", "inductor_provenance_jit_log.txt"]


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("batch") / "out"
    assert run_cli(*[peer(n) for n in SOME], "-o", out, "--no-browser", "-j", "2") == 0
    return out


def test_each_log_gets_the_report_it_gets_alone(batch, tmp_path):
    for name in SOME:
        alone = tmp_path / name
        expected = report(peer(name), alone)
        sub = batch / name.rsplit(".", 1)[0]
        assert json.loads((sub / "compile_directory.json").read_text()) == expected
        assert _tree(sub) == _tree(alone)
        assert (sub / "raw.jsonl").read_bytes() == (alone / "raw.jsonl").read_bytes()


def test_reports_json_says_what_each_log_holds(batch):
    rows = {r["name"]: r for r in json.loads((batch / "reports.json").read_text())}
    assert list(rows) == [n.rsplit(".", 1)[0] for n in SOME]  # in the order given
    assert rows["comp_failure"]["statuses"]["error"] == 1 and rows["comp_failure"]["failures"] == 1
    assert rows["comp_failure"]["findings"][0]["title"].startswith("[0/0] failed in Backend compiler")
    # comp_metrics: compile ids 0/0_1, 1/0_1 (restarted after a graph break) and 2/0.
    assert rows["comp_metrics"]["compiles"] == 5 and rows["comp_metrics"]["graph_breaks"] == 1
    assert rows["export"]["export_issues"] >= 1 and rows["export"]["findings"][0]["title"].startswith("draft export")
    assert rows["simple"]["export_issues"] is None and rows["simple"]["statuses"]["ok"] == 1
    for r in rows.values():
        assert r["report"] == f"{r['name']}/index.html" and (batch / r["report"]).is_file()


def test_index_links_every_report(batch):
    html = (batch / "index.html").read_text()
    for name in SOME:
        assert f'href="{name.rsplit(".", 1)[0]}/index.html"' in html


def test_serial_and_parallel_give_the_same_reports(batch, tmp_path):
    serial = tmp_path / "serial"
    assert run_cli(*[peer(n) for n in SOME], "-o", serial, "--no-browser", "-j", "1") == 0
    assert _tree(serial) == _tree(batch)
    for path in _tree(batch):
        if path.endswith(("compile_directory.json", "raw.jsonl")):
            assert (serial / path).read_bytes() == (batch / path).read_bytes(), path


def test_whole_peer_suite_in_one_run(tmp_path):
    if not PEER_SINGLE_LOGS:
        peer("simple.log")  # skips or fails with the reason
    out = tmp_path / "all"
    assert run_cli(*[peer(n) for n in PEER_SINGLE_LOGS], "-o", out, "--no-browser") == 0
    rows = json.loads((out / "reports.json").read_text())
    assert len(rows) == len(PEER_SINGLE_LOGS) and not any(r["error"] for r in rows)


def test_same_file_names_get_distinct_directories(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        shutil.copy(peer("simple.log"), tmp_path / d / "simple.log")
    out = tmp_path / "out"
    assert run_cli(tmp_path / "a" / "simple.log", tmp_path / "b" / "simple.log", "-o", out, "--no-browser") == 0
    assert [r["name"] for r in json.loads((out / "reports.json").read_text())] == ["simple", "simple_2"]
    assert (out / "simple_2" / "index.html").is_file()


def test_hostile_file_name_is_escaped_and_confined(tmp_path):
    evil = tmp_path / '<img src=x onerror=alert(1)>..log'
    shutil.copy(peer("simple.log"), evil)
    out = tmp_path / "out"
    assert run_cli(evil, peer("links.log"), "-o", out, "--no-browser") == 0
    html = (out / "index.html").read_text()
    assert "<img src=x" not in html and "&lt;img src=x" in html
    assert {p.parent for p in out.iterdir() if p.is_dir()} == {out}
    assert all(p.resolve().is_relative_to(out.resolve()) for p in out.rglob("*"))


def test_strict_problem_in_one_log_keeps_the_others(tmp_path, capsys):
    out = tmp_path / "out"
    rc = run_cli(peer("simple.log"), peer("simple_corrupted_json.log"), "-o", out, "--no-browser", "--strict")
    assert rc == 1
    err = capsys.readouterr().err
    assert "simple_corrupted_json: line" in err and "md5" in err
    assert (out / "simple" / "index.html").is_file() and (out / "simple_corrupted_json" / "index.html").is_file()


def test_unreadable_log_is_a_row_not_a_crash(tmp_path, capsys):
    bad = tmp_path / "truncated.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    out = tmp_path / "out"
    run_cli(peer("simple.log"), bad, "-o", out, "--no-browser")
    rows = {r["name"]: r for r in json.loads((out / "reports.json").read_text())}
    assert rows["simple"]["error"] is None
    assert (out / "simple" / "index.html").is_file()
    assert "cannot be read" in rows["truncated"]["error"] and rows["truncated"]["report"] is None
    assert "not read: " in (out / "index.html").read_text()
    assert f"compilescope: truncated: not read: {bad}: the log cannot be read" in capsys.readouterr().err


def test_all_ranks_flag_needs_one_directory(tmp_path, capsys):
    assert run_cli(peer("simple.log"), peer("links.log"), "--all-ranks-html", "-o", tmp_path / "o", "--no-browser") == 2
    assert "--all-ranks-html" in capsys.readouterr().err


@pytest.mark.browser
def test_index_opens_and_leads_to_a_report(batch):
    with browser_page() as page:
        page.goto((batch / "index.html").as_uri())
        assert page.locator("table#logs tbody tr:not(.log-findings)").count() == len(SOME)
        page.click("a >> text=comp_failure")
        page.wait_for_load_state()
        assert page.url.endswith("comp_failure/index.html")
        assert page.console_errors == [] and page.external_requests == []


def test_a_rank_directory_among_several_logs_is_named_in_a_command_that_runs(tmp_path, capsys):
    ranks = tmp_path / "my ranks"
    shutil.copytree(TORCH213_LOGS.parent / "multi_rank", ranks)
    assert run_cli(TORCH213_LOGS / "recompiles.log", ranks, "-o", tmp_path / "out", "--no-browser") == 2
    assert capsys.readouterr().err == (f"compilescope: error: {ranks} holds several ranks' logs; report it on its own "
                                       f"(compilescope '{ranks}')\n")


def test_a_batch_prints_each_logs_most_urgent_finding_and_the_page_to_open(tmp_path, capsys):
    """Several logs at once said only how many files they made. Each log gets a line: its most urgent finding as
    `summary` ranks them (a crash, the recompile limit), or that it has nothing to fix, or that it was not read; then
    the command that says what to do, and the page to open."""
    logs = [TORCH213_LOGS / "native_crash.log.gz", TORCH213_LOGS / "recompiles.log", peer("simple.log")]
    bad = tmp_path / "truncated.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    out = tmp_path / "out"
    assert run_cli(*logs, bad, "-o", out, "--no-browser") == 0
    lines = capsys.readouterr().out.splitlines()
    expected = []
    for log in logs:
        assert run_cli("summary", "--json", log) == 0
        findings = json.loads(capsys.readouterr().out)["findings"]
        expected.append(f"{SEVERITY_LABELS[findings[0]['severity']]:<5}  {findings[0]['title']}" if findings
                        else "nothing to fix")
    assert lines[0] == "Fix first, in each log:"
    assert [line.split(maxsplit=1) for line in lines[1:5]] == [
        ["native_crash", expected[0]], ["recompiles", expected[1]], ["simple", expected[2]],
        ["truncated", "not read (the index page says why)"]]
    assert expected[0].startswith("ERROR  the program crashed") and expected[1].startswith("ERROR  h hit the recompile limit")
    assert lines[5] == "  what to do about each: compilescope summary LOG" and len(lines) == 7
    assert f" files for 4 logs to {out} " in lines[6] and lines[6].endswith(f"; open {out / 'index.html'}")


def test_a_log_whose_report_cannot_be_written_was_read_and_says_so(tmp_path, monkeypatch, capsys):
    """A log of a batch whose own report (OUT/<name>/) cannot be written was read: its figures stand on the page listing
    the logs, and it says where, why and what to do, as a rank does; never "not read", and the run fails. Its place is
    taken, once OUT is made and before the logs run, by a regular file: no directory can be made there, even by root."""
    from compilescope.cli import batch as batch_cli

    log = TORCH213_LOGS / "recompiles.log"
    # What the raw log says (README: 9 compile ids, all attempt 0; 1/4 fails, Unsupported; 7 recompile_reasons).
    ids, failed, reasons = set(), 0, 0
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("\t") or "] {" not in line:
            continue
        record = json.loads(line.split("] ", 1)[1])
        if "frame_compile_id" in record:
            ids.add((record["frame_id"], record["frame_compile_id"], record.get("attempt", 0)))
        failed += bool(record.get("compilation_metrics", {}).get("fail_type"))
        reasons += record.get("artifact", {}).get("name") == "recompile_reasons"
    assert (len(ids), failed, reasons) == (9, 1, 7)

    out = tmp_path / "out"
    run_jobs = batch_cli.run_jobs

    def taken_then_run(*args, **kwargs):
        (out / "recompiles").write_text("not a directory")
        return run_jobs(*args, **kwargs)

    monkeypatch.setattr(batch_cli, "run_jobs", taken_then_run)
    assert run_cli(log, peer("simple.log"), "-o", out, "--no-browser", "-j", "2") == 1
    captured = capsys.readouterr()
    said = (f"read, but its report could not be written to {out}/recompiles: {out}/recompiles exists and is not a "
            "directory; its figures are in the table of logs only: make its directory writable, and run again with "
            "--overwrite")
    assert f"compilescope: recompiles: {said}\n" in captured.err
    assert "not read" not in captured.err and "could not be reported" not in captured.err
    assert captured.err.endswith("compilescope: 1 log whose report could not be written (see above)\n")
    assert "  recompiles  read, but its report was not written (see above)\n" in captured.out

    rows = {r["name"]: r for r in json.loads((out / "reports.json").read_text())}
    row = rows["recompiles"]
    assert row["error"] is None and row["report"] is None and row["report_not_written"] == said
    assert (row["compiles"], row["failures"], row["recompiles"]) == (len(ids), failed, reasons)
    assert rows["simple"]["report_not_written"] is None and rows["simple"]["report"] == "simple/index.html"
    assert (out / "recompiles").read_text() == "not a directory"
    assert (out / "simple" / "index.html").is_file()
    page = (out / "index.html").read_text()
    assert 'href="recompiles/' not in page and 'href="simple/index.html"' in page and said in page
    assert "not read" not in page


def test_a_compile_that_made_no_graph_is_not_counted_compiled(tmp_path):
    # empty_graph.log: passthrough ([4/0]) has no tensor operation, so Dynamo installed code and made no graph (its
    # compilation_metrics: graph_op_count null, has_guarded_code true); the resume functions [1/0] and [3/0] logged one
    # operation each. All three are status "ok" (tlparse's), but only two compiled anything.
    log = TORCH213_LOGS / "empty_graph.log"
    metrics = [json.loads(line[line.index("{"):])["compilation_metrics"]
               for line in log.read_text().splitlines() if '{"compilation_metrics": ' in line]
    assert {m["compile_id"]: m["graph_op_count"] for m in metrics if m["graph_op_count"] != 0} == {
        "1/0": 1, "3/0": 1, "4/0": None}
    out = tmp_path / "out"
    assert run_cli(log, TORCH213_LOGS / "dynamic_shapes.log", "-o", out, "--no-browser", "-j", "1") == 0
    row = {r["name"]: r for r in json.loads((out / "reports.json").read_text())}["empty_graph"]
    assert (row["statuses"]["ok"], row["no_graph"]) == (3, 1)
    html = (out / "index.html").read_text()
    cells = html[html.index('<a href="empty_graph/index.html">'):].split("</tr>")[0]
    counted = re.findall(r'<td class="num">(?:<span class="status-(\w+)">)?(\d+)', cells)
    # compile ids, then ok, break, restarted, empty, error, missing, then no graph
    assert counted[:8] == [("", "7"), ("ok", "2"), ("", "0"), ("restarted", "2"), ("empty", "2"), ("", "0"), ("", "0"),
                           ("empty", "1")]


@pytest.mark.browser
def test_the_list_of_logs_fits_a_laptops_window_with_each_logs_findings_in_sight(tmp_path):
    # Beside the log's path and its thirteen figures, a column of findings made the table wider than a 1280 px window
    # (at least 1,389 px, two logs): the page scrolled sideways and the findings, what the page is for, were past
    # its right edge. compile_error_raises' first finding holds a word of 55 characters
    # (torch.compile(backend='relu_compile_error_TESTING_ONLY')).
    logs = [TORCH213_LOGS / "graph_breaks.log", TORCH213_LOGS / "compile_error_raises.log"]
    out = tmp_path / "out"
    assert run_cli(*logs, "-o", out, "--no-browser") == 0
    rows = json.loads((out / "reports.json").read_text())
    assert any("relu_compile_error_TESTING_ONLY" in f["title"] for r in rows for f in r["findings"])
    with browser_page() as page:
        page.set_viewport_size({"width": LAPTOP, "height": 900})
        page.goto((out / "index.html").as_uri())
        for row in rows:
            for finding in row["findings"]:
                box = page.get_by_text(finding["title"], exact=True).first.bounding_box()
                assert box is not None and box["x"] + box["width"] <= LAPTOP, finding["title"]
        assert page.console_errors == []
        assert [w for w in pages_wider_than_the_window(page, out) if w.endswith(" index.html")] == []

"""A truncated or partly unreadable log: `summary`, `summary --json` and `compilescope LOG` say what was not read."""

from __future__ import annotations

import gzip
import json

from ..conftest import peer, run_cli, torch213

LOG = torch213("graph_breaks.log")


def _cut_plain(tmp_path):
    """The real log cut in the middle of line 260's envelope (a job killed mid-write), plus a line of garbage."""
    data = LOG.read_bytes()
    cut = tmp_path / "cut.log"
    head = data[:30000]
    cut.write_bytes(b"some stray print output\n" + head)
    return cut


def _cut_gz(tmp_path):
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gzip.compress(LOG.read_bytes())[:20000])
    return cut


def test_summary_says_in_one_line_how_many_records_were_skipped_and_why(tmp_path, capsys):
    cut = _cut_plain(tmp_path)
    assert run_cli("summary", cut) == 0
    err = capsys.readouterr().err
    assert err == ("compilescope: warning: cut.log: 2 records skipped (1 broken JSON, 1 not a TORCH_TRACE line). "
                   "The summary shows what was read.\n")
    assert run_cli("summary", "--json", cut) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["unread"] == {
        "skipped_records": 2, "reasons": {"bad_json": 1, "bad_prefix": 1}, "damaged_payloads": 0,
        "stopped_at_line": None, "stop_reason": None,
    }
    assert "2 records skipped" in out.err


def test_report_and_summary_of_a_truncated_gz(tmp_path, capsys):
    cut = _cut_gz(tmp_path)
    assert run_cli(cut, "-o", tmp_path / "out", "--no-browser") == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1].startswith("Wrote ")
    [line] = captured.err.splitlines()
    assert line.startswith("compilescope: warning: cut.log.gz: the log cannot be read after line ")
    assert line.endswith("The report shows what was read.")
    assert run_cli("summary", "--json", cut) == 0
    unread = json.loads(capsys.readouterr().out)["unread"]
    assert unread["skipped_records"] == 0 and unread["stopped_at_line"] > 100
    assert "Compressed file ended" in unread["stop_reason"]


def test_a_whole_log_prints_nothing_more(tmp_path, capsys):
    assert run_cli(LOG, "-o", tmp_path / "out", "--no-browser") == 0
    assert run_cli("summary", LOG) == 0
    assert capsys.readouterr().err == ""


RECOMPILES = torch213("recompiles.log")


def _unread(path, capsys) -> dict:
    assert run_cli("summary", "--json", path) == 0
    return json.loads(capsys.readouterr().out)["unread"]


def test_a_log_cut_inside_a_payload_was_not_read_to_its_end(tmp_path, capsys):
    # A killed run's log: torch writes each record whole, and its payloads are most of a log's bytes, so a cut
    # usually lands inside one. Reading it to the end of the file is not reading the run to its end.
    data = RECOMPILES.read_bytes()
    payload_line = data.index(b"\n\t", 300000) + 2  # a payload line past the first records
    mid_line = tmp_path / "mid_line.log"
    mid_line.write_bytes(data[:payload_line + 20])  # inside that line: no newline at the end of the file
    at_line_end = tmp_path / "at_line_end.log"
    at_line_end.write_bytes(data[:data.index(b"\n", payload_line) + 1])  # that line whole, the rest of its payload lost
    lines_before = data[:payload_line].count(b"\n")
    for cut, lineno in ((mid_line, lines_before + 1), (at_line_end, lines_before + 1)):
        unread = _unread(cut, capsys)
        assert unread["stopped_at_line"] == lineno and unread["damaged_payloads"] == 1
        assert "does not match its md5: it was cut there" in unread["stop_reason"]
        assert run_cli("check", "--no-failures", cut) == 1
        assert "whole-log: the log was not read in full" in capsys.readouterr().out


def test_a_whole_log_without_its_last_newline_or_with_a_damaged_payload_inside_is_read_to_its_end(tmp_path, capsys):
    # The file's last newline lost (an editor's), every md5 matching: nothing was cut.
    no_newline = tmp_path / "no_newline.log"
    no_newline.write_bytes(RECOMPILES.read_bytes().rstrip(b"\n"))
    assert _unread(no_newline, capsys)["stopped_at_line"] is None
    # One payload changed in the middle of the log: damaged, read anyway, and the log goes on past it.
    data = RECOMPILES.read_bytes()
    at = data.index(b"\n\t", 100000) + 2
    damaged = tmp_path / "damaged.log"
    damaged.write_bytes(data[:at] + b"X" + data[at + 1:])
    unread = _unread(damaged, capsys)
    assert unread["damaged_payloads"] == 1 and unread["stopped_at_line"] is None


def test_tlparse_logs_edited_by_hand_are_not_taken_for_cut(capsys):
    # tlparse's export.log ends in a payload whose empty lines an editor left blank (its md5 broken by that);
    # its graph_exec_order log has two payloads re-indented by hand, its last one among them.
    from ..conftest import shared

    for log in (peer("export.log"), shared("peer-tlparse/graph_exec_order_tests/dedicated_log_torch_trace_rank_0_a74od7a1.log")):
        unread = _unread(log, capsys)
        assert unread["damaged_payloads"] >= 1 and unread["stopped_at_line"] is None


def test_where_reading_stopped_is_said_past_the_listing_limit_of_problems(tmp_path, capsys):
    from compilescope.model.stats import MAX_LISTED_PROBLEMS

    # A job that printed to its log before torch did, then was killed inside a payload.
    data = RECOMPILES.read_bytes()
    cut = tmp_path / "noisy_cut.log"
    cut.write_bytes(b"stray print\n" * (MAX_LISTED_PROBLEMS + 1) + data[:data.index(b"\n\t", 300000) + 20])
    unread = _unread(cut, capsys)
    assert unread["skipped_records"] == MAX_LISTED_PROBLEMS + 1
    assert unread["stopped_at_line"] is not None and "it was cut there" in unread["stop_reason"]


def test_where_reading_stopped_is_kept_once_and_saved_with_the_results(tmp_path):
    import orjson

    from compilescope.analyses.analyze import analyze
    from compilescope.analyses.results import Results
    from compilescope.ingest.reader import read_trace

    with read_trace(str(_cut_gz(tmp_path))) as trace:
        [stop] = [p for p in trace.stats.problems if p.category == "read_error"]
        assert trace.stats.stopped == stop and "Compressed file ended" in stop.message
        results = analyze(trace)
        with Results.from_json(orjson.loads(orjson.dumps(results.to_json()))) as loaded:
            assert loaded.trace.stats.stopped == stop and loaded.trace.stats.parse_problems == 1
    with read_trace(str(LOG)) as whole:
        assert whole.stats.stopped is None

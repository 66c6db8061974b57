"""A truncated or partly unreadable log: `summary`, `summary --json` and `compilescope LOG` say what was not read."""

from __future__ import annotations

import gzip
import json

from ..conftest import run_cli, torch213

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
    assert captured.out.startswith("Wrote ")
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

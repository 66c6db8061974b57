"""Every input of the bad-input corpus: a report of everything readable, or one clear error line.

Never a traceback; every record accounted for (ok + each failure kind = total, and
total = the records in the file, counted independently); every skipped line listed
with its line number in the report's problems table; --strict fails on them.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from compilescope.ingest import lines as lines_module
from compilescope.ingest import reader as reader_module
from compilescope.ingest.lines import read_raw_records
from compilescope.ingest.reader import read_trace
from compilescope.model.stats import OUTCOMES

from ..conftest import run_cli, torch213
from .corpus import BASE, CASES, CORPUS, base_bytes, expected_records, unreadable_file

# Outcomes that skip (or only partly read) a record: each has one listed problem per record.
LISTED = ("md5_mismatch", "other_rank", "bad_prefix", "bad_json", "orphan_payload", "handler_error")


@pytest.fixture(scope="module")
def base_stats():
    with read_trace(str(torch213(BASE))) as trace:
        return trace.stats, set(trace.compiles)


def problem_rows(index_html: str) -> list[tuple[int, str, str]]:
    table = index_html.split('id="problems"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>(\d+)</td><td>([^<]*)</td><td>(.*?)</td></tr>", table, re.S)
    return [(int(n), cat, html.unescape(msg)) for n, cat, msg in rows]


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_corpus_input(case, tmp_path, capsys, base_stats):
    source = case.build(tmp_path)
    out = tmp_path / "out"
    rc = run_cli(source, "-o", out, "--no-browser")
    err = capsys.readouterr().err
    assert "Traceback" not in err

    if not case.usable:
        assert rc == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("compilescope: error: "), err
        assert case.error in lines[0]
        assert not out.exists(), "no report for unusable input"
        return

    assert rc == 0, err
    assert (out / "index.html").is_file() and (out / "compile_directory.json").is_file()
    with read_trace(str(source)) as trace:
        stats = trace.stats
        compiles = set(trace.compiles)
        rank = trace.rank

    # Every record accounted for, each in exactly one outcome.
    assert set(stats.outcomes) <= set(OUTCOMES)
    assert sum(stats.outcomes[o] for o in OUTCOMES) == stats.total
    if case.counts_exact:
        assert stats.total == expected_records(source.read_bytes())
    listed = Counter(p.category for p in stats.problems)
    for outcome in LISTED:
        assert listed[outcome] == stats.outcomes[outcome], outcome
    assert case.problems <= set(listed), (case.problems, listed)

    # Nothing readable lost.
    if case.lost is not None:
        base, base_compiles = base_stats
        readable = stats.outcomes["ok"] + stats.outcomes["md5_mismatch"]
        assert readable >= base.outcomes["ok"] + base.outcomes["md5_mismatch"] - case.lost
        if case.lost == 0:
            assert base_compiles <= compiles

    # The report lists each problem with its line number; the JSON agrees.
    rows = problem_rows((out / "index.html").read_text()) if stats.problems else []
    assert [(r[0], r[1]) for r in rows] == [(p.lineno, p.category) for p in stats.problems]
    directory = json.loads((out / "compile_directory.json").read_text())
    assert {k for k in directory} == {str(c) if c else "[-/-]" for c in compiles}

    if case.name in ("other_rank_entries", "mismatched_rank_name"):
        assert rank == 0 and stats.outcomes["ok"] >= base_stats[0].outcomes["ok"]

    # --strict: a failure (exit 1, each problem on stderr) exactly when lines were not read as logged.
    rc = run_cli(source, "-o", tmp_path / "strict", "--no-browser", "--strict")
    err = capsys.readouterr().err
    assert rc == (1 if case.strict_fails else 0), err
    if case.strict_fails:
        assert "strict mode" in err.splitlines()[-1]
        assert re.search(r"^line \d+: \w+: ", err, re.M)


def test_every_corpus_kind_is_there():
    """The issue's list, one case (or test) each."""
    wanted = {
        "truncated_mid_payload", "truncated_mid_line", "invalid_utf8_in_envelope", "invalid_utf8_in_payload",
        "nul_bytes", "corrupt_json", "md5_mismatch", "orphan_payload", "very_long_lines", "unknown_kinds",
        "duplicated_compile_ids", "other_rank_entries", "empty_file", "directory_without_logs", "binary_png",
        "missing_path", "crlf_line_endings",
    }
    assert wanted <= set(CASES)


def test_unusable_input_is_one_line_in_a_real_process(tmp_path):
    """The user's view: one line on stderr, exit status 2, no traceback (python -m compilescope)."""
    for case in ("binary_png", "empty_file", "missing_path"):
        source = CASES[case].build(tmp_path)
        result = subprocess.run(
            [sys.executable, "-m", "compilescope", str(source), "-o", str(tmp_path / "out"), "--no-browser"],
            capture_output=True, text=True, timeout=60,
        )
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stderr.startswith("compilescope: error: ")


def test_unreadable_file(tmp_path, capsys, monkeypatch):
    path = unreadable_file(tmp_path)
    if os.geteuid() == 0:  # root reads any file: make the permission check fail as it would for a user
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False)
    assert run_cli(path, "-o", tmp_path / "out", "--no-browser") == 2
    assert capsys.readouterr().err.strip() == f"compilescope: error: {path}: permission denied"
    assert not (tmp_path / "out").exists()


def test_open_failing_after_discovery(tmp_path, capsys, monkeypatch):
    """A file that passes the access check but cannot be opened (a race, an ACL, EIO)."""
    path = tmp_path / "x.log"
    path.write_bytes(base_bytes())

    def refuse(p):
        raise PermissionError(13, "Permission denied", p)

    monkeypatch.setattr(reader_module, "open_log", refuse)
    assert run_cli(path, "-o", tmp_path / "out", "--no-browser") == 2
    assert capsys.readouterr().err.strip() == f"compilescope: error: {path}: cannot read: Permission denied"


def test_internal_error_is_one_line(tmp_path, capsys, monkeypatch):
    """A bug (here: an analysis that raises) is one line and exit status 3, not a traceback."""
    from compilescope.cli import report as report_module

    def broken(trace, *profiles):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.delenv("COMPILESCOPE_DEBUG", raising=False)
    monkeypatch.setattr(report_module, "analyze", broken)
    assert run_cli(torch213(BASE), "-o", tmp_path / "out", "--no-browser") == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("compilescope: internal error: RuntimeError: 'boom second line'")


def _records(data: bytes):
    import io

    return [(r.lineno, r.glog, r.body, r.payload_bytes(), r.problem) for r in read_raw_records(io.BytesIO(data))]


def test_lines_read_in_pieces_give_the_same_records(monkeypatch):
    """Lines are read in bounded pieces; tiny pieces (CR and LF split apart) must change nothing."""
    data = base_bytes().replace(b"\n", b"\r\n")[:200_000]
    whole = _records(data)
    monkeypatch.setattr(lines_module, "CHUNK", 7)
    assert _records(data) == whole


def test_envelope_line_over_the_limit_is_reported_not_read(monkeypatch):
    monkeypatch.setattr(lines_module, "CHUNK", 64)
    monkeypatch.setattr(lines_module, "MAX_ENVELOPE_LINE", 1000)
    prefix = b"V1121 09:58:36.209000 2267 torch/x.py:1] "
    data = (prefix + b'{"str": ["' + b"a" * 5000 + b'", 0]}\n\tits payload\n' + prefix + b'{"str": ["b", 1]}\n')
    records = list(read_raw_records(__import__("io").BytesIO(data)))
    assert [(r.lineno, r.problem) for r in records] == [(1, "bad_json"), (3, None)]
    assert "longer than 1000 bytes" in records[0].detail
    assert records[0].payload_lines == 1  # its payload is skipped with it, not an orphan


def test_spilled_payloads_give_the_same_report(tmp_path, monkeypatch):
    """Payloads moved to disk while reading (huge ones) end up exactly as in-memory ones."""
    from compilescope.model import payloads

    log = torch213(BASE)
    assert run_cli(log, "-o", tmp_path / "a", "--no-browser") == 0
    monkeypatch.setattr(payloads, "SPILL_AT", 10)
    assert run_cli(log, "-o", tmp_path / "b", "--no-browser") == 0
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_strict_fails_even_past_the_listing_limit(tmp_path, monkeypatch, capsys):
    """Problems beyond the listed maximum still fail --strict (they are not crowded out by others)."""
    from compilescope.model import stats as stats_module

    monkeypatch.setattr(stats_module, "MAX_LISTED_PROBLEMS", 3)
    lines = base_bytes().splitlines(keepends=True)
    # Three non-strict problems first (envelopes of another rank), then a broken line.
    prefix = b"V1121 09:58:36.209000 2267 torch/x.py:1] "
    other = b"".join(prefix + b'{"str": ["x", %d], "rank": 1}\n' % i for i in range(3))
    first = prefix + b'{"str": ["y", 0], "rank": 0}\n'
    log = tmp_path / "crowded.log"
    log.write_bytes(first + other + b"".join(lines) + b"garbage line\n")
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser", "--strict") == 1
    assert "1 more problem up to this line, not listed" in capsys.readouterr().err

"""Ranks done out of ranks total, on stderr, while a multi-rank report runs."""

from __future__ import annotations

import io
import os
import re

from ..conftest import REPO, run_cli

SMALL_LOG = REPO / "tests" / "data" / "torch213" / "logs" / "export_draft.log"  # a real torch 2.13 log, 30 KB


def _ranks(tmp_path, n: int):
    logs = tmp_path / "in"
    logs.mkdir()
    for rank in range(n):
        os.symlink(SMALL_LOG, logs / f"dedicated_log_torch_trace_rank_{rank}.log")
    return logs


def test_progress_lines_in_a_log(tmp_path, capsys, monkeypatch):
    """Not a terminal (a CI log, a file): a line every tenth of the ranks, the last one at the total."""
    monkeypatch.delenv("CI", raising=False)
    logs = _ranks(tmp_path, 20)
    assert run_cli(logs, "--all-ranks-html", "-o", tmp_path / "out", "--no-browser", "-j", "2") == 0
    lines = re.findall(r"compilescope: (\d+)/(\d+) ranks done", capsys.readouterr().err)
    assert [int(done) for done, _ in lines] == list(range(2, 21, 2))
    assert {total for _, total in lines} == {"20"}


def test_few_ranks_print_no_progress(tmp_path, capsys):
    logs = _ranks(tmp_path, 3)
    assert run_cli(logs, "--all-ranks-html", "-o", tmp_path / "out", "--no-browser", "-j", "1") == 0
    assert "ranks done" not in capsys.readouterr().err


def test_progress_bar_on_a_terminal(tmp_path):
    from compilescope.cli.multirank import report_all_ranks
    from compilescope.cli.progress import RankProgress

    terminal = io.StringIO()
    bar = RankProgress(terminal, tty=True)
    try:
        report_all_ranks(str(_ranks(tmp_path, 4)), str(tmp_path / "out"), jobs=1,
                         on_done=lambda d: bar.advance(), on_total=bar.start)
        assert bar.done == bar.total == 4
    finally:
        bar.close()
    shown = terminal.getvalue()
    assert "ranks" in shown and "4/4" in shown


def test_the_bar_moves_the_cursor_past_the_terminal_guard():
    """The CLI's stderr escapes every control character (cli/terminal_guard.py): the bar, written through it,
    showed its cursor codes as text (\\u001b[2Kranks ━━━…) on every redraw."""
    from compilescope.cli.progress import RankProgress
    from compilescope.cli.terminal_guard import GuardedStream

    terminal = io.StringIO()
    bar = RankProgress(GuardedStream(terminal), tty=True)
    bar.start(2)
    bar.advance()
    bar.print("compilescope: rank 0: 3 files\x1b[2J")
    bar.close()
    shown = terminal.getvalue()
    assert "\x1b[2K" in shown and "\\u001b[2K" not in shown  # the bar's own codes, as codes
    assert "rank 0: 3 files\\u001b[2J" in shown  # a line above it is still escaped

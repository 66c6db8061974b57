"""A rank's compile time is one figure wherever it is stated: the rank table (terminal, --json, landing page),
the landing page's chart and `check` all give what `summary` of that rank's log alone gives.

The reference is the one-log path run on each rank's file by itself, so a multi-rank figure computed another way
(it once summed entire_frame_compile_time_s, which leaves out a failed compile and work outside the frame) fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from compilescope.wording import format_seconds

from ..conftest import REPO, run_cli
from ..htmltable import table_rows
from .conftest import peer_dir, write_landing
from .test_summary_dir import summary_json, terminal

PEER_DIRS = ["multi_rank_logs", "multi_rank_runtime", "multi_rank_schedule", "multi_rank_messy_input"]
TORCH213_RANKS = REPO / "tests" / "data" / "torch213" / "multi_rank"
DIRECTORIES = [*PEER_DIRS, "torch213"]


def directory(name: str) -> Path:
    return TORCH213_RANKS if name == "torch213" else peer_dir(name)


def one_log(capsys, log: str) -> tuple[float, str]:
    """The log's compile time as `summary LOG` states it: (--json's total seconds, the terminal's words)."""
    total = summary_json(capsys, log)["compile_time"]["total_s"]
    assert run_cli("summary", log) == 0
    said = re.search(r"Compile time \((\S+ \S+)\)", capsys.readouterr().out)
    assert said, f"summary {log} states no compile time"
    return total, said[1]


@pytest.fixture(scope="module")
def reference():
    """reference(capsys, name): {rank: (total seconds, terminal words)} from each rank's log read alone."""
    cache: dict[str, dict[int, tuple[float, str]]] = {}

    def get(capsys, name: str) -> dict[int, tuple[float, str]]:
        if name not in cache:
            ranks = summary_json(capsys, directory(name), "-j", "1")["ranks"]
            cache[name] = {r["rank"]: one_log(capsys, r["source"]) for r in ranks}
        return cache[name]

    return get


@pytest.mark.parametrize("name", DIRECTORIES)
def test_json_rank_figure_is_the_one_log_figure(capsys, reference, name):
    alone = reference(capsys, name)
    doc = summary_json(capsys, directory(name), "-j", "1")
    assert {r["rank"]: r["compile_time_s"] for r in doc["ranks"]} == {rank: t for rank, (t, _) in alone.items()}
    # The per-compile figures are that total's parts, and the skew chart's bars are the same figures.
    for r in doc["ranks"]:
        assert sum(r["compile_times_s"].values()) == pytest.approx(r["compile_time_s"], abs=1e-5)
    skew = doc["analysis"]["compile_time"]
    assert dict(zip(skew["ranks"], skew["seconds"])) == {rank: t for rank, (t, _) in alone.items()}


@pytest.mark.parametrize("name", DIRECTORIES)
def test_terminal_rank_row_says_what_the_one_log_summary_says(capsys, reference, name):
    alone = reference(capsys, name)
    text = terminal(directory(name))
    for rank, (_, words) in alone.items():
        # compile time is the second-to-last column, parse problems the last
        assert re.search(rf"^{rank}\s.*\s{re.escape(words)}\s+\d+$", text, re.M), f"rank {rank}: {words} not in\n{text}"


def test_failed_compile_still_took_time_on_the_rank_row(capsys, reference):
    """multi_rank_logs: ranks 0 and 2 failed their one compile (no entire_frame_compile_time_s): their time is
    still stated, not "-"."""
    alone = reference(capsys, "multi_rank_logs")
    assert alone[0][0] > 0 and alone[2][0] > 0
    text = terminal(directory("multi_rank_logs"))
    assert not re.search(r"^[02]\s.*\s-\s+\d+$", text, re.M)


@pytest.mark.parametrize("name", DIRECTORIES)
def test_check_states_the_one_log_figure_for_each_rank(capsys, reference, name):
    alone = reference(capsys, name)
    # A limit no rank reaches: the passing message lists every rank's compile time.
    assert run_cli("check", "--json", "--max-compile-seconds", "1e9", directory(name)) == 0
    rule = next(r for r in json.loads(capsys.readouterr().out)["rules"] if r["rule"] == "max-compile-seconds")
    stated = {int(rank): s for rank, s in re.findall(r"rank (\d+): compile time ([\d.]+ m?s)\b", rule["message"])}
    assert stated == {rank: format_seconds(t) for rank, (t, _) in alone.items()}


@pytest.mark.parametrize("name", DIRECTORIES)
def test_landing_page_table_and_chart_state_the_one_log_figure(capsys, reference, tmp_path, name):
    alone = reference(capsys, name)
    html = write_landing(directory(name), tmp_path / "out").html
    rank_table = html[html.index('<table id="rank-table">'):]
    rows = table_rows(rank_table[:rank_table.index("</table>")])
    header = next(r for r in rows if "Compile time (s)" in r)
    column = header.index("Compile time (s)")
    in_table = {int(re.match(r"Rank (\d+)", r[0])[1]): r[column] for r in rows if re.match(r"Rank \d+", r[0])}
    expected = {rank: f"{t:.3f}" for rank, (t, _) in alone.items()}
    assert in_table == expected
    in_chart = dict(re.findall(r"<title>rank (\d+): ([^<]+)</title>", html))  # in the words the terminal uses
    assert {int(rank): s for rank, s in in_chart.items()} == {rank: said for rank, (_, said) in alone.items()}

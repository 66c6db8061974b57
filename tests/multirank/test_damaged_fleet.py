"""A fleet with damaged or absent ranks: cut logs, an empty log, a gap in the rank numbers, a rank that graph-broke.

Built from the two real gloo ranks of tests/data/torch213/multi_rank (and graph_breaks.log), copied under other rank
numbers and cut as a killed job or a broken upload leaves them. Each such rank must be said on the terminal, on the
landing page and in the JSON, never pass for a healthy rank.
"""

from __future__ import annotations

import gzip
import json
import re

from ..conftest import TORCH213_LOGS, run_cli, torch213
from .conftest import write_landing
from .test_summary_dir import row, summary_json, terminal

MULTI_RANK = TORCH213_LOGS.parent / "multi_rank"


def rank_text(rank: int, source: int = 0) -> str:
    """A real rank's log (rank 0 or 1 of multi_rank) as rank `rank` logged it."""
    text = (MULTI_RANK / f"dedicated_log_torch_trace_rank_{source}.log").read_text()
    return text.replace(f'"rank": {source}', f'"rank": {rank}')


def fleet(directory, ranks: dict[int, str | bytes]) -> str:
    """directory/ with a log per rank (text, or bytes for a .gz); returns it."""
    directory.mkdir()
    for rank, content in ranks.items():
        name = f"dedicated_log_torch_trace_rank_{rank}_x.log"
        if isinstance(content, bytes):
            (directory / f"{name}.gz").write_bytes(content)
        else:
            (directory / name).write_text(content)
    return directory


def cut_gz(text: str) -> bytes:
    """The log gzipped and cut in the middle, as an interrupted upload leaves it."""
    data = gzip.compress(text.encode())
    return data[: len(data) // 2]


def test_a_cut_rank_is_noted_counted_and_compared(tmp_path, capsys):
    whole = rank_text(2)
    logs = fleet(tmp_path / "in", {0: rank_text(0), 1: rank_text(1), 2: whole[: len(whole) * 2 // 3], 3: cut_gz(rank_text(3))})
    doc = summary_json(capsys, logs, "-j", "1")
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert ranks[0]["unread"] is None and ranks[1]["unread"] is None
    # Cut mid-record: the broken last line is a record skipped; the cut .gz cannot be read past its end.
    assert ranks[2]["unread"] == "1 record skipped (1 broken JSON)"
    assert "cannot be read after line" in ranks[3]["unread"]
    assert ranks[2]["parse_problems"] >= 1 and ranks[3]["parse_problems"] >= 1
    assert doc["analysis"]["partial_ranks"] == [2, 3]
    assert [n for n in doc["notes"] if "was not read in full" in n] == [
        f"rank 2: dedicated_log_torch_trace_rank_2_x.log was not read in full: {ranks[2]['unread']}; its figures, and "
        "how it compares with the other ranks, cover only what was read",
        f"rank 3: dedicated_log_torch_trace_rank_3_x.log.gz was not read in full: {ranks[3]['unread']}; its figures, "
        "and how it compares with the other ranks, cover only what was read",
    ]
    # The compile's metrics are near the end of the log: cut off, the compile never finished, where the others succeeded.
    assert ranks[0]["statuses"] == {"[0/0]": "ok"} and ranks[2]["statuses"] == ranks[3]["statuses"] == {"[0/0]": "missing"}
    statuses = next(d for d in doc["analysis"]["divergences"] if d["kind"] == "statuses")
    assert [g["ranks"] for g in statuses["groups"]] == [[0, 1], [2, 3]]
    assert statuses["details"] == ["[0/0]: ranks 0, 1: succeeded; ranks 2, 3: never finished (no compilation metrics)"]

    text = terminal(logs)
    assert re.search(r"^2 .* 1 cut$", text, re.M) and re.search(r"^3 .* cut$", text, re.M)
    assert "ranks 2, 3: not read in full (see the notes)" in " ".join(text.split())
    assert "note: rank 3: dedicated_log_torch_trace_rank_3_x.log.gz was not read in full" in text

    landing = write_landing(logs, tmp_path / "out")
    assert 'id="partial-ranks"' in landing.html and "Ranks 2, 3</strong>" in landing.html
    assert "was not read in full" in landing.html and "(read in part)" in landing.html


def test_a_cut_that_loses_no_record_is_not_all_ranks_agree(tmp_path, capsys):
    # Cut in the gzip trailer, after every record: nothing compares differently, yet the rank was not read to its end.
    data = gzip.compress(rank_text(2).encode())
    logs = fleet(tmp_path / "in", {0: rank_text(0), 1: rank_text(1), 2: data[:-4]})
    doc = summary_json(capsys, logs, "-j", "1")
    assert doc["analysis"]["partial_ranks"] == [2]
    landing = write_landing(logs, tmp_path / "out")
    agree = re.search(r'<p class="agree" id="divergence">(.*?)</p>', landing.html, re.S)
    assert agree is None or "in what could be read" in agree.group(1)
    assert 'id="partial-ranks"' in landing.html


def test_a_rank_that_compiled_nothing_is_not_the_fastest(tmp_path, capsys):
    logs = fleet(tmp_path / "in", {0: rank_text(0), 1: rank_text(1, 1), 2: ""})
    doc = summary_json(capsys, logs, "-j", "1")
    times = {r["rank"]: r["compile_time_s"] for r in doc["ranks"]}
    ct = doc["analysis"]["compile_time"]
    assert times[2] == 0 and times[0] < times[1]
    assert ct["left_out"] == [2]
    assert (ct["fastest_rank"], ct["slowest_rank"]) == (0, 1)
    assert ct["skew_s"] == round(times[1] - times[0], 6)
    assert ct["median_s"] == round((times[0] + times[1]) / 2, 6)
    landing = write_landing(logs, tmp_path / "out")
    assert "Rank 2 compiled nothing: not counted as the fastest, nor in the median or the skew." in landing.html
    assert "Fastest: rank 0;" in landing.html


def test_graph_breaks_column_counts_what_the_ranks_report_counts(tmp_path, capsys):
    logs = fleet(tmp_path / "in", {0: rank_text(0), 1: torch213("graph_breaks.log").read_text()})
    # The rank's own report: `summary --json` of its log alone.
    assert run_cli("summary", "--json", torch213("graph_breaks.log")) == 0
    own = json.loads(capsys.readouterr().out)["graph_breaks"]
    doc = summary_json(capsys, logs, "-j", "1")
    rank1 = doc["ranks"][1]
    assert (rank1["graph_breaks"], rank1["graph_breaks_total"]) == (own["distinct"], own["total"])
    # ranks[].breaks counts compiles after a restart ([1/0_1], [2/0_1], [3/0_1]: their metrics name restart_reasons),
    # not graph breaks: [0/0] broke at line 23 without a restart, 4 breaks in all (the README).
    assert rank1["breaks"] == sum(1 for s in rank1["statuses"].values() if s == "break") == 3 != own["total"]
    text = terminal(logs)
    assert row(text, "1", "8", str(own["distinct"]), "0", "0", "0/0", "261 ms", "0")
    landing = write_landing(logs, tmp_path / "out")
    cell = re.search(r'<td class="num status-break" title="(\d+) in total">(\d+)</td>', landing.html)
    assert cell is not None and (int(cell.group(2)), int(cell.group(1))) == (own["distinct"], own["total"])


def test_a_gap_in_the_rank_numbers_is_noted(tmp_path, capsys):
    logs = fleet(tmp_path / "in", {r: rank_text(r) for r in (0, 1, 3, 6)})
    doc = summary_json(capsys, logs, "-j", "1")
    assert doc["analysis"]["missing_ranks"] == [[2, 2], [4, 5]]
    note = "ranks 2, 4-5: no log (the logs go up to rank 6): a rank that never started, or a log not copied here"
    assert note in doc["notes"]
    assert f"note: {note}" in " ".join(terminal(logs).split())
    assert note in write_landing(logs, tmp_path / "out").html
    capsys.readouterr()
    # No gap, no note.
    whole = fleet(tmp_path / "whole", {r: rank_text(r) for r in (0, 1)})
    assert summary_json(capsys, whole, "-j", "1")["analysis"]["missing_ranks"] == []


def test_an_unreadable_rank_is_said_once_and_the_jobs_are_those_that_ran(tmp_path, capsys):
    logs = fleet(tmp_path / "in", {0: rank_text(0), 1: rank_text(1), 2: rank_text(2)})
    (logs / "dedicated_log_torch_trace_rank_3_x.log").write_bytes(bytes(range(256)) * 16)
    assert run_cli(logs, "-o", tmp_path / "out", "--no-browser", "-j", "1000") == 0
    captured = capsys.readouterr()
    assert captured.err.count("rank 3: not read") == 1
    # Four ranks: four processes ran, whatever -j asked for.
    assert "(4 jobs)" in captured.out and "1000" not in captured.out

"""The multi-rank path of the CLI: routing, parallel workers, and where compilescope is right and tlparse 0.4.3 is not."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from compilescope.cli.multirank import summarize_ranks

from ..conftest import run_cli, tlparse_binary
from ..tracelog import cid, envelope
from .conftest import Landing, copy_ranks, peer_dir, write_landing


def _frame(filename, line=1, name="f"):
    return {"filename": filename, "line": line, "name": name}


# -- routing -------------------------------------------------------------------------------


def test_plain_directory_of_several_ranks_gets_the_multi_rank_report(tmp_path):
    rc = run_cli(peer_dir("multi_rank_schedule"), "-o", tmp_path / "out", "--no-browser", "-j", "1")
    assert rc == 0
    assert (tmp_path / "out" / "multi_rank_summary.json").exists()
    assert sorted(p.name for p in (tmp_path / "out").glob("rank_*")) == ["rank_0", "rank_1", "rank_2"]


def test_latest_still_reads_one_log(tmp_path):
    rc = run_cli(peer_dir("multi_rank_schedule"), "--latest", "-o", tmp_path / "out", "--no-browser")
    assert rc == 0
    assert (tmp_path / "out" / "compile_directory.json").exists()
    assert not (tmp_path / "out" / "multi_rank_summary.json").exists()


def test_all_ranks_html_refuses_latest_and_single_files(tmp_path, capsys):
    src = peer_dir("multi_rank_schedule")
    assert run_cli(src, "--all-ranks-html", "--latest", "-o", tmp_path / "a", "--no-browser") != 0
    assert "--latest" in capsys.readouterr().err
    log = next(src.glob("*rank_2.log"))
    assert run_cli(log, "--all-ranks-html", "-o", tmp_path / "b", "--no-browser") != 0
    assert "needs a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert run_cli(tmp_path / "empty", "--all-ranks-html", "-o", tmp_path / "c", "--no-browser") != 0
    assert "no rank logs" in capsys.readouterr().err


def test_single_rank_directory_with_all_ranks_html(tmp_path):
    report = write_landing(peer_dir("collectives_parity"), tmp_path / "out")
    assert list(report.ranks) == [0] and "Distributed job: 1 rank" in report.html


# -- parallel workers ------------------------------------------------------------------------


def test_parallel_workers_give_the_same_report(tmp_path):
    src = peer_dir("multi_rank_schedule")
    serial = write_landing(src, tmp_path / "j1")
    rc = run_cli(src, "--all-ranks-html", "-o", tmp_path / "j2", "--no-browser", "-j", "2")
    assert rc == 0
    parallel = Landing(tmp_path / "j2")
    assert parallel.summary == serial.summary
    for rank in range(3):
        assert parallel.json(f"rank_{rank}/compile_directory.json") == serial.json(f"rank_{rank}/compile_directory.json")
    files = lambda root: sorted(str(p.relative_to(root)) for p in root.rglob("*"))  # noqa: E731
    assert files(tmp_path / "j1") == files(tmp_path / "j2")
    assert (tmp_path / "j1" / "chromium_events.json").read_bytes() == (tmp_path / "j2" / "chromium_events.json").read_bytes()


def test_summarize_ranks_is_json_and_writes_nothing(tmp_path):
    src = peer_dir("multi_rank_schedule")
    before = sorted(os.listdir(src))
    doc = summarize_ranks(str(src), jobs=1).to_json()
    json.dumps(doc)  # JSON-able as is
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2]
    assert [g["ranks"] for g in next(d for d in doc["analysis"]["divergences"] if d["kind"] == "collectives")["groups"]] == [[0, 2], [1]]
    assert sorted(os.listdir(src)) == before


# -- where tlparse 0.4.3 is wrong -------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _two_ranks_sharing_a_string_index(directory: Path) -> Path:
    """Rank 1 refers to string 1, which only rank 0's log defines (e.g. its own table line was lost)."""
    directory.mkdir()
    _write(directory / "dedicated_log_torch_trace_rank_0.log",
           envelope({"str": ["/rank0/model.py", 0]}) + envelope({"str": ["/rank0/secret_of_rank0.py", 1]})
           + envelope({"dynamo_start": {"stack": [_frame(0), _frame(1)]}, "rank": 0, **cid(0)}))
    _write(directory / "dedicated_log_torch_trace_rank_1.log",
           envelope({"str": ["/rank1/model.py", 0]}) + envelope({"str": ["/rank1/extra.py", 2]})
           + envelope({"dynamo_start": {"stack": [_frame(0), _frame(1), _frame(2)]}, "rank": 1, **cid(0)}))
    return directory


def test_string_table_is_per_rank(tmp_path):
    logs = _two_ranks_sharing_a_string_index(tmp_path / "in")
    report = write_landing(logs, tmp_path / "out")
    table = json.loads((report.out / "rank_1" / "raw.jsonl").read_text().splitlines()[0])["string_table"]
    assert table == ["/rank1/model.py", None, "/rank1/extra.py"]
    rank1 = (report.out / "rank_1" / "index.html").read_text()
    assert "/rank1/model.py" in rank1
    assert "secret_of_rank0" not in rank1
    assert "&lt;unknown string 1&gt;" in rank1


@pytest.mark.oracle
def test_tlparse_leaks_strings_between_ranks(tmp_path):
    """tlparse's intern table is process-global: whichever rank it reads later sees the other rank's strings."""
    logs = _two_ranks_sharing_a_string_index(tmp_path / "in")
    subprocess.run([tlparse_binary(), str(logs), "--all-ranks-html", "-o", str(tmp_path / "tl"), "--no-browser", "--overwrite"],
                   check=True, capture_output=True)
    rank1_page = (tmp_path / "tl" / "rank_1" / "index.html").read_text()
    rank0_table = json.loads((tmp_path / "tl" / "rank_0" / "raw.jsonl").read_text().splitlines()[0])["string_table"]
    # It reads ranks in directory order: rank 1 after rank 0 shows rank 0's file in its stack;
    # rank 0 after rank 1 carries rank 1's strings in its raw.jsonl.
    assert "secret_of_rank0" in rank1_page or "/rank1/extra.py" in rank0_table


def _rank_log_with_unranked_entries(directory: Path) -> Path:
    """Rank 0's log: compile 0 carries "rank": 0; compile 1 was logged without a rank (torch does that before
    the process group exists, and for some events after)."""
    directory.mkdir()
    _write(directory / "dedicated_log_torch_trace_rank_0.log",
           envelope({"dynamo_start": {"stack": []}, "rank": 0, **cid(0)})
           + envelope({"compilation_metrics": {"graph_op_count": 1, "entire_frame_compile_time_s": 0.5}, "rank": 0, **cid(0)})
           + envelope({"dynamo_start": {"stack": []}, **cid(1)})
           + envelope({"compilation_metrics": {"graph_op_count": 2, "entire_frame_compile_time_s": 0.25}, **cid(1)}))
    _write(directory / "dedicated_log_torch_trace_rank_1.log",
           envelope({"dynamo_start": {"stack": []}, "rank": 1, **cid(0)})
           + envelope({"compilation_metrics": {"graph_op_count": 1, "entire_frame_compile_time_s": 0.5}, "rank": 1, **cid(0)}))
    return directory


def test_entries_without_a_rank_are_kept(tmp_path):
    logs = _rank_log_with_unranked_entries(tmp_path / "in")
    report = write_landing(logs, tmp_path / "out")
    assert report.ranks[0]["compile_ids"] == ["[0/0]", "[1/0]"]
    assert report.ranks[0]["statuses"] == {"[0/0]": "ok", "[1/0]": "ok"}
    assert report.ranks[0]["compile_time_s"] == 0.75
    assert report.ranks[0]["parse_problems"] == 0
    # ... so the landing page can say rank 0 compiled a frame rank 1 did not.
    assert report.groups("compile_ids") == [[0], [1]]
    assert "[1/0] compiled only on rank 0" in report.divergence("compile_ids")["details"]


@pytest.mark.oracle
def test_tlparse_drops_entries_without_a_rank(tmp_path):
    logs = _rank_log_with_unranked_entries(tmp_path / "in")
    subprocess.run([tlparse_binary(), str(logs), "--all-ranks-html", "-o", str(tmp_path / "tl"), "--no-browser", "--overwrite"],
                   check=True, capture_output=True)
    theirs = json.loads((tmp_path / "tl" / "rank_0" / "compile_directory.json").read_text())
    assert "[1/0]" not in theirs  # skipped as "other rank"


def test_duplicate_logs_of_one_rank_read_the_newest_and_say_so(tmp_path):
    src = peer_dir("multi_rank_schedule")
    logs = copy_ranks(src, tmp_path / "in", {
        "dedicated_log_torch_trace_rank_0_old.log": "dedicated_log_torch_trace_rank_1_n8zycf07.log",
        "dedicated_log_torch_trace_rank_0_new.log": "dedicated_log_torch_trace_rank_0_6u3fubwl.log",
        "dedicated_log_torch_trace_rank_1.log": "dedicated_log_torch_trace_rank_1_n8zycf07.log",
    })
    os.utime(logs / "dedicated_log_torch_trace_rank_0_old.log", (1, 1))
    report = write_landing(logs, tmp_path / "out")
    assert report.ranks[0]["source"].endswith("rank_0_new.log")
    assert "dedicated_log_torch_trace_rank_0_old.log: another log of rank 0" in report.html


def test_landing_page_escapes_log_text_and_forbids_network(tmp_path):
    logs = tmp_path / "in"
    logs.mkdir()
    evil = '<script>alert(1)</script>'
    for rank in (0, 1):
        _write(logs / f"dedicated_log_torch_trace_rank_{rank}.log",
               envelope({"dynamo_start": {"stack": []}, "rank": rank, **cid(0)})
               + envelope({"artifact": {"name": "inductor_collective_schedule", "encoding": "json"}, "rank": rank, **cid(0)},
                          json.dumps([f"torch.ops._c10d_functional.{evil}{rank}.default"])))
    report = write_landing(logs, tmp_path / "out")
    assert report.groups("collectives") == [[0], [1]]
    assert "<script>alert" not in report.html and "&lt;script&gt;alert(1)" in report.html
    assert "Content-Security-Policy" in report.html and "default-src 'none'" in report.html
    assert "http://" not in report.html.replace("http://www.w3.org/2000/svg", "")


def test_strict_fails_when_a_rank_has_problems_but_writes_every_rank(tmp_path, capsys):
    # Rank 1 of multi_rank_schedule has one payload whose md5 does not match.
    rc = run_cli(peer_dir("multi_rank_schedule"), "--all-ranks-html", "--strict", "-o", tmp_path / "out", "--no-browser", "-j", "1")
    assert rc == 1
    err = capsys.readouterr().err
    assert "rank 1: line" in err and "md5_mismatch" in err
    assert "rank 0: line" not in err
    assert (tmp_path / "out" / "index.html").exists() and (tmp_path / "out" / "rank_2" / "index.html").exists()

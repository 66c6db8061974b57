"""What needs no torch: argument handling, the no-torch messages, the cache note, load()/report()."""

from __future__ import annotations

import sys

import pytest

import compilescope
from compilescope.cli import _parser, load_command
from compilescope.cli.run import split_program
from compilescope.errors import CompilescopeError

from ..conftest import peer, run_cli, torch213

INSTALL = "pip install torch==2.13.0"


def _run_parser():
    return _parser(load_command("run"))


@pytest.mark.parametrize("argv, expected", [
    (["train.py", "--lr", "3"], ([], None, ["train.py", "--lr", "3"], False)),
    (["-o", "out", "--fresh-cache", "train.py", "-o", "x"], (["-o", "out", "--fresh-cache"], None, ["train.py", "-o", "x"], False)),
    (["--no-browser", "-m", "pkg.mod", "--flag"], (["--no-browser"], "pkg.mod", ["--flag"], False)),
    (["-mpkg", "a"], ([], "pkg", ["a"], False)),
    (["--trace-dir", "t", "--", "torchrun", "--nproc-per-node", "2", "t.py"], (["--trace-dir", "t"], None, ["torchrun", "--nproc-per-node", "2", "t.py"], True)),
    (["--out=r", "x.py"], (["--out=r"], None, ["x.py"], False)),
])
def test_split_program(argv, expected):
    assert split_program(_run_parser(), argv) == expected


def test_run_needs_a_program(capsys):
    with pytest.raises(SystemExit):
        run_cli("run", "--no-browser")
    assert "no program to run" in capsys.readouterr().err


def test_run_missing_script_is_one_line(tmp_path, capsys):
    assert run_cli("run", tmp_path / "nope.py") == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"compilescope: error: {tmp_path / 'nope.py'}: no such file"]


def test_torch_needing_commands_say_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("compilescope._torch.torch_available", lambda: False)
    monkeypatch.setattr("compilescope.cli.demo.torch_available", lambda: False)
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert run_cli("run", "--no-browser", script) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("compilescope: error: compilescope run needs torch") and INSTALL in line

    with pytest.raises(CompilescopeError, match=INSTALL):
        with compilescope.capture(trace_dir=tmp_path / "t"):
            pass

    # demo falls back to the bundled traces, with a one-line note
    assert run_cli("demo", "-o", tmp_path / "demo", "--no-browser") == 0
    [note] = capsys.readouterr().err.strip().splitlines()
    assert "bundled traces" in note and INSTALL in note
    assert "These are bundled traces" in (tmp_path / "demo" / "index.html").read_text()


def test_run_propagates_status_of_a_program_that_traces_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("compilescope._torch.torch_available", lambda: True)
    code = "import sys; sys.exit(5)"
    assert run_cli("run", "--no-browser", "--trace-dir", tmp_path / "t", "--", sys.executable, "-c", code) == 5
    err = capsys.readouterr().err
    assert "exited with status 5" in err and "wrote no TORCH_TRACE log" in err
    assert (tmp_path / "t").is_dir()  # the directory the user named stays
    # The one compilescope made (compilescope_traces/<time>/) is not left behind empty.
    monkeypatch.chdir(tmp_path)
    assert run_cli("run", "--no-browser", "--", sys.executable, "-c", code) == 5
    assert "wrote no TORCH_TRACE log" in capsys.readouterr().err
    assert list((tmp_path / "compilescope_traces").iterdir()) == []


def test_run_timeout_stops_the_program(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("compilescope._torch.torch_available", lambda: True)
    code = "import time; time.sleep(60)"
    rc = run_cli("run", "--no-browser", "--timeout", "0.5", "--trace-dir", tmp_path / "t", "--", sys.executable, "-c", code)
    assert rc == 128 + 15  # SIGTERM, as a shell reports it
    assert "ran longer than --timeout 0.5s" in capsys.readouterr().err


def test_cache_hits_get_a_note_on_the_index(tmp_path):
    from compilescope.analyses import analyze

    with compilescope.load(torch213("cache_warm.log")) as trace:
        caches = analyze(trace).insights.caches
    assert caches.graphs_missing == ["[0/0]"]
    assert caches.hits() == {"FX graph cache": 1, "AOTAutograd cache": 1}

    warm = compilescope.report(torch213("cache_warm.log"), out=tmp_path / "warm")
    note = open(warm).read()
    assert 'id="cache-note"' in note and "--fresh-cache" in note and "[0/0]" in note
    cold = compilescope.report(torch213("cache_cold.log"), out=tmp_path / "cold")
    assert 'id="cache-note"' not in open(cold).read()


def test_report_refuses_existing_output(tmp_path):
    out = tmp_path / "out"
    compilescope.report(torch213("graph_breaks.log"), out=out)
    with pytest.raises(CompilescopeError, match="already exists"):
        compilescope.report(torch213("graph_breaks.log"), out=out)
    assert compilescope.report(torch213("graph_breaks.log"), out=out, overwrite=True) == str(out / "index.html")


def test_several_logs_report_rank_zero_and_say_so(tmp_path):
    from compilescope.runner import choose_log

    logs = [str(tmp_path / f"dedicated_log_torch_trace_rank_{r}_x.log") for r in (1, 0, 2)]
    chosen, note = choose_log(logs)
    assert chosen == logs[1]
    assert note.startswith("3 logs (ranks 0, 1, 2); reporting rank 0 only")
    assert choose_log(logs[:1]) == (logs[0], None)


COPY_RANK_LOGS = "import os, shutil, sys; [shutil.copy(p, os.environ['TORCH_TRACE']) for p in sys.argv[1:]]"


def test_run_with_several_ranks(tmp_path, capsys, monkeypatch):
    """A child that writes rank logs (here: copies a 4-rank job's) gets one report of every rank."""
    monkeypatch.setattr("compilescope._torch.torch_available", lambda: True)
    ranks = sorted(str(p) for p in peer("multi_rank_logs").glob("*.log"))
    copy = ["--", sys.executable, "-c", COPY_RANK_LOGS, *ranks]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "dedicated_log_torch_trace_rank_7_old.log").write_text("")  # an earlier run's: not this run's
    assert run_cli("run", "--no-browser", "--trace-dir", tmp_path / "t", "-o", tmp_path / "all", *copy) == 0
    assert (tmp_path / "all" / "index.html").is_file()
    assert sorted(p.name for p in (tmp_path / "all").glob("rank_*")) == ["rank_0", "rank_1", "rank_2", "rank_3"]

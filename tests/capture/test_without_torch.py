"""What needs no torch: argument handling, the no-torch messages, the cache note, load()/report()."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

import compilescope
from compilescope.cli import _parser, load_command
from compilescope.cli.run import split_program
from compilescope.errors import CompilescopeError

from ..conftest import run_cli, torch213

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
    err = capsys.readouterr().err
    # named as the other commands run prints name it: relative to where it ran (TORCH_TRACE= keeps its real value)
    [made] = re.findall(r"TORCH_TRACE=(\S+)", err)
    assert f"wrote no TORCH_TRACE log to {os.path.relpath(made)} " in err and os.path.relpath(made).startswith("compilescope_traces")
    assert list((tmp_path / "compilescope_traces").iterdir()) == []


def test_run_timeout_stops_the_program(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("compilescope._torch.torch_available", lambda: True)
    code = "import time; time.sleep(60)"
    rc = run_cli("run", "--no-browser", "--timeout", "0.5", "--trace-dir", tmp_path / "t", "--", sys.executable, "-c", code)
    assert rc == 128 + 15  # SIGTERM, as a shell reports it
    assert "ran longer than --timeout 0.5s" in capsys.readouterr().err


def test_cache_hits_get_a_note_on_the_index(tmp_path):
    from compilescope.analyses.analyze import analyze

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


COPY_LOGS_THEN_EXIT = ("import os, shutil, sys; [shutil.copy(p, os.environ['TORCH_TRACE']) for p in sys.argv[2:]]; "
                       "sys.exit(int(sys.argv[1]))")


def _run_in_a_new_process(tmp_path, status: int, logs: list, trace_dir: str | None = None) -> tuple[list[str], str, str]:
    """`compilescope run -o tmp_path/out --trace-dir tmp_path/t` (or --trace-dir trace_dir, as typed) of a child that
    copies logs into its trace directory and exits with status, in a fresh interpreter: its stdout's lines, its stderr,
    and `RC [rich modules imported]`."""
    argv = ["run", "--no-browser", "--trace-dir", trace_dir or str(tmp_path / "t"), "-o", str(tmp_path / "out"), "--",
            sys.executable, "-c", COPY_LOGS_THEN_EXIT, str(status), *map(str, logs)]
    code = ("import sys, compilescope._torch as t; t.torch_available = lambda: True; "  # (copying a log needs no torch)
            f"from compilescope.cli import main; rc = main({argv!r}); "
            "print(rc, sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *lines, last = proc.stdout.splitlines()
    return lines, proc.stderr, last


def test_run_ends_as_a_report_of_its_log_does(tmp_path, capsys):
    """run printed a rich panel of its own once the program ended, then 'Wrote the report to'. It ends as `compilescope
    LOG` does, in plain lines without rich: graph_breaks.log's three distinct breaks (torch213/README.md: line 18's
    print in log_step twice, in [1/0] and [3/0], lines 23 and 28 of f once each), how many more findings, the summary
    command for the log the program wrote, and the page to open. The program's status is said on stderr."""
    lines, err, last = _run_in_a_new_process(tmp_path, 3, [torch213("graph_breaks.log")])
    assert last == "3 []"  # the program's exit status; no rich module imported
    assert "compilescope: the program exited with status 3; writing the report of what it traced" in err
    log, out = tmp_path / "t" / "graph_breaks.log", tmp_path / "out"
    assert run_cli("summary", "--json", log) == 0
    more = len(json.loads(capsys.readouterr().out)["findings"]) - 3
    assert more > 0 and lines == [
        "Fix first:",
        "  WARN  graph break at graph_breaks.py:18 in log_step (2 compilations)",
        "  WARN  graph break at graph_breaks.py:23 in f (1 compilation)",
        "  WARN  graph break at graph_breaks.py:28 in f (1 compilation)",
        f"  … {more} more; what to do about each: compilescope summary {log}",
        f"Wrote {sum(1 for f in out.rglob('*') if f.is_file())} files to {out}; open {out / 'index.html'}",
    ]
    assert run_cli(log, "-o", tmp_path / "direct", "--no-browser") == 0
    assert capsys.readouterr().out.splitlines()[:-1] == lines[:-1]  # the report of that log, word for word


def test_run_with_several_ranks(tmp_path, capsys):
    """A child that writes rank logs (here: copies those of a real 2-rank job whose rank 1 segfaulted, torch213/README.md)
    gets one report of every rank, and ends as the report of a directory of ranks does, where run printed a rich panel
    of what differs: the rank that crashed and what differs between the ranks, as `summary DIR --json` says them, the
    command that says it rank by rank, and the page to open."""
    crashed = torch213("x").parents[1] / "multi_rank_crash"
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "dedicated_log_torch_trace_rank_7_old.log").write_text("")  # an earlier run's: not this run's
    # --trace-dir typed relative to the working directory: the command printed names it so (it named it by absolute path)
    typed = os.path.relpath(tmp_path / "t")
    lines, err, last = _run_in_a_new_process(tmp_path, 1, sorted(crashed.glob("*.log.gz")), typed)
    assert last == "1 []" and "the program exited with status 1" in err
    out = tmp_path / "out"
    assert (out / "index.html").is_file()
    assert sorted(p.name for p in out.glob("rank_*")) == ["rank_0", "rank_1"]
    assert run_cli("summary", "--json", crashed) == 0
    doc = json.loads(capsys.readouterr().out)
    [said] = [f"rank {r['rank']} crashed: {c['said']}" for r in doc["ranks"] for c in r["crashes"]]
    differs = [d["title"] for d in doc["analysis"]["divergences"]]
    assert said.startswith("rank 1 crashed: Segmentation fault") and 0 < len(differs) <= 2
    assert lines[0] == "Between ranks:"
    assert [line.split(maxsplit=1) for line in lines[1:-2]] == [["ERROR", said]] + [["WARN", d] for d in differs]
    assert lines[-2] == f"  rank by rank: compilescope summary {typed}"
    assert lines[-1].startswith(f"Wrote {sum(1 for f in out.rglob('*') if f.is_file())} files for 2 ranks to {out} ")
    assert lines[-1].endswith(f"; open {out / 'index.html'}")


def test_a_trace_directory_run_made_is_named_as_typed_here(tmp_path, monkeypatch):
    """run names the directory it made (and its log) in the commands it prints as the user would type them where
    they ran it: relative under the current directory, absolute elsewhere (a relative path climbing out of it with
    .. says less than the absolute one)."""
    from compilescope.runner import as_typed_here

    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert as_typed_here(str(tmp_path / "here" / "compilescope_traces" / "t")) == os.path.join("compilescope_traces", "t")
    assert as_typed_here("compilescope_traces/t") == os.path.join("compilescope_traces", "t")
    assert as_typed_here(str(tmp_path / "elsewhere")) == str(tmp_path / "elsewhere")
    assert as_typed_here(str(tmp_path)) == str(tmp_path)
    assert as_typed_here(str(tmp_path / "here" / "..traces")) == "..traces"  # under it, whatever its name starts with


def test_a_background_job_ignoring_sigint_still_ignores_it_as_the_program_starts(tmp_path, monkeypatch):
    # SIGINT inherited ignored (`compilescope run ... &` from a script, nohup) stays ignored though run_program
    # handles signals from before the program starts: not noted, not passed on to the program.
    from compilescope.runner import process

    real_popen = subprocess.Popen

    def popen_then_sigint(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return proc

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        monkeypatch.setattr(process.subprocess, "Popen", popen_then_sigint)
        result = process.run_program(process.Program([sys.executable, "-c", "pass"], this_python=True), str(tmp_path))
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (result.returncode, result.interrupted) == (0, False)

"""Every command that writes files takes -o (or OUT) by the same rules as `compilescope LOG -o`: a URL (memory://
here) is uploaded to, not written as a local folder named like it (`memory:/x/out` in the current directory, as
`report --load`, `diff -o`, `dump-src`, `demo`, `run -o` and `compilescope.report(out=...)` did), and --overwrite there
replaces only a report, never a folder holding the user's files nor the input being read."""

from __future__ import annotations

import os
import shutil
import sys

import orjson
import pytest

import compilescope
from compilescope.errors import CompilescopeError
from compilescope.output import DUMP_SRC_MARK, WRITING_MARK

from .conftest import run_cli, torch213

fsspec = pytest.importorskip("fsspec")

# A script that "runs" by putting a recorded log where TORCH_TRACE says, as torch would have written it.
_COPY_LOG = "import os, shutil, sys\nshutil.copy(sys.argv[1], os.path.join(os.environ['TORCH_TRACE'], 'a.log'))\n"


def _command(name: str, tmp_path, out: str) -> list:
    """The command line of `name` writing to out (every input a real log of tests/data/torch213)."""
    if name == "report --load":
        saved = tmp_path / "saved.json"
        if not saved.exists():
            assert run_cli(torch213("graph_breaks.log"), "-o", tmp_path / "saved_from", "--save", saved,
                           "--no-browser") == 0
        return ["report", "--load", saved, "-o", out, "--no-browser"]
    if name == "diff -o":
        return ["diff", torch213("diff_base.log.gz"), torch213("diff_break.log.gz"), "-o", out, "--no-browser"]
    if name == "dump-src":
        return ["dump-src", torch213("graph_breaks.log"), out]
    if name == "demo":
        return ["demo", "--bundled", "-o", out, "--no-browser"]
    assert name == "run -o"
    script = tmp_path / "p.py"
    script.write_text(_COPY_LOG)
    traces = tmp_path / f"traces-{len(list(tmp_path.glob('traces-*')))}"
    return ["run", "-o", out, "--no-browser", "--trace-dir", traces, "--", sys.executable, script,
            torch213("graph_breaks.log")]


# Exit status of each when it succeeds: diff's two logs differ (the graph break at line 33), so 1, as diff(1).
_COMMANDS = {"report --load": 0, "diff -o": 1, "dump-src": 0, "demo": 0, "run -o": 0}


@pytest.fixture
def memory_root():
    memory = fsspec.filesystem("memory")
    root = f"/compilescope-test-{os.getpid()}-rules"
    yield memory, root
    if memory.exists(root):
        memory.rm(root, recursive=True)


def _local_files(root) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", list(_COMMANDS))
def test_every_command_uploads_to_a_url(tmp_path, monkeypatch, memory_root, name):
    """-o memory://ROOT/out: the files the same command writes to a local directory land under ROOT/out (listed
    through the memory filesystem), nothing elsewhere in it, no mark left, and no folder `memory:` in the current
    directory."""
    if name == "run -o":
        monkeypatch.setattr("compilescope._torch.torch_available", lambda: True)  # (the program needs no torch)
    memory, root = memory_root
    monkeypatch.chdir(tmp_path)
    assert run_cli(*_command(name, tmp_path, str(tmp_path / "plain"))) == _COMMANDS[name]
    plain = _local_files(tmp_path / "plain")
    assert run_cli(*_command(name, tmp_path, f"memory://{root}/out")) == _COMMANDS[name]
    listed = memory.find(root)
    assert listed and all(p.startswith(f"{root}/out/") for p in listed)
    written = {p[len(root) + 5:] for p in listed}
    assert written == plain and WRITING_MARK not in written
    assert not (tmp_path / "memory:").exists()


@pytest.mark.parametrize("name", list(_COMMANDS))
def test_overwrite_at_a_url_keeps_a_folder_of_the_users(tmp_path, monkeypatch, capsys, memory_root, name):
    """--overwrite at a URL that holds no report (a user's notes) is refused, as for a local directory, and the notes
    are kept; `run` says so before the program runs (no trace directory made)."""
    if name == "run -o":
        monkeypatch.setattr("compilescope._torch.torch_available", lambda: True)
    memory, root = memory_root
    monkeypatch.chdir(tmp_path)
    out = f"memory://{root}/out"
    memory.pipe(f"{root}/out/notes.txt", b"mine")
    assert run_cli(*_command(name, tmp_path, out), "--overwrite") == 2
    assert capsys.readouterr().err.endswith(f"compilescope: error: refusing to replace {out}: it does not hold a "
                                            "compilescope report; choose another output directory\n")
    assert memory.find(root) == [f"{root}/out/notes.txt"] and memory.cat_file(f"{root}/out/notes.txt") == b"mine"
    assert not (tmp_path / "memory:").exists() and not list(tmp_path.glob("traces-*"))


def _broken(*args, **kwargs):
    raise RuntimeError("a bug")


def _fail_in(monkeypatch, stage: str) -> None:
    """Make the next report fail in its analysis (before the output directory is made) or in rendering its first page
    (after OutputDir has made it and written the writing mark)."""
    from compilescope import report_writer
    from compilescope.cli import report as report_command

    if stage == "analysis":
        monkeypatch.setattr(report_command, "analyze", _broken)
    else:
        monkeypatch.setattr(report_writer, "report_files", _broken)


@pytest.mark.parametrize("stage", ["analysis", "rendering"])
@pytest.mark.parametrize("at_url", [False, True], ids=["local", "memory"])
@pytest.mark.parametrize("there", [False, True], ids=["missing", "empty"])
def test_a_failed_report_leaves_the_output_as_found(tmp_path, monkeypatch, capsys, memory_root, stage, at_url, there):
    """A report that fails having written nothing leaves OUT as it found it (missing, or an empty directory), so the
    next run needs no --overwrite. The writing mark, put at a URL before the analysis and locally before the first
    page, stayed, and the next run said "OUT already exists; pass --overwrite" for a report never written."""
    memory, root = memory_root
    out = f"memory://{root}/out" if at_url else str(tmp_path / "out")
    if there:
        memory.mkdir(f"{root}/out") if at_url else os.mkdir(out)

    def listed() -> list[str] | None:
        if at_url:
            return [p.rsplit("/", 1)[-1] for p in memory.ls(f"{root}/out", detail=False)] if memory.exists(
                f"{root}/out") else None
        return os.listdir(out) if os.path.lexists(out) else None

    log = torch213("graph_breaks.log")
    _fail_in(monkeypatch, stage)
    monkeypatch.delenv("COMPILESCOPE_DEBUG", raising=False)
    assert run_cli(log, "-o", out, "--no-browser") == 3
    assert "internal error: RuntimeError: 'a bug'" in capsys.readouterr().err
    assert listed() == ([] if there else None)
    monkeypatch.undo()
    assert run_cli(log, "-o", out, "--no-browser") == 0
    assert "index.html" in listed() and WRITING_MARK not in listed()


@pytest.mark.parametrize("at_url", [False, True], ids=["local", "memory"])
def test_a_failed_overwrite_keeps_the_mark_it_found(tmp_path, monkeypatch, memory_root, at_url):
    """OUT holding only the mark of a run stopped earlier, replaced with --overwrite by a run that fails: OUT still
    holds the mark (as found), so it stays compilescope's to replace, never a folder of the user's."""
    memory, root = memory_root
    out = f"memory://{root}/out" if at_url else str(tmp_path / "out")
    if at_url:
        memory.pipe(f"{root}/out/{WRITING_MARK}", b"stopped")
    else:
        os.mkdir(out)
        (tmp_path / "out" / WRITING_MARK).write_bytes(b"stopped")
    log = torch213("graph_breaks.log")
    _fail_in(monkeypatch, "rendering")
    monkeypatch.delenv("COMPILESCOPE_DEBUG", raising=False)
    assert run_cli(log, "-o", out, "--no-browser", "--overwrite") == 3
    if at_url:
        assert memory.find(root) == [f"{root}/out/{WRITING_MARK}"]
    else:
        assert os.listdir(out) == [WRITING_MARK]
    monkeypatch.undo()
    assert run_cli(log, "-o", out, "--no-browser", "--overwrite") == 0


def test_a_failed_diff_leaves_no_output_directory(tmp_path, monkeypatch, capsys):
    """diff -o OUT makes OUT before it reads the two logs: an analysis that fails there left OUT holding only the
    writing mark."""
    from compilescope.cli import diff as diff_command

    out = tmp_path / "out"
    monkeypatch.setattr(diff_command, "analyze", _broken)
    monkeypatch.delenv("COMPILESCOPE_DEBUG", raising=False)
    logs = [torch213("diff_base.log.gz"), torch213("diff_break.log.gz")]
    assert run_cli("diff", *logs, "-o", out, "--no-browser") == 3
    assert "internal error: RuntimeError: 'a bug'" in capsys.readouterr().err
    assert not out.exists()


def test_several_logs_stopped_before_the_upload_leave_the_url_as_found(tmp_path, monkeypatch, memory_root):
    """Several logs to a URL are uploaded once every report is written: Ctrl-C before then has put nothing there but
    the mark, which goes too (a stop during the upload keeps it: tests/test_cli.py)."""
    from compilescope.cli import batch

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    memory, root = memory_root
    monkeypatch.setattr(batch, "batch_files", interrupted)
    logs = [torch213("graph_breaks.log"), torch213("recompiles.log")]
    assert run_cli(*logs, "-o", f"memory://{root}/out", "--no-browser", "-j", "1") == 130
    assert not memory.exists(f"{root}/out")


def test_diagnose_refuses_a_url(tmp_path, monkeypatch, capsys):
    """diagnose's page gives commands that run the minifier's files from OUT, so OUT is a local directory: a URL is
    refused in one line before the program runs, and nothing is written (it was a local folder named `memory:`)."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "p.py"
    script.write_text("raise SystemExit('never run')\n")
    assert run_cli("diagnose", "-o", "memory://x/out", "--no-browser", "--", sys.executable, script) == 2
    assert capsys.readouterr().err == ("compilescope: error: -o memory://x/out: diagnose writes to a local directory "
                                       "(its commands run the files it writes there); give a local path, and copy it "
                                       "to the URL after\n")
    assert sorted(os.listdir(tmp_path)) == ["p.py"]


def test_report_load_never_deletes_the_saved_analysis(tmp_path, capsys):
    """`report --load OUT/s.json -o OUT --overwrite` (OUT an earlier report): the saved file is the input, kept as a
    log is. Only the log it names was kept, so --overwrite deleted the file being loaded."""
    out = tmp_path / "out"
    assert run_cli(torch213("graph_breaks.log"), "-o", out, "--save", out / "s.json", "--no-browser") == 0
    before = (out / "s.json").read_bytes()
    capsys.readouterr()
    assert run_cli("report", "--load", out / "s.json", "-o", out, "--overwrite", "--no-browser") == 2
    assert capsys.readouterr().err == (f"compilescope: error: refusing to replace {out}: it contains the saved "
                                       "analysis being read; choose another output directory\n")
    assert (out / "s.json").read_bytes() == before and (out / "index.html").is_file()


@pytest.mark.parametrize("source", ["log", "saved", "trace", "results"])
def test_the_api_uploads_to_a_url(tmp_path, monkeypatch, memory_root, source):
    """compilescope.report(source, out="memory://ROOT/out") writes what out=DIR writes, under ROOT/out, and returns
    the URL of its index.html; it wrote a local folder `memory:/ROOT/out`."""
    memory, root = memory_root
    monkeypatch.chdir(tmp_path)
    log = torch213("graph_breaks.log")
    assert run_cli(log, "-o", tmp_path / "saved_from", "--save", tmp_path / "s.json", "--no-browser") == 0

    def report(out: str) -> str:
        if source == "log":
            return compilescope.report(log, out)
        if source == "saved":
            return compilescope.report(tmp_path / "s.json", out)
        with compilescope.analyze(log) as results:
            return compilescope.report(results.trace if source == "trace" else results, out)

    assert report(str(tmp_path / "plain")) == str(tmp_path / "plain" / "index.html")
    assert report(f"memory://{root}/out") == f"memory://{root}/out/index.html"
    listed = memory.find(root)
    assert listed and all(p.startswith(f"{root}/out/") for p in listed)
    assert {p[len(root) + 5:] for p in listed} == _local_files(tmp_path / "plain")
    assert not (tmp_path / "memory:").exists()


def test_the_api_keeps_a_folder_of_the_users_and_the_log_at_a_url(tmp_path, monkeypatch, memory_root):
    """out a URL holding the user's notes: refused, with overwrite=True too. out a URL holding an earlier report and
    the log being reported (read from there): refused, the log kept; no input was given to the URL's check, and the
    report went to a local folder instead."""
    memory, root = memory_root
    monkeypatch.chdir(tmp_path)
    out = f"memory://{root}/out"
    memory.pipe(f"{root}/out/notes.txt", b"mine")
    with pytest.raises(CompilescopeError, match="it does not hold a compilescope report"):
        compilescope.report(torch213("graph_breaks.log"), out, overwrite=True)
    assert memory.find(root) == [f"{root}/out/notes.txt"]

    memory.rm(f"{root}/out/notes.txt")
    compilescope.report(torch213("graph_breaks.log"), out)  # an earlier report: replaceable
    log = torch213("graph_breaks.log").read_bytes()
    memory.pipe(f"{root}/out/logs/graph_breaks.log", log)
    with pytest.raises(CompilescopeError, match=f"refusing to replace {out}: it contains the log being read"):
        compilescope.report(f"{out}/logs/graph_breaks.log", out, overwrite=True)
    assert memory.cat_file(f"{root}/out/logs/graph_breaks.log") == log and memory.isfile(f"{root}/out/index.html")
    assert not (tmp_path / "memory:").exists()


def test_diff_names_a_url_as_typed(tmp_path, monkeypatch, capsys, memory_root):
    """diff of two logs read from memory://: the terminal, the page and diff.json name each side by its URL, its own
    absolute form (os.path.abspath made it a local-looking CWD/memory:/ROOT/a.log.gz)."""
    memory, root = memory_root
    monkeypatch.chdir(tmp_path)
    a, b = f"memory://{root}/a.log.gz", f"memory://{root}/b.log.gz"
    memory.pipe(f"{root}/a.log.gz", torch213("diff_base.log.gz").read_bytes())
    memory.pipe(f"{root}/b.log.gz", torch213("diff_break.log.gz").read_bytes())
    assert run_cli("diff", a, b, "-o", tmp_path / "out", "--no-browser") == 1  # (a graph break at line 33 in B)
    terminal = capsys.readouterr().out
    assert terminal.startswith(f"A {a}\nB {b}\n")
    doc = orjson.loads((tmp_path / "out" / "diff.json").read_bytes())
    assert (doc["a"], doc["b"]) == (a, b)
    page = (tmp_path / "out" / "index.html").read_text()
    assert a in page and b in page
    for shown in (terminal, page, (tmp_path / "out" / "diff.json").read_text()):
        assert f"{tmp_path}{os.sep}memory:" not in shown  # (no URL made a local path)
    assert not (tmp_path / "memory:").exists()


def test_check_names_a_url_as_typed(tmp_path, monkeypatch, capsys, memory_root):
    """check --json and --junit of logs read from memory:// name them by their URLs (os.path.abspath made them a
    local-looking CWD/memory:/ROOT/b.log.gz)."""
    memory, root = memory_root
    monkeypatch.chdir(tmp_path)
    a, b = f"memory://{root}/a.log.gz", f"memory://{root}/b.log.gz"
    memory.pipe(f"{root}/a.log.gz", torch213("diff_base.log.gz").read_bytes())
    memory.pipe(f"{root}/b.log.gz", torch213("diff_break.log.gz").read_bytes())
    assert run_cli("check", b, "--baseline", a, "--json", "--junit", tmp_path / "junit.xml") == 1  # (B's new break)
    doc = orjson.loads(capsys.readouterr().out)
    assert (doc["log"], doc["baseline"]) == (b, a)
    junit = (tmp_path / "junit.xml").read_text()
    assert b in junit and "memory:/" + root not in junit.replace(b, "")
    assert not (tmp_path / "memory:").exists()


def test_save_to_a_url_and_load_it_back(tmp_path, monkeypatch, capsys, memory_root):
    """--save memory://ROOT/s.json writes the saved analysis there, through the memory filesystem (it was a plain local
    write to ./memory:/ROOT/s.json); the same bytes as --save to a local file, refused over an existing one without
    --overwrite, and `report --load` of the URL writes the report the local file gives."""
    memory, root = memory_root
    monkeypatch.chdir(tmp_path)
    log = torch213("graph_breaks.log")
    assert run_cli(log, "-o", tmp_path / "from_log", "--save", tmp_path / "s.json", "--no-browser") == 0
    url = f"memory://{root}/saved/s.json"
    capsys.readouterr()
    assert run_cli(log, "-o", tmp_path / "from_log_2", "--save", url, "--no-browser") == 0
    assert f"Saved the analysis to {url}\n" in capsys.readouterr().out
    assert memory.find(root) == [f"{root}/saved/s.json"]
    assert memory.cat_file(f"{root}/saved/s.json") == (tmp_path / "s.json").read_bytes()
    assert not (tmp_path / "memory:").exists()

    assert run_cli(log, "-o", tmp_path / "from_log_3", "--save", url, "--no-browser") == 2
    assert capsys.readouterr().err.endswith(f"compilescope: error: {url} already exists; pass --overwrite to replace "
                                            "it\n")
    assert run_cli(log, "-o", tmp_path / "from_log_3", "--save", f"memory://{root}/saved", "--no-browser",
                   "--overwrite") == 2
    assert capsys.readouterr().err.endswith(f"compilescope: error: memory://{root}/saved is a directory; choose another "
                                            "file\n")

    assert run_cli("report", "--load", tmp_path / "s.json", "-o", tmp_path / "plain", "--no-browser") == 0
    assert run_cli("report", "--load", url, "-o", tmp_path / "loaded", "--no-browser") == 0
    plain = _local_files(tmp_path / "plain")
    assert plain and _local_files(tmp_path / "loaded") == plain
    assert all((tmp_path / "loaded" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes() for name in plain)
    assert not (tmp_path / "memory:").exists()


@pytest.mark.parametrize("at_url", [False, True], ids=["local", "url"])
def test_dump_src_overwrite_replaces_its_own_output(tmp_path, monkeypatch, capsys, memory_root, at_url):
    """dump-src --overwrite replaces an earlier dump-src (its mark says the directory is its own: depyf's layout has
    no index.html, so it refused its own output as a folder of the user's), files of the earlier run gone, and still
    refuses a folder of the user's, which it leaves as it was."""
    memory, root = memory_root
    monkeypatch.chdir(tmp_path)
    out = f"memory://{root}/dump" if at_url else str(tmp_path / "dump")

    def listed() -> set[str]:
        if at_url:
            return {p[len(root) + 6:] for p in memory.find(root)}
        return _local_files(tmp_path / "dump")

    assert run_cli("dump-src", torch213("transformed_code.log"), out) == 0
    first = listed()
    assert DUMP_SRC_MARK in first and WRITING_MARK not in first
    # Another log's dump over it: the first's files that the second does not write are gone.
    assert run_cli("dump-src", torch213("provenance.log"), out) == 2
    assert capsys.readouterr().err.endswith(f"compilescope: error: {out} already exists; pass --overwrite to replace "
                                            "it\n")
    assert run_cli("dump-src", torch213("provenance.log"), out, "--overwrite") == 0
    second = listed()
    assert DUMP_SRC_MARK in second and "__transformed_code_0_for_f.py" in first - second
    assert "__compiled_fn_0_0 Backward graph 0.py" in second - first

    user = f"memory://{root}/mine" if at_url else str(tmp_path / "mine")
    if at_url:
        memory.pipe(f"{root}/mine/notes.py", b"mine")
    else:
        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "notes.py").write_bytes(b"mine")
    capsys.readouterr()
    assert run_cli("dump-src", torch213("provenance.log"), user, "--overwrite") == 2
    assert capsys.readouterr().err.endswith(f"compilescope: error: refusing to replace {user}: it does not hold a "
                                            "compilescope report; choose another output directory\n")
    kept = memory.cat_file(f"{root}/mine/notes.py") if at_url else (tmp_path / "mine" / "notes.py").read_bytes()
    assert kept == b"mine"
    assert not (tmp_path / "memory:").exists()


def test_a_refusal_says_what_the_output_holds(tmp_path, monkeypatch, capsys):
    """--overwrite over a report holding an input names what it would have deleted: a directory of rank logs is
    the trace directory, a program's script the program being run (both were "the log being read"; the saved
    analysis of report --load: test_report_load_never_deletes_the_saved_analysis)."""
    monkeypatch.setattr("compilescope._torch.torch_available", lambda: True)  # (the program needs no torch)
    out = tmp_path / "out"
    assert run_cli(torch213("graph_breaks.log"), "-o", out, "--no-browser") == 0  # a report: replaceable
    ranks = out / "ranks"
    shutil.copytree(torch213("../multi_rank"), ranks)
    script = out / "p.py"
    script.write_text("raise SystemExit('never run')\n")
    capsys.readouterr()
    assert run_cli(ranks, "-o", out, "--overwrite", "--no-browser") == 2
    assert capsys.readouterr().err == (f"compilescope: error: refusing to replace {out}: it contains the trace "
                                       "directory; choose another output directory\n")
    assert run_cli("run", "-o", out, "--overwrite", "--no-browser", "--trace-dir", tmp_path / "traces", "--",
                   sys.executable, script) == 2
    assert capsys.readouterr().err == (f"compilescope: error: refusing to replace {out}: it contains the program being "
                                       "run (or a file its command line names); choose another output directory\n")
    assert script.is_file() and (ranks / os.listdir(torch213("../multi_rank"))[0]).is_file()
    assert (out / "index.html").is_file() and not (tmp_path / "traces").exists()

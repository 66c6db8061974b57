"""CLI behaviour around paths and output directories."""

import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import compilescope
from compilescope.ingest.discover import discover
from compilescope.location import local_output

from .conftest import peer, report, run_cli, shared, skip_or_fail, torch213, torch213_moved, torch214


def test_missing_path_is_one_line_error(tmp_path, capsys):
    assert run_cli(tmp_path / "nope.log", "-o", tmp_path / "out", "--no-browser") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"compilescope: error: {tmp_path / 'nope.log'}: no such file or directory"]


def test_gzip_log_reads_like_plain(tmp_path):
    gz = tmp_path / "simple.log.gz"
    gz.write_bytes(gzip.compress(peer("simple.log").read_bytes()))
    assert report(gz, tmp_path / "a") == report(peer("simple.log"), tmp_path / "b")


def test_directory_picks_newest_log(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(peer("comp_metrics.log"), logs / "dedicated_log_torch_trace_a.log")
    shutil.copy(peer("simple.log"), logs / "dedicated_log_torch_trace_b.log")
    os.utime(logs / "dedicated_log_torch_trace_a.log", (1, 1))
    directory = report(logs, tmp_path / "out")
    assert "[0/0]" in directory and "[2/0]" not in directory  # simple.log, the newer one
    assert "reading dedicated_log_torch_trace_b.log" in capsys.readouterr().err


def test_directory_without_torch_names_chooses_the_log_by_content(tmp_path, capsys):
    """No dedicated_log_* file: a newer readme.txt, notes.log or a .gz that is not a trace is not the log."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(peer("simple.log"), logs / "trace.log")
    os.utime(logs / "trace.log", (1, 1))
    (logs / "readme.txt").write_text("How these logs were made: TORCH_TRACE=. python train.py\n")
    (logs / "notes.log").write_text("\n\nnot a trace either\n")
    (logs / "old.log.gz").write_bytes(gzip.compress(b"hello\n"))
    directory = report(logs, tmp_path / "out")
    assert directory == report(peer("simple.log"), tmp_path / "simple")
    assert "reading trace.log" not in capsys.readouterr().err  # it is the only log there: no choice to explain
    (logs / "later.txt.gz").write_bytes(gzip.compress(peer("comp_metrics.log").read_bytes()))  # a newer real trace
    assert "[2/0]" in report(logs, tmp_path / "out2")
    assert "2 logs in" in capsys.readouterr().err


def test_directory_with_the_runs_stderr_reads_the_trace(tmp_path, capsys):
    """A real run's directory: its TORCH_TRACE log and its captured stderr (output.txt), whose lines have the
    same glog prefix (TORCH_LOGS, autotuning's errors) but no envelope. The stderr is newer; the log is read."""
    run = shared("gpu-torch211/autotune_cudagraphs/output.txt").parent
    logs = tmp_path / "run"
    shutil.copytree(run, logs)
    trace = next(logs.glob("dedicated_log_torch_trace*.log"))
    os.utime(trace, (1, 1))
    assert (logs / "output.txt").read_bytes().startswith(b"E1122 ")  # glog-prefixed, and the newest file
    assert report(logs, tmp_path / "out") == report(trace, tmp_path / "direct")
    assert "logs in" not in capsys.readouterr().err  # the trace is the only log: no choice made
    # Behind a URL the files are listed, not read: torch's name for the log wins over the newer output.txt.
    found = discover(f"file://{logs}")
    assert (os.path.basename(found.chosen), found.note) == (trace.name, None)


def test_folder_of_runs_latest_reads_the_newest_runs_log(tmp_path, capsys):
    """`run` leaves compilescope_traces/<time>/ (a log and its report/): the parent holds no log itself. --latest
    reads the newest log of the run folder written last; without it, the error names that folder."""
    traces = tmp_path / "compilescope_traces"
    (traces / "20261126-090000" / "report").mkdir(parents=True)
    (traces / "20261126-100000" / "report").mkdir(parents=True)
    shutil.copy(peer("comp_metrics.log"), traces / "20261126-090000" / "dedicated_log_torch_trace_a.log")
    shutil.copy(peer("simple.log"), traces / "20261126-100000" / "dedicated_log_torch_trace_b.log")
    os.utime(traces / "20261126-090000" / "dedicated_log_torch_trace_a.log", (1, 1))
    assert run_cli(traces, "-o", tmp_path / "none", "--no-browser") == 2
    err = capsys.readouterr().err
    assert "2 of its folders hold some" in err and f"the newest: {traces / '20261126-100000'}" in err
    assert "[0/0]" in report(traces, tmp_path / "out", "--latest")
    assert f"reading dedicated_log_torch_trace_b.log from {traces / '20261126-100000'}" in capsys.readouterr().err
    found = discover(str(traces), latest=True)
    assert found.logs == [str(traces / "20261126-100000" / "dedicated_log_torch_trace_b.log")]
    # The newest run was distributed (torchrun): --latest reads one rank's log, and says where the others are.
    ranks = traces / "20261126-110000"
    ranks.mkdir()
    for rank in (0, 1):
        shutil.copy(peer("simple.log"), ranks / f"dedicated_log_torch_trace_rank_{rank}_x.log")
    note = discover(str(traces), latest=True).note
    assert note.endswith("that folder holds the logs of ranks 0, 1: give it, without --latest, for every rank")
    assert str(ranks) in note


def test_empty_directory_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert run_cli(tmp_path / "empty", "-o", tmp_path / "out", "--no-browser") == 2
    assert "no TORCH_TRACE logs" in capsys.readouterr().err


def _files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("logs", [
    ["graph_breaks.log"],
    ["graph_breaks.log", "dynamic_shapes.log"],  # a report per log and the page listing them
    ["../multi_rank"],  # a directory of rank logs: rank_<N>/ and the landing page
], ids=["one log", "several logs", "ranks"])
def test_file_url_output_is_written_as_its_path(tmp_path, capsys, logs):
    """`-o file:///DIR` writes what `-o /DIR` writes, file for file and byte for byte (no file of a report holds its
    output directory, so nothing is masked), and ends the same. It was an internal error: the URL went to fsspec's
    upload, whose local filesystem makes no directories (the first file, sources.json, had none to go in)."""
    paths = [torch213(log) for log in logs]
    assert run_cli(*paths, "-o", tmp_path / "plain", "--no-browser") == 0
    plain = capsys.readouterr().out
    assert run_cli(*paths, "-o", f"file://{tmp_path / 'url'}/", "--no-browser") == 0
    url = capsys.readouterr().out
    written = _files(tmp_path / "url")
    assert "index.html" in written and written == _files(tmp_path / "plain")

    # The same ending (the page to open included), but for the directory and the time it took.
    def ending(out: str, name: str) -> str:
        return re.sub(r" in \d+\.\ds ", " in Ns ", out.replace(str(tmp_path / name), "OUT"))

    assert ending(url, "url") == ending(plain, "plain")
    assert "open OUT/index.html" in ending(url, "url")


def test_file_url_output_names_the_path_a_file_url_log_is_read_from(tmp_path, monkeypatch):
    """A file:// output is the directory fsspec would read a file:// log from (relative without a third /), and the
    API's report(out=...) takes one as the command line does."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        skip_or_fail("fsspec not installed (the test extra installs it)")
    monkeypatch.chdir(tmp_path)
    for url in (f"file://{tmp_path}/out/", "file://out", "file://a/b/"):
        assert local_output(url) == url_to_fs(url)[1]
    assert (local_output("out"), local_output("s3://bucket/out")) == ("out", "s3://bucket/out")
    index = compilescope.report(torch213("graph_breaks.log"), f"file://{tmp_path}/api")
    assert index == str(tmp_path / "api" / "index.html") and os.path.isfile(index)


@pytest.mark.parametrize("logs", [["graph_breaks.log"], ["../multi_rank"]], ids=["one log", "ranks"])
def test_url_output_to_a_filesystem_with_directories(tmp_path, logs):
    """`-o local:///DIR` (fsspec's local filesystem, named by a protocol other than file://, so written through
    fsspec as sftp's would be: a filesystem with real directories) writes what `-o DIR` writes. It was an internal
    error: the upload made no directories, so the first file had none to go in; a rank's spooled events neither."""
    pytest.importorskip("fsspec")
    paths = [torch213(log) for log in logs]
    assert run_cli(*paths, "-o", tmp_path / "plain", "--no-browser", "-j", "2") == 0
    assert run_cli(*paths, "-o", f"local://{tmp_path / 'url'}", "--no-browser", "-j", "2") == 0
    written = _files(tmp_path / "url")
    assert "index.html" in written and written == _files(tmp_path / "plain")


@pytest.mark.parametrize("logs", [
    ["graph_breaks.log"],
    ["graph_breaks.log", "dynamic_shapes.log"],
    ["../multi_rank"],
], ids=["one log", "several logs", "ranks"])
@pytest.mark.parametrize("wrapper", ["dir::file://", "simplecache::file://", "dir::memory://"])
def test_chained_url_output_lands_exactly_at_the_location(tmp_path, logs, wrapper):
    """`-o dir::memory://BASE` (and dir:: on a local path) wrote every file under BASE/BASE/...: fsspec roots a dir::
    URL's filesystem at the URL's path and also returns that path as the one within it, so the prefix was applied
    twice. What lands under the asked location, listed through its own filesystem, is what `-o DIR` writes, and
    nothing lands anywhere else; simplecache:: (which wraps without a prefix) the same."""
    fsspec = pytest.importorskip("fsspec")
    paths = [torch213(log) for log in logs]
    assert run_cli(*paths, "-o", tmp_path / "plain", "--no-browser", "-j", "2") == 0
    plain = _files(tmp_path / "plain")
    if wrapper.endswith("file://"):
        assert run_cli(*paths, "-o", f"{wrapper}{tmp_path / 'url'}", "--no-browser", "-j", "2") == 0
        assert sorted(os.listdir(tmp_path)) == ["plain", "url"]
        written = _files(tmp_path / "url")
    else:
        memory = fsspec.filesystem("memory")
        root = f"/compilescope-test-{os.getpid()}-{len(logs)}"
        try:
            assert run_cli(*paths, "-o", f"{wrapper}{root}/base", "--no-browser", "-j", "2") == 0
            # Every file of the memory filesystem under root, as the memory filesystem itself lists it.
            listed = memory.find(root)
            assert all(p.startswith(f"{root}/base/") for p in listed) and listed
            written = {p[len(root) + 6:]: memory.cat_file(p) for p in listed}
        finally:
            if memory.exists(root):
                memory.rm(root, recursive=True)
    assert "index.html" in written and written.keys() == plain.keys()
    assert written == plain


@pytest.mark.parametrize("logs", [["graph_breaks.log"], ["../multi_rank"]], ids=["one log", "ranks"])
@pytest.mark.parametrize("named", ["absolute", "relative"])
def test_a_chain_over_a_plain_path_is_written_at_that_path(tmp_path, monkeypatch, capsys, logs, named):
    """`-o dir::/DIR` (an fsspec chain whose location is a plain path, which fsspec opens on the local filesystem)
    writes what `-o /DIR` writes, and ends the same, page to open included; a relative one from the current
    directory, as fsspec reads it. Such a chain was taken for a local path: the report went to a directory literally
    named `dir::` under the current one."""
    pytest.importorskip("fsspec")
    paths = [torch213(log) for log in logs]
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    assert run_cli(*paths, "-o", tmp_path / "plain", "--no-browser", "-j", "2") == 0
    plain = capsys.readouterr().out
    asked = f"dir::{tmp_path / 'chained'}" if named == "absolute" else "dir::../chained"
    assert run_cli(*paths, "-o", asked, "--no-browser", "-j", "2") == 0
    chained = capsys.readouterr().out
    assert list(work.iterdir()) == []
    written = _files(tmp_path / "chained")
    assert "index.html" in written and written == _files(tmp_path / "plain")

    def ending(out: str, name: str) -> str:  # (but for the directory and the time it took)
        return re.sub(r" in \d+\.\ds ", " in Ns ", out.replace(str(tmp_path / name), "OUT"))

    assert ending(chained, "chained") == ending(plain, "plain") and "; open OUT/index.html\n" in ending(plain, "plain")


@pytest.mark.parametrize("chain", ["dir::", "dir::file://"])
def test_overwrite_through_a_chain_replaces_only_a_report(tmp_path, capsys, chain):
    """`-o dir::DIR --overwrite` is `-o DIR --overwrite`: a directory that holds no report is kept, as it is. Through
    fsspec, every file in it was deleted."""
    pytest.importorskip("fsspec")
    kept = tmp_path / "notes"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    assert run_cli(torch213("graph_breaks.log"), "-o", f"{chain}{kept}", "--overwrite", "--no-browser") == 2
    assert capsys.readouterr().err == (f"compilescope: error: refusing to replace {kept}: it does not hold a "
                                       "compilescope report; choose another output directory\n")
    assert _files(kept) == {"notes.txt": b"mine"}


_KINDS = {  # what -o is given for: one log, several logs, a directory of rank logs
    "one log": ["graph_breaks.log"],
    "several logs": ["graph_breaks.log", "recompiles.log"],
    "ranks": ["../multi_rank"],
}


@pytest.mark.parametrize("kind", list(_KINDS))
@pytest.mark.parametrize("wrapper", ["memory://", "dir::memory://", "simplecache::memory://"])
def test_overwrite_at_a_url_replaces_only_a_report(tmp_path, capsys, wrapper, kind):
    """`-o URL --overwrite` replaces what `-o DIR --overwrite` replaces: a report (its index.html at the top, or the
    mark of a run stopped before it), never a directory that holds none. Through fsspec, every file in it was
    deleted. A real earlier report at the URL is still replaced, and no mark is left behind once the report is whole."""
    fsspec = pytest.importorskip("fsspec")
    from compilescope.output import WRITING_MARK

    memory = fsspec.filesystem("memory")
    root = f"/compilescope-test-{os.getpid()}-{abs(hash((wrapper, kind)))}"
    out = f"{wrapper}{root}/out"
    logs = [torch213(log) for log in _KINDS[kind]]
    try:
        memory.pipe(f"{root}/out/notes.txt", b"mine")
        assert run_cli(*logs, "-o", out, "--overwrite", "--no-browser") == 2
        assert capsys.readouterr().err == (f"compilescope: error: refusing to replace {out}: it does not hold a "
                                           "compilescope report; choose another output directory\n")
        assert memory.find(root) == [f"{root}/out/notes.txt"] and memory.cat_file(f"{root}/out/notes.txt") == b"mine"

        memory.rm(f"{root}/out/notes.txt")
        assert run_cli(*logs, "-o", out, "--no-browser") == 0
        memory.pipe(f"{root}/out/stale.txt", b"from the earlier report")
        assert run_cli(*logs, "-o", out, "--overwrite", "--no-browser") == 0
        written = {p[len(root) + 5:] for p in memory.find(root)}
        assert "index.html" in written and "stale.txt" not in written and WRITING_MARK not in written
    finally:
        if memory.exists(root):
            memory.rm(root, recursive=True)


@pytest.mark.parametrize("kind", ["several logs", "ranks"])
def test_overwrite_at_a_url_replaces_a_run_stopped_before_its_index(tmp_path, monkeypatch, capsys, kind):
    """A run stopped before its index.html (Ctrl-C) with reports already at the URL leaves compilescope's mark there,
    as in a local directory: --overwrite replaces it; once the mark is gone (and no index.html), the directory is
    refused. Several logs are uploaded at the end (stopped part way through the upload here); each rank's report goes
    to the URL as it is written (stopped here before the landing page)."""
    fsspec = pytest.importorskip("fsspec")
    from compilescope import output
    from compilescope.cli import multirank
    from compilescope.output import WRITING_MARK

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    upload_dir = output.upload_dir

    def upload_stopped(local, url):  # one log's report reaches the URL, then Ctrl-C
        first = min(name for name in os.listdir(local) if os.path.isdir(os.path.join(local, name)))
        upload_dir(os.path.join(local, first), f"{url}/{first}")
        raise KeyboardInterrupt

    if kind == "several logs":
        monkeypatch.setattr(output, "upload_dir", upload_stopped)
    else:
        monkeypatch.setattr(multirank.LandingRenderer, "from_results", interrupted)
    memory = fsspec.filesystem("memory")
    root = f"/compilescope-test-{os.getpid()}-stopped-{kind.replace(' ', '-')}"
    out = f"memory://{root}/out"
    logs = [torch213(log) for log in _KINDS[kind]]
    try:
        assert run_cli(*logs, "-o", out, "--no-browser", "-j", "1") == 130
        assert memory.isfile(f"{root}/out/{WRITING_MARK}") and not memory.exists(f"{root}/out/index.html")
        assert any(p.endswith("/index.html") for p in memory.find(f"{root}/out"))  # the report it did put there
        monkeypatch.undo()
        assert run_cli(*logs, "-o", out, "--no-browser", "-j", "1", "--overwrite") == 0
        assert memory.isfile(f"{root}/out/index.html") and not memory.exists(f"{root}/out/{WRITING_MARK}")
        memory.rm(f"{root}/out/index.html")
        capsys.readouterr()
        assert run_cli(*logs, "-o", out, "--no-browser", "-j", "1", "--overwrite") == 2
        assert "it does not hold a compilescope report" in capsys.readouterr().err
    finally:
        if memory.exists(root):
            memory.rm(root, recursive=True)


@pytest.mark.parametrize("kind", list(_KINDS))
@pytest.mark.parametrize("named", ["file://", "dir::", "dir::file://"])
def test_overwrite_never_deletes_an_input_named_by_url(tmp_path, capsys, kind, named):
    """An output directory that holds the input is never replaced, however the input is named: a log (or a directory
    of rank logs) inside OUT named `file:///OUT/...` or `dir::/OUT/...` was not seen to be inside it, and --overwrite
    deleted it with the earlier report."""
    pytest.importorskip("fsspec")
    out = tmp_path / "out"
    assert run_cli(torch213("graph_breaks.log"), "-o", out, "--no-browser") == 0  # a real report: replaceable
    (out / "inputs").mkdir()
    inputs = []
    for log in _KINDS[kind]:
        source = torch213(log).resolve()
        kept = out / "inputs" / source.name
        if source.is_dir():
            shutil.copytree(source, kept)
        else:
            shutil.copy(source, kept)
        inputs.append(kept)
    before = _files(out / "inputs")
    capsys.readouterr()
    assert run_cli(*[f"{named}{p}" for p in inputs], "-o", out, "--overwrite", "--no-browser") == 2
    # (a directory of rank logs is read as one: what it holds is said as such)
    what = "the trace directory" if kind == "ranks" else "the log being read"
    assert capsys.readouterr().err == (f"compilescope: error: refusing to replace {out}: it contains {what}; choose "
                                       "another output directory\n")
    assert _files(out / "inputs") == before and (out / "index.html").is_file()


def test_a_chain_of_an_unknown_protocol_says_how_to_name_a_local_path(tmp_path, monkeypatch, capsys):
    """`notes::v2` reads as an fsspec chain; fsspec knows no protocol `notes`: one line, with how to write a local
    path whose name has `::` in it, and nothing written."""
    pytest.importorskip("fsspec")
    monkeypatch.chdir(tmp_path)
    assert run_cli(torch213("graph_breaks.log"), "-o", "notes::v2", "--no-browser") == 2
    assert capsys.readouterr().err == ("compilescope: error: notes::v2: Protocol not known: notes (a local path with "
                                       "'::' in its name: ./notes::v2)\n")
    assert list(tmp_path.iterdir()) == []
    assert run_cli(torch213("graph_breaks.log"), "-o", "./notes::v2", "--no-browser") == 0
    assert (tmp_path / "notes::v2" / "index.html").is_file()


@pytest.mark.parametrize("log", ["graph_breaks.log", "../multi_rank"], ids=["one log", "ranks"])
def test_a_log_read_through_a_chain_over_a_plain_path(tmp_path, log):
    """A log (or a directory of rank logs) named `dir::PATH` is read through fsspec as PATH: the same report, file for
    file, but for the name it is shown by. It was looked for as a local file named `dir::PATH`: no such file."""
    pytest.importorskip("fsspec")
    path = torch213(log).resolve()  # (no ..: a local path is shown made absolute, a chain as given)
    assert run_cli(path, "-o", tmp_path / "plain", "--no-browser") == 0
    assert run_cli(f"dir::{path}", "-o", tmp_path / "chained", "--no-browser") == 0
    written = {name: content.replace(f"dir::{path}".encode(), str(path).encode())
               for name, content in _files(tmp_path / "chained").items()}
    assert "index.html" in written and written == _files(tmp_path / "plain")
    # The name it was given is the one shown (not a file's name under the current directory).
    assert f"dir::{path}".encode() in _files(tmp_path / "chained")["index.html"]


def test_existing_output_needs_overwrite(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    # --overwrite replaces only a report directory (issue 16): this one is not one, which is said at once, not
    # after the user has added --overwrite as a first message told them to.
    for flags in ((), ("--overwrite",)):
        assert run_cli(peer("simple.log"), "-o", out, "--no-browser", *flags) == 2
        assert (out / "precious.txt").read_text() == "keep me"
        assert capsys.readouterr().err.strip() == (f"compilescope: error: refusing to replace {out}: it does not hold "
                                                   "a compilescope report; choose another output directory")
    (out / "precious.txt").unlink()
    assert run_cli(peer("simple.log"), "-o", out, "--no-browser") == 0
    assert run_cli(peer("simple.log"), "-o", out, "--no-browser") == 2  # a report: --overwrite would replace it
    assert "already exists; pass --overwrite to replace it" in capsys.readouterr().err
    (out / "stale.txt").write_text("from an older report")
    assert run_cli(peer("simple.log"), "-o", out, "--no-browser", "--overwrite") == 0
    assert not (out / "stale.txt").exists()


@pytest.mark.parametrize("kind", ["several logs", "all ranks"])
def test_overwrite_replaces_a_run_stopped_before_its_index(kind, tmp_path, monkeypatch):
    # A run of several logs or ranks writes its index.html last: Ctrl-C before it leaves compilescope's own
    # unfinished directory, which --overwrite replaces (it refused: "does not hold a compilescope report").
    from compilescope.cli import batch, multirank
    from compilescope.output import WRITING_MARK

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    if kind == "several logs":
        inputs = [torch213("graph_breaks.log"), torch213("recompiles.log")]
        monkeypatch.setattr(batch, "batch_files", interrupted)
    else:
        inputs = [torch213("graph_breaks.log").parent.parent / "multi_rank", "--all-ranks-html"]
        monkeypatch.setattr(multirank.LandingRenderer, "from_results", interrupted)
    out = tmp_path / "out"
    assert run_cli(*inputs, "-o", out, "--no-browser", "-j", "1") == 130
    assert not (out / "index.html").exists() and (out / WRITING_MARK).is_file()
    assert any(p.name == "index.html" for p in out.glob("*/index.html"))  # the reports it did write
    monkeypatch.undo()
    assert run_cli(*inputs, "-o", out, "--no-browser", "-j", "1", "--overwrite") == 0
    assert (out / "index.html").is_file() and not (out / WRITING_MARK).exists()
    # The mark is compilescope's alone: a directory without it or an index.html is still refused.
    (out / "index.html").unlink()
    assert run_cli(*inputs, "-o", out, "--no-browser", "-j", "1", "--overwrite") == 2


def test_plain_text_writes_code_as_txt(tmp_path):
    directory = report(peer("simple.log"), tmp_path / "out", "-p")
    code = [a for a in directory["[0/0]"]["artifacts"] if a["name"].startswith("inductor_output_code")]
    assert code and code[0]["url"].endswith(".txt")
    assert "def call(args)" in (tmp_path / "out" / code[0]["url"]).read_text()


def test_custom_header_html_is_inserted(tmp_path):
    report(peer("simple.log"), tmp_path / "out", "--custom-header-html", "<b id=hdr>Team X</b>")
    assert "<b id=hdr>Team X</b>" in (tmp_path / "out" / "index.html").read_text()


def test_a_report_prints_what_to_fix_first_and_the_page_to_open(tmp_path, capsys):
    """Where no browser opens (--no-browser, a remote machine), a report said only how many files it wrote, even of
    a program that segfaulted. It prints the findings its page leads with, in the summary's words, the command that
    says what to do about them, and the page to open."""
    crash = torch213("native_crash.log.gz")  # a program that segfaulted in its compiled code (logs/README.md)
    out = tmp_path / "crash"
    assert run_cli(crash, "-o", out, "--no-browser") == 0
    lines = capsys.readouterr().out.splitlines()
    assert run_cli("summary", "--json", crash) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert lines[0] == "Fix first:"
    assert lines[1].startswith("  ERROR  the program crashed: Segmentation fault")
    assert [line.split(maxsplit=1)[1] for line in lines[1:-2]] == [f["title"] for f in findings]
    assert lines[-2] == f"  what to do about each: compilescope summary {crash}"
    assert lines[-1].endswith(f" to {out}; open {out / 'index.html'}") and (out / "index.html").exists()
    # Past three findings, the rest are counted, not printed.
    optimizer = torch213("compiled_optimizer.log.gz")
    assert run_cli(optimizer, "-o", tmp_path / "optimizer", "--no-browser") == 0
    lines = capsys.readouterr().out.splitlines()
    assert run_cli("summary", "--json", optimizer) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert len(findings) > 3 and [line.split(maxsplit=1)[1] for line in lines[1:4]] == [f["title"] for f in findings[:3]]
    assert lines[4].startswith(f"  … {len(findings) - 3} more; what to do about each: compilescope summary ")


def test_a_report_of_a_saved_analysis_prints_what_to_fix_first_as_the_log_does(tmp_path, capsys):
    """`report --load` said only how many files it wrote. A saved analysis is the log's: the same findings, and the
    command that says what to do about them while the log is here; once it is gone, the report is where to look
    (no command names a log that is not there)."""
    log = tmp_path / "recompiles.log"
    log.write_bytes(torch213("recompiles.log").read_bytes())
    assert run_cli(log, "-o", tmp_path / "direct", "--no-browser") == 0
    direct = capsys.readouterr().out.splitlines()
    assert run_cli(log, "-o", tmp_path / "saving", "--no-browser", "--save", tmp_path / "s.json") == 0
    capsys.readouterr()
    loaded = tmp_path / "loaded"
    assert run_cli("report", "--load", tmp_path / "s.json", "-o", loaded, "--no-browser") == 0
    lines = capsys.readouterr().out.splitlines()
    assert direct[0] == "Fix first:" and lines[:-1] == direct[:-1]
    assert lines[-2] == f"  what to do about each: compilescope summary {log}"
    assert lines[-1] == f"Wrote {sum(1 for f in loaded.rglob('*') if f.is_file())} files to {loaded}; open {loaded / 'index.html'}"
    log.unlink()
    assert run_cli("report", "--load", tmp_path / "s.json", "-o", tmp_path / "again", "--no-browser") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:-2] == direct[:-2]
    assert lines[-2] == "  what to do about each: the report's Insights (its log is not here for compilescope summary)"


def test_summary_and_check_of_one_log_import_no_html_renderer_nor_the_ranks_reader():
    """They print to the terminal: Jinja2 and the HTML renderer (whose template cache the CLI turns on), the
    multi-rank reader (worker processes) and, with no --profile, the run-time analysis are for other commands. A check
    with no --baseline compares no two runs: the diff (analyses.diff and its modules) is for --baseline."""
    for argv in (["summary", str(torch213("training.log"))], ["check", str(torch213("training.log"))]):
        code = ("import sys; from compilescope.cli import main; rc = main(" + repr(argv) + "); "
                "print(rc, sorted(m for m in sys.modules if m.startswith(('jinja2', 'compilescope.render.html', "
                "'compilescope.analyses.diff')) or m in "
                "('compilescope.report_writer', 'compilescope.cli.multirank', 'compilescope.analyses.runtime')))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.splitlines()[-1] == "0 []", argv


def test_check_with_a_baseline_still_imports_the_diff():
    """The other side of the lazy import above: --baseline compares two runs, through the diff."""
    argv = ["check", str(torch213("training.log")), "--baseline", str(torch214("training.log"))]
    code = ("import sys; from compilescope.cli import main; rc = main(" + repr(argv) + "); "
            "print(rc, 'compilescope.analyses.diff.analysis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "0 True"


def test_version_imports_no_command_module():
    """`--version` answers before the report command (and its analyses, Jinja2) is imported, and before argparse,
    the terminal guard and what they import (re, typing): its start-up is all of its cost."""
    code = ("import sys; before = set(sys.modules); from compilescope.cli import main; rc = main(['--version']); "
            "print(rc, sorted(m for m in sys.modules if m.startswith(('compilescope.analyses', 'compilescope.render', 'jinja2'))"
            " or (m in ('argparse', 're', 'typing', 'compilescope.cli.terminal_guard') and m not in before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    from compilescope import __version__

    assert out.splitlines() == [f"compilescope {__version__}", "0 []"]


def _report_in_a_new_process(log, out, expression: str) -> str:
    """`compilescope LOG -o OUT` in a fresh interpreter; its exit code and the value of expression after it."""
    code = ("import sys; from compilescope.cli import main; "
            f"rc = main([{str(log)!r}, '-o', {str(out)!r}, '--no-browser']); print(rc, {expression})")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = proc.stdout.strip().splitlines()[-1]
    # (a report that failed says why on stderr: shown in the assertion, as a run of the whole suite once gave rc 2)
    return result if result.startswith("0 ") else f"{result} {proc.stderr.strip()[-2000:]}"


def test_writing_a_report_does_not_import_rich(tmp_path):
    """rich costs about 0.1 s of start-up; a report of a small log must not pay it (it is for `summary`)."""
    imported = "sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.'))"
    assert _report_in_a_new_process(torch213("graph_breaks.log"), tmp_path / "out", imported) == "0 []"


def test_the_reports_of_several_logs_ranks_or_a_saved_analysis_print_findings_without_rich(tmp_path):
    """They print what their pages lead with, as plain text: rich (for `summary`) stays out of their start-up too."""
    saved = tmp_path / "saved.json"
    assert run_cli(torch213("recompiles.log"), "-o", tmp_path / "saving", "--no-browser", "--save", saved) == 0
    imported = "sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.'))"
    for name, argv in (("logs", [torch213("recompiles.log"), torch213("training.log")]),
                       ("ranks", [torch213("x").parents[1] / "multi_rank"]), ("saved", ["report", "--load", saved])):
        out = tmp_path / name
        code = (f"import sys; from compilescope.cli import main; rc = main({[str(a) for a in argv]!r} + "
                f"['-o', {str(out)!r}, '--no-browser']); print(rc, {imported})")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert proc.stdout.splitlines()[-1] == "0 []", name
        assert proc.stdout.startswith(("Fix first", "Between ranks")), name


# Modules a plain report of one log imports only when the log or the flags need them (start-up time: each is
# imported by the one place that needs it). A new eager import of one of these fails here.
NOT_FOR_A_PLAIN_REPORT = (
    "compilescope.decompile.core",  # a log with torch's modified bytecode to decompile
    "compilescope.ingest.profile", "compilescope.model.profile", "compilescope.analyses.runtime",  # --profile
    "compilescope.ingest.saved", "compilescope.model.codec",  # --load, --save
    "compilescope.analyses.log_digest", "compilescope.analyses.rank_summary",  # several logs, several ranks
    "compilescope.log_job", "compilescope.ingest.rank_logs",  # the per-log job (batches, ranks), a directory's ranks
    "compilescope.cli.batch", "compilescope.cli.multirank", "compilescope.cli.executors",
    *(f"compilescope.cli.{name}" for name in ("run", "demo", "summary", "diagnose", "dump_src", "diff", "check", "serve")),
    "compilescope.analyses.diff", "compilescope.analyses.check", "compilescope.analyses.diagnosis",
    "compilescope.render.terminal", "rich", "pkgutil", "torch",
    "mmap", "signal", "traceback",  # a report written by several processes (a big log's; traceback: one of them failed)
    "ahocorasick",  # a log with provenance
    "gzip",  # a .gz log (or a .gz log beside it, or --save FILE.gz)
    "compilescope.analyses.recompiles.models",  # a recompile on a dtype (a model's parameters of another dtype)
    "html.parser", "compilescope.render.html.header",  # --custom-header-html (html.parser compiles ~20 patterns)
)


def test_a_plain_report_imports_only_what_its_log_needs(tmp_path):
    imported = f"sorted(m for m in {NOT_FOR_A_PLAIN_REPORT!r} if m in sys.modules)"
    assert _report_in_a_new_process(torch213("compile_error_lowering.log"), tmp_path / "out", imported) == "0 []"
    assert (tmp_path / "out" / "index.html").is_file()


# What op_mutations reads of a log whose graphs call custom ops: the ops' definitions (and their patterns), what
# their bodies write, the reads moved past their calls. A log that calls none imports none of it.
FOR_CUSTOM_OP_CALLS = ("compilescope.analyses.op_mutations.definitions", "compilescope.analyses.op_mutations.op_bodies",
                       "compilescope.analyses.op_mutations.moved_reads")


def test_a_report_of_a_log_without_custom_op_calls_imports_nothing_to_read_their_definitions(tmp_path):
    imported = f"sorted(m for m in {FOR_CUSTOM_OP_CALLS!r} if m in sys.modules)"
    assert _report_in_a_new_process(torch213("training.log"), tmp_path / "out", imported) == "0 []"
    # (the other side: a log whose op writes undeclared, its program where the log says, imports all of it)
    log = torch213_moved("custom_op_train_mutation.log.gz", tmp_path)
    assert _report_in_a_new_process(log, tmp_path / "ops", imported) == f"0 {sorted(FOR_CUSTOM_OP_CALLS)!r}"


# What the recompiles analysis reads of a frame compiled again: its steps' guards placed, its advice, and what the
# other analyses add to it (links). A log that recompiled nothing, as most, imports none of it (start-up).
FOR_RECOMPILED_FRAMES = tuple(f"compilescope.analyses.recompiles.{name}" for name in (
    "frames", "advice", "lengths", "placement", "settings", "subclasses", "links"))


def test_a_report_of_a_log_that_recompiled_nothing_imports_nothing_to_explain_recompiles(tmp_path):
    imported = f"sorted(m for m in {FOR_RECOMPILED_FRAMES!r} if m in sys.modules)"
    assert _report_in_a_new_process(torch213("training.log"), tmp_path / "out", imported) == "0 []"
    # (the other side: a log that recompiled imports all of it)
    assert _report_in_a_new_process(torch213("recompiles.log"), tmp_path / "rec", imported) == f"0 {sorted(FOR_RECOMPILED_FRAMES)!r}"


# What provenance reads of a log run with INDUCTOR_PROVENANCE=1: its sections, line maps, kernel stacks and notes, and
# the pages' line maps. A log without provenance artifacts, as most, imports none of it (start-up).
FOR_PROVENANCE = ("compilescope.analyses.line_map", *(f"compilescope.analyses.provenance.{name}" for name in (
    "sections", "line_mappings", "stack_traces", "inferred_nodes", "kernel_notes")))


def test_a_report_of_a_log_without_provenance_imports_nothing_to_read_it(tmp_path):
    imported = f"sorted(m for m in {FOR_PROVENANCE!r} if m in sys.modules)"
    assert _report_in_a_new_process(torch213("training.log"), tmp_path / "out", imported) == "0 []"
    # (the other side: a log with provenance imports all of it)
    assert _report_in_a_new_process(torch213("provenance.log"), tmp_path / "prov", imported) == f"0 {sorted(FOR_PROVENANCE)!r}"


def test_a_report_of_a_log_that_skipped_no_frame_imports_no_index_of_its_compiles(tmp_path):
    """The compiles are indexed (graph_breaks.compile_index) to tell what ran before a frame Dynamo skipped after a
    break or a failure: a log that skipped none, as most, does not import it."""
    imported = "'compilescope.analyses.graph_breaks.compile_index' in sys.modules"
    assert _report_in_a_new_process(torch213("training.log"), tmp_path / "out", imported) == "0 False"
    # (the other side: the recompile of the step's loss.item() fails, and Dynamo skips the frame)
    assert _report_in_a_new_process(torch213("amp_train_step_clip.log.gz"), tmp_path / "clip", imported) == "0 True"


def test_a_log_with_bytecode_to_decompile_still_imports_the_decompiler(tmp_path):
    """The other side of the lazy import above: the log that needs it gets it, and its page."""
    imported = "'compilescope.decompile.core' in sys.modules"
    assert _report_in_a_new_process(torch213("graph_breaks.log"), tmp_path / "out", imported) == "0 True"
    assert list((tmp_path / "out").glob("**/transformed*.html"))


@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_fewer_than_one_job_is_a_usage_error(jobs, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the program would write, had it run
    script = tmp_path / "train.py"
    script.write_text("open('ran', 'w').close()\n")
    log = torch213("recompiles.log")
    for argv in ([log, "-j", jobs, "-o", tmp_path / "out", "--no-browser"], ["summary", "-j", jobs, log],
                 ["run", "-j", jobs, "--no-browser", "-o", tmp_path / "out", script]):  # (run: ours before the script)
        assert run_cli(*argv) == 2, argv
        assert capsys.readouterr().err == "compilescope: error: -j/--jobs must be 1 or more\n"
    assert not (tmp_path / "out").exists() and not (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", ["run", "diagnose"])
@pytest.mark.parametrize("seconds", ["0", "-1"])
def test_a_timeout_of_no_time_is_a_usage_error(command, seconds, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the program would write, had it run
    (tmp_path / "train.py").write_text("open('ran', 'w').close()\n")
    assert run_cli(command, "--timeout", seconds, "--no-browser", "-o", tmp_path / "out", "train.py") == 2
    assert capsys.readouterr().err == "compilescope: error: --timeout must be more than 0\n"
    assert sorted(os.listdir(tmp_path)) == ["train.py"]  # nothing ran, no trace or output directory made


@pytest.mark.parametrize("command", ["run", "diagnose"])
def test_a_log_given_as_the_program_is_refused_and_the_commands_that_read_it_named(command, tmp_path, capsys,
                                                                                   monkeypatch):
    # `compilescope diagnose trace.log` ran `python trace.log`, which fails on the log's first line (a glog prefix
    # is no Python), and diagnose then blamed the program: "fails even with torch.compile disabled".
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "trace" / "dedicated_log_torch_trace_x.log"
    log.parent.mkdir()
    shutil.copy(torch213("recompiles.log"), log)
    assert log.read_text().startswith("V")  # the glog prefix: Python cannot run it
    for given, what in ((log, "a TORCH_TRACE log"), (log.parent, "a directory of TORCH_TRACE logs")):
        assert run_cli(command, "--no-browser", "-o", tmp_path / "out", given) == 2
        assert capsys.readouterr().err == (
            f"compilescope: error: {given} is {what}, not a program to run: read it with compilescope summary {given} "
            f"(or compilescope {given} for its report); run a program as script.py, -m module, or -- command\n")
    assert sorted(os.listdir(tmp_path)) == ["trace"]  # nothing ran, no output directory made


def test_a_mistyped_command_is_named_in_the_missing_path_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("sumary", "x.log") == 2
    assert capsys.readouterr().err == ("compilescope: error: sumary: no such file or directory; "
                                       "did you mean `compilescope summary`?\n")
    assert run_cli("dump_src", "x.log", "out") == 2
    assert capsys.readouterr().err.endswith("did you mean `compilescope dump-src`?\n")
    # A missing log's name is not a command's, however close; and a log that is there is read, whatever its name.
    assert run_cli("diff.log", "--no-browser") == 2
    assert capsys.readouterr().err == "compilescope: error: diff.log: no such file or directory\n"
    shutil.copy(torch213("recompiles.log"), tmp_path / "sumary")
    assert run_cli("sumary", "-o", tmp_path / "out", "--no-browser") == 0
    assert (tmp_path / "out" / "index.html").exists()


def test_custom_header_html_stays_in_its_box(tmp_path):
    """A header with an unclosed comment hid the whole report (the browser read the page as that comment), and one
    with `</main>` closed the page's own element: the header is balanced, its script kept."""
    header = '<div><b>Team <i>build</b> 42</table></main><script>var team = "<b>";</script><!-- note'
    report(peer("simple.log"), tmp_path / "out", "--custom-header-html", header)
    page = (tmp_path / "out" / "index.html").read_text()
    assert ('<div class="custom-header"><div><b>Team <i>build</i></b> 42<script>var team = "<b>";</script>'
            '&lt;!-- note</div></div>') in page
    assert page.count("</main>") == 1


def test_verbose_strict_lists_each_problem_once(tmp_path, capsys):
    """-v lists every problem of a cut log; --strict listed them all again before its count."""
    cut = tmp_path / "training.log"
    cut.write_bytes(torch213("training.log").read_bytes()[:30000])
    assert run_cli(cut, "-o", tmp_path / "out", "--no-browser", "-v", "--strict") == 1
    err = capsys.readouterr().err.splitlines()
    problems = [line.strip() for line in err if line.strip().startswith("line ")]
    assert len(problems) == 2 and len(set(problems)) == 2
    assert err[-1].endswith("2 problems in " + str(cut) + " (strict mode)")

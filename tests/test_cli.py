"""CLI behaviour around paths and output directories."""

import gzip
import os
import shutil
import subprocess
import sys

from .conftest import peer, report, run_cli


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


def test_empty_directory_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert run_cli(tmp_path / "empty", "-o", tmp_path / "out", "--no-browser") == 2
    assert "no TORCH_TRACE logs" in capsys.readouterr().err


def test_existing_output_needs_overwrite(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert run_cli(peer("simple.log"), "-o", out, "--no-browser") == 2
    assert (out / "precious.txt").read_text() == "keep me"
    assert "--overwrite" in capsys.readouterr().err
    assert run_cli(peer("simple.log"), "-o", out, "--no-browser", "--overwrite") == 0
    assert not (out / "precious.txt").exists()


def test_plain_text_writes_code_as_txt(tmp_path):
    directory = report(peer("simple.log"), tmp_path / "out", "-p")
    code = [a for a in directory["[0/0]"]["artifacts"] if a["name"].startswith("inductor_output_code")]
    assert code and code[0]["url"].endswith(".txt")
    assert "def call(args)" in (tmp_path / "out" / code[0]["url"]).read_text()


def test_custom_header_html_is_inserted(tmp_path):
    report(peer("simple.log"), tmp_path / "out", "--custom-header-html", "<b id=hdr>Team X</b>")
    assert "<b id=hdr>Team X</b>" in (tmp_path / "out" / "index.html").read_text()


def test_version_imports_no_command_module():
    """`--version` answers before the report command (and its analyses, Jinja2) is imported."""
    code = ("import sys; from compilescope.cli import main; rc = main(['--version']); "
            "print(rc, sorted(m for m in sys.modules if m.startswith(('compilescope.analyses', 'compilescope.render', 'jinja2'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    from compilescope import __version__

    assert out.splitlines() == [f"compilescope {__version__}", "0 []"]

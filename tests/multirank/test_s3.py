"""Rank logs read from s3:// and the report written to s3://, against a real S3 server (moto, server mode, 127.0.0.1)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..conftest import run_cli, skip_or_fail
from .conftest import Landing, peer_dir
from .test_executors import TORCH213_RANKS, _distributed, tree

BUCKET = "traces"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3:
    """The server's filesystem (for the test to put and get objects) and the environment that points a program at it."""

    def __init__(self, fs, env: dict[str, str]):
        self.fs = fs
        self.env = env

    def cli(self, *args) -> subprocess.CompletedProcess:
        """compilescope in a process of its own, started with the credentials and endpoint in its environment
        (as a user's shell would), so its workers, forked or spawned, and dask's all see them."""
        return subprocess.run([sys.executable, "-m", "compilescope", *map(str, args)], env={**os.environ, **self.env},
                              capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server in its own process on a free port of 127.0.0.1."""
    try:
        import moto.server  # noqa: F401
        import s3fs
    except ImportError:
        skip_or_fail("moto[server] and s3fs not installed (the test extra installs them)")
    port = _free_port()
    log = open(tmp_path_factory.mktemp("moto") / "server.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log)
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}",
    }
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"moto server did not start on port {port}")
                time.sleep(0.2)
        fs = s3fs.S3FileSystem(key="testing", secret="testing", endpoint_url=env["AWS_ENDPOINT_URL_S3"], skip_instance_cache=True)
        fs.mkdir(BUCKET)
        yield S3(fs, env)
    finally:
        server.terminate()
        server.wait(10)
        log.close()


def _upload(s3: S3, src: Path, prefix: str) -> str:
    for p in sorted(src.iterdir()):
        s3.fs.put_file(str(p), f"{BUCKET}/{prefix}/{p.name}")
    return f"s3://{BUCKET}/{prefix}"


def _download(s3: S3, url: str, dest: Path) -> Path:
    root = url.removeprefix("s3://")
    for key in s3.fs.find(root):
        target = dest / key[len(root) + 1:]
        target.parent.mkdir(parents=True, exist_ok=True)
        s3.fs.get_file(key, str(target))
    return dest


def _masked(files: dict[str, bytes], local_dir: Path, url: str) -> dict[str, bytes]:
    """The report with the input's location written one way (the local path and the URL name the same logs)."""
    return {name: body.replace(url.encode(), str(local_dir).encode()) for name, body in files.items()}


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_s3_input_and_s3_report_equal_the_local_report(executor, s3, tmp_path):
    if executor == "dask":
        _distributed()
    src = peer_dir("multi_rank_logs")
    url = _upload(s3, src, f"in-{executor}/multi_rank_logs")
    out_url = f"s3://{BUCKET}/out-{executor}/report"
    run = s3.cli(url, "-o", out_url, "--no-browser", "-j", "2", "--executor", executor)  # several ranks: all-ranks report
    assert run.returncode == 0, run.stderr
    assert not s3.fs.exists(f"{BUCKET}/out-{executor}/report/.compilescope-spool")
    remote = Landing(_download(s3, out_url, tmp_path / "remote"))
    assert sorted(remote.ranks) == [0, 1, 2, 3]
    assert remote.ranks[1]["source"] == f"{url}/dedicated_log_torch_trace_rank_1.log"
    assert remote.groups("compile_ids") == [[0, 2], [1], [3]]
    # The same report as from the local directory, once the logs' location is written the same way.
    assert run_cli(src, "--all-ranks-html", "-o", tmp_path / "local", "--no-browser", "-j", "1") == 0
    assert _masked(tree(remote.out), src, url) == tree(tmp_path / "local")
    # raw.log is the rank's log, streamed from S3.
    assert (remote.out / "rank_3" / "raw.log").read_bytes() == (src / "dedicated_log_torch_trace_rank_3.log").read_bytes()


def test_s3_gzipped_rank_logs_and_overwrite(s3, tmp_path):
    import gzip

    gz = tmp_path / "gz"
    gz.mkdir()
    for p in TORCH213_RANKS.iterdir():
        (gz / (p.name + ".gz")).write_bytes(gzip.compress(p.read_bytes()))
    url = _upload(s3, gz, "gz")
    out_url = f"s3://{BUCKET}/gz-out"
    assert s3.cli(url, "--all-ranks-html", "-o", out_url, "--no-browser", "-j", "1").returncode == 0
    # A second run refuses to replace the report unless asked, like a local directory.
    again = s3.cli(url, "--all-ranks-html", "-o", out_url, "--no-browser", "-j", "1")
    assert again.returncode != 0 and "already exists; pass --overwrite" in again.stderr
    assert s3.cli(url, "--all-ranks-html", "-o", out_url, "--no-browser", "-j", "1", "--overwrite").returncode == 0
    remote = Landing(_download(s3, out_url, tmp_path / "remote"))
    assert remote.ranks[1]["compile_ids"] == ["[0/0]", "[0/1]"]
    for rank in (0, 1):  # kept compressed, as stored (never expanded into the report)
        log = gz / f"dedicated_log_torch_trace_rank_{rank}.log.gz"
        assert (remote.out / f"rank_{rank}" / "raw.log.gz").read_bytes() == log.read_bytes()


def test_missing_s3_directory_is_one_line_error(s3, tmp_path):
    run = s3.cli(f"s3://{BUCKET}/nothing-here", "--all-ranks-html", "-o", tmp_path / "out", "--no-browser")
    assert run.returncode != 0
    assert run.stderr.startswith("compilescope: error:") and "Traceback" not in run.stderr and len(run.stderr.splitlines()) == 1


def test_s3_single_log_report(s3, tmp_path):
    """One log behind a URL (not a directory of ranks): its report, written to s3:// too."""
    log = TORCH213_RANKS / "dedicated_log_torch_trace_rank_1.log"
    url = _upload(s3, TORCH213_RANKS, "single")
    run = s3.cli(f"{url}/{log.name}", "-o", f"s3://{BUCKET}/single-out", "--no-browser")
    assert run.returncode == 0, run.stderr
    assert f"to s3://{BUCKET}/single-out" in run.stdout
    remote = _download(s3, f"s3://{BUCKET}/single-out", tmp_path / "remote")
    assert (remote / "raw.log").read_bytes() == log.read_bytes()
    assert list(json.loads((remote / "compile_directory.json").read_text())) == ["[-/-]", "[0/0]", "[0/1]"]


def test_s3_report_of_several_logs_equals_the_local_one(s3, tmp_path):
    """Several logs given at once, written to s3://: the same files as written to a local directory, and nothing
    written here (it had made a local directory ./s3:/traces/... in the working directory)."""
    logs = sorted(TORCH213_RANKS.glob("*.log"))[:2]
    local = tmp_path / "local"
    assert run_cli(*logs, "-o", local, "--no-browser") == 0
    work = tmp_path / "cwd"
    work.mkdir()
    run = subprocess.run([sys.executable, "-m", "compilescope", *map(str, logs), "-o", f"s3://{BUCKET}/several-out",
                          "--no-browser"], env={**os.environ, **s3.env}, capture_output=True, text=True, timeout=300,
                         cwd=work)
    assert run.returncode == 0, run.stderr
    assert run.stdout.rstrip().splitlines()[-1].startswith("Wrote ") and f"to s3://{BUCKET}/several-out in " in run.stdout
    assert "; open " not in run.stdout  # no page here to open
    assert list(work.iterdir()) == []
    remote = _download(s3, f"s3://{BUCKET}/several-out", tmp_path / "remote")
    assert tree(remote) == tree(local)


def test_s3_upload_asks_for_nothing_but_the_files(s3, tmp_path, monkeypatch):
    """S3 has no directories: a report's upload puts each file and makes no other request (making the directories
    a filesystem with real ones needs would cost S3 a request each)."""
    import s3fs

    from compilescope import output

    report = tmp_path / "report"
    (report / "rank_0" / "sources").mkdir(parents=True)
    files = {"index.html": "landing", "rank_0/index.html": "rank", "rank_0/sources/a.html": "source"}
    for name, text in files.items():
        (report / name).write_text(text)
    for key, value in s3.env.items():  # (this process reaches the server as the CLI's do)
        monkeypatch.setenv(key, value)
    requests: list[str] = []
    call_s3 = s3fs.S3FileSystem._call_s3

    async def counted(self, method, *args, **kwargs):
        requests.append(method)
        return await call_s3(self, method, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", counted)
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        output.upload_dir(str(report), f"s3://{BUCKET}/upload")
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    assert requests == ["put_object"] * len(files)
    assert {name: s3.fs.cat_file(f"{BUCKET}/upload/{name}").decode() for name in files} == files


def test_s3_overwrite_never_deletes_the_logs_being_read(s3):
    url = _upload(s3, TORCH213_RANKS, "precious/logs")
    run = s3.cli(url, "--all-ranks-html", "-o", f"s3://{BUCKET}/precious", "--no-browser", "--overwrite")
    assert run.returncode != 0 and run.stderr == (f"compilescope: error: refusing to replace s3://{BUCKET}/precious: it "
                                                  "contains the trace directory; choose another output directory\n")
    assert len(s3.fs.ls(f"{BUCKET}/precious/logs")) == 2


@pytest.mark.parametrize("logs", [[TORCH213_RANKS / "dedicated_log_torch_trace_rank_0.log"], [TORCH213_RANKS]],
                         ids=["one log", "ranks"])
def test_s3_overwrite_replaces_only_a_report(s3, logs):
    """`-o s3://... --overwrite` replaces a report, never a prefix that holds none: every object under it was deleted.
    A real earlier report there is replaced, and the mark of a run under way is gone once the report is whole."""
    prefix = f"{BUCKET}/notes-{len(logs[0].name)}"
    s3.fs.pipe(f"{prefix}/notes.txt", b"mine")
    run = s3.cli(*logs, "-o", f"s3://{prefix}", "--no-browser", "--overwrite", "-j", "1")
    assert run.returncode == 2 and run.stderr == (f"compilescope: error: refusing to replace s3://{prefix}: it does not "
                                                  "hold a compilescope report; choose another output directory\n")
    s3.fs.invalidate_cache()
    assert s3.fs.find(prefix) == [f"{prefix}/notes.txt"] and s3.fs.cat_file(f"{prefix}/notes.txt") == b"mine"
    s3.fs.rm(f"{prefix}/notes.txt")
    assert s3.cli(*logs, "-o", f"s3://{prefix}", "--no-browser", "-j", "1").returncode == 0
    s3.fs.pipe(f"{prefix}/stale.txt", b"from the earlier report")
    run = s3.cli(*logs, "-o", f"s3://{prefix}", "--no-browser", "--overwrite", "-j", "1")
    assert run.returncode == 0, run.stderr
    s3.fs.invalidate_cache()
    written = {key[len(prefix) + 1:] for key in s3.fs.find(prefix)}
    assert "index.html" in written and "stale.txt" not in written and ".compilescope-writing" not in written


def test_s3_summary_json_of_a_rank_directory(s3):
    url = _upload(s3, TORCH213_RANKS, "summary/logs")
    run = s3.cli("summary", "--json", url)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["source"] == url
    assert [(r["rank"], r["compile_ids"]) for r in doc["ranks"]] == [(0, ["[0/0]"]), (1, ["[0/0]", "[0/1]"])]


def test_missing_credentials_are_one_clear_line(s3, tmp_path):
    # botocore's own error, not an OSError: it was an "internal error" before.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ENDPOINT_URL_S3": s3.env["AWS_ENDPOINT_URL_S3"], "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_CONFIG_FILE": str(tmp_path / "none")})
    proc = subprocess.run([sys.executable, "-m", "compilescope", f"s3://{BUCKET}/missing", "-o", tmp_path / "out",
                           "--no-browser"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"compilescope: error: s3://{BUCKET}/missing: NoCredentialsError: Unable to locate credentials"]

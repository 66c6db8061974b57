"""compilescope serve: list, open, compare in Chromium; only 127.0.0.1, the token, and the runs' own reports."""

from __future__ import annotations

import gzip
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest

from ..browser import browser_page
from ..conftest import run_cli, skip_or_fail, torch213
from .helpers import log


@pytest.fixture
def runs_dir(tmp_path):
    root = tmp_path / "compilescope_traces"
    for i, name in enumerate(("cold", "warm")):
        run = root / f"2026-01-0{i + 1}_run_{name}"
        run.mkdir(parents=True)
        shutil.copyfile(log(name), run / f"dedicated_log_torch_trace_{name}.log")
        old = time.time() - 3600 * (2 - i)  # warm is newer; neither is live
        os.utime(run / f"dedicated_log_torch_trace_{name}.log", (old, old))
    # The oldest run was recorded by `compilescope run` (programs/torch_warnings.py): it knows what torch printed.
    recorded = root / "2025-12-31_run_warnings"
    recorded.mkdir()
    (recorded / "dedicated_log_torch_trace_warnings.log").write_bytes(
        gzip.decompress(torch213("torch_warnings.log.gz").read_bytes()))
    old = time.time() - 3 * 3600
    os.utime(recorded / "dedicated_log_torch_trace_warnings.log", (old, old))
    (tmp_path / "secret.txt").write_text("not a run")
    # Links out of the runs directory are not runs (they could lead anywhere).
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile(log("cold"), outside / "dedicated_log_torch_trace_outside.log")
    (root / "linked_run").symlink_to(outside)
    (root / "2026-01-01_run_cold" / "dedicated_log_torch_trace_zlink.log").symlink_to(tmp_path / "secret.txt")
    return root


def start_hub(runs_dir, env=None) -> tuple[subprocess.Popen, dict]:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        skip_or_fail("the serve extra is not installed (pip install -e '.[test]')")
    proc = subprocess.Popen([sys.executable, "-m", "compilescope", "serve", str(runs_dir), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    m = re.search(r"(http://127\.0\.0\.1:(\d+)/([\w-]+)/)", line)
    if not m:
        proc.kill()
        pytest.fail(line + proc.stderr.read())
    return proc, {"url": m[1], "port": int(m[2]), "token": m[3], "dir": runs_dir}


def test_a_run_is_what_discover_reads_as_a_log(tmp_path):
    """list_runs had its own rule (a log's suffix alone): a program's printed output saved as .txt beside the runs was
    listed as one. Now it is discover's: torch's name, or a log's suffix and a trace's first line."""
    from compilescope.cli.serve import list_runs

    root = tmp_path / "runs"
    root.mkdir()
    shutil.copyfile(torch213("custom_op_define_mutation.output.txt"), root / "program.output.txt")  # what it printed
    (root / "lowering.txt.gz").write_bytes(gzip.compress(torch213("compile_error_lowering.log").read_bytes()))
    (root / "empty.log").write_bytes(b"")
    assert [(r.name, r.logs) for r in list_runs(str(root))] == [("lowering.txt.gz", (str(root / "lowering.txt.gz"),))]


@pytest.fixture
def hub(runs_dir):
    proc, info = start_hub(runs_dir)
    try:
        yield info
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_sigterm_removes_the_rendered_reports(runs_dir, tmp_path):
    """`kill` (a service manager, `docker stop`) stops the hub as Ctrl-C does: the reports it rendered go with it.
    (uvicorn raises SIGTERM again once it has stopped, which killed the process before its cleanup ran.)"""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc, info = start_hub(runs_dir, env={**os.environ, "TMPDIR": str(tmp)})
    try:
        status, _ = raw_get(info["port"], f"/{info['token']}/run/2026-01-01_run_cold/report/index.html")
        assert status == 200
        assert any(p.name == "index.html" for p in tmp.rglob("*"))  # rendered into the hub's cache under $TMPDIR
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert list(tmp.iterdir()) == []


def raw_get(port: int, path: str, host: str = "127.0.0.1") -> tuple[int, bytes]:
    """A request sent as written: no client normalises '..' away or fixes the Host header."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


def test_binds_loopback_only_with_a_token(hub):
    token = hub["token"]
    assert len(token) >= 24
    assert raw_get(hub["port"], f"/{token}/")[0] == 200
    assert raw_get(hub["port"], "/")[0] == 404
    assert raw_get(hub["port"], "/not-the-token/")[0] == 404
    other = token[:-1] + ("a" if token[-1] != "a" else "b")  # one character off
    assert raw_get(hub["port"], f"/{other}/")[0] == 404
    with pytest.raises(OSError):  # nothing listens on the machine's other addresses
        import socket

        addrs = {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)} - {"127.0.0.1"}
        if not addrs:
            raise OSError("no other address")
        socket.create_connection((sorted(addrs)[0], hub["port"]), timeout=5)


def test_the_token_is_never_given_to_who_lacks_it(hub):
    """The short report URL redirects into the tokened tree: only for a request that already carries the token."""
    port, token = hub["port"], hub["token"]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for path in ("/not-the-token/run/2026-01-01_run_cold/report", "/x/run/2026-01-01_run_cold/report",
                 "/not-the-token/run/no-such-run/report"):
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 404, path
        assert token not in (resp.getheader("Location") or "") and token.encode() not in body
    conn.request("GET", f"/{token}/run/2026-01-01_run_cold/report")
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 307
    assert resp.getheader("Location") == f"/{token}/run/2026-01-01_run_cold/report/index.html"
    # A compare naming one run, or none, is no such run (not a server error).
    for query in ("a=2026-01-01_run_cold", "b=2026-01-01_run_cold", "", "a=&b=2026-01-01_run_cold"):
        conn.request("GET", f"/{token}/compare?{query}")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (404, b"no such run"), query
    conn.close()


def test_foreign_host_and_path_traversal_are_refused(hub):
    port, token = hub["port"], hub["token"]
    for host in ("evil.example", "127.0.0.1.evil.example", "attacker.com:80"):
        status, _ = raw_get(port, f"/{token}/", host=host)
        assert status == 400, host
    assert raw_get(port, f"/{token}/", host=f"localhost:{port}")[0] == 200
    for path in (
        f"/{token}/run/2026-01-01_run_cold/report/../../../../../etc/passwd",
        f"/{token}/run/2026-01-01_run_cold/report/%2e%2e/%2e%2e/%2e%2e/secret.txt",
        f"/{token}/run/2026-01-01_run_cold/report/..%2f..%2f..%2fsecret.txt",
        f"/{token}/run/..%2fsecret.txt/report/index.html",
        f"/{token}/run/../../secret.txt",
        f"/{token}/run/%2e%2e/report/index.html",
        f"/{token}/run/2026-01-01_run_cold/report//etc/passwd",
        f"/{token}/run/2026-01-01_run_cold/report/raw.log/../../../secret.txt",
        f"/{token}/compare?a=..&b=2026-01-01_run_cold",
        f"/{token}/compare?a=../secret.txt&b=2026-01-01_run_cold",
        f"/{token}/run/linked_run/report/index.html",
        f"/{token}/compare?a=linked_run&b=2026-01-01_run_cold",
    ):
        status, body = raw_get(port, path)
        assert status in (400, 404), (path, status)
        assert b"not a run" not in body and b"root:" not in body
    # Only reading: no other method exists.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", f"/{token}/")
    assert conn.getresponse().status == 405


def test_a_kept_report_is_not_sent_again_to_a_browser_that_has_it(hub):
    """Report files are served with validators, so a browser reopening a kept report gets 304 Not Modified."""
    port, token = hub["port"], hub["token"]
    path = f"/{token}/run/2026-01-01_run_cold/report/index.html"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path)
    first = conn.getresponse()
    body, etag = first.read(), first.getheader("ETag")
    assert first.status == 200 and b"<html" in body.lower() and etag
    conn.request("GET", path, headers={"If-None-Match": etag})
    again = conn.getresponse()
    assert again.status == 304 and again.read() == b""
    conn.close()


def test_follows_a_run_still_being_written(hub):
    """A run whose log changed in the last 30 s is live: marked, and its pages reload themselves."""
    port, token, root = hub["port"], hub["token"], hub["dir"]
    live = root / "2026-01-03_live"
    live.mkdir()
    target = live / "dedicated_log_torch_trace_live.log"
    text = log("cold").read_text()
    cut = text.index("compilation_metrics")
    target.write_text(text[: text.rindex("\n", 0, cut) + 1])
    status, body = raw_get(port, f"/{token}/")
    assert status == 200 and b"2026-01-03_live" in body and b'class="live"' in body
    status, first = raw_get(port, f"/{token}/run/2026-01-03_live/report/index.html")
    assert status == 200
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", f"/{token}/run/2026-01-03_live/report/index.html")
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.getheader("Refresh") == "10"  # the open page follows the run
    target.write_text(text)  # the run goes on: the next open renders what it wrote since
    status, second = raw_get(port, f"/{token}/run/2026-01-03_live/report/index.html")
    assert status == 200 and first != second


def test_list_open_compare_in_chromium(hub):
    url = hub["url"]
    with browser_page() as page:
        page.goto(url)
        rows = page.locator("#runs tbody tr")
        assert rows.count() == 3
        # Newest first, with headline figures.
        assert [rows.nth(i).get_attribute("data-run") for i in range(3)] == [
            "2026-01-02_run_warm", "2026-01-01_run_cold", "2025-12-31_run_warnings"]
        assert "secret" not in page.content() and "linked_run" not in page.content()
        cells = rows.nth(1).locator("td").all_inner_texts()
        assert cells[2].startswith("2.13.0") and cells[4] == "1" and cells[9] == "8.27 s"  # (format_seconds, as every page)
        # The warnings torch printed: a plain log cannot say; the recorded run printed four.
        assert cells[8] == "–" and "not recorded" in rows.nth(1).locator("td").nth(8).inner_html()
        assert rows.nth(2).locator("td").nth(8).inner_text() == "4"
        # Open: the report is rendered on first open.
        rows.nth(1).locator("a.open-run").click()
        page.wait_for_load_state()
        assert page.url.endswith("/run/2026-01-01_run_cold/report/index.html")
        assert page.locator("text=[0/0]").count() >= 1
        page.go_back()
        # Compare with…
        page.locator("#runs tbody tr").nth(0).locator("summary").click()
        page.locator("#runs tbody tr").nth(0).locator("a.compare-link", has_text="2026-01-01_run_cold").click()
        page.wait_for_load_state()
        assert "/compare?" in page.url
        text = page.inner_text("main")
        assert "FX graph cache: 1 miss → 1 hit" in text and "AOTAutograd cache: 1 miss → 1 hit" in text
        # The diff page links into both runs' reports.
        page.locator("a", has_text="open B's report").click()
        page.wait_for_load_state()
        assert page.url.endswith("/run/2026-01-02_run_warm/report/index.html")
        assert not page.console_errors
        assert all(urlsplit(u).hostname == "127.0.0.1" for u in page.external_requests)


def test_report_is_rendered_on_first_open_and_kept(runs_dir, tmp_path):
    from compilescope.cli.serve import Hub

    hub = Hub(str(runs_dir), str(tmp_path / "cache"))
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())  # nothing rendered up front
    first = hub.report_dir(hub.run("2026-01-01_run_cold"))
    stamp = os.stat(os.path.join(first, "index.html")).st_mtime_ns
    again = hub.report_dir(hub.run("2026-01-01_run_cold"))
    assert again == first and os.stat(os.path.join(again, "index.html")).st_mtime_ns == stamp
    assert first.startswith(str(tmp_path / "cache"))  # rendered into the hub's cache, never into the run
    assert sorted(os.listdir(runs_dir / "2026-01-01_run_cold")) == [
        "dedicated_log_torch_trace_cold.log", "dedicated_log_torch_trace_zlink.log"]


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_out_of_range_is_a_usage_error(port, tmp_path, capsys):
    assert run_cli("serve", tmp_path, "--port", port, "--no-browser") == 2
    assert capsys.readouterr().err == "compilescope: error: --port must be from 0 to 65535\n"


def test_a_port_in_use_or_a_file_for_the_directory_is_one_line(tmp_path, capsys):
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        skip_or_fail("the serve extra is not installed (pip install -e '.[test]')")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert run_cli("serve", tmp_path, "--port", port, "--no-browser") == 2
    assert capsys.readouterr().err == (f"compilescope: error: cannot listen on 127.0.0.1:{port}: Address already in use "
                                       "(leave out --port for a free one)\n")
    (tmp_path / "run.log").write_text("")
    assert run_cli("serve", tmp_path / "run.log", "--no-browser") == 2
    assert capsys.readouterr().err == f"compilescope: error: {tmp_path / 'run.log'}: not a directory (name the directory of runs)\n"


# A program that writes its TORCH_TRACE log as torch would, without torch (a second, not a compile): argv[1] copied.
COPY_LOG = ("import os, shutil, sys; shutil.copy(sys.argv[1], os.path.join(os.environ['TORCH_TRACE'], "
            "f'dedicated_log_torch_trace_{os.getpid()}.log'))")


def test_a_run_that_ended_seconds_ago_is_not_live_and_its_compile_time_is_worded_as_elsewhere(tmp_path):
    """`compilescope run` writes its report (<trace dir>/report) once the program has ended. The hub called any run
    whose log changed in the last 30 s live, and its list refreshed every 5 s, for a run over seconds ago. And it said
    compile time as "0.57s", where every other page says "574 ms" (format_seconds)."""
    from compilescope.analyses.run_facts.analysis import run_headline
    from compilescope.cli.diff import read_side
    from compilescope.cli.serve import list_runs
    from compilescope.render.html.runs import RunRow, runs_page
    from compilescope.wording import format_seconds

    root = tmp_path / "runs"
    ended, going = root / "2026-01-04_run_ended", root / "2026-01-04_run_going"
    # (profile_eager_backend compiled in under a second)
    (tmp_path / "log.txt").write_bytes(gzip.decompress(torch213("profile_eager_backend.log.gz").read_bytes()))
    going.mkdir(parents=True)
    shutil.copyfile(tmp_path / "log.txt", going / "dedicated_log_torch_trace_eager.log")
    assert run_cli("run", "--no-browser", "--trace-dir", ended, "--", sys.executable, "-c", COPY_LOG,
                   tmp_path / "log.txt") == 0
    runs = {r.name: r for r in list_runs(str(root))}
    # (seconds ago, as said: the clock is set, not read)
    with pytest.MonkeyPatch.context() as clock:
        clock.setattr(time, "time", lambda: runs[ended.name].mtime + 1)
        assert runs[ended.name].ended and not runs[ended.name].live
        assert runs[going.name].live  # (no run said it ended: its program may still be writing)

    figures = run_headline(read_side(runs[ended.name].source))
    page = runs_page([RunRow(ended.name, runs[ended.name].mtime, runs[ended.name].live, figures)], "runs", "/t/")
    said = format_seconds(figures["compile_time_s"])
    assert figures["compile_time_s"] < 1 and said.endswith(" ms")
    assert f'<td class="num">{said}</td>' in page
    assert not re.search(r">\d+\.\d\ds<", page) and 'class="live"' not in page


def test_a_run_whose_report_went_elsewhere_is_not_live_once_its_program_ended(tmp_path, monkeypatch):
    """`compilescope run -o DIR` writes the report to DIR, not <trace dir>/report: the hub knew a run had ended only by
    that report, so a run written with -o stayed "live" (its list refreshing every 5 s) for 30 s after it ended. The
    run marks its trace directory when the program has ended, wherever the report goes."""
    from compilescope.cli.serve import list_runs

    root = tmp_path / "runs"
    run = root / "2026-01-04_run_elsewhere"
    log = gzip.decompress(torch213("profile_eager_backend.log.gz").read_bytes())
    (tmp_path / "log.txt").write_bytes(log)
    assert run_cli("run", "--no-browser", "--trace-dir", run, "-o", tmp_path / "elsewhere", "--",
                   sys.executable, "-c", COPY_LOG, tmp_path / "log.txt") == 0
    assert (tmp_path / "elsewhere" / "index.html").is_file() and not (run / "report").exists()
    (found,) = list_runs(str(root))
    assert found.ended
    monkeypatch.setattr(time, "time", lambda: found.mtime + 1)  # (a second after its log was written)
    assert not found.live


def test_a_run_going_on_in_a_trace_dir_an_earlier_run_ended_in_is_live(tmp_path, monkeypatch):
    """--trace-dir is kept, and with it an earlier run's mark that its program has ended: a second run in the same
    directory was shown as over until its program wrote its first log (and so was one going on beside a run that
    ended). The mark names the logs each ended run wrote, and a run going on says so while its program runs."""
    from compilescope.cli.serve import list_runs

    root = tmp_path / "runs"
    run = root / "2026-01-04_run_twice"
    (tmp_path / "log.txt").write_bytes(gzip.decompress(torch213("profile_eager_backend.log.gz").read_bytes()))
    assert run_cli("run", "--no-browser", "--trace-dir", run, "-o", tmp_path / "first", "--",
                   sys.executable, "-c", COPY_LOG, tmp_path / "log.txt") == 0
    (first,) = list_runs(str(root))
    assert first.ended

    # The second program says it has started, then waits for the test before writing its log.
    started, go = tmp_path / "started", tmp_path / "go"
    waits = (f"import os, pathlib, time; pathlib.Path({str(started)!r}).touch()\n"
             f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n{COPY_LOG}")
    second = subprocess.Popen([sys.executable, "-m", "compilescope", "run", "--no-browser", "--trace-dir", str(run),
                               "-o", str(tmp_path / "second"), "--timeout", "300", "--",
                               sys.executable, "-c", waits, str(tmp_path / "log.txt")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while not started.exists():
            assert second.poll() is None, second.stderr.read()
            time.sleep(0.02)
        (going,) = list_runs(str(root))
        assert going.logs == first.logs and not going.ended  # (its newest log is the first run's)
        with pytest.MonkeyPatch.context() as clock:
            clock.setattr(time, "time", lambda: going.mtime + 1)
            assert going.live
    finally:
        go.touch()
        _, err = second.communicate()
    assert second.returncode == 0, err
    (both,) = list_runs(str(root))
    assert len(both.logs) == 2 and both.ended


def _dead_pid() -> int:
    """The pid of a process that has ended (and been waited for): no process has it now."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def test_a_going_mark_left_by_a_killed_run_does_not_keep_the_run_going(tmp_path):
    """`compilescope run` killed by SIGKILL leaves its RUN_GOING<pid> file: serve read the directory as going on for
    ever, and every later run there too. A going file whose process is gone is no run going on, and the next run in
    the directory removes it."""
    from compilescope.runner import RUN_ENDED, RUN_GOING, prepare_trace_dir, run_has_ended

    run = tmp_path / "run"
    run.mkdir()
    log = run / "dedicated_log_torch_trace_1.log"
    log.write_bytes(gzip.decompress(torch213("profile_eager_backend.log.gz").read_bytes()))
    (run / RUN_ENDED).write_text(f"{log.name}\n")
    killed = run / f"{RUN_GOING}{_dead_pid()}"
    killed.touch()
    assert run_has_ended(str(run), str(log))
    alive = run / f"{RUN_GOING}{os.getpid()}"  # (this process: a run going on)
    alive.touch()
    assert not run_has_ended(str(run), str(log))
    prepare_trace_dir(str(run))
    assert not killed.exists() and alive.exists()


# Writes argv[1] as its own TORCH_TRACE log: each record's pid (the glog prefix) made this process's, as torch writes it.
OWN_LOG = ("import os, re, sys; pid = str(os.getpid()).encode(); data = open(sys.argv[1], 'rb').read()\n"
           "out = os.path.join(os.environ['TORCH_TRACE'], f'dedicated_log_torch_trace_{os.getpid()}.log')\n"
           "log = open(out, 'wb')  # (held open until the process ends, as torch holds its trace log)\n"
           "log.write(re.sub(rb'(?m)^([VIWEC]\\d{4} [0-9:.]+ +)\\d+', lambda m: m[1] + pid, data)); log.flush()\n")


def test_a_run_marks_ended_only_the_logs_its_program_wrote(tmp_path):
    """A process writing to the same directory while `compilescope run --trace-dir` ran (a plain `TORCH_TRACE=dir
    python other.py`, another run) had its log named in RUN_ENDED: serve showed the directory ended while it still
    wrote, and the run reported the larger log, the other's. Only the logs of the program and its children are the
    run's."""
    from compilescope.runner import RUN_ENDED

    run = tmp_path / "run"
    (tmp_path / "small.log").write_bytes(gzip.decompress(torch213("profile_eager_backend.log.gz").read_bytes()))
    (tmp_path / "large.log").write_bytes(gzip.decompress(torch213("automatic_dynamic.log.gz").read_bytes()))
    assert (tmp_path / "large.log").stat().st_size > (tmp_path / "small.log").stat().st_size
    started, go, other_wrote, release = (tmp_path / n for n in ("started", "go", "other_wrote", "release"))
    # The program waits until the other process has written its log, then writes its own and a child's.
    program = (f"import os, pathlib, subprocess, sys, time; pathlib.Path({str(started)!r}).touch()\n"
               f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
               f"subprocess.run([sys.executable, '-c', {OWN_LOG!r}, sys.argv[1]], check=True)\n{OWN_LOG}")
    other = f"{OWN_LOG}import pathlib, time; pathlib.Path({str(other_wrote)!r}).touch()\n" \
            f"while not pathlib.Path({str(release)!r}).exists(): time.sleep(0.02)\n"
    ours = subprocess.Popen([sys.executable, "-m", "compilescope", "run", "--no-browser", "--trace-dir", str(run),
                             "-o", str(tmp_path / "report"), "--timeout", "300", "--",
                             sys.executable, "-c", program, str(tmp_path / "small.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    beside = None
    try:
        while not started.exists():
            assert ours.poll() is None, ours.stderr.read()
            time.sleep(0.02)
        beside = subprocess.Popen([sys.executable, "-c", other, str(tmp_path / "large.log")],
                                  env={**os.environ, "TORCH_TRACE": str(run)})
        while not other_wrote.exists():
            assert beside.poll() is None
            time.sleep(0.02)
        go.touch()
        _, err = ours.communicate()
        assert ours.returncode == 0, err
        others_log = f"dedicated_log_torch_trace_{beside.pid}.log"
        assert (run / others_log).is_file()
        named = (run / RUN_ENDED).read_text().splitlines()
        assert len(named) == 2 and others_log not in named  # (the program's log and its child's)
        assert others_log not in err
    finally:
        release.touch()
        go.touch()
        if beside is not None:
            beside.wait()
        if ours.poll() is None:
            ours.kill()


def test_a_log_copied_in_whose_pid_a_live_process_has_is_the_runs(tmp_path):
    """A program that copies a recorded log into the trace directory (a test's stand-in, a log fetched from a job)
    leaves the recording's pid in it, which a process alive here may have by chance: the pid was taken for the
    writer's and the run dropped its only log. Only a live process holding the log open is its writer."""
    from compilescope import runner

    copied = tmp_path / "copied.log"
    data = gzip.decompress(torch213("profile_eager_backend.log.gz").read_bytes())
    # (this test's own pid: alive, no descendant of the program, and not writing the log)
    copied.write_bytes(re.sub(rb"(?m)^([VIWEC]\d{4} [0-9:.]+ +)\d+", lambda m: m[1] + str(os.getpid()).encode(), data))
    (tmp_path / "run").mkdir()
    code = ("import os, shutil, sys; shutil.copy(sys.argv[1], "
            "os.path.join(os.environ['TORCH_TRACE'], 'dedicated_log_torch_trace_copied.log'))")
    result = runner.run_program(runner.Program([sys.executable, "-c", code, str(copied)], this_python=True),
                                str(tmp_path / "run"))
    assert result.returncode == 0
    assert [os.path.basename(p) for p in result.logs] == ["dedicated_log_torch_trace_copied.log"]

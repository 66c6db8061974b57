"""runner.LogOwners looks at the trace directory every 0.1 s while a program runs. A new log it cannot place yet is
read again only once it has grown, and a log whose first record it has read is not read again: counted here as
reads of a real small log (tests/data/torch213 `cache_warm.log`) written into the directory in pieces, not timed."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compilescope import runner
from compilescope.ingest.discover import TORCH_LOG_NAME

from .conftest import clean_env, compilescope

LOG = Path(__file__).parent.parent / "data" / "torch213" / "logs" / "cache_warm.log"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The logs whose head LogOwners read (runner.trace_dir.first_pid's calls), in order."""
    read: list[str] = []
    first_pid = runner.trace_dir.first_pid

    def counted(log: str) -> int | None:
        read.append(os.path.basename(log))
        return first_pid(log)

    monkeypatch.setattr(runner.trace_dir, "first_pid", counted)
    return read


def test_a_log_is_read_once_per_size_until_placed(tmp_path: Path, reads: list[str]) -> None:
    data = LOG.read_bytes()
    first_record = data.index(b"\n") + 1
    # (a program that has ended: the log's pid, another process's, is never its descendant, so the log is never
    # told apart while it runs and every look meets it)
    program = subprocess.Popen([sys.executable, "-c", "pass"])
    program.wait()
    owners = runner.LogOwners(str(tmp_path), set(), program)
    name = f"{TORCH_LOG_NAME}_1234_0.log"
    log = tmp_path / name
    log.write_bytes(b"")
    for _ in range(3):
        owners.look()
    assert reads == [name]  # empty: read once, not again while it stays empty
    log.write_bytes(data[:20])  # part of the first record's prefix: no pid yet
    for _ in range(3):
        owners.look()
    assert reads == [name] * 2
    with open(log, "ab") as f:
        f.write(data[20:first_record + 100])  # the first record whole: its pid is there
    for _ in range(3):
        owners.look()
    assert reads == [name] * 3
    with open(log, "ab") as f:
        f.write(data[first_record + 100:])  # the rest: its first record's pid is known and is not read again
    for _ in range(3):
        owners.look()
    assert reads == [name] * 3
    # After the program: the log, not told apart while it ran, is read once more (the file may be another by now)
    assert owners.ours([str(log)]) == [str(log)]
    assert reads == [name] * 4


CRASH_FILE_THEN_WAITS = Path(__file__).parent / "programs" / "crash_file_then_waits.py"


@pytest.mark.parametrize("recorder", ["run", "tee"])
def test_a_run_takes_only_its_own_processes_crash_files(tmp_path: Path, recorder: str) -> None:
    """Two runs share one --trace-dir: the later's program, still running, holds its (empty) crash file open when the
    earlier's run ends. The earlier took every crash file new there since it started: it removed the empty one, and
    the later's crash, written then into the file unlinked, was lost. Each now takes only its own processes' files, as
    it takes their logs. recorder "tee": the later's process records as a capture() block with faulthandler already
    on does, through a `tee` child that holds the file (bytecode_capture._CrashTee), not the process itself."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    runs: dict[str, runner.RunResult] = {}

    def start(name: str, end: str, *how: str) -> threading.Thread:
        argv = [sys.executable, str(CRASH_FILE_THEN_WAITS), str(LOG), f"{name}.log", str(tmp_path / f"{name}_go"), end,
                *how]
        thread = threading.Thread(target=lambda: runs.update({name: runner.run_program(
            runner.Program(argv, True), str(trace_dir), output=str(tmp_path / f"{name}.txt"), timeout=120)}))
        thread.start()
        deadline = time.monotonic() + 60
        while "traced" not in _read(tmp_path / f"{name}.txt") and time.monotonic() < deadline:
            time.sleep(0.05)
        return thread

    earlier = start("earlier", "exit")
    later = start("later", "crash", *(["tee"] if recorder == "tee" else []))
    try:
        crash_files = sorted(trace_dir.glob("compilescope_crash_*.txt"))
        assert len(crash_files) == 2  # (both empty: nothing crashed yet)
        (tmp_path / "earlier_go").touch()
        earlier.join(120)
        assert runs["earlier"].returncode == 0, _read(tmp_path / "earlier.txt")
        assert [os.path.basename(log) for log in runs["earlier"].logs] == ["earlier.log"]
        assert runs["earlier"].crashes == []
        [later_crash_file] = trace_dir.glob("compilescope_crash_*.txt")  # (the earlier's own empty one removed)
    finally:
        (tmp_path / "earlier_go").touch()
        (tmp_path / "later_go").touch()
        later.join(120)
    result = runs["later"]
    assert result.signal_name == "SIGSEGV"
    [crash] = result.crashes
    assert crash.headline == "Segmentation fault" and crash.log == str(trace_dir / "later.log")
    assert later_crash_file.name == f"compilescope_crash_{crash.pid}.txt" and not later_crash_file.exists()
    assert '"name": "compilescope_crash"' in (trace_dir / "later.log").read_text()


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


LAUNCHES_A_DAEMON = Path(__file__).parent / "programs" / "launches_a_daemon.py"
FORKS_A_WORKER = Path(__file__).parent / "programs" / "forks_a_worker_that_crashes.py"


@pytest.mark.parametrize("started", ["daemon", "fork"])
def test_an_empty_crash_file_a_process_of_the_program_still_holds_is_kept(tmp_path: Path, started: str) -> None:
    """The program ends while a process it started runs on, holding its empty crash file open: a daemon in a session
    of its own (its file named for its pid), or a worker it forked (the program's file, inherited). The run removed
    every empty crash file of its processes, and that process's crash, written later into the file unlinked, was lost.
    The file is kept now, and the run says so; the crash is then in it."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    go = tmp_path / "go"
    if started == "daemon":
        argv = [sys.executable, str(LAUNCHES_A_DAEMON), str(tmp_path / "daemon.txt"), str(LOG),
                f"{TORCH_LOG_NAME}_daemon.log", str(go), "crash"]
    else:
        argv = [sys.executable, str(FORKS_A_WORKER), str(go)]
    try:
        result = runner.run_program(runner.Program(argv, True), str(trace_dir), output=str(tmp_path / "run.txt"),
                                    timeout=120)
        assert result.returncode == 0, _read(tmp_path / "run.txt")
        [crash_file] = trace_dir.glob("compilescope_crash_*.txt")
        assert result.crashes == [] and [held.path for held in result.held_crash_files] == [str(crash_file)]
        if started == "daemon":  # (its log, a torch log's name, is the run's: the daemon ran under the program)
            assert [os.path.basename(log) for log in result.logs] == [f"{TORCH_LOG_NAME}_daemon.log"]
            [held] = result.held_crash_files
            assert held.pids == [runner.trace_dir.first_pid(result.logs[0])]
    finally:
        go.touch()
    _crashed_into(crash_file)


def test_the_run_says_a_process_of_the_program_is_still_running(tmp_path: Path) -> None:
    """One line of `compilescope run`'s output says why the empty crash file stays in the trace directory."""
    go = tmp_path / "go"
    try:
        proc = compilescope("run", "--no-browser", "--trace-dir", tmp_path / "traces", "--", sys.executable,
                            FORKS_A_WORKER, go, cwd=tmp_path)
    finally:
        go.touch()
    [crash_file] = (tmp_path / "traces").glob("compilescope_crash_*.txt")
    said = [line for line in proc.stderr.splitlines() if "still running" in line]
    assert len(said) == 1 and re.fullmatch(
        rf"compilescope: process (\d+), started by the program, is still running; if it crashes, `compilescope "
        rf"{re.escape(str(tmp_path / 'traces'))}` will show it \(file {crash_file.name}\)", said[0]), said
    _crashed_into(crash_file)  # (and the worker has seen go before pytest removes tmp_path)


def _crashed_into(crash_file: Path) -> None:
    """Waits for the crash the process holding crash_file was told to have, and checks faulthandler wrote it there."""
    deadline = time.monotonic() + 60
    while "Segmentation fault" not in _read(crash_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "Fatal Python error: Segmentation fault" in _read(crash_file)


HOLDS = "import sys, time; f = open(sys.argv[1], 'ab'); print('held', flush=True); time.sleep(60)"


def _with_pid(pid: int) -> bytes:
    """cache_warm.log as the process pid would have written it (its pid in every record's glog prefix)."""
    return re.sub(rb"^(V\d{4} [\d:.]+ )\d+ ", rb"\g<1>" + str(pid).encode() + b" ", LOG.read_bytes(), flags=re.M)


def _a_program_and_a_gone_process_log(tmp_path: Path) -> tuple[subprocess.Popen, runner.LogOwners, Path]:
    """A program running until its stdin closes, the owners of its trace directory (tmp_path), and a log there whose
    records carry the pid of a process gone."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    program = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    owners = runner.LogOwners(str(tmp_path), set(), program)
    log = tmp_path / f"{TORCH_LOG_NAME}_1_0.log"
    log.write_bytes(_with_pid(gone.pid))
    return program, owners, log


def _ends_taking_none(program: subprocess.Popen, owners: runner.LogOwners, log: Path) -> None:
    """One more look, the program ends, and log (another live process's by then) is not the program's."""
    owners.look()
    assert program.stdin is not None
    program.stdin.close()
    program.wait()
    assert owners.ours([str(log)]) == []


def test_a_log_that_takes_the_name_of_another_is_read_again(tmp_path: Path) -> None:
    """A log read while the program ran (its first record's pid, a process gone) is replaced under its name by
    another process's live log: its pid, cached by name, was taken for the new file's, and the other process's log
    for the program's."""
    program, owners, log = _a_program_and_a_gone_process_log(tmp_path)
    owners.look()
    new = tmp_path / "new.log"
    new.write_bytes(b"")
    other = subprocess.Popen([sys.executable, "-c", HOLDS, str(new)], stdout=subprocess.PIPE)
    try:
        assert other.stdout is not None and other.stdout.readline() == b"held\n"
        new.write_bytes(_with_pid(other.pid))
        os.replace(new, log)  # (the file the other process holds, now under the name)
        _ends_taking_none(program, owners, log)
    finally:
        other.kill()
        other.wait()


def test_a_first_record_written_by_a_rewrite_of_the_same_size_is_read(tmp_path: Path) -> None:
    """A log whose head was read before it had a record is read again once it is rewritten at the same size: it was
    read again only once its size changed, and the first record of the program's descendant was not seen while the
    program ran (its log then not told the program's)."""
    log = tmp_path / f"{TORCH_LOG_NAME}_1_0.log"
    log.write_bytes(b"")
    spawn = ("import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]]); "
             "print(child.pid, flush=True); sys.stdin.read(); child.kill()")
    program = subprocess.Popen([sys.executable, "-c", spawn, HOLDS, str(log)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)
    try:
        assert program.stdout is not None
        descendant = int(program.stdout.readline())
        data = _with_pid(descendant)
        owners = runner.LogOwners(str(tmp_path), set(), program)
        log.write_bytes(b" " * len(data))
        owners.look()  # (its head read: no record yet)
        with open(log, "r+b") as f:
            f.write(data)  # (the first record, at the same size)
        # Its mtime a second on, as a rewrite a tick of the clock later has (set, not waited for: no test of timing)
        mtime = log.stat().st_mtime_ns + 1_000_000_000
        os.utime(log, ns=(mtime, mtime))
        owners.look()
        assert owners.told == {log.name: True}
    finally:
        assert program.stdin is not None
        program.stdin.close()
        program.wait()


def test_a_crash_file_of_a_live_process_not_the_programs_is_asked_of_once(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash file whose pid is a live process that is not the program's and does not hold it (a file copied in): each
    look asked again whether that process or a child of it holds the file, reading every /proc/N/stat. Asked once."""
    asked: list[int] = []
    holds = runner.trace_dir.holds_crash_file

    def counted(pid: int, path: str) -> bool:
        asked.append(pid)
        return holds(pid, path)

    monkeypatch.setattr(runner.trace_dir, "holds_crash_file", counted)
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    program = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        (tmp_path / f"compilescope_crash_{other.pid}.txt").write_text("")
        owners = runner.LogOwners(str(tmp_path), set(), program)
        for _ in range(5):
            owners.look()
        assert asked == [other.pid]
    finally:
        for proc in (other, program):
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-pf", "--mount-proc", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare -pf --mount-proc` (a pid namespace, as a container has)")
def test_a_crash_into_a_crash_file_left_by_an_earlier_run_is_reported(tmp_path: Path) -> None:
    """In a container every run's processes get the same pids: an empty crash file an earlier run kept (its holder then
    still running) is there when a process of the next run with that pid starts, and faulthandler writes its crash into
    that file. The run passed over every crash file there before it started: the crash was neither said nor added to
    the log. Here the run is in a pid namespace of its own (`unshare -pf`, compilescope its first process) and the
    trace directory holds an empty file for each of its first pids; the program crashes."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    for pid in range(2, 32):
        (trace_dir / f"compilescope_crash_{pid}.txt").write_bytes(b"")
    go = tmp_path / "go"
    go.touch()
    proc = subprocess.run(["unshare", "-pf", "--mount-proc", sys.executable, "-m", "compilescope", "run", "--no-browser",
                           "--trace-dir", str(trace_dir), "--", sys.executable, str(CRASH_FILE_THEN_WAITS), str(LOG),
                           f"{TORCH_LOG_NAME}_run.log", str(go), "crash"],
                          cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=300)
    said = re.findall(r"compilescope: process (\d+) crashed \(Segmentation fault\); its stack \(added to (.*)\):",
                      proc.stderr)
    assert [log for _, log in said] == [str(trace_dir / f"{TORCH_LOG_NAME}_run.log")], proc.stderr
    pid = int(said[0][0])
    assert pid in range(2, 32)  # (the file was there before the run)
    assert not (trace_dir / f"compilescope_crash_{pid}.txt").exists()
    assert '"name": "compilescope_crash"' in (trace_dir / f"{TORCH_LOG_NAME}_run.log").read_text()
    # The other leftovers, which no process of the run wrote, are left as they were
    assert len(list(trace_dir.glob("compilescope_crash_*.txt"))) == 29


# A program that lets another process crash (it touches argv[1], the other's go) and waits until the other's crash
# file (argv[2]) holds its crash.
LETS_IT_CRASH = ("import os, pathlib, sys, time; pathlib.Path(sys.argv[1]).touch(); "
                 "[time.sleep(0.05) for _ in range(1200) if os.path.getsize(sys.argv[2]) == 0]; time.sleep(0.3)")


@contextlib.contextmanager
def _another_holding_its_crash_file(tmp_path: Path) -> Iterator[tuple[Path, Path, subprocess.Popen, Path]]:
    """(trace_dir, go, other, its crash file): a traced process that is no process of the run's holds its empty crash
    file in trace_dir, and crashes once go exists; it is ended when the block ends."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    go = tmp_path / "go"
    other = subprocess.Popen([sys.executable, str(CRASH_FILE_THEN_WAITS), str(LOG), f"{TORCH_LOG_NAME}_other.log",
                              str(go), "crash"], stdout=subprocess.PIPE,
                             env=clean_env(TORCH_TRACE=str(trace_dir), PYTHONPATH=runner.CHILD_DIR))
    try:
        assert other.stdout is not None and other.stdout.readline() == b"traced\n"
        crash_file = trace_dir / f"compilescope_crash_{other.pid}.txt"
        assert crash_file.exists() and crash_file.stat().st_size == 0
        yield trace_dir, go, other, crash_file
    finally:
        go.touch()
        other.kill()
        other.wait()


def test_a_crash_into_a_crash_file_another_process_held_before_the_run_is_not_the_runs(tmp_path: Path) -> None:
    """A process that is no process of the run (an earlier run's daemon, another run's worker) holds its empty crash
    file when the run starts, and crashes into it while the program runs. The file, there before and written again,
    was taken as the run's (its pid is no live process's at the end): the run said "process N crashed" of another's
    crash. A file written again counts only where the run's own process wrote it."""
    with _another_holding_its_crash_file(tmp_path) as (trace_dir, go, other, crash_file):
        # The program lets the other process crash, and waits until it has
        result = runner.run_program(runner.Program([sys.executable, "-c", LETS_IT_CRASH, str(go), str(crash_file)],
                                                   True), str(trace_dir), output=str(tmp_path / "run.txt"), timeout=120)
        assert result.returncode == 0, _read(tmp_path / "run.txt")
        assert other.wait(60) != 0
        assert result.crashes == [] and result.held_crash_files == []
        assert "Fatal Python error: Segmentation fault" in _read(crash_file)  # (left for the one it is of)


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare -pf --mount-proc` (a pid namespace, as a container has)")
def test_a_crash_into_a_crash_file_held_before_the_run_from_another_pid_namespace_is_not_the_runs(
        tmp_path: Path) -> None:
    """As above, but the holder is in another pid namespace (another container sharing the trace directory): no
    process of the run's /proc holds the file at the start, so only the rule that a file there before the run and
    written again is the run's where a look saw its writer under the program (LogOwners.rewritten) keeps the other's
    crash from being said as the run's ("process N crashed", its file taken into the run's log)."""
    with _another_holding_its_crash_file(tmp_path) as (trace_dir, go, other, crash_file):
        proc = subprocess.run(["unshare", "-pf", "--mount-proc", sys.executable, "-m", "compilescope", "run",
                               "--no-browser", "--trace-dir", str(trace_dir), "--", sys.executable, "-c", LETS_IT_CRASH,
                               str(go), str(crash_file)],
                              cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=300)
        assert other.wait(60) != 0
        assert "crashed" not in proc.stderr, proc.stderr
        assert "Fatal Python error: Segmentation fault" in _read(crash_file)  # (left for the one it is of)


def _sets_pids() -> bool:
    """Whether a pid namespace of our own can be made and its next pid chosen (/proc/sys/kernel/ns_last_pid: root)."""
    try:
        return subprocess.run(["unshare", "-pf", "--mount-proc", "sh", "-c",
                               "echo 40 > /proc/sys/kernel/ns_last_pid && sh -c 'test $$ = 41'"],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# Inside a pid namespace of its own: a program (FORKS_A_WORKER) leaves a worker holding the crash file named for the
# program's pid P, and ends; then `compilescope run` runs a program whose child is given pid P (ns_last_pid), touches
# the file argv[1] (the worker then crashes into the file named P) and waits until the file holds its crash.
_PID_TAKEN = """
import os, subprocess, sys
trace_dir, go, forks_a_worker, child_dir = sys.argv[1:]
env = {**os.environ, "TORCH_TRACE": trace_dir, "PYTHONPATH": child_dir}
program = subprocess.Popen([sys.executable, forks_a_worker, go], env=env, stdout=subprocess.PIPE)
assert program.stdout.readline() == b"forked\\n"
program.wait()
crash_file = os.path.join(trace_dir, f"compilescope_crash_{program.pid}.txt")
takes_the_pid = (
    "import os, pathlib, sys, time\\n"
    "with open('/proc/sys/kernel/ns_last_pid', 'w') as f: f.write(str(int(sys.argv[2]) - 1))\\n"
    "if os.fork() == 0:\\n"
    "    assert os.getpid() == int(sys.argv[2])\\n"
    "    pathlib.Path(sys.argv[1]).touch()\\n"
    "    [time.sleep(0.05) for _ in range(1200) if os.path.getsize(sys.argv[3]) == 0]\\n"
    "    time.sleep(0.3)\\n"
    "    os._exit(0)\\n"
    "sys.exit(os.wait()[1] >> 8)\\n")
run = subprocess.run([sys.executable, "-m", "compilescope", "run", "--no-browser", "--trace-dir", trace_dir, "--",
                      sys.executable, "-c", takes_the_pid, go, str(program.pid), crash_file])
print("crash file", crash_file, flush=True)
sys.exit(run.returncode)
"""


@pytest.mark.skipif(not _sets_pids(), reason="needs `unshare -pf --mount-proc` and root (ns_last_pid)")
def test_a_crash_into_a_crash_file_held_before_the_run_is_not_the_runs_where_the_run_has_its_pid(
        tmp_path: Path) -> None:
    """A worker forked by a program that has ended holds the crash file named for that program's pid P when the run
    starts, and the run's own process is given P (pids are reused; a container's repeat every run). The worker crashes
    into the file: written again during the run, by "a process P under the program" as a look sees it, it was taken
    as the run's crash. A crash file held open when the run starts is left out of those the run may take."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    go = tmp_path / "go"
    try:
        proc = subprocess.run(["unshare", "-pf", "--mount-proc", sys.executable, "-c", _PID_TAKEN, str(trace_dir),
                               str(go), str(FORKS_A_WORKER), runner.CHILD_DIR],
                              cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        [crash_file] = re.findall(r"^crash file (.*)$", proc.stdout, flags=re.M)
        assert "crashed" not in proc.stderr, proc.stderr
        assert "Fatal Python error: Segmentation fault" in _read(Path(crash_file))  # (left for the one it is of)
    finally:
        go.touch()  # (the worker ends with the namespace's first process, killed as unshare's child ends)


@pytest.mark.skipif(not _unshare_works(), reason="needs `unshare -pf --mount-proc` (a pid namespace, as a container has)")
def test_an_empty_crash_file_of_another_pid_namespace_made_during_the_run_is_kept(tmp_path: Path) -> None:
    """A process of another pid namespace (another container sharing the trace directory) makes its crash file while
    the run goes on. Its pid is no process in the run's /proc, so the file was taken as the run's and, empty and held
    by no process seen, removed: its crash, written later into the file unlinked, was lost. An empty crash file is
    removed only with evidence that it is the run's."""
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    go = tmp_path / "go"
    started = tmp_path / "started"
    waits = ("import glob, pathlib, sys, time; pathlib.Path(sys.argv[2]).touch(); [time.sleep(0.05) for _ in "
             "range(1200) if not glob.glob(sys.argv[1] + '/compilescope_crash_*.txt')]; time.sleep(0.5)")
    run = subprocess.Popen(["unshare", "-pf", "--mount-proc", sys.executable, "-m", "compilescope", "run",
                            "--no-browser", "--trace-dir", str(trace_dir), "--", sys.executable, "-c", waits,
                            str(trace_dir), str(started)], cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:  # (the file is made during the run, not before it)
        time.sleep(0.05)
    other = subprocess.Popen([sys.executable, str(CRASH_FILE_THEN_WAITS), str(LOG), f"{TORCH_LOG_NAME}_other.log",
                              str(go), "crash"], stdout=subprocess.DEVNULL,
                             env=clean_env(TORCH_TRACE=str(trace_dir), PYTHONPATH=runner.CHILD_DIR))
    try:
        _, stderr = run.communicate(timeout=300)
        crash_file = trace_dir / f"compilescope_crash_{other.pid}.txt"
        assert crash_file.exists(), stderr
        go.touch()
        _crashed_into(crash_file)
    finally:
        go.touch()
        other.kill()
        other.wait()
        run.kill()
        run.wait()


def test_a_log_rewritten_in_place_by_another_process_is_read_again_at_the_end(tmp_path: Path) -> None:
    """A log read while the program ran (its first record's pid, a process gone) is written again under its name, in
    the same file (the same inode: as ext4 gives a new file the inode of one just removed), by another process that
    still holds it. The pid read while the program ran was taken at the end, and that process's log for the
    program's. The end reads each log's first record again."""
    program, owners, log = _a_program_and_a_gone_process_log(tmp_path)
    inode = log.stat().st_ino
    owners.look()
    rewrites = ("import sys, time; f = open(sys.argv[1], 'wb'); f.write(sys.stdin.buffer.read().replace(b'PID', "
                "str(__import__('os').getpid()).encode())); f.flush(); print('held', flush=True); time.sleep(60)")
    other = subprocess.Popen([sys.executable, "-c", rewrites, str(log)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert other.stdin is not None and other.stdout is not None
        other.stdin.write(re.sub(rb"^(V\d{4} [\d:.]+ )\d+ ", rb"\g<1>PID ", LOG.read_bytes(), flags=re.M))
        other.stdin.close()
        assert other.stdout.readline() == b"held\n"
        assert log.stat().st_ino == inode and runner.trace_dir.first_pid(str(log)) == other.pid
        _ends_taking_none(program, owners, log)
    finally:
        other.kill()
        other.wait()


# (compilescope is imported before the process becomes nobody: a checkout under a private folder, mktemp's 0700, is
# unreadable to nobody, as is the venv's site-packages; the standard library stays readable)
ATTACH_AS_NOBODY = """
import json, os, sys
from compilescope import runner
os.setgid(65534)
os.setuid(65534)
held = []
runner.attach_crash_reports(sys.argv[1], [], held=held)
print(json.dumps([[h.path, h.pids] for h in held]))
"""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or not os.path.isdir("/proc/self/fd"),
                    reason="needs root (to run the run's end as another user) and /proc")
def test_an_empty_crash_file_held_by_another_users_process_is_kept() -> None:
    """The run's end looks at every /proc/N/fd for who holds an empty crash file: another user's process's cannot be
    read (refused), and the file it held was taken as held by nobody and removed, its crash to come lost. Where any
    was refused, a file is kept while the process it is named for is alive. Here the run's end is another user's
    (nobody) than the holder's."""
    with tempfile.TemporaryDirectory() as trace_dir:
        os.chmod(trace_dir, 0o777)
        holds_its_own = ("import os, sys, time; f = open(os.path.join(sys.argv[1], f'compilescope_crash_{os.getpid()}"
                         ".txt'), 'w'); print('held', flush=True); time.sleep(120)")
        holder = subprocess.Popen([sys.executable, "-c", holds_its_own, trace_dir], stdout=subprocess.PIPE)
        try:
            assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
            crash_file = os.path.join(trace_dir, f"compilescope_crash_{holder.pid}.txt")
            os.chmod(crash_file, 0o666)
            src = str(Path(runner.__file__).parents[2])  # (src/: runner is the package compilescope/runner/)
            end = subprocess.run([sys.executable, "-c", ATTACH_AS_NOBODY, trace_dir], capture_output=True, text=True,
                                 env={**os.environ, "PYTHONPATH": src}, cwd=trace_dir, timeout=120)
            assert end.returncode == 0, end.stderr
            assert json.loads(end.stdout) == [[crash_file, [holder.pid]]]
            assert os.path.exists(crash_file)
        finally:
            holder.kill()
            holder.wait()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize(("mode", "kept"), [("rb", False), ("ab", True), ("wb", True)])
def test_a_crash_file_held_open_only_for_reading_is_not_kept(tmp_path: Path, mode: str, kept: bool) -> None:
    """A process that only reads an empty crash file (a user's `tail -f` on it) was counted as a process of the
    program still running, and the file kept for it. Only a descriptor open for writing counts (faulthandler's "w",
    the tee's append)."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    crash_file = tmp_path / f"compilescope_crash_{gone.pid}.txt"
    crash_file.write_bytes(b"")
    holder = subprocess.Popen([sys.executable, "-c", HOLDS.replace("'ab'", repr(mode)), str(crash_file)],
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        held: list[runner.HeldCrashFile] = []
        assert runner.attach_crash_reports(str(tmp_path), [], held=held) == []
        assert held == ([runner.HeldCrashFile(str(crash_file), [holder.pid])] if kept else [])
        assert crash_file.exists() == kept
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize(("pids", "said"), [([5], "process 5, started by the program, is"),
                                            ([5, 6], "processes 5 and 6, started by the program, are"),
                                            ([5, 6, 7], "processes 5, 6 and 7, started by the program, are")])
def test_the_still_running_line_joins_its_processes_as_a_sentence(pids: list[int], said: str) -> None:
    """It said "processes 5, 6, started by the program, are still running": the commas ran into the clause's."""
    from compilescope.cli.run import _still_running

    held = [runner.HeldCrashFile(f"/t/compilescope_crash_{pid}.txt", [pid]) for pid in pids]
    assert _still_running(held, "/t").startswith(f"compilescope: {said} still running; ")

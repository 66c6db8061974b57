"""An uncaught Python exception that ends the program: torch logs nothing of it (a log that just ends), so
`compilescope run` and capture() chain sys.excepthook (and threading.excepthook) to record it in the crash file
beside the log (bytecode_capture._record_exceptions), which run appends to the process's log and the reader takes
like a native crash (analyses/crash.py): "the program stopped with ... raised at ...".

Real log: tests/data/torch213 `uncaught_exception.log.gz` (programs/uncaught_exception.py under run's hooks: a
backend asserts while torch compiles `shift`, torch raises BackendCompilerFailed, the program exits with status 1).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from compilescope.analyses.crash import parse_crash
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.crash_files import crash_headline, ending, read_crash_file
from compilescope.ingest.reader import read_trace
from compilescope.runner import CrashReport

from ..conftest import REPO, run_cli, torch213
from .conftest import CHILD_TIMEOUT_S, OUR_PROGRAMS, clean_env, compilescope

LOG = torch213("uncaught_exception.log.gz")
PROGRAM = REPO / "tests" / "data" / "torch213" / "programs" / "uncaught_exception.py"
SRC = REPO / "src"


def _line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _crash_record(log) -> tuple[int, str]:
    """The raw log's compilescope_crash artifact: the line it is on (1-based) and its payload."""
    lines = gzip.open(log, "rt").read().split("\n")
    [i] = [i for i, line in enumerate(lines) if '"name": "compilescope_crash"' in line]
    j = i + 1
    while j < len(lines) and lines[j].startswith("\t"):
        j += 1
    return i + 1, "\n".join(x[1:] for x in lines[i + 1:j])


def test_the_recorded_exception_is_read_as_the_log_s_ending():
    _, payload = _crash_record(LOG)
    # The record run appended: the JSON line, then Python's traceback ending with the exception's own lines.
    assert payload.startswith("Uncaught Python exception: {")
    assert "torch._dynamo.exc.BackendCompilerFailed: backend='strict_backend' raised:\nAssertionError: " \
           "expected 2 inputs, got 1" in payload
    with read_trace(str(LOG)) as trace:
        [crash] = insights(trace).crashes.crashes
    assert crash.exception and crash.thread is None and crash.file is None and crash.record is not None
    # strict_backend is handed one input (shift(x)): its assert fails, and torch wraps the AssertionError
    assert crash.error == ("BackendCompilerFailed: backend='strict_backend' raised: AssertionError: expected 2 inputs, "
                           "got 1")
    assert_line = _line_of(PROGRAM, "assert len(example_inputs) == 2")
    # (the path is the recording checkout's: a clone elsewhere has the program under another directory)
    assert crash.where.filename.endswith("/tests/data/torch213/programs/uncaught_exception.py")
    assert (crash.where.line, crash.where.function) == (assert_line, "strict_backend")
    # the outermost frame is the module's call of main(), and the user's code is what raised
    outer = crash.frames[-1]
    assert (outer.line, outer.function) == (len(PROGRAM.read_text().splitlines()), "<module>")  # main(), its last line
    assert crash.user_frame is crash.where
    assert crash.headline == f"{crash.error} raised at uncaught_exception.py:{assert_line} in strict_backend"
    assert crash.ending == f"stopped with {crash.said}"


def test_summary_leads_with_the_exception(capsys):
    assert run_cli("summary", LOG) == 0
    out = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())
    fix_first = out[out.index("Fix first"):]
    assert fix_first.index("the program stopped with BackendCompilerFailed") < fix_first.index("[1/0] failed")
    assert "the uncaught exception was recorded by compilescope run" in out


def test_report_escapes_and_says_how_it_ended(tmp_path):
    assert run_cli(str(LOG), "-o", str(tmp_path / "r"), "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    section = page[page.index('id="insights-crash"'):]
    assert "the uncaught Python exception that ended the process" in section
    # (the message's quotes escaped, as everything from the log)
    assert "backend=&#39;strict_backend&#39; raised: AssertionError: expected 2 inputs, got 1" in section


def test_the_ending_of_two_ranks_that_stopped_alike(tmp_path, capsys, monkeypatch):
    """The one real recording given as both ranks of a job (as the DDP job's two ranks died of the same assert): one
    line says both."""
    for rank in (0, 1):
        (tmp_path / f"dedicated_log_torch_trace_rank_{rank}_x.log.gz").write_bytes(LOG.read_bytes())
    monkeypatch.setenv("COLUMNS", "100")
    assert run_cli("summary", str(tmp_path)) == 0
    printed = capsys.readouterr().out
    # Each rank's row marks how it ended, and no header of the rank table is broken inside a word to make room for
    # the mark (the table's widths left out the space between columns: "failure" / "s")
    assert [line.split()[:2] for line in printed.splitlines() if line[:1] in "01" and line[:1]] == [
        ["0", "stopped"], ["1", "stopped"]]
    words = printed.split()
    assert all(w in words for w in "compile ids graph breaks failures recompiles cache hit/miss time parse problems".split())
    out = " ".join(words)
    assert "both ranks stopped with BackendCompilerFailed: backend='strict_backend' raised: AssertionError: " \
           "expected 2 inputs, got 1 raised at uncaught_exception.py:" in out
    assert "rank 0 crashed" not in out and "rank 1 stopped" not in out


HOOKED = """
import sys, threading
sys.path.insert(0, {src!r})
from compilescope import bytecode_capture
bytecode_capture.record_crashes()  # as run's child does (the directory: TORCH_TRACE)

def inner(kind):
    if kind == "thread":
        raise LookupError("lost in a thread")
    if kind == "interrupt":
        raise KeyboardInterrupt
    raise ValueError("bad value " + "x" * {long})

def outer(kind):
    inner(kind)

kind = sys.argv[1]
if kind == "thread":
    t = threading.Thread(target=outer, args=(kind,), name="loader")
    t.start()
    t.join()
    print("main thread went on")
else:
    outer(kind)
"""


def _run_hooked(tmp_path, kind: str, long: int = 3):
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(HOOKED.format(src=str(SRC), long=long)))
    traces = tmp_path / f"t_{kind}"
    traces.mkdir()
    proc = subprocess.run([sys.executable, str(program), kind], env=clean_env(TORCH_TRACE=str(traces)),
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    [crash_file] = traces.iterdir()
    return proc, read_crash_file(str(crash_file)), program


def test_an_uncaught_exception_is_recorded_and_still_printed(tmp_path):
    """No torch needed: the hooks are stdlib. Python's exit status and traceback are as without them."""
    proc, recorded, program = _run_hooked(tmp_path, "raise")
    assert proc.returncode == 1
    assert proc.stderr.rstrip().endswith("ValueError: bad value xxx") and "Traceback" in proc.stderr
    crash = parse_crash(recorded.text)
    assert crash.exception and crash.error == "ValueError: bad value xxx"
    raise_line = _line_of(program, 'raise ValueError("bad value "')
    assert [(f.function, f.line) for f in crash.frames] == [
        ("inner", raise_line), ("outer", _line_of(program, "    inner(kind)")), ("<module>", _line_of(program, "    outer(kind)"))]
    assert crash.said == f"ValueError: bad value xxx raised at prog.py:{raise_line} in inner"


def test_a_long_message_is_bounded(tmp_path):
    proc, recorded, _ = _run_hooked(tmp_path, "raise", long=100_000)
    assert proc.returncode == 1
    record = json.loads(recorded.text.splitlines()[0].split(": ", 1)[1])
    assert len(record["message"]) == 4000 and len(recorded.text) < 80_000
    assert len(parse_crash(recorded.text).error) < 400


def test_keyboard_interrupt_is_not_recorded(tmp_path):
    """A Ctrl-C is the user's stop, not a failure (run says the program was interrupted): the crash file stays empty,
    and run removes it."""
    proc, recorded, _ = _run_hooked(tmp_path, "interrupt")
    # (Python ends an uncaught KeyboardInterrupt by SIGINT, as without the hook)
    assert proc.returncode == -signal.SIGINT and "KeyboardInterrupt" in proc.stderr
    assert recorded.text == ""


def test_a_thread_s_exception_is_recorded_as_the_thread_s(tmp_path):
    proc, recorded, program = _run_hooked(tmp_path, "thread")
    assert proc.returncode == 0 and "main thread went on" in proc.stdout and "LookupError" in proc.stderr
    crash = parse_crash(recorded.text)
    assert crash.thread == "loader" and crash.error == "LookupError: lost in a thread"
    assert crash.ending.startswith("lost thread loader to LookupError: lost in a thread raised at prog.py:")


@pytest.mark.torch
def test_capture_records_the_exception_that_left_the_block(tmp_path, capsys):
    traces = tmp_path / "t"
    traces.mkdir()
    proc = subprocess.run([sys.executable, str(OUR_PROGRAMS / "capture_uncaught.py"), str(traces)], cwd=tmp_path,
                          env=clean_env(), capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.rstrip().endswith("RuntimeError: loss is not finite at step 3")
    said = {k: v for line in proc.stdout.splitlines() if line.startswith("{") for k, v in json.loads(line).items()}
    # the ValueError the program caught left nothing (it never reached sys.excepthook)
    assert not any(name.startswith("compilescope_crash_") for name in said["after_caught"])
    crash_file = traces / f"compilescope_crash_{said['pid']}.txt"
    assert crash_file.is_file()
    assert run_cli("summary", str(traces)) == 0
    out = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())
    program = OUR_PROGRAMS / "capture_uncaught.py"
    raised = _line_of(program, 'raise RuntimeError("loss is not finite')
    assert (f"the program stopped with RuntimeError: loss is not finite at step 3 raised at capture_uncaught.py:{raised} "
            f"in check") in out
    assert f"in {crash_file.name} beside the log" in out


def test_a_native_crash_after_a_recorded_exception_is_the_ending(tmp_path, capsys):
    """A thread's exception is recorded and the process goes on, then dies in native code: faulthandler's text follows
    the exception's record in the crash file, and the crash is what ended the process (for the reader, run and
    diagnose alike, and a directory without a log). The text: this fixture's record, then native_crash.log.gz's."""
    _, recorded = _crash_record(LOG)
    _, native = _crash_record(torch213("native_crash.log.gz"))
    assert native.startswith("Fatal Python error: Segmentation fault\n")
    text = recorded + "\n" + native  # (exception_text ends its record with a line end; faulthandler writes after it)
    end = ending(text)
    assert not end.exception and end.faulthandler == native
    assert crash_headline(text) == "Segmentation fault"
    crash, alone = parse_crash(text), parse_crash(native)
    assert not crash.exception and crash.error == "Segmentation fault"
    assert crash.said == alone.said and crash.ending.startswith("crashed: Segmentation fault in __init__.py:")
    report = CrashReport(1, text, None)  # what run prints, and diagnose takes as a crash (not an exception)
    assert not report.exception and report.headline == "Segmentation fault" and report.stack == native
    (tmp_path / "compilescope_crash_4242.txt").write_text(text)
    assert run_cli(str(tmp_path)) == 2
    assert "a process died in native code before torch logged anything: compilescope_crash_4242.txt says " \
           "'Fatal Python error: Segmentation fault'" in capsys.readouterr().err
    # without faulthandler's text, the recorded exception is the ending, as before
    assert ending(recorded).exception and parse_crash(recorded).exception and CrashReport(1, recorded, None).exception


@pytest.mark.torch
def test_run_says_a_thread_s_exception_lost_the_thread_not_the_process(tmp_path):
    """A thread raised and the program went on to exit 0: run's line says the thread was lost, as the report does."""
    program = tmp_path / "lose_thread.py"
    program.write_text(textwrap.dedent("""
        import threading
        import torch

        @torch.compile(backend="eager")
        def f(x):
            return x.sin() + 1

        def load():
            raise LookupError("lost in a thread")

        f(torch.randn(4))
        t = threading.Thread(target=load, name="loader")
        t.start()
        t.join()
        print("main thread went on", flush=True)
    """))
    proc = compilescope("run", "--no-browser", "--trace-dir", tmp_path / "t", "-o", tmp_path / "r", program,
                        cwd=tmp_path, env=clean_env())
    assert proc.returncode == 0 and "main thread went on" in proc.stdout, proc.stderr[-2000:]
    assert re.search(r"process \d+ lost thread loader to LookupError: lost in a thread \(recorded, added to .*\.log\)",
                     proc.stderr), proc.stderr[-2000:]
    assert "stopped with" not in proc.stderr


def test_a_message_line_that_reads_like_faulthandlers_is_no_native_crash(tmp_path):
    """The fixture's record with a line `Fatal Python error: Segmentation fault` in the exception's message (in its
    JSON line and in the traceback Python printed, as exception_text writes both): the exception ended the process.
    Only faulthandler's own block, after the record, is a native crash: native_crash.log.gz's text after it is."""
    _, recorded = _crash_record(LOG)
    header, printed = recorded.split("\n", 1)
    record = json.loads(header.removeprefix("Uncaught Python exception: "))
    first_line = "AssertionError: expected 2 inputs, got 1\n"
    assert record["message"].count(first_line) == 1 and printed.count(first_line) == 1
    fatal = "Fatal Python error: Segmentation fault\n"
    record["message"] = record["message"].replace(first_line, first_line + fatal)
    text = (f"Uncaught Python exception: {json.dumps(record)}\n" + printed.replace(first_line, first_line + fatal))
    assert "\n" + fatal in text  # a line that starts as faulthandler's first line does
    end = ending(text)
    assert end.exception and end.raised is not None and end.raised.message == record["message"]
    assert crash_headline(text) == ("BackendCompilerFailed: backend='strict_backend' raised: AssertionError: expected "
                                    "2 inputs, got 1")
    crash = parse_crash(text)
    assert crash.exception and crash.ending.startswith("stopped with BackendCompilerFailed")
    assert CrashReport(1, text, None).exception
    # The log read with that record: the program stopped with the exception, not "crashed: Segmentation fault".
    raw = gzip.open(LOG, "rt").read()
    payload = "\n".join("\t" + line for line in recorded.split("\n"))
    assert raw.count(payload) == 1 and raw.count(hashlib.md5(recorded.encode()).hexdigest()) == 1  # (its has_payload)
    changed = tmp_path / "uncaught_exception.log"
    changed.write_text(raw.replace(payload, "\n".join("\t" + line for line in text.split("\n")))
                       .replace(hashlib.md5(recorded.encode()).hexdigest(), hashlib.md5(text.encode()).hexdigest()))
    with read_trace(str(changed)) as trace:
        [read] = insights(trace).crashes.crashes
        assert read.exception and read.error == crash.error
    # faulthandler's block after that record still is the ending.
    _, native = _crash_record(torch213("native_crash.log.gz"))
    combined = text + "\n" + native  # (exception_text ends its record with a line end; faulthandler writes after it)
    assert not ending(combined).exception and ending(combined).faulthandler == native


def test_a_note_that_reads_like_faulthandlers_is_no_native_crash():
    """An exception note is printed after the exception's own line, so the record's end cannot be found from its
    message: exception_text says how many lines its traceback has. A note `Fatal Python error: ...` then stays the
    exception's, and faulthandler's block after the record is still the ending."""
    from compilescope.bytecode_capture import exception_text

    try:
        raise ValueError("x")
    except ValueError as exc:
        exc.add_note("Fatal Python error: noted")
        text = exception_text(type(exc), exc, exc.__traceback__, None)
    assert "\nFatal Python error: noted\n" in text  # as Python printed it, after "ValueError: x"
    end = ending(text)
    assert end.exception and end.raised is not None and end.raised.message == "x" and not end.faulthandler
    _, native = _crash_record(torch213("native_crash.log.gz"))
    combined = text + native
    assert not ending(combined).exception and ending(combined).faulthandler == native

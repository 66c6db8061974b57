"""A program that dies in native code (a segfault): torch logs nothing of it, so `compilescope run` records the stack
Python's faulthandler writes (bytecode_capture.record_crashes) and appends it to the process's log
(runner.attach_crash_reports); the report, `summary` and --json say where it crashed and in whose compiled code.
capture() records it too, and nobody is left to append it: the reader takes it from beside the log
(ingest/crash_files.py).

Real logs: tests/data/torch213 `native_crash.log.gz` (a custom op reads address 0 while [0/0]'s compiled code runs),
`kernel_abort.log.gz` (Inductor's C++ kernel aborts in an OpenMP thread, no Python thread) and tests/data/cuda_torch211 `hf_gpt2_static_cache.log.gz` (transformers' static-cache recipe in reduce-overhead mode
crashed in torch 2.11's Triton launcher while CUDA graph trees ran [0/1], on an H100; the crash happened without
compilescope too, see that README).
"""

from __future__ import annotations

import gzip
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from compilescope.analyses.crash import parse_crash
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.runner import attach_crash_reports

from ..conftest import CUDA211_LOGS, REPO, moved_log, run_cli, torch213
from compilescope.ingest.crash_files import CRASH_TEXT_LIMIT

from .conftest import CHILD_TIMEOUT_S, OUR_PROGRAMS, clean_env, compilescope

NATIVE = torch213("native_crash.log.gz")
KERNEL_ABORT = torch213("kernel_abort.log.gz")
PROGRAM = REPO / "tests" / "data" / "torch213" / "programs" / "native_crash.py"
STATIC_CACHE = CUDA211_LOGS / "hf_gpt2_static_cache.log.gz"
CAPTURE_PROGRAM = OUR_PROGRAMS / "capture_crash.py"
FAULTHANDLER_ON_PROGRAM = OUR_PROGRAMS / "capture_crash_faulthandler_on.py"


def _insights(log):
    with read_trace(str(log)) as trace:
        return insights(trace)


def _raw(log) -> tuple[str, dict[str, str]]:
    """The crash artifact's payload, and each output code file's stem -> its compile id, read from the raw log."""
    lines = (gzip.open(log, "rt") if str(log).endswith(".gz") else open(log)).read().split("\n")
    crash, code = "", {}
    for i, line in enumerate(lines):
        if '"name": "compilescope_crash"' in line:
            j = i + 1
            while j < len(lines) and lines[j].startswith("\t"):
                j += 1
            crash = "\n".join(x[1:] for x in lines[i + 1:j])
        elif '{"inductor_output_code": {"filename": ' in line:
            record = json.loads(line[line.index("{"):])
            stem = record["inductor_output_code"]["filename"].rsplit("/", 1)[-1].removesuffix(".py")
            code[stem] = f"[{record['frame_id']}/{record['frame_compile_id']}]"
    return crash, code


def test_the_crash_in_compiled_code_is_found_and_placed():
    text, code = _raw(NATIVE)
    assert text.startswith("Fatal Python error: Segmentation fault")
    # Independently: the crashing thread's frames that are in a file of generated code name the compile.
    current = text[text.index("Current thread"):]
    on_stack = [stem for stem in code if f"/{stem}.py\"" in current]
    assert len(on_stack) == 1
    [crash] = _insights(NATIVE).crashes.crashes
    assert crash.error == "Segmentation fault" and crash.compile_id == code[on_stack[0]] == "[0/0]"
    assert crash.where.function == "string_at" and crash.where.filename.endswith("/ctypes/__init__.py")
    line = next(i for i, t in enumerate(PROGRAM.read_text().splitlines(), 1) if "ctypes.string_at(0)" in t)
    # (the log names the checkout it was recorded in)
    assert crash.user_frame.filename.endswith("/tests/data/torch213/programs/native_crash.py")
    assert crash.user_frame.line == line
    assert crash.threads == text.count("\nThread 0x") + 1 > 1  # the others, and the one that crashed
    assert crash.during == "while running [0/0]'s compiled code"


def test_the_crash_is_the_first_finding_everywhere(tmp_path, capsys):
    ins = _insights(NATIVE)
    first = ins.findings[0]
    assert first.severity == "error" and first.section == "crash"
    assert first.title == "the program crashed: Segmentation fault in __init__.py:519 (string_at)"
    assert first.detail.startswith("while running [0/0]'s compiled code, called from native_crash.py:")
    assert run_cli("summary", NATIVE) == 0
    out = capsys.readouterr().out
    assert out.index("ERROR  the program crashed") < out.index("\nCrash\n") < out.index("Compile time")
    assert "Segmentation fault  ·  while running [0/0]'s compiled code" in out
    assert run_cli("summary", NATIVE, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    [c] = data["crashes"]["crashes"]
    assert c["compile_id"] == "[0/0]" and c["frames"][0]["function"] == "string_at"
    assert run_cli(NATIVE, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    section = page[page.index('id="insights-crash"'):page.index('id="insights-compile_time"')]
    assert re.search(r'href="#\[0/0\]"[^>]*>\[0/0\]</a>\'s compiled code', section)
    assert len(re.findall(r"<li>", section[section.index('class="crash-stack"'):section.index("</ol>")])) == len(
        c["frames"])


def test_the_crash_record_is_read_as_logged_without_a_compile_id():
    """run writes it after the process died, outside any compile: no compile id is expected of it."""
    with read_trace(str(NATIVE)) as trace:
        assert trace.stats.problems == []


def test_a_crash_in_a_thread_of_native_code_is_placed_by_the_thread_in_compiled_code(tmp_path):
    """kernel_abort.py: Inductor's C++ kernel throws inside its OpenMP region and the process aborts in an OpenMP
    thread. faulthandler marks no thread current; the compile's worker thread is listed first, the main thread (in the
    output code's call) last. The crash is the main thread's, not the idle worker's."""
    text, code = _raw(KERNEL_ABORT)
    assert text.startswith("Fatal Python error: Aborted") and "Current thread" not in text
    blocks = text.split("\nThread 0x")[1:]
    assert len(blocks) == 2 and "concurrent/futures/thread.py" in blocks[0]
    [stem] = [s for s in code if f"/{s}.py\"" in blocks[1]]
    [crash] = _insights(KERNEL_ABORT).crashes.crashes
    assert crash.other_thread and crash.compile_id == code[stem] == "[0/0]"
    assert crash.where.filename.endswith(f"/{stem}.py") and crash.where.function == "call"
    program = REPO / "tests" / "data" / "torch213" / "programs" / "kernel_abort.py"
    # (f's frame runs Dynamo's transformed code, whose instructions carry the line of its def)
    line = next(i for i, t in enumerate(program.read_text().splitlines(), 1) if t.startswith("def f(x):"))
    assert crash.user_frame.filename.endswith("/kernel_abort.py") and crash.user_frame.line == line
    # (the crash is told right after the test switch that made the kernel throw, cpp.inject_relu_bug_TESTING_ONLY)
    first, crashed = _insights(KERNEL_ABORT).findings[:2]
    assert first.section == "testing_only" and "in a thread of native code" in crashed.detail
    assert run_cli(KERNEL_ABORT, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "No Python thread crashed" in page[page.index('id="insights-crash"'):]


def test_two_threads_crashing_at_once_name_one_error():
    """The first line two OpenMP threads wrote at once when both aborted (kernel_abort.py run again; faulthandler's
    handler is entered by each thread before either turns it off)."""
    crash = parse_crash("Fatal Python error: Fatal Python error: AbortedAborted\n\n\n\nThread 0x00007f3d9d7f6040 (most "
                        'recent call first):\n  File "/c/hw/chw.py", line 85 in call\n', {"chw": ("[0/0]", 7, 0)})
    assert (crash.error, crash.compile_id, crash.other_thread) == ("Aborted", "[0/0]", True)


def test_on_cuda_the_triton_launch_under_cuda_graph_trees():
    text, code = _raw(STATIC_CACHE)
    [stem] = [s for s in code if f"/{s}.py\"" in text[text.index("Current thread"):]]
    [crash] = _insights(STATIC_CACHE).crashes.crashes
    assert crash.compile_id == code[stem] == "[0/1]"
    assert crash.where.short == "static_triton_launcher.py:291" and crash.where.function == "run"
    assert crash.during == "while running [0/1]'s compiled code under CUDA graph trees"
    assert crash.user_frame.short == "hf_gpt2_static_cache.py:22"  # generate(), not transformers' frames
    # The generated code's line that was running: the faulthandler frame in that file, read from the raw text.
    line = int(re.search(rf'/{stem}\.py", line (\d+) in partition_0', text)[1])
    assert crash.code_line == line and crash.code_artifact is not None


def test_a_crash_in_inductors_static_launcher_says_how_to_get_a_python_error_instead():
    """Both CUDA crashes are in torch 2.11's static_triton_launcher.py (the raw stacks' innermost frame). Rerun on the
    H200 with TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0, the same program did not crash: Triton's launcher raised a
    TypeError at each generate() (hf_gpt2_static_cache_no_static_launcher.output.txt, what it printed)."""
    rerun = (CUDA211_LOGS / "hf_gpt2_static_cache_no_static_launcher.output.txt").read_text()
    assert "Fatal Python error" not in rerun
    assert rerun.count("generate failed: TypeError Pointer argument must be either uint64 or have data_ptr method") == 2
    beside = CUDA211_LOGS / "capture_crash"
    for log, stack in ((STATIC_CACHE, _raw(STATIC_CACHE)[0]),
                       (next(beside.glob("*.log.gz")), next(beside.glob("compilescope_crash_*.txt")).read_text())):
        current = stack[stack.index("Current thread"):].split("\n")
        assert "torch/_inductor/runtime/static_triton_launcher.py" in current[1]  # the innermost frame
        ins = _insights(log)
        [crash] = ins.crashes.crashes
        assert crash.in_static_launcher
        [finding] = [f for f in ins.findings if f.section == "crash"]
        assert "rerun with TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0" in finding.detail
    # a crash elsewhere (a custom op on the CPU) gets no such advice
    [crash] = _insights(NATIVE).crashes.crashes
    assert not crash.in_static_launcher
    assert not any("STATIC_CUDA_LAUNCHER" in f.detail for f in _insights(NATIVE).findings)


def test_capture_on_cuda_records_the_crash_beside_the_log(capsys):
    """tests/data/cuda_torch211/logs/capture_crash/: the same static-cache program run inside compilescope.capture()
    on an H200 (programs/capture_crash.py); it died of SIGSEGV in the same launcher. capture() had turned faulthandler
    on into the trace directory, so nothing was appended to the log: the reader takes the file beside it."""
    directory = CUDA211_LOGS / "capture_crash"
    [log] = directory.glob("*.log.gz")
    [crash_file] = directory.glob("compilescope_crash_*.txt")
    raw = gzip.open(log, "rt").read()
    assert '"compilescope_crash"' not in raw  # nobody was left to append it
    # the log is the crashed process's: the crash file's name is the pid every record of the log carries
    pid = crash_file.stem.rsplit("_", 1)[1]
    assert set(re.findall(r"^V\d{4} [\d:.]+ (\d+) ", raw, re.M)) == {pid}
    stack = crash_file.read_text()
    assert stack.startswith("Fatal Python error: Segmentation fault")
    assert 'static_triton_launcher.py", line 291 in run' in stack and "capture_crash.py" in stack
    [crash] = _insights(log).crashes.crashes
    assert (crash.where.short, crash.during, crash.file) == (
        "static_triton_launcher.py:291", "while running [0/1]'s compiled code under CUDA graph trees", crash_file.name)
    assert crash.user_frame.short == "hf_gpt2_static_cache.py:22"
    assert run_cli("summary", directory) == 0
    out = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())  # (the panel's side bars)
    assert "ERROR the program crashed: Segmentation fault in static_triton_launcher.py:291 (run)" in out
    assert f"recorded by compilescope in {crash_file.name} beside the log" in out


def test_the_report_links_the_running_line_of_generated_code(tmp_path):
    assert run_cli(NATIVE, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert '<div class="l">crashed: Segmentation fault</div>' in page
    [href] = re.findall(r'class="code-line" href="([^"]+)"', page[page.index('id="insights-crash"'):])
    code_page, anchor = href.split("#")
    assert anchor == "L109" and "/inductor_output_code_" in code_page
    # Independently: line 109 of [0/0]'s output code, as logged, calls the custom op that crashed.
    lines = gzip.open(NATIVE, "rt").read().split("\n")
    start = next(i for i, x in enumerate(lines) if '{"inductor_output_code": ' in x)
    assert "torch.ops.compilescope_test.fragile.default(" in lines[start + 109][1:]
    assert 'id="L109"' in (tmp_path / "r" / code_page).read_text()


def test_a_crash_record_of_nonsense_is_only_text(tmp_path):
    """The payload is untrusted: no frames and no header give 'a crash' and nothing placed; markup stays text."""
    log = tmp_path / "t.log"
    log.write_bytes(torch213("graph_breaks.log").read_bytes())
    pid = re.search(rb"^V\d{4} [\d:.]+ (\d+) ", log.read_bytes(), re.M)[1].decode()
    attach = tmp_path / f"compilescope_crash_{pid}.txt"
    attach.write_text("<script>alert(1)</script>\n  File \"<img src=x>\", line x in f\n")
    [report] = attach_crash_reports(str(tmp_path), [str(log)])
    assert report.log == str(log) and not attach.exists()
    [crash] = _insights(log).crashes.crashes
    assert crash.error == "a crash" and crash.frames == [] and crash.compile_id is None
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_attaching_ends_a_cut_line_and_keeps_what_has_no_log(tmp_path):
    log = tmp_path / "cut.log"
    data = torch213("graph_breaks.log").read_bytes()
    log.write_bytes(data[: data.index(b"\n", len(data) // 2) - 7])  # the crash cut a record in the middle
    pid = re.search(rb"^V\d{4} [\d:.]+ (\d+) ", data, re.M)[1].decode()
    (tmp_path / f"compilescope_crash_{pid}.txt").write_text("Fatal Python error: Aborted\n\nCurrent thread 0x01 "
                                                            "(most recent call first):\n  File \"/x/a.py\", line 3 in f\n")
    (tmp_path / "compilescope_crash_99999999.txt").write_text("Fatal Python error: Segmentation fault\n")
    (tmp_path / "compilescope_crash_7.txt").write_text("")  # a process that did not crash
    found = attach_crash_reports(str(tmp_path), [str(log)])
    assert [(c.pid, c.headline, c.log) for c in found] == [(int(pid), "Aborted", str(log)),
                                                           (99999999, "Segmentation fault", None)]
    assert sorted(p.name for p in tmp_path.glob("compilescope_crash_*")) == ["compilescope_crash_99999999.txt"]
    with read_trace(str(log)) as trace:
        ins = insights(trace)
        assert not [p for p in trace.stats.problems if "md5" in str(p)]  # the appended record's md5 is right
    [crash] = ins.crashes.crashes
    assert crash.error == "Aborted" and [f.short for f in crash.frames] == ["a.py:3"]


@pytest.mark.torch
def test_run_records_a_segfault_and_says_so(tmp_path):
    program = tmp_path / "segv.py"
    program.write_text(textwrap.dedent("""
        import ctypes
        import torch

        @torch.compile(backend="eager")
        def f(x):
            return x.sin() + 1

        print(float(f(torch.randn(4)).sum()), flush=True)
        ctypes.string_at(0)
    """))
    proc = compilescope("run", "--no-browser", "--trace-dir", tmp_path / "t", "-o", tmp_path / "r", program,
                        cwd=tmp_path, env=clean_env())
    assert proc.returncode == 139
    assert "the program was killed by SIGSEGV (status 139)" in proc.stderr
    assert re.search(r"process \d+ crashed \(Segmentation fault\); its stack \(added to .*\.log\):\n"
                     r"Fatal Python error: Segmentation fault", proc.stderr)
    assert f'File "{program}", line 10 in <module>' in proc.stderr
    assert not list((tmp_path / "t").glob("compilescope_crash_*"))  # each attached or, empty, removed
    [log] = (tmp_path / "t").glob("*.log")
    assert log.read_text().count('"name": "compilescope_crash"') == 1
    # The report's ending leads with it, where the stack printed above says it crashed, and names the log for what to
    # do (where the user's code called it: summary's).
    [crash_line] = re.findall(r'File "[^"]*/ctypes/__init__\.py", line (\d+) in string_at', proc.stderr)
    lines = proc.stdout.splitlines()
    assert lines[1:3] == ["Fix first:", f"  ERROR  the program crashed: Segmentation fault in __init__.py:{crash_line} "
                                        "(string_at)"]  # (after the program's own line)
    assert any(line.endswith(f"what to do about each: compilescope summary {log}") for line in lines[3:])
    assert 'id="insights-crash"' in (tmp_path / "r" / "index.html").read_text()


@pytest.mark.torch
def test_capture_records_a_segfault_and_the_reader_takes_it_from_beside_the_log(tmp_path, capsys):
    """capture_crash.py: in a process of its own, capture() around compiled code whose custom op reads address 0. The
    process dies, nobody appends the crash to the log, and reading the directory finds it as `run`'s."""
    traces = tmp_path / "t"
    traces.mkdir()
    env = clean_env()
    env.pop("PYTHONFAULTHANDLER", None)
    proc = subprocess.run([sys.executable, str(CAPTURE_PROGRAM), str(traces)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert proc.returncode == -signal.SIGSEGV, proc.stderr[-2000:]
    said = {k: v for line in proc.stdout.splitlines() if line.startswith("{") for k, v in json.loads(line).items()}
    name = f"compilescope_crash_{said['pid']}.txt"
    # faulthandler already on (as -X faulthandler or pytest turn it on): the crash file is made for the block too (a
    # tee copies a crash to it and to stderr), removed after it, and faulthandler is on again after it
    assert said["already_on"] == {"inside": {"faulthandler": True, "files": [name]},
                                  "after": {"faulthandler": True, "files": []}}
    # off: on for the block, writing into the trace directory; off again after it, the file (nothing crashed) removed
    assert said["off"] == {"inside": {"faulthandler": True, "files": [name]}, "after": {"faulthandler": False, "files": []}}
    [log] = traces.glob("*.log")
    assert said["compiled"]["inside"]["files"] == sorted([name, log.name]) and "not reached" not in proc.stdout
    text = (traces / name).read_text()
    assert text.startswith("Fatal Python error: Segmentation fault") and "compilescope_crash" not in log.read_text()
    # Independently: the generated code file on the crashing thread's stack, the compile the log names it for, and
    # the program's line that crashed.
    _, code = _raw(log)
    [stem] = [s for s in code if f"/{s}.py\"" in text[text.index("Current thread"):]]
    line = next(i for i, t in enumerate(CAPTURE_PROGRAM.read_text().splitlines(), 1) if "ctypes.string_at(0)" in t)
    before = log.read_bytes()

    assert run_cli("summary", traces, "--json") == 0
    [crash] = json.loads(capsys.readouterr().out)["crashes"]["crashes"]
    assert crash["error"] == "Segmentation fault" and crash["compile_id"] == code[stem] == "[0/0]"
    assert crash["user_frame"]["filename"].endswith("/tests/capture/programs/capture_crash.py")
    assert (crash["user_frame"]["line"], crash["user_frame"]["function"], crash["file"]) == (line, "fragile", name)
    first = _insights(log).findings[0]
    assert (first.severity, first.section) == ("error", "crash")
    assert f"called from capture_crash.py:{line} in fragile" in first.detail and f"in {name} beside the log" in first.detail
    assert run_cli("check", traces) == 1
    assert "no-crash" in capsys.readouterr().out
    assert log.read_bytes() == before and (traces / name).exists()  # reading changes nothing

    # As `run` would have had it (the crash appended to the log), the same crash.
    as_run = tmp_path / "as_run"
    as_run.mkdir()
    shutil.copy(log, as_run)
    shutil.copy(traces / name, as_run)
    [attached] = attach_crash_reports(str(as_run), [str(as_run / log.name)])
    assert attached.log == str(as_run / log.name) and not (as_run / name).exists()
    assert run_cli("summary", as_run, "--json") == 0
    [appended] = json.loads(capsys.readouterr().out)["crashes"]["crashes"]
    # where each is (the record appended to the log, the file beside it: not a record of the log) and nothing else
    assert appended["file"] is None and crash["record"] is None and isinstance(appended["record"], int)
    assert {**appended, "file": name, "record": None} == crash


def _run_with_faulthandler_on(traces, mode: str) -> tuple[subprocess.CompletedProcess, dict]:
    """capture_crash_faulthandler_on.py under `python -X faulthandler`: the process, and what it printed."""
    traces.mkdir()
    env = clean_env()
    env.pop("PYTHONFAULTHANDLER", None)
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(FAULTHANDLER_ON_PROGRAM), str(traces), mode],
                          cwd=traces.parent, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert proc.returncode == -signal.SIGSEGV, proc.stderr[-2000:]
    said = {k: v for line in proc.stdout.splitlines() if line.startswith("{") for k, v in json.loads(line).items()}
    assert said["before"] == {"faulthandler": True, "files": [], "children": False}
    return proc, said


def _crash_line(program) -> int:
    return next(i for i, t in enumerate(program.read_text().splitlines(), 1) if "ctypes.string_at(0)" in t)


@pytest.mark.torch
def test_capture_records_a_segfault_when_faulthandler_is_already_on_and_stderr_still_has_it(tmp_path, capsys):
    """Who runs with -X faulthandler (or PYTHONFAULTHANDLER, or under pytest) turned it on to see a crash's stack: the
    crash inside the block is in the crash file beside the log, for the reader, and on stderr, where it was before."""
    traces = tmp_path / "t"
    proc, said = _run_with_faulthandler_on(traces, "inside")
    name = f"compilescope_crash_{said['pid']}.txt"
    [log] = traces.glob("*.log")
    # inside: the crash file made, and a child of the process (the tee) running
    assert said["inside"] == {"faulthandler": True, "files": sorted([name, log.name]), "children": True}
    assert "after" not in said
    text = (traces / name).read_text()
    line = _crash_line(FAULTHANDLER_ON_PROGRAM)
    assert text.startswith("Fatal Python error: Segmentation fault\n")
    assert f'File "{FAULTHANDLER_ON_PROGRAM}", line {line} in crash' in text
    assert text.rstrip("\n") in proc.stderr  # the same stack on stderr, whole
    assert "compilescope_crash" not in log.read_text()

    assert run_cli("summary", traces, "--json") == 0
    [crash] = json.loads(capsys.readouterr().out)["crashes"]["crashes"]
    assert (crash["error"], crash["file"]) == ("Segmentation fault", name)
    assert (crash["user_frame"]["line"], crash["user_frame"]["function"]) == (line, "crash")
    assert crash["user_frame"]["filename"] == str(FAULTHANDLER_ON_PROGRAM)
    assert run_cli("summary", traces) == 0
    out = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())  # (the panel's side bars)
    assert "ERROR the program crashed: Segmentation fault in __init__.py:" in out
    assert f"recorded by compilescope in {name} beside the log" in out


@pytest.mark.torch
def test_after_a_block_under_faulthandler_it_writes_to_stderr_again_and_nothing_is_left(tmp_path, capsys):
    """The block ends without a crash: no crash file, no tee (running or a zombie), faulthandler on stderr again, so a
    crash after the block has its stack on stderr, as -X faulthandler had it."""
    traces = tmp_path / "t"
    proc, said = _run_with_faulthandler_on(traces, "after")
    name = f"compilescope_crash_{said['pid']}.txt"
    [log] = traces.glob("*.log")
    assert said["inside"] == {"faulthandler": True, "files": sorted([name, log.name]), "children": True}
    assert said["after"] == {"faulthandler": True, "files": [log.name], "children": False}
    assert sorted(p.name for p in traces.iterdir()) == [log.name]
    # the crash after the block (the last line of the program calls crash()), from faulthandler on stderr
    assert proc.stderr.count("Fatal Python error: Segmentation fault\n") == 1
    stack = proc.stderr[proc.stderr.index("Current thread"):]
    last = len(FAULTHANDLER_ON_PROGRAM.read_text().rstrip("\n").splitlines())
    assert re.findall(rf'File "{re.escape(str(FAULTHANDLER_ON_PROGRAM))}", line (\d+) in (\S+)', stack) == [
        (str(_crash_line(FAULTHANDLER_ON_PROGRAM)), "crash"), (str(last), "<module>")]
    assert run_cli("summary", traces, "--json") == 0
    assert json.loads(capsys.readouterr().out)["crashes"]["crashes"] == []


def test_a_block_inside_a_block_under_faulthandler_leaves_the_outer_recording(tmp_path):
    """Nested capture() blocks with faulthandler already on (as pytest has it): one crash file and one tee, the outer
    block's; the inner block's end changes nothing, the outer's removes the file (nothing crashed) and waits for its
    tee, and faulthandler is on after it."""
    import faulthandler

    from compilescope import bytecode_capture

    was_on = faulthandler.is_enabled()
    faulthandler.enable(file=sys.stderr)  # (as pytest's plugin and -X faulthandler have it)
    try:
        outer_dir, inner_dir = tmp_path / "outer", tmp_path / "inner"
        outer_dir.mkdir()
        inner_dir.mkdir()
        name = f"compilescope_crash_{os.getpid()}.txt"
        outer = bytecode_capture.record_crashes(str(outer_dir))
        tee = bytecode_capture._crash_file["tee"].process
        inner = bytecode_capture.record_crashes(str(inner_dir))
        assert [p.name for p in outer_dir.iterdir()] == [name] and list(inner_dir.iterdir()) == []
        inner.remove()
        assert [p.name for p in outer_dir.iterdir()] == [name] and tee.poll() is None  # still recording
        outer.remove()
        assert list(outer_dir.iterdir()) == [] and tee.returncode == 0 and faulthandler.is_enabled()
        outer.remove()  # (twice: nothing more)
        assert bytecode_capture._crash_file == {}
    finally:
        if not was_on:
            faulthandler.disable()


def _log_and_pid(directory, name="a.log"):
    log = directory / name
    log.write_bytes(torch213("graph_breaks.log").read_bytes())
    return log, re.search(rb"^V\d{4} [\d:.]+ (\d+) ", log.read_bytes(), re.M)[1].decode()


def _crashes(log):
    """The log's crashes, the crash file read, and the problems of reading (none: the record read as logged, and
    written outside any compile on purpose)."""
    with read_trace(str(log)) as trace:
        return insights(trace).crashes.crashes, trace.crash_file, trace.stats.problems


ABORTED = (b"Fatal Python error: Aborted\r\n\r\nCurrent thread 0x01 (most recent call first):\r\n"
           b'  File "/x/caf\xe9.py", line 3 in f\r\n\x00\xfe\xff')


def test_the_reader_takes_a_crash_beside_the_log_once(tmp_path):
    """A crash file beside the log of its pid (capture() died) is read as the log's crash: untrusted bytes (CRLF,
    not UTF-8) kept as text; the log itself is not changed. One that run appended is not read twice, and one of a pid
    no log has is no log's (it is left out: a report is of a log; run prints such a crash itself)."""
    log, pid = _log_and_pid(tmp_path)
    before = log.read_bytes()
    (tmp_path / f"compilescope_crash_{pid}.txt").write_bytes(ABORTED)
    (tmp_path / "compilescope_crash_99999999.txt").write_text("Fatal Python error: Segmentation fault\n")
    [crash], file, problems = _crashes(log)
    assert (crash.error, [f.short for f in crash.frames]) == ("Aborted", ["caf\ufffd.py:3"]) and not problems
    assert file == str(tmp_path / f"compilescope_crash_{pid}.txt") and crash.file == f"compilescope_crash_{pid}.txt"
    assert log.read_bytes() == before

    # run appended it, and could not remove the file: the log's own is the one
    [report] = attach_crash_reports(str(tmp_path), [str(log)], pid=int(pid))
    assert report.log == str(log) and log.read_bytes() != before
    (tmp_path / f"compilescope_crash_{pid}.txt").write_bytes(ABORTED)
    [crash], file, problems = _crashes(log)
    assert crash.error == "Aborted" and file is None and crash.file is None and not problems

    # only the other pid's file beside a log of its own: no crash
    other = tmp_path / "other"
    other.mkdir()
    log, _ = _log_and_pid(other)
    shutil.copy(tmp_path / "compilescope_crash_99999999.txt", other)
    assert _crashes(log) == ([], None, [])


def test_a_directory_with_a_crash_and_no_log_says_the_process_died_before_logging(tmp_path, capsys):
    """capture() turned faulthandler on, and the process died before torch logged anything: no log, one crash file.
    The error says so, with the crash's first line (repr: its bytes are untrusted), instead of only 'no logs'."""
    (tmp_path / "compilescope_crash_4242.txt").write_bytes(ABORTED)
    (tmp_path / "compilescope_crash_4243.txt").write_bytes(b"")  # a process of the run that did not crash
    assert run_cli(str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no TORCH_TRACE logs in this directory" in err
    assert "a process died in native code before torch logged anything: compilescope_crash_4242.txt says " \
           "'Fatal Python error: Aborted'" in err
    (tmp_path / "compilescope_crash_4242.txt").write_bytes(b"")
    assert run_cli(str(tmp_path)) == 2
    assert "died" not in capsys.readouterr().err  # empty files: nothing crashed


def test_a_crash_is_the_newest_log_of_its_pid(tmp_path):
    """Two logs of one pid (two capture() blocks of one process, or a pid used again): the crash is the later's."""
    older, pid = _log_and_pid(tmp_path, "older.log")
    newer, _ = _log_and_pid(tmp_path, "newer.log")
    os.utime(older, (1_000_000_000, 1_000_000_000))
    (tmp_path / f"compilescope_crash_{pid}.txt").write_bytes(ABORTED)
    assert _crashes(older)[0] == []
    assert [c.error for c in _crashes(newer)[0]] == ["Aborted"]


def test_a_crash_file_is_read_only_as_a_bounded_regular_file(tmp_path):
    """A trace directory from elsewhere: a symlink named as a crash file (to a file of the reader's) and a FIFO (whose
    open would wait for a writer) are not read; a huge file is read up to CRASH_TEXT_LIMIT, and says it was cut there
    (its first lines tell the crash; cut silently, its stack's end read as the crash's end)."""
    log, pid = _log_and_pid(tmp_path)
    crash_file = tmp_path / f"compilescope_crash_{pid}.txt"
    secret = tmp_path / "secret.txt"
    secret.write_text("Fatal Python error: key\n")
    crash_file.symlink_to(secret)
    assert _crashes(log) == ([], None, [])
    crash_file.unlink()
    os.mkfifo(crash_file)
    assert _crashes(log) == ([], None, [])
    crash_file.unlink()
    huge = b"Fatal Python error: Segmentation fault\n" + b"x" * (2 * CRASH_TEXT_LIMIT)
    crash_file.write_bytes(huge)
    [crash], _, problems = _crashes(log)
    assert crash.error == "Segmentation fault" and not problems
    kept, note = crash.text.rsplit("\n", 1)
    assert kept.encode() == huge[:CRASH_TEXT_LIMIT]
    assert note == f"[compilescope: cut at {CRASH_TEXT_LIMIT:,} bytes of {len(huge):,}]"
    crash_file.write_bytes(huge[:CRASH_TEXT_LIMIT])  # at the bound: whole, no note
    [crash], _, _ = _crashes(log)
    assert crash.text.encode() == huge[:CRASH_TEXT_LIMIT]


@pytest.mark.torch
def test_capture_first_appends_an_earlier_process_crash_of_its_own_pid(tmp_path):
    """A trace directory used again by a process of the same pid (a container's first process has the same pid each
    run) holds the crash file of the earlier one, which died in a capture: appended to that process's log before this
    capture's crash file could replace it."""
    import compilescope

    log, pid = _log_and_pid(tmp_path)
    log.write_bytes(log.read_bytes().replace(f" {pid} ".encode(), f" {os.getpid()} ".encode()))
    (tmp_path / f"compilescope_crash_{os.getpid()}.txt").write_bytes(ABORTED)
    with compilescope.capture(trace_dir=tmp_path):
        pass
    assert not (tmp_path / f"compilescope_crash_{os.getpid()}.txt").exists()
    [crash], file, problems = _crashes(log)
    assert crash.error == "Aborted" and file is None and not problems


CAPTURE_CRASH_LOG = CUDA211_LOGS / "capture_crash" / "dedicated_log_torch_trace_m1o8jsi4.log.gz"


def _envelopes(log) -> tuple[int, list[tuple[int, dict]]]:
    """The raw log's line count, and each record's (line, envelope), read from the file."""
    lines = gzip.open(log, "rt").read().split("\n")
    found = [(i, json.loads(x[x.index("] {") + 2:])) for i, x in enumerate(lines, 1) if re.match(r"V\d{4} ", x)]
    return len(lines), found


def _listed_outside(page: str) -> list[str]:
    """The names the report lists under "Outside any compilation", without their numbers."""
    section = page[page.index('id="no-compile-id"'):]
    section = section[:section.index("</ul>")]
    return [re.sub(r"_\d+\.\w+$", "", name) for name in re.findall(r'">([^<]+)</a> <span class="num">', section)]


@pytest.mark.parametrize("log", [CAPTURE_CRASH_LOG, STATIC_CACHE], ids=["capture_crash", "hf_gpt2_static_cache"])
def test_the_report_lists_as_logged_only_the_records_the_log_holds(log, tmp_path):
    """hf_gpt2_static_cache: `run` appended the crash to the log (its last record, no compile id), so it is one of the
    log's outputs without a compile id, and the crash card links that record. capture_crash: the crash is in
    compilescope_crash_673.txt beside the log, which the log does not hold: the crash card shows it and names the file,
    and the outputs of the log (that list, compile_directory.json as tlparse writes it, raw.jsonl, the records read)
    are the log's alone."""
    n_lines, envelopes = _envelopes(log)
    outside = [e["artifact"]["name"] for _, e in envelopes
               if "artifact" in e and "frame_id" not in e and "compiled_autograd_id" not in e]
    appended = [(i, e) for i, e in envelopes if e.get("artifact", {}).get("name") == "compilescope_crash"]
    assert outside == ["compilescope_cudagraph_skip"] + (["compilescope_crash"] if appended else [])
    assert bool(appended) == (log == STATIC_CACHE)
    out = tmp_path / "r"
    assert run_cli(log, "-o", out, "--no-browser") == 0
    page = (out / "index.html").read_text()
    assert _listed_outside(page) == outside
    directory = json.loads((out / "compile_directory.json").read_text())
    assert [re.sub(r"_\d+\.\w+$", "", a["name"]) for a in directory["[-/-]"]["artifacts"]] == outside
    raw = [json.loads(x) for x in (out / "raw.jsonl").read_text().splitlines()]
    assert all(r["log_lineno"] <= n_lines for r in raw if "log_lineno" in r)
    crash_lines = [r["log_lineno"] for r in raw if r.get("artifact", {}).get("name") == "compilescope_crash"]
    assert crash_lines == [i for i, _ in appended]
    assert re.search(r"<th>records read</th><td>(\d+)</td>", page)[1] == str(len(envelopes))
    card = page[page.index('id="insights-crash"'):]
    card = card[:card.index("</ol>")]
    if appended:
        [record] = re.findall(r'<a href="([^"]+)">a record outside any compilation</a>', card)
        assert record in page[page.index('id="no-compile-id"'):] and "compilescope_crash_" in record
        assert "beside the log" not in card
    else:
        assert "in compilescope_crash_673.txt beside the log: not a record of the log" in card
        assert "a record outside any compilation" not in card


@pytest.mark.parametrize("log,stack", [
    (CAPTURE_CRASH_LOG, (CUDA211_LOGS / "capture_crash" / "compilescope_crash_673.txt").read_text()),
    (STATIC_CACHE, _raw(STATIC_CACHE)[0]), (NATIVE, _raw(NATIVE)[0])], ids=["capture_crash", "hf_gpt2_static_cache", "native_crash"])
def test_each_frame_of_the_crash_links_to_its_line_of_generated_code_or_source(log, stack, tmp_path):
    """Each frame of the crashed thread in a compile's output code (the file named by an `inductor_output_code`
    record) links to that line of the compile's output code page; a frame of a file the report has a source page of
    links there: one Dynamo compiled, and that of the innermost frame of the program's own code, whose page marks the
    line where it died. Read from the raw stack: the H200/H100 crashes run partition_0 (line 898) from call (line 1069) of
    [0/1]'s code; native_crash runs line 109, `call` of [0/0]'s. A recorded program's frame links to its line whether
    the program is on this machine (a copy of the log whose paths name this checkout's) or not (the page holds only
    the lines the log names: the frame's row among them)."""
    _, code = _raw(log)
    current = stack[stack.index("Current thread"):].split("\n\n")[0]
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', current)
    # Innermost first: the first frame of the recorded programs' own files (hf_gpt2_static_cache.py:22 in main, under
    # transformers' generate; native_crash.py:17 in fragile, under ctypes' string_at).
    died_in = next(f for f, _, _ in frames if "/programs/" in f)
    expected = {(f, int(n), fn): code[os.path.basename(f)[:-3]] for f, n, fn in frames if os.path.basename(f)[:-3] in code}
    lines = gzip.open(log, "rt").read().split("\n")
    for (path, n, function), cid in expected.items():  # the line is in the function faulthandler names
        start = next(i for i, x in enumerate(lines) if f'"filename": "{path}"' in x and "inductor_output_code" in x)
        body = [x[1:] for x in lines[start + 1:start + 1 + n]]
        assert next(x for x in reversed(body) if x.startswith("def ") or x.startswith("    def ")).split("def ")[1].startswith(function)
    assert {(os.path.basename(f), n, fn) for f, n, fn in expected} == (
        {("cfmzk3ykzt3mgh2qhuzxi7fi6o5ottd27cursz2vfzogxiwicjgp.py", 109, "call")} if log == NATIVE else
        {(os.path.basename(next(iter(expected))[0]), 898, "partition_0"), (os.path.basename(next(iter(expected))[0]), 1069, "call")})
    reports = [log]
    if log.parents[1].joinpath("programs").is_dir():  # (capture_crash's program is of the capture tests)
        (tmp_path / "here").mkdir()
        (tmp_path / "elsewhere").mkdir()
        reports = [moved_log(log, tmp_path / "here"), moved_log(log, tmp_path / "elsewhere", programs=tmp_path / "gone")]
    for moved in reports:
        _each_frame_links(moved, frames, expected, died_in, tmp_path / moved.parent.name / "r")


def _each_frame_links(log, frames, expected, died_in, out) -> None:
    assert run_cli(log, "-o", out, "--no-browser") == 0
    page = (out / "index.html").read_text()
    card = page[page.index('class="crash-stack"'):]
    items = re.findall(r"<li>(.*?)</li>", card[:card.index("</ol>")], re.S)
    assert len(items) == len(frames)
    for (path, n, function), item in zip(frames, items):
        key = (path, int(n), function)
        if key in expected:
            href = re.search(r'class="loc mono code-frame" href="([^"]+)#L(\d+)" title="([^"]*)">([^<]*)</a>', item)
            assert href is not None and f"/inductor_output_code_{os.path.basename(path)[:-3]}_" in href[1]
            assert int(href[2]) == int(n)  # (these output codes start at their first line: none dropped)
            assert f'id="L{n}"' in (out / href[1]).read_text() and expected[key] in item
            # named by its compile, not by the file's hash name (two lines on a phone), which its title keeps
            assert href[4] == f"{expected[key]} output code, line {n}"
            assert html.unescape(href[3]) == f"{path}: line {n} of {expected[key]}'s generated code"
            assert item.endswith(f'</a> <span class="muted">in {function}</span>')
        elif path.endswith(("/native_crash.py", "/transformers/utils/generic.py")) or path == died_in:  # (see above)
            source = re.search(rf'class="loc mono src-link" href="(sources/{os.path.basename(path)}_\w+\.html)#L{n}"', item)
            assert source and f'id="L{n}"' in (out / source[1]).read_text(), (log, item)
        else:
            assert "href" not in item

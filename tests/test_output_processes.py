"""A report written by several processes (OutputDir.write_all, processes > 1) is the report one process writes.

The processes are forked from the one that read the log and share its spool files: payloads are read at an
offset (model/payloads.py), never by moving the shared file position.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compilescope.analyses.analyze import analyze
from compilescope.cli import report as report_command
from compilescope.cli.report import PARALLEL_FROM, report_processes
from compilescope.errors import CompilescopeError
from compilescope.ingest.reader import ReadOptions, read_trace
from compilescope.model.payloads import Spool
from compilescope.output import OutputDir, _Shares
from compilescope.render.options import ReportOptions
from compilescope.report_writer import write_report

from .conftest import shared, torch213

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="several processes need fork")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@needs_fork
@pytest.mark.parametrize("log", [torch213("provenance.log"), "gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"])
def test_two_processes_write_the_report_one_writes(tmp_path, log):
    log = log if isinstance(log, Path) else shared(log)
    with read_trace(str(log), ReadOptions()) as trace:
        results = analyze(trace)
        one = write_report(trace, str(tmp_path / "one"), False, ReportOptions(), results)
        two = write_report(trace, str(tmp_path / "two"), False, ReportOptions(), results, processes=2)
        # The payload spool is still readable here after the forked process read it too.
        write_report(trace, str(tmp_path / "again"), False, ReportOptions(), results)
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two") == _tree(tmp_path / "again")
    assert two.files == one.files == len(_tree(tmp_path / "one"))
    assert two.bytes == one.bytes
    assert len(two.files_by_process) == 2 and sum(two.files_by_process) == one.files


@needs_fork
def test_a_file_that_cannot_be_written_fails_the_report_whichever_process_took_it(tmp_path):
    def files():
        for i in range(300):
            yield f"d{i % 7}/f{i}.txt", iter([b"x" * i])
        yield "blocked/inside.txt", b"never"
        for i in range(300):
            yield f"e{i}.txt", b"y"

    output = OutputDir(str(tmp_path / "out"), False)
    (tmp_path / "out" / "blocked").write_text("a file where the report needs a directory")
    with pytest.raises(CompilescopeError, match="blocked"):
        output.write_all(files(), processes=2)


@needs_fork
def test_a_bug_in_the_second_process_is_reported_with_its_traceback(tmp_path):
    def broken() -> Iterator[bytes]:
        raise ZeroDivisionError("in a page")
        yield b""  # (a generator: raises when written)

    def files():
        for i in range(2000):  # enough that the second process takes some of the broken pages
            yield f"f{i}.txt", broken() if i % 2 else b"ok"

    output = OutputDir(str(tmp_path / "out"), False)
    with pytest.raises((ZeroDivisionError, CompilescopeError), match="in a page"):
        output.write_all(files(), processes=2)


@needs_fork
def test_shares_give_every_index_to_exactly_one_process():
    shares = _Shares()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        taken = [i for i in range(5000) if shares.take(i)]
        os.write(write_end, " ".join(map(str, taken)).encode())
        os._exit(0)
    os.close(write_end)
    mine = [i for i in range(5000) if shares.take(i)]
    with os.fdopen(read_end, "rb") as f:
        theirs = [int(x) for x in f.read().split()]
    os.waitpid(pid, 0)
    assert sorted(mine + theirs) == list(range(5000))


def test_processes_for_a_report(monkeypatch):
    with read_trace(str(torch213("provenance.log")), ReadOptions()) as small:
        assert small.store.size < PARALLEL_FROM
        assert report_processes(None, small) == 1  # a small log: the fork would cost what it saves
    # GPT-2's training log, the biggest real one (12 MB, 6.4 MiB of it payload): the second process's copies on write
    # cost more CPU than the wall time it saves there, so one process writes it, whatever -j asks.
    with read_trace(str(shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")), ReadOptions()) as gpt2:
        assert 6 << 20 < gpt2.store.size < PARALLEL_FROM
        assert report_processes(None, gpt2) == 1
        assert report_processes(4, gpt2) == 1
        # A log at the threshold: -j processes, at most MAX_PROCESSES.
        monkeypatch.setattr(report_command, "PARALLEL_FROM", gpt2.store.size)
        assert report_processes(1, gpt2) == 1
        assert report_processes(3, gpt2) == 3
        assert report_processes(64, gpt2) == 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"\n", b"bc", b"\r", b"\r\n", b"\n\n", b"xyz" * 5])).map(b"".join),
       st.integers(1, 9))
def test_spool_lines_are_the_lines_of_the_file(data, size):
    spool = Spool()
    spool.write(data)
    assert list(spool.lines(size)) == list(io.BytesIO(data))
    assert b"".join(spool.chunks(size)) == data
    spool.close()



def _log_copy(tmp_path, log: Path) -> bytes:
    from compilescope.output import _write_file
    from compilescope.report_writer import stored_log_copy

    name, copy = stored_log_copy(str(log))
    assert name == "raw.log"
    assert b"".join(copy) == log.read_bytes()  # iterated, as the demo's reports take it
    target = tmp_path / "raw.log"
    assert _write_file(str(target), copy) == log.stat().st_size
    return target.read_bytes()


@pytest.mark.skipif(not hasattr(os, "copy_file_range"), reason="the kernel copy is Linux's")
def test_the_log_copy_is_the_log_where_the_kernel_copies_it(tmp_path, monkeypatch):
    log = torch213("provenance.log")
    calls = []
    real = os.copy_file_range
    monkeypatch.setattr(os, "copy_file_range", lambda *args: calls.append(args) or real(*args))
    assert _log_copy(tmp_path, log) == log.read_bytes()
    assert calls  # (the kernel did copy it)


@pytest.mark.skipif(not hasattr(os, "copy_file_range"), reason="the kernel copy is Linux's")
def test_the_log_copy_goes_on_in_python_where_the_kernel_stops(tmp_path, monkeypatch):
    log = torch213("provenance.log")
    real = os.copy_file_range
    calls = []

    def first_4096_then_exdev(src, dst, count, *args):
        calls.append(count)
        if len(calls) > 1:
            raise OSError(18, "Invalid cross-device link")
        return real(src, dst, 4096, *args)

    monkeypatch.setattr(os, "copy_file_range", first_4096_then_exdev)
    monkeypatch.delattr(os, "sendfile", raising=False)  # (the kernel's other copy: the test below)
    assert _log_copy(tmp_path, log) == log.read_bytes()
    assert len(calls) == 2
    monkeypatch.delattr(os, "copy_file_range")  # (macOS, Windows)
    assert _log_copy(tmp_path, log) == log.read_bytes()


@pytest.mark.skipif(not hasattr(os, "copy_file_range") or not hasattr(os, "sendfile"), reason="the kernel copy is Linux's")
def test_the_log_copy_stays_in_the_kernel_across_file_systems(tmp_path, monkeypatch):
    """copy_file_range refuses two kinds of file system (EXDEV: a log on disk, its report on tmpfs): sendfile copies
    the rest, from where it stopped."""
    log = torch213("provenance.log")
    real_copy, real_send = os.copy_file_range, os.sendfile
    sent: list[tuple[int, int]] = []

    def first_4096_then_exdev(src, dst, count, *args):
        if os.lseek(src, 0, os.SEEK_CUR):
            raise OSError(18, "Invalid cross-device link")
        return real_copy(src, dst, 4096, *args)

    def sendfile(out, src, offset, count):
        n = real_send(out, src, offset, count)
        sent.append((offset, n))
        return n

    monkeypatch.setattr(os, "copy_file_range", first_4096_then_exdev)
    monkeypatch.setattr(os, "sendfile", sendfile)
    assert _log_copy(tmp_path, log) == log.read_bytes()
    # From byte 4096 to the end, each call where the last one stopped: copy_into returns the whole size, rest() none.
    assert [offset for offset, _ in sent] == [4096 + sum(n for _, n in sent[:i]) for i in range(len(sent))]
    assert sum(n for _, n in sent) == log.stat().st_size - 4096 and sent[-1][1] == 0

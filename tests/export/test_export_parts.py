"""One process's logs in parts (tests/data/torch213/README.md, export_dtrace_parts): under TORCH_DTRACE,
torch.export.draft_export writes its events to a log of its own, whose string table goes on from the main log's; the
run joins them into one log, so its issue and exported program are reported."""

from __future__ import annotations

import gzip
import os
import shutil
import sys
from pathlib import Path

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.ingest.discover import find_logs, process_parts
from compilescope.ingest.reader import read_trace
from compilescope.runner import Program, choose_log, join_process_logs, run_program

from ..conftest import TORCH213_PROGRAMS, torch213

PARTS = Path(__file__).parents[1] / "data" / "torch213" / "export_dtrace_parts"
MAIN = "dedicated_log_torch_trace_7dvb5pxv.log"  # first record 02:20:21.793, pid 27144: `export` "start!"
DRAFT = "dedicated_log_torch_trace_3w2uyaa8.log"  # first record 02:20:22.996, pid 27144: {"str": [..., 46]}


def unpacked(directory: Path) -> Path:
    """The parts as torch wrote them: plain files."""
    directory.mkdir()
    for part in PARTS.iterdir():
        (directory / part.name.removesuffix(".gz")).write_bytes(gzip.decompress(part.read_bytes()))
    return directory


def test_the_parts_are_one_process_in_the_order_written(tmp_path):
    # Both first records carry pid 27144; the draft part's name sorts first, but its first record is later.
    logs = find_logs(str(unpacked(tmp_path / "t")))
    assert process_parts(logs) == [[str(tmp_path / "t" / MAIN), str(tmp_path / "t" / DRAFT)]]


def test_logs_of_two_processes_are_not_joined(tmp_path):
    # export_constraints (pid 16331) and export_constraints_fixed (pid 16518): two runs.
    directory = tmp_path / "t"
    directory.mkdir()
    for name in ("export_constraints.log.gz", "export_constraints_fixed.log.gz"):
        (directory / name.removesuffix(".gz")).write_bytes(gzip.decompress(torch213(name).read_bytes()))
    assert process_parts(find_logs(str(directory))) == []


def test_a_log_with_a_string_table_of_its_own_is_another_process_whatever_its_pid(tmp_path):
    # Another container's process (or a reused pid) writing into the same directory: its strings number from 0, so it
    # is no part of the first log's process, and joining would mix it in and remove it.
    directory = unpacked(tmp_path / "t")
    other = (directory / "dedicated_log_torch_trace_other.log")
    main = (directory / MAIN).read_bytes()
    assert b'"str": ["' in main.split(b"\n", 20)[-1] or b', 0]}' in main[:4096]  # (its first str, numbered 0)
    other.write_bytes(main.replace(b" 02:20:21.", b" 02:20:29."))  # the same pid, a later start
    assert process_parts(find_logs(str(directory))) == [[str(directory / MAIN), str(directory / DRAFT)]]


def test_a_later_part_with_no_string_record_at_all_is_still_a_part(tmp_path):
    # A second draft_export in one process logs to a file of its own whose stacks name only files already interned:
    # it has no str record, and is the process's part all the same (as a real recording of two draft_exports showed).
    directory = unpacked(tmp_path / "t")
    draft = directory / DRAFT
    lines = draft.read_bytes().split(b"\n")
    draft.write_bytes(b"\n".join(line for line in lines if b'{"str": [' not in line))
    assert b'{"str": [' not in draft.read_bytes() and len(draft.read_bytes()) > 4096
    assert process_parts(find_logs(str(directory))) == [[str(directory / MAIN), str(directory / DRAFT)]]


def test_joined_the_draft_exports_issue_and_program_are_reported(tmp_path):
    directory = unpacked(tmp_path / "t")
    with read_trace(str(directory / DRAFT)) as alone:  # (read alone, its stacks name strings it never interned)
        [issue] = analyze(alone).export.issues
        assert issue.where == "<unknown string 0>:40 in forward"
    main, draft = (directory / MAIN).read_bytes(), (directory / DRAFT).read_bytes()
    logs = find_logs(str(directory))
    assert join_process_logs(logs) == [(str(directory / MAIN), [str(directory / DRAFT)])]
    assert find_logs(str(directory)) == [str(directory / MAIN)] and choose_log([str(directory / MAIN)])[1] is None
    assert (directory / MAIN).read_bytes() == main + draft
    with read_trace(str(directory / MAIN)) as trace:
        exported = analyze(trace).export
        # The draft part's one propagate_real_tensors_provenance ("u0 > u1", forward line 40) and its exported_program;
        # its stacks name the program by string 0, which only the main part interns.
        [provenance] = [i for i in exported.issues if i.kind == "propagate_real_tensors_provenance"]
        assert provenance.expr == "u0 > u1"
        assert provenance.where == "export_constraints.py:40 in forward"
        assert len(exported.exported_programs) == 1
        assert [c.line for c in exported.calls] == [52, 63, 67]  # draft_export's call at line 67 too


def test_run_joins_a_process_s_parts(tmp_path):
    # A program that writes the two parts into its trace directory as one process would: the run leaves one log.
    trace_dir = tmp_path / "trace"
    trace_dir.mkdir()
    code = ("import gzip, os, pathlib; d = pathlib.Path(os.environ['TORCH_TRACE']); "
            f"[(d / p.name[:-3]).write_bytes(gzip.decompress(p.read_bytes())) for p in pathlib.Path({str(PARTS)!r}).iterdir()]")
    result = run_program(Program([sys.executable, "-c", code], this_python=True), str(trace_dir))
    assert result.returncode == 0
    assert [os.path.basename(p) for p in result.logs] == [MAIN]
    assert [(os.path.basename(first), [os.path.basename(p) for p in parts]) for first, parts in result.joined] == [
        (MAIN, [DRAFT])]
    shutil.rmtree(trace_dir)


def test_capture_joins_a_process_s_parts(tmp_path):
    # The two parts written into the block's directory as the process would: the block's log is one, not 'several
    # processes traced; reporting the largest only' (the main part, 42,469 bytes gzipped, without the draft's issue).
    pytest.importorskip("torch")
    import compilescope

    with compilescope.capture(trace_dir=tmp_path / "trace") as cap:
        unpacked(tmp_path / "trace" / "parts")
        for part in (tmp_path / "trace" / "parts").iterdir():
            part.rename(tmp_path / "trace" / part.name)
    assert [os.path.basename(p) for p in cap.logs] == [MAIN] and cap.note is None
    assert [(os.path.basename(first), [os.path.basename(p) for p in parts]) for first, parts in cap.joined] == [
        (MAIN, [DRAFT])]
    with cap.load() as trace:
        [provenance] = [i for i in analyze(trace).export.issues if i.kind == "propagate_real_tensors_provenance"]
        assert provenance.expr == "u0 > u1" and provenance.where == "export_constraints.py:40 in forward"


@pytest.mark.torch
def test_a_torch_dtrace_capture_block_reports_draft_export_s_issue(tmp_path, monkeypatch):
    # export_constraints.py's export_topk under TORCH_DTRACE, in a capture() block: draft_export (line 67) logs to a file
    # of its own in TORCH_DTRACE's directory, which is the block's for as long as it runs; its one issue, u0 > u1 at
    # forward's line 40, is in the block's report (it went to the user's TORCH_DTRACE directory, not reported).
    pytest.importorskip("torch")
    import importlib.util

    import compilescope

    elsewhere = tmp_path / "dtrace"
    monkeypatch.setenv("TORCH_DTRACE", str(elsewhere))
    spec = importlib.util.spec_from_file_location("export_constraints", TORCH213_PROGRAMS / "export_constraints.py")
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    with compilescope.capture(trace_dir=tmp_path / "trace") as cap:
        program.export_topk()
    assert os.environ["TORCH_DTRACE"] == str(elsewhere) and not elsewhere.exists()
    assert len(cap.logs) == 1 and cap.note is None and len(cap.joined) == 1
    with cap.load() as trace:
        exported = analyze(trace).export
        assert [(i.kind, i.expr, i.where) for i in exported.issues if i.kind == "propagate_real_tensors_provenance"] == [
            ("propagate_real_tensors_provenance", "u0 > u1", "export_constraints.py:40 in forward")]
        assert len(exported.exported_programs) == 1

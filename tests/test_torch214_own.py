"""What a torch 2.14 user meets that the 2.13 programs do not show (tests/data/torch214/own/, README there): user code
that torch runs inside a wrapper of its own, compiled, is said at the user's line; and `diff` says an unbacked symbol.

Each expected value is read from the raw log, or from the program's source, beside the claim it checks.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.user_locations import is_clipped_torch_file
from compilescope.ingest.reader import read_trace

from .conftest import TORCH214_LOGS, run_cli

OWN = TORCH214_LOGS.parent / "own"
LOG = OWN / "wrapped_calls.log.gz"
PROGRAM = OWN / "wrapped_calls.py"


def _raw(log: Path) -> list[str]:
    with gzip.open(log, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def _metrics(log: Path) -> dict[tuple[int, int], dict]:
    """compilation_metrics by (frame, compile), as torch logged them."""
    found = {}
    for line in _raw(log):
        if '{"compilation_metrics"' in line:
            record = json.loads(line[line.index("{"):])
            found[(record["frame_id"], record["frame_compile_id"])] = record["compilation_metrics"]
    return found


def _program_line(number: int) -> str:
    return PROGRAM.read_text().splitlines()[number - 1].strip()


def test_a_guard_made_inside_the_nested_compile_region_wrapper_names_the_users_line():
    raw = _raw(LOG)
    # The guard tree of [0/0] names torch's wrapper for x's check, its path clipped at the front; no stack of the log
    # names that file in full (dynamic=False: no symbol was made, whose stack would).
    check = next(line for line in raw if "TENSOR_MATCH: check_tensor(L['x']" in line)
    assert check.endswith("# _higher_order_ops/invoke_subgraph.py:471 in inner")
    assert not any("torch/_higher_order_ops/invoke_subgraph.py" in line for line in raw)
    # The graph of [0/0]: its first node that uses x is the call of block, at forward's line 29.
    assert any(line.strip().endswith("wrapped_calls.py:29 in forward, code: h = self.block(x)") for line in raw)
    assert _program_line(29) == "h = self.block(x)"

    with read_trace(str(LOG)) as trace:
        frames = {f.name: f for f in insights(trace).recompiles.frames}
    (step,) = frames["forward"].steps
    (guard,) = step.failed_guards
    assert guard.guard == "tensor 'x' size mismatch at index 0. expected 4, actual 6"
    assert guard.location_kind == "first_use"
    assert (Path(guard.location.filename).name, guard.location.line, guard.location.function, guard.location.code) == (
        "wrapped_calls.py", 29, "forward", "h = self.block(x)")


def test_a_compiled_nonstrict_trace_function_fails_at_the_users_line_not_torchs_wrapper():
    metrics = _metrics(LOG)
    # Frame 3 is torch's wrapper of row_peaks (external_utils.py's inner), and torch names its line as the failure's.
    for compile_id in ((3, 0), (3, 1)):
        m = metrics[compile_id]
        assert (m["co_name"], m["fail_type"]) == ("inner", "UserError")
        assert m["fail_user_frame_filename"].endswith("torch/_dynamo/external_utils.py")
    # The traceback of the error has the user's frame that failed: row_peaks' .tolist(), line 35.
    assert any(line.strip().startswith('File "') and line.strip().endswith('wrapped_calls.py", line 35, in row_peaks')
               for line in _raw(LOG))
    assert _program_line(35) == "return torch.tensor(t.abs().amax(dim=-1).tolist())"

    with read_trace(str(LOG)) as trace:
        errors = {e.compile_id: e for e in insights(trace).errors.errors}
    assert sorted(errors) == ["[3/0]", "[3/1]"]
    for error in errors.values():
        assert (error.exception, error.location_kind) == ("UserError", "failure")
        assert (Path(error.location.filename).name, error.location.line, error.location.function) == (
            "wrapped_calls.py", 35, "row_peaks")


def test_check_names_the_users_line_of_a_failure_in_torchs_wrapper(capsys):
    m = _metrics(LOG)[(3, 0)]
    assert (m["co_name"], m["co_firstlineno"], m["fail_user_frame_lineno"]) == ("inner", 67, 69)
    assert run_cli("check", LOG) == 1
    out = capsys.readouterr().out
    # The frame is torch's wrapper of row_peaks (as torch logged it, named in its traceback only): named by the user's
    # function, in the user's file (its first line unknown: the log names line 35, where it failed).
    assert "[3/0] row_peaks (wrapped_calls.py) at wrapped_calls.py:35: UserError: Could not guard on data-dependent" in out
    assert "external_utils.py" not in out and "inner" not in out


def test_a_compiled_nonstrict_trace_function_is_named_by_the_users_function():
    raw = _raw(LOG)
    # Frame 3's dynamo_start stack ends in torch's wrapper (external_utils.py's inner, line 67); row_peaks is named
    # only in its compiles' tracebacks, called from torch's decorators.py (`wrapped`).
    start = next(json.loads(line[line.index("{"):]) for line in raw
                 if '{"dynamo_start"' in line and '"frame_id": 3, "frame_compile_id": 0' in line)
    assert [(f["name"], f["line"]) for f in start["dynamo_start"]["stack"]][-1] == ("inner", 67)
    assert not any("row_peaks" in line for line in raw if line.startswith("V") and "dynamo_start" in line)
    at = next(i for i, line in enumerate(raw) if line.strip().endswith('wrapped_calls.py", line 35, in row_peaks'))
    assert raw[at - 3].strip().endswith('torch/_dynamo/decorators.py", line 251, in wrapped')

    with read_trace(str(LOG)) as trace:
        results = analyze(trace)
        facts = run_facts(results)
    # diff's frame, the compile time table and each compile page name row_peaks, in the user's file.
    (frame,) = [f for f in facts.frames.values() if "[3/0]" in f.compile_ids]
    assert (frame.function, Path(frame.filename).name, frame.label) == (
        "row_peaks", "wrapped_calls.py", "row_peaks (wrapped_calls.py)")
    names = {c.compile_id: c.function_label for c in results.insights.compile_time.compiles}
    assert (names["[3/0]"], names["[3/1]"]) == ("row_peaks", "row_peaks")
    for key in ("[3/0]", "[3/1]"):
        page = results.compiles[key]
        assert (page.compiled.function, page.compiled.line) == ("inner", 67)  # (the frame as compiled: torch's)
        assert (Path(page.wraps.filename).name, page.wraps.line, page.wraps.function) == ("wrapped_calls.py", 35,
                                                                                          "row_peaks")
    # A frame of the user's own is named as compiled: forward, scaled.
    assert {f.function for f in facts.frames.values()} >= {"forward", "scaled"}


def test_diff_names_an_unbacked_symbol_by_its_name_not_none():
    raw = _raw(OWN / "wrapped_calls_scalars.log.gz")
    # capture_scalar_outputs: scaled's .item() (line 39) is the unbacked float zuf0, in [1/0] and in [1/1].
    made = [json.loads(line[line.index("{"):]) for line in raw if '{"create_unbacked_symbol"' in line]
    at_item = [(r["frame_id"], r["frame_compile_id"], r["create_unbacked_symbol"]["symbol"]) for r in made
               if r["create_unbacked_symbol"]["user_stack"][-1]["line"] == 39]
    assert at_item == [(1, 0, "zuf0"), (1, 1, "zuf0")]
    assert not any('{"create_unbacked_symbol"' in line and '"line": 39,' in line for line in _raw(LOG))

    def facts(log: Path):
        with read_trace(str(log)) as trace:
            return run_facts(analyze(trace))

    changes = [c for c in diff_runs(facts(LOG), facts(OWN / "wrapped_calls_scalars.log.gz")).changes
               if c.section == "dynamic_shapes"]
    assert [(c.kind, c.title) for c in changes] == [
        ("added", "new dynamic symbol for a data-dependent value (zuf0, unbacked) (at wrapped_calls.py:39) (×2)")]


@pytest.mark.parametrize("path, in_torch", [
    ("_higher_order_ops/invoke_subgraph.py", True),  # as torch clips it in a guard comment
    ("nn/modules/linear.py", True),
    ("_dynamo/external_utils.py", True),
    ("scratch/prog.py", False),  # a user's file, clipped where it shares a folder with torch's
    ("models/utils.py", False),
    ("functional.py", False),  # a user's module by its bare name: torch clips its own to a folder and a file
    ("/venv/lib/python3.11/site-packages/torch/_dynamo/utils.py", False),  # in full: is_torch_file's to say
    ("<eval_with_key>.3", False),
])
def test_a_clipped_path_is_torchs_when_it_starts_in_a_folder_of_torch(path, in_torch):
    assert is_clipped_torch_file(path) is in_torch


def test_a_torch_frame_that_failed_in_a_users_backend_is_not_named_after_the_backend(capsys):
    """torch213 module_backend_error: nn.Linear compiled with a user backend that raises. torch 2.13 compiles the
    module through the same external_utils.py `inner`, and the traceback's only user frame is the backend that raised
    (not called by decorators.py's `wrapped`): the compile is not 'torch's wrapper of your function my_backend'."""
    from compilescope.analyses.compiled_frames import frame_function, wrapped_function

    log = Path(__file__).parent / "data" / "torch213" / "logs" / "module_backend_error.log.gz"
    raw = gzip.decompress(log.read_bytes()).decode()
    assert '"co_name": "inner"' in raw and "in my_backend" in raw and "decorators.py" not in raw
    with read_trace(str(log)) as trace:
        [entry] = [e for e in trace.compiles.values() if e.compile_id is not None]
        assert wrapped_function(trace, entry) is None
        assert frame_function(trace, entry)[1] == "inner"
    assert run_cli("summary", log) == 0  # (summary reads; check is the gate)
    assert "my_backend (" not in capsys.readouterr().out

"""compilescope.capture(): traces a block in this process, then tracing is exactly as before."""

from __future__ import annotations

import os

import pytest

import compilescope
from compilescope.errors import CompilescopeError

from ..conftest import torch213
from .conftest import compile_ids, statuses

pytestmark = pytest.mark.torch


def _logging_state():
    import torch._logging._internal as internal
    import torch._logging.structured as structured

    trace_log = internal.trace_log
    return (list(trace_log.handlers), internal.LOG_TRACE_HANDLER, trace_log.level,
            trace_log.__dict__.get("isEnabledFor"), dict(structured.INTERN_TABLE))


def inside(x):
    return x.sin() + 1


def after(x):
    return x.cos() * 2


def test_capture_traces_the_block_only(tmp_path):
    import torch

    torch._dynamo.reset()
    before = _logging_state()
    with compilescope.capture(out=tmp_path / "report", trace_dir=tmp_path / "traces") as cap:
        compiled = torch.compile(inside, backend="eager")
        compiled(torch.ones(3))
        compiled(torch.ones(3, 2))  # another rank of input: recompile
    assert _logging_state() == before  # tracing is off again, torch's state as it was

    size = os.path.getsize(cap.log)
    torch.compile(after, backend="eager")(torch.ones(3))
    assert os.listdir(tmp_path / "traces") == [os.path.basename(cap.log)] and os.path.getsize(cap.log) == size

    index = cap.report()
    report = tmp_path / "report"
    assert index == str(report / "index.html")
    assert compile_ids(report) == ["[-/-]", "[0/0]", "[0/1]"]
    assert statuses(report) == {"[0/0]": "ok", "[0/1]": "ok"}
    assert "test_capture.py" in (report / "index.html").read_text()  # stack frames: the string table is in this log

    with compilescope.load(tmp_path / "traces") as trace:  # the API reads the same log
        assert [str(c) for c in trace.compiles if c is not None] == ["[0/0]", "[0/1]"]
        assert trace.stats.outcomes["ok"] == trace.stats.total


def test_capture_restores_on_error_and_refuses_nesting(tmp_path):
    import torch

    torch._dynamo.reset()
    before = _logging_state()
    with pytest.raises(RuntimeError, match="boom"):
        with compilescope.capture(trace_dir=tmp_path / "a") as cap:
            with pytest.raises(CompilescopeError, match="already active"):
                with compilescope.capture(trace_dir=tmp_path / "b"):
                    pass
            torch.compile(inside, backend="eager")(torch.ones(2))
            raise RuntimeError("boom")
    assert _logging_state() == before
    assert compilescope.report(cap.log, out=tmp_path / "r").endswith("index.html")
    assert compile_ids(tmp_path / "r") == ["[-/-]", "[0/0]"]

    with compilescope.capture(trace_dir=tmp_path / "c") as empty:
        pass
    with pytest.raises(CompilescopeError, match="nothing was traced"):
        empty.report()


def test_an_existing_out_is_refused_before_the_block_runs_in_pythons_words(tmp_path):
    # As `run -o` checks before the program: a long training block is not run for a report it cannot write.
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "notes.txt").write_text("mine")
    ran = []
    with pytest.raises(CompilescopeError, match=r"existing: it does not hold a compilescope report; choose another"):
        with compilescope.capture(out=existing, trace_dir=tmp_path / "traces"):
            ran.append(True)
    assert ran == [] and not (tmp_path / "traces").exists() and (existing / "notes.txt").read_text() == "mine"
    (existing / "index.html").write_text("an earlier report")  # a report: overwrite=True would replace it
    with pytest.raises(CompilescopeError, match=r"existing already exists; pass overwrite=True to replace it$"):
        with compilescope.capture(out=existing, trace_dir=tmp_path / "traces"):
            ran.append(True)
    assert ran == [] and not (tmp_path / "traces").exists() and (existing / "notes.txt").read_text() == "mine"
    # report() says it in the same words.
    with pytest.raises(CompilescopeError, match=r"pass overwrite=True to replace it$"):
        compilescope.report(torch213("graph_breaks.log"), out=existing)


def test_capture_records_a_cuda_graph_skip_warned_at_run_time_and_stops_after(tmp_path):
    """The warning torch prints when it skips a CUDA graph at its first run (called here as Inductor calls it) goes
    into the captured log; after the block, the recorder is gone from Inductor's logger."""
    import logging

    import torch
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

    from compilescope.bytecode_capture import CUDAGRAPH_LOGGER

    handlers = list(logging.getLogger(CUDAGRAPH_LOGGER).handlers)
    with compilescope.capture(trace_dir=tmp_path / "traces") as cap:
        torch.compile(inside, backend="eager")(torch.ones(3))
        log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to cpu device (arg0_1)")
    assert logging.getLogger(CUDAGRAPH_LOGGER).handlers == handlers
    log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to cpu device (after the block)")
    with compilescope.load(cap.log) as trace:
        skips = [trace.payload_text(a.payload) for c in trace.compiles.values() for a in c.artifacts
                 if a.name == "compilescope_cudagraph_skip"]
    assert len(skips) == 1 and '"message": "skipping cudagraphs due to cpu device (arg0_1)"' in skips[0]


def cond_on_a_constant(x):
    return torch_cond(True, lambda t: t.sin(), lambda t: t.cos(), (x,))


def _line_of(text: str) -> int:
    """The line of this file that holds text."""
    lines = open(__file__, encoding="utf-8").read().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def torch_cond(*args):
    import torch

    return torch.cond(*args)


def test_capture_records_the_warnings_torch_prints_and_stops_after(tmp_path, recwarn):
    """A Python warning torch raises while Dynamo compiles, and a record of one of torch's loggers, go into the
    captured log with the user's line; they are still shown as before; after the block, nothing is recorded."""
    import logging
    import warnings

    import torch

    shown = warnings.showwarning
    with compilescope.capture(trace_dir=tmp_path / "traces") as cap:
        torch.compile(cond_on_a_constant, backend="eager")(torch.ones(3))
        logging.getLogger("torch._inductor.compile_fx").warning("a warning of %s", "torch's logger")
        warnings.warn("the program's own warning, not torch's")
    assert warnings.showwarning is shown
    logging.getLogger("torch._inductor.compile_fx").warning("after the block")
    with compilescope.load(cap.log) as trace:
        from compilescope.analyses.torch_warnings import torch_warnings

        got = [(w.kind, w.headline, len(w.compile_ids), w.location.short if w.location else None)
               for w in torch_warnings(trace).warnings]
        [cond] = [str(c.compile_id) for c in trace.compiles.values() if c.compile_id is not None]
        assert torch_warnings(trace).warnings[0].compile_ids == [cond]  # (the frame number is the process's count)
        told = [a for c in trace.compiles.values() for a in c.artifacts if a.name == "compilescope_recorders"]
        assert len(told) == 1 and torch_warnings(trace).recorded
    assert got == [
        ("UserWarning", "Pred is a Python constant. When used with torch.cond, it specializes on one of the branches. "
         "If you want torch.cond to preserve two branches, please make the predicate a boolean tensor or a SymBool.",
         1, f"test_capture.py:{_line_of('return torch.cond(*args)')}"),  # the innermost line Dynamo traced
        ("WARNING", "a warning of torch's logger", 0, f"test_capture.py:{_line_of('a warning of %s')}"),
    ]
    assert any("Pred is a Python constant" in str(w.message) for w in recwarn)  # still shown to the program


def doubled(x):
    return x * 2


def test_capture_records_a_recompile_the_stance_refused_and_stops_after(tmp_path):
    """torch.compiler.set_stance("fail_on_recompile") raises where a call would recompile, and logs nothing of it: the
    captured log holds the error, with the call's line and the guard that failed; after the block torch's own
    function is back."""
    import torch
    import torch._dynamo.eval_frame as eval_frame

    torch._dynamo.reset()
    original = eval_frame._callback_from_stance
    compiled = torch.compile(doubled, backend="eager")
    with compilescope.capture(trace_dir=tmp_path / "traces") as cap:
        compiled(torch.ones(3))
        with torch.compiler.set_stance("fail_on_recompile"), pytest.raises(RuntimeError) as raised:
            compiled(torch.ones(2, 2))  # a second rank: the guard of [0/0] fails
    assert eval_frame._callback_from_stance is original
    with compilescope.load(cap.log) as trace:
        from compilescope.analyses.torch_warnings import torch_warnings

        [refused] = torch_warnings(trace).warnings
    assert refused.message == str(raised.value)  # torch's own words, the guard among them
    assert "tensor 'x' rank mismatch. expected 1, actual 2" in refused.message
    assert refused.kind == "RuntimeError" and refused.source.startswith("torch/_dynamo/eval_frame.py:")
    assert refused.location.short == f"test_capture.py:{_line_of('compiled(torch.ones(2, 2))')}"
    assert refused.name == (f"set_stance(\"fail_on_recompile\") refused a recompile of doubled "
                            f"(test_capture.py:{_line_of('def doubled(x):')})")

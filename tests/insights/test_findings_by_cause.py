""""Fix first" lists one finding per cause, not one per frame or per reason."""

from pathlib import Path

from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, skip_or_fail
from .helpers import insights_of

GPT2 = REPO.parent / "shared" / "traces" / "gpu-torch211" / "gpt2_train"


def _gpt2_findings():
    logs = sorted(Path(GPT2).glob("*.log")) if GPT2.is_dir() else []
    if not logs:
        skip_or_fail("the gpt2_train trace is not available (../shared missing)")
    with read_trace(str(logs[0])) as trace:
        return insights(trace).findings


def test_a_wrapped_graph_break_is_named_by_its_own_reason():
    # transformers' logger.warning_once at modeling_utils.py:4635. In some compilations torch wraps the reason:
    # "Encountered graph break that we cannot resume from. ... Graph break encountered:", with the reason on the
    # next line. It is one graph break, named by that reason; the wrapper is its context.
    breaks = [f for f in _gpt2_findings() if f.section == "graph_breaks"]
    assert len(breaks) == 1, breaks
    assert "modeling_utils.py:4635" in breaks[0].title and "5 compilations" in breaks[0].title
    assert breaks[0].detail == "logging.Logger method not supported for non-export cases"
    with read_trace(str(sorted(Path(GPT2).glob("*.log"))[0])) as trace:
        (only,) = insights(trace).graph_breaks.breaks
    assert only.count == 5
    assert only.hints == ["Add the logging method to `torch._dynamo.config.ignore_logging_functions`."]


def test_the_same_size_change_on_several_frames_is_one_finding():
    recompiles = [f for f in _gpt2_findings() if f.section == "recompiles"]
    assert len(recompiles) == 1, recompiles
    assert recompiles[0].title == "4 functions recompiled for one cause (tensor size)"
    # (transformers' `wrapper` frame is named by the model it runs, as its recompile heading names it)
    assert recompiles[0].detail.startswith("GPT2LMHeadModel's forward, forward, ForCausalLMLoss, __init__: "
                                           "tensor size mismatch at index 1. expected 64, actual 96; the recompiles took ")


def test_identical_rows_are_merged_and_told_apart():
    # Two modules' forward()s recompile for one size change: the old list had the same row twice.
    findings = insights_of("same_cause").findings
    rows = [(f.title, f.detail) for f in findings]
    assert len(rows) == len(set(rows))
    (recompile,) = [f for f in findings if f.section == "recompiles"]
    assert recompile.title == "2 functions recompiled for one cause (tensor size)"
    assert recompile.detail.startswith("forward (same_cause.py:12), forward (same_cause.py:17): "
                                       "tensor size mismatch at index 0. expected 4, actual 8; the recompiles took ")


def test_distinct_causes_stay_apart():
    titles = [f.title for f in insights_of("graph_breaks").findings if f.section == "graph_breaks"]
    assert titles == ["graph break at graph_breaks.py:18 in log_step (2 compilations)",
                      "graph break at graph_breaks.py:23 in f (1 compilation)",
                      "graph break at graph_breaks.py:28 in f (1 compilation)"]
    recompiles = insights_of("recompiles").findings
    assert [f.title for f in recompiles if f.section == "recompiles"] == [
        "h hit the recompile limit and runs uncompiled", "g recompiled 3 times"]

"""Oncall triage of peer logs (a PyTorch developer reading logs attached to an issue): each expected value is read
from the raw log, as the comment beside it says."""

from compilescope.analyses.caches import caches
from compilescope.analyses.compile_time import compile_times
from compilescope.analyses.compile_errors import CONFIRM_USER_BACKEND
from compilescope.ingest.reader import read_trace

from .conftest import peer, report, run_cli


def _words(text: str) -> str:
    """The terminal's text as words, its wrapping and tree lines left out."""
    return " ".join(word for word in text.split() if word.strip("│├└─┌┐┘"))


def test_one_bypass_reason_counted_once_and_on_one_line(tmp_path, monkeypatch, capsys):
    # cache_hit_miss.log: three aotautograd_cache_bypass records (frame 1, compile 0, torch's id after each reset),
    # each with cache_bypass_reason "Unsupported call_function target flex_attention. \n Function module:
    # torch.ops.higher_order, \nFunction name: flex_attention".
    found = caches(read_trace(peer("cache_hit_miss.log")))
    reason = ("Unsupported call_function target flex_attention. Function module: torch.ops.higher_order, "
              "Function name: flex_attention")
    assert found.bypass_reasons == [(reason, 3)]
    assert found.reason_compiles(reason) == ["[1/0]", "[3/0]", "[5/0]"]
    monkeypatch.setenv("COLUMNS", "250")
    assert run_cli("summary", peer("cache_hit_miss.log")) == 0
    out = _words(capsys.readouterr().out)
    assert out.count("Unsupported call_function target flex_attention") == 1
    assert f"(1) 3 lookups bypassed ([1/0], [3/0], [5/0]): {reason}" in out
    report(peer("cache_hit_miss.log"), tmp_path / "out")
    assert (tmp_path / "out" / "index.html").read_text().count("Unsupported call_function target") == 1


def test_failed_backend_step_and_logged_time(tmp_path, monkeypatch, capsys):
    # comp_failure.log: BackendCompilerFailed from backend='broken_backend'; its `dynamo` event runs from
    # ts 1733527213926572 to 1733527214089673 (163 ms), and compilation_metrics logs
    # dynamo_cumulative_compile_time_us 157247 (no entire_frame_compile_time_s).
    assert "which confirms it" not in CONFIRM_USER_BACKEND
    monkeypatch.setenv("COLUMNS", "250")
    run_cli("summary", peer("comp_failure.log"))
    out = _words(capsys.readouterr().out)
    assert CONFIRM_USER_BACKEND in out
    report(peer("comp_failure.log"), tmp_path / "out")
    page = (tmp_path / "out" / "-_0_0_0" / "index.html").read_text()
    assert "163 ms" in page
    assert "<code>dynamo_cumulative_compile_time_us</code>, 157 ms, times the frame's compile alone" in page


def test_time_outside_any_compile_is_named_by_its_events():
    # simple.log: three compile_file B/E pairs (lines 1-61, no compile_id) before Dynamo's first compile, 920 + 850 +
    # 116 ms: the row outside any compile id is those, not a function.
    times = compile_times(read_trace(peer("simple.log")))
    outside = next(c for c in times.compiles if c.compile_id == "[-/-]")
    assert outside.name == "outside any compile (compile_file ×3)"
    assert round(outside.total_s, 2) == 1.89

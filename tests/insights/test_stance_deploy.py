"""Deploying a compiled model with torch.compile's production controls (tests/data/torch213 programs/stance_deploy.py):
a recompile the program's own set_stance("fail_on_recompile") refused, helpers kept eager with torch.compiler.disable,
and a mega-cache warm start (load_cache_artifacts into an empty Inductor cache). Expected values are read from the raw
logs and the program, not from our output."""

from __future__ import annotations

import json
import re
from pathlib import Path

from compilescope.analyses.caches import caches
from compilescope.analyses.graph_breaks.analysis import graph_breaks
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.torch_warnings import torch_warnings
from compilescope.ingest.reader import read_trace

from ..conftest import report, run_cli, torch213
from ..tracelog import raw_records

COLD, WARM, FIXED = "stance_deploy.log.gz", "stance_deploy_warm.log.gz", "stance_deploy_fixed.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "stance_deploy.py"


def _raw(log: str) -> list[tuple[dict, str]]:
    """The log's envelopes with their payloads, read without compilescope."""
    return raw_records(torch213(log))


def _program_lines(text: str) -> list[int]:
    return [n for n, src in enumerate(PROGRAM.read_text().splitlines(), 1) if text in src]


def _recorded(log: str) -> list[dict]:
    """compilescope's recorded warnings, from the raw log."""
    return [json.loads(p) for e, p in _raw(log) if e.get("artifact", {}).get("name") == "compilescope_warning"]


def _findings(log: str):
    return insights(read_trace(torch213(log))).findings


def test_the_refused_recompile_names_the_call_the_function_and_what_it_would_have_recompiled_for():
    [record] = _recorded(COLD)
    message = record["message"]
    assert message.startswith("Detected recompile when torch.compile stance is 'fail_on_recompile'")
    # torch lists each cache entry's failed guard, the newest ([0/1], dynamic batch) first: the sequence length changed
    newest = re.search(r"^\s*- 0/1: (.+)$", message, re.M)[1]
    assert newest == "tensor 'x' size mismatch at index 1. expected 16, actual 24"
    try_line = _program_lines("    try:")[0]
    [refused] = torch_warnings(read_trace(torch213(COLD))).warnings
    assert refused.location.line == try_line + 1 == record["stack"][-1][1]  # `model(request)` under the stance
    assert refused.name == ("set_stance(\"fail_on_recompile\") refused a recompile of forward "
                            f"(stance_deploy.py:{_program_lines('def forward(self, x):')[0]})")
    assert f"it would have recompiled for: {newest} (guard of [0/1])" in refused.advice
    assert "not a torch bug" in refused.advice
    # torch raised it and the program caught it (the record names the stance): not a warning torch printed
    assert record["category"] == "RuntimeError" and record["stance"] == "fail_on_recompile"
    assert refused.raised
    [finding] = [f for f in _findings(COLD) if f.section == "raised"]
    assert finding.title == refused.name and finding.severity == "warning"
    assert not [f for f in _findings(COLD) if f.section == "warnings"]


def test_the_fixed_warm_up_refuses_nothing_and_passes_the_ci_gate(capsys):
    # The gate a deployment puts in CI: no recompile refused after warm-up (recorded as what torch raised)
    assert _recorded(FIXED) == []
    assert run_cli("check", "--no-warnings", str(torch213(FIXED))) == 0
    capsys.readouterr()
    assert run_cli("check", "--no-warnings", str(torch213(COLD))) == 1
    said = capsys.readouterr().out
    assert "refused a recompile of forward" in said  # the CI line says what failed, not only how many


def test_disabled_helpers_ran_eagerly_on_purpose_with_the_reason_given():
    raw = [p for e, p in _raw(COLD) if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason"]
    assert raw and all("Skip calling `torch.compiler.disable()`d function" in p for p in raw)
    reason = re.search(r'torch\._dynamo\.disable\(reason="([^"]+)"\)', PROGRAM.read_text())[1]
    breaks = {b.location.line: b for b in graph_breaks(read_trace(torch213(COLD))).breaks}
    log_stats, check_finite = _program_lines("        log_stats(h)")[0], _program_lines("        check_finite(h)")[0]
    assert sorted(breaks) == [log_stats, check_finite]
    assert (breaks[log_stats].disabled_function, breaks[log_stats].disabled_reason) == ("log_stats", None)
    assert (breaks[check_finite].disabled_function, breaks[check_finite].disabled_reason) == ("check_finite", reason)
    assert all(b.disabled and "on purpose" in b.note for b in breaks.values())  # not torch's "Remove the call"
    found = _findings(COLD)
    assert not [f for f in found if f.section == "graph_breaks" and f.severity != "info"]
    [told] = [f for f in found if f.section == "graph_breaks"]
    assert told.title == (f"ran eagerly as you asked (torch.compiler.disable): log_stats (stance_deploy.py:{log_stats}), "
                          f"check_finite (stance_deploy.py:{check_finite})")
    assert f'check_finite: "{reason}"' in told.detail


def _kernel_compiles(log: str) -> list[str | None]:
    """The compile ids of the log's compile_file events (torch running g++ on a kernel), begins only: the event's own
    (None where torch gave it none: those after the first graph's come from Inductor's compile threads)."""
    return [json.loads(p)["args"].get("compile_id") for e, p in _raw(log)
            if "chromium_event" in e and '"name": "compile_file"' in p and '"ph": "B"' in p]


def _hits(log: str) -> list[str]:
    """The compile ids whose FX graph cache lookup hit, from the hit artifacts' envelopes."""
    return list(dict.fromkeys(f"[{e['frame_id']}/{e['frame_compile_id']}]" for e, _ in _raw(log)
                              if e.get("artifact", {}).get("name") == "fx_graph_cache_hit"))


def test_a_warm_start_into_an_empty_cache_says_the_kernels_were_compiled_again():
    kinds = [e["artifact"]["name"] for e, _ in _raw(WARM) if "artifact" in e]
    assert "fx_graph_cache_miss" not in kinds and sorted(_hits(WARM)) == ["[0/0]", "[0/1]", "[2/0]", "[2/1]"]
    assert _kernel_compiles(COLD) and len(_kernel_compiles(WARM)) == len(_kernel_compiles(COLD))  # all of them again
    assert "0/0" in _kernel_compiles(WARM)  # under the first graph, which hit
    [again] = [f for f in _findings(WARM) if f.section == "caches" and f.severity == "warning"]
    assert again.title.startswith("served from cache, yet C++ compile took ")
    assert again.detail.startswith(f"{', '.join(sorted(_hits(WARM)))} hit the FX graph cache but compiled their kernels again")
    assert "load_cache_artifacts" in again.detail and "TORCHINDUCTOR_CACHE_DIR" in again.detail


def test_what_the_caches_served_is_said_by_compilation_as_the_other_findings_say_it():
    # The warm start's hits are [0/0], [0/1], [2/0], [2/1] (the envelopes'); [0/0] and [0/1] compiled after Dynamo
    # restarted them, so the cache served their attempts [0/0_1] and [0/1_1]: said as the compilations, once each.
    ins = insights(read_trace(torch213(WARM)))
    assert {"[0/0_1]", "[0/1_1]"} <= set(ins.caches.graphs_missing)  # (the attempts stay in the saved form)
    [served] = [f for f in ins.findings if f.title.startswith("served from cache: ")]
    assert served.title == f"served from cache: {', '.join(sorted(_hits(WARM)))}"


def test_a_warm_run_sharing_the_cache_directory_is_not_told_so():
    # slow_compile_warm reused its cold run's directory: one compile_file in all, not a kernel compile per graph
    assert len(_kernel_compiles("slow_compile_warm.log.gz")) == 1 and len(_hits("slow_compile_warm.log.gz")) == 5
    assert not [f for f in _findings("slow_compile_warm.log.gz") if f.title.startswith("served from cache, yet")]
    assert not [f for f in _findings(COLD) if f.title.startswith("served from cache, yet")]  # nothing hit


def _restart_reasons(log: str) -> list[str]:
    """Every restart reason of the log's compilation_metrics, raw."""
    return [r for e, _ in _raw(log) if "compilation_metrics" in e for r in e["compilation_metrics"]["restart_reasons"]]


def test_the_ci_gate_and_the_cards_leave_out_the_disabled_calls_and_say_how_many(capsys, tmp_path):
    # Every break and every restart of the cold run is a call of a torch.compiler.disable'd helper (log_stats,
    # check_finite): 2 distinct places, 4 restarts (2 compilations of forward, 2 of its resume after line 49)
    restarts = _restart_reasons(COLD)
    assert len(restarts) == 4 and all(r.startswith("Skip calling `torch.compiler.disable()`d function") for r in restarts)
    disabled = len({b.location.line for b in graph_breaks(read_trace(torch213(COLD))).breaks})
    assert disabled == len(set(_program_lines("        log_stats(h)") + _program_lines("        check_finite(h)"))) == 2
    assert run_cli("check", "--max-graph-breaks", "0", str(torch213(COLD))) == 0
    said = capsys.readouterr().out
    assert (f"max-graph-breaks passed: 0 distinct graph breaks ({disabled} more at torch.compiler.disable'd calls, "
            "which run eagerly on purpose, not counted)") in said
    # the report's card counts what check counts, and the restarts at disabled calls apart
    report(torch213(COLD), tmp_path / "r")
    index = (tmp_path / "r" / "index.html").read_text()
    card = re.search(r'id="failures-card".*?</div></div>', index, re.S)[0]
    assert ">0</a>" in card and f"(and {len(restarts)} at torch.compiler.disable'd calls, on purpose)" in card
    assert run_cli("summary", str(torch213(COLD))) == 0
    assert "at torch.compiler.disable'd calls, on purpose: check does not count them" in " ".join(
        capsys.readouterr().out.split())


def test_a_break_that_is_not_a_disabled_call_still_fails_the_gate(capsys):
    # item_break's break is a .item() call (no torch.compiler.disable): counted as before
    log = torch213("item_break.log.gz")
    assert _restart_reasons("item_break.log.gz")
    assert not [r for r in _restart_reasons("item_break.log.gz") if "torch.compiler.disable" in r]
    assert run_cli("check", "--max-graph-breaks", "0", str(log)) == 1
    assert "not counted" not in capsys.readouterr().out


def _lookups(log: str, name: str) -> list[str]:
    """The compile ids of the log's cache lookup artifacts named so (fx_graph_cache_hit, aotautograd_cache_miss...)."""
    return [f"[{e['frame_id']}/{e['frame_compile_id']}]" for e, _ in _raw(log) if e.get("artifact", {}).get("name") == name]


def test_diff_of_the_cold_and_warm_start_says_what_the_caches_served_and_that_the_kernels_were_compiled_again(capsys):
    fx_missed, fx_hit = _lookups(COLD, "fx_graph_cache_miss"), _lookups(WARM, "fx_graph_cache_hit")
    aot_missed, aot_hit = _lookups(COLD, "aotautograd_cache_miss"), _lookups(WARM, "aotautograd_cache_hit")
    assert (len(fx_missed), len(fx_hit), len(aot_missed), len(aot_hit)) == (4, 4, 2, 2)
    assert len(_kernel_compiles(WARM)) == len(_kernel_compiles(COLD))  # every kernel compiled again
    run_cli("diff", str(torch213(COLD)), str(torch213(WARM)))  # (exits 1: the caches changed)
    said = " ".join(capsys.readouterr().out.split())
    assert (f"B's caches served what A compiled anew (FX graph cache: {len(fx_hit)} hits where A's {len(fx_missed)} "
            f"missed; AOTAutograd cache: {len(aot_hit)} hits where A's {len(aot_missed)} missed), yet B compiled its "
            f"kernels again: {', '.join(sorted(set(fx_hit))[:-1])} and {sorted(set(fx_hit))[-1]} hit the FX graph "
            "cache and C++ compile still took ") in said
    # the same run against itself: nothing served either more than the other, so nothing said
    assert run_cli("diff", str(torch213(WARM)), str(torch213(WARM))) == 0
    assert "caches served" not in capsys.readouterr().out


def test_the_refusal_is_said_as_an_error_raised_and_caught_in_summary_report_json_and_check(capsys, tmp_path):
    [record] = _recorded(COLD)
    assert run_cli("summary", str(torch213(COLD))) == 0
    said = capsys.readouterr().out
    assert "Errors torch raised, caught by the program (1)" in said and "Warnings torch printed" not in said
    assert run_cli("summary", "--json", str(torch213(COLD))) == 0
    doc = json.loads(capsys.readouterr().out)
    [entry] = doc["warnings"]["warnings"]
    assert entry["raised"] is True and entry["kind"] == record["category"]
    assert [f["section"] for f in doc["findings"] if f["title"] == entry["name"]] == ["raised"]
    report(torch213(COLD), tmp_path / "r")
    index = (tmp_path / "r" / "index.html").read_text()
    assert 'id="insights-raised"' in index and 'id="insights-warnings"' not in index
    capsys.readouterr()
    assert run_cli("check", "--no-warnings", str(torch213(COLD))) == 1
    assert "no-warnings: torch raised 1 error the program caught, none allowed" in capsys.readouterr().out


def test_the_aotautograd_bypass_at_allow_in_graph_s_function_says_the_program_put_it_in_the_graph(capsys):
    bypasses = [json.loads(p) for e, p in _raw(COLD) if e.get("artifact", {}).get("name") == "aotautograd_cache_bypass"]
    assert len(bypasses) == 2 and all("<function scale_shift at 0x" in b["cache_bypass_reason"] for b in bypasses)
    assert _program_lines("@torch.compiler.allow_in_graph")[0] + 1 == _program_lines("def scale_shift(h):")[0]
    found = caches(read_trace(torch213(COLD)))
    [(reason, n)] = found.bypass_reasons
    assert n == len(bypasses)
    note = found.bypass_note(reason)
    assert note is not None and note.startswith("scale_shift (module __main__) is a plain Python function, not a torch op")
    assert "allow_in_graph" in note
    # a torch op AOTAutograd cannot key is not said to be the program's own function
    assert found.bypass_note("Unsupported call_function target <function silu at 0x7f00>. Function module: "
                             "torch.nn.functional, Function name: silu") is None
    assert run_cli("summary", "--json", str(torch213(COLD))) == 0
    [doc] = json.loads(capsys.readouterr().out)["caches"]["bypass_reasons"]
    assert doc["note"] == note

"""A setting of torch's own tests (a config key ending in _TESTING_ONLY) that the run had on is the first thing the
report says, on real logs of tests/data/torch213 (README.md there):

- kernel_abort.log.gz: kernel_abort.py sets torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "runtime_error";
  its [0/0] compilation_metrics' inductor_config has `"cpp.inject_relu_bug_TESTING_ONLY": "runtime_error"` (and
  `"triton.inject_relu_bug_TESTING_ONLY": null`, the default), and the relu's throw aborted the process (a recorded
  crash, which the switch comes before);
- diff_fail.log.gz: diff_pair.py's "fail" variant sets it to "compile_error": [0/0] fails (InductorError);
- diff_base.log.gz: the same program without it: every _TESTING_ONLY key of its dumps is null or false;
- compile_error_raises.log: compile_error_raises.py compiles g_relu with torch's test backend
  relu_compile_error_TESTING_ONLY, which raises for its relu: [1/0]'s fail_reason names it; [0/0] (f_fullgraph, backend
  eager) fails in Dynamo and names no backend.
"""

from __future__ import annotations

import json

from ..conftest import run_cli, torch213
from ..tracelog import raw_records

INJECTED = "torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY"


def _summary(capsys, log) -> dict:
    assert run_cli("summary", torch213(log), "--json") == 0
    return json.loads(capsys.readouterr().out)


def test_a_testing_only_setting_is_the_first_finding_before_the_crash_it_caused(capsys):
    doc = _summary(capsys, "kernel_abort.log.gz")
    assert doc["environment"]["testing_only"] == [
        {"setting": INJECTED, "value": '"runtime_error"', "compile_ids": ["[0/0]"], "kind": "setting"}]
    first, second = doc["findings"][:2]
    assert (first["severity"], first["section"]) == ("error", "testing_only")
    assert first["title"] == f"a setting for torch's own tests was on: {INJECTED} = 'runtime_error'"
    assert first["detail"].endswith(f"set it back ({INJECTED} = None)")
    assert second["section"] == "crash"


def test_a_failed_compile_is_told_after_the_setting_that_made_it_fail(capsys):
    doc = _summary(capsys, "diff_fail.log.gz")
    assert [f["section"] for f in doc["findings"][:2]] == ["testing_only", "errors"]
    assert doc["findings"][0]["title"].endswith(f"{INJECTED} = 'compile_error'")
    assert run_cli("summary", torch213("diff_fail.log.gz")) == 0
    out = capsys.readouterr().out
    assert "Settings for torch's own tests (1)" in out and out.index("Settings for torch's own tests") < out.index("Errors")


def test_a_run_at_the_defaults_says_nothing_of_them(capsys, tmp_path):
    doc = _summary(capsys, "diff_base.log.gz")
    assert doc["environment"]["testing_only"] == []
    assert all(f["section"] != "testing_only" for f in doc["findings"])
    # The report's page: the section and its link from Fix first, escaped as every value of a log is.
    assert run_cli("report", torch213("diff_fail.log.gz"), "-o", str(tmp_path / "r")) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert 'id="insights-testing_only"' in page and 'href="#insights-testing_only"' in page
    assert f"<code>{INJECTED} = &#39;compile_error&#39;</code>" in page


def test_a_backend_of_torchs_tests_is_flagged_as_such_a_setting_is(capsys, tmp_path):
    log = "compile_error_raises.log"
    reasons = {f"[{e['compilation_metrics']['compile_id']}]": e["compilation_metrics"].get("fail_reason")
               for e, _ in raw_records(torch213(log)) if "compilation_metrics" in e}
    assert reasons["[1/0]"].startswith("backend='relu_compile_error_TESTING_ONLY' raised:")
    assert "backend=" not in reasons["[0/0]"]
    doc = _summary(capsys, log)
    assert doc["environment"]["testing_only"] == [
        {"setting": "backend", "value": '"relu_compile_error_TESTING_ONLY"', "compile_ids": ["[1/0]"], "kind": "backend"}]
    # First, before the failures it explains, as a setting is.
    assert [f["section"] for f in doc["findings"][:3]] == ["testing_only", "errors", "errors"]
    first = doc["findings"][0]
    assert first["severity"] == "error"
    assert first["title"] == ("a backend for torch's own tests was used: "
                              "torch.compile(backend='relu_compile_error_TESTING_ONLY')")
    assert first["detail"].startswith("failed with it: [1/0]; torch's _TESTING_ONLY backends make compiles fail")
    assert run_cli("summary", torch213(log)) == 0
    out = capsys.readouterr().out
    assert out.index("Settings for torch's own tests (1)") < out.index("Errors (2)")
    assert "failed with it: [1/0]" in out
    assert run_cli("report", torch213(log), "-o", str(tmp_path / "r")) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert 'id="insights-testing_only"' in page
    assert "<code>torch.compile(backend=&#39;relu_compile_error_TESTING_ONLY&#39;)</code>: failed with it" in page

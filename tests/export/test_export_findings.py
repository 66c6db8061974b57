"""Draft export's issues are among what to fix first: in the terminal, in --json and on the compilation report.

The summary said "Nothing to fix: no errors, graph breaks or recompiles in this log." of draft-export logs whose
export page says "1 issue was found during export, and it was not able to soundly produce a graph".
"""

import gzip
import json
import re

from ..conftest import peer, run_cli, torch213, torch214
from .test_draft_export_stops import TITLE as STOPS


def summary(log, capsys, *flags):
    assert run_cli("summary", *flags, log) == 0
    return capsys.readouterr().out


def test_the_data_dependent_branch_draft_export_assumed_is_the_first_thing_to_fix(tmp_path, capsys):
    # The log's one propagate_real_tensors_provenance record (line 32): expr "u0 > 2", result "True", the user stack
    # ending at line 25 of forward, `if n > 2:` (tests/data/torch213/programs/export_draft.py, line 25 under 2.14).
    log = torch214("export_draft.log")
    text = summary(log, capsys)
    assert "Nothing to fix" not in text
    assert "draft export found 1 issue" in text
    [finding, stops] = json.loads(summary(log, capsys, "--json"))["findings"]
    assert stops["title"] == STOPS  # (a log draft_export wrote: test_draft_export_stops.py)
    assert (finding["severity"], finding["section"]) == ("error", "export")
    assert finding["detail"].startswith("Data Dependent Error at export_draft.py:25 in forward: ")
    assert "u0 > 2" in finding["detail"] and "assumed True" in finding["detail"]
    # The compilation report's finding links to the issue on the export page, which is index.html beside it.
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "compile_report.html").read_text()
    assert '<a href="index.html#issues">draft export found 1 issue' in page
    assert 'id="issues"' in (tmp_path / "out" / "index.html").read_text()


def test_a_guard_export_evaluated_is_named_with_its_line(capsys):
    # export_guard_added.log (tlparse's test log): one guard_added, prefix "eval", expr "Eq(s0, 3)", its user stack
    # ending at test_draft_export.py:297 in forward (log line 27).
    [finding, stops] = json.loads(summary(peer("export_guard_added.log"), capsys, "--json"))["findings"]
    assert stops["title"] == STOPS
    assert (finding["severity"], finding["section"]) == ("error", "export")
    assert finding["detail"].startswith("Guard Evaluated at test_draft_export.py:297 in forward: ")
    assert "Eq(s0, 3)" in finding["detail"]


def test_the_export_pages_cards_say_one_thing_in_the_singular(tmp_path):
    # The peer's export.log holds one propagate_real_tensors_provenance record (the one issue), one exported_program,
    # seven guard_added and one create_unbacked_symbol; torch 2.14's export_draft.log one issue, one program, no
    # guard_added and two create_unbacked_symbol (u0 and u1). The cards read "1 issue", never "1 issues".
    for log, expected in ((peer("export.log"), [("1", "issue"), ("1", "exported program"), ("7", "other guards added"),
                                                ("1", "symbol created")]),
                          (torch214("export_draft.log"), [("1", "issue"), ("1", "exported program"),
                                                          ("0", "other guards added"), ("2", "symbols created")])):
        raw = gzip.decompress(log.read_bytes()) if log.suffix == ".gz" else log.read_bytes()
        kinds = re.findall(rb'^V[^{\n]*\{"(\w+)"', raw, re.M)
        assert [kinds.count(k) for k in (b"propagate_real_tensors_provenance", b"exported_program", b"guard_added",
                                         b"create_unbacked_symbol")] == [int(n) for n, _ in expected]
        out = tmp_path / log.name
        assert run_cli(log, "-o", out, "--no-browser") == 0
        cards = re.findall(r'<div class="n"><a href="#[\w-]+">(\d+)</a></div><div class="l">([^<]*)</div>',
                           (out / "index.html").read_text())
        assert cards[:4] == expected


def test_a_mismatched_fake_kernel_of_an_op_whose_name_ends_in_s_reads_as_english(capsys):
    # export_mismatched_fake.log.gz, line 11: mismatched_fake_kernel, "op": "compilescope_test.count.dims" (the custom
    # op's overload `dims`, tests/data/torch213/programs/export_mismatched_fake.py), reason "Dtypes torch.int64 and
    # torch.float32 are not equal!". The possessive of a name ending in "s" takes an apostrophe alone.
    [finding, stops] = json.loads(summary(torch213("export_mismatched_fake.log.gz"), capsys, "--json"))["findings"]
    assert stops["title"] == STOPS
    assert (finding["severity"], finding["section"]) == ("error", "export")
    assert ("torch.ops.compilescope_test.count.dims' fake kernel disagrees with the real kernel: Dtypes torch.int64 "
            "and torch.float32 are not equal!") in finding["detail"]
    assert "dims's" not in finding["detail"]

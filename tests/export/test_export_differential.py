"""--export against tlparse 0.4.3: the same issues, in the same order, and the same exported program."""

import json
import re

import pytest

from ..conftest import peer, run_cli, torch213
from .helpers import data_dependent, draft_export_log, expression, guard, issue_rows, tlparse_export, unbacked

pytestmark = pytest.mark.oracle


def ours(log, out, *flags):
    assert run_cli(log, "-o", out, "--no-browser", "--overwrite", *flags) == 0
    return (out / "index.html").read_text()


def our_program(out):
    return next((out / "-_-_-_-").glob("exported_program_*.txt")).read_text()


@pytest.mark.parametrize("name", ["export.log", "export_guard_added.log"])
@pytest.mark.parametrize("flags", [("--export",), ()])  # with the flag, and detected without it
def test_peer_export_logs_list_what_tlparse_lists(name, flags, tmp_path):
    theirs, their_program = tlparse_export(peer(name), tmp_path / "tl")
    index = ours(peer(name), tmp_path / "cs", *flags)
    assert "Draft Export Report" in index
    assert issue_rows(index) == theirs
    assert theirs, "tlparse lists an issue in each of these logs"
    # The exported program is the whole payload, blank lines and all (tlparse keeps reading past them).
    assert our_program(tmp_path / "cs") == their_program


def test_peer_issue_lists_are_the_known_ones(tmp_path):
    rows = issue_rows(ours(peer("export.log"), tmp_path / "a"))
    assert rows == [("Data Dependent Error",
                     "When exporting, we were unable to figure out if the expression Eq((((-u0)//3)) + 5, 0) always holds. "
                     "As a result, it was specialized to evaluate to False, and asserts were inserted into the graph.")]
    rows = issue_rows(ours(peer("export_guard_added.log"), tmp_path / "b"))
    assert [r[0] for r in rows] == ["Guard Evaluated"] and "Eq(s0, 3)" in rows[0][1]


def test_every_issue_kind_against_tlparse(tmp_path):
    log = draft_export_log(tmp_path / "all.log", [
        unbacked(10, "u0"),
        expression(11, "u0 + 1", "add", ["u0", "1"], [10]),
        expression(12, "Eq(u0 + 1, 3)", "eq", ["u0 + 1", "3"], [11]),
        guard("Eq(u0 + 1, 3)", "eval", 12),
        guard("u0 + 1 >= 0", "runtime_assert", 11),  # not an issue, for either tool
        guard("Ne(u0, 7)", None),  # older torch: no prefix, not an issue
        data_dependent("Eq(u0 + 1, 3)", "True", 12),
        {"missing_fake_kernel": {"op": "mylib.foo.default"}},
        {"mismatched_fake_kernel": {"op": "mylib.bar.default", "reason": "Dtypes torch.float32 and torch.int64 are not equal!"}},
    ])
    theirs, their_program = tlparse_export(log, tmp_path / "tl")
    index = ours(log, tmp_path / "cs")
    assert issue_rows(index) == theirs
    assert [t for t, _ in theirs] == ["Guard Evaluated", "Data Dependent Error", "Missing Fake Kernel", "Mismatched Fake Kernel"]
    assert our_program(tmp_path / "cs") == their_program


def test_guard_on_data_dependent_error_is_listed_though_tlparse_ignores_it(tmp_path):
    # Intended difference: tlparse 0.4.3 does not know guard_on_data_dependent_error (a data-dependent
    # expression export could not decide, and raised on).
    log = draft_export_log(tmp_path / "gdde.log", [
        {"guard_on_data_dependent_error": {"expr": "Eq(u0, 1)", "unhinted_expr": "Eq(u0, 1)", "expr_id": 5,
                                           "stack": [{"line": 3, "name": "f", "filename": 0}]}},
    ])
    theirs, _ = tlparse_export(log, tmp_path / "tl")
    assert theirs == []
    rows = issue_rows(ours(log, tmp_path / "cs"))
    assert [r[0] for r in rows] == ["Data Dependent Error"] and "Eq(u0, 1)" in rows[0][1]


def tlparse_files(out):
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def our_directory(out):
    return [a["url"] for entry in json.loads((out / "compile_directory.json").read_text()).values()
            for a in entry["artifacts"]]


@pytest.mark.parametrize("log", ["export.log", "export_guard_added.log", "several", "torch213 export_draft.log"])
def test_export_files_are_numbered_as_tlparse_numbers_them(log, tmp_path):
    # Under --export tlparse numbers the exported programs' files and the pages of the guards it shows
    # (symbolic_guard_information_N.html: an evaluated guard_added, a propagate_real_tensors_provenance) with one
    # counter over the whole log, in log order: export.log's program, after its one issue, is exported_program_1.txt.
    if log == "several":
        path = draft_export_log(tmp_path / "several.log", [
            unbacked(10, "u0"),
            expression(12, "Eq(u0 + 1, 3)", "eq", ["u0 + 1", "3"], [10]),
            guard("Eq(u0 + 1, 3)", "eval", 12),
            guard("u0 + 1 >= 0", "runtime_assert", 12),  # no page, for either tool
            {"exported_program": {}},  # (an empty program: a file all the same)
            data_dependent("Eq(u0 + 1, 3)", "True", 12),
            {"missing_fake_kernel": {"op": "mylib.foo.default"}},  # no page
            {"guard_on_data_dependent_error": {"expr": "Eq(u0, 1)", "unhinted_expr": "Eq(u0, 1)", "expr_id": 5}},
            guard("Ne(u0, 2)", "eval", 12),
        ])
    elif log.startswith("torch213 "):
        # Its issue's record holds torch 2.13's locals (lists), which tlparse 0.4.3 cannot read: it drops the record,
        # which then takes no number and has no page, so the program is exported_program_0.txt (ExportIssue.tlparse_reads).
        path = torch213(log.split(" ")[1])
    else:
        path = peer(log)
    tlparse_export(path, tmp_path / "tl")
    ours(path, tmp_path / "cs", "--export")
    theirs = [f for f in tlparse_files(tmp_path / "tl") if f != "index.html"]
    assert theirs and set(theirs) <= set(tlparse_files(tmp_path / "cs"))
    # compile_directory.json (which tlparse does not write under --export) names the programs' files by those names
    assert our_directory(tmp_path / "cs") == [f for f in theirs if "/exported_program_" in f]
    if log == "export.log":
        assert theirs == ["-_-_-_-/exported_program_1.txt", "-_-_-_-/symbolic_guard_information_0.html"]


def guard_page_links(index):
    return re.findall(r"""href=["']([^"']*symbolic_guard_information_\d+\.html)["']""", index)


@pytest.mark.parametrize("log", ["export.log", "export_guard_added.log", "torch213 export_draft.log"])
def test_with_export_the_index_links_each_guard_page_as_tlparse_does(log, tmp_path):
    # tlparse's index links each issue's symbolic_guard_information_N.html ("Please click here"); ours links the same
    # pages, in the same order, beside the issue's details it shows inline. Without --export no page is written: no link.
    path = torch213(log.split(" ")[1]) if log.startswith("torch213 ") else peer(log)
    tlparse_export(path, tmp_path / "tl")
    theirs = guard_page_links((tmp_path / "tl" / "index.html").read_text())
    assert guard_page_links(ours(path, tmp_path / "cs", "--export")) == theirs
    assert all((tmp_path / "cs" / link).is_file() for link in theirs)
    assert guard_page_links(ours(path, tmp_path / "plain")) == []
    if log == "export.log":
        assert theirs == ["-_-_-_-/symbolic_guard_information_0.html"]
    if log.startswith("torch213 "):
        # tlparse drops this log's one issue record (torch 2.13's locals are lists: ExportIssue.tlparse_reads), so it
        # writes and links no page: this case can only catch a link ours adds that tlparse has not (one to a page of a
        # record tlparse cannot read). The issue is listed all the same, so an empty list is not an empty report's.
        assert theirs == [] and issue_rows(ours(path, tmp_path / "cs", "--export"))


def test_the_guard_page_link_says_what_the_page_shows(tmp_path):
    # The link beside an issue's inline details names the page it leads to (tlparse's "Please click here for more
    # information": its stacks, locals and provenance), not "its page".
    index = ours(peer("export.log"), tmp_path / "cs", "--export")
    assert re.findall(r"""<a href=["'][^"']*symbolic_guard_information_\d+\.html["']>([^<]*)</a>""", index) == [
        "guard details page"]


def _guard_with(**changes) -> dict:
    """An evaluated guard's record with fields changed (a value of _DROP removes the field)."""
    meta = guard("u0 > 1", "eval", 12)["guard_added"]
    for key, value in changes.items():
        if value is _DROP:
            meta.pop(key, None)
        else:
            meta[key] = value
    return {"guard_added": meta}


_DROP = object()
_FRAME = {"line": 3, "name": "f", "filename": 0}

# Records with one field of a type tlparse 0.4.3 does not read (types.rs: SymbolicShapePropagateRealTensorMetadata,
# FrameSummary, FrameLocals), and some it does. A record it cannot read it drops whole.
GUARD_RECORDS = {
    "as logged": {},
    "expr an int": {"expr": 5},
    "result an int": {"result": 1},
    "stack a string": {"stack": "x"},
    "stack missing": {"stack": _DROP},
    "user_stack a string": {"user_stack": "x"},
    "a frame without line": {"user_stack": [{"name": "f", "filename": 0}]},
    "a frame's line a string": {"user_stack": [{**_FRAME, "line": "3"}]},
    "a frame's line a float": {"user_stack": [{**_FRAME, "line": 3.0}]},
    "a frame's filename a string": {"user_stack": [{**_FRAME, "filename": "a.py"}]},
    "a frame's filename negative": {"stack": [{**_FRAME, "filename": -1}]},
    "a frame's loc an int": {"user_stack": [{**_FRAME, "loc": 3}]},
    "a frame's loc null": {"user_stack": [{**_FRAME, "loc": None}]},
    "a frame a string": {"user_stack": ["f"]},
    "locals a list": {"frame_locals": {"loc": "x", "locals": ["a"], "symbols": {}}},
    "a local a list (torch 2.13)": {"frame_locals": {"loc": "x", "locals": {"n": [1, 2]}, "symbols": {}}},
    "a symbol an int": {"frame_locals": {"loc": "x", "locals": {}, "symbols": {"s": 3}}},
    "frame_locals a string": {"frame_locals": "x"},
    "frame_locals null": {"frame_locals": None},
    "symbol_to_sources a list": {"symbol_to_sources": ["a"]},
    "a symbol's sources null": {"symbol_to_sources": {"s": None}},
    "prefix an int": {"prefix": 3},
    "expr_node_id a string": {"expr_node_id": "12"},
    "expr_node_id negative": {"expr_node_id": -12},
    "expr_node_id true": {"expr_node_id": True},
    "a field tlparse does not know": {"foo": {"bar": 1}},
}


def _numbered_files(out):
    return sorted(p.name for p in out.rglob("*") if p.name.startswith(("exported_program_", "symbolic_guard_information_")))


@pytest.mark.parametrize("changes", GUARD_RECORDS.values(), ids=GUARD_RECORDS.keys())
def test_a_guard_record_tlparse_cannot_read_takes_no_number(changes, tmp_path):
    # tlparse drops a record with any field of the wrong type ("Failed to parse metadata JSON"): no page, no number,
    # so the program after it is exported_program_0.txt. Ours numbers the same files (ExportIssue.tlparse_reads).
    log = draft_export_log(tmp_path / "g.log", [unbacked(10, "u0"), expression(12, "Eq(u0 + 1, 3)", "eq", ["u0 + 1", "3"], [10]),
                                                _guard_with(**changes)])
    tlparse_export(log, tmp_path / "tl")
    ours(log, tmp_path / "cs", "--export")
    assert _numbered_files(tmp_path / "cs") == _numbered_files(tmp_path / "tl")


@pytest.mark.parametrize("changes", [{"expr": None}, {"expr": _DROP}], ids=["expr null", "expr missing"])
def test_an_evaluated_guard_without_expr_is_paged(changes, tmp_path):
    # tlparse 0.4.3 panics on it (guard.expr.clone().unwrap()): no reference. Ours reads the record as its types allow
    # (expr is an Option) and numbers it.
    log = draft_export_log(tmp_path / "g.log", [_guard_with(**changes)])
    ours(log, tmp_path / "cs", "--export")
    assert _numbered_files(tmp_path / "cs") == ["exported_program_1.txt", "symbolic_guard_information_0.html"]


@pytest.mark.parametrize("flags", [("--export",), ()])
def test_compile_directory_numbers_the_exported_program_as_its_file_name_does(flags, tmp_path):
    # tlparse writes no compile_directory.json entry for an exported program (no file at all under --export, and
    # "artifacts": [] for export.log without it), so ours agrees with itself: the entry's number is the one in its
    # name. Under --export that is tlparse's counter (exported_program_1.txt for export.log), not Artifact.number (0).
    ours(peer("export.log"), tmp_path / "cs", *flags)
    entries = [a for entry in json.loads((tmp_path / "cs" / "compile_directory.json").read_text()).values()
               for a in entry["artifacts"]]
    assert [(a["name"], a["number"]) for a in entries] == [
        ("exported_program_1.txt", 1) if flags else ("exported_program_0.txt", 0)]

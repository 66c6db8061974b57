"""The source page marks the line where a compile failed and the line where the program died.

Each expected line is read from the raw log: a failure's `compilation_metrics` (fail_type, fail_reason,
fail_user_frame_*, co_firstlineno) or the text it quotes, a crash's record (faulthandler's stack, or the uncaught
exception's frames, innermost first).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from compilescope.analyses.analyze import analyze
from compilescope.analyses.sources import SourceFile
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, cuda211, report, torch213, torch213_moved
from .test_source_page import ids, plain, row

WRAPPED_CALLS = REPO / "tests" / "data" / "torch214" / "own" / "wrapped_calls.log.gz"


def raw_records(log: Path) -> list[str]:
    opener = gzip.open if log.suffix == ".gz" else open
    with opener(log, "rt") as f:
        return f.read().split("\n")


def raw_metrics(log: Path) -> list[dict]:
    """The payload-less compilation_metrics of the log that failed, in order (torch writes them inline)."""
    found = []
    for line in raw_records(log):
        start = line.find('{"compilation_metrics": ')
        if start >= 0:
            metrics = json.loads(line[start:])["compilation_metrics"]
            if metrics.get("fail_type"):
                found.append(metrics)
    return found


def source_file(log: Path, name: str) -> SourceFile:
    with read_trace(str(log)) as trace:
        results = analyze(trace)
    (found,) = [f for f in results.sources.files if f.path.endswith("/" + name)]
    return found


def marked(f: SourceFile) -> dict[int, str]:
    return {n: notes.status for n, notes in f.notes.items() if notes.failures or notes.crashes}


def test_a_fullgraph_error_is_marked_at_its_line_and_a_backend_error_at_the_frame_it_compiled(tmp_path):
    """compile_error_raises: [0/0] (f_fullgraph, fullgraph=True) fails at the `print` whose line torch names
    (fail_user_frame_lineno); [1/0] (g_relu) fails in the backend, which names no line: the frame it compiled
    (co_firstlineno) is marked, said so. The same marks whether the program is on this machine (a copy of the log
    whose paths name this checkout's program: its def line is shown) or not (only the lines the log quotes, which
    do not include the def line: its row is shown, marked, unquoted)."""
    log = torch213("compile_error_raises.log")
    fullgraph, backend = raw_metrics(log)
    assert (fullgraph["fail_type"], backend["fail_type"]) == ("Unsupported", "BackendCompilerFailed")
    assert backend["fail_user_frame_lineno"] is None
    line, first = fullgraph["fail_user_frame_lineno"], backend["co_firstlineno"]
    for here in (True, False):
        out = tmp_path / ("here" if here else "elsewhere")
        out.mkdir()
        f = source_file(torch213_moved(log.name, out, programs=None if here else out / "gone"), "compile_error_raises.py")
        assert f.origin == ("disk" if here else "log"), f.note
        assert marked(f) == {line: "failed", first: "failed"}
        (failed,) = f.notes[line].failures
        assert (failed["compile_id"], failed["exception"], failed["kind"]) == ("[0/0]", "Unsupported", "failure")
        assert failed["message"] == fullgraph["fail_reason"].splitlines()[0]
        assert f.text[line].strip().startswith("print(")
        (compiled,) = f.notes[first].failures
        assert (compiled["compile_id"], compiled["exception"], compiled["kind"]) == ("[1/0]", "BackendCompilerFailed", "compiled frame")
        if here:
            assert f.text[first].startswith(f"def {backend['co_name']}(")
        else:
            assert "not on this machine" in f.note and first not in f.text and first in f.shown_lines


def test_a_lowering_failure_is_marked_at_the_line_only_its_text_names():
    """compile_error_lowering: torch logs no fail_user_frame; the line is in fail_reason's `Found from :` frames.
    suppress_errors was on, so the frame ran uncompiled."""
    log = torch213("compile_error_lowering.log")
    (metrics,) = raw_metrics(log)
    assert metrics["fail_user_frame_lineno"] is None and metrics["config_suppress_errors"] is True
    found = metrics["fail_reason"].split("Found from :", 1)[1]
    line = int(re.findall(r'File "[^"]*compile_error_lowering\.py", line (\d+)', found)[-1])
    f = source_file(log, "compile_error_lowering.py")
    assert marked(f) == {line: "failed"}
    (failed,) = f.notes[line].failures
    assert failed["exception"] == metrics["fail_type"] == "InductorError"
    assert failed["message"] == metrics["fail_reason"].splitlines()[0] and failed["fell_back"] is True


def test_a_failure_outranks_the_graph_break_at_the_same_line():
    """caught_fullgraph: [0/0] (fullgraph=True) fails at the print; compiled again without fullgraph, the same print
    breaks the graph. The line keeps both notes; it is coloured as failed."""
    log = torch213("caught_fullgraph.log.gz")
    (metrics,) = raw_metrics(log)
    line = metrics["fail_user_frame_lineno"]
    f = source_file(log, "caught_fullgraph.py")
    notes = f.notes[line]
    assert [x["compile_id"] for x in notes.failures] == ["[0/0]"] and notes.graph_breaks
    assert notes.status == "failed"
    assert f.to_json()["lines"][str(line)]["failures"][0]["exception"] == "Unsupported"


def test_a_failure_inside_torchs_nonstrict_trace_wrapper_is_marked_at_the_users_line():
    """torch 2.14's wrapped_calls: torch names its own wrapper (external_utils.py) as the failing frame; the user's
    line is the innermost user frame of the failure's traceback, row_peaks' wrapped_calls.py:35."""
    metrics = raw_metrics(WRAPPED_CALLS)
    torch_frames = {m["fail_user_frame_filename"] for m in metrics if m["fail_user_frame_filename"]}
    assert torch_frames and all("/site-packages/torch/" in p for p in torch_frames)
    assert any('wrapped_calls.py\\", line 35, in row_peaks' in r for r in raw_records(WRAPPED_CALLS))
    f = source_file(WRAPPED_CALLS, "wrapped_calls.py")
    assert marked(f) == {35: "failed"}
    assert [x["exception"] for x in f.notes[35].failures] == [m["fail_type"] for m in metrics] == ["UserError"] * 2
    with read_trace(str(WRAPPED_CALLS)) as trace:
        assert not any("/torch/" in s.path for s in analyze(trace).sources.files)


def test_a_native_crash_is_marked_at_the_innermost_line_of_the_users_code():
    """native_crash: faulthandler's current thread runs from ctypes' string_at (Python's library) to
    native_crash.py:17 in fragile, the op called by [0/0]'s compiled code."""
    log = torch213("native_crash.log.gz")
    records = raw_records(log)
    stack = "\n".join(r[1:] for r in records if r.startswith("\t"))
    current = stack[stack.index("Current thread"):].split("\n\n")[0]
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', current)
    assert frames[0][0].endswith("/ctypes/__init__.py")
    path, line, function = next(x for x in frames if x[0].endswith("/native_crash.py"))
    f = source_file(log, "native_crash.py")
    assert marked(f) == {int(line): "crashed"}
    (crash,) = f.notes[int(line)].crashes
    assert crash["error"] == "Segmentation fault" and crash["exception"] is False and function == "fragile"
    assert (crash["where"]["filename"], crash["where"]["line"]) == (frames[0][0], int(frames[0][1]))
    assert crash["compile_id"] == "[0/0]"


def test_an_uncaught_exception_is_marked_where_it_was_raised_and_its_compile_where_it_failed():
    """uncaught_exception: the record's frames, innermost first, start at uncaught_exception.py:12 in
    strict_backend (the assert that raised); [1/0] (shift, co_firstlineno 21) failed in that backend."""
    log = torch213("uncaught_exception.log.gz")
    record = next(r for r in raw_records(log) if r.startswith("\tUncaught Python exception: "))
    raised = json.loads(record[len("\tUncaught Python exception: "):])
    path, line, function = raised["frames"][0]
    assert (path.rsplit("/", 1)[-1], function) == ("uncaught_exception.py", "strict_backend")
    (metrics,) = raw_metrics(log)
    f = source_file(log, "uncaught_exception.py")
    assert marked(f) == {line: "crashed", metrics["co_firstlineno"]: "failed"}
    (crash,) = f.notes[line].crashes
    assert crash["exception"] is True and crash["where"] is None  # raised on the line itself
    assert crash["error"].startswith(raised["type"].rsplit(".", 1)[-1] + ": backend='strict_backend' raised:")


def test_an_uncaught_exceptions_line_shows_the_code_its_traceback_quotes(tmp_path):
    """uncaught_exception: the record's JSON frames carry no code, but Python's traceback after it quotes each line:
    line 12 (strict_backend's assert) and main's calls at 28 and 31. The crash analysis reads them from there, so the
    crash-marked row shows its code instead of "(not quoted in the log)"."""
    log = torch213("uncaught_exception.log.gz")
    records = raw_records(log)
    header = next(i for i, r in enumerate(records) if r.startswith("\tUncaught Python exception: "))
    raised = json.loads(records[header][len("\tUncaught Python exception: "):])
    path, line, _ = raised["frames"][0]
    traceback = records[header + 1:]
    at = traceback.index(f'\t  File "{path}", line {line}, in strict_backend')
    code = traceback[at + 1].strip()
    assert code.startswith("assert len(example_inputs) == 2")
    with read_trace(str(log)) as trace:
        results = analyze(trace)
    (crash,) = results.insights.crashes.crashes
    assert crash.frames[0].code == code and crash.to_json()["frames"][0]["code"] == code
    f = source_file(log, "uncaught_exception.py")
    assert f.text[line] == code
    main_calls = {n for p, n, fn in raised["frames"] if p == path and fn in ("main", "<module>")}
    assert main_calls == {28, 31}
    assert f.text[28].startswith('print("shift", float(shift(') and f.text[31] == "main()"
    out = tmp_path / "out"
    report(log, out)
    (page,) = (out / "sources").glob("uncaught_exception.py_*.html")
    here = row(page.read_text(), line)
    assert "not quoted in the log" not in here and code in plain(here)


def test_a_crash_in_a_file_nothing_was_compiled_from_gets_a_page():
    """hf_gpt2_static_cache (H200): Dynamo compiled transformers' code only; the program died under
    hf_gpt2_static_cache.py:22 in main (faulthandler's innermost frame of the script), which the page marks."""
    log = cuda211("hf_gpt2_static_cache.log.gz")
    stack = "\n".join(r[1:] for r in raw_records(log) if r.startswith("\t"))
    current = stack[stack.index("Current thread"):].split("\n\n")[0]
    line = next(int(n) for p, n in re.findall(r'File "([^"]+)", line (\d+) in', current) if p.endswith("/hf_gpt2_static_cache.py"))
    f = source_file(log, "hf_gpt2_static_cache.py")
    assert marked(f) == {line: "crashed"} and set(f.notes) == {line}
    assert f.notes[line].crashes[0]["error"] == "Segmentation fault"


def test_the_page_shows_the_failure_on_its_line_linked_to_the_failure_message(tmp_path):
    """The row of the failing line is coloured and says what failed, escaped; its compile id links to the failure
    message of that compile's page, which has the anchor; the list at the top links the row."""
    log = torch213("compile_error_raises.log")
    fullgraph, backend = raw_metrics(log)
    out = tmp_path / "out"
    report(log, out)
    (page,) = (out / "sources").glob("compile_error_raises.py_*.html")
    text = page.read_text()
    line = fullgraph["fail_user_frame_lineno"]
    here = row(text, line)
    assert here.startswith(f'<div class="src-line s-failed" id="L{line}" title="compiling failed here">')
    (item,) = re.findall(r'<li class="n-failed">.*?</li>', here)
    assert plain(item) == f"compiling failed here: [0/0] failed in Dynamo (graph capture): Unsupported: {fullgraph['fail_reason'].splitlines()[0]}"
    (href,) = re.findall(r'href="\.\./([^"#]+)#failure-message"', item)
    assert 'id="failure-message"' in (page.parent / ".." / href).read_text()
    # The backend's message quotes its name: escaped on the page, as the log wrote it once unescaped.
    first = backend["co_firstlineno"]
    (item,) = re.findall(r'<li class="n-failed">.*?</li>', row(text, first))
    assert "backend=&#39;relu_compile_error_TESTING_ONLY&#39; raised" in item
    assert "the function that starts here" in plain(item)
    listed = text[text.index('<ul id="src-failed">'):]
    listed = listed[:listed.index("</ul>")]
    assert re.findall(r'<a href="#(L\d+)">', listed) == [f"L{line}", f"L{first}"]
    assert {f"L{line}", f"L{first}"} <= ids(text)


def test_the_page_says_the_program_died_on_its_line_and_links_its_stack(tmp_path):
    """native_crash: line 17's row says the program crashed there (Segmentation fault, Python in ctypes' string_at),
    linked to the Crash section of the index, which has the anchor."""
    log = torch213("native_crash.log.gz")
    out = tmp_path / "out"
    report(log, out)
    (page,) = (out / "sources").glob("native_crash.py_*.html")
    here = row(page.read_text(), 17)
    assert here.startswith('<div class="src-line s-crashed" id="L17" title="the program died here">')
    assert '<span class="b b-crashed"' in here
    (item,) = re.findall(r'<li class="n-crashed">.*?</li>', here)
    assert plain(item).startswith("the program crashed here: Segmentation fault, Python was in __init__.py:519 "
                                  "(string_at), called from this line, while running [0/0]'s compiled code")
    assert '<a href="../index.html#insights-crash">' in item
    assert 'id="insights-crash"' in (out / "index.html").read_text()


def badge_texts(fragment: str) -> list[str]:
    return [plain(b) for b in re.findall(r'<span class="b [^"]*"[^>]*>.*?</span>', fragment)]


def test_a_compile_that_failed_is_not_also_listed_as_compiled(tmp_path):
    """compile_error_raises: [1/0] (g_relu) failed in the backend and [0/0] (f_fullgraph) at its `print`, so neither
    function was compiled: g_relu's first line says its failure only, f_fullgraph's first line says it was not
    compiled (its failure is marked at the print). resume_backend_error: [0/0] (f, fail_type null) compiled;
    [1/0], the rest of f after the break at line 17, failed in the backend: no "rest compiled"."""
    log = torch213("compile_error_raises.log")
    fullgraph, backend = raw_metrics(log)
    out = tmp_path / "raises"
    report(log, out)
    (page,) = (out / "sources").glob("compile_error_raises.py_*.html")
    text = page.read_text()
    first = row(text, backend["co_firstlineno"])
    assert badge_texts(first) == ["compile failed: [1/0]"]
    assert "frame g_relu starts here: compiling it as [1/0] failed" in plain(first)
    assert "compiled frame" not in plain(first)
    assert fullgraph["co_firstlineno"] != fullgraph["fail_user_frame_lineno"]
    assert badge_texts(row(text, fullgraph["co_firstlineno"])) == ["not compiled: [0/0]"]

    log = torch213("resume_backend_error.log.gz")
    with gzip.open(log, "rt") as f:
        metrics = [json.loads(line[line.index("{"):])["compilation_metrics"] for line in f
                   if '{"compilation_metrics": ' in line]
    assert [(m["co_name"], m["co_firstlineno"], m["fail_type"]) for m in metrics] == [
        ("f", 15, None), ("torch_dynamo_resume_in_f_at_17", 17, "BackendCompilerFailed")]
    out = tmp_path / "resume"
    report(log, out)
    (page,) = (out / "sources").glob("resume_backend_error.py_*.html")
    text = page.read_text()
    assert "compiled: [0/0]" in badge_texts(row(text, 15))
    at_break = row(text, 17)
    assert not [b for b in badge_texts(at_break) if "compiled" in b], badge_texts(at_break)
    assert "compile failed: [1/0]" in badge_texts(at_break)
    assert ("after this line, compiling the rest of f (Dynamo's resume function torch_dynamo_resume_in_f_at_17) as "
            "[1/0] failed") in plain(at_break)
    assert "was compiled as" not in plain(at_break)

"""Round four of attacks on the reader, on real fixture logs: a few bytes naming far lines of many files, file
names that loop the batch namer, numbers past what a parser takes, control characters in XML, compressed and
crafted saved analyses, a cut gzip log, bad compile ids and escapes on the terminal.

Commands run in a child with a memory cap and a time limit (test_round_two.compilescope).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from pathlib import Path
from xml.etree import ElementTree

from ..conftest import cuda211, torch213
from .corpus import envelope_indices, fix_md5, lines_of, payload_envelope_index
from .test_round_two import compilescope, report


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# 1. Far lines of many files ------------------------------------------------------------------------------------------

def test_far_lines_of_many_files_cost_what_the_log_says(tmp_path):
    # graph_breaks.log's first graph, with FX comments naming line 99,999 of 12 files: 35 bytes of log each. Every
    # unquoted line of a rebuilt file had an anchor of its own (2.4 MB a page), and the 100,000-line bound was per
    # file, so 12 files made 1.2 million lines. A rebuilt file now holds only the lines the log quotes.
    lines = lines_of(torch213("graph_breaks.log").read_bytes())
    i = payload_envelope_index(lines)
    at = max(j for j in range(i + 1, len(lines)) if lines[j][:1] == b"\t" and b"return" in lines[j]
             and all(line[:1] == b"\t" for line in lines[i + 1 : j]))
    lines[at:at] = [b"\t        # File: /nonexistent/far_%d.py:99999 in f, code: y = x + %d\n" % (k, k) for k in range(12)]
    lines[at:at] = [b"\t        # File: /nonexistent/~near.py:50 in f, code: y = x + 1\n"]  # sorts last
    fix_md5(lines, i)
    log = tmp_path / "far.log"
    log.write_bytes(b"".join(lines))
    out = tmp_path / "out"
    report(log, out)
    pages = sorted((out / "sources").glob("far_*.html"))
    assert len(pages) == 12
    assert all(page.stat().st_size < 64 << 10 for page in pages)  # a gap is one row, however long
    files = {Path(f["path"]).name: f for f in json.loads((out / "sources.json").read_text())["files"]}
    assert [f["line_count"] for name, f in sorted(files.items()) if name.startswith("far_")] == [99999] * 12
    assert files["far_3.py"]["text"] == {"99999": "y = x + 3"}  # the one line quoted: the rest is a gap
    assert files["~near.py"]["line_count"] == 50
    far = (out / "sources" / Path(files["far_3.py"]["page"]).name).read_text()
    assert "lines 1–99998: not quoted in the log" in far and 'id="L99999"' in far
    assert 'id="L23"' in next((out / "sources").glob("graph_breaks.py_*.html")).read_text()
    assert _dir_size(out) < _dir_size(report_of(torch213("graph_breaks.log"), tmp_path / "base")) + (2 << 20)


def report_of(log: Path, out: Path) -> Path:
    report(log, out)
    return out


# 2. A log named only by its suffix ------------------------------------------------------------------------------------

def test_logs_named_only_by_a_suffix_get_a_report_each(tmp_path):
    # os.path.splitext(".log") is (".log", ""): the loop cutting suffixes off a batch member's name never ended.
    names = [".log", "..log", ".gz", ".txt"]
    logs = []
    for k, name in enumerate(names):
        (tmp_path / str(k)).mkdir()
        logs.append(tmp_path / str(k) / name)
        logs[-1].write_bytes(torch213("export_draft.log").read_bytes())
    (tmp_path / "4").mkdir()
    logs.append(tmp_path / "4" / "export.log")
    logs[-1].write_bytes(torch213("export_draft.log").read_bytes())
    out = tmp_path / "out"
    r = compilescope(*logs, "-o", out, "--no-browser")
    assert r.returncode in (0, 1), r.stderr.decode()[-2000:]
    reports = json.loads((out / "reports.json").read_text())
    assert [rep["source"] for rep in reports] == [str(log) for log in logs]
    assert len({rep["report"] for rep in reports}) == len(logs)
    assert all((out / rep["report"]).is_file() and rep["error"] is None for rep in reports)


# 3. Numbers in a profile -----------------------------------------------------------------------------------------------

def _profile_with(tmp_path: Path, value: str, name: str) -> tuple[Path, int]:
    """profile_launch_bound's real profile with the first timed event's dur written as `value` (JSON text);
    and how many timed events it holds."""
    doc = json.loads(gzip.decompress(cuda211("profile_launch_bound.profile.json.gz").read_bytes()))
    timed = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    timed[0]["dur"] = "@DUR@"
    path = tmp_path / name
    path.write_text(json.dumps(doc).replace('"@DUR@"', value))
    return path, len(timed)


def test_a_duration_of_5000_digits_costs_its_event(tmp_path):
    # Python refuses to convert an integer of more than 4,300 digits: the reader's fallback raised ValueError, which it
    # did not catch (an internal error).
    profile, _ = _profile_with(tmp_path, "1" + "0" * 4999, "bigint.json")
    r = compilescope(cuda211("profile_launch_bound.log.gz"), "--profile", profile, "-o", tmp_path / "out", "--no-browser")
    err = r.stderr.decode()
    assert r.returncode in (0, 1) and "internal error" not in err, err[-2000:]
    assert "read stopped early" not in err
    assert "1 event skipped: a timed event without a name, start or duration" in err, err[-2000:]


def test_a_profile_valid_but_for_nan_is_read_whole(tmp_path):
    # torch's json.dump writes NaN, which orjson refuses: the reader fell back to reading event by event, and at the
    # end of the list said the JSON after it was broken, though every event was read and nothing after it was wrong.
    profile, timed = _profile_with(tmp_path, "NaN", "nan.json")
    r = compilescope(cuda211("profile_launch_bound.log.gz"), "--profile", profile, "-o", tmp_path / "out", "--no-browser")
    err = r.stderr.decode()
    assert r.returncode in (0, 1) and "read stopped early" not in err, err[-2000:]
    assert "1 event skipped" in err, err[-2000:]


# 4. Control characters in JUnit XML ------------------------------------------------------------------------------------

def test_junit_xml_parses_whatever_characters_the_log_holds(tmp_path):
    # XML 1.0 cannot hold ESC, BEL, NUL (not even as &#27;): ElementTree wrote them as they were, and no CI read the
    # file. DEL and C1 controls (NEL here) it holds, but a CI page shows them as nothing: escaped too. Here the user
    # file's name in each graph break's traceback, which the XML names, holds them.
    lines = lines_of(torch213("graph_breaks.log").read_bytes())
    for i in envelope_indices(lines):
        if b'"dynamo_graph_break_reason"' in lines[i]:
            j = i + 1
            while j < len(lines) and lines[j][:1] == b"\t":
                lines[j] = lines[j].replace(b"graph_breaks.py", "graph\x1b[31m\x07\x00\x7f\x85\ufffe_breaks.py".encode())
                j += 1
            fix_md5(lines, i)
    log = tmp_path / "ctrl.log"
    log.write_bytes(b"".join(lines))
    junit = tmp_path / "junit.xml"
    r = compilescope("check", log, "--max-graph-breaks", "0", "--junit", junit)
    assert r.returncode == 1, r.stderr.decode()[-2000:]
    root = ElementTree.parse(junit).getroot()
    (failure,) = root.iter("failure")
    assert failure.text.count("graph\\x1b[31m\\x07\\x00\\x7f\\x85\\ufffe_breaks.py:") == 3, failure.text  # escaped, not dropped


# 5. A compressed saved analysis ----------------------------------------------------------------------------------------

def _saved(tmp_path: Path, log: Path) -> bytes:
    """The analysis of a real log as --save writes it (plain JSON)."""
    saved = tmp_path / "saved.json"
    r = compilescope(log, "--save", saved, "-o", tmp_path / "direct", "--no-browser")
    assert r.returncode in (0, 1), r.stderr.decode()[-2000:]
    return saved.read_bytes()


def test_a_compressed_saved_analysis_is_read_up_to_a_bound(tmp_path):
    # export_draft's saved analysis with 256 MB of spaces (valid JSON) before its last brace, in a .gz of about
    # 250 KB: it was decompressed whole, without limit (510 KB took 1.6 GB).
    doc = _saved(tmp_path, torch213("export_draft.log")).rstrip()
    assert doc.endswith(b"}")
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(doc[:-1])
        for _ in range(256):
            f.write(b" " * (1 << 20))
        f.write(b"}")
    assert bomb.stat().st_size < 1 << 20
    r = compilescope("report", "--load", bomb, "-o", tmp_path / "out", "--no-browser")
    err = r.stderr.decode()
    assert r.returncode == 2 and len(err.strip().splitlines()) == 1 and "expands past" in err, err[-2000:]
    # A saved analysis compressed as --save compresses it still loads.
    plain = tmp_path / "plain.json.gz"
    plain.write_bytes(gzip.compress(doc))
    r = compilescope("report", "--load", plain, "-o", tmp_path / "loaded", "--no-browser")
    assert r.returncode in (0, 1) and (tmp_path / "loaded" / "index.html").is_file(), r.stderr.decode()[-2000:]


# 6. A saved analysis naming a file ----------------------------------------------------------------------------------

def test_a_saved_analysis_never_reads_the_path_it_names(tmp_path):
    # An analysis without the log's bytes, whose trace names a secret as its log: report --load copied the secret
    # into raw.log, for whoever the report is shared with.
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOKEN=not-for-the-report\n")
    doc = json.loads(_saved(tmp_path, torch213("export_draft.log")))
    del doc["log"]
    doc["results"]["trace"]["source"] = str(secret)
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(doc))
    out = tmp_path / "out"
    r = compilescope("report", "--load", crafted, "-o", out, "--no-browser")
    assert r.returncode in (0, 1), r.stderr.decode()[-2000:]
    assert (out / "raw.log").read_bytes() == b""
    assert "raw.log is empty" in r.stderr.decode()
    assert not any(b"not-for-the-report" in p.read_bytes() for p in out.rglob("*") if p.is_file())


# 7. A cut .gz log ----------------------------------------------------------------------------------------------------

def test_a_cut_gzip_log_is_marked_bad_on_the_index(tmp_path):
    # A read that stopped is no record, so no outcome counted it: the index said "0 parse problems", not marked bad,
    # above a problems table listing where reading stopped.
    # graph_breaks.log compressed, cut right after its first 40 records: every line before the cut decompresses
    # whole, so no record is broken and only the read says the log ends early.
    lines = lines_of(torch213("graph_breaks.log").read_bytes())
    packer = zlib.compressobj(wbits=31)  # gzip
    log = tmp_path / "cut.log.gz"
    log.write_bytes(packer.compress(b"".join(lines[: envelope_indices(lines)[40]])) + packer.flush(zlib.Z_FULL_FLUSH))
    out = tmp_path / "out"
    report(log, out)
    page = (out / "index.html").read_text()
    card = re.search(r'<div class="card( bad)?"><div class="n"><a href="#parse-stats">(\d+)</a></div>'
                     r'<div class="l">parse problems?</div>', page)
    assert card is not None and card.group(1) and int(card.group(2)) >= 1, card
    assert "Some of the log could not be read" in page


# 8. A deeply nested saved value --------------------------------------------------------------------------------------

def test_a_deeply_nested_saved_value_is_refused_in_one_line(tmp_path):
    # 900 nested lists parse as JSON (orjson's limit is 1024) and took Python's stack while decoding: an internal error.
    doc = json.loads(_saved(tmp_path, torch213("export_draft.log")))
    doc["results"]["trace"]["rank"] = "@DEEP@"
    crafted = tmp_path / "deep.json"
    crafted.write_text(json.dumps(doc).replace('"@DEEP@"', "[" * 900 + "]" * 900))
    r = compilescope("report", "--load", crafted, "-o", tmp_path / "out", "--no-browser")
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "nested too deeply" in err, err[-2000:]
    assert not (tmp_path / "out").exists()


# 9. Compile ids that are no counters ---------------------------------------------------------------------------------

def test_compile_id_parts_that_are_no_counters_are_problems(tmp_path):
    # graph_breaks.log with five compilation records' frame_id replaced: they were read silently, as [-/0] and such.
    bad = ['"../.."', "1.5", "true", "{}", "1e30", "-1"]
    lines = lines_of(torch213("graph_breaks.log").read_bytes())
    edited = []
    for i in envelope_indices(lines):
        if len(edited) < len(bad) and b'"frame_id": ' in lines[i]:
            lines[i] = re.sub(rb'"frame_id": \d+', b'"frame_id": ' + bad[len(edited)].encode(), lines[i], count=1)
            edited.append(i + 1)
    log = tmp_path / "ids.log"
    log.write_bytes(b"".join(lines))
    r = compilescope(log, "-o", tmp_path / "out", "--no-browser", "--strict")
    err = r.stderr.decode()
    assert r.returncode == 1, err[-2000:]
    listed = [int(n) for n in re.findall(r"line (\d+): bad_compile_id: ", err)]
    assert listed == edited, err[-2000:]
    assert "frame_id='../..'" in err and "frame_id=1e+30" in err and "frame_id=-1" in err
    assert (tmp_path / "out" / "index.html").is_file()  # the rest of the log is reported
    plain = compilescope(log, "-o", tmp_path / "plain", "--no-browser")
    assert plain.returncode == 0, plain.stderr.decode()[-2000:]  # without --strict: read anyway


# 10. Escapes and line ends on the terminal ---------------------------------------------------------------------------

TERMINAL = {**os.environ, "COLUMNS": "200", "FORCE_COLOR": "1", "TERM": "xterm"}


def test_no_escape_from_the_log_reaches_the_terminal_as_colour(tmp_path):
    # The guard let every SGR sequence pass, as the colours rich writes are SGR: a log's own passed too, SGR 8
    # (concealed) hiding what follows it.
    lines = lines_of(torch213("compile_error_raises.log").read_bytes())
    (i,) = [i for i in envelope_indices(lines) if b'"fail_reason": "' in lines[i]][:1]
    lines[i] = lines[i].replace(b'"fail_reason": "', b'"fail_reason": "\\u001b[8mhidden\\u001b[0m ', 1)
    log = tmp_path / "sgr.log"
    log.write_bytes(b"".join(lines))
    r = compilescope("summary", log, env=TERMINAL)
    out = r.stdout.decode()
    assert r.returncode in (0, 1) and "\\u001b[8mhidden" in out, out[-3000:]
    assert "\x1b[8m" not in out and "\x1b[0m hidden" not in out
    assert "\x1b[1m" in out  # rich's own colours still pass


def test_a_newline_in_a_rank_files_name_is_shown_not_printed(tmp_path):
    # A rank log's name holding a newline split the note about it in two, the second line reading as another note.
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (ranks / "dedicated_log_torch_trace_rank_0.log").write_bytes(torch213("export_draft.log").read_bytes())
    (ranks / "dedicated_log_torch_trace_rank_1_\nnote: all is well.log").write_bytes(b"")
    r = compilescope("summary", ranks, env=TERMINAL)
    out = (r.stdout + r.stderr).decode()
    assert r.returncode in (0, 1), out[-3000:]
    assert "rank_1_\\u000anote: all is well.log is empty" in out, out[-3000:]
    assert not any(line.startswith("note: all is well") for line in out.splitlines())


# Digits that are not ASCII --------------------------------------------------------------------------------------------

def test_a_debug_handle_of_superscript_digits_is_only_a_name(tmp_path):
    # str.isdigit() is true of "²", which int() refuses: a provenance handle "addmm:²" stopped the whole report.
    lines = lines_of(torch213("provenance.log").read_bytes())
    i = payload_envelope_index(lines, b'"inductor_provenance_tracking_kernel_stack_traces"')
    assert b"extern_kernels.addmm:1" in lines[i + 1]
    lines[i + 1] = lines[i + 1].replace(b"extern_kernels.addmm:1", "extern_kernels.addmm:\u00b2".encode())
    fix_md5(lines, i)
    log = tmp_path / "handle.log"
    log.write_bytes(b"".join(lines))
    r = report(log, tmp_path / "out")
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    assert b"internal error" not in r.stderr

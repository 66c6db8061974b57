"""A compile after a restart ([0/0_1]) compiled; the attempt restarted before it ([0/0]) compiled nothing. The report
counts them apart ("4 compiled (2 after a restart)", "2 restarted attempts"), where it once called both "restarted"
and counted 2 compiled of 4. Each log's facts are read here from its raw lines, not through compilescope's reader."""

from __future__ import annotations

import gzip
import json
import re
from html import unescape
from pathlib import Path

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.analyses.log_digest import digest_log
from compilescope.analyses.rank_summary import summarize_rank
from compilescope.analyses.status import TLPARSE_STATUS_LABELS, counts_text
from compilescope.ingest.reader import read_trace

from .conftest import cuda211, peer, report, run_cli, torch213


def raw_compiles(log: Path) -> tuple[set[str], dict[str, tuple[int | None, bool]]]:
    """The log's own records: compile ids that logged dynamo_start, and each compilation_metrics' compile id with its
    (graph_op_count, whether restart_reasons is set)."""
    opened = gzip.open if log.suffix == ".gz" else open
    started, metrics = set(), {}
    with opened(log, "rt") as lines:
        for line in lines:
            if line.startswith("\t") or "] {" not in line:
                continue  # (a payload line, not an envelope)
            envelope = json.loads(line.split("] ", 1)[1])
            if "frame_id" not in envelope:
                continue
            attempt = envelope.get("attempt") or 0
            cid = f"[{envelope['frame_id']}/{envelope['frame_compile_id']}{f'_{attempt}' if attempt else ''}]"
            if "dynamo_start" in envelope:
                started.add(cid)
            if "compilation_metrics" in envelope:
                m = envelope["compilation_metrics"]
                assert not m.get("fail_type")  # (none of these logs failed a compile)
                metrics[cid] = (m.get("graph_op_count"), bool(m.get("restart_reasons")))
    return started, metrics


def statuses_of(log: Path) -> tuple[dict[str, str], dict[str, int], int]:
    with read_trace(str(log)) as trace:
        results = analyze(trace)
        statuses = {str(cid): s for cid, s in results.statuses.items() if cid is not None}
        return statuses, digest_log(results).statuses, summarize_rank(results).breaks


def cards(out: Path) -> list[str]:
    index = (out / "index.html").read_text()
    found = re.findall(r'<div class="card"[^>]*><div class="n[^"]*">(?:<a[^>]*>)?\s*(\d+)\s*(?:</a>)?</div>'
                       r'<div class="l">([^<]*)</div>', index)
    return [f"{n} {unescape(label)}" for n, label in found]


def outcome(out: Path, compile_dir: str) -> str:
    page = (out / compile_dir / "index.html").read_text()
    return unescape(re.search(r'id="outcome">(.*?)</td>', page, re.S).group(1))


def test_train_break_recompile_counts_four_compiled_two_after_a_restart(tmp_path):
    log = cuda211("train_break_recompile.log.gz")
    started, metrics = raw_compiles(log)
    # The raw log: forward ([0/*]) starts and restarts at the print on line 22 (no metrics), its retry compiles 3 ops
    # with restart_reasons; the resume function ([1/*]) compiles 3 ops plainly. Batch 48 recompiles both.
    assert started == {"[0/0]", "[0/1]", "[1/0]", "[1/1]"}
    assert metrics == {"[0/0_1]": (3, True), "[1/0]": (3, False), "[0/1_1]": (3, True), "[1/1]": (3, False)}
    statuses, digest, breaks = statuses_of(log)
    assert statuses == {"[0/0]": "restarted", "[0/0_1]": "break", "[0/1]": "restarted", "[0/1_1]": "break",
                        "[1/0]": "ok", "[1/1]": "ok"}
    assert digest == {"ok": 2, "break": 2, "restarted": 2, "empty": 0, "error": 0, "missing": 0}
    assert breaks == 2  # ranks[].breaks: compile ids that compiled after a restart (docs/summary-schema.md)

    report(log, tmp_path)
    assert cards(tmp_path)[:3] == ["6 compile ids", "4 compiled (2 after a restart)", "2 restarted attempts"]
    index = (tmp_path / "index.html").read_text()
    badges = dict(re.findall(r'<a class="cid" href="[^"]*">([^<]*)</a> <span class="status status-\w+"[^>]*>([^<]*)</span>',
                             index))
    assert badges == {"[0/0]": "restarted", "[0/0_1]": "compiled after a restart", "[0/1]": "restarted",
                      "[0/1_1]": "compiled after a restart", "[1/0]": "compiled", "[1/1]": "compiled"}
    # The program's line 22 is the print that breaks the graph (programs/train_break_recompile.py).
    assert outcome(tmp_path, "-_0_0_0") == "Restarted (graph break at line 22): Dynamo compiled the frame again as [0/0_1]"
    assert outcome(tmp_path, "-_0_0_1") == "Compiled after a restart (graph break at line 22): the graph was split"
    assert outcome(tmp_path, "-_0_1_0") == "Restarted (graph break at line 22): Dynamo compiled the frame again as [0/1_1]"
    assert outcome(tmp_path, "-_1_0_0") == "Compiled"
    # tlparse's name for both stays in the legend's tooltips, as tlparse writes it.
    legend = unescape(index.split('<p class="legend">', 2)[2].split("</p>", 1)[0])
    for status in ("break", "restarted"):
        assert f"(tlparse: {TLPARSE_STATUS_LABELS[status]})" in legend
    assert TLPARSE_STATUS_LABELS["break"] == "Success with restart (e.g., graph break)"


def test_graph_breaks_log_three_restarted_frames(tmp_path):
    log = torch213("graph_breaks.log")
    started, metrics = raw_compiles(log)
    # README: frames 1-3 restart after their break (attempt 0 has no metrics, attempt 1 has them with restart_reasons,
    # 1 op each); frame 0 breaks at line 23 without a restart (3 ops), frame 4 compiles plainly.
    assert started == {"[0/0]", "[1/0]", "[2/0]", "[3/0]", "[4/0]"}
    assert metrics == {"[0/0]": (3, False), "[1/0_1]": (1, True), "[2/0_1]": (1, True), "[3/0_1]": (1, True),
                       "[4/0]": (1, False)}
    statuses, digest, _ = statuses_of(log)
    assert statuses == {"[0/0]": "ok", "[1/0]": "restarted", "[1/0_1]": "break", "[2/0]": "restarted",
                        "[2/0_1]": "break", "[3/0]": "restarted", "[3/0_1]": "break", "[4/0]": "ok"}
    assert counts_text(digest) == "5 compiled (3 after a restart), 3 restarted attempts"

    report(log, tmp_path)
    assert cards(tmp_path)[:3] == ["8 compile ids", "5 compiled (3 after a restart)", "3 restarted attempts"]
    assert outcome(tmp_path, "-_0_0_0") == "Compiled: the graph was split (graph break at line 23), without a restart"
    # [2/0]'s break is the .item() on line 28 (programs/graph_breaks.py).
    assert outcome(tmp_path, "-_2_0_1") == "Compiled after a restart (graph break at line 28): the graph was split"


def test_peer_log_restarts(tmp_path):
    log = peer("comp_metrics.log")
    started, metrics = raw_compiles(log)
    assert started == {"[0/0]", "[1/0]", "[2/0]"}
    assert metrics == {"[0/0_1]": (1, True), "[1/0_1]": (1, True), "[2/0]": (1, False)}
    report(log, tmp_path)
    assert cards(tmp_path)[:3] == ["5 compile ids", "3 compiled (2 after a restart)", "2 restarted attempts"]


@pytest.mark.parametrize("counts,text", [
    ({"break": 2}, "2 compiled after a restart"),  # diff_break's f: both its compiles restarted (tests/diff)
    ({"ok": 2}, "2 compiled"),
    ({"break": 1, "missing": 1}, "1 compiled after a restart, 1 without metrics"),
])
def test_counts_in_words(counts, text):
    assert counts_text(counts) == text


def test_a_recompile_chain_of_restarted_compiles_reads_by_compilation(tmp_path, capsys):
    """resume_print_break: the resume function after the break at line 18 breaks again at line 20's print, so Dynamo
    restarts each of its compiles ([1/0] then [1/0_1], [1/1] then [1/1_1]). The recompile went [1/0] → [1/1]; the
    summary and the report printed "[1/0_1] → [1/1_1]", as if the attempt were part of the step. Now the chain names
    the compilations, the restarts said apart (the report's links still lead to the attempt that compiled)."""
    log = torch213("resume_print_break.log.gz")
    started, metrics = raw_compiles(log)
    # (each compile started as attempt 0; attempt 1 ended it, with a graph, the restart's reason kept)
    assert {"[1/0]", "[1/1]"} <= started and "[1/0_1]" not in started
    assert metrics["[1/0_1]"] == metrics["[1/1_1]"] == (1, True) and "[1/0]" not in metrics
    assert run_cli("summary", log) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "_1] →" not in out
    assert ("f (after its graph break at line 18) (resume_print_break.py:18) ├── [1/0] → [1/1] ├── [1/0] and [1/1] "
            "each compiled after a restart ([1/0_1], [1/1_1]: Dynamo restarted its analysis, most often at a graph "
            "break)") in out
    report(log, tmp_path / "r")
    page = (tmp_path / "r" / "index.html").read_text()
    [chain] = [c for c in re.findall(r'<span class="chain">(.*?)</span>', page) if "[1/" in c]
    assert unescape(re.sub(r"<[^>]+>", "", chain)) == "[1/0] → [1/1]"
    assert 'href="#[1/0_1]"' in chain and 'href="#[1/1_1]"' in chain
    assert "[1/0] and [1/1] each compiled after a restart ([1/0_1], [1/1_1]:" in page


def test_the_steps_under_a_chain_of_restarted_compiles_read_by_compilation_too(capsys):
    """resume_print_break's [1/1] (compiled in attempt [1/1_1]) recompiled [1/0] (attempt [1/0_1]): the chain read
    "[1/0] → [1/1]", but the step under it still read "[1/1_1]: tensor size changed", "11.41 s after [1/0_1] was
    compiled", "failed guard of [1/0_1]", "[1/1_1] compiled y's dimension 0 as dynamic". The --json keeps the ids."""
    log = torch213("resume_print_break.log.gz")
    assert run_cli("summary", log) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    start = out.index("f (after its graph break at line 18) (resume_print_break.py:18)")
    section = out[start:out.index("f (after its graph break at line 20) (resume_print_break.py:20)")]
    assert "_1]" not in section.replace("([1/0_1], [1/1_1]:", "")
    assert ("├── [1/1]: tensor size changed ├── at 38.73 s into the log, 11.41 s after [1/0] was compiled; took 2.93 s "
            "├── failed guard of [1/0]: tensor 'y' size mismatch at index 0.") in section
    assert "└── [1/1] compiled y's dimension 0 as dynamic (s17)" in section
    assert run_cli("summary", "--json", log) == 0
    [frame] = [f for f in json.loads(capsys.readouterr().out)["recompiles"]["frames"] if f["chain"][0].startswith("[1/")]
    [step] = frame["steps"]
    assert (step["compile_id"], step["previous"], step["failed_guards"][0]["compile_id"]) == ("[1/1_1]", "[1/0_1]",
                                                                                              "[1/0_1]")


def test_a_report_s_recompile_steps_read_by_compilation_and_link_the_attempt(tmp_path):
    """compiled_optimizer (CUDA): step's [2/1] compiled after a restart ([2/1_1]). Under the chain "[2/0] → [2/1] →
    ...", the steps read "[2/1_1]", "(guard of [2/1_1])", "3.5 ms after [2/1_1] was compiled", "[2/1_1] had
    specialized"; and the chain's restarted link lost the class and the title that say what the attempt is, which its
    neighbours have. Every link of the section leads to an anchor of the page."""
    report(cuda211("compiled_optimizer.log.gz"), tmp_path / "r")
    page = (tmp_path / "r" / "index.html").read_text()
    start = page.index('id="insights-recompiles"')
    section = page[start:page.index("</div>", start)]
    text = unescape(re.sub(r"<[^>]+>", "", section))
    assert "_1]" not in text.replace("([2/1_1]: Dynamo restarted", "")
    assert "(guard of [2/1])" in text and "3.5 ms after [2/1] was compiled" in text
    assert "[2/1] had specialized zf8" in text
    restarted = re.findall(r'<a [^>]*href="#\[2/1_1\]"[^>]*>([^<]*)</a>', section)
    assert restarted == ["[2/1]", "[2/1]"]  # the chain's and the step's
    for tag in re.findall(r'<a [^>]*href="#\[2/1_1\]"[^>]*>', section):
        assert 'class="mono"' in tag and "attempt 1 (Dynamo restarted its analysis" in unescape(tag)
    for anchor in re.findall(r'href="#([^"]+)"', section):
        assert f'id="{anchor}"' in page, anchor

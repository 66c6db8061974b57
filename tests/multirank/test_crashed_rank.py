"""A rank whose process died in native code: its summary says so, and what differs between the ranks says it first.

tests/data/torch213/multi_rank_crash: a real 2-rank gloo job started by `compilescope run --fresh-cache -- torchrun`
(make_multi_rank.py --crash, programs/two_ranks_crash.py). Rank 1 segfaulted in [0/0]'s Inductor code at its
second step, and run appended faulthandler's stack to rank 1's log (the process of that pid); rank 0, waiting at the
all_reduce, failed and its log just ends.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil

from compilescope.runner import attach_crash_reports

from ..conftest import REPO, run_cli, torch213
from ..insights.test_summary_cli import _documented_keys, _paths
from .conftest import Landing
from .test_summary_dir import summary_json, terminal

CRASHED = REPO / "tests" / "data" / "torch213" / "multi_rank_crash"
PROGRAM = REPO / "tests" / "multirank" / "programs" / "two_ranks_crash.py"
GLOG = re.compile(r"^V\d{4} [\d:.]+ (\d+) ", re.M)


def _records(text: str) -> list[tuple[str, str]]:
    """(header line, payload) of each record of a raw log."""
    lines, out = text.split("\n"), []
    for i, line in enumerate(lines):
        if GLOG.match(line):
            j = i + 1
            while j < len(lines) and lines[j].startswith("\t"):
                j += 1
            out.append((line, "\n".join(x[1:] for x in lines[i + 1:j])))
    return out


def _crash_of_raw_log(rank: int) -> tuple[str | None, str | None, list[str]]:
    """From rank's raw log alone: its crash record's payload, the compile id of the output code file on the crashing
    thread's stack, and the pids of its records (the crash record's last)."""
    text = gzip.open(CRASHED / f"dedicated_log_torch_trace_rank_{rank}.log.gz", "rt").read()
    records = _records(text)
    crash = next((payload for header, payload in records if '"name": "compilescope_crash"' in header), None)
    compile_id = None
    for header, _ in records:
        if '{"inductor_output_code": {"filename": ' in header:
            record = json.loads(header[header.index("{"):])
            if crash and f'File "{record["inductor_output_code"]["filename"]}"' in crash[crash.index("Current thread"):]:
                compile_id = f"[{record['frame_id']}/{record['frame_compile_id']}]"
    return crash, compile_id, [GLOG.match(header)[1] for header, _ in records]


def test_the_crashed_rank_says_so_and_its_crash_is_the_first_divergence(capsys):
    crash, compile_id, pids = _crash_of_raw_log(1)
    assert crash.startswith("Fatal Python error: Segmentation fault")
    assert len(set(pids)) == 1  # appended to the log of the process that crashed: rank 1's, no other
    assert compile_id == "[0/0]"
    assert _crash_of_raw_log(0)[0] is None
    line = next(i for i, t in enumerate(PROGRAM.read_text().splitlines(), 1) if "ctypes.string_at(0)" in t)

    doc = summary_json(capsys, CRASHED, "-j", "1")
    rank0, rank1 = doc["ranks"]
    assert rank0["crashes"] == []
    [c] = rank1["crashes"]
    assert (c["error"], c["compile_id"], c["during"]) == ("Segmentation fault", compile_id,
                                                          f"while running {compile_id}'s compiled code")
    assert (c["where"]["function"], c["where"]["filename"].endswith("/ctypes/__init__.py")) == ("string_at", True)
    assert c["user_frame"]["filename"].endswith("/two_ranks_crash.py") and c["user_frame"]["line"] == line
    assert c["said"] == (f"Segmentation fault in __init__.py:{c['where']['line']} (string_at), while running "
                         f"{compile_id}'s compiled code, called from two_ranks_crash.py:{line} in fragile")
    analysis = doc["analysis"]
    assert analysis["crashed_ranks"] == [1]
    # Both ranks compiled [0/0] alike (rank 1 crashed running it): the crash is the one thing that differs.
    [divergence] = analysis["divergences"]
    assert divergence["kind"] == "crashes"
    assert [(g["ranks"], g["what"]) for g in divergence["groups"]] == [([0], "no crash recorded"), ([1], c["said"])]
    # (keys under objects keyed by compile id are data; a location's keys are documented once, as `location.*`:
    # _paths says them so)
    paths = {p for p in _paths(doc) if not re.search(r"\.(statuses|compile_times_s)\.", p)}
    missing = sorted(paths - _documented_keys())
    assert missing == [], f"document these keys in docs/summary-schema.md: {missing}"

    text = terminal(CRASHED)
    assert re.search(r"^1 crashed +1 ", text, re.M) and re.search(r"^0 +1 ", text, re.M)
    assert "rank 1 crashed: Segmentation fault in __init__.py" in text
    assert text.index("rank 1 crashed") < text.index("DIFFERS  Ranks crashed in native code")


def test_the_landing_page_says_which_rank_crashed_and_links_its_crash(tmp_path):
    assert run_cli(CRASHED, "--all-ranks-html", "-o", tmp_path / "out", "--no-browser", "-j", "1") == 0
    landing = Landing(tmp_path / "out")
    box = landing.html[landing.html.index('id="crashed-ranks"'):landing.html.index('id="divergence"')]
    assert "Rank 1 crashed" in box and 'href="rank_1/index.html#insights-crash"' in box
    assert "while running [0/0]&#39;s compiled code" in box
    # The link lands on the crash: rank 1's own report has it, rank 0's none.
    assert 'id="insights-crash"' in (tmp_path / "out" / "rank_1" / "index.html").read_text()
    assert 'id="insights-crash"' not in (tmp_path / "out" / "rank_0" / "index.html").read_text()
    table = landing.html[landing.html.index('id="rank-table"'):]
    assert table.count(">crashed</a>") == 1 and table.index(">crashed</a>") > table.index(">Rank 1</a>")
    assert landing.summary["analysis"]["crashed_ranks"] == [1]
    assert landing.groups("crashes") == [[0], [1]]


def test_a_crash_goes_to_the_log_of_its_rank_and_is_ranked_before_what_follows(tmp_path, capsys):
    """tests/data/torch213/multi_rank (rank 1 compiles one graph more than rank 0, an eager job: no generated code), and
    the real crash text of native_crash.log.gz written as faulthandler writes it for rank 1's process: run appends it
    to rank 1's log, found by the pid of its records, and the crash comes before the compile-id divergence."""
    ranks = tmp_path / "ranks"
    shutil.copytree(torch213("x").parents[1] / "multi_rank", ranks)
    logs = sorted(str(p) for p in ranks.glob("*.log"))
    pid = {log: GLOG.search(open(log).read())[1] for log in logs}
    assert pid[logs[0]] != pid[logs[1]]
    native = gzip.open(torch213("native_crash.log.gz"), "rt").read()
    text = next(payload for header, payload in _records(native) if '"name": "compilescope_crash"' in header)
    (ranks / f"compilescope_crash_{pid[logs[1]]}.txt").write_text(text + "\n")
    [report] = attach_crash_reports(str(ranks), logs)
    assert report.log == logs[1] and report.headline == "Segmentation fault"
    assert "compilescope_crash" not in open(logs[0]).read()

    doc = summary_json(capsys, ranks, "-j", "1")
    [c] = doc["ranks"][1]["crashes"]
    # No output code in an eager job's log: nothing names whose compiled code ran.
    assert (c["error"], c["compile_id"], c["during"], c["where"]["function"]) == ("Segmentation fault", None, "",
                                                                                   "string_at")
    assert c["user_frame"]["function"] == "fragile"  # native_crash.py's custom op, the first frame of the user's
    assert [d["kind"] for d in doc["analysis"]["divergences"]] == ["crashes", "compile_ids"]


def test_a_report_of_the_ranks_prints_what_its_landing_page_leads_with(tmp_path, capsys):
    """The report of several ranks said how many files and divergences it made, not which: it prints the rank that
    crashed and what differs between the ranks (as `summary DIR --json` says them), the command that says it rank by
    rank, and how many files it wrote where and the page to open, as one log's report ends."""
    doc = summary_json(capsys, CRASHED)
    out = tmp_path / "out"
    assert run_cli(CRASHED, "-o", out, "--no-browser", "-j", "1") == 0
    lines = capsys.readouterr().out.splitlines()
    crashed = [f"rank {r['rank']} crashed: {c['said']}" for r in doc["ranks"] for c in r["crashes"]]
    differs = [d["title"] for d in doc["analysis"]["divergences"]]
    assert len(crashed) == 1 and crashed[0].startswith("rank 1 crashed: Segmentation fault") and differs
    assert lines[0] == "Between ranks:"
    assert [line.split(maxsplit=1) for line in lines[1:-2]] == [["ERROR", crashed[0]]] + [["WARN", d] for d in differs]
    assert lines[-2] == f"  rank by rank: compilescope summary {CRASHED}"
    # Then what was written where, as a report of one log ends (the divergences it also counted are said above).
    files = sum(1 for f in out.rglob("*") if f.is_file())
    assert re.fullmatch(rf"Wrote {files} files for 2 ranks to {re.escape(str(out))} in \d+\.\ds \(1 job\); "
                        rf"open {re.escape(str(out / 'index.html'))}", lines[-1]), lines[-1]

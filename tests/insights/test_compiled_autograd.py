"""Compiled autograd's backward graphs, on real logs of programs/compiled_autograd.py (torch 2.13, CPU).

The program trains with torch._dynamo.config.compiled_autograd on; a batch of 3 after two of 2 recompiles the forward
and makes compiled autograd capture a second backward graph, [!1]. compiled_autograd_verbose.log.gz was recorded with
TORCH_LOGS=compiled_autograd_verbose, the only way torch logs why its cache missed; compiled_autograd.log.gz without.
"""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles import BACKWARD_REASONS_HINT
from compilescope.analyses.recompiles.backward_and_resets import BACKWARD_LABEL_HELP
from compilescope.ingest.reader import read_trace

from ..conftest import run_cli, torch213


def _insights(name: str):
    with read_trace(str(torch213(name))) as trace:
        return insights(trace)


def test_each_backward_graph_with_its_compiles_and_why_the_cache_missed():
    rec = _insights("compiled_autograd_verbose.log.gz").recompiles
    assert [(g.label, g.compile_ids, g.reason) for g in rec.backward_graphs] == [
        ("[!0]", ["[!0/-/-]", "[!0/1/0]"],
         "Cache miss due to new autograd node: torch::autograd::GraphRoot (NodeCall 0) with key size 39, "
         "previous key sizes=[]"),
        ("[!1]", ["[!1/-/-]", "[!1/3/0]"],
         "Cache miss due to new autograd node: CompiledFunctionBackward (NodeCall 1) with key size 113, "
         "previous key sizes=[112]"),
    ]
    # The forward's own recompile is counted apart: `check --max-recompiles` still counts frames' recompiles.
    assert rec.total == 1 and rec.backward_recaptures == 1 and rec.with_backward == 2


def test_the_finding_quotes_torchs_reason_or_says_how_to_have_it_logged():
    [verbose] = [f for f in _insights("compiled_autograd_verbose.log.gz").findings if "compiled autograd" in f.title]
    assert verbose.title == "compiled autograd captured 2 backward graphs"
    assert verbose.detail == ("[!1]: Cache miss due to new autograd node: CompiledFunctionBackward (NodeCall 1) with key "
                              f"size 113, previous key sizes=[112] ({BACKWARD_LABEL_HELP})")
    plain = _insights("compiled_autograd.log.gz")
    assert [g.reason for g in plain.recompiles.backward_graphs] == [None, None]
    [finding] = [f for f in plain.findings if "compiled autograd" in f.title]
    assert finding.detail == ("its cache missed, so the backward was captured and compiled again as [!1] "
                              f"({BACKWARD_LABEL_HELP}); to see why, run with {BACKWARD_REASONS_HINT}")
    # A log without compiled autograd has no backward graph, and says nothing of them.
    training = _insights("training.log")
    assert training.recompiles.backward_graphs == [] and not any("compiled autograd" in f.title for f in training.findings)


def test_the_first_backward_label_shown_says_what_it_is(tmp_path, capsys):
    """[!1] is compiled autograd's second backward graph: the log's envelopes carry compiled_autograd_id 0 (frame 1)
    and 1 (frame 3), which compile ids write "!0/1/0", "!1/3/0". The label means nothing to someone who has not read
    torch's source: where it first appears (the finding, in the terminal and the report), it is said."""
    text = gzip.open(torch213("compiled_autograd.log.gz"), "rt").read()
    assert sorted(set(re.findall(r'"compiled_autograd_id": (\d+), "frame_id": (\d+)', text))) == [("0", "1"), ("1", "3")]
    assert BACKWARD_LABEL_HELP == ("compiled autograd numbers its backward graphs [!0], [!1], …; its compile ids start "
                                   "with !")
    assert run_cli("summary", torch213("compiled_autograd.log.gz")) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    first = out.index("[!1]")
    assert out[first:].startswith(f"[!1] ({BACKWARD_LABEL_HELP})")
    assert run_cli(torch213("compiled_autograd.log.gz"), "-o", tmp_path / "r", "--no-browser") == 0
    page = re.sub(r"<[^>]+>", "", (tmp_path / "r" / "index.html").read_text())
    page = " ".join(page.replace("&amp;", "&").split())
    assert page[page.index("[!1]"):].startswith("[!1] (compiled autograd numbers its backward graphs [!0], [!1], …; its "
                                                "compile ids start with !)")


def test_terminal_json_and_page(tmp_path, capsys):
    assert run_cli("summary", torch213("compiled_autograd.log.gz")) == 0
    out = capsys.readouterr().out
    section = out[out.index("Recompiles (2)"):out.index("Graph breaks")]
    assert "compiled autograd: 2 backward graphs captured and compiled" in section
    assert "[!0]: the first" in section and "[!1]: (no reason logged)" in section
    assert f"why: torch logs it with {BACKWARD_REASONS_HINT}" in section

    assert run_cli("summary", "--json", torch213("compiled_autograd_verbose.log.gz")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [g["id"] for g in doc["recompiles"]["backward_graphs"]] == [0, 1]
    # The terminal's "Recompiles (2)" is in the JSON too: one frame's recompile and one backward recapture.
    rec = doc["recompiles"]
    assert (rec["total"], rec["backward_recaptures"], rec["with_backward"]) == (1, 1, 2)
    assert rec["total"] == sum(f["recompiles"] for f in rec["frames"])
    assert doc["recompiles"]["backward_graphs"][1]["reason"].startswith("Cache miss due to new autograd node: Compiled")

    assert run_cli(torch213("compiled_autograd.log.gz"), "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    start = page.index('id="insights-backward-graphs"')
    block = page[start:page.index("</div>", start)]
    rows = [[re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", block, re.S) if "<td" in tr]
    assert rows == [["[!0]", "the first", "[!0/-/-], [!0/1/0]"], ["[!1]", "no reason logged", "[!1/-/-], [!1/3/0]"]]
    assert BACKWARD_REASONS_HINT in block
    # Each compile id links to its row of the page.
    assert set(re.findall(r'href="([^"]+)"', block)) == {"#[!0/-/-]", "#[!0/1/0]", "#[!1/-/-]", "#[!1/3/0]"}
    assert all(f'id="{cid}"' in page for cid in ("[!0/-/-]", "[!0/1/0]", "[!1/-/-]", "[!1/3/0]"))


def test_capturing_a_backward_is_a_phase_of_its_own():
    """torch times each capture as the chromium event `compiled_autograd`, whose compile id is "!N" (no frame): it is
    the capture's compile id, [!N/-/-], as its envelopes name it, and not "Other"."""
    times = _insights("compiled_autograd.log.gz").compile_time
    captures = {c.compile_id: c for c in times.compiles if c.compile_id.endswith("/-/-]")}
    assert sorted(captures) == ["[!0/-/-]", "[!1/-/-]"]
    for capture in captures.values():
        assert capture.total_s > 0 and capture.phases["compiled_autograd"] == capture.total_s
    # Dynamo's compiles of the captured graphs are timed as any other compile.
    assert all(c.phases["compiled_autograd"] == 0 for c in times.compiles if c.compile_id not in captures)
    assert "compiled_autograd" in {p.phase for p in times.phases}


def test_the_slowest_compiles_name_what_a_capture_compiled():
    # A capture has no function of its own (its events carry compiled_autograd_id, no frame_id, and no
    # compilation_metrics name a co_name for it): the table of slowest compiles left its function cell empty, a row of
    # 429 ms that said nothing of what took it.
    times = _insights("compiled_autograd.log.gz").compile_time
    labels = {c.compile_id: c.function_text for c in times.compiles if c.compile_id.endswith("/-/-]")}
    assert labels == {"[!0/-/-]": "compiled autograd capturing the backward graph [!0]",
                      "[!1/-/-]": "compiled autograd capturing the backward graph [!1]"}
    assert all(c.function_text for c in times.compiles)


def test_the_slowest_compiles_table_names_what_a_capture_compiled(tmp_path):
    # (the page's table showed a name only where the compile had one: the capture's cell stayed empty)
    assert run_cli(torch213("compiled_autograd.log.gz"), "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    table = page[page.index('<table class="slowest">'):]
    table = table[:table.index("</table>")]
    row = re.search(r"\[!0/-/-\]</a></td><td class=\"mono\">([^<]*)</td>", table)
    assert row is not None and row[1] == "compiled autograd capturing the backward graph [!0]", table[:2000]


def test_a_captures_page_has_its_time_and_says_what_it_is(tmp_path):
    assert run_cli(torch213("compiled_autograd_verbose.log.gz"), "-o", tmp_path / "r", "--no-browser") == 0
    capture = (tmp_path / "r" / "1_-_-_0" / "index.html").read_text()
    assert re.search(r'<td id="compile-time">[1-9]\d ms', capture), capture[:3000]
    reason = "<code>Cache miss due to new autograd node: CompiledFunctionBackward (NodeCall 1) with key size 113, "
    assert f'<td id="backward-graph">captures the backward graph [!1], captured because {reason}' in capture
    compiled = (tmp_path / "r" / "1_3_0_0" / "index.html").read_text()
    assert f'<td id="backward-graph">compiles the backward graph [!1], captured because {reason}' in compiled
    assert 'id="backward-graph"' not in (tmp_path / "r" / "-_0_0_0" / "index.html").read_text()


def test_a_capture_is_done_when_its_graph_is_logged(tmp_path):
    """[!N/-/-] is compiled autograd capturing a backward: never a Dynamo compile, so never metrics of its own."""
    from compilescope.analyses.status import compile_statuses

    with read_trace(str(torch213("compiled_autograd.log.gz"))) as trace:
        statuses = {str(cid): s for cid, s in compile_statuses(trace).items()}
    assert statuses["[!0/-/-]"] == statuses["[!1/-/-]"] == "ok"
    assert statuses["[!0/1/0]"] == statuses["[!1/3/0]"] == "ok"
    # The same log cut just before the second capture's graph: that capture never finished, as far as it says.
    text = gzip.decompress(torch213("compiled_autograd.log.gz").read_bytes())
    cut = tmp_path / "cut.log"
    cut.write_bytes(text[:text.index(b'{"compiled_autograd_graph": {}, "compiled_autograd_id": 1')].rsplit(b"\n", 1)[0] + b"\n")
    with read_trace(str(cut)) as trace:
        statuses = {str(cid): s for cid, s in compile_statuses(trace).items()}
    assert statuses["[!0/-/-]"] == "ok" and statuses["[!1/-/-]"] == "missing"

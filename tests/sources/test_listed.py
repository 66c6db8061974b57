"""What a source page names of a long list is the analysis's to decide: the first ones, and how many it left out.

many_graphs.py recompiles its forward at every call, so one line is captured in 12 graphs; the graphs are read from
the log's own FX node comments (test_sources.fx_comments), not from compilescope.
"""

from __future__ import annotations

import gzip
import html
import re

from compilescope.analyses.sources.analysis import analyze_sources
from compilescope.ingest.reader import read_trace
from compilescope.wording import LISTED, Listed

from ..conftest import TORCH213_PROGRAMS, report, torch213
from .test_sources import fx_comments

LOG = torch213("many_graphs.log.gz")
PROGRAM = TORCH213_PROGRAMS / "many_graphs.py"


def _graphs_of_line(line: int, tmp_path) -> list[str]:
    """The graphs whose FX node comments name the line, in the log's order (fx_comments reads the log as text)."""
    text = tmp_path / "many_graphs.log"
    text.write_bytes(gzip.decompress(LOG.read_bytes()))
    return list(dict.fromkeys(cid for cid, path, n, _ in fx_comments(text) if path.endswith("many_graphs.py") and n == line))


def test_a_line_in_more_graphs_than_listed_gets_the_first_and_the_count(tmp_path):
    line = PROGRAM.read_text().splitlines().index("        return x.sin() + 1") + 1
    graphs = _graphs_of_line(line, tmp_path)
    assert len(graphs) == 12  # a recompile per call: more than a list names
    [f] = [f for f in analyze_sources(read_trace(LOG)).files if f.name == "many_graphs.py"]
    listed = f.notes[line].graph_ids
    assert listed.items == graphs[:LISTED] and listed.more == len(graphs) - LISTED


def test_the_badge_of_a_line_in_more_graphs_than_listed_says_the_first_and_how_many_more(tmp_path):
    """Cut as every other list on the page is, where it named all 12 (a line of a loop: hundreds)."""
    line = PROGRAM.read_text().splitlines().index("        return x.sin() + 1") + 1
    graphs = _graphs_of_line(line, tmp_path)
    [f] = [f for f in analyze_sources(read_trace(LOG)).files if f.name == "many_graphs.py"]
    report(LOG, tmp_path / "report")
    page = html.unescape((tmp_path / "report" / f.page).read_text())
    [row] = re.findall(rf'<div class="src-line[^"]*" id="L{line}".*?<ul class="notes">', page, re.S)
    [badge] = re.findall(r'<span class="b b-graph" title="graphs that captured this line">(.*?)</span>', row)
    assert badge == " ".join(graphs[:LISTED]) + f" and {len(graphs) - LISTED} more"


def _recompiles_of(tmp_path) -> list[str]:
    """The compile ids of the log's recompile_reasons artifacts, in its order (read as text: each names the frame and
    compile of the recompile whose failed guards it lists)."""
    text = gzip.decompress(LOG.read_bytes()).decode()
    return [f"[{m[1]}/{m[2]}]" for m in re.finditer(
        r'"name": "recompile_reasons".*?"frame_id": (\d+), "frame_compile_id": (\d+)', text)]


def _row(page: str, line: int) -> str:
    [row] = re.findall(rf'<div class="src-line[^"]*" id="L{line}".*?<ul class="notes">.*?</ul>', page, re.S)
    return row


def test_the_badge_of_a_line_that_recompiled_more_than_listed_says_the_first_and_how_many_more(tmp_path):
    """many_graphs.py's `self.step += 1` fails a guard at each call: 11 recompiles, where the badge and its title named
    every one (its title every check of every one: a recompile checks each earlier compilation)."""
    line = PROGRAM.read_text().splitlines().index("        self.step += 1") + 1
    recompiles = _recompiles_of(tmp_path)
    assert len(recompiles) == 11
    [f] = [f for f in analyze_sources(read_trace(LOG)).files if f.name == "many_graphs.py"]
    assert f.notes[line].recompiled_ids == Listed(recompiles[:LISTED], len(recompiles) - LISTED)
    report(LOG, tmp_path / "report")
    page = html.unescape((tmp_path / "report" / f.page).read_text())
    [(title, badge)] = re.findall(r'<span class="b b-guard" title="torch.compile compiled this frame again because of '
                                  r'this line: ([^"]*)">recompiled (.*?)</span>', _row(page, line))
    assert badge == " ".join(recompiles[:LISTED]) + f" and {len(recompiles) - LISTED} more"
    assert re.findall(r"(?:^|; )(\[\d+/\d+\]): ", title) == recompiles[:LISTED]
    assert title.endswith(f" and {len(recompiles) - LISTED} more")


def test_the_note_of_graphs_alike_more_than_listed_names_the_first_and_how_many_more(tmp_path):
    """The 12 graphs capture `return x.sin() + 1` as the same nodes: one note for all, whose compile ids were uncut."""
    line = PROGRAM.read_text().splitlines().index("        return x.sin() + 1") + 1
    graphs = _graphs_of_line(line, tmp_path)
    [f] = [f for f in analyze_sources(read_trace(LOG)).files if f.name == "many_graphs.py"]
    [(ids, nodes)] = f.notes[line].graph_groups
    assert ids == Listed(graphs[:LISTED], len(graphs) - LISTED) and nodes == Listed(["sin", "add"], 0)
    report(LOG, tmp_path / "report")
    page = html.unescape((tmp_path / "report" / f.page).read_text())
    [note] = re.findall(r'<li class="n-graphs">(.*?)</li>', _row(page, line))
    assert re.sub(r"<[^>]+>", "", note) == (f"captured in graph {', '.join(graphs[:LISTED])} and "
                                            f"{len(graphs) - LISTED} more sin, add")


def test_the_compiled_badge_of_a_function_compiled_more_than_listed_says_the_first_and_how_many_more(tmp_path):
    """forward is compiled 12 times (the log's dynamo_start events): its def line's badge named all 12, where each
    compile has its own note below."""
    line = PROGRAM.read_text().splitlines().index("    def forward(self, x):") + 1
    text = gzip.decompress(LOG.read_bytes()).decode()
    compiles = [f"[{m[1]}/{m[2]}]" for m in re.finditer(
        r'\{"dynamo_start".*?"frame_id": (\d+), "frame_compile_id": (\d+)', text)]
    assert len(compiles) == 12
    [f] = [f for f in analyze_sources(read_trace(LOG)).files if f.name == "many_graphs.py"]
    assert f.notes[line].compiled_here == Listed(compiles[:LISTED], len(compiles) - LISTED)
    report(LOG, tmp_path / "report")
    page = html.unescape((tmp_path / "report" / f.page).read_text())
    [badge] = re.findall(r'<span class="b b-frame" title="torch.compile compiled the function that starts here">'
                         r'compiled: (.*?)</span>', _row(page, line))
    assert badge == " ".join(compiles[:LISTED]) + f" and {len(compiles) - LISTED} more"

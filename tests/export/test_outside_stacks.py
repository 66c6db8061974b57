"""The index's "Stacks outside any compilation" of an export log (tests/data/torch213/README.md, export_constraints):
torch.export's records carry whole stacks, mostly torch's own frames (up to 75), so each path through the user's code
is one line, its innermost line first, with the whole stacks folded after it."""

from __future__ import annotations

import re

from compilescope.analyses.stack_trie import outside_stacks
from compilescope.api import report
from compilescope.ingest.reader import read_trace

from ..conftest import torch213

# The log's records with a stack and no frame_id (zcat | grep), stacks told once each (as the model keeps them): the
# user's frames in each (programs/export_constraints.py), the innermost line, the distinct stacks and the deepest.
# export_encoder (line 52, called at 72): describe_storage/_tensor/_source (22, 21, 20 frames), create_symbol (27);
# guard_added_fast s27 <= 32 at forward:30 (73); guard_added_fast Eq(s52, 2) (73) and the specialization (75) at 31.
# export_topk (line 63, called at 73): compilation_metrics (15), describe_* (22, 21, 20, logged twice), the artifact
# (17); create_unbacked_symbol u0 at 36 and u1 at 37 (64 each).
EXPECTED = [
    (52, "via <module> (export_constraints.py:72)", "4 stacks, up to 27 frames each"),
    (30, "via export_encoder (export_constraints.py:52), <module> (export_constraints.py:72)", "1 stack of 73 frames"),
    (31, "via export_encoder (export_constraints.py:52), <module> (export_constraints.py:72)",
     "2 stacks, up to 75 frames each"),
    (63, "via <module> (export_constraints.py:73)", "5 stacks, up to 22 frames each"),
    (36, "via export_topk (export_constraints.py:63), <module> (export_constraints.py:73)", "1 stack of 64 frames"),
    (37, "via export_topk (export_constraints.py:63), <module> (export_constraints.py:73)", "1 stack of 64 frames"),
]


def test_the_stacks_are_one_line_per_path_through_the_users_code():
    with read_trace(str(torch213("export_constraints.log.gz"))) as trace:
        groups = outside_stacks(trace)
    assert [(g.innermost.line, g.callers, g.folded) for g in groups] == EXPECTED
    assert {g.innermost.filename.rsplit("/", 1)[-1] for g in groups} == {"export_constraints.py"}


def test_the_index_folds_the_whole_stacks(tmp_path):
    index = report(torch213("export_constraints.log.gz"), out=tmp_path / "r")
    with open(index) as f:
        page = f.read()
    section = page[page.index('id="unknown-stacks"'):page.index('<h2 id="compilations"')]
    # Every frame is inside a fold: what shows is one summary per path, its innermost user line first.
    assert section.count("<details>") == len(EXPECTED) == section.count("</details>")
    outside = re.sub(r"<details>.*?</details>", "", section, flags=re.S)
    assert "stack-trie" not in outside and "torch/" not in outside
    summaries = re.findall(r"<summary>(.*?)</summary>", section, flags=re.S)
    assert [re.search(r"#L(\d+)", s)[1] for s in summaries] == [str(line) for line, _, _ in EXPECTED]
    assert "(4 stacks, up to 27 frames each)" in summaries[0]

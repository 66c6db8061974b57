"""cpu_slower_than_eager (tests/data/torch213/programs/cpu_slower_than_eager.py, dynamic=False): forward breaks at
line 26 (`if h.sum() > 0:`), and Dynamo makes a resume function for each way the branch goes, both named
torch_dynamo_resume_in_forward_at_26, at the same file and first line: frame 1 (only `return torch.sigmoid(h)`) and
frame 3 (`h = h + 1` first). Each recompiled once because h's batch size changed.

The two are named apart by their first compile id wherever the recompiles name them (summary, report, --json), and
the advice for h does not say to mark_dynamic `h`: it is a local of forward that Dynamo passes on past the break, no
tensor the user passes in.
"""

from __future__ import annotations

import gzip
import json
import re

from ..conftest import run_cli, torch213

LOG = torch213("cpu_slower_than_eager.log.gz")


def test_the_raw_log_has_two_frames_of_the_same_resume_function():
    text = gzip.open(LOG, "rt").read()
    frames = set(re.findall(r'"co_name": "torch_dynamo_resume_in_forward_at_26", "co_filename": "[^"]*", '
                            r'"co_firstlineno": 26[^\n]*?"frame_id": (\d+)', text))
    assert frames == {"1", "3"}


def test_summary_names_the_two_resume_frames_apart_and_json_says_how(capsys):
    assert run_cli("summary", LOG) == 0
    out = capsys.readouterr().out
    for cid in ("[1/0]", "[3/0]"):
        assert f"forward (after its graph break at line 26, first compiled as {cid})" in out
    assert "forward (after its graph break at line 26)  (" not in out  # (no heading left unnamed apart)

    assert run_cli("summary", "--json", LOG) == 0
    frames = json.loads(capsys.readouterr().out)["recompiles"]["frames"]
    by_id = {f["frame_id"]: f for f in frames}
    assert (by_id[1]["named_apart"], by_id[3]["named_apart"], by_id[0]["named_apart"]) == ("[1/0]", "[3/0]", None)
    assert by_id[1]["label"] != by_id[3]["label"]
    assert by_id[0]["label"] == "forward"


def test_the_report_names_the_two_resume_frames_apart(tmp_path):
    """On the recompile frames' headings themselves: the overview's links carry the label too, and passed for them
    while both headings said `forward (after its graph break at line 26)`."""
    assert run_cli(LOG, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    headings = {m["frame"]: m["heading"] for m in re.finditer(
        r'<div class="recompile-frame" data-frame="(?P<frame>\d+)">\s*<p><strong class="mono"[^>]*>(?P<heading>[^<]*)</strong>',
        page)}
    assert headings == {"0": "forward",
                        "1": "forward (after its graph break at line 26, first compiled as [1/0])",
                        "3": "forward (after its graph break at line 26, first compiled as [3/0])"}
    # (what stands behind the label, in the heading's title)
    assert 'title="Dynamo&#39;s resume function torch_dynamo_resume_in_forward_at_26">forward (after' in page \
        or 'title="Dynamo\'s resume function torch_dynamo_resume_in_forward_at_26">forward (after' in page


def test_a_resume_frames_local_is_not_advised_to_be_marked_dynamic(capsys):
    assert run_cli("summary", "--json", LOG) == 0
    frames = json.loads(capsys.readouterr().out)["recompiles"]["frames"]
    by_id = {f["frame_id"]: f for f in frames}
    assert "torch._dynamo.mark_dynamic(x, 0)" in " ".join(by_id[0]["advice"])  # (x is forward's own argument)
    for frame_id in (1, 3):
        advice = " ".join(by_id[frame_id]["advice"])
        assert "mark_dynamic(h" not in advice
        assert "`h` is a local of forward that Dynamo passes on past its graph break at line 26" in advice
        assert "drop dynamic=False" in advice

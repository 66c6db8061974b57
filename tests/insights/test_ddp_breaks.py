"""torch.compile(DistributedDataParallel(mlp)) on torch 2.13 (tests/data/torch213/multi_rank_ddp/) breaks in DDP's own
code: at distributed.py:1757 (its logger) and in contextlib's __init__, under DDP's _run_ddp_forward, for the
_inside_ddp_forward torch marks skipped. Fix first says so and how to compile under DDP, not "Dynamo compiled code of
Python's own library ... nothing in your code to change". What each test expects is read from the raw log (_breaks)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from ..conftest import REPO, run_cli, torch213

DDP = REPO / "tests" / "data" / "torch213" / "multi_rank_ddp"
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _breaks(log: Path) -> list[tuple[str, str, list[str]]]:
    """(compile id, where the break is, the files of its user traceback, innermost last) of each graph break
    artifact of the log, as torch wrote them."""
    found = []
    with gzip.open(log, "rt", encoding="utf-8") as f:
        record, payload = None, []
        for line in list(f) + ["end"]:
            if line.startswith("\t"):
                payload.append(line[1:])
                continue
            if record is not None:
                text = "".join(payload)
                traceback = text.split("User code traceback:")[1].split("\nTraceback (most recent call last)")[0]
                where = re.search(r"Graph break in user code at (\S+)", text)[1].rsplit("/", 1)[-1]
                found.append((record, where, [m[1].rsplit("site-packages/", 1)[-1] for m in _FRAME.finditer(traceback)]))
            m = re.search(r'"dynamo_graph_break_reason".*"frame_id": (\d+), "frame_compile_id": (\d+)', line)
            record, payload = (f"[{m[1]}/{m[2]}]" if m else None), []
    return found


@pytest.mark.parametrize("rank, compilations", [(0, 3), (1, 4)])
def test_the_breaks_are_in_ddps_forward_and_fix_first_says_how_to_compile_under_ddp(rank, compilations, capsys):
    log = DDP / f"dedicated_log_torch_trace_rank_{rank}.log.gz"
    breaks = _breaks(log)
    # Each break: at DDP's line, or in contextlib right under DDP's _run_ddp_forward (polyfills between).
    assert {where for _, where, _ in breaks} == {"distributed.py:1757", "contextlib.py:105"}
    for _, where, files in breaks:
        under = [f for f in files if not f.startswith(("/usr/lib/python3", "torch/_dynamo/"))]
        assert under[-1] == "torch/nn/parallel/distributed.py", where
    assert len({cid for cid, _, _ in breaks}) == compilations
    assert run_cli("summary", "--json", log) == 0
    doc = json.loads(capsys.readouterr().out)
    titles = [f["title"] for f in doc["findings"]]
    assert not [t for t in titles if "Python's own library" in t]
    [ddp] = [f for f in doc["findings"] if f["title"].startswith("Dynamo breaks the graph in DistributedDataParallel")]
    assert ddp["title"].endswith(f"({compilations} compilations)") and ddp["severity"] == "warning"
    assert "DDP(torch.compile(model))" in ddp["detail"] and "torch._dynamo.config.optimize_ddp" in ddp["detail"]
    # Neither break is listed again as the user's (torch's hint there: "Avoid calling `Logger.set_runtime_stats_and_log`
    # in your code").
    assert not [t for t in titles if t.startswith("graph break at")]
    assert [b["in_ddp_forward"] for b in doc["graph_breaks"]["breaks"]] == [True, True]


def test_the_graph_break_section_says_it_in_place_of_torchs_hints(capsys):
    assert run_cli("summary", DDP / "dedicated_log_torch_trace_rank_1.log.gz") == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert out.count("note: Dynamo broke the graph in DistributedDataParallel's forward, not in your code") == 2
    assert "hint: Avoid calling `Logger.set_runtime_stats_and_log`" not in out


def test_breaks_outside_ddp_are_not_said_to_be_in_it(capsys):
    # graph_breaks.log: breaks in the user's own program, no DDP.
    assert run_cli("summary", "--json", torch213("graph_breaks.log")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["graph_breaks"]["breaks"] and not [b for b in doc["graph_breaks"]["breaks"] if b["in_ddp_forward"]]


def test_the_recompile_is_named_by_the_module_the_user_compiled_not_torchs_wrapper(capsys):
    # torch.compile(ddp) compiles torch's wrap_inline `inner` (external_utils.py:67, [0/0]'s co_name), which calls the
    # DDP module; the guard tree of rank 1's log says so: `source=L['fn'], ...,
    # type=<class 'torch.nn.parallel.distributed.DistributedDataParallel'>`. Rank 1's short last batch recompiled it
    # ([0/1], "tensor 'args[0]' size mismatch at index 0. expected 8, actual 5"), called at line 30: `compiled(x)`.
    [rank1] = DDP.glob("*rank_1.log.gz")
    with gzip.open(rank1, "rt", encoding="utf-8") as f:
        raw = f.read()
    assert '"co_name": "inner"' in raw
    assert "source=L['fn'], accessed_by=FrameLocalsGuardAccessor(key='fn', framelocals_idx=2), type=<class " \
           "'torch.nn.parallel.distributed.DistributedDataParallel'>" in raw
    assert run_cli("summary", rank1, "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    [frame] = doc["recompiles"]["frames"]
    assert (frame["name"], frame["module"]) == ("inner", "DistributedDataParallel")
    assert ("DistributedDataParallel's forward (called at ddp_uneven_batch.py:30) recompiled once, then ran with "
            "args[0]'s dimension 0 dynamic") in [f["title"] for f in doc["findings"]]
    # Dynamo's other frames of the run are DDP's own helpers, compiled as themselves: no module is named for them.
    assert run_cli("summary", rank1) == 0
    out = capsys.readouterr().out
    assert "\nDistributedDataParallel's forward  (external_utils.py:67, called at\nddp_uneven_batch.py:30)" in out
    assert re.search(r"\[0/1\] +DistributedDataParallel's forward ", out) and re.search(r"\[1/0\] +helper ", out)


def test_the_page_names_the_module_too(tmp_path):
    [rank1] = DDP.glob("*rank_1.log.gz")
    assert run_cli(rank1, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert ('<strong class="mono" title="torch&#39;s inner, which runs the DistributedDataParallel compiled">'
            "DistributedDataParallel&#39;s forward</strong>") in page

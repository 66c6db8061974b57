"""A log that ends during a restarted attempt still says why that compile happened.

../shared gpu-torch211/gpt2_train: step 4 of the script sends a sequence of 96 tokens, where steps 0-2 sent 64, so
GPT-2's forward (frame 1) compiles again as [1/1]. Dynamo logs its `recompile_reasons` artifact once, with attempt 0
("1/0: tensor 'input_ids' size mismatch at index 1. expected 64, actual 96"); [1/1] then restarts at the graph
break in transformers' logging, and its attempt 1 names the reason again only in its `compilation_metrics`
(`recompile_reason`, the log's only `"compile_id": "1/1"` metrics). A log cut before those metrics (a job killed
while compiling, a truncated attachment) has [1/1_1] without them: the reason is attempt 0's record.
"""

from __future__ import annotations

import json

from ..conftest import run_cli, shared

LOG = "gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"
METRICS_1_1 = '{"compilation_metrics": {"compile_id": "1/1"'


def _cut_before_metrics_of_1_1(tmp_path):
    cut = tmp_path / "cut.log"
    with open(shared(LOG), encoding="utf-8") as src, open(cut, "w", encoding="utf-8") as dst:
        for line in src:
            if METRICS_1_1 in line:
                break
            dst.write(line)
        else:
            raise AssertionError("the log has no metrics for 1/1")
    return cut


def _forward(doc):
    [frame] = [f for f in doc["recompiles"]["frames"] if f["frame_id"] == 1]
    return frame


def test_the_cut_log_names_the_reason_of_its_unfinished_restart(tmp_path, capsys):
    assert run_cli("summary", "--json", _cut_before_metrics_of_1_1(tmp_path)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [u["compile_id"] for u in doc["unfinished"]] == ["[1/1]"]  # (the log ends inside it)
    frame = _forward(doc)
    assert frame["chain"] == ["[1/0_1]", "[1/1_1]"]
    [step] = frame["steps"]
    assert (step["compile_id"], step["change"]) == ("[1/1_1]", "size")
    assert step["guard"] == "tensor 'input_ids' size mismatch at index 1. expected 64, actual 96"
    assert step["failed_guards"][0]["compile_id"] == "[1/0_1]"


def test_the_whole_log_says_the_same(capsys):
    assert run_cli("summary", "--json", shared(LOG)) == 0
    [step] = _forward(json.loads(capsys.readouterr().out))["steps"]
    assert (step["compile_id"], step["guard"]) == (
        "[1/1_1]", "tensor 'input_ids' size mismatch at index 1. expected 64, actual 96")

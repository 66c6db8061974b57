"""The recompile steps read by compilation ("[2/1]", compilation_label): attempt 1 of [2/1] ("[2/1_1]") is Dynamo's
restart within that compilation, not another compile. The advice the recompiles analysis writes said the attempt ids
the steps no longer say: data_dependent's "but [2/1_1] specialized it again", python_features' length advice "([0/1_1],
[0/2_1] and [0/3_1]: 0 → 1 → 2 → 3)", amp_train_step_clip's resume frame "first compiled as [4/0_1]". The chain and
the JSON's ids keep the attempts (they lead to the attempt that compiled)."""

from __future__ import annotations

import json
import re

from ..conftest import run_cli, torch213

ATTEMPT = re.compile(r"\[\d+/\d+_\d+\]")


def _frames(name: str, capsys) -> list[dict]:
    assert run_cli("summary", "--json", torch213(name)) == 0
    return json.loads(capsys.readouterr().out)["recompiles"]["frames"]


def test_a_number_specialized_again_is_said_by_its_compilation(capsys):
    [frame] = [f for f in _frames("data_dependent.log.gz", capsys) if "[2/1_1]" in f["chain"]]
    advice = " ".join(frame["advice"])
    assert "but [2/1] specialized it again at data_dependent.py:33" in advice
    assert not ATTEMPT.search(advice)


def test_a_length_that_kept_changing_is_said_at_its_compilations(capsys):
    [frame] = [f for f in _frames("python_features.log.gz", capsys) if "[0/3_1]" in f["chain"]]
    assert frame["chain"] == ["[0/0_1]", "[0/1_1]", "[0/2_1]", "[0/3_1]"]
    advice = " ".join(frame["advice"])
    assert "([0/1], [0/2] and [0/3]: 0 → 1 → 2 → 3)" in advice
    assert not ATTEMPT.search(advice)


def test_a_frame_named_apart_is_named_by_its_first_compilation(capsys):
    [frame] = [f for f in _frames("amp_train_step_clip.log.gz", capsys) if f["named_apart"]]
    assert frame["chain"][0] == "[4/0_1]" and frame["named_apart"] == "[4/0]"
    assert frame["label"] == "train_step (after its graph break at line 45, first compiled as [4/0])"

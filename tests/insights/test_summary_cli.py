"""`compilescope summary PATH` and `compilescope summary --json PATH`: the CLI and the documented JSON schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from compilescope.analyses.insights import SCHEMA_VERSION

from ..conftest import REPO, run_cli, shared, torch213
from .helpers import LOGS

SCHEMA_DOC = REPO / "docs" / "summary-schema.md"


def summary_json(capsys, name: str) -> dict:
    assert run_cli("summary", "--json", torch213(f"{name}.log")) == 0
    return json.loads(capsys.readouterr().out)


def test_summary_json_top_level(capsys):
    doc = summary_json(capsys, "graph_breaks")
    assert doc["schema_version"] == SCHEMA_VERSION == 2
    assert list(doc) == ["schema_version", "source", "compiles", "environment", "findings", "errors", "recompiles", "graph_breaks",
                         "compile_time", "caches", "dynamic_shapes", "autotuning", "cudagraphs", "warnings", "unread", "unfinished",
                         "crashes", "runtime"]
    assert doc["unread"] == {"skipped_records": 0, "reasons": {}, "damaged_payloads": 0, "stopped_at_line": None,
                             "stop_reason": None}
    assert doc["runtime"] is None  # no --profile
    assert doc["graph_breaks"]["distinct"] == 3
    assert [b["location"]["line"] for b in doc["graph_breaks"]["breaks"]] == [18, 23, 28]


def test_summary_json_answers(capsys):
    rec = summary_json(capsys, "recompiles")["recompiles"]
    assert rec["frames_at_limit"] == 1
    assert [(f["name"], f["chain"], f["hit_limit"]) for f in rec["frames"]] == [
        ("h", ["[1/0]", "[1/1]", "[1/2]", "[1/3]", "[1/4]"], True),
        ("g", ["[0/0]", "[0/1]", "[0/2]", "[0/3]"], False)]
    assert [s["change"] for s in rec["frames"][1]["steps"]] == ["size", "dtype", "requires_grad"]
    errors = summary_json(capsys, "compile_error_lowering")["errors"]["errors"]
    assert [(e["stage"], e["exception"], e["inner_exception"]) for e in errors] == [
        ("inductor_lowering", "InductorError", "LoweringException")]
    assert summary_json(capsys, "cache_cold")["caches"]["overall"] == "cold"
    assert summary_json(capsys, "cache_warm")["caches"]["overall"] == "warm"


def _documented_keys() -> set[str]:
    """Every `key` named in a table row of docs/summary-schema.md."""
    return set(re.findall(r"^\|\s*`([\w.\[\]]+)`", SCHEMA_DOC.read_text(encoding="utf-8"), re.M))


def _paths(value, prefix=""):
    """Dotted key paths of a JSON document; list items are `[]`."""
    if isinstance(value, dict):
        for key, item in value.items():
            if prefix.endswith(("compile_time.compiles[].phases", "caches.counts", "environment.gpus", "ranks[].ran_on")):
                continue  # keys are data (phase names, cache names), documented as such
            # A user location has the same keys everywhere: documented once as `location.*`.
            path = f"location.{key}" if prefix.endswith("location") else f"{prefix}.{key}" if prefix else key
            yield path
            yield from _paths(item, path)
    elif isinstance(value, list):
        for item in value:
            yield from _paths(item, f"{prefix}[]")


@pytest.mark.parametrize("name", LOGS)
def test_every_key_is_documented(capsys, name):
    documented = _documented_keys()
    missing = sorted(set(_paths(summary_json(capsys, name))) - documented)
    assert missing == [], f"document these keys in {SCHEMA_DOC.name}: {missing}"


def test_every_autotuning_key_is_documented(capsys):
    """The CPU logs above autotune nothing and use no CUDA graphs: a real GPU run fills those keys."""
    assert run_cli("summary", "--json", shared("gpu-torch211/autotune_cudagraphs")) == 0
    paths = set(_paths(json.loads(capsys.readouterr().out)))
    assert {"autotuning.searches[].failed[].message", "autotuning.kernels[].during_compile",
            "cudagraphs.compiles[].recordings_ms"} <= paths
    missing = sorted(paths - _documented_keys())
    assert missing == [], f"document these keys in {SCHEMA_DOC.name}: {missing}"


def test_summary_terminal(capsys):
    assert run_cli("summary", torch213("recompiles.log")) == 0
    out = capsys.readouterr().out
    assert "h hit the recompile limit and runs uncompiled" in out
    assert all(len(line) <= 100 for line in out.splitlines())


def test_summary_of_a_directory_and_a_bad_path(capsys, tmp_path: Path):
    (tmp_path / "dedicated_log_torch_trace_x.log").write_bytes(torch213("graph_breaks.log").read_bytes())
    assert run_cli("summary", "--json", tmp_path) == 0
    assert json.loads(capsys.readouterr().out)["graph_breaks"]["distinct"] == 3
    assert run_cli("summary", tmp_path / "nope.log") != 0


def test_summary_in_commands_help(capsys):
    with pytest.raises(SystemExit):
        run_cli("--help")
    assert "summary" in capsys.readouterr().out

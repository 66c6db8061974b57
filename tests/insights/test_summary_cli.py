"""`compilescope summary PATH` and `compilescope summary --json PATH`: the CLI and the documented JSON schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from compilescope.analyses.insights import SCHEMA_VERSION
from compilescope.analyses.recompiles import LOCATION_KINDS

from ..conftest import REPO, cuda211, peer, run_cli, shared, torch213
from .helpers import LOGS

SCHEMA_DOC = REPO / "docs" / "summary-schema.md"


def summary_json(capsys, name: str) -> dict:
    assert run_cli("summary", "--json", torch213(f"{name}.log")) == 0
    return json.loads(capsys.readouterr().out)


def test_summary_json_top_level(capsys):
    doc = summary_json(capsys, "graph_breaks")
    assert doc["schema_version"] == SCHEMA_VERSION == 2
    assert list(doc) == ["schema_version", "source", "compiles", "export_calls", "environment", "findings", "errors", "recompiles", "graph_breaks",
                         "compile_time", "caches", "dynamic_shapes", "autotuning", "cudagraphs", "warnings", "unread", "unfinished",
                         "crashes", "empty_graphs", "activation_checkpointing", "repeated_blocks", "numpy", "aoti", "numerics", "freezing", "user_kernels", "custom_op_mutations", "runtime"]
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


def _location_keys() -> set[str]:
    """The keys docs/summary-schema.md types as a location ("location or null", "list of locations")."""
    return set(re.findall(r"^\|\s*`([\w.\[\]]+)`\s*\|\s*(?:location or null|list of locations)\s*\|",
                          SCHEMA_DOC.read_text(encoding="utf-8"), re.M))


LOCATION_KEYS = _location_keys()


def _paths(value, prefix=""):
    """Dotted key paths of a JSON document; list items are `[]`."""
    if isinstance(value, dict):
        located = prefix.endswith("location") or prefix.removesuffix("[]") in LOCATION_KEYS
        for key, item in value.items():
            if prefix.endswith(("compile_time.compiles[].phases", "caches.counts", "caches.partly_served",
                                "caches.reused_in_run", "caches.reused_other_process", "environment.gpus", "ranks[].ran_on")):
                continue  # keys are data (phase names, cache names, compile ids), documented as such
            # A user location has the same keys everywhere (a `location`, and what the schema types as one: a crash's
            # `frames[]`, a frame's `called_from[]`): documented once as `location.*`.
            path = f"location.{key}" if located else f"{prefix}.{key}" if prefix else key
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


def _called_from(doc: dict) -> set:
    return {(c["filename"].rsplit("/", 1)[-1], c["line"]) for f in doc["recompiles"]["frames"] for c in f["called_from"]}


def _guards(doc: dict) -> list:
    return [(g["tensor"], g["location_kind"], g["location"]["filename"].rsplit("/", 1)[-1], g["location"]["line"])
            for f in doc["recompiles"]["frames"] for s in f["steps"] for g in s["failed_guards"]]


# Logs that fill keys the nine above leave empty, and what each fills (from its program or raw log).
FILLING = {
    # transformers' frames (generic.py's `wrapper`, GPT2's `forward`, ...) recompile at step 4's new length: each was
    # called from script.py's line 13, `out = cmodel(input_ids=ids, labels=ids)` (run as gpt2_train.py).
    "gpt2_train": (lambda: shared("gpu-torch211/gpt2_train"), lambda doc: _called_from(doc) == {("gpt2_train.py", 13)}),
    # Rank 1's last batch is 20 (ddp_uneven_batch.py's loop): "tensor 'args[0]' size mismatch" in torch's `inner`,
    # which line 27, `loss = step(x).pow(2).mean()`, called with x.
    "ddp_rank_1": (lambda: cuda211("ddp_uneven_batch/dedicated_log_torch_trace_rank_1_pgu40ul3.log.gz"),
                   lambda doc: _guards(doc) == [("args[0]", "call", "ddp_uneven_batch.py", 27)]),
    # The second call of the custom op reads address 0 (native_crash.py:17, in fragile): faulthandler's stack.
    "native_crash": (lambda: torch213("native_crash.log.gz"),
                     lambda doc: [(c["user_frame"]["line"], c["user_frame"]["function"], len(c["frames"]) > 1)
                                  for c in doc["crashes"]["crashes"]] == [(17, "fragile", True)]),
    # [1/1] creates zf2 from L['___stack0'], the float `loss.item()` returned at item_break.py:19: a name Dynamo made,
    # in words.
    "item_break": (lambda: torch213("item_break.log.gz"),
                   lambda doc: [s["source"] for s in doc["dynamic_shapes"]["sizes"] if s["source_text"]] == ["L['___stack0']"]),
    # The program resets between runs; each run's fn (fn2 in the last) logged one fx_graph_cache lookup as [1/0]: a miss,
    # then (ours [3/0]) a hit on the key that miss wrote, then (ours [5/0], fn2) a miss on another key. No compile was
    # partly served; [3/0] reused what [1/0] compiled before the reset.
    "cache_hit_miss": (lambda: peer("cache_hit_miss.log"),
                       lambda doc: (doc["caches"]["partly_served"], doc["caches"]["reused_in_run"],
                                    doc["caches"]["reused_across_reset"]) == ({}, {"[3/0]": ["[1/0]"]}, ["[3/0]"])),
}


@pytest.mark.parametrize("name", FILLING)
def test_every_key_a_gpu_crash_or_cache_log_fills_is_documented(capsys, name):
    """The keys under a frame's `called_from`, a crash's frames and a partly served cache (locations and compile
    ids: documented once, as `location.*` and as data) went unchecked: the nine logs above leave them empty."""
    path, fills = FILLING[name]
    assert run_cli("summary", "--json", path()) == 0
    doc = json.loads(capsys.readouterr().out)
    assert fills(doc)
    missing = sorted(set(_paths(doc)) - _documented_keys())
    assert missing == [], f"document these keys in {SCHEMA_DOC.name}: {missing}"


def test_every_location_kind_of_a_failed_guard_is_documented():
    row = next(line for line in SCHEMA_DOC.read_text(encoding="utf-8").splitlines()
               if line.startswith("| `recompiles.frames[].steps[].failed_guards[].location_kind`"))
    assert set(re.findall(r'`"(\w+)"`', row)) == set(LOCATION_KINDS)


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

"""A recompile after torch._dynamo.reset() (reset_recompile.py): torch counts frames from 0 again, so g's recompile
reasons say "0/0:" and "0/1:", ids f's compiles had before the reset. The failed guard each names is g's own compile,
which the report numbers on ([1/0], [1/1]); each value below is read from the raw log."""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles.reasons import reasons_payload
from compilescope.ingest.reader import read_trace

from ..conftest import report, run_cli, torch213

LOG = "reset_recompile.log.gz"


def _text() -> str:
    return gzip.open(torch213(LOG), "rt").read()


def _metrics(text: str) -> list[tuple[str, str]]:
    """(compile_id, co_name) of each compilation_metrics envelope, in log order."""
    return re.findall(r'^V[^\n]*\] \{"compilation_metrics": \{"compile_id": "([^"]+)", "frame_key": [^,]+, '
                      r'"co_name": "?([^",]+)"?', text, re.M)


def _reasons(text: str) -> list[tuple[str, list[str]]]:
    """(compile id, the "N/M" prefix of each reason) of each recompile_reasons artifact, in log order."""
    found = re.findall(r'^V[^\n]*\] \{"artifact": \{"name": "recompile_reasons"[^\n]*"frame_id": (\d+), '
                       r'"frame_compile_id": (\d+),[^\n]*\n((?:\t[^\n]*\n)+)', text, re.M)
    return [(f"{frame}/{compile_}", [r.split(":", 1)[0] for r in reasons_payload(
        "".join(line[1:] for line in payload.splitlines(keepends=True)))]) for frame, compile_, payload in found]


def _expected() -> dict[str, list[str]]:
    """Each of our recompile ids -> the compile ids of its failed guards, in our numbering: after the reset, torch's
    frame 0 is g, numbered on past the highest frame the log reached before (f's, 0)."""
    text = _text()
    logged = _metrics(text)
    assert logged == [("0/0", "f"), ("0/1", "f"), ("0/0", "g"), ("0/1", "g"), ("0/2", "g")]
    assert len(set(re.findall(r"^V\d{4} [\d:.]+ +(\d+) ", text, re.M))) == 1  # one process: a reset, not two logs
    reasons = _reasons(text)
    # f's recompile, then g's two (the third lists both of g's earlier compiles, newest first)
    assert reasons == [("0/1", ["0/0"]), ("0/1", ["0/0"]), ("0/2", ["0/1", "0/0"])]
    before = max(int(cid.split("/")[0]) for cid, name in logged if name == "f")
    g = before + 1

    def ours(cid: str, epoch: int) -> str:
        frame, compile_ = cid.split("/")
        return f"[{int(frame) + epoch}/{compile_}]"

    return {ours(cid, 0 if i == 0 else g): [ours(p, 0 if i == 0 else g) for p in prefixes]
            for i, (cid, prefixes) in enumerate(reasons)}


def test_a_recompile_after_a_reset_names_the_failed_guard_of_its_own_compile():
    # "0/0: tensor 'x' size mismatch ... actual 6" is the guard of g's first compile: torch's [0/0] after the reset,
    # our [1/0]; f's [0/0] (before it) never saw a size 6.
    expected = _expected()
    assert expected == {"[0/1]": ["[0/0]"], "[1/1]": ["[1/0]"], "[1/2]": ["[1/1]", "[1/0]"]}
    with read_trace(str(torch213(LOG))) as trace:
        names = {str(cid): (c.metrics or {}).get("co_name") for cid, c in trace.compiles.items()}
        ins = insights(trace)
    steps = {s.compile_id: s for f in ins.recompiles.frames for s in f.steps}
    assert {cid: [g.compile_id for g in s.failed_guards] for cid, s in steps.items()} == expected
    assert {names[g.compile_id] for cid in ("[1/1]", "[1/2]") for g in steps[cid].failed_guards} == {"g"}
    # torch's own text is kept as it logged it
    assert steps["[1/1]"].failed_guards[0].text == "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6"


def test_what_the_failed_guard_of_g_leads_to_is_read_from_gs_compiles():
    # With the guard placed in g's compile, [1/1]'s symbol and first use are g's: the create_symbol torch logged in g's
    # second compile (logged 0/1, after the reset), not f's (s77 = 8 at line 12).
    text = _text()
    after_reset = text[text.index('"co_name": "g"'):]
    symbol = re.search(r'\{"create_symbol": \{"symbol": "(\w+)", "val": "6", [^\n]*"source": "L\[\'x\'\]\.size\(\)\[0\]", '
                       r'"user_stack": \[\{"line": (\d+), "name": "g", "filename": \d+, "loc": "([^"]+)"\}', after_reset)
    assert symbol is not None
    with read_trace(str(torch213(LOG))) as trace:
        ins = insights(trace)
    [step] = [s for f in ins.recompiles.frames for s in f.steps if s.compile_id == "[1/1]"]
    assert step.dynamic_symbol == symbol[1]
    [guard] = step.failed_guards
    assert guard.location is not None
    assert (guard.location.function, guard.location.line, guard.location.code) == ("g", int(symbol[2]), symbol[3])


def test_summary_json_and_pages_name_gs_compile(tmp_path, capsys):
    expected = _expected()
    capsys.readouterr()
    assert run_cli("summary", torch213(LOG)) == 0
    out = capsys.readouterr().out
    assert "failed guard of [1/0]: tensor 'x' size mismatch" in out and "failed guard of [1/1]: n == 1" in out
    # each recompile's first failed guard, and only f's recompile names [0/0]
    assert sorted(re.findall(r"failed guard of (\[\d+/\d+\])", out)) == sorted(g[0] for g in expected.values())
    assert run_cli("summary", "--json", torch213(LOG)) == 0
    doc = json.loads(capsys.readouterr().out)
    steps = {s["compile_id"]: [g["compile_id"] for g in s["failed_guards"]]
             for f in doc["recompiles"]["frames"] for s in f["steps"]}
    assert steps == expected
    report(torch213(LOG), tmp_path / "cs")
    index = (tmp_path / "cs" / "index.html").read_text()
    assert "(guard of [1/0])" in index and "(guard of [1/1])" in index
    for page, guard in (("-_1_1_0", "[1/0]"), ("-_1_2_0", "[1/1]")):
        text = (tmp_path / "cs" / page / "index.html").read_text()
        assert f"(guard of {guard})" in text and "(guard of [0/" not in text


def test_check_counts_the_recompiles_the_log_has(capsys):
    # A recompile is a compile after a failed guard: f's 0/1, g's 0/1 and 0/2 (3); g's 0/0 after the reset is a first
    # compile, not a recompile.
    recompiled = [cid for cid, _ in _metrics(_text()) if int(cid.split("/")[1]) > 0]
    assert len(recompiled) == 3
    capsys.readouterr()
    assert run_cli("check", "--json", torch213(LOG), "--max-recompiles", "0") == 1
    [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if r["rule"] == "max-recompiles"]
    assert rule["message"].startswith(f"max-recompiles: {len(recompiled)} recompiles, at most 0 allowed")
    program = (torch213(LOG).parent.parent / "programs" / "reset_recompile.py").read_text().splitlines()
    g, f = (next(i for i, line in enumerate(program, 1) if line.startswith(f"def {name}(")) for name in ("g", "f"))
    assert rule["details"] == [f"g (reset_recompile.py:{g}) recompiled 2 times", f"f (reset_recompile.py:{f}) recompiled once"]

"""Compiling per call (compile_per_call.py): torch.compile in the loop, a new instance and a new lambda per call, a
counter attribute incremented in forward, torch._dynamo.reset() in a loop. What compilescope says of each, checked
against the raw log and the program."""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles.advice import ADVICE
from compilescope.ingest.reader import read_trace

from ..conftest import peer, report, run_cli, torch213

PROGRAM = torch213("compile_per_call.log.gz").parent.parent / "programs" / "compile_per_call.py"


def _text(log: str = "compile_per_call.log.gz") -> str:
    return gzip.open(torch213(log), "rt").read()


def _insights(log: str = "compile_per_call.log.gz"):
    with read_trace(str(torch213(log))) as trace:
        names = {str(cid): (c.metrics or {}).get("co_name") for cid, c in trace.compiles.items()}
        logged = {str(cid): c.logged_frame_id for cid, c in trace.compiles.items() if c.logged_frame_id is not None}
        return insights(trace), names, logged


def _line(code: str) -> int:
    [line] = [i for i, text in enumerate(PROGRAM.read_text().splitlines(), 1) if code in text]
    return line


def _metrics(text: str) -> list[tuple[str, str]]:
    """(compile_id, co_name) of each compilation_metrics envelope, in log order."""
    return re.findall(r'^V[^\n]*\] \{"compilation_metrics": \{"compile_id": "([^"]+)", "frame_key": [^,]+, '
                      r'"co_name": "?([^",]+)"?', text, re.M)


def test_frames_after_torch_dynamo_reset_are_not_merged_with_the_frames_before_it():
    # torch counts frames from 0 again after each reset(): `poly`, compiled after three resets, is logged as [0/0]
    # three times, the id that Scaler.forward's first compile had before.
    logged = _metrics(_text())
    assert logged[0] == ("0/0", "forward")
    assert logged[-3:] == [("0/0", "poly")] * 3
    assert max(int(cid.split("/")[0]) for cid, _ in logged) == 2
    ins, names, renumbered = _insights()
    assert names["[0/0]"] == "forward"  # Scaler.forward's, not poly's
    assert [names[f"[{f}/0]"] for f in (3, 4, 5)] == ["poly"] * 3
    assert renumbered == {"[3/0]": 0, "[4/0]": 0, "[5/0]": 0}
    # Scaler.forward's recompile is its own: poly recompiled nothing (no guard of it failed).
    by_name = {f.name: f for f in ins.recompiles.frames}
    assert "poly" not in by_name
    [scaler] = [f for f in ins.recompiles.frames if f.first_line == _line("return self.lin(x).relu() * self.scale") - 1]
    assert scaler.chain == ["[0/0]", "[0/1]"]
    # the compile time of [0/0] is Scaler.forward's alone (poly's chromium events moved with their compiles)
    slowest = {c.compile_id: c for c in ins.compile_time.compiles}
    assert {slowest[k].name for k in ("[3/0]", "[4/0]", "[5/0]")} == {"poly"}


def test_a_function_compiled_afresh_after_each_reset_is_a_finding_with_its_cost():
    ins, _, _ = _insights()
    [afresh] = ins.recompiles.afresh
    assert (afresh.name, afresh.first_line) == ("poly", _line("def poly(x):"))
    assert afresh.compile_ids == ["[3/0]", "[4/0]", "[5/0]"] and afresh.logged_as == ["[0/0]"] * 3
    [finding] = [f for f in ins.findings if "compiled from scratch" in f.title]
    assert finding.severity == "warning"
    assert "poly" in finding.title and "3 times" in finding.title and "torch._dynamo.reset()" in finding.title
    assert "logged each as [0/0]" in finding.detail and "compiling it again took" in finding.detail
    # the fixed variant calls reset() nowhere: poly is compiled once
    fixed, _, renumbered = _insights("compile_per_call_fixed.log.gz")
    assert not fixed.recompiles.afresh and not renumbered


def test_a_counter_attribute_of_the_module_gets_its_own_advice():
    text = _text()
    bump = _line("self.step += 1")
    # torch's reasons name self.step's value, 0..7, and the line that changes it; [2/8] hits the limit (8).
    for n in range(8):
        assert re.search(rf'"2/{n}: self\.step == {n} +# self\.step \+= 1 +# [^"]*compile_per_call\.py:{bump} in forward',
                         text)
    assert "Dynamo recompile limit exceeded" in text and "(currently set to 8)" in text
    ins, _, _ = _insights()
    [counter] = [f for f in ins.recompiles.frames if f.hit_limit]
    assert counter.limit == 8 and len(counter.steps) == 8
    assert {s.dynamic_of for s in counter.steps} == {"self.step"} and not any(s.dynamic_symbol for s in counter.steps)
    assert ADVICE["constant"] not in counter.advice  # "let it be dynamic": torch never makes it so
    [advice] = [a for a in counter.advice if a.startswith("`self.step` changes")]
    assert "out of the compiled forward" in advice and "allow_unspec_int_on_nn_module" in advice


def test_a_float_attribute_made_dynamic_is_settled():
    # Scaler(0.5 + step) per request: [0/1] fails `self.scale == 0.5` and makes L['self'].scale a symbol.
    text = _text()
    assert re.search(r'"0/0: self\.scale == 0\.5 ', text)
    assert re.search(r'"create_symbol": \{"symbol": "zf\d+", "val": "1\.5"[^\n]*"source": "L\[\'self\'\]\.scale"', text)
    ins, _, _ = _insights()
    [scaler] = [f for f in ins.recompiles.frames if f.first_line == _line("return self.lin(x).relu() * self.scale") - 1]
    assert scaler.settled and scaler.made_dynamic == ["self.scale"]
    assert ADVICE["constant"] not in scaler.advice


def _recompiled_ids(text: str) -> list[str]:
    """The compile ids the log's metrics name with a frame compile after the first ("0/1"): each a guard failed for."""
    return [cid for cid, _ in _metrics(text) if int(cid.split("/")[1]) > 0]


def test_each_renumbered_compile_says_the_id_torch_logged(tmp_path, capsys):
    # torch's messages name poly's compiles "0/0" (the log's metrics do): each page and the JSON say that is the id
    # torch logged, and why ours differs.
    assert [cid for cid, name in _metrics(_text()) if name == "poly"] == ["0/0"] * 3
    report(torch213("compile_per_call.log.gz"), tmp_path / "cs")
    for frame in (3, 4, 5):
        page = (tmp_path / "cs" / f"-_{frame}_0_0" / "index.html").read_text()
        [note] = re.findall(r'<p id="logged-compile-id">([^<]*)</p>', page)
        assert note.startswith("torch logged this compile as [0/0]: torch._dynamo.reset() ran before it")
        assert "here, [0/0] is forward&#39;s compile, before any reset" in note
    assert 'id="logged-compile-id"' not in (tmp_path / "cs" / "-_0_0_0" / "index.html").read_text()
    capsys.readouterr()
    assert run_cli("summary", "--json", torch213("compile_per_call.log.gz")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recompiles"]["after_reset"] == [{"compile_id": f"[{f}/0]", "logged_as": "[0/0]"} for f in (3, 4, 5)]
    assert run_cli("summary", "--json", torch213("compile_per_call_fixed.log.gz")) == 0
    assert json.loads(capsys.readouterr().out)["recompiles"]["after_reset"] == []


def test_diff_and_check_count_the_recompiles_summary_counts(capsys):
    # A recompile is a compile after a failed guard: the log's 0/1, 1/1 and 2/1..2/8 (10). poly's compiles after each
    # reset are first compiles of new frames, not recompiles: summary, diff and check all say 10, not 12.
    recompiled = _recompiled_ids(_text())
    assert len(recompiled) == 10 and not _recompiled_ids(_text("compile_per_call_fixed.log.gz"))
    ins, _, _ = _insights()
    assert ins.recompiles.total == len(recompiled)
    log, fixed = torch213("compile_per_call.log.gz"), torch213("compile_per_call_fixed.log.gz")
    capsys.readouterr()
    run_cli("diff", "--json", log, fixed)
    doc = json.loads(capsys.readouterr().out)
    changes = [c for rank in doc["ranks"] for c in rank["changes"] if c["section"] == "recompiles" and c["frame"]]
    # a function A alone compiled recompiled, so the runs' recompiles are said whole too (no frame)
    [whole] = [c for rank in doc["ranks"] for c in rank["changes"] if c["section"] == "recompiles" and not c["frame"]]
    assert (whole["a"], whole["b"]) == (len(recompiled), 0)
    [poly] = [c for c in changes if c["frame"].endswith(" poly")]
    assert poly["title"].endswith(": 3 → 1 compiles (0 → 0 recompiles); A compiled it from scratch again 2 times, "
                                  "after torch._dynamo.reset()")
    assert (poly["detail"]["recompiles_a"], poly["detail"]["afresh_a"]) == (0, ["[4/0]", "[5/0]"])
    # A's frames: the recompiles of those both runs compiled, and of those A alone did (its lambda, another line)
    only_a = [c for rank in doc["ranks"] for c in rank["changes"] if c["section"] == "frames" and c["kind"] == "removed"]
    assert (sum(c["detail"]["recompiles_a"] for c in changes)
            + sum(c["detail"]["recompiles"] for c in only_a)) == len(recompiled)
    run_cli("check", "--json", log, "--max-recompiles", "0")
    [rule] = [r for r in json.loads(capsys.readouterr().out)["rules"] if r["rule"] == "max-recompiles"]
    assert rule["message"].startswith(f"max-recompiles: {len(recompiled)} recompiles, at most 0 allowed")


def test_the_recompile_limit_error_names_the_guard_that_kept_failing():
    # [2/8] failed at the limit after 8 recompiles, each for `self.step == n` at the line that bumps it: the Errors
    # section's next steps name that guard and give the Recompiles section's own advice for it, not the general steps.
    text, bump = _text(), _line("self.step += 1")
    assert re.search(r'"compile_id": "2/8", [^\n]*"fail_type": "Unsupported"', text)
    assert set(re.findall(r'"2/(\d): self\.step == (\d) ', text)) == {(str(n), str(n)) for n in range(8)}
    ins, _, _ = _insights()
    [err] = ins.errors.errors
    assert (err.compile_id, err.stage) == ("[2/8]", "recompile_limit")
    [counter] = [f for f in ins.recompiles.frames if f.hit_limit]
    first, *advice = err.next_steps
    assert first == (f"Each of its 8 recompiles failed a guard on `self.step`, the last `self.step == 7` ([2/7]'s), at "
                     f"compile_per_call.py:{bump} (self.step += 1).")
    assert advice == counter.advice  # the same words as the Recompiles section, none of their own
    assert any("allow_unspec_int_on_nn_module" in a for a in advice)
    assert not any(s.startswith("Find the guard that keeps failing") for s in err.next_steps)


def _first_compiles(text: str) -> list[tuple[str, bool]]:
    """(co_name, after a reset) of each first compile ([n/0]) the log's metrics name, in log order: torch gives out
    frame ids in increasing order, so one not above every frame id before it was counted from 0 again by a reset."""
    found, top = [], -1
    for line in text.splitlines():
        if not line.startswith("V") or '{"compilation_metrics":' not in line:
            continue
        name = re.search(r'"co_name": "([^"]+)"', line)
        frame, compiled = map(int, re.findall(r'"frame_id": (\d+), "frame_compile_id": (\d+)', line)[-1])
        if name and compiled == 0:
            found.append((name[1], frame <= top))
        top = max(top, frame)
    return found


def test_the_afresh_finding_counts_the_compiles_that_followed_a_reset():
    # The program calls reset() before each of its three calls of poly, the first too: torch logged poly's first
    # compile as frame 0 after frames 0..2, so all three followed a reset.
    assert [after for name, after in _first_compiles(_text()) if name == "poly"] == [True] * 3
    ins, _, _ = _insights()
    [finding] = [f for f in ins.findings if f.title.startswith("poly (")]
    assert finding.title == ("poly (compile_per_call.py:44) compiled from scratch 3 times, each after "
                             "torch._dynamo.reset()")
    assert ins.recompiles.afresh[0].after_reset == ["[3/0]", "[4/0]", "[5/0]"]
    # cache_hit_miss.log compiled _flex_attention_hop_wrapper and fn before its first reset: only the later ones
    # followed one.
    text = peer("cache_hit_miss.log").read_text()
    first = _first_compiles(text)
    assert [after for name, after in first if name == "_flex_attention_hop_wrapper"] == [False, True, True]
    assert [after for name, after in first if name == "fn"] == [False, True]
    with read_trace(str(peer("cache_hit_miss.log"))) as trace:
        found = insights(trace)
    titles = {f.title.split(" (")[0]: f.title for f in found.findings if "torch._dynamo.reset()" in f.title}
    assert titles["_flex_attention_hop_wrapper"].endswith("compiled from scratch 3 times, the last 2 after "
                                                         "torch._dynamo.reset()")
    assert titles["fn"].endswith("compiled 2 times, the last after torch._dynamo.reset()")


def test_diff_says_a_compile_after_a_reset_was_served_from_the_cache(tmp_path, capsys):
    # cache_hit_miss.log runs its program three times with torch._dynamo.reset() between: the second run's fn hit the
    # FX graph cache key the first run's missed and wrote. Diffed against its first run alone (the log cut where the
    # second run's first compile starts), fn's extra compile is said to be served from the cache, not from scratch.
    log = peer("cache_hit_miss.log")
    lines = log.read_text().splitlines(keepends=True)
    lookups = [(i, name) for i, line in enumerate(lines) for name in ("fx_graph_cache_hit", "fx_graph_cache_miss")
               if line.startswith("V") and f'"name": "{name}"' in line]
    keys = [re.search(r'"key": "(\w+)"', "".join(lines[i + 1:i + 4]))[1] for i, _ in lookups]
    assert [n for _, n in lookups][:2] == ["fx_graph_cache_miss", "fx_graph_cache_hit"] and keys[0] == keys[1]
    first_fn = next(i for i, line in enumerate(lines) if line.startswith("V") and '"co_name": "fn"' in line)
    cut = next(i for i, line in enumerate(lines) if i > first_fn and line.startswith("V")
               and '"frame_id": 0, "frame_compile_id": 0' in line)
    assert lookups[0][0] < cut < lookups[1][0]  # the miss in the first run, the hit in the second
    first_run = tmp_path / "first_run.log"
    first_run.write_text("".join(lines[:cut]))
    capsys.readouterr()
    run_cli("diff", "--json", str(log), str(first_run))
    doc = json.loads(capsys.readouterr().out)
    changes = {c["frame"].rsplit(" ", 1)[-1]: c for rank in doc["ranks"] for c in rank["changes"]
               if c["section"] == "recompiles"}
    fn, flex = changes["fn"], changes["_flex_attention_hop_wrapper"]
    # frames 0 and 1 before the reset: the second run's are numbered on, fn's logged frame 1 as [3/0]
    assert (fn["detail"]["afresh_a"], fn["detail"]["afresh_cached_a"]) == (["[3/0]"], ["[3/0]"])
    assert fn["title"].endswith(": 2 → 1 compiles (0 → 0 recompiles); A compiled it again once after "
                                "torch._dynamo.reset(), served from the cache (reset() throws compiled functions "
                                "away, not what the caches hold)")
    # _flex_attention_hop_wrapper looked nothing up in the FX graph cache (its frame, 0, has no lookup): from scratch
    assert all('"frame_id": 1,' in lines[i] for i, _ in lookups)
    assert flex["detail"]["afresh_cached_a"] == [] and flex["title"].endswith(
        "A compiled it from scratch again 2 times, after torch._dynamo.reset()")


def test_the_first_page_of_a_reused_id_points_to_the_compiles_torch_logged_as_it_too(tmp_path):
    # torch logged forward's first compile and poly's three as "0/0": someone with "[0/0]" from torch's messages lands
    # on forward's page, which names poly's ([3/0], [4/0], [5/0] in the report).
    logged = _metrics(_text())
    assert [name for cid, name in logged if cid == "0/0"] == ["forward", "poly", "poly", "poly"]
    report(torch213("compile_per_call.log.gz"), tmp_path / "cs")
    page = (tmp_path / "cs" / "-_0_0_0" / "index.html").read_text()
    [note] = re.findall(r'<p id="also-logged-as">([^<]*)</p>', page)
    assert note.startswith("torch logged poly&#39;s [3/0], [4/0] and [5/0] as [0/0] too: after torch._dynamo.reset()")
    assert "naming [0/0] after a reset mean one of those, not this compile" in note
    for other in ("-_0_1_0", "-_1_0_0", "-_3_0_0"):
        assert 'id="also-logged-as"' not in (tmp_path / "cs" / other / "index.html").read_text()

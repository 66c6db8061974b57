"""A mixed-precision training step compiled whole, on real torch 2.13 logs (tests/data/torch213/README.md,
`amp_train_step*.log.gz`, from programs/amp_train_step.py).

What the user of autocast + GradScaler("cpu") meets when the whole step is `@torch.compile`d: each of
`scaler.scale(loss).backward()`, `scaler.step(opt)`, `scaler.update()` and `opt.zero_grad()` breaks the graph, and the
optimizer's own step, run by `scaler.step(opt)`, is compiled as frames of its own; with `clip`, the `loss.item()`
printed inside the step is a Python float passed past a graph break, whose recompile fails.
"""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, bench_module, run_cli, torch213
from ..tracelog import raw_records

LOG = torch213("amp_train_step.log.gz")
CLIP_LOG = torch213("amp_train_step_clip.log.gz")
FIXED_LOG = torch213("amp_train_step_fixed.log.gz")
PROGRAM = REPO / "tests" / "data" / "torch213" / "programs" / "amp_train_step.py"


def _insights(log=LOG):
    with read_trace(str(log)) as trace:
        return insights(trace)


def _line(code: str) -> int:
    """The program's line whose code is `code`, read from the program itself."""
    return next(i for i, line in enumerate(PROGRAM.read_text().splitlines(), 1) if line.strip() == code)


def _innermost_program_lines(log) -> dict[str, tuple[int, str]]:
    """Compile id -> (the innermost line of the program in its dynamo_start stack, the compiled function), for the
    compiles of functions outside the program (torch's optimizer), read from the raw log."""
    files: dict[int, str] = {}
    found = {}
    for record, _ in raw_records(log):
        if "str" in record:
            files[record["str"][1]] = record["str"][0]
        elif "dynamo_start" in record:
            stack = record["dynamo_start"]["stack"]
            if files[stack[-1]["filename"]].endswith("/amp_train_step.py"):
                continue
            ours = [fr["line"] for fr in stack if files[fr["filename"]].endswith("/amp_train_step.py")]
            found[f"[{record['frame_id']}/{record['frame_compile_id']}]"] = (ours[-1], stack[-1]["name"])
    return found


def test_the_optimizer_frames_are_placed_under_scaler_step_not_the_first_break():
    # After breaks at line 41 (scaler.scale(loss).backward()) each resume function calls the next, so the stacks of
    # the optimizer's frames pass through line 41 as well as through line 46, scaler.step(opt), the call that ran them.
    step_line, backward_line = _line("scaler.step(opt)"), _line("scaler.scale(loss).backward()")
    raw = _innermost_program_lines(LOG)
    # (a resume function, torch_dynamo_resume_in_wrapper_at_530, is what comes after a break, not below the call)
    through_step = {cid: name for cid, (line, name) in raw.items()
                    if line == step_line and not name.startswith("torch_dynamo_resume_in_")}
    assert {"wrapper", "step"} <= set(through_step.values())  # Optimizer's profile wrapper, SGD.step
    breaks = _insights().graph_breaks.breaks
    [at_step] = [b for b in breaks if b.location is not None and b.location.line == step_line
                 and b.location.filename.endswith("amp_train_step.py")]
    placed = {cid for c in at_step.compiled_callees for cid in c.compile_ids}
    assert {cid.strip("[]") for cid in through_step} <= {cid.strip("[]") for cid in placed}
    assert {c.function for c in at_step.compiled_callees} >= {"wrapper", "step"}
    at_backward = [b for b in breaks if b.location is not None and b.location.line == backward_line]
    assert at_backward and all(not b.compiled_callees for b in at_backward)


def _raw_metrics(log) -> dict[str, dict]:
    """compile id "4/1" -> its compilation_metrics, and the compile ids whose dynamo_graph_break_reason says Dynamo
    skipped the function (under "skipping"), read from the raw log."""
    found: dict[str, dict] = {"skipping": {}}
    for record, body in raw_records(log):
        if "compilation_metrics" in record:
            found[record["compilation_metrics"]["compile_id"]] = record["compilation_metrics"]
        elif record.get("artifact", {}).get("name") == "dynamo_graph_break_reason":
            if "Skipping the function and falling back to eager" in body:
                found["skipping"][f"{record['frame_id']}/{record['frame_compile_id']}"] = body
    return found


def test_a_break_that_skips_its_own_frame_is_no_fullgraph_error():
    # [4/1] recompiled the rest of train_step after the .item() break (line 45) with the printed float made dynamic,
    # and the f-string's format of that symbol (BUILD_STRING) could not be traced: torch logs "Failed to handle graph
    # break gracefully. Skipping the function and falling back to eager" without naming the frame, and the compile
    # fails (fail_type Unsupported) while the program goes on, printing each step's loss.
    from compilescope.analyses.compile_errors import FULLGRAPH_STEP

    raw = _raw_metrics(CLIP_LOG)
    print_line = _line('print(f"loss {loss.item():.4f}")')
    failed = raw["4/1"]
    assert failed["fail_type"] == "Unsupported" and failed["fail_reason"].startswith("BUILD_STRING type error")
    assert failed["fail_user_frame_lineno"] == print_line and failed["co_firstlineno"] == print_line
    assert "frame skipped:" not in raw["skipping"]["4/1"]
    ins = _insights(CLIP_LOG)
    [error] = [e for e in ins.errors.errors if e.compile_id == "[4/1]"]
    assert error.skipped_frame is not None
    assert (error.skipped_frame.line, error.skipped_frame.function) == (print_line, failed["co_name"])
    assert FULLGRAPH_STEP not in error.next_steps  # no fullgraph=True in the program
    assert any(f"the rest of train_step from amp_train_step.py:{print_line}" in s for s in error.next_steps)
    [brk] = [b for b in ins.graph_breaks.breaks if "[4/1]" in b.compile_ids or "4/1" in b.compile_ids]
    assert brk.skipped_text is not None and f"amp_train_step.py:{print_line}" in brk.skipped_text


def test_each_copy_of_a_concatenated_log_counts_only_what_its_own_calls_ran_before_the_failure(tmp_path):
    # bench/make_big_log.py appends copies of the clip log, each copy's frame ids past the last's: a failed [4/1]
    # counted, as what calls before ran of the rest of train_step, every resume function of train_step at the print's
    # line or after in the file, the copies' logged after it included (500 pieces in 100 copies). What ran before
    # each copy's failure is its own: the failed frame's earlier compiles and the resume functions of train_step at the
    # print's line or after that succeeded in the copy, read from the raw log, shifted by the copy's frame offset.
    from compilescope.analyses.compile_errors import compile_errors

    raw = _raw_metrics(CLIP_LOG)
    print_line = _line('print(f"loss {loss.item():.4f}")')
    failed = raw.pop("4/1")
    del raw["skipping"]
    pieces = [cid for cid, m in raw.items() if not m.get("fail_type") and m["co_filename"] == failed["co_filename"]
              and (cid.split("/")[0] == "4" or (
                  (m2 := re.fullmatch(r"torch_dynamo_resume_in_train_step_at_(\d+)", m["co_name"] or ""))
                  and int(m2[1]) >= print_line))]
    assert pieces == ["4/0", "5/0", "9/0", "10/0", "11/0"]
    offset = 1 + max(int(cid.split("/")[0]) for cid in raw)  # each copy's frames follow the last's (make_big_log)
    unit, big = tmp_path / "clip.log", tmp_path / "big.log"
    unit.write_bytes(gzip.decompress(CLIP_LOG.read_bytes()))
    bench_module("make_big_log").build(str(big), [str(unit)], times=4)

    def shifted(cid: str, k: int) -> str:
        frame, rest = cid.split("/")
        return f"[{int(frame) + k * offset}/{rest}]"

    with read_trace(str(big)) as trace:
        errors = compile_errors(trace).errors
    assert [(e.compile_id, e.skipped_before.pieces if e.skipped_before else None) for e in errors] == [
        (shifted("4/1", k), [shifted(c, k) for c in pieces]) for k in range(4)]


def test_a_printed_item_whose_dynamic_recompile_failed_is_not_called_taken_care_of():
    from compilescope.analyses.recompiles.advice import ITEM_OUTSIDE

    raw = _raw_metrics(CLIP_LOG)
    assert raw["4/1"]["recompile_reason"].startswith("4/0: ___stack2 == ")
    assert "4/2" not in raw  # the third step's new loss compiled nothing: the frame is given up
    [frame] = _insights(CLIP_LOG).recompiles.frames
    [step] = frame.steps
    assert step.failed and step.dynamic_symbol and step.dynamic_of == "the value of `loss.item()`"
    [advice] = frame.advice
    assert "none while it keeps changing" not in advice and "dynamic=True" not in advice
    assert "that compile, [4/1], failed" in advice and "BUILD_STRING type error" in advice
    assert advice.endswith(ITEM_OUTSIDE)


def _raw_breaks(log) -> list[dict]:
    """Each dynamo_graph_break_reason of the raw log: its compile id, the file and line torch placed it at ("Graph
    break in user code at ..."), its reason (the line after the context) and its payload."""
    found = []
    for record, body in raw_records(log):
        if record.get("artifact", {}).get("name") != "dynamo_graph_break_reason":
            continue
        payload = body.split("\n")
        where = payload[0].removeprefix("Graph break in user code at ")
        reason = next(p for p in payload[2:] if p.strip())
        found.append({"compile_id": f"{record['frame_id']}/{record['frame_compile_id']}",
                      "file": where.rpartition(":")[0], "line": int(where.rpartition(":")[2]),
                      "reason": reason.strip(), "payload": body})
    return found


def test_check_does_not_count_the_break_torch_makes_in_the_optimizer(capsys):
    # Of the six breaks, torch placed five in the program and one in torch/optim/optimizer.py: _use_grad's own
    # torch._dynamo.graph_break(), which no change to the program removes while the optimizer's step is compiled.
    raw = _raw_breaks(LOG)
    in_program = [b for b in raw if b["file"].endswith("/amp_train_step.py")]
    [by_torch] = [b for b in raw if b not in in_program]
    assert len(raw) == 6 and len({(b["file"], b["line"], b["reason"]) for b in in_program}) == 5
    assert by_torch["file"].endswith("/torch/optim/optimizer.py") and by_torch["compile_id"] == "3/0"
    assert by_torch["reason"] == "Call to `torch._dynamo.graph_break()`"
    assert run_cli("check", LOG, "--max-graph-breaks", "5") == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "max-graph-breaks passed: 5 distinct graph breaks (1 more by torch itself (torch._dynamo.graph_break() in its "
        "own code, on purpose), not counted)")
    assert run_cli("check", LOG, "--max-graph-breaks", "4", "--json") == 1
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert rule["message"].startswith("max-graph-breaks: 5 distinct graph breaks (1 more by torch itself")
    assert len(rule["details"]) == 5 and not any("optimizer.py" in d for d in rule["details"])
    # Against the docs' fix (no break at all), the new breaks are the program's five, not torch's own.
    assert run_cli("check", LOG, "--baseline", FIXED_LOG, "--json", "--time-margin", "100") == 1
    rules = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert len(rules["baseline-graph-breaks"]["details"]) == 5
    assert not any("optimizer.py" in d for d in rules["baseline-graph-breaks"]["details"])


def test_each_gradscaler_break_says_dynamo_never_traces_torch_amp(capsys):
    # torch's text for each GradScaler call: "skip reason: file matches MOD_SKIPLIST (…/torch/amp)", with the hint to
    # force tracing by dont_skip_tracing; Optimizer.zero_grad is skipped for another directory (torch/_compile).
    for log, calls in ((LOG, ("scaler.scale(loss).backward()", "scaler.step(opt)", "scaler.update()")),
                       (CLIP_LOG, ("scaler.scale(loss).backward()", "scaler.unscale_(opt)", "scaler.step(opt)",
                                   "scaler.update()"))):
        raw = {}
        for b in _raw_breaks(log):
            m = re.search(r"qualname: ([\w.]+), .*skip reason: file matches MOD_SKIPLIST \(([^)]+)\)", b["payload"])
            if m:
                hint = next(h.strip().removeprefix("Hint: ") for h in b["payload"].splitlines() if "dont_skip_tracing" in h)
                raw[b["line"]] = (m[1], m[2].endswith("/torch/amp"), hint)
        amp_lines = {line for line, (_, amp, _) in raw.items() if amp}
        assert amp_lines == {_line(c) for c in calls}
        [(other, _, kept)] = [v for v in raw.values() if not v[1]]
        assert other == "Optimizer.zero_grad"
        breaks = {b.location.line: b for b in _insights(log).graph_breaks.breaks
                  if b.reason == "Attempted to inline function marked as skipped"}
        first = min(amp_lines)  # the first GradScaler call of the program, scaler.scale(loss).backward()
        for line in amp_lines:
            qualname, _, hint = raw[line]
            brk = breaks[line]
            assert brk.amp_function == qualname and qualname.startswith("GradScaler.")
            assert brk.hints_set_aside == [hint] and hint not in brk.advice_hints and hint not in brk.user_hints
            assert brk.amp_note is not None and "Dynamo never traces torch.amp" in brk.amp_note
            # What to do is said once, at the first; the others say what they ran and point there.
            said_there = "torch.compile(model)" in brk.amp_note and "out of train_step" in brk.amp_note
            assert said_there == (line == first)
            assert brk.amp_said_at == (None if line == first else f"amp_train_step.py:{first}")
        zero_grad = breaks[_line("opt.zero_grad()")]
        assert zero_grad.amp_function is None and zero_grad.amp_note is None and kept in zero_grad.user_hints
    # The summary: the whole note at the first GradScaler break, a pointer to it at the other two; torch's
    # dont_skip_tracing hint only for zero_grad's.
    assert run_cli("summary", LOG) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("note: Dynamo never traces torch.amp (GradScaler)") == 3
    assert out.count("Keep the scaler's calls out of train_step") == 1
    assert out.count(f"as the GradScaler call at amp_train_step.py:{_line('scaler.scale(loss).backward()')} did") == 2
    assert re.findall(r"hint: Apply `@torch._dynamo.dont_skip_tracing` to the function `(\S+)`", out) == [
        "Optimizer.zero_grad"]
    # The findings: each of the program's lines that calls GradScaler says so (41, 46, 47; 48 is summed up).
    said = {f.title: f.detail for f in _insights().findings if f.section == "graph_breaks"}
    for call, qualname in (("scaler.scale(loss).backward()", "GradScaler.scale"), ("scaler.step(opt)", "GradScaler.step"),
                           ("scaler.update()", "GradScaler.update")):
        [detail] = [d for t, d in said.items() if f"amp_train_step.py:{_line(call)} " in t]
        assert f"Dynamo never traces torch.amp ({qualname}): keep the scaler's calls out of the compiled" in detail


def test_the_source_page_says_the_break_at_scaler_step_is_torchs_own(tmp_path, capsys):
    # torch placed [3/0]'s break in its own optimizer.py:79 (_use_grad's torch._dynamo.graph_break()); the innermost
    # frame of the program in its traceback is line 46, scaler.step(opt), where the source page lists it.
    from compilescope.analyses.sources.analysis import analyze_sources

    [raw] = [b for b in _raw_breaks(LOG) if b["compile_id"] == "3/0"]
    traceback = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', raw["payload"].split("User code traceback:")[1])
    ours = [int(line) for path, line, _ in traceback if path.endswith("/amp_train_step.py")]
    [torch_function] = [fn for path, line, fn in traceback if (path, int(line)) == (raw["file"], raw["line"])]
    assert ours[-1] == _line("scaler.step(opt)") and torch_function == "_use_grad" and raw["line"] == 79
    with read_trace(str(LOG)) as trace:
        sources = analyze_sources(trace)
    [site] = [s for s in sources.graph_breaks if s.reason == raw["reason"]]
    assert site.location.line == ours[-1] and site.torch_location is not None
    assert (site.torch_location.short, site.torch_location.function) == ("optimizer.py:79", "_use_grad")
    assert site.torch_text == ("PyTorch's own break, in optimizer.py:79 (_use_grad), which it makes there on purpose: "
                               "nothing in your code to change")
    # The program's own breaks are placed where torch placed them: nothing to add.
    assert all(s.torch_location is None for s in sources.graph_breaks if s is not site)
    assert run_cli(str(LOG), "-o", str(tmp_path / "out"), "--no-browser") == 0
    capsys.readouterr()
    [page] = (tmp_path / "out" / "sources").glob("amp_train_step.py_*.html")
    text = page.read_text()
    said = "(PyTorch&#39;s own break, in optimizer.py:79 (_use_grad), which it makes there on purpose"
    assert f"line {ours[-1]}</a>: Call to `torch._dynamo.graph_break()` <span class=\"muted\">{said}" in text
    assert f"<strong>graph break</strong>: Call to `torch._dynamo.graph_break()` <span class=\"muted\">{said}" in text


def test_the_graph_breaks_say_how_few_of_the_compiled_frames_hold_ops(capsys):
    # Each compile's compilation_metrics: nine frames compiled once each, none failed; graph_op_count 6 for train_step [0/0] and 4 for
    # SGD's step [4/0], 0 (an empty graph) or null (no graph at all, though code was installed) for the other seven.
    raw = {cid: m for cid, m in _raw_metrics(LOG).items() if cid != "skipping"}
    assert sorted(raw) == [f"{frame}/0" for frame in range(9)] and not any(m["fail_type"] for m in raw.values())
    with_ops = {cid: (m["co_name"], m["graph_op_count"]) for cid, m in raw.items() if m["graph_op_count"]}
    assert with_ops == {"0/0": ("train_step", 6), "4/0": ("step", 4)}
    empty = [cid for cid, m in raw.items() if m["graph_op_count"] == 0]
    no_graph = [cid for cid, m in raw.items() if m["graph_op_count"] is None and m["has_guarded_code"]]
    assert (len(empty), len(no_graph)) == (5, 2)
    split = _insights().graph_breaks.split
    assert split is not None and split.compiles == 9 and (split.empty, split.no_graph) == (5, 2)
    assert [(cid.strip("[]"), function, ops) for cid, function, ops in split.with_ops] == [
        (cid, name, ops) for cid, (name, ops) in with_ops.items()]
    assert split.text == ("9 compiles; only 2 hold ops: [0/0] train_step: 6 ops, [4/0] step: 4 ops; 5 made an empty "
                          "graph and 2 no graph")
    # The docs' fix compiles one frame, whose graph holds ops: nothing to say (and no break).
    assert _insights(FIXED_LOG).graph_breaks.split is None
    assert run_cli("summary", LOG) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"Graph breaks (6 distinct, 6 in total) {split.text}." in out


def test_the_split_counts_every_compile_where_one_installed_no_code(tmp_path):
    # amp_train_step's [8/0] as a log might hold it with has_guarded_code false (no real log does: of the 11 with a
    # split, every null graph_op_count has guarded code): graph_op_count null, no graph either way. It was counted in
    # the 9 compiles and in no part of them (2 with ops, 5 empty, 1 no graph).
    text = gzip.decompress(LOG.read_bytes()).decode()
    lines = text.splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if '"compilation_metrics"' in line and '"frame_id": 8,' in line]
    assert '"graph_op_count": null' in lines[at] and '"has_guarded_code": true' in lines[at]
    lines[at] = lines[at].replace('"has_guarded_code": true', '"has_guarded_code": false')
    log = tmp_path / "amp_train_step.log"
    log.write_text("".join(lines))
    split = _insights(log).graph_breaks.split
    assert split is not None and split.compiles == 9 and (len(split.with_ops), split.empty, split.no_graph) == (2, 5, 2)

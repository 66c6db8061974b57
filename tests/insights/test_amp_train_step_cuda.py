"""The mixed-precision training step compiled whole, on the GPU logs (tests/data/cuda_torch211/README.md,
`amp_train_step_cuda*.log.gz`, from programs/amp_train_step_cuda.py, torch 2.11 on an H200): what the CPU journey
(test_amp_train_step.py) found, where torch 2.11 writes it otherwise.
"""

from __future__ import annotations

import html
import json
import re

from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import REPO, cuda211, report, run_cli
from ..tracelog import raw_records

LOG = cuda211("amp_train_step_cuda_whole.log.gz")
CLIP_LOG = cuda211("amp_train_step_cuda_clip.log.gz")
FIXED_LOG = cuda211("amp_train_step_cuda_fixed.log.gz")
PROGRAM = REPO / "tests" / "data" / "cuda_torch211" / "programs" / "amp_train_step_cuda.py"


def _line(code: str) -> int:
    """The line of train_step whose code is `code`: the first in the program (fixed_step repeats the scaler's calls)."""
    return next(i for i, line in enumerate(PROGRAM.read_text().splitlines(), 1) if line.strip() == code)


def _insights(log=LOG):
    with read_trace(str(log)) as trace:
        return insights(trace)


def _raw_breaks(log) -> list[dict]:
    """Each dynamo_graph_break_reason of the raw log: its compile id, the line torch placed it at ("Graph break in user
    code at ..."), its reason and its payload."""
    found = []
    for record, body in raw_records(log):
        if record.get("artifact", {}).get("name") == "dynamo_graph_break_reason":
            where = body.split("\n")[0].removeprefix("Graph break in user code at ")
            found.append({"compile_id": f"{record['frame_id']}/{record['frame_compile_id']}",
                          "file": where.rpartition(":")[0], "line": int(where.rpartition(":")[2]),
                          "reason": next(p for p in body.split("\n")[2:] if p.strip()).strip(), "payload": body})
    return found


def _skipped_calls(log) -> dict[int, tuple[str, str, str]]:
    """The program's line -> (qualname, file, skip reason) of each break at a function Dynamo's skip list holds."""
    found = {}
    for b in _raw_breaks(log):
        m = re.search(r"qualname: ([\w.]+), name: \w+, filename: `([^`]+)`, skip reason: (.*)", b["payload"])
        if m and b["file"].endswith("/amp_train_step_cuda.py"):
            found[b["line"]] = (m[1], m[2], m[3].strip())
    return found


def test_torch_211s_skip_reason_names_no_directory_and_gradscaler_is_still_told():
    # torch 2.11 writes "skip reason: skipped according trace_rules.lookup MOD_SKIPLIST", not 2.13's "file matches
    # MOD_SKIPLIST (/…/torch/amp)": the directory is read from the function's file.
    for log, calls in ((LOG, ("scaler.scale(loss).backward()", "scaler.step(opt)", "scaler.update()")),
                       (CLIP_LOG, ("scaler.scale(loss).backward()", "scaler.unscale_(opt)", "scaler.step(opt)",
                                   "scaler.update()"))):
        raw = _skipped_calls(log)
        amp = {line: qualname for line, (qualname, file, _) in raw.items() if "/torch/amp/" in file}
        assert set(amp) == {_line(c) for c in calls}
        assert all(reason == "skipped according trace_rules.lookup MOD_SKIPLIST" for _, _, reason in raw.values())
        [(other, other_file, _)] = [v for line, v in raw.items() if line not in amp]  # zero_grad: torch/_compile.py
        assert other == "Optimizer.zero_grad" and other_file.endswith("/torch/_compile.py")
        breaks = {b.location.line: b for b in _insights(log).graph_breaks.breaks
                  if b.reason == "Attempted to inline function marked as skipped"}
        first = min(amp)
        for line, qualname in amp.items():
            brk = breaks[line]
            assert brk.amp_function == qualname and brk.amp_note is not None
            assert [h for h in brk.hints if "dont_skip_tracing" in h] == brk.hints_set_aside != []
            assert ("out of train_step" in brk.amp_note) == (line == first)
            assert brk.amp_said_at == (None if line == first else f"amp_train_step_cuda.py:{first}")
        assert breaks[_line("opt.zero_grad()")].amp_function is None


def test_the_summary_says_what_to_do_about_gradscaler_once(capsys):
    first = _line("scaler.scale(loss).backward()")
    assert run_cli("summary", CLIP_LOG) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("note: Dynamo never traces torch.amp (GradScaler)") == 4  # scale, unscale_, step, update
    assert out.count("Keep the scaler's calls out of train_step") == 1
    assert out.count(f"as the GradScaler call at amp_train_step_cuda.py:{first} did") == 3
    assert re.findall(r"hint: Apply `@torch._dynamo.dont_skip_tracing` to the function `(\S+)`", out) == [
        "Optimizer.zero_grad"]


def _facts(log):
    from compilescope.analyses.analyze import analyze
    from compilescope.analyses.run_facts.analysis import run_facts

    with read_trace(str(log)) as trace:
        return run_facts(analyze(trace))


def test_diff_to_the_fix_marks_torchs_own_break_gone_as_not_the_programs(capsys):
    # The whole step's six breaks: five in the program, one torch placed in its optimizer.py (_use_grad's own
    # torch._dynamo.graph_break()); the fixed run, which compiles only the model, has none.
    from compilescope.analyses.diff.analysis import BY_TORCH_GONE, diff_runs

    raw = _raw_breaks(LOG)
    [by_torch] = [b for b in raw if not b["file"].endswith("/amp_train_step_cuda.py")]
    assert len(raw) == 6 and by_torch["file"].endswith("/torch/optim/optimizer.py")
    assert by_torch["reason"] == "Call to `torch._dynamo.graph_break()`" and not _raw_breaks(FIXED_LOG)
    changes = [c for c in diff_runs(_facts(LOG), _facts(FIXED_LOG)).changes if c.section == "graph_breaks"]
    assert [c.kind for c in changes] == ["removed"] * 6
    # The program's five first, each a change for the better; torch's own last, marked, and neither.
    assert [c.a["line"] for c in changes] == sorted(b["line"] for b in raw if b is not by_torch) + [by_torch["line"]]
    assert [c.direction for c in changes] == ["better"] * 5 + [None]
    assert changes[-1].title.endswith(f"at optimizer.py:{by_torch['line']}{BY_TORCH_GONE}")
    assert not any(BY_TORCH_GONE in c.title for c in changes[:-1])
    assert run_cli("diff", FIXED_LOG, LOG) in (0, 1)
    out = " ".join(capsys.readouterr().out.split())
    assert f"new graph break: Call to `torch._dynamo.graph_break()` at optimizer.py:{by_torch['line']} (PyTorch's own " \
           "break, made on purpose: nothing in your code to change)" in out


def test_the_break_at_backward_says_the_backward_was_compiled_and_names_torchs_setting_right(capsys):
    # [1/0] (the resume function after scaler.scale's break) breaks at `.backward()`, torch's hint "Set
    # torch._dynamo.trace_autograd_ops=True": the setting is torch._dynamo.config's (torch/_dynamo/variables/tensor.py
    # reads config.trace_autograd_ops; an attribute of torch._dynamo is not read), and the backward that call ran is
    # the one AOTAutograd made for [0/0] (its aot_backward_graph, and its bwd_compilation_metrics when it first ran).
    [raw] = [b for b in _raw_breaks(LOG) if b["reason"] == "Unsupported Tensor.backward() call"]
    assert raw["compile_id"] == "1/0" and raw["line"] == _line("scaler.scale(loss).backward()")
    assert "Hint: Set torch._dynamo.trace_autograd_ops=True" in raw["payload"]
    backward = {(r["frame_id"], r["frame_compile_id"]) for r, _ in raw_records(LOG)
                if r.get("artifact", {}).get("name") == "aot_backward_graph" or "bwd_compilation_metrics" in r}
    assert backward == {(0, 0)}
    [brk] = [b for b in _insights(LOG).graph_breaks.breaks if b.reason == "Unsupported Tensor.backward() call"]
    assert brk.backward_compiled == ["[0/0]"] and brk.backward_by_compiled_autograd == []
    assert brk.note is not None and "it ran the backward AOTAutograd made for [0/0]" in brk.note
    assert "torch._dynamo.config.trace_autograd_ops = True" in brk.note
    assert run_cli("summary", LOG) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "hint: Set torch._dynamo.trace_autograd_ops=True" not in out  # the note stands in its place
    assert "note: .backward() ran eagerly, as Dynamo does not trace it; it ran the backward AOTAutograd made for " \
           "[0/0]" in out



def _raw_metrics(log) -> dict[str, dict]:
    """Each compile's compilation_metrics in the raw log, by "frame/compile" (a restarted compile's last attempt)."""
    return {f"{r['frame_id']}/{r['frame_compile_id']}": r["compilation_metrics"] for r, _ in raw_records(log)
            if "compilation_metrics" in r}


def test_the_prints_failed_recompile_says_which_calls_ran_which_lines_eagerly_and_what_they_lost(tmp_path, capsys):
    # [5/1] recompiled the rest of train_step after the .item() break (torch_dynamo_resume_in_train_step_at_45) for
    # the printed loss ("5/0: ___stack2 == 1.0571…", step 1's) and failed: torch then runs that code eagerly on every
    # call (no [5/2]), and steps 2 and 3 printed their losses all the same. Step 1 ran it compiled, as [5/0] and the
    # resume functions after the later breaks (at 45, 46, 47, 48), whose graphs held no op: so nothing compiled was
    # lost, and the failure is a warning, not an error.

    print_line = _line('print(f"loss {loss.item():.4f}")')
    raw = _raw_metrics(CLIP_LOG)
    failed = raw["5/1"]
    assert failed["fail_type"] == "Unsupported" and failed["fail_reason"].startswith("BUILD_STRING type error")
    assert failed["recompile_reason"].startswith("5/0: ___stack2 == ") and "5/2" not in raw
    assert failed["co_name"] == f"torch_dynamo_resume_in_train_step_at_{print_line}"
    printed = (CLIP_LOG.parent / "amp_train_step_cuda_clip.output.txt").read_text().splitlines()
    assert len([p for p in printed if p.startswith("loss ")]) == 3
    # What calls before ran of those lines: the frame's own [5/0], and each resume function of train_step at the
    # print's line or after it, in its frame's order.
    pieces = {cid: m.get("graph_op_count") or 0 for cid, m in raw.items()
              if not m.get("fail_type") and m.get("co_filename") == failed["co_filename"]
              and (m2 := re.fullmatch(r"torch_dynamo_resume_in_train_step_at_(\d+)", m.get("co_name") or ""))
              and int(m2[1]) >= print_line}
    assert "5/0" in pieces and sum(pieces.values()) == 0
    ran = ", ".join(f"[{c}]" for c in list(pieces)[:-1]) + f" and [{list(pieces)[-1]}]"
    assert ran == "[5/0], [6/0], [10/0], [11/0] and [12/0]"

    ins = _insights(CLIP_LOG)
    [err] = [e for e in ins.errors.errors if e.compile_id == "[5/1]"]
    assert err.skipped_before is not None and err.skipped_before.compiles == ["[5/0]"]
    said = (f"from this recompile's call on, Dynamo ran the rest of train_step from amp_train_step_cuda.py:{print_line} "
            "eagerly, losing no compiled op")
    [finding] = [f for f in ins.findings if f.section == "errors"]
    assert (finding.severity, finding.title) == ("warning", f"[5/1]: {said}")
    assert finding.detail.startswith(f"calls before ran {ran} compiled, which held no op; a graph break Dynamo could "
                                     f"not resume from at amp_train_step_cuda.py:{print_line}: BUILD_STRING type error")
    assert err.skipped_text == f"{said} (calls before ran {ran} compiled, which held no op): a graph break Dynamo " \
                               "could not resume from"
    [brk] = [b for b in ins.graph_breaks.breaks if b.compile_ids == ["[5/1]"]]
    assert brk.skipped_text == err.skipped_text
    [step, _] = err.next_steps
    assert "nothing of it was compiled" not in step and "nothing compiled was lost" in step
    # --json, check and the report say it alike
    assert run_cli("summary", "--json", CLIP_LOG) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"severity": "warning", "section": "errors", "title": finding.title, "detail": finding.detail} in doc["findings"]
    assert run_cli("check", "--no-failures", CLIP_LOG) == 1  # a compile failed all the same
    out = capsys.readouterr().out
    assert f"[5/1]: {err.skipped_text} at amp_train_step_cuda.py:{print_line}: BUILD_STRING type error" in out
    report(CLIP_LOG, tmp_path / "r")
    page = html.unescape((tmp_path / "r" / "index.html").read_text())
    assert f"{finding.title}</a>" in page.split('class="finding sev-warning"', 1)[1].split("</li>", 1)[0]


def test_the_gradscaler_note_names_the_scaler_calls_the_program_makes():
    # The clip variant calls scaler.unscale_(opt) before clipping: the note names it among the calls to move out, in
    # the program's order, with the clipping that must follow it; the whole variant's calls are three.
    for log, calls in ((LOG, ("scaler.scale(loss).backward()", "scaler.step(opt)", "scaler.update()")),
                       (CLIP_LOG, ("scaler.scale(loss).backward()", "scaler.unscale_(opt)", "scaler.step(opt)",
                                   "scaler.update()"))):
        amp_lines = sorted(line for line, (_, file, _) in _skipped_calls(log).items() if "/torch/amp/" in file)
        program = PROGRAM.read_text().splitlines()
        assert [program[n - 1].strip() for n in amp_lines] == list(calls)
        [first] = [b for b in _insights(log).graph_breaks.breaks if b.amp_note and b.amp_said_at is None]
        assert first.amp_calls == list(calls)
        named = ", ".join(calls[:-1]) + f" and {calls[-1]}"
        assert f"call {named} in the code that calls it" in first.amp_note
        assert ("(the clipping after unscale_)" in first.amp_note) == (log == CLIP_LOG)


def test_the_backward_note_is_shown_as_advice_and_torchs_own_break_muted(tmp_path):
    # The note at .backward() answers what ran compiled and names the setting: read as the text it is, not muted as
    # the note at optimizer.py:80 (torch's own graph_break(), nothing in the user's code to change).

    breaks = _insights(LOG).graph_breaks.breaks
    [backward] = [b for b in breaks if b.reason == "Unsupported Tensor.backward() call"]
    [by_torch] = [b for b in breaks if b.by_torch]
    assert (backward.note_kind, by_torch.note_kind) == ("advice", "nothing_to_change")
    report(LOG, tmp_path / "r")
    page = html.unescape((tmp_path / "r" / "index.html").read_text())
    assert f'<p class="break-note">{backward.note}</p>' in page
    assert f'<p class="by-torch">{by_torch.note}</p>' in page
    assert "p.break-note" in page and "p.by-torch { margin: 4px 0; color: var(--muted); }" in page

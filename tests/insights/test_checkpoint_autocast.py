"""A training step with activation checkpointing and autocast (tests/data/torch213 programs/checkpoint_autocast.py):
that the report says torch.compile captured the user's checkpoint calls, what the backward recomputes, and what
compiling the backward cost. Expected values are read from the raw log and the program, not from our output."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from compilescope.analyses.analyze import analyze
from compilescope.analyses.activation_checkpoint import activation_checkpointing
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.compile_time import compile_times
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, report, run_cli, torch213
from ..tracelog import raw_records

LOG = "checkpoint_autocast.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "checkpoint_autocast.py"
_OP_NODE = re.compile(r"^\s+(\w+)(?:\s*:\s*\"[^\"]*\")?\s*=\s*torch\.ops\.")


def _raw(log: str = LOG) -> list[tuple[dict, str]]:
    """The log's envelopes with their payloads, read without compilescope."""
    return raw_records(torch213(log))


def _payload(kind: str, log: str = LOG) -> str:
    (text,) = [p for e, p in _raw(log) if kind in e]
    return text


def _program_line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _recomputed_in_backward() -> list[str]:
    """The backward graph's op nodes that the joint graph computed under a checkpointed region's tag (`# ac_graph_id:`
    comment): forward ops of the checkpointed blocks that the partitioner put into the backward to run again."""
    tagged, under = set(), False
    for line in _payload("aot_joint_graph").splitlines():
        if line.strip().startswith("#"):
            under = "ac_graph_id" in line
        elif (m := _OP_NODE.match(line)) and under:
            tagged.add(m[1])
    return [m[1] for line in _payload("aot_backward_graph").splitlines() if (m := _OP_NODE.match(line)) and m[1] in tagged]


def test_the_checkpoint_calls_are_the_programs_loop_line():
    (found,) = activation_checkpointing(read_trace(torch213(LOG))).compiles
    graph = _payload("dynamo_output_graph")
    (call,) = found.calls
    assert found.compile_id == "[0/0]"
    # Model.forward's loop calls checkpoint once per block; Dynamo unrolls it: one higher-order op per block
    assert (call.line, call.count) == (_program_line("x = checkpoint(block, x"), 2)
    assert graph.count("torch.ops.higher_order.tag_activation_checkpoint(") == 2
    assert call.code == "x = checkpoint(block, x, use_reentrant=REENTRANT)"
    assert call.short == f"checkpoint_autocast.py:{call.line}"


def test_the_backward_recomputes_the_blocks_ops_by_their_lines():
    (found,) = activation_checkpointing(read_trace(torch213(LOG))).compiles
    assert found.has_backward
    assert found.n_recomputed == len(_recomputed_in_backward()) == 42
    # Block.forward's three lines with ops, in line order; nothing of Model.forward's head is checkpointed
    assert [r.line for r in found.recomputed] == [_program_line("h = self.up(self.norm(x))"),
                                                  _program_line("h = torch.nn.functional.gelu(h)"),
                                                  _program_line("return x + self.down(h)")]
    assert found.regions == 2  # the two blocks: ac_graph_id 3 and 4 in the backward graph
    assert sorted(set(re.findall(r"# ac_graph_id: (\d+) ", _payload("aot_backward_graph")))) == ["3", "4"]


def test_the_backward_compile_time_is_that_of_its_events():
    events = [json.loads(p) for e, p in _raw() if "chromium_event" in e]
    begin, end = ([ev["ts"] for ev in events if ev["name"] == "entire_backward_compile" and ev["ph"] == ph]
                  for ph in ("B", "E"))
    (timed,) = compile_times(read_trace(torch213(LOG))).compiles
    assert timed.backward_s is not None
    assert abs(timed.backward_s - (end[0] - begin[0]) / 1e6) < 1e-3
    assert timed.backward_s < timed.total_s


def test_a_log_without_checkpointing_lists_none():
    assert activation_checkpointing(read_trace(torch213("upgrade_train.log.gz"))).compiles == []


def test_summary_json_and_compile_page_say_it(tmp_path, capsys):
    assert run_cli("summary", "--json", torch213(LOG)) == 0
    doc = json.loads(capsys.readouterr().out)
    (one,) = doc["activation_checkpointing"]
    call = _program_line("x = checkpoint(block, x")
    assert one["recomputed_ops"] == 42 and one["checkpoint_calls"][0]["line"] == call
    assert doc["compile_time"]["compiles"][0]["backward_s"] is not None
    assert run_cli("summary", torch213(LOG)) == 0
    text = capsys.readouterr().out
    assert "Activation checkpointing" in text and f"2 at checkpoint_autocast.py:{call}" in text
    report(torch213(LOG), tmp_path / "r")
    page = (tmp_path / "r" / "-_0_0_0" / "index.html").read_text()
    row = re.search(r'<td id="checkpointing">(.*?)</td>', page, re.S)
    assert row is not None
    assert f"2 checkpoint calls captured at checkpoint_autocast.py:{call}" in row[1]
    assert "the backward recomputes 42 ops of 2 checkpointed regions" in row[1]
    assert 'id="backward-time"' in page


def test_use_reentrant_true_is_captured_the_same():
    """torch 2.13's Dynamo captures use_reentrant=True checkpointing as the same higher-order op: no graph break."""
    log = "checkpoint_autocast_reentrant.log.gz"
    assert not [e for e, _ in _raw(log) if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason"]
    assert _payload("dynamo_output_graph", log).count("torch.ops.higher_order.tag_activation_checkpoint(") == 2
    (found,) = activation_checkpointing(read_trace(torch213("checkpoint_autocast_reentrant.log.gz"))).compiles
    assert [(c.line, c.count) for c in found.calls] == [(_program_line("x = checkpoint(block, x"), 2)]
    assert found.n_recomputed == 42


def test_the_source_page_marks_the_checkpoint_call_and_the_recomputed_lines(tmp_path):
    report(torch213(LOG), tmp_path / "r")
    (source,) = [f for f in json.loads((tmp_path / "r" / "sources.json").read_text())["files"]
                 if f["path"].endswith("checkpoint_autocast.py")]
    notes = {int(n): line.get("checkpoint") for n, line in source["lines"].items() if line.get("checkpoint")}
    call = _program_line("x = checkpoint(block, x")
    assert notes.pop(call) == [{"compile_id": "[0/0]", "calls": 2}]
    # Block.forward's lines, whose recomputed ops add up to those the backward graph runs again
    assert sorted(notes) == [_program_line("h = self.up(self.norm(x))"), _program_line("h = torch.nn.functional.gelu(h)"),
                             _program_line("return x + self.down(h)")]
    assert sum(n["recomputed_ops"] for (n,) in notes.values()) == len(_recomputed_in_backward())
    page = (tmp_path / "r" / source["page"]).read_text()
    assert "checkpoint ×2" in page and "recomputed in backward: 24 ops" in page


def test_a_break_inside_the_checkpointed_blocks_loop_says_the_whole_forward_ran_eagerly(tmp_path):
    """CKPT_VARIANT=print: a print in Block.forward, which Model.forward's loop checkpoints. torch logs a graph break
    it could not resume from ("graph break in loop") and skips Model.forward: no exception, no fullgraph, and
    nothing of the model compiled. The report said "failed" and told the user to drop fullgraph=True."""
    log = "checkpoint_autocast_print.log.gz"
    (metrics,) = [e["compilation_metrics"] for e, _ in _raw(log) if "compilation_metrics" in e]
    model_forward = _program_line("if UNROLLED:") - 1  # Model.forward's def line
    assert "graph break in loop" in metrics["fail_reason"]
    assert f"frame skipped: forward ({metrics['co_filename']} line {model_forward})" in metrics["fail_reason"]
    (err,) = insights(read_trace(torch213(log))).errors.errors
    assert err.skipped_frame is not None and err.in_loop
    assert (err.skipped_frame.function, err.skipped_frame.line) == ("forward", model_forward)
    assert err.location is not None and err.location.line == _program_line('print("block activations"')
    assert not any("fullgraph" in step for step in err.next_steps)
    assert "ran all of it eagerly" in err.next_steps[0] and f"checkpoint_autocast.py:{model_forward}" in err.next_steps[0]
    (finding,) = [f for f in insights(read_trace(torch213(log))).findings if f.section == "errors"]
    assert finding.title == f"[0/0]: Dynamo skipped forward (checkpoint_autocast.py:{model_forward}) and ran it eagerly"
    # nothing was captured, so there is no checkpointing to report
    assert activation_checkpointing(read_trace(torch213(log))).compiles == []
    report(torch213(log), tmp_path / "r")
    page = (tmp_path / "r" / "-_0_0_0" / "index.html").read_text()
    assert "Dynamo skipped forward" in page and "fullgraph" not in page


PRINT = "checkpoint_autocast_print.log.gz"


def _facts(log: str):
    with read_trace(str(torch213(log))) as trace:
        return run_facts(analyze(trace))


def _skipped_forward() -> tuple[int, int]:
    """(Model.forward's def line, the print's line), as the print log names them: the frame torch skipped ("frame
    skipped: forward (<file> line N)") and the line its graph break is in ("Graph break in user code at <file>:M")."""
    (text,) = [p for e, p in _raw(PRINT) if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason"]
    skipped = re.search(r"frame skipped: forward \(\S+ line (\d+)\)", text)
    at = re.search(r"^Graph break in user code at \S+:(\d+)$", text, re.M)
    assert skipped is not None and at is not None and "graph break in loop" in text
    return int(skipped[1]), int(at[1])


def test_diff_says_the_checkpoint_calls_and_recomputed_ops_the_print_lost():
    """The print variant captures nothing: no Dynamo graph, no backward graph, so none of the 2 checkpoint calls and
    none of the 42 recomputed ops of the plain run; the reentrant twin captures the same as the plain run."""
    assert not [e for e, _ in _raw(PRINT) if "dynamo_output_graph" in e or "aot_backward_graph" in e]
    calls = _payload("dynamo_output_graph").count("torch.ops.higher_order.tag_activation_checkpoint(")
    recomputed = len(_recomputed_in_backward())
    model_forward, _ = _skipped_forward()
    line = _program_line("x = checkpoint(block, x")
    changes = [c for c in diff_runs(_facts(LOG), _facts(PRINT)).changes if c.section == "checkpointing"]
    assert [(c.kind, c.a, c.b) for c in changes] == [("removed", calls, 0), ("removed", recomputed, 0)]
    frame = f"forward (checkpoint_autocast.py:{model_forward})"
    assert changes[0].title == f"{frame}: checkpoint calls captured: {calls} at checkpoint_autocast.py:{line} → 0"
    assert changes[1].title == f"{frame}: ops the backward recomputes: {recomputed} → none"
    assert changes[0].detail == {"calls_a": {f"checkpoint_autocast.py:{line}": calls}, "calls_b": {}}
    assert not [c for c in diff_runs(_facts(LOG), _facts("checkpoint_autocast_reentrant.log.gz")).changes
                if c.section == "checkpointing"]


def test_the_graph_break_check_and_diff_say_the_skipped_forward_as_the_errors_finding_does(tmp_path, capsys):
    """One fact, one wording: Dynamo skipped all of Model.forward, which the graph-breaks section called "ran eagerly:
    <the print's line>" and check and diff "Unsupported: ...", as if only the print ran eagerly."""
    model_forward, at = _skipped_forward()
    found = insights(read_trace(torch213(PRINT)))
    (finding,) = [f for f in found.findings if f.section == "errors"]
    said = f"Dynamo skipped forward (checkpoint_autocast.py:{model_forward}) and ran it eagerly"
    assert finding.title == f"[0/0]: {said}"
    (brk,) = found.graph_breaks.breaks
    assert brk.skipped_frame is not None and brk.skipped_frame.line == model_forward and brk.in_loop
    assert brk.skipped_text == f"{said}: a graph break inside one of its loops"
    assert run_cli("summary", torch213(PRINT)) == 0
    breaks = capsys.readouterr().out.split("Graph breaks (", 1)[1]
    assert said in breaks and f"ran eagerly: checkpoint_autocast.py:{at}" not in breaks
    # check and diff name the failed compile with the finding's own words
    whole = f"{finding.title}: {finding.detail}"
    assert whole == f"[0/0]: {brk.skipped_text} at checkpoint_autocast.py:{at}: Failed to trace builtin operator"
    assert run_cli("check", torch213(PRINT)) == 1
    assert f"none allowed: {whole}" in capsys.readouterr().out
    (failure,) = [c for c in diff_runs(_facts(LOG), _facts(PRINT)).changes if c.section == "failures"]
    assert failure.title == f"new failure: {whole}"
    report(torch213(PRINT), tmp_path / "r")
    page = (tmp_path / "r" / "index.html").read_text()
    assert brk.skipped_text in page.split('id="insights-graph_breaks"', 1)[1].split("</table>", 1)[0]


def test_a_break_inside_a_checkpointed_block_without_a_loop_says_each_checkpoint_call_ran_uncompiled(tmp_path, capsys):
    """CKPT_VARIANT=print_unrolled: the same print, Model.forward checkpointing its two blocks without a loop. torch
    names the higher-order op under the break's reason, breaks the graph at each checkpoint call and resumes after it
    (torch_dynamo_resume_in_forward_at_<line>); the call runs eagerly and Block.forward is never compiled (checkpoint is
    torch._disable_dynamo). The report said only "ran eagerly: <the print's line>"."""
    log = "checkpoint_autocast_print_unrolled.log.gz"
    texts = [p for e, p in _raw(log) if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason"]
    assert len(texts) == 2 and all("Higher Order Operator: torch.utils.checkpoint.checkpoint" in t for t in texts)
    names = [e["compilation_metrics"]["co_name"] for e, _ in _raw(log) if "compilation_metrics" in e]
    first, second = _program_line("checkpoint(self.blocks[0]"), _program_line("checkpoint(self.blocks[1]")
    assert names == ["forward", f"torch_dynamo_resume_in_forward_at_{first}", f"torch_dynamo_resume_in_forward_at_{second}"]
    (brk,) = insights(read_trace(torch213(log))).graph_breaks.breaks
    assert brk.location is not None and brk.location.line == _program_line('print("block activations"')
    assert brk.higher_order_op == "torch.utils.checkpoint.checkpoint"
    assert [(c.line, c.function) for c in brk.op_calls] == [(first, "forward"), (second, "forward")]
    said = (f"ran uncompiled: each torch.utils.checkpoint.checkpoint call at checkpoint_autocast.py:{first}, "
            f"checkpoint_autocast.py:{second}, all of it")
    assert brk.uncompiled_text is not None and brk.uncompiled_text.startswith(said)
    assert run_cli("summary", torch213(log)) == 0
    assert " ".join(capsys.readouterr().out.split("Graph breaks (", 1)[1].split()).count(said) == 1
    assert run_cli("summary", "--json", torch213(log)) == 0
    (as_json,) = json.loads(capsys.readouterr().out)["graph_breaks"]["breaks"]
    assert as_json["higher_order_op"] == brk.higher_order_op and [c["line"] for c in as_json["op_calls"]] == [first, second]
    report(torch213(log), tmp_path / "r")
    assert said in (tmp_path / "r" / "index.html").read_text()
    # and the two checkpointed calls captured in the plain run are gone in diff's words too
    (calls,) = [c for c in diff_runs(_facts(LOG), _facts(log)).changes
                if c.section == "checkpointing" and "checkpoint calls" in c.title]
    assert (calls.a, calls.b) == (2, 0)


def test_fix_first_tells_the_skipped_forward_once_with_the_breaks_line(capsys):
    """The print variant's one graph break is the failure that made Dynamo skip Model.forward ([0/0]'s only compile):
    Fix first said it twice, a WARN "graph break at …:35" under the ERROR "Dynamo skipped forward … and ran it
    eagerly". Now once, as the ERROR, with the break's line in it; the Graph breaks section keeps the break."""
    model_forward, at = _skipped_forward()
    (metrics,) = [e["compilation_metrics"] for e, _ in _raw(PRINT) if "compilation_metrics" in e]
    assert metrics["compile_id"] == "0/0" and metrics["fail_type"]  # the break's compile is the failed one
    found = insights(read_trace(torch213(PRINT))).findings
    told = [f for f in found if f"checkpoint_autocast.py:{at}" in f"{f.title} {f.detail}"]
    assert [(f.severity, f.section) for f in told] == [("error", "errors")]
    assert f"forward (checkpoint_autocast.py:{model_forward})" in told[0].title
    assert not [f for f in found if f.section == "graph_breaks"]
    assert run_cli("summary", torch213(PRINT)) == 0
    fix_first, rest = capsys.readouterr().out.split("Errors (", 1)
    assert " ".join(fix_first.split()).count(f"checkpoint_autocast.py:{at}") == 1 and "graph break at" not in fix_first
    assert f"checkpoint_autocast.py:{at} in forward" in rest.split("Graph breaks (", 1)[1]
    # the unrolled variant's break was resumed after (no frame skipped, nothing failed): it stays a graph-break finding
    unrolled = "checkpoint_autocast_print_unrolled.log.gz"
    assert not [e for e, _ in _raw(unrolled) if e.get("compilation_metrics", {}).get("fail_type")]
    (warn,) = [f for f in insights(read_trace(torch213(unrolled))).findings if f.section == "graph_breaks"]
    assert warn.title.startswith(f"graph break at checkpoint_autocast.py:{at}")


def _moved_here(log: str, tmp_path: Path) -> tuple[Path, Path]:
    """The log with the program's recorded path moved to a copy under tmp_path, so that its source page reads the
    program's text from disk wherever the tests run (the function's lines come from it)."""
    text = gzip.decompress(torch213(log).read_bytes()).decode()
    (recorded,) = {e["compilation_metrics"]["co_filename"] for e, _ in _raw(log) if "compilation_metrics" in e}
    here = tmp_path / "src" / "checkpoint_autocast.py"
    here.parent.mkdir(exist_ok=True)
    here.write_text(PROGRAM.read_text())
    moved = tmp_path / log.removesuffix(".gz")
    moved.write_text(text.replace(recorded, str(here)))
    return moved, here


def _model_forward_lines() -> list[int]:
    """Model.forward's lines, its def line on, as Python reads the program (blank lines apart)."""
    import ast

    (model,) = [n for n in ast.parse(PROGRAM.read_text()).body if isinstance(n, ast.ClassDef) and n.name == "Model"]
    (forward,) = [n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"]
    assert forward.end_lineno is not None
    text = PROGRAM.read_text().splitlines()
    return [n for n in range(forward.lineno, forward.end_lineno + 1) if text[n - 1].strip()]


def _ran_eagerly(log: str, tmp_path: Path) -> tuple[dict[int, list[dict]], str]:
    moved, here = _moved_here(log, tmp_path)
    report(moved, tmp_path / "r")
    (source,) = [f for f in json.loads((tmp_path / "r" / "sources.json").read_text())["files"] if f["path"] == str(here)]
    assert source["origin"] == "disk"
    marked = {int(n): line["ran_eagerly"] for n, line in source["lines"].items() if line.get("ran_eagerly")}
    return marked, (tmp_path / "r" / source["page"]).read_text()


def test_the_source_page_marks_the_whole_skipped_forward_as_ran_eagerly(tmp_path):
    """The print variant: torch skipped Model.forward ("frame skipped: forward (… line 46)"), so every line of it ran
    eagerly, not only the print's line (in Block.forward, which it calls) that the page marked."""
    model_forward, at = _skipped_forward()
    marked, page = _ran_eagerly(PRINT, tmp_path)
    lines = _model_forward_lines()
    heads = [n for n, src in enumerate(PROGRAM.read_text().splitlines(), 1) if "return self.head(x)" in src]
    assert lines[0] == model_forward and lines[-1] == heads[-1]  # (its loop's return is the last line)
    assert sorted(marked) == lines and at not in marked
    said = f"Dynamo skipped forward (checkpoint_autocast.py:{model_forward}) and ran it eagerly"
    assert all(m == [{"kind": "skipped_frame", "function": "forward", "compile_ids": ["[0/0]"],
                      "text": f"{said}: a graph break inside one of its loops"}] for m in marked.values())
    call = _program_line("x = checkpoint(block, x")
    row = page.split(f'id="L{call}"', 1)[1].split("</div>", 1)[0]
    assert "eager: forward skipped" in row and said in row


def test_the_source_page_marks_each_uncompiled_checkpoint_call_as_ran_eagerly(tmp_path):
    """The unrolled variant: the print is inside what each checkpoint call runs, so torch broke the graph at both
    calls (lines 48 and 49, where it resumed forward) and ran each call eagerly; the page marked only the print."""
    log = "checkpoint_autocast_print_unrolled.log.gz"
    names = [e["compilation_metrics"]["co_name"] for e, _ in _raw(log) if "compilation_metrics" in e]
    calls = [int(n.rsplit("_at_", 1)[1]) for n in names if n.startswith("torch_dynamo_resume_in_forward_at_")]
    assert calls == [_program_line("checkpoint(self.blocks[0]"), _program_line("checkpoint(self.blocks[1]")]
    marked, page = _ran_eagerly(log, tmp_path)
    assert sorted(marked) == calls
    assert all([(m["kind"], m["op"]) for m in notes] == [("higher_order_op", "torch.utils.checkpoint.checkpoint")]
               for notes in marked.values())
    for n in calls:
        row = page.split(f'id="L{n}"', 1)[1].split("</div>", 1)[0]
        assert 'class="src-line s-eager"' in page.split(f'id="L{n}"', 1)[0].rsplit("<div", 1)[1]
        assert "eager: uncompiled checkpoint call" in row and "ran uncompiled: each torch.utils.checkpoint.checkpoint" in row

"""Custom ops called through the packet (tests/data/torch213 programs/custom_op_packet_overload.py):
`torch.ops.mylib.scale(x, 2.0, out=buf)` is resolved by torch, from its arguments, to the overload scale.out, whose
undeclared write is told under that overload's name, not the default's (which writes nothing). Dynamo's graph names
only the packet; AOTAutograd's graph names the overload under the call's `# File:` line. A line whose two packet calls
torch resolved to two overloads, and a call AOTAutograd left out, are said not checked, never credited to either. Expected values are read from the raw
log and the program, not from our output."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from compilescope.analyses.analyze import analyze
from compilescope.analyses.op_mutations import OVERLOAD_NOT_SHOWN
from compilescope.analyses.op_mutations.graph_calls import found_calls
from compilescope.cli import main
from compilescope.ingest.reader import read_trace

from ..analysis_files import op_mutations_here
from ..conftest import line_holding, report, torch213, torch213_moved
from ..tracelog import raw_records

LOG = "custom_op_packet_overload.log.gz"
DATA = Path(__file__).parents[1] / "data" / "torch213"
PROGRAM = DATA / "programs" / "custom_op_packet_overload.py"
OUT_SCHEMA = '"scale.out(Tensor x, float factor, *, Tensor out) -> Tensor"'
INTO = "doubled = torch.ops.mylib.scale(x, 2.0, out=buf)"  # resolved to scale.out
TRIPLED = "tripled = torch.ops.mylib.scale(x, 3.0)"  # resolved to the default
BOTH = "return buf * 1 + torch.ops.mylib.scale(x, 3.0) + torch.ops.mylib.scale(x, 2.0, out=buf)"
UNUSED = "    torch.ops.mylib.scale(x, 2.0, out=buf)"  # its result unused: left out


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _graphs(kind: str) -> dict[int, str]:
    """frame id -> the payload of its `kind` graph, read without compilescope."""
    return {e["frame_id"]: p for e, p in raw_records(torch213(LOG)) if kind in e}


def _under(graph: str, line: int) -> str:
    """The nodes of a graph dump under the `# File:` comment of the program's line."""
    blocks = re.split(r"\n\s*# File: ", graph)
    return "\n".join(b for b in blocks if b.startswith(f"{_path_in_log()}:{line} "))


def _path_in_log() -> str:
    (path,) = set(re.findall(r"# File: (\S+custom_op_packet_overload\.py):", _graphs("dynamo_output_graph")[0]))
    return path


def test_dynamo_names_the_packet_and_aotautograd_the_overload_torch_resolved():
    """What the program printed while recorded (keep_output): both functions compiled give other results than eager;
    the graphs: Dynamo's calls the packet `torch.ops.mylib.scale` at each call, AOTAutograd's, under the same line,
    `mylib.scale.default` for the call without `out` and `mylib.scale.out` (plainly: its schema marks nothing
    written) for the one with it; the output code runs scale.out before the kernel that computes `buf * 1`."""
    printed = (DATA / "logs" / "custom_op_packet_overload.output.txt").read_text()
    assert "scale_into_then_read: eager -10.2644 compiled -13.4735 max abs diff 4.36" in printed
    assert "both_on_one_line: eager 2.5771 compiled 4.4716 max abs diff 3.02" in printed
    assert "out_unused: eager -8.8596 compiled -2.0591 max abs diff 4.44; buf afterwards differs by 4.44" in printed
    dynamo, aot = _graphs("dynamo_output_graph"), _graphs("aot_inference_graph")
    assert "= torch.ops.mylib.scale(l_x_, 3.0)" in _under(dynamo[0], _line(TRIPLED))
    assert "= torch.ops.mylib.scale(l_x_, 2.0, out = l_buf_)" in _under(dynamo[0], _line(INTO))
    assert "torch.ops.mylib.scale.default(arg1_1, 3.0)" in _under(aot[0], _line(TRIPLED))
    assert "torch.ops.mylib.scale.out(arg1_1, 2.0, out = arg0_1)" in _under(aot[0], _line(INTO))
    assert "auto_functionalized" not in aot[0] and "mylib.scale.out" not in _under(aot[0], _line(TRIPLED))
    call = _graphs("inductor_output_code")[0]
    call = call[call.index("def call(self, args):"):]
    assert call.index("torch.ops.mylib.scale.out(arg1_1, 2.0, out=arg0_1)") < call.index("cpp_fused_add_mul_0(")
    # [1/0]: both calls under one line, in Dynamo's graph and in AOTAutograd's: the line alone does not say which ran
    # which overload
    assert _under(dynamo[1], _line(BOTH)).count("= torch.ops.mylib.scale(") == 2
    both = _under(aot[1], _line(BOTH))
    assert "torch.ops.mylib.scale.default(" in both and "torch.ops.mylib.scale.out(" in both
    # [2/0]: the call's result freed on its own line, and AOTAutograd's graph holds no call of mylib at all
    assert "= torch.ops.mylib.scale(l_x_, 2.0, out = l_buf_);  l_x_ = scale = None" in _under(dynamo[2], _line(UNUSED))
    assert "mylib" not in aot[2]


def test_a_packet_call_is_credited_to_the_overload_aotautograd_ran(tmp_path):
    in_graphs = found_calls(read_trace(torch213_moved(LOG, tmp_path)))
    assert {op: [(c.compile_id, c.location.line) for c in calls] for op, calls in in_graphs.calls.items()} == {
        "mylib::scale": [("[0/0]", _line(TRIPLED)), ("[1/0]", _line(BOTH)), ("[1/0]", _line(BOTH)),
                         ("[2/0]", _line(UNUSED))],
        "mylib::scale.out": [("[0/0]", _line(INTO))]}
    assert in_graphs.functional["mylib::scale.out"] is True  # (not wrapped: torch took it for functional)
    # [1/0]'s two calls: AOTAutograd runs the default and scale.out under their one line; [2/0]'s: none
    assert in_graphs.unresolved == {"mylib::scale": {1, 2, 3}}
    assert [(d.op, d.compile_id, d.location.line) for d in in_graphs.left_out] == [
        ("mylib::scale", "[2/0]", _line(UNUSED))]


def test_the_undeclared_write_is_told_as_scale_outs_and_the_ambiguous_line_not_checked(tmp_path):
    found = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path)))
    (out,) = found.ops
    assert (out.op, out.function, out.arguments, out.declared, out.form) == (
        "mylib::scale.out", "scale_out", ["out"], OUT_SCHEMA, "define")
    assert [(w.line, w.code) for w in out.writes] == [(_line("    out.add_(x * factor)"), "out.add_(x * factor)")]
    (call,) = out.calls
    assert (call.compile_id, call.location.line, call.dropped) == ("[0/0]", _line(INTO), False)
    assert [(m.location.line, m.kernel) for m in call.moved_reads] == [(_line("before = buf * 1"),
                                                                         "cpp_fused_add_mul_0")]
    assert out.title == f"mylib::scale.out writes into out, which its schema {OUT_SCHEMA} does not mark written"
    (unread,) = found.unread
    assert (unread.op, unread.path, unread.why) == ("mylib::scale", PROGRAM.as_posix(), OVERLOAD_NOT_SHOWN)
    assert unread.not_checked.startswith(
        f"mylib::scale: not checked: {unread.path} calls it through its packet torch.ops.mylib.scale(...) where the "
        "log does not show which overload ran")
    # (left out: which overload, so whether a write was lost, not said)
    assert [(d.op, d.compile_id, d.location.line, d.checked, d.writes) for d in found.dropped] == [
        ("mylib::scale", "[2/0]", _line(UNUSED), False, [])]
    assert found.dropped[0].why.endswith("; the log does not say which of its overloads this call was (its source "
                                         "was read), so whether a write into an argument is lost is not known")
    assert found.functionalized == []


def test_report_summary_and_check_say_scale_out(tmp_path, capsys):
    log = torch213_moved(LOG, tmp_path)
    results = analyze(read_trace(log))
    titles = [f.title for f in results.insights.findings]
    assert f"mylib::scale.out writes into out, which its schema {OUT_SCHEMA} does not mark written" in titles
    assert not any(t.startswith("mylib::scale ") for t in titles)
    (page,) = [f for f in results.sources.files if f.path.endswith(PROGRAM.name)]
    marked = {line: [n["why"] for n in notes.numerics] for line, notes in page.notes.items() if notes.numerics}
    assert marked[_line(INTO)][0].startswith("calls mylib::scale.out, which writes into out undeclared")
    assert _line(TRIPLED) not in marked and _line(BOTH) not in marked and _line(UNUSED) not in marked

    report(log, tmp_path / "report")
    index = html.unescape((tmp_path / "report" / "index.html").read_text())
    table = index[index.index('<table class="op-mutations">'):]
    table = table[:table.index("</table>")]
    assert "mylib::scale.out" in table and "mylib::scale<" not in table
    assert "mylib::scale: not checked:" in index

    capsys.readouterr()
    assert main(["summary", str(log)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "mylib::scale.out writes into out, which its schema" in said
    assert "mylib::scale: not checked:" in said
    assert main(["summary", "--json", str(log)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [op["op"] for op in doc["custom_op_mutations"]["ops"]] == ["mylib::scale.out"]

    assert main(["check", str(log), "--no-custom-op-mutations"]) == 1
    failed = capsys.readouterr().out
    assert f"mylib::scale.out at {PROGRAM.name}:{_line('    out.add_(x * factor)')} (out.add_(x * factor))" in failed

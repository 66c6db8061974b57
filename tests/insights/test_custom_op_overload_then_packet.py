"""An overload called by name and through its packet in one function (tests/data/torch213 programs/
custom_op_overload_then_packet.py): Dynamo's graph names the calls `mylib.scale.out` and `mylib.scale`, AOTAutograd's
and the output code both `mylib.scale.out`. A call is found in the output code by the overload it ran and its place
among AOTAutograd's calls of that overload under its line, not by its place among the graph's calls of the name it was
written with (which pinned a read the output code runs between the two calls on the second, and a call left out on the
one the output code runs), and a call AOTAutograd left out of a line that still runs the op is dropped. Expected values are read from the raw log and the program, not from our output."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from compilescope.analyses.op_mutations import UNPLACED
from compilescope.analyses.op_mutations.graph_calls import found_calls
from compilescope.cli import main
from compilescope.ingest.reader import read_trace

from ..analysis_files import op_mutations_here
from ..conftest import line_holding, report, torch213, torch213_moved
from ..tracelog import raw_records

LOG = "custom_op_overload_then_packet.log.gz"
DATA = Path(__file__).parents[1] / "data" / "torch213"
PROGRAM = DATA / "programs" / "custom_op_overload_then_packet.py"
FIRST = "first = torch.ops.mylib.scale.out(x, 2.0, out=buf)"  # [0/0], by name
SHIFTED = "    shifted = buf + first"  # [0/0], read between the two calls: the second call's input
SECOND = "second = torch.ops.mylib.scale(shifted, 2.0, out=buf)"  # [0/0], the packet, resolved to scale.out
BOTH = "both = torch.ops.mylib.scale(x, 3.0) + torch.ops.mylib.scale(x, 2.0, out=buf)"  # [1/0]
LAST = "last = torch.ops.mylib.scale.out(both, 2.0, out=buf)"  # [1/0]
KEPT = "kept = [torch.ops.mylib.scale.out(x, 3.0, out=buf), torch.ops.mylib.scale.out(x, 2.0, out=buf)][1]"  # [2/0]


# A node's call of a mylib op in a graph dump (`first: "f32[8][1]cpu" = torch.ops.mylib.scale.out(`), not the code a
# `# File:` comment quotes
NODE = r'\w+: "[^"\n]*" = torch\.ops\.mylib\.'


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _lines(text: str) -> list[int]:
    """Each line of the program that holds text (`before = buf * 1` opens each function)."""
    return [n for n, src in enumerate(PROGRAM.read_text().splitlines(), 1) if text in src]


def _payloads(kind: str) -> dict[int, str]:
    """frame id -> the payload of its last `kind` record, read without compilescope."""
    return {e["frame_id"]: p for e, p in raw_records(torch213(LOG))
            if kind in e or e.get("artifact", {}).get("name") == kind}


def _wrapper(frame: int) -> str:
    code = _payloads("inductor_output_code")[frame]
    return code[code.index("def call(self, args):"):]


def test_the_output_code_calls_scale_out_twice_and_computes_shifted_between_them():
    """What the program printed while recorded (keep_output): each function compiled gives other results than eager.
    [0/0]: Dynamo's graph names the first call `mylib.scale.out` and the second the packet; the output code calls
    scale.out twice, the kernel computing `shifted` (provenance: Dynamo's node `shifted` -> post-grad `add` -> that
    kernel) between them (the second call takes its result), the one computing `before = buf * 1` after both.
    [1/0]: AOTAutograd's graph runs scale.out once under BOTH's line and once under LAST's, in that order. [2/0]: Dynamo's
    graph holds two calls of scale.out under KEPT's line, AOTAutograd's one, the output code one."""
    printed = (DATA / "logs" / "custom_op_overload_then_packet.output.txt").read_text()
    assert "out_then_packet: eager -22.7706 compiled -43.2995 max abs diff 23" in printed
    assert "line_then_out: eager 12.0496 compiled 23.4166 max abs diff 18.1" in printed
    assert "one_left_out: eager -8.8596 compiled -15.6600 max abs diff 4.44" in printed
    dynamo, aot = _payloads("dynamo_output_graph"), _payloads("aot_inference_graph")
    assert re.findall(rf"{NODE}(scale(?:\.out)?)\(", dynamo[0]) == ["scale.out", "scale"]
    assert re.findall(rf"{NODE}(scale(?:\.\w+)?)\(", aot[0]) == ["scale.out", "scale.out"]
    mappings = json.loads(_payloads("inductor_provenance_tracking_node_mappings")[0])
    (shifted_post,) = mappings["preToPost"]["shifted"]
    (before_post,) = mappings["preToPost"]["before"]
    kernel_of = {post: handle.rsplit(":", 1)[0] for handle, posts in mappings["cppCodeToPost"].items()
                 for post in posts}
    assert (kernel_of[shifted_post], kernel_of[before_post]) == ("cpp_fused_add_scale_0", "cpp_fused_add_mul_1")
    call = _wrapper(0)
    calls = [m.start() for m in re.finditer(r"torch\.ops\.mylib\.scale\.out\(", call)]
    assert len(calls) == 2
    assert calls[0] < call.index("cpp_fused_add_scale_0(") < calls[1] < call.index("cpp_fused_add_mul_1(")

    under, line = [], None  # the `# File:` line over each of [1/0]'s AOT calls of scale.out, in order
    for text in aot[1].splitlines():
        if comment := re.match(r"\s*# File: \S+custom_op_overload_then_packet\.py:(\d+) ", text):
            line = int(comment[1])
        elif re.match(rf"\s*{NODE}scale\.out\(", text):
            under.append(line)
    assert under == [_line(BOTH), _line(LAST)]
    assert re.findall(r"torch\.ops\.mylib\.scale\.out\(", _wrapper(1)) == ["torch.ops.mylib.scale.out("] * 2

    assert len(re.findall(rf"{NODE}scale\.out\(", dynamo[2])) == 2
    assert len(re.findall(rf"{NODE}scale\.out\(", aot[2])) == 1
    assert _wrapper(2).count("torch.ops.mylib.scale.out(") == 1


def test_each_call_is_placed_by_its_overload_and_its_place_among_aotautograds_calls_of_it(tmp_path):
    found = found_calls(read_trace(torch213_moved(LOG, tmp_path)))
    assert [(c.compile_id, c.location.line) for c in found.calls["mylib::scale.out"]] == [
        ("[0/0]", _line(FIRST)), ("[0/0]", _line(SECOND)), ("[1/0]", _line(LAST)), ("[2/0]", _line(KEPT)),
        ("[2/0]", _line(KEPT))]
    assert [(p.graph_op, p.nth, p.ran, p.ran_at, p.ran_calls) for p in found.where["mylib::scale.out"]] == [
        ("mylib.scale.out", 0, "mylib.scale.out", 0, 2),
        ("mylib.scale", 0, "mylib.scale.out", 1, 2),  # (the packet's first call: the output code's second scale.out)
        ("mylib.scale.out", 0, "mylib.scale.out", 1, 2),  # (scale.out's first by name: the second run)
        ("mylib.scale.out", 0, "mylib.scale.out", None, 1),  # (the one left out, its result unused: placed on none)
        ("mylib.scale.out", 1, "mylib.scale.out", 0, 1)]  # (the one kept: the output code's one call)
    assert [c.dropped for c in found.calls["mylib::scale.out"]] == [False, False, False, True, False]
    # (BOTH's two packet calls: AOTAutograd runs the default and scale.out under their line, which ran which not shown)
    assert [(c.compile_id, c.location.line) for c in found.calls["mylib::scale"]] == [("[1/0]", _line(BOTH))] * 2
    assert found.unresolved == {"mylib::scale": {0, 1}}


def test_a_read_computed_between_the_calls_is_not_said_moved_past_the_second(tmp_path):
    """[0/0]: `before` runs after both calls, so it is moved past each; `shifted` runs between them, before the
    second (the packet's call), whose input it is: before, that call was placed at the output code's first scale.out
    call (the packet's first call taken for the op's first), and `shifted` said computed after it. [1/0]: LAST's call is
    the output code's second scale.out call (BOTH's line runs the first). [2/0]: of KEPT's two calls AOTAutograd left
    out one, the one whose result is unused (the first): the other is the output code's one call, and `before` runs
    after it (before, neither was placed, and each said the log does not say)."""
    (out,) = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path))).ops
    assert out.op == "mylib::scale.out"
    before = _lines("before = buf * 1")
    told = [(c.compile_id, c.location.line, [(m.location.line, m.kernel) for m in c.moved_reads]) for c in out.calls]
    assert told == [
        ("[0/0]", _line(FIRST), [(before[0], "cpp_fused_add_mul_1")]),
        ("[0/0]", _line(SECOND), [(before[0], "cpp_fused_add_mul_1")]),
        ("[1/0]", _line(LAST), [(before[1], "cpp_fused_add_mul_1")]),
        ("[2/0]", _line(KEPT), []),
        ("[2/0]", _line(KEPT), [(before[2], "cpp_fused_add_mul_0")])]
    assert [c.unplaced for c in out.calls] == [False] * 5
    assert SHIFTED.strip() not in out.why
    notes = [out.call_note(c) for c in out.calls]
    assert not any(UNPLACED in n for n in notes)
    assert f"{PROGRAM.name}:{before[0]} (before = buf * 1)" in notes[1] and SHIFTED.strip() not in notes[1]


def test_a_call_left_out_of_a_line_that_still_runs_the_op_is_dropped_and_its_write_lost(tmp_path):
    """[2/0]: KEPT's line holds two calls of scale.out in Dynamo's graph, the first's result unused, and one in
    AOTAutograd's (read from the raw log in the first test): the first was left out, and with it its write into out.
    Before, a call was said left out only where AOTAutograd's graph holds no call of the op at all, and this one's
    lost write was said nowhere."""
    found = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path)))
    (out,) = found.ops
    assert [(c.compile_id, c.location.line) for c in out.calls if c.dropped] == [("[2/0]", _line(KEPT))]
    assert out.dropped
    # (the op's finding says both: the call left out, and the reads moved past the others)
    assert out.why.startswith("its result is unused, so the compiled code leaves the call out, and the write with it; "
                              f"and the compiled code computes {PROGRAM.name}:{_lines('before = buf * 1')[0]} ")
    assert [(d.op, d.compile_id, d.location.line, d.checked, d.writes) for d in found.dropped] == [
        ("mylib::scale.out", "[2/0]", _line(KEPT), True, ["out"])]
    assert "its body writes into out, so that write is lost" in found.dropped[0].why


def test_summary_and_report_say_the_call_left_out(tmp_path, capsys):
    log = torch213_moved(LOG, tmp_path)
    capsys.readouterr()
    assert main(["summary", str(log)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert UNPLACED not in said and SHIFTED.strip() not in said
    assert main(["summary", "--json", str(log)]) == 0
    found = json.loads(capsys.readouterr().out)["custom_op_mutations"]
    (op,) = found["ops"]
    assert [(c["dropped"], c["unplaced"]) for c in op["calls"]] == [(False, False)] * 3 + [(True, False), (False, False)]
    assert [(d["compile_id"], d["location"]["line"], d["writes"]) for d in found["dropped"]] == [
        ("[2/0]", _line(KEPT), ["out"])]
    report(log, tmp_path / "report")
    index = html.unescape((tmp_path / "report" / "index.html").read_text())
    table = index[index.index('<table class="op-mutations">'):]
    table = table[:table.index("</table>")]
    assert UNPLACED not in table and SHIFTED.strip() not in table
    assert "its result is unused, so the compiled code leaves the call out" in table

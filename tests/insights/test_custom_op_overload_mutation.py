"""Custom ops called as an overload (tests/data/torch213 programs/custom_op_overload_mutation.py): each overload is
defined by its own schema string (`lib.define("shift.into(...)")`, `lib.define("scale.out(...)")`) and implementation
(`@torch.library.impl(lib, "shift.into", ...)`, `lib.impl("scale.out", fn, "CPU")`), and the log's graphs name its
calls with the overload (`mylib.shift.into`). shift.into's undeclared write is told as a default overload's is; the
write scale.out's schema marks `(a!)` is not, nor the default mylib::scale, which writes nothing. Expected values are
read from the raw log and the program, not from our output."""

from __future__ import annotations

from pathlib import Path

from compilescope.analyses.op_mutations.definitions import custom_op_sources
from compilescope.analyses.op_mutations.graph_calls import found_calls
from compilescope.ingest.reader import read_trace

from ..analysis_files import op_mutations_here
from ..conftest import line_holding, torch213, torch213_moved
from ..tracelog import raw_records

LOG = "custom_op_overload_mutation.log.gz"
DATA = Path(__file__).parents[1] / "data" / "torch213"
PROGRAM = DATA / "programs" / "custom_op_overload_mutation.py"
SHIFT_SCHEMA = '"shift.into(Tensor x, Tensor buf) -> Tensor"'


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _graphs(kind: str) -> dict[int, str]:
    """frame id -> the payload of its `kind` graph, read without compilescope."""
    return {e["frame_id"]: p for e, p in raw_records(torch213(LOG)) if kind in e}


def test_the_log_names_each_overload_and_shows_only_the_declared_one_wrapped():
    """What the program printed while recorded (keep_output), and what the graphs show: Dynamo's and AOTAutograd's
    both call `mylib.shift.into` (plainly: its schema marks nothing written) before the kernel computing `buf * 1`;
    [1/0] calls the packet `mylib.scale` (AOTAutograd: `mylib.scale.default`, plainly) and `mylib.scale.out`, which
    AOTAutograd wraps in auto_functionalized_v2."""
    printed = (DATA / "logs" / "custom_op_overload_mutation.output.txt").read_text()
    assert "add_then_read: eager -5.4508 compiled -7.0554 max abs diff 2.18" in printed
    assert "scale_then_read: eager 4.7362 compiled 4.7362 max abs diff 0" in printed
    dynamo, aot = _graphs("dynamo_output_graph"), _graphs("aot_inference_graph")
    code = _graphs("inductor_output_code")
    assert f"custom_op_overload_mutation.py:{_line('doubled = torch.ops.mylib.shift.into(x, buf)')} in add_then_read" \
        in dynamo[0]
    assert "torch.ops.mylib.shift.into(l_x_, l_buf_)" in dynamo[0]
    assert "torch.ops.mylib.shift.into(arg1_1, arg0_1)" in aot[0] and "auto_functionalized" not in aot[0]
    call = code[0][code[0].index("def call(self, args):"):]
    assert call.index("buf0 = torch.ops.mylib.shift.into(arg1_1, arg0_1)") < call.index(
        "cpp_fused_add_mul_0(buf2, arg0_1)")
    assert "torch.ops.mylib.scale(l_x_, 3.0)" in dynamo[1] and "torch.ops.mylib.scale.out(l_x_, 2.0, out = l_buf_)" \
        in dynamo[1]
    assert "= torch.ops.mylib.scale.default(arg0_1, 3.0)" in aot[1]
    assert "auto_functionalized_v2(torch.ops.mylib.scale.out, x = arg0_1" in aot[1]


def test_an_overload_is_its_own_op_in_the_graphs_and_the_source(tmp_path):
    """The calls are kept apart by overload, as the definitions are: the default's packet call is functional in
    AOTAutograd's graph, scale.out is not (wrapped), though both are `mylib.scale...`."""
    in_graphs = found_calls(read_trace(torch213_moved(LOG, tmp_path)))
    assert {op: [c.location.line for c in calls] for op, calls in in_graphs.calls.items()} == {
        "mylib::shift.into": [_line("doubled = torch.ops.mylib.shift.into(x, buf)")],
        "mylib::scale": [_line("tripled = torch.ops.mylib.scale(x, 3.0)")],
        "mylib::scale.out": [_line("    torch.ops.mylib.scale.out(x, 2.0, out=buf)")]}
    assert in_graphs.functional == {"mylib::shift.into": True, "mylib::scale": True, "mylib::scale.out": False}
    found = custom_op_sources(PROGRAM.read_text())
    assert sorted(found) == ["mylib::scale", "mylib::scale.out", "mylib::shift.into"]
    (shift,), (out,), (default,) = found["mylib::shift.into"], found["mylib::scale.out"], found["mylib::scale"]
    assert (shift.function, shift.declared, shift.writes) == ("shift_into", frozenset(),
                                                              [("buf", _line("    buf.add_(x)"))])
    assert (out.function, out.declared, out.writes) == ("scale_out", frozenset({"out"}),
                                                        [("out", _line("    out.copy_(x * factor)"))])
    assert (default.function, default.writes) == ("scale", [])


def test_the_overloads_undeclared_write_is_told_as_the_defaults_and_the_declared_one_is_not(tmp_path):
    found = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path)))
    (shift,) = found.ops
    assert (shift.op, shift.function, shift.arguments, shift.declared, shift.form, shift.defined_at.line) == (
        "mylib::shift.into", "shift_into", ["buf"], SHIFT_SCHEMA, "define", _line(f"lib.define({SHIFT_SCHEMA}"))
    assert [(w.line, w.code) for w in shift.writes] == [(_line("    buf.add_(x)"), "buf.add_(x)")]
    (call,) = shift.calls
    assert (call.compile_id, call.location.line, call.dropped) == (
        "[0/0]", _line("doubled = torch.ops.mylib.shift.into(x, buf)"), False)
    # `before = buf * 1` read before the call, computed after it by cpp_fused_add_mul_0 (the output code above)
    assert [(m.location.line, m.kernel) for m in call.moved_reads] == [(_line("before = buf * 1"),
                                                                         "cpp_fused_add_mul_0")]
    assert shift.title == f"mylib::shift.into writes into buf, which its schema {SHIFT_SCHEMA} does not mark written"
    # (each op called was read: none not checked, none dropped, nothing functionalized)
    assert (found.unread, found.dropped, found.functionalized) == ([], [], [])

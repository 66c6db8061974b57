"""The CUDA twin of the custom-op mutation journey (tests/data/cuda_torch211 programs/custom_op_mutation_cuda.py,
recorded on an H200 with torch 2.11.0+cu130): what the CPU logs showed holds on the GPU. Both ops are named with the
line that writes; the as-written run fails check --no-custom-op-mutations and the fixed one passes; diff tells the fix.
Expected values are read from the raw log, the program and what it printed (the .output.txt beside each log)."""

from __future__ import annotations

from pathlib import Path

from compilescope.cli import main
from compilescope.ingest.reader import read_trace

from ..analysis_files import insights_here, op_mutations_here
from ..conftest import CUDA211_LOGS, cuda211, cuda211_moved, line_holding, report
from ..tracelog import raw_records

LOG = "custom_op_mutation_cuda_as_written.log.gz"
FIXED = "custom_op_mutation_cuda_fixed.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "cuda_torch211" / "programs" / "custom_op_mutation_cuda.py"


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _payloads(log: str, kind: str) -> dict[int, str]:
    """frame id -> the payload of its `kind` record, read without compilescope."""
    return {e["frame_id"]: p for e, p in raw_records(cuda211(log)) if kind in e}


def test_the_gpu_run_differs_from_eager_as_written_and_matches_fixed():
    """What the program printed: the failure the journey is about happened on the GPU too, and the fix removed it."""
    written = (CUDA211_LOGS / "custom_op_mutation_cuda_as_written.output.txt").read_text()
    fixed = (CUDA211_LOGS / "custom_op_mutation_cuda_fixed.output.txt").read_text()
    assert "shift_then_scale: eager 1897.2684 compiled 3823.2905" in written
    assert "clamp_then_add: eager 1036.7893 compiled 1060.2932 max abs diff 2.53; x afterwards differs by 2.53" in written
    assert fixed.count("max abs diff 0; x afterwards differs by 0") == 2


def test_the_cuda_log_shows_scale_run_before_the_fused_read_and_clamp_dropped():
    """The raw CUDA log: Dynamo's graphs call both ops under the calling lines; AOTAutograd calls scale plainly and no
    longer calls clamp_; the output code calls scale on arg0_1 before the Triton kernel that reads arg0_1 for
    `x + 1` (so it reads x scaled), and [1/0]'s runs only the `x + 1` kernel. Fixed: both wrapped, x copied back."""
    dynamo, aot = _payloads(LOG, "dynamo_output_graph"), _payloads(LOG, "aot_inference_graph")
    code = _payloads(LOG, "inductor_output_code")
    assert f"custom_op_mutation_cuda.py:{_line('scaled = scale(x, 2.0)')} in shift_then_scale" in dynamo[0]
    assert "torch.ops.mylib.scale.default(l_x_, 2.0)" in dynamo[0]
    assert "torch.ops.mylib.scale.default(arg0_1, 2.0)" in aot[0] and "auto_functionalized" not in aot[0]
    call = code[0][code[0].index("def call(self, args):"):]
    assert call.index("buf0 = torch.ops.mylib.scale.default(arg0_1, 2.0)") < call.index(
        "triton_poi_fused_add_mul_0.run(buf2, arg0_1, 1024")
    assert f"custom_op_mutation_cuda.py:{_line('    clamp_(x, 0.5)')} in clamp_then_add" in dynamo[1]
    assert "torch.ops.mylib.clamp_.default(l_x_, 0.5);  clamp__default = None" in dynamo[1]
    assert "mylib" not in aot[1] and "mylib" not in code[1]
    fixed = _payloads(FIXED, "aot_inference_graph")
    assert "auto_functionalized_v2(torch.ops.mylib.scale.default" in fixed[0]
    assert "auto_functionalized_v2(torch.ops.mylib.clamp_.default" in fixed[1]
    assert all("torch.ops.aten.copy_.default(arg0_1, getitem_1)" in fixed[i] for i in (0, 1))


def test_each_op_is_told_with_its_write_and_its_calls_on_cuda(tmp_path):
    (tmp_path / "again").mkdir()
    found = op_mutations_here(read_trace(cuda211_moved(LOG, tmp_path)))
    by_op = {op.op: op for op in found.ops}
    assert list(by_op) == ["mylib::scale", "mylib::clamp_"]
    scale, clamp = by_op["mylib::scale"], by_op["mylib::clamp_"]
    assert [(w.line, w.code) for w in scale.writes] == [(_line("    x.mul_(factor)"), "x.mul_(factor)")]
    assert [(w.line, w.code) for w in clamp.writes] == [(_line("    x.clamp_(-limit, limit)"),
                                                         "x.clamp_(-limit, limit)")]
    assert [(c.compile_id, c.location.line, c.dropped) for c in scale.calls] == [
        ("[0/0]", _line("scaled = scale(x, 2.0)"), False)]
    assert [(c.compile_id, c.location.line, c.dropped) for c in clamp.calls] == [
        ("[1/0]", _line("    clamp_(x, 0.5)"), True)]
    assert (scale.defined_at.line, clamp.defined_at.line) == (_line('custom_op("mylib::scale"'),
                                                              _line('custom_op("mylib::clamp_"'))
    # mutates_args=MUTATES, the program's `MUTATES = {"x"} if FIXED else ()`, FIXED from the environment
    said = f'line {_line("MUTATES = ")}: {{"x"}} if MUTOP_VARIANT is "fixed", else ()'
    assert [f.title for f in insights_here(read_trace(cuda211_moved(LOG, tmp_path / "again"))).findings][:2] == [
        f"mylib::scale writes into x, which its mutates_args=MUTATES does not name ({said})",
        f"mylib::clamp_ writes into x, which its mutates_args=MUTATES does not name ({said})"]


def test_without_the_program_nothing_is_claimed_on_cuda(tmp_path):
    """The log was recorded under /work/main: a machine with no program at the moved path reads nothing."""
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    assert not op_mutations_here(read_trace(cuda211_moved(LOG, tmp_path, programs=empty)))


def test_check_fails_as_written_passes_fixed_and_diff_tells_the_fix_on_cuda(tmp_path, capsys):
    written = cuda211_moved(LOG, tmp_path)
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    fixed = cuda211_moved(FIXED, fixed_dir)
    assert not op_mutations_here(read_trace(fixed))
    assert main(["check", str(written), "--no-custom-op-mutations"]) == 1
    out = capsys.readouterr().out
    assert (f"mylib::scale at custom_op_mutation_cuda.py:{_line('    x.mul_(factor)')} (x.mul_(factor)), and 1 more "
            "write") in out
    assert main(["check", str(fixed), "--no-custom-op-mutations"]) == 0
    capsys.readouterr()
    assert main(["check", str(written), "--baseline", str(fixed)]) == 1
    assert "baseline-custom-op-mutations: compiled code now calls mylib::scale, mylib::clamp_" in capsys.readouterr().out
    main(["diff", str(written), str(fixed)])
    said = " ".join(capsys.readouterr().out.split())
    assert ("compiled code no longer takes mylib::scale, mylib::clamp_ for functional while it writes into its "
            f"argument at custom_op_mutation_cuda.py:{_line('    x.mul_(factor)')} (x.mul_(factor)); "
            f"custom_op_mutation_cuda.py:{_line('    x.clamp_(-limit, limit)')} (x.clamp_(-limit, limit))") in said


def test_the_read_of_x_run_after_scale_is_told(tmp_path):
    """Line 48 (`shifted = x + 1`) reads x before scale's call at 49; the output code calls scale, then
    triton_poi_fused_add_mul_0, whose comment names `shifted` and whose provenance maps it to post-grad `add`
    (Dynamo's `shifted`): the read runs after the write. clamp_'s call was left out: no read to move."""
    records = raw_records(cuda211(LOG))
    (mappings,) = [p for e, p in records if e.get("artifact", {}).get("name") ==
                   "inductor_provenance_tracking_node_mappings" and e["frame_id"] == 0]
    assert '"shifted": ["add"]' in mappings and '"triton_poi_fused_add_mul_0:2": ["mul", "add"]' in mappings
    call = _payloads(LOG, "inductor_output_code")[0].split("def call(self, args):")[1]
    assert call.index("torch.ops.mylib.scale.default(arg0_1") < call.index(
        "# Topologically Sorted Source Nodes: [shifted, mul]") < call.index("triton_poi_fused_add_mul_0.run(")
    trace = read_trace(cuda211_moved(LOG, tmp_path))
    scale, clamp = op_mutations_here(trace).ops
    assert [(m.location.line, m.location.code, m.kernel) for c in scale.calls for m in c.moved_reads] == [
        (_line("shifted = x + 1"), "shifted = x + 1", "triton_poi_fused_add_mul_0")]
    assert (f"computes custom_op_mutation_cuda.py:{_line('shifted = x + 1')} (shifted = x + 1) in "
            "triton_poi_fused_add_mul_0 after the call") \
        in scale.why
    assert [m for c in clamp.calls for m in c.moved_reads] == []
    # Without torch's provenance mappings, the wrapper's comment over the kernel's call says the same
    for entry in trace.sorted_compiles():
        entry.artifacts[:] = [a for a in entry.artifacts if a.name != "inductor_provenance_tracking_node_mappings"]
    (scale, _) = op_mutations_here(trace).ops
    assert [(m.location.line, m.kernel) for c in scale.calls for m in c.moved_reads] == [
        (_line("shifted = x + 1"), "triton_poi_fused_add_mul_0")]


def test_the_source_page_badges_say_what_each_line_does(tmp_path):
    """The write, the call left out and the read moved past the call each carry their own badge, not the generic
    'differs from eager' of a random or low-precision line."""
    import html
    import re

    report(cuda211_moved(LOG, tmp_path), tmp_path / "report")
    (page,) = (tmp_path / "report" / "sources").glob("custom_op_mutation_cuda.py_*.html")
    badges = [html.unescape(b) for b in re.findall(r'class="b b-numerics" title="[^"]*">([^<]*)<', page.read_text())]
    assert sorted(badges) == sorted(["writes x, undeclared", "writes x, undeclared", "reads x after mylib::scale",
                                     "mylib::scale writes x", "call left out"])

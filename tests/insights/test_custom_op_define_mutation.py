"""Custom ops defined with a schema string (tests/data/torch213 programs/custom_op_define_mutation.py:
`Library("mylib", "DEF").define(...)` with implementations registered by `torch.library.impl` and `lib.impl`) whose
implementation writes into an argument the schema does not mark `(a!)`: told as custom_op's are, the schema being the
declaration; the fixed run (`Tensor(a!) buf`) is not. Also triton_op's launches, read from ast snippets and from the
CUDA program user_triton_kernel.py. Expected values are read from the raw log and the program, not from our output."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

from compilescope.analyses.analyze import analyze
from compilescope.analyses.op_mutations.definitions import custom_op_sources, schema_arguments
from compilescope.analyses.op_mutations.op_bodies import body_writes, triton_kernel_stores
from compilescope.cli import main
from compilescope.ingest.reader import read_trace

from ..analysis_files import op_mutations_here
from ..conftest import cuda211_moved, line_holding, peer, torch213, torch213_moved
from ..tracelog import raw_records
from .test_summary_cli import _documented_keys, _paths

LOG = "custom_op_define_mutation.log.gz"
FIXED = "custom_op_define_mutation_fixed.log.gz"
DATA = Path(__file__).parents[1] / "data"
PROGRAM = DATA / "torch213" / "programs" / "custom_op_define_mutation.py"
SCALE_SCHEMA = '"scale_into(Tensor x, Tensor buf) -> Tensor"'
CLAMP_SCHEMA = '"clamp_into(Tensor buf, float limit) -> Tensor"'


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _graphs(log: str, kind: str) -> dict[int, str]:
    """frame id -> the payload of its `kind` graph, read without compilescope."""
    return {e["frame_id"]: p for e, p in raw_records(torch213(log)) if kind in e}


def test_the_program_printed_compiled_results_that_differ_as_written_and_match_fixed():
    """What the program printed while make_traces recorded each log (keep_output): the wrong result happened."""
    logs = DATA / "torch213" / "logs"
    written = (logs / "custom_op_define_mutation.output.txt").read_text()
    fixed = (logs / "custom_op_define_mutation_fixed.output.txt").read_text()
    assert "add_then_read: eager -5.4508 compiled -7.0554 max abs diff 2.18; buf afterwards differs by 0" in written
    assert "clamp_then_read: eager 0.1182 compiled -1.2119 max abs diff 0.813; buf afterwards differs by 0.813" \
        in written
    assert fixed.count("max abs diff 0; buf afterwards differs by 0") == 2


def test_the_log_shows_the_defined_ops_taken_for_functional_and_the_unused_call_dropped():
    """Dynamo's graphs call the packets as the program does (`torch.ops.mylib.scale_into(l_x_, l_buf_)`, no
    overload); AOTAutograd calls scale_into.default plainly (the schema marks nothing written) before the kernel that
    computes `buf * 1`, and holds no clamp_into call (its result freed on its own line); the fixed run wraps both."""
    dynamo, aot = _graphs(LOG, "dynamo_output_graph"), _graphs(LOG, "aot_inference_graph")
    code = _graphs(LOG, "inductor_output_code")
    assert f"custom_op_define_mutation.py:{_line('doubled = torch.ops.mylib.scale_into(x, buf)')} in add_then_read" \
        in dynamo[0]
    assert "torch.ops.mylib.scale_into(l_x_, l_buf_)" in dynamo[0]
    assert "torch.ops.mylib.scale_into.default(arg1_1, arg0_1)" in aot[0] and "auto_functionalized" not in aot[0]
    call = code[0][code[0].index("def call(self, args):"):]
    assert call.index("buf0 = torch.ops.mylib.scale_into.default(arg1_1, arg0_1)") < call.index(
        "cpp_fused_add_mul_0(buf2, arg0_1)")
    assert "clamp_into: \"f32[8][1]cpu\" = torch.ops.mylib.clamp_into(l_buf_, 0.5);  clamp_into = None" in dynamo[1]
    assert "mylib" not in aot[1]
    fixed = _graphs(FIXED, "aot_inference_graph")
    assert "auto_functionalized_v2(torch.ops.mylib.scale_into.default" in fixed[0]
    assert "auto_functionalized_v2(torch.ops.mylib.clamp_into.default" in fixed[1]


def test_each_defined_op_is_told_with_its_schema_write_and_calls(tmp_path):
    found = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path)))
    scale, clamp = found.ops
    # The as-written branch's schemas (the fixed branch's mark buf written, and the log shows torch took them so not)
    assert [(op.op, op.function, op.arguments, op.declared, op.form, op.defined_at.line) for op in found.ops] == [
        ("mylib::scale_into", "scale_into", ["buf"], SCALE_SCHEMA, "define", _line(f"lib.define({SCALE_SCHEMA}")),
        ("mylib::clamp_into", "clamp_into", ["buf"], CLAMP_SCHEMA, "define", _line(f"lib.define({CLAMP_SCHEMA}"))]
    assert [(w.line, w.code) for w in scale.writes] == [(_line("    buf.add_(x)"), "buf.add_(x)")]
    assert [(w.line, w.code) for w in clamp.writes] == [(_line("    buf.clamp_(-limit, limit)"),
                                                         "buf.clamp_(-limit, limit)")]
    # `before = buf * 1` read before the call, computed after it by cpp_fused_add_mul_0
    (call,) = scale.calls
    assert (call.compile_id, call.location.line, call.dropped) == (
        "[0/0]", _line("doubled = torch.ops.mylib.scale_into(x, buf)"), False)
    assert [(m.location.line, m.kernel) for m in call.moved_reads] == [(_line("before = buf * 1"),
                                                                         "cpp_fused_add_mul_0")]
    assert [(c.compile_id, c.location.line, c.dropped) for c in clamp.calls] == [
        ("[1/0]", _line("    torch.ops.mylib.clamp_into(buf, 0.5)"), True)]
    assert scale.title == f"mylib::scale_into writes into buf, which its schema {SCALE_SCHEMA} does not mark written"
    assert scale.advice.startswith("mark the argument written in the schema: `Tensor(a!) buf`")
    assert [(d.op, d.compile_id, d.writes) for d in found.dropped] == [("mylib::clamp_into", "[1/0]", ["buf"])]


def test_the_fixed_schemas_are_no_alarm(tmp_path):
    assert not op_mutations_here(read_trace(torch213_moved(FIXED, tmp_path)))


def test_it_shows_where_custom_ops_show(tmp_path, capsys):
    """Fix first's findings, the source page's lines, check's gate, summary --json."""
    log = torch213_moved(LOG, tmp_path)
    results = analyze(read_trace(log))
    titles = [f.title for f in results.insights.findings]
    assert f"mylib::scale_into writes into buf, which its schema {SCALE_SCHEMA} does not mark written" in titles
    (page,) = [f for f in results.sources.files if f.path.endswith(PROGRAM.name)]
    marked = {line: [n["why"] for n in notes.numerics] for line, notes in page.notes.items() if notes.numerics}
    assert set(marked) == {_line(t) for t in ("    buf.add_(x)", "    buf.clamp_(-limit, limit)", "before = buf * 1",
                                              "doubled = torch.ops.mylib.scale_into(x, buf)",
                                              "    torch.ops.mylib.clamp_into(buf, 0.5)")}
    assert marked[_line("    buf.add_(x)")][0].startswith(
        "writes into buf, which mylib::scale_into's schema does not mark written")
    assert main(["check", str(log), "--no-custom-op-mutations"]) == 1
    failed = capsys.readouterr().out
    assert f"mylib::scale_into at {PROGRAM.name}:{_line('    buf.add_(x)')} (buf.add_(x))" in failed
    # (its declaration is the schema: what to mark there, not a mutates_args it has not got)
    assert "torch does not know of (schema), none allowed (mark it written in the schema (Tensor(a!) buf), or " \
           "return a new tensor)" in failed and "mutates_args" not in failed
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    assert main(["check", str(torch213_moved(FIXED, fixed_dir)), "--no-custom-op-mutations"]) == 0
    capsys.readouterr()
    assert main(["summary", "--json", str(log)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(op["op"], op["form"]) for op in doc["custom_op_mutations"]["ops"]] == [
        ("mylib::scale_into", "define"), ("mylib::clamp_into", "define")]
    assert sorted(set(_paths(doc)) - _documented_keys()) == []


def test_schema_arguments():
    assert schema_arguments("scale_into(Tensor x, Tensor(a!) buf) -> Tensor") == [("x", True, False),
                                                                                 ("buf", True, True)]
    assert schema_arguments("(Tensor[] xs, *, float alpha=1.0, Tensor(b!)? out=None) -> ()") == [
        ("xs", True, False), ("alpha", False, False), ("out", True, True)]
    assert schema_arguments("no schema") is None


def test_the_ways_an_op_is_defined_and_implemented():
    """torch.library.define with a qualified name, `@torch.library.impl("ns::op", ...)`, a FRAGMENT library's
    `lib.impl(name, fn, key)`; a Meta kernel is not the body that ran; an argument marked `(a!)` is declared."""
    ops = custom_op_sources(textwrap.dedent('''
        import torch
        torch.library.define("mylib::a", "(Tensor x, Tensor y) -> Tensor")

        @torch.library.impl("mylib::a", "cpu")
        def a(x, y):
            y[0] = 1
            return x + 1

        @torch.library.impl("mylib::a", "Meta")
        def a_meta(x, y):
            y.zero_()
            return torch.empty_like(x)

        frag = torch.library.Library("other", "FRAGMENT")
        frag.define("b(Tensor(a!) x, Tensor y, int n) -> Tensor")

        def b(x, y, n):
            x.add_(n)
            n += 1
            return y.clone()

        frag.impl("b", b, "CPU")
        '''))
    assert [(s.function, s.declared, s.writes, s.form) for s in ops["mylib::a"]] == [
        ("a", frozenset(), [("y", 7)], "define")]
    assert [(s.function, s.declared, s.writes) for s in ops["other::b"]] == [("b", frozenset({"x"}), [("x", 19)])]


def _triton_writes(source: str) -> list[tuple[str, int]]:
    tree = ast.parse(textwrap.dedent(source))
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "op"]
    return body_writes(fn, kernels=triton_kernel_stores(tree))


KERNEL = '''
    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        ptrs = out_ptr + offs
        tl.store(ptrs, x + tl.load(y_ptr + offs), mask=offs < n)
    '''


def test_a_triton_launch_writes_what_it_passes_a_stored_pointer():
    """Not tested on a real log (no GPU here): read from ast alone. The kernel stores through out_ptr (via ptrs);
    passing an argument there is a write, passing a new tensor is not."""
    assert triton_kernel_stores(ast.parse(textwrap.dedent(KERNEL)))["add_kernel"][1] == {"out_ptr"}
    assert _triton_writes(KERNEL + '''
    def op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        wrap_triton(add_kernel)[(1,)](x, y, x, x.numel(), BLOCK=1024)
        launch = torch.library.wrap_triton(add_kernel)
        launch[(1,)](x, y, out_ptr=y.view(-1), n=8, BLOCK=8)
        out = torch.empty_like(x)
        wrap_triton(add_kernel)[(1,)](x, y, out, x.numel(), BLOCK=1024)
        return out
    ''') == [("x", 10), ("y", 12)]


def test_the_recorded_triton_op_stores_only_into_its_new_tensor(tmp_path):
    """user_triton_kernel.py's triton_op (recorded on an H200): its kernel stores into out_ptr, given `out =
    torch.empty_like(x)`: nothing written undeclared, and the op is read (not 'not checked')."""
    program = DATA / "cuda_torch211" / "programs" / "user_triton_kernel.py"
    (source,) = custom_op_sources(program.read_text())["mylib::scaled_add"]
    assert (source.form, source.declared, source.writes) == ("triton_op", frozenset(), [])
    found = op_mutations_here(read_trace(cuda211_moved("user_triton_kernel_triton_op.log.gz", tmp_path)))
    assert not found and found.unread == [] and found.dropped == []


def test_the_cuda_triton_op_programs_read_as_written_and_fixed():
    """tests/data/cuda_torch211/programs/triton_op_mutation{,_fixed}.py (recorded on an H200 since: test_triton_op_mutation_cuda.py reads their logs): the
    kernel stores through x_ptr, given the op's x: undeclared as written, declared in the twin."""
    programs = DATA / "cuda_torch211" / "programs"
    for name, declared in (("triton_op_mutation.py", frozenset()), ("triton_op_mutation_fixed.py", {"x"})):
        program = programs / name
        (source,) = custom_op_sources(program.read_text())["mylib::scale_tr"]
        launch = line_holding(program, "wrap_triton(scale_kernel)[")
        assert (source.form, source.declared, source.writes) == ("triton_op", declared, [("x", launch)])


def test_check_names_the_arguments_the_schemas_would_mark(tmp_path, capsys):
    """check says which argument to mark, by its name: the program with its ops' definitions (lines 20-42, which the
    log does not quote: the ops run outside Dynamo's trace) calling the written argument `acc` (the calling lines,
    which the log quotes, unchanged): both ops' writes are found, into acc."""
    lines = PROGRAM.read_text().splitlines()
    start, end = _line('lib = torch.library.Library("mylib", "DEF")'), _line("torch.library.register_fake(\"mylib::clamp")
    renamed = [line.replace("buf", "acc") for line in lines[start - 1:end]]
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / PROGRAM.name).write_text("\n".join(lines[:start - 1] + renamed + lines[end:]) + "\n")
    log = torch213_moved(LOG, tmp_path, programs)
    assert main(["check", str(log), "--no-custom-op-mutations"]) == 1
    failed = capsys.readouterr().out
    assert "2 custom op writes torch does not know of (schema), none allowed (mark it written in the schema " \
           "(Tensor(a!) acc), or return a new tensor)" in failed


def test_a_packet_call_of_an_op_no_file_read_defines_is_not_checked_nor_a_failure(capsys):
    """peer simple.log (tlparse's own test log): Dynamo's graph calls `torch.ops.test.baz(input_1)` (line 126), the
    packet form a Library-defined op is called in, from test_torchinductor.py, a file not on this machine. Without its
    definition the op may be any library's (torchvision's, fbgemm's): it is neither an op "not checked" nor a CI
    failure, as before the define form was read. Ops called with an overload (`mylib.scale.default`) still are."""
    log = peer("simple.log")
    assert "= torch.ops.test.baz(input_1)" in Path(log).read_text()
    found = op_mutations_here(read_trace(log))
    assert (found.ops, found.unread, found.dropped) == ([], [], [])
    assert main(["check", "--no-custom-op-mutations", str(log)]) == 0
    assert "1 rule passed" in capsys.readouterr().out

"""The moved reads of a custom op's undeclared write (op_mutations.moved_reads.CompiledCalls.moved_reads) on hostile output code and graphs
derived from the torch 2.13 fixture (tests/data/torch213/logs/custom_op_mutation.log.gz): blank lines, many calls,
a call repeated. Its output code calls mylib.scale, then cpp_fused_add_mul_0, the kernel of Dynamo's `shifted = x + 1`
(provenance: handle cpp_fused_add_mul_0:2), which Dynamo's graph computes before the call."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compilescope.analyses.op_mutations import UNPLACED, UndeclaredMutation, moved_reads
from compilescope.analyses.op_mutations.analysis import MAX_MOVED_READS, op_mutations
from compilescope.analyses.op_mutations.graph_calls import found_calls
from compilescope.analyses.user_files import op_mutation_files
from compilescope.ingest.reader import read_trace
from compilescope.wording import LISTED

from ..analysis_files import op_mutations_here
from ..conftest import line_holding, torch213_moved
from ..robustness.corpus import fix_md5, lines_of, payload_envelope_index
from ..robustness.test_round_two import compilescope

LOG = "custom_op_mutation.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "custom_op_mutation.py"


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _fixture_lines(out: Path) -> list[bytes]:
    return lines_of(gzip.open(torch213_moved(LOG, out)).read())


def _index(lines: list[bytes], start: int, needle: bytes) -> int:
    return next(i for i in range(start, len(lines)) if needle in lines[i])


@pytest.mark.parametrize("pattern, text", [
    (moved_reads._WRAPPER_CALL, "    def call(self, args):"),
    (moved_reads._SOURCE_NODES, "        # Topologically Sorted Source Nodes: [shifted, mul], Original ATen: [aten.add]"),
    (moved_reads._CALLED, "        cpp_fused_add_mul_0(buf2, arg0_1)"),
    (moved_reads._CALL_LINE, "        cpp_fused_add_mul_0.run(buf2, arg0_1)"),
])
def test_each_wrapper_pattern_matches_within_its_own_line(pattern, text):
    """Under re.M a leading `^\\s*` spans newlines: from each of n blank lines it ran to the end of the run, n^2 in all
    (80k blank lines: 12 s for one search). A match starts on its own line."""
    found = pattern.search("\n" * 3 + text)
    assert found is not None and "\n" not in found.group()


def test_many_blank_lines_in_the_output_code_still_tell_the_moved_read(tmp_path):
    """200k blank payload lines before a line that is not the wrapper's `def call`, and 200k inside the wrapper before
    a line that is no kernel's call: each search ran from every blank line to the end of the run and back (minutes,
    quadratic). In a bounded child; the read is still found (the blank lines end no line the patterns need)."""
    lines = _fixture_lines(tmp_path)
    code = payload_envelope_index(lines, b'"inductor_output_code"')
    for needle in (b"assert_size_stride(arg0_1, (8, ), (1, ), 'input')", b"def recursively_apply_fns("):
        at = _index(lines, code, needle)
        lines[at:at] = [b"\t\n"] * 200_000
    fix_md5(lines, code)
    log = tmp_path / "blank.log"
    log.write_bytes(b"".join(lines))
    run = compilescope("summary", "--json", log)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-2000:]
    (scale,) = [op for op in json.loads(run.stdout)["custom_op_mutations"]["ops"] if op["op"] == "mylib::scale"]
    assert [(m["location"]["line"], m["kernel"]) for c in scale["calls"] for m in c["moved_reads"]] == [
        (_line("shifted = x + 1"), "cpp_fused_add_mul_0")]


def _with_calls(out: Path, graph_calls: int, wrapper_calls: int, wrapper_after_kernel: bool = False) -> Path:
    """The fixture with `graph_calls` more calls of mylib.scale in Dynamo's and AOTAutograd's graphs of compile 0 (after
    its own, each under the call's `# File:` comment) and `wrapper_calls` more in its output code's wrapper: after the
    op's own call (before the kernel), or after the kernel."""
    lines = _fixture_lines(out)
    code = payload_envelope_index(lines, b'"inductor_output_code"')
    op = _index(lines, code, b"        buf0 = torch.ops.mylib.scale.default(arg0_1, 2.0)")
    kernel = _index(lines, code, b"        cpp_fused_add_mul_0(buf2, arg0_1)")
    assert op < kernel  # (the raw log: the kernel computing `shifted` runs after the call)
    at = (kernel if wrapper_after_kernel else op) + 1
    lines[at:at] = [b"\t        buf_s%d = torch.ops.mylib.scale.default(arg0_1, 2.0)\n" % k for k in range(wrapper_calls)]
    fix_md5(lines, code)
    # (AOTAutograd's graph with as many more calls under the line: the output code runs the calls it holds, and a
    # call is placed among them by its line)
    aot = payload_envelope_index(lines, b'"aot_inference_graph"')
    call = _index(lines, aot, b"torch.ops.mylib.scale.default(arg0_1, 2.0)")
    assert lines[call - 1].lstrip().startswith(b"# File:") and b"code: scaled = scale(x, 2.0)" in lines[call - 1]
    lines[call + 1:call + 1] = [line for k in range(graph_calls) for line in (
        lines[call - 1], b'\t        s%d: "f32[8][1]cpu" = torch.ops.mylib.scale.default(arg0_1, 2.0)\n' % k)]
    fix_md5(lines, aot)
    dynamo = payload_envelope_index(lines)
    call = _index(lines, dynamo, b"torch.ops.mylib.scale.default(l_x_")
    assert lines[call - 1].lstrip().startswith(b"# File:") and b"code: scaled = scale(x, 2.0)" in lines[call - 1]
    lines[call + 1:call + 1] = [line for k in range(graph_calls) for line in (
        lines[call - 1], b'\t        s%d: "f32[8][1]cpu" = torch.ops.mylib.scale.default(l_x_, 2.0)\n' % k)]
    fix_md5(lines, dynamo)
    log = out / f"calls{graph_calls}_{wrapper_calls}_{int(wrapper_after_kernel)}.log"
    log.write_bytes(b"".join(lines))
    return log


def _scale(log: Path) -> UndeclaredMutation:
    (scale,) = [op for op in op_mutations_here(read_trace(log)).ops if op.op == "mylib::scale"]
    return scale


def test_each_call_is_placed_at_its_own_call_in_the_wrapper(tmp_path):
    """A second call of scale after the first: Dynamo's `shifted = x + 1` reads x before it. Where the wrapper runs
    the kernel computing `shifted` between the two calls, the read is before the second call in both: not moved (the
    wrapper's first call was taken for every call's); where it runs after both, it is moved past the second too."""
    shifted = (_line("shifted = x + 1"), "cpp_fused_add_mul_0")
    between = _scale(_with_calls(tmp_path, 1, 1, wrapper_after_kernel=True))
    assert [[(m.location.line, m.kernel) for m in c.moved_reads] for c in between.calls] == [[shifted], []]
    after = _scale(_with_calls(tmp_path, 1, 1))
    assert [[(m.location.line, m.kernel) for m in c.moved_reads] for c in after.calls] == [[shifted], [shifted]]


def test_a_call_the_output_code_holds_fewer_of_than_aotautograds_graph_is_placed_on_none(tmp_path):
    """A second call of scale in Dynamo's and AOTAutograd's graphs, but none more in the output code: which of the two
    its one call is the log does not say. Neither call is given the read (the first was, the wrapper's first call taken
    for the graph's first), and each says so (OpCall.unplaced)."""
    scale = _scale(_with_calls(tmp_path, 1, 0))
    assert [(c.moved_reads, c.unplaced) for c in scale.calls] == [([], True), ([], True)]
    assert all(UNPLACED in scale.call_note(c) for c in scale.calls)


def test_many_calls_read_the_graph_and_code_once_and_list_a_bounded_number(tmp_path, monkeypatch):
    """n more calls of scale, each after `shifted` in Dynamo's graph and before its kernel in the wrapper: each moves
    the read. Per call the graph was parsed again, the provenance JSON loaded again, every earlier node walked and the
    wrapper searched per node (1,000 calls: 15 s, 2,000: 70 s). Read once per compile, lines run linear in n; the op
    lists MAX_MOVED_READS of the n + 1 reads, and counts the rest per call."""
    from ..conftest import record_calls
    from ..robustness.linear_work import assert_linear, lines_run_here

    small, large = (read_trace(_with_calls(tmp_path, n, n)) for n in (200, 400))
    # (the files read first, as analyze() reads them: what op_mutations runs is counted)
    small_files, large_files = op_mutation_files(small), op_mutation_files(large)
    parsed = record_calls(monkeypatch, moved_reads, "graph_nodes", lambda text: len(text))
    loaded = record_calls(monkeypatch, moved_reads, "_node_kernels", lambda trace, entry: entry.compile_id)
    assert_linear(lines_run_here(op_mutations, small, small_files),
                  lines_run_here(op_mutations, large, large_files), "op_mutations of n calls")
    assert (len(parsed), len(loaded)) == (2, 2)  # (compile 0 of each log: compile 1's call of clamp_np is left out)
    (scale,) = [op for op in op_mutations(large, large_files).ops if op.op == "mylib::scale"]
    assert len(scale.calls) == 401
    listed = [(m.location.line, m.kernel) for c in scale.calls for m in c.moved_reads]
    assert listed == [(_line("shifted = x + 1"), "cpp_fused_add_mul_0")] * MAX_MOVED_READS
    assert [c.more_moved_reads for c in scale.calls] == [0] * MAX_MOVED_READS + [1] * (401 - MAX_MOVED_READS)


def test_the_summary_and_the_report_list_the_first_calls_and_count_the_rest(tmp_path, capsys):
    """25 more calls, each moving the one read: the op holds 26 calls, 20 reads listed over them and 1 more counted on
    each of the last 6 (--json says each). The summary and the report list the first LISTED calls, each with its
    read, and count the other 18: a list of every call grew with the log (the source pages mark each call)."""
    from compilescope.cli import main

    log = _with_calls(tmp_path, 25, 25)
    assert main(["summary", "--json", str(log)]) == 0
    (scale,) = [op for op in json.loads(capsys.readouterr().out)["custom_op_mutations"]["ops"]
                if op["op"] == "mylib::scale"]
    assert [(len(c["moved_reads"]), c["more_moved_reads"]) for c in scale["calls"]] == \
        [(1, 0)] * MAX_MOVED_READS + [(0, 1)] * (26 - MAX_MOVED_READS)
    assert main(["summary", str(log)]) == 0
    said = capsys.readouterr().out
    assert said.count("read after the call: ") == LISTED and "read after the call: 1 more read" not in said
    assert said.count(f"called: {26 - LISTED} more calls (--json lists them all)") == 1
    assert main([str(log), "-o", str(tmp_path / "report"), "--no-browser"]) == 0
    shown = (tmp_path / "report" / "index.html").read_text()
    assert shown.count("<em>read after the call:</em> ") == LISTED and "1 more read" not in shown
    assert shown.count(f"<br>{26 - LISTED} more calls</td>") == 1


def test_a_call_is_placed_among_all_the_graphs_calls_of_its_op_those_with_no_line_too(tmp_path):
    """A call's GraphPlace.nth is which of Dynamo's graph's calls of the op it is, as moved_reads finds the call's node
    (CompiledCalls counts every call): a call under "# No stacktrace found for following nodes" has no line and is not
    reported, but it is one of those calls. Counted among the reported calls alone, the next call was given the node
    before it, its written values and reads those of the other."""
    lines = _fixture_lines(tmp_path)
    dynamo = payload_envelope_index(lines)
    call = _index(lines, dynamo, b"torch.ops.mylib.scale.default(l_x_")
    lines[call - 1:call - 1] = [b"\t        # No stacktrace found for following nodes\n",
                                b'\t        unsited: "f32[8][1]cpu" = torch.ops.mylib.scale.default(l_x_, 2.0)\n']
    fix_md5(lines, dynamo)
    log = tmp_path / "unsited_first.log"
    log.write_bytes(b"".join(lines))
    (place,) = found_calls(read_trace(log)).where["mylib::scale"]
    assert (place.graph_op, place.nth) == ("mylib.scale.default", 1)

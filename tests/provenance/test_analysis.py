"""The provenance analysis on its own: tlparse's line rules, stack traces, inference, and the page's safety."""

from __future__ import annotations

import json

from compilescope.analyses.line_map import PackedLineMap, packed
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.analyses.provenance.inferred_nodes import infer_kernel_nodes
from compilescope.analyses.provenance.line_mappings import GraphLines, code_lines, kernel_lines, node_lines, text_lines
from compilescope.analyses.provenance.stack_traces import kernel_traces, parse_stack_trace
from compilescope.ingest.reader import read_trace
from compilescope.render.html.provenance import json_island

from ..conftest import cuda211, torch213
from .helpers import POST_GRAD, our_line_mappings, provenance_log, python_code


def test_text_lines_are_rusts():
    assert text_lines("a\r\nb\n") == ["a", "b"]
    assert text_lines("a\n\n") == ["a", ""]
    assert text_lines("") == []
    assert code_lines("\n\n#include <x>\n") == ["#include <x>"]


def test_node_lines_last_definition_wins():
    lines = ['x: "f32" = a', "# y = comment", "    y = b", 'x: "f32" = c']
    assert node_lines(lines) == {"x": 4, "y": 3}


def test_cpp_debug_handle_with_colons_in_kernel_name():
    code = [
        "void AOTInductorModel::run_impl(",
        "    // [Provenance debug handles] at::native::kern:2",
        "    at::native::kern(buf0);",
        "    // [Provenance debug handles] at::native::kern:3",
        "    at::native::kern(buf1);",
    ]
    found = kernel_lines(code, ["at::native::kern:2", "at::native::kern:3", "at::native::kern:9"], "cpp")
    # A handle not in the code: every line naming the kernel.
    assert found == {"at::native::kern:2": [3], "at::native::kern:3": [5], "at::native::kern:9": [2, 3, 4, 5]}


def test_python_debug_handle_maps_to_the_call_after_the_comment():
    code = text_lines(python_code("cpp_fused_relu_0"))
    (line,) = kernel_lines(code, ["cpp_fused_relu_0:1"], "python")["cpp_fused_relu_0:1"]
    assert code[line - 1].strip().startswith("cpp_fused_relu_0(arg0_1")


def test_stack_traces_in_every_logged_format():
    plain = '  File "/a/b.py", line 81, in forward\n    x = self.sigmoid(x)\n    ^^^^^^\n  File "/a/c.py", line 3, in f\n    g()\n'
    no_indent = 'File "/a/b.py", line 82, in forward\n    d = a * 3.14'
    escaped = '  File "/data/x.py", line 1\\n  foo()\\n'  # newlines logged as a literal backslash-n
    frames = parse_stack_trace(plain)
    assert [(f.file, f.line, f.function, f.code) for f in frames] == [("/a/b.py", 81, "forward", "x = self.sigmoid(x)"), ("/a/c.py", 3, "f", "g()")]
    kernels = kernel_traces(json.dumps({"k:2": [no_indent], "k:1": [escaped], "other": plain}))
    assert [k.name for k in kernels] == ["k:1", "k:2", "other"]  # call order (debug handle), then name
    assert [(u.file, u.line, u.code) for u in kernels[0].user_lines] == [("/data/x.py", 1, "foo()")]
    assert kernels[1].debug_handle == "2" and kernels[1].kernel == "k"
    assert kernels[1].user_lines[0].code == "d = a * 3.14"
    assert kernels[2].user_lines[0].location == "/a/c.py:3"  # the innermost frame
    assert kernel_traces("not json") == [] and kernel_traces("[1]") == []


def test_kernels_sharing_a_stack_share_its_text_and_frames():
    # The kernels of one graph mostly share stacks, and the results keep every kernel's: one object per text.
    stack = '  File "/a/b.py", line 81, in forward\n    x = self.sigmoid(x)\n'
    kernels = kernel_traces(json.dumps({"k:1": [stack], "k:2": [stack], "j:3": [stack, "other"]}))
    assert [k.traces for k in kernels] == [[stack.rstrip("\n")]] * 2 + [[stack.rstrip("\n"), "other"]]
    assert len({id(k.traces[0]) for k in kernels}) == 1 and len({id(k.frames[0]) for k in kernels}) == 1


def test_inferred_nodes_prefer_the_op_the_kernel_is_named_after():
    post = GraphLines(text_lines(POST_GRAD))
    (k,) = kernel_traces(json.dumps({"cpp_fused_relu_0:1": ['  File "/home/me/prog.py", line 7, in forward\n    y = x.relu()\n']}))
    assert infer_kernel_nodes([k], post) == {"cpp_fused_relu_0:1": [4]}
    (elsewhere,) = kernel_traces(json.dumps({"cpp_fused_relu_0:1": ['  File "/home/me/other.py", line 7, in f\n']}))
    assert infer_kernel_nodes([elsewhere], post) == {}


def test_log_text_cannot_break_out_of_the_page(tmp_path):
    """Node names and code come from the log: escaped in the panels, and in the JSON island."""
    evil = "</script><script>alert(1)</script>"
    code = python_code("cpp_fused_relu_0").replace("import torch", f"import torch  # {evil}")
    log = tmp_path / "evil.log"
    log.write_text(provenance_log(code, "cpp_fused_relu_0", traces={"cpp_fused_relu_0:1": [f'  File "{evil}", line 1, in f\n']}))
    our_line_mappings(log, tmp_path / "out")
    for page in [tmp_path / "out/provenance/-_0_0_0.html", *tmp_path.glob("out/-_0_0_0/*_readable.html")]:
        html = page.read_text()
        assert "<script>alert" not in html, page
    assert "<" not in json_island({"a": evil}) and json.loads(str(json_island({"a": evil}))) == {"a": evil}


def test_kernel_trace_entries_that_are_not_text_do_not_crash():
    from compilescope.analyses.provenance.stack_traces import _as_text

    deep: list = []
    inner = deep
    for _ in range(400):  # deeper than orjson will encode
        inner.append([])
        inner = inner[0]
    assert _as_text({"file": "x.py"}) == '{"file":"x.py"}'
    assert _as_text(deep).startswith("[[[")


def test_the_maps_are_kept_packed_and_read_as_built():
    # The maps are kept for every compile of the log until its page is written: packed into arrays, they read
    # as the dicts of lists they were built as (in their order: the page's JSON island keeps it).
    with read_trace(str(torch213("provenance.log"))) as trace:
        found = analyze_provenance(trace)
    maps = [m for cp in found.compiles.values() for s in cp.sections
            for m in (*s.mappings.values(), s.inferred_code_to_post, s.inferred_post_to_code)]
    assert all(isinstance(m, PackedLineMap) for m in maps) and sum(map(len, maps)) > 10
    for m in maps:
        as_dict = dict(m.items())
        assert m == as_dict and list(m) == list(as_dict) and len(m) == len(as_dict)
        for line, targets in as_dict.items():
            assert line in m and m[line] == targets and targets and all(type(t) is int for t in targets)
        assert 0 not in m and m.get(0) is None and "1" not in m
    assert packed({5: [1], 1: [2, 3]}) == {5: [1], 1: [2, 3]} and list(packed({5: [1], 1: [2, 3]})) == [5, 1]
    assert packed({1: [2**40]}) == {1: [2**40]}  # a number too big for the arrays: kept as built


def test_a_backwards_stack_traces_of_earlier_graphs_kernels_are_set_apart():
    """torch 2.11 does not clear its provenance between graphs. In train_break_recompile, [0/0]'s backward (AOT ID
    0_backward) is compiled after [1/0]'s at the first loss.backward(): its kernel stack traces list its own four
    kernels (line 21, handles 4-7, the ones its code's `# [Provenance debug handles]` comments name) and [1/0]'s
    backward kernels of line 23 (triton_per_fused_mul_sum_0:1, extern_kernels.mm:2, extern_kernels.mm:3), which its
    code never calls. Those are another graph's: no line of its code is said to call them (extern_kernels.mm is
    called at its lines for handles 5 and 7), nor are nodes inferred for them."""
    with read_trace(cuda211("train_break_recompile.log.gz")) as trace:
        found = analyze_provenance(trace)
    by_title = {s.title: s for c in found.compiles.values() for s in c.sections}
    backward = by_title["0_backward"]
    assert backward.other_graphs == ["triton_per_fused_mul_sum_0:1", "extern_kernels.mm:2", "extern_kernels.mm:3"]
    called = sorted(name for names in backward.code_kernels.values() for name in names)
    assert called == ["extern_kernels.mm:5", "extern_kernels.mm:7", "triton_per_fused_gelu_gelu_backward_sum_0:4",
                      "triton_per_fused_native_layer_norm_native_layer_norm_backward_1:6"]
    # [0/1]'s backward (2_backward) lists its forward's three kernels too; [1/0]'s, compiled first, lists only its own.
    assert by_title["2_backward"].other_graphs == ["triton_per_fused_native_layer_norm_0:1", "extern_kernels.addmm:2",
                                                   "triton_poi_fused_gelu_1:3"]
    assert by_title["1_backward"].other_graphs == []
    # the kind each code's AOT ID names
    assert {t: s.graph for t, s in by_title.items()} == {
        "0_forward": "forward", "0_backward": "backward", "1_forward": "forward", "1_backward": "backward",
        "2_forward": "forward", "2_backward": "backward", "3_forward": "forward", "3_backward": "backward"}

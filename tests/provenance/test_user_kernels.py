"""A user's own Triton kernel on the provenance views: user_triton_kernel_*.log.gz (cuda_torch211/README.md), where
Inductor's output code holds the user's scaled_add_kernel beside its two generated kernels."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from compilescope.ingest.reader import read_trace

from ..analysis_files import provenance_here
from ..conftest import CUDA211_LOGS, cuda211, cuda211_moved, line_holding, report

PROGRAM = CUDA211_LOGS.parent / "programs" / "user_triton_kernel.py"


@pytest.mark.parametrize("variant, launch_text", [("raw", "launch[(triton.cdiv(n, 1024),)]"),
                                                  ("triton_op", "return scaled_add(h, y, 0.5).sum()")])
def test_the_users_kernel_is_said_to_be_theirs_with_its_lines_not_inductors(variant, launch_text, tmp_path):
    raw = gzip.open(cuda211(f"user_triton_kernel_{variant}.log.gz"), "rt").read()
    log = cuda211_moved(f"user_triton_kernel_{variant}.log.gz", tmp_path)  # (the program read from this checkout)
    # torch's stack traces tie scaled_add_kernel_0:2 to the launch's line and to line 44 (relu and mul, fused into
    # triton_poi_fused_mul_relu_0 before it): the mapping's "cppCodeToPost" lists triton_kernel_wrapper_mutation, mul, relu.
    assert len(re.findall(r'"scaled_add_kernel_0:2": \["triton_kernel_wrapper_mutation", "mul(?:_1)?", "relu"\]', raw)) == 2
    relu = line_holding(PROGRAM, "h = torch.relu(x) * 2")
    assert re.search(rf'"scaled_add_kernel_0:2": \[(?:(?!"triton_red).)*line {relu}, in layer', raw)
    launch = line_holding(PROGRAM, launch_text)
    # "# Original path: .../user_triton_kernel.py:20" above the kernel in the output code: its @triton.jit line; the
    # note says the def, the line after (the program is here)
    def_line = line_holding(PROGRAM, "def scaled_add_kernel(")
    assert f"/user_triton_kernel.py:{def_line - 1}\n\tscaled_add_kernel_0 = async_compile.triton(" in raw
    found = provenance_here(read_trace(log))
    for compile_id in ("0/0", "0/1"):
        (section,) = [c for c in found.compiles.values() if str(c.compile_id) == f"[{compile_id}]"][0].sections
        assert set(section.user_kernel_notes) == {"scaled_add_kernel_0:2"}  # not Inductor's triton_poi/red kernels
        assert section.kernel_notes["scaled_add_kernel_0:2"] == (
            f"your own Triton kernel scaled_add_kernel, defined at user_triton_kernel.py:{def_line}, launched at "
            f"user_triton_kernel.py:{launch}: Inductor compiled it as you wrote it (it generated none of it); "
            f"user_triton_kernel.py:{relu} below is torch's mapping of the ops fused before it, not where it came from")


def test_the_kernels_page_shows_the_note(tmp_path):
    # on a machine without the program, the line torch names, said as the decorator's
    report(cuda211_moved("user_triton_kernel_raw.log.gz", tmp_path, programs=tmp_path / "elsewhere"), tmp_path / "r")
    (page,) = (tmp_path / "r" / "-_0_1_0").glob("inductor_provenance_tracking_kernel_stack_traces_*_readable.html")
    decorator = line_holding(PROGRAM, "def scaled_add_kernel(") - 1
    assert ('<div class="kernel-note">your own Triton kernel scaled_add_kernel, defined at '
            f'user_triton_kernel.py:{decorator} (its decorator line), launched at user_triton_kernel.py:34'
            in page.read_text())


@pytest.mark.parametrize("variant, launch_text", [("raw", "launch[(triton.cdiv(n, 1024),)]"),
                                                  ("triton_op", "return scaled_add(h, y, 0.5).sum()")])
def test_inductors_kernel_before_the_users_is_placed_at_the_ops_it_computes_not_at_the_launch(variant, launch_text,
                                                                                               tmp_path):
    raw = gzip.open(cuda211(f"user_triton_kernel_{variant}.log.gz"), "rt").read()
    relu, launch = line_holding(PROGRAM, "h = torch.relu(x) * 2"), line_holding(PROGRAM, launch_text)
    # torch ties triton_poi_fused_mul_relu_0:1 to the wrapper node too, so its stacks list the launch beside line 44;
    # the post-grad graph puts relu and mul at 44, the wrapper at the launch.
    assert len(re.findall(r'"triton_poi_fused_mul_relu_0:1": \["triton_kernel_wrapper_mutation", "mul(?:_1)?", "relu"\]',
                          raw)) == 2
    assert re.search(rf'"triton_poi_fused_mul_relu_0:1": \["(?:(?!"scaled_add_kernel_0).)*line {launch}, in '
                     rf'(?:(?!"scaled_add_kernel_0).)*line {relu}, in layer', raw)
    post = raw[raw.rindex('"name": "inductor_post_grad_graph"'):]
    assert re.search(rf"# File: \S+:{relu} in layer, code: h = torch.relu\(x\) \* 2\n\t +relu: .*\n\t +mul(?:_1)?: ", post)
    assert re.search(rf"# File: \S+:{launch} in \w+, code: .*\n(?:\t +\w+: .*\n)*\t +triton_kernel_wrapper_mutation = ", post)
    log = cuda211_moved(f"user_triton_kernel_{variant}.log.gz", tmp_path)
    found = provenance_here(read_trace(log))
    for cp in found.compiles.values():
        (section,) = cp.sections
        placed = {k.name: [u.line for u in k.placed_lines] for k in section.kernels}
        assert placed == {"triton_poi_fused_mul_relu_0:1": [relu], "scaled_add_kernel_0:2": [launch],
                          "triton_red_fused_sum_1:3": [line_holding(PROGRAM, "return scaled_add(h, y, 0.5).sum()")]}
        assert section.kernel_notes["triton_poi_fused_mul_relu_0:1"] == (
            f"made for the ops of user_triton_kernel.py:{relu}; torch's stack traces also tie it to "
            f"user_triton_kernel.py:{launch}, the launch of your own Triton kernel scaled_add_kernel "
            "(scaled_add_kernel_0:2), not where it came from")
    # The program's page lists it at 44 only, in both compiles
    report(log, tmp_path / "r")
    lines = {int(n): sorted({k["kernel"] for k in notes.get("kernels", ())})
             for f in json.loads((tmp_path / "r" / "sources.json").read_text())["files"] for n, notes in f["lines"].items()}
    assert [n for n, names in lines.items() if "triton_poi_fused_mul_relu_0:1" in names] == [relu]

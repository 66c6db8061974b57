"""A real torch 2.13 CPU training step with INDUCTOR_PROVENANCE=1: forward and backward kernels, traced to source."""

from __future__ import annotations

import re

from compilescope.ingest.reader import read_trace

from ..conftest import torch213
from .helpers import our_line_mappings

USER_FILE = "tests/data/torch213/programs/provenance.py"


def _cpp_kernels(code_lines: list[str]) -> list[str]:
    return [m.group(1) for line in code_lines if (m := re.match(r"(cpp_\w+) = async_compile\.cpp_pybinding\(", line))]


def test_every_cpp_kernel_maps_to_post_grad_nodes_and_a_user_line(tmp_path):
    out = tmp_path / "out"
    doc = our_line_mappings(torch213("provenance.log"), out)["-_0_0_0"]
    sections = doc["sections"]
    assert [s["title"] for s in sections] == ["0_forward", "0_backward"]
    html = (out / "provenance" / "-_0_0_0.html").read_text()
    assert 'id="s1-code-L113"' in html  # the backward's panel is on the page too
    trace = read_trace(str(torch213("provenance.log")))
    entry = trace.compiles[next(c for c in trace.compiles if c is not None)]
    checked = 0
    for section in sections:
        code = next(a for a in entry.artifacts if a.number == section["artifacts"]["code"])
        lines = trace.payload_text(code.payload).split("\n")
        kernels = _cpp_kernels(lines)
        assert kernels, section["title"]
        post = next(a for a in entry.artifacts if a.number == section["artifacts"]["post"])
        post_lines = trace.payload_text(post.payload).split("\n")
        by_kernel = {k["kernel"]: k for k in section["kernels"]}
        for kernel in kernels:
            # Where the wrapper calls the kernel, and the post-grad nodes that line maps to.
            calls = [int(n) for n, names in section["codeKernels"].items() if any(x.split(":")[0] == kernel for x in names)]
            assert calls, kernel
            nodes = {p for n in calls for key in ("pyCodeToPost", "inferredCodeToPost") for p in section[key].get(str(n), [])}
            assert nodes, kernel
            assert all(" = torch.ops." in post_lines[p - 1] for p in nodes), (kernel, nodes)
            for n in calls:
                assert lines[n - 1].strip().startswith(kernel + "(")
            # ... and the user's source line it came from.
            (user,) = by_kernel[kernel]["user_lines"]
            assert user["file"].endswith(USER_FILE) and user["line"] == 24
            assert user["code"] == "return torch.relu(self.lin(x))"
            checked += 1
    assert checked == 3  # forward: relu+threshold; backward: threshold_backward, sum


def test_forward_uses_torchs_mappings_backward_is_inferred(tmp_path):
    doc = our_line_mappings(torch213("provenance.log"), tmp_path / "out")["-_0_0_0"]
    fwd, bwd = doc["sections"]
    assert fwd["pyCodeToPost"] == {"85": [5], "91": [6, 7]}  # addmm; relu + le
    assert fwd["preToPost"] == {"8": [4, 5], "9": [6]} and fwd["inferredCodeToPost"] == {}
    # torch 2.13 logs no node mappings for the backward: inferred from the user line, named ops first.
    assert bwd["pyCodeToPost"] == {}
    assert bwd["inferredCodeToPost"]["119"] == [7]  # extern_kernels.mm -> mm
    assert bwd["inferredCodeToPost"]["123"] == [8]  # cpp_fused_sum_1 -> sum_1
    assert 5 in bwd["inferredCodeToPost"]["113"]  # cpp_fused_threshold_backward_0 -> where (among the rest)


def test_a_graph_the_log_lacks_says_so_in_its_panel(tmp_path):
    """The real log less its pre-grad graph record (as compiled autograd's backward graphs reach Inductor without
    one): the panel says the graph is not in the log, instead of standing empty."""
    from ..conftest import run_cli

    lines = torch213("provenance.log").read_bytes().split(b"\n")
    start = next(i for i, line in enumerate(lines) if b'"name": "before_pre_grad_graph"' in line)
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(b"\t"))
    log = tmp_path / "no_pre_grad.log"
    log.write_bytes(b"\n".join(lines[:start] + lines[end:]))
    assert run_cli(log, "-o", tmp_path / "out", "--no-browser") == 0
    page = (tmp_path / "out" / "provenance" / "-_0_0_0.html").read_text()
    # The forward's section and the backward's, which shows the same pre-grad graph.
    assert page.count('<p class="muted prov-missing">pre-grad graph (not in the log)</p>') == 2
    assert page.count("prov-missing") == 3  # those, and the style

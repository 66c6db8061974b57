"""numerics on an older torch's log (a peer log of a two-rank fp16 CUDA program, test2.py, not in this repo), which
names its post-grad graph after_post_grad_graph: the fp16 ops Inductor fused in float32 are named, the collectives
between them (kernels of their own) are not. Expected values are read from the raw log."""

from __future__ import annotations

import re

import pytest

from compilescope.analyses.numerics import numerics
from compilescope.ingest.reader import read_trace

from ..conftest import shared
from ..tracelog import graph_nodes, raw_records

LOG = "peer-tlparse/graph_exec_order_tests/dedicated_log_torch_trace_rank_0_a74od7a1.log"
_SITE = re.compile(r"# File: .*/test2\.py:(\d+) in \w+")
_NODE = re.compile(r'^\s+\w+: "(\w+)\[.*= torch\.ops\.(\w+)\.(\w+)\.')


def test_an_older_torchs_post_grad_graph_is_read_and_collectives_are_not_fused_ops():
    log = shared(LOG)
    records = raw_records(log)
    names = {env.get("artifact", {}).get("name") for env, _ in records}
    assert "after_post_grad_graph" in names and "inductor_post_grad_graph" not in names
    graphs = graph_nodes(records, "after_post_grad_graph", _SITE, _NODE)  # (line, dtype, namespace, op)
    # [0/1]: `g = gathered * math.sqrt(0.5)` (line 66) and `out = g + rs_expanded` (line 78) are fp16 aten ops, one
    # feeding the other, which Inductor fused into one kernel computing in float32 (triton_poi_fused_add_mul_repeat_2:
    # `tmp2 = tmp0 * tmp1; tmp4 = tmp2 + tmp3`, tmp0 loaded .to(tl.float32)), where eager rounds g to fp16.
    f16_aten = [(line, op) for line, dtype, ns, op in graphs["[0/1]"] if dtype == "f16" and ns == "aten"]
    assert (66, "mul") in f16_aten and (78, "add") in f16_aten
    output_code = "\n".join(payload for env, payload in records if "inductor_output_code" in env)
    kernel = output_code[output_code.index("def triton_poi_fused_add_mul_repeat_"):][:1000]
    assert "tmp2 = tmp0 * tmp1" in kernel and "tmp4 = tmp2 + tmp3" in kernel and ".to(tl.float32)" in kernel
    # The fp16 collectives (all_reduce_, wait_tensor, all_gather_into_tensor, reduce_scatter_tensor) run as kernels of
    # their own on values already rounded, as in eager: they were named as fused fp16 ops, with the casts feeding them
    collective_lines = sorted({line for nodes in graphs.values() for line, dtype, ns, _ in nodes
                               if ns == "_c10d_functional" and dtype == "f16"})
    assert collective_lines == [48, 49, 58, 59, 69, 70, 91, 92]

    with read_trace(str(log)) as trace:
        num = numerics(trace)
    assert not num.random  # no inductor_random in any graph
    assert not any(op.startswith("inductor_rand") for nodes in graphs.values() for *_, op in nodes)
    assert [(p.location.line, p.location.code, p.ops, p.dtype, p.compile_ids) for p in num.precision] == [
        (66, "g = gathered * math.sqrt(0.5)", ["mul"], "float16", ["[0/1]"]),
        (78, "out = g + rs_expanded", ["add"], "float16", ["[0/1]"]),
    ]


@pytest.mark.parametrize("namespace", ["c10d_functional", "_c10d_functional_autograd"])
def test_collectives_of_torchs_other_functional_namespaces_are_not_fused_ops(tmp_path, namespace):
    """torch registers functional collectives under two more namespaces (torch/distributed/_functional_collectives.py:
    the legacy c10d_functional, and _c10d_functional_autograd's all_reduce, all_gather_into_tensor,
    reduce_scatter_tensor, all_to_all_single). The peer logs call only _c10d_functional; the same log with its
    collectives named in another of them still has only the two fused fp16 lines, not the collectives' eight."""
    from ..robustness.corpus import envelope_indices, fix_md5, lines_of

    lines = lines_of(shared(LOG).read_bytes().replace(b"torch.ops._c10d_functional.",
                                                      f"torch.ops.{namespace}.".encode()))
    for i in envelope_indices(lines):
        if b'"has_payload"' in lines[i]:
            fix_md5(lines, i)
    renamed = tmp_path / "renamed.log"
    renamed.write_bytes(b"".join(lines))
    assert f"torch.ops.{namespace}.all_reduce_" in renamed.read_text()
    with read_trace(str(renamed)) as trace:
        num = numerics(trace)
    assert [(p.location.line, p.ops) for p in num.precision] == [(66, ["mul"]), (78, ["add"])]

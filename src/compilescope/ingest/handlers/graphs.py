"""Graphs and generated code: each becomes an artifact of its compile id."""

from __future__ import annotations

import os

from ...model.builder import TraceBuilder
from ...model.trace import CODE, TEXT
from ..envelope import Envelope
from .registry import handles, handles_prefix

# Kinds whose payload is a graph printed as text, shown as-is.
GRAPH_KINDS = (
    "dynamo_output_graph",
    "optimize_ddp_split_graph",
    "compiled_autograd_graph",
    "aot_forward_graph",
    "aot_backward_graph",
    "aot_inference_graph",
    "aot_joint_graph",
    "inductor_pre_grad_graph",
    "inductor_post_grad_graph",
    "dynamo_cpp_guards_str",
    "exported_program",
    "export",  # torch.export's start marker (TORCH_DTRACE), no program
    "aot_forward_graph_pre_saved_tensors_hooks",
    "aot_forward_graph_pre_assert_saved_tensors_hooks",
    "aot_backward_graph_pre_saved_tensors_hooks",
    "aot_backward_graph_pre_assert_saved_tensors_hooks",
)


@handles(*GRAPH_KINDS)
@handles_prefix("aot_saved_tensors_hooks_")  # "aot_saved_tensors_hooks_pack <name>" and unpack
def graph_text(env: Envelope, b: TraceBuilder) -> bool:
    b.add_artifact(env.compile_id, env.lineno, kind=env.kind, name=env.kind, ext="txt", display=TEXT, payload=env.stored_payload)
    return True


@handles("optimize_ddp_split_child")
def ddp_split_child(env: Envelope, b: TraceBuilder) -> bool:
    name = env.metadata.get("name", "") if isinstance(env.metadata, dict) else ""
    b.add_artifact(
        env.compile_id, env.lineno, kind=env.kind, name=f"optimize_ddp_split_child_{name}", ext="txt", display=TEXT,
        payload=env.stored_payload,
    )
    return True


@handles("graph_dump")
def graph_dump(env: Envelope, b: TraceBuilder) -> bool:
    name = str(env.metadata.get("name", "graph_dump")) if isinstance(env.metadata, dict) else "graph_dump"
    # AOTInductor's C++ wrapper arrives as a graph_dump named *_code. tlparse names every graph_dump
    # .txt, so it is written as the text it is: an HTML page in a .txt file is neither.
    is_code = name.endswith("_code")
    b.add_artifact(
        env.compile_id, env.lineno, kind=env.kind, name=name, ext="txt", display=TEXT,
        payload=env.stored_payload, language="cpp" if is_code else None,
    )
    return True


@handles("inductor_output_code")
def inductor_output_code(env: Envelope, b: TraceBuilder) -> bool:
    filename = env.metadata.get("filename") if isinstance(env.metadata, dict) else None
    stem = os.path.splitext(os.path.basename(str(filename)))[0] if filename else ""
    name = f"inductor_output_code_{stem}" if stem else "inductor_output_code"
    language = "cpp" if filename and str(filename).endswith((".cpp", ".h")) else "python"
    b.add_artifact(
        env.compile_id, env.lineno, kind=env.kind, name=name, ext="html", display=CODE,
        payload=env.stored_payload, language=language, data={"filename": filename},
    )
    return True

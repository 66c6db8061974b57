"""Shared by the provenance tests: run both tools, read their line mappings, write synthetic logs."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..conftest import report, tlparse_binary
from ..tracelog import cid, envelope

MAP_KEYS = ("preToPost", "postToPre", "pyCodeToPost", "postToPyCode", "cppCodeToPost", "postToCppCode")
_LINE_MAPPINGS = re.compile(r'<script id="lineMappings" type="application/json">(.*?)</script>', re.S)


def tlparse_line_mappings(log: Path, out: Path) -> dict[str, dict]:
    """tlparse 0.4.3 -i: compile directory -> the lineMappings JSON of its provenance_tracking page."""
    subprocess.run([tlparse_binary(), str(log), "-o", str(out), "--no-browser", "-i"], check=True, capture_output=True)
    found = {}
    for page in out.glob("provenance_tracking_*.html"):
        m = _LINE_MAPPINGS.search(page.read_text())
        assert m, page
        found[page.name[len("provenance_tracking_"):-len(".html")]] = json.loads(m.group(1))
    return found


def our_line_mappings(log: Path, out: Path) -> dict[str, dict]:
    """compilescope: compile directory -> provenance/<dir>.json."""
    report(log, out)
    return {p.stem: json.loads(p.read_text()) for p in (out / "provenance").glob("*.json")}


def artifact(name: str, payload: str, encoding: str = "string", frame: int = 0) -> str:
    return envelope({"artifact": {"name": name, "encoding": encoding}, **cid(frame)}, payload)


def output_code(payload: str, frame: int = 0) -> str:
    return envelope({"inductor_output_code": {"filename": "/tmp/torchinductor/ab/cabc.py"}, **cid(frame)}, payload)


PRE_GRAD = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4][1]cpu"):
        l_x_ = L_x_
        # File: /home/me/prog.py:7 in forward, code: y = x.relu()
        y: "f32[4][1]cpu" = l_x_.relu();  l_x_ = None
        return (y,)
"""

POST_GRAD = """class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4][1]cpu"):
        # File: /home/me/prog.py:7 in forward, code: y = x.relu()
        relu: "f32[4][1]cpu" = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None
        return (relu,)
"""


def python_code(kernel_call: str, first_line: str = "# AOT ID: ['0_inference']") -> str:
    return f"""{first_line}
import torch
cpp_fused_relu_0 = async_compile.cpp_pybinding(['float*'], r'''
extern "C" void kernel(float* p) {{}}
''')

def call(args):
    arg0_1, = args
    buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
    # [Provenance debug handles] {kernel_call}:1
    {kernel_call}(arg0_1, buf0)
    return (buf0, )
"""


def provenance_log(code: str, kernel: str, traces: dict | None = None) -> str:
    mappings = {
        "preToPost": {"y": ["relu"]}, "postToPre": {"relu": ["y"]},
        "cppCodeToPost": {f"{kernel}:1": ["relu"]}, "postToCppCode": {"relu": [f"{kernel}:1"]}, "version": 2.0,
    }
    text = (artifact("before_pre_grad_graph", PRE_GRAD) + artifact("inductor_post_grad_graph", POST_GRAD)
            + output_code(code) + artifact("inductor_provenance_tracking_node_mappings", json.dumps(mappings), "json"))
    if traces is not None:
        text += artifact("inductor_provenance_tracking_kernel_stack_traces", json.dumps(traces), "json")
    return text


@dataclass
class RawGraph:
    """One output code of a log, read from its raw lines: what torch wrote, not what compilescope makes of it."""

    aot_id: str  # its first line's `# AOT ID: ['1_backward']`
    compile_id: str  # its record's frame_id, frame_compile_id and attempt: "[1/0]", "[0/0_1]"
    calls: list[str]  # the kernel calls its `# [Provenance debug handles]` comments name, in the code's order
    stacks: dict[str, list[str]]  # the kernel stack traces artifact logged after it (its graph's), as logged

    @staticmethod
    def line(trace: str) -> int:
        """The line of a stack trace's innermost frame."""
        return int(re.findall(r'", line (\d+)', trace)[-1])


def raw_graphs(log: Path) -> dict[str, RawGraph]:
    """Each output code of a (.gz) log by its AOT ID, with the kernel stack traces Inductor logged after it."""
    with gzip.open(log, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    graphs: dict[str, RawGraph] = {}
    last: RawGraph | None = None
    for i, line in enumerate(lines):
        if '{"inductor_output_code": ' in line:
            head = json.loads(line[line.index("] {") + 2:])
            attempt = f"_{head['attempt']}" if head.get("attempt") else ""
            code = []
            for more in lines[i + 1:]:
                if not more.startswith("\t"):
                    break
                code.append(more[1:])
            aot_id = re.match(r"# AOT ID: \['([^']*)'\]", code[0])[1]
            calls = [m[1] for c in code for m in [re.match(r"\s*# \[Provenance debug handles\] (\S+)$", c)] if m]
            last = graphs[aot_id] = RawGraph(aot_id, f"[{head['frame_id']}/{head['frame_compile_id']}{attempt}]", calls, {})
        elif '"name": "inductor_provenance_tracking_kernel_stack_traces"' in line and last is not None:
            last.stacks = json.loads(lines[i + 1][1:])
            last = None
    return graphs

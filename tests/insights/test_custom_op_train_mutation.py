"""A custom op that writes into its argument undeclared, called in a training compile (tests/data/torch213 programs/
custom_op_train_mutation.py): AOTAutograd splits the compile into a forward and a backward, and Inductor logs the
forward's output code, then the backward's. The op's call, and the read Inductor moved past it, are in the forward's;
the last output code, the backward's, calls no custom op (moved reads were looked for there, and none found). Expected
values are read from the raw log and the program, not from our output."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from compilescope.cli import main
from compilescope.ingest.reader import read_trace

from ..analysis_files import op_mutations_here
from ..conftest import line_holding, report, torch213, torch213_moved
from ..tracelog import raw_records

LOG = "custom_op_train_mutation.log.gz"
DATA = Path(__file__).parents[1] / "data" / "torch213"
PROGRAM = DATA / "programs" / "custom_op_train_mutation.py"
BEFORE = "before = buf * 1"
CALL = "scaled = scale(x, buf, 2.0)"


def _output_codes() -> list[str]:
    """The compile's output codes, in the log's order, read without compilescope."""
    return [p for e, p in raw_records(torch213(LOG)) if "inductor_output_code" in e]


def test_the_forwards_output_code_calls_the_op_then_the_kernel_reading_buf():
    """What the program printed while recorded (keep_output): the compiled loss differs from eager's. The forward's
    output code (logged first) calls mylib.scale, then the kernel that computes `before` (provenance: Dynamo's node
    `before` -> its post-grad node -> that kernel); the backward's calls no custom op."""
    printed = (DATA / "logs" / "custom_op_train_mutation.output.txt").read_text()
    assert "step: eager loss -2.3590 compiled -3.4111" in printed
    forward, backward = _output_codes()
    assert forward.lstrip().startswith("# AOT ID: ['0_forward']")
    assert backward.lstrip().startswith("# AOT ID: ['0_backward']")
    assert "torch.ops.mylib" not in backward
    mappings = [json.loads(p) for e, p in raw_records(torch213(LOG))
                if e.get("artifact", {}).get("name") == "inductor_provenance_tracking_node_mappings"]
    (before_post,) = mappings[0]["preToPost"]["before"]
    (kernel,) = [h.rsplit(":", 1)[0] for h, posts in mappings[0]["cppCodeToPost"].items() if before_post in posts]
    call = forward[forward.index("def call(self, args):"):]
    assert call.index("torch.ops.mylib.scale.default(") < call.index(f"{kernel}(")
    assert kernel == "cpp_fused_add_mul_sum_0"


def test_a_read_moved_past_a_call_in_a_training_compile_is_found_in_the_forwards_output_code(tmp_path):
    """Before, the compile's last output code (the backward's) was searched: it calls no custom op, so no read was
    said moved, and the op's finding said only what torch may do."""
    (out,) = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path))).ops
    assert out.op == "mylib::scale"
    assert [(c.compile_id, c.location.line, [(m.location.line, m.kernel) for m in c.moved_reads], c.unplaced)
            for c in out.calls] == [
        ("[0/0]", line_holding(PROGRAM, CALL), [(line_holding(PROGRAM, BEFORE), "cpp_fused_add_mul_sum_0")], False)]
    assert f"{PROGRAM.name}:{line_holding(PROGRAM, BEFORE)} ({BEFORE})" in out.why


def test_summary_and_report_name_the_moved_read(tmp_path, capsys):
    log = torch213_moved(LOG, tmp_path)
    capsys.readouterr()
    assert main(["summary", "--json", str(log)]) == 0
    (op,) = json.loads(capsys.readouterr().out)["custom_op_mutations"]["ops"]
    assert [r["location"]["line"] for c in op["calls"] for r in c["moved_reads"]] == [line_holding(PROGRAM, BEFORE)]
    report(log, tmp_path / "report")
    index = html.unescape((tmp_path / "report" / "index.html").read_text())
    table = index[index.index('<table class="op-mutations">'):]
    table = table[:table.index("</table>")]
    assert re.search(rf"{PROGRAM.name}:{line_holding(PROGRAM, BEFORE)} \({re.escape(BEFORE)}\)", table)

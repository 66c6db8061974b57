"""The moved reads of a custom op's undeclared write (op_mutations.moved_reads) on hostile output code and graphs
derived from the torch 2.13 fixture (tests/data/torch213/logs/custom_op_mutation.log.gz): blank lines, many calls,
a call repeated. Its output code calls mylib.scale, then cpp_fused_add_mul_0, the kernel of Dynamo's `shifted = x + 1`
(provenance: handle cpp_fused_add_mul_0:2), which Dynamo's graph computes before the call."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compilescope.analyses import op_mutations as module

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
    (module._WRAPPER_CALL, "    def call(self, args):"),
    (module._SOURCE_NODES, "        # Topologically Sorted Source Nodes: [shifted, mul], Original ATen: [aten.add]"),
    (module._CALLED, "        cpp_fused_add_mul_0(buf2, arg0_1)"),
])
def test_each_wrapper_pattern_matches_within_its_own_line(pattern, text):
    """Under re.M a leading `^\\s*` spans newlines: from each of n blank lines it ran to the end of the run, n^2 in all
    (80k blank lines: 12 s for one search). A match starts on its own line."""
    found = pattern.search("\n" * 3 + text)
    assert found is not None and "\n" not in found.group()


def test_a_kernels_call_is_found_on_its_own_line():
    assert module._called_at("\n\n        k.run(buf0)", "k") == 2


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

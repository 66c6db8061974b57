"""A 100 MB payload is streamed: from the log to the report, memory stays far below its size.

The log is generated into tmp_path at test time (never committed). The report is
written by the CLI in a child process, which then prints its own peak resident set
size, so nothing else in the test run is counted.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .corpus import huge_payload_log

PAYLOAD = 100 << 20
# Python with orjson, Jinja and the report code is ~40 MB; a payload held in
# memory even once would add 100 MB, the old code held it ~4 times.
PEAK_LIMIT = 100 << 20

# The peak of this process's own memory: VmHWM. (ru_maxrss is no good here: Linux keeps it across
# exec, so it would report the size of the pytest worker that forked the child.)
CHILD = """
import sys
from compilescope.cli import main
rc = main(sys.argv[1:])
with open("/proc/self/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print("PEAK", hwm * 1024)
sys.exit(rc)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_100mb_payload_streams_with_bounded_memory(tmp_path):
    log = tmp_path / "huge.log"
    n_lines = huge_payload_log(log, PAYLOAD)
    assert log.stat().st_size > PAYLOAD
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(log), "-o", str(out), "--no-browser", "--strict"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    peak = int(result.stdout.split("PEAK")[1].split()[0])
    assert peak < PEAK_LIMIT, f"peak memory {peak >> 20} MB for a {PAYLOAD >> 20} MB payload\n{result.stdout[-2000:]}\n{result.stderr}"

    # Everything is there: the code page has every line (shown without colours), raw.log is whole.
    directory = json.loads((out / "compile_directory.json").read_text())
    (code,) = [a for a in directory["[0/0]"]["artifacts"] if a["name"].startswith("inductor_output_code")]
    page = out / code["url"]
    assert page.stat().st_size > PAYLOAD
    body = page.read_bytes()
    assert b"shown without syntax highlighting" in body[:20_000]
    # The gutter numbers every line, and no more.
    assert f'<a id="L{n_lines}"'.encode() in body and f'<a id="L{n_lines + 1}"'.encode() not in body
    assert (out / "raw.log").stat().st_size == log.stat().st_size


def test_a_payload_is_searched_across_its_chunks_without_decoding_it():
    # user_kernels tests each output code for its marker before decoding it: a marker cut by a chunk's end is found,
    # one not there is not (the 100 MB payload above holds none, so it is never decoded).
    from types import SimpleNamespace

    from compilescope.model.trace import Trace

    def store(*chunks: bytes) -> SimpleNamespace:
        return SimpleNamespace(payload_chunks=lambda ref: iter(chunks))

    marker = b"custom_kernel=True"
    assert Trace.payload_contains(store(b"x" * 10 + b"custom_ker", b"nel=True, y"), object(), marker)
    assert Trace.payload_contains(store(b"c", b"ustom_kernel", b"=", b"True"), object(), marker)
    assert not Trace.payload_contains(store(b"custom_kernel=Tru", b"e"[:0], b"x custom_kernel=False"), object(), marker)
    assert not Trace.payload_contains(store(b"anything"), None, marker)

"""The user's Triton kernels read from untrusted output code (analyses/user_kernels.py): a path that is no file's, a
kernel left unclosed, thousands of kernels. Each command runs in a child process bounded in time and memory (as in
test_round_two): a regression fails, never hangs the suite."""

from __future__ import annotations

import json
import re

from compilescope.analyses.user_kernels import _MAX_SOURCE_BYTES

from ..conftest import CUDA211_LOGS, line_holding
from ..user_kernel_logs import raw_text, rewritten, with_copies
from .hostile_files import local_files
from .test_round_two import compilescope, run_python

PROGRAM = CUDA211_LOGS.parent / "programs" / "user_triton_kernel.py"
_ORIGINAL_PATH = re.compile(r"# Original path: \S+/user_triton_kernel\.py:(\d+)\n")


def _user_kernels(log) -> list[dict]:
    r = compilescope("summary", "--json", log)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    return json.loads(r.stdout)["user_kernels"]["kernels"]


def test_a_nul_byte_in_the_kernels_path_leaves_it_at_torchs_line(tmp_path):
    # torch's "# Original path: <program>:20" above the kernel in both compiles' code; os.stat refuses a path holding a
    # NUL byte (ValueError): report, summary and check failed with an internal error (exit 3)
    (decorator,) = set(_ORIGINAL_PATH.findall(raw_text()))
    log = rewritten(tmp_path, lambda p: _ORIGINAL_PATH.sub(lambda m: f"# Original path: /tmp/a\0b.py:{m[1]}\n", p))
    kernels = _user_kernels(log)
    assert [(k["compile_id"], k["defined_at"]["filename"], k["defined_at"]["line"], k["decorator_line"])
            for k in kernels] == [(cid, "/tmp/a\0b.py", int(decorator), int(decorator)) for cid in ("[0/0]", "[0/1]")]
    for args in (("check", log, "--user-kernel", "scaled_add_kernel"), (log, "-o", tmp_path / "r", "--no-browser")):
        r = compilescope(*args)
        assert r.returncode == 0 and b"internal error" not in r.stderr, r.stderr.decode(errors="replace")[-2000:]


def test_the_kernels_file_is_read_only_where_it_is_a_regular_file_of_bounded_size(tmp_path):
    # The log names the file; this machine's may be anything by that name. A FIFO's open waits for a writer (forever),
    # /dev/zero never ends, a directory cannot be read. The program, copied, is read (its def is the line after torch's).
    text = "def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):"
    def_at = line_holding(PROGRAM, "def scaled_add_kernel(")
    local_files(tmp_path, PROGRAM, _MAX_SOURCE_BYTES + 1)
    code = f"""
import shutil
from compilescope.analyses import user_kernels as uk
from compilescope.ingest.source_files import read_source_files
d = {str(tmp_path)!r}
def def_line(path):  # (as analyze() reads the file: ingest, before the analysis)
    return uk.def_line(path, {def_at - 1}, {text!r}, read_source_files([path]))
assert def_line(d + '/copy.py') == {def_at}
for name in ('fifo.py', 'folder.py', 'zero.py', 'huge.py', 'gone.py', 'a\\0b.py'):
    assert def_line(d + '/' + name) is None, name
# what is opened is checked, not what a stat said before (location.read_local_bytes reads at most the bound plus one)
shutil.copy({str(PROGRAM)!r}, d + '/grown.py')
with open(d + '/grown.py', 'ab') as f:
    f.truncate(uk._MAX_SOURCE_BYTES + 1)
assert def_line(d + '/grown.py') is None
"""
    run_python(code)


def test_kernels_left_unclosed_cost_one_search_each(tmp_path):
    # 20,000 openers of a kernel after the code's last closing "''', " line: the pattern spanning a kernel's body tried
    # each against the rest of the code (8,000: 9 s; in a log, 16,000 took summary 118 s). Before them, one line holding
    # an opener's start 300,000 times (no opener: one is a whole line), looked at once. The real kernel is still read.
    (code,) = {p for p in re.findall(r'"inductor_output_code".*?\n((?:\t[^\n]*\n)+)', raw_text())
               if "scaled_add_kernel_0 = async_compile" in p and "4096, 0.5" in p}
    source = tmp_path / "code.py"
    source.write_text("".join(line[1:] + "\n" for line in code.splitlines())
                      + "x = async_compile.triton('" * 300_000 + "\n"
                      + "".join(f"k{i} = async_compile.triton('k', '''\n" for i in range(20_000)))
    run_python(f"""
from compilescope.analyses.user_kernels import definitions
found = definitions(open({str(source)!r}).read())
assert [(d.var, d.name, d.calls, d.line) for d in found] == [
    ('scaled_add_kernel_0', 'scaled_add_kernel', ['scaled_add_kernel_0:2'], {line_holding(PROGRAM, "def scaled_add_kernel(") - 1})], found
""")
    openers = "".join(f"x{i} = async_compile.triton('scaled_add_kernel', '''\n" for i in range(16_000))
    done = []

    def unclosed(payload: str) -> str:
        if done or "scaled_add_kernel_0 = async_compile" not in payload:
            return payload
        done.append(True)
        return payload + "\n" + openers
    kernels = _user_kernels(rewritten(tmp_path, unclosed))
    assert done and [(k["compile_id"], k["code_name"], k["calls"]) for k in kernels] == [
        ("[0/0]", "scaled_add_kernel_0", ["scaled_add_kernel_0:2"]), ("[0/1]", "scaled_add_kernel_0", ["scaled_add_kernel_0:2"])]


def test_thousands_of_kernels_in_one_compile_are_read_in_one_pass(tmp_path):
    # 2,000 copies of the user's kernel in [0/0]'s code: per kernel, its calls were searched for in all the code and the
    # node mappings decoded again (1,000: 53 s), on summary, check and the report's kernel pages alike.
    copies = 2_000
    log = with_copies(tmp_path, copies)
    kernels = _user_kernels(log)
    launch = line_holding(PROGRAM, "launch[(triton.cdiv(n, 1024),)]")
    assert [(k["compile_id"], k["code_name"], k["calls"], [u["line"] for u in k["launched_at"]],
             [a["value"] for a in k["arguments"]]) for k in kernels] == (
        [("[0/0]", "scaled_add_kernel_0", ["scaled_add_kernel_0:2"], [launch], ["4096", "0.5"])]
        + [("[0/0]", f"scaled_add_kernel_{i}", [f"scaled_add_kernel_{i}:{100 + i}"], [], ["4096", "0.5"])
           for i in range(1, copies + 1)]
        + [("[0/1]", "scaled_add_kernel_0", ["scaled_add_kernel_0:2"], [launch], ["s77", "0.5"])])
    r = compilescope(log, "-o", tmp_path / "r", "--no-browser")
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    r = compilescope("check", log, "--user-kernel", "scaled_add_kernel", "--json")
    assert r.returncode == 0 and f"[0/0] ({copies + 1} times), [0/1] (n symbolic)".encode() in r.stdout, r.stdout[-2000:]


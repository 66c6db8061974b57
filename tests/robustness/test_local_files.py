"""A user's source file read from this machine by the path a log names (location.read_local_lines; ingest/source_files
reads the analyses' files with read_local_bytes beneath it): the source pages (analyses/sources.py) and the user's Triton
kernels' def lines (analyses/user_kernels.py) take it from there.
Whatever is at the path, a FIFO, /dev/zero, a directory, a huge file, or a path holding a NUL byte, is refused, never
waited on or read without end. In a child process bounded in time and memory (as in test_round_two): a regression
fails, never hangs the suite."""

from __future__ import annotations

import gzip
import re

from compilescope.model.source_files import MAX_SOURCE_BYTES
from compilescope.ingest.stderr import MAX_LINE

from ..conftest import CUDA211_LOGS, TORCH213_LOGS, cuda211, shared
from .hostile_files import local_files
from .test_round_two import run_python

PROGRAM = CUDA211_LOGS.parent / "programs" / "user_triton_kernel.py"
PARTS = TORCH213_LOGS.parent / "export_dtrace_parts"  # one process's log in parts (tests/data/torch213/README.md)


def test_only_a_regular_file_within_the_bound_is_read_by_the_pages_and_the_kernels_alike(tmp_path):
    local_files(tmp_path, PROGRAM, MAX_SOURCE_BYTES + 1)
    run_python(f"""
from compilescope import location
from compilescope.analyses import user_kernels
from compilescope.analyses.sources import file_text
from compilescope.ingest.source_files import read_source_files
d = {str(tmp_path)!r}
program = open({str(PROGRAM)!r}, encoding='utf-8').read().splitlines()
assert location.read_local_lines(d + '/copy.py', file_text.MAX_SOURCE_BYTES) == (tuple(program), '')
refused = {{name: location.read_local_lines(d + '/' + name, file_text.MAX_SOURCE_BYTES)
            for name in ('fifo.py', 'folder.py', 'zero.py', 'huge.py', 'gone.py', 'a\\0b.py', 'copy.py/x.py')}}
assert refused == {{'fifo.py': (None, location.NOT_A_FILE), 'folder.py': (None, location.NOT_A_FILE),
                    'zero.py': (None, location.NOT_A_FILE), 'huge.py': (None, location.TOO_BIG),
                    'gone.py': (None, location.NOT_HERE), 'a\\0b.py': (None, location.NOT_HERE),
                    'copy.py/x.py': (None, location.NOT_HERE)}}, refused
# the bound is the caller's: the kernels' is twice the pages'
assert location.read_local_lines(d + '/huge.py', user_kernels._MAX_SOURCE_BYTES).lines == ('\\0' * (file_text.MAX_SOURCE_BYTES + 1),)
# the source pages say why, each in its words; a file whose lines agree with the log's quotes is read (by ingest, as
# analyze() reads the pages' files: ingest/source_files, read_local_bytes beneath)
quoted = {{1: program[0].strip()}}
assert file_text.read_disk(d + '/copy.py', quoted, read_source_files([d + '/copy.py']))[0] == program
said = {{name: file_text.read_disk(d + '/' + name, quoted, read_source_files([d + '/' + name])) for name in ('fifo.py', 'folder.py', 'zero.py', 'huge.py', 'gone.py', 'a\\0b.py')}}
assert said == {{'fifo.py': (None, 'the path on this machine is not a regular file'),
                 'folder.py': (None, 'the path on this machine is not a regular file'),
                 'zero.py': (None, 'the path on this machine is not a regular file'),
                 'huge.py': (None, 'the file on this machine is too big to show'),
                 'gone.py': (None, 'the file is not on this machine'), 'a\\0b.py': (None, 'the file is not on this machine')}}, said
""")


# The files a run directory holds beside its log, read by ingest: found by a listing or a stat, then opened, so a FIFO
# put in a file's place in between (or a path given as one) must be refused at the open, not waited on.

def test_a_saved_stderr_is_read_only_as_a_regular_file_a_line_at_most_max_line_at_a_time(tmp_path):
    # profile_compiled's output.txt: torch's two UserWarnings (TF32 in compile_fx.py, the profiler's in profiler.py)
    # among the program's own output, read here from the raw text
    original = shared("gpu-torch211/profile_compiled/output.txt")
    raw = original.read_text(encoding="utf-8").splitlines()
    warned = [m for line in raw if (m := re.match(r"/\S*/(torch/\S+?):(\d+): (\w+Warning): (.*)", line))]
    expected = [(f"{m[1]}:{m[2]}", m[3], m[4]) for m in warned]
    assert [source for source, _, _ in expected] == ["torch/_inductor/compile_fx.py:322",
                                                     "torch/profiler/profiler.py:224"]
    # the first warning's line made 2 * MAX_LINE long and the second's written on after it: were the rest of a long
    # line read as lines of its own, the second would be a record twice
    first, second = warned[0][0], warned[1][0]
    (tmp_path / "long.txt").write_text(first.ljust(2 * MAX_LINE, "x") + second + "\n" + second + "\n")
    local_files(tmp_path, original, 256 << 20, ".txt")
    run_python(f"""
import resource
from compilescope.ingest.stderr import read_stderr_warnings
d = {str(tmp_path)!r}
said = lambda name: [(r['source'], r['category'], r['message']) for r in read_stderr_warnings(d + '/' + name)]
assert said('copy.txt') == {expected!r}, said('copy.txt')
assert said('long.txt') == [{expected[0][:2]!r} + ({first.ljust(MAX_LINE, "x").split(": UserWarning: ", 1)[1]!r},),
                            {expected[1]!r}], said('long.txt')
for name in ('fifo.txt', 'folder.txt', 'zero.txt', 'gone.txt'):
    try:
        read_stderr_warnings(d + '/' + name)
    except OSError:  # (reader._read_stderr_beside passes over the file)
        continue
    raise AssertionError(name + ' was read')
# one line of 256 MiB (no newline), read with 64 MiB more memory than now: never held whole
now = int(next(line for line in open('/proc/self/status') if line.startswith('VmSize:')).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (now + (64 << 20), resource.getrlimit(resource.RLIMIT_AS)[1]))
assert said('huge.txt') == []
""")


def test_a_logs_head_is_read_only_from_a_regular_file(tmp_path):
    """crash_files.first_pid (whose crash file a log's is) and discover's readers of a log's head (is it a trace,
    which process wrote it, its first string's number): a draft_export part, whose first `str` is numbered 46."""
    original = tmp_path / "part.log"
    original.write_bytes(gzip.decompress((PARTS / "dedicated_log_torch_trace_3w2uyaa8.log.gz").read_bytes()))
    text = original.read_text(encoding="utf-8")
    pid = int(re.match(r"[VIWEC]\d{4} [\d:.]+ +(\d+) ", text)[1])
    number = int(re.search(r'\{"str": \["(?:[^"\\]|\\.)*", (\d+)\]', text)[1])
    assert number == 46
    local_files(tmp_path, original, 4 << 20, ".log")
    run_python(f"""
from compilescope.ingest import discover
from compilescope.ingest.crash_files import first_pid
d = {str(tmp_path)!r}
assert first_pid(d + '/copy.log') == {pid}
assert discover._starts_like_a_trace(d + '/copy.log')
assert discover._first_record(d + '/copy.log')[::2] == ({pid}, {number})
assert discover._first_string_number(d + '/copy.log') == {number}
for name in ('fifo.log', 'folder.log', 'zero.log', 'gone.log', 'huge.log'):
    assert first_pid(d + '/' + name) is None, name
    assert not discover._starts_like_a_trace(d + '/' + name), name
    assert discover._first_record(d + '/' + name) is None, name
    # (0: not read, so not joined to another log; huge holds no str record)
    assert discover._first_string_number(d + '/' + name) == (None if name == 'huge.log' else 0), name
""")


def test_a_profile_is_read_only_from_a_regular_file(tmp_path):
    """ingest/profile.read_profile, of a --profile or of the profile found beside a log (profile_beside): capture()'s
    real profile, and a file of NULs bigger than the bound read up to it only."""
    original = cuda211("capture_profile.profile.json.gz")
    local_files(tmp_path, original, 2 << 20, ".json.gz")
    run_python(f"""
from compilescope.errors import CompilescopeError
from compilescope.ingest.profile import read_profile
d = {str(tmp_path)!r}
assert len(read_profile(d + '/copy.json.gz').events) == len(read_profile({str(original)!r}).events) > 0
said = {{}}
for name in ('fifo.json.gz', 'folder.json.gz', 'zero.json.gz', 'gone.json.gz', 'huge.json.gz'):
    try:
        read_profile(d + '/' + name, max_bytes=1 << 20)
    except CompilescopeError as e:
        said[name] = str(e).replace(d + '/', '')
refused = 'cannot read profile {{}}: not a regular file'
assert said == {{'fifo.json.gz': refused.format('fifo.json.gz'), 'folder.json.gz': refused.format('folder.json.gz'),
                 'zero.json.gz': refused.format('zero.json.gz'),
                 'gone.json.gz': 'cannot read profile gone.json.gz: No such file or directory',
                 'huge.json.gz': 'huge.json.gz: not a torch.profiler Chrome trace (no traceEvents list; read stopped '
                                 'early: larger than 1,048,576 bytes (the rest is not read))'}}, said
""")

"""A user's source file read from this machine by the path a log names (location.read_local_lines): the source pages
(analyses/sources.py) and the user's Triton kernels' def lines (analyses/user_kernels.py) read it by that one function.
Whatever is at the path, a FIFO, /dev/zero, a directory, a huge file, or a path holding a NUL byte, is refused, never
waited on or read without end. In a child process bounded in time and memory (as in test_round_two): a regression
fails, never hangs the suite."""

from __future__ import annotations

from compilescope.analyses.sources import MAX_SOURCE_BYTES

from ..conftest import CUDA211_LOGS
from .hostile_files import local_files
from .test_round_two import run_python

PROGRAM = CUDA211_LOGS.parent / "programs" / "user_triton_kernel.py"


def test_only_a_regular_file_within_the_bound_is_read_by_the_pages_and_the_kernels_alike(tmp_path):
    local_files(tmp_path, PROGRAM, MAX_SOURCE_BYTES + 1)
    run_python(f"""
from compilescope import location
from compilescope.analyses import sources, user_kernels
d = {str(tmp_path)!r}
program = open({str(PROGRAM)!r}, encoding='utf-8').read().splitlines()
assert location.read_local_lines(d + '/copy.py', sources.MAX_SOURCE_BYTES) == (tuple(program), '')
refused = {{name: location.read_local_lines(d + '/' + name, sources.MAX_SOURCE_BYTES)
            for name in ('fifo.py', 'folder.py', 'zero.py', 'huge.py', 'gone.py', 'a\\0b.py', 'copy.py/x.py')}}
assert refused == {{'fifo.py': (None, location.NOT_A_FILE), 'folder.py': (None, location.NOT_A_FILE),
                    'zero.py': (None, location.NOT_A_FILE), 'huge.py': (None, location.TOO_BIG),
                    'gone.py': (None, location.NOT_HERE), 'a\\0b.py': (None, location.NOT_HERE),
                    'copy.py/x.py': (None, location.NOT_HERE)}}, refused
# the bound is the caller's: the kernels' is twice the pages'
assert location.read_local_lines(d + '/huge.py', user_kernels._MAX_SOURCE_BYTES).lines == ('\\0' * (sources.MAX_SOURCE_BYTES + 1),)
# the source pages say why, each in its words; a file whose lines agree with the log's quotes is read
quoted = {{1: program[0].strip()}}
assert sources._read_disk(d + '/copy.py', quoted)[0] == program
said = {{name: sources._read_disk(d + '/' + name, quoted) for name in ('fifo.py', 'folder.py', 'zero.py', 'huge.py', 'gone.py', 'a\\0b.py')}}
assert said == {{'fifo.py': (None, 'the path on this machine is not a regular file'),
                 'folder.py': (None, 'the path on this machine is not a regular file'),
                 'zero.py': (None, 'the path on this machine is not a regular file'),
                 'huge.py': (None, 'the file on this machine is too big to show'),
                 'gone.py': (None, 'the file is not on this machine'), 'a\\0b.py': (None, 'the file is not on this machine')}}, said
""")

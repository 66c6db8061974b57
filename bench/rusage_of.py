"""Run one command and print what it cost: wall seconds, user seconds, system seconds, peak RSS (KB), exit code.

    python -S bench/rusage_of.py COMMAND [ARG...]

bench/run.py measures every command through this small process, not by spawning it itself, because a process's
peak RSS starts at that of the process that spawned it: Linux carries the old address space's high-water mark
into the process across exec (and a vfork'd child, as subprocess makes, runs in the spawner's own). Spawned by
run.py directly, `python -c pass` read as 72 MB once run.py held 72 MB; spawned from here it reads as its own
8.6 MB. What this process holds (about 8 MB, printed by run.py as its floor) is still counted, so a figure at the
floor means "at most that". The command's output goes to /dev/null, and the clock runs only around the command.
"""

import os
import sys
import time

command = sys.argv[1:]
quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
start = time.perf_counter()
pid = os.posix_spawnp(command[0], command, os.environ, file_actions=quiet)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
print(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status))

"""A program that starts a daemon and ends before it: crash_file_then_waits.py in a session of its own
(start_new_session, as a server or a detached worker is started), which turns on the crash recorder, writes its log
and waits. This program waits until the daemon says it traced, then ~0.5 s more (the run looks at its trace directory
every 0.1 s while the program runs, and sees the daemon as the program's then), and exits.

argv: the file the daemon's output goes to, then crash_file_then_waits.py's argv.
"""
import os
import subprocess
import sys
import time

with open(sys.argv[1], "w") as out:
    subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "crash_file_then_waits.py"),
                      *sys.argv[2:]], stdout=out, stderr=out, start_new_session=True)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    with open(sys.argv[1]) as f:
        if "traced" in f.read():
            break
    time.sleep(0.05)
time.sleep(0.5)

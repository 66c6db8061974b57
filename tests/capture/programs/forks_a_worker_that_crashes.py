"""A program that turns on the crash recorder as `compilescope run`'s child does once torch is imported
(bytecode_capture.record_crashes: faulthandler writing to compilescope_crash_<its pid>.txt in $TORCH_TRACE), then
forks a worker (os.fork, a session of its own) that outlives it: the worker inherits faulthandler and the open file
named for the program's pid. The program exits at once; the worker waits for the file argv[1], then crashes in native
code (faulthandler._sigsegv), its stack written into that file (or exits after 300 s without it).
"""
import importlib.util
import os
import sys
import time

import sitecustomize  # compilescope's (its run puts the folder first on PYTHONPATH), beside bytecode_capture.py

path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sitecustomize.__file__))), "bytecode_capture.py")
spec = importlib.util.spec_from_file_location("_compilescope_bytecode_capture", path)
capture = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = capture
spec.loader.exec_module(capture)
capture.record_crashes()
if os.fork() == 0:
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # (as a daemon does: whoever reads the program's output is not kept waiting for the worker)
        os.dup2(devnull, fd)
    deadline = time.monotonic() + 300  # (a test that failed before making the file leaves no process behind)
    while not os.path.exists(sys.argv[1]):
        if time.monotonic() > deadline:
            os._exit(1)
        time.sleep(0.05)
    import faulthandler

    faulthandler._sigsegv()
print("forked", flush=True)

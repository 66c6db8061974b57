"""capture() in a program run with `python -X faulthandler` (faulthandler already on, writing to stderr) that dies in
native code (tests/capture/test_crash.py). MODE inside: it dies inside the block; after: the block ends, and it dies
after it. It prints, as JSON lines, what faulthandler, the trace directory and this process's children are before,
inside and after the block.
Run: python -X faulthandler capture_crash_faulthandler_on.py TRACE_DIR inside|after
"""
import ctypes
import faulthandler
import json
import os
import sys

import torch

import compilescope

trace_dir, mode = sys.argv[1:]


@torch.compile(backend="eager")
def scale(x):
    return x.sin() * 2


def crash():
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def has_children() -> bool:
    """Whether this process has a child, running or exited and not yet waited for (a zombie)."""
    try:
        os.waitpid(-1, os.WNOHANG)  # (0, 0) while every child runs
    except ChildProcessError:
        return False
    return True


def state():
    return {"faulthandler": faulthandler.is_enabled(), "files": sorted(os.listdir(trace_dir)),
            "children": has_children()}


print(json.dumps({"pid": os.getpid(), "before": state()}), flush=True)
with compilescope.capture(trace_dir=trace_dir):
    scale(torch.randn(8))
    print(json.dumps({"inside": state()}), flush=True)
    if mode == "inside":
        crash()
print(json.dumps({"after": state()}), flush=True)
crash()

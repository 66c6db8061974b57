"""capture() in a process that dies of an uncaught exception raised inside the block (tests/capture/test_uncaught.py):
first a block whose ValueError the program catches (not recorded: it never reached sys.excepthook), then one that
compiles `scale` and raises a RuntimeError out of the block and the program.
Run: python capture_uncaught.py TRACE_DIR
"""
import json
import os
import sys

import torch

import compilescope

trace_dir = sys.argv[1]


@torch.compile
def scale(x):
    return x.sin() * 2


def check(x):
    if x.sum() > -1e9:
        raise RuntimeError("loss is not finite at step 3")


print(json.dumps({"pid": os.getpid()}), flush=True)
try:
    with compilescope.capture(trace_dir=trace_dir):
        raise ValueError("caught by the program")
except ValueError:
    pass
print(json.dumps({"after_caught": sorted(os.listdir(trace_dir))}), flush=True)
with compilescope.capture(trace_dir=trace_dir):
    check(scale(torch.randn(8)))
print("not reached", flush=True)

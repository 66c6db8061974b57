"""capture() in a process that dies in native code: a custom op reads address 0 while the compiled code of `scale` runs,
inside the block (tests/capture/test_crash.py). Before that, two blocks that compile nothing print what faulthandler and
the trace directory look like inside and after them: one with faulthandler already on (a tee copies a crash to the
crash file and to stderr), one without.
Run: python capture_crash.py TRACE_DIR
"""
import ctypes
import faulthandler
import json
import os
import sys

import torch

import compilescope

trace_dir = sys.argv[1]
crash = False


@torch.library.custom_op("compilescope_test::fragile_in_capture", mutates_args=())
def fragile(x: torch.Tensor) -> torch.Tensor:
    if crash:
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return x.clone()


@fragile.register_fake
def _(x):
    return torch.empty_like(x)


@torch.compile
def scale(x):
    return fragile(x.sin()) * 2


def state():
    return {"faulthandler": faulthandler.is_enabled(), "files": sorted(os.listdir(trace_dir))}


print(json.dumps({"pid": os.getpid()}), flush=True)
faulthandler.enable(file=sys.stderr)  # as `python -X faulthandler` does
with compilescope.capture(trace_dir=trace_dir):
    inside = state()
print(json.dumps({"already_on": {"inside": inside, "after": state()}}), flush=True)
faulthandler.disable()
with compilescope.capture(trace_dir=trace_dir):
    inside = state()
print(json.dumps({"off": {"inside": inside, "after": state()}}), flush=True)
with compilescope.capture(trace_dir=trace_dir):
    scale(torch.randn(8))
    print(json.dumps({"compiled": {"inside": state()}}), flush=True)
    crash = True
    scale(torch.randn(8))
print("not reached", flush=True)

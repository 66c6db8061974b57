"""Stands in for a traced process of a run that shares its --trace-dir with another run: turns on the crash recorder
as `compilescope run`'s child does once torch is imported (bytecode_capture.record_crashes: faulthandler writing to
compilescope_crash_<pid>.txt in $TORCH_TRACE, held open for the life of the process), writes a real torch 2.13 log
with its own pid in each record's glog prefix and holds it open (as torch would), then waits for a file (300 s at most: then it exits with status 1) and then
ends: crashes in native code (faulthandler._sigsegv), or exits. With "tee", the recorder is turned on as a capture()
block does in a process whose faulthandler is on already (`python -X faulthandler`): a `tee` child of this process
holds the crash file, not this process.

argv: the log to copy, the log's name in $TORCH_TRACE, the file to wait for, "crash" or "exit", optionally "tee".
"""
import importlib.util
import os
import re
import sys
import time

import sitecustomize  # compilescope's (its run puts the folder first on PYTHONPATH), beside bytecode_capture.py

path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sitecustomize.__file__))), "bytecode_capture.py")
spec = importlib.util.spec_from_file_location("_compilescope_bytecode_capture", path)
capture = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = capture
spec.loader.exec_module(capture)
if sys.argv[5:] == ["tee"]:
    import faulthandler

    faulthandler.enable()
    capture.record_crashes(os.environ["TORCH_TRACE"])
else:
    capture.record_crashes()

with open(sys.argv[1], "rb") as f:
    data = f.read()
# (the recorded pid, in every glog prefix: V<mmdd hh:mm:ss.us> <pid> <file>:<line>])
data = re.sub(rb"^(V\d{4} [\d:.]+ )\d+ ", rb"\g<1>" + str(os.getpid()).encode() + b" ", data, flags=re.M)
log = open(os.path.join(os.environ["TORCH_TRACE"], sys.argv[2]), "wb")  # noqa: SIM115 - open until the process ends,
log.write(data)  # as torch holds its log (runner.writes_log)
log.flush()
print("traced", flush=True)
deadline = time.monotonic() + 300  # (a test that failed before making the file leaves no process behind)
while not os.path.exists(sys.argv[3]):
    if time.monotonic() > deadline:
        sys.exit(1)
    time.sleep(0.05)
if sys.argv[4] == "crash":
    import faulthandler

    faulthandler._sigsegv()

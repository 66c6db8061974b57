"""CUDA scenario for the in-process API: transformers' static-cache generation recipe (hf_gpt2_static_cache.py),
which dies of SIGSEGV in torch 2.11's static Triton launcher, run inside `compilescope.capture()`:

    python capture_crash.py TRACE_DIR

capture() turns faulthandler on for its block, writing to TRACE_DIR/compilescope_crash_<pid>.txt; the reader then
reports that file's stack as the log's crash. Under `python -X faulthandler` (on before capture() starts) the stack
goes both to that file and to stderr.
"""
import sys

import compilescope
from hf_gpt2_static_cache import main

if __name__ == "__main__":
    with compilescope.capture(trace_dir=sys.argv[1], fresh_cache=True):
        main()
    print("capture_crash: the program did not crash")

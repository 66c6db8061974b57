"""Stands in for a traced program without compiling: copies a real torch 2.13 log into $TORCH_TRACE.

argv: the log to copy, a file to touch (proof that it ran), and optionally a directory to fill (so that the
report cannot be written there afterwards, as when two runs race for one -o).
"""
import os
import shutil
import sys

shutil.copy(sys.argv[1], os.path.join(os.environ["TORCH_TRACE"], "dedicated_log_torch_trace_test.log"))
open(sys.argv[2], "w").close()
if len(sys.argv) > 3:
    os.makedirs(sys.argv[3], exist_ok=True)
    open(os.path.join(sys.argv[3], "someone_elses_file"), "w").close()

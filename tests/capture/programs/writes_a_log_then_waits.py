"""Stands in for a long traced job: copies a real torch 2.13 log into $TORCH_TRACE, says so on stdout, then waits.

argv: the log to copy, and a file it touches if it is ever left to finish (proof that it was not stopped).
"""
import os
import shutil
import sys
import time

shutil.copy(sys.argv[1], os.path.join(os.environ["TORCH_TRACE"], "dedicated_log_torch_trace_test.log"))
print("traced", flush=True)
time.sleep(60)
open(sys.argv[2], "w").close()

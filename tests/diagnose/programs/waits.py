"""Imports torch, touches argv[1] (it started), then waits a minute and touches argv[2] if it is never stopped."""
import sys
import time

import torch  # noqa: F401 - a program diagnose runs: one that could compile

open(sys.argv[1], "w").close()
time.sleep(60)
open(sys.argv[2], "w").close()

#!/usr/bin/env python3
"""Regenerate logs/ here: the torch 2.13 fixture programs (../torch213/programs) run again under torch 2.14.

    python3 tests/data/torch214/make_traces.py [scenario ...]

Run it with a Python whose torch is 2.14 (a throwaway venv: `pip install torch==2.14.1` pulls about 5 GB of CUDA
packages, and the CPU runs these programs), never in CI. It is ../torch213/make_traces.py with the logs written
here, gzipped; the diff pairs are left out (2.13's are enough for `diff`).
"""
import subprocess
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
SCENARIOS = ["graph_breaks", "source_view", "transformed_code", "recompiles", "empty_graph", "dynamic_shapes",
             "training", "compile_error_fallback", "compile_error_raises", "compile_error_lowering", "provenance",
             "same_cause", "export", "export_draft", "cache_cold", "cache_warm", "torch_warnings"]

if __name__ == "__main__":
    if not torch.__version__.startswith("2.14."):
        raise SystemExit(f"this Python's torch is {torch.__version__}, not 2.14")
    wanted = sys.argv[1:] or SCENARIOS
    subprocess.run([sys.executable, str(HERE.parent / "torch213" / "make_traces.py"), "--out", str(HERE / "logs"),
                    "--gzip", *wanted], check=True)

#!/usr/bin/env python3
"""Regenerate logs/ here: the torch 2.13 fixture programs (../torch213/programs) run again under torch 2.14; and own/:
programs of this directory's own, for what a torch 2.14 user meets that those programs do not show, and their logs.

    python3 tests/data/torch214/make_traces.py [scenario ...]

Run it with a Python whose torch is 2.14 (a throwaway venv: `pip install torch==2.14.1` pulls about 5 GB of CUDA
packages, and the CPU runs these programs), never in CI. It is ../torch213/make_traces.py with the logs written
here, gzipped; the diff pairs are left out (2.13's are enough for `diff`), but for this directory's own programs.
"""
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
SCENARIOS = ["graph_breaks", "source_view", "transformed_code", "recompiles", "empty_graph", "dynamic_shapes",
             "training", "compile_error_fallback", "compile_error_raises", "compile_error_lowering", "provenance",
             "same_cause", "export", "export_draft", "cache_cold", "cache_warm", "torch_warnings",
             "upgrade_train"]


def _base():
    """../torch213/make_traces.py as a module: its Scenario and run(), for the programs in own/."""
    spec = importlib.util.spec_from_file_location("make_traces_213", HERE.parent / "torch213" / "make_traces.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HERE, module.PROGRAMS = HERE, HERE / "own"
    module.SCRUB_ENV.append("WRAPPED_VARIANT")
    return module


# The programs in own/ (their logs beside them), as ../torch213/make_traces.py's scenarios: name -> program, environment.
OWN = {
    # torch's wrappers compiled around user code: nested_compile_region, a compiled nonstrict_trace function.
    "wrapped_calls": ("wrapped_calls.py", {}),
    # The same with capture_scalar_outputs: .item() an unbacked symbol, not a graph break (`diff` against the above).
    "wrapped_calls_scalars": ("wrapped_calls.py", {"WRAPPED_VARIANT": "scalars"}),
}

if __name__ == "__main__":
    if not torch.__version__.startswith("2.14."):
        raise SystemExit(f"this Python's torch is {torch.__version__}, not 2.14")
    wanted = sys.argv[1:] or [*SCENARIOS, *OWN]
    twins = [name for name in wanted if name not in OWN]
    if twins:
        subprocess.run([sys.executable, str(HERE.parent / "torch213" / "make_traces.py"), "--out", str(HERE / "logs"),
                        "--gzip", *twins], check=True)
    own = [name for name in wanted if name in OWN]
    if own:
        base = _base()
        tmp_root = Path(tempfile.mkdtemp(prefix="compilescope_traces_"))
        try:
            for name in own:
                program, env = OWN[name]
                base.run(base.Scenario(name, program, env=env, gzip=True), {}, tmp_root, HERE / "own")
        finally:
            shutil.rmtree(tmp_root, ignore_errors=True)

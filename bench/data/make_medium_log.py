"""Run medium_model.py under TORCH_TRACE (fresh Inductor cache) and keep its log as torch213_medium.log.gz."""

import glob
import gzip
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    with tempfile.TemporaryDirectory() as trace_dir, tempfile.TemporaryDirectory() as cache_dir:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH")}
        env.update(TORCH_TRACE=trace_dir, TORCHINDUCTOR_CACHE_DIR=cache_dir)
        subprocess.run([sys.executable, str(HERE / "medium_model.py")], env=env, check=True)
        (log,) = glob.glob(os.path.join(trace_dir, "*.log"))
        data = Path(log).read_bytes()
    (HERE / "torch213_medium.log.gz").write_bytes(gzip.compress(data, 9, mtime=0))
    print(f"torch213_medium.log.gz: {len(data) / 1e6:.1f} MB of log")


if __name__ == "__main__":
    main()

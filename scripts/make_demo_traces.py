#!/usr/bin/env python3
"""Record the demo's bundled traces (src/compilescope/demo/traces/<name>.log.gz) from the demo's programs.

    .venv/bin/python scripts/make_demo_traces.py              # every scenario (about a minute on 2 cores)
    .venv/bin/python scripts/make_demo_traces.py training     # only some

Needs torch==2.13.0 (CPU) and g++. Each program runs with compilescope.demo.live.run_example,
the function `compilescope demo` runs live: its own process, TORCH_TRACE, INDUCTOR_PROVENANCE=1
and an empty Inductor cache. So the bundled and the live demo show the same programs.

The log is kept byte for byte as torch wrote it (payload md5s must still match; paths of the
machine that recorded it stay in, as in any real log), gzip-compressed at level 9 with no
timestamp in the gzip header.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from compilescope.demo import SCENARIOS  # noqa: E402
from compilescope.demo.live import run_example  # noqa: E402

TRACES = REPO / "src" / "compilescope" / "demo" / "traces"


def record(name: str) -> Path:
    with tempfile.TemporaryDirectory(prefix=f"compilescope_demo_{name}_") as work:
        ran = run_example(name, work)
        if ran.log is None:
            raise SystemExit(f"[{name}] wrote no trace ({ran.error or 'no compilation'})")
        if ran.error:
            raise SystemExit(f"[{name}] the program failed: {ran.error}")
        out = TRACES / f"{name}.log.gz"
        with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            gz.write(Path(ran.log).read_bytes())
    print(f"[{name}] {ran.seconds:.0f} s -> {out.relative_to(REPO)} ({out.stat().st_size:,} bytes)", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    known = [name for name, _ in SCENARIOS]
    parser.add_argument("scenarios", nargs="*", help=f"of {', '.join(known)} (default: all)")
    args = parser.parse_args()
    unknown = sorted(set(args.scenarios) - set(known))
    if unknown:
        raise SystemExit(f"unknown scenario(s) {unknown}; known: {known}")
    for name in args.scenarios or known:
        record(name)


if __name__ == "__main__":
    main()

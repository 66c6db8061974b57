"""A GPU profile recorded by capture(profile=True) around a model's first calls (tests/data/cuda_torch211, an H200):
the profile holds the compile and the first run's autotuning, and the runtime analysis keeps them apart from the run.

Expected values come from the files themselves: the kernels' call sites in the log's output code, read with a regex,
and the profile's events, read with json.
"""

from __future__ import annotations

import gzip
import json
import re

import pytest

from compilescope.analyses.runtime import COMPILING, GPU_IDLE

from ..conftest import cuda211
from .test_runtime import _runtime


def _call_sites() -> dict[str, int]:
    """How many times the output code (forward and backward) launches each Triton kernel."""
    with gzip.open(cuda211("capture_profile.log.gz"), "rt", encoding="utf-8") as f:
        text = f.read()
    sites: dict[str, int] = {}
    for name in re.findall(r"\b(triton_\w+)\.run\(", text):
        sites[name] = sites.get(name, 0) + 1
    return sites


def test_kernels_count_the_five_steps_not_the_autotuning_of_the_first():
    p = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    assert p.timeline == "gpu" and p.matched
    rows = [k for k in p.kernels if k.kind == "inductor"]
    sites = _call_sites()
    assert len(rows) == len(sites) == 13
    # Each launch site ran once per step; the first step's autotuning benchmarked the same kernels many more times.
    assert {k.name: k.calls for k in rows} == {name: 5 * n for name, n in sites.items()}
    with gzip.open(cuda211("capture_profile.profile.json.gz"), "rt") as f:
        launched = sum(1 for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel" and e["name"] in sites)
    assert launched > 5 * sum(sites.values())  # the benchmark runs are in the profile, as "compiling"
    assert all(str(k.compile_id) == "[0/0]" and k.user_lines for k in rows)


def test_the_gpu_waiting_for_the_compile_is_compiling_not_idle():
    p = _runtime(cuda211("capture_profile.log.gz"), cuda211("capture_profile.profile.json.gz")).profiles[0]
    share = {k.name: k.share for k in p.kernels if k.kind in ("framework", "idle")}
    # The block compiled the forward, then the backward at the first backward(): seconds, against a few ms of run.
    assert share[COMPILING] > 0.9
    assert share[GPU_IDLE] < 0.1
    assert sum(k.share for k in p.kernels) == pytest.approx(1.0)

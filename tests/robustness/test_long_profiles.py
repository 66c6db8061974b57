"""A long torch.profiler trace is read in time linear in its events: the runtime analyses that look at every op or
graph call against every idle gap or compile range (the GPU's idle by what the CPU ran, the slow calls of a steady
state) took 230 s on hf_gpt2_profile's events repeated 16 times (21280 kernels). The CLI runs in a child process with
a time and memory limit (test_round_two.compilescope); what it read is checked against the raw events.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from compilescope.analyses.runtime import SlowCall
from compilescope.analyses.runtime.slow_calls import _count_once

from ..conftest import cuda211
from .linear_work import assert_linear, lines_run_here
from .test_round_two import compilescope

COPIES = 16
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")  # what the GPU ran (gpu_user_annotation is a range, not work)


def _repeated(profile: Path, copies: int, out: Path) -> list[dict]:
    """The profile's timed events `copies` times, each copy after the last (its ids moved so that no launch joins
    another copy's kernel); the events written."""
    doc = json.load(gzip.open(profile))
    timed = [e for e in doc["traceEvents"] if "ts" in e and e.get("ph") in ("X", "s", "f", "i")]
    untimed = [e for e in doc["traceEvents"] if not ("ts" in e and e.get("ph") in ("X", "s", "f", "i"))]
    first = min(float(e["ts"]) for e in timed)
    span = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - first + 10.0
    events = untimed
    for copy in range(copies):
        for e in timed:
            moved = dict(e, ts=float(e["ts"]) + copy * span)
            if isinstance(e.get("id"), int):
                moved["id"] = e["id"] + copy * 1_000_000
            if e.get("args"):
                moved["args"] = {k: v + copy * 1_000_000 if k in ("correlation", "External id") and isinstance(v, int)
                                 else v for k, v in e["args"].items()}
            events.append(moved)
    doc["traceEvents"] = events
    with gzip.open(out, "wt") as f:
        json.dump(doc, f)
    return events


def _idle_us(events: list[dict]) -> float:
    """The GPU's idle from the raw events: its first kernel's start to its last one's end, less what ran."""
    ran = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events if e.get("cat") in GPU_CATEGORIES)
    busy, end = 0.0, float("-inf")
    for s, e in ran:
        if e > end:
            busy += e - max(s, end)
            end = e
    return ran[-1][1] - ran[0][0] - busy


def test_a_long_gpu_profile_is_read_in_linear_time(tmp_path):
    events = _repeated(cuda211("hf_gpt2_profile.profile.json.gz"), COPIES, tmp_path / "long.profile.json.gz")
    kernels = sum(1 for e in events if e.get("cat") in GPU_CATEGORIES)
    assert kernels == COPIES * 1330  # hf_gpt2_profile's 1330 kernels, each copy's

    r = compilescope("summary", "--json", cuda211("hf_gpt2_profile.log.gz"), "--profile", tmp_path / "long.profile.json.gz",
                     timeout=90)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    (profile,) = json.loads(r.stdout)["runtime"]["profiles"]
    assert profile["timeline"] == "gpu" and profile["devices"] == 1
    # every kernel read and counted once, in its row (eager, extern or Inductor's)
    assert sum(k["calls"] for k in profile["kernels"] if k["kind"] in ("inductor", "extern", "eager")) == kernels
    # the idle by what the CPU ran splits the GPU's whole idle (nothing compiled in this profile: none of it compiling)
    idle = _idle_us(events)
    assert profile["compiling_us"] == 0
    assert abs(sum(c["us"] for c in profile["idle_by_cpu"]) - idle) < 0.01
    (idle_row,) = [g for g in profile["graphs"] if g["idle"]]
    assert abs(idle_row["total_us"] - idle) < 0.01


def _slow_calls_in_pairs(n: int) -> list:
    """n slow calls in pairs: two threads' warm-ups at the same instants, 5 us on the GPU timeline each, a pair 10 us
    after the last (so what the earlier calls hold is a span per pair); one call in three also on a second GPU, for
    2 us inside its first's."""
    return [(10.0 * (i // 2), [(10.0 * (i // 2), 10.0 * (i // 2) + 5)]
             + ([(10.0 * (i // 2) + 1, 10.0 * (i // 2) + 3)] if i % 3 == 0 else []),
             SlowCall(None, i + 1, 5.0, False, False)) for i in range(n)]


def test_slow_calls_counted_once_in_linear_work():
    """_count_once merged every earlier call's pieces again for each call: 1000 slow calls took 0.59 s, 4000 14 s."""
    small, large = _slow_calls_in_pairs(1000), _slow_calls_in_pairs(2000)
    lines_n, lines_2n = lines_run_here(_count_once, small), lines_run_here(_count_once, large)
    assert_linear(lines_n, lines_2n, "_count_once")
    # a pair's second call is all its first's time, its first none of the pairs' before it
    assert [t[2].overlap_us for t in large] == [0.0, 5.0] * 1000

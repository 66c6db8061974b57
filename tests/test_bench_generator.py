"""bench/make_big_log.py: the generated logs the benchmark measures are real-shaped only if each copy of a real
log is a compile of its own (its frame ids shifted), with every payload intact."""

from __future__ import annotations

from compilescope.ingest.reader import ReadOptions, read_trace

from .conftest import bench_module, shared


def test_each_copy_is_a_compile_of_its_own(tmp_path):
    unit = next(shared("gpu-torch211/profile_compiled").glob("*.log"))
    with read_trace(str(unit), ReadOptions()) as one:
        ids = [key for key in one.compiles if key is not None]  # (None: the events outside any compilation)
        payload = one.store.size
    assert ids and payload
    out = tmp_path / "three.log"
    bench_module("make_big_log").build(str(out), [str(unit)], times=3)
    with read_trace(str(out), ReadOptions()) as three:
        # Three compiles per compile of the real log, not one holding three copies' outputs.
        assert len([key for key in three.compiles if key is not None]) == 3 * len(ids)
        assert three.stats.problems == []  # every envelope parsed, every payload's md5 still matches
        assert three.store.size == 3 * payload

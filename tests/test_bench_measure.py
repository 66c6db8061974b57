"""bench/run.py's measuring: a command's peak RSS is its own, no run writes where another's output was, and no
command always runs first.

All three were faults once. Spawned by run.py itself, a command's peak RSS started at run.py's own (Linux keeps the
high-water mark across exec); each run wrote where the previous run's output had just been deleted; and ours ran
first in every round, where a cost that falls on the first command fell on ours alone."""

from __future__ import annotations

import sys

from .conftest import BENCH, bench_module


def test_a_command_is_measured_from_its_own_peak_rss_not_the_benchmarks():
    run = bench_module("run")
    held = bytearray(300 << 20)  # this process, the benchmark's stand-in, holds 300 MB...
    held[:: 1 << 12] = b"\1" * len(held[:: 1 << 12])  # (touched: resident)
    measured = run.measure([sys.executable, "-c", "pass"])
    # ...and the command, an idle interpreter of about 9 MB, is counted as itself (spawned from here: 300+ MB)
    assert measured.rss_mb < 100
    assert measured.wall > 0 and measured.cpu > 0
    del held


def test_only_real_outputs_are_removed_and_every_run_writes_its_own():
    run = bench_module("run")
    ours = [sys.executable, "-m", "compilescope", "a.log", "-o", "/tmp/x/cs", "--no-browser", "--overwrite"]
    floor = [sys.executable, str(BENCH / "floor.py"), "a.log", "/tmp/x/floor"]
    assert run.output_of(ours) == "/tmp/x/cs"
    assert run.output_of(floor) == "/tmp/x/floor"
    # a command that writes nothing: its last argument is not a directory to remove
    assert run.output_of([sys.executable, "-c", "pass"]) is None
    assert run.output_of([sys.executable, "-m", "compilescope", "--version"]) is None
    apart = [run.writing_apart(ours, f"{n}-0") for n in range(3)]
    assert [run.output_of(c) for c in apart] == ["/tmp/x/cs-0-0", "/tmp/x/cs-1-0", "/tmp/x/cs-2-0"]
    assert all(c[:5] == ours[:5] and c[6:] == ours[6:] for c in apart)  # nothing else changed
    assert run.output_of(run.writing_apart(floor, "1-0")) == "/tmp/x/floor-1-0"


def test_every_command_takes_every_place_in_a_round_in_turn():
    run = bench_module("run")
    cmds = {"ours": [["a"]], "tlparse": [["b"]], "floor": [["c"]], "ours@small": [["d"]]}
    orders = [[tool for tool, _ in run.in_turn(cmds, n)] for n in range(4)]
    assert orders[0] == ["ours", "tlparse", "floor", "ours@small"]
    assert orders[1] == ["tlparse", "floor", "ours@small", "ours"]
    assert sorted(order[0] for order in orders) == sorted(cmds)  # each one first once in four runs
    assert all(sorted(order) == sorted(cmds) for order in orders)  # and every command in every run
    assert [t for t, _ in run.in_turn(cmds, 4)] == orders[0]

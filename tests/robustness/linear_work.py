"""Linearity counted, not timed: how many lines of compilescope's own code a command runs, on a log of n compiles and
on one of 2n. A time limit big enough for a loaded machine lets a quadratic loop through on a small log, and a log big
enough to fail the quadratic code takes the fixed code most of the limit at load 8; a count is the same on any
machine. Each loop's every turn is a line run (Python traces a jump back to a loop's start as a line), so a loop over
the compiles inside one over the compiles shows as n^2 lines however little each turn costs.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

MEMORY_CAP = 3 << 30
HANG_GUARD_S = 120  # a hang, not a time: the counted runs take a few seconds


class LineCounter:
    """Counts the lines run in compilescope's own files while entered (its Jinja templates compile to code named by
    their files, so they count too); other code (json, rich, the standard library) is not traced past its calls, so
    what is counted does not move with their versions. This thread only, as sys.settrace is."""

    def __init__(self) -> None:
        import compilescope

        self.root = str(Path(compilescope.__file__).parent)
        self.lines = 0

    def _in_compilescope(self, frame, event, arg):
        if event == "line":
            self.lines += 1
        return self._in_compilescope

    def _on_call(self, frame, event, arg):
        return self._in_compilescope if frame.f_code.co_filename.startswith(self.root) else None

    def __enter__(self) -> LineCounter:
        sys.settrace(self._on_call)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(None)


def lines_run_here(fn, *args) -> int:
    """The lines of compilescope's own code fn(*args) runs, in this process."""
    with LineCounter() as counter:
        fn(*args)
    return counter.lines


# The child: compilescope's CLI in-process, counted by this file's LineCounter (loaded by its path: the child's
# sys.path need not hold the tests); the count is written even where the CLI raises.
_COUNTING_CHILD = r"""
import runpy
import sys
from pathlib import Path

from compilescope.cli import main

counter_file, count_file, *argv = sys.argv[1:]
counter = runpy.run_path(counter_file)["LineCounter"]()
try:
    with counter:
        status = main(argv)
finally:
    Path(count_file).write_text(str(counter.lines))
sys.exit(status)
"""


def cap_memory() -> None:
    """A child's memory cap (preexec_fn): a blow-up fails its test instead of exhausting the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def lines_run(count_file: Path, *args, **kw) -> tuple[int, subprocess.CompletedProcess]:
    """Run `compilescope ARGS` in a child process (bounded in memory, with a hang guard): the lines of compilescope's
    code it ran, and the finished process (its output, to check what was read)."""
    try:
        r = subprocess.run([sys.executable, "-c", _COUNTING_CHILD, __file__, str(count_file), *map(str, args)],
                           capture_output=True, timeout=HANG_GUARD_S, preexec_fn=cap_memory, **kw)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"compilescope {' '.join(map(str, args))} ran past {HANG_GUARD_S} s") from None
    assert count_file.exists(), r.stderr.decode(errors="replace")[-2000:]
    return int(count_file.read_text()), r


def assert_linear(lines_n: int, lines_2n: int, what: str) -> None:
    """Twice the compiles, at most twice the lines (what is run once, at start-up, makes it a little less): a quadratic
    loop over them is four times its lines, the ratio well above 2 once it is a fair share of the work."""
    assert lines_n > 0, f"{what}: no line of compilescope counted (the counter's root is not the package's?)"
    assert lines_2n <= 2 * lines_n, (f"{what}: {lines_n:,} lines of compilescope for n compiles, {lines_2n:,} for 2n "
                                     f"({lines_2n / lines_n:.2f} times): more than linear")

"""The numbers the stages' runs print, compared: which of a printed line's numbers are the program's results (not
a time, a size, progress), which lines changed between one stage and the next (printed_change), how far a number may
move and still be float32 rounding, and which lines change from run to run under eager too (the control runs)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from . import PASSED, SAME_PROGRAM, STAGES, PrintedChange, ProgramSeed, StageOutcome

# What the stages' runs printed is compared as the numbers in it: which numbers are the program's results, and how far
# one may move and still be float32 rounding, is decided here and nowhere else (README, diagnose --help say the same).
_DIGITS = r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# A number as a program prints it ("4.1", "-3e-05", "0", "nan", "-inf": a result gone wrong is a number too), not part
# of a word or a path ("x1", "v2.13", "0x7f", "info").
_NUMBER = re.compile(rf"(?:{_DIGITS}|(?<![\w.])[-+]?(?:nan|inf(?:inity)?))(?![\w.])", re.IGNORECASE)
# Numbers that change from run to run whatever the stage, so never a result: a number with a unit of time, size, rate or
# ratio ("0.2973 s", "12ms", "1534 MB", "3.1 GiB", "812 tok/s", "45.2 it/s", a speed-up "1.8 x"), a process id
# ("pid 4242"), a clock ("10:29:22.123", tqdm's "00:01") or a date. "min" followed by a number is a minimum ("max 3.2
# min 0.1"), not minutes.
_UNIT = (r"(?:[kmgtp]i?b|b|bytes?|[µu]s|ns|ms|s|secs?|seconds?|hrs?|hours?|min(?:s|utes?)?(?![ \t]*[-+]?\.?\d)|"
         r"[a-z]*/s(?:ec)?|per[ \t]+(?:second|sec|s)|x|×|fps|[kmg]?hz|[kmgtp]?flop/?s)")
_MEASURED = re.compile(rf"{_DIGITS}[ \t]{{0,2}}{_UNIT}(?![\w/])|\bpid\b\W{{0,3}}\d+"
                       r"|(?<![\w.:])\d{1,2}(?::\d\d){1,2}(?:[.,]\d+)?(?![\w:])|\b\d{4}-\d\d-\d\d\b", re.IGNORECASE)
# A percentage is a result ("accuracy 97.3%", "loss share 12%", "top-1: 76.1%": a metric the compiled code can get
# wrong), except one that tells progress or the use of a resource, which follows the clock, not the results: every
# percentage of a line with a bar ("[=====>    ] 45%": at least 3 bar characters, so "[*] accuracy: 49.4%" is no bar;
# tqdm's "45%|####   |", the bar right after "%|"; a block character █▏▎▍▌▋▊▉), and a percentage next to one of the
# words done, complete(d), progress, eta, remaining, finished, processed, loading/loaded, downloading/downloaded,
# util(ization), usage, occupancy, busy, idle, faster, slower, speed-up, overhead ("45% done", "GPU util 87%",
# "progress: 45%", "overhead of 3%"), not the line's other percentages ("Epoch 3 done: val acc 91.2%" is a result). A
# progress percentage missed here is printed alike by each stage at the same point, or changes between eager's runs
# too (the control runs), so it is never taken for the compiled code's change; a metric taken for progress would hide
# one, hence the default.
_PERCENT = re.compile(rf"{_DIGITS}[ \t]{{0,2}}%")
_PROGRESS_BAR = re.compile(r"%\|(?=[^|\n]{3,}\|)[#█]*[1-9▏▎▍▌▋▊▉]?[ ]*\||\[(?=[.\- ]*[=#>*])[=#>*.\- ]{3,}\]|[█▏▎▍▌▋▊▉]")
_PROGRESS_WORD = (r"(?<![^\W_])(?:done|complete[d]?|progress|eta|remaining|finished|processed|loading|loaded|"
                  r"downloading|downloaded|util(?:i[sz]ation)?|usage|occupancy|busy|idle|faster|slower|speed-?up|"
                  r"overhead)(?![^\W_])")
# the percentage a word qualifies: right before it, or right after it (and a ":", "=", "of", "at", "by", "is")
_PROGRESS_PERCENT = re.compile(rf"(?P<word>{_PROGRESS_WORD}[ \t]*(?:[:=]|(?:of|at|by|is)(?![^\W_]))?[ \t]*)"
                               rf"{_DIGITS}[ \t]{{0,2}}%|{_DIGITS}[ \t]{{0,2}}%(?=[ \t]*{_PROGRESS_WORD})",
                               re.IGNORECASE)
# Lines left out whole: torch's own log lines (their prefix holds a time and a thread id), and lines that name a time,
# speed or memory in words, whose numbers need not carry a unit ("step time: 3.2", "took", "latency", "peak memory
# 1534", "step_time_ms=3.2": a name's parts between underscores count as words).
_MEASURED_LINE = re.compile(r"^\[?(?:rank\d+\]:?\[?)?[IWEDC]\d{4} \d\d:\d\d|(?<![^\W_])(?:time|timing|took|elapsed|"
                            r"duration|latency|throughput|speed|seconds?|secs?|ms|us|per[ _]sec(?:ond)?|memory|"
                            r"mem)(?![^\W_])", re.IGNORECASE)
# How far a printed number may move between stages and still be float32 rounding: 1e-3 of its size, or 1e-3 near 0,
# where rounding is as large as the terms that cancelled, not proportional to the result (wrong_results.py's fixed
# variant prints "max abs diff 4.39e-05" where aot_eager prints 0: rounding; as written, its dropout's own random
# numbers print 5.8 and 1.81). nan or inf against any other number is never rounding.
ROUNDING_RTOL = 1e-3
ROUNDING_ATOL = 1e-3
PRINTED_LINES_KEPT = 200
PRINTED_CHANGES_SHOWN = 10


def _unmeasured(line: str) -> str:
    """The line with each measured number (_MEASURED, progress percentages) written "~"."""
    line = _MEASURED.sub("~", line)
    if _PROGRESS_BAR.search(line):
        # (the bar itself too: tqdm's ascii bar ends in a digit, "45%|####5   |", that is no result)
        line = _PROGRESS_BAR.sub(lambda m: "%|~|" if m[0].startswith("%|") else m[0], line)
        return _PERCENT.sub("~", line)
    return _PROGRESS_PERCENT.sub(lambda m: (m["word"] or "") + "~", line)


def _results(line: str) -> list[str]:
    """The numbers of a printed line that are the program's results (measured ones left out)."""
    return _NUMBER.findall(_unmeasured(line))


def _kind(line: str) -> str:
    """The line less its numbers: "loss #", "step # took ~". Lines of one kind in two runs are compared."""
    return _NUMBER.sub("#", _unmeasured(line))


def _same(before: float, after: float) -> bool:
    return before == after or (math.isnan(before) and math.isnan(after))


def rounding_only(before: str, after: str) -> bool:
    """Whether the numbers of two lines of one kind are equal but for float32 rounding (ROUNDING_RTOL, ROUNDING_ATOL)."""
    for a, b in zip(map(float, _results(before)), map(float, _results(after))):
        if _same(a, b):
            continue
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        if abs(a - b) > max(ROUNDING_RTOL * max(abs(a), abs(b)), ROUNDING_ATOL):
            return False
    return True


def printed_lines(output: str) -> list[str]:
    """The lines of a run's output that print results ("train: max abs diff 4.1"), less torch's log lines and numbers
    that change from run to run anyway (_MEASURED, _MEASURED_LINE, progress percentages): what the stages'
    runs of one program should share."""
    kept = []
    for line in output.splitlines():
        line = line.strip()
        if line and len(line) < 500 and not _MEASURED_LINE.search(line) and _results(line):
            kept.append(line)
            if len(kept) == PRINTED_LINES_KEPT:
                break
    return kept


# A printed line, as two runs' lines are paired: its kind (_kind) and which of that kind it is (0: the first printed)
LineKey = tuple[str, int]


def _changed_lines(before: list[str], after: list[str]) -> list[tuple[LineKey, str, str]]:
    """Lines printed by both runs that read alike but for their numbers, and whose numbers differ, in order: the
    n-th line of a kind ("loss #" in a loop) in one run against the n-th of that kind in the other."""
    theirs: dict[str, list[str]] = {}
    for line in before:
        theirs.setdefault(_kind(line), []).append(line)
    seen: dict[str, int] = {}
    changed = []
    for line in after:
        kind = _kind(line)
        n = seen[kind] = seen.get(kind, -1) + 1
        earlier = theirs.get(kind, [])
        if n < len(earlier) and not all(_same(float(a), float(b)) for a, b in zip(_results(earlier[n]), _results(line))):
            changed.append(((kind, n), earlier[n], line))
    return changed


def run_to_run(eager: StageOutcome, controls: Sequence[StageOutcome]) -> set[LineKey] | None:
    """The printed lines whose numbers differ between eager's run and any of its control runs that passed
    (EAGER_CONTROL, EAGER_CONTROL_AGAIN): they change from run to run whatever the stage. None where there is no
    control to tell: none run, or none passed."""
    passed = [control for control in controls if control.status == PASSED]
    if not passed:
        return None
    return {key for control in passed for key, _, _ in _changed_lines(eager.printed, control.printed)}


def another_control(seed: ProgramSeed | None, unstable: set[LineKey] | None) -> bool:
    """Whether a changed line left after the first control run may still change from run to run, printed alike by
    eager twice by chance (a coin flip printed 0 or 1, a random number rounded to one digit): where the program's file
    sets no seed (or diagnose could not read it), or where some line did change between eager's two runs (the program
    is not deterministic, seed or not). A seeded program whose eager runs printed the same numbers needs no third run:
    the common case of a change (wrong_results.py's) costs one control run, as before."""
    if unstable is None:  # (the control run failed: printed numbers alone are not judged, another run tells nothing)
        return False
    return seed is None or seed.call is None or bool(unstable)


def _nonfinite(before: str, after: str) -> bool:
    return any(not _same(a, b) and not (math.isfinite(a) and math.isfinite(b))
               for a, b in zip(map(float, _results(before)), map(float, _results(after))))


def printed_change(outcomes: list[StageOutcome], unstable: set[LineKey] | None = None,
                   seed: ProgramSeed | None = None) -> PrintedChange | None:
    """The first stage that prints other numbers than the one before it, where each ran and exited 0: the program
    printing its own comparison with eager (or its losses) shows which part of torch.compile changes them. A stage
    whose change is beyond rounding is named before an earlier one whose change is only rounding (AOTAutograd's
    decompositions round too). unstable: the lines that change from run to run under eager too, not compared."""
    ran = [o for o in outcomes if o.spec in STAGES and o.status == PASSED]
    changes = []
    for before, after in zip(ran, ran[1:]):
        changed = [(a, b) for key, a, b in _changed_lines(before.printed, after.printed) if key not in (unstable or ())]
        if changed:
            beyond = [pair for pair in changed if not rounding_only(*pair)]
            # the lines beyond rounding first: they are what the verdict stands on
            shown = (beyond + [pair for pair in changed if pair not in beyond])[:PRINTED_CHANGES_SHOWN]
            changes.append(PrintedChange(after.spec.key, after.spec.title, before.spec.key, before.spec.title, shown,
                                         len(changed), len(beyond), sum(_nonfinite(*pair) for pair in changed),
                                         seed.alike if seed is not None else SAME_PROGRAM))
    return next((c for c in changes if c.beyond_rounding), changes[0] if changes else None)

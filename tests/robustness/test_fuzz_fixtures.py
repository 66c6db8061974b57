"""Fuzzers over EVERY real fixture log, for both the report and `summary` (issue 16).

- type swap: one value somewhere in an envelope, or in a JSON payload (md5 recomputed, so the
  payload is read as genuine), is replaced by a value of another type: null, a bool, a huge or
  negative number, a 5,000-digit string, a list, a dict, a value nested 300 deep, a string full
  of terminal escapes.
- structure: the log truncated anywhere, its line ends rewritten (CRLF, CR-only, a lone final
  CR), a BOM in front, a huge number spliced in, deep nesting.

Whatever comes out: no exception but CompilescopeError (which is exit 2, a one-line message),
every record accounted for, and the summary printed. Each fuzzer has a time budget per fixture:
it tries mutations until ROBUSTNESS_FUZZ_SECONDS (default 0.5 s) have passed, and at least
ROBUSTNESS_FUZZ_EXAMPLES (default 2), and at most MAX_DRAWS, so the whole set runs in a minute or two
on 2 cores; raise them for a deeper search. One mutated log that takes longer than EXAMPLE_LIMIT_S to read, analyse,
render and summarise fails (a hang or a quadratic path, not a slow machine).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import signal
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rich.console import Console

from compilescope.analyses.analyze import analyze
from compilescope.analyses.insights.analysis import insights
from compilescope.errors import CompilescopeError
from compilescope.ingest.reader import read_trace
from compilescope.model.stats import OUTCOMES
from compilescope.render.options import ReportOptions
from compilescope.render.report import report_files
from compilescope.render.terminal import print_summary

from ..conftest import PEER_INPUTS, TORCH213_LOGS, skip_or_fail
from .test_properties import consume

GPU_TRACES = TORCH213_LOGS.parents[3].parent / "shared" / "traces" / "gpu-torch211"
EXAMPLES = int(os.environ.get("ROBUSTNESS_FUZZ_EXAMPLES", "2"))  # at least this many mutations per fixture
SECONDS = float(os.environ.get("ROBUSTNESS_FUZZ_SECONDS", "0.5"))  # and more until this much time has passed
EXAMPLE_LIMIT_S = 60.0
_PREFIX = re.compile(rb"^([VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ +[^\]]+\] )(.*?)(\r?\n?)$", re.S)


def _fixtures() -> list[Path]:
    found = sorted(TORCH213_LOGS.glob("*.log"))
    for root in (PEER_INPUTS, GPU_TRACES):
        if root.is_dir():
            found += sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".log", ".txt")
                            and p.name not in ("output.txt",))
    return found


FIXTURES = _fixtures()


def _id(path: Path) -> str:
    for root in (TORCH213_LOGS, PEER_INPUTS, GPU_TRACES):
        if root in path.parents:
            return f"{root.name}/{path.relative_to(root)}"
    return path.name


_CACHE: dict[Path, list[bytes]] = {}


def _lines(path: Path) -> list[bytes]:
    if path not in _CACHE:
        _CACHE[path] = path.read_bytes().splitlines(keepends=True)
    return _CACHE[path]


def _deep(n: int):
    value: object = 1
    for _ in range(n):
        value = [value]
    return value


SWAPS = st.sampled_from([
    None, True, False, 0, -1, 10**18, 1e308, -1e18, 0.5, "", "9" * 5000, "x" * 2000, [], [1, "a"], {}, {"a": [None]},
    _deep(300), "\x1b]52;c;aGk=\x07\x1b]0;t\x07\x1b[2J[bold]m[/]\u202e", "../../etc/passwd", "-", "[0/0]",
])


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            yield from _paths(v, path + (i,))


def _replace(value, path, new):
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


def _envelopes(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if _PREFIX.match(line)]


def _payload_end(lines: list[bytes], i: int) -> int:
    j = i + 1
    while j < len(lines) and lines[j][:1] == b"\t":
        j += 1
    return j


def type_swap(lines: list[bytes], pick: float, where: float, new, in_payload: bool) -> bytes:
    lines = list(lines)
    envs = _envelopes(lines)
    if not envs:
        return b"".join(lines)
    i = envs[min(int(pick * len(envs)), len(envs) - 1)]
    prefix, body, end = _PREFIX.match(lines[i]).groups()
    try:
        obj = json.loads(body)
    except ValueError:
        return b"".join(lines)
    j = _payload_end(lines, i)
    if in_payload and j > i + 1:
        text = b"".join(line[1:] for line in lines[i + 1:j]).decode("utf-8", "replace")
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
        if payload is not None:
            paths = list(_paths(payload))
            payload = _replace(payload, paths[min(int(where * len(paths)), len(paths) - 1)], new)
            new_text = json.dumps(payload)
            if isinstance(obj, dict):
                obj["has_payload"] = hashlib.md5(new_text.encode()).hexdigest()
            lines[i + 1:j] = [b"\t" + part.encode() + b"\n" for part in new_text.split("\n")]
            lines[i] = prefix + json.dumps(obj).encode() + (end or b"\n")
            return b"".join(lines)
    paths = list(_paths(obj))
    obj = _replace(obj, paths[min(int(where * len(paths)), len(paths) - 1)], new)
    lines[i] = prefix + json.dumps(obj).encode() + (end or b"\n")
    return b"".join(lines)


def structure(lines: list[bytes], op: str, at: float) -> bytes:
    data = b"".join(lines)
    cut = int(at * len(data))
    if op == "truncate":
        return data[:cut]
    if op == "crlf":
        return data.replace(b"\n", b"\r\n")
    if op == "crlf_cut":  # a CRLF log cut between "\r" and "\n"
        data = data.replace(b"\n", b"\r\n")
        return data[: data.rfind(b"\r", 0, max(cut, 1)) + 1] or b"\r"
    if op == "cr_only":
        return data.replace(b"\n", b"\r")
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "huge_number":
        return data[:cut] + b"9" * 6000 + data[cut:]
    if op == "nesting":
        envs = _envelopes(lines)
        i = envs[min(int(at * len(envs)), len(envs) - 1)] if envs else 0
        deep = b'{"chromium_event": {}, "x": ' + b"[" * 400 + b"]" * 400 + b"}"
        return b"".join(lines[:i]) + b"V0101 00:00:00.000000 1 a.py:1] " + deep + b"\n" + b"".join(lines[i:])
    raise AssertionError(op)


def check(data: bytes) -> None:
    """The report and the summary of data: no exception but a one-line CompilescopeError."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzzed.log"
        path.write_bytes(data)
        try:
            trace = read_trace(str(path))
        except CompilescopeError as exc:
            assert "\n" not in str(exc)
            return
        with trace:
            stats = trace.stats
            assert sum(stats.outcomes[o] for o in OUTCOMES) == stats.total
            results = analyze(trace)
            assert sum(consume(content) for _, content in report_files(trace, results, ReportOptions())) > 0
            summary = insights(trace)
            json.dumps(summary.to_json())
            out = io.StringIO()
            print_summary(summary, Console(file=out, width=120, force_terminal=True))
            assert out.getvalue()


# One Hypothesis example per fixture draws as many mutations as the time budget allows (a failing
# sequence still shrinks to its smallest mutation).
FUZZ = settings(max_examples=1, deadline=None, database=None, phases=[Phase.explicit, Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck))


# Hypothesis keeps one example's draws in a buffer of a few KB: a fixture read in microseconds (a tiny non-log
# file) drew ~460 mutations within the budget and ran out of it (Unsatisfiable, "too large"). A cap well below.
MAX_DRAWS = 100


def _run_or_time_out(run, drawn) -> None:
    """run(*drawn), interrupted after EXAMPLE_LIMIT_S (a hang or a quadratic path fails, where an assertion on the time
    taken would wait for it forever)."""
    def hung(signum, frame):
        raise TimeoutError(f"one mutated log took over {EXAMPLE_LIMIT_S} s: {drawn[:-1]}")

    before = signal.signal(signal.SIGALRM, hung)
    signal.alarm(int(EXAMPLE_LIMIT_S))
    try:
        run(*drawn)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def within_budget(data, strategy, run) -> int:
    """Draw from strategy and run each draw until the time budget is spent (and EXAMPLES at least), at most
    MAX_DRAWS times."""
    started = time.monotonic()
    n = 0
    while n < MAX_DRAWS and (n < EXAMPLES or time.monotonic() - started < SECONDS):
        drawn = data.draw(strategy)
        _run_or_time_out(run, drawn)
        n += 1
    return n


@pytest.mark.parametrize("fixture", FIXTURES, ids=_id)
@FUZZ
@given(data=st.data())
def test_type_swap(fixture, data):
    lines = _lines(fixture)
    within_budget(data, st.tuples(st.floats(0, 1), st.floats(0, 1), st.booleans(), SWAPS),
                  lambda pick, where, in_payload, new: check(type_swap(lines, pick, where, new, in_payload)))


@pytest.mark.parametrize("fixture", FIXTURES, ids=_id)
@FUZZ
@given(data=st.data())
def test_structure(fixture, data):
    lines = _lines(fixture)
    ops = st.sampled_from(["truncate", "crlf", "crlf_cut", "cr_only", "bom", "huge_number", "nesting"])
    within_budget(data, st.tuples(ops, st.floats(0, 1)), lambda op, at: check(structure(lines, op, at)))


def test_every_fixture_set_is_fuzzed():
    roots = {TORCH213_LOGS: "torch213", PEER_INPUTS: "peer-tlparse", GPU_TRACES: "gpu-torch211"}
    for root, name in roots.items():
        if not any(root in p.parents for p in FIXTURES):
            skip_or_fail(f"no {name} logs to fuzz ({root} missing)")

"""Property-based: real logs mutated at random (lines dropped, duplicated, corrupted, truncated).

Whatever the mutation: reading never crashes, every record is accounted for
(outcomes add up to the records in the file, counted independently), every skipped
record is listed as a problem, and the whole report renders.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from compilescope.analyses.analyze import analyze
from compilescope.errors import CompilescopeError
from compilescope.ingest.reader import read_trace
from compilescope.model.stats import OUTCOMES
from compilescope.render.options import ReportOptions
from compilescope.render.report import report_files

from ..conftest import torch213
from .corpus import expected_records, lines_of

BASES = ("training.log", "export_draft.log", "graph_breaks.log", "dynamic_shapes.log")
LISTED = ("md5_mismatch", "other_rank", "bad_prefix", "bad_json", "orphan_payload", "handler_error")
_LINES = {name: lines_of(torch213(name).read_bytes()) for name in BASES}

# Bytes that hurt: invalid UTF-8, NUL, TAB (payload marker), CR, JSON and HTML syntax.
NASTY = st.binary(max_size=40) | st.sampled_from(
    [b"\xff", b"\xc3", b"\x00", b"\t", b"\r", b"{", b"}", b'"', b"\\", b"]", b"</script>", b"\n", b"\n\t", b"NaN"]
)

mutation = st.one_of(
    st.tuples(st.just("drop"), st.floats(0, 1)),
    st.tuples(st.just("duplicate"), st.floats(0, 1)),
    st.tuples(st.just("corrupt"), st.floats(0, 1), st.floats(0, 1), NASTY),
    st.tuples(st.just("truncate_line"), st.floats(0, 1), st.floats(0, 1), st.booleans()),
    st.tuples(st.just("insert"), st.floats(0, 1), NASTY),
    st.tuples(st.just("swap"), st.floats(0, 1), st.floats(0, 1)),
)


def mutate(lines: list[bytes], mutations) -> bytes:
    lines = list(lines)
    for m in mutations:
        if not lines:
            break
        i = min(int(m[1] * len(lines)), len(lines) - 1)
        op = m[0]
        if op == "drop":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "corrupt":
            line = lines[i]
            at = int(m[2] * len(line))
            lines[i] = line[:at] + m[3] + line[at + len(m[3]):]
        elif op == "truncate_line":  # cut short; keep_newline=False merges it with the next line
            line = lines[i]
            lines[i] = line[: int(m[2] * len(line))] + (b"\n" if m[3] else b"")
        elif op == "insert":
            lines.insert(i, m[2] + b"\n")
        elif op == "swap":
            j = min(int(m[2] * len(lines)), len(lines) - 1)
            lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def consume(content) -> int:
    if isinstance(content, (str, bytes)):
        return len(content)
    return sum(len(chunk) for chunk in content)


# More examples for a deeper search: ROBUSTNESS_EXAMPLES=2000 pytest tests/robustness/test_properties.py
EXAMPLES = int(os.environ.get("ROBUSTNESS_EXAMPLES", "40"))


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(base=st.sampled_from(BASES), mutations=st.lists(mutation, min_size=1, max_size=8),
       cut=st.none() | st.floats(0.05, 1))
@example(base="training.log", mutations=[("insert", 0.0, b"\xef\xbb\xbf")], cut=None)  # a BOM on a line of its own
@example(base="training.log", mutations=[("corrupt", 0.0, 0.0, b"\x1f\x8b\x08")], cut=None)  # gzip's magic, no gzip
def test_mutated_logs_never_crash_and_add_up(base, mutations, cut):
    data = mutate(_LINES[base], mutations)
    if cut is not None:  # the whole file truncated, possibly mid-line or mid-payload
        data = data[: int(len(data) * cut)]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mutated.log"
        path.write_bytes(data)
        try:
            trace = read_trace(str(path))
        except CompilescopeError as exc:  # nothing readable left: a one-line error, not a crash
            assert "\n" not in str(exc)
            # A file that starts as gzip does is read as gzip (logs are gzipped without a .gz name too).
            gzipped = data.startswith(b"\x1f\x8b") and "the log cannot be read from its start" in str(exc)
            assert not data.strip() or "not a TORCH_TRACE log" in str(exc) or gzipped, str(exc)
            return
        with trace:
            stats = trace.stats
            assert sum(stats.outcomes[o] for o in OUTCOMES) == stats.total == expected_records(data)
            listed = Counter(p.category for p in stats.problems)
            for outcome in LISTED:
                assert listed[outcome] == stats.outcomes[outcome], outcome
            results = analyze(trace)
            written = 0
            for relpath, content in report_files(trace, results, ReportOptions()):
                assert ".." not in relpath.split("/") and not relpath.startswith("/")
                written += consume(content)
            assert written > 0

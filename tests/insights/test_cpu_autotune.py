"""CPU inference with mode="max-autotune" and freezing (torch 2.13, programs/cpu_autotune.py): where the compile time
went (g++ compiling each C++ GEMM candidate inside its search)."""

from __future__ import annotations

import gzip
import json

import pytest

from compilescope.analyses.autotuning import autotuning
from compilescope.analyses.compile_time import compile_times
from compilescope.ingest.reader import read_trace

from ..conftest import torch213

LOG = "cpu_autotune.log.gz"


def _raw_searches(log) -> tuple[list[tuple[str, float, float]], float]:
    """Each max-autotune search of the raw log: its shape, its seconds (B to E) and the seconds of the compile_file
    events (g++ runs) begun and ended inside it; and the seconds of the precompile steps before them. Read with json
    alone."""
    events = []
    payload: list[str] | None = None
    with gzip.open(log, "rt", encoding="utf-8") as f:
        for line in [*f, "end\n"]:
            if line.startswith("\t"):
                if payload is not None:
                    payload.append(line[1:])
                continue
            if payload:
                events.append(json.loads("".join(payload)))
            payload = [] if '{"chromium_event": ' in line else None
    searches, open_search, inside, begun, precompiling, precompiled = [], None, 0.0, None, None, 0.0
    for e in events:
        if e["name"].endswith("_template_precompiling"):
            if e["ph"] == "B":
                precompiling = e
            else:
                precompiled += (e["ts"] - precompiling["ts"]) / 1e6
        elif e["name"].endswith("_template_autotuning"):
            if e["ph"] == "B":
                open_search, inside = e, 0.0
            else:
                searches.append((e["args"]["autotune_shape"], (e["ts"] - open_search["ts"]) / 1e6, inside))
                open_search = None
        elif e["name"] == "compile_file" and open_search is not None:
            if e["ph"] == "B":
                begun = e
            else:
                inside += (e["ts"] - begun["ts"]) / 1e6
    return searches, precompiled


def test_the_candidates_compiled_inside_a_search_are_autotuning_time():
    """Each C++ candidate is compiled by g++ (compile_file) as it is first benchmarked, inside its search: that time
    is the search's (not C++ compile of the model), and said as the part of it spent compiling. Before, the phase
    table charged it to C++ compile and showed autotuning as the few percent left over."""
    raw, precompiled = _raw_searches(torch213(LOG))
    with read_trace(str(torch213(LOG))) as trace:
        at = autotuning(trace)
        [timed] = compile_times(trace).compiles
    assert [s.candidate_compile_seconds for s in at.searches] == pytest.approx([c for _, _, c in raw], abs=1e-6)
    assert all(0 < compiled < seconds for _, seconds, compiled in raw)  # g++ ran inside each search
    assert [s.compile_notes[0] for s in at.searches] == [f"{s.candidate_compile_seconds:.2f} s of it compiling"
                                                         for s in at.searches]
    searched = sum(seconds for _, seconds, _ in raw) + precompiled
    assert at.total_s == pytest.approx(searched, abs=1e-6)
    assert timed.phases["autotune"] == pytest.approx(searched, abs=1e-3)


"""torch 2.14 reads like torch 2.13: the same programs (tests/data/torch213/programs), recorded with each version,
give the same graph breaks, recompiles, errors, caches, symbols, transformed code, provenance and export events.

tests/data/torch214/README.md lists what legitimately differs between the two recordings; ALLOWED below names each.
"""

from __future__ import annotations

import gzip
import re
from typing import Any

import pytest

from compilescope.analyses.export import export_report
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.analyses.transformed import transformed_code
from compilescope.ingest.reader import read_trace

from .conftest import TORCH214, TORCH214_LOGS, torch213, torch214

# JSON paths whose values differ between the recordings, and why (README): nothing else may.
ALLOWED = {
    "compile_error_fallback.log": {  # g++'s temporary files, and the failing line of the generated C++
        ".errors.errors[0].compiler_errors[0]", ".errors.errors[0].detail", ".errors.errors[0].diagnostics[0].file",
        ".errors.errors[0].diagnostics[0].code_line"},
    "dynamic_shapes.log": {".recompiles.frames[0].steps[1].failed_guards[0].text"},  # a torch-internal line number
    "export_draft.log": {".dynamic_shapes.symbols[0].location.line",  # the program gained a docstring in between
                         ".dynamic_shapes.symbols[1].location.line",
                         ".dynamic_shapes.sizes[0].location.line",  # (the same symbols, grouped)
                         ".dynamic_shapes.sizes[1].location.line",
                         ".dynamic_shapes.sizes[0].locations[0].location.line",  # (each line a size was made at)
                         ".dynamic_shapes.sizes[1].locations[0].location.line",
                         ".findings[0].detail"},  # the issue's user line, export_draft.py:22 → :25
    "torch_warnings.log": {  # the guard texts' path, which torch cuts to a width, cut at another character
        ".recompiles.frames[0].steps[0].failed_guards[0].text", ".recompiles.frames[0].steps[1].failed_guards[0].text",
        ".recompiles.frames[0].steps[1].failed_guards[1].text", ".warnings.warnings[1].message"},
}
NO_CUDA = "No CUDA runtime is found"
_TIMED = re.compile(r"(_ms|_s|_us|seconds|time|duration|percent|share)$")
_PATH = re.compile(r"(?:/[\w.+-]+)+/([\w.+-]+\.\w+)")
# Times a finding says ("its recompiles took 3.94 s of the 26.27 s compiling (15%)"): measured, as _TIMED's keys
_MEASURED = re.compile(r"\d+(?:\.\d+)? (?:min|s|ms|µs)\b|\(\d+%\)")


def _facts(value: Any) -> Any:
    """What a version may not change: no times, and files by their names (each machine's paths differ)."""
    if isinstance(value, dict):
        return {k: _facts(v) for k, v in value.items() if not _TIMED.search(k) and k != "source"}
    if isinstance(value, list):
        return [_facts(v) for v in value]
    if isinstance(value, str):
        return _PATH.sub(r"\1", value)
    if isinstance(value, float):
        return None  # measured, not found
    return value


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if type(a) is not type(b):
        return [path]
    if isinstance(a, dict):
        return [d for k in sorted(set(a) | set(b))
                for d in ([f"{path}.{k}"] if k not in a or k not in b else _differences(a[k], b[k], f"{path}.{k}"))]
    if isinstance(a, list):
        return ([f"{path}[len]"] if len(a) != len(b) else []) + [
            d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


def _read(log) -> dict[str, Any]:
    with read_trace(str(log)) as trace:
        doc = insights(trace).to_json()
        doc.pop("compile_time")  # nothing but times
        # What the run ran on differs by design (torch 2.13.0+cpu against 2.14.1+cu130, a CUDA build): checked below.
        doc.pop("environment")
        doc["findings"] = [f for f in doc["findings"] if f["section"] != "compile_time"]
        doc["transformed"] = sorted((c.compile_id, c.function, c.decompiled, c.origin)
                                    for c in transformed_code(trace).values())
        doc["provenance"] = sorted({(f.file.rsplit("/", 1)[-1], f.line) for c in analyze_provenance(trace).compiles.values()
                                    for s in c.sections for k in s.kernels for frames in k.frames for f in frames})
        export = export_report(trace)  # its stacks run through torch, whose line numbers move between versions
        doc["export"] = {"detected": export.detected, "kinds": export.kinds, "success": export.success,
                         "issues": [(i.kind, i.failure_type, i.expr, i.result, i.op) for i in export.issues],
                         "symbols": [{k: v for k, v in sym.items() if k in ("symbol", "vr", "val", "source")}
                                     for sym in export.symbols]}
        doc["compiles"] = [(c.key, len(c.artifacts) > 0) for c in trace.sorted_compiles()]
        # Where in torch each warning was raised moves between versions (the file stays); torch 2.14's CUDA build,
        # run on this CPU machine, also says it found no CUDA runtime (README).
        doc["warnings"]["warnings"] = [{**w, "source": w["source"].rsplit(":", 1)[0]} for w in doc["warnings"]["warnings"]
                                       if not w["message"].startswith(NO_CUDA)]
        doc["findings"] = [{**f, "detail": _MEASURED.sub("T", f["detail"])} for f in doc["findings"]
                           if not f["detail"].startswith(NO_CUDA)]
        return _facts(doc)


@pytest.mark.parametrize("name", TORCH214)
def test_torch_214_finds_what_213_found(name):
    assert TORCH214, "no torch 2.14 logs"
    twin = torch213(name) if torch213(name).exists() else torch213(f"{name}.gz")
    old, new = _read(twin), _read(torch214(name))
    assert set(_differences(old, new)) == ALLOWED.get(name, set())


def test_the_214_logs_are_214_and_read_whole():
    for name in TORCH214:
        with read_trace(str(torch214(name))) as trace:
            assert not trace.stats.problems, name
            ran_on = insights(trace).environment
            if name != "export_draft.log":  # (TORCH_DTRACE's filter left out every record that says)
                assert (ran_on.torch, ran_on.cuda) == ("2.14.1+cu130", "13.0"), name
        # torch_version's payload; export_draft's log (TORCH_DTRACE's filter) has none, its paths name the venv.
        with gzip.open(torch214(name), "rt", encoding="utf-8") as f:
            assert "2.14.1+cu130" in f.read() or name == "export_draft.log", name


def test_a_break_met_in_two_compiled_frames_says_which_skipped_which():
    # differs/compiled_autograd (README): under torch 2.14 Dynamo compiles inspect's getattr_static as [1/0] (co_name
    # getattr_static) and _check_instance as [5/0] (co_name _check_instance); both dynamo_graph_break_reason records
    # (frame_id 1 and 5) say "Failed to handle graph break gracefully. Skipping the function and falling back to
    # eager" at _check_instance's line 1772, with no "frame skipped:" line: each compile gave up its own frame. One
    # break (one reason, one line) in both compiles; it named getattr_static's skip for [5/0] as well.
    from compilescope.analyses.analyze import analyze

    with read_trace(str(TORCH214_LOGS.parent / "differs" / "compiled_autograd.log.gz")) as trace:
        results = analyze(trace)
    (brk,) = [b for b in results.insights.graph_breaks.breaks if b.location and b.location.line == 1772]
    assert brk.compile_ids == ["[1/0]", "[5/0]"] and brk.skipped_frame.function == "getattr_static"
    assert brk.skipped_in == ["[1/0]"]
    assert brk.skipped_text.startswith("Dynamo skipped getattr_static (inspect.py:")
    assert brk.skipped_text.endswith(" (in [1/0]; not in [5/0])")
    # [5/0]'s own error says the frame it skipped
    skipped = {e.compile_id: e.skipped_frame.function for e in results.insights.errors.errors if e.skipped_frame}
    assert skipped["[5/0]"] == "_check_instance" and skipped["[1/0]"] == "getattr_static"

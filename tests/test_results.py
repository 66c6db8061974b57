"""Results is the one saved value: it round-trips exactly, and a report from a saved analysis is the same report."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilescope.analyses.analyze import analyze
from compilescope.analyses.results import RESULTS_FINGERPRINT, RESULTS_VERSION, Results, saved_classes
from compilescope.errors import CompilescopeError
from compilescope.ingest.reader import read_trace
from compilescope.model.codec import CodecError, decode, encode
from compilescope.model.ids import CompileId
from compilescope.model.trace import DUMP, Artifact, Frame

from .conftest import SHARED_LOGS, cuda211, peer, TORCH213, TORCH213_LOGS, run_cli, shared, shared_dirs_present, torch213

def _round_trip(path: Path) -> None:
    with read_trace(str(path)) as trace:
        results = analyze(trace)
        saved = orjson.dumps(results.to_json())
        with Results.from_json(orjson.loads(saved)) as loaded:
            assert loaded == results  # every field, payload bytes included
            assert orjson.dumps(loaded.to_json()) == saved
            assert loaded.insights == results.insights and loaded.insights is not None
            assert loaded.trace.payload_text(_some_payload(loaded)) == trace.payload_text(_some_payload(results))


def _some_payload(results: Results):
    return next((a.payload for c in results.trace.compiles.values() for a in c.artifacts if a.payload), None)


@pytest.mark.parametrize("name", TORCH213)
def test_results_round_trip_on_torch213_logs(name):
    _round_trip(TORCH213_LOGS / name)


def test_shared_logs_are_listed():
    shared_dirs_present()
    assert len(SHARED_LOGS) >= 20


@pytest.mark.parametrize("name", SHARED_LOGS)
def test_results_round_trip_on_shared_logs(name):
    _round_trip(shared(name))


def test_the_fields_that_were_left_out_are_saved():
    """Artifact.page (dump pages) and Results.insights were missing from the old to_json."""
    with read_trace(str(torch213("graph_breaks.log"))) as trace:
        doc = orjson.dumps(analyze(trace).to_json())
    assert b'"insights":{"$t":"analyses.insights.Insights"' in doc
    dump = Artifact(3, None, "dump_file", "<eval_with_key>.7", "html", DUMP, 12, page="eval_with_key_7_2.html")
    back = decode(orjson.loads(orjson.dumps(encode(dump))), saved_classes())
    assert back == dump and back.filename == "eval_with_key_7_2.html"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(TORCH213), keep=st.floats(0.0, 1.0))
def test_results_round_trip_on_any_prefix_of_a_log(tmp_path_factory, name, keep):
    """A log cut anywhere (a crashed run) still gives results that round-trip exactly."""
    data = (TORCH213_LOGS / name).read_bytes()
    path = tmp_path_factory.mktemp("cut") / name
    path.write_bytes(data[: int(len(data) * keep)])
    try:
        _round_trip(path)
    except CompilescopeError as exc:  # an empty prefix is not a log: that is the reader's one-line error
        assert "not a TORCH_TRACE log" in str(exc) or "the log is empty" in str(exc)


_keys = st.one_of(st.text(max_size=5), st.integers(), st.none(),
                  st.builds(CompileId, st.none() | st.integers(0, 9), st.integers(0, 9), st.integers(0, 9), st.integers(0, 3)))
_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(),
                    st.binary(max_size=20), st.builds(Frame, st.text(max_size=8), st.integers(0, 99), st.text(max_size=8)))
_values = st.recursive(_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.tuples(inner, inner),
    st.dictionaries(st.text(max_size=4), inner, max_size=4),  # "$"-keys included: a log's metadata may hold them
    st.dictionaries(_keys, inner, max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3).map(Counter),
), max_leaves=12)


# No deadline: hypothesis's 200 ms per example failed this once under a full machine, with nothing wrong (3,000 examples pass).
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_the_codec_round_trips_any_value(value):
    classes = {"model.trace.Frame": Frame, "model.ids.CompileId": CompileId}
    doc = orjson.loads(orjson.dumps(encode(value)))
    back = decode(doc, classes)
    assert encode(back) == encode(value)
    if not _has_nan(value):
        assert back == value and type(back) is type(value)


def _has_nan(value) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(_has_nan(k) or _has_nan(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(map(_has_nan, value))
    return False


def test_a_saved_file_builds_only_known_classes():
    with pytest.raises(CodecError, match="unknown type"):
        decode({"$t": "os.system", "command": "true"}, {})
    with pytest.raises(CodecError, match="version"):
        Results.from_json({"format": "compilescope.results", "version": RESULTS_VERSION + 1, "results": {}})


def saved_form_fingerprint(classes: dict[str, type]) -> str:
    """A digest of the saved form: each saved class's name and its saved fields' (compare=True) names and
    annotations as written; a spool class (codec_state) by its name."""
    lines = []
    for name, cls in sorted(classes.items()):
        lines.append(name if dataclasses.is_dataclass(cls) else f"{name} (codec_state)")
        if dataclasses.is_dataclass(cls):
            lines += [f"  {f.name}: {f.type if isinstance(f.type, str) else repr(f.type)}"
                      for f in dataclasses.fields(cls) if f.compare]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def test_the_saved_form_does_not_change_without_its_version():
    found = saved_form_fingerprint(saved_classes())
    assert found == RESULTS_FINGERPRINT, (
        f"the saved classes' fields changed (fingerprint {found}, RESULTS_FINGERPRINT {RESULTS_FINGERPRINT}) but "
        f"RESULTS_VERSION is still {RESULTS_VERSION}: a file saved before would load the new fields as their defaults. "
        f"In analyses/results.py bump RESULTS_VERSION, say what it added in RESULTS_ADDED, and set "
        f"RESULTS_FINGERPRINT = {found!r} (only the fingerprint if no saved field changed, an annotation respelled)")


def test_the_fingerprint_changes_with_any_saved_field():
    classes = saved_classes()
    base = saved_form_fingerprint(classes)

    def frame(*fields):  # model.trace.Frame with one field changed
        return dataclasses.make_dataclass("Frame", [("filename", "str"), *fields, ("name", "str"),
                                                    ("loc", "str | None", dataclasses.field(default=None))])

    assert saved_form_fingerprint({**classes, "model.trace.Frame": frame(("line", "int"))}) == base
    changed = [frame(("line_number", "int")), frame(("line", "str")), frame(("line", "int"), ("column", "int"))]
    found = {saved_form_fingerprint({**classes, "model.trace.Frame": cls}) for cls in changed}
    assert len(found) == 3 and base not in found
    unsaved = frame(("line", "int"), ("cache", "int", dataclasses.field(compare=False)))
    assert saved_form_fingerprint({**classes, "model.trace.Frame": unsaved}) == base  # (a cache is not saved)


# What version 10 added to the classes of version 9 (d66e425's saved form): every one a field with a default, and
# the new classes (Aoti, Numerics, Freezing, CompiledSplit...) only within them.
ADDED_IN_10 = {
    "analyses.autotuning.TemplateSearch": ("candidate_compile_seconds", "device", "site"),
    "analyses.caches.Caches": ("reused_other_process",),
    "analyses.check.Rules": ("max_autotune_seconds", "max_avoidable_recompiles", "no_inductor_random"),
    "analyses.compile_summary.CompileSummary": ("moved_lines", "recompile_notes", "subclass_inputs", "unfinished",
                                                "unfinished_note"),
    "analyses.compile_time.CompileTime": ("unfinished",),
    "analyses.diagnosis.StageOutcome": ("numerics",),
    "analyses.run_facts.FrameFacts": ("expected_recompile_ids", "failed_anywhere", "unknown_recompile_ids"),
    "analyses.run_facts.GraphFacts": ("kernel_work",),
    "analyses.run_facts.RunFacts": ("aoti_packages", "numerics"),
    "analyses.divergence.CompileTimeSkew": ("notable",),
    "analyses.divergence.MultiRankAnalysis": ("collectives_in_graphs", "graph_collectives"),
    "analyses.environment.TorchTestSetting": ("kind",),
    "analyses.compile_errors.CompileError": ("hints_set_aside", "in_fsdp_hook", "in_with", "torch_printed"),
    "analyses.graph_breaks.GraphBreak": ("fsdp_call", "in_fsdp_hook", "in_with", "subclass_advice"),
    "analyses.graph_breaks.GraphBreaks": ("split",),
    "analyses.insights.Insights": ("aoti", "freezing", "numerics"),
    "analyses.provenance.ProvenanceSection": ("noted_work",),
    "analyses.recompiles.FailedGuard": ("metadata_after", "metadata_before", "subclass", "subclass_object"),
    "analyses.recompiles.RecompileStep": ("also_changed", "expected", "same_settings", "unfinished", "unknown_settings"),
    "analyses.runtime.ProfileRuntime": ("slow_calls",),
    "analyses.sources.GraphBreakSite": ("torch_location",),
    "analyses.sources.LineNotes": ("aoti", "autotune"),
    "analyses.sources.Sources": ("outside_name",),
    "analyses.torch_warnings.TorchWarning": ("failure",),
    "model.trace.Artifact": ("stack",),
    "model.trace.Compile": ("subclass_tensors",),
}


# What version 11 added (fields of classes version 10 had; its new classes hang only from these).
ADDED_IN_11 = {
    "analyses.aoti.Aoti": ("build",),
    "analyses.aoti.AotiPackage": ("contents",),
    "analyses.check.Rules": ("no_static_aoti_packages", "user_kernels", "max_run_time_ratio"),
    "analyses.compile_time.CompileTime": ("called_from",),
    "analyses.diagnosis.DiagnoseResult": ("control",),
    "analyses.diagnosis.StageOutcome": ("expected_recompiles", "printed"),
    "analyses.diagnosis.Verdict": ("printed", "run_to_run"),
    "analyses.run_facts.RunFacts": ("user_kernels", "runtime"),
    "analyses.compile_errors.CompileError": ("skipped_before",),
    "analyses.graph_breaks.GraphBreak": ("skipped_in", "skipped_before", "amp_said_at", "amp_calls",
                                         "backward_compiled", "backward_by_compiled_autograd"),
    "analyses.insights.Insights": ("user_kernels",),
    "analyses.provenance.ProvenanceSection": ("user_kernel_notes", "apart_notes"),
    "analyses.runtime.Comparison": ("compiled_slow_us", "compiled_slow_calls"),
    "analyses.runtime.ProfileRuntime": ("capabilities", "idle_by_cpu"),
    "analyses.sources.InstalledGuards": ("first_use",),
    "analyses.sources.LineNotes": ("numerics", "user_kernels"),
    "analyses.sources.SourceFile": ("linked",),
    "model.profile.Profile": ("capabilities",),
}


# What version 12 added (fields of classes version 11 had; its new classes hang only from these).
ADDED_IN_12 = {
    "analyses.aoti.Aoti": ("calls",),
    "analyses.check.Rules": ("no_late_hooks", "no_custom_op_mutations", "allow_aoti_load_crash"),
    "analyses.compile_summary.CompileSummary": ("dropped_calls",),
    "analyses.compile_time.TimelineRow": ("open_phase",),
    "analyses.diagnosis.DiagnoseResult": ("controls", "seed"),
    "analyses.diagnosis.MinifyResult": ("repro_path",),
    "analyses.diagnosis.PrintedChange": ("alike",),
    "analyses.diagnosis.StageOutcome": ("op_mutations", "wrong_graph"),
    "analyses.diagnosis.Verdict": ("testing_hooks",),
    "analyses.run_facts.RunFacts": ("late_hooks", "unread_custom_ops"),
    "analyses.dynamic_shapes.GuardAdded": ("made_by",),
    "analyses.dynamic_shapes.Specialization": ("made_by",),
    "analyses.dynamic_shapes.SymbolCreated": ("made_by",),
    "analyses.compile_errors.CompilerDiagnostic": ("kernel",),
    "analyses.insights.Insights": ("op_mutations",),
    "analyses.runtime.SlowCall": ("overlap_us", "during", "first_on_thread", "first_op", "first_op_in_profile"),
}


# What version 13 added (fields of classes version 12 had; its new classes hang only from these).
ADDED_IN_13 = {
    "analyses.diagnosis.ProgramSeed": ("module",),
    "analyses.op_mutations.OpMutations": ("functionalized",),
    "analyses.op_mutations.OpSource": ("form", "pointers"),
    "analyses.op_mutations.UndeclaredMutation": ("form", "cloned"),
    "analyses.results.Results": ("metric_pages",),
    "analyses.sources.LineNotes": ("state_changes",),
}

# What version 14 added (Trace.found_once is a cache, compare=False: not saved).
ADDED_IN_14 = {
    "analyses.op_mutations.OpCall": ("store_found",),
    "analyses.sources.LineNotes": ("found_stores",),
}
ADDED_IN_15 = {
    "analyses.op_mutations.OpCall": ("unplaced",),
    "analyses.op_mutations.DroppedCall": ("overload_unknown",),
}
ADDED_IN_16 = {
    "analyses.sources.GraphBreakSite": ("in_fsdp_hook",),
}
ADDED_IN_17 = {
    "analyses.compile_summary.CompileSummary": ("recompile_more", "recompile_rest", "recompile_expected"),
    "analyses.compile_time.CompileTime": ("model_local",),
}
ADDED_IN_18 = {
    "analyses.recompiles.FrameRecompiles": ("runs", "named_apart"),
    "analyses.dynamic_shapes.SymbolCreated": ("guarded_value",),
    "analyses.recompiles.StateChange": ("users_name",),
    "analyses.compile_summary.MetricGroups": ("elsewhere",),
    "analyses.transformed.TransformedCode": ("guards_inline",),
}
ADDED_IN_19 = {
    "analyses.dynamic_shapes.DynamicShapes": ("discarded_attempts",),
    "analyses.caches.CompileCache": ("label", "names_package"),
}
ADDED_IN_20 = {
    "analyses.export.ExportIssue": ("tlparse_reads",),
    "model.trace.ExportEvent": ("tlparse_reads",),
}


def _as_version_9(value):
    """A saved document as version 9 saved it: without the fields versions 10 to 20 added."""
    if isinstance(value, list):
        return [_as_version_9(v) for v in value]
    if not isinstance(value, dict):
        return value
    dropped = sum((added.get(value.get("$t"), ()) for added in (ADDED_IN_10, ADDED_IN_11, ADDED_IN_12, ADDED_IN_13,
                                                                    ADDED_IN_14, ADDED_IN_15, ADDED_IN_16,
                                                                    ADDED_IN_17, ADDED_IN_18, ADDED_IN_19, ADDED_IN_20)), ())
    return {k: _as_version_9(v) for k, v in value.items() if k not in dropped}


def test_a_file_saved_by_version_9_is_refused_saying_what_it_lacks_and_how_to_save_it_again(tmp_path, capsys):
    # module_state (README): [0/3] is model.eval() (dropout's training True -> False, a mode no compile had) and [0/5]
    # backbone.requires_grad_(True): 2 of its 6 recompiles expected. A version 9 file has no RecompileStep.expected:
    # loaded with the defaults filled in, all 6 would be avoidable, and check --max-avoidable-recompiles would fail on
    # them. The defaults are claims, not "unknown", so the file is refused, not migrated.
    with read_trace(str(torch213("module_state.log.gz"))) as trace:
        doc = analyze(trace).to_json()
    v9 = _as_version_9({**doc, "version": 9})
    assert '"expected"' not in orjson.dumps(v9["results"]).decode() and '"numerics"' not in orjson.dumps(v9).decode()
    saved = tmp_path / "v9.json"
    saved.write_bytes(orjson.dumps(v9))
    assert run_cli("report", "--load", saved, "-o", tmp_path / "out", "--no-browser") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results saved in format version 9, by an older compilescope: they lack whether " \
        "each recompile was expected (a module's mode, a parameter's requires_grad) or avoidable" in err
    assert "the AOTInductor packages" in err and "Save them again from the log: compilescope LOG --save FILE" in err
    assert not (tmp_path / "out" / "index.html").exists()
    # What the refusal prevents: the version 9 file read as if it were 10 loads, every recompile avoidable.
    with Results.from_json({**v9, "version": RESULTS_VERSION}) as migrated:
        steps = migrated.insights.recompiles.frames[0].steps
        assert len(steps) == 6 and [s.expected for s in steps] == [None] * 6
    with Results.from_json(doc) as loaded:  # the current version: the 2 expected ones
        assert [s.compile_id for s in loaded.insights.recompiles.frames[0].steps if s.expected] == ["[0/3]", "[0/5]"]


LOAD_CASES = [
    ("graph_breaks.log", []),
    ("export_draft.log", []),  # the export page is the index
    ("provenance.log", ["-p"]),
    ("compile_error_raises.log", []),
]


@pytest.mark.parametrize("name, flags", LOAD_CASES)
def test_report_from_a_saved_analysis_is_byte_identical(tmp_path, name, flags):
    log = torch213(name)
    assert run_cli(log, "-o", tmp_path / "direct", "--no-browser", *flags) == 0
    assert run_cli(log, "-o", tmp_path / "saving", "--no-browser", "--save", tmp_path / "saved.json.gz", *flags) == 0
    assert run_cli("report", "--load", tmp_path / "saved.json.gz", "-o", tmp_path / "loaded", "--no-browser", *flags) == 0
    direct = _tree(tmp_path / "direct")
    assert len(direct) >= 8 and "index.html" in direct
    assert _tree(tmp_path / "saving") == direct
    assert _tree(tmp_path / "loaded") == direct


def test_a_saved_analysis_needs_no_log(tmp_path):
    log = tmp_path / "gone.log"
    log.write_bytes(torch213("recompiles.log").read_bytes())
    assert run_cli(log, "-o", tmp_path / "direct", "--no-browser", "--save", tmp_path / "s.json") == 0
    log.unlink()
    assert run_cli("report", "--load", tmp_path / "s.json", "-o", tmp_path / "loaded", "--no-browser") == 0
    assert _tree(tmp_path / "loaded") == _tree(tmp_path / "direct")


def test_load_refuses_what_is_not_a_saved_analysis(tmp_path, capsys):
    assert run_cli("report", "--load", torch213("graph_breaks.log"), "-o", tmp_path / "o", "--no-browser") == 2
    assert "not a saved compilescope analysis" in capsys.readouterr().err
    (tmp_path / "x.json").write_text(
        f'{{"format": "compilescope.results", "version": {RESULTS_VERSION}, "results": {{"$t": "builtins.eval"}}}}')
    assert run_cli("report", "--load", tmp_path / "x.json", "-o", tmp_path / "o", "--no-browser") == 2
    assert "unknown type 'builtins.eval'" in capsys.readouterr().err


# A saved file edited by hand (a field of another type, a tagged value that is not one): one line saying which
# field, the exit code of bad input, and no report begun.
TAMPERED = [
    (("statuses",), 5, "analyses.results.Results.statuses: dict[model.ids.CompileId | None, str] expected, found int"),
    (("trace", "year"), "abc", "model.trace.Trace.year: int | None expected, found str"),
    (("trace", "store"), "x", "model.trace.Trace.store: PayloadStore expected, found str"),
    # One element of a list of another type (read element by element as it is decoded, not checked after)
    (("compiles", "[0/0]", "metrics", "empty"), ["code_gen_time_s", 7],
     "analyses.compile_summary.MetricGroups.empty: list[str] expected, found list"),
    (("trace", "year"), {"$f": "abc"}, "a saved $f value that cannot be read"),
    (("trace", "year"), {"$int": "x1"}, "a saved $int value that cannot be read"),
    (("trace", "year"), {"$tuple": 5}, "a saved $tuple value that cannot be read"),
    (("trace", "year"), {"$b64": "@@"}, "a saved $b64 value that cannot be read"),
    (("trace", "year"), {"$utf8": 5}, "a saved $utf8 value that cannot be read"),
    (("trace", "year"), {"$counter": [[1]]}, "a saved $counter value that cannot be read"),
    (("trace", "year"), {"$d": [5]}, "a saved $d value that cannot be read"),
]


@pytest.fixture(scope="module")
def saved_doc(tmp_path_factory):
    saved = tmp_path_factory.mktemp("saved") / "s.json"
    assert run_cli(torch213("recompiles.log"), "-o", saved.parent / "o", "--no-browser", "--save", saved) == 0
    return orjson.loads(saved.read_bytes())


@pytest.mark.parametrize("where, value, message", TAMPERED)
def test_a_tampered_saved_analysis_is_refused_in_one_line_before_anything_is_written(tmp_path, capsys, saved_doc,
                                                                                     where, value, message):
    doc = orjson.loads(orjson.dumps(saved_doc))
    *parents, last = where
    target = doc["results"]
    for key in parents:
        target = target[key]
    target[last] = value
    (tmp_path / "t.json").write_bytes(orjson.dumps(doc))
    assert run_cli("report", "--load", tmp_path / "t.json", "-o", tmp_path / "out", "--no-browser") == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"compilescope: error: {tmp_path / 't.json'}: not a loadable compilescope analysis: {message}")
    assert not (tmp_path / "out").exists()
    with pytest.raises(CompilescopeError, match=re.escape(message)):
        Results.from_json(doc)


def test_a_saved_analysis_whose_fields_do_not_hold_together_is_refused_in_one_line(tmp_path, capsys, saved_doc):
    # Every field of its type, but the compiles have no status: what fails is said as bad input, not as a bug.
    doc = orjson.loads(orjson.dumps(saved_doc))
    doc["results"]["statuses"] = {"$d": []}
    (tmp_path / "t.json").write_bytes(orjson.dumps(doc))
    assert run_cli("report", "--load", tmp_path / "t.json", "-o", tmp_path / "out", "--no-browser") == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"compilescope: error: {tmp_path / 't.json'}: the saved analysis does not hold together (")
    assert line.endswith("was it edited? Save it again from its log")
    assert not (tmp_path / "out").exists()  # (its first pages were written before the one that failed)


def test_an_analysis_saved_from_python_has_an_empty_raw_log_and_says_how_to_get_it(tmp_path, capsys):
    # Results.to_json() holds no copy of the log (--save adds it). A saved file is untrusted, so the path it names is
    # never read (it could name any file: test_round_four): raw.log is empty, and stderr says so and how to have it.
    import compilescope

    log = tmp_path / "r.log"
    log.write_bytes(torch213("recompiles.log").read_bytes())
    with compilescope.analyze(log) as results:
        (tmp_path / "p.json").write_bytes(orjson.dumps(results.to_json()))
    assert run_cli("report", "--load", tmp_path / "p.json", "-o", tmp_path / "a", "--no-browser") == 0
    assert (tmp_path / "a" / "raw.log").read_bytes() == b""
    err = capsys.readouterr().err
    assert "holds no copy of its log (saved with to_json(), not --save): the report's raw.log is empty" in err
    assert f"give the log, {log}, as compilescope {log} -o OUT, or save it with --save" in err
    compilescope.report(tmp_path / "p.json", tmp_path / "b")  # (Python: the same)
    assert (tmp_path / "b" / "raw.log").read_bytes() == b""
    # Loaded in Python and reported: the same, though the log is still there. Results analysed here copy it.
    with Results.from_json(orjson.loads((tmp_path / "p.json").read_bytes())) as loaded:
        compilescope.report(loaded, tmp_path / "c")
    assert (tmp_path / "c" / "raw.log").read_bytes() == b""
    with compilescope.analyze(log) as results:
        compilescope.report(results, tmp_path / "d")
    assert (tmp_path / "d" / "raw.log").read_bytes() == log.read_bytes()
    # A file cannot claim the trace was read here: what encode() leaves out is not read back (unknown field).
    doc = orjson.loads((tmp_path / "p.json").read_bytes())
    doc["results"]["trace"]["read_from_source"] = True
    (tmp_path / "forged.json").write_bytes(orjson.dumps(doc))
    assert run_cli("report", "--load", tmp_path / "forged.json", "-o", tmp_path / "e", "--no-browser") == 2
    assert "unknown fields ['read_from_source']" in capsys.readouterr().err
    assert not (tmp_path / "e").exists()


def test_save_refuses_several_logs(tmp_path, capsys):
    assert run_cli(peer("multi_rank_logs"), "-o", tmp_path / "o", "--no-browser", "--save", tmp_path / "s.json") == 2
    assert "--save saves the analysis of one log" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "o").exists()


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_public_api_analyzes_and_saves(tmp_path):
    import compilescope

    with compilescope.analyze(torch213("recompiles.log")) as results:
        assert isinstance(results, compilescope.Results) and isinstance(results.trace, compilescope.Trace)
        assert results.insights.recompiles.total == 7
        with compilescope.Results.from_json(orjson.loads(orjson.dumps(results.to_json()))) as loaded:
            assert loaded == results


def test_report_takes_the_results_of_analyze_without_analysing_again(tmp_path, monkeypatch):
    import compilescope
    import compilescope.api

    log = torch213("recompiles.log")
    assert run_cli(log, "-o", tmp_path / "cli", "--no-browser") == 0
    with compilescope.analyze(log) as results:
        calls = []
        monkeypatch.setattr(compilescope.api, "analyze_trace", lambda *a: calls.append(a))
        index = compilescope.report(results, out=tmp_path / "api")
        assert calls == [] and index == str(tmp_path / "api" / "index.html")
    assert _tree(tmp_path / "api") == _tree(tmp_path / "cli")


def test_report_takes_a_saved_analysis_as_report_load_does(tmp_path):
    import compilescope

    log = torch213("graph_breaks.log")
    assert run_cli(log, "-o", tmp_path / "cli", "--no-browser", "--save", tmp_path / "s.json.gz") == 0
    compilescope.report(tmp_path / "s.json.gz", out=tmp_path / "api")
    assert _tree(tmp_path / "api") == _tree(tmp_path / "cli")


def test_analyze_takes_profiles_as_report_does_and_a_str_is_one_path(tmp_path):
    import compilescope

    log, profile = cuda211("profile_launch_bound.log.gz"), cuda211("profile_launch_bound.profile.json.gz")
    with compilescope.analyze(log) as plain, compilescope.analyze(log, profiles=str(profile)) as one, \
            compilescope.analyze(log, profiles=[profile]) as listed, compilescope.analyze(log, profiles=None) as none:
        assert plain.runtime is None and one.runtime is not None and one == listed
        # None is no profile, as leaving it out is (it raised TypeError: 'NoneType' object is not iterable).
        assert none.runtime is None and none == plain
    # (It read the string's characters as paths: "cannot read profile j".)
    with pytest.raises(CompilescopeError, match=r"^cannot read profile missing\.json: "):
        compilescope.report(log, out=tmp_path / "o", profiles="missing.json")


def test_a_closed_trace_or_a_wrong_source_is_a_one_line_error(tmp_path):
    import compilescope

    with compilescope.analyze(torch213("recompiles.log")) as results:
        pass
    for use in (lambda: compilescope.report(results, out=tmp_path / "a"), lambda: compilescope.analyze(results.trace),
                lambda: compilescope.report(results.trace, out=tmp_path / "b")):
        with pytest.raises(CompilescopeError, match=r"^the Trace of .*recompiles\.log is closed \(its payloads are gone\)"):
            use()
    with pytest.raises(CompilescopeError, match="^source: a path expected"):
        compilescope.report(5, out=tmp_path / "c")
    assert not any(tmp_path.iterdir())


def test_results_and_trace_print_short(tmp_path):
    # A notebook cell ending in `results` printed the whole model (12 MB for a GPT-2 log).
    import compilescope

    log = torch213("recompiles.log")
    with compilescope.analyze(log) as results:
        # 9 compile ids, as summary counts them (9 compilation_metrics records); the records outside any are not one
        assert repr(results) == (f"<Results of {str(log)!r}: 9 compile ids, 1 failure or restart, "
                                 "0 distinct graph breaks, 7 recompiles>")
        assert repr(results.trace) == f"<Trace of {str(log)!r}: 9 compile ids, {results.trace.stats.total} records>"
    assert repr(results).endswith(", closed>")


def test_what_the_functions_raise_is_caught_by_its_documented_names(tmp_path):
    # The README names CompilescopeError; `import compilescope` alone must give it (and the two kinds of it).
    import compilescope
    from compilescope import errors
    from compilescope.model import codec

    assert compilescope.CompilescopeError is errors.CompilescopeError
    assert issubclass(compilescope.OutputExistsError, compilescope.CompilescopeError)
    assert issubclass(compilescope.CodecError, compilescope.CompilescopeError) and compilescope.CodecError is codec.CodecError
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "index.html").write_text("an earlier report")
    with pytest.raises(compilescope.OutputExistsError, match="pass overwrite=True"):
        compilescope.report(torch213("graph_breaks.log"), tmp_path / "out")
    with pytest.raises(compilescope.CodecError, match="not a compilescope results file"):
        Results.from_json({"format": "something else"})


def test_closed_results_refuse_to_save_and_unclosed_ones_close_quietly():
    import gc
    import warnings

    import compilescope

    results = compilescope.analyze(torch213("graph_breaks.log"))
    results.close()
    with pytest.raises(compilescope.CompilescopeError, match=r"are closed: analyze the log again to save them$"):
        results.to_json()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        left = compilescope.analyze(torch213("graph_breaks.log"))  # never closed, as in a notebook
        del left
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]

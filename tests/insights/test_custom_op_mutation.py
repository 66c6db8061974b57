"""A custom op that writes into its argument but declares mutates_args=() (tests/data/torch213
programs/custom_op_mutation.py): a silent wrong result torch logs nothing about. The op is told by name, with the line
that writes and the lines that call it, where the user reads (Fix first, the results section, the source page's
lines); its fixed run, the functional custom ops of custom_ops.py and a body that only reads are not. Expected values
are read from the raw log and the program, not from our output."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.analyses.op_mutations.definitions import custom_op_sources
from compilescope.analyses.op_mutations.op_bodies import body_writes
from compilescope.cli import main
from compilescope.ingest.reader import read_trace

from ..analysis_files import insight_files, insights_here, op_mutation_files, op_mutations_here
from ..conftest import line_holding, torch213, torch213_moved
from ..tracelog import raw_records
from .test_summary_cli import _documented_keys, _paths

LOG = "custom_op_mutation.log.gz"
FIXED = "custom_op_mutation_fixed.log.gz"
PROGRAMS = Path(__file__).parents[1] / "data" / "torch213" / "programs"
PROGRAM = PROGRAMS / "custom_op_mutation.py"


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _graphs(log: str, kind: str) -> dict[int, str]:
    """frame id -> the payload of its `kind` graph, read without compilescope."""
    return {e["frame_id"]: p for e, p in raw_records(torch213(log)) if kind in e}


def test_the_log_shows_the_ops_taken_for_functional_and_the_unused_call_dropped():
    """What the analysis rests on, in the raw log: Dynamo's graphs call both ops under the calling lines; AOTAutograd
    calls scale plainly (no auto_functionalized: functional) and no longer calls clamp_np, whose result Dynamo's graph
    frees on its own line; the fixed run's AOTAutograd wraps both (mutates_args={"x"})."""
    dynamo, aot = _graphs(LOG, "dynamo_output_graph"), _graphs(LOG, "aot_inference_graph")
    assert f"custom_op_mutation.py:{_line('scaled = scale(x, 2.0)')} in shift_then_scale" in dynamo[0]
    assert "torch.ops.mylib.scale.default(l_x_, 2.0)" in dynamo[0]
    assert "torch.ops.mylib.scale.default(arg0_1, 2.0)" in aot[0] and "auto_functionalized" not in aot[0]
    assert f"custom_op_mutation.py:{_line('clamp_np(x, 0.5)')} in clamp_then_add" in dynamo[1]
    assert ("clamp_np_default = torch.ops.mylib.clamp_np.default(l_x_, 0.5);  clamp_np_default = None"
            in dynamo[1].replace(': "f32[8][1]cpu"', ""))
    assert "mylib" not in aot[1]
    fixed = _graphs(FIXED, "aot_inference_graph")
    assert "auto_functionalized_v2(torch.ops.mylib.scale.default" in fixed[0]
    assert "auto_functionalized_v2(torch.ops.mylib.clamp_np.default" in fixed[1]


def test_each_op_is_told_with_its_write_and_its_calls(tmp_path):
    found = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path)))
    by_op = {op.op: op for op in found.ops}
    assert list(by_op) == ["mylib::scale", "mylib::clamp_np"]
    scale, clamp = by_op["mylib::scale"], by_op["mylib::clamp_np"]
    assert (scale.function, scale.arguments, scale.declared) == ("scale", ["x"], "MUTATES")
    assert scale.defined_at.line == _line('custom_op("mylib::scale"')
    assert [(w.line, w.code) for w in scale.writes] == [(_line("    x.mul_(factor)"), "x.mul_(factor)")]
    assert [(c.compile_id, c.location.line, c.dropped) for c in scale.calls] == [
        ("[0/0]", _line("scaled = scale(x, 2.0)"), False)]
    # Through the NumPy view: `a = x.numpy()`, then `out=a`
    assert [w.line for w in clamp.writes] == [_line("np.clip(a, -limit, limit, out=a)")]
    assert [(c.compile_id, c.location.line, c.dropped) for c in clamp.calls] == [
        ("[1/0]", _line("clamp_np(x, 0.5)"), True)]
    assert "leaves the call out" in clamp.why and "leaves the call out" not in scale.why
    assert 'mutates_args={"x"}' in scale.advice and "--fresh-cache" in scale.advice


def test_findings_and_source_lines_say_it(tmp_path):
    results = analyze(read_trace(torch213_moved(LOG, tmp_path)))
    titles = [f.title for f in results.insights.findings]
    # MUTATES is the program's line 21, `{"x"} if FIXED else ()`, FIXED its line 20, the environment's MUTOP_VARIANT
    said = (f'line {_line("MUTATES = ")}: {{"x"}} if MUTOP_VARIANT is "fixed", else ()')
    assert titles[:2] == [f"mylib::scale writes into x, which its mutates_args=MUTATES does not name ({said})",
                          f"mylib::clamp_np writes into x, which its mutates_args=MUTATES does not name ({said})"]
    (page,) = [f for f in results.sources.files if f.path.endswith("custom_op_mutation.py")]
    marked = {line: [n["why"] for n in notes.numerics] for line, notes in page.notes.items() if notes.numerics}
    assert set(marked) == {_line(t) for t in ("    x.mul_(factor)", "np.clip(a, -limit, limit, out=a)", "scaled = scale(x, 2.0)",
                                              "clamp_np(x, 0.5)", "shifted = x + 1")}
    # x + 1 reads x before scale's call; the output code calls scale, then cpp_fused_add_mul_0 (provenance: the
    # kernel of post-grad `add`, Dynamo's `shifted`), which reads arg0_1 scaled
    assert marked[_line("shifted = x + 1")] == [
        f"reads x before the call of mylib::scale at custom_op_mutation.py:{_line('scaled = scale(x, 2.0)')}, but the "
        "compiled code computes it in cpp_fused_add_mul_0 after that call, so it reads what mylib::scale wrote"]
    assert marked[_line("clamp_np(x, 0.5)")] == [
        "calls mylib::clamp_np, whose result is unused: the compiled code leaves the call out, and its write into x "
        "with it"]


def test_summary_json_documents_its_keys(tmp_path, capsys):
    assert main(["summary", "--json", str(torch213_moved(LOG, tmp_path))]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [op["op"] for op in doc["custom_op_mutations"]["ops"]] == ["mylib::scale", "mylib::clamp_np"]
    assert sorted(set(_paths(doc)) - _documented_keys()) == []


@pytest.mark.parametrize("log", [FIXED, "custom_ops.log.gz", "custom_ops_fixed.log.gz"])
def test_no_alarm_where_the_ops_are_declared_or_only_read(tmp_path, log):
    assert not op_mutations_here(read_trace(torch213_moved(log, tmp_path)))
    assert not any("mutates_args" in f.title for f in insights_here(read_trace(torch213_moved(log, tmp_path))).findings)


def test_the_functional_custom_ops_were_read_and_write_nothing():
    """Not an alarm left out for want of reading: custom_ops.py's ops are found, and their bodies (x.detach().numpy()
    passed to NumPy, which returns new arrays) write nothing."""
    ops = custom_op_sources((PROGRAMS / "custom_ops.py").read_text())
    assert set(ops) == {"mylib::softclip", "mylib::gelu_np", "mylib::bucketize"}
    assert [(s.function, s.writes) for defs in ops.values() for s in defs] == [
        ("softclip", []), ("gelu_np", []), ("bucketize_eager", [])]


def test_without_the_program_on_this_machine_nothing_is_claimed_and_the_gate_says_it_did_not_check(tmp_path, capsys):
    """The body is the program's: a machine without the file (a folder holding none) reads nothing, so claims no
    write; it says which ops it could not read, and --no-custom-op-mutations fails as not checkable (as other rules
    asked for and not checkable do), where it passed silently."""
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    log = torch213_moved(LOG, tmp_path, programs=empty)
    found = op_mutations_here(read_trace(log))
    assert not found
    where = f"{empty.as_posix()}/{PROGRAM.name}"
    assert [(u.op, u.path, u.why) for u in found.unread] == [("mylib::scale", where, "was not readable"),
                                                             ("mylib::clamp_np", where, "was not readable")]
    assert main(["check", str(log), "--no-custom-op-mutations"]) == 1
    # (said as a failure of a rule that could not be decided, with its exit status: "not checked" read as a skip)
    assert (f"no-custom-op-mutations: could not be decided, so it fails (exit status 1): the source of mylib::scale "
            f"was not readable at {where}, and 1 more op, so what they write is not known") in capsys.readouterr().out
    assert main(["check", str(log), "--no-custom-op-mutations", "--json"]) == 1
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert (rule["rule"], rule["passed"]) == ("no-custom-op-mutations", False)
    assert rule["message"].startswith("no-custom-op-mutations: could not be decided, so it fails (exit status 1): ")
    # Other rules asked for alone do not fail for it
    assert main(["check", str(log), "--no-inductor-random"]) == 0


def test_a_program_changed_since_the_run_is_not_read_and_said_so(tmp_path):
    """The calling line the log quotes (`scaled = scale(x, 2.0)`) no longer where it was: the file is not the run's."""
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / PROGRAM.name).write_text("# an added line\n" + PROGRAM.read_text())
    found = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path, programs)))
    assert not found.ops
    assert {(u.op, u.why) for u in found.unread} == {("mylib::scale", "differs from the lines the log quotes of it"),
                                                     ("mylib::clamp_np", "differs from the lines the log quotes of it")}


def test_facts_without_the_unread_ops_are_not_checkable(tmp_path):
    """Facts with numerics but without unread_custom_ops come from a compilescope that kept no custom op writes: the
    rule fails as not checkable rather than passing on an empty list."""
    from dataclasses import replace

    from compilescope.analyses.check import Rules, evaluate
    from compilescope.analyses.run_facts.analysis import run_facts

    facts = run_facts(analyze(read_trace(torch213_moved(FIXED, tmp_path))))
    assert facts.numerics is not None and facts.unread_custom_ops == []
    (passed,) = evaluate({None: facts}, Rules(no_custom_op_mutations=True))
    assert passed.passed
    (unkept,) = evaluate({None: replace(facts, unread_custom_ops=None)}, Rules(no_custom_op_mutations=True))
    assert not unkept.passed and "did not keep them" in unkept.message


def _writes(source: str) -> list[tuple[str, int]]:
    (fn,) = [n for n in ast.parse(textwrap.dedent(source)).body if isinstance(n, ast.FunctionDef)]
    return body_writes(fn)


def test_a_body_that_only_reads_writes_nothing():
    assert _writes('''
        def f(x: torch.Tensor, limit: float, out: Optional[torch.Tensor]) -> torch.Tensor:
            a = x.detach().numpy()
            b = np.tanh(a) * limit
            limit += 1.0            # a float argument: not a tensor's memory
            y = x.clone()
            y.mul_(2)               # a copy
            x = x * 2               # rebinding: x is no longer the argument
            x.add_(1)
            return torch.from_numpy(b) + y + x.sum()
        ''') == []


def test_the_ways_a_body_writes_into_an_argument():
    assert _writes('''
        def f(x: torch.Tensor, out: torch.Tensor, ys: list[torch.Tensor]) -> torch.Tensor:
            out.copy_(x)
            x[0] = 1
            x += 1
            torch.add(x, 1, out=x)
            a = x.numpy()
            np.copyto(a, 0)
            a.fill(0)
            v = x.view(-1)
            v[1:] *= 2
            ys[0].zero_()
            torch.relu_(out)
            F.relu(x, inplace=True)
            return x.clone()
        ''') == [("out", 3), ("x", 4), ("x", 5), ("x", 6), ("x", 8), ("x", 9), ("x", 11), ("ys", 12), ("out", 13),
                  ("x", 14)]


def test_a_literal_mutates_args_is_believed_and_a_decorator_or_a_call_both_found():
    ops = custom_op_sources(textwrap.dedent('''
        import torch
        @torch.library.custom_op("mylib::a", mutates_args={"x"})
        def a(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            x.mul_(2)
            y.mul_(2)
            return x + y

        def b_impl(x: torch.Tensor) -> torch.Tensor:
            x[0] = 0
            return x.clone()

        b = custom_op("mylib::b", b_impl, mutates_args=())
        '''))
    assert [(s.declared, s.writes) for s in ops["mylib::a"]] == [(frozenset({"x"}), [("x", 5), ("y", 6)])]
    assert [(s.function, s.declared_text, s.writes) for s in ops["mylib::b"]] == [("b_impl", "()", [("x", 10)])]


def _declared_value(source: str) -> str:
    (found,) = custom_op_sources(textwrap.dedent(source)).values()
    return found[0].declared_value


@pytest.mark.parametrize("source, said", [
    ("""
     import os
     M = ()
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     """, "line 3: ()"),
    ("""
     import os
     if os.getenv("FIX") != "1":
         M = []
     else:
         M = ["x"]
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     """, 'lines 4-6: [] if FIX is not "1", else ["x"]'),
    ("""
     M = {'x'} if sys.argv[1:] else set()
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     """, "line 2: {'x'} if sys.argv[1:], else set()"),
    # Not settled by the file: imported, bound twice, rebound in a function, computed, bound after the op, a default
    # that could equal the compared value is said as written
    ("""
     from config import M
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     """, ""),
    ("""
     M = ()
     M = ("x",)
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     """, ""),
    ("""
     M = ()
     def setup():
         global M
         M = ("x",)
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     """, ""),
    ("""
     M = tuple(os.environ.get("WRITES", "").split())
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     """, ""),
    ("""
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     M = ()
     """, ""),
    ("""
     F = os.environ.get("V", "on") == "on"
     M = () if F else ("x",)
     @custom_op("mylib::a", mutates_args=M)
     def a(x: torch.Tensor) -> torch.Tensor: ...
     """, 'line 3: () if F, else ("x",)'),
])
def test_a_named_mutates_args_is_said_where_the_file_settles_it(source, said):
    assert _declared_value(source) == said


def test_a_name_the_file_does_not_settle_is_said_not_to_name_the_argument():
    from compilescope.analyses.op_mutations import UndeclaredMutation
    from compilescope.analyses.user_locations import UserLocation

    op = UndeclaredMutation("mylib::a", "a", ["x"], "M", UserLocation("/p.py", 3, "a", None))
    assert op.title == "mylib::a writes into x, which its mutates_args=M does not name"
    literal = UndeclaredMutation("mylib::a", "a", ["x"], "()", UserLocation("/p.py", 3, "a", None))
    assert literal.title == "mylib::a writes into x, which its mutates_args=() does not declare"


def test_a_source_that_does_not_parse_is_no_error():
    assert custom_op_sources("@custom_op('mylib::x', mutates_args=()\ndef (") == {}
    assert custom_op_sources("custom_op(" + "(" * 5000) == {}


STALE = "custom_op_mutation_stale.log.gz"


def test_the_fix_run_with_the_old_cache_is_served_the_functional_graphs():
    """The raw stale log: the fixed program (mutates_args={"x"}), run with the cache the as-written run filled, hits
    both caches for both compiles, and its AOT graph calls scale plainly, as the as-written run's did; with an empty
    cache the same program's graph wraps it in auto_functionalized_v2."""
    records = raw_records(torch213(STALE))
    hits = sorted((e["frame_id"], e["artifact"]["name"]) for e, _ in records
                  if e.get("artifact", {}).get("name") in ("fx_graph_cache_hit", "aotautograd_cache_hit"))
    assert hits == [(0, "aotautograd_cache_hit"), (0, "fx_graph_cache_hit"), (1, "aotautograd_cache_hit"),
                    (1, "fx_graph_cache_hit")]
    stale = _graphs(STALE, "aot_inference_graph")
    assert "torch.ops.mylib.scale.default(arg0_1, 2.0)" in stale[0] and "auto_functionalized" not in stale[0]
    assert "mylib" not in stale[1]


def _program_declaring(tmp_path: Path, declared: str) -> Path:
    """A copy of the program whose decorators say mutates_args=<declared> as a literal (the user's own edit): the log
    quotes only the calling lines, which it keeps."""
    programs = tmp_path / "programs"
    programs.mkdir()
    text = PROGRAM.read_text()
    assert text.count("mutates_args=MUTATES") == 2
    (programs / PROGRAM.name).write_text(text.replace("mutates_args=MUTATES", f"mutates_args={declared}"))
    return programs


def test_a_declared_op_run_from_the_old_cache_is_told_to_compile_afresh(tmp_path):
    programs = _program_declaring(tmp_path, '{"x"}')
    found = op_mutations_here(read_trace(torch213_moved(STALE, tmp_path, programs)))
    assert [(op.op, op.stale, op.arguments) for op in found.ops] == [("mylib::scale", True, ["x"]),
                                                                      ("mylib::clamp_np", True, ["x"])]
    scale = found.ops[0]
    assert scale.title == "mylib::scale ran as a functional op from the compile cache, though its mutates_args names x"
    assert [c.cached for c in scale.calls] == [True]
    assert "served from the compile cache" in scale.why and scale.advice.startswith("compile with an empty cache")
    # The same source with the fixed run's empty cache: declared, and the graph wraps it: nothing to say.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert not op_mutations_here(read_trace(torch213_moved(FIXED, fresh, programs)))


def test_an_undeclared_op_whose_code_came_from_the_cache_says_so(tmp_path):
    """mutates_args a name (MUTATES), which the source does not settle: the finding says which compiles came from the
    cache, as the code that ran may predate the declaration."""
    (scale, clamp) = op_mutations_here(read_trace(torch213_moved(STALE, tmp_path))).ops
    assert not scale.stale and "[0/0] came from the compile cache" in scale.why
    assert "[1/0] came from the compile cache" in clamp.why
    # The as-written run compiled afresh: no such clause
    written = tmp_path / "as_written"
    written.mkdir()
    assert not any("compile cache" in op.why for op in op_mutations_here(read_trace(torch213_moved(LOG, written))).ops)


def test_a_name_whose_every_compile_came_from_the_cache_is_not_said_to_name_nothing_now(tmp_path):
    """The stale log ran the fixed program (MUTOP_VARIANT=fixed: MUTATES is {"x"}), and both its compiles were cache hits
    (the raw log above): the functional calls show what MUTATES held when the cached code was compiled, not what this
    run's file made it. The title, the write's and the call's notes say so, not "does not name"."""
    said = f'line {_line("MUTATES = ")}: {{"x"}} if MUTOP_VARIANT is "fixed", else ()'
    results = analyze(read_trace(torch213_moved(STALE, tmp_path)))
    titles = [f.title for f in results.insights.findings if "mutates_args" in f.title]
    assert titles == [f"mylib::{op} writes into x; the code of {cid}, served from the compile cache, calls it as a "
                      f"functional op: its mutates_args=MUTATES ({said}) did not name x when that code was compiled; "
                      "it may now" for op, cid in (("scale", "[0/0]"), ("clamp_np", "[1/0]"))]
    (page,) = [f for f in results.sources.files if f.path.endswith("custom_op_mutation.py")]
    notes = [n["why"] for line in (_line("    x.mul_(factor)"), _line("scaled = scale(x, 2.0)"))
             for n in page.notes[line].numerics]
    assert notes and not any("does not declare" in n or "undeclared" in n for n in notes), notes
    assert notes[0].startswith("writes into x, which the code served from the compile cache takes mylib::scale as "
                               "not writing")
    assert notes[1].startswith("calls mylib::scale as a functional op")
    # The as-written run compiled afresh: its own compile read MUTATES as (), so it does not name x
    written = tmp_path / "as_written"
    written.mkdir()
    assert [op.title for op in op_mutations_here(read_trace(torch213_moved(LOG, written))).ops][0] == (
        f"mylib::scale writes into x, which its mutates_args=MUTATES does not name ({said})")


def test_check_gates_the_undeclared_write_and_diff_tells_the_fix(tmp_path, capsys):
    """The gate a user would put in CI: --no-custom-op-mutations fails the as-written run, naming the op and its write,
    and passes the fixed one; with the fixed run as baseline, the as-written run is a regression; diff tells the fix."""
    written = torch213_moved(LOG, tmp_path)
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    fixed = torch213_moved(FIXED, fixed_dir)
    assert main(["check", str(written), "--no-custom-op-mutations"]) == 1
    out = capsys.readouterr().out
    assert (f"no-custom-op-mutations: 2 custom op writes torch does not know of (mutates_args), none allowed (declare "
            f"mutates_args, or return a new tensor): mylib::scale at custom_op_mutation.py:{_line('    x.mul_(factor)')} "
            "(x.mul_(factor)), and 1 more write") in out
    assert main(["check", str(fixed), "--no-custom-op-mutations"]) == 0
    capsys.readouterr()
    assert main(["check", str(written), "--baseline", str(fixed)]) == 1
    assert "baseline-custom-op-mutations: compiled code now calls mylib::scale, mylib::clamp_np" in capsys.readouterr().out
    assert main(["check", str(fixed), "--baseline", str(written)]) == 0
    capsys.readouterr()
    main(["diff", str(written), str(fixed)])  # (its status says whether the runs differ)
    said = " ".join(capsys.readouterr().out.split())
    assert ("compiled code no longer takes mylib::scale, mylib::clamp_np for functional while it writes into its "
            f"argument at custom_op_mutation.py:{_line('    x.mul_(factor)')} (x.mul_(factor))") in said


# What the program printed in each stage of `compilescope diagnose custom_op_mutation.py` (torch 2.13 CPU): eager's
# comparison matches; aot_eager drops clamp_np's call; Inductor also fuses x + 1 past scale's call.
PRINTED = {
    "eager": "shift_then_scale: eager 19.8474 compiled 19.8474 max abs diff 0; x afterwards differs by 0\n"
             "clamp_then_add: eager 6.4014 compiled 6.4014 max abs diff 0; x afterwards differs by 0\n",
    "aot_eager": "shift_then_scale: eager 19.8474 compiled 19.8474 max abs diff 0; x afterwards differs by 0\n"
                 "clamp_then_add: eager 6.4014 compiled 5.7582 max abs diff 0.601; x afterwards differs by 0.601\n",
    "backend": "shift_then_scale: eager 19.8474 compiled 42.9039 max abs diff 9.49; x afterwards differs by 0\n"
               "clamp_then_add: eager 6.4014 compiled 5.7582 max abs diff 0.601; x afterwards differs by 0.601\n",
}


def test_diagnose_names_the_custom_op_where_the_stage_changes_the_numbers(tmp_path):
    """diagnose's stages: AOTAutograd (its aot_eager run: custom_op_mutation_aot_eager.log.gz, recorded with the
    backend diagnose forces) is where the printed numbers first change; the verdict names clamp_np's write, not only
    'AOTAutograd changes them', and says what to declare."""
    from compilescope.analyses.diagnosis import AOT_EAGER, BACKEND, EAGER, RunFacts
    from compilescope.analyses.diagnosis.stage_outcome import stage_outcome
    from compilescope.analyses.diagnosis.verdict import decide

    def stage(spec, log):
        out = PRINTED[spec.key]
        run = RunFacts(argv=["python", "custom_op_mutation.py"], env=dict(spec.env), returncode=0, seconds=1.0,
                       output_tail=out)
        if log is None:
            return stage_outcome(spec, run, None, out)
        where = tmp_path / spec.key
        where.mkdir()
        trace = read_trace(torch213_moved(log, where))
        return stage_outcome(spec, run, trace, out, insight_files(trace))  # (the files diagnose reads for it)

    aot = stage(AOT_EAGER, "custom_op_mutation_aot_eager.log.gz")
    assert [op.op for op in aot.op_mutations.ops] == ["mylib::scale", "mylib::clamp_np"]
    assert [c.dropped for op in aot.op_mutations.ops for c in op.calls] == [False, True]
    # aot_eager runs no output code: no read moved past scale's call (it printed max abs diff 0 for shift_then_scale)
    assert [m for op in aot.op_mutations.ops for c in op.calls for m in c.moved_reads] == []
    verdict = decide([stage(EAGER, None), aot, stage(BACKEND, LOG)])
    assert (verdict.outcome, verdict.stage) == ("differs", "aot_autograd")
    assert "AOTAutograd changes them, as mylib::scale writes into x at custom_op_mutation.py:" in verdict.headline
    assert "mylib::clamp_np writes into x at custom_op_mutation.py:" in verdict.headline
    assert (verdict.location.line, verdict.location_kind) == (_line("    x.mul_(factor)"), "custom op write")
    assert verdict.next_steps[1].startswith("mylib::clamp_np writes into x, which its mutates_args=MUTATES does not "
                                            f'name (line {_line("MUTATES = ")}: {{"x"}} if MUTOP_VARIANT is "fixed", '
                                            "else ()): its result is unused")


def test_a_mutates_args_too_deep_to_write_back_is_no_internal_error(tmp_path, capsys):
    """`mutates_args=` then `-` 600 times: ast parses it, ast.unparse recursed past Python's limit and report, summary
    and check stopped on an internal error. The expression is no literal: the log tells how torch took the op
    (functional, as it ran with ()), and the finding stands with a stand-in for the text."""
    programs = _program_declaring(tmp_path, "-" * 600 + "MUTATES")
    log = torch213_moved(LOG, tmp_path, programs)
    assert main(["check", str(log), "--no-custom-op-mutations"]) == 1
    assert "mylib::scale at custom_op_mutation.py" in capsys.readouterr().out
    (scale, _) = op_mutations_here(read_trace(log)).ops
    assert scale.declared == "(an expression too deeply nested to show)"


def test_mutates_args_unknown_declares_every_argument(tmp_path):
    """torch reads mutates_args="unknown" as every Tensor argument written (infer_schema marks each `Tensor(a!)`), not
    as an argument named "unknown"; any other string it refuses."""
    ops = custom_op_sources(textwrap.dedent('''
        import torch
        @torch.library.custom_op("mylib::a", mutates_args="unknown")
        def a(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            x.mul_(2)
            return x + y
        '''))
    assert [s.declared for s in ops["mylib::a"]] == [frozenset({"x", "y"})]
    # The as-written run (compiled afresh with ()), its source now saying "unknown": no undeclared write
    assert not op_mutations_here(read_trace(torch213_moved(LOG, tmp_path, _program_declaring(tmp_path, '"unknown"'))))


def test_a_receiver_that_is_no_argument_is_what_an_in_place_method_writes():
    """`out.copy_(x)` writes into out, `stats.update_(x)` into stats: not into x. Only a module's path
    (`torch.relu_(x)`, `torch.Tensor.add_(x, 1)`, `torch.ops.aten.add_.Tensor(x, 1)`) writes into its first argument."""
    assert _writes('''
        def f(x: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            out.copy_(x)
            out.add_(x)
            stats = Stats()
            stats.update_(x)
            cache.setdefault_(x)
            return out
        ''') == []
    assert _writes('''
        def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            torch.Tensor.add_(x, 1)
            torch.ops.aten.add_.Tensor(y, 1)
            torch.ops.aten.mul_(x, 2)
            return x
        ''') == [("x", 3), ("y", 4), ("x", 5)]


def test_every_binding_of_a_name_ends_its_alias():
    """Tuple and starred targets, a for's target, with's `as`, the walrus: each rebinds x to a copy, whose writes are
    the copy's."""
    assert _writes('''
        def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            x, y = x.clone(), y.clone()
            x.mul_(2)
            y.mul_(2)
            return x + y
        ''') == []
    assert _writes('''
        def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            for x in [x.clone()]:
                x.mul_(2)
            with ctx() as y:
                y.add_(1)
            return x + y
        ''') == []
    assert _writes('''
        def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            *x, z = y.clone(), y.clone()
            x.mul_(2)
            if (y := y.clone()) is not None:
                y.add_(1)
            return z
        ''') == []


def test_aliases_through_a_loop_a_split_and_a_walrus_still_write():
    """What a binding makes the argument's: `for t in xs` (each a tensor of the list), `a, b = x.unbind(0)` (views),
    `(a := x.numpy())[0] = 1`; and a pair of a tuple assignment keeps what its own value is."""
    assert _writes('''
        def f(x: torch.Tensor, xs: list[torch.Tensor], y: torch.Tensor) -> torch.Tensor:
            for t in xs:
                t.mul_(2)
            a, b = x.unbind(0)
            a.zero_()
            (c := y.numpy())[0] = 1
            u, v = y.view(-1), x.clone()
            u.add_(1)
            v.add_(1)
            return x
        ''') == [("xs", 4), ("x", 6), ("y", 7), ("y", 9)]


def test_each_compiles_aot_graph_is_read_once_however_many_calls(tmp_path, monkeypatch):
    """Each call site looked its op up by a search of the compile's whole AOT text: n sites in a graph of n nodes was
    n^2 (2,000: 0.2 s, 8,000: 7.5 s). The text is read once per compile into the ops it calls and wraps. (A search of
    a string is one line run: linear_work's count does not see it, so the reads are counted.)"""
    import gzip

    from compilescope.analyses.op_mutations import graph_calls
    from compilescope.analyses.op_mutations.analysis import op_mutations

    from ..conftest import record_calls
    from ..robustness.corpus import fix_md5, lines_of, payload_envelope_index

    n = 500
    moved = torch213_moved(LOG, tmp_path)
    lines = lines_of(gzip.open(moved).read())
    aot = payload_envelope_index(lines, b'"aot_inference_graph"')
    at = next(i for i in range(aot, len(lines)) if b"torch.ops.mylib.scale.default(arg0_1" in lines[i])
    lines[at:at] = [b'\t        pad%d: "f32[8][1]cpu" = torch.ops.aten.add.Tensor(arg0_1, %d)\n' % (k, k)
                    for k in range(n)]
    fix_md5(lines, aot)
    dynamo = payload_envelope_index(lines)
    call = next(i for i in range(dynamo, aot) if b"torch.ops.mylib.scale.default(l_x_" in lines[i])
    assert lines[call - 1].lstrip().startswith(b"# File:")
    lines[call + 1:call + 1] = [line for k in range(n) for line in (
        lines[call - 1], b'\t        s%d: "f32[8][1]cpu" = torch.ops.mylib.scale.default(l_x_, 2.0)\n' % k)]
    fix_md5(lines, dynamo)
    big = tmp_path / "big.log"
    big.write_bytes(b"".join(lines))
    trace = read_trace(big)
    reads = record_calls(monkeypatch, graph_calls, "aot_calls", lambda text: len(text))
    files = op_mutation_files(trace)  # (read first, as analyze() reads them; the graphs scanned then serve both)
    scale = op_mutations(trace, files).ops[0]
    assert (scale.op, len(scale.calls)) == ("mylib::scale", n + 1)
    assert len(reads) == 2  # the two compiles' AOT graphs, once each, for the files and the analysis together

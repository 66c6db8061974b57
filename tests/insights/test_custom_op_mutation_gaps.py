"""What the custom-op mutation check says where it cannot check, and what it says beyond its section
(tests/data/torch213 programs/custom_op_mutation.py): the ops it did not check, listed where its results are; the
call AOTAutograd left out, on that compile's page; an op defined in a module the program imports, which the log does
not name, followed or listed as not checked. Expected values are read from the raw log and the program."""

from __future__ import annotations

import glob
from markupsafe import escape
from pathlib import Path

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.cli import main
from compilescope.ingest.reader import read_trace

from ..analysis_files import op_mutations_here
from ..conftest import line_holding, report, torch213, torch213_moved
from ..tracelog import raw_records

LOG = "custom_op_mutation.log.gz"
FIXED = "custom_op_mutation_fixed.log.gz"
STALE = "custom_op_mutation_stale.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "custom_op_mutation.py"


def _line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _not_read(programs: Path) -> list[str]:
    """The lines the report and the summary should show for the two ops Dynamo's graphs call ([0/0] scale, [1/0]
    clamp_np: test_custom_op_mutation's raw-log test), the calling file where the moved log names it."""
    return [f"{op}: not checked: its source was not readable at {programs.as_posix()}/{PROGRAM.name} (not on this "
            "machine, or no Python file compilescope reads: run it where the program is)"
            for op in ("mylib::scale", "mylib::clamp_np")]


def test_the_ops_not_checked_are_listed_in_the_report_and_the_summary(tmp_path, capsys):
    """Without the program on this machine both ops are not checked: the results section of the report and of
    `summary` says so, one line each, where it said nothing (only --json and check did)."""
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    log = torch213_moved(LOG, tmp_path, programs=empty)
    expected = _not_read(empty)
    assert main(["summary", str(log)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "Results that differ from eager (2 custom ops not checked)" in out
    # (a path longer than the terminal is folded inside it: compared without the whitespace)
    assert all("".join(line.split()) in "".join(out.split()) for line in expected)
    report(log, tmp_path / "report")
    page = (tmp_path / "report" / "index.html").read_text()
    assert "Results that differ from eager (2 custom ops not checked)" in page
    assert all(f"<li>{str(escape(line))}</li>" in page for line in expected)


def test_ops_read_are_not_listed_as_not_checked(tmp_path, capsys):
    log = torch213_moved(LOG, tmp_path)
    assert not op_mutations_here(read_trace(log)).unread
    assert main(["summary", str(log)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "Results that differ from eager (2 custom ops)" in out and "not checked" not in out


def _compile_page(out: Path, compile_id: str) -> str:
    (page,) = glob.glob(str(out / f"*{compile_id.strip('[]').replace('/', '_')}_0" / "index.html"))
    return Path(page).read_text()


def test_the_compile_that_left_the_call_out_says_so_on_its_page(tmp_path):
    """[1/0] (clamp_then_add): Dynamo's graph calls clamp_np under line 55 and frees its result there; its
    aot_inference_graph has no mylib call left (test_custom_op_mutation's raw-log test). Its page says the call was
    left out, where, and why; [0/0], whose AOT graph still calls scale, says nothing of it."""
    dynamo = {e["frame_id"]: p for e, p in raw_records(torch213(LOG)) if "dynamo_output_graph" in e}
    aot = {e["frame_id"]: p for e, p in raw_records(torch213(LOG)) if "aot_inference_graph" in e}
    assert "clamp_np_default = None" in dynamo[1] and "mylib" not in aot[1] and "mylib.scale" in aot[0]
    log = torch213_moved(LOG, tmp_path)
    results = analyze(read_trace(log))
    (dropped,) = results.compiles["[1/0]"].dropped_calls
    assert (dropped.op, dropped.location.line, dropped.location.code) == (
        "mylib::clamp_np", _line("clamp_np(x, 0.5)"), "clamp_np(x, 0.5)")
    assert (dropped.checked, dropped.writes) == (True, ["x"])
    assert "a functional op whose result is unused is dead code to AOTAutograd" in dropped.why
    assert "writes into x, so that write is lost" in dropped.why
    assert results.compiles["[0/0]"].dropped_calls == []
    report(log, tmp_path / "report")
    page = _compile_page(tmp_path / "report", "[1/0]")
    assert '<th>call left out</th><td class="dropped-call"><code>mylib::clamp_np</code> called at' in page
    assert f"custom_op_mutation.py:{_line('clamp_np(x, 0.5)')}</a>" in page
    assert str(escape(dropped.why)) in page
    assert "dropped-call" not in _compile_page(tmp_path / "report", "[0/0]")


def test_a_call_left_out_is_said_whatever_the_source_says(tmp_path):
    """The log alone shows the call left out: said without the program (not known whether a write is lost), and on
    the fixed program run from the old cache (_stale: [1/0]'s cached AOT graph has no mylib call, README); not in the
    fixed run, whose AOT graphs wrap both ops in auto_functionalized."""
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    (unread,) = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path, programs=empty))).dropped
    assert (unread.op, unread.compile_id, unread.checked, unread.writes) == ("mylib::clamp_np", "[1/0]", False, [])
    assert unread.why.endswith("; its source was not read, so whether a write into an argument is lost is not known")
    stale_dir = tmp_path / "stale"
    stale_dir.mkdir()
    (stale,) = op_mutations_here(read_trace(torch213_moved(STALE, stale_dir))).dropped
    assert (stale.op, stale.compile_id, stale.writes) == ("mylib::clamp_np", "[1/0]", ["x"])
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    assert op_mutations_here(read_trace(torch213_moved(FIXED, fixed_dir))).dropped == []


# The program with its ops moved into a module it imports: the calling lines stay where the log quotes them (a run of
# such a program, checked by hand, logs the same graphs and names no file but the calling one: the op's body runs
# outside Dynamo's trace, so no stack frame or `# File:` line reaches its file).
_DEFS = ('@torch.library.custom_op("mylib::scale"', "def shift_then_scale(x):")


def _split(programs: Path, import_line: str, module: str | None) -> Path | None:
    """programs/custom_op_mutation.py calling the ops that `module` (relative to programs; None: nowhere) defines."""
    lines = PROGRAM.read_text().splitlines()
    start, end = _line(_DEFS[0]) - 1, _line(_DEFS[1]) - 1  # (0-based: the definitions, their fake kernels)
    assert lines[start - 1] == "" and "custom_op(" not in "\n".join(lines[:start] + lines[end:])
    header = lines[lines.index("import os"):lines.index("torch.manual_seed(0)")]
    caller = lines[:start - 1] + [import_line] + [""] * (end - start) + lines[end:]
    programs.mkdir(parents=True)
    (programs / PROGRAM.name).write_text("\n".join(caller) + "\n")
    if module is None:
        return None
    path = programs / module
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.parent != programs:
        (path.parent / "__init__.py").write_text("")
    path.write_text("\n".join(header + [""] + lines[start:end]) + "\n")
    return path


@pytest.mark.parametrize(("import_line", "module"), [
    ("from mutops import clamp_np, scale", "mutops.py"),
    ("import mutops; scale, clamp_np = mutops.scale, mutops.clamp_np", "mutops.py"),
    ("from ops.mutops import clamp_np, scale", "ops/mutops.py"),
])
def test_an_op_defined_in_a_module_the_program_imports_is_checked_there(tmp_path, import_line, module):
    programs = tmp_path / "programs"
    defined = _split(programs, import_line, module)
    assert defined is not None
    log = torch213_moved(LOG, tmp_path, programs)
    found = op_mutations_here(read_trace(log))
    assert found.unread == []
    scale, clamp = found.ops
    assert (scale.op, scale.defined_at.filename, scale.defined_at.line) == (
        "mylib::scale", defined.as_posix(), line_holding(defined, _DEFS[0]))
    assert [(w.filename, w.line, w.code) for w in scale.writes] == [
        (defined.as_posix(), line_holding(defined, "    x.mul_(factor)"), "x.mul_(factor)")]
    assert [w.line for w in clamp.writes] == [line_holding(defined, "np.clip(a, -limit, limit, out=a)")]
    # Its calls where the log has them, in the calling file; MUTATES settled by the module's own line
    assert [(c.compile_id, c.location.filename, c.location.line, c.dropped) for c in scale.calls + clamp.calls] == [
        ("[0/0]", (programs / PROGRAM.name).as_posix(), _line("scaled = scale(x, 2.0)"), False),
        ("[1/0]", (programs / PROGRAM.name).as_posix(), _line("clamp_np(x, 0.5)"), True)]
    assert scale.declared_value == f'line {line_holding(defined, "MUTATES = ")}: {{"x"}} if MUTOP_VARIANT is "fixed", else ()'
    # The module's source page marks the write
    (page,) = [f for f in analyze(read_trace(log)).sources.files if f.path == defined.as_posix()]
    assert line_holding(defined, "    x.mul_(factor)") in {line for line, n in page.notes.items() if n.numerics}


def test_a_module_a_folder_above_the_calling_file_is_not_read(tmp_path):
    """Python finds a script's `from mutops import ...` in the script's folder (sys.path[0]), never a folder above: a
    mutops.py there is another program's, so it is not read and both ops are listed as not checked."""
    programs = tmp_path / "programs"
    above = _split(programs, "from mutops import clamp_np, scale", "../mutops.py")
    assert above is not None and above.resolve() == (tmp_path / "mutops.py").resolve()
    found = op_mutations_here(read_trace(torch213_moved(LOG, tmp_path, programs)))
    assert not found.ops
    assert [u.op for u in found.unread] == ["mylib::scale", "mylib::clamp_np"]


def test_an_op_defined_nowhere_it_is_looked_for_is_listed_not_checked(tmp_path, capsys):
    """The module imported is not beside the program (an installed package, say): both ops are listed as not
    checked, never passed over, and the gate fails as not checkable."""
    programs = tmp_path / "programs"
    _split(programs, "from mutops import clamp_np, scale", None)
    log = torch213_moved(LOG, tmp_path, programs)
    found = op_mutations_here(read_trace(log))
    caller = (programs / PROGRAM.name).as_posix()
    assert not found.ops
    assert [(u.op, u.path, u.why) for u in found.unread] == [("mylib::scale", caller, "was not found from its call"),
                                                             ("mylib::clamp_np", caller, "was not found from its call")]
    assert found.unread[0].not_checked == (
        f"mylib::scale: not checked: its source was not found from its call at {caller} (neither that file nor a "
        "module it imports from beside it defines the op with torch.library.custom_op, triton_op or a Library's "
        "define: an installed package's op, or one registered at run time)")
    assert main(["check", str(log), "--no-custom-op-mutations"]) == 1
    assert ("no-custom-op-mutations: could not be decided, so it fails (exit status 1): the source of mylib::scale was "
            f"not found from its call at {caller}"
            in _flat(capsys.readouterr().out))


PACKAGE = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "op_in_package"


def test_an_op_a_package_module_imports_absolutely_is_found_from_the_script(tmp_path):
    """programs/op_in_package: main.py runs pkg/model.py's shift_then_scale, which calls projlib::scale imported by
    `from pkg.ops import scale`. Python finds pkg.ops in the script's folder, not beside pkg/model.py; the log's
    dynamo_start stack begins at main.py's `<module>` frame (line 13, `run()`). The raw log's Dynamo graph calls
    `torch.ops.projlib.scale.default(l_x_, 2.0);  scale_default = None` under model.py's `scale(x, 2.0)` and the AOT
    graph holds no projlib call: the call is dropped, and pkg/ops.py's x.mul_ with it (output.txt: max abs diff 3.92)."""
    log = torch213_moved("op_in_package.log.gz", tmp_path)
    found = op_mutations_here(read_trace(log))
    ops_file, model = PACKAGE / "pkg" / "ops.py", PACKAGE / "pkg" / "model.py"
    assert found.unread == []
    (scale,) = found.ops
    assert (scale.op, scale.declared, scale.defined_at.filename, scale.defined_at.line) == (
        "projlib::scale", "()", ops_file.as_posix(), line_holding(ops_file, '@torch.library.custom_op("projlib::scale"'))
    assert [(w.line, w.code) for w in scale.writes] == [(line_holding(ops_file, "    x.mul_(factor)"), "x.mul_(factor)")]
    assert [(c.compile_id, c.location.filename, c.location.line, c.dropped) for c in scale.calls] == [
        ("[0/0]", model.as_posix(), line_holding(model, "    scale(x, 2.0)"), True)]
    assert [(d.op, d.checked, d.writes) for d in found.dropped] == [("projlib::scale", True, ["x"])]

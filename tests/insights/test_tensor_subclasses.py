"""A user's tensor subclasses through torch.compile (tensor_subclasses.py): a __torch_function__ subclass (UnitTensor)
whose str attribute the traced code reads, and a wrapper subclass (ScaledTensor) used as a parameter, without
__tensor_flatten__ (as written: forward skipped) and with its scale as flatten metadata (_meta: a recompile torch names
only `___check_metadata_<id>_c1/0`). Each expectation is read from the raw log (or the program), not from our output."""

from __future__ import annotations

import gzip
import io
import json
import re

from markupsafe import Markup
from rich.console import Console

from compilescope.analyses.analyze import analyze
from compilescope.analyses.compile_summary import compile_summaries
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.analyses.compile_errors import FULLGRAPH_STEP, compile_errors
from compilescope.analyses.graph_breaks.analysis import graph_breaks
from compilescope.analyses.insights import Finding
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles.advice import ADVICE
from compilescope.analyses.sources.analysis import analyze_sources
from compilescope.analyses.status import compile_statuses
from compilescope.ingest.reader import read_trace
from compilescope.render.html.env import code_spans
from compilescope.render.terminal import print_summary

from ..conftest import report, torch213
from .helpers import tree_reads

AS_WRITTEN, META, FIXED = "tensor_subclasses.log.gz", "tensor_subclasses_meta.log.gz", "tensor_subclasses_fixed.log.gz"


def _text(log: str) -> str:
    return gzip.open(torch213(log), "rt").read()


def _reasons(log: str) -> dict[str, str]:
    """compile id ("[0/1]") -> the recompile_reasons payload (one reason: the bare string)."""
    return {f"[{m[1]}/{m[2]}]": m[3].strip() for m in re.finditer(
        r'"name": "recompile_reasons".*?"frame_id": (\d+), "frame_compile_id": (\d+)[^\n]*\n\t([^\n]*)', _text(log))}


def _subclass_descriptions(log: str) -> dict[str, tuple[str, str, str]]:
    """compile id -> (source, type, ctx) of the traceable subclass each compile's describe_tensor records."""
    text, found = _text(log), {}
    for m in re.finditer(r'"describe_tensor": \{[^\n]*"is_traceable_wrapper_subclass": true[^\n]*"ctx": "(?P<ctx>[^"]*)", '
                         r'"type": "<class \'(?P<type>[\w.]+)\'>"[^\n]*"describer_id": (?P<d>\d+)\}, "frame_id": '
                         r'(?P<f>\d+), "frame_compile_id": (?P<c>\d+)[^\n]*\n[^\n]*"describe_source": \{"describer_id": '
                         r'(?P=d), "id": \d+, "source": "(?P<source>[^"]*)"', text):
        found[f"[{m['f']}/{m['c']}]"] = (m["source"], m["type"], m["ctx"])
    return found


def _insights(log: str):
    with read_trace(str(torch213(log))) as trace:
        return insights(trace)


def _summary(log: str) -> str:
    with read_trace(str(torch213(log))) as trace:
        console = Console(width=200, color_system=None, record=True, file=io.StringIO())
        print_summary(insights(trace), console)
        return console.export_text()


def test_subclass_descriptions_are_kept_per_compile():
    # _meta: [1/0] and [1/1] each fakeify self.weight, a ScaledTensor whose __tensor_flatten__ returns the scale as ctx
    raw = _subclass_descriptions(META)
    assert set(raw) == {"[1/0]", "[1/1]"}
    with read_trace(str(torch213(META))) as trace:
        kept = {str(e.compile_id): [(d["source"], d["type"], d["ctx"], d["attrs"]) for d in e.subclass_tensors]
                for e in trace.compiles.values() if e.subclass_tensors}
    assert kept == {cid: [(*raw[cid], ["_data"])] for cid in raw}  # (attrs: the program flattens only `_data`)
    assert raw["[1/0]"][2] != raw["[1/1]"][2]  # the program changes the scale between the two calls


def test_metadata_recompile_names_the_parameter_and_its_values():
    reason = _reasons(META)["[1/1]"]
    assert re.match(r"1/0: ___check_metadata_\d+_c1/0 ", reason)  # all torch says of it
    before, after = _subclass_descriptions(META)["[1/0]"][2], _subclass_descriptions(META)["[1/1]"][2]
    [frame] = [f for f in _insights(META).recompiles.frames if f.name == "forward"]
    [step] = frame.steps
    guard = step.guard
    assert (guard.change, guard.subclass, guard.subclass_object) == ("subclass_metadata", "ScaledTensor", "self.weight")
    assert (guard.metadata_before, guard.metadata_after) == (before, after)
    assert guard.shown == (f"metadata of self.weight (ScaledTensor, from its __tensor_flatten__) changed: {before}, "
                           f"now {after}")
    [advice] = frame.advice
    assert advice.startswith("`self.weight` is a ScaledTensor, your tensor subclass")
    assert f"({before} when [1/0] compiled, {after} at this call)" in advice
    assert "inner tensor" in advice and ADVICE["other"] not in frame.advice
    out = _summary(META)
    assert "tensor subclass metadata changed" in out and "metadata of self.weight (ScaledTensor" in out


def test_attribute_of_a_torch_function_subclass_is_said_so():
    # [0/1]: the "mm" reading fails [0/0]'s guard on x.unit, which __torch_function__ (line 43) made; [0/0]'s guard tree
    # checks x as a UnitTensor
    assert _reasons(AS_WRITTEN)["[0/1]"].startswith("0/0: x.unit == 'cm'")
    assert "TENSOR_MATCH: check_tensor(L['x'], UnitTensor, " in _text(AS_WRITTEN)
    frames = {f.name: f for f in _insights(AS_WRITTEN).recompiles.frames}
    calibrate = frames["calibrate"]
    assert (calibrate.steps[0].guard.subclass, calibrate.steps[0].guard.subclass_object) == ("UnitTensor", "x")
    [advice] = calibrate.advice
    assert advice.startswith("`x.unit` is an attribute of `x`, an instance of your tensor subclass UnitTensor")
    assert "tensor_subclasses.py:43 in __torch_function__" in advice and "a str is never made dynamic" in advice
    assert ADVICE["constant"] not in calibrate.advice
    # __torch_dispatch__'s args[1] is a ScaledTensor Dynamo did not take for a tensor (no TENSOR_MATCH): not said so
    dispatch = frames["__torch_dispatch__"]
    assert _reasons(AS_WRITTEN)["[2/1]"].startswith("2/0: args[1]._scale == 0.5")
    assert dispatch.steps[0].guard.subclass is None


def test_dispatch_frame_says_why_it_compiled_alone_and_that_its_float_went_dynamic():
    text = _text(AS_WRITTEN)
    # [2/1] made the scale that failed [2/0]'s guard a dynamic float: torch's create_symbol names it
    [symbol] = re.findall(r'"create_symbol": \{"symbol": "(\w+)", "val": "([^"]*)", [^\n]*?"source": '
                          r'"L\[\'args\'\]\[1\]\._scale"[^\n]*"frame_id": 2, "frame_compile_id": 1,', text)
    assert symbol == ("zf30", "0.25")
    # [1/0] (forward, skipped at its break) and [2/0] (__torch_dispatch__) start from main's same `compiled(...)` call
    def caller(cid: str) -> str:
        stack = json.loads(re.search(r'\{"dynamo_start": (\{[^\n]*?\]\}), "frame_id": %s, "frame_compile_id": %s,'
                                     % tuple(cid.split("/")), text)[1])["stack"]
        return next((f["line"], f["loc"]) for f in reversed(stack[:-1]) if f["filename"] == 1)
    # (the program's first call of the compiled module; the second, where [2/1] starts, calls forward no more)
    assert caller("1/0") == caller("2/0") != caller("2/1")
    assert caller("1/0")[1] == caller("2/1")[1] == "print(compiled(torch.randn(2, 8)).shape)"
    dispatch = next(f for f in _insights(AS_WRITTEN).recompiles.frames if f.name == "__torch_dispatch__")
    [step] = dispatch.steps
    assert (step.dynamic_symbol, step.dynamic_of) == ("zf30", "args[1]._scale")
    assert ADVICE["constant"] not in dispatch.advice
    alone, made_dynamic = dispatch.advice
    assert alone.startswith("This is ScaledTensor.__torch_dispatch__, your tensor subclass's, compiled on its own: "
                            "Dynamo skipped forward (tensor_subclasses.py:88, [1/0])")
    assert made_dynamic.startswith("torch compiled args[1]._scale as dynamic once it changed (automatic dynamic)")
    out = _summary(AS_WRITTEN)
    assert "[2/1] compiled args[1]._scale as dynamic (zf30)" in out and "pass it as a tensor" not in out
    # _fixed: forward compiles, so no __torch_dispatch__ frame of its own (none in _meta either)
    assert '"co_name": "__torch_dispatch__"' not in _text(FIXED) + _text(META)


def test_untraceable_subclass_parameter_skips_forward_and_says_what_to_add():
    text = _text(AS_WRITTEN)
    # torch: the break at line 89 names the ScaledTensor and skips "the function" (forward, first line 88) unnamed
    assert "UserDefinedObjectVariable(ScaledTensor)" in text and "frame skipped" not in text
    assert "Skipping the function and falling back to eager" in text
    assert re.search(r'"compile_id": "1/0", [^\n]*"co_name": "forward", [^\n]*"co_firstlineno": 88,', text)
    assert "source=G['ScaledTensor'], accessed_by=DictGetItemGuardAccessor('ScaledTensor'), type=<class " \
           "'torch._C._TensorMeta'>" in text
    found = _insights(AS_WRITTEN)
    [brk] = found.graph_breaks.breaks
    assert (brk.location.line, brk.skipped_frame.function, brk.skipped_frame.line) == (89, "forward", 88)
    assert brk.subclass_advice is not None and brk.subclass_advice.startswith(
        "ScaledTensor reached the op as a plain Python object")
    assert "it is a torch.Tensor subclass" in brk.subclass_advice and "__tensor_flatten__" in brk.subclass_advice
    [error] = found.errors.errors
    assert error.skipped_frame is not None and error.skipped_frame.line == 88
    assert error.next_steps[0] == brk.subclass_advice and FULLGRAPH_STEP not in error.next_steps  # no fullgraph=True
    out = _summary(AS_WRITTEN)
    assert "Dynamo skipped forward (tensor_subclasses.py:88) and ran it eagerly" in out
    assert "to do: ScaledTensor reached the op" in out


def test_the_subclass_proof_is_read_from_the_guard_trees_the_report_parsed_once():
    """[2/0]'s guard tree types G['ScaledTensor'] as torch._C._TensorMeta: the break and the failure say it is a
    torch.Tensor subclass from the trees GuardTrees parsed for the report (its recompiles and source pages read them
    too), not from each tree's text read again (as a module-level cache by id(trace) once did, a third reading)."""
    with tree_reads(torch213(AS_WRITTEN)) as reads:
        [brk], [error] = graph_breaks(reads.trace, reads.trees).breaks, compile_errors(reads.trace, reads.trees).errors
    assert len(reads.guards) == 4 and "ScaledTensor" in reads.trees.tensor_classes()
    assert reads.read == []
    proof = "; it is a torch.Tensor subclass (a guard of this log checks it as a tensor class)"
    assert proof in brk.subclass_advice and error.next_steps[0] == brk.subclass_advice


def test_fixed_variant_neither_breaks_nor_recompiles():
    # one unit, the scale an inner tensor: no graph break, no recompile reason, a subclass with no metadata
    assert "dynamo_graph_break_reason" not in _text(FIXED) and not _reasons(FIXED)
    # (torch leaves ctx out where __tensor_flatten__ returns None; the scale is an inner tensor beside _data)
    described = re.findall(r'"describe_tensor": \{[^\n]*"is_traceable_wrapper_subclass": true[^\n]*', _text(FIXED))
    assert len(described) == 1 and '"ctx"' not in described[0] and '"attrs": {"_data": 0, "_scale": 1}' in described[0]
    with read_trace(str(torch213(FIXED))) as trace:
        [kept] = [d for e in trace.compiles.values() for d in e.subclass_tensors]
    assert (kept["source"], kept["ctx"], kept["attrs"]) == ("L['self']._parameters['weight']", None, ["_data", "_scale"])
    found = _insights(FIXED)
    assert not found.graph_breaks.breaks and not found.recompiles.frames and not found.errors.errors


def _program_line(code: str) -> int:
    """The line of the fixture's program whose text (stripped) is code."""
    lines = torch213("").parent.joinpath("programs", "tensor_subclasses.py").read_text().splitlines()
    [number] = [i for i, line in enumerate(lines, 1) if line.strip() == code]
    return number


def test_ops_through_torch_function_are_placed_on_the_users_line():
    # Through UnitTensor.__torch_function__ FX comments calibrate's nodes with torch's _tensor.py:1530 (the super()
    # call); the kernel's provenance stack runs calibrate's `return x * 2 + 1` -> the hook's super() call -> there
    text = _text(AS_WRITTEN)
    user_line, hook_line = _program_line("return x * 2 + 1"), _program_line(
        "out = super().__torch_function__(func, types, args, kwargs)")
    graph = re.search(r'"dynamo_output_graph".*?"frame_id": 0, "frame_compile_id": 0[^\n]*\n((?:\t[^\n]*\n)+)', text)[1]
    assert "/torch/_tensor.py:1530 in __torch_function__, code: ret = func(*args, **kwargs)" in graph
    assert "tensor_subclasses.py" not in graph
    [stack] = json.loads(re.search(r'\n\t(\{"cpp_fused_add_mul_0:1": [^\n]*)', text)[1])["cpp_fused_add_mul_0:1"]
    assert [int(n) for n in re.findall(r"line (\d+), in", stack)] == [user_line, hook_line, 1530]
    with read_trace(str(torch213(AS_WRITTEN))) as trace:
        facts_a = run_facts(analyze(trace))
        sources = analyze_sources(trace)
    with read_trace(str(torch213(FIXED))) as trace:
        facts_b = run_facts(analyze(trace))
    [change] = [c for c in diff_runs(facts_a, facts_b).changes if "generated kernels" in c.title]
    assert f"cpp_fused_add_mul_0 (add, mul at tensor_subclasses.py:{user_line};" in change.title  # (on the user's line)
    assert "_tensor.py" not in change.title
    # the source page: calibrate's graph nodes (ret = mul, ret_1 = add) and its kernel on that line, none on the hook's
    [page] = sources.files
    notes = page.notes[user_line]
    assert notes.graphs == {"[0/0]": ["ret", "ret_1"], "[0/1]": ["ret", "ret_1"]}
    assert [(k["kernel"], k["compile_id"]) for k in notes.kernels] == [
        ("cpp_fused_add_mul_0:1", "[0/0]"), ("cpp_fused_add_mul_0:1", "[0/1]")]
    assert hook_line not in page.notes or not (page.notes[hook_line].graphs or page.notes[hook_line].kernels)


def test_compile_page_says_the_subclass_inputs_inner_tensors_were_passed_separately():
    # _meta [1/0]: Dynamo's graph takes the weight whole, typed as the subclass; AOTAutograd's graph takes its `_data`
    text = _text(META)
    assert re.search(r'def forward\(self, L_self_parameters_weight_: "ScaledTensor\(f32\[8, 8\]', text)
    assert "# SubclassGetAttrAOTInput(base=PlainAOTInput(idx=0), attr='_data')" in text
    assert '"attrs": {"_data": 0}' in text  # (describe_tensor: the inner tensors its __tensor_flatten__ names)
    ctx = _subclass_descriptions(META)["[1/0]"][2]

    def notes(log: str) -> dict[str, list[str]]:
        with read_trace(str(torch213(log))) as trace:
            found = compile_summaries(trace, compile_statuses(trace), insights(trace))
        return {cid: s.subclass_inputs for cid, s in found.items() if s.subclass_inputs}

    meta = notes(META)
    assert set(meta) == {"[1/0]", "[1/1]"}
    [note] = meta["[1/0]"]
    assert note.startswith("`self.weight`, one of the graph inputs, is a ScaledTensor (your tensor subclass): "
                           "AOTAutograd passed its inner tensor `_data` to the compiled graph separately")
    assert f"its metadata {ctx} was compiled in as a constant" in note
    # _fixed: the scale is an inner tensor too, and there is no metadata; as written, no traceable subclass at all
    [[fixed]] = notes(FIXED).values()
    assert "inner tensors `_data` and `_scale`" in fixed and "metadata" not in fixed
    assert not notes(AS_WRITTEN)


def test_advice_code_spans_are_code_in_the_report_and_stay_escaped(tmp_path):
    # calibrate's recompile advice names the attribute its guard failed on, `x.unit` ([0/0]'s EQUALS_MATCH on
    # L['x'].unit, placed at __torch_function__'s `out.unit = unit`), in backticks: the page showed them literally
    assert "EQUALS_MATCH: L['x'].unit == 'cm'" in _text(AS_WRITTEN)
    [advice] = next(f for f in _insights(AS_WRITTEN).recompiles.frames if f.name == "calibrate").advice
    assert advice.startswith("`x.unit` is an attribute of `x`,")
    report(torch213(AS_WRITTEN), tmp_path / "r")
    page = (tmp_path / "r" / "index.html").read_text()
    assert "<li><code>x.unit</code> is an attribute of <code>x</code>, an instance of your tensor subclass" in page
    assert "`x.unit`" not in page
    # (a compile page's note: _meta [1/0]'s weight, `self.weight`, whose inner tensor is `_data`)
    report(torch213(META), tmp_path / "m")
    compile_page = (tmp_path / "m" / "-_1_0_0" / "index.html").read_text()
    assert '<div class="subclass-input"><code>self.weight</code>, one of the graph inputs' in compile_page
    # log text is escaped before the spans become <code>: nothing from it is markup, inside backticks or out
    assert code_spans("run `<script>alert(1)</script>` & `a<b`, not ` alone") == Markup(
        "run <code>&lt;script&gt;alert(1)&lt;/script&gt;</code> &amp; <code>a&lt;b</code>, not ` alone")
    assert code_spans(Markup('<a title="`x`">y</a>')) == Markup('<a title="`x`">y</a>')  # HTML a renderer built
    # the terminal prints advice as text: rich markup in it (log text: a guard's value, a name) is never read
    found = _insights(AS_WRITTEN)
    found.findings.insert(0, Finding("error", "errors", "[bold red]x.unit[/bold red] `[link=http://e.x]y[/link]`"))
    console = Console(width=200, color_system=None, record=True, file=io.StringIO())
    print_summary(found, console)
    assert "[bold red]x.unit[/bold red] `[link=http://e.x]y[/link]`" in console.export_text()


def test_the_dispatch_compiled_alone_is_named_where_the_skip_is_said(tmp_path):
    # [1/0] forward fails at line 89 and is skipped; frame 2 is ScaledTensor.__torch_dispatch__ (first line 74),
    # compiled as [2/0] and [2/1], [2/0] from the same call of main as [1/0]: the Recompiles section said so (only
    # there), while the error, the graph break and Fix first's line about the frame did not
    text = _text(AS_WRITTEN)
    dispatch = re.findall(r'"compile_id": "(2/\d)", [^\n]*"co_name": "__torch_dispatch__", [^\n]*"co_firstlineno": 74,',
                          text)
    assert sorted(set(dispatch)) == ["2/0", "2/1"]
    assert "UserDefinedObjectVariable(ScaledTensor)" in text
    found = _insights(AS_WRITTEN)
    [brk] = found.graph_breaks.breaks
    assert brk.skipped_in == ["[1/0]"]
    assert [(c.function, c.location.line, c.compile_ids) for c in brk.compiled_callees] == [
        ("ScaledTensor.__torch_dispatch__", 74, ["[2/0]", "[2/1]"])]
    [error] = found.errors.errors
    assert ("Running forward eagerly, each op on the tensor subclass called ScaledTensor.__torch_dispatch__, which "
            "Dynamo compiled on its own: [2/0], [2/1] (tensor_subclasses.py:74)") in " ".join(error.next_steps)
    [finding] = [f for f in found.findings if f.title.startswith("__torch_dispatch__ recompiled once")]
    assert ("compiled on its own because Dynamo skipped forward ([1/0]) at its graph break at tensor_subclasses.py:89: "
            "fix that first") in finding.detail
    out = " ".join(_summary(AS_WRITTEN).split())
    assert "compiled on its own: [2/0], [2/1] ScaledTensor.__torch_dispatch__ (tensor_subclasses.py:74)" in out
    report(torch213(AS_WRITTEN), tmp_path / "r")
    page = (tmp_path / "r" / "index.html").read_text()
    assert re.search(r"What the call ran was compiled on its own: <a [^>]*>\[2/0\]</a>, <a [^>]*>\[2/1\]</a> "
                     r"<code>ScaledTensor.__torch_dispatch__</code> \(tensor_subclasses.py:74\)", page)
    # _meta: forward compiles, nothing is skipped, and no __torch_dispatch__ frame is compiled
    assert not any(b.compiled_callees for b in _insights(META).graph_breaks.breaks)
    assert not [e for e in _insights(META).errors.errors if any("__torch_dispatch__" in s for s in e.next_steps)]

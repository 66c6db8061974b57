"""A scientific-computing user's torch.func transforms and NumPy code (tests/data/torch213 programs/func_numpy.py): that
a graph break inside a transform is said in terms of the user's call of the transform, and what NumPy code did.
Expected values are read from the raw log and the program, not from our output."""

from __future__ import annotations

import json
import re
from pathlib import Path

from compilescope.analyses.run_facts.printed_graphs import graph_nodes
from compilescope.analyses.graph_breaks.analysis import graph_breaks
from compilescope.analyses.insights.analysis import insights
from compilescope.analyses.recompiles.advice import ADVICE
from compilescope.analyses.recompiles.analysis import recompiles
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, run_cli, torch213
from ..tracelog import raw_records

LOG = "func_numpy.log.gz"
FIXED = "func_numpy_fixed.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "func_numpy.py"
_HEADER = re.compile(r"^Graph break in user code at (.+):(\d+)$", re.M)


def _raw(log: str = LOG) -> list[tuple[dict, str]]:
    """The log's envelopes with their payloads, read without compilescope."""
    return raw_records(torch213(log))


def _break_headers(log: str = LOG) -> list[tuple[str, int]]:
    """(file, line) of each dynamo_graph_break_reason, as torch's header names it."""
    return [(m[1], int(m[2])) for e, p in _raw(log)
            if e.get("artifact", {}).get("name") == "dynamo_graph_break_reason" and (m := _HEADER.search(p))]


def _program_line(text: str) -> int:
    return line_holding(PROGRAM, text)


def test_a_break_inside_jacrev_names_the_users_call_of_the_transform():
    item_line, jacrev_line = _program_line("x.sum().item()"), _program_line("return jacrev(energy)(x)")
    headers = _break_headers()
    # The raw log: two breaks at the .item() line (jacobian's inlined call, then energy compiled on its own), one in
    # torch.func's own code; the fixed program (no .item() in energy) has none.
    # (the program's path is the worktree's that recorded it: compared by name)
    assert [h[1] for h in headers if h[0].endswith("/func_numpy.py")] == [item_line] * 2
    (torch_break,) = [h for h in headers if not h[0].endswith("/func_numpy.py")]
    assert torch_break[0].endswith("torch/_functorch/eager_transforms.py")
    assert _break_headers(FIXED) == []

    found = {b.location.line: b for b in graph_breaks(read_trace(torch213(LOG))).breaks}
    assert sorted(found) == [item_line, jacrev_line]
    inside = found[item_line]
    assert (inside.transform.name, inside.transform.call.line, inside.transform.call.function) == (
        "jacrev", jacrev_line, "jacobian")
    assert inside.torch_location is None and inside.note is None
    assert f"Inside jacrev at func_numpy.py:{jacrev_line}" in inside.transform_note
    assert "Set `torch._dynamo.config.capture_scalar_outputs = True`" in inside.user_hints[0]  # torch's hints kept

    # The break torch placed in its own eager_transforms.py is the user's at the line that called jacrev.
    in_torch = found[jacrev_line]
    assert (Path(in_torch.location.filename).name, in_torch.location.function) == ("func_numpy.py", "jacobian")
    assert (in_torch.torch_location.filename, in_torch.torch_location.line) == torch_break
    assert in_torch.caused_by == [f"func_numpy.py:{item_line}"]
    assert in_torch.transform_note is None
    assert f"because jacrev at func_numpy.py:{jacrev_line} ran eagerly" in in_torch.note
    assert in_torch.to_json()["torch_location"]["line"] == torch_break[1]


def test_breaks_outside_any_transform_name_none():
    for b in graph_breaks(read_trace(torch213("graph_breaks.log"))).breaks:
        assert b.transform is None and b.torch_location is None and b.transform_note is None


def _recompile_reasons(log: str = LOG) -> dict[str, list[str]]:
    """Each recompile_reasons artifact's reasons by the compile id it precedes (one reason: the bare string)."""
    out = {}
    for e, p in _raw(log):
        if e.get("artifact", {}).get("name") == "recompile_reasons":
            out[f"[{e['frame_id']}/{e['frame_compile_id']}]"] = json.loads(p) if p.startswith("[") else [p]
    return out


def test_a_numpy_array_of_another_dtype_is_said_as_numpy_names_it():
    reasons = _recompile_reasons()
    # The program passes float32, then float64 arrays to np_normalize(a): torch guards the tensor it made of `a`.
    assert reasons["[6/1]"] == ["6/0: tensor '___from_numpy(a)' dtype mismatch. expected Float, actual Double"]
    assert ".astype(np.float32)" in PROGRAM.read_text() and ".astype(np.float32 if FIXED else np.float64)" in (
        PROGRAM.read_text())
    (frame,) = [f for f in recompiles(read_trace(torch213(LOG))).frames if f.name == "np_normalize"]
    first = frame.steps[0].guard
    assert first.guard == reasons["[6/1]"][0][len("6/0: "):]  # torch's text kept
    assert first.described == "NumPy array 'a' dtype mismatch. expected float32, actual float64"
    assert first.location_label == "NumPy array a is an input of the compiled function at"
    (advice,) = [a for a in frame.advice if "NumPy" in a]
    assert "NumPy array `a` arrives as float32 and float64" in advice and "`.astype(np.float32)`" in advice
    assert ADVICE["dtype"] not in frame.advice


def test_a_tensor_of_another_dtype_keeps_torchs_words():
    (frame,) = [f for f in recompiles(read_trace(torch213("recompiles.log"))).frames if f.name == "g"]
    (dtype,) = [s.guard for s in frame.steps if s.guard.change == "dtype"]
    assert dtype.guard == "tensor 'x' dtype mismatch. expected Float, actual Double"  # README: 0/2's reason
    assert dtype.described is None and dtype.location_label.startswith("x ")
    assert ADVICE["dtype"] in frame.advice


def _graph(compile_id: tuple[int, int], log: str = LOG) -> str:
    (text,) = [p for e, p in _raw(log) if "dynamo_output_graph" in e
               and (e.get("frame_id"), e.get("frame_compile_id")) == compile_id]
    return text


def test_numpy_code_in_a_graph_is_listed_by_line_and_np_random_said_to_draw_from_torch():
    rand_line, sin_line = _program_line("np.random.rand(*a.shape)"), _program_line("np.sin(a) + np.exp(-a)")
    graph = _graph((5, 0))  # np_features: NumPy traced through torch._numpy, np.random.rand among it
    assert f"func_numpy.py:{rand_line} in np_features" in graph and "torch__dynamo_utils_wrapped_rand(5)" in graph
    assert "torch__dynamo_utils_wrapped_sin(a)" in graph and "torch__dynamo_utils_wrapped_exp(" in graph
    ins = insights(read_trace(torch213(LOG)))
    lines = {line.location.line: line for line in ins.numpy.lines}
    assert lines[rand_line].random == ["rand"] and lines[rand_line].compile_ids == ["[5/0]"]
    assert lines[sin_line].random == [] and {"sin", "exp"} <= set(lines[sin_line].calls)
    assert [line.location.line for line in ins.numpy.random_lines] == [rand_line]
    (finding,) = [f for f in ins.findings if f.section == "numpy"]
    assert finding.title == f"np.random drawn from torch's generator at func_numpy.py:{rand_line}"
    assert "use_numpy_random_stream = True" in ins.numpy.random_note

    # The fixed program draws with torch.rand: its NumPy code is still in the graph, np.random is not.
    assert "torch__dynamo_utils_wrapped_rand" not in _graph((2, 0), FIXED)
    fixed = insights(read_trace(torch213(FIXED)))
    assert fixed.numpy and not fixed.numpy.random_lines and fixed.numpy.random_note is None
    assert not [f for f in fixed.findings if f.section == "numpy"]


def test_a_log_without_numpy_has_no_numpy_lines():
    assert not insights(read_trace(torch213("graph_breaks.log"))).numpy


def test_a_numpy_arrays_dynamic_size_is_said_as_the_arrays_shape(capsys):
    # The raw log: the third call (a float32 array of 9, after two of 6) makes the size dynamic, and torch names the
    # tensor it made of the array `a`.
    (created,) = [e["create_symbol"] for e, _ in _raw() if e.get("create_symbol", {}).get("symbol") == "s46"]
    assert (created["source"], created["val"]) == ("___from_numpy(L['a']).size()[0]", "9")
    assert "np_normalize(np.random.rand(6 if FIXED else 9).astype(np.float32))" in PROGRAM.read_text()
    shapes = insights(read_trace(torch213(LOG))).dynamic_shapes
    (symbol,) = [s for s in shapes.symbols if s.symbol == "s46"]
    assert symbol.source == created["source"]  # torch's text kept, for --json's "source"
    assert symbol.source_text == "a.shape[0]"  # NumPy's a.size is the element count: the size is a.shape[0]
    assert run_cli("summary", torch213(LOG)) == 0
    out = capsys.readouterr().out
    assert "a.shape[0]: s46 = 9" in out and "___from_numpy" not in out
    assert run_cli("diff", torch213(LOG), torch213(FIXED)) == 1  # (the runs differ)
    out = capsys.readouterr().out
    assert "dynamic symbol for a.shape[0] removed" in out and "___from_numpy" not in out


def test_diff_says_numpy_code_in_a_graph_as_numpys_calls(capsys):
    rand_line = _program_line("np.random.rand(*a.shape)")
    # The raw graphs: np_features' [5/0] draws with np.random.rand (Dynamo's wrapper of it) where the fixed run's [2/0]
    # calls torch.rand, both on the same line; [5/0]'s two NumPy additions are two wrappers FX numbers apart.
    assert f"func_numpy.py:{rand_line} in np_features" in _graph((5, 0)) and f"func_numpy.py:{rand_line} in " \
        "np_features" in _graph((2, 0), FIXED)
    assert "= torch__dynamo_utils_wrapped_rand(5)" in _graph((5, 0)) and "= torch.rand(" in _graph((2, 0), FIXED)
    assert "= torch__dynamo_utils_wrapped_add(" in _graph((5, 0)) and "= torch__dynamo_utils_wrapped_add_1(" in (
        _graph((5, 0)))
    targets = [(n[1], n[2].rsplit(":", 1)[1]) for n in graph_nodes(_graph((5, 0))) if n[2]]
    assert ("np.random.rand (NumPy, in the graph through torch._numpy)", str(rand_line)) in targets
    assert [t for t, _ in targets].count("NumPy add (NumPy, in the graph through torch._numpy)") == 2
    assert not [t for t, _ in targets if "torch__dynamo_utils" in t]

    assert run_cli("diff", torch213(LOG), torch213(FIXED), "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    [rank] = doc["ranks"]
    (change,) = [c for c in rank["changes"] if c.get("detail", {}).get("retargeted")]
    (retargeted,) = change["detail"]["retargeted"]
    assert (retargeted["from"], retargeted["to"]) == ("np.random.rand (NumPy, in the graph through torch._numpy)",
                                                      "torch.rand")
    assert retargeted["line"].endswith(f"/func_numpy.py:{rand_line}")
    assert run_cli("diff", torch213(LOG), torch213(FIXED)) == 1
    assert "torch__dynamo_utils" not in capsys.readouterr().out


def test_the_compile_time_row_of_torch_funcs_own_frame_says_the_users_call(capsys, monkeypatch):
    # [4/0] is torch.func's `wrapped` (apis.py:244), compiled on its own after jacrev's call ran eagerly: its
    # dynamo_start stack runs through the program's line 42 (`return jacrev(energy)(x)` in jacobian). Its row in the
    # compile-time table says that call; the user's own functions' rows (per_sample_grads, [0/0]) say none.
    starts = [e for e, _ in raw_records(torch213("func_numpy.log.gz")) if "dynamo_start" in e]
    [wrapped] = [s for s in starts if (s["frame_id"], s["frame_compile_id"]) == (4, 0)]
    assert [(f["line"], f["name"]) for f in wrapped["dynamo_start"]["stack"]][-2:] == [(42, "jacobian"),
                                                                                   (244, "wrapped")]
    assert run_cli("summary", "--json", str(torch213("func_numpy.log.gz"))) == 0
    rows = {r["compile_id"]: r for r in json.loads(capsys.readouterr().out)["compile_time"]["compiles"]}
    assert rows["[4/0]"]["name"] == "wrapped"
    assert (rows["[4/0]"]["called_from"]["line"], rows["[4/0]"]["called_from"]["function"]) == (42, "jacobian")
    assert rows["[0/0]"]["called_from"] is None
    monkeypatch.setenv("COLUMNS", "160")  # (each row on one line)
    assert run_cli("summary", str(torch213("func_numpy.log.gz"))) == 0
    out = capsys.readouterr().out
    assert "[4/0] wrapped (called at func_numpy.py:42) " in " ".join(out[out.index("slowest   function"):].split())


def test_the_source_page_shows_a_numpy_arrays_guards_in_the_users_terms(tmp_path):
    # np_normalize(a) takes NumPy arrays: [6/0]..[6/2]'s guard trees check the tensor Dynamo made of `a`,
    # `TENSOR_MATCH: check_tensor(___from_numpy(L['a']), ..., torch.float32, ..., size=[6], ...)` (float64 in [6/1],
    # size=[None] in [6/2]) and 5 `DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(___from_numpy(L['a']), ...)` each, all
    # placed at line 55 (`return (a - a.mean()) / (a.std() + 1e-6)`). The page says them of the array `a`, torch's
    # text kept in each one's title.
    from html import unescape

    from compilescope.analyses.user_locations import numpy_in_words

    from ..sources.test_source_page import row, source_page

    line = line_holding(PROGRAM, "return (a - a.mean()) / (a.std() + 1e-6)")
    trees = [p for e, p in raw_records(torch213("func_numpy.log.gz"))
             if "dynamo_cpp_guards_str" in e and e["frame_id"] == 6]
    assert len(trees) == 3
    for tree, dtype, count in zip(trees, ("torch.float32", "torch.float64", "torch.float32"), (6, 6, 7)):
        checks = [g for g in tree.splitlines() if "___from_numpy(L['a'])" in g and "GuardManager:" not in g]
        assert len(checks) == count and all(f"func_numpy.py:{line} in np_normalize" in g for g in checks)
        assert sum("check_tensor(___from_numpy(L['a']), Tensor," in g and f", {dtype}," in g for g in checks) == 1
    # [6/2]'s seventh: its size made dynamic (s46), `LAMBDA_GUARD: 2 <= ___from_numpy(L['a']).size()[0]`, a size of
    # the array: its shape, as the dynamic shapes section names s46's source
    assert "LAMBDA_GUARD: 2 <= ___from_numpy(L['a']).size()[0]  #" in trees[2]
    assert numpy_in_words("LAMBDA_GUARD: 2 <= ___from_numpy(L['a']).size()[0]") == "LAMBDA_GUARD: 2 <= a.shape[0]"
    page = source_page(torch213("func_numpy.log.gz"), tmp_path / "out", "func_numpy.py")
    notes = row(page, line)
    shown = unescape(re.sub(r"<[^>]+>", "", notes))
    assert "___from_numpy" not in shown
    for dtype, size in (("torch.float32", "[6]"), ("torch.float64", "[6]"), ("torch.float32", "[None]")):
        assert (f"TENSOR_MATCH: check_tensor(NumPy array a, Tensor, DispatchKeySet(CPU, BackendSelect, "
                f"ADInplaceOrView, AutogradCPU), {dtype}, device=None, requires_grad=False, size={size}, "
                f"stride=[1])") in shown
    assert shown.count("DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(NumPy array a, '_dynamo_dynamic_indices') == False") \
        == 3
    assert unescape(notes).count('title="TENSOR_MATCH: check_tensor(___from_numpy(L[\'a\']), Tensor,') == 3


def test_the_source_page_shows_a_size_guard_that_torch_notes_as_the_sizes_first_use(tmp_path):
    # [6/2]'s `LAMBDA_GUARD: 2 <= ___from_numpy(L['a']).size()[0]` ends, after its `# ...func_numpy.py:55 in
    # np_normalize`, in torch's note "(user code shown is first use of this value--the guard itself is not due user
    # code but due to 0/1 specialization ...)": line 55 used the size first, 0/1 specialization made the guard. The
    # page lists it with [6/2]'s guards there, as a size of the array, and says so.
    from compilescope.analyses.installed_guards import guard_site

    from ..sources.test_source_page import plain, row, source_page

    line = line_holding(PROGRAM, "return (a - a.mean()) / (a.std() + 1e-6)")
    (tree,) = [p for e, p in raw_records(torch213(LOG)) if e.get("frame_compile_id") == 2 and e.get("frame_id") == 6
               and "dynamo_cpp_guards_str" in e]
    (raw,) = [g for g in tree.splitlines() if "LAMBDA_GUARD: 2 <= ___from_numpy(L['a']).size()[0]" in g]
    assert raw.endswith(f"func_numpy.py:{line} in np_normalize (user code shown is first use of this value--the guard "
                        "itself is not due user code but due to 0/1 specialization in the framework; to avoid "
                        "specialization try torch._dynamo.decorators.mark_unbacked(tensor, dim))")
    site = guard_site(raw)
    assert site is not None and site[1:3] == (line, "np_normalize")
    shown = plain(row(source_page(torch213(LOG), tmp_path / "out", "func_numpy.py"), line))
    assert "2 guards of [6/2] come from this line" in shown  # (the TENSOR_MATCH and this one)
    assert ("LAMBDA_GUARD: 2 <= a.shape[0] (this line first used the size; the guard comes from 0/1 specialization"
            in shown)
    assert shown.count("0/1 specialization") == 1  # ([6/0] and [6/1] made no size dynamic)

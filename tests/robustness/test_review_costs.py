"""What a review of untrusted-input costs found, each counted (lines of compilescope run, calls, walks), never timed:
a file of many schema-defined ops, a triton_op of many launches of a kernel of many parameters, an AOT node quoting
`tensors_to_clone = [`, a relative import climbing out of a program's folder, a recompile step of many state changes,
and a DEL in a page's JSON data island."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import os
import pickle
from pathlib import Path

from compilescope.analyses.op_mutations import (TRITON_OP, UndeclaredMutation, calling_files, definitions, graph_calls,
                                                op_bodies)
from compilescope.analyses import state_lines
from compilescope.analyses.analyze import analyze
from compilescope.analyses.compile_time import compile_times
from compilescope.analyses.recompiles import StateChange
from compilescope.analyses.results import Results
from compilescope.analyses.sources import LineNotes
from compilescope.ingest.reader import read_trace
from compilescope.model.payloads import JsonLines
from compilescope.model.trace import Frame
from compilescope.render.html.env import _visible_text
from compilescope.render.html.provenance import json_island
from compilescope.wording import said

from ..analysis_files import op_mutations_here
from ..conftest import cuda211_moved, record_calls, torch213, torch213_moved
from ..tracelog import raw_records
from .linear_work import assert_linear, lines_run_here


def _schema_ops(n: int) -> str:
    """One function registered for n ops, each defined by its schema string: lines 1-4 the library and the function
    (its one write, `buf.add_(x)`, on line 4), then n lib.define lines and n lib.impl lines."""
    lines = ["import torch", 'lib = torch.library.Library("mylib", "DEF")', "def fn(x, buf):", "    buf.add_(x)"]
    lines += [f'lib.define("f{i}(Tensor x, Tensor(a!) buf) -> ()")' for i in range(n)]
    lines += [f'lib.impl("f{i}", fn, "CPU")' for i in range(n)]
    return "\n".join(lines) + "\n"


def test_a_file_of_many_schema_defined_ops_is_split_once_and_each_body_walked_once(monkeypatch):
    """ast.get_source_segment splits the whole file again for every node it is asked about: once a lib.define made
    definitions x file size; and one function registered for every op was walked once an op."""
    whole_file_splits: list[int] = []
    splitlines = ast._splitlines_no_ff  # type: ignore[attr-defined]
    monkeypatch.setattr(ast, "_splitlines_no_ff", lambda source: whole_file_splits.append(1) or splitlines(source))
    walked: list[str] = []
    body_writes = op_bodies.body_writes
    # (patched where custom_op_sources looks it up)
    monkeypatch.setattr(definitions, "body_writes", lambda fn, *args, **kw: walked.append(fn.name) or body_writes(fn, *args, **kw))
    text = _schema_ops(300)
    found = definitions.custom_op_sources(text)
    assert sorted(found) == sorted(f"mylib::f{i}" for i in range(300))
    # (the schema as written, its quotes kept, on line 5 + 7; it declares buf written, and line 4 writes it)
    [source] = found["mylib::f7"]
    assert (source.declared_text, source.defined_line, source.declared, source.writes) == (
        '"f7(Tensor x, Tensor(a!) buf) -> ()"', 12, frozenset({"buf"}), [("buf", 4)])
    assert whole_file_splits == [] and walked == ["fn"]
    assert_linear(lines_run_here(definitions.custom_op_sources, _schema_ops(200)),
                  lines_run_here(definitions.custom_op_sources, _schema_ops(400)), "custom_op_sources, n lib.define")


def _launches(parameters: int, launches: int) -> str:
    """A Triton kernel of many parameters storing through its first (line 4), and a triton_op launching it many times
    with one argument each (lines 7 on)."""
    lines = ["import triton, torch", "@triton.jit", f"def k({', '.join(f'p{i}' for i in range(parameters))}):",
             "    tl.store(p0, 1)", '@torch.library.triton_op("mylib::f", mutates_args=())',
             "def f(x: torch.Tensor) -> torch.Tensor:"]
    lines += ["    wrap_triton(k)[(1,)](x)"] * launches
    return "\n".join([*lines, "    return x"]) + "\n"


def test_a_launch_is_matched_by_what_it_passes_not_by_every_parameter_of_its_kernel():
    [source] = definitions.custom_op_sources(_launches(300, 300))["mylib::f"]
    assert source.writes[0] == ("x", 7) and len(source.writes) == 300 and source.pointers == {"x": ["p0"]}
    # launches x parameters was four times the lines for twice each
    assert_linear(lines_run_here(definitions.custom_op_sources, _launches(300, 300)),
                  lines_run_here(definitions.custom_op_sources, _launches(600, 600)), "custom_op_sources, triton_op launches")


def test_the_pointers_are_read_from_the_nodes_last_tensors_to_clone():
    """torch writes tensors_to_clone as the wrapper's last keyword (cuda_torch211's triton_op_mutation log, line 925:
    `kwargs = {...}, tensors_to_clone = ['x_ptr', 'out_ptr']);  empty = None`); a string constant the kernel is passed
    may quote the words before it. (Read by rfind, and find within a bound: a regex searched at every occurrence.)"""
    node = ("        # File: /p/prog.py:20 in f, code: return scale_tr(x, 2.0)\n"
            "        triton_kernel_wrapper_functional_proxy = torch.ops.higher_order.triton_kernel_wrapper_functional("
            "kernel_idx = 0, constant_args_idx = 2, grid = [(4, 1, 1)], tma_descriptor_metadata = {}, kwargs = "
            "{'x_ptr': arg0_1, 'out_ptr': empty, 'note': \"tensors_to_clone = ['note']\"}, "
            "tensors_to_clone = ['x_ptr', 'out_ptr']);  empty = None\n")
    assert graph_calls.kernel_launches(node) == {("/p/prog.py", 20): {"x_ptr", "out_ptr"}}
    unended = node.replace("tensors_to_clone = ['x_ptr', 'out_ptr']", "tensors_to_clone = [" * 2000)
    assert graph_calls.kernel_launches(unended) == {("/p/prog.py", 20): set()}


def test_a_relative_import_is_followed_only_inside_a_package_below_the_root(tmp_path):
    """`python prog/main.py` runs main.py as __main__: its `from .. import helpers` is an ImportError (no known parent
    package), and a helpers.py above the script's folder is another program's. Inside a package (folders holding
    __init__.py, below sys.path's first entry) `..` is the package above, but not above the top-level package."""
    (tmp_path / "helpers.py").write_text("import torch\ndef reset():\n    torch.manual_seed(1234)\n")
    script = tmp_path / "prog" / "main.py"
    script.parent.mkdir()
    (script.parent / "__init__.py").write_text("")  # (even so: the script is __main__, in no package)
    script.write_text("from .. import helpers\nfrom . import helpers\nhelpers.reset()\n")
    (script.parent / "helpers.py").write_text("")
    def imported(path: Path, roots: list[str] | None = None) -> list[str]:  # (where Python finds them, on this disk)
        modules = calling_files.imported_modules(str(path), path.read_text(), roots, os.path.isfile)
        return calling_files.first_files(str(path), modules, os.path.isfile)

    assert imported(script, [str(script.parent)]) == []
    assert imported(script) == []
    package = tmp_path / "pkg" / "sub"
    package.mkdir(parents=True)
    for folder in (package, package.parent):
        (folder / "__init__.py").write_text("")
    (package.parent / "helpers.py").write_text("")
    module = package / "mod.py"
    module.write_text("from .. import helpers\nfrom ... import helpers as outside\n")
    assert imported(module, [str(tmp_path)]) == [
        str(package.parent / "helpers.py")]
    from compilescope.diagnose import _imported_seed

    assert _imported_seed(str(script), script.read_text(), [str(script.parent)]) is None


def test_state_lines_walk_each_file_a_fixed_number_of_times_whatever_the_changes(tmp_path, monkeypatch):
    """module_state.log's recompiles show a hook, two mode switches and an unfreeze (test_module_state): every change
    was matched by walks of the whole file of its own (two, and one more for the compile sites)."""
    state_lines_module = importlib.import_module("compilescope.analyses.state_lines")
    walks: dict[int, int] = {}
    walk = ast.walk

    def counted(node):
        if isinstance(node, ast.Module):
            walks[id(node)] = walks.get(id(node), 0) + 1
        return walk(node)

    monkeypatch.setattr(state_lines_module.ast, "walk", counted)
    results = analyze(read_trace(torch213_moved("module_state.log.gz", tmp_path)))
    (page,) = [f for f in results.sources.files if f.path.endswith("module_state.py")]
    assert sum(1 for note in page.notes.values() if note.state_changes) == 4  # (the lines themselves: that test)
    assert walks and max(walks.values()) <= 3, walks  # (file_index: the candidates, the compiled names, the compiles)


def test_a_json_island_keeps_del_and_c1_through_the_pages_finalize():
    value = {"code": "a\x7fb\x85c</script>\u202ed", "\x7f": ["\x9f"]}
    island = _visible_text(json_island(value))
    assert json.loads(str(island)) == value and "\u2421" not in island and "<" not in island


def test_one_report_scans_the_logs_graphs_for_custom_op_calls_once(monkeypatch, tmp_path):
    """files_wanted, package_markers and modules_wanted (the files ingest reads for op_mutations) and op_mutations
    itself each asked graph_calls.found_calls, which read every compile's graphs again: four scans a report. One
    report now reads each compile's AOT graphs once (aot_calls: once per compile holding both Dynamo's graph and an
    AOT graph). custom_op_mutation.log.gz: [0/0] and [1/0] each log a dynamo_output_graph and an
    aot_inference_graph (counted from the raw log)."""
    log = torch213_moved("custom_op_mutation.log.gz", tmp_path)
    by_frame: dict[int, set[str]] = {}
    for envelope, _ in raw_records(log):
        for kind in ("dynamo_output_graph", *graph_calls.AOT_GRAPHS):
            if kind in envelope:
                by_frame.setdefault(envelope["frame_id"], set()).add(kind)
    both = [f for f, kinds in by_frame.items() if "dynamo_output_graph" in kinds and len(kinds) > 1]
    assert len(both) == 2
    scanned: list[int] = []
    aot_calls = graph_calls.aot_calls
    monkeypatch.setattr(graph_calls, "aot_calls", lambda text: scanned.append(1) or aot_calls(text))
    with read_trace(log) as trace:
        found = analyze(trace)
        # (the report found both ops: the scan ran, and its one result served every step)
        assert [op.op for op in found.insights.op_mutations.ops] == ["mylib::scale", "mylib::clamp_np"]
    assert len(scanned) == len(both)


def test_a_log_calling_no_custom_op_has_its_aot_graphs_read_for_none(monkeypatch):
    """op_mutations read every compile's AOT graphs (aot_calls: each `torch.ops.` call matched and looked up;
    kernel_launches) before looking at Dynamo's graph, which names the custom ops called: a model calling none (the
    usual) paid for every aten call of its AOT graphs (GPT-2's 12 MB log: 1.3% of its work past start-up). Now they
    are read for a graph calling a custom op only. training.log: one compile, its Dynamo graph and AOT graphs logged,
    only aten ops called (counted from the raw log)."""
    log = torch213("training.log")
    kinds = {kind for envelope, _ in raw_records(log) for kind in ("dynamo_output_graph", *graph_calls.AOT_GRAPHS)
             if kind in envelope}
    assert "dynamo_output_graph" in kinds and len(kinds) > 1
    assert b"torch.ops.aten." in log.read_bytes()
    scans = record_calls(monkeypatch, graph_calls, "aot_calls", len)
    launches = record_calls(monkeypatch, graph_calls, "kernel_launches", len)
    with read_trace(log) as trace:
        found = analyze(trace)
        assert not found.insights.op_mutations.ops
    assert scans == [] and launches == []


def test_the_compile_timeline_reads_the_begin_and_end_events_not_every_chromium_event_whole(monkeypatch):
    """compile_times parsed every chromium event the log holds again (the spool is JSON lines): the instant events and
    the end events' args (a compile's metrics) were most of their bytes, ~1% of a 12 MB CUDA log's work past start-up
    (compiled_optimizer's: 2.4%), none of it read. Ingest now keeps apart what the timeline reads of each begin and end
    event (Trace.timeline_events). compiled_optimizer.log: 273 chromium events, 134 begins, 134 ends (each with its
    compile's metrics as args) and 5 instant events (counted from the raw log)."""
    log = torch213("compiled_optimizer.log.gz")
    events = [json.loads(payload) for envelope, payload in raw_records(log) if "chromium_event" in envelope]
    phases = [e.get("ph") for e in events]
    assert (len(events), phases.count("B"), phases.count("E"), phases.count("i")) == (273, 134, 134, 5)
    assert all(e.get("args") for e in events if e.get("ph") == "E")
    read: dict[int, int] = {}  # id of the spool -> its lines parsed
    lines_of = JsonLines.__iter__

    def counting(spool):
        for obj in lines_of(spool):
            read[id(spool)] = read.get(id(spool), 0) + 1
            yield obj

    monkeypatch.setattr(JsonLines, "__iter__", counting)
    with read_trace(log) as trace:
        results = analyze(trace)
        times = results.insights.compile_time
        assert times.compiles and times.timeline  # (the timeline is still read)
        assert read.get(id(trace.chromium_events), 0) == 0
        assert read[id(trace.timeline_events)] == 2 * 134  # (the rows' read and the kernel compiles', each once)
        kept = list(lines_of(trace.timeline_events))
        # Kept: no instant event, no end event's metrics, a begin's compile_id alone of its args.
        assert [e["ph"] for e in kept] == [p for p in phases if p in ("B", "E")]
        assert not any("args" in e for e in kept if e["ph"] == "E")
        assert {tuple(e["args"]) for e in kept if "args" in e} == {("compile_id",)}
        # A saved analysis leaves them out (they repeat chromium_events): loaded, the same rows come from those.
        saved = results.to_json()
        assert "timeline_events" not in json.dumps(saved)
        with Results.from_json(json.loads(json.dumps(saved))) as loaded:
            assert loaded.trace is not None and len(loaded.trace.timeline_events) == 0
            assert compile_times(loaded.trace).timeline == compile_times(trace).timeline == times.timeline


def _called_on_one_line(op: UndeclaredMutation, n: int, **call_fields) -> UndeclaredMutation:
    """op with n calls at its first call's line, each in a compile of its own ([k/0]): a loop in the program compiled
    again per shape, every call a note of the line's. call_fields: each call's, by its index."""
    (first, *_) = op.calls
    calls = [dataclasses.replace(first, compile_id=f"[{k}/0]", **{f: value(k) for f, value in call_fields.items()})
             for k in range(n)]
    return dataclasses.replace(op, calls=calls)


def _badge_title(whys: list[str]) -> str:
    """The title of the badge of a line whose notes say these, as the source page says it."""
    return said(LineNotes(found_stores=[{"why": w, "badge": "", "compile_ids": []} for w in whys]).found_stores_title, "; ")


def test_the_notes_of_a_line_of_many_calls_grow_linearly_in_its_calls(tmp_path):
    """Each call's note on a source page repeated the op's lists of every compile: a triton_op torch handled at some
    calls (PARTLY_FOUND's two lists, cuda_torch211 triton_op_mutation.log.gz's op with every other call's store found)
    and a custom_op whose calls' code came from the cache (CACHED's list, torch213 custom_op_mutation_stale.log.gz's
    mylib::scale: its one call cached, as its log shows, each call here in a cached compile of its own): N calls, N
    notes of N compile ids each (2,000 calls: 39 MB of notes, the badge's title all of them again). Now each note says
    its own call, the op's finding the lists, the first LISTED of them: twice the calls, at most twice the text; the
    badge's title says the first LISTED distinct notes, whatever their number."""
    (mixed,) = op_mutations_here(read_trace(cuda211_moved("triton_op_mutation.log.gz", tmp_path))).functionalized
    (tmp_path / "stale").mkdir()
    stale = op_mutations_here(read_trace(torch213_moved("custom_op_mutation_stale.log.gz", tmp_path / "stale"))).ops
    cached = next(op for op in stale if op.op == "mylib::scale")
    assert [(c.cached, c.store_found) for c in cached.calls] == [(True, False)]
    assert mixed.form == TRITON_OP and all(c.store_found for c in mixed.calls)
    for op, fields in ((dataclasses.replace(mixed, cloned=[]), {"store_found": lambda k: k % 2 == 0}),
                       (cached, {})):
        notes = {n: [op_n.call_note(c) for c in op_n.calls] + [op_n.write_note, op_n.why]
                 for n in (200, 400) for op_n in [_called_on_one_line(op, n, **fields)]}
        small, large = (sum(len(note) for note in notes[n]) for n in (200, 400))
        assert large <= 2 * small, f"{op.op}: {small:,} characters of notes for 200 calls, {large:,} for 400"
        titles = {n: _badge_title(notes[n]) for n in (200, 400)}
        # (only the counts' digits differ: "100 of 200 calls", "and 194 more" notes, as the notes differ by call)
        assert len(titles[400]) <= len(titles[200]) + 4, f"{op.op}: the badge's title grows with the calls"


def test_the_memo_of_a_trace_pickled_and_read_again_gives_the_same_analysis(tmp_path):
    """Trace.found_once keeps found_calls' scan for the steps of one report; its places of the calls were keyed by
    id(call), which a copy of the memo (a Trace pickled to a worker process, were its payload spool picklable:
    today's is an open temporary file) makes other objects' ids: each call then found no place, or another's. Keyed
    by their order, the memo pickled and read again gives the analysis it gave: custom_op_mutation.log.gz (a read of
    x moved past mylib::scale's call, its place in the graph needed) and triton_op_mutation.log.gz (x_ptr in
    tensors_to_clone under both calls: the launches' pointers needed)."""
    for log in (torch213_moved("custom_op_mutation.log.gz", tmp_path),
                cuda211_moved("triton_op_mutation.log.gz", tmp_path)):
        with read_trace(log) as trace:
            found = op_mutations_here(trace)
            assert found.ops or found.functionalized  # (what the memo's places are needed for)
            assert any(c.moved_reads for op in found.ops for c in op.calls) or \
                all(c.store_found for op in found.functionalized for c in op.calls)
            trace.found_once = pickle.loads(pickle.dumps(trace.found_once))
            assert op_mutations_here(trace).to_json() == found.to_json()
def _mode_loops(n: int, compiled_first: bool) -> str:
    """main(model, x) with n loops `for m in model.modules(): m.training = False` (the loop on lines 4-5 of the
    compiled_first shape, the rest from line 7 on): all before `torch.compile(model)`, or after it and after a first
    call `compiled(x)` on line 6 that ran between line 5's loop and the others."""
    loop = "    for m in model.modules():\n        m.training = False\n"
    if compiled_first:
        body = "    compiled = torch.compile(model)\n" + loop + "    compiled(x)\n" + loop * n
    else:
        body = loop * n + "    compiled = torch.compile(model)\n"
    return "import torch\ndef main(model, x):\n" + body + "    compiled(x)\n"


# One recompile step of MAX_STEP_CHANGES Dropouts switched to eval (module_mode_loops' shape: drops[i] of self)
_DROPS_TO_EVAL = [StateChange(f"L['self']._modules['drops']._modules['{i}'].training", "True", "False")
                  for i in range(state_lines.MAX_STEP_CHANGES)]


def _lines_of_one_step(text: str) -> list[list[int]]:
    """change_lines of each of the step's changes, and of those lines the ones _on_stack keeps for a recompile called
    from line 6 of main (`compiled(x)`, _mode_loops)."""
    tree = ast.parse(text)
    index = state_lines.file_index(tree)
    found = [state_lines.change_lines(tree, change, index) for change in _DROPS_TO_EVAL]
    files = {"/p/prog.py": (tree, text.splitlines())}
    kept = [[line for _, line, _ in state_lines._on_stack([("/p/prog.py", line, files["/p/prog.py"][1]) for line in lines],
                                                          [Frame("/p/prog.py", 6, "main")], files, {"/p/prog.py": index})]
            for lines in found]
    return found + kept


def test_a_steps_changes_are_placed_against_a_function_of_many_loops_once_each():
    """A step's 64 changes each asked of every line found whether it ran before the module's first compile (a walk of
    its function for the loops around both) and whether a loop around the recompile's call holds it (another): a
    function of 250 loops over modules() took 28 s. Every loop reaches every Dropout (modules() yields all)."""
    # before the compile, no loop around both: each ran once, and every compile starts from the state they set
    assert _lines_of_one_step(_mode_loops(30, compiled_first=False)) == [[]] * 2 * len(_DROPS_TO_EVAL)
    # after it: each a candidate (lines 5, then 8, 10, ...), and of them the one before the call on line 6 the stack's
    found = _lines_of_one_step(_mode_loops(30, compiled_first=True))
    assert found == [[5, *range(8, 8 + 2 * 30, 2)]] * len(_DROPS_TO_EVAL) + [[5]] * len(_DROPS_TO_EVAL)
    for compiled_first in (False, True):
        assert_linear(lines_run_here(_lines_of_one_step, _mode_loops(50, compiled_first)),
                      lines_run_here(_lines_of_one_step, _mode_loops(100, compiled_first)),
                      f"change_lines and _on_stack, n loops over modules() ({compiled_first=})")

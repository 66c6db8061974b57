"""compilescope diff on real torch 2.13 pairs: each names exactly its change, and two runs of one program none."""

from __future__ import annotations

import copy
import gzip
import html
import io
import json
import re

import pytest
from rich.console import Console

from compilescope.analyses.analyze import analyze
from compilescope.analyses.results import Results
from compilescope.analyses.diff import NODES_IN_TERMINAL, SECTION_LABELS, SECTIONS
from compilescope.analyses.run_facts import RunFacts
from compilescope.analyses.time_threshold import TimeThreshold
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.run_facts.printed_graphs import graph_nodes
from compilescope.analyses.diff.analysis import _values_text, diff_report, diff_runs
from compilescope.ingest.reader import read_trace
from compilescope.render.diff import print_diff
from compilescope.wording import format_seconds

from ..conftest import REPO, TORCH213_LOGS, cuda211, peer, run_cli, shared, torch213, torch214
from ..gpu_variants import RESIDUAL_SKIP, log_text, max_autotune_log, with_cudagraph_skip, with_other_winner
from .helpers import copy_fleet, cut_inside, diff, facts, log, rank_dir


def sections(d) -> set[str]:
    return {c.section for c in d.changes}


def test_two_runs_of_the_same_program_show_no_change():
    d = diff("base", "base_again")
    assert d.changes == []
    assert d.matched_frames and all(k.endswith(" f") for k in d.matched_frames)
    # Their compile times do differ (a shared machine), by 1s or more but under 3x: a note that names the ratio,
    # not a change.
    ta, tb = facts("base").compile_time_s, facts("base_again").compile_time_s
    assert abs(ta - tb) >= 1 and max(ta, tb) / min(ta, tb) < 3
    [note] = d.notes
    assert note.startswith(f"compile time {format_seconds(ta)} → {format_seconds(tb)}: the slower took ")
    assert note.endswith("x the faster, under the 3x that counts as a change (--time-ratio)")


def test_a_timing_note_names_the_test_the_difference_failed():
    a, b = facts("base"), facts("base_again")  # 1s or more apart, under 3x (above)
    [by_seconds] = diff_runs(a, b, TimeThreshold(seconds=100, ratio=1.1)).notes
    assert by_seconds.endswith(": less than the 100s apart that counts as a change (--time-threshold)")
    # Rounded down: a ratio just under the one that counts never reads as reaching it (2.999x is not "3.00x").
    assert TimeThreshold().not_a_change("compile time", 10.0, 29.99) == (
        "compile time 10.00 s → 29.99 s: the slower took 2.99x the faster, under the 3x that counts as a change "
        "(--time-ratio)")


def test_every_log_against_itself_shows_no_change():
    for name in ("break", "dynamic", "config", "cold", "warm"):
        assert diff(name, name).changes == [], name


def test_added_graph_break_is_named_with_its_reason_line_and_new_frame():
    d = diff("base", "break")
    assert sections(d) == {"frames", "graph_breaks", "recompiles", "graphs"}
    [gb] = [c for c in d.changes if c.section == "graph_breaks"]
    assert gb.kind == "added"
    assert gb.b["reason"] == "Call to `torch._dynamo.graph_break()`"
    assert gb.b["file"].endswith("diff_pair.py") and gb.b["line"] == 33
    # It belongs to f (it ends f's graph), the frame its first compilation compiled: not to no frame.
    assert gb.frame == gb.b["frame"] and gb.frame.endswith("diff_pair.py:30 f") and gb.b["function"] == "f"
    [frame] = [c for c in d.changes if c.section == "frames"]
    # The log names it torch_dynamo_resume_in_f_at_33 (co_firstlineno 33): the title says it in the user's terms, the
    # change's frame key keeps torch's name.
    assert frame.kind == "added" and frame.title == (
        "f after its graph break (diff_pair.py:33) compiled only in B (2 compiles)")
    assert frame.frame.endswith("diff_pair.py:33 torch_dynamo_resume_in_f_at_33")
    # The new frame brings its own cache lookups and dynamic symbol: listed with it, not as changes of their own.
    assert frame.detail["caches"] == {"aotautograd_cache": {"miss": 2}, "fx_graph_cache": {"miss": 2}}
    assert frame.detail["symbols"] == ["L['y'].size()[0]"]
    # f now ends at the break: relu and + moved out of its graphs (matched by op, target and user line).
    node_changes = [c for c in d.changes if c.section == "graphs" and "removed" in c.detail]
    assert len(node_changes) == 2
    for c in node_changes:
        assert [(n["op"], n["target"], n["line"].rsplit("/", 1)[-1]) for n in c.detail["removed"]] == [
            ("call_function", "torch.relu", "diff_pair.py:34"), ("call_function", "operator +", "diff_pair.py:34")]
        assert c.detail["added"] == [] and c.detail["retargeted"] == []
    kernels = [c for c in d.changes if "generated kernels" in c.title]
    assert [(c.a, c.b) for c in kernels] == [({"cpp_pybinding": 4}, {"cpp_pybinding": 2})]
    [outcome] = [c for c in d.changes if c.section == "recompiles" and "outcomes" in c.title]
    assert outcome.a == {"ok": 2} and outcome.b == {"break": 2}
    # Each log's recompile_reasons: base "0/0: tensor 'x' size mismatch", break that and "1/0: tensor 'y' ..." of the
    # resume function, compiled only in B: the recompiles of both runs say so, the frames matched compare none.
    [total] = [c for c in d.changes if c.section == "recompiles" and c is not outcome]
    assert (total.a, total.b) == (1, 2) and total.title == (
        "recompiles in all: 1 → 2 (f after its graph break (diff_pair.py:33) recompiled once (compiled in "
        "B only))")
    # Said in words, not as the Python dicts a and b are.
    assert outcome.title == "f (diff_pair.py:30): outcomes: 2 compiled → 2 compiled after a restart"


def test_removed_graph_break_is_the_mirror_image():
    d = diff("break", "base")
    assert sections(d) == {"frames", "graph_breaks", "recompiles", "graphs"}
    assert [c.kind for c in d.changes if c.section == "graph_breaks"] == ["removed"]
    assert [c.kind for c in d.changes if c.section == "frames"] == ["removed"]


def test_mark_dynamic_removes_the_recompile_and_its_guard_failure():
    d = diff("base", "dynamic")
    # Compile time may or may not pass the noise threshold (one compile fewer): allowed, never required.
    assert sections(d) - {"compile_time"} == {"recompiles", "graphs", "caches", "dynamic_shapes"}
    [rec] = [c for c in d.changes if c.section == "recompiles"]
    assert (rec.a, rec.b) == (2, 1)
    assert rec.detail["gone_guard_failures"] == ["tensor 'x' size mismatch at index 0. expected 4, actual 6"]
    assert rec.detail["new_guard_failures"] == []
    [shape] = [c for c in d.changes if c.section == "dynamic_shapes"]
    # (torch's source as it wrote it, and as f's code names it: its argument x)
    said = {"source": "L['x'].size()[0]", "source_text": "x.size()[0]"}
    assert shape.kind == "changed" and shape.a == {**said, "first_compile": False}
    assert shape.b == {**said, "first_compile": True}
    # The first graph now takes the size as a symbol (its generated name, s77 or s0, is masked).
    [nodes] = [c for c in d.changes if c.section == "graphs" and "added" in c.detail]
    assert [(n["op"], n["target"]) for n in nodes.detail["added"]] == [("placeholder", "s#")]
    caches = {c.title.split(":")[0]: (c.a, c.b) for c in d.changes if c.section == "caches"}
    assert caches == {"AOTAutograd cache": ({"miss": 2}, {"miss": 1}), "FX graph cache": ({"miss": 2}, {"miss": 1})}


def test_across_torch_versions_the_options_one_version_has_are_one_change_each_way():
    """graph_breaks.py recorded with torch 2.13 and 2.14: 2.14 adds and drops config options, which are not changes
    the user made. Each version's own options are one change, all of them in its detail; a key both have whose value
    differs is still its own change."""
    with read_trace(str(torch213("graph_breaks.log"))) as ta, read_trace(str(torch214("graph_breaks.log"))) as tb:
        a, b = run_facts(analyze(ta)), run_facts(analyze(tb))
    assert a.torch_version.startswith("2.13") and b.torch_version.startswith("2.14")
    d = diff_runs(a, b)
    config = [c for c in d.changes if c.title.startswith("config")]
    [gone] = [c for c in config if c.kind == "removed"]
    [new] = [c for c in config if c.kind == "added"]
    # (one option 2.14 renamed, dynamo._shapes_spec, is its own change: tests/diff/test_upgrade.py)
    [renamed] = [c.detail["renamed"] for c in config if "renamed" in c.detail]
    assert set(gone.detail["version_options"]) == set(a.config) - set(b.config) - {renamed["a"]} != set()
    assert set(new.detail["version_options"]) == set(b.config) - set(a.config) - {renamed["b"]} != set()
    assert new.title.startswith(f"config: {len(set(b.config) - set(a.config)) - 1} options of torch {b.torch_version} "
                                f"that {a.torch_version} does not have (")
    changed = {c.title.split(":")[0].removeprefix("config ") for c in config if c.kind == "changed"
               and "renamed" not in c.detail}
    assert changed == {k for k in set(a.config) & set(b.config) if a.config[k] != b.config[k]} != set()
    assert len(config) == len(changed) + 3  # nothing else: no line per option of one version
    # A log holds every option's value, set or not: the values that differ (none set by graph_breaks.py, which sets no
    # option) are said once, beside the versions, to be possibly the new torch's defaults.
    [version] = [c for c in d.changes if c.title.startswith("torch: ")]
    assert version.detail["config_defaults_may_differ"] == sorted(changed)
    assert version.title == (f"torch: {a.torch_version} → {b.torch_version} (the {len(changed)} config values below "
                             "that differ may be the versions' own defaults, unless the program sets them)")


def test_config_flag_is_the_only_change():
    d = diff("base", "config")
    assert [(c.section, c.kind, c.a, c.b) for c in d.changes] == [
        ("environment", "changed", "false", "true")]
    assert "inductor.fallback_random" in d.changes[0].title


def test_cold_and_warm_cache():
    d = diff("cold", "warm")
    assert sections(d) == {"caches", "compile_time"}
    caches = {c.title.split(":")[0]: (c.a, c.b) for c in d.changes if c.section == "caches"}
    assert caches == {"AOTAutograd cache": ({"miss": 1}, {"hit": 1}), "FX graph cache": ({"miss": 1}, {"hit": 1})}
    [time] = [c for c in d.changes if c.section == "compile_time"]
    assert time.b < time.a
    # Which compile accounts for it, and in which phase the time went.
    assert time.detail["compiles"][0]["compile_a"] == "[0/0]" and time.detail["compiles"][0]["delta_s"] < 0
    assert "kernel_compile" in {p["phase"] for p in time.detail["phases"]}
    # The warm run logged no output code: its kernels are unknown, which is not a change.
    assert not [c for c in d.changes if c.section == "graphs"]


def test_threshold_decides_what_timing_is_noise():
    a, b = facts("base"), facts("base_again")
    assert not diff_runs(a, b).changes
    strict = diff_runs(a, b, TimeThreshold(seconds=0.1, ratio=1.1))
    assert sections(strict) == {"compile_time"}


def test_the_facts_of_a_saved_analysis_are_those_of_its_log():
    # The facts are taken from a run's Results, so an analysis saved (--save) and loaded again gives the same ones.
    # compile_error_lowering.log: one compile, [0/0], fails with InductorError, fail_user_frame_* null; the logged
    # traceback's last user frame is compile_error_lowering.py line 34, which the report's failures table shows and
    # diff now compares too.
    with read_trace(str(torch213("compile_error_lowering.log"))) as trace:
        results = analyze(trace)
        fresh = run_facts(results)
        saved = json.dumps(results.to_json())
    with Results.from_json(json.loads(saved)) as loaded:
        assert run_facts(loaded) == fresh
    assert [(x["type"], x["source"].rsplit("/", 1)[-1]) for x in fresh.failures] == [("InductorError", "compile_error_lowering.py:34")]
    assert [f.compile_ids for f in fresh.frames.values()] == [["[0/0]"]]


def test_ids_and_hashes_differ_while_content_is_the_same():
    a = facts("base")
    b = RunFacts.from_json(json.loads(json.dumps(a.to_json())))
    for frame in b.frames.values():  # other compile ids and report directories
        frame.compile_ids = [re.sub(r"\[(\d+)/", lambda m: f"[{int(m[1]) + 7}/", c) for c in frame.compile_ids]
        frame.dirs = [d + "_x" for d in frame.dirs]
    assert diff_runs(a, b).changes == []


def test_graph_nodes_ignore_generated_names():
    one = ('class GraphModule(torch.nn.Module):\n    def forward(self, s77: "Sym(s77)", L_x_: "f32[s77, 8]"):\n'
           '        l_x_ = L_x_\n        # File: /p/m.py:3 in f, code: y = x.sin()\n'
           '        sin: "f32[s77, 8]" = torch.sin(l_x_);  l_x_ = None\n        add_3: "f32[s77, 8]" = sin + 1\n'
           '        return (add_3,)\n')
    other = one.replace("s77", "s0").replace("add_3", "add").replace("sin:", "sin_1:").replace("= sin +", "= sin_1 +")
    assert graph_nodes(one) == graph_nodes(other)
    assert [n[:3] for n in graph_nodes(one)] == [
        ["placeholder", "s#", None], ["placeholder", "L_x_", None], ["call_function", "torch.sin", "/p/m.py:3"],
        ["call_function", "operator +", "/p/m.py:3"], ["output", "output", None]]


def test_compiled_autograd_graphs_match_across_runs(capsys):
    """Two real runs of programs/compiled_autograd.py (one with TORCH_LOGS=compiled_autograd_verbose, which changes
    nothing it compiles). The backward graphs are code torch generated, `<eval_with_key>.N` with N counted per
    process, and their nodes' lines are torch's or that generated code's: neither is a user line to match on."""
    a, b = torch213("compiled_autograd.log.gz"), torch213("compiled_autograd_verbose.log.gz")
    assert run_cli("diff", a, b) == 0
    assert "No change (3 frames matched" in capsys.readouterr().out
    # Both backward graphs are compiles of one frame, as a recompile is: compiled autograd's cache missed again.
    with read_trace(str(a)) as trace:
        frames = run_facts(analyze(trace)).frames
    assert frames["compiled autograd <eval_with_key>:4 forward"].compile_ids == ["[!0/1/0]", "[!1/3/0]"]
    nodes = graph_nodes("        # File: <eval_with_key>.5:5 in forward, code: getitem = inputs[0]\n"
                        "        getitem: \"f32[]\" = inputs[0]\n")
    assert nodes == [["get_attr", "inputs", None, None, None]]
    # torch's own lines are no user line either; a model library's (transformers, installed) are the model's code.
    graph = ("        # File: {}:{} in forward, code: y = x.sin()\n"
             "        sin: \"f32[8]\" = torch.sin(l_x_);  l_x_ = None\n")
    torch_file = "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py"
    model_file = "/venv/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py"
    assert graph_nodes(graph.format(torch_file, 125))[0][2:] == [None, None, None]
    assert graph_nodes(graph.format(model_file, 702))[0][2:] == [f"{model_file}:702", "y = x.sin()", None]


def test_cli_names_the_logs_as_typed_and_json_keeps_them_absolute(capsys, monkeypatch):
    # Typed relative to the logs' directory: the first lines say what was typed (they printed absolute paths, which
    # at 80 columns wrapped and said nothing the user did not know); --json's a and b stay absolute
    # (docs/diff-schema.md), a script's record of what was compared wherever it ran.
    a, b = log("base"), log("break")
    monkeypatch.chdir(a.parent)
    typed = (a.name, f"./{b.name}")
    assert run_cli("diff", *typed) == 1
    assert capsys.readouterr().out.splitlines()[:2] == [f"A {typed[0]}", f"B {typed[1]}"]
    assert run_cli("diff", *typed, "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["a"], doc["b"]) == (str(a.resolve()), str(b.resolve()))


def test_the_diff_page_names_the_logs_as_typed_with_the_path_in_the_title(tmp_path, capsys, monkeypatch):
    # The page's first table named A and B by absolute path after the terminal named them as typed; it names them as
    # typed too, the absolute path in the title, and diff.json's a and b stay absolute (docs/diff-schema.md). The real
    # CUDA pair: the compiled optimizer with a float learning rate and with a tensor one (cuda_torch211/README.md).
    a, b = cuda211("compiled_optimizer.log.gz"), cuda211("compiled_optimizer_tensor_lr.log.gz")
    monkeypatch.chdir(a.parent)
    typed = (a.name, f"./{b.name}")
    out = tmp_path / "d"
    assert run_cli("diff", *typed, "-o", out, "--no-browser") == 1  # (A recompiled step at each new float lr; B did not)
    assert capsys.readouterr().out.splitlines()[:2] == [f"A {typed[0]}", f"B {typed[1]}"]
    rows = re.findall(r"<tr><th>([AB])</th><td class=\"mono\"([^>]*)>([^<]*)</td>", (out / "index.html").read_text())
    assert rows == [("A", f' title="{a.resolve()}"', typed[0]), ("B", f' title="{b.resolve()}"', typed[1])]
    doc = json.loads((out / "diff.json").read_text())
    assert (doc["a"], doc["b"]) == (str(a.resolve()), str(b.resolve()))


def test_cli_terminal_json_and_exit_status(capsys):
    assert run_cli("diff", log("base"), log("base_again")) == 0
    out = " ".join(capsys.readouterr().out.split())  # as wrapped at any width
    assert ("No change (1 frame matched; a timing difference counts as a change when it is at least 1s "
            "(--time-threshold) and the slower side took at least 3x the faster (--time-ratio)).") in out
    assert run_cli("diff", log("base"), log("break"), "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["changed"] is True
    [rank] = doc["ranks"]
    assert rank["rank"] is None
    assert rank["sections"] == ["frames", "graph_breaks", "recompiles", "graphs"]
    # The changes come in that order too (they came as found: recompiles and graphs before the graph break).
    assert list(dict.fromkeys(c["section"] for c in rank["changes"])) == rank["sections"]
    # A restarted compilation is one compile of its frame here: summary --json counts its attempts too
    # (docs/diff-schema.md says so); the break makes each of f's 2 compilations restart once.
    assert (rank["a"]["compiles"], rank["b"]["compiles"]) == (2, 4)
    assert run_cli("summary", "--json", log("break")) == 0
    assert json.loads(capsys.readouterr().out)["compiles"] == 4 + 2
    assert {"section", "kind", "title", "frame", "a", "b", "detail", "unread_side"} == set(rank["changes"][0])
    assert rank["changes"][0]["unread_side"] is None and rank["a"]["unread"] is None  # both logs read whole
    assert run_cli("diff", log("base"), log("config")) == 1
    out = capsys.readouterr().out
    assert "config inductor.fallback_random: false → true" in out


def test_html_page_links_into_both_reports(tmp_path):
    out = tmp_path / "d"
    assert run_cli("diff", log("base"), log("break"), "-o", out, "--no-browser") == 1
    page = (out / "index.html").read_text()
    assert (out / "a" / "index.html").is_file() and (out / "b" / "index.html").is_file()
    links = re.findall(r'href="([ab]/[^"]+)"', page)
    assert "a/index.html" in links and "b/index.html" in links
    compile_links = [link for link in links if link.count("/") == 2]
    assert compile_links and all((out / link).is_file() for link in compile_links)
    assert "f after its graph break (diff_pair.py:33) compiled only in B" in page and "Graph breaks" in page
    doc = json.loads((out / "diff.json").read_text())
    assert doc["changed"] is True
    # The compile times differ, not as a change: the page says so as the JSON does (a title, not a number).
    [note] = doc["ranks"][0]["notes"]
    assert note.startswith("compile time ") and f'<p class="muted diff-note">{note}</p>' in page


def test_multi_rank_directories_are_compared_rank_by_rank(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    rank_dir(a, ("base", "cold"))
    rank_dir(b, ("break", "cold"))
    assert run_cli("diff", a, b, "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    assert "graph_breaks" in doc["ranks"][0]["sections"]
    assert doc["ranks"][1]["changes"] == []
    # One log against a directory of ranks: compared with rank 0, the other ranks are on one side only.
    assert run_cli("diff", log("base"), b, "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]] == [0] and doc["ranks_only_b"] == [1]
    assert "graph_breaks" in doc["ranks"][0]["sections"]
    # Two jobs, B with a rank 2 that A lacks: the closing tally counts it once, as on one side only.
    c = tmp_path / "c"
    rank_dir(c, ("base", "cold", "cold"))
    assert run_cli("diff", a, c) == 1
    assert " ".join(capsys.readouterr().out.split()).endswith(
        "no rank changed; 2 ranks unchanged; rank 2 on one side only.")


def test_terminal_says_how_many_nodes_it_does_not_list(capsys):
    """With a tensor predicate (torch_warnings.py's fixed variant) pick's graph keeps torch.cond and both branches:
    more new nodes than the terminal lists. The title counts them all, so the list says how many it left out."""
    a, b = torch213("torch_warnings.log.gz"), torch213("torch_warnings_fixed.log.gz")
    assert run_cli("diff", a, b, "--json") == 1
    [graph] = [c for c in json.loads(capsys.readouterr().out)["ranks"][0]["changes"] if c["detail"].get("added")]
    added = graph["detail"]["added"]
    assert len(added) > NODES_IN_TERMINAL and graph["title"].endswith(f"{len(added)} FX nodes added")
    assert run_cli("diff", a, b) == 1
    out = capsys.readouterr().out.splitlines()
    listed = [line for line in out if line.startswith("      + ")]
    assert [line.split()[1:3] for line in listed] == [[n["op"], n["target"]] for n in added[:NODES_IN_TERMINAL]]
    assert f"      … and {len(added) - NODES_IN_TERMINAL} more (--json lists them all)" in out


def test_wrapped_lines_keep_their_indent():
    """At 60 columns the guard that no longer fails and the config key wrap: their next lines stay under the text
    they continue, never at column 0 among the headings."""
    console = Console(width=60, color_system=None, record=True, file=io.StringIO())
    print_diff(diff_report("a", "b", {None: facts("base")}, {None: facts("fail")}), console)
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    note = next(i for i, line in enumerate(lines) if line.startswith("compile time "))  # the notes, last, unindented
    changes = [line for line in lines[2:note] if line and line not in SECTION_LABELS.values()]
    assert changes and all(line.startswith("  ") for line in changes)
    guard = next(i for i, line in enumerate(lines) if "failing guard in A only" in line)
    assert lines[guard + 1].startswith("      ") and not lines[guard + 1].startswith("       ")
    assert f"{lines[guard]} {lines[guard + 1].strip()}" == (
        "      failing guard in A only (not checked in B): tensor 'x' size mismatch at index 0. expected 4, actual 6")
    config = next(i for i, line in enumerate(lines) if "inject_relu_bug_TESTING_ONLY" in line)
    assert lines[config].startswith("  ~ config ") and lines[config + 1].startswith("    ")


def test_bad_input_is_one_line(tmp_path, capsys):
    assert run_cli("diff", tmp_path / "nope.log", log("base")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


@pytest.mark.parametrize("name", ["base", "break"])
def test_facts_round_trip_through_json(name):
    f = facts(name)
    assert RunFacts.from_json(json.loads(json.dumps(f.to_json()))) == f


def test_torch_version_change_is_named(tmp_path):
    """The same log as if another torch had written it (version edited in place; its md5 no longer matches)."""
    import gzip

    text = gzip.decompress(log("base").read_bytes()).decode()
    assert text.count("2.13.0+cpu") >= 2
    edited = tmp_path / "edited.log"
    edited.write_text(text.replace("2.13.0+cpu", "2.14.1+cpu"))
    with read_trace(str(edited)) as trace:
        other = run_facts(analyze(trace))
    d = diff_runs(facts("base"), other)
    assert [(c.section, c.a, c.b) for c in d.changes] == [("environment", "2.13.0+cpu", "2.14.1+cpu")]
    assert d.changes[0].title == "torch: 2.13.0+cpu → 2.14.1+cpu"


def test_a_compile_that_starts_failing():
    """Inductor emits broken C++ (a testing-only flag) and Dynamo falls back to eager (suppress_errors)."""
    d = diff("base", "fail")
    assert sections(d) - {"compile_time"} == {"environment", "recompiles", "graphs", "caches", "failures",
                                              "dynamic_shapes"}
    assert sorted((c.title.split(":")[0], c.a, c.b) for c in d.changes if c.section == "environment") == [
        ("config dynamo.suppress_errors", "false", "true"),
        ("config inductor.cpp.inject_relu_bug_TESTING_ONLY", "null", '"compile_error"')]
    # a and b are the values' JSON (data); the titles say them as a person reads them: no quotes, null is unset.
    assert sorted(c.title for c in d.changes if c.section == "environment") == [
        "config dynamo.suppress_errors: false → true",
        "config inductor.cpp.inject_relu_bug_TESTING_ONLY: (unset) → compile_error"]
    [failure] = [c for c in d.changes if c.section == "failures"]
    assert failure.kind == "added" and failure.b["type"] == "InductorError"
    assert failure.b["reason"].startswith("CppCompileError") and failure.frame.endswith("diff_pair.py:30 f")
    # The frame compiled once and is not compiled again (it runs eagerly): no recompile, no dynamic size.
    [rec] = [c for c in d.changes if c.section == "recompiles"]
    assert (rec.a, rec.b) == (2, 1)
    # diff_fail.log's one compilation_metrics ([0/0]) has fail_type InductorError and it logs no recompile_reasons:
    # batch 6 ran f uncompiled, its guards never checked. So the guard diff_base's [0/1] recompiled for ("0/0:
    # tensor 'x' size mismatch at index 0. expected 4, actual 6") did not stop failing: B stopped compiling.
    assert rec.title == ("f (diff_pair.py:30): 2 → 1 compiles (1 → 0 recompiles): B's last compile of f, [0/0], "
                         "failed, and B compiled it no more")
    assert rec.detail["stopped_after_failure"] == {"side": "B", "compile_id": "[0/0]"}
    assert rec.guard_lines == [("failing guard in A only (not checked in B)",
                                "tensor 'x' size mismatch at index 0. expected 4, actual 6", 1)]
    assert "guard no longer failing" not in rec.title + str(rec.guard_lines)
    assert [(c.kind, c.title) for c in d.changes if c.section == "dynamic_shapes"] == [
        ("removed", "dynamic symbol for x.size()[0] removed (at diff_pair.py:31)")]
    # And back: the failure is gone, the symbol is made again, and B recompiled for the guard A never checked.
    back = diff("fail", "base").changes
    [rec] = [c for c in back if c.section == "recompiles"]
    assert rec.title.endswith(": A's last compile of f, [0/0], failed, and A compiled it no more")
    assert rec.guard_lines == [("failing guard in B only (not checked in A)",
                                "tensor 'x' size mismatch at index 0. expected 4, actual 6", 1)]
    assert [c.kind for c in back if c.section == "failures"] == ["removed"]
    assert [(c.kind, c.title) for c in back if c.section == "dynamic_shapes"] == [
        ("added", "new dynamic symbol for x.size()[0] (at diff_pair.py:31)")]


def test_cli_threshold_flags(capsys):
    assert run_cli("diff", log("base"), log("base_again"), "--time-threshold", "0.1", "--time-ratio", "1.1", "--json") == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    assert rank["sections"] == ["compile_time"] and rank["threshold"] == {"seconds": 0.1, "ratio": 1.1}
    [change] = rank["changes"]
    assert change["detail"]["compiles"][0]["compile_a"] in ("[0/0]", "[0/1]")


def test_a_threshold_of_zero_counts_every_difference_but_never_none(capsys):
    a, b = facts("base"), facts("base_again")
    assert a.autotune_s == b.autotune_s == 0  # neither run autotuned: the same 0s on both sides
    assert not TimeThreshold(0, 1).significant(0, 0) and not TimeThreshold(0, 1).significant(2.5, 2.5)
    assert TimeThreshold(0, 1).significant(0, 0.001)
    assert run_cli("diff", log("base"), log("base_again"), "--time-threshold", "0") == 0
    assert "autotuning" not in capsys.readouterr().out
    assert run_cli("diff", log("base"), log("base_again"), "--time-threshold", "0", "--time-ratio", "1", "--json") == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    assert rank["sections"] == ["compile_time"]


@pytest.mark.parametrize("flags, error", [
    (["--time-threshold", "-1"], "--time-threshold must be 0 or more"),
    (["--time-threshold", "nan"], "--time-threshold must be 0 or more"),
    (["--time-ratio", "0.5"], "--time-ratio must be 1 or more"),
])
def test_a_threshold_that_means_nothing_is_a_usage_error(flags, error, capsys):
    assert run_cli("diff", log("base"), log("base_again"), *flags) == 2
    captured = capsys.readouterr()
    assert captured.err == f"compilescope: error: {error}\n" and captured.out == ""


def test_frames_of_one_run_only_are_counted_in_words(capsys):
    """Two real GPU runs with no frame in common: a frame compiled once reads "(1 compile)", not "(1 compiles)"."""
    gpt2 = shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log")
    one = shared("gpu-torch211/profile_compiled/dedicated_log_torch_trace_735v34qb.log")
    assert run_cli("diff", gpt2, one) == 1  # (1: the runs differ, as diff(1) says)
    out = capsys.readouterr().out
    # (transformers' forward, which recompiled, named as the report names it: by gpt2_train.py's line 13 that called it)
    assert "forward (modeling_gpt2.py:647, called at gpt2_train.py:13) compiled only in A (2 compiles)" in " ".join(
        out.split())
    # (torch's wrap_inline `inner`, compiled once, named by the module it runs, as the recompiles section names it:
    # its guard tree types `source=L['fn']` torch.nn.modules.container.Sequential; and by the line of script.py its
    # dynamo_start stack ends in, 19, `for _ in range(3): f(x)`, as every frame not the user's is)
    assert ("Sequential's forward (external_utils.py:67, called at profile_compiled.py:19) compiled only in B "
            "(1 compile)") in " ".join(out.split())


def test_a_library_frame_that_broke_and_never_recompiled_is_named_by_the_users_call(capsys):
    # func_numpy's [4/0] compiles torch's `wrapped` (co_filename .../torch/_functorch/apis.py, co_firstlineno 244),
    # whose graph breaks in torch's own code; it compiles once. Its dynamo_start stack's innermost frame of the program
    # is line 42 of jacobian, `return jacrev(energy)(x)`. _fixed never compiles it.
    raw = log_text(torch213("func_numpy.log.gz"))
    [index] = re.findall(r'\{"str": \["[^"]*/programs/func_numpy\.py", (\d+)\]\}', raw)
    [start] = [json.loads(line.split("] ", 1)[1])["dynamo_start"]["stack"] for line in raw.splitlines()
               if '"dynamo_start"' in line and '"frame_id": 4,' in line]
    assert (start[-1]["line"], start[-1]["name"]) == (244, "wrapped")
    assert [f["line"] for f in start if f["filename"] == int(index)][-1] == 42
    assert run_cli("diff", torch213("func_numpy.log.gz"), torch213("func_numpy_fixed.log.gz")) == 1
    assert "wrapped (apis.py:244, called at func_numpy.py:42) compiled only in A (1 compile)" in " ".join(
        capsys.readouterr().out.split())


def test_max_autotune_choosing_another_kernel_is_a_change(tmp_path, capsys):
    """Two real max-autotune runs on an H100: the same run against itself has no change; against a run whose first
    addmm search chose another kernel, that search is the one change (the other search and the times are equal)."""
    log = max_autotune_log()
    other = with_other_winner(log, tmp_path / "dedicated_log_torch_trace_other.log")
    assert run_cli("diff", log, log) == 0
    assert "No change" in capsys.readouterr().out
    assert run_cli("diff", "--json", log, other) == 1
    doc = json.loads(capsys.readouterr().out)
    [rank] = doc["ranks"]
    [change] = rank["changes"]
    assert (change["section"], change["kind"]) == ("autotuning", "changed")
    assert (change["a"]["best_kernel"], change["b"]["best_kernel"]) == ("triton_mm_17", "triton_mm_4")
    assert change["a"]["shape"] == change["b"]["shape"] == "256x2048, 256x512, 512x2048"
    # (the line the post-grad graph's `# File:` comment puts over its addmm: the model's line 13)
    assert change["title"] == ("max-autotune chose another kernel for autotune_cudagraphs.py:13 `return "
                               "self.l2(torch.nn.functional.gelu(self.l1(x))) + x`, addmm 256x2048, 256x512, 512x2048 (torch.float16, "
                               "torch.float16, torch.float16): triton_mm_17 → triton_mm_4 (BLOCK_K 64 → 32, "
                               "BLOCK_M 128 → 64; 22.6 µs → 22.6 µs)")
    assert "BLOCK_K=64, BLOCK_M=128" in change["a"]["best_config"] and "BLOCK_K=32, BLOCK_M=64" in change["b"]["best_config"]
    # diff.json keeps torch's number (the log's "best_time": 0.0225600004196167, in ms); only the title words it.
    assert change["a"]["best_time_ms"] == change["b"]["best_time_ms"] == 0.0225600004196167


def test_a_changed_winners_time_reads_as_the_summary_reads_it(tmp_path, capsys):
    """The winner's run time of the real H100 max-autotune search (the log's best_time 0.02256 ms) is worded one way
    in the summary, the diff's terminal lines and its page: '22.6 µs', not diff's own '0.023 ms'."""
    log = max_autotune_log()
    other = with_other_winner(log, tmp_path / "dedicated_log_torch_trace_other.log")
    assert run_cli("summary", log) == 0
    [summary_line] = [line for line in capsys.readouterr().out.splitlines() if "triton_mm_17" in line]
    assert "triton_mm_17 (22.6 µs)" in summary_line
    assert run_cli("diff", log, other, "-o", tmp_path / "page", "--no-browser") == 1
    terminal = " ".join(capsys.readouterr().out.split())  # (rich wraps the line)
    assert "triton_mm_17 → triton_mm_4 (BLOCK_K 64 → 32, BLOCK_M 128 → 64; 22.6 µs → 22.6 µs)" in terminal
    page = (tmp_path / "page" / "index.html").read_text()
    assert "BLOCK_M 128 → 64; 22.6 µs → 22.6 µs)" in page and " ms)" not in page


def test_cuda_graphs_skipped_in_one_run_is_a_change(tmp_path, capsys):
    """The real reduce-overhead run on an H200 (residual [0/0] recorded) against a copy whose [0/0] Inductor ran
    without CUDA graphs (an input mutated): one change, in both directions."""
    log = cuda211("cudagraph_skips.log.gz")
    skipped = with_cudagraph_skip(log, tmp_path / "dedicated_log_torch_trace_skip.log", "0/0", RESIDUAL_SKIP)
    for a, b, kind in ((log, skipped, "added"), (skipped, log, "removed")):
        assert run_cli("diff", "--json", a, b) == 1
        [rank] = json.loads(capsys.readouterr().out)["ranks"]
        [change] = rank["changes"]
        assert (change["section"], change["kind"]) == ("cudagraphs", kind)
        assert (change["a"] or change["b"])["reason"].startswith("skipping cudagraphs due to mutated inputs")
        assert change["frame"] and "residual" in change["frame"]


def test_cuda_graphs_unused_in_both_runs_for_another_reason_is_one_change(tmp_path, capsys):
    """The shared H100 run's [0/1] was never recorded (a backward left pending); a copy whose metrics say Inductor
    skipped it: still without CUDA graphs, for another reason. The run's stderr, saved beside the log (output.txt),
    says why A's was never recorded ("Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards",
    from cudagraph_trees.py): diff gives the reason summary gives, not "the log does not say why"."""
    log = max_autotune_log()
    assert "because of pending, uninvoked backwards" in (log.parent / "output.txt").read_text()
    skipped = with_cudagraph_skip(log, tmp_path / "dedicated_log_torch_trace_skip.log")
    assert run_cli("diff", "--json", log, skipped) == 1
    [change] = json.loads(capsys.readouterr().out)["ranks"][0]["changes"]
    assert (change["section"], change["kind"]) == ("cudagraphs", "changed")
    assert change["a"]["reason"] == "never recorded: torch warned that a backward was still pending"
    assert run_cli("summary", log) == 0
    assert "torch warned that a backward was still pending: " in " ".join(capsys.readouterr().out.split())
    assert change["b"]["reason"] == "skipping cudagraphs due to mutated inputs (1 instances)"
    assert change["title"] == "CUDA graphs still not used, now: skipping cudagraphs due to mutated inputs (1 instances)"


def test_cuda_graphs_used_in_one_run_only_is_a_change_and_their_loss_fails_the_baseline_gate(capsys):
    """The same MLP on an H200, compiled with mode="reduce-overhead" (profile_cudagraphs.py:27: forward [0/0] set up
    once, `cudagraphify.get_container`, and recorded once, one `CUDAGraphNode.record` begin/end pair) and in the
    default mode (profile_launch_bound.py:14: no CUDA graph event, no skip reason). Dropping the mode is no skip, yet
    the compiled code runs without CUDA graphs all the same: `diff` said "No change" and `check --baseline` passed."""
    graphed, plain = cuda211("profile_cudagraphs.log.gz"), cuda211("profile_launch_bound.log.gz")
    for a, b, kind in ((graphed, plain, "added"), (plain, graphed, "removed")):
        assert run_cli("diff", "--json", a, b) == 1
        [change] = json.loads(capsys.readouterr().out)["ranks"][0]["changes"]
        assert (change["section"], change["kind"]) == ("cudagraphs", kind)
        assert change["frame"] and "forward" in change["frame"]
        assert (change["a"]["recordings"], change["b"]["recordings"]) == ((1, 0) if kind == "added" else (0, 1))
    assert run_cli("check", plain, "--baseline", graphed) == 1
    assert [line for line in capsys.readouterr().out.splitlines() if not line.startswith("baseline-compile-time")] == [
        'baseline-cudagraphs: CUDA graphs no longer used: A recorded 1 graph, B never set one up (not compiled with '
        'mode="reduce-overhead"?)']
    assert run_cli("check", graphed, "--baseline", plain) == 0  # gaining CUDA graphs is no regression


def test_a_frame_cuda_graphs_set_up_but_never_recorded_still_used_them():
    """profile_cudagraphs's [0/0] set up once (`cudagraphify.get_container`) and recorded once; the same facts with
    the recording left out are those of a run that called it once (the warm-up call CUDA graph trees run before
    recording): CUDA graphs were on, so not 'B never set one up (not compiled with mode="reduce-overhead"?)'."""
    with read_trace(str(cuda211("profile_cudagraphs.log.gz"))) as trace:
        graphed = run_facts(analyze(trace))
    assert graphed.cudagraph_recorded and graphed.cudagraph_set_up == [graphed.cudagraph_recorded[0]["frame"]]
    ran_once = RunFacts.from_json({**graphed.to_json(), "cudagraph_recorded": []})
    assert not [c.title for c in diff_runs(graphed, ran_once).changes if c.section == "cudagraphs"]
    never_set_up = RunFacts.from_json({**graphed.to_json(), "cudagraph_recorded": [], "cudagraph_set_up": []})
    assert [c.title for c in diff_runs(graphed, never_set_up).changes if c.section == "cudagraphs"] == [
        'CUDA graphs no longer used: A recorded 1 graph, B never set one up (not compiled with mode="reduce-overhead"?)']


def test_fleets_with_an_unreadable_rank_compare_the_others_in_one_line_each(tmp_path, capsys):
    # Four real ranks a side; rank 1 changed, ranks 0 and 3 did not; rank 2 is empty in A and binary in B.
    a, b = tmp_path / "a", tmp_path / "b"
    rank_dir(a, ("base", "base", "base", "cold"))
    rank_dir(b, ("base", "break", "base", "cold"))
    (a / "dedicated_log_torch_trace_rank_2_x.log").write_bytes(b"")
    (b / "dedicated_log_torch_trace_rank_2_x.log").write_bytes(bytes(range(256)) * 16)
    # Rank 3 cut mid-file alike on both sides: the warnings say which side each is, once each.
    for side in (a, b):
        cut = (side / "dedicated_log_torch_trace_rank_3_x.log").read_bytes()
        (side / "dedicated_log_torch_trace_rank_3_x.log").write_bytes(cut[: len(cut) // 2])
    # A rank not read is trouble (2, as diff(1) for a file it cannot read), after the others are compared.
    assert run_cli("diff", a, b) == 2
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert "rank 2: not read in A, not compared: the log is empty" in out
    assert "rank 2: not read in B, not compared: not a TORCH_TRACE log" in out
    assert "rank 2: only in" not in out
    assert "\nrank 1\n" in captured.out and "\nrank 0\n" not in captured.out
    # Rank 3 keeps its paragraph: its notes say the diff saw only part of each side. Rank 0 has nothing to say.
    assert "rank 3 ! A's log was not read in full" in out and "(1 frame matched;" in out
    assert out.count("No change (") == 1 and out.count("No change in rank 0 (") == 1
    assert out.endswith("rank 1 changed; 2 ranks unchanged; rank 2 not read.")
    warnings = [line for line in captured.err.splitlines() if "rank 3" in line]
    assert [w.split(" (")[0] for w in warnings] == ["compilescope: warning: A: rank 3", "compilescope: warning: B: rank 3"]
    assert all(" (dedicated_log_torch_trace_rank_3_x.log): " in w for w in warnings)
    # The page says the same: a section for ranks 1 and 3, one line for rank 0.
    assert run_cli("diff", a, b, "-o", tmp_path / "page", "--no-browser") == 2
    capsys.readouterr()
    page = (tmp_path / "page" / "index.html").read_text()
    assert re.findall(r'<h2 id="rank-(\d+)">', page) == ["1", "3"]
    assert page.count("No change in rank 0 (") == 1 and page.count('class="no-change"') == 2
    assert run_cli("diff", a, b, "--json") == 2
    doc = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 3]
    assert doc["ranks_not_read_a"] == {"2": "the log is empty"}
    assert list(doc["ranks_not_read_b"]) == ["2"] and doc["ranks_only_a"] == doc["ranks_only_b"] == []
    assert doc["changed"] is True
    # Every rank of a side unreadable: nothing to compare, bad input.
    (tmp_path / "c").mkdir()
    for rank in (0, 1):
        (tmp_path / "c" / f"dedicated_log_torch_trace_rank_{rank}_x.log").write_bytes(b"")
    assert run_cli("diff", a, tmp_path / "c") == 2
    assert "no rank log could be read" in capsys.readouterr().err


def test_durations_are_worded_as_everywhere_and_a_compile_of_one_side_has_no_time_on_the_other(tmp_path, capsys):
    # Any timing difference counts: the compile-time change lists B's new frame's compiles ([1/0], [1/1]), absent in A.
    out = tmp_path / "d"
    assert run_cli("diff", log("base"), log("break"), "-o", out, "--no-browser", "--time-threshold", "0",
                   "--time-ratio", "1", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    [change] = [c for c in doc["ranks"][0]["changes"] if c["section"] == "compile_time"]
    only_b = [row for row in change["detail"]["compiles"] if row["compile_a"] is None]
    assert only_b and change["title"].startswith(
        f"compile time {format_seconds(change['a'])} → {format_seconds(change['b'])} (")
    page = (out / "index.html").read_text()
    for row in only_b:  # no time of A's, not 0.00s: B's time, in the unit that reads best
        assert f'<li>{row["compile_b"]}: compiled only in B, {format_seconds(row["b_s"])}</li>' in page
    assert not re.search(r"\d\.\d\ds\b", page)  # "0.37s", the old wording
    assert run_cli("diff", log("base"), log("break"), "--time-threshold", "0", "--time-ratio", "1") == 1
    text = capsys.readouterr().out
    assert f"{only_b[0]['compile_b']}: compiled only in B, {format_seconds(only_b[0]['b_s'])}" in text
    assert not re.search(r"\d\.\d\ds\b", text)


def test_a_compile_of_one_run_only_says_so_alike_in_the_terminal_the_page_and_the_json(tmp_path, capsys):
    """serve_varying compiles forward 6 times ([0/5] failed: the recompile limit), its fixed twin twice: the rows of
    [0/2]..[0/5] have no compile in B, which the terminal said as "[0/4] → (none): -4.46 s", read as nothing. Each row
    says what happened, in the words --json gives (its ids and times kept), the terminal and the page say."""
    a, b = torch213("serve_varying.log.gz"), torch213("serve_varying_fixed.log.gz")
    out = tmp_path / "d"
    assert run_cli("diff", a, b, "-o", out, "--no-browser") == 1
    terminal = capsys.readouterr().out
    [change] = [c for c in json.loads((out / "diff.json").read_text())["ranks"][0]["changes"]
                if c["section"] == "compile_time"]
    rows = {r["compile_a"]: r for r in change["detail"]["compiles"]}
    assert sorted(rows) == [f"[0/{i}]" for i in range(6)]
    for i in (2, 3, 4):
        row = rows[f"[0/{i}]"]
        assert row["compile_b"] is None and row["b_s"] == 0.0  # (the data kept)
        assert row["text"] == f"[0/{i}]: compiled only in A, {format_seconds(row['a_s'])}"
    assert rows["[0/5]"]["text"] == f"[0/5]: tried only in A, and failed, {format_seconds(rows['[0/5]']['a_s'])}"
    assert rows["[0/1]"]["text"] == (f"[0/1]: {format_seconds(rows['[0/1]']['a_s'])} → "
                                     f"{format_seconds(rows['[0/1]']['b_s'])} (-{format_seconds(-rows['[0/1]']['delta_s'])})")
    page = (out / "index.html").read_text()
    listed = change["detail"]["compiles"]
    for row in listed[:3]:  # (the terminal's 3, the page's 5)
        assert f"      {row['text']}\n" in terminal
    for row in listed[:5]:
        assert f"<li>{html.escape(row['text'], quote=False)}</li>" in page
    assert "(none)" not in terminal and "(none)" not in page


def test_a_fleet_is_headed_by_all_its_ranks_and_links_to_its_landing_page(tmp_path):
    # A: the two real gloo ranks of torch213/multi_rank; B: one log, compared with rank 0 (rank 1 is in A only).
    fleet = TORCH213_LOGS.parent / "multi_rank"
    out = tmp_path / "d"
    assert run_cli("diff", fleet, log("base"), "-o", out, "--no-browser") == 1
    page = (out / "index.html").read_text()
    # A's report is a multi-rank report: a landing page over rank_0/ and rank_1/, as `report` writes one.
    landing = (out / "a" / "index.html").read_text()
    assert "Distributed job: 2 ranks" in landing and 'href="rank_1/index.html"' in landing
    assert (out / "a" / "rank_1" / "index.html").is_file() and (out / "b" / "index.html").is_file()
    [a_row, b_row] = re.findall(r"<tr><th>[AB]</th>.*?</tr>", page, re.S)
    assert 'href="a/index.html"' in a_row and "2 ranks read" in a_row
    # A's figures are both ranks', each read on its own here; B's are its one log's.
    ranks = [facts_of(fleet / f"dedicated_log_torch_trace_rank_{r}.log") for r in (0, 1)]
    compiles = sum(len(f.compile_ids) for facts_a in ranks for f in facts_a.frames.values())
    seconds = sum(facts_a.compile_time_s for facts_a in ranks)
    assert compiles > sum(len(f.compile_ids) for f in ranks[0].frames.values())  # not rank 0's alone
    # (every compile id of both ranks compiled once, no restart: as many compile ids as compiles, all "compiled")
    assert (f'<td class="num">{compiles}<span class="muted outcomes">{compiles} compiled</span></td>'
            f'<td class="num">{format_seconds(seconds)}</td>') in a_row
    assert 'href="b/index.html"' in b_row and "ranks read" not in b_row
    # B is one log, reported at b/: its compile links have no rank_0/ in them; A's do.
    links = re.findall(r'href="([ab]/[^"]+)"', page)
    assert all((out / link).is_file() for link in links)
    assert any(link.startswith("a/rank_0/") for link in links) and not any(link.startswith("b/rank_") for link in links)


def facts_of(path) -> RunFacts:
    with read_trace(str(path)) as trace:
        return run_facts(analyze(trace))


def test_a_rank_read_in_part_says_so_before_the_changes_its_cut_may_make(tmp_path, capsys):
    # Two real ranks a side, the same log; B's rank 1 cut in half, as a killed job leaves it: the compiles and guard
    # failures it lost read as changes, so the section of rank 1 says first that B was read in part.
    a, b = tmp_path / "a", tmp_path / "b"
    rank_dir(a, ("break", "break"))
    rank_dir(b, ("break", "break"))
    cut = b / "dedicated_log_torch_trace_rank_1_x.log"
    lines = cut.read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[: len(lines) // 2]))
    assert run_cli("diff", a, b) == 1
    out = capsys.readouterr().out
    section = out[out.index("\nrank 1\n"):]
    partial = section.index("! B's log was not read in full (")
    assert "may show below as a change" in " ".join(section.split())
    assert partial < section.index("Compiles & recompiles") < section.index("guard no longer failing")
    assert "rank 0" not in out.replace("No change in rank 0 (", "")  # the whole rank is quiet
    assert run_cli("diff", a, b, "-o", tmp_path / "page", "--no-browser") == 1
    capsys.readouterr()
    page = (tmp_path / "page" / "index.html").read_text()
    rank_1 = page[page.index('<h2 id="rank-1">'):]
    assert 0 < rank_1.index('<p class="diff-partial status-break">B&#39;s log was not read in full (') < rank_1.index(
        '<section class="diff-section"')
    # Said once: not again among the notes under the changes. The JSON keeps it in the notes, first.
    assert page.count("was not read in full") == 1
    assert run_cli("diff", a, b, "--json") == 1
    [rank] = [r for r in json.loads(capsys.readouterr().out)["ranks"] if r["rank"] == 1]
    assert rank["notes"][0].startswith("B's log was not read in full (")


def test_a_symbol_made_in_torchs_code_is_placed_at_the_users_call(capsys):
    # The two ranks of the real DDP job (tests/data/cuda_torch211/logs/ddp_uneven_batch/): rank 1's recompile makes the
    # batch dynamic, a symbol whose create_symbol record's user stack holds torch's frames only (DDP's inner,
    # nn.Sequential's forward, Linear's `return F.linear(...)` at linear.py:134); its Python stack has the user's line
    # that called them, ddp_uneven_batch.py:27 (`loss = step(x).pow(2).mean()`): the change names both, as recompiles
    # places the size check that failed ("passed in by the call at ddp_uneven_batch.py:27").
    ranks = sorted(cuda211("ddp_uneven_batch").glob("*.log.gz"))
    assert run_cli("diff", *ranks, "--json") == 1
    [doc] = json.loads(capsys.readouterr().out)["ranks"]
    [symbol] = [c for c in doc["changes"] if c["section"] == "dynamic_shapes"]
    assert symbol["title"] == ("new dynamic symbol for args[0].size()[0] (in torch's linear.py:134, called at "
                               "ddp_uneven_batch.py:27)")
    assert symbol["b"]["file"].endswith("/ddp_uneven_batch.py") and symbol["b"]["line"] == 27
    assert "None" not in " ".join(c["title"] for c in doc["changes"])


def test_the_optimizers_lr_symbol_is_placed_at_the_users_call(capsys):
    """compiled_optimizer.log.gz: each create_symbol of zf8 (L['self'].param_groups[0]['lr']) has a user stack of
    torch's adam.py:229 only (`for group in self.param_groups:` in step), and a Python stack whose last line of the
    program is compiled_optimizer.py:24 (`opt.step()` in opt_step). The tensor lr run makes no symbol: removed, 5 times
    (6 records: compiles [2/1] to [2/5], [2/1] restarted as [2/1_1], whose symbol is the one kept), placed at that
    call. Its specialization, which torch logged with user_stack null (in its _tensorify_python_scalars pass, no line
    of step running), is placed as the report places it: what was read (the source without L[...]: lr, read as
    self.param_groups[0]['lr']), by the function compiled ([2/1]'s co_name step), at the symbol's line in torch and
    the user's call."""
    assert run_cli("diff", cuda211("compiled_optimizer.log.gz"), cuda211("compiled_optimizer_tensor_lr.log.gz")) == 1
    out = " ".join(capsys.readouterr().out.split())  # as one line: the terminal wraps them
    assert ("- dynamic symbol for self.param_groups[0]['lr'] removed (in torch's adam.py:229, called at "
            "compiled_optimizer.py:24) (×5)") in out
    placed = ("lr, read as self.param_groups[0]['lr'] by step at torch's adam.py:229, called at "
              "compiled_optimizer.py:24")
    assert f"0.01 ({placed})" in out.split("no longer specialized: ")[1]
    # The report's words for it (dynamic_shapes.read_placement, one wording; summary adds the user's function).
    assert run_cli("summary", cuda211("compiled_optimizer.log.gz")) == 0
    assert f"{placed} in opt_step" in " ".join(capsys.readouterr().out.split())


def test_each_fleets_totals_are_in_the_json_as_the_page_heads_it(tmp_path, capsys):
    # A: the real 2-rank DDP job on an H100 (torch 2.11); B: the two real gloo ranks of torch213/multi_rank.
    fleet_a, fleet_b = cuda211("ddp_uneven_batch"), TORCH213_LOGS.parent / "multi_rank"
    out = tmp_path / "d"
    assert run_cli("diff", fleet_a, fleet_b, "-o", out, "--no-browser", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert json.loads((out / "diff.json").read_text()) == doc
    rows = re.findall(r"<tr><th>[AB]</th>.*?</tr>", (out / "index.html").read_text(), re.S)
    for fleet, totals, row in ((fleet_a, doc["totals_a"], rows[0]), (fleet_b, doc["totals_b"], rows[1])):
        # Each rank read on its own here: a frame every rank compiled counts once, compiles and seconds are summed.
        ranks = [facts_of(path) for path in sorted(fleet.glob("dedicated_log_torch_trace_rank_*"))]
        assert totals["ranks"] == len(ranks) == 2
        assert totals["frames"] == len({key for facts_r in ranks for key in facts_r.frames}) < sum(
            len(facts_r.frames) for facts_r in ranks)
        assert totals["compiles"] == sum(len(f.compile_ids) for facts_r in ranks for f in facts_r.frames.values())
        assert totals["compile_time_s"] == pytest.approx(sum(facts_r.compile_time_s for facts_r in ranks))
        assert totals["torch_versions"] == [ranks[0].torch_version] == [ranks[1].torch_version]
        # The compile ids in the ranks' records (frame, compile, attempt), as the reports' cards count them.
        ids = [set(re.findall(r'"frame_id": (\d+), "frame_compile_id": (\d+), "attempt": (\d+)', log_text(path)))
               for path in sorted(fleet.glob("dedicated_log_torch_trace_rank_*"))]
        assert totals["compile_ids"] == sum(map(len, ids))
        # The page's header shows these figures (it takes them from the report, as the JSON does).
        assert (f'<td>{totals["torch_versions"][0]}</td><td class="num">{totals["frames"]}</td><td class="num">'
                f'{totals["compile_ids"]}<span class="muted outcomes">{totals["outcomes"]}</span></td><td class="num">'
                f'{format_seconds(totals["compile_time_s"])}</td>') in row
    # Both ranks are on both sides: each rank's own figures add up to its side's.
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    for side in "ab":
        assert sum(r[side]["compiles"] for r in doc["ranks"]) == doc[f"totals_{side}"]["compiles"]
    assert doc["totals_a"]["torch_versions"] != doc["totals_b"]["torch_versions"]


def test_what_a_ranks_cut_gz_lost_is_marked_as_maybe_unread_everywhere(tmp_path, capsys):
    # The real 2-rank DDP job on an H100 on both sides; B's rank 1 a .gz cut short (no end-of-stream marker) in the
    # middle of its recompile [0/1] (its last batch of 20 failed the size guard), as a job killed there leaves it.
    a, b = copy_fleet(cuda211("ddp_uneven_batch"), tmp_path / "a"), copy_fleet(cuda211("ddp_uneven_batch"), tmp_path / "b")
    cut = next(b.glob("dedicated_log_torch_trace_rank_1_*.log.gz"))
    lines = log_text(cut).split("\n")
    first = next(i for i, line in enumerate(lines) if '"frame_id": 0, "frame_compile_id": 1,' in line)
    end = next(i for i, line in enumerate(lines) if '{"compilation_metrics": {"compile_id": "0/1"' in line)
    cut.write_bytes(gzip.compress(cut_inside(lines, first, end).encode())[:-8])
    assert run_cli("diff", a, b, "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    rank_0, rank_1 = doc["ranks"]
    assert rank_0["changes"] == [] and rank_0["a"]["unread"] is None is rank_0["b"]["unread"]
    # What the cut side says was not read, and where: before the recompile's metrics, after its first record.
    assert rank_1["a"]["unread"] is None
    stopped = rank_1["b"]["unread"]["stopped_at_line"]
    assert first < stopped < end and rank_1["notes"][0].startswith(
        f"B's log was not read in full (1 payload not matching its md5; the log cannot be read after line {stopped}: ")
    # The cut is all that differs: every change of rank 1 is what B did not read, and says so. The recompile is one.
    changes = rank_1["changes"]
    assert changes and all(c["unread_side"] == "B" for c in changes)
    assert any(c["section"] == "recompiles" and c["b"].get("missing") == 1 for c in changes)
    assert rank_1["notes"][0].endswith(f"; the {len(changes)} changes it may explain say so")
    # The same log against its cut copy, one log each: the same changes, marked the same (one rule for both).
    assert run_cli("diff", next(a.glob("*rank_1_*")), cut, "--json") == 1
    [single] = json.loads(capsys.readouterr().out)["ranks"]
    assert [(c["title"], c["unread_side"]) for c in single["changes"]] == [(c["title"], "B") for c in changes]
    # The terminal and the page follow each of them with it; rank 0 stays one line.
    mark = "(may be only what B's log lacks)"
    assert run_cli("diff", a, b) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert out.count(mark) == len(changes) and out.index("rank 1 ! B's log was not read in full") < out.index(mark)
    assert all(f"{c['title']} {mark}" in out for c in changes)
    assert "No change in rank 0 (" in out
    assert run_cli("diff", a, b, "-o", tmp_path / "page", "--no-browser") == 1
    capsys.readouterr()
    page = (tmp_path / "page" / "index.html").read_text()
    escaped = mark.replace("'", "&#39;")
    assert page.count(f'<span class="diff-unread status-break">{escaped}</span>') == len(changes)


def test_a_change_the_cut_side_still_shows_is_not_marked(tmp_path, capsys):
    # Two real ranks a side: A runs the base program twice; B's rank 1 adds a graph break (diff_pair.py, line 33) and
    # is cut in the middle of f's second compile, [0/1_1], which never ends (no metrics).
    a, b = tmp_path / "a", tmp_path / "b"
    rank_dir(a, ("base", "base"))
    rank_dir(b, ("base", "break"))
    cut = b / "dedicated_log_torch_trace_rank_1_x.log"
    lines = cut.read_text().split("\n")
    first = next(i for i, line in enumerate(lines) if '"frame_id": 0, "frame_compile_id": 1, "attempt": 1' in line)
    end = next(i for i, line in enumerate(lines) if '{"compilation_metrics": {"compile_id": "0/1"' in line)
    cut.write_text(cut_inside(lines, first, end))
    assert run_cli("diff", a, b, "--json") == 1
    [rank_1] = [r for r in json.loads(capsys.readouterr().out)["ranks"] if r["changes"]]
    marked = {(c["section"], c["title"]): c["unread_side"] for c in rank_1["changes"]}
    # What B has, a cut cannot have made: the new break, the frame that resumes after it, f's first compile restarting
    # at it, and that compile's graph, which ended before the cut (read whole).
    assert marked[("graph_breaks", "new graph break: Call to `torch._dynamo.graph_break()` at diff_pair.py:33")] is None
    assert marked[("frames", "f after its graph break (diff_pair.py:33) compiled only in B (1 compile)")] is None
    assert marked[("graphs", "f (diff_pair.py:30): graph [0/0] → [0/0_1]: 2 FX nodes removed")] is None
    assert marked[("recompiles", "f (diff_pair.py:30): outcomes: 2 compiled → 1 compiled after a restart, "
                                 "1 without metrics")] is None
    # What B lacks of a compile that had not ended may lie past the cut: [0/1_1]'s graph, f's kernels, a cache lookup.
    assert marked[("graphs", "f (diff_pair.py:30): graph [0/1] → [0/1_1]: 2 FX nodes removed")] == "B"
    assert marked[("graphs", "f (diff_pair.py:30): generated kernels 4 → 2")] == "B"
    assert marked[("caches", "FX graph cache: 2 misses → 1 miss")] == "B"



def test_a_frame_whose_log_names_no_first_line_is_titled_without_one(tmp_path):
    """graph_breaks.log cut before [4/0]'s compilation_metrics (its line 2305), as a run killed while compiling the
    rest of f after line 30 leaves it: only its dynamo_start stack names the frame (torch_dynamo_resume_in_f_at_30
    in graph_breaks.py), with no first line. Its title leaves the line out: it read "...(graph_breaks.py:?)", and
    check's details "graph_breaks.py:None" before that."""
    lines = torch213("graph_breaks.log").read_text().splitlines()
    assert lines[2304].split("] ", 1)[1].startswith('{"compilation_metrics": {"compile_id": "4/0"')
    assert '{"line": 30, "name": "torch_dynamo_resume_in_f_at_30", "filename": 1}]' in lines[2011]
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(lines[:2304]) + "\n")
    with read_trace(str(cut)) as trace:
        frames = run_facts(analyze(trace)).frames
    [frame] = [f for f in frames.values() if f.first_line is None]
    assert (frame.function, frame.label) == ("torch_dynamo_resume_in_f_at_30",
                                             "f after its graph break at line 30 (graph_breaks.py)")
    assert sorted(f.label for f in frames.values() if f.first_line is not None) == [
        "f (graph_breaks.py:21)", "f after its graph break (graph_breaks.py:23)",
        "f after its graph break (graph_breaks.py:27)", "f after its graph break (graph_breaks.py:28)"]


def test_wrapped_lines_end_without_padding(monkeypatch, capsys):
    """The CUDA optimizer pair at 80 columns: the guard that failed in A, `self.param_groups[0]['lr'] ==
    0.003333333333333333` after 'guard no longer failing: ', is wider than its column and wraps. rich pads each line
    of a wrapped cell to the column's width; none is printed with those spaces (a copied guard took them along)."""
    monkeypatch.setenv("COLUMNS", "80")
    assert run_cli("diff", cuda211("compiled_optimizer.log.gz"), cuda211("compiled_optimizer_tensor_lr.log.gz")) == 1
    out = capsys.readouterr().out.splitlines()
    guard = out.index("      guard no longer failing: self.param_groups[0]['lr'] ==")
    assert out[guard + 1] == "      0.003333333333333333"
    assert [line for line in out if line != line.rstrip()] == []


def test_a_new_failure_is_marked_as_a_change_for_the_worse(tmp_path):
    """diff_fail.log.gz has the failed compile (fail_type InductorError, a CppCompileError) that diff_base.log.gz
    lacks: on the page its mark is added ('+') yet drawn as worse; the other way round, gone, it is better. The other
    changes (compiles, graphs) keep their kind's colour alone."""
    assert run_cli("diff", log("base"), log("fail"), "-o", tmp_path / "fail", "--no-browser") == 1
    assert run_cli("diff", log("fail"), log("base"), "-o", tmp_path / "fixed", "--no-browser") == 1
    marks = {name: re.findall(r'<div class="diff-change"><span class="([^"]*)" title="[^"]*">[^<]*</span> ([^<\n]*)',
                              (tmp_path / name / "index.html").read_text()) for name in ("fail", "fixed")}
    assert [cls for cls, title in marks["fail"] if title.startswith("new failure: [0/0] f")] == ["kind-added worse"]
    assert [cls for cls, title in marks["fixed"] if title.startswith("failure gone: [0/0] f")] == ["kind-removed better"]
    others = [cls for cls, title in marks["fail"] if not title.startswith("new failure")]
    assert others and all(" " not in cls for cls in others)


def test_a_failure_is_titled_with_the_compile_that_failed(capsys):
    """diff_fail.log.gz's one compilation_metrics: compile_id 0/0, co_name f, co_firstlineno 30, fail_type InductorError,
    fail_reason starting "CppCompileError: C++ compile error"; diff_base.log.gz's compiles did not fail. The title read
    "new failure in f (diff_pair.py:30): ..." without the compile, which check's baseline-failures names: it is named
    as check names it, either way round."""
    raw = gzip.open(log("fail"), "rt", encoding="utf-8").read()
    metrics = [json.loads(line[line.index("{"):])["compilation_metrics"]
               for line in raw.splitlines() if '{"compilation_metrics": ' in line]
    assert [(m["compile_id"], m["co_name"], m["co_firstlineno"], m["fail_type"], m["fail_reason"].splitlines()[0])
            for m in metrics] == [("0/0", "f", 30, "InductorError", "CppCompileError: C++ compile error")]
    assert '"fail_type": "' not in gzip.open(log("base"), "rt", encoding="utf-8").read()
    named = "[0/0] f (diff_pair.py:30): InductorError: CppCompileError: C++ compile error"
    assert [c.title for c in diff("base", "fail").changes if c.section == "failures"] == [f"new failure: {named}"]
    assert [c.title for c in diff("fail", "base").changes if c.section == "failures"] == [f"failure gone: {named}"]
    assert run_cli("check", log("fail"), "--baseline", log("base")) == 1
    assert f"baseline-failures: new failure: {named};" in capsys.readouterr().out


# A TORCH_TRACE log's own name, as torch makes it (a rank and a random suffix): longer than a narrow terminal's line.
LONG_NAME = "dedicated_log_torch_trace_rank_0_h40da74u.log.gz"


def test_the_header_breaks_a_path_only_after_a_slash():
    """At 60 columns the review saw "A /…/dedicated_log_torch_trace_rank_0_h" then "40da74u.log.gz": rich broke the
    file's name where the line ended. The path folds at its "/"s, under its own start."""
    typed = (f"/tmp/s44/scratch/h/{LONG_NAME}", "tests/data/torch213/logs/diff_break.log.gz")
    report = diff_report(*typed, {None: facts("base")}, {None: facts("break")})
    for width in (60, 52):
        console = Console(width=width, color_system=None, record=True, file=io.StringIO())
        print_diff(report, console, typed=typed)
        lines = [line.rstrip() for line in console.export_text().splitlines()]
        b = next(i for i, line in enumerate(lines) if line.startswith("B "))
        a_lines, b_lines = lines[:b], lines[b:next(i for i, line in enumerate(lines) if not line)]
        for side, path in zip((a_lines, b_lines), typed):
            assert side[0][:2] in ("A ", "B ") and all(line.startswith("  ") for line in side[1:])
            assert "".join(line[2:] for line in side) == path  # folded, nothing lost or added
            assert all(line.endswith("/") for line in side[:-1])  # each break after a "/"
            assert max(map(len, side)) <= width
        assert a_lines[-1] == f"  {LONG_NAME}"
    # Narrower than the name itself: it gets a line of its own, its middle cut out; its start and end say which it is.
    console = Console(width=30, color_system=None, record=True, file=io.StringIO())
    print_diff(report, console, typed=typed)
    lines = console.export_text().splitlines()
    assert lines[:2] == ["A /tmp/s44/scratch/h/", "  dedicated_log…40da74u.log.gz"]


def test_fold_path():
    from compilescope.render.terminal_text import fold_path, shorten_middle

    assert fold_path("a/bb/ccc.log", 5) == ["a/bb/", "ccc.log"[:2] + "…" + "og"]
    assert fold_path("a/bb/ccc.log", 7) == ["a/bb/", "ccc.log"]
    assert fold_path("/x/y", 80) == ["/x/y"] and fold_path("", 10) == [""]
    assert shorten_middle("abcdefgh", 5) == "ab…gh" and shorten_middle("abc", 5) == "abc"


def test_a_compile_that_made_no_graph_is_counted_apart_as_the_reports_cards_count_it():
    # empty_graph.log: `passthrough`'s [4/0] logs graph_op_count null with has_guarded_code true (Dynamo installed code
    # and made no graph), the resume function [1/0] graph_op_count 1. multi_rank_ddp rank 0: contextlib's resume
    # function [3/0] (torch_dynamo_resume_in___init___at_105) the same null, true.
    with read_trace(str(torch213("empty_graph.log"))) as trace:
        results = analyze(trace)
        by_function = {f.function: f for f in run_facts(results).frames.values()}
    passthrough = by_function["passthrough"]
    assert (passthrough.statuses, passthrough.no_graph) == (["ok"], ["[4/0]"])
    assert passthrough.outcomes == "1 compiled, with no graph"
    assert by_function["torch_dynamo_resume_in_log_first_at_15"].outcomes == "1 compiled"
    # The words and the count of the report's cards (status.count_words with empty_graphs.no_graph), one definition.
    assert results.insights is not None and results.insights.empty_graphs.no_graph == ["[4/0]"]
    with read_trace(str(TORCH213_LOGS.parent / "multi_rank_ddp" / "dedicated_log_torch_trace_rank_0.log.gz")) as trace:
        ddp = {f.function: f for f in run_facts(analyze(trace)).frames.values()}
    assert ddp["torch_dynamo_resume_in___init___at_105"].outcomes == "1 compiled, with no graph"
    # (torch's `inner` running DDP: its guard tree types `source=L['fn']` DistributedDataParallel)
    assert ddp["DistributedDataParallel's forward"].outcomes == "1 empty graph"  # [0/0_1]: graph_op_count 0


def test_a_rewrite_that_traces_data_dependent_values_says_the_recompiles_went_and_the_unbacked_symbols_came():
    """data_dependent's Gate.forward (its graph breaks made resume functions, two of which recompiled) rewritten as
    GateRewritten.forward (torch.cond, capture_scalar_outputs, fullgraph=True): no frame of one is a frame of the other,
    so neither the recompiles nor the unbacked symbols were compared frame by frame."""
    a, b = torch213("data_dependent.log.gz"), torch213("data_dependent_rewritten.log.gz")
    text_a, text_b = (gzip.open(p, "rt").read() for p in (a, b))
    # A recompiled [2/1], [2/2] (the loop count, ___stack0 == 8, then == 11) and [3/1] (the mask's size 17 -> 16).
    reasons = re.findall(r'"name": "recompile_reasons"[^\n]*\n\t([^\n]*)', text_a)
    assert len(reasons) == 3 and reasons[0].startswith("2/0: ___stack0 == 8 ")
    assert reasons[1] == "3/0: tensor '___stack0' size mismatch at index 0. expected 17, actual 16"
    assert "2/1: ___stack0 == 11 " in text_a  # (the third's payload is a JSON list: 2/1's guard, then 2/0's)
    assert '"recompile_reasons"' not in text_b
    # B's one compile made u0 (the .item(), line 44) and u1 (the mask, line 48) in the user's lines; A made none.
    assert re.search(r'"create_unbacked_symbol": \{"symbol": "u0", [^\n]*"user_stack": \[\{"line": 44,', text_b)
    assert re.search(r'"create_unbacked_symbol": \{"symbol": "u1", [^\n]*"user_stack": \[\{"line": 48,', text_b)
    assert "create_unbacked_symbol" not in text_a

    with read_trace(str(a)) as ta, read_trace(str(b)) as tb:
        found = diff_runs(run_facts(analyze(ta)), run_facts(analyze(tb)))
    changes = [c for c in found.changes if c.section in ("recompiles", "dynamic_shapes")]
    [gone] = [c for c in changes if c.section == "recompiles"]
    assert (gone.a, gone.b) == (3, 0) and gone.title.startswith("recompiles gone: 3 in A, none in B (")
    assert "forward after its graph break (data_dependent.py:32) recompiled 2 times (compiled in A only)" in gone.title
    assert "forward after its graph break (data_dependent.py:36) recompiled once (compiled in A only)" in gone.title
    [traced] = [c for c in changes if c.section == "dynamic_shapes"]
    assert traced.kind == "added"
    assert [(v["symbol"], v["line"]) for v in traced.b] == [("u0", 44), ("u1", 48)]
    assert "u2" not in traced.title  # AOTAutograd's retrace of u0 is u0


def test_the_schema_lists_every_section_in_order():
    # docs/diff-schema.md's `section` row, as diff orders the changes (numerics was left out of it)
    (row,) = [line for line in (REPO / "docs" / "diff-schema.md").read_text().splitlines() if line.startswith("| `section` |")]
    assert tuple(re.findall(r"`(\w+)`", row.split("|")[2])) == SECTIONS


def test_a_value_several_compiles_specialized_is_said_once_with_their_count(capsys):
    """hf_llama_fixed.log.gz (dynamic=True): each of the three compiles of transformers' wrapped forward ([0/0], its
    attempt restarted as [0/0_1], [0/1], [0/2]) specializes layer 0's attention scaling to 0.25 (one value); the diff
    says that value once, with how many compiles, not "3 values: 0.25, 0.25, 0.25", which reads as three values that
    differ."""
    source = "L['args'][0]._modules['model']._modules['layers']._modules['0']._modules['self_attn'].scaling"
    compiles = {}
    for line in gzip.open(torch213("hf_llama_fixed.log.gz"), "rt"):
        if '{"symbolic_shape_specialization"' in line and not line.startswith("\t"):
            record = json.loads(line[line.index("{"):])
            if record["symbolic_shape_specialization"]["sources"] == [source]:
                compiles[(record["frame_id"], record["frame_compile_id"])] = record["symbolic_shape_specialization"]["value"]
    assert len(compiles) == 3 and {float(v) for v in compiles.values()} == {0.25}
    assert run_cli("diff", torch213("hf_llama.log.gz"), torch213("hf_llama_fixed.log.gz")) == 1
    out = " ".join(capsys.readouterr().out.split())
    # (args[0] is transformers' wrapped_func's local holding the model: said as the model, as the report says it)
    assert "+ now specialized: model.model.layers[0].self_attn.scaling = 0.25 (×3) (at sdpa_attention.py:182)" in out
    assert "0.25, 0.25" not in out and "2, 2, 2" not in out


def test_specialized_values_are_counted_by_the_form_shown():
    """sympy writes a float as "0.250000000000000", another record of the same value may say "0.25": both are shown
    "0.25", so they are one value counted twice, not "2 values: 0.25, 0.25"."""
    assert _values_text(["0.250000000000000", "0.25"]) == "0.25 (×2)"
    assert _values_text(["0.100000000000000", "0.1", "0.2"]) == "2 values: 0.1 (×2), 0.2"
    assert _values_text(["2", "2.0", "20"]) == "2 values: 2 (×2), 20"


def test_a_kernel_the_same_function_compiles_fewer_times_is_not_said_to_move(capsys):
    """tensor_subclasses.log.gz compiles calibrate twice ([0/0], and [0/1] for x.unit 'cm'), each output code defining
    cpp_fused_add_mul_0; the fixed run compiles it once. The kernel is one fewer copy of the same in the same function:
    the diff says how many times each run compiled it, not "which B computed in calibrate", which names the very
    function compared as if the work had moved there."""
    def output_codes(name: str) -> list[str]:
        return [line for line in gzip.open(torch213(name), "rt").read().split("\n")
                if '"inductor_output_code"' in line and '"frame_id": 0,' in line and not line.startswith("\t")]
    assert len(output_codes("tensor_subclasses.log.gz")) == 2 and len(output_codes("tensor_subclasses_fixed.log.gz")) == 1
    assert gzip.open(torch213("tensor_subclasses.log.gz"), "rt").read().count("cpp_fused_add_mul_0 = ") == 2
    assert run_cli("diff", torch213("tensor_subclasses.log.gz"), torch213("tensor_subclasses_fixed.log.gz")) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert ("calibrate (tensor_subclasses.py:92): generated kernels 2 → 1: - cpp_fused_add_mul_0 (add, mul at "
            "tensor_subclasses.py:94; A compiled it 2 times, B once)") in out
    assert "which B computed in calibrate" not in out
    assert run_cli("diff", torch213("tensor_subclasses.log.gz"), torch213("tensor_subclasses_fixed.log.gz"),
                   "--json") == 1
    [rank] = json.loads(capsys.readouterr().out)["ranks"]
    [change] = [c for c in rank["changes"] if c["title"].startswith("calibrate (tensor_subclasses.py:92): generated")]
    [(kernel, removed)] = [(k["kernel"], {"other_run_frame": k["other_run_frame"], "compiled": k["compiled"]})
                           for k in change["detail"]["kernels_removed"]]
    assert (kernel, removed) == ("cpp_fused_add_mul_0", {"other_run_frame": None, "compiled": {"A": 2, "B": 1}})
    assert change["detail"]["kernels_added"] == []


def test_a_kernel_compiled_two_more_times_in_one_run_is_said_once():
    """tensor_subclasses' calibrate with a third graph like its last (one more recompile in A): multiset_diff gives
    cpp_fused_add_mul_0 twice (two more copies in A), and the diff said its part twice, each 'A compiled it 3 times,
    B once'. Said once, with one entry in the detail."""
    a, b = facts_of(torch213("tensor_subclasses.log.gz")), facts_of(torch213("tensor_subclasses_fixed.log.gz"))
    [fa] = [f for f in a.frames.values() if f.label.startswith("calibrate")]
    fa.graphs.append(copy.deepcopy(fa.graphs[-1]))
    [change] = [c for c in diff_runs(a, b).changes if c.title.startswith("calibrate (tensor_subclasses.py:92): gen")]
    assert change.title == ("calibrate (tensor_subclasses.py:92): generated kernels 3 → 1: - cpp_fused_add_mul_0 (add, "
                            "mul at tensor_subclasses.py:94; A compiled it 3 times, B once)")
    assert [k["compiled"] for k in change.detail["kernels_removed"]] == [{"A": 3, "B": 1}]


def test_a_kernel_only_one_run_computes_several_times_is_said_once_with_its_count():
    """hf_gpt2_profile vs hf_gpt2_generate (cuda_torch211): transformers' wrapper frame compiles once in A and five
    times in B, and B's graphs compute layer norm over the embedding (modeling_gpt2.py:573-577) three times, which A's
    one graph (with the position ids made inside) never does. The diff said '+ triton_red_fused_add_embedding_...'
    three times, the line repeated once per copy; said once, with B's count as for a kernel both compute."""
    a, b = facts_of(cuda211("hf_gpt2_profile.log.gz")), facts_of(cuda211("hf_gpt2_generate.log.gz"))
    [change] = [c for c in diff_runs(a, b).changes if ": generated kernels" in c.title]
    name = "triton_red_fused_add_embedding_native_layer_norm_0"
    assert change.title.count(f"+ {name} (") == 1
    assert (f"+ {name} (var_mean, add, embedding, mul, sub, rsqrt at modeling_gpt2.py:273, modeling_gpt2.py:577, "
            "modeling_gpt2.py:569, modeling_gpt2.py:576; B compiled it 3 times)") in change.title
    assert [k["compiled"] for k in change.detail["kernels_added"] if k["kernel"] == name] == [{"A": 0, "B": 3}]
    added = [(tuple(k["ops"]), tuple(k["lines"])) for k in change.detail["kernels_added"]]
    assert len(added) == len(set(added))


def test_a_dynamo_set_logged_in_another_order_is_no_config_change(capsys):
    """peer-tlparse's chromium_events.log and simple.log: torch wrote Dynamo's allowed_functions_module_string_ignorelist,
    a set, in the order of each process's string hashing (older torch did not sort sets before logging its config):
    the same five modules in two orders, which the diff called a change. suppress_errors, which does differ, still is
    one."""
    def ignore_list(name: str) -> list[str]:
        [found] = set(re.findall(r'allowed_functions_module_string_ignorelist\\": \[([^\]]*)\]', peer(name).read_text()))
        return re.findall(r'\\"([^\\]+)\\"', found)
    a, b = ignore_list("chromium_events.log"), ignore_list("simple.log")
    assert a != b and sorted(a) == sorted(b)
    assert run_cli("diff", peer("chromium_events.log"), peer("simple.log")) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "allowed_functions_module_string_ignorelist" not in out
    assert "config dynamo.suppress_errors: true → false" in out


def test_a_break_hit_another_number_of_times_keeps_where_it_is(tmp_path, capsys):
    """stance_deploy's two torch.compiler.disable'd calls break twice, the fixed program's once: the change keeps each
    side's break ({reason, file, line, code, count, frame}, as docs/diff-schema.md has it), not the bare counts, so
    the page's line under it says where and what code, not an empty ':'."""
    a, b = torch213("stance_deploy.log.gz"), torch213("stance_deploy_fixed.log.gz")
    assert run_cli("diff", a, b, "--json") == 1
    changed = [c for rank in json.loads(capsys.readouterr().out)["ranks"] for c in rank["changes"]
               if c["section"] == "graph_breaks" and c["kind"] == "changed"]
    assert [(c["a"]["line"], c["a"]["count"], c["b"]["count"]) for c in changed] == [(49, 2, 1), (50, 2, 1)]
    assert all(c["a"]["file"].endswith("stance_deploy.py") and c["b"]["code"] for c in changed)
    assert run_cli("diff", a, b, "-o", tmp_path / "page", "--no-browser") == 1
    page = (tmp_path / "page" / "index.html").read_text()
    assert '<span class="muted">:</span>' not in page
    assert re.search(r'stance_deploy\.py:49</span> · <code>', page)

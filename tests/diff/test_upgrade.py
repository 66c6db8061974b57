"""A user who upgraded torch diffs a run of each version: what the upgrade changed, told apart from what the program
did, and no change where only the recording differs (the directory the program ran from)."""

from __future__ import annotations

import gzip
import json
import re

from compilescope.analyses.analyze import analyze
from compilescope.analyses.time_threshold import TimeThreshold
from compilescope.analyses.diff.environment import renamed_options
from compilescope.analyses.run_facts.analysis import run_facts
from compilescope.analyses.diff.analysis import diff_runs
from compilescope.ingest.reader import read_trace

from ..conftest import run_cli, torch213, torch214


def _facts(path):
    with read_trace(str(path)) as trace:
        return run_facts(analyze(trace))


def _text(path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.name.endswith(".gz") else data).decode()


def _program_paths(path) -> set[str]:
    return set(re.findall(r'"co_filename": "([^"]+)"', _text(path)))


def test_the_same_program_run_from_another_checkout_is_matched_by_its_file_name(capsys):
    old, new = torch213("empty_graph.log"), torch214("empty_graph.log")
    # The two recordings ran empty_graph.py from two checkouts: every frame is named by another absolute path.
    assert _program_paths(old) == {"/work/wt-15/tests/data/torch213/programs/empty_graph.py"}
    assert _program_paths(new) == {"/work/main/tests/data/torch213/programs/empty_graph.py"}
    d = diff_runs(_facts(old), _facts(new))
    # The same five frames (log_first, break_first, their resume functions, passthrough) and the same two breaks
    # (README: print at line 15, graph_break() at line 21) in both: nothing compiled or broke in one run only.
    assert {c.section for c in d.changes} == {"environment"}
    assert sorted(k.rsplit(" ", 1)[1] for k in d.matched_frames) == sorted([
        "log_first", "torch_dynamo_resume_in_log_first_at_15", "break_first", "torch_dynamo_resume_in_break_first_at_21",
        "passthrough"])
    assert ("B ran its files from another directory: matched by name "
            "(/work/main/tests/data/torch213/programs/empty_graph.py as "
            "/work/wt-15/tests/data/torch213/programs/empty_graph.py)") in d.notes
    # The gate passes: a break that only moved directory is no new break.
    assert run_cli("check", "--json", new, "--baseline", old) == 0
    results = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert results["baseline-graph-breaks"]["passed"]


def test_a_packages_init_file_is_matched_by_its_folder_too():
    # The same recordings with their program renamed a package's __init__.py: in another package (the program
    # changed) nothing is matched; in a package of the same name under another checkout it is.
    from compilescope.analyses.diff.environment import moved_onto, relocated_files

    old, new = _facts(torch213("empty_graph.log")), _facts(torch214("empty_graph.log"))
    [path_a], [path_b] = _program_paths(torch213("empty_graph.log")), _program_paths(torch214("empty_graph.log"))
    a = moved_onto(old, {path_a: "/work/one/pkg_a/__init__.py"})
    assert relocated_files(a, moved_onto(new, {path_b: "/work/two/pkg_b/__init__.py"})) == {}
    assert relocated_files(a, moved_onto(new, {path_b: "/work/two/pkg_a/__init__.py"})) == {
        "/work/two/pkg_a/__init__.py": "/work/one/pkg_a/__init__.py"}


def test_files_both_runs_name_are_not_matched_again():
    # diff_pair.py from one directory in both: the break the variant added is new, still (its file is the same file).
    base, brk = torch213("diff_base.log.gz"), torch213("diff_break.log.gz")
    assert _program_paths(base) == _program_paths(brk)
    d = diff_runs(_facts(base), _facts(brk))
    assert [c.title for c in d.changes if c.section == "graph_breaks"] == [
        "new graph break: Call to `torch._dynamo.graph_break()` at diff_pair.py:33"]
    assert not any("another directory" in note for note in d.notes)


def _torch_version(path) -> str:
    """The version torch logged (its `torch_version` artifact's payload)."""
    return re.findall(r'\t"pytorch_version": "([^"]+)"', _text(path))[0]


def test_an_upgrade_names_the_compile_steps_only_one_torch_ran():
    # programs/upgrade_train.py recorded with torch 2.13 and 2.14 (tests/data/torch214/README.md): 2.14's Inductor
    # times two steps 2.13's never logs, once per graph it compiles (the forward, the backward, the custom op's).
    old, new = torch213("upgrade_train.log.gz"), torch214("upgrade_train.log")
    assert (_torch_version(old), _torch_version(new)) == ("2.13.0+cpu", "2.14.1+cu130")
    steps = ("Scheduler.simple_overlap", "pass.post_grad_passes.respecialize_current_device")
    for step in steps:
        assert _text(new).count(f'"name": "{step}"') == 6  # begin and end of 3 graphs
        assert step not in _text(old)
    d = diff_runs(_facts(old), _facts(new))
    [added] = [c for c in d.changes if c.section == "environment" and c.title.startswith("compile steps")]
    assert added.kind == "added" and sorted(added.detail["compile_steps"]) == sorted(steps)
    assert added.title.startswith("compile steps torch 2.14.1+cu130 ran and 2.13.0+cpu did not: ")
    assert all(step in added.title for step in steps)
    # The same program under both: nothing else of it changed (frames, breaks, graphs, kernels, symbols, caches).
    assert {c.section for c in d.changes} == {"environment"}


def test_steps_are_compared_only_across_two_torch_versions():
    # cache_cold and cache_warm: one torch; the warm run skips most of Inductor's steps (its cache hit), no new pass.
    d = diff_runs(_facts(torch213("cache_cold.log")), _facts(torch213("cache_warm.log")))
    assert not [c for c in d.changes if c.title.startswith("compile steps")]


def test_compile_time_across_two_torch_versions_says_the_upgrade_may_be_part_of_it(capsys):
    # compile_error_lowering.py under 2.13 and 2.14: the same one compile, beyond the 3x and 1s that count as a change
    # (the README's compile_error_lowering row: one frame, [0/0]); the caches missed in both, so they explain nothing.
    old, new = torch213("compile_error_lowering.log"), torch214("compile_error_lowering.log")
    d = diff_runs(_facts(old), _facts(new))
    [slower] = [c for c in d.changes if c.section == "compile_time"]
    assert slower.detail["cause"].startswith(
        "A ran torch 2.13.0+cpu and B 2.14.1+cu130, whose compiles do other work (passes, defaults); the most in ")
    assert slower.detail["cause"].endswith(": part of it may be the upgrade, not the program; compare runs of one "
                                           "torch to measure the program's change alone")
    # check still fails (more compile time is more compile time), and says so in its own words.
    assert run_cli("check", "--json", new, "--baseline", old) == 1
    rules = {r["rule"]: r for r in json.loads(capsys.readouterr().out)["rules"]}
    assert not rules["baseline-compile-time"]["passed"]
    assert "; why: the baseline ran torch 2.13.0+cpu and the run 2.14.1+cu130, whose compiles" in \
        rules["baseline-compile-time"]["message"]


def test_a_warning_only_one_torch_version_printed_says_so():
    # programs/torch_warnings.py under 2.13 and 2.14 (tests/data/torch214/README.md): torch 2.14's CUDA build, on this
    # machine without CUDA, also warns from torch/utils/cpp_extension.py; the program is the same.
    old, new = torch213("torch_warnings.log.gz"), torch214("torch_warnings.log")
    assert "No CUDA runtime is found" in _text(new) and "No CUDA runtime is found" not in _text(old)
    [added] = [c for c in diff_runs(_facts(old), _facts(new)).changes if c.section == "warnings"]
    assert added.title == ("torch now warns: No CUDA runtime is found, using CUDA_HOME='/usr/local' (printed by torch "
                           "2.14.1+cu130 from torch/utils/cpp_extension.py, not by 2.13.0+cpu: the torch version alone "
                           "may explain it)")
    # Compared the other way (a downgrade), the same warning is gone, and still said to be 2.14's.
    [removed] = [c for c in diff_runs(_facts(new), _facts(old)).changes if c.section == "warnings"]
    assert removed.title == ("torch no longer warns: No CUDA runtime is found, using CUDA_HOME='/usr/local' (printed "
                             "by torch 2.14.1+cu130 from torch/utils/cpp_extension.py, not by 2.13.0+cpu: the torch "
                             "version alone may explain it)")


def test_what_one_torch_version_compiled_in_pythons_library_is_marked():
    # programs/compiled_autograd.py under 2.13 and 2.14 (tests/data/torch214/README.md, differs/): 2.14 has Dynamo
    # compile six functions of inspect.py (their compilation_metrics' co_name), three of which fail; 2.13 none.
    old = torch213("compiled_autograd.log.gz")
    new = torch213("compiled_autograd.log.gz").parents[2] / "torch214" / "differs" / "compiled_autograd.log.gz"
    in_inspect = set(re.findall(r'"co_name": "(\w+)", "co_filename": "[^"]*/lib/python3\.11/inspect\.py"', _text(new)))
    assert in_inspect == {"getattr_static", "_is_type", "_static_getmro", "_shadowed_dict", "_check_instance",
                          "_check_class"}
    assert "inspect.py" not in _text(old)
    d = diff_runs(_facts(old), _facts(new))
    marked = [c for c in d.changes if c.detail.get("python_library")]
    assert {c.frame.rsplit(" ", 1)[1] for c in marked if c.section == "frames"} == in_inspect
    # (its dynamo_graph_break_reason records: three breaks in inspect.py, at two lines, 1767 and 1772 twice)
    assert sorted(c.section for c in marked if c.section != "frames") == ["failures"] * 3 + ["graph_breaks"] * 2
    # Everything the diff lists beyond the versions is there, and each says where it is.
    assert {c.section for c in d.changes} - {"environment"} == {"frames", "graph_breaks", "failures"}
    assert all(c.title.endswith(" (Python's own library)") for c in d.changes if c.section != "environment")
    assert ("6 frames, 2 graph breaks, 3 failures in Python's own library only in B: torch calls such code from "
            "compiled code, and torch 2.14.1+cu130 did where 2.13.0+cpu did not, so the torch version, not the program, "
            "may explain them") in d.notes


def _first_config(path, field: str) -> dict:
    """The first compilation_metrics' config of one kind (dynamo_config, inductor_config: JSON in a string), raw."""
    for line in _text(path).splitlines():
        if '{"compilation_metrics": ' in line:
            raw = json.loads(line[line.index("{"):])["compilation_metrics"].get(field)
            if raw:
                return json.loads(raw)
    raise AssertionError(f"no {field} in {path}")


def test_an_option_torch_renamed_is_one_change_not_one_gone_and_one_new():
    # programs/upgrade_train.py under 2.13 and 2.14: 2.13's dynamo config has _shapes_spec, 2.14's _dynamic_shapes_spec
    # (each the only option of its version with those words), both unset. The diff listed one among 2.13's options 2.14
    # lacks and the other among 2.14's new ones.
    old, new = torch213("upgrade_train.log.gz"), torch214("upgrade_train.log")
    dynamo_a, dynamo_b = _first_config(old, "dynamo_config"), _first_config(new, "dynamo_config")
    assert dynamo_a["_shapes_spec"] is None and "_dynamic_shapes_spec" not in dynamo_a
    assert dynamo_b["_dynamic_shapes_spec"] is None and "_shapes_spec" not in dynamo_b
    # 2.13 has nvgemm_max_profiling_configs twice (inductor's and inductor.cuda's, 5 each), 2.14 once (10): the one
    # both have changed its value, and the one 2.14 dropped is gone, not renamed into an option 2.13 already had.
    inductor_a, inductor_b = _first_config(old, "inductor_config"), _first_config(new, "inductor_config")
    assert (inductor_a["nvgemm_max_profiling_configs"], inductor_a["cuda.nvgemm_max_profiling_configs"]) == (5, 5)
    assert inductor_b["nvgemm_max_profiling_configs"] == 10 and "cuda.nvgemm_max_profiling_configs" not in inductor_b
    d = diff_runs(_facts(old), _facts(new))
    config = [c for c in d.changes if c.section == "environment" and c.title.startswith("config")]
    [renamed] = [c for c in config if "renamed" in c.detail]
    assert renamed.title == ("config dynamo._shapes_spec renamed dynamo._dynamic_shapes_spec (torch 2.13.0+cpu → "
                             "2.14.1+cu130): (unset), as before")
    assert renamed.detail["renamed"] == {"a": "dynamo._shapes_spec", "b": "dynamo._dynamic_shapes_spec"}
    assert "config inductor.nvgemm_max_profiling_configs: 5 → 10" in [c.title for c in config]
    [gone] = [c for c in config if c.kind == "removed"]
    [added] = [c for c in config if c.kind == "added"]
    assert "dynamo._shapes_spec" not in gone.detail["version_options"]
    assert "dynamo._dynamic_shapes_spec" not in added.detail["version_options"]
    assert "inductor.cuda.nvgemm_max_profiling_configs" in gone.detail["version_options"]
    # A rename that kept its value is no value that differs: the versions' hedge counts only values.
    [versions] = [c for c in d.changes if c.title.startswith("torch: ")]
    assert "dynamo._dynamic_shapes_spec" not in versions.detail["config_defaults_may_differ"]


def test_an_option_with_two_candidate_names_is_not_paired():
    # The real 2.14 option beside a second name that would fit it as well: no rename is said where two could be.
    gone = {"dynamo._shapes_spec": "null"}
    both = {"dynamo._dynamic_shapes_spec": "null", "dynamo._static_shapes_spec": "null"}
    assert renamed_options(set(gone), set(both), gone, both) == {}
    assert renamed_options(set(gone), {"dynamo._dynamic_shapes_spec"}, gone, both) == {
        "dynamo._shapes_spec": "dynamo._dynamic_shapes_spec"}


def test_the_diff_page_counts_compile_ids_as_the_reports_cards_do(tmp_path):
    # programs/upgrade_train.py under 2.13 and 2.14, both the same: 7 compile ids (frame/compile/attempt in the
    # records' envelopes), 4 compilation_metrics. Frames 0, 1 and 2 restarted at their graph breaks: attempt 0 logged
    # no metrics, attempt 1 did (ops: 6 for frame 0, 0 for the resume functions 1 and 2, empty graphs); frame 3
    # compiled at attempt 0 (2 ops). The page said "compiles 4", a figure no report shows.
    for path in (torch213("upgrade_train.log.gz"), torch214("upgrade_train.log")):
        ids = set(re.findall(r'"frame_id": (\d+), "frame_compile_id": (\d+), "attempt": (\d+)', _text(path)))
        assert ids == {("0", "0", "0"), ("0", "0", "1"), ("1", "0", "0"), ("1", "0", "1"), ("2", "0", "0"),
                       ("2", "0", "1"), ("3", "0", "0")}
        metrics = [json.loads(line[line.index("{"):]) for line in _text(path).splitlines()
                   if '{"compilation_metrics": ' in line]
        assert [(m["frame_id"], m["attempt"], m["compilation_metrics"]["graph_op_count"]) for m in metrics] == [
            (0, 1, 6), (1, 1, 0), (2, 1, 0), (3, 0, 2)]
    out = tmp_path / "page"
    assert run_cli("diff", torch213("upgrade_train.log.gz"), torch214("upgrade_train.log"), "-o", out,
                   "--no-browser") == 1
    page = (out / "index.html").read_text()
    cells = re.findall(r'<td class="num">(\d+)<span class="muted outcomes">([^<]*)</span></td>', page)
    words = "2 compiled (1 after a restart), 3 restarted attempts, 2 empty graph"
    assert cells == [("7", words), ("7", words)] and ">compile ids</th>" in page
    # The same figures as each side's report's cards.
    for side in "ab":
        cards = re.findall(r'<div class="n[^"]*">(\d+)</div><div class="l">([^<]*)</div>',
                           (out / side / "index.html").read_text())
        assert ("7", "compile ids") in cards
        assert ", ".join(f"{n} {label}" for n, label in cards if label in words) == words


def _events(path) -> list[tuple[str, str, float]]:
    """The chromium events' (ph, name, ts) in the log's order, raw: each payload follows its chromium_event line."""
    found = re.findall(r'\{"chromium_event": .*?\n\t\{\n\t"name": "([^"]+)",\n\t"ts": ([\d.]+),.*?\n\t"ph": "(\w)"',
                       _text(path), re.S)
    return [(ph, name, float(ts)) for name, ts, ph in found]


def test_hashing_triton_is_not_counted_as_a_cache_lookup():
    # compile_error_lowering.py under 2.13 and 2.14: torch times CacheBase.get_system.triton_key, hashing the installed
    # Triton for its caches' keys, 113 µs under 2.13's CPU build and 0.51 s under 2.14's CUDA build (its B and E), inside
    # backend_compile (the event open around it). It was "Cache lookup & load" (CacheBase.*), which then read as
    # 134 ms -> 737 ms, a cache gone slower, where no lookup changed.
    old, new = torch213("compile_error_lowering.log"), torch214("compile_error_lowering.log")
    took = {}
    for path in (old, new):
        open_events: list[str] = []
        for ph, name, ts in _events(path):
            if name == "CacheBase.get_system.triton_key" and ph == "B":
                assert open_events[-1] == "backend_compile"
                took[path] = -ts
            elif name == "CacheBase.get_system.triton_key" and ph == "E":
                took[path] += ts
            if ph == "B":
                open_events.append(name)
            elif ph == "E":
                open_events.remove(name)
    assert (round(took[old]), round(took[new])) == (113, 511844)  # µs
    a, b = _facts(old), _facts(new)
    # No cache lookup is timed (triton_key is the only CacheBase. event); hashing torch (inductor_codecache_torch_key)
    # is the backend's too.
    assert {name for _, name, _ in _events(new) if name.startswith(("CacheBase.", "FxGraphCache.", "AOTAutogradCache."))
            } == {"CacheBase.get_system.triton_key"}
    assert "cache" not in b.phases  # the 0.51 s is not in it
    # Compared with a threshold it passes (0.3 s, 3x): the 0.51 s is the backend's, and the compile time's change
    # still says the torch versions may explain it.
    [slower] = [c for c in diff_runs(a, b, TimeThreshold(0.3, 3.0)).changes if c.section == "compile_time"]
    phases = {p["label"]: p for p in slower.detail["phases"]}
    assert "Cache lookup & load" not in phases
    assert phases["Backend compiler"]["delta_s"] > 0.51
    assert slower.detail["cause"].startswith("A ran torch 2.13.0+cpu and B 2.14.1+cu130, whose compiles do other work")

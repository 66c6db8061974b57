"""sources.json: every FX node with a user stack lands on its file and line; breaks, eager lines, resumes.

The expected lines are read from the programs that made the logs (tests/data/torch213/programs and the
gpu-torch211 scripts), never from compilescope's own output.
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
import shutil
from pathlib import Path
from typing import Callable

import pytest

from compilescope.analyses.installed_guards import GUARDS_ARTIFACT
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.analyses.sources.analysis import analyze_sources
from compilescope.analyses.sources.file_text import is_user_source
from compilescope.ingest.reader import read_trace

from ..analysis_files import read_sources
from ..conftest import REPO, TORCH213, cuda211, report, run_cli, skip_or_fail, torch213

PROGRAMS = REPO / "tests" / "data" / "torch213" / "programs"
GPU = REPO.parent / "shared" / "traces" / "gpu-torch211"
GPU_SCENARIOS = ["autotune_cudagraphs", "flex_sdpa_model", "gpt2_train", "profile_compiled"]
# An independent reading of the graph dumps: the compile id of the envelope and the `# File:` comments under it.
_ENVELOPE = re.compile(r'^V\d{4} [^\]]*\] \{"dynamo_output_graph".*"frame_id": (\d+), "frame_compile_id": (\d+)')
_COMMENT = re.compile(r"^\t\s*# File: (.+?):(\d+) in [^,]+?(?:, code: (.*))?$")


def fx_comments(log: Path) -> list[tuple[str, str, int, str | None]]:
    """(compile id, file, line, quoted code) of every FX node comment in the log's dynamo_output_graph dumps."""
    found, current = [], None
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("V"):
                m = _ENVELOPE.match(line)
                current = f"[{m[1]}/{m[2]}]" if m else None
            elif current and (c := _COMMENT.match(line)):
                found.append((current, c[1], int(c[2]), c[3]))
    return found


def sources_json(log: Path, tmp_path: Path) -> dict:
    out = tmp_path / "report"
    assert run_cli(log, "-o", out, "--no-browser", "--overwrite") == 0
    return json.loads((out / "sources.json").read_text())


def assert_every_node_lands(log: Path, doc: dict, program_for) -> int:
    files = {f["path"]: f for f in doc["files"]}
    checked = 0
    for cid, path, line, code in fx_comments(log):
        if not is_user_source(path):
            continue
        entry = files[path]["lines"][str(line)]
        assert cid in entry["graphs"], (path, line, cid)
        program = program_for(path)
        if program is not None and code is not None:
            # The line the node points at, in the program that made the log, is the code torch quoted.
            assert program.read_text().splitlines()[line - 1].strip() == code.strip()
            text = files[path]["text"].get(str(line))
            assert text is not None and text.strip() == code.strip()
        checked += 1
    return checked


@pytest.mark.parametrize("name", TORCH213)
def test_torch213_every_fx_node_lands_on_its_line(name, tmp_path):
    log = torch213(name)
    doc = sources_json(log, tmp_path)
    checked = assert_every_node_lands(log, doc, lambda p: PROGRAMS / os.path.basename(p))
    if name in ("graph_breaks.log", "source_view.log", "provenance.log", "recompiles.log"):
        assert checked > 0


@pytest.mark.parametrize("scenario", GPU_SCENARIOS)
def test_gpu_torch211_every_fx_node_lands_on_its_line(scenario, tmp_path):
    folder = GPU / scenario
    if not folder.is_dir():
        skip_or_fail("../shared/traces/gpu-torch211 not available")
    log = next(folder.glob("*.log"))
    doc = sources_json(log, tmp_path)
    script = folder / "script.py"

    def program_for(path: str):
        return script if os.path.basename(path) == f"{scenario}.py" else None

    assert assert_every_node_lands(log, doc, program_for) > 0
    # The paths are those of the machine that made the log: the view is rebuilt from the quotes, and says so.
    user = doc["files"]
    assert user and all(f["origin"] == "log" and "not on this machine" in f["origin_note"] for f in user)


def _lines(doc: dict, basename: str) -> dict:
    (found,) = [f for f in doc["files"] if os.path.basename(f["path"]) == basename]
    return found


def test_source_view_lines_exact(tmp_path):
    """Branch, print, .item() and an inlined nested function, each on its exact line of source_view.py."""
    doc = sources_json(torch213("source_view.log"), tmp_path)
    f = _lines(doc, "source_view.py")
    lines = f["lines"]
    # the nested function `inner` is inlined: its node lands on its own line, in the first graph
    assert list(lines["15"]["graphs"]) == ["[0/0]"] and f["text"]["15"].strip() == "return u * k + 1"
    assert list(lines["17"]["graphs"]) == ["[0/0]"]
    # the data-dependent branch: captured (the condition) then broken; resume function at 22 takes over
    assert [b["reason"] for b in lines["22"]["graph_breaks"]] == ["Data-dependent branching"]
    assert lines["22"]["graph_breaks"][0]["resume_functions"] == ["torch_dynamo_resume_in_f_at_22"]
    assert list(lines["23"]["graphs"]) == ["[1/0]"]
    # print: a break, the line runs eagerly, no graph
    assert [b["reason"] for b in lines["24"]["graph_breaks"]] == ["Failed to trace builtin operator"]
    assert "graphs" not in lines["24"] and lines["24"]["eager"] == [1]
    # .item(): break in [2/0], the rest in [3/0]
    assert lines["25"]["graph_breaks"][0]["reason"].startswith("Unsupported Tensor.item()")
    assert list(lines["26"]["graphs"]) == ["[3/0]"]
    assert [fr["function"] for fr in lines["20"]["frames"]] == ["f"]
    eager = {b["reason"][:20]: [e["line"] for e in b["eager_lines"]] for b in doc["graph_breaks"]}
    assert eager == {"Data-dependent branc": [22], "Failed to trace buil": [24], "Unsupported Tensor.i": [25]}


def test_graph_breaks_print_in_helper_runs_the_calls_eagerly(tmp_path):
    """The print is in helper log_step (line 18), called at lines 27 and 30 of f: all three ran eagerly."""
    doc = sources_json(torch213("graph_breaks.log"), tmp_path)
    (site,) = [b for b in doc["graph_breaks"] if b["reason"] == "Failed to trace builtin operator"]
    assert sorted(e["line"] for e in site["eager_lines"]) == [18, 27, 30]
    assert site["compile_ids"] == ["[1/0]", "[3/0]"]
    assert sorted(site["resume_functions"]) == ["torch_dynamo_resume_in_f_at_27", "torch_dynamo_resume_in_f_at_30"]


def test_recompile_guards_and_symbols_on_their_lines(tmp_path):
    doc = sources_json(torch213("recompiles.log"), tmp_path)
    lines = _lines(doc, "recompiles.py")["lines"]
    assert [g["guard"] for g in lines["29"]["guards"] if g.get("recompile") == "[1/1]"] == ["n == 1"]
    # the guards installed because of line 29 (from the guard tree, whose paths torch clips at the front)
    installed = [g["guard"] for g in lines["29"]["guards"] if g.get("installed") == "[1/0]"]
    assert "EQUALS_MATCH: L['n'] == 1" in installed
    doc = sources_json(torch213("dynamic_shapes.log"), tmp_path / "d")
    lines = _lines(doc, "dynamic_shapes.py")["lines"]
    assert any(s["kind"] == "specialized" and s["symbol"] == "s77" for s in lines["25"]["symbols"])
    # the shape guard the branch on line 25 added (the log's guard_added event), on that line
    assert {"kind": "guard", "compile_id": "[0/1]", "expr": "Ne(s77, 5)"} in lines["25"]["symbols"]


def test_a_recompile_restarted_at_the_break_is_named_as_its_compilation(tmp_path):
    """train_break_recompile.py's forward recompiles for batch 48 (line 21's size guard) and restarts at its print:
    the attempts [0/0_1] and [0/1_1] are one compilation each, [0/0] and [0/1], as the line's other notes name them
    (a page links compilations); the symbol s77 that compilation made of x's batch is noted once, not once an attempt."""
    doc = sources_json(cuda211("train_break_recompile.log.gz"), tmp_path)
    lines = _lines(doc, "train_break_recompile.py")["lines"]
    failed = [(g["recompile"], g["failed_in"]) for g in lines["21"]["guards"] if "recompile" in g]
    assert failed == [("[0/1]", "[0/0]")]
    s77 = [s for s in lines["21"]["symbols"] if s.get("symbol") == "s77"]
    assert [s["compile_id"] for s in s77] == ["[0/1]"]
    named = {g.get("recompile") or g.get("installed") for n in lines.values() for g in n.get("guards", [])}
    named |= {s["compile_id"] for n in lines.values() for s in n.get("symbols", [])}
    assert not [c for c in named if "_" in c]


def test_a_line_a_graph_broke_at_is_not_badged_compiled(tmp_path):
    """graph_breaks.py's f (def at line 21) compiles; line 27 calls log_step, whose print breaks the graph, so 27 ran
    eagerly and only the rest of f after it compiled (its resume function starts at 27). The badge of 27 must not
    read 'compiled', as 21's does, and its notes say once that the rest of f was compiled after it."""
    out = tmp_path / "out"
    report(torch213("graph_breaks.log"), out)
    (page,) = (out / "sources").glob("graph_breaks.py_*.html")
    text = page.read_text()

    def row(n: int) -> str:
        return re.search(rf'<div class="src-line[^"]*" id="L{n}".*?</ul>', text, re.S)[0]

    def badges(n: int) -> list[str]:
        return [html.unescape(re.sub(r"<[^>]+>", "", b)) for b in re.findall(r'<span class="b [^"]*"[^>]*>(.*?)</span>', row(n))]

    assert "compiled: [0/0]" in badges(21)
    assert not [b for b in badges(27) if b.startswith("compiled")]
    assert "rest compiled: [2/0]" in badges(27) and "eager" in badges(27)
    notes = html.unescape(re.sub(r"<[^>]+>", "", row(27)))
    assert notes.count("torch_dynamo_resume_in_f_at_27") == 1
    assert "the rest of f" in notes


def test_provenance_kernels_of_the_forward_and_the_backward(tmp_path):
    doc = sources_json(torch213("provenance.log"), tmp_path)
    line = _lines(doc, "provenance.py")["lines"]["24"]
    # provenance.log's two kernel stack traces: each kernel's stack is provenance.py line 24 (`torch.relu(self.lin(x))`);
    # the first code's AOT ID is 0_forward, the second's 0_backward (torch 2.13 restarts the handles at 1).
    assert _kernels_by_graph(line, "[0/0]") == {
        "forward": ["extern_kernels.addmm:1", "cpp_fused_relu_threshold_backward_0:2"],
        "backward": ["cpp_fused_threshold_backward_0:1", "extern_kernels.mm:2", "cpp_fused_sum_1:3"]}


def _kernels_by_graph(line: dict, compile_id: str) -> dict[str | None, list[str]]:
    found: dict[str | None, list[str]] = {}
    for k in line.get("kernels", []):
        if k["compile_id"] == compile_id:
            found.setdefault(k["graph"], []).append(k["kernel"])
    return found


def test_a_training_line_names_the_graph_that_calls_each_kernel(tmp_path):
    """train_break_recompile.py line 21 (norm, up, gelu) and line 23 (down, add) each feed a forward and a backward
    graph. The kernels are those whose stack in the kernel stack traces is that line and whose `# [Provenance debug
    handles]` comment is in the graph's output code; the graph is the one its code's AOT ID names (`0_forward`,
    `0_backward` for [0/0]; `1_forward`, `1_backward` for [1/0], the resume function)."""
    lines = _lines(sources_json(cuda211("train_break_recompile.log.gz"), tmp_path), "train_break_recompile.py")["lines"]
    assert _kernels_by_graph(lines["21"], "[0/0]") == {
        "forward": ["triton_per_fused_native_layer_norm_0:1", "extern_kernels.addmm:2", "triton_poi_fused_gelu_1:3"],
        "backward": ["triton_per_fused_gelu_gelu_backward_sum_0:4", "extern_kernels.mm:5",
                     "triton_per_fused_native_layer_norm_native_layer_norm_backward_1:6", "extern_kernels.mm:7"]}
    assert _kernels_by_graph(lines["23"], "[1/0]") == {
        "forward": ["extern_kernels.mm:1", "triton_poi_fused_add_addmm_mul_0:2"],
        "backward": ["triton_per_fused_mul_sum_0:1", "extern_kernels.mm:2", "extern_kernels.mm:3"]}
    # [0/1] (batch 48) recompiled the forward: its backward (2_backward) calls the reduction kernels, "red", not "per".
    assert _kernels_by_graph(lines["21"], "[0/1]")["backward"] == [
        "triton_red_fused_gelu_gelu_backward_sum_0:4", "extern_kernels.mm:5",
        "triton_red_fused_native_layer_norm_native_layer_norm_backward_1:6", "extern_kernels.mm:7"]


def test_a_kernel_an_earlier_graph_left_in_the_stack_traces_stays_with_that_graph(tmp_path):
    """[0/0]'s backward stack traces also list [1/0]'s backward kernels of line 23 (torch 2.11 keeps them between
    graphs), which [0/0]'s code never calls; and [0/1]'s backward its forward's three. Line 23 names only the
    compiles of the resume function, [1/0] and [1/1]; [0/1]'s backward on line 21 only the four kernels its code
    calls (above)."""
    lines = _lines(sources_json(cuda211("train_break_recompile.log.gz"), tmp_path), "train_break_recompile.py")["lines"]
    assert {k["compile_id"] for k in lines["23"]["kernels"]} == {"[1/0]", "[1/1]"}
    assert len(_kernels_by_graph(lines["21"], "[0/1]")["backward"]) == 4


def _source_view_here(tmp_path) -> tuple[Path, Callable[[str, Path], Path]]:
    """source_view.py copied under tmp_path, and a maker of the real log with its path moved to a given one."""
    text = torch213("source_view.log").read_text()
    recorded = re.search(r"# File: (\S+source_view\.py):", text)[1]
    here = tmp_path / "src" / "source_view.py"
    here.parent.mkdir()
    shutil.copy(PROGRAMS / "source_view.py", here)

    def moved(name: str, path: Path) -> Path:
        log = tmp_path / f"{name}.log"
        log.write_text(text.replace(recorded, str(path)))
        return log

    return here, moved


def test_disk_text_only_when_it_agrees(tmp_path):
    """A log whose paths exist but whose content differs is rebuilt from its quotes, with gaps."""
    here, moved = _source_view_here(tmp_path)
    log = moved("moved", here)
    with read_trace(str(log)) as trace:
        f = read_sources(trace).file(str(here))
        assert f.origin == "disk" and f.text == dict(enumerate((PROGRAMS / "source_view.py").read_text().splitlines(), 1))
    here.write_text(here.read_text().replace("return y * m", "return y * m * 2"))
    with read_trace(str(log)) as trace:
        f = read_sources(trace).file(str(here))
    assert f.origin == "log" and "differs" in f.note
    assert f.text[26] == "return y * m" and 1 not in f.text  # quoted line kept; unquoted ones are gaps


def _origin_sentence(page: Path) -> str:
    """The text of a source page's note on where its lines come from."""
    found = re.search(r'<p class="src-origin[^"]*" id="src-origin">(.*?)</p>', page.read_text(), re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", found[1])).split())


def test_origin_says_once_where_the_text_comes_from(tmp_path):
    """The page says in one sentence that the file was rebuilt and why, or where it was read, each thing once."""
    here, moved = _source_view_here(tmp_path)
    sentences = {}
    for name, path in (("gone", tmp_path / "gone" / "source_view.py"), ("here", here)):
        report(moved(name, path), tmp_path / name)
        (page,) = (tmp_path / name / "sources").glob("source_view.py_*.html")
        sentences[name] = _origin_sentence(page)
    gone = sentences["gone"]
    assert gone.lower().count("rebuilt from the lines the log quotes") == 1, gone
    assert gone.count("not on this machine") == 1 and gone.count(".") == 1 and gone.endswith("."), gone
    assert "rebuilt" not in sentences["here"].lower(), sentences["here"]
    assert sentences["here"].count("read from") == 1 and sentences["here"].count(str(here)) == 1, sentences["here"]


def test_summary_names_the_lines_each_break_ran_eagerly(capsys):
    assert run_cli("summary", torch213("graph_breaks.log"), "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    eager = {b["reason"]: [(os.path.basename(e["filename"]), e["line"], e["code"]) for e in b["eager_lines"]]
             for b in doc["graph_breaks"]["breaks"]}
    assert eager["Data-dependent branching"] == [
        ("graph_breaks.py", 23, "if y.sum() > 0:  # graph break 1: data-dependent branch")]
    assert [(f, n) for f, n, _ in eager["Failed to trace builtin operator"]] == [
        ("graph_breaks.py", 27), ("graph_breaks.py", 18), ("graph_breaks.py", 30)]
    assert run_cli("summary", torch213("graph_breaks.log")) == 0
    assert "ran eagerly: graph_breaks.py:27, graph_breaks.py:18, graph_breaks.py:30" in " ".join(capsys.readouterr().out.split())


def test_hostile_quotes_are_escaped_and_other_files_never_read(tmp_path):
    """A log is untrusted: quoted code reaches HTML escaped, and only .py files that agree are read from disk."""
    text = torch213("source_view.log").read_text()
    recorded = re.search(r"# File: (\S+source_view\.py):", text)[1]
    text = text.replace(recorded, "/etc/passwd").replace("code: y = y.cos()", "code: <script>alert(1)</script>")
    log = tmp_path / "hostile.log"
    log.write_text(text)
    out = tmp_path / "report"
    assert run_cli(log, "-o", out, "--no-browser", "--overwrite") == 0
    doc = json.loads((out / "sources.json").read_text())
    (f,) = [f for f in doc["files"] if f["path"] == "/etc/passwd"]
    assert f["origin"] == "log" and "not a .py file" in f["origin_note"]
    assert f["text"]["23"] == "<script>alert(1)</script>"
    page = (out / f["page"]).read_text()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not any("root:" in t for t in f["text"].values())
    assert all(p.resolve().is_relative_to(out.resolve()) for p in out.rglob("*"))


def test_installed_guards_are_read_one_payload_at_a_time(monkeypatch):
    """Each compile's guards text (tens of KB on real logs) is read when it is parsed, never all of them at
    once: memory stays bounded by the largest payload, not by the number of compiles."""
    alive, most = [0], [0]

    class Held(str):
        def __del__(self):
            alive[0] -= 1

    with read_trace(str(torch213("recompiles.log"))) as trace:
        guards = {id(a.payload) for c in trace.compiles.values() for a in c.artifacts if a.name == GUARDS_ARTIFACT}
        read = trace.payload_text

        def counted(ref):
            if id(ref) not in guards:
                return read(ref)
            alive[0] += 1
            most[0] = max(most[0], alive[0])
            return Held(read(ref))

        monkeypatch.setattr(trace, "payload_text", counted)
        found = analyze_sources(trace, provenance=analyze_provenance(trace))
    assert len(guards) >= 3 and most[0] == 1
    assert any(g.get("installed") for f in found.files for n in f.notes.values() for g in n.guards)


def test_a_line_only_a_guard_quotes_is_shown():
    # source_view.py:21, `y = scale(x, n)`, is quoted by no graph and no stack: only by the comment of the guard on
    # `scale` it installed (`# y = scale(x, n)  # .../source_view.py:21 in f`). A rebuilt file shows it all the same.
    program = (PROGRAMS / "source_view.py").read_text().splitlines()
    with read_trace(str(torch213("source_view.log"))) as trace:
        (f,) = [f for f in read_sources(trace).files if f.path.endswith("source_view.py")]
    assert f.origin == "log"
    assert f.text[21] == program[20].strip() == "y = scale(x, n)"
    assert all(t == program[n - 1].strip() for n, t in f.text.items())  # every quote is the file's


def test_two_compiled_functions_of_one_name_are_told_apart_by_their_first_line():
    # same_cause.py (rebuilt from the log: it was recorded elsewhere) has two methods named `forward`, both compiled:
    # compilation_metrics gives co_firstlineno 12 (Scale.forward) and 17 (Shift.forward). Told apart by name only,
    # the function from line 12 ran on into the one from line 17, as no quoted `def` or other name stopped it.
    log = torch213("same_cause.log")
    firsts = set(re.findall(r'"co_name": "forward", "co_filename": "[^"]*same_cause\.py", "co_firstlineno": (\d+)',
                            log.read_text()))
    assert firsts == {"12", "17"}
    program = ast.parse((PROGRAMS / "same_cause.py").read_text())
    spans = sorted((node.lineno, node.end_lineno) for node in ast.walk(program)
                   if isinstance(node, ast.FunctionDef) and node.name == "forward")
    assert [first for first, _ in spans] == [12, 17]
    with read_trace(str(log)) as trace:
        (f,) = [f for f in read_sources(trace).files if f.path.endswith("same_cause.py")]
    assert f.origin == "log"
    for first, last in spans:
        shown = f.function_lines(first, "forward")
        assert shown[0][0] == first and shown[-1][1] == last, (first, shown)


def test_a_lines_frames_breaks_and_recompiles_as_the_page_says_them():
    """graph_breaks.py: f (def at line 21) is compiled as [0/0]; after each of its breaks a resume function takes over
    at the line the break is on (23: the branch, 27 and 30: log_step's print, 28: .item()), the rest of f, not a
    frame that starts there. The print breaks at line 18, inside log_step: lines 27 and 30, its calls, ran eagerly
    because of it, and are the only lines whose eager note is not also their own graph break."""
    trace = read_trace(torch213("graph_breaks.log"))
    found = read_sources(trace)
    (f,) = [f for f in found.files if f.path.endswith("graph_breaks.py")]
    started = {n: [(fr["function"], fr["compile_id"]) for fr in notes.started_frames] for n, notes in f.notes.items()}
    assert {n: frames for n, frames in started.items() if frames} == {21: [("f", "[0/0]")]}
    resumed = {n: [fr["function"] for fr in notes.resumed_frames] for n, notes in f.notes.items() if notes.resumed_frames}
    assert resumed == {n: [f"torch_dynamo_resume_in_f_at_{n}"] for n in (23, 27, 28, 30)}
    # Each resume function is compiled as the frame after the one that broke: frame ids 1 to 4, in line order.
    assert found.resume_compile_ids == {f"torch_dynamo_resume_in_f_at_{n}": [f"[{i}/0]"]
                                        for i, n in enumerate((23, 27, 28, 30), start=1)}
    eager_only = {n: [found.graph_breaks[i].reason for i in notes.eager_only] for n, notes in f.notes.items()
                  if notes.eager_only}
    assert eager_only == {27: ["Failed to trace builtin operator"], 30: ["Failed to trace builtin operator"]}
    assert {n for n, notes in f.notes.items() if notes.eager and not notes.eager_only} == {18, 23, 28}


def test_a_lines_resumes_are_named_by_the_analysis_as_the_rest_of_f():
    """graph_breaks.py (torch 2.13): the print in log_step (line 18) breaks f's graph at its calls on lines 27 and 30,
    so the resume functions after that break start on those lines, not on 18: the break's note on line 18 names them;
    the branch (23) and .item() (28) break where their own resume functions start, which their lines' own notes say.
    The log's compilation_metrics name [1/0]..[4/0]'s functions torch_dynamo_resume_in_f_at_23, _27, _28 and _30."""
    log = torch213("graph_breaks.log")
    named = dict(re.findall(r'"compilation_metrics": \{"compile_id": "(\d+/0)", "frame_key": "\d+", "co_name": "(torch_dynamo_resume_in_\w+)"',
                            log.read_text()))
    assert named == {"1/0": "torch_dynamo_resume_in_f_at_23", "2/0": "torch_dynamo_resume_in_f_at_27",
                     "3/0": "torch_dynamo_resume_in_f_at_28", "4/0": "torch_dynamo_resume_in_f_at_30"}
    program = (PROGRAMS / "graph_breaks.py").read_text().splitlines()
    assert program[17].strip() == "print(msg)" and all("log_step(" in program[n - 1] for n in (27, 30))
    with read_trace(str(log)) as trace:
        (f,) = [f for f in read_sources(trace).files if f.path.endswith("graph_breaks.py")]
    breaks = {n: [(b["reason"], elsewhere) for b, elsewhere in notes.break_resumes] for n, notes in f.notes.items()
              if notes.break_resumes}
    assert breaks == {18: [("Failed to trace builtin operator", ["torch_dynamo_resume_in_f_at_27", "torch_dynamo_resume_in_f_at_30"])],
                      23: [("Data-dependent branching", [])],
                      28: [("Unsupported Tensor.item() call with capture_scalar_outputs=False", [])]}
    notes = {n: [(r.function, r.resumed, r.compile_ids) for r in line.resume_notes] for n, line in f.notes.items()
             if line.resume_notes}
    assert notes == {int(name.rsplit("_", 1)[1]): [(name, "f", [f"[{cid}]"])] for cid, name in named.items()}
    assert {n: line.rest_of for n, line in f.notes.items() if line.rest_of} == {23: "f", 27: "f", 28: "f", 30: "f"}
    assert f.notes[21].rest_of is None  # f itself starts there


def test_a_lines_recompile_guards_are_the_failed_guards_torch_logged():
    """recompiles.py line 25 is g's body: its guards on x failed on the size (4 then 8), the dtype and requires_grad
    calls of main, each recompiling g ([0/1], [0/2], [0/3]); the guards it installed are not among them. Each
    recompile lists every cache entry it tried (recompile_reasons, newest first): [0/2] failed [0/1]'s and [0/0]'s
    dtype checks, [0/3] [0/2]'s requires_grad check and the two dtype checks; each is on the line."""
    trace = read_trace(torch213("recompiles.log"))
    (f,) = [f for f in read_sources(trace).files if f.path.endswith("recompiles.py")]
    notes = f.notes[25]
    dtype = "tensor 'x' dtype mismatch. expected Float, actual Double"
    assert [(g["recompile"], g["failed_in"], g["guard"]) for g in notes.recompile_guards] == [
        ("[0/1]", "[0/0]", "tensor 'x' size mismatch at index 0. expected 4, actual 8"),
        ("[0/2]", "[0/1]", dtype), ("[0/2]", "[0/0]", dtype),
        ("[0/3]", "[0/2]", "tensor 'x' requires_grad mismatch. expected requires_grad=0"),
        ("[0/3]", "[0/1]", dtype), ("[0/3]", "[0/0]", dtype),
    ]
    assert len(notes.recompile_guards) < len(notes.guards) and notes.recompiled == ["[0/1]", "[0/2]", "[0/3]"]
    # The page's notes: one per recompile, the dtype check both entries failed said once with both of their ids.
    assert [(r.recompile, [(c.guard, c.failed_in) for c in r.checks], r.failed) for r in notes.recompile_notes] == [
        ("[0/1]", [("tensor 'x' size mismatch at index 0. expected 4, actual 8", ["[0/0]"])], None),
        ("[0/2]", [(dtype, ["[0/0]", "[0/1]"])], None),
        ("[0/3]", [("tensor 'x' requires_grad mismatch. expected requires_grad=0", ["[0/2]"]),
                   (dtype, ["[0/0]", "[0/1]"])], None),
    ]


def test_each_noted_line_makes_its_notes_once(monkeypatch):
    """note_sources asks for a line's notes once per thing it puts there (GPT-2's generate: ~3,400 asks for 136
    lines): each ask made an empty LineNotes, of twenty lists and dicts, that the line already had and dropped it.
    Counted, not timed: a LineNotes is made once a noted line."""
    from compilescope.analyses.sources import LineNotes
    from compilescope.analyses.sources import analysis

    made = [0]

    class Counted(LineNotes):
        def __init__(self, *args, **kwargs):
            made[0] += 1
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(analysis, "LineNotes", Counted)
    with read_trace(str(cuda211("hf_gpt2_generate.log.gz"))) as trace:
        found = analyze_sources(trace, provenance=analyze_provenance(trace))
    noted = sum(len(f.notes) for f in found.files)
    assert noted > 100 and made[0] == noted


def test_a_quote_looks_up_its_function_only_where_it_names_one(monkeypatch):
    """Quotes.add runs once per note and stack frame (GPT-2's generate: 3,404 times, 30 naming a function): each
    looked a resume function's name up in None all the same. Counted, not timed: a lookup per quote naming one."""
    from compilescope.analyses.sources import file_text

    named, looked = [0], [0]
    add, resumed = file_text.Quotes.add, file_text.resumed_function

    def counted_add(self, path, line, code, function=None):
        named[0] += bool(function)
        add(self, path, line, code, function)

    def counted_resumed(code_name):
        looked[0] += 1
        return resumed(code_name)

    monkeypatch.setattr(file_text.Quotes, "add", counted_add)
    monkeypatch.setattr(file_text, "resumed_function", counted_resumed)
    with read_trace(str(cuda211("hf_gpt2_generate.log.gz"))) as trace:
        found = analyze_sources(trace, provenance=analyze_provenance(trace))
    assert found.files and 0 < named[0] == looked[0]


@pytest.mark.parametrize("log", ["graph_breaks.log", "python_features.log.gz"])
def test_the_resume_functions_are_read_once_and_looked_up_by_line(monkeypatch, log):
    """Each break's statements found their resume functions by walking every resume function of the log (breaks x
    statements x resume functions: quadratic on a model with a break per layer), and note_sources read the resume
    functions twice. Counted, not timed: resume_frames once, its result walked twice (indexed, then noted)."""
    from compilescope.analyses.sources import analysis, break_sites

    calls, walks = [0], [0]
    resume_frames = break_sites.resume_frames

    class Walked(dict):
        def __iter__(self):
            walks[0] += 1
            return super().__iter__()

        def items(self):
            walks[0] += 1
            return super().items()

    def counted(trace):
        calls[0] += 1
        return Walked(resume_frames(trace))

    monkeypatch.setattr(analysis, "resume_frames", counted, raising=False)  # (where note_sources reads them)
    monkeypatch.setattr(break_sites, "resume_frames", counted)
    with read_trace(str(torch213(log))) as trace:
        found = analyze_sources(trace, provenance=analyze_provenance(trace))
    assert any(site.resume_functions for site in found.graph_breaks) and len(found.graph_breaks) >= 2
    assert calls[0] == 1 and walks[0] == 2

"""Deploying with AOTInductor on the GPU (tests/data/cuda_torch211 programs/aoti_deploy_cuda.py, H200, torch 2.11):
the CUDA twin of test_aoti_deploy.py. Both runs compiled the package and then died of SIGSEGV inside
aoti_load_package, as plain python did (aoti_deploy_cuda_plain_python.output.txt). Where the package build's time
went, and what the crash in loading it is said to be. Expected values are read from the raw log and the program."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from compilescope.analyses.aoti import aoti
from compilescope.analyses.compile_time import compile_times
from compilescope.analyses.crash import crashes
from compilescope.analyses.insights import ERROR
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.wording import format_seconds

from ..conftest import cuda211, line_holding
from ..tracelog import raw_records

DYNAMIC = "aoti_deploy_cuda_dynamic.log.gz"
STATIC = "aoti_deploy_cuda_static.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "cuda_torch211" / "programs" / "aoti_deploy_cuda.py"


def _spans(log: str) -> dict[str, list[tuple[float, float]]]:
    """Each chromium event's (start, end) in seconds by name, read without compilescope (one track: B/E nest)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    opened: list[tuple[str, float]] = []
    for envelope, payload in raw_records(cuda211(log)):
        if "chromium_event" not in envelope:
            continue
        event = json.loads(payload)
        if event["ph"] == "B":
            opened.append((event["name"], event["ts"] / 1e6))
        elif event["ph"] == "E":
            name, start = opened.pop()
            assert name == event["name"]
            spans.setdefault(name, []).append((start, event["ts"] / 1e6))
    return spans


def test_the_package_build_is_its_own_phase_not_lowering_and_codegen():
    # The raw log: AotCodeCompiler.compile (under GraphLowering.compile_to_fn) holds 15 compile_file runs of the
    # dynamic package's 15, and most of its time is between them; GraphLowering's own run and codegen are short.
    spans = _spans(DYNAMIC)
    ((b_start, b_end),) = spans["AotCodeCompiler.compile"]
    runs = [(b, e) for b, e in spans["compile_file"] if b_start <= b and e <= b_end]
    assert len(runs) == 15 == len(spans["compile_file"])
    untimed = (b_end - b_start) - sum(e - b for b, e in runs)
    assert untimed > (b_end - b_start) / 2
    lowering = sum(e - b for name in ("GraphLowering.run", "GraphLowering.codegen") for b, e in spans[name])

    trace = read_trace(cuda211(DYNAMIC))
    times = compile_times(trace)
    assert times.phases[0].phase == "aoti_package" and times.phases[0].label == "AOTInductor package build"
    assert abs(times.phases[0].seconds - untimed) < 1e-3
    codegen = next(p for p in times.phases if p.phase == "inductor_codegen")
    assert codegen.seconds < lowering  # (was charged the build's untimed time: 72% of the whole)

    build = aoti(trace).build
    assert build is not None and build.compiles == 15
    assert abs(build.seconds - (b_end - b_start)) < 1e-6 and abs(build.untimed_s - untimed) < 1e-6
    (timed,) = [f for f in insights(trace).findings if f.title.startswith("compiling with AOTInductor took ")]
    assert timed.detail.startswith("AOTInductor package build: ")
    assert (f"building the package (AotCodeCompiler.compile) took {format_seconds(b_end - b_start)}: 15 compiler "
            f"runs {format_seconds(b_end - b_start - untimed)}, the other {format_seconds(untimed)} between them"
            ) in timed.detail


def test_a_build_that_is_nearly_all_compiler_runs_is_not_explained():
    # The CPU twin (torch 2.13): its AotCodeCompiler.compile is its 6 compile_file runs but for a fraction of a second.
    from ..conftest import torch213

    trace = read_trace(torch213("aoti_deploy.log.gz"))
    build = aoti(trace).build
    assert build is not None and build.compiles == 6 and build.untimed_s < build.seconds / 10
    (timed,) = [f for f in insights(trace).findings if f.title.startswith("compiling with AOTInductor took ")]
    assert "building the package" not in timed.detail


def test_a_crash_in_aoti_load_package_is_told_as_loading_a_package_that_compiled():
    compile_line = line_holding(PROGRAM, "aoti_compile_and_package(")
    load_line = line_holding(PROGRAM, "aoti_load_package(")
    for log in (DYNAMIC, STATIC):
        # The raw log: compile_fx_aot ended, then the crash record compilescope run appended, whose current thread
        # is in torch's _load_aoti, called by aoti_load_package from the program's load line.
        records = raw_records(cuda211(log))
        assert any(e.get("graph_dump", {}).get("name") == "inductor_aot_wrapper_code" for e, _ in records)
        assert len(_spans(log)["compile_fx_aot"]) == 1
        (text,) = [p for e, p in records if e.get("artifact", {}).get("name") == "compilescope_crash"]
        current = text.split("Current thread")[1]
        assert current.splitlines()[1].strip().startswith('File "') and "pt2_archive/_package.py" in current
        assert "in _load_aoti" in current.splitlines()[1] and "in aoti_load_package" in current
        assert f"aoti_deploy_cuda.py\", line {load_line} in main" in current

        trace = read_trace(cuda211(log))
        (crash,) = crashes(trace).crashes
        assert crash.loading_aoti_package and not crash.compiling and crash.compile_id is None
        assert crash.during == "while loading an AOTInductor package (torch's aoti_load_package)"
        (finding,) = [f for f in insights(trace).findings if f.section == "crash"]
        assert finding.severity == ERROR
        # The title says the package was built, where, and that torch's loader crashed: not "the program crashed".
        file, line, function = _raw_crash(log)
        assert finding.title == (f"loading the AOTInductor package built at aoti_deploy_cuda.py:{compile_line} "
                                 f"crashed in torch's loader: Segmentation fault in {file}:{line} ({function})")
        assert f"called from aoti_deploy_cuda.py:{load_line} in main" in finding.detail
        assert (f"aoti_deploy_cuda.py:{compile_line} compiled its package (torch logged its generated code and the "
                "compile's end), then loading it crashed inside torch's loader (_load_aoti at _package.py:") \
            in finding.detail
        assert "aoti_load_package('PATH')" in finding.detail and "collect_env" in finding.detail


def test_a_crash_elsewhere_is_not_said_to_be_loading_a_package():
    # The CUDA log of a crash in running compiled code (hf_gpt2_static_cache: Inductor's static launcher) has no
    # aoti_load_package on its stack.
    (crash,) = crashes(read_trace(cuda211("hf_gpt2_static_cache.log.gz"))).crashes
    assert not any(f.function == "aoti_load_package" for f in crash.frames)
    assert not crash.loading_aoti_package and "AOTInductor" not in crash.during


def test_check_fails_the_package_of_one_shape_and_passes_the_one_with_a_dim(capsys):
    # The raw wrappers: the static package checks a batch of 4 (`4 != arg4_1_size[0]`), the dynamic one 2..64. Both
    # runs crashed in loading, which fails no-aoti-load-crash unless allowed: the rule's own result is read from --json.
    import orjson

    from ..conftest import run_cli

    def wrapper(log: str) -> str:
        (code,) = [p for e, p in raw_records(cuda211(log))
                   if e.get("graph_dump", {}).get("name") == "inductor_aot_wrapper_code"]
        return code

    assert "if (4 != arg4_1_size[0])" in wrapper(STATIC) and "if (16 != arg4_1_size[1])" in wrapper(STATIC)
    assert "if (arg4_1_size[0] < 2)" in wrapper(DYNAMIC) and "if (arg4_1_size[0] > 64)" in wrapper(DYNAMIC)
    call = f"aoti_deploy_cuda.py:{line_holding(PROGRAM, 'aoti_compile_and_package(')}"
    results = {}
    for log in (STATIC, DYNAMIC):
        assert run_cli("check", cuda211(log), "--no-static-aoti-packages", "--json") == 1
        rules = {r["rule"]: r for r in orjson.loads(capsys.readouterr().out)["rules"]}
        assert list(rules) == ["no-aoti-load-crash", "no-static-aoti-packages"]
        assert not rules["no-aoti-load-crash"]["passed"]
        results[log] = rules["no-static-aoti-packages"]
    assert not results[STATIC]["passed"]
    assert results[STATIC]["message"].startswith("no-static-aoti-packages: 1 AOTInductor package accepting one shape")
    assert results[STATIC]["details"] == [f"{call} accepts x: Float [4, 16] cuda"]
    assert results[DYNAMIC]["passed"] and results[DYNAMIC]["details"] == []


def _raw_crash(log: str) -> tuple[str, int, str]:
    """The crash record's innermost frame of its current thread, from the raw log: (file name, line, function)."""
    (text,) = [p for e, p in raw_records(cuda211(log)) if e.get("artifact", {}).get("name") == "compilescope_crash"]
    first = text.split("Current thread")[1].splitlines()[1]
    found = re.match(r'\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', first)
    assert found is not None
    return found["file"].rsplit("/", 1)[-1], int(found["line"]), found["func"]


def test_check_tells_the_crash_in_loading_apart_and_lets_the_build_gates_decide(capsys):
    import orjson

    from ..conftest import run_cli

    compile_line = line_holding(PROGRAM, "aoti_compile_and_package(")
    load_line = line_holding(PROGRAM, "aoti_load_package(")
    for log in (DYNAMIC, STATIC):
        # The raw log: compile_fx_aot began and ended once before the crash record, whose innermost frame is torch's
        # _load_aoti (test_a_crash_in_aoti_load_package_is_told_as_loading_a_package_that_compiled).
        assert len(_spans(log)["compile_fx_aot"]) == 1
        file, line, function = _raw_crash(log)
        assert (file, function) == ("_package.py", "_load_aoti")
        crash = (f"the run crashed after building its AOTInductor package (aoti_deploy_cuda.py:{compile_line}): "
                 f"Segmentation fault in {file}:{line} ({function}) while loading an AOTInductor package "
                 "(torch's aoti_load_package)")
        # Not allowed: the crash fails its own rule, no-crash's no longer, and says how to gate the build alone.
        assert run_cli("check", cuda211(log)) == 1
        assert capsys.readouterr().out.splitlines() == [
            f"no-aoti-load-crash: {crash}; the build's rules answer on what was built: --allow-aoti-load-crash lets "
            "them decide"]
        # Allowed: it passes and still says so; the default no-failures holds (the compile did not fail).
        assert run_cli("check", cuda211(log), "--allow-aoti-load-crash") == 0
        assert capsys.readouterr().out.splitlines() == [
            f"no-aoti-load-crash passed: allowed (--allow-aoti-load-crash): {crash}", "compilescope check: 2 rules passed (no-aoti-load-crash, no-failures)"]
        assert run_cli("check", cuda211(log), "--allow-aoti-load-crash", "--json") == 0
        doc = orjson.loads(capsys.readouterr().out)
        assert doc["passed"] and [r["rule"] for r in doc["rules"]] == ["no-aoti-load-crash", "no-failures"]
        assert doc["rules"][0]["details"] == [f"{crash}, called from aoti_deploy_cuda.py:{load_line} in main"]

    # The build's gates answer on what was built: the static package fails no-static-aoti-packages alone, the dynamic
    # one passes; a compile-time budget twice compile_fx_aot's span passes, one of half of it fails.
    def gate(log: str, *rules: str) -> list[tuple[str, bool]]:
        run_cli("check", cuda211(log), "--allow-aoti-load-crash", *rules, "--json")
        return [(r["rule"], r["passed"]) for r in orjson.loads(capsys.readouterr().out)["rules"]]

    assert gate(STATIC, "--no-static-aoti-packages") == [("no-aoti-load-crash", True), ("no-static-aoti-packages", False)]
    assert gate(DYNAMIC, "--no-static-aoti-packages") == [("no-aoti-load-crash", True), ("no-static-aoti-packages", True)]
    ((start, end),) = _spans(DYNAMIC)["compile_fx_aot"]
    assert gate(DYNAMIC, "--max-compile-seconds", str(2 * (end - start))) == [
        ("no-aoti-load-crash", True), ("max-compile-seconds", True)]
    assert gate(DYNAMIC, "--max-compile-seconds", str((end - start) / 2)) == [
        ("no-aoti-load-crash", True), ("max-compile-seconds", False)]


class _RawLog:
    """A log's text as records (a header line, then its payload's lines, each after a tab), read without compilescope:
    to cut a real log where a process that died would have left it."""

    def __init__(self, log: str):
        self.lines = gzip.decompress(cuda211(log).read_bytes()).decode().split("\n")
        self.heads = [i for i, text in enumerate(self.lines) if text and not text.startswith("\t")]

    def record(self, i: int) -> list[str]:
        end = i + 1
        while end < len(self.lines) and self.lines[end].startswith("\t"):
            end += 1
        return self.lines[i:end]

    def chromium(self, i: int) -> dict:
        return json.loads("\n".join(p[1:] for p in self.record(i)[1:])) if '"chromium_event"' in self.lines[i] else {}

    def first(self, name: str) -> int:
        """The header line of the one record named so (an artifact's, a graph_dump's)."""
        (i,) = [i for i in self.heads if f'"{name}"' in self.lines[i]]
        return i

    @property
    def fx_end(self) -> int:
        """The record of compile_fx_aot's end: the AOTInductor compile's outermost event (logged with no compile id)."""
        (i,) = [i for i in self.heads if self.chromium(i).get("name") == "compile_fx_aot" and self.chromium(i)["ph"] == "E"]
        return i


def test_a_crash_before_the_build_ended_is_no_crash_even_allowed(tmp_path, capsys):
    # The dynamic log cut before compile_fx_aot's end record (its wrapper already logged), then its crash record: as a
    # process that died while building would leave it. Nothing says the package was built: no-crash fails, allowed or
    # not, and the finding no longer says that torch logged the compile's end.
    from ..conftest import run_cli

    raw = _RawLog(DYNAMIC)
    fx_end, crash, wrapper = raw.fx_end, raw.first("compilescope_crash"), raw.first("inductor_aot_wrapper_code")
    assert wrapper < fx_end < crash
    cut = tmp_path / "died_building.log"
    cut.write_text("\n".join(raw.lines[:fx_end] + raw.record(crash)) + "\n")

    file, line, function = _raw_crash(DYNAMIC)
    for allowed in ((), ("--allow-aoti-load-crash",)):
        assert run_cli("check", cut, *allowed) == 1
        assert capsys.readouterr().out.splitlines() == [
            f"no-crash: the run crashed: Segmentation fault in {file}:{line} ({function}) while loading an AOTInductor "
            "package (torch's aoti_load_package)"]
    (finding,) = [f for f in insights(read_trace(str(cut))).findings if f.section == "crash"]
    assert finding.title == f"the program crashed: Segmentation fault in {file}:{line} ({function})"
    assert "the compile's end" not in finding.detail and "; loading the package crashed inside torch's loader" in finding.detail


def test_allowing_a_crash_in_loading_excuses_no_other_crash(capsys):
    # hf_gpt2_static_cache died in Inductor's static launcher while running [0/1]'s code, no AOTInductor package in it.
    from ..conftest import run_cli, torch213

    for log in (cuda211("hf_gpt2_static_cache.log.gz"), torch213("native_crash.log.gz")):
        assert run_cli("check", log, "--allow-aoti-load-crash") == 1
        (said,) = capsys.readouterr().out.splitlines()
        assert said.startswith("no-crash: the run crashed: Segmentation fault in ")


def test_the_finding_says_what_the_package_holds():
    # The raw wrappers (both variants alike): the CUDA runtime's header; two Triton kernels, each loaded from a .cubin
    # of its own, the two kernels triton_kernel_info names; torch's mm called twice (the Linear layers' matmuls, their
    # bias and relu fused into the kernels); four Parameter constants, the fc1 and fc2 weights and biases, whose
    # float32 sizes (32x16 + 32 + 32x32 + 32) x 4 bytes are the data_sizes' 6,400.
    import re

    holds = ("2 Triton kernels (cubins), 2 calls of ATen ops (mm ×2), 4 parameters (6,400 bytes) and the C++ wrapper "
             "that runs them on CUDA")
    text = PROGRAM.read_text()
    assert "torch.nn.Linear(16, 32)" in text and "torch.nn.Linear(32, 32)" in text
    for log in (DYNAMIC, STATIC):
        records = raw_records(cuda211(log))
        (code,) = [p for e, p in records if e.get("graph_dump", {}).get("name") == "inductor_aot_wrapper_code"]
        (info,) = [json.loads(p) for e, p in records if e.get("artifact", {}).get("name") == "triton_kernel_info"]
        assert "#include <torch/csrc/inductor/aoti_include/cuda.h>" in code
        loaded = re.findall(r'kernels_\.(\w+) = loadKernel\("[^"]+\.cubin"', code)
        assert sorted(loaded) == sorted(info) and len(loaded) == 2
        assert code.count("AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_mm_out(") == 2
        assert not re.search(r'extern "C"\s+void', code)  # (no C++ kernel)
        assert code.count("ConstantType::Parameter") == 4 and "ConstantType::Buffer" not in code
        sizes = [int(n) for n in re.findall(r"constants_info_\[\d+\]\.data_size = (\d+);", code)]
        assert sum(sizes) == (32 * 16 + 32 + 32 * 32 + 32) * 4 == 6400

        trace = read_trace(cuda211(log))
        (package,) = aoti(trace).packages
        assert package.contents is not None and package.contents.text == holds
        assert package.contents.triton_kernels == loaded
        (finding,) = [f for f in insights(trace).findings if "AOTInductor package" in f.title and f.section != "crash"]
        assert finding.detail.startswith(f"It holds {holds}")


def _summary_lines(path: Path) -> list[str]:
    """The terminal summary at 100 columns, without colour."""
    import io

    from rich.console import Console

    from compilescope.render.terminal import print_summary

    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    print_summary(insights(read_trace(str(path))), console)
    return [line.rstrip() for line in console.export_text().splitlines()]


def _package_name() -> str:
    return f"AOTInductor package of aoti_deploy_cuda.py:{line_holding(PROGRAM, 'aoti_compile_and_package(')}"


def test_the_build_is_named_by_its_package_where_a_compile_id_would_be():
    # The raw log: the build's outermost event, compile_fx_aot, has no compile id (args.compile_id "None": tlparse's
    # [-/-]); the one shape symbol was created by torch.export (line 38) before it began. The slowest compiles and the
    # autotuned kernel name the package by the line that compiled it; the symbol, torch.export's, keeps [-/-].
    for log in (DYNAMIC, STATIC):
        raw = _RawLog(log)
        (fx_begin,) = [i for i in raw.heads if raw.chromium(i).get("name") == "compile_fx_aot" and raw.chromium(i)["ph"] == "B"]
        assert raw.chromium(fx_begin)["args"]["compile_id"] == "None"
        symbols = [i for i in raw.heads if '"create_symbol"' in raw.lines[i]]
        assert all(i < fx_begin for i in symbols)

        ins = insights(read_trace(cuda211(log)))
        assert ins.aoti.compile_name("[-/-]") == _package_name() and ins.aoti.compile_name("[0/0]") == "[0/0]"
        assert ins.unfinished == [] and not any(c.unfinished for c in ins.compile_time.compiles)
        lines = _summary_lines(cuda211(log))
        slowest = lines.index(next(line for line in lines if line.startswith("slowest ")))
        autotuned = lines.index(next(line for line in lines if line.startswith("compile id ") and "kernel" in line))
        for row in (slowest + 2, autotuned + 2):  # (its first column: the name, wrapped over two lines)
            assert " ".join(line.split("   ")[0] for line in lines[row:row + 2]) == _package_name()
        # The symbol's Python stack runs through the export call (line 38), not aoti_compile_and_package
        export = line_holding(PROGRAM, "torch.export.export(")
        for i in symbols:
            stack = json.loads(raw.lines[i][raw.lines[i].index("{"):])["stack"]
            assert export in [f["line"] for f in stack]
            assert line_holding(PROGRAM, "aoti_compile_and_package(") not in [f["line"] for f in stack]
        made = [line for line in lines if f"in torch.export at aoti_deploy_cuda.py:{export} " in line]
        assert len(made) == len(symbols) and not any("[-/-]" in line for line in lines)


def test_the_report_tables_name_the_package_and_torch_export_by_what_made_each_row(tmp_path):
    # The HTML index's compile-time, autotuning and dynamic-shapes tables (one link macro): the rows the build made
    # (compile_fx_aot, the kernel autotuned while compiling) are the package's; the symbol torch.export made before the
    # build began (test above) is torch.export's; no cell says tlparse's [-/-], and each still links its outputs.
    import html

    from ..conftest import report

    package = _package_name()
    export = f"torch.export at aoti_deploy_cuda.py:{line_holding(PROGRAM, 'torch.export.export(')}"
    for log, symbols in ((DYNAMIC, [export]), (STATIC, [])):
        report(cuda211(log), tmp_path / log)
        page = (tmp_path / log / "index.html").read_text()
        assert _first_cells(page, "slowest") == _first_cells(page, "autotune-kernels") == [package]
        assert _first_cells(page, "dynamic-shapes") == symbols
        for table in ("slowest", "autotune-kernels", "dynamic-shapes")[:3 if symbols else 2]:
            rows = _table(page, table)
            assert "[-/-]" not in html.unescape(re.sub(r"<[^>]+>", "", rows))
            assert rows.count('<td><a href="#[-/-]"') == len(_first_cells(page, table))
        assert ('<table class="dynamic-shapes"' in page) == bool(symbols)


def _table(page: str, table: str) -> str:
    start = page.index(f'<table class="{table}"')
    return page[start:page.index("</table>", start)]


def _first_cells(page: str, table: str) -> list[str]:
    """The text of each body row's first cell in the index page's table of that class (none where it has none)."""
    import html

    body = _table(page, table) if f'<table class="{table}"' in page else ""
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", "", cell)).split())
            for cell in re.findall(r"<tr><td>(.*?)</td>", body)]


def test_a_log_cut_inside_the_package_build_never_finished(tmp_path, capsys):
    # The dynamic log cut inside compile_fx_aot (its begin kept, its end not), with no crash record: where its wrapper
    # was logged (all but the build's end), and before it (while AotCodeCompiler.compile ran). Each is a build that
    # never finished: the finding, summary --json's unfinished, check's whole-log, named by its package's line.
    import orjson

    from ..conftest import run_cli

    raw = _RawLog(DYNAMIC)
    name = _package_name()
    for cut_at in (raw.fx_end, raw.first("inductor_aot_wrapper_code")):
        kept = raw.lines[:cut_at]
        assert [raw.chromium(i)["ph"] for i in raw.heads
                if i < cut_at and raw.chromium(i).get("name") == "compile_fx_aot"] == ["B"]  # its begin alone
        cut = tmp_path / f"cut_{cut_at}.log"
        cut.write_text("\n".join(kept) + "\n")

        ins = insights(read_trace(str(cut)))
        # The phase it was in is the innermost event still open (begun above the cut, not ended): compile_fx_aot alone
        # where only its end is cut (Other), AotCodeCompiler.compile where the wrapper is (the package build's phase)
        still_open: list[str] = []
        for i in raw.heads:
            if i < cut_at and '"chromium_event"' in raw.lines[i]:
                event = raw.chromium(i)
                if event["ph"] == "B":
                    still_open.append(event["name"])
                elif event["ph"] == "E":
                    still_open.remove(event["name"])
        expected = {"compile_fx_aot": "other", "AotCodeCompiler.compile": "aoti_package"}[still_open[-1]]
        assert ins.unfinished == [("[-/-]", expected)]
        assert ins.counted == "1 AOTInductor compile" and ins.compile_time.heading == "Compile time"  # (not an export)
        (finding,) = [f for f in ins.findings if "never finished" in f.title]
        assert finding.title == f"the {name} never finished compiling"
        assert finding.detail.startswith(f"the log ends while building the {name}: ")

        assert run_cli("check", cut) == 1
        assert capsys.readouterr().out.splitlines() == [
            f"whole-log: the log ends while building the {name}: the program was stopped, crashed or was killed while "
            "compiling, so what it did after is not in the log"]
        assert run_cli("summary", cut, "--json") == 0
        doc = orjson.loads(capsys.readouterr().out)
        assert doc["unfinished"] == [{"compile_id": "[-/-]", "phase": expected}]
        assert [(c["compile_id"], c["unfinished"]) for c in doc["compile_time"]["compiles"]] == [("[-/-]", True)]


def test_an_unfinished_builds_row_wraps_at_words_in_80_columns(tmp_path):
    # The dynamic log cut before compile_fx_aot's end (the test above): its slowest-compiles row is the package's name
    # (two lines), the function, the time so far and what it was mostly doing, unfinished. At 80 columns the row ran
    # past the terminal and the last cell was cut ("AOTInductor pack" / "build (...)"): each word is whole now.
    import io

    from rich.console import Console

    from compilescope.render.terminal import print_summary

    raw = _RawLog(DYNAMIC)
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(raw.lines[:raw.fx_end]) + "\n")
    console = Console(width=80, color_system=None, record=True, file=io.StringIO())
    print_summary(insights(read_trace(str(cut))), console)
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    head = next(i for i, line in enumerate(lines) if line.startswith("slowest "))
    column = lines[head].index("mostly")
    row = lines[head + 2:lines.index("", head)]
    assert all(len(line) <= 80 for line in lines)
    mostly = " ".join(line[column:].strip() for line in row if line[column:].strip()).split()
    assert mostly[:3] == ["AOTInductor", "package", "build"] and mostly[-6:] == "still compiling when the log ended".split()
    assert " ".join(line[:column].split("   ")[0].strip() for line in row[:2]) == _package_name()

"""Deploying with AOTInductor (tests/data/torch213 programs/aoti_deploy.py): an exported model compiled with
aoti_compile_and_package, with a Dim for the batch and (_static) without. That the compile is told as AOTInductor's,
not as an export, and what each package accepts as input, read from the C++ wrapper torch logs. Expected values are
read from the raw log and the program, not from our output."""

from __future__ import annotations

import re
from pathlib import Path

from compilescope.analyses.aoti import CHECK_ENV, aoti
from compilescope.analyses.insights import INFO, WARNING
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace

from ..conftest import line_holding, torch213
from ..tracelog import raw_records

LOG = "aoti_deploy.log.gz"
STATIC = "aoti_deploy_static.log.gz"
PROGRAM = Path(__file__).parents[1] / "data" / "torch213" / "programs" / "aoti_deploy.py"


def _program_line(text: str) -> int:
    return line_holding(PROGRAM, text)


def _wrapper(log: str) -> str:
    """The C++ wrapper torch logged (graph_dump inductor_aot_wrapper_code), read without compilescope."""
    (code,) = [p for e, p in raw_records(torch213(log))
               if e.get("graph_dump", {}).get("name") == "inductor_aot_wrapper_code"]
    return code


def test_the_raw_logs_hold_an_aoti_compile_and_no_torch_compile():
    for log in (LOG, STATIC):
        records = raw_records(torch213(log))
        kinds = {next(iter(e)) for e, _ in records}
        assert "dynamo_start" not in kinds  # no torch.compile frame
        dumps = [e["graph_dump"]["name"] for e, _ in records if "graph_dump" in e]
        assert dumps == ["inductor_aot_wrapper_code", "inductor_aot_kernel_code"]
        # every record outside a compile id: the stacks run through the program's aoti_compile_and_package call
        assert not any("frame_id" in e for e, _ in records)


def test_each_package_accepts_what_its_wrapper_checks():
    # The raw wrappers: the Dim's bounds (2, 64: the program's Dim) with a Dim, a batch of 4 (the example's) without;
    # the checks return early unless AOTI_RUNTIME_CHECK_INPUTS is set.
    assert 'Dim("batch", min=2, max=64)' in PROGRAM.read_text()
    dynamic, static = _wrapper(LOG), _wrapper(STATIC)
    assert "if (arg4_1_size[0] < 2)" in dynamic and "if (arg4_1_size[0] > 64)" in dynamic
    assert "if (4 != arg4_1_size[0])" in static and "arg4_1_size[0] < " not in static
    for code in (dynamic, static):
        assert "16 != arg4_1_size[1]" in code and "(at::kFloat)" in code and "0(cpu)" in code
        assert re.search(rf'getenv\("{CHECK_ENV}"\)', code)
        assert "if (!_check_aoti_runtime_check_inputs_env()){\n        return;" in code

    call = _program_line("aoti_compile_and_package(")
    (package,) = aoti(read_trace(torch213(LOG))).packages
    assert (package.call.line, package.call.function) == (call, "main")
    assert package.accepts == "x: Float [2..64, 16] cpu"  # x: forward's argument
    assert package.checks_need_env
    (package,) = aoti(read_trace(torch213(STATIC))).packages
    assert package.accepts == "x: Float [4, 16] cpu"
    # no dynamic_shapes: the wrapper checks 4 != arg4_1_size[0] and 16 != arg4_1_size[1], each dim one size
    assert [(i.name, n, d.size) for i in package.inputs for n, d in enumerate(i.dims)] == [("x", 0, 4), ("x", 1, 16)]


def test_the_compile_is_told_as_aotinductors_and_a_one_shape_package_is_a_warning():
    call = f"aoti_deploy.py:{_program_line('aoti_compile_and_package(')}"
    found = insights(read_trace(torch213(LOG)))
    assert found.counted == "1 AOTInductor compile"
    titles = [f.title for f in found.findings]
    assert any(t.startswith("compiling with AOTInductor took ") for t in titles)
    assert not any(t.startswith("exporting took") for t in titles)  # the time is compile_fx_aot's, not export's
    (accepts,) = [f for f in found.findings if "AOTInductor package" in f.title]
    assert accepts.title == f"the AOTInductor package of {call} accepts x: Float [2..64, 16] cpu"
    assert accepts.severity == INFO and f"{CHECK_ENV}=1" in accepts.detail
    assert found.to_json()["aoti"]["packages"][0]["accepts"] == "x: Float [2..64, 16] cpu"

    (accepts,) = [f for f in insights(read_trace(torch213(STATIC))).findings if "AOTInductor package" in f.title]
    assert accepts.title == f"the AOTInductor package of {call} accepts x: Float [4, 16] cpu"
    assert accepts.severity == WARNING
    assert "no Dim" in accepts.detail and f"{CHECK_ENV}=1" in accepts.detail


# What each package holds (test_the_finding_says_what_the_package_holds reads it from the raw wrappers)
HOLDS = "2 C++ kernels, 2 calls of ATen ops (addmm ×2), 4 parameters (6,400 bytes) and the C++ wrapper that runs them on the CPU"


def test_the_finding_says_what_the_package_holds():
    # The raw wrappers (both variants alike): the CPU runtime's header; two C++ kernels declared, which the kernel file
    # defines; torch's addmm called twice (the two Linear layers); four Parameter constants, Head's fc1 and fc2
    # weights and biases, whose float32 sizes (32x16 + 32 + 32x32 + 32) x 4 bytes are the data_sizes' 6,400.
    assert "torch.nn.Linear(16, 32)" in PROGRAM.read_text() and "torch.nn.Linear(32, 32)" in PROGRAM.read_text()
    for log in (LOG, STATIC):
        code = _wrapper(log)
        (kernel_file,) = [p for e, p in raw_records(torch213(log))
                          if e.get("graph_dump", {}).get("name") == "inductor_aot_kernel_code"]
        assert "#include <torch/csrc/inductor/aoti_include/cpu.h>" in code
        declared = re.findall(r'extern "C"\s+void\s+(\w+)\(', code)
        assert declared == ["cpp_fused_relu_0", "cpp_fused_relu_sum_view_1"]
        assert re.findall(r'extern "C"\s+void\s+(\w+)\(', kernel_file) == declared
        assert code.count("AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(") == 2 and "loadKernel(" not in code
        assert code.count("ConstantType::Parameter") == 4 and "ConstantType::Buffer" not in code
        sizes = [int(n) for n in re.findall(r"constants_info_\[\d+\]\.data_size = (\d+);", code)]
        assert sum(sizes) == (32 * 16 + 32 + 32 * 32 + 32) * 4 == 6400

        (package,) = aoti(read_trace(torch213(log))).packages
        assert package.contents is not None and package.contents.text == HOLDS
        (finding,) = [f for f in insights(read_trace(torch213(log))).findings if "AOTInductor package" in f.title]
        assert finding.detail.startswith(f"It holds {HOLDS}. ")


def test_diff_tells_what_the_package_accepts_now():
    # The static package checks a batch of 4 (its wrapper's `4 != arg4_1_size[0]`), the one with a Dim 2..64.
    from compilescope.analyses.analyze import analyze
    from compilescope.analyses.run_facts.analysis import run_facts
    from compilescope.analyses.diff.analysis import diff_runs

    def facts(log: str):
        with read_trace(str(torch213(log))) as trace:
            return run_facts(analyze(trace))

    call = f"aoti_deploy.py:{_program_line('aoti_compile_and_package(')}"
    (change,) = [c for c in diff_runs(facts(STATIC), facts(LOG)).changes if "AOTInductor" in c.title]
    assert (change.section, change.kind, change.a, change.b) == (
        "dynamic_shapes", "changed", "x: Float [4, 16] cpu", "x: Float [2..64, 16] cpu")
    assert call in change.title


def _chromium(log: str) -> list[dict]:
    """The log's chromium events, read without compilescope."""
    import json

    return [json.loads(p) for e, p in raw_records(torch213(log)) if "chromium_event" in e]


def test_the_compiler_is_named_by_the_code_aotinductor_wrote_and_the_header_precompile_apart():
    # A CPU package: its wrapper includes the CPU runtime, its kernels are C++ (extern "C" cpp_fused_*), no Triton
    # kernel is embedded: every compile_file is the C++ compiler, not CUDA's.
    (kernels,) = [p for e, p in raw_records(torch213(LOG))
                  if e.get("graph_dump", {}).get("name") == "inductor_aot_kernel_code"]
    wrapper = _wrapper(LOG)
    assert "aoti_include/cpu.h" in wrapper and "@triton.jit" not in wrapper + kernels
    assert re.search(r'extern "C"\s+void\s+cpp_fused_', kernels)
    # The raw events: aoti_precompile_header once, with two compile_file runs inside it.
    events = _chromium(LOG)
    spans: dict[str, list[tuple[float, float]]] = {}
    opened: list[tuple[str, float]] = []
    for ev in events:
        if ev.get("ph") == "B":
            opened.append((ev["name"], ev["ts"]))
        elif ev.get("ph") == "E":
            name, start = opened.pop()
            assert name == ev["name"]
            spans.setdefault(name, []).append((start / 1e6, ev["ts"] / 1e6))
    ((h_start, h_end),) = spans["aoti_precompile_header"]
    inside = [(b, e) for b, e in spans["compile_file"] if h_start <= b and e <= h_end]
    assert len(inside) == 2 and len(spans["compile_file"]) == 12

    from compilescope.analyses.compile_time import compile_times
    from compilescope.wording import format_seconds

    trace = read_trace(torch213(LOG))
    assert compile_times(trace).labels["kernel_compile"] == "C++ compile"
    header = aoti(trace).header
    assert header is not None and header.compiles == 2
    assert abs(header.seconds - (h_end - h_start)) < 1e-6
    assert abs(header.compile_s - sum(e - b for b, e in inside)) < 1e-6
    (timed,) = [f for f in insights(read_trace(torch213(LOG))).findings
                if f.title.startswith("compiling with AOTInductor took ")]
    assert timed.detail.startswith("C++ compile: ")
    assert (f"{format_seconds(header.compile_s)} (2 compiler runs) prepared AOTInductor's runtime headers "
            f"(aoti_precompile_header, {format_seconds(h_end - h_start)} in all)") in timed.detail


def test_the_batch_dim_is_placed_at_the_export_call_that_made_it():
    # torch logs s77 (the Dim's [2, 64]) with an empty user stack while export fakes the inputs, before forward
    # runs: its Python stack runs from the program's export call into torch/export/.
    from compilescope.analyses.dynamic_shapes import dynamic_shapes

    (created,) = [e["create_symbol"] for e, _ in raw_records(torch213(LOG)) if "create_symbol" in e]
    assert (created["symbol"], created["vr"], created["user_stack"]) == ("s77", "[2, 64]", [])
    export = _program_line("torch.export.export(")
    assert [f["line"] for f in created["stack"][:3]] == [_program_line("    main()"), export, 171]
    (size,) = dynamic_shapes(read_trace(torch213(LOG))).sizes
    assert (size.location.line, size.location.function) == (export, "main")
    # No compile id (tlparse's [-/-]): made by torch.export, by its stack, not by the package built at line 41
    assert [(s.compile_id, s.made_by) for s in size.symbols] == [("[-/-]", f"torch.export at aoti_deploy.py:{export}")]
    assert size.symbols_text == f"s77 = 4 in torch.export at aoti_deploy.py:{export} ([2, 64])"


def test_the_index_tables_name_the_package_and_torch_export_not_no_compile_id(tmp_path):
    # The compile-time table's row is compile_fx_aot's (test_the_compile_is_named_by_its_package...), the symbols
    # table's row is s77, which torch.export made (test above): each named by what made it, linked to [-/-]'s outputs.
    import html

    from ..conftest import report

    report(torch213(LOG), tmp_path)
    page = (tmp_path / "index.html").read_text()
    for table, made in (("slowest", f"AOTInductor package of aoti_deploy.py:{_program_line('aoti_compile_and_package(')}"),
                        ("dynamic-shapes", f"torch.export at aoti_deploy.py:{_program_line('torch.export.export(')}")):
        start = page.index(f'<table class="{table}"')
        body = page[start:page.index("</table>", start)]
        assert [html.unescape(c) for c in re.findall(r'<tr><td><a href="#\[-/-\]" title="\[-/-\]">(.*?)</a>', body)] == [made]
        assert "[-/-]" not in html.unescape(re.sub(r"<[^>]+>", "", body))
    # The timeline chart's one row (the raw log's one compile_fx_aot span: test_the_compile_is_named_by_its_package...)
    # is named as the compile-time table names it, not "[-/-] compile_fx_aot".
    start = page.index('id="timeline-chart"')
    chart = page[start:page.index("</table>", start)]
    package = f"AOTInductor package of aoti_deploy.py:{_program_line('aoti_compile_and_package(')}"
    assert [html.unescape(c) for c in re.findall(r'<td class="lbl"><a [^>]*>(.*?)</a>', chart)] == [package]
    assert "[-/-]" not in html.unescape(chart)


def test_the_report_names_the_package_code_where_tlparse_puts_it(tmp_path):
    # tlparse 0.4.3 files the AOTInductor compile's outputs under [-/-] (no compile id): the report keeps its file
    # names and compile_directory.json, and says what the wrapper and kernel files are and whose compile they are.
    import gzip
    import json
    import subprocess

    from ..conftest import report, tlparse_binary

    plain = tmp_path / "aoti_deploy.log"
    plain.write_bytes(gzip.decompress(torch213(LOG).read_bytes()))  # (tlparse 0.4.3 reads no .gz)
    subprocess.run([tlparse_binary(), str(plain), "-o", str(tmp_path / "tl"), "--no-browser"], check=True,
                   capture_output=True)
    theirs = json.loads((tmp_path / "tl" / "compile_directory.json").read_text())
    ours = report(torch213(LOG), tmp_path / "cs")
    assert list(ours) == list(theirs) == ["[-/-]"]
    assert [a["url"] for a in ours["[-/-]"]["artifacts"]] == [a["url"] for a in theirs["[-/-]"]["artifacts"]]
    urls = {a["name"] for a in theirs["[-/-]"]["artifacts"]}
    wrapper, kernels = (next(u for u in urls if u.startswith(f"inductor_aot_{k}_code_")) for k in ("wrapper", "kernel"))

    page = (tmp_path / "cs" / "index.html").read_text()
    for name, role in ((wrapper, "C++ wrapper"), (kernels, "kernels")):
        assert re.search(rf'{re.escape(name)}</a> <span class="badge role">AOTInductor package: {re.escape(role)}</span>', page)
    call = _program_line("aoti_compile_and_package(")
    outside = page[page.index('id="no-compile-id"'):page.index('class="artifacts"', page.index('id="no-compile-id"'))]
    assert f"aoti_deploy.py:{call}</a>" in outside and "AOTInductor" in outside
    # no dynamo_start in the log (the first test): no torch.compile stack, nor anything torch.compile made
    assert "No stacks in this log" not in page and 'id="no-compile-stacks"' in page
    assert "What torch.compile made" not in page and "What torch.export and AOTInductor made" in page


def test_the_source_page_marks_the_line_that_compiled_the_package_and_never_says_no_compile_id(tmp_path):
    """aoti_deploy.py's page: line 41 (aoti_compile_and_package) said nothing, and lines 28-29 said "via call: [-/-]",
    tlparse's id of no compile, though the log names the package that holds their ops."""
    import html
    import json

    from ..conftest import report

    call, fc1, fc2 = (_program_line(t) for t in ("aoti_compile_and_package(", "self.fc1(x)", "self.fc2(h)"))
    # The raw kernel stack traces (outside any compile id: no frame_id) run from lines 28 and 29 into Linear's
    # forward (linear.py:134), whose addmm the package calls.
    (traces,) = [json.loads(p) for e, p in raw_records(torch213(LOG))
                 if e.get("artifact", {}).get("name") == "inductor_provenance_tracking_kernel_stack_traces"]
    for line in (fc1, fc2):
        assert any(f'aoti_deploy.py", line {line}, in forward' in t and "torch/nn/modules/linear.py" in t
                   for stacks in traces.values() for t in stacks)
    # What the wrapper checks (test_each_package_accepts_what_its_wrapper_checks): the Dim's 2..64, 16, float, cpu.
    wrapper = _wrapper(LOG)
    assert "arg4_1_size[0] < 2" in wrapper and "arg4_1_size[0] > 64" in wrapper and "16 != arg4_1_size[1]" in wrapper

    out = tmp_path / "out"
    listed = report(torch213(LOG), out)["[-/-]"]["artifacts"]
    wrapper_url, kernels_url = (next(a["url"] for a in listed if a["name"].startswith(f"inductor_aot_{k}_code_"))
                                for k in ("wrapper", "kernel"))
    (page,) = (out / "sources").glob("aoti_deploy.py_*.html")
    text = page.read_text()
    assert "[-/-]" not in text and "-/-" not in html.unescape(re.sub(r"<[^>]+>", " ", text))

    def row(line: int) -> str:
        """The line's row, from its number on (its badges and notes), to the next line's or to the gap of lines the log
        does not quote (the program's file is read where it still is, at the path it was recorded from; elsewhere the
        page has only the lines the log quotes)."""
        start = text.index(f'<a class="ln" href="#L{line}">')
        return text[start:re.compile(r'<div class="src-(?:line|gap)').search(text, start).start()]

    def words(part: str) -> str:
        return " ".join(html.unescape(re.sub(r"<[^>]+>", "", part)).split())

    for line in (fc1, fc2):
        assert "via call: AOTInductor package" in words(row(line))
        assert "the ops of the code it calls are at linear.py:134 (graph of the AOTInductor package)" in words(row(line))
    compiled = row(call)
    assert words(compiled).endswith(
        "aoti_compile_and_package(ep, package_path=path)AOTInductor packageAOTInductor compiled the exported program here, as a package that accepts "
        f"x: Float [2..64, 16] cpu; it holds {HOLDS}; it checks its inputs only where {CHECK_ENV}=1 is set · its C++ "
        "wrapper · its kernels")
    assert f'href="../{wrapper_url}">its C++ wrapper</a>' in compiled and f'href="../{kernels_url}">its kernels</a>' in compiled
    assert (out / wrapper_url).exists() and (out / kernels_url).exists()
    # The export's symbol (line 39) is no package's: said as outside any compilation.
    assert "created = 4 from x.size()[0] (outside any compilation)" in words(row(_program_line("torch.export.export(")))


def test_each_package_is_told_the_call_its_own_wrapper_was_logged_from(tmp_path):
    # A generated log in torch's format: two packages compiled from one line (a loop, line 10: the same stack, kept
    # once) and a third from line 12. Each wrapper record carries its stack, as torch logs one with every record
    # outside a compile id (the real logs': checked below): the packages' calls are 10, 10, 12, not the distinct
    # lines matched to packages by index (10, 12, 12).
    from ..tracelog import envelope

    torch_frame = {"line": 153, "name": "aoti_compile_and_package",
                   "filename": "/venv/lib/python3.12/site-packages/torch/_inductor/__init__.py"}

    def package(line: int, batch: int) -> str:
        stack = [{"line": line, "name": "main", "filename": "/x/deploy.py"}, torch_frame]
        wrapper = f"static void check_input_0(\n    if ({batch} != arg0_1_size[0]) {{\n"
        return (envelope({"artifact": {"name": "before_pre_grad_graph", "encoding": "string"}, "stack": stack},
                         'def forward(self, x: "f32[4][1]cpu"):\n')
                + envelope({"graph_dump": {"name": "inductor_aot_wrapper_code", "type": "cpp"}, "stack": stack},
                           wrapper))

    log = tmp_path / "three.log"
    log.write_text(package(10, 1) + package(10, 2) + package(12, 3))
    packages = aoti(read_trace(log)).packages
    assert [(p.call.line, p.inputs[0].dims[0].size) for p in packages] == [(10, 1), (10, 2), (12, 3)]

    for log_name in (LOG, STATIC):  # the real wrappers' records: each with the stack through the program's call
        (stack,) = [e["stack"] for e, _ in raw_records(torch213(log_name))
                    if e.get("graph_dump", {}).get("name") == "inductor_aot_wrapper_code"]
        assert _program_line("aoti_compile_and_package(") in [f["line"] for f in stack]


def test_check_fails_a_package_of_one_shape_and_passes_one_with_a_dim(capsys):
    # The static wrapper checks a batch of 4 and 16 features (`4 != arg4_1_size[0]`, `16 != arg4_1_size[1]`): one
    # shape; the dynamic one's batch is 2..64 (`arg4_1_size[0] < 2`, `> 64`). Neither log holds anything else a
    # default gate fails on (no compile failed).
    import orjson

    from ..conftest import run_cli

    static, dynamic = _wrapper(STATIC), _wrapper(LOG)
    assert "if (4 != arg4_1_size[0])" in static and "if (16 != arg4_1_size[1])" in static
    assert "if (arg4_1_size[0] < 2)" in dynamic
    call = f"aoti_deploy.py:{_program_line('aoti_compile_and_package(')}"
    assert run_cli("check", torch213(STATIC), "--no-static-aoti-packages") == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("no-static-aoti-packages: 1 AOTInductor package accepting one shape only, none allowed")
    assert line.endswith(f": {call} accepts x: Float [4, 16] cpu")

    assert run_cli("check", torch213(LOG), "--no-static-aoti-packages", "--json") == 0
    (rule,) = orjson.loads(capsys.readouterr().out)["rules"]
    assert (rule["rule"], rule["passed"], rule["details"]) == ("no-static-aoti-packages", True, [])
    # A log with no package passes, and says there was none to check.
    assert run_cli("check", torch213("amp_train_step.log.gz"), "--no-static-aoti-packages", "--json") == 0
    (rule,) = orjson.loads(capsys.readouterr().out)["rules"]
    assert rule["message"].endswith("(no AOTInductor package in the log)")


def test_a_package_that_loaded_has_no_crash_rule_to_allow(capsys):
    # The CPU twin ran as `compilescope run` runs programs (README: RUN_ENV), which records a crash in the log: neither
    # log holds one, as the packages loaded and ran at batch 4 and 8 (nothing logged). --allow-aoti-load-crash adds no
    # rule, and the build's gate answers as without it.
    import orjson

    from ..conftest import run_cli

    for log, passed in ((LOG, True), (STATIC, False)):
        assert not any(e.get("artifact", {}).get("name") == "compilescope_crash" for e, _ in raw_records(torch213(log)))
        for allowed in ((), ("--allow-aoti-load-crash",)):
            assert run_cli("check", torch213(log), "--no-static-aoti-packages", *allowed, "--json") == (0 if passed else 1)
            rules = orjson.loads(capsys.readouterr().out)["rules"]
            assert [(r["rule"], r["passed"]) for r in rules] == [("no-static-aoti-packages", passed)]


def test_the_compile_is_named_by_its_package_not_by_tlparse_no_compile_id():
    # The raw logs: compile_fx_aot, the AOTInductor compile's outermost event, begins and ends once with no compile id
    # (args.compile_id "None", tlparse's [-/-]). The package is named by the line that compiled it wherever a compile
    # id would be; a compile id stays itself; every compile the log began ended.
    import json

    name = f"AOTInductor package of aoti_deploy.py:{_program_line('aoti_compile_and_package(')}"
    for log in (LOG, STATIC):
        events = [json.loads(p) for e, p in raw_records(torch213(log)) if "chromium_event" in e]
        outer = [(e["ph"], e["args"]["compile_id"]) for e in events if e["name"] == "compile_fx_aot"]
        assert outer == [("B", "None"), ("E", "None")]
        with read_trace(str(torch213(log))) as trace:
            ins = insights(trace)
        assert ins.aoti.compile_name("[-/-]") == name and ins.aoti.said("[-/-]") == f"the {name}"
        assert ins.aoti.compile_name("[0/1]") == "[0/1]"
        assert ins.unfinished == [] and [(c.compile_id, c.unfinished) for c in ins.compile_time.compiles] == [
            ("[-/-]", False)]


def test_the_pages_of_the_package_s_compile_link_only_to_pages_that_exist(tmp_path):
    # An AOTInductor compile has no compile id (no record of the log carries a frame_id): its artifacts are filed under
    # -_-_-_-/, which has no compile page. Its provenance page and its kernels' page linked their heading's [-/-] to
    # -_-_-_-/index.html all the same, a page not written (the browser's "file not found").
    assert not [e for e, _ in raw_records(torch213(LOG)) if "frame_id" in e]
    from ..conftest import report

    report(torch213(LOG), tmp_path)
    assert not (tmp_path / "-_-_-_-" / "index.html").exists()
    pages = [*(tmp_path / "-_-_-_-").glob("*.html"), *(tmp_path / "provenance").glob("*.html")]
    assert any("kernel_stack_traces" in p.name for p in pages) and (tmp_path / "provenance" / "-_-_-_-.html") in pages
    for page in pages:
        for href in re.findall(r'href="([^"#:]+)(?:#[^"]*)?"', page.read_text(encoding="utf-8")):
            assert (page.parent / href).exists(), f"{page.relative_to(tmp_path)} links to {href}, not written"

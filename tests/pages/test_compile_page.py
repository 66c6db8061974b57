"""The compile-id page leads with what matters; failed compiles show their user frame and compiler errors."""

import gzip
import json
import os
import re
from html import unescape
from pathlib import Path

import pytest

from compilescope.analyses.compile_summary import runtime_records
from compilescope.ingest.reader import read_trace

from ..browser import browser_page
from ..conftest import TORCH213_PROGRAMS, cuda211, report, shared, torch213, torch213_moved, torch214
from ..gpu_variants import max_autotune_log, with_cudagraph_skip
from ..htmltable import table_rows
from ..tracelog import raw_records


def _text(path) -> str:
    return re.sub(r"<[^>]+>", " ", path.read_text())


def test_failed_compile_shows_its_user_frame(tmp_path):
    # torch logs fail_user_frame_* as null for both: the C++ compile names no line, so the frame it compiled (its
    # stack's) is the place to look; the lowering's failing line is in its reason.
    for name, cell, frame in (("compile_error_fallback", "compiled-frame", "compile_error_fallback.py:18"),
                              ("compile_error_lowering", "failed-at", "compile_error_lowering.py:34")):
        out = tmp_path / name
        report(torch213(f"{name}.log"), out)
        page = (out / "-_0_0_0" / "index.html").read_text()
        metrics = next((out / "-_0_0_0").glob("compilation_metrics_*.html")).read_text()
        for html in (page, metrics):
            assert "None:None" not in html
            user_frame = re.search(rf'id="{cell}">(.*?)</td>', html, re.S).group(1)
            assert frame in user_frame, name
        rows = table_rows((out / "failures_and_restarts.html").read_text())
        assert rows[1][3].endswith(frame), rows[1]  # the Failure Source column


def test_a_restart_torch_could_not_explain_shows_its_graph_break(tmp_path):
    """GPT-2 on an H100: torch logged "Unknown fail_and_restart_analysis" as the restart reason of [1/0] and [1/1],
    yet logged their graph break (transformers' logging call): the row's note (its fifth column) says which. The
    reason cells stay as torch wrote them, as tlparse shows them (a drop-in page)."""
    out = tmp_path / "out"
    report(shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"), out)
    rows = table_rows((out / "failures_and_restarts.html").read_text())[1:]
    unknown = [r for r in rows if r[2].startswith("Unknown fail_and_restart_analysis")]
    assert [r[0] for r in unknown] == ["[1/0_1]", "[1/1_1]"]
    for row in unknown:
        assert row[2] == "Unknown fail_and_restart_analysis"  # the raw log's restart_reasons, whole
        assert "the graph break it logged for this compilation: logging.Logger method not supported" in row[4]
        assert row[4].rstrip().endswith("at modeling_utils.py:4635")
    assert all("the graph break it logged" not in " ".join(r) for r in rows if r not in unknown)


def test_what_we_make_of_a_restart_is_beside_torchs_reason_not_in_it(tmp_path):
    """failures_and_restarts.html is tlparse's page too: its reason cell is torch's restart_reasons entry, as tlparse
    shows it, and our explanation is the row's Note. hf_llama_fixed's raw log: [0/0_1]'s restart_reasons is
    ["<class 'torch._dynamo.exc.TensorifyScalarRestartAnalysis'>"] (dynamic=True's float symbols); stance_deploy's
    four are "Skip calling `torch.compiler.disable()`d function" (log_stats and check_finite, disable'd)."""
    found = {}
    for name in ("hf_llama_fixed", "stance_deploy"):
        report(torch213(f"{name}.log.gz"), tmp_path / name)
        found[name] = table_rows((tmp_path / name / "failures_and_restarts.html").read_text())
    assert found["hf_llama_fixed"][0][4] == "Note"
    [tensorify] = found["hf_llama_fixed"][1:]
    assert tensorify[:3] == ["[0/0_1]", "RestartAnalysis", "<class 'torch._dynamo.exc.TensorifyScalarRestartAnalysis'>"]
    assert tensorify[4].startswith("No graph break") and "specialize_float = True" in tensorify[4]
    disabled = found["stance_deploy"][1:]
    assert [r[0] for r in disabled] == ["[0/0_1]", "[1/0_1]", "[0/1_1]", "[1/1_1]"]
    for row in disabled:
        assert row[2].startswith("Skip calling `torch.compiler.disable()`d function") and "on purpose" not in row[2]
        assert row[4].startswith("At a call of a torch.compiler.disable'd function: it runs eagerly on purpose")


def test_a_compiles_page_shows_its_autotuning_and_cuda_graphs(tmp_path):
    """The real H100 run (max-autotune for [0/0], reduce-overhead for [0/1]), [0/1]'s metrics saying why CUDA graphs
    were skipped: each compile's page says what its searches chose and what became of its graphs."""
    log = max_autotune_log()
    out = tmp_path / "out"
    report(with_cudagraph_skip(log, tmp_path / "dedicated_log_torch_trace_skip.log"), out)
    first, second = (" ".join(_text(out / d / "index.html").split()) for d in ("-_0_0_0", "-_0_1_0"))
    assert "max-autotune addmm 256x2048, 256x512, 512x2048: triton_mm_17 (22.6 µs) of 21 candidates" in first
    assert "needs 262,144 bytes of shared memory, the GPU has 232,448" in first and "CUDA graphs" not in first
    assert ("CUDA graphs skipped: skipping cudagraphs due to mutated inputs (1 instances) at "
            "autotune_cudagraphs.py:13 in forward graph sizes") in second
    assert "max-autotune" not in second


def test_a_compiles_page_says_its_cuda_graph_was_recorded_or_never(tmp_path):
    """compilescope run on an H200 (tests/data/cuda_torch211): [1/0] mutates its input, so torch set its graph up at
    the first call and never recorded it; [0/0] was recorded once."""
    out = tmp_path / "out"
    report(cuda211("cudagraph_skips.log.gz"), out)
    recorded, never = (" ".join(_text(out / d / "index.html").split()) for d in ("-_0_0_0", "-_1_0_0"))
    assert "CUDA graphs recorded 1×: 1.7 ms graph sizes" in recorded
    assert "CUDA graphs set up at its first call, never recorded (the reason is not in the log) graph sizes" in never
    # Recorded again by today's run, whose hook writes torch's first-run warning into the trace: the reason, and where.
    report(cuda211("cudagraph_first_run_skip.log.gz"), tmp_path / "again")
    skipped = " ".join(_text(tmp_path / "again" / "-_1_0_0" / "index.html").split())
    assert ("CUDA graphs skipped at its first run: skipping cudagraphs due to mutated inputs (1 instances) at "
            "cudagraph_skips.py:17 in accumulate acc.add_(x.sin()) graph sizes") in skipped


def test_compile_error_lines_link_to_the_output_code(tmp_path):
    out = tmp_path / "out"
    report(torch213("compile_error_fallback.log"), out)
    page = (out / "-_0_0_0" / "index.html").read_text()
    link = re.search(r'<a class="code-line" href="\.\./(-_0_0_0/inductor_output_code_[^"#]+)#L(\d+)"', page)
    assert link, "no link to the failing line"
    code = (out / link.group(1)).read_text()
    line = re.search(rf'<a id="L{link.group(2)}"', code)
    assert line and int(link.group(2)) == 47
    assert "auto tmp1 = compile error!;" in page
    # The index's error box links to the same line.
    assert f'<a class="code-line" href="{link.group(1)}#L47"' in (out / "index.html").read_text()
    # The compiler's 1,000 lines of warnings are folded, and no text points below at what is above.
    assert re.search(r"<details class=\"full-reason\"><summary>[^<]*1098 lines", page)
    assert "compiler errors below" not in page


def test_no_text_points_below_at_what_is_above(tmp_path):
    # The recompile advice follows the failing guards, on the page and in the terminal.
    from compilescope.analyses.insights.analysis import insights

    with read_trace(str(torch213("recompiles.log"))) as trace:
        (limited,) = [f for f in insights(trace).recompiles.frames if f.hit_limit]
    assert "fix the failing guard above" in limited.advice[0]
    out = tmp_path / "out"
    report(torch213("recompiles.log"), out)
    index = (out / "index.html").read_text()
    assert index.index("n == 4") < index.index("fix the failing guard above")


@pytest.mark.browser
def test_cpp_error_pages_are_short_with_the_error_first(tmp_path):
    out = tmp_path / "out"
    report(torch213("compile_error_fallback.log"), out)
    with browser_page() as page:
        page.set_viewport_size({"width": 1280, "height": 800})
        for name in ("-_0_0_0/index.html", "failures_and_restarts.html"):
            page.goto((out / name).as_uri())
            height = page.evaluate("document.documentElement.scrollHeight")
            assert height < 5000, (name, height)
            error = page.locator("ul.compiler-errors code.status-error").first
            assert "error: ‘compile’ was not declared in this scope" in error.inner_text()
            box = error.bounding_box()
            assert box is not None and box["y"] + box["height"] < 800, (name, box)  # in the first screen
        page.goto((out / "-_0_0_0/index.html").as_uri())
        page.click("a.code-line")
        page.wait_for_load_state()
        assert page.url.endswith("#L47")
        assert page.console_errors == []


def _summary(log: str, out, compile_dir: str = "-_0_0_0") -> tuple[str, str]:
    """A compile page, and its leading table."""
    report(torch213(log), out)
    html = (out / compile_dir / "index.html").read_text()
    return html, html.split('id="compile-summary"', 1)[1].split("<h2>Outputs</h2>", 1)[0]


def test_graph_break_compile_leads_with_reason_time_and_sizes(tmp_path):
    out = tmp_path / "out"
    _, summary = _summary("graph_breaks.log", out, "-_1_0_0")
    # [1/0] restarted at log_step's print (graph_breaks.py:18, README); [1/0_1] compiled the frame.
    assert "Restarted (graph break at line 18): Dynamo compiled the frame again as [1/0_1]" in summary
    assert "Failed to trace builtin operator" in summary and "graph_breaks.py:18" in summary
    assert re.search(r'id="compile-time">\d+(\.\d+)? (s|ms|µs) ', summary)
    ok = (out / "-_4_0_0" / "index.html").read_text()
    assert 'id="graph-sizes">1 operator in the Dynamo graph, ' in ok  # the last resume function's one relu
    # [0/0] split its graph at the data-dependent branch in its one attempt: no [0/0_1], no restart reason.
    first = (out / "-_0_0_0" / "index.html").read_text()
    assert "Compiled: the graph was split (graph break at line 23), without a restart" in first
    assert "Restarted" not in first.split('id="compile-summary"', 1)[1].split("<h2>Outputs</h2>", 1)[0]
    assert not (out / "-_0_0_1").exists()


def test_metrics_lead_and_the_rest_is_folded(tmp_path):
    out = tmp_path / "out"
    html, summary = _summary("provenance.log", out)
    assert "FX graph cache: <strong>forward miss, backward miss</strong>" in summary
    assert "C++ compile" in summary  # times by phase (a CPU run: its output code builds C++ kernels only)
    # compilation_metrics: folded groups, the keys torch left empty apart, not an alphabetical dump up front.
    rest = html.split("<h2>All compilation metrics</h2>", 1)[1]
    assert "<details class=\"metrics-empty\">" in rest and "remote_cache_version" in rest
    assert not re.search(r"<th class=\"mono\">[a-z_]+</th><td><span class=\"muted\">–", html)
    metrics = next((out / "-_0_0_0").glob("compilation_metrics_*.html")).read_text()
    assert 'id="compile-summary"' in metrics  # the same lead as the compile page, then every metric folded
    assert metrics.index('id="compile-summary"') < metrics.index("<details class=\"metrics-group\"><summary>Times")
    assert "<details class=\"metrics-group\" open" not in metrics
    empty_rows = re.findall(r"<th class=\"mono\">([a-z_]+)</th><td><span class=\"muted\">–", metrics)
    assert empty_rows == []


def test_output_code_is_labelled_forward_and_backward(tmp_path):
    out = tmp_path / "out"
    report(torch213("provenance.log"), out)
    html = (out / "-_0_0_0" / "index.html").read_text()
    labels = re.findall(r'inductor_output_code_\w+\.html</a> <span class="badge role">(\w+)</span>', html)
    assert labels == ["forward", "backward"]
    index = (out / "index.html").read_text()
    assert re.findall(r'inductor_output_code_\w+\.html</a> <span class="badge role">(\w+)</span>', index) == labels
    titles = sorted(re.search(r'<h1 class="mono">(\S+ \(\w+\))', p.read_text()).group(1).split()[1]
                    for p in (out / "-_0_0_0").glob("inductor_output_code_*.html"))
    assert titles == ["(backward)", "(forward)"]
    out2 = tmp_path / "inference"
    report(torch213("cache_cold.log"), out2)
    html = (out2 / "-_0_0_0" / "index.html").read_text()
    assert re.findall(r'inductor_output_code_\w+\.html</a> <span class="badge role">(\w+)</span>', html) == ["inference"]


def test_outputs_outside_any_compilation_are_listed_under_tlparses_anchor(tmp_path):
    # The list's id was once the whole Compile object's repr (every metric of it), not "[-/-]".
    report(torch213("cache_warm.log"), tmp_path)
    index = (tmp_path / "index.html").read_text()
    assert '<ul class="artifacts" id="[-/-]">' in index
    assert "Compile(" not in index


GPT2 = "gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """GPT-2 trained on an H100 (torch 2.11): five frames, all of them transformers code, each compiled twice."""
    out = tmp_path_factory.mktemp("gpt2")
    report(shared(GPT2), out)
    return out


def _cell(out, compile_dir: str, cell_id: str) -> str | None:
    """The text of a compile page's summary cell, None when the page has none."""
    found = re.search(rf'<td[^>]* id="{cell_id}">(.*?)</td>', (out / compile_dir / "index.html").read_text(), re.S)
    return unescape(" ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split())) if found else None


def test_graph_sizes_are_the_compiles_own(gpt2):
    """torch logs num_graph_breaks as the process's graph breaks so far: [3/0] (ForCausalLMLoss) compiled whole, with
    no graph break of its own, yet logged 2. ir_count is the bytecode Dynamo traced, not Inductor IR: [4/1] compiled an
    empty graph."""
    from compilescope.analyses.insights.analysis import insights
    from compilescope.ingest.reader import read_trace

    with read_trace(str(shared(GPT2))) as trace:
        breaks = insights(trace).graph_breaks.breaks
        logged = next(e.metrics for e in trace.compiles.values() if str(e.compile_id) == "[3/0]")
    assert logged["num_graph_breaks"] == 2 and not any("[3/0]" in b.compile_ids for b in breaks)
    sizes = _cell(gpt2, "-_3_0_0", "graph-sizes")
    assert "8 operators in the Dynamo graph" in sizes and "graph break" not in sizes
    empty = _cell(gpt2, "-_4_1_0", "graph-sizes")
    assert empty.startswith("0 operators in the Dynamo graph") and "Inductor" not in empty
    # One frame traced again the same way steps through the same bytecode: both compiles of each frame say the same.
    for first, second in (("-_4_0_0", "-_4_1_0"), ("-_3_0_0", "-_3_1_0"), ("-_1_0_1", "-_1_1_1")):
        counts = [re.search(r"(\d+) bytecode instructions traced", _cell(gpt2, d, "graph-sizes")) for d in (first, second)]
        assert counts[0] and counts[1] and counts[0].group(1) == counts[1].group(1), (first, second)


def test_graph_sizes_count_bytecode_and_say_one_thing_in_the_singular(tmp_path):
    # recompiles.py's g(x): `return x * 2 + 1` is seven instructions under Python 3.11 (RESUME, LOAD_FAST, LOAD_CONST,
    # BINARY_OP, LOAD_CONST, BINARY_OP, RETURN_VALUE); Dynamo traced each once.
    report(torch213("recompiles.log"), tmp_path / "recompiles")
    assert _cell(tmp_path / "recompiles", "-_0_0_0", "graph-sizes").endswith("7 bytecode instructions traced")
    # graph_breaks.py's first resume function computes y + 1 from its one input, then breaks at the print.
    out = tmp_path / "breaks"
    report(torch213("graph_breaks.log"), out)
    sizes = _cell(out, "-_1_0_1", "graph-sizes")
    assert sizes.startswith("1 operator in the Dynamo graph, 3 nodes in the Dynamo graph, 1 graph input, "), sizes
    for page in [*out.glob("-_*/index.html"), *(tmp_path / "recompiles").glob("-_*/index.html")]:
        cell = _cell(page.parents[1], page.parent.name, "graph-sizes") or ""
        assert not re.search(r"(?<!\d)1 (operators|nodes|graph inputs|guards|shape-environment guards|bytecode "
                             r"instructions)\b", cell), (page, cell)


# GPT-2's five frames, as the stacks torch logged on starting them end (dynamo_start): each is transformers' code,
# or a dataclass __init__ it generates, that script.py's model call reached.
GPT2_FRAMES = {0: "generic.py:933 in wrapper", 1: "modeling_gpt2.py:647 in forward",
               2: "modeling_utils.py:4627 in loss_function", 3: "loss_utils.py:49 in ForCausalLMLoss",
               4: "<string>:2 in __init__"}


def test_a_compile_page_names_the_library_frame_it_compiled_and_where_the_users_code_called_it(gpt2):
    """Every attempt of every compilation names the frame Dynamo compiled, not the user's line that led there as if it
    were the compiled one ([1/1_0] named gpt2_train.py:13 and [1/1_1] modeling_gpt2.py:647), and then that line."""
    script = shared(GPT2).parent / "script.py"
    call = script.read_text().splitlines()[12].strip()  # line 13 (of script.py, which ran as gpt2_train.py): the call
    pages = sorted(gpt2.glob("-_*/index.html"))
    assert len(pages) == 14
    for page in pages:
        frame_id = int(page.parent.name.split("_")[1])
        cell = _cell(gpt2, page.parent.name, "compiled-frame")
        name = GPT2_FRAMES[frame_id]
        origin = "code generated at run time" if name.startswith("<") else "library code"
        assert re.search(rf"(^|/){re.escape(name)} \({origin}\) called from your code at ", cell), (page, cell)
        assert cell.endswith(f" gpt2_train.py:13 in <module> {call}"), (page, cell)


def test_a_compile_page_of_the_users_own_function_names_it_alone(tmp_path):
    report(torch213("recompiles.log"), tmp_path)
    program = (torch213("recompiles.log").parents[1] / "programs" / "recompiles.py").read_text().splitlines()
    for compile_dir, line in (("-_0_0_0", 24), ("-_0_3_0", 24), ("-_1_4_0", 28)):  # [1/4]: the recompile limit
        cell = _cell(tmp_path, compile_dir, "compiled-frame")
        function = program[line - 1].split("def ", 1)[1].split("(", 1)[0]
        assert cell == f"recompiles.py:{line} in {function}", (compile_dir, cell)


def _raw_stacks(log) -> dict[str, list[tuple[str, int, str]]]:
    """Each compile's directory -> its dynamo_start stack as the raw log writes it: (path, line, function), the paths
    read from the log's interned `str` records."""
    paths: dict[int, str] = {}
    stacks = {}
    for line in gzip.open(log, "rt", encoding="utf-8"):
        if line.startswith(("\t", " ")) or "] {" not in line:
            continue
        record = json.loads(line[line.index("] {") + 2:])
        if "str" in record:
            paths[record["str"][1]] = record["str"][0]
        elif "dynamo_start" in record:
            compile_dir = f"-_{record['frame_id']}_{record['frame_compile_id']}_{record.get('attempt', 0)}"
            stacks[compile_dir] = [(paths[f["filename"]], f["line"], f["name"]) for f in record["dynamo_start"]["stack"]]
    return stacks


_FRAME_ITEM = re.compile(r'<li>(?:<a href="([^"]*)" title="([^"]*)">|<span title="([^"]*)">)([^<]*)</(?:a|span)> '
                         r'<span class="fn"(?: title="[^"]*")?>in ([^<]*)</span>')
_PROGRAM = "/work/main/tests/data/cuda_torch211/programs/train_break_recompile.py"


def _frames_shown(html: str, page: Path, program: str = _PROGRAM) -> list[tuple[str, str, str]]:
    """(path, file:line, function) of each frame a stack list shows. A frame of the user's program (the stack's one
    file outside torch) must link to its source page at the frame's line, and that line's row must be on the written
    page; torch's frames (no page in the report) are not links."""
    shown = []
    for href, link_title, title, where, function in _FRAME_ITEM.findall(html):
        path = unescape(link_title or title).split(": what torch.compile did to this line")[0]
        line = where.rsplit(":", 1)[1]
        if path == program:
            assert unescape(link_title) == f"{path}: what torch.compile did to this line", (page, where)
            target, _, anchor = unescape(href).partition("#")
            assert anchor == f"L{line}" and target.startswith(f"../sources/{os.path.basename(program)}_"), (page, href)
            assert f'id="{anchor}"' in (page.parent / target).read_text(), (page, href)
        else:
            assert not href and title, (page, where)
        shown.append((path, unescape(where), unescape(function)))
    return shown


def test_stack_lists_and_summaries_name_a_line_as_file_and_number_with_its_path_in_the_title(tmp_path):
    """A compile page and its compilation metrics pages listed its stack (and said its compiled frame) in full paths,
    `/work/main/tests/data/cuda_torch211/programs/train_break_recompile.py:42`, two lines each on a phone, where every
    other page says `train_break_recompile.py:42` with the path in the title; the program's frames linked nowhere
    (only a dumped source's did), where the report has the program's source page: each links to its line there.
    Expected from each compile's raw dynamo_start stack."""
    log = cuda211("train_break_recompile.log.gz")
    stacks = _raw_stacks(log)
    assert stacks["-_0_0_0"][:2] == [("/work/main/tests/data/cuda_torch211/programs/train_break_recompile.py", 42, "<module>"),
                                     ("/work/main/tests/data/cuda_torch211/programs/train_break_recompile.py", 33, "main")]
    out = tmp_path / "out"
    report(log, out)
    for compile_dir, stack in stacks.items():
        expected = [(path, f"{os.path.basename(path)}:{n}", function) for path, n, function in stack]
        pages = [out / compile_dir / "index.html", *(out / compile_dir).glob("*compilation_metrics_*.html")]
        assert len(pages) > 1, compile_dir
        for page in pages:
            text = page.read_text()
            listed = text.split("<h2>Stack</h2>", 1)[1].split("</ul></div>", 1)[0]
            assert _frames_shown(listed, page) == expected, page
            assert "/work/main/" not in re.sub(r'(title|href)="[^"]*"', "", listed)
    # The summary's compiled frame: the last frame of the stack, the frame Dynamo compiled (forward at line 20); torch
    # logged [0/0]'s stack once, at its first attempt, and [0/0_1] (the attempt after the restart) compiled that frame.
    path, line, function = stacks["-_0_0_0"][-1]
    assert (line, function) == (20, "forward")
    for page in (out / "-_0_0_1" / "index.html", next((out / "-_0_0_1").glob("compilation_metrics_*.html"))):
        cell = re.search(r'<td id="compiled-frame">(.*?)</td>', page.read_text(), re.S)[1]
        link = re.search(r'<a class="loc mono src-link" href="\.\./(sources/[^"#]+)#L(\d+)" title="([^"]*)">([^<]*)</a>', cell)
        assert link and unescape(link[3]).startswith(f"{path}: ") and link[4] == "train_break_recompile.py:20", cell
        assert int(link[2]) == 20 and 'id="L20"' in (out / link[1]).read_text()


def test_the_compile_time_says_what_it_counts_beyond_torchs_own_figure(tmp_path):
    # GPT-2's [1/0]: its forward compile is 12.12 s (the raw log's compilation_metrics for 1/0, logged once with attempt 1:
    # entire_frame_compile_time_s 12.119754); the page counts its backward too. Both attempts' pages name torch's figure.
    out = tmp_path / "out"
    report(shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"), out)
    for page in ("-_1_0_0", "-_1_0_1"):
        cell = (out / page / "index.html").read_text().split('id="compile-time">', 1)[1].split("</td>", 1)[0]
        seconds = float(cell.split(" s ", 1)[0])  # "12.34 s": over a second, in seconds
        assert seconds > 12.2  # more than the forward alone
        assert "its backward" in cell and "<code>entire_frame_compile_time_s</code>, 12.12 s," in cell, (page, cell)


def test_every_attempt_of_a_recompile_says_why_it_was_compiled(gpt2):
    """script.py's step 4 makes the sequence 96 long, not 64: frames 0, 1, 3 and 4 recompiled ([N/1]). [0/1] and [1/1]
    broke at transformers' logging call and restarted ([0/1_1], [1/1_1]); torch logged the reason with the first
    attempt and the metrics with the restart, and the page the user opens for [1/1] had no 'recompiled because'."""
    for frame in (0, 1, 3, 4):
        attempts = sorted(p.parent.name for p in gpt2.glob(f"-_{frame}_1_*/index.html"))
        assert attempts == ([f"-_{frame}_1_0", f"-_{frame}_1_1"] if frame < 2 else [f"-_{frame}_1_0"])
        for attempt in attempts:
            cell = _cell(gpt2, attempt, "recompile")
            assert cell is not None and cell.startswith("tensor size changed: tensor '"), (attempt, cell)
            assert "size mismatch at index 1. expected 64, actual 96" in cell, (attempt, cell)
        # [N/0] was compiled first: no guard had failed, on any attempt of it.
        firsts = list(gpt2.glob(f"-_{frame}_0_*/index.html"))
        assert firsts and all(_cell(gpt2, p.parent.name, "recompile") is None for p in firsts)


def test_the_report_says_what_its_terms_mean_and_how_a_compile_ended_as_the_diff_says_it(gpt2):
    """A reviewer met '[1/1_1]', 'Stack trie' and 'Caches (cold)' unexplained, and the index counted 'Success with
    restart (e.g., graph break)' (tlparse's legend) where the diff says 'compiled after a restart'
    (tests/diff/test_diff.py)."""
    index = (gpt2 / "index.html").read_text()
    cards = [unescape(label) for label in re.findall(r'<div class="l">([^<]*)</div>', index)]
    # The raw log's compilation_metrics: [3/0], [3/1] plain; [1/0_1], [1/1_1] with restart_reasons and 203, 220 ops;
    # [0/0], [1/0], [2/0], [0/1], [1/1] restarted (dynamo_start, no metrics).
    assert "compiled (2 after a restart)" in cards and "restarted attempts" in cards
    assert not [c for c in cards if "Success" in c]
    # tlparse's names stay where its users look for them: the stack trie's legend, each in its tooltip.
    legend = index.split('<p class="legend">', 2)[2].split("</p>", 1)[0]
    assert "(tlparse: Success with restart (e.g., graph break))" in unescape(legend)
    # The first compile id the page shows (in its findings) comes after the sentence that reads one.
    help_at = index.index('id="compile-id-help"')
    assert help_at < index.index("[1/1]") and help_at < index.index('id="insights-findings"')
    assert re.search(r'<a class="mono" href="#\[1/1_1\]" title="frame 1 \(a function Dynamo compiled\), compile 1 '
                     r'\(a recompile: a guard of an earlier compile failed\), attempt 1 \(Dynamo restarted', index)
    trie = index.split('<h2 id="stack-trie">', 1)[1]
    assert "(a trie)" in trie.split("</p>", 1)[0]
    # The log was written with a fresh Inductor cache (the traces' README): every lookup missed.
    caches = index.split('<h3 id="insights-caches">', 1)[1]
    assert caches.startswith("Caches (cold)</h3>")
    assert _text_of(caches.split('id="caches-overall">', 1)[1].split("</p>", 1)[0]).startswith(
        "Cold: every cache lookup missed")
    # The restart [1/1_1]'s page: how it ended in the index's words, and what its id says.
    page = (gpt2 / "-_1_1_1" / "index.html").read_text()
    assert re.search(r'<h1>Compile \[1/1_1\] <span class="status status-break" title="Dynamo restarted its analysis[^"]*">'
                     r"compiled after a restart</span></h1>", page)
    words = _text_of(page.split('id="compile-id-words">', 1)[1].split("</p>", 1)[0])
    assert words.startswith("[1/1_1]: frame 1 (a function Dynamo compiled), compile 1 (a recompile") and "attempt 1" in words


def _text_of(html: str) -> str:
    return unescape(" ".join(re.sub(r"<[^>]+>", " ", html).split()))


def test_the_index_says_why_a_compilations_total_is_more_than_its_timeline_row(tmp_path):
    """hf_gpt2_generate (an H200 run): the timeline draws [0/0] apart from the benchmarking after it, so its row is
    shorter than its total in the slowest compilations; the note under that table says so, with both numbers as the
    page shows them. Where each compilation is one row (recompiles.log, on a CPU), there is no note."""
    out = tmp_path / "hf"
    report(cuda211("hf_gpt2_generate.log.gz"), out)
    index = (out / "index.html").read_text()
    note = _text_of(index.split('id="totals-note">', 1)[1].split("</p>", 1)[0])
    m = re.search(r"\): (\[0/0\]) took (.+?) in all, its longest row (.+?)\.$", note)
    assert m, note
    timeline = table_rows(index.split('id="timeline-chart">', 1)[1].split("</table>", 1)[0])
    row = next(r for r in timeline if r[0] == "[0/0]")
    slowest = table_rows(index.split('<table class="slowest">', 1)[1].split("</table>", 1)[0])
    assert slowest[1][0] == "[0/0]"  # the slowest compilation, after the header
    assert (m.group(2), m.group(3)) == (slowest[1][2], row[-1])
    assert m.group(2) != m.group(3)
    report(torch213("recompiles.log"), tmp_path / "cpu")
    assert 'id="totals-note"' not in (tmp_path / "cpu" / "index.html").read_text()


def _raw_metric_stacks(log) -> dict[str, list[tuple[str, int, str]]]:
    """Each compile's directory -> the stack_trace of its compilation_metrics record as the raw log writes it,
    (path, line, function): torch/_dynamo/convert_frame.py formats each frame "Line: N, Name: F, Filename: P"."""
    stacks = {}
    for line in gzip.open(log, "rt", encoding="utf-8"):
        if "] {" not in line or '{"compilation_metrics": ' not in line:
            continue
        record = json.loads(line[line.index("] {") + 2:])
        compile_dir = f"-_{record['frame_id']}_{record['frame_compile_id']}_{record.get('attempt', 0)}"
        frames = [re.fullmatch(r"Line: (\d+), Name: (.*?), Filename: (.*)", s) for s in record["compilation_metrics"]["stack_trace"]]
        stacks[compile_dir] = [(m[3], int(m[1]), m[2]) for m in frames if m]
        assert len(stacks[compile_dir]) == len(frames)
    return stacks


def test_the_stack_trace_metric_names_each_line_as_file_and_number_with_its_path_in_the_title(tmp_path):
    """The metrics tables of a compile page and of its compilation metrics page showed stack_trace as torch logs it,
    ["Line: 42, Name: <module>, Filename: /work/main/tests/data/cuda_torch211/programs/train_break_recompile.py", ...],
    where the page's Stack says `train_break_recompile.py:42 in <module>`, the path in its title. Expected from each
    compilation_metrics record of the raw log."""
    log = cuda211("train_break_recompile.log.gz")
    stacks = _raw_metric_stacks(log)
    program = _PROGRAM
    # [0/0] restarted at the graph break: the record is its second attempt's, [0/0_1]. Frame 0 is forward (line 20),
    # frame 1 the function Dynamo resumes in after the break (line 22); each recompiled once.
    assert sorted(stacks) == ["-_0_0_1", "-_0_1_1", "-_1_0_0", "-_1_1_0"]
    assert stacks["-_0_0_1"][0] == (program, 42, "<module>") and stacks["-_0_0_1"][-1] == (program, 20, "forward")
    assert stacks["-_1_0_0"][-1] == (program, 22, "torch_dynamo_resume_in_forward_at_22")
    out = tmp_path / "out"
    report(log, out)
    for compile_dir, stack in stacks.items():
        expected = [(path, f"{os.path.basename(path)}:{n}", function) for path, n, function in stack]
        pages = [out / compile_dir / "index.html", *(out / compile_dir).glob("compilation_metrics_[0-9]*.html")]
        assert len(pages) == 2, compile_dir
        for page in pages:
            row = re.search(r'<tr><th class="mono">stack_trace</th><td>(.*?)</td></tr>', page.read_text(), re.S)
            assert row, page
            assert _frames_shown(row[1], page) == expected, page
            assert "Line: " not in row[1] and "/work/main/" not in re.sub(r'(title|href)="[^"]*"', "", row[1])


def _raw_tracebacks(log: Path) -> dict[str, list[str]]:
    """Each compile's directory -> the exception_stack_trace of its compilation_metrics record, where it has one."""
    found = {}
    for line in (gzip.open(log, "rt", encoding="utf-8") if log.suffix == ".gz" else open(log, encoding="utf-8")):
        if "] {" not in line or '{"compilation_metrics": ' not in line:
            continue
        record = json.loads(line[line.index("] {") + 2:])
        value = record["compilation_metrics"].get("exception_stack_trace")
        if value:
            found[f"-_{record['frame_id']}_{record['frame_compile_id']}_{record.get('attempt', 0)}"] = value
    return found


# Python's traceback: a frame is a line indented two spaces (its code four); the exception's lines start unindented.
_RAW_FRAME = re.compile(r'^  File "([^"]+)", line (\d+), in (.+)$', re.M)
_CHAINED = re.compile(r"\n\n(The above exception was the direct cause of the following exception:)\n\n")


def _raw_chain(text: str) -> list[tuple[list[tuple[str, str, str]], str, str | None]]:
    """(frames as (path, file:line, function), the exception's message, the sentence to the next) of each exception."""
    pieces = _CHAINED.split(text)
    chain = []
    for i in range(0, len(pieces), 2):
        head, body = pieces[i].split("\n", 1)
        assert head == "Traceback (most recent call last):"
        frames_text, exception = re.split(r"\n(?=\S)", body, maxsplit=1)
        frames = [(p, f"{os.path.basename(p)}:{n}", f) for p, n, f in _RAW_FRAME.findall(frames_text)]
        chain.append((frames, exception.rstrip("\n"), pieces[i + 1] if i + 1 < len(pieces) else None))
    return chain


def _messages_shown(html: str) -> list[str]:
    """The text of each exception's message a traceback shows (its first line marked as code)."""
    return [unescape(re.sub(r"</?code>", "", m)) for m in re.findall(r'<pre class="tb-message">(.*?)</pre>', html, re.S)]


def _traceback_row(page: Path) -> str:
    return re.search(r'<tr><th class="mono">exception_stack_trace</th><td>(.*?)</td></tr>', page.read_text(), re.S)[1]


@pytest.mark.parametrize("here", [True, False], ids=["program_here", "program_elsewhere"])
def test_the_exception_stack_trace_metric_shows_frames_and_the_exception_the_users_frame_linked(here, tmp_path):
    """A failed compile's exception_stack_trace was shown raw: a JSON list of one traceback string of 147 lines, on the
    compile page cut to its head. Now as Python reads: its frames as the Stack's (`file.py:29 in f`, the path in its
    title, the program's frame linked to its line on the source page), then the exception's message (its 49 lines: it
    quotes the IR that failed to lower); the text as logged folded below (on the compile page: on the metrics page,
    which has it). Expected from the raw record: torch logs [traceback.format_exc()]. The message quotes `File` lines
    of its own (Inductor's "Found from :"), which are no frames. The frame links to its line whether the program is on
    this machine (a copy of the log whose paths name this checkout's) or not (the page shows the line the traceback
    quotes: line 29, not the gap from line 1 that holds it)."""
    log = torch213("compile_error_lowering.log")
    program = "/work/main/tests/data/torch213/programs/compile_error_lowering.py"
    [(compile_dir, [text])] = _raw_tracebacks(log).items()
    [(frames, exception, then)] = _raw_chain(text)
    assert len(frames) == 35 and frames[-1] == (program, "compile_error_lowering.py:29", "_boom_lowering")
    assert exception.startswith("torch._inductor.exc.InductorError: LoweringException: NotImplementedError: ")
    assert exception.count("\n") + 1 == 49 and exception.endswith("return boom(y) + 1  # lowering fails here\n           " + "^" * 34)
    assert 'File "/work/main/tests/data/torch213/programs/compile_error_lowering.py", line 34, in f' in text
    programs = TORCH213_PROGRAMS if here else tmp_path / "gone"
    moved = torch213_moved(log.name, tmp_path, programs)
    program = f"{programs}/{os.path.basename(program)}"
    [(compile_dir, [text])] = _raw_tracebacks(moved).items()
    [(frames, exception, then)] = _raw_chain(text)
    assert len(frames) == 35 and frames[-1] == (program, "compile_error_lowering.py:29", "_boom_lowering")
    out = tmp_path / "out"
    report(moved, out)
    [metrics] = (out / compile_dir).glob("compilation_metrics_[0-9]*.html")
    for page in (metrics, out / compile_dir / "index.html"):
        row = _traceback_row(page)
        assert _frames_shown(row, page, program) == frames, page
        assert _messages_shown(row) == [exception]
        assert [unescape(x) for x in re.findall(r'<pre class="tb-message"><code>([^<]*)</code>', row)] == [
            exception.split("\n", 1)[0]]
        assert "Traceback (most recent call last)" not in re.sub(r"<pre>.*?</pre>", "", row, flags=re.S)
    # The whole text, once: folded on the metrics page; the compile page links there.
    assert [unescape(x) for x in re.findall(r"<pre>(.*?)</pre>", _traceback_row(metrics), re.S)] == [text]
    assert f'href="../{compile_dir}/{metrics.name}"' in _traceback_row(out / compile_dir / "index.html")


def test_a_chained_exception_stack_trace_shows_each_exception_in_pythons_order(tmp_path):
    """Compiled autograd on torch 2.14 (tests/data/torch214/differs): Dynamo's ObservedTypeError, then, 'The above
    exception was the direct cause of the following exception:', the Unsupported that failed the compile; each
    exception's frames, its message and the sentence between them, as in the raw record. The Unsupported's message
    says what to do after its first line ('Explanation:', two 'Hint:' lines): shown whole, not only in the text as
    logged."""
    log = torch214("compiled_autograd.log").parent.parent / "differs" / "compiled_autograd.log.gz"
    tracebacks = _raw_tracebacks(log)
    assert len(tracebacks) == 3
    out = tmp_path / "out"
    report(log, out)
    for compile_dir, [text] in tracebacks.items():
        chain = _raw_chain(text)
        assert [len(c) > 0 for c, _, _ in chain] == [True, True] and chain[0][2]
        [metrics] = (out / compile_dir).glob("compilation_metrics_[0-9]*.html")
        row = _traceback_row(metrics)
        # In order: the first exception's frames, its line, the sentence, the second's frames, its line.
        pieces = re.split(r'<div class="tb-exception">|<p class="muted tb-then">', row)
        assert len(pieces) == 4, compile_dir
        assert _frames_shown(pieces[0], metrics) == chain[0][0] and _frames_shown(pieces[2], metrics) == chain[1][0]
        assert _messages_shown(pieces[1]) == [chain[0][1]] and "\n" not in chain[0][1]
        assert unescape(pieces[2].split("</p>", 1)[0]) == chain[0][2]
        assert _messages_shown(pieces[3]) == [chain[1][1]]
        assert chain[1][1].startswith("torch._dynamo.exc.Unsupported: Observed exception\n  Explanation: Dynamo found")
        assert chain[1][1].count("\n  Hint: ") == 2


def test_a_message_quoting_a_compilers_output_is_cut_the_rest_in_the_text_as_logged(tmp_path):
    """compile_error_fallback.log: the C++ compile of [0/0]'s kernel fails; Inductor's CppCompileError quotes the
    compiler's output, over a thousand lines after its first. The traceback shows its first 60 (MESSAGE_LINES_SHOWN),
    then says how many more the text as logged holds (folded below it on the metrics page)."""
    from compilescope.render.html.rows import MESSAGE_LINES_SHOWN

    log = torch213("compile_error_fallback.log")
    [(compile_dir, [text])] = _raw_tracebacks(log).items()
    [(_, exception, _)] = _raw_chain(text)
    lines = exception.split("\n")
    assert lines[0] == "torch._inductor.exc.InductorError: CppCompileError: C++ compile error" and len(lines) > 1000
    out = tmp_path / "out"
    report(log, out)
    [metrics] = (out / compile_dir).glob("compilation_metrics_[0-9]*.html")
    row = _traceback_row(metrics)
    assert _messages_shown(row) == ["\n".join(lines[:MESSAGE_LINES_SHOWN])]
    assert f"and {len(lines) - MESSAGE_LINES_SHOWN} more lines of its message, in the text as logged" in row
    assert [unescape(x) for x in re.findall(r"<pre>(.*?)</pre>", row, re.S)] == [text]


def test_a_runtime_metrics_page_leads_with_its_timings_and_says_which_record_it_is(tmp_path):
    # autotune_cudagraphs logs two compilation_metrics_runtime records of "0/1", both is_forward true: the first
    # with runtime_triton_autotune_time_us 73081 and runtime_cudagraphify_time_us 4464 (duration_us 77545), the
    # second with runtime_cudagraphify_time_us 334 only. They were two pages alike, the timings folded in "Times".
    out = tmp_path / "out"
    report(shared("gpu-torch211/autotune_cudagraphs"), out)
    pages = sorted((out / "-_0_1_0").glob("compilation_metrics_runtime_*.html"), key=lambda p: int(p.stem.rpartition("_")[2]))
    assert len(pages) == 2
    first, second = (p.read_text(encoding="utf-8") for p in pages)
    assert re.search(r"<h1>Runtime compilation metrics <a [^>]*>\[0/1\]</a>: forward, record 1 of 2</h1>", first)
    assert re.search(r"<h1>Runtime compilation metrics <a [^>]*>\[0/1\]</a>: forward, record 2 of 2</h1>", second)

    def timings(page: str) -> list[list[str]]:
        table = page[page.index('<table class="kv" id="runtime-timings">'):]
        assert table.index("</table>") < table.index("<details")  # shown open, before the folded groups
        return table_rows(table[:table.index("</table>") + 8])

    assert timings(first) == [["CUDA-graph set-up", "4.5 ms"], ["Triton autotuning", "73 ms"], ["in all", "78 ms"]]
    assert timings(second) == [["CUDA-graph set-up", "334 µs"]]


def test_a_backward_runtime_metrics_page_says_backward():
    # gpt2_train: [1/0] logs a compilation_metrics_runtime (is_forward true) and a bwd_compilation_metrics_runtime.
    log = next(shared("gpu-torch211/gpt2_train/output.txt").parent.glob("dedicated_log_torch_trace*.log"))
    with read_trace(str(log)) as trace:
        entry = next(e for e in trace.compiles.values() if str(e.compile_id) == "[1/0]")
        records = runtime_records(entry)
        headings = [(a.kind, records[a.number].heading) for a in entry.artifacts if "metrics_runtime" in a.kind]
    assert headings == [
        ("compilation_metrics_runtime", "forward"), ("bwd_compilation_metrics_runtime", "backward")]


def test_runtime_metrics_filed_under_a_restarted_attempt_are_shown_as_the_compiled_attempts(tmp_path):
    """gpt2_train's compilation_metrics_runtime and bwd_compilation_metrics_runtime records name their compile "1/1",
    without an attempt (log lines 54322 and 61955), so they are filed, as tlparse files them, under [1/1], the attempt
    restarted after a graph break; [1/1_1] compiled the graph that ran. compile_directory.json keeps them under [1/1];
    the pages say they are [1/1_1]'s. [3/0] compiled at its first attempt: its records are its own, with no note."""
    out = tmp_path / "out"
    report(shared(GPT2), out)
    directory = json.loads((out / "compile_directory.json").read_text())
    assert [a["name"] for a in directory["[1/1]"]["artifacts"] if "metrics_runtime" in a["name"]] == [
        "compilation_metrics_runtime_2.html", "bwd_compilation_metrics_runtime_1.html"]
    restarted, compiled = ((out / d / "index.html").read_text() for d in ("-_1_1_0", "-_1_1_1"))
    note = re.search(r'<p id="runtime-records-owner">(.*?)</p>', restarted, re.S)
    assert note and 'href="../-_1_1_1/index.html">[1/1_1]</a>, the attempt that compiled' in note[1]
    assert 'href="../-_1_1_0/compilation_metrics_runtime_2.html"' in note[1]
    assert 'href="../-_1_1_0/bwd_compilation_metrics_runtime_1.html"' in note[1]
    listed = re.findall(r'<li class="runtime-record-elsewhere"><a href="([^"]+)">', compiled)
    assert listed == ["../-_1_1_0/compilation_metrics_runtime_2.html", "../-_1_1_0/bwd_compilation_metrics_runtime_1.html"]
    for name, direction in (("compilation_metrics_runtime_2", "forward"), ("bwd_compilation_metrics_runtime_1", "backward")):
        page = (out / "-_1_1_0" / f"{name}.html").read_text()
        assert re.search(r'<h1>Runtime compilation metrics <a href="../-_1_1_1/index.html" class="mono">\[1/1_1\]</a>: '
                         + direction + "</h1>", page)
        assert re.search(r'id="runtime-record-filed-under">Filed under <a href="index.html" class="mono">\[1/1\]</a>', page)
    own = (out / "-_3_0_0" / "index.html").read_text()
    assert "runtime-records-owner" not in own and "runtime-record-elsewhere" not in own
    [own_record] = (out / "-_3_0_0").glob("compilation_metrics_runtime_*.html")
    assert re.search(r'<h1>Runtime compilation metrics <a href="index.html" class="mono">\[3/0\]</a>', own_record.read_text())


def test_a_wrapped_exception_the_message_names_is_said_once(tmp_path):
    """The raw logs: compile_error_fallback's [0/0] fails with fail_type InductorError, fail_reason "CppCompileError:
    C++ compile error…"; compile_error_lowering's with "LoweringException: NotImplementedError: …". The page said
    "InductorError (CppCompileError): CppCompileError: C++ compile error": the wrapped exception once, in the message
    that starts with it, on the compile's page and the report's Errors section alike."""
    for name in ("compile_error_fallback", "compile_error_lowering"):
        log = torch213(f"{name}.log")
        (metrics,) = [env["compilation_metrics"] for env, _ in raw_records(log) if "compilation_metrics" in env]
        inner = metrics["fail_reason"].split(":", 1)[0]
        assert metrics["fail_type"] == "InductorError" and inner in ("CppCompileError", "LoweringException")
        out = tmp_path / name
        report(log, out)
        reason = _text_of(re.search(r'id="reason">(.*?)</td>', (out / "-_0_0_0" / "index.html").read_text(), re.S)[1])
        assert reason.startswith(f"InductorError : {inner}: "), reason
        assert reason.count(inner) == 1, reason
        errors = (out / "index.html").read_text().split('id="insights-errors"', 1)[1].split("</div>", 1)[0]
        assert _text_of(errors).count(inner) == 0  # (its message, on the next line, names it)


def _text_of(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())

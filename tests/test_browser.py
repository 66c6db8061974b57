"""The report in a real browser: it opens offline, without errors, and its links lead somewhere."""

import pytest

from compilescope.ingest.reader import read_trace

from .browser import LAPTOP, PHONE, browser_page, pages_wider_than_the_window
from .conftest import cuda211, peer, report, run_cli, shared, torch213, torch213_moved

pytestmark = pytest.mark.browser


def test_click_through_index_compile_artifact(tmp_path):
    out = tmp_path / "out"
    report(peer("simple.log"), out)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        assert page.title().startswith("compilescope")
        page.click("a.cid >> text=[0/0]")
        page.wait_for_load_state()
        assert page.url.endswith("-_0_0_0/index.html")
        assert "Compile [0/0]" in page.inner_text("h1")
        page.click("text=/inductor_output_code_.*html/")
        page.wait_for_load_state()
        assert "inductor_output_code" in page.url
        # Line anchors, and code coloured in the browser by the bundled Prism.
        assert page.locator("td.ln a#L1").count() == 1
        page.wait_for_selector("code.language-python .token.keyword")
        assert page.locator("code .token").count() > 10
        page.go_back()
        page.click("text=/compilation_metrics_.*html/")
        page.wait_for_load_state()
        assert "Compilation metrics" in page.inner_text("h1")
        assert page.console_errors == []
        assert page.external_requests == []


def test_failures_page_and_stack_links(tmp_path):
    out = tmp_path / "out"
    report(torch213("graph_breaks.log"), out)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        page.click("header >> text=failures & restarts")
        page.wait_for_load_state()
        rows = page.locator("#failures tbody tr")
        assert rows.count() >= 3
        first = rows.nth(0).locator("a")
        first.click()
        page.wait_for_load_state()
        assert "compilation_metrics" in page.url
        assert page.console_errors == []
        assert page.external_requests == []


def test_no_page_of_a_real_gpu_report_runs_off_the_side(tmp_path):
    """GPT-2 on an H100: kernel names of 100+ characters, site-packages paths and a metric (triton_kernel_compile_times_us)
    of one unbroken line wrap, at a laptop's width with every metrics group open and at a phone's, so no page scrolls
    sideways (its kernels pages pushed the user's code off the page). Each page also loads cleanly."""
    out = tmp_path / "out"
    report(shared("gpu-torch211/gpt2_train/dedicated_log_torch_trace_7r9zxwnl.log"), out)
    assert len(list(out.rglob("*.html"))) > 50
    assert len(list(out.rglob("inductor_output_code_*.html"))) > 5
    with browser_page() as page:
        assert pages_wider_than_the_window(page, out) == []
        assert not page.console_errors and not page.external_requests


def test_no_page_of_other_real_reports_runs_off_the_side(tmp_path):
    """The pages gpt2_train lacks: a user's source file and the failures of graph_breaks.log, a diff, the landing
    page of a multi-rank run (a table of ranks, a chart of their compile times) and a runtime page (kernel names of
    100+ characters), at a phone's width and a laptop's."""
    single, diff, ranks, runtime = (tmp_path / name for name in ("single", "diff", "ranks", "runtime"))
    report(torch213("graph_breaks.log"), single)
    # diff exits 1: the second run breaks a graph the first did not.
    assert run_cli("diff", torch213("diff_base.log.gz"), torch213("diff_break.log.gz"), "-o", diff, "--no-browser") == 1
    assert run_cli(torch213("x").parents[1] / "multi_rank", "-o", ranks, "--no-browser") == 0
    gpu = shared("gpu-torch211/profile_compiled")
    report(gpu / "dedicated_log_torch_trace_735v34qb.log", runtime, "--profile", gpu / "profile_compiled.json")
    assert list((single / "sources").glob("*.html")) and (single / "failures_and_restarts.html").exists()
    assert (ranks / "index.html").exists() and (runtime / "runtime.html").exists()
    with browser_page() as page:
        wide = [f"{out.name}: {p}" for out in (single, diff, ranks, runtime) for p in pages_wider_than_the_window(page, out)]
        assert wide == []
        assert not page.console_errors and not page.external_requests


def _card_colours(page, colour: str = "--error") -> list[tuple[str, bool]]:
    """(label, whether its count is drawn in the page's error colour, or another of its colours) of each card at the
    top of the index."""
    return page.evaluate("""colour => {
        const probe = document.createElement('span');
        probe.style.color = `var(${colour})`;
        document.body.append(probe);
        const error = getComputedStyle(probe).color;
        return Array.from(document.querySelectorAll('.cards .card')).map(card => [
            card.querySelector('.l').innerText,
            getComputedStyle(card.querySelector('.n a') || card.querySelector('.n')).color === error]);
    }""", colour)


def test_the_cards_say_in_red_that_the_program_crashed_or_a_compile_failed(tmp_path):
    """A bad card's count is a link, and the link's colour hid the red: a segfaulted run's cards all read as
    counts, the crash last, after the parse problems. The crash card comes first and red; a compile that failed
    (recompile limit) makes the failures card red; restarts after graph breaks alone do not."""
    outs = {name: tmp_path / name for name in ("crash", "failed", "breaks")}
    report(torch213("native_crash.log.gz"), outs["crash"])  # segfaulted in [0/0]'s compiled code
    report(torch213("recompiles.log"), outs["failed"])  # [1/4] fails: the recompile limit
    report(torch213("graph_breaks.log"), outs["breaks"])  # three restarts, no compile failed
    with browser_page() as page:
        cards = {}
        for name, out in outs.items():
            page.goto((out / "index.html").as_uri())
            cards[name] = dict(_card_colours(page))
            if name == "crash":
                first = page.locator(".cards .card").first
                assert first.inner_text().split() == ["1", "crashed:", "Segmentation", "fault"]
        assert not page.console_errors and not page.external_requests
    assert cards["crash"]["crashed: Segmentation fault"] and not cards["crash"]["failures & restarts"]
    assert cards["failed"]["failures & restarts"] and cards["failed"]["failed"]
    assert not cards["breaks"]["failures & restarts"] and not cards["breaks"]["parse problems"]


def test_a_crashed_runs_compiles_are_not_counted_in_green(tmp_path):
    """native_crash's [0/0] compiled, and the program then died of SIGSEGV running its compiled code: its card read
    '1 Success' in green beside the red crash. It says 'compiled' as the terminal does ("[0/0]'s compiled code"), in
    the cards' neutral colour; a run that did not crash counts its compiles in green."""
    outs = {name: tmp_path / name for name in ("crash", "breaks")}
    report(torch213("native_crash.log.gz"), outs["crash"])
    report(torch213("graph_breaks.log"), outs["breaks"])  # [4/0], the last resume function, compiled whole
    with browser_page() as page:
        cards = {}
        for name, out in outs.items():
            page.goto((out / "index.html").as_uri())
            cards[name] = dict(_card_colours(page, "--ok"))
        assert not page.console_errors and not page.external_requests
    assert "Success" not in cards["crash"] and cards["crash"]["compiled"] is False
    # graph_breaks compiled 5 (3 of them after a restart: the raw log's metrics with restart_reasons)
    assert cards["breaks"]["compiled (3 after a restart)"] is True


def test_on_a_phone_each_timeline_row_is_one_line(tmp_path):
    """hf_gpt2_generate (an H200 run) times 28 autotuning benchmarks, each a timeline row labelled
    `[0/0] CachingAutotuner.benchmark_all_configs`: at a phone's width the label wrapped to four lines, and the
    timeline ran to several screens. The label is cut, its compile id kept, the whole of it its title."""
    out = tmp_path / "out"
    report(cuda211("hf_gpt2_generate.log.gz"), out)
    with browser_page() as page:
        page.set_viewport_size({"width": PHONE, "height": 900})
        page.goto((out / "index.html").as_uri())
        rows = page.evaluate("""() => Array.from(document.querySelectorAll('#timeline-chart td.lbl a')).map(a => [
            a.title, a.innerText, a.closest('tr').getBoundingClientRect().height, a.getBoundingClientRect().width])""")
        assert not page.console_errors and not page.external_requests
    one_line = rows[0][2]  # [0/0]'s row: a label of five characters
    assert rows[0][1] == "[0/0]"
    benchmarks = [r for r in rows if r[0].endswith(" CachingAutotuner.benchmark_all_configs")]
    assert len(benchmarks) > 20
    assert [r for r in rows if r[2] > one_line] == []
    assert all(r[3] > rows[0][3] for r in benchmarks)  # wider than "[0/0]" alone: the compile id shows


def test_on_a_phone_a_recompile_table_without_locations_gives_the_guard_the_room(tmp_path):
    """multi_rank_runtime's rank 0 (a peer log): `inner` recompiles three times for a different `fn`, object-identity
    guards torch logged no line of code for, of a frame whose code is torch's (external_utils.py). A column saying
    "location not in the log" on every row narrowed its guards to a word a line at a phone's width: it is left out.
    recompiles.log's `g` keeps its column: its size guard is placed where the compile first used x."""
    tables = {}
    for name, log in (("peer", shared("peer-tlparse/inputs/multi_rank_runtime/dedicated_log_torch_trace_rank_0.log")),
                      ("torch213", torch213("recompiles.log"))):
        out = tmp_path / name
        report(log, out)
        with browser_page() as page:
            page.set_viewport_size({"width": PHONE, "height": 900})
            page.goto((out / "index.html").as_uri())
            tables[name] = page.evaluate("""() => Array.from(document.querySelectorAll('.recompile-frame')).map(frame => {
                const table = frame.querySelector('table.recompile-steps');
                return [frame.querySelector('strong').innerText,
                        Array.from(table.querySelectorAll('th')).map(th => th.innerText),
                        Array.from(table.querySelectorAll('tbody tr')).map(tr => tr.cells[2].getBoundingClientRect().width
                                                                             / table.getBoundingClientRect().width)];
            })""")
            assert not page.console_errors and not page.external_requests
    [(name, headers, shares)] = tables["peer"]
    assert (name, headers) == ("inner", ["recompile", "what changed", "failed guard"])
    # With the column each guard had a fifth of the width: a guard of 70 characters stood 280 px high.
    assert len(shares) == 3 and min(shares) > 0.35
    by_name = {name: headers for name, headers, _ in tables["torch213"]}
    assert by_name["g"] == by_name["h"] == ["recompile", "what changed", "failed guard", "where"]


def test_a_cell_of_code_starts_on_the_line_of_the_text_beside_it(tmp_path):
    """A cell of code (12.5 px monospace: a function, a file name) beside cells of text (14 px) sat at the top of
    its row, its line a few pixels above theirs (the slowest compilations, the demo's examples, a rank's log)."""
    out = tmp_path / "out"
    report(torch213("graph_breaks.log"), out)
    with browser_page() as page:
        page.goto((out / "index.html").as_uri())
        # An empty inline-block's bottom is its line's baseline: one in each cell says where that cell's line is.
        baselines = page.evaluate("""() => Array.from(document.querySelectorAll('table.slowest tbody tr')).map(tr =>
            Array.from(tr.cells).map(td => {
                const probe = document.createElement('span');
                probe.style.cssText = 'display:inline-block;width:0;height:0';
                td.prepend(probe);
                return probe.getBoundingClientRect().bottom;
            }))""")
        assert not page.console_errors and not page.external_requests
    assert len(baselines) >= 3
    assert [row for row in baselines if max(row) - min(row) > 0.5] == []


def test_the_first_line_of_coloured_code_starts_where_the_others_do(tmp_path):
    """The max-autotune compile of the H100 log: its generated code begins, in the raw log, with `# AOT ID:
    ['0_forward']` then `from ctypes import c_void_p, c_long, c_int`, both at column 0. The <code> inside the <pre>
    had a padding of its own, which indents an inline element's first line only: line 1 sat 10 px right of line 2."""
    out = tmp_path / "out"
    report(shared("gpu-torch211/autotune_cudagraphs/dedicated_log_torch_trace__3sg__9v.log"), out)
    (code_page,) = (out / "-_0_0_0").glob("inductor_output_code_*.html")
    with browser_page() as page:
        page.goto(code_page.as_uri())
        page.wait_for_selector("code.language-python .token")  # coloured: Prism has rewritten the lines
        # The left edge of the first character of lines 1 and 2, and their text.
        lines = page.evaluate("""() => {
            const code = document.querySelector('.code td.src code');
            const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
            const starts = [], range = document.createRange();
            let node, lineStart = true, text = '';
            while ((node = walker.nextNode()) && starts.length < 2) {
                for (let i = 0; i < node.data.length && starts.length < 2; i++) {
                    if (lineStart && node.data[i] !== '\\n') {
                        range.setStart(node, i); range.setEnd(node, i + 1);
                        starts.push(range.getBoundingClientRect().left);
                    }
                    lineStart = node.data[i] === '\\n';
                }
            }
            return {starts, text: code.textContent.split('\\n').slice(0, 2)};
        }""")
        assert not page.console_errors and not page.external_requests
    assert lines["text"] == ["# AOT ID: ['0_forward']", "from ctypes import c_void_p, c_long, c_int"]
    first, second = lines["starts"]
    assert abs(first - second) < 0.5


def test_on_a_phone_the_dynamic_shapes_show_the_guards_of_a_line_and_fold_the_rest(tmp_path):
    """hf_gpt2_generate: 22 guards on sizes, most of them logged with an empty user stack (no user code was running).
    Each was a table row of its own ("location not in the log"), among 32 rows: at a phone's width the section ran
    three screens, and the sections below it far down the page. The guards of a line show, grouped by it; the others,
    and the table of every event, are folded, and are still in the page."""
    out = tmp_path / "out"
    report(cuda211("hf_gpt2_generate.log.gz"), out)
    with read_trace(str(cuda211("hf_gpt2_generate.log.gz"))) as trace:
        guards = [(g["expr"], bool(g.get("user_stack"))) for e in trace.sorted_compiles() for g in e.guards_added]
    with browser_page() as page:
        page.set_viewport_size({"width": PHONE, "height": 844})
        page.goto((out / "index.html").as_uri())
        section = """() => {
            const box = document.querySelector('.insights .dynamic-shapes');
            return [Array.from(box.querySelectorAll('code')).filter(c => c.checkVisibility()).map(c => c.innerText),
                    box.textContent, box.getBoundingClientRect().height];
        }"""
        shown, text, height = page.evaluate(section)
        page.evaluate("document.querySelectorAll('.dynamic-shapes details').forEach(d => { d.open = true; })")
        _, _, unfolded = page.evaluate(section)
        assert not page.console_errors and not page.external_requests
    placed = [expr for expr, has_stack in guards if has_stack]
    assert 0 < len(placed) < len(guards) / 2
    assert sorted(c for c in shown if c in {expr for expr, _ in guards}) == sorted(placed)
    assert all(expr in text for expr, _ in guards)
    assert height < 844 * 2 and height < unfolded / 2


def test_a_crash_lands_on_its_line_of_generated_code_with_lines_above_it_and_the_line_marked(tmp_path):
    """capture_crash (an H200 run): faulthandler's stack, in compilescope_crash_673.txt beside the log, passes through
    `c7sjsqz….py, line 898 in partition_0`, [0/1]'s output code. The crash card links there: the line landed at the
    very top of the window, nothing of partition_0 above it, and only its number in the gutter was marked. It lands a
    third of the way down the window, the whole line marked across the code."""
    out = tmp_path / "out"
    report(cuda211("capture_crash/dedicated_log_torch_trace_m1o8jsi4.log.gz"), out)
    with browser_page() as page:
        page.set_viewport_size({"width": 1300, "height": 900})
        page.goto((out / "index.html").as_uri())
        page.click("#insights-crash ~ * a.code-line >> nth=0")
        page.wait_for_load_state()
        assert "-_0_1_0/inductor_output_code_c7sjsqz" in page.url and page.url.endswith("#L898")
        number = page.locator("#L898").bounding_box()
        mark = page.evaluate("""() => {
            const style = getComputedStyle(document.getElementById('L898'), '::after');
            return [style.content, parseFloat(style.width)];
        }""")
        code = page.locator(".code").bounding_box()
        line = page.evaluate("document.querySelector('td.src code').innerText.split('\\n')[897]")
        assert page.console_errors == [] and page.external_requests == []
    assert "triton_poi_fused_add_arange_index_copy_split_transpose_view_1.run(" in line  # the call partition_0 ran
    assert 900 * 0.2 < number["y"] < 900 * 0.6
    assert mark[0] != "none" and mark[1] >= code["width"] - 2


def test_a_torch_warnings_place_is_not_broken_inside_its_line_number(tmp_path):
    """dynamic_batch and hf_gpt2_generate (H200 runs): torch's TF32 warning was recorded with the user's stack ending
    at `dynamic_batch.py` line 17 (`main`'s print of step(...)) and `hf_gpt2_generate.py` line 20. Its place may break
    anywhere (a hostile file name must not widen the page), so at a laptop's width the table gave the column a
    character: "dynamic_batch.py:1" above "7". The place keeps one line. On a phone the advice's one long word
    (`torch.set_float32_matmul_precision('high')`) pushed the table past the screen, cutting the message off."""
    places, cut = {}, {}
    for name in ("dynamic_batch", "hf_gpt2_generate"):
        out = tmp_path / name
        report(cuda211(f"{name}.log.gz"), out)
        with browser_page() as page:
            page.set_viewport_size({"width": 1300, "height": 900})
            page.goto((out / "index.html").as_uri())
            places[name] = page.evaluate("""() => Array.from(document.querySelectorAll('table.torch-warnings .loc'))
                .map(loc => [loc.innerText, loc.getClientRects().length])""")
            page.set_viewport_size({"width": PHONE, "height": 900})
            cut[name] = page.evaluate("""() => { const t = document.querySelector('table.torch-warnings');
                return t.scrollWidth > t.clientWidth; }""")
            assert page.console_errors == [] and page.external_requests == []
    assert places == {"dynamic_batch": [["dynamic_batch.py:17", 1]], "hf_gpt2_generate": [["hf_gpt2_generate.py:20", 1]]}
    assert cut == {"dynamic_batch": False, "hf_gpt2_generate": False}


def test_each_compile_time_colour_stays_on_the_line_of_its_name(tmp_path):
    """The compile-time key of hf_gpt2_generate (an H200 run) names its nine phases after their colours. Wrapped
    between any two words, a phone's showed AOTAutograd's orange square at the end of one line and its name on the
    next, beside Inductor's yellow, and a laptop's split "Backend compiler" over two lines."""
    out = tmp_path / "out"
    report(cuda211("hf_gpt2_generate.log.gz"), out)
    keys = {}
    with browser_page() as page:
        for width in (1300, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto((out / "index.html").as_uri())
            keys[width] = page.evaluate("""() => Array.from(document.querySelectorAll('.insights p.legend .swatch')).map(sw => {
                const range = document.createRange();
                range.selectNodeContents(sw.nextSibling);
                const lines = range.getClientRects(), square = sw.getBoundingClientRect();
                return [sw.nextSibling.textContent, lines.length,
                        Math.abs((lines[0].top + lines[0].bottom - square.top - square.bottom) / 2) < 8];
            })""")
        assert page.console_errors == [] and page.external_requests == []
    for width, found in keys.items():
        assert len(found) >= 8 and "Backend compiler" in [name for name, _, _ in found]
        assert [k for k in found if k[1:] != [1, True]] == [], width


def test_the_diagnosis_stages_fit_a_laptop_and_what_each_runs_reads_in_words(tmp_path):
    """compilescope diagnose on compile_error_raises.py: every stage notes "1 failed compile the program caught
    (Unsupported)" (its fullgraph=True [0/0] breaks at the print it catches; compile_error_raises.log), and the
    backend stage fails at [1/0] (exit 1). Kept on one line, that note pushed the stages table 85 px past a laptop's
    window and squeezed "What runs" to a few letters a line ("Dyna", "mo", "captu", "red,")."""
    from compilescope.analyses.diagnosis import AOT_EAGER, BACKEND, EAGER, RunFacts, StageOutcome
    from compilescope.analyses.diagnosis.stage_outcome import stage_outcome
    from compilescope.analyses.diagnosis.verdict import decide
    from compilescope.diagnose import DiagnoseResult
    from compilescope.render.diagnosis import diagnosis_page

    argv = ["python3", "compile_error_raises.py"]
    with read_trace(torch213("compile_error_raises.log")) as trace:
        backend = stage_outcome(BACKEND, RunFacts(argv=argv, env={}, returncode=1, seconds=8.5), trace)
    assert [e.compile_id for e in backend.caught] == ["[0/0]"] and backend.status == "failed"
    # The forced backends compile [1/0] too, and pass with the same [0/0] caught (as diagnose found them).
    forced = [StageOutcome(spec, RunFacts(argv=argv, env=dict(spec.env), returncode=0, seconds=7.7), caught=backend.caught,
                           compiles=2, traced=True) for spec in (EAGER, AOT_EAGER)]
    result = DiagnoseResult(argv=argv, cwd="/w", outcomes=[*forced, backend], verdict=decide([*forced, backend]))
    out = tmp_path / "diagnosis"
    out.mkdir()
    (out / "index.html").write_text(diagnosis_page(result, [], str(out)))
    with browser_page() as page:
        assert pages_wider_than_the_window(page, out) == []
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto((out / "index.html").as_uri())
        # The narrowest "What runs" cell is as wide as its longest word ("generation", "AOTAutograd:"), at least.
        narrowest = page.evaluate("""() => Math.min(...Array.from(document.querySelectorAll('#stages tbody tr'))
                                     .map(row => row.cells[1].getBoundingClientRect().width))""")
        assert narrowest > 100
        assert page.console_errors == [] and page.external_requests == []


def test_diff_runs_table_and_phase_times_fit_a_phone(tmp_path):
    """The CUDA optimizer pair (A: a float lr, 6 compiles of step; B: a tensor lr, 1): at a phone's width the table of
    the two runs does not scroll inside itself (seven columns did), and each phase time is one line ("2.04 s" broke
    between number and unit)."""
    out = tmp_path / "diff"
    assert run_cli("diff", cuda211("compiled_optimizer.log.gz"), cuda211("compiled_optimizer_tensor_lr.log.gz"),
                   "-o", out, "--no-browser") == 1
    with browser_page() as page:
        page.set_viewport_size({"width": PHONE, "height": 900})
        page.goto((out / "index.html").as_uri())
        sides = page.evaluate("(t => [t.scrollWidth, t.clientWidth, t.getBoundingClientRect().right])"
                              "(document.getElementById('sides'))")
        assert sides[0] <= sides[1] and sides[2] <= PHONE
        times = page.evaluate("""Array.from(document.querySelectorAll('table.diff-detail td.num')).map(td => {
            const r = document.createRange(); r.selectNodeContents(td); return [td.textContent, r.getClientRects().length];
        })""")
        assert times and all(lines == 1 for _, lines in times), times
        assert any(text.endswith((" s", " ms")) for text, _ in times)  # a number and its unit, in one line
        assert not page.console_errors and not page.external_requests


# The text of an element as the browser laid it out: one string per line box (its characters grouped by their top).
_LINES_OF = """e => { const lines = new Map(); const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) for (let i = 0; i < n.length; i++) {
    const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1); const box = r.getClientRects()[0];
    if (box) { const top = Math.round(box.top); lines.set(top, (lines.get(top) || "") + n.data[i]); } }
  return [...lines.keys()].sort((a, b) => a - b).map(k => lines.get(k).trim()).filter(Boolean); }"""


def test_at_a_phones_width_long_kernel_names_keep_a_width_and_short_phrases_their_words(tmp_path):
    # profile_compiled.json's longest kernel, the cuBLAS GEMM sm80_xmma_gemm_..._5x_cublas (123 characters), took five
    # characters a line in the runtime page's kernel column; "location not in the log" broke mid-word in the torch
    # warnings table (autotune_cudagraphs' saved stderr: 5 warnings torch printed without a user line).
    run = shared("gpu-torch211/profile_compiled")
    prof, warned = tmp_path / "prof", tmp_path / "warned"
    assert run_cli(next(run.glob("dedicated_log_torch_trace*.log")), "--profile", run / "profile_compiled.json",
                   "-o", prof, "--no-browser") == 0
    report(shared("gpu-torch211/autotune_cudagraphs"), warned)
    with browser_page() as page:
        page.set_viewport_size({"width": PHONE, "height": 900})
        page.goto((prof / "runtime.html").as_uri())
        name = page.locator(".rt-kernels td.rt-name", has_text="_5x_cublas").first
        # What the kernel is, in words (wrapped at spaces), above its name: the name's lines are the rest.
        lines = name.evaluate(_LINES_OF)
        said = next(k for k in range(len(lines)) if lines[k].startswith("sm80_"))
        assert " ".join(lines[:said]) == "cuBLAS float32 GEMM"
        lines = lines[said:]
        assert "".join(lines) == ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_"
                                  "aligna4_alignc4_execute_kernel__5x_cublas")
        assert min(len(line) for line in lines[:-1]) >= 14
        page.goto((warned / "index.html").as_uri())
        phrases = page.locator("table.torch-warnings .no-loc")
        assert phrases.count() == 5
        for i in range(phrases.count()):
            words = [line.split() for line in phrases.nth(i).evaluate(_LINES_OF)]
            assert [w for line in words for w in line] == ["location", "not", "in", "the", "log"]
            assert all(set(line) <= {"location", "not", "in", "the", "log"} for line in words)
        assert page.console_errors == []


def test_a_custom_ops_name_is_not_broken_inside_it(tmp_path):
    """custom_op_mutation (CPU torch 2.13): the compiled code calls mylib::scale and mylib::clamp_np (the log's
    graphs name both). The custom ops' table broke the op's name inside it ("mylib::clamp" above "_np") at a laptop's
    width and on a phone: an op name keeps one line, and the table still fits the window."""
    out = tmp_path / "report"
    report(torch213_moved("custom_op_mutation.log.gz", tmp_path), out)  # (the ops are told from the program's source)
    shown, wide = {}, {}
    with browser_page() as page:
        for width in (LAPTOP, PHONE):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto((out / "index.html").as_uri())
            shown[width] = page.evaluate("""() => Array.from(document.querySelectorAll(
                'table.op-mutations tbody tr > td:first-child > code:first-child')).map(code => {
                const r = document.createRange(); r.selectNodeContents(code);
                return [code.textContent, r.getClientRects().length]; })""")
            wide[width] = page.evaluate("""() => { const t = document.querySelector('table.op-mutations');
                return t.getBoundingClientRect().right > document.documentElement.clientWidth; }""")
        assert page.console_errors == [] and page.external_requests == []
    ops = [["mylib::scale", 1], ["mylib::clamp_np", 1]]
    assert sorted(shown[LAPTOP]) == sorted(shown[PHONE]) == sorted(ops)
    assert wide == {LAPTOP: False, PHONE: False}

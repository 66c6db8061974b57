"""The source page says what happened to a line in the user's terms, and its links land where they say.

Expected lines come from the programs that made the logs (tests/data/torch213/programs, the cuda_torch211 and
gpu-torch211 scripts); expected link targets are found on the pages linked to, not taken from the link.
"""

from __future__ import annotations

import gzip
import html
import json
import re
from pathlib import Path

import pytest

from ..conftest import REPO, cuda211, peer, report, skip_or_fail, torch213, torch213_moved

GPT2 = REPO.parent / "shared" / "traces" / "gpu-torch211" / "gpt2_train"


def source_page(log: Path, out: Path, name: str) -> str:
    report(log, out)
    (page,) = (out / "sources").glob(f"{name}_*.html")
    return page.read_text()


def row(text: str, n: int) -> str:
    """Line n's row, to the end of its notes."""
    return re.search(rf'<div class="src-line[^"]*" id="L{n}".*?</ul></div>', text, re.S)[0]


def plain(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def ids(text: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', text))


def kernel_items(text: str) -> list[str]:
    return re.findall(r'<li class="n-kernel">.*?</li>', text, re.S)


def kernel_links(fragment: str) -> list[tuple[str, str, str]]:
    """(page, fragment, kernel) of each kernel link in the kernel items of a page or row (not their compile id links)."""
    return [link for item in kernel_items(fragment)
            for link in re.findall(r'<a class="mono" href="\.\./([^"#]+)(?:#([^"]*))?"(?: title="[^"]*")?>([^<]+)</a>', item)]


@pytest.mark.parametrize("where", ["provenance", "train_break_recompile", "gpt2_train"])
def test_a_kernel_links_to_its_call_on_the_provenance_page(where, tmp_path):
    """Each kernel a line made links to the row of the provenance page's generated code that calls it: the row's
    id exists there, and its text names the kernel (the call torch's wrapper makes). A kernel an earlier graph left
    in a backward's stack traces (torch 2.11, train_break_recompile and gpt2_train) is not listed under the graph
    whose code never calls it, so every link lands."""
    out = tmp_path / "out"
    if where == "provenance":
        name, log = "provenance.py", torch213("provenance.log")
    elif where == "train_break_recompile":
        name, log = "train_break_recompile.py", cuda211("train_break_recompile.log.gz")
    else:
        if not GPT2.is_dir():
            skip_or_fail("../shared/traces/gpu-torch211 not available")
        name, log = "modeling_gpt2.py", next(GPT2.glob("*.log"))
    links = kernel_links(source_page(log, out, name))
    assert links
    pages: dict[str, str] = {}
    for url, fragment, kernel in links:
        assert "/provenance/" in f"/{url}" and fragment, (url, kernel)
        target = pages.get(url) or pages.setdefault(url, (out / url).read_text())
        m = re.search(rf'<div class="pl[^"]*" id="{re.escape(fragment)}"[^>]*>(.*?)</div>', target)
        assert m, (url, fragment)
        # the kernel's name without its debug handle (":1") is what the wrapper calls on that line
        assert html.unescape(kernel).rsplit(":", 1)[0] in plain(m[1]), (fragment, kernel)


def test_a_training_line_says_which_kernels_are_forward_and_which_backward(tmp_path):
    """train_break_recompile.py line 21 feeds the forward and the backward of [0/0] and of its recompile [0/1]: an item
    per compile and graph, the kernels whose stack is line 21 and whose debug-handle comment the code of that graph
    (its AOT ID: 0_forward, 0_backward, 2_forward, 2_backward) holds; the badge counts them by graph. The two forwards
    name the same kernels, but their code differs (the four inductor_output_code payloads of frame 0 have four md5s):
    each compile's are said apart, each linking to its own code; the backwards differ in name too."""
    log = cuda211("train_break_recompile.log.gz")
    md5s = [line.split('"has_payload": "')[1][:32] for line in gzip.decompress(log.read_bytes()).decode().splitlines()
            if '"inductor_output_code"' in line and '"frame_id": 0,' in line]
    assert len(md5s) == len(set(md5s)) == 4
    line = row(source_page(log, tmp_path / "out", "train_break_recompile.py"), 21)
    assert [plain(item) for item in kernel_items(line)] == [
        "forward kernels of [0/0]: triton_per_fused_native_layer_norm_0:1, extern_kernels.addmm:2, "
        "triton_poi_fused_gelu_1:3",
        "backward kernels of [0/0]: triton_per_fused_gelu_gelu_backward_sum_0:4, extern_kernels.mm:5, "
        "triton_per_fused_native_layer_norm_native_layer_norm_backward_1:6, extern_kernels.mm:7",
        "forward kernels of [0/1]: triton_per_fused_native_layer_norm_0:1, extern_kernels.addmm:2, "
        "triton_poi_fused_gelu_1:3",
        "backward kernels of [0/1]: triton_red_fused_gelu_gelu_backward_sum_0:4, extern_kernels.mm:5, "
        "triton_red_fused_native_layer_norm_native_layer_norm_backward_1:6, extern_kernels.mm:7",
    ]
    (badge,) = re.findall(r'<span class="b b-kernel"[^>]*>([^<]*)</span>', line)
    assert badge == "6 fwd + 8 bwd kernels"


def test_a_kernels_debug_handle_is_said_where_the_page_first_shows_one(tmp_path):
    """`triton_poi_fused_gelu_1:3` was explained only on the kernel stack traces page. The source page says what `:N` is
    above its lines, and each kernel link's tooltip names the kernel and the handle. Expected from the raw log: every
    name a kernel item lists is one of the `# [Provenance debug handles] name:N` comments of the log's output codes."""
    from ..provenance.helpers import raw_graphs

    log = cuda211("train_break_recompile.log.gz")
    calls = {name for graph in raw_graphs(log).values() for name in graph.calls}
    assert "triton_poi_fused_gelu_1:3" in calls
    text = source_page(log, tmp_path / "out", "train_break_recompile.py")
    (help_line,) = re.findall(r'<p class="muted" id="debug-handle-help">(.*?)</p>', text, re.S)
    assert plain(help_line).startswith("A kernel written name:N is one call of that kernel: N is torch's debug handle")
    assert text.index('id="debug-handle-help"') < text.index('class="n-kernel"')
    links = [link for item in kernel_items(text)
             for link in re.findall(r'<a class="mono" href="[^"]*" title="([^"]*)">([^<]+)</a>', item)]
    assert len(links) == len(kernel_links(text)) > 0  # every link has its tooltip
    for title, name in links:
        name = html.unescape(name)
        assert name in calls
        kernel, handle = name.rsplit(":", 1)
        assert html.unescape(title).startswith(f"{kernel}, the call torch's debug handle :{handle} names"), (name, title)
    # AOTInductor's kernels in a peer log carry no handle: no line about one, no tooltip
    other = source_page(peer("inductor_provenance_extended_log.txt"), tmp_path / "peer", "layernorm.py")
    assert kernel_links(other) and 'id="debug-handle-help"' not in other and " title=" not in "".join(kernel_items(other))


def test_a_kernel_the_logged_code_does_not_call_links_to_its_stack_traces(tmp_path):
    """The peer log inductor_provenance_extended_log.txt holds AOTInductor kernel stack traces whose kernels its
    wrapper code never names (triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0, from vllm's layernorm.py lines 125,
    145, 147, 148 and 150): such a kernel links to its row of the kernel stack traces page, which names it (greyed:
    not the package's), and says the code has no call to it; it is not listed as the AOTInductor package's."""
    out = tmp_path / "out"
    text = source_page(peer("inductor_provenance_extended_log.txt"), out, "layernorm.py")
    kernel = "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0"
    for n in (125, 145, 147, 148, 150):
        (item,) = kernel_items(row(text, n))
        ((url, fragment, name),) = kernel_links(item)
        assert html.unescape(name) == kernel
        assert "the logged code has no call to it" in plain(item)
        assert plain(item).startswith("kernels listed outside any compile, not the AOTInductor package's: ")
        target = (out / url).read_text()
        m = re.search(rf'<tr id="{re.escape(fragment)}" class="other-graph">(.*?)</tr>', target, re.S)
        assert m and kernel in plain(m[1]) and f"layernorm.py:{n}" in plain(m[1]), (url, fragment)


def test_graph_breaks_of_the_file_are_listed_by_line_with_links_to_the_lines_that_ran_eagerly(tmp_path):
    """graph_breaks.py breaks at lines 23 (branch), 18 (the print in log_step) and 28 (.item()); the print ran eagerly
    at its calls, lines 27 and 30: the list reads by line, and each line it names is a link to that line's row,
    named "line 27" (the page is the file's own: its name would only repeat the page's title)."""
    text = source_page(torch213("graph_breaks.log"), tmp_path / "out", "graph_breaks.py")
    listed = re.search(r'<ul id="src-breaks">(.*?)</ul>', text, re.S)[1]
    items = re.findall(r"<li>(.*?)</li>", listed, re.S)
    assert [int(re.match(r'<a href="#L(\d+)">', i)[1]) for i in items] == [18, 23, 28]
    (printed,) = [i for i in items if "Failed to trace builtin operator" in i]
    eager = re.findall(r'<a href="#(L\d+)">line (\d+)</a>', printed.split("ran eagerly:", 1)[1])
    assert "graph_breaks.py:" not in printed
    assert sorted(int(n) for _, n in eager) == [18, 27, 30]
    page_ids = ids(text)
    assert all(anchor == f"L{n}" and anchor in page_ids for anchor, n in eager)


def test_a_line_whose_guard_failed_says_it_recompiled(tmp_path):
    """train_break_recompile.py's forward recompiled as [0/1] for batch 48: line 21's size guard of [0/0] failed.
    The badge says so in those words, and keeps the failed guard in its tooltip and the line's notes."""
    text = source_page(cuda211("train_break_recompile.log.gz"), tmp_path / "out", "train_break_recompile.py")
    line = row(text, 21)
    (badge,) = re.findall(r'<span class="b b-guard" title="([^"]*)">([^<]*)</span>', line)
    assert html.unescape(badge[1]) == "recompiled [0/1]"
    assert "size mismatch at index 0. expected 32, actual 48" in html.unescape(badge[0])
    assert "failed guard" not in plain(line)
    notes = plain(re.search(r'<li class="n-guard">.*?</li>', line)[0])
    assert notes.startswith("recompiled as [0/1]") and "expected 32, actual 48" in notes


def test_dimension_marking_guards_fold_into_one_entry(tmp_path):
    """graph_breaks.py line 29 (z = y * s) made [3/0] install a tensor check of y, its ___stack0 value, and five
    checks that no dimension of y was marked dynamic: those five are one entry, their list one click away."""
    line = row(source_page(torch213("graph_breaks.log"), tmp_path / "out", "graph_breaks.py"), 29)
    installed = re.search(r'<li class="n-installed">.*</li>', line, re.S)[0]
    assert plain(installed).startswith("2 guards of [3/0] come from this line (and 5 dimension-marking checks)")
    # the guards themselves at the top of the list; the marking checks only under their entry
    top = re.sub(r'<li class="n-marking">.*?</details></li>', "", installed, flags=re.S)
    assert "DIMENSION_DYNAMIC_MARKING_GUARD:" not in top
    assert "TENSOR_MATCH" in top and "EQUALS_MATCH" in top
    (folded,) = re.findall(r'<li class="n-marking">.*?</details></li>', installed, re.S)
    assert plain(folded).count("DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['y']") == 5


def test_a_stack_value_reads_in_the_users_words_in_installed_guards_and_symbols(tmp_path):
    """item_break.log: [0/0] broke at `scale = loss.item()` (line 19; the break's traceback puts its carets under
    `loss.item()`), so the float reached the resume function as ___stack0. Line 20 (`return w * scale`) is where
    [1/0] installed `EQUALS_MATCH: L['___stack0'] == -1.3068742752075195` and [1/1] created zf2 from
    `L['___stack0']`, as the raw log says. The page names that value as the recompiles view does; torch's text is in
    the title, and in sources.json."""
    out = tmp_path / "out"
    line = row(source_page(torch213("item_break.log.gz"), out, "item_break.py"), 20)
    value = "the value of `loss.item()` (item_break.py:19), passed on past the graph break"
    installed = re.search(r'<li class="n-installed">.*?</details></li>', line, re.S)[0]
    assert installed.startswith('<li class="n-installed">') and "[1/0]" in plain(installed)
    (guard,) = [g for g in re.findall(r'<code title="([^"]*)">([^<]*)</code>', installed)
                if "___stack0" in html.unescape(g[0])]
    assert html.unescape(guard[0]) == "EQUALS_MATCH: L['___stack0'] == -1.3068742752075195"
    assert html.unescape(guard[1]) == f"EQUALS_MATCH: {value}, == -1.3068742752075195"
    symbol = re.search(r'<li class="n-symbol">.*?</li>', line, re.S)[0]
    assert plain(symbol) == f"symbol zf2 created = 2.4235048294067383 from {value} ([1/1])"
    assert html.unescape(re.search(r'<span title="([^"]*)">', symbol)[1]) == "L['___stack0']"
    notes = next(f for f in json.loads((out / "sources.json").read_text())["files"]
                 if f["path"].endswith("/item_break.py"))["lines"]["20"]
    (created,) = notes["symbols"]
    assert (created["source"], created["described"]) == ("L['___stack0']", value)
    (equals,) = [g for g in notes["guards"] if g.get("installed") == "[1/0]" and "___stack0" in g["guard"]]
    assert equals["guard"] == "EQUALS_MATCH: L['___stack0'] == -1.3068742752075195"


def test_a_recompile_that_hit_the_limit_is_not_said_to_have_recompiled(tmp_path):
    """train_step_pitfalls.log (recompile_limit = 2): [0/1] and [0/2] have recompile_reasons pointing at line 34
    (`history.append(1)`), but [0/2]'s compilation_metrics say it failed, "Dynamo recompile limit exceeded": torch
    compiled nothing, and the frame ran eagerly from then on. Line 34 says [0/1] recompiled, and that recompiling as
    [0/2] failed, and why."""
    log = torch213("train_step_pitfalls.log.gz")
    with gzip.open(log, "rt") as f:
        metrics = [json.loads(r[r.index("{"):])["compilation_metrics"] for r in f if '{"compilation_metrics": ' in r]
    by_id = {m["compile_id"]: m for m in metrics}
    assert by_id["0/1"]["fail_type"] is None
    assert by_id["0/2"]["fail_reason"].startswith("Dynamo recompile limit exceeded\n")
    line = row(source_page(log, tmp_path / "out", "train_step_pitfalls.py"), 34)
    badges = [html.unescape(b) for b in re.findall(r'<span class="b b-guard" title="[^"]*">([^<]*)</span>', line)]
    assert badges == ["recompiled [0/1]", "recompile [0/2] failed"]
    # [0/2]'s two failed checks (recompile_reasons: [0/1]'s, then [0/0]'s) are one note, said once with its failure.
    assert [check for _, check in _recompile_reasons(log, 0, 2)] == ["len(G['history']) == 1", "not G['history']"]
    guards = [plain(g) for g in re.findall(r'<li class="n-guard">.*?</li>', line, re.S)]
    assert guards == [
        "recompiled as [0/1]: a guard of [0/0] on this line failed: not G['history']",
        "guards on this line failed: len(G['history']) == 1 (of [0/1]); not G['history'] (of [0/0]); recompiling as "
        "[0/2] failed: Dynamo recompile limit exceeded"]


def _recompile_reasons(log: Path, frame: int, compile_: int) -> list[tuple[str, str]]:
    """(failed in, check) of each failed check of the recompile_reasons of [frame/compile_], in torch's order (the
    newest cache entry first), the check without its comment and user stack: torch writes one reason as its text and
    several as a JSON list."""
    opened = gzip.open(log, "rt") if log.suffix == ".gz" else log.open()
    payload, inside = [], False
    with opened as f:
        for raw in f:
            if raw.startswith("V"):
                inside = ('"name": "recompile_reasons"' in raw and f'"frame_id": {frame}, ' in raw
                          and f'"frame_compile_id": {compile_}, ' in raw)
            elif inside:
                payload.append(raw[1:].rstrip("\n"))
    text = "\n".join(payload)
    reasons = json.loads(text) if text.startswith("[") else [text]
    return [(f"[{failed_in}]", re.split(r"\s+# |\nUser stack trace:", check, maxsplit=1)[0].strip())
            for failed_in, check in (r.split(": ", 1) for r in reasons)]


def test_every_failed_check_of_a_recompile_is_on_its_line_in_one_note(tmp_path):
    """cpu_slower_than_eager.log: batch 40 made [0/2] recompile Head.forward; its recompile_reasons list two failed
    checks, "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 40" and "0/1: ... expected 24, actual 40".
    Neither names a line: the guard trees of [0/0] and [0/1] each place x's TENSOR_MATCH in F.layer_norm
    (normalization.py:228), and their graphs' first node using x names line 23 (`h = self.proj(self.norm(x))`).
    Line 23 shows both checks, not only the newest entry's, in one note for [0/2] (not one per check); sources.json
    keeps a guard per check and compilation."""
    log = torch213("cpu_slower_than_eager.log.gz")
    (first,) = _recompile_reasons(log, 0, 1)
    reasons = _recompile_reasons(log, 0, 2)
    assert [failed_in for failed_in, _ in reasons] == ["[0/0]", "[0/1]"] and reasons[0][1] != reasons[1][1]
    out = tmp_path / "out"
    line = row(source_page(log, out, "cpu_slower_than_eager.py"), 23)
    guards = [plain(g) for g in re.findall(r'<li class="n-guard">.*?</li>', line, re.S)]
    assert guards == [
        f"recompiled as [0/1]: a guard of {first[0]} on this line failed: {first[1]}",
        f"recompiled as [0/2]: guards on this line failed: {reasons[0][1]} (of [0/0]); {reasons[1][1]} (of [0/1])"]
    notes = next(f for f in json.loads((out / "sources.json").read_text())["files"]
                 if f["path"].endswith("/cpu_slower_than_eager.py"))["lines"]["23"]
    assert [(g["recompile"], g["failed_in"], g["guard"]) for g in notes["guards"] if "recompile" in g] == [
        ("[0/1]", *first), *(("[0/2]", *r) for r in reasons)]


def test_a_check_several_compilations_failed_alike_is_said_once_per_recompile(tmp_path):
    """recompiles.log, g's line 25 (`return x * 2 + 1`): six failed guards over three recompiles. A float64 x made
    [0/2] fail [0/1]'s and [0/0]'s dtype check, the very same text; requires_grad made [0/3] fail [0/2]'s requires_grad
    check and those two dtype checks again. Each recompile is one note, its checks together, the dtype check once
    with both compilations whose guard it was; the badge's title says it once per recompile."""
    log = torch213("recompiles.log")
    (size,) = _recompile_reasons(log, 0, 1)
    of_0_2 = _recompile_reasons(log, 0, 2)
    assert [failed_in for failed_in, _ in of_0_2] == ["[0/1]", "[0/0]"] and of_0_2[0][1] == of_0_2[1][1]
    dtype = of_0_2[0][1]
    of_0_3 = _recompile_reasons(log, 0, 3)
    assert of_0_3[1:] == of_0_2 and of_0_3[0][0] == "[0/2]"
    requires_grad = of_0_3[0][1]
    line = row(source_page(log, tmp_path / "out", "recompiles.py"), 25)
    guards = [plain(g) for g in re.findall(r'<li class="n-guard">.*?</li>', line, re.S)]
    assert guards == [
        f"recompiled as [0/1]: a guard of {size[0]} on this line failed: {size[1]}",
        f"recompiled as [0/2]: guards on this line failed: {dtype} (of [0/0], [0/1])",
        f"recompiled as [0/3]: guards on this line failed: {requires_grad} (of [0/2]); {dtype} (of [0/0], [0/1])"]
    (title,) = [html.unescape(t) for t in re.findall(r'<span class="b b-guard" title="([^"]*)"', line)]
    assert title.count(dtype) == 2 and title.count(requires_grad) == 1


def _guard_tree(log: Path, frame: int, compile_: int) -> list[str]:
    """The raw lines of the dynamo_cpp_guards_str payload of [frame/compile_] (tab-indented, after its envelope)."""
    lines, inside = [], False
    with gzip.open(log, "rt") as f:
        for raw in f:
            if raw.startswith("V"):
                inside = ('{"dynamo_cpp_guards_str": ' in raw and f'"frame_id": {frame}, ' in raw
                          and f'"frame_compile_id": {compile_}, ' in raw)
            elif inside:
                lines.append(raw.rstrip("\n"))
    return lines


def test_an_installed_guard_with_torchs_hint_is_on_its_line(tmp_path):
    """item_break.log: [1/1]'s guard tree has `TYPE_MATCH: ___check_type_id(L['___stack0'], ...)` with the comment
    `# return w * scale  # .../item_break.py:20 in torch_dynamo_resume_in_train_step_at_19 (HINT: type float)`: the
    hint after the place must not hide the guard from line 20, and the hint is kept."""
    log = torch213("item_break.log.gz")
    (raw,) = [r for r in _guard_tree(log, 1, 1) if "TYPE_MATCH: ___check_type_id(L['___stack0']" in r]
    m = re.search(r"\+- (TYPE_MATCH: .*?)\s+# return w \* scale\s+# \S+/item_break\.py:20 in \S+ \(HINT: (.*)\)$", raw)
    guard, hint = m[1], m[2]
    assert hint == "type float"
    out = tmp_path / "out"
    line = row(source_page(log, out, "item_break.py"), 20)
    notes = next(f for f in json.loads((out / "sources.json").read_text())["files"]
                 if f["path"].endswith("/item_break.py"))["lines"]["20"]
    (found,) = [g for g in notes["guards"] if g.get("installed") == "[1/1]" and g["guard"] == guard]
    assert found["hint"] == hint
    installed = [plain(i) for i in re.findall(r'<li class="n-installed">.*?</details></li>', line, re.S)]
    (of_1_1,) = [i for i in installed if " of [1/1] " in i]
    assert "(hint: type float)" in of_1_1 and "TYPE_MATCH" in of_1_1


def test_a_specialized_symbol_says_its_source(tmp_path):
    """dynamic_shapes.log: the symbolic_shape_specialization record of [0/2] specializes s77 to 5 with `"sources":
    ["L['x'].size()[0]"]` (a list: sizes torch found equal share a symbol), its user stack ending on line 25
    (`if x.shape[0] == 5:`). The line's symbol note names that source, as a created symbol's note names its own."""
    log = torch213("dynamic_shapes.log")
    records = [(r, json.loads(r[r.index("{"):])) for r in log.read_text().splitlines()
               if '{"symbolic_shape_specialization": ' in r]
    (raw, record), = [(r, rec) for r, rec in records if rec["symbolic_shape_specialization"]["symbol"] == "s77"]
    spec = record["symbolic_shape_specialization"]
    assert (record["frame_id"], record["frame_compile_id"], spec["value"]) == (0, 2, "5")
    assert spec["user_stack"][-1]["line"] == 25
    sources = spec["sources"]
    assert sources == ["L['x'].size()[0]"]
    out = tmp_path / "out"
    line = row(source_page(log, out, "dynamic_shapes.py"), 25)
    notes = next(f for f in json.loads((out / "sources.json").read_text())["files"]
                 if f["path"].endswith("/dynamic_shapes.py"))["lines"]["25"]
    (specialized,) = [s for s in notes["symbols"] if s["kind"] == "specialized"]
    assert (specialized["compile_id"], specialized["symbol"], specialized["sources"]) == ("[0/2]", "s77", sources)
    symbols = [plain(s) for s in re.findall(r'<li class="n-symbol">.*?</li>', line, re.S)]
    # (as the program names it, f's argument x; torch's text in the title)
    assert "symbol s77 specialized = 5 from x.size()[0] ([0/2])" in symbols
    assert html.unescape(re.search(r'<span title="([^"]*)">x\.size\(\)\[0\]</span>', line)[1]) == sources[0]


def _guards_from(log: Path, frame: int, compile_: int, line: int) -> list[str]:
    """The guards the tree of [frame/compile_] says line `line` made (its comment's place), as torch wrote them."""
    found = []
    for raw in _guard_tree(log, frame, compile_):
        m = re.search(r"\+- ([A-Z_]+: .*?)\s+# .*?\s+# \S+?:(\d+) in \S+(?: \(HINT: .*\))?$", raw)
        if m and int(m[2]) == line:
            found.append(m[1])
    return found


def test_compiles_that_installed_the_same_guards_and_kernels_are_one_note(tmp_path):
    """cpu_slower_than_eager.log: frame 0 compiled three times ([0/0], [0/1], [0/2]: x's batch 8, 24, 40) and each
    guard tree has the same 12 guards from line 23 (`h = self.proj(self.norm(x))`); so the line says "12 guards of
    [0/0], [0/1], [0/2]" once, not three alike notes. Its kernels have the same names in each compile but other code
    (a static recompile inlines the batch: three output codes, three md5s), so each compile's are said apart, linking
    to its own code. Line 27's [3/0] and [3/1] guard h's size differently (TENSOR_MATCH size=[24, 64] and [8, 64]):
    they stay apart."""
    log = torch213("cpu_slower_than_eager.log.gz")
    guards = [_guards_from(log, 0, c, 23) for c in range(3)]
    assert len(guards[0]) == 12 and guards[0] == guards[1] == guards[2]
    at_27 = [_guards_from(log, 3, c, 27) for c in range(2)]
    assert at_27[0] and at_27[0] != at_27[1]
    out = tmp_path / "out"
    text = source_page(log, out, "cpu_slower_than_eager.py")
    line = row(text, 23)
    (installed,) = [plain(i) for i in re.findall(r'<li class="n-installed">.*?</details></li>', line, re.S)]
    assert installed.startswith("12 guards of [0/0], [0/1], [0/2] come from this line")
    assert all(g in installed for g in guards[0])
    notes = next(f for f in json.loads((out / "sources.json").read_text())["files"]
                 if f["path"].endswith("/cpu_slower_than_eager.py"))["lines"]
    kernels = {cid: [k["kernel"] for k in notes["23"]["kernels"] if k["compile_id"] == cid]
               for cid in ("[0/0]", "[0/1]", "[0/2]")}
    assert kernels["[0/0]"] and kernels["[0/0]"] == kernels["[0/1]"] == kernels["[0/2]"]
    md5s = [raw.split('"has_payload": "')[1][:32] for raw in gzip.decompress(log.read_bytes()).decode().splitlines()
            if '"inductor_output_code"' in raw and '"frame_id": 0,' in raw]
    assert len(md5s) == len(set(md5s)) == 3
    assert [plain(k) for k in kernel_items(line)] == [
        f"inference kernels of {cid}: {', '.join(kernels['[0/0]'])}" for cid in ("[0/0]", "[0/1]", "[0/2]")]
    dirs = set(re.findall(r'href="\.\./provenance/(-_0_[0-2]_0)\.html', line))
    assert dirs == {"-_0_0_0", "-_0_1_0", "-_0_2_0"}  # each compile's kernels link to its own code
    assert "captured in graph [0/0], [0/1], [0/2] " in plain(line)
    apart = [plain(i) for i in re.findall(r'<li class="n-installed">.*?</details></li>', row(text, 27), re.S)]
    assert [i.split(" come")[0] for i in apart] == ["1 guard of [3/0]", "1 guard of [3/1]"]


def badges(text: str, n: int) -> str:
    """Line n's badges, as text, each ended by "|"."""
    spans = re.search(rf'<div class="src-line[^"]*" id="L{n}".*?<span class="badges">(.*?)</span><ul', text, re.S)[1]
    return "".join(f"{plain(s)}|" for s in re.findall(r'<span class="b [^"]*"[^>]*>(.*?)</span>', spans))


@pytest.mark.parametrize("name, log_name, breaks", [
    # The print in f's resume function after its first break ([1/0], and [1/1] for x of size 16): no graph captures
    # the print, so no graph badge named them, and its break badge named none.
    ("resume_print_break.py", "resume_print_break.log.gz",
     {'print("mid")': "[1/0] [1/1]", "if y.sum() > 0:": "[0/0] [0/1] [0/2]"}),
    # log_step's print, inlined into f's resume functions [1/0] and [3/0]; y.sum().item() in [2/0].
    ("graph_breaks.py", "graph_breaks.log", {"print(msg)": "[1/0] [3/0]", "s = y.sum().item()": "[2/0]"}),
])
def test_a_break_badge_names_the_compilations_that_broke_there(name, log_name, breaks, tmp_path):
    """Each graph break's badge names its compilations, on a line no graph captured too (the print the resume function
    of an earlier break broke at), where before the page's badges said "graph break" alone."""
    text = source_page(torch213_moved(log_name, tmp_path), tmp_path / "out", name)
    program = (torch213("x").parent.parent / "programs" / name).read_text().splitlines()
    for code, compile_ids in breaks.items():
        [n] = [i for i, line in enumerate(program, 1) if line.strip().startswith(code)]
        assert f"graph break: {compile_ids}|" in badges(text, n)

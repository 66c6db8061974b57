"""A kernel a graph's stack traces list but its code does not call is another graph's (torch 2.11 does not clear its
provenance between graphs): which graph calls it, and how the kernel stack traces page says so.

Expected values come from the raw log (helpers.raw_graphs): each output code's `# [Provenance debug handles]`
comments and the kernel stack traces artifact Inductor logged after it."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from compilescope.analyses.provenance import kernel_anchor
from compilescope.analyses.provenance.analysis import analyze_provenance
from compilescope.ingest.reader import read_trace

from ..conftest import cuda211, report
from ..runtime.test_gpu_capture import _with_kernel_stacks
from .helpers import raw_graphs

LOG = "train_break_recompile.log.gz"


def _leftovers(aot_id: str) -> list[str]:
    """The kernels the graph's stack traces list that its code's debug-handle comments do not name."""
    graph = raw_graphs(cuda211(LOG))[aot_id]
    return [name for name in graph.stacks if name not in graph.calls]


def test_another_graphs_kernel_is_placed_in_the_graph_whose_code_calls_it():
    """[0/0_1]'s backward (0_backward) was compiled right after [1/0]'s backward at the first loss.backward(): its list
    carries 1_backward's three calls, which no other code names. [0/1_1]'s backward carries its forward's (2_forward),
    whose calls and stacks are also 0_forward's: the last graph logged before it is the one (the list is cleared
    before each forward, and 0_forward's was cleared before 1_forward). [1/1]'s backward carries 3_forward's."""
    raw = raw_graphs(cuda211(LOG))
    expected = {"0_backward": "1_backward", "2_backward": "2_forward", "3_backward": "3_forward"}
    for aot_id, caller in expected.items():
        left = _leftovers(aot_id)
        assert left and all(raw[caller].stacks[n] == raw[aot_id].stacks[n] and n in raw[caller].calls for n in left)
    assert [a for a, g in raw.items() if "triton_per_fused_mul_sum_0:1" in g.calls] == ["1_backward"]
    assert {a for a, g in raw.items() if set(_leftovers("2_backward")) <= set(g.calls)} == {"0_forward", "2_forward"}
    with read_trace(cuda211(LOG)) as trace:
        found = analyze_provenance(trace)
    sections = {s.title: s for c in found.compiles.values() for s in c.sections}
    placed = {title: {name: (ref.title, ref.label) for name, ref in s.called_by.items()}
              for title, s in sections.items() if s.called_by}
    assert placed == {aot_id: {n: (caller, f"{raw[caller].compile_id} {caller.split('_')[1]}") for n in _leftovers(aot_id)}
                      for aot_id, caller in expected.items()}
    assert placed["0_backward"]["extern_kernels.mm:2"] == ("1_backward", "[1/0] backward")
    # the section it names is that graph's
    ref = sections["0_backward"].called_by["extern_kernels.mm:2"]
    assert found.compiles[ref.compile_id].sections[ref.section].title == "1_backward"


def _kernel_pages(out: Path, compile_id: str) -> list[str]:
    """A compile id's kernel stack traces pages, in log order (its forward's, then its backward's)."""
    directory = json.loads((out / "compile_directory.json").read_text())
    return [a["readable_url"] for a in directory[compile_id]["artifacts"]
            if a["name"].startswith("inductor_provenance_tracking_kernel_stack_traces") and a["readable_url"]]


_ROW = re.compile(r'<tr id="([^"]*)"( class="other-graph")?>\n<td class="mono">(.*?)</td>', re.S)


def _rows(page: str) -> dict[str, tuple[bool, str]]:
    """anchor -> (greyed, the kernel cell's HTML)."""
    return {anchor: (bool(greyed), cell) for anchor, greyed, cell in _ROW.findall(page)}


def test_the_kernel_stack_traces_page_says_which_rows_another_graph_calls(tmp_path):
    out = tmp_path / "out"
    report(cuda211(LOG), out)
    raw = raw_graphs(cuda211(LOG))
    backward = raw["0_backward"]
    own_page, caller_page = _kernel_pages(out, backward.compile_id)[1], _kernel_pages(out, raw["1_backward"].compile_id)[1]
    page = (out / own_page).read_text()
    rows = _rows(page)
    assert len(rows) == len(backward.stacks) == 7
    note = "listed by torch for this graph, but called by another graph's code: "
    for name in backward.stacks:
        greyed, cell = rows[kernel_anchor(name)]
        if name in backward.calls:
            assert not greyed and "call site 1" in cell and note not in cell
        else:  # 1_backward's (its code names them), on that graph's page
            assert greyed and "call site" not in cell
            assert f'{note}<a href="../{caller_page}#{kernel_anchor(name)}">[1/0] backward</a>' in cell
            assert kernel_anchor(name) in _rows((out / caller_page).read_text())
    assert "3 kernel calls of the list (greyed) are\nanother graph's" in page
    # the caller's own page has none
    assert not any(greyed for greyed, _ in _rows((out / caller_page).read_text()).values())


def test_a_leftover_no_earlier_graph_lists_as_its_own_is_said_not_called_here(tmp_path):
    """With triton_per_fused_mul_sum_0:1 taken out of 1_backward's stack traces, no graph logged before 0_backward
    lists it as its own: its row says only that this graph's code does not call it; mm:2 and :3 keep their graph."""
    def edit(stacks: dict) -> dict:
        if set(stacks) == set(raw_graphs(cuda211(LOG))["1_backward"].calls):
            del stacks["triton_per_fused_mul_sum_0:1"]
        return stacks

    log = _with_kernel_stacks(cuda211(LOG), tmp_path / "edited.log", edit)
    out = tmp_path / "out"
    report(log, out)
    rows = _rows((out / _kernel_pages(out, "[0/0_1]")[1]).read_text())
    greyed, cell = rows[kernel_anchor("triton_per_fused_mul_sum_0:1")]
    assert greyed and cell.endswith("<div class=\"other-graph-note\">not called by this graph's code</div>")
    assert "[1/0] backward</a>" in rows[kernel_anchor("extern_kernels.mm:2")][1]


_SECTION_HEADER = re.compile(r'''<p class="prov-meta"><strong class="prov-graph" title="torch's name for it \(AOT ID\): ([^"]*)">'''
                             r'[^<]*</strong> · <a href="[^"]*">(\d+) kernels? and the '
                             r'user source lines they came from</a>(?: \(\+ (\d+) listed for (another graph|other graphs)\))?')


def test_a_provenance_section_counts_its_own_kernels_and_the_others_apart(tmp_path):
    """Each section's header counts the kernels its graph's code calls (the stack traces it lists that the code's
    debug-handle comments name), and the others torch listed for it apart: 0_backward's said "7 kernels", three of
    them 1_backward's."""
    out = tmp_path / "out"
    report(cuda211(LOG), out)
    headers = {m[0]: (int(m[1]), int(m[2] or 0), m[3]) for page in (out / "provenance").glob("*.html")
               for m in _SECTION_HEADER.findall(page.read_text())}
    raw = raw_graphs(cuda211(LOG))
    expected = {}
    for aot_id, graph in raw.items():
        own = sum(name in graph.calls for name in graph.stacks)
        other = len(graph.stacks) - own
        expected[aot_id] = (own, other, "" if not other else "another graph" if other == 1 else "other graphs")
    assert headers == expected
    assert headers["0_backward"] == (4, 3, "other graphs") and headers["3_backward"] == (3, 2, "other graphs")


def test_a_kernels_user_lines_are_named_short_with_the_path_in_their_title(tmp_path):
    """The user lines of each kernel were written as full paths (`/work/main/tests/data/…/train_break_recompile.py:23`,
    five lines each on a phone) where every other page writes `train_break_recompile.py:23`. They say the short form,
    the logged path in the title. Expected from the raw stack traces: each frame in the program's file."""
    out = tmp_path / "out"
    report(cuda211(LOG), out)
    graphs = raw_graphs(cuda211(LOG)).values()
    for compile_id in {g.compile_id for g in graphs}:  # (its forward's and its backward's pages)
        frames = {(path, int(n)) for graph in graphs if graph.compile_id == compile_id
                  for traces in graph.stacks.values() for trace in traces
                  for path, n in re.findall(r'File "([^"]+/train_break_recompile\.py)", line (\d+)', trace)}
        assert frames and {path for path, _ in frames} == {
            "/work/main/tests/data/cuda_torch211/programs/train_break_recompile.py"}  # where it was recorded
        shown = set()
        for url in _kernel_pages(out, compile_id):
            page = (out / url).read_text()
            cells = re.findall(r"</td>\n<td class=\"mono\">[^<]*</td>\n<td>(.*?)</td>\n<td>", page, re.S)
            assert cells
            shown |= {(m[0], int(m[2])) for cell in cells
                      for m in re.findall(r'title="([^":]+)(: what torch.compile did to this line)?">train_break_recompile\.py:(\d+)<', cell)}
            assert all(path not in re.sub(r'title="[^"]*"', "", cell) for cell in cells for path, _ in frames)
        assert shown == frames


def _aot_raw(log: Path) -> tuple[str, list[str]]:
    """An AOTInductor log's wrapper code (graph_dump inductor_aot_wrapper_code) and the kernels its one kernel stack
    traces artifact lists, read without compilescope."""
    from ..tracelog import raw_records

    records = raw_records(log)
    (wrapper,) = [p for e, p in records if e.get("graph_dump", {}).get("name") == "inductor_aot_wrapper_code"]
    (stacks,) = [json.loads(p) for e, p in records
                 if e.get("artifact", {}).get("name") == "inductor_provenance_tracking_kernel_stack_traces"]
    return wrapper, list(stacks)


def test_kernels_an_aotinductor_wrapper_never_names_are_not_the_packages(tmp_path):
    """The peer log inductor_provenance_extended_log.txt logs, outside any compile id as the package's wrapper is,
    stack traces of five kernels (vllm's layernorm.py, rope.py, ...) that its wrapper names nowhere: it loads and
    launches three other Triton kernels and calls mm through torch's C shim. They are listed apart from the package's
    (its section counts none of them), on the kernel stack traces page and on the source lines they came from."""
    from ..conftest import peer

    log = peer("inductor_provenance_extended_log.txt")
    wrapper, listed = _aot_raw(log)
    assert len(listed) == 5 and not any(name.split(":")[0] in wrapper for name in listed)
    loaded = re.findall(r"kernels_\.(\w+) = loadKernel\(", wrapper)
    assert sorted(loaded) == ["triton_poi_fused_addmm_gelu_2", "triton_poi_fused_addmm_relu_sigmoid_0",
                              "triton_poi_fused_mul_1"]
    with read_trace(log) as trace:
        (cp,) = analyze_provenance(trace).compiles.values()
    (section,) = cp.sections
    assert sorted(section.other_graphs) == sorted(listed) and section.own_kernels == [] and section.called_by == {}

    out = tmp_path / "out"
    report(log, out)
    (page,) = (out / "provenance").glob("*.html")
    header = re.sub(r"<[^>]+>", "", re.search(r'<p class="prov-meta">(.*?)</p>', page.read_text(), re.S)[1])
    assert "0 kernels and the user source lines they came from (+ 5 listed that its code never names" in header
    (kernels_page,) = out.glob("*/inductor_provenance_tracking_kernel_stack_traces_*_readable.html")
    rows = _rows(kernels_page.read_text())
    assert {name: greyed for name, (greyed, _) in rows.items()} == {kernel_anchor(n): True for n in listed}
    (rope,) = (out / "sources").glob("rope.py_*.html")
    items = [html.unescape(i) for i in re.findall(r'<li class="n-kernel">(.*?)</li>', rope.read_text(), re.S)]
    assert items and all(i.startswith("kernels listed outside any compile, not the AOTInductor package's: ")
                         for i in items)


def test_an_aotinductor_wrapper_that_calls_every_listed_kernel_keeps_them_all():
    """The peer log inductor_provenance_aot_debug_handle_log.txt: each of the five calls its stack traces list
    (`name:N`) is named by a `[Provenance debug handles]` comment of its wrapper: all five are the package's."""
    from ..conftest import peer

    log = peer("inductor_provenance_aot_debug_handle_log.txt")
    wrapper, listed = _aot_raw(log)
    assert len(listed) == 5 and all(f"[Provenance debug handles] {name}" in wrapper for name in listed)
    with read_trace(log) as trace:
        (cp,) = analyze_provenance(trace).compiles.values()
    (section,) = cp.sections
    assert section.other_graphs == [] and sorted(k.name for k in section.own_kernels) == sorted(listed)

"""The transformed-code page: recorded code (run/capture) and torch's own disassembly (foreign logs)."""

from __future__ import annotations

import ast
import gzip
import json
import re

import pytest

import compilescope
from compilescope.analyses.transformed import original_lines, transformed_code
from compilescope.decompile.distext import decompile_dis
from compilescope.ingest.reader import read_trace

from ..browser import browser_page
from ..conftest import REPO, cuda211, report, torch213
from ..sources.test_browser import open_source_page


def test_foreign_log_resume_functions_decompiled_from_torchs_disassembly():
    with read_trace(str(torch213("graph_breaks.log"))) as trace:
        found = transformed_code(trace)
    assert sorted(c.function for c in found.values()) == [
        "torch_dynamo_resume_in_f_at_23", "torch_dynamo_resume_in_f_at_27", "torch_dynamo_resume_in_f_at_28",
        "torch_dynamo_resume_in_f_at_30"]
    for code in found.values():
        assert code.decompiled and code.origin == "torch_bytecode"
        fn = ast.parse(code.source).body[0]
        assert fn.args.args == [] and fn.args.kwonlyargs  # the order is not in the log: keyword-only
        assert code.compiled_fns and all(n in code.source for n in code.compiled_fns)


@pytest.mark.parametrize("line, broken, problem", [
    # an instruction whose count is missing from the text (it used to raise TypeError out of the report)
    ("44 CALL                     0", "44 CALL", "CALL without a count as its argument"),
    # a count no code could store (it used to make that many names: memory without bound for a big one)
    ("124 BUILD_LIST               1", "124 UNPACK_SEQUENCE   100000",
     "unpacking into 100000 targets, more than the code could store"),
])
def test_broken_disassembly_in_a_log_is_not_decompiled_and_says_why(tmp_path, line, broken, problem):
    text = torch213("graph_breaks.log").read_text()
    start = text.index("torch_dynamo_resume_in_f_at_23_MODIFIED_BYTECODE")
    at = text.index(line, start)
    log = tmp_path / "broken.log"
    log.write_text(text[:at] + broken + text[at + len(line):])
    with read_trace(str(log)) as trace:
        found = {c.function: c for c in transformed_code(trace).values()}
    assert not found["torch_dynamo_resume_in_f_at_23"].decompiled
    assert found["torch_dynamo_resume_in_f_at_23"].note == f"not decompiled: {problem}"
    marked = [ln for ln in found["torch_dynamo_resume_in_f_at_23"].source.splitlines() if ln.startswith("# >>")]
    assert [ln.split()[2:] for ln in marked] == [broken.split()]  # the annotated disassembly points at it
    assert all(c.decompiled for name, c in found.items() if name != "torch_dynamo_resume_in_f_at_23")


@pytest.mark.torch
def test_disassembly_text_decompiles_like_the_code_object():
    import dis

    import torch
    from torch._dynamo.convert_frame import register_bytecode_hook

    from compilescope.decompile import decompile

    from . import programs

    pairs = []
    torch._dynamo.reset()
    handle = register_bytecode_hook(lambda o, n: pairs.append((decompile(n), decompile_dis(dis.Bytecode(n).dis(), n.co_name))))
    try:
        torch.compile(programs.branch_break, backend="eager")(torch.ones(3))
    finally:
        handle.remove()
        torch._dynamo.reset()
    assert pairs
    for from_code, from_text in pairs:
        assert from_code.ok and from_text.ok
        assert from_code.source.splitlines()[1:] == from_text.source.splitlines()[1:]  # same body


@pytest.mark.browser
def test_page_shows_code_next_to_source_and_links_the_graph(tmp_path):
    out = tmp_path / "out"
    report(torch213("transformed_code.log"), out)
    with browser_page() as page:
        open_source_page(page, out, "source_view.py")
        page.click("#L22 .lt")
        page.locator("#L22 .notes a.transformed-link").click()
        page.wait_for_load_state()
        assert page.url.endswith("-_1_0_1/transformed_code.html")
        code = page.inner_text("#tc-code")
        assert code.startswith("def torch_dynamo_resume_in_f_at_22(__nested_resume_fns, __nested_frame_values, y):")
        assert re.search(r"\b22\s+if y\.sum\(\) > 0:", page.inner_text("#tc-original"))
        page.locator("#tc-code a", has_text="__compiled_fn_").first.click()
        page.wait_for_load_state()
        assert "dynamo_output_graph" in page.url
        assert not page.console_errors and not page.external_requests


def test_a_rebuilt_function_without_its_def_line_shows_what_the_log_quotes_of_it(tmp_path):
    # transformed_code.log was recorded elsewhere, so source_view.py is rebuilt from the log's quotes, which lack
    # `def f(x, n=2):` (line 20). [0/0]'s page said "The source of this function is not in the log"; it shows f's
    # quoted lines from 20 on, and stops where f ends: main's lines (32, 36) are quoted too, without their `def`,
    # and the stacks that quote them place them in main.
    out = tmp_path / "out"
    report(torch213("transformed_code.log"), out)
    page = (out / "-_0_0_0" / "transformed_code.html").read_text()
    shown = dict(re.findall(r'<div><a class="ln"[^>]*>(\d+)</a> (.*?)</div>', page))
    assert "The source of this function is not in the log." not in page
    assert list(shown)[0] == "20" and "y = scale(x, n)" in shown["21"] and "return y * m" in shown["26"]
    assert not any(line.startswith("def ") for line in shown.values())
    program = ast.parse((REPO / "tests/data/torch213/programs/source_view.py").read_text())
    f = next(node for node in program.body if isinstance(node, ast.FunctionDef) and node.name == "f")
    assert [int(n) for n in shown] == list(range(f.lineno, f.end_lineno + 1))


def test_a_compiled_wrapper_shows_only_its_own_lines_not_the_other_wrapper_of_its_file(tmp_path):
    # hf_gpt2_generate: transformers' generic.py has two functions named `wrapper`. Dynamo compiled the one at line
    # 933 (compilation_metrics: co_name wrapper, co_firstlineno 933, for all 5 compiles) and inlined the other, which
    # the log quotes at 1016-1068 ('generic.py:1024 in wrapper'): a traceback runs wrapper:939 -> GPT-2's forward ->
    # wrapper:1068. The file is not on disk, so it is rebuilt from the log. Each page showed the other wrapper's lines
    # (and __getitem__'s, 1112-1114) under the compiled one's; the compiled code's own bytecode, recorded by `run`,
    # reaches no line past 942.
    log = cuda211("hf_gpt2_generate.log.gz")
    with gzip.open(log, "rt", encoding="utf-8") as f:
        text = f.read()
    assert set(re.findall(r'"co_name": "wrapper", "co_filename": "[^"]*/generic\.py", "co_firstlineno": (\d+)',
                          text)) == {"933"}
    assert re.search(r"generic\.py:1024 in wrapper\b", text) and re.search(
        r'generic\.py", line 939, in wrapper\n.*\n\t +File "[^"]*modeling_gpt2\.py", line \d+, in forward\n.*\n'
        r'\t +File "[^"]*generic\.py", line 1068, in wrapper\n', text)
    original = text.split('"compilescope_original_bytecode"', 1)[1].split("\nV", 1)[0]
    code_lines = {int(n) for n in re.findall(r"^\t\s{0,9}(\d+)\s+(?:>>\s*)?\d+ [A-Z]", original, re.M)}
    assert min(code_lines) == 933 and max(code_lines) == 942
    out = tmp_path / "out"
    report(log, out)
    pages = sorted(out.glob("*/transformed_code.html"))
    assert len(pages) == 5
    for page in pages:
        shown = [int(n) for n in re.findall(r'<div><a class="ln"[^>]*>(\d+)</a>', page.read_text())]
        assert shown[0] == 933 and {935, 936, 937, 939} <= set(shown) and max(shown) <= 942, (page, shown)
    rebuilt = json.loads((out / "sources.json").read_text())
    generic = next(f for f in rebuilt["files"] if f["path"].endswith("transformers/utils/generic.py"))
    assert generic["origin"] == "log" and "1024" in generic["text"]  # the other wrapper is on the source page


def test_unquoted_lines_on_one_gap_of_the_source_page_are_one_row():
    # hf_gpt2_static_cache compiled transformers' generic.py `wrapper` at line 933 (its compilation_metrics); the log
    # quotes its code at 935, 936 and 939 only ('generic.py:935', 'line 939' with the code under it). 933 is a line
    # of the source page of its own (the frame starts there), and 934 a gap of one line before the quoted 935; 937
    # and 938 are one gap of the page, so one row beside the transformed code.
    log = cuda211("hf_gpt2_static_cache.log.gz")
    with gzip.open(log, "rt", encoding="utf-8") as f:
        text = f.read()
    assert set(re.findall(r'"co_name": "wrapper", "co_filename": "[^"]*/generic\.py", "co_firstlineno": (\d+)',
                          text)) == {"933"}
    assert not re.search(r"generic\.py(:|\", line )(934|937|938)\b", text)
    results = compilescope.analyze(log)
    rows, source = original_lines(results.transformed["-_0_0_0"], results.sources)
    assert source is not None and source.path.endswith("transformers/utils/generic.py")
    assert [(r.first, r.last) for r in rows if r.text is None] == [(933, 933), (934, 934), (937, 938)]
    assert [r.first for r in rows if r.text is not None] == [935, 936, 939]


def test_transformed_code_holds_its_compiles_graph_and_guards_as_the_log_wrote_them(tmp_path):
    """transformed_code.log: each compile that Dynamo compiled wrote a dynamo_output_graph (the graph __compiled_fn_*
    runs) and a dynamo_cpp_guards_str (the guards that let the code run), each naming its payload by has_payload: the
    analysis hands the page those two, as the compile's own, and the page links them."""
    log = torch213("transformed_code.log")
    payloads: dict[tuple[str, str], str] = {}  # (kind, "[1/0_1]") -> has_payload
    for kind, frame, compile_, attempt, md5 in re.findall(
            r'\{"(dynamo_output_graph|dynamo_cpp_guards_str)": .*?"frame_id": (\d+), "frame_compile_id": (\d+), '
            r'"attempt": (\d+), "has_payload": "(\w+)"', log.read_text()):
        payloads[(kind, f"[{frame}/{compile_}{f'_{attempt}' if attempt != '0' else ''}]")] = md5
    results = compilescope.analyze(log)
    codes = list(results.transformed.values())
    assert {c.compile_id for c in codes} == {cid for _, cid in payloads} and len(codes) == 4
    for code in codes:
        assert code.graph_artifact is not None and code.guards_artifact is not None
        assert (code.graph_artifact.name, code.graph_artifact.md5) == (
            "dynamo_output_graph", payloads[("dynamo_output_graph", code.compile_id)])
        assert (code.guards_artifact.name, code.guards_artifact.md5) == (
            "dynamo_cpp_guards_str", payloads[("dynamo_cpp_guards_str", code.compile_id)])
    out = tmp_path / "out"
    report(log, out)
    code = next(c for c in codes if c.compile_id == "[1/0_1]")
    page = (out / code.dir_name / "transformed_code.html").read_text()
    # The graph's and the guards' pages, as the compile's index names them (tlparse's numbered file names).
    linked = set(re.findall(r'href="\.\./([^"#]+)"', page))
    graph, guards = (f"{code.dir_name}/dynamo_output_graph_{code.graph_artifact.number}.txt",
                     f"{code.dir_name}/dynamo_cpp_guards_str_{code.guards_artifact.number}.txt")
    assert {graph, guards} <= linked and (out / graph).is_file() and (out / guards).is_file(), linked


def test_a_guard_tree_of_hundreds_of_kb_is_linked_not_copied_onto_the_transformed_code_page(tmp_path):
    """hf_llama: each compile's guard tree is 326 KB (1,158 lines, a check per parameter and buffer of the model),
    and its transformed code page held it whole, folded: 91% of the page (408 KB), the same text as its guards page.
    The page now links to that page only; a short tree (transformed_code.log's) stays on the page, folded."""
    out = tmp_path / "out"
    report(torch213("hf_llama.log.gz"), out)
    with read_trace(str(torch213("hf_llama.log.gz"))) as trace:
        codes = transformed_code(trace)
        assert len(codes) == 5
        for code in codes.values():
            guards = code.guards_artifact
            assert guards is not None and guards.payload is not None and guards.payload.length > 300_000
            page = (out / code.dir_name / "transformed_code.html").read_text()
            assert len(page) < 60_000, (code.dir_name, len(page))
            assert not code.guards_inline
            text = trace.payload_text(guards.payload)
            assert text.splitlines()[3] not in page and "show the guards" not in page
            said = re.search(r'<p id="tc-guards">This code runs only while its guards hold \((\d+) lines\): they are on '
                             r'<a href="\.\./([^"]+)">the guards page</a>', page)
            assert said and int(said[1]) == guards.payload.lines == text.count("\n") + (not text.endswith("\n"))
            assert said[2] == f"{code.dir_name}/dynamo_cpp_guards_str_{guards.number}.txt"
            assert (out / said[2]).read_text() == text
    short = tmp_path / "short"
    report(torch213("transformed_code.log"), short)
    assert all(c.guards_inline for c in compilescope.analyze(torch213("transformed_code.log")).transformed.values())
    page = (short / "-_1_0_1" / "transformed_code.html").read_text()
    assert "<details><summary>show the guards</summary><pre>" in page and 'id="tc-guards"' not in page

"""Dynamo's resume functions (torch_dynamo_resume_in_f_at_23) are named as the rest of the function they resume,
wherever a compile's function is listed, as the recompiles already name them; a stack frame keeps torch's name and
says in its title what it is.

torch 2.14's graph_breaks.log (tests/data/torch213/programs/graph_breaks.py): f breaks at lines 23 (the
data-dependent branch), 27 and 30 (print) and 28 (.item()); compilation_metrics names [1/0]..[4/0]'s functions
torch_dynamo_resume_in_f_at_23, _27, _28 and _30.
"""

from __future__ import annotations

import gzip
import json
import html
import re

from compilescope.analyses.graph_breaks.resume_names import resume_of
from compilescope.analyses.sources.analysis import analyze_sources
from compilescope.analyses.sources.break_sites import graph_break_sites
from compilescope.ingest.reader import read_trace

from ..conftest import TORCH213_LOGS, cuda211, run_cli, torch214

LOG = torch214("graph_breaks.log")


def _resume_functions() -> dict[str, tuple[str, int]]:
    """compile id -> (function resumed, line) as the raw log's compilation_metrics name them."""
    text = gzip.open(LOG, "rt").read()
    names = re.findall(r'"compilation_metrics": \{"compile_id": "(\d+/\d+)", "frame_key": "\d+", "co_name": "(\w+)"', text)
    return {f"[{cid}]": (m[1], int(m[2])) for cid, name in names
            if (m := re.fullmatch(r"torch_dynamo_resume_in_(\w+?)_at_(\d+)", name))}


def test_the_raw_log_resumes_f_after_each_graph_break():
    resumed = _resume_functions()
    assert resumed == {"[1/0]": ("f", 23), "[2/0]": ("f", 27), "[3/0]": ("f", 28), "[4/0]": ("f", 30)}
    program = (TORCH213_LOGS.parent / "programs" / "graph_breaks.py").read_text().splitlines()
    assert all("graph break" in program[line - 1] for _, line in resumed.values())


def test_slowest_compilations_name_a_resume_function_as_the_rest_of_f(tmp_path, capsys):
    resumed = _resume_functions()
    assert run_cli("summary", LOG) == 0
    out = capsys.readouterr().out
    table = out[out.index("slowest   function"):]
    rows = {line.split()[0]: line for line in table.splitlines()[2:] if line.startswith("[")}
    for cid, (func, line) in resumed.items():
        assert f"{func} (after its graph break at line {line})" in rows[cid]
    assert "torch_dynamo_resume_in" not in table.split("\n\n", 1)[0]
    assert rows["[0/0]"].split()[1] == "f"

    assert run_cli(LOG, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    slowest = page[page.index('<table class="slowest">'):]
    slowest = slowest[:slowest.index("</table>")]
    cells = {cid: (html.unescape(title), text) for cid, title, text in re.findall(
        # (a restarted compilation's row links its attempt that compiled: "#[1/0_1]" for the row [1/0])
        r'href="#\[[^"]*"[^>]*>(\[\d+/\d+\])</a></td><td class="mono"><span title="([^"]*)">([^<]*)</span></td>', slowest)}
    assert cells == {cid: (f"Dynamo's resume function torch_dynamo_resume_in_{func}_at_{line}",
                           f"{func} (after its graph break at line {line})") for cid, (func, line) in resumed.items()}
    # A stack frame keeps torch's name, and its title says what it is.
    assert ('<span class="fn" title="Dynamo&#39;s resume function: the rest of f after its graph break at line 23">'
            "in torch_dynamo_resume_in_f_at_23</span>") in page


def _resume_label(func: str, line: int) -> str:
    """A resume function as a page names a compiled frame: the rest of func, torch's name in its title."""
    return (f'<span title="Dynamo&#39;s resume function torch_dynamo_resume_in_{func}_at_{line}">'
            f"{func} (after its graph break at line {line})</span>")


def test_pages_name_a_compiled_resume_function_as_the_rest_of_f(tmp_path):
    """A compile's page names the frame it compiled, its transformed code page says what runs instead of it, and the
    source page what resumed f after a graph break: each as the rest of f, as the slowest compilations do (they
    showed torch_dynamo_resume_in_f_at_23). Each is compiled in one attempt of its frame's ([1/0_1], ..., [4/0])."""
    resumed = _resume_functions()
    assert run_cli(LOG, "-o", tmp_path / "r", "--no-browser") == 0
    report = tmp_path / "r"
    for cid, (func, line) in resumed.items():
        frame = cid[1:].split("/")[0]
        compiled = []
        for page in sorted(report.glob(f"-_{frame}_0_*/index.html")):
            text = page.read_text()
            if '<td id="compiled-frame">' in text:
                row = text[text.index('<td id="compiled-frame">'):]
                compiled.append(row[:row.index("</td>")])
        assert compiled and all(f'<span class="muted">in {_resume_label(func, line)}</span>' in row for row in compiled)
        [transformed] = report.glob(f"-_{frame}_0_*/transformed_code.html")
        assert f'<h1>What runs instead of <span class="mono">{_resume_label(func, line)}</span>' in transformed.read_text()
    [source] = (report / "sources").glob("graph_breaks.py_*.html")
    # Each graph break names the resume function that took over after it, where that function starts elsewhere.
    said = re.findall(r"→ resumed by <span class=\"mono\" ([^>]*>[^<]*</span>)", source.read_text())
    assert said and all(f"<span {s}" in {_resume_label(f, n) for f, n in resumed.values()} for s in said)
    assert "resumed by <span class=\"mono\">torch_dynamo" not in source.read_text()


def test_a_recompiled_resume_function_is_named_on_the_page_as_the_rest_of_forward(tmp_path):
    """train_break_recompile.py (cuda_torch211) prints at line 22 of forward, a graph break; both of forward's compiled
    parts recompiled for x's size. The page's Recompiles name the second as the summary's finding does, "forward (after
    its graph break at line 22)", and said torch_dynamo_resume_in_forward_at_22 (the rest of forward after ...)."""
    log = cuda211("train_break_recompile.log.gz")
    with gzip.open(log, "rt") as f:
        assert '"co_name": "torch_dynamo_resume_in_forward_at_22"' in f.read()
    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    heads = re.findall(r'<div class="recompile-frame" data-frame="[^"]*">\s*<p><strong class="mono"(.*?)>(.*?)</strong>',
                       page)
    assert heads == [("", "forward"), (' title="Dynamo&#39;s resume function torch_dynamo_resume_in_forward_at_22"',
                                       "forward (after its graph break at line 22)")]


def test_summary_and_check_name_a_recompiled_resume_function_as_the_rest_of_f(capsys):
    """diff_break.log (torch 2.13, programs/diff_pair.py): torch._dynamo.graph_break() on line 33 of f; the log's
    compilation_metrics compile the rest of f as torch_dynamo_resume_in_f_at_33 ([1/0], then [1/1] for y's size, whose
    first use is line 34). The summary's Recompiles and check's messages name it as the pages do; the summary
    --json and check --json's rule fields keep torch's name where they carry one."""
    log = TORCH213_LOGS / "diff_break.log.gz"
    text = gzip.open(log, "rt").read()
    names = re.findall(r'"compilation_metrics": \{"compile_id": "(\d+/\d+)", "frame_key": "\d+", "co_name": "(\w+)"', text)
    assert sorted(names) == [("0/0", "f"), ("0/1", "f"), ("1/0", "torch_dynamo_resume_in_f_at_33"),
                             ("1/1", "torch_dynamo_resume_in_f_at_33")]
    program = (TORCH213_LOGS.parent / "programs" / "diff_pair.py").read_text().splitlines()
    assert program[32].strip() == "torch._dynamo.graph_break()" and program[33].strip() == "return torch.relu(y) + 1"
    assert run_cli("summary", log) == 0
    out = capsys.readouterr().out
    recompiles = out[out.index("Recompiles ("):].split("\n\n", 1)[0]
    flat = " ".join(recompiles.replace("│", " ").split())
    assert "f (after its graph break at line 33) (diff_pair.py:33) ├── [1/0] → [1/1]" in flat
    assert "y first used at diff_pair.py:34 in f (after its graph break at line 33)" in flat
    assert "torch_dynamo_resume_in" not in recompiles
    assert run_cli("check", log, "--max-recompiles", "0", "--json") == 1
    [rule] = json.loads(capsys.readouterr().out)["rules"]
    assert rule["details"] == ["f (diff_pair.py:30) recompiled once",
                               "f after its graph break (diff_pair.py:33) recompiled once"]
    assert run_cli("summary", log, "--json") == 0
    frames = json.loads(capsys.readouterr().out)["recompiles"]["frames"]
    assert [f["name"] for f in frames] == ["f", "torch_dynamo_resume_in_f_at_33"]


def test_a_lambdas_resume_function_is_the_rest_of_the_lambda(tmp_path):
    """lambda_break.log (torch 2.13, programs/lambda_break.py): a compiled lambda calls torch._dynamo.graph_break() on
    line 17; torch names the rest of it torch_dynamo_resume_in_<lambda>_at_17, a name that is no identifier. Every
    place that reads the name reads it as the rest of <lambda>: the page's slowest compilations, the line's notes
    (the frame that starts there is the rest of the lambda, not a function of its own) and the break's resume
    function (the sources analysis parsed the name with a pattern of its own, which took <lambda>, and the note
    beside it with the central one, which did not: the line said "the rest of the function")."""
    log = TORCH213_LOGS / "lambda_break.log.gz"
    text = gzip.open(log, "rt").read()
    metrics = re.findall(r'"compilation_metrics": \{"compile_id": "(\d+/\d+)", "frame_key": "\d+", "co_name": "([^"]+)", '
                         r'"co_filename": "([^"]+)", "co_firstlineno": (\d+)', text)
    assert [(cid, name, int(first)) for cid, name, _, first in metrics] == [
        ("0/0", "<lambda>", 17), ("1/0", "torch_dynamo_resume_in_<lambda>_at_17", 17)]
    path = metrics[0][2]
    program = (TORCH213_LOGS.parent / "programs" / "lambda_break.py").read_text().splitlines()
    assert "torch._dynamo.graph_break()" in program[16]
    assert resume_of("torch_dynamo_resume_in_<lambda>_at_17") == ("<lambda>", 17)

    assert run_cli(log, "-o", tmp_path / "r", "--no-browser") == 0
    page = (tmp_path / "r" / "index.html").read_text()
    slowest = page[page.index('<table class="slowest">'):]
    slowest = slowest[:slowest.index("</table>")]
    assert ('<a class="mono" href="#[1/0]" title="frame 1 (a function Dynamo compiled), compile 0 (its first)">[1/0]</a>'
            '</td><td class="mono"><span title="Dynamo&#39;s resume function torch_dynamo_resume_in_&lt;lambda&gt;_at_17">'
            "&lt;lambda&gt; (after its graph break at line 17)</span></td>") in slowest

    with read_trace(str(log)) as trace:
        notes = analyze_sources(trace).file(path).notes[17]
        [site] = graph_break_sites(trace).sites
    assert [fr["function"] for fr in notes.started_frames] == ["<lambda>"]
    assert notes.rest_of == "<lambda>"
    assert [(r.function, r.resumed) for r in notes.resume_notes] == [("torch_dynamo_resume_in_<lambda>_at_17", "<lambda>")]
    assert (site.location.line, site.resume_functions) == (17, ["torch_dynamo_resume_in_<lambda>_at_17"])

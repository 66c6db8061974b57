"""Each term and constant has one definition: copies drift (each test here failed on the drifted copies)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from compilescope.analyses.analyze import analyze
from compilescope.analyses.log_digest import digest_log
from compilescope.analyses.rank_summary import summarize_rank
from compilescope.ingest.discover import rank_of
from compilescope.ingest.rank_logs import rank_logs_of
from compilescope.ingest.reader import read_trace

from .conftest import REPO, run_cli, torch213

SRC = REPO / "src" / "compilescope"


@pytest.mark.parametrize("name, failures, restarts", [
    ("graph_breaks.log", 0, 3),  # restarts are not failures (the digest said 3, the rank summary 0)
    ("compile_error_raises.log", 2, 0),
    ("recompiles.log", 1, 0),
])
def test_a_log_digest_and_a_rank_summary_count_the_same_failures(name, failures, restarts):
    with read_trace(str(torch213(name))) as trace:
        results = analyze(trace)
        digest = digest_log(results)
        summary = summarize_rank(results, 0)
    assert digest.failures == summary.failures == failures
    assert digest.restarts == restarts


@pytest.mark.parametrize("name, rank", [
    ("dedicated_log_torch_trace_rank_3_ab12.log", 3),
    ("dedicated_log_torch_trace_rank_10.log.gz", 10),
    ("copy_of_rank_1.log", None),  # the reader used to read it as rank 1 while the rank finder ignored it
    ("dedicated_log_torch_trace_abc.log", None),
])
def test_one_reading_of_a_rank_from_a_file_name(tmp_path, name, rank):
    path = tmp_path / name
    path.write_text("")
    assert rank_of(str(path)) == rank
    found = rank_logs_of([str(path)])
    assert [log.rank for log in found.logs] == ([] if rank is None else [rank])


def _python_sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in SRC.rglob("*.py")}


def test_no_compile_id_is_spelt_once():
    spelt = [str(p.relative_to(SRC)) for p, text in _python_sources().items() if '"[-/-]"' in text]
    assert spelt == ["model/ids.py"]
    templates = [p.name for p in (SRC / "render" / "html" / "templates").rglob("*.html") if "[-/-]" in p.read_text()]
    assert templates == []



def test_the_post_grad_graphs_names_are_listed_once():
    # freezing, autotuning and the dump each kept their own tuple of fx_sites.POST_GRAD's names (torch 2.13 logs the
    # graph as inductor_post_grad_graph, older torch as after_post_grad_graph): a reader with one name misses the other
    spelt = sorted(str(p.relative_to(SRC)) for p, text in _python_sources().items() if '"after_post_grad_graph"' in text)
    assert spelt == ["analyses/fx_sites.py"]


def test_the_aot_forward_graphs_names_are_listed_once():
    # freezing and the dump each kept their own pair of the names AOTAutograd logs its forward graph under (a training
    # compile's aot_forward_graph, an inference compile's aot_inference_graph), in two orders
    pairs = sorted(str(p.relative_to(SRC)) for p, text in _python_sources().items() for node in ast.walk(ast.parse(text))
                   if isinstance(node, ast.Tuple) and len(node.elts) == 2
                   and {getattr(e, "value", None) for e in node.elts} == {"aot_forward_graph", "aot_inference_graph"})
    assert pairs == ["analyses/fx_sites.py"]


def test_the_cli_uses_argparse_through_its_public_interface():
    private = [str(p.relative_to(SRC)) for p, text in _python_sources().items()
               if re.search(r"\._(option_string_actions|actions|optionals|positionals|registries)\b", text)]
    assert private == []


def test_errors_are_printed_by_main_alone():
    printing = [str(p.relative_to(SRC)) for p, text in _python_sources().items() if 'compilescope: error:' in text]
    assert printing == ["cli/__init__.py"]


def test_a_failed_report_after_the_program_ran_keeps_its_exit_status(tmp_path, capsys):
    """`run`: the report fails (output exists) after the program succeeded: one error line from main, status 2."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "index.html").write_text("an earlier report: --overwrite would replace it")
    script = tmp_path / "p.py"
    script.write_text("import os, shutil, sys\nshutil.copy(sys.argv[1], os.path.join(os.environ['TORCH_TRACE'], 'a.log'))\n")
    rc = run_cli("run", "--no-browser", "-o", tmp_path / "out", "--trace-dir", tmp_path / "t", "--",
                 sys.executable, script, torch213("graph_breaks.log"))
    err = capsys.readouterr().err
    assert rc == 2
    assert [line for line in err.splitlines() if "error:" in line] == [
        f"compilescope: error: {tmp_path / 'out'} already exists; pass --overwrite to replace it"]


def test_the_version_is_written_once():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    from importlib.metadata import version

    import compilescope

    assert version("compilescope") == compilescope.__version__
    out = subprocess.run([sys.executable, "-m", "compilescope", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"compilescope {compilescope.__version__}"
    short = subprocess.run([sys.executable, "-m", "compilescope", "-V"], capture_output=True, text=True, check=True)
    assert short.stdout == out.stdout  # tlparse's -V


def test_one_pattern_reads_a_node_of_a_graph_dump():
    # A node's name, its type where the graph is typed, and what follows its `=`: repeated_blocks and diff each had a
    # copy (`;  ` against `;\s+` before the freeing, an indent required or not), now fx_sites.FX_NODE.
    node_with_expression = re.compile(r'\\"\)\?\\s\*=\\s\*?\(\?P<')
    defined = sorted(str(p.relative_to(SRC)) for p, text in _python_sources().items()
                     if node_with_expression.search(text))
    assert defined == ["analyses/fx_sites.py"]


@pytest.mark.parametrize("literal, home", [
    ('"inductor_provenance_tracking_node_mappings"', "analyses/fx_sites.py"),  # provenance and user_kernels each had one
    ('"custom_kernel=True"', "analyses/user_kernels.py"),  # (provenance spelt it twice more)
])
def test_what_marks_a_user_kernel_and_its_mappings_is_spelt_once(literal, home):
    assert [str(p.relative_to(SRC)) for p, text in _python_sources().items() if literal in text] == [home]


def test_one_pattern_reads_an_fx_file_comment():
    # `# File: x.py:23 in f, code: ...`: fx_sites, activation_checkpoint and diff each had a copy (the file ended at the
    # first `:<line> in ` or the last, the function's characters limited or not), now fx_sites.FX_SOURCE_COMMENT
    file_comment = re.compile(r"#(?:\\s[*+]?| )*File:(?:\\s[*+]?| )*\(\?P<file>")
    defined = sorted(str(p.relative_to(SRC)) for p, text in _python_sources().items() if file_comment.search(text))
    assert defined == ["analyses/fx_sites.py"]
    from compilescope.analyses.fx_sites import FX_SOURCE_COMMENT

    m = FX_SOURCE_COMMENT.match('        # File: /p/a.py:12 in f, code: s = "b.py:3 in g"  ')
    assert (m["file"], m["line"], m["function"], m["code"].strip()) == ("/p/a.py", "12", "f", 's = "b.py:3 in g"')


def test_one_pattern_reads_a_python_traceback_frame():
    # `  File "x.py", line 23, in f`: metric_values had a copy, now user_locations.TRACEBACK_FRAME. Other formats: crash.py
    # reads faulthandler's `File "x.py", line 23 in f` (no comma), provenance a kernel stack's frame with no function.
    frame = re.compile(r"""r'(?:\^\\s\*|  )File "\(""")
    defined = sorted(str(p.relative_to(SRC)) for p, text in _python_sources().items() if frame.search(text))
    assert defined == ["analyses/crash.py", "analyses/provenance/stack_traces.py", "analyses/user_locations.py"]


def test_the_fields_graph_break_wording_reads_are_graph_breaks_own():
    # BreakWording (graph_breaks/wording.py) declares, for mypy only, the GraphBreak fields it reads: a field renamed or
    # retyped in GraphBreak alone would pass mypy against the stale copy and fail at run time (AttributeError).
    import dataclasses

    from compilescope.analyses.graph_breaks import GraphBreak

    tree = ast.parse((SRC / "analyses" / "graph_breaks" / "wording.py").read_text(encoding="utf-8"))
    [wording] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BreakWording"]
    declared = {ast.unparse(a.target): ast.unparse(a.annotation) for block in wording.body
                if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
                for a in block.body if isinstance(a, ast.AnnAssign)}
    fields = {f.name: f.type for f in dataclasses.fields(GraphBreak)}
    assert declared and {name: fields.get(name) for name in declared} == declared

"""Snapshots of `compilescope summary` (the rich terminal summary) on the torch 2.13 logs.

Regenerate after an intended change, then review the diff:

    COMPILESCOPE_UPDATE_SNAPSHOTS=1 python3 -m pytest -q tests/insights/test_terminal.py
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from compilescope.analyses.insights import SECTIONS
from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.render.terminal import print_summary

from ..analysis_files import insights_here
from ..conftest import cuda211, run_cli, torch213, torch213_moved
from .helpers import LOGS, insights_of

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("COMPILESCOPE_UPDATE_SNAPSHOTS") == "1"


def render(name: str) -> str:
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    # (the log's programs where this checkout has them, as where it was recorded: what the summary says of a program's
    # source, a custom op's body read or "not checked", must not depend on that checkout being on this machine)
    with tempfile.TemporaryDirectory() as moved_to:
        try:
            log = torch213_moved(f"{name}.log", Path(moved_to))
        except AssertionError:  # (a log that names no program of the set)
            log = torch213(f"{name}.log")
        with read_trace(str(log)) as trace:
            print_summary(insights_here(trace), console)
    # Trailing spaces are padding, not content (and editors strip them from the snapshot files).
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


@pytest.mark.parametrize("name", LOGS)
def test_summary_snapshot(name):
    text = render(name)
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: run with COMPILESCOPE_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


# AOTInductor compiles, which have no compile id: the CPU package (torch 2.13) and the CUDA one whose loading crashed
# (H200, torch 2.11). Their tables name the package by its line where tlparse's [-/-] would be.
AOTI_LOGS = {"aoti_deploy": ("torch213", "aoti_deploy.log.gz"),
             "aoti_deploy_cuda_dynamic": ("cuda211", "aoti_deploy_cuda_dynamic.log.gz")}


@pytest.mark.parametrize("name", list(AOTI_LOGS))
def test_summary_snapshot_of_an_aoti_compile(name):
    where, log = AOTI_LOGS[name]
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    with read_trace(str((torch213 if where == "torch213" else cuda211)(log))) as trace:
        print_summary(insights(trace), console)
    text = "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: run with COMPILESCOPE_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", LOGS)
def test_summary_fits_100_columns_without_colour(name):
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    print_summary(insights_of(name), console)
    out = console.file.getvalue()
    assert "\x1b[" not in out  # no escape codes without a colour system
    assert max(len(line) for line in out.splitlines()) <= 100


def test_summary_says_what_matters_in_words():
    # Meaning never rides on colour alone: severities, the limit flag and arrows are text.
    text = render("recompiles")
    assert "ERROR  h hit the recompile limit and runs uncompiled" in text
    assert "[RECOMPILE LIMIT HIT]" in text
    assert "[0/0] → [0/1] → [0/2] → [0/3]" in text
    assert "failed guard of [0/1]: tensor 'x' dtype mismatch. expected Float, actual Double" in text
    text = render("graph_breaks")
    assert "Graph breaks (3 distinct, 4 in total)" in text
    text = render("compile_error_lowering")
    assert "[0/0]  Inductor lowering  ·  InductorError" in text


def _render_at(width: int, ins) -> str:
    console = Console(width=width, color_system=None, record=True, file=io.StringIO())
    print_summary(ins, console)
    return console.export_text()


def test_at_80_columns_hints_wrap_whole_and_nothing_is_cut():
    """`summary | less` at 80 columns: every hint can still be copied; no cell ends in "…"."""
    ins = insights_of("graph_breaks")
    text = _render_at(80, ins)
    assert "…" not in text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    words = set(text.split())
    for brk in ins.graph_breaks.breaks:
        for hint in brk.hints[:1]:
            assert set(hint.split()) <= words, hint  # each word whole, none folded or cut
    assert "`torch._dynamo.config.capture_scalar_outputs" in words and "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1`" in words


def test_at_80_columns_the_dynamic_shapes_detail_is_not_squeezed():
    ins = insights_of("dynamic_shapes")
    text = _render_at(80, ins)
    flat = " ".join(text.split())
    for s in ins.dynamic_shapes.symbols:
        assert f"{s.symbol} = {s.value} in {s.compile_id}" in flat and (s.source_text or s.source) in flat
    for g in ins.dynamic_shapes.guards:
        assert g.expr in flat
    # The detail column gets most of the width: its first line holds a size and the first symbol made of it whole.
    assert any("x.size()[0]: s77 = 3 in [0/1]" in line for line in text.splitlines())


def test_at_80_columns_a_value_stays_with_its_unit(tmp_path):
    """compiled_autograd's slowest compiles: "Compiled autograd capture (36 ms)" is wider than its column, and
    breaks before "(36 ms)", never inside it. A log named as torch names one: the header's count of compile ids
    goes to the next line whole."""
    with read_trace(str(torch213("compiled_autograd.log.gz"))) as trace:
        lines = [line.rstrip() for line in _render_at(80, insights(trace)).splitlines()]
    captures = [i for i, line in enumerate(lines) if line.endswith("Compiled autograd capture")]
    assert len(captures) == 2  # [!0/-/-] and [!1/-/-], their time on the next line
    # (the next line ends with it: the function column may wrap beside it, "the backward graph [!0]")
    assert all(re.search(r"\s\(\d+(\.\d+)? (ms|s|µs)\)$", lines[i + 1]) for i in captures)
    assert not [(line, below) for line, below in zip(lines, lines[1:])
                if re.search(r"\d$", line) and re.match(r"\s*(ms|s|µs)\b", below)]  # no number without its unit
    long_name = tmp_path / "dedicated_log_torch_trace_rank_1_fglwclht.log"
    long_name.write_bytes(torch213("recompiles.log").read_bytes())
    with read_trace(str(long_name)) as trace:
        ins = insights(trace)
    lines = [line.rstrip() for line in _render_at(80, ins).splitlines()]
    assert lines[:2] == [f"compilescope summary · {long_name.name}", f"· {ins.n_compiles} compile ids"]


def test_a_failure_without_a_logged_location_is_not_placed_on_the_def_line():
    # compile_error_raises.log: [1/0]'s backend failure has fail_user_frame_lineno null; line 22 of the program is
    # `def g_relu(x):`, where the compiled frame starts, which the headline once gave as where it failed.
    program = (torch213("compile_error_raises.log").parent.parent / "programs" / "compile_error_raises.py").read_text()
    assert program.splitlines()[21].startswith("def g_relu(")
    text = " ".join(render("compile_error_raises").replace("│", " ").split())
    assert "[1/0] failed in Backend compiler at compile_error_raises.py:22" not in text
    assert ("[1/0] failed in Backend compiler while compiling g_relu (defined at compile_error_raises.py:22; "
            "no failure location logged)") in text


# Each section's heading in the summary and its id on the page, keyed by the section a finding names.
SECTION_HEADINGS = {"testing_only": "Settings for torch's own tests (", "crash": "Crash", "errors": "Errors (", "recompiles": "Recompiles (", "graph_breaks": "Graph breaks (",
                    "numpy": "NumPy in graphs (", "numerics": "Results that differ from eager (",
                    "compile_time": "Compile time (", "autotuning": "Autotuning (", "user_kernels": "Your Triton kernels (", "cudagraphs": "CUDA graphs (",
                    "raised": "Errors torch raised, caught by the program (", "warnings": "Warnings torch printed (", "caches": "Caches (", "dynamic_shapes": "Dynamic shapes (",
                    "runtime": "Runtime"}


def test_fix_first_ranks_as_the_sections_below_it_follow(tmp_path):
    """compiled_autograd.log (torch213/README.md): [0/0] breaks at loss.backward() and compiled autograd captures two
    backward graphs, both warnings; [0/1] recompiles for the size and makes it dynamic, info. Fix first ranked the graph
    break first, though the summary (and the page) show Recompiles, where the backward graphs are, above Graph breaks.
    One order for both, the analysis': by severity, then the sections' order."""
    log = torch213("compiled_autograd.log.gz")
    with read_trace(str(log)) as trace:
        ins = insights(trace)
    # Draft export's issues have no section of their own: their details are on the report's export page.
    assert set(SECTION_HEADINGS) == set(SECTIONS) - {"export"}
    console = Console(width=100, color_system=None, record=True, file=io.StringIO())
    print_summary(ins, console)
    text = console.export_text()
    panel, body = text[:text.index("\nRecompiles (")], text[text.index("\nRecompiles ("):]  # (no crash, no error here)
    backward, graph_break = "compiled autograd captured 2 backward graphs", "graph break at compiled_autograd.py:27"
    assert f"WARN  {backward}" in panel and f"WARN  {graph_break}" in panel
    assert panel.index(backward) < panel.index(graph_break) and body.index("\nRecompiles (") < body.index("\nGraph breaks (")
    ranks = [(("error", "warning", "info").index(f.severity), SECTIONS.index(f.section)) for f in ins.findings]
    assert ranks == sorted(ranks) and len({s for _, s in ranks}) >= 3
    # The body's headings, the page's sections: both in the sections' order.
    shown = [s for s in SECTIONS if s in SECTION_HEADINGS and f"\n{SECTION_HEADINGS[s]}" in body]
    assert sorted(shown, key=lambda s: body.index(f"\n{SECTION_HEADINGS[s]}")) == shown and len(shown) >= 4
    assert run_cli(log, "-o", tmp_path / "report", "--no-browser") == 0
    page = (tmp_path / "report" / "index.html").read_text()
    ids = [s for s in re.findall(r'<h3 id="insights-(\w+)"', page) if s in SECTIONS]
    assert ids == [s for s in SECTIONS if s in ids] and ids[:3] == ["recompiles", "graph_breaks", "compile_time"]


def test_the_page_walks_the_sections_order(tmp_path, monkeypatch):
    """The page's Insights show their sections in the order it is given (insights.SECTIONS), not in one of its own:
    given them reversed, compiled_autograd.log's page (Recompiles, Graph breaks, Compile time, Caches, Dynamic shapes,
    as the test above reads them) shows them reversed. A section the page does not know fails it."""
    from compilescope.render.html.env import ENV

    log = torch213("compiled_autograd.log.gz")
    monkeypatch.setitem(ENV.globals, "insights_sections", tuple(reversed(SECTIONS)))
    assert run_cli(log, "-o", tmp_path / "reversed", "--no-browser") == 0
    page = (tmp_path / "reversed" / "index.html").read_text()
    ids = [s for s in re.findall(r'<h3 id="insights-(\w+)"', page) if s in SECTIONS]
    assert ids == [s for s in reversed(SECTIONS) if s in ids] and ids[-3:] == ["compile_time", "graph_breaks", "recompiles"]
    monkeypatch.setitem(ENV.globals, "insights_sections", (*SECTIONS, "a_new_section"))
    assert run_cli(log, "-o", tmp_path / "unknown", "--no-browser") != 0


def test_summary_lines_end_at_their_last_character(monkeypatch, capsys):
    """`compilescope summary LOG | less` (no terminal): no line ends in a space. rich pads each line of a table's
    wrapped cell to the column's width, so the wrapped hint of graph_breaks.log's print() break (the log's hint:
    "Avoid calling builtin `print` with argument types ['str']. Consider using an equivalent alternative
    function/method to `print`.") ended in spaces a copy took along. Nothing else changes: at 100 columns the output
    is the snapshot (written with those spaces stripped)."""
    monkeypatch.setenv("COLUMNS", "100")
    assert run_cli("summary", torch213("graph_breaks.log")) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.endswith(" ")] == []
    hint = ("Avoid calling builtin `print` with argument types ['str']. Consider using an equivalent alternative "
            "function/method to `print`.")
    assert hint not in out and hint in " ".join(out.split())  # wrapped: the line that was padded
    assert out == (SNAPSHOTS / "graph_breaks.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("columns", [80, 100])
def test_code_to_paste_is_printed_whole_on_one_line_and_prose_still_fits(monkeypatch, capsys, columns):
    """library_long_ident: forward's and loss3's fix is the call
    `torch._dynamo.mark_dynamic(encoder_hidden_states_for_cross_attention_with_padding_mask_applied, 0)`, longer than
    a line at 80 and at 100 columns. rich folded it inside the name ("…cross_attention_with_pa" / "dding_mask_applied,
    0)") or broke it at its space, and the call copied from the terminal was broken code. It is on a line of its own,
    whole, past the width (the terminal shows the rest on its next row); every other line fits."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert run_cli("summary", torch213("library_long_ident.log.gz")) == 0
    lines = capsys.readouterr().out.splitlines()
    call = "`torch._dynamo.mark_dynamic(encoder_hidden_states_for_cross_attention_with_padding_mask_applied, 0)`"
    whole = [line for line in lines if call in line]
    assert len(whole) == 2  # forward's fix and loss3's
    assert all(line.lstrip(" │").startswith(call) for line in whole)  # the call first on its line
    assert [line for line in lines if len(line) > columns] == whole  # prose still wraps to the width


def test_the_console_trims_lines_off_a_terminal_only(monkeypatch):
    """What diagnose and check print through the same console: a table's padded cells end at their last character and
    a soft-wrapped line (diagnose's progress) is written whole, never cut to the width; on a terminal (styles written,
    a background may show) the lines are as rich lays them out."""
    from rich.table import Table

    from compilescope.cli.console import default_console

    monkeypatch.setenv("COLUMNS", "40")

    def printed(terminal: bool) -> str:
        console = default_console(file=io.StringIO(), force_terminal=terminal, color_system=None)
        table = Table.grid()
        table.add_column(width=30)
        table.add_row("a cell long enough to wrap onto a second line")
        console.print(table)
        console.print("progress: " + "word " * 20, soft_wrap=True)
        return console.file.getvalue()

    plain, laid_out = printed(False), printed(True)
    assert any(line.endswith(" ") for line in laid_out.splitlines())  # the wrapped cell's padding, on a terminal
    assert plain == "".join(line.rstrip(" ") + "\n" for line in laid_out.splitlines())
    assert plain.splitlines()[-1] == "progress: " + "word " * 19 + "word"  # 109 columns, on one line


def test_the_heading_never_breaks_inside_the_logs_name(tmp_path):
    """A log named as torch names it (a rank and a random suffix) at 40 columns: rich broke its name where the line
    ended ("…h40da74" / "u.log.gz"). The heading breaks at its "·"s; a name longer than the line has its middle cut."""
    name = "dedicated_log_torch_trace_rank_0_h40da74u.log"
    log = tmp_path / name
    log.write_bytes(torch213("graph_breaks.log").read_bytes())
    with read_trace(str(log)) as trace:
        ins = insights(trace)
    # (8 compile ids: the log's distinct frame_id / frame_compile_id / attempt, 0/0 to 4/0 with 1/0, 2/0, 3/0 restarted)
    assert _render_at(60, ins).splitlines()[:3] == ["compilescope summary · ", f"{name} ", "· 8 compile ids"]
    heading = _render_at(40, ins).splitlines()[:3]
    assert heading[0] == "compilescope summary · " and heading[2] == "· 8 compile ids"
    assert heading[1].rstrip() == "dedicated_log_torch…_rank_0_h40da74u.log"  # 40 columns: 19, "…", 20


def test_the_slowest_compiles_tell_two_functions_of_one_name_apart():
    """same_cause.log: two modules' forwards, Scale.forward (same_cause.py line 12) and Shift.forward (line 17), each
    compiled twice; compilation_metrics give frame 0 co_firstlineno 12 and frame 1 17 (co_name forward both). Each row
    says where its forward is defined; a frame's recompile is the same function."""
    raw = [json.loads(line[line.index("{"):])
           for line in torch213("same_cause.log").read_text().splitlines() if '{"compilation_metrics": ' in line]
    defined = {e["frame_id"]: (e["compilation_metrics"]["co_name"], e["compilation_metrics"]["co_firstlineno"])
               for e in raw}
    assert defined == {0: ("forward", 12), 1: ("forward", 17)}
    text = " ".join(render("same_cause").split())
    for frame, (name, line) in defined.items():
        for attempt in (0, 1):
            assert f"[{frame}/{attempt}] {name} (same_cause.py:{line})" in text
    ct = insights_of("same_cause").compile_time
    assert {c.to_json()["defined_at"]["line"] for c in ct.compiles} == {12, 17}


def test_the_slowest_compiles_name_one_function_alone_by_its_name():
    """checkpoint_autocast_print_unrolled: [0/0] is Model.forward and [1/0], [2/0] resume it after its graph breaks
    at lines 48 and 49 (README): every row is one function, so none says where it is defined."""
    ct = insights(read_trace(str(torch213("checkpoint_autocast_print_unrolled.log.gz")))).compile_time
    assert sorted(c.function_text for c in ct.compiles) == [
        "forward", "forward (after its graph break at line 48)", "forward (after its graph break at line 49)"]
    assert all(c.defined_at is None for c in ct.compiles)


def test_a_names_column_of_empty_names_keeps_to_one_line():
    """_names_column took the longest word of the names: where each was "" there was none (max() of nothing raised
    ValueError and the summary failed). An empty name is no word; a name of words beside it still wraps."""
    from rich.table import Column

    from compilescope.render.terminal import _names_column

    column = Column()
    _names_column(column, ["", ""])
    assert column.no_wrap and column.width is None
    package = "AOTInductor package of aoti_deploy.py:41"  # 40 characters: wraps at half of it, 20 (its longest word 17)
    _names_column(column, ["", package])
    assert not column.no_wrap and column.width == 20


def _printed_at(width: int, *renderables) -> list[str]:
    console = Console(width=width, color_system=None, file=io.StringIO())
    console.print(*renderables, crop=False)
    return console.file.getvalue().splitlines()


def test_a_stray_backtick_does_not_make_the_prose_after_it_code():
    """compile_error_raises' hint "Avoid calling builtin `print` with argument types ['str']. Consider using an
    equivalent alternative function/method to `print`." with its first backtick lost (a log's message, hint or code
    line is untrusted: it may hold one backtick). The stray one paired with the next, and the prose between them was
    one unbreakable span: a 108-column line at 60 columns, and on the page a <code> of prose. A backtick opens a span
    only at a word's start and closes one only at a word's end: the hint wraps to the width, its `print` is code."""
    from rich.tree import Tree

    from compilescope.render.html.env import code_spans
    from compilescope.render.terminal_text import CopyableText, TerminalText, Uncropped

    (err,) = [e for e in insights_of("compile_error_raises").errors.errors if e.advice_hints]
    hint = next(h for h in err.advice_hints if h.startswith("Avoid calling builtin `print` with"))
    stray = hint.replace("`print`", "print`", 1)
    tree = Tree(TerminalText("[0/0]"))
    tree.add(CopyableText(f"hint: {stray}"))
    lines = _printed_at(60, Uncropped(tree))
    assert max(len(line) for line in lines) <= 60
    assert " ".join(line.lstrip("│└├─ ") for line in lines).endswith("function/method to `print`.")
    assert str(code_spans(stray)).count("<code>") == 1 and "<code>print</code>." in str(code_spans(stray))
    assert str(code_spans(hint)).count("<code>print</code>") == 2  # the hint as logged: as before


def test_code_wider_than_any_terminal_is_folded_as_prose(monkeypatch, capsys):
    """library_calls_deep: the size advice quotes the user's 470-column expression in backticks; held whole it was a
    478-column line at every width. A span is held whole only up to the summary's widest line (100 columns)."""
    monkeypatch.setenv("COLUMNS", "100")
    assert run_cli("summary", torch213("library_calls_deep.log.gz")) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 100


@pytest.mark.parametrize("columns", [60, 100])
def test_the_fix_first_panel_keeps_code_whole_inside_its_border(monkeypatch, capsys, columns):
    """regional_whole: the finding's detail says to write `for block in model.blocks: block.compile()` (44 columns).
    In the "Fix first" panel (a table in a panel) rich broke it at its spaces, "`for block in" / "model.blocks:
    block.compile()`", since a table cell asks for an overflow of its own and CopyableText then wrapped as any Text.
    A cell breaks outside the spans too; only a span wider than the cell is folded, so the border stays in line."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert run_cli("summary", torch213("regional_whole.log.gz")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("`for block in model.blocks: block.compile()`" in line for line in lines)
    assert max(len(line) for line in lines) <= columns


def test_a_code_span_wider_than_a_table_cell_is_folded_inside_it():
    from rich.table import Table

    from compilescope.render.terminal_text import CopyableText

    table = Table(box=None, show_header=False)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)
    table.add_row("INFO", CopyableText("compile the block: `for block in model.blocks: block.compile()` instead"))
    assert max(len(line) for line in _printed_at(40, table)) <= 40


def test_code_of_a_line_that_is_not_wrapped_prints_its_spaces():
    """A CopyableText with no_wrap (its own, or a container's) took the line with its code's spaces still held (as
    U+E000, so that rich does not break there): `torch.compile(m,\\ue000dynamic=True)` printed."""
    from rich.console import Group

    from compilescope.render.terminal_text import CopyableText

    text = "fix: call `torch.compile(m, dynamic=True)` first"
    assert _printed_at(30, Group(CopyableText(text, no_wrap=True))) == [text]

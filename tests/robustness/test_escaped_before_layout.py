"""A log's control characters are escaped before rich lays out the summary, so its panels and tables line up.

rich measures a control character as 0 columns; escaped after layout (an ESC written as \\u001b, 6 columns), it
pushed the border of the panel it was in, and its table row, out of line. And a string is never rich markup.
"""

from __future__ import annotations

import io
import json
import os
import re

from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from rich.text import Text

from compilescope.analyses.insights.analysis import insights
from compilescope.ingest.reader import read_trace
from compilescope.invisible import INVISIBLE_CLASS
from compilescope.render.terminal import print_summary

from ..conftest import torch213
from ..gpu_variants import with_payload_changed
from .test_round_two import compilescope

# A terminal's control characters and the invisible ones, line ends and TABs left out (what is printed needs them).
RAW = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{INVISIBLE_CLASS}]")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours
REASON = "Data-dependent\x1b[8m\x07 branching\u202e"  # SGR 8 hides what follows; BEL; a right-to-left override
NAME = "f\x1b]0;t\x07[link=http://evil/]g[/link]"  # a title (OSC 0), and a link as rich markup


def hostile_log(tmp_path):
    """graph_breaks.log with the reason of its data-dependent break (in the "Fix first" panel) and the function of
    [1/0] (in the table of the slowest compiles) holding control characters, as a hostile log might."""
    log = with_payload_changed(torch213("graph_breaks.log"), tmp_path / "reason.log",
                               lambda line: "Graph Break Reason: Data-dependent branching" in line,
                               lambda payload: payload.replace("Data-dependent branching", REASON))
    lines = log.read_text(encoding="utf-8").split("\n")
    (i,) = [i for i, line in enumerate(lines) if '"compilation_metrics"' in line and '"compile_id": "1/0"' in line]
    # (the metrics record is inline JSON: no payload md5 to recompute)
    lines[i] = lines[i].replace('"co_name": "torch_dynamo_resume_in_f_at_23"', f'"co_name": {json.dumps(NAME)}')
    assert json.dumps(NAME) in lines[i]
    hostile = tmp_path / "hostile.log"
    hostile.write_text("\n".join(lines), encoding="utf-8")
    return hostile


def block(lines: list[str], first: str, last) -> list[str]:
    """The lines from the one starting with first to the first one last(line) is true of, both included."""
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    return lines[start:next(i for i in range(start + 1, len(lines)) if last(lines[i])) + 1]


def test_a_control_character_in_a_panel_or_a_table_is_shown_escaped_and_the_box_lines_up(tmp_path):
    r = compilescope("summary", hostile_log(tmp_path),
                     env={**os.environ, "COLUMNS": "100", "FORCE_COLOR": "1", "TERM": "xterm"})
    out = r.stdout.decode("utf-8")
    assert r.returncode in (0, 1), r.stderr.decode()[-2000:]
    assert RAW.search(SGR.sub("", out)) is None, RAW.findall(SGR.sub("", out))
    shown = SGR.sub("", out).split("\n")
    assert any("Data-dependent\\u001b[8m\\u0007 branching\\u202e" in line for line in shown), out[-3000:]
    assert any("f\\u001b]0;t\\u0007[link=http://evil/]g[/link]" in line for line in shown), out[-3000:]

    panel = block(shown, "┌─ Fix first", lambda line: line.startswith("└"))
    assert any("Data-dependent" in line for line in panel)
    assert all(line[0] in "┌│└" and line.rstrip()[-1] in "┐│┘" for line in panel), panel
    assert {cell_len(line.rstrip()) for line in panel} == {100}, panel  # every right border in column 100

    table = block(shown, "slowest ", lambda line: not line.strip())[:-1]
    (row,) = [line for line in table if "[1/0]" in line]
    assert "g[/link]" in row and re.match(r"\d+ ms ", row[table[0].index("total"):]), table  # in its column
    assert {cell_len(line) for line in table} == {100}, table


def test_the_renderers_escape_the_log_text_themselves(tmp_path):
    """On a plain rich Console, markup on, without the CLI's Console: what the summary renderer hands rich is
    already escaped, and markup in a log is text."""
    with read_trace(str(hostile_log(tmp_path))) as trace:
        ins = insights(trace)
    console = Console(width=100, color_system="truecolor", force_terminal=True, file=io.StringIO())
    print_summary(ins, console)
    out = console.file.getvalue()
    assert RAW.search(SGR.sub("", out)) is None, RAW.findall(SGR.sub("", out))
    assert "\x1b]8;" not in out and "[link=http://evil/]g[/link]" in out


def test_the_console_escapes_what_a_renderer_left_raw_and_makes_no_link():
    """The CLI's Console, a safety net under the renderers: raw text (a renderer's slip) is written escaped, a
    hyperlink style is dropped, and a string printed is not markup; rich's colours pass."""
    from compilescope.cli.console import default_console

    console = default_console(file=io.StringIO(), force_terminal=True, color_system="standard")
    console.print(Text("a\x1b[2Jb\x9b", style=Style(bold=True, link="http://evil/")))
    console.print("[link=http://evil/]x[/link] \u202e")
    out = console.file.getvalue()
    assert "\x1b]8;" not in out and RAW.search(SGR.sub("", out)) is None
    assert SGR.sub("", out) == "a\\u001b[2Jb\\u009b\n[link=http://evil/]x[/link] \\u202e\n"
    assert "\x1b[1ma" in out  # bold, as the style said

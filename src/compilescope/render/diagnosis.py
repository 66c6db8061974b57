"""`compilescope diagnose` output: the Diagnosis page, diagnosis.json and the terminal verdict.

Formatting only: every fact comes from analyses.diagnosis.DiagnoseResult and analyses/diagnosis/.
"""

from __future__ import annotations

import os
import shlex

import orjson
from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from ..analyses.graph_breaks.resume_names import function_label
from ..analyses.diagnosis import FAILED, PASSED, SKIPPED, TIMED_OUT, Command, DiagnoseResult
from ..invisible import safe_terminal_text
from .html import HIGHLIGHT_LIMIT
from .html.env import ENV, page_script_src, prism_script_src
from .terminal_text import TerminalText

STATUS_CSS = {PASSED: "ok", FAILED: "error", TIMED_OUT: "error", SKIPPED: "missing"}
STATUS_STYLE = {PASSED: "green", FAILED: "bold red", TIMED_OUT: "bold red", SKIPPED: "dim"}
VERDICT_MARK = {"ok": ("OK", "bold green"), "fell_back": ("RAN, PARTLY EAGER", "bold yellow"),
                "nothing_compiled": ("NOTHING COMPILED", "bold yellow"),
                "differs": ("RUNS, DIFFERS FROM EAGER", "bold yellow"),
                "rounding": ("OK, FLOAT32 ROUNDING", "bold green"),
                "crash": ("CRASHED", "bold red"), "export_error": ("TORCH.EXPORT FAILS", "bold red")}
REPRO_LINES_IN_TERMINAL = 40
PRINTED_LINES_IN_TERMINAL = 5


def diagnosis_json(result: DiagnoseResult, commands: list[Command]) -> bytes:
    doc = {
        "program": result.argv,
        "cwd": result.cwd,
        "verdict": result.verdict.to_json(),
        "seed": result.seed.to_json() if result.seed else None,
        "stages": [o.to_json() for o in result.runs],
        "minify": result.minify.to_json() if result.minify else None,
        "commands": [c.to_json() for c in commands],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)


def diagnosis_page(result: DiagnoseResult, commands: list[Command], out_dir: str) -> str:
    minify = result.minify
    # The repro is coloured in the browser by Prism, as every page of code is (plain past HIGHLIGHT_LIMIT, as theirs).
    repro = minify.repro if minify is not None else None
    highlighted = repro is not None and 0 < len(repro) <= HIGHLIGHT_LIMIT
    failing = next((o for o in result.runs if o.spec.key == result.verdict.failing_stage), None)
    return ENV.get_template("diagnosis.html").render(
        root="",
        source_name=os.path.basename(result.argv[1]) if len(result.argv) > 1 else result.argv[0],
        rank=None,
        nav_failures=False,
        result=result,
        verdict=result.verdict,
        command=shlex.join(result.argv),
        stages=result.runs,
        status_css=STATUS_CSS,
        failing=failing,
        minify=minify,
        repro_language="python" if highlighted else None,
        script_src=prism_script_src() if highlighted else page_script_src(),
        commands=commands,
        out_dir=out_dir,
    )


def print_verdict(result: DiagnoseResult, console: Console) -> None:
    v = result.verdict
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for col in ("stage", "covers", "result", "time"):
        table.add_column(col)
    for o in result.runs:
        seconds = f"{o.facts.seconds:.1f}s" if o.facts else ""
        status = o.status.upper() if o.status != PASSED else "passed"
        title = f"{o.spec.title} ({o.backend_name})" if o.backend_name and not o.spec.backend else o.spec.title
        table.add_row(TerminalText(title), TerminalText(o.spec.covers), TerminalText(status, style=STATUS_STYLE[o.status]), seconds)

    lines: list = [TerminalText(v.headline, style="bold")]
    if v.stage_label:
        lines.append(TerminalText(f"Stage:  {v.stage_label}"))
    if v.error is not None:
        lines.append(TerminalText(f"Error:  {v.error.exception}" + (f" ({v.error.shown_inner})" if v.error.shown_inner else "")
                          + f": {v.message}"))
    elif v.message:
        lines.append(TerminalText(f"{'Crash' if v.crash is not None else 'Error'}:  {v.message}"))
    if v.location is not None:
        # Its function named as the summary names it: a resume function as the rest of the function it resumes.
        where = f"{v.location.filename}:{v.location.line}" + (f" in {function_label(v.location.function)}"
                                                              if v.location.function else "")
        lines.append(TerminalText(f"Where:  {where}" + (f" ({v.location_kind})" if v.location_kind else "")))
        if v.location.code:
            lines.append(TerminalText(f"        {v.location.code}", style="dim"))
    if v.printed is not None:
        p = v.printed
        lines.append(TerminalText(f"Printed: {p.before_title} | {p.title}" + (f" (the first {len(p.lines)} of {p.total} lines)"
                                                                           if p.total > len(p.lines) else "")))
        for before, after in p.lines[:PRINTED_LINES_IN_TERMINAL]:
            lines.append(TerminalText(f"        {before} | {after}", style="dim"))
    if v.error is not None and v.error.compiler_errors:
        first, *quoted = v.error.compiler_errors[0].splitlines()
        lines.append(TerminalText("Compiler: " + first))
        lines.extend(TerminalText(f"          {line}", style="dim") for line in quoted[:1])
    if v.testing_hooks:
        lines.append(TerminalText(f"Hook:   {v.testing_hooks}"))
    for step in v.next_steps[:3]:
        lines.append(TerminalText(f"-> {step}"))
    minify = result.minify
    if minify is not None:
        if minify.graph is not None:
            ops = ", ".join(minify.graph.ops) or "no ops"
            lines.append(TerminalText(f"Minimal repro: {minify.graph.nodes} nodes ({ops})", style="bold"))
        elif minify.note:
            lines.append(TerminalText(f"Minify: {minify.note}"))
    label, style = VERDICT_MARK.get(v.outcome, ("FAILED", "bold red"))
    console.print(table)
    console.print(Panel(Group(*lines), title=TerminalText(f"Diagnosis: {label}", style=style), title_align="left", box=box.ASCII))
    if minify is not None and minify.repro_path is not None:
        size = f" ({minify.graph.nodes} nodes)" if minify.graph is not None else ""
        inputs = "" if minify.inputs else " (its inputs were not kept: torch makes random ones)"
        # (soft_wrap: the path and the command whole, to be copied)
        console.print(TerminalText(f"Minimal repro{size} written to {minify.repro_path}{inputs}; run: "
                                   f"{shlex.join(['python', minify.repro_path])}"), soft_wrap=True)
    if minify is not None and minify.repro is not None:
        body = minify.repro
        forward = body.find("class Repro")
        snippet = "\n".join(body[forward if forward >= 0 else 0:].splitlines()[:REPRO_LINES_IN_TERMINAL])
        safe = safe_terminal_text(snippet)
        code = Syntax(safe, "python", theme="ansi_light", background_color="default").highlight(safe)
        code.rstrip()
        # soft_wrap: each line of code printed whole (the terminal may fold it on screen), never broken by a newline
        # at the console's width, which would break the code copied from it.
        console.print(code, soft_wrap=True)

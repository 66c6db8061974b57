"""Reproducing a failure outside diagnose: how to run torch's minifier on it (minify_plan), what its repro scripts
hold and how the report keeps them runnable (relocated_repro), and the commands a person would type by hand."""

from __future__ import annotations

import ast
import re
import shlex

from . import (
    ACCURACY_RUN, AOT_EAGER, BACKEND, EAGER, FELL_BACK, FORCE_BACKEND_ENV, NO_COMPILE, REPRO_ENV, REPRO_INPUTS, Command,
    MinifyPlan, MinifyResult, ReproGraph, StageOutcome, Verdict, save_dirs,
)
from ..compile_errors import INDUCTOR, KERNEL_COMPILE, LOWERING

def repro_graph(source: str) -> ReproGraph | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Repro":
            forward = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
            if forward is None:
                return None
            inputs = [a.arg for a in forward.args.args[1:]]
            ops = [ast.unparse(stmt.value.func) for stmt in forward.body
                   if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)]
            return ReproGraph(inputs, ops)
    return None


def _line_starts(source: str) -> list[int]:
    starts = [0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return starts


def _save_dir_spans(source: str, in_comments: bool = True) -> list[tuple[int, int]]:
    """(start, end) in source of each run_repro(...) call's save_dir value: the code's, and (in_comments) those of the
    calls torch writes commented out (`# mod, args = run_repro(..., save_dir='...', ...)`, for the user to run), each
    found by parsing the comment's text."""
    import io  # here: only diagnose's repro scripts need them (start-up time)
    import tokenize

    lines, starts = source.split("\n"), _line_starts(source)

    def offset(lineno: int, col: int) -> int:  # (ast's columns count UTF-8 bytes)
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode(errors="replace"))

    spans = [(offset(v.lineno, v.col_offset), offset(v.end_lineno, v.end_col_offset)) for v in save_dirs(source)
             if v.end_lineno is not None and v.end_col_offset is not None]
    try:
        comments = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                    if t.type == tokenize.COMMENT and "run_repro(" in t.string] if in_comments else []
    except (tokenize.TokenError, SyntaxError, ValueError):
        comments = []
    for comment in comments:
        code = comment.string.lstrip("#").lstrip()
        at = starts[comment.start[0] - 1] + comment.start[1] + len(comment.string) - len(code)
        spans += [(at + start, at + end) for start, end in _save_dir_spans(code, in_comments=False)]
    return sorted(spans)


def relocated_repro(source: str, kept: bool, removed: str | None = None) -> str:
    """A repro script torch wrote (repro.py, minifier_launcher.py) loading its saved inputs from save_dir: torch wrote
    the directory of the run that made it, which diagnose removes when it is done. kept: the report keeps the inputs
    in checkpoints/ beside the script, which it then loads them from (REPRO_INPUTS: a path relative to the script, not
    to where it is run, nor the report's path when written, so that a moved or copied report still finds them); else
    torch's InputReader makes random ones (save_dir=None), as it does for a storage it cannot find. removed: that
    directory; the environment variables the script sets to a path in it (TORCH_COMPILE_DEBUG_DIR,
    TORCHINDUCTOR_CACHE_DIR: the run's) are left commented out, so that running it does not make them again."""
    said, pieces, at = REPRO_INPUTS if kept else "None", [], 0
    for start, end in _save_dir_spans(source):
        pieces += [source[at:start], said]
        at = end
    text = "".join(pieces) + source[at:]
    if kept and text != source and not re.search(r"^import os$", text, re.MULTILINE):
        text = "import os\n" + text  # (torch's scripts import it; REPRO_INPUTS needs it)
    if removed:
        setting = re.compile(rf"^os\.environ\[(['\"])\w+\1\] = (['\"]){re.escape(removed)}[^\n]*$", re.MULTILINE)
        text = setting.sub(lambda m: f"# {m[0]}  # (diagnose's work directory, removed)", text)
    return text


def minify_plan(verdict: Verdict, outcomes: list[StageOutcome]) -> MinifyPlan | str:
    """How to minify the failure, or why torch's minifier does not apply."""
    if verdict.outcome == FELL_BACK:
        return ("no graph failed: a frame hit the recompile limit, where Dynamo stops compiling it again; there is no "
                "graph for torch's minifier to shrink")
    if verdict.failing_stage is None:
        return "nothing failed: there is nothing to minify"
    if verdict.outcome == "accuracy" and verdict.failing_stage != ACCURACY_RUN.key:
        return ("torch's accuracy check compared each compiled graph's outputs with eager and found none that differ "
                "(the program's own check did): its minifier shrinks a graph the check fails, so there is none to "
                "shrink; the program's check and its inputs are the repro")
    if verdict.failing_stage == EAGER.key:
        return ("the failure happens in Dynamo itself, before any graph exists: torch's minifier starts from a "
                "captured graph, so the user frame and the message are the repro")
    if verdict.failing_stage == NO_COMPILE.key:
        return "the program fails without torch.compile: nothing to minify"
    backend = next((o for o in outcomes if o.spec.key == BACKEND.key), None)
    inductor = verdict.stage in (INDUCTOR, LOWERING, KERNEL_COMPILE) or (backend is not None and backend.used_inductor)
    stage = AOT_EAGER if verdict.failing_stage == AOT_EAGER.key else BACKEND
    if verdict.crash is not None:
        # A crash leaves no time to write a launcher after it: level 3 writes one before each graph runs (after
        # AOTAutograd) or compiles (after Dynamo: a crash while compiling), and the minifier tries each smaller
        # graph in a process of its own, where a crash is a failure it can shrink.
        after = "aot" if inductor and stage is BACKEND and not verdict.crash.compiling else "dynamo"
        return MinifyPlan(after, stage, level=3, isolate=True)
    after = "aot" if inductor and stage is BACKEND else "dynamo"
    if verdict.outcome == "accuracy":
        # Level 4 runs torch's accuracy check and writes the launcher for the graph it fails, as the accuracy run
        # did; rerun untraced all the same: the launcher (and the repro.py copied from it) would set TORCH_TRACE.
        return MinifyPlan(after, BACKEND, level=4)
    # A graph that raises when it runs: Inductor's generated call() empties its argument list (args.clear()) before
    # the kernel raises, so in one process the minifier's next try has no inputs left (torch 2.13 stops with
    # "len(ph_nodes)=5 != len(self.inps)=0"); in a process of its own each try gets them afresh.
    return MinifyPlan(after, stage, isolate=verdict.outcome == "runtime_error")


def steps_after_minify(verdict: Verdict, minify: MinifyResult | None) -> list[str]:
    """The verdict's next steps once --minify has run torch's minifier: less the step that says to minify (the
    minify result follows them, and the commands to do it by hand list the same runs)."""
    if minify is None or (minify.run is None and minify.launcher_run is None):
        return verdict.next_steps
    return [step for step in verdict.next_steps if not step.startswith("Minify")]


# -- commands to reproduce by hand ----------------------------------------------------------


def shell_line(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> str:
    words = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()] + [shlex.quote(w) for w in argv]
    line = " ".join(words)
    return f"(cd {shlex.quote(cwd)} && {line})" if cwd else line


def hand_commands(argv: list[str], outcomes: list[StageOutcome], verdict: Verdict,
                  minify: MinifyResult | None, minify_dir: str | None) -> list[Command]:
    """The commands a person would type to see the same thing without compilescope."""
    commands = []
    for o in outcomes:
        if o.facts is None:
            continue
        env = dict(o.spec.env)
        note = {EAGER.key: ' (or write torch.compile(..., backend="eager"))',
                AOT_EAGER.key: ' (or write torch.compile(..., backend="aot_eager"))'}.get(o.spec.key, "")
        if o.spec.key == ACCURACY_RUN.key:
            env = {k: v for k, v in o.facts.env.items() if k in REPRO_ENV}
        commands.append(Command(f"Run with {o.spec.title}{note}: {o.status}", shell_line(argv, env)))
    if minify is not None:
        env = {k: v for k, v in (minify.run.env if minify.run else {}).items() if k in REPRO_ENV or k == FORCE_BACKEND_ENV}
        if minify.run is not None:
            commands.append(Command("Write the minifier launcher (torch prints where: ./torch_compile_debug/run_*/minifier/)",
                                    shell_line(argv, env)))
        commands.append(Command("Run it: it shrinks the graph while the failure persists and writes ./repro.py",
                                "python torch_compile_debug/run_*/minifier/minifier_launcher.py minify"
                                + ("" if minify.isolated else " --no-isolate")))
        if minify.repro is not None and minify_dir:
            # (no arguments: the script's own run_repro call loads the inputs from the checkpoints beside it, so the
            # line holds however the report is moved; a --save-dir given here would name where it was written)
            commands.append(Command("Run the minimal repro saved here (with the inputs it was minified with)",
                                    shell_line(["python", f"{minify_dir}/repro.py"])))
    return commands

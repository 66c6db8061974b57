"""`compilescope diagnose`: run a program through the troubleshooting guide's stages, find the one that fails.

Each stage is one traced child run (runner.run_program) with torch.compile's backend
forced by an environment variable that torch itself reads: TORCH_BISECT_BACKEND
(torch/__init__.py replaces the backend of every torch.compile call with it; it is how
torch._inductor.compiler_bisector runs a program under eager / aot_eager / inductor).
Nothing is injected into the user's program: it runs as written, as __main__, in the
user's working directory, with its own arguments, and so do torchrun workers.

Every file torch's debugging machinery writes (minifier_launcher.py, checkpoints,
repro.py) goes to a temporary work directory (TORCH_COMPILE_DEBUG_DIR, and the
working directory of the runs that write into "."), never the user's.

This module orchestrates and reads traces; analyses/diagnosis/ judges; the CLI
writes the reports.
"""

from __future__ import annotations

import glob
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Callable

from .analyses.diagnosis import (
    ACCURACY_RUN, AOT_EAGER, BACKEND, DEBUG_DIR_ENV, EAGER, EAGER_CONTROL, EAGER_CONTROL_AGAIN, FAILED, FORCE_BACKEND_ENV,
    NO_COMPILE, PASSED, REPRO_ENV, STAGES, DiagnoseResult, MinifyResult, ProgramSeed, RunFacts, StageOutcome, StageSpec,
    Verdict, repro_save_dir,
)
from .analyses.diagnosis.number_verdicts import run_to_run_said
from .analyses.diagnosis.printed_numbers import another_control, printed_change, run_to_run
from .analyses.diagnosis.reproduce import minify_plan, repro_graph, steps_after_minify
from .analyses.diagnosis.seeds import ImportedModule, imported_calls, module_seed, program_seed, star_names
from .analyses.diagnosis.stage_outcome import compiled_frame, stage_outcome
from .analyses.diagnosis.verdict import decide, limit_hits
from .errors import CompilescopeError
from .analyses.op_mutations.calling_files import first_files, imported_modules
from .analyses.user_files import insight_files
from .ingest.reader import read_trace
from .location import read_local_lines
from .runner import PYTHON_NAME, Program, TRACING_VARIABLES, check_env_prefix, choose_log, env_prefix, run_program
from .wording import count

OUTPUT_TAIL_LINES = 40
# Variables of the user's environment that would defeat a forced stage or make every run dump repro files.
_NEUTRALIZED = {name: None for name in (*REPRO_ENV, FORCE_BACKEND_ENV, "TORCH_COMPILE_OVERRIDE_BACKENDS")}
# A run whose output torch embeds in generated scripts must not be traced: the scripts would point at our temp dir.
_UNTRACED = {"TORCH_TRACE": None, "TORCH_DTRACE": None, "INDUCTOR_PROVENANCE": None}
# (said of torch, with no version: the note is shown whatever torch the program ran with; torch 2.13 is where the
# calling-convention error was seen)
AOT_ACCURACY_NOTE = ("not checked: torch's after-Dynamo accuracy check (TORCHDYNAMO_REPRO_AFTER=\"dynamo\", "
                     "TORCHDYNAMO_REPRO_LEVEL=4) cannot call AOTAutograd-compiled graphs (it fails with a "
                     "calling-convention error and skips the graph), so AOTAutograd's results are not compared here")
EAGER_ACCURACY_NOTE = "identical to eager by construction (the captured graphs run in PyTorch)"


@dataclass
class DiagnoseOptions:
    accuracy: bool = False
    minify: bool = False
    timeout: float | None = None


Progress = Callable[[str], None]


def _tail(path: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _read_all(path: str, limit: int = 4 << 20) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _program_seed(prog: Program, cwd: str) -> ProgramSeed | None:
    """What the program's file shows of seeding: the file its command runs (_program_file); None where there is none or
    it cannot be read (read_local_lines: only a regular file, so a FIFO or a device the command names is never opened
    to wait on, of at most MAX_SEED_SOURCE_BYTES), or where a module it imports with * cannot be (_imported_seed). The
    modules it imports are looked for where its run's Python looks (_program_file's roots)."""
    found = _program_file(prog, cwd)
    if found is None:
        return None
    path, word, roots = found
    lines = read_local_lines(path, MAX_SEED_SOURCE_BYTES).lines
    if lines is None:
        return None
    text = "\n".join(lines)  # (as _imported_seed joins a module's)
    seed = program_seed(word, text)
    if seed is not None and seed.call is None:
        try:
            imported = _imported_seed(path, text, roots)
        except _StarUnread:
            return None  # (nothing known of a seed, rather than "no seed set")
        if imported is not None:
            module, call, line = imported
            return ProgramSeed(word, call, line, module)
    return seed


def _program_file(prog: Program, cwd: str) -> tuple[str, str, list[str]] | None:
    """(the program's file, the word naming it, the import roots) of the run of prog's command: the file it runs is the
    script of `python [OPTIONS] script` or the module of `python -m module` (its file: _module_file), or, for another
    command (torchrun ... train.py, torchrun -m pkg.train), its first word naming a .py file or following -m. An `env`
    before it (`env -i A=b PYTHONPATH=lib python ...`) changes the environment the run gets (_after_env).

    The roots are where that Python finds the program's absolute imports, in its order: sys.path[0] (the script's
    folder, links resolved; the working folder of -m), but not with -P, -I or PYTHONSAFEPATH; then each PYTHONPATH
    entry (relative to cwd, an empty one cwd, as Python takes them), but not with -E or -I, which ignore PYTHON*
    variables. The installed packages after them are not the program's. None where there is no file, or the command
    is not understood."""
    env = dict(os.environ)  # (what each stage's run inherits)
    words = prog.argv if prog.this_python else _after_env(prog.argv, env)
    if not words:
        return None
    flags = ""
    if prog.this_python or PYTHON_NAME.match(os.path.basename(words[0])):
        target = _python_target(words[1:])
        if target is None:
            return None
        flags, name, is_module = target
    else:
        found = next(((words[i + 1] if word == "-m" else word, word == "-m") for i, word in enumerate(words)
                      if (word == "-m" and i + 1 < len(words)) or word.endswith(".py")), None)
        if found is None:
            return None
        name, is_module = found
    ignore_env = "I" in flags or "E" in flags
    safe = "I" in flags or "P" in flags or (not ignore_env and bool(env.get("PYTHONSAFEPATH")))
    pythonpath = "" if ignore_env else env.get("PYTHONPATH", "")
    entries = [os.path.normpath(os.path.join(cwd, entry)) for entry in pythonpath.split(os.pathsep)] if pythonpath else []
    # (sys.path[0]: the working folder of -m; a script's folder, links resolved)
    first = cwd if is_module else os.path.dirname(os.path.realpath(os.path.join(cwd, name)))
    roots = list(dict.fromkeys([*([] if safe else [first]), *entries]))
    if not is_module:
        return os.path.join(cwd, name), name, roots
    path = _module_file(name, [*roots, *_installed_path()])
    if path is None:
        return None
    rel = os.path.relpath(path, cwd)
    return path, path if rel.startswith(os.pardir) else rel, roots


def _after_env(argv: list[str], env: dict[str, str]) -> list[str] | None:
    """The command that an `env` before it (runner.env_prefix) runs, env changed as env changes it for that command
    (argv itself where it is no env); None where an option of env is not understood here (-S...), or runs it elsewhere
    (-C: check_program_env refuses it)."""
    found = env_prefix(argv)
    if found is None or any(words.chdir is not None for words in found[0]):
        return None
    for words in found[0]:
        if words.clears:
            env.clear()
        for name, _ in words.unsets:
            env.pop(name, None)
        env.update(word.partition("=")[::2] for word in words.assignments)
    return found[1]


def _python_target(args: list[str]) -> tuple[str, str, bool] | None:
    """(its one-letter flags, the script or module, whether it is a module) of `python ARGS`, read as Python reads its
    options (letters joined, as -IE or -uW ignore; -W/-X/-c/-m take the rest of the word or the next one); None where it
    runs no file (-c, stdin, --help)."""
    flags = ""
    words = iter(args)
    for word in words:
        if word == "--check-hash-based-pycs":
            next(words, None)
            continue
        if word == "--":
            word = next(words, "-")
        elif word.startswith("--"):
            return None  # (--help, --version: nothing runs)
        elif word.startswith("-") and word != "-":
            for i, letter in enumerate(word[1:], 2):
                if letter in "cmWX":
                    value = word[i:] or next(words, None)
                    if letter == "c" or value is None:
                        return None
                    if letter == "m":
                        return flags, value, True
                    break
                flags += letter
            continue
        return None if word == "-" else (flags, word, False)
    return None


def _installed_path() -> list[str]:
    """This Python's sys.path without what this run of compilescope added to it (its script's folder, its own
    PYTHONPATH): where the program's Python finds installed packages too."""
    own = {os.path.abspath(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry}
    return [entry for entry in sys.path[0 if sys.flags.safe_path else 1:] if entry and os.path.abspath(entry) not in own]


MAX_SEED_SOURCE_BYTES = 4 << 20  # a program's file, or a module it imports, read for its seed: a bigger one is not
MAX_SEED_MODULES = 32  # local modules read for a seed, over both depths
SEED_IMPORT_DEPTH = 2  # the program's imports, and theirs


class _StarUnread(Exception):
    """A module the program imports with * cannot be read: which of its bare calls are that module's is not known."""


def _imported_seed(path: str, text: str, roots: list[str]) -> tuple[str, str, int] | None:
    """The first seeding call that runs (module_seed) in the local modules the program's file imports, then in those they
    import, breadth first (imported_files: where Python finds them, each absolute import in roots, _program_file,
    whichever module makes it): (the module's path from the program's folder, the call, its line). A bare call a
    `from module import *` may bind is the module's where its file defines the name (star_names); where that file
    cannot be read, and no module seeds for certain, _StarUnread, rather than a guess. Bounded: SEED_IMPORT_DEPTH levels, MAX_SEED_MODULES files, each
    read as other local files are (read_local_lines: a regular file, at most MAX_SEED_SOURCE_BYTES)."""
    folder = os.path.dirname(os.path.realpath(path))  # (both real: a script's root is, its modules found there are)
    seen = {os.path.realpath(path)}
    level = [(path, text)]
    read = 0
    unread: str | None = None  # the first star-imported module whose names cannot be read (the search goes on)
    for _ in range(SEED_IMPORT_DEPTH):
        below: list[tuple[str, str]] = []
        for importer, source in level:
            # a module's file -> the names the importer calls of it, and those it may call of it through *
            called: dict[str | None, frozenset[str]] = {}
            starred: dict[str | None, frozenset[str]] = {}
            calls = imported_calls(source)
            for of, imported in ((called, calls.named), (starred, calls.starred)):
                for module_name, names in imported.items():
                    file = _module_path(importer, module_name, roots)
                    of[file] = of.get(file, frozenset()) | names
            # (diagnose runs the program here: the disk it reads is the run's, os.path.isfile answers as Python did)
            for module in first_files(importer, imported_modules(importer, source, roots, os.path.isfile),
                                      os.path.isfile):
                if os.path.realpath(module) in seen or read >= MAX_SEED_MODULES:
                    continue
                seen.add(os.path.realpath(module))
                read += 1
                lines = read_local_lines(module, MAX_SEED_SOURCE_BYTES).lines
                module_text = "\n".join(lines) if lines is not None else None
                names = called.get(module, frozenset())
                if module in starred:
                    exported = star_names(module_text) if module_text is not None else None
                    if exported is None:
                        unread = unread or module  # (another module may still seed for certain)
                    else:
                        names |= starred[module] & exported
                if module_text is None:
                    continue
                found = module_seed(module, module_text, names)
                if found is not None and found.call is not None and found.line is not None:
                    return os.path.relpath(os.path.realpath(module), folder), found.call, found.line
                below.append((module, module_text))
        level = below
    if unread is not None:
        raise _StarUnread(unread)
    return None


def _module_path(importer: str, module: ImportedModule, roots: list[str]) -> str | None:
    """The file an import of module (its relative level, its dotted name) in importer finds: the first candidate
    imported_modules gives for that one import statement (`import pkg.utils`, `from . import utils`, `from .a import
    b`); None where none is a file, or the name is the importer's package itself (`from . import reset`: its
    __init__.py is no module imported_modules gives)."""
    level, name = module
    if not name:
        return None
    parent, _, last = name.rpartition(".")
    statement = f"from {'.' * level}{parent} import {last}" if level else f"import {name}"
    groups = imported_modules(importer, statement, roots, os.path.isfile)
    found = first_files(importer, groups[-1:], os.path.isfile)  # (the last: the module itself, not its package)
    return found[0] if found else None


def _module_file(name: str, search: list[str]) -> str | None:
    """The .py file `python -m name` runs (a package's __main__.py), found as its import would find it, on search (the
    folders the program's Python searches, _program_file), but without importing anything: importlib.util.find_spec
    would import a dotted name's packages, running the user's code here. None where it is not a plain source file on
    the path (a finder hook's, a built-in, not found)."""
    from importlib.machinery import PathFinder

    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    folders: list[str] | None = search
    spec = None
    for i in range(len(parts)):
        if folders is None:  # (a module's submodule: no such thing on a path)
            return None
        spec = PathFinder.find_spec(".".join(parts[: i + 1]), folders)
        if spec is None:
            return None
        folders = list(spec.submodule_search_locations) if spec.submodule_search_locations is not None else None
    if folders is not None:  # a package: -m runs its __main__
        spec = PathFinder.find_spec(f"{name}.__main__", folders)
    origin = spec.origin if spec is not None else None
    return origin if isinstance(origin, str) and origin.endswith(".py") and os.path.isfile(origin) else None


def _absolute_paths(prog: Program, cwd: str) -> Program:
    """The same command for a run from another directory: words naming existing files become absolute."""
    argv = [os.path.join(cwd, w) if not w.startswith("-") and not os.path.isabs(w) and os.path.isfile(os.path.join(cwd, w))
            else w for w in prog.argv]
    return Program(argv, prog.this_python)


class Diagnoser:
    def __init__(self, prog: Program, work: str, options: DiagnoseOptions, progress: Progress):
        self.prog = prog
        self.work = work  # a temporary directory the caller owns and removes
        self.options = options
        self.progress = progress
        self.cwd = os.getcwd()
        self.logs: dict[str, str] = {}
        self.outputs: dict[str, str] = {}
        self._minify_files: dict[str, str] = {}  # name in the report's minify/ -> file in the work directory
        self._accuracy_frame = None

    def _dir(self, *parts: str) -> str:
        path = os.path.join(self.work, *parts)
        os.makedirs(path, exist_ok=True)
        return path

    def _child(self, prog: Program, name: str, env: dict[str, str | None], cwd: str | None = None,
               traced: bool = True, fresh_cache: bool = False) -> tuple[RunFacts, str | None]:
        """One child run, its output captured; (what happened, its trace log or None).

        fresh_cache: for runs that rely on torch's repro wrappers, which only see graphs that are compiled
        (a warm FX graph / AOTAutograd cache hands back compiled code without calling them).
        """
        trace_dir = self._dir("traces", name)
        output = os.path.join(self._dir("outputs"), f"{name}.txt")
        extra = {**_NEUTRALIZED, DEBUG_DIR_ENV: self._dir("debug", name), **env}
        if not traced:
            extra.update(_UNTRACED)
        if cwd is not None and prog.this_python:
            # Run elsewhere, the program still imports its own modules (python -m pkg.mod, a sibling module).
            extra["PYTHONPATH"] = os.pathsep.join(p for p in (self.cwd, os.environ.get("PYTHONPATH")) if p)
        start = time.monotonic()
        # A fresh cache lives in the work directory, not beside it: the repro scripts torch writes set
        # TORCHINDUCTOR_CACHE_DIR to the cache of the run that wrote them, and running them later recreates it.
        cache = self._dir("inductor_cache", name) if fresh_cache else None
        result = run_program(prog, trace_dir, timeout=self.options.timeout, extra_env=extra,
                             cwd=cwd, output=output, cache_dir=cache)
        log = choose_log(result.logs)[0] if result.logs else None
        facts = RunFacts(
            argv=list(prog.argv), env={k: v for k, v in env.items() if v is not None}, returncode=result.returncode,
            seconds=time.monotonic() - start, timed_out=result.timed_out, output_tail=_tail(output), cwd=cwd,
            signal=result.signal_name,
            # (the crash of the process whose log the stage reads first: that log names its compiled code). Native
            # crashes only: a stage whose program raised is judged by its errors and output, as before run recorded it.
            crash_texts=[c.text for c in sorted(result.crashes, key=lambda c: c.log != log) if not c.exception],
        )
        self.outputs[name] = output
        if result.interrupted:
            raise KeyboardInterrupt  # Ctrl-C stops the diagnosis, not just this run
        if result.terminated:  # so does SIGTERM (a scheduler stopping the job): no stage after it is started
            raise CompilescopeError("terminated (SIGTERM): the program was stopped, and the diagnosis with it",
                                    exit_code=128 + signal.SIGTERM)
        if log:
            self.logs[name] = log
        return facts, log

    def _stage(self, spec: StageSpec, which: str, env: dict[str, str] | None = None, cwd: str | None = None,
               prog: Program | None = None, fresh_cache: bool = False) -> StageOutcome:
        """which: "stage 1 of 3", "extra run" (words: "[1/3]" would read as a torch compile id)."""
        env = {**dict(spec.env), **(env or {})}
        self.progress(f"{which}, {spec.title}: {spec.covers}")
        facts, log = self._child(prog or self.prog, spec.key, env, cwd=cwd, fresh_cache=fresh_cache)
        output = _read_all(self.outputs[spec.key])
        if log is not None:
            with read_trace(log) as trace:
                files = insight_files(trace)  # (op_mutations' and the user kernels' of wrong_graph)
                outcome = stage_outcome(spec, facts, trace, output, files)
                if outcome.accuracy_failure:
                    self._accuracy_frame = compiled_frame(trace)
        else:
            outcome = stage_outcome(spec, facts, None, output)
        self.progress(f"      {_describe(outcome)}")
        return outcome

    def run(self) -> DiagnoseResult:
        total = len(STAGES)
        outcomes: list[StageOutcome] = []
        for i, spec in enumerate(STAGES, 1):
            if outcomes and outcomes[-1].status != PASSED:
                outcomes.append(StageOutcome(spec, skipped_reason=f"an earlier stage ({outcomes[-1].spec.title}) failed"))
                continue
            if outcomes and not outcomes[-1].compiles:
                # Every stage runs the same program: one that compiled nothing with Dynamo alone compiles nothing.
                outcomes.append(StageOutcome(spec, skipped_reason=f"{outcomes[-1].spec.title} compiled nothing"))
                continue
            outcomes.append(self._stage(spec, f"stage {i} of {total}"))
        eager = outcomes[0]
        if eager.status == FAILED and (not eager.errors or eager.crash is not None):
            # Nothing failed to compile (or it crashed), yet Dynamo alone fails: does the program fail uncompiled too?
            outcomes.append(self._stage(NO_COMPILE, "extra run"))

        controls: list[StageOutcome] = []
        seed = _program_seed(self.prog, self.cwd)
        if all(o.status == PASSED for o in outcomes) and printed_change(outcomes) is not None:
            # The stages printed other numbers: the same run of eager's stage again tells which of them change from
            # run to run whatever the stage (an unseeded torch.randn). Only then: the common case costs nothing.
            controls.append(self._stage(EAGER_CONTROL, "control run"))
            unstable = run_to_run(outcomes[0], controls)
            if printed_change(outcomes, unstable) is not None and another_control(seed, unstable):
                # A changed line is left that eager may have printed alike twice by chance: once more.
                controls.append(self._stage(EAGER_CONTROL_AGAIN, "second control run"))
                unstable = run_to_run(outcomes[0], controls)
            if unstable:
                self.progress(f"      {run_to_run_said(len(unstable))}")

        accuracy = None
        backend = outcomes[-1]
        # The program's own check found wrong results with the backend alone: torch's check finds the graph.
        wrong = backend.spec.key == BACKEND.key and backend.status == FAILED and bool(backend.mismatch)
        if (self.options.accuracy and (wrong or all(o.status == PASSED for o in outcomes))
                or self.options.minify and wrong):
            accuracy = self._accuracy(outcomes)
        verdict = decide(outcomes, accuracy, controls, seed)
        if verdict.outcome == "accuracy" and verdict.location is None and self._accuracy_frame is not None:
            verdict.location, verdict.location_kind = self._accuracy_frame, "compiled frame"

        minify = None
        if self.options.minify and not verdict.passes:
            minify = self._minify(verdict, outcomes)
            verdict.next_steps = steps_after_minify(verdict, minify)
        return DiagnoseResult(
            argv=list(self.prog.argv), cwd=self.cwd, outcomes=outcomes, verdict=verdict, accuracy=accuracy,
            controls=controls, seed=seed, minify=minify, logs=dict(self.logs), outputs=dict(self.outputs), minify_files=self._minify_files,
        )

    def _accuracy(self, outcomes: list[StageOutcome]) -> StageOutcome:
        backend = next(o for o in outcomes if o.spec.key == BACKEND.key)
        for o in outcomes:
            o.accuracy_note = {EAGER.key: EAGER_ACCURACY_NOTE, AOT_EAGER.key: AOT_ACCURACY_NOTE}.get(o.spec.key)
        # Inductor's accuracy check sits after AOTAutograd (the only level-4 check torch 2.13 supports for
        # Inductor); any other backend is checked on Dynamo's graph.
        after = "aot" if backend.used_inductor else "dynamo"
        env = {"TORCHDYNAMO_REPRO_AFTER": after, "TORCHDYNAMO_REPRO_LEVEL": "4"}
        # The check copies repro.py into the working directory: run it from the work directory.
        cwd = self._dir("cwd", "accuracy")
        outcome = self._stage(ACCURACY_RUN, "extra run", env=env, cwd=cwd, prog=_absolute_paths(self.prog, self.cwd),
                              fresh_cache=True)
        if outcome.accuracy_failure:
            outcome.accuracy_note = f"differs from eager ({outcome.accuracy_failure})"
        elif outcome.status == PASSED:
            # (torch compares both with a float64 run: compiled passes when no further from it than eager, the
            # random numbers each run draws included)
            outcome.accuracy_note = "no further from a float64 run than eager (torch.compile's repro_tolerance)"
        return outcome

    def _minify(self, verdict: Verdict, outcomes: list[StageOutcome]) -> MinifyResult | None:
        plan = minify_plan(verdict, outcomes)
        if isinstance(plan, str):
            result = MinifyResult(after="-", level=0, note=plan)
            self.progress(f"minify: skipped: {plan}")
            return result
        result = MinifyResult(after=plan.after, level=plan.level, isolated=plan.isolate)
        env = {**dict(plan.stage.env), "TORCHDYNAMO_REPRO_AFTER": plan.after,
               "TORCHDYNAMO_REPRO_LEVEL": str(plan.level)}
        self.progress(f"minify, step 1 of 2: rerunning with {plan.stage.title} and TORCHDYNAMO_REPRO_AFTER=\"{plan.after}\" "
                      f"TORCHDYNAMO_REPRO_LEVEL={plan.level} to write torch's minifier_launcher.py")
        # (the accuracy check copies repro.py into its working directory: run it from the work directory)
        cwd = self._dir("cwd", "minify_program") if plan.level == 4 else None
        prog = _absolute_paths(self.prog, self.cwd) if cwd else self.prog
        result.run, _ = self._child(prog, "minify_program", env, cwd=cwd, traced=False, fresh_cache=True)
        debug_dir = os.path.join(self.work, "debug", "minify_program")
        launchers = sorted(glob.glob(os.path.join(debug_dir, "torch_compile_debug", "*", "minifier", "minifier_launcher.py")),
                           key=os.path.getmtime)
        if not launchers:
            result.note = "torch wrote no minifier_launcher.py (the failure did not reproduce under the minifier's wrapper)"
            self.progress(f"minify: {result.note}")
            return result
        launcher = launchers[-1]
        result.launcher = _read_all(launcher)
        self._minify_files["minifier_launcher.py"] = launcher
        # In-process is much faster; a crash needs each try in a process of its own (it would kill the minifier).
        how = "each try in a process of its own: minify" if result.isolated else "in-process: minify --no-isolate"
        self.progress(f"minify, step 2 of 2: running minifier_launcher.py ({how}) to shrink the graph")
        cwd = self._dir("cwd", "minify")
        result.launcher_run, _ = self._child(
            Program([sys.executable, launcher, "minify", *([] if result.isolated else ["--no-isolate"])], True), "minifier", {},
            cwd=cwd, traced=False,
        )
        repro = os.path.join(cwd, "repro.py")
        if not os.path.isfile(repro):
            result.note = ("the minifier wrote no repro.py" + (" (it ran out of time)" if result.launcher_run.timed_out else "")
                           + ": see its output")
            self.progress(f"minify: {result.note}")
            return result
        result.repro = _read_all(repro)
        result.graph = repro_graph(result.repro)
        self._minify_files["repro.py"] = repro
        save_dir = repro_save_dir(result.repro)
        if save_dir:
            for path in glob.glob(os.path.join(save_dir, "storages", "*")):
                self._minify_files[f"checkpoints/storages/{os.path.basename(path)}"] = path
        size = f"{result.graph.nodes} nodes: {', '.join(result.graph.ops) or 'no ops'}" if result.graph else "graph not found"
        self.progress(f"      repro.py written ({size}) in {result.launcher_run.seconds:.0f}s")
        return result


def _describe(outcome: StageOutcome) -> str:
    f = outcome.facts
    if f is None:
        return f"skipped: {outcome.skipped_reason}"
    took = f"in {f.seconds:.1f}s"
    if f.timed_out:
        return f"TIMED OUT after {f.seconds:.0f}s"
    if outcome.crash is not None:
        return f"CRASHED {took}: {outcome.crash.said}"[:300]
    if outcome.errors:
        e = outcome.errors[0]
        return f"FAILED {took}: {e.exception}: {e.message}"[:300]
    if outcome.accuracy_failure:
        return f"FAILED {took}: {outcome.accuracy_failure}"
    if f.returncode:
        return f"FAILED {took} (exit status {f.returncode}, no failed compile in the trace)"
    seen = [count(outcome.compiles, "compile id")]
    seen += [count(outcome.graph_breaks, "graph break")] if outcome.graph_breaks else []
    seen += [count(outcome.recompiles, "recompile")] if outcome.recompiles else []
    if outcome.caught:
        e = outcome.caught[0]
        seen.append(f"{count(len(outcome.caught), 'failed compile')} the program caught: {e.exception}: {e.message}")
    if outcome.limited:
        seen.append(f"but {limit_hits(outcome)} and ran eagerly after that")
    return f"passed {took} ({', '.join(seen)})"[:300]


def check_program_env(prog: Program) -> None:
    """A CompilescopeError where an `env` before the program sets or unsets a variable a stage's run sets (its forced
    backend, torch's repro settings, the trace), has an option of env not understood here, or runs the program in
    another folder (-C: the stages read and run it from folders of their own): before the first stage
    (runner.check_env_prefix)."""
    check_env_prefix(prog.argv, [*TRACING_VARIABLES, *_NEUTRALIZED, DEBUG_DIR_ENV], chdir=False)


def diagnose(prog: Program, work: str, options: DiagnoseOptions, progress: Progress) -> DiagnoseResult:
    return Diagnoser(prog, work, options, progress).run()

"""Compile-health rules for CI (`compilescope check`): each rule passes or fails with one line saying why.

Absolute rules read one run's facts (analyses/run_facts/); baseline rules compare it with a baseline run
through the diff (analyses.diff), so frames and graph breaks are matched the same way. The diff is imported only by
the functions that compare two runs: a check of one run, the common CI gate, does not pay for it.
"""

from __future__ import annotations

import shlex
from dataclasses import field
from collections.abc import Mapping
from typing import Any

from .divergence import COLLECTIVES, COMPILE_IDS, STATUSES, TENSOR_META, Divergence
from .graph_breaks.resume_names import resume_of
from .op_mutations import DEFINE as DEFINE_FORM
from .recompiles import CHANGE_LABELS
from .recompiles.reasons import classify_change
from .run_facts import FrameFacts, RunFacts, short_path
from .run_facts.words import break_at, crash_called_from, crash_line, failed_compiles
from .time_threshold import TimeThreshold
from .unread import Unread
from .user_locations import is_python_library_file
from ..model.records import dataclass
from ..wording import count, first_listed, format_seconds, format_us, times


# `check --json`'s document (docs/check-schema.md): bump when a key changes meaning or goes away.
SCHEMA_VERSION = 1


@dataclass
class Rules:
    max_graph_breaks: int | None = None
    max_recompiles: int | None = None
    # Only the recompiles the recompiles analysis calls avoidable: not a module's mode or a parameter's requires_grad
    # switched to a setting no compiled version had (eval(), a layer unfrozen), nor a tensor's requires_grad that one
    # calling line changed (`x = block(x)`), which compile once per setting.
    max_avoidable_recompiles: int | None = None
    # No hook registered after its module's function was compiled (Recompiles.late_hooks): torch does not recompile
    # for one, so calls the earlier compile served ran without it (wrong results, no error). Its own rule, not an
    # avoidable recompile: the recompile that revealed it may be expected (an eval()), and the fault is the skipped
    # hook, not the compile.
    no_late_hooks: bool = False
    no_failures: bool = False
    no_export_issues: bool = False  # draft export found no issue (its program holds only under what export assumed)
    max_compile_seconds: float | None = None
    # Of compile time, benchmarking to choose code (max-autotune's searches, kernels' launch configs): a budget of its
    # own, as max-autotune can double a compile that is otherwise within its budget (cpu_autotune: 44 s of 129 s)
    max_autotune_seconds: float | None = None
    # Every AOTInductor package accepts inputs of more than one shape (each was exported with a Dim): a deployment
    # whose batch size varies. A package of one shape gives a batch of another no error by default (the wrapper checks
    # its inputs only with AOTI_RUNTIME_CHECK_INPUTS set), and returns the rows it was compiled for.
    no_static_aoti_packages: bool = False
    no_cudagraph_skips: bool = False  # reduce-overhead: every compile runs as CUDA graphs
    # No compiled code draws random numbers with Inductor's generator (fallback_random off): a run whose results must
    # match eager's under the same seed
    no_inductor_random: bool = False
    # No compiled code calls a custom op whose source writes into an argument its mutates_args does not name (torch takes
    # it for functional: a run whose results must match eager's)
    no_custom_op_mutations: bool = False
    no_warnings: bool = False  # torch printed no warning (where the run recorded them)
    no_new_warnings: bool = False  # with a baseline: torch printed no warning the baseline's run did not
    no_rank_divergence: bool = False  # every rank compiled the same graphs, and each compile ended alike
    # A crash in torch's loader of an AOTInductor package the run had built (_loader_crash) passes its rule,
    # no-aoti-load-crash, so that the build's gates decide: the package was built whole, and loading it is a separate
    # step torch's native code failed (on an H200 under plain python too: cuda_torch211's aoti_deploy_cuda_*).
    allow_aoti_load_crash: bool = False
    # The user's own Triton kernels (by their @triton.jit function's name) that the compiled code must hold: Dynamo
    # traced their launch into a graph, so Inductor compiled them with the ops around them. A graph break at the
    # launch, or a launch outside compiled code, runs the kernel eagerly and leaves it out.
    user_kernels: list[str] = field(default_factory=list)
    # With a baseline: more compile time is a regression only where `diff` calls it a change (not noise).
    compile_time: TimeThreshold = TimeThreshold()
    # With a baseline and a profile of each run: a compiled graph's kernel time per call (and, where each profile ran
    # one graph, the GPU time per call of it, idle included) may grow to this many times the baseline's. A user sets it
    # from the noise of their own profiles: two profiles of one program differ by a few percent.
    max_run_time_ratio: float | None = None


@dataclass
class RuleResult:
    name: str  # e.g. "max-graph-breaks"
    description: str  # what the rule asks, e.g. "at most 0 distinct graph breaks"
    passed: bool
    message: str = ""  # why it failed (one line), or what was seen when it passed
    details: list[str] = field(default_factory=list)
    # Passed, and what was seen is worth a line anyway: more compile time than the baseline, within the noise. A gate
    # that says nothing of it reads as not having looked.
    noteworthy: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.name, "description": self.description, "passed": self.passed, "message": self.message,
                "details": self.details}


KILLED = "the program was stopped, crashed or was killed while compiling, so what it did after is not in the log"

# Why a run's warnings cannot be checked, and how to record them: a rule asked for and not checkable fails.
NOT_RECORDED = ("did not record the warnings torch printed (record them with this compilescope's `run` or capture(), "
                "or save its stderr as output.txt beside its log)")


# Python's own library, which torch may call from compiled code (torch 2.14's compiled autograd calls inspect): the
# report says there is nothing in the user's code to change there, so no rule counts what Dynamo did in it (the
# passing message says how much there was).
def _in_python_library(facts: RunFacts, frame: str | None) -> bool:
    found = facts.frames.get(frame) if frame else None
    return found is not None and found.filename is not None and is_python_library_file(found.filename)


def _user_failures(facts: RunFacts) -> list[dict[str, Any]]:
    return [x for x in facts.failures if not _in_python_library(facts, x["frame"])]


def _user_breaks(facts: RunFacts) -> list[dict[str, Any]]:
    return [b for b in facts.graph_breaks if not (b["file"] and is_python_library_file(b["file"]))]


# A call of a torch.compiler.disable'd function (graph_breaks.GraphBreak.disabled) runs eagerly because the program
# asked so: a gate on graph breaks counts the breaks to fix, not what was decided, and says how many it left out.
DISABLED_NOT_COUNTED = "at torch.compiler.disable'd calls, which run eagerly on purpose, not counted"


# Recompiles the analysis calls expected (recompiles.EXPECTED): a setting no compiled version had, which compiles
# once per setting: the program switched its model's (eval(), a layer unfrozen), or one line passes a tensor that
# requires grad where it passed one that does not (`x = block(x)`); a gate on avoidable recompiles says how many it
# left out, and of what.
EXPECTED_NOT_COUNTED = ("expected, not counted: a module's mode, a parameter's requires_grad or a tensor's "
                        "requires_grad from the same calling line that no compiled version had")


# Recompiles the log cannot tell expected or avoidable (recompiles.RecompileStep.unknown_settings): a compile compared
# has no guard tree. Counted avoidable, a log of a torch that logs none failed the gate on its eval() recompiles.
UNKNOWN_NOT_COUNTED = ("the log cannot tell expected or avoidable (no guard tree, dynamo_cpp_guards_str, to compare "
                       "settings with), not counted")
# A break torch's own code makes on purpose (graph_breaks.GraphBreak.by_torch: torch.optim's _use_grad calls
# torch._dynamo.graph_break() in every optimizer step Dynamo compiles): nothing in the user's code removes it, so a gate
# does not count it either. (Facts saved before lack the key: their breaks are counted.)
BY_TORCH_NOT_COUNTED = "by torch itself (torch._dynamo.graph_break() in its own code, on purpose), not counted"


# What no-late-hooks cannot see: torch logs nothing for a hook registered after compiling; only a later recompile's
# guard tree, counting more hooks than the compile before it, shows one.
LATE_HOOKS_UNSEEN = ("as far as the log shows: only a recompile for something else reveals one, and a hook registered "
                     "with no recompile after it leaves nothing in the log")


def _late_hook(hook: dict[str, Any]) -> str:
    """"self.block: 1 forward hook registered after forward was compiled; calls [0/0] served after it ran without it
    (found by [0/1]'s guards)"."""
    return (f"{hook['module']}: {hook['hooks']} registered after {hook['function']} was compiled; calls "
            f"{hook['served_by']} served after it ran without it (found by {hook['found_by']}'s guards)")


def _gated_breaks(facts: RunFacts) -> list[dict[str, Any]]:
    return [b for b in _user_breaks(facts) if not b.get("disabled") and not b.get("by_torch")]


def _breaks_note(facts: RunFacts) -> str:
    """" (2 more at torch.compiler.disable'd calls, ...)": what max-graph-breaks left out, and why."""
    disabled = sum(1 for b in _user_breaks(facts) if b.get("disabled"))
    by_torch = sum(1 for b in _user_breaks(facts) if b.get("by_torch") and not b.get("disabled"))
    return ((f" ({disabled} more {DISABLED_NOT_COUNTED})" if disabled else "")
            + (f" ({by_torch} more {BY_TORCH_NOT_COUNTED})" if by_torch else "")
            + _library_note(len(_user_breaks(facts)), len(facts.graph_breaks)))


def _drawn(facts: RunFacts) -> list[dict[str, Any]]:
    """The lines whose random numbers compiled code draws with Inductor's generator, not eager's."""
    return [n for n in facts.numerics or [] if n["kind"] == "random"]


def _undeclared_writes(facts: RunFacts) -> list[dict[str, Any]]:
    return [n for n in facts.numerics or [] if n["kind"] == "mutation"]


def _schema_marks(runs: Mapping[Any, RunFacts]) -> str:
    """How each schema-defined op's schema would mark the arguments it writes (`Tensor(a!) buf`), each op's once;
    "Tensor(a!) on what it writes" for facts saved before the arguments were kept."""
    marks = dict.fromkeys(", ".join(f"Tensor({chr(ord('a') + i)}!) {a}" for i, a in enumerate(n["arguments"][:26]))
                          for f in runs.values() for n in _undeclared_writes(f)
                          if n.get("form") == DEFINE_FORM and n.get("arguments"))
    return "; ".join(marks) or "Tensor(a!) on what it writes"


def _one_shape(facts: RunFacts) -> list[dict[str, Any]]:
    """The AOTInductor packages whose every input dim has one size (AotiPackage.one_shape)."""
    return [p for p in facts.aoti_packages if p.get("one_shape")]


def _user_frames(facts: RunFacts) -> list[FrameFacts]:
    return [f for f in facts.frames.values() if not (f.filename and is_python_library_file(f.filename))]


def _recompiles(frames) -> int:
    return sum(f.recompiles for f in frames)


def _of_new_frames(base: RunFacts, run: RunFacts) -> str:
    """" (1 of them of f after its graph break at line 33, compiled only in this run)": recompiles of frames the baseline
    never compiled, such as the resume function after a new graph break, which that break's rule reports already."""
    new = [f for f in _user_frames(run) if f.key not in base.frames and f.recompiles]
    if not new:
        return ""
    names = ", ".join(f.function_words for f in new)
    return (f" ({sum(f.recompiles for f in new)} of them of {names}, compiled only in this run"
            f"{': the graph break is new' if any(resume_of(f.function) for f in new) else ''})")


def _grew_most(base: RunFacts, run: RunFacts) -> str:
    """"; most in step (adam.py:214): 0 → 5": the function of both runs whose recompiles grew most (a function only
    this run compiled is named by _of_new_frames)."""
    from .diff.frames import frames_label  # here, as in each function comparing two runs: the diff is for --baseline

    grown = [(f.recompiles - base.frames[f.key].recompiles, f) for f in _user_frames(run) if f.key in base.frames]
    if not grown or max(d for d, _ in grown) <= 0:
        return ""
    _, f = max(grown, key=lambda g: g[0])
    label = frames_label(base.frames[f.key], f, ("the baseline", "this run"))
    return f"; most in {label}: {base.frames[f.key].recompiles} → {f.recompiles}{_failing(base.frames[f.key], f)}"


def _failing(base: FrameFacts, run: FrameFacts) -> str:
    """", 4 of them failing ___as_tensor(self.param_groups[0]['lr']).item() == one of 0.0047, … (optimizer
    hyperparameter)": the guard that failed most often in this run and not in the baseline, with what it checks in
    the recompiles analysis's words: what to make stable or dynamic."""
    from .diff import most_failed_guard
    from .diff.frames import multiset_diff

    _, new = multiset_diff(base.guard_failures, run.guard_failures)
    found = most_failed_guard(new, run.guard_words)
    if found is None:
        return ""
    guard, times, first = found
    return f", {times} of them failing {guard} ({CHANGE_LABELS[classify_change(first)]})"


def _why_slow(facts: RunFacts) -> str | None:
    """"[0/0] forward took 11.58 s, 9.95 s of it in C++ compile; every FX graph cache lookup missed: a cold cache": the
    slowest compile and the phase most of its time went to, then a cache that no lookup hit. A total alone says
    neither which compile to look at nor whether a warm cache would have spared it."""
    slowest = facts.slowest_compile
    said = []
    if slowest is not None:
        phase = (f", {format_seconds(slowest['phase_s'])} of it in {slowest['phase_label']}"
                 if slowest["phase_label"] else "")
        called = f" (called at {slowest['called_at']})" if slowest.get("called_at") else ""  # (facts saved before: none)
        who = " ".join(part for part in (slowest["compile_id"], slowest["function"]) if part) + called
        said.append(f"the slowest compile, {who}, took {format_seconds(slowest['seconds'])}{phase}")
    fx_graph = facts.cache_counts.get("fx_graph_cache", {})
    if fx_graph and set(fx_graph) == {"miss"}:
        said.append("every FX graph cache lookup missed: a cold cache")
    return "; ".join(said) or None


def _slowest_searches(facts: RunFacts) -> list[str]:
    """The max-autotune searches, the slowest first, each as the user's line and op it was for, its time and the part
    of it compiling candidates: "cpu_autotune.py:34 packed_linear 32x64, 1459233x1, 10x64 took 15.42 s, 15.04 s of it
    compiling candidates". (Facts saved before lack the times: their searches are not listed.)"""
    timed = sorted((s for s in facts.autotune_searches if s.get("seconds") is not None), key=lambda s: -s["seconds"])
    said = []
    for search in timed:
        what = " ".join(part for part in (search.get("site"), search["op"], search["shape"]) if part)
        compiling = search.get("candidate_compile_s")
        said.append(f"{what} took {format_seconds(search['seconds'])}"
                    + (f", {format_seconds(compiling)} of it compiling candidates" if compiling else ""))
    return said


def _warned(printed_raised: tuple[int, int]) -> str:
    """"torch printed 2 warnings", "torch raised 1 error the program caught", or both."""
    printed, raised = printed_raised
    said = [f"torch printed {count(printed, 'warning')}"] if printed or not raised else []
    if raised:
        said.append(f"{'raised' if said else 'torch raised'} {count(raised, 'error')} the program caught")
    return " and ".join(said)


def _library_note(counted: int, total: int) -> str:
    return f" ({total - counted} more in Python's own library, not counted)" if total > counted else ""


def _compiled(facts: RunFacts, name: str) -> list[dict[str, Any]]:
    return [k for k in facts.user_kernels or () if k["name"] == name]


def _compiled_where(facts: RunFacts, name: str) -> str:
    """"scaled_add_kernel compiled in [0/0], [0/1] (n symbolic), launched at prog.py:34"; a compile id whose code
    defines it more than once, once: "[0/0] (2 times)"."""
    found = _compiled(facts, name)
    per_id: dict[str, list[dict[str, Any]]] = {}
    for k in found:
        per_id.setdefault(k["compile_id"], []).append(k)

    def said(ks: list[dict[str, Any]]) -> str:
        symbolic = list(dict.fromkeys(s for k in ks for s in k["symbolic"]))
        parts = ([f"{len(ks)} times"] if len(ks) > 1 else []) + ([f"{', '.join(symbolic)} symbolic"] if symbolic else [])
        return f" ({'; '.join(parts)})" if parts else ""
    ids = ", ".join(compile_id + said(ks) for compile_id, ks in per_id.items())
    launched = sorted({at for k in found for at in k["launched_at"]})
    return f"{name} compiled in {ids}" + (f", launched at {', '.join(launched)}" if launched else "")


def _loader_crash(facts: RunFacts) -> bool:
    """The run crashed in torch's loader of an AOTInductor package after building it: Python was in aoti_load_package
    (or what it calls), the log holds the package's wrapper and every compile it began ended (run_facts.analysis._crash). A crash
    while compiling, or in loading a package this log did not build, is no-crash's, and so is one in facts saved
    before the key was kept."""
    return facts.crash is not None and bool(facts.crash.get("loading_built_aoti_package"))


def _built(facts: RunFacts) -> str:
    """" (aoti_deploy_cuda.py:40)": the lines that compiled the run's AOTInductor packages, where the log names them."""
    calls = list(dict.fromkeys(p["call"] for p in facts.aoti_packages if p["call"]))
    return f" ({', '.join(calls)})" if calls else ""


def _where(rank: int | None) -> str:
    return "" if rank is None else f"rank {rank}: "


def _ranks(facts: dict[int | None, RunFacts]) -> str:
    return ", ".join(str(r) for r in sorted(r for r in facts if r is not None)) or "a single log"



def evaluate(runs: dict[int | None, RunFacts], rules: Rules,
             baseline: dict[int | None, RunFacts] | None = None, not_read: dict[int, str] | None = None,
             baseline_not_read: dict[int, str] | None = None,
             divergences: list[Divergence] | None = None) -> list[RuleResult]:
    """One result per rule asked for (with a baseline: also one per regression rule), in a fixed order.
    not_read, baseline_not_read: ranks whose log could not be read at all (rank -> why); they fail rule whole-log.
    divergences: how the run's ranks differ (divergence.analyze_ranks), for no-rank-divergence; None: one log."""
    results: list[RuleResult] = []
    # A program that died in native code is never healthy, whatever was asked, nor a baseline to compare with (its log
    # stops at the crash): first, as the crash is the report's first finding. Present only where a crash was recorded
    # (as whole-log only where a log falls short): a plain log cannot say that its run did not crash. (A crash in
    # loading an AOTInductor package the run built is no-aoti-load-crash's, below.)
    both = (("the run", runs), ("the baseline's run", baseline or {}))
    crashed = [(who, rank, facts.crash) for who, side in both
               for rank, facts in side.items() if facts.crash is not None and not _loader_crash(facts)]
    if crashed:
        who, rank, crash = crashed[0]
        more = f" (and {count(len(crashed) - 1, 'more log', 'more logs')})" if len(crashed) > 1 else ""
        results.append(RuleResult("no-crash", "the program did not crash", False,
                                  f"no-crash: {_where(rank)}{who} crashed: {crash_line(crash)}{more}",
                                  [f"{_where(r)}{w} crashed: {crash_line(c)}"
                                   + (f", {called}" if (called := crash_called_from(c)) else "") for w, r, c in crashed]))
    # A crash loading the AOTInductor package the run built: its own rule, as the build it follows was whole (its gates
    # answer on it); failed unless allowed, as the program did crash.
    loaders = [(who, rank, facts, facts.crash) for who, side in both for rank, facts in side.items()
               if facts.crash is not None and _loader_crash(facts)]
    if loaders:
        who, rank, facts, crash = loaders[0]
        more = f" (and {count(len(loaders) - 1, 'more log', 'more logs')})" if len(loaders) > 1 else ""
        said = f"{_where(rank)}{who} crashed after building its AOTInductor package{_built(facts)}: {crash_line(crash)}{more}"
        details = [f"{_where(r)}{w} crashed after building its AOTInductor package{_built(f)}: {crash_line(c)}"
                   + (f", {called}" if (called := crash_called_from(c)) else "") for w, r, f, c in loaders]
        description = "no crash in torch's loader of the AOTInductor package the run built"
        if rules.allow_aoti_load_crash:
            results.append(RuleResult("no-aoti-load-crash", description, True,
                                      f"allowed (--allow-aoti-load-crash): {said}", details, noteworthy=True))
        else:
            results.append(RuleResult("no-aoti-load-crash", description, False,
                                      f"no-aoti-load-crash: {said}; the build's rules answer on what was built: "
                                      "--allow-aoti-load-crash lets them decide", details))

    def absolute(name: str, description: str, measure, limit, exceeds, what, note=lambda facts: "",
                 others: str | None = None, left_out=lambda facts: False) -> None:
        """others: the noun for what broke the rule beyond the first (the message names the first, so a CI log says
        where to look: the graph break, the function that recompiled); None: the message names none. left_out: the
        rule left out of its count what the program asked for (disabled calls): a pass says so on the terminal too."""
        bad, seen = [], []
        for rank, facts in runs.items():
            value, details = measure(facts)
            seen.append(f"{_where(rank)}{what(value)}{note(facts)}")
            if exceeds(value, limit):
                bad.append((rank, value, details, note(facts)))
        if bad:
            rank, value, details, why_not_all = bad[0]
            more = f" (and {count(len(bad) - 1, 'more rank', 'more ranks')})" if len(bad) > 1 else ""
            # (a noun ending in a hiss takes -es: "2 more searches")
            many = f"more {others}es" if others and others.endswith(("ch", "sh", "s", "x")) else None
            named = (f": {details[0]}" + (f", and {count(len(details) - 1, f'more {others}', many)}" if len(details) > 1 else "")
                     if others and details else "")
            results.append(RuleResult(name, description, False,
                                      f"{name}: {_where(rank)}{what(value)}{why_not_all}, {description}{named}{more}",
                                      details))
        else:
            results.append(RuleResult(name, description, True, "; ".join(seen),
                                      noteworthy=any(left_out(facts) for facts in runs.values())))

    def kept(name: str, lacking, description: str = "none allowed", what: str = "them") -> bool:
        """False, and the rule failed, when a run's facts were saved by a compilescope too old to keep what the rule
        reads (lacking(facts)): a rule asked for and not checkable must not pass."""
        unkept = [rank for rank, facts in runs.items() if lacking(facts)]
        if unkept:
            results.append(RuleResult(name, description, False,
                                      f"{name}: {_where(unkept[0])}the facts were saved by a compilescope that did "
                                      f"not keep {what}: check the log itself"))
        return not unkept

    if rules.max_graph_breaks is not None:
        absolute("max-graph-breaks", f"at most {rules.max_graph_breaks} allowed",
                 lambda f: (len(_gated_breaks(f)), [f"{b['reason']} {break_at(b)}" for b in _gated_breaks(f)]),
                 rules.max_graph_breaks, lambda v, lim: v > lim, lambda v: count(v, "distinct graph break"),
                 _breaks_note, others="graph break",
                 left_out=lambda f: len(_gated_breaks(f)) < len(_user_breaks(f)))
    if rules.max_recompiles is not None:
        absolute("max-recompiles", f"at most {rules.max_recompiles} allowed",
                 lambda f: (_recompiles(_user_frames(f)),
                            # the function that recompiled most first: the one the message names
                            [f"{fr.label} recompiled {times(fr.recompiles)}"
                             for fr in sorted(_user_frames(f), key=lambda fr: -fr.recompiles) if fr.recompiles]),
                 rules.max_recompiles, lambda v, lim: v > lim, lambda v: count(v, "recompile"),
                 lambda f: _library_note(_recompiles(_user_frames(f)), _recompiles(f.frames.values())),
                 others="function")
    if rules.max_avoidable_recompiles is not None:
        def avoidable(f: RunFacts) -> int:
            return sum(len(fr.avoidable_recompile_ids) for fr in _user_frames(f))

        def expected_note(f: RunFacts) -> str:
            unknown = sum(len(fr.unknown_recompile_ids) for fr in _user_frames(f))
            expected = _recompiles(_user_frames(f)) - avoidable(f) - unknown
            notes = ([f"{expected} more {EXPECTED_NOT_COUNTED}"] if expected else []) + (
                [f"{unknown} more {UNKNOWN_NOT_COUNTED}"] if unknown else [])
            return f" ({'; '.join(notes)})" if notes else ""

        absolute("max-avoidable-recompiles", f"at most {rules.max_avoidable_recompiles} allowed",
                 lambda f: (avoidable(f),
                            [f"{fr.label} recompiled avoidably {times(len(fr.avoidable_recompile_ids))} "
                             f"({', '.join(fr.avoidable_recompile_ids)})"
                             for fr in sorted(_user_frames(f), key=lambda fr: -len(fr.avoidable_recompile_ids))
                             if fr.avoidable_recompile_ids]),
                 rules.max_avoidable_recompiles, lambda v, lim: v > lim, lambda v: count(v, "avoidable recompile"),
                 lambda f: expected_note(f) + _library_note(_recompiles(_user_frames(f)), _recompiles(f.frames.values())),
                 others="function", left_out=lambda f: avoidable(f) < _recompiles(_user_frames(f)))
    if rules.no_late_hooks and kept("no-late-hooks", lambda f: f.late_hooks is None):
        absolute("no-late-hooks", "none allowed (register hooks before the first compiled call)",
                 lambda f: (len(f.late_hooks or []), [_late_hook(h) for h in f.late_hooks or []]),
                 0, lambda v, lim: v > lim, lambda v: count(v, "hook") + " registered after compiling",
                 lambda f: "" if f.late_hooks else f" ({LATE_HOOKS_UNSEEN})", others="hook",
                 left_out=lambda f: not f.late_hooks)
    if rules.no_failures:
        absolute("no-failures", "none allowed",
                 lambda f: (len(_user_failures(f)), [failed_compiles(f, x) for x in _user_failures(f)]),
                 0, lambda v, lim: v > lim, lambda v: count(v, "failed compile"),
                 lambda f: _library_note(len(_user_failures(f)), len(f.failures)), others="failed compile")
    if rules.no_export_issues:
        absolute("no-export-issues", "none allowed",
                 lambda f: (len(f.export_issues or []),
                            [_export_issue(x) for x in f.export_issues or []]),
                 0, lambda v, lim: v > lim, lambda v: count(v, "draft export issue"),
                 lambda f: " (no export in the log)" if f.export_issues is None else "", others="issue")
    if rules.no_static_aoti_packages and kept("no-static-aoti-packages",
                                              lambda f: any("one_shape" not in p for p in f.aoti_packages)):
        absolute("no-static-aoti-packages", "none allowed (export with dynamic_shapes: a Dim for each size "
                 "that varies, such as the batch)",
                 lambda f: (len(_one_shape(f)), [f"{p['call'] or 'a package'} accepts {p['accepts']}"
                                                 for p in _one_shape(f)]),
                 0, lambda v, lim: v > lim, lambda v: count(v, "AOTInductor package") + " accepting one shape only",
                 lambda f: "" if f.aoti_packages else " (no AOTInductor package in the log)", others="package")
    if rules.max_compile_seconds is not None:
        absolute("max-compile-seconds", f"at most {format_seconds(rules.max_compile_seconds)} allowed",
                 lambda f: (f.compile_time_s, [why] if (why := _why_slow(f)) else []), rules.max_compile_seconds,
                 lambda v, lim: v > lim, lambda v: f"compile time {format_seconds(v)}", others="compile")
    if rules.max_autotune_seconds is not None:
        absolute("max-autotune-seconds", f"at most {format_seconds(rules.max_autotune_seconds)} allowed",
                 lambda f: (f.autotune_s, _slowest_searches(f)), rules.max_autotune_seconds,
                 lambda v, lim: v > lim, lambda v: f"autotuning {format_seconds(v)}", others="search")

    if rules.no_cudagraph_skips:
        absolute("no-cudagraph-skips", "none allowed",
                 lambda f: (len(f.cudagraph_skips), [f"{x['compile_id']}: {x['reason']}" for x in f.cudagraph_skips]),
                 0, lambda v, lim: v > lim, lambda v: count(v, "compile") + " run without CUDA graphs")

    if rules.no_custom_op_mutations and kept(
            # (numerics alone is not enough: facts with numerics and without the custom ops' unread sources were saved
            # before the custom ops' writes were kept)
            "no-custom-op-mutations", lambda f: f.numerics is None or f.unread_custom_ops is None):
        not_read_ops = [(rank, facts.unread_custom_ops) for rank, facts in runs.items() if facts.unread_custom_ops]
        if not_read_ops and not any(_undeclared_writes(f) for f in runs.values()):
            # (an op called whose body is not on this machine: the rule cannot be decided, and a CI gate must not pass
            # it unchecked, so it fails, saying so plainly ("not checked" read as a skip) and where the source was
            # looked for; a write found elsewhere fails the rule naming it)
            first_rank, ops_not_read = not_read_ops[0]
            more = f" (and {count(len(not_read_ops) - 1, 'more rank', 'more ranks')})" if len(not_read_ops) > 1 else ""
            more_ops = f", and {count(len(ops_not_read) - 1, 'more op', 'more ops')}" if len(ops_not_read) > 1 else ""
            results.append(RuleResult("no-custom-op-mutations", "none allowed", False,
                                      f"no-custom-op-mutations: {_where(first_rank)}could not be decided, so it "
                                      f"fails (exit status 1): {ops_not_read[0]['said']}{more_ops}, so what "
                                      f"{'they write' if more_ops else 'it writes'} is not known (check where the "
                                      f"program's files are as they ran){more}",
                                      [u["said"] for _, listed in not_read_ops for u in listed]))
        else:
            # (an op defined by a schema string declares its writes there, not in mutates_args; facts saved before
            # the form was kept say mutates_args)
            defined = {n.get("form") == DEFINE_FORM for f in runs.values() for n in _undeclared_writes(f)}
            declare = " or ".join(([] if defined == {True} else ["declare mutates_args"])
                                  + ([f"mark it written in the schema ({_schema_marks(runs)})"] if True in defined else []))
            declaration = "/".join(([] if defined == {True} else ["mutates_args"]) + (["schema"] if True in defined else []))
            absolute("no-custom-op-mutations", f"none allowed ({declare}, or return a new tensor)",
                     lambda f: (len(_undeclared_writes(f)), [
                         f"{n.get('op') or '?'} at {short_path(n['file'])}:{n['line']}" + (f" ({n['code']})" if n["code"] else "")
                         for n in _undeclared_writes(f)]),
                     0, lambda v, lim: v > lim,
                     lambda v: count(v, "custom op write") + f" torch does not know of ({declaration})", others="write")

    if rules.no_inductor_random and kept("no-inductor-random", lambda f: f.numerics is None):
        absolute("no-inductor-random", "none allowed (torch._inductor.config.fallback_random = True draws eager's)",
                 lambda f: (len(_drawn(f)), [f"{short_path(n['file'])}:{n['line']}" + (f" ({n['code']})" if n["code"] else "")
                                             for n in _drawn(f)]),
                 0, lambda v, lim: v > lim, lambda v: count(v, "line") + " drawing Inductor's random numbers",
                 others="line")

    for name in rules.user_kernels:
        if not kept("user-kernel", lambda f: f.user_kernels is None, f"{name} in the compiled code", "the user's kernels"):
            continue
        missing = [rank for rank, facts in runs.items() if not _compiled(facts, name)]
        if missing:
            others = sorted({k["name"] for k in runs[missing[0]].user_kernels or ()})
            results.append(RuleResult("user-kernel", f"{name} in the compiled code", False,
                                      f"user-kernel: {_where(missing[0])}no compiled code in the log holds your Triton kernel "
                                      f"{name}: Dynamo did not trace its launch into a graph (a graph break at it, or a "
                                      "launch outside the compiled function: it ran eagerly), or the log lacks the code "
                                      "(inductor_output_code)"
                                      + (f"; the code holds {', '.join(others)}" if others else "")))
        else:
            results.append(RuleResult("user-kernel", f"{name} in the compiled code", True,
                                      "; ".join(f"{_where(rank)}{_compiled_where(facts, name)}" for rank, facts in runs.items())))

    if rules.no_warnings:
        unrecorded = [rank for rank, facts in runs.items() if facts.warnings is None]
        if unrecorded:  # asked for and not checkable: fail, and say how to record them
            results.append(RuleResult("no-warnings", "none allowed", False,
                                      f"no-warnings: {_where(unrecorded[0])}the run {NOT_RECORDED}"))
        else:
            # (value: warnings printed, errors raised and caught: a refused recompile is said as raised, not printed)
            absolute("no-warnings", "none allowed",
                     lambda f: ((sum(1 for w in f.warnings if not w.get("raised")),
                                 sum(1 for w in f.warnings if w.get("raised"))),
                                [f"{w['name'] or w['text']} ({w['source']})" for w in f.warnings]),
                     0, lambda v, lim: sum(v) > lim, _warned, others="warning")

    if rules.no_rank_divergence:
        results.append(_rank_divergence(runs, divergences))

    if baseline is not None:
        results.extend(_regressions(runs, baseline, rules))
    # A log read only in part may hide what a rule looks for: a gate that did not see the whole run cannot pass it.
    # (A payload not matching its md5 was still read: stderr says so, and the rules stand.)
    unread = [(who, rank, facts.unread) for who, sides in (("", runs), ("the baseline's ", baseline or {}))
              for rank, facts in sides.items()
              if facts.unread and Unread.from_json(facts.unread).records_lost]
    # A rank not read at all is a rank no rule saw: worse than one read in part.
    lost = [(who, rank, why) for who, sides in (("", not_read or {}), ("the baseline's ", baseline_not_read or {}))
            for rank, why in sorted(sides.items())]
    # A log whose run was killed while compiling was read whole, but the run was not: what it did after is not there.
    # (One that crashed while compiling fails no-crash, which says so.)
    ended = [(who, rank, facts.ends_during) for who, sides in (("", runs), ("the baseline's ", baseline or {}))
             for rank, facts in sides.items() if facts.ends_during and facts.crash is None]
    if unread or lost or ended:
        n = len(unread) + len(lost) + len(ended)
        more = f" (and {count(n - 1, 'more log', 'more logs')})" if n > 1 else ""
        if lost:
            side, lost_rank, why = lost[0]
            message = f"whole-log: {_where(lost_rank)}{side or 'the '}log could not be read ({why}){more}"
        elif unread:
            who, rank, first = unread[0]
            message = f"whole-log: {_where(rank)}{who or 'the '}log was not read in full ({Unread.from_json(first).describe()}){more}"
        else:
            who, rank, during = ended[0]
            message = f"whole-log: {_where(rank)}{who or 'the '}log ends {during}: {KILLED}{more}"
        results.append(RuleResult("whole-log", "every line of the log read", False, message,
                                  [f"{_where(r)}{w or 'the '}log could not be read: {why}" for w, r, why in lost]
                                  + [f"{_where(r)}{w or 'the '}log: {Unread.from_json(u).describe()}" for w, r, u in unread]
                                  + [f"{_where(r)}{w or 'the '}log ends {during}: {KILLED}" for w, r, during in ended]))
    return results


# The divergences that make ranks run different code: a graph, or a compile's ending (failed, broke, no graph), that
# some ranks have and others not, collectives scheduled differently, graphs of other shapes. A rank that runs a
# collective the others never reach waits for them: the classic distributed hang. Cache hits, autotuning choices,
# CUDA graphs and warnings that differ change time or words, not what the ranks compute together; a crash fails
# no-crash; other versions are the environment's divergence, which the report says first.
RANK_DIVERGENCES = (COMPILE_IDS, STATUSES, COLLECTIVES, TENSOR_META)


def _rank_divergence(runs: dict[int | None, RunFacts], divergences: list[Divergence] | None) -> RuleResult:
    """no-rank-divergence: the multi-rank analysis's divergences among RANK_DIVERGENCES, the first named in the
    message with the ranks of each group and its first detail ("[0/1] compiled only on rank 1: tensor 'x' ...")."""
    name, description = "no-rank-divergence", "every rank compiled the same graphs, ending alike"
    if divergences is None:
        return RuleResult(name, description, True, f"{_ranks(runs)}: no ranks to compare")
    found = [d for d in divergences if d.kind in RANK_DIVERGENCES]
    if not found:
        return RuleResult(name, description, True, f"ranks {_ranks(runs)} compiled alike")
    def said(d: Divergence) -> list[str]:  # each detail names its ranks ("[0/1] compiled only on rank 1: ..."); else the groups do
        return d.details or ["; ".join(f"{g.noun} {g.label}: {g.what}" for g in d.groups)]

    first = found[0]
    more = f" (and {count(len(found) - 1, 'more divergence')})" if len(found) > 1 else ""
    # (whether what differs calls collectives, where the analysis could tell: a hang, or only time)
    details = [f"{d.title}: {line}" for d in found for line in said(d)] + [d.consequence for d in found if d.consequence]
    return RuleResult(name, description, False,
                      f"{name}: {first.title[0].lower()}{first.title[1:]}: {said(first)[0]}{more}", details)


def _export_issue(issue: dict[str, Any]) -> str:
    """A draft export issue as the gate names it: "Data Dependent Error at export_draft.py:22 in forward: ..."."""
    return f"{issue['type']}{' at ' + issue['where'] if issue['where'] else ''}: {issue['headline']}"


def _regressions(runs: dict[int | None, RunFacts], baseline: dict[int | None, RunFacts], rules: Rules) -> list[RuleResult]:
    from .diff import unread_note
    from .diff.analysis import diff_runs, paired_ranks

    # Ranks are paired as `diff` pairs them, except that a baseline of one log is every rank's: a gate compares each
    # rank of the run it passes (a single run log stands for the lowest rank of a baseline of ranks).
    if list(baseline) == [None] and len(runs) > 1:
        pairs = [(rank, baseline[None], run) for rank, run in sorted(runs.items(), key=lambda item: item[0] or 0)]
    else:
        pairs = paired_ranks(baseline, runs)
    if not pairs:  # e.g. ranks 0-1 against ranks 2-3: nothing was compared, so nothing may pass
        return [RuleResult("baseline", "a rank of the run to compare with each of the baseline's", False,
                           f"baseline: no rank of the run ({_ranks(runs)}) is a rank of the baseline ({_ranks(baseline)})")]
    uncompared = sorted(r for r in runs if r is not None and None not in baseline and r not in baseline)
    out = []
    if uncompared:  # the gate would pass ranks it never looked at
        names = ", ".join(map(str, uncompared))
        out.append(RuleResult("baseline", "a rank of the run to compare with each of the baseline's", False,
                              f"baseline: {count(len(uncompared), 'rank')} of the run ({names}) not compared: the "
                              f"baseline has ranks {_ranks(baseline)} (a baseline of one log is compared with every rank)"))
    new_breaks, more_recompiles, slower, new_failures, new_skips, new_warnings = [], [], [], [], [], []
    new_random: list[str] = []  # lines whose random numbers compiled code draws with Inductor's generator
    new_mutations: list[str] = []  # custom op writes into an argument torch takes as only read
    new_late_hooks: list[str] = []  # hooks registered after compiling, which calls of the earlier compile skipped
    failed_log = ""  # the log of the first new failure: the one the message points at
    new_export_issues: list[str] = []
    # Checked where a side holds a torch.export, as no-export-issues is with no rule given: a --baseline gate checks
    # no absolute rule, so a draft export issue the change brought passed it.
    exported = any(f.export_issues is not None for _, base, run in pairs for f in (base, run))
    drawn = any(n["kind"] == "random" for _, base, run in pairs for f in (base, run) for n in f.numerics or [])
    mutating = any(n["kind"] == "mutation" for _, base, run in pairs for f in (base, run) for n in f.numerics or [])
    # (where a side has one, as baseline-custom-op-mutations; facts saved before they were kept cannot say what is
    # new, so that side fails the rule, as no-late-hooks fails them)
    hooked = any(f.late_hooks for _, base, run in pairs for f in (base, run))
    unkept_hooks = [f"{_where(rank)}the {side}'s facts were saved by a compilescope that did not keep them: check the "
                    "log itself" for rank, base, run in pairs
                    for side, f in (("baseline", base), ("run", run)) if f.late_hooks is None]
    slower_within_noise = []  # more compile time than the baseline that `diff` calls no change
    threshold = rules.compile_time
    unrecorded = []  # (rank, which side) whose warnings were not recorded
    for rank, base, run in pairs:
        slower_because = ""  # why the compile time changed, where `diff` says (the caches)
        diff = diff_runs(base, run, threshold, sides=("the baseline", "the run"))
        # A baseline read in part (or killed while compiling, or crashed) lacks what lay past its end: each regression
        # that may be only that says so, as `diff` marks the change (the rule whole-log or no-crash fails too).
        cut = (bool(base.ends_during) or base.crash is not None
               or (base.unread is not None and Unread.from_json(base.unread).records_lost))
        hedge = f" ({unread_note('the baseline')})"
        for c in diff.changes:
            regression = f"{_where(rank)}{c.title}" + (hedge if c.unread_side == "A" else "")
            if c.section == "graph_breaks" and c.kind in ("added", "moved"):
                if (not is_python_library_file(c.b["file"] or "") and not c.b.get("disabled")
                        and not c.b.get("by_torch")):
                    new_breaks.append(regression)
            elif c.section == "failures" and c.kind == "added" and not _in_python_library(run, c.frame):
                # Each compile that failed so, named as --no-failures names it ("[0/0] f (diff_pair.py:30): ...").
                hedged = hedge if c.unread_side == "A" else ""
                new_failures += [f"{_where(rank)}new failure: {failed_compiles(run, {**c.b, 'compile_id': cid})}{hedged}"
                                 for cid in c.detail.get("compile_ids") or [c.b.get("compile_id")]]
                failed_log = failed_log or run.source
            elif c.section == "cudagraphs" and c.kind == "added":
                new_skips.append(regression)
            elif c.section == "warnings" and c.kind == "added":
                new_warnings.append(regression)
            elif c.section == "numerics" and c.kind == "added" and c.random_lines:
                new_random.append(regression)
            elif c.section == "numerics" and c.kind == "added" and any(n.get("kind") == "mutation" for n in c.b or []):
                new_mutations.append(regression)
            elif c.detail.get("late_hook") and c.kind == "added":
                new_late_hooks.append(f"{_where(rank)}{_late_hook(c.b)}" + (hedge if c.unread_side == "A" else ""))
            elif c.section == "compile_time":
                slower_because = f"; why: {c.detail['cause']}" if c.detail.get("cause") else ""
        known = {_export_issue(i) for i in base.export_issues or []}
        new_export_issues += [f"{_where(rank)}{said}" + (hedge if cut else "")
                              for said in map(_export_issue, run.export_issues or []) if said not in known]
        if base.warnings is None or run.warnings is None:
            unrecorded.append((rank, "the baseline" if base.warnings is None else "the run"))
        ra, rb = _recompiles(_user_frames(base)), _recompiles(_user_frames(run))
        if rb > ra:
            more_recompiles.append(f"{_where(rank)}{ra} → {rb} recompiles{_of_new_frames(base, run)}{_grew_most(base, run)}"
                                   + (hedge if cut else ""))
        if run.compile_time_s > base.compile_time_s:
            if threshold.significant(base.compile_time_s, run.compile_time_s):
                slower.append(f"{_where(rank)}{threshold.a_change('compile time', base.compile_time_s, run.compile_time_s)}"
                              + (hedge if cut else "") + slower_because)
            else:
                slower_within_noise.append(
                    f"{_where(rank)}{threshold.not_a_change('compile time', base.compile_time_s, run.compile_time_s)}")
    for name, description, found in (
        ("baseline-graph-breaks", "no graph break that the baseline does not have", new_breaks),
        ("baseline-recompiles", "no more recompiles than the baseline", more_recompiles),
        ("baseline-compile-time", f"compile time under {threshold.ratio:g}x the baseline's, or less than "
                                  f"{threshold.seconds:g}s more", slower),
        ("baseline-failures", "no failed compile that the baseline does not have", new_failures),
        *([("baseline-export-issues", "no draft export issue that the baseline does not have", new_export_issues)]
          if exported else []),
        ("baseline-cudagraphs", "no compile run without CUDA graphs that the baseline ran with them", new_skips),
        # (where a side draws them, as baseline-export-issues: a line drawing them is rare)
        *([("baseline-inductor-random", "no line drawing Inductor's random numbers (not eager's) that the baseline "
                                        "does not have", new_random)] if drawn else []),
        *([("baseline-custom-op-mutations", "no custom op writing into an argument its mutates_args does not name "
                                            "that the baseline does not have", new_mutations)] if mutating else []),
        *([("baseline-late-hooks", "no hook registered after compiling that the baseline does not have",
            unkept_hooks + new_late_hooks)] if hooked else []),
    ):
        if found:
            # A failure's message names what explains it: its error and next steps, and the stage that fails.
            explained = (f"; why, and what to try: compilescope summary {shlex.quote(failed_log)} (or compilescope "
                         "diagnose on the program: the stage that fails)") if name == "baseline-failures" else ""
            out.append(RuleResult(name, description, False, f"{name}: {found[0]}"
                                  + (f" (and {len(found) - 1} more)" if len(found) > 1 else "") + explained, found))
        elif name == "baseline-compile-time" and slower_within_noise:
            out.append(RuleResult(name, description, True, f"{'; '.join(slower_within_noise)}, so no regression",
                                  noteworthy=True))
        else:
            out.append(RuleResult(name, description, True, "no regression"))
    if rules.max_run_time_ratio is not None:
        out.append(_run_time(pairs, rules.max_run_time_ratio))
    if rules.no_new_warnings:
        name, description = "baseline-warnings", "no warning from torch that the baseline's run did not print"
        if unrecorded:
            rank, side = unrecorded[0]
            out.append(RuleResult(name, description, False, f"{name}: {_where(rank)}{side} {NOT_RECORDED}"))
        elif new_warnings:
            out.append(RuleResult(name, description, False, f"{name}: {new_warnings[0]}"
                                  + (f" (and {len(new_warnings) - 1} more)" if len(new_warnings) > 1 else ""), new_warnings))
        else:
            out.append(RuleResult(name, description, True, "no regression"))
    return out


RUN_TIME_OPTION = "--max-run-time-ratio"


def no_run_time(facts: dict[int | None, RunFacts], baseline: dict[int | None, RunFacts] | None = None) -> str | None:
    """Why one side's run time cannot be gated ("was read with no profile ..."), or None where it can: one log, read
    with a profile joined to it; with baseline (the run's side, once the baseline passed), a profile of the same
    timeline as the baseline's (a CPU profile's kernel times are no GPU's). Said after the side's name by the
    refusal."""
    if len(facts) > 1:
        return f"has {len(facts)} rank logs: run time is compared for one log, with its profile"
    (run,) = facts.values()
    if run.runtime is None:
        return ("was read with no profile: put its torch.profiler trace beside its log (<name>.profile.json[.gz], or "
                "capture()'s profile.json.gz) or give it with --profile (the run's) or --baseline-profile")
    if run.runtime.get("unusable"):  # (the reason the report and summary show: "read stopped early: ...")
        return f"has a profile, {run.runtime['profile']}, that cannot be used: {run.runtime['unusable']}"
    if "not_joined" in run.runtime:
        return f"has a profile, {run.runtime['profile']}, that is not joined to its log ({run.runtime['not_joined']})"
    if baseline is not None and len(baseline) == 1:
        (base,) = baseline.values()
        from .diff.timing import timelines_differ

        if base.runtime is not None and (why := timelines_differ(base.runtime, run.runtime)) is not None:
            return f"has {why}"
    return None


def _run_time(pairs: list[tuple[int | None, RunFacts, RunFacts]], ratio: float) -> RuleResult:
    """baseline-run-time: per compile id both profiles ran, its kernel time per call, and where each ran one graph
    the GPU time per call of it (idle included: a launch-bound step's cost), under `ratio` times the baseline's. Both
    sides have a joined profile (no_run_time refused the others)."""
    from .diff.timing import ONE_PROFILE_GRAPHS, runtime_per_call

    name = "baseline-run-time"
    description = f"each compiled graph's GPU time per call under {ratio:g}x the baseline's (its profile's)"
    grew, seen = [], []
    for rank, base, run in pairs:
        assert base.runtime is not None and run.runtime is not None
        rows, per_call = runtime_per_call(base.runtime, run.runtime)
        timeline = run.runtime["timeline"].upper()
        measures = [(f"{r['compile_id']}'s kernels", r["a_us"], r["b_us"]) for r in rows]
        if per_call is not None:
            measures.insert(0, (f"{timeline} time", *per_call))
        for what, a, b in measures:
            said = f"{_where(rank)}{what} {format_us(a)} → {format_us(b)} per call"
            times_as_long = b / a if a > 0 else float("inf") if b > 0 else 1.0
            seen.append(f"{said} ({times_as_long:.2f}x)")
            if times_as_long > ratio:
                grew.append(f"{said}, {times_as_long:.2f}x the baseline's, more than the {ratio:g}x allowed "
                            f"({RUN_TIME_OPTION})")
        only = sorted({g["compile_id"] for g in run.runtime["graphs"]} - {g["compile_id"] for g in base.runtime["graphs"]})
        if only:  # nothing to compare them with: said, so that a pass does not read as having looked at them
            seen.append(f"{_where(rank)}not in the baseline's profile: {first_listed(only, shown=ONE_PROFILE_GRAPHS)}")
    if grew:
        return RuleResult(name, description, False, f"{name}: {grew[0]}"
                          + (f" (and {len(grew) - 1} more)" if len(grew) > 1 else ""), grew)
    if not seen:
        return RuleResult(name, description, False, f"{name}: no compiled graph ran in both profiles: nothing to compare")
    return RuleResult(name, description, True, f"{'; '.join(seen)}: no regression", noteworthy=True)

"""Findings of what went wrong outside a compile: a setting of torch's own tests left on, a crash (the process died in
native code or of an uncaught exception; in an AOTInductor package's loader, what to do), and the warnings torch
printed (what a float32 matmul without TF32 cost, where a profile says)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...wording import count, cut_at_word, format_us
from ..aoti import Aoti
from ..crash import AOTI_LOADER, STATIC_LAUNCHER_ADVICE, Crash
from ..environment import TorchTestSetting
from ..torch_warnings import KNOWN as KNOWN_WARNINGS
from ..torch_warnings import COND_ONE_BRANCH, NO_TF32, RECOMPILE_LIMIT, TorchWarnings
from . import ERROR, INFO, WARNING, Finding, shown_names

if TYPE_CHECKING:
    from ..runtime import Runtime

# Characters of the first other warning a finding quotes (the Warnings section has it whole).
OTHER_WARNING_SHOWN = 160


def testing_only(setting: TorchTestSetting) -> Finding:
    """A setting of torch's own tests was on: the first thing to know of the run, as what follows (a failed compile,
    a crash, wrong results) may be only what it did on purpose."""
    return Finding(ERROR, "testing_only", f"{setting.what}: {setting.assignment}",
                   (f"{setting.with_it}: {shown_names(setting.compile_ids)}; " if setting.compile_ids else "")
                   + f"torch's _TESTING_ONLY {setting.kind}s make compiles fail, kernels crash or compute wrong "
                   f"results on purpose, so what this log shows may be only that: {setting.undo}")


def _package_calls(found: Aoti) -> list[str]:
    """The user's lines that compiled the log's AOTInductor packages: "aoti_deploy_cuda.py:40"."""
    return sorted({p.call.short for p in found.packages if p.call is not None})


def _aoti_load_advice(crash: Crash, found: Aoti, compiled: bool) -> str:
    """What a crash in torch's loader of an AOTInductor package means and what to do: the package compiled (where the
    log holds its code and the compile's end), loading it crashed in torch's native code, not the user's model."""
    calls = _package_calls(found)
    where = crash.where
    loader = f"{where.function} at {where.short}" if where is not None and where.function else AOTI_LOADER
    done = (f"{' and '.join(calls)} compiled its package (torch logged its generated code and the compile's end), "
            "then loading it crashed" if calls and compiled else "loading the package crashed")
    return (f"; {done} inside torch's loader ({loader}, which loads the package's compiled library), not in your "
            "model's code. Try loading the .pt2 alone in a fresh process (python -X faulthandler -c \"import torch; "
            "torch._inductor.aoti_load_package('PATH')\"), and a newer torch; a bug report to PyTorch wants the .pt2 "
            "package, this stack, the lines that compiled and loaded it, and the output of "
            "python -m torch.utils.collect_env (torch, CUDA, driver and GPU)")


def crash_finding(crash: Crash, found: Aoti | None = None, compiled: bool = False) -> Finding:
    said = crash.circumstances
    if crash.exception:
        return Finding(ERROR, "crash", f"the program {'stopped with' if crash.thread is None else 'lost a thread to'} "
                       f"{crash.headline}", ", ".join(said) + ("; " if said else "")
                       + "torch logged nothing of it: the uncaught exception was recorded by compilescope"
                       + (f" in {crash.file} beside the log" if crash.file else " run"))
    # A package built, then torch's loader crashed: the title says so, as "the program crashed in _package.py" read as
    # the user's program failing, and a CI user skimming it missed that the build they gate had succeeded.
    built = _package_calls(found) if crash.loading_aoti_package and found is not None and compiled else []
    title = (f"loading the AOTInductor package built at {' and '.join(built)} crashed in torch's loader: {crash.headline}"
             if built else f"the program crashed: {crash.headline}")
    return Finding(ERROR, "crash", title, ", ".join(said) + ("; " if said else "")
                   + "torch logged nothing of it: the stack is Python's faulthandler's, recorded by compilescope"
                   + (f" in {crash.file} beside the log" if crash.file else " run")
                   + (f"; {STATIC_LAUNCHER_ADVICE}" if crash.in_static_launcher else "")
                   + (_aoti_load_advice(crash, found, compiled) if crash.loading_aoti_package and found is not None else ""))


def torch_warning_findings(printed: TorchWarnings, said_above: set[str], runtime: Runtime | None = None) -> list[Finding]:
    """A known warning is a finding of its own (but the recompile limit, found from the log itself, and what another
    finding says already); the others are counted in one. runtime: the profiles given with the log, which say what
    a warning costs where they can (the matmuls' share of the GPU time, for float32 matmuls without TF32)."""
    out = []
    others = []
    for w in printed.warnings:
        if w.name == RECOMPILE_LIMIT or w.name in said_above or w.failure:
            continue  # (a failure's own report is said with its error)
        if w.name is None:
            others.append(w)
            continue
        where = f"{w.location.short}: " if w.location else ""
        severity = INFO if w.name == COND_ONE_BRANCH else WARNING
        cost = _matmul_cost(runtime) if w.name == NO_TF32 and runtime else ""
        # (an error torch raised and the program caught is said where such errors are, not as a warning printed)
        out.append(Finding(severity, "raised" if w.raised else "warnings", w.name, f"{where}{cost}{w.advice}"))
    if runtime and not any(w.name == NO_TF32 for w in printed.warnings):
        # torch warns on stderr only, which a user may not have kept: the profile shows the float32 GEMMs by itself
        from ..runtime.findings import tf32_unused  # here: only a log given with a profile pays for the runtime analysis

        shown = next((c for p in runtime.profiles if (c := tf32_unused(p))), None)
        if shown:
            advice = next(advice for _, name, advice in KNOWN_WARNINGS if name == NO_TF32)
            out.append(Finding(WARNING, "warnings", NO_TF32, shown + advice))
    if others:
        out.append(Finding(INFO, "warnings", f"torch printed {count(len(others), 'other warning')}",
                           cut_at_word(others[0].headline, OTHER_WARNING_SHOWN)))
    return out


def _matmul_cost(runtime: Runtime) -> str:
    """"in profile.json the matmuls' kernels took 95% of the GPU time (33 ms, aten::mm); ": what TF32 would speed up,
    from the profile of the compiled run (the first profile where none is), where its matmuls took any time."""
    from ..runtime.findings import matmul_time  # here: only a log given with a profile pays for the runtime analysis

    profile = next((p for p in runtime.profiles if p.compiled), runtime.profiles[0] if runtime.profiles else None)
    if profile is None:
        return ""
    us, share, ops = matmul_time(profile)
    if not us:
        return ""
    return (f"in {profile.source.rsplit('/', 1)[-1]} the matmuls' kernels took {share:.0%} of the GPU time "
            f"({format_us(us)}, {', '.join(ops)}); ")

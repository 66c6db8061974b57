"""Findings of torch.export and AOTInductor: draft export's issues, a draft_export that stopped the trace, dims a
torch.export was given that the code contradicts; what an AOTInductor package accepts, where its build time went;
and the dynamic values the code specialized to constants (but those a torch.export dim told already)."""

from __future__ import annotations

from collections.abc import Mapping

from ...model.ids import NO_COMPILE_ID, compilation_key
from ...wording import count, format_seconds
from ..aoti import BUILD_EVENT, CHECK_ENV, HEADER_EVENT, Aoti, AotiPackage
from ..compile_time import CompileTimes
from ..dynamic_shapes import FLOAT_SYMBOL, Specialization, number_key, numbers_text, value_name
from ..export import ExportReport
from ..user_locations import user_source_name
from . import ERROR, INFO, WARNING, Finding, shown_names
from ..compiled_frames import as_the_users_model


def aoti_inputs(package: AotiPackage) -> Finding:
    """What an AOTInductor package accepts, and that it checks it only where asked: an input of another shape runs
    the kernels compiled for the shapes it was given, with no error. A warning where every size is fixed (the export
    had no Dim): the package serves one shape per input. Its detail says first what it holds (AotiContents)."""
    where = f" of {package.call.short}" if package.call else ""
    one_shape = package.one_shape
    parts = []
    if one_shape:
        parts.append("only these sizes: the export was given no Dim (torch.export.export's dynamic_shapes), so every "
                     "size is that of its example inputs; a size that varies, a batch say, needs one")
    if package.checks_need_env:
        parts.append(f"it checks its inputs only when {CHECK_ENV}=1 is set where it runs: without it an input of "
                     "another shape, dtype or device runs unchecked, with no error (its kernels use the compiled "
                     "sizes: wrong results); set it wherever the package is tested")
    said = "; ".join(parts)
    # (what it holds first: the package this is about)
    detail = ". ".join(d for d in (f"It holds {package.contents.text}" if package.contents else "",
                                   said[:1].upper() + said[1:]) if d)
    return Finding(WARNING if one_shape and package.checks_need_env else INFO, "dynamic_shapes",
                   f"the AOTInductor package{where} accepts {package.accepts or 'no input'}", detail)


def header_precompile(found: Aoti, ct: CompileTimes) -> str:
    """Of the kernel compile phase, the compiler runs that prepare AOTInductor's runtime headers (aoti_precompile_header):
    the part of the C++ compile that is not the package's own wrapper and kernels. "" where the log times none."""
    header = found.header if found else None
    phase = next((p for p in ct.phases if p.phase == "kernel_compile"), None)
    if header is None or not header.compiles or phase is None:
        return ""
    return (f"; of the {phase.label}'s {format_seconds(phase.seconds)}, {format_seconds(header.compile_s)} "
            f"({count(header.compiles, 'compiler run')}) prepared AOTInductor's runtime headers "
            f"({HEADER_EVENT}, {format_seconds(header.seconds)} in all), not the package's own code")


def package_build(found: Aoti) -> str:
    """Where the package build's time went: the compiler runs torch times in it, and the rest, which it times under no
    step of its own (the AOTInductor package build phase). "" where the log times no build, or nothing untimed."""
    build = found.build if found else None
    if build is None or build.untimed_s < 0.5 * build.seconds:
        return ""  # (the CPU twin's: 0.17 s of 16.3 s outside its compiler runs; nothing to explain)
    return (f"; building the package ({BUILD_EVENT}) took {format_seconds(build.seconds)}: "
            f"{count(build.compiles, 'compiler run')} {format_seconds(build.compile_s)}, the other "
            f"{format_seconds(build.untimed_s)} between them in steps torch times under no event of its own")


def specialized_name(spec: Specialization, wrapped: bool = False, model_local: str | None = None) -> str:
    """"x.size()[0] (s77)": what a symbol torch specialized is, as the program names it (a value Dynamo passed on past
    a graph break in words; where its compile's frame is a wrapper's, wrapped, the model (model_local: the wrapper's
    local holding it) and a keyword passed on by the user's names, not the wrapper's locals: as_the_users_model), with the symbol the report's other sections and torch's records call it by."""
    source = spec.sources[0] if spec.sources else None
    if source is None:
        return spec.symbol
    named = as_the_users_model(spec.source_texts.get(source) or user_source_name(source), wrapped, model_local,
                               keep_self=True)
    return f"{named} ({spec.symbol})"


def specializations(specs: list[Specialization], export: ExportReport,
                     dynamic_compiles: list[str] | None = None,
                     wrapped: Mapping[str, str | None] | None = None) -> Finding | None:
    """Counted once per compilation (a restarted attempt logs its specializations again), each symbol's values once:
    a float a compiled optimizer step specialized at every learning rate is one symbol with many values. A size
    torch.export was given as dynamic and the code fixed is told by export_dims (a dim the code contradicts): not
    again here. Floats of compiles with dynamic=True's config (dynamic_compiles) are said to be its: it made them
    symbols, which a static compile never does until one changes."""
    told = {(c.symbol, c.value) for c in export.dim_conflicts if c.value is not None}
    specs = [s for s in specs if not (s.compile_id == NO_COMPILE_ID and (s.symbol, s.value) in told)]
    if not specs:
        return None
    # (by the value, not the form shown, which rounds: 0.001 and 0.0009999999753 are two values)
    distinct: dict[tuple[str, str, float | int | str], str] = {}  # (each compilation's value, as torch first wrote it)
    for s in specs:
        distinct.setdefault((s.compile_id.partition("_")[0].rstrip("]"), s.symbol, number_key(s.value)), str(s.value))
    kinds = {s.kind for s in specs}
    kind = kinds.pop() if len(kinds) == 1 else "value"
    firsts: dict[str, dict[float | int | str, str]] = {}
    for (_, symbol, value_key), value in distinct.items():
        firsts.setdefault(symbol, {}).setdefault(value_key, value)
    values: dict[str, list[str]] = {}
    for symbol, first in firsts.items():  # (each symbol's values shown together: each apart from the others)
        shown = numbers_text(first.values())
        values[symbol] = [shown[value] for value in first.values()]
    # (each symbol by its first specialization; wrapped: the compilations whose frame is not the user's code, each
    # with the wrapper's local that is the model, if one is)
    wrapped = wrapped or {}
    named = {s.symbol: specialized_name(s, (key := compilation_key(s.compile_id)) in wrapped, wrapped.get(key))
             for s in reversed(specs)}
    detail = "; ".join(f"{named[symbol]} = {', '.join(vals[:3])}{f' and {len(vals) - 3} more' if len(vals) > 3 else ''}"
                       for symbol, vals in list(values.items())[:3])
    if len(values) > 3:  # (the title counts them all)
        detail += f"; and {len(values) - 3} more"
    compiles = {cid for cid, _, _ in distinct}
    where = "in torch.export" if export.only else count(len(compiles), 'compilation')
    made = set(dynamic_compiles or ())
    floats = [s for s in specs if s.compile_id in made and FLOAT_SYMBOL.fullmatch(s.symbol)]
    if floats:
        symbols = list(dict.fromkeys(s.symbol for s in floats))
        names = list(dict.fromkeys(n for s in floats for src in s.sources[:1] if (n := value_name(src))))
        detail += (f"; {shown_names(symbols)} {'is a float' if len(symbols) == 1 else 'are floats'}"
                   + (f" ({', '.join(names)})" if names else "")
                   + " that dynamic=True made dynamic (its compiles' config has assume_static_by_default off), and "
                   "the code needed as a number: torch._dynamo.config.specialize_float = True keeps floats static")
    return Finding(INFO, "dynamic_shapes", f"{count(len(values), 'dynamic ' + kind)} specialized to a constant "
                                           f"({where})", detail)


def export_issues(export: ExportReport) -> list[Finding]:
    """Draft export's issues: its program holds only under what export assumed. The export page has each one's stacks."""
    if not export.detected or not export.issues:  # (torch.compile logs guard_added too, under TORCH_DTRACE)
        return []
    first = export.issues[0]
    where = f" at {first.where}" if first.where else ""
    more = f" (and {count(len(export.issues) - 1, 'more issue')})" if len(export.issues) > 1 else ""
    # Under TORCH_DTRACE torch.export.export logs these too, and raises on them: not draft export's report then.
    exporter = "torch.export" if any(i.exporter == "export" for i in export.issues) else "draft export"
    return [Finding(ERROR, "export", f"{exporter} found {count(len(export.issues), 'issue')}: it could not soundly "
                    "produce a graph", f"{first.failure_type}{where}: {first.headline}{more}")]


def draft_export_stopped(export: ExportReport) -> list[Finding]:
    """A log draft_export's own trace handler wrote: torch 2.13's draft_export removes the process's trace handler
    and never puts it back, so what the program did after it (another compile, another export) is in no log. Such a
    log names no torch version (torch 2.14's export_draft too): what 2.13 does is said as 2.13's, not this log's."""
    if not export.draft_log:
        return []
    return [Finding(WARNING, "export", "the trace likely stops at this draft_export: nothing the program did after it "
                    "was logged",
                    "this log holds only what draft_export's own trace handler keeps (no torch_version, no "
                    "compile events); while it runs, draft_export removes the process's trace handler. torch 2.13's "
                    "does not put it back (CaptureStructuredTrace.__exit__); which torch wrote this log, the log does "
                    "not say. Where the handler was not put back, a later torch.compile or export of the same process "
                    "is in no log: call draft_export last, or in a process of its own")]


def export_dims(export: ExportReport) -> list[Finding]:
    """Dims a non-strict torch.export was given that the model's code contradicts, one finding per export call: a
    narrowed range fails ("Constraints violated"); a size fixed to one value fails a named Dim or Dim.DYNAMIC."""
    calls: dict[tuple | None, list] = {}
    for conflict in export.dim_conflicts:
        calls.setdefault(conflict.export_call.key if conflict.export_call else None, []).append(conflict)
    out = []
    for conflicts in calls.values():
        call = conflicts[0].export_call
        narrowed = any(c.guard is not None for c in conflicts)
        consequence = ("torch.export raises \"Constraints violated\"" if narrowed else
                       "a named Dim or Dim.DYNAMIC fails (\"specialized it to be a constant\"), Dim.AUTO does not")
        out.append(Finding(ERROR if narrowed else WARNING, "dynamic_shapes",
                           f"torch.export{f' at {call.short}' if call else ''}: the model's code contradicts "
                           f"{count(len(conflicts), 'dynamic dim')} it was given",
                           "; ".join(c.text for c in conflicts) + f" ({consequence})"))
    return out

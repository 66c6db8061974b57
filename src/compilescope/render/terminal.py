"""The terminal summary: insights as rich renderables, printed once through the Console given.

Fits 100 columns; every mark that carries meaning is text (ERROR, WARN, →), so it
reads the same without colour.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.containers import Lines
from rich.measure import Measurement
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Column, Table
from rich.text import Text
from rich.tree import Tree

from ..analyses.dynamic_shapes import GuardPlace, PlacementPart
from ..analyses.graph_breaks.resume_names import function_label
from ..analyses.insights import SECTIONS, Insights
from ..analyses.recompiles import BACKWARD_REASONS_HINT, CHANGE_LABELS
from ..analyses.torch_warnings import TorchWarning
from ..analyses.user_locations import UserLocation
from .charts import phase_bars
from .notices import SEVERITY_LABELS
from ..invisible import one_line, safe_terminal_text
from ..wording import count, format_seconds
from .terminal_text import MAX_WIDTH, CopyableText, TerminalText, Uncropped, shorten_middle

if TYPE_CHECKING:  # (one log's summary reads none of them: the ranks' and the saved form's analyses stay unimported)
    from ..analyses.divergence import MultiRankAnalysis, MultiRankResults, RankInDetail
    from ..analyses.rank_summary import RankSummary
    from ..analyses.results import Results

SEVERITY = {"error": (SEVERITY_LABELS["error"], "bold red"), "warning": (SEVERITY_LABELS["warning"], "yellow"),
            "info": (SEVERITY_LABELS["info"], "cyan")}
BAR_WIDTH = 24
MAX_BREAKS = 10
MAX_ROWS = 10


NO_BREAK = "\u00a0"
_HELD = "\ue000"  # a private-use character: one cell wide and no whitespace, so rich does not break a line there


class UnbrokenText(TerminalText):
    """Text that wraps only at plain spaces: a no-break space keeps "38 ms" or "2 compile ids" on one line (rich
    itself breaks at any Unicode space, U+00A0 too). It prints as a plain space, so copied text has no U+00A0."""

    def _held(self) -> Text:
        held = self.copy()
        held.plain = self.plain.replace(NO_BREAK, _HELD)
        return held

    def wrap(self, console: Console, width: int, **kwargs) -> Lines:
        lines = Text.wrap(self._held(), console, width, **kwargs)
        for line in lines:
            line.plain = line.plain.replace(_HELD, " ")
        return lines

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Text.__rich_measure__(self._held(), console, options)


def unbroken(text: str) -> str:
    """text whose spaces do not break a line (in an UnbrokenText): a value and its unit, a count and its noun."""
    return text.replace(" ", NO_BREAK)


def _seconds(seconds: float) -> Text:
    """`38 ms`, never broken between number and unit."""
    return UnbrokenText(unbroken(format_seconds(seconds)))


def _where(loc: UserLocation | None, in_stack: bool = False) -> str:
    """`file.py:23 in f`, its function named as the pages name it (function_label: a resume function as the rest of
    the function it resumes); a frame of a stack (in_stack) keeps torch's name, as a traceback reads."""
    if loc is None:
        return "(location not in log)"
    if not loc.function:
        return loc.short
    return f"{loc.short} in {loc.function if in_stack else function_label(loc.function)}"


def _placed(placement: list[PlacementPart]) -> str:
    """Where an event is, its parts one after the other ("" for none); a location whose function the words name
    already, by its line alone."""
    return "".join(p.text + ((p.location.short if p.function_said else _where(p.location)) if p.location else "")
                   for p in placement)


def _more(total: int, word: str, many: str | None = None) -> list[Text]:
    """The line under a table cut at MAX_ROWS rows: "… 3 more kernels" (none when nothing was cut)."""
    return [TerminalText(f"… {count(total - MAX_ROWS, word, many)}")] if total > MAX_ROWS else []


def _heading(title: str) -> Text:
    return UnbrokenText(f"\n{title}", style="bold underline")


def _table(*columns: str, **kwargs) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, **kwargs)
    for col in columns:
        table.add_column(col, overflow="fold")  # never "…": a cell may hold what must be copied
    return table


def _names_column(column: Column, names: list[str]) -> None:
    """A column of compile ids keeps each on one line (one word); where a name is words (the AOTInductor package's,
    Aoti.compile_name), it wraps onto two lines, the column as wide as half of it or its longest word. That width is
    the column's own (width), not a min and max: rich shrinks a table too wide only by its columns without one, and
    evenly where two are alike, then widens a column back to its min, and the row ran past the terminal, which cut
    the last cell ("AOTInductor pack" at 80 columns)."""
    words = [word for name in names for word in name.split()]
    column.no_wrap = all(len(name.split()) <= 1 for name in names)  # (an empty name is no word, and nothing to wrap)
    if not column.no_wrap:
        column.width = max(max(map(len, words)), *((len(n) + 1) // 2 for n in names))


def _findings(ins: Insights) -> RenderableType:
    if not ins.findings:
        return TerminalText("Nothing to fix: no errors, graph breaks or recompiles in this log.")
    table = Table(box=None, show_header=False, pad_edge=False, expand=False)
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)
    for f in ins.findings:
        label, style = SEVERITY[f.severity]
        title = TerminalText(f.title, style="bold")
        body = Group(title, CopyableText(f.detail)) if f.detail else title  # (the detail may hold code to copy)
        table.add_row(TerminalText(label, style=style), body)
    return Panel(table, title="Fix first", title_align="left", box=box.SQUARE)


def _testing_only(ins: Insights) -> list[RenderableType]:
    settings = ins.environment.testing_only
    if not settings:
        return []
    out: list[RenderableType] = [_heading(f"Settings for torch's own tests ({len(settings)})")]
    for setting in settings:
        tree = Tree(TerminalText(setting.assignment, style="bold red"))
        if setting.compile_ids:
            tree.add(CopyableText(f"{setting.with_it}: {', '.join(setting.compile_ids)}"))
        out.append(Uncropped(tree))
    return out


def _crashes(ins: Insights) -> list[RenderableType]:
    if not ins.crashes:
        return []
    out: list[RenderableType] = [_heading("Crash")]
    for crash in ins.crashes.crashes:
        tree = Tree(TerminalText(f"{crash.error}" + (f"  ·  {crash.during}" if crash.during else ""), style="bold red"))
        for f in crash.frames[:MAX_ROWS]:
            tree.add(CopyableText(f"{_where(f, in_stack=True)}", style="bold" if f is crash.user_frame else "default"))
        if len(crash.frames) > MAX_ROWS:
            tree.add(CopyableText(f"… {len(crash.frames) - MAX_ROWS} more frames in the report / --json"))
        out.append(Uncropped(tree))
    return out


def _errors(ins: Insights) -> list[RenderableType]:
    if not ins.errors:
        return []
    out: list[RenderableType] = [_heading(f"Errors ({len(ins.errors.errors)})")]
    for err in ins.errors.errors:
        tree = Tree(TerminalText(f"{err.compile_id}  {err.stage_label}  ·  {err.exception}", style="bold red"))
        tree.add(CopyableText(err.message))
        if err.explanation:
            tree.add(CopyableText(f"why: {err.explanation}"))
        for hint in err.advice_hints:
            tree.add(CopyableText(f"hint: {hint}", style="green"))
        for said in err.torch_printed:
            tree.add(CopyableText(f"torch also printed: {said}"))
        if err.location:
            code = f"  ·  {err.location.code}" if err.location.code else ""
            tree.add(CopyableText(f"{err.location_kind}: {_where(err.location)}{code}"))
        for line in err.compiler_errors[:3]:
            tree.add(CopyableText(line, style="red"))
        steps = tree.add(CopyableText("next steps", style="bold"))
        for step in err.next_steps:
            steps.add(CopyableText(step))
        out.append(Uncropped(tree))
    return out


def _recompiles(ins: Insights) -> list[RenderableType]:
    if not ins.recompiles:
        return []
    out: list[RenderableType] = [_heading(f"Recompiles ({ins.recompiles.with_backward})")]
    for frame in ins.recompiles.frames:
        flag = "  [RECOMPILE LIMIT HIT]" if frame.hit_limit else ""
        called = f", called at {frame.called_at}" if frame.called_from else ""
        where = f"  ({frame.short}{called})" if frame.short else ""
        tree = Tree(TerminalText(f"{frame.function_label}{where}{flag}", style="bold red" if frame.hit_limit else "bold"))
        tree.add(CopyableText(" → ".join(frame.compilations)))
        if frame.restarts:
            tree.add(CopyableText(frame.restarts))
        if frame.expected_split:
            tree.add(CopyableText(f"recompiles: {frame.expected_split}"))
        for step in frame.steps:
            guard = step.guard
            if guard is None:
                tree.add(CopyableText(f"{step.compilation}: (no reason logged)"))
                continue
            label = f"{step.compilation}: {CHANGE_LABELS[guard.change]} changed"
            if step.failed:
                label += " (this compile failed)"
            node = tree.add(CopyableText(label))
            if step.when_text:
                node.add(CopyableText(step.when_text, style="dim"))
            node.add(CopyableText(f"failed guard of {guard.compilation}: {guard.shown}"))
            if guard.location:
                code = f"  ·  {guard.location.code}" if guard.location.code else ""
                node.add(CopyableText(f"{guard.location_label} {_where(guard.location)}{code}"))
            if guard.cache_text:
                node.add(CopyableText(guard.cache_text))
            if step.specialized_placement:
                where = step.specialized.location
                code = f"  ·  {where.code}" if where and where.code else ""
                node.add(CopyableText(f"{_placed(step.specialized_placement)}{code}"))
            if step.dynamic_text:
                node.add(CopyableText(step.dynamic_text))
            for change in step.also_changed_listed.items:
                node.add(CopyableText(f"also changed since {guard.compilation}: {change.text}"))
            if step.also_changed_more_text:
                node.add(CopyableText(step.also_changed_more_text, style="dim"))
            if step.expected_text:
                node.add(CopyableText(step.expected_text, style="dim"))
        for advice in frame.advice:
            tree.add(CopyableText(f"fix: {advice}", style="green"))
        out.append(Uncropped(tree))
    if ins.recompiles.backward_recaptures:
        graphs = ins.recompiles.backward_graphs
        tree = Tree(TerminalText(f"compiled autograd: {count(len(graphs), 'backward graph')} captured and compiled", style="bold"))
        for i, graph in enumerate(graphs):
            tree.add(CopyableText(f"{graph.label}: {graph.reason or ('the first' if i == 0 else '(no reason logged)')}"))
        if not ins.recompiles.backward_reasons_logged:
            tree.add(CopyableText(f"why: torch logs it with {BACKWARD_REASONS_HINT}", style="green"))
        out.append(Uncropped(tree))
    return out


def _numpy(ins: Insights) -> list[RenderableType]:
    """The lines whose NumPy code is in a graph, each with the calls Dynamo traced; the note on np.random's."""
    numpy = ins.numpy
    if not numpy:
        return []
    out: list[RenderableType] = [_heading(f"NumPy in graphs ({count(len(numpy.lines), 'line')})")]
    for line in numpy.lines:
        head = TerminalText(_where(line.location), style="bold")
        head.append(f"  ·  {', '.join(line.compile_ids)}")
        body = CopyableText(f"calls: {', '.join(line.calls)}")
        if line.location.code:
            body.append(f"\ncode: {line.location.code}")
        if line.random:
            body.append(f"\nnp.random: {', '.join(line.random)}, from torch's generator", style="yellow")
        out.append(Group(head, Uncropped(Padding(body, (0, 0, 0, 3)))))
    if numpy.random_note:
        out.append(CopyableText(f"note: {numpy.random_note}", style="green"))
    return out


def _numerics(ins: Insights) -> list[RenderableType]:
    """The lines whose compiled results differ from eager's, random ones first, each with its ops; then what to do."""
    num = ins.numerics
    ops, unread = ins.op_mutations.ops, ins.op_mutations.unread
    if not num and not ops and not unread:
        return []
    counted = [count(len(ops), "custom op")] if ops else []
    counted += [f"{count(len(ins.op_mutations.unread_ops), 'custom op')} not checked"] if unread else []
    counted += [count(len(num.random) + len(num.precision), "line")] if num else []
    out: list[RenderableType] = [_heading(f"Results that differ from eager ({', '.join(counted)})")]
    for op in ops:
        head = TerminalText(op.op, style="bold")
        head.append(f"  ·  {op.listed_compile_ids}  ·  writes into {', '.join(op.arguments)}, "
                    f"{op.declaration} ({op.defined_at.short})")
        body = CopyableText("\n".join(f"writes: {_where(w)}{f': {w.code}' if w.code else ''}" for w in op.writes))
        for call in op.listed_calls:
            body.append(f"\ncalled: {call.compile_id} {_where(call.location)}"
                        f"{f': {call.location.code}' if call.location.code else ''}"
                        f"{' (left out of the compiled code)' if call.dropped else ''}"
                        f"{' (torch found the store here: tensors_to_clone)' if call.store_found else ''}"
                        f"{f' ({call.unplaced_note})' if call.unplaced_note else ''}")
            for read in call.moved_reads:
                body.append(f"\nread after the call: {_where(read.location)}"
                            f"{f': {read.location.code}' if read.location.code else ''} (in {read.kernel})")
            if call.more_moved_reads:
                body.append(f"\nread after the call: {count(call.more_moved_reads, 'more read')}")
        if op.more_calls:
            body.append(f"\ncalled: {count(op.more_calls, 'more call')} (--json lists them all)")
        body.append(f"\n{op.why}")
        out.append(Group(head, Uncropped(Padding(body, (0, 0, 0, 3))), CopyableText(f"fix: {op.advice}", style="green")))
    out.extend(TerminalText(u.not_checked, style="yellow") for u in unread)
    for kind, lines in (("random, Inductor's generator", num.random), ("low precision, fused", num.precision)):
        for line in lines:
            head = TerminalText(_where(line.location), style="bold")
            head.append(f"  ·  {', '.join(line.compile_ids)}  ·  {kind}{f' ({line.dtype})' if line.dtype else ''}")
            body = CopyableText(f"ops: {', '.join(line.ops)}")
            if line.location.code:
                body.append(f"\ncode: {line.location.code}")
            out.append(Group(head, Uncropped(Padding(body, (0, 0, 0, 3)))))
    for note in (num.random_note, num.precision_note):
        if note:
            out.append(CopyableText(f"fix: {note}", style="green"))
    return out


def _graph_breaks(ins: Insights) -> list[RenderableType]:
    """One block per break: where, then its reason, code and hint at full width (a table column would cut a hint
    that must be copied, like `torch._dynamo.config.capture_scalar_outputs = True`, at 80 columns)."""
    gb = ins.graph_breaks
    if not gb:
        return []
    # (calls of disabled functions: as check --max-graph-breaks leaves them out, the heading says so)
    asked = (f"; {'all' if gb.disabled == len(gb.breaks) else gb.disabled} at torch.compiler.disable'd calls, on "
             "purpose: check does not count them" if gb.disabled else "")
    out: list[RenderableType] = [_heading(f"Graph breaks ({len(gb.breaks)} distinct, {gb.total} in total{asked})")]
    if gb.split:
        out.append(TerminalText(f"{gb.split.text}."))
    for i, brk in enumerate(gb.breaks[:MAX_BREAKS], 1):
        head = TerminalText(f"{i}. ", style="bold")
        head.append(_where(brk.shown_at), style="bold")
        if brk.torch_line:
            head.append(f", {brk.torch_line}")
        head.append(f"  ·  {count(brk.count, 'time')}  ·  {', '.join(brk.compile_ids)}")
        body = CopyableText(brk.reason, style="bold")
        if brk.shown_at and brk.shown_at.code:
            body.append(f"\ncode: {brk.shown_at.code}", style="default")
        if brk.note:
            body.append(f"\nnote: {brk.note}", style="green")
        else:
            for hint in brk.user_hints:
                body.append(f"\nhint: {hint}", style="green")
        if brk.transform_note:
            body.append(f"\nnote: {brk.transform_note}", style="green")
        if brk.amp_note:
            body.append(f"\nnote: {brk.amp_note}", style="green")
        if brk.subclass_advice:
            body.append(f"\nto do: {brk.subclass_advice}", style="green")
        if brk.skipped_text:  # all of the function ran eagerly, not only the lines under the break
            body.append(f"\n{brk.skipped_text}", style="yellow")
        elif brk.uncompiled_text:  # all of the higher-order op's call ran eagerly
            body.append(f"\n{brk.uncompiled_text}", style="yellow")
        elif brk.eager_lines:
            body.append("\nran eagerly: " + ", ".join(e.short for e in brk.eager_lines), style="yellow")
        if brk.callees_text:
            body.append(f"\ncompiled on its own: {brk.callees_text}", style="default")
        out.append(Group(head, Uncropped(Padding(body, (0, 0, 0, 3)))))
    if len(gb.breaks) > MAX_BREAKS:
        out.append(TerminalText(f"… {len(gb.breaks) - MAX_BREAKS} more in the report / --json"))
    return out


def _compile_time(ins: Insights) -> list[RenderableType]:
    ct = ins.compile_time
    if not ct:
        return []
    # The total alone, as the report's heading: the rows below time a restart's attempts ([1/0], [1/0_1]) as one,
    # so a count of them would not be the header's count of compile ids.
    out: list[RenderableType] = [_heading(f"{ct.heading} ({unbroken(format_seconds(ct.total_s))})")]
    phases = _table("phase", "time", "share", "")
    for p in phase_bars(ct):
        phases.add_row(p.label, _seconds(p.seconds), f"{p.share:.0%}", "█" * max(1, round(p.bar_pct * BAR_WIDTH / 100)))
    out.append(phases)
    slowest = _table(ct.first_column if ct.export_only else "slowest", "function", "total", "mostly")
    # A compile id or a call's file:line is one word: the function wraps instead (the AOTInductor package's name is
    # words, which wrap)
    _names_column(slowest.columns[0], [ins.aoti.compile_name(c.label) for c in ct.compiles[:MAX_ROWS]])
    for c in ct.compiles[:MAX_ROWS]:
        top = c.top_phase
        mostly = f"{c.phase_label(top, ct.labels)} ({unbroken(format_seconds(c.phases[top]))})" if top else ""
        if c.unfinished_text:  # (its total is only the time up to the log's end)
            mostly += f"{': ' if mostly else ''}{c.unfinished_text}"
        slowest.add_row(TerminalText(ins.aoti.compile_name(c.label)), TerminalText(c.function_text),
                        UnbrokenText(unbroken(format_seconds(c.total_s) + (" so far" if c.unfinished else ""))),
                        UnbrokenText(mostly) if mostly else "")
    out.append(Padding(slowest, (1, 0, 0, 0)))
    out.extend(_more(len(ct.compiles), "more compile id"))
    backward = [c for c in ct.compiles[:MAX_ROWS] if c.backward_s is not None]
    if backward:
        out.append(TerminalText("of which compiling the backward (when it first ran): " + ", ".join(
            f"{ins.aoti.compile_name(c.label)} {unbroken(format_seconds(c.backward_s))}" for c in backward if c.backward_s is not None),
            style="dim"))
    return out


def _checkpointing(ins: Insights) -> list[RenderableType]:
    found = ins.checkpointing.compiles
    if not found:
        return []
    out: list[RenderableType] = [
        _heading("Activation checkpointing"),
        TerminalText("torch.compile captured these torch.utils.checkpoint calls in the graph; the backward recomputes "
                     "the ops of the lines below instead of keeping their activations.", style="dim")]
    table = _table("compile id", "checkpoint calls", "recomputed in the backward")
    for c in found[:MAX_ROWS]:
        calls = ", ".join(f"{call.count} at {call.short}" for call in c.calls)
        if not c.has_backward:
            recomputed = "no backward graph logged"
        elif not c.recomputed:
            recomputed = "nothing (every activation saved)"
        else:
            recomputed = (f"{count(c.n_recomputed, 'op')} of {count(c.regions, 'region')}: "
                          + ", ".join(f"{r.short} ×{r.count}" for r in c.recomputed))
        table.add_row(TerminalText(c.compile_id), TerminalText(calls), TerminalText(recomputed))
    out.append(table)
    out.extend(_more(len(found), "more compile id"))
    return out


def _caches(ins: Insights) -> list[RenderableType]:
    ca = ins.caches
    if not ca:
        return []
    out: list[RenderableType] = [_heading(f"Caches ({ca.overall})"),
                                 TerminalText(f"{ca.overall}: {ca.overall_text}", style="dim")]
    table = _table("compile id", "FX graph cache", "AOTAutograd cache", "bypass reason")
    for c in ca.compiles[:MAX_ROWS]:
        table.add_row(TerminalText(c.label), TerminalText(c.outcome("fx_graph_cache") or "-"),
                      TerminalText(c.outcome("aotautograd_cache") or "-"),
                      TerminalText(", ".join(f"({n})" for n in c.reason_numbers)))
    out.append(table)
    for reason, n in ca.bypass_reasons:
        if reason == "(no reason logged)":
            continue
        out.append(TerminalText(f"({ca.reason_number(reason)}) {n} lookup{'s' if n != 1 else ''} bypassed "
                                f"({', '.join(ca.reason_compiles(reason))}): {reason}"))
        if note := ca.bypass_note(reason):
            out.append(CopyableText(f"    note: {note}", style="green"))
    if ca.time_saved_ms:
        out.append(TerminalText(f"time saved by cache hits: {format_seconds(ca.time_saved_ms / 1000)}"))
    if ca.graphs_missing:
        out.append(TerminalText(f"note: {', '.join(ca.served_labels)} came from the cache, so {ca.what_is_missing} "
                                "(compilescope run --fresh-cache, or TORCHINDUCTOR_CACHE_DIR=$(mktemp -d), to see them)."))
    return out


def _autotuning(ins: Insights) -> list[RenderableType]:
    at = ins.autotuning
    if not at:
        return []
    out: list[RenderableType] = [_heading(f"Autotuning ({format_seconds(at.total_s)})")]
    if at.searches:
        searches = _table("compile id", "max-autotune search", "took", expand=True)
        _names_column(searches.columns[0], [ins.aoti.compile_name(s.compile_id) for s in at.searches[:MAX_ROWS]])
        searches.columns[2].no_wrap = True
        searches.columns[1].ratio = 1
        for s in at.searches[:MAX_ROWS]:
            what = TerminalText(f"{_where(s.site)}: {s.site.code or ''}\n" if s.site else "")
            what.append(s.op).append(f" {s.shape}" if s.shape else "").append(f"  {s.dtypes}" if s.dtypes else "", style="dim")
            what.append("\nbest " + (s.best_kernel or "?")
                        + (f" ({s.best_time_text})" if s.best_time_text else "")
                        + (f" of {count(s.choices, 'candidate')}" if s.choices is not None else "")
                        + (f" ({s.candidate_kinds})" if s.candidate_kinds else ""))
            for f in s.failed[:3]:
                what.append(f"\nfailed: {f.exception}: {f.why}", style="dim")
            took = "\n".join([format_seconds(s.seconds), *s.compile_notes])
            searches.add_row(TerminalText(ins.aoti.compile_name(s.compile_id)), what, took)
        out.append(searches)
        out.extend(_more(len(at.searches), "more search", "more searches"))
    if at.kernels:
        alike = at.kernels_tuned_alike
        kernels = _table("compile id", f"kernel: {alike}" if alike else "kernel benchmarked, and how",
                         "when", "took", expand=True)
        _names_column(kernels.columns[0], [ins.aoti.compile_name(k.compile_id) for k in at.kernels[:MAX_ROWS]])
        kernels.columns[2].no_wrap = kernels.columns[3].no_wrap = True
        kernels.columns[1].ratio = 1
        for k in at.kernels[:MAX_ROWS]:
            kernel = TerminalText(k.kernel or "a candidate fusion").append(" (backward)" if k.backward else "")
            if not alike:
                kernel.append(f"\n{k.how}", style="dim")
            kernels.add_row(TerminalText(ins.aoti.compile_name(k.compile_id)), kernel,
                            "compiling" if k.during_compile else "first run", format_seconds(k.seconds))
        out.append(Padding(kernels, (1 if at.searches else 0, 0, 0, 0)))
        out.extend(_more(len(at.kernels), "more kernel"))
    if at.fusion_benchmark_s:
        out.append(TerminalText(f"fusions benchmarked both ways, to decide whether to fuse: {format_seconds(at.fusion_benchmark_s)}"))
    return out


def _user_kernels(ins: Insights) -> list[RenderableType]:
    uk = ins.user_kernels
    functionalized = ins.op_mutations.functionalized
    if not uk and not functionalized:
        return []
    names = f" ({', '.join(uk.names)})" if uk else ""
    out: list[RenderableType] = [_heading(f"Your Triton kernels{names}")]
    # (a triton_op's undeclared write AOTAutograd found itself: Fix first's INFO says why and what to declare)
    out.extend(TerminalText(op.title) for op in functionalized)
    if not uk:
        return out
    table = _table("compile id", "your kernel", "scalar arguments", "Triton compile", expand=True)
    table.columns[0].no_wrap = True
    table.columns[1].ratio = 2
    table.columns[2].ratio = table.columns[3].ratio = 1
    for k in uk.kernels[:MAX_ROWS]:
        kernel = TerminalText(k.name)
        if k.defined_at:
            kernel.append(f"\ndefined at {k.defined_text}", style="dim")
        if k.launched_at:
            kernel.append(f"\nlaunched at {', '.join(u.short for u in k.launched_at)}", style="dim")
        table.add_row(TerminalText(k.compile_id), kernel, TerminalText(k.arguments_text or "-"),
                      TerminalText(", ".join(filter(None, [format_seconds(k.compile_s) if k.compile_s is not None else "",
                                                           k.tuning_text])) or "-"))
    out.append(table)
    out.extend(_more(len(uk.kernels), "more kernel"))
    out.extend(TerminalText(note) for note in uk.notes)
    return out


def _cudagraphs(ins: Insights) -> list[RenderableType]:
    cg = ins.cudagraphs
    if not cg:
        return []
    out: list[RenderableType] = [_heading(f"CUDA graphs ({count(len(cg.compiles), 'compile id')})")]
    table = _table("compile id", "function", "recorded", "skipped because", expand=True)
    table.columns[0].no_wrap = table.columns[2].no_wrap = True
    table.columns[3].ratio = 1
    if any(c.set_up_per_shape for c in cg.compiles[:MAX_ROWS]):  # "never (set up twice, ...)" wraps, under "never"
        table.columns[2].no_wrap = False
        table.columns[2].max_width = 22
    for c in cg.compiles[:MAX_ROWS]:
        recorded = ", ".join(format_seconds(ms / 1000) for ms in c.recordings_ms[:4]) + (" …" if len(c.recordings_ms) > 4 else "")
        never = c.never_recorded
        table.add_row(TerminalText(c.compile_id), TerminalText(function_label(c.name)),
                      (f"{len(c.recordings_ms)}×: {recorded}" if c.recordings_ms else "never" if never or c.ran_once else "-")
                      + (f" ({c.set_up_per_shape})" if c.set_up_per_shape else ""),
                      TerminalText(((f"at its first run: {c.skip_summary}" if c.skipped_at_first_run else c.skip_summary)
                                    + (f" at {_where(c.skip_location)}" if c.skip_location else "")
                                    + (f"  ·  {c.skip_location.code}" if c.skip_location and c.skip_location.code else "")
                                    if c.skip_reason else "")
                                   or ((f"not in the log; torch warned: {cg.never_recorded_warning}"
                                        if cg.never_recorded_warning else "not in the log (see the program's stderr)")
                                       if never else RAN_ONCE if c.ran_once else "")))
    out.append(table)
    out.extend(_more(len(cg.compiles), "more compile id"))
    return out


RAN_ONCE = "not skipped: it ran once, a warm-up (a graph is recorded at its second call)"


def _raised(ins: Insights) -> list[RenderableType]:
    """An error torch raised and the program caught is no warning torch printed: said apart, as what it is."""
    tw = ins.warnings
    if not tw.raised:
        return []
    return [_heading(f"Errors torch raised, caught by the program ({tw.times_raised})"),
            TerminalText("torch logs nothing of them: recorded by compilescope", style="dim"),
            _warning_table(tw.raised, "error, and where"), *_more(len(tw.raised), "more error")]


def _torch_warnings(ins: Insights) -> list[RenderableType]:
    tw = ins.warnings
    if not tw:
        return []
    out: list[RenderableType] = []
    if tw.printed_warnings:
        out.append(_heading(f"Warnings torch printed ({tw.printed})"))
        if tw.stderr:
            out.append(TerminalText(f"read from the run's saved stderr beside the log: {tw.stderr_name}", style="dim"))
        out.append(_warning_table(tw.printed_warnings, "warning, and where"))
        out.extend(_more(len(tw.printed_warnings), "more warning"))
    if tw.unreadable:
        out.append(TerminalText(f"{count(tw.unreadable, 'recorded warning')} could not be read"))
    return out


def _warning_table(warnings: list[TorchWarning], what_heading: str) -> Table:
    table = _table("compile id", what_heading, "times", expand=True)
    table.columns[0].no_wrap = table.columns[2].no_wrap = True
    table.columns[1].ratio = 1
    for w in warnings[:MAX_ROWS]:
        what = TerminalText(f"{w.name}\n", style="bold") if w.name else TerminalText()
        what.append(w.headline_shown).append(f"\n{w.kind} from {w.source}", style="dim")
        if w.location:
            what.append(f"\nat {_where(w.location)}", style="dim")
        if w.failure:
            what.append(f"\npart of {w.failure}'s failure (see Errors)")
        if w.advice:
            what.append(f"\n{w.advice}")
        table.add_row(TerminalText(", ".join(w.compile_ids) or "-"), what, str(w.count))
    return table


def _dynamic_shapes(ins: Insights) -> list[RenderableType]:
    ds = ins.dynamic_shapes
    if not ds:
        return []
    out: list[RenderableType] = [_heading(f"Dynamic shapes ({ds.counts})")]
    # Grouped as the page groups them (what a user acts on first: a size a line fixed, each dynamic size, the lines
    # that add guards); the location goes under the detail, not in a column of its own: three columns squeeze the
    # detail to a word per line at 80 columns.
    table = _table("what", "detail, and where", expand=True)
    table.columns[0].no_wrap = True
    table.columns[1].ratio = 1

    def detail(text: str, placement: list[PlacementPart]) -> Text:
        where = _placed(placement) or f"at {_where(None)}"
        return TerminalText(text).append(f"\n{where}", style="dim")

    def conditions(place: GuardPlace, shown: int) -> Text:
        text = TerminalText()
        for c in place.conditions[:shown]:
            text.append(f"\n{c.expr}").append(f"  {c.discarded_text or ', '.join(c.compilations)}", style="dim")
        if len(place.conditions) > shown:
            text.append(f"\n… {len(place.conditions) - shown} more (--json lists them)", style="dim")
        return text

    specialized, sizes, lines = ds.specialized, ds.sizes, ds.guard_lines
    for s in specialized[:MAX_ROWS]:
        text = detail(f"{s.values_text}" + (f" from {', '.join(s.sources_shown)}" if s.sources else "")
                      + (f" ({s.reason})" if s.reason else ""), s.placement)
        if s.recompiles:
            text.append(f"\n{', '.join(s.recompiles)} recompiled when it changed", style="bold")
        table.add_row("specialized", text)
    for z in sizes[:MAX_ROWS]:
        table.add_row("unbacked" if z.unbacked else z.kind, detail((f"{z.source_text or z.source}: " if z.source else "") + z.symbols_text, z.placement))
    for g in lines[:MAX_ROWS]:
        if g.runtime_asserts:
            table.add_row("asserts", TerminalText(f"{count(g.count, 'runtime assert')}{g.distinct_note} at "
                                                  f"{_where(g.location)} (tested as the graph runs)")
                          .append(conditions(g, MAX_ROWS)))
        else:
            table.add_row("guards", TerminalText(f"{count(g.count, 'guard')}{g.distinct_note} at {_where(g.location)}")
                          .append(conditions(g, MAX_ROWS)))
    if ds.unplaced_guards is not None:
        table.add_row("guards", TerminalText(f"{count(ds.unplaced_guards.count, 'guard')}{ds.unplaced_guards.distinct_note} "
                                             "where torch logged no line")
                      .append(conditions(ds.unplaced_guards, 3)))
    out.append(table)
    one, many = ds.kind_words
    for total, word, words in ((len(specialized), "more specialization", None), (len(sizes), f"more {one}", f"more {many}"),
                               (len(lines), "more line that added guards", "more lines that added guards")):
        out.extend(_more(total, word, words))
    return out


class _Heading:
    """"compilescope summary · NAME · 2 compile ids", broken only at its "·"s: a log's name longer than the line has its
    middle cut out (rich broke it anywhere: "…h40da74" / "u.log.gz")."""

    def __init__(self, name: str, counted: str) -> None:
        self.name = safe_terminal_text(name)  # (escaped before it is measured)
        self.counted = counted

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        name = unbroken(shorten_middle(self.name, options.max_width))
        yield UnbrokenText(f"compilescope summary · {name} {unbroken('· ' + self.counted)}", style="bold")


def summary_renderable(ins: Insights) -> RenderableType:
    head = _Heading(ins.source.rsplit('/', 1)[-1], ins.counted)
    # (each "· GPU NVIDIA H200" held together: a line never ends with a dot)
    ran_on = [UnbrokenText(" ".join(unbroken(f"· {what} {value}" if i else f"{what} {value}")
                                    for i, (what, value) in enumerate(ins.environment.facts())),
                           style="dim")] if ins.environment else []
    # What the compiles ran with: the Inductor settings their fx_graph_runnable headers set, and the mode they match
    ran_with = [Text(f"Inductor config of {' '.join(c.compile_ids)}: {c.assignments}"
                     + (f' (matches mode="{c.mode}")' if c.mode else ""),
                     style="dim") for c in ins.environment.compile_settings]
    # The sections in the analysis' order, which its findings (the panel above them) follow.
    return Group(head, *ran_on, *ran_with, _findings(ins), *(part for section in SECTIONS for part in _SECTION_RENDERERS[section](ins)))


def _runtime(ins: Insights) -> list[RenderableType]:
    if ins.runtime is None:  # (no --profile: the run-time analysis and its renderer are not imported)
        return []
    from .terminal_runtime import runtime_renderables

    return runtime_renderables(ins.runtime)


_SECTION_RENDERERS: dict[str, Callable[[Insights], list[RenderableType]]] = {
    "testing_only": _testing_only, "crash": _crashes, "errors": _errors, "export": lambda ins: [],  # (the details: the report's export page)
    "recompiles": _recompiles, "graph_breaks": _graph_breaks, "numpy": _numpy, "numerics": _numerics,
    # (checkpointing has no finding of its own, so no section: it follows what compiling cost)
    "compile_time": lambda ins: _compile_time(ins) + _checkpointing(ins), "autotuning": _autotuning, "user_kernels": _user_kernels, "cudagraphs": _cudagraphs, "raised": _raised,
    "warnings": _torch_warnings,
    "caches": _caches, "dynamic_shapes": _dynamic_shapes, "runtime": _runtime,
}


def print_summary(ins: Insights, console: Console) -> None:
    console.print(summary_renderable(ins), crop=False)  # (a CopyableText's code longer than the line, whole)


@dataclass(frozen=True)
class TerminalOptions:
    max_width: int = MAX_WIDTH  # wider terminals still get lines this long (tables stay readable)
    # The log or directory as the user typed it: a command printed to run next names a file under it so (the results
    # hold absolute paths). None: the absolute paths.
    typed_path: str | None = None


class SummaryRenderer:
    """`compilescope summary LOG` (render/contract.py): what to fix first, as a rich renderable."""

    def __init__(self, insights: Insights, options: TerminalOptions):
        self.insights, self.options = insights, options

    @classmethod
    def from_results(cls, results: Results, options: TerminalOptions = TerminalOptions()) -> SummaryRenderer:
        if results.insights is None:
            raise ValueError("these results were computed without insights")
        return cls(results.insights, options)

    def render(self) -> RenderableType:
        return summary_renderable(self.insights)


# -- several ranks: `compilescope summary DIR` ----------------------------------------


MAX_DIVERGENCE_DETAILS = 3  # per divergence; the rest are in --json
MAX_CRASH_LINES = 8  # crashed ranks said under the rank table; the rest are in --json


def _rank_list(ranks: list[int]) -> str:
    from ..analyses.divergence import rank_list  # formatting only: "0-4, 7"

    return ("rank " if len(ranks) == 1 else "ranks ") + rank_list(ranks)


def _rank_row(rank: RankSummary) -> list[RenderableType]:
    # An unreadable or empty rank has no figures: the notes under the table say why.
    if rank.error:
        return [str(rank.rank), TerminalText("not read", style="red"), *["-"] * 6]
    if rank.empty:
        return [str(rank.rank), TerminalText("empty log"), *["-"] * 6]
    marks = [word for word, marked in ((rank.crashes[0].word if rank.crashes else "", rank.crashes),
                                       ("report lost", rank.report_not_written), ("events lost", rank.not_written))
             if marked]
    return [
        # A rank that crashed or stopped with an exception, or whose report or chromium events could not be written: the lines under
        # the table say how, and what to do.
        TerminalText(" ".join([str(rank.rank), *marks]), style="red") if marks else str(rank.rank),
        # (a compile id that made no graph is no compiled code: counted apart, as the rank's report counts it)
        f"{rank.n_compiles} ({len(rank.no_graph)} no graph)" if rank.no_graph else str(rank.n_compiles),
        str(rank.graph_breaks), str(rank.failures),
        str(rank.recompiles), f"{rank.cache_hits}/{rank.cache_misses}",
        _seconds(rank.compile_time_s) if rank.compile_time_s else "-",
        # A rank read in part (its note says what was missed): marked, so its row does not pass for a healthy one.
        TerminalText(f"{rank.parse_problems} cut", style="red") if rank.unread else str(rank.parse_problems),
    ]


RANK_COLUMNS = ("rank", "compile ids", "graph breaks", "failures", "recompiles", "cache hit/miss", "compile time",
                "parse problems")


class _RanksTable:
    """One row per rank. Each column is as wide as its longest cell, and its header where the console has room
    (else its longest word, the header wrapping between words): left to itself, rich gave the first columns room
    and cut the last one to "pars"/"problem" at 80 columns, the width of piped output."""

    def __init__(self, ranks: list[RankSummary]):
        self.rows = [_rank_row(rank) for rank in ranks]

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        cells = [max((TerminalText(c).cell_len if isinstance(c, str) else c.cell_len for c in column), default=0)
                 for column in zip(*self.rows)] or [0] * len(RANK_COLUMNS)
        whole = [max(cell, len(header)) for cell, header in zip(cells, RANK_COLUMNS)]
        # Each column also takes its padding and the space between columns: counted, or rich narrowed every column to
        # fit and wrapped the headers inside words ("failure" / "s").
        if sum(whole) + 2 * len(whole) - 1 > options.max_width:
            whole = [max(cell, *(len(word) for word in header.split())) for cell, header in zip(cells, RANK_COLUMNS)]
        table = _table(*RANK_COLUMNS, padding=(0, 1, 0, 0))
        for i, (col, width) in enumerate(zip(table.columns, whole)):
            col.width = width
            if i:
                col.justify = "right"
        for row in self.rows:
            table.add_row(*row)
        yield table


def _divergences(analysis: MultiRankAnalysis) -> list[RenderableType]:
    out: list[RenderableType] = []
    for div in analysis.divergences:
        tree = Tree(TerminalText(f"DIFFERS  {div.title}", style="bold yellow"))
        for group in div.groups:
            tree.add(CopyableText(f"{_rank_list(group.ranks)}: {group.what}"))
        for line in div.details[:MAX_DIVERGENCE_DETAILS]:
            tree.add(CopyableText(line, style="dim"))
        if len(div.details) > MAX_DIVERGENCE_DETAILS:
            tree.add(CopyableText(f"… {len(div.details) - MAX_DIVERGENCE_DETAILS} more in --json", style="dim"))
        if div.consequence:
            tree.add(CopyableText(div.consequence))
        out.append(Uncropped(tree))
    order = analysis.exec_order
    if order and order.order_differs:
        out.append(Tree(TerminalText(f"DIFFERS  Ranks executed graphs in a different order ({_rank_list(order.ranks)})",
                             style="bold yellow")))
    if not out:
        compared = ("the same cache outcomes, collectives and tensor metadata" if analysis.graph_collectives
                    else "the same cache outcomes and tensor metadata")
        out.append(TerminalText(f"The ranks agree: {_rank_list(analysis.read_ranks)} compiled the same compile ids, with "
                                f"{compared}"
                                + (", in what could be read." if analysis.partial_ranks else ".")))
        if analysis.collectives_in_graphs and not analysis.graph_collectives:  # (which collectives were compared)
            out.append(TerminalText(analysis.collectives_in_graphs))
    if analysis.partial_ranks:
        out.append(TerminalText(f"{_rank_list(analysis.partial_ranks)}: not read in full (see the notes): what the rank did "
                        "after the cut is compared with nothing.", style="red"))
    return out


def divergences_renderable(analysis: MultiRankAnalysis) -> RenderableType:
    """What differs between the ranks, alone: what `compilescope run` prints once a distributed program has ended."""
    return Group(_heading(f"Between ranks ({count(len(analysis.divergences), 'divergence')})"), *_divergences(analysis))


def _one_rank_in_detail(in_detail: RankInDetail | None) -> RenderableType:
    """The last line: the command that shows one rank; the log of the rank that explains a divergence where there is
    one."""
    if in_detail is None:
        return TerminalText("\nOne rank in detail: compilescope summary LOG (or DIR --latest).", style="dim")
    # The command on a line of its own, the path held to it: a log's path is often longer than what a line has left.
    command = f"compilescope{NO_BREAK}summary{NO_BREAK}{one_line(shlex.quote(in_detail.log))}"
    return Group(TerminalText(f"\nRank {in_detail.rank} in detail (why it compiled what other ranks did not):", style="dim"),
                 UnbrokenText(command, style="dim"))


def rank_summaries_renderable(results: MultiRankResults, in_detail: RankInDetail | None = None) -> RenderableType:
    """results: every rank's summary and the cross-rank analysis; in_detail: results.rank_in_detail(), the rank the
    last line names."""
    ranks = results.by_rank
    head = _Heading(results.source.rstrip('/').rsplit('/', 1)[-1], count(len(ranks), 'rank'))
    out: list[RenderableType] = [head, _RanksTable(ranks)]
    endings = results.crash_endings
    for ending in endings[:MAX_CRASH_LINES]:
        out.append(TerminalText(one_line(ending), style="red"))
    if len(endings) > MAX_CRASH_LINES:
        out.append(TerminalText(f"… {len(endings) - MAX_CRASH_LINES} more crashes in --json", style="red"))
    if results.analysis.ran_eagerly:
        out.append(TerminalText(f"{results.analysis.ran_eagerly} (the compile ids counted above are Dynamo's "
                                "compilations, not compiled graphs)", style="yellow"))
    if results.analysis.failed_ranks:
        out.append(TerminalText(f"{_rank_list(results.analysis.failed_ranks)} could not be read: left out of the "
                                "comparison.", style="red"))
    out.append(divergences_renderable(results.analysis))
    for note in results.notes:
        out.append(TerminalText(f"note: {one_line(note)}", style="dim"))
    out.append(_one_rank_in_detail(in_detail))
    return Group(*out)


class RankSummariesRenderer:
    """`compilescope summary DIR` (render/contract.py): every rank in a table, then what differs between them."""

    def __init__(self, results: MultiRankResults, in_detail: RankInDetail | None):
        self.results, self.in_detail = results, in_detail

    @classmethod
    def from_results(cls, results: MultiRankResults, options: TerminalOptions = TerminalOptions()) -> RankSummariesRenderer:
        return cls(results, results.rank_in_detail(options.typed_path))

    def render(self) -> RenderableType:
        return rank_summaries_renderable(self.results, self.in_detail)

"""The terminal summary's Runtime section: where the profiled time went."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table

from ..analyses.runtime import IDLE_IN_OP, Runtime
from ..wording import count, format_us
from .terminal_text import TerminalText

MAX_ROWS = 10


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


MAX_COMPARED_NAME = 110  # characters of a kernel's name in the comparison (the start tells a GEMM's tile size)
MAX_LIBRARY_NAME = 80  # of a library kernel's name there, under what it is (enough for a cuBLAS GEMM's tile size)


def _middle(name: str, most: int) -> str:
    """The name cut in the middle to at most `most` characters: its start and end are what tell kernels apart."""
    if len(name) <= most:
        return name
    head = most * 2 // 3
    return f"{name[:head]}…{name[len(name) - (most - head - 1):]}"


def _time_calls(us: float, calls: int) -> str:
    return f"{format_us(us)} ×{calls}" if us else ""


def _lines(by_file: list[tuple[str, list[int]]]) -> str:
    """file.py:28, 31, 32 (a file named once)."""
    return ", ".join(f"{name}:{', '.join(map(str, numbers))}" for name, numbers in by_file)


def runtime_renderables(runtime: Runtime | None) -> list[RenderableType]:
    out: list[RenderableType] = []
    if runtime is None:
        return out
    for p in runtime.profiles:
        if p.other_run:  # its rows would be unjoined ones dressed as attributed: one line (they stay in --json)
            out.append(TerminalText(f"\nRuntime · {_short(p.source)} · {p.not_joined}", style="bold"))
            continue
        run = p.run_share_known
        head = f"\nRuntime · {_short(p.source)} · {format_us(p.total_us)} of {p.timeline.upper()} time{p.part_read}"
        if run:
            head += f" ({format_us(p.compiling_us)} compiling, {format_us(p.run_us)} running: \"run\" is the latter)"
        out.append(TerminalText(head, style="bold underline"))
        if p.parts_said:  # the finding's shares are of a part; these rows' are of the whole
            out.append(TerminalText(p.parts_said))
        for note in p.notes:
            out.append(TerminalText(f"note: {note}", style="yellow"))
        if p.compiles:
            compiles = ", ".join(f"{c.compile_id or 'a compile'} {format_us(c.us)}{' (recompile)' if c.recompile else ''}"
                                 for c in p.compiles)
            out.append(TerminalText(f"compiled in this profile: {compiles}"))
        if p.slow_said:
            out.append(TerminalText(f"slow calls: {p.slow_said}"))
        if p.graph_launches:
            out.append(TerminalText(f"{count(p.graph_launches, 'CUDA graph replay')} (cudaGraphLaunch): their kernels say "
                            "\"CUDA graph replay\""))
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=True)
        columns = [("share", "right")] + ([("run", "right")] if run else []) + [
            ("time", "right"), ("calls", "right"), ("kernel (kind) · compile id · user lines", "left")]
        for col, justify in columns:
            # The kernel's name takes what the narrow columns leave: on 80 columns, ~50 characters.
            last = col.startswith("kernel")
            table.add_column(col, justify=justify, no_wrap=not last,  # type: ignore[arg-type]
                             overflow="fold" if last else "ellipsis", ratio=1 if last else None)
        for k in p.kernels[:MAX_ROWS]:
            name = TerminalText(f"{k.library}: " if k.library else "")
            name.append(k.name if len(k.name) <= 80 else k.name[:77] + "...")
            replay = (", CUDA graph replay" + (", op not recorded" if k.kind == "extern" and not k.op else "")
                      if k.replayed else "")
            name.append(f" ({k.kind_label}{f' via {k.op}' if k.op and k.op != k.name else ''}{replay})", style="dim")
            where = [str(k.compile_id)] if k.compile_id else []
            where += [_lines(k.lines_by_file(first=4))] if k.user_lines else []
            if where:
                name.append("\n" + " · ".join(where), style="cyan")
            shares = [f"{k.share:.1%}"] + ([f"{k.run_share:.1%}" if k.run_share is not None else "-"] if run else [])
            table.add_row(*shares, format_us(k.total_us), str(k.calls or ""), name)
        out.append(table)
        graphs = ", ".join(f"{g.compile_id or g.key or g.region}{' (no graph range)' if g.region else ''} "
                           f"{g.reported_share:.1%}"
                           + (f" ({count(g.calls, 'call')})" if g.calls else "")
                           if g.in_graph else f"{g.outside_label} {g.reported_share:.1%}" for g in p.graphs)
        out.append(TerminalText(f"by graph{' (of the run)' if run else ''}: {graphs}"))
        if len(p.kernels) > MAX_ROWS:
            out.append(TerminalText(f"... {count(len(p.kernels) - MAX_ROWS, 'more row')} ({p.share_after(MAX_ROWS):.1%}); all in "
                                    "--json", style="dim"))
        if p.idle_rows:
            out.append(TerminalText("GPU idle by what the CPU ran meanwhile (compiling left out):"))
            idle = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=True)
            columns = [("share", "right"), ("time", "right")] + ([("one call", "right")] if p.idle_one_call_shown else [])
            for col, justify in columns + [("the CPU was in", "left")]:
                last = col.startswith("the CPU")
                idle.add_column(col, justify=justify, no_wrap=not last,  # type: ignore[arg-type]
                                overflow="fold" if last else "ellipsis", ratio=1 if last else None)
            for cause, share in p.idle_rows:
                what = TerminalText(cause.what)
                if cause.kind == IDLE_IN_OP:  # (the other kinds' names say what they are)
                    what.append(" (eager op)", style="dim")
                one = [format_us(cause.one_call_us) if cause.one_call_us is not None else ""] if p.idle_one_call_shown else []
                idle.add_row(f"{share:.1%}", format_us(cause.us), *one, what)
            out.append(idle)
    c = runtime.comparison
    if c is not None and c.speedup is not None:
        out.append(TerminalText(f"\nEager {format_us(c.eager_us)} vs compiled {format_us(c.compiled_us)}: "
                        f"speedup {c.speedup:.2f}x", style="bold"))
        out.append(TerminalText(f"each side: {c.busy_definition}", style="dim"))
        if c.compiled_compiles:
            out.append(TerminalText(f"left out of the compiled side: {format_us(c.compiling_us)} of compiling in its "
                                    f"profile ({', '.join(str(k.compile_id or 'a compile') for k in c.compiled_compiles)})"))
        if c.wall_speedup is not None and c.eager_wall_us and c.compiled_wall_us:
            out.append(TerminalText(f"wall time of the runs' ranges: {format_us(c.eager_wall_us)} vs "
                            f"{format_us(c.compiled_wall_us)}: {c.wall_speedup:.2f}x (launches and waits included)"))
        # The numbers keep their width; the name takes the rest (on 80 columns, ~55 characters: two lines of a
        # cuBLAS or templated ATen kernel's name at most, MAX_COMPARED_NAME cut in the middle).
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=True)
        table.add_column("eager", justify="right", no_wrap=True)
        table.add_column("compiled", justify="right", no_wrap=True)
        table.add_column("op / kernel", justify="left", overflow="fold", ratio=1)
        for o in c.ops[:MAX_ROWS]:
            # A library's kernel by what it is, as the headline says it; its name under it, dim and cut, as two GEMMs
            # of one kind differ only by it (the tile size, after the types).
            name = TerminalText(o.library or _middle(o.name, MAX_COMPARED_NAME))
            if o.library:
                name.append(f"\n{_middle(o.name, MAX_LIBRARY_NAME)}", style="dim")
            if o.eager_op:
                name.append(f" (eager: inside {o.eager_op})")
            table.add_row(_time_calls(o.eager_us, o.eager_calls), _time_calls(o.compiled_us, o.compiled_calls), name)
        out.append(table)
    return out

"""The terminal summary's Runtime section: where the profiled time went."""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ..analyses.runtime import Runtime, format_us

MAX_ROWS = 10


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def runtime_renderables(runtime: Runtime | None) -> list[RenderableType]:
    out: list[RenderableType] = []
    if runtime is None:
        return out
    for p in runtime.profiles:
        out.append(Text(f"\nRuntime · {_short(p.source)} · {format_us(p.total_us)} of {p.timeline.upper()} time",
                        style="bold underline"))
        for note in p.notes:
            out.append(Text(f"note: {note}", style="yellow"))
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for col, justify in (("share", "right"), ("time", "right"), ("calls", "right"), ("kernel (kind)", "left"),
                             ("compile id", "left"), ("user lines", "left")):
            table.add_column(col, justify=justify, no_wrap=col != "kernel (kind)",  # type: ignore[arg-type]
                             overflow="fold" if col == "kernel (kind)" else "ellipsis")
        for k in p.kernels[:MAX_ROWS]:
            name = Text(k.name if len(k.name) <= 80 else k.name[:77] + "...")
            name.append(f" ({k.kind}{f' via {k.op}' if k.op and k.op != k.name else ''})", style="dim")
            table.add_row(f"{k.share:.1%}", format_us(k.total_us), str(k.calls or ""), name,
                          str(k.compile_id or ""), ", ".join(f"{_short(u.file)}:{u.line}" for u in k.user_lines[:2]))
        out.append(table)
        graphs = ", ".join(f"{g.compile_id or g.key} {g.share:.1%}" + (f" ({g.calls} calls)" if g.calls else "")
                           if g.key else f"no compiled graph {g.share:.1%}" for g in p.graphs)
        out.append(Text(f"by graph: {graphs}"))
        if len(p.kernels) > MAX_ROWS:
            rest = sum(k.share for k in p.kernels[MAX_ROWS:])
            out.append(Text(f"... {len(p.kernels) - MAX_ROWS} more rows ({rest:.1%}); all in --json", style="dim"))
    c = runtime.comparison
    if c is not None and c.speedup is not None:
        out.append(Text(f"\nEager {format_us(c.eager_us)} vs compiled {format_us(c.compiled_us)}: "
                        f"speedup {c.speedup:.2f}x", style="bold"))
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for col in ("op / kernel", "eager calls", "eager time", "compiled calls", "compiled time"):
            table.add_column(col, justify="left" if col == "op / kernel" else "right", overflow="fold")
        for o in c.ops[:MAX_ROWS]:
            table.add_row(o.name, str(o.eager_calls or ""), format_us(o.eager_us) if o.eager_us else "",
                          str(o.compiled_calls or ""), format_us(o.compiled_us) if o.compiled_us else "")
        out.append(table)
    return out

"""The annotated source pages: one per user file, each line with what torch.compile made of it.

Formats what analyses.sources found; the line details open on `:target` (CSS only), so a link
`sources/<file>.html#L23` from a graph-break row or a kernel lands on the line with its details shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator

from markupsafe import Markup, escape

from ...analyses.aoti import CHECK_ENV
from ...model.ids import NO_COMPILE_ID, compilation_key
from ...analyses.sources import DIMENSION_MARKING_GUARD, FailedCheck, LineNotes, RecompileNote, SourceFile, line_anchor
from ...model.trace import Compile
from ...wording import Listed, count, said
from ..options import artifact_url, readable_url
from .export import COMPILE_INDEX, wants_export_index
from .provenance import panel_line_id, provenance_url
from .rows import ascii_parts, code_text, function_name_html, html_text
from .transformed import transformed_url

if TYPE_CHECKING:
    from . import Page

_GRAPH_ABBREVIATIONS = {"forward": "fwd", "backward": "bwd"}

STATUS_TITLES = {
    "crashed": "the program died here",
    "failed": "compiling failed here",
    "captured": "captured in a graph",
    "break": "a graph broke here",
    "eager": "ran eagerly, between graphs",
    "called": "captured through a call: the graph holds ops of a function called here",
}


class _CompileDirs(dict[str, str]):
    """`[1/0]` -> the directory of its last attempt (the one that holds the graph); and each compile id's link
    (_cid), made once: a file's notes name the same few compile ids over and over (GPT-2: 1,200 links, ~14 ids)."""

    def __init__(self, crash_page: str = "index.html") -> None:
        super().__init__()
        self.crash_page = crash_page  # the page whose Insights show the crash (the export page may take index.html)
        self.links: dict[str, str] = {}
        self.entries: dict[str, Compile] = {}  # each attempt by its directory
        self.kernel_pages: dict[tuple[str, int], str | None] = {}  # (directory, stack traces artifact) -> its page
        # What made the graphs and kernels outside any compile id (Sources.outside_name), said for NO_COMPILE_ID
        self.outside: str | None = None


def _compile_dirs(page: Page) -> _CompileDirs:
    dirs = _CompileDirs(COMPILE_INDEX if wants_export_index(page) else "index.html")
    dirs.outside = page.results.sources.outside_name
    for entry in page.trace.sorted_compiles():
        dirs.entries[entry.dir_name] = entry
        if entry.compile_id is not None:
            dirs[compilation_key(entry.compile_id)] = entry.dir_name
    return dirs


def _kernel_page(page: Page, dirs: _CompileDirs, compile_dir: str, traces: int | None) -> str | None:
    """The page of a compile's kernel stack traces (a row per kernel: the user lines and stacks it came from)."""
    if traces is None:
        return None
    key = (compile_dir, traces)
    if key not in dirs.kernel_pages:
        entry = dirs.entries.get(compile_dir)
        found = next((a for a in entry.artifacts if a.number == traces), None) if entry is not None else None
        url = readable_url(found, page.options) if found is not None and found.readable else None
        dirs.kernel_pages[key] = url or None  # ("": the payload was not JSON, no page)
    return dirs.kernel_pages[key]


def source_files(page: Page) -> Iterator[tuple[str, Iterator[bytes]]]:
    sources = page.results.sources
    if not sources:
        return
    dirs = _compile_dirs(page)
    for f in sources.files:
        yield f.page, _page(page, f, dirs)


def _guard_html(guard: str, described: str | None) -> str:
    """A guard of a line's notes as the recompiles view shows it: Dynamo's ___stack names, or its tensor of a NumPy
    array, in the user's words (its "described"), torch's text in the title; else torch's text."""
    if described:
        return f'<code title="{html_text(guard)}">{html_text(described)}</code>'
    return f'<code>{html_text(guard)}</code>'


def _failed_checks_html(r: RecompileNote) -> str:
    """What of a line a recompile found failing: "a guard of [0/0] on this line failed: <check>", or, where it failed
    several checks or one of several compilations, each check once with the compilations whose guard it was."""
    if len(r.checks) == 1 and len(r.checks[0].failed_in) == 1:
        check = r.checks[0]
        return f'a guard of {html_text(check.failed_in[0])} on this line failed: {_check_html(check)}'
    listed = "; ".join(f'{_check_html(c)} (of {html_text(", ".join(c.failed_in))})' for c in r.checks)
    return f"guards on this line failed: {listed}"


def _check_html(check: FailedCheck) -> str:
    return _guard_html(check.guard, check.described)


def _hint_html(hint: str | None) -> str:
    """Torch's hint after an installed guard ("type float"), where it gave one."""
    return f' <span class="muted">(hint: {html_text(hint)})</span>' if hint else ""


# An installed guard torch notes as the first use of a size: the line used it, 0/1 specialization made the guard.
_FIRST_USE_HTML = (' <span class="muted">(this line first used the size; the guard comes from 0/1 specialization, which '
                   'leaves sizes 0 and 1 to compiles of their own: <code>torch._dynamo.decorators.mark_unbacked(tensor, '
                   'dim)</code> avoids it)</span>')


def _source_html(symbol: dict) -> str:
    """" from " and a symbol's source (a created symbol's "source", a specialized one's "sources"): a name Dynamo
    made in the user's words (its "described"), torch's text in the title; else torch's text; "" where it has none."""
    if "sources" in symbol:
        described = {d["source"]: d["text"] for d in symbol.get("described_sources", ())}
        shown = [_one_source_html(s, described.get(s)) for s in symbol["sources"]]
        return f" from {', '.join(shown)}" if shown else ""
    if not symbol.get("source"):
        return ""
    return f" from {_one_source_html(symbol['source'], symbol.get('described'))}"


def _one_source_html(source: str, described: str | None) -> str:
    if described:
        return f'<span title="{html_text(source)}">{html_text(described)}</span>'
    return html_text(source)


def _cid(cid: str, dirs: _CompileDirs, made: bool = True) -> str:
    """A compile id, linked to its compile's page. NO_COMPILE_ID (tlparse's [-/-]) is said as what made its graphs
    and kernels where the log says (made: a graph or kernel's, not a shape symbol's, which torch.export may make),
    else as outside any compilation, linked to the outputs logged there."""
    if cid == NO_COMPILE_ID:
        name = f"the {dirs.outside}" if made and dirs.outside else "outside any compilation"
        return f'<a href="../{html_text(dirs.crash_page)}#no-compile-id">{html_text(name)}</a>'
    link = dirs.links.get(cid)
    if link is None:
        d = dirs.get(cid)
        text = html_text(cid)
        link = dirs.links[cid] = (f'<a class="mono cid" href="../{html_text(d)}/index.html">{text}</a>' if d
                                  else f'<span class="mono">{text}</span>')
    return link


def _cids(cids: Iterable[str], dirs: _CompileDirs) -> str:
    """Compile ids whose notes are alike, each linked: "[0/0], [0/1], [0/2]"."""
    return ", ".join(_cid(c, dirs) for c in cids)


def _cids_listed(cids: Listed[str], dirs: _CompileDirs) -> str:
    """_cids of those the analysis lists, then how many more it left out."""
    return _cids(cids.items, dirs) + (f" and {cids.more} more" if cids.more else "")


def _graphs_of(cids: list[str], dirs: _CompileDirs) -> str:
    """"graph [0/0]", "graphs [0/0], [0/1]"; "graph of the AOTInductor package" for one with no compile id."""
    if cids == [NO_COMPILE_ID]:
        return f"graph of {_cid(NO_COMPILE_ID, dirs)}"
    return f'{"graph" if len(cids) == 1 else "graphs"} {_cids(cids, dirs)}'


def _ids_text(cids: Listed[str], dirs: _CompileDirs) -> str:
    """Compile ids as a badge says them, unlinked: NO_COMPILE_ID as what made it where the log says."""
    return said(Listed([dirs.outside or "outside any compilation" if c == NO_COMPILE_ID else c for c in cids.items],
                       cids.more), " ")


def _notes_html(page: Page, f: SourceFile, n: int, dirs: _CompileDirs) -> Iterator[str]:
    """A line's notes, one item at a time: a line of a long run's model has thousands (one per kernel of each
    compile), and its notes as one string cost ten times their size while the page is written."""
    notes = f.notes[n]
    breaks = page.results.sources.graph_breaks
    resume_ids = page.results.sources.resume_compile_ids
    yield '<ul class="notes">'
    yield from _failures_html(notes, dirs)
    if notes.graphs:
        parts = [f'{_cids_listed(cids, dirs)} <span class="muted mono">{html_text(", ".join(nodes.items))}'
                 f'{" …" if nodes.more else ""}</span>' for cids, nodes in notes.graph_groups]
        yield f'<li class="n-graphs">captured in graph {"; ".join(parts)}</li>'
    yield from _calls_html(page, f, notes, dirs)
    for a in notes.autotune:
        won = (f'chose <code>{html_text(a["best_kernel"])}</code>' + (f' ({html_text(a["best_time"])})' if a["best_time"]
                                                                   else "") if a["best_kernel"] else "chose ?")
        yield (f'<li class="n-autotune">max-autotune in {_cid(a["compile_id"], dirs)}: <code>{html_text(a["op"])}</code> '
               f'{html_text(a["shape"] or "")}: {won}, after {html_text(a["took"])} of compile time'
               + (f' ({html_text("; ".join(a["compile_notes"]))})' if a["compile_notes"] else "") + '</li>')
    yield from _aoti_html(page, notes, dirs)
    for differs, cids in notes.numerics_listed:
        yield (f'<li class="n-numerics">differs from eager in {_cids_listed(cids, dirs)}: this line '
               f'{html_text(differs["why"])}; ops <code>{html_text(", ".join(differs["ops"]))}</code></li>')
    yield from _user_kernels_html(notes, dirs)
    for found, cids in notes.found_stores_listed:
        yield (f'<li class="n-user-kernel">{html_text(found["op"])} in {_cids_listed(cids, dirs)}: this line '
               f'{html_text(found["why"])}</li>')
    for c in notes.checkpoint:
        yield (f'<li class="n-checkpoint">activation checkpointing in {_cid(c["compile_id"], dirs)}: '
               + (f'{count(c["calls"], "checkpoint call")} captured here (the graph runs them as '
                  '<code>tag_activation_checkpoint</code>)' if "calls" in c
                  else f'the backward recomputes {count(c["recomputed_ops"], "op")} of this line instead of saving '
                       'their activations') + '</li>')
    transformed: dict[str, str] = {}  # compile id of a frame starting here -> its link to the code run instead
    for fr in notes.frames:
        d = dirs.get(fr["compile_id"])
        transformed[fr["compile_id"]] = (
            f' · <a class="transformed-link" href="../{html_text(transformed_url(d))}">what runs instead</a>'
            if d in page.results.transformed else "")
    for fr in notes.started_frames:  # (a resume function is said below, as the rest of its function)
        if fr.get("failed"):
            yield (f'<li class="n-frame">frame <span class="mono">{html_text(fr["function"])}</span> starts here: '
                   f'compiling it as {_cid(fr["compile_id"], dirs)} failed</li>')
            continue
        yield (f'<li class="n-frame">compiled frame <span class="mono">{html_text(fr["function"])}</span> starts '
               f'here: {_cid(fr["compile_id"], dirs)}{transformed[fr["compile_id"]]}</li>')
    for b, elsewhere in notes.break_resumes:
        resumes = "".join(f' → resumed by {function_name_html(r, "mono")} ' + ", ".join(_cid(c, dirs) for c in resume_ids.get(r, []))
                          for r in elsewhere)
        torch_text = f' <span class="muted">({html_text(b["torch_text"])})</span>' if b.get("torch_text") else ""
        note = f'<br>{html_text(b["note"])}' if b.get("note") else ""
        yield (f'<li class="n-break"><strong>graph break</strong>: {html_text(b["reason"])}{torch_text} (in '
               f'{", ".join(_cid(c, dirs) for c in b["compile_ids"])}){resumes}{note}</li>')
    for i in notes.eager_only:
        site = breaks[i]
        loc = site.location
        href = _line_href(page, f, loc.filename, loc.line)
        text = html_text(f.line_name(loc.filename, loc.line))
        where = f'<a href="{html_text(href)}">{text}</a>' if href else text
        yield f'<li class="n-eager">ran eagerly because of the graph break at {where}: {html_text(site.reason)}</li>'
    for e in notes.ran_eagerly:
        yield (f'<li class="n-eager">{html_text(e["text"])} (in {_cids(e["compile_ids"], dirs)})</li>')
    for r in notes.resume_notes:
        links = ", ".join(_cid(c, dirs) + transformed.get(c, "") for c in r.compiled)
        failed = ", ".join(_cid(c, dirs) for c in r.failed)
        rest = (f'the rest of <span class="mono">{html_text(r.resumed)}</span> <span class="muted">(Dynamo\'s resume '
                f'function <span class="mono">{html_text(r.function)}</span>)</span>')
        if not r.compiled:
            yield f'<li class="n-resume">after this line, compiling {rest} as {failed} failed</li>'
            continue
        yield (f'<li class="n-resume">after this line, {rest} was compiled as {links}'
               f'{f"; compiling it as {failed} failed" if failed else ""}</li>')
    for recompile in notes.recompile_notes:
        failed = _failed_checks_html(recompile)
        if recompile.failed is not None:  # (torch compiled nothing: the recompile limit, or an error)
            yield (f'<li class="n-guard">{failed}; recompiling as {_cid(recompile.recompile, dirs)} failed: '
                   f'{html_text(recompile.failed)}</li>')
            continue
        yield f'<li class="n-guard">recompiled as {_cid(recompile.recompile, dirs)}: {failed}</li>'
    for changed in notes.state_changes:
        yield (f'<li class="n-guard">this line {html_text(changed["text"])} '
               f'(seen in {_cid(changed["recompile"], dirs)})</li>')
    for group in notes.installed_guards():
        first_use = set(group.first_use)
        listed = "".join(f"<li>{_guard_html(g, group.described.get(g))}{_hint_html(group.hints.get(g))}"
                         f"{_FIRST_USE_HTML if g in first_use else ''}</li>"
                         for g in group.guards)
        if group.dimension_marking:
            marking = "".join(f"<li>{_guard_html(g, group.described.get(g))}</li>"
                              for g in group.dimension_marking)
            listed += (f'<li class="n-marking">{count(len(group.dimension_marking), "check")} that no dimension was marked '
                       f'dynamic by hand <span class="mono muted">({DIMENSION_MARKING_GUARD})</span>'
                       f'<details><summary>show</summary><ul>{marking}</ul></details></li>')
        shown = len(group.guards)
        folded = f' (and {count(len(group.dimension_marking), "dimension-marking check")})' if group.dimension_marking else ""
        yield (f'<li class="n-installed">{count(shown, "guard")} of {_cids(group.compile_ids, dirs)} '
               f'{"comes" if shown == 1 else "come"} from this line{folded}'
               f'<details><summary>show</summary><ul>{listed}</ul></details></li>')
    yield from _kernels_html(page, notes, dirs)
    for s in notes.symbols:
        if s["kind"] == "guard" and s.get("discarded"):  # (only an attempt Dynamo restarted added it: said by the analysis)
            yield f'<li class="n-symbol">guard on shapes <code>{html_text(s["expr"])}</code>: {html_text(s["discarded"])}</li>'
            continue
        if s["kind"] == "guard":
            text = f'guard on shapes <code>{html_text(s["expr"])}</code>'
        else:
            text = (f'symbol <span class="mono">{html_text(s["symbol"])}</span> {html_text(s["kind"])}'
                    f'{" = " + html_text(s["value"]) if s.get("value") is not None else ""}'
                    f'{_source_html(s)}')
        yield f'<li class="n-symbol">{text} ({_cid(s["compile_id"], dirs, made=False)})</li>'
    yield "</ul>"


def _failure_link(failure: dict[str, Any]) -> str:
    """The failed compile id, linked to its failure message on its compile page."""
    cid = html_text(failure["compile_id"])
    if failure.get("dir") is None:
        return f'<span class="mono">{cid}</span>'
    return (f'<a class="mono cid" href="../{html_text(failure["dir"])}/index.html#failure-message" '
            f'title="its failure message">{cid}</a>')


def _crash_words(crash: dict[str, Any]) -> str:
    """"the program crashed here: Segmentation fault" or "the program stopped here with ...", as the Crash
    section says it, with where Python was when that was past this line (a library the line called)."""
    who = f'thread {html_text(crash["thread"])}' if crash.get("thread") else "the program"
    error = html_text(crash["error"])
    if crash["exception"]:
        said = f'<strong>{who} stopped with an uncaught exception</strong>: <code>{error}</code>'
    else:
        said = f'<strong>{who} crashed here</strong>: {error}'
    where = crash.get("where")
    if where is not None:
        name = f' ({html_text(where["function"])})' if where.get("function") else ""
        base = where["filename"].replace("\\", "/").rsplit("/", 1)[-1]
        place = html_text(f'{base}:{where["line"]}')
        said += (f', {"raised" if crash["exception"] else "Python was"} in <span class="mono" '
                 f'title="{html_text(where["filename"])}">{place}</span>{name}, called from this line')
    elif crash["exception"]:
        said += ", raised on this line"
    if crash.get("during"):
        said += f', {html_text(crash["during"])}'
    return said


def _failures_html(notes: LineNotes, dirs: _CompileDirs) -> Iterator[str]:
    """The compiles that failed on this line and the program's death here: first, as they matter most."""
    for c in notes.crashes:
        yield (f'<li class="n-crashed">{_crash_words(c)} · <a href="../{dirs.crash_page}#insights-crash">its stack</a>'
               '</li>')
    for fail in notes.failures:
        place = ("compiling failed here" if fail["kind"] == "failure"
                 else "compiling the function that starts here failed (torch logged no line inside it)")
        fell_back = ("; torch ran the frame uncompiled (suppress_errors)" if fail.get("fell_back") else "")
        yield (f'<li class="n-failed"><strong>{place}</strong>: {_failure_link(fail)} failed in '
               f'{html_text(fail["stage"])}: <code>{html_text(fail["exception"])}</code>: '
               f'{html_text(fail["message"])}{fell_back}</li>')


def _calls_html(page: Page, f: SourceFile, notes: LineNotes, dirs: _CompileDirs) -> Iterator[str]:
    """Where the ops of the calls made on this line sit, an item per set of graphs holding them (a model's compiles
    mostly share theirs): the lines the kernel stack traces end on, past this one."""
    for cids, group in notes.call_groups.items():
        where = ", ".join(_call_link(page, f, c) for c in group.items)
        more = f" and {count(group.more, 'more line')}" if group.more else ""
        yield (f'<li class="n-call">captured through a call: the ops of the code it calls are at {where}{more} '
               f'({_graphs_of(list(cids), dirs)})</li>')


def _aoti_html(page: Page, notes: LineNotes, dirs: _CompileDirs) -> Iterator[str]:
    """An AOTInductor package compiled on this line: what it accepts and holds, and its generated code."""
    for package in notes.aoti:
        accepts = (f'accepts <code>{html_text(package["accepts"])}</code>' if package["accepts"]
                   else "takes no input")
        checked = (f'; it checks its inputs only where <code>{CHECK_ENV}=1</code> is set'
                   if package["checks_need_env"] else "")
        holds = f'; it holds {html_text(package["holds"])}' if package.get("holds") else ""
        code = "".join(f' · {link}' for link in (_artifact_link(page, dirs, package["wrapper_artifact"], "its C++ wrapper"),
                                                  _artifact_link(page, dirs, package["kernel_artifact"], "its kernels"))
                       if link)
        yield (f'<li class="n-frame"><strong>AOTInductor compiled the exported program here</strong>, as a package that '
               f'{accepts}{holds}{checked}{code}</li>')


def _user_kernels_html(notes: LineNotes, dirs: _CompileDirs) -> Iterator[str]:
    """The user's own Triton kernel defined or launched on this line, and the compiles whose code holds it."""
    for k in notes.user_kernels:
        name = f'<code>{html_text(k["kernel"])}</code>'
        held = (f'Inductor compiled it as you wrote it into {_graphs_of(k["compile_ids"], dirs)} '
                f'(<code>{html_text(k["code_name"])}</code> in their code)')
        if k["role"] == "launched":
            defined = f' (defined at {html_text(k["defined_at"])})' if k["defined_at"] else ""
            yield (f'<li class="n-user-kernel"><strong>launches your Triton kernel {name}</strong>{defined}: the graph '
                   f'traced this launch, and {held}</li>')
        else:
            here = ("defined here" if k["role"] == "defined"
                    else "defined here (torch names this line, its first decorator)")
            yield f'<li class="n-user-kernel"><strong>your Triton kernel {name}</strong>, {here}: {held}</li>'


def _artifact_link(page: Page, dirs: _CompileDirs, number: int | None, text: str) -> str | None:
    """A link to the page of an output of the log (its number: Artifact.number); None where no compile holds it."""
    found = next((a for entry in dirs.entries.values() for a in entry.artifacts if a.number == number),
                 None) if number is not None else None
    if found is None:
        return None
    return f'<a href="../{html_text(artifact_url(found, page.options))}">{html_text(text)}</a>'


def _call_link(page: Page, f: SourceFile, call: dict[str, Any]) -> str:
    """The line of a call's ops, linked to its row (on this page or its file's page) where one shows it."""
    path, line = call["file"], call["line"]
    text = html_text(f.line_name(path, line))
    full = f"{path}:{line} in {call['function']}" if call.get("function") else f"{path}:{line}"
    title = f' title="{html_text(full)}"'
    href = _line_href(page, f, path, line)
    return f'<a class="mono" href="{html_text(href)}"{title}>{text}</a>' if href else f'<span class="mono"{title}>{text}</span>'


def _kernels_html(page: Page, notes: LineNotes, dirs: _CompileDirs) -> Iterator[str]:
    """The kernels a line became, an item per compile id and graph: a training step's line feeds its forward graph's
    kernels and its backward graph's, which the reader tells apart ("forward kernels of [0/0]: ..."). Kernels the
    stack traces logged outside any compile list that the AOTInductor package's code never calls are not its."""
    for (cids, graph, uncalled), group in notes.kernel_groups().items():
        if uncalled:
            yield "<li class=\"n-kernel\">kernels listed outside any compile, not the AOTInductor package's: "
        else:
            yield f'<li class="n-kernel">{f"<strong>{html_text(graph)}</strong> kernels" if graph else "kernels"} of {_cids(cids, dirs)}: '
        for i, k in enumerate(group):
            yield (", " if i else "") + _kernel_link(page, k, dirs)
        yield "</li>"


def _kernel_link(page: Page, k: dict[str, Any], dirs: _CompileDirs) -> str:
    """A kernel's call in the generated code on the provenance page; a kernel the logged code does not call (the log
    holds no code, or code that does not name it) links to its row of the compile's kernel stack traces, said so."""
    name = html_text(k["kernel"])
    handle = k.get("debug_handle")
    if k.get("code_line") is not None:
        url = f'../{provenance_url(k["dir"])}#{panel_line_id(k["section"], "code", k["code_line"])}'
        title = (f' title="{_handle_words_html(k["kernel"], handle)}; the link shows it in the generated code"'
                 if handle is not None else "")
        note = f' <span class="muted">— {html_text(k["note"])}</span>' if k.get("note") else ""
        return f'<a class="mono" href="{html_text(url)}"{title}>{name}</a>{note}'
    rows = _kernel_page(page, dirs, k["dir"], k.get("traces_artifact"))
    url = f'../{rows}#{k["anchor"]}' if rows else f'../{provenance_url(k["dir"])}'
    title = f' title="{_handle_words_html(k["kernel"], handle)}"' if handle is not None else ""
    return (f'<a class="mono" href="{html_text(url)}"{title}>{name}</a> <span class="muted">(the logged code has no call to '
            f'it{"; the link shows its stack traces" if rows else ""})</span>')


# What a kernel's `:N` is, as the page's debug-handle line says it (source.html): these words HTML-escaped once, here
_HANDLE_MIDDLE_HTML = html_text(", the call torch's debug handle :")
_HANDLE_END_HTML = html_text(" names (each kernel call of a graph's code has one)")


def _handle_words_html(name: str, handle: str) -> str:
    """What a kernel's `:N` is, HTML-escaped: the log's name and handle each time, the words once (a page links
    hundreds of kernels, and the words' apostrophes made each title five replaces of its whole text)."""
    return f"{html_text(name[:-len(handle) - 1])}{_HANDLE_MIDDLE_HTML}{html_text(handle)}{_HANDLE_END_HTML}"


def _badges(notes: LineNotes, dirs: _CompileDirs) -> str:
    out = []
    if notes.crashes:
        died = "; ".join(c["error"] for c in notes.crashes)
        out.append(f'<span class="b b-crashed" title="the program died here: {html_text(died)}">'
                   f'{"uncaught exception" if notes.uncaught_exception else "crashed"}</span>')
    if notes.failures:
        out.append(f'<span class="b b-failed" title="compiling failed: {html_text(said(notes.failures_title, "; "))}">'
                   f'compile failed: {html_text(said(notes.failed_compile_ids, " "))}</span>')
    started, not_started = notes.compiled_here, notes.not_compiled_here
    resumed, not_resumed = notes.rest_compiled, notes.rest_not_compiled
    if started.items:
        out.append(f'<span class="b b-frame" title="torch.compile compiled the function that starts here">compiled: '
                   f'{html_text(said(started, " "))}</span>')
    if not_started.items:
        out.append(f'<span class="b b-failed" title="torch.compile tried to compile the function that starts here, and '
                   f'that compile failed">not compiled: {html_text(said(not_started, " "))}</span>')
    if resumed.items:
        out.append(f'<span class="b b-resume" title="after this line, the rest of {html_text(notes.rest_of)} was compiled '
                   f'as its own graph">rest compiled: {html_text(said(resumed, " "))}</span>')
    if not_resumed.items:
        out.append(f'<span class="b b-failed" title="after this line, compiling the rest of {html_text(notes.rest_of)} '
                   f'as its own graph failed">rest not compiled: {html_text(said(not_resumed, " "))}</span>')
    if notes.autotune:
        out.append(f'<span class="b b-autotune" title="compile time max-autotune spent benchmarking candidates for ops '
                   f'of this line">autotuned: {html_text(notes.autotune_text)}</span>')
    if notes.aoti:
        out.append('<span class="b b-frame" title="AOTInductor compiled the exported program here, as a package">'
                   f'AOTInductor package{"s" if len(notes.aoti) > 1 else ""}</span>')
    if notes.numerics:
        out.append('<span class="b b-numerics" title="compiled results differ from eager\'s here: '
                   f'{html_text(said(notes.numerics_title, "; "))}">{html_text("; ".join(notes.numerics_badges))}'
                   '</span>')
    if notes.found_stores:
        out.append('<span class="b b-kernel" title="a triton_op\'s write its mutates_args does not declare, which '
                   f'torch.compile found itself: {html_text(said(notes.found_stores_title, "; "))}">'
                   f'{html_text("; ".join(notes.found_stores_badges))}</span>')
    if notes.user_kernels:
        out.append('<span class="b b-kernel" title="your own @triton.jit kernel: defined or launched here, compiled into '
                   'the graphs as you wrote it">your Triton kernel</span>')
    if notes.checkpoint_calls:
        out.append(f'<span class="b b-checkpoint" title="checkpoint calls made here that the graph captured">'
                   f'checkpoint ×{notes.checkpoint_calls}</span>')
    if notes.recomputed_ops:
        out.append(f'<span class="b b-checkpoint" title="ops of this line the backward recomputes (activation '
                   f'checkpointing)">recomputed in backward: {count(notes.recomputed_ops, "op")}</span>')
    if notes.graphs:
        out.append(f'<span class="b b-graph" title="graphs that captured this line">{html_text(said(notes.graph_ids, " "))}</span>')
    elif notes.calls:
        out.append(f'<span class="b b-call" title="graphs that hold ops of functions this line calls">via call: '
                   f'{html_text(_ids_text(notes.call_compile_ids, dirs))}</span>')
    if notes.graph_breaks:
        out.append(f'<span class="b b-break" title="compilations whose graph broke here">graph break: '
                   f'{html_text(said(notes.break_ids, " "))}</span>')
    elif notes.eager and not notes.ran_eagerly:
        out.append('<span class="b b-eager">eager</span>')
    for e in notes.ran_eagerly:  # (the note below says it whole)
        short = (f'{e["function"]} skipped' if e["kind"] == "skipped_frame"
                 else f'uncompiled {e["op"].rsplit(".", 1)[-1]} call')
        out.append(f'<span class="b b-eager" title="{html_text(e["text"])}">eager: {html_text(short)}</span>')
    if notes.recompiled:
        out.append(f'<span class="b b-guard" title="torch.compile compiled this frame again because of this line: '
                   f'{html_text(said(notes.recompiled_title, "; "))}">recompiled '
                   f'{html_text(said(notes.recompiled_ids, " "))}</span>')
    for changed in notes.state_changes:
        short = {"hook": "hook registered late", "requires_grad": "requires_grad set"}.get(changed["kind"],
                                                                                          "mode switched")
        out.append(f'<span class="b b-guard" title="{html_text(changed["text"])}">{html_text(short)} '
                   f'({html_text(changed["recompile"])})</span>')
    for cid, why in notes.failed_recompiles.items():
        out.append(f'<span class="b b-guard" title="a guard of this line failed, and recompiling failed: '
                   f'{html_text(why)}">recompile {html_text(cid)} failed</span>')
    if notes.kernels:
        graphs = notes.kernel_graphs
        # Split where a backward is: "kernels" alone say as much of a forward or inference graph.
        text = (" + ".join(f"{n} {_GRAPH_ABBREVIATIONS.get(g, g or 'other')}" for g, n in graphs.items()) + " kernels"
                if "backward" in graphs else count(len(notes.kernels), "kernel"))
        title = ("; ".join(f"{count(n, 'kernel')} of {g or 'other'} graphs" for g, n in graphs.items())
                 if any(graphs) else "")
        title_attr = f' title="{html_text(title)}"' if title else ""
        out.append(f'<span class="b b-kernel"{title_attr}>{html_text(text)}</span>')
    if notes.symbols:
        out.append(f'<span class="b b-symbol">{count(len(notes.symbols), "shape note")}</span>')
    return "".join(out)


def _lines_html(page: Page, f: SourceFile, dirs: _CompileDirs) -> Iterator[Markup]:
    """The file's lines, in parts, as the template writes them (a line's notes grow with the compile ids)."""
    return ascii_parts(_line_rows(page, f, dirs))


def _line_rows(page: Page, f: SourceFile, dirs: _CompileDirs) -> Iterator[str]:
    previous = 0
    for n in (*f.shown_lines, f.line_count + 1):
        if n > previous + 1:
            gap_start, last = previous + 1, n - 1
            span = f"line {gap_start}" if gap_start == last else f"lines {gap_start}–{last}"
            # One element, whatever the gap's length (a log of a few bytes can name line 10**9): a link to a line
            # in it (a line of a function on its transformed-code page) lands on it, by its first line (f.anchor).
            yield f'<div class="src-gap" id="{line_anchor(gap_start)}">⋯ {span}: not quoted in the log ⋯</div>'
        if n > f.line_count:
            break
        previous = n
        text = f.text.get(n)
        notes = f.notes.get(n)
        status = notes.status if notes else ""
        cls = f"src-line s-{status}" if status else "src-line"
        title = f' title="{STATUS_TITLES[status]}"' if status else ""
        code = escape(code_text(text)) if text is not None else Markup('<span class="muted">(not quoted in the log)</span>')
        anchor = line_anchor(n)
        row = (f'<div class="{cls}" id="{anchor}"{title}><a class="ln" href="#{anchor}">{n}</a>'
               f'<a class="lt" href="#{anchor}" tabindex="-1">{code}</a>')  # one tab stop a line: its number
        if notes:
            yield f'{row}<span class="badges">{_badges(notes, dirs)}</span>'
            yield from _notes_html(page, f, n, dirs)
            yield "</div>"
        else:
            yield row + "</div>"


def _page(page: Page, f: SourceFile, dirs: _CompileDirs) -> Iterator[bytes]:
    breaks = [{"line": b.location.line, "href": f"#{f.anchor(b.location.line) or ''}", "reason": b.reason,
               "torch_text": b.torch_text,
               "eager": [_eager_link(page, f, path, line) for path, line in b.eager_lines] if len(b.eager_lines) > 1 else []}
              for b in page.results.sources.breaks_in(f.path)]
    failed = [{"line": n, "href": f"#{f.anchor(n) or ''}", "crashes": notes.crashes, "failures": notes.failures}
              for n, notes in f.failed_lines]
    return page.stream("source.html", "../", f=f, lines_html=_lines_html(page, f, dirs), breaks=breaks,
                       failed=failed, debug_handles=f.debug_handles)


def _eager_link(page: Page, f: SourceFile, path: str, line: int) -> dict[str, str | None]:
    """A line that ran eagerly because of a break: its row on this page, or the page that shows it, if one does."""
    return {"text": f.line_name(path, line), "href": _line_href(page, f, path, line)}


def _line_href(page: Page, f: SourceFile, path: str, line: int) -> str | None:
    """The link to a line's row: on this page (f's), or on the page of its own file; None where no page shows it."""
    if path == f.path:
        anchor = f.anchor(line)
        return f"#{anchor}" if anchor else None
    other = page.line_link(path, line)
    return f"../{other.url}" if other else None

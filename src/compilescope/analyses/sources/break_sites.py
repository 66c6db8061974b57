"""The distinct graph breaks (reason and innermost user line) read from their user tracebacks, with the lines that
ran eagerly because of each and the resume functions that took over after it (graph_break_sites, once a report: the
insights and the source analysis both read it), all of it noted on the lines (add_breaks); the summary's breaks given
those lines (add_eager_lines)."""

from __future__ import annotations

from ...model.ids import compilation_key
from ...model.trace import Trace
from ..compiled_frames import compiled_frame
from ..graph_breaks import GraphBreaks
from ..graph_breaks.resume_names import resume_of
from ..graph_breaks.reason_text import ARTIFACT as GRAPH_BREAK_ARTIFACT, BREAK_HEADER, fsdp_hook_call, parse_reason
from ..user_locations import UserLocation, traceback_frames
from . import GraphBreakSite, NoteAt, resumed_function
from .file_text import Quotes, is_user_source


def _user_traceback(text: str) -> str:
    if "User code traceback:" not in text:
        return ""
    body = text.rsplit("User code traceback:", 1)[1]
    return body.split("Traceback (most recent call last):", 1)[0]


def _eager_frames(frames: list[UserLocation], compiled_name: str | None) -> list[UserLocation]:
    """The traceback from the compiled frame inward: those statements ran eagerly after the break."""
    if compiled_name:
        for i in range(len(frames) - 1, -1, -1):
            if frames[i].function == compiled_name:
                return frames[i:]
    return frames[-1:]


def resume_frames(trace: Trace) -> dict[tuple[str, int, str], list[str]]:
    """(path, line, torch's name) -> compile ids of the resume functions `torch_dynamo_resume_in_<f>_at_<line>`."""
    found: dict[tuple[str, int, str], list[str]] = {}
    for entry in trace.sorted_compiles():
        frame = compiled_frame(entry)
        if frame is None:
            continue
        resumed = resume_of(frame[2])
        if resumed is not None:
            ids = found.setdefault((frame[0], resumed[1], frame[2]), [])
            if compilation_key(entry.compile_id) not in ids:
                ids.append(compilation_key(entry.compile_id))
    return found


class BreakSites:
    """What graph_break_sites read of the breaks' tracebacks. (Not saved: no dataclass.)"""

    def __init__(self, sites: list[GraphBreakSite], quoted: list[UserLocation],
                 resumes: dict[tuple[str, int, str], list[str]]) -> None:
        self.sites = sites  # the distinct breaks, in the order first seen
        self.quoted = quoted  # every frame of their tracebacks, in order, each once: what they quote of each line
        self.resumes = resumes  # resume_frames'

    def quote(self, quotes: Quotes) -> None:
        """The tracebacks' frames quoted, as read."""
        for f in self.quoted:
            quotes.add(f.filename, f.line, f.code, f.function)


def graph_break_sites(trace: Trace) -> BreakSites:
    """Distinct graph breaks with the lines that ran eagerly because of them and the resume functions after them."""
    quoted: dict[tuple[str, int, str | None, str | None], UserLocation] = {}  # (Quotes.add's arguments, each once)
    sites: dict[tuple, GraphBreakSite] = {}
    statements: dict[int, set[tuple[str, int]]] = {}  # break -> the statements of compiled frames it stopped at
    eager_seen: dict[int, set[tuple[str, int]]] = {}  # break -> its eager_lines, as a set (not a scan of the list)
    for entry in trace.sorted_compiles():
        key = compilation_key(entry.compile_id)
        frame = compiled_frame(entry)
        for artifact in entry.artifacts:
            if artifact.name != GRAPH_BREAK_ARTIFACT or artifact.payload is None:
                continue
            text = trace.payload_text(artifact.payload)
            frames = traceback_frames(_user_traceback(text))
            for f in frames:
                quoted.setdefault((f.filename, f.line, f.code, f.function), f)
            user = [f for f in frames if is_user_source(f.filename)]
            if not user:
                continue
            reason = parse_reason(text)["reason"]
            inner = user[-1]
            site = sites.get((reason, inner.key))
            if site is None:
                site = sites[(reason, inner.key)] = GraphBreakSite(len(sites), reason, inner)
                header = BREAK_HEADER.search(text)
                if header is not None and not is_user_source(header["file"]):
                    placed = (header["file"], int(header["line"]))
                    function = next((f.function for f in reversed(frames) if f.key == placed), None)
                    site.torch_location = UserLocation(placed[0], placed[1], function)
                    site.in_fsdp_hook = fsdp_hook_call(text, site.torch_location)[0]
            if key not in site.compile_ids:
                site.compile_ids.append(key)
            # User tracebacks name a resume function by the function it resumes.
            compiled_name = frame[2] if frame else None
            compiled_name = resumed_function(compiled_name) or compiled_name
            eager = _eager_frames(user, compiled_name)
            statements.setdefault(site.index, set()).add(eager[0].key)
            seen = eager_seen.setdefault(site.index, set())
            for f in eager:
                if f.key not in seen:
                    seen.add(f.key)
                    site.eager_lines.append(f.key)
                if f.code:
                    site.quoted.setdefault(f.key, f.code)
    # A resume function `torch_dynamo_resume_in_f_at_N` took over after the break whose eager statement is f's line N.
    # (by the line each resumes after: each break's statements look theirs up, not every resume function each)
    resumes = resume_frames(trace)
    resumed_after: dict[tuple[str, int], list[str]] = {}
    for rpath, rline, name in resumes:
        resumed_after.setdefault((rpath, rline), []).append(name)
    for site in sites.values():
        for statement in sorted(statements.get(site.index, ())):
            for name in resumed_after.get(statement, ()):
                if name not in site.resume_functions:
                    site.resume_functions.append(name)
    return BreakSites(sorted(sites.values(), key=lambda s: s.index), list(quoted.values()), resumes)


def add_eager_lines(breaks: GraphBreaks, sites: list[GraphBreakSite]) -> None:
    """Each distinct graph break of the summary gets the lines that ran eagerly because of it."""
    by_key = {(s.reason, s.location.key): s for s in sites}
    for brk in breaks.breaks:
        site = by_key.get((brk.reason, brk.location.key)) if brk.location else None
        if site is None:
            continue
        brk.eager_lines = [UserLocation(p, n, None, site.quoted.get((p, n))) for p, n in site.eager_lines]
        brk.resume_functions = list(site.resume_functions)


def add_breaks(sites: list[GraphBreakSite], resumes: dict[tuple[str, int, str], list[str]], failed_keys: set[str],
               at: NoteAt) -> None:
    """Each graph break on its line, its index on each line that ran eagerly because of it, and each resume function
    (resumes: resume_frames') on the line it starts after, with its compilations (those in failed_keys failed)."""
    for site in sites:
        n = at(site.location.filename, site.location.line)
        if n is not None:
            n.graph_breaks.append({"index": site.index, "reason": site.reason, "compile_ids": site.compile_ids,
                                   "resume_functions": site.resume_functions, "torch_text": site.torch_text,
                                   "note": site.note})
        for path, line in site.eager_lines:
            n = at(path, line)
            if n is not None and site.index not in n.eager:
                n.eager.append(site.index)
    for (path, line, name), ids in resumes.items():
        n = at(path, line)
        if n is not None:
            n.resumes.append({"function": name, "compile_ids": ids, "failed": [c for c in ids if c in failed_keys]})

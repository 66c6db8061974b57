"""Options of the report renderers (one dataclass, shared by html and json, which must agree on URLs)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Mapping

from ..lazy_regex import lazy_compile
from ..model.ids import CompileId
from ..model.names import safe_stem
from ..model.records import NamedTuple, dataclass
from ..model.trace import CODE, DUMP, LINK, NO_COMPILE_ID_DIR, Artifact, Trace, dump_file_name

if TYPE_CHECKING:
    from ..analyses.sources import Sources


@dataclass(frozen=True)
class ReportOptions:
    """What the command line asks of a report's pages (tlparse's flags and ours)."""

    plain_text: bool = False  # -p: output code as .txt instead of highlighted HTML
    custom_header_html: str = ""  # trusted: the user passed it on the command line
    verbose: bool = False
    export: bool = False  # -e: the Draft Export Report is the index (render/html/export.py)
    # -i: a provenance page for every compile directory, as tlparse writes, an empty one saying so where there is
    # nothing to map (without it, pages only where there is something to map)
    inductor_provenance: bool = False
    # With export: the number in each exported program's file name, by its Artifact.number, as tlparse numbers it
    # (ExportReport.numbered_as_tlparse; set by render/report.py from the results). A tuple: options stay hashable.
    export_program_numbers: tuple[tuple[int, int], ...] = ()
    # A report that is one of several (the demo's, a batch's): every page links back to the page listing them.
    up_url: str | None = None  # relative to the report's root, e.g. "../index.html"
    up_label: str = ""  # what that page is, e.g. "demo"


def artifact_url(artifact: Artifact, options: ReportOptions) -> str:
    """Where an artifact's page is, relative to the report root (tlparse's layout)."""
    if artifact.display == LINK:
        return artifact.url or ""
    if artifact.display == DUMP:
        return f"dump_file/{artifact.filename}"  # the page the model chose for its name (model/dump_pages.py)
    directory = _compile_dir(artifact.compile_id) if artifact.compile_id else NO_COMPILE_ID_DIR
    return f"{directory}/{artifact_file_name(artifact, options)}"


def artifact_file_number(artifact: Artifact, options: ReportOptions) -> int:
    """The number in the name of the file written for an artifact: Artifact.file_number, but under --export an
    exported program's is tlparse's (export_program_numbers)."""
    if options.export and artifact.kind == "exported_program":
        for number, tlparse_number in options.export_program_numbers:  # (a log has one or a few)
            if number == artifact.number:
                return tlparse_number
    return artifact.file_number


def artifact_file_name(artifact: Artifact, options: ReportOptions) -> str:
    """The name of the file written for an artifact: with -p, output code is a .txt file, not a page."""
    filename = artifact.filename
    if options.export and artifact.kind == "exported_program":
        return f"{safe_stem(artifact.name)}_{artifact_file_number(artifact, options)}.{artifact.ext}"
    if options.plain_text and artifact.display == CODE and artifact.ext == "html":
        return filename[: -len(".html")] + ".txt"
    return filename


@functools.lru_cache(maxsize=1024)
def _compile_dir(compile_id: CompileId) -> str:
    """compile_id.dir_name(), remembered: every link to an artifact asks (~1,000 times a report for a few dozen)."""
    return compile_id.dir_name()


_MD5 = lazy_compile(r"[0-9a-f]{32}")


def payload_file(md5: str) -> str:
    """Where a payload kept by its md5 is (raw.jsonl points at it)."""
    return f"payloads/{md5 if _MD5.fullmatch(md5) else safe_stem(md5)}.txt"


def kept_by_md5(artifact: Artifact, options: ReportOptions) -> bool:
    """A payload tlparse writes no file of its own for, which it keeps as payloads/<md5>.txt (raw.jsonl points there),
    so ours does the same beside our own file of it. Without --export: a kind of OWN_SERIES_KINDS (exported_program
    and the kinds tlparse does not know). With --export tlparse writes only the exported program's file
    (exported_program_N.txt, which ours writes under tlparse's name and points raw.jsonl at), so every other payload
    is kept by md5: an export that failed leaves nothing else (torch_version, make_fx_fail_partial)."""
    if artifact.md5 is None or artifact.payload is None:
        return False
    if options.export:
        return artifact.kind != "exported_program"
    return artifact.own_number is not None


def readable_url(artifact: Artifact, options: ReportOptions) -> str | None:
    if artifact.readable is None:
        return None
    if artifact.readable is False:
        return ""  # tlparse's value when the payload could not be read as JSON
    url = artifact_url(artifact, options)
    return url.rsplit(".", 1)[0] + "_readable.html"


def dump_file_url(name: str, pages: Mapping[str, str] | None = None) -> str:
    """One page per dumped source, shared by every compile id (stack frames link into it).

    pages: the trace's dump_pages (distinct pages for names with the same safe file name).
    """
    return f"dump_file/{(pages or {}).get(name) or dump_file_name(name)}"


class LineLink(NamedTuple):
    """Where a link to a line of code lands in the report, and the title that says so."""

    url: str  # relative to the report's root, with the line's anchor
    title: str


def line_link(filename: str | None, line: int | None, sources: Sources, trace: Trace) -> LineLink | None:
    """The page that shows a named line of code (a stack's frame, a graph break's place): the source page of a user's
    file at the row that shows the line, where the report has one (analyses/sources/: its files); else the page of a
    source torch dumped (`<eval_with_key>.5`, compiled autograd's graph) at that line; else None. Every page links a
    line through here, so a frame lands on the same page wherever a stack is shown; its title, the path then what the
    page shows of the line, says which."""
    if not filename:
        return None
    found = sources.file(filename)
    if found is not None:
        anchor = found.anchor(line) if line else None  # (None past the file's end: its top)
        return LineLink(found.page + (f"#{anchor}" if anchor else ""),
                        f"{filename}: what {sources.tool} did to {'this line' if anchor else 'each line'}")
    if filename in trace.dump_files:
        return LineLink(dump_file_url(filename, trace.dump_pages) + (f"#L{line}" if line else ""),
                        f"{filename}: {'this line of ' if line else ''}its source as torch dumped it into the log")
    return None


_URL_IGNORED = lazy_compile(r"[\x00-\x20\x7f]")  # browsers drop these inside a URL's scheme


def safe_link_url(url: str | None) -> str | None:
    """A `link` event's url if it may be a clickable link: http(s) only.

    A log is untrusted: `javascript:`, `data:`, `file:` or relative URLs are shown
    as text, never as an href.
    """
    if not url:
        return None
    scheme, sep, _ = _URL_IGNORED.sub("", url).partition(":")
    if sep and scheme.lower() in ("http", "https") and url.strip() == url and not _URL_IGNORED.search(url):
        return url
    return None

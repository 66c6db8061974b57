"""What each compile captured of the user's lines: the frame it compiled (a line's frames, and the code's last line
for a rebuilt file's function), the lines its stack passed through (quoted, and linked from its page), and the FX
graph nodes each line became (from the graph dump's node comments). Its guards are read later (guards.py)."""

from __future__ import annotations

from typing import Iterable

from ...model.ids import compilation_key
from ...model.payloads import PayloadRef
from ...model.trace import Compile, Trace
from ..compiled_frames import compiled_frame
from ..fx_sites import GRAPH_ARTIFACT, FxNodeSite, fx_node_sites
from ..installed_guards import GUARDS_ARTIFACT
from ..provenance import Provenance, UserLine, is_users_file, user_lines_at
from . import NoteAt
from .file_text import Quotes, original_last_line


class Captured:
    """What add_compiles found besides the notes, for the steps after it. (Not saved: no dataclass.)"""

    def __init__(self) -> None:
        # (compile id, its compile, guards payload): read one at a time, by add_installed_guards
        self.guard_sites: list[tuple[str, Compile, PayloadRef]] = []
        self.codes: dict[str, dict[tuple[str, int], int | None]] = {}  # file -> SourceFile.codes
        self.stack_lines: dict[str, set[int]] = {}  # path -> the lines the compiles' stacks pass through
        self.graph_sites: dict[str, list[FxNodeSite]] = {}  # compile id -> its graph dump's node sites


def add_compiles(trace: Trace, provenance: Provenance, failed_keys: set[str], at: NoteAt,
                 quotes: Quotes) -> Captured:
    """Each compile, in compile order: its stack's lines quoted, its frame on its first line (add_frame), its graphs'
    nodes on the lines they came from (add_graph_nodes); its guards kept for later. failed_keys: the compilations that
    failed (failed_compilations)."""
    captured = Captured()
    # (path, line, compile id) of each LineNotes.frames entry: a scan of a line's frames per compile was quadratic in
    # its compiles (a function compiled after 20,000 resets)
    framed: set[tuple[str, int, str]] = set()
    named: dict[tuple[str, int, str], set[str]] = {}  # (path, line, compile id) -> LineNotes.graphs[compile id], as a set
    # compile id -> its kernels' stacks: they place a graph node FX comments with torch's file (user_lines_at)
    kernel_stacks = {compilation_key(cp.compile_id): [frames for section in cp.sections for kernel in section.kernels
                                                      for frames in kernel.frames]
                     for cp in provenance.compiles.values()}
    for entry in trace.sorted_compiles():
        key = compilation_key(entry.compile_id)
        for f in entry.stack or []:
            quotes.add(f.filename, f.line, f.loc, f.name)
            captured.stack_lines.setdefault(f.filename, set()).add(f.line)  # (its compile's page links each frame)
        add_frame(trace, entry, key, failed_keys, framed, captured.codes, at)
        for artifact in entry.artifacts:
            if artifact.name == GRAPH_ARTIFACT and artifact.payload is not None:
                sites_of_graph = fx_node_sites(trace.payload_text(artifact.payload))
                captured.graph_sites.setdefault(key, []).extend(sites_of_graph)
                add_graph_nodes(sites_of_graph, key, kernel_stacks.get(key, ()), at, quotes, named)
            elif artifact.name == GUARDS_ARTIFACT and artifact.payload is not None:
                captured.guard_sites.append((key, entry, artifact.payload))
    return captured


def add_frame(trace: Trace, entry: Compile, key: str, failed_keys: set[str], framed: set[tuple[str, int, str]],
              codes: dict[str, dict[tuple[str, int], int | None]], at: NoteAt) -> None:
    """The frame a compile compiled, on its first line (once a compile id: framed), whether it failed; and, for a
    rebuilt file, the last line its logged bytecode reaches (codes)."""
    frame = compiled_frame(entry)
    if frame is None:
        return
    n = at(frame[0], frame[1])
    if n is None:
        return
    if (frame[0], frame[1], key) not in framed:
        framed.add((frame[0], frame[1], key))
        n.frames.append({"compile_id": key, "function": frame[2], "failed": key in failed_keys})
    # Each attempt of a compile id may hold the bytecode (torch's at attempt 0, compilescope's at the last).
    file_codes = codes.setdefault(frame[0], {})
    if file_codes.get((frame[2], frame[1])) is None:
        file_codes[(frame[2], frame[1])] = original_last_line(trace, entry, frame[2])


def add_graph_nodes(sites_of_graph: list[FxNodeSite], key: str, kernel_stacks: Iterable[list[UserLine]],
                    at: NoteAt, quotes: Quotes, named: dict[tuple[str, int, str], set[str]]) -> None:
    """A graph's nodes, by name, on the user lines their FX comments name, each once; a node whose comment names
    torch's file (through a subclass's __torch_function__: _tensor.py) on the user lines its kernels' stacks reach it
    from. named: the names each line holds of each compile so far (a scan of the line's list per node was quadratic
    in the nodes of one line)."""
    for node_site in sites_of_graph:
        quotes.add(node_site.path, node_site.line, node_site.code)
        places = [(node_site.path, node_site.line)]
        if not is_users_file(node_site.path):
            places = [(u.file, u.line) for u in user_lines_at(kernel_stacks, *places[0])]
        for path, line in places:
            n = at(path, line)
            if n is None:
                continue
            names = n.graphs.setdefault(key, [])
            seen = named.setdefault((path, line, key), set())
            for name in node_site.nodes:
                if name not in seen:
                    seen.add(name)
                    names.append(name)

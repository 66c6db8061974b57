"""The provenance of a log that logged some (provenance_of, for analyze_provenance in analysis.py): per compile id,
its sections, one per Inductor graph, with their line maps, kernels and kernel links, and which graph calls another
graph's kernel. A module of its own, imported with the modules it calls only for a log with provenance artifacts."""

from __future__ import annotations


from ...lazy_regex import lazy_compile
from ...model.ids import CompileId
from ...model.payloads import json_object
from ...model.source_files import NO_FILES, SourceFiles
from ...model.trace import JSON, Artifact, Compile, Trace
from ..cached_lines import RunLines, run_lines
from ..line_map import packed
from ..fx_sites import NODE_MAPPINGS, POST_GRAD, code_title, graph_kind
from . import KERNEL_STACK_TRACES, CompileProvenance, GraphRef, KeptLineMap, KernelTrace, Panel, Provenance, ProvenanceSection, UserLine
from .inferred_nodes import infer_kernel_nodes
from .kernel_notes import kernel_work, placed_apart_from_user_kernels, user_kernel_notes
from .line_mappings import (
    GraphLines, LineMap, dict_or_empty, kernel_lines, line_maps, line_mappings, node_lines, text_lines, without_leading_empty,
)
from .stack_traces import kernel_traces, on_run_lines

# Which artifacts fill the panels, in tlparse's order of preference (the post-grad graph's: fx_sites.POST_GRAD).
PRE_GRAD = ("before_pre_grad_graph", "inductor_pre_grad_graph")
PY_CODE = "inductor_output_code"
CPP_CODE = "inductor_aot_wrapper_code"


def _named(artifacts: list[tuple[str, Artifact]], prefix: str) -> list[Artifact]:
    # tlparse matches output file names by prefix ("inductor_output_code_<hash>.html" too).
    return [a for filename, a in artifacts if filename.startswith(prefix)]


def _first_kind(artifacts: list[tuple[str, Artifact]], prefixes: tuple[str, ...]) -> list[Artifact]:
    for prefix in prefixes:
        found = _named(artifacts, prefix)
        if found:
            return found
    return []


# The comment torch writes above a kernel call when provenance is on: `# [Provenance debug handles] triton_x_0:3` in
# Python, `// ...` in the AOTInductor C++ wrapper. One kernel call a comment.
_DEBUG_HANDLE_MARK = "[Provenance debug handles]"
_DEBUG_HANDLE_COMMENT = lazy_compile(r"^\s*(?:#|//)\s*\[Provenance debug handles\]\s*(\S+)\s*$")


def graph_labels(compile_id: CompileId | None, titles: list[str]) -> list[tuple[str, int | None]]:
    """What a compile id's provenance sections are called, from their AOT IDs (titles): the compile id and the graph's
    kind, `[1/0] backward`, as a reader knows them (torch's `1_backward` numbers the graphs AOTAutograd compiled in the
    whole run). Where the compile id has several graphs of a kind (DDPOptimizer compiles each submodule on its own:
    `0_forward`, `1_forward`, `2_forward`, then their backwards), each is numbered by its AOT graph's place among the
    compile id's, so that a forward and its backward share it (`[0/0] forward 3`, `[0/0] backward 3`). A title that
    names no kind (`AOTInductor`) follows the compile id as it is. Each label comes with its number (None: none)."""
    cid = str(compile_id) if compile_id is not None else "(no compile id)"
    kinds = [graph_kind(t) for t in titles]
    several = {k for k in kinds if k is not None and kinds.count(k) > 1}
    places: dict[str, int] = {}  # an AOT graph's number (`2` of `2_backward`) -> its place, from 1, in log order
    for title, kind in zip(titles, kinds):
        if kind in several:
            places.setdefault(title.rpartition("_")[0], len(places) + 1)
    labels: list[tuple[str, int | None]] = []
    for title, kind in zip(titles, kinds):
        if kind is None:
            labels.append((f"{cid} {title}", None))
        elif kind in several:
            number = places[title.rpartition("_")[0]]
            labels.append((f"{cid} {kind} {number}", number))
        else:
            labels.append((f"{cid} {kind}", None))
    return labels


def debug_handle_names(lines: list[str]) -> set[str]:
    """The kernels (`name:handle`) the code's debug-handle comments name: the kernel calls this code makes."""
    return {m[1] for line in lines if _DEBUG_HANDLE_MARK in line for m in [_DEBUG_HANDLE_COMMENT.match(line)] if m}


def _panel(a: Artifact | None, what: str, skip: int = 0) -> Panel:
    if a is None:
        return Panel(f"{what} (not in the log)")
    return Panel(a.name, a.number, a.payload, skip)


def compile_provenance(trace: Trace, entry: Compile, parsed: dict[int, list[KernelTrace]] | None = None,
                       run: RunLines | None = None, files: SourceFiles = NO_FILES) -> CompileProvenance | None:
    """parsed: the kernel_traces of stack traces artifacts already parsed (by artifact number), placed on this run's
    lines; run: this run's lines (run_lines), where the compile hit a cache; files: the user's files as ingest read
    them (user_kernels.files_wanted: a user kernel's def line is read there)."""
    arts = [(a.filename, a) for a in entry.artifacts if a.payload is not None]  # file names made once, not per kind
    mappings = [a for a in _named(arts, NODE_MAPPINGS) if a.display == JSON]
    if not mappings:
        return None
    pres = _first_kind(arts, PRE_GRAD)
    posts = _first_kind(arts, POST_GRAD)
    py_codes, cpp_codes = _named(arts, PY_CODE), _named(arts, CPP_CODE)
    traces = [a for a in _named(arts, KERNEL_STACK_TRACES) if a.display == JSON]
    codes = cpp_codes or py_codes
    pre = pres[-1] if pres else None

    def last(xs: list[Artifact]) -> Artifact | None:
        return xs[-1] if xs else None

    def text(a: Artifact | None) -> str:  # payloads are read here, one at a time, not kept
        return trace.payload_text(a.payload) if a is not None else ""

    def lines_of(a: Artifact | None) -> tuple[list[str], int]:
        """The code's lines as its panel numbers them, and how many empty lines it drops."""
        all_lines = text_lines(text(a))
        lines = without_leading_empty(all_lines)
        return lines, len(all_lines) - len(lines)

    # One section per Inductor graph when the artifacts pair up (forward, backward, ...);
    # otherwise one section of the last of each, which is what tlparse shows.
    n = len(mappings)
    if n > 1 and len(posts) == n and len(codes) == n:
        groups = [(mappings[i], posts[i], codes[i], traces[i] if len(traces) == n else last(traces)) for i in range(n)]
    else:
        groups = [(mappings[-1], last(posts), last(codes), last(traces))]

    pre_lines = text_lines(text(pre))
    pre_nodes = node_lines(pre_lines)  # the same pre-grad graph for every section
    sections = []
    for i, (mapping_a, post_a, code_a, traces_a) in enumerate(groups):
        node_mappings = json_object(text(mapping_a))
        post_lines = text_lines(text(post_a))
        post_graph = GraphLines(post_lines)  # cut once for its three readers
        code_text = text(code_a)
        lines, skip = lines_of(code_a)
        language = "cpp" if code_a is not None and code_a in cpp_codes else "python"
        if traces_a is None:
            kernels = []
        elif parsed is not None and traces_a.number in parsed:
            kernels = parsed[traces_a.number]
        else:
            kernels = on_run_lines(kernel_traces(text(traces_a)), run)
        # Every kernel this section links is found in the code in one pass (kernel_lines), used for the maps
        # and for the links: the code is indexed once.
        mapped = dict_or_empty(node_mappings.get("cppCodeToPost"))
        where = kernel_lines(lines, sorted(set(mapped) | {k.name for k in kernels}), language)
        handles = debug_handle_names(lines)
        other_graphs = [k.name for k in kernels if handles and k.debug_handle is not None and k.name not in handles]
        if language == "cpp" and code_a is not None:
            # An AOTInductor package's stack traces are logged outside any compile id, as its wrapper is: any other
            # kernel stack traces logged there land in its section too. A kernel its wrapper names nowhere (neither
            # defines nor calls) is no kernel of it: peer inductor_provenance_extended_log's list names five (vllm's
            # layernorm.py, rope.py) beside a wrapper of three other Triton kernels and an mm.
            listed = set(other_graphs)
            other_graphs += [k.name for k in kernels if k.name not in where and k.name not in listed]
        if len(groups) == 1:
            # tlparse computes both code maps, each from the last artifact of its kind (one of them is this code).
            other = py_codes if language == "cpp" else cpp_codes
            other_lines = lines_of(last(other))[0]
            other_where = kernel_lines(other_lines, sorted(mapped), "python" if language == "cpp" else "cpp")
            py_where, cpp_where = (other_where, where) if language == "cpp" else (where, other_where)
        else:
            py_where, cpp_where = (where, {}) if language == "python" else ({}, where)
        title = code_title(lines, "AOTInductor" if language == "cpp" else f"graph {i + 1}")
        section = ProvenanceSection(
            title=title,
            language=language,
            pre=_panel(pre, "pre-grad graph"),
            post=_panel(post_a, "post-grad graph"),
            code=_panel(code_a, "generated code", skip),
            mappings=line_maps(node_mappings, pre_nodes, post_graph.node_lines(), py_where, cpp_where),
            kernels=kernels,
            kernel_traces_artifact=traces_a.number if traces_a is not None else None,
            graph=graph_kind(title),
            other_graphs=other_graphs,
            noted_work=kernel_work(node_mappings, post_graph, noted_only=True),
            user_kernel_notes=user_kernel_notes(code_text, node_mappings, post_lines, kernels, files),
        )
        section.kernels, section.apart_notes = placed_apart_from_user_kernels(code_text, node_mappings, post_lines, kernels)
        # Another graph's kernel is named in this code only by its base name (`extern_kernels.mm`, at another call):
        # it links nowhere here and infers no nodes. (The maps above keep tlparse's rule.)
        skipped = set(other_graphs)
        _add_kernel_links(section, set(mapped), {k: v for k, v in where.items() if k not in skipped} if skipped else where,
                          post_graph, run)
        sections.append(section)
    for section, (label, number) in zip(sections, graph_labels(entry.compile_id, [s.title for s in sections])):
        section.label, section.number = label, number
    if len(groups) == 1 or not (py_codes and cpp_codes):
        # The last section was computed from the last artifact of each kind: what tlparse shows.
        top = sections[-1].mappings
    else:
        top = line_mappings(json_object(text(mappings[-1])), pre_lines, text_lines(text(last(posts))),
                            lines_of(last(py_codes))[0], lines_of(last(cpp_codes))[0])
    # Complete: the maps are packed, as the results keep them until the pages are written (~4 KB, not ~19 KB a
    # compile). A map that is both a section's and the compile id's (one section) stays one object.
    kept: dict[int, KeptLineMap] = {}
    for section in sections:
        section.mappings = {k: _packed_once(v, kept) for k, v in section.mappings.items()}
        section.inferred_code_to_post = _packed_once(section.inferred_code_to_post, kept)
        section.inferred_post_to_code = _packed_once(section.inferred_post_to_code, kept)
    top = {k: _packed_once(v, kept) for k, v in top.items()}
    return CompileProvenance(entry.compile_id, entry.dir_name, top, sections)


def _packed_once(line_map: KeptLineMap, kept: dict[int, KeptLineMap]) -> KeptLineMap:
    found = kept.get(id(line_map))  # (ids of maps alive in the caller)
    if found is None:
        found = kept[id(line_map)] = packed(line_map)
    return found


def _add_kernel_links(section: ProvenanceSection, mapped: set[str], where: dict[str, list[int]], post: GraphLines,
                      run: RunLines | None = None) -> None:
    """Which kernels each code line calls, and inferred maps for kernels the node mappings miss.

    where: kernel_lines of the section's code, for the mapped kernels and those with stack traces."""
    for name in sorted(where):
        for line in where[name]:
            section.code_kernels.setdefault(line, []).append(name)
    unmapped = [k for k in section.kernels if k.name not in mapped and k.name in where]
    code_to_post: LineMap = {}
    post_to_code: LineMap = {}
    for name, post_lines in infer_kernel_nodes(unmapped, post, run).items():
        for line in where[name]:
            if line not in section.code_to_post:
                code_to_post.setdefault(line, []).extend(post_lines)
        for p in post_lines:
            if p not in section.post_to_code:
                post_to_code.setdefault(p, []).extend(where[name])
    section.inferred_code_to_post, section.inferred_post_to_code = code_to_post, post_to_code


def provenance_of(trace: Trace, files: SourceFiles = NO_FILES) -> Provenance:
    """analyze_provenance's finding, for a log with provenance artifacts."""
    result = Provenance()
    parsed: dict[str, list[UserLine]] = {}
    texts: dict[str, str] = {}
    for entry in trace.compiles.values():
        run = run_lines(trace, entry)
        for a in entry.artifacts:
            if a.readable and a.filename.startswith(KERNEL_STACK_TRACES):
                result.kernels[a.number] = on_run_lines(kernel_traces(trace.payload_text(a.payload), parsed, texts), run)
        found = compile_provenance(trace, entry, result.kernels, run, files)  # each stack traces artifact parsed once
        if found is not None:
            result.compiles[entry.compile_id] = found
    place_other_graphs(result)
    return result


def place_other_graphs(provenance: Provenance) -> None:
    """Each section's other_graphs kernel, to the graph whose code calls it (ProvenanceSection.called_by): the last
    section whose stack traces were logged before this one's and list the same call (name and debug handle) as their
    own, with the same stack traces. torch 2.11 adds each graph's kernels to the list it has not cleared, so the
    leftovers are those of the graphs logged just before (in train_break_recompile, [0/0_1]'s backward holds [1/0]'s
    backward's, [0/1_1]'s backward its forward's); a handle restarts when the list is cleared, so the name alone could
    be an older graph's call."""
    order = sorted([(s.kernel_traces_artifact, cp, i, s) for cp in provenance.compiles.values()
                    for i, s in enumerate(cp.sections) if s.kernel_traces_artifact is not None and s.kernels],
                   key=lambda found: found[0])
    own: dict[tuple[str, tuple[str, ...]], GraphRef] = {}  # (kernel call, its stack traces) -> the last graph calling it
    for _, cp, i, s in order:
        others = set(s.other_graphs)
        for k in s.kernels:
            ref = own.get((k.name, tuple(k.traces))) if k.name in others else None
            if ref is not None:
                s.called_by[k.name] = ref
        ref = GraphRef(cp.compile_id, cp.dir_name, i, s.title, s.graph, s.label)
        for k in s.kernels:
            if k.name not in others:
                own[(k.name, tuple(k.traces))] = ref

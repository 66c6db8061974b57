"""The custom ops' calls the log's graphs hold (found_calls): each call in Dynamo's graph under its `# File:` line,
whether AOTAutograd wraps the op as mutating, calls it as functional or dropped the call, and the Triton kernels it
launches under the call's line (a triton_op decomposed)."""

from __future__ import annotations

from ...lazy_regex import lazy_compile
from ...model.ids import compilation_key
from ...model.trace import Compile, Trace
from ..cached_lines import CACHE_HITS
from ..fx_sites import AOT_FORWARD, GRAPH_ARTIFACT, graph_nodes, op_call_sites
from ..user_locations import UserLocation
from . import DroppedCall, FoundCalls, GraphPlace, OpCall


# The graphs AOTAutograd logs: where a mutating op is wrapped in auto_functionalized, a functional one called plainly
AOT_GRAPHS = ("aot_inference_graph", "aot_forward_graph", "aot_joint_graph")
# torch's own op namespaces: not the user's custom ops
TORCH_NAMESPACES = frozenset(("aten", "prims", "prim", "higher_order", "inductor", "quantized", "_quantized",
                              "quantized_decomposed", "_c10d_functional", "c10d_functional", "c10d", "_dtensor",
                              "mkldnn", "mkl", "onednn", "profiler", "_inductor_test", "streams", "fsdp", "symm_mem",
                              "_c10d_functional_autograd", "debugprims", "rngprims", "cuda", "triton", "_higher_order"))




def _op_name(graph_op: str) -> str | None:
    """"mylib::scale" of the graph's `mylib.scale.default` (or of the packet `mylib.scale`, called as the user wrote
    `torch.ops.mylib.scale(x)`); "mylib::scale.out" of an overload's `mylib.scale.out` (Dynamo's graph and
    AOTAutograd's both name it so), as torch names it and its own schema defines it (`lib.define("scale.out(...)")`):
    an op of its own, its writes declared by its own schema; None for torch's own ops."""
    parts = graph_op.split(".")
    if len(parts) not in (2, 3) or parts[0] in TORCH_NAMESPACES:
        return None
    overload = f".{parts[2]}" if len(parts) == 3 and parts[2] != "default" else ""
    return f"{parts[0]}::{parts[1]}{overload}"


# An op named in an AOT graph: `torch.ops.mylib.scale.default(`; wrapped where `auto_functionalized(` (torch's
# `torch.ops.higher_order.auto_functionalized_v2(torch.ops.mylib.scale.default, ...`) comes right before it
_AOT_OP = lazy_compile(r"torch\.ops\.(?P<op>[A-Za-z_][\w.]{0,400})")
_WRAPPERS = ("auto_functionalized(", "auto_functionalized_v2(")


def aot_calls(text: str) -> tuple[set[str], set[str]]:
    """The ops an AOT graph's text calls ("mylib.scale.default", and its packet "mylib.scale": Dynamo's graph names the
    packet where the user called it), and those it wraps in auto_functionalized: read once per compile, looked up per
    call site (a search of the whole text per site was quadratic in a graph of many). A packet is called where any of
    its overloads is (a packet's call may resolve to one: never taken for dropped), wrapped only where its default
    overload is (custom_op_overload_mutation: `mylib.scale.out` wrapped, the packet's call `mylib.scale` run as
    `mylib.scale.default`, plainly)."""
    called: set[str] = set()
    wrapped: set[str] = set()
    for match in _AOT_OP.finditer(text):
        op = match["op"].rstrip(".")
        packet = op.rsplit(".", 1)[0] if op.count(".") == 2 else None
        called.update((op, packet) if packet else (op,))
        if text.endswith(_WRAPPERS, max(0, match.start() - 24), match.start()):
            wrapped.update((op, packet) if packet and op.endswith(".default") else (op,))
    return called, wrapped


# A Triton kernel's launch as AOTAutograd functionalizes it, a triton_op's decomposed or one launched directly:
# `torch.ops.higher_order.triton_kernel_wrapper_functional(kernel_idx = 0, ..., kwargs = {'x_ptr': arg0_1, ...},
# tensors_to_clone = ['x_ptr', 'out_ptr'])`, tensors_to_clone the pointers torch found the kernel stores through
# (torch/_higher_order_ops/triton_kernel_wrap.py reads them from the kernel's own code), whose stores it keeps
_KERNEL_WRAPPER = "torch.ops.higher_order.triton_kernel_wrapper_"
_TENSORS_TO_CLONE = "tensors_to_clone = ["
MAX_CLONE_LIST_CHARS = 4000  # a longer list is not read
_QUOTED = lazy_compile(r"'(?P<name>[^'\n]{1,300})'")


def kernel_launches(aot_text: str) -> dict[tuple[str, int], set[str]]:
    """The lines under whose `# File:` comment AOTAutograd's graphs launch a Triton kernel: (file, line) -> the
    pointers tensors_to_clone lists there (empty where none is stored through)."""
    found: dict[tuple[str, int], set[str]] = {}
    if _KERNEL_WRAPPER not in aot_text:
        return found
    for _, expr, site in graph_nodes(aot_text):
        if site is None or not expr.lstrip().startswith(_KERNEL_WRAPPER):
            continue
        stored = found.setdefault((site.path, site.line), set())
        # (the last occurrence, found by rfind and ended by find within a bound: a regex search tried the bounded
        # list at every occurrence, rescanning up to its bound each time where no `]` came)
        start = expr.rfind(_TENSORS_TO_CLONE)
        if start >= 0:
            start += len(_TENSORS_TO_CLONE)
            end = expr.find("]", start, start + MAX_CLONE_LIST_CHARS + 1)
            if end >= 0 and "\n" not in expr[start:end]:
                stored.update(m["name"] for m in _QUOTED.finditer(expr, start, end))
    return found


def aot_overloads(aot_text: str) -> dict[tuple[str, int], dict[str, set[str]]]:
    """The overloads of the custom ops AOTAutograd's graphs call under each line's `# File:` comment: (file, line) ->
    packet ("mylib.scale") -> its overloads called there ("mylib.scale.out"), wrapped in auto_functionalized or not.
    What a call of the packet in Dynamo's graph (`torch.ops.mylib.scale(l_x_, 2.0, out = l_buf_)`) ran: torch
    resolves the packet by the call's arguments when it traces it, and AOTAutograd's graph names what it resolved."""
    found: dict[tuple[str, int], dict[str, set[str]]] = {}
    for _, expr, site in graph_nodes(aot_text):
        if site is None:
            continue
        for match in _AOT_OP.finditer(expr):
            op = match["op"].rstrip(".")
            if op.count(".") == 2 and _op_name(op) is not None:
                packet = op.rsplit(".", 1)[0]
                found.setdefault((site.path, site.line), {}).setdefault(packet, set()).add(op)
    return found


def aot_overload_order(aot_text: str) -> tuple[dict[tuple[str, int], dict[str, list[int]]], dict[str, int]]:
    """Which of an AOT graph's calls of each custom op's overload lie under each line's `# File:` comment: (file, line)
    -> overload ("mylib.scale.out") -> its places among the graph's calls of that overload (0 the first); and how
    many calls of each overload the graph holds. The output code calls an overload as often, in the graph's order."""
    under: dict[tuple[str, int], dict[str, list[int]]] = {}
    calls: dict[str, int] = {}
    for _, expr, site in graph_nodes(aot_text):
        stripped = expr.lstrip()
        if not stripped.startswith("torch.ops."):
            continue
        op = stripped[len("torch.ops."):].split("(", 1)[0]
        if op.count(".") != 2 or _op_name(op) is None:
            continue
        at = calls[op] = calls.get(op, 0) + 1
        if site is not None:
            under.setdefault((site.path, site.line), {}).setdefault(op, []).append(at - 1)
    return under, calls


def _left_out_on_line(sites: list[tuple[str, str, tuple[str, int], bool]], unused: list[bool],
                      under: dict[tuple[str, int], dict[str, list[int]]], wrapped: set[str]) -> set[int]:
    """Which calls (indexes into sites, as _places takes them) AOTAutograd left out of a line that still runs the op:
    where a line holds more calls of an overload in Dynamo's graph than in AOTAutograd's forward graph, and as many of
    them have their result unused as are missing, those are the calls it left out (a functional op's call whose result
    is unused is dead code to it; one_left_out's two scale.out calls on line 63, one kept). Not where a call of the
    op's packet on the line does not show its overload, or the unused calls are not as many: which ones, not known;
    nor for an overload AOTAutograd wraps in auto_functionalized (wrapped): a mutating op's call is kept, and those
    wrapped calls are not counted under its line (custom_op_overload_mutation [1/0])."""
    calls: dict[tuple[tuple[str, int], str], list[int]] = {}  # (line, overload) -> its calls there
    unshown: set[tuple[tuple[str, int], str]] = set()  # (line, packet) with a call whose overload is not shown
    for i, (graph_op, ran, line, resolved) in enumerate(sites):
        if resolved:
            calls.setdefault((line, ran), []).append(i)
        else:
            unshown.add((line, graph_op))
    left_out: set[int] = set()
    for (line, ran), there in calls.items():
        missing = len(there) - len(under.get(line, {}).get(ran, []))
        dead = [i for i in there if unused[i]]
        if missing > 0 and len(dead) == missing and ran not in wrapped and (line, ran.rsplit(".", 1)[0]) not in unshown:
            left_out.update(dead)
    return left_out


def _places(entry: Compile, graph: str, sites: list[tuple[str, str, tuple[str, int], bool]], nths: list[int],
            under: dict[tuple[str, int], dict[str, list[int]]], totals: dict[str, int],
            left_out: set[int]) -> list[GraphPlace]:
    """Each call's GraphPlace: sites holds each call's (the op as Dynamo's graph names it, the overload it ran, its
    (file, line), whether the log shows that overload), in the graph's order; nths, which of the graph's calls of its
    op each is (counted over every call, those with no line too, as CompiledCalls counts them where moved_reads looks
    the call up); under and totals, aot_overload_order's
    of AOTAutograd's forward graph; left_out, the calls it left out (placed on none). A call's place among its
    overload's calls is AOTAutograd's, where its line holds as many calls of the overload it kept in Dynamo's graph as
    in AOTAutograd's and none whose overload is not shown: the k-th there is the k-th here (both graphs keep the
    program's order)."""
    shown: dict[tuple[tuple[str, int], str], int] = {}  # (line, overload) -> the kept calls there shown to run it
    unshown: set[tuple[tuple[str, int], str]] = set()  # (line, packet) with a call whose overload is not shown
    for i, (graph_op, ran, line, resolved) in enumerate(sites):
        if resolved and i not in left_out:
            shown[(line, ran)] = shown.get((line, ran), 0) + 1
        elif not resolved:
            unshown.add((line, graph_op))
    places: list[GraphPlace] = []
    taken: dict[tuple[tuple[str, int], str], int] = {}  # (line, overload) -> its calls there so far
    for i, (graph_op, ran, line, resolved) in enumerate(sites):
        nth = nths[i]
        aot_places = under.get(line, {}).get(ran, [])
        ran_at = None
        if resolved and i not in left_out and (line, ran.rsplit(".", 1)[0]) not in unshown \
                and len(aot_places) == shown[(line, ran)]:
            k = taken[(line, ran)] = taken.get((line, ran), -1) + 1
            ran_at = aot_places[k]
        places.append(GraphPlace(entry, graph, graph_op, nth, ran, ran_at, totals.get(ran, 0)))
    return places


FOUND_CALLS = "op_mutations.found_calls"  # found_calls' key in Trace.found_once


def found_calls(trace: Trace) -> FoundCalls:
    """The custom ops' calls the compiles' graphs hold: the graphs scanned once per trace (Trace.found_once), however
    many steps of a report ask (files_wanted, package_markers, modules_wanted, op_mutations: four scans a report were
    four times the work). Its callers only read it."""
    found = trace.found_once.get(FOUND_CALLS)
    if not isinstance(found, FoundCalls):
        found = trace.found_once[FOUND_CALLS] = _scan_graphs(trace)
    return found


def _scan_graphs(trace: Trace) -> FoundCalls:
    # op -> [(call, the compile's AOT graph text)]; ops the log shows AOTAutograd wrapped as mutating
    calls: dict[str, list[OpCall]] = {}
    functional: dict[str, bool] = {}  # op -> every AOT graph that has it calls it plainly
    files: set[tuple[str, int, str | None]] = set()  # (path, line, code) of the call sites: the files to read, checked
    where: dict[str, list[GraphPlace]] = {}  # op -> each call's place in its compile
    left_out: list[DroppedCall] = []  # the calls AOTAutograd dropped, in the log's order
    # op -> each call's pointers the Triton kernels AOTAutograd launches under its line are found storing through
    stored_at: dict[str, list[set[str] | None]] = {}
    overloads: set[str] = set()  # ops called with an overload somewhere (`mylib.scale.default`)
    # op -> which of its calls (indexes into calls[op]) call the packet where AOTAutograd's graph does not say which
    # overload ran: none of the packet's overloads under the call's line (a call left out), or several (two calls on
    # one line that torch resolved to different overloads)
    unresolved: dict[str, set[int]] = {}
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        graphs = [a for a in entry.artifacts if a.name == GRAPH_ARTIFACT and a.payload is not None]
        aot_graphs = [a for a in entry.artifacts if a.name in AOT_GRAPHS and a.payload is not None]
        if not graphs or not aot_graphs:
            continue  # (no AOTAutograd: nothing took the op for functional; or no graph to place its calls)
        for artifact in graphs[-1:]:  # (a restarted compile's last graph is the one compiled)
            graph = trace.payload_text(artifact.payload)
            graph_sites = op_call_sites(graph)
            # The AOT graphs are read only for a graph calling a custom op (most call none: a model's thousands of
            # aten calls were each matched and looked up for nothing).
            if not any(site is not None and _op_name(graph_op) is not None for graph_op, site, _ in graph_sites):
                continue
            aot = "\n".join(trace.payload_text(a.payload) for a in aot_graphs)
            if not aot:
                continue
            key = compilation_key(entry.compile_id)
            cached = any(a.name in CACHE_HITS for a in entry.artifacts)
            aot_called, aot_wrapped = aot_calls(aot)
            launches = kernel_launches(aot)
            ran_at: dict[tuple[str, int], dict[str, set[str]]] | None = None  # aot_overloads, read where a packet is called
            # (the forward's: the graph whose calls the output code runs; the joint graph also holds the backward's)
            compiled_aot = next((trace.payload_text(a.payload) for a in entry.artifacts
                                 if a.name in AOT_FORWARD and a.payload is not None), "")
            # (op, the call, the op as the graph names it, the overload it ran, its line, whether that is shown)
            found: list[tuple[str, OpCall, set[str] | None, str, str, tuple[str, int], bool]] = []
            unused_calls: list[bool] = []  # each call's result is unused, and no Triton kernel launched on its line
            nths: list[int] = []  # which of the graph's calls of its op each is (_places)
            seen: dict[str, int] = {}  # the op as the graph names it -> its calls so far, those with no line too
            for graph_op, site, unused in graph_sites:
                nth = seen[graph_op] = seen.get(graph_op, -1) + 1
                op = _op_name(graph_op)
                if op is None or site is None:
                    continue
                ran, resolved = graph_op, graph_op.count(".") == 2
                if not resolved:
                    # A packet's call: credited to the overload AOTAutograd's graph runs under its line, where that
                    # is one; else to the packet's name (the default's) and marked unresolved
                    if ran_at is None:
                        ran_at = aot_overloads(aot)
                    there = ran_at.get((site.path, site.line), {}).get(graph_op, set())
                    if len(there) == 1:
                        (ran,) = there
                        op, resolved = _op_name(ran) or op, True
                functional[op] = functional.get(op, True) and ran not in aot_wrapped
                if graph_op.count(".") == 2:
                    overloads.add(op)
                # (a triton_op decomposed: its kernels' launches under the call's line, whatever its source says)
                launched = launches.get((site.path, site.line))
                dropped = unused and graph_op not in aot_called and launched is None
                unused_calls.append(unused and launched is None)
                nths.append(nth)
                loc = UserLocation(site.path, site.line, site.function, site.code)
                found.append((op, OpCall(key, loc, dropped, cached), launched, graph_op, ran, (site.path, site.line),
                              resolved))
            if not found:
                continue  # (no custom op's call: the AOT graph is not parsed)
            sites = [(g, r, line, res) for _, _, _, g, r, line, res in found]
            under, totals = aot_overload_order(compiled_aot)
            # (a line that still runs the op, where AOTAutograd left out some of its calls: dropped, as one it left
            # out of the whole graph; only where its forward graph was logged to count them)
            left_out_here = _left_out_on_line(sites, unused_calls, under, aot_wrapped) if compiled_aot else set()
            for i in left_out_here:
                op, c, *_ = found[i]
                found[i] = (op, OpCall(c.compile_id, c.location, True, c.cached), *found[i][2:])
            places = _places(entry, graph, sites, nths, under, totals, left_out_here)
            for (op, call, launched, _, _, _, resolved), place in zip(found, places, strict=True):
                if not resolved:
                    unresolved.setdefault(op, set()).add(len(calls.get(op, ())))
                calls.setdefault(op, []).append(call)
                stored_at.setdefault(op, []).append(launched)
                where.setdefault(op, []).append(place)
                files.add((call.location.filename, call.location.line, call.location.code))
                if call.dropped:
                    left_out.append(DroppedCall(op, entry.key, call.location))
    return FoundCalls(calls, functional, files, where, left_out, stored_at, set(calls) - overloads, unresolved)

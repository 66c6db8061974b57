"""What the log says about graphs and kernels (LogIndex), looked up by the names a profile uses: a graph key's compile
id and output code, a kernel's or an extern op's user lines, an extern op's calls in a graph's code."""

from __future__ import annotations

import re
from typing import Any

from ...model.ids import CompileId
from ...model.payloads import json_object
from ...model.records import dataclass
from ...model.trace import Trace
from ..provenance import KernelTrace, Provenance, UserLine
from ..provenance.line_mappings import code_lines, text_lines
from . import INDUCTOR_KERNEL

_CACHE_EVENTS = ("fx_graph_cache_miss", "fx_graph_cache_hit", "fx_graph_cache_bypass", "inductor_compile")


def _op_short(name: str) -> str:
    """``aten::mm``, ``extern_kernels.mm``, ``torch.ops.aten.mm.default`` -> ``mm``."""
    parts = [p for p in re.split(r"::|\.", name) if p and p not in ("torch", "ops", "aten", "extern_kernels")]
    return parts[0] if parts else name


@dataclass
class _KernelHome:
    compile_id: CompileId | None
    user_lines: list[UserLine]
    code_artifact: int | None
    code_line: int | None
    stacks_artifact: int | None = None
    stacks_name: str | None = None


@dataclass(slots=True)
class CallSite:
    """One call of an extern op in a graph's output code (``extern_kernels.mm:7``)."""

    handle: int  # provenance's debug handle: the calls of a graph's code are numbered in the order it makes them
    user_lines: list[UserLine]
    name: str  # in the kernel stack traces artifact


def _attempt_text(cid: CompileId) -> str:
    """"0/0_1" (the attempt always written, attempt 0 too): how by_text keeps each attempt apart from the bare "0/0"."""
    return f"{str(cid).strip('[]').partition('_')[0]}_{cid.attempt or 0}"


class LogIndex:
    """What the log says about graphs and kernels, looked up by the names a profile uses."""

    def __init__(self, trace: Trace, provenance: Provenance):
        self.trace = trace
        # A training run: Inductor compiled a backward (at the first .backward()), so a warm-up step is a forward and
        # a backward; an inference-only run (no backward graph, no bwd_compilation_metrics) has none to warm up.
        self.backward = any("aot_backward_graph" in {a.name for a in entry.artifacts} | {a.kind for a in entry.artifacts}
                            or entry.bwd_metrics for entry in trace.compiles.values())
        # A profile's "0/0" (a compiled region, a cache event) names no attempt. After a graph-break restart [0/0]
        # compiled nothing and [0/0_1] the graph that ran: the name is the attempt that produced output code, or
        # else the last attempt.
        self.by_text: dict[str, CompileId] = {}
        produced = {entry.compile_id for entry in trace.compiles.values()
                    if any(a.name.startswith("inductor_output_code") for a in entry.artifacts)}
        for attempt in sorted((c for c in trace.compiles if c is not None), key=CompileId.sort_key):
            self.by_text[_attempt_text(attempt)] = attempt
            short = _attempt_text(attempt).rpartition("_")[0]
            if short not in self.by_text or attempt in produced or self.by_text[short] not in produced:
                self.by_text[short] = attempt
        # A graph's cache key -> the compile that made it: its cache artifact carries the attempt, the chromium
        # events only frame/frame_compile_id.
        self.graph_cid: dict[str, CompileId] = {}
        # A graph's cache key -> its output code: Inductor logs a graph's output code, then its cache artifact.
        self.graph_code: dict[str, int] = {}
        for entry in trace.compiles.values():
            code = None
            for a in sorted(entry.artifacts, key=lambda a: a.number):
                if a.name.startswith("inductor_output_code"):
                    code = a.number
                elif entry.compile_id is not None and a.cache in ("miss", "hit") and a.name.startswith("fx_graph_cache"):
                    key = json_object(trace.payload_text(a.payload)).get("key")
                    if isinstance(key, str) and key not in self.graph_cid:
                        self.graph_cid[key] = entry.compile_id
                        if code is not None:
                            self.graph_code[key] = code
                    code = None  # claimed: the next graph's cache artifact follows its own output code
        for e in trace.chromium_events:
            args = e.get("args") if isinstance(e, dict) else None
            if isinstance(args, dict) and e.get("name") in _CACHE_EVENTS and isinstance(args.get("key"), str):
                cid = self.compile_id(args.get("compile_id"))
                if cid is not None:
                    self.graph_cid.setdefault(args["key"], cid)
        # (output code artifact, short op name) -> each call of an extern op in that graph's code, in call order
        # (extern_kernels.mm:7, :9...: provenance's debug handle counts the calls as the code makes them); None when
        # a call has no handle to order it by, or two share one.
        self._sites: dict[tuple[int, str], list[CallSite] | None] = {}
        # kernel name -> [(compile id, its user lines, code artifact, stack traces artifact, name there)]
        self.kernels: dict[str, list[tuple[CompileId | None, list[UserLine], int | None, int | None, str]]] = {}
        for cp in provenance.compiles.values():
            for section in cp.sections:
                # A kernel the section lists for another graph (torch 2.11 keeps earlier graphs' kernels in a
                # backward's stack traces) is that graph's: here it would lend its lines to this graph's kernels of
                # the same name and to this code's calls of its op, and take a place in their order. Its own graph's
                # section lists it too.
                others = set(section.other_graphs)
                own = [k for k in section.kernels if k.name not in others] if others else section.kernels
                merged: dict[str, list[UserLine]] = {}
                first: dict[str, str] = {}
                for k in own:
                    first.setdefault(k.kernel, k.name)
                    lines = merged.setdefault(k.kernel, [])
                    for u in k.user_lines:
                        if all((u.file, u.line) != (v.file, v.line) for v in lines):
                            lines.append(u)
                for name, lines in merged.items():
                    self.kernels.setdefault(name, []).append((cp.compile_id, lines, section.code.artifact_number,
                                                              section.kernel_traces_artifact, first[name]))
                self._add_call_sites(section.code.artifact_number, own)
        self._code: dict[int, tuple[list[str], int]] = {}
        self._homes: dict[tuple, _KernelHome | None] = {}
        self._names_in_code: set[str] | None = None
        # Asked once per profile event (a row's op, a replayed kernel's): each answer reads a whole output code.
        self._calls: dict[int, str] = {}
        self._calls_op: dict[tuple[int, str], bool | None] = {}
        self._only_extern_op: dict[int, str | None] = {}

    def _add_call_sites(self, code: int | None, kernels: list[KernelTrace]) -> None:
        """One output code's extern calls, by op, ordered by their debug handles (the order the code makes them:
        GPT-2's extern_kernels.mm:7 .. :46 stand in its code in that order)."""
        if code is None:
            return
        found: dict[str, list[CallSite] | None] = {}
        for k in kernels:
            if INDUCTOR_KERNEL.match(k.kernel):
                continue
            op = _op_short(k.kernel)
            sites = found.setdefault(op, [])
            if sites is None:
                continue
            handle = k.debug_handle or ""
            if handle.isascii() and handle.isdigit():
                sites.append(CallSite(int(handle), k.user_lines, k.name))
            else:
                found[op] = None
        for op, sites in found.items():
            if sites is not None:
                sites.sort(key=lambda c: c.handle)
                if len({c.handle for c in sites}) < len(sites):
                    sites = None
            self._sites[(code, op)] = sites

    def call_sites(self, code: int | None, op: str) -> list[CallSite] | None:
        """An extern op's calls in one graph's output code, in the order the code makes them (None: not known)."""
        return self._sites.get((code, _op_short(op))) if code is not None else None

    def function(self, cid: CompileId | None) -> str | None:
        """The name of the function a compile id compiled (its compilation_metrics' co_name), or None."""
        entry = self.trace.compiles.get(cid) if cid is not None else None
        name = (entry.metrics or {}).get("co_name") if entry is not None else None
        return name if isinstance(name, str) else None

    def compile_id(self, text: Any) -> CompileId | None:
        if not isinstance(text, str):
            return None
        return self.by_text.get(text.strip("[]"))

    def home(self, name: str, compile_id: CompileId | None, extern: bool = False,
             code: int | None = None) -> _KernelHome | None:
        """Where a kernel (or, extern, an ATen op's call) came from: its compile id and user lines.

        code: the output code artifact of the graph that ran it, when its graph key says (graph_code): a compile's
        forward and backward are two, and a kernel name or an extern op may be in both."""
        key = (name, compile_id, extern, code)
        if key not in self._homes:
            self._homes[key] = self._find_home(name, compile_id, extern, code)
        return self._homes[key]

    def _find_home(self, name: str, compile_id: CompileId | None, extern: bool, code: int | None) -> _KernelHome | None:
        if extern:
            short = _op_short(name)
            found = [h for kname, homes in self.kernels.items() if not INDUCTOR_KERNEL.match(kname)
                     and _op_short(kname) == short for h in homes if h[0] == compile_id]
            found = [h for h in found if h[2] == code] if code is not None else found
            if not found:
                return None
            lines = [u for h in found for u in h[1]]
            unique = list({(u.file, u.line): u for u in lines}.values())
            return _KernelHome(compile_id, unique, None, None, found[0][3], found[0][4])
        homes = self.kernels.get(name, [])
        if compile_id is not None:
            homes = [h for h in homes if h[0] == compile_id] or homes
        if code is not None:
            homes = [h for h in homes if h[2] == code] or homes
        if len({h[0] for h in homes}) > 1:
            return None  # the same name in several graphs and no graph range to tell which
        if not homes:
            return self._home_in_output_code(name, compile_id, code)
        cid, lines, art, stacks, stacks_name = homes[0]
        return _KernelHome(cid, lines, art, self._definition_line(art, name), stacks, stacks_name)

    def _home_in_output_code(self, name: str, compile_id: CompileId | None, code: int | None) -> _KernelHome | None:
        """No provenance for this kernel: its compile id from the output code that defines it, no user lines."""
        found = []
        for entry in self.trace.compiles.values():
            if compile_id is not None and entry.compile_id != compile_id:
                continue
            for a in entry.artifacts:
                if code is not None and a.number != code:
                    continue
                if a.filename.startswith("inductor_output_code") and a.payload is not None:
                    line = self._definition_line(a.number, name)
                    if line is not None:
                        found.append(_KernelHome(entry.compile_id, [], a.number, line))
        return found[0] if len({h.compile_id for h in found}) == 1 else None

    def _code_text(self, artifact: int) -> tuple[list[str], int]:
        """An output code artifact's lines as code_lines() numbers them, and the empty lines it drops."""
        if artifact not in self._code:
            text = next((self.trace.payload_text(a.payload) for entry in self.trace.compiles.values()
                         for a in entry.artifacts if a.number == artifact), "")
            lines = code_lines(text)
            self._code[artifact] = (lines, len(text_lines(text)) - len(lines))
        return self._code[artifact]

    def _definition_line(self, artifact: int | None, name: str) -> int | None:
        """The line of the output code page (numbered as its anchors) where the kernel is defined."""
        if artifact is None:
            return None
        lines, skipped = self._code_text(artifact)
        anchored = re.compile(rf"^\s*{re.escape(name)}\s*=")
        first = None
        for i, line in enumerate(lines):
            if name in line:
                if anchored.match(line):
                    return i + 1 + skipped
                first = first or i + 1 + skipped
        return first

    def calls_op(self, code: int | None, op: str) -> bool | None:
        """Whether a graph's output code calls the ATen op (``aten::mm``: ``extern_kernels.mm``,
        ``torch.ops.aten.mm``); None when its code is not known, or is no Python wrapper (a C++ wrapper calls
        ``aoti_torch_*`` shims, which these names do not find)."""
        if code is None:
            return None
        key = (code, op)
        if key not in self._calls_op:
            self._calls_op[key] = self._find_calls_op(code, op)
        return self._calls_op[key]

    def _find_calls_op(self, code: int, op: str) -> bool | None:
        text = self._calls_text(code)
        if not re.search(r"^[ \t]*def call\(", text, re.MULTILINE):  # (a method of Runner in torch 2.11)
            return None
        namespace, _, short = op.partition("::")
        names = [re.escape(f"{namespace}.{short}.")] + ([re.escape(f"extern_kernels.{short}(")] if namespace == "aten" else [])
        return re.search(rf"\b(?:{'|'.join(names)})", text) is not None

    def only_extern_op(self, code: int | None) -> str | None:
        """The one ATen op a graph's output code calls extern kernels of (``aten::mm``), if it calls one only."""
        if code is None:
            return None
        if code not in self._only_extern_op:
            text = self._calls_text(code)
            ops = set(re.findall(r"\bextern_kernels\.(\w+)\(", text)) | set(re.findall(r"\baten\.(\w+)\.\w+\(", text))
            self._only_extern_op[code] = f"aten::{ops.pop()}" if len(ops) == 1 else None
        return self._only_extern_op[code]

    def _calls_text(self, code: int) -> str:
        """The output code without its comments (which quote the FX graph's torch.ops.aten targets)."""
        if code not in self._calls:
            self._calls[code] = "\n".join(line for line in self._code_text(code)[0] if not line.lstrip().startswith("#"))
        return self._calls[code]

    def knows_kernel(self, name: str) -> bool:
        if name in self.kernels:
            return True
        if self._names_in_code is None:
            self._names_in_code = set()
            for entry in self.trace.compiles.values():
                for a in entry.artifacts:
                    if a.filename.startswith("inductor_output_code") and a.payload is not None:
                        self._names_in_code.update(re.findall(r"\b(?:triton_|cpp_fused_)\w+", self.trace.payload_text(a.payload)))
        return name in self._names_in_code

"""The code Dynamo runs instead of each compiled frame, per compile id, from what the log holds.

In order of preference: compilescope's own `compilescope_transformed_code` artifact (decompiled where the
code object was, by `run` / `capture()`), else torch's `<co_name>_MODIFIED_BYTECODE` disassembly (resume
functions only), decompiled here from its text.
"""

from __future__ import annotations

from typing import Any

from ..lazy_regex import lazy_compile
from ..decompile.recorded import HEADER, TRANSFORMED
from ..model.ids import NO_COMPILE_ID, CompileId
from ..model.trace import Artifact, Compile, Trace
from ..model.records import NamedTuple, dataclass
from .aoti import KERNEL_CODE, WRAPPER_CODE, aoti
from .compiled_frames import compiled_frame
from .export import EXPORTED_PROGRAM_KIND
from .fx_sites import AOT_FORWARD, POST_GRAD
from .sources import SourceFile, Sources, line_anchor

MODIFIED_SUFFIX = "_MODIFIED_BYTECODE"
GUARDS = ("dynamo_cpp_guards_str", "dynamo_guards")
GRAPH = "dynamo_output_graph"
GUARDS_INLINE = 16384  # bytes of guards past which a transformed code page links to them only (a few hundred lines)
_COMPILED_FN = lazy_compile(r"\b__compiled_fn_\w+")
_COMPILED_FN_NAME = lazy_compile(r"__compiled_fn_\d+")
# depyf's graph file titles (dump-src), and the artifacts that hold them (first present wins).
DUMP_GRAPHS = (
    ("Captured Graph", ("dynamo_output_graph",)),
    ("Joint graph", ("aot_joint_graph",)),
    ("Forward graph", AOT_FORWARD),
    ("Backward graph", ("aot_backward_graph",)),
    ("AFTER POST GRAD", POST_GRAD),
    ("kernel", ("inductor_output_code",)),
    # An AOTInductor package's code, C++ (torch logs both as graph_dump type "cpp"; a CUDA package's wrapper embeds
    # its Triton kernels): depyf has no name for it, and it is written as .cpp, not as Python
    ("AOTInductor wrapper", (WRAPPER_CODE,)),
    ("AOTInductor kernels", (KERNEL_CODE,)),
)
CPP_DUMPS = frozenset({"AOTInductor wrapper", "AOTInductor kernels"})
# The titles whose files are module-level code by design (Inductor's output code, as depyf writes it: importing it
# runs it); every other graph is written as code only where it is classes of methods (dump-src)
MODULE_CODE_DUMPS = frozenset({"kernel"})
# dump-src's title of torch.export's ExportedPrograms (exported_program artifacts), written under EXPORTED_FN
EXPORTED_PROGRAM_DUMP = "Exported program"
EXPORTED_FN = "__exported_program"
# The name of the files of an AOTInductor package (outside any compile id, so no __compiled_fn_N of its own)
AOTI_FN = "__aoti_package"


@dataclass
class TransformedCode:
    """The code torch ran instead of one compiled function (decompiled, or a disassembly)."""

    compile_id: str
    dir_name: str
    function: str
    source: str  # Python, or an annotated disassembly (all comments)
    decompiled: bool
    origin: str  # "recorded" (compilescope's hook) | "torch_bytecode" (decompiled from torch's dis text)
    note: str
    frame: tuple[str, int, str] | None  # (file, first line, co_name) of the code compiled: its first line tells it
    # from another function of the same name in the file
    graph_artifact: Artifact | None  # the compile id's dynamo_output_graph, which __compiled_fn_* runs
    guards_artifact: Artifact | None  # the guards that let it run
    compiled_fns: list[str]
    # whether its page holds the guards' text too (folded), or links only to their page: a model's guard tree is
    # hundreds of KB (hf_llama's 326 KB, 91% of its transformed code pages' bytes), on its own page already
    guards_inline: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "function": self.function, "decompiled": self.decompiled,
                "origin": self.origin, "note": self.note, "source": self.source,
                "frame": {"filename": self.frame[0], "line": self.frame[1]} if self.frame else None,
                "compiled_fns": self.compiled_fns}


class CompileDump(NamedTuple):
    """What dump-src writes of one compilation, as depyf names it (render/dump_src.py lays out the files)."""

    entry: Compile
    # Its files' name: torch's (torch_fn, `__compiled_fn_10`) where the log gives it, as depyf names them, so that
    # grepping the transformed code's call finds the graph; else from its compile id (compiled_fn_name:
    # `__compiled_fn_1_0` for [1/0]), two or more number parts, so never one of torch's
    fn: str
    graphs: list[tuple[str, list[Artifact]]]  # (depyf's title, the artifacts that hold it), of DUMP_GRAPHS
    function: str | None  # the function compiled, whose full_code file it goes in (None: not known)
    code: TransformedCode | None
    guards: Artifact | None
    # Without code: the attempt after this one where Dynamo restarted it (a graph break), whose code it is
    retry: CompileId | None
    # What compiled it, for its files' first line: "compile id [0/0]", "AOTInductor package of aoti_deploy.py:41"
    what: str = ""
    torch_fn: str | None = None  # the graph's name in the transformed code (`__compiled_fn_10`), where logged
    # The name the transformed code calls it by, in full: torch 2.11-2.14 add a uuid (`__compiled_fn_1_66055ec2_...`),
    # which depyf's file names (fn) leave out
    torch_call: str | None = None

    @property
    def called_said(self) -> str:
        """What its graph files' first line says after what compiled it: the full name the transformed code calls the
        graph by, so that grepping the call finds them."""
        return f", called {self.torch_call} in its transformed code" if self.torch_call else ""

    @property
    def graph_said(self) -> str | None:
        """Its transformed code's line on the graph it calls (None: no call logged): its files, where some are written
        (a log may hold the code but not the graph: no dynamo_output_graph for that compile)."""
        if not self.torch_call:
            return None
        if self.graphs:
            return f"{self.torch_call} is this compile's graph: the files {self.fn} *"
        return f"{self.torch_call} is this compile's graph, which this log does not hold: no file of it is written"

    @staticmethod
    def suffix(title: str) -> str:
        """The file extension of a graph title's files: C++ for an AOTInductor package's code, else Python."""
        return ".cpp" if title in CPP_DUMPS else ".py"


def compile_dumps(trace: Trace, transformed: dict[str, TransformedCode]) -> list[CompileDump]:
    """Each compilation's dump (those with a compile id), in compile id order; then, where the log built AOTInductor
    packages (outside any compile id), their graphs and code (dump-src wrote nothing of aoti_deploy.log.gz)."""
    found = []
    taken: set[str] = set()
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        code = transformed.get(entry.dir_name)
        function = (code.function if code else None) or (entry.metrics or {}).get("co_name") or (
            entry.stack[-1].name if entry.stack else None)
        guards = _artifacts_of(entry, GUARDS)
        torch_call = _torch_call(code)
        torch_fn = m.group(0) if torch_call and (m := _COMPILED_FN_NAME.match(torch_call)) else None
        # (torch's counter names each graph of a process once: a name met again, in a log of two processes' lines,
        # falls back to the compile id's)
        fn = torch_fn if torch_fn and torch_fn not in taken else compiled_fn_name(entry.compile_id)
        taken.add(fn)
        found.append(CompileDump(entry, fn, [(title, arts) for title, names in DUMP_GRAPHS
                                             if (arts := _artifacts_of(entry, names))],
                                 str(function) if function else None, code, guards[0] if guards else None, None,
                                 f"compile id {entry.compile_id}", torch_fn, torch_call))
    dumps = [d._replace(retry=_retry(d, found)) if d.code is None else d for d in found]
    exported = [a for entry in trace.sorted_compiles() for a in entry.artifacts
                if a.kind == EXPORTED_PROGRAM_KIND and a.payload is not None]
    if exported:
        exported.sort(key=lambda a: a.lineno)  # (log order)
        first = next(e for e in trace.sorted_compiles() if any(a is exported[0] for a in e.artifacts))
        dumps.append(CompileDump(first, EXPORTED_FN, [(EXPORTED_PROGRAM_DUMP, exported)], None, None, None, None,
                                 "torch.export's ExportedProgram"))
    packages = aoti(trace)
    outside = next((e for e in trace.sorted_compiles() if e.compile_id is None), None)
    if packages and outside is not None:
        dumps.append(CompileDump(outside, AOTI_FN, [(title, arts) for title, names in DUMP_GRAPHS
                                                    if (arts := _artifacts_of(outside, names))],
                                 None, None, None, None, packages.compile_name(NO_COMPILE_ID)))
    return dumps


def compiled_fn_name(cid: CompileId | None) -> str:
    """dump-src's name of a compile's files where the log gives not torch's, its compile id's parts in order: [1/0]
    `__compiled_fn_1_0`, [1/0_1] `__compiled_fn_1_0_1`, compiled autograd's [!0/3/0] `__compiled_fn_ca0_3_0`, [!0]
    `__compiled_fn_ca0` (the prefix: [!0/1/0] is not [0/1/0]). Torch's names have one number part: never these."""
    if cid is None:
        return "__compiled_fn"
    parts = ([f"ca{cid.compiled_autograd_id}"] if cid.compiled_autograd_id is not None else []) + [
        str(n) for n in (cid.frame_id, cid.frame_compile_id) if n is not None] + (
        [str(cid.attempt)] if cid.attempt else [])
    return "_".join(["__compiled_fn", *parts])


def _torch_call(code: TransformedCode | None) -> str | None:
    """The name the transformed code calls its graph by (`__compiled_fn_10`, `__compiled_fn_1_66055ec2_...`), where
    it is logged; its `__compiled_fn_N` part is torch's name of the graph (depyf's name of its files)."""
    return next((name for name in code.compiled_fns if _COMPILED_FN_NAME.match(name)), None) if code else None


def _artifacts_of(entry: Compile, names: tuple[str, ...]) -> list[Artifact]:
    for name in names:
        found = [a for a in entry.artifacts if (a.name == name or a.kind == name) and a.payload is not None]
        if found:
            return found
    return []


def _retry(dump: CompileDump, dumps: list[CompileDump]) -> CompileId | None:
    """The later attempt of dump's compilation, of the same function, that has code."""
    cid = dump.entry.compile_id
    return next((e.compile_id for e, code, function in ((d.entry, d.code, d.function) for d in dumps)
                 if function == dump.function and code is not None and e.compile_id is not None and cid is not None
                 and (e.compile_id.compiled_autograd_id, e.compile_id.frame_id, e.compile_id.frame_compile_id)
                 == (cid.compiled_autograd_id, cid.frame_id, cid.frame_compile_id)
                 and (e.compile_id.attempt or 0) > (cid.attempt or 0)), None)


def _first(entry: Compile, names: tuple[str, ...]) -> Artifact | None:
    return next((a for a in entry.artifacts if a.name in names), None)


def _transformed(trace: Trace, entry: Compile) -> tuple[str, str, bool, str, str] | None:
    """(function, source, decompiled, origin, note)"""
    for a in entry.artifacts:
        if a.name == TRANSFORMED:
            text = trace.payload_text(a.payload)
            first, _, body = text.partition("\n")
            if first.startswith(HEADER):
                name, _, what = first[len(HEADER):].partition(" (")
                ok = what.startswith("decompiled")
                return name, body, ok, "recorded", what.rstrip(")") if what else "recorded by compilescope"
            return "?", text, False, "recorded", "recorded by compilescope"
    for a in entry.artifacts:
        if a.name.endswith(MODIFIED_SUFFIX):
            from ..decompile.distext import decompile_dis  # here: most logs have no such artifact (start-up time)

            name = a.name[: -len(MODIFIED_SUFFIX)]
            result = decompile_dis(trace.payload_text(a.payload), name)
            if result is None:
                return name, trace.payload_text(a.payload), False, "torch_bytecode", "torch's disassembly, in a format not read"
            return (name, result.source, result.ok, "torch_bytecode",
                    "decompiled from torch's logged disassembly; the argument order is not in the log, so the "
                    "arguments are keyword-only" if result.ok else f"not decompiled: {result.problem}")
    return None


def transformed_code(trace: Trace) -> dict[str, TransformedCode]:
    """Compile directory name -> its transformed code."""
    found: dict[str, TransformedCode] = {}
    for entry in trace.sorted_compiles():
        if entry.compile_id is None:
            continue
        got = _transformed(trace, entry)
        if got is None:
            continue
        name, source, ok, origin, note = got
        frame = compiled_frame(entry)
        graph = _first(entry, (GRAPH,))
        guards = _first(entry, GUARDS)
        found[entry.dir_name] = TransformedCode(
            str(entry.compile_id), entry.dir_name, name, source, ok, origin, note, frame,
            graph, guards,
            sorted(set(_COMPILED_FN.findall(source))),
            guards_inline=guards is None or guards.payload is None or guards.payload.length <= GUARDS_INLINE)
    return found


@dataclass
class OriginalLines:
    """One row of the function's original lines beside its transformed code: a line, or the unquoted lines
    (text None) from first to last that land on one gap of its source page."""

    first: int
    last: int
    anchor: str  # the row's anchor on the source page
    text: str | None  # None: not quoted in the log


def original_lines(code: TransformedCode, sources: Sources) -> tuple[list[OriginalLines], SourceFile | None]:
    """The function's lines from its first (or resume) line, while they belong to it, and its source file (None, and
    no lines, where it has no page). Unquoted lines that land on one gap of the source page are one row: a log of a
    few bytes can put line 99,999 in the function."""
    if code.frame is None:
        return [], None
    f = sources.file(code.frame[0])
    if f is None:
        return [], None
    rows: list[OriginalLines] = []
    for first, last, text in f.function_lines(code.frame[1], code.frame[2]):
        anchor = f.anchor(first) or line_anchor(first)
        if text is None and rows and rows[-1].text is None and rows[-1].anchor == anchor:
            rows[-1].last = last
        else:
            rows.append(OriginalLines(first, last, anchor, text))
    return rows, f

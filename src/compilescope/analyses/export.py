"""The torch.export report: what draft export found, as tlparse's ``--export`` lists it.

Issues, in log order (tlparse 0.4.3 lib.rs, ``config.export``):
- ``guard_added`` with prefix ``eval``: a guard export evaluated ("Guard Evaluated");
- ``propagate_real_tensors_provenance``: a data-dependent expression decided with real tensors
  ("Data Dependent Error"); ``guard_on_data_dependent_error`` (one that raised) is listed the same way;
- ``missing_fake_kernel`` / ``mismatched_fake_kernel``.
Other ``guard_added`` (``runtime_assert``, ``eval [guard suppressed]``, older logs with no prefix) are
not issues; they are kept as ``other_guards``. Each symbolic issue gets the provenance tree of its
expression: ``expression_created`` nodes (``result_id`` -> ``argument_ids``) down to the
``create_unbacked_symbol`` leaves (``node_id``). Each expression record is expanded once in the
whole report; a later tree that reaches it names the issue that expands it. So many issues about
one wide expression cost one tree, and all trees together are linear in the size of the log.
"""

from __future__ import annotations

import bisect
from dataclasses import field
from functools import cached_property
from typing import Any

import orjson

from ..lazy_regex import lazy_compile
from ..model.ids import CompileId
from ..model.trace import NO_COMPILE_ID_DIR, Artifact, ExportEvent, Frame, Trace
from ..model.records import NamedTuple, dataclass
from ..wording import possessive
from .user_locations import UserLocation, export_call, exported_user_frame, user_source_name

GUARD_EVALUATED = "Guard Evaluated"
DATA_DEPENDENT_ERROR = "Data Dependent Error"
MISSING_FAKE_KERNEL = "Missing Fake Kernel"
MISMATCHED_FAKE_KERNEL = "Mismatched Fake Kernel"
GUARD_ADDED = "Guard Added"  # a guard_added that is not an issue (not prefix "eval")

# Kinds only torch.export / draft_export logs: any of them makes the export page the report's index.
_EXPORT_ONLY_KINDS = frozenset(
    {"propagate_real_tensors_provenance", "guard_on_data_dependent_error", "missing_fake_kernel", "mismatched_fake_kernel"}
)
EXPORTED_PROGRAM_KIND = "exported_program"
# What draft_export's own trace handler keeps (torch 2.13 _draft_export.py, CaptureStructuredTrace.specific_log_keys):
# a log of these kinds only, with more than strings, is the one it wrote. Its __enter__ removes the process's trace
# handler and its __exit__ does not put it back, so nothing the process did after the draft_export was logged.
DRAFT_EXPORT_KINDS = frozenset({"str", EXPORTED_PROGRAM_KIND, "propagate_real_tensors_provenance", "guard_added",
                                "missing_fake_kernel", "mismatched_fake_kernel", "expression_created",
                                "create_unbacked_symbol"})
MAX_TREE_NODES = 2000  # a provenance tree is cut there (expressions can be huge DAGs)
MAX_REPEATED_CHARS = 200  # a reference to an expression expanded elsewhere shows this much of it


@dataclass
class ExprNode:
    """One symbolic expression in a provenance tree (pre-order, with its depth)."""

    depth: int
    node_id: int
    kind: str  # "expression_created" | "create_unbacked_symbol"
    lineno: int
    result: str
    method: str | None  # None for an unbacked symbol
    arguments: list[str]
    user_stack: list[Frame]
    stack: list[Frame]
    vr: str | None = None  # value range of an unbacked symbol
    repeated: bool = False  # already expanded (the expressions form a DAG): not expanded again
    shown_in: str | None = None  # repeated: the anchor of the issue whose tree expands it (None: this tree)
    unresolved_arguments: int = 0  # argument ids with no record in the log (e.g. backed symbols)

    def to_json(self) -> dict[str, Any]:
        return {
            "depth": self.depth, "node_id": self.node_id, "kind": self.kind, "lineno": self.lineno,
            "result": self.result, "method": self.method, "arguments": self.arguments,
            "user_stack": [f.to_json() for f in self.user_stack], "stack": [f.to_json() for f in self.stack],
            "vr": self.vr, "repeated": self.repeated, "shown_in": self.shown_in,
            "unresolved_arguments": self.unresolved_arguments,
        }


@dataclass
class ExportIssue:
    """One issue draft export found (or one guard it added that is not an issue)."""

    failure_type: str
    kind: str
    lineno: int
    compile_id: CompileId | None
    expr: str | None = None  # the symbolic expression (guards, data-dependent errors)
    result: str | None = None  # what a data-dependent expression was specialized to
    prefix: str | None = None  # guard_added: "eval", "runtime_assert", ...
    op: str | None = None  # fake kernels: the operator (torch.ops.<op>)
    reason: str | None = None  # mismatched fake kernel: why
    user_stack: list[Frame] = field(default_factory=list)
    framework_stack: list[Frame] = field(default_factory=list)
    loc: str | None = None  # the user's source line, from frame_locals
    locals: list[tuple[str, str]] = field(default_factory=list)
    symbols: list[tuple[str, str]] = field(default_factory=list)
    symbol_to_sources: list[tuple[str, str]] = field(default_factory=list)
    expr_node_id: int | None = None
    provenance: list[ExprNode] = field(default_factory=list)
    provenance_truncated: bool = False
    # Where no user stack was logged (guard_on_data_dependent_error logs the Python stack only): the model line
    # non-strict export was running, from that stack; and the user's torch.export call with the torch.export function
    # it called ("export", "draft_export").
    traced_at: UserLocation | None = None
    export_call: UserLocation | None = None
    exporter: str | None = None
    # tlparse 0.4.3 reads the record: it drops a whole record with a frame local, symbol or symbol_to_sources value
    # that is not a string (torch 2.13 logs a local as a list of its flattened values), so that issue takes no number
    # and has no page of tlparse's under --export (ExportReport.numbered_as_tlparse)
    tlparse_reads: bool = True

    @property
    def anchor(self) -> str:
        return f"issue-L{self.lineno}"

    @property
    def where(self) -> str | None:
        """The user's line, "file.py:25 in forward" (the innermost frame of the user stack), when logged."""
        if not self.user_stack:
            traced = self.traced_at
            return f"{traced.filename.rsplit('/', 1)[-1]}:{traced.line} in {traced.function}" if traced else None
        frame = self.user_stack[-1]
        return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.line} in {frame.name}"

    @property
    def headline(self) -> str:
        """The issue in one line, for the findings (the export page words it in full, as tlparse does)."""
        expr = self.expr or "(expression not logged)"
        op = f"torch.ops.{self.op or '(operator not logged)'}"
        if self.kind == "propagate_real_tensors_provenance":
            return f"export could not tell whether {expr} always holds: it assumed {self.result}, and the graph asserts it"
        if self.kind == "guard_on_data_dependent_error":
            return f"export could not tell whether {expr} always holds, and raised a data-dependent error"
        if self.kind == "missing_fake_kernel":
            return f"{op} has no fake kernel"
        if self.kind == "mismatched_fake_kernel":
            return f"{possessive(op)} fake kernel disagrees with the real kernel" + (f": {self.reason}" if self.reason else "")
        return f"export evaluated the guard {expr}, which may violate the dynamic shapes asked for"

    def to_json(self) -> dict[str, Any]:
        return {
            "failure_type": self.failure_type, "kind": self.kind, "lineno": self.lineno,
            "compile_id": self.compile_id.to_json() if self.compile_id else None,
            "expr": self.expr, "result": self.result, "prefix": self.prefix, "op": self.op, "reason": self.reason,
            "user_stack": [f.to_json() for f in self.user_stack],
            "framework_stack": [f.to_json() for f in self.framework_stack],
            "loc": self.loc, "locals": self.locals, "symbols": self.symbols,
            "symbol_to_sources": self.symbol_to_sources, "expr_node_id": self.expr_node_id,
            "tlparse_reads": self.tlparse_reads,
            "provenance": [n.to_json() for n in self.provenance], "provenance_truncated": self.provenance_truncated,
            "traced_at": self.traced_at.to_json() if self.traced_at else None,
            "export_call": self.export_call.to_json() if self.export_call else None, "exporter": self.exporter,
        }


@dataclass
class DimConflict:
    """A dynamic dim that a non-strict torch.export was given and that the model's code contradicts: a guard narrows
    the range the Dim declared, or the code fixes the size to one value. torch then raises "Constraints violated"
    and prints its suggested fix; its log has the guard, the specialization and the range, not the error."""

    source: str  # as the export names the input: L['tokens'].size()[1]
    symbol: str  # s27
    declared: str  # the range the dim was given, as torch logged it: "[2, 128]"
    declared_by_user: bool  # a bound the user wrote (a default or Dim.AUTO range is [2, int_oo])
    export_call: UserLocation | None  # the user's torch.export.export(...) line
    location: UserLocation | None  # the model line that added the guard or fixed the value
    guard: str | None = None  # the guard that narrows the declared range: "s27 <= 32"
    allowed: str | None = None  # the range that guard leaves: "[2, 32]"
    value: str | None = None  # the constant the size was fixed to

    @property
    def input_text(self) -> str:
        """tokens.size()[1]: the input as the user's forward names it."""
        return user_source_name(self.source)

    @property
    def fix(self) -> str:
        """What to change, as torch's suggested fix says it: the range the code allows, or a static size."""
        if self.value is not None:
            return f"drop it from dynamic_shapes (torch's suggested fix: the constant {self.value}) or use Dim.AUTO"
        return f"give it the range the code allows, {self.allowed}, or change the code"

    @property
    def text(self) -> str:
        where = f" at {self.location.short}" if self.location else ""
        if self.value is not None:
            given = f"given {self.declared}" if self.declared_by_user else "made dynamic"
            return f"{self.input_text} {given}, but the code{where} fixes it to {self.value}: {self.fix}"
        return f"{self.input_text} given {self.declared}, but the code{where} needs {self.guard}: {self.fix}"

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "input": self.input_text, "symbol": self.symbol, "declared": self.declared,
                "declared_by_user": self.declared_by_user,
                "export_call": self.export_call.to_json() if self.export_call else None,
                "location": self.location.to_json() if self.location else None, "guard": self.guard,
                "allowed": self.allowed, "value": self.value, "fix": self.fix, "text": self.text}


@dataclass
class StrictExportTrace:
    """One strict torch.export call's Dynamo trace, in a log of several: each trace counts its frames from 0 again,
    so their records share compile ids ([0/0]). Its records are those logged after the call before's id-less
    compilation_metrics, up to its own (the line after which the next trace's start)."""

    call: UserLocation  # the user's torch.export.export(...) call
    metrics_line: int  # the line of its compilation_metrics
    fail_type: str | None
    compile_ids: list[str] = field(default_factory=list)  # those its records are logged under, in log order
    artifacts: list[Artifact] = field(default_factory=list)  # their artifacts it logged (its graph, guards)

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call.to_json(), "metrics_line": self.metrics_line, "fail_type": self.fail_type,
                "compile_ids": self.compile_ids, "artifacts": [a.file_number for a in self.artifacts]}


# The issues tlparse --export writes a page for (symbolic_guard_information_N.html); the guard_added among the issues
# are the evaluated ones (the others are other_guards).
GUARD_PAGE_KINDS = ("guard_added", "propagate_real_tensors_provenance")


class ExportNumbers(NamedTuple):
    """ExportReport.numbered_as_tlparse: the number in each file's name under --export."""

    programs: dict[int, int]  # an exported program's Artifact.number -> its number
    guard_pages: list[tuple[ExportIssue, int]]  # each issue tlparse writes a page for, and its page's number


@dataclass
class ExportReport:
    """What the log's torch.export events say: issues found, guards, exported programs and symbols."""

    detected: bool = False  # the log holds torch.export events (the export page becomes the index)
    issues: list[ExportIssue] = field(default_factory=list)
    other_guards: list[ExportIssue] = field(default_factory=list)
    exported_programs: list[Artifact] = field(default_factory=list)
    symbols: list[dict[str, Any]] = field(default_factory=list)  # create_symbol / create_unbacked_symbol, log order
    kinds: dict[str, int] = field(default_factory=dict)  # export event kinds and how often
    dim_conflicts: list[DimConflict] = field(default_factory=list)  # non-strict exports' dims the code contradicts
    # The user's torch.export calls (export, draft_export) the log's Python stacks run through, by file and line; a
    # call in a loop is one.
    calls: list[UserLocation] = field(default_factory=list)
    # Every compile in the log is torch.export's (no dynamo_start: torch.compile logs one for each frame it compiles,
    # strict export's Dynamo trace none): the report speaks of exports, not of compiling.
    only: bool = False
    # A compile id the Dynamo traces of several strict torch.export calls logged records under -> those traces, in
    # log order: one compile id's page, otherwise, reads as one compile.
    shared: dict[str, list[StrictExportTrace]] = field(default_factory=dict)
    # The log is draft_export's own (DRAFT_EXPORT_KINDS only): the process logged nothing after it.
    draft_log: bool = False

    @property
    def success(self) -> bool:
        """Draft export ran (it logged a program) and found nothing."""
        return not self.issues and bool(self.exported_programs)

    @cached_property
    def numbered_as_tlparse(self) -> ExportNumbers:
        """The numbers tlparse 0.4.3 gives under --export: one counter over the whole log (lib.rs output_count, for
        every compile id), in log order, taken by each exported program's file and by the page of each guard it shows
        (symbolic_guard_information_N.html: an evaluated guard_added, a propagate_real_tensors_provenance; no other
        file is written under --export; not for a record tlparse cannot read, ExportIssue.tlparse_reads). export.log's
        program, logged after its one issue, is exported_program_1.txt. Once: the files' names, the index's links and
        the guard pages each read it. (Not a field, so not saved; the report is complete when the analysis returns.)"""
        paged = [(issue.lineno, 1, issue) for issue in self.issues if issue.kind in GUARD_PAGE_KINDS and issue.tlparse_reads]
        programs = [(a.lineno, 0, a) for a in self.exported_programs]
        numbers = ExportNumbers({}, [])
        for n, (_, _, item) in enumerate(sorted(paged + programs, key=lambda t: (t[0], t[1]))):
            if isinstance(item, ExportIssue):
                numbers.guard_pages.append((item, n))
            else:
                numbers.programs[item.number] = n
        return numbers

    @cached_property
    def guard_pages(self) -> list[tuple[ExportIssue, str]]:
        """Each page tlparse writes under --export for a guard it shows, by its path in the report:
        symbolic_guard_information_N.html (numbered_as_tlparse), in the directory of the guard's compile id."""
        return [(issue, f"{issue.compile_id.dir_name() if issue.compile_id else NO_COMPILE_ID_DIR}/"
                        f"symbolic_guard_information_{number}.html")
                for issue, number in self.numbered_as_tlparse.guard_pages]

    def guard_page_urls(self, export: bool) -> list[str | None]:
        """For each of issues, the path of its page (guard_pages), None where it has none: every one without --export,
        which writes no such page. tlparse's index links each page ("click here"), ours beside the issue's details."""
        if not export:
            return [None] * len(self.issues)
        paths = {id(issue): path for issue, path in self.guard_pages}
        return [paths.get(id(issue)) for issue in self.issues]

    def to_json(self) -> dict[str, Any]:
        return {
            "detected": self.detected,
            "issues": [i.to_json() for i in self.issues],
            "other_guards": [i.to_json() for i in self.other_guards],
            "exported_programs": [a.file_number for a in self.exported_programs],
            "symbols": self.symbols,
            "kinds": self.kinds,
            "dim_conflicts": [c.to_json() for c in self.dim_conflicts],
            "calls": [c.to_json() for c in self.calls],
            "only": self.only,
            "shared": {key: [t.to_json() for t in traces] for key, traces in self.shared.items()},
            "draft_log": self.draft_log,
        }


def export_report(trace: Trace) -> ExportReport:
    index = _ExprIndex(trace.export_events)
    report = ExportReport()
    for event in trace.export_events:
        report.kinds[event.kind] = report.kinds.get(event.kind, 0) + 1
        issue = _issue(event)
        if issue is None:
            continue
        if event.kind == "guard_added" and issue.prefix != "eval":
            issue.failure_type = GUARD_ADDED
            report.other_guards.append(issue)  # listed without a tree: no page shows one for them
        else:
            if issue.expr_node_id is not None:
                issue.provenance, issue.provenance_truncated = index.tree(issue.expr_node_id, event.lineno,
                                                                          issue.anchor)
            report.issues.append(issue)
    for entry in trace.compiles.values():
        report.exported_programs += [a for a in entry.artifacts if a.kind == EXPORTED_PROGRAM_KIND]
        report.symbols += entry.symbols
    report.dim_conflicts = dim_conflicts(trace)
    report.calls = export_calls(trace)
    report.only = bool(report.calls) and all(entry.stack is None for entry in trace.compiles.values())
    report.shared = shared_compile_ids(strict_export_traces(trace))
    kinds = set(trace.stats.kinds)
    report.draft_log = bool(kinds - {"str"}) and kinds <= DRAFT_EXPORT_KINDS
    report.exported_programs.sort(key=lambda a: a.lineno)  # (log order)
    report.symbols.sort(key=lambda s: s.get("lineno", 0))
    report.detected = bool(report.exported_programs) or any(
        e.kind in _EXPORT_ONLY_KINDS
        # guard_added is also logged by torch.compile under TORCH_DTRACE; export's carry no compile id.
        or (e.kind == "guard_added" and e.compile_id is None)
        for e in trace.export_events
    )
    return report


def export_calls(trace: Trace) -> list[UserLocation]:
    """The user's torch.export calls, from the Python stacks of records outside any compile id (non-strict export's)
    and of compilation_metrics without one (strict export's Dynamo trace), by file and line, each line once."""
    stacks = [*trace.unknown_stacks, *(entry.metrics_stack for entry in trace.compiles.values() if entry.metrics_stack)]
    found: dict[tuple[str, int], UserLocation] = {}
    for stack in stacks:
        call = export_call(stack)
        if call is not None:
            found.setdefault(call.key, call)
    return sorted(found.values(), key=lambda c: (c.filename, c.line))


def strict_export_traces(trace: Trace) -> list[StrictExportTrace]:
    """Each strict torch.export call's Dynamo trace, in log order: its id-less compilation_metrics (a Python stack
    through the user's call) and the records of compile ids logged after the call before's metrics, up to its own."""
    traces: list[StrictExportTrace] = []
    for entry in trace.metrics_compiles(sort=False):
        call = export_call(entry.metrics_stack) if entry.compile_id is None and entry.metrics is not None else None
        if call is None:
            continue
        line = next((a.lineno for a in reversed(entry.artifacts) if a.kind == "compilation_metrics"), entry.first_lineno)
        traces.append(StrictExportTrace(call, line, (entry.metrics or {}).get("fail_type")))
    if len(traces) < 2:
        return traces
    ends = [t.metrics_line for t in traces]

    def owner(lineno: Any) -> StrictExportTrace | None:
        i = bisect.bisect_left(ends, lineno) if isinstance(lineno, int) else len(ends)
        return traces[i] if i < len(ends) else None  # (records after the last export's metrics are none's)

    for entry in trace.compiles.values():
        if entry.compile_id is None:
            continue
        lines = [entry.first_lineno, *(a.lineno for a in entry.artifacts),
                 *(r.get("lineno") for r in [*entry.symbols, *entry.guards_added, *entry.specializations])]
        for lineno in sorted(n for n in lines if isinstance(n, int)):
            t = owner(lineno)
            if t is not None and entry.key not in t.compile_ids:
                t.compile_ids.append(entry.key)
        for artifact in entry.artifacts:
            t = owner(artifact.lineno)
            if t is not None:
                t.artifacts.append(artifact)
    return traces


def shared_compile_ids(traces: list[StrictExportTrace]) -> dict[str, list[StrictExportTrace]]:
    """The compile ids several strict export traces logged records under, each with those traces."""
    by_key: dict[str, list[StrictExportTrace]] = {}
    for t in traces:
        for key in t.compile_ids:
            by_key.setdefault(key, []).append(t)
    return {key: found for key, found in by_key.items() if len(found) > 1}


def _issue(event: ExportEvent) -> ExportIssue | None:
    m = event.metadata
    kind = event.kind
    if kind == "guard_added":
        issue = ExportIssue(GUARD_EVALUATED, kind, event.lineno, event.compile_id, prefix=_text(m.get("prefix")))
    elif kind in ("propagate_real_tensors_provenance", "guard_on_data_dependent_error"):
        issue = ExportIssue(DATA_DEPENDENT_ERROR, kind, event.lineno, event.compile_id)
    elif kind == "missing_fake_kernel":
        issue = ExportIssue(MISSING_FAKE_KERNEL, kind, event.lineno, event.compile_id, op=_text(m.get("op")))
    elif kind == "mismatched_fake_kernel":
        issue = ExportIssue(MISMATCHED_FAKE_KERNEL, kind, event.lineno, event.compile_id, op=_text(m.get("op")),
                            reason=_text(m.get("reason")))
    else:
        return None  # expression_created, create_unbacked_symbol, propagate_real_tensors: context, not issues
    issue.expr = _text(m.get("expr"))
    issue.result = _text(m.get("result"))
    issue.user_stack = _frames(m.get("user_stack"))
    issue.framework_stack = _frames(m.get("stack")) or (event.context_stack or [])
    issue.export_call = export_call(issue.framework_stack)
    issue.exporter = _exporter(issue.framework_stack)
    if not issue.user_stack:
        issue.traced_at = exported_user_frame(issue.framework_stack)
    issue.symbol_to_sources = _pairs(m.get("symbol_to_sources"))
    frame_locals = m.get("frame_locals")
    if isinstance(frame_locals, dict):
        issue.loc = _text(frame_locals.get("loc"))
        issue.locals = _pairs(frame_locals.get("locals"))
        issue.symbols = _pairs(frame_locals.get("symbols"))
    node_id = m.get("expr_node_id", m.get("expr_id"))
    if _is_id(node_id):
        issue.expr_node_id = node_id
    issue.tlparse_reads = event.tlparse_reads
    return issue


class _ExprIndex:
    """Symbolic expressions by node id. Ids are Python object ids, which torch may reuse, so a
    reference resolves to the latest record at or before the referring line (else the first after).
    Remembers, across trees, which record each tree expanded (by its log line)."""

    def __init__(self, events: list[ExportEvent]):
        self._by_id: dict[int, list[tuple[int, ExportEvent]]] = {}
        for e in events:
            key = "result_id" if e.kind == "expression_created" else "node_id" if e.kind == "create_unbacked_symbol" else None
            node_id = e.metadata.get(key) if key else None
            if _is_id(node_id):
                self._by_id.setdefault(node_id, []).append((e.lineno, e))
        self._expanded_in: dict[int, str] = {}  # record's log line -> anchor of the tree that expands it

    def get(self, node_id: int, before_line: int) -> ExportEvent | None:
        records = self._by_id.get(node_id)
        if not records:
            return None
        i = bisect.bisect_right(records, before_line, key=lambda r: r[0])
        return records[i - 1][1] if i else records[0][1]

    def tree(self, root_id: int, lineno: int, anchor: str) -> tuple[list[ExprNode], bool]:
        nodes: list[ExprNode] = []
        work: list[tuple[int, int, int]] = [(root_id, 0, lineno)]  # (node id, depth, referring line)
        while work:
            if len(nodes) >= MAX_TREE_NODES:
                return nodes, True
            node_id, depth, line = work.pop()
            event = self.get(node_id, line)
            if event is None:
                continue
            shown_in = self._expanded_in.get(event.lineno)
            if shown_in is not None:
                nodes.append(_repeated_node(event, node_id, depth, None if shown_in == anchor else shown_in))
                continue
            self._expanded_in[event.lineno] = anchor
            node = _expr_node(event, node_id, depth)
            nodes.append(node)
            children = [a for a in event.metadata.get("argument_ids") or [] if _is_id(a)]
            node.unresolved_arguments = sum(1 for a in children if self.get(a, event.lineno) is None)
            work.extend((a, depth + 1, event.lineno) for a in reversed(children))
        return nodes, False


def _expr_node(event: ExportEvent, node_id: int, depth: int) -> ExprNode:
    m = event.metadata
    unbacked = event.kind == "create_unbacked_symbol"
    arguments = m.get("arguments") if isinstance(m.get("arguments"), list) else []
    return ExprNode(
        depth=depth, node_id=node_id, kind=event.kind, lineno=event.lineno,
        result=_text(m.get("symbol" if unbacked else "result")) or "",
        method=None if unbacked else _text(m.get("method")),
        arguments=[_value_text(a) for a in arguments],
        user_stack=_frames(m.get("user_stack")),
        stack=_frames(m.get("stack")) or (event.context_stack or []),
        vr=_text(m.get("vr")) if unbacked else None,
    )


def _repeated_node(event: ExportEvent, node_id: int, depth: int, shown_in: str | None) -> ExprNode:
    """A reference to an expression expanded elsewhere: its name only (cut), no arguments or stacks,
    so a record named by many argument ids costs little each time."""
    unbacked = event.kind == "create_unbacked_symbol"
    result = _text(event.metadata.get("symbol" if unbacked else "result")) or ""
    if len(result) > MAX_REPEATED_CHARS:
        result = result[:MAX_REPEATED_CHARS] + "…"
    return ExprNode(depth=depth, node_id=node_id, kind=event.kind, lineno=event.lineno, result=result,
                    method=None, arguments=[], user_stack=[], stack=[], repeated=True, shown_in=shown_in)


def _exporter(stack: list[Frame]) -> str | None:
    """The torch.export function a Python stack called first ("export", "draft_export"); None where it shows none."""
    return next((f.name for f in stack if "/torch/export/" in f.filename.replace("\\", "/")), None)


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else _value_text(value)


def _value_text(value: Any) -> str:
    """A logged value as text: torch 2.13 logs a local as a list (its flattened pytree leaves)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(value) + "]"
    return orjson.dumps(value, default=str).decode()


def _pairs(mapping: Any) -> list[tuple[str, str]]:
    if not isinstance(mapping, dict):
        return []
    # A null value means torch could not show it (tlparse leaves those out too).
    return [(str(k), _value_text(v)) for k, v in mapping.items() if v is not None]


def _frames(stack: Any) -> list[Frame]:
    if not isinstance(stack, list):
        return []
    return [Frame.from_json(f) for f in stack if isinstance(f, dict) and "filename" in f]


_INF = float("inf")
_RANGE = lazy_compile(r"^\[(-?\w+), (-?\w+)\]$")
_BOUND = lazy_compile(r"^(?:(?P<sym>s\d+) (?P<op><=|<|>=|>) (?P<n>-?\d+)|(?P<n2>-?\d+) (?P<op2><=|<|>=|>) (?P<sym2>s\d+)"
                    r"|Eq\((?P<sym3>s\d+), (?P<n3>-?\d+)\))$")
_FLIPPED = {"<=": ">=", "<": ">", ">=": "<=", ">": "<"}
_AUTO_LOW = 2  # the low end torch gives a dim with no min (Dim("x"), Dim.AUTO): not one the user wrote


def dim_conflicts(trace: Trace) -> list[DimConflict]:
    """The dims of non-strict torch.export calls (events with no compile id, whose Python stack runs through
    torch.export) that the model's code contradicts. A guard on one symbol against a number ("s27 <= 32",
    "Eq(s52, 2)") that leaves less than the declared range, where the user wrote a bound, is what torch's constraint
    solver rejects; a size fixed to one value fails a named Dim or Dim.DYNAMIC, not Dim.AUTO (the log does not say
    which was used). Other guards (s27 % 4 == 0, on several symbols) are not read."""
    entry = trace.compiles.get(None)
    if entry is None:
        return []
    created = sorted((s for s in entry.symbols if s.get("kind") != "create_unbacked_symbol"),
                     key=lambda s: s.get("lineno", 0))
    found: dict[tuple[int, str], DimConflict] = {}  # by (the symbol's create_symbol line, guard or value)

    # Each symbol's create_symbol records and their lines, in log order: a lookup per guard, not a scan of them all.
    by_symbol: dict[Any, tuple[list[dict], list[int]]] = {}
    for s in created:
        records, lines = by_symbol.setdefault(s.get("symbol"), ([], []))
        records.append(s)
        lines.append(s.get("lineno", 0))

    def dim_of(symbol: str, lineno: int) -> tuple[dict, tuple[float, float]] | None:
        records, lines = by_symbol.get(symbol, ([], []))
        before = bisect.bisect_left(lines, lineno)  # the records made before the guard's line
        last = records[before - 1] if before else None
        if last is None or export_call(last.get("stack")) is None:
            return None
        bounds = _range(last.get("vr"))
        return (last, bounds) if bounds is not None else None

    def add(sym: dict, event: dict, **what: Any) -> None:
        low, high = _range(sym.get("vr")) or (0, _INF)
        found.setdefault((sym.get("lineno", 0), str(what)), DimConflict(
            source=str(sym.get("source")), symbol=str(sym.get("symbol")), declared=str(sym.get("vr")),
            declared_by_user=high != _INF or low > _AUTO_LOW, export_call=export_call(sym.get("stack")),
            location=exported_user_frame(event.get("stack")), **what))

    for guard in entry.guards_added:
        m = _BOUND.match(str(guard.get("expr", "")))
        if m is None or export_call(guard.get("stack")) is None:
            continue
        symbol = m["sym"] or m["sym2"] or m["sym3"]
        dim = dim_of(symbol, guard.get("lineno", 0))
        if dim is None:
            continue
        sym, (low, high) = dim
        if m["sym3"]:
            continue  # an equality fixes the value: its specialization says so, below
        n = int(m["n"] or m["n2"])
        op = m["op"] or _FLIPPED[m["op2"]]
        new_low, new_high = low, high
        if op in ("<=", "<"):
            new_high = min(high, n if op == "<=" else n - 1)
        else:
            new_low = max(low, n if op == ">=" else n + 1)
        if (new_low, new_high) != (low, high) and (high != _INF or low > _AUTO_LOW):  # (a bound the user wrote)
            add(sym, guard, guard=str(guard["expr"]), allowed=f"[{_bound_text(new_low)}, {_bound_text(new_high)}]")
    for spec in entry.specializations:
        dim = dim_of(str(spec.get("symbol")), spec.get("lineno", 0))
        if dim is None or export_call(spec.get("stack")) is None or spec.get("value") is None:
            continue
        sym, (low, high) = dim
        if low != high:
            add(sym, spec, value=str(spec["value"]))
    return sorted(found.values(), key=lambda c: (c.location.line if c.location else 0, c.source))


def _range(value_range: Any) -> tuple[float, float] | None:
    """torch's value range "[2, 128]" / "[2, int_oo]" as numbers (None where it is not one)."""
    m = _RANGE.match(str(value_range))
    if m is None:
        return None
    try:
        return _number(m[1]), _number(m[2])
    except ValueError:
        return None


def _number(bound: str) -> float:
    if bound.lstrip("-") in ("int_oo", "oo"):
        return -_INF if bound.startswith("-") else _INF
    return int(bound)


def _bound_text(value: float) -> str:
    return "int_oo" if value == _INF else "-int_oo" if value == -_INF else str(int(value))

"""The trace model: what a log says, independent of how it is shown.

Plain dataclasses. Payload text lives in a PayloadStore and is read on demand,
so a Trace of a huge log stays small in memory.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Iterable, Mapping

from .stats import IngestStats
from .ids import CompileId, compile_id_key
from .names import safe_stem
from .payloads import JsonLines, PayloadRef, PayloadStore, Spool
from .records import dataclass
from ..lazy_regex import lazy_compile
from ..wording import count

NO_COMPILE_ID_DIR = "-_-_-_-"  # tlparse's directory for outputs without a compile id

# The chromium events of Inductor's benchmarks (autotuning), and of the compiles they run inside, kept apart as well
# (Trace.benchmark_events): a few out of a log's thousands, so that their analysis decodes no other event.
KERNEL_TUNING_EVENTS = ("CachingAutotuner.benchmark_all_configs", "CachingAutotuner.coordinate_descent_tuning")
FUSION_BENCHMARK_EVENTS = ("benchmark_fused_nodes", "benchmark_codegened_module")  # a fusion, benchmarked both ways
BENCHMARK_EVENT_NAMES = frozenset(KERNEL_TUNING_EVENTS + FUSION_BENCHMARK_EVENTS)
BENCHMARK_EVENT_SUFFIXES = ("_template_autotuning", "_template_precompiling")  # max-autotune's search of an op
# The compiles a benchmark may run inside, and g++'s runs a benchmark may hold (CPU max-autotune compiles each C++
# candidate as it first benchmarks it): kept without their args (large, and not needed to place a benchmark).
COMPILE_EVENT_NAMES = frozenset({"dynamo", "entire_backward_compile", "inductor_compile", "compile_file"})
COMPILE_EVENT_KEPT = ("name", "ph", "ts", "pid", "tid")
# CUDA graph trees' chromium events (Trace.cudagraph_events): a graph set up for a new input shape at its first call,
# and each recording of it. A graph set up and never recorded ran without CUDA graphs.
CUDAGRAPH_SETUP, CUDAGRAPH_RECORD = "cudagraphify.get_container", "CUDAGraphNode.record"


def timeline_event(event: dict) -> dict | None:
    """Of a chromium event, what a compile's timeline reads (Trace.timeline_events): a begin or end event's name, ph,
    ts, pid and tid, and a begin's args' compile_id; None for any other event."""
    name, ph = event.get("name"), event.get("ph")
    if (ph != "B" and ph != "E") or not isinstance(name, str):
        return None
    timed = {k: event[k] for k in COMPILE_EVENT_KEPT if k in event}
    args = event.get("args")
    if ph == "B" and isinstance(args, dict) and "compile_id" in args:
        timed["args"] = {"compile_id": args["compile_id"]}
    return timed


LONG_RAW_LINE = 128 << 10  # a raw.jsonl line this long has its top-level values' places kept (Trace.raw_spans)
RawSpans = tuple[tuple[str, int, int], ...]

# How an artifact's payload is shown; renderers switch on this.
TEXT = "text"  # plain text file
JSON = "json"  # pretty-printed JSON
CODE = "code"  # Python / C++ source, highlighted HTML
METRICS = "metrics"  # compilation metrics page (from the envelope, no payload)
GUARDS = "guards"  # dynamo_guards table page
LINK = "link"  # an external link, no file
DUMP = "dump_file"  # a dumped source file, one page for the whole report (dump_file/...)


# Kinds tlparse 0.4.3 writes no file for in a report (it skips them without taking a number; exported_program only
# under --export, in a series of its own). compilescope shows them, each kind numbered in a series of its own, so
# that every file tlparse writes has tlparse's number and name in ours too (Artifact.own_number).
# "export": torch.export's marker at the start of an export under TORCH_DTRACE (payload "start!").
OWN_SERIES_KINDS = frozenset({"compilation_metrics_runtime", "bwd_compilation_metrics_runtime", "exported_program",
                              "export"})

_EVAL_WITH_KEY = lazy_compile(r"<eval_with_key>\.([0-9]+)")


def dump_file_name(name: str) -> str:
    """tlparse's name for a dumped source: eval_with_key_N.html for FX-generated code."""
    m = _EVAL_WITH_KEY.search(name)
    return f"{safe_stem(f'eval_with_key_{m.group(1)}') if m else safe_stem(name)}.html"  # safe_stem: bounded length


@dataclass(slots=True)
class Frame:
    """One frame of a logged stack: file, line, function name and, when logged, the line's text."""

    filename: str
    line: int
    name: str
    loc: str | None = None  # source text of the line, when torch logged it

    def to_json(self) -> dict[str, Any]:
        d = {"filename": self.filename, "line": self.line, "name": self.name}
        if self.loc is not None:
            d["loc"] = self.loc
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Frame:
        return cls(d["filename"], d["line"], d["name"], d.get("loc"))


@dataclass(slots=True)
class Artifact:
    """One output of a compilation, in the order the log produced it."""

    # tlparse's output number; for a kind of OWN_SERIES_KINDS, -1, -2, ... in log order: its identity in the model
    # (never one of tlparse's numbers), while own_number names its file.
    number: int
    compile_id: CompileId | None
    kind: str  # the envelope kind that produced it
    name: str  # file stem without the number, e.g. "dynamo_output_graph"
    ext: str  # "txt" | "json" | "html"
    display: str  # TEXT | JSON | CODE | METRICS | GUARDS | LINK
    lineno: int
    payload: PayloadRef | None = None
    suffix: str = ""  # status badge, e.g. cache hit/miss/bypass
    cache: str | None = None  # "hit" | "miss" | "bypass" for cache artifacts
    language: str | None = None  # for CODE: "python" | "cpp"
    url: str | None = None  # for LINK: the target
    data: Any = None  # small structured data (metrics, guards) kept in the model
    md5: str | None = None  # has_payload of the envelope, names payloads/<md5>.txt
    # Also shown as a page for people (<stem>_readable.html): True; wanted one but the
    # payload is not JSON: False; not applicable: None.
    readable: bool | None = None
    page: str | None = None  # for DUMP: its page's file name, distinct per name (model/dump_pages.py; set by build())
    own_number: int | None = None  # for a kind of OWN_SERIES_KINDS: how many of that kind the log had before it
    # Outside any compile id: the Python stack its record was logged with (an index of Trace.unknown_stacks, where
    # each distinct stack is once), which names the user's call that produced it; None: none logged
    stack: int | None = None

    @property
    def filename(self) -> str:
        if self.display == DUMP:
            return self.page or dump_file_name(self.name)
        return f"{safe_stem(self.name)}_{self.file_number}.{self.ext}"

    @property
    def file_number(self) -> int:
        """The number in its file name: tlparse's, or for a kind tlparse does not write, its own series'. The runtime
        metrics pages are <kind>_N.html, and tlparse writes .html only for the kinds it knows, named after them: the
        names cannot collide. exported_program_N.txt is the name tlparse gives it under --export."""
        return self.number if self.own_number is None else self.own_number

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "compile_id": self.compile_id.to_json() if self.compile_id else None,
            "kind": self.kind,
            "name": self.name,
            "ext": self.ext,
            "display": self.display,
            "lineno": self.lineno,
            "payload": self.payload.to_json() if self.payload else None,
            "suffix": self.suffix,
            "cache": self.cache,
            "language": self.language,
            "url": self.url,
            "data": self.data,
            "md5": self.md5,
            "readable": self.readable,
            "own_number": self.own_number,
            "stack": self.stack,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Artifact:
        d = dict(d)
        d["compile_id"] = CompileId.from_json(d["compile_id"]) if d["compile_id"] else None
        d["payload"] = PayloadRef(*d["payload"]) if d["payload"] else None
        return cls(**d)


@dataclass
class Compile:
    """Everything the log says about one compile id."""

    compile_id: CompileId | None
    first_lineno: int
    artifacts: list[Artifact] = field(default_factory=list)
    stack: list[Frame] | None = None  # user stack from dynamo_start
    # Metrics records: model/metrics.py's MetricRecord as read (a compact mapping), or dicts.
    metrics: Mapping[str, Any] | None = None  # compilation_metrics
    # The Python stack compilation_metrics was logged with: torch adds one only outside a compile id, as strict
    # torch.export's Dynamo trace logs it (its user's torch.export.export(...) call is in it).
    metrics_stack: list[Frame] | None = None
    bwd_metrics: list[Mapping[str, Any]] = field(default_factory=list)
    runtime_metrics: list[Mapping[str, Any]] = field(default_factory=list)
    aot_backward_metrics: list[Mapping[str, Any]] = field(default_factory=list)
    specializations: list[dict[str, Any]] = field(default_factory=list)
    guards_added: list[dict[str, Any]] = field(default_factory=list)
    symbols: list[dict[str, Any]] = field(default_factory=list)
    guards: list[dict[str, Any]] | None = None  # dynamo_guards payload
    subgraphs: list[str] = field(default_factory=list)
    # The traceable tensor subclasses (__tensor_flatten__) Dynamo fakeified, from describe_tensor/describe_source:
    # {"source": "L['self']._parameters['weight']", "type": "__main__.ScaledTensor", "ctx": "{'scale': 0.5}",
    # "attrs": ["_data"]}: ctx is the metadata __tensor_flatten__ returned, which Dynamo guards on (___check_metadata).
    subclass_tensors: list[dict[str, Any]] = field(default_factory=list)
    # Outside any compile id only: the compilation_metrics records logged before the last (metrics above), each as a
    # Compile of its own with its metrics, stack and metrics artifact. Each strict torch.export call's Dynamo trace
    # logs one with no compile id, so a program with several has several; they stay apart (Trace.metrics_compiles).
    earlier_metrics: list[Compile] = field(default_factory=list)
    # The frame id torch logged, where it differs: torch._dynamo.reset() counts frames from 0 again, and the
    # reader numbers the frames after it on (ingest/resets.py). None: as logged.
    logged_frame_id: int | None = None
    # Of a log holding several processes' logs one after another (`cat a.log b.log`): where this compile is of a
    # process after the log's first, its pid and the frame id its numbering starts at (the reader numbers each later
    # process's frames on from the highest before it; ingest/resets.py). None: the log's first process.
    process_pid: int | None = None
    process_start: int | None = None

    @property
    def key(self) -> str:
        return compile_id_key(self.compile_id)

    @property
    def renumbered_by_reset(self) -> bool:
        """Renumbered after a torch._dynamo.reset() in its process (not only as another process's)."""
        cid = self.compile_id
        if self.logged_frame_id is None or cid is None or cid.frame_id is None:
            return False
        return cid.frame_id - self.logged_frame_id > (self.process_start or 0)

    @property
    def dir_name(self) -> str:
        return self.compile_id.dir_name() if self.compile_id else NO_COMPILE_ID_DIR

    def to_json(self) -> dict[str, Any]:
        return {
            "compile_id": self.compile_id.to_json() if self.compile_id else None,
            "first_lineno": self.first_lineno,
            "artifacts": [a.to_json() for a in self.artifacts],
            "stack": [f.to_json() for f in self.stack] if self.stack is not None else None,
            "metrics": self.metrics,
            "metrics_stack": [f.to_json() for f in self.metrics_stack] if self.metrics_stack is not None else None,
            "bwd_metrics": self.bwd_metrics,
            "runtime_metrics": self.runtime_metrics,
            "aot_backward_metrics": self.aot_backward_metrics,
            "specializations": self.specializations,
            "guards_added": self.guards_added,
            "symbols": self.symbols,
            "guards": self.guards,
            "subgraphs": self.subgraphs,
            "subclass_tensors": self.subclass_tensors,
            "earlier_metrics": [c.to_json() for c in self.earlier_metrics],
            "logged_frame_id": self.logged_frame_id,
            "process_pid": self.process_pid,
            "process_start": self.process_start,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Compile:
        d = dict(d)
        d["compile_id"] = CompileId.from_json(d["compile_id"]) if d["compile_id"] else None
        d["artifacts"] = [Artifact.from_json(a) for a in d["artifacts"]]
        d["stack"] = [Frame.from_json(f) for f in d["stack"]] if d["stack"] is not None else None
        metrics_stack = d.get("metrics_stack")
        d["metrics_stack"] = [Frame.from_json(f) for f in metrics_stack] if metrics_stack is not None else None
        d["earlier_metrics"] = [Compile.from_json(c) for c in d.get("earlier_metrics") or []]
        return cls(**d)


@dataclass
class UnknownEvent:
    """An event of a kind compilescope does not interpret, kept as logged."""

    lineno: int
    kind: str
    compile_id: CompileId | None
    metadata: Any
    payload: PayloadRef | None
    md5: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "lineno": self.lineno,
            "kind": self.kind,
            "compile_id": self.compile_id.to_json() if self.compile_id else None,
            "metadata": self.metadata,
            "payload": self.payload.to_json() if self.payload else None,
        }


@dataclass(slots=True)
class ExportEvent:
    """A torch.export / draft-export diagnostic (guard_added, expression_created, ...), in log order."""

    lineno: int
    kind: str
    compile_id: CompileId | None
    metadata: dict[str, Any]  # as logged, with its stacks resolved to frame dicts
    context_stack: list[Frame] | None = None  # the envelope's own `stack` (events outside any compile)
    tlparse_reads: bool = True  # whether tlparse 0.4.3 reads the record as logged (ingest/tlparse_types.py)

    def to_json(self) -> dict[str, Any]:
        return {
            "lineno": self.lineno,
            "kind": self.kind,
            "compile_id": self.compile_id.to_json() if self.compile_id else None,
            "metadata": self.metadata,
            "context_stack": [f.to_json() for f in self.context_stack] if self.context_stack is not None else None,
            "tlparse_reads": self.tlparse_reads,
        }


@dataclass
class Trace:
    """One rank's log, read."""

    source: str
    rank: int | None
    store: PayloadStore
    stats: IngestStats
    compiles: dict[CompileId | None, Compile]  # in order of first appearance
    string_table: dict[int, str]
    chromium_events: JsonLines  # spooled; iterate for dicts
    dump_files: dict[str, PayloadRef]  # dumped source file name -> its text
    unclaimed_payloads: list[tuple[str, PayloadRef]]  # (md5, payload)
    unknown_events: list[UnknownEvent]
    raw: Spool  # raw.jsonl lines (timestamps without year; see ingest.reader)
    unknown_stacks: list[list[Frame]]  # "stack" context of events outside any compilation
    year: int | None  # the log's year, from absolute timestamps in it
    pid: int | None
    next_number: int  # outputs numbered so far (tlparse's series, its readable pages and the own series together)
    rank_seen: bool = False  # some envelope carried `rank` equal to the rank read
    export_events: list[ExportEvent] = field(default_factory=list)  # torch.export diagnostics, in log order
    benchmark_events: list[dict] = field(default_factory=list)  # benchmarks' and compiles' chromium events, in order
    cudagraph_events: list[dict] = field(default_factory=list)  # CUDA graphs' set-ups and recordings, in order
    dump_pages: dict[str, str] = field(default_factory=dict)  # dumped source name -> its page's file name (dump_file/)
    # The warnings torch printed in the run's saved stderr, beside the log (ingest/stderr.py), and that file's path.
    stderr_warnings: list[dict] = field(default_factory=list)
    stderr_path: str | None = None
    # The file beside the log that its crash was read from (compilescope_crash_<pid>.txt: a process that traced itself
    # with capture() died, and nobody appended its crash to the log; ingest/crash_files.py), and faulthandler's text in
    # it; None: no crash, or one in the log (a record of it). Not a record: the file is not the log's.
    crash_file: str | None = None
    crash_text: str = ""
    # For each raw.jsonl line of LONG_RAW_LINE bytes or more, in order: (key, first byte, end byte) of each of its
    # top-level values (None: not found), so that it is written without being parsed whole (render/json.py).
    # Not saved (compare=False): a loaded trace parses its long lines whole.
    raw_spans: list[RawSpans | None] = field(default_factory=list, compare=False, repr=False)
    # Whether this process read `source` (not saved): a trace loaded from a saved analysis only names a path, which
    # an untrusted file can point anywhere, so its report never copies that file as raw.log.
    read_from_source: bool = field(default=False, compare=False, repr=False)
    # What an analysis found in this trace that several steps of one report ask for, found once (not saved): a name ->
    # its value (op_mutations.graph_calls.found_calls: the files ingest reads for the analysis, then the analysis)
    found_once: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # Of each begin and end event, what a compile's timeline reads (timeline_event), in the log's order: read from
    # chromium_events, each event was parsed whole again, and an end event's args (its compile's metrics) and the
    # instant events were most of the bytes. Not saved (it repeats chromium_events): see compile_timeline_events.
    timeline_events: JsonLines = field(default_factory=JsonLines, compare=False, repr=False)

    def compile_timeline_events(self) -> Iterable[dict]:
        """timeline_events; for a trace loaded from a saved analysis, which leaves them out, the same taken from
        chromium_events."""
        if self.read_from_source:
            return self.timeline_events
        return (timed for event in self.chromium_events if (timed := timeline_event(event)) is not None)

    def payload_text(self, ref: PayloadRef | None) -> str:
        return "" if ref is None else self.store.get(ref)

    def payload_chunks(self, ref: PayloadRef | None):
        """The payload's UTF-8 bytes in chunks: for payloads too big to hold as one string."""
        return self.store.chunks(ref)

    def payload_lines(self, ref: PayloadRef | None):
        return self.store.iter_lines(ref)

    def payload_contains(self, ref: PayloadRef | None, needle: bytes) -> bool:
        """Whether the payload holds needle, read in chunks: a test before decoding a payload that is rarely needed
        (a 100 MB output code is never held whole to learn that it holds no user kernel)."""
        if ref is None or not needle:
            return False
        tail = b""
        for chunk in self.payload_chunks(ref):
            window = tail + chunk
            if needle in window:
                return True
            tail = window[-(len(needle) - 1):] if len(needle) > 1 else b""
        return False

    def compile(self, compile_id: CompileId | None) -> Compile | None:
        return self.compiles.get(compile_id)

    @property
    def n_compile_ids(self) -> int:
        """The compile ids it holds (the entry of the records outside any compile, under None, is none)."""
        return sum(1 for cid in self.compiles if cid is not None)

    def sorted_compiles(self) -> list[Compile]:
        """Compiles by compile id, those without one first (tlparse's order)."""
        return sorted(self.compiles.values(), key=lambda c: c.compile_id.sort_key() if c.compile_id else ())

    def metrics_compiles(self, sort: bool = True) -> list[Compile]:
        """sorted_compiles (sort=False: compiles in order of first appearance), with each compilation_metrics record
        logged outside a compile id on its own (in log order, the entry of the records outside any compile id last):
        what a compile's metrics say (its failure) is read per record, so that several strict torch.export calls'
        failures are each told."""
        return [earlier_or_entry for entry in (self.sorted_compiles() if sort else self.compiles.values())
                for earlier_or_entry in (*entry.earlier_metrics, entry)]

    def close(self) -> None:
        self.store.close()
        self.raw.close()
        self.chromium_events.close()
        self.timeline_events.close()

    @property
    def closed(self) -> bool:
        """Closed (close(), or the end of its `with`): its payloads are gone, so nothing more can be made of it."""
        return self.store.closed

    def __repr__(self) -> str:
        # Short: the dataclass's repr is the whole model (12 MB for a GPT-2 log), which a notebook prints whole.
        closed = ", closed" if self.closed else ""
        rank = "" if self.rank is None else f", rank {self.rank}"
        return (f"<Trace of {self.source!r}{rank}: {count(self.n_compile_ids, 'compile id')}, "
                f"{count(self.stats.total, 'record')}{closed}>")

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def to_json(self, include_payloads: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "source": self.source,
            "rank": self.rank,
            "year": self.year,
            "pid": self.pid,
            "stats": self.stats.to_json(),
            "compiles": [c.to_json() for c in self.compiles.values()],
            "string_table": {str(k): v for k, v in self.string_table.items()},
            "dump_files": {k: v.to_json() for k, v in self.dump_files.items()},
            "unclaimed_payloads": [[md5, ref.to_json()] for md5, ref in self.unclaimed_payloads],
            "unknown_events": [u.to_json() for u in self.unknown_events],
            "unknown_stacks": [[f.to_json() for f in s] for s in self.unknown_stacks],
            "export_events": [e.to_json() for e in self.export_events],
            "chromium_events": len(self.chromium_events),
        }
        if include_payloads:
            doc["payloads"] = self.store.get(PayloadRef(0, self.store.size, 0))
        return doc

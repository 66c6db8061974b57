"""TraceBuilder: the one mutable object that event handlers write into."""

from __future__ import annotations

from typing import Any

from .dump_pages import settle_dump_pages
from .ids import CompileId
from .metrics import MetricRecord, MetricShapes
from .payloads import JsonLines, PayloadBuffer, PayloadRef, PayloadStore, Spool
from .stats import IngestStats
from .trace import OWN_SERIES_KINDS, Artifact, Compile, ExportEvent, Frame, RawSpans, Trace, UnknownEvent


_NONE_YET = object()
SHARED_METRICS = ("inductor_config", "dynamo_config", "compiler_config")  # config dumps every record repeats


class TraceBuilder:
    def __init__(self, source: str, rank: int | None = None) -> None:
        self.source = source
        self.rank = rank
        self.rank_seen = False  # an envelope of this rank was read (see ingest.reader)
        self.store = PayloadStore()
        self.raw = Spool()  # raw.jsonl lines
        self.raw_spans: list[RawSpans | None] = []  # long raw lines' top-level values (Trace.raw_spans)
        self.stats = IngestStats()
        self.compiles: dict[CompileId | None, Compile] = {}
        self.string_table: dict[int, str] = {}  # per log, never shared between files
        self.export_seen = False  # torch.export ran in this log (its records carry no compile id)
        self.chromium_events = JsonLines()
        self.timeline_events = JsonLines()  # (Trace.timeline_events)
        self.benchmark_events: list[dict] = []  # Trace.benchmark_events
        self.cudagraph_events: list[dict] = []  # Trace.cudagraph_events
        self.dump_files: dict[str, PayloadRef] = {}
        self.unclaimed_payloads: list[tuple[str, PayloadRef]] = []
        self.unknown_events: list[UnknownEvent] = []
        self.unknown_stacks: list[list[Frame]] = []
        self.export_events: list[ExportEvent] = []  # torch.export diagnostics (handlers/guards.py)
        self._unknown_stack_keys: dict[tuple, int] = {}  # each distinct stack -> its index in unknown_stacks
        self._record_stack: tuple[int, int] | None = None  # the line of the last record with a stack, and its index
        self.year: int | None = None
        self.pid: int | None = None
        self.artifact_count = 0  # tlparse's outputs numbered so far (the next one's number)
        self._own_counts: dict[str, int] = {}  # OWN_SERIES_KINDS: artifacts of each kind so far
        self.last_artifact: Artifact | None = None  # the artifact added last; a plain attribute: read per record
        self._shared_texts: dict[str, str] = {}  # metric name -> its last long string value (share_long_texts)
        self._metric_shapes = MetricShapes()  # the field places metrics records share (metric_record)
        self._names: dict[str, str] = {}  # artifact names, each distinct one kept once
        self._shared_frames: dict[tuple, dict[str, Any]] = {}  # frames_json's frames, one dict per distinct frame
        self._last_compile_id: object = _NONE_YET  # the compile id compile() was last asked for, and its entry
        self._last_compile: Compile | None = None

    # -- compiles and artifacts ------------------------------------------------

    def compile(self, compile_id: CompileId | None, lineno: int) -> Compile:
        if compile_id is self._last_compile_id:  # (most records follow one of the same compile id: no hashing)
            return self._last_compile  # type: ignore[return-value]
        entry = self.compiles.get(compile_id)
        if entry is None:
            entry = self.compiles[compile_id] = Compile(compile_id, lineno)
        self._last_compile_id, self._last_compile = compile_id, entry
        return entry

    def _own_total(self) -> int:
        """Artifacts of OWN_SERIES_KINDS so far, all kinds together (a few kinds: a short sum)."""
        return sum(self._own_counts.values())

    def reserve_number(self) -> int:
        """Skip one output number (tlparse numbers a readable companion page separately)."""
        self.artifact_count += 1
        return self.artifact_count - 1

    def add_artifact(
        self,
        compile_id: CompileId | None,
        lineno: int,
        *,
        kind: str,
        name: str,
        ext: str,
        display: str,
        payload: str | PayloadBuffer | None = None,
        **extra: Any,
    ) -> Artifact:
        own_number = None
        if kind in OWN_SERIES_KINDS:  # (a kind tlparse skips: it takes none of tlparse's numbers)
            own_number = self._own_counts.get(kind, 0)
            self._own_counts[kind] = own_number + 1
            number = -self._own_total()
        else:
            number = self.artifact_count
            self.artifact_count += 1
        artifact = Artifact(
            number=number,
            own_number=own_number,
            compile_id=compile_id,
            kind=kind,
            name=self._names.setdefault(name, name),  # (every compile logs the same few names: one object each)
            ext=ext,
            display=display,
            lineno=lineno,
            payload=self.store.put(payload) if payload is not None else None,
            **extra,
        )
        if compile_id is None and self._record_stack is not None and self._record_stack[0] == lineno:
            artifact.stack = self._record_stack[1]  # (its own record's stack: note_context ran for it first)
        self.last_artifact = artifact
        self.compile(compile_id, lineno).artifacts.append(artifact)
        return artifact

    # -- shared state ------------------------------------------------------------

    def metric_record(self, metrics: dict[str, Any]) -> MetricRecord:
        """metrics as the model keeps them (model/metrics.py): read-only, their field names shared with the other
        records of the log, and their config dumps with the previous record's (share_long_texts)."""
        return self._metric_shapes.record(self.share_long_texts(metrics))

    def share_long_texts(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """metrics with each config dump that equals the last one of its name replaced by that object.

        Every compilation_metrics record repeats the run's configs (inductor_config alone is ~22 KB), and the
        model keeps each record's metrics: without this the trace grows by them per compile. Compared with
        the last value (a memcmp), not hashed, and only these names are looked at: the record's other long
        values (graph_node_shapes, stacks) differ from compile to compile."""
        last = self._shared_texts
        for key in SHARED_METRICS:
            value = metrics.get(key)
            if type(value) is str:
                kept = last.get(key)
                if kept == value:
                    metrics[key] = kept
                else:
                    last[key] = value
        return metrics

    def intern(self, index: int, text: str) -> None:
        self.string_table[index] = text

    def frames_json(self, stack: Any) -> list[dict[str, Any]]:
        """[f.to_json() for f in self.frames(stack)], without making the Frames (guard stacks are long and many).

        Equal frames are one dict: the model keeps every guard's stacks, and they repeat the same few frames
        (GPT-2: 2,159 frames, 207 distinct)."""
        frames: list[dict[str, Any]] = []
        if not isinstance(stack, list):
            return frames
        table = self.string_table
        shared = self._shared_frames
        for raw in stack:
            if not isinstance(raw, dict):
                continue
            get = raw.get
            filename = get("filename")
            if isinstance(filename, int) and not isinstance(filename, bool):
                filename = table.get(filename, f"<unknown string {filename}>")
            filename = str(filename)
            line = get("line")
            if not isinstance(line, int):
                line = 0
            name = str(get("name", ""))
            loc = get("loc")
            if not isinstance(loc, str):
                loc = None
            key = (filename, line, type(line), name, loc)  # (type: a logged `true` is kept as true, not as 1)
            d = shared.get(key)
            if d is None:
                d = {"filename": filename, "line": line, "name": name}
                if loc is not None:
                    d["loc"] = loc
                shared[key] = d
            frames.append(d)
        return frames

    def frames(self, stack: Any) -> list[Frame]:
        """Resolve a logged stack (filenames interned as ints) into Frames."""
        frames: list[Frame] = []
        if not isinstance(stack, list):
            return frames
        for raw in stack:
            if not isinstance(raw, dict):
                continue
            filename = raw.get("filename")
            if isinstance(filename, int) and not isinstance(filename, bool):
                filename = self.string_table.get(filename, f"<unknown string {filename}>")
            line = raw.get("line")
            frames.append(
                Frame(
                    str(filename),
                    line if isinstance(line, int) else 0,
                    str(raw.get("name", "")),
                    raw.get("loc") if isinstance(raw.get("loc"), str) else None,
                )
            )
        return frames

    def note_context(self, compile_id: CompileId | None, lineno: int, stack: Any, subgraph: str | None) -> None:
        """Context keys every envelope may carry: a stack (outside compiles) and a subgraph name."""
        if stack is not None and compile_id is None:
            frames = self.frames(stack)
            key = tuple((f.filename, f.line, f.name) for f in frames)
            if frames:
                index = self._unknown_stack_keys.get(key)
                if index is None:
                    index = self._unknown_stack_keys[key] = len(self.unknown_stacks)
                    self.unknown_stacks.append(frames)
                self._record_stack = (lineno, index)
        if subgraph:
            subgraphs = self.compile(compile_id, lineno).subgraphs
            if subgraph not in subgraphs:
                subgraphs.append(subgraph)

    def keep_unclaimed(self, md5: str, payload: str | PayloadBuffer) -> None:
        self.unclaimed_payloads.append((md5, self.store.put(payload)))

    def keep_unknown(self, lineno: int, kind: str, compile_id: CompileId | None, metadata: Any, payload: str | PayloadBuffer | None,
                     md5: str | None) -> None:
        ref = self.store.put(payload) if payload is not None else None
        self.unknown_events.append(UnknownEvent(lineno, kind, compile_id, metadata, ref, md5))

    def spool(self, text: str | PayloadBuffer) -> PayloadRef:
        return self.store.put(text)

    def build(self) -> Trace:
        return Trace(
            source=self.source,
            rank=self.rank,
            store=self.store,
            stats=self.stats,
            compiles=self.compiles,
            string_table=self.string_table,
            chromium_events=self.chromium_events,
            timeline_events=self.timeline_events,
            dump_files=self.dump_files,
            unclaimed_payloads=self.unclaimed_payloads,
            unknown_events=self.unknown_events,
            unknown_stacks=self.unknown_stacks,
            raw=self.raw,
            raw_spans=self.raw_spans,
            year=self.year,
            pid=self.pid,
            next_number=self.artifact_count + self._own_total(),
            rank_seen=self.rank_seen,
            export_events=self.export_events,
            benchmark_events=self.benchmark_events,
            cudagraph_events=self.cudagraph_events,
            dump_pages=settle_dump_pages(self.compiles.values(), self.dump_files),
            read_from_source=True,
        )

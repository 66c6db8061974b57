"""Compilation metrics (forward, backward, runtime) and chromium timing events."""

from __future__ import annotations

import datetime

import orjson

from ...model.builder import TraceBuilder
from ...model.trace import (BENCHMARK_EVENT_NAMES, BENCHMARK_EVENT_SUFFIXES, Compile, COMPILE_EVENT_KEPT, COMPILE_EVENT_NAMES,
                            CUDAGRAPH_RECORD, CUDAGRAPH_SETUP, METRICS, timeline_event)
from ..envelope import Envelope
from ..resets import relabel
from ..shapes import CHROMIUM_FIELDS, METRIC_FIELDS, TEXT, bad_fields, is_a, without_bad_fields
from .registry import handles
from ...wording import plural


@handles("compilation_metrics")
def compilation_metrics(env: Envelope, b: TraceBuilder) -> bool:
    metrics = env.metadata if isinstance(env.metadata, dict) else {}
    reasons = metrics.get("restart_reasons")
    if isinstance(reasons, str):
        # torch logs a list; a string is one reason, not characters to iterate.
        metrics = {**metrics, "restart_reasons": [reasons] if reasons else []}
    metrics = _checked(env, b, metrics)
    if "compile_id" in metrics:  # (renumbered after torch._dynamo.reset(), as the envelope's)
        metrics["compile_id"] = relabel(metrics["compile_id"], env)
    if isinstance(metrics.get("restart_reasons"), list):
        metrics["restart_reasons"] = [r if is_a(r, TEXT) else str(r) for r in metrics["restart_reasons"]]
    record = b.metric_record(metrics)
    entry = b.compile(env.compile_id, env.lineno)
    if env.compile_id is None and entry.metrics is not None:
        # Another one outside a compile id (several strict torch.export calls): the one before is kept on its own.
        earlier = next((a for a in reversed(entry.artifacts) if a.kind == env.kind), None)
        entry.earlier_metrics.append(Compile(None, earlier.lineno if earlier else entry.first_lineno,
                                             artifacts=[earlier] if earlier else [], metrics=entry.metrics,
                                             metrics_stack=entry.metrics_stack))
        entry.metrics_stack = None
    entry.metrics = record
    if isinstance(env.obj.get("stack"), list):  # (logged outside a compile id: strict torch.export's trace)
        entry.metrics_stack = b.frames(env.obj["stack"])
    _note_year(b, record.get("start_time"), 1.0)
    b.add_artifact(env.compile_id, env.lineno, kind=env.kind, name=env.kind, ext="html", display=METRICS, data=record)
    return False


@handles("bwd_compilation_metrics", "aot_autograd_backward_compilation_metrics")
def backward_metrics(env: Envelope, b: TraceBuilder) -> bool:
    metrics = b.metric_record(_checked(env, b, env.metadata if isinstance(env.metadata, dict) else {}))
    entry = b.compile(env.compile_id, env.lineno)
    (entry.bwd_metrics if env.kind == "bwd_compilation_metrics" else entry.aot_backward_metrics).append(metrics)
    b.add_artifact(env.compile_id, env.lineno, kind=env.kind, name=env.kind, ext="html", display=METRICS, data=metrics)
    return False


@handles("compilation_metrics_runtime", "bwd_compilation_metrics_runtime")
def runtime_metrics(env: Envelope, b: TraceBuilder) -> bool:
    # Emitted after a compile finished (e.g. runtime recompute of inductor metrics).
    metrics = _checked(env, b, env.metadata if isinstance(env.metadata, dict) else {})
    b.compile(env.compile_id, env.lineno).runtime_metrics.append(b.metric_record({"kind": env.kind, **metrics}))
    b.add_artifact(env.compile_id, env.lineno, kind=env.kind, name=env.kind, ext="html", display=METRICS,
                   data=b.metric_record(metrics))
    return False


@handles("chromium_event")
def chromium_event(env: Envelope, b: TraceBuilder) -> bool:
    buffer = env.payload_buffer
    if buffer is None:
        raise ValueError("chromium_event without payload")
    event = orjson.loads(buffer.getvalue() if buffer.is_text_as_logged else buffer.text())  # (one per event: no decode)
    if not isinstance(event, dict):
        raise ValueError("chromium_event payload is not an object")
    bad = bad_fields(event, CHROMIUM_FIELDS)
    if bad:  # an event without a usable track, name or time is not placed anywhere
        raise ValueError(f"chromium_event {plural(len(bad), 'field')} of the wrong type: {', '.join(bad)}")
    args = event.get("args")
    if isinstance(args, dict) and "compile_id" in args:  # (renumbered after torch._dynamo.reset(), as the envelope's)
        args["compile_id"] = relabel(args["compile_id"], env)
    b.chromium_events.append(event)
    name = event.get("name")  # (a str, or absent or null: bad_fields checked it)
    if (timed := timeline_event(event)) is not None:
        b.timeline_events.append(timed)
    if name in COMPILE_EVENT_NAMES:
        b.benchmark_events.append({k: event[k] for k in COMPILE_EVENT_KEPT if k in event})
    elif name and (name in BENCHMARK_EVENT_NAMES or name.endswith(BENCHMARK_EVENT_SUFFIXES)):
        b.benchmark_events.append(event)
    elif name == CUDAGRAPH_SETUP or name == CUDAGRAPH_RECORD:
        b.cudagraph_events.append(event)
    if b.year is None:
        _note_year(b, event.get("ts"), 1e-6)
    return True


def _note_year(b: TraceBuilder, timestamp: object, scale: float) -> None:
    """The glog prefix has no year; the first absolute timestamp in the log gives it."""
    if b.year is not None or not isinstance(timestamp, (int, float)) or isinstance(timestamp, bool):
        return
    try:
        b.year = datetime.datetime.fromtimestamp(timestamp * scale, datetime.timezone.utc).year
    except (OverflowError, OSError, ValueError):
        pass


def _checked(env: Envelope, b: TraceBuilder, metrics: dict) -> dict:
    """metrics without the fields whose type is wrong; each dropped field is listed as a warning."""
    metrics, bad = without_bad_fields(metrics, METRIC_FIELDS)
    if bad:
        b.stats.problem(env.lineno, "warning", f"{env.kind}: {plural(len(bad), 'field')} of the wrong type dropped: {', '.join(bad)}")
    return dict(metrics)

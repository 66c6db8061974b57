"""Autotuning: where Inductor benchmarked candidates instead of compiling, and what it chose.

From the chromium events torch logs around each benchmark (torch/_inductor/select_algorithm.py,
runtime/triton_heuristics.py):
- `<op>_template_precompiling` / `<op>_template_autotuning`: max-autotune's search for an op's fastest
  implementation (a GEMM: Triton templates against ATen's). The autotuning event's end carries the op's shape,
  dtypes and `autotune_choices_stats` (how many candidates, the best and its time); the precompiling event's end
  carries the candidates that failed to compile (`metadata.exceptions`, e.g. out of shared memory). A C++ template
  (CPU) is compiled as it is first benchmarked: the `compile_file` events (g++) inside the search.
- `CachingAutotuner.benchmark_all_configs` / `.coordinate_descent_tuning`: a generated Triton kernel's launch
  configs benchmarked, during the compile (fusion choices) or at the kernel's first run.
- `benchmark_fused_nodes` / `benchmark_codegened_module`: fusions benchmarked to decide whether to fuse.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Iterable


from ..lazy_regex import lazy_compile
from ..model.records import dataclass
from ..model.ids import compilation_key
from ..model.payloads import json_object
from .compile_time import event_compile_label, finite_number
from .fx_sites import POST_GRAD, calls_with_input_sizes
from .user_locations import UserLocation
from ..wording import Listed, cut, format_kernel_time, format_seconds
from ..model.trace import BENCHMARK_EVENT_SUFFIXES, FUSION_BENCHMARK_EVENTS, KERNEL_TUNING_EVENTS, Trace

_SOURCE_COMPILE = "compile_file"  # g++ (or nvcc) run on a source file
CPP_TEMPLATE_PREFIX = "cpp_"  # a C++ GEMM template's kernel name (cpp_CppMicroGemmFP32Vec_0)

_TEMPLATE_SEARCH, _TEMPLATE_PRECOMPILE = BENCHMARK_EVENT_SUFFIXES
_KERNEL_TUNING = dict(zip(KERNEL_TUNING_EVENTS, ("configs benchmarked", "coordinate descent"), strict=True))
_FUSION_BENCHMARKS = FUSION_BENCHMARK_EVENTS
# Inductor names a kernel only once the fusion is chosen: the candidates benchmarked before carry this placeholder.
_UNNAMED_KERNEL = "Placeholder.DESCRIPTIVE_NAME"


@dataclass
class FailedChoice:
    """A candidate of a search that could not be compiled or run (it is left out of the search)."""

    choice: str  # the candidate's config, as torch describes it
    exception: str  # e.g. "OutOfMemoryError"
    message: str
    required_memory: int | None = None  # an OutOfMemoryError's shared memory (bytes): what the candidate needs
    hardware_limit: int | None = None  # ... and what the GPU has

    @property
    def why(self) -> str:
        """What went wrong, for people: the sizes when torch logged them, else its message."""
        if self.required_memory is not None and self.hardware_limit is not None:
            return f"needs {self.required_memory:,} bytes of shared memory, the GPU has {self.hardware_limit:,}"
        return self.message

    def to_json(self) -> dict[str, Any]:
        return {"choice": self.choice, "exception": self.exception, "message": self.message,
                "required_memory": self.required_memory, "hardware_limit": self.hardware_limit}


@dataclass
class TemplateSearch:
    """max-autotune's search for one op's fastest implementation: the candidates, the winner, the time it took."""

    compile_id: str
    op: str  # "addmm", "mm", "bmm", ...
    shape: str | None  # the inputs' sizes, as torch logs them ("256x2048, 256x512, 512x2048")
    dtypes: str | None
    choices: int | None  # candidates benchmarked
    triton_choices: int | None  # of them, Triton templates (the rest: ATen and other backends)
    best_kernel: str | None  # "triton_mm_17", or an ATen kernel
    best_config: str | None
    best_time_ms: float | None  # the winner's benchmarked run time
    seconds: float  # benchmarking the candidates
    precompile_seconds: float = 0.0  # compiling them first
    failed: list[FailedChoice] = field(default_factory=list)
    # Of `seconds`, compiling candidates as they were first benchmarked (g++ on a C++ GEMM template: CPU's precompile
    # step compiles nothing, 120 µs against 14.21 s of g++ inside the 14.73 s of cpu_autotune.log's fc1 search)
    candidate_compile_seconds: float = 0.0
    # The user's line the searched op came from (the post-grad graph's call taking inputs of the search's sizes): the
    # sizes alone ("packed_linear 32x512, 1459233x1, 128x512": an MKL-packed weight) do not say which layer it is
    site: UserLocation | None = None
    # Where its compile's graph computes: the device every value of its post-grad graph is typed on ("cpu", "cuda"),
    # None where that graph was not logged or holds several. The search's own records do not say it.
    device: str | None = None

    @property
    def compile_notes(self) -> list[str]:
        """The search's time spent compiling, as every page and the terminal say it under its time, a line each."""
        notes = [f"{format_seconds(self.candidate_compile_seconds)} of it compiling"] if self.candidate_compile_seconds else []
        if self.precompile_seconds:
            notes.append(f"+ {format_seconds(self.precompile_seconds)} " + ("precompiling" if notes else "compiling"))
        return notes

    @property
    def candidate_kinds(self) -> str | None:
        """What the candidates were, as every page and the terminal say it after their count: "19 Triton" on a GPU.
        A CPU search has no Triton candidate, and "0 Triton" says nothing there: its candidates are C++ GEMM templates
        (which g++ compiles inside the search) and extern kernels (ATen's, MKL's: mkldnn_lowerings.py adds
        aten_mkl_linear beside CppGemmTemplate's choices), whichever won. A search is the CPU's where its compile's
        graph is all on the CPU, or where a C++ template (cpp_...) won it (a graph not logged)."""
        if self.triton_choices is None:
            return None
        on_cpu = self.device == "cpu" or (self.best_kernel or "").startswith(CPP_TEMPLATE_PREFIX)
        if self.triton_choices == 0 and on_cpu:
            return "C++ GEMM templates and extern ATen/MKL kernels, no Triton"
        return f"{self.triton_choices} Triton"

    @property
    def best_time_text(self) -> str | None:
        """The winner's run time as every page and the terminal say it: "22.6 µs"."""
        return None if self.best_time_ms is None else format_kernel_time(self.best_time_ms / 1000)

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "op": self.op, "shape": self.shape, "dtypes": self.dtypes,
                "choices": self.choices, "triton_choices": self.triton_choices, "best_kernel": self.best_kernel,
                "best_config": self.best_config, "best_time_ms": self.best_time_ms, "seconds": round(self.seconds, 6),
                "precompile_seconds": round(self.precompile_seconds, 6), "failed": [f.to_json() for f in self.failed],
                "candidate_compile_seconds": round(self.candidate_compile_seconds, 6),
                "site": self.site.to_json() if self.site else None, "device": self.device}


@dataclass
class KernelTuning:
    """A generated Triton kernel whose launch configs were benchmarked."""

    compile_id: str
    kernel: str | None  # None: a candidate fusion, benchmarked before it was named
    how: str  # "configs benchmarked" | "coordinate descent"
    during_compile: bool  # False: at the kernel's first run, after its compile
    backward: bool
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "kernel": self.kernel, "how": self.how,
                "during_compile": self.during_compile, "backward": self.backward, "seconds": round(self.seconds, 6)}


KERNELS_LISTED = 20  # the kernel tunings a page lists (Autotuning.kernels_listed)


@dataclass
class Autotuning:
    """Every benchmark Inductor ran to choose code, and the time they took together (nested ones counted once)."""

    total_s: float = 0.0
    searches: list[TemplateSearch] = field(default_factory=list)  # in the order they ran
    kernels: list[KernelTuning] = field(default_factory=list)  # slowest first
    fusion_benchmark_s: float = 0.0  # deciding whether to fuse, by benchmarking both ways

    def __bool__(self) -> bool:
        return bool(self.searches or self.kernels or self.fusion_benchmark_s)

    @property
    def failed(self) -> int:
        return sum(len(s.failed) for s in self.searches)

    @property
    def kernels_listed(self) -> Listed[KernelTuning]:
        """The slowest kernel tunings a page's table lists, and how many more there are (--json has them all)."""
        return cut(self.kernels, KERNELS_LISTED)

    @property
    def kernels_tuned_alike(self) -> str | None:
        """How every kernel was tuned ("configs benchmarked"), where they all were tuned the same way: a table says it
        once, in its header, rather than under each row. None where they differ (or none was tuned)."""
        hows = {k.how for k in self.kernels}
        return next(iter(hows)) if len(hows) == 1 else None

    def to_json(self) -> dict[str, Any]:
        return {"total_s": round(self.total_s, 6), "searches": [s.to_json() for s in self.searches],
                "kernels": [k.to_json() for k in self.kernels], "fusion_benchmark_s": round(self.fusion_benchmark_s, 6)}


def autotuning(trace: Trace) -> Autotuning:
    # The benchmarks' events, and the compiles', kept apart when the log was read: no other event is decoded again.
    result = autotuning_of(trace.benchmark_events)
    if result.searches:
        _place_searches(trace, result.searches)
    return result


# A value's device, at the end of its type in a graph dump: `"f32[32, 512][512, 1]cpu"`, `"f16[256][1]cuda:0"`
_TYPED_DEVICE = lazy_compile(r'\]\[[^\]"\n]{0,1000}\](?P<device>[a-z]{1,20})(?::\d{1,9})?"')


def _place_searches(trace: Trace, searches: list[TemplateSearch]) -> None:
    """Each search's user line: that of the post-grad graph's calls (of its compile) whose inputs have the search's
    sizes, the first ones in order, each as the op takes it or broadcast to it (addmm's bias 2048, searched as
    256x2048). None where no call fits, or calls of different lines do. And its device: that graph's, where it has
    one."""
    graphs: dict[str, str] = {}  # compilation -> its post-grad graph (the last attempt's)
    for entry in trace.sorted_compiles():
        graph = next((a for name in POST_GRAD for a in entry.artifacts if a.name == name), None)
        if graph is not None and entry.compile_id is not None:
            graphs[compilation_key(entry.compile_id)] = trace.payload_text(graph.payload)
    calls: dict[str, list] = {}
    devices: dict[str, str | None] = {}
    for search in searches:
        key = compilation_key(search.compile_id)
        if key not in graphs:
            continue
        if key not in devices:
            found = {m["device"] for m in _TYPED_DEVICE.finditer(graphs[key])}
            devices[key] = found.pop() if len(found) == 1 else None
        search.device = devices[key]
        if not search.shape:
            continue
        if key not in calls:
            calls[key] = calls_with_input_sizes(graphs[key])
        wanted = search.shape.split(", ")
        sites = {(site.path, site.line): site for sizes, site in calls[key]
                 if len(sizes) >= len(wanted) and all(map(_fits, sizes, wanted))}
        if len(sites) == 1 and None not in sites.values():
            site = next(iter(sites.values()))
            search.site = UserLocation(site.path, site.line, site.function, site.code)


def _fits(size: str, searched: str) -> bool:
    """Whether a node of this size is an input searched with that size: the same, or broadcast to it."""
    return size == searched or searched.endswith("x" + size)


def autotuning_of(events: Iterable[Any]) -> Autotuning:
    result = Autotuning()
    open_events: dict[tuple, list[tuple[str, float, dict]]] = {}  # track -> begun events (name, ts, args)
    tuning_depth: dict[tuple, int] = {}  # track -> benchmark events open on it (their time is counted once)
    precompiles: dict[tuple, tuple[float, list[FailedChoice]]] = {}  # (compile id, op) -> the last precompile
    compiled_inside: dict[tuple, float] = {}  # (track, a search's begin time) -> its candidates' compile seconds
    for event in events:
        if not isinstance(event, dict):
            continue
        ph, name, ts = event.get("ph"), event.get("name"), finite_number(event.get("ts"))
        if ph not in ("B", "E") or not isinstance(name, str) or ts is None:
            continue
        track = (event.get("pid"), event.get("tid"))
        stack = open_events.setdefault(track, [])
        tuning = _is_tuning(name)
        args = event.get("args")
        if not isinstance(args, dict):
            args = {}
        if ph == "B":
            stack.append((name, ts, args))
            if tuning:
                tuning_depth[track] = tuning_depth.get(track, 0) + 1
            continue
        begun = next((i for i in range(len(stack) - 1, -1, -1) if stack[i][0] == name), None)
        if begun is None:
            continue  # an end without its begin (a cut log)
        _, start, begin_args = stack[begun]
        for inner, _, _ in stack[begun + 1:]:  # begun inside it and never ended (a crash): closed with it
            if _is_tuning(inner):
                tuning_depth[track] -= 1
        del stack[begun:]
        seconds = max(0.0, (ts - start) / 1e6)
        if name == _SOURCE_COMPILE:
            # Inside a search, counted once: the innermost open search, unless a compile holding this one is in it
            holder = next(((n, t) for n, t, _ in reversed(stack) if n == _SOURCE_COMPILE or n.endswith(_TEMPLATE_SEARCH)),
                          None)
            if holder is not None and holder[0] != _SOURCE_COMPILE:
                key = (track, holder[1])
                compiled_inside[key] = compiled_inside.get(key, 0.0) + seconds
        if not tuning:
            continue
        tuning_depth[track] -= 1
        if tuning_depth[track] == 0:
            result.total_s += seconds
        args = {**begin_args, **args}
        cid = event_compile_label(args.get("compile_id"))
        if name.endswith(_TEMPLATE_PRECOMPILE):
            precompiles[(cid, name[: -len(_TEMPLATE_PRECOMPILE)])] = (seconds, _failed_choices(args.get("metadata")))
        elif name.endswith(_TEMPLATE_SEARCH):
            op = name[: -len(_TEMPLATE_SEARCH)]
            precompile_s, failed = precompiles.pop((cid, op), (0.0, []))
            search = _search(cid, op, args, seconds, precompile_s, failed)
            search.candidate_compile_seconds = min(compiled_inside.pop((track, start), 0.0), seconds)
            result.searches.append(search)
        elif name in _KERNEL_TUNING:
            kernel = args.get("kernel_name")
            result.kernels.append(KernelTuning(
                cid, kernel if isinstance(kernel, str) and kernel != _UNNAMED_KERNEL else None, _KERNEL_TUNING[name],
                during_compile=any(not _is_tuning(n) for n, _, _ in stack), backward=args.get("is_backward") is True,
                seconds=seconds))
        else:
            result.fusion_benchmark_s += seconds
    result.kernels.sort(key=lambda k: -k.seconds)
    return result


def _is_tuning(name: str) -> bool:
    return (name.endswith((_TEMPLATE_SEARCH, _TEMPLATE_PRECOMPILE)) or name in _KERNEL_TUNING
            or name in _FUSION_BENCHMARKS)


def _search(cid: str, op: str, args: dict, seconds: float, precompile_s: float,
            failed: list[FailedChoice]) -> TemplateSearch:
    stats = json_object(args.get("autotune_choices_stats"))
    return TemplateSearch(
        cid, op, _text(args.get("autotune_shape")), _text(args.get("autotune_dtypes")),
        _count(stats.get("num_choices")), _count(stats.get("num_triton_choices")), _text(stats.get("best_kernel")),
        _text(stats.get("best_kernel_desc")), finite_number(stats.get("best_time")),
        seconds, precompile_s, failed)


def _failed_choices(metadata: Any) -> list[FailedChoice]:
    failed = []
    for exc in json_object(metadata).get("exceptions") or []:
        if isinstance(exc, dict):
            failed.append(FailedChoice(_text(exc.get("choice")) or "?", _text(exc.get("exception")) or "?",
                                       _text(exc.get("exception_message")) or "", _bytes(exc.get("required_memory")),
                                       _bytes(exc.get("hardware_limit"))))
    return failed




def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _bytes(value: Any) -> int | None:
    """A size torch logged as a number or a string of digits ("262144")."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 19:
        return int(value)
    return _count(value)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def config_items(config: str | None) -> dict[str, str] | None:
    """A candidate's config as torch describes it (`ACC_TYPE='tl.float32', BLOCK_K=64`) as {key: value}; None
    when it is not written that way."""
    if not config:
        return None
    items = {}
    for part in config.split(", "):
        key, eq, value = part.partition("=")
        if not eq or not key.isidentifier():
            return None
        items[key] = value
    return items

